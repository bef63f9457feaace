/* Tests for results: build → write → load round trip, the per-request JSONL (every line parses and
 * carries the timestamps relative to the first send), atomic writes leave no temp file, bad
 * files are refused, and the terminal block carries vLLM's labels and layout. */
#include "harness.h"
#include "results/results.h"
#include "common/version.h"
#include <dirent.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define T0 INT64_C(5000000000)

/* Two OK requests (one with multi-token chunks) and one HTTP 503, all times known. */
static void build(recset *s) {
    recset_init(s);
    record *a = recset_add(s);
    a->index = 0;
    a->sched_ns = T0 - 1000;
    a->send_ns = T0;
    record_add_chunk(a, T0 + 50000000, 1);
    record_add_chunk(a, T0 + 60000000, 1);
    record_add_chunk(a, T0 + 70000000, 1);
    a->first_ns = a->chunk_ns[0];
    a->last_ns = a->chunk_ns[2];
    a->end_ns = a->last_ns + 100;
    a->in_tokens = 12;
    a->out_tokens_server = 3;
    record *b = recset_add(s);
    b->index = 1;
    b->sched_ns = b->send_ns = T0 + 10000000;
    record_add_chunk(b, b->send_ns + 40000000, 1);
    record_add_chunk(b, b->send_ns + 55000000, 3);
    b->first_ns = b->chunk_ns[0];
    b->last_ns = b->chunk_ns[1];
    b->end_ns = b->last_ns;
    b->in_tokens = 8;
    record *c = recset_add(s);
    c->index = 2;
    c->outcome = REC_ERR_HTTP;
    c->http_status = 503;
    c->sched_ns = c->send_ns = T0 + 20000000;
    c->end_ns = T0 + 25000000;
    c->error = strdup("HTTP 503: \"overloaded\"\n");
}

static int dir_has_tmp(const char *dir) {
    DIR *d = opendir(dir);
    int found = 0;
    struct dirent *e;
    while (d && (e = readdir(d)))
        if (strstr(e->d_name, ".tmp")) found = 1;
    if (d) closedir(d);
    return found;
}

TEST(results_round_trip) {
    recset s;
    build(&s);
    summary_opts o;
    summary_default_opts(&o);
    o.intended_rate_per_s = 10;
    json_t *cfg = json_pack("{s:s, s:i}", "target", "http://127.0.0.1:1", "concurrency", 4);
    results_meta m = { .producer = "bench", .command_line = "dsperf bench --rate 10/s", .config = cfg,
                       .partial = true, .partial_reason = "interrupted (SIGINT)" };
    json_t *doc = results_build(&s, &o, &m);
    CHECK(doc != NULL);
    json_decref(cfg);   /* the document holds its own copy */
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/results.json", harness_tmpdir());
    CHECK(results_write_json(path, doc, err, sizeof err) == 0);
    CHECK(!dir_has_tmp(harness_tmpdir()));
    json_t *back = results_load(path, err, sizeof err);
    CHECK_MSG(back != NULL, "load: %s", err);
    if (!back || !doc) { json_decref(doc); json_decref(back); recset_free(&s); return; }
    CHECK_STR(json_string_value(json_object_get(back, "schema")), "dsperf.results/1");
    CHECK_STR(json_string_value(json_object_get(back, "tool")), "dsperf");
    CHECK_STR(json_string_value(json_object_get(back, "version")), DSPERF_VERSION);
    CHECK_STR(json_string_value(json_object_get(back, "producer")), "bench");
    CHECK_STR(json_string_value(json_object_get(back, "command_line")), "dsperf bench --rate 10/s");
    const char *date = json_string_value(json_object_get(back, "date"));
    CHECK(date && strlen(date) == 20 && date[10] == 'T' && date[19] == 'Z');
    json_t *env = json_object_get(back, "environment");
    CHECK(json_is_string(json_object_get(env, "hostname")));
    CHECK(json_is_integer(json_object_get(env, "cpus")));
    CHECK(json_is_array(json_object_get(env, "gpus")));
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(back, "config"), "concurrency")), 4);
    CHECK(json_is_true(json_object_get(back, "partial")));
    CHECK_STR(json_string_value(json_object_get(back, "partial_reason")), "interrupted (SIGINT)");
    CHECK_EQ_INT(json_integer_value(json_object_get(back, "completed")), 2);
    CHECK_EQ_INT(json_integer_value(json_object_get(back, "failed")), 1);
    /* TTFT {50, 40} ms → mean 45; written with 10 significant digits, read back equal */
    CHECK_NEAR(json_number_value(json_object_get(back, "mean_ttft_ms")), 45, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(back, "p99_ttft_ms")),
               json_number_value(json_object_get(doc, "p99_ttft_ms")), 1e-8);
    CHECK(json_is_object(json_object_get(back, "timeline")));
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(json_object_get(back, "errors"), "http_status"), "503")), 1);
    json_decref(back);

    /* refusals: missing file, not JSON, wrong schema */
    char bad[512];
    snprintf(bad, sizeof bad, "%s/nope.json", harness_tmpdir());
    CHECK(results_load(bad, err, sizeof err) == NULL && strstr(err, "cannot read"));
    FILE *f = fopen(bad, "w");
    fputs("{\"schema\": \"other/1\"}", f);
    fclose(f);
    CHECK(results_load(bad, err, sizeof err) == NULL && strstr(err, "not a dsperf results file"));
    f = fopen(bad, "w");
    fputs("{oops", f);
    fclose(f);
    CHECK(results_load(bad, err, sizeof err) == NULL && strstr(err, "not valid JSON"));
    /* unwritable destination: error, and nothing half-written */
    snprintf(bad, sizeof bad, "%s/no/such/dir/r.json", harness_tmpdir());
    CHECK(results_write_json(bad, doc, err, sizeof err) == -1 && strstr(err, "cannot write"));
    json_decref(doc);
    recset_free(&s);
}

