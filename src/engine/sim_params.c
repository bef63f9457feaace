/* sim_params — the simulated engine's settings: defaults, "--key value" parsing shared by
 * `dsperf sim`, `dsperf plan` and `dsperf serve --engine sim`, calibration profiles, and the
 * resolution of model/GPU/dtypes into a cost model and a KV block count. */
#include "engine/sim.h"
#include "common/units.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#define DEFAULT_MAX_SEQS 256   /* vLLM's max_num_seqs default: any profile without its own (max_batch) */

void sim_default_params(sim_params *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->model, sizeof p->model, "deepseek-v2-lite");
    snprintf(p->gpu, sizeof p->gpu, "h200");
    p->tp = 1;
    p->ep = 1;
    snprintf(p->weight_dtype, sizeof p->weight_dtype, "auto");
    snprintf(p->kv_dtype, sizeof p->kv_dtype, "auto");
    p->max_num_seqs = DEFAULT_MAX_SEQS;
    p->max_num_batched_tokens = 8192;
    p->block_size = 16;
    p->gpu_memory_utilization = 0.9;
    p->reserved_bytes = 2.0 * 1073741824.0;
    p->chunked_prefill = true;
    p->recv_interval_steps = 1;
    cost_default_factors(&p->factors);
    snprintf(p->engine_profile, sizeof p->engine_profile, "vllm-v1");
    p->dp = 1;
    p->ov_cuda_graphs = p->ov_graph_max = p->ov_overlap = p->ov_mla = p->ov_tbo = p->ov_a2a = p->ov_prefill_mode = -1;
    p->ov_moe_kernel = p->ov_attn_kernel = -1;
    p->ov_admit_reserve = -1;
    p->ov_ubatch = -1;
}

static const char help_head[] =
    "  --model NAME               deepseek-v3 (= r1), deepseek-v2, deepseek-v2-lite, deepseek-llm-7b,\n"
    "                             deepseek-llm-67b (default deepseek-v2-lite)\n"
    "  --model-config FILE        a Hugging Face config.json instead of the catalog\n"
    "  --gpu NAME                 %s\n"
    "                             (default h200; dsperf plan --list shows memory, bandwidth, peaks, links)\n"
    "  --engine-profile NAME      what the engine does around the math (default vllm-v1):\n%s"
    "  --gpus N                   GPUs in total (default = --tp)\n"
    "  --tp N, --ep N             GPUs of one instance (tensor parallel world size); expert parallel size\n"
    "                             (divides tp). More GPUs than one node's link domain go over the NIC\n"
    "  --dp N                     attention data-parallel ranks (divides tp); --enable-dp-attention = tp\n"
    "  --a2a allreduce|allgather|deepep   how MoE tokens move under DP attention / EP (profile's)\n"
    "  --two-batch-overlap on|off communication hidden behind a second micro-batch (DeepSeek, SGLang TBO)\n"
    "  --eplb on|off, --redundant-experts N   expert placement by load; extra expert copies\n"
    "  --mtp N                    MTP / speculative draft tokens per step (0 off)\n"
    "  --mtp-accept-len L|FILE    tokens accepted per step incl. the verified one (default from\n"
    "                             --mtp-accept P: 1 + P + ... + P^N, P = 0.68); FILE: a results file of\n"
    "                             a run that measured it (its spec_decode: the server's count, else the stream's)\n"
    "  --weight-dtype D           auto (as released: fp8 for V3), bf16, fp16, fp8, int8, int4, fp4 (NVFP4), mxfp4, q4 (GGUF)\n"
    "  --kv-dtype D               auto (bf16), bf16, fp16, fp8, int8, fp8-flashmla (656 B per token-layer)\n"
    "  --cuda-graphs on|off, --graph-max-batch N, --overlap-schedule on|off, --mla on|off,\n"
    "  --moe-kernel tuned|fused|fused-v1|swapab|stream|triton|gemv, --attn-kernel flash|triton\n"
    "                             override the profile's facts\n"
    "  --prefix-caching on|off    reuse hashed KV blocks of shared prefixes (LRU eviction) (off)\n"
    "  --pd-prefill N[xTP]        prefill/decode disaggregation: N prefill instances of TP GPUs each\n"
    "                             (default TP = --tp); the KV moves over the network to this decode\n"
    "                             instance and TTFT includes the transfer\n"
    "  --max-num-seqs N           running sequences per step (256; an engine profile's own default where it\n"
    "                             has one: llama-server's slots, 1 on b4747 and 4 since 2025-10; ATOM 512)\n"
    "  --max-num-batched-tokens N tokens per step (8192; llama.cpp profiles: llama-server's -b 2048)\n"
    "  --ubatch N                 tokens per graph evaluation: a larger step runs as several (the\n"
    "                             llama.cpp profiles' -ub 512; others none)\n"
    "  --block-size N             tokens per KV block (16)\n"
    "  --max-model-len N          longest prompt + output (model's maximum)\n"
    "  --gpu-memory-utilization F fraction of GPU memory for weights + KV (0.9)\n"
    "  --reserved-mem BYTES       per GPU for activations, CUDA graphs, NCCL (2GiB)\n"
    "  --num-gpu-blocks N         KV blocks, overriding the memory computation\n"
    "  --chunked-prefill on|off   (on)\n"
    "  --scheduling-policy P      fcfs (default) or priority (request priority, lower first; the lowest\n"
    "                             is preempted first)\n"
    "  --scheduler-recv-interval N  decode steps between the scheduler's looks at new requests\n"
    "                             (SGLang's --scheduler-recv-interval or --num-continuous-decode-steps;\n"
    "                             a prefill step or an idle engine looks at once) (1: every step)\n"
    "  --batch-wait-iters N, --batch-wait-max-tokens-ratio F   TensorRT-LLM's batch waiting: while\n"
    "                             sequences decode, new prompts wait until the step would carry F x\n"
    "                             --max-num-batched-tokens tokens or N steps held them (0, 0: off)\n"
    "  --gpu-mem B, --hbm-bw B/s, --bf16-flops F, --fp8-flops F, --link-bw B/s\n"
    "                             override the GPU catalog (e.g. --hbm-bw 4.8TB/s --bf16-flops 989T)\n"
    "  --bw-eff F, --compute-eff F, --link-eff F   achievable fractions of peak (0.85, 0.7, 0.7)\n"
    "  --step-overhead DUR, --seq-overhead DUR     CPU scheduler time per step / per running sequence, any\n"
    "                             engine (--step-overhead-v1/--seq-overhead-v1: vLLM V1's engine core only,\n"
    "                             --seq-overhead-trt: TensorRT-LLM's PyTorch executor)\n"
    "  --attn-dtype bf16|fp8      attention math on fp8 tensor cores (FP8 MLA) (bf16)\n"
    "  --kernel-time DUR, --launch-time DUR        GPU time per kernel (graphs); CPU time per eager launch\n"
    "  --comm-latency DUR         per collective inside the NVLink domain\n"
    "  --comm-inter-latency DUR   per collective spanning nodes, inside a step (fitted default)\n"
    "  --moe-eff F, --moe-fused-eff F, --moe-triton-eff F, --moe-triton-fp8-eff F,\n"
    "  --attn-compute-eff F, --attn-triton-eff F,\n"
    "  --ggml-compute-eff F       (llama.cpp's kernels relative to the tuned ones)\n"
    "                             kernel efficiencies (fitted defaults); --moe-eff is for block-scaled\n"
    "                             weights on GPUs without fp4 tensor cores (Hopper, MI300X);\n"
    "                             --moe-fused-eff for the 2025 Triton fused MoE on Hopper fp8 (fused),\n"
    "                             --moe-fused-v1-eff vLLM V1's (fused-v1)\n"
    "  --moe-floor-cdna3 F        MI300X/MI325X block-fp8 MoE: a layer's floor as a fraction of streaming\n"
    "                             every expert on the GPU once (default 1; 0: none)\n"
    "  --ggml-call-time DUR       llama.cpp b4747's expert loop: host time per CUDA call (fitted default)\n"
    "  --ggml-gemm-time DUR       ... and the extra of a multi-row expert's cuBLAS path (fitted default)\n"
    "  --ggml-mmq-time DUR        ... and of a quantized expert's MMQ path (over 8 rows) (fitted default)\n"
    "  --ggml-sample-time DUR     llama-server's host time per sequence per step sampling a 102,400-token\n"
    "                             vocabulary (fitted default)\n"
    "  --ggml-wake-time DUR       llama-server's result queue: host time per waiting stream woken per\n"
    "                             token sent (a step of n sequences: n x n of it; default 10us)\n"
    "  --loop-host-speed X        llama.cpp b4747 uncalibrated: the host's speed against the one the\n"
    "                             loop's times above were timed on; each, and the time per kernel\n"
    "                             (16.3us x X), x X unless set (default 0.80, the median recorded\n"
    "                             host; a calibration fits its own)\n"
    "  --request-time DUR, --request-per-token-time DUR   a Python server's request path outside\n"
    "                             the engine's steps (HTTP, tokenization, hand-off), fixed and per\n"
    "                             prompt token: fitted on published TTFTs (see README-sim.md)\n"
    "  --shard-loss F             compute efficiency lost per extra GPU a GEMM is split over:\n"
    "                             compute_eff / (1 + F (GPUs - 1)) (fitted default)\n"
    "  --moe-native-eff F         the tuned MoE kernel where the MMA takes block scales (B200, MI355X) (1)\n"
    "  --expert-skew S            Zipf exponent of expert popularity (0 = uniform routing)\n"
    "  --flash-attention on|off   off: attention scores go through HBM (eager attention) (on)\n"
    "  --profile FILE             a calibrated profile (`dsperf sim --calibrate`): its factors and the\n"
    "                             deployment they were fitted on (model, GPU, layout, dtypes, engine,\n"
    "                             the server's sequence cap and KV capacity) for every key no flag sets\n";

