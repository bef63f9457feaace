/* sim_interval — the simulator's 80% prediction intervals (see sim_interval.h). */
#include "engine/sim_interval.h"
#include "metrics/metric_table.h"
#include "model/model.h"
#include <stdio.h>
#include <math.h>
#include <string.h>

/* 80th percentiles of |log error| per metric, measured by `dsperf sim --validate
 * data/published.json` (its line "interval half-widths for predictions"): leave-one-group-out on
 * the table's simulated rows, steady loads and bursts apart, and calibrate-then-predict on the
 * deployments published at several loads (fit the lowest load, predict the others). Stored as the
 * relative half-width exp(q) - 1. */
/* steady loads of an engine on an architecture no other fitted group runs: 2026-12-07 (stop 52), 101
 * TPOT, 98 throughput, 93 TTFT metrics (+-36 / +-35 % before stop 52's blind hold-outs joined them) */
#define UNSEEN_TPOT 0.44
#define UNSEEN_TPUT 0.45
#define UNSEEN_TTFT 1.13
static const double halfwidth[SIM_IV_LOADS][SIM_IV_N] = {
    [SIM_IV_STEADY] = {0.27, 0.28, 1.24},  /* 2026-12-07 (stop 52): 211 TPOT, 205 throughput, 199 TTFT metrics of seen pairs */
    [SIM_IV_BURST] = {0.97, 0.60, 2.50},   /* 2026-12-07: 10, 19, 10 metrics of 9 rows in 6 groups (A1, A2, B1, N74, N75, N90-N93) */
    [SIM_IV_UNSEEN] = {UNSEEN_TPOT, UNSEEN_TPUT, UNSEEN_TTFT},
};
/* calibrate-then-predict: 34 rows of 6 deployments (B200, MI355X, H200, MI350X), all steady loads; the
 * TTFT's width is the MI350X rows' one-wave TTFTs (24 ms at one user, 375 ms at two). No
 * calibrated burst has been measured: a burst keeps the uncalibrated burst half-widths (what a
 * calibration on a steady load does to a burst's errors is unknown, so none is claimed). */
static const double halfwidth_cal[SIM_IV_N] = {0.18, 0.18, 1.20};

/* The engine and GPU architecture pairs of the table's fitted rows (`sim --validate` prints the
 * same list from data/published.json). A calibrated deployment is measured, not unseen. */
static const char *const seen_pairs[] = {
    "atom/cdna4", "deepseek/hopper", "llamacpp/ada", "llamacpp/ampere", "llamacpp/blackwell-geforce", "lmdeploy/ampere",
    "sglang/ampere", "sglang/blackwell", "sglang/cdna3", "sglang/cdna4", "sglang/hopper", "trtllm/blackwell", "trtllm/hopper",
    "vllm/ampere", "vllm/hopper", NULL,
};

const char *sim_interval_engine(const char *engine_profile, char *buf, size_t len) {
    snprintf(buf, len, "%s", engine_profile ? engine_profile : "");
    buf[strcspn(buf, "-")] = 0;   /* vllm-v1 -> vllm, sglang-2024 -> sglang, llamacpp-b4747 -> llamacpp */
    return buf;
}

const char *sim_interval_arch(const char *gpu) {
    const hw_gpu *g = hw_find(gpu);
    return g ? g->arch : "";
}

int sim_interval_seen(const char *engine_profile, const char *gpu) {
    char eng[32], pair[64];
    snprintf(pair, sizeof pair, "%s/%s", sim_interval_engine(engine_profile, eng, sizeof eng), sim_interval_arch(gpu));
    for (size_t i = 0; seen_pairs[i]; i++)
        if (!strcmp(seen_pairs[i], pair)) return 1;
    return 0;
}

const char *sim_interval_seen_list(void) {
    static char buf[512];
    size_t o = 0;
    for (size_t i = 0; seen_pairs[i] && o < sizeof buf; i++) o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%s", i ? ", " : "", seen_pairs[i]);
    return buf;
}

sim_iv_load sim_interval_kind(sim_iv_load load, const char *engine_profile, const char *gpu) {
    /* a results file that does not name both (written before they were recorded) keeps its kind */
    if (!engine_profile || !*engine_profile || !gpu || !*gpu) return load;
    return load == SIM_IV_STEADY && !sim_interval_seen(engine_profile, gpu) ? SIM_IV_UNSEEN : load;
}

double sim_interval_q(sim_iv_target k, sim_iv_load load, int calibrated) {
    if (k < 0 || k >= SIM_IV_N || load < 0 || load >= SIM_IV_LOADS) return NAN;
    return log1p(calibrated && load != SIM_IV_BURST ? halfwidth_cal[k] : halfwidth[load][k]);
}

