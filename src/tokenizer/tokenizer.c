/* tokenizer — encode, count and decode with a loaded vocabulary, the HF `tokenizers` way:
 * 1. invalid UTF-8 becomes U+FFFD (what any string conversion does before HF sees the text);
 * 2. added tokens are split out (non-normalized ones first, then normalized ones; leftmost-longest);
 * 3. each remaining piece goes through the chain of regex splits (Isolated), each stage applied to the
 *    pieces of the previous one, streamed by recursion so nothing is allocated per piece;
 * 4. each final word is BPE-merged by rank over byte-level symbols, through a per-thread word cache.
 * Per-thread state (PCRE2 match data, JIT stack, word cache, scratch) lives in thread-local storage
 * freed at thread exit, so a const tokenizer serves many threads without locks. */
#include "tokenizer/tok_internal.h"
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_SLOTS 8192
#define CACHE_WORD 22
#define CACHE_IDS 10
#define SCAN_MAX 48          /* words up to this many bytes merge by linear scan, longer ones by heap */

typedef struct {
    uint64_t serial;         /* tokenizer the entry belongs to (0: empty) */
    uint8_t wlen, nids;
    char w[CACHE_WORD];
    int32_t ids[CACHE_IDS];
} cache_entry;

typedef struct { int32_t rank, pos, left, right, id; } heap_item;

typedef struct {
    pcre2_match_data *md;
    pcre2_match_context *mc;
    pcre2_jit_stack *js;
    cache_entry *cache;
    int32_t *sym, *prev, *next, *out;   /* BPE scratch, capacity cap_sym */
    size_t cap_sym;
    heap_item *heap;
    size_t cap_heap;
    char *text;                          /* lossy copy of invalid input */
    size_t text_cap;
} tok_tls;

typedef struct {
    int32_t *ids;
    size_t n, cap;
    bool store;
    int err;
} sink;

static pthread_key_t tls_key;
static pthread_once_t tls_once = PTHREAD_ONCE_INIT;

static void tls_destroy(void *p) {
    tok_tls *c = p;
    if (!c) return;
    pcre2_match_data_free(c->md);
    pcre2_match_context_free(c->mc);
    pcre2_jit_stack_free(c->js);
    free(c->cache);
    free(c->sym);
    free(c->prev);
    free(c->next);
    free(c->out);
    free(c->heap);
    free(c->text);
    free(c);
}

static void tls_make_key(void) { pthread_key_create(&tls_key, tls_destroy); }

static tok_tls *tls_get(void) {
    pthread_once(&tls_once, tls_make_key);
    tok_tls *c = pthread_getspecific(tls_key);
    if (c) return c;
    c = calloc(1, sizeof *c);
    if (!c) return NULL;
    c->md = pcre2_match_data_create(4, NULL);
    c->mc = pcre2_match_context_create(NULL);
    c->js = pcre2_jit_stack_create(32 * 1024, 4 * 1024 * 1024, NULL);
    c->cache = calloc(CACHE_SLOTS, sizeof *c->cache);
    if (!c->md || !c->mc || !c->js || !c->cache) { tls_destroy(c); return NULL; }
    pcre2_jit_stack_assign(c->mc, NULL, c->js);
    pthread_setspecific(tls_key, c);
    return c;
}

static int tls_reserve(tok_tls *c, size_t n) {
    if (n <= c->cap_sym) return 0;
    size_t nc = c->cap_sym ? c->cap_sym : 256;
    while (nc < n) nc *= 2;
    int32_t *a = realloc(c->sym, nc * sizeof *a);
    if (!a) return -1;
    c->sym = a;
    if (!(a = realloc(c->prev, nc * sizeof *a))) return -1;
    c->prev = a;
    if (!(a = realloc(c->next, nc * sizeof *a))) return -1;
    c->next = a;
    if (!(a = realloc(c->out, nc * sizeof *a))) return -1;
    c->out = a;
    c->cap_sym = nc;
    return 0;
}