const char *sim_params_help(void) {
    static char buf[sizeof help_head + 4096];
    if (!buf[0]) snprintf(buf, sizeof buf, help_head, hw_names(), profile_help());
    return buf;
}


static const char *const keys[] = {
    "model", "model-config", "gpu", "gpus", "tp", "tensor-parallel-size", "ep", "expert-parallel-size",
    "weight-dtype", "dtype", "kv-dtype", "kv-cache-dtype", "max-num-seqs", "max-num-batched-tokens", "block-size",
    "max-model-len", "gpu-memory-utilization", "reserved-mem", "num-gpu-blocks", "chunked-prefill",
    "enable-chunked-prefill", "gpu-mem", "hbm-bw", "bf16-flops", "fp8-flops", "link-bw", "bw-eff", "compute-eff",
    "link-eff", "step-overhead", "comm-latency", "comm-inter-latency", "expert-skew", "flash-attention", "scheduling-policy", "scheduler-recv-interval", "batch-wait-iters", "batch-wait-max-tokens-ratio", "profile",
    "engine-profile", "dp", "data-parallel-size", "enable-dp-attention", "a2a", "two-batch-overlap", "eplb",
    "redundant-experts", "mtp", "mtp-accept-len", "mtp-accept", "cuda-graphs", "graph-max-batch", "overlap-schedule",
    "mla", "prefix-caching", "enable-prefix-caching", "pd-prefill", "seq-overhead", "kernel-time", "launch-time",
    "moe-eff", "moe-fused-eff", "moe-fused-v1-eff", "moe-floor-cdna3", "moe-native-eff", "moe-triton-eff", "attn-compute-eff", "moe-triton-fp8-eff", "attn-triton-eff", "attn-dtype",
    "seq-overhead-trt", "moe-kernel", "attn-kernel", "step-overhead-v1", "seq-overhead-v1", "ggml-compute-eff", "ggml-call-time", "ggml-gemm-time",
    "ggml-sample-time", "ggml-wake-time", "ggml-mmq-time", "loop-host-speed", "ubatch", "shard-loss", "request-time", "request-per-token-time", NULL,
};

const char *const *sim_params_keys(void) { return keys; }

/* Names the engine profile; its default running sequences (max_batch: llama-server's slots, ATOM's
 * 512) take the place of max_num_seqs unless --max-num-seqs or a calibrated profile's server set it. */
static void set_profile(sim_params *p, const engine_profile *pr) {
    snprintf(p->engine_profile, sizeof p->engine_profile, "%s", pr->name);
    if (!p->max_num_seqs_set && !(p->from_profile & SIM_GIVEN_SEQS)) p->max_num_seqs = pr->max_batch > 0 ? pr->max_batch : DEFAULT_MAX_SEQS;
}

/* "4.8TB/s", "989T", "1.979e15", "900GB/s", "141GiB": a number with an optional SI/IEC suffix,
 * optional "B", "FLOPS", "/s". */
