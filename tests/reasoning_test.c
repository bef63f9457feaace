/* Reasoning vs answer against `dsperf serve --reasoning-tokens` on loopback, with known truth:
 * the server streams the first R words of a chat answer as delta.reasoning_content and says R in
 * usage.completion_tokens_details.reasoning_tokens, so the counts are exact on both sides, and it
 * emits on absolute deadlines (token k of a request no earlier than TTFT + k x ITL after its
 * arrival), so TTFA >= the configured TTFT + R x ITL on every request. No other timing is
 * asserted (the machine may be busy). */
#include "harness.h"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *bench(const test_server *s, const char *args, const char *reqs) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/r%d.json", harness_tmpdir(), rand());
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --out %s --save-requests %s %s", s->url, path, reqs, args);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    if (rc != 0) fprintf(stderr, "    bench exited %d: %s\n", rc, err ? err : "");
    free(err);
    return rc == 0 ? test_load_json(path) : NULL;
}

/* Calls fn on every line of the per-request file; returns the number of lines. */
static int each_request(const char *path, void (*fn)(json_t *q, void *ctx), void *ctx) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    static char line[1 << 17];
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *q = json_loads(line, 0, NULL);
        if (!q) continue;
        fn(q, ctx);
        json_decref(q);
        n++;
    }
    fclose(f);
    return n;
}

typedef struct { int r_min, r_max, out; int bad; } fixed_case;

static void check_fixed(json_t *q, void *ctx) {
    fixed_case *c = ctx;
    double R = test_num(q, "reasoning_tokens"), A = test_num(q, "answer_tokens");
    double ttft = test_num(q, "ttft_ms"), ttfa = test_num(q, "ttfa_ms"), e2el = test_num(q, "e2el_ms");
    double rt = test_num(q, "reasoning_tpot_ms"), at = test_num(q, "answer_tpot_ms");
    int ok = R >= c->r_min && R <= c->r_max && R + A == c->out && test_num(q, "reasoning_tokens_server") == R &&
             test_num(q, "reasoning_tokens_client") == R && test_num(q, "reasoning_chunks") == R;
    /* the deadline floor: the first answer word is word R, due TTFT + R x ITL after arrival */
    ok = ok && ttfa >= 50.0 + R * 10.0 && ttfa >= ttft && ttfa <= e2el;
    /* the phases split the stream exactly: R reasoning gaps, then A - 1 answer gaps */
    ok = ok && fabs(R * rt + (A - 1) * at - (e2el - ttft)) <= 1e-6 * e2el;
    if (!ok && c->bad++ < 3)
        fprintf(stderr, "    request %g: R %g A %g TTFT %.3f TTFA %.3f (>= %.0f) E2EL %.3f tpot %.3f/%.3f\n",
                test_num(q, "index"), R, A, ttft, ttfa, 50.0 + R * 10.0, e2el, rt, at);
}

TEST(reasoning_serve_known_truth) {
    test_server s;
    if (test_serve_start(&s, "--ttft 50ms --itl 10ms --prefill-per-token 0 --reasoning-tokens 5..15") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    char reqs[512];
    snprintf(reqs, sizeof reqs, "%s/reasoning.jsonl", harness_tmpdir());
    json_t *r = bench(&s, "--api chat --concurrency 3 --requests 12 --dataset random:in=16,out=24", reqs);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 12);
    CHECK_EQ_INT(test_num(r, "reasoning_requests"), 12);
    CHECK_EQ_INT(test_num(r, "reasoning_answered"), 12);
    CHECK_EQ_INT(test_num(r, "total_reasoning_tokens") + test_num(r, "total_answer_tokens"), 12 * 24);
    CHECK_EQ_INT(test_num(r, "total_reasoning_tokens_server"), test_num(r, "total_reasoning_tokens_client"));
    CHECK_EQ_INT(test_num(r, "reasoning_token_mismatches"), 0);
    CHECK(!strcmp(json_string_value(json_object_get(r, "reasoning_tokens_source")), "server_usage"));
    CHECK(test_num(r, "min_ttfa_ms") >= 50.0 + 5 * 10.0);
    fixed_case c = { 5, 15, 24, 0 };
    CHECK_EQ_INT(each_request(reqs, check_fixed, &c), 12);
    CHECK_EQ_INT(c.bad, 0);
    json_decref(r);
}

