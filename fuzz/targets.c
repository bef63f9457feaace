/* The fuzz targets (see fuzz.h): each drives a parser or loader on one input as dsperf does, then uses
 * what came out, so that a table a hostile file managed to build is also exercised. */
#include "fuzz.h"
#include "client/chunkscan.h"
#include "client/openai.h"
#include "client/sse.h"
#include "dataset/dataset.h"
#include "results/results.h"
#include "telemetry/engine_metrics.h"
#include "telemetry/prom.h"
#include "tokenizer/tok_internal.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* ---- SSE: events and their interpretation must not depend on how the bytes were split ---- */

typedef struct {
    uint64_t hash;          /* of every event's fields, in order */
    size_t n;
    openai_stream st;
    record rec;
} sse_run;

static uint64_t mix(uint64_t h, const void *p, size_t n) {
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001B3ull;
    return (h ^ n) * 0x100000001B3ull;
}

static int32_t count_words(void *ctx, const char *text, size_t len) {
    (void)ctx;
    return dataset_count_words(text, len);
}

static int on_event(void *ctx, const sse_event *ev) {
    sse_run *r = ctx;
    static const token_counter words = {count_words, NULL, "words"};
    r->hash = mix(r->hash, ev->data ? ev->data : "\1", ev->data ? ev->data_len : 1);
    r->hash = mix(r->hash, ev->event ? ev->event : "\1", ev->event ? strlen(ev->event) : 1);
    r->hash = mix(r->hash, ev->error ? ev->error : "\1", ev->error ? strlen(ev->error) : 1);
    r->n++;
    openai_stream_event(&r->st, &r->rec, ev->data, ev->data_len, ev->error, (int64_t)r->n * 1000, &words);
    return 0;
}

/* Feeds the input whole (step 0) or in pieces of 1..step bytes chosen from the input itself. */
static int sse_run_feed(const uint8_t *d, size_t n, size_t step, sse_run *r) {
    sse_parser p;
    memset(r, 0, sizeof *r);
    r->hash = 0xcbf29ce484222325ull;
    r->rec.in_tokens_server = r->rec.out_tokens_server = -1;
    sse_init(&p, 4u << 20);   /* the client's cap, far above any input here: no event is cut */
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0;) {
        size_t k = step ? 1 + (d[i] + i) % step : n;
        if (k > n - i) k = n - i;
        rc = sse_feed(&p, (const char *)d + i, k, on_event, r);
        i += k;
    }
    if (rc == 0) rc = sse_finish(&p, on_event, r);
    sse_free(&p);
    return rc;
}

int fuzz_sse(const uint8_t *d, size_t n) {
    sse_run whole, split;
    int a = sse_run_feed(d, n, 0, &whole), b = sse_run_feed(d, n, 7, &split);
    int bad = a != b || whole.hash != split.hash || whole.n != split.n || whole.rec.n_chunks != split.rec.n_chunks ||
              whole.st.tokens_client != split.st.tokens_client || whole.st.done != split.st.done;
    if (bad) fprintf(stderr, "fuzz_sse: %zu events whole, %zu split in pieces (rc %d/%d)\n", whole.n, split.n, a, b);
    record_free(&whole.rec);
    record_free(&split.rec);
    return bad;
}

/* ---- the chunk scanner: what it accepts, jansson (the fallback) reads the same way ---- */

/* A string field as jansson reads it: NULL when absent, null or not a string. */
static const char *jstr(json_t *o, const char *key, size_t *len) {
    json_t *v = json_object_get(o, key);
    *len = json_string_length(v);
    return json_string_value(v);
}

/* Compares the scanner's fields with the same fields read from jansson's DOM; the first difference
 * is named on stderr. The contract (chunkscan.h): what the scanner does not fully understand it
 * returns -1 for, so an accepted chunk must be valid JSON and mean the same thing to both. */
