/* Real wire formats, replayed byte for byte: llama.cpp's own transcripts (captured with curl from a
 * running llama-server, tests/fixtures/llamacpp/) and vLLM, SGLang and TGI transcripts written from
 * their documented formats (tests/fixtures/{vllm,sglang,tgi}/, each file's source in its README).
 * One data file pair per case, curl's way: NAME.headers (the status line and headers as received)
 * followed by NAME.body (the raw body, chunked framing included). The scripted server answers the
 * run's POSTs with one case and GET /v1/models, /props, /metrics with the server's own answers, so
 * the client, the results (error_examples, deployment) and the diagnosis meet what real servers
 * send: an `error:` line inside a 200 stream, usage only in the last chunk with non-empty choices,
 * no role delta, fewer events than tokens, 500 for invalid JSON, `data:` without a space, a 429
 * "overloaded", reasoning_content deltas. */
#include "harness.h"
#include "testutil.h"
#include "diagnose/diagnose.h"
#include "telemetry/engine_metrics.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FIX "tests/fixtures"

/* NAME.headers + NAME.body (or NAME.txt) of a fixture directory, as one raw response. */
static char *transcript(const char *dir, const char *name, size_t *len) {
    static const char *const parts[][2] = { {".headers", ".body"}, {".headers", ".txt"} };
    for (size_t p = 0; p < 2; p++) {
        char path[2][512];
        FILE *f[2];
        for (int k = 0; k < 2; k++) {
            snprintf(path[k], sizeof path[k], FIX "/%s/%s%s", dir, name, parts[p][k]);
            f[k] = fopen(path[k], "rb");
        }
        if (!f[0] || !f[1]) {
            for (int k = 0; k < 2; k++) if (f[k]) fclose(f[k]);
            continue;
        }
        size_t cap = 1 << 16, n = 0;
        char *buf = malloc(cap);
        for (int k = 0; k < 2 && buf; k++) {
            size_t r;
            while ((r = fread(buf + n, 1, cap - n, f[k])) > 0) {
                n += r;
                if (n == cap) { char *nb = realloc(buf, cap *= 2); if (!nb) { free(buf); buf = NULL; break; } buf = nb; }
            }
        }
        fclose(f[0]);
        fclose(f[1]);
        if (buf) buf[n < cap ? n : cap - 1] = 0;
        *len = n;
        return buf;
    }
    return NULL;
}

/* A scripted server answering POSTs with dir/name and, when given, GET /v1/models and GET /props
 * and GET /metrics with the same server's answers. */
static test_script *replay(const char *dir, const char *name, const char *models, const char *props, const char *metrics,
                           int *port) {
    size_t len;
    char *resp = transcript(dir, name, &len);
    if (!resp) return NULL;
    test_script *s = test_script_start(resp, len, 0, port);
    free(resp);
    const char *routes[][2] = { {"GET /v1/models", models}, {"GET /props", props}, {"GET /metrics", metrics} };
    for (int i = 0; i < 3; i++) {
        if (!routes[i][1]) continue;
        char *r = transcript(dir, routes[i][1], &len);
        if (r) test_script_route(s, routes[i][0], r, len);
        free(r);
    }
    return s;
}

static json_t *bench_replay(test_script *s, int port, const char *args, const char *name) {
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "bench --url http://127.0.0.1:%d --quiet --concurrency 1 --requests 3 --out %s %s", port, path, args);
    int rc = test_run(cmd, NULL, NULL);
    (void)s;
    return rc <= 1 ? test_load_json(path) : NULL;
}

/* Which client read path the next runs take (0 the own one, 1 libcurl), named in failure messages. */
static const char *path_name = "own";
static void read_path(int p) {
    path_name = p ? "curl" : "own";
    setenv("DSPERF_CLIENT_PATH", path_name, 1);
}

/* One case: the POST answer dir/name replayed to a bench run with --api api. */
static json_t *run_case(const char *dir, const char *name, const char *api) {
    int port;
    test_script *s = replay(dir, name, NULL, NULL, NULL, &port);
    CHECK_MSG(s != NULL, "%s/%s: fixture missing", dir, name);
    if (!s) return NULL;
    char args[128];
    snprintf(args, sizeof args, "--api %s --dataset random:in=5,out=8", api);
    json_t *r = bench_replay(s, port, args, name);
    test_script_stop(s);
    CHECK_MSG(r != NULL, "%s/%s: no results (read path %s)", dir, name, path_name);
    return r;
}