/* An SLO on TTFA below the floor no request can beat fails every request; one far above it
 * passes every one (a ceiling no busy machine reaches: 60 s for a 300 ms stream). */
TEST(reasoning_slo_ttfa_goodput) {
    test_server s;
    if (test_serve_start(&s, "--ttft 50ms --itl 10ms --prefill-per-token 0 --reasoning-tokens 20") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    char reqs[512];
    snprintf(reqs, sizeof reqs, "%s/slo.jsonl", harness_tmpdir());
    json_t *lo = bench(&s, "--api chat --concurrency 2 --requests 6 --dataset random:in=8,out=30 --slo ttfa=240ms", reqs);
    json_t *hi = bench(&s, "--api chat --concurrency 2 --requests 6 --dataset random:in=8,out=30 --slo ttfa=60s", reqs);
    test_serve_stop(&s);
    CHECK(lo && hi);
    if (lo) {
        CHECK_EQ_INT(test_num(lo, "good_requests"), 0);   /* every TTFA >= 50 + 20 x 10 = 250 ms */
        CHECK_NEAR(test_num(json_object_get(lo, "goodput_slo"), "ttfa_ms"), 240, 1e-9);
    }
    if (hi) CHECK_EQ_INT(test_num(hi, "good_requests"), 6);
    json_decref(lo);
    json_decref(hi);
}

/* A reasoning phase longer than max_tokens never reaches an answer: the reasoning is every token,
 * and TTFA is absent (null), not zero. Completions have no reasoning phase at all. */
static void check_unanswered(json_t *q, void *ctx) {
    int *bad = ctx;
    if (!(json_is_null(json_object_get(q, "ttfa_ms")) && test_num(q, "reasoning_tokens") == 10 && test_num(q, "answer_tokens") == 0))
        (*bad)++;
}

static void check_no_phase(json_t *q, void *ctx) {
    int *bad = ctx;
    if (json_object_get(q, "ttfa_ms") || json_object_get(q, "reasoning_tokens")) (*bad)++;
}

TEST(reasoning_unanswered_and_absent) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms --reasoning-tokens 40") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char reqs[512], reqs2[512];
    snprintf(reqs, sizeof reqs, "%s/unanswered.jsonl", harness_tmpdir());
    snprintf(reqs2, sizeof reqs2, "%s/completions.jsonl", harness_tmpdir());
    json_t *r = bench(&s, "--api chat --concurrency 2 --requests 4 --dataset random:in=8,out=10", reqs);
    json_t *c = bench(&s, "--api completions --concurrency 2 --requests 4 --dataset random:in=8,out=10", reqs2);
    test_serve_stop(&s);
    CHECK(r && c);
    if (r) {
        CHECK_EQ_INT(test_num(r, "reasoning_requests"), 4);
        CHECK_EQ_INT(test_num(r, "reasoning_answered"), 0);
        CHECK(json_is_null(json_object_get(r, "mean_ttfa_ms")));
        CHECK_EQ_INT(test_num(r, "total_reasoning_tokens"), 40);
        int bad = 0;
        CHECK_EQ_INT(each_request(reqs, check_unanswered, &bad), 4);
        CHECK_EQ_INT(bad, 0);
    }
    if (c) {
        CHECK(!json_object_get(c, "reasoning_requests") && !json_object_get(c, "mean_ttfa_ms"));
        int bad = 0;
        CHECK_EQ_INT(each_request(reqs2, check_no_phase, &bad), 4);
        CHECK_EQ_INT(bad, 0);
    }
    json_decref(r);
    json_decref(c);
}

/* The self-checks on a clean run: Little's law holds (nothing was lost), and client and server
 * agree on every request's prompt and output tokens (serve counts words, as the client does). */
