/* trace_lru — the hit-rate curve of an LRU prefix cache over a trace (trace.h). */
#include "dataset/trace.h"
#include <stdlib.h>
#include <string.h>

/* id -> last access time (open addressing; key id + 1, 0 empty). */
typedef struct { uint64_t *key; uint32_t *t; size_t mask; } lastmap;

static uint64_t mixid(uint64_t x) {
    x ^= x >> 33; x *= 0xff51afd7ed558ccdULL; x ^= x >> 33; x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

/* Slot of id (inserted empty when new: *fresh set). */
static size_t lastmap_slot(lastmap *m, uint64_t id, bool *fresh) {
    for (size_t i = (size_t)mixid(id) & m->mask;; i = (i + 1) & m->mask) {
        if (m->key[i] == id + 1) { *fresh = false; return i; }
        if (!m->key[i]) { m->key[i] = id + 1; *fresh = true; return i; }
    }
}

/* Fenwick tree over access times: 1 where a block's latest access is. */
static void fw_add(int32_t *f, size_t n, size_t i, int32_t v) { for (i++; i <= n; i += i & -i) f[i - 1] += v; }
static int64_t fw_sum(const int32_t *f, size_t i) { int64_t s = 0; for (; i > 0; i -= i & -i) s += f[i - 1]; return s; }   /* [0, i) */

typedef struct { int64_t need; int32_t tokens; } step;

static int by_need(const void *a, const void *b) {
    const step *x = a, *y = b;
    return x->need < y->need ? -1 : x->need > y->need;
}

int trace_lru_compute(const dataset *d, trace_lru *out) {
    memset(out, 0, sizeof *out);
    if (!d->blocks) return -1;
    size_t n_acc = 0;
    for (size_t i = 0; i < d->n; i++) n_acc += (size_t)d->items[i].n_blocks;
    size_t cap = 16;
    while (cap < n_acc * 2) cap <<= 1;
    lastmap m = { calloc(cap, sizeof *m.key), calloc(cap, sizeof *m.t), cap - 1 };
    int32_t *fw = calloc(n_acc + 1, sizeof *fw);
    step *st = malloc((n_acc + 1) * sizeof *st);
    if (!m.key || !m.t || !fw || !st) { free(m.key); free(m.t); free(fw); free(st); return -1; }
    size_t t = 0, n_st = 0;
    int32_t bs = d->block_tokens;
    for (size_t r = 0; r < d->n; r++) {
        const dataset_item *it = &d->items[r];
        int64_t run_need = 0;            /* the largest stack distance of the leading run so far, + 1 */
        bool reusable = true;
        for (int32_t j = 0; j < it->n_blocks; j++, t++) {
            bool fresh;
            size_t slot = lastmap_slot(&m, it->block_ids[j], &fresh);
            if (!fresh) {
                /* distinct blocks touched since its last use: the latest accesses after it */
                int64_t dist = fw_sum(fw, t) - fw_sum(fw, (size_t)m.t[slot] + 1);
                fw_add(fw, n_acc, m.t[slot], -1);
                if (dist + 1 > run_need) run_need = dist + 1;
            } else reusable = false;     /* first sight: a miss at any capacity, and so is the rest */
            fw_add(fw, n_acc, t, 1);
            m.t[slot] = (uint32_t)t;
            long long left = (long long)it->in_tokens - (long long)j * bs;
            int32_t tok = (int32_t)(left < bs ? (left > 0 ? left : 0) : bs);
            if (reusable && tok > 0) st[n_st++] = (step){ run_need, tok };
            out->prompt_tokens += tok;
        }
    }
    free(m.key); free(m.t); free(fw);
    qsort(st, n_st, sizeof *st, by_need);
    out->need = malloc((n_st + 1) * sizeof *out->need);
    out->hit_tokens = malloc((n_st + 1) * sizeof *out->hit_tokens);
    if (!out->need || !out->hit_tokens) { free(st); trace_lru_free(out); return -1; }
    double acc = 0;
    for (size_t i = 0; i < n_st; i++) {
        acc += st[i].tokens;
        /* one entry per distinct capacity: the last holds the cumulative tokens */
        if (out->n && out->need[out->n - 1] == st[i].need) out->hit_tokens[out->n - 1] = acc;
        else { out->need[out->n] = st[i].need; out->hit_tokens[out->n++] = acc; }
    }
    free(st);
    out->block_tokens = bs;
    return 0;
}

void trace_lru_free(trace_lru *c) {
    free(c->need);
    free(c->hit_tokens);
    memset(c, 0, sizeof *c);
}

double trace_lru_hit_rate(const trace_lru *c, int64_t cap_tokens) {
    int64_t blocks = cap_tokens / (c->block_tokens > 0 ? c->block_tokens : 1);
    double hit = 0;
    /* the last step whose capacity is within reach */
    size_t lo = 0, hi = c->n;
    while (lo < hi) { size_t mid = (lo + hi) / 2; if (c->need[mid] <= blocks) lo = mid + 1; else hi = mid; }
    if (lo) hit = c->hit_tokens[lo - 1];
    return c->prompt_tokens > 0 ? hit / c->prompt_tokens : 0;
}

int64_t trace_lru_tokens_for(const trace_lru *c, double hit_rate) {
    double want = hit_rate * c->prompt_tokens;
    for (size_t i = 0; i < c->n; i++)
        if (c->hit_tokens[i] >= want - 1e-9) return c->need[i] * c->block_tokens;
    return hit_rate <= 0 ? 0 : -1;
}
