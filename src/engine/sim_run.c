/* sim_run — the virtual-clock driver of an engine: arrivals, token events into records, and
 * engine gauges sampled into series. Conversations (sessions datasets) run in sim_sess.c. */
#include "engine/sim_run.h"
#include "engine/sim_run_int.h"
#include "common/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int64_t t; size_t i; int stage; } tr_item;   /* stage 0: the client sends; 1: the engine gets it */

typedef struct {
    recset *recs;
    const sim_workload *w;
    int64_t *ready;              /* closed loop: FIFO of times users become ready (finish + think) */
    size_t r_head, r_len, r_cap;
    size_t in_flight;
    tr_item *tr;                 /* sent, on the way to the engine: a min-heap by arrival (t, then i) */
    size_t tr_n;
    rng g;                       /* the transit's turnaround draws */
} run_ctx;

/* Users become ready in finish order, and think time is constant: a FIFO keeps them sorted. */
static void ready_push(run_ctx *c, int64_t t) {
    c->ready[(c->r_head + c->r_len++) % c->r_cap] = t;
}

static int tr_less(const tr_item *a, const tr_item *b) { return a->t < b->t || (a->t == b->t && a->i < b->i); }

static void tr_push(run_ctx *c, int64_t t, size_t i, int stage) {
    size_t k = c->tr_n++;
    c->tr[k] = (tr_item){t, i, stage};
    while (k > 0 && tr_less(&c->tr[k], &c->tr[(k - 1) / 2])) {
        tr_item x = c->tr[k]; c->tr[k] = c->tr[(k - 1) / 2]; c->tr[(k - 1) / 2] = x;
        k = (k - 1) / 2;
    }
}

static tr_item tr_pop(run_ctx *c) {
    tr_item top = c->tr[0];
    c->tr[0] = c->tr[--c->tr_n];
    for (size_t k = 0;;) {
        size_t l = 2 * k + 1, r = l + 1, m = k;
        if (l < c->tr_n && tr_less(&c->tr[l], &c->tr[m])) m = l;
        if (r < c->tr_n && tr_less(&c->tr[r], &c->tr[m])) m = r;
        if (m == k) break;
        tr_item x = c->tr[k]; c->tr[k] = c->tr[m]; c->tr[m] = x;
        k = m;
    }
    return top;
}

static int transit_on(const sim_workload *w) { return w->turnaround_ns > 0 || w->ingest_ns_per_token > 0 || w->ingest_fixed_ns > 0; }

/* How long request i takes from the client's send to the engine's queue. */
static int64_t ingest_ns(run_ctx *c, size_t i) { return c->w->ingest_fixed_ns + (int64_t)(c->w->ingest_ns_per_token * c->w->in_tokens[i]); }

void simr_on_tokens(record *r, const engine_event *ev, int coarse) {
    if (ev->flags & ENGINE_EV_TOKENS) {
        int extended = coarse && !(ev->flags & ENGINE_EV_FIRST) && r->n_chunks >= 2 &&
                       record_extend_last_chunk(r, ev->t_ns, (unsigned)ev->n_tokens) == 0;
        if (!extended) record_add_chunk(r, ev->t_ns, (unsigned)ev->n_tokens);
        if (ev->flags & ENGINE_EV_FIRST) r->first_ns = ev->t_ns;
        r->last_ns = ev->t_ns;
        r->out_tokens_server = (r->out_tokens_server < 0 ? 0 : r->out_tokens_server) + ev->n_tokens;
    }
    /* what a server's usage.prompt_tokens_details.cached_tokens would have said */
    if ((ev->flags & ENGINE_EV_FIRST) && (ev->flags & ENGINE_EV_CACHED)) r->cached_tokens = ev->cached_tokens;
    if (ev->flags & ENGINE_EV_FINISHED) {
        r->end_ns = ev->t_ns;
        r->outcome = REC_OK;
        r->http_status = 200;
    }
}

