/* Tests for mooncake:FILE traces and sessions: blocks shared by id are byte- and token-identical,
 * lengths exact in words and in tokens (completions with BOS, chat with the template), the
 * workload's cache bound against a count done here, --trace-window and --time-scale, bad lines;
 * session turns carry the history. */
#include "harness.h"
#include "dataset/dataset.h"
#include "dataset/sessions.h"
#include "dataset/trace.h"
#include "common/fileio.h"
#include "client/openai.h"
#include <jansson.h>
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

static char *write_file(const char *name, const char *text) {
    static char path[512];
    snprintf(path, sizeof path, "%s/%s", harness_tmpdir(), name);
    CHECK(fileio_write_atomic(path, text, strlen(text)) == 0);
    return path;
}

/* Eight requests with block size 4: a shared system prefix (ids 1, 2), two conversations that
 * extend it (3 → 4), a repeat, a partial last block, out-of-order timestamps. */
static const char trace8[] =
    "{\"timestamp\": 0, \"input_length\": 10, \"output_length\": 5, \"hash_ids\": [1, 2, 100]}\n"
    "{\"timestamp\": 10, \"input_length\": 12, \"output_length\": 6, \"hash_ids\": [1, 2, 3]}\n"
    "{\"timestamp\": 20, \"input_length\": 14, \"output_length\": 7, \"hash_ids\": [1, 2, 3, 101]}\n"
    "{\"timestamp\": 40, \"input_length\": 16, \"output_length\": 8, \"hash_ids\": [1, 2, 3, 4]}\n"
    "{\"timestamp\": 30, \"input_length\": 5, \"output_length\": 1, \"hash_ids\": [7, 102]}\n"
    "{\"timestamp\": 50, \"input_length\": 16, \"output_length\": 8, \"hash_ids\": [1, 2, 3, 4]}\n"
    "{\"timestamp\": 60, \"input_length\": 3, \"output_length\": 2, \"hash_ids\": [7]}\n"
    "\n"
    "{\"timestamp\": 70.5, \"input_length\": 9, \"output_length\": 2, \"hash_ids\": [5, 6, 103]}\n";

/* trace8 with 4-token blocks, the given seed; NULL (and a failed check) when it does not open. */
static dataset *open_t8(uint64_t seed) {
    char spec[600], err[512];
    snprintf(spec, sizeof spec, "mooncake:%s", write_file("t8.jsonl", trace8));
    dataset *d = NULL;
    dataset_opts o = { .block_tokens = 4 };
    CHECK_MSG(dataset_open(spec, 0, seed, &o, &d, err, sizeof err) == 0, "%s", err);
    return d;
}

/* The words of an item's rendered prompt (NULL-terminated, in one malloc'd block). */
static char **words_of(const dataset_item *it, size_t *n) {
    char *buf;
    size_t len;
    const char *t = dataset_item_text(it, &buf, &len);
    CHECK(t && t[0] == ' ');
    char **w = malloc((len + 2) * sizeof *w + len + 1);
    char *copy = (char *)(w + len + 2);
    memcpy(copy, t, len + 1);
    free(buf);
    *n = 0;
    for (char *save = NULL, *x = strtok_r(copy, " ", &save); x; x = strtok_r(NULL, " ", &save)) w[(*n)++] = x;
    w[*n] = NULL;
    return w;
}

