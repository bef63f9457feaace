/* sim_run — the virtual-clock driver of an engine: arrivals, token events into records, and
 * engine gauges sampled into series. */
#include "engine/sim_run.h"
#include "common/rng.h"
#include "dataset/dataset.h"
#include "dataset/words.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    recset *recs;
    const sim_workload *w;
    int64_t *ready;              /* closed loop: FIFO of times users become ready (finish + think) */
    size_t r_head, r_len, r_cap;
    size_t in_flight;
} run_ctx;

/* Users become ready in finish order, and think time is constant: a FIFO keeps them sorted. */
static void ready_push(run_ctx *c, int64_t t) {
    c->ready[(c->r_head + c->r_len++) % c->r_cap] = t;
}

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
        s->prompt_tokens[i] = st.prompt_tokens_total;
        s->gen_tokens[i] = st.generation_tokens_total;
        s->steps[i] = st.steps_total;
        *next_sample += s->interval_ns;
    }
}

/* 0 submitted, 1 rejected (recorded as a failure), -1 out of memory. */
static int submit_one(engine *e, const sim_workload *w, recset *recs, size_t i, int64_t sched, int64_t t) {
    record *r = &recs->v[i];
    r->sched_ns = sched;
    r->send_ns = t;
    engine_request q = {.id = i, .prompt_tokens = w->in_tokens[i], .max_tokens = w->max_tokens[i], .ignore_eos = true};
    if (w->prefix_group && w->prefix_group[i] >= 0) {
        q.prefix_id = (uint64_t)w->prefix_group[i] + 1;
        q.prefix_len = w->prefix_len;
    }
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
    if (w->concurrency > 0) {
        c.r_cap = (size_t)w->concurrency;
        if (!(c.ready = malloc(sizeof(int64_t) * c.r_cap))) { snprintf(err, errlen, "out of memory"); return -1; }
        for (int u = 0; u < w->concurrency; u++) ready_push(&c, SIM_RUN_T0_NS);
    }
    if (series) {
        memset(series, 0, sizeof *series);
        size_t cap = w->max_series_points ? w->max_series_points : 2048;
        if (cap & 1) cap++;
        if (series_grow(series, cap) < 0) { free(c.ready); snprintf(err, errlen, "out of memory"); return -1; }
        series->interval_ns = 10000000;   /* 10 ms, doubled as needed */
    }
    int64_t next_sample = SIM_RUN_T0_NS;
    size_t next = 0;     /* open loop: requests [q_head, next) arrived and wait in the client queue */
    size_t q_head = 0;
    int64_t now = SIM_RUN_T0_NS;
    for (;;) {
        if (w->arrival_ns) {
            while (q_head < next && (!w->max_concurrency || c.in_flight < (size_t)w->max_concurrency)) {
                int rc = submit_one(e, w, recs, q_head, SIM_RUN_T0_NS + w->arrival_ns[q_head], now);
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
                int rc = submit_one(e, w, recs, next, ready, now);
                if (rc < 0) goto oom;
                if (rc == 0) c.in_flight++;
                else ready_push(&c, now + w->think_ns);
                next++;
            }
        }
        int64_t te = engine_next_event_ns(e), ta = ENGINE_NEVER;
        if (w->arrival_ns) { if (next < w->n) ta = SIM_RUN_T0_NS + w->arrival_ns[next]; }
        else if (c.r_len && next < w->n) ta = c.ready[c.r_head];
        if (te == ENGINE_NEVER && ta == ENGINE_NEVER) break;
        if (ta <= te) {
            series_sample_until(e, series, ta - 1, &next_sample);
            now = ta;
            if (w->arrival_ns) next++;
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

/* The dataset module's random draw, replayed without the text: the same seed derivation and the
 * same sequence of draws (prompt length, one word per length unit, output length). */
#define DATASET_RANDOM_SEED_XOR 0x5eedda7a5e7ULL

static int32_t draw_len(rng *r, long mean, double range) {
    if (range <= 0) return (int32_t)mean;
    long lo = (long)floor(mean * (1 - range)), hi = (long)ceil(mean * (1 + range));
    if (lo < 1) lo = 1;
    return (int32_t)(lo + (long)rng_below(r, (uint64_t)(hi - lo + 1)));
}

static int parse_random(const char *spec, long *in, long *out, double *range) {
    *in = 1024;
    *out = 128;
    *range = 0;
    const char *s = spec + 6;
    if (!*s) return 0;
    if (*s++ != ':') return -1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end;
        if (!eq) return -1;
        *eq++ = 0;
        if (!strcmp(tok, "in")) { *in = strtol(eq, &end, 10); if (*end || *in < 1) return -1; }
        else if (!strcmp(tok, "out")) { *out = strtol(eq, &end, 10); if (*end || *out < 1) return -1; }
        else if (!strcmp(tok, "range")) { *range = strtod(eq, &end); if (*end || *range < 0 || *range >= 1) return -1; }
        else return -1;
    }
    return 0;
}

/* lognormal:in=MEAN,out=MEAN[,sigma=S,max_in=N,max_total=N] — a ShareGPT-like spread of lengths
 * (lognormal, clamped to [4, max]) rescaled so the totals are exactly n x the means: a published run
 * gives its token totals, not its lengths. */
static int lognormal_lengths(const char *spec, size_t n, uint64_t seed, int32_t **ins, int32_t **outs, char *err,
                             size_t errlen) {
    double mean_in = 0, mean_out = 0, sigma = 1.0, max_in = 1 << 20, max_total = 1 << 21;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec + 10);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '='), *end;
        if (!eq) goto bad;
        *eq++ = 0;
        double v = strtod(eq, &end);
        if (*end || v <= 0) goto bad;
        if (!strcmp(tok, "in")) mean_in = v;
        else if (!strcmp(tok, "out")) mean_out = v;
        else if (!strcmp(tok, "sigma")) sigma = v;
        else if (!strcmp(tok, "max_in")) max_in = v;
        else if (!strcmp(tok, "max_total")) max_total = v;
        else goto bad;
    }
    if (mean_in < 1 || mean_out < 1 || n == 0) goto bad;
    *ins = malloc(sizeof(int32_t) * n);
    *outs = malloc(sizeof(int32_t) * n);
    double *a = malloc(sizeof(double) * n), *b = malloc(sizeof(double) * n);
    if (!*ins || !*outs || !a || !b) { free(a); free(b); free(*ins); free(*outs); *ins = *outs = NULL; snprintf(err, errlen, "out of memory"); return -1; }
    rng r;
    rng_seed(&r, seed ^ 0x109e5ULL);
    double sa = 0, sb = 0;
    for (size_t i = 0; i < n; i++) {
        for (int k = 0; k < 2; k++) {
            double z = rng_normal(&r);
            double v = exp(log(k ? mean_out : mean_in) - sigma * sigma / 2 + sigma * z);
            if (k) b[i] = v; else a[i] = v;
        }
        a[i] = fmin(fmax(a[i], 4), max_in);
        b[i] = fmin(fmax(b[i], 4), max_total - a[i]);
        sa += a[i];
        sb += b[i];
    }
    double fa = mean_in * n / sa, fb = mean_out * n / sb;
    for (size_t i = 0; i < n; i++) {
        (*ins)[i] = (int32_t)fmax(1, llround(a[i] * fa));
        (*outs)[i] = (int32_t)fmax(1, llround(b[i] * fb));
    }
    free(a);
    free(b);
    return 0;
