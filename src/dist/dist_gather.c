/* dist_gather — the end of a run. Each follower, when its run is over, says so; rank 0 measures
 * its clock again (drift), the follower moves its records onto rank 0's clock and sends them with
 * its pooled-ITL histograms and client cost (part A). When every rank has sent part A (or is
 * lost), rank 0 knows the timeline's axes (first send, length) and asks for tokens per second on
 * them and the telemetry over the job's window (part B). Bins and histograms add exactly, so the
 * merged summary is the one a single process would compute from all the records.
 *
 * Every wait is bounded: a rank silent for the rank timeout is lost; after a stop (Ctrl-C, and
 * mpirun's SIGTERM, which it follows with SIGKILL a second later) rank 0 waits 0.7 s at most. */
#include "dist/dist_int.h"
#include "common/stop.h"
#include "common/clock.h"
#include "common/log.h"
#include "telemetry/telemetry.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* after a stop: part A within 0.45 s, part B within 0.25 s of the axes (mpirun's SIGKILL follows
 * its SIGTERM by 1 s, and rank 0 still has to write) */
#define STOP_GRACE_A_NS (450 * NS_PER_MS)
#define STOP_GRACE_B_NS (250 * NS_PER_MS)

static void nap(void) {
    struct timespec ts = { 0, 100000 };
    nanosleep(&ts, NULL);
}

static int alloc_parts(summary_parts *p) {
    p->itl = malloc(sizeof *p->itl);
    p->itl_tok = malloc(sizeof *p->itl_tok);
    if (!p->itl || !p->itl_tok) return -1;
    hdr_init(p->itl);
    hdr_init(p->itl_tok);
    return 0;
}

static void free_parts(summary_parts *p) {
    free(p->itl);
    free(p->itl_tok);
    free(p->tokens);
    memset(p, 0, sizeof *p);
}

void dist_merged_free(dist_merged *m) {
    recset_free(&m->recs);
    free_parts(&m->whole);
    for (int c = 0; c < DIST_MAX_CLASSES; c++) free_parts(&m->cls[c]);
    json_decref(m->client);
    json_decref(m->telemetry);
    json_decref(m->telemetry_summary);
    json_decref(m->section);
    memset(m, 0, sizeof *m);
}

/* The ITL histograms of recs for the whole run and each class. */
static void pack_hists(dist_buf *b, const recset *recs, int n_classes) {
    for (int c = -1; c < n_classes; c++) {
        summary_parts p = { 0 };
        if (alloc_parts(&p) < 0) { b->oom = 1; free_parts(&p); return; }
        summary_parts_add(&p, recs, c);
        dist_pack_hist(b, p.itl);
        dist_pack_hist(b, p.itl_tok);
        dbuf_i64(b, (int64_t)p.multi_token_chunks);
        free_parts(&p);
    }
}

static int unpack_hists(dist_rd *r, dist_merged *m) {
    for (int c = -1; c < m->n_classes; c++) {
        summary_parts *p = c < 0 ? &m->whole : &m->cls[c];
        if (dist_unpack_hist_merge(r, p->itl) < 0 || dist_unpack_hist_merge(r, p->itl_tok) < 0) return -1;
        p->multi_token_chunks += (uint64_t)drd_i64(r);
    }
    return r->bad ? -1 : 0;
}

static void pack_json(dist_buf *b, const json_t *j) {
    char *s = j ? json_dumps(j, JSON_COMPACT) : NULL;
    dbuf_str(b, s);
    free(s);
}

static json_t *unpack_json(dist_rd *r) {
    char *s = drd_str(r);
    json_t *j = s ? json_loads(s, 0, NULL) : NULL;
    free(s);
    return j;
}

/* ---- followers ---- */

/* Waits for CTRL kind `want` (other kinds pass, END ends). 0 got it, -2 the job ended, -1 lost rank 0. */
static int await_ctrl(dist *d, int want) {
    for (;;) {
        int rc = dist_wait(d, 0, TAG_CTRL, NULL, INT64_MAX);
        if (rc != 0) return rc;
        msg_ctrl c;
        int k = dist_take_ctrl(d, &c);
        if (k == want) return 0;
        if (k == CTRL_END) { d->end_code = c.code; d->root_ended = true; return -2; }
    }
}

