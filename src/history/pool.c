/* pool — several runs of one configuration as one results document, so that compare's own
 * statistics (intervals sized by n, Mann–Whitney, gate rules) apply to "the last five runs" as
 * they apply to one file; and the noise band of a single run from its own samples.
 *
 * Pooling puts the runs' requests together: each family's sample sets (sampleset.h) are merged
 * exactly — the set of the union of the runs' requests, n summed; an older file's 2,000 quantiles
 * enter weighted as the n samples they stand for, as compare reads them — and the family
 * statistics a gate reads (mean_ttft_ms, p99_ttft_ms, ...) are read off the merged set, as
 * compare reads a set. Throughput intervals come from the per-second timeline: the pooled
 * timeline holds every run's interior seconds between a leading and a trailing placeholder, which
 * compare drops as it drops a run's partial first and last second. Other numbers are the runs'
 * mean (min and max: the extremes). */
#include "history/hist_internal.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

bool hist_band(const json_t *doc, const char *metric, double *lo, double *hi) {
    compare_samples s;
    *lo = *hi = NAN;
    if (compare_metric_samples_of(doc, metric, &s) < 0) { compare_samples_free(&s); return false; }
    int rc = infer_interval_set_one(s.stat, s.param, &s.set, 0.95, lo, hi, NULL, 0);
    compare_samples_free(&s);
    *lo *= s.unit;
    *hi *= s.unit;
    return rc == 0 && isfinite(*lo) && isfinite(*hi);
}

/* Every view's sample set of one family, merged; NULL when a view lacks it. The family is read
 * through a metric name of it, as compare reads it (any statistic will do). */
static json_t *pool_family(json_t *const *views, size_t n, const char *family) {
    sampleset all;
    sampleset_init(&all);
    char metric[64];
    snprintf(metric, sizeof metric, "mean_%s_ms", family);
    bool ok = true;
    for (size_t i = 0; i < n && ok; i++) {
        compare_samples s;
        ok = compare_metric_samples_of(views[i], metric, &s) == 0 && sampleset_merge(&all, &s.set) == 0;
        compare_samples_free(&s);
    }
    json_t *out = ok && all.n ? sampleset_to_json(&all) : NULL;
    sampleset_free(&all);
    return out;
}

static json_t *pool_samples(json_t *const *views, size_t n) {
    const json_t *first = json_object_get(views[0], "samples");
    if (!json_is_object(first)) return NULL;
    json_t *out = json_object();
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)first, k, v) {
        if (!json_is_object(v)) continue;                 /* format, unit, rel_error; set below */
        if (!strcmp(k, "units")) { json_object_set(out, k, v); continue; }
        json_t *f = pool_family(views, n, k);
        if (f) json_object_set_new(out, k, f);
    }
    /* the merged sets are sets whatever the runs kept (older files: quantile arrays) */
    json_object_set_new(out, "format", json_string(SAMPLESET_FORMAT));
    json_object_set_new(out, "unit", json_string("ns"));
    json_object_set_new(out, "rel_error", json_real(HDR_REL_ERROR));
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
        double x = infer_set_value(s.stat, s.param, &s.set) * s.unit;
        compare_samples_free(&s);
        return x;
    }
    compare_samples_free(&s);
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
