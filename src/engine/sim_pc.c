/* sim_pc — block-hash prefix cache with LRU eviction (see sim_pc.h). Entries live in one array
 * sized to the KV blocks: a hashed block (found through a hash table with open addressing and
 * backward-shift deletion) or an anonymous run of a request's unnamed blocks, one entry for the
 * whole run so a request costs O(1) however long it is. The evictable entries (no reference) form
 * one doubly linked LRU list, the free queue. */
#include "engine/sim_pc.h"
#include <stdlib.h>
#include <string.h>

typedef struct {
    uint64_t hash;
    int32_t ref;          /* running requests holding it; 0: evictable, on the LRU list */
    int32_t prev, next;   /* LRU list (head = least recently used); free entries chain through next */
    int32_t count;        /* blocks it stands for: 1 (a hashed block) or an anonymous run's length */
    uint32_t gen;         /* bumped at each allocation: a request knows its run by (index, gen) */
    uint8_t used, run;
} pc_entry;

struct sim_pc {
    pc_entry *e;
    int32_t cap, n_used, free_head;
    int32_t lru_head, lru_tail;
    long long evictable;              /* blocks on the LRU list */
    uint32_t gen;
    uint64_t *tab_key;
    int32_t *tab_val;                 /* -1 empty */
    size_t tab_cap;
};

static uint64_t mix(uint64_t a, uint64_t b) {
    uint64_t h = a ^ (b + 0x9E3779B97F4A7C15ull + (a << 6) + (a >> 2));
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    return h ? h : 1;
}

sim_pc *sim_pc_create(long long capacity_blocks) {
    sim_pc *c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->cap = capacity_blocks > 0x3fffffff ? 0x3fffffff : (int32_t)capacity_blocks;
    if (c->cap < 1) c->cap = 1;
    c->e = calloc((size_t)c->cap, sizeof *c->e);
    c->tab_cap = 16;
    while (c->tab_cap < (size_t)c->cap * 2) c->tab_cap *= 2;
    c->tab_key = malloc(sizeof(uint64_t) * c->tab_cap);
    c->tab_val = malloc(sizeof(int32_t) * c->tab_cap);
    if (!c->e || !c->tab_key || !c->tab_val) { sim_pc_destroy(c); return NULL; }
    for (size_t i = 0; i < c->tab_cap; i++) c->tab_val[i] = -1;
    for (int32_t i = 0; i < c->cap; i++) c->e[i].next = i + 1 < c->cap ? i + 1 : -1;
    c->free_head = 0;
    c->lru_head = c->lru_tail = -1;
    return c;
}

void sim_pc_destroy(sim_pc *c) {
    if (!c) return;
    free(c->e);
    free(c->tab_key);
    free(c->tab_val);
    free(c);
}

void sim_pc_req_free(sim_pc_req *r) {
    free(r->hash);
    free(r->id);
    memset(r, 0, sizeof *r);
    r->run = -1;
}

long long sim_pc_evictable(const sim_pc *c) { return c->evictable; }

static size_t slot(const sim_pc *c, uint64_t h) { return (size_t)(h >> 7) & (c->tab_cap - 1); }

static int32_t tab_get(const sim_pc *c, uint64_t h) {
    for (size_t j = slot(c, h);; j = (j + 1) & (c->tab_cap - 1)) {
        if (c->tab_val[j] < 0) return -1;
        if (c->tab_key[j] == h) return c->tab_val[j];
    }
}

static void tab_put(sim_pc *c, uint64_t h, int32_t v) {
    size_t j = slot(c, h);
    while (c->tab_val[j] >= 0) j = (j + 1) & (c->tab_cap - 1);
    c->tab_key[j] = h;
    c->tab_val[j] = v;
}

static void tab_del(sim_pc *c, uint64_t h) {
    size_t mask = c->tab_cap - 1, j = slot(c, h);
    while (c->tab_val[j] >= 0 && c->tab_key[j] != h) j = (j + 1) & mask;
    if (c->tab_val[j] < 0) return;
    c->tab_val[j] = -1;
    for (size_t k = (j + 1) & mask; c->tab_val[k] >= 0; k = (k + 1) & mask) {
        size_t home = slot(c, c->tab_key[k]);
        if (((k - home) & mask) >= ((k - j) & mask)) {
            c->tab_key[j] = c->tab_key[k];
            c->tab_val[j] = c->tab_val[k];
            c->tab_val[k] = -1;
            j = k;
        }
    }
}

static void lru_unlink(sim_pc *c, int32_t i) {
    pc_entry *x = &c->e[i];
    if (x->prev >= 0) c->e[x->prev].next = x->next; else c->lru_head = x->next;
    if (x->next >= 0) c->e[x->next].prev = x->prev; else c->lru_tail = x->prev;
    c->evictable -= x->count;
}

static void lru_append(sim_pc *c, int32_t i) {
    pc_entry *x = &c->e[i];
    x->prev = c->lru_tail;
    x->next = -1;
    if (c->lru_tail >= 0) c->e[c->lru_tail].next = i; else c->lru_head = i;
    c->lru_tail = i;
    c->evictable += x->count;
}

/* Entries stand for distinct blocks (held or evictable), so there are never more than blocks. */
static int32_t entry_alloc(sim_pc *c) {
    int32_t i = c->free_head;
    if (i < 0) return -1;
    c->free_head = c->e[i].next;
    c->e[i] = (pc_entry){.ref = 0, .prev = -1, .next = -1, .count = 1, .gen = ++c->gen, .used = 1};
    c->n_used++;
    return i;
}

