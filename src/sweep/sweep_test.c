/* Tests of the sweep analysis on numbers (ladders, knee, SLO crossing, over-saturation detector,
 * intervals) and of `dsperf sweep` against `dsperf serve` with a fixed capacity, where the knee
 * must sit at the configured capacity. Levels are short (about a second). */
#include "harness.h"
#include "testutil.h"
#include "sweep/sweep.h"
#include "common/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static size_t ladder(const char *spec, bool rate, double *v) {
    size_t n = 0;
    char err[256];
    if (sweep_parse_ladder(spec, rate, v, SWEEP_MAX_LEVELS, &n, err, sizeof err) < 0) return 0;
    return n;
}

TEST(sweep_ladder_forms) {
    double v[SWEEP_MAX_LEVELS];
    CHECK_EQ_INT(ladder("1,2,4..16", false, v), 5);
    CHECK_NEAR(v[2], 4, 0); CHECK_NEAR(v[4], 16, 0);
    CHECK_EQ_INT(ladder("1..256x2", false, v), 9);
    CHECK_NEAR(v[8], 256, 0);
    CHECK_EQ_INT(ladder("8..64 step 8", false, v), 8);
    CHECK_NEAR(v[7], 64, 0);
    /* 1, 5, ..., 37, then the top 40 */
    CHECK_EQ_INT(ladder("1..40/s step 4", true, v), 11);
    CHECK_NEAR(v[9], 37, 1e-9); CHECK_NEAR(v[10], 40, 1e-9);
    CHECK_EQ_INT(ladder("2..20/s", true, v), 10);
    CHECK_NEAR(v[1], 4, 1e-9);
    CHECK_EQ_INT(ladder("8,2,4/s,4", true, v), 3);   /* sorted, duplicates dropped */
    CHECK_NEAR(v[0], 2, 0);
    CHECK_EQ_INT(ladder("1..100x2", false, v), 8);    /* 1..64 and the top 100 */
    CHECK_NEAR(v[7], 100, 0);
    double w[SWEEP_MAX_LEVELS];
    size_t n;
    char err[256];
    CHECK(sweep_parse_ladder("0..4", false, w, SWEEP_MAX_LEVELS, &n, err, sizeof err) < 0);
    CHECK(sweep_parse_ladder("8..2", false, w, SWEEP_MAX_LEVELS, &n, err, sizeof err) < 0);
    CHECK(sweep_parse_ladder("abc", false, w, SWEEP_MAX_LEVELS, &n, err, sizeof err) < 0);
    CHECK(sweep_parse_ladder("1..4x1", false, w, SWEEP_MAX_LEVELS, &n, err, sizeof err) < 0);
    CHECK(sweep_parse_ladder("1..100000", false, w, SWEEP_MAX_LEVELS, &n, err, sizeof err) == 0);
    CHECK(sweep_parse_ladder("1..1000 step 1", false, w, SWEEP_MAX_LEVELS, &n, err, sizeof err) < 0);
}

/* Throughput rises in proportion to load up to 16, then stays; latency is flat, then grows
 * with the queue: the knee is at 16. */
TEST(sweep_knee_two_segment_fit) {
    double x[] = { 1, 2, 4, 8, 16, 32, 64 }, y[7], lat[7];
    for (int i = 0; i < 7; i++) {
        y[i] = 100 * (x[i] < 16 ? x[i] : 16);
        lat[i] = x[i] <= 16 ? 50 : 50 * x[i] / 16;
    }
    sweep_knee k;
    sweep_find_knee(x, y, lat, 7, &k);
    CHECK(k.found);
    CHECK_NEAR(x[k.index], 16, 0);
    CHECK_NEAR(k.knee_load, 16, 0.5);
    CHECK_NEAR(k.tail_slope, 0, 1e-9);
    CHECK(k.sse_gain > 0.99);
    CHECK(k.latency_upturn);
    CHECK_NEAR(k.lat_ratio, 4, 1e-9);
    /* still rising: no knee, and the reason says so */
    for (int i = 0; i < 7; i++) y[i] = 100 * x[i];
    sweep_find_knee(x, y, lat, 7, &k);
    CHECK(!k.found);
    CHECK(strstr(k.reason, "rising") != NULL);
    sweep_find_knee(x, y, lat, 3, &k);
    CHECK(!k.found);
}

