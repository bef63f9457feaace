/* Integration tests of `dsperf bench` against `dsperf serve` on loopback (known timing, injected
 * faults) and against a scripted raw-socket server (byte-exact real-server quirks). Bounds come
 * from the configured timing and hold on any machine under any load (the server never emits
 * early; a backlog only grows when the machine is slower); counts are exact. */
#include "harness.h"
#include "testutil.h"
#include "common/fileio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>

static json_t *bench_json(const test_server *s, const char *args, int *exit_code) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/r%d.json", harness_tmpdir(), rand());
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --out %s %s", s->url, path, args);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    if (exit_code) *exit_code = rc;
    if (rc != 0 && rc != 1) fprintf(stderr, "    bench exited %d: %s\n", rc, err ? err : "");
    free(err);
    return test_load_json(path);
}

static json_t *err_class(json_t *r) { return json_object_get(r, "errors"); }
static double err_count(json_t *r, const char *cls) {
    json_t *v = json_object_get(err_class(r), cls);
    return json_is_number(v) ? json_number_value(v) : 0;
}
static double err_status(json_t *r, const char *code) {
    json_t *v = json_object_get(json_object_get(err_class(r), "http_status"), code);
    return json_is_number(v) ? json_number_value(v) : 0;
}

/* Timing, as far as it holds on any machine: the server emits on absolute deadlines and never
 * early, and a byte cannot arrive before it is written, so every request's TTFT is at least the
 * configured 50 ms and its E2EL at least 50 + (n - 1) x 10 ms, measured from the client's own
 * per-request timestamps; the summary's medians are those of the per-request values (one
 * definition). How close to the configured values the client lands is a property of the machine
 * and its load: `make bench` measures that (timing error at 1,000 streams, with the server's own
 * lateness beside it), never a test on shared cores. Counts are exact. */
