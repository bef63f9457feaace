/* Tests of the Prometheus text parser and the engine alias tables, on fixture texts written in
 * each engine's documented /metrics format (vLLM V1 and V0 names, SGLang, TGI, llama.cpp). */
#include "harness.h"
#include "telemetry/prom.h"
#include "telemetry/engine_metrics.h"
#include <math.h>
#include <string.h>

static void parse(const char *text, prom_doc *d) {
    CHECK_EQ_INT(prom_parse(text, strlen(text), d), 0);
}

TEST(telemetry_prom_parse_syntax) {
    const char *text =
        "# A free comment\n"
        "# HELP http_requests_total The total number of \\\"HTTP\\\" requests.\\nSecond line\n"
        "# TYPE http_requests_total counter\n"
        "http_requests_total{method=\"post\",code=\"200\"} 1027 1395066363000\n"
        "http_requests_total{method=\"post\",code=\"400\"}    3 1395066363000\r\n"
        "\n"
        "msdos_file_access_time_seconds{path=\"C:\\\\DIR\\\\FILE.TXT\",error=\"Cannot find file:\\n\\\"FILE.TXT\\\"\"} 1.458255915e9\n"
        "metric_without_timestamp_and_labels 12.47\n"
        "something_weird{problem=\"division by zero\"} +Inf -3982045\n"
        "neg_inf -Inf\n"
        "not_a_number NaN\n"
        "trailing_comma{a=\"1\",} 5\n"
        "  spaced_name { a = \"x\" } 7\n"
        "bad line here\n"
        "broken{a=\"1\" 2\n"
        "# TYPE rpc_duration_seconds summary\n"
        "rpc_duration_seconds{quantile=\"0.5\"} 4773\n"
        "rpc_duration_seconds_sum 1.7560473e+07\n"
        "rpc_duration_seconds_count 2693\n"
        "open_metrics_ts 1 1520879607.789\n";
    prom_doc d;
    parse(text, &d);
    CHECK_EQ_INT(d.n_samples, 13);
    CHECK_EQ_INT(d.bad_lines, 2);
    CHECK_EQ_INT(prom_family_type(&d, "http_requests_total"), PROM_COUNTER);
    CHECK_EQ_INT(prom_family_type(&d, "rpc_duration_seconds"), PROM_SUMMARY);
    CHECK_STR(d.families[0].help, "The total number of \"HTTP\" requests.\nSecond line");
    const prom_sample *s = &d.samples[0];
    CHECK_STR(s->name, "http_requests_total");
    CHECK_STR(prom_label(s, "code"), "200");
    CHECK(s->has_timestamp && s->timestamp_ms == 1395066363000LL);
    CHECK_NEAR(d.samples[1].value, 3, 0);
    const prom_sample *w = &d.samples[2];
    CHECK_STR(prom_label(w, "path"), "C:\\DIR\\FILE.TXT");
    CHECK_STR(prom_label(w, "error"), "Cannot find file:\n\"FILE.TXT\"");
    CHECK_NEAR(w->value, 1.458255915e9, 1);
    CHECK(isinf(d.samples[4].value) && d.samples[4].value > 0 && d.samples[4].timestamp_ms == -3982045);
    CHECK(isinf(d.samples[5].value) && d.samples[5].value < 0);
    CHECK(isnan(d.samples[6].value));
    CHECK_STR(prom_label(&d.samples[7], "a"), "1");
    CHECK_STR(d.samples[8].name, "spaced_name");
    CHECK_STR(prom_label(&d.samples[8], "a"), "x");
    CHECK(d.samples[12].timestamp_ms == 1520879607789LL);
    double v, sum, cnt;
    CHECK_EQ_INT(prom_sum(&d, "http_requests_total", NULL, NULL, &v), 2);
    CHECK_NEAR(v, 1030, 0);
    CHECK_EQ_INT(prom_sum(&d, "http_requests", "code", "400", &v), 1);   /* _total variant */
    CHECK_NEAR(v, 3, 0);
    CHECK_EQ_INT(prom_sum(&d, "absent_metric", NULL, NULL, &v), 0);
    CHECK_EQ_INT(prom_hist_totals(&d, "rpc_duration_seconds", NULL, NULL, &sum, &cnt), 1);
    CHECK_NEAR(cnt, 2693, 0);
    prom_doc_free(&d);
    const char *h = "x_bucket{le=\"1\"} 2\nx_bucket{le=\"+Inf\"} 3\nx_sum 4.5\nx_count 3\n";
    CHECK_EQ_INT(prom_parse_flags(h, strlen(h), &d, PROM_SKIP_BUCKETS), 0);
    CHECK_EQ_INT(d.n_samples, 2);
    CHECK_EQ_INT(d.bad_lines, 0);
    CHECK_EQ_INT(prom_hist_totals(&d, "x", NULL, NULL, &sum, &cnt), 1);
    CHECK_NEAR(sum, 4.5, 0);
    prom_doc_free(&d);
}

