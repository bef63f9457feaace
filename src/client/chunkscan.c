/* chunkscan — a strict single-pass scanner for the few fields of a streamed chunk. */
#include "client/chunkscan.h"
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <string.h>
#include <stdlib.h>

typedef struct { const char *p, *end; } cur;

static void ws(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static int hex4(const char *s, unsigned *v);

/* Length of the valid escape sequence at q ('\\' ...), or -1. As jansson: \u0000 is refused (it
 * parses without JSON_ALLOW_NUL) and so is a surrogate that is not a high-low pair. */
static int escape_len(const char *q, const char *end) {
    if (end - q < 2) return -1;
    switch (q[1]) {
    case '"': case '\\': case '/': case 'b': case 'f': case 'n': case 'r': case 't': return 2;
    case 'u': break;
    default: return -1;
    }
    unsigned cp, lo;
    if (end - q < 6 || hex4(q + 2, &cp) < 0 || cp == 0 || (cp >= 0xDC00 && cp <= 0xDFFF)) return -1;
    if (cp < 0xD800 || cp > 0xDBFF) return 6;
    if (end - q < 12 || q[6] != '\\' || q[7] != 'u' || hex4(q + 8, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF) return -1;
    return 12;
}

/* Length of the valid UTF-8 sequence at q (a byte >= 0x80 first), or -1: no overlong forms,
 * surrogates or code points above U+10FFFF, which jansson refuses too. */
static int utf8_len(const char *q, const char *end) {
    unsigned char c0 = (unsigned char)q[0];
    int k = c0 >= 0xC2 && c0 <= 0xDF ? 2 : c0 >= 0xE0 && c0 <= 0xEF ? 3 : c0 >= 0xF0 && c0 <= 0xF4 ? 4 : -1;
    if (k < 0 || end - q < k) return -1;
    unsigned cp = c0 & (k == 2 ? 0x1F : k == 3 ? 0x0F : 0x07);
    for (int i = 1; i < k; i++) {
        unsigned char b = (unsigned char)q[i];
        if ((b & 0xC0) != 0x80) return -1;
        cp = cp << 6 | (b & 0x3F);
    }
    if ((k == 3 && cp < 0x800) || (k == 4 && cp < 0x10000) || (cp >= 0xD800 && cp <= 0xDFFF) || cp > 0x10FFFF) return -1;
    return k;
}

/* Bytes a string cannot hold as they are: control characters, the quote, the backslash, and the
 * start of a multi-byte UTF-8 sequence (checked apart). One table load per byte on the hot path. */
static const unsigned char special[256] = {
    [0x00 ... 0x1F] = 1, ['"'] = 1, ['\\'] = 1, [0x80 ... 0xFF] = 1,
};

/* The special bytes among the 8 at q, as the high bit of each (0: none): eight bytes per step,
 * since most of a chunk is plain ASCII inside strings and a byte-at-a-time table loop was a fifth
 * of the client's instructions per chunk. (x - 0x01..) & ~x & 0x80.. marks the zero bytes of x, and
 * (x - 0x20..) & ~x & 0x80.. the bytes below 0x20; a borrow can mark a byte above a marked one, never
 * below, so the lowest mark is exact: the first special byte (little-endian: the lowest byte is
 * the first in memory). */
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
#define HAVE_SPECIAL8 1
static inline uint64_t special8(const char *q) {
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    uint64_t v, quote, bs;
    memcpy(&v, q, 8);
    quote = v ^ (ones * '"');
    bs = v ^ (ones * '\\');
    return (((quote - ones) & ~quote) | ((bs - ones) & ~bs) | ((v - ones * 0x20) & ~v) | v) & highs;
}
#endif

/* At a '"': moves past the closing quote; span excludes the quotes. The string must be valid JSON
 * (escapes, UTF-8), or the chunk is left to jansson. */
static int str(cur *c, const char **s, size_t *n, bool *escaped) {
    if (c->p >= c->end || *c->p != '"') return -1;
    const char *q = ++c->p, *end = c->end;
    bool esc = false;
    for (;;) {
#ifdef HAVE_SPECIAL8
        uint64_t m;
        while (end - q >= 8 && !(m = special8(q))) q += 8;
        if (end - q >= 8) q += __builtin_ctzll(m) >> 3;
        else
#endif
            while (q < end && !special[(unsigned char)*q]) q++;
        if (q >= end) return -1;
        unsigned char ch = (unsigned char)*q;
        if (ch == '"') break;
        int k = ch == '\\' ? (esc = true, escape_len(q, end)) : ch >= 0x80 ? utf8_len(q, end) : -1;
        if (k < 0) return -1;
        q += k;
    }
    if (s) { *s = c->p; *n = (size_t)(q - c->p); }
    if (escaped) *escaped = esc;
    c->p = q + 1;
    return 0;
}

static int skip_value(cur *c, int depth);

static int lit(cur *c, const char *w) {
    size_t n = strlen(w);
    if ((size_t)(c->end - c->p) < n || memcmp(c->p, w, n)) return -1;
    c->p += n;
    return 0;
}

static bool digit(const cur *c) { return c->p < c->end && *c->p >= '0' && *c->p <= '9'; }

/* A JSON number (the grammar exactly, and within what jansson takes: integers in long long, reals
 * that do not overflow a double). *v, when asked for, must be an integer. */
static int num(cur *c, long long *v) {
    const char *s = c->p;
    bool real = false, exp_seen = false;
    if (c->p < c->end && *c->p == '-') c->p++;
    if (!digit(c)) return -1;
    if (*c->p++ != '0')
        while (digit(c)) c->p++;
    if (c->p < c->end && *c->p == '.') {
        c->p++, real = true;
        if (!digit(c)) return -1;
        while (digit(c)) c->p++;
    }
    if (c->p < c->end && (*c->p == 'e' || *c->p == 'E')) {
        c->p++, real = exp_seen = true;
        if (c->p < c->end && (*c->p == '+' || *c->p == '-')) c->p++;
        if (!digit(c)) return -1;
        while (digit(c)) c->p++;
    }
    size_t n = (size_t)(c->p - s);
    if (n >= 32) return -1;           /* long numbers are rare in a chunk: jansson decides */
    if (real && v) return -1;         /* a count that is not an integer */
    /* Only what could be out of range is converted: an integer of 19+ characters, a real with an
     * exponent (chunks carry ids and indices on the hot path; strtoll for each cost ~50 ns). */
    if (!(real ? exp_seen : n >= 19) && !v) return 0;
    char buf[32];
    memcpy(buf, s, n);
    buf[n] = 0;
    errno = 0;
    if (real) {
        double d = strtod(buf, NULL);
        return d == HUGE_VAL || d == -HUGE_VAL ? -1 : 0;
    }
    long long x = strtoll(buf, NULL, 10);
    if (errno == ERANGE) return -1;
    if (v) *v = x;
    return 0;
}

/* A JSON number as a double (llama.cpp's timings print full-precision doubles). They come once,
 * in the last chunk, so strtod's cost does not matter. */
static int real_num(cur *c, double *v) {
    const char *s = c->p;
    if (num(c, NULL) < 0) return -1;
    size_t n = (size_t)(c->p - s);
    char buf[32];
    memcpy(buf, s, n);
    buf[n] = 0;
    double d = strtod(buf, NULL);
    if (!isfinite(d)) return -1;
    *v = d;
    return 0;
}

static int skip_value(cur *c, int depth) {
    if (depth > 32) return -1;
    ws(c);
    if (c->p >= c->end) return -1;
    switch (*c->p) {
    case '"': return str(c, NULL, NULL, NULL);
    case 't': return lit(c, "true");
    case 'f': return lit(c, "false");
    case 'n': return lit(c, "null");
    case '{': case '[': {
        char close = *c->p == '{' ? '}' : ']';
        bool obj = close == '}';
        c->p++;
        ws(c);
        if (c->p < c->end && *c->p == close) { c->p++; return 0; }
        for (;;) {
            if (obj) {
                ws(c);
                if (str(c, NULL, NULL, NULL) < 0) return -1;
                ws(c);
                if (c->p >= c->end || *c->p++ != ':') return -1;
            }
            if (skip_value(c, depth + 1) < 0) return -1;
            ws(c);
            if (c->p >= c->end) return -1;
            if (*c->p == ',') { c->p++; continue; }
            if (*c->p == close) { c->p++; return 0; }
            return -1;
        }
    }
    default: return num(c, NULL);
    }
}

/* Iterates an object's members: calls fn for each key with the cursor at the value; fn must
 * consume the value. */
typedef int (*member_fn)(cur *c, const char *key, size_t klen, chunk_fields *f, int depth, unsigned *seen);

static int object(cur *c, member_fn fn, chunk_fields *f, int depth) {
    ws(c);
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; return 0; }
    unsigned seen = 0;   /* members fn interpreted so far (ONCE) */
    for (;;) {
        const char *k;
        size_t kl;
        bool kesc;
        ws(c);
        if (str(c, &k, &kl, &kesc) < 0 || kesc) return -1;
        ws(c);
        if (c->p >= c->end || *c->p++ != ':') return -1;
        ws(c);
        if (fn(c, k, kl, f, depth, &seen) < 0) return -1;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; continue; }
        if (*c->p == '}') { c->p++; return 0; }
        return -1;
    }
}

