/* tune — the parts of `dsperf tune` that are not the sweep itself: the grid of server settings
 * (cartesian product), the launch template ({port} and {key} placeholders), running one server
 * process per configuration (own process group, health wait, SIGTERM then SIGKILL), and the
 * analysis of the measured configurations (per-config summary from its sweep document, the
 * Pareto front of throughput per GPU against tail latency, the recommendation under the SLO). */
#ifndef DSP_TUNE_H
#define DSP_TUNE_H
#include <jansson.h>
#include "common/stop.h"
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define TUNE_SCHEMA "dsperf.tune/1"
#define TUNE_MAX_KEYS 16
#define TUNE_MAX_VALUES 64
#define TUNE_MAX_CONFIGS 4096
/* A load whose failed share is above this is not ranked (not on the front, not recommended). */
#define TUNE_MAX_ERROR_RATE 0.01
/* A lead over the runner-up below this ratio is called marginal, however clear statistically. */
#define TUNE_MARGINAL_LEAD 1.05
/* Front points within this fraction on both axes are one entry (configurations alike there). */
#define TUNE_ALIKE 0.005

/* ---- grid ----
 * One axis per key; values are strings. tune_grid_add takes "key=v1,v2,..." where a value may be
 * a numeric range expanded like a sweep ladder ("4..32x2" = 4,8,16,32; "8..64 step 8"). Keys are
 * identifiers ([A-Za-z_][A-Za-z0-9_]*), unique, and not "port" (the template's own). */
typedef struct {
    char *key;
    char *values[TUNE_MAX_VALUES];
    size_t n;
} tune_axis;

typedef struct {
    tune_axis axes[TUNE_MAX_KEYS];
    size_t n;
} tune_grid;

void tune_grid_init(tune_grid *g);
void tune_grid_free(tune_grid *g);
/* 0 ok, -1 with err. */
int tune_grid_add(tune_grid *g, const char *spec, char *err, size_t errlen);
/* Number of configurations (the product of the axis sizes; 1 for an empty grid). */
size_t tune_grid_size(const tune_grid *g);
/* The value indices of configuration idx: the last axis varies fastest, so configuration 0 takes
 * every axis's first value (the default) and the order is the nested loops' order. */
void tune_grid_point(const tune_grid *g, size_t idx, size_t *choice);
/* The value of key at choice, NULL when key is not a grid key. */
const char *tune_grid_lookup(const tune_grid *g, const size_t *choice, const char *key);
/* "seqs=64 kv=auto" (malloc'd). */
char *tune_grid_label(const tune_grid *g, const size_t *choice);

/* ---- templates ----
 * A placeholder is '{' NAME '}' with NAME an identifier; "{{" is a literal '{', and "${" (shell
 * parameter expansion) and braces around anything else are left as they are. {port} is the
 * configuration's port; every other NAME must be a grid key. */
/* Checks that every placeholder in tmpl is port or a grid key. 0 ok, -1 with err naming it. */
int tune_template_check(const char *tmpl, const tune_grid *g, char *err, size_t errlen);
/* Substitutes the placeholders (malloc'd); port < 0 leaves {port} as written (a dry run). strict:
 * an unknown NAME is an error (NULL with err); otherwise it is left as written. */
char *tune_template_render(const char *tmpl, const tune_grid *g, const size_t *choice, int port, bool strict,
                           char *err, size_t errlen);

/* ---- the server process ---- */
typedef struct {
    pid_t pid;                  /* leader of its own process group; 0 when none */
    bool exited;                /* reaped */
    int status;                 /* wait status once exited */
} tune_proc;

/* A free TCP port on 127.0.0.1 (bound, read, closed), or -1 with err. */
int tune_free_port(char *err, size_t errlen);
/* Starts /bin/sh -c cmd in a new process group, stdin from /dev/null, stdout and stderr appended
 * to log_path. 0 ok, -1 with err. */
int tune_proc_start(tune_proc *p, const char *cmd, const char *log_path, char *err, size_t errlen);
/* Runs argv[0] (a path) with argv in a new process group, stdin and stdout to /dev/null, stderr
 * appended to log_path. 0 ok, -1 with err. */
int tune_proc_spawn(tune_proc *p, char *const argv[], const char *log_path, char *err, size_t errlen);
/* Waits for the process to exit; when *stop is raised first, stops it (tune_proc_stop with
 * grace_ns) and returns -1. 0 when it exited (p->status). */
int tune_proc_wait(tune_proc *p, ds_stop_flag *stop, int64_t grace_ns);
/* True while the process has not exited (reaps it when it has). */
bool tune_proc_alive(tune_proc *p);
/* Polls GET <base>/health, then <base>/v1/models, every 200 ms until one answers 200.
 * 0 healthy (*path_out = the path that answered), -1 the process exited first, -2 timeout,
 * -3 *stop was raised; err says which. */
int tune_wait_healthy(tune_proc *p, const char *base_url, int64_t timeout_ns, ds_stop_flag *stop,
                      const char **path_out, char *err, size_t errlen);
/* SIGTERM to the group, SIGKILL to it after grace_ns if anything is left, and reaps the leader.
 * Returns 0 when SIGTERM sufficed, 1 when SIGKILL was needed. */
int tune_proc_stop(tune_proc *p, int64_t grace_ns);
/* "exited with status 3" / "killed by signal 9" for a wait status. */
void tune_describe_status(int status, char *buf, size_t len);
/* The last max_lines lines of a file, at most max_bytes (malloc'd; "" when empty or missing). */
char *tune_log_tail(const char *path, int max_lines, size_t max_bytes);
/* The --speedup K of a `dsperf serve` command line (engine time K x wall time), 1 when absent. */
double tune_detect_speedup(const char *cmd);

/* ---- analysis ----
 * objective: "e2el", "ttft" or "tpot": the p<P> latency (P = the sweep's --slo-percentile,
 * server-view fields as goodput uses) plotted against throughput. */
bool tune_objective_valid(const char *objective);

/* The per-configuration summary of a sweep document: its operating points (one per load, mean
 * over repeats: load, output throughput (and per GPU), request goodput (and per GPU), the
 * objective latency, the error rate, "usable" (completed requests and an error rate <=
 * TUNE_MAX_ERROR_RATE), whether every SLO holds at P and it is usable), the knee, the max output throughput, the
 * sweep's max goodput and the best SLO-compliant level. gpus <= 0: unknown (per-GPU = per
 * config). NULL when the document has no levels. */
json_t *tune_config_summary(const json_t *sweep_doc, double gpus, const char *objective);

/* Marks the points not dominated: higher x is better, lower y is better; a point is dominated
 * when another is at least as good on both and strictly better on one. Non-finite points are
 * never on the front. Returns the count on the front. */
size_t tune_pareto(const double *x, const double *y, size_t n, bool *on_front);

/* One measured configuration as the recommendation sees it. */
typedef struct {
    bool measured;
    bool eligible;              /* meets the SLO at some load (always true without an SLO) */
    double score;               /* goodput per GPU under the SLO; without an SLO, max output tok/s per GPU */
    double tiebreak;            /* output throughput per GPU at that load */
} tune_cand;

/* Index of the best eligible candidate (highest score, then tiebreak, then the lower index), or
 * -1 when none is eligible. */
long tune_recommend(const tune_cand *c, size_t n);

/* Recomputes the document's "pareto" and "recommendation" from its "configs" (each with
 * "status" and "summary"). 0 ok. */
int tune_analyse(json_t *doc);
/* The final table (<= 100 columns), the Pareto front and the recommendation. */
void tune_print(FILE *f, const json_t *doc);
#endif
