/* deploy — what is served on what. Resolves a run's deployment (the model's architecture, weight
 * and KV dtypes, GPU type and count, tensor parallelism, the serving engine and its sequence cap)
 * from every source the run has, and keeps for each field where it came from and whether it is
 * only assumed. Sources, weakest first; a stronger one overrides:
 *   NVML telemetry (GPU name; GPUs that hold a process)  <  the served model id resolved by the
 *   catalog (Hugging Face ids)  <  what bench/sweep recorded at preflight (results "deployment":
 *   llama.cpp GET /props and the /v1/models meta, the GGUF header of the served file when it is
 *   readable here)  <  the sim config (`dsperf sim`)  <  flags (--model, --model-config FILE
 *   (config.json or GGUF), --gpu, --gpus, --tp, --weight-dtype, --kv-dtype).
 * A field nobody stated gets an explicit assumption (tp 1, the release's weight dtype, 16-bit KV)
 * marked "assumed", so a number that breaks physics can name what to correct.
 *
 * The "deployment" section (deploy_to_json), in results and diagnoses:
 *   {"engine": {"value": "llama.cpp", "source": "..."}, "sim_profile": {...}, "served_model": {...}, "model": {...},
 *    "architecture": {"value": {config.json keys}, "source": "..."}, "weight_dtype": {...},
 *    "kv_dtype": {...}, "gpu": {...}, "n_gpus": {...}, "tp": {...}, "max_num_seqs": {...},
 *    "context_per_seq": {...}, "ubatch_tokens": {...}, "cpu_threads": {...}, "gpu_layers": {...}, "split_mode": {...},
 *    "tensor_split": {...}, "params": {...},
 *    "model_bytes": {...}}
 * each {"value", "source", "assumed": true when no source stated it}; absent when unknown. */
#ifndef DSP_DEPLOY_H
#define DSP_DEPLOY_H
#include "engine/cost_model.h"
#include "engine/sim.h"
#include "model/model.h"
#include <jansson.h>
#include <stdbool.h>

#define DEPLOY_SRC_LEN 200

typedef struct {
    bool known;                 /* some source (or an assumption) set the field */
    bool assumed;               /* set by an assumption, not by a source */
    char src[DEPLOY_SRC_LEN];   /* where it came from, for a person */
} deploy_src;

typedef struct {
    char engine[32];            /* "llama.cpp", "vllm", "sglang", "tgi", "dsperf serve", "dsperf sim" */
    deploy_src engine_s;
    char sim_profile[32];       /* dsperf sim: the engine profile it timed its steps with ("" unknown) */
    deploy_src sim_profile_s;
    char served_model[256];     /* the id the server answers to */
    deploy_src served_model_s;
    char model[128];            /* catalog name, or the config's / GGUF's own name */
    deploy_src model_s;
    model_arch arch;
    deploy_src arch_s;
    model_dtype weight_dtype;
    deploy_src weight_dtype_s;
    model_dtype kv_dtype;
    deploy_src kv_dtype_s;
    char gpu[32];               /* GPU catalog name (hw_find) */
    deploy_src gpu_s;
    int n_gpus;
    deploy_src n_gpus_s;
    int tp;
    deploy_src tp_s;
    int max_num_seqs;           /* the engine's cap on running sequences (llama.cpp: slots) */
    deploy_src max_num_seqs_s;
    int max_num_batched_tokens;
    deploy_src max_num_batched_tokens_s;
    int ubatch_tokens;          /* llama.cpp's physical batch (-ub): tokens in one forward pass */
    deploy_src ubatch_tokens_s;
    int cpu_threads;            /* llama.cpp's CPU threads for generation (-t) */
    deploy_src cpu_threads_s;
    int gpu_layers;             /* llama.cpp -ngl: layers put on the GPUs (n_layer + 1 with the output); -1 unknown */
    deploy_src gpu_layers_s;
    double gpu_held_mib;        /* GPU memory the server's process held (NVML, all GPUs); NaN unknown */
    deploy_src gpu_held_mib_s;
    char split_mode[8];         /* llama.cpp -sm over several GPUs: "none", "layer" (its default), "row"; "" unknown */
    deploy_src split_mode_s;
    char tensor_split[64];      /* llama.cpp -ts as given ("3,1": proportions per GPU); "" = its default (free memory) */
    deploy_src tensor_split_s;
    int chunked_prefill;        /* -1 unknown */
    deploy_src chunked_prefill_s;
    int context_per_seq;        /* tokens one sequence may hold (llama.cpp n_ctx per slot) */
    deploy_src context_per_seq_s;
    double kv_capacity_tokens;  /* tokens the KV cache holds in all (vLLM num_gpu_blocks x block_size) */
    deploy_src kv_capacity_tokens_s;
    bool kv_capacity_set;       /* ... set by a setting (num_gpu_blocks override), not by memory */
    double gpu_memory_utilization;   /* the share of GPU memory the engine may use (vLLM, the simulator) */
    deploy_src gpu_memory_utilization_s;
    double time_scale;          /* engine seconds per client second (serve --engine sim --speedup); 0 = 1 */
    deploy_src time_scale_s;
    double params;              /* total parameters as the server reports them */
    deploy_src params_s;
    double model_bytes;         /* the weights' size as the server reports it */
    deploy_src model_bytes_s;
} deploy;

