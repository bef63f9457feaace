/* runner — the scheduling loop between a load plan and the client, sharded over client threads
 * when one event loop would not keep up (see runner.h). */
#include "load/runner.h"
#include "common/stop.h"
#include "dataset/sessions.h"
#include "common/clock.h"
#include "metrics/request_metrics.h"
#include "metrics/stats.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdio.h>
#include <stdatomic.h>
#include <pthread.h>
#include <stddef.h>
#include <unistd.h>

#define STOP_CHECK_NS (50 * NS_PER_MS)   /* how soon a raised stop flag is seen */

/* What each shard publishes for the progress line (read by shard 0). */
typedef struct {
    atomic_size_t sent, finished, failed, in_flight, queued;
} shard_counters;

typedef struct {
    const load_plan *p;       /* this shard's slice of the plan */
    const dataset *ds;
    recset *recs;             /* this shard's records */
    client *c;
    int shard, n_shards;      /* of the whole plan (also across processes: load_plan.shard_total) */
    int slot, n_slots;        /* this process's threads: counters[slot]; slot 0 reports progress */
    shard_counters *counters; /* [n_slots] */
    int64_t t0_ns, first_arrival_ns;
    double lambda;            /* ramp: expected arrivals so far (operational time) */
    rng class_rng;            /* request classes are drawn from their own generator */
    double class_weight_sum;
    size_t total;             /* requests to schedule (warmup + measured); SIZE_MAX by duration */
    size_t scheduled;         /* records created */
    /* open loop */
    size_t *fifo;             /* client queue: record indices waiting for a slot */
    size_t fifo_head, fifo_tail, fifo_cap;
    int64_t next_arrival_ns;
    rng r;
    /* closed loop: when each free user may send again, in the order they became free. Users are
     * interchangeable and the think time is constant, so the times only grow: a ring, read from
     * the front, costs O(1) per request instead of a scan over every user. */
    int64_t *ready_ns;        /* [concurrency] */
    size_t ready_head, ready_n;
    /* multi-turn sessions (the dataset's conversations): a user (closed loop) or an arrival (open
     * loop) starts a conversation; its later turns wait here until the previous answer's end plus
     * the think time, which only grows, so a ring read from the front keeps them in order */
    ds_sessions *sess;
    size_t sess_total, sess_started; /* this shard's conversations: shard, shard + W, ... */
    struct turn_due { int64_t t_ns; uint32_t session; uint16_t turn; } *due;
    size_t due_head, due_n, due_cap;
    /* counters */
    size_t finished, failed;
    int64_t deadline_ns;      /* end of scheduling (duration), INT64_MAX none */
} run_state;

static int fifo_push(run_state *s, size_t idx) {
    if (s->fifo_tail - s->fifo_head == s->fifo_cap) {
        size_t nc = s->fifo_cap ? s->fifo_cap * 2 : 1024;
        size_t *nf = malloc(nc * sizeof *nf);
        if (!nf) return -1;
        for (size_t i = s->fifo_head; i < s->fifo_tail; i++) nf[i - s->fifo_head] = s->fifo[i % s->fifo_cap];
        s->fifo_tail -= s->fifo_head;
        s->fifo_head = 0;
        free(s->fifo);
        s->fifo = nf;
        s->fifo_cap = nc;
    }
    s->fifo[s->fifo_tail++ % s->fifo_cap] = idx;
    return 0;
}

static size_t fifo_len(const run_state *s) { return s->fifo_tail - s->fifo_head; }

/* Creates the record for the next request, scheduled at sched_ns. SIZE_MAX on OOM. */
static size_t new_request(run_state *s, int64_t sched_ns) {
    record *r = recset_add(s->recs);
    if (!r) return SIZE_MAX;
    r->index = (uint32_t)(s->scheduled * (size_t)s->n_shards + (size_t)s->shard);
    r->warmup = s->scheduled < s->p->warmup;
    if (s->sess) {
        /* a new request outside the turn queue starts this shard's next conversation; warm-up
         * counts whole conversations */
        size_t sid = s->sess_started++ * (size_t)s->n_shards + (size_t)s->shard;
        r->session = (uint32_t)sid + 1;
        r->turn = 0;
        r->warmup = s->sess_started <= s->p->warmup;
    }
    if (s->p->n_classes > 1) {
        double u = rng_uniform(&s->class_rng) * s->class_weight_sum;
        int c = 0;
        while (c < s->p->n_classes - 1 && u >= s->p->class_weight[c]) u -= s->p->class_weight[c++];
        r->class_id = (uint16_t)c;
    }
    r->sched_ns = sched_ns;
    s->scheduled++;
    return s->recs->n - 1;
}

