/* fixed — the fixed-timing engine (see fixed.h). Requests in service sit in one min-heap keyed
 * by their next event time (tie broken by insertion order, so requests due at the same instant —
 * all of them with itl 0 — are served round robin); waiting requests sit in a FIFO list; a small
 * hash table maps driver ids to requests so cancel is O(1). */
#include "engine/fixed.h"
#include "common/units.h"
#include "common/rng.h"
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

enum { PH_WAITING, PH_SCHED, PH_DECODE };

typedef struct freq {
    engine_request r;
    int phase;
    int64_t due_ns;            /* next event time while in the heap */
    uint64_t seq;              /* heap tie-break */
    int heap_idx;              /* -1 when not in the heap */
    int64_t first_ns;          /* time of chunk 0 (without jitter of later chunks) */
    int32_t chunk;             /* index of the next chunk to emit */
    int32_t emitted;           /* tokens emitted so far */
    struct freq *prev, *next;  /* waiting list links */
} freq;

typedef struct {
    engine base;
    fixed_params p;
    rng rng;
    freq **heap;
    int heap_n, heap_cap;
    freq *wait_head, *wait_tail;
    int64_t n_waiting, n_running;
    uint64_t seq;
    /* open-addressing table id -> freq (linear probing, backward-shift deletion) */
    freq **tab;
    size_t tab_cap, tab_n;
    int64_t prompt_total, gen_total;
} fixed_engine;

void fixed_default_params(fixed_params *p) {
    memset(p, 0, sizeof *p);
    p->ttft_ns = 50 * 1000000LL;
    p->itl_ns = 10 * 1000000LL;
    p->prefill_per_token_ns = 0;
    p->capacity = 0;
    p->tokens_per_chunk = 1;
    p->jitter = 0;
    p->seed = 1;
    p->max_events_per_advance = 8192;
}

const char fixed_params_help[] =
    "  --ttft D               time to first token after entering service (default 50ms)\n"
    "  --itl D                gap between emissions; 0 = back to back (default 10ms)\n"
    "  --prefill-per-token D  added to TTFT per prompt token (default 0)\n"
    "  --capacity N           requests in service at once, later ones wait FIFO; 0 = unlimited (default 0)\n"
    "  --tokens-per-chunk K   tokens per emission, like MTP/speculative decoding (default 1)\n"
    "  --jitter F             scale each TTFT and gap by 1 +- F, uniform, seeded by --seed (default 0 = off)\n"
    "  --jitter-per-stream F  load-dependent jitter: the amplitude is --jitter + F x requests in service\n"
    "                         when the gap is drawn (at most 0.95); ITL's coefficient of variation is then\n"
    "                         amplitude x 0.816 (default 0 = off)\n"
    "  --max-events-per-advance N  emissions per loop turn before the loop reads and accepts again,\n"
    "                         at least 4 per request in service; bounds unfairness at --itl 0 (default 8192)\n";

int fixed_params_set(fixed_params *p, const char *key, const char *value, char *err, size_t errlen) {
    long long n;
    int64_t ns;
    double d;
    if (!strcmp(key, "ttft") || !strcmp(key, "itl") || !strcmp(key, "prefill-per-token")) {
        if (!value || units_parse_duration_ns(value, &ns) < 0) {
            snprintf(err, errlen, "--%s wants a duration like 50ms, got '%s'", key, value ? value : "");
            return -1;
        }
        if (key[0] == 't') p->ttft_ns = ns;
        else if (key[0] == 'i') p->itl_ns = ns;
        else p->prefill_per_token_ns = ns;
        return 0;
    }
    if (!strcmp(key, "max-events-per-advance")) {
        if (!value || units_parse_int(value, 1, 100000000LL, &n) < 0) {
            snprintf(err, errlen, "--max-events-per-advance wants an integer >= 1, got '%s'", value ? value : "");
            return -1;
        }
        p->max_events_per_advance = (int32_t)n;
        return 0;
    }
    if (!strcmp(key, "capacity") || !strcmp(key, "tokens-per-chunk")) {
        long long lo = key[0] == 'c' ? 0 : 1;
        if (!value || units_parse_int(value, lo, 1000000000LL, &n) < 0) {
            snprintf(err, errlen, "--%s wants an integer >= %lld, got '%s'", key, lo, value ? value : "");
            return -1;
        }
        if (key[0] == 'c') p->capacity = (int32_t)n;
        else p->tokens_per_chunk = (int32_t)n;
        return 0;
    }
    if (!strcmp(key, "jitter")) {
        if (!value || units_parse_double(value, &d) < 0 || d < 0 || d >= 1) {
            snprintf(err, errlen, "--jitter wants a fraction in [0, 1), got '%s'", value ? value : "");
            return -1;
        }
        p->jitter = d;
        return 0;
    }
    if (!strcmp(key, "jitter-per-stream")) {
        if (!value || units_parse_double(value, &d) < 0 || d < 0 || d >= 1) {
            snprintf(err, errlen, "--jitter-per-stream wants a fraction per request in service in [0, 1), got '%s'",
                     value ? value : "");
            return -1;
        }
        p->jitter_per_stream = d;
        return 0;
    }
    return 1;
}