TEST(trace_blocks_shared_by_id_in_words) {
    dataset *d = open_t8(7);
    if (!d) return;
    CHECK_EQ_INT(d->n, 8);
    CHECK(d->ignore_eos);
    /* replay order is by time: the line at 30 ms comes before the one at 40 ms */
    CHECK_EQ_INT(d->items[3].in_tokens, 5);
    CHECK_EQ_INT(d->items[4].in_tokens, 16);
    CHECK_EQ_INT(d->items[7].timestamp_ns, 70500000);
    size_t n[8];
    char **w[8];
    static const int max_out[8] = { 5, 6, 7, 1, 8, 8, 2, 2 };
    for (int i = 0; i < 8; i++) {
        w[i] = words_of(&d->items[i], &n[i]);
        CHECK_EQ_INT(n[i], d->items[i].in_tokens);           /* lengths exact */
        CHECK_EQ_INT(d->items[i].max_tokens, max_out[i]);
    }
    /* every pair that holds an id at a block holds the same words there */
    for (int a = 0; a < 8; a++)
        for (int b = 0; b < 8; b++)
            for (int i = 0; i < d->items[a].n_blocks; i++)
                for (int j = 0; j < d->items[b].n_blocks; j++) {
                    if (d->items[a].block_ids[i] != d->items[b].block_ids[j]) continue;
                    for (int k = 0; k < 4 && i * 4 + k < (int)n[a] && j * 4 + k < (int)n[b]; k++)
                        CHECK_STR(w[a][i * 4 + k], w[b][j * 4 + k]);
                }
    /* and blocks with different ids differ (the three unique tails against the shared prefix) */
    CHECK(strcmp(w[0][8], w[1][8]) || strcmp(w[0][9], w[1][9]));
    for (int i = 0; i < 8; i++) free(w[i]);
    /* the cache bound, counted here: the leading run of ids seen before, in tokens, capped */
    int32_t want[8] = { 0, 8, 12, 0, 12, 16, 3, 0 };   /* G's one block covers 3 tokens */
    for (int i = 0; i < 8; i++) CHECK_EQ_INT(d->items[i].cacheable_tokens, want[i]);
    /* the working set: 11 distinct blocks, 34 tokens (partial last blocks counted as they are) */
    CHECK_EQ_INT(d->distinct_blocks, 11);
    CHECK_EQ_INT(d->working_set_tokens, 34);
    /* a second pass of the replay finds everything */
    CHECK_EQ_INT(dataset_cacheable_tokens(d, 8), 10);
    CHECK_EQ_INT(dataset_cacheable_tokens(d, 2), 12);
    dataset_free(d);
}

TEST(trace_window_scale_and_bad_lines) {
    const char *path = write_file("t8.jsonl", trace8);
    char spec[600], err[512];
    snprintf(spec, sizeof spec, "mooncake:%s", path);
    dataset *d = NULL;
    dataset_opts o = { .block_tokens = 4, .time_scale = 0.5, .window_start_ns = 20000000, .window_end_ns = 60000000 };
    CHECK_MSG(dataset_open(spec, 0, 7, &o, &d, err, sizeof err) == 0, "%s", err);
    if (d) {
        CHECK_EQ_INT(d->n, 4);                                 /* 20, 30, 40, 50 ms */
        CHECK_EQ_INT(d->trace_lines, 8);
        CHECK_EQ_INT(d->items[0].timestamp_ns, 10000000);     /* 20 ms x 0.5 */
        CHECK_EQ_INT(d->items[3].timestamp_ns, 25000000);
        CHECK_EQ_INT(d->items[0].cacheable_tokens, 0);        /* the window starts cold */
        CHECK_EQ_INT(d->items[2].cacheable_tokens, 12);
        dataset_free(d);
    }
    o = (dataset_opts){ .window_start_ns = 1000000000 };
    o.block_tokens = 4;
    CHECK(dataset_open(spec, 0, 7, &o, &d, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "--trace-window"), "%s", err);
    o = (dataset_opts){ 0 };                                   /* 512-token blocks: 10 tokens need one id */
    CHECK(dataset_open(spec, 0, 7, &o, &d, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "line 1") && strstr(err, "--trace-block-size"), "%s", err);
    const char *bad[] = {
        "{\"timestamp\": 0, \"input_length\": 0, \"output_length\": 5, \"hash_ids\": []}\n",
        "{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 5, \"hash_ids\": [-1]}\n",
        "{\"timestamp\": 0, \"input_length\": 3, \"output_length\": 5}\n",
        "not json\n",
        "",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        snprintf(spec, sizeof spec, "mooncake:%s", write_file("bad.jsonl", bad[i]));
        o = (dataset_opts){ .block_tokens = 4 };
        CHECK_MSG(dataset_open(spec, 0, 7, &o, &d, err, sizeof err) == -1, "accepted bad line %zu", i);
    }
    CHECK(dataset_open("mooncake:/nonexistent/trace.jsonl", 0, 7, &o, &d, err, sizeof err) == -1);
    CHECK_MSG(strstr(err, "cannot read"), "%s", err);
}

/* With the DeepSeek-V3 tokenizer: the server's count is input_length exactly (BOS, or the chat
 * template), and shared blocks are the same token ids at the same positions. */
