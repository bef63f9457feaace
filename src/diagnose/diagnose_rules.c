/* diagnose_rules — one function per bottleneck class. Each rule reads what the document has
 * (summary metrics, timeline, client cost, sim engine series, telemetry GPU/host/server series),
 * says in `checked` what it used or why it could not run, and adds a finding with evidence,
 * confidence and knobs when its condition holds. Thresholds are in diagnose_int.h. */
#include "diagnose/diagnose_int.h"
#include "metrics/metric_table.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

static double clamp01(double x) { return x < 0 ? 0 : x > 1 ? 1 : x; }

static const json_t *srv_series(const diag_in *in) { return get(get(in->tel, "server"), "series"); }

/* The share of a user's end-to-end time spent waiting for service: TTFT beyond the fastest TTFT
 * (a prefill alone), over the mean end-to-end latency. */
static double wait_share(const json_t *d) {
    double ttft = diag_num(d, METRIC(mean_ttft_ms)), tmin = diag_num(d, METRIC(min_ttft_ms)), e2el = diag_num(d, METRIC(mean_e2el_ms));
    double q = diag_num(d, METRIC(mean_queue_ms));
    if (!(e2el > 0) || !isfinite(ttft) || !isfinite(tmin)) return NAN;
    return clamp01((ttft - tmin) / (e2el + (q > 0 ? q : 0)));
}

static void int_str(char *buf, size_t n, int v) { snprintf(buf, n, "%d", v); }

/* ---- rules ---- */

static void rule_client(diag_in *in, json_t *L, json_t *C) {
    const json_t *d = in->doc;
    diag_checked(C, "client_bound", true, "results.client_fell_behind, client_queue_capped, queue and rate fields, client section");
    double share = diag_num(in->client, "cpu_core_share");
    double q = diag_num(d, METRIC(mean_queue_ms)), ttft = diag_num(d, METRIC(mean_ttft_ms));
    double ach = diag_num(d, "achieved_rate_per_s"), want = diag_num(d, "intended_rate_per_s");
    json_t *f = NULL;
    double fs99 = diag_num(d, METRIC(p99_ttft_from_schedule_ms)), sv99 = diag_num(d, METRIC(p99_ttft_ms));
    /* how much of what users waited was the client's own lag: a lag of a few ms under a
     * 100 ms TTFT is worth a note, not the headline */
    double impact = fs99 > 0 && sv99 >= 0 ? (fs99 - sv99) / fs99 : NAN;
    bool rate_short = isfinite(want) && ach < 0.9 * want;
    if (json_is_true(get(d, "client_fell_behind"))) {
        /* "the client limited the run" needs its lag to be a real share of what users waited */
        double conf = rate_short || impact >= 0.3 ? 0.9 : isfinite(impact) ? 0.3 + 2 * impact : 0.3;
        if (conf >= 0.6)
            f = diag_finding(L, "client_bound", conf, "the client fell behind its plan: it, not the server, limited the run");
        else if (isfinite(impact))
            /* a slight lag is a caveat on the run, not its bottleneck: the run's own warning says
             * so, and a health verdict beside it is held at low confidence (warnings_as_evidence) */
            return;
        else
            f = diag_finding(L, "client_bound", conf, "the client lagged its plan (no completed request to weigh the lag against)");
        diag_ev(f, NAN, NULL, "results.client_lag_reason", "%s", json_string_value(get(d, "client_lag_reason")));
    } else if (json_is_true(get(d, "client_queue_capped")) && q >= ttft) {
        double cap = diag_num(d, "max_concurrency");
        f = diag_finding(L, "client_bound", 0.85, "the client's connection cap (%.0f) limited the run: requests "
                         "waited in the client queue longer than for their first token", cap);
        diag_ev(f, diag_num(d, "max_concurrent_requests"), "requests", "results.max_concurrent_requests",
                "peak in flight %.0f = --max-concurrency %.0f", diag_num(d, "max_concurrent_requests"), cap);
    } else if (share >= DIAG_CLIENT_CPU) {
        f = diag_finding(L, "client_bound", 0.6, "the client used %.0f%% of a CPU core: its own speed may limit the run",
                         100 * share);
    }
    if (!f) return;
    if (rate_short) diag_cost(f, 1 - ach / want, "of the planned request rate never sent");
    else if (fs99 > 0 && sv99 >= 0) diag_cost(f, clamp01(impact), "of p99 TTFT from schedule spent in the client");
    else diag_cost(f, DIAG_COST_UNKNOWN, "not sized");
    if (isfinite(q) && isfinite(ttft))
        diag_ev(f, q, "ms", "results.mean_queue_ms", "mean client queue %.1f ms vs mean TTFT %.1f ms", q, ttft);
    if (isfinite(want)) diag_ev(f, ach, "req/s", "results.achieved_rate_per_s", "sent %.2f req/s of %.2f planned", ach, want);
    double fs = diag_num(d, METRIC(p99_ttft_from_schedule_ms));
    if (isfinite(fs)) diag_ev(f, fs, "ms", "results.p99_ttft_from_schedule_ms", "p99 TTFT from schedule %.1f ms "
                              "(server view p99 %.1f ms)", fs, diag_num(d, METRIC(p99_ttft_ms)));
    if (isfinite(share) && isfinite(diag_num(in->client, "cpu_us_per_chunk")))
        diag_ev(f, 100 * share, "%", "client.cpu_core_share", "client CPU %.0f%% of one core (%.2f us per chunk)",
                100 * share, diag_num(in->client, "cpu_us_per_chunk"));
    else if (isfinite(share)) diag_ev(f, 100 * share, "%", "client.cpu_core_share", "client CPU %.0f%% of one core", 100 * share);
    if (json_is_true(get(d, "client_queue_capped")))
        diag_knob(f, "--max-concurrency", "raise", "the wait moves from the client queue to the server, which is what the run should measure");
    if (rate_short) diag_knob(f, "--rate", "lower", "a plan the client can keep");
    diag_knob(f, "client host", "move", "a machine with idle cores, or several clients");
}

