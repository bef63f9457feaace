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
/* The migrations, for tests: schema_sql[v - 1] takes a database from version v - 1 to v. */
extern const char *const hist_migrations[HISTORY_SCHEMA_VERSION];
/* Applies migrations up to `to` inside one IMMEDIATE transaction. 0 or -1 with err. */
int hist_migrate(history *h, int to, char *err, size_t errlen);

/* ---- columns.c: the headline columns of the run table ---- */
typedef struct {
    const char *name;      /* column and metric name (vLLM's names) */
    bool band;             /* has <name>_lo and <name>_hi columns: an interval from the run's samples */
} hist_col;
extern const hist_col hist_cols[];
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
/* The query names runs by id only ("40", "36..40"): taken as given, not narrowed to comparable runs. */
bool hist_query_only_ids(const hist_query *q);
/* Prepares "SELECT <cols> FROM run r WHERE <query> [AND <extra>]" in ascending id order, of the
 * newest last:N (or `limit`, when smaller; 0: none) matches. cols must start with r.id. extra may
 * be NULL; its '?' parameters come after the query's: the caller binds them from *first_free on. */
int hist_query_prepare(history *h, const hist_query *q, const char *cols, const char *extra, int64_t limit, sqlite3_stmt **st,
                       int *first_free, char *err, size_t errlen);

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
/* The runs a query matches (and, when has_metric is given, that have a value for that metric)
 * that share the configuration of the most recent match (all of them with config:any), ascending. *note (malloc'd, or NULL) says what was left out and what the
 * configurations differ in ("4 matching runs of 1 other configuration left out; they differ in
 * concurrency (4, 8)"), or with config:any what the included runs differ in. ref_hash gets the
 * configuration hash of the most recent match ("" when none matched). */
int hist_comparable_select(history *h, const hist_query *q, const char *has_metric, history_ids *out, char **note,
                           char ref_hash[17], char *err, size_t errlen);
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
#endif
