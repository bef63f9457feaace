/* sim_pd — prefill/decode disaggregation on the simulated engine: a pool of prefill instances
 * (each a sim engine that runs a request's prompt and samples its first token) and one decode
 * instance. When a prompt is done its KV moves over the network (alpha + bytes / NIC bandwidth)
 * and the request joins the decode instance with that KV already in place; the client sees the
 * first token when the transfer lands (TTFT includes it), then the decode instance's tokens.
 * Requests go to the prefill instance with the fewest in flight. Events of all instances are
 * emitted in time order: each step advances only the instance whose next event is the earliest. */
#include "engine/sim.h"
#include "engine/sim_pd.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t id;
    int32_t prompt, max_tokens, pre;   /* pre: its prefill instance; -1 once it left it */
    int32_t cached;                    /* prompt tokens the prefill instance's prefix cache served (-1 unknown) */
    int64_t ready_ns;                  /* KV transfer lands (in the pending heap) */
    int cancelled, used;
} pd_req;

typedef struct {
    engine base;
    engine **pre;
    int n_pre;
    int64_t *pre_load;                 /* requests in flight per prefill instance */
    engine *dec;
    double transfer_alpha_s, nic_bytes_per_s, kv_bytes_per_token;
    pd_req *r;                         /* open addressing by id */
    size_t cap, n;
    size_t *heap;                      /* pending transfers: slots in r, min ready_ns */
    size_t heap_n, heap_cap;
    int64_t firsts;
    sim_info info;
    engine_emit_fn emit;               /* during advance */
    void *ctx;
} pd_engine;

static size_t slot_of(const pd_engine *s, uint64_t id) {
    size_t j = (size_t)((id * 0x9E3779B97F4A7C15ull) >> 17) & (s->cap - 1);
    while (s->r[j].used && s->r[j].id != id) j = (j + 1) & (s->cap - 1);
    return j;
}

static int grow(pd_engine *s) {
    size_t ncap = s->cap ? s->cap * 2 : 1024, ocap = s->cap;
    pd_req *old = s->r;
    pd_req *n = calloc(ncap, sizeof *n);
    size_t *h = realloc(s->heap, sizeof *h * ncap);
    if (!n || !h) { free(n); if (h) s->heap = h; return -1; }
    s->heap = h;
    s->heap_cap = ncap;
    s->r = n;
    s->cap = ncap;
    size_t hn = 0;
    for (size_t i = 0; i < ocap; i++) {
        if (!old[i].used) continue;
        size_t j = slot_of(s, old[i].id);
        s->r[j] = old[i];
        if (old[i].ready_ns > 0) s->heap[hn++] = j;
    }
    free(old);
    /* slots moved: rebuild the heap */
    s->heap_n = 0;
    for (size_t k = 0; k < hn; k++) {
        size_t x = s->heap[k], i = s->heap_n++;
        while (i > 0 && s->r[s->heap[(i - 1) / 2]].ready_ns > s->r[x].ready_ns) { s->heap[i] = s->heap[(i - 1) / 2]; i = (i - 1) / 2; }
        s->heap[i] = x;
    }
    return 0;
}

/* Deletion with backward shift keeps probe runs intact (the heap holds slots: fix them up). */
static void del_slot(pd_engine *s, size_t j) {
    size_t mask = s->cap - 1;
    s->r[j].used = 0;
    for (size_t k = (j + 1) & mask; s->r[k].used; k = (k + 1) & mask) {
        size_t home = (size_t)((s->r[k].id * 0x9E3779B97F4A7C15ull) >> 17) & mask;
        if (((k - home) & mask) >= ((k - j) & mask)) {
            s->r[j] = s->r[k];
            s->r[k].used = 0;
            for (size_t h = 0; h < s->heap_n; h++) if (s->heap[h] == k) s->heap[h] = j;
            j = k;
        }
    }
}

static void heap_push(pd_engine *s, size_t x) {
    size_t i = s->heap_n++;
    while (i > 0 && s->r[s->heap[(i - 1) / 2]].ready_ns > s->r[x].ready_ns) { s->heap[i] = s->heap[(i - 1) / 2]; i = (i - 1) / 2; }
    s->heap[i] = x;
}

static size_t heap_pop(pd_engine *s) {
    size_t top = s->heap[0], last = s->heap[--s->heap_n], i = 0;
    for (;;) {
        size_t c = 2 * i + 1;
        if (c >= s->heap_n) break;
        if (c + 1 < s->heap_n && s->r[s->heap[c + 1]].ready_ns < s->r[s->heap[c]].ready_ns) c++;
        if (s->r[s->heap[c]].ready_ns >= s->r[last].ready_ns) break;
        s->heap[i] = s->heap[c];
        i = c;
    }
    if (s->heap_n) s->heap[i] = last;
    return top;
}

