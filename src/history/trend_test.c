/* Tests of what the history computes: pooling (against compare's own statistics), the trend's
 * change points on runs with a known step (and none on runs without one), the leaderboard, a
 * compare against history, the import of a vLLM result file, and the BR0.2 export. The runs are
 * synthetic requests pushed through the real summary, so the right answers are known. */
#include "harness.h"
#include "history/hist_internal.h"
#include "history/hist_testdata.h"
#include "results/results.h"
#include "metrics/record.h"
#include "metrics/stats.h"
#include "metrics/sampleset.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cmp_double_asc(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

static json_t *run_doc(double ttft_ms, double jitter_ms, size_t n, uint64_t seed) {
    return hist_test_run(ttft_ms, jitter_ms, n, 4, seed, "random:in=8,out=4");
}

static history *fresh(const char *name, char **path) {
    char err[512];
    if (asprintf(path, "%s/%s", harness_tmpdir(), name) < 0) return NULL;
    history *h = NULL;
    if (history_open(*path, HISTORY_WRITE, &h, err, sizeof err) < 0) fprintf(stderr, "%s\n", err);
    return h;
}

static void add(history *h, json_t *doc, const char *label) {
    char err[512];
    int64_t id;
    history_record_opts ro = { .labels = &label, .n_labels = label ? 1 : 0 };
    if (history_record(h, doc, &ro, &id, NULL, err, sizeof err) < 0) fprintf(stderr, "record: %s\n", err);
    json_decref(doc);
}

/* A family as results files kept it before sample sets: every value in µs ("all", up to 2,000). */
static json_t *old_ttft_family(const recset *rs) {
    json_t *vals = json_array();
    double *us = malloc(rs->n * sizeof *us);
    for (size_t i = 0; us && i < rs->n; i++) us[i] = (double)(rs->v[i].first_ns - rs->v[i].send_ns) / 1000.0;
    qsort(us, rs->n, sizeof *us, cmp_double_asc);
    for (size_t i = 0; us && i < rs->n; i++) json_array_append_new(vals, json_integer((json_int_t)llround(us[i])));
    free(us);
    return json_pack("{s:o,s:I,s:s}", "values", vals, "n", (json_int_t)rs->n, "method", "all");
}

