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

/* The condition "the run has a value for this metric" ('?100' is the metric's name), or NULL when
 * only the documents can tell. */
static const char *has_metric_sql(const char *metric, char *buf, size_t len) {
    if (!metric) return NULL;
    int ci = hist_col_index(metric);
    if (ci >= 0) { snprintf(buf, len, "r.%s IS NOT NULL", hist_cols[ci].name); return buf; }
    snprintf(buf, len, "(NOT EXISTS (SELECT 1 FROM run_metric m WHERE m.name = ?100) OR "
                       "EXISTS (SELECT 1 FROM run_metric m WHERE m.name = ?100 AND m.run_id = r.id))");
    return buf;
}

int hist_comparable_select(history *h, const hist_query *q, const char *has_metric, history_ids *out, char **note,
                           char ref_hash[17], char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    *note = NULL;
    ref_hash[0] = 0;
    sqlite3_stmt *st;
    char cond[256];
    const char *extra = has_metric_sql(has_metric, cond, sizeof cond);
    if (hist_query_prepare(h, q, "r.id, r.config_hash", extra, 0, &st, NULL, err, errlen) < 0) return -1;
    if (extra && strstr(extra, "?100")) sqlite3_bind_text(st, 100, has_metric, -1, SQLITE_STATIC);
    size_t cap = 0, ng = 0, gcap = 8;
    cfg_group *g = malloc(gcap * sizeof *g);
    int64_t *ids = NULL;
    char (*hashes)[17] = NULL;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (out->n == cap) {
            cap = cap ? cap * 2 : 256;
            int64_t *ni = realloc(ids, cap * sizeof *ni);
            char (*nh)[17] = realloc(hashes, cap * sizeof *nh);
            if (ni) ids = ni;
            if (nh) hashes = nh;
            if (!ni || !nh) { rc = SQLITE_NOMEM; break; }
        }
        ids[out->n] = sqlite3_column_int64(st, 0);
        snprintf(hashes[out->n], 17, "%s", (const char *)sqlite3_column_text(st, 1));
        out->n++;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE || !g) {
        free(ids); free(hashes); free(g);
        out->n = 0;
        return hist_sql_err(h, rc == SQLITE_DONE ? SQLITE_NOMEM : rc, "cannot query", err, errlen);
    }
    for (size_t i = 0; i < out->n; i++) {
        size_t k = 0;
        while (k < ng && strcmp(g[k].hash, hashes[i])) k++;
        if (k == ng) {
            if (ng == gcap) { cfg_group *n2 = realloc(g, (gcap *= 2) * sizeof *g); if (!n2) break; g = n2; }
            memcpy(g[ng].hash, hashes[i], 17);
            g[ng].count = 0;
            ng++;
        }
        g[k].example = ids[i];
        g[k].count++;
    }
    if (out->n) memcpy(ref_hash, hashes[out->n - 1], 17);
    if (hist_query_any_config(q) || ng < 2) {
        if (ng >= 2) {
            char *d = differences(h, g, ng);
            if (d && asprintf(note, "the %zu runs span %zu configurations, which differ in: %s", out->n, ng, d) < 0) *note = NULL;
            free(d);
        }
        out->ids = ids;
    } else {
        size_t kept = 0, left = 0;
        for (size_t i = 0; i < out->n; i++) {
            if (!strcmp(hashes[i], ref_hash)) ids[kept++] = ids[i];
            else left++;
        }
        /* the reference first, so the differences read "this run's value, the others'" */
        for (size_t k = 0; k < ng; k++)
            if (!strcmp(g[k].hash, ref_hash) && k) { cfg_group t = g[0]; g[0] = g[k]; g[k] = t; }
        char *d = differences(h, g, ng);
        if (asprintf(note, "%zu matching run%s of %zu other configuration%s left out (add config:any to include them); "
                     "they differ in: %s", left, left == 1 ? "" : "s", ng - 1, ng == 2 ? "" : "s", d ? d : "?") < 0) *note = NULL;
        free(d);
        out->ids = ids;
        out->n = kept;
    }
    free(hashes);
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
