/* trend — a metric over time for comparable runs, with each run's noise band (from its own
 * samples, stored when it was recorded) and the change points; and `best`, a leaderboard.
 *
 * Change points are found on the series by binary segmentation: a split is kept when it removes
 * more squared error than 3 σ² ln(n), where σ is the run-to-run noise (the larger of the robust
 * spread of successive differences and the runs' own bands), and each side holds at least
 * min_runs runs. Each split is then tested the way `dsperf compare` tests two runs: the runs just
 * before it and just after it (up to `window` on each side, within its segment) are pooled (their
 * sample sets merged) and compared with compare_runs, whose interval of the change (sized by the
 * pooled n) must exclude zero and whose change must reach min_effect. Only a tested change is
 * said to be one. */
#include "history/hist_internal.h"
#include "metrics/stats.h"
#include "metrics/metric_table.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_CHANGES 20

void history_trend_default_opts(history_trend_opts *o) {
    memset(o, 0, sizeof *o);
    o->min_runs = 2;
    o->window = 5;
    o->show_last = 30;
    o->min_effect_pct = 1.0;
    o->resamples = 2000;
}

typedef struct {
    size_t n, cap;
    int64_t *id, *t;
    double *v, *lo, *hi;
    char **labels;
} series;

static void series_free(series *s) {
    for (size_t i = 0; i < s->n; i++) free(s->labels[i]);
    free(s->id); free(s->t); free(s->v); free(s->lo); free(s->hi); free(s->labels);
    memset(s, 0, sizeof *s);
}

static int series_push(series *s, int64_t id, int64_t t, double v, double lo, double hi, const char *labels) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        int64_t *a = realloc(s->id, nc * sizeof *a), *b = a ? realloc(s->t, nc * sizeof *b) : NULL;
        if (a) s->id = a;
        if (b) s->t = b;
        double *c = b ? realloc(s->v, nc * sizeof *c) : NULL;
        if (c) s->v = c;
        double *d = c ? realloc(s->lo, nc * sizeof *d) : NULL;
        if (d) s->lo = d;
        double *e = d ? realloc(s->hi, nc * sizeof *e) : NULL;
        if (e) s->hi = e;
        char **f = e ? realloc(s->labels, nc * sizeof *f) : NULL;
        if (f) s->labels = f;
        if (!f) return -1;
        s->cap = nc;
    }
    s->id[s->n] = id;
    s->t[s->n] = t;
    s->v[s->n] = v;
    s->lo[s->n] = lo;
    s->hi[s->n] = hi;
    s->labels[s->n] = labels && *labels ? strdup(labels) : NULL;
    s->n++;
    return 0;
}

static double col_or_nan(sqlite3_stmt *st, int i) {
    return sqlite3_column_type(st, i) == SQLITE_NULL ? NAN : sqlite3_column_double(st, i);
}

/* The comparable runs' values of the metric, oldest first: one range of run_metric (keyed by
 * metric, configuration and run), restricted to the query's runs when it has terms; or, for a
 * metric no run stored, each run's compare view (slower). Labels come from one ordered scan. */
