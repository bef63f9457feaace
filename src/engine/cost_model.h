/* cost_model — the time of one engine step on the hardware, per GPU of an instance, as a sum of
 * per-component rooflines plus what is not math:
 *
 *   gpu  = sum_c max(bytes_c / (HBM x bw_eff x r_c), flops_c / (peak_c x compute_eff x s_c))
 *          + t_comm (hidden behind compute with two-batch overlap) + kernels x kernel_s
 *   eager: gpu = max(gpu, kernels x launch_s)          (the CPU cannot launch faster)
 *   t    = overlap scheduler ? max(gpu, sched) : gpu + sched,   sched = step_overhead + seqs x seq_overhead
 *
 * Components: attention projections (dense GEMMs), attention itself (KV read; MLA absorbed on the
 * latent KV, or expanded per-head K/V in pre-MLA engines), the dense parts of the FFN (dense layers,
 * shared experts, router, LM head), and the routed experts (a grouped GEMM that reads every touched
 * expert once and pads each expert's tokens to the kernel's tile; its bandwidth is r = moe_eff of a
 * streaming kernel's). Communication: TP all-reduces (alpha + ring bytes), DP-attention all-gather /
 * reduce-scatter, or DeepEP dispatch/combine from its published latency and bandwidth tables
 * (comm.h). DP attention: each rank attends only its own sequences (the busiest rank sets the pace)
 * and holds only their KV; the MoE sees every rank's tokens. MTP: each decoding sequence verifies
 * 1 + d tokens and the d draft passes run one MoE layer and the LM head each. */
#ifndef DSP_COST_MODEL_H
#define DSP_COST_MODEL_H
#include "model/model.h"
#include "engine/comm.h"
#include "engine/profile.h"
#include <stdint.h>

/* The request path fitted by `sim --validate data/published.json` on the published TTFTs of 54 rows
 * (its grid fit, all rows; 2026-12-07 with CDNA3's reachable GEMM rate), with the cold-start runs, SGLang's receive
 * interval, TensorRT-LLM's batch waiting and split GEMMs (shard_loss) in the engine: what the validation's
 * in-sample table and refits start from. */
#define COST_REQUEST_FIT_S 109.9e-3
#define COST_REQUEST_TOKEN_FIT_S 20.93e-6

