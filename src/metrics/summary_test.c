/* Tests for summary_compute on hand-built recsets whose every timestamp is known, so every field
 * has a value worked out by hand (derivations in the comments). Times are in ms after B = 1 s
 * (a timestamp of 0 means "did not happen"). */
#include "harness.h"
#include "metrics/summary.h"
#include "metrics/hdr.h"
#include <math.h>
#include <string.h>

#define B INT64_C(1000000000)
#define MS(x) ((int64_t)((x) * 1e6))

static double jr(const json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return v && json_is_number(v) ? json_number_value(v) : NAN;
}

static long long ji(const json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return v && json_is_integer(v) ? json_integer_value(v) : -999;
}

static int jnull(const json_t *o, const char *key) { return json_is_null(json_object_get(o, key)); }
static int jtrue(const json_t *o, const char *key) { return json_is_true(json_object_get(o, key)); }

static void check_array(const json_t *tl, const char *key, const long *want, size_t n) {
    json_t *a = json_object_get(tl, key);
    CHECK_MSG(json_is_array(a) && json_array_size(a) == n, "timeline.%s has %zu entries, want %zu", key,
              json_array_size(a), n);
    for (size_t i = 0; a && i < n && i < json_array_size(a); i++)
        CHECK_MSG(json_integer_value(json_array_get(a, i)) == want[i], "timeline.%s[%zu] = %lld, want %ld", key, i,
                  (long long)json_integer_value(json_array_get(a, i)), want[i]);
}

static record *add(recset *s, double sched, double send, double end, int outcome) {
    record *r = recset_add(s);
    r->sched_ns = B + MS(sched);
    r->send_ns = B + MS(send);
    r->end_ns = B + MS(end);
    r->outcome = (uint8_t)outcome;
    return r;
}

static void chunks(record *r, const double *at, const unsigned *m, size_t n) {
    for (size_t i = 0; i < n; i++) record_add_chunk(r, r->send_ns + MS(at[i]), m ? m[i] : 1);
    r->first_ns = r->chunk_ns[0];
    r->last_ns = r->chunk_ns[n - 1];
}

/* A: OK, no queue, 4 one-token chunks at +100..+130 → TTFT 100, E2EL 130, TPOT 30/3 = 10, gaps 10 10 10
 * B: OK, queued 20, chunks at +200 +220 +260 +300 with 1,1,2,4 tokens → TTFT 200, E2EL 300,
 *    TPOT 100/7, gaps 20 40 40; per-token 20, 20 20, 10 10 10 10; usage 8 vs client 7 (mismatch)
 * C: HTTP 500 at +500..+510      D: timeout, sent +600, ends +2600
 * F: OK, queued 50 (sched 1000, send 1050), one chunk at +150 → TTFT = E2EL = 150, no TPOT
 * W: a warm-up request before everything (ignored). */
static void build_run(recset *s) {
    recset_init(s);
    record *w = add(s, -5000, -5000, -4000, REC_OK);
    w->warmup = 1;
    record *a = add(s, 0, 0, 131, REC_OK);
    const double at_a[] = { 100, 110, 120, 130 };
    chunks(a, at_a, NULL, 4);
    a->in_tokens = 10; a->out_tokens_server = 4; a->out_tokens_client = 4;
    record *b = add(s, 0, 20, 325, REC_OK);
    const double at_b[] = { 200, 220, 260, 300 };
    const unsigned m_b[] = { 1, 1, 2, 4 };
    chunks(b, at_b, m_b, 4);
    b->in_tokens = 20; b->in_tokens_server = 21; b->out_tokens_server = 8; b->out_tokens_client = 7;
    record *c = add(s, 500, 500, 510, REC_ERR_HTTP);
    c->http_status = 500;
    add(s, 600, 600, 2600, REC_ERR_TIMEOUT);
    record *f = add(s, 1000, 1050, 1200, REC_OK);
    const double at_f[] = { 150 };
    chunks(f, at_f, NULL, 1);
    f->in_tokens = 5; f->out_tokens_server = 1;
}

