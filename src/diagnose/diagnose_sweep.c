/* diagnose_sweep — a sweep is diagnosed level by level, then read as a whole: per class the finding
 * that costs the most is kept, with every load where the class fired; what holds at every load
 * (decode far below its roofline while the GPU's pipes idle) becomes one finding with the scaling
 * evidence (throughput gain against load gain, step time against the roofline's at each load).
 * Levels whose requests outlasted them are not measurements and are skipped. */
#include "diagnose/diagnose_int.h"
#include "metrics/metric_table.h"
#include "sweep/sweep.h"
#include "sweep/context.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_LEVELS 256

typedef struct {
    double load, tput, eff, achieved, bound, step_ms, floor_ms, batch, context, ttft50, prompt, decode_share;
    bool roof, overhead, pipes;
    double dram, tensor, sm, util, cpu;
    double accept, accept_chunks;   /* tokens per decode step (metrics/accept.h) and the decode chunks behind it */
    const char *accept_src;
} level_facts;

static double gpu_mean(const json_t *res, const char *col) {
    double s = 0;
    int n = 0;
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(json_object_get(res, "telemetry"), "gpu"), i, g) {
        double m = diag_mean(json_object_get(json_object_get(g, "series"), col));
        if (isfinite(m)) { s += m; n++; }
    }
    return n ? s / n : NAN;
}

static const json_t *find_class(const json_t *list, const char *cls) {
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f) if (!strcmp(json_string_value(json_object_get(f, "class")), cls)) return f;
    return NULL;
}

static void facts_of(level_facts *x, double load, const json_t *res, const json_t *dg) {
    memset(x, 0, sizeof *x);
    x->load = load;
    x->tput = diag_num(res, METRIC(output_throughput));
    const json_t *r = json_object_get(dg, "roofline");
    x->roof = json_is_true(json_object_get(r, "valid"));
    x->eff = diag_num(r, "efficiency");
    x->achieved = diag_num(r, "decode_tokens_per_s");
    x->bound = diag_num(r, "bound_tokens_per_s");
    x->step_ms = diag_num(r, "decode_step_ms_measured");
    x->floor_ms = diag_num(r, "decode_step_ms_floor");
    x->batch = diag_num(r, "batch");
    x->context = diag_num(r, "context");
    x->ttft50 = diag_num(res, METRIC(median_ttft_ms));
    x->prompt = diag_num(res, METRIC(completed)) > 0 ? diag_num(res, "total_input_tokens") / diag_num(res, METRIC(completed)) : NAN;
    double e2el = diag_num(res, METRIC(mean_e2el_ms)), ttft = diag_num(res, METRIC(mean_ttft_ms)), q = diag_num(res, METRIC(mean_queue_ms));
    x->decode_share = e2el > 0 && isfinite(ttft) ? (e2el - ttft) / (e2el + (q > 0 ? q : 0)) : 1;
    const json_t *eo = find_class(json_object_get(dg, "findings"), "engine_overhead");
    x->overhead = eo && json_number_value(json_object_get(eo, "confidence")) >= 0.6;
    x->dram = gpu_mean(res, "dram_bw_util_pct");
    x->tensor = gpu_mean(res, "tensor_util_pct");
    x->sm = gpu_mean(res, "sm_util_pct");
    x->util = gpu_mean(res, "util_gpu_pct");
    x->cpu = diag_mean(json_object_get(json_object_get(json_object_get(json_object_get(res, "telemetry"), "host"), "series"),
                                       "server_cpu_pct"));
    x->pipes = isfinite(x->dram) && x->dram < DIAG_PIPES_IDLE && (!isfinite(x->tensor) || x->tensor < DIAG_PIPES_IDLE);
    /* acceptance: the server's own count where it gave one, else the stream's */
    const json_t *sd = json_object_get(res, "spec_decode");
    x->accept = diag_num(json_object_get(sd, "server"), "acceptance_length");
    x->accept_chunks = diag_num(json_object_get(sd, "server"), "steps");
    x->accept_src = "levels[].results.spec_decode.server.acceptance_length";
    if (!isfinite(x->accept)) {
        x->accept = diag_num(sd, "mean_acceptance_length");
        x->accept_chunks = diag_num(sd, "decode_chunks");
        x->accept_src = "levels[].results.spec_decode.mean_acceptance_length";
    }
}