TEST(sweep_slo_crossing_interpolates) {
    double x[] = { 1, 2, 3, 4 }, v[] = { 10, 20, 40, 80 };
    int where;
    CHECK_NEAR(sweep_slo_crossing(x, v, 4, 30, &where), 2.5, 1e-12);
    CHECK_EQ_INT(where, 0);
    CHECK(isnan(sweep_slo_crossing(x, v, 4, 5, &where)));
    CHECK_EQ_INT(where, -1);
    CHECK(isnan(sweep_slo_crossing(x, v, 4, 100, &where)));
    CHECK_EQ_INT(where, 1);
}

TEST(sweep_ci_t_interval) {
    double v[] = { 10, 12, 14 }, m, sd, lo, hi;
    sweep_ci_mean(v, 3, 0.95, &m, &sd, &lo, &hi);
    CHECK_NEAR(m, 12, 1e-12);
    CHECK_NEAR(sd, 2, 1e-12);
    CHECK_NEAR(hi - m, 4.303 * 2 / sqrt(3), 1e-9);
    CHECK_NEAR(m - lo, hi - m, 1e-12);
    sweep_ci_mean(v, 1, 0.95, &m, &sd, &lo, &hi);
    CHECK(isnan(lo) && isnan(hi));
    CHECK_NEAR(sweep_t_quantile(0.975, 1000), 1.962, 0.001);
    CHECK_NEAR(sweep_t_quantile(0.99, 40), 2.423, 0.002);
}

/* In-flight and TTFT growing steadily (with noise) is saturation; the same noise around a
 * level is not. */
TEST(sweep_osd_slopes) {
    rng r;
    rng_seed(&r, 7);
    sweep_osd grow, flat;
    sweep_osd_init(&grow, 2.0);
    sweep_osd_init(&flat, 2.0);
    for (int i = 0; i <= 40; i++) {
        double t = i * 0.1;
        sweep_osd_add_conc(&grow, t, 10 + 8 * t + rng_normal(&r) * 1.5);
        sweep_osd_add_conc(&flat, t, 10 + rng_normal(&r) * 1.5);
        for (int k = 0; k < 5; k++) {
            double tt = t + k * 0.02;
            sweep_osd_add_ttft(&grow, tt, 100 + 150 * tt + rng_normal(&r) * 20);
            sweep_osd_add_ttft(&flat, tt, 100 + rng_normal(&r) * 20);
        }
    }
    sweep_osd_verdict v;
    sweep_osd_check(&grow, 4.0, false, &v);
    CHECK(v.enough);
    CHECK(v.saturated);
    CHECK_NEAR(v.conc_slope, 8, 1.5);
    CHECK_NEAR(v.ttft_slope, 150, 25);
    sweep_osd_check(&flat, 4.0, false, &v);
    CHECK(v.enough);
    CHECK(!v.saturated);
    /* before a whole window has passed, no verdict */
    sweep_osd s;
    sweep_osd_init(&s, 10.0);
    for (int i = 0; i < 20; i++) { sweep_osd_add_conc(&s, i * 0.1, i); sweep_osd_add_ttft(&s, i * 0.1, i); }
    sweep_osd_check(&s, 2.0, false, &v);
    CHECK(!v.enough && !v.saturated);
    sweep_osd_free(&s);
    sweep_osd_free(&grow);
    sweep_osd_free(&flat);
}

static json_t *run_sweep(const test_server *s, const char *args, int *rc, const char *name) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "sweep --url %s --out %s %s", s->url, path, args);
    char *out = NULL, *err = NULL;
    *rc = test_run(cmd, &out, &err);
    if (*rc != 0) fprintf(stderr, "    sweep exited %d: %s\n", *rc, err ? err : "");
    free(out);
    free(err);
    return test_load_json(path);
}

static const json_t *level_res(const json_t *d, size_t i) {
    return json_object_get(json_array_get(json_object_get(d, "levels"), i), "results");
}

/* Server capacity 4, TTFT 100 ms, ITL 10 ms, 10 tokens: E2E 190 ms, so throughput grows with
 * concurrency up to 4 and stays; above 4 every request first waits for a slot (about one E2E):
 * the knee is at c=4, TTFT is 100 ms at c <= 4 and about 290 ms at c=8, so the SLO of 200 ms
 * holds up to 4 and not at 8, with 90-100 ms of margin on either side for a busy machine. The
 * boundary compares the median (--slo-percentile 50): a p99 of 40 requests is one request, which a
 * busy machine can hold back 100 ms at any load. Throughputs have a hard ceiling (no server serves faster than configured), not a floor. */
