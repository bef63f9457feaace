/* sweep_run — a whole sweep from options to document, shared by `dsperf sweep` (one target) and
 * `dsperf tune` (one sweep per server configuration): option parsing (sweep's own options, the
 * rest handed to bench's parser), the ladder (or the auto ladder), each level watched by the
 * over-saturation detector, repeats, and the sweep file rewritten atomically after every level. */
#ifndef DSP_SWEEP_RUN_H
#define DSP_SWEEP_RUN_H
#include "cli/bench_opts.h"
#include "sweep/sweep.h"
#include "sweep/stability.h"
#include <stdbool.h>
#include <stdint.h>

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
} sweep_opts;

/* Parses argv (argv[0] the command name) as `dsperf sweep` takes it: sweep's own options into so,
 * the rest (with a placeholder load) through bench_opts_parse into b. cmd names the command in
 * error lines ("see dsperf <cmd> --help"); help_text is printed for --help. Returns -1 when the run
 * should go ahead (free with sweep_opts_free), otherwise the exit code (0 after --help, 2 after a
 * usage error reported in one line); then nothing needs freeing. */
int sweep_opts_parse(sweep_opts *so, bench_opts *b, int argc, char **argv, const char *cmd, const char *help_text);
void sweep_opts_free(sweep_opts *so, bench_opts *b);

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