static void sink_put(sink *s, const int32_t *ids, size_t n) {
    if (!s->store) { s->n += n; return; }
    if (s->n + n > s->cap) {
        size_t nc = s->cap ? s->cap : 64;
        while (nc < s->n + n) nc *= 2;
        int32_t *a = realloc(s->ids, nc * sizeof *a);
        if (!a) { s->err = -ENOMEM; return; }
        s->ids = a;
        s->cap = nc;
    }
    memcpy(s->ids + s->n, ids, n * sizeof *ids);
    s->n += n;
}

static inline const tok_pair *pair_find(const tokenizer *t, int32_t a, int32_t b) {
    uint64_t h = ((uint64_t)(uint32_t)a << 32 | (uint32_t)b) * 0x9E3779B97F4A7C15ull;
    size_t i = (h ^ (h >> 31)) & t->pairs_mask;
    for (;;) {
        const tok_pair *p = &t->pairs[i];
        if (p->rank < 0) return NULL;
        if (p->left == (uint32_t)a && p->right == (uint32_t)b) return p;
        i = (i + 1) & t->pairs_mask;
    }
}

/* Short words: repeatedly merge the lowest-ranked adjacent pair (leftmost on ties), which is what HF's
 * heap of merges produces. */
static size_t bpe_scan(const tokenizer *t, int32_t *s, size_t m) {
    int32_t rk[SCAN_MAX], nid[SCAN_MAX];
    for (size_t i = 0; i + 1 < m; i++) {
        const tok_pair *p = pair_find(t, s[i], s[i + 1]);
        rk[i] = p ? p->rank : INT32_MAX;
        nid[i] = p ? p->id : -1;
    }
    while (m > 1) {
        size_t best = 0;
        for (size_t i = 1; i + 1 < m; i++)
            if (rk[i] < rk[best]) best = i;
        if (rk[best] == INT32_MAX) break;
        s[best] = nid[best];
        for (size_t i = best + 1; i + 1 < m; i++) {
            s[i] = s[i + 1];
            rk[i] = rk[i + 1];
            nid[i] = nid[i + 1];
        }
        m--;
        for (size_t i = best ? best - 1 : 0; i <= best && i + 1 < m; i++) {
            const tok_pair *p = pair_find(t, s[i], s[i + 1]);
            rk[i] = p ? p->rank : INT32_MAX;
            nid[i] = p ? p->id : -1;
        }
    }
    return m;
}

static bool heap_less(const heap_item *a, const heap_item *b) {
    return a->rank < b->rank || (a->rank == b->rank && a->pos < b->pos);
}

static int heap_push(tok_tls *c, size_t *n, heap_item it) {
    if (*n >= c->cap_heap) {
        size_t nc = c->cap_heap ? c->cap_heap * 2 : 256;
        heap_item *h = realloc(c->heap, nc * sizeof *h);
        if (!h) return -1;
        c->heap = h;
        c->cap_heap = nc;
    }
    size_t i = (*n)++;
    while (i > 0) {
        size_t p = (i - 1) / 2;
        if (!heap_less(&it, &c->heap[p])) break;
        c->heap[i] = c->heap[p];
        i = p;
    }
    c->heap[i] = it;
    return 0;
}

static heap_item heap_pop(tok_tls *c, size_t *n) {
    heap_item top = c->heap[0], last = c->heap[--*n];
    size_t i = 0;
    for (;;) {
        size_t l = 2 * i + 1;
        if (l >= *n) break;
        if (l + 1 < *n && heap_less(&c->heap[l + 1], &c->heap[l])) l++;
        if (!heap_less(&c->heap[l], &last)) break;
        c->heap[i] = c->heap[l];
        i = l;
    }
    if (*n) c->heap[i] = last;
    return top;
}

static int heap_add_pair(const tokenizer *t, tok_tls *c, size_t *hn, int32_t l, int32_t r) {
    if (l < 0 || r < 0) return 0;
    const tok_pair *p = pair_find(t, c->sym[l], c->sym[r]);
    if (!p) return 0;
    return heap_push(c, hn, (heap_item){p->rank, l, c->sym[l], c->sym[r], p->id});
}

/* Long words: linked symbols and a heap of candidate merges ordered by (rank, position); stale
 * candidates (either side changed since it was pushed) are skipped. O(n log n). */