static int load_series(history *h, const hist_query *q, const char *ref_hash, bool any_config, const char *metric,
                       series *s, char *err, size_t errlen) {
    sqlite3_stmt *st;
    int rc;
    bool stored = hist_metric_stored(h, metric);
    if (stored) {
        /* the metric's name and the configuration are bound as ?100 and ?101, after the query's own */
        const char *head = any_config ? "SELECT m.run_id, m.run_time, m.value, m.lo, m.hi FROM run_metric m WHERE m.name = ?100"
                                      : "SELECT m.run_id, m.run_time, m.value, m.lo, m.hi FROM run_metric m "
                                        "WHERE m.name = ?100 AND m.config_hash = ?101";
        if (hist_prepare_in(h, q, head, "m.run_id", "ORDER BY m.run_id", &st, err, errlen) < 0) return -1;
        sqlite3_bind_text(st, 100, metric, -1, SQLITE_STATIC);
        if (!any_config) sqlite3_bind_text(st, 101, ref_hash, -1, SQLITE_STATIC);
    } else {
        int first;
        if (hist_query_prepare(h, q, "r.id, r.run_time, NULL, NULL, NULL", NULL, any_config ? NULL : "r.config_hash = ?", 0, &st,
                               &first, err, errlen) < 0) return -1;
        if (!any_config) sqlite3_bind_text(st, first, ref_hash, -1, SQLITE_STATIC);
    }
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        double v = col_or_nan(st, 2), lo = col_or_nan(st, 3), hi = col_or_nan(st, 4);
        if (!stored) {
            char e2[256];
            json_t *view = hist_load_view(h, id, e2, sizeof e2);
            const json_t *x = json_object_get(view, metric);
            v = json_is_number(x) ? json_number_value(x) : NAN;
            if (isfinite(v)) hist_band(view, metric, &lo, &hi);
            json_decref(view);
        }
        if (!isfinite(v)) continue;
        if (series_push(s, id, sqlite3_column_int64(st, 1), v, lo, hi, NULL) < 0) { rc = SQLITE_NOMEM; break; }
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE) return hist_sql_err(h, rc, "cannot query", err, errlen);
    hist_label_cursor *lc = s->n ? hist_label_cursor_open(h, s->id[0]) : NULL;
    for (size_t i = 0; lc && i < s->n; i++) {
        const char *l = hist_label_cursor_get(lc, s->id[i]);
        if (l && *l) s->labels[i] = strdup(l);
    }
    hist_label_cursor_close(lc);
    return 0;
}

/* ---- change points ---- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median_of(double *v, size_t n) {
    if (!n) return NAN;
    qsort(v, n, sizeof *v, cmp_d);
    return stats_percentile_sorted(v, n, 50);
}

/* The run-to-run noise of the series: 1.4826 MAD of successive differences / sqrt 2 (a step
 * moves one difference, not the median), or the runs' own bands when larger. */
static double noise_sigma(const series *s) {
    if (s->n < 2) return 0;
    double *d = malloc(s->n * sizeof *d);
    if (!d) return 0;
    for (size_t i = 1; i < s->n; i++) d[i - 1] = fabs(s->v[i] - s->v[i - 1]);
    double sd = 1.4826 * median_of(d, s->n - 1) / sqrt(2.0);
    size_t k = 0;
    for (size_t i = 0; i < s->n; i++)
        if (isfinite(s->lo[i]) && isfinite(s->hi[i])) d[k++] = (s->hi[i] - s->lo[i]) / (2 * 1.96);
    double sb = k ? median_of(d, k) : 0;
    for (size_t i = 0; i < s->n; i++) d[i] = fabs(s->v[i]);
    double scale = median_of(d, s->n);
    free(d);
    double sigma = sd > sb ? sd : sb;
    return sigma > 1e-9 * scale ? sigma : 1e-9 * scale + 1e-12;
}

typedef struct {
    const double *pre;       /* prefix sums of the values */
    double penalty;
    size_t min_len;
    size_t cp[MAX_CHANGES];
    double gain[MAX_CHANGES];
    int n;
} segmenter;

static double seg_mean(const segmenter *g, size_t a, size_t b) { return (g->pre[b] - g->pre[a]) / (double)(b - a); }

static void segment(segmenter *g, size_t a, size_t b, int depth) {
    if (b - a < 2 * g->min_len || depth > 40) return;
    double best = 0;
    size_t at = 0;
    for (size_t k = a + g->min_len; k + g->min_len <= b; k++) {
        double n1 = (double)(k - a), n2 = (double)(b - k), dm = seg_mean(g, a, k) - seg_mean(g, k, b);
        double gain = n1 * n2 / (n1 + n2) * dm * dm;
        if (gain > best) { best = gain; at = k; }
    }
    if (!at || best <= g->penalty) return;
    if (g->n < MAX_CHANGES) { g->cp[g->n] = at; g->gain[g->n] = best; g->n++; }
    else {   /* keep the largest */
        int lo = 0;
        for (int i = 1; i < g->n; i++) if (g->gain[i] < g->gain[lo]) lo = i;
        if (best > g->gain[lo]) { g->cp[lo] = at; g->gain[lo] = best; }
    }
    segment(g, a, at, depth + 1);
    segment(g, at, b, depth + 1);
}

