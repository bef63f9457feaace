/* history — every run in one SQLite database: recorded when its results file is written (bench,
 * sweep, sim, tune, monitor summaries, imported files), with the command, the tool version, the
 * endpoint, the model and engine identity, the GPUs, a configuration hash that says which runs
 * are comparable, user labels, the headline metrics as columns, the samples compare needs and the
 * whole document (zlib). Queries over it: list, show, the trend of a metric with its noise band
 * and change points, the best run, and compare/gate against history with src/compare's own
 * statistics. The database is versioned with migrations, written in WAL mode with a busy timeout
 * (several processes may record at once), and a damaged file is reported, never rewritten. */
#ifndef DSP_HISTORY_H
#define DSP_HISTORY_H
#include "compare/compare.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define HISTORY_SCHEMA_VERSION 2      /* the newest schema this dsperf writes and reads */
#define HISTORY_MAX_LABELS 32

typedef struct history history;

typedef enum {
    HISTORY_READ,       /* the file must exist; never written (migrations included) */
    HISTORY_WRITE,      /* created when missing, migrated to HISTORY_SCHEMA_VERSION */
} history_mode;

/* Opens a history. Returns 0, or -1 with one line in err: the file is missing (READ), not an
 * SQLite database, an SQLite database that is not a dsperf history, written by a newer dsperf,
 * damaged (quick_check failed: left untouched), or locked past the busy timeout. */
int history_open(const char *path, history_mode mode, history **out, char *err, size_t errlen);
void history_close(history *h);
int history_schema_version(history *h);
/* PRAGMA integrity_check over the whole file. 0 ok, 1 damaged (report gets SQLite's first
 * findings), -1 could not run (err). */
int history_integrity(history *h, char *report, size_t len);
/* Opens, migrates and closes: the check a command makes before its run, so a bad --db is a usage
 * error before any load is sent. 0 ok, -1 with err. */
int history_prepare(const char *path, char *err, size_t errlen);

/* ---- document kinds ----
 * A kind says how one sort of dsperf document is recorded: its schema, its headline metrics (read
 * from the document by path, "a.b.c" through objects) and the configuration keys that make two
 * runs comparable. Built in: results (bench, sim, monitor summaries, imports), sweep, tune; drift
 * is registered by the commands (cli/history_opts.c). Adding a kind is one call
 * (history_register_kind). Every headline metric is kept in run_metric with its noise band, where
 * trend and best read it; one whose name is a headline column of the run table also fills that
 * column. */
typedef struct {
    const char *name;              /* the metric as stored and queried ("top1_agreement") */
    const char *path;              /* where in the document ("summary.top1_agreement") */
    int direction;                 /* +1 higher is better, -1 lower; 0: as compare reads the name */
} history_metric_def;

typedef struct {
    const char *kind;              /* "drift" */
    const char *schema_prefix;     /* "dsperf.drift/" */
    const history_metric_def *metrics;   /* terminated by a {NULL, NULL} entry */
    const char *const *config_keys;      /* keys of the document's "config" that make runs
                                          * comparable ("a.b" with a dot: that path from the
                                          * document's top), NULL-terminated; NULL: all of it */
    /* optional: the value of a metric the path cannot reach (NULL: by path) */
    double (*value)(const json_t *doc, const char *name);
    /* optional: the noise band a document states for a metric (true when it has one); NULL: from
     * the run's own samples, as compare reads them */
    bool (*band)(const json_t *doc, const char *name, double *lo, double *hi);
    /* optional: where the identity lies when not where a results document keeps it ("date",
     * "command_line", "version", "config.url", "config.model"); the time may be Unix seconds */
    const char *time_path, *command_path, *version_path, *endpoint_path, *model_path;
} history_kind;

/* Registers a kind (the struct must outlive the process's use of it). 0, or -1 when the table
 * is full or the schema prefix is already taken. */
int history_register_kind(const history_kind *k);
/* The kind that records documents of this schema, or NULL. */
const history_kind *history_kind_of(const json_t *doc);
/* Which way is better for a metric: a registered kind's direction, else compare's reading of the
 * name (+1 higher, -1 lower, 0 unknown). */
int history_metric_direction(const char *metric);

/* ---- recording ---- */

typedef struct {
    const char *const *labels;     /* "key=value", as --label takes them */
    int n_labels;
    const char *source;            /* the file a document was imported from (NULL: recorded by a run) */
} history_record_opts;

/* Checks one "key=value" label (key: letters, digits, '_', '.', '-'; value printable, <= 200
 * bytes). 0, or -1 with err. */
int history_check_label(const char *kv, char *err, size_t errlen);

/* Records a document in one transaction. *run_id gets its id; *existed is true when the same
 * document was recorded before (nothing is added then: importing a file twice is harmless).
 * -1 with err (not a recordable document, a bad label, the database). */
int history_record(history *h, const json_t *doc, const history_record_opts *o, int64_t *run_id, bool *existed,
                   char *err, size_t errlen);
