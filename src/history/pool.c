/* pool — several runs of one configuration as one results document, so that compare's own
 * statistics (bootstrap intervals of the change, Mann–Whitney, gate rules) apply to "the last
 * five runs" as they apply to one file; and the noise band of a single run from its own samples.
 *
 * Pooling puts the runs' requests together: each latency family's samples are concatenated (a
 * run stored as 2,000 quantiles weighs as 2,000 requests, so long runs weigh alike), and the
 * family statistics a gate reads (mean_ttft_ms, p99_ttft_ms, ...) are recomputed over the pooled
 * samples by the same function compare's bootstrap uses. Throughput intervals come from the
 * per-second timeline: the pooled timeline holds every run's interior seconds between a leading
 * and a trailing placeholder, which compare drops as it drops a run's partial first and last
 * second. Other numbers are the runs' mean (min and max: the extremes). */
#include "history/hist_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool hist_band(const json_t *doc, const char *metric, double *lo, double *hi) {
    compare_samples s;
    *lo = *hi = NAN;
    if (compare_metric_samples_of(doc, metric, &s) < 0) return false;
    int rc = infer_interval_one(s.stat, s.param, s.v, s.n, s.n_run, 0.95, lo, hi);
    free(s.v);
    return rc == 0 && isfinite(*lo) && isfinite(*hi);
}

/* Every view's values of one samples family, concatenated; NULL when a view lacks it. */
static json_t *pool_family(json_t *const *views, size_t n, const char *family) {
    json_t *vals = json_array();
    json_int_t total = 0;
    bool all = true;
    for (size_t i = 0; i < n; i++) {
        const json_t *f = json_object_get(json_object_get(views[i], "samples"), family);
        const json_t *v = json_object_get(f, "values");
        if (!json_is_array(v)) { json_decref(vals); return NULL; }
        json_array_extend(vals, (json_t *)v);
        total += json_integer_value(json_object_get(f, "n"));
        const char *m = json_string_value(json_object_get(f, "method"));
        all = all && m && !strcmp(m, "all");
    }
    json_t *out = json_object();
    json_object_set_new(out, "values", vals);
    json_object_set_new(out, "n", json_integer(total));
    json_object_set_new(out, "method", json_string(all ? "all" : "quantiles"));
    return out;
}

static int cmp_int(const void *a, const void *b) {
    json_int_t x = json_integer_value(*(json_t *const *)a), y = json_integer_value(*(json_t *const *)b);
    return (x > y) - (x < y);
}

static json_t *pool_samples(json_t *const *views, size_t n) {
    const json_t *first = json_object_get(views[0], "samples");
    if (!json_is_object(first)) return NULL;
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)first, k, v) {
        if (!json_is_object(v)) { json_object_set(out, k, v); continue; }    /* unit, max_per_metric */
        json_t *f = pool_family(views, n, k);
        if (!f) continue;
        /* ascending, as a results file keeps them (compare sorts when it must, but sorted input
         * lets it skip that) */
        json_t *vals = json_object_get(f, "values");
        size_t len = json_array_size(vals);
        json_t **items = malloc((len ? len : 1) * sizeof *items);
        if (items) {
            for (size_t i = 0; i < len; i++) items[i] = json_incref(json_array_get(vals, i));
            qsort(items, len, sizeof *items, cmp_int);
            json_t *sorted = json_array();
            for (size_t i = 0; i < len; i++) json_array_append_new(sorted, items[i]);
            json_object_set_new(f, "values", sorted);
            free(items);
        }
        json_object_set_new(out, k, f);
    }
    return out;
}

/* [placeholder, every run's interior seconds..., placeholder] */
static json_t *pool_series(json_t *const *views, size_t n, const char *series) {
    json_t *arr = json_array();
    json_array_append_new(arr, json_real(0));
    for (size_t i = 0; i < n; i++) {
        const json_t *s = json_object_get(json_object_get(views[i], "timeline"), series);
        size_t len = json_array_size(s);
        for (size_t k = 1; k + 1 < len; k++) json_array_append(arr, json_array_get(s, k));
    }
    json_array_append_new(arr, json_real(0));
    return arr;
}

static bool prefixed(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* A number of the pooled document: recomputed from the pooled samples for a latency statistic,
 * else the runs' mean (min_/max_: their extreme). NAN when no run has it. */
static double pooled_number(json_t *const *views, size_t n, const json_t *pooled, const char *key) {
    compare_samples s;
    if (!strstr(key, "throughput") && compare_metric_samples_of(pooled, key, &s) == 0) {
        double x = infer_stat_value(s.stat, s.param, s.v, s.n);
        free(s.v);
        return x;
    }
    bool mn = prefixed(key, "min_"), mx = prefixed(key, "max_") && strstr(key, "_ms");
    double acc = NAN;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_object_get(views[i], key);
        if (!json_is_number(v)) continue;
        double x = json_number_value(v);
        if (!k) acc = x;
        else if (mn) acc = x < acc ? x : acc;
        else if (mx) acc = x > acc ? x : acc;
        else acc += x;
        k++;
    }
    return k && !mn && !mx ? acc / (double)k : acc;
}

json_t *hist_pool(json_t *const *views, size_t n, const char *label) {
    if (n == 0) return NULL;
    json_t *doc = json_deep_copy(views[n - 1]);     /* the latest: config, schema, percentiles */
    if (!doc || n == 1) {
        if (doc && label) json_object_set_new(doc, "command_line", json_string(label));
        return doc;
    }
    json_object_del(doc, "classes");   /* per-class pooling is not offered: compare the whole runs */
    json_t *samples = pool_samples(views, n);
    if (samples) json_object_set_new(doc, "samples", samples);
    else json_object_del(doc, "samples");
    json_t *tl = json_object();
    json_object_set_new(tl, "finished", pool_series(views, n, "finished"));
    json_object_set_new(tl, "output_tokens", pool_series(views, n, "output_tokens"));
    json_object_set_new(doc, "timeline", tl);
    bool partial = false;
    for (size_t i = 0; i < n; i++) partial = partial || json_is_true(json_object_get(views[i], "partial"));
    json_object_set_new(doc, "partial", json_boolean(partial));
    const char *k;
    json_t *v;
    void *tmp;
    json_object_foreach_safe(doc, tmp, k, v) {
        if (!json_is_number(v)) continue;
        double x = pooled_number(views, n, doc, k);
        json_object_set_new(doc, k, isfinite(x) ? json_real(x) : json_null());
    }
    json_object_set_new(doc, "pooled_runs", json_integer((json_int_t)n));
    if (label) json_object_set_new(doc, "command_line", json_string(label));
    return doc;
}