TEST(history_pool_merges_the_runs_sample_sets) {
    const char *ds = "random:in=8,out=4";
    recset ra, rb, both;
    recset_init(&ra);
    recset_init(&rb);
    recset_init(&both);
    hist_test_records(&ra, 20, 2, 300, 4, 1, 1000000000LL);
    hist_test_records(&rb, 30, 2, 100, 4, 2, 1000000000LL);
    /* the same 400 requests measured as one run */
    hist_test_records(&both, 30, 2, 100, 4, 2, hist_test_records(&both, 20, 2, 300, 4, 1, 1000000000LL));
    json_t *a = hist_test_doc(&ra, ds), *b = hist_test_doc(&rb, ds), *all = hist_test_doc(&both, ds);
    json_t *v[2] = { hist_compare_view(a), hist_compare_view(b) };
    json_t *p = hist_pool(v, 2, "two runs");
    CHECK(p != NULL);
    if (!p) goto out;
    /* every family's pooled set is the set of the 400 requests: the same buckets, n, min and max;
     * mean and m2 up to double rounding */
    const json_t *ps = json_object_get(p, "samples"), *as = json_object_get(all, "samples");
    const char *k;
    json_t *af;
    size_t families = 0;
    json_object_foreach((json_t *)as, k, af) {
        if (!json_object_get(af, "buckets")) continue;
        const json_t *pf = json_object_get(ps, k);
        families++;
        CHECK_MSG(json_integer_value(json_object_get(pf, "n")) == json_integer_value(json_object_get(af, "n")), "%s", k);
        CHECK_MSG(json_equal(json_object_get(pf, "buckets"), json_object_get(af, "buckets")), "%s", k);
        CHECK_MSG(json_equal(json_object_get(pf, "min"), json_object_get(af, "min")) &&
                  json_equal(json_object_get(pf, "max"), json_object_get(af, "max")), "%s", k);
        double am = json_number_value(json_object_get(af, "mean")), a2 = json_number_value(json_object_get(af, "m2"));
        CHECK_NEAR(json_number_value(json_object_get(pf, "mean")), am, 1e-9 * fabs(am) + 1e-9);
        CHECK_NEAR(json_number_value(json_object_get(pf, "m2")), a2, 1e-9 * fabs(a2) + 1e-6);
    }
    CHECK(families >= 7);     /* ttft, tpot, e2el, itl, queue, the two from-schedule, out_tokens */
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(ps, "ttft"), "n")), 400);
    /* the statistics a gate reads are the merged set's: the mean exact, a percentile within the
     * buckets' relative error of the 400 requests' own */
    double p90 = json_number_value(json_object_get(all, "p90_ttft_ms"));
    CHECK_NEAR(json_number_value(json_object_get(p, "p90_ttft_ms")), p90, p90 * HDR_REL_ERROR);
    CHECK_NEAR(json_number_value(json_object_get(p, "mean_ttft_ms")), json_number_value(json_object_get(all, "mean_ttft_ms")), 1e-9);
    /* 3/4 of the requests near 20 ms, 1/4 near 30: the pooled mean is near 22.5 */
    CHECK_NEAR(json_number_value(json_object_get(p, "mean_ttft_ms")), 22.5, 0.3);
    CHECK_NEAR(json_number_value(json_object_get(p, "completed")), 200, 1e-9);     /* the runs' mean */
    CHECK_EQ_INT(json_integer_value(json_object_get(p, "pooled_runs")), 2);
    CHECK_STR(json_string_value(json_object_get(p, "command_line")), "two runs");
    /* the timelines' interiors, between placeholders compare drops */
    size_t ia = json_array_size(json_object_get(json_object_get(a, "timeline"), "finished"));
    size_t ib = json_array_size(json_object_get(json_object_get(b, "timeline"), "finished"));
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(p, "timeline"), "finished")), (ia - 2) + (ib - 2) + 2);
    /* a run of an older file (its TTFTs as µs values) pools with a new one: n adds up and the mean
     * is the 400 requests' (to the µs the old file kept) */
    json_t *old = json_deep_copy(v[1]);
    json_object_set_new(old, "samples", json_pack("{s:s,s:i,s:o}", "unit", "us", "max_per_metric", 2000, "ttft", old_ttft_family(&rb)));
    json_t *mixed[2] = { v[0], old };
    json_t *pm = hist_pool(mixed, 2, NULL);
    const json_t *mt = json_object_get(json_object_get(pm, "samples"), "ttft");
    CHECK_EQ_INT(json_integer_value(json_object_get(mt, "n")), 400);
    CHECK_STR(json_string_value(json_object_get(json_object_get(pm, "samples"), "format")), SAMPLESET_FORMAT);
    CHECK_NEAR(json_number_value(json_object_get(pm, "mean_ttft_ms")), json_number_value(json_object_get(all, "mean_ttft_ms")), 1e-3);
    CHECK(!json_object_get(json_object_get(pm, "samples"), "tpot"));   /* the older run has no TPOT samples */
    json_decref(pm);
    json_decref(old);
    /* one run pools to itself */
    json_t *one = hist_pool(v, 1, NULL);
    CHECK(one && json_equal(one, v[0]));
    json_decref(one);
    json_decref(p);
out:
    json_decref(v[0]);
    json_decref(v[1]);
    json_decref(a);
    json_decref(b);
    json_decref(all);
    recset_free(&ra);
    recset_free(&rb);
    recset_free(&both);
}

