/* sim_interval tests — a simulated run's results carry an 80% interval on each of its TPOT,
 * throughput and TTFT numbers, prediction x exp(+-q) with the q of sim_interval.c (wider for TTFT
 * than for TPOT, as measured out of group), a burst (every request at once) takes the bursts' q,
 * and a calibrated profile switches to the calibrate-then-predict q. */
#include "harness.h"
#include "testutil.h"
#include "engine/sim_interval.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

static void check_metric(json_t *iv, const char *key, json_t *res, sim_iv_target k, sim_iv_load load, int calibrated) {
    json_t *m = json_object_get(json_object_get(iv, "metrics"), key);
    CHECK_MSG(m != NULL, "no interval on %s", key);
    if (!m) return;
    double v = json_number_value(json_object_get(m, "value")), lo = json_number_value(json_object_get(m, "lo")),
           hi = json_number_value(json_object_get(m, "hi")), x = json_number_value(json_object_get(res, key));
    double q = sim_interval_q(k, load, calibrated);
    CHECK_NEAR(v, x, x * 1e-9);
    CHECK_NEAR(lo, x * exp(-q), x * 1e-6);
    CHECK_NEAR(hi, x * exp(q), x * 1e-6);
    CHECK(lo < v && v < hi);
}

TEST(sim_interval_on_every_predicted_number) {
    char out[512], prof[512], cmd[2048];
    snprintf(out, sizeof out, "%s/r.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 --concurrency 8 --requests 40 --out %s", out);
    char *so = NULL;
    CHECK_EQ_INT(test_run(cmd, &so, NULL), 0);
    CHECK_MSG(so && strstr(so, "80% interval:"), "the summary prints the interval");
    free(so);
    json_t *res = json_load_file(out, 0, NULL);
    CHECK(res != NULL);
    if (!res) return;
    json_t *iv = json_object_get(res, "prediction_interval");
    CHECK(iv != NULL);
    CHECK_NEAR(json_number_value(json_object_get(iv, "level")), 0.8, 1e-12);
    check_metric(iv, "median_tpot_ms", res, SIM_IV_TPOT, SIM_IV_STEADY, 0);
    check_metric(iv, "output_throughput", res, SIM_IV_TPUT, SIM_IV_STEADY, 0);
    check_metric(iv, "mean_ttft_ms", res, SIM_IV_TTFT, SIM_IV_STEADY, 0);
    CHECK(sim_interval_q(SIM_IV_TTFT, SIM_IV_STEADY, 0) > sim_interval_q(SIM_IV_TPOT, SIM_IV_STEADY, 0));
    json_decref(res);
    /* an open loop below capacity serves its offered rate: no interval on the throughput */
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 --rate 2/s --requests 20 --out %s --quiet", out);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    res = json_load_file(out, 0, NULL);
    CHECK(res != NULL);
    if (!res) return;
    iv = json_object_get(res, "prediction_interval");
    CHECK(json_object_get(json_object_get(iv, "metrics"), "output_throughput") == NULL);
    check_metric(iv, "median_tpot_ms", res, SIM_IV_TPOT, SIM_IV_STEADY, 0);
    json_decref(res);
    /* every request at once: a burst, whose interval is the bursts' (wider: measured so) */
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 --rate inf --requests 40 --out %s", out);
    so = NULL;
    CHECK_EQ_INT(test_run(cmd, &so, NULL), 0);
    CHECK_MSG(so && strstr(so, "bursts: every request sent at once"), "the summary says the interval is a burst's");
    free(so);
    res = json_load_file(out, 0, NULL);
    CHECK(res != NULL);
    if (!res) return;
    iv = json_object_get(res, "prediction_interval");
    CHECK(strcmp(json_string_value(json_object_get(iv, "load")) ?: "", "burst") == 0);
    check_metric(iv, "median_tpot_ms", res, SIM_IV_TPOT, SIM_IV_BURST, 0);
    check_metric(iv, "output_throughput", res, SIM_IV_TPUT, SIM_IV_BURST, 0);
    CHECK(sim_interval_q(SIM_IV_TPOT, SIM_IV_BURST, 0) > sim_interval_q(SIM_IV_TPOT, SIM_IV_STEADY, 0));
    /* a burst capped below its requests is a closed loop in all but name: steady */
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 --rate inf --max-concurrency 8 --requests 40 --out %s --quiet", out);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_decref(res);
    res = json_load_file(out, 0, NULL);
    CHECK(res != NULL);
    if (!res) return;
    iv = json_object_get(res, "prediction_interval");
    check_metric(iv, "median_tpot_ms", res, SIM_IV_TPOT, SIM_IV_STEADY, 0);
    json_decref(res);
    /* a profile is a calibrated deployment: its intervals are calibrate-then-predict's */
    snprintf(prof, sizeof prof, "%s/p.json", harness_tmpdir());
    FILE *f = fopen(prof, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"schema\":\"dsperf.sim-profile/1\",\"setup\":{\"engine_profile\":\"vllm-v1\"},\"factors\":{\"bw_eff\":0.8}}", f);
    fclose(f);
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 --rate 5/s --requests 40 --profile %s --out %s --quiet", prof, out);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    res = json_load_file(out, 0, NULL);
    CHECK(res != NULL);
    if (!res) return;
    iv = json_object_get(res, "prediction_interval");
    check_metric(iv, "median_tpot_ms", res, SIM_IV_TPOT, SIM_IV_STEADY, 1);
    CHECK(strstr(json_string_value(json_object_get(iv, "basis")), "calibrate") != NULL);
    json_decref(res);
}

