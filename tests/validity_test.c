/* validity_test — one warning and exit-code policy for bench and sim (issue 11 item 8, issue 10
 * "Never lose a run"): an overloaded server is said to be overloaded by both, failures above
 * --max-error-rate fail the run, and requests dsperf cancelled itself (Ctrl-C) are no failures.
 * Real runs: dsperf serve on loopback with known capacity, and the simulator. */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *run_json(const char *args, const char *name, int *rc, char **out, char **err) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "%s --out %s", args, path);
    *rc = test_run(cmd, out, err);
    return test_load_json(path);
}

static const char *first_warning_kind(const json_t *r) {
    return json_string_value(json_object_get(json_array_get(json_object_get(r, "warnings"), 0), "kind"));
}

/* The simulator at 40/s against a deployment that serves ~10/s (the case: it printed no
 * warning), and at 5/s, which it serves. The virtual clock makes both exact. */
TEST(sim_warns_when_the_server_does_not_keep_up) {
    int rc;
    char *out = NULL, *err = NULL;
    json_t *r = run_json("sim --rate 40/s --requests 2000 --dataset random:in=4096,out=1024", "over", &rc, &out, &err);
    CHECK(r != NULL);
    CHECK_EQ_INT(rc, 0);                      /* a warning, not a failed run */
    CHECK(out && strstr(out, "WARNING: SERVER OVERLOADED") && strstr(out, "offered 40.00 req/s"));
    if (r) {
        CHECK(json_is_true(json_object_get(r, "server_overloaded")));
        CHECK_STR(first_warning_kind(r), "overload");
        CHECK(test_num(r, "request_throughput") < 0.5 * 40);
        CHECK(test_num(r, "ttft_from_schedule_last_fifth_ms") > 10 * test_num(r, "ttft_from_schedule_first_fifth_ms"));
    }
    json_decref(r);
    free(out);
    free(err);
    r = run_json("sim --rate 2/s --requests 2000 --dataset random:in=4096,out=1024", "under", &rc, &out, &err);
    CHECK_EQ_INT(rc, 0);
    CHECK(out && !strstr(out, "WARNING"));
    CHECK(r && json_is_false(json_object_get(r, "server_overloaded")) && json_array_size(json_object_get(r, "warnings")) == 0);
    json_decref(r);
    free(out);
    free(err);
}

/* bench says the same of a real server: capacity 2 requests at a time, 38 ms each (~50 req/s),
 * offered 200/s. A busier machine only makes the server slower, so the verdict cannot flip. */
TEST(bench_warns_when_the_server_does_not_keep_up) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 2ms --capacity 2") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bench --url %s --rate 200/s --requests 200 --dataset random:in=8,out=10", s.url);
    int rc;
    char *out = NULL, *err = NULL;
    json_t *r = run_json(cmd, "bench_over", &rc, &out, &err);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(out && strstr(out, "WARNING: SERVER OVERLOADED"));
    CHECK(r && json_is_true(json_object_get(r, "server_overloaded")));
    json_decref(r);
    free(out);
    free(err);
}

/* --max-error-rate: 30 % HTTP 500s fail a run by default (1 %), not when 50 % are allowed; sim
 * fails alike when nothing completes (it exited 0 before). */
