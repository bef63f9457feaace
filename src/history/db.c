/* db — opening a history: the file checks before SQLite touches it, the schema versions and their
 * migrations, WAL with a busy timeout, the integrity checks, and SQLite's errors as one line.
 *
 * A history is never repaired or recreated behind the user's back: a file that is not SQLite,
 * an SQLite file that is not a history, one from a newer dsperf and one that fails quick_check
 * are all refused with a line saying so, and the file is left exactly as it was. */
#include "history/hist_internal.h"
#include "metrics/metric_table.h"
#include "common/version.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- the schema ----
 * Frozen once released: a change is a new migration, never an edit of an old one. */

static const char schema_v1[] =
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);"
    "CREATE TABLE run ("
    " id INTEGER PRIMARY KEY,"
    " recorded_at INTEGER NOT NULL,"     /* Unix s, when it was recorded */
    " run_time INTEGER,"                 /* Unix s, the document's date (the run's end) */
    " kind TEXT NOT NULL, producer TEXT, schema TEXT, tool_version TEXT, command TEXT, host TEXT,"
    " endpoint TEXT, model TEXT, engine TEXT, engine_version TEXT,"
    " gpu_type TEXT, gpu_count INTEGER, gpu_driver TEXT,"
    " config_hash TEXT NOT NULL, config TEXT NOT NULL,"
    " labels TEXT NOT NULL DEFAULT '{}',"  /* v1: a JSON object; v2 moved them to run_label */
    " partial INTEGER NOT NULL DEFAULT 0, source TEXT, doc_hash TEXT NOT NULL UNIQUE,"
    "completed REAL,"
    "failed REAL,"
    "error_rate REAL,"
    "duration REAL,"
    "request_throughput REAL, request_throughput_lo REAL, request_throughput_hi REAL,"
    "output_throughput REAL, output_throughput_lo REAL, output_throughput_hi REAL,"
    "total_token_throughput REAL,"
    "request_goodput REAL,"
    "max_output_tokens_per_s REAL,"
    "mean_ttft_ms REAL, mean_ttft_ms_lo REAL, mean_ttft_ms_hi REAL,"
    "median_ttft_ms REAL, median_ttft_ms_lo REAL, median_ttft_ms_hi REAL,"
    "p90_ttft_ms REAL, p90_ttft_ms_lo REAL, p90_ttft_ms_hi REAL,"
    "p99_ttft_ms REAL, p99_ttft_ms_lo REAL, p99_ttft_ms_hi REAL,"
    "mean_tpot_ms REAL, mean_tpot_ms_lo REAL, mean_tpot_ms_hi REAL,"
    "median_tpot_ms REAL, median_tpot_ms_lo REAL, median_tpot_ms_hi REAL,"
    "p90_tpot_ms REAL, p90_tpot_ms_lo REAL, p90_tpot_ms_hi REAL,"
    "p99_tpot_ms REAL, p99_tpot_ms_lo REAL, p99_tpot_ms_hi REAL,"
    "mean_itl_ms REAL, mean_itl_ms_lo REAL, mean_itl_ms_hi REAL,"
    "median_itl_ms REAL, median_itl_ms_lo REAL, median_itl_ms_hi REAL,"
    "p90_itl_ms REAL, p90_itl_ms_lo REAL, p90_itl_ms_hi REAL,"
    "p99_itl_ms REAL, p99_itl_ms_lo REAL, p99_itl_ms_hi REAL,"
    "mean_e2el_ms REAL, mean_e2el_ms_lo REAL, mean_e2el_ms_hi REAL,"
    "median_e2el_ms REAL, median_e2el_ms_lo REAL, median_e2el_ms_hi REAL,"
    "p90_e2el_ms REAL, p90_e2el_ms_lo REAL, p90_e2el_ms_hi REAL,"
    "p99_e2el_ms REAL, p99_e2el_ms_lo REAL, p99_e2el_ms_hi REAL,"
    "p99_ttft_from_schedule_ms REAL, p99_ttft_from_schedule_ms_lo REAL, p99_ttft_from_schedule_ms_hi REAL,"
    "p99_e2el_from_schedule_ms REAL, p99_e2el_from_schedule_ms_lo REAL, p99_e2el_from_schedule_ms_hi REAL,"
    "knee_load REAL,"
    "knee_output_throughput REAL,"
    "peak_output_throughput REAL,"
    "max_goodput REAL,"
    "max_goodput_load REAL,"
    "slo_boundary_load REAL"
    ");"
    /* the blobs live apart so that scans of run (list, trend) read small rows */
    "CREATE TABLE run_doc (run_id INTEGER PRIMARY KEY REFERENCES run(id), doc BLOB NOT NULL, doc_bytes INTEGER NOT NULL);"
    "CREATE TABLE run_view (run_id INTEGER PRIMARY KEY REFERENCES run(id), view BLOB NOT NULL, view_bytes INTEGER NOT NULL);"
    "CREATE INDEX run_by_config ON run(config_hash, id);"
    "CREATE INDEX run_by_model ON run(model, id);"
    "CREATE INDEX run_by_time ON run(run_time);";

