/* sim — the simulated vLLM-like serving engine (engine_ops "sim") and its parameters.
 *
 * Discrete-event: continuous batching with max_num_seqs and max_num_batched_tokens, paged KV
 * cache (block_size; blocks from GPU memory after weights x gpu_memory_utilization), chunked
 * prefill on/off, preemption by recompute when blocks run out, FIFO or priority scheduling. Each step's duration comes
 * from the roofline cost model (cost_model.h). Used by `dsperf sim` (virtual clock, as fast as the
 * CPU allows) and `dsperf serve --engine sim` (wall clock). */
#ifndef DSP_SIM_H
#define DSP_SIM_H
#include "engine/engine.h"
#include "engine/cost_model.h"
#include <stdbool.h>
#include <stddef.h>
#include <jansson.h>

typedef struct sim_params {
    char model[128];                 /* catalog name or HF id (model_find) */
    char model_config[512];          /* HF config.json path; "" = use the catalog */
    model_arch arch;                 /* arch_set: the architecture whole, in place of both (a run's own:
                                      * its GGUF header as the deployment read it; a profile's) */
    bool arch_set;
    char gpu[32];                    /* hw_find name */
    double gpu_mem_bytes;            /* overrides of the GPU's catalog entry; 0 = catalog */
    double hbm_bytes_per_s, bf16_flops, fp8_flops, link_bytes_per_s;
    int n_gpus;                      /* 0 = tp (one instance); sim models one instance of tp GPUs */
    int tp, ep;                      /* ep: 1 = experts split by TP; = tp: expert parallel */
    char weight_dtype[16];           /* "auto" (the release's dtype), bf16, fp16, fp8, int8, int4 */
    char kv_dtype[16];               /* "auto" (= bf16), bf16, fp16, fp8, int8 */
    int max_num_seqs;                /* the profile's default (max_batch: llama-server's slots) unless set */
    bool max_num_seqs_set;
    int max_num_batched_tokens;      /* the profile's default (llama-server's n_batch) unless set: sim_params_batch_tokens */
    bool max_num_batched_tokens_set;
    int block_size;                  /* tokens per KV block */
    int max_model_len;               /* 0 = the model's max_position_embeddings */
    double gpu_memory_utilization;
    double reserved_bytes;           /* per GPU outside weights and KV: activations, CUDA graphs, NCCL */
    long long num_gpu_blocks;        /* > 0 overrides the memory computation (like vLLM's override) */
    bool chunked_prefill;
    bool priority_scheduling;        /* scheduling-policy priority: engine_request.priority, lower first */
    /* decode steps between two looks of the scheduler at newly arrived requests (SGLang's
     * --scheduler-recv-interval, or --num-continuous-decode-steps); a prefill step or an idle
     * engine looks at once. 1: every step (vLLM, TensorRT-LLM, SGLang's default) */
    int recv_interval_steps;
    /* TensorRT-LLM's batch waiting (batch_wait_timeout_iters, batch_wait_max_tokens_ratio; TP only):
     * while sequences decode, new prompts are held back until the step would carry
     * batch_wait_tokens_ratio x max_num_batched_tokens tokens or batch_wait_iters steps have held
     * them. 0 / 0: off */
    int batch_wait_iters;
    double batch_wait_tokens_ratio;
    cost_factors factors;            /* efficiency factors, overheads, expert skew */
    char engine_profile[32];         /* profile.h name (default vllm-v1) */
    int dp;                          /* attention data-parallel ranks (1 off; --enable-dp-attention: = tp) */
    int mtp_draft;                   /* MTP draft tokens per step (0 off) */
    double mtp_accept_len;           /* published acceptance length; 0: from the acceptance rate */
    int redundant_experts, eplb;
    int kv_flashmla_fp8;             /* --kv-dtype fp8-flashmla: 656 bytes per token per layer */
    int attn_fp8;                    /* --attn-dtype fp8: attention math on fp8 tensor cores */
    /* profile facts overridden by flags (-1: the profile's) */
    int ov_ubatch;                   /* --ubatch: tokens per graph evaluation (llama.cpp's -ub) */
    int ov_cuda_graphs, ov_graph_max, ov_overlap, ov_mla, ov_tbo, ov_a2a, ov_prefill_mode, ov_moe_kernel, ov_attn_kernel;
    double ov_admit_reserve;
    bool prefix_caching;             /* hashed KV blocks reused across requests (LRU eviction) */
    /* prefill/decode disaggregation: prefill_instances > 0 runs prompts on a separate pool of
     * prefill_instances x prefill_tp GPUs (same model and profile, no MTP) and moves the KV over the
     * network to this (decode) instance */
    int prefill_instances, prefill_tp, prefill_dp, prefill_ep;
    /* > 1: simulate one in rank_sample of the requests (the DP ranks are symmetric) and count each
     * step's batch rank_sample times in the cost model; KV blocks and limits scale down alike.
     * Used by --validate to keep wide-DP rows fast; results scale back by the caller. */
    int rank_sample;
    int calibrated;                  /* factors from a calibrated profile (--profile): intervals of calibrate-then-predict */
    /* llama-server's slots (profile kv_window) at the start: slots_warm idle slots each still holding
     * slots_warm_tokens tokens of an earlier request (a server that served requests before) */
    int slots_warm;
    int32_t slots_warm_tokens;
    /* SIM_GIVEN_* bits: the setup keys a flag set. A --profile's setup (the calibrated deployment)
     * fills only the others, whichever comes first on the command line */
    unsigned given;
    unsigned from_profile;           /* SIM_GIVEN_* bits a --profile's setup filled in */
    bool price_every_step;           /* skip the step memo (tests compare the memo against it) */
} sim_params;

