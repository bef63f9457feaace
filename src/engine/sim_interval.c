/* sim_interval — the simulator's 80% prediction intervals (see sim_interval.h). */
#include "engine/sim_interval.h"
#include "metrics/metric_table.h"
#include <math.h>
#include <string.h>

/* 80th percentiles of |log error| per metric, measured by `dsperf sim --validate
 * data/published.json` (its line "interval half-widths for predictions"): leave-one-group-out on
 * the 77 simulated rows, and calibrate-then-predict on the deployments published at several loads
 * (fit the lowest load, predict the others). Stored as the relative half-width exp(q) - 1. */
static const double halfwidth[SIM_IV_N] = {0.38, 0.35, 1.67};      /* 2026-12-06 (the 2025 fused MoE, vLLM V1's own; hold-outs N89-N94): 82%, 81%, 79% coverage out of group */
static const double halfwidth_cal[SIM_IV_N] = {0.19, 0.21, 0.46};  /* 24 rows of 4 deployments (B200, MI355X, H200) */

double sim_interval_q(sim_iv_target k, int calibrated) {
    if (k < 0 || k >= SIM_IV_N) return NAN;
    return log1p(calibrated ? halfwidth_cal[k] : halfwidth[k]);
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
    /* below capacity an open loop's throughput is its offered rate, not a prediction */
    const char *load = json_string_value(json_object_get(json_object_get(results, "config"), "load"));
    int tput_predicted = !(load && !strcmp(load, "open")) || json_is_true(json_object_get(results, "server_overloaded"));
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        if (keys[i].k == SIM_IV_TPUT && !tput_predicted) continue;
        json_t *v = json_object_get(results, keys[i].key);
        if (!json_is_number(v) || !(json_number_value(v) > 0)) continue;
        double x = json_number_value(v), q = sim_interval_q(keys[i].k, calibrated);
        json_object_set_new(m, keys[i].key, json_pack("{s:f,s:f,s:f}", "value", x, "lo", x * exp(-q), "hi", x * exp(q)));
    }
    return json_pack("{s:f,s:s,s:o}", "level", 0.8, "basis",
                     calibrated ? "calibrate-then-predict errors on published deployments (dsperf sim --validate data/published.json)"
                                : "leave-one-group-out errors on published deployments (dsperf sim --validate data/published.json)",
                     "metrics", m);
}
