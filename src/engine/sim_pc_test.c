/* prefix cache tests — the cache on its own (LRU order as vLLM frees blocks, anonymous runs, a
 * request taking back its own blocks after a preemption) and in the engine, on its virtual clock:
 * generated tokens' blocks are hits for the next turn, the first event carries the cached tokens,
 * and a preempted request recomputes only what was evicted. */
#include "harness.h"
#include "engine/sim.h"
#include "engine/sim_pc.h"
#include <stdlib.h>
#include <string.h>

static void req_init(sim_pc_req *r) {
    memset(r, 0, sizeof *r);
    r->run = -1;
}

/* LRU: blocks of finished requests stay cached until the pool needs them; the oldest go first,
 * a request's deepest block before its shallower ones. */
TEST(sim_pc_lru_eviction) {
    sim_pc *pc = sim_pc_create(8);
    CHECK(pc != NULL);
    if (!pc) return;
    sim_pc_req a, b, x;
    req_init(&a);
    req_init(&b);
    req_init(&x);
    engine_request qa = {.prompt_tokens = 64, .prefix_id = 1, .prefix_len = 64};
    engine_request qb = {.prompt_tokens = 64, .prefix_id = 2, .prefix_len = 64};
    CHECK(sim_pc_prepare(&a, &qa, 16) == 0 && a.n_hash == 4);
    CHECK(sim_pc_prepare(&b, &qb, 16) == 0);
    int32_t was_free;
    CHECK_EQ_INT(sim_pc_match(pc, &a, 4, &was_free), 0);
    sim_pc_commit(pc, &a, 4);
    CHECK_EQ_INT(sim_pc_release(pc, &a, 4, 4), 4);    /* all four return to the free pool, still cached */
    CHECK_EQ_INT(sim_pc_evictable(pc), 4);
    sim_pc_commit(pc, &b, 4);
    CHECK_EQ_INT(sim_pc_release(pc, &b, 5, 4), 5);    /* one partial block + four cached */
    /* 8 free blocks of which 8 cached: taking 2 evicts a's two deepest blocks (least recent) */
    sim_pc_make_room(pc, 8, 2);
    CHECK_EQ_INT(sim_pc_evictable(pc), 6);
    CHECK(sim_pc_prepare(&x, &qa, 16) == 0);
    CHECK_EQ_INT(sim_pc_match(pc, &x, 4, &was_free), 2);
    CHECK_EQ_INT(was_free, 2);
    sim_pc_req_free(&a);
    sim_pc_req_free(&b);
    sim_pc_req_free(&x);
    sim_pc_destroy(pc);
}

/* Blocks no one else can name (a random prompt, an answer without ids) stay in the free queue in
 * vLLM's order: released earlier, evicted earlier, whatever their content; the same request finds
 * what is left of them when it is scheduled again after a preemption, nobody else does. */
TEST(sim_pc_anonymous_runs_evict_in_order_and_come_back_to_their_request) {
    sim_pc *pc = sim_pc_create(16);
    if (!pc) { CHECK(pc != NULL); return; }
    sim_pc_req u, s, other;
    req_init(&u);
    req_init(&s);
    req_init(&other);
    engine_request qu = {.prompt_tokens = 80};                          /* no identity */
    engine_request qs = {.prompt_tokens = 32, .prefix_id = 7, .prefix_len = 32};
    int32_t was_free;
    CHECK(sim_pc_prepare(&u, &qu, 16) == 0 && u.n_hash == 0);
    CHECK_EQ_INT(sim_pc_match(pc, &u, 4, &was_free), 0);
    CHECK_EQ_INT(sim_pc_release(pc, &u, 6, 5), 6);                      /* 5 full blocks as a run + 1 partial */
    CHECK_EQ_INT(sim_pc_evictable(pc), 5);
    CHECK(sim_pc_prepare(&s, &qs, 16) == 0 && s.n_hash == 2);
    sim_pc_commit(pc, &s, 2);
    CHECK_EQ_INT(sim_pc_release(pc, &s, 2, 2), 2);
    CHECK_EQ_INT(sim_pc_evictable(pc), 7);
    /* 9 blocks truly free + 7 cached in a pool of 16: taking 11 evicts the run's two deepest */
    sim_pc_make_room(pc, 16, 11);
    CHECK_EQ_INT(sim_pc_evictable(pc), 5);
    /* another request without identity finds nothing */
    CHECK(sim_pc_prepare(&other, &qu, 16) == 0);
    CHECK_EQ_INT(sim_pc_match(pc, &other, 4, &was_free), 0);
    /* u again (preempted, rescheduled with 2 more tokens known): its three shallow blocks are left */
    CHECK_EQ_INT(sim_pc_match(pc, &u, 5, &was_free), 3);
    CHECK_EQ_INT(was_free, 3);
    CHECK_EQ_INT(sim_pc_evictable(pc), 2);                              /* s's two blocks */
    /* the system prompt's blocks are still there for anyone */
    sim_pc_req s2;
    req_init(&s2);
    CHECK(sim_pc_prepare(&s2, &qs, 16) == 0);
    CHECK_EQ_INT(sim_pc_match(pc, &s2, 1, &was_free), 1);
    sim_pc_req_free(&u);
    sim_pc_req_free(&s);
    sim_pc_req_free(&other);
    sim_pc_req_free(&s2);
    sim_pc_destroy(pc);
}

