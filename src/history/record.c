/* record — a document into the history: its kind (what it is and which of its numbers are the
 * headline), its identity (command, version, endpoint, model, engine, GPUs, host, when), the
 * configuration that makes runs comparable and its hash, the headline metrics with the noise band
 * of each from the run's own samples, the labels, the compare view and the whole document
 * compressed — all in one IMMEDIATE transaction, so a process killed mid-write leaves either the
 * whole run or nothing. */
#include "history/hist_internal.h"
#include "metrics/metric_table.h"
#include "common/redact.h"
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* ---- kinds ---- */

static double results_value(const json_t *doc, const char *name) {
    if (!strcmp(name, "error_rate")) {
        double f = json_number_value(json_object_get(doc, "failed")), c = json_number_value(json_object_get(doc, "completed"));
        if (!json_is_number(json_object_get(doc, "failed")) || !(f + c > 0)) return NAN;
        return f / (f + c);
    }
    const json_t *v = json_object_get(doc, name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double sweep_value(const json_t *doc, const char *name) { return compare_sweep_headline(doc, name); }

static const history_metric_def results_metrics[] = {
    {"completed", "completed", 0}, {"failed", "failed", 0}, {"error_rate", NULL, 0}, {"duration", "duration", 0},
    {METRIC(request_throughput), METRIC(request_throughput), 0}, {METRIC(output_throughput), METRIC(output_throughput), 0},
    {METRIC(total_token_throughput), METRIC(total_token_throughput), 0}, {METRIC(request_goodput), METRIC(request_goodput), 0},
    {METRIC(max_output_tokens_per_s), METRIC(max_output_tokens_per_s), 0},
    {METRIC(mean_ttft_ms), NULL, 0}, {METRIC(median_ttft_ms), NULL, 0}, {METRIC(p90_ttft_ms), NULL, 0}, {METRIC(p99_ttft_ms), NULL, 0},
    {METRIC(mean_tpot_ms), NULL, 0}, {METRIC(median_tpot_ms), NULL, 0}, {METRIC(p90_tpot_ms), NULL, 0}, {METRIC(p99_tpot_ms), NULL, 0},
    {METRIC(mean_itl_ms), NULL, 0}, {METRIC(median_itl_ms), NULL, 0}, {METRIC(p90_itl_ms), NULL, 0}, {METRIC(p99_itl_ms), NULL, 0},
    {METRIC(mean_e2el_ms), NULL, 0}, {METRIC(median_e2el_ms), NULL, 0}, {METRIC(p90_e2el_ms), NULL, 0}, {METRIC(p99_e2el_ms), NULL, 0},
    {METRIC(p99_ttft_from_schedule_ms), NULL, 0}, {METRIC(p99_e2el_from_schedule_ms), NULL, 0},
    /* reasoning models, the server's side, speculative decoding (metrics/phases.h, accept.h):
     * absent from a run without them, so not recorded for it */
    {METRIC(mean_ttfa_ms), NULL, 0}, {METRIC(median_ttfa_ms), NULL, 0}, {METRIC(p99_ttfa_ms), NULL, 0},
    {METRIC(ttft_outside_server_share), "server_timing.ttft_outside_server_share", -1},
    {METRIC(spec_acceptance_length), "spec_decode.mean_acceptance_length", +1},
    {NULL, NULL, 0},
};

/* what a load run's workload is: the same model, dataset shape and load plan (and SLO, which
 * goodput depends on; a replayed trace's block size, time scale and window); not the URL, the
 * seed, the timeout or the tokenizer file's path */
static const char *const results_keys[] = {
    "api", "model", "load", "concurrency", "rate_per_s", "arrival", "ramp_from_per_s", "ramp_s", "max_concurrency",
    "requests", "duration_s", "warmup", "think_s", "dataset", "length_unit", "ignore_eos", "classes", "trace", NULL,
};

static const history_metric_def sweep_metrics[] = {
    {METRIC(knee_load), NULL, 0}, {METRIC(knee_output_throughput), NULL, 0}, {METRIC(peak_output_throughput), NULL, 0},
    {METRIC(max_goodput), NULL, 0}, {METRIC(max_goodput_load), NULL, 0}, {METRIC(slo_boundary_load), NULL, 0}, {NULL, NULL, 0},
};

static const char *const sweep_keys[] = {
    "api", "model", "load", "mode", "ladder", "repeats", "early_stop", "osd_window_s", "slo_percentile", "auto_levels",
    "auto_max_concurrency", "slo", "arrival", "max_concurrency", "requests", "duration_s", "warmup", "think_s",
    "dataset", "length_unit", "ignore_eos", "classes", "trace", NULL,
};

static const history_metric_def tune_metrics[] = {
    {"recommended_goodput_per_gpu", "recommendation.score", 0}, {"recommended_load", "recommendation.load", 0},
    {"configurations", NULL, 0}, {NULL, NULL, 0},
};

static double tune_value(const json_t *doc, const char *name) {
    if (!strcmp(name, "configurations")) {
        const json_t *c = json_object_get(doc, "configs");
        return json_is_array(c) ? (double)json_array_size(c) : NAN;
    }
    return NAN;
}

static const history_kind builtin[] = {
    {.kind = "results", .schema_prefix = "dsperf.results/", .metrics = results_metrics, .config_keys = results_keys,
     .value = results_value},
    {.kind = "sweep", .schema_prefix = "dsperf.sweep/", .metrics = sweep_metrics, .config_keys = sweep_keys, .value = sweep_value},
    {.kind = "tune", .schema_prefix = "dsperf.tune/", .metrics = tune_metrics, .value = tune_value},
};

#define MAX_KINDS 16
static const history_kind *kinds[MAX_KINDS] = { &builtin[0], &builtin[1], &builtin[2] };
static int n_kinds = 3;

int history_register_kind(const history_kind *k) {
    if (n_kinds == MAX_KINDS || !k || !k->kind || !k->schema_prefix) return -1;
    for (int i = 0; i < n_kinds; i++)
        if (!strcmp(kinds[i]->schema_prefix, k->schema_prefix)) return -1;
    kinds[n_kinds++] = k;
    return 0;
}

const history_kind *history_kind_of(const json_t *doc) {
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    for (int i = 0; schema && i < n_kinds; i++)
        if (!strncmp(schema, kinds[i]->schema_prefix, strlen(kinds[i]->schema_prefix))) return kinds[i];
    return NULL;
}

int history_metric_direction(const char *metric) {
    for (int i = 0; i < n_kinds; i++)
        for (const history_metric_def *m = kinds[i]->metrics; m->name; m++)
            if (m->direction && !strcmp(m->name, metric)) return m->direction;
    return compare_metric_direction(metric);
}

/* "a.b.c" through objects. */
static const json_t *at_path(const json_t *doc, const char *path) {
    char key[128];
    const json_t *cur = doc;
    while (cur && *path) {
        const char *dot = strchr(path, '.');
        size_t len = dot ? (size_t)(dot - path) : strlen(path);
        if (len >= sizeof key) return NULL;
        memcpy(key, path, len);
        key[len] = 0;
        cur = json_object_get(cur, key);
        path += len + (dot ? 1 : 0);
    }
    return cur;
}

static double metric_value(const history_kind *k, const history_metric_def *m, const json_t *doc) {
    if (m->path) {
        const json_t *v = at_path(doc, m->path);
        return json_is_number(v) ? json_number_value(v) : NAN;
    }
    return k->value ? k->value(doc, m->name) : NAN;
}

/* ---- the row ---- */

typedef struct {
    const history_kind *kind;
    const json_t *doc, *first;    /* first: the results the identity comes from (a sweep's first level) */
    const char *producer, *endpoint, *model, *engine, *engine_version, *gpu_driver, *command, *version;
    char gpu_type[160];
    int gpu_count;
    int64_t run_time;
    char *config;                 /* canonical JSON of the comparable configuration */
    char config_hash[17], doc_hash[17];
} hist_row;

static const char *str_at(const json_t *doc, const char *path) { return json_string_value(at_path(doc, path)); }

static int64_t parse_date(const char *s) {
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!s || !strptime(s, "%Y-%m-%dT%H:%M:%S", &tm)) return 0;
    return (int64_t)timegm(&tm);
}

/* The GPUs: telemetry's NVML names (a mix is listed), else the simulated deployment. */
static void gpus_of(hist_row *r) {
    const json_t *gpu = at_path(r->first, "telemetry.gpu");
    r->gpu_count = -1;
    size_t i;
    json_t *g;
    json_array_foreach(gpu, i, g) {
        const char *name = json_string_value(json_object_get(g, "name"));
        if (name && !strstr(r->gpu_type, name))
            snprintf(r->gpu_type + strlen(r->gpu_type), sizeof r->gpu_type - strlen(r->gpu_type), "%s%s",
                     r->gpu_type[0] ? ", " : "", name);
        r->gpu_count = (int)i + 1;
    }
    r->gpu_driver = str_at(r->first, "telemetry.driver_version");
    const json_t *dg = at_path(r->first, "deployment.gpu"), *dn = at_path(r->first, "deployment.n_gpus");
    if (!r->gpu_type[0] && json_is_string(json_object_get(dg, "value")) && !json_is_true(json_object_get(dg, "assumed"))) {
        snprintf(r->gpu_type, sizeof r->gpu_type, "%s", json_string_value(json_object_get(dg, "value")));
        if (json_is_integer(json_object_get(dn, "value")) && !json_is_true(json_object_get(dn, "assumed")))
            r->gpu_count = (int)json_integer_value(json_object_get(dn, "value"));
    }
    const json_t *sim = at_path(r->first, "config.sim");
    if (!r->gpu_type[0] && json_is_object(sim) && json_string_value(json_object_get(sim, "gpu"))) {
        snprintf(r->gpu_type, sizeof r->gpu_type, "%s (simulated)", json_string_value(json_object_get(sim, "gpu")));
        const json_t *n = json_object_get(sim, "gpus");
        if (!json_is_integer(n)) n = json_object_get(sim, "tp");
        r->gpu_count = json_is_integer(n) ? (int)json_integer_value(n) : -1;
    }
}

/* The configuration that decides comparability: the kind, its keys of the document's config, and
 * for load runs the goodput SLO. */
static json_t *comparable_config(const history_kind *k, const json_t *doc) {
    const json_t *cfg = json_object_get(doc, "config");
    json_t *c = json_object();
    json_object_set_new(c, "kind", json_string(k->kind));
    if (k->config_keys) {
        for (const char *const *key = k->config_keys; *key; key++) {
            const json_t *v = strchr(*key, '.') ? at_path(doc, *key) : json_object_get(cfg, *key);
            if (v && !json_is_null(v)) json_object_set(c, *key, (json_t *)v);
        }
    } else if (json_is_object(cfg)) {
        static const char *const volatile_keys[] = {"url", "seed", "timeout_s", "dataset_size", "dataset_lengths",
                                                    "tokenizer", "include_usage", "token_counter", NULL};
        json_object_update(c, (json_t *)cfg);
        for (const char *const *key = volatile_keys; *key; key++) json_object_del(c, *key);
        json_object_set_new(c, "kind", json_string(k->kind));
    }
    const json_t *slo = json_object_get(doc, "goodput_slo");
    if (json_is_object(slo) && !json_object_get(c, "slo")) json_object_set(c, "slo", (json_t *)slo);
    return c;
}

static int fill_row(hist_row *r, const json_t *doc, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    r->kind = history_kind_of(doc);
    if (!r->kind) {
        const char *schema = json_string_value(json_object_get(doc, "schema"));
        snprintf(err, errlen, "cannot record a document with schema \"%s\" (dsperf records results, sweep, tune and drift documents)",
                 schema ? schema : "missing");
        return -1;
    }
    r->doc = doc;
    r->first = doc;
    const json_t *lv0 = json_object_get(json_array_get(json_object_get(doc, "levels"), 0), "results");
    if (json_is_object(lv0)) r->first = lv0;
    r->producer = json_string_value(json_object_get(doc, "producer"));
    if (!r->producer) r->producer = r->kind->kind;
    const history_kind *k = r->kind;
    r->endpoint = str_at(doc, k->endpoint_path ? k->endpoint_path : "config.url");
    r->command = str_at(doc, k->command_path ? k->command_path : "command_line");
    r->version = str_at(doc, k->version_path ? k->version_path : "version");
    r->model = k->model_path ? str_at(doc, k->model_path) : str_at(r->first, "server.model_id");
    if (!r->model) r->model = str_at(doc, "config.model");
    if (!r->model) r->model = str_at(r->first, "config.model");
    r->engine = str_at(r->first, "server.engine");
    r->engine_version = str_at(r->first, "server.engine_version");
    if (!r->engine && json_is_object(at_path(r->first, "config.sim"))) {
        r->engine = "dsperf-sim";
        r->engine_version = str_at(doc, "version");
    }
    if (!r->engine) {   /* what deployment resolution stated (not an assumption) */
        const json_t *e = at_path(r->first, "deployment.engine");
        if (json_is_string(json_object_get(e, "value")) && !json_is_true(json_object_get(e, "assumed")))
            r->engine = json_string_value(json_object_get(e, "value"));
    }
    if (!r->engine) {   /* the metric names the scrape recognised (vllm:, sglang:, tgi_, llamacpp:) */
        const char *src = str_at(r->first, "telemetry.server.source");
        if (src && strcmp(src, "unknown")) r->engine = src;
    }
    gpus_of(r);
    const json_t *when = at_path(doc, k->time_path ? k->time_path : "date");
    r->run_time = json_is_number(when) ? (int64_t)json_number_value(when) : parse_date(json_string_value(when));
    if (!r->run_time) r->run_time = parse_date(str_at(r->first, "date"));
    if (!r->run_time) r->run_time = (int64_t)time(NULL);   /* a document without a date: when it was recorded */
    json_t *cfg = comparable_config(r->kind, doc);
    r->config = hist_canonical(cfg);
    json_decref(cfg);
    char *text = hist_canonical(doc);
    if (!r->config || !text) { free(r->config); free(text); snprintf(err, errlen, "out of memory"); return -1; }
    hist_hash_hex(r->config, strlen(r->config), r->config_hash);
    hist_hash_hex(text, strlen(text), r->doc_hash);
    free(text);
    return 0;
}

/* ---- labels ---- */

int history_check_label(const char *kv, char *err, size_t errlen) {
    const char *eq = strchr(kv, '=');
    if (!eq || eq == kv) {
        snprintf(err, errlen, "bad --label '%s': use key=value, e.g. --label release=v0.9.1", kv);
        return -1;
    }
    for (const char *c = kv; c < eq; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.' && *c != '-') {
            snprintf(err, errlen, "bad --label '%s': a key holds letters, digits, '_', '.' and '-'", kv);
            return -1;
        }
    if (eq - kv > 64 || strlen(eq + 1) > 200) {
        snprintf(err, errlen, "bad --label '%.80s': keys up to 64 bytes, values up to 200", kv);
        return -1;
    }
    for (const char *c = eq + 1; *c; c++)
        if ((unsigned char)*c < 0x20) {
            snprintf(err, errlen, "bad --label '%.80s': the value has a control character", kv);
            return -1;
        }
    return 0;
}

/* ---- insert ---- */

static int bind_text(sqlite3_stmt *st, int i, const char *s) {
    return s ? sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT) : sqlite3_bind_null(st, i);
}

