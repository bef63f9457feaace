/* The real llama.cpp on loopback: `dsperf bench` against llama-server (built by `make
 * real-engine`) serving the random-weight DeepSeek-V2 `tiny` GGUF with DeepSeek's real tokenizer.
 * Counts are exact (the server generates exactly max_tokens with ignore_eos); no timing is
 * asserted beyond causality. */
#include "harness.h"
#include "testutil.h"
#include "llamacpp_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(llamacpp_live_bench_completions_counts) {
    LLAMA_REQUIRE();
    test_llama s;
    if (test_llama_start(&s, "tiny", "-np 2 -c 2048 -t 1 --metrics") != 0) { CHECK_MSG(0, "llama-server did not start"); return; }
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/r.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --out %s --concurrency 2 --requests 6 --dataset random:in=64,out=16", s.url, path);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    test_llama_stop(&s);
    CHECK_MSG(rc == 0, "bench exited %d: %s", rc, err ? err : "");
    free(err);
    json_t *r = test_load_json(path);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 6);
    CHECK_EQ_INT(test_num(r, "failed"), 0);
    CHECK_EQ_INT(test_num(r, "total_output_tokens"), 6 * 16);
    CHECK(test_num(r, "mean_ttft_ms") > 0);
    json_decref(r);
}
