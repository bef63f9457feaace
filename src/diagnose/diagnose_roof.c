/* diagnose_roof — decode against physics. The roofline of the resolved deployment at this run's
 * batch and context (the cost model's bytes per decode step over the GPU's HBM bandwidth, no
 * efficiency factor); a run faster than that is impossible, so the assumed deployment is wrong and
 * a configuration finding names the assumptions and which change makes the numbers possible. Then
 * the two rules that read the roofline: decode bandwidth bound (near it) and engine overhead (far
 * below it while the GPU's pipes idle). */
#include "diagnose/diagnose_int.h"
#include "metrics/metric_table.h"
#include "engine/sim.h"
#include "engine/profile.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }
static const json_t *srv_series(const diag_in *in) { return get(get(in->tel, "server"), "series"); }

/* The decoding batch: the engine's own count, else the server's, else Little's law over the
 * decode phase (request rate x mean time spent decoding). */
static double decode_batch(const diag_in *in, const char **src) {
    double b = NAN;
    if (in->eng_series) {
        double s = 0;
        size_t n = 0, i;
        json_t *v;
        json_array_foreach(get(in->eng_series, "running"), i, v) if (json_number_value(v) > 0) { s += json_number_value(v); n++; }
        if (n) { b = s / n; *src = "engine.series.running (mean while busy)"; }
    }
    if (!isfinite(b) && srv_series(in)) {
        b = diag_mean(get(srv_series(in), "running"));
        if (isfinite(b)) *src = "telemetry.server.series.running (mean)";
    }
    if (!isfinite(b) || b < 1) {
        double rt = diag_num(in->doc, METRIC(request_throughput));
        b = rt * (diag_num(in->doc, METRIC(mean_e2el_ms)) - diag_num(in->doc, METRIC(mean_ttft_ms))) / 1000.0;
        *src = "Little's law: request_throughput x (mean_e2el_ms - mean_ttft_ms)";
    }
    return b >= 1 ? b : 1;
}

typedef struct {
    double bound, mem_ms, decode_ms, comm_share, prefill_ms;
    double weight_ms, kv_ms, compute_ms, prefill_compute_ms;   /* at the physical peaks, no efficiency factor */
    int mem_bound, prefill_compute;
} roof;

/* The tensor peak the weights run at: fp8 tensor cores for 1-byte weights where the GPU has them. */
static double tensor_peak(const cost_model *c) {
    if (model_dtype_bytes(c->weight_dtype) <= 1 && c->gpu.fp8_flops > 0) return c->gpu.fp8_flops;
    return c->gpu.bf16_flops;
}

static int roof_at(const deploy *d, const cost_factors *f, double b, double ctx, int prompt, roof *r, char *err, size_t errlen) {
    cost_model c;
    if (deploy_cost(d, f, &c, err, errlen) < 0) return -1;
    long long B = llround(b);
    cost_batch cb;
    cost_step s, p;
    cost_decode_batch(B < 1 ? 1 : B, ctx, &cb);
    cost_step_time(&c, &cb, &s);
    cost_prefill_batch(prompt, &cb);
    cost_step_time(&c, &cb, &p);
    double hbm = c.gpu.hbm_bytes_per_s;
    r->bound = b * hbm / s.bytes;           /* tokens per second when every byte streams at peak */
    r->mem_ms = s.bytes / hbm * 1e3;
    r->decode_ms = s.t * 1e3;
    r->comm_share = s.t > 0 ? s.t_comm / s.t : 0;
    r->mem_bound = s.bound == COST_BOUND_MEMORY;
    r->prefill_ms = p.t * 1e3;
    r->prefill_compute = p.bound == COST_BOUND_COMPUTE;
    double peak = tensor_peak(&c);
    r->weight_ms = s.weight_bytes / hbm * 1e3;
    r->kv_ms = s.kv_bytes / hbm * 1e3;
    r->compute_ms = peak > 0 ? s.flops / peak * 1e3 : NAN;
    r->prefill_compute_ms = peak > 0 ? p.flops / peak * 1e3 : NAN;
    cost_free(&c);
    return 0;
}

