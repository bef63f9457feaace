/* cost_model — step time of a DeepSeek model on an instance of GPUs (see cost_model.h). */
#include "engine/cost_model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ACT_BYTES 2.0           /* activations travel in bf16 */
#define TOUCHED_CACHE_N 65536
#define MOE_TILE_M 64           /* grouped GEMM tile rows: an expert's tokens are padded to it */
/* host calls per touched expert per mul_mat_id in llama.cpp b4747's loop over experts (ggml-cuda.cu,
 * ggml_cuda_mul_mat_id for a ubatch of several tokens): memset, gather copy, matmul, scatter copy;
 * the matmul of one row is the vector kernel (1 call), of more the cuBLAS path (4 calls). A ubatch
 * of one token (ne12 == 1) loops too, over its k selected experts, with no gather or scatter: one
 * ggml_cuda_mul_mat each, the f16 vector kernel (1 call) or quantize + MMVQ (2). */
#define EXPERT_ONE_TOKEN_CALLS 1.0
#define EXPERT_ONE_TOKEN_Q_CALLS 2.0
#define EXPERT_VEC_CALLS 4.0
#define EXPERT_GEMM_CALLS 7.0
/* GPU work items of a multi-row f16 expert: memset, gather copy, src1 to f16, GEMM, dst to f32,
 * scatter copy; of a quantized one: memset, gather, quantize, MMVQ or MMQ, scatter (host calls too) */
#define EXPERT_GEMM_KERNELS 6.0
#define EXPERT_Q_CALLS 5.0
#define MMVQ_MAX_ROWS 8         /* mmvq.cuh MMVQ_MAX_BATCH_SIZE: more rows take MMQ */
#define KQ_MASK_PAD 32.0        /* GGML_KQ_MASK_PAD */

void cost_default_factors(cost_factors *f) {
    memset(f, 0, sizeof *f);
    f->bw_eff = 0.85;            /* H200 probe: device copy 0.89, decode-shaped GEMM 0.82-0.88 (README-sim.md) */
    f->compute_eff = 0.7;        /* H200 probe: 0.80 bf16, 0.73 fp8 on large GEMMs */
    f->link_eff = 0.7;
    f->attn_compute_eff = 0.667; /* FlashMLA README: 660 TFLOPS compute-bound on H800 (989 peak) */
    /* fitted on every group of data/published.json: the validation's one ridge-regularized
     * Gauss-Newton step from its start (the 2024-25 rows' `--fit`), the line "refit on every group"
     * of `dsperf sim --validate data/published.json`, which its test holds these to; README-sim.md
     * lists the values, the rows each one rests on and their spread over the leave-one-group-out folds */
    f->kernel_s = 4.07e-6;
    f->launch_s = 29.6e-6;
    f->step_overhead_s = 6.62e-3;
    f->seq_overhead_s = 11.0e-6;
    f->seq_overhead_trt_s = 184e-6;
    /* vLLM V1's engine core, fitted since N83 and N94 run it (README-sim.md, "The 2025 fused MoE ...
     * and vLLM V1's"); its prior, 1.0 ms, from two published measurements of its step (README-sim.md,
     * "Scheduler cost per engine"): vllm-project/vllm#17866 (2025-05): Llama 3.2 1B one request at
     * a time, median TPOT 2.64 ms, of which the GPU's forward takes ~1.6 ms by this model's own
     * terms, leaving ~1 ms per step; vllm-project/vllm#10634 (2024-11): Llama-2-7B at batch 256,
     * 5-6 ms between decode steps, 2-3 ms of it GIL contention: 1 ms + 256 x 10 us = 3.6 ms. */
    f->step_overhead_v1_s = 1.11e-3;
    f->seq_overhead_v1_s = 10e-6;
    /* ATOM's engine core (n/s): vLLM V1's published bound above, as before V1's own was fitted */
    f->step_overhead_atom_s = 1.0e-3;
    f->comm_latency_s = 7.43e-6;
    /* fitted on the three rows that run TP across two nodes (N80: SGLang, 2 x 8 H100, one user;
     * N81: 2 x 8 H20, one user; N82: 2 x 8 H200, 8 users): 3.2x nccl-tests' 46.5 us (README-sim.md,
     * "Collectives across nodes inside a step") */
    f->comm_inter_s = 148e-6;
    f->moe_eff = 0.441;
    /* not fitted: with native block-scaled MMA the grouped GEMM reads its experts like any weight;
     * SGLang v0.5.12 and TensorRT-LLM 1.3 on 8 x B200 at 8-64 concurrent (N14-N24) are within
     * +-6% of their published TPOT at 1 and 38-90% slower at 0.355 (README-sim.md) */
    f->moe_native_eff = 1.0;
    f->moe_floor_cdna3 = 1.0;
    f->moe_triton_eff = 0.330;
    f->moe_triton_fp8_eff = 0.105;
    /* the 2025 Triton fused MoE on Hopper block-fp8 experts: N80-N82, N84 (SGLang 2025, vLLM 0.7;
     * four sources); vLLM V1's own: N83, N94 (README-sim.md, "The 2025 fused MoE ... and vLLM V1's") */
    f->moe_fused_eff = 0.277;
    f->moe_fused_v1_eff = 0.652;
    f->attn_triton_eff = 0.113;
    /* the rows that split GEMMs over 4-8 GPUs set it (the 2024-25 rows do not move it): README-sim.md,
     * "Split GEMMs" */
    f->shard_loss = 0.263;
    f->ggml_compute_eff = 0.264;   /* A5 ub128, A6 ub512, A7 PP4096 set it (README-sim.md) */
    /* the step's growth from c = 1 to c = 2 on tests/fixtures/real-gpu/gpu_overhead.json (V2-Lite
     * f16, one H200: 16.16 -> 33.50 ms over the ~3,100 loop calls that batch 2 adds to the one-token
     * loop's 468), README-sim.md, "The one-token step loops too" */
    f->ggml_call_s = 5.2e-6;
    /* the cuBLAS path's extra host time per multi-row expert (src1 to f16, cublasGemmEx, dst to
     * f32): stop 41 re-derived it with the steps split into ubatches, the server's sampling and
     * each level's cached prompt share (README-sim.md, "llama-server's ubatches and sampling"): the
     * value of 4-24.3 us with the least median error over the 18 recorded sweeps calibrated at c = 1;
     * 24.3 us before, from gpu_overhead's growth to c = 32 whose prompts were 46 % cached */
    f->ggml_gemm_s = 16e-6;
    /* the MMQ path's (a quantized expert of more than 8 rows: quantize, stream-k MMQ over every SM,
     * its fix-up kernel): apart from the cuBLAS path's since stop 41, the value of 16-64 us with the
     * least median error over the 9 recorded Q8_0 and Q4_0 sweeps (5 hosts) calibrated at c = 1;
     * README-sim.md, "llama-server's ubatches and sampling" */
    f->ggml_mmq_s = 40e-6;
    /* GPU time per small kernel of the loop (execution and the gap to the next on one stream):
     * NVML's busy share x step on gpu_overhead.json grows 3.4-3.9 us per added loop kernel
     * from c = 1 to 2, 8 and 32 (README-sim.md); counted with c = 1's one-token loop apart (stop 40),
     * the H100 sweeps' growth is 3.0-3.5 us (f16) and 2.6-3.3 us (Q8_0, Q4_0) from c = 4 to 32 */
    f->ggml_kernel_gpu_s = 3.5e-6;
    f->ggml_sample_s = 100e-6;
    /* the queue replicated (scripts/bench_result_queue.c: B waiting threads on one condition
     * variable, B sends of notify_all a step, 50 us of sampling between sends) on this project's
     * 2-core build host: 14-25 us per stream woken at B = 16-32; the lower end, which the real
     * sweeps' 16-32 user levels check (README-sim.md, "llama-server's result queue") */
    f->ggml_wake_s = 10e-6;
    /* llama.cpp's KV mask on the host: the loop of llama_set_inputs over the same data layout timed
     * on this project's EPYC host (1.3 ns a cell-token over 512 tokens, 10.4 ns a cell for one token
     * and its 31 padding rows). Host work of the server's main thread like the expert loop's calls:
     * it moves with the host's speed (loop_host_x, the calibration's host factor) */
    f->ggml_mask_s = 1.0e-9;
    f->ggml_mask_row_s = 0.6e-9;
    f->loop_host_x = COST_LOOP_HOST_X;
    /* no Python server's request path (request_s, request_token_s stay 0): a simulated run is its
     * engine's, as `serve --engine sim` serves it. Only --validate adds the one fitted on the
     * published TTFTs (COST_REQUEST_FIT_*, cost_model.h), whose times carry a server's path; the
     * flags add one. llama-server's own path (HTTP, tokenization: server_path_*) is measured on the
     * recorded GPU hosts, and the simulator's transit adds it to a llama.cpp profile's requests */
    f->server_path_s = COST_SERVER_PATH_S;
    f->server_path_token_s = COST_SERVER_PATH_TOKEN_S;
    f->mtp_accept = 0.68;        /* chain acceptance that gives SGLang's published 2.18 (2 drafts) and 2.44 (3) */
    f->expert_skew = 0;
}

