/* Tests for the chunk scanner: the fields of real chunk shapes (vLLM, SGLang, TGI, llama.cpp),
 * escapes, and that anything malformed or unusual is refused (so jansson decides). */
#include "harness.h"
#include "client/chunkscan.h"
#include "client/openai.h"
#include "metrics/record.h"
#include <string.h>

static int scan(const char *s, chunk_fields *f) { return chunkscan(s, strlen(s), f); }

TEST(chunkscan_vllm_completion_and_chat_shapes) {
    chunk_fields f;
    CHECK(scan("{\"id\":\"cmpl-1\",\"object\":\"text_completion\",\"created\":1,\"model\":\"m\",\"choices\":[{\"index\":0,\"text\":\" hello\",\"logprobs\":null,\"finish_reason\":null,\"stop_reason\":null}],\"usage\":null}", &f) == 0);
    CHECK(f.has_choices && f.text && f.text_len == 6 && !memcmp(f.text, " hello", 6) && !f.finished && !f.has_usage);
    CHECK(scan("{\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},\"finish_reason\":null}]}", &f) == 0);
    CHECK(f.text && f.text_len == 0);
    CHECK(scan("{\"choices\":[{\"index\":0,\"delta\":{\"reasoning_content\":\"think\",\"content\":null},\"finish_reason\":\"length\"}]}", &f) == 0);
    CHECK(!f.text && f.reasoning_len == 5 && f.finished);
    CHECK(scan("{\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":4,\"total_tokens\":13,\"prompt_tokens_details\":null}}", &f) == 0);
    CHECK(f.has_usage && f.prompt_tokens == 9 && f.completion_tokens == 4 && !f.has_choices);
    /* llama.cpp adds timings objects and nested arrays */
    CHECK(scan("{\"choices\":[{\"delta\":{\"content\":\"a\\nb\"},\"index\":0}],\"timings\":{\"predicted_ms\":1.5e1,\"x\":[1,2,{\"y\":true}]}}", &f) == 0);
    CHECK(f.text_escaped && f.text_len == 4);
}