/* Which single change of the assumed deployment would make the measured rate possible. */
static void physics_alternatives(diag_in *in, json_t *f, int prompt) {
    char line[400] = "", part[64];
    int fit_tp = 0;
    for (int t = in->dep.tp * 2; t <= 16; t *= 2) {
        deploy d = in->dep;
        d.tp = t;
        roof r;
        char err[128];
        if (roof_at(&d, in->roof_factors, in->roof_batch, in->roof_context, prompt, &r, err, sizeof err) < 0) continue;
        double eff = in->roof_achieved / r.bound;
        snprintf(part, sizeof part, "%stp %d: %.0f%%", line[0] ? ", " : "", t, 100 * eff);
        strncat(line, part, sizeof line - strlen(line) - 1);
        if (!fit_tp && eff <= 1) fit_tp = t;
    }
    if (line[0]) diag_ev(f, NAN, NULL, "roofline (cost model) at other tensor-parallel sizes", "the same run would be at %s of "
                         "the roofline", line);
    char cur[32], sug[48], dir[160];
    snprintf(cur, sizeof cur, "%d", in->dep.tp);
    if (fit_tp) {
        snprintf(sug, sizeof sug, "%d or more", fit_tp);
        snprintf(dir, sizeof dir, "%s \xe2\x86\x92 %s: give the real tensor-parallel size", cur, sug);
        json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s,s:s,s:s}", "knob", "--tp", "current", cur,
            "suggested", sug, "direction", dir,
            "effect", "a tp that makes the measured rate physically possible; then the roofline means something"));
    }
    if (model_dtype_bytes(in->dep.weight_dtype) > 1) {
        deploy d = in->dep;
        d.weight_dtype = DT_FP8;
        roof r;
        char err[128];
        if (roof_at(&d, in->roof_factors, in->roof_batch, in->roof_context, prompt, &r, err, sizeof err) == 0) {
            diag_ev(f, 100 * in->roof_achieved / r.bound, "%", "roofline (cost model) with 1-byte weights",
                    "with fp8/int8 weights the run would be at %.0f%% of the roofline", 100 * in->roof_achieved / r.bound);
            json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s,s:s,s:s}", "knob", "--weight-dtype",
                "current", model_dtype_name(in->dep.weight_dtype), "suggested", "what the server loads",
                "direction", "give the served weights' dtype", "effect", "quantized weights read fewer bytes per step"));
        }
    }
    json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s,s:s}", "knob", "--model / --model-config",
        "current", in->dep.model, "direction", "name the served model", "effect",
        "a smaller or differently shaped model than assumed reads fewer bytes per token"));
}

static void physics_finding(diag_in *in, int prompt) {
    deploy *d = &in->dep;
    json_t *f = diag_finding(in->config, "configuration", 0.95, "decode ran at %.0f%% of the HBM roofline of the assumed "
                             "deployment (%s on %d x %s, tp %d): impossible, so the assumption is wrong",
                             100 * in->roof_eff, d->model, d->n_gpus, d->gpu, d->tp);
    diag_ev(f, in->roof_achieved, "tok/s", "batch / results.mean_tpot_ms", "measured decode %.0f tok/s at batch %.1f, "
            "context %.0f", in->roof_achieved, in->roof_batch, in->roof_context);
    diag_ev(f, in->roof_bound, "tok/s", "roofline (cost model): batch x HBM bandwidth / bytes per step", "the most %d x %s "
            "can stream for %s at that batch is %.0f tok/s (beyond the model's %.0f%% tolerance)", d->tp, d->gpu, d->model,
            in->roof_bound, 100 * (DIAG_PHYSICS_TOL - 1));
    char tp[16], n[16];
    snprintf(tp, sizeof tp, "%d", d->tp);
    snprintf(n, sizeof n, "%d", d->n_gpus);
    const struct { const char *what, *val; const deploy_src *s; } a[] = {
        {"model", d->model, &d->arch_s}, {"weights", model_dtype_name(d->weight_dtype), &d->weight_dtype_s},
        {"KV cache", model_dtype_name(d->kv_dtype), &d->kv_dtype_s}, {"GPU", d->gpu, &d->gpu_s},
        {"GPUs", n, &d->n_gpus_s}, {"tensor parallel", tp, &d->tp_s},
    };
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++)
        diag_ev(f, NAN, NULL, "deployment", "%s %s: %s", a[i].what, a[i].val, a[i].s->src);
    physics_alternatives(in, f, prompt);
}

