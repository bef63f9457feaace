/* Integration tests of `dsperf drift` against `dsperf serve`'s token model (engine/fixed_lm.h), a
 * server whose perturbation is known: the candidate's logits are the baseline's plus independent
 * normals of std sigma(L) = S * (1 + G * L / 1024) at context length L. The expected values are
 * derived here from that definition and the baseline's own distribution at each position (all 32
 * words' logprobs, from --save-positions):
 *   top-1 agreement   P(argmax(z + sigma e) = argmax z) = int phi(x) prod_{v != *} Phi(x + (z*-z_v)/sigma) dx
 *   KL, logprob delta E[log sum_v p_v e^{sigma e_v}] (and its negative), by Monte Carlo over e
 * and the measured means must fall within 4.5 standard errors of them (positions are independent
 * draws; a measured mean's standard error follows from each position's variance). Then: zero drift
 * same-vs-same, growth with context, the noise floor, stepwise scoring (a llama.cpp-style server
 * that refuses echo) agreeing exactly with echo, perplexity of a reference text, a server without
 * logprobs, gates, the report page, and an interrupted run. */
#include "harness.h"
#include "testutil.h"
#include "common/fileio.h"
#include "common/rng.h"
#include "engine/fixed_lm.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define V FIXED_LM_VOCAB

/* Runs drift between two serve instances (or one, when cand_args is NULL); returns the document. */
static json_t *drift_between(const char *base_args, const char *cand_args, const char *drift_args, const char *name,
                             int *status, char **output) {
    test_server b, c;
    char bargs[512], cargs[512];
    snprintf(bargs, sizeof bargs, "--itl 0 --ttft 0 %s", base_args);
    if (test_serve_start(&b, bargs) != 0) { CHECK_MSG(0, "serve %s did not start", bargs); return NULL; }
    if (cand_args) {
        snprintf(cargs, sizeof cargs, "--itl 0 --ttft 0 %s", cand_args);
        if (test_serve_start(&c, cargs) != 0) { test_serve_stop(&b); CHECK_MSG(0, "serve %s did not start", cargs); return NULL; }
    }
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "drift --baseline %s --candidate %s --quiet --out %s/%s.json --save-positions %s/%s.jsonl %s",
             b.url, cand_args ? c.url : b.url, harness_tmpdir(), name, harness_tmpdir(), name, drift_args);
    int st;
    char *out = test_run_merged(cmd, &st);
    if (status) *status = st;
    if (output) *output = out; else free(out);
    test_serve_stop(&b);
    if (cand_args) test_serve_stop(&c);
    char path[512];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    return test_load_json(path);
}

static const json_t *bucket(const json_t *doc, long long ctx) {
    size_t i;
    const json_t *b;
    json_array_foreach(json_object_get(doc, "buckets"), i, b)
        if (json_integer_value(json_object_get(b, "context")) == ctx) return b;
    return NULL;
}

static double ci(const json_t *b, const char *k, int i) {
    char key[64];
    snprintf(key, sizeof key, "%s_ci", k);
    return json_number_value(json_array_get(json_object_get(b, key), (size_t)i));
}

/* ---- the analytic side ---- */

typedef struct {
    double p_agree, var_agree;     /* per position: agreement probability and its variance */
    double kl, var_kl;             /* E and Var of KL(p || softmax(z + sigma e)) over the 33 classes */
    double dlp, var_dlp;           /* E and Var of lp_c(token) - lp_b(token) */
    double mc_var;                 /* Monte Carlo variance of the estimates above (added to the tolerance) */
} expect;

static double Phi(double t) { return 0.5 * erfc(-t / M_SQRT2); }

static double p_agree(const double *z, double sigma) {
    int star = 0;
    for (int v = 1; v < V; v++) if (z[v] > z[star]) star = v;
    double sum = 0, h = 0.02;
    for (double x = -8; x <= 8; x += h) {
        double w = exp(-x * x / 2) / sqrt(2 * M_PI);
        for (int v = 0; v < V && w > 0; v++) if (v != star) w *= Phi(x + (z[star] - z[v]) / sigma);
        sum += w * h;
    }
    return sum;
}

