/* Integration tests of `dsperf compare`: two bench runs against `dsperf serve` on loopback, one
 * with a slower first token, gated the way a pipeline would; and bad input. */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Starts `dsperf serve SERVE_ARGS`, runs `dsperf COMMAND --url URL --quiet --out DIR/NAME.json`
 * against it, stops it; path gets the results file. 0 when the command ran (exit 0, or 1 for a
 * run with failed requests). */
static int run_against(const char *serve_args, const char *command, const char *name, char *path, size_t len) {
    test_server s;
    if (test_serve_start(&s, serve_args) != 0) return -1;
    snprintf(path, len, "%s/%s.json", harness_tmpdir(), name);
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s --url %s --quiet --out %s", command, s.url, path);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    return rc == 0 || rc == 1 ? 0 : -1;
}

/* A bench run against serve with the given TTFT. */
static int bench_to(const char *ttft, const char *extra_serve, const char *name, char *path, size_t len) {
    char sargs[256];
    snprintf(sargs, sizeof sargs, "--ttft %s --itl 2ms %s", ttft, extra_serve);
    return run_against(sargs, "bench --concurrency 4 --requests 60 --dataset random:in=8,out=4", name, path, len);
}

TEST(compare_cli_gate_passes_a_rerun_and_fails_a_regression) {
    char base[512], rerun[512], slow[512], faulty[512];
    /* TTFTs of 200 and 300 ms: the few milliseconds a busy machine adds to a run are a few per cent
     * of them, well inside the gate's 10 % allowance, while 200 -> 300 ms is +50 % */
    if (bench_to("200ms", "", "base", base, sizeof base) || bench_to("200ms", "", "rerun", rerun, sizeof rerun) ||
        bench_to("300ms", "", "slow", slow, sizeof slow) || bench_to("200ms", "--fail-rate 0.1 --seed 3", "faulty", faulty, sizeof faulty)) {
        CHECK_MSG(0, "bench runs failed");
        return;
    }
    char cmd[2048], outp[512];
    int st;
    /* the same server twice: TTFT differs by noise only (the median: a neighbour's burst on a
     * shared machine can move a p99 of 60 requests for real) */
    snprintf(cmd, sizeof cmd, "compare %s %s --gate 'median_ttft_ms:+10%%,errors:0'", base, rerun);
    char *out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0, "rerun gated as a regression (exit %d):\n%s", st, out);
    CHECK(out && strstr(out, "gate: PASSED"));
    free(out);
    /* TTFT 200 -> 300 ms: +50 %, far beyond noise */
    snprintf(outp, sizeof outp, "%s/cmp.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "compare %s %s --gate 'median_ttft_ms:+10%%,errors:0' --out %s", base, slow, outp);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 1);
    CHECK(out && strstr(out, "gate: FAILED") && strstr(out, "FAIL median_ttft_ms:+10%"));
    free(out);
    json_t *d = test_load_json(outp);
    CHECK(d != NULL);
    if (d) {
        CHECK_STR(json_string_value(json_object_get(d, "schema")), "dsperf.compare/1");
        size_t i;
        json_t *m;
        int seen = 0;
        json_array_foreach(json_object_get(d, "metrics"), i, m) {
            if (strcmp(json_string_value(json_object_get(m, "name")), "median_ttft_ms")) continue;
            seen = 1;
            /* the change is the two runs' medians' (one definition), and the server's 200 -> 300 ms
             * keeps it far above the gate's 10 % however a busy machine delays either run */
            json_t *jb = test_load_json(base), *js = test_load_json(slow);
            double want = 100 * (test_num(js, "median_ttft_ms") / test_num(jb, "median_ttft_ms") - 1);
            json_decref(jb);
            json_decref(js);
            CHECK_NEAR(json_number_value(json_object_get(m, "change_pct")), want, 1e-6 * fabs(want));
            CHECK(want > 25);
            CHECK(json_number_value(json_object_get(m, "ci_low_pct")) > 10);
            CHECK_STR(json_string_value(json_object_get(m, "verdict")), "worse");
        }
        CHECK(seen);
        json_decref(d);
    }
    /* injected HTTP 500s: errors:0 fails, and the count is the server's */
    snprintf(cmd, sizeof cmd, "compare %s %s --gate errors:0 --md", base, faulty);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 1);
    CHECK(out && strstr(out, "| metric | baseline | candidate |") && strstr(out, "**gate: FAILED**"));
    free(out);
}

TEST(compare_cli_bad_input) {
    char base[512];
    if (bench_to("5ms", "", "b", base, sizeof base)) { CHECK_MSG(0, "bench run failed"); return; }
    char cmd[2048];
    int st;
    const char *cases[][2] = {
        {"--gate 'p99_ttft_ms:10%'", "direction"},
        {"--gate 'p99_nonsense_ms:+5%'", "neither run has"},
        {"--confidence 2", "--confidence"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *opt = cases[i][0];
        snprintf(cmd, sizeof cmd, "compare %s %s %s", base, base, opt);
        char *out = test_run_merged(cmd, &st);
        CHECK_MSG(st == 2, "%s: exit %d", opt, st);
        CHECK_MSG(out && strstr(out, cases[i][1]), "%s: %s", opt, out ? out : "");
        free(out);
    }
    snprintf(cmd, sizeof cmd, "compare %s /nonexistent/cand.json", base);
    char *out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 2);
    CHECK(out && strstr(out, "candidate:"));
    free(out);
    snprintf(cmd, sizeof cmd, "compare %s", base);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 2);
    free(out);
}