static void timing_at(int concurrency, int requests, int out_tokens) {
    test_server s;
    if (test_serve_start(&s, "--ttft 50ms --itl 10ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[1024], reqs[512];
    snprintf(reqs, sizeof reqs, "%s/timing.jsonl", harness_tmpdir());
    snprintf(args, sizeof args, "--concurrency %d --requests %d --dataset random:in=16,out=%d --save-requests %s", concurrency,
             requests, out_tokens, reqs);
    json_t *r = bench_json(&s, args, NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), requests);
    CHECK_EQ_INT(test_num(r, "failed"), 0);
    CHECK_EQ_INT(test_num(r, "total_output_tokens"), (long long)requests * out_tokens);
    CHECK_EQ_INT(test_num(r, "total_input_tokens"), (long long)requests * 16);
    /* a server that is no simulator makes no prediction: the results carry no interval */
    CHECK(json_object_get(r, "prediction_interval") == NULL);
    /* a user holds at most one connection and reuses it; on a busy machine some users start after
     * others have finished and take a pooled connection, so this is a ceiling */
    CHECK(test_num(r, "new_connections") >= 1 && test_num(r, "new_connections") <= concurrency);
    const double ttft_min_ms = 50.0, e2el_min_ms = 50.0 + (out_tokens - 1) * 10.0;
    double *ttft = calloc((size_t)requests, sizeof *ttft), *e2el = calloc((size_t)requests, sizeof *e2el);
    int n = 0, early = 0;
    FILE *f = fopen(reqs, "r");
    CHECK(f != NULL);
    char line[1 << 16];
    while (f && n < requests && fgets(line, sizeof line, f)) {
        json_t *q = json_loads(line, 0, NULL);
        if (!q) continue;
        ttft[n] = test_num(q, "ttft_ms");
        e2el[n] = test_num(q, "e2el_ms");
        CHECK_EQ_INT(json_array_size(json_object_get(q, "chunk_ns")), out_tokens);
        if (!(ttft[n] >= ttft_min_ms) || !(e2el[n] >= e2el_min_ms)) {
            if (early++ < 3) fprintf(stderr, "    request %d: TTFT %.3f ms (>= %.0f), E2EL %.3f ms (>= %.0f)\n", n, ttft[n], ttft_min_ms, e2el[n], e2el_min_ms);
        }
        n++;
        json_decref(q);
    }
    if (f) fclose(f);
    CHECK_EQ_INT(n, requests);
    CHECK_MSG(early == 0, "%d requests measured shorter than the server can deliver", early);
    /* the summary's medians are the per-request medians (numpy's linear interpolation) */
    qsort(ttft, (size_t)n, sizeof *ttft, test_cmp_double);
    qsort(e2el, (size_t)n, sizeof *e2el, test_cmp_double);
    if (n > 0) {
        CHECK_NEAR(test_num(r, "median_ttft_ms"), test_quantile_sorted(ttft, (size_t)n, 0.5), 1e-3);
        CHECK_NEAR(test_num(r, "median_e2el_ms"), test_quantile_sorted(e2el, (size_t)n, 0.5), 1e-3);
    }
    free(ttft);
    free(e2el);
    json_decref(r);
}

TEST(bench_timing_closed_loop_1_stream) { timing_at(1, 20, 20); }
TEST(bench_timing_closed_loop_64_streams) { timing_at(64, 256, 20); }
TEST(bench_timing_closed_loop_512_streams) { timing_at(512, 1024, 10); }

/* Open loop far above what 4 in-flight slots can serve: the server's view (TTFT from send) stays
 * at 50 ms while the user's view (from the schedule) grows with the client backlog. 100 requests
 * at 400/s arrive within ~0.25 s; 4 slots of 140 ms each serve ~28/s, so the last request waits
 * ~3.3 s: p99 from schedule must exceed 2 s. */
TEST(bench_open_loop_queue_is_measured) {
    test_server s;
    if (test_serve_start(&s, "--ttft 50ms --itl 10ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    json_t *r = bench_json(&s, "--rate 400/s --max-concurrency 4 --requests 100 --dataset random:in=8,out=10 --seed 3", NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 100);
    CHECK(test_num(r, "min_ttft_ms") >= 50.0);
    /* from send, TTFT is the server's 50 ms plus delivery; from the schedule it holds the backlog
     * of seconds, which a slower machine only lengthens */
    CHECK(test_num(r, "p99_ttft_from_schedule_ms") > 2000.0);
    CHECK(test_num(r, "median_ttft_ms") < test_num(r, "median_ttft_from_schedule_ms") / 5);
    CHECK(test_num(r, "mean_queue_ms") > 1000.0);
    CHECK(test_num(r, "max_concurrent_requests") <= 4);
    json_decref(r);
}

/* Every fault class, injected with a seed, is counted by the client exactly as the server says
 * it injected it. */
/* Starts serve with serve_args, runs bench with bench_args, scrapes the server's /metrics after
 * the run and stops it. 0 when both the results and the metrics came back. */
static int bench_and_scrape(const char *serve_args, const char *bench_args, json_t **r, char **metrics) {
    test_server s;
    *r = NULL;
    *metrics = NULL;
    if (test_serve_start(&s, serve_args) != 0) { CHECK_MSG(0, "serve did not start"); return -1; }
    *r = bench_json(&s, bench_args, NULL);
    char murl[128];
    snprintf(murl, sizeof murl, "%s/metrics", s.url);
    *metrics = test_http_get(murl);
    test_serve_stop(&s);
    CHECK(*r != NULL && *metrics != NULL);
    if (*r && *metrics) return 0;
    json_decref(*r);
    free(*metrics);
    return -1;
}

TEST(bench_faults_counted_exactly) {
    json_t *r;
    char *m;
    if (bench_and_scrape("--ttft 5ms --itl 1ms --seed 7 --fail-rate 0.08 --status-429-rate 0.08 --drop-rate 0.08 --error-event-rate 0.08",
                         "--concurrency 8 --requests 300 --dataset random:in=8,out=20", &r, &m) != 0) return;
    double inj500 = test_prom_value(m, "dsperf_injected_faults_total{kind=\"http_500\"}");
    double inj429 = test_prom_value(m, "dsperf_injected_faults_total{kind=\"http_429\"}");
    double injdrop = test_prom_value(m, "dsperf_injected_faults_total{kind=\"drop\"}");
    double injerr = test_prom_value(m, "dsperf_injected_faults_total{kind=\"error_event\"}");
    CHECK(inj500 > 0 && inj429 > 0 && injdrop > 0 && injerr > 0);
    CHECK_EQ_INT(err_status(r, "500"), inj500);
    CHECK_EQ_INT(err_status(r, "429"), inj429);
    CHECK_EQ_INT(err_count(r, "http"), inj500 + inj429);
    CHECK_EQ_INT(err_count(r, "truncated"), injdrop);
    CHECK_EQ_INT(err_count(r, "stream"), injerr);
    CHECK_EQ_INT(test_num(r, "completed") + test_num(r, "failed"), 300);
    CHECK_EQ_INT(test_num(r, "failed"), inj500 + inj429 + injdrop + injerr);
    json_decref(r);
    free(m);
}

/* serve --threads 3: connections spread over three loops, each with its own engine; /metrics
 * is their sum, so tokens, successes and injected faults still match what the client saw. */
TEST(bench_against_multi_loop_server) {
    json_t *r;
    char *m;
    if (bench_and_scrape("--threads 3 --ttft 5ms --itl 2ms --seed 3 --fail-rate 0.05 --drop-rate 0.05",
                         "--concurrency 24 --requests 240 --client-threads 2 --dataset random:in=8,out=6", &r, &m) != 0) return;
    double inj500 = test_prom_value(m, "dsperf_injected_faults_total{kind=\"http_500\"}");
    double injdrop = test_prom_value(m, "dsperf_injected_faults_total{kind=\"drop\"}");
    CHECK(inj500 > 0 && injdrop > 0);
    CHECK_EQ_INT(err_status(r, "500"), inj500);
    CHECK_EQ_INT(err_count(r, "truncated"), injdrop);
    CHECK_EQ_INT(test_num(r, "completed") + test_num(r, "failed"), 240);
    CHECK_EQ_INT(test_num(r, "failed"), inj500 + injdrop);
    double done = test_num(r, "completed");
    CHECK_EQ_INT(test_num(r, "total_output_tokens"), done * 6);
    CHECK_EQ_INT(test_prom_value(m, "vllm:request_success_total{finished_reason=\"length\""), done);
    /* the generation counter also holds the tokens of dropped streams, sent before the drop */
    CHECK(test_prom_value(m, "vllm:generation_tokens_total") >= done * 6);
    double loops[3], sum = 0;
    int busy = 0;
    for (int i = 0; i < 3; i++) {
        char k[64];
        snprintf(k, sizeof k, "dsperf_loop_requests_total{loop=\"%d\"}", i);
        loops[i] = test_prom_value(m, k);
        sum += loops[i];
        busy += loops[i] > 0;
    }
    CHECK_EQ_INT(sum, 240);
    CHECK_MSG(busy >= 2, "24 connections all landed on one loop: %g %g %g", loops[0], loops[1], loops[2]);
    json_decref(r);
    free(m);
}

/* A stall is not a failure: it shows up as one long inter-token gap. Every request takes at least
 * 10 + 19 x 5 + 300 ms (the server's deadlines); the stall's gap is 300 ms less however late the
 * chunk before it arrived, and no busy machine delays one chunk by half of that. */
TEST(bench_stall_shows_in_itl_tail) {
    test_server s;
    if (test_serve_start(&s, "--ttft 10ms --itl 5ms --stall-rate 1 --stall 300ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    json_t *r = bench_json(&s, "--concurrency 2 --requests 4 --dataset random:in=8,out=20", NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 4);
    CHECK_EQ_INT(test_num(r, "failed"), 0);
    CHECK(test_num(r, "min_e2el_ms") >= 10 + 19 * 5 + 300);
    CHECK(test_num(r, "max_itl_ms") >= 150.0);
    CHECK(test_num(r, "median_itl_ms") < 150.0);
    json_decref(r);
}

/* Several tokens per chunk (speculative decoding / MTP): the chunk view keeps the chunk gaps, the
 * per-token view divides them. */
TEST(bench_multi_token_chunks_per_token_view) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 12ms --tokens-per-chunk 3 --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    json_t *r = bench_json(&s, "--concurrency 2 --requests 6 --dataset random:in=8,out=30", NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "total_output_tokens"), 180);
    /* every chunk carries 3 tokens: the per-token view is the chunk view divided by 3, gap by gap
     * (its pooled histogram is within the HDR's 0.05 %); 10 chunks per request, the last due
     * 20 + 9 x 12 ms after the request */
    CHECK_NEAR(test_num(r, "median_itl_per_token_ms"), test_num(r, "median_itl_ms") / 3, 1e-3 * test_num(r, "median_itl_ms"));
    CHECK_NEAR(test_num(r, "mean_itl_per_token_ms"), test_num(r, "mean_itl_ms") / 3, 1e-3 * test_num(r, "mean_itl_ms"));
    CHECK(test_num(r, "min_e2el_ms") >= 20 + 9 * 12);
    /* keep-alive: each closed-loop user opens one connection and reuses it */
    CHECK_EQ_INT(test_num(r, "new_connections"), 2);
    json_decref(r);
}

TEST(bench_bad_input_one_line_exit_2) {
    char path[512];
    snprintf(path, sizeof path, "%s/never.json", harness_tmpdir());
    char cmd[1024], *err = NULL;
    /* nothing listens on port 1 */
    snprintf(cmd, sizeof cmd, "bench --url http://127.0.0.1:1 --concurrency 1 --out %s", path);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "cannot reach") && strchr(err, '\n') == strrchr(err, '\n'));
    free(err);
    CHECK(access(path, F_OK) != 0);
    const char *bad[] = {
        "bench --concurrency 1",                                   /* no --url */
        "bench --url http://127.0.0.1:1 --rate abc",
        "bench --url http://127.0.0.1:1 --concurrency 0",
        "bench --url http://127.0.0.1:1 --concurrency 2 --rate 3/s",
        "bench --url http://127.0.0.1:1 --concurrency 2 --bogus",
        "bench --url ftp://x --concurrency 2",
        "bench --url http://127.0.0.1:1 --concurrency 2 --slo ttft=fast",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        int rc = test_run(bad[i], NULL, &err);
        CHECK_MSG(rc == 2, "'%s' exited %d", bad[i], rc);
        CHECK_MSG(err && strstr(err, "dsperf: error:"), "'%s' said: %s", bad[i], err ? err : "");
        free(err);
    }
}

TEST(bench_bad_target_and_dataset) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char path[512], cmd[1024], *err = NULL;
    snprintf(path, sizeof path, "%s/never.json", harness_tmpdir());
    /* a wrong path: GET /nothing/v1/models is a 404 */
    snprintf(cmd, sizeof cmd, "bench --url %s/nothing --concurrency 1 --out %s", s.url, path);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "OpenAI-compatible"));
    free(err); err = NULL;
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 1 --dataset jsonl:/nonexistent/x.jsonl --out %s", s.url, path);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "/nonexistent/x.jsonl"));
    free(err); err = NULL;
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 1 --dataset wat:1 --out %s", s.url, path);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    free(err);
    test_serve_stop(&s);
    CHECK(access(path, F_OK) != 0);
}

