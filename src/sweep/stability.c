/* stability — stability scores per level and the exponential decay fit against batch size (see
 * stability.h). */
#include "sweep/stability.h"
#include "metrics/metric_table.h"
#include "sweep/context.h"
#include "sweep/sweep.h"
#include "metrics/infer.h"
#include "metrics/stats.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }
static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static const char *const score_names[] = { "itl-cv", "tpot-tail", "throughput-cv" };

int stability_parse_score(const char *name, stab_score *out) {
    for (int i = 0; i < 3; i++) if (!strcmp(name, score_names[i])) { *out = (stab_score)i; return 0; }
    return -1;
}

const char *stability_score_name(stab_score s) { return (unsigned)s < 3 ? score_names[s] : "?"; }

static const char *score_formula(stab_score s) {
    switch (s) {
    case STAB_ITL_CV: return "exp(-CV of pooled ITL): std_itl_ms / mean_itl_ms";
    case STAB_TPOT_TAIL: return "median_tpot_ms / p99_tpot_ms (1 / the p99/p50 tail ratio of TPOT)";
    case STAB_THROUGHPUT_CV: return "exp(-CV of output tokens per whole 1 s window of the timeline, first and last seconds left out)";
    }
    return "?";
}

/* Standard error of a coefficient of variation c = sd/mean of n independent values whose moments
 * are m (mean), v (variance), m3, m4 (central), by the delta method over (mean, variance). */
static double cv_se(double m, double v, double m3, double m4, double n) {
    if (!(m > 0) || !(v > 0) || !(n > 1)) return NAN;
    double c2 = v / (m * m);
    double var = c2 / n * (c2 + (m4 - v * v) / (4 * v * v) - m3 / (m * v));
    return var > 0 ? sqrt(var) : NAN;
}

static void moments(const double *x, size_t k, double *m, double *v, double *m3, double *m4) {
    double s = 0;
    for (size_t i = 0; i < k; i++) s += x[i];
    *m = k ? s / (double)k : NAN;
    *v = *m3 = *m4 = 0;
    for (size_t i = 0; i < k; i++) {
        double d = x[i] - *m, d2 = d * d;
        *v += d2;
        *m3 += d2 * d;
        *m4 += d2 * d2;
    }
    if (k) { *v /= (double)k; *m3 /= (double)k; *m4 /= (double)k; }
}

