/* list — reading runs back: the list (a table or JSON), one run in full, and a run's stored
 * document or compare view (inflated from its zlib blob). */
#include "history/hist_internal.h"
#include "metrics/metric_table.h"
#include "metrics/summary.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* Identity columns every listing reads, in this order. */
#define ID_COLS "r.id, r.run_time, r.kind, r.producer, r.model, r.endpoint, r.engine, r.engine_version, r.gpu_type, " \
                "r.gpu_count, r.config_hash, r.partial, r.tool_version, r.host, r.source, r.recorded_at"
enum { C_ID, C_TIME, C_KIND, C_PRODUCER, C_MODEL, C_ENDPOINT, C_ENGINE, C_ENGINE_V, C_GPU, C_GPU_N, C_CONFIG, C_PARTIAL,
       C_VERSION, C_HOST, C_SOURCE, C_RECORDED, C_FIRST_METRIC };

static const char *col_text(sqlite3_stmt *st, int i) {
    const unsigned char *t = sqlite3_column_text(st, i);
    return t ? (const char *)t : NULL;
}

static void fmt_time(int64_t t, char *buf, size_t len) {
    if (!t) { snprintf(buf, len, "-"); return; }
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    strftime(buf, len, "%Y-%m-%d %H:%M", &tm);
}

static void fmt_num(double x, char *buf, size_t len) {
    if (!isfinite(x)) snprintf(buf, len, "-");
    else if (fabs(x) >= 1000 || x == floor(x)) snprintf(buf, len, "%.0f", x);
    else if (fabs(x) >= 10) snprintf(buf, len, "%.1f", x);
    else snprintf(buf, len, "%.3g", x);
}

