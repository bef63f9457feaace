/* The real llama.cpp on loopback, beside the replayed transcripts of realwire_test.c: dsperf's
 * client, preflight (identify, deploy), /metrics scraping and error classes against llama-server
 * (built by `make real-engine`) serving the random-weight DeepSeek-V2 `tiny` GGUF with DeepSeek's
 * real tokenizer. Every number asserted follows from the configuration: the server generates
 * exactly max_tokens with ignore_eos, -np N -c C gives N slots of C / N tokens, the client's
 * tokenizer (the same GGUF vocabulary) counts a prompt exactly as the server does (BOS included;
 * chat adds the DeepSeek-V2 template). No timing is asserted beyond causality. Token-id prompts
 * and logprobs on the real server are drift_live_test.c's. */
#include "harness.h"
#include "testutil.h"
#include "llamacpp_util.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NP 2
#define CTX 2048
#define SLOT_CTX (CTX / NP)
#define SERVER_ARGS "-np 2 -c 2048 -t 1 --metrics --slots"

/* Runs `dsperf bench --url URL ARGS --out DIR/NAME.json`; returns the results (NULL when none
 * were written) and the exit code in *rc. */
static json_t *bench(const test_llama *s, const char *args, const char *name, int *rc) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --out %s --tokenizer %s %s", s->url, path, test_llama_model("tiny"), args);
    char *err = NULL;
    *rc = test_run(cmd, NULL, &err);
    json_t *r = test_load_json(path);
    if (!r) CHECK_MSG(0, "bench %s wrote no results (exit %d): %s", name, *rc, err ? err : "");
    else if (test_num(r, "failed") > 0) {   /* what failed, for the verdict line's reader */
        char *e = json_dumps(json_object_get(r, "errors"), JSON_COMPACT);
        fprintf(stderr, "    bench %s: %g failed: %s; stderr: %.600s\n", name, test_num(r, "failed"), e ? e : "?", err ? err : "");
        free(e);
    }
    free(err);
    return r;
}

static const json_t *dep(const json_t *r, const char *field) { return json_object_get(json_object_get(r, "deployment"), field); }
static double dep_num(const json_t *r, const char *field) { return test_num(dep(r, field), "value"); }
static const char *dep_str(const json_t *r, const char *field) { return json_string_value(json_object_get(dep(r, field), "value")); }

static double series_max(const json_t *series, const char *name) {
    double m = NAN;
    size_t i;
    const json_t *v;
    json_array_foreach(json_object_get(series, name), i, v)
        if (json_is_number(v) && (isnan(m) || json_number_value(v) > m)) m = json_number_value(v);
    return m;
}

/* Sum over scrape intervals of rate x interval: the counter's increase over the scraped window.
 * The results write t_s in ms, so each interval is off by up to 1 ms: *tol gets sum(rate) x 1 ms. */
static double series_integral(const json_t *series, const char *name, double *tol) {
    const json_t *t = json_object_get(series, "t_s"), *v = json_object_get(series, name);
    double sum = 0, rates = 0;
    for (size_t i = 1; i < json_array_size(t) && i < json_array_size(v); i++)
        if (json_is_number(json_array_get(v, i))) {
            double r = json_number_value(json_array_get(v, i));
            sum += r * (json_number_value(json_array_get(t, i)) - json_number_value(json_array_get(t, i - 1)));
            rates += fabs(r);
        }
    if (tol) *tol = rates * 1e-3 + 1e-9;
    return sum;
}

/* Per-request lines of --save-requests FILE, as a JSON array. */
static json_t *load_requests(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return NULL;
    json_t *a = json_array();
    char line[65536];
    while (fgets(line, sizeof line, f)) {
        json_t *j = json_loads(line, 0, NULL);
        if (j) json_array_append_new(a, j);
    }
    fclose(f);
    return a;
}

/* Completions: exact counts, the client's prompt count equal to the server's, llama.cpp's /metrics
 * on the common series within what -np and the requests allow, and the deployment dsperf resolved
 * at preflight equal to what /props, /slots and /v1/models say. */