static void rule_kv(diag_in *in, json_t *L, json_t *C) {
    double kv_max = NAN, kv_mean = NAN, pre = NAN, wait_mean = NAN, run_max = NAN;
    const json_t *t = NULL, *kv = NULL;
    const char *src;
    if (in->eng_series) {
        t = get(in->eng_series, "t_s");
        kv = get(in->eng_series, "kv_usage");
        kv_max = diag_max(kv);
        kv_mean = diag_mean(kv);
        pre = diag_num(in->engine, "preemptions_total");
        wait_mean = diag_mean(get(in->eng_series, "waiting"));
        run_max = diag_max(get(in->eng_series, "running"));
        src = "engine.series.kv_usage, engine.preemptions_total, engine.series.waiting";
    } else if (srv_series(in) && get(srv_series(in), "kv_usage_pct")) {
        const json_t *s = srv_series(in);
        t = get(s, "t_s");
        kv_max = diag_max(get(s, "kv_usage_pct")) / 100;
        kv_mean = diag_mean(get(s, "kv_usage_pct")) / 100;
        double sum = 0;
        size_t i;
        json_t *v;
        json_array_foreach(get(s, "preemptions"), i, v) sum += json_number_value(v);
        pre = sum;
        wait_mean = diag_mean(get(s, "waiting"));
        run_max = diag_max(get(s, "running"));
        src = "telemetry.server.series.kv_usage_pct, preemptions, waiting";
    } else {
        diag_checked(C, "kv_capacity", false, "no KV usage series (sim engine section or server /metrics telemetry)");
        return;
    }
    diag_checked(C, "kv_capacity", true, src);
    bool full = kv_max >= DIAG_KV_FULL;
    if (!full && !(pre > 0)) return;
    double conf = pre > 0 && wait_mean >= DIAG_WAITING_MEAN ? 0.9 : pre > 0 ? 0.8 : 0.75;
    json_t *f = diag_finding(L, "kv_capacity", conf, "KV cache full: %s", pre > 0 ? "requests are preempted and recomputed"
                                                                               : "admission waits for free blocks");
    diag_ev(f, 100 * kv_max, "%", in->eng_series ? "engine.series.kv_usage" : "telemetry.server.series.kv_usage_pct",
            "KV usage max %.1f%%, mean %.1f%%", 100 * kv_max, 100 * kv_mean);
    if (isfinite(pre)) diag_ev(f, pre, "preemptions", in->eng_series ? "engine.preemptions_total" : "telemetry.server.series.preemptions",
                               "%.0f preemptions", pre);
    if (isfinite(wait_mean)) diag_ev(f, wait_mean, "requests", in->eng_series ? "engine.series.waiting" : "telemetry.server.series.waiting", "mean waiting %.1f requests", wait_mean);
    int seqs = in->dep.max_num_seqs;
    if (seqs > 0 && isfinite(run_max))
        diag_ev(f, run_max, "requests", in->eng_series ? "engine.series.running" : "telemetry.server.series.running", "running at most %.0f of max_num_seqs %d: memory, not the "
                "sequence cap, stops admission", run_max, seqs);
    double ws = wait_share(in->doc);
    diag_cost(f, isfinite(ws) ? ws : DIAG_COST_UNKNOWN, isfinite(ws) ? "of end-to-end time spent waiting for admission"
                                                                     : "not sized");
    double kv_tok = diag_num(in->engine, "kv_tokens");
    if (isfinite(kv_tok)) diag_ev(f, kv_tok, "tokens", "engine.kv_tokens", "KV capacity %.0f tokens", kv_tok);
    double t0, t1;
    if (t && kv && diag_span(t, kv, in->eng_series ? DIAG_KV_FULL : 100 * DIAG_KV_FULL, &t0, &t1)) diag_window(f, t0, t1);
    char cur[16], sug[16];
    diag_kv_memory_settings(in, f, "halves KV bytes per token: about twice the tokens fit", "more memory for KV blocks");
    int_str(cur, sizeof cur, in->dep.tp);
    int_str(sug, sizeof sug, 2 * in->dep.tp);
    diag_setting(in, f, "tensor_parallel_size", in->dep.tp_s.assumed ? NULL : cur, in->dep.tp_s.assumed ? "raise" : sug,
                 "weights split over more GPUs leave more memory for KV");
    if (pre > 0) {
        int_str(cur, sizeof cur, seqs);
        int_str(sug, sizeof sug, isfinite(run_max) && run_max > 1 ? (int)(0.75 * run_max) : seqs / 2);
        diag_setting(in, f, "max_num_seqs", seqs > 0 ? cur : NULL, seqs > 0 ? sug : "lower",
                     "fewer preemptions (recomputation wastes prefill work)");
    }
}

/* Requests wait for admission: the waiting gauge says so, or (with no gauge worth reading:
 * llama.cpp) the requests offered exceed those running with TTFT late by the difference; or,
 * without any server series, TTFT far beyond its fastest. Queueing needs admitted below offered:
 * a waiting gauge that runs while running equals offered is not believed. */
