/* sim_sess — conversations on the virtual clock (sim_run.h, sim_sessions), as bench's runner
 * drives a sessions dataset against a server: users (closed loop, each holding its conversation to
 * the end) or arrivals (open loop, one conversation each, under --max-concurrency) start
 * conversations; each turn is sent think_ns after the previous answer ended; a turn the engine
 * rejects ends its conversation. A turn's request carries, per KV block, the ids of the tokens in
 * it — the system prompt's shared by every conversation, each message and answer its own — over
 * the prompt and the answer to come, so the engine's prefix cache finds the history (the answer
 * included, as vLLM caches generated blocks) exactly where a server's would. */
#include "engine/sim_run_int.h"
#include "common/rng.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int64_t t_ns; uint32_t conv; uint16_t turn; } due_turn;

typedef struct {
    engine *e;
    const sim_workload *w;
    const sim_sessions *ss;
    recset *recs;
    due_turn *due;               /* turns waiting for their time: end + a constant think, so in order */
    size_t due_head, due_n, due_cap;
    size_t *fifo;                /* open loop: records waiting for a --max-concurrency slot */
    size_t f_head, f_n, f_cap;
    int64_t *ready;              /* closed loop: when each free user may start a conversation */
    size_t r_head, r_n, r_cap;
    size_t in_flight;
    uint64_t *ids;               /* scratch: one turn's block ids */
    size_t ids_cap;
    int oom;
} sess_ctx;

static uint64_t mix(uint64_t a, uint64_t b) { return rng_mix64(a, b); }

/* Turn t's prompt: system + first + t x (answer + user). */
static int64_t prompt_tokens(const sim_sessions *s, int turn) {
    return (int64_t)s->system + s->first + (int64_t)turn * ((int64_t)s->out + s->user);
}

/* Segment k of conversation c's token sequence up to turn t's answer: the system prompt, then
 * user message 0, answer 0, user message 1, ... Its id and length. */
static void segment(const sim_sessions *s, uint32_t c, int k, uint64_t *id, int64_t *len) {
    if (s->system > 0) {
        if (k == 0) { *id = 0x5157e4ULL; *len = s->system; return; }
        k--;
    }
    int turn = k / 2, answer = k % 2;
    *id = mix(mix((uint64_t)c + 1, (uint64_t)turn), answer ? 0xa5ULL : 0x05ULL);
    *len = answer ? s->out : (turn ? s->user : s->first);
}

/* Per full KV block of turn t's prompt + answer, an id of the tokens in it: the (segment, offset,
 * length) pieces it holds, so equal ids mean equal tokens. Returns the number of blocks, -1 OOM. */
static int64_t block_ids(sess_ctx *x, uint32_t c, int turn, int32_t bs) {
    int64_t total = prompt_tokens(x->ss, turn) + x->ss->out, nb = total / bs;
    if ((size_t)nb > x->ids_cap) {
        uint64_t *n = realloc(x->ids, sizeof *n * (size_t)nb);
        if (!n) return -1;
        x->ids = n;
        x->ids_cap = (size_t)nb;
    }
    int k = 0;
    uint64_t sid;
    int64_t slen, soff = 0;
    segment(x->ss, c, k, &sid, &slen);
    for (int64_t b = 0; b < nb; b++) {
        uint64_t h = 0x51b10c5ULL;
        for (int64_t need = bs; need > 0;) {
            if (soff == slen) { segment(x->ss, c, ++k, &sid, &slen); soff = 0; continue; }
            int64_t take = slen - soff < need ? slen - soff : need;
            h = mix(h, mix(sid, (uint64_t)soff << 24 ^ (uint64_t)take));
            soff += take;
            need -= take;
        }
        x->ids[b] = h;
    }
    return nb;
}

