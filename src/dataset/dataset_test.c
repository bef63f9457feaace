/* Tests for datasets: exact lengths (words, and tokens with the DeepSeek-V3 tokenizer), seeding,
 * prefix groups, JSONL and ShareGPT files, pre-validation refusals, bad specs. */
#include "harness.h"
#include "testutil.h"
#include "dataset/dataset.h"
#include "common/fileio.h"
#include <string.h>
#include <stdlib.h>
#include <stdio.h>

static tokenizer *v3(void) {
    const char *path = harness_testdata_file("tokenizers/deepseek-v3/tokenizer.json");
    tokenizer *t = NULL;
    char err[256];
    if (!path || tokenizer_load(path, &t, err, sizeof err) < 0) return NULL;
    return t;
}

TEST(dataset_random_words_exact_and_seeded) {
    dataset *a, *b;
    char err[256];
    CHECK(dataset_open("random:in=50,out=7", 20, 3, NULL, &a, err, sizeof err) == 0);
    CHECK(dataset_open("random:in=50,out=7", 20, 3, NULL, &b, err, sizeof err) == 0);
    CHECK_EQ_INT(a->n, 20);
    for (size_t i = 0; i < a->n; i++) {
        CHECK_EQ_INT(a->items[i].in_tokens, 50);
        CHECK_EQ_INT(dataset_count_words(a->items[i].prompt, strlen(a->items[i].prompt)), 50);
        CHECK_EQ_INT(a->items[i].max_tokens, 7);
        CHECK_STR(a->items[i].prompt, b->items[i].prompt);
    }
    CHECK(a->ignore_eos);
    dataset_free(a);
    dataset_free(b);
    CHECK(dataset_open("random:in=100,out=10,range=0.2", 200, 1, NULL, &a, err, sizeof err) == 0);
    int lo = 1000, hi = 0;
    for (size_t i = 0; i < a->n; i++) { int v = a->items[i].in_tokens; if (v < lo) lo = v; if (v > hi) hi = v; }
    CHECK(lo >= 80 && hi <= 120 && hi - lo >= 20);
    dataset_free(a);
}

TEST(dataset_random_exact_tokens_with_v3_tokenizer) {
    tokenizer *t = v3();
    if (!t) SKIP_NO_SHARED_DATA("tokenizers/deepseek-v3/tokenizer.json");
    dataset_opts o = { .tok = t, .tolerance = 0.05 };
    dataset *d;
    char err[256];
    CHECK(dataset_open("random:in=300,out=5,range=0.5", 40, 9, &o, &d, err, sizeof err) == 0);
    CHECK_STR(d->length_unit, "tokens");
    for (size_t i = 0; i < d->n; i++)
        CHECK_EQ_INT(tokenizer_count(t, d->items[i].prompt, strlen(d->items[i].prompt)), d->items[i].in_tokens);
    /* as the server counts: BOS for completions; chat adds the template's markers */
    int32_t before = d->items[0].in_tokens;
    dataset_count_for_api(d, t, false);
    CHECK_EQ_INT(d->items[0].in_tokens, before + (tokenizer_add_bos_default(t) ? 1 : 0));
    dataset_count_for_api(d, t, false);   /* once only: no second BOS */
    CHECK_EQ_INT(d->items[0].in_tokens, before + (tokenizer_add_bos_default(t) ? 1 : 0));
    dataset_free(d);
    /* the same prompts sent to the chat API: the template's markers come on top */
    CHECK(dataset_open("random:in=300,out=5,range=0.5", 40, 9, &o, &d, err, sizeof err) == 0);
    dataset_count_for_api(d, t, true);
    CHECK(d->items[0].in_tokens > before + 1);
    dataset_free(d);
    tokenizer_free(t);
}

TEST(dataset_prefix_groups_share_their_prefix) {
    dataset *d;
    char err[256];
    CHECK(dataset_open("prefix:groups=3,prefix=40,suffix=10,out=5", 12, 1, NULL, &d, err, sizeof err) == 0);
    CHECK_EQ_INT(d->n, 12);
    for (size_t i = 0; i < d->n; i++) {
        CHECK_EQ_INT(d->items[i].in_tokens, 50);
        CHECK_EQ_INT(d->items[i].group, (int)(i % 3));
    }
    /* same group: the first 40 words agree; different groups: they do not */
    char *p0 = d->items[0].prompt, *p3 = d->items[3].prompt, *p1 = d->items[1].prompt;
    size_t cut = 0;
    for (int w = 0; w < 40; w++) { cut = strchr(p0 + cut + 1, ' ') - p0; }
    CHECK(!strncmp(p0, p3, cut));
    CHECK(strncmp(p0, p1, cut) != 0);
    CHECK(strcmp(p0, p3) != 0);
    dataset_free(d);
    tokenizer *t = v3();
    if (!t) return;
    dataset_opts o = { .tok = t };
    CHECK(dataset_open("prefix:groups=2,prefix=64,suffix=16,out=5", 6, 1, &o, &d, err, sizeof err) == 0);
    for (size_t i = 0; i < d->n; i++) CHECK_EQ_INT(d->items[i].in_tokens, 80);
    dataset_free(d);
    tokenizer_free(t);
}

