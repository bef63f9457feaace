/* infer — is a difference between two runs noise or change? The Mann–Whitney U test on two
 * sample sets (does one distribution sit higher?) and bootstrap confidence intervals for the
 * difference of a statistic (mean, a percentile, std) between them. Used by `dsperf compare`.
 * Seeded, so the same inputs always give the same intervals. */
#ifndef DSP_INFER_H
#define DSP_INFER_H
#include <stddef.h>
#include <stdint.h>

/* Two-sided p-value of the Mann–Whitney U test, normal approximation with the tie correction and
 * the 0.5 continuity correction (scipy.stats.mannwhitneyu(method="asymptotic")). *u_a (may be
 * NULL) gets U of a: the number of pairs (x in a, y in b) with x > y, ties counting 1/2. NAN when
 * either set is empty; 1 when every value is tied. a and b need not be sorted. */
double infer_mann_whitney_p(const double *a, size_t na, const double *b, size_t nb, double *u_a);

typedef enum { INFER_MEAN, INFER_PERCENTILE, INFER_STD } infer_stat;

/* The statistic over ASCENDING values (param: the percentile 0..100 for INFER_PERCENTILE;
 * percentiles are numpy-linear, std is the population std, as in stats.h). NAN when n == 0. */
double infer_stat_value(infer_stat s, double param, const double *sorted, size_t n);

/* Bootstrap percentile interval of stat(b) - stat(a): each of `resamples` rounds draws na values
 * from a and nb from b with replacement; [*lo, *hi] are the (1-confidence)/2 and (1+confidence)/2
 * quantiles of the differences. a and b must be ASCENDING. O((na + nb) * resamples) time (a
 * resample is drawn as counts per value, so no sorting). 0 ok, -1 empty input or out of memory. */
int infer_bootstrap_diff(infer_stat s, double param, const double *a, size_t na, const double *b, size_t nb,
                         int resamples, double confidence, uint64_t seed, double *lo, double *hi);

/* The interval of ONE run's statistic from its own ascending samples (a history's noise band):
 * a percentile by the distribution-free order-statistic interval (levels q -/+ z sqrt(q(1-q)/N),
 * read off the samples), the mean by its normal interval (mean -/+ z std / sqrt(N)). The samples
 * are every value (n == n_run) or n evenly spaced quantiles of n_run values; N is n_run. No
 * interval for INFER_STD. 0 ok, -1 empty input or no interval. */
int infer_interval_one(infer_stat s, double param, const double *sorted, size_t n, size_t n_run, double confidence,
                       double *lo, double *hi);
#endif