/* Speculative decoding (MTP) whose acceptance falls as load grows: each step verifies fewer of its
 * drafts, so the drafts' cost (the MTP module's passes, the verify tokens) buys less while the
 * batch grows. Named when the highest load's tokens per step are at least DIAG_ACCEPT_DROP below
 * the lowest load's, both from at least 20 decode steps. The cost: the share of tokens per step
 * lost, which TPOT pays at the same step time. */
#define DIAG_ACCEPT_DROP 0.10
static json_t *acceptance_collapse(const level_facts *F, size_t n, json_t *loads_out) {
    const level_facts *lo = NULL, *hi = NULL;
    for (size_t i = 0; i < n; i++) {
        if (!(F[i].accept >= 1) || !(F[i].accept_chunks >= 20)) continue;
        if (!lo || F[i].load < lo->load) lo = &F[i];
        if (!hi || F[i].load > hi->load) hi = &F[i];
    }
    if (!lo || !hi || lo == hi || !(lo->accept > 1) || hi->accept > lo->accept * (1 - DIAG_ACCEPT_DROP)) return NULL;
    json_t *list = json_array();
    double drop = 1 - hi->accept / lo->accept;
    json_t *f = diag_finding(list, "spec_acceptance", drop >= 0.25 ? 0.8 : 0.6,
                             "speculative decoding's acceptance collapses with load: %.2f tokens a step at load %g, "
                             "%.2f at load %g", lo->accept, lo->load, hi->accept, hi->load);
    char line[512] = "", part[48];
    for (size_t i = 0; i < n; i++) {
        if (!(F[i].accept >= 1)) continue;
        snprintf(part, sizeof part, "%s%.2f at %g", line[0] ? ", " : "", F[i].accept, F[i].load);
        strncat(line, part, sizeof line - strlen(line) - 1);
        json_array_append_new(loads_out, json_real(F[i].load));
    }
    diag_ev(f, hi->accept, "tokens/step", hi->accept_src, "tokens per decode step by load: %s (%.0f%% fewer at the "
            "highest load)", line, 100 * drop);
    diag_cost(f, drop, "of the tokens per decode step at the lowest load, lost at the highest: TPOT pays it");
    diag_knob(f, "num_speculative_tokens", "lower at high load",
              "fewer drafts a step: less verify and draft work where most are rejected");
    diag_knob(f, "speculative decoding", "off above the load where it stops paying",
              "vLLM/SGLang can disable drafting past a batch size (vLLM speculative_config disable_by_batch_size)");
    json_incref(f);
    json_decref(list);
    return f;
}

static void range(const level_facts *F, size_t n, size_t off, double *lo, double *hi) {
    *lo = INFINITY;
    *hi = -INFINITY;
    for (size_t i = 0; i < n; i++) {
        double v = *(const double *)((const char *)&F[i] + off);
        if (!isfinite(v)) continue;
        if (v < *lo) *lo = v;
        if (v > *hi) *hi = v;
    }
}

/* Least-squares slope of y on x over the levels that have both. */
static double slope(const level_facts *F, size_t n, size_t xo, size_t yo) {
    double sx = 0, sy = 0, sxx = 0, sxy = 0;
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        double x = *(const double *)((const char *)&F[i] + xo), y = *(const double *)((const char *)&F[i] + yo);
        if (!isfinite(x) || !isfinite(y)) continue;
        sx += x; sy += y; sxx += x * x; sxy += x * y; k++;
    }
    double d = k * sxx - sx * sx;
    return k >= 2 && d > 0 ? (k * sxy - sx * sy) / d : NAN;
}

/* The same finding, read across every load: decode far below its roofline (or the GPU's pipes
 * idle) at each of them, and throughput that grows much less than the load. */