static int pd_submit(engine *e, const engine_request *q, int64_t now_ns) {
    pd_engine *s = (pd_engine *)e;
    if ((s->n + 1) * 2 > s->cap && grow(s) < 0) return -1;
    size_t j = slot_of(s, q->id);
    if (s->r[j].used) return -1;
    int best = 0;
    for (int i = 1; i < s->n_pre; i++) if (s->pre_load[i] < s->pre_load[best]) best = i;
    engine_request pq = *q;
    pq.max_tokens = 1;   /* the prefill instance samples the first token */
    if (engine_submit(s->pre[best], &pq, now_ns) < 0) return -1;
    s->r[j] = (pd_req){.id = q->id, .prompt = q->prompt_tokens, .max_tokens = q->max_tokens, .pre = best, .used = 1};
    s->n++;
    s->pre_load[best]++;
    return 0;
}

static void pd_cancel(engine *e, uint64_t id, int64_t now_ns) {
    pd_engine *s = (pd_engine *)e;
    if (!s->cap) return;
    size_t j = slot_of(s, id);
    if (!s->r[j].used) return;
    if (s->r[j].pre >= 0) { engine_cancel(s->pre[s->r[j].pre], id, now_ns); s->pre_load[s->r[j].pre]--; }
    else if (s->r[j].ready_ns > 0) { s->r[j].cancelled = 1; return; }   /* in transfer: dropped when it lands */
    else engine_cancel(s->dec, id, now_ns);
    del_slot(s, j);
    s->n--;
}

static int64_t pd_next(engine *e) {
    pd_engine *s = (pd_engine *)e;
    int64_t t = engine_next_event_ns(s->dec);
    for (int i = 0; i < s->n_pre; i++) {
        int64_t u = engine_next_event_ns(s->pre[i]);
        if (u < t) t = u;
    }
    if (s->heap_n && s->r[s->heap[0]].ready_ns < t) t = s->r[s->heap[0]].ready_ns;
    return t;
}

static void on_pre(void *vctx, const engine_event *ev) {
    pd_engine *s = vctx;
    size_t j = slot_of(s, ev->id);
    if (!s->r[j].used) return;
    if (ev->flags & ENGINE_EV_FINISHED) {
        pd_req *r = &s->r[j];
        r->cached = (ev->flags & ENGINE_EV_CACHED) ? ev->cached_tokens : -1;
        s->pre_load[r->pre]--;
        r->pre = -1;
        double bytes = r->prompt * s->kv_bytes_per_token;
        double dt = s->transfer_alpha_s + bytes / s->nic_bytes_per_s;
        r->ready_ns = ev->t_ns + (int64_t)llround(dt * 1e9);
        s->info.kv_transfers++;
        s->info.kv_transfer_s += dt;
        heap_push(s, j);
        return;
    }
    if (ev->flags & (ENGINE_EV_SCHEDULED | ENGINE_EV_PREEMPTED)) s->emit(s->ctx, ev);
}

static void on_dec(void *vctx, const engine_event *ev) {
    pd_engine *s = vctx;
    if (ev->flags & ENGINE_EV_SCHEDULED) return;   /* it was scheduled once, on the prefill side */
    engine_event x = *ev;
    x.flags &= ~(ENGINE_EV_FIRST | ENGINE_EV_CACHED);   /* the client's first token came with the transfer */
    if (x.flags & ENGINE_EV_FINISHED) {
        size_t j = slot_of(s, ev->id);
        if (s->r[j].used) { del_slot(s, j); s->n--; }
    }
    s->emit(s->ctx, &x);
}

/* The KV of request slot j has landed: the first token goes out, the rest decode. */
static void land(pd_engine *s, size_t j) {
    pd_req *r = &s->r[j];
    int64_t t = r->ready_ns;
    r->ready_ns = 0;
    if (r->cancelled) { del_slot(s, j); s->n--; return; }
    s->firsts++;
    int done = r->max_tokens <= 1;
    engine_event ev = {.id = r->id, .t_ns = t, .n_tokens = 1,
                       .flags = ENGINE_EV_TOKENS | ENGINE_EV_FIRST | (done ? ENGINE_EV_FINISHED : 0),
                       .finish_reason = done ? "length" : NULL};
    if (r->cached >= 0) { ev.flags |= ENGINE_EV_CACHED; ev.cached_tokens = r->cached; }
    if (!done) {
        engine_request q = {.id = r->id, .prompt_tokens = r->prompt + 1, .max_tokens = r->max_tokens - 1,
                            .ignore_eos = true, .kv_ready_tokens = r->prompt};
        if (engine_submit(s->dec, &q, t) < 0) {   /* cannot fit on the decode side: ends with its first token */
            ev.flags |= ENGINE_EV_FINISHED;
            ev.finish_reason = "length";
            done = 1;
        }
    }
    uint64_t id = r->id;
    if (done) { del_slot(s, j); s->n--; }
    ev.id = id;
    s->emit(s->ctx, &ev);
}

