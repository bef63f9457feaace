/* diagnose_account — where a request's time went, and the checks that keep each finding honest:
 *  - admission: the requests offered to the server (Little's law on the client's own records:
 *    request_throughput x mean E2EL) against the requests it runs (the engine's or /metrics'
 *    running count), and the cap running is pinned at. This needs no waiting gauge: llama.cpp
 *    has none worth reading, yet a server with N slots under 2N users shows N running of 2N offered;
 *  - the time accounting: a request's mean time split into the client's queue, waiting for
 *    admission, prefill and decode; a decode step into weights and KV streaming (HBM), compute
 *    (tensor peak), modelled communication, the fixed per-step cost and what nothing explains;
 *  - the deployment against its telemetry: weights the GPU does not hold, a server computing on
 *    the host's cores while its GPU idles (llama.cpp -ngl 0 on a GPU machine);
 *  - the run's own warnings (overload, client lag, percentiles of few samples);
 *  - one story per report: one direction per knob. */
#include "diagnose/diagnose_int.h"
#include "metrics/metric_table.h"
#include "engine/cost_model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }
static json_t *jnum(double x) { return isfinite(x) ? json_real(round(x * 1000) / 1000) : json_null(); }

/* ---- admission ---- */

void diag_admission(diag_in *in) {
    const json_t *d = in->doc;
    in->offered = diag_num(d, METRIC(request_throughput)) * diag_num(d, METRIC(mean_e2el_ms)) / 1000.0;
    in->offered_peak = diag_num(d, "max_concurrent_requests");
    if (!isfinite(in->offered_peak)) in->offered_peak = diag_num(d, "peak_concurrent_requests");
    in->admitted = in->run_max = in->pinned_frac = NAN;
    in->admitted_src = NULL;
    const json_t *run = NULL;
    if (in->eng_series && get(in->eng_series, "running")) {
        run = get(in->eng_series, "running");
        in->admitted_src = "engine.series.running";
    } else if (get(get(get(in->tel, "server"), "series"), "running")) {
        run = get(get(get(in->tel, "server"), "series"), "running");
        in->admitted_src = "telemetry.server.series.running";
    }
    if (run) {
        double s = 0, mx = NAN;
        size_t n = 0, i;
        json_t *v;
        json_array_foreach(run, i, v) {
            double x = json_number_value(v);
            if (!json_is_number(v) || !(x > 0)) continue;   /* busy samples only: the level's ramp-down is not load */
            s += x;
            n++;
            if (!(x <= mx)) mx = x;
        }
        if (n) {
            in->admitted = s / n;
            in->run_max = mx;
            size_t at = 0;
            json_array_foreach(run, i, v) if (json_number_value(v) > 0 && json_number_value(v) >= mx - 0.5) at++;
            in->pinned_frac = (double)at / n;
        }
    }
    in->cap = in->dep.max_num_seqs > 0 ? in->dep.max_num_seqs : 0;
    in->cap_src = in->cap ? in->dep.max_num_seqs_s.src : NULL;
    in->cap_from_evidence = false;
    double gap = in->offered - in->admitted;
    double ttft = diag_num(d, METRIC(mean_ttft_ms)), tmin = diag_num(d, METRIC(min_ttft_ms));
    /* admitted below offered, and the first tokens late by it: a count that lags alone is no queue */
    in->queue_by_admission = isfinite(gap) && gap >= DIAG_ADMIT_GAP_MIN && gap >= DIAG_ADMIT_GAP * in->offered &&
                             tmin > 0 && ttft >= DIAG_ADMIT_TTFT * tmin;
    /* ...and no request waits for a slot that never had more requests in flight than slots: with
     * a known cap (the server's own, not read off this run) and the client's peak at or below it,
     * the gap between offered and running is time in the server outside a slot (HTTP, tokenizing,
     * a starved host thread handing the request over), not admission */
    if (in->queue_by_admission && in->cap > 0 && isfinite(in->offered_peak) && in->offered_peak <= in->cap)
        in->queue_by_admission = false;
    /* bursts: on average fewer are offered than run, but at times more arrive than the cap admits
     * (an open loop's random arrivals), and TTFT grows by the wait */
    in->queue_bursts = false;
    if (!in->queue_by_admission && in->cap > 0 && in->offered_peak > in->cap && in->run_max >= in->cap &&
        tmin > 0 && ttft >= DIAG_ADMIT_TTFT * tmin && diag_num(d, METRIC(median_ttft_ms)) >= DIAG_ADMIT_TTFT * tmin)
        in->queue_by_admission = in->queue_bursts = true;
    /* with requests waiting all along, the most the server ever ran is what it can run: its cap */
    if (!in->cap && in->queue_by_admission && !in->queue_bursts && in->pinned_frac >= DIAG_PINNED && in->run_max >= 1 &&
        in->offered >= in->run_max + DIAG_ADMIT_GAP_MIN) {
        in->cap = (int)lround(in->run_max);
        in->cap_src = in->admitted_src;
        in->cap_from_evidence = true;
    }
}

