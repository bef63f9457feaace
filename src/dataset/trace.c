/* trace — production traces in Moonshot's Mooncake format (mooncake:FILE): one JSON object a line,
 * {"timestamp": ms, "input_length": tokens, "output_length": tokens, "hash_ids": [ids]}, one id per
 * block of --trace-block-size tokens (512), the last block partial; equal ids mean an identical block.
 *
 * A prompt is its blocks in order, each block's text drawn from the block's id alone (a seeded
 * generator over single-token words), so two requests that share an id share exactly that block's
 * bytes and tokens, and a request that repeats a prefix repeats it exactly. Nothing is stored but
 * the ids: the text is rendered when the request is sent (dataset_item_text), which keeps a trace
 * of half a million distinct blocks at the size of its ids. The request's own tail (the last block)
 * gives way to what the server adds (BOS, chat template markers), so the server counts exactly
 * input_length tokens and every shared block comes first, whole, in the rendered prompt. */
#include "dataset/dataset_int.h"
#include "dataset/words.h"
#include "dataset/trace.h"
#include "common/fileio.h"
#include <jansson.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BLOCK_TOKENS 512
/* prompts whose lengths are checked by rendering and tokenizing them: all, up to this many
 * tokens in total, a seeded sample of the trace beyond (a 12,000-request trace is 250M tokens) */
#define CHECK_BUDGET_TOKENS 2000000

struct ds_blocks {
    uint64_t *ids;           /* every item's hash ids, back to back */
    size_t n_ids;
    uint32_t *line;          /* file line of each item, for messages */
    word_source w;           /* the words blocks are drawn from */
    uint8_t *wlen;           /* length of each word */
    size_t max_wlen;
    uint64_t seed;
    int32_t block_tokens;
    bool plain;              /* every word is ASCII letters: rendered text needs no JSON escaping */
};

void ds_blocks_free(struct ds_blocks *b) {
    if (!b) return;
    ds_words_close(&b->w);
    free(b->ids);
    free(b->line);
    free(b->wlen);
    free(b);
}

