/* run/bench_opts — the options of a load run (target, load plan, dataset, statistics, outputs),
 * shared by bench, sweep, tune and monitor (run/bench.h, run/sweep.h, run/tune.h). The CLI fills
 * them from the command line (cli/bench_opts.h); the run layer only reads them. */
#ifndef DSP_RUN_BENCH_OPTS_H
#define DSP_RUN_BENCH_OPTS_H
#include "client/client.h"
#include "load/runner.h"
#include "metrics/summary.h"
#include "dataset/dataset.h"
#include "telemetry/telemetry.h"
#include "dist/dist.h"
#include "run/history_opts.h"
#include <jansson.h>

#define BENCH_MAX_CLASSES 16

/* One request class (tenant) of a multi-class run. */
typedef struct {
    char *name;
    double weight;
    const char *dataset_spec;    /* points into the option text */
    summary_opts summary;        /* the run's options with this class's SLOs */
    dataset *ds;                 /* opened by bench_prepare */
    char *spec_copy;             /* owns the strings above */
} bench_class;

typedef struct {
    client_opts client;
    load_plan plan;
    summary_opts summary;
    const char *dataset_spec;
    const char *tokenizer_path;  /* --tokenizer: exact token lengths and counts */
    tokenizer *tok;              /* loaded by bench_prepare */
    double length_tolerance;
    /* trace replay: --block-size (mooncake), --time-scale, --trace-window */
    int32_t block_tokens;
    double time_scale;
    int64_t window_start_ns, window_end_ns;
    bool requests_given;         /* --requests was on the command line (a trace otherwise sets the count) */
    const char *arrival_spec;
    const char *out_path;
    const char *requests_path;
    const char **headers;        /* NULL-terminated, owned ($ENV{} expanded; --header-file lines) */
    size_t n_headers, headers_cap;
    bool ignore_eos;
    telemetry_opts telemetry;    /* samplers to run beside the load (none by default) */
    bool telemetry_on;
    bool quiet, no_progress;
    history_opts hist;           /* --db / --label: record the run in the results history */
    json_t *server_identity;     /* the engine, its version and the served model (bench_prepare) */
    double max_error_rate;       /* --max-error-rate: server-side failures above it fail the run (validity.h) */
    char *command_line;
    bench_class classes[BENCH_MAX_CLASSES];
    int n_classes;               /* 0: one class, the --dataset */
    const dataset *class_ds[BENCH_MAX_CLASSES];
    double class_weight[BENCH_MAX_CLASSES];
    json_t *deployment;          /* what the server said about itself at preflight (deploy.h's section) */
    int sim_served;              /* the server is `dsperf serve --engine sim` (its /v1/models meta.sim.prediction_interval) */
    int sim_calibrated;          /* ... with a calibrated profile: the intervals of calibrate-then-predict */
    char sim_engine_profile[32], sim_gpu[32];   /* ... its meta.sim: whether the fits hold that engine on that GPU */
    double sim_speedup;          /* ... served at --speedup (engine seconds per client second) */
    /* one job over many hosts (mpirun/srun): NULL when not started by an MPI launcher */
    dist *dist;
    dist_opts dist_o;            /* --rank-timeout, --gpu-nodes */
    bool keep_request_chunks;    /* sweep --save-requests: bring every rank's chunk arrays to rank 0 */
} bench_opts;

/* The defaults of every option (llama.cpp's *_defaults): completions API, 300 s timeout, usage
 * asked for, OPENAI_API_KEY as the key, seed 1, random:in=1024,out=128, poisson arrivals, the run
 * policy's error rate; no headers, no command line. Free with bench_opts_free. */
void bench_opts_init(bench_opts *b);
void bench_opts_free(bench_opts *b);
/* The configuration section of the results file. */
json_t *bench_opts_config_json(const bench_opts *b, const dataset *ds);
#endif
