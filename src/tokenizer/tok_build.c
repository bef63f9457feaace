/* tok_build — builds the tables a loaded tokenizer encodes with: the vocabulary (id -> string and a
 * string -> id hash), the merge table keyed by the pair of token ids (so BPE never concatenates strings
 * at run time), the added-token passes and the compiled pre-tokenizer regexes. Both loaders feed it. */
#include "tokenizer/tok_internal.h"
#include "tokenizer/tok_unicode_new.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <pthread.h>

static atomic_uint_fast64_t tok_serial_next = 1;

/* HF's \s (Oniguruma, Unicode White_Space). PCRE2 also counts U+180E, which HF does not. */
#define WS_BODY "\\t-\\r \\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}"

uint64_t tok_hash_bytes(const char *s, size_t n) {
    uint64_t h = 0x9E3779B97F4A7C15ull ^ n;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, s, 8);
        h = (h ^ v) * 0xff51afd7ed558ccdull;
        h ^= h >> 32;
        s += 8;
        n -= 8;
    }
    uint64_t v = 0;
    memcpy(&v, s, n);
    h = (h ^ v) * 0xc4ceb9fe1a85ec53ull;
    h ^= h >> 29;
    return h;
}

static uint64_t hash_pair(uint32_t a, uint32_t b) {
    uint64_t h = ((uint64_t)a << 32 | b) * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 31);
}

static char *arena_dup(tokenizer *t, const char *s, size_t n) {
    if (t->arena_used + n + 1 > t->arena_cap) {
        size_t cap = n + 1 > (1u << 20) ? n + 1 + 64 : (1u << 20);
        char *blk = malloc(cap);
        if (!blk) return NULL;
        memcpy(blk, &t->arena_blocks, sizeof(void *));
        t->arena_blocks = blk;
        t->arena_cur = blk;
        t->arena_used = sizeof(void *);
        t->arena_cap = cap;
    }
    char *p = t->arena_cur + t->arena_used;
    memcpy(p, s, n);
    p[n] = 0;
    t->arena_used += n + 1;
    return p;
}

int tok_buf_append(char **buf, size_t *len, size_t *cap, const void *data, size_t n) {
    if (*len + n + 1 > *cap) {
        size_t nc = *cap ? *cap : 256;
        while (nc < *len + n + 1) nc *= 2;
        char *nb = realloc(*buf, nc);
        if (!nb) return -1;
        *buf = nb;
        *cap = nc;
    }
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = 0;
    return 0;
}

static uint64_t hash_id(int32_t id) {
    uint64_t h = (uint64_t)(uint32_t)id * 0x9E3779B97F4A7C15ull;
    return h ^ (h >> 29);
}

/* The entry of an id while building, or NULL. */
static tok_entry *entry_find(const tokenizer *t, int32_t id) {
    if (!t->ent_by_id) return NULL;
    for (size_t i = hash_id(id) & t->ent_by_id_mask;; i = (i + 1) & t->ent_by_id_mask) {
        uint32_t k = t->ent_by_id[i];
        if (!k) return NULL;
        if (t->ent[k - 1].id == id) return &t->ent[k - 1];
    }
}

static void entry_index(uint32_t *idx, size_t mask, const tok_entry *ent, uint32_t k) {
    size_t i = hash_id(ent[k].id) & mask;
    while (idx[i]) i = (i + 1) & mask;
    idx[i] = k + 1;
}

/* Appends an entry for a new id (the id index is kept at most half full). NULL when out of memory. */
static tok_entry *entry_add(tokenizer *t, int32_t id) {
    if (t->n_ent == t->ent_cap) {
        size_t nc = t->ent_cap ? t->ent_cap * 2 : 1024;
        tok_entry *e = realloc(t->ent, nc * sizeof *e);
        if (!e) return NULL;
        t->ent = e;
        t->ent_cap = nc;
    }
    if ((t->n_ent + 1) * 2 > (t->ent_by_id ? t->ent_by_id_mask + 1 : 0)) {
        size_t cap = t->ent_by_id ? (t->ent_by_id_mask + 1) * 2 : 2048;
        uint32_t *idx = calloc(cap, sizeof *idx);
        if (!idx) return NULL;
        for (size_t k = 0; k < t->n_ent; k++) entry_index(idx, cap - 1, t->ent, (uint32_t)k);
        free(t->ent_by_id);
        t->ent_by_id = idx;
        t->ent_by_id_mask = cap - 1;
    }
    tok_entry *e = &t->ent[t->n_ent];
    *e = (tok_entry){NULL, 0, id, 0};
    entry_index(t->ent_by_id, t->ent_by_id_mask, t->ent, (uint32_t)t->n_ent++);
    return e;
}