/* Ctrl-C in the middle: what was measured is written, marked partial. */
TEST(bench_interrupt_writes_partial_results) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 5ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/partial.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 4 --duration 60s --dataset random:in=8,out=20 --quiet --out %s", s.url, path);
    /* 14 answered by the server: the client, with at most 4 in flight, has completed at least 10 */
    int rc = test_run_interrupt_when_served(cmd, &s, 14, 1, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 1);
    json_t *r = test_load_json(path);
    CHECK(r != NULL);
    if (!r) return;
    CHECK(json_is_true(json_object_get(r, "partial")));
    CHECK(test_num(r, "completed") >= 10);
    json_decref(r);
}

/* Byte-exact quirks of real servers, fed in 7-byte pieces: CRLF line ends, comments and
 * keep-alives, a role-only first chunk, a chunk carrying two tokens, a usage-only chunk. */
TEST(bench_real_server_quirks_chat_stream) {
    const char *resp =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
        ": keep-alive\r\n\r\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\r\n\r\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" Hello\"}}]}\r\n\r\n"
        ":\r\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" big world\"}}]}\r\n\r\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\" hmm\"}}]}\r\n\r\n"
        "data: {\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"length\"}]}\r\n\r\n"
        "data: {\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,\"total_tokens\":13}}\r\n\r\n"
        "data: [DONE]\r\n\r\n";
    int port;
    test_script *sc = test_script_start(resp, strlen(resp), 7, &port);
    test_server fake = { .port = port };
    snprintf(fake.url, sizeof fake.url, "http://127.0.0.1:%d", port);
    json_t *r = bench_json(&fake, "--api chat --concurrency 1 --requests 3 --dataset random:in=5,out=4", NULL);
    test_script_stop(sc);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 3);
    CHECK_EQ_INT(test_num(r, "total_output_tokens"), 12);   /* from usage */
    CHECK_EQ_INT(test_num(r, "output_token_mismatches"), 0);  /* client counted 1+2+1 words */
    json_decref(r);
}