static int cmp_size(const void *a, const void *b) {
    size_t x = *(const size_t *)a, y = *(const size_t *)b;
    return (x > y) - (x < y);
}

/* The metric table's label ("p99_ttft_ms" -> "p99 TTFT"); a key it does not hold, in words by
 * its shape ("p99.9_e2el_ms" -> "p99.9 E2EL", "recommended_load" -> "recommended load"). */
static void pretty_metric(const char *m, char *out, size_t len) {
    const metric_def *d = metric_find(m);
    if (d) { snprintf(out, len, "%s", d->label); return; }
    char buf[96];
    snprintf(buf, sizeof buf, "%s", m);
    size_t n = strlen(buf);
    if (n > 3 && !strcmp(buf + n - 3, "_ms")) buf[n - 3] = 0;
    size_t o = 0;
    bool first = true;
    for (char *tok = strtok(buf, "_"); tok && o + 1 < len; tok = strtok(NULL, "_")) {
        bool upper = !first && (!strcmp(tok, "ttft") || !strcmp(tok, "tpot") || !strcmp(tok, "itl") || !strcmp(tok, "e2el"));
        o += (size_t)snprintf(out + o, len - o, "%s", first ? "" : " ");
        for (const char *c = tok; *c && o + 1 < len; c++) out[o++] = upper ? (char)(*c - 'a' + 'A') : *c;
        out[o] = 0;
        first = false;
    }
}

