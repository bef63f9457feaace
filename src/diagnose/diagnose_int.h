/* diagnose_int — what the diagnosis rules share inside the module: the facts read from one
 * results document (and its resolved deployment), finding builders and series helpers. Not part of
 * the module's interface (that is diagnose.h). */
#ifndef DSP_DIAGNOSE_INT_H
#define DSP_DIAGNOSE_INT_H
#include "diagnose/diagnose.h"
#include "deploy/deploy.h"
#include <stdbool.h>

/* Thresholds of the rules (the README lists them). */
#define DIAG_KV_FULL 0.95              /* KV usage fraction counted as full */
#define DIAG_WAITING_MEAN 1.0          /* mean waiting requests that make a queue */
#define DIAG_SEQS_FULL 0.95            /* running / max_num_seqs counted as the cap */
#define DIAG_TTFT_WAIT_RATIO 3.0       /* median TTFT / min TTFT: requests wait before service */
#define DIAG_ROOF_EFF 0.5              /* decode efficiency vs the HBM roofline for "bandwidth bound" */
#define DIAG_HEALTHY_EFF 0.7           /* ... and for "healthy" */
#define DIAG_PHYSICS_TOL 1.2           /* achieved / roofline beyond this is impossible: the roofline's own
                                          uncertainty (batch and context estimated, uniform expert routing) */
#define DIAG_OVERHEAD_EFF 0.25         /* decode below this share of its roofline: something other than HBM limits it */
#define DIAG_PIPES_IDLE 20.0           /* % DRAM bandwidth and tensor activity under which the GPU's pipes idle */
#define DIAG_PREFILL_SHARE 0.3         /* TTFT / E2EL for prefill to matter */
#define DIAG_TENSOR_HIGH 50.0          /* % tensor activity counted as compute bound */
#define DIAG_DRAM_HIGH 60.0            /* % DRAM bandwidth counted as bandwidth bound */
#define DIAG_ITL_SPIKE 3.0             /* p99 ITL / median ITL */
#define DIAG_STEP_SPIKE 3.0            /* max step / median step */
#define DIAG_STEP_CORR 0.5             /* correlation of step time with tokens in the step */
#define DIAG_PCIE_MB_S 16000.0         /* PCIe traffic per GPU (both directions, MB/s) when the link is unknown */
#define DIAG_PCIE_LINK_FRAC 0.38       /* PCIe traffic in one direction / the link's capacity that way (NVML
                                          gen x width): 12 GB/s of a Gen4 x16 A100 PCIe card's 31.5 GB/s */
