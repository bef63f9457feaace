/* Conversations on the simulated engine with prefix caching, on its own virtual clock (no wall
 * time): each turn's request is what bench sends (sessions dataset, request body) and what serve
 * hands the engine (prompt words, chained block hashes); the answer goes back into the history.
 * With the cache, every later turn's TTFT is a fraction of the first turn's (only the new message
 * is prefilled: the answer's blocks were cached as it was generated) and the engine's hit count is
 * the history's whole blocks; without it, TTFT grows with the history. */
#include "harness.h"
#include "dataset/sessions.h"
#include "client/openai.h"
#include "server/server_hash.h"
#include "server/server_oai.h"
#include "engine/sim.h"
#include <stdlib.h>
#include <string.h>

typedef struct { int64_t first_ns, end_ns; } turn_times;

static void on_event(void *ctx, const engine_event *ev) {
    turn_times *t = ctx;
    if ((ev->flags & ENGINE_EV_FIRST) && !t->first_ns) t->first_ns = ev->t_ns;
    if (ev->flags & ENGINE_EV_FINISHED) t->end_ns = ev->t_ns;
}

/* Runs one conversation of `turns` turns; ttft_ns[t] in engine time, hits[t] the cache's hit
 * tokens for turn t, prompt[t] the words the engine was given. */
static void converse(bool prefix_caching, int turns, int64_t *ttft_ns, int64_t *hits, int32_t *prompt) {
    dataset *d;
    char err[256];
    CHECK(dataset_open("sessions:n=1,turns=4,first=6000,user=64,out=32,think=1s", 0, 3, NULL, &d, err, sizeof err) == 0);
    dataset_count_for_api(d, NULL, false);
    sim_params p;
    sim_default_params(&p);
    CHECK(sim_params_set(&p, "model", "deepseek-v2-lite", err, sizeof err) == 0);
    p.prefix_caching = prefix_caching;
    engine *e = engine_sim_create(&p, err, sizeof err);
    CHECK_MSG(e != NULL, "%s", err);
    int64_t now = 1000000000;
    for (int t = 0; t < turns && e; t++) {
        dataset_item it;
        CHECK(sessions_build_turn(d->sessions, 0, t, &it) == 0);
        char *body = openai_request_body(OPENAI_COMPLETIONS, "m", &it, true, true);
        uint64_t *h = NULL;
        int32_t nh = 0;
        /* as serve hashes it: the prompt's words, then the 32 words it will answer with */
        CHECK(srv_sequence_hashes(OAI_COMPLETIONS, body, strlen(body), p.block_size, (uint64_t)t + 1, 32, &h, &nh) == 0);
        prompt[t] = oai_count_words(it.prompt);
        engine_request q = { .id = (uint64_t)t + 1, .prompt_tokens = prompt[t], .max_tokens = 32, .ignore_eos = true,
                             .block_hashes = h, .n_block_hashes = nh, .hash_block_tokens = p.block_size,
                             .hashed_tokens = prompt[t] + 32 };
        sim_info before, after;
        sim_get_info(e, &before);
        CHECK(engine_submit(e, &q, now) == 0);
        free(h);
        turn_times tt = {0};
        while (!tt.end_ns) {
            int64_t next = engine_next_event_ns(e);
            if (next == ENGINE_NEVER) break;
            engine_advance(e, next, on_event, &tt);
        }
        sim_get_info(e, &after);
        ttft_ns[t] = tt.first_ns - now;
        hits[t] = after.prefix_hit_tokens - before.prefix_hit_tokens;
        /* the answer the server would have streamed, back into the history */
        char answer[32 * 8 + 1] = "";
        for (int k = 0; k < 32; k++) strcat(answer, oai_word((uint64_t)t + 1, k));
        record r = { .session = 1, .turn = (uint16_t)t, .outcome = REC_OK, .in_tokens = it.in_tokens,
                     .out_tokens_server = 32, .text = strdup(answer) };
        sessions_turn_done(d->sessions, &r);
        free(r.text);
        free(body);
        sessions_item_free(&it);
        now = tt.end_ns + 1000000000;   /* think=1s */
    }
    engine_destroy(e);
    dataset_free(d);
}

