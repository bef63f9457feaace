/* deploy_gguf — a served model's architecture from its GGUF header (llama.cpp's file): the
 * "{arch}.*" keys (block_count, embedding_length, attention.*, expert_*, ...) map onto the same
 * model_arch a Hugging Face config.json gives, and general.file_type onto the weight dtype. The
 * header is read through the tokenizer's GGUF reader (tokenizer_gguf_metadata); tensors are never
 * touched, so a model file of any size costs its header. */
#include "deploy/deploy_int.h"
#include "tokenizer/tokenizer.h"
#include <stdio.h>
#include <string.h>

enum {
    G_BLOCKS, G_EMBD, G_FFN, G_HEADS, G_HEADS_KV, G_KEY_LEN, G_VAL_LEN, G_KEY_MLA, G_VAL_MLA, G_Q_LORA, G_KV_LORA,
    G_ROPE, G_EXPERTS, G_EXPERTS_USED, G_EXPERTS_SHARED, G_EXPERT_FFN, G_SHARED_FFN, G_DENSE_LEAD, G_CTX, G_VOCAB,
    G_NEXTN, G_N
};
/* the part after "{arch}." */
static const char *const arch_keys[G_N] = {
    "block_count", "embedding_length", "feed_forward_length", "attention.head_count", "attention.head_count_kv",
    "attention.key_length", "attention.value_length", "attention.key_length_mla", "attention.value_length_mla",
    "attention.q_lora_rank", "attention.kv_lora_rank", "rope.dimension_count", "expert_count", "expert_used_count",
    "expert_shared_count", "expert_feed_forward_length", "expert_shared_feed_forward_length",
    "leading_dense_block_count", "context_length", "vocab_size", "nextn_predict_layers",
};

typedef struct {
    char arch[32], name[96];
    long long v[G_N];
    bool have[G_N];
    long long file_type;
    bool have_file_type;
    unsigned long long n_tokens;   /* tokenizer.ggml.tokens */
} gguf_keys;

static bool key_is(const gguf_meta *m, const char *k) { return strlen(k) == m->key_len && !memcmp(m->key, k, m->key_len); }

static void collect(void *ctx, const gguf_meta *m) {
    gguf_keys *g = ctx;
    if (key_is(m, "general.architecture") && m->kind == GGUF_META_STR)
        snprintf(g->arch, sizeof g->arch, "%.*s", (int)m->s_len, m->s);
    else if (key_is(m, "general.name") && m->kind == GGUF_META_STR)
        snprintf(g->name, sizeof g->name, "%.*s", (int)m->s_len, m->s);
    else if (key_is(m, "general.file_type") && m->kind == GGUF_META_INT) { g->file_type = m->i; g->have_file_type = true; }
    else if (key_is(m, "tokenizer.ggml.tokens") && m->kind == GGUF_META_ARRAY) g->n_tokens = m->n;
    size_t al = strlen(g->arch);
    /* general.architecture comes first in every writer's output (llama.cpp writes it first) */
    if (!al || m->key_len <= al + 1 || memcmp(m->key, g->arch, al) || m->key[al] != '.' || m->kind != GGUF_META_INT) return;
    for (int k = 0; k < G_N; k++)
        if (strlen(arch_keys[k]) == m->key_len - al - 1 && !memcmp(m->key + al + 1, arch_keys[k], m->key_len - al - 1)) {
            g->v[k] = m->i;
            g->have[k] = true;
        }
}

/* llama_ftype values: what the weights are stored as, and the model_dtype with the same bytes per
 * weight (block-quantized types carry scales: Q8_0 is 8.5 bits, Q4_K 4.5; the catalog's nearest).
 * The 4-bit GGUF types are q4 (4.5 bits, llama.cpp's MMQ on the int8 tensor path), not int4 (4 bits,
 * no scales, the bf16 path): int4 had them 11% light and their GEMMs on the wrong peak. */