static json_t *scripted(const char *resp, const char *args) {
    int port;
    test_script *sc = test_script_start(resp, strlen(resp), 0, &port);
    test_server fake = { .port = port };
    snprintf(fake.url, sizeof fake.url, "http://127.0.0.1:%d", port);
    json_t *r = bench_json(&fake, args, NULL);
    test_script_stop(sc);
    return r;
}

TEST(bench_real_server_error_shapes_classified) {
    struct { const char *resp, *cls; } cases[] = {
        { "HTTP/1.1 500 Internal Server Error\r\nContent-Type: application/json\r\nConnection: close\r\n\r\n"
          "{\"error\":{\"message\":\"boom\",\"type\":\"server_error\",\"code\":500}}", "http" },
        { "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nConnection: close\r\n\r\n<html>hello</html>", "invalid_json" },
        { "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
          "data: {\"choices\":[{\"text\":\" a\"}]}\n\nerror: {\"code\":500,\"message\":\"slot failed\"}\n\n", "stream" },
        { "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
          "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"error\":{\"message\":\"oops\"}}\n\n", "stream" },
        { "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
          "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {\"choices\":[{\"text\":\" b\"}]}\n\n", "truncated" },
        { "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n"
          "data: {\"choices\":[{\"text\":\" a\"}]}\n\ndata: {not json\n\n", "invalid_json" },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = scripted(cases[i].resp, "--concurrency 1 --requests 2 --dataset random:in=5,out=4");
        CHECK_MSG(r != NULL, "case %zu: no results", i);
        if (!r) continue;
        CHECK_MSG(err_count(r, cases[i].cls) == 2, "case %zu: %s count %g", i, cases[i].cls, err_count(r, cases[i].cls));
        CHECK_EQ_INT(test_num(r, "completed"), 0);
        json_decref(r);
    }
}