static json_t *overhead_everywhere(const level_facts *F, size_t n, const json_t *per_level, const json_t *scaling,
                                   bool length, double story_load, double *fixed_ms, double *per_seq_ms) {
    bool roof = true, pipes = true;
    for (size_t i = 0; i < n; i++) {
        if (!F[i].overhead) return NULL;
        roof &= F[i].roof && F[i].eff < DIAG_OVERHEAD_EFF;
        pipes &= F[i].pipes;
    }
    if (!roof && !pipes) return NULL;
    size_t best = 0;
    for (size_t i = 1; i < n; i++) if (F[i].tput > F[best].tput) best = i;
    double lo, hi;
    json_t *list = json_array(), *f;
    if (roof) {
        range(F, n, offsetof(level_facts, eff), &lo, &hi);
        /* how a step's time grows with the batch: a fixed part and a part per sequence (a load
         * ladder only: along a length ladder the batch barely moves and the context does) */
        double b = length ? NAN : slope(F, n, offsetof(level_facts, batch), offsetof(level_facts, step_ms));
        double a = isfinite(b) ? F[0].step_ms - b * F[0].batch : NAN;
        if (isfinite(a) && a > 0 && b >= 0) {
            *fixed_ms = a;
            /* what a sequence costs beyond the bytes it adds to the stream */
            double bf = slope(F, n, offsetof(level_facts, batch), offsetof(level_facts, floor_ms));
            *per_seq_ms = isfinite(bf) ? b - bf : b;
        }
        if (!length && isfinite(a) && a > 0 && b >= 0)
            f = diag_finding(list, "engine_overhead", pipes ? 0.9 : 0.8, "the engine's own work per step, not the GPU, limits "
                             "this deployment: a decode step costs %.1f ms fixed + %.2f ms per sequence, at %.1f-%.1f%% of the "
                             "HBM roofline at every load (%g to %g)", a, b, 100 * lo, 100 * hi, F[0].load, F[n - 1].load);
        else
            f = diag_finding(list, "engine_overhead", pipes ? 0.9 : 0.8, "the engine's own work per step, not the GPU, limits "
                             "this deployment: decode runs at %.1f-%.1f%% of the HBM roofline at every %s (%g to %g)", 100 * lo,
                             100 * hi, length ? "length" : "load", F[0].load, F[n - 1].load);
        /* the user's time it costs: decode's share beyond what HBM needs, at the level that costs most */
        size_t worst = n - 1;
        for (size_t i = 0; i < n; i++) if (F[i].load == story_load) worst = i;
        diag_cost(f, F[worst].decode_share * (1 - F[worst].eff), "of end-to-end time at %s %g: decode beyond what HBM "
                  "streaming needs", length ? "length" : "load", F[worst].load);
        char line[512] = "", part[48];
        for (size_t i = 0; i < n; i++) {
            snprintf(part, sizeof part, "%s%.1f%% at %g", i ? ", " : "", 100 * F[i].eff, F[i].load);
            strncat(line, part, sizeof line - strlen(line) - 1);
        }
        diag_ev(f, 100 * F[best].eff, "%", "levels[]: batch / mean_tpot_ms vs roofline (cost model)", "decode throughput vs "
                "its HBM roofline: %s", line);
    } else {
        range(F, n, offsetof(level_facts, dram), &lo, &hi);
        f = diag_finding(list, "engine_overhead", 0.7, "the GPU's memory and tensor pipes idle at every %s (%g to %g): the "
                         "engine's overhead, not the GPU, limits this deployment", length ? "length" : "load", F[0].load,
                         F[n - 1].load);
        diag_cost(f, 1 - F[best].dram / 100, "of the GPU's DRAM bandwidth unused at the best level (load %g)", F[best].load);
    }
    double tg = json_number_value(json_object_get(scaling, "throughput_gain"));
    double lg = json_number_value(json_object_get(scaling, "load_gain"));
    if (tg > 0 && lg > 0 && !length)
        diag_ev(f, tg, "x", "levels[].results.output_throughput", "output throughput grew %.1fx (%.0f to %.0f tok/s) for %.0fx "
                "the load (%g to %g)", tg, F[0].tput, F[n - 1].tput, lg, F[0].load, F[n - 1].load);
    if (roof) {
        diag_ev(f, F[0].step_ms, "ms", "results.mean_tpot_ms vs bytes per step / HBM bandwidth", "at %s %g a decode step "
                "takes %.1f ms; streaming its weights and KV from HBM takes %.3f ms", length ? "length" : "load", F[0].load,
                F[0].step_ms, F[0].floor_ms);
        if (!length) {
            double s_meas = slope(F, n, offsetof(level_facts, batch), offsetof(level_facts, step_ms));
            double s_floor = slope(F, n, offsetof(level_facts, batch), offsetof(level_facts, floor_ms));
            double a = isfinite(s_meas) ? F[0].step_ms - s_meas * F[0].batch : NAN;
            if (isfinite(s_meas) && isfinite(s_floor) && s_meas >= 0)
                diag_ev(f, s_meas, "ms", "levels[]: mean_tpot_ms against the batch", "each added sequence adds %.2f ms to a step; "
                        "at the roofline it would add %.4f ms", s_meas, s_floor);
            if (isfinite(a) && a > 0 && s_meas >= 0) {
                double at_best = a + s_meas * F[best].batch;
                diag_ev(f, a, "ms", "levels[]: mean_tpot_ms against the batch (intercept)", "the fixed part of a step, %.1f ms, is "
                        "%.0f%% of the step at load %g and %.0f%% at load %g (batch %.1f): %s", a, 100 * a / F[0].step_ms,
                        F[0].load, 100 * a / at_best, F[best].load, F[best].batch,
                        a / at_best >= DIAG_FIXED_DOMINATES ? "the fixed per-step cost dominates"
                                                            : "at high load the per-sequence cost dominates");
            }
        } else {
            double s_meas = slope(F, n, offsetof(level_facts, context), offsetof(level_facts, step_ms));
            double s_floor = slope(F, n, offsetof(level_facts, context), offsetof(level_facts, floor_ms));
            if (isfinite(s_meas) && isfinite(s_floor))
                diag_ev(f, 1000 * s_meas, "ms", "levels[]: mean_tpot_ms against the context", "each 1k tokens of context adds "
                        "%.3f ms to a decode step; streaming its KV at HBM peak adds %.4f ms", 1000 * s_meas, 1000 * s_floor);
        }
    }
    double a, b, c, d, e, g, u, v;
    range(F, n, offsetof(level_facts, dram), &a, &b);
    range(F, n, offsetof(level_facts, tensor), &c, &d);
    range(F, n, offsetof(level_facts, sm), &e, &g);
    range(F, n, offsetof(level_facts, util), &u, &v);
    char gpm[160];
    if (isfinite(a) && isfinite(u))
        diag_ev(f, b, "%", "levels[].telemetry.gpu.series: dram_bw_util_pct, tensor_util_pct, sm_util_pct, util_gpu_pct",
                "%s (GPM) while NVML utilization reads %.0f-%.0f%% (it counts time with any kernel running)",
                diag_gpm_text(gpm, sizeof gpm, a, b, c, d, e, g), u, v);
    range(F, n, offsetof(level_facts, cpu), &a, &b);
    if (isfinite(a) && a >= 80)
        diag_ev(f, a, "%", "levels[].telemetry.host.series.server_cpu_pct", "the server process keeps %.0f-%.0f%% of a CPU "
                "core busy at every load: its host-side loop runs every step", a, b);
    if (tg > 0 && lg > 0 && tg < 0.5 * lg && !length)
        diag_knob(f, "load", "hold", "more users buy little throughput here and cost every user latency");
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(per_level, "knobs"), i, k) json_array_append(json_object_get(f, "knobs"), k);
    json_incref(f);
    json_decref(list);
    return f;
}

