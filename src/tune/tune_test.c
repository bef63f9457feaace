/* tune_test — unit tests of the grid, the templates, the per-config summary, the Pareto front and
 * the recommendation, on known numbers. */
#include "harness.h"
#include "tune/tune.h"
#include <stdlib.h>
#include <string.h>

static void grid_of(tune_grid *g, const char *a, const char *b) {
    char err[256];
    tune_grid_init(g);
    if (a) CHECK_EQ_INT(tune_grid_add(g, a, err, sizeof err), 0);
    if (b) CHECK_EQ_INT(tune_grid_add(g, b, err, sizeof err), 0);
}

TEST(tune_grid_cartesian_product) {
    tune_grid g;
    grid_of(&g, "seqs=64,128,256", "kv=auto,fp8");
    CHECK_EQ_INT(tune_grid_size(&g), 6);
    /* the last axis varies fastest; configuration 0 is every first value (the default) */
    const char *want[6] = { "seqs=64 kv=auto", "seqs=64 kv=fp8", "seqs=128 kv=auto", "seqs=128 kv=fp8",
                            "seqs=256 kv=auto", "seqs=256 kv=fp8" };
    for (size_t i = 0; i < 6; i++) {
        size_t c[TUNE_MAX_KEYS];
        tune_grid_point(&g, i, c);
        char *l = tune_grid_label(&g, c);
        CHECK_STR(l, want[i]);
        free(l);
    }
    size_t c[TUNE_MAX_KEYS];
    tune_grid_point(&g, 5, c);
    CHECK_STR(tune_grid_lookup(&g, c, "seqs"), "256");
    CHECK_STR(tune_grid_lookup(&g, c, "kv"), "fp8");
    CHECK(tune_grid_lookup(&g, c, "tp") == NULL);
    tune_grid_free(&g);
    /* an empty grid is one configuration */
    tune_grid_init(&g);
    CHECK_EQ_INT(tune_grid_size(&g), 1);
    /* ranges expand like sweep ladders */
    grid_of(&g, "seqs=4..32x2", "tp=1,2");
    CHECK_EQ_INT(g.axes[0].n, 4);
    CHECK_STR(g.axes[0].values[3], "32");
    CHECK_EQ_INT(tune_grid_size(&g), 8);
    tune_grid_free(&g);
}

TEST(tune_grid_errors) {
    const char *bad[] = { "seqs", "=1,2", "seqs=", "seqs=1,,2", "port=1,2", "1x=2", "seqs=1,1", "seqs=0..4" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        tune_grid g;
        tune_grid_init(&g);
        char err[256] = "";
        CHECK_MSG(tune_grid_add(&g, bad[i], err, sizeof err) < 0, "'%s' was accepted", bad[i]);
        CHECK(err[0] != 0);
        tune_grid_free(&g);
    }
    tune_grid g;
    grid_of(&g, "seqs=1,2", NULL);
    char err[256];
    CHECK(tune_grid_add(&g, "seqs=3", err, sizeof err) < 0);
    CHECK(strstr(err, "twice") != NULL);
    tune_grid_free(&g);
}

TEST(tune_template_substitution) {
    tune_grid g;
    grid_of(&g, "seqs=64,128", "kv=auto,fp8");
    size_t c[TUNE_MAX_KEYS];
    tune_grid_point(&g, 3, c);
    char err[256];
    const char *t = "vllm serve M --port {port} --max-num-seqs {seqs} --kv-cache-dtype {kv} --x ${HOME} '{{json}}' { a; }";
    CHECK_EQ_INT(tune_template_check(t, &g, err, sizeof err), 0);
    char *s = tune_template_render(t, &g, c, 8123, true, err, sizeof err);
    CHECK_STR(s, "vllm serve M --port 8123 --max-num-seqs 128 --kv-cache-dtype fp8 --x ${HOME} '{json}}' { a; }");
    free(s);
    /* an unknown key: an error naming it and the known keys */
    const char *u = "serve --max-num-seqs {seqs} --tp {tp}";
    CHECK(tune_template_check(u, &g, err, sizeof err) < 0);
    CHECK(strstr(err, "{tp}") && strstr(err, "--grid tp=") && strstr(err, "port, seqs, kv"));
    CHECK(tune_template_render(u, &g, c, 1, true, err, sizeof err) == NULL);
    /* pass-through arguments leave it as written */
    s = tune_template_render(u, &g, c, 1, false, err, sizeof err);
    CHECK_STR(s, "serve --max-num-seqs 128 --tp {tp}");
    free(s);
    tune_grid_free(&g);
}

