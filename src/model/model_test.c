/* model tests — parameter counts against the published totals, KV bytes per token, config.json. */
#include "harness.h"
#include "model/model.h"
#include <stdio.h>
#include <string.h>

/* Published totals are rounded (671B, 236B, 16B, 7B, 67B); derived counts must land within 2%
 * of the total and 3% of the active count ("active" excludes the embedding lookup). */
TEST(model_param_totals_match_published) {
    for (size_t i = 0; model_catalog(i); i++) {
        const model_arch *m = model_catalog(i);
        model_params p;
        model_count_params(m, &p);
        double tot = p.total / 1e9, act = p.active / 1e9;
        CHECK_MSG(fabs(tot / m->published_total_b - 1) < 0.02, "%s total %.2fB vs %gB", m->name, tot, m->published_total_b);
        if (m->published_active_b > 0) /* dense models publish only the total */
            CHECK_MSG(fabs(act / m->published_active_b - 1) < 0.03, "%s active %.2fB vs %gB", m->name, act, m->published_active_b);
    }
    model_params p;
    model_count_params(model_find("deepseek-v3"), &p);
    CHECK_EQ_INT(p.n_dense_layers, 3);
    CHECK_EQ_INT(p.n_moe_layers, 58);
    /* MTP module: the HF checkpoint's 685B minus the 671B */
    CHECK_NEAR((p.total + p.mtp) / 1e9, 685, 685 * 0.01);
}

TEST(model_kv_bytes_exact) {
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-v3"), DT_BF16, 1), 70272);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("DeepSeek-R1"), DT_BF16, 8), 70272); /* replicated */
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-v2"), DT_BF16, 1), 69120);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-v2-lite"), DT_BF16, 1), 31104);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-v3"), DT_FP8, 1), 35136);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-v2"), DT_FP8, 1), 34560);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-v2-lite"), DT_INT8, 1), 15552);
    /* MHA: 30 x 2 x 32 x 128 x 2; split by TP */
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-llm-7b"), DT_BF16, 1), 491520);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-llm-7b"), DT_BF16, 2), 245760);
    /* GQA 8 KV heads: 95 x 2 x 8 x 128 x 2, and at TP 16 each rank keeps one head */
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-llm-67b"), DT_BF16, 1), 389120);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(model_find("deepseek-llm-67b"), DT_BF16, 16), 48640);
}

TEST(model_find_aliases) {
    CHECK(model_find("deepseek-ai/DeepSeek-V2-Lite-Chat") == model_find("deepseek-v2-lite"));
    CHECK(model_find("DeepSeek-R1-0528") == model_find("deepseek-v3"));
    CHECK(model_find("deepseek-llm-67b-chat") == model_find("deepseek-llm-67b"));
    CHECK(model_find("llama-3") == NULL);
    CHECK(hw_find("H200") && hw_find("a100") && hw_find("MI300X") && !hw_find("tpu"));
    model_dtype d;
    CHECK(model_dtype_parse("auto", DT_FP8, &d) == 0 && d == DT_FP8);
    CHECK(model_dtype_parse("fp8_e4m3", DT_BF16, &d) == 0 && d == DT_FP8);
    CHECK(model_dtype_parse("fp7", DT_BF16, &d) == -1);
    CHECK_NEAR(hw_matmul_flops(hw_find("a100"), DT_FP8), 312e12, 1); /* no fp8 tensor cores */
    CHECK_NEAR(hw_matmul_flops(hw_find("h100"), DT_FP8), 1979e12, 1);
}

static const char *write_file(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", harness_tmpdir(), name);
    FILE *f = fopen(path, "w");
    if (f) { fputs(text, f); fclose(f); }
    return path;
}

/* V2-Lite's released config.json (the fields that matter) reads back to the built-in numbers. */
TEST(model_hf_config_mla_moe) {
    const char *path = write_file("v2lite.json",
        "{\"architectures\":[\"DeepseekV2ForCausalLM\"],\"hidden_size\":2048,\"num_hidden_layers\":27,"
        "\"num_attention_heads\":16,\"num_key_value_heads\":16,\"vocab_size\":102400,\"q_lora_rank\":null,"
        "\"kv_lora_rank\":512,\"qk_nope_head_dim\":128,\"qk_rope_head_dim\":64,\"v_head_dim\":128,"
        "\"intermediate_size\":10944,\"moe_intermediate_size\":1408,\"n_routed_experts\":64,\"n_shared_experts\":2,"
        "\"num_experts_per_tok\":6,\"first_k_dense_replace\":1,\"moe_layer_freq\":1,\"tie_word_embeddings\":false,"
        "\"max_position_embeddings\":163840,\"torch_dtype\":\"bfloat16\"}");
    model_arch m;
    char err[256];
    CHECK(model_load_hf_config(path, &m, err, sizeof err) == 0);
    model_params a, b;
    model_count_params(&m, &a);
    model_count_params(model_find("deepseek-v2-lite"), &b);
    CHECK_NEAR(a.total, b.total, 0.5);
    CHECK_NEAR(a.active, b.active, 0.5);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(&m, DT_BF16, 1), 31104);
    CHECK(model_is_moe(&m) && model_is_mla(&m));
}

TEST(model_hf_config_gqa_and_errors) {
    const char *path = write_file("67b.json",
        "{\"hidden_size\":8192,\"num_hidden_layers\":95,\"num_attention_heads\":64,\"num_key_value_heads\":8,"
        "\"vocab_size\":102400,\"intermediate_size\":22016}");
    model_arch m;
    char err[256];
    CHECK(model_load_hf_config(path, &m, err, sizeof err) == 0);
    model_params p;
    model_count_params(&m, &p);
    CHECK_NEAR(p.total / 1e9, 67.4, 0.1);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(&m, DT_BF16, 1), 389120);
    const char *bad = write_file("bad.json", "{\"hidden_size\":8192}");
    CHECK(model_load_hf_config(bad, &m, err, sizeof err) == -1);
    CHECK(strstr(err, "num_hidden_layers") != NULL);
    CHECK(model_load_hf_config("/nonexistent/config.json", &m, err, sizeof err) == -1);
}

/* Other MoE layouts read through the same fields: Mixtral-8x7B (num_local_experts) lands on its
 * published 46.7B total and 12.9B active (12.75B without the embedding lookup). */
TEST(model_hf_config_mixtral) {
    const char *path = write_file("mixtral.json",
        "{\"hidden_size\":4096,\"num_hidden_layers\":32,\"num_attention_heads\":32,\"num_key_value_heads\":8,"
        "\"vocab_size\":32000,\"intermediate_size\":14336,\"num_local_experts\":8,\"num_experts_per_tok\":2}");
    model_arch m;
    char err[256];
    CHECK(model_load_hf_config(path, &m, err, sizeof err) == 0);
    model_params p;
    model_count_params(&m, &p);
    CHECK_NEAR(p.total / 1e9, 46.7, 46.7 * 0.01);
    CHECK_NEAR((p.active + p.embed) / 1e9, 12.9, 12.9 * 0.02);
    CHECK_EQ_INT(p.n_moe_layers, 32);
    CHECK_EQ_INT((long long)model_kv_bytes_per_token(&m, DT_BF16, 1), 32 * 2 * 8 * 128 * 2);
}