bad:
    snprintf(err, errlen, "bad dataset '%s': expected lognormal:in=MEAN,out=MEAN[,sigma=S,max_in=N,max_total=N]", spec);
    return -1;
}

int sim_workload_lengths(const char *spec, size_t *n, uint64_t seed, int32_t default_out, int32_t **ins,
                         int32_t **outs, int64_t **times_ns, char *err, size_t errlen) {
    return sim_workload_lengths_groups(spec, n, seed, default_out, ins, outs, times_ns, NULL, NULL, err, errlen);
}

int sim_workload_lengths_groups(const char *spec, size_t *n, uint64_t seed, int32_t default_out, int32_t **ins,
                                int32_t **outs, int64_t **times_ns, int32_t **groups, int32_t *prefix_len, char *err,
                                size_t errlen) {
    if (groups) *groups = NULL;
    if (prefix_len) *prefix_len = 0;
    *ins = *outs = NULL;
    *times_ns = NULL;
    if (!strncmp(spec, "random", 6) && (!spec[6] || spec[6] == ':')) {
        long in, out;
        double range;
        if (parse_random(spec, &in, &out, &range) < 0) {
            snprintf(err, errlen, "bad dataset '%s': expected random:in=N,out=M,range=F with N, M >= 1 and 0 <= F < 1", spec);
            return -1;
        }
        if (*n == 0) { snprintf(err, errlen, "a random dataset needs a request count"); return -1; }
        *ins = malloc(sizeof(int32_t) * *n);
        *outs = malloc(sizeof(int32_t) * *n);
        if (!*ins || !*outs) goto oom;
        size_t nw;
        words_list(&nw);
        rng r;
        rng_seed(&r, seed ^ DATASET_RANDOM_SEED_XOR);
        for (size_t i = 0; i < *n; i++) {
            (*ins)[i] = draw_len(&r, in, range);
            if (range > 0)   /* the words of the prompt; constant lengths draw nothing else */
                for (int32_t k = 0; k < (*ins)[i]; k++) rng_below(&r, nw);
            (*outs)[i] = draw_len(&r, out, range);
        }
        return 0;
    }
    if (!strncmp(spec, "lognormal:", 10)) return lognormal_lengths(spec, *n, seed, ins, outs, err, errlen);
    dataset *d;
    if (dataset_open(spec, *n, seed, NULL, &d, err, errlen) < 0) return -1;   /* lengths in words, as bench without a tokenizer */
    int stamped = d->n > 0;
    for (size_t i = 0; i < d->n; i++) stamped &= d->items[i].timestamp_ns >= 0;
    if (*n == 0) *n = d->n;
    *ins = malloc(sizeof(int32_t) * *n);
    *outs = malloc(sizeof(int32_t) * *n);
    if (stamped) *times_ns = malloc(sizeof(int64_t) * *n);
    int grouped = groups && d->n > 0 && d->items[0].group >= 0;
    if (grouped) *groups = malloc(sizeof(int32_t) * *n);
    if (!*ins || !*outs || (stamped && !*times_ns) || (grouped && !*groups)) {
        dataset_free(d);
        free(*times_ns);
        *times_ns = NULL;
        if (grouped) { free(*groups); *groups = NULL; }
        goto oom;
    }
    if (grouped && prefix_len) {
        const char *pp = strstr(spec, "prefix=");
        *prefix_len = pp ? (int32_t)atoi(pp + 7) : 0;
    }
    for (size_t i = 0; i < *n; i++) {
        const dataset_item *it = &d->items[i % d->n];   /* cycled, as bench does */
        (*ins)[i] = it->in_tokens > 0 ? it->in_tokens : 1;
        (*outs)[i] = it->max_tokens > 0 ? it->max_tokens : default_out;
        if (stamped) (*times_ns)[i] = it->timestamp_ns;
        if (grouped) (*groups)[i] = it->group;
    }
    dataset_free(d);
    return 0;
oom:
    free(*ins);
    free(*outs);
    *ins = *outs = NULL;
    snprintf(err, errlen, "out of memory");
    return -1;
}