TEST(tune_pareto_known_points) {
    /* x = tok/s per GPU (higher better), y = ms (lower better) */
    double x[] = { 100, 200, 150, 300, 300, 50, NAN, 200 };
    double y[] = { 10, 20, 30, 50, 60, 5, 1, 20 };
    bool f[8];
    size_t n = tune_pareto(x, y, 8, f);
    /* 150@30 is dominated by 200@20; 300@60 by 300@50; NAN never; the two equal 200@20 both stay */
    bool want[8] = { true, true, false, true, false, true, false, true };
    for (int i = 0; i < 8; i++) CHECK_MSG(f[i] == want[i], "point %d: on_front %d, want %d", i, f[i], want[i]);
    CHECK_EQ_INT(n, 5);
}

TEST(tune_recommend_under_slo) {
    tune_cand c[4] = {
        { .measured = true, .eligible = true, .score = 2.0, .tiebreak = 100 },
        { .measured = true, .eligible = false, .score = NAN },           /* misses the SLO: more raw goodput, not eligible */
        { .measured = true, .eligible = true, .score = 3.0, .tiebreak = 90 },
        { .measured = false },
    };
    CHECK_EQ_INT(tune_recommend(c, 4), 2);
    c[0].score = 3.0;
    c[0].tiebreak = 95;
    CHECK_EQ_INT(tune_recommend(c, 4), 0);   /* tie on goodput: more throughput wins */
    c[0].eligible = c[2].eligible = false;
    CHECK_EQ_INT(tune_recommend(c, 4), -1);
}

/* A sweep document with two concurrency levels and an SLO of TTFT 100 ms. */
static json_t *fake_sweep(double out1, double ttft1, double out2, double ttft2) {
    json_t *lv = json_array();
    double loads[2] = { 4, 16 }, outs[2] = { out1, out2 }, ttfts[2] = { ttft1, ttft2 };
    for (int i = 0; i < 2; i++) {
        json_t *r = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:{s:f}}", "completed", 100.0, "output_throughput", outs[i],
                              "request_goodput", outs[i] / 100, "p99_ttft_ms", ttfts[i], "p99_e2el_ms", ttfts[i] + 200,
                              "p99_tpot_ms", 5.0, "goodput_slo", "ttft_ms", 100.0);
        json_array_append_new(lv, json_pack("{s:f,s:s,s:i,s:b,s:o}", "load", loads[i], "kind", "concurrency", "repeat", 0,
                                            "saturated", 0, "results", r));
    }
    return json_pack("{s:s,s:s,s:{s:f},s:o,s:n,s:n}", "schema", "dsperf.sweep/1", "axis", "concurrency", "config",
                     "slo_percentile", 99.0, "levels", lv, "knee", "max_goodput");
}