enum {
    SIM_GIVEN_MODEL = 1u << 0, SIM_GIVEN_GPU = 1u << 1, SIM_GIVEN_TP = 1u << 2, SIM_GIVEN_EP = 1u << 3, SIM_GIVEN_DP = 1u << 4,
    SIM_GIVEN_WDTYPE = 1u << 5, SIM_GIVEN_KVDTYPE = 1u << 6, SIM_GIVEN_PROFILE = 1u << 7, SIM_GIVEN_BLOCKS = 1u << 8,
    SIM_GIVEN_FA = 1u << 9, SIM_GIVEN_SEQS = 1u << 10   /* (max_num_seqs_set says whether a flag gave it) */
};

/* DeepSeek-V2-Lite on one H200, vLLM defaults (max_num_seqs 256, max_num_batched_tokens 8192,
 * block 16, gpu_memory_utilization 0.9, chunked prefill on), default efficiency factors. */
void sim_default_params(sim_params *p);
/* key = long option name without "--" (model, model-config, gpu, gpus, tp, ep, weight-dtype,
 * kv-dtype, max-num-seqs, max-num-batched-tokens, block-size, max-model-len,
 * gpu-memory-utilization, reserved-mem, num-gpu-blocks, chunked-prefill, gpu-mem, hbm-bw,
 * bf16-flops, fp8-flops, link-bw, bw-eff, compute-eff, link-eff, step-overhead, comm-latency,
 * expert-skew, flash-attention, scheduling-policy, profile). 0 ok, 1 unknown key, -1 bad value (err says why). */
int sim_params_set(sim_params *p, const char *key, const char *value, char *err, size_t errlen);
/* The keys sim_params_set accepts, NULL-terminated (for building getopt_long tables). */
const char *const *sim_params_keys(void);
/* Option lines for --help. */
const char *sim_params_help(void);
/* Resolves model, GPU (with overrides) and dtypes and sets up the cost model. 0 ok, -1 with err
 * (unknown model/GPU, bad config file, bad parallel sizes). cost_free() it. */