const char *const *fixed_params_keys(void) {
    static const char *const keys[] = { "ttft", "itl", "prefill-per-token", "capacity", "tokens-per-chunk", "jitter",
                                        "jitter-per-stream", "max-events-per-advance", NULL };
    return keys;
}

double fixed_jitter_at(const fixed_params *p, int64_t n) {
    double a = p->jitter + p->jitter_per_stream * (double)(n > 0 ? n : 0);
    return a > FIXED_JITTER_MAX ? FIXED_JITTER_MAX : a;
}

/* ---- id table ---- */

static size_t tab_slot(uint64_t id, size_t cap) {
    id ^= id >> 33; id *= 0xff51afd7ed558ccdULL; id ^= id >> 33;
    return (size_t)id & (cap - 1);
}

static int tab_grow(fixed_engine *f) {
    size_t ncap = f->tab_cap ? f->tab_cap * 2 : 1024;
    freq **nt = calloc(ncap, sizeof *nt);
    if (!nt) return -1;
    for (size_t i = 0; i < f->tab_cap; i++) {
        freq *q = f->tab[i];
        if (!q) continue;
        size_t s = tab_slot(q->r.id, ncap);
        while (nt[s]) s = (s + 1) & (ncap - 1);
        nt[s] = q;
    }
    free(f->tab);
    f->tab = nt;
    f->tab_cap = ncap;
    return 0;
}

static freq *tab_find(fixed_engine *f, uint64_t id, size_t *slot) {
    if (!f->tab_cap) return NULL;
    for (size_t s = tab_slot(id, f->tab_cap);; s = (s + 1) & (f->tab_cap - 1)) {
        if (!f->tab[s]) return NULL;
        if (f->tab[s]->r.id == id) { if (slot) *slot = s; return f->tab[s]; }
    }
}

static int tab_put(fixed_engine *f, freq *q) {
    if ((f->tab_n + 1) * 2 > f->tab_cap && tab_grow(f) < 0) return -1;
    size_t s = tab_slot(q->r.id, f->tab_cap);
    while (f->tab[s]) s = (s + 1) & (f->tab_cap - 1);
    f->tab[s] = q;
    f->tab_n++;
    return 0;
}

static void tab_del(fixed_engine *f, uint64_t id) {
    size_t s;
    if (!tab_find(f, id, &s)) return;
    size_t mask = f->tab_cap - 1, hole = s;
    f->tab[hole] = NULL;
    /* backward shift: move later entries of the probe run into the hole when allowed */
    for (size_t j = (hole + 1) & mask; f->tab[j]; j = (j + 1) & mask) {
        size_t home = tab_slot(f->tab[j]->r.id, f->tab_cap);
        if (((j - home) & mask) >= ((j - hole) & mask)) {
            f->tab[hole] = f->tab[j];
            f->tab[j] = NULL;
            hole = j;
        }
    }
    f->tab_n--;
}

/* ---- heap ---- */

static int before(const freq *a, const freq *b) {
    return a->due_ns < b->due_ns || (a->due_ns == b->due_ns && a->seq < b->seq);
}

static void heap_set(fixed_engine *f, int i, freq *q) { f->heap[i] = q; q->heap_idx = i; }

static void sift_up(fixed_engine *f, int i) {
    freq *q = f->heap[i];
    while (i > 0) {
        int parent = (i - 1) / 2;
        if (!before(q, f->heap[parent])) break;
        heap_set(f, i, f->heap[parent]);
        i = parent;
    }
    heap_set(f, i, q);
}

static void sift_down(fixed_engine *f, int i) {
    freq *q = f->heap[i];
    for (;;) {
        int c = 2 * i + 1;
        if (c >= f->heap_n) break;
        if (c + 1 < f->heap_n && before(f->heap[c + 1], f->heap[c])) c++;
        if (!before(f->heap[c], q)) break;
        heap_set(f, i, f->heap[c]);
        i = c;
    }
    heap_set(f, i, q);
}