TEST(tune_summary_and_analysis) {
    /* config 0 (default): 1000 then 1500 tok/s, TTFT 50 then 400 ms: only c=4 meets the SLO;
     * config 1: 1200 then 3000 tok/s at 60/90 ms: both meet; on 2 GPUs each */
    json_t *s0 = fake_sweep(1000, 50, 1500, 400), *s1 = fake_sweep(1200, 60, 3000, 90);
    json_t *m0 = tune_config_summary(s0, 2, "e2el"), *m1 = tune_config_summary(s1, 2, "e2el");
    CHECK(m0 && m1);
    if (!m0 || !m1) return;
    const json_t *g0 = json_object_get(m0, "goodput_under_slo");
    CHECK_NEAR(json_number_value(json_object_get(g0, "load")), 4, 0);
    CHECK_NEAR(json_number_value(json_object_get(g0, "request_goodput_per_gpu")), 5, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(g0, "latency_ms")), 250, 1e-9);
    CHECK_STR(json_string_value(json_object_get(m0, "latency_field")), "p99_e2el_ms");
    CHECK(json_is_false(json_object_get(json_array_get(json_object_get(m0, "points"), 1), "meets_slo")));
    CHECK_NEAR(json_number_value(json_object_get(json_object_get(m0, "max_output_throughput"), "output_throughput_per_gpu")), 750, 1e-9);
    json_t *doc = json_pack("{s:s,s:s,s:{s:f},s:[{s:i,s:s,s:s,s:o},{s:i,s:s,s:s,s:o}]}", "schema", TUNE_SCHEMA,
                            "objective", "e2el", "slo", "ttft_ms", 100.0, "configs", "index", 0, "label", "seqs=64", "status",
                            "ok", "summary", m0, "index", 1, "label", "seqs=256", "status", "ok", "summary", m1);
    CHECK_EQ_INT(tune_analyse(doc), 0);
    const json_t *rec = json_object_get(doc, "recommendation");
    CHECK(json_is_object(rec));
    CHECK_EQ_INT(json_integer_value(json_object_get(rec, "config")), 1);
    CHECK_NEAR(json_number_value(json_object_get(rec, "score")), 15, 1e-9);
    CHECK_EQ_INT(json_integer_value(json_object_get(rec, "compared_with")), 0);
    /* 15 vs 5 req/s per GPU */
    CHECK(strstr(json_string_value(json_object_get(rec, "buys")), "3.00x the default seqs=64") != NULL);
    /* front: 1200/2=600@260 and 3000/2=1500@290 of config 1; 500@250 of config 0 (lowest latency); 750@600 dominated */
    const json_t *front = json_object_get(json_object_get(doc, "pareto"), "front");
    CHECK_EQ_INT(json_array_size(front), 3);
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(front, 0), "output_throughput_per_gpu")), 500, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(json_array_get(front, 2), "output_throughput_per_gpu")), 1500, 1e-9);
    CHECK(json_is_true(json_object_get(json_array_get(json_object_get(doc, "configs"), 0), "on_front")));
    /* the table fits 100 columns */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    tune_print(f, doc);
    fclose(f);
    CHECK(strstr(buf, "Recommendation: seqs=256") != NULL);
    for (char *line = buf; line && *line;) {
        char *nl = strchr(line, '\n');
        size_t cols = nl ? (size_t)(nl - line) : strlen(line);
        /* the recommendation sentence may wrap in a terminal; the table rows may not */
        if (strncmp(line, "Recommendation", 14) && strncmp(line, "(value", 6)) CHECK_MSG(cols <= 100, "line of %zu columns: %.*s", cols, (int)cols, line);
        line = nl ? nl + 1 : NULL;
    }
    free(buf);
    json_decref(doc);
    json_decref(s0);
    json_decref(s1);
}

TEST(tune_speedup_detected) {
    CHECK_NEAR(tune_detect_speedup("dsperf serve --engine sim --speedup 10 --port 1"), 10, 0);
    CHECK_NEAR(tune_detect_speedup("./dsperf serve --speedup=2.5"), 2.5, 0);
    CHECK_NEAR(tune_detect_speedup("vllm serve M --port 1"), 1, 0);
}