TEST(metrics_summary_fields_exact) {
    recset s;
    build_run(&s);
    summary_opts o;
    summary_default_opts(&o);
    CHECK(summary_parse_percentiles(&o, "40,50,90,99,99.9") == 0);
    o.slo_ttft_ms = 160;
    o.slo_tpot_ms = 12;
    json_t *j = summary_compute(&s, &o);
    CHECK(j != NULL);
    if (!j) { recset_free(&s); return; }

    CHECK_EQ_INT(ji(j, "completed"), 3);
    CHECK_EQ_INT(ji(j, "failed"), 2);
    CHECK_EQ_INT(ji(j, "total_requests"), 5);
    CHECK_EQ_INT(ji(j, "warmup_requests"), 1);
    CHECK_NEAR(jr(j, "duration"), 2.6, 1e-12);               /* first send B → D ends at +2600 */
    CHECK_EQ_INT(ji(j, "total_input_tokens"), 35);           /* 10 + 20 + 5 (completed only) */
    CHECK_EQ_INT(ji(j, "total_output_tokens"), 13);          /* 4 + 8 + 1 */
    CHECK_EQ_INT(ji(j, "total_input_tokens_server"), 21);
    CHECK_EQ_INT(ji(j, "output_token_mismatches"), 1);
    CHECK_NEAR(jr(j, "request_throughput"), 3 / 2.6, 1e-12);
    CHECK_NEAR(jr(j, "output_throughput"), 13 / 2.6, 1e-12);
    CHECK_NEAR(jr(j, "total_token_throughput"), 48 / 2.6, 1e-12);
    /* SLO ttft<=160, tpot<=12: A (100, 10) good, B (200) not, F (150, tpot 0 as Nout=1) good */
    CHECK_NEAR(jr(j, "request_goodput"), 2 / 2.6, 1e-12);
    CHECK_EQ_INT(ji(j, "good_requests"), 2);
    CHECK_NEAR(jr(json_object_get(j, "goodput_slo"), "ttft_ms"), 160, 0);
    CHECK(json_object_get(json_object_get(j, "goodput_slo"), "e2el_ms") == NULL);

    /* TTFT {100, 200, 150}: mean 150, std sqrt(5000/3), p40 h=.8 → 140, p90 h=1.8 → 190, p99 → 199 */
    CHECK_NEAR(jr(j, "mean_ttft_ms"), 150, 1e-9);
    CHECK_NEAR(jr(j, "median_ttft_ms"), 150, 1e-9);
    CHECK_NEAR(jr(j, "std_ttft_ms"), sqrt(5000.0 / 3), 1e-9);
    CHECK_NEAR(jr(j, "min_ttft_ms"), 100, 1e-9);
    CHECK_NEAR(jr(j, "max_ttft_ms"), 200, 1e-9);
    CHECK_NEAR(jr(j, "p40_ttft_ms"), 140, 1e-9);
    CHECK_NEAR(jr(j, "p90_ttft_ms"), 190, 1e-9);
    CHECK_NEAR(jr(j, "p99_ttft_ms"), 199, 1e-9);
    CHECK_NEAR(jr(j, "p99.9_ttft_ms"), 199.9, 1e-9);
    /* TPOT {10, 100/7} (F has Nout = 1: none) */
    CHECK_NEAR(jr(j, "mean_tpot_ms"), (10 + 100.0 / 7) / 2, 1e-9);
    CHECK_NEAR(jr(j, "max_tpot_ms"), 100.0 / 7, 1e-9);
    CHECK_NEAR(jr(j, "p50_tpot_ms"), (10 + 100.0 / 7) / 2, 1e-9);
    /* ITL chunk view {10,10,10,20,40,40}: mean/min/max exact, percentiles within the HDR bound;
     * median h=2.5 → 15, p90 h=4.5 → 40 */
    CHECK_EQ_INT(ji(j, "itl_samples"), 6);
    CHECK_NEAR(jr(j, "mean_itl_ms"), 130.0 / 6, 1e-9);
    CHECK_NEAR(jr(j, "std_itl_ms"), sqrt((3 * pow(130.0 / 6 - 10, 2) + pow(20 - 130.0 / 6, 2) +
                                          2 * pow(40 - 130.0 / 6, 2)) / 6), 1e-9);
    CHECK_NEAR(jr(j, "min_itl_ms"), 10, 1e-9);
    CHECK_NEAR(jr(j, "max_itl_ms"), 40, 1e-9);
    CHECK_NEAR(jr(j, "median_itl_ms"), 15, 15 * HDR_REL_ERROR);
    CHECK_NEAR(jr(j, "p90_itl_ms"), 40, 40 * HDR_REL_ERROR);
    CHECK_STR(json_string_value(json_object_get(j, "itl_method")), "hdr");
    CHECK_STR(json_string_value(json_object_get(j, "request_metrics_method")), "exact");
    /* per-token view {10×7, 20×3}: mean 13, p90 h=8.1 → 20 */
    CHECK(jtrue(j, "itl_per_token_reported"));
    CHECK_EQ_INT(ji(j, "multi_token_chunks"), 2);
    CHECK_EQ_INT(ji(j, "itl_per_token_samples"), 10);
    CHECK_NEAR(jr(j, "mean_itl_per_token_ms"), 13, 1e-9);
    CHECK_NEAR(jr(j, "median_itl_per_token_ms"), 10, 10 * HDR_REL_ERROR);
    CHECK_NEAR(jr(j, "p90_itl_per_token_ms"), 20, 20 * HDR_REL_ERROR);
    /* E2EL {130, 300, 150}: p99 h=1.98 → 150 + .98·150 */
    CHECK_NEAR(jr(j, "mean_e2el_ms"), 580.0 / 3, 1e-9);
    CHECK_NEAR(jr(j, "median_e2el_ms"), 150, 1e-9);
    CHECK_NEAR(jr(j, "p99_e2el_ms"), 297, 1e-9);
    /* queue {0, 20, 50}; from schedule TTFT {100, 220, 200}, E2EL {130, 320, 200} */
    CHECK_NEAR(jr(j, "mean_queue_ms"), 70.0 / 3, 1e-9);
    CHECK_NEAR(jr(j, "p99_queue_ms"), 49.4, 1e-9);
    CHECK_NEAR(jr(j, "mean_ttft_from_schedule_ms"), 520.0 / 3, 1e-9);
    CHECK_NEAR(jr(j, "p99_ttft_from_schedule_ms"), 219.6, 1e-9);
    CHECK_NEAR(jr(j, "max_e2el_from_schedule_ms"), 320, 1e-9);
    CHECK_NEAR(jr(j, "median_e2el_from_schedule_ms"), 200, 1e-9);
    /* error-adjusted TTFT {100,150,200,inf,inf}: p40 h=1.6 → 180, p50 h=2 → 200, p90 h=3.6 → inf */
    CHECK_NEAR(jr(j, "p40_ttft_error_adjusted_ms"), 180, 1e-9);
    CHECK_NEAR(jr(j, "p50_ttft_error_adjusted_ms"), 200, 1e-9);
    CHECK(!jtrue(j, "p50_ttft_error_adjusted_inf"));
    CHECK(jnull(j, "p90_ttft_error_adjusted_ms"));
    CHECK(jtrue(j, "p90_ttft_error_adjusted_inf"));
    CHECK(jnull(j, "p99.9_e2el_from_schedule_error_adjusted_ms"));
    /* error-adjusted E2EL from schedule {130,200,320,inf,inf}: p40 h=1.6 → 200 + .6·120 */
    CHECK_NEAR(jr(j, "p40_e2el_from_schedule_error_adjusted_ms"), 272, 1e-9);

    json_t *e = json_object_get(j, "errors");
    CHECK_EQ_INT(ji(e, "http"), 1);
    CHECK_EQ_INT(ji(json_object_get(e, "http_status"), "500"), 1);
    CHECK_EQ_INT(ji(e, "timeout"), 1);
    CHECK_EQ_INT(ji(e, "connect"), 0);
    CHECK_EQ_INT(ji(e, "stream"), 0);
    CHECK_EQ_INT(ji(e, "truncated"), 0);
    CHECK_EQ_INT(ji(e, "invalid_json"), 0);
    CHECK(json_object_get(e, "cancelled") == NULL);   /* dsperf's own cancellations are no error class */
    CHECK_EQ_INT(ji(j, "cancelled"), 0);
    CHECK_EQ_INT(ji(json_object_get(j, "ended"), "server_error"), 2);

    /* timeline, 3 one-second bins from B; gauges are the max within each second */
    json_t *tl = json_object_get(j, "timeline");
    const long t_s[] = { 0, 1, 2 }, started[] = { 4, 1, 0 }, finished[] = { 2, 1, 0 }, failed[] = { 1, 0, 1 };
    const long tokens[] = { 12, 1, 0 }, inflight[] = { 2, 2, 1 }, queued[] = { 1, 1, 0 };
    check_array(tl, "t_s", t_s, 3);
    check_array(tl, "started", started, 3);
    check_array(tl, "finished", finished, 3);
    check_array(tl, "failed", failed, 3);
    check_array(tl, "output_tokens", tokens, 3);
    check_array(tl, "in_flight", inflight, 3);
    check_array(tl, "queued", queued, 3);
    CHECK_NEAR(jr(j, "peak_output_throughput"), 12, 0);
    CHECK_NEAR(jr(j, "max_output_tokens_per_s"), 12, 0);
    CHECK_EQ_INT(ji(j, "peak_concurrent_requests"), 2);
    CHECK_EQ_INT(ji(j, "max_concurrent_requests"), 2);
    CHECK(jnull(j, "max_concurrency"));

    /* rates: 5 sends over 1.05 s → 4/1.05; no intended rate given */
    CHECK_NEAR(jr(j, "achieved_rate_per_s"), 4 / 1.05, 1e-9);
    CHECK(jnull(j, "intended_rate_per_s"));
    /* closed-loop rule: p99 of queue over sent {0,0,0,20,50} = 20 + .96·30 = 48.8 > 10 ms */
    CHECK(jtrue(j, "client_fell_behind"));
    json_decref(j);
    recset_free(&s);
}