TEST(history_trend_finds_a_step_and_not_noise) {
    char *path;
    history *h = fresh("trend.db", &path);
    if (!h) return;
    /* runs 1..6 at 20 ms, 7..12 at 24 ms (+20 %), +-1 ms jitter, 200 requests each */
    for (int i = 0; i < 12; i++) add(h, run_doc(i < 6 ? 20 : 24, 1, 200, 10 + (uint64_t)i), i < 6 ? "release=v0.8.0" : "release=v0.9.0");
    history_trend_opts o;
    history_trend_default_opts(&o);
    char err[512];
    json_t *t = history_trend(h, "mean_ttft_ms", &o, err, sizeof err);
    CHECK_MSG(t != NULL, "%s", err);
    if (t) {
        const json_t *cps = json_object_get(t, "change_points");
        CHECK_EQ_INT(json_array_size(cps), 1);
        const json_t *cp = json_array_get(cps, 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(cp, "id")), 7);
        CHECK(json_is_true(json_object_get(cp, "confirmed")));
        CHECK_STR(json_string_value(json_object_get(cp, "verdict")), "worse");
        CHECK_NEAR(json_number_value(json_object_get(cp, "change_pct")), 20, 1.5);
        CHECK(json_number_value(json_object_get(cp, "ci_low_pct")) > 15 && json_number_value(json_object_get(cp, "ci_high_pct")) < 25);
        const char *sentence = json_string_value(json_object_get(cp, "sentence"));
        CHECK_MSG(sentence && strstr(sentence, "mean TTFT rose 2") && strstr(sentence, "at run 7, release=v0.9.0"), "%s", sentence);
        CHECK_EQ_INT(json_array_size(json_object_get(t, "runs")), 12);
        /* every run has its band around its value */
        size_t i;
        json_t *r;
        json_array_foreach(json_object_get(t, "runs"), i, r) {
            double v = json_number_value(json_object_get(r, "value"));
            CHECK(json_number_value(json_object_get(r, "lo")) < v && json_number_value(json_object_get(r, "hi")) > v);
        }
        json_decref(t);
    }
    /* the first six alone: noise only, nothing reported as a change */
    o.query = "1..6";
    t = history_trend(h, "mean_ttft_ms", &o, err, sizeof err);
    CHECK(t != NULL);
    if (t) {
        size_t i, confirmed = 0;
        json_t *cp;
        json_array_foreach(json_object_get(t, "change_points"), i, cp) confirmed += json_is_true(json_object_get(cp, "confirmed"));
        CHECK_EQ_INT(confirmed, 0);
        json_decref(t);
    }
    /* best: the lowest mean TTFT is one of the 20 ms runs */
    json_t *b = history_best(h, "mean_ttft_ms", "", 3, err, sizeof err);
    CHECK(b != NULL);
    if (b) {
        CHECK_EQ_INT(json_array_size(json_object_get(b, "best")), 3);
        CHECK(json_integer_value(json_object_get(json_array_get(json_object_get(b, "best"), 0), "id")) <= 6);
        json_decref(b);
    }
    CHECK(history_best(h, "mean_queue_ms_unknown", "", 3, err, sizeof err) == NULL);
    CHECK(history_trend(h, "no_such_metric", &o, err, sizeof err) == NULL && strstr(err, "no_such_metric"));
    history_close(h);
    free(path);
}

/* Two runs, +40 % median... here mean TTFT, bands far apart: too few runs for a change point, and
 * the trend must say so rather than "no change beyond noise" (which `history compare` contradicts). */
TEST(history_trend_with_too_few_runs_says_so) {
    char *path;
    history *h = fresh("few.db", &path);
    if (!h) return;
    add(h, run_doc(20, 1, 200, 1), "release=a");
    add(h, run_doc(28, 1, 200, 2), "release=b");
    history_trend_opts o;
    history_trend_default_opts(&o);
    char err[512];
    json_t *t = history_trend(h, "mean_ttft_ms", &o, err, sizeof err);
    CHECK_MSG(t != NULL, "%s", err);
    if (t) {
        CHECK(json_is_false(json_object_get(t, "enough_runs")));
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        history_trend_print(f, t);
        fclose(f);
        const char *ov = buf ? strstr(buf, "do not overlap (") : NULL;
        CHECK_MSG(buf && !strstr(buf, "no change beyond noise") && strstr(buf, "too few runs") && ov, "%s", buf ? buf : "");
        /* 20 -> 28 ms with +-1 ms jitter over 200 requests: +40 % within the jitter's share of the mean */
        if (ov) CHECK_NEAR(atof(ov + strlen("do not overlap (")), 40, 1.5);
        free(buf);
        json_decref(t);
    }
    /* enough runs and only noise: that is what it says */
    for (int i = 0; i < 4; i++) add(h, run_doc(20, 1, 200, 10 + (uint64_t)i), "release=c");
    o.query = "3..6";
    t = history_trend(h, "mean_ttft_ms", &o, err, sizeof err);
    CHECK(t != NULL);
    if (t) {
        CHECK(json_is_true(json_object_get(t, "enough_runs")));
        char *buf = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&buf, &len);
        history_trend_print(f, t);
        fclose(f);
        CHECK_MSG(buf && strstr(buf, "no change beyond noise"), "%s", buf ? buf : "");
        free(buf);
        json_decref(t);
    }
    history_close(h);
    free(path);
}