/* A context ladder's own evidence for prefill: the cost per 1k prompt tokens at each length. A
 * cost per token that grows with the prompt is attention's part, quadratic in the prompt. */
static void context_prefill_evidence(json_t *best, const level_facts *F, size_t n) {
    static const char *const classes[] = { "prefill", "prefill_compute" };
    for (int c = 0; c < 2; c++) {
        json_t *f = json_object_get(best, classes[c]);
        if (!f) continue;
        char line[512] = "", part[64];
        double lo = NAN, hi = NAN;
        for (size_t i = 0; i < n; i++) {
            if (!(F[i].prompt > 0) || !isfinite(F[i].ttft50)) continue;
            double per_k = F[i].ttft50 / (F[i].prompt / 1000);
            if (isnan(lo)) lo = per_k;
            hi = per_k;
            snprintf(part, sizeof part, "%s%.0f ms at %.0f", line[0] ? ", " : "", per_k, F[i].prompt);
            strncat(line, part, sizeof line - strlen(line) - 1);
        }
        if (!line[0]) continue;
        diag_ev(f, hi / lo, "x", "levels[]: median_ttft_ms per 1k prompt tokens", "median TTFT per 1k prompt tokens: %s "
                "(%.1fx from the shortest to the longest%s)", line, hi / lo,
                hi / lo >= 1.2 ? ": attention's cost, quadratic in the prompt, grows with it" : ": about linear in the prompt");
    }
}

