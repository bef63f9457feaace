/* sse — incremental SSE parsing (the WHATWG event-stream rules, plus llama.cpp's `error:` field).
 * The common case — whole lines inside one read — is parsed straight from the read buffer; only a
 * line split across reads is copied into the carry-over buffer first. */
#include "client/sse.h"
#include <stdlib.h>
#include <string.h>

void sse_init(sse_parser *p, size_t max_event_bytes) {
    memset(p, 0, sizeof *p);
    p->max = max_event_bytes ? max_event_bytes : (1u << 20);
}

void sse_free(sse_parser *p) {
    free(p->line.p); free(p->data.p); free(p->event.p); free(p->error.p);
    memset(p, 0, sizeof *p);
}

static int buf_append(sse_buf *b, const char *s, size_t n, size_t max) {
    size_t need = b->len + n + 1;
    if (need > max + 1) return -1;
    if (need > b->cap) {
        size_t nc = b->cap ? b->cap : 256;
        while (nc < need) nc *= 2;
        char *np = realloc(b->p, nc);
        if (!np) return -1;
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
    return 0;
}

static int buf_set(sse_buf *b, const char *s, size_t n, size_t max) {
    b->len = 0;
    return buf_append(b, s, n, max);
}

static int dispatch(sse_parser *p, sse_event_fn fn, void *ctx) {
    if (!p->has_data && !p->has_event && !p->has_error) return 0;
    sse_event ev = {
        .data = p->has_data ? p->data.p : NULL,
        .data_len = p->has_data ? p->data.len : 0,
        .event = p->has_event ? p->event.p : NULL,
        .error = p->has_error ? p->error.p : NULL,
    };
    p->has_data = p->has_event = p->has_error = false;
    p->n_events++;
    return fn ? fn(ctx, &ev) : 0;
}

/* One complete line (without its terminator). */
static int take_line(sse_parser *p, const char *line, size_t n, sse_event_fn fn, void *ctx) {
    if (n == 0) return dispatch(p, fn, ctx);
    if (line[0] == ':') { p->n_comments++; return 0; }
    const char *colon = memchr(line, ':', n);
    size_t name_len = colon ? (size_t)(colon - line) : n;
    const char *v = colon ? colon + 1 : line + n;
    if (v < line + n && *v == ' ') v++;
    size_t vlen = (size_t)(line + n - v);
    if (name_len == 4 && !memcmp(line, "data", 4)) {
        if (p->has_data) {
            if (buf_append(&p->data, "\n", 1, p->max) < 0 || buf_append(&p->data, v, vlen, p->max) < 0) return -1;
        } else {
            if (!p->data.p && buf_set(&p->data, "", 0, p->max) < 0) return -1;
            if (buf_set(&p->data, v, vlen, p->max) < 0) return -1;
            p->has_data = true;
        }
    } else if (name_len == 5 && !memcmp(line, "event", 5)) {
        if (buf_set(&p->event, v, vlen, p->max) < 0) return -1;
        p->has_event = true;
    } else if (name_len == 5 && !memcmp(line, "error", 5)) {
        if (buf_set(&p->error, v, vlen, p->max) < 0) return -1;
        p->has_error = true;
    }
    /* id:, retry: and unknown fields are ignored, as the spec says */
    return 0;
}

int sse_feed(sse_parser *p, const char *bytes, size_t n, sse_event_fn fn, void *ctx) {
    size_t i = 0;
    static const unsigned char bom[3] = { 0xEF, 0xBB, 0xBF };
    while (p->bom_pos < 3 && i < n) {
        /* a UTF-8 BOM may open the stream, possibly split across reads */
        if ((unsigned char)bytes[i] == bom[p->bom_pos]) { p->bom_pos++; i++; continue; }
        if (p->bom_pos > 0 && buf_append(&p->line, (const char *)bom, p->bom_pos, p->max) < 0) return -1;
        p->bom_pos = 3;
    }
    while (i < n) {
        if (p->last_was_cr) {
            p->last_was_cr = false;
            if (bytes[i] == '\n') { i++; continue; }
        }
        /* the line ends at the first CR or LF: memchr for each (a byte loop was a fifth of the
         * client's instructions per chunk) */
        const char *lf = memchr(bytes + i, '\n', n - i);
        size_t j = lf ? (size_t)(lf - bytes) : n;
        const char *cr = memchr(bytes + i, '\r', j - i);
        if (cr) j = (size_t)(cr - bytes);
        if (j == n) {   /* incomplete line: carry it over */
            if (buf_append(&p->line, bytes + i, j - i, p->max) < 0) return -1;
            break;
        }
        if (bytes[j] == '\r') p->last_was_cr = true;
        int rc;
        if (p->line.len) {
            if (buf_append(&p->line, bytes + i, j - i, p->max) < 0) return -1;
            rc = take_line(p, p->line.p, p->line.len, fn, ctx);
            p->line.len = 0;
        } else {
            rc = take_line(p, bytes + i, j - i, fn, ctx);
        }
        if (rc) return rc;
        i = j + 1;
    }
    return 0;
}

int sse_finish(sse_parser *p, sse_event_fn fn, void *ctx) {
    int rc = 0;
    if (p->line.len) {
        rc = take_line(p, p->line.p, p->line.len, fn, ctx);
        p->line.len = 0;
    }
    if (!rc) rc = dispatch(p, fn, ctx);
    return rc;
}