/* Telemetry rides along on the same clock: the server's own /metrics (vLLM names from the
 * simulated engine) show requests running during the run; a missing NVML is a warning only. */
TEST(bench_telemetry_server_metrics_and_host) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --speedup 20") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[512];
    snprintf(args, sizeof args, "--concurrency 16 --requests 64 --dataset random:in=1024,out=256 --server-metrics %s/metrics --host-metrics --telemetry-interval 20ms --gpu-ids all", s.url);
    int rc;
    json_t *r = bench_json(&s, args, &rc);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(rc, 0);
    json_t *tel = json_object_get(r, "telemetry");
    json_t *srv = json_object_get(json_object_get(tel, "server"), "series");
    json_t *running = json_object_get(srv, "running");
    CHECK(json_array_size(running) >= 3);
    double max_running = 0;
    size_t i; json_t *v;
    json_array_foreach(running, i, v) if (json_is_number(v) && json_number_value(v) > max_running) max_running = json_number_value(v);
    CHECK(max_running >= 8 && max_running <= 16);
    CHECK(json_is_object(json_object_get(json_object_get(tel, "host"), "series")));
    CHECK(json_is_object(json_object_get(r, "telemetry_summary")));
    json_decref(r);
}

/* With the served model's tokenizer, prompts are exactly N tokens (checked before the run) and
 * the input count is what the server sees: the prompt plus BOS. */
