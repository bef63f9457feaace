/* run/tune — the configurations of `dsperf tune`, run one at a time (see tune.c): a server per grid
 * point swept with run/sweep.h, or the simulator in this process (run/sim.h) per level. The CLI
 * parses; the per-configuration option words (the grid's placeholders filled in) go through the
 * parsers the CLI hands over in tune_opts, never through a command line or a process of dsperf. */
#ifndef DSP_RUN_TUNE_H
#define DSP_RUN_TUNE_H
#include "run/bench_opts.h"
#include "run/sweep.h"
#include "run/sim.h"
#include "tune/tune.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *server_cmd, *sim_flags, *url, *out_path, *gpus_key, *objective;
    double gpus;
    bool dry_run;
    int64_t health_timeout_ns, stop_grace_ns;
    tune_grid grid;
    char **rest;                /* the sweep options, argv-style (rest[0] = "tune") */
    int nrest;
    history_opts hist;          /* --db / --label: the tune and each configuration's sweep recorded */
    /* the CLI's parsers for one configuration's words: the sweep options (argv[0] "tune"; -1 to go
     * on, else an exit code after one line, as sweep_opts_parse) and, with --sim-flags, the
     * simulator's settings (argv[0] "sim"; -1 to go on, else an exit code with the line in err) */
    int (*parse_sweep)(sweep_opts *so, bench_opts *b, int argc, char **argv);
    void (*free_sweep)(sweep_opts *so, bench_opts *b);
    int (*parse_sim)(int argc, char **argv, run_sim_opts *o, char *err, size_t errlen);
} tune_opts;

/* A signal asks the run to stop (the server in service is stopped, no configuration starts). */
void tune_run_request_stop(void);
bool tune_run_stopped(void);

/* Runs configuration idx of total: a server from the template, or the simulator with sim_flags.
 * Fills cfg (status, settings, sweep file, summary, log tail). True when it measured anything. */
bool tune_run_config(const tune_opts *t, size_t idx, size_t total, const char *stem, json_t *cfg);
bool tune_run_config_sim(const tune_opts *t, size_t idx, size_t total, const char *stem, json_t *cfg);

/* Runs every configuration of the grid in order (until a stop is requested): each is added to
 * doc's "configs" as it starts, run (a server or the simulator), recorded in the history when --db
 * was given (its sweep, with its settings as labels; *history_failed when that failed), and doc is
 * saved to t->out_path before and after it. *measured counts the configurations that measured. */
void run_tune(const tune_opts *t, json_t *doc, const char *stem, size_t *measured, bool *history_failed);
/* The tune document before any configuration has run (schema, command line, grid, settings);
 * command_line is tune's, sweep_line the sweep options as typed. */
json_t *tune_new_doc(const tune_opts *t, const char *command_line, const char *sweep_line, const bench_opts *b, double slo_pct);
/* Analyses and writes the document atomically; -1 (logged) when it cannot be written. */
int tune_save(json_t *doc, const char *path);
/* "runs/tune.json" -> "runs/tune" (malloc'd): per-configuration files are STEM.N.* */
char *tune_out_stem(const char *out);
/* The sweep's argv for one configuration: the sweep options with the grid's placeholders filled,
 * then --url URL --out SWEEP_PATH; free with tune_free_argv. */
char **tune_config_argv(const tune_opts *t, const size_t *choice, int port, const char *url, const char *sweep_path,
                        int *argc_out);
void tune_free_argv(char **v, int n);
/* Was the sweep option `name` (e.g. "--requests") given? */
bool tune_arg_given(const tune_opts *t, const char *name);
/* GPUs of configuration `choice`: --gpus, else the --gpus-key grid value, else 0 (unknown). */
double tune_config_gpus(const tune_opts *t, const size_t *choice);

/* One configuration as --dry-run shows it, nothing started: its placeholders filled ({port} stays
 * as written), credentials masked. A NULL string could not be made (out of memory). */
typedef struct {
    char *label;                 /* the grid values, "seqs=64 kv=fp8" ("" without a grid) */
    char *command;               /* the server's launch command, or the simulator's flags */
    char *url;                   /* where the server would answer */
    double gpus;                 /* per configuration (0: unknown) */
} tune_planned;
/* Every configuration of t's grid in the order run_tune runs them: *out (n = tune_grid_size),
 * freed with tune_plan_free. DS_OK, or DS_ENOMEM. */
ds_result tune_plan(const tune_opts *t, tune_planned **out, size_t *n);
void tune_plan_free(tune_planned *p, size_t n);
#endif