/* The metric columns of schema 1, frozen with it (band: it had _lo and _hi columns). */
static const struct { const char *name; bool band; } v1_metrics[] = {
    {"completed", 0}, {"failed", 0}, {"error_rate", 0}, {"duration", 0}, {METRIC(request_throughput), 1}, {METRIC(output_throughput), 1},
    {METRIC(total_token_throughput), 0}, {METRIC(request_goodput), 0}, {METRIC(max_output_tokens_per_s), 0},
    {METRIC(mean_ttft_ms), 1}, {METRIC(median_ttft_ms), 1}, {METRIC(p90_ttft_ms), 1}, {METRIC(p99_ttft_ms), 1},
    {METRIC(mean_tpot_ms), 1}, {METRIC(median_tpot_ms), 1}, {METRIC(p90_tpot_ms), 1}, {METRIC(p99_tpot_ms), 1},
    {METRIC(mean_itl_ms), 1}, {METRIC(median_itl_ms), 1}, {METRIC(p90_itl_ms), 1}, {METRIC(p99_itl_ms), 1},
    {METRIC(mean_e2el_ms), 1}, {METRIC(median_e2el_ms), 1}, {METRIC(p90_e2el_ms), 1}, {METRIC(p99_e2el_ms), 1},
    {METRIC(p99_ttft_from_schedule_ms), 1}, {METRIC(p99_e2el_from_schedule_ms), 1},
    {METRIC(knee_load), 0}, {METRIC(knee_output_throughput), 0}, {METRIC(peak_output_throughput), 0}, {METRIC(max_goodput), 0},
    {METRIC(max_goodput_load), 0}, {METRIC(slo_boundary_load), 0},
};

/* v2: made for 100,000 runs. Schema 1 read a 1.1 kB row per run for any question (a trend of one
 * metric over 100,000 runs read 110 MB), and a label query parsed JSON per row. Now: every
 * headline metric with its band in run_metric, clustered by (metric, configuration, run), so a
 * trend reads one range of it; labels in run_label, indexed by key and value; each
 * configuration's JSON once in config_def; the run row keeps its identity and the headline values
 * (without bands), and an index (config_hash, id, run_time) covers the comparable-run counts. */
static const char schema_v2_head[] =
    "CREATE TABLE run_label (run_id INTEGER NOT NULL REFERENCES run(id), key TEXT NOT NULL, value TEXT NOT NULL,"
    " PRIMARY KEY (run_id, key)) WITHOUT ROWID;"
    "CREATE INDEX run_label_by_value ON run_label(key, value, run_id);"
    "INSERT INTO run_label (run_id, key, value)"
    " SELECT run.id, j.key, CAST(j.value AS TEXT) FROM run, json_each(run.labels) AS j;"
    /* keyed (metric, configuration, run): the trend of one metric over comparable runs is one
     * range of this table, read in run order, with no lookup elsewhere */
    "CREATE TABLE run_metric (name TEXT NOT NULL, config_hash TEXT NOT NULL, run_id INTEGER NOT NULL REFERENCES run(id),"
    " run_time INTEGER, value REAL NOT NULL, lo REAL, hi REAL, PRIMARY KEY (name, config_hash, run_id)) WITHOUT ROWID;"
    "CREATE TABLE config_def (hash TEXT PRIMARY KEY, json TEXT NOT NULL) WITHOUT ROWID;"
    "INSERT OR IGNORE INTO config_def (hash, json) SELECT config_hash, config FROM run;";

static const char schema_v2_run[] =
    "CREATE TABLE run_v2 ("
    " id INTEGER PRIMARY KEY, recorded_at INTEGER NOT NULL, run_time INTEGER,"
    " kind TEXT NOT NULL, producer TEXT, schema TEXT, tool_version TEXT, command TEXT, host TEXT,"
    " endpoint TEXT, model TEXT, engine TEXT, engine_version TEXT, gpu_type TEXT, gpu_count INTEGER, gpu_driver TEXT,"
    " config_hash TEXT NOT NULL, partial INTEGER NOT NULL DEFAULT 0, source TEXT, doc_hash TEXT NOT NULL UNIQUE";