static double err_count(const json_t *r, const char *cls) { return test_num(json_object_get(r, "errors"), cls); }

static json_t *diag(const json_t *doc) {
    diagnose_opts o;
    diagnose_default_opts(&o);
    char err[256];
    return diagnose_run(doc, &o, err, sizeof err);
}

static bool knob_named(const json_t *f, const char *name) {
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(f, "knobs"), i, k)
        if (strstr(json_string_value(json_object_get(k, "knob")), name)) return true;
    return false;
}

/* Successful streams: the client counts what each server sends the way the README defines it. */
TEST(realwire_streams) {
    static const struct {
        const char *dir, *name, *api;
        double tokens_per_req, gaps_per_req;   /* usage.completion_tokens; content events - 1 */
    } cases[] = {
        /* llama.cpp: usage only in the last chunk, whose choices are not empty */
        { "llamacpp", "completions_stream", "completions", 8, 7 },
        { "llamacpp", "completions_stream_include_usage", "completions", 8, 7 },
        /* llama.cpp chat: no role-only first delta */
        { "llamacpp", "chat_stream", "chat", 8, 7 },
        { "llamacpp", "chat_stream_include_usage", "chat", 8, 7 },
        /* 200 tokens in 199 content events: one event carried two tokens (a UTF-8 merge) */
        { "llamacpp", "busy_stream_1", "completions", 200, 198 },
        /* max_tokens 0 still gives one token: no TPOT, no gap */
        { "llamacpp", "max_tokens_0_completions_stream", "completions", 1, 0 },
        /* vLLM: role-only first chunk, usage in a chunk of its own with "choices": [] */
        { "vllm", "chat_stream_usage", "chat", 5, 4 },
        /* SGLang serving R1 with a reasoning parser: reasoning_content deltas are tokens too */
        { "sglang", "chat_stream_reasoning", "chat", 6, 5 },
        /* TGI (axum): "data:" with no space, the role in every delta, an empty id */
        { "tgi", "chat_stream_usage", "chat", 4, 3 },
    };
    /* both read paths (src/client/h1.h): the own one, and libcurl's (TLS and proxies take it) */
    for (int path = 0; path < 2; path++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        read_path(path);
        json_t *r = run_case(cases[i].dir, cases[i].name, cases[i].api);
        if (!r) continue;
        CHECK_MSG(test_num(r, "completed") == 3 && test_num(r, "failed") == 0, "%s/%s: completed %g failed %g",
                  cases[i].dir, cases[i].name, test_num(r, "completed"), test_num(r, "failed"));
        CHECK_MSG(test_num(r, "total_output_tokens") == 3 * cases[i].tokens_per_req, "%s/%s: output tokens %g, want %g",
                  cases[i].dir, cases[i].name, test_num(r, "total_output_tokens"), 3 * cases[i].tokens_per_req);
        CHECK_MSG(!strcmp(json_string_value(json_object_get(r, "output_tokens_source")), "server_usage"),
                  "%s/%s: tokens from %s", cases[i].dir, cases[i].name, json_string_value(json_object_get(r, "output_tokens_source")));
        double gaps = test_num(r, "itl_samples");
        CHECK_MSG((cases[i].gaps_per_req == 0 && !(gaps > 0)) || gaps == 3 * cases[i].gaps_per_req,
                  "%s/%s: %g ITL gaps, want %g", cases[i].dir, cases[i].name, gaps, 3 * cases[i].gaps_per_req);
        json_decref(r);
    }
}

/* Failures: each is counted in its class, its first status and message are kept, and the
 * diagnosis advises for that class (a context overflow is the request's length, a 500 the
 * server's log, a 429 the load). */