static void pd_advance(engine *e, int64_t now_ns, engine_emit_fn emit, void *ctx) {
    pd_engine *s = (pd_engine *)e;
    s->emit = emit;
    s->ctx = ctx;
    for (;;) {
        int64_t best = ENGINE_NEVER;
        int who = -3;   /* -2 transfer, -1 decode, i prefill instance */
        if (s->heap_n) { best = s->r[s->heap[0]].ready_ns; who = -2; }
        int64_t u = engine_next_event_ns(s->dec);
        if (u < best) { best = u; who = -1; }
        for (int i = 0; i < s->n_pre; i++) {
            u = engine_next_event_ns(s->pre[i]);
            if (u < best) { best = u; who = i; }
        }
        if (best > now_ns || who == -3) break;
        if (who == -2) land(s, heap_pop(s));
        else if (who == -1) engine_advance(s->dec, best, on_dec, s);
        else engine_advance(s->pre[who], best, on_pre, s);
    }
}

static void pd_stats(engine *e, engine_stats *out) {
    pd_engine *s = (pd_engine *)e;
    engine_get_stats(s->dec, out);
    for (int i = 0; i < s->n_pre; i++) {
        engine_stats p;
        engine_get_stats(s->pre[i], &p);
        out->running += p.running;
        out->waiting += p.waiting;
        out->preemptions_total += p.preemptions_total;
    }
    out->running += (int64_t)s->heap_n;   /* in transfer */
    out->generation_tokens_total += s->firsts;
    out->prompt_tokens_total = 0;
    for (int i = 0; i < s->n_pre; i++) {
        engine_stats p;
        engine_get_stats(s->pre[i], &p);
        out->prompt_tokens_total += p.prompt_tokens_total;
    }
}

static void pd_destroy(engine *e) {
    pd_engine *s = (pd_engine *)e;
    for (int i = 0; i < s->n_pre; i++) engine_destroy(s->pre[i]);
    engine_destroy(s->dec);
    free(s->pre);
    free(s->pre_load);
    free(s->r);
    free(s->heap);
    free(s);
}

static const engine_ops pd_ops = {
    .name = "sim-pd", .submit = pd_submit, .cancel = pd_cancel, .next_event_ns = pd_next,
    .advance = pd_advance, .stats = pd_stats, .destroy = pd_destroy,
};

engine *engine_sim_pd_create(const sim_params *p, engine *(*make)(const sim_params *, char *, size_t), char *err, size_t errlen) {
    pd_engine *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->base.ops = &pd_ops;
    s->n_pre = p->prefill_instances;
    s->pre = calloc((size_t)s->n_pre, sizeof *s->pre);
    s->pre_load = calloc((size_t)s->n_pre, sizeof *s->pre_load);
    if (!s->pre || !s->pre_load) { snprintf(err, errlen, "out of memory"); pd_destroy(&s->base); return NULL; }
    sim_params pp, dp = *p;
    sim_params_prefill_side(p, &pp);
    dp.prefill_instances = 0;
    for (int i = 0; i < s->n_pre; i++)
        if (!(s->pre[i] = make(&pp, err, errlen))) { pd_destroy(&s->base); return NULL; }
    if (!(s->dec = make(&dp, err, errlen))) { pd_destroy(&s->base); return NULL; }
    cost_model cm;
    if (sim_params_cost(&dp, &cm, err, errlen) < 0) { pd_destroy(&s->base); return NULL; }
    s->kv_bytes_per_token = cost_kv_transfer_bytes(&cm, 1);
    s->nic_bytes_per_s = cm.comm.nic_bytes_per_s;
    s->transfer_alpha_s = COMM_NET_ALPHA_S;
    cost_free(&cm);
    return &s->base;
}

int sim_pd_get_info(engine *e, int (*dec_info)(engine *, sim_info *), sim_info *info) {
    if (!e || e->ops != &pd_ops) return -1;
    pd_engine *s = (pd_engine *)e;
    if (dec_info(s->dec, info) < 0) return -1;
    info->kv_transfers = s->info.kv_transfers;
    info->kv_transfer_s = s->info.kv_transfer_s;
    info->prefill_busy_s = 0;
    for (int i = 0; i < s->n_pre; i++) {
        sim_info pi;
        if (dec_info(s->pre[i], &pi) == 0) {
            info->prefill_busy_s += pi.busy_s;
            info->prefill_tokens_total += pi.prefill_tokens_total;
            info->prefix_query_tokens += pi.prefix_query_tokens;
            info->prefix_hit_tokens += pi.prefix_hit_tokens;
        }
    }
    return 0;
}