static double col_num(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* The headline columns, as a SELECT list after ID_COLS. */
static char *metric_cols(void) {
    size_t cap = 2048, used = 0;
    char *s = malloc(cap);
    if (!s) return NULL;
    s[0] = 0;
    for (size_t i = 0; i < hist_n_cols; i++) used += (size_t)snprintf(s + used, cap - used, ", r.%s", hist_cols[i]);
    return s;
}

static json_t *jstr(const char *s) { return s ? json_string(s) : json_null(); }
static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *labels_json(const char *text) {
    json_t *o = json_object();
    char *copy = text ? strdup(text) : NULL, *save = NULL;
    for (char *kv = copy ? strtok_r(copy, ",", &save) : NULL; kv; kv = strtok_r(NULL, ",", &save)) {
        while (*kv == ' ') kv++;
        char *eq = strchr(kv, '=');
        if (!eq) continue;
        *eq = 0;
        json_object_set_new(o, kv, json_string(eq + 1));
    }
    free(copy);
    return o;
}

/* One row as JSON: identity, labels, every headline metric the run has (with its band). */
static json_t *row_json(sqlite3_stmt *st, const char *labels) {
    json_t *o = json_object();
    json_object_set_new(o, "id", json_integer(sqlite3_column_int64(st, C_ID)));
    char when[32];
    fmt_time(sqlite3_column_int64(st, C_TIME), when, sizeof when);
    json_object_set_new(o, "date", json_string(when));
    const struct { const char *key; int col; } text[] = {
        {"kind", C_KIND}, {"producer", C_PRODUCER}, {"model", C_MODEL}, {"endpoint", C_ENDPOINT}, {"engine", C_ENGINE},
        {"engine_version", C_ENGINE_V}, {"gpu", C_GPU}, {"config", C_CONFIG}, {"version", C_VERSION}, {"host", C_HOST},
        {"source", C_SOURCE},
    };
    for (size_t i = 0; i < sizeof text / sizeof text[0]; i++) json_object_set_new(o, text[i].key, jstr(col_text(st, text[i].col)));
    json_object_set_new(o, "gpu_count", sqlite3_column_type(st, C_GPU_N) == SQLITE_NULL ? json_null() : json_integer(sqlite3_column_int(st, C_GPU_N)));
    json_object_set_new(o, "partial", json_boolean(sqlite3_column_int(st, C_PARTIAL)));
    json_object_set_new(o, "labels", labels_json(labels));
    json_t *m = json_object();
    for (size_t i = 0; i < hist_n_cols; i++) {
        double v = col_num(st, C_FIRST_METRIC + (int)i);
        if (isfinite(v)) json_object_set_new(m, hist_cols[i], jnum(v));
    }
    json_object_set_new(o, "metrics", m);
    return o;
}

/* The columns a table row shows for its kind. */
static void table_row(FILE *f, sqlite3_stmt *st, bool wide, const char *labels) {
    char when[32], cfg[9];
    fmt_time(sqlite3_column_int64(st, C_TIME), when, sizeof when);
    snprintf(cfg, sizeof cfg, "%.8s", col_text(st, C_CONFIG) ? col_text(st, C_CONFIG) : "");
    const char *kind = col_text(st, C_KIND), *producer = col_text(st, C_PRODUCER), *model = col_text(st, C_MODEL), *engine = col_text(st, C_ENGINE);
    const char *gpu = col_text(st, C_GPU);
    char eng[48];
    snprintf(eng, sizeof eng, "%s%s%s", engine ? engine : "-", col_text(st, C_ENGINE_V) ? " " : "",
             col_text(st, C_ENGINE_V) ? col_text(st, C_ENGINE_V) : "");
    fprintf(f, "%6lld  %-16s %-8.8s %-28.28s %-16.16s %-14.14s %-8s", (long long)sqlite3_column_int64(st, C_ID), when,
            producer ? producer : kind ? kind : "-", model ? model : "-", eng, gpu ? gpu : "-", cfg);
    if (wide) {
        for (size_t k = 0; k < hist_n_cols; k++) {
            char b[32];
            fmt_num(col_num(st, C_FIRST_METRIC + (int)k), b, sizeof b);
            fprintf(f, " %10s", b);
        }
    } else {
        /* the headline in words, so a list that mixes kinds still reads */
        static const struct { const char *metric, *label, *unit; } results_show[] = {
            {METRIC(p99_ttft_ms), "p99 TTFT ", " ms"}, {METRIC(p99_tpot_ms), "TPOT ", " ms"}, {METRIC(output_throughput), "", " tok/s"},
            {"failed", "", " failed"}, {NULL, NULL, NULL},
        }, sweep_show[] = {
            {METRIC(knee_load), "knee ", ""}, {METRIC(max_goodput), "max goodput ", " req/s"}, {METRIC(peak_output_throughput), "peak ", " tok/s"},
            {NULL, NULL, NULL},
        };
        const bool sweep = kind && !strcmp(kind, "sweep");
        char text[160] = "";
        size_t used = 0;
        for (size_t k = 0; (sweep ? sweep_show : results_show)[k].metric; k++) {
            const char *m = (sweep ? sweep_show : results_show)[k].metric;
            int ci = hist_col_index(m);
            double v = ci >= 0 ? col_num(st, C_FIRST_METRIC + ci) : NAN;
            if (!isfinite(v)) continue;
            char b[32];
            fmt_num(v, b, sizeof b);
            used += (size_t)snprintf(text + used, sizeof text - used, "%s%s%s%s", used ? ", " : "",
                                     (sweep ? sweep_show : results_show)[k].label, b, (sweep ? sweep_show : results_show)[k].unit);
            if (used >= sizeof text) break;
        }
        fprintf(f, " %-56.56s", text);
    }
    fprintf(f, "%s  %s\n", sqlite3_column_int(st, C_PARTIAL) ? " (partial)" : "", labels ? labels : "");
}

int history_list(history *h, const char *query, const history_list_opts *o, FILE *f, char *err, size_t errlen) {
    hist_query *q;
    if (hist_query_parse(query, &q, err, errlen) < 0) return -1;
    char *mc = metric_cols();
    char *cols = NULL;
    if (!mc || asprintf(&cols, "%s%s", ID_COLS, mc) < 0) cols = NULL;
    free(mc);
    if (!cols) { hist_query_free(q); snprintf(err, errlen, "out of memory"); return -1; }
    /* the total first, so the table can say how many were left out */
    sqlite3_stmt *st;
    int64_t total = 0;
    int rc = hist_query_prepare(h, q, "count(*)", NULL, NULL, 0, &st, NULL, err, errlen);
    if (rc == 0) {
        rc = sqlite3_step(st);
        total = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
        sqlite3_finalize(st);
        rc = rc == SQLITE_ROW ? 0 : hist_sql_err(h, rc, "cannot query", err, errlen);
    }
    if (hist_query_last(q) && total > hist_query_last(q)) total = hist_query_last(q);
    if (rc == 0) rc = hist_query_prepare(h, q, cols, NULL, NULL, o->limit, &st, NULL, err, errlen);
    free(cols);
    if (rc < 0) { hist_query_free(q); return -1; }
    int64_t shown = 0;
    json_t *arr = o->json ? json_array() : NULL;
    if (!o->json) {
        fprintf(f, "%6s  %-16s %-8s %-28s %-16s %-14s %-8s", "run", "date (UTC)", "what", "model", "engine", "gpu", "config");
        if (o->wide) for (size_t i = 0; i < hist_n_cols; i++) fprintf(f, " %10.10s", hist_cols[i]);
        else fprintf(f, " %-56s", "headline");
        fprintf(f, "  labels\n");
    }
    hist_label_cursor *lc = NULL;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        shown++;
        int64_t id = sqlite3_column_int64(st, C_ID);
        if (!lc) lc = hist_label_cursor_open(h, id);   /* rows come in id order: one scan of the labels */
        const char *labels = hist_label_cursor_get(lc, id);
        if (arr) json_array_append_new(arr, row_json(st, labels));
        else table_row(f, st, o->wide, labels);
    }
    hist_label_cursor_close(lc);
    sqlite3_finalize(st);
    hist_query_free(q);
    if (rc != SQLITE_DONE) { json_decref(arr); return hist_sql_err(h, rc, "cannot query", err, errlen); }
    if (arr) {
        json_dumpf(arr, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        fputc('\n', f);
        json_decref(arr);
    } else {
        if (shown < total) fprintf(f, "(the newest %lld of %lld matching runs; --limit 0 shows all)\n", (long long)shown, (long long)total);
        else fprintf(f, "(%lld run%s)\n", (long long)shown, shown == 1 ? "" : "s");
    }
    return 0;
}

/* ---- blobs ---- */

static char *load_blob(history *h, const char *sql, int64_t id, char *err, size_t errlen) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) { hist_sql_err(h, rc, "cannot read", err, errlen); return NULL; }
    sqlite3_bind_int64(st, 1, id);
    char *text = NULL;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        text = hist_inflate(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0), (size_t)sqlite3_column_int64(st, 1));
        if (!text) snprintf(err, errlen, "%s: run %lld: its stored document does not inflate (damaged)", h->path, (long long)id);
    } else if (rc == SQLITE_DONE) {
        snprintf(err, errlen, "%s has no run %lld (dsperf history list shows the runs)", h->path, (long long)id);
    } else {
        hist_sql_err(h, rc, "cannot read", err, errlen);
    }
    sqlite3_finalize(st);
    return text;
}