static double jnumv(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The median of v[a..b). */
static double median_range(const double *v, size_t a, size_t b) {
    double *c = malloc((b - a) * sizeof *c);
    if (!c) return NAN;
    memcpy(c, v + a, (b - a) * sizeof *c);
    double m = median_of(c, b - a);
    free(c);
    return m;
}

/* Tests the change at index k two ways, both of which must hold: as compare would (the pooled
 * requests of runs [a, k) against those of [k, b): the bootstrap interval of the change excludes
 * zero), and against the run-to-run noise (the sides' median runs differ by more than
 * 1.96 sigma sqrt(1/n1 + 1/n2)), so that neither one noisy run nor a drift within runs makes a
 * change point. */
static json_t *test_change(history *h, const series *s, const char *metric, size_t a, size_t k, size_t b,
                           const history_trend_opts *o, bool results_kind, double sigma) {
    json_t *cp = json_object();
    json_object_set_new(cp, "id", json_integer(s->id[k]));
    json_object_set_new(cp, "labels", s->labels[k] ? json_string(s->labels[k]) : json_null());
    json_object_set_new(cp, "runs_before", json_integer((json_int_t)(k - a)));
    json_object_set_new(cp, "runs_after", json_integer((json_int_t)(b - k)));
    double mb = 0, ma = 0;
    for (size_t i = a; i < k; i++) mb += s->v[i];
    for (size_t i = k; i < b; i++) ma += s->v[i];
    mb /= (double)(k - a);
    ma /= (double)(b - k);
    json_object_set_new(cp, "before", json_real(mb));
    json_object_set_new(cp, "after", json_real(ma));
    json_object_set_new(cp, "change_pct", mb != 0 ? json_real(100 * (ma - mb) / fabs(mb)) : json_null());
    json_object_set_new(cp, "tested", json_false());
    json_object_set_new(cp, "confirmed", json_false());
    double shift = median_range(s->v, k, b) - median_range(s->v, a, k);
    double limit = 1.96 * sigma * sqrt(1.0 / (double)(k - a) + 1.0 / (double)(b - k));
    bool beyond_runs = fabs(shift) > limit;
    json_object_set_new(cp, "median_shift", json_real(shift));
    json_object_set_new(cp, "run_to_run_limit", json_real(limit));
    json_object_set_new(cp, "beyond_run_to_run_noise", json_boolean(beyond_runs));
    if (!results_kind) {
        json_object_set_new(cp, "verdict", json_string("not tested (one number per run)"));
        return cp;
    }
    size_t n = b - a;
    json_t **views = calloc(n, sizeof *views);
    bool ok = views != NULL;
    for (size_t i = 0; ok && i < n; i++) {
        char e2[256];
        ok = (views[i] = hist_load_view(h, s->id[a + i], e2, sizeof e2)) != NULL;
    }
    if (ok) {
        json_t *base = hist_pool(views, k - a, NULL), *cand = hist_pool(views + (k - a), b - k, NULL);
        compare_opts co;
        compare_default_opts(&co);
        co.min_effect_pct = o->min_effect_pct;
        co.resamples = o->resamples;
        const char *names[1] = { metric };
        co.metrics = names;
        co.n_metrics = 1;
        char e2[256];
        json_t *cmp = base && cand ? compare_runs(base, cand, &co, e2, sizeof e2) : NULL;
        const json_t *m = json_array_get(json_object_get(cmp, "metrics"), 0);
        if (m) {
            const char *verdict = json_string_value(json_object_get(m, "verdict"));
            bool have_ci = json_is_number(json_object_get(m, "ci_low"));
            json_object_set_new(cp, "tested", json_boolean(have_ci));
            json_object_set_new(cp, "before", json_real(jnumv(m, "baseline")));
            json_object_set_new(cp, "after", json_real(jnumv(m, "candidate")));
            json_object_set(cp, "change_pct", json_object_get(m, "change_pct"));
            json_object_set(cp, "ci_low_pct", json_object_get(m, "ci_low_pct"));
            json_object_set(cp, "ci_high_pct", json_object_get(m, "ci_high_pct"));
            json_object_set(cp, "basis", json_object_get(m, "basis"));
            json_object_set_new(cp, "verdict", json_string(verdict ? verdict : "n/a"));
            bool moved = verdict && (!strcmp(verdict, "worse") || !strcmp(verdict, "better") || !strcmp(verdict, "higher") ||
                                     !strcmp(verdict, "lower"));
            json_object_set_new(cp, "confirmed", json_boolean(have_ci && moved && beyond_runs));
            if (have_ci && moved && !beyond_runs) json_object_set_new(cp, "verdict", json_string("within run-to-run noise"));
        }
        json_decref(cmp);
        json_decref(base);
        json_decref(cand);
    }
    for (size_t i = 0; views && i < n; i++) json_decref(views[i]);
    free(views);
    return cp;
}

static void change_sentence(json_t *cp, const char *metric) {
    char name[96], buf[400], ci[64] = "";
    pretty_metric(metric, name, sizeof name);
    double pct = jnumv(cp, "change_pct"), lo = jnumv(cp, "ci_low_pct"), hi = jnumv(cp, "ci_high_pct");
    bool big = fabs(pct) >= 10;
    if (isfinite(lo) && isfinite(hi)) snprintf(ci, sizeof ci, big ? " [%.0f, %.0f]" : " [%.1f, %.1f]", lo, hi);
    const char *labels = json_string_value(json_object_get(cp, "labels"));
    snprintf(buf, sizeof buf, big ? "%s %s %.0f %%%s at run %lld%s%s" : "%s %s %.1f %%%s at run %lld%s%s", name,
             pct >= 0 ? "rose" : "fell", fabs(pct), ci, (long long)json_integer_value(json_object_get(cp, "id")),
             labels ? ", " : "", labels ? labels : "");
    json_object_set_new(cp, "sentence", json_string(buf));
}

static json_t *run_row(const series *s, size_t i) {
    char when[32] = "-";
    if (s->t[i]) {
        time_t tt = (time_t)s->t[i];
        struct tm tm;
        gmtime_r(&tt, &tm);
        strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &tm);
    }
    return json_pack("{s:I,s:s,s:f,s:o,s:o,s:o}", "id", (json_int_t)s->id[i], "date", when, "value", s->v[i], "lo",
                     isfinite(s->lo[i]) ? json_real(s->lo[i]) : json_null(), "hi",
                     isfinite(s->hi[i]) ? json_real(s->hi[i]) : json_null(), "labels",
                     s->labels[i] ? json_string(s->labels[i]) : json_null());
}

