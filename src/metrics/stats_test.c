/* Tests for stats (numpy "linear" percentiles, mean/std) and hdr (error bound, merge). Expected
 * percentiles are worked out by hand with numpy's rule h = (n-1)·p/100, lerp(sorted[floor h],
 * sorted[ceil h], h - floor h); each constant carries its derivation. */
#include "harness.h"
#include "metrics/stats.h"
#include "metrics/hdr.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double pct(stats_samples *s, double p) {
    stats_sort(s);
    return stats_percentile_sorted(s->v, s->n, p);
}

TEST(metrics_stats_percentiles_numpy_linear) {
    stats_samples s;
    stats_init(&s);
    const double a[] = { 3, 1, 4, 1, 5, 9, 2, 6 };     /* sorted: 1 1 2 3 4 5 6 9 */
    for (size_t i = 0; i < 8; i++) CHECK(stats_add(&s, a[i]) == 0);
    CHECK_NEAR(pct(&s, 0), 1.0, 1e-12);
    CHECK_NEAR(pct(&s, 25), 1.75, 1e-12);    /* h=1.75: 1 + .75·(2-1) */
    CHECK_NEAR(pct(&s, 50), 3.5, 1e-12);     /* h=3.5: 3 + .5·(4-3) = np.median */
    CHECK_NEAR(pct(&s, 90), 6.9, 1e-12);     /* h=6.3: 6 + .3·(9-6) */
    CHECK_NEAR(pct(&s, 99), 8.79, 1e-12);    /* h=6.93: 6 + .93·3 */
    CHECK_NEAR(pct(&s, 99.9), 8.979, 1e-12); /* h=6.993: 6 + .993·3 */
    CHECK_NEAR(pct(&s, 100), 9.0, 0);
    CHECK(isnan(pct(&s, 100.5)));
    CHECK(isnan(pct(&s, -1)));
    CHECK_NEAR(stats_mean(s.v, s.n), 3.875, 1e-12);
    /* sum of squared deviations 52.875 → population std sqrt(52.875/8) (np.std, ddof=0) */
    CHECK_NEAR(stats_std(s.v, s.n), 2.5708704751503917, 1e-12);
    CHECK_NEAR(stats_min(s.v, s.n), 1, 0);
    CHECK_NEAR(stats_max(s.v, s.n), 9, 0);
    stats_free(&s);

    /* numpy's documented example: np.percentile([[10,7,4],[3,2,1]], 50) = 3.5 */
    stats_init(&s);
    const double b[] = { 10, 7, 4, 3, 2, 1 };
    for (size_t i = 0; i < 6; i++) stats_add(&s, b[i]);
    CHECK_NEAR(pct(&s, 50), 3.5, 1e-12);
    CHECK_NEAR(pct(&s, 75), 6.25, 1e-12);    /* h=3.75: 4 + .75·(7-4) */
    stats_free(&s);

    /* one sample: every percentile is that sample; two: p99 = 10 + .99·10 */
    double one = 7, two[] = { 10, 20 };
    CHECK_NEAR(stats_percentile_sorted(&one, 1, 99.9), 7, 0);
    CHECK_NEAR(stats_percentile_sorted(two, 2, 99), 19.9, 1e-12);
    CHECK_NEAR(stats_std(&one, 1), 0, 0);
    CHECK(isnan(stats_percentile_sorted(NULL, 0, 50)));
    CHECK(isnan(stats_mean(NULL, 0)));
}

TEST(metrics_stats_percentile_infinite_tail) {
    /* error-adjusted view: 3 successes and 1 failure (+inf) → sorted 10 20 30 inf */
    double v[] = { 10, 20, 30, INFINITY };
    CHECK_NEAR(stats_percentile_sorted(v, 4, 50), 25, 1e-12);      /* h=1.5 */
    CHECK_NEAR(stats_percentile_sorted(v, 4, 200.0 / 3), 30, 1e-9); /* h=2 exactly: no weight on inf */
    CHECK(isinf(stats_percentile_sorted(v, 4, 70)));                /* h=2.1: lands on the failure */
    CHECK(isinf(stats_percentile_sorted(v, 4, 100)));
}

