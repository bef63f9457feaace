/* model — built-in DeepSeek architectures, Hugging Face config.json loading, parameter counting
 * from the architecture, KV bytes per token. */
#include "model/model.h"
#include <jansson.h>
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* fp4: NVFP4, 4-bit values with an fp8 scale per 16 (4.5 bits); q4: GGUF Q4_0, 32 4-bit values
 * with an fp16 scale (18 bytes per 32 = 4.5 bits) */
/* mxfp4: OCP MX, 32 4-bit values with an 8-bit shared exponent (4.25 bits) */
static const double dtype_bytes[DT_COUNT] = {2, 2, 1, 1, 0.5, 0.5625, 0.5625, 0.53125};
static const char *const dtype_names[DT_COUNT] = {"bf16", "fp16", "fp8", "int8", "int4", "fp4", "q4", "mxfp4"};

double model_dtype_bytes(model_dtype d) { return d < DT_COUNT ? dtype_bytes[d] : 2; }
const char *model_dtype_name(model_dtype d) { return d < DT_COUNT ? dtype_names[d] : "?"; }

int model_dtype_parse(const char *s, model_dtype dflt, model_dtype *out) {
    static const struct { const char *name; model_dtype d; } tab[] = {
        {"bf16", DT_BF16}, {"bfloat16", DT_BF16}, {"fp16", DT_FP16}, {"float16", DT_FP16},
        {"half", DT_FP16}, {"fp8", DT_FP8}, {"fp8_e4m3", DT_FP8}, {"fp8_e5m2", DT_FP8},
        {"int8", DT_INT8}, {"w8a8", DT_INT8}, {"int4", DT_INT4}, {"w4a16", DT_INT4},
        {"fp4", DT_FP4}, {"nvfp4", DT_FP4}, {"mxfp4", DT_MXFP4}, {"q4", DT_Q4}, {"q4_0", DT_Q4},
        {"q4_k_m", DT_Q4}, {"gguf-q4", DT_Q4},
    };
    if (!s) return -1;
    if (!strcasecmp(s, "auto")) { *out = dflt; return 0; }
    for (size_t i = 0; i < sizeof tab / sizeof tab[0]; i++)
        if (!strcasecmp(s, tab[i].name)) { *out = tab[i].d; return 0; }
    return -1;
}

/* The product brief's table, from each model's released config.json. */
static const model_arch catalog[] = {
    {.name = "deepseek-v3", .hidden = 7168, .layers = 61, .heads = 128, .kv_heads = 1, .head_dim = 0,
     .vocab = 129280, .max_position = 163840, .q_lora_rank = 1536, .kv_lora_rank = 512,
     .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate = 18432,
     .n_routed_experts = 256, .n_shared_experts = 1, .top_k = 8, .moe_intermediate = 2048,
     .first_k_dense = 3, .moe_layer_freq = 1, .mtp_layers = 1, .native_dtype = DT_FP8,
     .published_total_b = 671, .published_active_b = 37},
    {.name = "deepseek-v2", .hidden = 5120, .layers = 60, .heads = 128, .kv_heads = 1,
     .vocab = 102400, .max_position = 163840, .q_lora_rank = 1536, .kv_lora_rank = 512,
     .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate = 12288,
     .n_routed_experts = 160, .n_shared_experts = 2, .top_k = 6, .moe_intermediate = 1536,
     .first_k_dense = 1, .moe_layer_freq = 1, .native_dtype = DT_BF16,
     .published_total_b = 236, .published_active_b = 21},
    {.name = "deepseek-v2-lite", .hidden = 2048, .layers = 27, .heads = 16, .kv_heads = 1,
     .vocab = 102400, .max_position = 163840, .q_lora_rank = 0, .kv_lora_rank = 512,
     .qk_nope_head_dim = 128, .qk_rope_head_dim = 64, .v_head_dim = 128, .intermediate = 10944,
     .n_routed_experts = 64, .n_shared_experts = 2, .top_k = 6, .moe_intermediate = 1408,
     .first_k_dense = 1, .moe_layer_freq = 1, .native_dtype = DT_BF16,
     .published_total_b = 16, .published_active_b = 2.4},
    {.name = "deepseek-llm-7b", .hidden = 4096, .layers = 30, .heads = 32, .kv_heads = 32, .head_dim = 128,
     .vocab = 102400, .max_position = 4096, .intermediate = 11008, .native_dtype = DT_BF16,
     .published_total_b = 7, .published_active_b = 0},
    {.name = "deepseek-llm-67b", .hidden = 8192, .layers = 95, .heads = 64, .kv_heads = 8, .head_dim = 128,
     .vocab = 102400, .max_position = 4096, .intermediate = 22016, .native_dtype = DT_BF16,
     .published_total_b = 67, .published_active_b = 0},
};
#define N_MODELS (sizeof catalog / sizeof catalog[0])