TEST(metrics_summary_client_lag_and_cap) {
    recset s;
    build_run(&s);
    summary_opts o;
    summary_default_opts(&o);
    /* intended 4/s: threshold max(10 ms, 10% of 250 ms) = 25 ms < p99 queue 48.8 ms */
    o.intended_rate_per_s = 4;
    json_t *j = summary_compute(&s, &o);
    CHECK(jtrue(j, "client_fell_behind"));
    CHECK(!jtrue(j, "client_queue_capped"));
    CHECK_NEAR(jr(j, "client_lag_threshold_ms"), 25, 1e-9);
    const char *why = json_string_value(json_object_get(j, "client_lag_reason"));
    CHECK(why && strstr(why, "48.8 ms > 25.0 ms"));
    CHECK(json_object_get(j, "request_goodput") == NULL);   /* no SLO: no goodput field */
    CHECK_NEAR(jr(j, "intended_rate_per_s"), 4, 0);
    json_decref(j);

    /* a --max-concurrency 2 cap that the run reached (peak 2) explains the queue */
    o.max_concurrency = 2;
    j = summary_compute(&s, &o);
    CHECK(!jtrue(j, "client_fell_behind"));
    CHECK(jnull(j, "client_lag_reason"));
    CHECK(jtrue(j, "client_queue_capped"));
    CHECK(strstr(json_string_value(json_object_get(j, "client_queue_reason")), "capped by --max-concurrency"));
    CHECK_EQ_INT(ji(j, "max_concurrency"), 2);
    json_decref(j);

    /* a cap of 3 was never reached: the queue is the client's own lag */
    o.max_concurrency = 3;
    j = summary_compute(&s, &o);
    CHECK(jtrue(j, "client_fell_behind"));
    json_decref(j);
    recset_free(&s);
}

