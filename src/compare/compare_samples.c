/* compare_samples — intervals of a change between two runs, from what each results file keeps.
 *
 * Latencies (mean/median/pNN/std of ttft, tpot, itl, e2el, queue and the from-schedule views): each
 * run's every sample as a sample set (metrics/sampleset.h), so an interval is sized by the run's
 * true n — infer_interval_sets: Welch for means, order-statistic standard errors for percentiles,
 * the delta method for std — and a Mann–Whitney p-value over the two sets. Files written before
 * sample sets kept every value up to 2,000 samples, or 2,000 evenly spaced quantiles of a longer
 * run; each such quantile is read as standing for n / 2,000 samples, so the interval is sized by
 * n there too (the old bootstrap took the 2,000 quantiles for 2,000 samples: too wide).
 *
 * Throughputs, one number per run (count / duration): the width comes from the per-second
 * timeline (interior seconds, at least MIN_SECONDS), as a bootstrap interval of the ratio of the
 * mean per-second values (output tokens), read as a standard error of the log ratio and centred
 * on the runs' own ratio. request_throughput = output_throughput / (output tokens per request),
 * exactly, over the same duration; so its interval is output_throughput's widened by the
 * uncertainty of the mean output tokens per request (from the out_tokens sample sets). The two
 * then agree whenever the requests' lengths do: the same -23.5 % gets the same verdict. (The
 * completions per second, the interval's old basis, arrive in waves — a closed loop's users finish
 * together — and made request_throughput's interval far wider than output_throughput's for the
 * same change.) */
#include "compare/compare_int.h"
#include "metrics/metric_table.h"
#include "metrics/infer.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SECONDS 5          /* interior seconds needed before a throughput gets an interval */