#define DIAG_DRAM_SUSTAINED_PCT 92.0   /* % DRAM bandwidth counted as the ceiling ... */
#define DIAG_DRAM_SUSTAINED_S 10.0     /* ... when held longer than this (s) */
#define DIAG_KV_SHARE 0.75             /* KV capacity / the memory the settings give it, below which it is short */
#define DIAG_LINK_FRAC 0.3             /* NVLink traffic / link bandwidth */
#define DIAG_COMM_SHARE 0.2            /* modelled communication share of a decode step */
#define DIAG_GPU_IDLE_UTIL 60.0        /* % GPU util below which a loaded GPU is underused */
#define DIAG_OVERHEAD_SHARE 0.3        /* fixed step overhead / median step */
#define DIAG_THROTTLE_FRAC 0.1         /* fraction of samples throttled */
#define DIAG_CLIENT_CPU 0.9            /* client CPU share of one core */
#define DIAG_ERROR_FRAC 0.01           /* failed / total */
#define DIAG_CLASS_MISS 0.9            /* a request class with a smaller good fraction misses its SLO ... */
#define DIAG_CLASS_MEET 0.95           /* ... while another, at this fraction or more, meets its own */
#define DIAG_COST_UNKNOWN 0.05         /* share lost assumed for a finding that cannot size its cost */
#define DIAG_PC_MIN_BOUND 0.1          /* a workload that allows less prefix reuse than this has none worth finding */
#define DIAG_PC_SHORT 0.7              /* measured hit rate below this share of the workload's bound is a finding */
#define DIAG_PC_ROOM 0.8               /* KV usage below this: the cache had room, so misses were not evictions */
#define DIAG_ADMIT_GAP 0.25            /* (offered - admitted) / offered from which requests wait for admission ... */
#define DIAG_ADMIT_GAP_MIN 1.0         /* ... and at least this many requests */
#define DIAG_ADMIT_TTFT 1.5            /* ... confirmed by mean TTFT beyond this multiple of the fastest */
#define DIAG_PINNED 0.5                /* share of busy samples with running at its max that makes it a cap, while
                                          requests wait throughout (a sample often lands between one request's
                                          end and the next one's admission: llama.cpp at 100 ms, 2 slots, 76%) */
#define DIAG_NEAR_HOST 0.8             /* server CPU / its threads from which a prefill on the host is compute bound */
#define DIAG_NEAR_ROOF 0.5             /* a stage at this share of its roofline or more is bound by that roofline */
#define DIAG_FIXED_DOMINATES 0.5       /* fixed per-step cost / step time from which it limits the step */
#define DIAG_SERVER_CORES 3.0          /* server CPU in cores from which it computes on the host */
#define DIAG_GPU_IDLE_PCT 20.0         /* NVML utilization under which a GPU with work offered idles */
/* steal and run-queue shares worth naming beside an overhead-bound step: a 1 % steal on 16 vCPUs
 * is a sixth of a core; a main thread waiting 2 % of the time stalls a launch-bound loop about as long */
#define DIAG_STEAL_PCT 1.0
#define DIAG_RUNQ_PCT 2.0
#define DIAG_FEW_SAMPLES 100           /* requests under which a p99 is the maximum of few samples */

typedef struct {
    const json_t *doc, *cfg, *engine, *eng_series, *tel, *client, *timeline;
    const diagnose_opts *o;
    double level;                      /* sweep load, NAN for a single run */
    deploy dep;                        /* what is served on what, with where each part came from */
    double step_overhead_s;            /* sim factors, NAN unknown */
    /* the roofline at this run's batch and context */
    bool have_roof;                    /* computed and physically possible: rules may rely on it */
    bool roof_impossible;              /* computed, but the run beats it: the assumed deployment is wrong */
    double roof_batch, roof_context, roof_achieved, roof_bound, roof_eff, roof_decode_ms, roof_comm_share;
    double roof_mem_ms;                /* bytes of one decode step / HBM bandwidth: the physical floor */
    double roof_step_ms;               /* measured: the mean TPOT (one decode step per token) */
    int roof_mem_bound;
    double roof_prefill_ms, roof_prompt;
    int roof_prefill_compute;
    cost_factors roof_factors_v;       /* a simulated run's own cost factors (engine.factors) */
    const cost_factors *roof_factors;  /* &roof_factors_v, or NULL: the defaults */
    const char *roof_batch_source;
    double roof_weight_ms, roof_kv_ms;  /* the HBM floor's parts: weights and KV of one decode step */
    double roof_compute_ms;            /* one decode step's FLOPs at the GPU's tensor peak */
    double roof_prefill_compute_ms;    /* a prefill of the mean prompt at the GPU's tensor peak */
    /* admission: requests offered to the server against those it runs */
    double offered;                    /* mean requests in the server (Little: request_throughput x mean_e2el) */
    double offered_peak;               /* most requests in flight at once (the client's count) */
    double admitted;                   /* mean running while busy (server or engine series); NAN unknown */
    double run_max, pinned_frac;       /* most running; share of busy samples at that count */
    const char *admitted_src;
    int cap;                           /* the running cap: the deployment's, else the count running is pinned at */
    const char *cap_src;
    bool cap_from_evidence;            /* cap read from running pinned at its max, not stated by the server */
    bool queue_by_admission;           /* admitted below offered, TTFT confirming: requests wait for a slot */
    bool queue_bursts;                 /* ... only in bursts: more in flight at times than the cap admits */
    json_t *config;                    /* configuration findings (the assumed deployment is wrong) */
} diag_in;

/* Finding builders. */
json_t *diag_finding(json_t *list, const char *cls, double confidence, const char *title_fmt, ...)
    __attribute__((format(printf, 4, 5)));
void diag_ev(json_t *f, double value, const char *unit, const char *source, const char *text_fmt, ...)
    __attribute__((format(printf, 5, 6)));
/* "DRAM bandwidth 1.1-1.4%, tensor 0.20%, SM 4-10%": the GPM activities that were sampled (a NaN
 * one is left out: some GPUs give DRAM only), each a value or a lo-hi range; "" when none. */
const char *diag_gpm_text(char *buf, size_t len, double dram_lo, double dram_hi, double tensor_lo, double tensor_hi,
                          double sm_lo, double sm_hi);
/* An action that is not a server setting ("load: lower", "server log: read"). */
void diag_knob(json_t *f, const char *knob, const char *direction, const char *effect);
/* Whether llama-server's -fa would run on this deployment: builds before ggml-org/llama.cpp#13306
 * (LLAMACPP_FA_MLA_BUILD; a source build, numbered 0, taken as one) force it off for DeepSeek's
 * unequal K and V heads (MLA). */
bool diag_llamacpp_fa_runs(const diag_in *in);
/* A server setting (generic name: max_num_seqs, kv_cache_dtype, weight_dtype, tensor_parallel_size,
 * enable_chunked_prefill, max_num_batched_tokens, gpu_memory_utilization): the current value (NULL
 * unknown) and the suggested one ("64", or "raise" when the current is unknown). Nothing is added
 * when the setting already has the suggested value. The engine's own flag is named when known. */
void diag_setting(const diag_in *in, json_t *f, const char *knob, const char *current, const char *suggested,
                  const char *effect);
/* The same, for a setting whose value is not bounded by the run's concurrency (more llama.cpp slots
 * to keep more prefixes cached, at any load). */
void diag_setting_any(const diag_in *in, json_t *f, const char *knob, const char *current, const char *suggested,
                      const char *effect);
/* The two settings that give the KV cache more room on the same GPUs: kv_cache_dtype → fp8 and
 * gpu_memory_utilization → 0.95 (the simulated run's value when known), with their effects. */
void diag_kv_memory_settings(const diag_in *in, json_t *f, const char *dtype_effect, const char *memory_effect);
/* What the finding costs the user: the share of throughput or goodput lost (0..1) and against what. */
void diag_cost(json_t *f, double lost_frac, const char *basis_fmt, ...) __attribute__((format(printf, 3, 4)));
void diag_window(json_t *f, double t0_s, double t1_s);

/* Numbers from documents: NAN when absent. */
double diag_num(const json_t *o, const char *key);
/* Series statistics over a JSON array of numbers (nulls skipped). */
double diag_mean(const json_t *arr);
double diag_max(const json_t *arr);
double diag_median(const json_t *arr);
double diag_frac_at_least(const json_t *arr, double thr);
double diag_corr(const json_t *a, const json_t *b);
/* First and last t_s where arr >= thr; false when never. */
bool diag_span(const json_t *t, const json_t *arr, double thr, double *t0, double *t1);
/* The mean over GPUs of a telemetry column's mean; NAN when no GPU has it. */
double diag_gpu_mean(const diag_in *in, const char *col);
/* Tracks "checked" lines: what a rule used, or why it could not run. */
void diag_checked(json_t *checked, const char *rule, bool ran, const char *used_or_why);

/* Requests by who ended them. Failures the server caused, by class (with the first status and
 * message the results keep); requests the client ended itself (cancelled at the end of a level or
 * on Ctrl-C) are counted apart and are never the server's. This is the one place that reads the
 * error classes. */
#define DIAG_MAX_FAIL 16
typedef struct {
    char cls[24];                      /* "http", "timeout", "connect", "stream", "truncated", "invalid_json" */
    int status;                        /* HTTP status (http), else 0 */
    double count;
    const char *message;               /* first message, or NULL (owned by the document) */
} diag_fail;
typedef struct {
    double total, completed, server_failed, self_ended;
    size_t n;
    diag_fail v[DIAG_MAX_FAIL];
} diag_failures;
void diag_read_failures(const json_t *doc, diag_failures *out);
/* The errors rule: failures the server caused, their first messages, advice per class. */
void diag_rule_errors(diag_in *in, json_t *list, json_t *checked);

/* The prefix_cache rule (diagnose_cache.c): measured hit rate far below the workload's bound. */
void diag_rule_prefix_cache(diag_in *in, json_t *list, json_t *checked);

/* Roofline of one document (diagnose_roof.c): fills the roof_* fields, and, when the run beats
 * physics, a configuration finding in in->config instead of a usable roofline. */
void diag_roofline(diag_in *in);
void diag_roof_rules(diag_in *in, json_t *list, json_t *checked);   /* decode_bandwidth, engine_overhead */
/* The long-context rules (diagnose_longctx.c): bandwidth_ceiling, kv_share. */
void diag_longctx_rules(diag_in *in, json_t *list, json_t *checked);
/* The per-direction capacity (MB/s) of the GPU's PCIe link as NVML reported it (max generation x
 * width); NAN unknown (then gen and width are 0). */
double diag_pcie_link_mb_s(const diag_in *in, int *gen, int *width);
/* The rules of a deployment split over GPUs (diagnose_gpus.c): layer_split, uneven_split, row_split. */
void diag_gpu_split_rules(diag_in *in, json_t *list, json_t *checked);
/* Runs every rule on one results document; appends findings to list and a line per rule to
 * checked ({"rule","ran","used"|"why"}). */
void diag_rules(diag_in *in, json_t *list, json_t *checked);

/* One results document: {"findings","configuration","roofline","deployment","checked","inputs"}. */
json_t *diag_results(const json_t *doc, const diagnose_opts *o, double level, char *err, size_t errlen);
/* A sweep document (diagnose_sweep.c). */
json_t *diag_sweep(const json_t *doc, const diagnose_opts *o, char *err, size_t errlen);
/* Admission (diagnose_account.c): offered vs admitted requests, the running cap. Fills in->offered... */
void diag_admission(diag_in *in);
/* The mean prefill of one request (ms): TTFT less the admission wait, at most the fastest TTFT's rate
 * per prompt token applied to the mean prompt (a mix of short and long prompts waits behind the
 * long ones' prefills; that wait is no prefill of its own). */
double diag_prefill_ms(const diag_in *in);
/* Time accounting of one results document: {"request": [{part, ms, share, source}], "decode_step":
 * [{part, ms, share, bound, source}], "unexplained_ms"...}. NULL when the document lacks the numbers. */
json_t *diag_time(const diag_in *in);
/* The deployment against what the telemetry shows (diagnose_account.c): weights not on the GPU,
 * the server computing on the host. Returns true when a finding was added. */
bool diag_rule_deployment(diag_in *in, json_t *list, json_t *checked);
/* Warnings of the run (bench's overload and client lag, percentiles of few samples): [{kind, message, level}]. */
json_t *diag_warnings(const json_t *doc, double level);
/* One story: one direction per knob (the first, highest-ranked finding's), nothing suggested twice. */
void diag_one_story(json_t *ranked);
/* Whether the engine's quantized weights run on fp8 tensor cores (vLLM, SGLang, TRT-LLM, the sim on
 * a GPU with fp8 tensor cores); llama.cpp's GGUF quantizations dequantize. */
bool diag_fp8_compute(const diag_in *in);

/* Findings sorted by what they cost (lost share x confidence), most first; takes list. */
json_t *diag_rank(json_t *list);
#endif
