/* Bursts: many requests scheduled at one instant (issue 27). The client prepares each request
 * ahead of its time (its bytes, its connection) and at the instant only the sends are left
 * (client_submit_at). What is tested is correctness, against `dsperf serve` on loopback: every
 * request of a burst is sent exactly once (the server's own request count) and measured, never
 * before its scheduled instant, its stamps in order, and the prepared path is the one taken. How
 * tight a burst leaves is a property of the machine: `make bench` measures it (scripts/bench_burst.sh),
 * never a test on shared cores. */
#include "harness.h"
#include "testutil.h"
#include "client/client.h"
#include "client/h1.h"
#include "common/clock.h"
#include "load/runner.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The server's count of generation requests handled (summed over its loops), from /metrics. */
static long long served_requests(const test_server *s) {
    char url[160];
    snprintf(url, sizeof url, "%s/metrics", s->url);
    char *m = test_http_get(url);
    if (!m) return -1;
    long long total = 0;
    for (char *p = m; (p = strstr(p, "\ndsperf_loop_requests_total{")); p++) {
        char *v = strchr(p + 1, '}');
        if (v) total += atoll(v + 1);
    }
    free(m);
    return total;
}

#define BURSTS 3
static const int burst_ms[BURSTS] = { 0, 300, 600 };     /* the first is due at the run's start */
static const int burst_n[BURSTS] = { 16, 96, 96 };

/* A Mooncake trace of three bursts, each of its requests at one timestamp; --arrival trace
 * schedules each at the run's start plus its offset. */
static void burst_trace(const char *path) {
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    int id = 0;
    for (int b = 0; b < BURSTS; b++)
        for (int i = 0; i < burst_n[b]; i++)
            fprintf(f, "{\"timestamp\": %d, \"input_length\": 8, \"output_length\": 3, \"hash_ids\": [%d]}\n", burst_ms[b], id++);
    fclose(f);
}

static void burst_run(int threads) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 2ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char trace[512], reqs[512], out[512], cmd[2048];
    snprintf(trace, sizeof trace, "%s/burst.trace", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/burst-%d.jsonl", harness_tmpdir(), threads);
    snprintf(out, sizeof out, "%s/burst-%d.json", harness_tmpdir(), threads);
    burst_trace(trace);
    long long before = served_requests(&s);
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --dataset mooncake:%s --arrival trace --client-threads %d --out %s --save-requests %s",
             s.url, trace, threads, out, reqs);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    CHECK_MSG(rc == 0, "bench exited %d: %s", rc, err ? err : "");
    free(err);
    long long served = served_requests(&s) - before;
    test_serve_stop(&s);
    int total = 0;
    for (int b = 0; b < BURSTS; b++) total += burst_n[b];
    /* exactly once: a request sent twice (a prepared connection retried wrongly) is counted twice */
    CHECK_MSG(served == total, "the server handled %lld requests for %d scheduled", served, total);
    json_t *r = test_load_json(out);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(test_num(r, "completed"), total);
        CHECK_EQ_INT(test_num(r, "failed"), 0);
        CHECK_EQ_INT(test_num(r, "total_output_tokens"), (long long)total * 3);
        json_decref(r);
    }
    FILE *f = fopen(reqs, "r");
    CHECK(f != NULL);
    if (!f) return;
    int *seen = calloc((size_t)total, sizeof *seen), lines = 0;
    long long sched0 = -1, burst_sched[BURSTS] = { -1, -1, -1 };
    char line[1 << 16];
    while (fgets(line, sizeof line, f)) {
        json_t *q = json_loads(line, 0, NULL);
        if (!q) continue;
        lines++;
        long long ix = json_integer_value(json_object_get(q, "index"));
        long long sched = json_integer_value(json_object_get(q, "sched_ns"));
        long long send = json_integer_value(json_object_get(q, "send_ns"));
        json_t *chunks = json_object_get(q, "chunk_ns");
        if (ix >= 0 && ix < total) seen[ix]++;
        int b = ix < burst_n[0] ? 0 : ix < burst_n[0] + burst_n[1] ? 1 : 2;
        if (ix == 0) sched0 = sched;
        /* one instant per burst: every request of it has the same scheduled time */
        if (burst_sched[b] < 0) burst_sched[b] = sched;
        CHECK_MSG(sched == burst_sched[b], "request %lld of burst %d scheduled %lld ns off its burst", ix, b, sched - burst_sched[b]);
        /* never sent before its instant (prepared ahead is not sent ahead) */
        CHECK_MSG(json_is_integer(json_object_get(q, "send_ns")), "request %lld has no send time", ix);
        CHECK_MSG(send >= sched, "request %lld sent %lld ns before its scheduled time", ix, sched - send);
        /* measured: its chunks, in order, none before the send plus the server's 5 ms */
        CHECK_EQ_INT(json_array_size(chunks), 3);
        long long prev = send;
        for (size_t k = 0; k < json_array_size(chunks); k++) {
            long long t = json_integer_value(json_array_get(chunks, k));
            CHECK_MSG(t >= prev, "request %lld: chunk %zu at %lld ns before the previous stamp", ix, k, t - prev);
            prev = t;
        }
        if (json_array_size(chunks))
            CHECK_MSG(json_integer_value(json_array_get(chunks, 0)) - send >= 5 * NS_PER_MS, "request %lld: first chunk sooner than the server's 5 ms", ix);
        CHECK(json_integer_value(json_object_get(q, "end_ns")) >= prev);
        json_decref(q);
    }
    fclose(f);
    CHECK_EQ_INT(lines, total);
    for (int i = 0; i < total; i++) CHECK_MSG(seen[i] == 1, "request %d recorded %d times", i, seen[i]);
    /* the bursts' instants are the trace's offsets from the run's start */
    for (int b = 1; b < BURSTS; b++)
        if (burst_sched[b] >= 0 && sched0 >= 0) CHECK_EQ_INT(burst_sched[b] - sched0, (long long)burst_ms[b] * NS_PER_MS);
    free(seen);
}