static const char schema_v2_tail[] =
    "DROP TABLE run;"
    "ALTER TABLE run_v2 RENAME TO run;"
    "CREATE INDEX run_by_config ON run(config_hash, id, run_time);"
    "CREATE INDEX run_by_model ON run(model, id);"
    "CREATE INDEX run_by_time ON run(run_time);";

static int exec_sql(history *h, const char *sql, int to, char *err, size_t errlen);

static int migrate_v2(history *h, char *err, size_t errlen) {
    if (exec_sql(h, schema_v2_head, 2, err, errlen) < 0) return -1;
    size_t n = sizeof v1_metrics / sizeof v1_metrics[0], cap = 16384, used = 0;
    char *sql = malloc(cap);
    if (!sql) { snprintf(err, errlen, "out of memory"); return -1; }
    for (size_t i = 0; i < n; i++) {
        const char *m = v1_metrics[i].name;
        char lo[80] = "NULL", hi[80] = "NULL";
        if (v1_metrics[i].band) { snprintf(lo, sizeof lo, "%s_lo", m); snprintf(hi, sizeof hi, "%s_hi", m); }
        used += (size_t)snprintf(sql + used, cap - used, "INSERT INTO run_metric SELECT '%s', config_hash, id, run_time, %s, %s, %s "
                                 "FROM run WHERE %s IS NOT NULL;", m, m, lo, hi, m);
    }
    used += (size_t)snprintf(sql + used, cap - used, "%s", schema_v2_run);
    for (size_t i = 0; i < n; i++) used += (size_t)snprintf(sql + used, cap - used, ", %s REAL", v1_metrics[i].name);
    used += (size_t)snprintf(sql + used, cap - used, ");INSERT INTO run_v2 SELECT id, recorded_at, run_time, kind, producer, schema, "
                             "tool_version, command, host, endpoint, model, engine, engine_version, gpu_type, gpu_count, gpu_driver, "
                             "config_hash, partial, source, doc_hash");
    for (size_t i = 0; i < n; i++) used += (size_t)snprintf(sql + used, cap - used, ", %s", v1_metrics[i].name);
    snprintf(sql + used, cap - used, " FROM run;%s", schema_v2_tail);
    int rc = exec_sql(h, sql, 2, err, errlen);
    free(sql);
    return rc;
}

static int migrate_v1(history *h, char *err, size_t errlen) { return exec_sql(h, schema_v1, 1, err, errlen); }

const char *const hist_schema_v1 = schema_v1;
static int (*const migrations[HISTORY_SCHEMA_VERSION])(history *, char *, size_t) = { migrate_v1, migrate_v2 };

/* ---- errors ---- */

int hist_sql_err(history *h, int rc, const char *what, char *err, size_t errlen) {
    const char *msg = h && h->db ? sqlite3_errmsg(h->db) : sqlite3_errstr(rc);
    const char *path = h && h->path ? h->path : "history";
    int prim = rc & 0xff;
    const char *hint = "";
    if (prim == SQLITE_BUSY || prim == SQLITE_LOCKED)
        hint = " (another process held the database past the 30 s busy timeout; try again)";
    else if (prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB)
        hint = " (the database is damaged; dsperf leaves it as it is: run `dsperf history check` and restore a backup, "
               "or salvage with `sqlite3 FILE .recover`)";
    else if (prim == SQLITE_FULL) hint = " (the disk is full)";
    else if (prim == SQLITE_READONLY || prim == SQLITE_CANTOPEN || prim == SQLITE_PERM)
        hint = " (check that the file and its directory are writable)";
    snprintf(err, errlen, "%s: %s: %s%s", path, what, msg, hint);
    return -1;
}

int hist_exec(history *h, const char *sql, char *err, size_t errlen) {
    int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);
    return rc == SQLITE_OK ? 0 : hist_sql_err(h, rc, "cannot update", err, errlen);
}

static int exec_sql(history *h, const char *sql, int to, char *err, size_t errlen) {
    int rc = sqlite3_exec(h->db, sql, NULL, NULL, NULL);
    if (rc == SQLITE_OK) return 0;
    char what[64];
    snprintf(what, sizeof what, "migration to history schema %d failed", to);
    return hist_sql_err(h, rc, what, err, errlen);
}

/* One integer from a PRAGMA or query; -1 with err on failure. */
static int pragma_int(history *h, const char *sql, long long *v, char *err, size_t errlen) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return hist_sql_err(h, rc, "cannot read", err, errlen);
    rc = sqlite3_step(st);
    *v = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return hist_sql_err(h, rc, "cannot read", err, errlen);
    return 0;
}