/* ---- time accounting ---- */

static void part(json_t *arr, const char *name, double ms, double total, const char *bound, const char *src) {
    if (!isfinite(ms)) return;
    json_t *p = json_pack("{s:s,s:o,s:o,s:s}", "part", name, "ms", jnum(ms), "share", jnum(total > 0 ? ms / total : NAN),
                          "source", src);
    if (bound) json_object_set_new(p, "bound", json_string(bound));
    json_array_append_new(arr, p);
}

double diag_prefill_ms(const diag_in *in) {
    const json_t *d = in->doc;
    double ttft = diag_num(d, METRIC(mean_ttft_ms)), tmin = diag_num(d, METRIC(min_ttft_ms));
    double wait = in->queue_by_admission ? ttft - tmin : 0;
    double own = ttft - (wait > 0 ? wait : 0);
    double done = diag_num(d, METRIC(completed)), mean_in = done > 0 ? diag_num(d, "total_input_tokens") / done : NAN;
    /* request classes (bench --class) each send one prompt shape: each class's fastest TTFT is its
     * prefill, weighted by the requests it completed */
    const json_t *cls = get(d, "classes");
    double sum = 0, n = 0;
    size_t i;
    json_t *c;
    json_array_foreach(cls, i, c) {
        double k = diag_num(c, METRIC(completed)), m = diag_num(c, METRIC(min_ttft_ms));
        if (k > 0 && m > 0) { sum += k * m; n += k; }
    }
    if (json_array_size(cls) >= 2 && n > 0) return sum / n < own ? sum / n : own;
    /* one prompt shape (the dataset's lengths agree with what was sent): the fastest prefill's rate
     * per token applied to the mean prompt, an upper bound (a short prompt's fixed cost makes its
     * rate per token the slowest) */
    const json_t *dl = get(get(d, "config"), "dataset_lengths");
    double min_in = diag_num(dl, "in_tokens_min"), dl_mean = diag_num(dl, "in_tokens_mean");
    if (tmin > 0 && min_in > 0 && mean_in > 0 && fabs(dl_mean / mean_in - 1) < 0.05) {
        double est = tmin * mean_in / min_in;
        if (est < own) own = est;
    }
    return own;
}

