/* infer — Mann–Whitney U and bootstrap intervals (see infer.h). */
#include "metrics/infer.h"
#include "metrics/stats.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>
#include <stdio.h>

static int cmp_double(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

double infer_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb, double *u_a) {
    if (u_a) *u_a = NAN;
    if (!na || !nb) return NAN;
    size_t n = na + nb;
    typedef struct { double v; int from_a; } item;
    item *all = malloc(n * sizeof *all);
    if (!all) return NAN;
    for (size_t i = 0; i < na; i++) all[i] = (item){ a[i], 1 };
    for (size_t i = 0; i < nb; i++) all[na + i] = (item){ b[i], 0 };
    qsort(all, n, sizeof *all, cmp_double);   /* item starts with the double */
    /* ranks 1..n, ties get their average rank; tie term sum(t^3 - t) for the variance */
    double rank_sum_a = 0, tie_term = 0;
    for (size_t i = 0; i < n;) {
        size_t j = i;
        while (j + 1 < n && all[j + 1].v == all[i].v) j++;
        double avg_rank = ((double)i + (double)j) / 2.0 + 1.0, t = (double)(j - i + 1);
        for (size_t k = i; k <= j; k++) if (all[k].from_a) rank_sum_a += avg_rank;
        tie_term += t * t * t - t;
        i = j + 1;
    }
    free(all);
    double n1 = (double)na, n2 = (double)nb, nn = (double)n;
    double u = rank_sum_a - n1 * (n1 + 1) / 2.0;
    if (u_a) *u_a = u;
    double mu = n1 * n2 / 2.0;
    double var = n1 * n2 / 12.0 * ((nn + 1) - tie_term / (nn * (nn - 1)));
    if (var <= 0) return 1.0;
    double z = (fabs(u - mu) - 0.5) / sqrt(var);
    if (z < 0) z = 0;
    double p = erfc(z / sqrt(2.0));   /* two-sided: 2 * (1 - Phi(z)) */
    return p > 1 ? 1 : p;
}

double infer_stat_value(infer_stat s, double param, const double *sorted, size_t n) {
    if (!n) return NAN;
    switch (s) {
    case INFER_MEAN: return stats_mean(sorted, n);
    case INFER_STD: return stats_std(sorted, n);
    case INFER_PERCENTILE: return stats_percentile_sorted(sorted, n, param);
    }
    return NAN;
}

/* The value at 0-based rank r of a resample given as counts per (ascending) value. */
static double value_at_rank(const double *v, const uint32_t *counts, size_t n, size_t r) {
    size_t cum = 0;
    for (size_t i = 0; i < n; i++) {
        cum += counts[i];
        if (r < cum) return v[i];
    }
    return v[n - 1];
}

typedef struct { const double *v; const uint32_t *counts; size_t n; } resample_ctx;

static double resample_value(void *ctx, uint64_t rank) {
    const resample_ctx *x = ctx;
    return value_at_rank(x->v, x->counts, x->n, (size_t)rank);
}

/* One resample of v (ascending, n values) drawn as counts, and the statistic over it. */
static double resample_stat(infer_stat s, double param, const double *v, size_t n, uint32_t *counts, rng *r) {
    memset(counts, 0, n * sizeof *counts);
    for (size_t k = 0; k < n; k++) counts[rng_below(r, n)]++;
    if (s == INFER_PERCENTILE) {
        resample_ctx x = { v, counts, n };
        return stats_percentile_ranked(n, param, resample_value, &x);
    }
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += counts[i] * v[i];
    double mean = sum / (double)n;
    if (s == INFER_MEAN) return mean;
    double ss = 0;
    for (size_t i = 0; i < n; i++) ss += counts[i] * (v[i] - mean) * (v[i] - mean);
    return sqrt(ss / (double)n);
}

