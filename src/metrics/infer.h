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

/* Bootstrap percentile interval of the least-squares slope of y on x. The design x is fixed (a
 * sweep chose its levels), so each round keeps x and redraws y around the fitted line:
 *  - sigma given (each y's own standard error, from its level's samples): y* = fit + R sigma_i z,
 *    z standard normal, R = max(1, Birge ratio sqrt(sum (r_i / sigma_i)^2 / (n - 2))) — the points'
 *    own noise, widened when they scatter around the line more than it explains (a model that
 *    does not fit, or noise the sigmas miss);
 *  - sigma NULL: the wild bootstrap-t, y*_i = fit_i + v r_i / (1 - h_i) with Webb's six-point v
 *    (each point keeps its own residual's size, so points noisier than others stay so; h_i the
 *    leverage), each replicate's slope studentized by its HC3 standard error, the interval
 *    slope - t* x HC3 error (studentizing keeps the coverage near the claim at 10-20 points).
 * *slope gets the fit, *birge the ratio R (1 without sigma). 0 ok; -1 with fewer than 3 points, x
 * constant, a sigma that is not > 0, or out of memory. */
int infer_bootstrap_slope(const double *x, const double *y, const double *sigma, size_t n, int resamples,
                          double confidence, uint64_t seed, double *slope, double *lo, double *hi, double *birge);
#endif
