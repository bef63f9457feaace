/* stats — exact statistics over stored samples (see stats.h). */
#include "metrics/stats.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void stats_init(stats_samples *s) { memset(s, 0, sizeof *s); }

void stats_free(stats_samples *s) {
    free(s->v);
    memset(s, 0, sizeof *s);
}

int stats_add(stats_samples *s, double x) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 256;
        double *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return -1;
        s->v = nv;
        s->cap = nc;
    }
    s->v[s->n++] = x;
    s->sorted = 0;
    return 0;
}

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

void stats_sort(stats_samples *s) {
    if (!s->sorted && s->n > 1) qsort(s->v, s->n, sizeof *s->v, cmp_double);
    s->sorted = 1;
}

double stats_mean(const double *v, size_t n) {
    if (n == 0) return NAN;
    double sum = 0;
    for (size_t i = 0; i < n; i++) sum += v[i];
    return sum / (double)n;
}

double stats_std(const double *v, size_t n) {
    if (n == 0) return NAN;
    double m = stats_mean(v, n), ss = 0;
    for (size_t i = 0; i < n; i++) ss += (v[i] - m) * (v[i] - m);
    return sqrt(ss / (double)n);
}

double stats_min(const double *v, size_t n) {
    if (n == 0) return NAN;
    double m = v[0];
    for (size_t i = 1; i < n; i++) if (v[i] < m) m = v[i];
    return m;
}

double stats_max(const double *v, size_t n) {
    if (n == 0) return NAN;
    double m = v[0];
    for (size_t i = 1; i < n; i++) if (v[i] > m) m = v[i];
    return m;
}

/* numpy's lerp a + (b-a)·t, evaluated from b's side when t >= 0.5 (numpy does the same so that
 * t = 1 gives b exactly). */
static double lerp(double a, double b, double t) {
    double d = b - a;
    return t >= 0.5 ? b - d * (1.0 - t) : a + d * t;
}

double stats_percentile_ranked(uint64_t n, double p, stats_rank_value_fn value_at, void *ctx) {
    if (n == 0 || !(p >= 0.0 && p <= 100.0)) return NAN;
    double h = (double)(n - 1) * (p / 100.0);
    uint64_t lo = (uint64_t)floor(h), hi = (uint64_t)ceil(h);
    if (hi >= n) hi = n - 1;
    if (lo > hi) lo = hi;
    double t = h - (double)lo, a = value_at(ctx, lo);
    if (isinf(a) || hi == lo) return a;
    double b = value_at(ctx, hi);
    if (isinf(b)) return t > 0.0 ? b : a;
    return lerp(a, b, t);
}

static double array_value(void *ctx, uint64_t rank) { return ((const double *)ctx)[rank]; }

double stats_percentile_sorted(const double *sorted, size_t n, double p) {
    return stats_percentile_ranked(n, p, array_value, (void *)sorted);
}

void stats_merge_moments(double *mean, double *m2, double n, double mean_b, double m2_b, double n_b) {
    double nt = n + n_b, d = mean_b - *mean;
    *mean += d * n_b / nt;
    *m2 += m2_b + d * d * n * n_b / nt;
}
