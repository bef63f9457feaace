/* Long context and stability, end to end (issue 18).
 * - `dsperf sim --input-len 1k..64k x2` (virtual clock: nothing here depends on how busy the machine
 *   is) for DeepSeek-V2-Lite on one H200 and V3 on 8 x H200: TTFT grows with the prompt and TPOT
 *   with the context, and at concurrency 1 both equal what `dsperf plan` computes for each length
 *   (the roofline the simulator steps on); the context section's own prediction says the same.
 * - V3 on 8 x H200 at 32 users: the KV cache (703k tokens) holds 32 sequences of 16k but not of 32k;
 *   the view says it stops fitting at 32k, and so does plan.
 * - `dsperf sweep --input-len` against `serve --engine sim`: the prompts are built per level, the
 *   deployment comes from what the server says about itself (GET /v1/models meta.sim, /metrics
 *   cache_config_info), KV preemptions at 32k come from /metrics and prompts past --max-model-len
 *   are rejected (400) and counted. Times are only checked as floors (the engine's deadlines).
 * - Stability: the fixed engine with --jitter-per-stream F on the virtual clock has ITL with
 *   CV = (jitter + F n) sqrt((2T-3)/(3(T-1))) at n streams of T tokens, so S = exp(-CV) decays as
 *   exp(-lambda b) with lambda = 64 F sqrt(...): the fit recovers it within its interval and grades
 *   it; a constant jitter grades "highly stable"; `serve --jitter-per-stream` applies the same law
 *   (read from the server's own engine-time histogram: on this shared 2-core machine the client's
 *   ITL carries stalls of 50-150 ms, which the fit rightly calls too noisy to grade). */
#include "harness.h"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

/* plan's prefill (ms) and decode step (ms) for one prompt length at batch 1, context L + out/2 */
static int plan_at(const char *target, int prompt, int out, int batch, double *prefill_ms, double *decode_ms, double *seqs_fit) {
    char cmd[1200], path[512];
    snprintf(path, sizeof path, "%s/plan.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "plan %s --prompt %d --output %d --batch %d --json > %s", target, prompt, out, batch, path);
    char buf[4096];
    if (test_run_into(cmd, buf, sizeof buf) != 0) return -1;
    json_t *p = test_load_json(path);
    if (!p) return -1;
    *prefill_ms = test_num(get(p, "prefill"), "total_ms");
    *decode_ms = test_num(get(p, "decode"), "t_ms");
    if (seqs_fit) *seqs_fit = test_num(get(p, "memory"), "seqs_at_context_len");
    json_decref(p);
    return 0;
}

/* `dsperf sim <args> --quiet --out TMP/<name>.json`, its exit code checked; the document or NULL. */
static json_t *sim_json(const char *args, const char *name) {
    char cmd[1400], path[512];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "sim %s --quiet --out %s", args, path);
    int rc = test_run(cmd, NULL, NULL);
    CHECK_EQ_INT(rc, 0);
    return rc == 0 ? test_load_json(path) : NULL;
}

/* A context ladder on the simulator at concurrency 1 against plan, length by length. */
static void ladder_matches_plan(const char *target) {
    char args[512];
    snprintf(args, sizeof args, "%s --input-len 1k..64k x2 --concurrency 1 --requests 6 --dataset random:in=1024,out=128", target);
    json_t *d = sim_json(args, "ctx");
    if (!d) return;
    CHECK_STR(json_string_value(get(d, "axis")), "input_len");
    const json_t *c = get(d, "context"), *lv;
    CHECK(json_is_string(get(get(c, "prediction"), "deployment")));
    CHECK_EQ_INT(json_array_size(get(c, "levels")), 7);
    double prev_ttft = 0, prev_tpot = 0;
    size_t i;
    json_array_foreach(get(c, "levels"), i, lv) {
        int L = (int)test_num(lv, "input_len");
        CHECK_EQ_INT(L, 1024 << i);
        double ttft = test_num(lv, "median_ttft_ms"), tpot = test_num(lv, "median_tpot_ms");
        CHECK_MSG(ttft > prev_ttft, "TTFT must grow with the prompt: %d tokens %.2f ms after %.2f ms", L, ttft, prev_ttft);
        CHECK_MSG(tpot > prev_tpot, "TPOT must grow with the context: %d tokens %.4f ms after %.4f ms", L, tpot, prev_tpot);
        prev_ttft = ttft;
        prev_tpot = tpot;
        double pre_ms, dec_ms;
        CHECK(plan_at(target, L, 128, 1, &pre_ms, &dec_ms, NULL) == 0);
        /* alone on the engine, the prompt's TTFT is its chunked prefill, and each token one decode
         * step at the mean context: the cost model both share (1%: the steps' context grows by one
         * token each, plan takes the mean) */
        CHECK_MSG(fabs(ttft - pre_ms) <= 0.01 * pre_ms, "%d: TTFT %.3f ms vs plan's prefill %.3f ms", L, ttft, pre_ms);
        CHECK_MSG(fabs(tpot - dec_ms) <= 0.01 * dec_ms, "%d: TPOT %.4f ms vs plan's decode step %.4f ms", L, tpot, dec_ms);
        const json_t *pr = get(lv, "predicted");
        CHECK_NEAR(test_num(pr, "ttft_ms"), pre_ms, 1e-6 * pre_ms);
        CHECK_NEAR(test_num(pr, "tpot_ms"), dec_ms, 1e-6 * dec_ms);
        CHECK(json_is_true(get(lv, "fits")) && json_is_true(get(pr, "fits")));
        CHECK(test_num(lv, "kv_read_bytes_per_token") > 0);
    }
    CHECK(json_is_null(get(c, "stops_fitting")));
    /* attention's quadratic term shows within 64k tokens for both models (a + bL + cL^2, c > 0) */
    CHECK(test_num(get(c, "prefill"), "c_ms_per_1k_tokens2") > 0);
    CHECK(test_num(get(c, "decode"), "e_ms_per_1k_context") > 0);
    json_decref(d);
}

