/* Tests of the prefix_cache class on results documents that carry its inputs: a trace whose
 * working set overflows a KV cache that ran full (capacity: the KV dtype and memory knobs), the
 * same shortfall with a cache that had room (placement: prefix caching, prefix-aware routing), a
 * hit rate close to the bound (nothing), and a run with no bound (the rule says why it did not
 * run). */
#include "harness.h"
#include "diagnose/diagnose.h"
#include <stdbool.h>
#include <string.h>

static json_t *doc(double hit, double bound, double kv_pct, double ws, double cap) {
    json_t *d = json_pack("{s:s,s:s,s:{s:s,s:s,s:{s:I}},s:i,s:i,s:f,s:f,s:f,s:{s:f,s:f,s:{s:f},s:{s:f}}}",
        "schema", "dsperf.results/1", "producer", "bench",
        "config", "api", "completions", "model", "deepseek-ai/DeepSeek-V2-Lite", "trace", "working_set_tokens", (json_int_t)ws,
        "completed", 300, "failed", 0, "mean_ttft_ms", 80.0, "mean_e2el_ms", 400.0, "min_ttft_ms", 20.0,
        "prefix_cache", "hit_rate", hit, "hit_rate_bound", bound, "ttft_hit", "median_ms", 25.0, "ttft_miss", "median_ms", 120.0);
    json_t *kv = json_array();
    for (int i = 0; i < 10; i++) json_array_append_new(kv, json_real(kv_pct * (0.5 + i / 18.0)));
    json_object_set_new(d, "telemetry", json_pack("{s:{s:s,s:{s:o}}}", "server", "source", "vllm", "series", "kv_usage_pct", kv));
    if (cap > 0) json_object_set_new(d, "engine", json_pack("{s:f}", "kv_tokens", cap));
    return d;
}

static const json_t *finding(const json_t *dg, const char *cls) {
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(dg, "findings"), i, f)
        if (!strcmp(json_string_value(json_object_get(f, "class")), cls)) return f;
    return NULL;
}

static bool has_knob(const json_t *f, const char *name) {
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(f, "knobs"), i, k)
        if (!strcmp(json_string_value(json_object_get(k, "knob")), name)) return true;
    return false;
}

static json_t *run(json_t *d) {
    diagnose_opts o;
    diagnose_default_opts(&o);
    char err[256];
    json_t *g = diagnose_run(d, &o, err, sizeof err);
    CHECK_MSG(g != NULL, "%s", err);
    json_decref(d);
    return g;
}

TEST(diagnose_prefix_cache_capacity_and_routing) {
    /* 12% hits where 60% were possible, the cache at 100%, a working set 3x the KV cache */
    json_t *g = run(doc(0.12, 0.6, 100, 300000, 100000));
    const json_t *f = finding(g, "prefix_cache");
    CHECK(f != NULL);
    if (f) {
        CHECK(strstr(json_string_value(json_object_get(f, "title")), "too small for the working set") != NULL);
        CHECK(has_knob(f, "kv_cache_dtype"));
        CHECK(has_knob(f, "gpu_memory_utilization"));
        CHECK(!has_knob(f, "prefix-aware routing"));
        /* cost: (0.6 - 0.12) / (1 - 0.12) of the prompt tokens computed */
        CHECK_NEAR(json_number_value(json_object_get(json_object_get(f, "cost"), "lost_frac")), 0.48 / 0.88, 1e-3);   /* kept to 3 decimals */
    }
    json_decref(g);
    /* the same shortfall with the cache never above 50%: not evictions */
    g = run(doc(0.12, 0.6, 50, 30000, 100000));
    f = finding(g, "prefix_cache");
    CHECK(f != NULL);
    if (f) {
        CHECK(strstr(json_string_value(json_object_get(f, "title")), "had room") != NULL);
        CHECK(has_knob(f, "prefix-aware routing"));
        CHECK(has_knob(f, "enable_prefix_caching"));
        CHECK(!has_knob(f, "kv_cache_dtype"));
    }
    json_decref(g);
    /* 55% of 60%: the cache does what the workload allows */
    g = run(doc(0.55, 0.6, 100, 300000, 100000));
    CHECK(finding(g, "prefix_cache") == NULL);
    json_decref(g);
    /* no bound: the rule says so in "checked" */
    json_t *d = doc(0.1, 0.6, 50, 0, 0);
    json_object_del(json_object_get(d, "prefix_cache"), "hit_rate_bound");
    g = run(d);
    CHECK(finding(g, "prefix_cache") == NULL);
    size_t i;
    json_t *c;
    bool said = false;
    json_array_foreach(json_object_get(g, "checked"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "rule")), "prefix_cache"))
            said = !json_is_true(json_object_get(c, "ran")) && strstr(json_string_value(json_object_get(c, "why")), "bound");
    CHECK(said);
    json_decref(g);
}

/* With the trace's LRU curve and the server's KV size (vLLM's cache_config_info), the curve decides:
 * a size whose LRU allows 15% of a 60% bound is capacity even with the KV usage low; one whose LRU
 * allows 58% is placement even with the KV usage at 100%. */
TEST(diagnose_prefix_cache_by_lru_curve) {
    for (int k = 0; k < 2; k++) {
        json_t *d = doc(0.12, 0.6, k ? 100 : 40, 300000, 0);
        json_t *curve = json_pack("[[i,f],[i,f],[i,f]]", 20000, 0.05, 90000, k ? 0.58 : 0.15, 400000, 0.6);
        json_object_set_new(json_object_get(json_object_get(d, "config"), "trace"), "lru_hit_rate_by_kv_tokens", curve);
        json_object_set_new(d, "telemetry_summary", json_pack("{s:{s:s,s:f}}", "server", "source", "vllm", "kv_capacity_tokens", 100000.0));
        json_t *g = run(d);
        const json_t *f = finding(g, "prefix_cache");
        CHECK(f != NULL);
        if (f) {
            const char *title = json_string_value(json_object_get(f, "title"));
            CHECK_MSG(strstr(title, k ? "had room" : "too small") != NULL, "case %d: %s", k, title);
            CHECK(has_knob(f, k ? "prefix-aware routing" : "kv_cache_dtype"));
        }
        json_decref(g);
    }
}