static int parse_scaled(const char *s, double *out) {
    char buf[64];
    snprintf(buf, sizeof buf, "%s", s);
    size_t n = strlen(buf);
    if (n > 2 && !strcmp(buf + n - 2, "/s")) buf[n -= 2] = 0;
    if (n > 5 && !strcasecmp(buf + n - 5, "FLOPS")) buf[n -= 5] = 0;
    if (n > 1 && (!strcmp(buf + n - 1, "P"))) {
        double v;
        buf[n - 1] = 0;
        if (units_parse_double(buf, &v) < 0 || v < 0) return -1;
        *out = v * 1e15;
        return 0;
    }
    int64_t b;
    double v;
    if (units_parse_double(buf, &v) == 0 && v >= 0) { *out = v; return 0; }
    if (units_parse_bytes(buf, &b) < 0) return -1;
    *out = (double)b;
    return 0;
}

static int parse_fraction(const char *v, double lo, double hi, double *out) {
    double x;
    if (units_parse_double(v, &x) < 0 || x <= lo || x > hi) return -1;
    *out = x;
    return 0;
}

static int parse_posint(const char *v, long long max, int *out) {
    long long x;
    if (units_parse_int(v, 1, max, &x) < 0) return -1;
    *out = (int)x;
    return 0;
}

static int parse_bool(const char *v, bool *out) {
    if (!strcasecmp(v, "on") || !strcasecmp(v, "true") || !strcmp(v, "1") || !strcasecmp(v, "yes")) *out = true;
    else if (!strcasecmp(v, "off") || !strcasecmp(v, "false") || !strcmp(v, "0") || !strcasecmp(v, "no")) *out = false;
    else return -1;
    return 0;
}

/* A measured acceptance length: a dsperf results file's spec_decode, the server's own count when it
 * gave one, else the stream's tokens per decode step (metrics/accept.h). 0 ok, -1 none. */
static int measured_accept_len(const char *path, double *out) {
    json_t *doc = json_load_file(path, 0, NULL);
    const json_t *sd = json_object_get(doc, "spec_decode");
    const json_t *v = json_object_get(json_object_get(sd, "server"), "acceptance_length");
    if (!json_is_number(v)) v = json_object_get(sd, "mean_acceptance_length");
    int rc = json_is_number(v) ? (*out = json_number_value(v), 0) : -1;
    json_decref(doc);
    return rc;
}

static int parse_flag(const char *v, int *out) {
    bool b;
    if (parse_bool(v, &b) < 0) return -1;
    *out = b;
    return 0;
}

static int parse_seconds(const char *v, double *out) {
    int64_t ns;
    if (units_parse_duration_ns(v, &ns) < 0) return -1;
    *out = ns / 1e9;
    return 0;
}

/* The SIM_GIVEN_* bit of a setup key (0: not part of a profile's setup). */
static unsigned given_bit(const char *key) {
    static const struct { const char *key; unsigned bit; } m[] = {
        {"model", SIM_GIVEN_MODEL}, {"model-config", SIM_GIVEN_MODEL}, {"gpu", SIM_GIVEN_GPU}, {"tp", SIM_GIVEN_TP},
        {"tensor-parallel-size", SIM_GIVEN_TP}, {"ep", SIM_GIVEN_EP}, {"expert-parallel-size", SIM_GIVEN_EP}, {"dp", SIM_GIVEN_DP},
        {"data-parallel-size", SIM_GIVEN_DP}, {"enable-dp-attention", SIM_GIVEN_DP}, {"weight-dtype", SIM_GIVEN_WDTYPE},
        {"dtype", SIM_GIVEN_WDTYPE}, {"kv-dtype", SIM_GIVEN_KVDTYPE}, {"kv-cache-dtype", SIM_GIVEN_KVDTYPE},
        {"engine-profile", SIM_GIVEN_PROFILE}, {"num-gpu-blocks", SIM_GIVEN_BLOCKS}, {"flash-attention", SIM_GIVEN_FA},
        {"max-num-seqs", SIM_GIVEN_SEQS},
    };
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (!strcmp(key, m[i].key)) return m[i].bit;
    return 0;
}

/* The durations of llama.cpp b4747's loop a flag may set: each marks itself given, so that an
 * uncalibrated host speed (loop_host_x) leaves it as stated. */
typedef struct { const char *key; size_t off; unsigned bit; const char *want; } loop_time;
static const loop_time loop_times[] = {
    {"kernel-time", offsetof(cost_factors, kernel_s), COST_LOOP_GIVEN_KERNEL, "a duration (e.g. 3us)"},
    {"ggml-call-time", offsetof(cost_factors, ggml_call_s), COST_LOOP_GIVEN_CALL, "a duration (e.g. 4.5us)"},
    {"ggml-gemm-time", offsetof(cost_factors, ggml_gemm_s), COST_LOOP_GIVEN_GEMM, "a duration (e.g. 27us)"},
    {"ggml-mmq-time", offsetof(cost_factors, ggml_mmq_s), COST_LOOP_GIVEN_MMQ, "a duration (e.g. 24us)"},
    {"ggml-sample-time", offsetof(cost_factors, ggml_sample_s), COST_LOOP_GIVEN_SAMPLE, "a duration (e.g. 100us)"},
    {"ggml-wake-time", offsetof(cost_factors, ggml_wake_s), COST_LOOP_GIVEN_WAKE, "a duration (e.g. 10us)"},
};

/* --loop-host-speed and --profile, in either order */
static const char loop_host_with_profile[] =
    "--loop-host-speed states an uncalibrated host; the --profile carries its own calibrated loop: drop one";

static const loop_time *loop_time_of(const char *key) {
    for (size_t i = 0; i < sizeof loop_times / sizeof loop_times[0]; i++)
        if (!strcmp(key, loop_times[i].key)) return &loop_times[i];
    return NULL;
}