/* Opens path for writing, records, closes: the one call a command makes when its results are
 * written (an MPI job makes it on rank 0 only). */
int history_record_to(const char *path, const json_t *doc, const history_record_opts *o, int64_t *run_id, char *err,
                      size_t errlen);

/* ---- reading ---- */

/* Query text: space-separated terms, all of which must hold —
 *   N, A..B, id:N, id:A..B    run ids            latest, last:N   the most recent N matches
 *   model:GLOB endpoint:GLOB engine:GLOB gpu:GLOB host:GLOB kind:GLOB producer:GLOB version:GLOB
 *   label:KEY=GLOB, label:KEY           since:DATE|Nd|Nh|Nm  until:DATE   (DATE: 2026-01-31[T12:00[:00]], UTC)
 *   config:HASHPREFIX, config:any       partial:yes|no
 * GLOB as SQLite's (case-sensitive, * ? [..]). The empty query matches every run. */

typedef struct {
    int64_t *ids;       /* ascending */
    size_t n;
} history_ids;
void history_ids_free(history_ids *s);

/* The ids of the runs a query matches. -1 with err (a bad term names itself). */
int history_select(history *h, const char *query, history_ids *out, char *err, size_t errlen);

typedef struct {
    int64_t limit;      /* at most this many rows, the most recent (0: all) */
    bool json;          /* one JSON array instead of a table */
    bool wide;          /* table: every headline column */
} history_list_opts;
int history_list(history *h, const char *query, const history_list_opts *o, FILE *f, char *err, size_t errlen);

/* One run: identity, labels, configuration, headline metrics with their bands. doc: print the
 * stored document itself (a results file again). -1 with err when there is no such run. */
int history_show(history *h, int64_t id, bool doc, FILE *f, char *err, size_t errlen);
/* The stored document of a run (a new reference), or NULL with err. */
json_t *history_load_doc(history *h, int64_t id, char *err, size_t errlen);

/* ---- trend, best, compare ---- */

typedef struct {
    const char *query;
    int min_runs;          /* fewest runs on each side of a change point (2) */
    int window;            /* runs pooled on each side to test a change (5) */
    int show_last;         /* runs kept in the document's "runs" (the newest; 0: every run): a text
                            * table needs 30, a report or --json all (then 0) */
    double min_effect_pct; /* a change smaller than this is not reported (compare's 1 %) */
    int resamples;         /* bootstrap rounds of the test (compare's 2000) */
    bool json;
} history_trend_opts;
void history_trend_default_opts(history_trend_opts *o);

/* The metric over the comparable runs the query matches (those of the most recent match's
 * configuration unless the query says config:any, in which case the differences are listed),
 * each with its noise band from its own samples, and the change points: found on the series,
 * then tested as compare tests two runs, on the pooled samples of the runs before and after.
 * The result document (dsperf.history-trend/1) is returned; printing is the caller's choice. */
json_t *history_trend(history *h, const char *metric, const history_trend_opts *o, char *err, size_t errlen);
void history_trend_print(FILE *f, const json_t *trend);

/* A leaderboard among comparable runs: the best `top` by the metric (its direction from its
 * name, as compare judges it), each with its band, labels, engine and GPUs. */
json_t *history_best(history *h, const char *metric, const char *query, int top, char *err, size_t errlen);
void history_best_print(FILE *f, const json_t *best);

typedef struct {
    const char *baseline, *candidate;   /* queries (a bare run id is a query) */
    bool empty_baseline_ok;             /* no baseline run yet: a note and passed, not an error */
} history_compare_opts;

/* Resolves the candidate (one run, or several pooled), then the baseline: the runs the baseline
 * query matches that were recorded before the candidate and share its configuration (unless
 * the query says config:any). Several runs on a side are pooled into one document (their
 * requests' samples together, their per-second timelines' interiors together) and compared with
 * compare_runs/compare_sweeps exactly as `dsperf compare` compares two files. Returns the
 * dsperf.compare/1 document with a "history" section (which runs on each side), or NULL with
 * err. *no_baseline is set (and NULL returned with err as the note) when the baseline is empty. */
json_t *history_compare(history *h, const history_compare_opts *ho, const compare_opts *co, bool *no_baseline,
                        char *err, size_t errlen);

/* ---- import and export ---- */

/* A dsperf results, sweep or tune file, or a vLLM benchmark result JSON (vllm bench serve
 * --save-result; with --save-detailed its per-request lists become samples). The document to
 * record (a new reference) or NULL with err. */
json_t *history_import_file(const char *path, char *err, size_t errlen);
/* vLLM's result JSON as a dsperf.results/1 document (its field names are ours). */
json_t *history_from_vllm(const json_t *v, const char *path, char *err, size_t errlen);

/* A run as llm-d's Benchmark Report v0.2 (results kinds; a sweep gives one report per level, as
 * an array). NULL with err for other kinds. */
json_t *history_export_br02(history *h, int64_t id, char *err, size_t errlen);
json_t *history_br02_of_results(const json_t *results, const json_t *run_info);
#endif