/* vLLM V1 names (as in docs.vllm.ai "Production Metrics"), two scrapes 1 s apart. */
static const char *vllm_v1_a =
    "# HELP vllm:num_requests_running Number of requests in model execution batches.\n"
    "# TYPE vllm:num_requests_running gauge\n"
    "vllm:num_requests_running{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 12.0\n"
    "# TYPE vllm:num_requests_waiting gauge\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 3.0\n"
    "# TYPE vllm:kv_cache_usage_perc gauge\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 0.25\n"
    "# TYPE vllm:num_preemptions_total counter\n"
    "vllm:num_preemptions_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 4.0\n"
    "# TYPE vllm:prefix_cache_queries_total counter\n"
    "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 1000.0\n"
    "# TYPE vllm:prefix_cache_hits_total counter\n"
    "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 400.0\n"
    "# TYPE vllm:prompt_tokens_total counter\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 5000.0\n"
    "# TYPE vllm:generation_tokens_total counter\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 20000.0\n"
    "# TYPE vllm:iteration_tokens_total histogram\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"1.0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 3.0\n"
    "vllm:iteration_tokens_total_bucket{engine=\"0\",le=\"+Inf\",model_name=\"deepseek-ai/DeepSeek-V3\"} 100.0\n"
    "vllm:iteration_tokens_total_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 100.0\n"
    "vllm:iteration_tokens_total_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 2500.0\n"
    "# TYPE vllm:request_queue_time_seconds histogram\n"
    "vllm:request_queue_time_seconds_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 2.0\n"
    "vllm:request_queue_time_seconds_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 10.0\n"
    "vllm:request_prefill_time_seconds_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 1.0\n"
    "vllm:request_prefill_time_seconds_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 10.0\n"
    "vllm:request_decode_time_seconds_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 30.0\n"
    "vllm:request_decode_time_seconds_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 10.0\n";
static const char *vllm_v1_b =
    "vllm:num_requests_running{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 16.0\n"
    "vllm:num_requests_waiting{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 0.0\n"
    "vllm:kv_cache_usage_perc{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 0.5\n"
    "vllm:num_preemptions_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 6.0\n"
    "vllm:prefix_cache_queries_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 1200.0\n"
    "vllm:prefix_cache_hits_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 550.0\n"
    "vllm:prompt_tokens_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 5800.0\n"
    "vllm:generation_tokens_total{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 21500.0\n"
    "vllm:iteration_tokens_total_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 150.0\n"
    "vllm:iteration_tokens_total_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 3300.0\n"
    "vllm:request_queue_time_seconds_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 2.5\n"
    "vllm:request_queue_time_seconds_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 12.0\n"
    "vllm:request_prefill_time_seconds_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 1.2\n"
    "vllm:request_prefill_time_seconds_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 12.0\n"
    "vllm:request_decode_time_seconds_sum{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 30.0\n"
    "vllm:request_decode_time_seconds_count{engine=\"0\",model_name=\"deepseek-ai/DeepSeek-V3\"} 10.0\n";