static int heap_push(fixed_engine *f, freq *q) {
    if (f->heap_n == f->heap_cap) {
        int ncap = f->heap_cap ? f->heap_cap * 2 : 1024;
        freq **nh = realloc(f->heap, sizeof *nh * (size_t)ncap);
        if (!nh) return -1;
        f->heap = nh;
        f->heap_cap = ncap;
    }
    q->seq = f->seq++;
    f->heap[f->heap_n] = q;
    q->heap_idx = f->heap_n++;
    sift_up(f, q->heap_idx);
    return 0;
}

static void heap_remove(fixed_engine *f, freq *q) {
    int i = q->heap_idx;
    if (i < 0) return;
    q->heap_idx = -1;
    f->heap_n--;
    if (i == f->heap_n) return;
    f->heap[i] = f->heap[f->heap_n];
    f->heap[i]->heap_idx = i;
    sift_down(f, i);
    sift_up(f, f->heap[i]->heap_idx);
}

/* ---- timing ---- */

/* x scaled by 1 +- the jitter amplitude at the current load, uniform; exact when jitter is off. */
static int64_t jittered(fixed_engine *f, int64_t x) {
    double a = fixed_jitter_at(&f->p, f->n_running);
    if (a <= 0 || x <= 0) return x;
    double v = (double)x * (1.0 + a * (2.0 * rng_uniform(&f->rng) - 1.0));
    return v < 0 ? 0 : (int64_t)v;
}

/* Deadline of chunk c: on the absolute grid first + c*itl (plus the stall offset once the
 * stall point is passed); jitter perturbs a deadline around its grid point, never before the
 * previous one. */
static int64_t chunk_due(fixed_engine *f, const freq *q, int32_t c, int64_t prev_due) {
    int64_t t = q->first_ns + (int64_t)c * f->p.itl_ns;
    if ((f->p.jitter > 0 || f->p.jitter_per_stream > 0) && c > 0 && f->p.itl_ns > 0)
        t += jittered(f, f->p.itl_ns) - f->p.itl_ns;
    if (q->r.stall_ns > 0 && (int64_t)c * f->p.tokens_per_chunk >= q->r.stall_after)
        t += q->r.stall_ns;
    return t < prev_due ? prev_due : t;
}

/* The request enters service at t: its SCHEDULED event is due at t. */
static void start_service(fixed_engine *f, freq *q, int64_t t) {
    q->phase = PH_SCHED;
    q->due_ns = t;
    f->n_running++;
    heap_push(f, q);
}

static int has_room(const fixed_engine *f) {
    return f->p.capacity <= 0 || f->n_running < f->p.capacity;
}

static void admit_waiting(fixed_engine *f, int64_t t) {
    while (f->wait_head && has_room(f)) {
        freq *q = f->wait_head;
        f->wait_head = q->next;
        if (f->wait_head) f->wait_head->prev = NULL; else f->wait_tail = NULL;
        q->prev = q->next = NULL;
        f->n_waiting--;
        start_service(f, q, t);
    }
}

/* ---- engine_ops ---- */

static int fx_submit(engine *e, const engine_request *r, int64_t now_ns) {
    fixed_engine *f = (fixed_engine *)e;
    if (r->max_tokens < 1 || r->prompt_tokens < 0 || tab_find(f, r->id, NULL)) return -1;
    freq *q = calloc(1, sizeof *q);
    if (!q) return -1;
    q->r = *r;
    q->heap_idx = -1;
    if (tab_put(f, q) < 0) { free(q); return -1; }
    if (has_room(f) && !f->wait_head) {
        start_service(f, q, now_ns);
    } else {
        q->phase = PH_WAITING;
        q->prev = f->wait_tail;
        if (f->wait_tail) f->wait_tail->next = q; else f->wait_head = q;
        f->wait_tail = q;
        f->n_waiting++;
    }
    return 0;
}

static void release(fixed_engine *f, freq *q) {
    tab_del(f, q->r.id);
    if (q->phase == PH_WAITING) {
        if (q->prev) q->prev->next = q->next; else f->wait_head = q->next;
        if (q->next) q->next->prev = q->prev; else f->wait_tail = q->prev;
        f->n_waiting--;
    } else {
        heap_remove(f, q);
        f->n_running--;
    }
}

static void fx_cancel(engine *e, uint64_t id, int64_t now_ns) {
    fixed_engine *f = (fixed_engine *)e;
    freq *q = tab_find(f, id, NULL);
    if (!q) return;
    int was_running = q->phase != PH_WAITING;
    release(f, q);
    free(q);
    if (was_running) admit_waiting(f, now_ns);
}

static int64_t fx_next_event_ns(engine *e) {
    fixed_engine *f = (fixed_engine *)e;
    return f->heap_n ? f->heap[0]->due_ns : ENGINE_NEVER;
}