const char *tok_token_at(const tokenizer *t, int32_t id, uint32_t *len) {
    const tok_entry *e = entry_find(t, id);
    *len = e ? e->len : 0;
    return e ? e->str : NULL;
}

void tok_flag(tokenizer *t, int32_t id, uint8_t flag) {
    tok_entry *e = entry_find(t, id);
    if (e) e->flags |= flag;
}

static void map_put(tok_slot *m, size_t mask, const char *str, uint32_t len, int32_t id) {
    size_t i = tok_hash_bytes(str, len) & mask;
    while (m[i].id1) i = (i + 1) & mask;
    m[i] = (tok_slot){str, (uint32_t)id + 1, len};
}

static int map_rehash(tokenizer *t, size_t cap) {
    tok_slot *m = calloc(cap, sizeof *m);
    if (!m) return -1;
    for (size_t i = 0; i <= t->map_mask; i++)
        if (t->map[i].id1) map_put(m, cap - 1, t->map[i].str, t->map[i].len, (int32_t)t->map[i].id1 - 1);
    free(t->map);
    t->map = m;
    t->map_mask = cap - 1;
    return 0;
}

int tok_init(tokenizer *t, size_t hint, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    t->serial = atomic_fetch_add(&tok_serial_next, 1);
    t->bos_id = t->eos_id = -1;
    /* The string map is only used while loading (it may fill to 50%); the pair table is probed for every
     * merge step of every encode, so it is kept at most 25% full. */
    size_t cap = 1024;
    while (cap < hint) cap *= 2;
    t->map = calloc(cap, sizeof *t->map);
    t->pairs = malloc(cap * 2 * sizeof *t->pairs);
    if (!t->map || !t->pairs) { snprintf(err, errlen, "out of memory"); return -1; }
    for (size_t i = 0; i < cap * 2; i++) t->pairs[i].rank = -1;
    t->map_mask = cap - 1;
    t->pairs_mask = cap * 2 - 1;
    return 0;
}

int32_t tok_lookup(const tokenizer *t, const char *s, size_t len) {
    size_t i = tok_hash_bytes(s, len) & t->map_mask;
    for (;;) {
        const tok_slot *sl = &t->map[i];
        if (!sl->id1) return -1;
        if (sl->len == len && !memcmp(sl->str, s, len)) return (int32_t)sl->id1 - 1;
        i = (i + 1) & t->map_mask;
    }
}

int tok_set_token(tokenizer *t, int32_t id, const char *s, size_t len, char *err, size_t errlen) {
    if (id < 0 || len > UINT32_MAX) { snprintf(err, errlen, "bad token id %d", id); return -1; }
    tok_entry *e = entry_find(t, id);
    if (e) {
        if (e->len == len && !memcmp(e->str, s, len)) return 0;
        snprintf(err, errlen, "token id %d given two different strings", id);
        return -1;
    }
    if (!(e = entry_add(t, id)) || !(e->str = arena_dup(t, s, len))) goto oom;
    e->len = (uint32_t)len;
    if (tok_lookup(t, s, len) >= 0) return 0; /* duplicate string: the first id keeps the mapping */
    if (++t->map_filled * 2 > t->map_mask + 1 && map_rehash(t, (t->map_mask + 1) * 2)) goto oom;
    map_put(t->map, t->map_mask, e->str, (uint32_t)len, id);
    return 0;
oom:
    snprintf(err, errlen, "out of memory");
    return -1;
}