static void rule_queueing(diag_in *in, json_t *L, json_t *C) {
    const json_t *d = in->doc;
    const json_t *s = in->eng_series ? in->eng_series : srv_series(in);
    const char *pre = in->eng_series ? "engine.series" : "telemetry.server.series";
    char src_w[64], src_k[64];
    snprintf(src_w, sizeof src_w, "%s.waiting", pre);
    snprintf(src_k, sizeof src_k, "%s.%s", pre, in->eng_series ? "kv_usage" : "kv_usage_pct");
    double wait_mean = s ? diag_mean(get(s, "waiting")) : NAN;
    double kv_max = in->eng_series ? diag_max(get(s, "kv_usage")) : s ? diag_max(get(s, "kv_usage_pct")) / 100 : NAN;
    double ttft_med = diag_num(d, METRIC(median_ttft_ms)), ttft_min = diag_num(d, METRIC(min_ttft_ms));
    double ttft = diag_num(d, METRIC(mean_ttft_ms)), e2el = diag_num(d, METRIC(mean_e2el_ms));
    diag_checked(C, "queueing", true, isfinite(in->admitted) ? "requests offered (Little's law on the client's records) vs "
                 "running (server series), waiting gauge, TTFT" : "results.median_ttft_ms vs min_ttft_ms (no server series)");
    if (kv_max >= DIAG_KV_FULL) return;             /* memory stops admission: kv_capacity's finding */
    double gap = in->offered - in->admitted;
    bool gauge = isfinite(wait_mean) && wait_mean >= DIAG_WAITING_MEAN;
    bool contradicted = gauge && isfinite(gap) && gap < DIAG_ADMIT_GAP_MIN && gap < DIAG_ADMIT_GAP * in->offered;
    json_t *f = NULL;
    int cap = in->cap;
    bool at_cap = cap > 0 && in->run_max >= DIAG_SEQS_FULL * cap;
    if ((gauge && !contradicted) || in->queue_by_admission) {
        /* a queue that costs little of the end-to-end time matters less */
        double conf = (at_cap ? 0.85 : 0.7) * (e2el > 0 && ttft / e2el < 0.2 ? 0.6 : 1);
        f = in->queue_bursts ? diag_finding(L, "queueing", conf, "requests queue for admission in bursts: up to %.0f in "
                                            "flight for %d running at most", in->offered_peak, cap)
          : at_cap ? diag_finding(L, "queueing", conf, "requests queue for admission at the running cap (%s %d): %.0f "
                                  "offered, %.0f running", strcmp(in->dep.engine, "llama.cpp") ? "max_num_seqs" : "slots",
                                  cap, in->offered, in->admitted)
                   : diag_finding(L, "queueing", conf, "requests queue for admission: %.0f offered, %.0f running",
                                  in->offered, in->admitted);
        if (isfinite(in->admitted) && in->queue_bursts)
            diag_ev(f, in->offered_peak, "requests", "results.max_concurrent_requests", "up to %.0f requests in flight at "
                    "once (%.1f on average) against %d running at most", in->offered_peak, in->offered, cap);
        else if (isfinite(in->admitted))
            diag_ev(f, gap, "requests", in->admitted_src, "%.1f requests in the server on average (request_throughput x "
                    "mean E2EL), %.1f of them running: %.1f wait for admission", in->offered, in->admitted, gap);
        if (gauge) diag_ev(f, wait_mean, "requests", src_w, "the server's waiting gauge: mean %.1f requests", wait_mean);
        else if (isfinite(wait_mean))
            diag_ev(f, wait_mean, "requests", src_w, "the server's waiting gauge reads a mean of %.1f: it undercounts the requests "
                    "that wait (llama.cpp's requests_deferred)", wait_mean);
        if (isfinite(in->run_max) && cap > 0)
            diag_ev(f, in->run_max, "requests", in->admitted_src, "running stays at %.0f in %.0f%% of the busy samples; the "
                    "cap is %d (%s)", in->run_max, 100 * in->pinned_frac, cap,
                    in->cap_from_evidence ? "read from running pinned at its maximum" : in->cap_src);
        else if (isfinite(in->run_max))
            diag_ev(f, in->run_max, "requests", in->admitted_src, "running max %.0f", in->run_max);
        if (isfinite(kv_max)) diag_ev(f, 100 * kv_max, "%", src_k, "KV usage max %.0f%%: memory is not the limit", 100 * kv_max);
        double t0, t1;
        if (gauge && diag_span(get(s, "t_s"), get(s, "waiting"), DIAG_WAITING_MEAN, &t0, &t1)) diag_window(f, t0, t1);
    } else if (!isfinite(in->admitted) && !isfinite(wait_mean) && ttft_min > 0 && ttft_med >= DIAG_TTFT_WAIT_RATIO * ttft_min) {
        f = diag_finding(L, "queueing", 0.5, "TTFT median is %.1fx its minimum: requests wait inside the server before service",
                         ttft_med / ttft_min);
        diag_ev(f, ttft_med, "ms", "results.median_ttft_ms", "median TTFT %.1f ms vs min %.1f ms", ttft_med, ttft_min);
    }
    if (!f) return;
    double ws = wait_share(d);
    diag_cost(f, isfinite(ws) ? ws : DIAG_COST_UNKNOWN, isfinite(ws) ? "of end-to-end time spent waiting for admission"
                                                                     : "not sized");
    if (ttft_min > 0) diag_ev(f, ttft / ttft_min, "x", "results.mean_ttft_ms / min_ttft_ms", "mean TTFT %.1f ms is %.1fx the "
                              "fastest (%.1f ms)", ttft, ttft / ttft_min, ttft_min);
    if (in->have_roof) diag_ev(f, in->roof_prefill_ms, "ms", "roofline (cost model)", "a %.0f-token prefill alone takes about %.1f ms; "
                               "mean TTFT %.1f ms", in->roof_prompt, in->roof_prefill_ms, ttft);
    if (e2el > 0) diag_ev(f, 100 * ttft / e2el, "%", "results.mean_ttft_ms / mean_e2el_ms", "TTFT is %.0f%% of end-to-end latency",
                          100 * ttft / e2el);
    char cur[16], sug[16];
    int_str(cur, sizeof cur, cap);
    /* no more slots than were ever wanted at once */
    int want = 2 * cap;
    if (in->offered_peak >= 1 && want > in->offered_peak) want = (int)in->offered_peak;
    int_str(sug, sizeof sug, want);
    if (cap > 0 && want > cap)
        diag_setting(in, f, "max_num_seqs", cur, sug, !strcmp(in->dep.engine, "llama.cpp")
                     ? "more requests decode at once; each slot gets -c / -np tokens, so raise -c with it"
                     : "more requests decode at once (if KV memory allows), shorter waits; TPOT grows");
    else if (cap <= 0)
        diag_setting(in, f, "max_num_seqs", NULL, "raise", "more requests decode at once (if KV memory allows), shorter waits");
    diag_knob(f, "replicas", "add", "the queue splits over instances");
    diag_knob(f, "load", "lower", "stay below the knee");
}