static const struct { const char *alias, *name; } aliases[] = {
    {"deepseek-r1", "deepseek-v3"}, {"v3", "deepseek-v3"}, {"r1", "deepseek-v3"},
    {"v2", "deepseek-v2"}, {"v2-lite", "deepseek-v2-lite"}, {"7b", "deepseek-llm-7b"},
    {"67b", "deepseek-llm-67b"}, {"deepseek-coder-v2", "deepseek-v2"},
    {"deepseek-coder-v2-lite", "deepseek-v2-lite"}, {"llm-7b", "deepseek-llm-7b"}, {"llm-67b", "deepseek-llm-67b"},
};

const model_arch *model_catalog(size_t i) { return i < N_MODELS ? &catalog[i] : NULL; }

/* Lower-cases, drops an "org/" prefix and release suffixes (-chat, -base, -instruct, -0324, ...). */
static void normalize_name(const char *in, char *out, size_t cap) {
    const char *slash = strrchr(in, '/');
    if (slash) in = slash + 1;
    size_t n = 0;
    for (; *in && n + 1 < cap; in++) out[n++] = (char)tolower((unsigned char)*in);
    out[n] = 0;
    static const char *const suffixes[] = {"-chat", "-base", "-instruct", "-0324", "-0528", "-zero", "-0628", "-1210"};
    for (int again = 1; again;) {
        again = 0;
        for (size_t i = 0; i < sizeof suffixes / sizeof suffixes[0]; i++) {
            size_t sl = strlen(suffixes[i]), l = strlen(out);
            if (l > sl && !strcmp(out + l - sl, suffixes[i])) { out[l - sl] = 0; again = 1; }
        }
    }
}

const model_arch *model_find(const char *name) {
    if (!name) return NULL;
    char n[96];
    normalize_name(name, n, sizeof n);
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (!strcmp(n, aliases[i].alias)) { snprintf(n, sizeof n, "%s", aliases[i].name); break; }
    for (size_t i = 0; i < N_MODELS; i++)
        if (!strcmp(n, catalog[i].name)) return &catalog[i];
    return NULL;
}

int model_is_mla(const model_arch *m) { return m->kv_lora_rank > 0; }
int model_is_moe(const model_arch *m) { return m->n_routed_experts > 0 && m->top_k > 0; }

int model_layer_is_moe(const model_arch *m, int i) {
    if (!model_is_moe(m) || i < m->first_k_dense) return 0;
    int f = m->moe_layer_freq > 0 ? m->moe_layer_freq : 1;
    return i % f == 0;
}

static double attn_params(const model_arch *m) {
    double h = m->hidden, H = m->heads;
    double p = 2 * h; /* input_layernorm + post_attention_layernorm */
    if (model_is_mla(m)) {
        double qk = m->qk_nope_head_dim + m->qk_rope_head_dim;
        if (m->q_lora_rank > 0) p += h * m->q_lora_rank + m->q_lora_rank + (double)m->q_lora_rank * H * qk;
        else p += h * H * qk;
        p += h * (m->kv_lora_rank + m->qk_rope_head_dim) + m->kv_lora_rank;
        p += (double)m->kv_lora_rank * H * (m->qk_nope_head_dim + m->v_head_dim);
        p += H * m->v_head_dim * h;
    } else {
        double hd = m->head_dim > 0 ? m->head_dim : h / H;
        double kvh = m->kv_heads > 0 ? m->kv_heads : H;
        p += h * H * hd * 2 + h * kvh * hd * 2;
    }
    return p;
}

void model_count_params(const model_arch *m, model_params *o) {
    memset(o, 0, sizeof *o);
    double h = m->hidden;
    o->embed = (double)m->vocab * h;
    o->lm_head = m->tie_embeddings ? 0 : (double)m->vocab * h;
    o->final_norm = h;
    o->attn_per_layer = attn_params(m);
    o->dense_mlp_per_layer = 3 * h * m->intermediate;
    if (model_is_moe(m)) {
        o->expert = 3 * h * m->moe_intermediate;
        o->shared_per_moe_layer = 3 * h * (double)m->moe_intermediate * m->n_shared_experts;
        o->gate_per_moe_layer = (double)m->n_routed_experts * h;
    }
    for (int i = 0; i < m->layers; i++) {
        if (model_layer_is_moe(m, i)) o->n_moe_layers++;
        else o->n_dense_layers++;
    }
    double moe_layer_nonexpert = o->shared_per_moe_layer + o->gate_per_moe_layer;
    o->routed_total = o->n_moe_layers * o->expert * m->n_routed_experts;
    o->nonexpert = o->embed + o->lm_head + o->final_norm + m->layers * o->attn_per_layer +
                   o->n_dense_layers * o->dense_mlp_per_layer + o->n_moe_layers * moe_layer_nonexpert;
    o->total = o->nonexpert + o->routed_total;
    o->active = o->total - o->embed - o->n_moe_layers * o->expert * (m->n_routed_experts - m->top_k);
    if (m->mtp_layers > 0) {
        /* per MTP module: enorm, hnorm, eh_proj (2h -> h), one MoE decoder layer, shared_head norm,
         * plus the copies of embed_tokens and lm_head the HF checkpoint stores with it */
        double layer = o->attn_per_layer + (model_is_moe(m) ? moe_layer_nonexpert + o->expert * m->n_routed_experts
                                                             : o->dense_mlp_per_layer);
        o->mtp = m->mtp_layers * (3 * h + 2 * h * h + layer + o->embed + (double)m->vocab * h);
    }
}