void diag_roofline(diag_in *in) {
    in->have_roof = in->roof_impossible = false;
    if (!deploy_has_model(&in->dep) || !deploy_has_gpu(&in->dep)) return;
    const json_t *d = in->doc;
    double done = diag_num(d, METRIC(completed)), tpot = diag_num(d, METRIC(mean_tpot_ms));
    if (!(done > 0) || !(tpot > 0)) return;
    /* a server whose clock runs K times the client's (serve --engine sim --speedup K) takes K times
     * longer per token on its own clock: the roofline is on that clock */
    if (in->dep.time_scale > 0) tpot *= in->dep.time_scale;
    double in_tok = diag_num(d, "total_input_tokens") / done, out_tok = diag_num(d, "total_output_tokens") / done;
    const char *src = NULL;
    double b = decode_batch(in, &src);
    int prompt = in_tok >= 1 ? (int)lround(in_tok) : 1;
    double ctx = in_tok + out_tok / 2;
    roof r;
    char err[256];
    /* a simulated run is modelled with its own factors (the engine section says which) */
    sim_params sp;
    sim_default_params(&sp);
    in->roof_factors = NULL;
    if (sim_params_apply_factors(&sp, json_object_get(in->engine, "factors"), NULL) == 0) {
        in->roof_factors_v = sp.factors;
        in->roof_factors = &in->roof_factors_v;
    }
    if (roof_at(&in->dep, in->roof_factors, b, ctx, prompt, &r, err, sizeof err) < 0) return;
    in->roof_batch = b;
    in->roof_batch_source = src;
    in->roof_context = ctx;
    in->roof_step_ms = tpot;
    in->roof_achieved = b * 1000.0 / tpot;
    in->roof_bound = r.bound;
    in->roof_eff = in->roof_achieved / in->roof_bound;
    in->roof_mem_ms = r.mem_ms;
    in->roof_decode_ms = r.decode_ms;
    in->roof_mem_bound = r.mem_bound;
    in->roof_comm_share = r.comm_share;
    in->roof_prefill_ms = r.prefill_ms;
    in->roof_prompt = prompt;
    in->roof_prefill_compute = r.prefill_compute;
    in->roof_weight_ms = r.weight_ms;
    in->roof_kv_ms = r.kv_ms;
    in->roof_compute_ms = r.compute_ms;
    in->roof_prefill_compute_ms = r.prefill_compute_ms;
    if (in->roof_eff > DIAG_PHYSICS_TOL) {
        in->roof_impossible = true;
        physics_finding(in, prompt);
        return;
    }
    in->have_roof = true;
}

/* ---- rules on the roofline ---- */