/* Prefill takes a large share of end-to-end time. "Compute bound" only when the stage runs near
 * the tensor roofline (the cost model's FLOPs at the GPU's peak against the fastest TTFT) or the
 * tensor pipes are busy; a prefill far below its roofline, or one with no roofline to hold it
 * against, is named as slow, not as compute bound. */
static void rule_prefill(diag_in *in, json_t *L, json_t *C) {
    double tensor = diag_gpu_mean(in, "tensor_util_pct");
    double ttft = diag_num(in->doc, METRIC(mean_ttft_ms)), e2el = diag_num(in->doc, METRIC(mean_e2el_ms));
    double tmin = diag_num(in->doc, METRIC(min_ttft_ms));
    double done = diag_num(in->doc, METRIC(completed)), prompt = done > 0 ? diag_num(in->doc, "total_input_tokens") / done : NAN;
    diag_checked(C, "prefill_compute", true, isfinite(tensor) ? "telemetry tensor_util_pct, results TTFT/E2EL" :
                in->have_roof ? "roofline (cost model) prefill FLOPs at the tensor peak vs results.min_ttft_ms, mean_ttft_ms / mean_e2el_ms" : "results.min_ttft_ms, mean_ttft_ms / mean_e2el_ms (no roofline)");
    /* the prefill's own share: TTFT less the wait for admission the queueing finding owns */
    double share = e2el > 0 ? diag_prefill_ms(in) / e2el : NAN;
    if (!(share >= DIAG_PREFILL_SHARE)) return;
    double near = in->have_roof && tmin > 0 ? in->roof_prefill_compute_ms / tmin : NAN;
    bool roof = near >= DIAG_NEAR_ROOF;
    /* on the host (no GPU), the compute roofline is the cores the server's threads may use: a
     * prefill that keeps them all busy is compute bound there */
    bool on_host = !json_array_size(get(in->tel, "gpu")) && !deploy_has_gpu(&in->dep);   /* no GPU seen or stated */
    const json_t *hs = get(get(in->tel, "host"), "series");
    double scpu = diag_mean(get(hs, "server_cpu_pct")), hcpu = diag_mean(get(hs, "cpu_util_pct"));
    double threads = diag_num(get(get(in->doc, "deployment"), "cpu_threads"), "value");
    double cores = diag_num(get(in->doc, "environment"), "cpus");
    bool host_bound = on_host && threads > 0 && scpu >= 100 * DIAG_NEAR_HOST * threads;
    bool tel = isfinite(tensor) && tensor >= DIAG_TENSOR_HIGH;
    double conf = (tel ? 0.8 : roof ? 0.6 : 0.5) + 0.3 * clamp01((share - DIAG_PREFILL_SHARE) / 0.4);
    char cur[16], sug[16];
    json_t *f;
    if (roof || tel) {
        f = diag_finding(L, "prefill_compute", conf > 0.95 ? 0.95 : conf, "prefill is compute bound and takes %.0f%% of "
                         "end-to-end latency", 100 * share);
    } else if (host_bound) {
        f = diag_finding(L, "prefill_compute", conf > 0.9 ? 0.9 : conf, "prefill is compute bound on the server's %.0f CPU "
                         "thread%s and takes %.0f%% of end-to-end latency", threads, threads == 1 ? "" : "s", 100 * share);
    } else if (isfinite(near)) {
        f = diag_finding(L, "prefill", conf > 0.9 ? 0.9 : conf, "prefill takes %.0f%% of end-to-end latency at %.1f%% of the "
                         "tensor roofline: the engine's prefill path, not the GPU's compute, limits it", 100 * share, 100 * near);
    } else {
        f = diag_finding(L, "prefill", conf > 0.9 ? 0.9 : conf, "prefill takes %.0f%% of end-to-end latency: %.0f-token "
                         "prompts at %.0f tokens/s", 100 * share, prompt, tmin > 0 ? prompt / tmin * 1000 : NAN);
    }
    diag_cost(f, clamp01(share), "of end-to-end latency spent in prefill");
    if (in->have_roof)
        diag_ev(f, 100 * near, "%", "roofline (cost model): prefill FLOPs / tensor peak vs results.min_ttft_ms", "a %.0f-token "
                "prefill needs %.2f ms at the tensor peak; the fastest TTFT measured is %.1f ms (%.1f%% of that roofline)",
                in->roof_prompt, in->roof_prefill_compute_ms, tmin, 100 * near);
    else if (tmin > 0)
        diag_ev(f, prompt / tmin * 1000, "tok/s", "results.total_input_tokens / completed / min_ttft_ms", "the fastest prefill: "
                "%.0f tokens in %.1f ms (no model or GPU for a roofline)", prompt, tmin);
    diag_ev(f, 100 * share, "%", "prefill (diagnose time accounting) / results.mean_e2el_ms", "a prefill of about %.1f ms "
            "(mean TTFT %.1f ms) of mean E2EL %.1f ms", share * e2el, ttft, e2el);
    if (tel) diag_ev(f, tensor, "%", "telemetry.gpu.series.tensor_util_pct", "tensor activity %.0f%%", tensor);
    /* on the host (no GPU): the cores the server got, and whether the host had any to give */
    bool host_full = hcpu >= 90 && isfinite(scpu) && !host_bound;
    if (on_host && isfinite(scpu))
        diag_ev(f, scpu / 100, "cores", "telemetry.host.series.server_cpu_pct, cpu_util_pct", "the server used %.2f CPU cores "
                "on average%s%s while the host's CPUs were %.0f%% busy%s", scpu / 100, threads > 0 ? " of the threads it has: " : "",
                threads > 0 ? (host_bound ? "all of them" : "fewer than its threads") : "", hcpu,
                host_full ? ": other processes hold the cores it could use" : "");
    if (on_host && threads > 0) {
        char tc[16], ts[16];
        snprintf(tc, sizeof tc, "%.0f", threads);
        snprintf(ts, sizeof ts, "%.0f", cores > threads ? cores : 2 * threads);
        json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s,s:s,s:s,s:s}", "knob", "cpu_threads",
            "current", tc, "suggested", ts, "direction", host_bound ? "" : "", "flag", "-t", "effect",
            "a prefill on the host is matrix work on -t threads (only cores the host has free help)"));
        json_t *k = json_array_get(json_object_get(f, "knobs"), json_array_size(json_object_get(f, "knobs")) - 1);
        char dir[64];
        snprintf(dir, sizeof dir, "%s \xe2\x86\x92 %s", tc, ts);
        json_object_set_new(k, "direction", json_string(dir));
    }
    if (roof || tel) {
        if (diag_fp8_compute(in))
            diag_setting(in, f, "weight_dtype", model_dtype_name(in->dep.weight_dtype), "fp8", "twice the tensor rate on Hopper");
        int_str(cur, sizeof cur, in->dep.tp);
        int_str(sug, sizeof sug, 2 * in->dep.tp);
        diag_setting(in, f, "tensor_parallel_size", in->dep.tp_s.assumed ? NULL : cur, in->dep.tp_s.assumed ? "raise" : sug,
                     "prefill FLOPs split over more GPUs");
    } else {
        int mnbt = in->dep.max_num_batched_tokens;
        int_str(cur, sizeof cur, mnbt);
        int_str(sug, sizeof sug, 2 * mnbt);
        /* a larger batch helps only a prompt that does not fit in one step already */
        if (!(mnbt > 0) || prompt > mnbt)
            diag_setting(in, f, "max_num_batched_tokens", mnbt > 0 ? cur : NULL, mnbt > 0 ? sug : "raise",
                         "more prompt tokens per step: a prefill in fewer, larger matrix products");
        if (!strcmp(in->dep.engine, "llama.cpp") && diag_llamacpp_fa_runs(in))
            diag_knob(f, "flash attention", "-fa on", "fused attention over the prompt");
        if (host_full && on_host)
            diag_knob(f, "host CPU", "free cores for the server (or run it alone)", "a prefill on the host needs the cores "
                      "other processes hold");
        else if (!strcmp(in->dep.engine, "llama.cpp") && on_host && !(threads > 0))
            diag_knob(f, "threads", "-t: raise to the host's idle cores", "a prefill on the host is matrix work on -t threads");
        else if (!on_host && strcmp(in->dep.engine, "llama.cpp"))
            diag_knob(f, "prefill kernels", "check (attention backend, MoE GEMM backend)", "the prompt's matrix products run far "
                      "below the tensor peak");
    }
    diag_knob(f, "prefix caching", "enable", "shared prompt prefixes are not recomputed");
}