/* n one-chunk requests sent every gap_ms with no queue. */
static void build_even(recset *s, int n, double gap_ms) {
    recset_init(s);
    for (int i = 0; i < n; i++) {
        record *r = add(s, i * gap_ms, i * gap_ms, i * gap_ms + 60, REC_OK);
        const double at[] = { 50 };
        chunks(r, at, NULL, 1);
    }
}

TEST(metrics_summary_achieved_rate) {
    recset s;
    summary_opts o;
    summary_default_opts(&o);
    o.intended_rate_per_s = 2;
    /* sent every 1 s against an intended 2/s: achieved 9/9 s = 1 < 1.8 → behind */
    build_even(&s, 10, 1000);
    json_t *j = summary_compute(&s, &o);
    CHECK_NEAR(jr(j, "achieved_rate_per_s"), 1, 1e-12);
    CHECK(jtrue(j, "client_fell_behind"));
    const char *why = json_string_value(json_object_get(j, "client_lag_reason"));
    CHECK(why && strstr(why, "achieved"));
    /* one chunk per request: no TPOT, no ITL, no per-token view; nulls, not zeros */
    CHECK(jnull(j, "mean_tpot_ms"));
    CHECK(jnull(j, "p99_itl_ms"));
    CHECK(!jtrue(j, "itl_per_token_reported"));
    CHECK(json_object_get(j, "mean_itl_per_token_ms") == NULL);
    json_decref(j);
    recset_free(&s);
    /* on plan: every 500 ms → 2/s, no queue → not behind */
    build_even(&s, 10, 500);
    j = summary_compute(&s, &o);
    CHECK_NEAR(jr(j, "achieved_rate_per_s"), 2, 1e-12);
    CHECK(!jtrue(j, "client_fell_behind"));
    CHECK(jnull(j, "client_lag_reason"));
    json_decref(j);
    recset_free(&s);
}