TEST(realwire_errors) {
    static const struct {
        const char *dir, *name, *api, *cls;
        int status;
        const char *message, *knob;
    } cases[] = {
        /* llama.cpp: HTTP 200 with an `error:` line and [DONE] */
        { "llamacpp", "error_ctx_overflow_completions_stream", "completions", "stream", 0,
          "exceeds the available context size", "max_tokens" },
        { "llamacpp", "error_ctx_overflow_chat_stream", "chat", "stream", 0, "exceeds the available context size", "max_tokens" },
        /* 22 tokens, then `error:` — no final chunk, no usage */
        { "llamacpp", "error_ctx_full_midstream_completions_stream", "completions", "stream", 0, "context shift is disabled",
          "max_tokens" },
        { "llamacpp", "error_ctx_overflow_completions_nonstream", "completions", "http", 400,
          "exceeds the available context size", "max_tokens" },
        /* 500 for what should be a 400 */
        { "llamacpp", "error_invalid_json_completions", "completions", "http", 500, "parse error", "server log" },
        { "llamacpp", "error_best_of_completions_stream", "completions", "http", 500, "Unsupported param: best_of", "server log" },
        /* the client went away: no final event, no [DONE], no chunked terminator */
        { "llamacpp", "disconnect_stream", "completions", "truncated", 0, "before [DONE]", "server / proxy" },
        /* vLLM: {"error": {...}} inside the stream, then [DONE]; a 400 for a prompt over max_model_len */
        { "vllm", "completions_stream_error", "completions", "stream", 0, "out of memory", "server log" },
        { "vllm", "error_context_length", "completions", "http", 400, "maximum context length", "max_tokens" },
        /* TGI: 429 "overloaded" past --max-concurrent-requests; its error is a string, not an object */
        { "tgi", "error_overloaded", "chat", "http", 429, "Model is overloaded", "load" },
    };
    /* both read paths (src/client/h1.h): the own one, and libcurl's (TLS and proxies take it) */
    for (int path = 0; path < 2; path++)
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        read_path(path);
        json_t *r = run_case(cases[i].dir, cases[i].name, cases[i].api);
        if (!r) continue;
        CHECK_MSG(err_count(r, cases[i].cls) == 3 && test_num(r, "completed") == 0, "%s/%s: %s %g, completed %g",
                  cases[i].dir, cases[i].name, cases[i].cls, err_count(r, cases[i].cls), test_num(r, "completed"));
        const json_t *ex = json_array_get(json_object_get(r, "error_examples"), 0);
        const char *msg = json_string_value(json_object_get(ex, "message"));
        CHECK_MSG(ex && !strcmp(json_string_value(json_object_get(ex, "class")), cases[i].cls) && test_num(ex, "count") == 3,
                  "%s/%s: first example %s", cases[i].dir, cases[i].name, ex ? json_string_value(json_object_get(ex, "class")) : "none");
        if (cases[i].status) CHECK_MSG(test_num(ex, "status") == cases[i].status, "%s/%s: status %g", cases[i].dir, cases[i].name,
                                       test_num(ex, "status"));
        CHECK_MSG(msg && strstr(msg, cases[i].message), "%s/%s: message '%s'", cases[i].dir, cases[i].name, msg ? msg : "(none)");
        json_t *g = diag(r);
        const json_t *f = json_array_get(json_object_get(g, "findings"), 0);
        CHECK_MSG(f && !strcmp(json_string_value(json_object_get(f, "class")), "errors"), "%s/%s: first finding %s",
                  cases[i].dir, cases[i].name, f ? json_string_value(json_object_get(f, "class")) : "none");
        CHECK_MSG(f && strstr(json_string_value(json_object_get(f, "title")), cases[i].message), "%s/%s: title '%s'",
                  cases[i].dir, cases[i].name, f ? json_string_value(json_object_get(f, "title")) : "");
        CHECK_MSG(f && knob_named(f, cases[i].knob), "%s/%s: no '%s' advice", cases[i].dir, cases[i].name, cases[i].knob);
        json_decref(g);
        json_decref(r);
    }
}

static const char *dep_str(const json_t *r, const char *field) {
    return json_string_value(json_object_get(json_object_get(json_object_get(r, "deployment"), field), "value"));
}
static double dep_num(const json_t *r, const char *field) {
    return test_num(json_object_get(json_object_get(r, "deployment"), field), "value");
}