/* The load kind from a results config, as sim and bench write it: an open loop with no finite rate
 * and no cap below its requests is a burst; a trace replay, a finite rate, a cap below the requests
 * or a closed loop is steady (bench leaves rate_per_s out when it is infinite: no JSON number). */
TEST(sim_interval_load_kind_of_a_config) {
    static const struct { const char *config; sim_iv_load want; } cases[] = {
        {"{\"load\":\"open\",\"rate_per_s\":null,\"arrival\":\"all-at-once\",\"max_concurrency\":null,\"requests\":40}", SIM_IV_BURST},
        {"{\"load\":\"open\",\"arrival\":\"poisson\",\"max_concurrency\":null,\"requests\":40}", SIM_IV_BURST},
        {"{\"load\":\"open\",\"rate_per_s\":null,\"max_concurrency\":40,\"requests\":40}", SIM_IV_BURST},
        {"{\"load\":\"open\",\"rate_per_s\":null,\"max_concurrency\":8,\"requests\":40}", SIM_IV_STEADY},
        {"{\"load\":\"open\",\"rate_per_s\":5.0,\"arrival\":\"poisson\",\"requests\":40}", SIM_IV_STEADY},
        {"{\"load\":\"open\",\"rate_per_s\":null,\"arrival\":\"trace\",\"requests\":40}", SIM_IV_STEADY},
        {"{\"load\":\"closed\",\"concurrency\":16,\"requests\":40}", SIM_IV_STEADY},
        {"{}", SIM_IV_STEADY},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *cfg = json_loads(cases[i].config, 0, NULL);
        CHECK(cfg != NULL);
        json_t *res = json_pack("{s:o}", "config", cfg);
        CHECK_MSG(sim_interval_load_of(res) == cases[i].want, "%s: %s, want %s", cases[i].config,
                  sim_interval_load_name(sim_interval_load_of(res)), sim_interval_load_name(cases[i].want));
        json_decref(res);
    }
}

/* An engine on a GPU architecture that none of the table's fitted rows runs gets the wider unseen
 * interval on a steady load (vLLM on MI355X: the fits hold SGLang and ATOM there, vLLM only on
 * Hopper and Ampere); a seen pair keeps the steady one, a burst the bursts', a calibrated deployment
 * calibrate-then-predict's. Aliases and versions of a profile map to one engine and architecture. */
TEST(sim_interval_unseen_engine_and_architecture) {
    char eng[32];
    CHECK_STR(sim_interval_engine("vllm-v1", eng, sizeof eng), "vllm");
    CHECK_STR(sim_interval_engine("llamacpp-b4747", eng, sizeof eng), "llamacpp");
    CHECK_STR(sim_interval_arch("H200-SXM"), "hopper");
    CHECK_STR(sim_interval_arch("mi350x"), "cdna4");
    CHECK_STR(sim_interval_arch("no-such-gpu"), "");
    CHECK(sim_interval_seen("sglang", "b200") && sim_interval_seen("vllm-v0", "h100") && sim_interval_seen("atom", "mi355x"));
    CHECK(!sim_interval_seen("vllm", "mi355x") && !sim_interval_seen("vllm-v1", "b200") && !sim_interval_seen("atom", "mi300x"));
    CHECK_EQ_INT(sim_interval_kind(SIM_IV_STEADY, "vllm", "mi350x"), SIM_IV_UNSEEN);
    CHECK_EQ_INT(sim_interval_kind(SIM_IV_STEADY, "sglang", "h200"), SIM_IV_STEADY);
    CHECK_EQ_INT(sim_interval_kind(SIM_IV_BURST, "vllm", "mi350x"), SIM_IV_BURST);
    for (int k = 0; k < SIM_IV_N; k++) {
        /* TTFT's width is the request path's more than the engine's: not wider for an unseen pair */
        if (k != SIM_IV_TTFT) CHECK(sim_interval_q((sim_iv_target)k, SIM_IV_UNSEEN, 0) > sim_interval_q((sim_iv_target)k, SIM_IV_STEADY, 0));
        CHECK_NEAR(sim_interval_q((sim_iv_target)k, SIM_IV_UNSEEN, 1), sim_interval_q((sim_iv_target)k, SIM_IV_STEADY, 1), 1e-12);
    }
    /* a simulated run's results say which (config.sim), and its intervals follow */
    json_t *res = json_pack("{s:{s:s,s:i,s:{s:s,s:s}},s:f}", "config", "load", "closed", "concurrency", 8, "sim", "engine_profile",
                            "vllm", "gpu", "mi355x", "median_tpot_ms", 20.0);
    CHECK_EQ_INT(sim_interval_load_of(res), SIM_IV_UNSEEN);
    json_t *iv = sim_interval_json(res, 0);
    CHECK_STR(json_string_value(json_object_get(iv, "load")), "unseen");
    check_metric(iv, "median_tpot_ms", res, SIM_IV_TPOT, SIM_IV_UNSEEN, 0);
    json_decref(iv);
    json_decref(res);
}
