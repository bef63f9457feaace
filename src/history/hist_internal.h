/* hist_internal — what the history's files share: the open database, SQLite error edges, the
 * headline columns, zlib and hashing, run selection and the compare view of a document. */
#ifndef DSP_HIST_INTERNAL_H
#define DSP_HIST_INTERNAL_H
#include "history/history.h"
#include <sqlite3.h>
#include <stddef.h>

struct history {
    sqlite3 *db;
    char *path;
    int version;          /* schema version after open */
    bool writable;
};

#define HIST_APPLICATION_ID 0x44535046   /* "DSPF": PRAGMA application_id of a dsperf history */
#define HIST_BUSY_TIMEOUT_MS 30000       /* a writer waits this long for another process's commit */

/* ---- db.c ---- */
/* "PATH: what SQLite said" with a hint for the codes a person can act on (busy, damaged, full,
 * read-only). Returns -1 so callers can `return hist_sql_err(...)`. */
int hist_sql_err(history *h, int rc, const char *what, char *err, size_t errlen);
/* Runs SQL without results. 0 or -1 with err. */
int hist_exec(history *h, const char *sql, char *err, size_t errlen);
/* The first schema's SQL, for the migration test. */
extern const char *const hist_schema_v1;
/* Applies migrations up to `to` inside one IMMEDIATE transaction. 0 or -1 with err. */
int hist_migrate(history *h, int to, char *err, size_t errlen);

/* ---- codec.c: the headline columns of the run table (values only; every headline metric, with
 * its band, is also in run_metric, which trend and best read) ---- */
extern const char *const hist_cols[];
extern const size_t hist_n_cols;
/* Index of a headline column, or -1. */
int hist_col_index(const char *name);

/* ---- codec.c ---- */
/* zlib. *out malloc'd. 0 or -1. */
int hist_deflate(const void *in, size_t len, unsigned char **out, size_t *out_len);
/* Inflates into a NUL-terminated buffer of exactly `len` bytes (+1). NULL on a damaged blob. */
char *hist_inflate(const void *in, size_t in_len, size_t len);
/* 64-bit FNV-1a, as 16 lowercase hex digits. */
void hist_hash_hex(const void *data, size_t len, char out[17]);
/* Canonical text of a JSON value (sorted keys, compact), malloc'd. */
char *hist_canonical(const json_t *v);
/* The parts of a document compare and trend read (the scalars, config, samples, the per-second
 * finished / output_tokens timeline, classes; a sweep's levels the same way), without telemetry,
 * engine series or environment: a new reference. */
json_t *hist_compare_view(const json_t *doc);
/* The stored compare view of a run (new reference) or NULL with err. */
json_t *hist_load_view(history *h, int64_t id, char *err, size_t errlen);

/* ---- query.c ---- */
typedef struct hist_query hist_query;
int hist_query_parse(const char *text, hist_query **q, char *err, size_t errlen);
void hist_query_free(hist_query *q);
bool hist_query_any_config(const hist_query *q);
int64_t hist_query_last(const hist_query *q);   /* last:N (0: none) */
/* The query names runs by id only ("40", "36..40"): taken as given, not narrowed to comparable runs. */
bool hist_query_only_ids(const hist_query *q);
/* Prepares "SELECT <cols> FROM run r [<join>] WHERE <query> [AND <extra>]" in ascending id order,
 * of the newest last:N (or `limit`, when smaller; 0: none) matches. cols must start with r.id. join
 * and extra may be NULL; extra's bare '?' parameters come after the query's: the caller binds them
 * from *first_free on (explicit ?100 and up are free for the caller too). */
int hist_query_prepare(history *h, const hist_query *q, const char *cols, const char *join, const char *extra, int64_t limit,
                       sqlite3_stmt **st, int *first_free, char *err, size_t errlen);

/* "SELECT r.id FROM run r WHERE <query>" (the newest last:N when asked) for an "IN (...)" inside
 * another statement, whose own parameters must then be ?100 and up; NULL when the query has no
 * term (every run). Bind its parameters with hist_query_bind. malloc'd. */
char *hist_query_ids_sql(const hist_query *q);
void hist_query_bind(sqlite3_stmt *st, const hist_query *q);
/* Prepares head + (" WHERE "/" AND ") column IN (the query's runs) + " " + tail (no restriction
 * when the query has no term), with the query's parameters bound: for statements over other
 * tables than run (run_metric) or grouped ones. */
int hist_prepare_in(history *h, const hist_query *q, const char *head, const char *column, const char *tail, sqlite3_stmt **st,
                    char *err, size_t errlen);

/* Labels read in run order beside another read in run order (one scan of run_label instead of a
 * lookup per run): get(id) with ascending ids returns "k=v, k=v" (valid until the next call) or
 * NULL when the run has none. */
typedef struct hist_label_cursor hist_label_cursor;
hist_label_cursor *hist_label_cursor_open(history *h, int64_t from_id);
const char *hist_label_cursor_get(hist_label_cursor *c, int64_t id);
void hist_label_cursor_close(hist_label_cursor *c);

/* Labels of a run as "k=v, k=v" (malloc'd; "" when none). */
char *hist_labels_text(history *h, int64_t id);
/* Canonical configuration JSON of a run (malloc'd) or NULL. */
char *hist_config_of(history *h, int64_t id);

/* The ids a query matches among runs before `before` (0: any) with configuration hash `config`
 * (NULL: any), ascending. */
int hist_select_before(history *h, const hist_query *q, int64_t before, const char *config, history_ids *out, char *err,
                       size_t errlen);
char *hist_config_hash_of(history *h, int64_t id);

/* ---- comparable.c ---- */
/* "Comparable" for a query: the configuration of its newest match (that has has_metric, when
 * given and stored) in ref_hash ("" when nothing matched), and how many matches share it (with
 * config:any, all of them). *note (malloc'd or NULL) says what was left out and what the
 * configurations differ in ("4 matching runs of 1 other configuration left out; they differ in
 * concurrency (4, 8)"), or with config:any what the runs differ in. */
int hist_comparable_select(history *h, const hist_query *q, const char *has_metric, size_t *n_comparable, char **note,
                           char ref_hash[17], char *err, size_t errlen);
/* Whether any run has this metric in run_metric (else only the documents can tell). */
bool hist_metric_stored(history *h, const char *metric);
/* What the configurations of these runs differ in, "concurrency (4, 8); dataset (a, b)", or NULL
 * when they share one. malloc'd. */
char *hist_config_differences(history *h, const int64_t *ids, size_t n);

/* ---- pool.c ---- */
/* One results document standing for several runs of one configuration: their samples pooled
 * (values together, n summed), their timelines' interior seconds together, the scalars a compare
 * reads recomputed from the pooled samples (family statistics) or averaged (the rest). views are
 * compare views; n >= 1 (n == 1 gives a copy). */
json_t *hist_pool(json_t *const *views, size_t n, const char *label);
/* The interval of one run's metric from its own samples (the noise band). false when the run
 * has no samples for it. */
bool hist_band(const json_t *doc, const char *metric, double *lo, double *hi);
/* Marks each trend run whose percentile metric comes from fewer requests than it needs
 * ("thin": {samples, samples_needed}); list.c. */
void hist_mark_thin_runs(history *h, const char *metric, json_t *runs);
#endif
