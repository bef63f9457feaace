/* Integration tests of the results history through the real binary: runs against `dsperf serve`
 * on loopback recorded with --db, a TTFT regression injected at a known run (the server's --ttft
 * 100 ms -> 120 ms), found by `history trend` at that run and failed by a history gate, while a
 * rerun of the same build passes; drift runs (their own kind); a history written before sample
 * sets; import and export; and bad input. */
#include "harness.h"
#include "testutil.h"
#include "common/fileio.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* `n` bench runs against one `dsperf serve` with this TTFT, each recorded with the label. */
static int bench_runs(const char *db, const char *ttft, int n, const char *label) {
    test_server s;
    char sargs[160];
    snprintf(sargs, sizeof sargs, "--ttft %s --itl 2ms --jitter 0.05 --seed 3", ttft);
    if (test_serve_start(&s, sargs) != 0) return -1;
    int bad = 0;
    for (int i = 0; i < n && !bad; i++) {
        char cmd[1024];
        /* --warmup: a server's first requests (its pages, a sanitizer's shadow memory) are not the build's speed */
        snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 4 --requests 60 --warmup 8 --dataset random:in=8,out=4 --seed %d "
                 "--quiet --db %s --label %s", s.url, i + 1, db, label);
        bad = test_run(cmd, NULL, NULL) != 0;
    }
    test_serve_stop(&s);
    return bad ? -1 : 0;
}