static int gather_follower(dist *d, recset *recs, int n_classes, const load_outcome *lo, const dist_local *loc,
                           char *err, size_t errlen) {
    dist_trace(d, "run over (%s)", lo->interrupted ? "stopped" : "complete");
    d->last_prog.final = 1;
    dist_post(d, 0, TAG_FINISHED, &d->last_prog, sizeof d->last_prog);
    int rc = await_ctrl(d, CTRL_COLLECT);   /* rank 0 measures this clock again meanwhile */
    if (rc == -2) return 0;
    if (rc != 0) { snprintf(err, errlen, "rank 0 (the job's lead) went silent: this rank's results are lost"); return -1; }
    dist_shift_records(recs, d);
    dist_buf b = { 0 };
    dbuf_i64(&b, n_classes);
    dbuf_i64(&b, lo->start_ns + dist_offset_at(d, lo->start_ns));
    dbuf_i64(&b, lo->end_ns + dist_offset_at(d, lo->end_ns));
    dbuf_i64(&b, lo->interrupted && !d->stop_received);   /* rank 0 knows of its own stops */
    dbuf_i64(&b, lo->grace_expired);
    dist_pack_records(&b, recs, d->want_chunks);
    pack_hists(&b, recs, n_classes);
    pack_json(&b, loc->client);
    if (b.oom || dist_post(d, 0, TAG_PART_A, b.p, b.n) != 0) {
        free(b.p);
        snprintf(err, errlen, "out of memory sending this rank's results");
        return -1;
    }
    free(b.p);
    void *a;
    size_t n;
    rc = dist_wait(d, 0, TAG_AXIS, NULL, INT64_MAX);
    if (rc == -2) return 0;
    if (rc != 0 || dist_recv(d, 0, TAG_AXIS, &a, &n, clock_now_ns() + d->o.rank_timeout_ns) != 0) {
        snprintf(err, errlen, "rank 0 (the job's lead) went silent before the timeline was merged");
        return -1;
    }
    dist_rd r = { a, n, 0, 0 };
    int64_t start = drd_i64(&r), end = drd_i64(&r), n_axes = drd_i64(&r);
    dist_buf out = { 0 };
    dbuf_i64(&out, n_axes);
    for (int64_t k = 0; k < n_axes && !r.bad; k++) {
        summary_parts p = { 0 };
        p.first_send_ns = drd_i64(&r);
        int64_t bins = drd_i64(&r);
        if (r.bad || bins < 0 || bins > 7 * 24 * 3600) { r.bad = 1; break; }
        p.n_bins = (size_t)bins;
        p.tokens = calloc(p.n_bins ? p.n_bins : 1, sizeof *p.tokens);
        if (!p.tokens) { out.oom = 1; break; }
        summary_parts_add(&p, recs, (int)k - 1);     /* axis 0: the whole run; k: class k - 1 */
        dbuf_i64(&out, bins);
        dbuf_put(&out, p.tokens, p.n_bins * sizeof *p.tokens);
        free(p.tokens);
    }
    free(a);
    /* the job's window on this clock */
    json_t *series = NULL, *summary = NULL;
    if (loc->tel && !r.bad) {
        int64_t off = dist_offset_at(d, start - d->clk.offset_ns);
        series = telemetry_series_json(loc->tel, start - off);
        summary = telemetry_summary_json(loc->tel, start - off, end - off, 0);
    }
    pack_json(&out, series);
    pack_json(&out, summary);
    json_decref(series);
    json_decref(summary);
    rc = r.bad || out.oom || dist_post(d, 0, TAG_PART_B, out.p, out.n) != 0 ? -1 : 0;
    free(out.p);
    if (rc) snprintf(err, errlen, "could not send this rank's timeline");
    return rc;
}

/* ---- rank 0 ---- */

typedef struct {
    dist *d;
    dist_merged *m;
    ds_stop_flag *stop;
    int64_t stop_deadline;          /* after a stop, the last moment to wait for part A (0: none) */
    int64_t b_deadline;             /* after a stop, the last moment to wait for part B (0: none) */
    bool axes_sent;
    int64_t *axis_first;            /* [1 + n_classes] */
    size_t *axis_bins;
} root_gather;

