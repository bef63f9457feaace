/* sampleset — a metric's samples as HDR buckets, merge-friendly, with their JSON form (see
 * sampleset.h). */
#include "metrics/sampleset.h"
#include "metrics/stats.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void sampleset_init(sampleset *s) { memset(s, 0, sizeof *s); }

void sampleset_free(sampleset *s) {
    free(s->idx);
    free(s->cnt);
    memset(s, 0, sizeof *s);
}

static int reserve(sampleset *s, size_t n) {
    if (n <= s->cap) return 0;
    size_t nc = s->cap ? s->cap : 64;
    while (nc < n) nc *= 2;
    uint32_t *i = realloc(s->idx, nc * sizeof *i);
    if (!i) return -1;
    s->idx = i;
    uint64_t *c = realloc(s->cnt, nc * sizeof *c);
    if (!c) return -1;
    s->cnt = c;
    s->cap = nc;
    return 0;
}

int sampleset_from_hdr(sampleset *s, const hdr_hist *h) {
    size_t nb = 0;
    for (size_t i = 0; i < HDR_BUCKETS; i++) nb += h->counts[i] != 0;
    if (reserve(s, nb) < 0) return -1;
    s->nb = 0;
    for (size_t i = 0; i < HDR_BUCKETS; i++)
        if (h->counts[i]) { s->idx[s->nb] = (uint32_t)i; s->cnt[s->nb++] = h->counts[i]; }
    s->n = h->total;
    s->min = h->min;
    s->max = h->max;
    s->mean = h->mean;
    s->m2 = h->m2;
    return 0;
}

int sampleset_from_values(sampleset *s, const int64_t *v, const uint64_t *w, size_t n) {
    hdr_hist *h = malloc(sizeof *h);
    if (!h) return -1;
    hdr_init(h);
    for (size_t i = 0; i < n; i++) hdr_record(h, v[i], w ? w[i] : 1);
    int rc = sampleset_from_hdr(s, h);
    free(h);
    return rc;
}

int sampleset_merge(sampleset *dst, const sampleset *src) {
    if (!src->n) return 0;
    size_t cap = dst->nb + src->nb;
    uint32_t *idx = malloc((cap ? cap : 1) * sizeof *idx);
    uint64_t *cnt = malloc((cap ? cap : 1) * sizeof *cnt);
    if (!idx || !cnt) { free(idx); free(cnt); return -1; }
    size_t i = 0, j = 0, k = 0;
    while (i < dst->nb || j < src->nb) {
        if (j == src->nb || (i < dst->nb && dst->idx[i] < src->idx[j])) { idx[k] = dst->idx[i]; cnt[k++] = dst->cnt[i++]; }
        else if (i == dst->nb || src->idx[j] < dst->idx[i]) { idx[k] = src->idx[j]; cnt[k++] = src->cnt[j++]; }
        else { idx[k] = dst->idx[i]; cnt[k++] = dst->cnt[i++] + src->cnt[j++]; }
    }
    if (!dst->n) {
        dst->min = src->min;
        dst->max = src->max;
        dst->mean = src->mean;
        dst->m2 = src->m2;
    } else {
        if (src->min < dst->min) dst->min = src->min;
        if (src->max > dst->max) dst->max = src->max;
        stats_merge_moments(&dst->mean, &dst->m2, (double)dst->n, src->mean, src->m2, (double)src->n);
    }
    free(dst->idx);
    free(dst->cnt);
    dst->idx = idx;
    dst->cnt = cnt;
    dst->nb = k;
    dst->cap = cap;
    dst->n += src->n;
    return 0;
}

double sampleset_mean(const sampleset *s) { return s->n ? s->mean : NAN; }
double sampleset_var(const sampleset *s) { return s->n > 1 ? s->m2 / (double)(s->n - 1) : NAN; }
double sampleset_std(const sampleset *s) { return s->n ? sqrt(s->m2 > 0 ? s->m2 / (double)s->n : 0) : NAN; }

double sampleset_bucket_value(const sampleset *s, size_t i) {
    int64_t lo, hi;
    hdr_bucket_range(s->idx[i], &lo, &hi);
    double mid = hi - lo == 1 ? (double)lo : 0.5 * ((double)lo + (double)hi);
    if (mid < (double)s->min) mid = (double)s->min;
    if (mid > (double)s->max) mid = (double)s->max;
    return mid;
}

double sampleset_at_rank(const sampleset *s, uint64_t k) {
    if (!s->n) return NAN;
    if (k == 0) return (double)s->min;
    if (k >= s->n - 1) return (double)s->max;
    uint64_t seen = 0;
    for (size_t i = 0; i < s->nb; i++) {
        seen += s->cnt[i];
        if (seen > k) return sampleset_bucket_value(s, i);
    }
    return (double)s->max;
}

static double rank_value(void *s, uint64_t k) { return sampleset_at_rank(s, k); }

double sampleset_percentile(const sampleset *s, double p) {
    return stats_percentile_ranked(s->n, p, rank_value, (void *)s);
}