static int bpe_heap(const tokenizer *t, tok_tls *c, size_t m, size_t *out_m) {
    size_t hn = 0;
    for (size_t i = 0; i < m; i++) {
        c->prev[i] = (int32_t)i - 1;
        c->next[i] = i + 1 < m ? (int32_t)i + 1 : -1;
    }
    for (size_t i = 0; i + 1 < m; i++)
        if (heap_add_pair(t, c, &hn, (int32_t)i, (int32_t)i + 1)) return -1;
    while (hn) {
        heap_item it = heap_pop(c, &hn);
        int32_t r = c->next[it.pos];
        if (c->sym[it.pos] != it.left || r < 0 || c->sym[r] != it.right) continue;
        c->sym[it.pos] = it.id;
        c->sym[r] = -1;
        c->next[it.pos] = c->next[r];
        if (c->next[r] >= 0) c->prev[c->next[r]] = it.pos;
        if (heap_add_pair(t, c, &hn, c->prev[it.pos], it.pos) || heap_add_pair(t, c, &hn, it.pos, c->next[it.pos]))
            return -1;
    }
    size_t k = 0;
    for (int32_t i = m ? 0 : -1; i >= 0; i = c->next[i]) c->out[k++] = c->sym[i];
    *out_m = k;
    return 0;
}

/* BPE of one pre-tokenized word, through the per-thread cache. */
static void bpe_word(const tokenizer *t, tok_tls *c, const char *w, size_t n, sink *s) {
    cache_entry *ce = NULL;
    if (n <= CACHE_WORD) {
        ce = &c->cache[tok_hash_bytes(w, n) & (CACHE_SLOTS - 1)];
        if (ce->serial == t->serial && ce->wlen == n && !memcmp(ce->w, w, n)) {
            sink_put(s, ce->ids, ce->nids);
            return;
        }
    }
    if (tls_reserve(c, n + 1)) { s->err = -ENOMEM; return; }
    size_t m = 0;
    for (size_t i = 0; i < n; i++) {
        int32_t id = t->byte_id[(uint8_t)w[i]];
        if (id >= 0) c->sym[m++] = id;   /* a byte without a token is dropped, as HF does without unk */
    }
    const int32_t *res;
    if (m <= SCAN_MAX) {
        m = bpe_scan(t, c->sym, m);
        res = c->sym;
    } else {
        if (bpe_heap(t, c, m, &m)) { s->err = -ENOMEM; return; }
        res = c->out;
    }
    if (ce && m <= CACHE_IDS) {
        ce->serial = t->serial;
        ce->wlen = (uint8_t)n;
        ce->nids = (uint8_t)m;
        memcpy(ce->w, w, n);
        memcpy(ce->ids, res, m * sizeof *res);
    }
    sink_put(s, res, m);
}

/* Stage k of the regex chain on one piece: matches and the gaps between them are both pieces
 * (HF Split, behavior Isolated), each handed to stage k+1; after the last stage, BPE. ext: the piece
 * holds code points newer than PCRE2's tables, so the extended regexes are used; re-checked on each
 * sub-piece, so one new emoji slows only the pieces around it. */
static void pretok(const tokenizer *t, tok_tls *c, size_t k, const char *p, size_t n, int ext, sink *s);

static void pretok_child(const tokenizer *t, tok_tls *c, size_t k, const char *p, size_t n, int ext, sink *s) {
    pretok(t, c, k, p, n, ext && tok_has_new_cp(p, n), s);
}

static void pretok(const tokenizer *t, tok_tls *c, size_t k, const char *p, size_t n, int ext, sink *s) {
    if (n == 0 || s->err) return;
    if (k == t->n_stages) { bpe_word(t, c, p, n, s); return; }
    const pcre2_code *re = t->re[ext][k];
    bool jit = t->jit_ok[ext] >> k & 1;
    size_t pos = 0, search = 0;
    while (search < n && !s->err) {
        int rc = jit ? pcre2_jit_match(re, (PCRE2_SPTR)p, n, search, 0, c->md, c->mc)
                     : pcre2_match(re, (PCRE2_SPTR)p, n, search, PCRE2_NO_UTF_CHECK, c->md, c->mc);
        if (rc == PCRE2_ERROR_NOMATCH) break;
        if (rc < 0) { s->err = -EINVAL; return; }
        PCRE2_SIZE *ov = pcre2_get_ovector_pointer(c->md);
        size_t ms = ov[0], me = ov[1];
        if (me == ms) { /* empty match: no piece; move on one character */
            search = me + 1;
            while (search < n && ((uint8_t)p[search] & 0xC0) == 0x80) search++;
            continue;
        }
        if (ms > pos) pretok_child(t, c, k + 1, p + pos, ms - pos, ext, s);
        pretok_child(t, c, k + 1, p + ms, me - ms, ext, s);
        pos = search = me;
    }
    if (pos < n) pretok_child(t, c, k + 1, p + pos, n - pos, ext, s);
}