static void derive_pair(const char *a, const char *b, em_engine expect, double *out) {
    prom_doc da, db;
    parse(a, &da);
    parse(b, &db);
    CHECK_EQ_INT(em_detect_engine(&da), expect);
    em_reading ra, rb;
    em_read(&da, expect, 0, &ra);
    em_read(&db, expect, 1000000000LL, &rb);
    em_derive(&ra, &rb, out);
    prom_doc_free(&da);
    prom_doc_free(&db);
}

/* Timestamps that no int64 of milliseconds holds (NaN, Inf, 1e300 s, 2^63 ms) make the line bad instead
 * of being converted (undefined behaviour, found by fuzzing); the rest of the page still counts. */
TEST(telemetry_prom_timestamp_bounds) {
    const char *text =
        "a 1 NaN\n"
        "b 2 1e300\n"
        "c 3 -Inf\n"
        "d 4 9223372036854775808\n"
        "e 5 9223372036854775807\n"
        "f 6 9.3e15\n"
        "g 7 1.5\n"
        "h 8 0x10\n"
        "i 9 -1.5e3\n";
    prom_doc d;
    parse(text, &d);
    CHECK_EQ_INT(d.n_samples, 3);
    CHECK_EQ_INT(d.bad_lines, 6);
    CHECK_STR(d.samples[0].name, "e");
    CHECK(d.samples[0].timestamp_ms == INT64_MAX);
    CHECK_STR(d.samples[1].name, "g");
    CHECK_EQ_INT(d.samples[1].timestamp_ms, 1500);
    CHECK_EQ_INT(d.samples[2].timestamp_ms, -1500000);
    prom_doc_free(&d);
}

TEST(telemetry_prom_vllm_v1_aliases) {
    double o[EM_COL_COUNT];
    derive_pair(vllm_v1_a, vllm_v1_b, EM_ENGINE_VLLM, o);
    CHECK_NEAR(o[EM_RUNNING], 16, 0);
    CHECK_NEAR(o[EM_WAITING], 0, 0);                    /* a real zero stays zero */
    CHECK_NEAR(o[EM_KV_USAGE_PCT], 50, 1e-9);
    CHECK_NEAR(o[EM_PREEMPTIONS], 2, 0);
    CHECK_NEAR(o[EM_PREFIX_HITS], 150, 0);
    CHECK_NEAR(o[EM_PREFIX_QUERIES], 200, 0);
    CHECK_NEAR(o[EM_PREFIX_HIT_RATE_PCT], 75, 1e-9);
    CHECK_NEAR(o[EM_PROMPT_TOKENS_PER_S], 800, 1e-9);
    CHECK_NEAR(o[EM_GENERATION_TOKENS_PER_S], 1500, 1e-9);
    CHECK_NEAR(o[EM_TOKENS_PER_STEP], 800.0 / 50.0, 1e-9);
    CHECK_NEAR(o[EM_QUEUE_TIME_MS], 500.0 / 2, 1e-9);  /* 0.5 s over 2 requests */
    CHECK_NEAR(o[EM_PREFILL_TIME_MS], 100, 1e-9);
    CHECK(isnan(o[EM_DECODE_TIME_MS]));                /* no request finished decode: unknown, not 0 */
    /* first scrape: gauges only */
    prom_doc d;
    parse(vllm_v1_a, &d);
    em_reading r;
    em_read(&d, EM_ENGINE_VLLM, 0, &r);
    em_derive(NULL, &r, o);
    CHECK_NEAR(o[EM_RUNNING], 12, 0);
    CHECK(isnan(o[EM_PREEMPTIONS]) && isnan(o[EM_GENERATION_TOKENS_PER_S]));
    prom_doc_free(&d);
}

/* vLLM V0 names: gpu_cache_usage_perc, gpu_prefix_cache_hit_rate, no _total on the exposed
 * counter family in OpenMetrics style; no histograms here. */