/* lp: the 32 words' logprobs at the position; tok: the scored word's index. */
static void expect_at(const double *lp, int tok, double sigma, bool agreement, rng *r, expect *e) {
    double p[V + 1], ps = 0;
    for (int v = 0; v < V; v++) { p[v] = exp(lp[v]); ps += p[v]; }
    p[V] = ps < 1 ? 1 - ps : 0;          /* the "other" class (prompt words outside the vocabulary) */
    e->p_agree = agreement ? p_agree(lp, sigma) : NAN;   /* the integral is the costly part */
    e->var_agree = e->p_agree * (1 - e->p_agree);
    enum { M = 300 };
    double s_kl = 0, ss_kl = 0, s_d = 0, ss_d = 0;
    for (int m = 0; m < M; m++) {
        double eps[V + 1], sum = 0, mean_pe = 0;
        for (int v = 0; v <= V; v++) { eps[v] = sigma * rng_normal(r); sum += p[v] * exp(eps[v]); mean_pe += p[v] * eps[v]; }
        double f = log(sum), kl = f - mean_pe, d = eps[tok] - f;
        s_kl += kl; ss_kl += kl * kl; s_d += d; ss_d += d * d;
    }
    e->kl = s_kl / M;
    e->var_kl = ss_kl / M - e->kl * e->kl;
    e->dlp = s_d / M;
    e->var_dlp = ss_d / M - e->dlp * e->dlp;
    e->mc_var = (e->var_kl + e->var_dlp) / M;
}

typedef struct { double agree, kl, dlp, var_agree, var_kl, var_dlp, mc_var; long n; } expect_sum;

/* Sums the expectations over the positions of one kind and context in a --save-positions file. */
static int expected_from_positions(const char *path, const char *kind, long long ctx, double s0, double growth, expect_sum *out) {
    memset(out, 0, sizeof *out);
    char *text = NULL;
    size_t len;
    if (fileio_read_all(path, &text, &len) < 0) return -1;
    rng r;
    rng_seed(&r, 42);
    for (char *save = NULL, *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        json_t *j = json_loads(line, 0, NULL);
        if (!j) { free(text); return -1; }
        if (strcmp(json_string_value(json_object_get(j, "kind")), kind) || json_integer_value(json_object_get(j, "context")) != ctx) {
            json_decref(j);
            continue;
        }
        const json_t *top = json_object_get(j, "baseline_top");
        double lp[V];
        int tok = -1;
        for (int v = 0; v < V; v++) lp[v] = -INFINITY;
        size_t i;
        const json_t *e;
        const char *token = json_string_value(json_object_get(j, "token"));
        json_array_foreach(top, i, e) {
            const char *w = json_string_value(json_array_get(e, 0));
            uint32_t id = fixed_lm_word_id(w, strlen(w));
            if (id < V) lp[id] = json_number_value(json_array_get(e, 1));
            if (!strcmp(w, token)) tok = (int)id;
        }
        double L = (double)json_integer_value(json_object_get(j, "context_len"));
        expect x;
        expect_at(lp, tok < 0 ? 0 : tok, s0 * (1 + growth * L / 1024), !strcmp(kind, "candidate"), &r, &x);
        out->agree += x.p_agree; out->var_agree += x.var_agree;
        out->kl += x.kl; out->var_kl += x.var_kl;
        out->dlp += x.dlp; out->var_dlp += x.var_dlp;
        out->mc_var += x.mc_var;
        out->n++;
        json_decref(j);
    }
    free(text);
    return out->n > 0 ? 0 : -1;
}