TEST(history_cli_trend_finds_an_injected_regression_and_the_gate_fails_it) {
    char db[512];
    snprintf(db, sizeof db, "%s/perf.db", harness_tmpdir());
    /* runs 1..4: release v1 at 100 ms; run 5: a rerun of the same build; runs 6..9: v2 at 120 ms.
     * 100 ms, not less: a loaded host adds milliseconds to every TTFT, which must stay well inside
     * the gate's 10 % for the rerun to be the same build */
    if (bench_runs(db, "100ms", 4, "release=v1") || bench_runs(db, "100ms", 1, "release=v1") ||
        bench_runs(db, "120ms", 4, "release=v2")) {
        CHECK_MSG(0, "bench runs failed");
        return;
    }
    char cmd[1024];
    int st;
    /* the rerun (run 5) against the four runs before it: the same build passes */
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline 'label:release=v1' --candidate 5 "
             "--gate 'median_ttft_ms:+10%%,errors:0'", db);
    char *out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0, "the rerun was gated as a regression (exit %d):\n%s", st, out);
    CHECK(out && strstr(out, "gate: PASSED") && strstr(out, "4 runs (1..4)"));
    free(out);
    /* the latest v2 run against the v1 runs: +20 %, beyond the rule and beyond noise */
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline 'label:release=v1 last:5' --candidate latest "
             "--gate 'median_ttft_ms:+10%%,errors:0' --out %s/gate.json", db, harness_tmpdir());
    out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 1, "exit %d:\n%s", st, out);
    CHECK(out && strstr(out, "gate: FAILED") && strstr(out, "FAIL median_ttft_ms:+10%"));
    free(out);
    char path[600];
    snprintf(path, sizeof path, "%s/gate.json", harness_tmpdir());
    json_t *g = test_load_json(path);
    CHECK(g != NULL);
    if (g) {
        size_t i;
        json_t *m;
        json_array_foreach(json_object_get(g, "metrics"), i, m) {
            if (strcmp(json_string_value(json_object_get(m, "name")), "median_ttft_ms")) continue;
            /* the server's TTFT went from 100 to 120 ms: +20 %, past the gate's +10 %. How far past
             * depends on how late a busy machine runs the client and the server on either side, so
             * only the rule's side is asserted */
            double pct = json_number_value(json_object_get(m, "change_pct"));
            CHECK_MSG(pct > 10, "median TTFT change %.1f %%", pct);
            CHECK(json_number_value(json_object_get(m, "ci_low_pct")) > 10);
        }
        CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(g, "history"), "baseline_runs")), 5);
        json_decref(g);
    }
    /* the trend finds the step at run 6, tested and named with its label */
    snprintf(cmd, sizeof cmd, "history --db %s trend median_ttft_ms --json --out %s/trend.json", db, harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/trend.json", harness_tmpdir());
    json_t *t = test_load_json(path);
    CHECK(t != NULL);
    if (t) {
        CHECK_EQ_INT(json_array_size(json_object_get(t, "runs")), 9);
        /* exactly one change of the injected size, at run 6. A busy machine can also move the
         * median TTFT between two runs by a few percent for real (and the test of that shift then
         * rightly holds), so changes under 10 % -- half the injected one -- are not counted */
        size_t i, big = 0;
        json_t *cp;
        json_array_foreach(json_object_get(t, "change_points"), i, cp) {
            if (!json_is_true(json_object_get(cp, "confirmed")) || fabs(json_number_value(json_object_get(cp, "change_pct"))) < 10) continue;
            big++;
            CHECK_EQ_INT(json_integer_value(json_object_get(cp, "id")), 6);
            CHECK(strstr(json_string_value(json_object_get(cp, "labels")), "release=v2") != NULL);
        }
        CHECK_EQ_INT(big, 1);
        json_decref(t);
    }
    snprintf(cmd, sizeof cmd, "history --db %s trend median_ttft_ms", db);
    out = test_run_merged(cmd, &st);
    CHECK_EQ_INT(st, 0);
    CHECK_MSG(out && strstr(out, "median TTFT rose") && strstr(out, "at run 6, release=v2"), "%s", out);
    free(out);
    /* the trend page: self-contained HTML with the chart, the change and the runs' table */
    snprintf(cmd, sizeof cmd, "report --db %s --metric median_ttft_ms -o %s/trend.html --csv %s/trend.csv", db,
             harness_tmpdir(), harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/trend.html", harness_tmpdir());
    FILE *hf = fopen(path, "r");
    char *html = NULL;
    size_t hl = 0;
    if (hf) { html = calloc(1, 1 << 20); hl = fread(html, 1, (1 << 20) - 1, hf); fclose(hf); }
    CHECK(html && hl > 1000);
    if (html) {
        CHECK(strstr(html, "<svg") && strstr(html, "class=\"area m-ttft\"") && strstr(html, "rule change"));
        CHECK(strstr(html, "median TTFT rose") && strstr(html, "at run 6, release=v2"));
        CHECK(!strstr(html, "<script") && !strstr(html, "http://") && !strstr(html, "https://"));
    }
    free(html);
    snprintf(path, sizeof path, "%s/trend.csv", harness_tmpdir());
    hf = fopen(path, "r");
    int rows = 0, run6_changed = 0;
    char line[512];
    while (hf && fgets(line, sizeof line, hf)) { rows++; run6_changed += !strncmp(line, "median_ttft_ms,6,", 17) && strstr(line, ",true\n"); }
    if (hf) fclose(hf);
    CHECK_EQ_INT(rows, 10);      /* header + 9 runs */
    CHECK_EQ_INT(run6_changed, 1);
    /* list and best read the same runs */
    snprintf(cmd, sizeof cmd, "history --db %s list label:release=v2", db);
    out = test_run_merged(cmd, &st);
    CHECK(st == 0 && out && strstr(out, "(4 runs)") && strstr(out, "dsperf-serve"));
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s best median_ttft_ms --top 3", db);
    out = test_run_merged(cmd, &st);
    CHECK(st == 0 && out && strstr(out, "release=v1") && !strstr(out, "release=v2"));
    free(out);
}

TEST(history_cli_import_export_and_first_pipeline_run) {
    char db[512], res[512], cmd[2048];
    snprintf(db, sizeof db, "%s/h.db", harness_tmpdir());
    snprintf(res, sizeof res, "%s/sim.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --concurrency 4 --requests 200 --dataset random:in=64,out=16 --out %s --quiet", res);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    /* a pipeline's first run has no baseline: --no-baseline-ok lets it pass, saying so */
    snprintf(cmd, sizeof cmd, "history --db %s import %s --label branch=main", db, res);
    int st;
    char *out = test_run_merged(cmd, &st);
    CHECK(st == 0 && out && strstr(out, "recorded as run 1"));
    free(out);
    out = test_run_merged(cmd, &st);
    CHECK(st == 0 && out && strstr(out, "already recorded as run 1"));
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline label:branch=main --no-baseline-ok --gate errors:0", db);
    out = test_run_merged(cmd, &st);
    CHECK(st == 0 && out && strstr(out, "no baseline"));
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline label:branch=main --gate errors:0", db);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 2);
    /* export: llm-d's Benchmark Report v0.2 */
    snprintf(cmd, sizeof cmd, "history --db %s export 1 -o %s/br.json", db, harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/br.json", harness_tmpdir());
    json_t *br = test_load_json(path);
    CHECK(br && !strcmp(json_string_value(json_object_get(br, "version")), "0.2"));
    const json_t *acc = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(br, "scenario"), "stack"), 0),
                                                        "standardized"), "accelerator");
    CHECK_STR(json_string_value(json_object_get(acc, "model")), "h200 (simulated)");
    json_decref(br);
    /* show --doc gives the results file back */
    snprintf(cmd, sizeof cmd, "history --db %s show 1 --doc", db);
    char *doc = NULL;
    CHECK_EQ_INT(test_run(cmd, &doc, NULL), 0);
    json_t *a = doc ? json_loads(doc, 0, NULL) : NULL, *b = test_load_json(res);
    CHECK(a && b && json_equal(a, b));
    json_decref(a);
    json_decref(b);
    free(doc);
    /* latest is a documented query term: show takes it (and any query matching one run) */
    snprintf(cmd, sizeof cmd, "history --db %s show latest --doc", db);
    doc = NULL;
    CHECK_EQ_INT(test_run(cmd, &doc, NULL), 0);
    a = doc ? json_loads(doc, 0, NULL) : NULL;
    b = test_load_json(res);
    CHECK(a && b && json_equal(a, b));
    json_decref(a);
    json_decref(b);
    free(doc);
    snprintf(cmd, sizeof cmd, "history --db %s show 'model:*'", db);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "history --db %s show model:no-such-model", db);
    char *err = NULL;
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK_MSG(err && strstr(err, "matches 0 runs"), "%s", err ? err : "");
    free(err);
    snprintf(cmd, sizeof cmd, "history --db %s check", db);
    out = test_run_merged(cmd, &st);
    CHECK(st == 0 && out && strstr(out, ": ok"));
    free(out);
}