/* Unicode White_Space (HF's char::is_whitespace) of the character starting at p. */
static size_t ws_len_at(const char *p, size_t n) {
    uint8_t c = (uint8_t)p[0];
    if (c == ' ' || (c >= 9 && c <= 13)) return 1;
    if (n >= 2 && c == 0xC2 && ((uint8_t)p[1] == 0x85 || (uint8_t)p[1] == 0xA0)) return 2;
    if (n >= 3 && c == 0xE1 && (uint8_t)p[1] == 0x9A && (uint8_t)p[2] == 0x80) return 3;
    if (n >= 3 && c == 0xE2 && (uint8_t)p[1] == 0x80) {
        uint8_t d = (uint8_t)p[2];
        if (d <= 0x8A || d == 0xA8 || d == 0xA9 || d == 0xAF) return 3;
    }
    if (n >= 3 && c == 0xE2 && (uint8_t)p[1] == 0x81 && (uint8_t)p[2] == 0x9F) return 3;
    if (n >= 3 && c == 0xE3 && (uint8_t)p[1] == 0x80 && (uint8_t)p[2] == 0x80) return 3;
    return 0;
}

/* Added-token pass `pass` over p[0..n): matches become their ids, the text between goes to the next
 * pass (or the pre-tokenizer after the last one). */
static void split_added(const tokenizer *t, tok_tls *c, int pass, const char *p, size_t n, bool ext, sink *s) {
    if (n == 0 || s->err) return;
    if (pass == 2) { pretok(t, c, 0, p, n, ext && tok_has_new_cp(p, n), s); return; }
    const tok_added_pass *ps = &t->pass[pass];
    if (ps->n == 0) { split_added(t, c, pass + 1, p, n, ext, s); return; }
    size_t gap = 0;
    for (size_t i = 0; i < n; i++) {
        if (ps->single_first >= 0) { /* DeepSeek: every added token starts with '<' */
            const char *q = memchr(p + i, ps->single_first, n - i);
            if (!q) break;
            i = (size_t)(q - p);
        }
        uint32_t node = ps->root[(uint8_t)p[i]];
        if (!node) continue;
        const tok_added *hit = NULL;
        for (size_t j = i + 1;; j++) { /* walk the trie; the last token end seen is the longest match */
            if (ps->nodes[node].added >= 0) hit = &t->added[ps->nodes[node].added];
            if (j >= n) break;
            uint32_t c = ps->nodes[node].child;
            while (c && ps->nodes[c].byte != (uint8_t)p[j]) c = ps->nodes[c].sibling;
            if (!c) break;
            node = c;
        }
        if (!hit) continue;
        size_t ms = i, me = i + hit->len;
        if (hit->lstrip) {
            while (ms > gap) {
                size_t j = ms - 1;
                while (j > gap && ((uint8_t)p[j] & 0xC0) == 0x80) j--;
                if (!ws_len_at(p + j, ms - j)) break;
                ms = j;
            }
        }
        if (hit->rstrip) {
            size_t w;
            while (me < n && (w = ws_len_at(p + me, n - me))) me += w;
        }
        split_added(t, c, pass + 1, p + gap, ms - gap, ext, s);
        sink_put(s, &hit->id, 1);
        gap = me;
        i = me - 1;
    }
    split_added(t, c, pass + 1, p + gap, n - gap, ext, s);
}