static void on_event(void *vctx, const engine_event *ev) {
    run_ctx *c = vctx;
    if (ev->id >= c->recs->n) return;
    simr_on_tokens(&c->recs->v[ev->id], ev, c->w->coarse_chunks);
    if (ev->flags & ENGINE_EV_FINISHED) {
        c->in_flight--;
        if (c->w->concurrency > 0) ready_push(c, ev->t_ns + c->w->think_ns);
    }
}

static int series_grow(sim_series *s, size_t cap) {
#define GROW(f) do { void *p = realloc(s->f, cap * sizeof *s->f); if (!p) return -1; s->f = p; } while (0)
    GROW(t_s); GROW(running); GROW(waiting); GROW(batch_tokens); GROW(kv_usage); GROW(step_ms); GROW(preemptions);
    GROW(prompt_tokens); GROW(gen_tokens); GROW(steps);
#undef GROW
    s->cap = cap;
    return 0;
}

/* Keeps every other point and doubles the interval: the series stays under its cap whatever the
 * run's length, without knowing the length in advance. */
static void series_halve(sim_series *s) {
    size_t k = 0;
    for (size_t i = 0; i < s->n; i += 2, k++) {
        s->t_s[k] = s->t_s[i]; s->running[k] = s->running[i]; s->waiting[k] = s->waiting[i];
        s->batch_tokens[k] = s->batch_tokens[i]; s->kv_usage[k] = s->kv_usage[i]; s->step_ms[k] = s->step_ms[i];
        s->preemptions[k] = s->preemptions[i];
        s->prompt_tokens[k] = s->prompt_tokens[i]; s->gen_tokens[k] = s->gen_tokens[i]; s->steps[k] = s->steps[i];
    }
    s->n = k;
    s->interval_ns *= 2;
}

int simr_series_init(sim_series *s, size_t max_points) {
    memset(s, 0, sizeof *s);
    size_t cap = max_points ? max_points : 2048;
    if (cap & 1) cap++;
    if (series_grow(s, cap) < 0) return -1;
    s->interval_ns = 10000000;   /* 10 ms, doubled as needed */
    return 0;
}

/* Samples the gauges at every sample time before t (state is constant between events). */
void simr_sample_until(engine *e, sim_series *s, int64_t t, int64_t *next_sample) {
    if (!s) return;
    engine_stats st;
    int have = 0;
    while (*next_sample <= t) {
        if (!have) { engine_get_stats(e, &st); have = 1; }
        if (s->n == s->cap) {
            series_halve(s);
            *next_sample = SIM_RUN_T0_NS + (int64_t)s->n * s->interval_ns;
            continue;
        }
        size_t i = s->n++;
        s->t_s[i] = (*next_sample - SIM_RUN_T0_NS) / 1e9;
        s->running[i] = (int32_t)st.running;
        s->waiting[i] = (int32_t)st.waiting;
        s->kv_usage[i] = (float)st.kv_usage;
        s->preemptions[i] = st.preemptions_total;
        s->step_ms[i] = st.last_step_ns >= 0 ? (float)(st.last_step_ns / 1e6) : 0;
        s->batch_tokens[i] = (int32_t)st.last_step_tokens;
        s->prompt_tokens[i] = st.prompt_tokens_total;
        s->gen_tokens[i] = st.generation_tokens_total;
        s->steps[i] = st.steps_total;
        *next_sample += s->interval_ns;
    }
}