TEST(longctx_sim_ladder_v2lite_matches_plan) { ladder_matches_plan("--model deepseek-v2-lite --gpu h200"); }
TEST(longctx_sim_ladder_v3_matches_plan) { ladder_matches_plan("--model deepseek-v3 --gpu h200 --tp 8"); }

TEST(longctx_sim_v3_kv_runs_out_at_32k) {
    json_t *d = sim_json("--model deepseek-v3 --gpu h200 --tp 8 --input-len 4k..64k --concurrency 32 --requests 32", "kv");
    if (!d) return;
    const json_t *c = get(d, "context"), *lv;
    CHECK_EQ_INT(test_num(get(c, "stops_fitting"), "input_len"), 32768);
    size_t i;
    json_array_foreach(get(c, "levels"), i, lv) {
        int L = (int)test_num(lv, "input_len");
        double fit16, fit_here, pre, dec;
        CHECK(plan_at("--model deepseek-v3 --gpu h200 --tp 8", L, 128, 32, &pre, &dec, &fit_here) == 0);
        if (L < 32768) {
            CHECK_MSG(json_is_true(get(lv, "fits")) && test_num(lv, "preemptions") == 0, "%d tokens should fit", L);
            CHECK_MSG(fit_here >= 32, "plan: %.0f sequences of %d fit", fit_here, L);
        } else {
            CHECK_MSG(!json_is_true(get(lv, "fits")) && test_num(lv, "preemptions") > 0, "%d tokens: preemptions expected", L);
            CHECK_MSG(fit_here < 32, "plan: %.0f sequences of %d fit", fit_here, L);
            CHECK(!json_is_true(get(get(lv, "predicted"), "fits")));
        }
        (void)fit16;
    }
    json_decref(d);
}