TEST(telemetry_prom_vllm_v0_aliases) {
    const char *a =
        "# TYPE vllm:num_requests_running gauge\n"
        "vllm:num_requests_running{model_name=\"m\"} 8.0\n"
        "vllm:num_requests_waiting{model_name=\"m\"} 5.0\n"
        "vllm:num_requests_swapped{model_name=\"m\"} 0.0\n"
        "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.9\n"
        "vllm:cpu_cache_usage_perc{model_name=\"m\"} 0.0\n"
        "vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.3\n"
        "vllm:num_preemptions_total{model_name=\"m\"} 10.0\n"
        "vllm:generation_tokens_total{model_name=\"m\"} 100.0\n";
    const char *b =
        "vllm:num_requests_running{model_name=\"m\"} 9.0\n"
        "vllm:num_requests_waiting{model_name=\"m\"} 7.0\n"
        "vllm:gpu_cache_usage_perc{model_name=\"m\"} 0.95\n"
        "vllm:gpu_prefix_cache_hit_rate{model_name=\"m\"} 0.35\n"
        "vllm:num_preemptions_total{model_name=\"m\"} 13.0\n"
        "vllm:generation_tokens_total{model_name=\"m\"} 300.0\n";
    double o[EM_COL_COUNT];
    derive_pair(a, b, EM_ENGINE_VLLM, o);
    CHECK_NEAR(o[EM_KV_USAGE_PCT], 95, 1e-9);
    CHECK_NEAR(o[EM_PREFIX_HIT_RATE_PCT], 35, 1e-9);   /* the engine's own gauge */
    CHECK_NEAR(o[EM_PREEMPTIONS], 3, 0);
    CHECK_NEAR(o[EM_GENERATION_TOKENS_PER_S], 200, 1e-9);
    CHECK(isnan(o[EM_PROMPT_TOKENS_PER_S]));           /* not exposed: unknown */
    CHECK(isnan(o[EM_PREFIX_HITS]) && isnan(o[EM_TOKENS_PER_STEP]) && isnan(o[EM_QUEUE_TIME_MS]));
}

/* SGLang --enable-metrics (docs.sglang.io "Production Metrics"). */
TEST(telemetry_prom_sglang_aliases) {
    const char *a =
        "# HELP sglang:prompt_tokens_total Number of prefill tokens processed.\n"
        "# TYPE sglang:prompt_tokens_total counter\n"
        "sglang:prompt_tokens_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 8.128902e+06\n"
        "sglang:generation_tokens_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 7.557572e+06\n"
        "sglang:cached_tokens_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 1.0e+06\n"
        "sglang:token_usage{model_name=\"deepseek-ai/DeepSeek-V3\"} 0.28\n"
        "sglang:cache_hit_rate{model_name=\"deepseek-ai/DeepSeek-V3\"} 0.0075\n"
        "sglang:num_running_reqs{model_name=\"deepseek-ai/DeepSeek-V3\"} 32.0\n"
        "sglang:num_queue_reqs{model_name=\"deepseek-ai/DeepSeek-V3\"} 4.0\n"
        "sglang:num_retracted_requests_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 1.0\n"
        "sglang:queue_time_seconds_sum{model_name=\"deepseek-ai/DeepSeek-V3\"} 10.0\n"
        "sglang:queue_time_seconds_count{model_name=\"deepseek-ai/DeepSeek-V3\"} 100.0\n"
        "sglang:queue_time_seconds_bucket{le=\"+Inf\",model_name=\"deepseek-ai/DeepSeek-V3\"} 100.0\n";
    const char *b =
        "sglang:prompt_tokens_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 8.129902e+06\n"
        "sglang:generation_tokens_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 7.559572e+06\n"
        "sglang:cached_tokens_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 1.0006e+06\n"
        "sglang:token_usage{model_name=\"deepseek-ai/DeepSeek-V3\"} 0.31\n"
        "sglang:num_running_reqs{model_name=\"deepseek-ai/DeepSeek-V3\"} 30.0\n"
        "sglang:num_queue_reqs{model_name=\"deepseek-ai/DeepSeek-V3\"} 6.0\n"
        "sglang:num_retracted_requests_total{model_name=\"deepseek-ai/DeepSeek-V3\"} 3.0\n"
        "sglang:queue_time_seconds_sum{model_name=\"deepseek-ai/DeepSeek-V3\"} 10.4\n"
        "sglang:queue_time_seconds_count{model_name=\"deepseek-ai/DeepSeek-V3\"} 104.0\n";
    double o[EM_COL_COUNT];
    derive_pair(a, b, EM_ENGINE_SGLANG, o);
    CHECK_NEAR(o[EM_RUNNING], 30, 0);
    CHECK_NEAR(o[EM_WAITING], 6, 0);
    CHECK_NEAR(o[EM_KV_USAGE_PCT], 31, 1e-9);
    CHECK_NEAR(o[EM_PREEMPTIONS], 2, 0);
    CHECK_NEAR(o[EM_PROMPT_TOKENS_PER_S], 1000, 1e-6);
    CHECK_NEAR(o[EM_GENERATION_TOKENS_PER_S], 2000, 1e-6);
    CHECK_NEAR(o[EM_PREFIX_HIT_RATE_PCT], 60, 1e-6);    /* 600 cached of 1000 prompt tokens */
    CHECK_NEAR(o[EM_QUEUE_TIME_MS], 100, 1e-6);
    CHECK(isnan(o[EM_TOKENS_PER_STEP]) && isnan(o[EM_DECODE_TIME_MS]));
}