static void rule_decode_bw(diag_in *in, json_t *L, json_t *C) {
    if (!in->have_roof) {
        diag_checked(C, "decode_bandwidth", false, in->roof_impossible ? "the roofline of the assumed deployment is beaten: "
                     "see configuration" : "no roofline: model or GPU unknown (give --model or --model-config, and --gpu) or no TPOT");
        return;
    }
    double dram = diag_gpu_mean(in, "dram_bw_util_pct"), tensor = diag_gpu_mean(in, "tensor_util_pct");
    diag_checked(C, "decode_bandwidth", true, isfinite(dram) ? "roofline (cost model) at the run's batch and context, "
                 "results.mean_tpot_ms, telemetry GPU dram_bw_util_pct/tensor_util_pct"
                 : "roofline (cost model) at the run's batch and context, results.mean_tpot_ms");
    bool tel = isfinite(dram) && dram >= DIAG_DRAM_HIGH && (!isfinite(tensor) || tensor < DIAG_TENSOR_HIGH);
    /* "bandwidth bound" needs DRAM near its peak: a roofline that says so while the GPU's own DRAM
     * counter reads low is a model that overestimates the bytes, and the claim is not made */
    if (isfinite(dram) && dram < DIAG_DRAM_HIGH / 2 && !tel) {
        if (in->roof_mem_bound && in->roof_eff >= DIAG_ROOF_EFF)
            diag_checked(C, "decode_bandwidth", false, "the roofline puts decode near HBM bandwidth but GPM DRAM reads low: "
                         "the modelled bytes per step are too many; no bandwidth claim");
        return;
    }
    if (!(in->roof_mem_bound && in->roof_eff >= DIAG_ROOF_EFF) && !tel) return;
    double eff = in->roof_eff > 1 ? 1 : in->roof_eff;
    double conf = 0.5 + 0.4 * ((eff - DIAG_ROOF_EFF) / 0.35 > 1 ? 1 : (eff - DIAG_ROOF_EFF) / 0.35 < 0 ? 0 : (eff - DIAG_ROOF_EFF) / 0.35);
    if (tel) conf = conf < 0.85 ? 0.85 : conf;
    json_t *f = in->roof_eff > 1
        ? diag_finding(L, "decode_bandwidth", conf, "decode is HBM-bandwidth bound: at the roofline at batch %.0f (%.0f%% of "
                       "the modelled bound, within its %.0f%% tolerance)", in->roof_batch, 100 * in->roof_eff,
                       100 * (DIAG_PHYSICS_TOL - 1))
        : diag_finding(L, "decode_bandwidth", conf, "decode is HBM-bandwidth bound: %.0f%% of the bandwidth roofline at batch %.0f",
                       100 * in->roof_eff, in->roof_batch);
    /* a regime, not a loss: decode is as fast as HBM allows at this batch; what is left is to
     * batch more or to read fewer bytes */
    diag_cost(f, 0, "none against the roofline: decode runs as fast as HBM allows at this batch");
    diag_ev(f, in->roof_achieved, "tok/s", "batch / results.mean_tpot_ms", "decode %.0f tok/s at batch %.1f, context %.0f",
            in->roof_achieved, in->roof_batch, in->roof_context);
    diag_ev(f, in->roof_bound, "tok/s", "roofline (cost model): batch x HBM bandwidth / bytes per step",
            "HBM roofline %.0f tok/s for %s on %s (tp %d)", in->roof_bound, in->dep.model, in->dep.gpu, in->dep.tp);
    char gpm[160];
    if (isfinite(dram))
        diag_ev(f, dram, "%", "telemetry.gpu.series.dram_bw_util_pct", "%s",
                diag_gpm_text(gpm, sizeof gpm, dram, dram, tensor, tensor, NAN, NAN));
    /* a larger batch is the lever: the cap's when the batch sits at it, the load's otherwise */
    int seqs = in->dep.max_num_seqs;
    if (seqs > 0 && in->roof_batch >= DIAG_SEQS_FULL * seqs) {
        char cur[16], sug[16];
        snprintf(cur, sizeof cur, "%d", seqs);
        snprintf(sug, sizeof sug, "%d", 2 * seqs);
        diag_setting(in, f, "max_num_seqs", cur, sug, "a larger batch reads the weights once for more tokens: more tok/s, "
                     "slower per user");
    } else {
        char why[160];
        if (seqs > 0) snprintf(why, sizeof why, "the batch is %.0f of max_num_seqs %d: more concurrent requests read the "
                               "weights once for more tokens (more tok/s, slower per user)", in->roof_batch, seqs);
        else snprintf(why, sizeof why, "more concurrent requests read the weights once for more tokens (more tok/s, slower per user)");
        diag_knob(f, "load (batch)", "raise", why);
    }
    diag_setting(in, f, "kv_cache_dtype", model_dtype_name(in->dep.kv_dtype), "fp8", "fewer KV bytes read per token at long contexts");
    diag_setting(in, f, "weight_dtype", model_dtype_name(in->dep.weight_dtype), "fp8", "fewer weight bytes per step");
    diag_knob(f, "speculative decoding / MTP", "enable", "several tokens per weight read");
}

/* Decode's share of a request's time (the rest is the client queue, the wait and the prefill): the
 * share a slow decode step can cost the user. */
static double decode_share(const diag_in *in) {
    double e2el = diag_num(in->doc, METRIC(mean_e2el_ms)), ttft = diag_num(in->doc, METRIC(mean_ttft_ms)), q = diag_num(in->doc, METRIC(mean_queue_ms));
    if (!(e2el > 0) || !isfinite(ttft)) return 1;
    return (e2el - ttft) / (e2el + (q > 0 ? q : 0));
}

/* Whether decode steps replay CUDA graphs: 1 on, 0 off, -1 unknown. A simulated run says so in its
 * engine profile (and a --cuda-graphs override in its config); a real engine does not report it. */
static int graphs_on(const diag_in *in) {
    const json_t *sim = get(in->cfg, "sim");
    const json_t *ov = get(sim, "cuda_graphs");
    if (json_is_boolean(ov)) return json_is_true(ov);
    const char *prof = json_string_value(get(in->engine, "engine_profile"));
    engine_profile p;
    if (prof && profile_find(prof, &p) == 0) return p.cuda_graphs != 0;
    return -1;
}