static const dataset_item *item_for(run_state *s, size_t idx) {
    const record *r = &s->recs->v[idx];
    const dataset *ds = s->p->n_classes > 1 ? s->p->class_ds[r->class_id] : s->ds;
    return &ds->items[r->index % ds->n];
}

/* Sends the request of record idx: a dataset item, or a conversation's turn built from its
 * history now (the previous answer is in by the time a turn is due). */
static void submit_at(run_state *s, size_t idx, int64_t at_ns) {
    record *rec = &s->recs->v[idx];
    dataset_item turn;
    int rc;
    if (at_ns) {
        /* prepared ahead, sent by the client at its time (never a session's turn: built at send) */
        const dataset *ds = s->p->n_classes > 1 ? s->p->class_ds[rec->class_id] : s->ds;
        rc = client_submit_at(s->c, idx, item_for(s, idx), at_ns);
        if (rc == 0) s->recs->v[idx].cacheable_tokens = dataset_cacheable_tokens(ds, rec->index);
    } else if (s->sess) {
        rc = sessions_build_turn(s->sess, rec->session - 1, rec->turn, &turn);
        if (rc == 0) { rc = client_submit(s->c, idx, &turn); sessions_item_free(&turn); }
    } else {
        const dataset *ds = s->p->n_classes > 1 ? s->p->class_ds[rec->class_id] : s->ds;
        rc = client_submit(s->c, idx, item_for(s, idx));
        /* the workload's cache bound follows the plan's position (a replay that starts over) */
        if (rc == 0) s->recs->v[idx].cacheable_tokens = dataset_cacheable_tokens(ds, rec->index);
    }
    if (rc < 0) {
        record *r = &s->recs->v[idx];
        r->outcome = REC_ERR_CONNECT;
        r->end_ns = clock_now_ns();
        if (!r->error) r->error = strdup("client out of memory");
        s->finished++;
        s->failed++;
    }
}

static void submit(run_state *s, size_t idx) { submit_at(s, idx, 0); }

static void ready_push(run_state *s, int64_t t_ns) {
    size_t cap = (size_t)s->p->concurrency;
    if (s->ready_n < cap) s->ready_ns[(s->ready_head + s->ready_n++) % cap] = t_ns;
}

static int64_t ready_pop(run_state *s) {
    int64_t t = s->ready_ns[s->ready_head];
    s->ready_head = (s->ready_head + 1) % (size_t)s->p->concurrency;
    s->ready_n--;
    return t;
}

/* Queues a conversation's next turn (times arrive in order: end + a constant think time).
 * false when out of memory: the conversation ends there. */
static bool due_push(run_state *s, int64_t t_ns, uint32_t session, uint16_t turn) {
    if (s->due_n == s->due_cap) {
        size_t nc = s->due_cap ? s->due_cap * 2 : 64;
        struct turn_due *nd = malloc(nc * sizeof *nd);
        if (!nd) return false;
        for (size_t i = 0; i < s->due_n; i++) nd[i] = s->due[(s->due_head + i) % s->due_cap];
        free(s->due);
        s->due = nd;
        s->due_cap = nc;
        s->due_head = 0;
    }
    s->due[(s->due_head + s->due_n++) % s->due_cap] = (struct turn_due){ t_ns, session, turn };
    return true;
}

