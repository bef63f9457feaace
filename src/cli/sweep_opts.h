/* sweep_opts — parsing `dsperf sweep`'s options (and tune's sweep options) into the run layer's
 * sweep_opts and bench_opts (run/sweep.h). */
#ifndef DSP_CLI_SWEEP_OPTS_H
#define DSP_CLI_SWEEP_OPTS_H
#include "cli/bench_opts.h"
#include "run/sweep.h"

/* Parses argv (argv[0] the command name) as `dsperf sweep` takes it: sweep's own options into so,
 * the rest (with a placeholder load) through bench_opts_parse into b. cmd names the command in
 * error lines ("see dsperf <cmd> --help"); help_text is printed for --help. Returns -1 when the run
 * should go ahead (free with sweep_opts_free), otherwise the exit code (0 after --help, 2 after a
 * usage error reported in one line); then nothing needs freeing. */
int sweep_opts_parse(sweep_opts *so, bench_opts *b, int argc, char **argv, const char *cmd, const char *help_text);
void sweep_opts_free(sweep_opts *so, bench_opts *b);

#endif