int simr_submit(engine *e, record *r, const engine_request *q, int64_t sched, int64_t t) {
    r->sched_ns = sched;
    r->send_ns = t;
    /* chunk arrays sized once: no allocation per token */
    if (q->max_tokens > 0 && !r->chunk_ns) {
        r->chunk_ns = malloc(sizeof(int64_t) * (size_t)q->max_tokens);
        if (!r->chunk_ns) return -1;
        r->chunk_cap = (uint32_t)q->max_tokens;
    }
    if (engine_submit(e, q, t) < 0) {
        r->outcome = REC_ERR_HTTP;
        r->http_status = 400;
        r->end_ns = t;
        char buf[160];
        snprintf(buf, sizeof buf, "rejected by the engine: prompt %d + max_tokens %d exceeds the model length or KV cache",
                 q->prompt_tokens, q->max_tokens);
        r->error = strdup(buf);
        return 1;
    }
    return 0;
}

/* 0 submitted, 1 rejected (recorded as a failure), -1 out of memory. Request i carries its prefix
 * identity: a prefix group's shared prompt, or its dataset item's block ids (a trace's hash ids). */
static int submit_one(engine *e, const sim_workload *w, recset *recs, size_t i, int64_t sched, int64_t t) {
    engine_request q = {.id = i, .prompt_tokens = w->in_tokens[i], .max_tokens = w->max_tokens[i], .ignore_eos = true};
    if (w->prefix_group && w->prefix_group[i] >= 0) {
        q.prefix_id = (uint64_t)w->prefix_group[i] + 1;
        q.prefix_len = w->prefix_len;
    }
    if (w->ds && w->ds->n && w->ds->blocks) {
        const dataset_item *it = &w->ds->items[i % w->ds->n];
        q.block_hashes = it->block_ids;
        q.n_block_hashes = it->n_blocks;
        q.hash_block_tokens = w->ds->block_tokens;
    }
    return simr_submit(e, &recs->v[i], &q, sched, t);
}

/* With a transit: the client sends now (the record's sched and send), the engine sees it later. */
static int send_one(engine *e, run_ctx *c, size_t i, int64_t sched, int64_t t) {
    if (!transit_on(c->w)) return submit_one(e, c->w, c->recs, i, sched, t);
    c->recs->v[i].sched_ns = sched;
    c->recs->v[i].send_ns = t;
    /* a closed-loop user's client turns around before it sends (its event loop, the next
     * request's setup): measured as client queue time, as bench would */
    if (c->w->concurrency > 0 && c->w->turnaround_ns > 0)
        tr_push(c, t + (int64_t)rng_exponential(&c->g, (double)c->w->turnaround_ns), i, 0);
    else tr_push(c, t + ingest_ns(c, i), i, 1);
    return 0;
}

/* Due: into the engine at its arrival; the record keeps the client's send time. */
static int arrive_one(engine *e, run_ctx *c, tr_item it) {
    record *r = &c->recs->v[it.i];
    int64_t send = r->send_ns;
    int rc = submit_one(e, c->w, c->recs, it.i, r->sched_ns, it.t);
    r->send_ns = send;
    return rc;
}