static int chunk_agrees(const char *s, size_t n, const chunk_fields *f) {
    json_t *o = json_loadb(s, n, 0, NULL);
    const char *why = NULL;
    if (!json_is_object(o)) why = "accepted text that jansson rejects";
    json_t *c0 = json_array_get(json_object_get(o, "choices"), 0);
    json_t *delta = json_object_get(c0, "delta");
    size_t tl = 0, rl = 0;
    const char *text = jstr(c0, "text", &tl), *reasoning = NULL;
    if (!text && json_is_object(delta)) text = jstr(delta, "content", &tl);
    if (json_is_object(delta)) {
        reasoning = jstr(delta, "reasoning_content", &rl);
        if (!reasoning) reasoning = jstr(delta, "reasoning", &rl);
    }
    char *buf = malloc(2 * (f->text_len + f->reasoning_len) + 16);
    long ft = -1, fr = -1;
    if (buf && f->text) ft = f->text_escaped ? chunkscan_unescape(f->text, f->text_len, buf, 2 * f->text_len + 8) : (long)f->text_len;
    if (!why && (f->text_len ? !text || ft != (long)tl || memcmp(f->text_escaped ? buf : f->text, text, tl) : text && tl))
        why = "the text differs";
    if (buf && f->reasoning)
        fr = f->reasoning_escaped ? chunkscan_unescape(f->reasoning, f->reasoning_len, buf, 2 * f->reasoning_len + 8) : (long)f->reasoning_len;
    if (!why && (f->reasoning_len ? !reasoning || fr != (long)rl || memcmp(f->reasoning_escaped ? buf : f->reasoning, reasoning, rl) : reasoning && rl))
        why = "the reasoning text differs";
    json_t *fin = json_object_get(c0, "finish_reason");
    if (!why && f->finished != (fin && !json_is_null(fin))) why = "finish_reason differs";
    json_t *usage = json_object_get(o, "usage");
    json_t *ct = json_object_get(usage, "completion_tokens"), *pt = json_object_get(usage, "prompt_tokens");
    if (!why && (f->completion_tokens >= 0) != json_is_integer(ct)) why = "usage.completion_tokens presence differs";
    if (!why && json_is_integer(ct) && json_integer_value(ct) != f->completion_tokens) why = "usage.completion_tokens differs";
    if (!why && json_is_integer(pt) && json_integer_value(pt) != f->prompt_tokens) why = "usage.prompt_tokens differs";
    json_t *err = json_object_get(o, "error");
    if (!why && f->has_error != (err && !json_is_null(err))) why = "error presence differs";
    free(buf);
    json_decref(o);
    if (why) fprintf(stderr, "fuzz_chunkscan: %s: %.*s\n", why, (int)(n < 300 ? n : 300), s);
    return why != NULL;
}

int fuzz_chunkscan(const uint8_t *d, size_t n) {
    const char *s = (const char *)d;
    chunk_fields f;
    int bad = 0;
    if (chunkscan(s, n, &f) == 0) {
        const char *spans[2] = {f.text, f.reasoning};
        size_t lens[2] = {f.text_len, f.reasoning_len};
        for (int i = 0; i < 2; i++) {
            if (!spans[i]) continue;
            if (spans[i] < s || spans[i] + lens[i] > s + n) bad = 1;
            char *buf = malloc(lens[i] / 2 + 1);
            if (buf) chunkscan_unescape(spans[i], lens[i], buf, lens[i] / 2);   /* a buffer too small */
            free(buf);
        }
        if (bad) fprintf(stderr, "fuzz_chunkscan: a field span lies outside the input\n");
        else bad = chunk_agrees(s, n, &f);
    }
    /* the same bytes as a whole stream message (the jansson fallback included) and as an error body */
    openai_stream st = {0};
    record r = {0};
    r.in_tokens_server = r.out_tokens_server = -1;
    char *z = strndup(s, n);   /* the interpreter gets NUL-terminated data, as the SSE parser hands it */
    if (z) openai_stream_event(&st, &r, z, strlen(z), NULL, 1, NULL);
    if (z) openai_stream_event(&st, &r, NULL, 0, z, 2, NULL);
    char msg[300];
    openai_error_message(s, n, msg, sizeof msg);
    free(z);
    record_free(&r);
    return bad;
}

/* ---- Prometheus text, then the engine-metrics reader over two scrapes ---- */

