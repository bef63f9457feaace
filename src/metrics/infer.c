/* infer — Mann–Whitney U and bootstrap intervals (see infer.h). */
#include "metrics/infer.h"
#include "metrics/stats.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stdbool.h>

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

/* One resample of v (ascending, n values) drawn as counts, and the statistic over it. */
static double resample_stat(infer_stat s, double param, const double *v, size_t n, uint32_t *counts, rng *r) {
    memset(counts, 0, n * sizeof *counts);
    for (size_t k = 0; k < n; k++) counts[rng_below(r, n)]++;
    if (s == INFER_PERCENTILE) {
        double h = (double)(n - 1) * param / 100.0;
        size_t lo = (size_t)floor(h);
        double t = h - (double)lo;
        double x = value_at_rank(v, counts, n, lo);
        if (t == 0 || lo + 1 >= n) return x;
        return stats_lerp(x, value_at_rank(v, counts, n, lo + 1), t);
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
