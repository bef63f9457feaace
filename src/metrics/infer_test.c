/* Tests of infer: Mann–Whitney p-values against the closed form (scipy's asymptotic method), and
 * bootstrap intervals that cover a known shift and exclude it when there is none. */
#include "harness.h"
#include "metrics/infer.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>

TEST(infer_mann_whitney_known_values) {
    double x[] = {1, 2, 3, 4, 5}, y[] = {6, 7, 8, 9, 10}, u;
    /* U = 0; z = (12.5 - 0.5) / sqrt(25 * 11 / 12); p = erfc(z / sqrt 2) */
    CHECK_NEAR(infer_mann_whitney_p(x, 5, y, 5, &u), 0.012185780355344818, 1e-12);
    CHECK_NEAR(u, 0, 0);
    CHECK_NEAR(infer_mann_whitney_p(y, 5, x, 5, &u), 0.012185780355344818, 1e-12);   /* symmetric */
    CHECK_NEAR(u, 25, 0);
    /* ties get average ranks and shrink the variance */
    double a[] = {1, 2, 2, 3, 4}, b[] = {2, 3, 3, 5, 6};
    CHECK_NEAR(infer_mann_whitney_p(a, 5, b, 5, &u), 0.19882894401644238, 1e-12);
    CHECK_NEAR(u, 6, 0);
    double same[] = {3, 3, 3};
    CHECK_NEAR(infer_mann_whitney_p(same, 3, same, 3, NULL), 1.0, 0);
    CHECK(isnan(infer_mann_whitney_p(a, 0, b, 5, NULL)));
}

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static double *normal_sorted(size_t n, double mean, double sd, uint64_t seed) {
    rng r;
    rng_seed(&r, seed);
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = mean + sd * rng_normal(&r);
    qsort(v, n, sizeof *v, cmp_d);
    return v;
}

TEST(infer_bootstrap_covers_a_shift_and_not_noise) {
    size_t n = 800;
    double *base = normal_sorted(n, 100, 10, 1), *worse = normal_sorted(n, 110, 10, 2), *same = normal_sorted(n, 100, 10, 3);
    double lo, hi;
    /* mean: the standard error of the difference is 10*sqrt(2/800) = 0.5, so the 95% interval is
     * about +-1 around the observed difference */
    CHECK_EQ_INT(infer_bootstrap_diff(INFER_MEAN, 0, base, n, worse, n, 1000, 0.95, 7, &lo, &hi), 0);
    CHECK_MSG(lo > 8 && hi < 12 && lo < hi, "mean shift 10: [%g, %g]", lo, hi);
    CHECK_MSG(hi - lo > 1.2 && hi - lo < 2.8, "width %g (expected ~2)", hi - lo);
    CHECK_EQ_INT(infer_bootstrap_diff(INFER_MEAN, 0, base, n, same, n, 1000, 0.95, 7, &lo, &hi), 0);
    CHECK_MSG(lo < 0 && hi > 0, "no shift: [%g, %g] should hold 0", lo, hi);
    /* p90 moves with the shift too */
    CHECK_EQ_INT(infer_bootstrap_diff(INFER_PERCENTILE, 90, base, n, worse, n, 1000, 0.95, 7, &lo, &hi), 0);
    CHECK_MSG(lo > 5 && hi < 15, "p90 shift 10: [%g, %g]", lo, hi);
    /* the same seed gives the same interval */
    double lo2, hi2;
    infer_bootstrap_diff(INFER_PERCENTILE, 90, base, n, worse, n, 1000, 0.95, 7, &lo2, &hi2);
    CHECK(lo == lo2 && hi == hi2);
    /* std: the worse set has the same spread */
    CHECK_EQ_INT(infer_bootstrap_diff(INFER_STD, 0, base, n, worse, n, 1000, 0.95, 7, &lo, &hi), 0);
    CHECK_MSG(lo < 0 && hi > 0, "std unchanged: [%g, %g]", lo, hi);
    CHECK_EQ_INT(infer_bootstrap_diff(INFER_MEAN, 0, base, 0, worse, n, 1000, 0.95, 7, &lo, &hi), -1);
    CHECK_NEAR(infer_stat_value(INFER_PERCENTILE, 50, (double[]){1, 2, 3, 4}, 4), 2.5, 0);
    free(base); free(worse); free(same);
}