static int pairs_grow(tokenizer *t) {
    size_t cap = (t->pairs_mask + 1) * 2;
    tok_pair *p = malloc(cap * sizeof *p);
    if (!p) return -1;
    for (size_t i = 0; i < cap; i++) p[i].rank = -1;
    for (size_t j = 0; j <= t->pairs_mask; j++) {
        tok_pair *q = &t->pairs[j];
        if (q->rank < 0) continue;
        size_t i = hash_pair(q->left, q->right) & (cap - 1);
        while (p[i].rank >= 0) i = (i + 1) & (cap - 1);
        p[i] = *q;
    }
    free(t->pairs);
    t->pairs = p;
    t->pairs_mask = cap - 1;
    return 0;
}

int tok_add_merge(tokenizer *t, const char *a, size_t alen, const char *b, size_t blen, char *err, size_t errlen) {
    int32_t ia = tok_lookup(t, a, alen), ib = tok_lookup(t, b, blen);
    if (alen + blen + 1 > t->scratch_cap) {
        size_t nc = (alen + blen + 1) * 2;
        char *s = realloc(t->scratch, nc);
        if (!s) { snprintf(err, errlen, "out of memory"); return -1; }
        t->scratch = s;
        t->scratch_cap = nc;
    }
    memcpy(t->scratch, a, alen);
    memcpy(t->scratch + alen, b, blen);
    int32_t im = tok_lookup(t, t->scratch, alen + blen);
    if (ia < 0 || ib < 0 || im < 0) {
        snprintf(err, errlen, "merge %zu '%.*s %.*s': %s not in the vocabulary", t->n_merges, (int)alen, a,
                 (int)blen, b, ia < 0 ? "left part" : ib < 0 ? "right part" : "merged token");
        return -1;
    }
    if ((t->n_merges + 1) * 4 > t->pairs_mask + 1 && pairs_grow(t)) {
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    size_t i = hash_pair((uint32_t)ia, (uint32_t)ib) & t->pairs_mask;
    while (t->pairs[i].rank >= 0 && !(t->pairs[i].left == (uint32_t)ia && t->pairs[i].right == (uint32_t)ib))
        i = (i + 1) & t->pairs_mask;
    /* A repeated pair takes the later rank, as HF's map built from the merge list does. */
    t->pairs[i] = (tok_pair){(uint32_t)ia, (uint32_t)ib, (int32_t)t->n_merges, im};
    t->n_merges++;
    return 0;
}

int tok_add_added(tokenizer *t, const tok_added *a, char *err, size_t errlen) {
    if (a->len == 0) return 0; /* HF ignores empty added tokens */
    tok_entry *e = entry_find(t, a->id);
    if (e && !(e->len == a->len && !memcmp(e->str, a->text, a->len))) {
        /* An added token may reuse the id of a vocabulary token with other text: the added one wins. */
        if (!(e->str = arena_dup(t, a->text, a->len))) { snprintf(err, errlen, "out of memory"); return -1; }
        e->len = a->len;
    } else if (!e) {
        if (tok_set_token(t, a->id, a->text, a->len, err, errlen)) return -1;
        e = entry_find(t, a->id);
    }
    tok_added *n = t->added;
    if ((t->n_added & (t->n_added - 1)) == 0) { /* capacity: powers of two */
        n = realloc(t->added, (t->n_added ? t->n_added * 2 : 1) * sizeof *n);
        if (!n) { snprintf(err, errlen, "out of memory"); return -1; }
        t->added = n;
    }
    n[t->n_added] = *a;
    n[t->n_added].text = e->str;
    t->n_added++;
    e->flags |= TOK_F_ADDED | (a->special ? TOK_F_SPECIAL : 0);
    return 0;
}

/* The code points HF's newer Unicode tables add to \p{X}, for X = L M N P S (NULL for others). */
static const char *new_in_class(char x) {
    switch (x) {
    case 'L': return TOK_NEW_L;
    case 'M': return TOK_NEW_M;
    case 'N': return TOK_NEW_N;
    case 'P': return TOK_NEW_P;
    case 'S': return TOK_NEW_S;
    default: return NULL;
    }
}

/* Rewrites a pattern from HF's Oniguruma syntax into PCRE2: \s and \S become HF's whitespace class,
 * \h / \H (hex digit in Oniguruma, horizontal space in PCRE2) become [0-9a-fA-F], and \p{L|M|N|P|S}
 * gain the code points assigned since PCRE2's Unicode version (tok_unicode_new.h). */
static int translate(const char *p, size_t n, bool extend, char **out, size_t *olen, char *err, size_t errlen) {
    char *buf = NULL;
    size_t len = 0, cap = 0;
    bool in_class = false;
    int rc = 0;
    for (size_t i = 0; i < n && rc == 0; i++) {
        char c = p[i];
        if (c == '\\' && i + 1 < n) {
            char e = p[++i];
            if (e == 's') {
                rc = in_class ? tok_buf_append(&buf, &len, &cap, WS_BODY, strlen(WS_BODY))
                              : tok_buf_append(&buf, &len, &cap, "[" WS_BODY "]", strlen(WS_BODY) + 2);
            } else if (e == 'S') {
                if (in_class) {
                    snprintf(err, errlen, "pre-tokenizer regex uses \\S inside a class (unsupported)");
                    free(buf);
                    return -1;
                }
                rc = tok_buf_append(&buf, &len, &cap, "[^" WS_BODY "]", strlen(WS_BODY) + 3);
            } else if (e == 'h' || e == 'H') {
                const char *h = in_class ? "0-9a-fA-F" : e == 'h' ? "[0-9a-fA-F]" : "[^0-9a-fA-F]";
                if (in_class && e == 'H') {
                    snprintf(err, errlen, "pre-tokenizer regex uses \\H inside a class (unsupported)");
                    free(buf);
                    return -1;
                }
                rc = tok_buf_append(&buf, &len, &cap, h, strlen(h));
            } else if (extend && e == 'p' && i + 3 < n && p[i + 1] == '{' && p[i + 3] == '}' && new_in_class(p[i + 2])) {
                const char *extra = new_in_class(p[i + 2]);
                char cls[5] = {'\\', 'p', '{', p[i + 2], '}'};
                if (!in_class) rc |= tok_buf_append(&buf, &len, &cap, "[", 1);
                rc |= tok_buf_append(&buf, &len, &cap, cls, 5) | tok_buf_append(&buf, &len, &cap, extra, strlen(extra));
                if (!in_class) rc |= tok_buf_append(&buf, &len, &cap, "]", 1);
                i += 3;
            } else {
                char two[2] = {'\\', e};
                rc = tok_buf_append(&buf, &len, &cap, two, 2);
            }
            continue;
        }
        if (!in_class && c == '[') {
            in_class = true;
            rc = tok_buf_append(&buf, &len, &cap, &c, 1);
            /* A ']' right after '[' or '[^' is a literal. */
            if (i + 1 < n && p[i + 1] == '^') rc = rc ? rc : tok_buf_append(&buf, &len, &cap, &p[++i], 1);
            if (i + 1 < n && p[i + 1] == ']') rc = rc ? rc : tok_buf_append(&buf, &len, &cap, "\\]", 2), i++;
            continue;
        }
        if (in_class && c == ']') in_class = false;
        rc = tok_buf_append(&buf, &len, &cap, &c, 1);
    }
    if (rc || !buf) {
        free(buf);
        snprintf(err, errlen, rc ? "out of memory" : "empty pre-tokenizer regex");
        return -1;
    }
    *out = buf;
    *olen = len;
    return 0;
}

int tok_add_stage(tokenizer *t, const char *pattern, size_t len, char *err, size_t errlen) {
    if (t->n_stages >= TOK_MAX_STAGES) { snprintf(err, errlen, "more than %d pre-tokenizer splits", TOK_MAX_STAGES); return -1; }
    for (int x = 0; x < 2; x++) {
        char *pc;
        size_t pclen;
        if (translate(pattern, len, x == 1, &pc, &pclen, err, errlen)) return -1;
        int ec;
        PCRE2_SIZE eoff;
        pcre2_code *re = pcre2_compile((PCRE2_SPTR)pc, pclen, PCRE2_UTF | PCRE2_UCP, &ec, &eoff, NULL);
        free(pc);
        if (!re) {
            PCRE2_UCHAR msg[160];
            pcre2_get_error_message(ec, msg, sizeof msg);
            snprintf(err, errlen, "pre-tokenizer regex /%.*s/ does not compile at %zu: %s", (int)len, pattern, (size_t)eoff, (char *)msg);
            if (x == 1) pcre2_code_free(t->re[0][t->n_stages]);
            return -1;
        }
        if (pcre2_jit_compile(re, PCRE2_JIT_COMPLETE) == 0) t->jit_ok[x] |= 1u << t->n_stages;
        t->re[x][t->n_stages] = re;
    }
    t->n_stages++;
    return 0;
}

static uint8_t new_cp_bits[0x110000 / 8];
static pthread_once_t new_cp_once = PTHREAD_ONCE_INIT;

/* Parses the "\x{HEX}" / "\x{HEX}-\x{HEX}" lists of tok_unicode_new.h into a bitmap. */
static void new_cp_init(void) {
    const char *lists[] = {TOK_NEW_L, TOK_NEW_M, TOK_NEW_N, TOK_NEW_P, TOK_NEW_S};
    for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++) {
        const char *q = lists[k];
        while ((q = strstr(q, "\\x{"))) {
            unsigned long a = strtoul(q + 3, (char **)&q, 16), b = a;
            if (*q == '}') q++;
            if (q[0] == '-' && q[1] == '\\' && q[2] == 'x' && q[3] == '{') {
                b = strtoul(q + 4, (char **)&q, 16);
                if (*q == '}') q++;
            }
            for (unsigned long c = a; c <= b && c < 0x110000; c++) new_cp_bits[c >> 3] |= (uint8_t)(1u << (c & 7));
        }
    }
}