TEST(bench_and_sim_exit_1_over_max_error_rate) {
    test_server s;
    if (test_serve_start(&s, "--ttft 2ms --itl 1ms --fail-rate 0.3 --seed 5") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char cmd[1024];
    int rc;
    char *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 4 --requests 60 --dataset random:in=8,out=4", s.url);
    json_t *r = run_json(cmd, "fail_default", &rc, &out, &err);
    CHECK_EQ_INT(rc, 1);
    CHECK(err && strstr(err, "over --max-error-rate 1%"));
    CHECK(r && json_is_true(json_object_get(r, "run_failed")));
    CHECK(r && test_num(r, "failed") > 0);          /* written before failing: nothing is lost */
    json_decref(r);
    free(out);
    free(err);
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 4 --requests 60 --dataset random:in=8,out=4 --max-error-rate 50%%", s.url);
    r = run_json(cmd, "fail_allowed", &rc, &out, &err);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(r && json_is_false(json_object_get(r, "run_failed")) && test_num(r, "max_error_rate") == 0.5);
    json_decref(r);
    free(out);
    free(err);
    /* prompts longer than the model: the engine rejects every request */
    r = run_json("sim --rate 5/s --requests 20 --dataset random:in=200000,out=16 --quiet", "sim_fail", &rc, &out, &err);
    CHECK_EQ_INT(rc, 1);
    CHECK(err && strstr(err, "no request completed"));
    json_decref(r);
    free(out);
    free(err);
    CHECK_EQ_INT(test_run("bench --url http://127.0.0.1:1 --max-error-rate 2", NULL, NULL), 2);
}

/* Ctrl-C: the requests in flight are cancelled by dsperf — "interrupt", not failures — the results
 * and the per-request file are written, and the run exits 1 (partial). */
TEST(bench_interrupt_cancels_are_not_failures) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 50ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char path[512], reqs[512], cmd[1400];
    snprintf(path, sizeof path, "%s/int.json", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/int.jsonl", harness_tmpdir());
    /* 4 users, requests of ~1 s: at the interrupt every user has one in flight */
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 4 --duration 60s --dataset random:in=8,out=20 --quiet --out %s "
             "--save-requests %s", s.url, path, reqs);
    /* interrupted once a few requests are done and all four users are in the middle of one,
     * however long a busy machine takes to get there */
    int rc = test_run_interrupt_when_served(cmd, &s, 4, 4, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 1);
    json_t *r = test_load_json(path);
    CHECK(r != NULL);
    if (!r) return;
    CHECK(json_is_true(json_object_get(r, "interrupted")));
    CHECK_EQ_INT(test_num(r, "failed"), 0);
    double cut = test_num(json_object_get(r, "ended"), "interrupt");
    CHECK_MSG(cut >= 1 && cut <= 4, "cancelled at the interrupt: %g (ended: %s)", cut, json_dumps(json_object_get(r, "ended"), JSON_COMPACT));
    CHECK_EQ_INT(test_num(r, "cancelled"), cut);
    CHECK(strstr(json_string_value(json_object_get(r, "run_failed_reason")), "interrupted") != NULL);
    FILE *f = fopen(reqs, "r");
    CHECK(f != NULL);
    long n = 0;
    char line[1 << 15];
    while (f && fgets(line, sizeof line, f)) n += strstr(line, "\"end\":\"interrupt\"") != NULL;
    if (f) fclose(f);
    CHECK_EQ_INT(n, cut);
    json_decref(r);
}

/* A sweep's file is written after each level, so a Ctrl-C (or a kill) keeps what it measured. Read
 * while the sweep runs, it says it is partial and why (in progress); after the interrupt, the final
 * write says the sweep was interrupted; neither says complete. */
TEST(sweep_file_in_progress_says_partial) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 5ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char path[512], copy[512], cmd[1400];
    snprintf(path, sizeof path, "%s/sw.json", harness_tmpdir());
    snprintf(copy, sizeof copy, "%s/sw.during.json", harness_tmpdir());
    /* one second a level: the interrupt comes once the first level is written, five levels early */
    snprintf(cmd, sizeof cmd, "sweep --url %s --concurrency 1,2,3,4,5,6 --duration 1s --dataset random:in=8,out=4 --quiet --out %s",
             s.url, path);
    int rc = test_run_interrupt_when_file_kept(cmd, path, copy, NULL, NULL);
    test_serve_stop(&s);
    CHECK(rc != 0);
    json_t *during = test_load_json(copy), *after = test_load_json(path);
    CHECK(during && after);
    if (during && after) {
        CHECK(json_array_size(json_object_get(during, "levels")) >= 1);
        CHECK(json_is_true(json_object_get(during, "partial")));
        const char *why = json_string_value(json_object_get(during, "partial_reason"));
        CHECK(why && strstr(why, "in progress"));
        CHECK(json_is_true(json_object_get(after, "partial")));
        why = json_string_value(json_object_get(after, "partial_reason"));
        CHECK(why && strstr(why, "interrupted"));
    }
    json_decref(during);
    json_decref(after);
}

/* The policy is written where a user looks first. */
TEST(help_states_the_exit_code_policy) {
    char *out = NULL;
    CHECK_EQ_INT(test_run("--help", &out, NULL), 0);
    CHECK(out && strstr(out, "--max-error-rate") && strstr(out, "default 1%") && strstr(out, "2  usage error"));
    free(out);
}