TEST(reasoning_self_check_clean_run) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 2ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char reqs[512];
    snprintf(reqs, sizeof reqs, "%s/clean.jsonl", harness_tmpdir());
    json_t *r = bench(&s, "--concurrency 3 --requests 12 --dataset random:in=8,out=10", reqs);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    json_t *sc = json_object_get(r, "self_check"), *ll = json_object_get(sc, "littles_law");
    CHECK(json_is_true(json_object_get(ll, "holds")));
    CHECK_EQ_INT(test_num(ll, "lost_requests_part"), 0);
    CHECK(fabs(test_num(ll, "unexplained_part")) < 1e-9);
    json_t *ta = json_object_get(sc, "token_agreement");
    CHECK_EQ_INT(test_num(json_object_get(ta, "prompt"), "equal"), 12);
    CHECK_EQ_INT(test_num(json_object_get(ta, "output"), "equal"), 12);
    json_decref(r);
}

/* Little's law with lost requests: a server that drops a third of its streams mid-way leaves
 * their time in flight out of throughput x E2EL; the check says so and names it. */
TEST(reasoning_self_check_names_lost_requests) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 5ms --drop-rate 0.5 --seed 3") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/lost.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --out %s --concurrency 2 --requests 16 --max-error-rate 1 "
             "--dataset random:in=8,out=40", s.url, path);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK(rc == 0 || rc == 1);
    json_t *r = test_load_json(path);
    CHECK(r != NULL);
    if (!r) return;
    json_t *ll = json_object_get(json_object_get(r, "self_check"), "littles_law");
    CHECK(test_num(r, "failed") > 0);
    CHECK(test_num(ll, "lost_requests_part") > 0);
    /* the decomposition is exact: the gap is the lost part plus the tail after the last data */
    CHECK(fabs(test_num(ll, "mean_in_flight") - test_num(ll, "throughput_times_mean_e2el") - test_num(ll, "lost_requests_part") -
               test_num(ll, "after_last_data_part")) < 1e-9);
    if (!json_is_true(json_object_get(ll, "holds"))) {
        const char *why = json_string_value(json_object_get(ll, "reason"));
        CHECK(why && strstr(why, "did not complete"));
    }
    json_decref(r);
}

/* Sweep levels carry the reasoning fields, and the report shows them: a level's TTFA is at least
 * the configured TTFT + R x ITL, and the page has the section with a row per level. */
TEST(reasoning_sweep_levels_and_report) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 5ms --prefill-per-token 0 --reasoning-tokens 10") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    char path[512], html[512], cmd[2048];
    snprintf(path, sizeof path, "%s/sweep.json", harness_tmpdir());
    snprintf(html, sizeof html, "%s/sweep.html", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sweep --url %s --quiet --api chat --concurrency 1..2x2 --requests 6 --dataset random:in=8,out=20 "
             "--out %s", s.url, path);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *d = test_load_json(path);
    CHECK(d != NULL);
    if (!d) return;
    json_t *levels = json_object_get(d, "levels");
    CHECK_EQ_INT(json_array_size(levels), 2);
    for (size_t i = 0; i < json_array_size(levels); i++) {
        json_t *r = json_object_get(json_array_get(levels, i), "results");
        CHECK_EQ_INT(test_num(r, "reasoning_requests"), 6);
        CHECK_EQ_INT(test_num(r, "total_reasoning_tokens"), 60);
        CHECK(test_num(r, "min_ttfa_ms") >= 20.0 + 10 * 5.0);
    }
    json_decref(d);
    snprintf(cmd, sizeof cmd, "report %s -o %s", path, html);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    FILE *f = fopen(html, "r");
    static char page[1 << 21];
    size_t n = f ? fread(page, 1, sizeof page - 1, f) : 0;
    if (f) fclose(f);
    page[n] = 0;
    CHECK(strstr(page, "Reasoning and the server") != NULL);
    CHECK(strstr(page, "TTFA p50 (ms)") != NULL);
}