bool tok_has_new_cp(const char *s, size_t n) {
    pthread_once(&new_cp_once, new_cp_init);
    const uint8_t *u = (const uint8_t *)s;
    for (size_t i = 0; i < n;) {
        if (i + 8 <= n) {
            uint64_t v;
            memcpy(&v, u + i, 8);
            if (!(v & 0x8080808080808080ull)) { i += 8; continue; }
        }
        uint8_t c = u[i];
        if (c < 0xE1) { i += c < 0x80 ? 1 : 2; continue; } /* below U+1000: nothing new there */
        uint32_t cp;
        if (c < 0xF0) { cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(u[i + 1] & 0x3F) << 6 | (u[i + 2] & 0x3F); i += 3; }
        else { cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(u[i + 1] & 0x3F) << 12 | (uint32_t)(u[i + 2] & 0x3F) << 6 | (u[i + 3] & 0x3F); i += 4; }
        if (new_cp_bits[cp >> 3] >> (cp & 7) & 1) return true;
    }
    return false;
}

/* GPT-2's byte -> character table: printable Latin-1 bytes map to themselves, the others to U+0100+k. */
static uint32_t byte_char(int b) {
    if ((b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)) return (uint32_t)b;
    int k = 0;
    for (int x = 0; x < b; x++)
        if (!((x >= 0x21 && x <= 0x7E) || (x >= 0xA1 && x <= 0xAC) || (x >= 0xAE && x <= 0xFF))) k++;
    return 256u + (uint32_t)k;
}

