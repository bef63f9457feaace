/* run/bench — one load setting from options to results: pre-flight and dataset (bench_prepare),
 * then plan → records → results JSON (bench_run_once). `bench` runs it once; `sweep` once per
 * load level. */
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
/* A follower of a multi-host job (rank > 0, after dist_join): runs every run rank 0 announces,
 * with this rank's slice of the plan, until rank 0 ends the job; returns the job's exit code. */
int bench_follow(bench_opts *b, const dataset *ds);
/* Prints the per-class lines of a multi-class run (nothing for one class). */
void bench_print_classes(FILE *f, const json_t *results);
#endif
