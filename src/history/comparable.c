/* comparable — "comparable" made explicit: two runs are comparable when their configuration hash
 * is the same (same kind, model, dataset shape, load plan and SLO). A query normally keeps the
 * runs of the most recent match's configuration and says what it left out; config:any keeps
 * them all and lists what their configurations differ in. */
#include "history/hist_internal.h"
#include <stdlib.h>
#include <string.h>

typedef struct { char hash[17]; int64_t example; size_t count; } cfg_group;

/* The differing keys among the groups' configurations, rendered "key (a, b); key2 (c, d)". */
static char *differences(history *h, const cfg_group *g, size_t ng) {
    if (ng < 2) return NULL;
    json_t **cfg = calloc(ng, sizeof *cfg);
    if (!cfg) return NULL;
    json_t *keys = json_object();
    for (size_t i = 0; i < ng; i++) {
        char *text = hist_config_of(h, g[i].example);
        cfg[i] = text ? json_loads(text, 0, NULL) : NULL;
        free(text);
        const char *k;
        json_t *v;
        json_object_foreach(cfg[i], k, v) json_object_set_new(keys, k, json_true());
    }
    size_t cap = 1024, used = 0;
    char *out = malloc(cap);
    if (out) out[0] = 0;
    const char *k;
    json_t *unused;
    json_object_foreach(keys, k, unused) {
        bool same = true;
        for (size_t i = 1; i < ng && same; i++) {
            json_t *a = json_object_get(cfg[0], k), *b = json_object_get(cfg[i], k);
            same = (!a && !b) || (a && b && json_equal(a, b));
        }
        if (same || !out) continue;
        char part[512];
        size_t pl = (size_t)snprintf(part, sizeof part, "%s%s (", used ? "; " : "", k);
        for (size_t i = 0; i < ng && i < 6 && pl < sizeof part; i++) {
            json_t *v = json_object_get(cfg[i], k);
            char *s = v ? (json_is_string(v) ? strdup(json_string_value(v)) : json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT)) : strdup("none");
            pl += (size_t)snprintf(part + pl, sizeof part - pl, "%s%s", i ? ", " : "", s ? s : "?");
            free(s);
        }
        if (pl < sizeof part) snprintf(part + pl, sizeof part - pl, "%s)", ng > 6 ? ", ..." : "");
        size_t need = used + strlen(part) + 1;
        if (need > cap) {
            char *n2 = realloc(out, need * 2);
            if (!n2) break;
            out = n2;
            cap = need * 2;
        }
        memcpy(out + used, part, strlen(part) + 1);
        used += strlen(part);
    }
    for (size_t i = 0; i < ng; i++) json_decref(cfg[i]);
    free(cfg);
    json_decref(keys);
    if (out && !used) { free(out); out = NULL; }
    return out;
}

bool hist_metric_stored(history *h, const char *metric) {
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(h->db, "SELECT 1 FROM run_metric WHERE name = ? LIMIT 1", -1, &st, NULL) == SQLITE_OK) {
        sqlite3_bind_text(st, 1, metric, -1, SQLITE_STATIC);
        found = sqlite3_step(st) == SQLITE_ROW;
        sqlite3_finalize(st);
    }
    return found;
}

int hist_comparable_select(history *h, const hist_query *q, const char *has_metric, size_t *n_comparable, char **note,
                           char ref_hash[17], char *err, size_t errlen) {
    *n_comparable = 0;
    *note = NULL;
    ref_hash[0] = 0;
    /* the reference: the newest match (that has the metric, when runs store it) */
    const char *extra = has_metric && hist_metric_stored(h, has_metric)
                      ? "EXISTS (SELECT 1 FROM run_metric m WHERE m.name = ?100 AND m.config_hash = r.config_hash AND m.run_id = r.id)"
                      : NULL;
    sqlite3_stmt *st;
    if (hist_query_prepare(h, q, "r.id, r.config_hash", NULL, extra, 1, &st, NULL, err, errlen) < 0) return -1;
    if (extra) sqlite3_bind_text(st, 100, has_metric, -1, SQLITE_STATIC);
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) snprintf(ref_hash, 17, "%s", (const char *)sqlite3_column_text(st, 1));
    sqlite3_finalize(st);
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) return hist_sql_err(h, rc, "cannot query", err, errlen);
    if (rc == SQLITE_DONE) return 0;
    /* every configuration among the matches, with its count (the index on config_hash covers it) */
    if (hist_prepare_in(h, q, "SELECT r.config_hash, count(*), max(r.id) FROM run r", "r.id", "GROUP BY r.config_hash", &st, err,
                        errlen) < 0) return -1;
    size_t ng = 0, gcap = 16, total = 0;
    cfg_group *g = malloc(gcap * sizeof *g);
    while (g && (rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (ng == gcap) { cfg_group *n2 = realloc(g, (gcap *= 2) * sizeof *g); if (!n2) break; g = n2; }
        snprintf(g[ng].hash, 17, "%s", (const char *)sqlite3_column_text(st, 0));
        g[ng].count = (size_t)sqlite3_column_int64(st, 1);
        g[ng].example = sqlite3_column_int64(st, 2);
        total += g[ng].count;
        /* the reference first, so the differences read "this configuration's value, the others'" */
        if (!strcmp(g[ng].hash, ref_hash) && ng) { cfg_group t = g[0]; g[0] = g[ng]; g[ng] = t; }
        ng++;
    }
    sqlite3_finalize(st);
    if (!g || rc != SQLITE_DONE) { free(g); return hist_sql_err(h, g ? rc : SQLITE_NOMEM, "cannot query", err, errlen); }
    char *d = differences(h, g, ng);
    if (hist_query_any_config(q)) {
        *n_comparable = total;
        if (ng >= 2 && asprintf(note, "the %zu runs span %zu configurations, which differ in: %s", total, ng, d ? d : "?") < 0) *note = NULL;
    } else {
        *n_comparable = ng ? g[0].count : 0;
        size_t left = total - *n_comparable;
        if (ng >= 2 && asprintf(note, "%zu matching run%s of %zu other configuration%s left out (add config:any to include them); "
                                "they differ in: %s", left, left == 1 ? "" : "s", ng - 1, ng == 2 ? "" : "s", d ? d : "?") < 0) *note = NULL;
    }
    free(d);
    free(g);
    return 0;
}

char *hist_config_differences(history *h, const int64_t *ids, size_t n) {
    cfg_group *g = calloc(n ? n : 1, sizeof *g);
    if (!g) return NULL;
    size_t ng = 0;
    for (size_t i = 0; i < n; i++) {
        char *hash = hist_config_hash_of(h, ids[i]);
        if (!hash) continue;
        size_t k = 0;
        while (k < ng && strcmp(g[k].hash, hash)) k++;
        if (k == ng) { snprintf(g[ng].hash, 17, "%s", hash); g[ng].example = ids[i]; ng++; }
        free(hash);
    }
    char *d = differences(h, g, ng);
    free(g);
    return d;
}