double *cost_step_overhead_of(cost_factors *f, int sched) {
    return sched == SCHED_V1 ? &f->step_overhead_v1_s : sched == SCHED_ATOM ? &f->step_overhead_atom_s : &f->step_overhead_s;
}

double *cost_seq_overhead_of(cost_factors *f, int sched) {
    return sched == SCHED_V1 || sched == SCHED_ATOM ? &f->seq_overhead_v1_s : sched == SCHED_TRT ? &f->seq_overhead_trt_s : &f->seq_overhead_s;
}

void cost_default_setup(cost_setup *s, int tp, int ep) {
    memset(s, 0, sizeof *s);
    s->tp = tp;
    s->ep = ep;
    s->dp = 1;
    profile_find("vllm-v1", &s->prof);
}

static int cmp_desc(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? 1 : x > y ? -1 : 0;
}

/* Zipf(skew) popularity over the experts; a token picks top_k of them, so expert j is chosen by a
 * token with probability min(1, k q_j). With skew 0 this is k/E for every expert. The EP imbalance
 * places experts round-robin over the ep GPUs (hot experts spread out); EPLB evens it out. */
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
    if (c->ep > 1 && !c->s.eplb) {
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

double cost_mtp_tokens_per_step(const cost_model *c) {
    if (c->s.mtp_draft <= 0) return 1;
    if (c->s.mtp_accept_len >= 1) return fmin(c->s.mtp_accept_len, 1.0 + c->s.mtp_draft);
    double l = 1, p = 1;
    for (int i = 0; i < c->s.mtp_draft; i++) { p *= c->f.mtp_accept; l += p; }
    return l;
}

/* (cost_model.h) One host thread runs the loop and launches the kernels, eagerly: both move with
 * its speed. With the constants at their timing host and the graph engines' kernel_s, the
 * uncalibrated c = 1 TPOT of the recorded f16 sweeps came out 47 % low on average; README-sim.md. */
int cost_apply_loop_prior(cost_factors *f, int expert_loop) {
    double x = f->loop_host_x;
    if (!expert_loop || !(x > 0)) return 0;
    unsigned g = f->loop_given;
    if (!(g & COST_LOOP_GIVEN_KERNEL)) f->kernel_s = COST_LOOP_KERNEL_S * x;
    const cost_factors at_timing = *f;
    cost_scale_host(f, &at_timing, x, g);
    f->loop_host_x = 0;
    return 1;
}

void cost_scale_host(cost_factors *f, const cost_factors *from, double x, unsigned keep) {
    if (!(keep & COST_LOOP_GIVEN_CALL)) f->ggml_call_s = from->ggml_call_s * x;
    if (!(keep & COST_LOOP_GIVEN_GEMM)) f->ggml_gemm_s = from->ggml_gemm_s * x;
    if (!(keep & COST_LOOP_GIVEN_MMQ)) f->ggml_mmq_s = from->ggml_mmq_s * x;
    if (!(keep & COST_LOOP_GIVEN_SAMPLE)) f->ggml_sample_s = from->ggml_sample_s * x;
    if (!(keep & COST_LOOP_GIVEN_WAKE)) f->ggml_wake_s = from->ggml_wake_s * x;
    f->ggml_mask_s = from->ggml_mask_s * x;
    f->ggml_mask_row_s = from->ggml_mask_row_s * x;
}

int cost_init(cost_model *c, const model_arch *arch, const hw_gpu *gpu, const cost_setup *s, model_dtype weight_dtype,
              model_dtype kv_dtype, const cost_factors *f, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    int tp = s->tp, ep = s->ep < 1 ? 1 : s->ep, dp = s->dp < 1 ? 1 : s->dp;
    if (tp < 1 || tp % dp || arch->heads % (tp / dp)) {
        snprintf(err, errlen, "tensor parallel size %d (attention TP %d with --dp %d) must divide the %d attention heads of %s",
                 tp, dp > 0 ? tp / dp : tp, dp, arch->heads, arch->name);
        return -1;
    }
    if (tp % ep) {
        snprintf(err, errlen, "expert parallel size %d must divide --tp %d (the GPUs of the instance)", ep, tp);
        return -1;
    }
    if (ep > 1 && !model_is_moe(arch)) {
        snprintf(err, errlen, "expert parallelism needs an MoE model; %s is dense", arch->name);
        return -1;
    }
    /* every efficiency is a fraction of a physical rate */
    const double fractions[] = {f->bw_eff, f->compute_eff, f->link_eff, f->moe_eff, f->moe_native_eff, f->moe_triton_eff,
                                f->moe_triton_fp8_eff, f->moe_fused_eff, f->moe_fused_v1_eff, f->attn_triton_eff, f->ggml_compute_eff};
    int bad = !(f->shard_loss >= 0);
    for (size_t i = 0; i < sizeof fractions / sizeof fractions[0]; i++) bad |= !(fractions[i] > 0 && fractions[i] <= 1);
    if (bad) {
        snprintf(err, errlen, "efficiency factors must be in (0, 1] (and --shard-loss >= 0)");
        return -1;
    }
    c->arch = *arch;
    c->gpu = *gpu;
    c->s = *s;
    c->tp = tp;
    c->ep = ep;
    c->dp = dp;
    c->atp = tp / dp;
    c->weight_dtype = weight_dtype;
    c->kv_dtype = kv_dtype;
    c->f = *f;
    cost_apply_loop_prior(&c->f, s->prof.expert_loop);
    comm_init(&c->comm, gpu, f->link_eff, f->comm_latency_s, f->comm_inter_s);
    model_count_params(arch, &c->params);
    const model_params *p = &c->params;
    double wb = model_dtype_bytes(weight_dtype);
    c->wb = wb;
    /* embeddings and LM head stay in 16 bits in quantized checkpoints (V3's fp8 release does so) */
    double eb = wb < 2 ? 2 : wb;
    double kvb = model_dtype_bytes(kv_dtype);
    /* DeepEP deployments run the shared experts and the dense FFN layers data-parallel too (DeepSeek's
     * "MLA/Shared Expert DP"; SGLang's large-scale EP), so only routed tokens cross GPUs */
    c->shared_dp = dp > 1 && s->prof.a2a == A2A_DEEPEP;
    c->expert_params = p->expert;
    c->shared_params = p->shared_per_moe_layer + p->gate_per_moe_layer;
    c->dense_mlp_params = p->dense_mlp_per_layer;
    c->head_params = p->lm_head;
    double attn_proj = p->attn_per_layer - 2.0 * arch->hidden;   /* without the two RMSNorms */
    c->attn_w_bytes = attn_proj * wb / c->atp;
    if (model_is_mla(arch) && s->prof.mla_absorbed) {
        double per_layer = s->kv_flashmla_fp8 ? 656.0 : (arch->kv_lora_rank + arch->qk_rope_head_dim) * kvb;
        c->kv_bytes_layer = per_layer;
    } else if (model_is_mla(arch)) {
        /* pre-MLA engines: K (nope + rope) and V per head, both padded to the kernel's head size */
        int hd = s->prof.kv_head_dim > 0 ? s->prof.kv_head_dim : arch->qk_nope_head_dim + arch->qk_rope_head_dim;
        c->kv_bytes_layer = 2.0 * arch->heads / c->atp * hd * kvb;
    } else {
        c->kv_bytes_layer = model_kv_bytes_per_token(arch, kv_dtype, c->atp) / arch->layers;
    }
    c->kv_bytes_per_token = c->kv_bytes_layer * arch->layers;
    int E = arch->n_routed_experts + (model_is_moe(arch) ? s->redundant_experts : 0);
    double routed_resident = p->n_moe_layers * (double)E * p->expert * wb / tp;
    double shared_resident = p->n_moe_layers * c->shared_params * wb / (c->shared_dp ? 1 : tp);
    c->weight_bytes_per_gpu = arch->layers * c->attn_w_bytes + p->n_dense_layers * p->dense_mlp_per_layer * wb / (c->shared_dp ? 1 : tp) +
                              shared_resident + routed_resident + (p->embed + p->lm_head) * eb / c->atp;
    if (s->mtp_draft > 0 && arch->mtp_layers > 0) c->weight_bytes_per_gpu += (p->mtp - p->embed - p->lm_head) * wb / tp;
    c->dense_read_bytes = arch->layers * c->attn_w_bytes + p->n_dense_layers * p->dense_mlp_per_layer * wb / (c->shared_dp ? 1 : tp) +
                          p->n_moe_layers * c->shared_params * wb / (c->shared_dp ? 1 : tp) + p->lm_head * eb / c->atp;
    c->expert_bytes = p->expert * p->n_moe_layers * wb / tp;
    c->mtp_len = cost_mtp_tokens_per_step(c);
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

double cost_experts_one_row(cost_model *c, int64_t tokens) {
    int E = c->arch.n_routed_experts, k = c->arch.top_k;
    if (!model_is_moe(&c->arch) || tokens <= 0) return 0;
    double T = (double)tokens;
    if (!c->p_expert) {
        double q = (double)k / E;
        return E * T * q * pow(1 - q, T - 1);
    }
    double s = 0;
    for (int j = 0; j < E; j++) s += T * c->p_expert[j] * pow(1 - c->p_expert[j], T - 1);
    return s;
}

double cost_experts_over_rows(cost_model *c, int64_t tokens, int rows) {
    int E = c->arch.n_routed_experts, k = c->arch.top_k;
    if (!model_is_moe(&c->arch) || tokens <= rows) return 0;
    /* experts that got more than `rows` of the T tokens: each token picks expert j with p_j */
    double s = 0;
    for (int j = 0; j < E; j++) {
        double p = c->p_expert ? c->p_expert[j] : (double)k / E, cum = 0, term = pow(1 - p, (double)tokens);
        for (int r = 0; r <= rows; r++) {
            cum += term;
            term *= (double)(tokens - r) / (r + 1) * p / (1 - p);
        }
        s += fmax(0, 1 - cum);
    }
    return s;
}

double cost_a2a_bytes_per_layer(const cost_model *c, int64_t tokens) {
    return (double)tokens * c->arch.top_k * c->arch.hidden * ACT_BYTES;
}

double cost_kv_transfer_bytes(const cost_model *c, int64_t tokens) {
    /* the KV of one request as its rank stores it (MLA latent: the same on every rank) */
    return (double)tokens * c->kv_bytes_per_token * (c->s.prof.mla_absorbed || !model_is_mla(&c->arch) ? 1 : c->atp);
}

/* A GEMM-like component: bytes and flops into memory and compute seconds. */
/* The GEMMs' fraction of the tensor peak: tuned kernels', or llama.cpp's MMQ relative to them. */
/* The GPU's reachable matmul rate against the H200's, which compute_eff was measured on. */
static double rate_x(const cost_model *c) { return c->gpu.gemm_rate_x > 0 ? c->gpu.gemm_rate_x : 1; }
static double gemm_eff(const cost_model *c) { return c->f.compute_eff * (c->s.prof.ggml ? c->f.ggml_compute_eff : 1) * rate_x(c); }
/* ... of a GEMM whose weight is split over `ways` GPUs (cost_factors.shard_loss) */
double cost_shard_eff(const cost_factors *f, double ways) { return ways > 1 ? 1 / (1 + f->shard_loss * (ways - 1)) : 1; }
static double shard_eff(const cost_model *c, double ways) { return cost_shard_eff(&c->f, ways); }

static void add_comp(cost_step *o, int k, double bytes, double flops, double bw, double peak) {
    o->mem_s[k] += bytes / bw;
    o->comp_s[k] += flops / peak;
    o->flops += flops;
    o->bytes += bytes;
}

/* Block-scaled formats carry a scale per block of weights that the GEMM must apply. */
static int block_scaled(model_dtype d) { return d == DT_FP8 || d == DT_FP4 || d == DT_MXFP4; }

double *cost_moe_eff_of(const cost_model *c, cost_factors *f) {
    if (c->s.prof.moe_kernel == MOE_GEMV) return NULL;
    if (c->s.prof.moe_kernel == MOE_TRITON) return c->weight_dtype == DT_FP8 ? &f->moe_triton_fp8_eff : &f->moe_triton_eff;
    /* the GPUs with fp4 tensor cores (Blackwell's tcgen05 and sm120 block-scaled MMA, CDNA4's MX
     * MFMA) apply the scales in the MMA; Hopper and MI300X promote in CUDA cores (DeepGEMM) */
    if (!block_scaled(c->weight_dtype) || c->gpu.fp4_flops > 0) return &f->moe_native_eff;
    /* ATOM's AITER MoE on MI300X: 28.8 ms a token at 128 users on 8 GPUs (N97), where streaming
     * every expert once at bw_eff alone takes 18.2 ms, leaves no room for a slower grouped GEMM
     * (README-sim.md, "CDNA3's MoE floor") */
    if (c->s.prof.moe_kernel == MOE_STREAM) return &f->moe_native_eff;
    /* Block-fp8 experts on Hopper without DeepEP go through the engine's Triton fused MoE. SGLang
     * >= 0.5.7 swaps A and B there for few tokens per expert (sglang#15712, 2025-12: the weight on
     * WGMMA's M side): it streams the experts like any weight (README-sim.md, "SGLang on 8 x H200").
     * Before it (SGLang 0.4.2-0.5.6, vLLM 0.7) the kernel has its own efficiency, and vLLM V1's
     * another, apart from the grouped GEMMs of DeepEP and TensorRT-LLM (README-sim.md, "The 2025
     * fused MoE ... and vLLM V1's") */
    int hopper_fp8 = c->weight_dtype == DT_FP8 && hw_arch_is(&c->gpu, "hopper") && c->s.prof.a2a != A2A_DEEPEP;
    if (c->s.prof.moe_kernel == MOE_SWAPAB && hopper_fp8) return &f->moe_native_eff;
    if (c->s.prof.moe_kernel == MOE_FUSED && hopper_fp8) return &f->moe_fused_eff;
    if (c->s.prof.moe_kernel == MOE_FUSED_V1 && hopper_fp8) return &f->moe_fused_v1_eff;
    return &f->moe_eff;
}

/* Routed experts of one MoE layer on the busiest GPU, for T tokens entering the MoE. */
static void moe_layer(cost_model *c, double T, double layers, cost_step *o) {
    const model_arch *a = &c->arch;
    double X = cost_experts_touched(c, (int64_t)ceil(T));
    double pairs = T * a->top_k / c->ep;                     /* token-expert pairs per GPU */
    /* statistical imbalance: the busiest of ep GPUs takes about mean + sqrt(2 ln ep) sigma */
    double stat = c->ep > 1 && pairs > 0 ? 1 + sqrt(2 * log(c->ep) * (1 - 1.0 / c->ep) / pairs) : 1;
    double imb = (c->ep > 1 ? c->ep_imbalance : 1) * stat;
    double x_loc = fmin(X / c->ep, (double)a->n_routed_experts / c->ep);   /* touched experts on the GPU */
    if (x_loc < 1 && pairs > 0) x_loc = fmin(1, pairs);
    double moe_tp = (double)c->tp / c->ep;
    double m = x_loc > 0 ? pairs * imb / x_loc : 0;          /* tokens per touched local expert */
    /* llama.cpp multiplies one token's selected experts with its vector kernel (MMVQ), unpadded;
     * more tokens go through the tiled MMQ, and the grouped GEMMs pad each expert's rows to the tile */
    double padded = c->s.prof.moe_kernel == MOE_GEMV && T <= 1 ? ceil(m) : ceil(m / MOE_TILE_M) * MOE_TILE_M;
    double w = c->expert_params / moe_tp;
    const double *effp = cost_moe_eff_of(c, (cost_factors *)&c->f);
    double eff = effp ? *effp : 1.0;   /* GEMV: streams like any weight read */
    double hbm = c->gpu.hbm_bytes_per_s * c->f.bw_eff * eff;
    double peak = hw_matmul_flops(&c->gpu, c->weight_dtype) * gemm_eff(c) * shard_eff(c, moe_tp);
    double bytes = x_loc * w * c->wb + pairs * imb * a->hidden * ACT_BYTES * 2;
    double flops = x_loc * padded * 2 * w;
    /* CDNA3's block-fp8 MoE (SGLang + AITER, the ROCm builds of vLLM and SGLang) runs 24-26 ms a
     * token at 1-8 users on 8 x MI300X / MI325X where the touched experts alone give 9-18 ms, and
     * the gap closes once the touched experts' time passes about that of streaming every expert on
     * the GPU: a floor per layer, as a fraction of that time (README-sim.md, "CDNA3's MoE floor").
     * It is time, not traffic: the bytes stay the touched experts' (why the kernels take it is not
     * known), so a floored step shows a low bandwidth, not a full one */
    add_comp(o, COST_MOE, layers * bytes, layers * flops, hbm, peak);
    double floor_bytes = hw_arch_is(&c->gpu, "cdna3") && effp == &c->f.moe_eff ? c->f.moe_floor_cdna3 * a->n_routed_experts / c->ep * w * c->wb : 0;
    double floor_s = floor_bytes / (c->gpu.hbm_bytes_per_s * c->f.bw_eff);
    if (floor_s > fmax(bytes / hbm, flops / peak)) {
        /* the one amount the floor adds to the memory time: the limit and plan's line read it */
        double add_s = layers * (floor_s - bytes / hbm);
        o->mem_s[COST_MOE] += add_s;
        o->t_moe_floor += add_s;
    }
    /* gate, up and down: three mul_mat_id, each looping over the touched experts on the host
     * (ggml_cuda_mul_mat_id, b4747). A one-token ubatch multiplies its k experts with the vector
     * kernel; a ubatch of several tokens gathers each touched expert's rows (memset, copy), runs
     * its matmul and scatters the result (copy): the vector kernel when the expert got one row, 4
     * host calls; the cuBLAS path when it got more (src1 to f16, cublasSetStream, cublasGemmEx,
     * dst to f32), 7: each call ggml_call_s of host time the GPU waits on (the ids' copy to the
     * host has drained it). A ubatch of one token syncs the same way and multiplies its k experts
     * one call each (EXPERT_ONE_TOKEN_*): the c = 1 step holds that much of the loop, which the
     * growth to c = 2 must not count twice. */
    if (c->s.prof.expert_loop && T < 2) {
        double calls = (c->wb < 2 ? EXPERT_ONE_TOKEN_Q_CALLS : EXPERT_ONE_TOKEN_CALLS) * x_loc;
        o->t_kernels += layers * 3 * calls * fmax(c->f.ggml_call_s, c->f.ggml_kernel_gpu_s);
    } else if (c->s.prof.expert_loop) {
        double one = fmin(x_loc, cost_experts_one_row(c, (int64_t)ceil(T)) / c->ep), multi = fmax(0, x_loc - one);
        double host, gpu;
        if (c->wb < 2) {
            /* a quantized type (GGUF Q8_0, Q4): up to MMVQ_MAX_BATCH_SIZE rows the vector kernel
             * (quantize src1 to q8_1, MMVQ), more the tiled MMQ (its quantize, MMQ): 5 calls
             * either way, and the MMQ path's own extra time (ggml_mmq_s: stream-k and its fix-up) */
            double wide = fmin(x_loc, cost_experts_over_rows(c, (int64_t)ceil(T), MMVQ_MAX_ROWS) / c->ep);
            host = EXPERT_Q_CALLS * x_loc * c->f.ggml_call_s + wide * c->f.ggml_mmq_s;
            gpu = EXPERT_Q_CALLS * x_loc * c->f.ggml_kernel_gpu_s;
        } else {
            host = EXPERT_VEC_CALLS * (one + multi) * c->f.ggml_call_s + multi * c->f.ggml_gemm_s;
            gpu = (EXPERT_VEC_CALLS * one + EXPERT_GEMM_KERNELS * multi) * c->f.ggml_kernel_gpu_s;
        }
        /* the GPU runs the loop's kernels as the host queues them: a host faster than the GPU's
         * time per small kernel leaves the GPU, not the host, setting the pace */
        o->t_kernels += layers * 3 * fmax(host, gpu);
    }
    o->weight_bytes += layers * x_loc * w * c->wb;
    o->experts_touched = X;
}

/* Dense GEMMs of `params` whole weights split `ways`, for T tokens. */
static void dense_gemm(cost_model *c, int k, double params, int ways, double T, double wb, cost_step *o) {
    double hbm = c->gpu.hbm_bytes_per_s * c->f.bw_eff;
    double peak = hw_matmul_flops(&c->gpu, wb >= 2 ? DT_BF16 : c->weight_dtype) * gemm_eff(c) * shard_eff(c, ways);
    double w = params / ways;
    add_comp(o, k, w * wb + T * c->arch.hidden * ACT_BYTES * 2, 2 * T * w, hbm, peak);
    o->weight_bytes += w * wb;
}

/* One decoder-only pass (all layers, or the MTP module's one layer when mtp) over the step's
 * tokens: T_rank tokens on the busiest attention rank, T_all entering the FFN. */
static void forward(cost_model *c, const cost_batch *b, double T_rank, double T_all, double seqs_rank, double rank_dec,
                    double rank_pre, int mtp, cost_step *o) {
    const model_arch *a = &c->arch;
    const model_params *p = &c->params;
    double layers = mtp ? 1 : a->layers, n_dense = mtp ? 0 : p->n_dense_layers, n_moe = mtp ? 1 : p->n_moe_layers;
    double hbm = c->gpu.hbm_bytes_per_s * c->f.bw_eff;
    double attn_peak = (c->s.attn_fp8 && c->gpu.fp8_flops > 0 ? c->gpu.fp8_flops : c->gpu.bf16_flops) * c->f.attn_compute_eff * (c->s.prof.ggml ? c->f.ggml_compute_eff : 1) * rate_x(c);
    double attn_hbm = hbm;
    if (c->s.prof.attn_kernel == ATTN_TRITON && model_is_mla(a) && c->s.prof.mla_absorbed) {
        /* a kernel that reaches a fraction of FlashMLA's compute reaches that fraction of its bandwidth too */
        attn_peak = c->gpu.bf16_flops * c->f.attn_triton_eff * rate_x(c);
        attn_hbm = hbm * fmin(1, c->f.attn_triton_eff / c->f.attn_compute_eff);
    }
    /* attention projections (per layer, split over the attention TP group) */
    double proj = p->attn_per_layer - 2.0 * a->hidden;
    dense_gemm(c, COST_ATTN_PROJ, layers * proj, c->atp, T_rank, c->wb, o);
    /* attention over the KV: decode reads each sequence's context once; prefill chunks read
     * their earlier context and write their own */
    double H = (double)a->heads / c->atp;
    double q = b->q_per_seq > 1 ? b->q_per_seq : 1;
    double dec_keys = b->decode_keys * rank_dec, pre_pairs = b->prefill_pairs * rank_pre, pre_keys = b->prefill_keys_read * rank_pre;
    double per_key, per_pair;
    if (model_is_mla(a) && c->s.prof.mla_absorbed) {
        per_key = H * 2.0 * (2 * a->kv_lora_rank + a->qk_rope_head_dim);
        per_pair = H * 2.0 * (a->qk_nope_head_dim + a->qk_rope_head_dim + a->v_head_dim);
    } else if (model_is_mla(a)) {
        per_key = per_pair = H * 2.0 * (a->qk_nope_head_dim + a->qk_rope_head_dim + a->v_head_dim);
    } else {
        double hd = a->head_dim > 0 ? a->head_dim : (double)a->hidden / a->heads;
        per_key = per_pair = H * 4.0 * hd;
    }
    double kv_bytes, attn_flops, score_bytes;
    if (b->window_keys > 0) {
        /* llama.cpp's KV window: every token of the pass scores every cell of the window (the mask
         * hides other sequences' cells and later positions); K and V are read once per pass */
        double w = b->window_keys;
        kv_bytes = layers * (w + T_rank) * c->kv_bytes_layer;
        attn_flops = layers * w * T_rank * per_pair;
        score_bytes = c->f.no_flash_attention ? layers * w * T_rank * H * 2.0 * 4 : 0;
    } else {
        kv_bytes = layers * (dec_keys + pre_keys + T_rank) * c->kv_bytes_layer;
        attn_flops = layers * (dec_keys * q * per_key + pre_pairs * per_pair);
        score_bytes = c->f.no_flash_attention ? layers * (dec_keys * q + pre_pairs) * H * 2.0 * 4 : 0;
    }
    add_comp(o, COST_ATTN, kv_bytes + score_bytes, attn_flops, attn_hbm, attn_peak);
    o->kv_bytes += kv_bytes + score_bytes;
    /* dense FFN layers and the shared experts + router: all tokens over the tp GPUs (or, with
     * DeepEP deployments, shared experts per DP rank on its own tokens) */
    if (n_dense > 0) {
        if (c->shared_dp) dense_gemm(c, COST_FFN_DENSE, n_dense * c->dense_mlp_params, 1, T_rank, c->wb, o);
        else dense_gemm(c, COST_FFN_DENSE, n_dense * c->dense_mlp_params, c->tp, T_all, c->wb, o);
    }
    if (model_is_moe(a) && n_moe > 0) {
        if (c->shared_dp) dense_gemm(c, COST_FFN_DENSE, n_moe * c->shared_params, 1, T_rank, c->wb, o);
        else dense_gemm(c, COST_FFN_DENSE, n_moe * c->shared_params, c->tp, T_all, c->wb, o);
        moe_layer(c, T_all, n_moe, o);
    } else if (mtp) {
        dense_gemm(c, COST_FFN_DENSE, c->dense_mlp_params, c->tp, T_all, c->wb, o);
    }
    if (mtp) dense_gemm(c, COST_ATTN_PROJ, 2.0 * a->hidden * a->hidden, c->atp, T_rank, c->wb, o);  /* eh_proj */
    /* LM head in bf16 over the attention TP group, for the sampled rows */
    dense_gemm(c, COST_FFN_DENSE, c->head_params, c->atp, seqs_rank, 2, o);
    /* communication per layer */
    double comm = 0, comm_bytes = 0;
    double ar_bytes = T_rank * a->hidden * ACT_BYTES;
    if (c->atp > 1) {
        comm += layers * 2 * comm_allreduce_s(&c->comm, ar_bytes, c->atp);
        comm_bytes += layers * 2 * 2.0 * (c->atp - 1) / c->atp * ar_bytes;
    }
    if (c->dp > 1) {
        /* FFN of every layer sees every rank's tokens */
        double all = T_all * a->hidden * ACT_BYTES;
        int deepep = c->s.prof.a2a == A2A_DEEPEP && model_is_moe(a);
        double gather_layers = deepep ? 0 : layers;
        comm += gather_layers * 2 * comm_allgather_s(&c->comm, all, c->tp);
        comm_bytes += gather_layers * 2 * (double)(c->tp - 1) / c->tp * all;
        if (deepep && n_moe > 0) {
            int ll = b->prefill_seqs == 0;
            double tr = T_all / c->dp;
            comm += n_moe * (comm_deepep_s(&c->comm, tr, a->hidden, a->top_k, c->ep, 0, ll) +
                             comm_deepep_s(&c->comm, tr, a->hidden, a->top_k, c->ep, 1, ll));
            comm_bytes += n_moe * tr * a->top_k * a->hidden * 3.0;
        }
    } else if (c->tp > 1 && c->atp == 1) {
        /* unreachable: dp == 1 means atp == tp */
    }
    o->t_comm += comm;
    o->comm_bytes += comm_bytes;
    /* kernels */
    double kernels = layers * c->s.prof.kernels_per_layer + n_moe * c->s.prof.kernels_per_moe_layer + 4;
    o->t_kernels += kernels * c->f.kernel_s * (c->s.prof.two_batch_overlap && c->dp > 1 ? 2 : 1);
    o->t_launch_cpu += kernels * c->f.launch_s;
}

/* Combines the parts into the step time (also used to rescale for calibration). */
static double combine(const cost_model *c, const cost_step *o, double bw_scale, double ce_scale, double step_overhead_s,
                      double *math_out) {
    double math = 0;
    for (int k = 0; k < COST_NCOMP; k++) math += fmax(o->mem_s[k] * bw_scale, o->comp_s[k] * ce_scale);
    if (math_out) *math_out = math;
    double gpu = c->s.prof.two_batch_overlap && c->dp > 1 ? fmax(math, o->t_comm) : math + o->t_comm;
    gpu += o->t_kernels;
    if (!o->graphs) gpu = fmax(gpu, o->t_launch_cpu + o->t_kernels);
    double sched = c->s.prof.python ? step_overhead_s + o->t_sched : c->s.prof.ggml ? o->t_sched : 0;
    return c->s.prof.overlap_schedule ? fmax(gpu, sched) : gpu + sched;
}

/* The batch's sequences with a prefill chunk, its decoding sequences and query tokens per decoding
 * sequence, filled in where the batch leaves them implicit. */
static void batch_seqs(const cost_batch *b, int64_t *pre_seqs, int64_t *dec_seqs, double *q) {
    *pre_seqs = b->prefill_seqs > 0 ? b->prefill_seqs : (b->prefill_pairs > 0 ? 1 : 0);
    *dec_seqs = b->decode_seqs > 0 ? b->decode_seqs : (b->decode_keys > 0 ? b->seqs - (b->prefill_pairs > 0) : 0);
    if (*dec_seqs < 0) *dec_seqs = 0;
    *q = b->q_per_seq > 1 ? b->q_per_seq : 1;
}

static void step_one(cost_model *c, const cost_batch *b, cost_step *o) {
    memset(o, 0, sizeof *o);
    o->graphs = 1;
    if (b->tokens <= 0) {
        o->t_sched = 0;
        o->t = o->t_overhead = c->s.prof.python ? *cost_step_overhead_of(&c->f, c->s.prof.sched) : 0;
        return;
    }
    const engine_profile *pr = &c->s.prof;
    int64_t pre_seqs, dec_seqs;
    double q;
    batch_seqs(b, &pre_seqs, &dec_seqs, &q);
    double dec_tokens = dec_seqs * q, pre_tokens = fmax(0, (double)b->tokens - dec_tokens);
    /* the busiest attention rank: decodes spread evenly, prefill chunks over up to dp ranks */
    double rank_dec = dec_seqs > 0 ? ceil((double)dec_seqs / c->dp) / dec_seqs : 0;
    double rank_pre = pre_seqs > 0 ? 1.0 / (pre_seqs < c->dp ? pre_seqs : c->dp) : 0;
    if (c->dp == 1) rank_dec = rank_pre = 1;
    double T_rank = dec_tokens * rank_dec + pre_tokens * rank_pre;
    double seqs_rank = c->dp > 1 ? ceil((double)b->seqs / c->dp) : (double)b->seqs;
    if (T_rank < 1) T_rank = 1;
    /* graphs are captured per rank, up to graph_max_batch tokens */
    o->graphs = pr->cuda_graphs && (pre_seqs == 0 || pr->prefill_mode == PREFILL_MIXED) &&
                (pr->graph_max_batch == 0 || T_rank <= pr->graph_max_batch);
    /* a whole prefill chunk is compute-heavy and launches eagerly in graph-capturing engines
     * (vLLM V1 captures mixed batches piecewise, so it keeps graphs up to its capture size) */
    forward(c, b, T_rank, (double)b->tokens, seqs_rank, rank_dec, rank_pre, 0, o);
    if (c->s.mtp_draft > 0 && dec_seqs > 0) {
        /* d sequential draft passes of the MTP module over the decoding sequences */
        cost_batch d;
        memset(&d, 0, sizeof d);
        d.decode_keys = b->decode_keys;
        d.q_per_seq = 1;
        for (int i = 0; i < c->s.mtp_draft; i++)
            forward(c, &d, dec_seqs * rank_dec, (double)dec_seqs, seqs_rank, rank_dec, 0, 1, o);
    }
    /* each attention DP rank has its own scheduler process */
    o->t_sched = c->s.prof.ggml ? c->f.ggml_sample_s * c->arch.vocab / 102400.0 * seqs_rank : *cost_seq_overhead_of(&c->f, c->s.prof.sched) * seqs_rank;
    /* llama-server hands each sampled token to its stream through one queue whose every send wakes
     * every waiting stream (examples/server/server.cpp, server_response::send: notify_all): the
     * main thread's sends of a step wake seqs x seqs threads that take its lock */
    if (c->s.prof.ggml) o->t_sched += c->f.ggml_wake_s * seqs_rank * seqs_rank;
    if (b->window_keys > 0) {
        /* the pass's KV mask, built on the host before the graph runs (llama_set_inputs): a cell
         * lookup per token and cell, rows padded to 32 tokens, the whole copied to the GPU */
        double rows = ceil((double)b->tokens / KQ_MASK_PAD) * KQ_MASK_PAD;
        o->t_sched += b->window_keys * ((double)b->tokens * c->f.ggml_mask_s + rows * c->f.ggml_mask_row_s);
    }
    for (int k = 0; k < COST_NCOMP; k++) { o->t_mem += o->mem_s[k]; o->t_compute += o->comp_s[k]; }
    o->t = combine(c, o, 1, 1, *cost_step_overhead_of(&c->f, c->s.prof.sched), &o->t_math);
    o->t_overhead = o->t - o->t_math - o->t_comm;
    if (o->t_overhead < 0) o->t_overhead = 0;
    o->bound = o->t_compute > o->t_mem ? COST_BOUND_COMPUTE : COST_BOUND_MEMORY;
}

const char *cost_step_limit(const cost_step *s) {
    double math = s->t_math, over = s->t_overhead;
    /* the communication the step waits for: all of it, or (two-batch overlap) what the math leaves */
    double comm = fmin(s->t_comm, fmax(0, s->t - math - over));
    if (comm > math && comm >= over) return "communication";
    if (over > math) return "overhead";
    /* CDNA3's MoE floor is time the HBM does not spend moving bytes: it names the limit when it is
     * most of the math */
    if (s->t_moe_floor > math - s->t_moe_floor) return "moe-floor";
    return s->bound == COST_BOUND_COMPUTE ? "compute" : "bandwidth";
}

/* Adds ubatch u's step to the whole step's o. */
static void step_add(cost_step *o, const cost_step *u) {
    o->weight_bytes += u->weight_bytes; o->kv_bytes += u->kv_bytes; o->bytes += u->bytes;
    o->flops += u->flops; o->comm_bytes += u->comm_bytes;
    o->experts_touched = fmax(o->experts_touched, u->experts_touched);
    for (int k = 0; k < COST_NCOMP; k++) { o->mem_s[k] += u->mem_s[k]; o->comp_s[k] += u->comp_s[k]; }
    o->t_mem += u->t_mem; o->t_compute += u->t_compute; o->t_math += u->t_math; o->t_comm += u->t_comm;
    o->t_kernels += u->t_kernels; o->t_launch_cpu += u->t_launch_cpu; o->t_sched += u->t_sched;
    o->t_overhead += u->t_overhead; o->t += u->t; o->t_moe_floor += u->t_moe_floor;
    o->graphs = o->graphs && u->graphs;
    o->bound = o->t_compute > o->t_mem ? COST_BOUND_COMPUTE : COST_BOUND_MEMORY;
}

/* A step of more tokens than the profile's ubatch runs as ubatches one after another (llama.cpp's
 * llama_decode splits its batch so): the server puts the decoding sequences' tokens first, then the
 * prompts', so the first ubatch carries the decodes (they sample there) and the prompt tokens fill
 * the rest in order; a prompt's pairs, keys and sampled rows go with its tokens, in proportion. */
void cost_step_time(cost_model *c, const cost_batch *b, cost_step *o) {
    int ub = c->s.prof.ubatch;
    if (ub <= 0 || b->tokens <= ub) { step_one(c, b, o); return; }
    int64_t pre_seqs, dec_seqs;
    double q;
    batch_seqs(b, &pre_seqs, &dec_seqs, &q);
    double dec_tokens = fmin((double)b->tokens, dec_seqs * q), pre_tokens = (double)b->tokens - dec_tokens;
    double pre_sampled = fmax(0, (double)(b->seqs - dec_seqs));
    memset(o, 0, sizeof *o);
    o->graphs = 1;
    double dec_left = dec_tokens, pre_left = pre_tokens;
    while (dec_left + pre_left > 0.5) {
        double d = fmin(dec_left, ub), p = fmin(pre_left, ub - d), share = pre_tokens > 0 ? p / pre_tokens : 0;
        cost_batch u;
        memset(&u, 0, sizeof u);
        u.tokens = (int64_t)llround(d + p);
        u.q_per_seq = b->q_per_seq;
        u.decode_seqs = (int64_t)llround(d / q);
        u.decode_keys = dec_tokens > 0 ? b->decode_keys * d / dec_tokens : 0;
        u.prefill_pairs = b->prefill_pairs * share;
        u.prefill_keys_read = b->prefill_keys_read * share;
        u.prefill_seqs = p > 0 ? (int64_t)fmax(1, ceil(pre_seqs * share)) : 0;
        u.window_keys = b->window_keys;
        /* the prompts' sampled rows (their last tokens) come with the last prompt tokens */
        u.seqs = u.decode_seqs + (pre_left - p <= 0.5 ? (int64_t)pre_sampled : 0);
        cost_step s;
        step_one(c, &u, &s);
        step_add(o, &s);
        dec_left -= d;
        pre_left -= p;
    }
}

double cost_step_rescale(const cost_model *c, const cost_step *s, double bw_eff, double compute_eff, double step_overhead_s) {
    return combine(c, s, c->f.bw_eff / bw_eff, c->f.compute_eff / compute_eff, step_overhead_s, NULL);
}

void cost_decode_batch(int64_t batch, double ctx, cost_batch *b) {
    memset(b, 0, sizeof *b);
    b->tokens = batch;
    b->seqs = batch;
    b->decode_seqs = batch;
    b->q_per_seq = 1;
    b->decode_keys = batch * ctx;
}

void cost_decode_batch_mtp(const cost_model *c, int64_t batch, double ctx, cost_batch *b) {
    cost_decode_batch(batch, ctx, b);
    if (c->s.mtp_draft > 0) {
        b->q_per_seq = 1 + c->s.mtp_draft;
        b->tokens = batch * b->q_per_seq;
    }
}

void cost_prefill_batch(int64_t tokens, cost_batch *b) {
    memset(b, 0, sizeof *b);
    b->tokens = tokens;
    b->seqs = 1;
    b->prefill_seqs = 1;
    b->prefill_pairs = (double)tokens * (tokens + 1) / 2;
}
