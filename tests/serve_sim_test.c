/* Consistency of the simulated engine behind HTTP and offline: `bench` against
 * `serve --engine sim --speedup 0.25` and `sim` on the same open-loop workload (same seeded arrivals:
 * 2/s of wall time are 8/s of engine time) agree within 5% on median TTFT, TPOT and output
 * throughput. Engine time runs four times slower than the wall, so the milliseconds a busy machine
 * adds (a late server loop, loopback, the client) count a quarter as much against the engine's
 * times; what is left of them is what the HTTP path itself costs. */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(serve_sim_matches_offline_sim) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --model deepseek-v2-lite --gpu h200 --speedup 0.25") != 0) { CHECK_MSG(0, "serve --engine sim did not start"); return; }
    char bpath[512], spath[512], cmd[1024];
    snprintf(bpath, sizeof bpath, "%s/bench.json", harness_tmpdir());
    snprintf(spath, sizeof spath, "%s/sim.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --rate 2/s --requests 40 --dataset random:in=4096,out=64 --quiet --out %s", s.url, bpath);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 --rate 8/s --requests 40 --dataset random:in=4096,out=64 --quiet --out %s", spath);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *b = test_load_json(bpath), *m = test_load_json(spath);
    CHECK(b && m);
    if (b && m) {
        CHECK_EQ_INT(test_num(b, "completed"), 40);
        CHECK_EQ_INT(test_num(m, "completed"), 40);
        const char *keys[] = { "median_ttft_ms", "median_tpot_ms", "output_throughput" };
        const double to_engine[] = { 0.25, 0.25, 4.0 };   /* wall ms -> engine ms; per wall s -> per engine s */
        for (int i = 0; i < 3; i++) {
            double x = test_num(b, keys[i]) * to_engine[i], y = test_num(m, keys[i]);
            CHECK_MSG(fabs(x - y) <= 0.05 * y, "%s: bench %.3f vs sim %.3f (more than 5%% apart)", keys[i], x, y);
        }
    }
    json_decref(b);
    json_decref(m);
}