TEST(llamacpp_live_bench_completions_counts) {
    LLAMA_REQUIRE();
    test_llama s;
    if (test_llama_start(&s, "tiny", SERVER_ARGS) != 0) { CHECK_MSG(0, "llama-server did not start"); return; }
    enum { REQ = 6, IN = 64, OUT = 16, CONC = 4 };
    char args[1024], reqs[512];
    snprintf(reqs, sizeof reqs, "%s/r.jsonl", harness_tmpdir());
    snprintf(args, sizeof args, "--concurrency %d --requests %d --dataset random:in=%d,out=%d --server-metrics %s/metrics --save-requests %s",
             CONC, REQ, IN, OUT, s.url, reqs);
    int rc;
    json_t *r = bench(&s, args, "completions", &rc);
    /* what the server says about itself, read directly */
    char url[128];
    snprintf(url, sizeof url, "%s/props", s.url);
    char *props_s = test_http_get(url);
    snprintf(url, sizeof url, "%s/slots", s.url);
    char *slots_s = test_http_get(url);
    snprintf(url, sizeof url, "%s/v1/models", s.url);
    char *models_s = test_http_get(url);
    snprintf(url, sizeof url, "%s/metrics", s.url);
    char *metrics = test_http_get(url);
    test_llama_stop(&s);
    json_t *props = props_s ? json_loads(props_s, 0, NULL) : NULL, *slots = slots_s ? json_loads(slots_s, 0, NULL) : NULL;
    json_t *models = models_s ? json_loads(models_s, 0, NULL) : NULL;
    free(props_s); free(slots_s); free(models_s);
    CHECK_EQ_INT(rc, 0);
    CHECK(r && props && slots && models && metrics);
    if (!r || !props || !slots || !models || !metrics) goto out;
    CHECK_EQ_INT(test_num(r, "completed"), REQ);
    CHECK_EQ_INT(test_num(r, "failed"), 0);
    CHECK_EQ_INT(test_num(r, "total_output_tokens"), REQ * OUT);
    CHECK_STR(json_string_value(json_object_get(r, "output_tokens_source")), "server_usage");
    /* prompts: IN words of the vocabulary's own tokens plus the BOS the server adds; the client's
     * tokenizer counts exactly what the server counts */
    CHECK_EQ_INT(test_num(r, "total_input_tokens"), REQ * (IN + 1));
    CHECK_EQ_INT(test_num(r, "total_input_tokens_server"), REQ * (IN + 1));
    json_t *rq = load_requests(reqs);
    CHECK_EQ_INT(json_array_size(rq), REQ);
    size_t i;
    const json_t *q;
    json_array_foreach(rq, i, q) {
        CHECK_EQ_INT(test_num(q, "in_tokens"), IN + 1);
        CHECK_EQ_INT(test_num(q, "in_tokens_server"), IN + 1);
        CHECK_EQ_INT(test_num(q, "out_tokens_server"), OUT);
        /* one event per token, or fewer where a token ending inside a UTF-8 character was merged */
        double ch = test_num(q, "n_chunks");
        CHECK_MSG(ch >= 1 && ch <= OUT, "request %zu: %g content chunks for %d tokens", i, ch, OUT);
    }
    json_decref(rq);
    /* /metrics: mapped onto the common series; never more running than slots, never more waiting
     * than the requests beyond them, the KV cache never fuller than NP slots each holding its
     * prompt and its answer */
    const json_t *srv = json_object_get(json_object_get(r, "telemetry"), "server");
    const json_t *series = json_object_get(srv, "series");
    CHECK_STR(json_string_value(json_object_get(srv, "source")), "llamacpp");
    CHECK_EQ_INT(test_num(srv, "scrape_errors"), 0);
    double run_max = series_max(series, "running"), wait_max = series_max(series, "waiting"), kv_max = series_max(series, "kv_usage_pct");
    double gen_tol, gen = series_integral(series, "generation_tokens_per_s", &gen_tol);
    fprintf(stderr, "    /metrics: running max %g, waiting max %g, KV max %g%%, generated %.2f +- %.2f tokens over %zu scrapes\n",
            run_max, wait_max, kv_max, gen, gen_tol, json_array_size(json_object_get(series, "t_s")));
    CHECK_MSG(run_max >= 1 && run_max <= NP, "running max %g with -np %d", run_max, NP);
    CHECK_MSG(wait_max >= 0 && wait_max <= CONC - NP, "waiting max %g with %d users and %d slots", wait_max, CONC, NP);
    CHECK_MSG(kv_max > 0 && kv_max / 100 * CTX <= NP * (IN + 1 + OUT) + 0.5, "KV usage max %g%% of %d cells", kv_max, CTX);
    /* llama.cpp counts generated tokens when a request ends: over a window from before the first
     * request to after the last, the generation rate integrates to every generated token */
    CHECK_NEAR(gen, REQ * OUT, gen_tol);
    CHECK_NEAR(test_prom_value(metrics, "llamacpp:tokens_predicted_total"), REQ * OUT, 0);
    CHECK_NEAR(test_prom_value(metrics, "llamacpp:requests_processing"), 0, 0);
    /* prompt tokens the server evaluated: a prompt-cache hit (the BOS a slot still holds) is not */
    double pt = test_num(json_object_get(json_object_get(r, "telemetry_summary"), "server"), "prompt_tokens");
    CHECK_MSG(pt > 0 && pt <= REQ * (IN + 1), "telemetry prompt_tokens %g of %d sent", pt, REQ * (IN + 1));
    /* the deployment as dsperf resolved it, against the server's own answers */
    CHECK_EQ_INT(json_integer_value(json_object_get(props, "total_slots")), NP);
    CHECK_EQ_INT(json_array_size(slots), NP);
    json_array_foreach(slots, i, q) CHECK_EQ_INT(json_integer_value(json_object_get(q, "n_ctx")), SLOT_CTX);
    CHECK_STR(dep_str(r, "engine"), "llama.cpp");
    CHECK_EQ_INT(dep_num(r, "max_num_seqs"), NP);
    CHECK_EQ_INT(dep_num(r, "context_per_seq"), SLOT_CTX);
    CHECK_EQ_INT(dep_num(r, "kv_capacity_tokens"), CTX);
    const json_t *m0 = json_array_get(json_object_get(models, "data"), 0);
    CHECK_EQ_INT(dep_num(r, "params"), json_integer_value(json_object_get(json_object_get(m0, "meta"), "n_params")));
    CHECK_EQ_INT(dep_num(r, "model_bytes"), json_integer_value(json_object_get(json_object_get(m0, "meta"), "size")));
    CHECK_STR(dep_str(r, "served_model"), json_string_value(json_object_get(m0, "id")));
    CHECK_STR(dep_str(r, "served_model"), json_string_value(json_object_get(props, "model_path")));
    CHECK_STR(dep_str(r, "weight_dtype"), "fp16");       /* the tool writes F16 weights */
    const json_t *arch = json_object_get(dep(r, "architecture"), "value");
    CHECK_EQ_INT(json_integer_value(json_object_get(arch, "num_hidden_layers")), 4);
    CHECK_EQ_INT(json_integer_value(json_object_get(arch, "hidden_size")), 128);
    CHECK_EQ_INT(json_integer_value(json_object_get(arch, "n_routed_experts")), 16);
    /* identify: the engine from /props, its version its build_info */
    const json_t *id = json_object_get(r, "server");
    CHECK_STR(json_string_value(json_object_get(id, "engine")), "llama.cpp");
    CHECK_STR(json_string_value(json_object_get(id, "engine_version")), json_string_value(json_object_get(props, "build_info")));
    CHECK_STR(json_string_value(json_object_get(id, "model_id")), json_string_value(json_object_get(m0, "id")));
out:
    free(metrics);
    json_decref(props); json_decref(slots); json_decref(models);
    json_decref(r);
}