TEST(dataset_jsonl_and_declared_length_check) {
    char path[512];
    snprintf(path, sizeof path, "%s/d.jsonl", harness_tmpdir());
    const char *text =
        "{\"prompt\": \"one two three\", \"max_tokens\": 5, \"timestamp\": 0.5}\n"
        "\n"
        "{\"messages\": [{\"role\":\"system\",\"content\":\"be brief\"},{\"role\":\"user\",\"content\":\"hi there\"}]}\n"
        "{\"prompt\": \"a b c d\", \"input_tokens\": 4}\n";
    CHECK(fileio_write_atomic(path, text, strlen(text)) == 0);
    char spec[600], err[512];
    snprintf(spec, sizeof spec, "jsonl:%s", path);
    dataset *d;
    CHECK(dataset_open(spec, 0, 1, NULL, &d, err, sizeof err) == 0);
    CHECK_EQ_INT(d->n, 3);
    CHECK_EQ_INT(d->items[0].in_tokens, 3);
    CHECK_EQ_INT(d->items[0].max_tokens, 5);
    CHECK_EQ_INT(d->items[0].timestamp_ns, 500000000);
    CHECK(d->items[1].messages_json && !d->items[1].prompt);
    CHECK_EQ_INT(d->items[1].in_tokens, 4);
    CHECK_EQ_INT(d->items[1].max_tokens, -1);
    CHECK(!d->ignore_eos);
    dataset_free(d);
    const char *bad = "{\"prompt\": \"a b c d e f g h\", \"input_tokens\": 4}\n";
    CHECK(fileio_write_atomic(path, bad, strlen(bad)) == 0);
    CHECK(dataset_open(spec, 0, 1, NULL, &d, err, sizeof err) == -1);
    CHECK(strstr(err, "line 1") && strstr(err, "input_tokens"));
    const char *notjson = "{\"prompt\": \"x\"}\n{oops\n";
    CHECK(fileio_write_atomic(path, notjson, strlen(notjson)) == 0);
    CHECK(dataset_open(spec, 0, 1, NULL, &d, err, sizeof err) == -1);
    CHECK(strstr(err, "line 2") != NULL);
}

/* Every field of a JSONL line is checked: a bad value is one line naming the file, the line (as an
 * editor counts it, blank lines included) and the field, never a silent default. */
