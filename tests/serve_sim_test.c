/* Consistency of the simulated engine behind HTTP and offline: `bench` against
 * `serve --engine sim --speedup 1` and `sim` on the same open-loop workload (same seeded arrivals) agree within 5% on
 * median TTFT, TPOT and output throughput (the HTTP path adds only loopback and client costs). */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(serve_sim_matches_offline_sim) {
    SKIP_IF_SANITIZED();
    test_server s;
    if (test_serve_start(&s, "--engine sim --model deepseek-v2-lite --gpu h200 --speedup 1") != 0) { CHECK_MSG(0, "serve --engine sim did not start"); return; }
    char bpath[512], spath[512], cmd[1024];
    snprintf(bpath, sizeof bpath, "%s/bench.json", harness_tmpdir());
    snprintf(spath, sizeof spath, "%s/sim.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --rate 8/s --requests 60 --dataset random:in=4096,out=64 --quiet --out %s", s.url, bpath);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    snprintf(cmd, sizeof cmd, "sim --model deepseek-v2-lite --gpu h200 --rate 8/s --requests 60 --dataset random:in=4096,out=64 --quiet --out %s", spath);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *b = test_load_json(bpath), *m = test_load_json(spath);
    CHECK(b && m);
    if (b && m) {
        CHECK_EQ_INT(test_num(b, "completed"), 60);
        CHECK_EQ_INT(test_num(m, "completed"), 60);
        const char *keys[] = { "median_ttft_ms", "median_tpot_ms", "output_throughput" };
        for (int i = 0; i < 3; i++) {
            double x = test_num(b, keys[i]), y = test_num(m, keys[i]);
            CHECK_MSG(fabs(x - y) <= 0.05 * y, "%s: bench %.3f vs sim %.3f (more than 5%% apart)", keys[i], x, y);
        }
    }
    json_decref(b);
    json_decref(m);
}