TEST(history_compare_gates_against_the_runs_before) {
    char *path;
    history *h = fresh("cmp.db", &path);
    if (!h) return;
    for (int i = 0; i < 4; i++) add(h, run_doc(20, 1, 200, 40 + (uint64_t)i), "branch=main");
    add(h, run_doc(20, 1, 200, 50), "branch=main");    /* 5: a rerun of the same build */
    add(h, run_doc(24, 1, 200, 60), "branch=main");    /* 6: the regression */
    compare_opts co;
    compare_default_opts(&co);
    gate_rule rules[4];
    int n = 0;
    char err[512];
    CHECK_EQ_INT(compare_parse_rules("median_ttft_ms:+10%,errors:0", rules, 4, &n, err, sizeof err), 0);
    co.rules = rules;
    co.n_rules = n;
    bool nob;
    history_compare_opts ho = { .baseline = "label:branch=main last:4", .candidate = "5" };
    json_t *d = history_compare(h, &ho, &co, &nob, err, sizeof err);
    CHECK_MSG(d != NULL, "%s", err);
    if (d) {
        CHECK(json_is_true(json_object_get(json_object_get(d, "gate"), "passed")));
        const json_t *br = json_object_get(json_object_get(d, "history"), "baseline_runs");
        CHECK(json_array_size(br) == 4 && json_integer_value(json_array_get(br, 0)) == 1);
        json_decref(d);
    }
    ho.candidate = "latest";   /* run 6: the baseline is runs 2..5, the last four before it */
    d = history_compare(h, &ho, &co, &nob, err, sizeof err);
    CHECK(d != NULL);
    if (d) {
        CHECK(!json_is_true(json_object_get(json_object_get(d, "gate"), "passed")));
        const json_t *br = json_object_get(json_object_get(d, "history"), "baseline_runs");
        CHECK(json_array_size(br) == 4 && json_integer_value(json_array_get(br, 0)) == 2);
        json_decref(d);
    }
    ho.baseline = "label:branch=release";
    CHECK(history_compare(h, &ho, &co, &nob, err, sizeof err) == NULL && nob && strstr(err, "no baseline"));
    ho.baseline = "6";
    ho.candidate = "6";
    CHECK(history_compare(h, &ho, &co, &nob, err, sizeof err) == NULL && !nob && strstr(err, "both sides"));
    history_close(h);
    free(path);
}

TEST(history_band_of_an_older_file_is_sized_by_its_n) {
    /* an older results file kept 2,000 evenly spaced quantiles of a longer run: the same 2,000
     * values read as a run of 2,000 requests, and as quantiles of 20,000, give mean bands whose
     * widths differ by sqrt(10) (each quantile stands for 10 requests), and a narrower median band */
    json_t *vals = json_array();
    for (int i = 0; i < 2000; i++) json_array_append_new(vals, json_integer(10000 + 10 * i));   /* µs */
    json_t *all = json_pack("{s:s,s:{s:s,s:i,s:{s:O,s:i,s:s}},s:f,s:f}", "schema", RESULTS_SCHEMA, "samples", "unit", "us",
                            "max_per_metric", 2000, "ttft", "values", vals, "n", 2000, "method", "all",
                            "mean_ttft_ms", 19.995, "median_ttft_ms", 19.995);
    json_t *q = json_deep_copy(all);
    json_t *qf = json_object_get(json_object_get(q, "samples"), "ttft");
    json_object_set_new(qf, "n", json_integer(20000));
    json_object_set_new(qf, "method", json_string("quantiles"));
    double alo, ahi, qlo, qhi;
    CHECK(hist_band(all, "mean_ttft_ms", &alo, &ahi) && hist_band(q, "mean_ttft_ms", &qlo, &qhi));
    CHECK_NEAR((qhi - qlo) / (ahi - alo), sqrt(0.1), 1e-3);
    CHECK(alo < 19.995 && ahi > 19.995 && qlo < 19.995 && qhi > 19.995);
    CHECK(hist_band(all, "median_ttft_ms", &alo, &ahi) && hist_band(q, "median_ttft_ms", &qlo, &qhi));
    CHECK(qhi - qlo < 0.5 * (ahi - alo));
    json_decref(vals);
    json_decref(all);
    json_decref(q);
}