static void on_done(void *ctx, size_t idx) {
    run_state *s = ctx;
    record *r = &s->recs->v[idx];
    s->finished++;
    /* the progress line's "failed" is the server's: a request dsperf cancelled is not a failure */
    if (r->outcome != REC_OK && r->outcome != REC_ERR_CANCELLED) s->failed++;
    if (s->sess && sessions_turn_done(s->sess, r) &&
        due_push(s, r->end_ns + sessions_think_ns(s->sess), r->session, (uint16_t)(r->turn + 1)))
        return;   /* the user stays with its conversation */
    if (s->ready_ns) ready_push(s, r->end_ns + s->p->think_ns);   /* its user is free again */
}

/* Sends (or queues, under --max-concurrency) every conversation turn that is due; returns the
 * earliest turn still waiting, or INT64_MAX. A turn due after the end of scheduling is not sent:
 * its conversation is cut by the run's end. */
static int64_t turns_due(run_state *s, int64_t now, bool closed) {
    while (s->due_n) {
        struct turn_due d = s->due[s->due_head];
        if (d.t_ns > now && d.t_ns < s->deadline_ns) return d.t_ns;
        s->due_head = (s->due_head + 1) % s->due_cap;
        s->due_n--;
        if (d.t_ns >= s->deadline_ns) {
            if (s->ready_ns) ready_push(s, d.t_ns);   /* the user is done with it */
            continue;
        }
        record *r = recset_add(s->recs);
        if (!r) {   /* out of memory: the conversation ends, its user goes on */
            if (s->ready_ns) ready_push(s, d.t_ns);
            continue;
        }
        r->index = (uint32_t)(s->scheduled++ * (size_t)s->n_shards + (size_t)s->shard);
        r->session = d.session;
        r->turn = d.turn;
        r->warmup = (d.session - 1) / (size_t)s->n_shards < s->p->warmup;
        r->sched_ns = d.t_ns;
        size_t idx = s->recs->n - 1;
        if (closed || fifo_push(s, idx) < 0) submit(s, idx);
    }
    return INT64_MAX;
}

static bool more_to_schedule(const run_state *s, int64_t at_ns) {
    if (s->sess) return s->sess_started < s->sess_total && at_ns < s->deadline_ns;   /* a new conversation */
    return s->scheduled < s->total && at_ns < s->deadline_ns;
}

static double recent_ttft_p50_ms(const recset *rs) {
    double v[512];
    int n = 0;
    for (size_t i = rs->n; i-- > 0 && n < 512;) {
        const record *r = &rs->v[i];
        if (r->outcome != REC_OK || !r->end_ns) continue;
        req_metrics m;
        req_metrics_of(r, &m);
        if (m.has_ttft) v[n++] = m.ttft_ms;
    }
    if (!n) return NAN;
    /* small insertion sort: at most 512 values once a second */
    for (int i = 1; i < n; i++) { double x = v[i]; int j = i - 1; while (j >= 0 && v[j] > x) { v[j + 1] = v[j]; j--; } v[j + 1] = x; }
    return stats_percentile_sorted(v, (size_t)n, 50);
}

static int64_t next_gap(run_state *s) {
    if (s->p->trace) {
        /* trace replay: this shard's next request is W items further on the shared timeline;
         * a trace shorter than the run starts over from its beginning */
        size_t n = s->ds->n, g = s->scheduled * (size_t)s->n_shards + (size_t)s->shard, prev = g - (size_t)s->n_shards;
        int64_t b = s->ds->items[g % n].timestamp_ns, a = s->ds->items[prev % n].timestamp_ns;
        if (g / n != prev / n) a = s->ds->items[0].timestamp_ns;
        return arrival_trace_gap_ns(a, b);
    }
    return arrival_next_gap_ns(&s->p->arr, &s->r);
}

static void publish(run_state *s) {
    shard_counters *c = &s->counters[s->slot];
    size_t q = fifo_len(s);
    /* handed over ahead is not sent yet */
    atomic_store_explicit(&c->sent, s->scheduled - q - client_armed(s->c), memory_order_relaxed);
    atomic_store_explicit(&c->finished, s->finished, memory_order_relaxed);
    atomic_store_explicit(&c->failed, s->failed, memory_order_relaxed);
    atomic_store_explicit(&c->in_flight, client_in_flight(s->c), memory_order_relaxed);
    atomic_store_explicit(&c->queued, q, memory_order_relaxed);
}