/* TGI (huggingface.co/docs/text-generation-inference/reference/metrics): method label splits
 * prefill and decode batches. */
TEST(telemetry_prom_tgi_aliases) {
    const char *a =
        "# TYPE tgi_batch_current_size gauge\n"
        "tgi_batch_current_size 8\n"
        "tgi_queue_size 2\n"
        "tgi_request_queue_duration_sum 1.0\n"
        "tgi_request_queue_duration_count 10\n"
        "tgi_batch_inference_duration_sum{method=\"prefill\"} 2.0\n"
        "tgi_batch_inference_duration_count{method=\"prefill\"} 20\n"
        "tgi_batch_inference_duration_sum{method=\"decode\"} 5.0\n"
        "tgi_batch_inference_duration_count{method=\"decode\"} 500\n"
        "tgi_request_input_length_sum 1000\n"
        "tgi_request_input_length_count 10\n"
        "tgi_request_generated_tokens_sum 3000\n"
        "tgi_request_generated_tokens_count 10\n";
    const char *b =
        "tgi_batch_current_size 9\n"
        "tgi_queue_size 0\n"
        "tgi_request_queue_duration_sum 1.3\n"
        "tgi_request_queue_duration_count 13\n"
        "tgi_batch_inference_duration_sum{method=\"prefill\"} 2.5\n"
        "tgi_batch_inference_duration_count{method=\"prefill\"} 25\n"
        "tgi_batch_inference_duration_sum{method=\"decode\"} 5.8\n"
        "tgi_batch_inference_duration_count{method=\"decode\"} 600\n"
        "tgi_request_input_length_sum 1400\n"
        "tgi_request_generated_tokens_sum 3900\n";
    double o[EM_COL_COUNT];
    derive_pair(a, b, EM_ENGINE_TGI, o);
    CHECK_NEAR(o[EM_RUNNING], 9, 0);
    CHECK_NEAR(o[EM_WAITING], 0, 0);
    CHECK_NEAR(o[EM_QUEUE_TIME_MS], 100, 1e-6);
    CHECK_NEAR(o[EM_PREFILL_TIME_MS], 100, 1e-6);
    CHECK_NEAR(o[EM_DECODE_TIME_MS], 8, 1e-6);
    CHECK_NEAR(o[EM_PROMPT_TOKENS_PER_S], 400, 1e-6);
    CHECK_NEAR(o[EM_GENERATION_TOKENS_PER_S], 900, 1e-6);
    CHECK(isnan(o[EM_KV_USAGE_PCT]) && isnan(o[EM_PREEMPTIONS]));   /* TGI exposes neither */
}