TEST(bench_tokenizer_exact_input_lengths) {
    const char *tokp = harness_testdata_file("tokenizers/deepseek-v3/tokenizer.json");
    if (!tokp) SKIP_NO_SHARED_DATA("tokenizers/deepseek-v3/tokenizer.json");
    char tok[700];
    snprintf(tok, sizeof tok, "%s", tokp);
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[1024];
    snprintf(args, sizeof args, "--concurrency 4 --requests 12 --dataset random:in=100,out=8 --tokenizer %s", tok);
    json_t *r = bench_json(&s, args, NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 12);
    CHECK_EQ_INT(test_num(r, "total_input_tokens"), 12 * 101);
    json_t *cfg = json_object_get(r, "config");
    CHECK_STR(json_string_value(json_object_get(cfg, "length_unit")), "tokens");
    CHECK_STR(json_string_value(json_object_get(cfg, "token_counter")), "tokenizer");
    CHECK_STR(json_string_value(json_object_get(r, "output_tokens_source")), "server_usage");
    json_decref(r);
    /* without usage from the server, the tokenizer counts the generated text, and says so */
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    snprintf(args, sizeof args, "--concurrency 2 --requests 4 --dataset random:in=20,out=8 --no-usage --tokenizer %s", tok);
    r = bench_json(&s, args, NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_STR(json_string_value(json_object_get(r, "output_tokens_source")), "client_tokenizer");
    CHECK(test_num(r, "total_output_tokens") >= 32);
    json_decref(r);
}

/* Several client threads split the plan but read as one client: every request index once, the
 * same token totals, a constant-rate schedule that stays exactly constant across the shards, and
 * a trace whose requests keep their own offsets. */
TEST(bench_client_threads_shard_the_plan) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 2ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[1024], reqs[512];
    snprintf(reqs, sizeof reqs, "%s/c.jsonl", harness_tmpdir());
    snprintf(args, sizeof args, "--concurrency 6 --requests 31 --client-threads 3 --dataset random:in=8,out=5 --save-requests %s", reqs);
    json_t *r = bench_json(&s, args, NULL);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(test_num(r, "completed"), 31);
        CHECK_EQ_INT(test_num(r, "total_output_tokens"), 155);
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(r, "client"), "threads")), 3);
        json_decref(r);
    }
    FILE *f = fopen(reqs, "r");
    int seen[31] = {0}, lines = 0;
    char line[65536];
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        long long ix = json_integer_value(json_object_get(o, "index"));
        if (ix >= 0 && ix < 31) seen[ix]++;
        lines++;
        json_decref(o);
    }
    if (f) fclose(f);
    CHECK_EQ_INT(lines, 31);
    for (int i = 0; i < 31; i++) CHECK_MSG(seen[i] == 1, "index %d seen %d times", i, seen[i]);

    /* constant 200/s over 2 threads: scheduled times 5 ms apart exactly, in index order */
    snprintf(args, sizeof args, "--rate 200/s --arrival constant --requests 20 --client-threads 2 --dataset random:in=8,out=3 --save-requests %s", reqs);
    r = bench_json(&s, args, NULL);
    test_serve_stop(&s);
    CHECK(r && test_num(r, "completed") == 20);
    json_decref(r);
    f = fopen(reqs, "r");
    long long prev = -1, n = 0;
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        long long sched = json_integer_value(json_object_get(o, "sched_ns"));
        if (prev >= 0) CHECK_MSG(llabs(sched - prev - 5000000) <= 1, "gap %lld ns", sched - prev);
        prev = sched;
        n++;
        json_decref(o);
    }
    if (f) fclose(f);
    CHECK_EQ_INT(n, 20);
}

/* --ramp '0->200/s over 1s' with constant spacing: request k is scheduled when Λ(t) = 100 t²
 * reaches k+1, so request 24 comes 0.4 s after request 0 (0.5 s vs 0.1 s), and after the ramp
 * requests are 5 ms apart. */