static size_t sum_counter(const run_state *s, size_t off) {
    size_t t = 0;
    for (int k = 0; k < s->n_slots; k++)
        t += atomic_load_explicit((atomic_size_t *)((char *)&s->counters[k] + off), memory_order_relaxed);
    return t;
}

/* One shard's scheduling loop. Shard 0 also reports progress (summed over all shards). */
static int run_shard(run_state *sp, const client_opts *co, ds_stop_flag *stop,
                     load_progress_fn progress, void *ctx, const load_plan *whole,
                     load_outcome *out, char *err, size_t errlen) {
    run_state s = *sp;
    const load_plan *p = s.p;
    recset *recs = s.recs;
    memset(out, 0, sizeof *out);
    /* a count-bound plan gives each shard its share (possibly only warm-up, possibly none) */
    s.total = whole->requests ? p->requests + p->warmup : SIZE_MAX;
    s.deadline_ns = INT64_MAX;
    if ((s.sess = s.ds->sessions)) {
        /* conversations are dealt out like closed-loop users: shard k has k, k + W, ... */
        size_t n = sessions_count(s.sess);
        s.sess_total = n / (size_t)s.n_shards + ((size_t)s.shard < n % (size_t)s.n_shards);
    }
    rng_seed(&s.r, p->seed);
    client_opts o = *co;
    if (!o.max_connections) {
        size_t peak = p->concurrency ? (size_t)p->concurrency : (p->max_concurrency ? (size_t)p->max_concurrency : 4096);
        o.max_connections = peak + 16;
    }
    s.c = client_new(&o, recs, on_done, &s, err, errlen);
    if (!s.c) return -1;
    bool closed = p->concurrency > 0;
    if (closed) {
        s.ready_ns = malloc(sizeof *s.ready_ns * (size_t)p->concurrency);
        if (!s.ready_ns) { client_free(s.c); snprintf(err, errlen, "out of memory"); return -1; }
    }
    int64_t t0 = s.t0_ns;
    out->start_ns = t0;
    if (p->duration_ns > 0) s.deadline_ns = t0 + p->duration_ns;
    if (closed) for (int u = 0; u < p->concurrency; u++) ready_push(&s, t0);
    s.next_arrival_ns = s.first_arrival_ns;
    rng_seed(&s.class_rng, p->seed ^ 0xc1a55e5ULL);
    for (int c = 0; c < p->n_classes; c++) s.class_weight_sum += p->class_weight[c];
    if (!closed && p->arr.ramp_ns > 0) s.next_arrival_ns = t0 + arrival_next_ramp_ns(&p->arr, &s.r, &s.lambda);
    /* open loop: arrivals are known ahead, so the client prepares each up to its lead before it is
     * due and sends it at its time (a burst due at one instant leaves back to back). Not under
     * --max-concurrency (a request waits for a slot, which is only known when it is due) nor for
     * conversations (a turn is built from the previous answer when it is sent). */
    int64_t lead_ns = !closed && !p->max_concurrency && !s.sess ? client_arm_lead_ns(s.c) : 0;
    int64_t tick_ns = p->progress_interval_ns > 0 ? p->progress_interval_ns : NS_PER_S;
    int64_t next_progress = t0 + tick_ns;
    int64_t grace_end = INT64_MAX;

    for (;;) {
        int64_t now = clock_now_ns();
        if (stop && *stop) { out->interrupted = true; out->stop_code = (int)*stop; break; }
        /* the stop flag is read here, between polls: a signal that lands on another thread does
         * not end the client's wait, so the wait is at most STOP_CHECK_NS (a Ctrl-C while every
         * request is in the middle of a long stream must still cancel them, not wait them out) */
        int64_t wake = now + STOP_CHECK_NS;
        if (s.sess) {
            int64_t next_turn = turns_due(&s, now, closed);
            if (next_turn < wake) wake = next_turn;
        }
        if (closed) {
            while (s.ready_n) {
                int64_t ready = s.ready_ns[s.ready_head];
                if (!more_to_schedule(&s, ready)) { ready_pop(&s); continue; }   /* this user is done */
                if (ready > now) { if (ready < wake) wake = ready; break; }
                ready_pop(&s);
                size_t idx = new_request(&s, ready);
                if (idx != SIZE_MAX) submit(&s, idx);
            }
        } else {
            while (more_to_schedule(&s, s.next_arrival_ns) && s.next_arrival_ns <= now + lead_ns) {
                size_t idx = new_request(&s, s.next_arrival_ns);
                bool queued = idx != SIZE_MAX && (lead_ns ? (submit_at(&s, idx, s.next_arrival_ns), true) : fifo_push(&s, idx) == 0);
                if (!queued) { s.total = s.scheduled; s.sess_total = s.sess_started; break; }
                s.next_arrival_ns = s.p->arr.ramp_ns > 0 ? s.t0_ns + arrival_next_ramp_ns(&s.p->arr, &s.r, &s.lambda)
                                                         : s.next_arrival_ns + next_gap(&s);
            }
            while (fifo_len(&s) && (!p->max_concurrency || client_in_flight(s.c) < (size_t)p->max_concurrency)) {
                size_t idx = s.fifo[s.fifo_head++ % s.fifo_cap];
                submit(&s, idx);
            }
            if (more_to_schedule(&s, s.next_arrival_ns) && s.next_arrival_ns - lead_ns < wake) wake = s.next_arrival_ns - lead_ns;
        }
        /* closed loop: no user may start another request once the count or the duration is
         * reached; open loop: the next arrival falls outside the plan */
        bool scheduling_over = closed ? !more_to_schedule(&s, now) : !more_to_schedule(&s, s.next_arrival_ns);
        if (s.due_n) scheduling_over = false;   /* conversations still have turns to send */
        if (scheduling_over && client_in_flight(s.c) == 0 && fifo_len(&s) == 0) break;
        if (scheduling_over && s.deadline_ns != INT64_MAX && grace_end == INT64_MAX) grace_end = (now > s.deadline_ns ? now : s.deadline_ns) + p->grace_ns;
        if (now >= grace_end) { out->grace_expired = true; break; }
        if (grace_end < wake) wake = grace_end;
        publish(&s);
        if (progress && s.slot == 0 && now >= next_progress) {
            size_t finished = sum_counter(&s, offsetof(shard_counters, finished));
            load_progress pr = {
                .planned = whole->requests ? whole->requests + whole->warmup : 0,
                .sent = sum_counter(&s, offsetof(shard_counters, sent)),
                .finished = finished, .failed = sum_counter(&s, offsetof(shard_counters, failed)),
                .in_flight = sum_counter(&s, offsetof(shard_counters, in_flight)),
                .queued = sum_counter(&s, offsetof(shard_counters, queued)), .elapsed_ns = now - t0,
                /* the TTFT sample is shard 0's: shards are statistically alike */
                .ttft_p50_ms = recent_ttft_p50_ms(recs), .rate_per_s = finished / ((now - t0) / 1e9),
            };
            progress(ctx, &pr);
        }
        if (now >= next_progress) next_progress = now + tick_ns;
        if (next_progress < wake) wake = next_progress;
        client_poll(s.c, wake);
    }
    /* whatever is still in flight or queued is cancelled by dsperf, and says why */
    client_abort_all(s.c, REC_ERR_CANCELLED);
    /* requests handed over ahead whose time had not come when the run stopped were never due: they
     * are not the run's (without the lead they would not have been created). They are this
     * shard's newest records: open-loop arrivals are created in schedule order. */
    int64_t stop_ns = clock_now_ns();
    while (lead_ns && recs->n && recs->v[recs->n - 1].send_ns == 0 && recs->v[recs->n - 1].sched_ns > stop_ns) {
        record_free(&recs->v[--recs->n]);
        s.scheduled--;
    }
    while (fifo_len(&s)) recs->v[s.fifo[s.fifo_head++ % s.fifo_cap]].outcome = REC_ERR_CANCELLED;
    recset_mark_cancelled(recs, 0, !out->interrupted ? REC_CANCEL_DEADLINE
                                   : out->stop_code == LOAD_STOP_EARLY ? REC_CANCEL_EARLY_STOP : REC_CANCEL_INTERRUPT);
    out->end_ns = clock_now_ns();
    publish(&s);
    client_free(s.c);
    free(s.fifo);
    free(s.ready_ns);
    free(s.due);
    return 0;
}

