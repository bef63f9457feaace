/* plan tests — KV capacity and dtypes, fitting, recommendations, and the CLI (table, JSON, errors). */
#include "harness.h"
#include "testutil.h"
#include "plan/plan.h"
#include <jansson.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

static int compute(plan_inputs *in, plan_result *r) {
    char err[256] = "";
    int rc = plan_compute(in, r, err, sizeof err);
    CHECK_MSG(rc == 0, "plan_compute: %s", err);
    return rc;
}

TEST(plan_fp8_kv_doubles_capacity) {
    plan_inputs in;
    plan_default_inputs(&in);
    plan_result a, b;
    compute(&in, &a);
    snprintf(in.target.kv_dtype, sizeof in.target.kv_dtype, "fp8");
    compute(&in, &b);
    CHECK_NEAR(a.kv_bytes_per_token, 31104, 0);
    CHECK_NEAR(b.kv_bytes_per_token, 15552, 0);
    CHECK_NEAR((double)b.kv_tokens / a.kv_tokens, 2.0, 1e-4);
    /* budget = 0.9 x memory - weights - reserved, and tokens = budget / bytes per token */
    CHECK_NEAR(a.kv_tokens, a.kv_budget_bytes / 31104, 16);
    CHECK(a.seqs_at_context_len == a.kv_blocks / 72);   /* 1152 tokens = 72 blocks of 16 */
}

TEST(plan_v3_fits_on_8_h200_not_on_8_h100_bf16) {
    plan_inputs in;
    plan_default_inputs(&in);
    snprintf(in.target.model, sizeof in.target.model, "deepseek-r1");
    in.target.tp = 8;
    plan_result r;
    compute(&in, &r);
    CHECK(r.fits);
    CHECK_NEAR(r.weight_dtype, DT_FP8, 0);
    CHECK_NEAR(r.kv_bytes_per_token, 70272, 0);   /* replicated on every TP rank */
    CHECK_NEAR(r.weight_bytes_total / 1e9, 673, 5);  /* 671B at 1 byte, embeddings and head in bf16 */
    snprintf(in.target.gpu, sizeof in.target.gpu, "h100");
    snprintf(in.target.weight_dtype, sizeof in.target.weight_dtype, "bf16");
    compute(&in, &r);
    CHECK(!r.fits);
    CHECK(r.n_reasons > 0 && strstr(r.reasons[0], "does not fit"));
}

TEST(plan_recommendation_meets_target) {
    plan_inputs in;
    plan_default_inputs(&in);
    in.target.max_num_seqs = 100000;
    /* the recommendation logic on a plain roofline (no fixed costs) */
    in.target.factors.step_overhead_s = in.target.factors.seq_overhead_s = in.target.factors.kernel_s = 0;
    in.target.factors.step_overhead_v1_s = in.target.factors.seq_overhead_v1_s = 0;
    in.target.factors.moe_eff = 1;
    in.tpot_target_s = 0.012;
    plan_result r;
    compute(&in, &r);
    CHECK(r.rec_max_num_seqs > 1);
    CHECK(r.rec_tpot_s <= in.tpot_target_s);
    /* one more sequence would miss the target */
    in.batch = (int)r.rec_max_num_seqs + 1;
    plan_result r2;
    compute(&in, &r2);
    CHECK(r2.decode.t > in.tpot_target_s);
    /* decode ceiling at batch B is B x BW / bytes */
    CHECK_NEAR(r2.bw_ceiling_tokens_per_s, in.batch * 4.8e12 / r2.decode.bytes, 1e-6 * r2.bw_ceiling_tokens_per_s);
    /* at context 1088 V2-Lite's decode stays balanced (the latent KV per sequence costs about what
     * its math does); at a short context the weights' math catches up at a finite batch */
    in.context = 128;
    compute(&in, &r2);
    CHECK(r2.crossover_batch > 1);
    in.context = 0;
    /* adaptive rule: a rate the instance sustains gives a batch within the SLO batch */
    in.rate_per_s = 10;
    in.batch = 64;
    compute(&in, &r);
    CHECK(r.have_rate && r.adaptive_max_num_seqs > 0 && r.adaptive_max_num_seqs <= r.rec_max_num_seqs);
    CHECK(r.p99_concurrency > r.mean_concurrency);
    in.rate_per_s = 1e6;
    compute(&in, &r);
    CHECK(r.adaptive_max_num_seqs == 0 && r.replicas_needed > 1);
}

TEST(plan_cli_table_json_errors) {
    int st;
    char *out = test_run_merged("plan --list", &st);
    CHECK(st == 0 && out && strstr(out, "deepseek-v3") && strstr(out, "mi300x") && strstr(out, "70272"));
    free(out);
    out = test_run_merged("plan --model deepseek-v3 --gpu h200 --tp 8 --kv-dtype fp8 --json", &st);
    CHECK_EQ_INT(st, 0);
    json_error_t je;
    json_t *o = out ? json_loads(out, 0, &je) : NULL;
    CHECK(o != NULL);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(o, "memory"), "kv_bytes_per_token")), 35136, 0);
    CHECK(json_object_get(json_object_get(o, "communication"), "a2a_bytes_per_decode_step") != NULL);
    json_decref(o);
    free(out);
    out = test_run_merged("plan --model deepseek-v2-lite --gpu h100 --rate 20/s", &st);
    CHECK(st == 0 && out && strstr(out, "Little's law") && strstr(out, "bandwidth-bound"));
    free(out);
    out = test_run_merged("plan --gpu tpu-v5", &st);
    CHECK(st == 2 && out && strstr(out, "unknown GPU"));
    free(out);
    out = test_run_merged("plan --tp 3", &st);
    CHECK(st == 2 && out && strstr(out, "divide"));
    free(out);
    out = test_run_merged("plan --batch zero", &st);
    CHECK_EQ_INT(st, 2);
    free(out);
}

/* Overriding the H200's bandwidth with the H100's gives the H100's bandwidth-bound time. */
TEST(plan_hardware_overrides) {
    plan_inputs in;
    plan_default_inputs(&in);
    plan_result a, b;
    snprintf(in.target.gpu, sizeof in.target.gpu, "h100");
    compute(&in, &a);
    snprintf(in.target.gpu, sizeof in.target.gpu, "h200");
    char err[128];
    CHECK(sim_params_set(&in.target, "hbm-bw", "3.35TB/s", err, sizeof err) == 0);
    CHECK(sim_params_set(&in.target, "gpu-mem", "80GiB", err, sizeof err) == 0);
    compute(&in, &b);
    CHECK_NEAR(b.decode.t_mem, a.decode.t_mem, 1e-12);
    CHECK_NEAR(b.gpu_mem_bytes, 80.0 * 1073741824.0, 1);
}