/* The stored samples of a metric (values in us, and the count they stand for). */
static double *sample_values(const json_t *res, const char *metric, size_t *k, double *n_true) {
    const json_t *s = json_object_get(json_object_get(res, "samples"), metric), *vals = json_object_get(s, "values");
    *k = json_array_size(vals);
    *n_true = num(s, "n");
    if (!*k) return NULL;
    double *x = malloc(*k * sizeof *x);
    if (!x) return NULL;
    for (size_t i = 0; i < *k; i++) x[i] = json_number_value(json_array_get(vals, i));
    if (!(*n_true >= (double)*k)) *n_true = (double)*k;
    return x;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* ln(p50/p99) of TPOT over bootstrap resamples of the stored per-request TPOTs (drawn at their true
 * count): its standard deviation. */
static double tpot_tail_se(const json_t *res) {
    size_t k;
    double n;
    double *x = sample_values(res, "tpot", &k, &n);
    if (!x || k < 20) { free(x); return NAN; }
    size_t draws = (size_t)n;
    double *d = malloc(draws * sizeof *d);
    if (!d) { free(x); return NAN; }
    rng g;
    rng_seed(&g, 0x7a11);
    double s = 0, ss = 0;
    const int B = 200;
    for (int b = 0; b < B; b++) {
        for (size_t i = 0; i < draws; i++) d[i] = x[rng_below(&g, k)];
        qsort(d, draws, sizeof *d, cmp_d);
        double r = log(stats_percentile_sorted(d, draws, 50) / stats_percentile_sorted(d, draws, 99));
        s += r;
        ss += r * r;
    }
    free(d);
    free(x);
    double var = ss / B - (s / B) * (s / B);
    return var > 0 ? sqrt(var) : NAN;
}

double stability_score_of(const json_t *res, stab_score s, double *se_ln, char *why, size_t whylen) {
    double se_dummy;
    if (!se_ln) se_ln = &se_dummy;
    *se_ln = NAN;
    if (s == STAB_ITL_CV) {
        double sd = num(res, "std_itl_ms"), mean = num(res, METRIC(mean_itl_ms));
        if (!(mean > 0) || !isfinite(sd)) { snprintf(why, whylen, "no inter-token latencies"); return NAN; }
        size_t k;
        double n, m, v, m3, m4;
        double *x = sample_values(res, "itl", &k, &n);
        if (x) {
            moments(x, k, &m, &v, &m3, &m4);
            *se_ln = cv_se(m, v, m3, m4, n);   /* ln S = -CV */
        }
        free(x);
        return exp(-sd / mean);
    }
    if (s == STAB_TPOT_TAIL) {
        double p50 = num(res, METRIC(median_tpot_ms)), p99 = num(res, METRIC(p99_tpot_ms));
        if (!(p50 > 0) || !(p99 > 0)) { snprintf(why, whylen, "no TPOT (requests of one token only?)"); return NAN; }
        *se_ln = tpot_tail_se(res);
        return p50 / p99;
    }
    const json_t *tok = json_object_get(json_object_get(res, "timeline"), "output_tokens");
    size_t n = json_array_size(tok), k = 0;
    double *w = malloc((n ? n : 1) * sizeof *w);
    if (!w) return NAN;
    /* the first and last seconds are partial (ramp-up, drain): interior windows only */
    for (size_t i = 1; i + 1 < n; i++) w[k++] = json_number_value(json_array_get(tok, i));
    if (k < STAB_MIN_WINDOWS) {
        free(w);
        snprintf(why, whylen, "fewer than %d whole seconds in the timeline", STAB_MIN_WINDOWS);
        return NAN;
    }
    double m, v, m3, m4;
    moments(w, k, &m, &v, &m3, &m4);
    free(w);
    if (!(m > 0)) { snprintf(why, whylen, "no output tokens"); return NAN; }
    *se_ln = cv_se(m, v, m3, m4, (double)k);
    return exp(-sqrt(v) / m);
}

/* The batch a level held: its concurrency, else (open loop) the mean requests in the system. */
static double batch_of(const json_t *lv, const char *axis, const char **how) {
    const json_t *res = json_object_get(lv, "results");
    const char *kind = json_string_value(json_object_get(lv, "kind"));
    *how = "the level's concurrency";
    /* auto mode's anchors are closed loops whose "load" is their achieved rate */
    if (kind && (!strcmp(kind, "synchronous") || !strcmp(kind, "throughput")))
        return num(json_object_get(res, "config"), "concurrency");
    if (axis && !strcmp(axis, "concurrency")) return num(lv, "load");
    *how = "Little's law: request_throughput x mean_e2el_ms (requests in the system)";
    return num(res, METRIC(request_throughput)) * num(res, METRIC(mean_e2el_ms)) / 1000;
}

static void grade(stab_fit *f) {
    double l = f->lambda;
    if (l < STAB_HIGHLY) { f->grade = "highly stable"; f->range_lo = 64; f->range_hi = 512; }
    else if (l <= STAB_MODERATELY) { f->grade = "moderately stable"; f->range_lo = 32; f->range_hi = 256; }
    else {
        f->grade = "unstable";
        /* S(b) / S0 = e^(-lambda b) >= STAB_KEEP */
        double b = log(1 / STAB_KEEP) / l * STAB_BATCH_UNIT;
        f->range_lo = 1;
        f->range_hi = b >= 1 ? floor(b) : 1;
    }
    double top = f->b_max * STAB_BATCH_UNIT;
    if (f->range_hi > top * 1.0001)
        snprintf(f->range_note, sizeof f->range_note, "the sweep measured batches up to %.0f: the range above that is the "
                 "grade's, not measured", top);
    else if (!strcmp(f->grade, "unstable"))
        snprintf(f->range_note, sizeof f->range_note, "the batch where the fit keeps %.0f%% of S0", 100 * STAB_KEEP);
    /* an interval that crosses a grade boundary makes the grade uncertain */
    double bounds[] = { STAB_HIGHLY, STAB_MODERATELY };
    for (int i = 0; i < 2; i++)
        if (f->lo < bounds[i] && f->hi > bounds[i])
            snprintf(f->why, sizeof f->why, "the interval of lambda crosses %.2f: the grade is uncertain", bounds[i]);
}

void stability_fit(const double *b, const double *S, const double *se_ln, size_t n, uint64_t seed, stab_fit *f) {
    memset(f, 0, sizeof *f);
    f->birge = 1;
    f->s0 = f->lambda = f->lo = f->hi = f->r2 = f->range_lo = f->range_hi = NAN;
    f->n_points = n;
    double *y = malloc((n ? n : 1) * sizeof *y);
    if (!y) { snprintf(f->why, sizeof f->why, "out of memory"); return; }
    size_t loads = 0;
    f->b_min = INFINITY;
    f->b_max = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        y[i] = log(S[i]);
        bool seen = false;
        for (size_t j = 0; j < i; j++) if (b[j] == b[i]) seen = true;
        if (!seen) loads++;
        if (b[i] < f->b_min) f->b_min = b[i];
        if (b[i] > f->b_max) f->b_max = b[i];
    }
    f->n_loads = loads;
    if (loads < STAB_MIN_LEVELS) {
        snprintf(f->why, sizeof f->why, "too short to fit: %zu load%s with a score (the fit needs %d)", loads,
                 loads == 1 ? "" : "s", STAB_MIN_LEVELS);
        free(y);
        return;
    }
    double slope, lo, hi;
    /* every point's own noise, when each level kept its samples; else the residuals (wild bootstrap-t) */
    bool all_se = se_ln != NULL;
    for (size_t i = 0; all_se && i < n; i++) if (!(se_ln[i] > 0)) all_se = false;
    if (infer_bootstrap_slope(b, y, all_se ? se_ln : NULL, n, STAB_RESAMPLES, 0.95, seed, &slope, &lo, &hi, &f->birge) < 0) {
        snprintf(f->why, sizeof f->why, "the fit failed (all levels at one batch)");
        free(y);
        return;
    }
    double my = 0, mx = 0, ss_tot = 0, ss_res = 0;
    for (size_t i = 0; i < n; i++) { my += y[i]; mx += b[i]; }
    my /= (double)n;
    mx /= (double)n;
    double icpt = my - slope * mx;
    for (size_t i = 0; i < n; i++) {
        ss_tot += (y[i] - my) * (y[i] - my);
        double r = y[i] - (icpt + slope * b[i]);
        ss_res += r * r;
    }
    free(y);
    f->lambda = -slope;
    f->lo = -hi;
    f->hi = -lo;
    f->s0 = exp(icpt);
    f->r2 = ss_tot > 0 ? 1 - ss_res / ss_tot : NAN;
    /* a wide interval inside one grade still grades; one that is wide and straddles grades says nothing */
    bool straddles = (f->lo < STAB_HIGHLY && f->hi > STAB_HIGHLY) || (f->lo < STAB_MODERATELY && f->hi > STAB_MODERATELY);
    if (!(f->hi - f->lo <= STAB_MAX_WIDTH) && (straddles || !isfinite(f->hi - f->lo))) {
        snprintf(f->why, sizeof f->why, "too noisy to fit: the 95%% interval of lambda [%.2f, %.2f] is wider than %.2f "
                 "and spans more than one grade; repeat the levels (--repeats) or run them longer", f->lo, f->hi,
                 STAB_MAX_WIDTH);
        return;
    }
    f->fitted = true;
    grade(f);
}