/* Selection shared by trend and best: the comparable runs' series of the metric. */
static int select_series(history *h, const char *metric, const char *query, series *s, json_t *doc, char *err, size_t errlen) {
    hist_query *q;
    if (hist_query_parse(query, &q, err, errlen) < 0) return -1;
    size_t n = 0;
    char *note = NULL, ref[17];
    int rc = hist_comparable_select(h, q, metric, &n, &note, ref, err, errlen);
    if (rc == 0 && !n) { snprintf(err, errlen, "no run in %s matches '%s'", h->path, query ? query : ""); rc = -1; }
    if (rc == 0) rc = load_series(h, q, ref, hist_query_any_config(q), metric, s, err, errlen);
    if (rc == 0 && !s->n) {
        snprintf(err, errlen, "none of the %zu comparable runs has a value for '%s' (headline metrics: p99_ttft_ms, "
                 "median_tpot_ms, output_throughput, knee_load, ...; dsperf history show RUN lists a run's)", n, metric);
        rc = -1;
    }
    if (rc == 0) {
        json_object_set_new(doc, "query", json_string(query ? query : ""));
        json_object_set_new(doc, "config", hist_query_any_config(q) ? json_null() : json_string(ref));
        char *cfg = hist_config_of(h, s->id[s->n - 1]);
        json_object_set_new(doc, "config_json", cfg ? json_loads(cfg, 0, NULL) : json_null());
        free(cfg);
        json_object_set_new(doc, "note", note ? json_string(note) : json_null());
        json_object_set_new(doc, "runs_without_metric", json_integer((json_int_t)(n > s->n ? n - s->n : 0)));
        int dir = history_metric_direction(metric);
        json_object_set_new(doc, "direction", json_string(dir > 0 ? "higher_is_better" : dir < 0 ? "lower_is_better" : "unknown"));
    }
    free(note);
    hist_query_free(q);
    return rc;
}

json_t *history_trend(history *h, const char *metric, const history_trend_opts *o, char *err, size_t errlen) {
    series s = {0};
    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string("dsperf.history-trend/1"));
    json_object_set_new(doc, "metric", json_string(metric));
    if (select_series(h, metric, o->query, &s, doc, err, errlen) < 0) { json_decref(doc); series_free(&s); return NULL; }
    const char *kind = json_string_value(json_object_get(json_object_get(doc, "config_json"), "kind"));
    bool results_kind = !kind || !strcmp(kind, "results");
    double *pre = malloc((s.n + 1) * sizeof *pre);
    if (!pre) { json_decref(doc); series_free(&s); snprintf(err, errlen, "out of memory"); return NULL; }
    pre[0] = 0;
    for (size_t i = 0; i < s.n; i++) pre[i + 1] = pre[i] + s.v[i];
    double sigma = noise_sigma(&s);
    segmenter g = { .pre = pre, .penalty = 3 * sigma * sigma * log((double)(s.n > 2 ? s.n : 2)),
                    .min_len = (size_t)(o->min_runs > 0 ? o->min_runs : 1) };
    segment(&g, 0, s.n, 0);
    qsort(g.cp, (size_t)g.n, sizeof g.cp[0], cmp_size);
    json_object_set_new(doc, "noise_sigma", json_real(sigma));
    /* a change point needs min_runs on each side: with fewer runs the trend cannot call anything
     * noise, and says so (history compare tests two runs) */
    json_object_set_new(doc, "min_runs", json_integer((json_int_t)g.min_len));
    json_object_set_new(doc, "enough_runs", json_boolean(s.n >= 2 * g.min_len));
    json_t *cps = json_array(), *segs = json_array();
    size_t w = (size_t)(o->window > 0 ? o->window : 5);
    for (int i = 0; i <= g.n; i++) {
        size_t a = i ? g.cp[i - 1] : 0, b = i < g.n ? g.cp[i] : s.n;
        json_array_append_new(segs, json_pack("{s:I,s:I,s:I,s:f}", "from_id", (json_int_t)s.id[a], "to_id",
                                              (json_int_t)s.id[b - 1], "runs", (json_int_t)(b - a), "mean",
                                              (pre[b] - pre[a]) / (double)(b - a)));
        if (i == g.n) break;
        size_t k = g.cp[i], next = i + 1 < g.n ? g.cp[i + 1] : s.n;
        size_t from = k - a > w ? k - w : a, to = next - k > w ? k + w : next;
        json_t *cp = test_change(h, &s, metric, from, k, to, o, results_kind, sigma);
        change_sentence(cp, metric);
        json_array_append_new(cps, cp);
    }
    json_object_set_new(doc, "segments", segs);
    json_object_set_new(doc, "change_points", cps);
    /* the runs (the newest show_last of them: building 100,000 objects for a 30-row table is most
     * of a trend's cost), and every change point's run */
    json_t *runs = json_array();
    size_t from = o->show_last > 0 && s.n > (size_t)o->show_last ? s.n - (size_t)o->show_last : 0;
    for (size_t i = from; i < s.n; i++) json_array_append_new(runs, run_row(&s, i));
    hist_mark_thin_runs(h, metric, runs);
    json_object_set_new(doc, "runs", runs);
    json_object_set_new(doc, "n_runs", json_integer((json_int_t)s.n));
    free(pre);
    series_free(&s);
    return doc;
}