TEST(burst_trace_sent_once_each_never_early) { burst_run(1); }
/* the burst dealt over two client threads, each releasing its share at the same instant */
TEST(burst_trace_over_two_threads_sent_once_each_never_early) { burst_run(2); }

/* One client, in this thread: 48 requests handed over for one instant 1 s ahead. Every one armed
 * is taken off the armed list at its instant and none is sent before it; the second round takes
 * the connections the first left open when it is armed, so every one of them goes out on a
 * connection ready ahead (the counter). How many are armed (a request handed over after its
 * instant is sent at once) and how many of the first round's new connections were up by the
 * instant depend on the machine's speed, so those are counted, not assumed. With
 * DSPERF_CLIENT_ARM_US=0 nothing is prepared (the counter stays: the control that shows it tells
 * the two apart). Returns how many were armed. */
static size_t round_at(client *c, recset *rs, size_t from, int n, int64_t at_ns, bool armed) {
    dataset_item it = { .prompt = "hi", .in_tokens = 1, .max_tokens = 3, .timestamp_ns = -1, .group = -1, .cacheable_tokens = -1 };
    for (int k = 0; k < n; k++) {
        record *r = recset_add(rs);
        CHECK(r != NULL);
        if (!r) return 0;
        r->sched_ns = at_ns;
        CHECK(client_submit_at(c, from + (size_t)k, &it, at_ns) == 0);
    }
    size_t n_armed = client_armed(c);
    int64_t deadline = clock_now_ns() + 60 * NS_PER_S;
    while (client_in_flight(c) && clock_now_ns() < deadline) client_poll(c, clock_now_ns() + 10 * NS_PER_MS);
    for (int k = 0; k < n; k++) {
        const record *r = &rs->v[from + (size_t)k];
        CHECK_MSG(r->outcome == REC_OK, "request %zu: outcome %d %s", from + (size_t)k, r->outcome, r->error ? r->error : "");
        if (armed) CHECK_MSG(r->send_ns >= at_ns, "request %zu sent %lld ns before its instant", from + (size_t)k, (long long)(at_ns - r->send_ns));
        CHECK_EQ_INT(r->n_chunks, 3);
    }
    return n_armed;
}

/* A client of the local server for the burst tests (own path, completions, 64 connections); NULL
 * (checked) when it cannot be made, rs freed then. */
