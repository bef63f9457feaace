/* cli — the subcommands. Each lives in src/cli/cmd_<name>.c as int cmd_<name>(argc, argv) with
 * argv[0] the command name, prints its own --help, and returns an exit code (0 ok, 1 run or gate
 * failed, 2 usage). main.c's command table lists every one of them. */
#ifndef DSP_CLI_H
#define DSP_CLI_H

#include "common/version.h"
#include <stddef.h>
#include <stdbool.h>
#include <stdio.h>

typedef int (*cmd_fn)(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_sweep(int argc, char **argv);
int cmd_serve(int argc, char **argv);
int cmd_sim(int argc, char **argv);
int cmd_plan(int argc, char **argv);
int cmd_diagnose(int argc, char **argv);
int cmd_report(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_tune(int argc, char **argv);
int cmd_gpu(int argc, char **argv);
int cmd_monitor(int argc, char **argv);
int cmd_tokenize(int argc, char **argv);
int cmd_env(int argc, char **argv);
int cmd_trace(int argc, char **argv);
int cmd_drift(int argc, char **argv);
int cmd_history(int argc, char **argv);

struct option;
struct run_sim_opts;
/* `dsperf sim`'s parser (cmd_sim.c) for the simulator's settings alone (tune's --sim-flags, argv[0]
 * "sim"): -1 with *o filled (run_sim_defaults, then the words), or EXIT_USAGE with one line in err. */
int cli_sim_parse_flags(int argc, char **argv, struct run_sim_opts *o, char *err, size_t errlen);
/* A getopt_long table: the command's own options followed by one required-argument option per
 * key (e.g. the simulator's keys from sim_params_keys()), key i getting the value first_val + i.
 * NULL-terminated; free() it. NULL on out-of-memory. */
struct option *cli_options_with_keys(const struct option *own, size_t n_own, const char *const *keys, int first_val);

/* Checks before any work that an output named by a flag (--out, --save-requests, -o, ...) can be
 * written: 0, or logs one line naming the flag, the path and why, and returns EXIT_USAGE. NULL
 * passes (the output was not asked for). */
int cli_check_output(const char *flag, const char *path);
/* Where a command prints its terminal summary: stdout, or stderr once an output flag checked by
 * cli_check_output took standard output ("-"), so the document on stdout stays machine-readable. */
FILE *cli_summary_stream(void);
/* A default output that never overwrites an earlier run: a new file STEM-<date>-<time>.EXT (made
 * by fileio_unique_path, in $DSPERF_RESULTS_DIR or here) when the results are about to be written;
 * returns buf, or NULL after one error line naming flag. cli_check_default_output checks before
 * the run that such a file can be made there (0, or one line and EXIT_USAGE). */
int cli_check_default_output(const char *flag, const char *stem, const char *ext);
const char *cli_default_output(const char *flag, const char *stem, const char *ext, char *buf, size_t cap);

/* A bad option at getopt_long's '?' (or ':'): one line in one style for every command — "unknown
 * option '--concurency'; did you mean --concurrency? (see dsperf CMD --help)", or "option --out needs
 * a value". ind and opt are getopt's optind and optopt after the call. Returns EXIT_USAGE. */
int cli_bad_option(const char *cmd, const struct option *opts, int argc, char **argv, int ind, int opt);
/* With DSPERF_OPTION_TABLE=cmd in the environment: prints "# option table of dsperf cmd", then
 * the command's option table (one "--name" a line), and exits 0, so that shell completion is generated from the table the parser
 * uses (scripts/gen_completion.sh) and cannot drift from it. Otherwise does nothing. */
void cli_option_table(const char *cmd, const struct option *opts);
/* The same line into err instead of the log (for parsers whose caller reports it). EXIT_USAGE. */
int cli_bad_option_text(const char *cmd, const struct option *opts, int argc, char **argv, int ind, int opt, char *err,
                        size_t errlen);
/* The option of opts nearest to name[0..len) by edit distance, when near enough to be a typo; NULL. */
const char *cli_nearest_option(const struct option *opts, const char *name, size_t len);

/* argv joined with shell quoting, so the line can be pasted back; owned by the caller. */
char *cli_join_argv(int argc, char **argv);
/* "The exact command line" of results documents: "dsperf " + the command's argv (argv[0] the
 * command name) joined as above; owned by the caller. */
char *cli_command_line(int argc, char **argv);

/* One word of an argv a command splits by hand (its own options vs those it passes on, as sweep
 * and tune do): "--name value" or "--name=value". */
typedef struct { const char *arg, *eq; size_t name_len; } cli_word;
void cli_word_init(cli_word *w, const char *arg);
bool cli_word_is(const cli_word *w, const char *name);
/* The value: what follows '=', else the next argument (advancing *i); NULL when there is none. */
const char *cli_word_value(const cli_word *w, int argc, char **argv, int *i);
#endif
