/* timeint — batch-means intervals over a run's time axis (timeint.h says why). */
#include "metrics/timeint.h"
#include "metrics/metric_table.h"
#include "metrics/infer.h"
#include <math.h>
#include <stdlib.h>

#define NS_PER_S 1000000000LL

double timeint_t(double confidence, int df) {
    if (df < 1 || !(confidence > 0 && confidence < 1)) return NAN;
    /* P(|T| <= t) = 1 - I_{df/(df+t^2)}(df/2, 1/2), increasing in t: bisect */
    double lo = 0, hi = 1;
    while (1 - infer_beta_inc(df / 2.0, 0.5, df / (df + hi * hi)) < confidence && hi < 1e12) hi *= 2;
    for (int i = 0; i < 200 && hi - lo > 1e-12 * hi; i++) {
        double mid = (lo + hi) / 2;
        if (1 - infer_beta_inc(df / 2.0, 0.5, df / (df + mid * mid)) < confidence) lo = mid;
        else hi = mid;
    }
    return (lo + hi) / 2;
}

int timeint_batch_size(long n_units) {
    if (n_units < 16) return 0;
    return (int)floor(sqrt((double)n_units));
}

int timeint_batch_means(const double *sum, const double *cnt, int b, double unit_var, long n_units,
                        double confidence, timeint_result *o) {
    double S = 0, C = 0;
    for (int j = 0; j < b; j++) { S += sum[j]; C += cnt[j]; }
    if (b < 2 || !(C > 0) || n_units < 1) return -1;
    double R = S / C, cbar = C / b, ss = 0;
    for (int j = 0; j < b; j++) {
        double d = (sum[j] - R * cnt[j]) / cbar;
        ss += d * d;
    }
    o->estimate = R;
    o->se = sqrt(ss / ((double)b * (b - 1)));
    double t = timeint_t(confidence, b - 1);
    o->lo = R - t * o->se;
    o->hi = R + t * o->se;
    o->iid_half_width = infer_z(confidence) * sqrt(unit_var / (double)n_units);
    o->ess = o->se > 0 ? unit_var / (o->se * o->se) : NAN;
    o->n_units = n_units;
    o->batches = b;
    return 0;
}

/* Sample variance of n values by Welford's update. */
typedef struct { long n; double mean, m2; } welford;
static void wf_add(welford *w, double x) {
    w->n++;
    double d = x - w->mean;
    w->mean += d / w->n;
    w->m2 += d * (x - w->mean);
}
static double wf_var(const welford *w) { return w->n > 1 ? w->m2 / (w->n - 1) : 0; }

static json_t *result_json(const timeint_result *r, double estimate, double scale) {
    json_t *o = json_object();
    double hw = (r->hi - r->estimate) * scale;
    json_object_set_new(o, "estimate", json_real(estimate));
    json_object_set_new(o, "lo", json_real(estimate - hw));
    json_object_set_new(o, "hi", json_real(estimate + hw));
    json_object_set_new(o, "half_width", json_real(hw));
    json_object_set_new(o, "iid_half_width", json_real(r->iid_half_width * scale));
    json_object_set_new(o, "ess", isfinite(r->ess) ? json_real(r->ess) : json_null());
    json_object_set_new(o, "n", json_integer(r->n_units));
    return o;
}

static int64_t end_time(const record *r) { return r->end_ns > r->last_ns ? r->end_ns : r->last_ns; }