TEST(bench_ramp_schedule) {
    test_server s;
    if (test_serve_start(&s, "--ttft 2ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[1024], reqs[512];
    snprintf(reqs, sizeof reqs, "%s/ramp.jsonl", harness_tmpdir());
    snprintf(args, sizeof args, "--ramp '0->200/s over 1s' --arrival constant --requests 130 --dataset random:in=4,out=2 --save-requests %s", reqs);
    json_t *r = bench_json(&s, args, NULL);
    test_serve_stop(&s);
    CHECK(r && test_num(r, "completed") == 130);
    json_decref(r);
    long long sched[130] = {0};
    FILE *f = fopen(reqs, "r");
    char line[65536];
    while (f && fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        long long ix = json_integer_value(json_object_get(o, "index"));
        if (ix >= 0 && ix < 130) sched[ix] = json_integer_value(json_object_get(o, "sched_ns"));
        json_decref(o);
    }
    if (f) fclose(f);
    CHECK_NEAR((sched[24] - sched[0]) / 1e9, 0.4, 1e-6);
    CHECK_NEAR((sched[99] - sched[0]) / 1e9, 0.9, 1e-6);
    CHECK_NEAR((sched[129] - sched[128]) / 1e6, 5.0, 1e-3);
    char *err = NULL;
    CHECK_EQ_INT(test_run("bench --url http://127.0.0.1:1 --ramp '0->40/s'", NULL, &err), 2);
    free(err);
}

/* Two request classes drawn 3:1 by weight, each with its own dataset and SLO, each summarised on
 * its own: counts near the weights, and each class's token totals are exactly its own. */
TEST(bench_request_classes_reported_separately) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    json_t *r = bench_json(&s, "--rate 300/s --requests 160 --class 'chat;weight=3;dataset=random:in=16,out=10;slo=ttft=1s' "
                               "--class 'batch;weight=1;dataset=random:in=64,out=30'", NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 160);
    json_t *cl = json_object_get(r, "classes");
    CHECK_EQ_INT(json_array_size(cl), 2);
    json_t *chat = json_array_get(cl, 0), *batch = json_array_get(cl, 1);
    CHECK_STR(json_string_value(json_object_get(chat, "class")), "chat");
    double nc = test_num(chat, "completed"), nb = test_num(batch, "completed");
    CHECK_EQ_INT(nc + nb, 160);
    CHECK_NEAR(nc, 120, 6 * sqrt(160 * 0.75 * 0.25));   /* binomial, 6 standard deviations */
    CHECK_EQ_INT(test_num(chat, "total_output_tokens"), nc * 10);
    CHECK_EQ_INT(test_num(batch, "total_output_tokens"), nb * 30);
    CHECK_EQ_INT(test_num(chat, "total_input_tokens"), nc * 16);
    CHECK_EQ_INT(test_num(batch, "total_input_tokens"), nb * 64);
    CHECK(json_is_number(json_object_get(chat, "request_goodput")));    /* chat has an SLO */
    CHECK(!json_object_get(batch, "request_goodput"));                   /* batch has none */
    CHECK(!json_object_get(chat, "client_fell_behind"));                 /* a whole-run property */
    /* the report shows the classes side by side */
    char path[512], html[512], cmd[1200];
    snprintf(path, sizeof path, "%s/classes.json", harness_tmpdir());
    snprintf(html, sizeof html, "%s/classes.html", harness_tmpdir());
    json_dump_file(r, path, 0);
    snprintf(cmd, sizeof cmd, "report %s -o %s", path, html);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *page = NULL;
    size_t len = 0;
    CHECK(fileio_read_all(html, &page, &len) == 0);
    CHECK(page && strstr(page, "Request classes") && strstr(page, ">chat<") && strstr(page, ">batch<"));
    free(page);
    json_decref(r);
    char *err = NULL;
    CHECK_EQ_INT(test_run("bench --url http://127.0.0.1:1 --rate 1/s --class 'a;weight=0'", NULL, &err), 2);
    free(err); err = NULL;
    CHECK_EQ_INT(test_run("bench --url http://127.0.0.1:1 --rate 1/s --class a --class a", NULL, &err), 2);
    free(err);
}