static uint32_t trie_new(tok_added_pass *ps, uint8_t byte) {
    if (ps->n_nodes == ps->cap) {
        size_t nc = ps->cap ? ps->cap * 2 : 64;
        tok_trie_node *n = realloc(ps->nodes, nc * sizeof *n);
        if (!n) return 0;
        ps->nodes = n;
        ps->cap = nc;
        if (ps->n_nodes == 0) ps->n_nodes = 1; /* index 0 means "none" */
    }
    ps->nodes[ps->n_nodes] = (tok_trie_node){0, 0, -1, byte};
    return (uint32_t)ps->n_nodes++;
}

static int trie_insert(tok_added_pass *ps, const tok_added *a, int32_t index) {
    const uint8_t *s = (const uint8_t *)a->text;
    uint32_t cur = ps->root[s[0]];
    if (!cur && !(cur = ps->root[s[0]] = trie_new(ps, s[0]))) return -1;
    for (size_t i = 1; i < a->len; i++) {
        uint32_t c = ps->nodes[cur].child;
        while (c && ps->nodes[c].byte != s[i]) c = ps->nodes[c].sibling;
        if (!c) {
            if (!(c = trie_new(ps, s[i]))) return -1;
            ps->nodes[c].sibling = ps->nodes[cur].child;
            ps->nodes[cur].child = c;
        }
        cur = c;
    }
    if (ps->nodes[cur].added < 0) ps->nodes[cur].added = index; /* same text twice: the first wins */
    ps->n++;
    return 0;
}