static void due_push(sess_ctx *x, int64_t t, uint32_t conv, uint16_t turn) {
    if (x->due_n == x->due_cap) {
        size_t nc = x->due_cap ? x->due_cap * 2 : 64;
        due_turn *nd = malloc(nc * sizeof *nd);
        if (!nd) { x->oom = 1; return; }
        for (size_t i = 0; i < x->due_n; i++) nd[i] = x->due[(x->due_head + i) % x->due_cap];
        free(x->due);
        x->due = nd;
        x->due_cap = nc;
        x->due_head = 0;
    }
    x->due[(x->due_head + x->due_n++) % x->due_cap] = (due_turn){t, conv, turn};
}

static void fifo_push(sess_ctx *x, size_t idx) {
    if (x->f_n == x->f_cap) {
        size_t nc = x->f_cap ? x->f_cap * 2 : 64;
        size_t *nf = malloc(nc * sizeof *nf);
        if (!nf) { x->oom = 1; return; }
        for (size_t i = 0; i < x->f_n; i++) nf[i] = x->fifo[(x->f_head + i) % x->f_cap];
        free(x->fifo);
        x->fifo = nf;
        x->f_cap = nc;
        x->f_head = 0;
    }
    x->fifo[(x->f_head + x->f_n++) % x->f_cap] = idx;
}

/* Users free up in end order and the think time is constant: a ring keeps them sorted. */
static void ready_push(sess_ctx *x, int64_t t) {
    if (x->ready) x->ready[(x->r_head + x->r_n++) % x->r_cap] = t;
}

/* The record of conversation c's turn t, due at sched_ns. SIZE_MAX when out of memory. */
static size_t new_turn(sess_ctx *x, uint32_t c, int turn, int64_t sched_ns) {
    record *r = recset_add(x->recs);
    if (!r) { x->oom = 1; return SIZE_MAX; }
    const sim_sessions *s = x->ss;
    int64_t in = prompt_tokens(s, turn);
    r->index = (uint32_t)(x->recs->n - 1);
    r->session = c + 1;
    r->turn = (uint16_t)turn;
    r->warmup = c < x->w->warmup;   /* warm-up counts whole conversations, as bench */
    r->in_tokens = r->in_tokens_server = (int32_t)in;
    r->max_tokens = s->out;
    /* the workload's bound, as the sessions dataset states it: the previous turn's prompt and
     * answer; turn 0 shares the system prompt with the conversations before it */
    int64_t prev = turn ? prompt_tokens(s, turn - 1) + s->out : 0;
    r->cacheable_tokens = turn ? (int32_t)(prev < in ? prev : in) : (c > 0 ? s->system : 0);
    r->sched_ns = sched_ns;
    r->outcome = REC_ERR_CANCELLED;   /* until it finishes */
    return x->recs->n - 1;
}

/* Sends record idx now; a rejected turn ends its conversation (its user is free again). */
static void send_turn(sess_ctx *x, size_t idx, int64_t now) {
    record *r = &x->recs->v[idx];
    uint32_t c = r->session - 1;
    int turn = r->turn;
    int64_t nb = block_ids(x, c, turn, x->w->block_tokens);
    if (nb < 0) { x->oom = 1; return; }
    engine_request q = {.id = idx, .prompt_tokens = r->in_tokens, .max_tokens = x->ss->out, .ignore_eos = true,
                        .block_hashes = x->ids, .n_block_hashes = (int32_t)nb, .hash_block_tokens = x->w->block_tokens,
                        .hashed_tokens = r->in_tokens + x->ss->out};
    int rc = simr_submit(x->e, r, &q, r->sched_ns, now);
    if (rc < 0) x->oom = 1;
    else if (rc == 0) x->in_flight++;
    else ready_push(x, now + x->w->think_ns);
}

static void on_event(void *vctx, const engine_event *ev) {
    sess_ctx *x = vctx;
    if (ev->id >= x->recs->n) return;
    record *r = &x->recs->v[ev->id];
    simr_on_tokens(r, ev, x->w->coarse_chunks);
    if (!(ev->flags & ENGINE_EV_FINISHED)) return;
    x->in_flight--;
    if (r->turn + 1 < x->ss->turns) due_push(x, ev->t_ns + x->ss->think_ns, r->session - 1, (uint16_t)(r->turn + 1));
    else ready_push(x, ev->t_ns + x->w->think_ns);   /* the conversation is over: its user is free */
}

