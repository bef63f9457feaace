/* Tests of the context-length view on numbers: length ladders and labels, the dataset of a level,
 * and the "context" section of a hand-made sweep document (the quadratic prefill fit, rejected
 * prompts, preemptions, admission held by a full KV cache, sustained DRAM bandwidth, levels not
 * measured, the prediction's deployment). */
#include "harness.h"
#include "sweep/context.h"
#include "sweep/sweep.h"
#include <math.h>
#include <string.h>

TEST(context_length_ladders) {
    double v[SWEEP_MAX_LEVELS];
    size_t n;
    char err[256];
    CHECK(sweep_parse_length_ladder("1k..128k x2", v, SWEEP_MAX_LEVELS, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 8);
    CHECK_NEAR(v[0], 1024, 0);
    CHECK_NEAR(v[7], 131072, 0);
    CHECK(sweep_parse_length_ladder("1k..64k", v, SWEEP_MAX_LEVELS, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 7);
    CHECK(sweep_parse_length_ladder("4k,1.5k,32K", v, SWEEP_MAX_LEVELS, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 3);
    CHECK_NEAR(v[0], 1536, 0);
    CHECK_NEAR(v[2], 32768, 0);
    CHECK(sweep_parse_length_ladder("1000..4000 step 1000", v, SWEEP_MAX_LEVELS, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 4);
    CHECK(sweep_parse_length_ladder("1k..16k x4", v, SWEEP_MAX_LEVELS, &n, err, sizeof err) == 0);
    CHECK_EQ_INT(n, 3);     /* the factor is not a length: 1k, 4k, 16k */
    CHECK(sweep_parse_length_ladder("0..4k", v, SWEEP_MAX_LEVELS, &n, err, sizeof err) < 0);
    char l[32];
    sweep_length_label(32768, l, sizeof l);
    CHECK_STR(l, "32k");
    sweep_length_label(1536, l, sizeof l);
    CHECK_STR(l, "1.5k");
    sweep_length_label(1000, l, sizeof l);
    CHECK_STR(l, "1000");
    CHECK(sweep_axis_is_length("input_len") && sweep_axis_is_length("output_len") && !sweep_axis_is_length("rate"));
}

TEST(context_level_datasets) {
    char spec[256], err[256];
    CHECK(sweep_length_dataset(NULL, true, 4096, 0, spec, sizeof spec, err, sizeof err) == 0);
    CHECK_STR(spec, "random:in=4096,out=128");
    CHECK(sweep_length_dataset("random:in=10,out=64,range=0.1", true, 8192, 0, spec, sizeof spec, err, sizeof err) == 0);
    CHECK_STR(spec, "random:in=8192,out=64,range=0.1");
    CHECK(sweep_length_dataset("random:in=10,out=64", false, 2048, 512, spec, sizeof spec, err, sizeof err) == 0);
    CHECK_STR(spec, "random:in=512,out=2048");
    CHECK(sweep_length_dataset("jsonl:prompts.jsonl", true, 4096, 0, spec, sizeof spec, err, sizeof err) < 0);
    CHECK(strstr(err, "random") != NULL);
    CHECK(sweep_length_dataset("random:in=10,bogus=1", true, 4096, 0, spec, sizeof spec, err, sizeof err) < 0);
}

/* One level of a sweep along prompt length: results with what the view reads. */
static json_t *level(double L, double ttft, double tpot, double rejected, const char *srv_series, bool measured) {
    json_t *res = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:{s:{s:f}}}", "completed", 8.0, "failed", rejected,
                            "median_ttft_ms", ttft, "p99_ttft_ms", ttft * 1.1, "median_tpot_ms", tpot, "p99_tpot_ms", tpot * 1.2,
                            "output_throughput", 100.0, "request_throughput", 1.0, "mean_e2el_ms", 1000.0, "mean_ttft_ms", ttft,
                            "errors", "http_status", "400", rejected);
    if (srv_series) {
        json_error_t e;
        json_t *tel = json_loads(srv_series, 0, &e);
        json_object_set_new(res, "telemetry", tel);
    }
    return json_pack("{s:f,s:s,s:f,s:f,s:b,s:o}", "load", L, "kind", "input_len", "input_len", L, "output_len", 128.0,
                     "measured", measured, "results", res);
}

TEST(context_section_of_a_sweep) {
    /* TTFT = 5 + 8 L/1000 + 0.2 (L/1000)^2 ms exactly: the quadratic term equals the linear one at 40k */
    double L[] = { 4096, 8192, 16384, 32768, 65536, 131072 };
    json_t *levels = json_array();
    for (int i = 0; i < 6; i++) {
        double x = L[i] / 1000, ttft = 5 + 8 * x + 0.2 * x * x, tpot = 3 + 0.01 * (L[i] + 64) / 1000;
        const char *srv = NULL;
        char buf[512];
        if (i == 3) {
            /* 16 offered, at most 9 running, KV full: admission waits for blocks */
            srv = "{\"server\":{\"series\":{\"t_s\":[0,1,2],\"kv_usage_pct\":[80,99.5,99.9],\"running\":[9,9,8],\"preemptions\":[null,0,0]}},"
                  "\"gpu\":[{\"series\":{\"t_s\":[0,4,8,12,16],\"dram_bw_util_pct\":[93,95,96,94,50]}}]}";
        } else if (i == 4) {
            snprintf(buf, sizeof buf, "{\"server\":{\"series\":{\"t_s\":[0,1],\"kv_usage_pct\":[99,100],\"running\":[16,12],"
                     "\"preemptions\":[null,7]}}}");
            srv = buf;
        }
        json_array_append_new(levels, level(L[i], ttft, tpot, i == 5 ? 8 : 0, srv, true));
    }
    /* a level the sweep could not measure is left out */
    json_array_append_new(levels, level(262144, 1e9, 1e9, 0, NULL, false));
    json_t *doc = json_pack("{s:s,s:s,s:{s:i,s:s},s:o}", "schema", "dsperf.sweep/1", "axis", "input_len", "config",
                            "concurrency", 16, "model", "no-such-model", "levels", levels);
    CHECK(sweep_context_analyse(doc, NULL) == 0);
    const json_t *c = json_object_get(doc, "context");
    CHECK(json_is_object(c));
    CHECK_EQ_INT(json_array_size(json_object_get(c, "levels")), 6);
    const json_t *pf = json_object_get(c, "prefill");
    CHECK_NEAR(json_number_value(json_object_get(pf, "b_ms_per_1k_tokens")), 8, 1e-6);
    CHECK_NEAR(json_number_value(json_object_get(pf, "c_ms_per_1k_tokens2")), 0.2, 1e-8);
    CHECK_NEAR(json_number_value(json_object_get(pf, "quadratic_from_tokens")), 40000, 1e-3);
    const json_t *dc = json_object_get(c, "decode");
    CHECK_NEAR(json_number_value(json_object_get(dc, "e_ms_per_1k_context")), 0.01, 1e-9);
    const json_t *lv = json_array_get(json_object_get(c, "levels"), 3);
    CHECK(json_is_false(json_object_get(lv, "fits")));
    CHECK(strstr(json_string_value(json_object_get(lv, "why_not")), "admission") != NULL);
    CHECK_NEAR(json_number_value(json_object_get(lv, "dram_bw_above_92pct_s")), 12, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(lv, "kv_usage_pct_max")), 99.9, 1e-9);
    /* marginal prefill cost between 16k and 32k tokens, per 1k */
    double m = (5 + 8 * 32.768 + 0.2 * 32.768 * 32.768 - (5 + 8 * 16.384 + 0.2 * 16.384 * 16.384)) / 16.384;
    CHECK_NEAR(json_number_value(json_object_get(lv, "ttft_marginal_ms_per_1k")), m, 1e-6);
    lv = json_array_get(json_object_get(c, "levels"), 4);
    CHECK_NEAR(json_number_value(json_object_get(lv, "preemptions")), 7, 0);
    lv = json_array_get(json_object_get(c, "levels"), 5);
    CHECK_NEAR(json_number_value(json_object_get(lv, "rejected")), 8, 0);
    CHECK(strstr(json_string_value(json_object_get(lv, "why_not")), "rejected") != NULL);
    /* the first length that does not fit */
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(c, "stops_fitting"), "input_len")), 32768, 0);
    /* nothing names the model or GPU: no prediction, and why */
    CHECK(json_is_string(json_object_get(json_object_get(c, "prediction"), "why")));
    CHECK(json_is_null(json_object_get(json_array_get(json_object_get(c, "levels"), 0), "predicted")));
    /* with flags naming the deployment, the roofline is drawn beside each length */
    deploy_flags fl = { .model = "deepseek-v2-lite", .gpu = "h200" };
    CHECK(sweep_context_analyse(doc, &fl) == 0);
    c = json_object_get(doc, "context");
    lv = json_array_get(json_object_get(c, "levels"), 0);
    CHECK(json_number_value(json_object_get(json_object_get(lv, "predicted"), "ttft_ms")) > 0);
    /* a load sweep has no context section */
    json_object_set_new(doc, "axis", json_string("concurrency"));
    CHECK(sweep_context_analyse(doc, NULL) == 0);
    CHECK(json_object_get(doc, "context") == NULL);
    json_decref(doc);
}