typedef struct {
    double bw_eff;            /* streaming kernels' fraction of HBM bandwidth (0.85) */
    double compute_eff;       /* dense GEMMs' fraction of the tensor peak (0.7) */
    double link_eff;          /* fraction of the per-direction link / NIC bandwidth (0.7) */
    double step_overhead_s;   /* CPU scheduler time per step (Python engines) */
    double seq_overhead_s;    /* CPU time per running sequence per step (batch building, sampling, detokenize) */
    double seq_overhead_trt_s;/* ... in TensorRT-LLM's PyTorch executor */
    double step_overhead_v1_s;/* vLLM V1's engine core per step (schedule, prepare inputs, sample) */
    double step_overhead_atom_s;/* ATOM's engine core per step (its sequence cost is V1's) */
    double seq_overhead_v1_s; /* ... per running sequence */
    double comm_latency_s;    /* latency of one collective inside the NVLink domain */
    double comm_inter_s;      /* ... of one spanning nodes, inside a step (NCCL over the NIC) */
    double kernel_s;          /* GPU time per kernel boundary (launch latency, tail) with CUDA graphs */
    double launch_s;          /* CPU time to launch one kernel eagerly (PyTorch dispatch) */
    double moe_eff;           /* tuned grouped GEMM bandwidth relative to a streaming kernel's, for
                               * block-scaled weights (fp8, NVFP4, MXFP4) on GPUs whose tensor cores
                               * do not take block scales (Hopper, MI300X: scales applied in software) */
    double moe_native_eff;    /* ... where the tensor cores take block scales natively (Blackwell,
                               * MI355X: the GPUs with fp4 MMA), or the weights carry none (bf16) */
    double moe_floor_cdna3;   /* CDNA3 (MI300X, MI325X) block-fp8 experts (moe_eff's path): a MoE layer
                               * takes at least this fraction of the time to stream every expert on
                               * the GPU once at bw_eff, however few tokens come (0: no floor). Not
                               * fitted: 1 (README-sim.md, "CDNA3's MoE floor") */
    double moe_triton_eff;    /* the 2024 Triton fused-MoE kernel's, relative (bf16 weights) */
    double moe_triton_fp8_eff;/* ... with block-scaled fp8 weights (SGLang v0.4.1's V3 path) */
    double moe_fused_eff;     /* the 2025 Triton fused MoE (MOE_FUSED) on block-fp8 experts on Hopper:
                               * per-GPU tuned tile configs, the weight on the MMA's N side */
    double moe_fused_v1_eff;  /* ... vLLM V1's (MOE_FUSED_V1) */
    double attn_triton_eff;   /* the Triton MLA decode kernel's fraction of the bf16 peak */
    double attn_compute_eff;  /* attention kernels' fraction of the bf16 peak (FlashMLA: 660 of 989 TFLOPS) */
    double shard_loss;        /* GEMMs split over w GPUs (tensor parallel: a slice of every weight's
                               * columns or of its reduction length per GPU) reach compute_eff /
                               * (1 + shard_loss (w - 1)): the slice shrinks, the per-tile fixed work
                               * (prologue, block scales, epilogue, the last partial wave) does not.
                               * Fitted on the published rows (README-sim.md) */
    double ggml_compute_eff;  /* llama.cpp's MMQ GEMMs and FlashAttention relative to the tuned kernels
                               * (compute_eff, attn_compute_eff): fitted on the llama-bench prompt rows */
    double ggml_call_s;       /* llama.cpp b4747's host-side expert loop: host time per CUDA call of the
                               * loop (4 per touched expert at a ubatch of 2+ tokens, 1 per selected
                               * expert at one token; quantized 5 and 2) */
    double ggml_gemm_s;       /* ... and the extra host time of an expert with several rows (its cuBLAS path) */
    double ggml_mmq_s;        /* ... the same for a quantized type's MMQ path (more than MMVQ_MAX_ROWS rows) */
    double ggml_kernel_gpu_s; /* ... and the GPU's time per small kernel of that loop (its floor on a fast host) */
    double ggml_sample_s;     /* llama-server's host time per sampled sequence per step at DeepSeek's 102,400-
                               * entry vocabulary (its sampler copies and top-k sorts the whole vocabulary
                               * after each decode while the GPU waits): scaled by vocab / 102400 */
    double ggml_wake_s;       /* llama-server's result queue: the main thread's host time per stream woken per
                               * result it sends (server_response::send notifies every waiting stream's
                               * thread, each of which takes the queue's lock to look for its result): a
                               * step of n sequences costs n x n of it */
    double ggml_mask_s;       /* llama.cpp's KV mask, built on the host before each pass (profile kv_window):
                               * host time per token and cell (a lookup in the cell's set of sequence ids,
                               * a store) ... */
    double ggml_mask_row_s;   /* ... and per padded row and cell (a store, its copy to the GPU) */
    /* llama.cpp b4747 before any calibration: the host's speed relative to the one the loop's host
     * constants above were timed on. cost_init multiplies those constants by it and sets the time per
     * kernel to COST_LOOP_KERNEL_S x it (each unless a flag set it: loop_given). 0: the constants and
     * kernel_s stand as they are (a calibrated deployment's, which a calibration sets; profiles keep it) */
    double loop_host_x;
    unsigned loop_given;      /* COST_LOOP_GIVEN_* bits: the loop's constants a flag set */
    /* The request's way outside the engine's steps on a Python server (profile.python): HTTP,
     * tokenization, the hand-off to the scheduler, the first chunk's way back. The simulator adds
     * request_s + request_token_s x prompt tokens between a request's send and its arrival in the
     * engine's queue (sim_params_add_request_path); fitted on the published TTFTs (README-sim.md). */
    double request_s;         /* 0 by default: only `sim --validate` adds COST_REQUEST_FIT_*, and the flags */
    double request_token_s;
    /* llama-server's own way outside its prompt and decode timings (HTTP and JSON, the prompt's
     * tokenization, the slot's launch, the first chunk's way back), added like request_s to a
     * llama.cpp profile's requests: server_path_s + server_path_token_s x prompt tokens. By default
     * the line through the recorded GPU hosts' c = 1 levels (COST_SERVER_PATH_*); a calibration on
     * one user's run that joined the server's timings scales it to that run */
    double server_path_s;
    double server_path_token_s;
    double mtp_accept;        /* probability that a draft token is accepted, given the previous one was */
    double expert_skew;       /* Zipf exponent of expert popularity: 0 uniform routing */
    int no_flash_attention;   /* 1: attention materializes its score matrix in HBM (eager attention) */
} cost_factors;