/* A sweep against a server with capacity for that many requests in service. */
static int sweep_to(int capacity, const char *name, char *path, size_t len) {
    char sargs[128];
    /* 180 ms per request: throughput is set by the server's deadlines, not by a busy machine */
    snprintf(sargs, sizeof sargs, "--capacity %d --ttft 100ms --itl 20ms", capacity);
    return run_against(sargs, "sweep --concurrency 1,2,4,8 --requests 16 --dataset random:in=8,out=5 --slo ttft=1s",
                       name, path, len);
}

/* Halving the server's capacity halves throughput from 4 streams up: the level rule fails there,
 * the headline rule on peak throughput fails, and a rerun of the same server passes both. */
TEST(compare_cli_sweeps_level_by_level) {
    char base[512], rerun[512], half[512];
    if (sweep_to(4, "sw_base", base, sizeof base) || sweep_to(4, "sw_rerun", rerun, sizeof rerun) ||
        sweep_to(2, "sw_half", half, sizeof half)) {
        CHECK_MSG(0, "sweeps failed");
        return;
    }
    char cmd[2048], outp[512];
    int st;
    snprintf(cmd, sizeof cmd, "compare %s %s --gate 'peak_output_throughput:-20%%,output_throughput:-20%%,errors:0'", base, rerun);
    char *out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0, "rerun failed the gate (exit %d):\n%s", st, out ? out : "");
    CHECK(out && strstr(out, "per level") && strstr(out, "knee_output_throughput"));
    free(out);
    snprintf(outp, sizeof outp, "%s/swcmp.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "compare %s %s --gate 'peak_output_throughput:-20%%,output_throughput:-20%%' --out %s", base, half, outp);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 1);
    CHECK(out && strstr(out, "FAIL peak_output_throughput:-20%") && strstr(out, "at concurrency 4"));
    free(out);
    json_t *d = test_load_json(outp);
    CHECK(d && json_array_size(json_object_get(d, "levels")) == 4);
    if (d) {
        /* at 8 streams the throughput is bounded by capacity: 2 instead of 4 in service */
        const json_t *l8 = json_array_get(json_object_get(d, "levels"), 3);
        CHECK_NEAR(json_number_value(json_object_get(l8, "load")), 8, 0);
        const json_t *m0 = json_array_get(json_object_get(json_object_get(l8, "comparison"), "metrics"), 0);
        CHECK_STR(json_string_value(json_object_get(m0, "name")), "output_throughput");
        CHECK_NEAR(json_number_value(json_object_get(m0, "change_pct")), -50, 8);
        json_decref(d);
    }
    /* a sweep against a results file is one clear usage error */
    char res[512];
    snprintf(res, sizeof res, "%s/base.json", harness_tmpdir());
    if (bench_to("5ms", "", "base_for_mixed", res, sizeof res) == 0) {
        snprintf(cmd, sizeof cmd, "compare %s %s", base, res);
        out = test_run_merged(cmd, &st);
        CHECK_EQ_INT(st, 2);
        CHECK(out && strstr(out, "a sweep with a sweep"));
        free(out);
    }
}

/* Two tenants; with fewer slots the short 'chat' requests wait behind 'batch'. */
static int classes_to(int capacity, const char *name, char *path, size_t len) {
    char sargs[128];
    snprintf(sargs, sizeof sargs, "--capacity %d --ttft 5ms --itl 2ms", capacity);
    return run_against(sargs, "bench --concurrency 6 --requests 60 --class 'batch;weight=0.7;dataset=random:in=32,out=20' "
                       "--class 'chat;weight=0.3;dataset=random:in=8,out=2'", name, path, len);
}

TEST(compare_cli_one_request_class) {
    char base[512], cand[512];
    if (classes_to(6, "cls_base", base, sizeof base) || classes_to(2, "cls_cand", cand, sizeof cand)) {
        CHECK_MSG(0, "bench runs failed");
        return;
    }
    char cmd[2048];
    int st;
    /* 6 slots for 6 users: no wait; 2 slots: 'chat' queues behind 20-token answers */
    snprintf(cmd, sizeof cmd, "compare %s %s --class chat --gate 'median_ttft_ms:+50%%'", base, cand);
    char *out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 1);
    CHECK(out && strstr(out, "FAIL median_ttft_ms:+50%"));
    free(out);
    snprintf(cmd, sizeof cmd, "compare %s %s --class nope", base, cand);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 2);
    CHECK(out && strstr(out, "no request class 'nope'"));
    free(out);
}