/* A vLLM `bench serve --save-result --save-detailed` file, as its fields are named. */
static json_t *vllm_result(void) {
    json_t *v = json_pack("{s:s,s:s,s:s,s:f,s:f,s:i,s:i,s:i,s:i,s:f,s:f,s:f,s:f,s:f}", "date", "20260115-101500",
                          "backend", "vllm", "model_id", "deepseek-ai/DeepSeek-V2-Lite", "request_rate", 4.0,
                          "burstiness", 1.0, "max_concurrency", 8, "num_prompts", 5, "completed", 4, "total_input_tokens", 400,
                          "duration", 2.5, "request_throughput", 1.6, "output_throughput", 12.8, "mean_ttft_ms", 27.5,
                          "p99_ttft_ms", 39.7);
    json_t *ttfts = json_pack("[f,f,f,f,f]", 0.020, 0.025, 0.0, 0.030, 0.035);
    json_t *itls = json_pack("[[f,f],[f,f],[],[f,f],[f,f]]", 0.010, 0.012, 0.011, 0.011, 0.009, 0.013, 0.010, 0.010);
    json_object_set_new(v, "ttfts", ttfts);
    json_object_set_new(v, "itls", itls);
    json_object_set_new(v, "output_lens", json_pack("[i,i,i,i,i]", 3, 3, 0, 3, 3));
    json_object_set_new(v, "errors", json_pack("[s,s,s,s,s]", "", "", "Bad Request", "", ""));
    return v;
}

