/* cost_model — the time of one engine step on the hardware: a roofline over the step's work.
 *
 *   t = max(bytes / (HBM_BW x bw_eff), flops / (FLOPS x compute_eff)) + t_comm + overhead
 *
 * bytes: weights read (dense part + experts touched by the step's tokens) + KV read/written;
 * flops: 2 x active matmul parameters per token (LM head only for sampled tokens) + attention
 * (MLA decode absorbed: 4 x heads x (kv_lora_rank + rope) per key per layer; prefill: 2 x heads x
 * (qk_head + v_head) per query-key pair, causal); t_comm: TP all-reduces (ring) and EP all-to-all
 * on the GPU link, plus a fixed latency per collective. Without flash attention the score matrix
 * (heads x query x key, bf16) is written and read back through HBM. Everything is per GPU: the GPUs of a
 * tensor-parallel instance work in lockstep. Used by the simulated engine and by `dsperf plan`. */
#ifndef DSP_COST_MODEL_H
#define DSP_COST_MODEL_H
#include "model/model.h"
#include <stdint.h>

typedef struct {
    double bw_eff;            /* achievable fraction of HBM bandwidth (0.85) */
    double compute_eff;       /* achievable fraction of dense tensor FLOPS (0.6) */
    double link_eff;          /* achievable fraction of the per-direction link bandwidth (0.7) */
    double step_overhead_s;   /* per step: scheduling, launches, sampling (CUDA graphs make it small) */
    double comm_latency_s;    /* per collective (all-reduce / all-to-all) */
    double expert_skew;       /* Zipf exponent of expert popularity: 0 uniform routing */
    int no_flash_attention;   /* 1: attention materializes its score matrix in HBM (eager attention) */
} cost_factors;

void cost_default_factors(cost_factors *f);

typedef struct {
    model_arch arch;
    model_params params;
    hw_gpu gpu;
    int tp, ep;
    model_dtype weight_dtype, kv_dtype;
    cost_factors f;
    /* derived, per GPU */
    double weight_bytes_per_gpu;   /* resident weights */
    double kv_bytes_per_token;     /* resident KV per token */
    double dense_read_bytes;       /* weights read every step (everything but routed experts and the embedding table) */
    double expert_bytes;           /* one routed expert, this GPU's share, all MoE layers together */
    double linear_flops_per_token; /* 2 x active matmul params (without LM head) / tp */
    double head_flops_per_token;   /* LM head, only for sampled tokens */
    double attn_flops_decode_per_key, attn_flops_prefill_per_pair;
    double ep_imbalance;           /* hottest GPU's expert load / mean (EP with skew), 1 otherwise */
    double *p_expert;              /* per-expert routing probability (skew > 0), sorted hot first */
    double *touched_cache;         /* experts touched by T tokens, cached for T < cache_n (skew > 0) */
    int cache_n;
} cost_model;

/* The work of one step, as the scheduler sees it. */
typedef struct {
    int64_t tokens;           /* tokens processed (decode tokens + prefill chunk tokens) */
    int64_t seqs;             /* sequences that sample a token this step (LM head rows) */
    double decode_keys;       /* sum over decode tokens of the keys they attend (context incl. itself) */
    double prefill_pairs;     /* sum over prefill chunks of causal query-key pairs: c x p + c (c + 1) / 2 */
    double prefill_keys_read; /* sum over prefill chunks of earlier context read (p) */
} cost_batch;

enum { COST_BOUND_MEMORY = 0, COST_BOUND_COMPUTE = 1 };

typedef struct {
    double weight_bytes, kv_bytes, bytes;   /* read/written from HBM, per GPU */
    double flops;                           /* per GPU */
    double comm_bytes;                      /* sent per GPU over the link */
    double experts_touched;                 /* distinct routed experts per MoE layer */
    double t_mem, t_compute, t_comm, t_overhead, t;  /* seconds */
    int bound;                              /* COST_BOUND_* */
} cost_step;

/* Sets up the model for arch on gpu with tp-way tensor parallelism, ep-way expert parallelism
 * (1: experts split by tensor parallelism; ep == tp: whole experts spread over the GPUs).
 * 0 ok, -1 with err (tp not dividing heads, ep not 1 or tp, ...). */
int cost_init(cost_model *c, const model_arch *arch, const hw_gpu *gpu, int tp, int ep, model_dtype weight_dtype,
              model_dtype kv_dtype, const cost_factors *f, char *err, size_t errlen);
void cost_free(cost_model *c);
/* Expected distinct routed experts touched per MoE layer by T tokens (E (1 - (1 - k/E)^T) when
 * routing is uniform). */
double cost_experts_touched(cost_model *c, int64_t tokens);
void cost_step_time(cost_model *c, const cost_batch *b, cost_step *out);
/* Convenience batches: a decode step of `batch` sequences at mean context `ctx`, and a prefill of
 * one `tokens`-long prompt (no earlier context). */
void cost_decode_batch(int64_t batch, double ctx, cost_batch *b);
void cost_prefill_batch(int64_t tokens, cost_batch *b);
/* Bytes one all-to-all (dispatch or combine) moves in total across the EP group, per MoE layer,
 * for T tokens: T x top_k x hidden x 2 (bf16 activations). */
double cost_a2a_bytes_per_layer(const cost_model *c, int64_t tokens);
#endif