/* llama.cpp server --metrics (tools/server README). */
TEST(telemetry_prom_llamacpp_aliases) {
    const char *a =
        "# HELP llamacpp:prompt_tokens_total Number of prompt tokens processed.\n"
        "# TYPE llamacpp:prompt_tokens_total counter\n"
        "llamacpp:prompt_tokens_total 6886\n"
        "llamacpp:tokens_predicted_total 3469\n"
        "llamacpp:kv_cache_usage_ratio 0.125\n"
        "llamacpp:requests_processing 2\n"
        "llamacpp:requests_deferred 1\n";
    const char *b =
        "llamacpp:prompt_tokens_total 7086\n"
        "llamacpp:tokens_predicted_total 3569\n"
        "llamacpp:requests_processing 1\n"
        "llamacpp:requests_deferred 0\n";
    double o[EM_COL_COUNT];
    derive_pair(a, b, EM_ENGINE_LLAMACPP, o);
    CHECK_NEAR(o[EM_RUNNING], 1, 0);
    CHECK_NEAR(o[EM_WAITING], 0, 0);
    CHECK(isnan(o[EM_KV_USAGE_PCT]));                   /* gone from the second scrape: unknown */
    CHECK_NEAR(o[EM_PROMPT_TOKENS_PER_S], 200, 1e-9);
    CHECK_NEAR(o[EM_GENERATION_TOKENS_PER_S], 100, 1e-9);
}

TEST(telemetry_prom_missing_is_unknown) {
    prom_doc d;
    parse("# only a comment\nunrelated_metric 1\n", &d);
    CHECK_EQ_INT(em_detect_engine(&d), EM_ENGINE_UNKNOWN);
    em_reading r1, r2;
    em_read(&d, EM_ENGINE_UNKNOWN, 0, &r1);
    em_read(&d, EM_ENGINE_UNKNOWN, 1000000000LL, &r2);
    double o[EM_COL_COUNT];
    em_derive(&r1, &r2, o);
    for (int i = 0; i < EM_COL_COUNT; i++) CHECK_MSG(isnan(o[i]), "%s should be unknown", em_col_names[i]);
    prom_doc_free(&d);
    /* a counter that goes back (server restart) gives an unknown interval, not a negative rate */
    prom_doc a, b;
    parse("vllm:generation_tokens_total 500\nvllm:num_preemptions_total 9\n", &a);
    parse("vllm:generation_tokens_total 20\nvllm:num_preemptions_total 0\n", &b);
    em_read(&a, EM_ENGINE_VLLM, 0, &r1);
    em_read(&b, EM_ENGINE_VLLM, 1000000000LL, &r2);
    em_derive(&r1, &r2, o);
    CHECK(isnan(o[EM_GENERATION_TOKENS_PER_S]) && isnan(o[EM_PREEMPTIONS]));
    prom_doc_free(&a);
    prom_doc_free(&b);
}

/* Speculative decoding on /metrics: vLLM's counters (docs/features/speculative_decoding/
 * acceptance_metrics.md: num_drafts = steps, num_accepted_tokens = accepted drafts) give the
 * interval's tokens per step, 1 + Δaccepted / Δdrafts; SGLang's spec_accept_length gauge is read
 * as it stands; a server without either leaves the series unknown. */
TEST(telemetry_prom_spec_decode_acceptance) {
    const char *a = "vllm:spec_decode_num_drafts_total{model_name=\"m\"} 100\n"
                    "vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 120\n";
    const char *b = "vllm:spec_decode_num_drafts_total{model_name=\"m\"} 300\n"
                    "vllm:spec_decode_num_accepted_tokens_total{model_name=\"m\"} 420\n";
    double o[EM_COL_COUNT];
    derive_pair(a, b, EM_ENGINE_VLLM, o);
    CHECK_NEAR(o[EM_SPEC_ACCEPT_LEN], 1 + 300.0 / 200.0, 1e-12);
    derive_pair("sglang:spec_accept_length 2.3\n", "sglang:spec_accept_length 2.1\n", EM_ENGINE_SGLANG, o);
    CHECK_NEAR(o[EM_SPEC_ACCEPT_LEN], 2.1, 1e-12);
    derive_pair("vllm:num_requests_running 1\n", "vllm:num_requests_running 1\n", EM_ENGINE_VLLM, o);
    CHECK(isnan(o[EM_SPEC_ACCEPT_LEN]));
}