/* What limits the deployment at its capacity comes first: with a knee, a finding that fired only
 * at loads below it (a small batch's cost per token, say) describes a regime the deployment leaves
 * as load grows, so it ranks after those that hold at the knee or above, and says so; without a
 * knee, after those that hold at the highest load (the longest length of a context ladder). */
static json_t *at_the_story_first(json_t *ranked, double story_load, bool knee, bool length) {
    if (!isfinite(story_load)) return ranked;
    json_t *at = json_array(), *below = json_array();
    size_t i, k;
    json_t *f, *l;
    json_array_foreach(ranked, i, f) {
        bool holds = json_array_size(json_object_get(f, "levels")) == 0;
        json_array_foreach(json_object_get(f, "levels"), k, l)
            holds |= knee ? json_number_value(l) >= story_load : json_number_value(l) == story_load;
        if (!holds) {
            char t[600];
            snprintf(t, sizeof t, "%s (%s)", json_string_value(json_object_get(f, "title")), knee ? "below the knee only" :
                     length ? "not at the longest length" : "not at the highest load");
            json_object_set_new(f, "title", json_string(t));
            json_object_set_new(f, knee ? "below_knee" : "not_at_story_level", json_true());
        }
        json_array_append(holds ? at : below, f);
    }
    json_array_extend(at, below);
    json_decref(below);
    json_decref(ranked);
    return at;
}

/* The fixed per-step cost the sweep measured (how step time grows with the batch) goes into the
 * reference level's step accounting, and what it explains leaves "unexplained". */
static void add_fixed_cost(json_t *tm, double fixed_ms, double per_seq_ms, double batch) {
    json_t *st = json_object_get(tm, "decode_step");
    double step = diag_num(tm, "decode_step_ms");
    if (!isfinite(fixed_ms) || !json_is_array(st) || !(step > 0)) return;
    size_t i;
    json_t *p;
    json_array_foreach(st, i, p) if (!strcmp(json_string_value(json_object_get(p, "part")), "fixed per-step cost")) return;
    json_t *last = json_array_get(st, json_array_size(st) - 1);
    double left = diag_num(last, "ms") - fixed_ms;
    if (left < 0) { fixed_ms += left; left = 0; }
    json_array_insert_new(st, json_array_size(st) - 1, json_pack("{s:s,s:f,s:f,s:s,s:s}", "part", "fixed per-step cost",
        "ms", round(fixed_ms * 1000) / 1000, "share", round(fixed_ms / step * 1000) / 1000, "bound", "engine's own",
        "source", "levels[]: mean_tpot_ms against the batch (intercept)"));
    double ps = per_seq_ms * batch;
    if (isfinite(ps) && ps > 0) {
        if (ps > left) ps = left;
        left -= ps;
        json_array_insert_new(st, json_array_size(st) - 1, json_pack("{s:s,s:f,s:f,s:s,s:s}", "part",
            "per-sequence cost beyond streaming", "ms", round(ps * 1000) / 1000, "share", round(ps / step * 1000) / 1000,
            "bound", "engine's own", "source", "levels[]: slope of mean_tpot_ms against the batch x batch"));
    }
    json_object_set_new(last, "ms", json_real(round(left * 1000) / 1000));
    json_object_set_new(last, "share", json_real(round(left / step * 1000) / 1000));
}

static json_t *scaling_json(const level_facts *F, size_t n) {
    json_t *loads = json_array(), *tput = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(loads, json_real(F[i].load));
        json_array_append_new(tput, isfinite(F[i].tput) ? json_real(F[i].tput) : json_null());
    }
    double tg = n >= 2 && F[0].tput > 0 ? F[n - 1].tput / F[0].tput : NAN;
    double lg = n >= 2 && F[0].load > 0 ? F[n - 1].load / F[0].load : NAN;
    return json_pack("{s:o,s:o,s:o,s:o}", "loads", loads, METRIC(output_throughput), tput,
                     "throughput_gain", isfinite(tg) ? json_real(tg) : json_null(), "load_gain", isfinite(lg) ? json_real(lg) : json_null());
}