static void rule_interference(diag_in *in, json_t *L, json_t *C) {
    double itl99 = diag_num(in->doc, METRIC(p99_itl_ms)), itl50 = diag_num(in->doc, METRIC(median_itl_ms));
    double ratio = itl50 > 0 ? itl99 / itl50 : NAN;
    double corr = NAN, step_max = NAN, step_med = NAN;
    if (in->eng_series) {
        const json_t *st = get(in->eng_series, "step_ms"), *bt = get(in->eng_series, "batch_tokens");
        corr = diag_corr(st, bt);
        step_max = diag_max(st);
        step_med = diag_median(st);
    }
    diag_checked(C, "prefill_interference", true, in->eng_series ? "results p99/median ITL, engine.series.step_ms vs batch_tokens"
                                                                : "results p99/median ITL");
    bool spikes = ratio >= DIAG_ITL_SPIKE;
    /* a decode can only stall behind another request's prefill: one request at a time has none */
    if (in->offered_peak <= 1 || (!isfinite(in->offered_peak) && in->offered < 1.5)) {
        if (spikes) diag_checked(C, "prefill_interference", false, "one request in flight at a time: no other request's "
                                 "prefill to stall behind (the ITL tail is the host's)");
        return;
    }
    bool aligned = corr >= DIAG_STEP_CORR && step_max >= DIAG_STEP_SPIKE * step_med;
    if (!spikes) return;
    if (in->eng_series && !aligned) return;
    int chunked = in->dep.chunked_prefill;
    double conf = aligned ? (chunked == 0 ? 0.85 : 0.7) : 0.5;
    json_t *f = diag_finding(L, "prefill_interference", conf, "decode stalls behind prefills: p99 ITL is %.1fx the median",
                             ratio);
    /* the stalls' share of decode time: the mean gap beyond the typical one */
    double itl_mean = diag_num(in->doc, METRIC(mean_itl_ms));
    double lost = itl_mean > 0 && itl50 > 0 ? clamp01((itl_mean - itl50) / itl_mean) : DIAG_COST_UNKNOWN;
    /* of the user's time: the stalls' share of decode, times decode's share of a request */
    double e2el = diag_num(in->doc, METRIC(mean_e2el_ms)), ttft = diag_num(in->doc, METRIC(mean_ttft_ms));
    if (itl_mean > 0 && itl50 > 0 && e2el > 0 && isfinite(ttft))
        diag_cost(f, lost * (e2el - ttft) / e2el, "of end-to-end time spent in decode stalls (mean ITL beyond the median: "
                  "%.0f%% of decode)", 100 * lost);
    else diag_cost(f, lost, "of decode time spent in stalls (mean ITL beyond the median)");
    diag_ev(f, itl99, "ms", "results.p99_itl_ms", "ITL p99 %.1f ms vs median %.1f ms (mean %.1f ms)", itl99, itl50, itl_mean);
    if (aligned) {
        diag_ev(f, corr, NULL, "engine.series.step_ms ~ batch_tokens", "step time follows tokens per step (correlation %.2f)", corr);
        diag_ev(f, step_max, "ms", "engine.series.step_ms", "longest step %.1f ms vs median %.1f ms", step_max, step_med);
    }
    if (chunked == 0)
        diag_ev(f, NAN, NULL, in->dep.chunked_prefill_s.src, "chunked prefill is off: a whole prompt runs in one step");
    diag_setting(in, f, "enable_chunked_prefill", chunked < 0 ? NULL : chunked ? "on" : "off", "on",
                 "prompts run in chunks beside decodes: ITL spikes shrink");
    int mnbt = in->dep.max_num_batched_tokens;
    if (mnbt > 0)
        diag_ev(f, mnbt, "tokens", in->dep.max_num_batched_tokens_s.src, "up to %d tokens per step", mnbt);
    char cur[16], sug[16];
    int_str(cur, sizeof cur, mnbt);
    int_str(sug, sizeof sug, mnbt / 2);
    diag_setting(in, f, "max_num_batched_tokens", mnbt > 0 ? cur : NULL, mnbt > 0 ? sug : "lower",
                 "smaller prefill chunks per step: lower ITL tail, somewhat longer TTFT");
    diag_knob(f, "disaggregated prefill", "consider", "prefill on other GPUs: no decode stalls");
}