TEST(trace_exact_tokens_with_tokenizer) {
    tokenizer *t = v3();
    if (!t) SKIP_NO_SHARED_DATA("tokenizers/deepseek-v3/tokenizer.json");
    const char *path = write_file("t8.jsonl", trace8);
    char spec[600], err[512];
    snprintf(spec, sizeof spec, "mooncake:%s", path);
    for (int chat = 0; chat < 2; chat++) {
        dataset *d;
        dataset_opts o = { .tok = t, .block_tokens = 4 };
        CHECK_MSG(dataset_open(spec, 0, 3, &o, &d, err, sizeof err) == 0, "%s", err);
        dataset_count_for_api(d, t, chat);
        CHECK_MSG(!d->length_error[0], "%s", d->length_error);
        int32_t *ids[8];
        size_t nid[8];
        int bos = tokenizer_add_bos_default(t) ? 1 : 0;
        for (int i = 0; i < 8; i++) {
            const dataset_item *it = &d->items[i];
            char *buf;
            size_t len;
            const char *text = dataset_item_text(it, &buf, &len);
            const char *role = "user";
            size_t k = 0;
            if (chat) CHECK(tokenizer_chat_prompt_tokens(t, &role, &text, 1, &k) == 0);
            else k = tokenizer_count(t, text, len) + (size_t)bos;
            static const int32_t lens[8] = { 10, 12, 14, 5, 16, 16, 3, 9 };
            int32_t want = lens[i];
            /* a prompt no longer than the template's markers keeps one word, so counts more */
            CHECK_MSG((int32_t)k == want || (want < 8 && (int32_t)k > want), "item %d: %zu tokens for %d", i, k, want);
            CHECK_EQ_INT(it->in_tokens, (int32_t)k);
            CHECK(tokenizer_encode(t, text, len, false, &ids[i], &nid[i]) == 0);
            free(buf);
        }
        /* token ids of every shared full block are equal */
        for (int a = 0; a < 8; a++)
            for (int b = a + 1; b < 8; b++)
                for (int i = 0; i < d->items[a].n_blocks && i < d->items[b].n_blocks; i++) {
                    if (d->items[a].block_ids[i] != d->items[b].block_ids[i]) break;
                    for (size_t k = (size_t)i * 4; k < (size_t)i * 4 + 4 && k < nid[a] && k < nid[b]; k++)
                        CHECK_EQ_INT(ids[a][k], ids[b][k]);
                }
        for (int i = 0; i < 8; i++) free(ids[i]);
        dataset_free(d);
    }
    tokenizer_free(t);
}

TEST(sessions_turns_carry_the_history) {
    dataset *d;
    char err[512];
    CHECK_MSG(dataset_open("sessions:n=3,turns=3,first=20,user=5,out=4,think=250ms,system=6", 0, 1, NULL, &d, err, sizeof err) == 0, "%s", err);
    if (!d) return;
    ds_sessions *s = d->sessions;
    CHECK(s != NULL);
    CHECK_EQ_INT(sessions_count(s), 3);
    CHECK_EQ_INT(sessions_turns(s), 3);
    CHECK_EQ_INT(sessions_think_ns(s), 250000000);
    CHECK_EQ_INT(d->n, 3);
    dataset_count_for_api(d, NULL, false);
    dataset_item t0, t1, t2;
    CHECK(sessions_build_turn(s, 1, 0, &t0) == 0);
    /* "SYS\n\nUser: U0\n\nAssistant:" in words: 6 + 1 + 20 + 1 */
    CHECK_EQ_INT(t0.in_tokens, 28);
    CHECK_EQ_INT(t0.max_tokens, 4);
    CHECK_EQ_INT(t0.cacheable_tokens, 6);   /* another conversation sent the system prompt */
    record r = { .session = 2, .turn = 0, .outcome = REC_OK, .in_tokens = 28, .out_tokens_server = 3,
                 .out_tokens_client = -1, .text = strdup(" alpha beta gamma") };
    CHECK(sessions_turn_done(s, &r));
    CHECK(r.text == NULL);                   /* taken into the history */
    CHECK(sessions_build_turn(s, 1, 1, &t1) == 0);
    size_t l0 = strlen(t0.prompt);
    CHECK(!strncmp(t1.prompt, t0.prompt, l0));                       /* the whole previous prompt */
    CHECK(!strncmp(t1.prompt + l0, " alpha beta gamma\n\nUser: ", 25));   /* then the real answer */
    CHECK_EQ_INT(t1.in_tokens, 28 + 3 + 1 + 5 + 1);
    CHECK_EQ_INT(t1.cacheable_tokens, 31);
    /* a failed turn ends the conversation */
    record f = { .session = 2, .turn = 1, .outcome = REC_ERR_HTTP };
    CHECK(!sessions_turn_done(s, &f));
    /* the last turn ends it too */
    CHECK(sessions_build_turn(s, 0, 2, &t2) == 0);
    record l = { .session = 1, .turn = 2, .outcome = REC_OK, .text = strdup(" x") };
    CHECK(!sessions_turn_done(s, &l));
    free(l.text);
    sessions_item_free(&t0); sessions_item_free(&t1); sessions_item_free(&t2);
    dataset_free(d);
    const char *bad[] = { "sessions:n=0", "sessions:turns=x", "sessions:think=fast", "sessions:color=3", "sessions:first" };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        CHECK_MSG(dataset_open(bad[i], 0, 1, NULL, &d, err, sizeof err) == -1, "accepted %s", bad[i]);
}