/* What a server says about itself at preflight lands in the results, with its source. */
TEST(realwire_deployment_at_preflight) {
    int port;
    /* llama.cpp: /props gives the slots and the context per slot, /v1/models the GGUF's size and
     * parameter count (2 bytes per parameter: 16-bit weights); the GGUF itself is on another host */
    test_script *s = replay("llamacpp", "completions_stream", "v1_models", "props", NULL, &port);
    CHECK(s != NULL);
    if (!s) return;
    json_t *r = bench_replay(s, port, "--dataset random:in=5,out=8", "deploy_llamacpp");
    test_script_stop(s);
    CHECK(r != NULL);
    if (r) {
        CHECK_STR(dep_str(r, "engine"), "llama.cpp");
        CHECK_STR(dep_str(r, "served_model"), "/opt/llms/models/ds2-random-tiny-f16.gguf");
        CHECK_EQ_INT(dep_num(r, "max_num_seqs"), 4);
        CHECK_EQ_INT(dep_num(r, "context_per_seq"), 1024);
        CHECK_EQ_INT(dep_num(r, "params"), 29575040);
        CHECK_STR(dep_str(r, "weight_dtype"), "fp16");
        CHECK_EQ_INT(dep_num(r, "tp"), 1);
        const char *src = json_string_value(json_object_get(json_object_get(json_object_get(r, "deployment"), "max_num_seqs"), "source"));
        CHECK(src && strstr(src, "/props total_slots"));
        /* no architecture: the diagnosis says what would give it */
        json_t *g = diag(r);
        CHECK(json_is_null(json_object_get(g, "roofline")));
        json_decref(g);
        json_decref(r);
    }
    /* vLLM serves a Hugging Face id the catalog knows: the architecture follows */
    s = replay("vllm", "chat_stream_usage", "v1_models", NULL, NULL, &port);
    CHECK(s != NULL);
    if (!s) return;
    r = bench_replay(s, port, "--api chat --dataset random:in=5,out=8", "deploy_vllm");
    test_script_stop(s);
    CHECK(r != NULL);
    if (r) {
        CHECK_STR(dep_str(r, "engine"), "vllm");
        CHECK_STR(dep_str(r, "model"), "deepseek-v2-lite");
        CHECK_EQ_INT(test_num(json_object_get(json_object_get(json_object_get(r, "deployment"), "architecture"), "value"),
                              "num_hidden_layers"), 27);
        json_decref(r);
    }
}

/* llama.cpp's /metrics: requests_processing moves with the load, but the token counters move only
 * when a request ends (busy: 4 running, tokens_predicted_total still 107), and an abandoned
 * request's tokens never arrive. Rates from these counters are not throughput while requests run. */
TEST(realwire_llamacpp_metrics_move_at_request_end) {
    em_reading rd[3];
    const char *names[] = { "metrics_idle", "metrics_busy", "metrics_after_disconnect" };
    for (int i = 0; i < 3; i++) {
        size_t len;
        char path[256];
        snprintf(path, sizeof path, FIX "/llamacpp/%s.txt", names[i]);
        FILE *f = fopen(path, "rb");
        CHECK_MSG(f != NULL, "%s missing", path);
        if (!f) return;
        char buf[8192];
        len = fread(buf, 1, sizeof buf - 1, f);
        fclose(f);
        buf[len] = 0;
        prom_doc doc;
        CHECK_EQ_INT(prom_parse(buf, len, &doc), 0);
        CHECK_EQ_INT(em_detect_engine(&doc), EM_ENGINE_LLAMACPP);
        em_read(&doc, EM_ENGINE_LLAMACPP, (int64_t)i * 1000000000, &rd[i]);
        prom_doc_free(&doc);
    }
    CHECK_NEAR(rd[0].value[EM_RAW_RUNNING], 0, 0);
    CHECK_NEAR(rd[1].value[EM_RAW_RUNNING], 4, 0);
    CHECK_NEAR(rd[0].value[EM_RAW_GEN_TOKENS], 107, 0);
    CHECK_NEAR(rd[1].value[EM_RAW_GEN_TOKENS], 107, 0);     /* 4 streams decoding, not counted yet */
    CHECK_NEAR(rd[2].value[EM_RAW_GEN_TOKENS], 907, 0);     /* + 4 x 200 at their ends; the abandoned one never */
    double col[EM_COL_COUNT];
    em_derive(&rd[0], &rd[1], col);
    CHECK_NEAR(col[EM_GENERATION_TOKENS_PER_S], 0, 0);      /* "0 tokens/s" while 4 requests decode */
}

/* Prefix-cache visibility: llama.cpp says nothing about a cache in its usage, but its timings
 * count only the prompt tokens it evaluated (prompt_n 1 after a cache hit, usage 21), so 20 of 21
 * came from its cache; vLLM with --enable-prompt-tokens-details says cached_tokens outright. Both
 * become the measured hit rate, and every request is a hit (more than half its prompt cached). */