json_t *diag_time(const diag_in *in) {
    const json_t *d = in->doc;
    double e2el = diag_num(d, METRIC(mean_e2el_ms)), ttft = diag_num(d, METRIC(mean_ttft_ms)), tmin = diag_num(d, METRIC(min_ttft_ms));
    if (!(e2el > 0) || !isfinite(ttft)) return json_null();
    double q = diag_num(d, METRIC(mean_queue_ms));
    if (!(q > 0)) q = 0;
    double total = q + e2el;
    /* waiting for admission: Little's law on the requests offered beyond those running; without a
     * running count, a queue the waiting gauge shows, the TTFT beyond the fastest */
    double wait = 0, rate = diag_num(d, METRIC(request_throughput));
    const char *wsrc = "no wait for admission found";
    if (in->queue_by_admission && rate > 0 && in->offered > in->admitted) {
        wait = (in->offered - in->admitted) / rate * 1000;
        wsrc = "Little's law: (offered - admitted) / request_throughput";
    } else if (in->queue_by_admission || (tmin > 0 && ttft >= DIAG_TTFT_WAIT_RATIO * tmin && !isfinite(in->admitted))) {
        wait = ttft - tmin;
        wsrc = "results.mean_ttft_ms - min_ttft_ms";
    }
    if (wait > ttft) wait = ttft;
    json_t *req = json_array();
    /* the server's own split of TTFT, joined request by request (metrics/phases.h: vLLM's queue and
     * TTFT from scheduling) replaces the inference when every completed request carried it: the
     * means then add up exactly. Not llama.cpp's timings: they give no queue, so its wait for a
     * slot would hide in "outside the server" — there the inferred admission wait stays */
    const json_t *svt = get(d, "server_timing");
    double s_pre = diag_num(svt, "mean_server_prefill_ms"), s_out = diag_num(svt, "mean_ttft_outside_server_ms");
    double s_q = diag_num(svt, "mean_server_queue_ms");
    bool server_split = isfinite(s_pre) && isfinite(s_out) && isfinite(s_q) &&
                        diag_num(svt, "requests_joined") == diag_num(d, METRIC(completed));
    if (server_split) {
        part(req, "client queue", q, total, NULL, "results.mean_queue_ms");
        part(req, "client and network (TTFT the server did not see)", s_out, total, NULL,
             "results.server_timing.mean_ttft_outside_server_ms");
        part(req, "waiting in the server's queue", s_q, total, NULL, "results.server_timing.mean_server_queue_ms");
        part(req, "prefill (the server's own figure)", s_pre, total, NULL, "results.server_timing.mean_server_prefill_ms");
        part(req, "decode", e2el - ttft, total, NULL, "results.mean_e2el_ms - mean_ttft_ms");
    } else {
        part(req, "client queue", q, total, NULL, "results.mean_queue_ms");
        part(req, "waiting for admission", wait, total, NULL, wsrc);
        double pf = diag_prefill_ms(in);
        if (!(pf <= ttft - wait)) pf = ttft - wait;
        part(req, "prefill", pf, total, NULL, "the fastest TTFT's rate per prompt token x the mean prompt (at most TTFT less the wait)");
        if (ttft - wait - pf > 0.005 * total)
            part(req, "waiting for the first token behind other requests' steps", ttft - wait - pf, total, NULL,
                 "results.mean_ttft_ms less the admission wait and the prefill");
        part(req, "decode", e2el - ttft, total, NULL, "results.mean_e2el_ms - mean_ttft_ms");
    }
    json_t *out = json_pack("{s:o,s:o}", "request_ms", jnum(total), "request", req);
    const char *split = json_string_value(get(svt, "source"));
    json_object_set_new(out, "split", json_string(server_split && split ? split : "inferred"));
    if (!in->have_roof) return out;
    /* one decode step: what the hardware needs for it, and what is left */
    double step = in->roof_step_ms, mem = in->roof_weight_ms + in->roof_kv_ms;
    double floor = isfinite(in->roof_compute_ms) && in->roof_compute_ms > mem ? in->roof_compute_ms : mem;
    double comm = in->roof_decode_ms * in->roof_comm_share;
    double fixed = in->step_overhead_s * 1e3;
    json_t *st = json_array();
    part(st, "weights streaming", in->roof_weight_ms, step, "HBM bandwidth", "cost model: weight bytes per step / HBM peak");
    part(st, "KV streaming", in->roof_kv_ms, step, "HBM bandwidth", "cost model: KV bytes per step / HBM peak");
    part(st, "compute", in->roof_compute_ms, step, "tensor peak (overlaps the streaming)", "cost model: FLOPs per step / tensor peak");
    if (comm > 0) part(st, "communication", comm, step, "link bandwidth", "cost model: all-reduce per step");
    if (isfinite(fixed)) part(st, "fixed per-step cost", fixed, step, "engine's own", "engine.step_overhead_s");
    double left = step - floor - (comm > 0 ? comm : 0) - (isfinite(fixed) ? fixed : 0);
    part(st, "unexplained (host-side work, launches, kernels below peak)", left > 0 ? left : 0, step, NULL,
         "the step less every part above");
    json_object_set_new(out, "decode_step_ms", jnum(step));
    json_object_set_new(out, "decode_step", st);
    return out;
}

