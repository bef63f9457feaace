/* Consistency of the simulated engine behind HTTP and offline: `bench` against
 * `serve --engine sim --speedup 0.5` and `sim` on the same workload, one user at a time (closed
 * loop, concurrency 1), so every request meets an idle engine whenever it arrives. The served
 * engine's own account (/metrics, in engine seconds) agrees with the offline run within 5% on mean
 * TTFT and E2E latency: the engine is the same. (An open-loop workload was used before: a busy
 * machine delays arrivals by more than the gaps between them, requests then share steps they did
 * not share offline, and TTFT moved by a third.) The client's view of the same requests can only be
 * later than the engine's (a request is read after it is sent, a token arrives after it is due);
 * how much later on an idle machine is `make bench`'s business, not a test's. */
#include "harness.h"
#include "testutil.h"
#include "engine/sim_interval.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static double mean_of(const char *metrics, const char *hist) {
    char sum[160], cnt[160];
    snprintf(sum, sizeof sum, "%s_sum", hist);
    snprintf(cnt, sizeof cnt, "%s_count", hist);
    return test_prom_value(metrics, sum) / test_prom_value(metrics, cnt);
}

/* The 5% bound is "a fraction of a step" for steps of a few ms: the simulator's fitted per-kernel
 * and per-sequence costs make V2-Lite's steps 15-20 ms, so both sides run the plain roofline with a
 * 1.5 ms step this check was sized for (the engine is the same either way). */
#define PLAIN_COSTS "--step-overhead 1.5ms --seq-overhead 0 --kernel-time 0 --moe-eff 1 --request-time 0 --request-per-token-time 0"

TEST(serve_sim_matches_offline_sim) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --model deepseek-v2-lite --gpu h200 --speedup 0.5 " PLAIN_COSTS) != 0) { CHECK_MSG(0, "serve --engine sim did not start"); return; }
    char bpath[512], spath[512], cmd[1024], murl[128];
    snprintf(bpath, sizeof bpath, "%s/bench.json", harness_tmpdir());
    snprintf(spath, sizeof spath, "%s/sim.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 1 --requests 20 --dataset random:in=4096,out=16 --quiet --out %s", s.url, bpath);
    int rc = test_run(cmd, NULL, NULL);
    snprintf(murl, sizeof murl, "%s/metrics", s.url);
    char *m = test_http_get(murl);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    CHECK(m != NULL);
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 " PLAIN_COSTS " --concurrency 1 --requests 20 --dataset random:in=4096,out=16 --quiet --out %s", spath);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *b = test_load_json(bpath), *o = test_load_json(spath);
    CHECK(b && o);
    if (b && o && m) {
        CHECK_EQ_INT(test_num(b, "completed"), 20);
        CHECK_EQ_INT(test_num(o, "completed"), 20);
        CHECK_EQ_INT(test_num(b, "total_output_tokens"), test_num(o, "total_output_tokens"));
        double served_ttft_ms = 1e3 * mean_of(m, "vllm:time_to_first_token_seconds");
        double served_e2el_ms = 1e3 * mean_of(m, "vllm:e2e_request_latency_seconds");
        double off_ttft = test_num(o, "mean_ttft_ms"), off_e2el = test_num(o, "mean_e2el_ms");
        CHECK_MSG(fabs(served_ttft_ms - off_ttft) <= 0.05 * off_ttft, "mean TTFT: served engine %.3f ms vs sim %.3f ms", served_ttft_ms, off_ttft);
        CHECK_MSG(fabs(served_e2el_ms - off_e2el) <= 0.05 * off_e2el, "mean E2E: served engine %.3f ms vs sim %.3f ms", served_e2el_ms, off_e2el);
        /* the client, in engine time (wall x 0.5), never sees a request finish sooner than the engine */
        CHECK_MSG(test_num(b, "mean_ttft_ms") * 0.5 >= served_ttft_ms - 1e-3, "client TTFT %.3f ms (engine time) below the engine's %.3f",
                  test_num(b, "mean_ttft_ms") * 0.5, served_ttft_ms);
        CHECK(test_num(b, "mean_e2el_ms") * 0.5 >= served_e2el_ms - 1e-3);
        /* the served figures are predictions: the results carry the simulator's 80% interval around
         * what the client measured, on the simulated clock (x 0.5 here), in a section of its own
         * (the measurement itself untouched) */
        const json_t *pi = json_object_get(b, "prediction_interval");
        const json_t *tp = json_object_get(json_object_get(pi, "metrics"), "median_tpot_ms");
        double v = 0.5 * test_num(b, "median_tpot_ms"), q = sim_interval_q(SIM_IV_TPOT, SIM_IV_STEADY, 0);   /* a closed loop: steady */
        CHECK_NEAR(test_num(pi, "speedup"), 0.5, 1e-12);
        CHECK_NEAR(test_num(pi, "level"), 0.8, 1e-12);
        CHECK_NEAR(test_num(tp, "value"), v, v * 1e-9);
        CHECK_NEAR(test_num(tp, "lo"), v * exp(-q), v * 1e-9);
        CHECK_NEAR(test_num(tp, "hi"), v * exp(q), v * 1e-9);
        /* a closed loop's throughput is predicted too */
        CHECK(json_object_get(json_object_get(pi, "metrics"), "output_throughput") != NULL);
        CHECK(strstr(json_string_value(json_object_get(pi, "of")), "serve --engine sim") != NULL);
    }
    free(m);
    json_decref(b);
    json_decref(o);
}