int infer_bootstrap_diff(infer_stat s, double param, const double *a, size_t na, const double *b, size_t nb,
                         int resamples, double confidence, uint64_t seed, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (!na || !nb || resamples < 2) return -1;
    uint32_t *counts = malloc((na > nb ? na : nb) * sizeof *counts);
    double *diff = malloc((size_t)resamples * sizeof *diff);
    if (!counts || !diff) { free(counts); free(diff); return -1; }
    rng r;
    rng_seed(&r, seed);
    for (int k = 0; k < resamples; k++) {
        double sa = resample_stat(s, param, a, na, counts, &r);
        double sb = resample_stat(s, param, b, nb, counts, &r);
        diff[k] = sb - sa;
    }
    qsort(diff, (size_t)resamples, sizeof *diff, cmp_double);
    double tail = (1.0 - confidence) / 2.0 * 100.0;
    *lo = stats_percentile_sorted(diff, (size_t)resamples, tail);
    *hi = stats_percentile_sorted(diff, (size_t)resamples, 100.0 - tail);
    free(counts);
    free(diff);
    return 0;
}

/* Least-squares slope and intercept; false when x is constant. */
static bool ls_line(const double *x, const double *y, size_t n, double *b, double *a) {
    double mx = 0, my = 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) { mx += x[i]; my += y[i]; }
    mx /= (double)n;
    my /= (double)n;
    for (size_t i = 0; i < n; i++) { sxx += (x[i] - mx) * (x[i] - mx); sxy += (x[i] - mx) * (y[i] - my); }
    if (!(sxx > 0)) return false;
    *b = sxy / sxx;
    *a = my - *b * mx;
    return true;
}

/* HC3 standard error of the least-squares slope: sum (x_i - mean)^2 e_i^2 / (1 - h_i)^2 / Sxx^2. */
static double hc3_se(const double *x, const double *y, size_t n, double a, double b, double mx, double sxx) {
    double v = 0;
    for (size_t i = 0; i < n; i++) {
        double h = 1.0 / (double)n + (x[i] - mx) * (x[i] - mx) / sxx, e = (y[i] - (a + b * x[i])) / (h < 1 ? 1 - h : 1e-12);
        v += (x[i] - mx) * (x[i] - mx) * e * e;
    }
    return sqrt(v) / sxx;
}

int infer_bootstrap_slope(const double *x, const double *y, const double *sigma, size_t n, int resamples,
                          double confidence, uint64_t seed, double *slope, double *lo, double *hi, double *birge) {
    *slope = *lo = *hi = NAN;
    if (birge) *birge = 1;
    double a, b;
    if (n < 3 || resamples < 2 || !ls_line(x, y, n, &b, &a)) return -1;
    for (size_t i = 0; sigma && i < n; i++) if (!(sigma[i] > 0)) return -1;
    *slope = b;
    double *r = malloc(n * sizeof *r), *ys = malloc(n * sizeof *ys), *bs = malloc((size_t)resamples * sizeof *bs);
    if (!r || !ys || !bs) { free(r); free(ys); free(bs); return -1; }
    double mx = 0, sxx = 0, chi2 = 0;
    for (size_t i = 0; i < n; i++) mx += x[i];
    mx /= (double)n;
    for (size_t i = 0; i < n; i++) sxx += (x[i] - mx) * (x[i] - mx);
    for (size_t i = 0; i < n; i++) {
        double res = y[i] - (a + b * x[i]);
        if (sigma) { chi2 += res * res / (sigma[i] * sigma[i]); continue; }
        double h = 1.0 / (double)n + (x[i] - mx) * (x[i] - mx) / sxx;    /* leverage */
        r[i] = res / (h < 1 ? 1 - h : 1e-12);
    }
    double R = sigma ? sqrt(chi2 / (double)(n - 2)) : 1;
    if (R < 1) R = 1;
    if (birge) *birge = R;
    double se = sigma ? NAN : hc3_se(x, y, n, a, b, mx, sxx);
    /* Webb's six-point weights: mean 0, variance 1, better than +-1 at few points */
    const double webb[6] = { -sqrt(1.5), -1, -sqrt(0.5), sqrt(0.5), 1, sqrt(1.5) };
    if (!sigma && !(se > 0)) {   /* the points lie on the line: nothing to resample */
        *lo = *hi = b;
        free(r); free(ys); free(bs);
        return 0;
    }
    rng g;
    rng_seed(&g, seed);
    int k = 0;
    for (int it = 0; it < resamples; it++) {
        for (size_t i = 0; i < n; i++)
            ys[i] = a + b * x[i] + (sigma ? R * sigma[i] * rng_normal(&g) : r[i] * webb[rng_below(&g, 6)]);
        double bb, aa;
        if (!ls_line(x, ys, n, &bb, &aa)) continue;
        if (sigma) { bs[k++] = bb; continue; }
        /* wild bootstrap-t: the replicate's slope studentized by its own HC3 error */
        double se_b = hc3_se(x, ys, n, aa, bb, mx, sxx);
        if (se_b > 0) bs[k++] = (bb - b) / se_b;
    }
    if (k >= 2) {
        qsort(bs, (size_t)k, sizeof *bs, cmp_double);
        double tail = (1.0 - confidence) / 2.0 * 100.0;
        double ql = stats_percentile_sorted(bs, (size_t)k, tail), qh = stats_percentile_sorted(bs, (size_t)k, 100.0 - tail);
        if (sigma) { *lo = ql; *hi = qh; }
        else { *lo = b - qh * se; *hi = b - ql * se; }
    }
    free(r);
    free(ys);
    free(bs);
    return k >= 2 ? 0 : -1;
}