TEST(realwire_prefix_cache_hits) {
    static const struct { const char *dir, *name, *source; double cached, prompt; } cases[] = {
        { "llamacpp", "chat_stream_include_usage", "llamacpp_timings", 20, 21 },
        { "vllm", "chat_stream_cached", "usage_cached_tokens", 32, 48 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = run_case(cases[i].dir, cases[i].name, "chat");
        if (!r) continue;
        json_t *pc = json_object_get(r, "prefix_cache");
        CHECK_MSG(pc != NULL, "%s: no prefix_cache section", cases[i].name);
        CHECK_STR(json_string_value(json_object_get(pc, "source")), cases[i].source);
        CHECK_EQ_INT(test_num(pc, "cached_tokens"), 3 * cases[i].cached);
        CHECK_EQ_INT(test_num(pc, "prompt_tokens_server"), 3 * cases[i].prompt);
        CHECK_NEAR(test_num(pc, "hit_rate"), cases[i].cached / cases[i].prompt, 1e-9);
        CHECK_EQ_INT(test_num(json_object_get(pc, "ttft_hit"), "n"), 3);
        CHECK_EQ_INT(test_num(json_object_get(pc, "ttft_miss"), "n"), 0);
        json_decref(r);
    }
    /* a llama.cpp request with no hit: prompt_n equals the prompt, nothing cached */
    json_t *r = run_case("llamacpp", "chat_stream", "chat");
    if (r) {
        json_t *pc = json_object_get(r, "prefix_cache");
        CHECK_NEAR(test_num(pc, "hit_rate"), 0, 0);
        CHECK_EQ_INT(test_num(json_object_get(pc, "ttft_miss"), "n"), 3);
    }
    json_decref(r);
}

/* Reasoning streams as SGLang (delta.reasoning_content) and vLLM 0.11+ (delta.reasoning) send them:
 * the phase is found, its tokens are the client's count (neither server gives
 * completion_tokens_details), the answer's are usage.completion_tokens less those, and the TTFA
 * of each request is at or after its TTFT and no later than its E2EL. */
TEST(realwire_reasoning_phases) {
    static const struct {
        const char *dir, *name;
        double reasoning, answer;   /* per request */
    } cases[] = {
        { "sglang", "chat_stream_reasoning", 3, 3 },
        { "vllm", "chat_stream_reasoning", 4, 3 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *r = run_case(cases[i].dir, cases[i].name, "chat");
        if (!r) continue;
        const char *c = cases[i].name, *d = cases[i].dir;
        CHECK_MSG(test_num(r, "reasoning_requests") == 3 && test_num(r, "reasoning_answered") == 3, "%s/%s: %g reasoning, %g answered",
                  d, c, test_num(r, "reasoning_requests"), test_num(r, "reasoning_answered"));
        CHECK_MSG(test_num(r, "total_reasoning_tokens") == 3 * cases[i].reasoning, "%s/%s: reasoning tokens %g", d, c,
                  test_num(r, "total_reasoning_tokens"));
        CHECK_MSG(test_num(r, "total_answer_tokens") == 3 * cases[i].answer, "%s/%s: answer tokens %g", d, c,
                  test_num(r, "total_answer_tokens"));
        CHECK_MSG(json_is_null(json_object_get(r, "total_reasoning_tokens_server")), "%s/%s: a server count from nowhere", d, c);
        CHECK(!strcmp(json_string_value(json_object_get(r, "reasoning_tokens_source")), "client"));
        CHECK_MSG(test_num(r, "min_ttfa_ms") >= test_num(r, "min_ttft_ms") && test_num(r, "max_ttfa_ms") <= test_num(r, "max_e2el_ms"),
                  "%s/%s: TTFA %g..%g outside TTFT %g .. E2EL %g", d, c, test_num(r, "min_ttfa_ms"), test_num(r, "max_ttfa_ms"),
                  test_num(r, "min_ttft_ms"), test_num(r, "max_e2el_ms"));
        CHECK(json_is_object(json_object_get(json_object_get(r, "samples"), "ttfa")));
        json_decref(r);
    }
    /* a stream without reasoning has none of it: absent, not zero */
    json_t *r = run_case("vllm", "chat_stream_usage", "chat");
    if (r) {
        CHECK(!json_object_get(r, "reasoning_requests") && !json_object_get(r, "mean_ttfa_ms"));
        CHECK(!json_object_get(json_object_get(r, "samples"), "ttfa"));
        json_decref(r);
    }
}

/* llama.cpp's timings in the last chunk are joined to each request: the values read are the
 * transcript's own (prompt_ms 7.071, predicted_ms 19.526 over predicted_n 8), and predicted_n
 * equals usage.completion_tokens on every request. */
TEST(realwire_llamacpp_timings_joined) {
    json_t *r = run_case("llamacpp", "completions_stream", "completions");
    if (!r) return;
    json_t *st = json_object_get(r, "server_timing");
    CHECK(json_is_object(st));
    CHECK(!strcmp(json_string_value(json_object_get(st, "source")), "llamacpp_timings"));
    CHECK_EQ_INT(test_num(st, "requests_joined"), 3);
    CHECK_NEAR(test_num(st, "mean_server_prefill_ms"), 7.071, 1e-9);
    CHECK_NEAR(test_num(st, "mean_server_tpot_ms"), 19.526 / 7, 1e-9);
    CHECK_EQ_INT(test_num(st, "predicted_n_equal_output_tokens"), 3);
    /* TTFT - prompt_ms, request by request: its mean is the means' difference */
    CHECK_NEAR(test_num(st, "mean_ttft_outside_server_ms"), test_num(r, "mean_ttft_ms") - 7.071, 1e-6);
    json_decref(r);
}

/* vLLM with MTP, --enable-per-request-metrics and --per-request-spec-decode-metrics summary
 * (tests/fixtures/vllm/README.md): the final usage chunk's metrics object is joined to the
 * request — queue 12.3 ms + TTFT from scheduling 85.2 ms is the server's part of TTFT, and its
 * speculative_decoding counts 3 steps; the stream's own chunks carry 2, 3 and 2 tokens after the
 * first: 7/3 tokens a step, the same as the server's 1 + 4/3. */
TEST(realwire_vllm_per_request_metrics_joined) {
    json_t *r = run_case("vllm", "chat_stream_spec_metrics", "chat");
    if (!r) return;
    json_t *st = json_object_get(r, "server_timing");
    CHECK(json_is_object(st));
    CHECK_STR(json_string_value(json_object_get(st, "source")), "vllm_metrics");
    CHECK_EQ_INT(test_num(st, "requests_joined"), 3);
    CHECK_NEAR(test_num(st, "mean_server_queue_ms"), 12.3, 1e-9);
    CHECK_NEAR(test_num(st, "mean_server_prefill_ms"), 85.2, 1e-9);
    CHECK_NEAR(test_num(st, "mean_server_tpot_ms"), 40.5 / 7, 1e-9);
    CHECK_NEAR(test_num(st, "mean_ttft_outside_server_ms"), test_num(r, "mean_ttft_ms") - 97.5, 1e-6);
    json_t *sd = json_object_get(r, "spec_decode");
    CHECK(json_is_object(sd));
    CHECK_NEAR(test_num(sd, "mean_acceptance_length"), 7.0 / 3, 1e-8);
    json_t *srv = json_object_get(sd, "server");
    CHECK_EQ_INT(test_num(srv, "steps"), 9);
    CHECK_NEAR(test_num(srv, "acceptance_length"), 1 + 4.0 / 3, 1e-8);
    CHECK_NEAR(test_num(srv, "draft_acceptance_rate"), 4.0 / 9, 1e-8);
    json_decref(r);
}

/* SGLang's meta_info on the last choice (tests/fixtures/sglang/README.md): its e2e_latency joins
 * as the E2EL the server did not see, its spec_verify_ct and spec_accept_length as its own count
 * (SGLang's completion_tokens / spec_verify_ct: 8/3, the prefill's token included). */
TEST(realwire_sglang_meta_info_joined) {
    json_t *r = run_case("sglang", "chat_stream_meta_info", "chat");
    if (!r) return;
    json_t *st = json_object_get(r, "server_timing");
    CHECK(json_is_object(st));
    CHECK_STR(json_string_value(json_object_get(st, "source")), "sglang_meta_info");
    CHECK_EQ_INT(test_num(st, "requests_joined"), 3);
    CHECK_NEAR(test_num(st, "mean_e2el_outside_server_ms"), test_num(r, "mean_e2el_ms") - 142.3, 1e-6);
    json_t *srv = json_object_get(json_object_get(r, "spec_decode"), "server");
    CHECK_EQ_INT(test_num(srv, "steps"), 9);
    CHECK_NEAR(test_num(srv, "acceptance_length"), 8.0 / 3, 1e-8);
    CHECK_NEAR(test_num(json_object_get(r, "spec_decode"), "mean_acceptance_length"), 7.0 / 3, 1e-8);
    json_decref(r);
}