int sim_params_set(sim_params *p, const char *key, const char *value, char *err, size_t errlen) {
    const char *v = value ? value : "";
    int rc = 0;
    const char *want = NULL;
    const loop_time *lt;
    model_dtype d;
    if (!strcmp(key, "model")) {
        if (!model_find(v)) { snprintf(err, errlen, "unknown model '%s'; see 'dsperf plan --list' or use --model-config config.json", v); return -1; }
        snprintf(p->model, sizeof p->model, "%s", v);
        p->model_config[0] = 0;
        p->arch_set = false;
    } else if (!strcmp(key, "model-config")) {
        if (!*v) { snprintf(err, errlen, "--model-config needs a config.json path"); return -1; }
        snprintf(p->model_config, sizeof p->model_config, "%s", v);
        p->arch_set = false;
    } else if (!strcmp(key, "gpu")) {
        if (!hw_find(v)) { snprintf(err, errlen, "unknown GPU '%s'; known: %s", v, hw_names()); return -1; }
        snprintf(p->gpu, sizeof p->gpu, "%s", v);
    } else if (!strcmp(key, "gpus")) { rc = parse_posint(v, 4096, &p->n_gpus); want = "a GPU count >= 1";
    } else if (!strcmp(key, "tp") || !strcmp(key, "tensor-parallel-size")) { rc = parse_posint(v, 1024, &p->tp); want = "a size >= 1";
    } else if (!strcmp(key, "ep") || !strcmp(key, "expert-parallel-size")) { rc = parse_posint(v, 1024, &p->ep); want = "a size >= 1";
    } else if (!strcmp(key, "weight-dtype") || !strcmp(key, "dtype")) {
        rc = model_dtype_parse(v, DT_BF16, &d); want = "auto, bf16, fp16, fp8, int8, int4, fp4 (nvfp4), mxfp4 or q4";
        if (!rc) snprintf(p->weight_dtype, sizeof p->weight_dtype, "%s", v);
    } else if (!strcmp(key, "kv-dtype") || !strcmp(key, "kv-cache-dtype")) {
        p->kv_flashmla_fp8 = !strcasecmp(v, "fp8-flashmla");
        rc = model_dtype_parse(p->kv_flashmla_fp8 ? "fp8" : v, DT_BF16, &d); want = "auto, bf16, fp16, fp8, int8 or fp8-flashmla";
        if (!rc && (d == DT_INT4 || d == DT_FP4 || d == DT_Q4 || d == DT_MXFP4)) rc = -1;
        if (!rc) snprintf(p->kv_dtype, sizeof p->kv_dtype, "%s", p->kv_flashmla_fp8 ? "fp8" : v);
    } else if (!strcmp(key, "max-num-seqs")) { rc = parse_posint(v, 1 << 20, &p->max_num_seqs); want = "a count >= 1";
        if (!rc) p->max_num_seqs_set = true;
    } else if (!strcmp(key, "max-num-batched-tokens")) { rc = parse_posint(v, 1 << 24, &p->max_num_batched_tokens); want = "a count >= 1";
        p->max_num_batched_tokens_set = true;
    } else if (!strcmp(key, "ubatch")) { rc = parse_posint(v, 1 << 24, &p->ov_ubatch); want = "a count >= 1";
    } else if (!strcmp(key, "block-size")) { rc = parse_posint(v, 1 << 16, &p->block_size); want = "tokens >= 1";
    } else if (!strcmp(key, "max-model-len")) { rc = parse_posint(v, 1 << 24, &p->max_model_len); want = "tokens >= 1";
    } else if (!strcmp(key, "gpu-memory-utilization")) { rc = parse_fraction(v, 0, 1, &p->gpu_memory_utilization); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "reserved-mem")) {
        int64_t b; rc = units_parse_bytes(v, &b); want = "bytes (e.g. 2GiB)";
        if (!rc) p->reserved_bytes = (double)b;
    } else if (!strcmp(key, "num-gpu-blocks")) {
        long long x; rc = units_parse_int(v, 1, 1LL << 40, &x); want = "a block count >= 1";
        if (!rc) p->num_gpu_blocks = x;
    } else if (!strcmp(key, "chunked-prefill") || !strcmp(key, "enable-chunked-prefill")) {
        rc = parse_bool(v, &p->chunked_prefill); want = "on or off";
    } else if (!strcmp(key, "gpu-mem")) { rc = parse_scaled(v, &p->gpu_mem_bytes); want = "bytes (e.g. 141GB)";
    } else if (!strcmp(key, "hbm-bw")) { rc = parse_scaled(v, &p->hbm_bytes_per_s); want = "bytes/s (e.g. 4.8TB/s)";
    } else if (!strcmp(key, "bf16-flops")) { rc = parse_scaled(v, &p->bf16_flops); want = "FLOPS (e.g. 989T)";
    } else if (!strcmp(key, "fp8-flops")) { rc = parse_scaled(v, &p->fp8_flops); want = "FLOPS (e.g. 1979T)";
    } else if (!strcmp(key, "link-bw")) { rc = parse_scaled(v, &p->link_bytes_per_s); want = "bytes/s (e.g. 900GB/s)";
    } else if (!strcmp(key, "bw-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.bw_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "compute-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.compute_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "link-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.link_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "step-overhead")) {   /* whatever the engine: the 2024 schedulers', V1's and ATOM's */
        rc = parse_seconds(v, &p->factors.step_overhead_s);
        p->factors.step_overhead_v1_s = p->factors.step_overhead_atom_s = p->factors.step_overhead_s;
        want = "a duration (e.g. 1.5ms)";
    } else if (!strcmp(key, "step-overhead-v1")) { rc = parse_seconds(v, &p->factors.step_overhead_v1_s); want = "a duration (e.g. 1.5ms)";
    } else if (!strcmp(key, "seq-overhead-v1")) { rc = parse_seconds(v, &p->factors.seq_overhead_v1_s); want = "a duration (e.g. 10us)";
    } else if (!strcmp(key, "comm-latency")) { rc = parse_seconds(v, &p->factors.comm_latency_s); want = "a duration (e.g. 10us)";
    } else if (!strcmp(key, "comm-inter-latency")) { rc = parse_seconds(v, &p->factors.comm_inter_s); want = "a duration (e.g. 120us)";
    } else if (!strcmp(key, "expert-skew")) {
        rc = units_parse_double(v, &p->factors.expert_skew); want = "a Zipf exponent >= 0 (0 = uniform)";
        if (!rc && (p->factors.expert_skew < 0 || p->factors.expert_skew > 10)) rc = -1;
    } else if (!strcmp(key, "batch-wait-iters")) {
        long long x;
        rc = units_parse_int(v, 0, 1 << 20, &x) < 0 ? -1 : 0;
        if (!rc) p->batch_wait_iters = (int)x;
        want = "steps >= 0";
    } else if (!strcmp(key, "batch-wait-max-tokens-ratio")) {
        double x;
        rc = units_parse_double(v, &x) < 0 || !(x >= 0 && x <= 1) ? -1 : 0;
        if (!rc) p->batch_wait_tokens_ratio = x;
        want = "a fraction from 0 to 1";
    } else if (!strcmp(key, "scheduler-recv-interval")) { rc = parse_posint(v, 1 << 16, &p->recv_interval_steps); want = "decode steps >= 1";
    } else if (!strcmp(key, "scheduling-policy")) {
        if (!strcmp(v, "fcfs") || !strcmp(v, "fifo")) p->priority_scheduling = false;
        else if (!strcmp(v, "priority")) p->priority_scheduling = true;
        else rc = -1;
        want = "fcfs or priority";
    } else if (!strcmp(key, "flash-attention")) {
        bool on;
        rc = parse_bool(v, &on); want = "on or off";
        if (!rc) p->factors.no_flash_attention = !on;
    } else if (!strcmp(key, "profile")) {
        return sim_params_load_profile(p, v, err, errlen);
    } else if (!strcmp(key, "engine-profile")) {
        engine_profile pr;
        if (profile_find(v, &pr) < 0) { snprintf(err, errlen, "unknown --engine-profile '%s'; known: %s", v, profile_names()); return -1; }
        set_profile(p, &pr);
    } else if (!strcmp(key, "dp") || !strcmp(key, "data-parallel-size")) { rc = parse_posint(v, 1024, &p->dp); want = "a size >= 1";
    } else if (!strcmp(key, "enable-dp-attention")) {
        bool on; rc = parse_bool(v, &on); want = "on or off";
        if (!rc) p->dp = on ? 0 : 1;   /* 0: = tp, resolved in sim_params_cost */
    } else if (!strcmp(key, "a2a")) {
        p->ov_a2a = !strcmp(v, "allreduce") ? A2A_ALLREDUCE : !strcmp(v, "allgather") ? A2A_ALLGATHER : !strcmp(v, "deepep") ? A2A_DEEPEP : -2;
        if (p->ov_a2a == -2) { p->ov_a2a = -1; rc = -1; }
        want = "allreduce, allgather or deepep";
    } else if (!strcmp(key, "two-batch-overlap")) { rc = parse_flag(v, &p->ov_tbo); want = "on or off";
    } else if (!strcmp(key, "cuda-graphs")) { rc = parse_flag(v, &p->ov_cuda_graphs); want = "on or off";
    } else if (!strcmp(key, "overlap-schedule")) { rc = parse_flag(v, &p->ov_overlap); want = "on or off";
    } else if (!strcmp(key, "mla")) { rc = parse_flag(v, &p->ov_mla); want = "on or off";
    } else if (!strcmp(key, "graph-max-batch")) { rc = parse_posint(v, 1 << 20, &p->ov_graph_max); want = "a batch >= 1";
    } else if (!strcmp(key, "eplb")) { rc = parse_flag(v, &p->eplb); want = "on or off";
    } else if (!strcmp(key, "redundant-experts")) {
        long long x; rc = units_parse_int(v, 0, 4096, &x); want = "a count >= 0";
        if (!rc) p->redundant_experts = (int)x;
    } else if (!strcmp(key, "mtp")) {
        long long x; rc = units_parse_int(v, 0, 16, &x); want = "draft tokens 0..16";
        if (!rc) p->mtp_draft = (int)x;
    } else if (!strcmp(key, "mtp-accept-len")) {
        rc = units_parse_double(v, &p->mtp_accept_len);
        want = "tokens per step >= 1, or a results file whose run measured them (spec_decode)";
        if (rc) rc = measured_accept_len(v, &p->mtp_accept_len);
        if (!rc && p->mtp_accept_len < 1) rc = -1;
    } else if (!strcmp(key, "mtp-accept")) { rc = parse_fraction(v, 0, 1, &p->factors.mtp_accept); want = "a probability in (0, 1]";
    } else if (!strcmp(key, "prefix-caching") || !strcmp(key, "enable-prefix-caching")) {
        rc = parse_bool(v, &p->prefix_caching); want = "on or off";
    } else if (!strcmp(key, "pd-prefill")) {
        int n = 0, t = 0;
        char x = 0;
        int got = sscanf(v, "%d%c%d", &n, &x, &t);
        rc = !(got == 1 || (got == 3 && (x == 'x' || x == 'X'))) || n < 1 || n > 4096 || (got == 3 && (t < 1 || t > 1024));
        want = "N or NxTP (prefill instances, GPUs each)";
        if (!rc) { p->prefill_instances = n; p->prefill_tp = got == 3 ? t : 0; }
    } else if (!strcmp(key, "seq-overhead")) {
        rc = parse_seconds(v, &p->factors.seq_overhead_s);
        p->factors.seq_overhead_v1_s = p->factors.seq_overhead_s;
        want = "a duration (e.g. 10us)";
    } else if ((lt = loop_time_of(key))) {
        rc = parse_seconds(v, (double *)((char *)&p->factors + lt->off));
        p->factors.loop_given |= lt->bit;
        want = lt->want;
    } else if (!strcmp(key, "loop-host-speed")) {
        if (p->calibrated) {
            snprintf(err, errlen, "%s", loop_host_with_profile);
            return -1;
        }
        rc = parse_fraction(v, 0, 10, &p->factors.loop_host_x);
        p->factors.loop_given |= COST_LOOP_GIVEN_HOST;
        want = "a factor in (0, 10] (1: the host the loop's constants were timed on)";
    } else if (!strcmp(key, "launch-time")) { rc = parse_seconds(v, &p->factors.launch_s); want = "a duration (e.g. 15us)";
    } else if (!strcmp(key, "request-time")) { rc = parse_seconds(v, &p->factors.request_s); want = "a duration (e.g. 150ms)";
    } else if (!strcmp(key, "request-per-token-time")) { rc = parse_seconds(v, &p->factors.request_token_s); want = "a duration (e.g. 20us)";
    } else if (!strcmp(key, "moe-native-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.moe_native_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "moe-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.moe_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "moe-floor-cdna3")) {
        rc = parse_fraction(v, -1e-9, 4, &p->factors.moe_floor_cdna3);
        want = "a fraction of the time to stream every expert once, in [0, 4]";
    } else if (!strcmp(key, "moe-fused-v1-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.moe_fused_v1_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "moe-fused-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.moe_fused_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "moe-triton-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.moe_triton_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "moe-kernel")) {
        p->ov_moe_kernel = !strcmp(v, "tuned") ? MOE_TUNED : !strcmp(v, "triton") ? MOE_TRITON : !strcmp(v, "gemv") ? MOE_GEMV
                         : !strcmp(v, "swapab") ? MOE_SWAPAB : !strcmp(v, "fused") ? MOE_FUSED
                         : !strcmp(v, "fused-v1") ? MOE_FUSED_V1 : !strcmp(v, "stream") ? MOE_STREAM : -1;
        rc = p->ov_moe_kernel < 0 ? -1 : 0;
        want = "tuned, fused, fused-v1, swapab, stream, triton or gemv";
    } else if (!strcmp(key, "attn-kernel")) {
        p->ov_attn_kernel = !strcmp(v, "flash") ? ATTN_FLASH : !strcmp(v, "triton") ? ATTN_TRITON : -1;
        rc = p->ov_attn_kernel < 0 ? -1 : 0;
        want = "flash or triton";
    } else if (!strcmp(key, "attn-dtype")) {
        if (!strcmp(v, "fp8")) p->attn_fp8 = 1;
        else if (!strcmp(v, "bf16") || !strcmp(v, "auto")) p->attn_fp8 = 0;
        else rc = -1;
        want = "bf16 or fp8";
    } else if (!strcmp(key, "seq-overhead-trt")) { rc = parse_seconds(v, &p->factors.seq_overhead_trt_s); want = "a duration (e.g. 50us)";
    } else if (!strcmp(key, "moe-triton-fp8-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.moe_triton_fp8_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "shard-loss")) {
        double x;
        rc = units_parse_double(v, &x) < 0 || !(x >= 0 && x <= 100) ? -1 : 0;
        if (!rc) p->factors.shard_loss = x;
        want = "a number from 0 to 100";
    } else if (!strcmp(key, "ggml-compute-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.ggml_compute_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "attn-triton-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.attn_triton_eff); want = "a fraction in (0, 1]";
    } else if (!strcmp(key, "attn-compute-eff")) { rc = parse_fraction(v, 0, 1, &p->factors.attn_compute_eff); want = "a fraction in (0, 1]";
    } else {
        snprintf(err, errlen, "unknown option --%s", key);
        return 1;
    }
    if (rc) {
        snprintf(err, errlen, "--%s '%s': expected %s", key, v, want ? want : "a valid value");
        return -1;
    }
    unsigned bit = given_bit(key);
    p->given |= bit;
    p->from_profile &= ~bit;
    return 0;
}

/* The factor keys of a profile file and of the results' engine.factors. */
static const struct { const char *key; size_t off; } factor_keys[] = {
    {"bw_eff", offsetof(cost_factors, bw_eff)}, {"compute_eff", offsetof(cost_factors, compute_eff)},
    {"link_eff", offsetof(cost_factors, link_eff)}, {"step_overhead_s", offsetof(cost_factors, step_overhead_s)},
    {"comm_latency_s", offsetof(cost_factors, comm_latency_s)}, {"comm_inter_s", offsetof(cost_factors, comm_inter_s)},
    {"expert_skew", offsetof(cost_factors, expert_skew)},
    {"seq_overhead_s", offsetof(cost_factors, seq_overhead_s)}, {"kernel_s", offsetof(cost_factors, kernel_s)},
    {"launch_s", offsetof(cost_factors, launch_s)}, {"moe_eff", offsetof(cost_factors, moe_eff)},
    {"moe_triton_eff", offsetof(cost_factors, moe_triton_eff)}, {"attn_compute_eff", offsetof(cost_factors, attn_compute_eff)},
    {"mtp_accept", offsetof(cost_factors, mtp_accept)}, {"moe_triton_fp8_eff", offsetof(cost_factors, moe_triton_fp8_eff)},
    {"attn_triton_eff", offsetof(cost_factors, attn_triton_eff)}, {"seq_overhead_trt_s", offsetof(cost_factors, seq_overhead_trt_s)},
    {"step_overhead_v1_s", offsetof(cost_factors, step_overhead_v1_s)}, {"seq_overhead_v1_s", offsetof(cost_factors, seq_overhead_v1_s)},
    {"step_overhead_atom_s", offsetof(cost_factors, step_overhead_atom_s)},
    {"ggml_compute_eff", offsetof(cost_factors, ggml_compute_eff)}, {"moe_native_eff", offsetof(cost_factors, moe_native_eff)},
    {"ggml_call_s", offsetof(cost_factors, ggml_call_s)}, {"shard_loss", offsetof(cost_factors, shard_loss)},
    {"ggml_gemm_s", offsetof(cost_factors, ggml_gemm_s)}, {"moe_fused_eff", offsetof(cost_factors, moe_fused_eff)},
    {"moe_fused_v1_eff", offsetof(cost_factors, moe_fused_v1_eff)}, {"moe_floor_cdna3", offsetof(cost_factors, moe_floor_cdna3)},
    {"ggml_kernel_gpu_s", offsetof(cost_factors, ggml_kernel_gpu_s)}, {"ggml_sample_s", offsetof(cost_factors, ggml_sample_s)}, {"ggml_mmq_s", offsetof(cost_factors, ggml_mmq_s)},
    {"ggml_wake_s", offsetof(cost_factors, ggml_wake_s)}, {"loop_host_x", offsetof(cost_factors, loop_host_x)},
    {"ggml_mask_s", offsetof(cost_factors, ggml_mask_s)}, {"ggml_mask_row_s", offsetof(cost_factors, ggml_mask_row_s)},
    {"request_s", offsetof(cost_factors, request_s)}, {"request_token_s", offsetof(cost_factors, request_token_s)},
    {"server_path_s", offsetof(cost_factors, server_path_s)}, {"server_path_token_s", offsetof(cost_factors, server_path_token_s)},
};

json_t *sim_params_factors_json(const cost_factors *f) {
    json_t *o = json_object();
    for (size_t i = 0; i < sizeof factor_keys / sizeof factor_keys[0]; i++)
        json_object_set_new(o, factor_keys[i].key, json_real(*(const double *)((const char *)f + factor_keys[i].off)));
    return o;
}

int sim_params_apply_factors(sim_params *p, const json_t *factors, const char *profile_name) {
    if (!json_is_object(factors)) return -1;
    cost_factors nf = p->factors;
    for (size_t i = 0; i < sizeof factor_keys / sizeof factor_keys[0]; i++) {
        json_t *v = json_object_get(factors, factor_keys[i].key);
        if (v && json_is_number(v)) *(double *)((char *)&nf + factor_keys[i].off) = json_number_value(v);
    }
    if (nf.bw_eff <= 0 || nf.bw_eff > 1 || nf.compute_eff <= 0 || nf.compute_eff > 1 || nf.step_overhead_s < 0 ||
        nf.step_overhead_v1_s < 0 || nf.seq_overhead_v1_s < 0 ||
        nf.moe_eff <= 0 || nf.moe_eff > 1 || nf.moe_native_eff <= 0 || nf.moe_native_eff > 1)
        return -1;
    engine_profile pr;
    if (profile_name && profile_find(profile_name, &pr) == 0) set_profile(p, &pr);
    p->factors = nf;
    return 0;
}

/* A profile's setup: the deployment it was calibrated on (model, GPU, layout, dtypes, and the
 * server's own running-sequence cap and KV capacity where the calibrated run measured them), in p
 * for every key no flag has set. The factors hold only for that deployment, so `sim --profile P`
 * predicts it unless told otherwise; a flag varies one setting of it. */
static int apply_setup(sim_params *p, const json_t *setup, const char *path, char *err, size_t errlen) {
    static const struct { const char *json, *key; unsigned bit; } m[] = {
        {"model", "model", SIM_GIVEN_MODEL}, {"gpu", "gpu", SIM_GIVEN_GPU}, {"tp", "tp", SIM_GIVEN_TP}, {"ep", "ep", SIM_GIVEN_EP},
        {"dp", "dp", SIM_GIVEN_DP}, {"weight_dtype", "weight-dtype", SIM_GIVEN_WDTYPE}, {"kv_dtype", "kv-dtype", SIM_GIVEN_KVDTYPE},
        {"flash_attention", "flash-attention", SIM_GIVEN_FA}, {"max_num_seqs", "max-num-seqs", SIM_GIVEN_SEQS},
        {"kv_capacity_tokens", "num-gpu-blocks", SIM_GIVEN_BLOCKS},
    };
    unsigned given = p->given;
    bool seqs_set = p->max_num_seqs_set;
    /* an architecture written whole (the calibrated run's own, e.g. a GGUF's) stands for the model */
    json_t *arch = json_object_get(setup, "architecture");
    if (json_is_object(arch) && !(given & SIM_GIVEN_MODEL)) {
        char why[256];
        if (sim_params_set_arch(p, arch, "setup.architecture", json_string_value(json_object_get(setup, "model")) ?: "profile", why,
                                sizeof why) < 0) {
            snprintf(err, errlen, "profile %s: %s", path, why);
            return -1;
        }
        p->from_profile |= SIM_GIVEN_MODEL;
    }
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++) {
        json_t *v = json_object_get(setup, m[i].json);
        if (m[i].bit == SIM_GIVEN_MODEL && p->arch_set && (p->from_profile & SIM_GIVEN_MODEL)) continue;
        if (!v || (given & m[i].bit)) continue;
        char val[600];
        const char *key = m[i].key;
        if (json_is_string(v)) {
            snprintf(val, sizeof val, "%s", json_string_value(v));
            /* a catalog model by name, else the config.json the calibration read */
            if (!strcmp(key, "model") && !model_find(val)) key = "model-config";
        } else if (json_is_boolean(v)) {
            snprintf(val, sizeof val, "%s", json_is_true(v) ? "on" : "off");
        } else if (json_is_number(v) && !strcmp(key, "num-gpu-blocks")) {
            snprintf(val, sizeof val, "%.0f", ceil(json_number_value(v) / (p->block_size > 0 ? p->block_size : 16)));
        } else if (json_is_integer(v) && !strcmp(key, "dp") && json_integer_value(v) == 0) {
            key = "enable-dp-attention";   /* dp 0: one rank per GPU */
            snprintf(val, sizeof val, "on");
        } else if (json_is_integer(v)) {
            snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
        } else {
            continue;
        }
        char why[512];
        if (sim_params_set(p, key, val, why, sizeof why) != 0) {
            snprintf(err, errlen, "profile %s: setup %s: %s", path, m[i].json, why);
            p->given = given;
            p->max_num_seqs_set = seqs_set;
            return -1;
        }
        p->from_profile |= m[i].bit;
    }
    p->given = given;   /* what the profile filled in stays open to a later flag */
    p->max_num_seqs_set = seqs_set;
    return 0;
}

int sim_params_load_profile(sim_params *p, const char *path, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) {
        snprintf(err, errlen, "cannot read profile %s: %s", path, je.text);
        return -1;
    }
    json_t *f = json_object_get(root, "factors");
    if (!json_is_object(f)) {
        snprintf(err, errlen, "profile %s: no \"factors\" object (write one with dsperf sim --calibrate)", path);
        json_decref(root);
        return -1;
    }
    json_t *setup = json_object_get(root, "setup");
    const char *prof = json_string_value(json_object_get(setup, "engine_profile"));
    if (p->factors.loop_given & COST_LOOP_GIVEN_HOST) {
        snprintf(err, errlen, "%s", loop_host_with_profile);
        json_decref(root);
        return -1;
    }
    int rc = sim_params_apply_factors(p, f, p->given & SIM_GIVEN_PROFILE ? NULL : prof);
    /* a profile written before loop_host_x was: its loop constants are its calibration's */
    if (rc == 0 && !json_object_get(f, "loop_host_x")) p->factors.loop_host_x = 0;
    if (rc < 0) snprintf(err, errlen, "profile %s: factors out of range", path);
    else rc = apply_setup(p, setup, path, err, errlen);
    json_decref(root);
    if (rc < 0) return -1;
    p->calibrated = 1;
    return 0;
}