/* One load, three repeats with the given goodputs (req/s), TTFT within the SLO. */
static json_t *repeat_sweep(const double *gp) {
    json_t *lv = json_array();
    for (int r = 0; r < 3; r++) {
        json_t *res = json_pack("{s:f,s:f,s:f,s:f,s:f,s:{s:f}}", "completed", 100.0, "output_throughput", gp[r] * 100,
                                "request_goodput", gp[r], "p99_ttft_ms", 50.0, "p99_e2el_ms", 300.0, "goodput_slo",
                                "ttft_ms", 100.0);
        json_array_append_new(lv, json_pack("{s:f,s:s,s:i,s:o}", "load", 8.0, "kind", "concurrency", "repeat", r, "results", res));
    }
    return json_pack("{s:s,s:{s:f},s:o}", "axis", "concurrency", "config", "slo_percentile", 99.0, "levels", lv);
}

static const json_t *runner_up_of(const double *a, const double *b, json_t **doc_out) {
    json_t *sa = repeat_sweep(a), *sb = repeat_sweep(b);
    json_t *doc = json_pack("{s:s,s:{s:f},s:[{s:s,s:o},{s:s,s:o}]}", "objective", "e2el", "slo", "ttft_ms", 100.0, "configs",
                            "label", "a", "summary", tune_config_summary(sa, 1, "e2el"), "label", "b", "summary",
                            tune_config_summary(sb, 1, "e2el"));
    json_decref(sa);
    json_decref(sb);
    tune_analyse(doc);
    *doc_out = doc;
    return json_object_get(json_object_get(doc, "recommendation"), "runner_up");
}

/* With repeats, the lead over the runner-up is called separated only when the 95% intervals of
 * goodput do not overlap. */
TEST(tune_runner_up_and_noise) {
    json_t *doc;
    const double hi[3] = { 10, 11, 12 }, lo[3] = { 5, 5.5, 6 }, close[3] = { 9.5, 10.5, 11.5 };
    const json_t *ru = runner_up_of(lo, hi, &doc);
    CHECK_EQ_INT(json_integer_value(json_object_get(json_object_get(doc, "recommendation"), "config")), 1);
    CHECK_STR(json_string_value(json_object_get(ru, "label")), "a");
    CHECK_NEAR(json_number_value(json_object_get(ru, "lead")), 2, 1e-9);
    CHECK(strncmp(json_string_value(json_object_get(ru, "noise")), "separated", 9) == 0);
    CHECK(json_is_false(json_object_get(ru, "marginal")));
    /* the interval of the mean of 10, 11, 12 is 11 +- 4.303 x 1/sqrt(3) */
    const json_t *ci = json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(doc, "configs"), 1),
                                       "summary"), "goodput_under_slo"), "request_goodput_per_gpu_ci95");
    CHECK_NEAR(json_number_value(json_array_get(ci, 0)), 11 - 4.303 / sqrt(3), 0.01);
    json_decref(doc);
    ru = runner_up_of(close, hi, &doc);
    CHECK(strncmp(json_string_value(json_object_get(ru, "noise")), "not separated", 13) == 0);
    json_decref(doc);
}

/* Configurations that behave alike at a load give one front entry naming the others. */
TEST(tune_front_merges_alike_configs) {
    json_t *s0 = fake_sweep(1000, 50, 1500, 400), *s1 = fake_sweep(1000, 50, 1500, 400);
    json_t *doc = json_pack("{s:s,s:{s:f},s:[{s:s,s:o},{s:s,s:o}]}", "objective", "e2el", "slo", "ttft_ms", 100.0, "configs",
                            "label", "a", "summary", tune_config_summary(s0, 1, "e2el"), "label", "b", "summary",
                            tune_config_summary(s1, 1, "e2el"));
    tune_analyse(doc);
    const json_t *front = json_object_get(json_object_get(doc, "pareto"), "front");
    CHECK_EQ_INT(json_array_size(front), 2);
    const json_t *alike = json_object_get(json_array_get(front, 0), "alike");
    CHECK_EQ_INT(json_array_size(alike), 1);
    CHECK_STR(json_string_value(json_object_get(json_array_get(alike, 0), "label")), "b");
    CHECK(json_is_true(json_object_get(json_array_get(json_object_get(doc, "configs"), 1), "on_front")));
    json_decref(doc);
    json_decref(s0);
    json_decref(s1);
}
