/* Tests of the tokenizer's input bounds: ids a file may name (stored sparsely while loading, bounded
 * by the vocabulary), BOS/EOS ids that name no token, added-token ids outside int32, and the
 * `tokenize --decode` refusal of ids that are not tokens. Small hand-made files only. */
#include "harness.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define BYTELEVEL "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}"

static const char *write_tmp(const char *name, const void *data, size_t len) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", harness_tmpdir(), name);
    FILE *f = fopen(path, "wb");
    if (f) {
        fwrite(data, 1, len, f);
        fclose(f);
    }
    return path;
}

static int load_err(const char *path, char *err, size_t errlen) {
    tokenizer *t = NULL;
    int rc = tokenizer_load(path, &t, err, errlen);
    tokenizer_free(t);
    return rc;
}

TEST(tokenizer_bounds_hostile_id_refused) {
    /* The hostile id first, then the rest: the check must not depend on the order of the ids. */
    const char *j = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"c\": 2147483647, \"a\": 0, \"b\": 1}, \"merges\": []}, " BYTELEVEL "}";
    const char *p = write_tmp("hostile.json", j, strlen(j));
    char err[512] = "";
    CHECK(load_err(p, err, sizeof err) < 0);
    CHECK_MSG(strstr(err, "token id 2147483647 is far beyond the vocabulary (3 tokens") != NULL, "error: %s", err);
    /* The command says it in one line and exits 2 (before: 24 GB of id table, then the OOM killer). */
    char args[1200], out[2048];
    snprintf(args, sizeof args, "tokenize --tokenizer %s --count hello", p);
    CHECK_EQ_INT(test_run_into(args, out, sizeof out), 2);
    CHECK_MSG(strstr(out, "far beyond the vocabulary") && strchr(out, '\n') == out + strlen(out) - 1, "output: %s", out);
    /* An added token's id is bounded the same way, and one beyond int32 is named, not truncated. */
    j = "{\"added_tokens\": [{\"id\": 70000, \"content\": \"<x>\"}], \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
        "\"merges\": []}, " BYTELEVEL "}";
    CHECK(load_err(write_tmp("hostile2.json", j, strlen(j)), err, sizeof err) < 0);
    CHECK_MSG(strstr(err, "token id 70000 is far beyond the vocabulary (2 tokens; ids must stay below 1028)"), "error: %s", err);
    j = "{\"added_tokens\": [{\"id\": 4294967296, \"content\": \"<x>\"}], \"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0}, "
        "\"merges\": []}, " BYTELEVEL "}";
    CHECK(load_err(write_tmp("hostile3.json", j, strlen(j)), err, sizeof err) < 0);
    CHECK_MSG(strstr(err, "added_tokens[0] has id 4294967296") != NULL, "error: %s", err);
}

/* Gaps are allowed up to the bound, in any order; the tables then span the highest id. */
TEST(tokenizer_bounds_sparse_ids_load) {
    char *j = malloc(1 << 16);
    if (!j) return;
    size_t n = (size_t)snprintf(j, 1 << 16, "{\"model\": {\"type\": \"BPE\", \"merges\": [], \"vocab\": {");
    for (int i = 0; i < 300; i++) n += (size_t)snprintf(j + n, (1 << 16) - n, "\"t%d\": %d, ", i, 1500 - 5 * i);
    n += (size_t)snprintf(j + n, (1 << 16) - n, "\"a\": 1600}}, " BYTELEVEL "}");
    const char *p = write_tmp("sparse.json", j, n);
    free(j);
    tokenizer *t = NULL;
    char err[512];
    CHECK_MSG(tokenizer_load(p, &t, err, sizeof err) == 0, "load: %s", err);
    if (!t) return;
    CHECK_EQ_INT(tokenizer_vocab_size(t), 1601);   /* 301 tokens, ids up to 1600 < 2*301 + 1024 */
    CHECK_STR(tokenizer_token_text(t, 1500), "t0");
    CHECK_STR(tokenizer_token_text(t, 1600), "a");
    CHECK(tokenizer_token_text(t, 1501) == NULL);
    CHECK(tokenizer_id_known(t, 5) && !tokenizer_id_known(t, 6) && !tokenizer_id_known(t, 1601) && !tokenizer_id_known(t, -1));
    int32_t ids[] = {1600, 6, 1500};   /* the library skips an unknown id, as HF does */
    char *out;
    size_t ol;
    CHECK_EQ_INT(tokenizer_decode(t, ids, 3, &out, &ol), 0);
    CHECK_STR(out, "at0");
    free(out);
    tokenizer_free(t);
}