/* Lays out the by-id tables once every id is known. A file may name any id up to 2^31-1, and a
 * table indexed by it would follow the largest id (one hostile id: 24 GB): ids must stay within
 * the vocabulary, leaving at most as many unused ids below the highest as there are tokens. */
static int lay_out_ids(tokenizer *t, char *err, size_t errlen) {
    int32_t max_id = -1;
    for (size_t k = 0; k < t->n_ent; k++)
        if (t->ent[k].id > max_id) max_id = t->ent[k].id;
    if (max_id < 0) { snprintf(err, errlen, "the vocabulary is empty"); return -1; }
    size_t bound = 2 * t->n_ent + TOK_ID_SLACK;
    if ((size_t)max_id >= bound) {
        snprintf(err, errlen, "token id %d is far beyond the vocabulary (%zu tokens; ids must stay below %zu): "
                 "a corrupt or hostile file", max_id, t->n_ent, bound);
        return -1;
    }
    t->n_vocab = (size_t)max_id + 1;
    t->tok_str = calloc(t->n_vocab, sizeof *t->tok_str);
    t->tok_len = calloc(t->n_vocab, sizeof *t->tok_len);
    t->tok_flags = calloc(t->n_vocab, 1);
    if (!t->tok_str || !t->tok_len || !t->tok_flags) { snprintf(err, errlen, "out of memory"); return -1; }
    for (size_t k = 0; k < t->n_ent; k++) {
        const tok_entry *e = &t->ent[k];
        t->tok_str[e->id] = (char *)e->str;
        t->tok_len[e->id] = e->len;
        t->tok_flags[e->id] = e->flags;
    }
    free(t->ent);
    free(t->ent_by_id);
    t->ent = NULL;
    t->ent_by_id = NULL;
    /* BOS/EOS come from the file too: one that names no token would be read out of the table. */
    int32_t *ends[2] = {&t->bos_id, &t->eos_id};
    for (int i = 0; i < 2; i++) {
        int32_t id = *ends[i];
        if (id >= 0 && ((size_t)id >= t->n_vocab || !t->tok_str[id])) {
            snprintf(err, errlen, "the %s token id %d is not in the vocabulary", i ? "EOS" : "BOS", id);
            return -1;
        }
        if (id < -1) *ends[i] = -1;
    }
    return 0;
}

int tok_finish(tokenizer *t, char *err, size_t errlen) {
    if (lay_out_ids(t, err, errlen)) return -1;
    for (int b = 0; b < 256; b++) {
        uint32_t c = byte_char(b);
        char u[2];
        size_t n = 1;
        if (c < 0x80) u[0] = (char)c;
        else { u[0] = (char)(0xC0 | (c >> 6)); u[1] = (char)(0x80 | (c & 0x3F)); n = 2; }
        t->byte_id[b] = tok_lookup(t, u, n);
    }
    for (size_t i = 0; i < t->n_added; i++) {
        if (trie_insert(&t->pass[t->added[i].normalized ? 1 : 0], &t->added[i], (int32_t)i)) {
            snprintf(err, errlen, "out of memory");
            return -1;
        }
    }
    for (int p = 0; p < 2; p++) {
        int first = -1, distinct = 0;
        for (int b = 0; b < 256; b++)
            if (t->pass[p].root[b]) { first = b; distinct++; }
        t->pass[p].single_first = distinct == 1 ? first : -1;
    }
    free(t->scratch);
    t->scratch = NULL;
    return 0;
}

