/* Tests for the workload metrics: llama.cpp's hit rate from its /metrics (two real scrapes
 * around four real streams whose usage says 5 prompt tokens each while the counter moved by 4
 * each: BOS came from the cache), and the server-reported one over records. */
#include "harness.h"
#include "metrics/workload.h"
#include "telemetry/engine_metrics.h"
#include "common/fileio.h"
#include <stdlib.h>
#include <string.h>

static int read_reading(const char *path, em_reading *out, int64_t t_ns) {
    char *text;
    size_t len;
    if (fileio_read_all(path, &text, &len) < 0) return -1;
    prom_doc doc;
    int rc = prom_parse(text, len, &doc);
    free(text);
    if (rc < 0) return -1;
    em_read(&doc, em_detect_engine(&doc), t_ns, out);
    prom_doc_free(&doc);
    return 0;
}

TEST(workload_llamacpp_metrics_hit_rate) {
    em_reading idle, busy;
    CHECK(read_reading("tests/fixtures/llamacpp/metrics_idle.txt", &idle, 1000000000) == 0);
    CHECK(read_reading("tests/fixtures/llamacpp/metrics_busy.txt", &busy, 1300000000) == 0);
    double o[EM_COL_COUNT];
    em_derive(&idle, &busy, o);
    CHECK_NEAR(o[EM_PROMPT_TOKENS], 16, 0);          /* 51 -> 67 */
    /* the series as the sampler keeps it: no increase known at the first scrape, then the interval's */
    json_t *res = json_pack("{s:I,s:{s:{s:s,s:n}},s:{s:{s:{s:[n,f]}}}}", "total_input_tokens_server", (json_int_t)20,
                            "telemetry_summary", "server", "source", "llamacpp", "prefix_cache_hit_rate_pct",
                            "telemetry", "server", "series", "prompt_tokens", o[EM_PROMPT_TOKENS]);
    workload_add_metrics_hit_rate(res);
    json_t *pc = json_object_get(res, "prefix_cache");
    CHECK(pc != NULL);
    CHECK_NEAR(json_number_value(json_object_get(pc, "hit_rate_metrics")), 0.2, 1e-12);
    json_decref(res);
    /* vLLM's counters give the rate directly; a server with neither gives nothing */
    res = json_pack("{s:{s:{s:s,s:f}},s:{s:{s:{s:[n,f,f],s:[n,f,f]}}}}", "telemetry_summary", "server", "source", "vllm",
                    "prefix_cache_hit_rate_pct", 90.0, "telemetry", "server", "series", "prefix_cache_hits", 100.0, 275.0,
                    "prefix_cache_queries", 400.0, 600.0);
    workload_add_metrics_hit_rate(res);   /* every interval of the run, not the summary's window */
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(res, "prefix_cache"), "hit_rate_metrics")), 0.375, 1e-12);
    json_decref(res);
    res = json_pack("{s:{s:{s:s,s:f}}}", "telemetry_summary", "server", "source", "sglang", "prefix_cache_hit_rate_pct", 37.5);
    workload_add_metrics_hit_rate(res);   /* SGLang's gauge when there are no counters */
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(res, "prefix_cache"), "hit_rate_metrics")), 0.375, 1e-12);
    json_decref(res);
    res = json_pack("{s:{s:{s:s,s:n,s:n}}}", "telemetry_summary", "server", "source", "tgi", "prompt_tokens", "prefix_cache_hit_rate_pct");
    workload_add_metrics_hit_rate(res);
    CHECK(json_object_get(res, "prefix_cache") == NULL);
    json_decref(res);
}

TEST(workload_prefix_cache_from_records) {
    recset rs;
    recset_init(&rs);
    /* four requests of 100 prompt tokens: cached 80, 0, 60, unknown; the workload allowed 90 each */
    static const int cached[4] = { 80, 0, 60, -1 };
    for (int i = 0; i < 4; i++) {
        record *r = recset_add(&rs);
        r->outcome = REC_OK;
        r->send_ns = 1000000000LL + i;
        r->first_ns = r->send_ns + (cached[i] > 50 ? 10 : 40) * 1000000LL;
        r->end_ns = r->last_ns = r->first_ns + 1000000;
        r->in_tokens = r->in_tokens_server = 100;
        r->cached_tokens = cached[i];
        r->cacheable_tokens = 90;
    }
    summary_opts o;
    summary_default_opts(&o);
    json_t *pc = workload_prefix_cache(&rs, &o);
    CHECK_NEAR(json_number_value(json_object_get(pc, "hit_rate")), 140.0 / 300, 1e-12);
    CHECK_NEAR(json_number_value(json_object_get(pc, "hit_rate_bound")), 0.9, 1e-12);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(pc, "ttft_hit"), "n")), 2);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(pc, "ttft_hit"), "median_ms")), 10, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(pc, "ttft_miss"), "median_ms")), 40, 1e-9);
    json_decref(pc);
    recset_free(&rs);
}

/* vLLM states its KV cache's size only in an info gauge's labels. */
TEST(workload_vllm_kv_capacity_from_cache_config_info) {
    static const char text[] =
        "# HELP vllm:cache_config_info Information of the LLMEngine CacheConfig\n"
        "# TYPE vllm:cache_config_info gauge\n"
        "vllm:cache_config_info{block_size=\"16\",cache_dtype=\"auto\",enable_prefix_caching=\"True\","
        "gpu_memory_utilization=\"0.9\",num_cpu_blocks=\"4096\",num_gpu_blocks=\"2334\"} 1.0\n"
        "vllm:num_requests_running{model_name=\"m\"} 0.0\n";
    prom_doc doc;
    CHECK(prom_parse(text, sizeof text - 1, &doc) == 0);
    em_reading r;
    em_read(&doc, em_detect_engine(&doc), 1, &r);
    double o[EM_COL_COUNT];
    em_derive(NULL, &r, o);
    CHECK_NEAR(o[EM_KV_CAPACITY_TOKENS], 16.0 * 2334, 0);
    prom_doc_free(&doc);
}

/* A multi-host run merges its ranks' records from the wire: the prefix-cache and conversation
 * fields travel with them, so the merged results carry the same hit rates and turns. */
#include "dist/dist_int.h"
TEST(workload_fields_travel_between_ranks) {
    recset a, b;
    recset_init(&a);
    recset_init(&b);
    for (int i = 0; i < 5; i++) {
        record *r = recset_add(&a);
        r->index = (uint32_t)i;
        r->cached_tokens = 10 * i;
        r->prompt_eval_server = i ? 3 : -1;
        r->cacheable_tokens = 100 + i;
        r->session = (uint32_t)(i / 2 + 1);
        r->turn = (uint16_t)(i % 2);
    }
    dist_buf buf = { 0 };
    dist_pack_records(&buf, &a, false);
    dist_rd rd = { buf.p, buf.n, 0, 0 };
    CHECK_EQ_INT(dist_unpack_records(&rd, &b), 0);
    CHECK_EQ_INT(b.n, 5);
    for (size_t i = 0; i < a.n && i < b.n; i++) {
        CHECK_EQ_INT(b.v[i].cached_tokens, a.v[i].cached_tokens);
        CHECK_EQ_INT(b.v[i].prompt_eval_server, a.v[i].prompt_eval_server);
        CHECK_EQ_INT(b.v[i].cacheable_tokens, a.v[i].cacheable_tokens);
        CHECK_EQ_INT(b.v[i].session, a.v[i].session);
        CHECK_EQ_INT(b.v[i].turn, a.v[i].turn);
    }
    free(buf.p);
    recset_free(&a);
    recset_free(&b);
}