int infer_bootstrap_ratio(const double *a, size_t na, const double *b, size_t nb, int resamples, double confidence,
                          uint64_t seed, double *lo, double *hi) {
    *lo = *hi = NAN;
    if (!na || !nb || resamples < 2) return -1;
    uint32_t *counts = malloc((na > nb ? na : nb) * sizeof *counts);
    double *ratio = malloc((size_t)resamples * sizeof *ratio);
    if (!counts || !ratio) { free(counts); free(ratio); return -1; }
    rng r;
    rng_seed(&r, seed);
    int k = 0;
    for (int i = 0; i < resamples; i++) {
        double sa = resample_stat(INFER_MEAN, 0, a, na, counts, &r);
        double sb = resample_stat(INFER_MEAN, 0, b, nb, counts, &r);
        if (sa > 0) ratio[k++] = sb / sa;
    }
    int rc = -1;
    if (k >= 2) {
        qsort(ratio, (size_t)k, sizeof *ratio, cmp_double);
        double tail = (1.0 - confidence) / 2.0 * 100.0;
        *lo = stats_percentile_sorted(ratio, (size_t)k, tail);
        *hi = stats_percentile_sorted(ratio, (size_t)k, 100.0 - tail);
        rc = 0;
    }
    free(counts);
    free(ratio);
    return rc;
}

/* ---- intervals from sample sets ---- */

double infer_z(double confidence) {
    /* erfc(z / sqrt 2) = 1 - confidence, by bisection (erfc falls monotonically) */
    double target = 1.0 - confidence, lo = 0, hi = 40;
    if (!(target > 0 && target < 1)) return NAN;
    for (int i = 0; i < 200; i++) {
        double mid = 0.5 * (lo + hi);
        if (erfc(mid / sqrt(2.0)) > target) lo = mid; else hi = mid;
    }
    return 0.5 * (lo + hi);
}

/* The regularized incomplete beta function I_x(a, b), by its continued fraction (modified Lentz),
 * on the side of x where it converges fast. I_x(k, n - k + 1) = P(Binomial(n, x) >= k). */
static double beta_cf(double a, double b, double x) {
    const double tiny = 1e-300;
    double c = 1, d = 1 - (a + b) * x / (a + 1);
    if (fabs(d) < tiny) d = tiny;
    d = 1 / d;
    double h = d;
    for (int m = 1; m <= 500; m++) {
        double m2 = 2.0 * m, num = m * (b - m) * x / ((a - 1 + m2) * (a + m2));
        d = 1 + num * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + num / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        h *= d * c;
        num = -(a + m) * (a + b + m) * x / ((a + m2) * (a + 1 + m2));
        d = 1 + num * d; if (fabs(d) < tiny) d = tiny;
        c = 1 + num / c; if (fabs(c) < tiny) c = tiny;
        d = 1 / d;
        double del = d * c;
        h *= del;
        if (fabs(del - 1) < 1e-15) break;
    }
    return h;
}