static int encode_into(const tokenizer *t, const char *text, size_t len, sink *s) {
    tok_tls *c = tls_get();
    if (!c) return -ENOMEM;
    bool has_new;
    if (tok_utf8_check(text, len, &has_new) != len) {
        size_t tl = 0;
        if (tok_utf8_lossy(text, len, &c->text, &tl, &c->text_cap)) return -ENOMEM;
        text = c->text;
        len = tl;
        tok_utf8_check(text, len, &has_new);
    }
    split_added(t, c, 0, text, len, has_new, s);
    return s->err;
}

int tokenizer_encode(const tokenizer *t, const char *text, size_t len, bool add_bos, int32_t **ids, size_t *n_ids) {
    sink s = {.store = true};
    if (add_bos && t->bos_id >= 0) sink_put(&s, &t->bos_id, 1);
    int rc = encode_into(t, text, len, &s);
    if (rc) { free(s.ids); *ids = NULL; *n_ids = 0; return rc; }
    *ids = s.ids;
    *n_ids = s.n;
    return 0;
}

size_t tokenizer_count(const tokenizer *t, const char *text, size_t len) {
    sink s = {.store = false};
    if (encode_into(t, text, len, &s)) return (size_t)-1;
    return s.n;
}

/* Byte of a byte-level character (U+0021..U+0143), -1 if the character is not one. */
static int16_t char_byte_tab[324];
static pthread_once_t char_byte_once = PTHREAD_ONCE_INIT;

static bool byte_printable(int b) { return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF); }

static void char_byte_init(void) {
    int k = 0;
    for (int c = 0; c < 324; c++) char_byte_tab[c] = -1;
    for (int b = 0; b < 256; b++) {
        if (byte_printable(b)) char_byte_tab[b] = (int16_t)b;
        else char_byte_tab[256 + k++] = (int16_t)b;
    }
}

static int char_byte(uint32_t c) {
    pthread_once(&char_byte_once, char_byte_init);
    return c < 324 ? char_byte_tab[c] : -1;
}

/* Appends a model token's bytes: each character mapped back to its byte, or the token's own text
 * when one of its characters is not a byte-level character (HF ByteLevel decoder). */
static int decode_token(const char *s, size_t n, char **buf, size_t *len, size_t *cap) {
    size_t start = *len;
    for (size_t i = 0; i < n;) {
        uint8_t c0 = (uint8_t)s[i];
        uint32_t cp;
        size_t k;
        if (c0 < 0x80) { cp = c0; k = 1; }
        else if ((c0 & 0xE0) == 0xC0 && i + 1 < n) { cp = (uint32_t)(c0 & 0x1F) << 6 | ((uint8_t)s[i + 1] & 0x3F); k = 2; }
        else { cp = 0xFFFFFFFF; k = 1; }
        int b = char_byte(cp);
        if (b < 0) { *len = start; return tok_buf_append(buf, len, cap, s, n); }
        char ch = (char)b;
        if (tok_buf_append(buf, len, cap, &ch, 1)) return -1;
        i += k;
    }
    return 0;
}

int tokenizer_decode(const tokenizer *t, const int32_t *ids, size_t n, char **out, size_t *len) {
    *out = NULL;
    *len = 0;
    char *res = NULL, *bytes = NULL;
    size_t rl = 0, rc = 0, bl = 0, bc = 0;
    int err = 0;
    for (size_t i = 0; i <= n && !err; i++) {
        bool flush = i == n;
        int32_t id = i < n ? ids[i] : -1;
        bool known = i < n && tokenizer_id_known(t, id);
        if (known && (t->tok_flags[id] & TOK_F_ADDED)) flush = true;
        if (flush && bl) {
            err = tok_utf8_lossy(bytes, bl, &res, &rl, &rc);
            bl = 0;
        }
        if (!known || err) continue;
        if (t->tok_flags[id] & TOK_F_ADDED) err = tok_buf_append(&res, &rl, &rc, t->tok_str[id], t->tok_len[id]);
        else err = decode_token(t->tok_str[id], t->tok_len[id], &bytes, &bl, &bc);
    }
    free(bytes);
    if (!err && !res) err = tok_buf_append(&res, &rl, &rc, "", 0);
    if (err) { free(res); return -ENOMEM; }
    *out = res;
    *len = rl;
    return 0;
}