/* measured within 4.5 standard errors of expected (sum of n positions' values / variances) */
#define CHECK_STAT(measured, sum, var, mc, n, what) do { \
    double _exp = (sum) / (n), _se = sqrt(((var) + (mc)) / ((double)(n) * (n))); \
    CHECK_MSG(fabs((measured) - _exp) <= 4.5 * _se + 1e-9, "%s: measured %.6g, expected %.6g +- %.3g (4.5 SE)", what, \
              (double)(measured), _exp, 4.5 * _se); } while (0)

TEST(drift_measures_the_configured_perturbation_and_its_growth) {
    const double s0 = 0.1, g = 2;
    int st;
    json_t *d = drift_between("", "--logprob-noise 0.1,2", "--contexts 32,512,2048 --prompts 8 --top-logprobs 32 --no-floor", "noise", &st, NULL);
    CHECK_EQ_INT(st, 0);
    if (!d) return;
    CHECK_STR(json_string_value(json_object_get(json_object_get(d, "candidate"), "score_method")), "echo");
    char pos[512];
    snprintf(pos, sizeof pos, "%s/noise.jsonl", harness_tmpdir());
    long long ctxs[3] = { 32, 512, 2048 };
    double agree[3];
    for (int k = 0; k < 3; k++) {
        const json_t *b = bucket(d, ctxs[k]);
        CHECK(b != NULL);
        if (!b) continue;
        CHECK_EQ_INT(json_integer_value(json_object_get(b, "prompts")), 8);
        CHECK_EQ_INT(json_integer_value(json_object_get(b, "positions")), 8 * 32);
        CHECK_EQ_INT(json_integer_value(json_object_get(b, "prompt_tokens_min")), ctxs[k]);   /* exact lengths */
        CHECK_EQ_INT(json_integer_value(json_object_get(b, "prompt_tokens_max")), ctxs[k]);
        expect_sum e;
        CHECK(expected_from_positions(pos, "candidate", ctxs[k], s0, g, &e) == 0);
        CHECK_EQ_INT(e.n, 8 * 32);
        if (e.n != 8 * 32) continue;
        char what[64];
        agree[k] = json_number_value(json_object_get(b, "top1_agreement"));
        snprintf(what, sizeof what, "top-1 agreement at %lld", ctxs[k]);
        CHECK_STAT(agree[k], e.agree, e.var_agree, 0, e.n, what);
        snprintf(what, sizeof what, "KL at %lld", ctxs[k]);
        CHECK_STAT(json_number_value(json_object_get(b, "kl")), e.kl, e.var_kl, e.mc_var, e.n, what);
        snprintf(what, sizeof what, "logprob delta at %lld", ctxs[k]);
        CHECK_STAT(json_number_value(json_object_get(b, "mean_logprob_delta")), e.dlp, e.var_dlp, e.mc_var, e.n, what);
        /* delta PPL of the continuation = exp(-mean logprob delta) - 1 */
        double x = -e.dlp / e.n, se = sqrt((e.var_dlp + e.mc_var) / ((double)e.n * e.n));
        CHECK_NEAR(json_number_value(json_object_get(b, "continuation_delta_ppl")), expm1(x), 4.5 * se * exp(x) + 1e-9);
        CHECK_STR(json_string_value(json_object_get(b, "delta_ppl_source")), "continuation");
        printf("    context %lld (sigma %.3f..%.3f): agreement %.4f (expected %.4f), KL %.5f (%.5f), logprob delta %+.5f (%+.5f), "
               "delta PPL %+.4f (%+.4f)\n", ctxs[k], s0 * (1 + g * ctxs[k] / 1024.0), s0 * (1 + g * (ctxs[k] + 31) / 1024.0),
               agree[k], e.agree / e.n, json_number_value(json_object_get(b, "kl")), e.kl / e.n,
               json_number_value(json_object_get(b, "mean_logprob_delta")), e.dlp / e.n,
               json_number_value(json_object_get(b, "continuation_delta_ppl")), expm1(x));
        /* every word listed on both sides: the KL is exact, nothing unseen but the "other" class */
        CHECK(json_number_value(json_object_get(b, "kl_tail_mass")) < 1e-6);
        CHECK_NEAR(json_number_value(json_object_get(b, "topk_containment")), 1.0, 1e-12);
    }
    /* sigma grows 0.1 -> 0.5 from 32 to 2048 words: agreement falls beyond its intervals */
    const json_t *b32 = bucket(d, 32), *b2k = bucket(d, 2048);
    if (b32 && b2k) {
        CHECK(agree[2] < agree[1] && agree[1] <= agree[0] + 0.02);
        CHECK_MSG(ci(b2k, "top1_agreement", 1) < ci(b32, "top1_agreement", 0), "agreement at 2048 [.., %g] not below 32 [%g, ..]",
                  ci(b2k, "top1_agreement", 1), ci(b32, "top1_agreement", 0));
        CHECK(json_number_value(json_object_get(b2k, "kl")) > 5 * json_number_value(json_object_get(b32, "kl")));
    }
    json_decref(d);
}