int load_client_threads(const load_plan *p, int threads) {
    size_t peak = p->concurrency ? (size_t)p->concurrency
                : p->max_concurrency ? (size_t)p->max_concurrency : (size_t)(p->arr.rate_per_s * 2);
    if (p->trace && p->trace_burst > peak) peak = p->trace_burst;
    if (threads <= 0) {
        long cpus = sysconf(_SC_NPROCESSORS_ONLN);
        long by_cpu = cpus > 1 ? cpus / 2 : 1;
        long by_load = (long)(peak / 256) + 1;
        long cap = 8;
        if (p->trace && p->trace_burst >= LOAD_BURST_SHARE * 2 && p->trace_burst >= peak) {
            /* a trace whose peak is a burst at one instant: what bounds it is its sends, each a
             * system call that on loopback also runs the server's receive (client README
             * "Bursts"), so it is dealt over all but one core, a share of LOAD_BURST_SHARE each */
            by_cpu = cpus > 2 ? cpus - 1 : 1;
            by_load = (long)(p->trace_burst / LOAD_BURST_SHARE);
            cap = 64;
        }
        threads = (int)(by_load < by_cpu ? by_load : by_cpu);
        if (threads > cap) threads = cap;
    }
    /* a shard needs at least one user / one slot of the cap */
    if (p->concurrency && threads > p->concurrency) threads = p->concurrency;
    if (p->max_concurrency && threads > p->max_concurrency) threads = p->max_concurrency;
    return threads < 1 ? 1 : threads;
}