static void fmtv(double x, char *b, size_t n) {
    if (!isfinite(x)) snprintf(b, n, "-");
    else if (fabs(x) >= 1000) snprintf(b, n, "%.0f", x);
    else if (fabs(x) >= 10) snprintf(b, n, "%.2f", x);
    else snprintf(b, n, "%.4g", x);
}

void history_trend_print(FILE *f, const json_t *t) {
    const json_t *runs = json_object_get(t, "runs");
    size_t n = (size_t)json_integer_value(json_object_get(t, "n_runs")), shown = json_array_size(runs);
    const char *metric = json_string_value(json_object_get(t, "metric"));
    const json_t *cfg = json_object_get(t, "config");
    fprintf(f, "trend of %s over %zu comparable run%s", metric, n, n == 1 ? "" : "s");
    if (json_is_string(cfg)) fprintf(f, " (config %.12s)", json_string_value(cfg));
    fprintf(f, ", %s\n", json_string_value(json_object_get(t, "direction")));
    const char *note = json_string_value(json_object_get(t, "note"));
    if (note) fprintf(f, "note: %s\n", note);
    if (json_integer_value(json_object_get(t, "runs_without_metric")))
        fprintf(f, "note: %lld matching runs have no %s\n", (long long)json_integer_value(json_object_get(t, "runs_without_metric")), metric);
    if (shown < n) fprintf(f, "(the last %zu runs; --rows 0 shows all)\n", shown);
    fprintf(f, "%6s  %-20s %12s  %-24s  %s\n", "run", "date (UTC)", metric, "95% band (own samples)", "labels");
    const json_t *cps = json_object_get(t, "change_points");
    for (size_t i = 0; i < shown; i++) {
        const json_t *r = json_array_get(runs, i);
        json_int_t id = json_integer_value(json_object_get(r, "id"));
        char v[32], lo[32], hi[32], band[80] = "-";
        fmtv(jnumv(r, "value"), v, sizeof v);
        if (json_is_number(json_object_get(r, "lo"))) {
            fmtv(jnumv(r, "lo"), lo, sizeof lo);
            fmtv(jnumv(r, "hi"), hi, sizeof hi);
            snprintf(band, sizeof band, "[%s, %s]", lo, hi);
        }
        const char *mark = "";
        size_t k;
        json_t *cp;
        json_array_foreach(cps, k, cp)
            if (json_integer_value(json_object_get(cp, "id")) == id)
                mark = json_is_true(json_object_get(cp, "confirmed")) ? "  <- change"
                     : json_is_true(json_object_get(cp, "tested")) ? "  <- shift within noise" : "  <- shift (not tested)";
        const char *labels = json_string_value(json_object_get(r, "labels"));
        const json_t *thin = json_object_get(r, "thin");
        char tm[96] = "";
        if (thin)
            snprintf(tm, sizeof tm, "  (from %lld requests; this percentile needs %lld)",
                     (long long)json_integer_value(json_object_get(thin, "samples")),
                     (long long)json_integer_value(json_object_get(thin, "samples_needed")));
        fprintf(f, "%6lld  %-20s %12s  %-24s  %s%s%s\n", (long long)id, json_string_value(json_object_get(r, "date")), v, band,
                labels ? labels : "", mark, tm);
    }
    size_t k, confirmed = 0;
    json_t *cp;
    json_array_foreach(cps, k, cp) confirmed += json_is_true(json_object_get(cp, "confirmed"));
    json_int_t min_runs = json_integer_value(json_object_get(t, "min_runs"));
    if (confirmed) fprintf(f, "change points:\n");
    else if (json_is_false(json_object_get(t, "enough_runs"))) {
        fprintf(f, "too few runs to tell a change from noise: %zu comparable run%s, and a change point needs %lld on "
                "each side (--min-runs); `dsperf history compare BASE CAND` tests two runs\n", n, n == 1 ? "" : "s",
                (long long)min_runs);
        /* what the bands already say, so a step this size is not passed over in silence */
        const json_t *a = shown >= 2 ? json_array_get(runs, shown - 2) : NULL, *b = shown >= 2 ? json_array_get(runs, shown - 1) : NULL;
        if (a && b && json_is_number(json_object_get(a, "lo")) && json_is_number(json_object_get(b, "lo")) &&
            (jnumv(b, "lo") > jnumv(a, "hi") || jnumv(b, "hi") < jnumv(a, "lo"))) {
            double va = jnumv(a, "value"), vb = jnumv(b, "value");
            fprintf(f, "  but the 95%% bands of runs %lld and %lld do not overlap (%+.1f%%)\n",
                    (long long)json_integer_value(json_object_get(a, "id")), (long long)json_integer_value(json_object_get(b, "id")),
                    va != 0 ? 100 * (vb - va) / fabs(va) : NAN);
        }
    } else fprintf(f, "no change beyond noise\n");
    json_array_foreach(cps, k, cp) {
        if (!json_is_true(json_object_get(cp, "confirmed"))) continue;
        fprintf(f, "  %s (%s; %lld runs before, %lld after, pooled)\n", json_string_value(json_object_get(cp, "sentence")),
                json_string_value(json_object_get(cp, "verdict")), (long long)json_integer_value(json_object_get(cp, "runs_before")),
                (long long)json_integer_value(json_object_get(cp, "runs_after")));
    }
    json_array_foreach(cps, k, cp) {
        if (json_is_true(json_object_get(cp, "confirmed"))) continue;
        bool tested = json_is_true(json_object_get(cp, "tested"));
        fprintf(f, "  (%s: %s%s)\n", tested ? "within noise" : "not tested", json_string_value(json_object_get(cp, "sentence")),
                tested ? "" : "; the runs hold no samples for it (throughput needs 7 s or more of timeline)");
    }
}