double model_kv_bytes_per_token(const model_arch *m, model_dtype kv, int tp) {
    double b = model_dtype_bytes(kv);
    if (tp < 1) tp = 1;
    if (model_is_mla(m)) return (double)m->layers * (m->kv_lora_rank + m->qk_rope_head_dim) * b;
    int kvh = m->kv_heads > 0 ? m->kv_heads : m->heads;
    int per_rank = kvh >= tp ? kvh / tp : 1;
    double hd = m->head_dim > 0 ? m->head_dim : (double)m->hidden / m->heads;
    return (double)m->layers * 2 * per_rank * hd * b;
}

/* --- Hugging Face config.json --- */

static int jint(const json_t *root, const char *key, int dflt) {
    const json_t *v = json_object_get(root, key);
    if (json_is_integer(v)) return (int)json_integer_value(v);
    if (json_is_real(v)) return (int)json_real_value(v);
    return dflt;
}

int model_load_hf_config(const char *path, model_arch *out, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        snprintf(err, errlen, "cannot read model config %s: %s (line %d)", path, je.text, je.line);
        return -1;
    }
    const char *slash = strrchr(path, '/');
    int rc = model_arch_from_hf_json(root, path, slash ? slash + 1 : path, out, err, errlen);
    json_decref(root);
    return rc;
}

int model_arch_from_hf_json(const json_t *root, const char *what, const char *name, model_arch *out, char *err,
                            size_t errlen) {
    const char *path = what;
    if (!json_is_object(root)) {
        snprintf(err, errlen, "model config %s: not a JSON object", path);
        return -1;
    }
    model_arch m;
    memset(&m, 0, sizeof m);
    m.hidden = jint(root, "hidden_size", 0);
    m.layers = jint(root, "num_hidden_layers", 0);
    m.heads = jint(root, "num_attention_heads", 0);
    m.vocab = jint(root, "vocab_size", 0);
    static const char *const required[] = {"hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"};
    int vals[] = {m.hidden, m.layers, m.heads, m.vocab};
    for (int i = 0; i < 4; i++)
        if (vals[i] <= 0) {
            snprintf(err, errlen, "model config %s: missing or invalid \"%s\"", path, required[i]);
            return -1;
        }
    m.kv_lora_rank = jint(root, "kv_lora_rank", 0);
    m.kv_heads = model_is_mla(&m) ? 1 : jint(root, "num_key_value_heads", m.heads);
    m.head_dim = jint(root, "head_dim", m.hidden / m.heads);
    m.tie_embeddings = json_is_true(json_object_get(root, "tie_word_embeddings"));
    m.max_position = jint(root, "max_position_embeddings", 4096);
    m.q_lora_rank = jint(root, "q_lora_rank", 0);
    m.qk_nope_head_dim = jint(root, "qk_nope_head_dim", 128);
    m.qk_rope_head_dim = jint(root, "qk_rope_head_dim", 64);
    m.v_head_dim = jint(root, "v_head_dim", 128);
    m.intermediate = jint(root, "intermediate_size", 4 * m.hidden);
    /* DeepSeek names first; Mixtral's num_local_experts and Qwen-MoE's num_experts /
     * shared_expert_intermediate_size / decoder_sparse_step map onto the same structure */
    m.n_routed_experts = jint(root, "n_routed_experts", jint(root, "num_local_experts", jint(root, "num_experts", 0)));
    m.top_k = jint(root, "num_experts_per_tok", 0);
    m.moe_intermediate = jint(root, "moe_intermediate_size", m.intermediate);
    m.n_shared_experts = jint(root, "n_shared_experts", 0);
    int shared_inter = jint(root, "shared_expert_intermediate_size", 0);
    if (!m.n_shared_experts && shared_inter > 0 && m.moe_intermediate > 0)
        m.n_shared_experts = (shared_inter + m.moe_intermediate / 2) / m.moe_intermediate;
    m.first_k_dense = jint(root, "first_k_dense_replace", 0);
    m.moe_layer_freq = jint(root, "moe_layer_freq", jint(root, "decoder_sparse_step", 1));
    m.mtp_layers = jint(root, "num_nextn_predict_layers", 0);
    m.native_dtype = DT_BF16;
    const json_t *q = json_object_get(root, "quantization_config");
    const char *qm = json_string_value(json_object_get(q, "quant_method"));
    if (qm && !strcasecmp(qm, "fp8")) m.native_dtype = DT_FP8;
    const char *td = json_string_value(json_object_get(root, "torch_dtype"));
    if (!qm && td && !strcmp(td, "float16")) m.native_dtype = DT_FP16;
    const char *nm = json_string_value(json_object_get(root, "_name_or_path"));
    snprintf(m.name, sizeof m.name, "%s", nm && *nm ? nm : name);
    *out = m;
    return 0;
}