/* Keeps per class the finding that costs the most (then the most confident, then the lowest load)
 * and the loads where it fired. */
static void merge(json_t *best, json_t *where, const json_t *list, double load, double story_load) {
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f) {
        const char *c = json_string_value(json_object_get(f, "class"));
        const json_t *have = json_object_get(best, c);
        const json_t *fc = json_object_get(f, "cost"), *hc = json_object_get(have, "cost");
        double cf = json_number_value(json_object_get(f, "confidence"));
        double ch = have ? json_number_value(json_object_get(have, "confidence")) : -1;
        double sf = json_number_value(json_object_get(fc, "lost_frac")) * cf;
        double sh = have ? json_number_value(json_object_get(hc, "lost_frac")) * ch : -1;
        /* the story's level (the knee, else the highest load) speaks for its class: costs are
         * compared where the deployment is pushed, not each at its own worst */
        bool have_story = have && json_number_value(json_object_get(have, "level")) == story_load;
        if (load == story_load ? true : !have_story && (!have || sf > sh || (sf == sh && cf > ch)))
            json_object_set(best, c, f);
        json_t *w = json_object_get(where, c);
        if (!w) { w = json_array(); json_object_set_new(where, c, w); }
        json_array_append_new(w, json_real(load));
    }
}

static json_t *collect(json_t *best, json_t *where) {
    json_t *list = json_array();
    const char *k;
    json_t *f;
    json_object_foreach(best, k, f) {
        json_object_set(f, "levels", json_object_get(where, k));
        json_array_append(list, f);
    }
    return list;
}

