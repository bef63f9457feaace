/* Tests for the serve token model: determinism, a proper distribution, greedy = argmax = top[0],
 * and the perturbation's size: the logit differences between a perturbed and an unperturbed model
 * (same seed) have the configured std sigma*(1+growth*L/1024), measured over many positions. */
#include "harness.h"
#include "engine/fixed_lm.h"
#include <math.h>
#include <string.h>

TEST(fixed_lm_distribution) {
    fixed_lm lm;
    fixed_lm_default(&lm);
    double a[FIXED_LM_CLASSES], b[FIXED_LM_CLASSES];
    fixed_lm_logprobs(&lm, 3, 7, 100, 0, a);
    fixed_lm_logprobs(&lm, 3, 7, 100, 99, b);   /* the nonce only matters with jitter */
    double sum = 0;
    for (int v = 0; v < FIXED_LM_CLASSES; v++) { sum += exp(a[v]); CHECK(a[v] == b[v]); CHECK(a[v] <= 0); }
    CHECK_NEAR(sum, 1.0, 1e-12);
    uint32_t top[FIXED_LM_VOCAB];
    CHECK_EQ_INT(fixed_lm_top(a, FIXED_LM_VOCAB, top), FIXED_LM_VOCAB);
    CHECK_EQ_INT(top[0], fixed_lm_argmax(a));
    for (int i = 1; i < FIXED_LM_VOCAB; i++) CHECK(a[top[i - 1]] >= a[top[i]]);
    for (int i = 0; i < FIXED_LM_VOCAB; i++) CHECK(fixed_lm_rank(a, top[i]) <= i + 2);   /* +1 when "other" ranks above */
    CHECK_EQ_INT(fixed_lm_rank(a, top[0]), 1);
    CHECK(a[FIXED_LM_OTHER] < a[top[FIXED_LM_VOCAB / 2]]);
    /* a different context is a different distribution */
    fixed_lm_logprobs(&lm, 3, 8, 100, 0, b);
    CHECK(memcmp(a, b, sizeof a) != 0);
}

TEST(fixed_lm_words) {
    CHECK_EQ_INT(fixed_lm_word_id("alpha", 5), 0);
    CHECK_EQ_INT(fixed_lm_word_id(" fjord", 6), 31);
    uint32_t x = fixed_lm_word_id("hello", 5);
    CHECK(x >= FIXED_LM_CLASSES);
    CHECK_EQ_INT(fixed_lm_word_id(" hello\n", 7), x);
    CHECK_EQ_INT(fixed_lm_class(x), FIXED_LM_OTHER);
    CHECK_STR(fixed_lm_word(2), " charlie");
    CHECK(fixed_lm_word(x) == NULL);
}

TEST(fixed_lm_options) {
    fixed_lm lm;
    fixed_lm_default(&lm);
    char err[256];
    CHECK_EQ_INT(fixed_lm_set(&lm, "logprob-noise", "0.25,2", err, sizeof err), 0);
    CHECK_NEAR(fixed_lm_sigma(&lm, 0), 0.25, 1e-15);
    CHECK_NEAR(fixed_lm_sigma(&lm, 1024), 0.75, 1e-15);
    CHECK_NEAR(fixed_lm_sigma(&lm, 4096), 2.25, 1e-15);
    CHECK_EQ_INT(fixed_lm_set(&lm, "logprob-noise", "-1", err, sizeof err), -1);
    CHECK(strstr(err, "SIGMA") != NULL);
    CHECK_EQ_INT(fixed_lm_set(&lm, "logprob-noise", "0.1,x", err, sizeof err), -1);
    CHECK_EQ_INT(fixed_lm_set(&lm, "logprob-jitter", "0.05", err, sizeof err), 0);
    CHECK_EQ_INT(fixed_lm_set(&lm, "nope", "1", err, sizeof err), 1);
}

/* Within one position, lp_noisy[v] - lp_base[v] = sigma*eps_v - c (c: the change of the log-sum),
 * so the spread of the differences over the classes estimates sigma. */
static double measured_sigma(const fixed_lm *noisy, int64_t pos0, int n_pos) {
    fixed_lm base = *noisy;
    base.noise_sigma = 0;
    base.jitter_sigma = 0;
    double ss = 0;
    long n = 0;
    for (int i = 0; i < n_pos; i++) {
        double a[FIXED_LM_CLASSES], b[FIXED_LM_CLASSES], d[FIXED_LM_CLASSES], mean = 0;
        fixed_lm_logprobs(&base, (uint32_t)i, (uint32_t)(i * 7), pos0 + i % 3, 5, a);
        fixed_lm_logprobs(noisy, (uint32_t)i, (uint32_t)(i * 7), pos0 + i % 3, 5, b);
        for (int v = 0; v < FIXED_LM_CLASSES; v++) { d[v] = b[v] - a[v]; mean += d[v] / FIXED_LM_CLASSES; }
        for (int v = 0; v < FIXED_LM_CLASSES; v++) ss += (d[v] - mean) * (d[v] - mean);
        n += FIXED_LM_CLASSES - 1;   /* one degree of freedom per position goes to the mean */
    }
    return sqrt(ss / (double)n);
}

TEST(fixed_lm_noise_has_the_configured_size) {
    fixed_lm lm;
    fixed_lm_default(&lm);
    lm.noise_sigma = 0.2;
    lm.noise_growth = 1.0;
    /* 4000 positions x 32 degrees of freedom: the relative std error of the estimate is ~0.4% */
    CHECK_NEAR(measured_sigma(&lm, 0, 4000) / 0.2, 1.0, 0.02);
    CHECK_NEAR(measured_sigma(&lm, 2048, 4000) / (0.2 * 3.0), 1.0, 0.02);
    fixed_lm j;
    fixed_lm_default(&j);
    j.jitter_sigma = 0.1;
    CHECK_NEAR(measured_sigma(&j, 500, 4000) / 0.1, 1.0, 0.02);
    /* jitter differs between requests (nonces), the deterministic noise does not */
    double a[FIXED_LM_CLASSES], b[FIXED_LM_CLASSES];
    fixed_lm_logprobs(&j, 1, 2, 3, 10, a);
    fixed_lm_logprobs(&j, 1, 2, 3, 11, b);
    CHECK(memcmp(a, b, sizeof a) != 0);
}