static int bind_real(sqlite3_stmt *st, int i, double x) {
    return isfinite(x) ? sqlite3_bind_double(st, i, x) : sqlite3_bind_null(st, i);
}

/* The INSERT of a run: identity columns then every headline column. */
static char *insert_sql(void) {
    size_t cap = 4096, used = 0;
    char *sql = malloc(cap), *vals = malloc(cap);
    if (!sql || !vals) { free(sql); free(vals); return NULL; }
    used = (size_t)snprintf(sql, cap, "INSERT INTO run (recorded_at, run_time, kind, producer, schema, tool_version, command, "
                            "host, endpoint, model, engine, engine_version, gpu_type, gpu_count, gpu_driver, config_hash, "
                            "partial, source, doc_hash");
    size_t vu = (size_t)snprintf(vals, cap, "?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?");
    for (size_t i = 0; i < hist_n_cols; i++) {
        used += (size_t)snprintf(sql + used, cap - used, ", %s", hist_cols[i]);
        vu += (size_t)snprintf(vals + vu, cap - vu, ", ?");
    }
    snprintf(sql + used, cap - used, ") VALUES (%s)", vals);
    free(vals);
    return sql;
}

static int insert_run(history *h, const hist_row *r, const history_record_opts *o, int64_t *id, char *err, size_t errlen) {
    char *sql = insert_sql();
    if (!sql) { snprintf(err, errlen, "out of memory"); return -1; }
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    free(sql);
    if (rc != SQLITE_OK) return hist_sql_err(h, rc, "cannot record", err, errlen);
    const json_t *d = r->doc;
    int i = 1;
    sqlite3_bind_int64(st, i++, (sqlite3_int64)time(NULL));
    if (r->run_time) sqlite3_bind_int64(st, i++, r->run_time); else sqlite3_bind_null(st, i++);
    bind_text(st, i++, r->kind->kind);
    bind_text(st, i++, r->producer);
    bind_text(st, i++, json_string_value(json_object_get(d, "schema")));
    bind_text(st, i++, r->version);
    bind_text(st, i++, r->command);
    bind_text(st, i++, str_at(r->first, "environment.hostname"));
    bind_text(st, i++, r->endpoint);
    bind_text(st, i++, r->model);
    bind_text(st, i++, r->engine);
    bind_text(st, i++, r->engine_version);
    bind_text(st, i++, r->gpu_type[0] ? r->gpu_type : NULL);
    if (r->gpu_count > 0) sqlite3_bind_int(st, i++, r->gpu_count); else sqlite3_bind_null(st, i++);
    bind_text(st, i++, r->gpu_driver);
    bind_text(st, i++, r->config_hash);
    sqlite3_bind_int(st, i++, json_is_true(json_object_get(d, "partial")));
    bind_text(st, i++, o ? o->source : NULL);
    bind_text(st, i++, r->doc_hash);
    for (size_t c = 0; c < hist_n_cols; c++) {
        double v = NAN;
        for (const history_metric_def *m = r->kind->metrics; m->name; m++)
            if (!strcmp(m->name, hist_cols[c])) { v = metric_value(r->kind, m, d); break; }
        bind_real(st, i++, v);
    }
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return hist_sql_err(h, rc, "cannot record", err, errlen);
    *id = sqlite3_last_insert_rowid(h->db);
    /* the configuration's JSON once per hash */
    if (sqlite3_prepare_v2(h->db, "INSERT OR IGNORE INTO config_def (hash, json) VALUES (?, ?)", -1, &st, NULL) != SQLITE_OK)
        return hist_sql_err(h, sqlite3_errcode(h->db), "cannot record", err, errlen);
    bind_text(st, 1, r->config_hash);
    bind_text(st, 2, r->config);
    rc = sqlite3_step(st);
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? 0 : hist_sql_err(h, rc, "cannot record", err, errlen);
}