static void on_finished(root_gather *g, int r) {
    dist *d = g->d;
    void *b;
    size_t n;
    if (dist_recv(d, r, TAG_FINISHED, &b, &n, clock_now_ns() + d->o.rank_timeout_ns) != 0) return;
    if (n == sizeof(msg_progress)) memcpy(&d->ri[r].prog, b, n);
    free(b);
    if (d->ri[r].stage != RS_RUNNING) return;
    dist_trace(d, "rank %d finished", r);
    /* the closing clock measurement: the drift over the run (skipped after a stop: no time) */
    if (!g->stop_deadline && dist_clock_measure(d, r, true) != 0) {
        dist_mark_lost(d, r, "did not answer the closing clock measurement");
        return;
    }
    msg_ctrl c = { CTRL_COLLECT, d->run_seq };
    dist_post(d, r, TAG_CTRL, &c, sizeof c);
    d->ri[r].stage = RS_FINISHED;
}

static void on_part_a(root_gather *g, int r) {
    dist *d = g->d;
    dist_merged *m = g->m;
    void *b;
    size_t n;
    if (dist_recv(d, r, TAG_PART_A, &b, &n, clock_now_ns() + d->o.rank_timeout_ns) != 0) {
        dist_mark_lost(d, r, "its results stopped arriving midway");
        return;
    }
    d->ri[r].bytes = n;
    dist_rd rd = { b, n, 0, 0 };
    int64_t nc = drd_i64(&rd), start = drd_i64(&rd), end = drd_i64(&rd), intr = drd_i64(&rd), grace = drd_i64(&rd);
    (void)start;
    size_t before = m->recs.n;
    int bad = rd.bad || nc != m->n_classes || dist_unpack_records(&rd, &m->recs) != 0 || unpack_hists(&rd, m) != 0;
    json_t *client = bad ? NULL : unpack_json(&rd);
    free(b);
    if (bad) {
        /* a part that does not read back is not merged: drop what was appended */
        for (size_t i = before; i < m->recs.n; i++) record_free(&m->recs.v[i]);
        m->recs.n = before;
        dist_mark_lost(d, r, "sent results that do not read back (different dsperf versions?)");
        return;
    }
    rank_info *ri = &d->ri[r];
    ri->records = m->recs.n - before;
    json_decref(ri->client);
    ri->client = client;
    if (end > m->lo.end_ns) m->lo.end_ns = end;
    if (intr) m->lo.interrupted = true;
    if (grace) m->lo.grace_expired = true;
    ri->stage = RS_PART_A;
    dist_trace(d, "rank %d part A: %zu records", r, ri->records);
}

static void on_part_b(root_gather *g, int r) {
    dist *d = g->d;
    dist_merged *m = g->m;
    void *b;
    size_t n;
    if (dist_recv(d, r, TAG_PART_B, &b, &n, clock_now_ns() + d->o.rank_timeout_ns) != 0) {
        dist_mark_lost(d, r, "its timeline stopped arriving midway (its records are merged, its tokens per second are not)");
        return;
    }
    d->ri[r].bytes += n;
    dist_rd rd = { b, n, 0, 0 };
    int64_t n_axes = drd_i64(&rd);
    for (int64_t k = 0; k < n_axes && k <= m->n_classes && !rd.bad; k++) {
        summary_parts *p = k == 0 ? &m->whole : &m->cls[k - 1];
        int64_t bins = drd_i64(&rd);
        if (bins != (int64_t)p->n_bins) { rd.bad = 1; break; }
        for (int64_t i = 0; i < bins; i++) { long v; drd_get(&rd, &v, sizeof v); p->tokens[i] += v; }
    }
    rank_info *ri = &d->ri[r];
    if (!rd.bad) { ri->tel_series = unpack_json(&rd); ri->tel_summary = unpack_json(&rd); }
    free(b);
    if (rd.bad) { dist_mark_lost(d, r, "sent a timeline that does not read back"); return; }
    ri->stage = RS_DONE;
    dist_trace(d, "rank %d part B", r);
}

