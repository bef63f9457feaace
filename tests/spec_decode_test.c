/* MTP / speculative decoding and the server's per-request figures against `dsperf serve` with
 * known truth:
 * - `--engine sim --mtp 2 --mtp-accept-len 2.5`: every decode step gives floor(a + 2.5) − floor(a)
 *   tokens of its running sum a, so 100 decode tokens (out = 101: the first token is the
 *   prefill's) come in exactly 40 chunks, 2.5 tokens per step on every request, and the server's
 *   own count (`--per-request-metrics`, vLLM's metrics.speculative_decoding) says 40 steps too;
 * - `--engine fixed --ttft 50ms --tokens-per-chunk 3 --capacity 2 --per-request-metrics`: the
 *   server's time to first token from scheduling is 50 ms exactly (engine time, no jitter), its
 *   queue is what the capacity makes wait, and the client's TTFT can only be later than the
 *   server's queue + TTFT (the server writes no earlier than its deadline): no causality
 *   violation. No wall-clock timing is asserted. */
#include "harness.h"
#include "testutil.h"
#include "diagnose/diagnose.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char last_path[512];   /* the results file the last bench wrote */

static json_t *bench(const test_server *s, const char *args, char **out) {
    char *path = last_path, cmd[2048];
    snprintf(path, sizeof last_path, "%s/sd%d.json", harness_tmpdir(), rand());
    snprintf(cmd, sizeof cmd, "bench --url %s --out %s %s", s->url, path, args);
    int rc = test_run(cmd, out, NULL);
    if (rc != 0) fprintf(stderr, "    bench exited %d\n", rc);
    return rc == 0 ? test_load_json(path) : NULL;
}

TEST(serve_sim_mtp_acceptance_known_truth) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --mtp 2 --mtp-accept-len 2.5 --per-request-metrics") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    char *out = NULL;
    json_t *r = bench(&s, "--concurrency 4 --requests 16 --dataset random:in=64,out=101", &out);
    /* /metrics counts the steps as vLLM does: 640 drafts (decode steps), 1.5 accepted tokens each */
    char url[300];
    snprintf(url, sizeof url, "%s/metrics", s.url);
    char *prom = test_http_get(url);
    CHECK(prom != NULL);
    CHECK_NEAR(test_prom_value(prom, "vllm:spec_decode_num_drafts_total"), 16 * 40, 0);
    CHECK_NEAR(test_prom_value(prom, "vllm:spec_decode_num_accepted_tokens_total"), 16 * 60, 0);
    free(prom);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) { free(out); return; }
    CHECK_EQ_INT(test_num(r, "completed"), 16);
    json_t *sd = json_object_get(r, "spec_decode");
    CHECK(json_is_object(sd));
    CHECK_EQ_INT(test_num(sd, "requests"), 16);
    CHECK_EQ_INT(test_num(sd, "decode_chunks"), 16 * 40);
    CHECK_EQ_INT(test_num(sd, "decode_tokens"), 16 * 100);
    CHECK_NEAR(test_num(sd, "mean_acceptance_length"), 2.5, 1e-12);
    CHECK_NEAR(test_num(sd, "min_request_acceptance_length"), 2.5, 1e-12);
    CHECK_NEAR(test_num(sd, "max_request_acceptance_length"), 2.5, 1e-12);
    /* every position bin holds steps of 2 or 3 tokens */
    json_t *bp = json_object_get(sd, "by_position"), *e;
    size_t i;
    CHECK(json_array_size(bp) == 4);   /* [1,16) [16,32) [32,64) [64,128) */
    json_array_foreach(bp, i, e) {
        double a = test_num(e, "acceptance_length");
        CHECK(a >= 2 && a <= 3);
    }
    json_t *srv = json_object_get(sd, "server");
    CHECK(json_is_object(srv));
    CHECK_EQ_INT(test_num(srv, "requests"), 16);
    CHECK_EQ_INT(test_num(srv, "steps"), 16 * 40);
    CHECK_NEAR(test_num(srv, "acceptance_length"), 2.5, 1e-12);
    CHECK(out && strstr(out, "Acceptance length, from chunks:") && strstr(out, "Acceptance length, server's count:"));
    /* the history keeps it as a headline metric (higher is better) */
    char cmd[1400], *hout = NULL;
    snprintf(cmd, sizeof cmd, "history --db %s/h.db import %s", harness_tmpdir(), last_path);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "history --db %s/h.db best spec_acceptance_length --json", harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, &hout, NULL), 0);
    json_t *best = hout ? json_loads(hout, 0, NULL) : NULL;
    CHECK_NEAR(test_num(json_array_get(json_object_get(best, "best"), 0), "value"), 2.5, 1e-9);
    CHECK_STR(json_string_value(json_object_get(best, "direction")), "higher_is_better");
    json_decref(best);
    free(hout);

    json_decref(r);
    free(out);
}

