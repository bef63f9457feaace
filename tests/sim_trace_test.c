/* `dsperf sim` replaying a Mooncake trace and running conversations with the engine's prefix
 * cache, all on the simulator's virtual clock: the trace's hash ids reach the cache (with room it
 * hits exactly what the trace allows; a cache too small for the rotation of system prompts hits
 * almost nothing); conversations find their history — answers included — in the cache, turn by
 * turn, to the token; and the results carry the per-request cached tokens and the hit/miss TTFT
 * split computed by the same code as bench's (metrics/workload.c). */
#include "harness.h"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* 80 requests rotating over 4 system prompts of 4 blocks of 512 tokens, each with 2 blocks of its
 * own: 3,072 tokens, 16 out. The first request of each prompt can hit nothing, every later one its
 * 2,048 system tokens. */
static void write_trace(const char *path) {
    FILE *f = fopen(path, "w");
    for (int r = 0; r < 80; r++) {
        int g = r % 4;
        fprintf(f, "{\"timestamp\": %d, \"input_length\": 3072, \"output_length\": 16, \"hash_ids\": [", r * 250);
        for (int k = 0; k < 4; k++) fprintf(f, "%d, ", g * 10 + k);
        fprintf(f, "%d, %d]}\n", 1000 + 2 * r, 1001 + 2 * r);
    }
    fclose(f);
}

TEST(sim_trace_replay_feeds_the_prefix_cache) {
    char trace[512], out[512], cmd[2048];
    snprintf(trace, sizeof trace, "%s/rot.jsonl", harness_tmpdir());
    write_trace(trace);
    for (int small = 0; small < 2; small++) {
        /* one request at a time: no two compute the same block at once, so the hits are exact */
        snprintf(out, sizeof out, "%s/sim-trace-%d.json", harness_tmpdir(), small);
        snprintf(cmd, sizeof cmd, "sim --quiet --model deepseek-v2-lite --gpu h200 --dataset mooncake:%s --concurrency 1 "
                 "--prefix-caching on%s --out %s", trace, small ? " --num-gpu-blocks 300" : "", out);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
        json_t *r = test_load_json(out);
        json_t *pc = json_object_get(r, "prefix_cache"), *eng = json_object_get(r, "engine");
        double bound = test_num(pc, "hit_rate_bound"), hit = test_num(pc, "hit_rate");
        CHECK_NEAR(bound, 76.0 * 2048 / (80.0 * 3072), 1e-9);
        CHECK_EQ_INT(test_num(pc, "reported_requests"), 80);
        /* the records' cached tokens are the engine's own hit count */
        CHECK_NEAR(hit, test_num(eng, "prefix_cache_hit_rate"), 1e-9);
        CHECK_EQ_INT(test_num(pc, "cached_tokens"), test_num(eng, "prefix_cache_hit_tokens"));
        if (!small) {
            CHECK_NEAR(hit, bound, 1e-9);
            /* hits (2,048 of 3,072 cached) and misses (the 4 first sights) split TTFT; a hit
             * prefills a third of the prompt */
            json_t *th = json_object_get(pc, "ttft_hit"), *tm = json_object_get(pc, "ttft_miss");
            CHECK_EQ_INT(test_num(th, "n"), 76);
            CHECK_EQ_INT(test_num(tm, "n"), 4);
            CHECK_MSG(test_num(th, "median_ms") < test_num(tm, "median_ms"), "hit TTFT %.3f ms, miss %.3f ms",
                      test_num(th, "median_ms"), test_num(tm, "median_ms"));
        } else {
            /* 4,800 tokens of KV: each prompt's blocks are evicted before it comes back */
            CHECK_MSG(hit < 0.3 * bound, "a 300-block cache hit %.4f of a %.4f bound", hit, bound);
        }
        json_decref(r);
    }
    /* its times: --arrival trace at --time-scale 0.5 over the window 5s.. of the trace */
    snprintf(out, sizeof out, "%s/sim-trace-w.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --quiet --model deepseek-v2-lite --gpu h200 --dataset mooncake:%s --arrival trace "
             "--time-scale 0.5 --trace-window 5s.. --out %s", trace, out);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *r = test_load_json(out);
    CHECK_EQ_INT(test_num(r, "completed"), 60);   /* requests 20..79 start at 5 s and later */
    json_decref(r);
}