static client *burst_client(const test_server *s, recset *rs) {
    client_opts o = { .base_url = s->url, .api = OPENAI_COMPLETIONS, .timeout_ns = 60 * NS_PER_S, .max_connections = 64 };
    recset_init(rs);
    char err[256];
    client *c = client_new(&o, rs, NULL, NULL, err, sizeof err);
    CHECK_MSG(c != NULL, "%s", err);
    if (!c) recset_free(rs);
    return c;
}

TEST(burst_prepared_requests_leave_at_their_instant) {
    unsetenv("DSPERF_CLIENT_PATH");   /* the own path's behaviour (a run of the suite on the libcurl path sets it) */
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 2ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    for (int armed = 1; armed >= 0; armed--) {
        if (!armed) setenv("DSPERF_CLIENT_ARM_US", "0", 1);
        recset rs;
        client *c = burst_client(&s, &rs);
        if (!c) continue;
        CHECK(armed ? client_arm_lead_ns(c) > 0 : client_arm_lead_ns(c) == 0);
        long long served = served_requests(&s);
        h1_counts before = h1_thread_counts();
        size_t armed1 = round_at(c, &rs, 0, 48, clock_now_ns() + NS_PER_S, armed);
        h1_counts first = h1_thread_counts();
        size_t armed2 = round_at(c, &rs, 48, 48, clock_now_ns() + NS_PER_S, armed);
        h1_counts second = h1_thread_counts();
        CHECK_EQ_INT(served_requests(&s) - served, 96);
        if (armed) {
            /* the first request is handed over microseconds after its instant was set, 1 s ahead */
            CHECK(armed1 >= 1 && armed2 >= 1);
            CHECK_EQ_INT((first.sent_armed - before.sent_armed) + (first.armed_unready - before.armed_unready), armed1);
            CHECK_EQ_INT(second.sent_armed - first.sent_armed, armed2);
            CHECK_EQ_INT(second.armed_unready - first.armed_unready, 0);
            /* the second round's armed ones ran on the first round's connections (kept alive,
             * taken when armed): they are the first handed over */
            for (size_t k = 48; k < 48 + armed2; k++) CHECK_MSG(rs.v[k].connect_ns == 0, "request %zu opened a connection", k);
        } else {
            CHECK(armed1 == 0 && armed2 == 0);
            CHECK_EQ_INT(second.sent_armed - before.sent_armed, 0);
            CHECK_EQ_INT(second.armed_unready - before.armed_unready, 0);
        }
        client_free(c);
        recset_free(&rs);
    }
    unsetenv("DSPERF_CLIENT_ARM_US");
    test_serve_stop(&s);
}

/* The last stretch before an armed instant is spun on the clock (h1.c arm_wait): each of three
 * rounds armed 200 ms ahead reaches its instant by the spin, or (a slow host: counted, not failed)
 * by a wake-up later than the spin, or already past it when the loop came to wait; no request
 * leaves before its instant either way. With
 * DSPERF_CLIENT_SPIN_US=0 the instant is slept to (the control: no spin is counted). */
TEST(burst_armed_instant_is_spun_to_never_sent_early) {
    unsetenv("DSPERF_CLIENT_PATH");
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 2ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    for (int spin = 1; spin >= 0; spin--) {
        if (spin) unsetenv("DSPERF_CLIENT_SPIN_US"); else setenv("DSPERF_CLIENT_SPIN_US", "0", 1);
        recset rs;
        client *c = burst_client(&s, &rs);
        if (!c) continue;
        h1_counts before = h1_thread_counts();
        size_t armed = 0;
        for (int round = 0; round < 3; round++) armed += round_at(c, &rs, (size_t)round * 16, 16, clock_now_ns() + 200 * NS_PER_MS, true);
        h1_counts after = h1_thread_counts();
        unsigned long spun = (after.spun - before.spun) + (after.spin_late - before.spin_late), passed = after.arm_passed - before.arm_passed;
        CHECK(armed >= 3);
        if (spin) CHECK_MSG(spun + passed == 3, "3 armed instants: %lu spun to, %lu passed before the wait", spun, passed);
        else CHECK_MSG(spun == 0 && passed <= 3, "spinning off: %lu spun to", spun);
        client_free(c);
        recset_free(&rs);
    }
    unsetenv("DSPERF_CLIENT_SPIN_US");
    test_serve_stop(&s);
}