TEST(metrics_hdr_buckets) {
    /* identity below 2^(SUB_BITS+1), each bucket contains its value, width <= lo/2^SUB_BITS above */
    const int64_t sub = INT64_C(1) << HDR_SUB_BITS;
    rng r;
    rng_seed(&r, 7);
    for (int64_t v = 0; v < 2 * sub; v++) CHECK_EQ_INT(hdr_bucket_of(v), v);
    for (int i = 0; i < 20000; i++) {
        int64_t v = (int64_t)exp(rng_uniform(&r) * log(2e14));
        int64_t lo, hi;
        size_t b = hdr_bucket_of(v);
        CHECK(b < HDR_BUCKETS);
        hdr_bucket_range(b, &lo, &hi);
        CHECK_MSG(lo <= v && v < hi, "v=%lld in [%lld,%lld)", (long long)v, (long long)lo, (long long)hi);
        if (v >= 2 * sub) CHECK((double)(hi - lo) <= (double)lo / (double)sub);
    }
    /* the top bucket ends at 2^48 */
    int64_t lo, hi;
    hdr_bucket_range(HDR_BUCKETS - 1, &lo, &hi);
    CHECK_EQ_INT(hi, INT64_C(1) << 48);
    CHECK_EQ_INT(hdr_bucket_of(INT64_C(1) << 50), HDR_BUCKETS - 1);
    CHECK_EQ_INT(hdr_bucket_of(-5), 0);
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

TEST(metrics_hdr_error_bound) {
    /* log-uniform values from 100 ns to ~17 min: every percentile within HDR_REL_ERROR of the
     * exact (numpy linear) value over the same samples; mean/std/min/max exact */
    enum { N = 200000 };
    double *v = malloc(N * sizeof *v);
    hdr_hist *h = malloc(sizeof *h), *h1 = malloc(sizeof *h1), *h2 = malloc(sizeof *h2);
    if (!v || !h || !h1 || !h2) { free(v); free(h); free(h1); free(h2); SKIP("out of memory"); }
    hdr_init(h); hdr_init(h1); hdr_init(h2);
    rng r;
    rng_seed(&r, 42);
    for (int i = 0; i < N; i++) {
        int64_t x = (int64_t)(100.0 * exp(rng_uniform(&r) * log(1e10)));
        v[i] = (double)x;
        hdr_record(h, x, 1);
        hdr_record(i % 2 ? h1 : h2, x, 1);
    }
    hdr_merge(h1, h2);
    qsort(v, N, sizeof *v, cmp_d);
    const double ps[] = { 0, 0.1, 1, 10, 25, 50, 75, 90, 95, 99, 99.9, 99.99, 100 };
    for (size_t i = 0; i < sizeof ps / sizeof ps[0]; i++) {
        double exact = stats_percentile_sorted(v, N, ps[i]);
        double got = hdr_percentile(h, ps[i]), merged = hdr_percentile(h1, ps[i]);
        CHECK_MSG(fabs(got - exact) <= HDR_REL_ERROR * exact, "p%g: %.6g vs exact %.6g", ps[i], got, exact);
        CHECK_NEAR(merged, got, 0);
    }
    CHECK_EQ_INT(h->total, N);
    CHECK_EQ_INT(h1->total, N);
    CHECK_NEAR(h->min, v[0], 0);
    CHECK_NEAR(h->max, v[N - 1], 0);
    double m = stats_mean(v, N), sd = stats_std(v, N);
    CHECK_NEAR(hdr_mean(h), m, 1e-9 * m);
    CHECK_NEAR(hdr_std(h), sd, 1e-9 * sd);
    CHECK_NEAR(hdr_mean(h1), m, 1e-9 * m);
    CHECK_NEAR(hdr_std(h1), sd, 1e-9 * sd);
    free(v); free(h); free(h1); free(h2);
}

TEST(metrics_hdr_counts_and_small_values) {
    hdr_hist *h = malloc(sizeof *h);
    if (!h) SKIP("out of memory");
    hdr_init(h);
    CHECK(isnan(hdr_percentile(h, 50)));
    CHECK(isnan(hdr_mean(h)));
    /* values below 256 ns are exact: 10 ×3, 20 ×1 → sorted 10 10 10 20 */
    hdr_record(h, 10, 3);
    hdr_record(h, 20, 1);
    hdr_record(h, 99, 0);
    CHECK_EQ_INT(h->total, 4);
    CHECK_NEAR(hdr_percentile(h, 50), 10, 0);
    CHECK_NEAR(hdr_percentile(h, 90), 17, 1e-9);  /* h=2.7: 10 + .7·10 */
    CHECK_NEAR(hdr_mean(h), 12.5, 1e-12);
    CHECK_NEAR(hdr_std(h), sqrt(75.0 / 4), 1e-12); /* deviations 2.5²·3 + 7.5² = 75 */
    /* beyond the range: counted, exact max kept */
    hdr_record(h, INT64_C(1) << 50, 1);
    CHECK_EQ_INT(h->saturated, 1);
    CHECK_EQ_INT(h->max, INT64_C(1) << 50);
    CHECK_NEAR(hdr_percentile(h, 100), (double)(INT64_C(1) << 50), 0);
    free(h);
}

/* hdr_quantiles is hdr_percentile at (k + 0.5) / m, computed in one pass. */
TEST(metrics_hdr_quantiles_match_percentiles) {
    hdr_hist *h = malloc(sizeof *h);
    hdr_init(h);
    rng r;
    rng_seed(&r, 3);
    for (int i = 0; i < 50000; i++) hdr_record(h, (int64_t)exp(rng_uniform(&r) * log(1e9)), 1 + rng_below(&r, 3));
    size_t ms[] = {1, 7, 2000};
    for (size_t j = 0; j < 3; j++) {
        double *q = malloc(ms[j] * sizeof *q);
        hdr_quantiles(h, ms[j], q);
        for (size_t k = 0; k < ms[j]; k++) {
            double want = hdr_percentile(h, ((double)k + 0.5) * 100.0 / (double)ms[j]);
            CHECK_MSG(q[k] == want, "m=%zu k=%zu: %.17g vs %.17g", ms[j], k, q[k], want);
        }
        free(q);
    }
    free(h);
}