/* ---- best ---- */

typedef struct { double v; size_t i; } ranked;
static int dir_for_sort;
static int cmp_rank(const void *a, const void *b) {
    const ranked *x = a, *y = b;
    double d = dir_for_sort > 0 ? y->v - x->v : x->v - y->v;
    return d < 0 ? -1 : d > 0 ? 1 : (x->i > y->i) - (x->i < y->i);
}

json_t *history_best(history *h, const char *metric, const char *query, int top, char *err, size_t errlen) {
    int dir = history_metric_direction(metric);
    if (!dir) {
        snprintf(err, errlen, "best: which way is better for '%s' is not known (latencies *_ms: lower; throughputs and "
                 "goodput: higher)", metric);
        return NULL;
    }
    series s = {0};
    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string("dsperf.history-best/1"));
    json_object_set_new(doc, "metric", json_string(metric));
    if (select_series(h, metric, query, &s, doc, err, errlen) < 0) { json_decref(doc); series_free(&s); return NULL; }
    ranked *r = malloc(s.n * sizeof *r);
    if (!r) { json_decref(doc); series_free(&s); snprintf(err, errlen, "out of memory"); return NULL; }
    for (size_t i = 0; i < s.n; i++) r[i] = (ranked){ s.v[i], i };
    dir_for_sort = dir;
    qsort(r, s.n, sizeof *r, cmp_rank);
    json_t *rows = json_array();
    sqlite3_stmt *st = NULL;
    sqlite3_prepare_v2(h->db, "SELECT engine, engine_version, gpu_type, gpu_count, model, endpoint FROM run WHERE id = ?", -1, &st, NULL);
    for (size_t k = 0; k < s.n && (top <= 0 || k < (size_t)top); k++) {
        json_t *row = run_row(&s, r[k].i);
        json_object_set_new(row, "rank", json_integer((json_int_t)k + 1));
        if (st) {
            sqlite3_reset(st);
            sqlite3_bind_int64(st, 1, s.id[r[k].i]);
            if (sqlite3_step(st) == SQLITE_ROW) {
                const char *keys[] = {"engine", "engine_version", "gpu", NULL, "model", "endpoint"};
                for (int c = 0; c < 6; c++) {
                    if (!keys[c]) continue;
                    const unsigned char *t = sqlite3_column_text(st, c);
                    json_object_set_new(row, keys[c], t ? json_string((const char *)t) : json_null());
                }
                json_object_set_new(row, "gpu_count", sqlite3_column_type(st, 3) == SQLITE_NULL ? json_null()
                                                       : json_integer(sqlite3_column_int(st, 3)));
            }
        }
        json_array_append_new(rows, row);
    }
    sqlite3_finalize(st);
    json_object_set_new(doc, "runs_considered", json_integer((json_int_t)s.n));
    json_object_set_new(doc, "best", rows);
    free(r);
    series_free(&s);
    return doc;
}