TEST(results_requests_jsonl) {
    recset s;
    build(&s);
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/req.jsonl", harness_tmpdir());
    CHECK(results_write_requests_jsonl(path, &s, err, sizeof err) == 0);
    CHECK(!dir_has_tmp(harness_tmpdir()));
    FILE *f = fopen(path, "r");
    CHECK(f != NULL);
    if (!f) { recset_free(&s); return; }
    char line[4096];
    json_t *l[3] = { 0 };
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_error_t je;
        json_t *j = json_loads(line, 0, &je);
        CHECK_MSG(j != NULL, "line %d does not parse: %s", n + 1, je.text);
        if (n < 3) l[n] = j; else json_decref(j);
        n++;
    }
    fclose(f);
    CHECK_EQ_INT(n, 3);
    if (n == 3 && l[0] && l[1] && l[2]) {
        /* times relative to the first send (T0) */
        CHECK_EQ_INT(json_integer_value(json_object_get(l[0], "send_ns")), 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(l[0], "sched_ns")), -1000);
        CHECK_EQ_INT(json_integer_value(json_object_get(l[0], "first_ns")), 50000000);
        CHECK_EQ_INT(json_integer_value(json_object_get(l[0], "end_ns")), 70000100);
        CHECK_NEAR(json_number_value(json_object_get(l[0], "ttft_ms")), 50, 1e-9);
        CHECK_NEAR(json_number_value(json_object_get(l[0], "e2el_ms")), 70, 1e-9);
        CHECK_NEAR(json_number_value(json_object_get(l[0], "queue_ms")), 0.001, 1e-9);
        CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(l[0], "chunk_ns"), 2)), 70000000);
        CHECK(json_object_get(l[0], "chunk_tokens") == NULL);
        CHECK_EQ_INT(json_integer_value(json_object_get(l[0], "out_tokens")), 3);
        CHECK(json_is_null(json_object_get(l[0], "in_tokens_server")));
        CHECK_STR(json_string_value(json_object_get(l[0], "outcome")), "ok");
        CHECK_EQ_INT(json_integer_value(json_object_get(l[1], "send_ns")), 10000000);
        CHECK_EQ_INT(json_integer_value(json_array_get(json_object_get(l[1], "chunk_tokens"), 1)), 3);
        CHECK_STR(json_string_value(json_object_get(l[2], "outcome")), "http");
        CHECK_EQ_INT(json_integer_value(json_object_get(l[2], "http_status")), 503);
        CHECK(json_is_null(json_object_get(l[2], "first_ns")));
        CHECK(json_is_null(json_object_get(l[2], "ttft_ms")));
        CHECK_STR(json_string_value(json_object_get(l[2], "error")), "HTTP 503: \"overloaded\"\n");
    }
    for (int i = 0; i < 3; i++) json_decref(l[i]);
    recset_free(&s);
}

