/* profile — the engine profiles: what each serving engine does around the GPU math, as documented
 * by its defaults (see profile.h; each entry says which version it stands for). */
#include "engine/profile.h"
#include <stdio.h>
#include <string.h>
#include <strings.h>

/* Kernel counts are structural: an MLA decoder layer launches norms, the q/kv projections, rope,
 * the absorbed attention (split + combine), o_proj and the collective (~14), a dense MLP 3 more; an
 * MoE layer adds router, top-k, token permutation, two grouped GEMMs, activation, un-permute and
 * the shared expert (~9). */
/* Each profile names what it does; a field left out is 0 (no, none, or the default kind: overlap
 * off, no admission reserve, all-reduce after the MoE, the 2024 Python scheduler's costs). */
#define LAYER_KERNELS .kernels_per_layer = 17, .kernels_per_moe_layer = 9
/* vLLM's V1 engine, which the vllm-v1 and vllm profiles share (vllm adds async scheduling) */
#define VLLM_V1 LAYER_KERNELS, .cuda_graphs = 1, .graph_max_batch = 512, .mla_absorbed = 1, .prefill_mode = PREFILL_MIXED, \
    .moe_kernel = MOE_FUSED_V1, .python = 1, .max_batch = 256, .attn_kernel = ATTN_FLASH, .sched = SCHED_V1