TEST(dataset_jsonl_field_validation) {
    char path[512], spec[600], err[512];
    snprintf(path, sizeof path, "%s/v.jsonl", harness_tmpdir());
    snprintf(spec, sizeof spec, "jsonl:%s", path);
    static const struct { const char *line2; const char *want; } cases[] = {
        {"{\"prompt\": \"x\", \"max_tokens\": -5}", "\"max_tokens\" is -5; it must be an integer from 1 to 10000000"},
        {"{\"prompt\": \"x\", \"max_tokens\": 0}", "\"max_tokens\" is 0"},
        {"{\"prompt\": \"x\", \"max_tokens\": 2.5}", "\"max_tokens\" is 2.5"},
        {"{\"prompt\": \"x\", \"max_tokens\": \"64\"}", "\"max_tokens\" is a string"},
        {"{\"prompt\": \"x\", \"max_tokens\": 99999999999}", "\"max_tokens\" is 99999999999"},
        {"{\"prompt\": \"x\", \"input_tokens\": -1}", "\"input_tokens\" is -1; it must be an integer from 0"},
        {"{\"prompt\": \"x\", \"timestamp\": -1}", "\"timestamp\" must be a number of seconds from 0 to 1e9"},
        {"{\"prompt\": \"x\", \"timestamp\": 1e300}", "\"timestamp\" must be a number"},
        {"{\"prompt\": \"x\", \"timestamp\": \"0.5\"}", "\"timestamp\" must be a number"},
        {"{\"prompt\": 5}", "needs a \"prompt\" string"},
        {"{\"messages\": [\"hi\"]}", "messages[0] needs a string \"role\""},
        {"[1, 2]", "not a JSON object"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char text[512];
        snprintf(text, sizeof text, "{\"prompt\": \"fine\"}\n\n%s\n", cases[i].line2);
        CHECK(fileio_write_atomic(path, text, strlen(text)) == 0);
        dataset *d = NULL;
        err[0] = 0;
        CHECK_MSG(dataset_open(spec, 0, 1, NULL, &d, err, sizeof err) == -1, "accepted %s", cases[i].line2);
        CHECK_MSG(strstr(err, path) && strstr(err, " line 3: ") && strstr(err, cases[i].want) && !strchr(err, '\n'),
                  "%s: '%s'", cases[i].line2, err);
    }
    /* null means "not given", as does leaving the field out */
    const char *ok = "{\"prompt\": \"x y\", \"max_tokens\": null, \"timestamp\": null, \"input_tokens\": null}\n"
                     "{\"prompt\": null, \"messages\": [{\"role\": \"user\", \"content\": \"a b c\"}], \"max_tokens\": 10000000}\n";
    CHECK(fileio_write_atomic(path, ok, strlen(ok)) == 0);
    dataset *d = NULL;
    CHECK_MSG(dataset_open(spec, 0, 1, NULL, &d, err, sizeof err) == 0, "%s", err);
    if (!d) return;
    CHECK_EQ_INT(d->items[0].max_tokens, -1);
    CHECK_EQ_INT(d->items[0].timestamp_ns, -1);
    CHECK_EQ_INT(d->items[1].max_tokens, 10000000);
    CHECK_EQ_INT(d->items[1].in_tokens, 3);
    dataset_free(d);
}

/* bench refuses such a file before the first request: one line, exit 2 (it used to run with the
 * server's default of 256 tokens in place of max_tokens -5). */
TEST(dataset_jsonl_bad_field_refuses_bench) {
    char path[512], args[1024];
    snprintf(path, sizeof path, "%s/neg.jsonl", harness_tmpdir());
    const char *text = "{\"prompt\": \"hello world\", \"max_tokens\": -5}\n";
    CHECK(fileio_write_atomic(path, text, strlen(text)) == 0);
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms")) { CHECK_MSG(0, "server did not start"); return; }
    snprintf(args, sizeof args, "bench --url %s --concurrency 1 --requests 2 --quiet --dataset jsonl:%s", s.url, path);
    char *out = NULL;
    int status = -1;
    out = test_run_merged(args, &status);
    CHECK_EQ_INT(status, 2);
    CHECK_MSG(out && strstr(out, "neg.jsonl line 1: \"max_tokens\" is -5") && strchr(out, '\n') == out + strlen(out) - 1,
              "output: %s", out ? out : "(none)");
    free(out);
    CHECK_EQ_INT(test_serve_stop(&s), 0);
}

TEST(dataset_sharegpt_first_turn_and_reply_length) {
    char path[512];
    snprintf(path, sizeof path, "%s/sg.json", harness_tmpdir());
    const char *text = "[\n"
        " {\"id\":\"a\",\"conversations\":[{\"from\":\"human\",\"value\":\"what is the capital of france\"},{\"from\":\"gpt\",\"value\":\"it is paris of course my friend\"}]},\n"
        " {\"id\":\"b\",\"conversations\":[{\"from\":\"human\",\"value\":\"hi\"},{\"from\":\"gpt\",\"value\":\"hello there how are you\"}]},\n"
        " {\"id\":\"c\",\"conversations\":[{\"from\":\"human\",\"value\":\"only a question with no answer\"}]},\n"
        " {\"id\":\"d\",\"conversations\":[{\"from\":\"system\",\"value\":\"sys\"},{\"from\":\"human\",\"value\":\"tell me a long story please\"},{\"from\":\"gpt\",\"value\":\"once upon a time there\"},{\"from\":\"human\",\"value\":\"more\"}]}\n"
        "]\n";
    CHECK(fileio_write_atomic(path, text, strlen(text)) == 0);
    char spec[600], err[512];
    snprintf(spec, sizeof spec, "sharegpt:%s", path);
    dataset *d;
    CHECK(dataset_open(spec, 0, 1, NULL, &d, err, sizeof err) == 0);
    CHECK_EQ_INT(d->n, 2);
    CHECK_EQ_INT(d->skipped, 2);
    CHECK_STR(d->items[0].prompt, "what is the capital of france");
    CHECK_EQ_INT(d->items[0].in_tokens, 6);
    CHECK_EQ_INT(d->items[0].max_tokens, 7);
    CHECK_EQ_INT(d->items[1].max_tokens, 5);
    dataset_free(d);
    CHECK(dataset_open("sharegpt:/nonexistent.json", 0, 1, NULL, &d, err, sizeof err) == -1);
    CHECK(strstr(err, "/nonexistent.json") != NULL);
}

TEST(dataset_bad_specs_say_what_to_write) {
    dataset *d;
    char err[512];
    const char *bad[] = { "random:in=0,out=5", "random:in=10,out=5,range=1.5", "random:foo=1", "prefix:groups=0",
                          "csv:x", "random:in=abc" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err[0] = 0;
        CHECK_MSG(dataset_open(bad[i], 10, 1, NULL, &d, err, sizeof err) == -1, "accepted %s", bad[i]);
        CHECK_MSG(strlen(err) > 20 && !strchr(err, '\n'), "%s: '%s'", bad[i], err);
    }
}