void sim_params_add_request_path(const sim_params *p, int64_t *fixed_ns, double *per_token_ns) {
    engine_profile prof;
    if (sim_params_profile(p, &prof) < 0) return;
    double fixed_s, token_s;
    if (prof.ggml) {
        /* llama-server's own way: its HTTP, tokenization and the slot's launch */
        fixed_s = p->factors.server_path_s;
        token_s = p->factors.server_path_token_s;
    } else if (prof.python) {
        fixed_s = p->factors.request_s;
        token_s = p->factors.request_token_s;
    } else {
        return;
    }
    *fixed_ns += (int64_t)llround(fixed_s * 1e9);
    *per_token_ns += token_s * 1e9;
}

int sim_params_loop_host_note(const sim_params *p, char *buf, size_t len) {
    engine_profile prof;
    cost_factors used = p->factors;
    if (len) buf[0] = 0;
    if (sim_params_profile(p, &prof) < 0 || !cost_apply_loop_prior(&used, prof.expert_loop)) return 0;
    snprintf(buf, len, "x %.2f of the host its loop was timed on (%s; a run of yours calibrates it: dsperf sim --calibrate)",
             p->factors.loop_host_x, p->factors.loop_given & COST_LOOP_GIVEN_HOST ? "--loop-host-speed" : "the median recorded host");
    return 1;
}

