/* rbuf — the report's growable text buffer, its escapers (HTML, Markdown cell, CSV field) and
 * number formatting. Every string that comes from a document goes through an escaper: a results
 * file may hold anything (a model name, an error body), and the page must stay inert. */
#include "report/report_internal.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void rb_init(rbuf *b) { memset(b, 0, sizeof *b); }

void rb_free(rbuf *b) {
    free(b->p);
    memset(b, 0, sizeof *b);
}

static bool rb_reserve(rbuf *b, size_t extra) {
    if (b->oom) return false;
    if (b->len + extra + 1 <= b->cap) return true;
    size_t cap = b->cap ? b->cap : 4096;
    while (cap < b->len + extra + 1) cap *= 2;
    char *p = realloc(b->p, cap);
    if (!p) {
        b->oom = true;
        return false;
    }
    b->p = p;
    b->cap = cap;
    return true;
}

void rb_putn(rbuf *b, const char *s, size_t n) {
    if (!rb_reserve(b, n)) return;
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = 0;
}

void rb_puts(rbuf *b, const char *s) {
    if (s) rb_putn(b, s, strlen(s));
}

void rb_printf(rbuf *b, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    char small[512];
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if ((size_t)n < sizeof small) {
        rb_putn(b, small, (size_t)n);
        return;
    }
    if (!rb_reserve(b, (size_t)n)) return;
    va_start(ap, fmt);
    vsnprintf(b->p + b->len, (size_t)n + 1, fmt, ap);
    va_end(ap);
    b->len += (size_t)n;
}

void rb_esc(rbuf *b, const char *s) {
    if (!s) return;
    const char *run = s;
    for (; *s; s++) {
        const char *ent = NULL;
        switch (*s) {
        case '&': ent = "&amp;"; break;
        case '<': ent = "&lt;"; break;
        case '>': ent = "&gt;"; break;
        case '"': ent = "&quot;"; break;
        case '\'': ent = "&#39;"; break;
        default: break;
        }
        /* control characters other than tab/newline are not valid HTML text: drop them */
        if (!ent && (unsigned char)*s < 0x20 && *s != '\n' && *s != '\t') ent = "";
        if (!ent) continue;
        rb_putn(b, run, (size_t)(s - run));
        rb_puts(b, ent);
        run = s + 1;
    }
    rb_putn(b, run, (size_t)(s - run));
}

void rb_md_cell(rbuf *b, const char *s) {
    if (!s) return;
    for (; *s; s++) {
        switch (*s) {
        case '|': rb_puts(b, "\\|"); break;
        case '\n': case '\r': rb_puts(b, " "); break;
        case '<': rb_puts(b, "&lt;"); break;
        case '>': rb_puts(b, "&gt;"); break;
        case '&': rb_puts(b, "&amp;"); break;
        case '`': rb_puts(b, "\\`"); break;
        default: rb_putn(b, s, 1);
        }
    }
}

void rb_csv_field(rbuf *b, const char *s) {
    if (!s) return;
    if (!strpbrk(s, ",\"\n\r")) {
        rb_puts(b, s);
        return;
    }
    rb_puts(b, "\"");
    for (; *s; s++) rb_puts(b, *s == '"' ? "\"\"" : (char[2]){ *s, 0 });
    rb_puts(b, "\"");
}

/* ---- numbers ---- */

/* Inserts thousands separators into the integer part of a plain decimal string. */
static void group_thousands(const char *in, char *out, size_t len) {
    const char *dot = strchr(in, '.');
    size_t int_end = dot ? (size_t)(dot - in) : strlen(in);
    size_t start = in[0] == '-' ? 1 : 0, digits = int_end - start, o = 0;
    if (start && o + 1 < len) out[o++] = '-';
    for (size_t i = 0; i < digits && o + 2 < len; i++) {
        if (i && (digits - i) % 3 == 0) out[o++] = ',';
        out[o++] = in[start + i];
    }
    for (size_t i = int_end; in[i] && o + 1 < len; i++) out[o++] = in[i];
    out[o] = 0;
}