/* Chat: llama.cpp sends no role-only first chunk (the first carries content) and usage only in the
 * last; the client renders the DeepSeek-V2 template from the GGUF and counts the prompt exactly as
 * the server does. */
TEST(llamacpp_live_bench_chat_counts) {
    LLAMA_REQUIRE();
    test_llama s;
    if (test_llama_start(&s, "tiny", SERVER_ARGS) != 0) { CHECK_MSG(0, "llama-server did not start"); return; }
    enum { REQ = 4, IN = 32, OUT = 8 };
    char args[1024], reqs[512];
    snprintf(reqs, sizeof reqs, "%s/c.jsonl", harness_tmpdir());
    snprintf(args, sizeof args, "--api chat --concurrency 2 --requests %d --dataset random:in=%d,out=%d --save-requests %s", REQ, IN, OUT, reqs);
    int rc;
    json_t *r = bench(&s, args, "chat", &rc);
    test_llama_stop(&s);
    CHECK_EQ_INT(rc, 0);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), REQ);
    CHECK_EQ_INT(test_num(r, "failed"), 0);
    CHECK_EQ_INT(test_num(r, "total_output_tokens"), REQ * OUT);
    /* the server renders "<BOS>User: {prompt}\n\nAssistant:": more than the prompt and BOS */
    double in_c = test_num(r, "total_input_tokens"), in_s = test_num(r, "total_input_tokens_server");
    CHECK_EQ_INT(in_c, in_s);
    CHECK_MSG(in_s > REQ * (IN + 1), "server prompt tokens %g for %d chat prompts of %d", in_s, REQ, IN);
    json_t *rq = load_requests(reqs);
    CHECK_EQ_INT(json_array_size(rq), REQ);
    size_t i;
    const json_t *q;
    json_array_foreach(rq, i, q) {
        CHECK_EQ_INT(test_num(q, "in_tokens"), test_num(q, "in_tokens_server"));
        CHECK_EQ_INT(test_num(q, "out_tokens_server"), OUT);
        double ch = test_num(q, "n_chunks");
        CHECK_MSG(ch >= 1 && ch <= OUT, "request %zu: %g content chunks for %d tokens (a role-only chunk counted?)", i, ch, OUT);
        CHECK(test_num(q, "ttft_ms") > 0);
    }
    json_decref(rq);
    json_decref(r);
}

