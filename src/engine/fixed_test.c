/* Tests for the fixed-timing engine, driven directly on a virtual clock (no HTTP): exact
 * absolute deadlines, FIFO capacity, cancel, chunking, stalls, jitter and the itl-0 fairness bound. */
#include "harness.h"
#include "engine/fixed.h"
#include <string.h>
#include <stdlib.h>

#define MS 1000000LL

typedef struct { engine_event ev[4096]; int n; } ev_log;

static void record(void *ctx, const engine_event *ev) {
    ev_log *l = ctx;
    if (l->n < 4096) l->ev[l->n++] = *ev;
}

static engine *make(fixed_params *p) {
    char err[128];
    engine *e = engine_fixed_create(p, err, sizeof err);
    CHECK_MSG(e != NULL, "create: %s", err);
    return e;
}

/* Runs the engine event by event (as a perfect driver would) until idle or t_end. */
static void run_until(engine *e, ev_log *l, int64_t t_end) {
    for (int guard = 0; guard < 100000; guard++) {
        int64_t t = engine_next_event_ns(e);
        if (t == ENGINE_NEVER || t > t_end) return;
        engine_advance(e, t, record, l);
    }
}

static engine_request req(uint64_t id, int prompt, int max) {
    return (engine_request){ .id = id, .prompt_tokens = prompt, .max_tokens = max };
}

TEST(engine_fixed_absolute_deadlines) {
    fixed_params p;
    fixed_default_params(&p);
    p.prefill_per_token_ns = 20000;   /* 20 us */
    engine *e = make(&p);
    engine_request r = req(7, 100, 5);
    CHECK_EQ_INT(engine_submit(e, &r, 1000 * MS), 0);
    ev_log *l = calloc(1, sizeof *l);
    /* a late driver: advance long after everything is due; times are still the grid's */
    engine_advance(e, 5000 * MS, record, l);
    CHECK_EQ_INT(l->n, 6);
    CHECK_EQ_INT(l->ev[0].flags, ENGINE_EV_SCHEDULED);
    CHECK_EQ_INT(l->ev[0].t_ns, 1000 * MS);
    int64_t first = 1000 * MS + 50 * MS + 100 * 20000;
    for (int k = 0; k < 5; k++) {
        CHECK_EQ_INT(l->ev[1 + k].t_ns, first + k * 10 * MS);
        CHECK_EQ_INT(l->ev[1 + k].n_tokens, 1);
        CHECK(l->ev[1 + k].flags & ENGINE_EV_TOKENS);
    }
    CHECK(l->ev[1].flags & ENGINE_EV_FIRST);
    CHECK(l->ev[5].flags & ENGINE_EV_FINISHED);
    CHECK_STR(l->ev[5].finish_reason, "length");
    CHECK_EQ_INT(engine_next_event_ns(e), ENGINE_NEVER);
    engine_stats st;
    engine_get_stats(e, &st);
    CHECK_EQ_INT(st.prompt_tokens_total, 100);
    CHECK_EQ_INT(st.generation_tokens_total, 5);
    CHECK_EQ_INT(st.running, 0);
    free(l);
    engine_destroy(e);
}

TEST(engine_fixed_capacity_fifo_and_cancel) {
    fixed_params p;
    fixed_default_params(&p);
    p.capacity = 1;
    engine *e = make(&p);
    engine_request a = req(1, 0, 3), b = req(2, 0, 3), c = req(3, 0, 3);
    engine_submit(e, &a, 0);
    engine_submit(e, &b, 0);
    engine_submit(e, &c, 0);
    engine_stats st;
    engine_get_stats(e, &st);
    CHECK_EQ_INT(st.running, 1);
    CHECK_EQ_INT(st.waiting, 2);
    engine_cancel(e, 2, 0);                      /* b leaves the queue */
    ev_log *l = calloc(1, sizeof *l);
    run_until(e, l, 10000 * MS);
    /* a: sched 0, tokens 50,60,70; c is scheduled when a finishes (70) -> tokens 120,130,140 */
    CHECK_EQ_INT(l->n, 8);
    CHECK_EQ_INT(l->ev[3].id, 1);
    CHECK_EQ_INT(l->ev[3].t_ns, 70 * MS);
    CHECK_EQ_INT(l->ev[4].id, 3);
    CHECK_EQ_INT(l->ev[4].flags, ENGINE_EV_SCHEDULED);
    CHECK_EQ_INT(l->ev[4].t_ns, 70 * MS);
    CHECK_EQ_INT(l->ev[5].t_ns, 120 * MS);
    CHECK_EQ_INT(l->ev[7].t_ns, 140 * MS);
    for (int i = 0; i < l->n; i++) CHECK(l->ev[i].id != 2);
    /* cancelling a running request lets the next one in at the cancel time */
    engine_request d = req(4, 0, 100), f = req(5, 0, 1);
    engine_submit(e, &d, 200 * MS);
    engine_submit(e, &f, 200 * MS);
    l->n = 0;
    run_until(e, l, 260 * MS);
    engine_cancel(e, 4, 265 * MS);
    run_until(e, l, 10000 * MS);
    CHECK_EQ_INT(l->ev[l->n - 2].id, 5);
    CHECK_EQ_INT(l->ev[l->n - 2].t_ns, 265 * MS);
    CHECK_EQ_INT(l->ev[l->n - 1].t_ns, 315 * MS);
    engine_cancel(e, 999, 0);                    /* unknown ids are ignored */
    free(l);
    engine_destroy(e);
}