int sim_params_batch_tokens(const sim_params *p) {
    engine_profile prof;
    if (p->max_num_batched_tokens_set || sim_params_profile(p, &prof) < 0 || prof.batch_tokens <= 0) return p->max_num_batched_tokens;
    return prof.batch_tokens;
}

int sim_params_profile(const sim_params *p, engine_profile *out) {
    if (profile_find(p->engine_profile, out) < 0) return -1;
    if (p->ov_cuda_graphs >= 0) out->cuda_graphs = p->ov_cuda_graphs;
    if (p->ov_graph_max >= 0) out->graph_max_batch = p->ov_graph_max;
    if (p->ov_overlap >= 0) out->overlap_schedule = p->ov_overlap;
    if (p->ov_mla >= 0) out->mla_absorbed = p->ov_mla;
    if (p->ov_tbo >= 0) out->two_batch_overlap = p->ov_tbo;
    if (p->ov_a2a >= 0) out->a2a = p->ov_a2a;
    if (p->ov_prefill_mode >= 0) out->prefill_mode = p->ov_prefill_mode;
    if (p->ov_admit_reserve >= 0) out->admit_reserve = p->ov_admit_reserve;
    if (p->ov_moe_kernel >= 0) out->moe_kernel = p->ov_moe_kernel;
    if (p->ov_attn_kernel >= 0) out->attn_kernel = p->ov_attn_kernel;
    if (p->ov_ubatch >= 0) out->ubatch = p->ov_ubatch;
    if (out->mla_absorbed == 0 && out->kv_head_dim == 0) out->kv_head_dim = 192;
    return 0;
}