/* PCIe traffic against the link's capacity (NVML's generation x width), else a fixed 16 GB/s. */
static void rule_pcie(diag_in *in, json_t *L, json_t *C) {
    if (!get(in->tel, "gpu")) { diag_checked(C, "host_pcie", false, "no GPU telemetry"); return; }
    double rx = diag_gpu_mean(in, "gpm_pcie_rx_mb_s"), tx = diag_gpu_mean(in, "gpm_pcie_tx_mb_s");
    if (!isfinite(rx)) { rx = diag_gpu_mean(in, "pcie_rx_mb_s"); tx = diag_gpu_mean(in, "pcie_tx_mb_s"); }
    if (!isfinite(rx)) { diag_checked(C, "host_pcie", false, "GPU telemetry has no PCIe columns"); return; }
    int gen = 0, width = 0;
    double link = diag_pcie_link_mb_s(in, &gen, &width);
    diag_checked(C, "host_pcie", true, isfinite(link) ? "telemetry.gpu.series PCIe rx/tx MB/s vs the link (NVML generation x width)"
                                                      : "telemetry.gpu.series PCIe rx/tx MB/s (link unknown: fixed 16 GB/s)");
    double sum = rx + (isfinite(tx) ? tx : 0), one_way = isfinite(tx) && tx > rx ? tx : rx;
    double share = isfinite(link) ? one_way / link : NAN;
    if (isfinite(link) ? share < DIAG_PCIE_LINK_FRAC : sum < DIAG_PCIE_MB_S) return;
    json_t *f = diag_finding(L, "host_pcie", 0.6, "heavy host<->GPU traffic: %.1f GB/s over PCIe%s", sum / 1000,
                             isfinite(link) ? " against the link's capacity" : "");
    diag_cost(f, DIAG_COST_UNKNOWN, "not sized (transfers may overlap compute)");
    diag_ev(f, sum, "MB/s", "telemetry.gpu.series.pcie", "PCIe rx %.0f MB/s + tx %.0f MB/s (mean per GPU)", rx, tx);
    if (isfinite(link))
        diag_ev(f, 100 * share, "%", "telemetry.gpu[0].pcie (NVML max link generation and width)", "%.0f%% of a Gen%d x%d "
                "link's %.1f GB/s each way (counts from %.0f%%)", 100 * share, gen, width, link / 1000, 100 * DIAG_PCIE_LINK_FRAC);
    double cur_gen = diag_mean(get(get(json_array_get(get(in->tel, "gpu"), 0), "series"), "pcie_link_gen"));
    if (gen > 0 && isfinite(cur_gen) && cur_gen < gen - 0.5)
        diag_ev(f, cur_gen, "gen", "telemetry.gpu.series.pcie_link_gen", "the link ran at Gen%.1f on average under load, "
                "below the Gen%d it can train to", cur_gen, gen);
    diag_knob(f, "cpu offload / swap space", "remove", "weights or KV moved over PCIe every step are slow");
    diag_knob(f, "PCIe link", "check", "generation and width (nvidia-smi -q), the slot and riser; pinned host memory");
}

static void rule_comm(diag_in *in, json_t *L, json_t *C) {
    double rx = diag_gpu_mean(in, "gpm_nvlink_rx_mb_s"), tx = diag_gpu_mean(in, "gpm_nvlink_tx_mb_s");
    if (!isfinite(rx)) { rx = diag_gpu_mean(in, "nvlink_rx_mb_s"); tx = diag_gpu_mean(in, "nvlink_tx_mb_s"); }
    const hw_gpu *g = deploy_has_gpu(&in->dep) ? hw_find(in->dep.gpu) : NULL;
    bool tel = isfinite(rx) && g && g->link_bytes_per_s > 0;
    bool model = in->have_roof && in->dep.tp > 1;
    if (!tel && !model) { diag_checked(C, "communication", false, "single GPU (tp 1) and no NVLink telemetry"); return; }
    diag_checked(C, "communication", true, tel ? "telemetry NVLink rx/tx vs the GPU catalog's link bandwidth" :
                "roofline (cost model): modelled all-reduce time share of a decode step");
    double frac = tel ? (rx + (isfinite(tx) ? tx : 0)) * 1e6 / g->link_bytes_per_s : NAN;
    bool hit_tel = tel && frac >= DIAG_LINK_FRAC;
    bool hit_model = model && in->roof_comm_share >= DIAG_COMM_SHARE;
    if (!hit_tel && !hit_model) return;
    json_t *f = diag_finding(L, "communication", hit_tel ? 0.65 : 0.5, "GPU-to-GPU communication takes a large share of each step");
    if (hit_model) diag_cost(f, in->roof_comm_share, "of a decode step spent in all-reduce (modelled)");
    else diag_cost(f, DIAG_COST_UNKNOWN, "not sized (link traffic may overlap compute)");
    if (hit_tel) diag_ev(f, 100 * frac, "%", "telemetry.gpu.series.nvlink", "NVLink traffic %.0f%% of %s bandwidth", 100 * frac, g->link_name);
    if (model) diag_ev(f, 100 * in->roof_comm_share, "%", "roofline (cost model)", "all-reduce about %.0f%% of a decode step at tp %d",
                       100 * in->roof_comm_share, in->dep.tp);
    char cur[16], sug[16];
    int_str(cur, sizeof cur, in->dep.tp);
    int_str(sug, sizeof sug, in->dep.tp / 2);
    if (in->dep.tp > 1)
        diag_setting(in, f, "tensor_parallel_size", cur, sug, "fewer all-reduces per token; run more replicas instead");
    diag_knob(f, "expert parallel", "enable for MoE", "all-to-all of tokens instead of all-reduce of activations");
}

