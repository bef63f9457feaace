/* The server's side of every request against the real llama.cpp: its `timings` (last chunk) are
 * joined to dsperf's records request by request. With ignore_eos the server generates exactly
 * max_tokens, so predicted_n is known; its prompt evaluation happens inside the client's TTFT
 * (causality), so prompt_ms <= TTFT on every request; with the model's own vocabulary as the
 * tokenizer, client and server agree on every prompt count (the self-check). No other
 * timing is asserted. */
#include "harness.h"
#include "testutil.h"
#include "llamacpp_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct { int n, bad; } tcheck;

static void check_line(json_t *q, tcheck *c) {
    double ttft = test_num(q, "ttft_ms"), pms = test_num(q, "server_prompt_ms");
    double pn = test_num(q, "server_prompt_n"), in = test_num(q, "in_tokens_server");
    int ok = test_num(q, "server_predicted_n") == 16 && pms >= 0 && pms <= ttft && pn >= 1 && pn <= in &&
             test_num(q, "server_predicted_ms") >= 0;
    if (!ok && c->bad++ < 3)
        fprintf(stderr, "    request %g: TTFT %.3f prompt_ms %.3f prompt_n %g of %g predicted_n %g\n", test_num(q, "index"), ttft,
                pms, pn, in, test_num(q, "server_predicted_n"));
    c->n++;
}

TEST(llamacpp_timings_joined_per_request) {
    LLAMA_REQUIRE();
    const char *m = test_llama_model("tiny");
    char model[512];
    snprintf(model, sizeof model, "%s", m ? m : "");
    test_llama s;
    if (test_llama_start(&s, "tiny", "-np 2 -c 2048 -t 1") != 0) { CHECK_MSG(0, "llama-server did not start"); return; }
    char path[512], reqs[512], cmd[2048];
    snprintf(path, sizeof path, "%s/r.json", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/r.jsonl", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --out %s --save-requests %s --tokenizer %s --concurrency 2 --requests 6 "
             "--dataset random:in=48,out=16", s.url, path, reqs, model);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    test_llama_stop(&s);
    CHECK_MSG(rc == 0, "bench exited %d: %s", rc, err ? err : "");
    free(err);
    json_t *r = test_load_json(path);
    CHECK(r != NULL);
    if (!r) return;
    CHECK_EQ_INT(test_num(r, "completed"), 6);
    json_t *st = json_object_get(r, "server_timing");
    CHECK_EQ_INT(test_num(st, "requests_joined"), 6);
    CHECK_EQ_INT(test_num(st, "causality_violations"), 0);
    CHECK_EQ_INT(test_num(st, "predicted_n_equal_output_tokens"), 6);
    CHECK(test_num(st, "min_ttft_outside_server_ms") >= 0);
    json_t *ta = json_object_get(json_object_get(r, "self_check"), "token_agreement");
    CHECK_EQ_INT(test_num(json_object_get(ta, "prompt"), "equal"), 6);
    /* the server's output counts are exact (predicted_n above); the client re-tokenizes the streamed
     * text, which for a random-weight model's tokens need not give the same count: every request
     * is compared, and a difference is explained */
    json_t *out = json_object_get(ta, "output");
    CHECK_EQ_INT(test_num(out, "compared"), 6);
    if (test_num(out, "equal") < 6) CHECK(strstr(json_string_value(json_object_get(out, "explained")), "re-tokenize") != NULL);
    json_decref(r);
    tcheck c = { 0, 0 };
    FILE *f = fopen(reqs, "r");
    static char line[1 << 17];
    while (f && fgets(line, sizeof line, f)) {
        json_t *q = json_loads(line, 0, NULL);
        if (q) check_line(q, &c);
        json_decref(q);
    }
    if (f) fclose(f);
    CHECK_EQ_INT(c.n, 6);
    CHECK_EQ_INT(c.bad, 0);
}