/* Every headline metric of the kind with its noise band from the run's own samples. */
static int insert_metrics(history *h, const hist_row *r, int64_t id, char *err, size_t errlen) {
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h->db, "INSERT INTO run_metric (name, config_hash, run_id, run_time, value, lo, hi) "
                                "VALUES (?, ?, ?, ?, ?, ?, ?)", -1, &st, NULL);
    if (rc != SQLITE_OK) return hist_sql_err(h, rc, "cannot record", err, errlen);
    for (const history_metric_def *m = r->kind->metrics; m->name; m++) {
        double v = metric_value(r->kind, m, r->doc), lo = NAN, hi = NAN;
        if (!isfinite(v)) continue;
        if (r->kind->band) r->kind->band(r->doc, m->name, &lo, &hi);
        else hist_band(r->doc, m->name, &lo, &hi);
        sqlite3_reset(st);
        bind_text(st, 1, m->name);
        bind_text(st, 2, r->config_hash);
        sqlite3_bind_int64(st, 3, id);
        sqlite3_bind_int64(st, 4, r->run_time);
        bind_real(st, 5, v);
        bind_real(st, 6, lo);
        bind_real(st, 7, hi);
        if ((rc = sqlite3_step(st)) != SQLITE_DONE) { sqlite3_finalize(st); return hist_sql_err(h, rc, "cannot record", err, errlen); }
    }
    sqlite3_finalize(st);
    return 0;
}