static const char *reason_names(long bits, char *buf, size_t len) {
    static const struct { long bit; const char *name; } t[] = {
        {0x4, "SW power cap"}, {0x8, "HW slowdown"}, {0x20, "SW thermal"}, {0x40, "HW thermal"}, {0x80, "power brake"} };
    buf[0] = 0;
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++)
        if (bits & t[i].bit) snprintf(buf + strlen(buf), len - strlen(buf), "%s%s", buf[0] ? ", " : "", t[i].name);
    return buf;
}

static void rule_throttle(diag_in *in, json_t *L, json_t *C) {
    const json_t *gpus = get(in->tel, "gpu");
    if (!json_array_size(gpus)) { diag_checked(C, "throttling", false, "no GPU telemetry"); return; }
    diag_checked(C, "throttling", true, "telemetry.gpu.series.throttled, clock_event_reasons, sm_clock_mhz");
    size_t i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        const json_t *s = get(g, "series");
        double frac = diag_frac_at_least(get(s, "throttled"), 1);
        if (!(frac >= DIAG_THROTTLE_FRAC)) continue;
        long bits = 0;
        size_t k;
        json_t *v;
        json_array_foreach(get(s, "clock_event_reasons"), k, v) if (json_is_integer(v)) bits |= (long)json_integer_value(v);
        char names[128];
        /* a deployment over many nodes: the GPU's host says which one (telemetry from every node) */
        const char *host = json_string_value(get(g, "host"));
        json_t *f = diag_finding(L, "throttling", 0.8, "GPU %lld%s%s clocks were held down %.0f%% of the time",
                                 (long long)json_integer_value(get(g, "index")), host ? " on " : "", host ? host : "", 100 * frac);
        diag_ev(f, 100 * frac, "%", "telemetry.gpu.series.throttled", "throttled in %.0f%% of samples (%s)", 100 * frac,
                reason_names(bits, names, sizeof names));
        double clk = diag_mean(get(s, "sm_clock_mhz")), clk_max = diag_num(g, "sm_clock_max_mhz");
        if (isfinite(clk)) diag_ev(f, clk, "MHz", "telemetry.gpu.series.sm_clock_mhz", "SM clock mean %.0f MHz of max %.0f MHz", clk, clk_max);
        diag_cost(f, clk_max > 0 && clk > 0 ? clamp01(1 - clk / clk_max) : DIAG_COST_UNKNOWN, "of the SM clock lost to throttling");
        double t0, t1;
        if (diag_span(get(s, "t_s"), get(s, "throttled"), 1, &t0, &t1)) diag_window(f, t0, t1);
        diag_knob(f, "cooling / power limit", "check", "nvidia-smi -q -d PERFORMANCE,POWER,TEMPERATURE; clocks recover");
        diag_knob(f, "benchmark result", "distrust", "a throttled run under-states what the GPU can do");
    }
}

static void rule_numa(diag_in *in, json_t *L, json_t *C) {
    const json_t *numa = get(get(in->tel, "host"), "numa");
    if (!numa) { diag_checked(C, "cross_numa", false, "no host NUMA telemetry"); return; }
    diag_checked(C, "cross_numa", true, "telemetry.host.numa");
    if (!json_is_true(get(numa, "cross_numa"))) return;
    json_t *f = diag_finding(L, "cross_numa", 0.75, "the server runs across NUMA nodes from its GPUs");
    diag_cost(f, DIAG_COST_UNKNOWN, "not sized (host-side copies cross the socket link)");
    const char *why = json_string_value(get(numa, "why"));
    diag_ev(f, NAN, NULL, "telemetry.host.numa.why", "%s", why ? why : "cross_numa = true");
    double off = diag_num(get(numa, "server"), "mem_off_gpu_node_pct");
    if (isfinite(off)) diag_ev(f, off, "%", "telemetry.host.numa.server.mem_off_gpu_node_pct",
                               "%.0f%% of the server's memory on a node without its GPUs", off);
    diag_knob(f, "numactl", "--cpunodebind=N --membind=N", "N = the GPUs' node: host-side copies stay local");
}

/* Request classes (bench --class): one tenant misses its SLO while another meets its own. Which
 * SLO it misses, and who holds the server's slots and tokens, say whether it waits for admission
 * behind the other tenant or has its decode stretched by the other's prefills. */
typedef struct {
    const char *name;
    double good, total, p99_ttft, med_ttft, p99_tpot, slo_ttft, slo_tpot, in_mean, out_tokens;
} class_view;