void model_print_catalogs(FILE *f) {
    fprintf(f, "Models (parameters derived from the architecture; published totals beside)\n");
    fprintf(f, "  %-18s %6s %6s %5s %-10s %-12s %9s %9s %9s %12s\n", "name", "hidden", "layers", "heads",
            "attention", "experts", "total", "active", "published", "KV B/token");
    for (size_t i = 0; i < N_MODELS; i++) {
        const model_arch *m = &catalog[i];
        model_params p;
        model_count_params(m, &p);
        char att[48], ex[48], pub[48];
        if (model_is_mla(m)) snprintf(att, sizeof att, "MLA %d+%d", m->kv_lora_rank, m->qk_rope_head_dim);
        else snprintf(att, sizeof att, "%s %d", m->kv_heads < m->heads ? "GQA" : "MHA", m->kv_heads);
        if (model_is_moe(m)) snprintf(ex, sizeof ex, "%d+%d top%d", m->n_routed_experts, m->n_shared_experts, m->top_k);
        else snprintf(ex, sizeof ex, "dense");
        if (m->published_active_b > 0) snprintf(pub, sizeof pub, "%g/%gB", m->published_total_b, m->published_active_b);
        else snprintf(pub, sizeof pub, "%gB", m->published_total_b);
        fprintf(f, "  %-18s %6d %6d %5d %-10s %-12s %8.2fB %8.2fB %9s %12.0f\n", m->name, m->hidden, m->layers,
                m->heads, att, ex, p.total / 1e9, p.active / 1e9, pub, model_kv_bytes_per_token(m, DT_BF16, 1));
    }
    fprintf(f, "  (aliases: deepseek-r1 = deepseek-v3; HF ids like deepseek-ai/DeepSeek-V2-Lite-Chat work; "
               "--model-config config.json for others)\n\n");
    hw_print_catalog(f);
}

json_t *model_arch_to_hf_json(const model_arch *m) {
    json_t *a = json_pack("{s:s,s:i,s:i,s:i,s:i,s:i,s:b,s:i,s:i,s:i}", "_name_or_path", m->name, "hidden_size", m->hidden,
        "num_hidden_layers", m->layers, "num_attention_heads", m->heads, "num_key_value_heads", m->kv_heads,
        "vocab_size", m->vocab, "tie_word_embeddings", m->tie_embeddings, "max_position_embeddings", m->max_position,
        "intermediate_size", m->intermediate, "num_nextn_predict_layers", m->mtp_layers);
    if (m->head_dim > 0) json_object_set_new(a, "head_dim", json_integer(m->head_dim));
    if (model_is_mla(m)) {
        json_t *mla = json_pack("{s:i,s:i,s:i,s:i,s:i}", "q_lora_rank", m->q_lora_rank, "kv_lora_rank", m->kv_lora_rank,
                                "qk_nope_head_dim", m->qk_nope_head_dim, "qk_rope_head_dim", m->qk_rope_head_dim,
                                "v_head_dim", m->v_head_dim);
        json_object_update(a, mla);
        json_decref(mla);
    }
    if (model_is_moe(m)) {
        json_t *moe = json_pack("{s:i,s:i,s:i,s:i,s:i,s:i}", "n_routed_experts", m->n_routed_experts, "n_shared_experts",
                                m->n_shared_experts, "num_experts_per_tok", m->top_k, "moe_intermediate_size",
                                m->moe_intermediate, "first_k_dense_replace", m->first_k_dense, "moe_layer_freq",
                                m->moe_layer_freq > 0 ? m->moe_layer_freq : 1);
        json_object_update(a, moe);
        json_decref(moe);
    }
    return a;
}