void tok_release(tokenizer *t) {
    for (size_t i = 0; i < t->n_stages; i++) {
        pcre2_code_free(t->re[0][i]);
        pcre2_code_free(t->re[1][i]);
    }
    void *b = t->arena_blocks;
    while (b) {
        void *next;
        memcpy(&next, b, sizeof next);
        free(b);
        b = next;
    }
    free(t->tok_str);
    free(t->tok_len);
    free(t->tok_flags);
    free(t->ent);
    free(t->ent_by_id);
    free(t->map);
    free(t->pairs);
    free(t->added);
    free(t->pass[0].nodes);
    free(t->pass[1].nodes);
    free(t->chat_template);
    free(t->scratch);
}

/* Bytes of the valid UTF-8 sequence starting at s[0] (1..4), or 0 when s starts an invalid one;
 * *bad gets the length of the maximal invalid subpart in that case. */
static size_t utf8_seq(const uint8_t *s, size_t n, size_t *bad) {
    uint8_t c = s[0];
    if (c < 0x80) return 1;
    size_t need;
    uint8_t lo = 0x80, hi = 0xBF;
    if (c >= 0xC2 && c <= 0xDF) need = 2;
    else if (c >= 0xE0 && c <= 0xEF) { need = 3; if (c == 0xE0) lo = 0xA0; if (c == 0xED) hi = 0x9F; }
    else if (c >= 0xF0 && c <= 0xF4) { need = 4; if (c == 0xF0) lo = 0x90; if (c == 0xF4) hi = 0x8F; }
    else { *bad = 1; return 0; }
    size_t k = 1;
    for (; k < need; k++) {
        if (k >= n) { *bad = k; return 0; }
        uint8_t x = s[k];
        if (k == 1 ? (x < lo || x > hi) : (x < 0x80 || x > 0xBF)) { *bad = k; return 0; }
    }
    return need;
}

size_t tok_utf8_check(const char *s, size_t n, bool *has_new) {
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0;
    bool nw = false;
    if (has_new) pthread_once(&new_cp_once, new_cp_init);
    while (i < n) {
        while (i + 8 <= n) {
            uint64_t v;
            memcpy(&v, u + i, 8);
            if (v & 0x8080808080808080ull) break;
            i += 8;
        }
        if (i >= n) break;
        size_t bad, k = utf8_seq(u + i, n - i, &bad);
        if (!k) break;
        if (has_new && k >= 3 && !nw) {
            uint32_t cp = k == 3 ? (uint32_t)(u[i] & 0x0F) << 12 | (uint32_t)(u[i + 1] & 0x3F) << 6 | (u[i + 2] & 0x3F)
                                 : (uint32_t)(u[i] & 0x07) << 18 | (uint32_t)(u[i + 1] & 0x3F) << 12 |
                                       (uint32_t)(u[i + 2] & 0x3F) << 6 | (u[i + 3] & 0x3F);
            nw = new_cp_bits[cp >> 3] >> (cp & 7) & 1;
        }
        i += k;
    }
    if (has_new) *has_new = nw;
    return i;
}

size_t tok_utf8_valid_prefix(const char *s, size_t n) { return tok_utf8_check(s, n, NULL); }

int tok_utf8_lossy(const char *s, size_t n, char **buf, size_t *len, size_t *cap) {
    const uint8_t *u = (const uint8_t *)s;
    size_t i = 0;
    while (i < n) {
        size_t good = tok_utf8_valid_prefix(s + i, n - i);
        if (good && tok_buf_append(buf, len, cap, s + i, good)) return -1;
        i += good;
        if (i >= n) break;
        size_t bad = 1;
        utf8_seq(u + i, n - i, &bad);
        if (tok_buf_append(buf, len, cap, "\xEF\xBF\xBD", 3)) return -1;
        i += bad;
    }
    if (!*buf && tok_buf_append(buf, len, cap, "", 0)) return -1;
    return 0;
}