TEST(drift_same_vs_same_is_zero_and_at_the_floor) {
    int st;
    char *out = NULL;
    /* two servers with the same model (seed): identical logprobs, so exactly no drift */
    json_t *d = drift_between("", "", "--contexts 16,200 --prompts 4 --gen-tokens 16 --gate 'top1_agreement>=0.999,delta_ppl<=0.0001%'",
                              "same", &st, &out);
    CHECK_MSG(st == 0, "exit %d:\n%s", st, out ? out : "");
    CHECK(out && strstr(out, "gate: PASSED"));
    free(out);
    if (!d) return;
    size_t i;
    const json_t *b;
    json_array_foreach(json_object_get(d, "buckets"), i, b) {
        CHECK(json_number_value(json_object_get(b, "top1_agreement")) == 1.0);
        CHECK(json_number_value(json_object_get(b, "mean_logprob_delta")) == 0.0);
        CHECK(json_number_value(json_object_get(b, "kl")) < 1e-15);
        CHECK(json_number_value(json_object_get(b, "delta_ppl")) == 0.0);
        CHECK(json_number_value(json_object_get(b, "exact_match_rate")) == 1.0);
        CHECK_NEAR(json_number_value(json_object_get(b, "mean_first_divergence")), 16, 0);
        CHECK_STR(json_string_value(json_object_get(b, "verdict")), "indistinguishable from the noise floor");
        CHECK(json_number_value(json_object_get(json_object_get(b, "floor"), "top1_agreement")) == 1.0);
    }
    json_decref(d);
    /* the same URL twice: the run is the noise floor itself */
    d = drift_between("", NULL, "--contexts 16 --prompts 2 --gen-tokens 8", "self", &st, &out);
    CHECK_EQ_INT(st, 0);
    CHECK(out && strstr(out, "this run is the noise floor"));
    free(out);
    if (d) CHECK(json_is_true(json_object_get(d, "same_deployment")));
    json_decref(d);
}

TEST(drift_noise_floor_separates_nondeterminism_from_drift) {
    /* every request perturbed anew (batch nondeterminism), on both sides alike: the candidate is
     * indistinguishable from the baseline against itself; concurrency 1 keeps the request order,
     * so the draws, fixed */
    int st;
    json_t *d = drift_between("--logprob-jitter 0.3 --seed 1", "--logprob-jitter 0.3 --seed 2",
                              "--contexts 32,256 --prompts 12 --gen-tokens 24 --concurrency 1", "floor_same", &st, NULL);
    CHECK_EQ_INT(st, 0);
    if (d) {
        size_t i;
        const json_t *b;
        json_array_foreach(json_object_get(d, "buckets"), i, b) {
            const json_t *fl = json_object_get(b, "floor");
            CHECK(json_number_value(json_object_get(fl, "top1_agreement")) < 1.0);   /* the floor is not zero */
            CHECK_STR(json_string_value(json_object_get(b, "verdict")), "indistinguishable from the noise floor");
        }
    }
    json_decref(d);
    /* the same nondeterminism plus a real perturbation: beyond the floor */
    d = drift_between("--logprob-jitter 0.3 --seed 1", "--logprob-jitter 0.3 --seed 2 --logprob-noise 1.0",
                      "--contexts 32,256 --prompts 12 --gen-tokens 24 --concurrency 1", "floor_beyond", &st, NULL);
    CHECK_EQ_INT(st, 0);
    if (d) {
        size_t i;
        const json_t *b;
        json_array_foreach(json_object_get(d, "buckets"), i, b) {
            CHECK_STR(json_string_value(json_object_get(b, "verdict")), "beyond the noise floor");
            const json_t *vs = json_object_get(json_object_get(b, "vs_floor"), "top1_agreement");
            CHECK(json_number_value(json_array_get(json_object_get(vs, "difference_ci"), 1)) < 0);
        }
    }
    json_decref(d);
}