#define KEY(lit_) (kl == sizeof(lit_) - 1 && !memcmp(k, lit_, kl))
/* A member interpreted twice (or two that fill one field) would be read differently by jansson,
 * which keeps the last: such a chunk is left to jansson. */
#define ONCE(bit_) do { if (*seen & (bit_)) return -1; *seen |= (bit_); } while (0)

static int is_null(cur *c) { return c->end - c->p >= 4 && !memcmp(c->p, "null", 4); }

static int string_or_null(cur *c, const char **s, size_t *n, bool *esc) {
    if (is_null(c)) { c->p += 4; return 0; }
    return str(c, s, n, esc);
}

static int delta_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth, unsigned *seen) {
    if (KEY("content")) { ONCE(1); return string_or_null(c, &f->text, &f->text_len, &f->text_escaped); }
    if (KEY("reasoning_content") || KEY("reasoning")) {
        ONCE(2);
        return string_or_null(c, &f->reasoning, &f->reasoning_len, &f->reasoning_escaped);
    }
    return skip_value(c, depth + 1);
}

static int choice_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth, unsigned *seen) {
    /* text (completions) and delta (chat) both fill the text: one of them per choice */
    if (KEY("text")) { ONCE(1); return string_or_null(c, &f->text, &f->text_len, &f->text_escaped); }
    if (KEY("delta")) { ONCE(1); return is_null(c) ? (c->p += 4, 0) : object(c, delta_member, f, depth + 1); }
    if (KEY("finish_reason")) {
        ONCE(2);
        if (is_null(c)) { c->p += 4; return 0; }
        f->finished = true;
        return skip_value(c, depth + 1);
    }
    if (KEY("meta_info") && !is_null(c)) return -1;   /* SGLang's, per choice: the full parser reads it */
    return skip_value(c, depth + 1);
}

