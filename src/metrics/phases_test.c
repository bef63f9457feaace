/* Tests for the phases sections (reasoning vs answer, the server's side, the self-checks) on
 * hand-built records whose every timestamp is known; each expected value is worked out in the
 * comments. Times in ms after B = 1 s. */
#include "harness.h"
#include "metrics/summary.h"
#include "metrics/request_metrics.h"
#include <math.h>
#include <string.h>

#define B INT64_C(1000000000)
#define MS(x) ((int64_t)((x) * 1e6))

static double jr(const json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static record *req(recset *s, double send, double end, int outcome, const double *at, size_t n) {
    record *r = recset_add(s);
    r->sched_ns = r->send_ns = B + MS(send);
    r->end_ns = B + MS(end);
    r->outcome = (uint8_t)outcome;
    for (size_t i = 0; i < n; i++) record_add_chunk(r, r->send_ns + MS(at[i]), 1);
    if (n) { r->first_ns = r->chunk_ns[0]; r->last_ns = r->chunk_ns[n - 1]; }
    return r;
}

/* A: reasoning at +100 +110 +120, answer from +130 to +150: TTFT 100, TTFA 130, E2EL 150;
 *    R = 3 (server and client), A = 3; reasoning TPOT 30/3 = 10, answer TPOT 20/2 = 10.
 *    Ends +160 (10 ms after its last data). llama.cpp-like timings: prompt 60 ms (40 outside),
 *    predicted 6 tokens in 50 ms (server TPOT 10).
 * C: reasoning at +100..+130 (4 chunks), answer +140 +150: server says R = 4, client counted 3
 *    (a mismatch; the server's count is used): TTFA 140, reasoning TPOT 40/4 = 10, A = 2,
 *    answer TPOT 10/1 = 10.
 * N: no reasoning: chunks +100, +200, ends +200; timings prompt 120 ms > TTFT 100 (a causality
 *    violation).
 * F: HTTP 500, sent +50, ends +250.
 * Span D: first send 0 to last end 250. In flight: 160 + 150 + 200 + 200 = 710 → L = 2.84.
 * Completed E2EL: 150 + 150 + 200 = 500 → λW = 500/250 = 2.0. Lost F: 200/250 = 0.8; after last
 * data: A's 10/250 = 0.04; 0.8 + 0.04 = 0.84 = L - λW. Prompt tokens: the server counts 1 more
 * on every request (a BOS). */
static void build(recset *s) {
    recset_init(s);
    const double at_a[] = { 100, 110, 120, 130, 140, 150 };
    record *a = req(s, 0, 160, REC_OK, at_a, 6);
    a->reasoning_chunks = 3; a->answer_ns = a->chunk_ns[3];
    a->reasoning_tokens_server = 3; a->reasoning_tokens_client = 3;
    a->out_tokens_server = a->out_tokens_client = 6;
    a->in_tokens = 10; a->in_tokens_server = 11;
    a->server_prompt_ms = 60; a->server_predicted_ms = 50; a->server_predicted_n = 6;
    const double at_c[] = { 100, 110, 120, 130, 140, 150 };
    record *c = req(s, 0, 150, REC_OK, at_c, 6);
    c->reasoning_chunks = 4; c->answer_ns = c->chunk_ns[4];
    c->reasoning_tokens_server = 4; c->reasoning_tokens_client = 3;
    c->out_tokens_server = c->out_tokens_client = 6;
    c->in_tokens = 20; c->in_tokens_server = 21;
    const double at_n[] = { 100, 200 };
    record *n = req(s, 0, 200, REC_OK, at_n, 2);
    n->out_tokens_server = n->out_tokens_client = 2;
    n->in_tokens = 5; n->in_tokens_server = 6;
    n->server_prompt_ms = 120;
    req(s, 50, 250, REC_ERR_HTTP, NULL, 0)->http_status = 500;
}

TEST(phases_reasoning_exact) {
    recset s;
    build(&s);
    req_metrics m;
    req_metrics_of(&s.v[0], &m);
    CHECK(m.has_reasoning && m.has_ttfa);
    CHECK_NEAR(m.ttfa_ms, 130, 1e-9);
    CHECK_EQ_INT(m.reasoning_tokens, 3);
    CHECK_EQ_INT(m.answer_tokens, 3);
    CHECK_NEAR(m.reasoning_tpot_ms, 10, 1e-9);
    CHECK_NEAR(m.answer_tpot_ms, 10, 1e-9);
    req_metrics_of(&s.v[2], &m);
    CHECK(!m.has_reasoning && !m.has_ttfa && isnan(m.ttfa_ms) && m.reasoning_tokens == -1);

    summary_opts o;
    summary_default_opts(&o);
    json_t *j = summary_compute(&s, &o);
    CHECK(j != NULL);
    if (!j) { recset_free(&s); return; }
    CHECK_EQ_INT(jr(j, "reasoning_requests"), 2);
    CHECK_EQ_INT(jr(j, "reasoning_answered"), 2);
    CHECK_NEAR(jr(j, "mean_ttfa_ms"), (130 + 140) / 2.0, 1e-9);
    CHECK_NEAR(jr(j, "max_ttfa_ms"), 140, 1e-9);
    CHECK_NEAR(jr(j, "mean_reasoning_tpot_ms"), 10, 1e-9);
    CHECK_NEAR(jr(j, "mean_answer_tpot_ms"), 10, 1e-9);
    CHECK_EQ_INT(jr(j, "total_reasoning_tokens"), 3 + 4);
    CHECK_EQ_INT(jr(j, "total_answer_tokens"), 3 + 2);
    CHECK_EQ_INT(jr(j, "total_reasoning_tokens_server"), 7);
    CHECK_EQ_INT(jr(j, "total_reasoning_tokens_client"), 6);
    CHECK_EQ_INT(jr(j, "reasoning_token_mismatches"), 1);
    CHECK_EQ_INT(jr(json_object_get(json_object_get(j, "samples"), "ttfa"), "n"), 2);
    json_decref(j);
    recset_free(&s);
}

TEST(phases_slo_ttfa) {
    recset s;
    build(&s);
    req_metrics a, n;
    req_metrics_of(&s.v[0], &a);
    req_metrics_of(&s.v[2], &n);
    req_slo tight = { .ttfa_ms = 125 }, exact = { .ttfa_ms = 130 };
    CHECK(!req_meets_slo(&tight, &a));
    CHECK(req_meets_slo(&exact, &a));
    /* without a reasoning phase the first token is the answer: N's TTFT is 100 */
    req_slo t99 = { .ttfa_ms = 99 }, t100 = { .ttfa_ms = 100 };
    CHECK(!req_meets_slo(&t99, &n));
    CHECK(req_meets_slo(&t100, &n));
    summary_opts o;
    summary_default_opts(&o);
    CHECK(summary_parse_slo(&o, "ttfa=135ms") == 0);
    CHECK_NEAR(o.slo_ttfa_ms, 135, 1e-9);
    json_t *j = summary_compute(&s, &o);
    /* A (130) and N (TTFT 100) pass, C (140) fails, F failed */
    CHECK_EQ_INT(jr(j, "good_requests"), 2);
    CHECK_NEAR(jr(json_object_get(j, "goodput_slo"), "ttfa_ms"), 135, 1e-9);
    json_decref(j);
    recset_free(&s);
}

TEST(phases_server_timing_join) {
    recset s;
    build(&s);
    summary_opts o;
    summary_default_opts(&o);
    json_t *j = summary_compute(&s, &o);
    json_t *st = json_object_get(j, "server_timing");
    CHECK(json_is_object(st));
    CHECK_EQ_INT(jr(st, "requests_joined"), 2);
    CHECK_NEAR(jr(st, "mean_server_prefill_ms"), (60 + 120) / 2.0, 1e-9);
    /* A: 100 - 60 = 40; N: 100 - 120 = -20 */
    CHECK_NEAR(jr(st, "mean_ttft_outside_server_ms"), 10, 1e-9);
    CHECK_NEAR(jr(st, "ttft_outside_server_share"), 20.0 / 200.0, 1e-12);
    CHECK_EQ_INT(jr(st, "causality_violations"), 1);
    CHECK_NEAR(jr(st, "mean_server_tpot_ms"), 10, 1e-9);
    CHECK_EQ_INT(jr(st, "predicted_n_equal_output_tokens"), 1);
    json_decref(j);
    recset_free(&s);
}

TEST(phases_self_checks) {
    recset s;
    build(&s);
    summary_opts o;
    summary_default_opts(&o);
    json_t *j = summary_compute(&s, &o);
    json_t *sc = json_object_get(j, "self_check"), *ll = json_object_get(sc, "littles_law");
    CHECK_NEAR(jr(ll, "mean_in_flight"), 710.0 / 250, 1e-9);
    CHECK_NEAR(jr(ll, "throughput_times_mean_e2el"), 2.0, 1e-9);
    CHECK_NEAR(jr(ll, "lost_requests_part"), 0.8, 1e-9);
    CHECK_NEAR(jr(ll, "after_last_data_part"), 0.04, 1e-9);
    CHECK_NEAR(jr(ll, "unexplained_part"), 0, 1e-9);
    CHECK(json_is_false(json_object_get(ll, "holds")));
    const char *why = json_string_value(json_object_get(ll, "reason"));
    CHECK(why && strstr(why, "did not complete"));
    json_t *pr = json_object_get(json_object_get(sc, "token_agreement"), "prompt");
    CHECK_EQ_INT(jr(pr, "compared"), 3);
    CHECK_EQ_INT(jr(pr, "equal"), 0);
    const char *ex = json_string_value(json_object_get(pr, "explained"));
    CHECK(ex && strstr(ex, "+1 on every request"));
    json_t *out = json_object_get(json_object_get(sc, "token_agreement"), "output");
    CHECK_EQ_INT(jr(out, "equal"), 3);
    json_decref(j);
    recset_free(&s);
}
