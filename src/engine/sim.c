/* sim — the simulated vLLM-like engine: a scheduler over a request pool, a paged KV block
 * counter, and steps timed by the cost model. Passive: the driver submits, asks next_event_ns and
 * advances the clock; every step's events are emitted at the step's end time.
 *
 * A request's tokens follow vLLM's bookkeeping: all known tokens = prompt + generated; computed =
 * tokens whose KV is in the cache. A step schedules (known - computed) tokens for it (the whole
 * or a chunk of the prompt, or 1 when decoding); when computed catches up with known, a token is
 * sampled. Preemption by recompute drops the KV (computed = 0) and puts the request at the head of
 * the waiting queue; re-admitted, it prefills prompt + generated tokens again.
 * Per step the work is O(running); no allocation happens per token or per step. */
#include "engine/sim.h"
#include "engine/sim_pc.h"
#include "engine/sim_pd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A step's time is a pure function of its batch under the run's fixed cost model, and a run's
 * batches repeat: one sequence decoding through the same contexts request after request
 * (llama-server's single slot prices a step per token), a full batch at a steady mix. A
 * table keyed by the whole batch answers a repeat without the cost model; a miss
 * costs a hash and a compare. A set of 4 ways keeps batches that share a hash's slot from evicting
 * each other every time round (one such pair costs a pricing per request). */
#define STEP_MEMO_N 4096
#define STEP_MEMO_WAYS 4
#define STEP_MEMO_WORDS 9
/* memo_key takes every field of the batch: a new field must go into the key too */
_Static_assert(sizeof(cost_batch) == 72, "cost_batch changed: add the new field to memo_key");
typedef struct {
    uint64_t key[STEP_MEMO_WORDS];
    double t_s;
    bool used;
} step_memo;

enum { RQ_FREE = 0, RQ_WAITING, RQ_RUNNING, RQ_ZOMBIE /* cancelled while its index sits in the waiting heap */ };

typedef struct {
    uint64_t id;
    int64_t arrival_ns;
    int64_t stalled_until_ns;   /* fault injection: not schedulable before this */
    int64_t stall_ns;
    int32_t prompt, max_tokens, generated, computed;
    int32_t blocks;             /* KV blocks held */
    int32_t sched;              /* tokens scheduled in the step in flight */
    int32_t stall_after;
    int32_t priority;           /* lower runs first (priority policy); 0 under fcfs */
    int64_t seq;                /* submission order: FIFO within a priority */
    uint8_t state;
    uint8_t counted_prompt;     /* prompt_tokens_total counted once, not again on recompute */
    uint8_t decoding;           /* the step in flight is a decode step for it (MTP emits several tokens) */
    int32_t next_free;
    int32_t resv_blocks;        /* KV blocks it reserved at admission (profile's admit_reserve) */
    int32_t ready;              /* tokens whose KV arrived computed (PD decode side), not yet placed */
    double mtp_acc;             /* accepted-token accumulator: tokens per step average the acceptance length */
    int32_t cached;             /* prompt tokens found in the prefix cache when first scheduled (-1 not yet) */
    sim_pc_req pc;              /* prefix cache: its blocks' ids and the hashes of its prompt */
    int32_t slot;               /* profile kv_window: the llama-server slot it holds (-1 none) */
} sim_req;

typedef struct {
    engine base;
    sim_params p;
    cost_model cost;
    engine_profile prof;
    int prefill_first;          /* a step is all prefill while prompts wait (SGLang, vLLM V0) */
    int q_per_seq;              /* query tokens per decoding sequence (1 + MTP drafts) */
    long long resv_out;         /* blocks reserved at admission and not yet allocated */
    sim_pc *pc;                 /* prefix cache (NULL: off) */
    long long total_blocks, free_blocks;
    int max_model_len;
    /* request pool */
    sim_req *reqs;
    int32_t n_reqs, cap_reqs, free_head;
    /* id -> pool index, open addressing with linear probing and backward-shift deletion */
    uint64_t *map_keys;
    int32_t *map_vals;          /* -1 empty */
    size_t map_cap, map_n;
    /* waiting: binary min-heap of pool indices keyed by (priority, seq). Under fcfs every
     * priority is 0, and since requests are admitted in seq order, preempted ones (older than
     * anyone waiting) come out first: vLLM's "prepend to the waiting queue". */
    int32_t *wq;
    size_t wq_cap, wq_len;
    int64_t next_seq;
    int64_t n_waiting;          /* live waiting requests (zombies excluded) */
    /* running: fcfs in admission order, priority by (priority, seq); the last is preempted first */
    int32_t *run;
    int32_t n_run;
    int32_t n_stalled;
    bool blocked;               /* nothing can be scheduled until a submit, cancel or finish */
    /* clock */
    bool in_flight;
    int64_t step_start_ns, step_end_ns;
    int64_t clock_ns;           /* end of the last step (engine free from here) */
    /* the scheduler's look at new requests (recv_interval_steps > 1): it admits only those that
     * arrived by its last look, taken after a prefill step, when idle, or every that many decode
     * steps (SGLang's SchedulerRecvSkipper: a decode step weighs 1, an extend step the threshold) */
    int64_t seen_ns;
    int32_t decodes_unseen;     /* decode steps since the last look */
    bool last_had_prefill;
    int32_t batch_waits;        /* steps TensorRT-LLM's batch waiting has held prompts back since it last let them in */
    /* llama-server's slots (profile kv_window; NULL otherwise): the tokens each keeps in the KV cache,
     * when it was last released (least recently used first; never used before anything) */
    int32_t n_slots;
    int64_t *slot_tokens, *slot_last;
    uint8_t *slot_busy;
    int64_t slot_clock;
    double idle_window;         /* tokens the idle slots keep */
    /* step times already priced in this run, by batch (see step_seconds) */
    step_memo *memo;
    /* stats */
    engine_stats st;
    sim_info info;
} sim_engine;

static const char *finish_length = "length";

/* --- id map --- */

static size_t map_slot(uint64_t id, size_t cap) {
    uint64_t h = id * 0x9E3779B97F4A7C15ull;
    return (size_t)(h >> 20) & (cap - 1);
}

static int map_grow(sim_engine *s) {
    size_t ncap = s->map_cap ? s->map_cap * 2 : 1024;
    uint64_t *nk = malloc(sizeof *nk * ncap);
    int32_t *nv = malloc(sizeof *nv * ncap);
    if (!nk || !nv) { free(nk); free(nv); return -1; }
    for (size_t i = 0; i < ncap; i++) nv[i] = -1;
    for (size_t i = 0; i < s->map_cap; i++) {
        if (s->map_vals[i] < 0) continue;
        size_t j = map_slot(s->map_keys[i], ncap);
        while (nv[j] >= 0) j = (j + 1) & (ncap - 1);
        nk[j] = s->map_keys[i];
        nv[j] = s->map_vals[i];
    }
    free(s->map_keys);
    free(s->map_vals);
    s->map_keys = nk;
    s->map_vals = nv;
    s->map_cap = ncap;
    return 0;
}

static int32_t map_get(const sim_engine *s, uint64_t id) {
    if (!s->map_cap) return -1;
    for (size_t j = map_slot(id, s->map_cap);; j = (j + 1) & (s->map_cap - 1)) {
        if (s->map_vals[j] < 0) return -1;
        if (s->map_keys[j] == id) return s->map_vals[j];
    }
}

static int map_put(sim_engine *s, uint64_t id, int32_t v) {
    if ((s->map_n + 1) * 2 > s->map_cap && map_grow(s) < 0) return -1;
    size_t j = map_slot(id, s->map_cap);
    while (s->map_vals[j] >= 0) {
        if (s->map_keys[j] == id) return -1; /* duplicate id */
        j = (j + 1) & (s->map_cap - 1);
    }
    s->map_keys[j] = id;
    s->map_vals[j] = v;
    s->map_n++;
    return 0;
}

static void map_del(sim_engine *s, uint64_t id) {
    size_t mask = s->map_cap - 1, j = map_slot(id, s->map_cap);
    while (s->map_vals[j] >= 0 && s->map_keys[j] != id) j = (j + 1) & mask;
    if (s->map_vals[j] < 0) return;
    s->map_vals[j] = -1;
    s->map_n--;
    /* backward shift: move later entries of the probe run into the hole when allowed */
    for (size_t k = (j + 1) & mask; s->map_vals[k] >= 0; k = (k + 1) & mask) {
        size_t home = map_slot(s->map_keys[k], s->map_cap);
        if (((k - home) & mask) >= ((k - j) & mask)) {
            s->map_keys[j] = s->map_keys[k];
            s->map_vals[j] = s->map_vals[k];
            s->map_vals[k] = -1;
            j = k;
        }
    }
}

/* --- pool and queues --- */

static int32_t pool_alloc(sim_engine *s) {
    if (s->free_head < 0) {
        int32_t ncap = s->cap_reqs ? s->cap_reqs * 2 : 1024;
        sim_req *n = realloc(s->reqs, sizeof *n * ncap);
        if (!n) return -1;
        s->reqs = n;
        for (int32_t i = ncap - 1; i >= s->cap_reqs; i--) {
            n[i].state = RQ_FREE;
            memset(&n[i].pc, 0, sizeof n[i].pc);
            n[i].next_free = s->free_head;
            s->free_head = i;
        }
        s->cap_reqs = ncap;
    }
    int32_t i = s->free_head;
    s->free_head = s->reqs[i].next_free;
    return i;
}

static void pool_release(sim_engine *s, int32_t i) {
    s->reqs[i].state = RQ_FREE;
    s->reqs[i].next_free = s->free_head;
    s->free_head = i;
}

/* Room for every live request: running ones may all be preempted back into the heap. */
static int wq_reserve(sim_engine *s) {
    size_t need = s->wq_len + (size_t)s->n_run + 1;
    if (need <= s->wq_cap) return 0;
    size_t ncap = s->wq_cap ? s->wq_cap * 2 : 1024;
    while (ncap < need) ncap *= 2;
    int32_t *n = realloc(s->wq, sizeof *n * ncap);
    if (!n) return -1;
    s->wq = n;
    s->wq_cap = ncap;
    return 0;
}

static bool wq_before(const sim_engine *s, int32_t a, int32_t b) {
    const sim_req *x = &s->reqs[a], *y = &s->reqs[b];
    return x->priority != y->priority ? x->priority < y->priority : x->seq < y->seq;
}

static void wq_push(sim_engine *s, int32_t i) {
    size_t k = s->wq_len++;
    while (k > 0) {
        size_t up = (k - 1) / 2;
        if (!wq_before(s, i, s->wq[up])) break;
        s->wq[k] = s->wq[up];
        k = up;
    }
    s->wq[k] = i;
}

static void wq_pop(sim_engine *s) {
    int32_t last = s->wq[--s->wq_len];
    size_t k = 0, n = s->wq_len;
    for (;;) {
        size_t c = 2 * k + 1;
        if (c >= n) break;
        if (c + 1 < n && wq_before(s, s->wq[c + 1], s->wq[c])) c++;
        if (!wq_before(s, s->wq[c], last)) break;
        s->wq[k] = s->wq[c];
        k = c;
    }
    if (n) s->wq[k] = last;
}

/* Head of the waiting queue, releasing cancelled entries on the way; -1 when empty. */
static int32_t wq_front(sim_engine *s) {
    while (s->wq_len) {
        int32_t i = s->wq[0];
        if (s->reqs[i].state == RQ_WAITING) return i;
        wq_pop(s);
        pool_release(s, i);
    }
    return -1;
}

static int32_t blocks_for(const sim_engine *s, int64_t tokens) {
    return (int32_t)((tokens + s->p.block_size - 1) / s->p.block_size);
}

static void drop_reservation(sim_engine *s, sim_req *r) {
    if (r->resv_blocks > r->blocks) s->resv_out -= r->resv_blocks - r->blocks;
    r->resv_blocks = 0;
}

/* Blocks now held by r: with the prefix cache, its full blocks stay cached (evictable) for others. */
static void free_blocks(sim_engine *s, sim_req *r) {
    drop_reservation(s, r);
    if (s->pc) s->free_blocks += sim_pc_release(s->pc, &r->pc, r->blocks, r->computed / s->p.block_size);
    else s->free_blocks += r->blocks;
    r->blocks = 0;
}

/* Takes n blocks for r (the caller checked room_for), evicting cached blocks first when needed. */
static void take_blocks(sim_engine *s, sim_req *r, int32_t n) {
    if (n <= 0) return;
    if (r->resv_blocks > r->blocks) s->resv_out -= (n < r->resv_blocks - r->blocks ? n : r->resv_blocks - r->blocks);
    s->free_blocks -= n;
    r->blocks += n;
}

/* --- llama-server's slots (profile kv_window) --- */

/* A new prompt takes the least recently used idle slot (one never used first: its t_last_used is
 * -1); the tokens that slot kept leave the cache (its prompt shares none of them). */
static void slot_take(sim_engine *s, sim_req *r) {
    if (!s->slot_tokens || r->slot >= 0) return;
    int32_t best = -1;
    for (int32_t k = 0; k < s->n_slots; k++)
        if (!s->slot_busy[k] && (best < 0 || s->slot_last[k] < s->slot_last[best])) best = k;
    if (best < 0) return;   /* no idle slot: cannot happen while max_num_seqs is the slot count */
    s->idle_window -= (double)s->slot_tokens[best];
    s->slot_tokens[best] = 0;
    s->slot_busy[best] = 1;
    r->slot = best;
}

/* A finished (or cancelled) request leaves its KV in its slot for the next prompt to find. */
static void slot_release(sim_engine *s, sim_req *r) {
    if (!s->slot_tokens || r->slot < 0) return;
    s->slot_tokens[r->slot] = r->computed;
    s->idle_window += r->computed;
    s->slot_busy[r->slot] = 0;
    s->slot_last[r->slot] = ++s->slot_clock;
    r->slot = -1;
}

/* The KV window the step's attention spans: the idle slots' cells and the running requests' own,
 * including the cells this step writes, padded as llama.cpp pads n_kv without flash attention; at
 * most the cache's cells (llama-server's -c is its slots' contexts together, so its idle slots never
 * hold more; a simulated server with more slots than its KV holds is capped the same way). */
static double slot_window(const sim_engine *s) {
    double w = s->idle_window;
    for (int32_t k = 0; k < s->n_run; k++) {
        const sim_req *r = &s->reqs[s->run[k]];
        w += (double)r->computed + r->sched;
    }
    return fmin(ceil(w / 32) * 32, (double)s->total_blocks * s->p.block_size);
}

/* Sets up the slots: max_num_seqs of them, slots_warm idle ones keeping slots_warm_tokens each
 * (used before any other, in order), the rest never used. */
static int slots_init(sim_engine *s) {
    int32_t n = s->p.max_num_seqs;
    s->n_slots = n;
    s->slot_tokens = calloc((size_t)n, sizeof *s->slot_tokens);
    s->slot_last = calloc((size_t)n, sizeof *s->slot_last);
    s->slot_busy = calloc((size_t)n, 1);
    if (!s->slot_tokens || !s->slot_last || !s->slot_busy) return -1;
    int32_t warm = s->p.slots_warm < n ? s->p.slots_warm : n;
    for (int32_t k = 0; k < n; k++) {
        bool used = k < warm && s->p.slots_warm_tokens > 0;
        s->slot_tokens[k] = used ? s->p.slots_warm_tokens : 0;
        s->slot_last[k] = used ? (int64_t)k - n : (int64_t)k - 2 * (int64_t)n;
        s->idle_window += (double)s->slot_tokens[k];
    }
    return 0;
}

/* --- engine ops --- */

static int sim_submit(engine *e, const engine_request *q, int64_t now_ns) {
    sim_engine *s = (sim_engine *)e;
    if (q->prompt_tokens < 1 || q->max_tokens < 1) return -1;
    int64_t need = (int64_t)q->prompt_tokens + q->max_tokens;
    if (need > s->max_model_len || blocks_for(s, need) > s->total_blocks) return -1;
    if (map_get(s, q->id) >= 0 || wq_reserve(s) < 0) return -1;
    int32_t i = pool_alloc(s);
    if (i < 0) return -1;
    if (map_put(s, q->id, i) < 0) { pool_release(s, i); return -1; }
    sim_req *r = &s->reqs[i];
    sim_pc_req keep = r->pc;   /* the prefix-cache arrays are reused from request to request */
    memset(r, 0, sizeof *r);
    r->pc = keep;
    if (s->pc && sim_pc_prepare(&r->pc, q, s->p.block_size) < 0) { map_del(s, q->id); pool_release(s, i); return -1; }
    s->blocked = false;
    r->id = q->id;
    r->ready = q->kv_ready_tokens > 0 && q->kv_ready_tokens < q->prompt_tokens ? q->kv_ready_tokens : 0;
    r->arrival_ns = now_ns;
    r->cached = -1;
    r->slot = -1;
    r->prompt = q->prompt_tokens;
    r->max_tokens = q->max_tokens;
    r->stall_after = q->stall_ns > 0 ? q->stall_after : 0;
    r->stall_ns = q->stall_ns;
    r->priority = s->p.priority_scheduling ? q->priority : 0;
    r->seq = s->next_seq++;
    r->state = RQ_WAITING;
    wq_push(s, i);
    s->n_waiting++;
    return 0;
}

static void remove_running_at(sim_engine *s, int32_t k) {
    memmove(&s->run[k], &s->run[k + 1], sizeof(int32_t) * (size_t)(s->n_run - k - 1));
    s->n_run--;
}

static void sim_cancel(engine *e, uint64_t id, int64_t now_ns) {
    sim_engine *s = (sim_engine *)e;
    int32_t i = map_get(s, id);
    if (i < 0) return;
    sim_req *r = &s->reqs[i];
    map_del(s, id);
    s->blocked = false;
    if (r->state == RQ_WAITING) {
        /* its index stays in the heap until it reaches the top */
        r->state = RQ_ZOMBIE;
        free_blocks(s, r);
        s->n_waiting--;
        return;
    }
    for (int32_t k = 0; k < s->n_run; k++)
        if (s->run[k] == i) { remove_running_at(s, k); break; }
    if (r->stalled_until_ns > 0) s->n_stalled--;
    slot_release(s, r);
    free_blocks(s, r);
    pool_release(s, i);
}

/* Earliest time a step could start, given the engine is free from clock_ns. */
static int64_t next_start_ns(sim_engine *s) {
    int64_t t = ENGINE_NEVER;
    if (s->blocked) return t;
    if (s->n_run > s->n_stalled) return s->clock_ns;
    int32_t w = wq_front(s);
    if (w >= 0) t = s->reqs[w].arrival_ns > s->clock_ns ? s->reqs[w].arrival_ns : s->clock_ns;
    if (s->n_stalled)
        for (int32_t k = 0; k < s->n_run; k++) {
            int64_t u = s->reqs[s->run[k]].stalled_until_ns;
            if (u > 0 && u < t) t = u > s->clock_ns ? u : s->clock_ns;
        }
    return t;
}

static int64_t sim_next_event_ns(engine *e) {
    sim_engine *s = (sim_engine *)e;
    return s->in_flight ? s->step_end_ns : next_start_ns(s);
}

static void emit_simple(engine_emit_fn emit, void *ctx, uint64_t id, int64_t t, int flags) {
    engine_event ev = {.id = id, .t_ns = t, .n_tokens = 0, .flags = flags, .finish_reason = NULL};
    emit(ctx, &ev);
}

/* Preempts the last running request (recompute): KV dropped, back to the head of the queue. */
static void preempt_last(sim_engine *s, int64_t t, engine_emit_fn emit, void *ctx) {
    int32_t i = s->run[--s->n_run];
    sim_req *r = &s->reqs[i];
    free_blocks(s, r);
    r->computed = 0;
    r->sched = 0;
    if (r->stalled_until_ns > 0) { r->stalled_until_ns = 0; s->n_stalled--; }
    r->state = RQ_WAITING;
    wq_push(s, i);   /* space: the heap holds every live request, reserved at submit */
    s->n_waiting++;
    s->st.preemptions_total++;
    emit_simple(emit, ctx, r->id, t, ENGINE_EV_PREEMPTED);
}

/* Adds a request's scheduled chunk to the step's work: a decode (one known token, or 1 + drafts
 * with MTP) or a prefill chunk of n tokens. */
static void account(sim_engine *s, const sim_req *r, int32_t n, cost_batch *b) {
    int64_t known = (int64_t)r->prompt + r->generated;
    if (r->computed + n == known) b->seqs++;
    if (n == 1 && r->computed >= r->prompt) {
        b->tokens += s->q_per_seq;
        b->decode_seqs++;
        b->decode_keys += r->computed + 1;
        s->info.last_step_decode_tokens++;
    } else {
        b->tokens += n;
        b->prefill_seqs++;
        b->prefill_pairs += (double)n * r->computed + (double)n * (n + 1) / 2;
        b->prefill_keys_read += r->computed;
        s->info.last_step_prefill_tokens += n;
    }
}

/* KV tokens a scheduled chunk needs: a decode step writes the verified token and the drafts. */
static int32_t kv_extra(const sim_engine *s, const sim_req *r, int32_t n) {
    return n == 1 && r->computed >= r->prompt ? s->q_per_seq : n;
}

/* Gives request r n more tokens of KV, preempting from the tail of the running list when blocks
 * run out. Returns 0, or -1 when r itself had to be preempted. */
static int grow_kv(sim_engine *s, int32_t idx, int32_t n, int64_t t, engine_emit_fn emit, void *ctx) {
    sim_req *r = &s->reqs[idx];
    int32_t need = blocks_for(s, (int64_t)r->computed + kv_extra(s, r, n)) - r->blocks;
    while (need > s->free_blocks) {
        int32_t last = s->run[s->n_run - 1];
        preempt_last(s, t, emit, ctx);
        if (last == idx) return -1;
    }
    r = &s->reqs[idx];   /* the callback may have submitted (and moved the pool) */
    if (need > 0) {
        if (s->pc) sim_pc_make_room(s->pc, s->free_blocks, need);
        take_blocks(s, r, need);
    }
    return 0;
}

/* fcfs: the running list is in admission order (the newest is preempted first); priority: sorted
 * by (priority, seq), so the lowest priority is at the tail, preempted first, scheduled last. */
static void run_insert(sim_engine *s, int32_t i) {
    int32_t k = s->n_run;
    if (s->p.priority_scheduling)
        while (k > 0 && wq_before(s, i, s->run[k - 1])) k--;
    memmove(&s->run[k + 1], &s->run[k], sizeof(int32_t) * (size_t)(s->n_run - k));
    s->run[k] = i;
    s->n_run++;
}

/* Places what a request brings along before its step: KV that arrived computed (PD) or blocks
 * found in the prefix cache — its prompt's, and after a preemption its generated tokens' too (as
 * vLLM V1, which looks every known token up again; at least one token is left to compute).
 * Returns the tokens found in the cache. */
static int32_t place_known_kv(sim_engine *s, sim_req *r) {
    if (r->computed > 0) return 0;
    if (r->ready > 0) {
        r->computed = r->ready;
        return 0;   /* its blocks are taken with the first chunk's (blocks_for counts computed) */
    }
    int64_t known = (int64_t)r->prompt + r->generated;
    if (!s->pc || known < 2) return 0;
    int32_t was_free = 0;
    int32_t hit = sim_pc_match(s->pc, &r->pc, (int32_t)((known - 1) / s->p.block_size), &was_free);
    s->info.prefix_query_tokens += known;
    if (hit <= 0) return 0;
    s->info.prefix_hit_tokens += (int64_t)hit * s->p.block_size;
    r->computed = hit * s->p.block_size;
    r->blocks = hit;
    s->free_blocks -= was_free;
    return r->computed;
}

/* Admits waiting requests into the step (prefill or a chunk of it). whole: prompts must fit
 * entirely (chunked prefill off). Returns tokens scheduled. */
static int64_t admit(sim_engine *s, int64_t t, int64_t budget, bool whole, cost_batch *b, engine_emit_fn emit, void *ctx) {
    int64_t used = 0;
    double reserve = s->prof.admit_reserve;
    while (budget > 0 && s->n_run < s->p.max_num_seqs) {
        int32_t i = wq_front(s);
        if (i < 0) break;
        sim_req *r = &s->reqs[i];
        if (r->arrival_ns > t) break;  /* submitted after this step began (serve lags the clock) */
        if (r->arrival_ns > s->seen_ns) break;  /* not yet received by the scheduler */
        int64_t q0 = s->info.prefix_query_tokens, h0 = s->info.prefix_hit_tokens;
        int32_t hit_tokens = place_known_kv(s, r);
        int64_t pending = (int64_t)r->prompt + r->generated - r->computed;
        int32_t n = (int32_t)(pending < budget ? pending : budget);
        if (whole && pending > budget) {
            /* a prompt longer than the token budget still runs, alone, rather than never */
            n = b->tokens > 0 ? -1 : (int32_t)pending;
        }
        int32_t need = n > 0 ? blocks_for(s, (int64_t)r->computed + kv_extra(s, r, n)) - r->blocks : 0;
        int32_t resv = reserve > 0 ? blocks_for(s, (int64_t)r->prompt + (int64_t)ceil(reserve * r->max_tokens)) : 0;
        int32_t resv_more = resv > r->blocks + need ? resv - r->blocks - need : 0;
        if (n < 0 || need + resv_more > s->free_blocks - s->resv_out) {
            /* it waits as it was: hits given back, counted again when it is admitted */
            if (r->blocks) free_blocks(s, r);
            r->computed = 0;
            s->info.prefix_query_tokens = q0;
            s->info.prefix_hit_tokens = h0;
            break;
        }
        if (s->pc) sim_pc_make_room(s->pc, s->free_blocks, need);
        take_blocks(s, r, need);
        r->resv_blocks = resv;
        s->resv_out += resv_more;
        wq_pop(s);
        s->n_waiting--;
        r->state = RQ_RUNNING;
        slot_take(s, r);
        run_insert(s, i);
        account(s, r, n, b);
        r->sched = n;
        r->decoding = n == 1 && r->computed >= r->prompt;
        if (r->cached < 0) r->cached = hit_tokens;
        if (!r->counted_prompt) { s->st.prompt_tokens_total += r->prompt; r->counted_prompt = 1; }
        emit_simple(emit, ctx, r->id, t, ENGINE_EV_SCHEDULED);
        budget -= r->decoding ? s->q_per_seq : n;
        used += n;
    }
    return used;
}

/* Schedules the running requests' next chunks: prefill chunks only (prefill_only), or decodes and
 * chunks alike; stops at a preemption that emptied the rest of the list. */
static void schedule_running(sim_engine *s, int64_t t, int64_t *budget, bool prefill_only, cost_batch *b,
                             engine_emit_fn emit, void *ctx) {
    for (int32_t k = 0; k < s->n_run; k++) {
        int32_t i = s->run[k];
        sim_req *r = &s->reqs[i];
        r->sched = 0;
        r->decoding = 0;
        if (r->stalled_until_ns > t) continue;
        if (r->stalled_until_ns > 0) { r->stalled_until_ns = 0; s->n_stalled--; }
        if (*budget <= 0) continue;
        int64_t pending = (int64_t)r->prompt + r->generated - r->computed;
        bool dec = pending == 1 && r->computed >= r->prompt;
        if (prefill_only && dec) continue;
        int32_t n = (int32_t)(pending < *budget ? pending : *budget);
        if (!s->p.chunked_prefill && n < pending) continue; /* unreachable in practice: prompts go whole */
        if (grow_kv(s, i, n, t, emit, ctx) < 0) break;   /* r was the last one: nothing after it */
        r = &s->reqs[i];
        account(s, r, n, b);
        r->sched = n;
        r->decoding = dec;
        *budget -= dec ? s->q_per_seq : n;
    }
}

/* The scheduler's look at new requests before the step at t: every step, or (recv_interval_steps
 * > 1) after a prefill step, when nothing runs, or once that many decode steps have passed. */
static void look_for_requests(sim_engine *s, int64_t t) {
    if (s->p.recv_interval_steps <= 1 || s->last_had_prefill || s->n_run <= s->n_stalled || s->decodes_unseen >= s->p.recv_interval_steps) {
        s->seen_ns = t;
        s->decodes_unseen = 0;
    }
}

/* TensorRT-LLM's batch waiting (PyExecutor._waiting_requests, TP only): in a step with sequences
 * decoding and prompts ready to start, the prompts are held back unless this step would carry
 * batch_wait_tokens_ratio x max_num_batched_tokens tokens with them (the decodes' and the prompts'
 * within the budget) or batch_wait_iters steps have held them; letting them in resets the count. */
static bool batch_wait_holds(sim_engine *s, int64_t t, int64_t budget, const cost_batch *b) {
    if ((s->p.batch_wait_iters <= 0 && s->p.batch_wait_tokens_ratio <= 0) || s->p.dp > 1 || b->decode_seqs <= 0) return false;
    int32_t w = wq_front(s);
    if (w < 0 || s->reqs[w].arrival_ns > t || s->reqs[w].arrival_ns > s->seen_ns) return false;
    /* the prompt tokens the scheduler would take: the waiting prompts' pending tokens up to the budget
     * (the heap's order does not matter to a capped sum) */
    int64_t ctx = 0;
    for (size_t k = 0; k < s->wq_len && ctx < budget; k++) {
        const sim_req *r = &s->reqs[s->wq[k]];
        if (r->state != RQ_WAITING || r->arrival_ns > t || r->arrival_ns > s->seen_ns) continue;
        ctx += (int64_t)r->prompt + r->generated - r->computed;
    }
    if (ctx > budget) ctx = budget;
    if (s->batch_waits >= s->p.batch_wait_iters || (double)(ctx + b->tokens) >= s->p.batch_wait_tokens_ratio * s->p.max_num_batched_tokens) {
        s->batch_waits = 0;
        return false;
    }
    s->batch_waits++;
    return true;
}

/* The batch as memo key: its fields as words (not its bytes, whose padding C leaves unspecified). */
static void memo_key(const cost_batch *b, uint64_t k[STEP_MEMO_WORDS]) {
    const double d[4] = {b->decode_keys, b->prefill_pairs, b->prefill_keys_read, b->window_keys};
    k[0] = (uint64_t)b->tokens;
    k[1] = (uint64_t)b->seqs;
    k[2] = (uint64_t)b->decode_seqs;
    k[3] = (uint64_t)b->prefill_seqs;
    k[4] = (uint64_t)(uint32_t)b->q_per_seq;
    memcpy(&k[5], d, sizeof d);
}

/* The step time of batch b, from the run's memo when it was priced before. */
static double step_seconds(sim_engine *s, const cost_batch *b) {
    step_memo *set = NULL;
    uint64_t k[STEP_MEMO_WORDS];
    if (s->memo) {
        memo_key(b, k);
        uint64_t h = 0;
        /* a multiply carries a difference only upward, and doubles differ in their top bits: a
         * rotation folds them down each word, MurmurHash3's 64-bit finalizer at the end */
        for (int i = 0; i < STEP_MEMO_WORDS; i++) {
            h = (h ^ k[i]) * 0x9E3779B97F4A7C15ull;
            h = h << 31 | h >> 33;
        }
        h ^= h >> 33;
        h *= 0xff51afd7ed558ccdull;
        h ^= h >> 33;
        h *= 0xc4ceb9fe1a85ec53ull;
        h ^= h >> 33;
        set = &s->memo[(h % (STEP_MEMO_N / STEP_MEMO_WAYS)) * STEP_MEMO_WAYS];
        for (int w = 0; w < STEP_MEMO_WAYS && set[w].used; w++) {
            if (memcmp(set[w].key, k, sizeof k) != 0) continue;
            step_memo hit = set[w];   /* to the front: the set keeps its most recent first */
            memmove(set + 1, set, (size_t)w * sizeof *set);
            set[0] = hit;
            return hit.t_s;
        }
    }
    cost_step cs;
    cost_step_time(&s->cost, b, &cs);
    s->info.steps_priced++;
    if (set) {
        /* the least recently used way goes */
        memmove(set + 1, set, (STEP_MEMO_WAYS - 1) * sizeof *set);
        memcpy(set[0].key, k, sizeof k);
        set[0].t_s = cs.t;
        set[0].used = true;
    }
    return cs.t;
}

/* Forms the step starting at t. Returns false when nothing could be scheduled. */
static bool form_step(sim_engine *s, int64_t t, engine_emit_fn emit, void *ctx) {
    cost_batch b;
    memset(&b, 0, sizeof b);
    b.q_per_seq = s->q_per_seq;
    s->info.last_step_decode_tokens = s->info.last_step_prefill_tokens = 0;
    int64_t budget = s->p.max_num_batched_tokens;
    int64_t preempted_before = s->st.preemptions_total;
    look_for_requests(s, t);
    if (s->prefill_first) {
        /* vLLM V0 / SGLang: while prompts wait (or one is mid-prefill), a step is all prefill */
        schedule_running(s, t, &budget, true, &b, emit, ctx);
        if (s->st.preemptions_total == preempted_before && s->n_run < s->p.max_num_seqs) {
            int32_t w = wq_front(s);
            if (w >= 0 && s->reqs[w].arrival_ns <= s->seen_ns) admit(s, t, budget, !s->p.chunked_prefill, &b, emit, ctx);
        }
        if (b.tokens == 0) {
            budget = s->p.max_num_batched_tokens;
            memset(&b, 0, sizeof b);
            b.q_per_seq = s->q_per_seq;
            s->info.last_step_decode_tokens = s->info.last_step_prefill_tokens = 0;
            schedule_running(s, t, &budget, false, &b, emit, ctx);
        }
    } else {
        schedule_running(s, t, &budget, false, &b, emit, ctx);
        /* vLLM admits nothing new in a step that had to preempt */
        if (s->st.preemptions_total == preempted_before && !batch_wait_holds(s, t, budget, &b)) admit(s, t, budget, false, &b, emit, ctx);
    }
    if (b.tokens == 0) return false;
    if (s->p.rank_sample > 1) {
        double k = s->p.rank_sample;
        b.tokens *= s->p.rank_sample;
        b.seqs *= s->p.rank_sample;
        b.decode_seqs *= s->p.rank_sample;
        b.prefill_seqs *= s->p.rank_sample;
        b.decode_keys *= k;
        b.prefill_pairs *= k;
        b.prefill_keys_read *= k;
    }
    if (s->slot_tokens) b.window_keys = s->info.window_tokens = slot_window(s);
    int64_t dt = (int64_t)llround(step_seconds(s, &b) * 1e9);
    if (dt < 1) dt = 1;
    s->info.window_token_s += b.window_keys * (dt / 1e9);
    s->in_flight = true;
    s->step_start_ns = t;
    s->step_end_ns = t + dt;
    s->st.last_step_ns = dt;
    s->st.last_step_tokens = b.tokens;
    s->info.prefill_tokens_total += s->info.last_step_prefill_tokens;
    s->last_had_prefill = s->info.last_step_prefill_tokens > 0;
    if (!s->last_had_prefill) s->decodes_unseen++;
    s->info.busy_s += dt / 1e9;
    s->st.steps_total++;
    return true;
}

/* Completes the step in flight: samples tokens, emits them at the step's end, retires finished
 * requests (keeping the running list in admission order). */
static void finish_step(sim_engine *s, engine_emit_fn emit, void *ctx) {
    int64_t t = s->step_end_ns;
    int32_t kept = 0;
    for (int32_t k = 0; k < s->n_run; k++) {
        int32_t i = s->run[k];
        sim_req *r = &s->reqs[i];
        bool done = false;
        if (r->sched > 0) {
            int32_t n_tok = 1;
            if (r->decoding && s->q_per_seq > 1) {
                /* MTP: the verified token plus the accepted drafts, averaging the acceptance length */
                double before = r->mtp_acc;
                r->mtp_acc += s->cost.mtp_len;
                n_tok = (int32_t)(floor(r->mtp_acc) - floor(before));
                if (n_tok < 1) n_tok = 1;
                if (n_tok > r->max_tokens - r->generated) n_tok = r->max_tokens - r->generated;
            }
            r->computed += r->sched + n_tok - 1;
            r->sched = 0;
            r->decoding = 0;
            if (s->pc) sim_pc_commit(s->pc, &r->pc, r->computed / s->p.block_size);
            if (r->computed == r->prompt + r->generated + n_tok - 1) {
                r->generated += n_tok;
                s->st.generation_tokens_total += n_tok;
                int flags = ENGINE_EV_TOKENS;
                if (r->generated == n_tok) flags |= ENGINE_EV_FIRST;
                if (r->generated >= r->max_tokens) { flags |= ENGINE_EV_FINISHED; done = true; }
                if ((flags & ENGINE_EV_FIRST) && s->pc) flags |= ENGINE_EV_CACHED;
                engine_event ev = {.id = r->id, .t_ns = t, .n_tokens = n_tok, .flags = flags,
                                   .finish_reason = done ? finish_length : NULL,
                                   .cached_tokens = r->cached > 0 ? r->cached : 0};
                if (!done && r->stall_after > 0 && r->generated >= r->stall_after) {
                    r->stalled_until_ns = t + r->stall_ns;
                    r->stall_after = 0;
                    s->n_stalled++;
                }
                if (done) {
                    map_del(s, r->id);
                    slot_release(s, r);
                    free_blocks(s, r);
                    pool_release(s, i);
                }
                emit(ctx, &ev);
            }
        }
        if (!done) s->run[kept++] = i;
    }
    s->n_run = kept;
    s->in_flight = false;
    s->blocked = false;
    s->clock_ns = t;
}

static void sim_advance(engine *e, int64_t now_ns, engine_emit_fn emit, void *ctx) {
    sim_engine *s = (sim_engine *)e;
    for (;;) {
        if (s->in_flight) {
            if (s->step_end_ns > now_ns) return;
            finish_step(s, emit, ctx);
        }
        int64_t t = next_start_ns(s);
        if (t > now_ns) return;
        if (!form_step(s, t, emit, ctx)) {
            /* nothing fits now: the running requests are stalled (wait for the first to wake)
             * or the queue head cannot get blocks (wait for a change from outside) */
            int64_t wake = ENGINE_NEVER;
            for (int32_t k = 0; k < s->n_run; k++) {
                int64_t u = s->reqs[s->run[k]].stalled_until_ns;
                if (u > t && u < wake) wake = u;
            }
            if (wake == ENGINE_NEVER) { s->blocked = true; return; }
            s->clock_ns = wake;
        }
    }
}

static void sim_stats(engine *e, engine_stats *out) {
    sim_engine *s = (sim_engine *)e;
    *out = s->st;
    out->running = s->n_run;
    out->waiting = s->n_waiting;
    out->kv_usage = s->total_blocks ? (double)(s->total_blocks - s->free_blocks) / s->total_blocks : 0;
}

static void sim_destroy(engine *e) {
    sim_engine *s = (sim_engine *)e;
    cost_free(&s->cost);
    for (int32_t i = 0; i < s->cap_reqs; i++) sim_pc_req_free(&s->reqs[i].pc);
    sim_pc_destroy(s->pc);
    free(s->reqs);
    free(s->map_keys);
    free(s->map_vals);
    free(s->wq);
    free(s->run);
    free(s->slot_tokens);
    free(s->slot_last);
    free(s->slot_busy);
    free(s->memo);
    free(s);
}

static const engine_ops sim_ops = {
    .name = "sim", .submit = sim_submit, .cancel = sim_cancel, .next_event_ns = sim_next_event_ns,
    .advance = sim_advance, .stats = sim_stats, .destroy = sim_destroy,
};

static engine *sim_create_one(const sim_params *p, char *err, size_t errlen) {
    if (p->n_gpus > 0 && p->n_gpus != p->tp) {
        snprintf(err, errlen, "the engine models one instance of --tp %d GPUs; --gpus %d would be %d replicas (use dsperf plan)",
                 p->tp, p->n_gpus, p->n_gpus / (p->tp ? p->tp : 1));
        return NULL;
    }
    sim_engine *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->base.ops = &sim_ops;
    s->p = *p;
    s->p.max_num_batched_tokens = sim_params_batch_tokens(p);
    if (p->rank_sample > 1) {
        s->p.max_num_seqs = (p->max_num_seqs + p->rank_sample - 1) / p->rank_sample;
        s->p.max_num_batched_tokens = (s->p.max_num_batched_tokens + p->rank_sample - 1) / p->rank_sample;
    }
    s->free_head = -1;
    if (sim_params_cost(p, &s->cost, err, errlen) < 0) { free(s); return NULL; }
    if (!p->price_every_step) s->memo = calloc(STEP_MEMO_N, sizeof *s->memo);   /* without it every step is priced afresh */
    s->total_blocks = s->free_blocks = sim_params_kv_blocks(p, &s->cost) / (p->rank_sample > 1 ? p->rank_sample : 1);
    if (s->total_blocks <= 0) {
        snprintf(err, errlen, "%s does not fit: %.1f GiB of weights per GPU, %.1f GiB usable on %s "
                 "(raise --tp, use --weight-dtype fp8, or a larger GPU)", s->cost.arch.name,
                 s->cost.weight_bytes_per_gpu / 1073741824.0,
                 (s->cost.gpu.mem_bytes * p->gpu_memory_utilization - p->reserved_bytes) / 1073741824.0, s->cost.gpu.name);
        sim_destroy(&s->base);
        return NULL;
    }
    s->max_model_len = p->max_model_len > 0 ? p->max_model_len : s->cost.arch.max_position;
    s->prof = s->cost.s.prof;
    s->prefill_first = !p->chunked_prefill || s->prof.prefill_mode == PREFILL_SEPARATE;
    s->q_per_seq = 1 + (p->mtp_draft > 0 ? p->mtp_draft : 0);
    if (p->prefix_caching && !(s->pc = sim_pc_create(s->total_blocks))) {
        snprintf(err, errlen, "out of memory");
        sim_destroy(&s->base);
        return NULL;
    }
    s->run = malloc(sizeof(int32_t) * (size_t)p->max_num_seqs);
    if (!s->run || (s->prof.kv_window && slots_init(s) < 0)) { snprintf(err, errlen, "out of memory"); sim_destroy(&s->base); return NULL; }
    s->st.last_step_ns = -1;
    s->st.last_step_tokens = -1;
    s->info.total_blocks = s->total_blocks;
    s->info.weight_bytes_per_gpu = s->cost.weight_bytes_per_gpu;
    s->info.kv_bytes_per_token = s->cost.kv_bytes_per_token;
    return &s->base;
}

engine *engine_sim_create(const sim_params *p, char *err, size_t errlen) {
    if (p->prefill_instances > 0) return engine_sim_pd_create(p, sim_create_one, err, errlen);
    return sim_create_one(p, err, errlen);
}

static int one_info(engine *e, sim_info *info);

int sim_get_info(engine *e, sim_info *info) {
    if (e && e->ops != &sim_ops) return sim_pd_get_info(e, one_info, info);
    return one_info(e, info);
}

static int one_info(engine *e, sim_info *info) {
    if (!e || e->ops != &sim_ops) return -1;
    sim_engine *s = (sim_engine *)e;
    *info = s->info;
    info->used_blocks = s->total_blocks - s->free_blocks;
    return 0;
}