/* The axes, from every delivered record: rank 0 has them all once part A is in. */
static int send_axes(root_gather *g) {
    dist *d = g->d;
    dist_merged *m = g->m;
    dist_buf b = { 0 };
    dbuf_i64(&b, m->lo.start_ns);
    dbuf_i64(&b, m->lo.end_ns);
    dbuf_i64(&b, 1 + m->n_classes);
    for (int c = -1; c < m->n_classes; c++) {
        summary_parts *p = c < 0 ? &m->whole : &m->cls[c];
        summary_axis(&m->recs, c, &p->first_send_ns, &p->n_bins);
        p->tokens = calloc(p->n_bins ? p->n_bins : 1, sizeof *p->tokens);
        if (!p->tokens) { free(b.p); return -1; }
        dbuf_i64(&b, p->first_send_ns);
        dbuf_i64(&b, (int64_t)p->n_bins);
    }
    if (b.oom) { free(b.p); return -1; }
    for (int r = 1; r < d->size; r++) {
        if (d->ri[r].stage != RS_PART_A) continue;
        dist_post(d, r, TAG_AXIS, b.p, b.n);
        d->ri[r].stage = RS_AXIS_SENT;
    }
    free(b.p);
    g->axes_sent = true;
    dist_trace(d, "axes sent");
    return 0;
}

/* A loop turn: everything that waits is handled; returns true when every follower is done or lost. */
static bool gather_turn(root_gather *g, int *rc) {
    dist *d = g->d;
    int from;
    int64_t now = clock_now_ns();
    while (dist_probe(d, -1, TAG_PROGRESS, &from)) {
        void *b;
        size_t n;
        if (dist_recv(d, from, TAG_PROGRESS, &b, &n, now + d->o.rank_timeout_ns) != 0) break;
        free(b);
    }
    if (dist_probe(d, -1, TAG_FINISHED, &from)) on_finished(g, from);
    if (dist_probe(d, -1, TAG_PART_A, &from)) on_part_a(g, from);
    if (dist_probe(d, -1, TAG_PART_B, &from)) on_part_b(g, from);
    bool load_in = true, all_a = true, all_done = true;
    for (int r = 1; r < d->size; r++) {
        rank_stage s = d->ri[r].stage;
        if (s == RS_LOST) continue;
        if (s < RS_PART_A) { all_a = false; if (d->ri[r].threads > 0) load_in = false; }
        if (s != RS_DONE) all_done = false;
    }
    /* ranks without shards (telemetry only, or no user of this run's) wait until the last load rank is in */
    if (load_in && !d->samplers_stopped) {
        d->samplers_stopped = true;
        msg_ctrl c = { CTRL_STOP, d->run_seq };
        for (int r = 1; r < d->size; r++)
            if (d->ri[r].threads == 0 && d->ri[r].stage == RS_RUNNING) dist_post(d, r, TAG_CTRL, &c, sizeof c);
    }
    if (all_a && !g->axes_sent) {
        if (send_axes(g) != 0) { *rc = -1; return true; }
        if (g->stop_deadline) g->b_deadline = now + STOP_GRACE_B_NS;
    }
    if (all_done && g->axes_sent) return true;
    if (g->stop && *g->stop && !g->stop_deadline) {
        dist_trace(d, "stop during the gather");
        dist_send_stop(d);
        g->stop_deadline = now + STOP_GRACE_A_NS;
    }
    for (int r = 1; r < d->size; r++) {
        rank_info *ri = &d->ri[r];
        if (ri->stage == RS_LOST || ri->stage == RS_DONE) continue;
        if (g->stop_deadline && now > g->stop_deadline && ri->stage < RS_PART_A) {
            dist_mark_lost(d, r, "no results within 0.45 s of the stop (mpirun kills ranks 1 s after its SIGTERM)");
        } else if (g->b_deadline && now > g->b_deadline) {
            dist_mark_lost(d, r, "its timeline did not come within 0.25 s (after a stop); its records are merged, its tokens per second are not");
        } else if (now - ri->heard_ns > d->o.rank_timeout_ns) {
            char why[160];
            snprintf(why, sizeof why, "silent for %.0f s %s (the process died or hangs)", (now - ri->heard_ns) / 1e9,
                     ri->stage == RS_RUNNING ? "during the run" : "while sending its results");
            dist_mark_lost(d, r, why);
        }
    }
    dist_heartbeat(d);
    return false;
}