void fmt_num(double v, char *buf, size_t len) {
    if (!isfinite(v)) {
        snprintf(buf, len, "%s", isnan(v) ? "n/a" : (v > 0 ? "inf" : "-inf"));
        return;
    }
    double a = fabs(v);
    char tmp[64];
    if (a >= 100 || v == floor(v)) snprintf(tmp, sizeof tmp, "%.0f", v);
    else if (a >= 10) snprintf(tmp, sizeof tmp, "%.1f", v);
    else if (a >= 1) snprintf(tmp, sizeof tmp, "%.2f", v);
    else snprintf(tmp, sizeof tmp, "%.3g", v);
    if (strchr(tmp, 'e')) {
        snprintf(buf, len, "%s", tmp);
        return;
    }
    group_thousands(tmp, buf, len);
}

/* v to 3 significant digits. */
static void short_g(double v, char *buf, size_t len) { snprintf(buf, len, "%.3g", v); }

void fmt_tick(double v, char *buf, size_t len) {
    double a = fabs(v);
    if (!isfinite(v)) { snprintf(buf, len, "n/a"); return; }
    if (fabs(v) < 1e-12) { snprintf(buf, len, "0"); return; }
    char t[32];
    if (a >= 1e9) { short_g(v / 1e9, t, sizeof t); snprintf(buf, len, "%sG", t); }
    else if (a >= 1e6) { short_g(v / 1e6, t, sizeof t); snprintf(buf, len, "%sM", t); }
    else if (a >= 1e4) { short_g(v / 1e3, t, sizeof t); snprintf(buf, len, "%sk", t); }
    else snprintf(buf, len, "%.4g", v);   /* 1000 and 2500 read better than 1e+03 */
}

/* Drops a fraction of zeros ("20.0" -> "20", "1.50" -> "1.5") from a %f-formatted number. */
static void trim_zeros(char *s) {
    char *dot = strchr(s, '.');
    if (!dot) return;
    char *e = s + strlen(s);
    while (e > dot + 1 && e[-1] == '0') *--e = 0;
    if (e == dot + 1) *dot = 0;
}

void fmt_ms(double ms, char *buf, size_t len) {
    if (!isfinite(ms)) { snprintf(buf, len, "%s", isnan(ms) ? "n/a" : "inf"); return; }
    char n[48];
    const char *unit = "ms";
    if (ms >= 10000) { snprintf(n, sizeof n, "%.1f", ms / 1000); unit = "s"; }
    else if (ms >= 1000) { snprintf(n, sizeof n, "%.2f", ms / 1000); unit = "s"; }
    else if (ms >= 100) snprintf(n, sizeof n, "%.0f", ms);
    else if (ms >= 10) snprintf(n, sizeof n, "%.1f", ms);
    else snprintf(n, sizeof n, "%.2f", ms);
    trim_zeros(n);
    snprintf(buf, len, "%s %s", n, unit);
}

void fmt_pct(double pct, char *buf, size_t len) {
    if (!isfinite(pct)) { snprintf(buf, len, "n/a"); return; }
    double a = fabs(pct);
    if (a >= 10 || pct == 0) snprintf(buf, len, "%.0f%%", pct);
    else if (a >= 1) snprintf(buf, len, "%.1f%%", pct);
    else snprintf(buf, len, "%.2g%%", pct);
}

void fmt_pct_cell(double pct, char *buf, size_t len) {
    if (!isfinite(pct)) { snprintf(buf, len, "n/a"); return; }
    double a = fabs(pct);
    if (pct == 0) snprintf(buf, len, "0");
    else if (a < 0.05) snprintf(buf, len, "%s0.1", pct < 0 ? ">-" : "<");
    else if (a >= 10) snprintf(buf, len, "%.0f", pct);
    else snprintf(buf, len, "%.1f", pct);
}

int rb_write(rbuf *b, FILE *f, char *err, size_t errlen) {
    int rc = 0;
    if (b->oom) { snprintf(err, errlen, "out of memory building the report"); rc = -1; }
    else if (b->len && fwrite(b->p, 1, b->len, f) != b->len) { snprintf(err, errlen, "write error"); rc = -1; }
    rb_free(b);
    return rc;
}
