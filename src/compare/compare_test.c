/* Tests of compare: rule parsing, and verdicts and gate decisions on synthetic runs whose samples
 * are drawn with a known shift (or none), so the right answer is known. */
#include "harness.h"
#include "compare/compare.h"
#include "common/rng.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

TEST(compare_parse_rules_ok_and_errors) {
    gate_rule r[8];
    int n = 0;
    char err[256];
    CHECK_EQ_INT(compare_parse_rules("p99_ttft_ms:+10%, output_throughput:-5%,errors:0", r, 8, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 3);
    CHECK_STR(r[0].metric, "p99_ttft_ms");
    CHECK_EQ_INT(r[0].kind, GATE_RISE_PCT);
    CHECK_NEAR(r[0].value, 10, 0);
    CHECK_EQ_INT(r[1].kind, GATE_FALL_PCT);
    CHECK_EQ_INT(r[2].kind, GATE_MAX);
    CHECK_NEAR(r[2].value, 0, 0);
    CHECK_EQ_INT(compare_parse_rules("p99.9_itl_ms:+0.5,mean_tpot_ms:-2,x:<=3,y:>=1000", r, 8, &n, err, sizeof err), 0);
    CHECK_EQ_INT(n, 7);
    CHECK_STR(r[3].metric, "p99.9_itl_ms");
    CHECK_EQ_INT(r[3].kind, GATE_RISE_ABS);
    CHECK_EQ_INT(r[4].kind, GATE_FALL_ABS);
    CHECK_EQ_INT(r[5].kind, GATE_MAX);
    CHECK_EQ_INT(r[6].kind, GATE_MIN);
    CHECK_NEAR(r[6].value, 1000, 0);
    const char *bad[] = {"p99_ttft_ms", "p99_ttft_ms:", ":5", "p99_ttft_ms:10%", "p99_ttft_ms:+ten%", "bad name:1",
                         "p99_ttft_ms:+-3"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int m = 0;
        err[0] = 0;
        CHECK_MSG(compare_parse_rules(bad[i], r, 8, &m, err, sizeof err) == -1, "'%s' accepted", bad[i]);
        CHECK(strstr(err, "--gate") != NULL && !strchr(err, '\n'));
    }
    n = 0;
    CHECK_EQ_INT(compare_parse_rules("a:1,b:2,c:3", r, 2, &n, err, sizeof err), -1);   /* too many */
}

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* A results-like document: TTFT samples ~ N(mean, sd) in ms (n of them), the matching summary
 * numbers, a per-second output timeline, and failed/completed counts. */
static json_t *fake_run(double ttft_mean, double sd, size_t n, double tok_per_s, long failed, uint64_t seed) {
    rng r;
    rng_seed(&r, seed);
    double *v = malloc(n * sizeof *v);
    for (size_t i = 0; i < n; i++) v[i] = ttft_mean + sd * rng_normal(&r);
    qsort(v, n, sizeof *v, cmp_d);
    json_t *doc = json_object(), *vals = json_array(), *tl = json_array();
    double sum = 0;
    for (size_t i = 0; i < n; i++) { json_array_append_new(vals, json_integer((json_int_t)llround(v[i] * 1000))); sum += v[i]; }
    json_object_set_new(doc, "mean_ttft_ms", json_real(sum / (double)n));
    double h = (double)(n - 1) * 0.99;
    size_t lo = (size_t)h;
    json_object_set_new(doc, "p99_ttft_ms", json_real(v[lo] + (v[lo + 1] - v[lo]) * (h - (double)lo)));
    json_object_set_new(doc, "min_ttft_ms", json_real(v[0]));
    for (int s = 0; s < 12; s++) json_array_append_new(tl, json_real(tok_per_s * (1 + 0.01 * rng_normal(&r))));
    json_object_set_new(doc, "output_throughput", json_real(tok_per_s));
    json_object_set_new(doc, "timeline", json_pack("{s:o}", "output_tokens", tl));
    json_object_set_new(doc, "completed", json_integer((json_int_t)n));
    json_object_set_new(doc, "failed", json_integer(failed));
    json_object_set_new(doc, "config", json_pack("{s:i}", "concurrency", 8));
    json_t *ttft = json_pack("{s:o,s:i,s:s}", "values", vals, "n", (int)n, "method", "all");
    json_object_set_new(doc, "samples", json_pack("{s:o}", "ttft", ttft));
    free(v);
    return doc;
}

static const json_t *rule_result(const json_t *doc, int i) { return json_array_get(json_object_get(json_object_get(doc, "gate"), "rules"), (size_t)i); }
static bool rule_passed(const json_t *doc, int i) { return json_is_true(json_object_get(rule_result(doc, i), "passed")); }
static const char *metric_verdict(const json_t *doc, const char *name) {
    size_t i;
    json_t *m;
    json_array_foreach(json_object_get(doc, "metrics"), i, m)
        if (!strcmp(json_string_value(json_object_get(m, "name")), name)) return json_string_value(json_object_get(m, "verdict"));
    return "(absent)";
}

static json_t *run_gate(const json_t *a, const json_t *b, const char *rules_spec, char *err, size_t errlen) {
    gate_rule rules[8];
    int n = 0;
    if (compare_parse_rules(rules_spec, rules, 8, &n, err, errlen) < 0) return NULL;
    compare_opts o;
    compare_default_opts(&o);
    o.resamples = 1000;
    o.rules = rules;
    o.n_rules = n;
    return compare_runs(a, b, &o, err, errlen);
}

TEST(compare_gate_separates_noise_from_change) {
    char err[256];
    json_t *base = fake_run(100, 10, 600, 1000, 0, 1);
    json_t *same = fake_run(100, 10, 600, 1000, 0, 2);        /* a rerun: only noise */
    json_t *slower = fake_run(115, 10, 600, 850, 3, 3);       /* +15 % TTFT, -15 % throughput, 3 errors */
    json_t *d = run_gate(base, same, "mean_ttft_ms:+5%,p99_ttft_ms:+10%,output_throughput:-5%,errors:0", err, sizeof err);
    CHECK(d != NULL);
    if (!d) goto out;
    CHECK(json_is_true(json_object_get(json_object_get(d, "gate"), "passed")));
    CHECK_STR(metric_verdict(d, "mean_ttft_ms"), "no significant change");
    CHECK_STR(metric_verdict(d, "output_throughput"), "no significant change");
    json_decref(d);

    d = run_gate(base, slower, "mean_ttft_ms:+5%,p99_ttft_ms:+10%,output_throughput:-5%,errors:0,mean_ttft_ms:+20%", err, sizeof err);
    CHECK(d != NULL);
    if (!d) goto out;
    CHECK(!json_is_true(json_object_get(json_object_get(d, "gate"), "passed")));
    CHECK(!rule_passed(d, 0));      /* +15 % > 5 %, far beyond noise */
    CHECK(!rule_passed(d, 2));      /* throughput -15 % */
    CHECK(!rule_passed(d, 3));      /* 3 errors > 0 */
    CHECK(rule_passed(d, 4));       /* +15 % is within a 20 % allowance */
    CHECK_STR(metric_verdict(d, "mean_ttft_ms"), "worse");
    CHECK_STR(metric_verdict(d, "output_throughput"), "worse");
    CHECK(strstr(json_string_value(json_object_get(rule_result(d, 0), "reason")), "interval") != NULL);
    json_decref(d);

    /* beyond the allowance on the points but within noise: a tiny, noisy sample passes */
    json_t *tiny_a = fake_run(100, 30, 8, 1000, 0, 4), *tiny_b = fake_run(100, 30, 8, 1000, 0, 5);
    json_object_set_new(tiny_b, "mean_ttft_ms", json_real(json_number_value(json_object_get(tiny_a, "mean_ttft_ms")) * 1.08));
    d = run_gate(tiny_a, tiny_b, "mean_ttft_ms:+5%", err, sizeof err);
    CHECK(d && rule_passed(d, 0));
    if (d) CHECK(strstr(json_string_value(json_object_get(rule_result(d, 0), "reason")), "within noise") != NULL);
    json_decref(d);
    /* without samples the points decide, and the reason says so */
    json_object_del(tiny_a, "samples");
    d = run_gate(tiny_a, tiny_b, "mean_ttft_ms:+5%", err, sizeof err);
    CHECK(d && !rule_passed(d, 0));
    if (d) CHECK(strstr(json_string_value(json_object_get(rule_result(d, 0), "reason")), "not tested for noise") != NULL);
    json_decref(d);
    json_decref(tiny_a);
    json_decref(tiny_b);

    /* absolute floors and ceilings; a metric only one run has; a metric neither has */
    d = run_gate(base, slower, "output_throughput:>=900,p99_ttft_ms:<=200,min_ttft_ms:>=1", err, sizeof err);
    CHECK(d && !rule_passed(d, 0) && rule_passed(d, 1) && rule_passed(d, 2));
    json_decref(d);
    json_object_set_new(slower, "request_goodput", json_real(5));
    d = run_gate(base, slower, "request_goodput:-10%", err, sizeof err);
    CHECK(d && !rule_passed(d, 0));     /* the baseline has none: cannot evaluate, so it fails */
    json_decref(d);
    CHECK(run_gate(base, slower, "p99_nonsense_ms:+5%", err, sizeof err) == NULL);
    CHECK(strstr(err, "neither run has") != NULL);

    /* a partial candidate fails the gate even when every rule passes */
    json_object_set_new(same, "partial", json_true());
    d = run_gate(base, same, "errors:0", err, sizeof err);
    CHECK(d && rule_passed(d, 0) && !json_is_true(json_object_get(json_object_get(d, "gate"), "passed")));
    json_decref(d);
out:
    json_decref(base);
    json_decref(same);
    json_decref(slower);
}

TEST(compare_warns_when_runs_differ) {
    char err[256];
    json_t *a = fake_run(100, 10, 50, 1000, 0, 1), *b = fake_run(100, 10, 50, 1000, 0, 2);
    json_object_set_new(json_object_get(b, "config"), "concurrency", json_integer(16));
    json_t *d = run_gate(a, b, "", err, sizeof err);
    CHECK(d != NULL);
    json_t *w = json_object_get(d, "warnings");
    CHECK_EQ_INT(json_array_size(w), 1);
    CHECK(strstr(json_string_value(json_array_get(w, 0)), "concurrency: 8 vs 16") != NULL);
    /* no rules: the gate passes, and the printed table has no gate section */
    CHECK(json_is_true(json_object_get(json_object_get(d, "gate"), "passed")));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    compare_print(f, d, false);
    fclose(f);
    CHECK(strstr(buf, "mean_ttft_ms") && !strstr(buf, "gate:"));
    free(buf);
    json_decref(d);
    json_decref(a);
    json_decref(b);
}

/* TTFA (reasoning models) is compared by default with the same statistics as TTFT, from its own
 * sample family; runs without a reasoning phase have no TTFA line. */
static json_t *as_ttfa(json_t *doc) {
    const char *keys[][2] = { {"mean_ttft_ms", "mean_ttfa_ms"}, {"p99_ttft_ms", "p99_ttfa_ms"}, {"min_ttft_ms", "min_ttfa_ms"} };
    for (size_t i = 0; i < 3; i++) {
        json_object_set(doc, keys[i][1], json_object_get(doc, keys[i][0]));
        json_object_del(doc, keys[i][0]);
    }
    json_t *smp = json_object_get(doc, "samples");
    json_object_set(smp, "ttfa", json_object_get(smp, "ttft"));
    json_object_del(smp, "ttft");
    return doc;
}

TEST(compare_ttfa_by_default) {
    char err[256];
    json_t *base = as_ttfa(fake_run(1000, 50, 600, 1000, 0, 11)), *slower = as_ttfa(fake_run(1150, 50, 600, 1000, 0, 12));
    compare_opts o;
    compare_default_opts(&o);
    o.resamples = 1000;
    json_t *d = compare_runs(base, slower, &o, err, sizeof err);
    CHECK(d != NULL);
    if (d) {
        CHECK_STR(metric_verdict(d, "mean_ttfa_ms"), "worse");
        CHECK_STR(metric_verdict(d, "p99_ttfa_ms"), "worse");
        CHECK_STR(metric_verdict(d, "mean_ttft_ms"), "(absent)");
    }
    json_decref(d);
    json_t *plain = fake_run(100, 10, 600, 1000, 0, 13);
    d = compare_runs(plain, plain, &o, err, sizeof err);
    if (d) CHECK_STR(metric_verdict(d, "mean_ttfa_ms"), "(absent)");
    json_decref(d);
    json_decref(plain);
    json_decref(base);
    json_decref(slower);
}