TEST(metrics_summary_empty_and_all_failed) {
    recset s;
    recset_init(&s);
    summary_opts o;
    summary_default_opts(&o);
    json_t *j = summary_compute(&s, &o);
    CHECK(j != NULL);
    CHECK_EQ_INT(ji(j, "completed"), 0);
    CHECK(jnull(j, "duration"));
    CHECK(jnull(j, "mean_ttft_ms"));
    CHECK(jnull(j, "request_throughput"));
    json_decref(j);
    record *r = add(&s, 0, 0, 5, REC_ERR_CONNECT);
    (void)r;
    add(&s, 0, 0, 1000, REC_ERR_TRUNCATED);
    j = summary_compute(&s, &o);
    CHECK_EQ_INT(ji(j, "failed"), 2);
    CHECK_EQ_INT(ji(json_object_get(j, "errors"), "connect"), 1);
    CHECK_EQ_INT(ji(json_object_get(j, "errors"), "truncated"), 1);
    CHECK_NEAR(jr(j, "request_throughput"), 0, 0);
    CHECK(jnull(j, "p50_ttft_error_adjusted_ms"));
    CHECK(jtrue(j, "p50_ttft_error_adjusted_inf"));
    json_decref(j);
    recset_free(&s);
}

TEST(metrics_summary_percentile_parsing) {
    summary_opts o;
    summary_default_opts(&o);
    CHECK_EQ_INT(o.n_percentiles, 5);
    CHECK_NEAR(o.percentiles[4], 99.9, 0);
    CHECK(summary_parse_percentiles(&o, "50,99.99") == 0);
    CHECK_EQ_INT(o.n_percentiles, 2);
    CHECK(summary_parse_percentiles(&o, "50,,90") == -1);
    CHECK(summary_parse_percentiles(&o, "0") == -1);
    CHECK(summary_parse_percentiles(&o, "101") == -1);
    CHECK(summary_parse_percentiles(&o, "50x") == -1);
    CHECK(summary_parse_percentiles(&o, "") == -1);
    CHECK_EQ_INT(o.n_percentiles, 2);   /* unchanged by failures */
    char buf[32];
    summary_percentile_label(99, buf, sizeof buf); CHECK_STR(buf, "99");
    summary_percentile_label(99.9, buf, sizeof buf); CHECK_STR(buf, "99.9");
    summary_percentile_label(99.99, buf, sizeof buf); CHECK_STR(buf, "99.99");
    summary_percentile_label(12.5, buf, sizeof buf); CHECK_STR(buf, "12.5");
}

TEST(metrics_summary_never_sent_is_queued) {
    /* one request served 0..100 ms; a second scheduled at 500 ms, never sent, dropped at 2500 ms
     * (cancelled by dsperf at the deadline): no failure, not in flight, but queued in seconds 0,
     * 1 and 2 */
    recset s;
    recset_init(&s);
    record *a = add(&s, 0, 0, 100, REC_OK);
    const double at[] = { 50, 100 };
    chunks(a, at, NULL, 2);
    record *c = add(&s, 500, 0, 2500, REC_ERR_CANCELLED);
    c->send_ns = 0;
    summary_opts o;
    summary_default_opts(&o);
    json_t *j = summary_compute(&s, &o);
    CHECK_EQ_INT(ji(j, "failed"), 0);
    CHECK_EQ_INT(ji(j, "cancelled"), 1);
    CHECK_EQ_INT(ji(json_object_get(j, "ended"), "client_deadline"), 1);
    CHECK_EQ_INT(ji(json_object_get(j, "ended"), "completed"), 1);
    CHECK(json_object_get(json_object_get(j, "errors"), "cancelled") == NULL);
    CHECK(json_is_false(json_object_get(j, "p99_e2el_error_adjusted_inf")));   /* no +inf for a cancel */
    CHECK_NEAR(jr(j, "duration"), 2.5, 1e-12);   /* the last end over all requests */
    json_t *tl = json_object_get(j, "timeline");
    const long started[] = { 1, 0, 0 }, inflight[] = { 1, 0, 0 }, queued[] = { 1, 1, 1 }, failed[] = { 0, 0, 0 };
    check_array(tl, "started", started, 3);
    check_array(tl, "failed", failed, 3);
    check_array(tl, "in_flight", inflight, 3);
    check_array(tl, "queued", queued, 3);
    CHECK_EQ_INT(ji(j, "peak_concurrent_requests"), 1);
    json_decref(j);
    recset_free(&s);
}

TEST(metrics_parse_slo) {
    summary_opts o;
    summary_default_opts(&o);
    CHECK(summary_parse_slo(&o, "ttft=200ms,e2el=10s") == 0);
    CHECK_NEAR(o.slo_ttft_ms, 200, 1e-9);
    CHECK_NEAR(o.slo_e2el_ms, 10000, 1e-9);
    CHECK(o.slo_tpot_ms <= 0);
    CHECK(summary_parse_slo(&o, "tpot=fast") == -1);
    CHECK(summary_parse_slo(&o, "itl=5ms") == -1);
    CHECK(summary_parse_slo(&o, "ttft") == -1);
}