TEST(history_imports_a_vllm_result_with_its_samples) {
    char err[512];
    json_t *v = vllm_result();
    json_t *d = history_from_vllm(v, "vllm.json", err, sizeof err);
    CHECK_MSG(d != NULL, "%s", err);
    if (!d) { json_decref(v); return; }
    CHECK_STR(json_string_value(json_object_get(d, "schema")), RESULTS_SCHEMA);
    CHECK_STR(json_string_value(json_object_get(d, "date")), "2026-01-15T10:15:00Z");
    CHECK_EQ_INT(json_integer_value(json_object_get(d, "failed")), 1);
    CHECK_NEAR(json_number_value(json_object_get(d, "mean_ttft_ms")), 27.5, 0);   /* vLLM's numbers kept as they are */
    const json_t *s = json_object_get(d, "samples");
    /* sample sets of the 4 successes (ns): TTFT 20..35 ms; E2EL = TTFT + gaps (42, 47, 52, 55 ms);
     * TPOT = gaps / (Nout - 1) (11, 11, 11, 10 ms); ITL the 8 gaps; output tokens 3 each */
    sampleset ss;
    sampleset_init(&ss);
    CHECK_EQ_INT(sampleset_from_json(&ss, json_object_get(s, "ttft")), 0);
    CHECK(ss.n == 4 && ss.min == 20000000 && ss.max == 35000000);
    CHECK_NEAR(ss.mean, 27.5e6, 1e-3);
    sampleset_free(&ss);
    CHECK_EQ_INT(sampleset_from_json(&ss, json_object_get(s, "e2el")), 0);
    CHECK(ss.n == 4 && ss.min == 42000000 && ss.max == 55000000);
    sampleset_free(&ss);
    CHECK_EQ_INT(sampleset_from_json(&ss, json_object_get(s, "tpot")), 0);
    CHECK(ss.n == 4 && ss.min == 10000000 && ss.max == 11000000);
    sampleset_free(&ss);
    CHECK_EQ_INT(sampleset_from_json(&ss, json_object_get(s, "itl")), 0);
    CHECK(ss.n == 8 && ss.min == 9000000 && ss.max == 13000000);
    sampleset_free(&ss);
    CHECK_EQ_INT(sampleset_from_json(&ss, json_object_get(s, "out_tokens")), 0);
    CHECK(ss.n == 4 && ss.min == 3 && ss.max == 3);
    sampleset_free(&ss);
    const json_t *c = json_object_get(d, "config");
    CHECK_STR(json_string_value(json_object_get(c, "model")), "deepseek-ai/DeepSeek-V2-Lite");
    CHECK_STR(json_string_value(json_object_get(c, "arrival")), "poisson");
    /* the band of the mean: 27.5 +- 1.96 sd / sqrt(4), sd = 6.455 ms (20, 25, 30, 35); four
     * requests are too few for a distribution-free interval of the median (P(all four on one side)
     * = 1/16 > 2.5 %) */
    double lo, hi, half = infer_z(0.95) * sqrt(125.0 / 3.0) / 2;
    CHECK(hist_band(d, "mean_ttft_ms", &lo, &hi));
    CHECK_NEAR(lo, 27.5 - half, 1e-6);
    CHECK_NEAR(hi, 27.5 + half, 1e-6);
    CHECK(!hist_band(d, "median_ttft_ms", &lo, &hi));
    json_t *junk = json_pack("{s:i}", "hello", 1);
    CHECK(history_from_vllm(junk, "x.json", err, sizeof err) == NULL && strstr(err, "x.json"));
    json_decref(junk);
    json_decref(d);
    json_decref(v);
}

TEST(history_exports_llm_d_benchmark_report_0_2) {
    char *path;
    history *h = fresh("br.db", &path);
    if (!h) return;
    add(h, run_doc(20, 1, 100, 3), "release=v1");
    char err[512];
    json_t *br = history_export_br02(h, 1, err, sizeof err);
    CHECK_MSG(br != NULL, "%s", err);
    if (br) {
        CHECK_STR(json_string_value(json_object_get(br, "version")), "0.2");
        const json_t *agg = json_object_get(json_object_get(json_object_get(br, "results"), "request_performance"), "aggregate");
        const json_t *ttft = json_object_get(json_object_get(agg, "latency"), "time_to_first_token");
        CHECK_STR(json_string_value(json_object_get(ttft, "units")), "ms");
        CHECK_NEAR(json_number_value(json_object_get(ttft, "mean")), 20, 0.2);
        CHECK(json_is_number(json_object_get(ttft, "p99")) && json_is_number(json_object_get(ttft, "p99p9")));
        CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(agg, "latency"), "time_per_output_token"), "units")), "ms/token");
        CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(agg, "requests"), "total")), 100);
        CHECK_STR(json_string_value(json_object_get(json_object_get(json_object_get(agg, "throughput"), "requests_rate"), "units")), "queries/s");
        const json_t *load = json_object_get(json_object_get(br, "scenario"), "load");
        const json_t *st = json_object_get(load, "standardized");
        CHECK_STR(json_string_value(json_object_get(st, "tool")), "dsperf");
        CHECK_STR(json_string_value(json_object_get(st, "source")), "random");
        CHECK_NEAR(json_number_value(json_object_get(json_object_get(st, "input_seq_len"), "value")), 8, 0);
        CHECK_EQ_INT(json_integer_value(json_object_get(st, "concurrency")), 1);
        /* only BR0.2's own keys at the top (its models forbid others) */
        const char *k;
        json_t *x;
        json_object_foreach(br, k, x) CHECK_MSG(!strcmp(k, "version") || !strcmp(k, "run") || !strcmp(k, "scenario") || !strcmp(k, "results"), "%s", k);
        json_decref(br);
    }
    history_close(h);
    free(path);
}
