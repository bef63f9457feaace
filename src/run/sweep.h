/* run/sweep — a whole sweep from options to document, shared by `dsperf sweep` (one target) and
 * `dsperf tune` (one sweep per server configuration): the ladder (or the auto ladder), each level
 * one bench run (run/bench.h) watched by the over-saturation detector and its early-stop rule,
 * repeats, and the sweep file rewritten atomically after every level. The options come from the
 * CLI's parser (cli/sweep_opts.h). */
#ifndef DSP_RUN_SWEEP_H
#define DSP_RUN_SWEEP_H
#include "run/bench_opts.h"
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

/* Runs the sweep against b->client.base_url: pre-flight and dataset (bench_prepare), every level,
 * so->out_path rewritten after each. Progress rows go to stdout unless b->quiet. *doc_out gets
 * the sweep document (the caller's; NULL when the pre-flight failed). Returns EXIT_OK,
 * EXIT_RUN_FAILED (a level failed or the run was interrupted: the document is marked partial)
 * or EXIT_USAGE (pre-flight or dataset failed, reported in one line). */
int sweep_run(sweep_opts *so, bench_opts *b, json_t **doc_out);

/* Stops a running sweep as Ctrl-C does (the level in progress ends, no further level starts).
 * Async-signal-safe: call it from the caller's SIGINT/SIGTERM handler. Sticky for the process. */
void sweep_run_request_stop(void);
bool sweep_run_stop_requested(void);
#endif