TEST(drift_stepwise_on_a_llamacpp_style_server_matches_echo) {
    /* llama.cpp refuses echo and has no prompt_logprobs: drift scores one position per request.
     * With every word listed, it must measure exactly what echo measures on the same model. */
    int st;
    json_t *s = drift_between("", "--logprob-noise 0.3 --logprobs-style llamacpp", "--contexts 24,100 --prompts 4 --gen-tokens 12 --top-logprobs 32 --no-floor",
                              "stepwise", &st, NULL);
    CHECK_EQ_INT(st, 0);
    json_t *e = drift_between("", "--logprob-noise 0.3", "--contexts 24,100 --prompts 4 --gen-tokens 12 --top-logprobs 32 --no-floor",
                              "echo", &st, NULL);
    CHECK_EQ_INT(st, 0);
    if (s && e) {
        CHECK_STR(json_string_value(json_object_get(json_object_get(s, "candidate"), "score_method")), "stepwise");
        CHECK_STR(json_string_value(json_object_get(json_object_get(e, "candidate"), "score_method")), "echo");
        const char *keys[] = { "top1_agreement", "kl", "mean_logprob_delta", "continuation_delta_ppl", "exact_match_rate" };
        for (int k = 0; k < 2; k++) {
            long long ctx = k ? 100 : 24;
            for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
                CHECK_MSG(fabs(json_number_value(json_object_get(bucket(s, ctx), keys[i])) -
                               json_number_value(json_object_get(bucket(e, ctx), keys[i]))) < 1e-12,
                          "%s at %lld: stepwise %.12g vs echo %.12g", keys[i], ctx,
                          json_number_value(json_object_get(bucket(s, ctx), keys[i])), json_number_value(json_object_get(bucket(e, ctx), keys[i])));
        }
    }
    json_decref(s);
    json_decref(e);
}

TEST(drift_top_k_kl_is_a_lower_bound) {
    int st;
    json_t *k32 = drift_between("", "--logprob-noise 0.4", "--contexts 40 --prompts 4 --gen-tokens 16 --top-logprobs 32 --no-floor", "k32", &st, NULL);
    json_t *k3 = drift_between("", "--logprob-noise 0.4", "--contexts 40 --prompts 4 --gen-tokens 16 --top-logprobs 3 --no-floor", "k3", &st, NULL);
    if (k32 && k3) {
        const json_t *a = bucket(k32, 40), *b = bucket(k3, 40);
        double full = json_number_value(json_object_get(a, "kl")), low = json_number_value(json_object_get(b, "kl"));
        CHECK_MSG(low <= full + 1e-12 && low > 0, "top-3 KL %g vs all-words KL %g", low, full);
        CHECK(json_number_value(json_object_get(b, "kl_tail_mass")) > 1e-4);
        /* agreement needs only the top-1: the same either way */
        CHECK(json_number_value(json_object_get(a, "top1_agreement")) == json_number_value(json_object_get(b, "top1_agreement")));
        CHECK_EQ_INT(json_array_size(json_object_get(b, "rank_counts")), 4);
    }
    json_decref(k32);
    json_decref(k3);
}