json_t *timeint_run(const recset *recs, double confidence, double output_throughput, double request_throughput) {
    int64_t t0 = 0, t1 = 0;
    int any = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->send_ns <= 0) continue;
        if (!any || r->send_ns < t0) t0 = r->send_ns;
        if (!any || end_time(r) > t1) t1 = end_time(r);
        any = 1;
    }
    if (!any || t1 <= t0) return NULL;
    /* units: 1 s, or span/100 for runs under 100 s (so a short run still has 100 units) */
    double span_s = (double)(t1 - t0) / NS_PER_S;
    double unit_s = span_s >= 100 ? 1.0 : span_s / 100;
    long n_units = (long)floor(span_s / unit_s + 1e-9);
    int m = timeint_batch_size(n_units);
    if (m == 0) return NULL;
    int b = (int)(n_units / m);
    if (b < 4) return NULL;
    long used = (long)b * m;
    /* a unit index in whole numbers, so that a chunk on a boundary (the last one, at the span's
     * end) falls on the same side whoever computes it */
    int64_t span_ns = t1 - t0;
    double *tok = calloc((size_t)used, sizeof *tok), *done = calloc((size_t)used, sizeof *done);
    double *gsum = calloc((size_t)b, sizeof *gsum), *gcnt = calloc((size_t)b, sizeof *gcnt);
    double *bs = calloc((size_t)b, sizeof *bs), *bc = calloc((size_t)b, sizeof *bc);
    json_t *out = NULL;
    if (!tok || !done || !gsum || !gcnt || !bs || !bc) goto fail;
    welford gaps = { 0 };
    double chunk_tokens = 0, out_tokens = 0;
#define UNIT(t) ((t) >= t0 ? (span_s >= 100 ? (long)(((t) - t0) / NS_PER_S) : (long)(((t) - t0) * 100 / span_ns)) : -1)
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_OK || r->send_ns <= 0) continue;
        long u = UNIT(end_time(r));
        if (u >= 0 && u < used) done[u] += 1;
        out_tokens += record_out_tokens(r);
        for (uint32_t k = 0; r->chunk_ns && k < r->n_chunks; k++) {
            double m_tok = r->chunk_tokens && r->chunk_tokens[k] ? r->chunk_tokens[k] : 1;
            chunk_tokens += m_tok;
            long uc = UNIT(r->chunk_ns[k]);
            if (uc >= 0 && uc < used) tok[uc] += m_tok;
            if (k == 0) continue;
            double gap_ms = (double)(r->chunk_ns[k] - r->chunk_ns[k - 1]) / 1e6;
            wf_add(&gaps, gap_ms);
            if (uc >= 0 && uc < used) { gsum[uc / m] += gap_ms; gcnt[uc / m] += 1; }
        }
    }
#undef UNIT
    out = json_object();
    json_object_set_new(out, "method", json_string("batch_means"));
    json_object_set_new(out, "confidence", json_real(confidence));
    json_object_set_new(out, "unit_s", json_real(unit_s));
    json_object_set_new(out, "batch_s", json_real(unit_s * m));
    json_object_set_new(out, "batches", json_integer(b));
    /* throughputs: each unit's rate is one observation, a batch is m units of unit_s seconds */
    const double *series[2] = { tok, done };
    const char *names[2] = { METRIC(output_throughput), METRIC(request_throughput) };
    double reported[2] = { output_throughput, request_throughput };
    double scale[2] = { chunk_tokens > 0 ? out_tokens / chunk_tokens : 1, 1 };
    for (int s = 0; s < 2; s++) {
        welford w = { 0 };
        for (int j = 0; j < b; j++) {
            bs[j] = 0;
            bc[j] = m * unit_s;
            for (int k = 0; k < m; k++) {
                double x = series[s][(long)j * m + k];
                bs[j] += x;
                wf_add(&w, x / unit_s);
            }
        }
        timeint_result r;
        if (isfinite(reported[s]) && timeint_batch_means(bs, bc, b, wf_var(&w), used, confidence, &r) == 0)
            json_object_set_new(out, names[s], result_json(&r, reported[s], scale[s]));
    }
    timeint_result r;
    if (gaps.n > 1 && timeint_batch_means(gsum, gcnt, b, wf_var(&gaps), gaps.n, confidence, &r) == 0)
        json_object_set_new(out, METRIC(mean_itl_ms), result_json(&r, gaps.mean, 1));
fail:
    free(tok); free(done); free(gsum); free(gcnt); free(bs); free(bc);
    return out;
}