/* Decode far below its roofline while the GPU's DRAM and tensor pipes idle: the engine's own work
 * per step (kernel launches, the scheduler, sampling, a per-token expert loop) limits the run. */
static void rule_engine_overhead(diag_in *in, json_t *L, json_t *C) {
    double util = diag_gpu_mean(in, "util_gpu_pct"), dram = diag_gpu_mean(in, "dram_bw_util_pct");
    double tensor = diag_gpu_mean(in, "tensor_util_pct"), sm = diag_gpu_mean(in, "sm_util_pct");
    double inflight = diag_mean(get(in->timeline, "in_flight"));
    double step_med = in->eng_series ? diag_median(get(in->eng_series, "step_ms")) : NAN;
    double ovh = in->step_overhead_s * 1e3;
    bool roof = in->have_roof && in->roof_mem_bound && in->roof_eff < DIAG_OVERHEAD_EFF;
    bool pipes = isfinite(dram) && dram < DIAG_PIPES_IDLE && (!isfinite(tensor) || tensor < DIAG_PIPES_IDLE) && inflight >= 1;
    bool idle = isfinite(util) && inflight >= 1 && util < DIAG_GPU_IDLE_UTIL;
    bool sim = isfinite(step_med) && step_med > 0 && isfinite(ovh) && ovh / step_med >= DIAG_OVERHEAD_SHARE;
    if (!in->have_roof && !isfinite(util) && !isfinite(dram) && !isfinite(step_med)) {
        diag_checked(C, "engine_overhead", false, "no valid roofline, no GPU utilisation telemetry and no engine step series");
        return;
    }
    diag_checked(C, "engine_overhead", true, "roofline efficiency, telemetry dram_bw_util_pct/tensor_util_pct/util_gpu_pct, "
                 "results.timeline.in_flight, engine step series");
    if (!roof && !pipes && !idle && !sim) return;
    json_t *f;
    if (roof) {
        f = diag_finding(L, "engine_overhead", pipes ? 0.85 : 0.7, "the engine's own work per step, not the GPU, limits "
                         "decode: %.1f%% of the HBM roofline at batch %.0f", 100 * in->roof_eff, in->roof_batch);
        diag_cost(f, decode_share(in) * (1 - in->roof_eff), "of end-to-end time: decode beyond what HBM streaming needs at "
                  "this batch");
        diag_ev(f, 100 * in->roof_eff, "%", "batch / results.mean_tpot_ms vs roofline (cost model)", "decode %.0f tok/s at "
                "batch %.1f vs %.0f tok/s HBM roofline for %s on %s", in->roof_achieved, in->roof_batch, in->roof_bound,
                in->dep.model, in->dep.gpu);
        diag_ev(f, in->roof_step_ms, "ms", "results.mean_tpot_ms vs bytes per step / HBM bandwidth", "a decode step takes "
                "%.1f ms; streaming its weights and KV from HBM takes %.3f ms", in->roof_step_ms, in->roof_mem_ms);
    } else if (pipes) {
        f = diag_finding(L, "engine_overhead", 0.6, "the GPU's memory and tensor pipes idle while requests are in flight: "
                         "the engine's overhead, not the GPU, limits the run");
        diag_cost(f, 1 - (isfinite(tensor) && tensor > dram ? tensor : dram) / 100, "of the GPU's DRAM bandwidth unused");
    } else if (idle) {
        f = diag_finding(L, "engine_overhead", 0.55, "the GPU idles while requests are in flight");
        diag_cost(f, 1 - util / 100, "of the GPU's time idle (NVML utilization)");
    } else {
        f = diag_finding(L, "engine_overhead", 0.45, "fixed per-step overhead is a large part of every step");
        diag_cost(f, ovh / step_med, "of every engine step is fixed overhead");
    }
    char gpm[160];
    if (isfinite(dram))
        diag_ev(f, dram, "%", "telemetry.gpu.series.dram_bw_util_pct, tensor_util_pct, sm_util_pct", "%s (GPM) while NVML "
                "utilization reads %.0f%% (any kernel running counts)",
                diag_gpm_text(gpm, sizeof gpm, dram, dram, tensor, tensor, sm, sm), util);
    else if (isfinite(util))
        diag_ev(f, util, "%", "telemetry.gpu.series.util_gpu_pct", "GPU busy %.0f%% with %.1f requests in flight on average",
                util, inflight);
    double cpu = diag_mean(get(get(get(in->tel, "host"), "series"), "server_cpu_pct"));
    if (isfinite(cpu) && cpu >= 80)
        diag_ev(f, cpu, "%", "telemetry.host.series.server_cpu_pct", "the server process keeps %.0f%% of a CPU core busy: its "
                "host-side loop (scheduling, launches, sampling) runs every step", cpu);
    /* a host-side loop runs at the speed of the CPU it gets: on a virtual machine the hypervisor may
     * take the vCPUs away (steal), and on a busy host the main thread may wait for a core */
    double steal = diag_mean(get(get(get(in->tel, "host"), "series"), "steal_pct"));
    double runq = diag_mean(get(get(get(in->tel, "host"), "series"), "server_runq_pct"));
    if (isfinite(steal) && steal >= DIAG_STEAL_PCT)
        diag_ev(f, steal, "%", "telemetry.host.series.steal_pct", "the hypervisor took %.1f%% of the host's CPU time (steal): "
                "the loop that launches each step's kernels runs slower while it does", steal);
    if (isfinite(runq) && runq >= DIAG_RUNQ_PCT)
        diag_ev(f, runq, "%", "telemetry.host.series.server_runq_pct", "the server's main thread waited for a CPU %.1f%% of "
                "the time: other threads share its core", runq);
    if (sim) diag_ev(f, 100 * ovh / step_med, "%", "engine.step_overhead_s / median engine.series.step_ms",
                     "%.2f ms of a %.2f ms median step is fixed overhead (scheduling, launches, sampling)", ovh, step_med);
    if (!strcmp(in->dep.engine, "llama.cpp")) {
        /* a build before the spring 2025 MoE rework loops over the experts on the host, syncing the
         * GPU for each MoE matmul (what this finding measures); a source build states no number and
         * is taken as one (as the simulator does) */
        long build = deploy_llamacpp_build(&in->dep);
        bool moe = in->dep.arch_s.known && model_is_moe(&in->dep.arch);
        bool mla = in->dep.arch_s.known && model_is_mla(&in->dep.arch);
        if (moe && build < LLAMACPP_MOE_REWORK_BUILD) {
            char cur[64], sug[32], dir[160];
            if (build > 0) snprintf(cur, sizeof cur, "b%ld", build);
            else snprintf(cur, sizeof cur, "unknown (a source build: taken as before b%d)", LLAMACPP_MOE_REWORK_BUILD);
            snprintf(sug, sizeof sug, "b%d or later", mla ? LLAMACPP_FA_MLA_BUILD : LLAMACPP_MOE_REWORK_BUILD);
            snprintf(dir, sizeof dir, "%s \xe2\x86\x92 %s", cur, sug);
            json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s,s:s,s:s}", "knob", "llama.cpp build",
                "current", cur, "suggested", sug, "direction", dir, "effect",
                mla ? "the experts' ids stay on the GPU (no host loop and sync per MoE matmul: ggml-org/llama.cpp#13014, "
                      "#13199), and -fa runs for DeepSeek's unequal K/V heads (#13306; this build forces it off)"
                    : "the experts' ids stay on the GPU: no host loop and sync per MoE matmul (ggml-org/llama.cpp#13014, #13199)"));
        }
        diag_knob(f, "engine", "try vLLM or SGLang for this model", "fused MoE kernels and CUDA graphs put more work in "
                  "each launch, so the step's fixed cost weighs less");
        if (diag_llamacpp_fa_runs(in)) diag_knob(f, "flash attention", "-fa on", "fewer, fused attention kernels per step");
    } else if (graphs_on(in) == 0) {
        diag_knob(f, "CUDA graphs", "enable (vLLM: drop --enforce-eager)", "fewer kernel launches per step");
    } else if (graphs_on(in) < 0) {
        diag_knob(f, "CUDA graphs", "check they are on (vLLM: no --enforce-eager)", "eager launches cost a host round trip per kernel");
    }
    diag_knob(f, "server CPU", "check", "the scheduler, sampling and detokenizer threads must not starve");
}

void diag_roof_rules(diag_in *in, json_t *L, json_t *C) {
    rule_decode_bw(in, L, C);
    rule_engine_overhead(in, L, C);
}