/* ---- the deployment against its telemetry ---- */

bool diag_rule_deployment(diag_in *in, json_t *L, json_t *C) {
    if (!json_array_size(get(in->tel, "gpu"))) {
        diag_checked(C, "deployment", false, "no GPU telemetry: nothing to hold the deployment against");
        return false;
    }
    diag_checked(C, "deployment", true, "GPU memory the server holds vs its weights, NVML utilization, the server's CPU");
    const char *wsrc = NULL;
    /* GPU memory the server's process held (the deployment's reading of NVML's process list), its
     * weights, and whether they were all on the GPU: deploy's one definition, which the simulator's
     * refusal of such a run uses too (it also reads llama-server's -ngl) */
    double held = in->dep.gpu_held_mib_s.known ? in->dep.gpu_held_mib : NAN, wb = deploy_weight_bytes(&in->dep, &wsrc);
    char off_why[400];
    double util = diag_gpu_mean(in, "util_gpu_pct");
    double cpu = diag_mean(get(get(get(in->tel, "host"), "series"), "server_cpu_pct"));
    bool offered = in->offered >= 1 || diag_mean(get(in->timeline, "in_flight")) >= 1;
    bool off_gpu = deploy_weights_off_gpu(&in->dep, off_why, sizeof off_why);
    bool on_host = offered && isfinite(util) && util < DIAG_GPU_IDLE_PCT && cpu >= 100 * DIAG_SERVER_CORES;
    if (!off_gpu && !on_host) return false;
    bool llama = !strcmp(in->dep.engine, "llama.cpp");
    json_t *f = diag_finding(L, "deployment", off_gpu && on_host ? 0.9 : 0.75, "the deployment is not what it should be: %s",
                             off_gpu ? "the model's weights are not on the GPU" :
                             "the server computes on the host's CPU cores while its GPU idles");
    if (in->have_roof) diag_cost(f, 1 - in->roof_eff, "of decode throughput vs the HBM roofline of the GPU it should run on");
    else diag_cost(f, isfinite(util) ? 1 - util / 100 : DIAG_COST_UNKNOWN, "of the GPU's time idle (NVML utilization)");
    bool ngl_short = off_gpu && in->dep.gpu_layers_s.known && in->dep.gpu_layers >= 0 && in->dep.gpu_layers <= in->dep.arch.layers;
    if (ngl_short)
        diag_ev(f, in->dep.gpu_layers, "layers", "telemetry.host.numa.server.cmdline", "%s", off_why);
    if (isfinite(held) && wb > 0)
        diag_ev(f, held, "MiB", "telemetry.gpu[].processes[].used_mib", "the server's process holds %.0f MiB of GPU memory "
                "for %.0f MiB of weights (%s)%s", held, wb / 1048576.0, wsrc,
                held * 1048576.0 < wb ? ": they cannot all be on the GPU" : "");
    if (isfinite(util))
        diag_ev(f, util, "%", "telemetry.gpu.series.util_gpu_pct", "GPU busy %.0f%% of the time with %.1f requests offered",
                util, in->offered);
    if (isfinite(cpu))
        diag_ev(f, cpu / 100, "cores", "telemetry.host.series.server_cpu_pct", "the server process keeps %.1f CPU cores busy: "
                "%s", cpu / 100, cpu >= 100 * DIAG_SERVER_CORES ? "the model's math runs on the host" :
                "its host-side loop");
    char cur[96], dir[160];
    if (ngl_short) snprintf(cur, sizeof cur, "%d of %d layers", in->dep.gpu_layers, in->dep.arch.layers + 1);
    else if (off_gpu && isfinite(held) && wb > 0) snprintf(cur, sizeof cur, "at most %.0f%% of the weights on the GPU", 100 * held * 1048576.0 / wb);
    else snprintf(cur, sizeof cur, "unknown (the GPU idles)");
    snprintf(dir, sizeof dir, "%s \xe2\x86\x92 99 (all layers)", cur);
    if (llama) {
        json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "knob", "gpu_layers",
            "current", cur, "suggested", "99 (all layers)", "direction", dir,
            "flag", "-ngl", "effect", "the weights and the math move to the GPU; the host's cores stop being the limit"));
    } else {
        diag_knob(f, "device", "check the server sees the GPU (CUDA_VISIBLE_DEVICES, --device)",
                  "a server that cannot use its GPU falls back to the host");
    }
    return true;
}