static int details_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth, unsigned *seen) {
    if (KEY("cached_tokens") && !is_null(c)) { ONCE(1); return num(c, &f->cached_tokens); }
    return skip_value(c, depth + 1);
}

static int out_details_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth, unsigned *seen) {
    if (KEY("reasoning_tokens") && !is_null(c)) { ONCE(1); return num(c, &f->reasoning_tokens); }
    return skip_value(c, depth + 1);
}

static int usage_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth, unsigned *seen) {
    if (KEY("prompt_tokens")) { ONCE(1); return num(c, &f->prompt_tokens); }
    if (KEY("completion_tokens")) { ONCE(2); return num(c, &f->completion_tokens); }
    if (KEY("prompt_tokens_details") && !is_null(c)) { ONCE(4); return object(c, details_member, f, depth + 1); }
    if (KEY("prompt_cache_hit_tokens") && !is_null(c) && f->cached_tokens < 0) { ONCE(8); return num(c, &f->cached_tokens); }
    if (KEY("completion_tokens_details") && !is_null(c)) { ONCE(16); return object(c, out_details_member, f, depth + 1); }
    return skip_value(c, depth + 1);
}

static int timings_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth, unsigned *seen) {
    if (KEY("prompt_n") && !is_null(c)) { ONCE(1); return num(c, &f->prompt_eval); }
    if (KEY("prompt_ms") && !is_null(c)) { ONCE(2); return real_num(c, &f->prompt_ms); }
    if (KEY("predicted_n") && !is_null(c)) { ONCE(4); return num(c, &f->predicted_n); }
    if (KEY("predicted_ms") && !is_null(c)) { ONCE(8); return real_num(c, &f->predicted_ms); }
    return skip_value(c, depth + 1);
}