enum {
    COST_LOOP_GIVEN_KERNEL = 1u << 0, COST_LOOP_GIVEN_CALL = 1u << 1, COST_LOOP_GIVEN_GEMM = 1u << 2, COST_LOOP_GIVEN_MMQ = 1u << 3,
    COST_LOOP_GIVEN_SAMPLE = 1u << 4, COST_LOOP_GIVEN_WAKE = 1u << 5, COST_LOOP_GIVEN_HOST = 1u << 6   /* loop_host_x itself */
};
/* llama.cpp b4747's time per kernel at the loop's prior host constants (host speed 1): the median
 * over the 24 f16 c = 1 calibrations of the real sweeps recorded to stop 45 (11 hosts; 12.3-18.6 us)
 * of kernel_s over the loop's host factor, which c = 1 separates (its prompt holds the loop, its
 * one-token step the kernels); README-sim.md, "Calibrating on a level of several users" */
#define COST_LOOP_KERNEL_S 16.3e-6
/* the host speed an uncalibrated llama.cpp b4747 deployment is taken to have (loop_host_x): the
 * median over the 13 recording sessions (GPU hosts; 31 f16 sweeps) of their c = 1 calibrations'
 * loop host factor, 0.80 with any one session left out too (0.654-1.147 per session); README-sim.md,
 * "An uncalibrated llama.cpp host" */
#define COST_LOOP_HOST_X 0.80
/* llama-server's path outside its timings (cost_factors.server_path_s, _token_s): the least-squares
 * line through the median TTFT outside the server's prompt time of the 52 real sweeps' c = 1 levels
 * recorded to stop 49 (tests/fixtures/real-gpu; 128-, 256- and 1024-token prompts: 2.2-3.4, 3.5-6.8
 * and 12.7-18.0 ms), mostly the prompt's tokenization */
#define COST_SERVER_PATH_S 1.75e-3
#define COST_SERVER_PATH_TOKEN_S 12.6e-6
void cost_default_factors(cost_factors *f);
/* llama.cpp b4747 uncalibrated (expert_loop: the profile's, and f->loop_host_x > 0): the loop's host
 * constants and its time per kernel at the host speed f->loop_host_x, except those a flag set
 * (loop_given); loop_host_x is 0 after (the constants as they stand). 1 when it applied, 0 (f as it
 * was) otherwise. cost_init does it; what a run reports as its factors is the same. */
int cost_apply_loop_prior(cost_factors *f, int expert_loop);
/* llama-server's host work at a host speed x: the loop's host constants (ggml_call_s, ggml_gemm_s,
 * ggml_mmq_s), the sampling, the result queue's wake-ups and the KV mask (one host thread runs them
 * all) set to from's x x, except those whose COST_LOOP_GIVEN_* bit is in keep. The one list of what
 * the host's speed moves: the uncalibrated prior and the calibration's host factor both use it. */
void cost_scale_host(cost_factors *f, const cost_factors *from, double x, unsigned keep);
/* The fraction of compute_eff a GEMM split over `ways` GPUs reaches: 1 / (1 + shard_loss (ways - 1)). */
double cost_shard_eff(const cost_factors *f, double ways);
/* The CPU scheduler's cost per step and per running sequence for an engine profile (SCHED_*): the
 * factor that applies, and where it lives (for calibration, which fits the profile's own). */
