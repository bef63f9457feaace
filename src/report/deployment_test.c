/* Tests of the report's hosts-and-GPUs section (deployment.c) on a results document from a
 * multi-host job with a lost rank and GPUs on two nodes. */
#include "harness.h"
#include "report/report_internal.h"
#include <string.h>

TEST(report_deployment_names_ranks_lost_ranks_and_the_slowest_gpu) {
    json_t *r = json_loads(
        "{\"dist\": {\"ranks\": 3, \"hosts\": 2, \"shards\": 4, \"clock\": {\"max_uncertainty_ns\": 2100},"
        " \"rank_info\": ["
        "  {\"host\": \"client-a\", \"role\": \"load\", \"client_threads\": 2, \"requests\": 50, \"status\": \"ok\", \"clock\": {\"offset_ns\": 0}},"
        "  {\"host\": \"client-b\", \"role\": \"load\", \"client_threads\": 2, \"requests\": 0, \"status\": \"lost\","
        "   \"lost_reason\": \"silent for 30 s during the run (the process died or hangs)\", \"clock\": {\"offset_ns\": 1500, \"uncertainty_ns\": 2100}},"
        "  {\"host\": \"gpu-1\", \"role\": \"telemetry\", \"client_threads\": 0, \"requests\": 0, \"status\": \"ok\", \"clock\": {\"offset_ns\": -800}}]},"
        " \"telemetry_summary\": {\"gpus\": [{}, {}, {}], \"util_gpu_pct_mean\": 80, \"power_w_mean_total\": 1800,"
        "  \"nodes\": [{\"host\": \"gpu-1\", \"gpus\": 2, \"util_gpu_pct_mean\": 90}, {\"host\": \"gpu-2\", \"gpus\": 1, \"util_gpu_pct_mean\": 60}],"
        "  \"slowest_gpu\": {\"host\": \"gpu-2\", \"index\": 0, \"by\": \"sm_clock\", \"why\": \"lowest mean SM clock: 1410 MHz against 1980 MHz\"}}}",
        0, NULL);
    CHECK(r != NULL);
    rbuf b;
    rb_init(&b);
    report_deployment(&b, r, NULL);
    CHECK(b.p != NULL);
    if (b.p) {
        CHECK(strstr(b.p, "3 MPI ranks on 2 hosts") != NULL);
        CHECK(strstr(b.p, "lost: silent for 30 s") != NULL);
        CHECK(strstr(b.p, "<td>gpu-2</td>") != NULL);
        CHECK(strstr(b.p, "whole deployment") != NULL);
        CHECK(strstr(b.p, "Slowest GPU: <b>GPU 0 on gpu-2</b>") != NULL);
    }
    rb_free(&b);
    /* one process on one node: no section */
    json_t *plain = json_loads("{\"completed\": 3}", 0, NULL);
    rb_init(&b);
    report_deployment(&b, plain, NULL);
    CHECK(b.p == NULL || b.len == 0);
    rb_free(&b);
    json_decref(plain);
    json_decref(r);
}