/* The most consecutive trace items whose timestamps lie within 1 ms of the first of them. */
static size_t trace_burst(const dataset *ds) {
    size_t best = 0;
    for (size_t i = 0, j = 0; i < ds->n; i++) {
        if (j < i) j = i;
        while (j + 1 < ds->n && ds->items[j + 1].timestamp_ns >= ds->items[i].timestamp_ns &&
               ds->items[j + 1].timestamp_ns - ds->items[i].timestamp_ns < NS_PER_MS) j++;
        if (j - i + 1 > best) best = j - i + 1;
    }
    return best;
}

/* share of n for shard k of w */
static size_t share(size_t n, int k, int w) { return n / (size_t)w + ((size_t)k < n % (size_t)w); }

typedef struct {
    run_state s;
    const client_opts *co;
    ds_stop_flag *stop;
    const load_plan *whole;
    load_outcome out;
    bool started;      /* its thread was created (set and read by the calling thread only) */
    int rc;            /* the shard's result: written by its thread, read after the join */
    char err[256];
} shard_job;

static void *shard_thread(void *arg) {
    shard_job *j = arg;
    j->rc = run_shard(&j->s, j->co, j->stop, NULL, NULL, j->whole, &j->out, j->err, sizeof j->err);
    return NULL;
}

static int by_index(const void *a, const void *b) {
    const record *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}