TEST(drift_reference_text_perplexity) {
    /* a text of the model's words: delta PPL over its windows, from the same definition */
    char path[512];
    snprintf(path, sizeof path, "%s/ref.txt", harness_tmpdir());
    FILE *f = fopen(path, "w");
    rng r;
    rng_seed(&r, 7);
    for (int i = 0; f && i < 1100; i++) fputs(fixed_lm_word((uint32_t)rng_below(&r, V)), f);
    if (f) fclose(f);
    char args[768];
    snprintf(args, sizeof args, "--contexts 64,256 --prompts 2 --gen-tokens 8 --top-logprobs 32 --text %s --windows 4", path);
    int st;
    json_t *d = drift_between("", "--logprob-noise 0.2,1", args, "text", &st, NULL);
    CHECK_EQ_INT(st, 0);
    if (!d) return;
    char pos[512];
    snprintf(pos, sizeof pos, "%s/text.jsonl", harness_tmpdir());
    long long ctxs[2] = { 64, 256 };
    for (int k = 0; k < 2; k++) {
        const json_t *b = bucket(d, ctxs[k]);
        if (!b) { CHECK(0); continue; }
        CHECK_EQ_INT(json_integer_value(json_object_get(b, "text_windows")), 4);
        CHECK_EQ_INT(json_integer_value(json_object_get(b, "text_tokens")), 4 * (ctxs[k] - 1));
        CHECK_STR(json_string_value(json_object_get(b, "delta_ppl_source")), "text");
        expect_sum e;
        CHECK(expected_from_positions(pos, "text", ctxs[k], 0.2, 1, &e) == 0);
        CHECK_EQ_INT(e.n, 4 * (ctxs[k] - 1));
        if (!e.n) continue;
        double x = -e.dlp / e.n, se = sqrt((e.var_dlp + e.mc_var) / ((double)e.n * e.n));
        CHECK_NEAR(json_number_value(json_object_get(b, "text_delta_ppl")), expm1(x), 4.5 * se * exp(x) + 1e-9);
        CHECK(json_number_value(json_object_get(b, "delta_ppl")) == json_number_value(json_object_get(b, "text_delta_ppl")));
        CHECK(json_number_value(json_object_get(b, "text_ppl_candidate")) > json_number_value(json_object_get(b, "text_ppl_baseline")));
        /* the floor scored the same windows on the same server: no difference at all */
        CHECK(json_number_value(json_object_get(json_object_get(b, "floor"), "text_delta_ppl")) == 0.0);
    }
    json_decref(d);
}

TEST(drift_bad_input_and_a_server_without_logprobs) {
    char *out = NULL;
    int st;
    out = test_run_merged("drift --baseline http://127.0.0.1:1", &st);
    CHECK_EQ_INT(st, 2);
    CHECK(out && strstr(out, "--candidate"));
    free(out);
    out = test_run_merged("drift --baseline http://127.0.0.1:1 --candidate http://127.0.0.1:1 --gate 'top1_agreement>0.9'", &st);
    CHECK_EQ_INT(st, 2);
    CHECK(out && strstr(out, "use >= (a floor) or <= (a ceiling)"));
    free(out);
    out = test_run_merged("drift --baseline http://127.0.0.1:1 --candidate http://127.0.0.1:1 --contexts 0", &st);
    CHECK_EQ_INT(st, 2);
    free(out);
    /* a real llama.cpp body without logprobs (the server was not asked, or a proxy stripped them) */
    char *body;
    size_t blen;
    if (fileio_read_all("tests/fixtures/llamacpp/completions_nonstream.body", &body, &blen) < 0) { CHECK(0); return; }
    char *resp = malloc(blen + 256);
    int n = snprintf(resp, 256, "HTTP/1.1 200 OK\r\nContent-Type: application/json; charset=utf-8\r\nContent-Length: %zu\r\n\r\n", blen);
    memcpy(resp + n, body, blen + 1);
    int port;
    test_script *sc = test_script_start(resp, (size_t)n + blen, 0, &port);
    char cmd[256];
    snprintf(cmd, sizeof cmd, "drift --baseline http://127.0.0.1:%d --candidate http://127.0.0.1:%d", port, port);
    out = test_run_merged(cmd, &st);
    test_script_stop(sc);
    CHECK_EQ_INT(st, 2);
    CHECK_MSG(out && strstr(out, "returned no logprobs") && strchr(out, '\n') == strrchr(out, '\n'), "%s", out ? out : "");
    free(out);
    free(resp);
    free(body);
}

