/* diagnose_longctx — the rules long contexts need, measured from the run's own telemetry:
 *  - bandwidth_ceiling: the GPU's DRAM bandwidth (GPM) sustained at DIAG_DRAM_SUSTAINED_PCT or
 *    more for longer than DIAG_DRAM_SUSTAINED_S: how long, when, and at which context (each decode
 *    step reads every running sequence's whole KV, so long contexts meet the HBM ceiling first);
 *  - kv_share: the KV cache holds less than DIAG_KV_SHARE of the memory the engine's settings give
 *    it (GPU memory x gpu_memory_utilization - weights): the capacity the server reported (vLLM's
 *    cache_config_info on /metrics, SGLang's max_total_num_tokens) or the simulator's accounting,
 *    against the cost model's weights and KV bytes per token.
 * PCIe traffic against the link's capacity is the host_pcie rule (diagnose_rules.c), which reads
 * diag_pcie_link_mb_s from here. Thresholds: diagnose_int.h. */
#include "diagnose/diagnose_int.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

/* The context a decoding sequence reads: mean prompt + half the mean output (as the roofline). */
static double context_of(const diag_in *in) {
    if (isfinite(in->roof_context) && in->roof_context > 0) return in->roof_context;
    double done = diag_num(in->doc, "completed");
    if (!(done > 0)) return NAN;
    return (diag_num(in->doc, "total_input_tokens") + diag_num(in->doc, "total_output_tokens") / 2) / done;
}

/* Longest stretch of a GPU's DRAM bandwidth at or above the threshold: seconds and where. */
typedef struct { double s, t0, t1, mean; int gpu; } dram_run;

static dram_run longest_high(const json_t *gpus) {
    dram_run best = { 0, NAN, NAN, NAN, -1 };
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        const json_t *s = get(g, "series"), *t = get(s, "t_s"), *v = get(s, "dram_bw_util_pct");
        size_t n = json_array_size(v) < json_array_size(t) ? json_array_size(v) : json_array_size(t);
        double start = NAN, sum = 0;
        size_t cnt = 0;
        for (size_t k = 0; k <= n; k++) {
            const json_t *x = k < n ? json_array_get(v, k) : NULL;
            double ts = k < n ? json_number_value(json_array_get(t, k)) : NAN;
            if (x && json_is_number(x) && json_number_value(x) >= DIAG_DRAM_SUSTAINED_PCT) {
                if (isnan(start)) { start = ts; sum = 0; cnt = 0; }
                sum += json_number_value(x);
                cnt++;
                if (ts - start > best.s) best = (dram_run){ ts - start, start, ts, sum / cnt, (int)i };
            } else if (!x || json_is_number(x)) {
                start = NAN;     /* a null (no GPM sample yet) neither breaks nor extends a run */
            }
        }
    }
    return best;
}

static void rule_bandwidth_ceiling(diag_in *in, json_t *L, json_t *C) {
    const json_t *gpus = get(in->tel, "gpu");
    bool have = false;
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) if (get(get(g, "series"), "dram_bw_util_pct")) have = true;
    if (!have) { diag_checked(C, "bandwidth_ceiling", false, "no GPM DRAM bandwidth in the GPU telemetry (Hopper or newer, --gpu-ids)"); return; }
    diag_checked(C, "bandwidth_ceiling", true, "telemetry.gpu[].series.dram_bw_util_pct (GPM)");
    dram_run r = longest_high(gpus);
    if (!(r.s > DIAG_DRAM_SUSTAINED_S)) return;
    double ctx = context_of(in);
    json_t *f = diag_finding(L, "bandwidth_ceiling", 0.85, "HBM bandwidth at its ceiling: DRAM bandwidth >= %.0f%% for "
                             "%.0f s on GPU %d%s", DIAG_DRAM_SUSTAINED_PCT, r.s, r.gpu, isfinite(ctx) ? " at long context" : "");
    diag_window(f, r.t0, r.t1);
    diag_ev(f, r.s, "s", "telemetry.gpu[].series.dram_bw_util_pct", "%.1f s from t=%.1f s to %.1f s at or above %.0f%% "
            "(mean %.1f%%), beyond the %.0f s that counts as sustained", r.s, r.t0, r.t1, DIAG_DRAM_SUSTAINED_PCT, r.mean,
            DIAG_DRAM_SUSTAINED_S);
    if (isfinite(ctx))
        diag_ev(f, ctx, "tokens", "results: mean prompt + half the mean output", "at a decode context of %.0f tokens "
                "(each step reads every running sequence's whole KV cache)", ctx);
    /* what share of a decode step is the KV read: what a smaller KV dtype or shorter context buys */
    cost_model c;
    char err[128];
    double kv_share = NAN;
    if (isfinite(ctx) && in->roof_batch >= 1 && deploy_cost(&in->dep, NULL, &c, err, sizeof err) == 0) {
        cost_batch b;
        cost_step s;
        cost_decode_batch((int64_t)llround(in->roof_batch), ctx, &b);
        cost_step_time(&c, &b, &s);
        kv_share = s.bytes > 0 ? s.kv_bytes / s.bytes : NAN;
        cost_free(&c);
        diag_ev(f, 100 * kv_share, "%", "roofline (cost model): KV bytes / bytes per decode step", "the KV cache is %.0f%% of "
                "the bytes a decode step reads at batch %.1f (%s KV)", 100 * kv_share, in->roof_batch,
                model_dtype_name(in->dep.kv_dtype));
    }
    if (isfinite(kv_share)) diag_cost(f, kv_share / 2, "of each decode step's time: half the KV read, what 1-byte KV saves");
    else diag_cost(f, DIAG_COST_UNKNOWN, "not sized (no roofline for this deployment)");
    diag_setting(in, f, "kv_cache_dtype", model_dtype_name(in->dep.kv_dtype), "fp8",
                 "half the bytes per KV token: every decode step reads half as much");
    char cur[16];
    snprintf(cur, sizeof cur, "%d", in->dep.max_num_seqs);
    diag_setting(in, f, "max_num_seqs", in->dep.max_num_seqs > 0 ? cur : NULL, "lower",
                 "fewer sequences' KV per step: lower TPOT at long context, at the cost of throughput");
    diag_knob(f, "tensor parallel / more GPUs", "add bandwidth", "MLA's latent KV is replicated per TP rank, so TP splits "
              "weights but not the KV read; data parallel splits the sequences");
}