TEST(sweep_concurrency_knee_at_capacity) {
    test_server s;
    if (test_serve_start(&s, "--ttft 100ms --itl 10ms --capacity 4") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    int rc;
    json_t *d = run_sweep(&s, "--concurrency 1..16x2 --duration 3s --dataset random:in=8,out=10 "
                              "--slo ttft=200ms --slo-percentile 50 --quiet", &rc, "knee");
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(d != NULL);
    if (!d) return;
    CHECK_STR(json_string_value(json_object_get(d, "schema")), "dsperf.sweep/1");
    CHECK_STR(json_string_value(json_object_get(d, "axis")), "concurrency");
    CHECK_EQ_INT(json_array_size(json_object_get(d, "levels")), 5);
    CHECK_STR(json_string_value(json_object_get(level_res(d, 0), "schema")), "dsperf.results/1");
    const double e2el_s = 0.190;
    const int conc[] = { 1, 2, 4, 8, 16 };
    for (size_t i = 0; i < 5; i++) {
        double thr = test_num(level_res(d, i), "request_throughput");
        double cap = (conc[i] < 4 ? conc[i] : 4) / e2el_s;
        CHECK_MSG(thr > 0 && thr <= cap * 1.02, "level c=%d: %.2f req/s against a ceiling of %.2f", conc[i], thr, cap);
        CHECK(test_num(level_res(d, i), "min_ttft_ms") >= 100.0);
    }
    const json_t *k = json_object_get(d, "knee");
    CHECK(json_is_object(k));
    CHECK_NEAR(test_num(k, "load"), 4, 0);
    CHECK(json_is_true(json_object_get(json_object_get(k, "latency"), "upturn")));
    const json_t *g = json_object_get(d, "max_goodput");
    CHECK(json_is_object(g));
    CHECK_NEAR(test_num(g, "load"), 4, 0);
    double b = test_num(g, "slo_boundary_load");
    CHECK_MSG(b > 4 && b < 8, "SLO boundary at %.3f, not between 4 and 8", b);
    const json_t *lv;
    size_t i;
    json_array_foreach(json_object_get(d, "levels"), i, lv) CHECK(!json_is_true(json_object_get(lv, "saturated")));
    json_decref(d);
}

/* Open loop at eight times the server's capacity (2 slots of 76 ms: 26 requests/s, so a 1 s window
 * sees some 26 first tokens, over the detector's minimum of 10): the detector stops the level,
 * marks it saturated and the ladder ends there (400/s is never run). The overload is wide enough
 * that a client slowed by a sanitizer or a busy machine still builds the backlog. */
TEST(sweep_rate_over_saturation_stops) {
    test_server s;
    if (test_serve_start(&s, "--ttft 40ms --itl 4ms --capacity 2") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    int rc;
    json_t *d = run_sweep(&s, "--rate 5,200,400/s --duration 3s --osd-window 1s --dataset random:in=8,out=10 "
                              "--quiet", &rc, "osd");
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(d != NULL);
    if (!d) return;
    const json_t *lv = json_object_get(d, "levels");
    CHECK_EQ_INT(json_array_size(lv), 2);
    const json_t *hi = json_array_get(lv, 1);
    CHECK(json_is_true(json_object_get(hi, "early_stopped")));
    CHECK(json_is_true(json_object_get(hi, "saturated")));
    CHECK(test_num(json_object_get(hi, "over_saturation"), "inflight_slope_per_s") > 10);
    /* what the early stop cancelled is no failure: it says so per request class */
    const json_t *hr = json_object_get(hi, "results");
    CHECK(test_num(json_object_get(hr, "ended"), "early_stop") > 0);
    CHECK_EQ_INT(test_num(json_object_get(hr, "ended"), "early_stop"), test_num(hr, "cancelled"));
    CHECK_EQ_INT(test_num(hr, "failed"), 0);
    CHECK(json_is_true(json_object_get(hi, "measured")));
    /* it stopped well before the planned 3 s of sending */
    CHECK(test_num(json_object_get(hi, "results"), "duration") < 2.9);
    CHECK(!json_is_true(json_object_get(json_array_get(lv, 0), "saturated")));
    const json_t *k = json_object_get(d, "knee");
    CHECK(json_is_object(k));
    CHECK_NEAR(test_num(k, "load"), 5, 0);
    json_decref(d);
}

/* Requests that outlast their level (issue 11, item 1). The server serves one request at a time
 * (--capacity 1), 20 tokens 20 ms apart: 0.41 s each. At c=1 a 2 s level measures; at c=16 a
 * request waits for the 15 before it (>= 6 s) while the level lasts 2 s + 1 s grace, so at most 7
 * of its requests can complete and the 16 users' requests in flight at the end — at least 13, as
 * at most 3 complete after the deadline — are cut by dsperf. That level is "not measured", no
 * failure: no error, no +inf latency, out of the knee and goodput, the sweep stops there, and the
 * advice sizes it from the time a request takes (>= 16 x 0.41 s by Little's law). */
TEST(sweep_level_outlasted_is_not_measured) {
    test_server s;
    if (test_serve_start(&s, "--ttft 10ms --itl 20ms --capacity 1") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char path[512], reqs[512], cmd[2048];
    snprintf(path, sizeof path, "%s/outlast.json", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/outlast", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sweep --url %s --out %s --concurrency 1,16,32 --duration 2s --grace 1s "
             "--dataset random:in=16,out=20 --slo ttft=10s --save-requests %s", s.url, path, reqs);
    char *out = NULL, *err = NULL;
    int rc = test_run(cmd, &out, &err);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 1);    /* a level asked for and not measured fails the sweep (dsperf --help) */
    CHECK(out && strstr(out, "NOT MEASURED"));
    CHECK(err && strstr(err, "not measured: requests outlast the level"));
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) { free(out); free(err); return; }
    const json_t *levels = json_object_get(d, "levels");
    CHECK_EQ_INT(json_array_size(levels), 2);          /* c=32 never ran */
    const json_t *l0 = json_array_get(levels, 0), *l1 = json_array_get(levels, 1);
    CHECK(json_is_true(json_object_get(l0, "measured")));
    CHECK(json_is_false(json_object_get(l1, "measured")));
    const char *why = json_string_value(json_object_get(l1, "not_measured_reason"));
    CHECK(why && strstr(why, "requests outlast the level") && strstr(why, "--duration >=") && strstr(why, "--requests 48"));
    CHECK(test_num(json_object_get(l1, "advice"), "duration_s") >= 3 * 16 * 0.4);
    CHECK_EQ_INT(test_num(json_object_get(l1, "advice"), "requests"), 48);
    const json_t *r1 = json_object_get(l1, "results");
    double done = test_num(r1, "completed"), cut = test_num(r1, "cancelled");
    CHECK(done <= 8 && cut >= 13);
    CHECK_EQ_INT(test_num(r1, "failed"), 0);
    CHECK_EQ_INT(test_num(json_object_get(r1, "ended"), "client_deadline"), cut);
    CHECK_EQ_INT(test_num(json_object_get(r1, "ended"), "server_error"), 0);
    CHECK(json_object_get(json_object_get(r1, "errors"), "cancelled") == NULL);
    CHECK(json_is_false(json_object_get(r1, "run_failed")));
    CHECK(json_is_false(json_object_get(r1, "p99_e2el_error_adjusted_inf")));
    /* left out of the analysis: the goodput is c=1's; the interval list says so */
    CHECK_NEAR(test_num(json_object_get(d, "max_goodput"), "load"), 1, 0);
    CHECK(json_is_false(json_object_get(json_array_get(json_object_get(json_object_get(d, "ci"), "levels"), 1), "measured")));
    /* the per-request file says who ended each request and why */
    char rpath[600];
    snprintf(rpath, sizeof rpath, "%s.1.0.jsonl", reqs);
    FILE *f = fopen(rpath, "r");
    CHECK(f != NULL);
    long n_cut = 0, n_done = 0;
    char line[1 << 16];
    while (f && fgets(line, sizeof line, f)) {
        if (strstr(line, "\"end\":\"client_deadline\"")) {
            n_cut++;
            CHECK(strstr(line, "\"outcome\":\"cancelled\"") && strstr(line, "not a server failure"));
        }
        if (strstr(line, "\"end\":\"completed\"")) n_done++;
    }
    if (f) fclose(f);
    CHECK_EQ_INT(n_cut, cut);
    CHECK_EQ_INT(n_done, done);
    /* diagnose: no error finding, and the level is not diagnosed at all */
    char *dout = NULL;
    snprintf(cmd, sizeof cmd, "diagnose %s", path);
    CHECK_EQ_INT(test_run(cmd, &dout, NULL), 0);
    CHECK(dout && !strstr(dout, "failed") && !strstr(dout, "load 16"));
    free(dout);
    free(out);
    free(err);
    json_decref(d);
}

TEST(sweep_repeats_give_intervals) {
    test_server s;
    if (test_serve_start(&s, "--ttft 10ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    int rc;
    json_t *d = run_sweep(&s, "--concurrency 1,2 --requests 6 --repeats 3 --dataset random:in=8,out=5 --quiet", &rc, "rep");
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(d != NULL);
    if (!d) return;
    CHECK_EQ_INT(json_array_size(json_object_get(d, "levels")), 6);
    const json_t *cl = json_object_get(json_object_get(d, "ci"), "levels");
    CHECK_EQ_INT(json_array_size(cl), 2);
    const json_t *m = json_object_get(json_object_get(json_array_get(cl, 1), "metrics"), "median_ttft_ms");
    CHECK_EQ_INT(test_num(m, "n"), 3);
    CHECK(test_num(m, "lo") <= test_num(m, "mean") && test_num(m, "mean") <= test_num(m, "hi"));
    CHECK(test_num(m, "mean") >= 10.0);   /* the server's 10 ms TTFT is a floor on any machine */
    /* each repeat used its own seed */
    CHECK_EQ_INT(test_num(json_array_get(json_object_get(d, "levels"), 2), "seed"), 3);
    json_decref(d);
}

TEST(sweep_levels_send_fresh_prompts) {
    /* a level resending the last level's prompts would find the server's prefix cache warm: each
     * level starts where the levels before it stopped (warm-ups counted) */
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    int rc;
    json_t *d = run_sweep(&s, "--concurrency 1,2,4 --requests 5 --warmup 2 --dataset random:in=8,out=3 --quiet", &rc, "fresh");
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(d != NULL);
    if (!d) return;
    const json_t *lv = json_object_get(d, "levels");
    CHECK_EQ_INT(json_array_size(lv), 3);
    for (size_t i = 0; i < json_array_size(lv); i++)
        CHECK_EQ_INT(test_num(json_array_get(lv, i), "first_prompt"), (double)(i * 7));
    json_decref(d);
}

TEST(sweep_interrupt_writes_partial) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 2ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/int.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sweep --url %s --concurrency 1..8x2 --duration 700ms --dataset random:in=8,out=10 --quiet "
             "--out %s", s.url, path);
    /* Ctrl-C as soon as the first level is in the file, while the second runs */
    int rc = test_run_interrupt_when_file(cmd, path, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 1);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    CHECK(json_is_true(json_object_get(d, "partial")));
    size_t n = json_array_size(json_object_get(d, "levels"));
    CHECK(n >= 1 && n <= 2);
    json_decref(d);
}

TEST(sweep_usage_errors) {
    const char *bad[] = {
        "sweep --url http://127.0.0.1:1",
        "sweep --url http://127.0.0.1:1 --concurrency 1,2 --rate 1/s",
        "sweep --url http://127.0.0.1:1 --concurrency 0..4",
        "sweep --url http://127.0.0.1:1 --rate 1..4 --repeats 0",
        "sweep --url http://127.0.0.1:1 --auto --osd-window 1ms",
        "sweep --concurrency 1,2",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *err = NULL;
        CHECK_EQ_INT(test_run(bad[i], NULL, &err), 2);
        CHECK(err && strstr(err, "dsperf:") && !strchr(strchr(err, '\n') ? strchr(err, '\n') + 1 : "", '\n'));
        free(err);
    }
    char *out = NULL;
    CHECK_EQ_INT(test_run("sweep --help", &out, NULL), 0);
    CHECK(out && strstr(out, "examples:"));
    free(out);
}

/* --auto: a synchronous run, a saturating run, then rates up to 1.25x the measured maximum
 * (capacity 4 / 38 ms = 105 req/s). */
TEST(sweep_auto_ladder) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 2ms --capacity 4") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    int rc;
    json_t *d = run_sweep(&s, "--auto --auto-levels 3 --auto-max-concurrency 16 --requests 30 --dataset random:in=8,out=10 "
                              "--quiet", &rc, "auto");
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(d != NULL);
    if (!d) return;
    CHECK_STR(json_string_value(json_object_get(d, "axis")), "rate");
    const json_t *lv = json_object_get(d, "levels");
    CHECK_EQ_INT(json_array_size(lv), 5);
    CHECK_STR(json_string_value(json_object_get(json_array_get(lv, 0), "kind")), "synchronous");
    CHECK_STR(json_string_value(json_object_get(json_array_get(lv, 1), "kind")), "throughput");
    double r_sync = test_num(json_array_get(lv, 0), "load"), r_max = test_num(json_array_get(lv, 1), "load");
    CHECK_NEAR(r_sync, test_num(level_res(d, 0), "request_throughput"), 1e-9);
    CHECK(r_max > 0 && r_max <= 1.02 * 4 / 0.038);   /* capacity 4 of 38 ms each is a ceiling */
    /* rates r_sync + (1.25 r_max - r_sync) k / 3 */
    CHECK_NEAR(test_num(json_array_get(lv, 4), "load"), 1.25 * r_max, 1e-6 * r_max);
    CHECK_NEAR(test_num(json_array_get(lv, 2), "load"), r_sync + (1.25 * r_max - r_sync) / 3, 1e-6 * r_max);
    CHECK_NEAR(test_num(level_res(d, 2), "intended_rate_per_s"), test_num(json_array_get(lv, 2), "load"), 1e-9);
    json_decref(d);
}