void sim_params_prefill_side(const sim_params *p, sim_params *out) {
    *out = *p;
    out->tp = p->prefill_tp > 0 ? p->prefill_tp : p->tp;
    out->dp = p->prefill_dp > 0 ? p->prefill_dp : 1;
    out->ep = p->prefill_ep > 0 ? p->prefill_ep : (p->ep > out->tp ? out->tp : p->ep);
    if (out->tp % out->ep) out->ep = 1;
    out->mtp_draft = 0;
    out->prefill_instances = 0;
    out->n_gpus = 0;
}

int sim_params_cost(const sim_params *p, cost_model *c, char *err, size_t errlen) {
    model_arch arch;
    if (p->arch_set) {
        arch = p->arch;
    } else if (p->model_config[0]) {
        if (model_load_hf_config(p->model_config, &arch, err, errlen) < 0) return -1;
    } else {
        const model_arch *m = model_find(p->model);
        if (!m) {
            snprintf(err, errlen, "unknown model '%s'; see 'dsperf plan --list'", p->model);
            return -1;
        }
        arch = *m;
    }
    const hw_gpu *g0 = hw_find(p->gpu);
    if (!g0) {
        snprintf(err, errlen, "unknown GPU '%s'; see 'dsperf plan --list'", p->gpu);
        return -1;
    }
    hw_gpu g = *g0;
    if (p->gpu_mem_bytes > 0) g.mem_bytes = p->gpu_mem_bytes;
    if (p->hbm_bytes_per_s > 0) g.hbm_bytes_per_s = p->hbm_bytes_per_s;
    if (p->bf16_flops > 0) g.bf16_flops = p->bf16_flops;
    if (p->fp8_flops > 0) g.fp8_flops = p->fp8_flops;
    if (p->link_bytes_per_s > 0) g.link_bytes_per_s = p->link_bytes_per_s;
    model_dtype wd, kd;
    if (model_dtype_parse(p->weight_dtype, arch.native_dtype, &wd) < 0 || model_dtype_parse(p->kv_dtype, DT_BF16, &kd) < 0) {
        snprintf(err, errlen, "bad dtype (weights '%s', KV '%s')", p->weight_dtype, p->kv_dtype);
        return -1;
    }
    if (p->n_gpus > 0 && p->n_gpus % p->tp) {
        snprintf(err, errlen, "--gpus %d is not a multiple of --tp %d", p->n_gpus, p->tp);
        return -1;
    }
    cost_setup s;
    memset(&s, 0, sizeof s);
    if (sim_params_profile(p, &s.prof) < 0) {
        snprintf(err, errlen, "unknown engine profile '%s'; known: %s", p->engine_profile, profile_names());
        return -1;
    }
    s.tp = p->tp;
    s.ep = p->ep;
    s.dp = p->dp == 0 ? p->tp : p->dp;
    s.mtp_draft = p->mtp_draft;
    s.mtp_accept_len = p->mtp_accept_len;
    s.redundant_experts = p->redundant_experts;
    s.eplb = p->eplb;
    s.kv_flashmla_fp8 = p->kv_flashmla_fp8;
    s.attn_fp8 = p->attn_fp8;
    if (s.dp > 1 && s.prof.a2a == A2A_ALLREDUCE) s.prof.a2a = A2A_ALLGATHER;
    return cost_init(c, &arch, &g, &s, wd, kd, &p->factors, err, errlen);
}

long long sim_params_kv_blocks(const sim_params *p, const cost_model *c) {
    if (p->num_gpu_blocks > 0) return p->num_gpu_blocks;
    double avail = c->gpu.mem_bytes * p->gpu_memory_utilization - c->weight_bytes_per_gpu - p->reserved_bytes;
    if (avail <= 0) return 0;
    /* every attention DP rank holds the KV of its own sequences */
    return (long long)floor(avail / (p->block_size * c->kv_bytes_per_token)) * c->dp;
}

int sim_params_set_arch(sim_params *p, const json_t *hf, const char *what, const char *name, char *err, size_t errlen) {
    model_arch a;
    if (model_arch_from_hf_json(hf, what, name, &a, err, errlen) < 0) return -1;
    p->arch = a;
    p->arch_set = true;
    return 0;
}

const char *sim_params_model_name(const sim_params *p) {
    return p->arch_set ? p->arch.name : p->model_config[0] ? p->model_config : p->model;
}