static json_t *load_json(history *h, const char *sql, int64_t id, char *err, size_t errlen) {
    char *text = load_blob(h, sql, id, err, errlen);
    if (!text) return NULL;
    json_error_t je;
    json_t *doc = json_loads(text, 0, &je);
    free(text);
    if (!doc) snprintf(err, errlen, "%s: run %lld: its stored document is not JSON (%s)", h->path, (long long)id, je.text);
    return doc;
}

json_t *history_load_doc(history *h, int64_t id, char *err, size_t errlen) {
    return load_json(h, "SELECT doc, doc_bytes FROM run_doc WHERE run_id = ?", id, err, errlen);
}

json_t *hist_load_view(history *h, int64_t id, char *err, size_t errlen) {
    return load_json(h, "SELECT view, view_bytes FROM run_view WHERE run_id = ?", id, err, errlen);
}

/* ---- percentiles from too few samples ---- */

/* "p99_ttft_ms" -> 99 when the name is a request-level percentile (one sample per completed
 * request; pooled ITL has its own count, not recorded here); NaN otherwise. */
static double request_pct_of(const char *name) {
    if (!name || name[0] != 'p' || !(name[1] >= '0' && name[1] <= '9') || strstr(name, "_itl")) return NAN;
    char *end;
    double p = strtod(name + 1, &end);
    return *end == '_' ? p : NAN;
}

static double run_completed(history *h, int64_t id) {
    sqlite3_stmt *st;
    double n = NAN;
    if (sqlite3_prepare_v2(h->db, "SELECT value FROM run_metric WHERE run_id = ? AND name = 'completed'", -1, &st, NULL) != SQLITE_OK)
        return NAN;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) n = col_num(st, 0);
    sqlite3_finalize(st);
    return n;
}

void hist_mark_thin_runs(history *h, const char *metric, json_t *runs) {
    double p = request_pct_of(metric);
    if (isnan(p)) return;
    long need = summary_percentile_samples_needed(p);
    size_t i;
    json_t *r;
    json_array_foreach(runs, i, r) {
        double n = run_completed(h, (int64_t)json_integer_value(json_object_get(r, "id")));
        if (n >= 0 && n < need)
            json_object_set_new(r, "thin", json_pack("{s:I,s:I}", "samples", (json_int_t)n, "samples_needed", (json_int_t)need));
    }
}

/* ---- show ---- */