double infer_beta_inc(double a, double b, double x) {
    if (!(x > 0)) return 0;
    if (!(x < 1)) return 1;
    double front = exp(lgamma(a + b) - lgamma(a) - lgamma(b) + a * log(x) + b * log1p(-x));
    if (x < (a + 1) / (a + b + 2)) return front * beta_cf(a, b, x) / a;
    return 1 - front * beta_cf(b, a, 1 - x) / b;
}

/* A percentile needs this many samples beyond it, on its far side, for a standard error. */
#define TAIL_SAMPLES 5

uint64_t infer_min_n_for_percentile(double p, double confidence) {
    (void)confidence;
    double q = p / 100, tail = q < 0.5 ? q : 1 - q;
    return tail > 0 ? (uint64_t)ceil(TAIL_SAMPLES / tail - 1e-9) : UINT64_MAX;
}

/* Maritz–Jarrett standard error of the numpy-linear percentile p: the spread of the order
 * statistics under Beta(m-1, n-m) weights, m = round(n q), each bucket weighted by the Beta mass
 * of the ranks it holds. NAN when fewer than TAIL_SAMPLES samples lie beyond the percentile. */
static double mj_se(const sampleset *s, double p) {
    double n = (double)s->n, q = p / 100, m = floor(n * q + 0.5), a = m - 1, b = n - m;
    if (n < (double)infer_min_n_for_percentile(p, 0) || a < 1 || b < 1) return NAN;
    double c1 = 0, c2 = 0, prev = 0;
    uint64_t cum = 0;
    for (size_t i = 0; i < s->nb; i++) {
        cum += s->cnt[i];
        double cdf = infer_beta_inc(a, b, (double)cum / n), w = cdf - prev;
        prev = cdf;
        if (w <= 0) continue;
        double x = sampleset_bucket_value(s, i);
        c1 += w * x;
        c2 += w * x * x;
    }
    double v = c2 - c1 * c1;
    return v > 0 ? sqrt(v) : 0;
}

/* The 4th central moment over the buckets (values at their bucket's midpoint). */
static double central_m4(const sampleset *s) {
    double m4 = 0;
    for (size_t i = 0; i < s->nb; i++) {
        double d = sampleset_bucket_value(s, i) - s->mean;
        m4 += (double)s->cnt[i] * d * d * d * d;
    }
    return m4 / (double)s->n;
}

double infer_set_value(infer_stat st, double param, const sampleset *s) {
    return st == INFER_MEAN ? sampleset_mean(s) : st == INFER_STD ? sampleset_std(s) : sampleset_percentile(s, param);
}

/* One run's standard error of the statistic; NAN with why when it has none. */
static double set_se(infer_stat st, double param, const sampleset *s, char *why, size_t whylen, const char *which) {
    if (s->n < 2) {
        if (why) snprintf(why, whylen, "the %s run has %llu sample%s", which, (unsigned long long)s->n, s->n == 1 ? "" : "s");
        return NAN;
    }
    if (st == INFER_MEAN) return sqrt(sampleset_var(s) / (double)s->n);
    if (st == INFER_STD) {
        double var = s->m2 / (double)s->n, sd = sqrt(var), v4 = central_m4(s) - var * var;
        return sd > 0 && v4 > 0 ? sqrt(v4 / (double)s->n) / (2 * sd) : 0;
    }
    double se = mj_se(s, param);
    if (!isfinite(se) && why)
        snprintf(why, whylen, "p%g needs >= %llu samples per run for an interval (%d beyond it), the %s run has %llu", param,
                 (unsigned long long)infer_min_n_for_percentile(param, 0), TAIL_SAMPLES, which, (unsigned long long)s->n);
    return se;
}

int infer_interval_sets(infer_stat st, double param, const sampleset *a, const sampleset *b, double confidence,
                        double *lo, double *hi, char *why, size_t whylen) {
    *lo = *hi = NAN;
    double z = infer_z(confidence);
    if (!isfinite(z)) { if (why) snprintf(why, whylen, "bad confidence %g", confidence); return -1; }
    double se_a = set_se(st, param, a, why, whylen, "baseline");
    if (!isfinite(se_a)) return -1;
    double se_b = set_se(st, param, b, why, whylen, "candidate");
    if (!isfinite(se_b)) return -1;
    double d = infer_set_value(st, param, b) - infer_set_value(st, param, a), half = z * sqrt(se_a * se_a + se_b * se_b);
    *lo = d - half;
    *hi = d + half;
    return 0;
}