/* Rank 0's own part: its records move (not copy) into the merged set. */
static int take_own(dist_merged *m, recset *recs, int n_classes) {
    for (int c = -1; c < n_classes; c++) {
        summary_parts *p = c < 0 ? &m->whole : &m->cls[c];
        if (alloc_parts(p) < 0) return -1;
        summary_parts_add(p, recs, c);
    }
    m->recs = *recs;
    recset_init(recs);
    return 0;
}

static int by_index(const void *a, const void *b) {
    const record *x = a, *y = b;
    return x->index < y->index ? -1 : x->index > y->index;
}


static int gather_root(dist *d, recset *recs, int n_classes, const load_outcome *lo, const dist_local *loc,
                       ds_stop_flag *stop, dist_merged *m, char *err, size_t errlen) {
    m->n_classes = n_classes;
    m->lo = *lo;
    m->lo.start_ns = d->plan.start_ns;
    m->lo.client_threads = d->plan.shard_total;
    size_t n_own = recs->n;
    if (take_own(m, recs, n_classes) < 0) { snprintf(err, errlen, "out of memory merging the ranks' results"); return -1; }
    recset own_view = { m->recs.v, n_own, n_own };
    root_gather g = { .d = d, .m = m, .stop = stop };
    dist_trace(d, "gather: own run over (%s)", stop && *stop ? "stopped" : "complete");
    if (stop && *stop) { dist_send_stop(d); g.stop_deadline = clock_now_ns() + STOP_GRACE_A_NS; }
    int rc = 0;
    while (!gather_turn(&g, &rc)) nap();
    if (rc < 0) { snprintf(err, errlen, "out of memory merging the ranks' results"); return -1; }
    /* rank 0's own tokens per second (its records are first in the set, on its own clock) */
    own_view.v = m->recs.v;
    for (int c = -1; c < n_classes; c++) {
        summary_parts p = c < 0 ? m->whole : m->cls[c];
        p.itl = p.itl_tok = NULL;
        summary_parts_add(&p, &own_view, c);
    }
    qsort(m->recs.v, m->recs.n, sizeof *m->recs.v, by_index);
    d->ri[0].records = n_own;
    m->client = dist_client_merge(d, loc->client);
    dist_telemetry_merge(d, m, loc);
    char *w = m->partial_reason;
    size_t cap = sizeof m->partial_reason, len = 0;
    for (int r = 1; r < d->size; r++) {
        rank_info *ri = &d->ri[r];
        if (ri->stage != RS_LOST) continue;
        m->lost++;
        len += (size_t)snprintf(w + len, len < cap ? cap - len : 0, "%srank %d (%s): %s", m->lost > 1 ? "; " : "", r,
                                ri->host, ri->why);
        if (len >= cap) len = cap - 1;
    }
    if (m->lost) {
        char tmp[sizeof m->partial_reason + 96];
        snprintf(tmp, sizeof tmp, "lost %d of %d ranks; results cover the ranks that delivered: %s", m->lost, d->size,
                 m->partial_reason);
        memcpy(m->partial_reason, tmp, sizeof m->partial_reason - 1);
        m->partial_reason[sizeof m->partial_reason - 1] = 0;
    }
    m->section = dist_section(d, m);
    dist_trace(d, "gather done: %zu records, %d lost", m->recs.n, m->lost);
    return 0;
}

int dist_gather(dist *d, recset *recs, int n_classes, const load_outcome *lo, const dist_local *local,
                ds_stop_flag *stop, dist_merged *m, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    if (n_classes > DIST_MAX_CLASSES) n_classes = DIST_MAX_CLASSES;
    if (d->rank > 0) return gather_follower(d, recs, n_classes, lo, local, err, errlen);
    return gather_root(d, recs, n_classes, lo, local, stop, m, err, errlen);
}