static void rule_tenants(diag_in *in, json_t *L, json_t *C) {
    const json_t *arr = get(in->doc, "classes");
    size_t n = json_array_size(arr);
    if (n < 2) return;                  /* one class: nothing to weigh against */
    diag_checked(C, "tenants", true, "results.classes[]: good requests under each class's SLO, p99 TTFT/TPOT, "
                "prompt lengths, shares of requests and output tokens");
    class_view v[16];
    size_t m = 0;
    double all_req = 0, all_out = 0;
    for (size_t i = 0; i < n && m < 16; i++) {
        const json_t *c = json_array_get(arr, i), *slo = get(c, "goodput_slo");
        class_view *x = &v[m++];
        x->name = json_string_value(get(c, "class"));
        x->total = diag_num(c, METRIC(completed)) + diag_num(c, METRIC(failed));
        x->good = slo ? diag_num(c, "good_requests") : NAN;
        x->p99_ttft = diag_num(c, METRIC(p99_ttft_ms));
        x->med_ttft = diag_num(c, METRIC(median_ttft_ms));
        x->p99_tpot = diag_num(c, METRIC(p99_tpot_ms));
        x->slo_ttft = diag_num(slo, "ttft_ms");
        x->slo_tpot = diag_num(slo, "tpot_ms");
        x->in_mean = diag_num(c, METRIC(completed)) > 0 ? diag_num(c, "total_input_tokens") / diag_num(c, METRIC(completed)) : NAN;
        x->out_tokens = diag_num(c, "total_output_tokens");
        if (isfinite(x->total)) all_req += x->total;
        if (isfinite(x->out_tokens)) all_out += x->out_tokens;
    }
    class_view *worst = NULL, *best = NULL;
    for (size_t i = 0; i < m; i++) {
        if (!(v[i].total > 0) || !isfinite(v[i].good)) continue;
        double g = v[i].good / v[i].total;
        if (!worst || g < worst->good / worst->total) worst = &v[i];
        if (!best || g > best->good / best->total) best = &v[i];
    }
    if (!worst || worst == best) return;
    double gw = worst->good / worst->total, gb = best->good / best->total;
    if (!(gw < DIAG_CLASS_MISS && gb >= DIAG_CLASS_MEET)) return;
    bool ttft_miss = isfinite(worst->slo_ttft) && worst->p99_ttft > worst->slo_ttft;
    bool tpot_miss = isfinite(worst->slo_tpot) && worst->p99_tpot > worst->slo_tpot;
    json_t *f = diag_finding(L, "tenants", 0.75, "request class '%s' misses its SLO (%.0f%% of requests good) while '%s' "
                             "meets its own (%.0f%%)", worst->name, 100 * gw, best->name, 100 * gb);
    diag_cost(f, all_req > 0 ? (1 - gw) * worst->total / all_req : DIAG_COST_UNKNOWN, "of all requests: the missing class's "
              "requests outside its SLO");
    for (size_t i = 0; i < m; i++) {
        class_view *x = &v[i];
        char slo[96] = "no SLO", part[48];
        if (isfinite(x->slo_ttft) || isfinite(x->slo_tpot)) {
            snprintf(slo, sizeof slo, "SLO");
            if (isfinite(x->slo_ttft)) { snprintf(part, sizeof part, " TTFT %g ms", x->slo_ttft); strncat(slo, part, sizeof slo - strlen(slo) - 1); }
            if (isfinite(x->slo_tpot)) { snprintf(part, sizeof part, "%s TPOT %g ms", isfinite(x->slo_ttft) ? "," : "", x->slo_tpot); strncat(slo, part, sizeof slo - strlen(slo) - 1); }
        }
        char src[96];
        snprintf(src, sizeof src, "results.classes[%zu]", i);
        diag_ev(f, isfinite(x->good) ? 100 * x->good / x->total : NAN, "%", src,
                "'%s': %s%.0f%% good (%s), p99 TTFT %.1f ms, p99 TPOT %.2f ms, prompts %.0f tokens, %.0f%% of requests, "
                "%.0f%% of output tokens", x->name, isfinite(x->good) ? "" : "-", isfinite(x->good) ? 100 * x->good / x->total : 0,
                slo, x->p99_ttft, x->p99_tpot, x->in_mean, all_req > 0 ? 100 * x->total / all_req : NAN,
                all_out > 0 ? 100 * x->out_tokens / all_out : NAN);
    }
    /* a first-come scheduler gives every class the same wait: equal median TTFTs say so */
    if (ttft_miss && best->med_ttft > 0 && fabs(worst->med_ttft / best->med_ttft - 1) < 0.25)
        diag_ev(f, worst->med_ttft, "ms", "results.classes[].median_ttft_ms", "'%s' waits as long as '%s' for its first token "
                "(median %.1f vs %.1f ms): the server admits them first come, first served", worst->name, best->name,
                worst->med_ttft, best->med_ttft);
    if (ttft_miss) {
        diag_knob(f, "priority", "raise for the strict class", "vLLM --scheduling-policy priority with a per-request priority: "
                  "it is admitted ahead of the loose class");
        diag_knob(f, "routing", "separate replicas per class", "the loose class's long generations stop holding the strict "
                  "class's slots");
        char cur[16], sug[16];
        int_str(cur, sizeof cur, in->dep.max_num_seqs);
        int_str(sug, sizeof sug, 2 * in->dep.max_num_seqs);
        diag_setting(in, f, "max_num_seqs", in->dep.max_num_seqs > 0 ? cur : NULL, in->dep.max_num_seqs > 0 ? sug : "raise",
                     "more slots, shorter waits for everyone (if KV memory allows)");
    }
    if (tpot_miss) {
        char cur[16], sug[16];
        int mnbt = in->dep.max_num_batched_tokens;
        int_str(cur, sizeof cur, mnbt);
        int_str(sug, sizeof sug, mnbt / 2);
        diag_setting(in, f, "max_num_batched_tokens", mnbt > 0 ? cur : NULL, mnbt > 0 ? sug : "lower",
                     "with chunked prefill, another class's long prefills are cut into smaller chunks per step, so decode "
                     "steps stay short");
        if (!ttft_miss) diag_knob(f, "routing", "separate replicas per class", "prefill-heavy and latency-bound tenants stop sharing steps");
    }
    diag_knob(f, "load", "rate-limit the class that holds the server", "the other's tail comes back");
}

void diag_rules(diag_in *in, json_t *list, json_t *checked) {
    diag_rule_errors(in, list, checked);
    rule_client(in, list, checked);
    rule_kv(in, list, checked);
    rule_queueing(in, list, checked);
    diag_rule_prefix_cache(in, list, checked);
    bool wrong = diag_rule_deployment(in, list, checked);
    diag_roof_rules(in, list, checked);
    /* a deployment that is not what it should be explains the slow steps: no "engine overhead" */
    for (size_t i = 0; wrong && i < json_array_size(list);)
        if (!strcmp(json_string_value(get(json_array_get(list, i), "class")), "engine_overhead")) json_array_remove(list, i);
        else i++;
    rule_prefill(in, list, checked);
    rule_interference(in, list, checked);
    rule_tenants(in, list, checked);
    rule_pcie(in, list, checked);
    rule_comm(in, list, checked);
    rule_throttle(in, list, checked);
    rule_numa(in, list, checked);
    diag_longctx_rules(in, list, checked);
    diag_gpu_split_rules(in, list, checked);
}