/* ---- in the engine ---- */

typedef struct { int64_t first_ns[8], end_ns[8]; int32_t cached[8]; int cached_known[8]; int64_t preempt; } evlog;

static void on_ev(void *ctx, const engine_event *ev) {
    evlog *l = ctx;
    if (ev->id >= 8) return;
    if (ev->flags & ENGINE_EV_FIRST) {
        l->first_ns[ev->id] = ev->t_ns;
        l->cached_known[ev->id] = (ev->flags & ENGINE_EV_CACHED) != 0;
        l->cached[ev->id] = ev->cached_tokens;
    }
    if (ev->flags & ENGINE_EV_FINISHED) l->end_ns[ev->id] = ev->t_ns;
    if (ev->flags & ENGINE_EV_PREEMPTED) l->preempt++;
}

static void drain(engine *e, evlog *l) {
    for (int64_t t; (t = engine_next_event_ns(e)) != ENGINE_NEVER;) engine_advance(e, t, on_ev, l);
}

/* A conversation's second turn: its prompt is the first turn's prompt, the answer the engine
 * generated, and a new message. With ids covering the prompt and the answer (hashed_tokens), the
 * answer's full blocks are cached once complete (vLLM hashes output blocks too): the second turn
 * hits the whole computed blocks of prompt + answer, and its first event says so; with ids for
 * the prompt only, the answer is prefilled again. */
TEST(sim_prefix_cache_holds_generated_blocks) {
    enum { P0 = 1000, A0 = 200, U1 = 120, BS = 16 };
    uint64_t ids[P0 + A0 + U1];
    for (int i = 0; i < P0 + A0 + U1; i++) ids[i] = 0x1000 + (uint64_t)i;   /* one id per token */
    for (int with_output = 0; with_output < 2; with_output++) {
        sim_params p;
        sim_default_params(&p);
        p.prefix_caching = true;
        char err[256];
        engine *e = engine_sim_create(&p, err, sizeof err);
        CHECK_MSG(e != NULL, "%s", err);
        if (!e) return;
        evlog l;
        memset(&l, 0, sizeof l);
        engine_request t0 = {.id = 0, .prompt_tokens = P0, .max_tokens = A0, .ignore_eos = true,
                             .block_hashes = ids, .n_block_hashes = P0 + A0, .hash_block_tokens = 1,
                             .hashed_tokens = with_output ? P0 + A0 : 0};
        CHECK(engine_submit(e, &t0, 1000000000) == 0);
        drain(e, &l);
        engine_request t1 = {.id = 1, .prompt_tokens = P0 + A0 + U1, .max_tokens = 8, .ignore_eos = true,
                             .block_hashes = ids, .n_block_hashes = P0 + A0 + U1, .hash_block_tokens = 1};
        CHECK(engine_submit(e, &t1, l.end_ns[0] + 1000000000) == 0);
        drain(e, &l);
        sim_info info;
        sim_get_info(e, &info);
        /* the last sampled token's KV is never computed (the request ends with it), as in vLLM */
        int32_t expect = with_output ? (P0 + A0 - 1) / BS * BS : P0 / BS * BS;
        CHECK(l.cached_known[0] && l.cached_known[1]);
        CHECK_EQ_INT(l.cached[0], 0);
        CHECK_EQ_INT(l.cached[1], expect);
        CHECK_EQ_INT(info.prefix_hit_tokens, expect);
        CHECK_EQ_INT(info.prefix_query_tokens, P0 + P0 + A0 + U1);
        engine_destroy(e);
    }
}

/* Two requests that outgrow a small KV cache: the later one is preempted. Without a prefix cache
 * it recomputes everything it knew; with one, its blocks wait in the free queue and it recomputes
 * only those the other request's growth evicted (deepest first). */
TEST(sim_prefix_cache_spares_recompute_after_preemption) {
    int64_t prefill[2] = {0, 0}, hits[2] = {0, 0}, pre[2] = {0, 0};
    for (int on = 0; on < 2; on++) {
        sim_params p;
        sim_default_params(&p);
        p.prefix_caching = on;
        p.num_gpu_blocks = 64;   /* 1,024 tokens */
        char err[256];
        engine *e = engine_sim_create(&p, err, sizeof err);
        CHECK_MSG(e != NULL, "%s", err);
        if (!e) return;
        evlog l;
        memset(&l, 0, sizeof l);
        for (int i = 0; i < 2; i++) {
            engine_request q = {.id = (uint64_t)i, .prompt_tokens = 256, .max_tokens = 400, .ignore_eos = true};
            CHECK(engine_submit(e, &q, 1000000000) == 0);
        }
        drain(e, &l);
        sim_info info;
        sim_get_info(e, &info);
        prefill[on] = info.prefill_tokens_total;
        hits[on] = info.prefix_hit_tokens;
        pre[on] = l.preempt;
        CHECK(l.end_ns[0] > 0 && l.end_ns[1] > 0);
        engine_destroy(e);
    }
    CHECK(pre[0] >= 1 && pre[1] >= 1);
    CHECK_EQ_INT(hits[0], 0);
    CHECK_MSG(hits[1] > 0, "the preempted request found none of its blocks");
    /* every token hit is a token not prefilled again */
    CHECK_EQ_INT(prefill[0] - prefill[1], hits[1]);
}