/* Emits events due by now in time order. A request whose next chunk is also due (itl 0, or a
 * late caller) goes back into the heap behind others due at the same instant, and the number
 * of events per call is bounded, so with itl 0 the driver's loop gets to write between calls.
 * Each request's state is updated before its event is emitted, so the callback may cancel. */
static void fx_advance(engine *e, int64_t now_ns, engine_emit_fn emit, void *ctx) {
    fixed_engine *f = (fixed_engine *)e;
    /* at least 4 emissions per request in service, so with many streams each connection still
     * gets several chunks per write */
    int64_t budget = f->p.max_events_per_advance > 0 ? f->p.max_events_per_advance : 1;
    if (budget < 4 * f->n_running) budget = 4 * f->n_running;
    while (f->heap_n && f->heap[0]->due_ns <= now_ns && budget-- > 0) {
        freq *q = f->heap[0];
        heap_remove(f, q);
        engine_event ev = { .id = q->r.id, .t_ns = q->due_ns };
        if (q->phase == PH_SCHED) {
            ev.flags = ENGINE_EV_SCHEDULED;
            q->phase = PH_DECODE;
            q->first_ns = ev.t_ns + jittered(f, f->p.ttft_ns) +
                          (int64_t)q->r.prompt_tokens * f->p.prefill_per_token_ns;
            q->chunk = 0;
            q->due_ns = chunk_due(f, q, 0, ev.t_ns);
            heap_push(f, q);
            emit(ctx, &ev);
            continue;
        }
        int32_t left = q->r.max_tokens - q->emitted;
        int32_t n = left < f->p.tokens_per_chunk ? left : f->p.tokens_per_chunk;
        ev.n_tokens = n;
        ev.flags = ENGINE_EV_TOKENS | (q->chunk == 0 ? ENGINE_EV_FIRST : 0);
        if (q->chunk == 0) f->prompt_total += q->r.prompt_tokens;
        f->gen_total += n;
        q->emitted += n;
        q->chunk++;
        if (q->emitted >= q->r.max_tokens) {
            ev.flags |= ENGINE_EV_FINISHED;
            ev.finish_reason = "length";
            tab_del(f, q->r.id);
            f->n_running--;
            free(q);
            admit_waiting(f, ev.t_ns);
        } else {
            /* itl 0 has no grid: the next chunk is due when this one went out, so a request that
             * arrives during a flood is not queued behind every token already "due at first" */
            q->due_ns = f->p.itl_ns > 0 ? chunk_due(f, q, q->chunk, ev.t_ns) : now_ns;
            heap_push(f, q);
        }
        emit(ctx, &ev);
    }
}

static void fx_stats(engine *e, engine_stats *out) {
    fixed_engine *f = (fixed_engine *)e;
    memset(out, 0, sizeof *out);
    out->running = f->n_running;
    out->waiting = f->n_waiting;
    out->kv_usage = -1;
    out->preemptions_total = 0;          /* it never preempts */
    out->prompt_tokens_total = f->prompt_total;
    out->generation_tokens_total = f->gen_total;
    out->steps_total = -1;
    out->last_step_ns = -1;
    out->last_step_tokens = -1;
}

static void fx_destroy(engine *e) {
    fixed_engine *f = (fixed_engine *)e;
    for (size_t i = 0; i < f->tab_cap; i++) free(f->tab[i]);
    free(f->tab);
    free(f->heap);
    free(f);
}

static const engine_ops fixed_ops = {
    .name = "fixed",
    .submit = fx_submit,
    .cancel = fx_cancel,
    .next_event_ns = fx_next_event_ns,
    .advance = fx_advance,
    .stats = fx_stats,
    .destroy = fx_destroy,
};

engine *engine_fixed_create(const fixed_params *p, char *err, size_t errlen) {
    if (p->ttft_ns < 0 || p->itl_ns < 0 || p->prefill_per_token_ns < 0 || p->capacity < 0 ||
        p->tokens_per_chunk < 1 || p->jitter < 0 || p->jitter >= 1 || p->jitter_per_stream < 0 || p->jitter_per_stream >= 1) {
        snprintf(err, errlen, "fixed engine: durations must be >= 0, capacity >= 0, tokens-per-chunk >= 1, jitter and "
                 "jitter-per-stream in [0, 1)");
        return NULL;
    }
    fixed_engine *f = calloc(1, sizeof *f);
    if (!f) { snprintf(err, errlen, "out of memory"); return NULL; }
    f->base.ops = &fixed_ops;
    f->p = *p;
    rng_seed(&f->rng, p->seed);
    return &f->base;
}