/* The request body of a trace item (the prompt spliced in without the JSON library) is the JSON
 * the library would write: the prompt or the one user message, and every other field. */
TEST(trace_request_body_is_json) {
    dataset *d = open_t8(7);
    if (!d) return;
    CHECK(dataset_item_text_plain(&d->items[2]));
    for (int api = 0; api < 2; api++) {
        char *body = openai_request_body(api ? OPENAI_CHAT : OPENAI_COMPLETIONS, "m\"x", &d->items[2], true, true);
        json_error_t je;
        json_t *j = json_loads(body, 0, &je);
        CHECK_MSG(j != NULL, "%s: %s", body, je.text);
        char *buf;
        const char *text = dataset_item_text(&d->items[2], &buf, NULL);
        const char *got = api ? json_string_value(json_object_get(json_array_get(json_object_get(j, "messages"), 0), "content"))
                              : json_string_value(json_object_get(j, "prompt"));
        CHECK_STR(got, text);
        if (api) CHECK_STR(json_string_value(json_object_get(json_array_get(json_object_get(j, "messages"), 0), "role")), "user");
        CHECK_STR(json_string_value(json_object_get(j, "model")), "m\"x");
        CHECK_EQ_INT(json_integer_value(json_object_get(j, "max_tokens")), 7);
        CHECK(json_is_true(json_object_get(j, "ignore_eos")) && json_is_true(json_object_get(j, "stream")));
        CHECK(json_is_true(json_object_get(json_object_get(j, "stream_options"), "include_usage")));
        CHECK_EQ_INT(json_object_size(j), 6);
        free(buf);
        json_decref(j);
        free(body);
    }
    dataset_free(d);
}

/* The LRU curve on trace8, worked out by hand (stack distances per block, the leading run's
 * largest): hits need 3 blocks for 20 tokens, 4 for 36, 6 for all 51 the bound allows (of 85). */
TEST(trace_lru_curve_by_hand) {
    dataset *d = open_t8(7);
    if (!d) return;
    trace_lru c;
    CHECK(trace_lru_compute(d, &c) == 0);
    CHECK_NEAR(c.prompt_tokens, 85, 0);
    CHECK_NEAR(trace_lru_hit_rate(&c, 8), 0, 0);
    CHECK_NEAR(trace_lru_hit_rate(&c, 12), 20.0 / 85, 1e-12);
    CHECK_NEAR(trace_lru_hit_rate(&c, 16), 36.0 / 85, 1e-12);
    CHECK_NEAR(trace_lru_hit_rate(&c, 23), 36.0 / 85, 1e-12);
    CHECK_NEAR(trace_lru_hit_rate(&c, 24), 51.0 / 85, 1e-12);
    CHECK_NEAR(trace_lru_hit_rate(&c, 1 << 30), 51.0 / 85, 1e-12);   /* unbounded: the bound */
    long long bound = 0;
    for (size_t i = 0; i < d->n; i++) bound += d->items[i].cacheable_tokens;
    CHECK_EQ_INT(bound, 51);
    CHECK_EQ_INT(trace_lru_tokens_for(&c, 0.5), 24);
    CHECK_EQ_INT(trace_lru_tokens_for(&c, 0.3), 16);
    CHECK_EQ_INT(trace_lru_tokens_for(&c, 0.7), -1);
    trace_lru_free(&c);
    dataset_free(d);
}