/* A run stopped before a prepared burst's instant: those requests were never due, so they are not
 * in its records (without the lead they would not have been created), and what was due is all
 * there. A lead of 30 s arms the second burst (due 20 s in) from the start; the stop comes once
 * the server has answered the first burst's 8. */
TEST(burst_stop_before_the_instant_leaves_no_record_of_it) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 2ms --prefill-per-token 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char trace[512], reqs[512], out[512], cmd[2048];
    snprintf(trace, sizeof trace, "%s/stop.trace", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/stop.jsonl", harness_tmpdir());
    snprintf(out, sizeof out, "%s/stop.json", harness_tmpdir());
    FILE *f = fopen(trace, "w");
    CHECK(f != NULL);
    if (!f) { test_serve_stop(&s); return; }
    for (int i = 0; i < 8 + 64; i++)
        fprintf(f, "{\"timestamp\": %d, \"input_length\": 8, \"output_length\": 3, \"hash_ids\": [%d]}\n", i < 8 ? 0 : 20000, i);
    fclose(f);
    setenv("DSPERF_CLIENT_ARM_US", "30000000", 1);
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --dataset mooncake:%s --arrival trace --client-threads 1 --out %s --save-requests %s",
             s.url, trace, out, reqs);
    int rc = test_run_interrupt_when_served(cmd, &s, 8, 0, NULL, NULL);
    unsetenv("DSPERF_CLIENT_ARM_US");
    long long served = served_requests(&s);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 1);
    CHECK_EQ_INT(served, 8);
    json_t *r = test_load_json(out);
    CHECK(r != NULL);
    if (r) {
        CHECK_EQ_INT(test_num(r, "completed"), 8);
        CHECK_EQ_INT(test_num(r, "failed"), 0);
        json_decref(r);
    }
    f = fopen(reqs, "r");
    CHECK(f != NULL);
    int lines = 0;
    char line[1 << 16];
    while (f && fgets(line, sizeof line, f)) {
        json_t *q = json_loads(line, 0, NULL);
        if (q) CHECK_MSG(json_is_integer(json_object_get(q, "send_ns")), "a request of the burst not yet due was recorded: %.120s", line);
        json_decref(q);
        lines++;
    }
    if (f) fclose(f);
    CHECK_EQ_INT(lines, 8);
}

/* Automatic client threads for a trace whose peak is a burst: one per LOAD_BURST_SHARE of it,
 * within all CPUs but one (the sends bound a burst, not the streams: half the CPUs and 8 kept a
 * burst of 1,024 on 8 threads of a 16-core host), so a burst of 1,024 is dealt over threads that
 * each send their share at the instant; a burst too small for two shares, and a trace without
 * bursts, keep the streams' count (one per 256, half the CPUs, 8). */
TEST(burst_auto_threads_follow_a_traces_largest_burst) {
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    long by_cpu = cpus > 2 ? cpus - 1 : 1;
    load_plan p = { .trace = true, .arr = { .rate_per_s = 10 } };
    CHECK_EQ_INT(load_client_threads(&p, 0), 1);
    p.trace_burst = 1024;
    long want = 1024 / LOAD_BURST_SHARE;
    if (want > by_cpu) want = by_cpu;
    if (want > 64) want = 64;
    CHECK_EQ_INT(load_client_threads(&p, 0), want);
    p.trace_burst = 100;   /* one share: the streams' rule, 100 / 256 + 1 */
    CHECK_EQ_INT(load_client_threads(&p, 0), 1);
    p.trace_burst = 1024;
    p.arr.rate_per_s = 4096;   /* a rate whose streams outnumber the burst: the streams' rule */
    want = 8192 / 256 + 1;
    long half = cpus > 1 ? cpus / 2 : 1;
    if (want > half) want = half;
    if (want > 8) want = 8;
    CHECK_EQ_INT(load_client_threads(&p, 0), want);
    p.arr.rate_per_s = 10;
    CHECK_EQ_INT(load_client_threads(&p, 3), 3);   /* --client-threads N is N */
    p.trace = false;                               /* a burst count means nothing to a rate */
    CHECK_EQ_INT(load_client_threads(&p, 0), 1);
}
