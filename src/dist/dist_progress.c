/* dist_progress — the job during a run: followers report their counters to rank 0 at the
 * runner's progress ticks (which are also their heartbeats) and take rank 0's stop; rank 0 sums
 * the counters for the live line and the sweep's over-saturation detector, notices silent
 * ranks, and passes a stop (Ctrl-C, an early stop) on to every rank. Ranks that only sample
 * telemetry idle here until rank 0 ends their run. */
#include "dist/dist_int.h"
#include "common/stop.h"
#include "common/clock.h"
#include "common/log.h"
#include <stdlib.h>
#include <string.h>
#include <time.h>

struct dist_progress {
    dist *d;
    load_progress_fn user;
    void *user_ctx;
    ds_stop_flag *stop;
};

dist_progress *dist_progress_new(dist *d, load_progress_fn user, void *user_ctx, ds_stop_flag *stop) {
    dist_progress *pr = calloc(1, sizeof *pr);
    if (pr) *pr = (dist_progress){ d, user, user_ctx, stop };
    return pr;
}

void dist_progress_free(dist_progress *pr) { free(pr); }

/* Rank 0: reads every waiting progress message. */
static void drain_progress(dist *d) {
    int from;
    while (dist_probe(d, -1, TAG_PROGRESS, &from)) {
        void *b;
        size_t n;
        if (dist_recv(d, from, TAG_PROGRESS, &b, &n, clock_now_ns() + d->o.rank_timeout_ns) != 0) return;
        if (n == sizeof(msg_progress) && d->ri[from].stage != RS_LOST) memcpy(&d->ri[from].prog, b, n);
        free(b);
    }
}

static void check_silent(dist *d, const char *when) {
    int64_t now = clock_now_ns();
    for (int r = 1; r < d->size; r++) {
        rank_info *ri = &d->ri[r];
        if (ri->stage == RS_LOST || ri->stage == RS_DONE || now - ri->heard_ns <= d->o.rank_timeout_ns) continue;
        char why[160];
        snprintf(why, sizeof why, "silent for %.0f s %s (the process died or hangs)", (now - ri->heard_ns) / 1e9, when);
        dist_mark_lost(d, r, why);
    }
}

void dist_send_stop(dist *d) {
    if (d->stop_sent) return;
    d->stop_sent = true;
    msg_ctrl c = { CTRL_STOP, d->run_seq };
    for (int r = 1; r < d->size; r++)
        if (d->ri[r].stage != RS_LOST) dist_post(d, r, TAG_CTRL, &c, sizeof c);
}

static void root_tick(dist_progress *pr, const load_progress *p) {
    dist *d = pr->d;
    drain_progress(d);
    check_silent(d, "during the run");
    load_progress sum = *p;
    for (int r = 1; r < d->size; r++) {
        const msg_progress *q = &d->ri[r].prog;
        if (d->ri[r].stage == RS_LOST) continue;
        sum.sent += (size_t)q->sent;
        sum.finished += (size_t)q->finished;
        sum.failed += (size_t)q->failed;
        sum.in_flight += (size_t)q->in_flight;
        sum.queued += (size_t)q->queued;
    }
    if (sum.elapsed_ns > 0) sum.rate_per_s = sum.finished / (sum.elapsed_ns / 1e9);
    if (pr->user) pr->user(pr->user_ctx, &sum);
    /* a stop from a signal or from the user's callback (the sweep's detector) reaches every rank */
    if (pr->stop && *pr->stop && !d->stop_sent) { dist_trace(d, "stop seen in the run: passing it on"); dist_send_stop(d); }
    dist_heartbeat(d);
}

static void follower_tick(dist_progress *pr, const load_progress *p) {
    dist *d = pr->d;
    msg_progress m = { (int64_t)p->sent, (int64_t)p->finished, (int64_t)p->failed, (int64_t)p->in_flight,
                       (int64_t)p->queued, 0 };
    d->last_prog = m;
    dist_post(d, 0, TAG_PROGRESS, &m, sizeof m);
    d->hb_sent_ns = clock_now_ns();
    msg_ctrl c;
    int k;
    if (pr->stop && *pr->stop && !d->stop_traced) { d->stop_traced = true; dist_trace(d, "stop seen in the run"); }
    while ((k = dist_take_ctrl(d, &c)) != 0) {
        if (k == CTRL_STOP && c.code == d->run_seq) { d->stop_received = true; if (pr->stop) *pr->stop = 1; }
        if (k == CTRL_END) { d->end_code = c.code; d->root_ended = true; if (pr->stop) *pr->stop = 1; }
    }
    if (clock_now_ns() - d->root_heard_ns > dist_root_timeout_ns(d) && !d->root_lost) {
        log_error("rank 0 (the job's lead) silent for %.0f s: this rank stops", dist_root_timeout_ns(d) / 1e9);
        d->root_lost = true;
        if (pr->stop) *pr->stop = 1;
    }
    dist_reap(d);
}

void dist_progress_tick(void *ctx, const load_progress *p) {
    dist_progress *pr = ctx;
    if (pr->d->rank == 0) root_tick(pr, p);
    else follower_tick(pr, p);
}

void dist_idle_run(dist *d, dist_progress *pr, load_outcome *lo) {
    memset(lo, 0, sizeof *lo);
    lo->start_ns = d->plan.start_ns;
    int64_t tick = d->plan.progress_interval_ns > 0 ? d->plan.progress_interval_ns : NS_PER_S;
    load_progress p = { 0 };
    while (!(pr->stop && *pr->stop) && !d->root_lost) {
        struct timespec ts = { (time_t)(tick / NS_PER_S), (long)(tick % NS_PER_S) };
        nanosleep(&ts, NULL);
        p.elapsed_ns = clock_now_ns() - lo->start_ns;
        follower_tick(pr, &p);
    }
    lo->end_ns = clock_now_ns();
    /* rank 0's stop is a sampler's normal end; anything else stopped it early */
    lo->interrupted = !d->stop_received;
}
