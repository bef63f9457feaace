/* dsperf sim CLI tests — results JSON like bench's plus the engine section; usage errors. */
#include "harness.h"
#include "testutil.h"
#include "results/results.h"
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

/* the exit code of `dsperf <args>`, output discarded */
static int run(const char *args) { return test_run(args, NULL, NULL); }

TEST(sim_cli_results_json) {
    char path[512], args[1024];
    snprintf(path, sizeof path, "%s/sim.json", harness_tmpdir());
    snprintf(args, sizeof args, "sim --model deepseek-v2-lite --gpu h200 --tp 1 --dataset random:in=1024,out=128 "
             "--rate 20/s --requests 500 --out %s", path);
    CHECK_EQ_INT(run(args), 0);
    char err[256];
    json_t *d = results_load(path, err, sizeof err);
    CHECK_MSG(d != NULL, "%s", err);
    if (!d) return;
    CHECK_STR(json_string_value(json_object_get(d, "producer")), "sim");
    CHECK_EQ_INT(json_integer_value(json_object_get(d, "completed")), 500);
    CHECK_EQ_INT(json_integer_value(json_object_get(d, "total_output_tokens")), 500 * 128);
    CHECK(json_number_value(json_object_get(d, "median_ttft_ms")) > 0);
    CHECK(json_number_value(json_object_get(d, "median_tpot_ms")) > 0);
    json_t *e = json_object_get(d, "engine");
    json_t *s = json_object_get(e, "series");
    static const char *const keys[] = {"t_s", "running", "waiting", "kv_usage", "preemptions", "step_ms", "batch_tokens"};
    size_t n = json_array_size(json_object_get(s, "t_s"));
    CHECK(n > 10);
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) CHECK_EQ_INT(json_array_size(json_object_get(s, keys[i])), n);
    CHECK_EQ_INT(json_integer_value(json_object_get(e, "generation_tokens_total")), 500 * 128);
    CHECK(json_number_value(json_object_get(e, "running_mean")) > 1);
    /* the scraped-server shape too, so diagnose reads sim like a vLLM scrape */
    json_t *srv = json_object_get(json_object_get(d, "telemetry"), "server");
    CHECK_STR(json_string_value(json_object_get(srv, "source")), "sim");
    CHECK_EQ_INT(json_array_size(json_object_get(json_object_get(srv, "series"), "kv_usage_pct")), n);
    /* the same seed gives the same run */
    char path2[512];
    snprintf(path2, sizeof path2, "%s/sim2.json", harness_tmpdir());
    snprintf(args, sizeof args, "sim --dataset random:in=1024,out=128 --rate 20/s --requests 500 --quiet --out %s", path2);
    CHECK_EQ_INT(run(args), 0);
    json_t *d2 = results_load(path2, err, sizeof err);
    CHECK(d2 && json_number_value(json_object_get(d2, "p99_itl_ms")) == json_number_value(json_object_get(d, "p99_itl_ms")));
    json_decref(d2);
    json_decref(d);
    /* closed loop */
    snprintf(args, sizeof args, "sim --concurrency 8 --requests 64 --quiet --out %s", path2);
    CHECK_EQ_INT(run(args), 0);
}

TEST(sim_cli_usage_errors) {
    CHECK_EQ_INT(run("sim --help"), 0);
    CHECK_EQ_INT(run("sim --requests 10"), 2);                       /* neither rate nor concurrency */
    CHECK_EQ_INT(run("sim --rate 5/s --concurrency 3"), 2);
    CHECK_EQ_INT(run("sim --rate 5/s --dataset sharegpt:x"), 2);
    CHECK_EQ_INT(run("sim --rate fast"), 2);
    CHECK_EQ_INT(run("sim --rate 5/s --model gpt"), 2);
    CHECK_EQ_INT(run("sim --rate 5/s --model deepseek-v3 --tp 1"), 2);  /* does not fit */
    CHECK_EQ_INT(run("sim --rate 5/s --bogus 1"), 2);
}

TEST(sim_cli_trace_replay) {
    char data[512], out[512], args[1400];
    snprintf(data, sizeof data, "%s/trace.jsonl", harness_tmpdir());
    snprintf(out, sizeof out, "%s/trace.json", harness_tmpdir());
    FILE *f = fopen(data, "w");
    CHECK(f != NULL);
    if (!f) return;
    for (int i = 0; i < 20; i++) fprintf(f, "{\"prompt\":\"w w w w\",\"max_tokens\":16,\"timestamp\":%d.0}\n", i);
    fclose(f);
    snprintf(args, sizeof args, "sim --dataset jsonl:%s --arrival trace --quiet --out %s", data, out);
    CHECK_EQ_INT(run(args), 0);
    char err[256];
    json_t *d = results_load(out, err, sizeof err);
    CHECK(d != NULL);
    /* one request a second for 20 seconds, each served well within its second */
    CHECK_EQ_INT(json_integer_value(json_object_get(d, "completed")), 20);
    CHECK_NEAR(json_number_value(json_object_get(d, "duration")), 19.0, 0.5);
    json_decref(d);
    snprintf(args, sizeof args, "sim --dataset random:in=8,out=4 --arrival trace --quiet");
    CHECK_EQ_INT(run(args), 2);
}
