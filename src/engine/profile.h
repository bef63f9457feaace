/* profile — what a serving engine does around the GPU math, as facts the cost model and the
 * scheduler use: CUDA graphs or eager launches (and up to which batch graphs are captured), the
 * kernels per layer, whether CPU scheduling overlaps the GPU step, whether MLA runs absorbed on
 * the latent KV or on expanded per-head K/V, how prefill and decode share steps, how much KV a
 * request reserves at admission, which MoE kernel family and all-to-all it uses.
 *
 * `--engine-profile vllm-v0|vllm-v1|vllm|sglang|sglang-v0.4|sglang-2024|trtllm|lmdeploy|llamacpp|deepseek` picks one;
 * single facts can be overridden (`--cuda-graphs off`, `--overlap-schedule on`, `--mla off`, ...).
 * The numbers that are fitted (per-kernel time, eager launch, scheduler cost) live in cost_factors,
 * shared by every profile: they stand for a mechanism, not for an engine. */
#ifndef DSP_PROFILE_H
#define DSP_PROFILE_H
#include <stddef.h>

enum { PREFILL_MIXED = 0,      /* chunked prefill shares steps with decodes (vLLM V1, TRT-LLM) */
       PREFILL_SEPARATE = 1 }; /* a step is all prefill while prompts wait (vLLM V0, SGLang) */
enum { MOE_TUNED = 0,          /* grouped GEMMs tuned for few tokens per expert (DeepGEMM, CUTLASS, TRT-LLM) */
       MOE_TRITON = 1,         /* the Triton fused-MoE kernel of 2024 engines */
       MOE_GEMV = 2,           /* one sequence: each selected expert's weights streamed once (llama.cpp mul_mat_id) */
       MOE_SWAPAB = 3,         /* tuned, and the Triton fused MoE's swapAB for block fp8 on Hopper (SGLang >= 0.5.7) */
       MOE_FUSED = 4,          /* tuned, but block-fp8 experts on Hopper (no DeepEP) run the 2025 Triton fused MoE
                                * with its tuned configs and no swapAB (SGLang 0.4.2-0.5.6, vLLM 0.7's V0) */
       MOE_FUSED_V1 = 5,       /* ... vLLM V1's fused MoE (0.8 and later): its own kernel configs and paths */
       MOE_STREAM = 6 };       /* block-scaled experts read at a plain stream's rate on any GPU (ATOM's AITER MoE) */
enum { ATTN_FLASH = 0,         /* FlashMLA / FlashInfer MLA / TRT-LLM MLA kernels */
       ATTN_TRITON = 1 };      /* the Triton MLA decode kernel of SGLang's first MLA support (2024 - v0.4.1) */
enum { SCHED_PY = 0,           /* the 2024 Python schedulers (vLLM V0, SGLang, LMDeploy) */
       SCHED_TRT = 1,          /* TensorRT-LLM's PyTorch executor: its own per-sequence cost */
       SCHED_V1 = 2,           /* vLLM V1's engine core: its own per-step and per-sequence costs */
       SCHED_ATOM = 3 };       /* ATOM's engine core (nano-vllm's loop): its own per-step cost, V1's per sequence */
enum { A2A_ALLREDUCE = 0,      /* MoE under TP (or EP) ends in an all-reduce, like attention */
       A2A_ALLGATHER = 1,      /* DP attention: all-gather tokens before the MLP/MoE, reduce-scatter after */
       A2A_DEEPEP = 2 };       /* DeepEP dispatch/combine (low-latency kernels in decode, normal in prefill) */

typedef struct {
    char name[32];
    int cuda_graphs;           /* decode steps replay CUDA graphs */
    int graph_max_batch;       /* decode batches above this run eager (0: no limit) */
    int mla_absorbed;          /* 1: MLA on the latent KV; 0: expanded K/V per head (pre-MLA engines) */
    int kv_head_dim;           /* expanded K and V head dim per head when mla_absorbed = 0 (padded) */
    int kernels_per_layer;     /* kernels of one decoder layer (norms, projections, attention, MLP) */
    int kernels_per_moe_layer; /* extra kernels of an MoE layer (router, top-k, permute, grouped GEMMs, shared) */
    int overlap_schedule;      /* CPU scheduling of step n+1 overlaps the GPU's step n */
    int prefill_mode;          /* PREFILL_* */
    double admit_reserve;      /* fraction of max_tokens reserved in KV at admission (TRT-LLM's
                                * guaranteed-no-evict 1; SGLang's new-token ratio; vLLM 0) */
    int moe_kernel;            /* MOE_* */
    int a2a;                   /* A2A_*: how MoE tokens move when dp attention or EP is on */
    int python;                /* a Python scheduler (pays the per-step and per-sequence CPU cost) */
    int two_batch_overlap;     /* communication overlapped by a second micro-batch (SGLang TBO, DeepSeek) */
    int max_batch;             /* default max running sequences, unless --max-num-seqs (0: 256): vLLM's
                                * max_num_seqs, llama-server's -np slots (sim_params set_profile) */
    int attn_kernel;           /* ATTN_* */
    int sched;                 /* SCHED_*: whose CPU costs per step and per sequence apply */
    int ggml;                  /* llama.cpp's ggml CUDA kernels (MMQ GEMMs, its FlashAttention): their
                                * compute runs at ggml_compute_eff of the tuned kernels' */
    int expert_loop;           /* llama.cpp before MMQ took expert ids (b4747, 2025-02): each of an MoE
                                * layer's 3 mul_mat_id copies the ids to the host (a sync) and loops
                                * over the touched experts, a GEMM and two copies each: ggml_call_s
                                * per host call (a ubatch of one token skips the loop) */
    int ubatch;                /* tokens per graph evaluation: a step of more runs as several, one after
                                * another, each its own pass over the weights and the expert loop
                                * (llama.cpp's n_ubatch, 512); 0: the whole step in one */
    int batch_tokens;          /* default max_num_batched_tokens (llama-server's n_batch 2048; 0: keep) */
    int kv_window;             /* llama-server b4747: a slot keeps its last request's KV after it ends
                                * (cache_prompt; a new prompt takes the least recently used idle slot),
                                * and every token's attention spans the cache's cells up to the highest
                                * in use (llama_kv_cache_cell_max), masked per token on the host: a step
                                * pays for the idle slots' cells too (cost_batch.window_keys) */
} engine_profile;

/* Fills p with the named profile. 0 ok, -1 unknown name. */
int profile_find(const char *name, engine_profile *p);
/* "vllm-v0, vllm-v1, ..." for messages and --help. */
const char *profile_names(void);
/* One line per profile: name and what it stands for (for --help). */
const char *profile_help(void);
#endif