static int insert_labels(history *h, int64_t id, const history_record_opts *o, char *err, size_t errlen) {
    if (!o || !o->n_labels) return 0;
    sqlite3_stmt *st;
    /* a key given twice keeps the last value, as repeated flags do */
    int rc = sqlite3_prepare_v2(h->db, "INSERT OR REPLACE INTO run_label (run_id, key, value) VALUES (?, ?, ?)", -1, &st, NULL);
    if (rc != SQLITE_OK) return hist_sql_err(h, rc, "cannot record", err, errlen);
    for (int i = 0; i < o->n_labels; i++) {
        const char *eq = strchr(o->labels[i], '=');
        sqlite3_reset(st);
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_text(st, 2, o->labels[i], (int)(eq - o->labels[i]), SQLITE_TRANSIENT);
        sqlite3_bind_text(st, 3, eq + 1, -1, SQLITE_TRANSIENT);
        if ((rc = sqlite3_step(st)) != SQLITE_DONE) { sqlite3_finalize(st); return hist_sql_err(h, rc, "cannot record", err, errlen); }
    }
    sqlite3_finalize(st);
    return 0;
}

/* A compressed blob into run_doc or run_view. */
static int insert_blob(history *h, const char *sql, int64_t id, const json_t *v, char *err, size_t errlen) {
    char *text = json_dumps(v, JSON_COMPACT | JSON_REAL_PRECISION(17));
    unsigned char *z = NULL;
    size_t zlen = 0, len = text ? strlen(text) : 0;
    if (!text || hist_deflate(text, len, &z, &zlen) < 0) { free(text); snprintf(err, errlen, "out of memory"); return -1; }
    free(text);
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(h->db, sql, -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, id);
        sqlite3_bind_blob(st, 2, z, (int)zlen, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 3, (sqlite3_int64)len);
        rc = sqlite3_step(st);
        sqlite3_finalize(st);
    }
    free(z);
    return rc == SQLITE_DONE || rc == SQLITE_OK ? 0 : hist_sql_err(h, rc, "cannot record", err, errlen);
}