double *cost_step_overhead_of(cost_factors *f, int sched);
double *cost_seq_overhead_of(cost_factors *f, int sched);

/* How the instance is laid out and what runs on it, beyond the model and the GPU. */
typedef struct {
    int tp;                   /* GPUs of the instance (tensor parallel world size) */
    int ep;                   /* expert parallel size (1: experts split by TP; divides tp) */
    int dp;                   /* attention data-parallel ranks (1: off; divides tp) */
    int mtp_draft;            /* MTP / speculative draft tokens per step (0: off) */
    double mtp_accept_len;    /* published acceptance length (tokens per step incl. the verified one); 0: from mtp_accept */
    int redundant_experts;    /* EPLB's extra expert copies (memory; EPLB also evens out skew) */
    int eplb;                 /* expert placement balanced by load (removes the skew imbalance) */
    int kv_flashmla_fp8;      /* fp8 KV in FlashMLA's layout: 656 bytes per token per layer */
    int attn_fp8;             /* attention math on fp8 tensor cores (FP8 MLA / FA3 fp8) */
    engine_profile prof;
} cost_setup;

enum { COST_ATTN_PROJ, COST_ATTN, COST_FFN_DENSE, COST_MOE, COST_NCOMP };

typedef struct {
    model_arch arch;
    model_params params;
    hw_gpu gpu;
    int tp, ep, dp, atp;           /* atp: attention TP size = tp / dp */
    model_dtype weight_dtype, kv_dtype;
    cost_factors f;
    cost_setup s;
    comm_model comm;
    /* derived, per GPU */
    double weight_bytes_per_gpu;   /* resident weights */
    double kv_bytes_per_token;     /* resident KV per token per GPU (its own rank's sequences) */
    double kv_bytes_layer;         /* ... one layer */
    double wb;                     /* bytes per weight */
    double attn_w_bytes;           /* attention projections of one layer on one GPU */
    double dense_mlp_params;       /* one dense MLP layer, whole */
    double shared_params;          /* shared experts + router of one MoE layer, whole */
    double expert_params;          /* one routed expert */
    double head_params;            /* LM head */
    int shared_dp;                 /* shared experts replicated per DP rank (DeepEP deployments) */
    double dense_read_bytes;       /* weights read every step regardless of routing (for plan) */
    double expert_bytes;           /* one routed expert, this GPU's share, all MoE layers */
    double mtp_len;                /* expected tokens per decode step per sequence (1 without MTP) */
    double ep_imbalance;           /* hottest GPU's expert load / mean from skew (1 with EPLB or no skew) */
    double *p_expert;
    double *touched_cache;
    int cache_n;
} cost_model;

/* The work of one step, as the scheduler sees it (the whole instance). */
typedef struct {
    int64_t tokens;           /* tokens processed (decode tokens incl. MTP verify tokens + prefill chunk tokens) */
    int64_t seqs;             /* sequences that sample this step (LM head rows) */
    int64_t decode_seqs;      /* sequences decoding (0: all of seqs minus prefill_seqs) */
    double decode_keys;       /* sum over decoding sequences of the keys they attend (KV read once each) */
    int32_t q_per_seq;        /* query tokens per decoding sequence (1; 1 + drafts with MTP) */
    double prefill_pairs;     /* sum over prefill chunks of causal query-key pairs: c x p + c (c + 1) / 2 */
    double prefill_keys_read; /* sum over prefill chunks of earlier context read (p) */
    int64_t prefill_seqs;     /* sequences with a prefill chunk in the step */
    double window_keys;       /* > 0: every token attends this many KV cells, whoever holds them (llama.cpp's
                               * KV window: the cells up to the highest in use, idle slots' included), in
                               * place of its own sequence's context */
} cost_batch;

enum { COST_BOUND_MEMORY = 0, COST_BOUND_COMPUTE = 1 };

