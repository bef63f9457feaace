/* infer — Mann–Whitney U and bootstrap intervals (see infer.h). */
#include "metrics/infer.h"
#include "metrics/stats.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

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

/* The standard normal quantile, by bisection on erfc (a few dozen steps; called per metric, not
 * per sample). */
static double normal_quantile(double p) {
    double lo = -10, hi = 10;
    for (int i = 0; i < 100; i++) {
        double mid = (lo + hi) / 2;
        if (0.5 * erfc(-mid / sqrt(2.0)) < p) lo = mid; else hi = mid;
    }
    return (lo + hi) / 2;
}

int infer_interval_one(infer_stat s, double param, const double *sorted, size_t n, size_t n_run, double confidence,
                       double *lo, double *hi) {
    *lo = *hi = NAN;
    if (!n || s == INFER_STD || !(confidence > 0 && confidence < 1)) return -1;
    if (n_run < n) n_run = n;
    double z = normal_quantile(0.5 + confidence / 2);
    if (s == INFER_MEAN) {
        double m = stats_mean(sorted, n), half = z * stats_std(sorted, n) / sqrt((double)n_run);
        *lo = m - half;
        *hi = m + half;
        return 0;
    }
    /* the order statistics that bracket the q-quantile with the wanted coverage: the rank of the
     * quantile among n_run draws is Binomial(n_run, q), so the levels q -/+ z sqrt(q(1-q)/n_run) */
    double q = param / 100.0, w = z * sqrt(q * (1 - q) / (double)n_run);
    double ql = q - w < 0 ? 0 : q - w, qh = q + w > 1 ? 1 : q + w;
    *lo = stats_percentile_sorted(sorted, n, ql * 100);
    *hi = stats_percentile_sorted(sorted, n, qh * 100);
    return 0;
}