TEST(chunkscan_errors_and_malformed_are_refused_or_flagged) {
    chunk_fields f;
    CHECK(scan("{\"error\":{\"message\":\"boom\"}}", &f) == 0 && f.has_error);
    CHECK(scan("{\"error\":null,\"choices\":[{\"text\":\"x\"}]}", &f) == 0 && !f.has_error);
    const char *bad[] = { "{not json", "", "[1,2]", "{\"choices\":[{\"text\":\"x\"}]", "{\"a\":1}x", "{\"choices\":{\"text\":1}}",
                          "{\"usage\":{\"completion_tokens\":1.5}}", "{\"choices\":[{\"text\":\"\x01\"}]}", "{\"a\":tru}" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK_MSG(scan(bad[i], &f) == -1, "accepted: %s", bad[i]);
}

TEST(chunkscan_unescape) {
    char out[64];
    const char *in = "a\\n\\t\\\"q\\\"\\\\\\/\\u00e9\\ud83d\\ude00";
    long n = chunkscan_unescape(in, strlen(in), out, sizeof out);
    const char *want = "a\n\t\"q\"\\/\xc3\xa9\xf0\x9f\x98\x80";
    CHECK_EQ_INT(n, (long)strlen(want));
    CHECK(n > 0 && !memcmp(out, want, (size_t)n));
    CHECK(chunkscan_unescape("\\x", 2, out, sizeof out) == -1);
    CHECK(chunkscan_unescape("\\ud83d", 6, out, sizeof out) == -1);   /* lone high surrogate */
    CHECK(chunkscan_unescape("\\u12", 4, out, sizeof out) == -1);
}

/* What jansson would refuse or read differently is left to it (-1): the fast path and the fallback
 * never disagree about a chunk (the fuzz target fuzz_chunkscan checks this on every input). */
TEST(chunkscan_leaves_what_jansson_reads_differently) {
    static const char *const left[] = {
        "{\"choices\":[{\"text\":\"\xc0\xaf\"}]}",                              /* overlong UTF-8 */
        "{\"choices\":[{\"text\":\"\xed\xa0\x80\"}]}",                          /* a surrogate in UTF-8 */
        "{\"choices\":[{\"delta\":{\"content\":\"a\\u0000b\"}}]}",             /* jansson reads \u0000 only with JSON_ALLOW_NUL */
        "{\"choices\":[{\"delta\":{\"content\":\"\\udc00\"}}]}",               /* lone low surrogate */
        "{\"choices\":[{\"delta\":{\"content\":\"\\x\"}}]}",                   /* unknown escape */
        "{\"id\":1.2.3,\"choices\":[{\"text\":\"a\"}]}",                       /* not a number */
        "{\"id\":01,\"choices\":[{\"text\":\"a\"}]}",
        "{\"created\":99999999999999999999,\"choices\":[{\"text\":\"a\"}]}",   /* beyond long long */
        "{\"x\":1e999,\"choices\":[{\"text\":\"a\"}]}",                        /* beyond double */
        "{\"choices\":[{\"delta\":{\"content\":\"a\"},\"finish_reason\":\"stop\",\"finish_reason\":null}]}",
        "{\"choices\":[{\"text\":\"x\",\"delta\":{\"content\":\"y\"}}]}",      /* two sources of text */
        "{\"choices\":[{\"delta\":{\"reasoning_content\":\"r\",\"reasoning\":\"s\"}}]}",
        "{\"usage\":{\"completion_tokens\":3,\"completion_tokens\":4}}",
    };
    chunk_fields f;
    for (size_t i = 0; i < sizeof left / sizeof left[0]; i++)
        CHECK_MSG(chunkscan(left[i], strlen(left[i]), &f) == -1, "accepted %s", left[i]);
    const char *ok = "{\"id\":\"c\",\"created\":1733040000,\"x\":-0.5e-3,\"choices\":[{\"index\":0,\"delta\":"
                     "{\"content\":\"w\xc3\xb6rld \\ud83d\\ude00\"},\"finish_reason\":null}],\"usage\":null}";
    CHECK_EQ_INT(chunkscan(ok, strlen(ok), &f), 0);
    CHECK(f.text && f.text_escaped && f.text_len == strlen("w\xc3\xb6rld \\ud83d\\ude00") && !f.finished);
}

/* The reasoning count of usage (DeepSeek's and OpenAI's completion_tokens_details) and llama.cpp's
 * timings, full-precision doubles included, read exactly; absent fields stay -1. */
TEST(chunkscan_reasoning_tokens_and_timings) {
    chunk_fields f;
    CHECK(scan("{\"choices\":[],\"usage\":{\"prompt_tokens\":9,\"completion_tokens\":40,\"completion_tokens_details\":{\"reasoning_tokens\":31}}}", &f) == 0);
    CHECK(f.reasoning_tokens == 31 && f.completion_tokens == 40 && f.prompt_ms < 0 && f.predicted_n < 0);
    CHECK(scan("{\"choices\":[],\"usage\":{\"completion_tokens\":4,\"completion_tokens_details\":null}}", &f) == 0);
    CHECK(f.reasoning_tokens == -1);
    CHECK(scan("{\"choices\":[{\"text\":\"\",\"finish_reason\":\"length\"}],\"timings\":{\"prompt_n\":6,\"prompt_ms\":7.071,"
               "\"prompt_per_token_ms\":1.1784999999999999,\"predicted_n\":8,\"predicted_ms\":19.526,\"predicted_per_second\":409.7101300829663}}", &f) == 0);
    CHECK(f.prompt_eval == 6 && f.predicted_n == 8);
    CHECK(f.prompt_ms == 7.071 && f.predicted_ms == 19.526);
    /* a count that is not an integer goes to jansson */
    CHECK(scan("{\"timings\":{\"predicted_n\":8.5}}", &f) == -1);
}

/* A chunk whose text is U+0000 (llama.cpp sends "\u0000" when a random-weight model samples that
 * token) is a token like any other: the scanner leaves it to jansson, which reads it with
 * JSON_ALLOW_NUL; the stream is not failed as invalid JSON (it was, once in the suite's runs). */
TEST(openai_stream_counts_a_nul_token) {
    static const char *const events[] = {
        "{\"choices\":[{\"text\":\"a\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}],\"object\":\"text_completion\"}",
        "{\"choices\":[{\"text\":\"\\u0000\",\"index\":0,\"logprobs\":null,\"finish_reason\":null}],\"object\":\"text_completion\"}",
        "{\"choices\":[{\"text\":\"b\",\"index\":0,\"logprobs\":null,\"finish_reason\":\"length\"}],\"object\":\"text_completion\"}",
    };
    openai_stream st;
    memset(&st, 0, sizeof st);
    record r;
    memset(&r, 0, sizeof r);
    for (int i = 0; i < 3; i++) CHECK_EQ_INT(openai_stream_event(&st, &r, events[i], strlen(events[i]), NULL, 1000 * (i + 1), NULL), 0);
    CHECK(!st.bad_json && !st.stream_error && st.finished);
    CHECK_EQ_INT((int)r.n_chunks, 3);
    CHECK_EQ_INT(st.tokens_client, 3);
    record_free(&r);
}