/* The run's headline metrics from run_metric, in the headline columns' order, then the kind's own. */
static void show_metrics(history *h, int64_t id, FILE *f) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, "SELECT name, value, lo, hi FROM run_metric WHERE run_id = ?", -1, &st, NULL) != SQLITE_OK) return;
    sqlite3_bind_int64(st, 1, id);
    json_t *rows = json_array();
    while (sqlite3_step(st) == SQLITE_ROW)
        json_array_append_new(rows, json_pack("{s:s,s:f,s:o,s:o}", "name", col_text(st, 0), "value", col_num(st, 1),
                                              "lo", jnum(col_num(st, 2)), "hi", jnum(col_num(st, 3))));
    sqlite3_finalize(st);
    fprintf(f, "metrics (95%% band from the run's own samples):\n");
    for (int pass = 0; pass < 2; pass++) {
        size_t i;
        json_t *r;
        json_array_foreach(rows, i, r) {
            const char *name = json_string_value(json_object_get(r, "name"));
            if ((hist_col_index(name) >= 0) != (pass == 0)) continue;
            char b[32], l[32], u[32];
            fmt_num(json_number_value(json_object_get(r, "value")), b, sizeof b);
            fprintf(f, "  %-28s %12s", name, b);
            if (json_is_number(json_object_get(r, "lo")) && json_is_number(json_object_get(r, "hi"))) {
                fmt_num(json_number_value(json_object_get(r, "lo")), l, sizeof l);
                fmt_num(json_number_value(json_object_get(r, "hi")), u, sizeof u);
                fprintf(f, "   [%s, %s]", l, u);
            }
            /* a percentile from fewer requests than it needs is the largest ones relabelled */
            double p = request_pct_of(name), done = run_completed(h, id);
            if (!isnan(p) && done >= 0 && done < summary_percentile_samples_needed(p))
                fprintf(f, "   (from %.0f samples; P%.*s needs %ld)", done, (int)strcspn(name + 1, "_"), name + 1,
                        summary_percentile_samples_needed(p));
            fputc('\n', f);
        }
    }
    json_decref(rows);
}

int history_show(history *h, int64_t id, bool doc, FILE *f, char *err, size_t errlen) {
    if (doc) {
        json_t *d = history_load_doc(h, id, err, errlen);
        if (!d) return -1;
        json_dumpf(d, f, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
        fputc('\n', f);
        json_decref(d);
        return 0;
    }
    const char *sql = "SELECT " ID_COLS ", r.command, r.gpu_driver, (SELECT json FROM config_def WHERE hash = r.config_hash), "
                      "(SELECT doc_bytes FROM run_doc WHERE run_id = r.id), (SELECT length(doc) FROM run_doc WHERE run_id = r.id) "
                      "FROM run r WHERE r.id = ?";
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK) return hist_sql_err(h, rc, "cannot read", err, errlen);
    sqlite3_bind_int64(st, 1, id);
    rc = sqlite3_step(st);
    if (rc != SQLITE_ROW) {
        sqlite3_finalize(st);
        if (rc == SQLITE_DONE) { snprintf(err, errlen, "%s has no run %lld (dsperf history list shows the runs)", h->path, (long long)id); return -1; }
        return hist_sql_err(h, rc, "cannot read", err, errlen);
    }
    int extra = C_FIRST_METRIC;
    char when[32], recorded[32];
    fmt_time(sqlite3_column_int64(st, C_TIME), when, sizeof when);
    fmt_time(sqlite3_column_int64(st, C_RECORDED), recorded, sizeof recorded);
#define T(i) (col_text(st, i) ? col_text(st, i) : "-")
    fprintf(f, "run %lld: %s (%s), %s UTC, recorded %s%s\n", (long long)id, T(C_KIND), T(C_PRODUCER), when, recorded,
            sqlite3_column_int(st, C_PARTIAL) ? " — PARTIAL (interrupted)" : "");
    fprintf(f, "  command      %s\n", T(extra));
    fprintf(f, "  dsperf       %s on %s\n", T(C_VERSION), T(C_HOST));
    fprintf(f, "  endpoint     %s\n  model        %s\n", T(C_ENDPOINT), T(C_MODEL));
    fprintf(f, "  engine       %s %s\n", T(C_ENGINE), col_text(st, C_ENGINE_V) ? col_text(st, C_ENGINE_V) : "");
    fprintf(f, "  gpus         %s", T(C_GPU));
    if (sqlite3_column_type(st, C_GPU_N) != SQLITE_NULL) fprintf(f, " x%d", sqlite3_column_int(st, C_GPU_N));
    if (col_text(st, extra + 1)) fprintf(f, ", driver %s", col_text(st, extra + 1));
    char *labels = hist_labels_text(h, id);
    fprintf(f, "\n  labels       %s\n", labels && *labels ? labels : "(none)");
    free(labels);
    if (col_text(st, C_SOURCE)) fprintf(f, "  imported     %s\n", col_text(st, C_SOURCE));
    fprintf(f, "  config       %s  %s\n", T(C_CONFIG), T(extra + 2));
    fprintf(f, "  document     %lld bytes (%lld stored)\n", (long long)sqlite3_column_int64(st, extra + 3),
            (long long)sqlite3_column_int64(st, extra + 4));
#undef T
    sqlite3_finalize(st);
    show_metrics(h, id, f);
    return 0;
}
