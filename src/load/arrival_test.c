/* Tests for arrival: parsing, and the mean rate and dispersion of each process within
 * statistical bounds for the seed (6 standard errors of the estimator). */
#include "harness.h"
#include "load/arrival.h"
#include <math.h>
#include <stdlib.h>

TEST(arrival_parse_specs) {
    arrival a;
    CHECK(arrival_parse("poisson", 10, &a) == 0 && a.kind == ARRIVAL_POISSON);
    CHECK(arrival_parse("constant", 10, &a) == 0 && a.kind == ARRIVAL_CONSTANT);
    CHECK(arrival_parse("gamma:0.5", 10, &a) == 0 && a.kind == ARRIVAL_GAMMA);
    CHECK_NEAR(a.gamma_shape, 0.5, 0);
    CHECK_NEAR(a.rate_per_s, 10, 0);
    CHECK(arrival_parse("gamma:", 10, &a) == -1);
    CHECK(arrival_parse("gamma:0", 10, &a) == -1);
    CHECK(arrival_parse("gamma:-1", 10, &a) == -1);
    CHECK(arrival_parse("gamma:2x", 10, &a) == -1);
    CHECK(arrival_parse("uniform", 10, &a) == -1);
    CHECK(arrival_parse("poisson", 0, &a) == -1);
    CHECK(arrival_parse("poisson", -3, &a) == -1);
}

/* Draws n gaps; checks the mean within 6 SE (SE = cv·mean/sqrt(n)) and the sample coefficient
 * of variation within 6 SE of its estimator: SE(s²)/σ² = sqrt((kurtosis - 1)/n) with the
 * gamma's kurtosis 3 + 6/K, and SE(cv) ≈ cv·SE(s²)/(2σ²). */
static void check_process(const char *spec, double cv_expected, double kurtosis) {
    enum { N = 20000 };
    const double rate = 100, mean_expected = 1e9 / rate;
    arrival a;
    CHECK(arrival_parse(spec, rate, &a) == 0);
    rng r;
    rng_seed(&r, 12345);
    double sum = 0, sumsq = 0;
    for (int i = 0; i < N; i++) {
        double g = (double)arrival_next_gap_ns(&a, &r);
        CHECK(g >= 0);
        sum += g;
        sumsq += g * g;
    }
    double mean = sum / N, var = sumsq / N - mean * mean, cv = sqrt(var > 0 ? var : 0) / mean;
    double se_mean = cv_expected * mean_expected / sqrt(N);
    double se_cv = cv_expected * 0.5 * sqrt((kurtosis - 1) / N);
    CHECK_MSG(fabs(mean - mean_expected) <= 6 * se_mean + 1, "%s: mean gap %.6g vs %.6g", spec, mean, mean_expected);
    CHECK_MSG(fabs(cv - cv_expected) <= 6 * se_cv + 1e-9, "%s: cv %.4f vs %.4f", spec, cv, cv_expected);
}

TEST(arrival_rate_and_dispersion) {
    check_process("poisson", 1.0, 9.0);            /* exponential: cv 1, kurtosis 9 */
    check_process("gamma:4", 0.5, 3 + 6.0 / 4);    /* cv 1/sqrt(4) */
    check_process("gamma:0.25", 2.0, 3 + 6.0 / 0.25); /* burstier than poisson: cv 2 */
    check_process("constant", 0.0, 3.0);           /* every gap exactly 1e7 ns */
}

TEST(arrival_schedule_seeded) {
    arrival a;
    CHECK(arrival_parse("poisson", 50, &a) == 0);
    int64_t t1[500], t2[500];
    rng r1, r2;
    rng_seed(&r1, 9);
    rng_seed(&r2, 9);
    arrival_schedule(&a, &r1, 1000, t1, 500);
    arrival_schedule(&a, &r2, 1000, t2, 500);
    CHECK_EQ_INT(t1[0], 1000);
    int same = 1, mono = 1;
    for (int i = 0; i < 500; i++) {
        if (t1[i] != t2[i]) same = 0;
        if (i && t1[i] < t1[i - 1]) mono = 0;
    }
    CHECK(same);
    CHECK(mono);
    /* constant 3/s: no accumulated rounding drift (offsets summed in double) */
    CHECK(arrival_parse("constant", 3, &a) == 0);
    arrival_schedule(&a, &r1, 0, t1, 301);
    CHECK_EQ_INT(t1[300], 100000000000LL);
}

/* A constant-shaped ramp 0 -> 100/s over 2 s: arrival k lands where the expected count
 * Λ(t) = 25 t² reaches k, i.e. at sqrt(k/25) s; 25 arrive in the first second, 75 in the second,
 * then they come every 10 ms. */
TEST(arrival_ramp_follows_the_integrated_rate) {
    arrival a;
    CHECK(arrival_parse("constant", 1, &a) == 0);
    CHECK(arrival_parse_ramp("0->100/s over 2s", &a) == 0);
    CHECK_NEAR(a.ramp_from_per_s, 0, 0);
    CHECK_NEAR(a.rate_per_s, 100, 1e-12);
    CHECK_EQ_INT(a.ramp_ns, 2000000000LL);
    rng r;
    rng_seed(&r, 1);
    double lambda = 0;
    int first = 0, second = 0;
    int64_t prev = 0, t = 0;
    for (int k = 1; k <= 120; k++) {
        prev = t;
        t = arrival_next_ramp_ns(&a, &r, &lambda);
        CHECK_NEAR(t / 1e9, k <= 100 ? sqrt(k / 25.0) : 2.0 + (k - 100) / 100.0, 1e-9);
        if (t <= 1000000000LL) first++;
        else if (t <= 2000000000LL) second++;
    }
    CHECK_EQ_INT(first, 25);
    CHECK_EQ_INT(second, 75);
    CHECK_EQ_INT(t - prev, 10000000);
    /* Poisson-shaped ramp 10 -> 30/s over 10 s: 200 expected arrivals in the ramp, then 30/s */
    CHECK(arrival_parse("poisson", 1, &a) == 0);
    CHECK(arrival_parse_ramp("10/s->30/s over 10s", &a) == 0);
    lambda = 0;
    int n = 0;
    while ((t = arrival_next_ramp_ns(&a, &r, &lambda)) <= 10000000000LL) n++;
    CHECK_NEAR(n, 200, 6 * sqrt(200.0));
    const char *bad[] = { "0->40/s", "a->b over 1s", "0->0 over 1s", "5->10/s over -1s", "->10 over 1s" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_MSG(arrival_parse_ramp(bad[i], &a) == -1, "accepted %s", bad[i]);
}
