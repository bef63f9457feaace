/* prom — Prometheus text-format parser (see prom.h). One pass over the text, line by line;
 * every string in the result is an owned, unescaped copy. */
#include "telemetry/prom.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int grow(void **p, size_t *cap, size_t need, size_t elem) {
    if (need <= *cap) return 0;
    size_t c = *cap ? *cap * 2 : 64;
    while (c < need) c *= 2;
    void *q = realloc(*p, c * elem);
    if (!q) return -1;
    *p = q;
    *cap = c;
    return 0;
}

static bool name_start(int c) { return isalpha(c) || c == '_' || c == ':'; }
static bool name_char(int c) { return isalnum(c) || c == '_' || c == ':'; }

static const char *skip_ws(const char *p, const char *end) {
    while (p < end && (*p == ' ' || *p == '\t')) p++;
    return p;
}

/* Copies [p, p+n) into a new string, resolving \\, \" and \n escapes when `escapes`. */
static char *dup_unescape(const char *p, size_t n, bool escapes) {
    char *s = malloc(n + 1), *o = s;
    if (!s) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (escapes && p[i] == '\\' && i + 1 < n) {
            char c = p[++i];
            *o++ = c == 'n' ? '\n' : c;   /* \\ and \" map to themselves; unknown escapes keep the char */
        } else {
            *o++ = p[i];
        }
    }
    *o = 0;
    return s;
}

static prom_family *family_get(prom_doc *d, const char *name, size_t n) {
    for (size_t i = 0; i < d->n_families; i++)
        if (strlen(d->families[i].name) == n && !strncmp(d->families[i].name, name, n)) return &d->families[i];
    if (grow((void **)&d->families, &d->cap_families, d->n_families + 1, sizeof *d->families)) return NULL;
    prom_family *f = &d->families[d->n_families];
    memset(f, 0, sizeof *f);
    if (!(f->name = dup_unescape(name, n, false))) return NULL;
    d->n_families++;
    return f;
}

/* "# HELP name text" / "# TYPE name kind"; anything else after '#' is a comment. */
static int parse_comment(prom_doc *d, const char *p, const char *end) {
    p = skip_ws(p + 1, end);
    bool help = end - p >= 4 && !strncmp(p, "HELP", 4), type = end - p >= 4 && !strncmp(p, "TYPE", 4);
    if (!help && !type) return 0;
    p = skip_ws(p + 4, end);
    const char *n0 = p;
    while (p < end && name_char((unsigned char)*p)) p++;
    if (p == n0) { d->bad_lines++; return 0; }
    prom_family *f = family_get(d, n0, (size_t)(p - n0));
    if (!f) return -1;
    p = skip_ws(p, end);
    const char *e = end;
    while (e > p && (e[-1] == ' ' || e[-1] == '\t')) e--;
    if (help) {
        free(f->help);
        if (!(f->help = dup_unescape(p, (size_t)(e - p), true))) return -1;
    } else {
        size_t n = (size_t)(e - p);
        static const struct { const char *s; prom_type t; } kinds[] = {
            {"counter", PROM_COUNTER}, {"gauge", PROM_GAUGE}, {"histogram", PROM_HISTOGRAM},
            {"summary", PROM_SUMMARY}, {"untyped", PROM_UNTYPED}, {"unknown", PROM_UNTYPED}};
        f->type = PROM_UNTYPED;
        for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
            if (strlen(kinds[i].s) == n && !strncmp(p, kinds[i].s, n)) f->type = kinds[i].t;
    }
    return 0;
}

static void sample_clear(prom_sample *s) {
    free(s->name);
    for (int i = 0; i < s->n_labels; i++) { free(s->label_names[i]); free(s->label_values[i]); }
    free(s->label_names);
    free(s->label_values);
}