int sim_run(engine *e, const sim_workload *w, recset *recs, sim_series *series, char *err, size_t errlen) {
    if (!w->arrival_ns && w->concurrency < 1) {
        snprintf(err, errlen, "a workload needs arrival times or a concurrency");
        return -1;
    }
    if (recs->n != 0) { snprintf(err, errlen, "sim_run needs an empty recset"); return -1; }
    if (w->sessions) return sim_run_sessions(e, w, recs, series, err, errlen);
    for (size_t i = 0; i < w->n; i++) {
        record *r = recset_add(recs);
        if (!r) { snprintf(err, errlen, "out of memory"); return -1; }
        r->index = (uint32_t)i;
        r->warmup = i < w->warmup;
        r->in_tokens = r->in_tokens_server = w->in_tokens[i];
        r->max_tokens = w->max_tokens[i];
        r->cacheable_tokens = w->ds ? dataset_cacheable_tokens(w->ds, i) : -1;   /* the workload's bound */
        r->outcome = REC_ERR_CANCELLED;   /* until it finishes */
    }
    run_ctx c = {.recs = recs, .w = w};
    rng_seed(&c.g, w->transit_seed ? w->transit_seed : 1);
    if (transit_on(w) && !(c.tr = malloc(sizeof(tr_item) * (w->n + 1)))) { snprintf(err, errlen, "out of memory"); return -1; }
    if (w->concurrency > 0) {
        c.r_cap = (size_t)w->concurrency;
        if (!(c.ready = malloc(sizeof(int64_t) * c.r_cap))) { free(c.tr); snprintf(err, errlen, "out of memory"); return -1; }
        for (int u = 0; u < w->concurrency; u++) ready_push(&c, SIM_RUN_T0_NS);
    }
    if (series && simr_series_init(series, w->max_series_points) < 0) {
        free(c.ready);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t next_sample = SIM_RUN_T0_NS;
    size_t next = 0;     /* open loop: requests [q_head, next) arrived and wait in the client queue */
    size_t q_head = 0;
    int64_t now = SIM_RUN_T0_NS;
    for (;;) {
        if (w->arrival_ns) {
            while (q_head < next && (!w->max_concurrency || c.in_flight < (size_t)w->max_concurrency)) {
                int rc = send_one(e, &c, q_head, SIM_RUN_T0_NS + w->arrival_ns[q_head], now);
                if (rc < 0) goto oom;
                if (rc == 0) c.in_flight++;
                q_head++;
            }
        } else {
            /* closed loop: a ready user sends its next request; a rejection frees it at once */
            while (c.r_len && c.ready[c.r_head] <= now && next < w->n) {
                int64_t ready = c.ready[c.r_head];
                c.r_head = (c.r_head + 1) % c.r_cap;
                c.r_len--;
                int rc = send_one(e, &c, next, ready, now);
                if (rc < 0) goto oom;
                if (rc == 0) c.in_flight++;
                else ready_push(&c, now + w->think_ns);
                next++;
            }
        }
        int64_t te = engine_next_event_ns(e), ta = ENGINE_NEVER;
        if (w->arrival_ns) { if (next < w->n) ta = SIM_RUN_T0_NS + w->arrival_ns[next]; }
        else if (c.r_len && next < w->n) ta = c.ready[c.r_head];
        int64_t th = c.tr_n ? c.tr[0].t : ENGINE_NEVER;
        if (te == ENGINE_NEVER && ta == ENGINE_NEVER && th == ENGINE_NEVER) break;
        if (th <= ta && th <= te) {
            /* sent requests reach the engine (a rejection frees the user at once) */
            simr_sample_until(e, series, th - 1, &next_sample);
            now = th;
            while (c.tr_n && c.tr[0].t <= now) {
                tr_item it = tr_pop(&c);
                if (it.stage == 0) {   /* the client sends now; the body is on its way */
                    recs->v[it.i].send_ns = now;
                    tr_push(&c, now + ingest_ns(&c, it.i), it.i, 1);
                    continue;
                }
                int rc = arrive_one(e, &c, it);
                if (rc < 0) goto oom;
                if (rc == 1) {
                    c.in_flight--;
                    if (w->concurrency > 0) ready_push(&c, now + w->think_ns);
                }
            }
        } else if (ta <= te) {
            simr_sample_until(e, series, ta - 1, &next_sample);
            now = ta;
            if (w->arrival_ns) next++;
        } else {
            simr_sample_until(e, series, te - 1, &next_sample);
            now = te;
            engine_advance(e, now, on_event, &c);
        }
    }
    simr_sample_until(e, series, now, &next_sample);
    free(c.ready);
    free(c.tr);
    return 0;
oom:
    free(c.ready);
    free(c.tr);
    snprintf(err, errlen, "out of memory");
    return -1;
}

json_t *sim_series_json(const sim_series *s) {
    json_t *o = json_object();
    json_t *t = json_array(), *run = json_array(), *wait = json_array(), *kv = json_array(), *pre = json_array(),
           *step = json_array(), *bt = json_array();
    for (size_t i = 0; i < s->n; i++) {
        json_array_append_new(t, json_real(s->t_s[i]));
        json_array_append_new(run, json_integer(s->running[i]));
        json_array_append_new(wait, json_integer(s->waiting[i]));
        json_array_append_new(kv, json_real(s->kv_usage[i]));
        json_array_append_new(pre, json_integer(s->preemptions[i]));
        json_array_append_new(step, json_real(s->step_ms[i]));
        json_array_append_new(bt, json_integer(s->batch_tokens[i]));
    }
    json_object_set_new(o, "interval_s", json_real(s->interval_ns / 1e9));
    json_object_set_new(o, "t_s", t);
    json_object_set_new(o, "running", run);
    json_object_set_new(o, "waiting", wait);
    json_object_set_new(o, "kv_usage", kv);
    json_object_set_new(o, "preemptions", pre);
    json_object_set_new(o, "step_ms", step);
    json_object_set_new(o, "batch_tokens", bt);
    return o;
}

static json_t *rate_or_null(double num, double den) {
    return den > 0 ? json_real(num / den) : json_null();
}

json_t *sim_series_server_json(const sim_series *s) {
    json_t *t = json_array(), *run = json_array(), *wait = json_array(), *kv = json_array(), *pre = json_array(),
           *ptps = json_array(), *gtps = json_array(), *tps = json_array();
    for (size_t i = 0; i < s->n; i++) {
        json_array_append_new(t, json_real(s->t_s[i]));
        json_array_append_new(run, json_integer(s->running[i]));
        json_array_append_new(wait, json_integer(s->waiting[i]));
        json_array_append_new(kv, json_real(100.0 * s->kv_usage[i]));
        if (i == 0) {   /* counters need an interval, as for the first scrape */
            json_array_append_new(pre, json_null());
            json_array_append_new(ptps, json_null());
            json_array_append_new(gtps, json_null());
            json_array_append_new(tps, json_null());
            continue;
        }
        double dt = s->t_s[i] - s->t_s[i - 1];
        int64_t dsteps = s->steps[i] - s->steps[i - 1];
        json_array_append_new(pre, json_integer(s->preemptions[i] - s->preemptions[i - 1]));
        json_array_append_new(ptps, rate_or_null((double)(s->prompt_tokens[i] - s->prompt_tokens[i - 1]), dt));
        json_array_append_new(gtps, rate_or_null((double)(s->gen_tokens[i] - s->gen_tokens[i - 1]), dt));
        /* tokens per step over the interval: prompt tokens are counted when first scheduled, so
         * this is an approximation for chunked prompts */
        json_array_append_new(tps, rate_or_null((double)(s->prompt_tokens[i] - s->prompt_tokens[i - 1] +
                                                         s->gen_tokens[i] - s->gen_tokens[i - 1]), (double)dsteps));
    }
    json_t *series = json_object();
    json_object_set_new(series, "t_s", t);
    json_object_set_new(series, "running", run);
    json_object_set_new(series, "waiting", wait);
    json_object_set_new(series, "kv_usage_pct", kv);
    json_object_set_new(series, "preemptions", pre);
    json_object_set_new(series, "prompt_tokens_per_s", ptps);
    json_object_set_new(series, "generation_tokens_per_s", gtps);
    json_object_set_new(series, "tokens_per_step", tps);
    return json_pack("{s:n,s:s,s:I,s:i,s:n,s:o}", "url", "source", "sim", "scrapes", (json_int_t)s->n,
                     "scrape_errors", 0, "last_error", "series", series);
}

void sim_series_free(sim_series *s) {
    free(s->t_s); free(s->running); free(s->waiting); free(s->batch_tokens);
    free(s->kv_usage); free(s->step_ms); free(s->preemptions);
    free(s->prompt_tokens); free(s->gen_tokens); free(s->steps);
    memset(s, 0, sizeof *s);
}