void history_best_print(FILE *f, const json_t *b) {
    const char *metric = json_string_value(json_object_get(b, "metric"));
    fprintf(f, "best %s among %lld comparable runs (%s)", metric, (long long)json_integer_value(json_object_get(b, "runs_considered")),
            json_string_value(json_object_get(b, "direction")));
    if (json_is_string(json_object_get(b, "config"))) fprintf(f, ", config %.12s", json_string_value(json_object_get(b, "config")));
    fputc('\n', f);
    if (json_string_value(json_object_get(b, "note"))) fprintf(f, "note: %s\n", json_string_value(json_object_get(b, "note")));
    fprintf(f, "%4s %6s  %-20s %12s  %-22s %-18s %-16s %s\n", "rank", "run", "date (UTC)", metric, "95% band", "engine", "gpu", "labels");
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(b, "best"), i, r) {
        char v[32], lo[32], hi[32], band[80] = "-", eng[64], gpu[64];
        fmtv(jnumv(r, "value"), v, sizeof v);
        if (json_is_number(json_object_get(r, "lo"))) {
            fmtv(jnumv(r, "lo"), lo, sizeof lo);
            fmtv(jnumv(r, "hi"), hi, sizeof hi);
            snprintf(band, sizeof band, "[%s, %s]", lo, hi);
        }
        const char *e = json_string_value(json_object_get(r, "engine")), *ev = json_string_value(json_object_get(r, "engine_version"));
        snprintf(eng, sizeof eng, "%s%s%s", e ? e : "-", ev ? " " : "", ev ? ev : "");
        const char *g = json_string_value(json_object_get(r, "gpu"));
        if (json_is_integer(json_object_get(r, "gpu_count")))
            snprintf(gpu, sizeof gpu, "%s x%lld", g ? g : "?", (long long)json_integer_value(json_object_get(r, "gpu_count")));
        else snprintf(gpu, sizeof gpu, "%s", g ? g : "-");
        const char *labels = json_string_value(json_object_get(r, "labels"));
        fprintf(f, "%4lld %6lld  %-20s %12s  %-22s %-18.18s %-16.16s %s\n", (long long)json_integer_value(json_object_get(r, "rank")),
                (long long)json_integer_value(json_object_get(r, "id")), json_string_value(json_object_get(r, "date")), v, band,
                eng, gpu, labels ? labels : "");
    }
}