int sim_run_sessions(engine *e, const sim_workload *w, recset *recs, sim_series *series, char *err, size_t errlen) {
    const sim_sessions *ss = w->sessions;
    if (w->block_tokens < 1 || ss->turns < 1 || ss->turns > 65535) {
        snprintf(err, errlen, "conversations need the engine's block size and 1..65535 turns");
        return -1;
    }
    if (prompt_tokens(ss, ss->turns - 1) + ss->out > INT32_MAX) {
        snprintf(err, errlen, "the last turn of these conversations would exceed 2^31 tokens");
        return -1;
    }
    sess_ctx x = {.e = e, .w = w, .ss = ss, .recs = recs};
    bool closed = !w->arrival_ns;
    if (closed) {
        x.r_cap = (size_t)w->concurrency;
        if (!(x.ready = malloc(sizeof *x.ready * x.r_cap))) { snprintf(err, errlen, "out of memory"); return -1; }
        for (int u = 0; u < w->concurrency; u++) ready_push(&x, SIM_RUN_T0_NS);
    }
    if (series && simr_series_init(series, w->max_series_points) < 0) x.oom = 1;
    int64_t now = SIM_RUN_T0_NS, next_sample = SIM_RUN_T0_NS;
    size_t started = 0;
    while (!x.oom) {
        /* new conversations: a free user, or the next arrival */
        if (closed) {
            while (x.r_n && x.ready[x.r_head] <= now && started < ss->n && !x.oom) {
                int64_t t = x.ready[x.r_head];
                x.r_head = (x.r_head + 1) % x.r_cap;
                x.r_n--;
                size_t idx = new_turn(&x, (uint32_t)started++, 0, t);
                if (idx != SIZE_MAX) send_turn(&x, idx, now);
            }
        } else {
            while (started < ss->n && SIM_RUN_T0_NS + w->arrival_ns[started] <= now && !x.oom) {
                size_t idx = new_turn(&x, (uint32_t)started, 0, SIM_RUN_T0_NS + w->arrival_ns[started]);
                started++;
                if (idx != SIZE_MAX) fifo_push(&x, idx);
            }
        }
        /* later turns whose think time is over */
        while (x.due_n && x.due[x.due_head].t_ns <= now && !x.oom) {
            due_turn d = x.due[x.due_head];
            x.due_head = (x.due_head + 1) % x.due_cap;
            x.due_n--;
            size_t idx = new_turn(&x, d.conv, d.turn, d.t_ns);
            if (idx == SIZE_MAX) break;
            if (closed) send_turn(&x, idx, now);
            else fifo_push(&x, idx);
        }
        while (x.f_n && (!w->max_concurrency || x.in_flight < (size_t)w->max_concurrency) && !x.oom) {
            size_t idx = x.fifo[x.f_head];
            x.f_head = (x.f_head + 1) % x.f_cap;
            x.f_n--;
            send_turn(&x, idx, now);
        }
        int64_t te = engine_next_event_ns(e), ta = ENGINE_NEVER;
        if (closed) { if (x.r_n && started < ss->n) ta = x.ready[x.r_head]; }
        else if (started < ss->n) ta = SIM_RUN_T0_NS + w->arrival_ns[started];
        if (x.due_n && x.due[x.due_head].t_ns < ta) ta = x.due[x.due_head].t_ns;
        if (te == ENGINE_NEVER && ta == ENGINE_NEVER) break;
        if (ta <= te) {
            simr_sample_until(e, series, ta - 1, &next_sample);
            now = ta;
        } else {
            simr_sample_until(e, series, te - 1, &next_sample);
            now = te;
            engine_advance(e, now, on_event, &x);
        }
    }
    simr_sample_until(e, series, now, &next_sample);
    free(x.due);
    free(x.fifo);
    free(x.ready);
    free(x.ids);
    if (x.oom) { snprintf(err, errlen, "out of memory"); return -1; }
    return 0;
}
