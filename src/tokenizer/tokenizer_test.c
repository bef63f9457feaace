/* tokenizer tests — HF test vectors for the three DeepSeek vocabularies, round trips on generated
 * text, HF's handling of invalid UTF-8, added tokens, error reporting, threads, the single-token word
 * list's additivity and the chat prompt count. Needs ../shared/testdata (skips without it). */
#include "harness.h"
#include "tokenizer/tokenizer.h"
#include "common/fileio.h"
#include "common/rng.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tpath[1024];

static const char *td(const char *rel) {
    snprintf(tpath, sizeof tpath, "%s/tokenizers/%s", harness_testdata(), rel);
    return tpath;
}

static tokenizer *load_or_null(const char *rel) {
    tokenizer *t = NULL;
    char err[512];
    if (tokenizer_load(td(rel), &t, err, sizeof err)) {
        harness_fail(__FILE__, __LINE__, "load %s: %s", rel, err);
        return NULL;
    }
    return t;
}

static bool have(const char *rel) {
    FILE *f = fopen(td(rel), "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* .inp: strings each followed by "\n__ggml_vocab_test__\n"; .out: a line of " id id ..." per string. */
static void run_vectors(const char *tok_rel, const char *inp_rel, const char *out_rel, int expect_n) {
    char *inp, *out;
    size_t il, ol;
    char p1[1024], p2[1024];
    snprintf(p1, sizeof p1, "%s", td(inp_rel));
    snprintf(p2, sizeof p2, "%s", td(out_rel));
    if (fileio_read_all(p1, &inp, &il) || fileio_read_all(p2, &out, &ol)) { harness_fail(__FILE__, __LINE__, "cannot read %s", p1); return; }
    tokenizer *t = load_or_null(tok_rel);
    if (!t) { free(inp); free(out); return; }
    static const char sep[] = "\n__ggml_vocab_test__\n";
    const char *s = inp, *o = out;
    int n = 0, bad = 0;
    for (;;) {
        const char *e = strstr(s, sep);
        if (!e) break;
        const char *ol_end = strchr(o, '\n');
        if (!ol_end) ol_end = o + strlen(o);
        int32_t *ids;
        size_t ni;
        CHECK_EQ_INT(tokenizer_encode(t, s, (size_t)(e - s), false, &ids, &ni), 0);
        char got[8192];
        size_t gl = 0;
        for (size_t i = 0; i < ni && gl + 16 < sizeof got; i++) gl += (size_t)snprintf(got + gl, sizeof got - gl, " %d", ids[i]);
        got[gl] = 0;
        if (gl != (size_t)(ol_end - o) || memcmp(got, o, gl)) {
            if (bad++ < 3)
                harness_fail(__FILE__, __LINE__, "%s #%d \"%.*s\": got [%s] want [%.*s]", tok_rel, n, (int)(e - s), s, got,
                             (int)(ol_end - o), o);
        }
        size_t ni2 = tokenizer_count(t, s, (size_t)(e - s));
        CHECK_EQ_INT(ni2, ni);
        free(ids);
        n++;
        s = e + strlen(sep);
        o = *ol_end ? ol_end + 1 : ol_end;
    }
    CHECK_EQ_INT(n, expect_n);
    CHECK_EQ_INT(bad, 0);
    tokenizer_free(t);
    free(inp);
    free(out);
}

TEST(tokenizer_vectors_deepseek_v3) {
    if (!have("deepseek-v3/tokenizer.json")) SKIP("no testdata/tokenizers/deepseek-v3");
    run_vectors("deepseek-v3/tokenizer.json", "deepseek-v3/vectors.inp", "deepseek-v3/vectors.out", 46);
}

TEST(tokenizer_vectors_deepseek_llm_gguf) {
    if (!have("deepseek-llm/ggml-vocab-deepseek-llm.gguf")) SKIP("no testdata/tokenizers/deepseek-llm");
    run_vectors("deepseek-llm/ggml-vocab-deepseek-llm.gguf", "deepseek-llm/ggml-vocab-deepseek-llm.gguf.inp",
                "deepseek-llm/ggml-vocab-deepseek-llm.gguf.out", 46);
}

TEST(tokenizer_vectors_deepseek_coder_gguf) {
    if (!have("deepseek-coder/ggml-vocab-deepseek-coder.gguf")) SKIP("no testdata/tokenizers/deepseek-coder");
    run_vectors("deepseek-coder/ggml-vocab-deepseek-coder.gguf", "deepseek-coder/ggml-vocab-deepseek-coder.gguf.inp",
                "deepseek-coder/ggml-vocab-deepseek-coder.gguf.out", 46);
}