/* Parses the label set starting after '{'; leaves *pp after '}'. Returns 0, 1 malformed, -1 OOM. */
static int parse_labels(prom_sample *s, const char **pp, const char *end) {
    const char *p = *pp;
    int cap = 0;
    for (;;) {
        p = skip_ws(p, end);
        if (p < end && *p == '}') { p++; break; }
        const char *n0 = p;
        while (p < end && name_char((unsigned char)*p)) p++;
        if (p == n0) return 1;
        size_t nlen = (size_t)(p - n0);
        p = skip_ws(p, end);
        if (p >= end || *p != '=') return 1;
        p = skip_ws(p + 1, end);
        if (p >= end || *p != '"') return 1;
        const char *v0 = ++p;
        while (p < end && *p != '"') p += (*p == '\\' && p + 1 < end) ? 2 : 1;
        if (p >= end) return 1;
        if (s->n_labels == cap) {
            cap = cap ? cap * 2 : 4;
            char **a = realloc(s->label_names, (size_t)cap * sizeof *a);
            if (!a) return -1;
            s->label_names = a;
            char **b = realloc(s->label_values, (size_t)cap * sizeof *b);
            if (!b) return -1;
            s->label_values = b;
        }
        s->label_names[s->n_labels] = dup_unescape(n0, nlen, false);
        s->label_values[s->n_labels] = dup_unescape(v0, (size_t)(p - v0), true);
        s->n_labels++;
        if (!s->label_names[s->n_labels - 1] || !s->label_values[s->n_labels - 1]) return -1;
        p = skip_ws(p + 1, end);
        if (p < end && *p == ',') { p++; continue; }
        if (p < end && *p == '}') { p++; break; }
        return 1;
    }
    *pp = p;
    return 0;
}

static int parse_number(const char *p, const char *end, double *out, const char **stop) {
    char buf[64];
    size_t n = 0;
    while (p + n < end && p[n] != ' ' && p[n] != '\t' && n < sizeof buf - 1) n++;
    if (n == 0) return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *e;
    double v = strtod(buf, &e);
    if (*e) return -1;
    *out = v;
    *stop = p + n;
    return 0;
}

/* A sample's timestamp: integer milliseconds (Prometheus text) or (fractional) seconds (OpenMetrics).
 * A value that is not finite or does not fit int64 milliseconds is refused: converting it would be
 * undefined behaviour (found by fuzzing), and no exporter means it. */
static int parse_timestamp_ms(const char *p, const char *end, int64_t *out, const char **stop) {
    char buf[64];
    size_t n = 0;
    while (p + n < end && p[n] != ' ' && p[n] != '\t' && n < sizeof buf - 1) n++;
    if (n == 0 || n == sizeof buf - 1) return -1;
    memcpy(buf, p, n);
    buf[n] = 0;
    char *e;
    errno = 0;
    if (strpbrk(buf, ".eE")) {
        double sec = strtod(buf, &e);
        /* 9.2e15 s is the int64 range in ms; beyond it (or NaN, Inf) there is no such time */
        if (*e || !isfinite(sec) || fabs(sec) >= 9.2e15) return -1;
        *out = (int64_t)llround(sec * 1000.0);
    } else {
        long long ms = strtoll(buf, &e, 10);
        if (*e || errno == ERANGE) return -1;
        *out = ms;
    }
    *stop = p + n;
    return 0;
}

static int parse_sample(prom_doc *d, const char *p, const char *end, int flags) {
    prom_sample s = {0};
    const char *n0 = p;
    if (!name_start((unsigned char)*p)) goto bad;
    while (p < end && name_char((unsigned char)*p)) p++;
    if ((flags & PROM_SKIP_BUCKETS) && p - n0 > 7 && !memcmp(p - 7, "_bucket", 7)) return 0;
    if (!(s.name = dup_unescape(n0, (size_t)(p - n0), false))) goto oom;
    p = skip_ws(p, end);
    if (p < end && *p == '{') {
        p++;
        int rc = parse_labels(&s, &p, end);
        if (rc < 0) goto oom;
        if (rc > 0) goto bad;
    }
    p = skip_ws(p, end);
    if (parse_number(p, end, &s.value, &p)) goto bad;
    p = skip_ws(p, end);
    if (p < end) {
        if (parse_timestamp_ms(p, end, &s.timestamp_ms, &p)) goto bad;
        s.has_timestamp = true;
        if (skip_ws(p, end) != end) goto bad;
    }
    if (grow((void **)&d->samples, &d->cap_samples, d->n_samples + 1, sizeof *d->samples)) goto oom;
    d->samples[d->n_samples++] = s;
    return 0;
bad:
    sample_clear(&s);
    d->bad_lines++;
    return 0;
oom:
    sample_clear(&s);
    return -1;
}