/* ---- integrity ---- */

/* quick_check (O(pages), no index cross-check) or integrity_check; report gets the first lines.
 * 0 ok, 1 damaged, -1 could not run. */
static int check(history *h, const char *pragma, char *report, size_t len) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h->db, pragma, -1, &st, NULL);
    if (rc != SQLITE_OK) {
        int prim = rc & 0xff;
        snprintf(report, len, "%s", sqlite3_errmsg(h->db));
        return prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB ? 1 : -1;
    }
    int damaged = 0;
    size_t used = 0;
    report[0] = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        const char *line = (const char *)sqlite3_column_text(st, 0);
        if (line && !strcmp(line, "ok")) continue;
        damaged = 1;
        if (used + 4 < len) used += (size_t)snprintf(report + used, len - used, "%s%s", used ? "; " : "", line ? line : "?");
    }
    if (rc != SQLITE_DONE) {
        int prim = rc & 0xff;
        if (!damaged) snprintf(report, len, "%s", sqlite3_errmsg(h->db));
        damaged = prim == SQLITE_CORRUPT || prim == SQLITE_NOTADB ? 1 : (damaged ? 1 : -1);
    }
    sqlite3_finalize(st);
    if (used >= len - 4 && len > 8) memcpy(report + len - 4, "...", 4);
    return damaged;
}

int history_integrity(history *h, char *report, size_t len) { return check(h, "PRAGMA integrity_check(20)", report, len); }

/* ---- migrations ---- */

int hist_migrate(history *h, int to, char *err, size_t errlen) {
    if (hist_exec(h, "BEGIN IMMEDIATE", err, errlen) < 0) return -1;
    long long cur;
    /* another process may have migrated while this one waited for the lock */
    if (pragma_int(h, "PRAGMA user_version", &cur, err, errlen) < 0) goto fail;
    for (int v = (int)cur + 1; v <= to; v++)
        if (migrations[v - 1](h, err, errlen) < 0) goto fail;
    if (cur < to) {
        char sql[160];
        snprintf(sql, sizeof sql, "PRAGMA user_version = %d; PRAGMA application_id = %d;", to, HIST_APPLICATION_ID);
        if (hist_exec(h, sql, err, errlen) < 0) goto fail;
        if (cur == 0) {
            char meta[256];
            snprintf(meta, sizeof meta, "INSERT OR IGNORE INTO meta (key, value) VALUES ('created_by', 'dsperf %s');", DSPERF_VERSION);
            if (hist_exec(h, meta, err, errlen) < 0) goto fail;
        }
    }
    if (hist_exec(h, "COMMIT", err, errlen) < 0) goto fail;
    h->version = cur > to ? (int)cur : to;
    return 0;
fail:
    sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
    return -1;
}

/* ---- open ---- */

#define QUICK_CHECK_MAX_BYTES (64LL << 20)

/* What the file is before SQLite opens it: 0 absent or empty, 1 an SQLite file, -1 refused. */
static int sniff(const char *path, history_mode mode, char *err, size_t errlen) {
    struct stat st;
    if (stat(path, &st) != 0) {
        if (errno != ENOENT) { snprintf(err, errlen, "%s: %s", path, strerror(errno)); return -1; }
        if (mode == HISTORY_READ) {
            snprintf(err, errlen, "no history at %s (runs are recorded there with --db %s, or imported with dsperf history import)", path, path);
            return -1;
        }
        return 0;
    }
    if (S_ISDIR(st.st_mode)) { snprintf(err, errlen, "%s is a directory; --db wants the path of a database file", path); return -1; }
    if (st.st_size == 0) return 0;
    FILE *f = fopen(path, "rb");
    char head[16] = {0};
    size_t got = f ? fread(head, 1, sizeof head, f) : 0;
    if (f) fclose(f);
    if (!f) { snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno)); return -1; }
    if (got < sizeof head || memcmp(head, "SQLite format 3", 16) != 0) {
        snprintf(err, errlen, "%s is not an SQLite database, so not a dsperf history; it was left as it is (give --db a new path)", path);
        return -1;
    }
    return 1;
}