/* The server's error paths, classified as dsperf's classes with the server's message, and the
 * results written anyway: a prompt longer than a slot's context (HTTP 200, then an `error:` line
 * in the stream), a bad request (HTTP 500 with a JSON error), and a prompt that just fits. */
TEST(llamacpp_live_error_paths) {
    LLAMA_REQUIRE();
    test_llama s;
    if (test_llama_start(&s, "tiny", SERVER_ARGS) != 0) { CHECK_MSG(0, "llama-server did not start"); return; }
    int rc;
    /* 1500 + BOS tokens against 1024 per slot: every request fails inside its stream */
    json_t *over = bench(&s, "--concurrency 1 --requests 2 --dataset random:in=1500,out=4", "over", &rc);
    int rc_over = rc;
    /* 1000 + BOS + 16 fits a 1024-token slot */
    json_t *fits = bench(&s, "--concurrency 1 --requests 1 --dataset random:in=1000,out=16", "fits", &rc);
    int rc_fits = rc;
    /* a chat message without content: llama.cpp answers HTTP 500 before any stream */
    char ds[512];
    snprintf(ds, sizeof ds, "%s/bad.jsonl", harness_tmpdir());
    FILE *f = fopen(ds, "w");
    CHECK(f != NULL);
    if (f) {
        fputs("{\"messages\":[{\"role\":\"user\"}],\"max_tokens\":4}\n"
              "{\"messages\":[{\"role\":\"user\",\"content\":\"Say hello\"}],\"max_tokens\":4}\n", f);
        fclose(f);
    }
    char args[1024];
    snprintf(args, sizeof args, "--api chat --concurrency 1 --requests 2 --dataset jsonl:%s", ds);
    json_t *bad = bench(&s, args, "bad", &rc);
    int rc_bad = rc;
    test_llama_stop(&s);
    if (over) {
        CHECK_EQ_INT(rc_over, 1);       /* nothing completed: the run failed, after writing what it measured */
        CHECK_EQ_INT(test_num(over, "completed"), 0);
        CHECK_EQ_INT(test_num(over, "failed"), 2);
        CHECK_EQ_INT(test_num(json_object_get(over, "errors"), "stream"), 2);
        const json_t *ex = json_array_get(json_object_get(over, "error_examples"), 0);
        CHECK_STR(json_string_value(json_object_get(ex, "class")), "stream");
        const char *m = json_string_value(json_object_get(ex, "message"));
        CHECK_MSG(m && strstr(m, "exceeds the available context size"), "message: %s", m ? m : "(none)");
    }
    if (fits) {
        CHECK_EQ_INT(rc_fits, 0);
        CHECK_EQ_INT(test_num(fits, "completed"), 1);
        CHECK_EQ_INT(test_num(fits, "total_input_tokens_server"), 1001);
        CHECK_EQ_INT(test_num(fits, "total_output_tokens"), 16);
    }
    if (bad) {
        CHECK_EQ_INT(rc_bad, 1);        /* 1 of 2 failed on the server: over the default --max-error-rate 1% */
        CHECK_EQ_INT(test_num(bad, "completed"), 1);
        CHECK_EQ_INT(test_num(bad, "failed"), 1);
        const json_t *er = json_object_get(bad, "errors");
        CHECK_EQ_INT(test_num(er, "http"), 1);
        CHECK_EQ_INT(test_num(json_object_get(er, "http_status"), "500"), 1);
        const json_t *ex = json_array_get(json_object_get(bad, "error_examples"), 0);
        const char *m = json_string_value(json_object_get(ex, "message"));
        CHECK_MSG(m && strstr(m, "Expected 'content'"), "message: %s", m ? m : "(none)");
        /* the good request's prompt as the server counted it: the template's tokens included */
        CHECK_EQ_INT(test_num(bad, "total_input_tokens"), test_num(bad, "total_input_tokens_server"));
    }
    json_decref(over);
    json_decref(fits);
    json_decref(bad);
}

