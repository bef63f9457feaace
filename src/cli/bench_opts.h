/* bench_opts — the options of a load run (target, load plan, dataset, statistics, outputs),
 * parsed and validated once, shared by `bench` and `sweep`. */
#ifndef DSP_BENCH_OPTS_H
#define DSP_BENCH_OPTS_H
#include "client/client.h"
#include "load/runner.h"
#include "metrics/summary.h"
#include "dataset/dataset.h"
#include "telemetry/telemetry.h"
#include "dist/dist.h"
#include "cli/history_opts.h"
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
    /* one job over many hosts (mpirun/srun): NULL when not started by an MPI launcher */
    dist *dist;
    dist_opts dist_o;            /* --rank-timeout, --gpu-nodes */
    bool keep_request_chunks;    /* sweep --save-requests: bring every rank's chunk arrays to rank 0 */
} bench_opts;

/* Returns -1 when the run should go ahead; otherwise the exit code to return now (0 after
 * --help, 2 after a usage error, which has been reported in one line). */
int bench_opts_parse(bench_opts *b, int argc, char **argv);
/* The defaults bench_opts_parse starts from (room for argc headers; the command line kept), for
 * commands that parse their own flags into a bench_opts (monitor). Free with bench_opts_free. */
void bench_opts_defaults(bench_opts *b, int argc, char **argv);
/* The options every command that sends requests takes alike (bench, sweep, monitor): the target
 * (url, api, model, header, insecure, timeout), the requests (dataset, tokenizer, no-usage, seed),
 * the SLO, max-error-rate, quiet, and the history (db, label), by long option name. Returns 0 when applied, 1 when name is not one of them,
 * or EXIT_USAGE after its one-line error. */
int bench_opts_shared(bench_opts *b, const char *name, const char *value);
void bench_opts_free(bench_opts *b);
/* --trace-window "A..B", "A.." or "..B" (durations from the trace's first request) into [*lo, *hi)
 * (*hi 0: open). 0 ok, -1 malformed. */
int bench_opts_parse_window(const char *s, int64_t *lo, int64_t *hi);
/* The configuration section of the results file. */
json_t *bench_opts_config_json(const bench_opts *b, const dataset *ds);
#endif