/* dsperf drift --db: one drift run per candidate, baseline `dsperf serve` plain */
static int drift_run(const char *db, const char *base_url, const char *cand_args, const char *label) {
    test_server c;
    char cargs[160];
    snprintf(cargs, sizeof cargs, "--itl 0 --ttft 0 %s", cand_args);
    if (test_serve_start(&c, cargs) != 0) return -1;
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "drift --baseline %s --candidate %s --contexts 32,128 --prompts 4 --gen-tokens 16 --no-floor "
             "--quiet --db %s --label %s", base_url, c.url, db, label);
    int st = test_run(cmd, NULL, NULL);
    test_serve_stop(&c);
    return st;
}

TEST(history_cli_records_drift_runs) {
    char db[512], cmd[1024];
    snprintf(db, sizeof db, "%s/drift.db", harness_tmpdir());
    test_server b;
    if (test_serve_start(&b, "--itl 0 --ttft 0") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    /* run 1: a candidate identical to the baseline; run 2: one whose logits carry noise */
    int s1 = drift_run(db, b.url, "", "kv=bf16"), s2 = drift_run(db, b.url, "--logprob-noise 0.5,1", "kv=fp8");
    test_serve_stop(&b);
    CHECK_EQ_INT(s1, 0);
    CHECK_EQ_INT(s2, 0);
    int st;
    snprintf(cmd, sizeof cmd, "history --db %s list kind:drift", db);
    char *out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0 && out && strstr(out, "(2 runs)") && strstr(out, "kv=fp8"), "%s", out ? out : "");
    free(out);
    /* the headline is the longest context's, with the bucket's own interval as its band */
    snprintf(cmd, sizeof cmd, "history --db %s trend top1_agreement --json --out %s/dtrend.json", db, harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char path[600];
    snprintf(path, sizeof path, "%s/dtrend.json", harness_tmpdir());
    json_t *t = test_load_json(path), *d2 = NULL;
    const json_t *runs = json_object_get(t, "runs");
    CHECK_EQ_INT(json_array_size(runs), 2);
    CHECK_STR(json_string_value(json_object_get(t, "direction")), "higher_is_better");
    /* run 2's value and band are its document's 128-word bucket */
    snprintf(cmd, sizeof cmd, "history --db %s show 2 --doc", db);
    char *doc = NULL;
    CHECK_EQ_INT(test_run(cmd, &doc, NULL), 0);
    d2 = doc ? json_loads(doc, 0, NULL) : NULL;
    free(doc);
    const json_t *bk = json_array_get(json_object_get(d2, "buckets"), 1), *r1 = json_array_get(runs, 0), *r2 = json_array_get(runs, 1);
    CHECK_EQ_INT(json_integer_value(json_object_get(bk, "context")), 128);
    CHECK_NEAR(json_number_value(json_object_get(r1, "value")), 1.0, 0);
    CHECK(json_number_value(json_object_get(r2, "value")) < 1.0);
    CHECK_NEAR(json_number_value(json_object_get(r2, "value")), json_number_value(json_object_get(bk, "top1_agreement")), 1e-12);
    CHECK_NEAR(json_number_value(json_object_get(r2, "lo")), json_number_value(json_array_get(json_object_get(bk, "top1_agreement_ci"), 0)), 1e-12);
    CHECK_NEAR(json_number_value(json_object_get(r2, "hi")), json_number_value(json_array_get(json_object_get(bk, "top1_agreement_ci"), 1)), 1e-12);
    json_decref(d2);
    json_decref(t);
    /* best knows which way is better for a drift metric; compare says where drift runs are read */
    snprintf(cmd, sizeof cmd, "history --db %s best top1_agreement", db);
    out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0 && out && strstr(out, "kv=bf16") && strstr(out, "kv=fp8") && strstr(out, "kv=bf16") < strstr(out, "kv=fp8"),
              "%s", out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline 1 --candidate 2", db);
    out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 2 && out && strstr(out, "dsperf.drift/1 document"), "exit %d: %s", st, out ? out : "");
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s show 2", db);
    out = test_run_merged(cmd, &st);
    CHECK_MSG(st == 0 && out && strstr(out, "run 2: drift") && strstr(out, "kl") && strstr(out, "delta_ppl"), "%s", out ? out : "");
    /* a metric the document gives no interval for has no band */
    const char *abs_line = out ? strstr(out, "  mean_abs_logprob_delta") : NULL, *nl = abs_line ? strchr(abs_line, '\n') : NULL;
    CHECK_MSG(abs_line && nl && !memchr(abs_line, '[', (size_t)(nl - abs_line)), "%s", out ? out : "");
    free(out);
}

