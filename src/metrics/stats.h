/* stats — exact descriptive statistics over stored samples: mean, population std, min, max and
 * percentiles with numpy's default "linear" interpolation (so numbers compare with vLLM's, which
 * calls np.percentile). Sort once, query many. +INFINITY samples are allowed (error-adjusted
 * percentiles count a failure as an infinite latency) and sort to the end. */
#ifndef DSP_STATS_H
#define DSP_STATS_H
#include <stddef.h>

/* A growable sample array. */
typedef struct {
    double *v;
    size_t n, cap;
    int sorted;            /* 1 after stats_sort() until the next add */
} stats_samples;

void stats_init(stats_samples *s);
void stats_free(stats_samples *s);
/* Appends one sample. 0 ok, -1 out of memory. */
int stats_add(stats_samples *s, double x);
/* Sorts ascending (in place); idempotent. */
void stats_sort(stats_samples *s);

/* Over n values (n == 0 gives NAN). Mean and std are two-pass (mean first, then the sum of
 * squared deviations), which keeps the population std accurate when the spread is tiny. */
double stats_mean(const double *v, size_t n);
double stats_std(const double *v, size_t n);
double stats_min(const double *v, size_t n);
double stats_max(const double *v, size_t n);

/* numpy "linear" percentile over ASCENDING values, p in [0, 100]: h = (n-1)·p/100, lerp between
 * sorted[floor h] and sorted[ceil h]. NAN when n == 0 or p out of range. When the upper
 * neighbour is +inf and the weight on it is not zero (or the lower one is +inf), the answer is
 * +inf. */
double stats_percentile_sorted(const double *sorted, size_t n, double p);

/* Chan et al.'s combination of two sets' means and sums of squared deviations: (*mean, *m2) over
 * n samples merged with (mean_b, m2_b) over n_b (both n > 0); exact up to double rounding. */
void stats_merge_moments(double *mean, double *m2, double n, double mean_b, double m2_b, double n_b);

/* numpy's lerp a + (b-a)·t, evaluated from b's side when t >= 0.5 (numpy does the same so that
 * t = 1 gives b exactly); shared with the histogram. */
double stats_lerp(double a, double b, double t);
#endif