/* drift's probes and token-id scoring on the real server, the deployment against itself (no
 * tiny-kq needed): both sides take token ids, every prompt is kept, each exactly the context
 * long as the server counted it, every position scored. */
TEST(llamacpp_live_drift_token_ids) {
    LLAMA_REQUIRE();
    test_llama s;
    if (test_llama_start(&s, "tiny-peaked", "-np 2 -c 1024 -t 1") != 0) { CHECK_MSG(0, "llama-server did not start"); return; }
    enum { CTXL = 48, PROMPTS = 3, GEN = 4 };
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/d.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "drift --baseline %s --candidate %s --tokenizer %s --contexts %d --prompts %d --gen-tokens %d "
             "--top-logprobs 3 --quiet --out %s", s.url, s.url, test_llama_model("tiny"), CTXL, PROMPTS, GEN, path);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    test_llama_stop(&s);
    CHECK_MSG(rc == 0, "drift exited %d: %s", rc, err ? err : "");
    free(err);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    CHECK_STR(json_string_value(json_object_get(d, "prompt_format")), "token_ids");
    CHECK_STR(json_string_value(json_object_get(json_object_get(d, "baseline"), "score_method")), "stepwise");
    CHECK(json_is_true(json_object_get(d, "same_deployment")));
    const json_t *b = json_array_get(json_object_get(d, "buckets"), 0);
    CHECK_EQ_INT(test_num(b, "prompts"), PROMPTS);
    CHECK_EQ_INT(test_num(b, "positions") + test_num(b, "unobservable_positions"), PROMPTS * GEN);
    CHECK_EQ_INT(test_num(b, "prompt_tokens_min"), CTXL);
    CHECK_EQ_INT(test_num(b, "prompt_tokens_max"), CTXL);
    CHECK_EQ_INT(test_num(d, "failed_requests"), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(d, "warnings")), 0);
    json_decref(d);
}

/* The real llama-server started as these tests start it, with no -ngl: c392e50 puts no layer on a
 * GPU unless told (and this build has none). A sweep that records the server's command line
 * (--server-pid) cannot calibrate the simulator, which models servers whose layers all run on
 * their GPUs: `sim --validate` says so in one line, naming the default -ngl 0 it read, and exits 2;
 * the sweep's deployment keeps the layer count (0). */
TEST(llamacpp_live_sim_refuses_a_server_without_gpu_layers) {
    LLAMA_REQUIRE();
    test_llama s;
    if (test_llama_start(&s, "tiny", SERVER_ARGS) != 0) { CHECK_MSG(0, "llama-server did not start"); return; }
    char path[512], cmd[2048], *err = NULL;
    snprintf(path, sizeof path, "%s/nogpu_sweep.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sweep --url %s --server-pid %d --host-metrics --concurrency 1,2 --requests 4 "
             "--dataset random:in=32,out=8 --tokenizer %s --quiet --out %s", s.url, (int)s.pid, test_llama_model("tiny"), path);
    int rc = test_run(cmd, NULL, NULL);
    test_llama_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    const json_t *gl = json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(d, "levels"), 0), "results"),
                                                       "deployment"), "gpu_layers");
    CHECK(gl && test_num(gl, "value") == 0 && strstr(json_string_value(json_object_get(gl, "source")), "default -ngl 0"));
    json_decref(d);
    snprintf(cmd, sizeof cmd, "sim --validate %s", path);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "llama-server's default -ngl 0 (no -ngl on its command line): 0 of the model's 5 layers") &&
          strstr(err, "-ngl 99"));
    free(err);
}
