/* Tests of the stability analysis on numbers: the score of a results document, the exponential fit
 * and its grades, what a short or noisy sweep says, and whether the bootstrap interval of lambda
 * covers the truth as often as it claims (Monte Carlo over synthetic sweeps with known noise). */
#include "harness.h"
#include "sweep/stability.h"
#include "metrics/infer.h"
#include "common/rng.h"
#include <math.h>
#include <string.h>

TEST(stability_scores_of_results) {
    json_t *r = json_pack("{s:f,s:f,s:f,s:f,s:{s:[i,i,i,i,i,i,i,i]}}", "mean_itl_ms", 10.0, "std_itl_ms", 2.0,
                          "median_tpot_ms", 10.0, "p99_tpot_ms", 25.0, "timeline", "output_tokens", 5, 100, 110, 90, 100, 110, 90, 7);
    char why[128];
    double se;
    CHECK_NEAR(stability_score_of(r, STAB_ITL_CV, &se, why, sizeof why), exp(-0.2), 1e-12);
    CHECK(isnan(se));    /* no stored samples: no standard error */
    CHECK_NEAR(stability_score_of(r, STAB_TPOT_TAIL, NULL, why, sizeof why), 0.4, 1e-12);
    /* interior windows 100,110,90,100,110,90: mean 100, population sd sqrt(200/3) */
    CHECK_NEAR(stability_score_of(r, STAB_THROUGHPUT_CV, &se, why, sizeof why), exp(-sqrt(200.0 / 3) / 100), 1e-12);
    CHECK(se > 0);
    json_t *empty = json_object();
    CHECK(isnan(stability_score_of(empty, STAB_ITL_CV, NULL, why, sizeof why)));
    CHECK(strstr(why, "inter-token") != NULL);
    stab_score s;
    CHECK(stability_parse_score("tpot-tail", &s) == 0 && s == STAB_TPOT_TAIL);
    CHECK(stability_parse_score("p99", &s) < 0);
    json_decref(r);
    json_decref(empty);
}

/* The delta-method standard error of CV from stored samples matches the spread of CV over repeated
 * samples of the same distribution. */
TEST(stability_itl_cv_standard_error) {
    rng g;
    rng_seed(&g, 11);
    const int n = 2000, reps = 300;
    double s = 0, ss = 0, se_mean = 0;
    for (int r = 0; r < reps; r++) {
        json_t *vals = json_array();
        double sum = 0, sq = 0;
        for (int i = 0; i < n; i++) {
            double x = 10000 + 2000 * (2 * rng_uniform(&g) - 1);
            sum += x;
            sq += x * x;
            json_array_append_new(vals, json_real(x));
        }
        double m = sum / n, sd = sqrt(sq / n - m * m);
        json_t *res = json_pack("{s:f,s:f,s:{s:{s:o,s:i}}}", "mean_itl_ms", m / 1000, "std_itl_ms", sd / 1000, "samples", "itl",
                                "values", vals, "n", n);
        char why[64];
        double se, S = stability_score_of(res, STAB_ITL_CV, &se, why, sizeof why);
        s += log(S);
        ss += log(S) * log(S);
        se_mean += se;
        json_decref(res);
    }
    double sd_obs = sqrt(ss / reps - (s / reps) * (s / reps));
    CHECK_MSG(fabs(se_mean / reps - sd_obs) <= 0.15 * sd_obs, "delta-method se %.5f vs observed %.5f", se_mean / reps, sd_obs);
}

TEST(stability_fit_grades) {
    double b[] = { 0.0625, 0.125, 0.25, 0.5, 1.0 }, S[5], se[5];
    static const struct { double lambda; const char *grade; double lo, hi; } c[] = {
        {0.02, "highly stable", 64, 512}, {0.1, "moderately stable", 32, 256}, {0.3, "unstable", 1, 22} };
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 5; i++) { S[i] = 0.95 * exp(-c[k].lambda * b[i]); se[i] = 0.002; }
        stab_fit f;
        stability_fit(b, S, se, 5, 1, &f);
        CHECK(f.fitted);
        CHECK_NEAR(f.lambda, c[k].lambda, 1e-9);
        CHECK_NEAR(f.s0, 0.95, 1e-9);
        CHECK(f.lo < c[k].lambda && c[k].lambda < f.hi);
        CHECK_STR(f.grade, c[k].grade);
        CHECK_NEAR(f.range_lo, c[k].lo, 0);
        CHECK_NEAR(f.range_hi, c[k].hi, 0);   /* unstable: floor(ln(1/0.9) / 0.3 x 64) = 22 */
        CHECK(strstr(f.range_note, k < 2 ? "measured batches up to 64" : "keeps 90%") != NULL);
    }
    /* flat: nothing decays */
    for (int i = 0; i < 5; i++) S[i] = 0.9;
    stab_fit f;
    stability_fit(b, S, NULL, 5, 1, &f);
    CHECK(f.fitted && !strcmp(f.grade, "highly stable") && fabs(f.lambda) < 1e-12);
}