TEST(workload_sim_conversation_ttft_falls_with_prefix_cache) {
    int64_t on[4], off[4], hit_on[4], hit_off[4];
    int32_t words[4];
    converse(true, 4, on, hit_on, words);
    converse(false, 4, off, hit_off, words);
    CHECK_EQ_INT(hit_on[0], 0);
    for (int t = 1; t < 4; t++) {
        /* every whole block of the previous prompt and its answer hits (the engine caches the
         * answer's blocks as vLLM does, once complete; the last answer token's KV was never
         * computed): exactly those */
        int32_t bs = 16, computed = words[t - 1] + 32 - 1;
        CHECK_MSG(hit_on[t] == computed / bs * bs, "turn %d: %lld words hit; the previous prompt and its answer "
                  "have %d computed, %d in whole blocks", t, (long long)hit_on[t], computed, computed / bs * bs);
        CHECK_EQ_INT(hit_off[t], 0);
        /* engine time, deterministic: the prefill the cache spares shows in TTFT */
        CHECK_MSG(on[t] < on[0], "turn %d TTFT %lld ns not below turn 0's %lld ns", t, (long long)on[t], (long long)on[0]);
        CHECK_MSG(off[t] >= off[t - 1], "without the cache TTFT should grow with the history: turn %d %lld ns < %lld ns",
                  t, (long long)off[t], (long long)off[t - 1]);
        CHECK_MSG(on[t] * 3 < off[t] * 2, "turn %d: %lld ns with the cache vs %lld ns without", t, (long long)on[t], (long long)off[t]);
    }
}

/* Conversations against `dsperf serve --engine sim` with prefix caching: the hit rate the client
 * measures from the server's /metrics over the run is the simulator's own count (its counters at
 * the end of the run, the server having started with none), and it stays within what the
 * workload allows. */
#include "testutil.h"
TEST(workload_serve_sim_hit_rate_is_the_simulators) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --model deepseek-v2-lite --gpu h200 --prefix-caching on") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char out[512], cmd[2048], murl[128];
    snprintf(out, sizeof out, "%s/sim-sess.json", harness_tmpdir());
    snprintf(murl, sizeof murl, "%s/metrics", s.url);
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency 3 --dataset sessions:n=6,turns=4,first=2000,user=50,out=16,think=20ms "
             "--server-metrics %s --out %s", s.url, murl, out);
    int rc = test_run(cmd, NULL, NULL);
    char *m = test_http_get(murl);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *r = test_load_json(out);
    json_t *pc = json_object_get(r, "prefix_cache");
    double q = m ? test_prom_value(m, "vllm:prefix_cache_queries_total") : NAN, h = m ? test_prom_value(m, "vllm:prefix_cache_hits_total") : NAN;
    CHECK_MSG(q > 0 && h > 0, "no prefix-cache counters on serve's /metrics");
    CHECK_NEAR(test_num(pc, "hit_rate_metrics"), h / q, 1e-9);
    /* every answer said how much of its prompt came from the cache (usage.prompt_tokens_details):
     * together exactly the engine's hits, so TTFT splits into hits (turns 1-3 of each conversation,
     * whose history was cached) and misses (turn 0) */
    CHECK_EQ_INT(test_num(pc, "reported_requests"), 24);
    CHECK_NEAR(test_num(pc, "hit_rate"), h / q, 1e-9);
    CHECK_EQ_INT(test_num(json_object_get(pc, "ttft_hit"), "n"), 18);
    CHECK_EQ_INT(test_num(json_object_get(pc, "ttft_miss"), "n"), 6);
    /* every prompt token went through the cache's lookup once */
    CHECK_EQ_INT(q, test_num(r, "total_input_tokens_server"));
    double bound = test_num(pc, "hit_rate_bound");
    CHECK_MSG(h / q <= bound + 1e-9 && h / q >= 0.8 * bound, "hit rate %.4f against a bound of %.4f", h / q, bound);
    free(m);
    json_decref(r);
}