int sim_params_cost(const sim_params *p, cost_model *c, char *err, size_t errlen);
/* The engine profile with the flag overrides applied. 0 ok, -1 unknown profile. */
int sim_params_profile(const sim_params *p, engine_profile *out);
/* Tokens one step takes: --max-num-batched-tokens when given, else the profile's default
 * (llama-server's n_batch 2048), else 8192. */
int sim_params_batch_tokens(const sim_params *p);
/* An uncalibrated llama.cpp b4747 deployment's host speed (cost_factors.loop_host_x) in words, for
 * the line a run or a plan prints; 0 (and "") for any other. */
int sim_params_loop_host_note(const sim_params *p, char *buf, size_t len);
/* Adds the request's way outside the engine's steps on this profile (a Python server: the factors'
 * request_s and request_token_s; llama-server: server_path_s and server_path_token_s; nothing for
 * others) to a transit's fixed and per-prompt-token times: the simulator's transit puts it between
 * send and the engine's queue. */
void sim_params_add_request_path(const sim_params *p, int64_t *fixed_ns, double *per_token_ns);
/* The prefill pool's parameters under PD disaggregation (tp, dp, ep of the prefill instances; no MTP). */
void sim_params_prefill_side(const sim_params *p, sim_params *out);
/* KV blocks per GPU from memory: (mem x utilization - weights - reserved) / (block_size x KV bytes
 * per token), or the num_gpu_blocks override. <= 0 when the weights do not fit. */
long long sim_params_kv_blocks(const sim_params *p, const cost_model *c);
/* Reads a calibration profile (JSON written by `dsperf sim --calibrate`) into p->factors. */
int sim_params_load_profile(sim_params *p, const char *path, char *err, size_t errlen);
/* The model as an architecture given whole, in Hugging Face config.json names (a profile's
 * setup.architecture, a simulated run's config.sim.architecture: a GGUF's header as a run read it).
 * 0 ok; -1 with err, p unchanged. */
int sim_params_set_arch(sim_params *p, const json_t *hf, const char *what, const char *name, char *err, size_t errlen);
/* The model simulated, by name: the architecture's own, the config.json path, or the catalog name. */
const char *sim_params_model_name(const sim_params *p);
/* Sets p's factors from a {"bw_eff": .., "step_overhead_s": .., ...} object (a profile's "factors" or a
 * simulated run's engine.factors; missing keys keep their values) and the engine profile when named.
 * 0 ok, -1 not an object or out of range (p unchanged). */
int sim_params_apply_factors(sim_params *p, const json_t *factors, const char *profile_name);
/* Every factor as such an object. */
json_t *sim_params_factors_json(const cost_factors *f);

/* The engine. Its emit callback may call engine_submit (new work is scheduled from the next
 * step) but not engine_cancel: defer cancellations until advance returns. */
engine *engine_sim_create(const sim_params *p, char *err, size_t errlen);

/* Engine-side facts beyond engine_stats (for sim's results and serve's /metrics). */
typedef struct {
    long long total_blocks, used_blocks;
    double weight_bytes_per_gpu, kv_bytes_per_token;
    int64_t last_step_decode_tokens, last_step_prefill_tokens;
    int64_t prefill_tokens_total;    /* incl. recomputation after preemption */
    double busy_s;                   /* simulated time spent in steps */
    int64_t prefix_query_tokens;     /* prompt tokens looked up in the prefix cache */
    int64_t prefix_hit_tokens;       /* ... found there (their prefill was skipped) */
    int64_t kv_transfers;            /* PD: requests whose KV moved to the decode instance */
    double kv_transfer_s;            /* ... total transfer time */
    double prefill_busy_s;           /* PD: simulated time the prefill pool spent in steps */
    double window_tokens;            /* profile kv_window: KV cells the last step's attention spanned */
    double window_token_s;           /* ... summed over steps x their duration (time-weighted mean: / busy_s) */
    int64_t steps_priced;            /* steps the cost model priced (the others repeated a batch the memo held) */
} sim_info;
/* Fills info for an engine made by engine_sim_create; -1 for any other engine. */
int sim_get_info(engine *e, sim_info *info);
#endif