static bool file_type_dtype(long long ft, model_dtype *d, const char **name) {
    static const struct { int ft; model_dtype d; const char *name; } t[] = {
        {1, DT_FP16, "F16"}, {32, DT_BF16, "BF16"}, {7, DT_INT8, "Q8_0 (~8.5 bits)"}, {2, DT_Q4, "Q4_0 (~4.5 bits)"},
        {3, DT_Q4, "Q4_1 (~5 bits)"}, {14, DT_Q4, "Q4_K_S (~4.5 bits)"}, {15, DT_Q4, "Q4_K_M (~4.8 bits)"},
        {25, DT_Q4, "IQ4_NL (~4.5 bits)"}, {30, DT_Q4, "IQ4_XS (~4.3 bits)"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (t[i].ft == ft) { *d = t[i].d; *name = t[i].name; return true; }
    return false;
}

static int to_arch(const gguf_keys *g, model_arch *m, const char *path, char *err, size_t errlen) {
    if (!g->arch[0] || !g->have[G_BLOCKS] || !g->have[G_EMBD] || !g->have[G_HEADS]) {
        snprintf(err, errlen, "%s: the GGUF header has no architecture (general.architecture, {arch}.block_count, "
                 "embedding_length, attention.head_count)", path);
        return -1;
    }
    memset(m, 0, sizeof *m);
    const long long *v = g->v;
    m->layers = (int)v[G_BLOCKS];
    m->hidden = (int)v[G_EMBD];
    m->heads = (int)v[G_HEADS];
    m->vocab = g->have[G_VOCAB] ? (int)v[G_VOCAB] : (int)g->n_tokens;
    m->intermediate = g->have[G_FFN] ? (int)v[G_FFN] : 4 * m->hidden;
    m->max_position = g->have[G_CTX] ? (int)v[G_CTX] : 4096;
    m->kv_lora_rank = g->have[G_KV_LORA] ? (int)v[G_KV_LORA] : 0;
    m->native_dtype = DT_BF16;
    if (m->kv_lora_rank > 0) {
        /* MLA: key = nope + rope per head; files written for absorbed MLA keep the per-head
         * sizes in *_mla and the latent size in key_length */
        int rope = g->have[G_ROPE] ? (int)v[G_ROPE] : 64;
        int key = g->have[G_KEY_MLA] ? (int)v[G_KEY_MLA] : g->have[G_KEY_LEN] ? (int)v[G_KEY_LEN] : 128 + rope;
        int val = g->have[G_VAL_MLA] ? (int)v[G_VAL_MLA] : g->have[G_VAL_LEN] ? (int)v[G_VAL_LEN] : 128;
        m->kv_heads = 1;
        m->q_lora_rank = g->have[G_Q_LORA] ? (int)v[G_Q_LORA] : 0;
        m->qk_rope_head_dim = rope;
        m->qk_nope_head_dim = key - rope;
        m->v_head_dim = val;
    } else {
        m->kv_heads = g->have[G_HEADS_KV] ? (int)v[G_HEADS_KV] : m->heads;
        m->head_dim = g->have[G_KEY_LEN] ? (int)v[G_KEY_LEN] : m->hidden / m->heads;
    }
    if (g->have[G_EXPERTS] && v[G_EXPERTS] > 0) {
        m->n_routed_experts = (int)v[G_EXPERTS];
        m->top_k = (int)v[G_EXPERTS_USED];
        m->moe_intermediate = g->have[G_EXPERT_FFN] ? (int)v[G_EXPERT_FFN] : m->intermediate;
        m->n_shared_experts = (int)v[G_EXPERTS_SHARED];
        if (!m->n_shared_experts && g->have[G_SHARED_FFN] && m->moe_intermediate > 0)
            m->n_shared_experts = (int)((v[G_SHARED_FFN] + m->moe_intermediate / 2) / m->moe_intermediate);
        m->first_k_dense = (int)v[G_DENSE_LEAD];
        m->moe_layer_freq = 1;
    }
    m->mtp_layers = (int)v[G_NEXTN];
    if (m->layers <= 0 || m->hidden <= 0 || m->heads <= 0 || m->vocab <= 0 || m->qk_nope_head_dim < 0) {
        snprintf(err, errlen, "%s: the GGUF architecture keys are inconsistent (layers %d, hidden %d, heads %d, vocab %d)",
                 path, m->layers, m->hidden, m->heads, m->vocab);
        return -1;
    }
    const char *base = strrchr(path, '/');
    snprintf(m->name, sizeof m->name, "%.63s", g->name[0] ? g->name : base ? base + 1 : path);
    return 0;
}

int deploy_from_gguf(deploy *d, const char *path, bool explicit_model, char *err, size_t errlen) {
    gguf_keys g;
    memset(&g, 0, sizeof g);
    uint64_t n_tensors = 0;
    if (tokenizer_gguf_metadata(path, collect, &g, &n_tensors, err, errlen) < 0) return -1;
    if (!n_tensors && !explicit_model) {
        snprintf(err, errlen, "%s is a vocabulary-only GGUF (no tensors): its architecture keys describe the model "
                 "its vocabulary came from, not the served one", path);
        return -1;
    }
    model_arch m;
    if (to_arch(&g, &m, path, err, errlen) < 0) return -1;
    d->arch = m;
    deploy_set(&d->arch_s, false, "GGUF header of %s (%s: %d layers, hidden %d%s)", path, g.arch, m.layers, m.hidden,
               model_is_moe(&m) ? ", MoE" : "");
    snprintf(d->model, sizeof d->model, "%s", m.name);
    deploy_set(&d->model_s, false, "GGUF general.name of %s", path);
    model_dtype wd;
    const char *tn;
    if (g.have_file_type && file_type_dtype(g.file_type, &wd, &tn)) {
        d->weight_dtype = wd;
        deploy_set(&d->weight_dtype_s, false, "GGUF general.file_type %lld = %s", g.file_type, tn);
    }
    return 0;
}