TEST(engine_fixed_chunks_and_stall) {
    fixed_params p;
    fixed_default_params(&p);
    p.tokens_per_chunk = 3;
    engine *e = make(&p);
    engine_request r = req(1, 0, 10);
    r.stall_after = 6;
    r.stall_ns = 2000 * MS;
    engine_submit(e, &r, 0);
    ev_log *l = calloc(1, sizeof *l);
    run_until(e, l, 100000 * MS);
    CHECK_EQ_INT(l->n, 5);       /* scheduled + chunks of 3,3,3,1 */
    int n[] = {3, 3, 3, 1};
    int64_t t[] = {50 * MS, 60 * MS, 2070 * MS, 2080 * MS};
    for (int i = 0; i < 4; i++) {
        CHECK_EQ_INT(l->ev[1 + i].n_tokens, n[i]);
        CHECK_EQ_INT(l->ev[1 + i].t_ns, t[i]);
    }
    free(l);
    engine_destroy(e);
}

TEST(engine_fixed_itl0_fair_and_bounded) {
    fixed_params p;
    fixed_default_params(&p);
    p.itl_ns = 0;
    p.ttft_ns = 0;
    p.max_events_per_advance = 10;
    engine *e = make(&p);
    for (uint64_t id = 1; id <= 3; id++) { engine_request r = req(id, 0, 100); engine_submit(e, &r, 0); }
    ev_log *l = calloc(1, sizeof *l);
    engine_advance(e, 0, record, l);
    CHECK_EQ_INT(l->n, 12);                       /* bounded per call: max(10, 4 x 3 in service) */
    CHECK_EQ_INT(engine_next_event_ns(e), 0);     /* more is due now */
    /* after the three SCHEDULED events, tokens go round robin 1,2,3,1,2,3,... */
    for (int i = 3; i < 12; i++) CHECK_EQ_INT(l->ev[i].id, (uint64_t)((i - 3) % 3 + 1));
    l->n = 0;
    int calls = 0;
    while (engine_next_event_ns(e) != ENGINE_NEVER && calls < 1000) { engine_advance(e, 0, record, l); calls++; }
    int64_t total = 0;
    for (int i = 0; i < l->n; i++) total += l->ev[i].n_tokens;
    CHECK_EQ_INT(total + 9, 300);
    free(l);
    engine_destroy(e);
}

TEST(engine_fixed_jitter_seeded) {
    fixed_params p;
    fixed_default_params(&p);
    p.jitter = 0.2;
    p.seed = 42;
    int64_t times[2][21];
    for (int run = 0; run < 2; run++) {
        engine *e = make(&p);
        engine_request r = req(1, 0, 20);
        engine_submit(e, &r, 0);
        ev_log *l = calloc(1, sizeof *l);
        run_until(e, l, 100000 * MS);
        CHECK_EQ_INT(l->n, 21);
        for (int i = 0; i < 21; i++) times[run][i] = l->ev[i].t_ns;
        /* TTFT within 50 ms +- 20 %, each deadline within +-20 % of an itl around its grid point */
        CHECK(times[run][1] >= 40 * MS && times[run][1] <= 60 * MS);
        for (int k = 1; k < 20; k++) {
            int64_t grid = times[run][1] + k * 10 * MS;
            CHECK(times[run][1 + k] >= times[run][k]);
            CHECK(llabs(times[run][1 + k] - grid) <= 2 * MS);
        }
        free(l);
        engine_destroy(e);
    }
    CHECK(!memcmp(times[0], times[1], sizeof times[0]));
}

TEST(engine_fixed_params_set) {
    fixed_params p;
    fixed_default_params(&p);
    char err[128];
    CHECK_EQ_INT(fixed_params_set(&p, "ttft", "20ms", err, sizeof err), 0);
    CHECK_EQ_INT(p.ttft_ns, 20 * MS);
    CHECK_EQ_INT(fixed_params_set(&p, "prefill-per-token", "20us", err, sizeof err), 0);
    CHECK_EQ_INT(p.prefill_per_token_ns, 20000);
    CHECK_EQ_INT(fixed_params_set(&p, "capacity", "8", err, sizeof err), 0);
    CHECK_EQ_INT(p.capacity, 8);
    CHECK_EQ_INT(fixed_params_set(&p, "itl", "fast", err, sizeof err), -1);
    CHECK_EQ_INT(fixed_params_set(&p, "tokens-per-chunk", "0", err, sizeof err), -1);
    CHECK_EQ_INT(fixed_params_set(&p, "jitter", "1.5", err, sizeof err), -1);
    CHECK_EQ_INT(fixed_params_set(&p, "nonsense", "1", err, sizeof err), 1);
}
