/* infer — is a difference between two runs noise or change? The Mann–Whitney U test on two
 * sample sets (does one distribution sit higher?) and bootstrap confidence intervals for the
 * difference of a statistic (mean, a percentile, std) between them. Used by `dsperf compare`.
 * Seeded, so the same inputs always give the same intervals. */
#ifndef DSP_INFER_H
#define DSP_INFER_H
#include "metrics/sampleset.h"
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

/* Bootstrap percentile interval of the ratio mean(b) / mean(a) (a, b ascending), as
 * infer_bootstrap_diff draws its resamples. 0 ok, -1 empty input, a zero mean or out of memory. */
int infer_bootstrap_ratio(const double *a, size_t na, const double *b, size_t nb, int resamples, double confidence,
                          uint64_t seed, double *lo, double *hi);

/* ---- intervals sized by the runs' true n, from their sample sets ---- */

/* The two-sided standard normal quantile: P(|Z| <= z) = confidence (1.96 for 0.95). */
double infer_z(double confidence);

/* A confidence interval of stat(b) - stat(a) for two independent runs, from their sample sets
 * (every sample of each run, sampleset.h), so its width follows the runs' real n:
 *  - INFER_MEAN: Welch's normal interval, d +- z sqrt(var_a/n_a + var_b/n_b);
 *  - INFER_PERCENTILE (param p): each run's Maritz–Jarrett standard error (the spread of the
 *    order statistics weighted by the Beta distribution of the p-th one's rank; distribution-free,
 *    good at small n where the normal theory of quantiles is not), d +- z sqrt(se_a^2 + se_b^2).
 *    A percentile needs 5 samples beyond it in each run (p99: n >= 500, p99.9: n >= 5,000);
 *    with fewer there is no interval;
 *  - INFER_STD: the delta method, se(s) = sqrt((m4 - s^4) / n) / 2s, combined likewise.
 * These are large-sample intervals; infer_test checks that 95 % intervals cover the true
 * difference about 95 % of the time at n = 500, 5,000 and 50,000. 0 ok; -1 with a one-line why
 * when no interval can be given (why may be NULL). */
int infer_interval_sets(infer_stat s, double param, const sampleset *a, const sampleset *b, double confidence,
                        double *lo, double *hi, char *why, size_t whylen);
/* The smallest n that gives percentile p an interval: 5 samples beyond it (confidence unused). */
uint64_t infer_min_n_for_percentile(double p, double confidence);
/* The regularized incomplete beta function I_x(a, b) (a, b > 0). */
double infer_beta_inc(double a, double b, double x);

/* The statistic over a sample set: the exact mean and (population) std, a percentile read off its
 * buckets (sampleset_percentile). NAN when empty. */
double infer_set_value(infer_stat s, double param, const sampleset *set);

/* The interval of ONE run's statistic from its own sample set (a results history's noise band):
 *  - INFER_MEAN: mean +- z sd / sqrt(n) (sd the sample std);
 *  - INFER_PERCENTILE (param p): the distribution-free order-statistic interval [x_(l), x_(u)]:
 *    the number of samples below the true p-th percentile is Binomial(n, p/100), and l, u are
 *    the ranks that bracket it with the wanted coverage, exactly (infer_beta_inc). A run too
 *    short for a rank on one side (p99 at 95 %: n < 367) has no interval;
 *  - INFER_STD: none (the delta method undercovers one skewed run of a few hundred samples:
 *    91 % for a lognormal at n = 400).
 * 0 ok; -1 with a one-line why (may be NULL) when there is no interval. */
int infer_interval_set_one(infer_stat s, double param, const sampleset *set, double confidence, double *lo, double *hi,
                           char *why, size_t whylen);

/* Mann–Whitney p-value (as infer_mann_whitney_p) over two sample sets: values in one bucket are
 * ties. NAN when either is empty. */
double infer_mann_whitney_sets(const sampleset *a, const sampleset *b);
#endif
