/* tok_jscan — a purpose-built scanner for the two big members of tokenizer.json, model.vocab and
 * model.merges (95% of the 7.8 MB of DeepSeek-V3's file). jansson builds a tree of ~400k nodes for
 * them (~270 ms to parse and free); scanning them straight into the tables takes a fraction of that.
 * Everything else in the file is left to jansson, on a copy where those two values are replaced by
 * {} and []. Errors name the byte offset. */
#include "tokenizer/tok_internal.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *base, *p, *end;
    char *err;
    size_t errlen;
    char *buf;           /* decoded string (when it had escapes) */
    size_t buf_len, buf_cap;
} js;

static int fail(js *j, const char *what) {
    snprintf(j->err, j->errlen, "JSON error at offset %zu: %s", (size_t)(j->p - j->base), what);
    return -1;
}

static void ws(js *j) {
    while (j->p < j->end && (*j->p == ' ' || *j->p == '\n' || *j->p == '\r' || *j->p == '\t')) j->p++;
}

static int hex4(js *j, const char *q, uint32_t *v) {
    if (j->end - q < 4) return fail(j, "truncated \\u escape");
    *v = 0;
    for (int i = 0; i < 4; i++) {
        char c = q[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return fail(j, "bad \\u escape");
        *v = *v << 4 | (uint32_t)d;
    }
    return 0;
}

static int put_cp(js *j, uint32_t cp) {
    char u[4];
    size_t n;
    if (cp < 0x80) { u[0] = (char)cp; n = 1; }
    else if (cp < 0x800) { u[0] = (char)(0xC0 | cp >> 6); u[1] = (char)(0x80 | (cp & 0x3F)); n = 2; }
    else if (cp < 0x10000) { u[0] = (char)(0xE0 | cp >> 12); u[1] = (char)(0x80 | (cp >> 6 & 0x3F)); u[2] = (char)(0x80 | (cp & 0x3F)); n = 3; }
    else { u[0] = (char)(0xF0 | cp >> 18); u[1] = (char)(0x80 | (cp >> 12 & 0x3F)); u[2] = (char)(0x80 | (cp >> 6 & 0x3F)); u[3] = (char)(0x80 | (cp & 0x3F)); n = 4; }
    return tok_buf_append(&j->buf, &j->buf_len, &j->buf_cap, u, n);
}

/* Reads a string at j->p ('"'); *s and *n point into the file when it has no escapes, else into j->buf. */
static int str(js *j, const char **s, size_t *n) {
    if (j->p >= j->end || *j->p != '"') return fail(j, "expected a string");
    const char *q = ++j->p;
    while (q < j->end && *q != '"' && *q != '\\') q++;
    if (q >= j->end) return fail(j, "unterminated string");
    if (*q == '"') {
        *s = j->p;
        *n = (size_t)(q - j->p);
        j->p = q + 1;
        return 0;
    }
    j->buf_len = 0;
    if (tok_buf_append(&j->buf, &j->buf_len, &j->buf_cap, j->p, (size_t)(q - j->p))) return fail(j, "out of memory");
    while (q < j->end && *q != '"') {
        if (*q != '\\') {
            const char *r = q;
            while (r < j->end && *r != '"' && *r != '\\') r++;
            if (tok_buf_append(&j->buf, &j->buf_len, &j->buf_cap, q, (size_t)(r - q))) return fail(j, "out of memory");
            q = r;
            continue;
        }
        if (j->end - q < 2) break;
        char e = q[1], c;
        q += 2;
        switch (e) {
        case '"': c = '"'; break;
        case '\\': c = '\\'; break;
        case '/': c = '/'; break;
        case 'b': c = '\b'; break;
        case 'f': c = '\f'; break;
        case 'n': c = '\n'; break;
        case 'r': c = '\r'; break;
        case 't': c = '\t'; break;
        case 'u': {
            uint32_t v, lo;
            j->p = q;
            if (hex4(j, q, &v)) return -1;
            q += 4;
            if (v >= 0xD800 && v < 0xDC00 && j->end - q >= 6 && q[0] == '\\' && q[1] == 'u' && !hex4(j, q + 2, &lo) &&
                lo >= 0xDC00 && lo < 0xE000) {
                v = 0x10000 + ((v - 0xD800) << 10) + (lo - 0xDC00);
                q += 6;
            } else if (v >= 0xD800 && v < 0xE000) {
                v = 0xFFFD; /* lone surrogate: what a lossy conversion makes of it */
            }
            if (put_cp(j, v)) return fail(j, "out of memory");
            continue;
        }
        default: j->p = q - 2; return fail(j, "bad escape");
        }
        if (tok_buf_append(&j->buf, &j->buf_len, &j->buf_cap, &c, 1)) return fail(j, "out of memory");
    }
    if (q >= j->end) return fail(j, "unterminated string");
    j->p = q + 1;
    *s = j->buf;
    *n = j->buf_len;
    return 0;
}

static int skip_str(js *j) {
    const char *q = j->p + 1;
    for (;;) {
        while (q < j->end && *q != '"' && *q != '\\') q++;
        if (q >= j->end) { j->p = q; return fail(j, "unterminated string"); }
        if (*q == '"') break;
        q += 2;
    }
    j->p = q + 1;
    return 0;
}

/* Skips any value; containers by counting brackets outside strings. */
static int skip(js *j) {
    ws(j);
    if (j->p >= j->end) return fail(j, "truncated document");
    char c = *j->p;
    if (c == '"') return skip_str(j);
    if (c == '{' || c == '[') {
        int depth = 0;
        while (j->p < j->end) {
            c = *j->p;
            if (c == '"') { if (skip_str(j)) return -1; continue; }
            if (c == '{' || c == '[') depth++;
            else if (c == '}' || c == ']') {
                if (--depth == 0) { j->p++; return 0; }
            }
            j->p++;
        }
        return fail(j, "truncated document");
    }
    const char *q = j->p;
    while (q < j->end && *q != ',' && *q != '}' && *q != ']' && *q != ' ' && *q != '\n' && *q != '\r' && *q != '\t') q++;
    if (q == j->p) return fail(j, "unexpected character");
    j->p = q;
    return 0;
}

static int expect(js *j, char c) {
    ws(j);
    if (j->p >= j->end || *j->p != c) {
        char what[32];
        snprintf(what, sizeof what, "expected '%c'", c);
        return fail(j, what);
    }
    j->p++;
    return 0;
}

/* After a member or element: 1 if another follows (',' consumed), 0 at the closing bracket. */
static int next_item(js *j, char close) {
    ws(j);
    if (j->p < j->end && *j->p == ',') { j->p++; return 1; }
    if (j->p < j->end && *j->p == close) { j->p++; return 0; }
    return fail(j, close == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
}

static int parse_vocab(tokenizer *t, js *j) {
    if (expect(j, '{')) return -1;
    ws(j);
    if (j->p < j->end && *j->p == '}') { j->p++; return 0; }
    for (;;) {
        const char *k;
        size_t kl;
        ws(j);
        if (str(j, &k, &kl) || expect(j, ':')) return -1;
        ws(j);
        const char *e = j->p;
        uint64_t id = 0;
        while (e < j->end && *e >= '0' && *e <= '9' && id <= INT32_MAX) id = id * 10 + (uint64_t)(*e++ - '0');
        if (e == j->p || id > INT32_MAX) return fail(j, "vocab id is not a non-negative integer");
        j->p = e;
        if (tok_set_token(t, (int32_t)id, k, kl, j->err, j->errlen)) return -1;
        int r = next_item(j, '}');
        if (r <= 0) return r;
    }
}

static int parse_merges(tokenizer *t, js *j) {
    if (expect(j, '[')) return -1;
    ws(j);
    if (j->p < j->end && *j->p == ']') { j->p++; return 0; }
    char *a = NULL;
    size_t al = 0, ac = 0;
    int rc = -1;
    for (;;) {
        const char *s, *b;
        size_t n, bl;
        ws(j);
        if (j->p < j->end && *j->p == '[') { /* ["a", "b"] */
            j->p++;
            ws(j);
            if (str(j, &s, &n)) break;
            al = 0;
            if (tok_buf_append(&a, &al, &ac, s, n)) { fail(j, "out of memory"); break; }
            if (expect(j, ',')) break;
            ws(j);
            if (str(j, &b, &bl) || expect(j, ']')) break;
            if (tok_add_merge(t, a, al, b, bl, j->err, j->errlen)) break;
        } else { /* "a b" */
            if (str(j, &s, &n)) break;
            const char *sp = memchr(s, ' ', n);
            if (!sp) { fail(j, "merge without a space"); break; }
            if (tok_add_merge(t, s, (size_t)(sp - s), sp + 1, n - (size_t)(sp - s) - 1, j->err, j->errlen)) break;
        }
        int r = next_item(j, ']');
        if (r <= 0) { rc = r; break; }
    }
    free(a);
    return rc;
}

/* Finds model.vocab and model.merges, loads them into t (tok_init already done), and returns in
 * *skeleton a copy of the document with those two values emptied, for jansson. 1 when the document
 * has no such members (the caller then reports what is missing). */
int tok_jscan_model(tokenizer *t, const char *data, size_t len, char **skeleton, size_t *skel_len, char *err, size_t errlen) {
    js j = {data, data, data + len, err, errlen, NULL, 0, 0};
    const char *vr[2] = {0}, *mr[2] = {0};
    bool vocab_done = false, merges_done = false;
    int rc = -1;
    if (expect(&j, '{')) goto out;
    ws(&j);
    if (j.p < j.end && *j.p == '}') { rc = 1; goto out; }
    for (;;) {
        const char *k;
        size_t kl;
        ws(&j);
        if (str(&j, &k, &kl) || expect(&j, ':')) goto out;
        ws(&j);
        if (kl == 5 && !memcmp(k, "model", 5) && j.p < j.end && *j.p == '{') {
            j.p++;
            ws(&j);
            int more = !(j.p < j.end && *j.p == '}');
            if (!more) j.p++;
            while (more) {
                ws(&j);
                if (str(&j, &k, &kl) || expect(&j, ':')) goto out;
                ws(&j);
                const char *start = j.p;
                bool is_vocab = kl == 5 && !memcmp(k, "vocab", 5), is_merges = kl == 6 && !memcmp(k, "merges", 6);
                /* Parsed where they stand (one pass over the 7.8 MB) unless merges come before the vocab
                 * they refer to: then they are only located now and parsed after it. */
                if (is_vocab && j.p < j.end && *j.p == '{') {
                    if (parse_vocab(t, &j)) goto out;
                    vr[0] = start; vr[1] = j.p; vocab_done = true;
                } else if (is_merges && vocab_done && j.p < j.end && *j.p == '[') {
                    if (parse_merges(t, &j)) goto out;
                    mr[0] = start; mr[1] = j.p; merges_done = true;
                } else {
                    if (skip(&j)) goto out;
                    if (is_vocab) { vr[0] = start; vr[1] = j.p; }
                    if (is_merges) { mr[0] = start; mr[1] = j.p; }
                }
                if ((more = next_item(&j, '}')) < 0) goto out;
            }
        } else if (skip(&j)) {
            goto out;
        }
        int r = next_item(&j, '}');
        if (r < 0) goto out;
        if (r == 0) break;
    }
    if (!vr[0] || !mr[0] || *vr[0] != '{' || *mr[0] != '[') { rc = 1; goto out; }
    if (!merges_done) {
        j.p = mr[0];
        if (parse_merges(t, &j)) goto out;
    }
    /* The skeleton: vocab and merges emptied (first the one that comes first in the file). */
    const char *r1[2], *r2[2];
    const char *e1 = "{}", *e2 = "[]";
    if (vr[0] < mr[0]) { r1[0] = vr[0]; r1[1] = vr[1]; r2[0] = mr[0]; r2[1] = mr[1]; }
    else { r1[0] = mr[0]; r1[1] = mr[1]; r2[0] = vr[0]; r2[1] = vr[1]; e1 = "[]"; e2 = "{}"; }
    char *sk = NULL;
    size_t sl = 0, sc = 0;
    if (tok_buf_append(&sk, &sl, &sc, data, (size_t)(r1[0] - data)) || tok_buf_append(&sk, &sl, &sc, e1, 2) ||
        tok_buf_append(&sk, &sl, &sc, r1[1], (size_t)(r2[0] - r1[1])) || tok_buf_append(&sk, &sl, &sc, e2, 2) ||
        tok_buf_append(&sk, &sl, &sc, r2[1], (size_t)(data + len - r2[1]))) {
        free(sk);
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    *skeleton = sk;
    *skel_len = sl;
    rc = 0;
out:
    free(j.buf);
    return rc;
}