const char *sim_interval_load_name(sim_iv_load load) {
    return load == SIM_IV_BURST ? "burst" : load == SIM_IV_STEADY ? "steady" : load == SIM_IV_UNSEEN ? "unseen" : "?";
}

sim_iv_load sim_interval_load_kind(int open_loop, double rate_per_s, int capped) {
    return open_loop && !(rate_per_s > 0 && isfinite(rate_per_s)) && !capped ? SIM_IV_BURST : SIM_IV_STEADY;
}

sim_iv_load sim_interval_load_of(const json_t *results) {
    const json_t *c = json_object_get(results, "config");
    const char *load = json_string_value(json_object_get(c, "load"));
    const char *arrival = json_string_value(json_object_get(c, "arrival"));
    int open_loop = load && !strcmp(load, "open") && !(arrival && !strcmp(arrival, "trace"));   /* a trace replay is steady */
    double rate = json_number_value(json_object_get(c, "rate_per_s"));   /* null: all at once */
    json_t *cap = json_object_get(c, "max_concurrency");
    json_int_t requests = json_integer_value(json_object_get(c, "requests"));
    int capped = json_is_integer(cap) && json_integer_value(cap) > 0 && json_integer_value(cap) < requests;
    const json_t *sim = json_object_get(c, "sim");
    sim_iv_load kind = sim_interval_load_kind(open_loop, rate, capped);
    return sim ? sim_interval_kind(kind, json_string_value(json_object_get(sim, "engine_profile")),
                                   json_string_value(json_object_get(sim, "gpu")))
               : kind;
}

const char *sim_interval_name(sim_iv_target k) {
    static const char *const n[SIM_IV_N] = {"TPOT", "per-GPU throughput", "TTFT"};
    return k >= 0 && k < SIM_IV_N ? n[k] : "?";
}

json_t *sim_interval_json(const json_t *results, int calibrated) {
    static const struct { const char *key; sim_iv_target k; } keys[] = {
        {METRIC(mean_tpot_ms), SIM_IV_TPOT}, {METRIC(median_tpot_ms), SIM_IV_TPOT}, {METRIC(mean_itl_ms), SIM_IV_TPOT},
        {METRIC(median_itl_ms), SIM_IV_TPOT}, {METRIC(output_throughput), SIM_IV_TPUT}, {METRIC(total_token_throughput), SIM_IV_TPUT},
        {METRIC(request_throughput), SIM_IV_TPUT}, {METRIC(mean_ttft_ms), SIM_IV_TTFT}, {METRIC(median_ttft_ms), SIM_IV_TTFT},
    };
    json_t *m = json_object();
    sim_iv_load kind = sim_interval_load_of(results);
    /* below capacity an open loop's throughput is its offered rate, not a prediction (a burst's is:
     * how fast the engine drains it) */
    const char *load = json_string_value(json_object_get(json_object_get(results, "config"), "load"));
    int tput_predicted = !(load && !strcmp(load, "open")) || kind == SIM_IV_BURST || json_is_true(json_object_get(results, "server_overloaded"));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (keys[i].k == SIM_IV_TPUT && !tput_predicted) continue;
        json_t *v = json_object_get(results, keys[i].key);
        if (!json_is_number(v) || !(json_number_value(v) > 0)) continue;
        double x = json_number_value(v), q = sim_interval_q(keys[i].k, kind, calibrated);
        json_object_set_new(m, keys[i].key, json_pack("{s:f,s:f,s:f}", "value", x, "lo", x * exp(-q), "hi", x * exp(q)));
    }
    return json_pack("{s:f,s:s,s:s,s:o}", "level", 0.8, "load", sim_interval_load_name(kind), "basis", sim_interval_basis(kind, calibrated),
                     "metrics", m);
}

const char *sim_interval_basis(sim_iv_load load, int calibrated) {
    return calibrated && load != SIM_IV_BURST
               ? "calibrate-then-predict errors on published deployments, steady loads (dsperf sim --validate data/published.json)"
           : load == SIM_IV_UNSEEN
               ? "leave-one-group-out errors on published deployments of an engine on a GPU architecture no other fitted group runs, "
                 "steady loads (dsperf sim --validate data/published.json)"
           : load == SIM_IV_BURST
               ? "leave-one-group-out errors on the published bursts (every request at once; dsperf sim --validate data/published.json)"
               : "leave-one-group-out errors on published deployments, steady loads (dsperf sim --validate data/published.json)";
}