double cmp_num(const json_t *doc, const char *key) {
    const json_t *v = json_object_get(doc, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* "p99_ttft_ms" -> stat percentile 99, family "ttft"; "mean_e2el_from_schedule_ms" -> mean. */
static bool parse_family(const char *name, infer_stat *stat, double *param, char *family, size_t flen) {
    size_t n = strlen(name);
    if (n < 4 || strcmp(name + n - 3, "_ms")) return false;
    const char *us = strchr(name, '_');
    if (!us) return false;
    size_t sl = (size_t)(us - name);
    if (sl == 4 && !strncmp(name, "mean", 4)) { *stat = INFER_MEAN; *param = 0; }
    else if (sl == 3 && !strncmp(name, "std", 3)) { *stat = INFER_STD; *param = 0; }
    else if (sl == 6 && !strncmp(name, "median", 6)) { *stat = INFER_PERCENTILE; *param = 50; }
    else if (name[0] == 'p' && sl > 1) {
        char buf[16];
        if (sl >= sizeof buf) return false;
        memcpy(buf, name + 1, sl - 1);
        buf[sl - 1] = 0;
        char *end;
        *param = strtod(buf, &end);
        if (*end || *param < 0 || *param > 100) return false;
        *stat = INFER_PERCENTILE;
    } else return false;     /* min/max: extremes get no interval */
    size_t fl = n - 3 - sl - 1;
    if (!fl || fl >= flen) return false;
    memcpy(family, us + 1, fl);
    family[fl] = 0;
    return true;
}

/* A run's samples of one family as a sample set, from a results file of any version (see the top
 * of the file). Values in ns (tokens for out_tokens). 0 ok (*quantiles: an older file's
 * quantiles stand for the samples), -1 when the run has none. */
static int family_set(const json_t *doc, const char *family, sampleset *s, bool *quantiles) {
    const json_t *smp = json_object_get(doc, "samples"), *f = json_object_get(smp, family);
    *quantiles = false;
    if (json_object_get(f, "buckets")) return sampleset_from_json(s, f) == 0 && s->n > 0 ? 0 : -1;
    const json_t *vals = json_object_get(f, "values");
    size_t m = json_array_size(vals);
    json_int_t n = json_integer_value(json_object_get(f, "n"));
    if (!m || n < (json_int_t)m) return -1;
    const char *method = json_string_value(json_object_get(f, "method"));
    *quantiles = method && !strcmp(method, "quantiles") && (uint64_t)n > m;
    int64_t *v = malloc(m * sizeof *v);
    uint64_t *w = malloc(m * sizeof *w);
    int rc = -1;
    if (v && w) {
        double scale = strcmp(family, "out_tokens") ? 1000.0 : 1.0;    /* old files: us */
        for (size_t i = 0; i < m; i++) {
            v[i] = (int64_t)llround((double)json_integer_value(json_array_get(vals, i)) * scale);
            /* quantile k of m stands for the samples between ranks k n/m and (k+1) n/m */
            w[i] = *quantiles ? (uint64_t)((i + 1) * (uint64_t)n / m - i * (uint64_t)n / m) : 1;
        }
        rc = sampleset_from_values(s, v, w, m) == 0 && s->n > 0 ? 0 : -1;
    }
    free(v);
    free(w);
    return rc;
}

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* Per-second values of a timeline series, interior seconds only, ascending. */
static double *second_samples(const json_t *doc, const char *series, size_t *n) {
    const json_t *arr = json_object_get(json_object_get(doc, "timeline"), series);
    size_t len = json_array_size(arr);
    *n = len >= 2 ? len - 2 : 0;
    if (*n < MIN_SECONDS) { *n = 0; return NULL; }
    double *v = malloc(*n * sizeof *v);
    if (!v) { *n = 0; return NULL; }
    for (size_t i = 0; i < *n; i++) v[i] = json_number_value(json_array_get(arr, i + 1));
    qsort(v, *n, sizeof *v, cmp_d);
    return v;
}

static void latency_interval(metric_cmp *m, infer_stat stat, double param, const char *family, const json_t *base,
                             const json_t *cand, const compare_opts *o) {
    sampleset a, b;
    sampleset_init(&a);
    sampleset_init(&b);
    bool qa, qb;
    if (family_set(base, family, &a, &qa) < 0 || family_set(cand, family, &b, &qb) < 0) {
        snprintf(m->no_ci_why, sizeof m->no_ci_why, "no per-request samples of %s in %s", family,
                 a.n ? "the candidate" : "the baseline");
    } else {
        double lo, hi;
        if (infer_interval_sets(stat, param, &a, &b, o->confidence, &lo, &hi, m->no_ci_why, sizeof m->no_ci_why) == 0) {
            /* centred on the runs' own (exact) values; the sets give the width */
            double d_set = (stat == INFER_MEAN ? sampleset_mean(&b) - sampleset_mean(&a)
                            : stat == INFER_STD ? sampleset_std(&b) - sampleset_std(&a)
                            : sampleset_percentile(&b, param) - sampleset_percentile(&a, param)) / 1e6;
            double shift = isfinite(m->cand - m->base) ? (m->cand - m->base) - d_set : 0;
            m->have_ci = true;
            m->ci_lo = lo / 1e6 + shift;
            m->ci_hi = hi / 1e6 + shift;
        }
        m->p_mwu = infer_mann_whitney_sets(&a, &b);
        snprintf(m->basis, sizeof m->basis, "%s: all %llu / %llu samples%s", family, (unsigned long long)a.n,
                 (unsigned long long)b.n, qa || qb ? " (an older file's 2,000 quantiles standing for them)" : "");
    }
    sampleset_free(&a);
    sampleset_free(&b);
}

/* Standard error of the log of a run's mean output tokens per request; 0 when the run's lengths
 * do not vary or are not known (older files). */
static double tokens_log_se(const json_t *doc) {
    sampleset s;
    sampleset_init(&s);
    bool q;
    double se = 0;
    if (family_set(doc, "out_tokens", &s, &q) == 0 && s.n > 1 && s.mean > 0)
        se = sqrt(sampleset_var(&s) / (double)s.n) / s.mean;
    sampleset_free(&s);
    return se;
}

static void throughput_interval(metric_cmp *m, const json_t *base, const json_t *cand, const compare_opts *o) {
    size_t na, nb;
    double *a = second_samples(base, "output_tokens", &na), *b = second_samples(cand, "output_tokens", &nb);
    double lo, hi, ratio = m->cand / m->base;
    if (!a || !b) {
        snprintf(m->no_ci_why, sizeof m->no_ci_why, "under %d whole seconds of timeline", MIN_SECONDS);
    } else if (!(ratio > 0) || !isfinite(ratio) ||
               infer_bootstrap_ratio(a, na, b, nb, o->resamples, o->confidence, o->seed, &lo, &hi) < 0 || !(lo > 0)) {
        snprintf(m->no_ci_why, sizeof m->no_ci_why, "no output tokens in a run's timeline");
    } else {
        double z = infer_z(o->confidence), se = (log(hi) - log(lo)) / (2 * z);
        bool req = !strcmp(m->name, METRIC(request_throughput));
        if (req) {
            double sa = tokens_log_se(base), sb = tokens_log_se(cand);
            se = sqrt(se * se + sa * sa + sb * sb);
        }
        m->have_ci = true;
        m->ci_lo = m->base * (ratio * exp(-z * se) - 1);
        m->ci_hi = m->base * (ratio * exp(z * se) - 1);
        m->p_mwu = infer_mann_whitney_p(a, na, b, nb, NULL);
        snprintf(m->basis, sizeof m->basis, "per-second output tokens, %zu / %zu s%s", na, nb,
                 req ? ", and output tokens per request" : "");
    }
    free(a);
    free(b);
}

void cmp_infer(metric_cmp *m, const json_t *base, const json_t *cand, const compare_opts *o) {
    m->have_ci = false;
    m->p_mwu = NAN;
    infer_stat stat = INFER_MEAN;
    double param = 0;
    char family[48];
    if (parse_family(m->name, &stat, &param, family, sizeof family)) latency_interval(m, stat, param, family, base, cand, o);
    else if (!strcmp(m->name, METRIC(output_throughput)) || !strcmp(m->name, METRIC(request_throughput))) throughput_interval(m, base, cand, o);
    else snprintf(m->no_ci_why, sizeof m->no_ci_why, "no per-request samples for this metric");
}

/* ---- for other readers of results (the history's noise band and pooling) ---- */

int compare_metric_samples_of(const json_t *doc, const char *metric, compare_samples *out) {
    memset(out, 0, sizeof *out);
    sampleset_init(&out->set);
    char family[48];
    if (parse_family(metric, &out->stat, &out->param, family, sizeof family)) {
        out->unit = 1e-6;
        return family_set(doc, family, &out->set, &out->quantiles);
    }
    if (strcmp(metric, METRIC(output_throughput)) && strcmp(metric, METRIC(request_throughput))) return -1;
    size_t n;
    double *v = second_samples(doc, metric[0] == 'o' ? "output_tokens" : "finished", &n);
    if (!v) return -1;
    int64_t *iv = malloc(n * sizeof *iv);
    int rc = -1;
    if (iv) {
        for (size_t i = 0; i < n; i++) iv[i] = llround(v[i]);    /* counts per second */
        rc = sampleset_from_values(&out->set, iv, NULL, n);
    }
    free(iv);
    free(v);
    out->stat = INFER_MEAN;
    out->unit = 1;
    return rc;
}

void compare_samples_free(compare_samples *s) { sampleset_free(&s->set); }
