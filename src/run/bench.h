/* run/bench — one load setting from options to results: pre-flight and dataset (bench_prepare),
 * then plan → records → results JSON (bench_run_once). `bench` runs it once; `sweep` once per
 * load level. bench_run_job: the whole command, one job or one process (run/job.h). */
#ifndef DSP_BENCH_RUN_H
#define DSP_BENCH_RUN_H
#include "run/bench_opts.h"
#include "common/stop.h"
#include "common/result.h"
#include <signal.h>

/* Pre-flight GET /v1/models (fills b->client.model when not given) and the dataset.
 * Returns DS_OK; DS_ECONNECT (nothing answered) or DS_EINVAL (a wrong URL, a bad dataset or
 * tokenizer, flags the dataset does not take) after logging one clear line (ds_exit_code: 2).
 * *model is owned by the caller. */
ds_result bench_prepare(bench_opts *b, dataset **ds, char **model);
/* The part of bench_prepare after the pre-flight: the tokenizer (--tokenizer), the dataset with
 * n_hint random prompts, the request classes' datasets, ignore_eos. For callers that resolve the
 * model themselves (monitor keeps going while the endpoint is down). Same return values. */
ds_result bench_prepare_dataset(bench_opts *b, size_t n_hint, dataset **ds);

typedef struct {
    json_t *results;      /* the results document (owned by the caller), NULL on failure and on
                           * a multi-host job's followers (rank 0 writes the job's result) */
    bool interrupted;     /* *stop was raised during the run */
} bench_result;

/* Runs b's plan once against ds; records go to recs (caller-owned, recset_init'ed).
 * Returns DS_OK, or DS_ERUN with err when the client (or a job's ranks) could not be set up. */
ds_result bench_run_once(bench_opts *b, const dataset *ds, ds_stop_flag *stop, bool progress,
                   recset *recs, bench_result *out, char *err, size_t errlen);
/* Same, with the caller's progress callback (called every plan.progress_interval_ns with the
 * runner's counters; it may raise *stop to end the run early) instead of the live line. */
ds_result bench_run_once_hook(bench_opts *b, const dataset *ds, ds_stop_flag *stop, load_progress_fn progress,
                        void *ctx, recset *recs, bench_result *out, char *err, size_t errlen);
/* What `dsperf bench` adds around its run; both run on the leader only (rank 0 of a job, or the
 * one process). */
typedef struct {
    /* the outputs and the history checked before any load (run_job_parts.check); NULL: none */
    ds_result (*check)(void *ctx);
    /* the run's results (borrowed: freed after it returns) and records, written and printed;
     * DS_OK, or the failure the run ends with (a file not written, the run judged failed or partial) */
    ds_result (*report)(void *ctx, const bench_opts *b, const bench_result *br, const recset *recs);
    void *ctx;
} bench_job_hooks;

/* `dsperf bench` from parsed options to its result, as one job over the ranks an MPI launcher
 * started (run/job.h) or in this process: check, pre-flight and dataset (bench_prepare), the plan
 * run once with the live line (a signal ends it: the results are partial), report. Returns the
 * first failure (bench_prepare's, DS_ERUN when the run could not be set up, report's); on a job's
 * follower, the job's. */
ds_result bench_run_job(bench_opts *b, const bench_job_hooks *h);
/* Prints the per-class lines of a multi-class run (nothing for one class). */
void bench_print_classes(FILE *f, const json_t *results);
#endif