TEST(stability_fit_refuses_short_and_noisy) {
    double b[] = { 0.125, 0.25, 0.5, 1.0 }, S[] = { 0.95, 0.94, 0.93, 0.92 }, se[] = { 0.3, 0.3, 0.3, 0.3 };
    stab_fit f;
    stability_fit(b, S, NULL, 3, 1, &f);
    CHECK(!f.fitted && strstr(f.why, "too short") && !f.grade);
    /* each score +-0.3 in ln S: lambda's interval spans every grade */
    stability_fit(b, S, se, 4, 1, &f);
    CHECK(!f.fitted && strstr(f.why, "too noisy") && !f.grade);
    /* wide but above every boundary: still "unstable" */
    double S2[4], se2[] = { 0.05, 0.05, 0.05, 0.05 };
    for (int i = 0; i < 4; i++) S2[i] = 0.9 * exp(-2.0 * b[i]);
    stability_fit(b, S2, se2, 4, 1, &f);
    CHECK(f.fitted && f.hi - f.lo > 0.15 && f.lo > 0.15 && !strcmp(f.grade, "unstable"));
    /* repeats at one batch are no ladder */
    double b1[] = { 0.5, 0.5, 0.5, 0.5, 0.5 }, S1[] = { 0.9, 0.91, 0.89, 0.9, 0.9 };
    stability_fit(b1, S1, NULL, 5, 1, &f);
    CHECK(!f.fitted && strstr(f.why, "too short"));
}

/* 95% intervals cover the true lambda about as often as they claim: with each point's standard
 * error known (the parametric path, what a sweep with stored samples uses) and, over three repeats
 * per load, from the residuals alone (the wild bootstrap-t, for files without samples). */
TEST(stability_interval_coverage) {
    double bl[] = { 0.0625, 0.125, 0.25, 0.5, 1.0 };
    rng g;
    rng_seed(&g, 2024);
    const int trials = 1000;
    int hit_se = 0, hit_res = 0;
    for (int t = 0; t < trials; t++) {
        double b[15], S[15], se[15];
        for (int i = 0; i < 15; i++) {
            b[i] = bl[i % 5];
            se[i] = 0.01 + 0.02 * b[i];          /* noisier at higher load, as CV estimates are */
            S[i] = 0.97 * exp(-0.2 * b[i] + se[i] * rng_normal(&g));
        }
        stab_fit f;
        stability_fit(b, S, se, 5, (uint64_t)t + 1, &f);
        if (f.lo <= 0.2 && 0.2 <= f.hi) hit_se++;
        stability_fit(b, S, NULL, 15, (uint64_t)t + 1, &f);
        if (f.lo <= 0.2 && 0.2 <= f.hi) hit_res++;
    }
    double c1 = (double)hit_se / trials, c2 = (double)hit_res / trials;
    /* measured at 2,000 trials: 0.971 (the Birge ratio only ever widens) and 0.904 (the wild
     * bootstrap-t at 15 points; small samples under-cover a little) */
    CHECK_MSG(c1 >= 0.93 && c1 <= 0.99, "coverage with standard errors %.3f", c1);
    CHECK_MSG(c2 >= 0.87 && c2 <= 0.97, "coverage from residuals (15 points) %.3f", c2);
}

TEST(stability_bootstrap_slope_contract) {
    double x[] = { 1, 2, 3 }, y[] = { 2, 4, 6 }, sl, lo, hi, R;
    CHECK(infer_bootstrap_slope(x, y, NULL, 3, 100, 0.95, 1, &sl, &lo, &hi, &R) == 0);
    CHECK_NEAR(sl, 2, 1e-12);
    CHECK_NEAR(lo, 2, 1e-12);
    CHECK_NEAR(hi, 2, 1e-12);
    double xc[] = { 1, 1, 1 }, bad[] = { 0.1, 0, 0.1 };
    CHECK(infer_bootstrap_slope(xc, y, NULL, 3, 100, 0.95, 1, &sl, &lo, &hi, &R) < 0);
    CHECK(infer_bootstrap_slope(x, y, bad, 3, 100, 0.95, 1, &sl, &lo, &hi, &R) < 0);
    CHECK(infer_bootstrap_slope(x, y, NULL, 2, 100, 0.95, 1, &sl, &lo, &hi, &R) < 0);
    /* points far off the line for their errors widen the interval by the Birge ratio */
    double x4[] = { 0, 1, 2, 3 }, y4[] = { 0, 1.3, 1.7, 3 }, s4[] = { 0.01, 0.01, 0.01, 0.01 };
    CHECK(infer_bootstrap_slope(x4, y4, s4, 4, 2000, 0.95, 1, &sl, &lo, &hi, &R) == 0);
    CHECK(R > 10 && lo < sl - 0.1 && hi > sl + 0.1);
}