TEST(drift_gate_fails_a_drifting_candidate_and_report_draws_it) {
    int st;
    char *out = NULL;
    json_t *d = drift_between("", "--logprob-noise 0.5,1", "--contexts 32,256 --prompts 4 --gen-tokens 16 --gate 'top1_agreement>=0.99,delta_ppl@32<=+50%'",
                              "gated", &st, &out);
    CHECK_EQ_INT(st, 1);
    CHECK(out && strstr(out, "gate: FAILED (1 of 2 rules failed)") && strstr(out, "FAIL top1_agreement>=0.99"));
    free(out);
    if (d) CHECK(json_is_false(json_object_get(json_object_get(d, "gate"), "passed")));
    json_decref(d);
    char cmd[2048], html[512], md[512];
    snprintf(html, sizeof html, "%s/drift.html", harness_tmpdir());
    snprintf(md, sizeof md, "%s/drift.md", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "report %s/gated.json -o %s --md %s", harness_tmpdir(), html, md);
    out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0, "report: %s", out ? out : "");
    free(out);
    char *page = NULL;
    size_t len;
    if (fileio_read_all(html, &page, &len) == 0) {
        CHECK(strstr(page, "<svg") && strstr(page, "Top-1 agreement by context") && strstr(page, "by context length"));
        CHECK(!strstr(page, "<script"));
        free(page);
    } else CHECK(0);
    if (fileio_read_all(md, &page, &len) == 0) {
        CHECK(strstr(page, "| context |") != NULL);
        free(page);
    } else CHECK(0);
}

TEST(drift_interrupted_run_keeps_what_it_measured) {
    test_server b;
    /* a slow server: every request takes 300 ms, so the run is mid-way when interrupted */
    if (test_serve_start(&b, "--ttft 300ms --itl 0") != 0) { CHECK(0); return; }
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/partial.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "drift --baseline %s --candidate %s --contexts 8,16,32,64 --prompts 2 --gen-tokens 4 --concurrency 2 --score stepwise --quiet --out %s",
             b.url, b.url, path);
    /* interrupted once the server has answered a couple of its requests and holds another */
    int st = test_run_interrupt_when_served(cmd, &b, 2, 1, NULL, NULL);
    test_serve_stop(&b);
    CHECK_EQ_INT(st, 1);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    CHECK(json_is_true(json_object_get(d, "partial")));
    const json_t *last = json_array_get(json_object_get(d, "buckets"), json_array_size(json_object_get(d, "buckets")) - 1);
    CHECK(json_is_false(json_object_get(last, "complete")));
    json_decref(d);
}

