/* hdr — log-linear histogram of nanosecond values (see hdr.h for the layout and error bound). */
#include "metrics/hdr.h"
#include "metrics/stats.h"
#include <math.h>
#include <string.h>

#define SUB_COUNT (1 << HDR_SUB_BITS)
#define MAX_VALUE ((INT64_C(1) << (HDR_MAX_EXP + 1)) - 1)

void hdr_init(hdr_hist *h) {
    memset(h, 0, sizeof *h);
}

/* Values below 2·SUB_COUNT map to themselves (1 ns buckets). Above, with e the top bit,
 * the SUB_BITS bits after the top bit pick the sub-bucket, and each octave adds SUB_COUNT:
 * index = SUB_COUNT·(e - SUB_BITS + 1) + mantissa, which continues the identity map. */
size_t hdr_bucket_of(int64_t v) {
    if (v < 0) v = 0;
    if (v > MAX_VALUE) v = MAX_VALUE;
    if (v < 2 * SUB_COUNT) return (size_t)v;
    int e = 63 - __builtin_clzll((unsigned long long)v);
    int shift = e - HDR_SUB_BITS;
    size_t mant = (size_t)(v >> shift) - SUB_COUNT;
    return (size_t)SUB_COUNT * (size_t)(e - HDR_SUB_BITS + 1) + mant;
}

void hdr_bucket_range(size_t idx, int64_t *lo, int64_t *hi) {
    if (idx < 2 * SUB_COUNT) {
        *lo = (int64_t)idx;
        *hi = (int64_t)idx + 1;
        return;
    }
    int e = (int)(idx / SUB_COUNT) + HDR_SUB_BITS - 1;
    int shift = e - HDR_SUB_BITS;
    int64_t mant = (int64_t)(idx % SUB_COUNT) + SUB_COUNT;
    *lo = mant << shift;
    *hi = (mant + 1) << shift;
}

void hdr_record(hdr_hist *h, int64_t value, uint64_t count) {
    if (count == 0) return;
    if (value > MAX_VALUE) h->saturated += count;
    h->counts[hdr_bucket_of(value)] += count;
    if (h->total == 0 || value < h->min) h->min = value;
    if (h->total == 0 || value > h->max) h->max = value;
    /* weighted Welford: `count` equal observations at once */
    double n_new = (double)(h->total + count), x = (double)value;
    double delta = x - h->mean;
    h->mean += delta * (double)count / n_new;
    h->m2 += (double)count * delta * (x - h->mean);
    h->total += count;
}

void hdr_merge(hdr_hist *dst, const hdr_hist *src) {
    if (src->total == 0) return;
    for (size_t i = 0; i < HDR_BUCKETS; i++) dst->counts[i] += src->counts[i];
    if (dst->total == 0) {
        dst->min = src->min;
        dst->max = src->max;
        dst->mean = src->mean;
        dst->m2 = src->m2;
    } else {
        if (src->min < dst->min) dst->min = src->min;
        if (src->max > dst->max) dst->max = src->max;
        stats_merge_moments(&dst->mean, &dst->m2, (double)dst->total, src->mean, src->m2, (double)src->total);
    }
    dst->total += src->total;
    dst->saturated += src->saturated;
}

double hdr_mean(const hdr_hist *h) { return h->total ? h->mean : NAN; }

double hdr_std(const hdr_hist *h) {
    if (!h->total) return NAN;
    double var = h->m2 / (double)h->total;
    return var > 0 ? sqrt(var) : 0.0;
}

/* The sample of 0-based rank k in sorted order, as its bucket's midpoint within [min, max]. */
static double value_at_rank(const hdr_hist *h, uint64_t k) {
    if (k == 0) return (double)h->min;
    if (k >= h->total - 1) return (double)h->max;
    uint64_t seen = 0;
    for (size_t i = 0; i < HDR_BUCKETS; i++) {
        seen += h->counts[i];
        if (seen > k) {
            int64_t lo, hi;
            hdr_bucket_range(i, &lo, &hi);
            double mid = hi - lo == 1 ? (double)lo : 0.5 * ((double)lo + (double)hi);
            if (mid < (double)h->min) mid = (double)h->min;
            if (mid > (double)h->max) mid = (double)h->max;
            return mid;
        }
    }
    return (double)h->max;
}

static double rank_value(void *h, uint64_t k) { return value_at_rank(h, k); }

double hdr_percentile(const hdr_hist *h, double p) {
    return stats_percentile_ranked(h->total, p, rank_value, (void *)h);
}

/* A walk over the buckets for ranks that only grow: each bucket is passed once. */
typedef struct { size_t i; uint64_t before; } rank_cursor;

static double cursor_value(const hdr_hist *h, rank_cursor *c, uint64_t k) {
    if (k == 0) return (double)h->min;
    if (k >= h->total - 1) return (double)h->max;
    while (c->i < HDR_BUCKETS && c->before + h->counts[c->i] <= k) c->before += h->counts[c->i++];
    if (c->i == HDR_BUCKETS) return (double)h->max;
    int64_t lo, hi;
    hdr_bucket_range(c->i, &lo, &hi);
    double mid = hi - lo == 1 ? (double)lo : 0.5 * ((double)lo + (double)hi);
    if (mid < (double)h->min) mid = (double)h->min;
    if (mid > (double)h->max) mid = (double)h->max;
    return mid;
}

typedef struct { const hdr_hist *h; rank_cursor c; } cursor_ctx;

static double cursor_rank_value(void *ctx, uint64_t k) {
    cursor_ctx *x = ctx;
    return cursor_value(x->h, &x->c, k);
}

void hdr_quantiles(const hdr_hist *h, size_t m, double *out) {
    cursor_ctx x = { h, { 0, 0 } };
    for (size_t k = 0; k < m; k++) {
        double p = ((double)k + 0.5) * 100.0 / (double)m;    /* as hdr_percentile's callers write it */
        out[k] = stats_percentile_ranked(h->total, p, cursor_rank_value, &x);   /* ranks only grow with k */
    }
}