/* Conversations: turn t's prompt is the system prompt (none here), the first message, and t times
 * an answer and a new message. With the cache, turn t finds every whole computed block of turn
 * t - 1's prompt and answer (the answer's last token never had its KV computed), turn 0 nothing;
 * TTFT by turn shows it. Without, nothing is reported cached and TTFT grows with the history. */
TEST(sim_sessions_reuse_the_history) {
    enum { FIRST = 1500, USER = 60, OUT = 24, BS = 16 };
    char out[512], reqs[512], cmd[2048];
    for (int on = 1; on >= 0; on--) {
        snprintf(out, sizeof out, "%s/sim-sess-%d.json", harness_tmpdir(), on);
        snprintf(reqs, sizeof reqs, "%s/sim-sess-%d.jsonl", harness_tmpdir(), on);
        snprintf(cmd, sizeof cmd, "sim --quiet --model deepseek-v2-lite --gpu h200 --concurrency 3 --dataset "
                 "sessions:n=6,turns=4,first=%d,user=%d,out=%d,think=100ms --prefix-caching %s --out %s "
                 "--save-requests %s", FIRST, USER, OUT, on ? "on" : "off", out, reqs);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
        json_t *r = test_load_json(out);
        json_t *ss = json_object_get(r, "sessions"), *pc = json_object_get(r, "prefix_cache");
        CHECK_EQ_INT(test_num(r, "completed"), 24);
        CHECK_EQ_INT(test_num(ss, "completed"), 6);
        json_t *by = json_object_get(ss, "by_turn");
        CHECK_EQ_INT(json_array_size(by), 4);
        double t0 = test_num(json_object_get(json_array_get(by, 0), "ttft"), "median_ms");
        for (int t = 1; t < 4; t++) {
            double tt = test_num(json_object_get(json_array_get(by, (size_t)t), "ttft"), "median_ms");
            if (on) CHECK_MSG(tt < t0, "turn %d median TTFT %.3f ms not below turn 0's %.3f ms", t, tt, t0);
            else CHECK_MSG(tt > t0, "without the cache turn %d's TTFT %.3f ms should exceed turn 0's %.3f", t, tt, t0);
        }
        if (on) {
            CHECK_EQ_INT(test_num(pc, "reported_requests"), 24);
            CHECK_EQ_INT(test_num(json_object_get(pc, "ttft_hit"), "n"), 18);
            CHECK_EQ_INT(test_num(json_object_get(pc, "ttft_miss"), "n"), 6);
            CHECK_NEAR(test_num(pc, "hit_rate"), test_num(json_object_get(r, "engine"), "prefix_cache_hit_rate"), 1e-9);
        } else {
            CHECK_EQ_INT(test_num(pc, "reported_requests"), 0);
        }
        json_decref(r);
        /* every request, to the token */
        FILE *f = fopen(reqs, "r");
        CHECK(f != NULL);
        char *line = NULL;
        size_t cap = 0;
        int n = 0;
        while (f && getline(&line, &cap, f) > 0) {
            json_t *q = json_loads(line, 0, NULL);
            if (!q) continue;
            int t = (int)test_num(q, "turn");
            int prompt = FIRST + t * (OUT + USER), prev = FIRST + (t - 1) * (OUT + USER);
            CHECK_EQ_INT(test_num(q, "in_tokens"), prompt);
            CHECK_EQ_INT(test_num(q, "cacheable_tokens"), t ? prev + OUT : 0);
            if (on) CHECK_EQ_INT(test_num(q, "cached_tokens"), t ? (prev + OUT - 1) / BS * BS : 0);
            else CHECK(json_is_null(json_object_get(q, "cached_tokens")));
            n++;
            json_decref(q);
        }
        free(line);
        if (f) fclose(f);
        CHECK_EQ_INT(n, 24);
    }
}

/* Bad combinations get one line and exit 2. */
TEST(sim_sessions_usage_errors) {
    char *err = NULL;
    CHECK_EQ_INT(test_run("sim --dataset sessions:n=4,turns=2 --concurrency 2 --requests 10", NULL, &err), 2);
    CHECK(err && strstr(err, "conversations"));
    free(err);
    err = NULL;
    CHECK_EQ_INT(test_run("sim --dataset sessions:n=4,turns=2 --concurrency 2 --warmup 4", NULL, &err), 2);
    CHECK(err && strstr(err, "--warmup"));
    free(err);
}
