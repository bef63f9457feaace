/* stats — exact descriptive statistics over stored samples: mean, population std, min, max and
 * percentiles with numpy's default "linear" interpolation (so numbers compare with vLLM's, which
 * calls np.percentile). Sort once, query many. +INFINITY samples are allowed (error-adjusted
 * percentiles count a failure as an infinite latency) and sort to the end. */
#ifndef DSP_STATS_H
#define DSP_STATS_H
#include <stddef.h>
#include <stdint.h>

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

/* THE percentile — the one rank-to-value rule every percentile and median in dsperf uses (exact
 * samples, the histograms, bootstrap resamples, sweeps, the simulator's validation): numpy's
 * default "linear" interpolation over n ascending values, p in [0, 100]: h = (n-1)·p/100, lerp
 * between the values of 0-based ranks floor h and ceil h. value_at(ctx, k) gives the value of
 * rank k; it is called with the lower rank first, then (when they differ) the higher one, so a
 * walk that only moves forward serves several ascending p. NAN when n == 0 or p out of range.
 * When the upper neighbour is +inf and the weight on it is not zero (or the lower one is +inf),
 * the answer is +inf (an error-adjusted percentile that reaches the failures). */
typedef double (*stats_rank_value_fn)(void *ctx, uint64_t rank);
double stats_percentile_ranked(uint64_t n, double p, stats_rank_value_fn value_at, void *ctx);

/* stats_percentile_ranked over an ASCENDING array (the median is p = 50). */
double stats_percentile_sorted(const double *sorted, size_t n, double p);

/* Chan et al.'s combination of two sets' means and sums of squared deviations: (*mean, *m2) over
 * n samples merged with (mean_b, m2_b) over n_b (both n > 0); exact up to double rounding. */
void stats_merge_moments(double *mean, double *m2, double n, double mean_b, double m2_b, double n_b);

#endif