TEST(longctx_sweep_serve_sim_ladder) {
    test_server s;
    /* V2-Lite given 30% of an H200: KV for 16 sequences of 16k, not of 32k; prompts past 50000 refused.
     * --speedup 5, not more: the 32k level preempts only while the 16 requests are in the engine
     * together, and a busy (or sanitized) client takes long to send 16 prompts of 32k tokens */
    if (test_serve_start(&s, "--engine sim --model deepseek-ai/DeepSeek-V2-Lite --gpu h200 --gpu-memory-utilization 0.3 "
                             "--max-model-len 50000 --speedup 5") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/sweep.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sweep --url %s --input-len 8k..64k x2 --concurrency 16 --requests 16 --server-metrics %s/metrics "
             "--telemetry-interval 20ms --quiet --out %s", s.url, s.url, path);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    /* the 64k level completes nothing (every prompt refused): by the run policy the sweep exits 1,
     * with every level in the file */
    CHECK_EQ_INT(rc, 1);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    CHECK_STR(json_string_value(get(d, "axis")), "input_len");
    CHECK_EQ_INT(test_num(get(d, "config"), "concurrency"), 16);
    CHECK(json_is_null(get(d, "knee")));
    const json_t *c = get(d, "context"), *lv;
    /* the deployment the server described: the prediction knows the GPU and the KV capacity */
    const char *dep = json_string_value(get(get(c, "prediction"), "deployment"));
    CHECK_MSG(dep && strstr(dep, "h200"), "prediction deployment: %s", dep ? dep : "(none)");
    CHECK_NEAR(test_num(get(c, "prediction"), "time_scale"), 5, 0);
    /* no bandwidth beyond the H200's 4.8 TB/s comes out of the TPOT slope */
    double bw = test_num(get(c, "decode"), "kv_read_bytes_per_s_implied");
    CHECK(isnan(bw) || bw <= 4.8e12);
    const json_t *first = get(get(json_array_get(get(d, "levels"), 0), "results"), "deployment");
    CHECK(test_num(get(first, "kv_capacity_tokens"), "value") > 0);
    CHECK_EQ_INT(json_array_size(get(c, "levels")), 4);
    CHECK_EQ_INT(test_num(get(c, "stops_fitting"), "input_len"), 32768);
    size_t i;
    json_array_foreach(get(c, "levels"), i, lv) {
        int L = (int)test_num(lv, "input_len");
        const json_t *pr = get(lv, "predicted");
        if (L <= 16384) {
            CHECK_EQ_INT(test_num(lv, "completed"), 16);
            CHECK(json_is_true(get(lv, "fits")));
            /* a floor: the client sees a token after the engine made it; the prediction is on the
             * client's clock (the server said it runs 5x faster: meta.speedup) */
            CHECK_MSG(test_num(lv, "median_ttft_ms") >= 0.99 * test_num(pr, "ttft_ms"), "%d: TTFT %.2f ms below the "
                      "prefill alone %.2f ms", L, test_num(lv, "median_ttft_ms"), test_num(pr, "ttft_ms"));
        } else if (L == 32768) {
            CHECK_MSG(test_num(lv, "preemptions") > 0, "32k: preemptions from /metrics %.0f", test_num(lv, "preemptions"));
            CHECK(!json_is_true(get(pr, "fits")));
        } else {
            CHECK_EQ_INT(test_num(lv, "rejected"), 16);
            CHECK(json_is_true(get(pr, "rejected")));
        }
    }
    json_decref(d);
}

/* The known law of the fixed engine's load-dependent jitter (see fixed.h). */
static double expected_lambda(double per_stream, int tokens) {
    return 64 * per_stream * sqrt((2.0 * tokens - 3) / (3.0 * (tokens - 1)));
}

static json_t *stability_of(const char *jitter) {
    char args[512];
    /* whole rounds at every level (640 = 10 x 64): no level ends with fewer streams than it offered */
    snprintf(args, sizeof args, "--engine fixed --ttft 0 --itl 10ms %s --concurrency 4..64x2 --dataset random:in=16,out=101 "
             "--requests 640", jitter);
    json_t *d = sim_json(args, "stab");
    json_t *s = d ? json_incref((json_t *)get(d, "stability")) : NULL;
    json_decref(d);
    return s;
}

TEST(longctx_stability_recovers_lambda) {
    static const struct { double per_stream; const char *grade; } cases[] = {
        {0.004, "unstable"}, {0.0015, "moderately stable"} };
    for (int k = 0; k < 2; k++) {
        char j[128];
        snprintf(j, sizeof j, "--jitter 0.02 --jitter-per-stream %g", cases[k].per_stream);
        json_t *s = stability_of(j);
        CHECK(s != NULL);
        if (!s) continue;
        double lam = expected_lambda(cases[k].per_stream, 101);
        CHECK(json_is_true(get(s, "fitted")));
        CHECK_MSG(test_num(s, "lambda_lo") <= lam && lam <= test_num(s, "lambda_hi"), "lambda %.4f [%.4f, %.4f], law %.4f",
                  test_num(s, "lambda"), test_num(s, "lambda_lo"), test_num(s, "lambda_hi"), lam);
        CHECK_NEAR(test_num(s, "s0"), exp(-0.02 * sqrt(199.0 / 300)), 0.005);
        CHECK_STR(json_string_value(get(s, "grade")), cases[k].grade);
        CHECK_EQ_INT(test_num(s, "levels_used"), 5);
        json_decref(s);
    }
}

TEST(longctx_stability_flat_is_highly_stable) {
    json_t *s = stability_of("--jitter 0.1");
    CHECK(s != NULL);
    if (!s) return;
    CHECK(json_is_true(get(s, "fitted")));
    CHECK_STR(json_string_value(get(s, "grade")), "highly stable");
    CHECK(test_num(s, "lambda_lo") <= 0 && 0 <= test_num(s, "lambda_hi"));
    CHECK_EQ_INT(test_num(get(s, "recommended_batch"), "lo"), 64);
    CHECK_EQ_INT(test_num(get(s, "recommended_batch"), "hi"), 512);
    json_decref(s);
}

