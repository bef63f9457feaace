/* run/sim — one offline simulated run from options to results: the load plan (open-loop arrivals,
 * a closed loop of users, a trace's own times, conversations), the engine (the simulated DeepSeek
 * engine or the fixed-timing one) on a virtual clock, and the same results document as `bench`
 * (plus the engine's series). Called by `dsperf sim`, its ladders (run/sim_ladder.h) and
 * `dsperf tune --sim-flags` (run/tune.h); none of them goes through a command line. Also the
 * simulator's calibration and its validation against published measurements. */
#ifndef DSP_RUN_SIM_H
#define DSP_RUN_SIM_H
#include "common/result.h"
#include "dataset/dataset.h"
#include "engine/engine.h"
#include "engine/fixed.h"
#include "engine/sim.h"
#include "metrics/record.h"
#include "metrics/summary.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct run_sim_opts {
    bool fixed;                  /* the fixed-timing engine (serve's) instead of the simulated one */
    sim_params sim;              /* the simulated engine and hardware */
    fixed_params fixed_p;        /* the fixed engine's timing (its seed is set from seed) */
    summary_opts summary;        /* percentiles, SLOs */
    const char *dataset;         /* a dataset spec (random:in=1024,out=128) */
    dataset_opts dso;            /* trace options: block size, time scale, window */
    const char *arrival;         /* poisson, gamma:K, constant, trace */
    double rate_per_s;           /* open loop; INFINITY: all at once; 0 with concurrency */
    int concurrency;             /* closed loop: users; 0 open loop */
    int max_concurrency;         /* open loop: cap in flight (0 none) */
    long long requests;          /* measured requests (1000) */
    bool requests_given;         /* a file dataset is read once through unless requests was given */
    int64_t duration_ns;         /* open loop: requests = rate x duration when requests was not given */
    long long warmup;            /* extra requests first, excluded from the statistics */
    int64_t think_ns;            /* closed loop: pause between a user's requests */
    int32_t output_len;          /* max_tokens of items without one (128) */
    uint64_t seed;
    bool transit;                /* the way to the engine as over HTTP (upload, parse, turnaround) */
    double max_error_rate;       /* server-side failures above it judge the run failed */
    const char *command_line;    /* the results document's exact command line ("" when NULL) */
} run_sim_opts;

/* `dsperf sim`'s defaults: the simulated engine with its defaults, random:in=1024,out=128, poisson
 * arrivals, 1000 requests, seed 1, transit on, the run policy's default error rate. No load is
 * set: give rate_per_s, concurrency or arrival "trace". */
void run_sim_defaults(run_sim_opts *o);

typedef struct {
    json_t *doc;                 /* the results document (owned); NULL when the run failed */
    recset recs;                 /* the per-request records */
    bool judged_failed;          /* measured, and failed by the run policy (results/validity.h) */
    char why[400];               /* why, when judged_failed */
    double prefix_hit_bound;     /* the hit rate this workload allows a prefix cache (0: none) */
    /* the engine's own account, for the summary the CLI prints */
    sim_info info;
    engine_stats stats;
    int64_t span_ns;             /* first send to last end */
} run_sim_result;

/* Runs o. DS_OK with *out filled (judged_failed says whether the policy failed it), or DS_EINVAL
 * (a dataset or setting the run cannot take), DS_ERUN (the engine failed), DS_ENOMEM, with one line
 * in err. out is always initialised; free it with run_sim_result_free. */
ds_result run_sim(const run_sim_opts *o, run_sim_result *out, char *err, size_t errlen);
void run_sim_result_free(run_sim_result *r);

/* --calibrate: fits p's efficiency factors to a measured run (FILE: per-request JSONL, results
 * JSON, or a sweep, whose level at at_load calibrates (<= 0: its lowest); requests_jsonl the
 * per-request file beside a results file) and writes the profile to
 * profile_out; summary (NULL: none) gets the fit's account. DS_OK, or DS_ERUN with err. */
ds_result run_sim_calibrate(const sim_params *p, const char *file, const char *requests_jsonl, double at_load,
                            const char *profile_out, FILE *summary, char *err, size_t errlen);
/* --validate TABLE [--fit] [--loo]: every row of the published table simulated (a sweep: calibrated
 * on its level at at_load, <= 0 its lowest, and its levels predicted); the comparison is
 * printed to out, the fit's progress to progress (NULL: none). DS_OK, DS_EINVAL (the table cannot
 * be read), or DS_ERUN, with err. */
ds_result run_sim_validate(const char *table, const sim_params *p, double at_load, bool fit, bool loo, FILE *out, FILE *progress,
                           char *err, size_t errlen);
#endif