static uint64_t splitmix(uint64_t *x) {
    uint64_t z = (*x += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

/* The first k tokens of block id: " w1 w2 ..." written at out (room for k x (max_wlen + 1)).
 * A function of (seed, id) only, so the first k tokens of a block are the same in every
 * request that holds it, whatever its position or length. Returns the bytes written. */
static size_t render_block(const struct ds_blocks *b, uint64_t id, int32_t k, char *out) {
    uint64_t st = b->seed ^ (id * 0xd1b54a32d192ed03ULL);
    splitmix(&st);
    char *p = out;
    for (int32_t j = 0; j < k; j++) {
        size_t w = (size_t)(((unsigned __int128)splitmix(&st) * b->w.n) >> 64);
        *p++ = ' ';
        memcpy(p, b->w.words[w], b->wlen[w]);
        p += b->wlen[w];
    }
    return (size_t)(p - out);
}

const char *dataset_item_text(const dataset_item *it, char **buf, size_t *len) {
    *buf = NULL;
    if (!it->blocks) {
        if (len) *len = it->prompt ? strlen(it->prompt) : 0;
        return it->prompt;
    }
    const struct ds_blocks *b = it->blocks;
    size_t cap = (size_t)it->text_tokens * (b->max_wlen + 1) + 1;
    char *out = malloc(cap);
    if (!out) return NULL;
    size_t n = 0;
    int32_t left = it->text_tokens;
    for (int32_t i = 0; i < it->n_blocks && left > 0; i++) {
        int32_t k = left < b->block_tokens ? left : b->block_tokens;
        n += render_block(b, it->block_ids[i], k, out + n);
        left -= k;
    }
    out[n] = 0;
    if (len) *len = n;
    *buf = out;
    return out;
}

bool dataset_item_text_plain(const dataset_item *it) { return it->blocks && it->blocks->plain; }

/* ---- the workload's bound on prefix-cache hits ---- */

/* An open-addressing set of ids (ids + 1 stored, 0 empty). */
typedef struct { uint64_t *v; size_t mask; } idset;

static int idset_init(idset *s, size_t n) {
    size_t cap = 16;
    while (cap < n * 2) cap <<= 1;
    s->v = calloc(cap, sizeof *s->v);
    s->mask = cap - 1;
    return s->v ? 0 : -1;
}

/* Returns whether id was already there; inserts it. */
static bool idset_add(idset *s, uint64_t id) {
    uint64_t key = id + 1, x = id;
    for (size_t i = (size_t)splitmix(&x) & s->mask;; i = (i + 1) & s->mask) {
        if (s->v[i] == key) return true;
        if (!s->v[i]) { s->v[i] = key; return false; }
    }
}

static bool idset_has(const idset *s, uint64_t id) {
    uint64_t key = id + 1, x = id;
    for (size_t i = (size_t)splitmix(&x) & s->mask;; i = (i + 1) & s->mask) {
        if (s->v[i] == key) return true;
        if (!s->v[i]) return false;
    }
}

/* Each request, in replay order, against every block sent before it: the leading run of blocks
 * already seen is what a prefix cache with no capacity limit could serve (a hit must be a prefix:
 * after the first new block nothing more is reused). Exact in the trace's own blocks. */
static int trace_bound(dataset *d) {
    idset seen;
    if (idset_init(&seen, d->blocks->n_ids) < 0) return -1;
    int32_t bs = d->block_tokens;
    for (size_t i = 0; i < d->n; i++) {
        dataset_item *it = &d->items[i];
        int32_t k = 0;
        while (k < it->n_blocks && idset_has(&seen, it->block_ids[k])) k++;
        long long tok = (long long)k * bs;
        it->cacheable_tokens = (int32_t)(tok < it->in_tokens ? tok : it->in_tokens);
        for (int32_t j = 0; j < it->n_blocks; j++) {
            if (idset_add(&seen, it->block_ids[j])) continue;
            /* a new block: the working set grows by its tokens (the last one may be partial) */
            long long left = (long long)it->in_tokens - (long long)j * bs;
            d->distinct_blocks++;
            d->working_set_tokens += left < bs ? left : bs;
        }
    }
    free(seen.v);
    return 0;
}

/* ---- the file ---- */

static int by_time(const void *a, const void *b) {
    const dataset_item *x = a, *y = b;
    if (x->timestamp_ns != y->timestamp_ns) return x->timestamp_ns < y->timestamp_ns ? -1 : 1;
    return x->group < y->group ? -1 : x->group > y->group;   /* group holds the line: stable */
}

/* One line into *it (ids appended to b). 0 ok, -1 with err. */
static int parse_line(const char *path, size_t lineno, json_t *o, struct ds_blocks *b, size_t *ids_cap,
                      dataset_item *it, double *ts_ms, char *err, size_t errlen) {
    json_t *ts = json_object_get(o, "timestamp"), *in = json_object_get(o, "input_length");
    json_t *out = json_object_get(o, "output_length"), *h = json_object_get(o, "hash_ids");
    if (!json_is_number(ts) || json_number_value(ts) < 0 || !json_is_integer(in) || json_integer_value(in) < 1 ||
        json_integer_value(in) > 100000000 || !json_is_integer(out) || json_integer_value(out) < 1 ||
        json_integer_value(out) > 100000000 || !json_is_array(h)) {
        snprintf(err, errlen, "%s line %zu: a Mooncake trace line is {\"timestamp\": ms, \"input_length\": N >= 1, "
                 "\"output_length\": M >= 1, \"hash_ids\": [ids]}", path, lineno);
        return -1;
    }
    long long L = json_integer_value(in), bs = b->block_tokens;
    size_t want = (size_t)((L + bs - 1) / bs), have = json_array_size(h);
    if (have != want) {
        snprintf(err, errlen, "%s line %zu: input_length %lld needs %zu hash ids of %lld tokens, the line has %zu "
                 "(a trace made with another block size? give --trace-block-size)", path, lineno, L, want, bs, have);
        return -1;
    }
    if (b->n_ids + have > *ids_cap) {
        size_t nc = (*ids_cap + have) * 2;
        uint64_t *nv = realloc(b->ids, nc * sizeof *nv);
        if (!nv) { snprintf(err, errlen, "out of memory"); return -1; }
        b->ids = nv;
        *ids_cap = nc;
    }
    for (size_t k = 0; k < have; k++) {
        json_t *v = json_array_get(h, k);
        if (!json_is_integer(v) || json_integer_value(v) < 0) {
            snprintf(err, errlen, "%s line %zu: hash_ids[%zu] is not a non-negative integer", path, lineno, k);
            return -1;
        }
        b->ids[b->n_ids + k] = (uint64_t)json_integer_value(v);
    }
    *ts_ms = json_number_value(ts);
    it->in_tokens = (int32_t)L;
    it->text_tokens = (int32_t)L;
    it->max_tokens = (int32_t)json_integer_value(out);
    it->n_blocks = (int32_t)have;
    it->block_ids = (const uint64_t *)(uintptr_t)b->n_ids;   /* an offset until the array stops moving */
    it->group = (int32_t)lineno;
    b->n_ids += have;
    return 0;
}

static int read_lines(dataset *d, const char *path, size_t *ids_cap, double **ts_ms, char *err, size_t errlen) {
    char *text;
    size_t len;
    if (fileio_read_all(path, &text, &len) < 0) {
        snprintf(err, errlen, "cannot read trace file '%s': %s", path, strerror(errno));
        return -1;
    }
    size_t lines = 1;
    for (size_t i = 0; i < len; i++) lines += text[i] == '\n';
    d->items = calloc(lines, sizeof *d->items);
    *ts_ms = calloc(lines, sizeof **ts_ms);
    if (!d->items || !*ts_ms) { free(text); snprintf(err, errlen, "out of memory"); return -1; }
    size_t lineno = 0;
    int rc = 0;
    for (char *line = text, *next; line && !rc; line = next) {
        next = strchr(line, '\n');
        if (next) *next++ = 0;
        lineno++;
        while (*line == ' ' || *line == '\t' || *line == '\r') line++;
        if (!*line) continue;
        json_error_t je;
        json_t *o = json_loads(line, 0, &je);
        if (!json_is_object(o)) {
            snprintf(err, errlen, "%s line %zu: not a JSON object (%s)", path, lineno, o ? "wrong type" : je.text);
            rc = -1;
        } else {
            rc = parse_line(path, lineno, o, d->blocks, ids_cap, &d->items[d->n], &(*ts_ms)[d->n], err, errlen);
            if (!rc) d->n++;
        }
        json_decref(o);
    }
    free(text);
    if (!rc && !d->n) { snprintf(err, errlen, "trace file '%s' has no requests", path); rc = -1; }
    return rc;
}

/* Keeps the requests inside --trace-window (offsets from the trace's first request); timestamps
 * become ns from that first request, times --time-scale. */
static int apply_window(dataset *d, const double *ts_ms, const dataset_opts *o, char *err, size_t errlen) {
    double t0 = ts_ms[0], last = ts_ms[0];
    for (size_t i = 0; i < d->n; i++) { if (ts_ms[i] < t0) t0 = ts_ms[i]; if (ts_ms[i] > last) last = ts_ms[i]; }
    double scale = o && o->time_scale > 0 ? o->time_scale : 1;
    int64_t lo = o ? o->window_start_ns : 0, hi = o && o->window_end_ns > 0 ? o->window_end_ns : INT64_MAX;
    size_t k = 0;
    for (size_t i = 0; i < d->n; i++) {
        int64_t off = (int64_t)llround((ts_ms[i] - t0) * 1e6);
        if (off < lo || off >= hi) continue;
        d->items[k] = d->items[i];
        d->items[k].timestamp_ns = off;
        k++;
    }
    if (!k) {
        snprintf(err, errlen, "no request of the trace falls inside --trace-window (the trace spans 0..%.3f s from its "
                 "first request)", (last - t0) / 1e3);
        return -1;
    }
    d->n = k;
    /* replayed in timestamp order (file order among equal times) */
    bool sorted = true;
    for (size_t i = 1; i < d->n && sorted; i++) sorted = d->items[i].timestamp_ns >= d->items[i - 1].timestamp_ns;
    if (!sorted) qsort(d->items, d->n, sizeof *d->items, by_time);
    for (size_t i = 0; i < d->n; i++) d->items[i].timestamp_ns = (int64_t)llround((double)d->items[i].timestamp_ns * scale);
    return 0;
}

static int blocks_setup(struct ds_blocks *b, const dataset_opts *o, uint64_t seed, char *err, size_t errlen) {
    if (ds_words_open(&b->w, o, err, errlen) < 0) return -1;
    b->wlen = malloc(b->w.n);
    if (!b->wlen) { snprintf(err, errlen, "out of memory"); return -1; }
    b->plain = true;
    for (size_t i = 0; i < b->w.n; i++) {
        size_t l = strlen(b->w.words[i]);
        for (const char *c = b->w.words[i]; *c; c++) b->plain &= (*c >= 'a' && *c <= 'z') || (*c >= 'A' && *c <= 'Z');
        b->wlen[i] = (uint8_t)(l < 255 ? l : 255);
        if (l > b->max_wlen) b->max_wlen = l;
    }
    b->seed = seed * 0x9e3779b97f4a7c15ULL ^ 0x6d6f6f6e63616b65ULL;
    return 0;
}

int ds_open_mooncake(const char *spec, const char *path, uint64_t seed, const dataset_opts *o, dataset **out,
                     char *err, size_t errlen) {
    dataset *d = ds_new(spec, 0, o);
    struct ds_blocks *b = calloc(1, sizeof *b);
    double *ts_ms = NULL;
    size_t ids_cap = 0;
    if (!d || !b) { dataset_free(d); free(b); snprintf(err, errlen, "out of memory"); return -1; }
    free(d->items);
    d->items = NULL;
    d->blocks = b;
    b->block_tokens = d->block_tokens = o && o->block_tokens > 0 ? o->block_tokens : DEFAULT_BLOCK_TOKENS;
    d->ignore_eos = true;   /* output_length is what the trace's server generated: max_tokens, exactly */
    int rc = read_lines(d, path, &ids_cap, &ts_ms, err, errlen);
    if (!rc) { d->trace_lines = d->n; rc = apply_window(d, ts_ms, o, err, errlen); }
    if (!rc) rc = blocks_setup(b, o, seed, err, errlen);
    if (!rc && !(b->line = malloc(d->n * sizeof *b->line))) { snprintf(err, errlen, "out of memory"); rc = -1; }
    free(ts_ms);
    if (rc) { dataset_free(d); return -1; }
    for (size_t i = 0; i < d->n; i++) {
        dataset_item *it = &d->items[i];
        it->block_ids = b->ids + (size_t)(uintptr_t)it->block_ids;
        it->blocks = b;
        b->line[i] = (uint32_t)it->group;
        it->group = -1;
    }
    if (trace_bound(d) < 0) { dataset_free(d); snprintf(err, errlen, "out of memory"); return -1; }
    trace_lru lru;
    if (trace_lru_compute(d, &lru) == 0) {
        double bound = trace_lru_hit_rate(&lru, INT64_MAX / 2);
        for (int k = 1; k <= 20 && bound > 0; k++) {
            int64_t tok = trace_lru_tokens_for(&lru, bound * k / 20.0);
            if (tok < 0) break;
            d->lru_tokens[d->n_lru] = tok;
            d->lru_rate[d->n_lru++] = trace_lru_hit_rate(&lru, tok);
        }
        trace_lru_free(&lru);
    }
    ds_finish_stats(d);
    *out = d;
    return 0;
}

/* ---- lengths as the server counts them ---- */

/* Tokens the server adds around the prompt text: BOS for completions, the template's markers for
 * one user message in chat. Measured on a rendered block (the markers do not merge with the
 * words: each word is its own pre-token), and checked on the prompts themselves afterwards. */
static int32_t server_overhead(const dataset *d, const tokenizer *tok, bool chat) {
    if (!chat) return tokenizer_add_bos_default(tok) ? 1 : 0;
    dataset_item probe = d->items[0];
    probe.text_tokens = probe.in_tokens < 64 ? probe.in_tokens : 64;
    char *buf;
    size_t len;
    const char *text = dataset_item_text(&probe, &buf, &len);
    size_t with = 0, alone = text ? tokenizer_count(tok, text, len) : (size_t)-1;
    const char *role = "user";
    int rc = text ? tokenizer_chat_prompt_tokens(tok, &role, &text, 1, &with) : -1;
    free(buf);
    if (rc != 0 || alone == (size_t)-1 || with < alone) return 0;
    return (int32_t)(with - alone);
}

/* The length the server will count for one item's rendered prompt; -1 on error. */
static long long counted(const dataset_item *it, const tokenizer *tok, bool chat) {
    char *buf;
    size_t len;
    const char *text = dataset_item_text(it, &buf, &len);
    if (!text) return -1;
    long long n = -1;
    if (chat) {
        const char *role = "user";
        size_t k;
        if (tokenizer_chat_prompt_tokens(tok, &role, &text, 1, &k) == 0) n = (long long)k;
    } else {
        size_t k = tokenizer_count(tok, text, len);
        if (k != (size_t)-1) n = (long long)k + (tokenizer_add_bos_default(tok) ? 1 : 0);
    }
    free(buf);
    return n;
}

void ds_trace_count_for_api(dataset *d, const tokenizer *tok, bool chat) {
    if (!tok) return;   /* words: the text is input_length words, as the server counts them */
    int32_t over = server_overhead(d, tok, chat);
    long long total = 0;
    for (size_t i = 0; i < d->n; i++) {
        dataset_item *it = &d->items[i];
        int32_t want = it->in_tokens;
        it->text_tokens = want - over >= 1 ? want - over : 1;
        it->in_tokens = it->text_tokens + over;
        total += it->in_tokens;
    }
    /* check: every prompt when the trace is small, else prompts picked evenly by a seeded draw */
    rng r;
    rng_seed(&r, 0x7ace5eedULL);
    long long budget = CHECK_BUDGET_TOKENS;
    for (size_t k = 0; k < d->n && budget > 0; k++) {
        size_t i = total <= CHECK_BUDGET_TOKENS ? k : (size_t)rng_below(&r, d->n);
        const dataset_item *it = &d->items[i];
        long long n = counted(it, tok, chat);
        budget -= it->in_tokens;
        if (n != it->in_tokens) {
            snprintf(d->length_error, sizeof d->length_error,
                     "trace line %u: the rendered prompt counts %lld tokens (%s) where it should count %d; the "
                     "tokenizer's words do not add up here, so the run would not send the trace's lengths",
                     d->blocks->line[i], n, chat ? "with the chat template" : "with BOS", it->in_tokens);
            return;
        }
    }
}