/* Repeats of one length: means over the repeats that measured a value, counts summed. */
TEST(context_repeats_average) {
    json_t *levels = json_array();
    const char *tel = "{\"server\":{\"series\":{\"t_s\":[0,1],\"kv_usage_pct\":[50,60],\"running\":[2,2],\"preemptions\":[null,3]}}}";
    json_array_append_new(levels, level(4096, 100, 5, 0, tel, true));
    json_array_append_new(levels, level(4096, 200, 7, 1, NULL, true));
    json_array_append_new(levels, level(8192, 300, 9, 0, NULL, true));
    json_t *doc = json_pack("{s:s,s:s,s:{s:i},s:o}", "schema", "dsperf.sweep/1", "axis", "input_len", "config", "concurrency", 2,
                            "levels", levels);
    CHECK(sweep_context_analyse(doc, NULL) == 0);
    const json_t *c = json_object_get(doc, "context"), *lv = json_array_get(json_object_get(c, "levels"), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(c, "levels")), 2);
    CHECK_NEAR(json_number_value(json_object_get(lv, "median_ttft_ms")), 150, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(lv, "kv_usage_pct_mean")), 55, 1e-9);   /* one repeat had it */
    CHECK_NEAR(json_number_value(json_object_get(lv, "preemptions")), 3, 0);
    CHECK_NEAR(json_number_value(json_object_get(lv, "rejected")), 1, 0);
    CHECK_NEAR(json_number_value(json_object_get(lv, "completed")), 16, 0);
    CHECK_EQ_INT(json_integer_value(json_object_get(lv, "repeats")), 2);
    json_decref(doc);
}