/* Flags of a command; NULL / 0 = not given. */
typedef struct {
    const char *model;          /* catalog name or HF id */
    const char *model_config;   /* a config.json or a GGUF file */
    const char *gpu;
    const char *weight_dtype, *kv_dtype;
    int tp, n_gpus;
} deploy_flags;

void deploy_init(deploy *d);

/* Resolves the deployment of one results document (its recorded "deployment" section, sim config,
 * served model name, tokenizer GGUF, telemetry), then applies the flags and the assumptions.
 * 0 ok; -1 with a one-line err when a flag cannot be used (unreadable --model-config). */
int deploy_resolve(const json_t *results, const deploy_flags *flags, deploy *d, char *err, size_t errlen);

/* What a server says about itself at preflight: the GET /v1/models document, llama.cpp's GET
 * /props (NULL when it did not answer), the model id the run uses; a tokenizer path that may be
 * the served GGUF itself (NULL: none). Also reads the GGUF named by /props model_path when it is
 * readable here. */
void deploy_from_server(deploy *d, const json_t *models, const json_t *props, const char *model_id,
                        const char *tokenizer_path);

/* What llama-server was told on its command line (a JSON array of its arguments, as recorded in
 * telemetry.host.numa.server.cmdline): -t, -b, -ub, -ctk, -sm, -ts, and -np / -c where /props was
 * silent; this version's fixed defaults for -b, -ub, -ctk and -sm (layer) when they are absent. Other programs: nothing. */
void deploy_from_cmdline(deploy *d, const json_t *argv);

/* What a server's /metrics page says about its KV cache: vLLM's vllm:cache_config_info labels
 * (num_gpu_blocks x block_size, gpu_memory_utilization; also what `dsperf serve --engine sim`
 * exposes), SGLang's sglang:max_total_num_tokens. Fields it does not find stay as they are. */
void deploy_from_metrics_text(deploy *d, const char *text, size_t len);

/* Architecture (and weight dtype, name) from a GGUF header. explicit: the user named the file as
 * the model; otherwise a vocabulary-only file (no tensors) is refused, since its architecture keys
 * describe the model its vocabulary came from, not what is served. 0 ok, -1 with err. */
int deploy_from_gguf(deploy *d, const char *path, bool explicit_model, char *err, size_t errlen);
/* Architecture from a Hugging Face config.json or, recognised by content, a GGUF file. */
int deploy_from_model_config(deploy *d, const char *path, char *err, size_t errlen);

/* The "deployment" section (a new reference); deploy_from_json reads one back (fields it holds
 * override d's). */
json_t *deploy_to_json(const deploy *d);
void deploy_from_json(deploy *d, const json_t *section);

/* The simulator's setup for this deployment: every key of p that no flag gave (p->given) and that a
 * source stated (not assumed): the engine profile (llama.cpp: llamacpp-b4747, its host loop over the
 * experts, for builds before the spring 2025 MoE rework or of unknown build; llamacpp after), the
 * model (the architecture whole: a GGUF's header), the GPU, TP and the weights' dtype. said: what was
 * taken and from where, clauses joined by "; " ("" when nothing). */
void deploy_sim_setup(const deploy *d, sim_params *p, char *said, size_t saidlen);

/* The weights' bytes: as the server reports them (model_bytes), else the model's parameters x bytes
 * per weight (the cost model); *src says which. NaN when neither is known. */
double deploy_weight_bytes(const deploy *d, const char **src);
/* Whether the served weights were not all on the GPUs: llama-server told to put fewer layers there
 * than the model has with its output layer (-ngl), or a server process holding less GPU memory than
 * its weights (deploy_weight_bytes). True with a sentence saying which, and how far. The one
 * definition: the simulator refuses such a run, diagnose's `deployment` finding names it. */
bool deploy_weights_off_gpu(const deploy *d, char *why, size_t whylen);

/* llama.cpp's spring 2025 MoE rework (ggml-org/llama.cpp#13014, #13199, 2025-04-19/29) took the
 * expert ids into MMVQ and MMQ on the GPU; before it, mul_mat_id synced to the host and looped over
 * the experts (the simulator's profile llamacpp-b4747). Builds are numbered by commit; about b5200
 * then. Flash attention for DeepSeek's unequal K and V heads came to CUDA days later
 * (ggml-org/llama.cpp#13306, 2025-05-04, Ampere or newer; about b5280): before, -fa is forced off
 * for these models ("flash_attn requires n_embd_head_k == n_embd_head_v - forcing off"). */
#define LLAMACPP_MOE_REWORK_BUILD 5200
#define LLAMACPP_FA_MLA_BUILD 5280
/* The llama.cpp build number in the engine's source line ("GET /props answered (llama-server build
 * b4747-c392e50)"): 0 when it states none (a build from a source tarball reports b0-unknown). */
long deploy_llamacpp_build(const deploy *d);

/* A roofline needs these two. */
bool deploy_has_model(const deploy *d);
bool deploy_has_gpu(const deploy *d);
/* The cost model of the resolved deployment (needs model and GPU). 0 ok, -1 with err. cost_free() it. */
int deploy_cost(const deploy *d, const cost_factors *f, cost_model *c, char *err, size_t errlen);
/* "deepseek-v2-lite, bf16 weights, bf16 KV, 1 x h200, tp 1" */
void deploy_describe(const deploy *d, char *buf, size_t len);
/* The fields a person would correct when a measured rate exceeds physics, with their sources:
 * "tp 1 (assumed: nothing stated it)". Writes one line per field into buf. */
void deploy_assumptions(const deploy *d, char *buf, size_t len);
#endif