TEST(results_print_summary_vllm_labels) {
    recset s;
    build(&s);
    summary_opts o;
    summary_default_opts(&o);
    o.intended_rate_per_s = 10;
    o.max_concurrency = 8;
    o.slo_ttft_ms = 45;
    results_meta m = { .producer = "bench", .command_line = "x", .partial = true, .partial_reason = "interrupted" };
    json_t *doc = results_build(&s, &o, &m);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    results_print_summary(f, doc);
    fclose(f);
    const char *labels[] = {
        "============ Serving Benchmark Result ============\n",
        "(partial: interrupted)\n",
        "Successful requests:                     2         \n",
        "Failed requests:                         1         \n",
        "Maximum request concurrency:             8         \n",
        "Request rate configured (RPS):           10.00     \n",
        "Benchmark duration (s):", "Total input tokens:                      20        \n",
        "Total generated tokens:                  5         \n",
        "Request throughput (req/s):", "Request goodput (req/s):",
        "Output token throughput (tok/s):", "Peak output token throughput (tok/s):",
        "Peak concurrent requests:                3.00      \n", "Total token throughput (tok/s):",
        "---------------Time to First Token----------------\n",
        "Mean TTFT (ms):                          45.00     \n",
        "Median TTFT (ms):", "P99 TTFT (ms):", "P99.9 TTFT (ms):",
        "-----Time per Output Token (excl. 1st token)------\n", "Mean TPOT (ms):",
        "---------------Inter-token Latency----------------\n", "Mean ITL (ms):", "P99 ITL (ms):",
        "Inter-token Latency (per token)", "P99 ITL/token (ms):",
        "----------------End-to-end Latency----------------\n", "Mean E2EL (ms):", "P99 E2EL (ms):",
        "Client-side Queueing", "Mean Client Queue Time (ms):",
        "Latency from schedule", "P99 TTFT from schedule (ms):", "P99 E2EL from schedule (ms):",
        "Errors", "HTTP 503:", "P99 TTFT incl. failures (ms):            inf",
        "\n==================================================\n",
    };
    const char *at = buf;
    for (size_t i = 0; buf && i < sizeof labels / sizeof labels[0]; i++) {
        const char *p = strstr(at, labels[i]);
        CHECK_MSG(p != NULL, "missing or out of order: \"%s\"", labels[i]);
        if (p) at = p;
    }
    /* no SLO → no goodput line; closed loop → no configured-rate line; no cap → no concurrency line */
    free(buf);
    json_decref(doc);
    summary_default_opts(&o);
    doc = results_build(&s, &o, NULL);
    buf = NULL;
    f = open_memstream(&buf, &len);
    results_print_summary(f, doc);
    fclose(f);
    CHECK(buf && !strstr(buf, "Request goodput"));
    CHECK(buf && !strstr(buf, "Request rate configured"));
    CHECK(buf && !strstr(buf, "Maximum request concurrency"));
    CHECK(buf && !strstr(buf, "(partial"));
    free(buf);
    json_decref(doc);
    recset_free(&s);
}

TEST(results_print_summary_client_lag_warning) {
    /* 10 sends 1 s apart against an intended 2/s: the block must say the client fell behind */
    recset s;
    recset_init(&s);
    for (int i = 0; i < 10; i++) {
        record *r = recset_add(&s);
        r->sched_ns = r->send_ns = T0 + (int64_t)i * 1000000000;
        record_add_chunk(r, r->send_ns + 1000000, 1);
        r->first_ns = r->last_ns = r->end_ns = r->chunk_ns[0];
    }
    summary_opts o;
    summary_default_opts(&o);
    o.intended_rate_per_s = 2;
    json_t *doc = results_build(&s, &o, NULL);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    results_print_summary(f, doc);
    fclose(f);
    CHECK(buf && strstr(buf, "WARNING: CLIENT FELL BEHIND ITS PLAN (achieved 1.00 req/s < 90% of intended 2.00 req/s)"));
    free(buf);
    json_decref(doc);
    recset_free(&s);
}

/* The server's own figures (vLLM's per-request metrics, SGLang's meta_info, speculative decoding)
 * survive the per-request file: written, read back, the same record; the stream's acceptance
 * length is written beside them (chunks of 1, then 3 and 2 tokens: 5/2). */
TEST(results_requests_server_fields_round_trip) {
    recset s;
    recset_init(&s);
    record *r = recset_add(&s);
    r->send_ns = r->sched_ns = 1000000000;
    record_add_chunk(r, 1050000000, 1);
    record_add_chunk(r, 1060000000, 3);
    record_add_chunk(r, 1070000000, 2);
    r->first_ns = 1050000000;
    r->last_ns = r->end_ns = 1070000000;
    r->server_queue_ms = 12.25;
    r->server_ttft_ms = 30.5;
    r->server_decode_ms = 20.125;
    r->server_e2e_ms = 64.5;
    r->spec_steps_server = 2;
    r->spec_accepted_server = 3;
    r->spec_drafted_server = 6;
    r->spec_accept_len_server = 2.5;
    char path[512], err[256] = "";
    snprintf(path, sizeof path, "%s/srv.jsonl", harness_tmpdir());
    CHECK(results_write_requests_jsonl(path, &s, err, sizeof err) == 0);
    recset back;
    recset_init(&back);
    int64_t t0;
    CHECK(results_read_requests_jsonl(path, &back, &t0, err, sizeof err) == 0);
    CHECK_EQ_INT(back.n, 1);
    if (back.n == 1) {
        const record *b = &back.v[0];
        CHECK_NEAR(b->server_queue_ms, 12.25, 1e-9);
        CHECK_NEAR(b->server_ttft_ms, 30.5, 1e-9);
        CHECK_NEAR(b->server_decode_ms, 20.125, 1e-9);
        CHECK_NEAR(b->server_e2e_ms, 64.5, 1e-9);
        CHECK_EQ_INT(b->spec_steps_server, 2);
        CHECK_EQ_INT(b->spec_accepted_server, 3);
        CHECK_EQ_INT(b->spec_drafted_server, 6);
        CHECK_NEAR(b->spec_accept_len_server, 2.5, 1e-12);
    }
    FILE *f = fopen(path, "r");
    char line[4096] = "";
    if (f) { if (!fgets(line, sizeof line, f)) line[0] = 0; fclose(f); }
    json_t *j = json_loads(line, 0, NULL);
    CHECK_NEAR(json_number_value(json_object_get(j, "acceptance_length")), 2.5, 1e-12);
    json_decref(j);
    recset_free(&back);
    recset_free(&s);
}