/* The analysis and the table work on a document alone: synthetic levels, knee row marked, no
 * line over 100 columns. */
TEST(sweep_table_from_document) {
    json_t *levels = json_array();
    double loads[] = { 1, 2, 4, 8, 16, 32 };
    for (int i = 0; i < 6; i++) {
        double x = loads[i], tput = 100 * (x < 8 ? x : 8), ttft = x <= 8 ? 40 : 40 * x / 8;
        json_t *r = json_pack("{s:s,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:i,s:i,s:f,s:f,s:{s:f}}", "schema", "dsperf.results/1",
            "output_throughput", tput, "request_throughput", tput / 10, "median_ttft_ms", ttft * 0.8, "p99_ttft_ms", ttft,
            "p99_ttft_from_schedule_ms", ttft, "p99_tpot_ms", 5.0, "p99_e2el_ms", ttft + 50, "completed", 100, "failed", 0,
            "duration", 2.0, "request_goodput", x <= 8 ? tput / 10 : 1.0, "goodput_slo", "ttft_ms", 50.0);
        json_array_append_new(levels, json_pack("{s:f,s:i,s:s,s:b,s:b,s:o}", "load", x, "repeat", 0, "kind", "concurrency",
                                                "saturated", 0, "early_stopped", 0, "results", r));
    }
    json_t *doc = json_pack("{s:s,s:s,s:{s:s,s:s},s:o}", "schema", SWEEP_SCHEMA, "axis", "concurrency", "config", "model",
                            "deepseek-ai/DeepSeek-V2-Lite", "url", "http://127.0.0.1:8000", "levels", levels);
    CHECK_EQ_INT(sweep_analyse(doc, 99), 0);
    const json_t *k = json_object_get(doc, "knee");
    CHECK_NEAR(test_num(k, "load"), 8, 0);
    const json_t *g = json_object_get(doc, "max_goodput");
    CHECK_NEAR(test_num(g, "load"), 8, 0);
    /* p99 TTFT 40 at 8, 80 at 16: crosses 50 ms at 8 + 8 x 10/40 = 10 */
    CHECK_NEAR(test_num(g, "slo_boundary_load"), 10, 1e-9);
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    sweep_print_table(f, doc, true, true);
    fclose(f);
    CHECK(strstr(buf, "\u25b6 c=8 ") != NULL);
    CHECK(strstr(buf, "KNEE c=8") != NULL);
    /* columns, not bytes: UTF-8 continuation bytes do not count */
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t cols = 0;
        for (char *p = line; p < (nl ? nl : line + strlen(line)); p++) if ((*p & 0xC0) != 0x80) cols++;
        CHECK_MSG(cols <= 100, "line of %zu columns: %.*s", cols, (int)(nl ? nl - line : 80), line);
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
    json_decref(doc);
}
