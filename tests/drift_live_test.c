/* `dsperf drift` on the real llama.cpp: one random-weight DeepSeek-V2 GGUF served three times, with
 * an f16, a q8_0 and a q4_0 K cache (-ctk), compared at two contexts. Physics orders them: the
 * f16 baseline against itself (the noise floor) agrees at least as often as f16 against q8_0,
 * which agrees at least as often as f16 against q4_0 (4-bit K blocks carry ~16x the rounding error
 * of 8-bit ones), and the mean |delta logprob| of the baseline's token grows strictly in the same
 * order. Prompts and continuations go as token ids (the server accepts them and names its tokens
 * by id), so no prompt may be lost to re-tokenisation: at least 90 % are kept at every context.
 * The model is `tiny-kq` (tiny with qk_nope_head_dim 48: a 64-wide K head, two quantisation blocks
 * of 32; tiny's 48-wide head makes llama-server abort on a quantised K cache) with --std 0.08 so the
 * logprobs are peaked enough to move. */
#include "harness.h"
#include "testutil.h"
#include "llamacpp_util.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CTX_SPEC "64,512"
#define N_CTX 2
#define PROMPTS 8
#define GEN 16

/* drift baseline vs candidate; NULL (with a failed check) when it did not run. */
static json_t *drift_between(const test_llama *b, const test_llama *c, const char *extra, const char *name) {
    char path[512], cmd[2048];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "drift --baseline %s --candidate %s --tokenizer %s --contexts " CTX_SPEC
             " --prompts %d --gen-tokens %d --top-logprobs 5 --quiet --out %s %s",
             b->url, c->url, test_llama_model("tiny"), PROMPTS, GEN, path, extra);
    char *err = NULL;
    int rc = test_run(cmd, NULL, &err);
    CHECK_MSG(rc == 0, "drift (%s) exited %d: %s", name, rc, err ? err : "");
    free(err);
    return rc == 0 ? test_load_json(path) : NULL;
}

static const json_t *bucket(const json_t *doc, int i) { return json_array_get(json_object_get(doc, "buckets"), (size_t)i); }

TEST(drift_live_kv_cache_types_ordered) {
    LLAMA_REQUIRE();
    if (!test_llama_model("tiny-kq")) {
        SKIP("build-engine/models/tiny-kq.gguf is missing: run `make real-engine` (scripts/real_engine.sh writes it)");
    }
    /* -np 1 -c 1024: one slot of 1024 tokens holds the 512-token prompt and its 16 tokens */
    static const char *const kv[3] = { "f16", "q8_0", "q4_0" };
    test_llama s[3];
    int started = 0;
    for (; started < 3; started++) {
        char args[256];
        snprintf(args, sizeof args, "-np 1 -c 1024 -t 1 -ctk %s", kv[started]);
        if (test_llama_start(&s[started], "tiny-kq", args) != 0) { CHECK_MSG(0, "llama-server -ctk %s did not start", kv[started]); break; }
    }
    json_t *q8 = NULL, *q4 = NULL;
    if (started == 3) {
        q8 = drift_between(&s[0], &s[1], "", "q8_0");         /* with the floor: f16 against itself */
        q4 = drift_between(&s[0], &s[2], "--no-floor", "q4_0");
    }
    for (int i = 0; i < started; i++) test_llama_stop(&s[i]);
    if (!q8 || !q4) { json_decref(q8); json_decref(q4); return; }
    /* nothing re-tokenized: both sides were sent token ids */
    CHECK_STR(json_string_value(json_object_get(q8, "prompt_format")), "token_ids");
    CHECK_STR(json_string_value(json_object_get(q4, "prompt_format")), "token_ids");
    CHECK_STR(json_string_value(json_object_get(json_object_get(q8, "candidate"), "score_method")), "stepwise");
    static const int ctx[N_CTX] = { 64, 512 };
    for (int i = 0; i < N_CTX; i++) {
        const json_t *b8 = bucket(q8, i), *b4 = bucket(q4, i), *fl = json_object_get(b8, "floor");
        CHECK_MSG(b8 && b4 && fl, "context %d: a bucket is missing", ctx[i]);
        if (!b8 || !b4 || !fl) continue;
        CHECK_EQ_INT(test_num(b8, "context"), ctx[i]);
        CHECK_EQ_INT(test_num(b4, "context"), ctx[i]);
        /* the prompts are exactly the context as the server counted them (BOS included) */
        CHECK_EQ_INT(test_num(b8, "prompt_tokens_min"), ctx[i]);
        CHECK_EQ_INT(test_num(b8, "prompt_tokens_max"), ctx[i]);
        /* >= 90 % of the planned prompts kept, on every comparison */
        const json_t *kept[3] = { b8, b4, fl };
        for (int k = 0; k < 3; k++) {
            double n = test_num(kept[k], "prompts");
            CHECK_MSG(n * 10 >= PROMPTS * 9, "context %d, %s: %g of %d prompts kept", ctx[i], k == 0 ? "q8_0" : k == 1 ? "q4_0" : "floor", n, PROMPTS);
            /* every generated token of a kept prompt is compared, or unobservable: llama.cpp gives no
             * logprobs for a token after which the text ends inside a UTF-8 character */
            CHECK_EQ_INT(test_num(kept[k], "positions") + test_num(kept[k], "unobservable_positions"), (long long)n * GEN);
        }
        double a_f = test_num(fl, "top1_agreement"), a_8 = test_num(b8, "top1_agreement"), a_4 = test_num(b4, "top1_agreement");
        double d_f = test_num(fl, "mean_abs_logprob_delta"), d_8 = test_num(b8, "mean_abs_logprob_delta"),
               d_4 = test_num(b4, "mean_abs_logprob_delta");
        fprintf(stderr, "    context %d: agreement f16 %.4f q8_0 %.4f q4_0 %.4f; mean |dlogprob| f16 %.6f q8_0 %.6f q4_0 %.6f\n",
                ctx[i], a_f, a_8, a_4, d_f, d_8, d_4);
        CHECK_MSG(a_f >= a_8 && a_8 >= a_4, "context %d: agreement f16 %.4f, q8_0 %.4f, q4_0 %.4f: not ordered", ctx[i], a_f, a_8, a_4);
        CHECK_MSG(d_f < d_8 && d_8 < d_4, "context %d: mean |dlogprob| f16 %.6f, q8_0 %.6f, q4_0 %.6f: not ordered", ctx[i], d_f, d_8, d_4);
    }
    json_decref(q8);
    json_decref(q4);
}
