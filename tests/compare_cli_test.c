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

/* The metric named NAME of a compare document (or its level), NULL when absent. */
static const json_t *metric_of(const json_t *doc, const char *name) {
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(doc, "metrics"), i, m)
        if (!strcmp(json_string_value(json_object_get(m, "name")), name)) return m;
    return NULL;
}

/* Issue 11 item 7: runs judged against other SLOs (TTFT 40 ms vs 5 s: goodput 0 vs all) or made
 * with another dataset answer no question about the deployment. compare refuses those metrics,
 * a gate on their change fails naming the setting, and --allow-config-change compares anyway;
 * error counts and absolute rules still hold. */
TEST(compare_cli_refuses_metrics_whose_settings_differ) {
    char strict[512], loose[512], longer[512];
    const char *b = "bench --concurrency 4 --requests 40";
    char c1[256], c2[256], c3[256];
    snprintf(c1, sizeof c1, "%s --dataset random:in=8,out=4 --slo ttft=40ms", b);
    snprintf(c2, sizeof c2, "%s --dataset random:in=8,out=4 --slo ttft=5s", b);
    snprintf(c3, sizeof c3, "%s --dataset random:in=8,out=8 --slo ttft=40ms", b);
    if (run_against("--ttft 50ms --itl 2ms", c1, "slo_strict", strict, sizeof strict) ||
        run_against("--ttft 50ms --itl 2ms", c2, "slo_loose", loose, sizeof loose) ||
        run_against("--ttft 50ms --itl 2ms", c3, "longer", longer, sizeof longer)) {
        CHECK_MSG(0, "bench runs failed");
        return;
    }
    char cmd[2048];
    int st;
    snprintf(cmd, sizeof cmd, "compare %s %s --gate 'request_goodput:-5%%,median_ttft_ms:+50%%,errors:0'", strict, loose);
    char *out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 1);
    CHECK(out && strstr(out, "FAIL request_goodput:-5%") && strstr(out, "not comparable"));
    CHECK(out && strstr(out, "SLO ttft 40 ms vs ttft 5000 ms"));
    CHECK(out && strstr(out, "ok   median_ttft_ms:+50%"));      /* same workload and load: compared */
    free(out);
    snprintf(cmd, sizeof cmd, "compare %s %s --gate 'request_goodput:-5%%' --allow-config-change", strict, loose);
    out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0, "goodput rises 0 -> all under the looser SLO: %s", out ? out : "");
    free(out);
    /* another dataset: latencies are refused, an absolute ceiling and the error count are not */
    char outp[512];
    snprintf(outp, sizeof outp, "%s/cfgdiff.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "compare %s %s --gate 'p99_e2el_ms:+10%%,p99_e2el_ms:<=60000,errors:0' --out %s", strict, longer, outp);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 1);
    CHECK(out && strstr(out, "FAIL p99_e2el_ms:+10%") && strstr(out, "dataset \"random:in=8,out=4\" vs \"random:in=8,out=8\""));
    CHECK(out && strstr(out, "ok   p99_e2el_ms:<=60000") && strstr(out, "ok   errors:0"));
    free(out);
    json_t *d = test_load_json(outp);
    CHECK(d != NULL);
    if (d) {
        const json_t *m = metric_of(d, "p99_e2el_ms");
        CHECK(m && json_is_false(json_object_get(m, "comparable")));
        CHECK_STR(json_string_value(json_object_get(m, "verdict")), "not comparable");
        CHECK(json_is_string(json_object_get(json_object_get(d, "config_differences"), "workload")));
        json_decref(d);
    }
}

/* Rewrites a results file's TTFT samples the way dsperf wrote them before sample sets: the values
 * in us, as 2,000 evenly spaced quantiles of the run's n (numpy-linear, (k + 0.5) / 2,000). */