/* P(X >= k) for X ~ Binomial(n, q), 1 <= k <= n. */
static double binom_tail(uint64_t n, double q, uint64_t k) { return infer_beta_inc((double)k, (double)(n - k + 1), q); }

/* The 1-based rank k in [1, n] where P(X >= k) last stays >= target (P falls as k grows); 0 when
 * even k = 1 falls short. */
static uint64_t last_rank_at_least(uint64_t n, double q, double target) {
    if (binom_tail(n, q, 1) < target) return 0;
    uint64_t lo = 1, hi = n;          /* P(X >= lo) >= target */
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo + 1) / 2;
        if (binom_tail(n, q, mid) >= target) lo = mid; else hi = mid - 1;
    }
    return lo;
}

int infer_interval_set_one(infer_stat st, double param, const sampleset *s, double confidence, double *lo, double *hi,
                           char *why, size_t whylen) {
    *lo = *hi = NAN;
    double z = infer_z(confidence), x = infer_set_value(st, param, s);
    if (!isfinite(z)) { if (why) snprintf(why, whylen, "bad confidence %g", confidence); return -1; }
    if (st == INFER_STD) {   /* the delta method undercovers a single skewed run below ~1,000 samples */
        if (why) snprintf(why, whylen, "no one-run interval of a std");
        return -1;
    }
    if (st == INFER_MEAN) {
        if (s->n < 2) {
            if (why) snprintf(why, whylen, "%llu sample%s: no interval", (unsigned long long)s->n, s->n == 1 ? "" : "s");
            return -1;
        }
        double se = sqrt(sampleset_var(s) / (double)s->n);
        *lo = x - z * se;
        *hi = x + z * se;
        return 0;
    }
    /* [x_(l), x_(u)] holds the true quantile unless fewer than l or at least u of the n samples lie
     * below it: with X ~ Binomial(n, q) samples below, l is the last rank with P(X >= l) >= 1 - a/2
     * and u the first with P(X >= u) < a/2 */
    double q = param / 100, tail = (1 - confidence) / 2;
    uint64_t n = s->n, l = n ? last_rank_at_least(n, q, 1 - tail) : 0, u = n ? last_rank_at_least(n, q, tail) + 1 : 0;
    if (!(q > 0 && q < 1) || l < 1 || u > n) {
        if (why) snprintf(why, whylen, "p%g needs more than %llu samples for a distribution-free %g%% interval", param,
                          (unsigned long long)n, confidence * 100);
        return -1;
    }
    *lo = sampleset_at_rank(s, l - 1);
    *hi = sampleset_at_rank(s, u - 1);
    return 0;
}

double infer_mann_whitney_sets(const sampleset *a, const sampleset *b) {
    if (!a->n || !b->n) return NAN;
    double u = 0, tie = 0, b_below = 0;
    size_t i = 0, j = 0;
    while (i < a->nb || j < b->nb) {
        double ca = 0, cb = 0;
        uint32_t k = i < a->nb && (j == b->nb || a->idx[i] <= b->idx[j]) ? a->idx[i] : b->idx[j];
        if (i < a->nb && a->idx[i] == k) ca = (double)a->cnt[i++];
        if (j < b->nb && b->idx[j] == k) cb = (double)b->cnt[j++];
        u += ca * (b_below + cb / 2.0);     /* pairs with a > b, ties 1/2 */
        double t = ca + cb;
        tie += t * t * t - t;
        b_below += cb;
    }
    double n1 = (double)a->n, n2 = (double)b->n, nn = n1 + n2;
    double var = n1 * n2 / 12.0 * ((nn + 1) - tie / (nn * (nn - 1)));
    if (var <= 0) return 1.0;
    double zz = (fabs(u - n1 * n2 / 2.0) - 0.5) / sqrt(var);
    if (zz < 0) zz = 0;
    double p = erfc(zz / sqrt(2.0));
    return p > 1 ? 1 : p;
}
