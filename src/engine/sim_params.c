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

void sim_default_params(sim_params *p) {
    memset(p, 0, sizeof *p);
    snprintf(p->model, sizeof p->model, "deepseek-v2-lite");
    snprintf(p->gpu, sizeof p->gpu, "h200");
    p->tp = 1;
    p->ep = 1;
    snprintf(p->weight_dtype, sizeof p->weight_dtype, "auto");
    snprintf(p->kv_dtype, sizeof p->kv_dtype, "auto");
    p->max_num_seqs = 256;
    p->max_num_batched_tokens = 8192;
    p->block_size = 16;
    p->gpu_memory_utilization = 0.9;
    p->reserved_bytes = 2.0 * 1073741824.0;
    p->chunked_prefill = true;
    cost_default_factors(&p->factors);
}

static const char help[] =
    "  --model NAME               deepseek-v3 (= r1), deepseek-v2, deepseek-v2-lite, deepseek-llm-7b,\n"
    "                             deepseek-llm-67b (default deepseek-v2-lite)\n"
    "  --model-config FILE        a Hugging Face config.json instead of the catalog\n"
    "  --gpu NAME                 a100-80g, h100, h200, h20, l40s, mi300x (default h200)\n"
    "  --gpus N                   GPUs in total (default = --tp)\n"
    "  --tp N, --ep N             tensor parallel size; expert parallel size (1 or = tp)\n"
    "  --weight-dtype D           auto (as released: fp8 for V3), bf16, fp16, fp8, int8, int4\n"
    "  --kv-dtype D               auto (bf16), bf16, fp16, fp8, int8\n"
    "  --max-num-seqs N           running sequences per step (256)\n"
    "  --max-num-batched-tokens N tokens per step (8192)\n"
    "  --block-size N             tokens per KV block (16)\n"
    "  --max-model-len N          longest prompt + output (model's maximum)\n"
    "  --gpu-memory-utilization F fraction of GPU memory for weights + KV (0.9)\n"
    "  --reserved-mem BYTES       per GPU for activations, CUDA graphs, NCCL (2GiB)\n"
    "  --num-gpu-blocks N         KV blocks, overriding the memory computation\n"
    "  --chunked-prefill on|off   (on)\n"
    "  --scheduling-policy P      fcfs (default) or priority (request priority, lower first; the lowest\n"
    "                             is preempted first)\n"
    "  --gpu-mem B, --hbm-bw B/s, --bf16-flops F, --fp8-flops F, --link-bw B/s\n"
    "                             override the GPU catalog (e.g. --hbm-bw 4.8TB/s --bf16-flops 989T)\n"
    "  --bw-eff F, --compute-eff F, --link-eff F   achievable fractions of peak (0.85, 0.6, 0.7)\n"
    "  --step-overhead DUR        fixed time per engine step (1.5ms)\n"
    "  --comm-latency DUR         per all-reduce / all-to-all (10us)\n"
    "  --expert-skew S            Zipf exponent of expert popularity (0 = uniform routing)\n"
    "  --flash-attention on|off   off: attention scores go through HBM (eager attention) (on)\n"
    "  --profile FILE             efficiency factors from `dsperf sim --calibrate`\n";

const char *sim_params_help(void) { return help; }

static const char *const keys[] = {
    "model", "model-config", "gpu", "gpus", "tp", "tensor-parallel-size", "ep", "expert-parallel-size",
    "weight-dtype", "dtype", "kv-dtype", "kv-cache-dtype", "max-num-seqs", "max-num-batched-tokens", "block-size",
    "max-model-len", "gpu-memory-utilization", "reserved-mem", "num-gpu-blocks", "chunked-prefill",
    "enable-chunked-prefill", "gpu-mem", "hbm-bw", "bf16-flops", "fp8-flops", "link-bw", "bw-eff", "compute-eff",
    "link-eff", "step-overhead", "comm-latency", "expert-skew", "flash-attention", "scheduling-policy", "profile", NULL,
};

const char *const *sim_params_keys(void) { return keys; }

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

static int parse_seconds(const char *v, double *out) {
    int64_t ns;
    if (units_parse_duration_ns(v, &ns) < 0) return -1;
    *out = ns / 1e9;
    return 0;
}