static void entry_free(sim_pc *c, int32_t i) {
    c->e[i].used = 0;
    c->e[i].next = c->free_head;
    c->free_head = i;
    c->n_used--;
}

/* The least recently used block goes: a hashed block, or the deepest block of an anonymous run. */
static void evict_one(sim_pc *c) {
    int32_t i = c->lru_head;
    if (i < 0) return;
    pc_entry *x = &c->e[i];
    if (x->run && x->count > 1) {
        x->count--;
        c->evictable--;
        return;
    }
    lru_unlink(c, i);
    if (!x->run) tab_del(c, x->hash);
    entry_free(c, i);
}

int sim_pc_prepare(sim_pc_req *r, const engine_request *q, int block_size) {
    int64_t covered = q->hashed_tokens > 0 ? q->hashed_tokens : q->prompt_tokens;
    int32_t full = (int32_t)(covered / block_size);
    r->n_hash = r->n_id = 0;
    r->run = -1;
    r->run_gen = 0;
    r->run_from = 0;
    if (full <= 0) return 0;
    if (full > r->cap) {
        uint64_t *h = realloc(r->hash, sizeof *h * (size_t)full);
        if (!h) return -1;
        r->hash = h;
        int32_t *d = realloc(r->id, sizeof *d * (size_t)full);
        if (!d) return -1;
        r->id = d;
        r->cap = full;
    }
    uint64_t prev = 0x5eedcafe;
    int32_t hb = q->hash_block_tokens > 0 ? q->hash_block_tokens : block_size;
    for (int32_t j = 0; j < full; j++) {
        int64_t tok0 = (int64_t)j * block_size;   /* the block's first token */
        uint64_t content;
        if (q->block_hashes && tok0 / hb < q->n_block_hashes && (tok0 + block_size - 1) / hb < q->n_block_hashes)
            content = mix(q->block_hashes[tok0 / hb], (uint64_t)(tok0 % hb) / (uint64_t)block_size);
        else if (q->prefix_id && tok0 + block_size <= q->prefix_len)
            content = mix(q->prefix_id, (uint64_t)j);
        else
            break;   /* past the shared part: unique to this request, never matched by another */
        prev = mix(prev, content);
        r->hash[r->n_hash++] = prev;
    }
    return 0;
}

int32_t sim_pc_match(sim_pc *c, sim_pc_req *r, int32_t max_blocks, int32_t *was_free) {
    int32_t n = 0;
    *was_free = 0;
    while (n < r->n_hash && n < max_blocks) {
        int32_t i = tab_get(c, r->hash[n]);
        if (i < 0) break;
        if (c->e[i].ref == 0) { lru_unlink(c, i); (*was_free)++; }
        c->e[i].ref++;
        r->id[n++] = i;
    }
    r->n_id = n;
    int32_t hit = n;
    /* after a preemption: its own blocks past the shared ones, if the chain reaches them and they
     * were not evicted (the run's deepest blocks go first); the rest of the run is dropped */
    if (r->run >= 0 && n == r->run_from && n < max_blocks) {
        pc_entry *x = &c->e[r->run];
        if (x->used && x->run && x->gen == r->run_gen) {
            int32_t k = x->count < max_blocks - n ? x->count : max_blocks - n;
            lru_unlink(c, r->run);
            entry_free(c, r->run);
            hit += k;
            *was_free += k;
        }
    }
    r->run = -1;
    return hit;
}

void sim_pc_commit(sim_pc *c, sim_pc_req *r, int32_t full_blocks) {
    if (full_blocks > r->n_hash) full_blocks = r->n_hash;
    while (r->n_id < full_blocks) {
        uint64_t h = r->hash[r->n_id];
        if (tab_get(c, h) >= 0) break;   /* computed twice at once: the first copy is the cached one */
        int32_t i = entry_alloc(c);
        if (i < 0) break;
        c->e[i].hash = h;
        c->e[i].ref = 1;
        tab_put(c, h, i);
        r->id[r->n_id++] = i;
    }
}

void sim_pc_make_room(sim_pc *c, long long free_blocks, int32_t n) {
    while (free_blocks - c->evictable < n && c->evictable > 0) evict_one(c);
}

long long sim_pc_release(sim_pc *c, sim_pc_req *r, int32_t blocks_held, int32_t full_blocks) {
    if (full_blocks > blocks_held) full_blocks = blocks_held;
    long long back = blocks_held - r->n_id;   /* everything but its hashed blocks returns to the pool */
    int32_t anon = full_blocks - r->n_id;     /* full blocks no one else can name */
    r->run = -1;
    if (anon > 0) {
        int32_t i = entry_alloc(c);
        if (i >= 0) {   /* the deepest blocks go into the queue first: evicted first */
            c->e[i].run = 1;
            c->e[i].count = anon;
            lru_append(c, i);
            r->run = i;
            r->run_gen = c->e[i].gen;
            r->run_from = r->n_id;
        }
    }
    for (int32_t k = r->n_id - 1; k >= 0; k--) {
        pc_entry *x = &c->e[r->id[k]];
        if (--x->ref == 0) { lru_append(c, r->id[k]); back++; }
    }
    r->n_id = 0;
    return back;
}