/* A plain stream (one token a chunk, no server figures) has no spec_decode section at all. */
TEST(serve_plain_stream_has_no_acceptance) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    json_t *r = bench(&s, "--quiet --concurrency 2 --requests 4 --dataset random:in=16,out=10", NULL);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) return;
    CHECK(json_object_get(r, "spec_decode") == NULL);
    CHECK(json_object_get(r, "server_timing") == NULL);
    json_decref(r);
}

TEST(serve_per_request_metrics_joined) {
    test_server s;
    if (test_serve_start(&s, "--ttft 50ms --itl 10ms --tokens-per-chunk 3 --capacity 2 --per-request-metrics") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    char *out = NULL;
    json_t *r = bench(&s, "--concurrency 4 --requests 12 --dataset random:in=16,out=31", &out);
    test_serve_stop(&s);
    CHECK(r != NULL);
    if (!r) { free(out); return; }
    json_t *st = json_object_get(r, "server_timing");
    CHECK(json_is_object(st));
    CHECK_STR(json_string_value(json_object_get(st, "source")), "vllm_metrics");
    CHECK_EQ_INT(test_num(st, "requests_joined"), 12);
    /* the engine's TTFT from scheduling is the configured 50 ms on every request */
    CHECK_NEAR(test_num(st, "min_server_prefill_ms"), 50, 1e-6);
    CHECK_NEAR(test_num(st, "max_server_prefill_ms"), 50, 1e-6);
    /* 4 users on 2 places: some request waited in the server's queue */
    CHECK(test_num(st, "max_server_queue_ms") > 0);
    CHECK_EQ_INT(test_num(st, "causality_violations"), 0);
    CHECK(test_num(st, "min_ttft_outside_server_ms") >= 0);
    /* the server's TPOT: 30 tokens after the first in 10 steps of 10 ms: 100/30 ms */
    CHECK_NEAR(test_num(st, "mean_server_tpot_ms"), 100.0 / 30, 1e-6);
    /* the steps carried 3 tokens each: the server's own count says so too */
    json_t *srv = json_object_get(json_object_get(r, "spec_decode"), "server");
    CHECK_NEAR(test_num(srv, "acceptance_length"), 3, 1e-12);
    CHECK(out && strstr(out, "Server's side (vLLM per-request metrics)"));
    /* the simulator takes the measured acceptance: the server's 3 tokens a step, from the file */
    char cmd[1400], simout[600];
    snprintf(simout, sizeof simout, "%s/sim_measured.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --quiet --out %s --concurrency 4 --requests 20 --dataset random:in=64,out=91 "
             "--mtp 2 --mtp-accept-len %s", simout, last_path);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *sim = test_load_json(simout);
    CHECK_NEAR(test_num(json_object_get(sim, "spec_decode"), "mean_acceptance_length"), 3, 1e-9);   /* 90 tokens, 30 steps */
    json_decref(sim);
    /* diagnose's time accounting takes the server's split: its queue and prefill, and the client's
     * and network's part, adding up to the mean TTFT */
    diagnose_opts o;
    diagnose_default_opts(&o);
    char err[256];
    json_t *dg = diagnose_run(r, &o, err, sizeof err);
    json_t *tm = json_object_get(dg, "time");
    CHECK_STR(json_string_value(json_object_get(tm, "split")), "vllm_metrics");
    double sum = 0, pre = NAN;
    size_t k;
    json_t *p;
    json_array_foreach(json_object_get(tm, "request"), k, p) {
        const char *name = json_string_value(json_object_get(p, "part"));
        double ms = test_num(p, "ms");
        if (strcmp(name, "client queue") && strcmp(name, "decode")) sum += ms;
        if (!strcmp(name, "prefill (the server's own figure)")) pre = ms;
    }
    CHECK_NEAR(pre, 50, 1e-3);
    CHECK_NEAR(sum, test_num(r, "mean_ttft_ms"), 3e-3);   /* three parts, each rounded to 1 µs */
    json_decref(dg);
    json_decref(r);
    free(out);
}
