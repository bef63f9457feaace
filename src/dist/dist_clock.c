/* dist_clock — each follower's CLOCK_MONOTONIC against rank 0's, by MPI ping-pong: the
 * exchange with the shortest round trip bounds the offset best (half that round trip), as in
 * NTP's clock filter. Measured when a rank joins and again after every run, so drift over a run
 * is seen, and removed from the timestamps when it is larger than the two measurements' errors. */
#include "dist/dist_int.h"
#include "common/clock.h"
#include "metrics/stats.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* At least EXCHANGES_MIN exchanges; more, up to EXCHANGES, while the shortest round trip is over
 * RTT_GOOD_NS: on a loaded host (or one whose cores the ranks share) one quick exchange in a
 * longer series is what bounds the offset well. */
#define EXCHANGES_MIN 32
#define EXCHANGES 128
#define RTT_GOOD_NS (40 * NS_PER_US)

typedef struct { int32_t n, end_of_run; } msg_sync;
typedef struct { int32_t k, last; } msg_ping;
typedef struct { int64_t tm; } msg_pong;

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

static double rtt_value(void *rtts, uint64_t rank) { return (double)((const int64_t *)rtts)[rank]; }

int dist_clock_estimate(const int64_t *t1, const int64_t *tm, const int64_t *t2, int n, dist_clock *c) {
    memset(c, 0, sizeof *c);
    int best = -1;
    int64_t rtts[EXCHANGES * 4];
    int m = 0;
    for (int i = 0; i < n; i++) {
        int64_t rtt = t2[i] - t1[i];
        if (rtt < 0 || t1[i] <= 0) continue;            /* a failed exchange */
        if (m < (int)(sizeof rtts / sizeof rtts[0])) rtts[m++] = rtt;
        if (best < 0 || rtt < t2[best] - t1[best]) best = i;
    }
    if (best < 0) return -1;
    int64_t rtt = t2[best] - t1[best];
    c->offset_ns = tm[best] - (t1[best] + rtt / 2);
    c->uncertainty_ns = (rtt + 1) / 2;
    c->rtt_min_ns = rtt;
    qsort(rtts, (size_t)m, sizeof rtts[0], cmp_i64);
    c->rtt_median_ns = (int64_t)llround(stats_percentile_ranked((uint64_t)m, 50, rtt_value, rtts));
    c->samples = m;
    return 0;
}

/* Busy-waits (no nap: a nap would lengthen the round trip) for a message from src, heartbeating
 * the other ranks meanwhile (a rank that died mid-exchange costs a rank timeout here). */
static int await(dist *d, int src, int tag, int64_t deadline_ns, void **b, size_t *n) {
    for (unsigned spin = 0; !dist_probe(d, src, tag, NULL); spin++) {
        if (clock_now_ns() > deadline_ns) return -1;
        if (spin % 4096 == 4095) dist_heartbeat(d);
    }
    return dist_recv(d, src, tag, b, n, deadline_ns);
}

int dist_clock_measure(dist *d, int r, bool end_of_run) {
    rank_info *ri = &d->ri[r];
    msg_sync s = { EXCHANGES, end_of_run };
    if (dist_post(d, r, TAG_SYNC, &s, sizeof s) != 0) return -1;
    int64_t deadline = clock_now_ns() + d->o.rank_timeout_ns;
    /* the follower decides how many exchanges it needs and says which is its last */
    for (int k = 0; k < EXCHANGES; k++) {
        void *b;
        size_t n;
        if (await(d, r, TAG_PING, deadline, &b, &n) != 0) return -1;
        msg_ping ping = { 0, 1 };
        if (n == sizeof ping) memcpy(&ping, b, sizeof ping);
        free(b);
        msg_pong p = { clock_now_ns() };
        if (dist_post(d, r, TAG_PONG, &p, sizeof p) != 0) return -1;
        if (ping.last) break;
    }
    void *b;
    size_t n;
    if (await(d, r, TAG_CLOCK, deadline, &b, &n) != 0) return -1;
    dist_clock c;
    int ok = n == sizeof c;
    if (ok) memcpy(&c, b, sizeof c);
    free(b);
    if (!ok) return -1;
    if (end_of_run) { ri->clk_end = c; ri->clk_end_at_ns = clock_now_ns(); }
    else { ri->clk = c; ri->clk_at_ns = clock_now_ns(); ri->clk_end = (dist_clock){ 0 }; ri->clk_end_at_ns = 0; }
    return 0;
}

int dist_clock_answer(dist *d) {
    void *b;
    size_t n;
    int64_t deadline = clock_now_ns() + d->o.rank_timeout_ns;
    if (dist_recv(d, 0, TAG_SYNC, &b, &n, deadline) != 0) return -1;
    msg_sync s = { 0, 0 };
    if (n == sizeof s) memcpy(&s, b, sizeof s);
    free(b);
    if (s.n <= 0 || s.n > EXCHANGES) return -1;
    int64_t t1[EXCHANGES], tm[EXCHANGES], t2[EXCHANGES], rtt_min = INT64_MAX;
    int done = 0;
    for (int k = 0; k < s.n; k++) {
        bool last = k + 1 == s.n || (k + 1 >= EXCHANGES_MIN && rtt_min <= RTT_GOOD_NS);
        msg_ping p = { k, last };
        t1[k] = clock_now_ns();
        if (dist_post(d, 0, TAG_PING, &p, sizeof p) != 0) return -1;
        if (await(d, 0, TAG_PONG, deadline, &b, &n) != 0) return -1;
        t2[k] = clock_now_ns();
        msg_pong q = { 0 };
        if (n == sizeof q) memcpy(&q, b, sizeof q);
        free(b);
        tm[k] = q.tm;
        if (t2[k] - t1[k] < rtt_min) rtt_min = t2[k] - t1[k];
        done = k + 1;
        if (last) break;
    }
    dist_clock c;
    if (dist_clock_estimate(t1, tm, t2, done, &c) != 0) return -1;
    int64_t at = t1[0] + (t2[done - 1] - t1[0]) / 2;
    if (s.end_of_run) { d->clk_end = c; d->clk_end_at_ns = at; }
    else { d->clk = c; d->clk_at_ns = at; d->clk_end = (dist_clock){ 0 }; d->clk_end_at_ns = 0; }
    return dist_post(d, 0, TAG_CLOCK, &c, sizeof c);
}

/* The drift is used when the two estimates differ by more than their errors together: then the
 * clocks ran at measurably different rates and a line through both is the better offset. */
static bool drift_measurable(const dist *d) {
    if (!d->clk_end_at_ns || d->clk_end_at_ns <= d->clk_at_ns) return false;
    int64_t diff = d->clk_end.offset_ns - d->clk.offset_ns;
    if (diff < 0) diff = -diff;
    return diff > d->clk.uncertainty_ns + d->clk_end.uncertainty_ns;
}

int64_t dist_offset_at(const dist *d, int64_t t_ns) {
    if (!drift_measurable(d)) return d->clk.offset_ns;
    double slope = (double)(d->clk_end.offset_ns - d->clk.offset_ns) / (double)(d->clk_end_at_ns - d->clk_at_ns);
    return d->clk.offset_ns + (int64_t)(slope * (double)(t_ns - d->clk_at_ns));
}