int sim_params_set(sim_params *p, const char *key, const char *value, char *err, size_t errlen) {
    const char *v = value ? value : "";
    int rc = 0;
    const char *want = NULL;
    model_dtype d;
    if (!strcmp(key, "model")) {
        if (!model_find(v)) { snprintf(err, errlen, "unknown model '%s'; see 'dsperf plan --list' or use --model-config config.json", v); return -1; }
        snprintf(p->model, sizeof p->model, "%s", v);
        p->model_config[0] = 0;
    } else if (!strcmp(key, "model-config")) {
        if (!*v) { snprintf(err, errlen, "--model-config needs a config.json path"); return -1; }
        snprintf(p->model_config, sizeof p->model_config, "%s", v);
    } else if (!strcmp(key, "gpu")) {
        if (!hw_find(v)) { snprintf(err, errlen, "unknown GPU '%s'; known: a100-80g, h100, h200, h20, l40s, mi300x", v); return -1; }
        snprintf(p->gpu, sizeof p->gpu, "%s", v);
    } else if (!strcmp(key, "gpus")) { rc = parse_posint(v, 4096, &p->n_gpus); want = "a GPU count >= 1";
    } else if (!strcmp(key, "tp") || !strcmp(key, "tensor-parallel-size")) { rc = parse_posint(v, 1024, &p->tp); want = "a size >= 1";
    } else if (!strcmp(key, "ep") || !strcmp(key, "expert-parallel-size")) { rc = parse_posint(v, 1024, &p->ep); want = "a size >= 1";
    } else if (!strcmp(key, "weight-dtype") || !strcmp(key, "dtype")) {
        rc = model_dtype_parse(v, DT_BF16, &d); want = "auto, bf16, fp16, fp8, int8 or int4";
        if (!rc) snprintf(p->weight_dtype, sizeof p->weight_dtype, "%s", v);
    } else if (!strcmp(key, "kv-dtype") || !strcmp(key, "kv-cache-dtype")) {
        rc = model_dtype_parse(v, DT_BF16, &d); want = "auto, bf16, fp16, fp8 or int8";
        if (!rc && d == DT_INT4) rc = -1;
        if (!rc) snprintf(p->kv_dtype, sizeof p->kv_dtype, "%s", v);
    } else if (!strcmp(key, "max-num-seqs")) { rc = parse_posint(v, 1 << 20, &p->max_num_seqs); want = "a count >= 1";
    } else if (!strcmp(key, "max-num-batched-tokens")) { rc = parse_posint(v, 1 << 24, &p->max_num_batched_tokens); want = "a count >= 1";
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
    } else if (!strcmp(key, "step-overhead")) { rc = parse_seconds(v, &p->factors.step_overhead_s); want = "a duration (e.g. 1.5ms)";
    } else if (!strcmp(key, "comm-latency")) { rc = parse_seconds(v, &p->factors.comm_latency_s); want = "a duration (e.g. 10us)";
    } else if (!strcmp(key, "expert-skew")) {
        rc = units_parse_double(v, &p->factors.expert_skew); want = "a Zipf exponent >= 0 (0 = uniform)";
        if (!rc && (p->factors.expert_skew < 0 || p->factors.expert_skew > 10)) rc = -1;
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
    } else {
        snprintf(err, errlen, "unknown option --%s", key);
        return 1;
    }
    if (rc) {
        snprintf(err, errlen, "--%s '%s': expected %s", key, v, want ? want : "a valid value");
        return -1;
    }
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
    static const struct { const char *key; size_t off; } keys[] = {
        {"bw_eff", offsetof(cost_factors, bw_eff)}, {"compute_eff", offsetof(cost_factors, compute_eff)},
        {"link_eff", offsetof(cost_factors, link_eff)}, {"step_overhead_s", offsetof(cost_factors, step_overhead_s)},
        {"comm_latency_s", offsetof(cost_factors, comm_latency_s)}, {"expert_skew", offsetof(cost_factors, expert_skew)},
    };
    cost_factors nf = p->factors;
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(f, keys[i].key);
        if (v && json_is_number(v)) *(double *)((char *)&nf + keys[i].off) = json_number_value(v);
    }
    json_decref(root);
    if (nf.bw_eff <= 0 || nf.bw_eff > 1 || nf.compute_eff <= 0 || nf.compute_eff > 1 || nf.step_overhead_s < 0) {
        snprintf(err, errlen, "profile %s: factors out of range", path);
        return -1;
    }
    p->factors = nf;
    return 0;
}

int sim_params_cost(const sim_params *p, cost_model *c, char *err, size_t errlen) {
    model_arch arch;
    if (p->model_config[0]) {
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
    return cost_init(c, &arch, &g, p->tp, p->ep, wd, kd, &p->factors, err, errlen);
}

long long sim_params_kv_blocks(const sim_params *p, const cost_model *c) {
    if (p->num_gpu_blocks > 0) return p->num_gpu_blocks;
    double avail = c->gpu.mem_bytes * p->gpu_memory_utilization - c->weight_bytes_per_gpu - p->reserved_bytes;
    if (avail <= 0) return 0;
    return (long long)floor(avail / (p->block_size * c->kv_bytes_per_token));
}