TEST(drift_accuracy_cost_in_diagnose_and_tune) {
    /* a small drift result to hand over */
    int st;
    json_t *d = drift_between("", "--logprob-noise 0.3,1", "--contexts 16,128 --prompts 3 --gen-tokens 8", "kvcost", &st, NULL);
    CHECK_EQ_INT(st, 0);
    json_decref(d);
    const char *tmp = harness_tmpdir();
    char cmd[2048];
    /* KV-bound on the simulator: diagnose advises kv_cache_dtype fp8 */
    snprintf(cmd, sizeof cmd, "sim --concurrency 64 --requests 200 --dataset random:in=1024,out=512 --num-gpu-blocks 2000 --out %s/kv.json", tmp);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "diagnose %s/kv.json", tmp);
    char *out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 0);
    CHECK_MSG(out && strstr(out, "kv_cache_dtype: bf16 \xe2\x86\x92 fp8") && strstr(out, "accuracy: untested for accuracy"), "%s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "diagnose %s/kv.json --drift %s/kvcost.json --json", tmp, tmp);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 0);
    json_t *dg = out ? json_loads(out, 0, NULL) : NULL;
    free(out);
    bool seen = false;
    size_t i, k;
    json_t *f, *kn;
    json_array_foreach(json_object_get(dg, "findings"), i, f)
        json_array_foreach(json_object_get(f, "knobs"), k, kn)
            if (!strcmp(json_string_value(json_object_get(kn, "knob")), "kv_cache_dtype")) {
                const char *acc = json_string_value(json_object_get(kn, "accuracy"));
                seen = true;
                CHECK_MSG(acc && strstr(acc, "accuracy cost (dsperf drift)") && strstr(acc, "16 ") && strstr(acc, "128 "), "%s", acc ? acc : "(none)");
            }
    CHECK(seen);
    json_decref(dg);
    snprintf(cmd, sizeof cmd, "diagnose %s/kv.json --drift %s/kv.json", tmp, tmp);   /* not a drift file */
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 2);
    free(out);
    /* tune recommends fp8 KV on a small-memory GPU: the recommendation carries the cost */
    snprintf(cmd, sizeof cmd, "tune --sim-flags '--model deepseek-v2-lite --gpu l40s --kv-dtype {kv}' --grid kv=bf16,fp8 "
             "--concurrency 128 --requests 200 --dataset random:in=4096,out=128 --out %s/t.json --drift %s/kvcost.json", tmp, tmp);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 0);
    CHECK_MSG(out && strstr(out, "Recommendation: kv=fp8") && strstr(out, "kv=fp8 instead of bf16: accuracy cost (dsperf drift)"), "%s", out ? out : "");
    free(out);
    /* the tune file keeps the drift result it was analysed with */
    snprintf(cmd, sizeof cmd, "tune --show %s/t.json", tmp);
    out = test_run_merged(cmd, &st);
    CHECK(out && strstr(out, "kv=fp8 instead of bf16: accuracy cost (dsperf drift)"));
    free(out);
    /* without one, the same recommendation says it is untested */
    char path[512];
    snprintf(path, sizeof path, "%s/t.json", tmp);
    json_t *t = test_load_json(path);
    CHECK(t != NULL);
    if (!t) return;
    json_object_del(t, "drift");
    snprintf(path, sizeof path, "%s/t2.json", tmp);
    CHECK(json_dump_file(t, path, 0) == 0);
    json_decref(t);
    snprintf(cmd, sizeof cmd, "tune --show %s", path);
    out = test_run_merged(cmd, &st);
    CHECK(out && strstr(out, "kv=fp8 instead of bf16: untested for accuracy"));
    free(out);
}

TEST(drift_keeps_credentials_out_of_its_files) {
    const char *key = "sk-drifttestsecret0123456789abcdef";
    char args[512], path[512], html[512], cmd[1200];
    snprintf(args, sizeof args, "--contexts 16 --prompts 2 --gen-tokens 4 --header 'Authorization: Bearer %s' --header 'X-Api-Key: %s'", key, key);
    int st;
    char *out = NULL;
    json_t *d = drift_between("", "", args, "creds", &st, &out);
    CHECK_EQ_INT(st, 0);
    CHECK(out && !strstr(out, key));
    free(out);
    json_decref(d);
    snprintf(path, sizeof path, "%s/creds.json", harness_tmpdir());
    snprintf(html, sizeof html, "%s/creds.html", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "report %s -o %s", path, html);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    const char *files[] = { path, html };
    for (int i = 0; i < 2; i++) {
        char *text = NULL;
        size_t len;
        CHECK(fileio_read_all(files[i], &text, &len) == 0);
        CHECK_MSG(text && !strstr(text, key) && strstr(text, "redacted"), "%s holds the key or no mask", files[i]);
        free(text);
    }
}
