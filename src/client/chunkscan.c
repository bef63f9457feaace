/* chunkscan — a strict single-pass scanner for the few fields of a streamed chunk. */
#include "client/chunkscan.h"
#include <string.h>
#include <stdlib.h>

typedef struct { const char *p, *end; } cur;

static void ws(cur *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

/* At a '"': moves past the closing quote; span excludes the quotes. */
static int str(cur *c, const char **s, size_t *n, bool *escaped) {
    if (c->p >= c->end || *c->p != '"') return -1;
    const char *q = ++c->p;
    bool esc = false;
    while (q < c->end) {
        unsigned char ch = (unsigned char)*q;
        if (ch == '"') break;
        if (ch == '\\') { esc = true; q += 2; continue; }
        if (ch < 0x20) return -1;
        q++;
    }
    if (q >= c->end) return -1;
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

static int num(cur *c, long long *v) {
    const char *s = c->p;
    if (c->p < c->end && *c->p == '-') c->p++;
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return -1;
    while (c->p < c->end && ((*c->p >= '0' && *c->p <= '9') || *c->p == '.' || *c->p == 'e' || *c->p == 'E' || *c->p == '+' || *c->p == '-')) c->p++;
    if (v) {
        char buf[32];
        size_t n = (size_t)(c->p - s);
        if (n >= sizeof buf) return -1;
        memcpy(buf, s, n);
        buf[n] = 0;
        char *e;
        *v = strtoll(buf, &e, 10);
        if (*e) return -1;   /* not an integer where one was wanted */
    }
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
typedef int (*member_fn)(cur *c, const char *key, size_t klen, chunk_fields *f, int depth);

static int object(cur *c, member_fn fn, chunk_fields *f, int depth) {
    ws(c);
    if (c->p >= c->end || *c->p != '{') return -1;
    c->p++;
    ws(c);
    if (c->p < c->end && *c->p == '}') { c->p++; return 0; }
    for (;;) {
        const char *k;
        size_t kl;
        bool kesc;
        ws(c);
        if (str(c, &k, &kl, &kesc) < 0 || kesc) return -1;
        ws(c);
        if (c->p >= c->end || *c->p++ != ':') return -1;
        ws(c);
        if (fn(c, k, kl, f, depth) < 0) return -1;
        ws(c);
        if (c->p >= c->end) return -1;
        if (*c->p == ',') { c->p++; continue; }
        if (*c->p == '}') { c->p++; return 0; }
        return -1;
    }
}

#define KEY(lit_) (kl == sizeof(lit_) - 1 && !memcmp(k, lit_, kl))

static int is_null(cur *c) { return c->end - c->p >= 4 && !memcmp(c->p, "null", 4); }

static int string_or_null(cur *c, const char **s, size_t *n, bool *esc) {
    if (is_null(c)) { c->p += 4; return 0; }
    return str(c, s, n, esc);
}

static int delta_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth) {
    if (KEY("content")) return string_or_null(c, &f->text, &f->text_len, &f->text_escaped);
    if (KEY("reasoning_content") || KEY("reasoning")) return string_or_null(c, &f->reasoning, &f->reasoning_len, &f->reasoning_escaped);
    return skip_value(c, depth + 1);
}

static int choice_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth) {
    if (KEY("text")) return string_or_null(c, &f->text, &f->text_len, &f->text_escaped);
    if (KEY("delta")) return is_null(c) ? (c->p += 4, 0) : object(c, delta_member, f, depth + 1);
    if (KEY("finish_reason")) {
        if (is_null(c)) { c->p += 4; return 0; }
        f->finished = true;
        return skip_value(c, depth + 1);
    }
    return skip_value(c, depth + 1);
}

static int details_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth) {
    if (KEY("cached_tokens") && !is_null(c)) return num(c, &f->cached_tokens);
    return skip_value(c, depth + 1);
}

static int usage_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth) {
    if (KEY("prompt_tokens")) return num(c, &f->prompt_tokens);
    if (KEY("completion_tokens")) return num(c, &f->completion_tokens);
    if (KEY("prompt_tokens_details") && !is_null(c)) return object(c, details_member, f, depth + 1);
    if (KEY("prompt_cache_hit_tokens") && !is_null(c) && f->cached_tokens < 0) return num(c, &f->cached_tokens);
    return skip_value(c, depth + 1);
}

static int timings_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth) {
    if (KEY("prompt_n") && !is_null(c)) return num(c, &f->prompt_eval);
    return skip_value(c, depth + 1);
}

static int top_member(cur *c, const char *k, size_t kl, chunk_fields *f, int depth) {
    if (KEY("choices")) {
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
        if (is_null(c)) { c->p += 4; return 0; }
        f->has_usage = true;
        return object(c, usage_member, f, depth + 1);
    }
    if (KEY("error")) {
        if (is_null(c)) { c->p += 4; return 0; }
        f->has_error = true;
        return skip_value(c, depth + 1);
    }
    if (KEY("timings") && !is_null(c)) return object(c, timings_member, f, depth + 1);
    return skip_value(c, depth + 1);
}

int chunkscan(const char *json, size_t len, chunk_fields *out) {
    memset(out, 0, sizeof *out);
    out->prompt_tokens = out->completion_tokens = out->cached_tokens = out->prompt_eval = -1;
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
