/* run/sweep — a whole sweep from options to document, shared by `dsperf sweep` (one target) and
 * `dsperf tune` (one sweep per server configuration): the ladder (or the auto ladder), each level
 * one bench run (run/bench.h) watched by the over-saturation detector and its early-stop rule,
 * repeats, and the sweep file rewritten atomically after every level. The options come from the
 * CLI's parser (cli/sweep_opts.h). */
#ifndef DSP_RUN_SWEEP_H
#define DSP_RUN_SWEEP_H
#include "run/bench_opts.h"
#include "common/result.h"
#include "sweep/sweep.h"
#include "sweep/stability.h"
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

typedef struct {
    const char *conc_ladder, *rate_ladder, *out_path, *save_prefix;
    const char *in_ladder, *outlen_ladder;   /* --input-len / --output-len: a sweep along context length */
    const char *length_axis;    /* "input_len" | "output_len" | NULL (a load sweep) */
    long other_len;             /* the length held fixed (the other flag's single value), 0: the dataset's */
    stab_score stab;            /* --stability-score */
    bool autom, early_stop;
    int auto_levels, auto_max_conc, repeats;
    double slo_pct;
    int64_t osd_window_ns;
    bool print_table;           /* the final table after the run (default true; tune prints its own) */
    double ladder[SWEEP_MAX_LEVELS];
    size_t n_levels;
    char ladder_buf[256], in_buf[256], out_buf[256];
    char default_out[1024];     /* the new file used when --out is not given */
    char **bargv;               /* bench's argv: b's strings point into it and the caller's argv */
    int bargc;
    FILE *summary;              /* where each level's row and the final table go (unless b->quiet) */
    /* names the new file used when --out is not given, at the first save (NULL after its one error
     * line): the CLI's cli_default_output */
    const char *(*name_default_out)(const char *flag, const char *stem, const char *ext, char *buf, size_t cap);
} sweep_opts;

/* Runs the sweep against b->client.base_url: pre-flight and dataset (bench_prepare; under a job,
 * joined with every rank's: run/job.h), every level, so->out_path rewritten after each. Progress
 * rows go to so->summary unless b->quiet. *doc_out gets the sweep document (the caller's; NULL when
 * the pre-flight failed). Returns DS_OK; bench_prepare's failure (DS_ECONNECT, DS_EINVAL: reported
 * in one line) or a job's rank's; or, with the document marked partial where it applies, DS_ERUN (a
 * level could not be run), DS_EINTR (a signal), DS_EJUDGED (a level not measured, or failed by the
 * run policy), DS_EIO (the final file not written). */
ds_result sweep_run(sweep_opts *so, bench_opts *b, json_t **doc_out);

/* `dsperf sweep` from parsed options to its result, as one job over the ranks an MPI launcher
 * started (run/job.h) or in this process: check(ctx) on the leader before any load (the outputs,
 * the history; NULL: none), then sweep_run with SIGINT/SIGTERM stopping it, the document recorded
 * in b->hist (DS_EIO when that fails). Returns sweep_run's result, or check's; on a job's
 * follower, the job's. */
ds_result sweep_run_job(sweep_opts *so, bench_opts *b, ds_result (*check)(void *ctx), void *ctx);

/* Stops a running sweep as Ctrl-C does (the level in progress ends, no further level starts).
 * Async-signal-safe: call it from the caller's SIGINT/SIGTERM handler. Sticky for the process. */
void sweep_run_request_stop(void);
bool sweep_run_stop_requested(void);
#endif