int sweep_stability_analyse(json_t *doc, stab_score score) {
    const json_t *levels = json_object_get(doc, "levels");
    if (!json_is_array(levels)) return -1;
    const char *axis = json_string_value(json_object_get(doc, "axis"));
    json_t *sec = json_object();
    json_object_set_new(sec, "score", json_string(stability_score_name(score)));
    json_object_set_new(sec, "score_formula", json_string(score_formula(score)));
    json_object_set_new(sec, "batch_unit", json_real(STAB_BATCH_UNIT));
    json_object_set_new(sec, "model", json_string("S(b) = S0 exp(-lambda b), b = batch / 64; least squares on ln S; "
                                                  "95% bootstrap interval of lambda: each level's score redrawn from its own "
                                                  "standard error, widened by the Birge ratio when the levels scatter more "
                                                  "(a wild bootstrap-t of the residuals when a level kept no samples)"));
    json_object_set_new(sec, "thresholds", json_pack("{s:f,s:f,s:f,s:i}", "highly_stable_below", STAB_HIGHLY,
        "moderately_stable_up_to", STAB_MODERATELY, "max_interval_width", STAB_MAX_WIDTH, "min_levels", STAB_MIN_LEVELS));
    if (sweep_axis_is_length(axis)) {
        json_object_set_new(sec, "fitted", json_false());
        json_object_set_new(sec, "why", json_string("a sweep along context length holds the batch fixed: stability against "
                                                    "batch size needs a concurrency or rate sweep"));
        json_object_set_new(doc, "stability", sec);
        return 0;
    }
    size_t n = json_array_size(levels), k = 0, i;
    double *b = malloc((n ? n : 1) * sizeof *b), *S = malloc((n ? n : 1) * sizeof *S), *se = malloc((n ? n : 1) * sizeof *se);
    if (!b || !S || !se) { free(b); free(S); free(se); json_decref(sec); return -1; }
    json_t *pts = json_array();
    const char *how = "the level's concurrency";
    json_t *lv;
    json_array_foreach(levels, i, lv) {
        char why[160] = "";
        double batch = batch_of(lv, axis, &how);
        bool m = sweep_level_measured(lv);
        double sl = NAN, s = m ? stability_score_of(json_object_get(lv, "results"), score, &sl, why, sizeof why) : NAN;
        if (!m) snprintf(why, sizeof why, "level not measured");
        bool use = isfinite(s) && s > 0 && batch > 0;
        json_t *p = json_pack("{s:o,s:o,s:o,s:o,s:o,s:b}", "load", jnum(num(lv, "load")), "batch", jnum(batch),
                              "b", jnum(batch / STAB_BATCH_UNIT), "score", jnum(s), "se_ln_score", jnum(sl), "used", use);
        if (!use) json_object_set_new(p, "why", json_string(why[0] ? why : "no batch"));
        json_array_append_new(pts, p);
        if (use) { b[k] = batch / STAB_BATCH_UNIT; S[k] = s; se[k] = sl; k++; }
    }
    stab_fit f;
    stability_fit(b, S, se, k, 0x57ab1e, &f);
    free(b);
    free(S);
    free(se);
    json_object_set_new(sec, "batch_source", json_string(how));
    json_object_set_new(sec, "points", pts);
    json_object_set_new(sec, "fitted", json_boolean(f.fitted));
    json_object_set_new(sec, "lambda", f.fitted ? jnum(f.lambda) : json_null());
    json_object_set_new(sec, "lambda_lo", f.fitted ? jnum(f.lo) : json_null());
    json_object_set_new(sec, "lambda_hi", f.fitted ? jnum(f.hi) : json_null());
    json_object_set_new(sec, "s0", f.fitted ? jnum(f.s0) : json_null());
    json_object_set_new(sec, "r2", f.fitted ? jnum(f.r2) : json_null());
    json_object_set_new(sec, "birge_ratio", jnum(f.birge));
    json_object_set_new(sec, "grade", f.grade ? json_string(f.grade) : json_null());
    json_object_set_new(sec, "recommended_batch", f.grade ? json_pack("{s:f,s:f,s:s}", "lo", f.range_lo, "hi", f.range_hi,
                                                                      "note", f.range_note) : json_null());
    json_object_set_new(sec, "why", f.why[0] ? json_string(f.why) : json_null());
    json_object_set_new(sec, "levels_used", json_integer((json_int_t)k));
    json_object_set_new(doc, "stability", sec);
    return 0;
}

void sweep_stability_print(FILE *f, const json_t *doc) {
    const json_t *s = json_object_get(doc, "stability");
    if (!json_is_object(s)) return;
    const char *score = json_string_value(json_object_get(s, "score"));
    const char *why = json_string_value(json_object_get(s, "why"));
    if (!json_is_true(json_object_get(s, "fitted"))) {
        fprintf(f, " STABILITY (%s) not graded: %s\n", score ? score : "?", why ? why : "no fit");
        return;
    }
    const json_t *r = json_object_get(s, "recommended_batch");
    fprintf(f, " STABILITY (%s vs batch/64): lambda %.3f [95%% %.3f, %.3f], S0 %.3f -> %s; batch %.0f-%.0f\n",
            score ? score : "?", num(s, "lambda"), num(s, "lambda_lo"), num(s, "lambda_hi"), num(s, "s0"),
            json_string_value(json_object_get(s, "grade")), num(r, "lo"), num(r, "hi"));
    const char *note = json_string_value(json_object_get(r, "note"));
    if (note && *note) fprintf(f, "      (%s)\n", note);
    if (why) fprintf(f, "      (%s)\n", why);
}