static int existing_run(history *h, const char *doc_hash, int64_t *id) {
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(h->db, "SELECT id FROM run WHERE doc_hash = ?", -1, &st, NULL) != SQLITE_OK) return 0;
    sqlite3_bind_text(st, 1, doc_hash, -1, SQLITE_STATIC);
    int found = sqlite3_step(st) == SQLITE_ROW;
    if (found) *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return found;
}

int history_record(history *h, const json_t *doc, const history_record_opts *o, int64_t *run_id, bool *existed,
                   char *err, size_t errlen) {
    *run_id = 0;
    if (existed) *existed = false;
    for (int i = 0; o && i < o->n_labels; i++)
        if (history_check_label(o->labels[i], err, errlen) < 0) return -1;
    /* credentials never reach the database: every string of the document goes through redact
     * (a no-op for what dsperf wrote itself, which is redacted already; an imported file or an
     * older dsperf's may hold a key in a URL or a command line) */
    json_t *safe = json_deep_copy(doc);
    if (!safe) { snprintf(err, errlen, "out of memory"); return -1; }
    redact_json_tree(safe);
    doc = safe;
    hist_row r;
    if (fill_row(&r, doc, err, errlen) < 0) { json_decref(safe); return -1; }
    json_t *view = hist_compare_view(doc);
    int rc = -1;
    if (!view) { snprintf(err, errlen, "out of memory"); goto out; }
    if (hist_exec(h, "BEGIN IMMEDIATE", err, errlen) < 0) goto out;
    if (existing_run(h, r.doc_hash, run_id)) {
        if (existed) *existed = true;
        rc = hist_exec(h, "COMMIT", err, errlen);
        goto out;
    }
    if (insert_run(h, &r, o, run_id, err, errlen) < 0 || insert_metrics(h, &r, *run_id, err, errlen) < 0 ||
        insert_labels(h, *run_id, o, err, errlen) < 0 ||
        insert_blob(h, "INSERT INTO run_view (run_id, view, view_bytes) VALUES (?, ?, ?)", *run_id, view, err, errlen) < 0 ||
        insert_blob(h, "INSERT INTO run_doc (run_id, doc, doc_bytes) VALUES (?, ?, ?)", *run_id, doc, err, errlen) < 0 ||
        hist_exec(h, "COMMIT", err, errlen) < 0) {
        sqlite3_exec(h->db, "ROLLBACK", NULL, NULL, NULL);
        *run_id = 0;
        goto out;
    }
    rc = 0;
out:
    json_decref(view);
    json_decref(safe);
    free(r.config);
    return rc;
}

int history_record_to(const char *path, const json_t *doc, const history_record_opts *o, int64_t *run_id, char *err,
                      size_t errlen) {
    history *h;
    if (history_open(path, HISTORY_WRITE, &h, err, errlen) < 0) return -1;
    int rc = history_record(h, doc, o, run_id, NULL, err, errlen);
    history_close(h);
    return rc;
}
