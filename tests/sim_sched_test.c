/* `dsperf sim` and the engine profile's scheduler cost, end to end on the virtual clock: the results
 * state the per-step and per-sequence CPU costs the run's profile paid (vLLM V1's engine core, the
 * 2024 schedulers', none for llama.cpp), and one request decoding alone pays V1's per-step cost once
 * per token, so raising it by 2 ms raises the median TPOT by exactly 2 ms. */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>

static json_t *run_sim(const char *flags, const char *name) {
    char out[512], cmd[1024];
    snprintf(out, sizeof out, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "sim --quiet --model deepseek-v2-lite --gpu h200 --concurrency 1 --requests 4 "
             "--dataset random:in=256,out=64 %s --out %s", flags, out);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    return test_load_json(out);
}

TEST(sim_results_state_the_scheduler_cost_paid) {
    json_t *v1 = run_sim("", "v1"), *v1slow = run_sim("--step-overhead-v1 3ms", "v1slow");
    json_t *v0 = run_sim("--engine-profile vllm-v0", "v0"), *cpp = run_sim("--engine-profile llamacpp", "cpp");
    json_t *f = json_object_get(json_object_get(v1, "engine"), "factors");
    CHECK_NEAR(test_num(json_object_get(v1, "engine"), "step_overhead_s"), test_num(f, "step_overhead_v1_s"), 1e-15);
    CHECK_NEAR(test_num(json_object_get(v1, "engine"), "seq_overhead_s"), test_num(f, "seq_overhead_v1_s"), 1e-15);
    CHECK_NEAR(test_num(json_object_get(v0, "engine"), "step_overhead_s"), test_num(f, "step_overhead_s"), 1e-15);
    CHECK_NEAR(test_num(json_object_get(v0, "engine"), "seq_overhead_s"), test_num(f, "seq_overhead_s"), 1e-15);
    CHECK_NEAR(test_num(json_object_get(cpp, "engine"), "step_overhead_s"), 0, 0);
    CHECK_NEAR(test_num(json_object_get(v1slow, "engine"), "step_overhead_s"), 3e-3, 1e-15);
    /* V1's cost is its own: the 2024 one is not what the default profile paid */
    CHECK(test_num(f, "step_overhead_v1_s") != test_num(f, "step_overhead_s"));
    /* one sequence decoding alone: every token is one step, each 3 ms - V1's default longer */
    double d_ms = 3.0 - 1e3 * test_num(f, "step_overhead_v1_s");
    CHECK_NEAR(test_num(v1slow, "median_tpot_ms") - test_num(v1, "median_tpot_ms"), d_ms, 1e-6);
    json_decref(v1);
    json_decref(v1slow);
    json_decref(v0);
    json_decref(cpp);
}

/* `dsperf sim` on llama-server b4747 states the KV window its steps attended (the idle slots' cells
 * and the running request's): one user, 4 requests of 256 + 64 on 2 slots leaves the other slot
 * holding a finished request's 319 cells from the second request on, so the step-time mean lies
 * between the running request's own (257-320 cells) and that plus one slot (576-639); other profiles
 * have no such window. */
TEST(sim_results_state_the_llamacpp_kv_window) {
    json_t *b = run_sim("--engine-profile llamacpp-b4747 --max-num-seqs 2", "b4747"), *v1 = run_sim("", "v1w");
    double w = test_num(json_object_get(b, "engine"), "kv_window_tokens_mean");
    CHECK_MSG(w > 320 && w < 640, "KV window %.0f cells", w);
    CHECK(json_object_get(json_object_get(v1, "engine"), "kv_window_tokens_mean") == NULL);
    json_decref(b);
    json_decref(v1);
}