int32_t tokenizer_bos_id(const tokenizer *t) { return t->bos_id; }
int32_t tokenizer_eos_id(const tokenizer *t) { return t->eos_id; }
size_t tokenizer_vocab_size(const tokenizer *t) { return t->n_vocab; }
bool tokenizer_add_bos_default(const tokenizer *t) { return t->add_bos; }

bool tokenizer_id_known(const tokenizer *t, int32_t id) {
    return id >= 0 && (size_t)id < t->n_vocab && t->tok_str[id] && !(t->tok_flags[id] & TOK_F_HIDDEN);
}

const char *tokenizer_token_text(const tokenizer *t, int32_t id) {
    if (id < 0 || (size_t)id >= t->n_vocab) return NULL;
    return t->tok_str[id];
}

int tokenizer_load(const char *path, tokenizer **out, char *err, size_t errlen) {
    *out = NULL;
    struct stat dst;
    if (stat(path, &dst) == 0 && S_ISDIR(dst.st_mode)) { /* a model directory: its tokenizer.json */
        size_t pl = strlen(path);
        char *jp = malloc(pl + 16);
        if (!jp) { snprintf(err, errlen, "out of memory"); return -1; }
        snprintf(jp, pl + 16, "%s/tokenizer.json", path);
        int rc = tokenizer_load(jp, out, err, errlen);
        free(jp);
        return rc;
    }
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { snprintf(err, errlen, "cannot open tokenizer '%s': %s", path, strerror(errno)); return -1; }
    struct stat st;
    if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
        snprintf(err, errlen, "tokenizer '%s' is not a regular file", path);
        close(fd);
        return -1;
    }
    size_t len = (size_t)st.st_size;
    if (len == 0) { snprintf(err, errlen, "tokenizer '%s' is empty", path); close(fd); return -1; }
    /* Mapped, not read: a GGUF model file can be hundreds of GB and only its header is needed. */
    void *map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (map == MAP_FAILED) { snprintf(err, errlen, "cannot map '%s': %s", path, strerror(errno)); return -1; }
    tokenizer *t = calloc(1, sizeof *t);
    if (!t) { munmap(map, len); snprintf(err, errlen, "out of memory"); return -1; }
    int rc;
    if (len >= 4 && !memcmp(map, "GGUF", 4)) {
        rc = tok_load_gguf(t, path, map, len, err, errlen);
    } else {
        const char *d = map;
        size_t i = 0;
        while (i < len && (d[i] == ' ' || d[i] == '\n' || d[i] == '\r' || d[i] == '\t')) i++;
        if (i < len && d[i] == '{') rc = tok_load_json(t, path, d, len, err, errlen);
        else { snprintf(err, errlen, "'%s' is neither a tokenizer.json nor a GGUF file", path); rc = -1; }
    }
    munmap(map, len);
    if (rc) {
        tok_release(t);
        free(t);
        return rc < 0 ? rc : -1;
    }
    *out = t;
    return 0;
}

void tokenizer_free(tokenizer *t) {
    if (!t) return;
    tok_release(t);
    free(t);
}

int tokenizer_gguf_metadata(const char *path, gguf_meta_fn fn, void *ctx, uint64_t *n_tensors, char *err, size_t errlen) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) { snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno)); return -1; }
    struct stat st;
    size_t len = 0;
    void *map = MAP_FAILED;
    if (!fstat(fd, &st) && S_ISREG(st.st_mode) && st.st_size >= 4) {
        len = (size_t)st.st_size;
        map = mmap(NULL, len, PROT_READ, MAP_PRIVATE, fd, 0);   /* only the header pages are read */
    }
    close(fd);
    if (map == MAP_FAILED || memcmp(map, "GGUF", 4)) {
        snprintf(err, errlen, "'%s' is not a GGUF file", path);
        if (map != MAP_FAILED) munmap(map, len);
        return -1;
    }
    char why[256];
    int rc = tok_gguf_metadata(map, len, fn, ctx, n_tensors, why, sizeof why);
    if (rc) snprintf(err, errlen, "%s: %s", path, why);
    munmap(map, len);
    return rc;
}
