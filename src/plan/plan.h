/* plan — the capacity calculators behind `dsperf plan`: weight and KV memory per GPU, KV capacity
 * in tokens, blocks and sequences, roofline step times (prefill of N tokens, decode at batch B and
 * context C, which bound applies), the decode ceilings, the batch where decode turns
 * compute-bound, a recommended max_num_seqs for a TPOT target, the adaptive-batch rule of thumb
 * for an arrival rate and a P99 target, and the MoE all-to-all volume. Same cost model as the
 * simulated engine, so plan and sim agree. */
#ifndef DSP_PLAN_H
#define DSP_PLAN_H
#include "engine/sim.h"
#include <jansson.h>
#include <stdio.h>

typedef struct {
    sim_params target;          /* model, GPU, parallelism, dtypes, memory settings, factors */
    int prompt_tokens;          /* prefill length N (1024) */
    int output_tokens;          /* output length (128) */
    int batch;                  /* decode batch B (64) */
    double context;             /* mean decode context C; 0 = prompt + output / 2 */
    int context_len;            /* sequence length for "sequences that fit"; 0 = prompt + output */
    double tpot_target_s;       /* for the recommended max_num_seqs (50 ms) */
    double rate_per_s;          /* arrival rate for the adaptive-batch rule; 0 = skip */
    double p99_target_s;        /* P99 TPOT target for the rule; 0 = tpot_target_s */
} plan_inputs;

void plan_default_inputs(plan_inputs *in);

#define PLAN_MAX_REASONS 10

typedef struct {
    char model[64], gpu[32];
    int n_gpus, replicas;
    model_params params;
    model_dtype weight_dtype, kv_dtype;
    /* memory, per GPU */
    double weight_bytes_per_gpu, weight_bytes_total;
    double gpu_mem_bytes, usable_bytes, kv_budget_bytes;
    int fits;
    double kv_bytes_per_token;          /* per GPU */
    long long kv_blocks, kv_tokens, seqs_at_context_len;
    /* roofline */
    cost_step prefill;                  /* the first (largest) chunk of the prefill */
    int prefill_chunks;
    double prefill_s;                   /* whole prompt, all chunks, alone on the engine */
    double context;
    cost_step decode;                   /* batch B at context C */
    double decode_tokens_per_s;
    double bw_ceiling_tokens_per_s;     /* B x HBM_BW / bytes(B): the bandwidth roofline at batch B */
    long long max_batch;                /* largest batch that fits (KV at context C, max_num_seqs) */
    cost_step decode_max;
    double max_batch_tokens_per_s, max_batch_bw_ceiling_tokens_per_s;
    double single_stream_tokens_per_s;  /* batch 1 with overheads */
    long long crossover_batch;          /* first batch where decode is compute-bound; -1 none below 1M */
    /* recommendations */
    long long rec_max_num_seqs;         /* largest batch meeting the TPOT target within memory; 0 none */
    double rec_tpot_s;
    int have_rate;
    double mean_concurrency, p99_concurrency, max_rate_per_instance;
    long long adaptive_max_num_seqs;    /* 0: the target cannot be met at this rate on one instance */
    int replicas_needed;
    char reasons[PLAN_MAX_REASONS][320];
    int n_reasons;
    /* MoE all-to-all (for ep_for_a2a GPUs) and TP all-reduce, per decode step at batch B */
    int ep_for_a2a;                     /* the EP size used (ep, else tp as if --ep tp); 0 n/a */
    double a2a_bytes_decode, a2a_s_decode, a2a_bytes_prefill, a2a_s_prefill;
    double allreduce_bytes_decode;
} plan_result;

/* 0 ok, -1 with err (unknown model/GPU, bad sizes). A model that does not fit is a result
 * (fits = 0), not an error. */
int plan_compute(const plan_inputs *in, plan_result *r, char *err, size_t errlen);
json_t *plan_to_json(const plan_inputs *in, const plan_result *r);
void plan_print(FILE *f, const plan_inputs *in, const plan_result *r);
#endif