int load_run(const load_plan *p, const client_opts *co, const dataset *ds, recset *recs,
             ds_stop_flag *stop, load_progress_fn progress, void *ctx,
             load_outcome *out, char *err, size_t errlen) {
    /* a slice of a job's shards has its thread count set by the job (src/dist) */
    load_plan pt = *p;
    if (p->trace && p->client_threads <= 0 && p->shard_total <= 0) pt.trace_burst = trace_burst(ds);
    int w = p->shard_total > 0 ? p->client_threads : load_client_threads(&pt, p->client_threads);
    if (w < 1) { snprintf(err, errlen, "no client thread for this slice of the plan"); return -1; }
    shard_counters *counters = calloc((size_t)w, sizeof *counters);
    load_plan *plans = calloc((size_t)w, sizeof *plans);
    shard_job *jobs = calloc((size_t)w, sizeof *jobs);
    pthread_t *th = calloc((size_t)w, sizeof *th);
    if (!counters || !plans || !jobs || !th) {
        free(counters); free(plans); free(jobs); free(th);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    int64_t t0 = p->start_ns > 0 ? p->start_ns : clock_now_ns();
    /* shard g of W: g = k here, or this process's slice of a job's shards */
    int W = p->shard_total > 0 ? p->shard_total : w, base = p->shard_total > 0 ? p->shard_base : 0;
    for (int k = 0; k < w; k++) {
        load_plan *q = &plans[k];
        int g = base + k;
        *q = *p;
        if (p->concurrency) q->concurrency = (int)share((size_t)p->concurrency, g, W);
        if (p->max_concurrency) q->max_concurrency = (int)share((size_t)p->max_concurrency, g, W);
        if (p->requests) q->requests = share(p->requests, g, W);
        q->warmup = share(p->warmup, g, W);
        if (!p->concurrency && !p->trace) { q->arr.rate_per_s = p->arr.rate_per_s / W; q->arr.ramp_from_per_s = p->arr.ramp_from_per_s / W; }
        q->seed = p->seed + (uint64_t)g * 0x9e3779b97f4a7c15ULL;
        jobs[k].s = (run_state){ .p = q, .ds = ds, .shard = g, .n_shards = W, .slot = k, .n_slots = w,
                                 .counters = counters, .t0_ns = t0, .first_arrival_ns = t0 };
        if (!p->concurrency) {
            /* the shards' first arrivals interleave: a constant rate stays exactly constant, and
             * a trace keeps each request's own offset */
            if (p->trace) jobs[k].s.first_arrival_ns = t0 + (ds->items[(size_t)g % ds->n].timestamp_ns - ds->items[0].timestamp_ns);
            else if (p->arr.kind == ARRIVAL_CONSTANT && p->arr.rate_per_s > 0) jobs[k].s.first_arrival_ns = t0 + (int64_t)(g * 1e9 / p->arr.rate_per_s);
        }
        jobs[k].co = co;
        jobs[k].stop = stop;
        jobs[k].whole = p;
        if (k == 0) { jobs[k].s.recs = recs; continue; }
        recset *own = malloc(sizeof *own);
        if (!own) { jobs[k].rc = -1; snprintf(jobs[k].err, sizeof jobs[k].err, "out of memory"); continue; }
        recset_init(own);
        jobs[k].s.recs = own;
    }
    for (int k = 1; k < w; k++) {
        if (jobs[k].rc) continue;
        if (pthread_create(&th[k], NULL, shard_thread, &jobs[k]) == 0) jobs[k].started = true;
        else { jobs[k].rc = -1; snprintf(jobs[k].err, sizeof jobs[k].err, "cannot start a client thread"); }
    }
    int rc = run_shard(&jobs[0].s, co, stop, progress, ctx, p, out, err, errlen);
    /* every started shard is joined, whatever it returned, before its result is read */
    for (int k = 1; k < w; k++) {
        if (jobs[k].started) pthread_join(th[k], NULL);
        if (jobs[k].rc && rc == 0) { rc = -1; snprintf(err, errlen, "%s", jobs[k].err); }
        if (jobs[k].out.interrupted) { out->interrupted = true; if (!out->stop_code) out->stop_code = jobs[k].out.stop_code; }
        if (jobs[k].out.grace_expired) out->grace_expired = true;
        if (jobs[k].out.end_ns > out->end_ns) out->end_ns = jobs[k].out.end_ns;
        recset *own = jobs[k].s.recs;
        if (!own) continue;
        /* move the shard's records (and their chunk arrays) into the caller's set */
        for (size_t i = 0; i < own->n; i++) {
            record *r = recset_add(recs);
            if (r) *r = own->v[i]; else record_free(&own->v[i]);
        }
        free(own->v);
        free(own);
    }
    if (w > 1) qsort(recs->v, recs->n, sizeof *recs->v, by_index);
    out->client_threads = w;
    free(counters); free(plans); free(jobs); free(th);
    return rc;
}