/* A trace whose system prompts come back only after a dozen others against a KV cache too small to
 * hold them: the simulator hits almost nothing of what the trace allows, and diagnose names the KV
 * capacity (an LRU cache of the server's size, from /metrics, allows little on this trace), with the
 * KV dtype and memory knobs. With the default KV cache the same trace hits what it allows. */
TEST(workload_serve_sim_prefix_cache_too_small) {
    char trace[512], out[512], cmd[2048];
    snprintf(trace, sizeof trace, "%s/rot.jsonl", harness_tmpdir());
    FILE *f = fopen(trace, "w");
    for (int r = 0; r < 120; r++) {
        int g = r % 12;
        fprintf(f, "{\"timestamp\": %d, \"input_length\": %d, \"output_length\": 4, \"hash_ids\": [", r * 10, 8 * 64 + 20);
        for (int k = 0; k < 6; k++) fprintf(f, "%d, ", g * 10 + k);
        fprintf(f, "%d, %d, %d]}\n", 1000 + 3 * r, 1001 + 3 * r, 1002 + 3 * r);
    }
    fclose(f);
    for (int small = 1; small >= 0; small--) {
        test_server s;
        char args[256];
        snprintf(args, sizeof args, "--engine sim --model deepseek-v2-lite --gpu h200 --speedup 4 --prefix-caching on%s",
                 small ? " --num-gpu-blocks 200" : "");
        if (test_serve_start(&s, args) != 0) { CHECK_MSG(0, "serve did not start"); return; }
        snprintf(out, sizeof out, "%s/rot-%d.json", harness_tmpdir(), small);
        snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency 1 --dataset mooncake:%s --block-size 64 "
                 "--server-metrics %s/metrics --out %s", s.url, trace, s.url, out);
        int rc = test_run(cmd, NULL, NULL);
        test_serve_stop(&s);
        CHECK_EQ_INT(rc, 0);
        json_t *r = test_load_json(out);
        json_t *pc = json_object_get(r, "prefix_cache");
        double hit = test_num(pc, "hit_rate_metrics"), bound = test_num(pc, "hit_rate_bound");
        /* the KV cache's size, as vLLM states it (vllm:cache_config_info) */
        double cap = test_num(json_object_get(json_object_get(r, "telemetry_summary"), "server"), "kv_capacity_tokens");
        if (small) CHECK_NEAR(cap, 200 * 16, 0);
        else CHECK_MSG(cap > 100000, "default KV cache %.0f tokens", cap);
        snprintf(cmd, sizeof cmd, "diagnose %s --json", out);
        char *dj = NULL;
        test_run(cmd, &dj, NULL);
        json_t *dg = dj ? json_loads(dj, 0, NULL) : NULL;
        const json_t *fd = NULL;
        size_t i;
        json_t *x;
        json_array_foreach(json_object_get(dg, "findings"), i, x)
            if (!strcmp(json_string_value(json_object_get(x, "class")), "prefix_cache")) fd = x;
        if (small) {
            CHECK_MSG(hit < 0.3 * bound, "a 3,200-token cache hit %.3f of a %.3f bound", hit, bound);
            CHECK(fd != NULL);
            if (fd) CHECK(strstr(json_string_value(json_object_get(fd, "title")), "too small") != NULL);
        } else {
            CHECK_MSG(hit >= 0.8 * bound, "the default cache hit %.3f of a %.3f bound", hit, bound);
            CHECK(fd == NULL);
        }
        json_decref(dg);
        free(dj);
        json_decref(r);
    }
}