static int top_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth, unsigned *seen) {
    if (KEY("choices")) {
        ONCE(1);
        if (is_null(c)) { c->p += 4; return 0; }
        if (c->p >= c->end || *c->p != '[') return -1;
        c->p++;
        ws(c);
        if (c->p < c->end && *c->p == ']') { c->p++; return 0; }
        f->has_choices = true;
        if (object(c, choice_member, f, depth + 1) < 0) return -1;
        for (;;) {   /* further choices (n > 1) are not measured: skip them */
            ws(c);
            if (c->p >= c->end) return -1;
            if (*c->p == ']') { c->p++; return 0; }
            if (*c->p++ != ',') return -1;
            if (skip_value(c, depth + 1) < 0) return -1;
        }
    }
    if (KEY("usage")) {
        ONCE(2);
        if (is_null(c)) { c->p += 4; return 0; }
        f->has_usage = true;
        return object(c, usage_member, f, depth + 1);
    }
    if (KEY("error")) {
        ONCE(4);
        if (is_null(c)) { c->p += 4; return 0; }
        f->has_error = true;
        return skip_value(c, depth + 1);
    }
    if (KEY("timings") && !is_null(c)) { ONCE(8); return object(c, timings_member, f, depth + 1); }
    /* vLLM's per-request metrics and SGLang's meta_info: rare (the last chunk), read by the full parser */
    if ((KEY("metrics") || KEY("meta_info")) && !is_null(c)) return -1;
    return skip_value(c, depth + 1);
}

int chunkscan(const char *json, size_t len, chunk_fields *out) {
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = out->cached_tokens = out->prompt_eval = -1;
    out->reasoning_tokens = out->predicted_n = -1;
    out->prompt_ms = out->predicted_ms = -1;
    cur c = { json, json + len };
    if (object(&c, top_member, out, 0) < 0) return -1;
    ws(&c);
    return c.p == c.end ? 0 : -1;
}

static int hex4(const char *s, unsigned *v) {
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char ch = s[i];
        *v <<= 4;
        if (ch >= '0' && ch <= '9') *v |= (unsigned)(ch - '0');
        else if (ch >= 'a' && ch <= 'f') *v |= (unsigned)(ch - 'a' + 10);
        else if (ch >= 'A' && ch <= 'F') *v |= (unsigned)(ch - 'A' + 10);
        else return -1;
    }
    return 0;
}

long chunkscan_unescape(const char *s, size_t len, char *dst, size_t cap) {
    size_t o = 0;
    for (size_t i = 0; i < len; i++) {
        if (o + 4 > cap) return -1;
        char ch = s[i];
        if (ch != '\\') { dst[o++] = ch; continue; }
        if (++i >= len) return -1;
        switch (s[i]) {
        case '"': dst[o++] = '"'; break;
        case '\\': dst[o++] = '\\'; break;
        case '/': dst[o++] = '/'; break;
        case 'b': dst[o++] = '\b'; break;
        case 'f': dst[o++] = '\f'; break;
        case 'n': dst[o++] = '\n'; break;
        case 'r': dst[o++] = '\r'; break;
        case 't': dst[o++] = '\t'; break;
        case 'u': {
            unsigned cp;
            if (i + 4 >= len || hex4(s + i + 1, &cp) < 0) return -1;
            i += 4;
            if (cp >= 0xD800 && cp <= 0xDBFF) {
                unsigned lo;
                if (i + 6 >= len || s[i + 1] != '\\' || s[i + 2] != 'u' || hex4(s + i + 3, &lo) < 0 || lo < 0xDC00 || lo > 0xDFFF) return -1;
                cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
                i += 6;
            } else if (cp >= 0xDC00 && cp <= 0xDFFF) return -1;
            if (cp < 0x80) dst[o++] = (char)cp;
            else if (cp < 0x800) { dst[o++] = (char)(0xC0 | cp >> 6); dst[o++] = (char)(0x80 | (cp & 0x3F)); }
            else if (cp < 0x10000) { dst[o++] = (char)(0xE0 | cp >> 12); dst[o++] = (char)(0x80 | ((cp >> 6) & 0x3F)); dst[o++] = (char)(0x80 | (cp & 0x3F)); }
            else { dst[o++] = (char)(0xF0 | cp >> 18); dst[o++] = (char)(0x80 | ((cp >> 12) & 0x3F)); dst[o++] = (char)(0x80 | ((cp >> 6) & 0x3F)); dst[o++] = (char)(0x80 | (cp & 0x3F)); }
            break;
        }
        default: return -1;
        }
    }
    return (long)o;
}
