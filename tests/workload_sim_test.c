/* Conversations on the simulated engine with prefix caching, on its own virtual clock (no wall
 * time): each turn's request is what bench sends (sessions dataset, request body) and what serve
 * hands the engine (prompt words, chained block hashes); the answer goes back into the history.
 * With the cache, every later turn's TTFT is a fraction of the first turn's (only the new message
 * and the answer are prefilled) and the engine's hit count is the history's whole blocks; without
 * it, TTFT grows with the history. */
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
        CHECK(srv_prompt_hashes(OAI_COMPLETIONS, body, strlen(body), p.block_size, &h, &nh) == 0);
        prompt[t] = oai_count_words(it.prompt);
        engine_request q = { .id = (uint64_t)t + 1, .prompt_tokens = prompt[t], .max_tokens = 32, .ignore_eos = true,
                             .block_hashes = h, .n_block_hashes = nh, .hash_block_tokens = p.block_size };
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
        /* the whole blocks of the previous prompt hit (the engine caches prompt blocks; its answer's
         * tokens are prefilled again), never more than the previous prompt and its answer */
        int32_t bs = 16, prev_blocks = words[t - 1] / bs * bs, reusable = words[t - 1] + 32;
        CHECK_MSG(hit_on[t] >= prev_blocks && hit_on[t] <= reusable, "turn %d: %lld words hit; the previous prompt has %d "
                  "in whole blocks, %d with its answer", t, (long long)hit_on[t], prev_blocks, reusable);
        CHECK_EQ_INT(hit_off[t], 0);
        /* engine time, deterministic: the prefill the cache spares shows in TTFT */
        CHECK_MSG(on[t] < on[0], "turn %d TTFT %lld ns not below turn 0's %lld ns", t, (long long)on[t], (long long)on[0]);
        CHECK_MSG(off[t] >= off[t - 1], "without the cache TTFT should grow with the history: turn %d %lld ns < %lld ns",
                  t, (long long)off[t], (long long)off[t - 1]);
        CHECK_MSG(on[t] * 3 < off[t] * 2, "turn %d: %lld ns with the cache vs %lld ns without", t, (long long)on[t], (long long)off[t]);
    }
}