TEST(longctx_stability_too_short_says_so) {
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/short.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --engine fixed --itl 10ms --jitter 0.1 --concurrency 1..4 --requests 40 --out %s", path);
    char *out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    CHECK_MSG(out && strstr(out, "STABILITY (itl-cv) not graded: too short"), "%s", out ? out : "");
    json_t *d = test_load_json(path);
    const json_t *s = get(d, "stability");
    CHECK(json_is_false(get(s, "fitted")));
    CHECK(json_is_null(get(s, "lambda")));
    free(out);
    json_decref(d);
}

/* Share of the server's own inter-token gaps (engine time, vllm:inter_token_latency_seconds)
 * outside its (0.010, 0.025] s bucket, over the requests between two scrapes. */
static double outside_share(const char *before, const char *after) {
    const char *le10 = "vllm:inter_token_latency_seconds_bucket{le=\"0.01\"", *le25 = "vllm:inter_token_latency_seconds_bucket{le=\"0.025\"";
    const char *all = "vllm:inter_token_latency_seconds_count";
    double n = test_prom_value(after, all) - (before ? test_prom_value(before, all) : 0);
    double below = test_prom_value(after, le10) - (before ? test_prom_value(before, le10) : 0);
    double upto = test_prom_value(after, le25) - (before ? test_prom_value(before, le25) : 0);
    return n > 0 ? (n - (upto - below)) / n : NAN;
}

/* serve's engine applies the load-dependent law: 15 ms gaps whose deadlines move by +-(0.03 x
 * streams) x 15 ms. One stream: every gap within 15 +- 0.9 ms. Sixteen: deadlines +-7.2 ms, so a
 * gap (15 ms + the difference of two such offsets) leaves (10, 25] ms with probability
 * (9.4^2 + 4.4^2) / (2 x 14.4^2) = 0.26 (the first gap of a request, after an unmoved first token,
 * 0.15). Read from the server's own histogram in engine time, so the machine's load cannot move
 * it (only a client slow to send its next request leaves a stream out for a moment: fewer). */
TEST(longctx_serve_jitter_per_stream_follows_load) {
    test_server s;
    if (test_serve_start(&s, "--ttft 0 --itl 15ms --jitter-per-stream 0.03") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char cmd[1024], murl[128];
    snprintf(murl, sizeof murl, "%s/metrics", s.url);
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 1 --requests 8 --dataset random:in=8,out=21 --quiet", s.url);
    int rc1 = test_run(cmd, NULL, NULL);
    char *m1 = test_http_get(murl);
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 16 --requests 64 --dataset random:in=8,out=21 --quiet", s.url);
    int rc2 = test_run(cmd, NULL, NULL);
    char *m2 = test_http_get(murl);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc1, 0);
    CHECK_EQ_INT(rc2, 0);
    CHECK(m1 && m2);
    if (m1 && m2) {
        double one = outside_share(NULL, m1), sixteen = outside_share(m1, m2);
        CHECK_MSG(one == 0, "one stream: %.3f of gaps outside (10, 25] ms", one);
        double expect = (19 * 0.2597 + 0.1528) / 20;
        CHECK_MSG(sixteen <= expect + 0.04 && sixteen >= 0.15, "16 streams: %.3f of gaps outside (10, 25] ms (law %.3f)",
                  sixteen, expect);
    }
    free(m1);
    free(m2);
}

/* Along output length (prompt fixed at 4k): the levels, no prefill fit, and TPOT at each output
 * length equal to plan's decode step at the mean context 4096 + M/2. */
TEST(longctx_sim_output_len_ladder) {
    json_t *d = sim_json("--model deepseek-v2-lite --gpu h200 --output-len 128..2k x4 --concurrency 1 --requests 4 "
                         "--dataset random:in=4096,out=1", "out");
    if (!d) return;
    CHECK_STR(json_string_value(get(d, "axis")), "output_len");
    const json_t *c = get(d, "context"), *lv;
    CHECK(json_is_null(get(get(c, "prefill"), "a_ms")) || !get(get(c, "prefill"), "a_ms"));
    CHECK_EQ_INT(json_array_size(get(c, "levels")), 3);
    size_t i;
    json_array_foreach(get(c, "levels"), i, lv) {
        int out = (int)test_num(lv, "output_len");
        CHECK_EQ_INT(out, 128 << (2 * i));
        CHECK_EQ_INT(test_num(lv, "input_len"), 4096);
        double pre, dec;
        CHECK(plan_at("--model deepseek-v2-lite --gpu h200", 4096, out, 1, &pre, &dec, NULL) == 0);
        CHECK_MSG(fabs(test_num(lv, "median_tpot_ms") - dec) <= 0.01 * dec, "out %d: TPOT %.4f vs plan %.4f", out,
                  test_num(lv, "median_tpot_ms"), dec);
    }
    json_decref(d);
}