/* `dsperf sim`'s mean TTFT for args, from its summary line; NAN when the run failed. */
static double sim_mean_ttft_ms(const char *args) {
    char cmd[512], out[16384];
    snprintf(cmd, sizeof cmd, "sim --requests 100 --rate 5/s --dataset random:in=1000,out=16 --seed 3 %s", args);
    int rc = test_run_into(cmd, out, sizeof out);
    CHECK_MSG(rc == 0, "dsperf %s exited %d:\n%.1500s", cmd, rc, out);
    const char *p = strstr(out, "Mean TTFT (ms):");
    return rc == 0 && p ? strtod(p + strlen("Mean TTFT (ms):"), NULL) : NAN;
}

/* The request path (a Python server's HTTP, tokenization and hand-off, --request-time and
 * --request-per-token-time) puts each request that much later into the engine's queue: at 5/s with
 * fixed 1,000-token prompts every request meets the same engine, only later, so mean TTFT moves by
 * exactly fixed + per-token x 1,000 (the summary's 0.01 ms rounding aside). llama.cpp, a C++ server,
 * has no such path; `serve --engine sim` is reached over real HTTP and refuses the flags. */
TEST(sim_request_path_delays_each_request_into_the_engine) {
    const char *path = "--request-time 100ms --request-per-token-time 30us";   /* 100 + 30 ms */
    char a[256];
    double base = sim_mean_ttft_ms("--engine-profile sglang");
    snprintf(a, sizeof a, "--engine-profile sglang %s", path);
    double with = sim_mean_ttft_ms(a);
    CHECK_MSG(fabs(with - base - 130.0) <= 0.02, "sglang: mean TTFT %.2f ms with the path, %.2f ms without (want +130 ms)", with, base);
    base = sim_mean_ttft_ms("--engine-profile llamacpp-b4747");
    snprintf(a, sizeof a, "--engine-profile llamacpp-b4747 %s", path);
    with = sim_mean_ttft_ms(a);
    CHECK_MSG(fabs(with - base) <= 0.02, "llama.cpp: mean TTFT %.2f ms with the path, %.2f ms without (want the same)", with, base);
    char out[2048];
    CHECK_EQ_INT(test_run_into("serve --engine sim --port 0 --request-time 100ms", out, sizeof out), 2);
    CHECK_MSG(strstr(out, "serve --engine sim is reached over real HTTP") != NULL, "%s", out);
}