static const struct { const char *descr; engine_profile p; } profiles[] = {
    {"vLLM 0.5-0.6 (V0 engine, 2024): CUDA graphs to batch 256, no MLA (K/V expanded per head, padded to 192), "
     "prefill-first steps, Triton fused MoE",
     {LAYER_KERNELS, .name = "vllm-v0", .cuda_graphs = 1, .graph_max_batch = 256, .kv_head_dim = 192,
      .prefill_mode = PREFILL_SEPARATE, .moe_kernel = MOE_TRITON, .python = 1, .max_batch = 256, .attn_kernel = ATTN_FLASH}},
    {"vLLM 0.8-0.13 (V1 engine): CUDA graphs to batch 512, MLA (FlashMLA), chunked prefill mixed into decode steps, "
     "its engine core's scheduler cost, not overlapped (--overlap-schedule on: --async-scheduling, default from 0.14), "
     "Triton fused MoE for fp8 experts on Hopper",
     {VLLM_V1, .name = "vllm-v1"}},
    /* vLLM 0.14 (2026-01-17) turned async scheduling on by default (vllm#31998 for spec decoding;
     * djl#3833 quotes the release): the engine core schedules step n+1 while the GPU runs step n */
    {"vLLM >= 0.14 (V1 engine, async scheduling on by default): as vllm-v1, its engine core's CPU step overlapped "
     "with the GPU's",
     {VLLM_V1, .name = "vllm", .overlap_schedule = 1}},
    /* ATOM's Scheduler.schedule (ROCm/ATOM atom/model_engine/scheduler.py, from nano-vllm) fills a
     * step with waiting prompts first, each whole within max_num_batched_tokens (default 16384), and
     * decodes only when no prompt was admitted; HIP graphs captured at 1-256 (arg_utils.py
     * cudagraph_capture_sizes); its Python engine core's cost (n/s) at vLLM V1's published 1 ms a
     * step (step_overhead_atom_s, not fitted) and V1's per sequence */
    {"ATOM (AMD, 2025-26, MI300X/MI355X): HIP graphs to batch 256, MLA (AITER), prefill-first steps of whole prompts, "
     "AITER fused MoE (its experts read at a plain stream's rate on MI300X too: N97); its engine core's scheduler cost taken as vLLM V1's published one (1 ms a step)",
     {LAYER_KERNELS, .name = "atom", .cuda_graphs = 1, .graph_max_batch = 256, .mla_absorbed = 1,
      .prefill_mode = PREFILL_SEPARATE, .moe_kernel = MOE_STREAM, .python = 1, .max_batch = 512, .attn_kernel = ATTN_FLASH,
      .sched = SCHED_ATOM}},
    {"SGLang 2024 (v0.2-0.3): CUDA graphs to batch 160, MLA only with --enable-mla (else K/V padded to 256 for "
     "FlashInfer), prefill batches apart, no overlap scheduler, Triton fused MoE",
     {LAYER_KERNELS, .name = "sglang-2024", .cuda_graphs = 1, .graph_max_batch = 160, .mla_absorbed = 1, .kv_head_dim = 256,
      .prefill_mode = PREFILL_SEPARATE, .admit_reserve = 0.1, .moe_kernel = MOE_TRITON, .python = 1,
      .attn_kernel = ATTN_TRITON}},
    {"SGLang v0.4.0-0.4.1 (Dec 2024, first DeepSeek-V3 support): overlap scheduler, CUDA graphs, Triton MLA decode "
     "and Triton fused MoE (block-scaled fp8 for V3)",
     {LAYER_KERNELS, .name = "sglang-v0.4", .cuda_graphs = 1, .graph_max_batch = 160, .mla_absorbed = 1,
      .overlap_schedule = 1, .prefill_mode = PREFILL_SEPARATE, .admit_reserve = 0.1, .moe_kernel = MOE_TRITON, .python = 1,
      .attn_kernel = ATTN_TRITON}},
    {"SGLang >= 0.4: overlap scheduler, CUDA graphs to batch 512, MLA, prefill batches apart, DP attention / "
     "DeepEP / two-batch overlap when asked; its Triton fused MoE's swapAB for block fp8 on Hopper (v0.5.7+; "
     "--moe-kernel fused for earlier versions)",
     {LAYER_KERNELS, .name = "sglang", .cuda_graphs = 1, .graph_max_batch = 512, .mla_absorbed = 1, .overlap_schedule = 1,
      .prefill_mode = PREFILL_SEPARATE, .admit_reserve = 0.1, .moe_kernel = MOE_SWAPAB, .python = 1,
      .attn_kernel = ATTN_FLASH}},
    {"TensorRT-LLM PyTorch flow (2025): CUDA graphs, MLA, in-flight batching with chunked context, overlap "
     "scheduler, guaranteed-no-evict admission",
     {LAYER_KERNELS, .name = "trtllm", .cuda_graphs = 1, .mla_absorbed = 1, .overlap_schedule = 1,
      .prefill_mode = PREFILL_MIXED, .admit_reserve = 1.0, .moe_kernel = MOE_TUNED, .python = 1, .attn_kernel = ATTN_FLASH,
      .sched = SCHED_TRT}},
    {"LMDeploy PyTorch engine (2024): eager (no CUDA graphs before v0.6), MLA latent cache in Triton kernels, prefill-first steps",
     {LAYER_KERNELS, .name = "lmdeploy", .mla_absorbed = 1, .prefill_mode = PREFILL_SEPARATE, .moe_kernel = MOE_TRITON,
      .python = 1, .max_batch = 256, .attn_kernel = ATTN_TRITON}},
    {"llama.cpp / ik_llama.cpp (CUDA): C++ graph of one sequence, CUDA graphs, MLA, no Python scheduler",
     /* max_batch: llama-server's default slots since ggml-org/llama.cpp#16736 (2025-10-23: 4, one KV
      * shared by them); b4747's was -np 1 */
     {LAYER_KERNELS, .name = "llamacpp", .cuda_graphs = 1, .mla_absorbed = 1, .prefill_mode = PREFILL_MIXED,
      .moe_kernel = MOE_GEMV, .max_batch = 4, .attn_kernel = ATTN_FLASH, .ggml = 1, .ubatch = 512, .batch_tokens = 2048}},
    /* b4747's deepseek2 graph caches decompressed K (192 per head) and V (128) per token, not the
     * latent (llama.cpp's MLA cache came later): kv_head_dim 160 gives their bytes */
    {"llama.cpp b4747 (2025-02, the tests' c392e50): as llamacpp, but the MoE's mul_mat_id syncs to the host and "
     "loops over the touched experts (ggml-cuda.cu), which also keeps CUDA graphs off for those ops; K/V decompressed per head; "
     "idle slots keep their KV and every step attends over all cells in use",
     {LAYER_KERNELS, .name = "llamacpp-b4747", .cuda_graphs = 1, .kv_head_dim = 160, .prefill_mode = PREFILL_MIXED,
      .moe_kernel = MOE_GEMV, .max_batch = 1, .attn_kernel = ATTN_FLASH, .ggml = 1, .expert_loop = 1,
      .ubatch = 512, .batch_tokens = 2048, .kv_window = 1}},
    {"DeepSeek's own system (V3 report, Day 6 note): FP8 GEMMs, DeepEP, DP attention, overlapped micro-batches",
     {LAYER_KERNELS, .name = "deepseek", .cuda_graphs = 1, .mla_absorbed = 1, .overlap_schedule = 1,
      .prefill_mode = PREFILL_SEPARATE, .moe_kernel = MOE_TUNED, .a2a = A2A_DEEPEP, .python = 1, .two_batch_overlap = 1,
      .attn_kernel = ATTN_FLASH}},
};
#define N_PROFILES (sizeof profiles / sizeof profiles[0])

int profile_find(const char *name, engine_profile *p) {
    for (size_t i = 0; i < N_PROFILES; i++)
        if (!strcasecmp(name, profiles[i].p.name)) {
            *p = profiles[i].p;
            return 0;
        }
    return -1;
}

const char *profile_names(void) {
    static char buf[256];
    if (!buf[0]) {
        size_t n = 0;
        for (size_t i = 0; i < N_PROFILES; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", profiles[i].p.name);
    }
    return buf;
}

const char *profile_help(void) {
    static char buf[8192];   /* every profile's line: they run to ~3,500 characters */
    if (!buf[0]) {
        size_t n = 0;
        for (size_t i = 0; i < N_PROFILES && n < sizeof buf; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "      %-12s %s\n", profiles[i].p.name, profiles[i].descr);
    }
    return buf;
}
