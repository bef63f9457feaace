/* sim_run — the virtual-clock driver of an engine: arrivals, token events into records, and
 * engine gauges sampled into series. */
#include "engine/sim_run.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    recset *recs;
    const sim_workload *w;
    size_t *ready;               /* closed loop: indices finished in the last advance (to refill) */
    size_t n_ready;
    size_t done;
} run_ctx;

static void on_event(void *vctx, const engine_event *ev) {
    run_ctx *c = vctx;
    if (ev->id >= c->recs->n) return;
    record *r = &c->recs->v[ev->id];
    if (ev->flags & ENGINE_EV_TOKENS) {
        record_add_chunk(r, ev->t_ns, (unsigned)ev->n_tokens);
        if (ev->flags & ENGINE_EV_FIRST) r->first_ns = ev->t_ns;
        r->last_ns = ev->t_ns;
        r->out_tokens_server = (r->out_tokens_server < 0 ? 0 : r->out_tokens_server) + ev->n_tokens;
    }
    if (ev->flags & ENGINE_EV_FINISHED) {
        r->end_ns = ev->t_ns;
        r->outcome = REC_OK;
        r->http_status = 200;
        c->done++;
        if (c->w->concurrency > 0) c->ready[c->n_ready++] = (size_t)ev->id;
    }
}

static int series_grow(sim_series *s, size_t cap) {
#define GROW(f) do { void *p = realloc(s->f, cap * sizeof *s->f); if (!p) return -1; s->f = p; } while (0)
    GROW(t_s); GROW(running); GROW(waiting); GROW(batch_tokens); GROW(kv_usage); GROW(step_ms); GROW(preemptions);
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
    }
    s->n = k;
    s->interval_ns *= 2;
}

/* Samples the gauges at every sample time before t (state is constant between events). */
static void series_sample_until(engine *e, sim_series *s, int64_t t, int64_t *next_sample) {
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
        *next_sample += s->interval_ns;
    }
}

static int submit_one(engine *e, const sim_workload *w, recset *recs, size_t i, int64_t t) {
    record *r = &recs->v[i];
    r->sched_ns = r->send_ns = t;
    engine_request q = {.id = i, .prompt_tokens = w->in_tokens[i], .max_tokens = w->max_tokens[i], .ignore_eos = true};
    /* chunk arrays sized once: no allocation per token */
    if (w->max_tokens[i] > 0 && !r->chunk_ns) {
        r->chunk_ns = malloc(sizeof(int64_t) * (size_t)w->max_tokens[i]);
        if (!r->chunk_ns) return -1;
        r->chunk_cap = (uint32_t)w->max_tokens[i];
    }
    if (engine_submit(e, &q, t) < 0) {
        r->outcome = REC_ERR_HTTP;
        r->http_status = 400;
        r->end_ns = t;
        char buf[160];
        snprintf(buf, sizeof buf, "rejected by the engine: prompt %d + max_tokens %d exceeds the model length or KV cache",
                 w->in_tokens[i], w->max_tokens[i]);
        r->error = strdup(buf);
        return 1;
    }
    return 0;
}

int sim_run(engine *e, const sim_workload *w, recset *recs, sim_series *series, char *err, size_t errlen) {
    if (!w->arrival_ns && w->concurrency < 1) {
        snprintf(err, errlen, "a workload needs arrival times or a concurrency");
        return -1;
    }
    if (recs->n != 0) { snprintf(err, errlen, "sim_run needs an empty recset"); return -1; }
    for (size_t i = 0; i < w->n; i++) {
        record *r = recset_add(recs);
        if (!r) { snprintf(err, errlen, "out of memory"); return -1; }
        r->index = (uint32_t)i;
        r->warmup = i < w->warmup;
        r->in_tokens = r->in_tokens_server = w->in_tokens[i];
        r->max_tokens = w->max_tokens[i];
        r->outcome = REC_ERR_CANCELLED;   /* until it finishes */
    }
    run_ctx c = {.recs = recs, .w = w};
    if (w->concurrency > 0 && !(c.ready = malloc(sizeof(size_t) * (size_t)w->concurrency))) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    if (series) {
        memset(series, 0, sizeof *series);
        size_t cap = w->max_series_points ? w->max_series_points : 2048;
        if (cap & 1) cap++;
        if (series_grow(series, cap) < 0) { free(c.ready); snprintf(err, errlen, "out of memory"); return -1; }
        series->interval_ns = 10000000;   /* 10 ms, doubled as needed */
    }
    int64_t next_sample = SIM_RUN_T0_NS;
    size_t next = 0;
    int64_t now = SIM_RUN_T0_NS;
    if (!w->arrival_ns) {
        for (; next < w->n && next < (size_t)w->concurrency; next++)
            if (submit_one(e, w, recs, next, now) < 0) goto oom;
            else if (recs->v[next].outcome == REC_ERR_HTTP) c.ready[c.n_ready++] = next;
    }
    for (;;) {
        /* closed loop: each finished (or rejected) request frees its user for the next one */
        while (c.n_ready > 0 && next < w->n) {
            c.n_ready--;
            int rc = submit_one(e, w, recs, next, now);
            if (rc < 0) goto oom;
            if (rc > 0) c.ready[c.n_ready++] = next;
            next++;
        }
        c.n_ready = 0;
        int64_t te = engine_next_event_ns(e);
        int64_t ta = w->arrival_ns && next < w->n ? SIM_RUN_T0_NS + w->arrival_ns[next] : ENGINE_NEVER;
        if (te == ENGINE_NEVER && ta == ENGINE_NEVER) break;
        if (ta <= te) {
            series_sample_until(e, series, ta - 1, &next_sample);
            now = ta;
            if (submit_one(e, w, recs, next, now) < 0) goto oom;
            next++;
        } else {
            series_sample_until(e, series, te - 1, &next_sample);
            now = te;
            engine_advance(e, now, on_event, &c);
        }
    }
    series_sample_until(e, series, now, &next_sample);
    free(c.ready);
    return 0;
oom:
    free(c.ready);
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

void sim_series_free(sim_series *s) {
    free(s->t_s); free(s->running); free(s->waiting); free(s->batch_tokens);
    free(s->kv_usage); free(s->step_ms); free(s->preemptions);
    memset(s, 0, sizeof *s);
}