int prom_parse(const char *text, size_t len, prom_doc *doc) { return prom_parse_flags(text, len, doc, 0); }

int prom_parse_flags(const char *text, size_t len, prom_doc *doc, int flags) {
    memset(doc, 0, sizeof *doc);
    const char *p = text, *end = text + len;
    while (p < end) {
        const char *eol = memchr(p, '\n', (size_t)(end - p));
        if (!eol) eol = end;
        const char *le = eol;
        if (le > p && le[-1] == '\r') le--;
        const char *q = skip_ws(p, le);
        int rc = 0;
        if (q < le) rc = *q == '#' ? parse_comment(doc, q, le) : parse_sample(doc, q, le, flags);
        if (rc) { prom_doc_free(doc); return -1; }
        p = eol + 1;
    }
    return 0;
}

void prom_doc_free(prom_doc *doc) {
    for (size_t i = 0; i < doc->n_samples; i++) sample_clear(&doc->samples[i]);
    for (size_t i = 0; i < doc->n_families; i++) { free(doc->families[i].name); free(doc->families[i].help); }
    free(doc->samples);
    free(doc->families);
    memset(doc, 0, sizeof *doc);
}

const char *prom_label(const prom_sample *s, const char *name) {
    for (int i = 0; i < s->n_labels; i++)
        if (!strcmp(s->label_names[i], name)) return s->label_values[i];
    return NULL;
}

prom_type prom_family_type(const prom_doc *doc, const char *name) {
    for (size_t i = 0; i < doc->n_families; i++)
        if (!strcmp(doc->families[i].name, name)) return doc->families[i].type;
    return PROM_UNTYPED;
}

static int sum_exact(const prom_doc *doc, const char *name, const char *label, const char *value, double *out) {
    int n = 0;
    double acc = 0;
    for (size_t i = 0; i < doc->n_samples; i++) {
        const prom_sample *s = &doc->samples[i];
        if (strcmp(s->name, name)) continue;
        if (label) {
            const char *v = prom_label(s, label);
            if (!v || strcmp(v, value)) continue;
        }
        acc += s->value;
        n++;
    }
    if (n) *out = acc;
    return n;
}

int prom_sum(const prom_doc *doc, const char *name, const char *label, const char *value, double *out) {
    int n = sum_exact(doc, name, label, value, out);
    if (n) return n;
    char alt[256];
    size_t len = strlen(name);
    if (len > 6 && !strcmp(name + len - 6, "_total")) {
        if (len - 6 >= sizeof alt) return 0;
        memcpy(alt, name, len - 6);
        alt[len - 6] = 0;
    } else {
        if (len + 7 > sizeof alt) return 0;
        memcpy(alt, name, len);
        memcpy(alt + len, "_total", 7);
    }
    return sum_exact(doc, alt, label, value, out);
}

int prom_hist_totals(const prom_doc *doc, const char *name, const char *label, const char *value,
                     double *sum, double *count) {
    char k[256];
    double s, c;
    if (snprintf(k, sizeof k, "%s_sum", name) >= (int)sizeof k || !sum_exact(doc, k, label, value, &s)) return 0;
    if (snprintf(k, sizeof k, "%s_count", name) >= (int)sizeof k || !sum_exact(doc, k, label, value, &c)) return 0;
    *sum = s;
    *count = c;
    return 1;
}