/* ---- JSON: base64 of LEB128 varints ---- */

static const char b64[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static size_t put_varint(unsigned char *p, uint64_t v) {
    size_t n = 0;
    do {
        unsigned char b = v & 0x7f;
        v >>= 7;
        p[n++] = (unsigned char)(b | (v ? 0x80 : 0));
    } while (v);
    return n;
}

static char *base64_encode(const unsigned char *p, size_t n) {
    char *out = malloc(4 * ((n + 2) / 3) + 1), *o = out;
    if (!out) return NULL;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t x = (uint32_t)p[i] << 16 | (i + 1 < n ? (uint32_t)p[i + 1] << 8 : 0) | (i + 2 < n ? p[i + 2] : 0);
        *o++ = b64[x >> 18 & 63];
        *o++ = b64[x >> 12 & 63];
        *o++ = i + 1 < n ? b64[x >> 6 & 63] : '=';
        *o++ = i + 2 < n ? b64[x & 63] : '=';
    }
    *o = 0;
    return out;
}

/* Decodes into a malloc'd buffer; NULL when s is not base64 (or out of memory). */
static unsigned char *base64_decode(const char *s, size_t *n) {
    size_t len = strlen(s);
    if (len % 4) return NULL;
    unsigned char *out = malloc(len / 4 * 3 + 1);
    if (!out) return NULL;
    size_t k = 0;
    for (size_t i = 0; i < len; i += 4) {
        uint32_t x = 0;
        int pad = 0;
        for (int j = 0; j < 4; j++) {
            const char *c = s[i + j] == '=' ? NULL : strchr(b64, s[i + j]);
            if (s[i + j] == '=' && i + 4 == len && j >= 2) { pad++; x <<= 6; continue; }
            if (!c || !s[i + j] || pad) { free(out); return NULL; }
            x = x << 6 | (uint32_t)(c - b64);
        }
        out[k++] = (unsigned char)(x >> 16);
        if (pad < 2) out[k++] = (unsigned char)(x >> 8);
        if (pad < 1) out[k++] = (unsigned char)x;
    }
    *n = k;
    return out;
}

json_t *sampleset_to_json(const sampleset *s) {
    unsigned char *buf = malloc(s->nb * 20 + 1);
    if (!buf) return NULL;
    size_t len = 0;
    for (size_t i = 0; i < s->nb; i++) {
        len += put_varint(buf + len, i ? (uint64_t)(s->idx[i] - s->idx[i - 1] - 1) : s->idx[0]);
        len += put_varint(buf + len, s->cnt[i]);
    }
    char *text = base64_encode(buf, len);
    free(buf);
    if (!text) return NULL;
    json_t *j = json_pack("{s:I,s:I,s:I,s:f,s:f,s:s}", "n", (json_int_t)s->n, "min", (json_int_t)(s->n ? s->min : 0),
                          "max", (json_int_t)(s->n ? s->max : 0), "mean", s->n ? s->mean : 0.0, "m2", s->n ? s->m2 : 0.0,
                          "buckets", text);
    free(text);
    return j;
}

int sampleset_from_json(sampleset *s, const json_t *j) {
    sampleset_free(s);
    const char *text = json_string_value(json_object_get(j, "buckets"));
    json_t *n = json_object_get(j, "n");
    if (!text || !json_is_integer(n) || json_integer_value(n) < 0) return -1;
    size_t len = 0;
    unsigned char *buf = base64_decode(text, &len);
    if (!buf) return -1;
    uint64_t vals[2], total = 0;
    int which = 0, shift = 0, bad = 0;
    vals[0] = vals[1] = 0;
    int64_t prev = -1;
    for (size_t i = 0; i < len && !bad; i++) {
        if (shift > 63) { bad = 1; break; }
        vals[which] |= (uint64_t)(buf[i] & 0x7f) << shift;
        shift += 7;
        if (buf[i] & 0x80) continue;
        shift = 0;
        if (which == 0) { which = 1; continue; }
        uint64_t idx = (uint64_t)(prev + 1) + vals[0];
        if (idx >= HDR_BUCKETS || vals[1] == 0 || reserve(s, s->nb + 1) < 0) { bad = 1; break; }
        s->idx[s->nb] = (uint32_t)idx;
        s->cnt[s->nb++] = vals[1];
        total += vals[1];
        prev = (int64_t)idx;
        which = 0;
        vals[0] = vals[1] = 0;
    }
    free(buf);
    s->n = (uint64_t)json_integer_value(n);
    s->min = (int64_t)json_integer_value(json_object_get(j, "min"));
    s->max = (int64_t)json_integer_value(json_object_get(j, "max"));
    s->mean = json_number_value(json_object_get(j, "mean"));
    s->m2 = json_number_value(json_object_get(j, "m2"));
    if (bad || which || shift || total != s->n || s->min > s->max) { sampleset_free(s); return -1; }
    return 0;
}