/* A history recorded before results files kept sample sets (tests/fixtures/history/README.md:
 * runs 1-3 at a 20 ms server, 4-6 at 24 ms, samples as µs arrays) is read by this dsperf. */
TEST(history_cli_reads_a_history_written_before_sample_sets) {
    char db[512], cmd[1024], path[600];
    snprintf(db, sizeof db, "%s/old.db", harness_tmpdir());
    char *bytes = NULL;
    size_t len = 0;
    if (fileio_read_all("tests/fixtures/history/before-sample-sets.db", &bytes, &len) < 0 ||
        fileio_write_atomic(db, bytes, len) < 0) { free(bytes); CHECK_MSG(0, "cannot copy the fixture"); return; }
    free(bytes);
    int st;
    /* the trend's change point is tested on the old runs' pooled arrays */
    snprintf(cmd, sizeof cmd, "history --db %s trend median_ttft_ms --json --out %s/old-trend.json", db, harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/old-trend.json", harness_tmpdir());
    json_t *t = test_load_json(path);
    CHECK_EQ_INT(json_array_size(json_object_get(t, "runs")), 6);
    size_t i, confirmed = 0;
    json_t *cp;
    json_array_foreach(json_object_get(t, "change_points"), i, cp) {
        if (!json_is_true(json_object_get(cp, "confirmed"))) continue;
        confirmed++;
        CHECK_EQ_INT(json_integer_value(json_object_get(cp, "id")), 4);
        /* the stored medians: 20.79 ms before, 24.44 ms after (+17.6 %) */
        CHECK_NEAR(json_number_value(json_object_get(cp, "change_pct")), 17.6, 1.5);
        CHECK(strstr(json_string_value(json_object_get(cp, "basis")), "300 / 300 samples") != NULL);
    }
    CHECK_EQ_INT(confirmed, 1);
    json_decref(t);
    /* a gate over the old runs: the 24 ms run fails against the 20 ms ones, a 20 ms one passes */
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline label:release=v1 --candidate 4 --gate median_ttft_ms:+10%%", db);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 1);
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline 1..2 --candidate 3 --gate median_ttft_ms:+10%%", db);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    /* a new run (sample sets) recorded into the old history is comparable with the old runs */
    test_server s;
    if (test_serve_start(&s, "--ttft 24ms --itl 2ms --jitter 0.05 --seed 3") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 4 --requests 100 --dataset random:in=8,out=4 --seed 7 --quiet "
             "--db %s --label release=v2", s.url, db);
    st = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(st, 0);
    snprintf(cmd, sizeof cmd, "history --db %s compare --baseline label:release=v2 --candidate latest --json --out %s/mixed.json",
             db, harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(path, sizeof path, "%s/mixed.json", harness_tmpdir());
    json_t *c = test_load_json(path);
    const json_t *br = json_object_get(json_object_get(c, "history"), "baseline_runs");
    CHECK(json_array_size(br) == 3 && json_integer_value(json_array_get(br, 0)) == 4);
    json_t *m;
    bool seen = false;
    json_array_foreach(json_object_get(c, "metrics"), i, m) {
        if (strcmp(json_string_value(json_object_get(m, "name")), "median_ttft_ms")) continue;
        seen = true;
        CHECK(json_is_number(json_object_get(m, "ci_low")) && json_is_number(json_object_get(m, "ci_high")));
        CHECK_MSG(strstr(json_string_value(json_object_get(m, "basis")), "300 / 100 samples") != NULL, "%s",
                  json_string_value(json_object_get(m, "basis")));
    }
    CHECK(seen);
    json_decref(c);
    snprintf(cmd, sizeof cmd, "history --db %s check", db);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
}

/* A simulated context ladder with --db is one sweep in the history (its levels are not runs of
 * their own), labelled, with the ladder in its configuration. */
TEST(history_cli_records_a_sim_ladder_once) {
    char db[512], cmd[1024];
    snprintf(db, sizeof db, "%s/ladder.db", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --input-len 128,256,512 --requests 20 --concurrency 4 --quiet --db %s --label run=ladder", db);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "history --db %s list --json", db);
    char *out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    json_t *runs = out ? json_loads(out, 0, NULL) : NULL;
    CHECK(json_is_array(runs) && json_array_size(runs) == 1);
    const json_t *r = json_array_get(runs, 0);
    CHECK_STR(json_string_value(json_object_get(r, "kind")), "sweep");
    CHECK_STR(json_string_value(json_object_get(json_object_get(r, "labels"), "run")), "ladder");
    CHECK(json_number_value(json_object_get(json_object_get(r, "metrics"), "peak_output_throughput")) > 0);
    json_decref(runs);
    free(out);
    snprintf(cmd, sizeof cmd, "history --db %s show 1", db);
    out = NULL;
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    CHECK(out && strstr(out, "\"ladder\":\"128,256,512\"") && strstr(out, "\"mode\":\"input_len\""));
    free(out);
}

TEST(history_cli_bad_input) {
    char cmd[1024], notdb[512];
    snprintf(notdb, sizeof notdb, "%s/notes.txt", harness_tmpdir());
    FILE *f = fopen(notdb, "w");
    fputs("not a database\n", f);
    fclose(f);
    struct { const char *args; int rc; const char *says; } cases[] = {
        {"history list", 2, "--db PATH"},
        {"history --db %s/none.db list", 2, "no history at"},
        {"history --db NOTDB list", 2, "not an SQLite database"},
        {"history --db %s/x.db frobnicate", 2, "unknown history command"},
        {"bench --url http://127.0.0.1:1 --concurrency 1 --db NOTDB", 2, "not an SQLite database"},
        {"bench --url http://127.0.0.1:1 --concurrency 1 --label nokey", 2, "--label"},
        {"sim --requests 10 --label a=b", 2, "give --db"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char args[700];
        snprintf(args, sizeof args, cases[i].args, harness_tmpdir());
        char *p = strstr(args, "NOTDB");
        if (p) {
            char tail[700];
            snprintf(tail, sizeof tail, "%s", p + 5);
            snprintf(p, sizeof args - (size_t)(p - args), "%s%s", notdb, tail);
        }
        snprintf(cmd, sizeof cmd, "%s", args);
        int st;
        char *out = test_run_merged(cmd, &st);
        const char *said = out ? out : "(nothing)";
        CHECK_MSG(st == cases[i].rc, "'%s': exit %d, want %d:\n%s", cmd, st, cases[i].rc, said);
        CHECK_MSG(out && strstr(out, cases[i].says), "'%s' says:\n%s", cmd, said);
        CHECK_MSG(out && strchr(out, '\n') == out + strlen(out) - 1, "'%s' gave more than one line:\n%s", cmd, said);
        free(out);
    }
    /* a bad query term names itself */
    char db[512];
    snprintf(db, sizeof db, "%s/q.db", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --requests 50 --concurrency 2 --quiet --db %s", db);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "history --db %s list modle:x", db);
    int st;
    char *out = test_run_merged(cmd, &st);
    CHECK(st == 2 && out && strstr(out, "unknown query term 'modle:x'"));
    free(out);
    f = fopen(notdb, "r");
    char line[64] = "";
    CHECK(f && fgets(line, sizeof line, f) && !strcmp(line, "not a database\n"));   /* left as it was */
    if (f) fclose(f);
}