/* A GGUF with the given BOS id and three tokens; *len gets its size. */
static uint8_t *gguf_with_bos(uint32_t bos, size_t *len) {
    uint8_t *b = malloc(4096), *p = b;
#define PUT(v) do { memcpy(p, &(v), sizeof(v)); p += sizeof(v); } while (0)
#define STR(s) do { uint64_t l_ = strlen(s); PUT(l_); memcpy(p, s, l_); p += l_; } while (0)
    uint32_t version = 3, t_str = 8, t_arr = 9, t_u32 = 4;
    uint64_t n_tensors = 0, n_kv = 5, three = 3, zero = 0;
    memcpy(p, "GGUF", 4);
    p += 4;
    PUT(version); PUT(n_tensors); PUT(n_kv);
    STR("tokenizer.ggml.model"); PUT(t_str); STR("gpt2");
    STR("tokenizer.ggml.pre"); PUT(t_str); STR("deepseek-llm");
    STR("tokenizer.ggml.tokens"); PUT(t_arr); PUT(t_str); PUT(three); STR("a"); STR("b"); STR("ab");
    STR("tokenizer.ggml.merges"); PUT(t_arr); PUT(t_str); PUT(zero);
    STR("tokenizer.ggml.bos_token_id"); PUT(t_u32); PUT(bos);
#undef PUT
#undef STR
    *len = (size_t)(p - b);
    return b;
}

TEST(tokenizer_bounds_gguf_bos_outside_vocabulary) {
    size_t len;
    uint8_t *g = gguf_with_bos(2, &len);
    tokenizer *t = NULL;
    char err[512];
    CHECK_MSG(tokenizer_load(write_tmp("ok.gguf", g, len), &t, err, sizeof err) == 0, "load: %s", err);
    free(g);
    if (t) CHECK_EQ_INT(tokenizer_bos_id(t), 2);
    tokenizer_free(t);
    g = gguf_with_bos(7, &len);
    CHECK(load_err(write_tmp("bos.gguf", g, len), err, sizeof err) < 0);
    free(g);
    CHECK_MSG(strstr(err, "the BOS token id 7 is not in the vocabulary") != NULL, "error: %s", err);
}

TEST(tokenizer_bounds_decode_unknown_id) {
    const char *j = "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"H\": 0, \"i\": 1}, \"merges\": []}, " BYTELEVEL "}";
    const char *p = write_tmp("tiny.json", j, strlen(j));
    char args[1200], out[2048];
    snprintf(args, sizeof args, "tokenize --tokenizer %s --decode '0 1'", p);
    CHECK_EQ_INT(test_run_into(args, out, sizeof out), 0);
    CHECK_STR(out, "Hi");
    snprintf(args, sizeof args, "tokenize --tokenizer %s --decode '0 99999999'", p);
    CHECK_EQ_INT(test_run_into(args, out, sizeof out), 2);
    CHECK_MSG(strstr(out, "id 99999999 is not a token of this vocabulary (ids 0..1)") && strchr(out, '\n') == out + strlen(out) - 1,
              "output: %s", out);
    snprintf(args, sizeof args, "tokenize --tokenizer %s --decode '99999999999'", p);
    CHECK_EQ_INT(test_run_into(args, out, sizeof out), 2);
    CHECK(strstr(out, "expects token ids") != NULL);
}