/* ---- warnings ---- */

json_t *diag_warnings(const json_t *doc, double level) {
    json_t *out = json_array();
    size_t i;
    json_t *w;
    json_array_foreach(get(doc, "warnings"), i, w) {
        const char *kind = json_string_value(get(w, "kind")), *msg = json_string_value(get(w, "message"));
        if (!kind || !msg) continue;
        json_array_append_new(out, json_pack("{s:s,s:s,s:o}", "kind", kind, "message", msg, "level",
                                             isfinite(level) ? json_real(level) : json_null()));
    }
    /* from files written before bench kept warnings: the flags themselves */
    if (!get(doc, "warnings")) {
        if (json_is_true(get(doc, "server_overloaded")))
            json_array_append_new(out, json_pack("{s:s,s:s,s:o}", "kind", "overload", "message", "SERVER OVERLOADED: it did "
                "not keep up with the offered load: latencies grow with the run's length", "level",
                isfinite(level) ? json_real(level) : json_null()));
        if (json_is_true(get(doc, "client_fell_behind")))
            json_array_append_new(out, json_pack("{s:s,s:s,s:o}", "kind", "client", "message", "CLIENT FELL BEHIND ITS PLAN: "
                "the client, not the server, limited this run", "level", isfinite(level) ? json_real(level) : json_null()));
    }
    double n = diag_num(doc, METRIC(completed));
    if (n > 0 && n < DIAG_FEW_SAMPLES && isfinite(diag_num(doc, METRIC(p99_ttft_ms)))) {
        char msg[256];
        snprintf(msg, sizeof msg, "p99 TTFT and E2EL from %.0f requests: with fewer than %d a p99 is the slowest "
                 "one or two, not a tail estimate (a longer run gives a p99)", n, DIAG_FEW_SAMPLES);
        json_array_append_new(out, json_pack("{s:s,s:s,s:o,s:f}", "kind", "few_samples", "message", msg, "level",
                                             isfinite(level) ? json_real(level) : json_null(), "requests", n));
    }
    return out;
}

/* ---- one story ---- */

static void base_name(const char *knob, char *buf, size_t len) {
    snprintf(buf, len, "%s", knob ? knob : "");
    char *p = strstr(buf, " (");
    if (p) *p = 0;
}

void diag_one_story(json_t *ranked) {
    json_t *seen = json_object();
    size_t i;
    json_t *f;
    json_array_foreach(ranked, i, f) {
        json_t *knobs = json_object_get(f, "knobs");
        for (size_t k = 0; k < json_array_size(knobs);) {
            const json_t *kn = json_array_get(knobs, k);
            char base[96];
            base_name(json_string_value(get(kn, "knob")), base, sizeof base);
            const char *sug = json_string_value(get(kn, "suggested"));
            const char *dir = sug ? sug : json_string_value(get(kn, "direction"));
            const char *have = json_string_value(get(seen, base));
            if (have && dir && strcmp(have, dir)) { json_array_remove(knobs, k); continue; }   /* the first finding's way */
            if (!have && dir) json_object_set_new(seen, base, json_string(dir));
            k++;
        }
    }
    json_decref(seen);
}

bool diag_fp8_compute(const diag_in *in) {
    if (!strcmp(in->dep.engine, "llama.cpp")) return false;   /* GGUF quantizations dequantize to f16/f32 math */
    const hw_gpu *g = deploy_has_gpu(&in->dep) ? hw_find(in->dep.gpu) : NULL;
    return g && g->fp8_flops > 0;
}