static int cmp_dbl(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static int write_old_format(const char *requests_jsonl, const char *results, const char *out) {
    FILE *f = fopen(requests_jsonl, "r");
    if (!f) return -1;
    size_t n = 0, cap = 4096;
    double *v = malloc(cap * sizeof *v);
    char line[1 << 16];
    while (fgets(line, sizeof line, f)) {
        json_t *o = json_loads(line, 0, NULL);
        const json_t *t = json_object_get(o, "ttft_ms");
        if (json_is_number(t) && !strcmp(json_string_value(json_object_get(o, "outcome")), "ok")) {
            if (n == cap) v = realloc(v, (cap *= 2) * sizeof *v);
            v[n++] = json_number_value(t);
        }
        json_decref(o);
    }
    fclose(f);
    qsort(v, n, sizeof *v, cmp_dbl);
    json_t *r = test_load_json(results), *vals = json_array();
    const size_t m = 2000;
    for (size_t k = 0; k < m && n > m; k++) {
        double h = (double)(n - 1) * ((double)k + 0.5) / (double)m, lo = (double)(size_t)h;
        double x = v[(size_t)lo] + (h - lo) * (v[(size_t)lo + 1 < n ? (size_t)lo + 1 : n - 1] - v[(size_t)lo]);
        json_array_append_new(vals, json_integer((json_int_t)llround(x * 1000)));
    }
    json_t *old = json_pack("{s:s,s:i,s:{s:o,s:I,s:s}}", "unit", "us", "max_per_metric", 2000, "ttft", "values", vals,
                            "n", (json_int_t)n, "method", "quantiles");
    json_object_set_new(r, "samples", old);
    int rc = r && n > m && json_dump_file(r, out, 0) == 0 ? 0 : -1;
    json_decref(r);
    free(v);
    return rc;
}

static double half_width(const json_t *m) {
    return (json_number_value(json_object_get(m, "ci_high")) - json_number_value(json_object_get(m, "ci_low"))) / 2;
}

/* End to end on servers with known timing: TTFT uniform in 20 ms x [0.5, 1.5] vs 30 ms x [0.5,
 * 1.5] (serve --jitter 0.5), 3,000 requests each — more than the 2,000 quantiles older files
 * kept. The results keep every sample; compare's interval of the mean TTFT is sized by n = 3,000
 * (Welch: 1.96 sqrt(s_a^2/n_a + s_b^2/n_b), from the runs' own std) and finds the slower server;
 * the same runs in the older file format give an interval of the same width (their 2,000
 * quantiles stand for the 3,000 samples; taken as 2,000 samples it would be 22 % wider). */
TEST(compare_cli_intervals_sized_by_the_runs_n) {
    char a[512], b[512], reqa[600], reqb[600];
    const char *bench = "bench --concurrency 32 --requests 3000 --dataset random:in=8,out=2 --save-requests";
    char ca[700], cb[700];
    snprintf(reqa, sizeof reqa, "%s/n_a.jsonl", harness_tmpdir());
    snprintf(reqb, sizeof reqb, "%s/n_b.jsonl", harness_tmpdir());
    snprintf(ca, sizeof ca, "%s %s", bench, reqa);
    snprintf(cb, sizeof cb, "%s %s", bench, reqb);
    if (run_against("--ttft 20ms --itl 1ms --jitter 0.5 --seed 1", ca, "n_a", a, sizeof a) ||
        run_against("--ttft 30ms --itl 1ms --jitter 0.5 --seed 2", cb, "n_b", b, sizeof b)) {
        CHECK_MSG(0, "bench runs failed");
        return;
    }
    json_t *ra = test_load_json(a), *rb = test_load_json(b);
    CHECK(ra && rb);
    if (!ra || !rb) { json_decref(ra); json_decref(rb); return; }
    double na = test_num(json_object_get(json_object_get(ra, "samples"), "ttft"), "n");
    double nb = test_num(json_object_get(json_object_get(rb, "samples"), "ttft"), "n");
    CHECK_EQ_INT(na, test_num(ra, "completed"));
    CHECK(na > 2000 && nb > 2000);
    double sa = test_num(ra, "std_ttft_ms"), sb = test_num(rb, "std_ttft_ms");
    double want = 1.959964 * sqrt(sa * sa * na / (na - 1) / na + sb * sb * nb / (nb - 1) / nb);
    char outp[512], oldp[512], olda[512], oldb[512], cmd[2048];
    snprintf(outp, sizeof outp, "%s/n_cmp.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "compare %s %s --out %s", a, b, outp);
    int st;
    char *out = test_run_merged(cmd, &st);
    free(out);
    json_t *d = test_load_json(outp);
    const json_t *m = d ? metric_of(d, "mean_ttft_ms") : NULL;
    CHECK(m != NULL);
    double hw = m ? half_width(m) : NAN;
    if (m) {
        CHECK_NEAR(hw, want, want * 0.01);
        CHECK_STR(json_string_value(json_object_get(m, "verdict")), "worse");
        CHECK(json_number_value(json_object_get(m, "ci_low")) > 0);
        CHECK(strstr(json_string_value(json_object_get(m, "basis")), "all ") != NULL);
        const json_t *p99 = metric_of(d, "p99_ttft_ms");
        CHECK(p99 && json_is_number(json_object_get(p99, "ci_low")));
    }
    /* the same two runs as older files */
    snprintf(olda, sizeof olda, "%s/n_a_old.json", harness_tmpdir());
    snprintf(oldb, sizeof oldb, "%s/n_b_old.json", harness_tmpdir());
    CHECK(write_old_format(reqa, a, olda) == 0 && write_old_format(reqb, b, oldb) == 0);
    snprintf(oldp, sizeof oldp, "%s/n_cmp_old.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "compare %s %s --out %s", olda, oldb, oldp);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 0);
    free(out);
    json_t *od = test_load_json(oldp);
    const json_t *om = od ? metric_of(od, "mean_ttft_ms") : NULL;
    CHECK(om != NULL);
    if (om && m) {
        CHECK_NEAR(half_width(om), hw, hw * 0.05);
        CHECK(strstr(json_string_value(json_object_get(om, "basis")), "quantiles standing for") != NULL);
    }
    json_decref(d);
    json_decref(od);
    json_decref(ra);
    json_decref(rb);
}

/* The same two runs' request and output throughput: a fixed 16 tokens per request, a server
 * 50 % slower per token. Both are count / duration over the same duration, so their changes are
 * one change: the same interval, the same verdict (they got different ones when request
 * throughput's interval came from completions per second, which arrive in waves). */
TEST(compare_cli_request_and_output_throughput_agree) {
    char a[512], b[512];
    const char *bench = "bench --concurrency 8 --duration 7s --dataset random:in=8,out=16";
    if (run_against("--ttft 10ms --itl 10ms", bench, "tp_a", a, sizeof a) ||
        run_against("--ttft 10ms --itl 15ms", bench, "tp_b", b, sizeof b)) {
        CHECK_MSG(0, "bench runs failed");
        return;
    }
    char outp[512], cmd[2048];
    snprintf(outp, sizeof outp, "%s/tp_cmp.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "compare %s %s --out %s", a, b, outp);
    int st;
    char *out = test_run_merged(cmd, &st);
    free(out);
    json_t *d = test_load_json(outp);
    const json_t *rt = d ? metric_of(d, "request_throughput") : NULL, *ot = d ? metric_of(d, "output_throughput") : NULL;
    CHECK(rt && ot);
    if (rt && ot) {
        CHECK_NEAR(test_num(rt, "change_pct"), test_num(ot, "change_pct"), 1e-6);
        CHECK_NEAR(test_num(rt, "ci_low_pct"), test_num(ot, "ci_low_pct"), 1e-6);   /* the file keeps 10 digits */
        CHECK_NEAR(test_num(rt, "ci_high_pct"), test_num(ot, "ci_high_pct"), 1e-6);
        CHECK_STR(json_string_value(json_object_get(rt, "verdict")), json_string_value(json_object_get(ot, "verdict")));
        CHECK_STR(json_string_value(json_object_get(ot, "verdict")), "worse");
    }
    json_decref(d);
}