/* The per-direction capacity of the first GPU's PCIe link as NVML reported it; NAN unknown. */
double diag_pcie_link_mb_s(const diag_in *in, int *gen, int *width) {
    const json_t *p = get(json_array_get(get(in->tel, "gpu"), 0), "pcie");
    *gen = (int)json_integer_value(get(p, "gen_max"));
    *width = (int)json_integer_value(get(p, "width_max"));
    return diag_num(p, "link_mb_s_per_direction");
}

static void rule_kv_share(diag_in *in, json_t *L, json_t *C) {
    deploy *d = &in->dep;
    if (!(d->kv_capacity_tokens > 0)) {
        diag_checked(C, "kv_share", false, "the KV capacity is unknown (vLLM /metrics cache_config_info via --server-metrics, "
                     "SGLang max_total_num_tokens, or a simulated run)");
        return;
    }
    if (d->kv_capacity_set) {
        diag_checked(C, "kv_share", false, "the KV cache is sized by a setting (num_gpu_blocks override), not by memory");
        return;
    }
    cost_model c;
    char err[128];
    if (deploy_cost(d, NULL, &c, err, sizeof err) < 0) {
        diag_checked(C, "kv_share", false, "the model or GPU is unknown: no weights or KV bytes per token to compare with");
        return;
    }
    double mem = c.gpu.mem_bytes, weights = c.weight_bytes_per_gpu, kvb = c.kv_bytes_per_token;
    cost_free(&c);
    bool util_known = d->gpu_memory_utilization > 0;
    double util = util_known ? d->gpu_memory_utilization : 0.9;
    double meant = mem * util - weights, got = d->kv_capacity_tokens * kvb;
    diag_checked(C, "kv_share", true, "deployment.kv_capacity_tokens x KV bytes per token vs GPU memory x "
                 "gpu_memory_utilization - weights (cost model)");
    if (!(meant > 0)) return;    /* the weights do not fit: the physics check says so */
    double share = got / meant;
    if (share >= DIAG_KV_SHARE) return;
    json_t *f = diag_finding(L, "kv_share", util_known ? 0.8 : 0.6, "the KV cache got %.0f%% of the memory the settings "
                             "give it: something else holds %.1f GiB per GPU", 100 * share, (meant - got) / 1073741824.0);
    diag_ev(f, d->kv_capacity_tokens, "tokens", d->kv_capacity_tokens_s.src, "KV capacity %.0f tokens x %.0f bytes = %.1f GiB "
            "per GPU", d->kv_capacity_tokens, kvb, got / 1073741824.0);
    diag_ev(f, meant / 1073741824.0, "GiB", util_known ? d->gpu_memory_utilization_s.src : "assumed: vLLM's default 0.9",
            "%.0f GiB x gpu_memory_utilization %.2f - %.1f GiB of weights (cost model) = %.1f GiB meant for KV",
            mem / 1073741824.0, util, weights / 1073741824.0, meant / 1073741824.0);
    double kv_max = diag_max(get(get(get(in->tel, "server"), "series"), "kv_usage_pct"));
    bool limited = kv_max >= 100 * DIAG_KV_FULL || diag_num(in->engine, "preemptions_total") > 0;
    diag_cost(f, (1 - share) * (limited ? 1 : 0.2), limited ? "of the KV capacity lost while the cache was full"
              : "of the KV capacity lost (the cache never filled here: it costs at longer contexts or higher load)");
    char cur[16], sug[16];
    snprintf(cur, sizeof cur, "%.2f", util);
    snprintf(sug, sizeof sug, "%.2f", util + 0.05 > 0.98 ? 0.98 : util + 0.05);
    diag_setting(in, f, "gpu_memory_utilization", util_known ? cur : NULL, sug, "more of the GPU for the cache");
    snprintf(cur, sizeof cur, "%d", d->max_num_batched_tokens);
    diag_setting(in, f, "max_num_batched_tokens", d->max_num_batched_tokens > 0 ? cur : NULL, "lower",
                 "activations are sized for the largest step: a smaller token budget frees memory for KV");
    diag_knob(f, "CUDA graph capture sizes / other processes on the GPU", "check", "graph memory and other processes "
              "(nvidia-smi) come out of the cache's share");
}

void diag_longctx_rules(diag_in *in, json_t *list, json_t *checked) {
    rule_bandwidth_ceiling(in, list, checked);
    rule_kv_share(in, list, checked);
}
