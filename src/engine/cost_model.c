/* cost_model — roofline step time of a DeepSeek model on a GPU (see cost_model.h for the equations). */
#include "engine/cost_model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACT_BYTES 2.0           /* activations travel in bf16 */
#define TOUCHED_CACHE_N 65536

void cost_default_factors(cost_factors *f) {
    f->bw_eff = 0.85;
    f->compute_eff = 0.6;
    f->link_eff = 0.7;
    f->step_overhead_s = 1.5e-3;
    f->comm_latency_s = 10e-6;
    f->expert_skew = 0;
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Zipf(skew) popularity over the experts; a token picks top_k of them, so expert j is chosen by a
 * token with probability min(1, k q_j). With skew 0 this is k/E for every expert. The EP imbalance
 * places experts round-robin over the ep GPUs (hot experts spread out, as EPLB tries to). */
static int init_routing(cost_model *c) {
    int E = c->arch.n_routed_experts, k = c->arch.top_k;
    c->ep_imbalance = 1;
    if (c->f.expert_skew <= 0 || E <= 0) return 0;
    c->p_expert = malloc(sizeof(double) * E);
    c->touched_cache = malloc(sizeof(double) * TOUCHED_CACHE_N);
    if (!c->p_expert || !c->touched_cache) return -1;
    double sum = 0;
    for (int j = 0; j < E; j++) sum += pow(j + 1, -c->f.expert_skew);
    for (int j = 0; j < E; j++) c->p_expert[j] = fmin(1.0, k * pow(j + 1, -c->f.expert_skew) / sum);
    qsort(c->p_expert, E, sizeof(double), cmp_desc);
    for (int t = 0; t < TOUCHED_CACHE_N; t++) c->touched_cache[t] = -1;
    c->cache_n = TOUCHED_CACHE_N;
    if (c->ep > 1) {
        double maxload = 0, total = 0;
        for (int g = 0; g < c->ep; g++) {
            double load = 0;
            for (int j = g; j < E; j += c->ep) load += c->p_expert[j];
            if (load > maxload) maxload = load;
            total += load;
        }
        c->ep_imbalance = maxload / (total / c->ep);
    }
    return 0;
}

int cost_init(cost_model *c, const model_arch *arch, const hw_gpu *gpu, int tp, int ep, model_dtype weight_dtype,
              model_dtype kv_dtype, const cost_factors *f, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    if (tp < 1 || arch->heads % tp) {
        snprintf(err, errlen, "tensor parallel size %d must divide the %d attention heads of %s", tp, arch->heads, arch->name);
        return -1;
    }
    if (ep != 1 && ep != tp) {
        snprintf(err, errlen, "expert parallel size %d must be 1 (experts split by TP) or equal to --tp %d", ep, tp);
        return -1;
    }
    if (ep > 1 && !model_is_moe(arch)) {
        snprintf(err, errlen, "expert parallelism needs an MoE model; %s is dense", arch->name);
        return -1;
    }
    if (f->bw_eff <= 0 || f->compute_eff <= 0 || f->link_eff <= 0 || f->bw_eff > 1 || f->compute_eff > 1 || f->link_eff > 1) {
        snprintf(err, errlen, "efficiency factors must be in (0, 1]");
        return -1;
    }
    c->arch = *arch;
    c->gpu = *gpu;
    c->tp = tp;
    c->ep = ep;
    c->weight_dtype = weight_dtype;
    c->kv_dtype = kv_dtype;
    c->f = *f;
    model_count_params(arch, &c->params);
    const model_params *p = &c->params;
    double wb = model_dtype_bytes(weight_dtype);
    /* embeddings and LM head stay in 16 bits in quantized checkpoints (V3's fp8 release does so) */
    double eb = wb < 2 ? 2 : wb;
    double body = p->total - p->embed - p->lm_head;
    c->weight_bytes_per_gpu = (body * wb + (p->embed + p->lm_head) * eb) / tp;
    c->kv_bytes_per_token = model_kv_bytes_per_token(arch, kv_dtype, tp);
    c->dense_read_bytes = ((p->nonexpert - p->embed - p->lm_head) * wb + p->lm_head * eb) / tp;
    c->expert_bytes = p->expert * p->n_moe_layers * wb / tp;
    double active_matmul = p->active - p->lm_head;
    c->linear_flops_per_token = 2 * active_matmul / tp;
    c->head_flops_per_token = 2 * p->lm_head / tp;
    double H = arch->heads;
    if (model_is_mla(arch)) {
        c->attn_flops_decode_per_key = arch->layers * 4.0 * H * (arch->kv_lora_rank + arch->qk_rope_head_dim) / tp;
        c->attn_flops_prefill_per_pair =
            arch->layers * 2.0 * H * (arch->qk_nope_head_dim + arch->qk_rope_head_dim + arch->v_head_dim) / tp;
    } else {
        double hd = arch->head_dim > 0 ? arch->head_dim : (double)arch->hidden / H;
        c->attn_flops_decode_per_key = arch->layers * 4.0 * H * hd / tp;
        c->attn_flops_prefill_per_pair = c->attn_flops_decode_per_key;
    }
    if (init_routing(c) < 0) {
        cost_free(c);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    return 0;
}

void cost_free(cost_model *c) {
    free(c->p_expert);
    free(c->touched_cache);
    c->p_expert = c->touched_cache = NULL;
}

double cost_experts_touched(cost_model *c, int64_t tokens) {
    int E = c->arch.n_routed_experts, k = c->arch.top_k;
    if (!model_is_moe(&c->arch) || tokens <= 0) return 0;
    if (!c->p_expert) return E * (1 - pow(1 - (double)k / E, (double)tokens));
    if (tokens < c->cache_n && c->touched_cache[tokens] >= 0) return c->touched_cache[tokens];
    double s = 0;
    for (int j = 0; j < E; j++) s += 1 - pow(1 - c->p_expert[j], (double)tokens);
    if (tokens < c->cache_n) c->touched_cache[tokens] = s;
    return s;
}

double cost_a2a_bytes_per_layer(const cost_model *c, int64_t tokens) {
    return (double)tokens * c->arch.top_k * c->arch.hidden * ACT_BYTES;
}

/* Ring all-reduce of `bytes` over p GPUs: 2 (p-1)/p x bytes each way on the per-direction link. */
static double allreduce_s(const cost_model *c, double bytes) {
    double p = c->tp, bw = c->gpu.link_bytes_per_s / 2 * c->f.link_eff;
    return 2 * (p - 1) / p * bytes / bw + c->f.comm_latency_s;
}

void cost_step_time(cost_model *c, const cost_batch *b, cost_step *o) {
    memset(o, 0, sizeof *o);
    if (b->tokens <= 0) {
        o->t_overhead = o->t = c->f.step_overhead_s;
        return;
    }
    const model_arch *a = &c->arch;
    double T = (double)b->tokens;
    o->experts_touched = cost_experts_touched(c, b->tokens);
    double imb = c->ep > 1 ? c->ep_imbalance : 1;
    o->weight_bytes = c->dense_read_bytes + o->experts_touched * c->expert_bytes * imb + T * a->hidden * ACT_BYTES;
    o->kv_bytes = (b->decode_keys + b->prefill_keys_read + T) * c->kv_bytes_per_token;
    o->bytes = o->weight_bytes + o->kv_bytes;
    if (c->f.no_flash_attention)   /* scores written, read for softmax, written, read for the values */
        o->bytes += (b->decode_keys + b->prefill_pairs) * a->layers * ((double)a->heads / c->tp) * 2.0 * 4;
    double expert_flops_share = 0;
    if (model_is_moe(a)) expert_flops_share = 2.0 * a->top_k * c->params.expert * c->params.n_moe_layers / c->tp;
    double linear = T * (c->linear_flops_per_token + expert_flops_share * (imb - 1)) + b->seqs * c->head_flops_per_token;
    double attn = b->decode_keys * c->attn_flops_decode_per_key + b->prefill_pairs * c->attn_flops_prefill_per_pair;
    o->flops = linear + attn;
    o->t_mem = o->bytes / (c->gpu.hbm_bytes_per_s * c->f.bw_eff);
    o->t_compute = linear / (hw_matmul_flops(&c->gpu, c->weight_dtype) * c->f.compute_eff) +
                   attn / (c->gpu.bf16_flops * c->f.compute_eff);
    if (c->tp > 1) {
        double ar_bytes = T * a->hidden * ACT_BYTES;
        int moe_layers = c->ep > 1 ? c->params.n_moe_layers : 0;
        int n_ar = 2 * a->layers - moe_layers;   /* with EP the MoE output is combined by all-to-all */
        o->t_comm = n_ar * allreduce_s(c, ar_bytes);
        o->comm_bytes = n_ar * 2.0 * (c->tp - 1) / c->tp * ar_bytes;
        if (moe_layers) {
            /* tokens are replicated after attention; each GPU dispatches its 1/ep share, of which
             * (ep-1)/ep leaves the GPU; dispatch and combine */
            double per_gpu = cost_a2a_bytes_per_layer(c, b->tokens) / c->ep * (c->ep - 1) / c->ep;
            double bw = c->gpu.link_bytes_per_s / 2 * c->f.link_eff;
            o->t_comm += moe_layers * 2 * (per_gpu / bw + c->f.comm_latency_s);
            o->comm_bytes += moe_layers * 2 * per_gpu;
        }
    }
    o->t_overhead = c->f.step_overhead_s;
    o->bound = o->t_compute > o->t_mem ? COST_BOUND_COMPUTE : COST_BOUND_MEMORY;
    o->t = fmax(o->t_mem, o->t_compute) + o->t_comm + o->t_overhead;
}

void cost_decode_batch(int64_t batch, double ctx, cost_batch *b) {
    memset(b, 0, sizeof *b);
    b->tokens = batch;
    b->seqs = batch;
    b->decode_keys = batch * ctx;
}

void cost_prefill_batch(int64_t tokens, cost_batch *b) {
    memset(b, 0, sizeof *b);
    b->tokens = tokens;
    b->seqs = 1;
    b->prefill_pairs = (double)tokens * (tokens + 1) / 2;
}