typedef struct {
    double weight_bytes, kv_bytes, bytes;   /* read/written from HBM, per GPU */
    double flops;                           /* per GPU */
    double comm_bytes;                      /* sent per GPU over links */
    double experts_touched;                 /* distinct routed experts per MoE layer */
    double mem_s[COST_NCOMP], comp_s[COST_NCOMP];  /* per component at the model's factors */
    double t_mem, t_compute;                /* sums of the components' memory and compute times */
    double t_math;                          /* sum of per-component maxima */
    double t_comm, t_kernels, t_launch_cpu, t_sched;
    double t_overhead;                      /* t - t_math - t_comm: kernels, launches, scheduling */
    double t_moe_floor;                     /* of t_mem: what CDNA3's MoE floor adds to the MoE's memory time */
    double t;                               /* the step, seconds */
    int graphs;                             /* this step ran as a CUDA graph */
    int bound;                              /* COST_BOUND_* (the larger of the summed memory and compute times) */
} cost_step;

/* Sets up arch on gpu laid out as s. 0 ok, -1 with err (tp not dividing heads, ep/dp not dividing tp, ...). */
int cost_init(cost_model *c, const model_arch *arch, const hw_gpu *gpu, const cost_setup *s, model_dtype weight_dtype,
              model_dtype kv_dtype, const cost_factors *f, char *err, size_t errlen);
void cost_free(cost_model *c);
/* The routed experts' kernel efficiency this setup uses (moe_eff, moe_native_eff or a Triton one),
 * where it lives in f (for calibration); NULL when the experts stream like any weight (llama.cpp). */
double *cost_moe_eff_of(const cost_model *c, cost_factors *f);
/* A plain setup: tp GPUs, ep, no dp, no MTP, the default engine profile (vllm-v1). */
void cost_default_setup(cost_setup *s, int tp, int ep);
/* Expected distinct routed experts touched per MoE layer by T tokens (E (1 - (1 - k/E)^T) when
 * routing is uniform). */
double cost_experts_touched(cost_model *c, int64_t tokens);
/* Expected routed experts per MoE layer that get exactly one of T tokens (T q (1 - q)^(T - 1)
 * summed over the experts, q each expert's chance per token). */
double cost_experts_one_row(cost_model *c, int64_t tokens);
/* Expected number of experts that got more than `rows` of `tokens` tokens. */
double cost_experts_over_rows(cost_model *c, int64_t tokens, int rows);
void cost_step_time(cost_model *c, const cost_batch *b, cost_step *out);
/* What the step's time is mostly spent on, as a word: "compute" or "bandwidth" (the math, by its
 * bound), "communication" (collectives not hidden behind the math) or "overhead" (kernel boundaries,
 * launches, the scheduler): the largest of the three parts of s->t. bound alone says only which
 * side of the roofline the math is on; a step of TP across nodes at batch 1 is mostly all-reduces. */
const char *cost_step_limit(const cost_step *s);
/* The step time for other global efficiencies, from a step computed at the model's (for
 * calibration: the components scale, the rest stays). */
double cost_step_rescale(const cost_model *c, const cost_step *s, double bw_eff, double compute_eff, double step_overhead_s);
/* Expected tokens per decode step per sequence: 1 + p + ... + p^d (MTP acceptance), or the
 * published acceptance length. */
double cost_mtp_tokens_per_step(const cost_model *c);
/* Convenience batches: a decode step of `batch` sequences at mean context `ctx` (with MTP: q per
 * sequence), and a prefill of one `tokens`-long prompt (no earlier context). */
void cost_decode_batch(int64_t batch, double ctx, cost_batch *b);
void cost_decode_batch_mtp(const cost_model *c, int64_t batch, double ctx, cost_batch *b);
void cost_prefill_batch(int64_t tokens, cost_batch *b);
/* Bytes one all-to-all (dispatch or combine) moves in total across the EP group, per MoE layer,
 * for T tokens: T x top_k x hidden x 2 (bf16 activations). */
double cost_a2a_bytes_per_layer(const cost_model *c, int64_t tokens);
/* Bytes of KV one request of `tokens` moves from a prefill to a decode instance (all layers). */
double cost_kv_transfer_bytes(const cost_model *c, int64_t tokens);
#endif
