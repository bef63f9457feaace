/* runner — the scheduling loop between a load plan and the client. */
#include "load/runner.h"
#include "common/clock.h"
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <stdio.h>

typedef struct {
    const load_plan *p;
    const dataset *ds;
    recset *recs;
    client *c;
    size_t total;             /* requests to schedule (warmup + measured); SIZE_MAX by duration */
    size_t scheduled;         /* records created */
    /* open loop */
    size_t *fifo;             /* client queue: record indices waiting for a slot */
    size_t fifo_head, fifo_tail, fifo_cap;
    int64_t next_arrival_ns;
    rng r;
    /* closed loop: users that finished and wait (think time) before their next request */
    int64_t *user_ready_ns;   /* per user; INT64_MAX = busy */
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
static size_t new_request(run_state *s, int64_t sched_ns, uint16_t user) {
    record *r = recset_add(s->recs);
    if (!r) return SIZE_MAX;
    r->index = (uint32_t)s->scheduled;
    r->warmup = s->scheduled < s->p->warmup;
    r->sched_ns = sched_ns;
    (void)user;
    s->scheduled++;
    return s->recs->n - 1;
}

static const dataset_item *item_for(run_state *s, size_t idx) {
    return &s->ds->items[s->recs->v[idx].index % s->ds->n];
}

static void submit(run_state *s, size_t idx) {
    if (client_submit(s->c, idx, item_for(s, idx)) < 0) {
        record *r = &s->recs->v[idx];
        r->outcome = REC_ERR_CONNECT;
        r->end_ns = clock_now_ns();
        if (!r->error) r->error = strdup("client out of memory");
        s->finished++;
        s->failed++;
    }
}

static void on_done(void *ctx, size_t idx) {
    run_state *s = ctx;
    s->finished++;
    if (s->recs->v[idx].outcome != REC_OK) s->failed++;
    if (s->user_ready_ns) {
        /* closed loop: the user who sent it is free after its think time; users are
         * interchangeable, so take the first busy slot */
        for (int u = 0; u < s->p->concurrency; u++)
            if (s->user_ready_ns[u] == INT64_MAX) { s->user_ready_ns[u] = s->recs->v[idx].end_ns + s->p->think_ns; break; }
    }
}

static bool more_to_schedule(const run_state *s, int64_t at_ns) {
    return s->scheduled < s->total && at_ns < s->deadline_ns;
}

static double recent_ttft_p50_ms(const recset *rs) {
    double v[512];
    int n = 0;
    for (size_t i = rs->n; i-- > 0 && n < 512;) {
        const record *r = &rs->v[i];
        if (r->outcome == REC_OK && r->end_ns && r->first_ns && r->send_ns) v[n++] = (r->first_ns - r->send_ns) / 1e6;
    }
    if (!n) return NAN;
    /* small insertion sort: at most 512 values once a second */
    for (int i = 1; i < n; i++) { double x = v[i]; int j = i - 1; while (j >= 0 && v[j] > x) { v[j + 1] = v[j]; j--; } v[j + 1] = x; }
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

static int64_t next_gap(run_state *s) {
    if (s->p->trace) {
        /* trace replay: gap between consecutive timestamps of the dataset */
        size_t k = s->scheduled % s->ds->n;
        if (k == 0) return 0;
        int64_t a = s->ds->items[k - 1].timestamp_ns, b = s->ds->items[k].timestamp_ns;
        return b > a ? b - a : 0;
    }
    return arrival_next_gap_ns(&s->p->arr, &s->r);
}

int load_run(const load_plan *p, const client_opts *co, const dataset *ds, recset *recs,
             volatile sig_atomic_t *stop, load_progress_fn progress, void *ctx,
             load_outcome *out, char *err, size_t errlen) {
    run_state s = { .p = p, .ds = ds, .recs = recs };
    memset(out, 0, sizeof *out);
    s.total = p->requests ? p->requests + p->warmup : SIZE_MAX;
    s.deadline_ns = INT64_MAX;
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
        s.user_ready_ns = malloc(sizeof *s.user_ready_ns * (size_t)p->concurrency);
        if (!s.user_ready_ns) { client_free(s.c); snprintf(err, errlen, "out of memory"); return -1; }
    }
    int64_t t0 = clock_now_ns();
    out->start_ns = t0;
    if (p->duration_ns > 0) s.deadline_ns = t0 + p->duration_ns;
    if (closed) for (int u = 0; u < p->concurrency; u++) s.user_ready_ns[u] = t0;
    s.next_arrival_ns = t0;
    int64_t tick_ns = p->progress_interval_ns > 0 ? p->progress_interval_ns : NS_PER_S;
    int64_t next_progress = t0 + tick_ns;
    int64_t grace_end = INT64_MAX;

    for (;;) {
        int64_t now = clock_now_ns();
        if (stop && *stop) { out->interrupted = true; break; }
        int64_t wake = now + NS_PER_S;
        if (closed) {
            for (int u = 0; u < p->concurrency; u++) {
                int64_t ready = s.user_ready_ns[u];
                if (ready == INT64_MAX || ready == INT64_MIN) continue;   /* busy, or done for good */
                if (!more_to_schedule(&s, ready)) { s.user_ready_ns[u] = INT64_MIN; continue; }
                if (ready <= now) {
                    s.user_ready_ns[u] = INT64_MAX;
                    size_t idx = new_request(&s, ready, (uint16_t)u);
                    if (idx == SIZE_MAX) { s.user_ready_ns[u] = INT64_MIN; continue; }
                    submit(&s, idx);
                } else if (ready != INT64_MIN && ready < wake) wake = ready;
            }
        } else {
            while (more_to_schedule(&s, s.next_arrival_ns) && s.next_arrival_ns <= now) {
                size_t idx = new_request(&s, s.next_arrival_ns, 0);
                if (idx == SIZE_MAX || fifo_push(&s, idx) < 0) { s.total = s.scheduled; break; }
                s.next_arrival_ns += next_gap(&s);
            }
            while (fifo_len(&s) && (!p->max_concurrency || client_in_flight(s.c) < (size_t)p->max_concurrency)) {
                size_t idx = s.fifo[s.fifo_head++ % s.fifo_cap];
                submit(&s, idx);
            }
            if (more_to_schedule(&s, s.next_arrival_ns) && s.next_arrival_ns < wake) wake = s.next_arrival_ns;
        }
        /* closed loop: no user may start another request once the count or the duration is
         * reached; open loop: the next arrival falls outside the plan */
        bool scheduling_over = closed ? !more_to_schedule(&s, now) : !more_to_schedule(&s, s.next_arrival_ns);
        if (scheduling_over && client_in_flight(s.c) == 0 && fifo_len(&s) == 0) break;
        if (scheduling_over && s.deadline_ns != INT64_MAX && grace_end == INT64_MAX) grace_end = (now > s.deadline_ns ? now : s.deadline_ns) + p->grace_ns;
        if (now >= grace_end) { out->grace_expired = true; break; }
        if (grace_end < wake) wake = grace_end;
        if (progress && now >= next_progress) {
            load_progress pr = {
                .planned = p->requests ? p->requests + p->warmup : 0, .sent = s.scheduled - fifo_len(&s),
                .finished = s.finished, .failed = s.failed, .in_flight = client_in_flight(s.c),
                .queued = fifo_len(&s), .elapsed_ns = now - t0, .ttft_p50_ms = recent_ttft_p50_ms(recs),
                .rate_per_s = s.finished / ((now - t0) / 1e9),
            };
            progress(ctx, &pr);
        }
        if (now >= next_progress) next_progress = now + tick_ns;
        if (next_progress < wake) wake = next_progress;
        client_poll(s.c, wake);
    }
    /* whatever is still in flight or queued is cancelled, and says so */
    client_abort_all(s.c, REC_ERR_CANCELLED);
    while (fifo_len(&s)) {
        record *r = &recs->v[s.fifo[s.fifo_head++ % s.fifo_cap]];
        r->outcome = REC_ERR_CANCELLED;
        if (!r->error) r->error = strdup("cancelled: never sent (still in the client queue when the run stopped)");
    }
    out->end_ns = clock_now_ns();
    client_free(s.c);
    free(s.fifo);
    free(s.user_ready_ns);
    return 0;
}