int fuzz_prom(const uint8_t *d, size_t n) {
    prom_doc a, b;
    size_t half = n / 2;
    if (prom_parse_flags((const char *)d, n, &a, n && (d[0] & 1) ? PROM_SKIP_BUCKETS : 0)) return 0;
    if (prom_parse((const char *)d + half, n - half, &b)) { prom_doc_free(&a); return 0; }
    for (size_t i = 0; i < a.n_samples && i < 4; i++) {
        const prom_sample *s = &a.samples[i];
        double v, sum, cnt;
        prom_sum(&a, s->name, s->n_labels ? s->label_names[0] : NULL, s->n_labels ? s->label_values[0] : NULL, &v);
        prom_hist_totals(&a, s->name, NULL, NULL, &sum, &cnt);
        prom_family_type(&a, s->name);
    }
    em_engine e = em_detect_engine(&a);
    em_reading r0, r1;
    double out[EM_COL_COUNT];
    em_read(&a, e, 0, &r0);
    em_read(&b, e, n ? (int64_t)d[n - 1] * 1000000 : 0, &r1);   /* 0..255 ms later, 0 included */
    em_derive(NULL, &r0, out);
    em_derive(&r0, &r1, out);
    prom_doc_free(&a);
    prom_doc_free(&b);
    return 0;
}

/* ---- tokenizer loaders: load from memory as tokenizer_load does, then use the tables ---- */

static void use_tokenizer(const tokenizer *t, const uint8_t *d, size_t n) {
    static const char text[] = "Hello, world! 123 45678 <｜begin▁of▁sentence｜> été \xF0\x9F\xAA\xBB\n\n  x\xFF";
    int32_t *ids = NULL;
    size_t k = 0;
    if (tokenizer_encode(t, text, sizeof text - 1, true, &ids, &k) == 0) {
        char *out;
        size_t ol;
        if (tokenizer_decode(t, ids, k, &out, &ol) == 0) free(out);
        free(ids);
    }
    tokenizer_count(t, text, sizeof text - 1);
    int32_t some[8];   /* ids from the input: unknown and negative ones included */
    for (size_t i = 0; i < 8; i++) some[i] = (int32_t)(n > i ? d[n - 1 - i] * 997u - 5000u : i);
    char *out;
    size_t ol;
    if (tokenizer_decode(t, some, 8, &out, &ol) == 0) free(out);
    const char *roles[] = {"system", "user", "assistant", "user"}, *msgs[] = {"s", "Hi", "<think>a</think>b", "Q"};
    size_t nt;
    tokenizer_chat_prompt_tokens(t, roles, msgs, 4, &nt);
    const char **words;
    size_t nw;
    if (tokenizer_single_token_words(t, &words, &nw) == 0) free(words);
}

static int load_from_memory(const uint8_t *d, size_t n, int gguf) {
    tokenizer *t = calloc(1, sizeof *t);
    char err[512];
    if (!t) return 0;
    /* a folder that does not exist: no tokenizer_config.json is read beside it */
    int rc = gguf ? tok_load_gguf(t, "/nonexistent/fuzz.gguf", d, n, err, sizeof err)
                  : tok_load_json(t, "/nonexistent/fuzz/tokenizer.json", (const char *)d, n, err, sizeof err);
    if (rc == 0) use_tokenizer(t, d, n);
    tok_release(t);
    free(t);
    return 0;
}

int fuzz_tok_json(const uint8_t *d, size_t n) { return load_from_memory(d, n, 0); }
int fuzz_tok_gguf(const uint8_t *d, size_t n) { return load_from_memory(d, n, 1); }

/* ---- results files: loaded by path (a memfd), then printed as the terminal summary ---- */

int fuzz_results(const uint8_t *d, size_t n) {
    static int fd = -1;
    static FILE *devnull;
    if (fd < 0 && (fd = memfd_create("fuzz-results", MFD_CLOEXEC)) < 0) return 0;
    if (!devnull && !(devnull = fopen("/dev/null", "w"))) return 0;
    if (ftruncate(fd, 0) || pwrite(fd, d, n, 0) != (ssize_t)n) return 0;
    char path[64], err[512];
    snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
    json_t *doc = results_load(path, err, sizeof err);
    if (doc) results_print_summary(devnull, doc);
    json_decref(doc);
    return 0;
}

const fuzz_target fuzz_targets[] = {
    {"sse", fuzz_sse}, {"chunkscan", fuzz_chunkscan}, {"prom", fuzz_prom}, {"tok_json", fuzz_tok_json},
    {"tok_gguf", fuzz_tok_gguf}, {"results", fuzz_results}, {NULL, NULL},
};