json_t *diag_sweep(const json_t *doc, const diagnose_opts *o, char *err, size_t errlen) {
    const json_t *levels = json_object_get(doc, "levels"), *knee = json_object_get(doc, "knee");
    double ref_load = json_is_object(knee) ? diag_num(knee, "load") : NAN, best_tput = -1;
    size_t i;
    json_t *lv;
    if (!isfinite(ref_load))
        json_array_foreach(levels, i, lv) {
            double t = diag_num(json_object_get(lv, "results"), METRIC(output_throughput));
            if (sweep_level_measured(lv) && t > best_tput) { best_tput = t; ref_load = diag_num(lv, "load"); }
        }
    json_t *best = json_object(), *where = json_object(), *cbest = json_object(), *cwhere = json_object();
    json_t *ref = NULL, *overhead_level = NULL, *skipped = json_array(), *warnings = json_array();
    const char *axis = json_string_value(json_object_get(doc, "axis"));
    bool length = sweep_axis_is_length(axis);
    /* percentiles of few samples: one warning for the sweep, naming the levels */
    char few[400] = "";
    size_t n_few = 0;
    level_facts F[MAX_LEVELS];
    size_t n = 0;
    /* the level a sweep's story is told at: its knee, else its highest measured load */
    double story_load = json_is_object(knee) ? ref_load : NAN;
    if (!isfinite(story_load))
        json_array_foreach(levels, i, lv)
            if (sweep_level_measured(lv) && !(diag_num(lv, "load") <= story_load)) story_load = diag_num(lv, "load");
    json_array_foreach(levels, i, lv) {
        double load = diag_num(lv, "load");
        /* the sweep's own rule: a level where every request failed on the server is measured */
        if (!sweep_level_measured(lv)) { json_array_append_new(skipped, json_real(load)); continue; }
        const json_t *res = json_object_get(lv, "results");
        json_t *d = diag_results(res, o, load, err, errlen);
        if (!d) {
            json_decref(best); json_decref(where); json_decref(cbest); json_decref(cwhere); json_decref(ref); json_decref(skipped);
            json_decref(overhead_level); json_decref(warnings);
            return NULL;
        }
        size_t wi;
        json_t *w;
        json_array_foreach(json_object_get(d, "warnings"), wi, w) {
            if (strcmp(json_string_value(json_object_get(w, "kind")), "few_samples")) { json_array_append(warnings, w); continue; }
            size_t at = strlen(few);
            if (at < sizeof few - 32)
                snprintf(few + at, sizeof few - at, "%s%g (%.0f)", n_few ? ", " : "", load, diag_num(w, "requests"));
            n_few++;
        }
        merge(best, where, json_object_get(d, "findings"), load, story_load);
        merge(cbest, cwhere, json_object_get(d, "configuration"), load, story_load);
        if (n < MAX_LEVELS) facts_of(&F[n++], load, res, d);
        const json_t *eo = find_class(json_object_get(d, "findings"), "engine_overhead");
        if (eo && !overhead_level) overhead_level = json_incref((json_t *)eo);
        if (load == ref_load && !ref) ref = json_incref(d);
        json_decref(d);
    }
    json_t *scaling = scaling_json(F, n);
    double fixed_ms = NAN, per_seq_ms = NAN;
    json_t *all = n >= 2 ? overhead_everywhere(F, n, overhead_level, scaling, length, story_load, &fixed_ms, &per_seq_ms) : NULL;
    /* the step's fixed and per-sequence parts, for the time accounting, on any load ladder */
    if (!isfinite(fixed_ms) && !length && n >= 2) {
        double b = slope(F, n, offsetof(level_facts, batch), offsetof(level_facts, step_ms));
        double bf = slope(F, n, offsetof(level_facts, batch), offsetof(level_facts, floor_ms));
        double a = isfinite(b) ? F[0].step_ms - b * F[0].batch : NAN;
        if (isfinite(a) && a > 0 && b >= 0) { fixed_ms = a; per_seq_ms = isfinite(bf) ? b - bf : b; }
    }
    if (n_few) {
        char msg[600];
        snprintf(msg, sizeof msg, "p99 TTFT and E2EL at %s %s (requests): with fewer than %d requests a p99 is the "
                 "slowest one or two, not a tail estimate", length ? "lengths" : "loads", few, DIAG_FEW_SAMPLES);
        json_array_append_new(warnings, json_pack("{s:s,s:s,s:n}", "kind", "few_samples", "message", msg, "level"));
    }
    json_decref(overhead_level);
    if (all) {
        json_object_set_new(best, "engine_overhead", all);
        json_object_set_new(where, "engine_overhead", json_deep_copy(json_object_get(scaling, "loads")));
    }
    if (length) context_prefill_evidence(best, F, n);
    json_t *acc_loads = json_array(), *acc = !length && n >= 2 ? acceptance_collapse(F, n, acc_loads) : NULL;
    if (acc) {
        json_object_set_new(acc, "level", json_real(F[n - 1].load));
        json_object_set_new(best, "spec_acceptance", acc);
        json_object_set_new(where, "spec_acceptance", acc_loads);
    } else {
        json_decref(acc_loads);
    }
    /* "healthy" only when no level found a problem */
    if (json_object_size(best) > 1) json_object_del(best, "healthy");
    json_t *ranked = at_the_story_first(diag_rank(collect(best, where)), story_load, json_is_object(knee), length);
    diag_one_story(ranked);
    json_t *out = json_pack("{s:o,s:o,s:o,s:s}", "findings", ranked, "configuration", collect(cbest, cwhere),
                            "warnings", warnings, "axis", axis ? axis : "load");
    json_decref(best); json_decref(where); json_decref(cbest); json_decref(cwhere);
    static const char *const from_ref[] = { "roofline", "deployment", "checked", "inputs", "time" };
    for (int k = 0; k < 5; k++) {
        json_t *v = ref ? json_object_get(ref, from_ref[k]) : NULL;
        json_object_set(out, from_ref[k], v ? v : k == 0 ? json_null() : k == 2 ? json_array() : json_object());
    }
    if (json_is_object(json_object_get(out, "roofline"))) json_object_set_new(json_object_get(out, "roofline"), "level", json_real(ref_load));
    json_t *tm = json_object_get(out, "time");
    if (json_is_object(tm)) {
        json_object_set_new(tm, "level", json_real(ref_load));
        add_fixed_cost(tm, fixed_ms, per_seq_ms, diag_num(json_object_get(out, "roofline"), "batch"));
    }
    json_decref(ref);
    json_object_set_new(out, "scaling", scaling);
    json_object_set_new(out, "levels_not_measured", skipped);
    if (json_is_object(knee)) json_object_set_new(out, METRIC(knee_load), json_real(ref_load));
    return out;
}