static int open_checked(history *h, history_mode mode, int existing, char *err, size_t errlen) {
    long long ver, app, tables;
    if (pragma_int(h, "PRAGMA user_version", &ver, err, errlen) < 0) return -1;
    if (pragma_int(h, "PRAGMA application_id", &app, err, errlen) < 0) return -1;
    if (pragma_int(h, "SELECT count(*) FROM sqlite_schema", &tables, err, errlen) < 0) return -1;
    if (tables > 0 && app != HIST_APPLICATION_ID) {
        snprintf(err, errlen, "%s is an SQLite database but not a dsperf history (no dsperf mark); it was left as it is "
                 "(give --db a new path)", h->path);
        return -1;
    }
    if (ver > HISTORY_SCHEMA_VERSION) {
        snprintf(err, errlen, "%s was written by a newer dsperf (history schema %lld; dsperf %s reads schemas up to %d): "
                 "use that dsperf or a newer one", h->path, ver, DSPERF_VERSION, HISTORY_SCHEMA_VERSION);
        return -1;
    }
    /* quick_check reads every page: on open for a history up to QUICK_CHECK_MAX_BYTES (about 5,000
     * runs), and always before a migration; a larger one relies on SQLite's checks of every page a
     * query reads (SQLITE_CORRUPT becomes the "damaged" line) and on `dsperf history check` */
    struct stat fst;
    bool small = stat(h->path, &fst) == 0 && fst.st_size <= QUICK_CHECK_MAX_BYTES;
    if (existing && (small || ver < HISTORY_SCHEMA_VERSION)) {
        char report[512];
        int c = check(h, "PRAGMA quick_check(3)", report, sizeof report);
        if (c == 1) {
            snprintf(err, errlen, "%s is damaged; dsperf leaves it as it is: restore a backup, or salvage what is readable "
                     "with `sqlite3 %s .recover` (SQLite quick_check: %.200s)", h->path, h->path, report);
            return -1;
        }
        if (c < 0) { snprintf(err, errlen, "%s: cannot check the database: %s", h->path, report); return -1; }
    }
    h->version = (int)ver;
    if (mode == HISTORY_READ && ver == 0) {
        snprintf(err, errlen, "%s holds no history yet (nothing was recorded)", h->path);
        return -1;
    }
    if (mode == HISTORY_READ && ver == HISTORY_SCHEMA_VERSION) return 0;
    if (!h->writable) {
        snprintf(err, errlen, "%s has history schema %lld and is read-only here: dsperf %s must migrate it to schema %d "
                 "(make it writable once)", h->path, ver, DSPERF_VERSION, HISTORY_SCHEMA_VERSION);
        return -1;
    }
    /* WAL: readers never block the writer; with the busy timeout, writers from several processes
     * take turns. FULL: a recorded run survives a power cut, not only a killed process. */
    if (mode == HISTORY_WRITE && hist_exec(h, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;", err, errlen) < 0)
        return -1;
    /* an older schema is migrated on open, reading included: after the check above passed */
    if (ver < HISTORY_SCHEMA_VERSION && hist_migrate(h, HISTORY_SCHEMA_VERSION, err, errlen) < 0) return -1;
    return 0;
}

int history_open(const char *path, history_mode mode, history **out, char *err, size_t errlen) {
    *out = NULL;
    int existing = sniff(path, mode, err, errlen);
    if (existing < 0) return -1;
    history *h = calloc(1, sizeof *h);
    if (!h || !(h->path = strdup(path))) { free(h); snprintf(err, errlen, "out of memory"); return -1; }
    bool rw = mode == HISTORY_WRITE || access(path, W_OK) == 0;
    int flags = rw ? SQLITE_OPEN_READWRITE : SQLITE_OPEN_READONLY;
    if (mode == HISTORY_WRITE) flags |= SQLITE_OPEN_CREATE;
    h->writable = rw;
    int rc = sqlite3_open_v2(path, &h->db, flags, NULL);
    if (rc != SQLITE_OK) {
        hist_sql_err(h, rc, "cannot open", err, errlen);
        history_close(h);
        return -1;
    }
    sqlite3_extended_result_codes(h->db, 1);
    sqlite3_busy_timeout(h->db, HIST_BUSY_TIMEOUT_MS);
    if (open_checked(h, mode, existing, err, errlen) < 0 ||
        (rw && hist_exec(h, "PRAGMA foreign_keys = ON", err, errlen) < 0)) {
        history_close(h);
        return -1;
    }
    *out = h;
    return 0;
}

void history_close(history *h) {
    if (!h) return;
    if (h->db) sqlite3_close_v2(h->db);
    free(h->path);
    free(h);
}

int history_schema_version(history *h) { return h->version; }

int history_prepare(const char *path, char *err, size_t errlen) {
    history *h;
    if (history_open(path, HISTORY_WRITE, &h, err, errlen) < 0) return -1;
    history_close(h);
    return 0;
}
