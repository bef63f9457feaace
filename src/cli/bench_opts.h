/* bench_opts — the command line of a load run into the run layer's bench_opts (run/bench_opts.h):
 * parsed and validated once, shared by `bench`, `sweep`, `tune` and `monitor`. */
#ifndef DSP_CLI_BENCH_OPTS_H
#define DSP_CLI_BENCH_OPTS_H
#include "run/bench_opts.h"

/* Returns -1 when the run should go ahead; otherwise the exit code to return now (0 after
 * --help, 2 after a usage error, which has been reported in one line). */
int bench_opts_parse(bench_opts *b, int argc, char **argv);
/* bench_opts_init, with room for argc headers and the command line kept, for commands that parse
 * their own flags into a bench_opts (monitor). Free with bench_opts_free. */
void bench_opts_defaults(bench_opts *b, int argc, char **argv);
/* The options every command that sends requests takes alike (bench, sweep, monitor): the target
 * (url, api, model, header, insecure, timeout), the requests (dataset, tokenizer, no-usage, seed),
 * the SLO, max-error-rate, quiet, and the history (db, label), by long option name. Returns 0 when applied, 1 when name is not one of them,
 * or EXIT_USAGE after its one-line error. */
int bench_opts_shared(bench_opts *b, const char *name, const char *value);
/* --trace-window "A..B", "A.." or "..B" (durations from the trace's first request) into [*lo, *hi)
 * (*hi 0: open). 0 ok, -1 malformed. */
int bench_opts_parse_window(const char *s, int64_t *lo, int64_t *hi);
#endif
