/* summary — every metric of product.md section 3 over a run's records, as one JSON object with
 * vLLM's field names at the top level and dsperf's additions beside them.
 *
 * Conventions (why they are what they are):
 * - Warm-up records are skipped entirely (not counted, not in errors, not in the timeline).
 * - A timestamp of 0 means "did not happen" (record.h): a record with send_ns == 0 was never
 *   sent (e.g. cancelled while queued in the client).
 * - Only REC_OK records feed latency statistics and throughputs (as in vLLM); failures are
 *   counted by class and enter the "error-adjusted" percentiles as +infinity latency.
 * - Request-level metrics are exact over stored samples (numpy "linear" percentiles); pooled
 *   ITL is an HDR histogram (relative error <= HDR_REL_ERROR = 0.049 %).
 * - Empty sample sets give JSON null, never a made-up 0.
 * - In-flight counts (timeline, peak_concurrent_requests) cover every sent request, failed ones
 *   included — they held a connection too; tokens/s counts successful requests' chunks only, as
 *   output_throughput does. */
#include "metrics/summary.h"
#include "metrics/metric_table.h"
#include "metrics/workload.h"
#include "metrics/phases.h"
#include "metrics/timeint.h"
#include "metrics/accept.h"
#include "common/units.h"
#include "metrics/stats.h"
#include "metrics/hdr.h"
#include "metrics/request_metrics.h"
#include "metrics/sampleset.h"
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_MS 1e6
#define NS_PER_S 1e9
/* Timeline bins are capped (a week of seconds) so a corrupt timestamp cannot exhaust memory. */
#define TIMELINE_MAX_BINS (7 * 24 * 3600)

void summary_default_opts(summary_opts *o) {
    static const double def[] = { 50, 90, 95, 99, 99.9 };
    memset(o, 0, sizeof *o);
    for (size_t i = 0; i < sizeof def / sizeof def[0]; i++) o->percentiles[i] = def[i];
    o->n_percentiles = (int)(sizeof def / sizeof def[0]);
}

int summary_parse_slo(summary_opts *o, const char *spec) {
    char *copy = strdup(spec), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *t = copy ? strtok_r(copy, ",", &save) : NULL; t; t = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(t, '=');
        int64_t ns;
        if (!eq) { rc = -1; break; }
        *eq = 0;
        if (units_parse_duration_ns(eq + 1, &ns) < 0 || ns <= 0) { rc = -1; break; }
        double ms = ns / 1e6;
        if (!strcmp(t, "ttft")) o->slo_ttft_ms = ms;
        else if (!strcmp(t, "tpot")) o->slo_tpot_ms = ms;
        else if (!strcmp(t, "e2el")) o->slo_e2el_ms = ms;
        else if (!strcmp(t, "ttfa")) o->slo_ttfa_ms = ms;
        else { rc = -1; break; }
    }
    free(copy);
    return rc;
}

int summary_parse_percentiles(summary_opts *o, const char *list) {
    double v[SUMMARY_MAX_PERCENTILES];
    int n = 0;
    const char *p = list;
    if (!p || !*p) return -1;
    for (;;) {
        char *end = NULL;
        double x = strtod(p, &end);
        if (end == p || !(x > 0.0 && x <= 100.0) || n == SUMMARY_MAX_PERCENTILES) return -1;
        v[n++] = x;
        if (*end == '\0') break;
        if (*end != ',') return -1;
        p = end + 1;
    }
    memcpy(o->percentiles, v, (size_t)n * sizeof v[0]);
    o->n_percentiles = n;
    return 0;
}

long summary_percentile_samples_needed(double p) {
    if (!(p < 100)) return LONG_MAX;
    if (p <= 0) return 1;
    return (long)ceil(100.0 / (100.0 - p) - 1e-9);
}

void summary_percentile_label(double p, char *buf, size_t len) {
    if (p == floor(p) && fabs(p) < 1e15) {
        snprintf(buf, len, "%lld", (long long)p);
        return;
    }
    /* shortest %.*g that reads back as the same double, like Python's str(float) */
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(buf, len, "%.*g", prec, p);
        if (strtod(buf, NULL) == p) return;
    }
}

/* ---- accumulation over the records ---- */

typedef struct {
    stats_samples ttft, tpot, e2el, queue, ttft_fs, e2el_fs;  /* ms, successful requests */
    stats_samples ttft_ea, e2el_ea, ttft_fs_ea, e2el_fs_ea;    /* ms, + +inf per failure */
    stats_samples queue_sent;     /* ms, every sent request, less connection setup: the client-lag check */
    stats_samples out_tok;        /* output tokens of each successful request */
    stats_samples trend_t, trend_v;  /* open loop: sched time (s) and TTFT from schedule (ms), the overload check */
    size_t new_conns;             /* requests that opened a new connection */
    double connect_ms_sum;
    hdr_hist *itl, *itl_tok;      /* ns: chunk view, per-token view */
    uint64_t multi_token_chunks;  /* later chunks (k >= 1) carrying m > 1 tokens */
    long total, completed, failed, warmup, good;
    long ended[REC_END_COUNT];    /* who ended each request and why */
    long errors[REC_OUTCOME_COUNT];
    long long in_tokens, out_tokens, in_tokens_server, out_tokens_client;
    long n_in_server, n_out_client, mismatches;
    double max_tokens_sum;
    long n_max_tokens;
    int64_t first_send, last_send, last_end;
    long sends;
    const summary_parts *parts;   /* chunk-level inputs from elsewhere (NULL: from the records) */
} acc;

static void acc_free(acc *a) {
    stats_samples *all[] = { &a->ttft, &a->tpot, &a->e2el, &a->queue, &a->ttft_fs, &a->e2el_fs,
                             &a->ttft_ea, &a->e2el_ea, &a->ttft_fs_ea, &a->e2el_fs_ea, &a->queue_sent,
                             &a->out_tok, &a->trend_t, &a->trend_v };
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) stats_free(all[i]);
    free(a->itl);
    free(a->itl_tok);
}

static int64_t rec_end_time(const record *r) {
    return r->end_ns > r->last_ns ? r->end_ns : r->last_ns;
}

static int64_t rec_queue_ns(const record *r) {
    return r->sched_ns > 0 && r->send_ns >= r->sched_ns ? r->send_ns - r->sched_ns : 0;
}

/* One record's chunk gaps into the pooled ITL histograms. */
static void add_itl(hdr_hist *itl, hdr_hist *itl_tok, uint64_t *multi_token_chunks, const record *r) {
    for (uint32_t k = 1; r->chunk_ns && k < r->n_chunks; k++) {
        int64_t gap = r->chunk_ns[k] - r->chunk_ns[k - 1];
        unsigned m = r->chunk_tokens && r->chunk_tokens[k] > 0 ? r->chunk_tokens[k] : 1;
        if (itl) hdr_record(itl, gap, 1);
        /* per-token view: the gap before a chunk of m tokens is m gaps of gap/m */
        if (itl_tok) hdr_record(itl_tok, llround((double)gap / m), m);
        if (m > 1) (*multi_token_chunks)++;
    }
}

/* One record's output tokens into 1 s bins from t0 (tokens outside [t0, t0 + bins s) are left out). */
static void add_tokens(long *tokens, size_t bins, int64_t t0, const record *r) {
    for (uint32_t k = 0; r->chunk_ns && k < r->n_chunks; k++) {
        int64_t t = r->chunk_ns[k];
        if (t < t0 || (size_t)((t - t0) / (int64_t)NS_PER_S) >= bins) continue;
        tokens[(t - t0) / (int64_t)NS_PER_S] += r->chunk_tokens && r->chunk_tokens[k] ? r->chunk_tokens[k] : 1;
    }
}

static int add_ok(acc *a, const record *r, const summary_opts *o) {
    int rc = 0;
    req_metrics m;
    req_metrics_of(r, &m);
    if (m.has_ttft) {
        rc |= stats_add(&a->ttft, m.ttft_ms) | stats_add(&a->ttft_fs, m.ttft_from_schedule_ms);
        rc |= stats_add(&a->ttft_ea, m.ttft_ms) | stats_add(&a->ttft_fs_ea, m.ttft_from_schedule_ms);
        if (isfinite(m.tpot_ms)) rc |= stats_add(&a->tpot, m.tpot_ms);
        if (r->sched_ns > 0 && o->intended_rate_per_s > 0)
            rc |= stats_add(&a->trend_t, (double)r->sched_ns / NS_PER_S) | stats_add(&a->trend_v, m.ttft_from_schedule_ms);
    }
    if (isfinite(m.e2el_ms)) {
        rc |= stats_add(&a->e2el, m.e2el_ms) | stats_add(&a->e2el_fs, m.e2el_from_schedule_ms);
        rc |= stats_add(&a->e2el_ea, m.e2el_ms) | stats_add(&a->e2el_fs_ea, m.e2el_from_schedule_ms);
    }
    rc |= stats_add(&a->queue, m.queue_ms) | stats_add(&a->out_tok, (double)m.out_tokens);
    if (!a->parts) add_itl(a->itl, a->itl_tok, &a->multi_token_chunks, r);
    a->completed++;
    a->out_tokens += m.out_tokens;
    a->in_tokens += r->in_tokens >= 0 ? r->in_tokens : (r->in_tokens_server >= 0 ? r->in_tokens_server : 0);
    if (r->in_tokens_server >= 0) { a->in_tokens_server += r->in_tokens_server; a->n_in_server++; }
    if (r->out_tokens_client >= 0) { a->out_tokens_client += r->out_tokens_client; a->n_out_client++; }
    if (r->out_tokens_server >= 0 && r->out_tokens_client >= 0 && r->out_tokens_server != r->out_tokens_client)
        a->mismatches++;
    req_slo slo = { o->slo_ttft_ms, o->slo_tpot_ms, o->slo_e2el_ms, o->slo_ttfa_ms };
    if (req_meets_slo(&slo, &m)) a->good++;
    return rc;
}

static int add_failed(acc *a, const record *r) {
    a->failed++;
    a->errors[r->outcome < REC_OUTCOME_COUNT ? r->outcome : REC_ERR_STREAM]++;
    return stats_add(&a->ttft_ea, INFINITY) | stats_add(&a->e2el_ea, INFINITY) |
           stats_add(&a->ttft_fs_ea, INFINITY) | stats_add(&a->e2el_fs_ea, INFINITY);
}

static int accumulate(acc *a, const recset *recs, const summary_opts *o) {
    a->itl = malloc(sizeof *a->itl);
    a->itl_tok = malloc(sizeof *a->itl_tok);
    if (!a->itl || !a->itl_tok) return -1;
    hdr_init(a->itl);
    hdr_init(a->itl_tok);
    if (a->parts) {
        if (a->parts->itl) hdr_merge(a->itl, a->parts->itl);
        if (a->parts->itl_tok) hdr_merge(a->itl_tok, a->parts->itl_tok);
        a->multi_token_chunks = a->parts->multi_token_chunks;
    }
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup) { a->warmup++; continue; }
        a->total++;
        if (r->max_tokens >= 0) { a->max_tokens_sum += r->max_tokens; a->n_max_tokens++; }
        if (r->send_ns > 0) {
            if (!a->sends || r->send_ns < a->first_send) a->first_send = r->send_ns;
            if (!a->sends || r->send_ns > a->last_send) a->last_send = r->send_ns;
            a->sends++;
            /* connection setup is not the client falling behind: leave it out of the lag check */
            int64_t q = rec_queue_ns(r) - r->connect_ns;
            if (stats_add(&a->queue_sent, (double)(q > 0 ? q : 0) / NS_PER_MS)) return -1;
            if (r->connect_ns > 0) { a->new_conns++; a->connect_ms_sum += r->connect_ns / 1e6; }
        }
        if (rec_end_time(r) > a->last_end) a->last_end = rec_end_time(r);
        a->ended[record_end(r)]++;
        /* a request dsperf cancelled itself is neither a success nor a failure */
        if (r->outcome == REC_ERR_CANCELLED) continue;
        if ((r->outcome == REC_OK ? add_ok(a, r, o) : add_failed(a, r)) != 0) return -1;
    }
    return 0;
}

/* ---- JSON helpers ---- */

static json_t *jreal(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static void set_real(json_t *obj, const char *key, double x) { json_object_set_new(obj, key, jreal(x)); }

static void set_metric(json_t *obj, const char *stat, const char *name, const char *suffix, double x) {
    char key[128];
    snprintf(key, sizeof key, "%s_%s%s", stat, name, suffix);
    set_real(obj, key, x);
}

/* mean/median/std/min/max and p{P} of an exact sample set, in ms. */
static void emit_exact(json_t *obj, const char *name, stats_samples *s, const summary_opts *o) {
    stats_sort(s);
    set_metric(obj, "mean", name, "_ms", stats_mean(s->v, s->n));
    set_metric(obj, "median", name, "_ms", stats_percentile_sorted(s->v, s->n, 50));
    set_metric(obj, "std", name, "_ms", stats_std(s->v, s->n));
    set_metric(obj, "min", name, "_ms", s->n ? s->v[0] : NAN);
    set_metric(obj, "max", name, "_ms", s->n ? s->v[s->n - 1] : NAN);
    for (int i = 0; i < o->n_percentiles; i++) {
        char p[32], stat[40];
        summary_percentile_label(o->percentiles[i], p, sizeof p);
        snprintf(stat, sizeof stat, "p%s", p);
        set_metric(obj, stat, name, "_ms", stats_percentile_sorted(s->v, s->n, o->percentiles[i]));
    }
}

void summary_emit_exact(json_t *obj, const char *name, stats_samples *s, const summary_opts *o) {
    emit_exact(obj, name, s, o);
}

/* ---- samples, so two runs can be compared with statistics (dsperf compare) ----
 * Every sample of every request-level metric, at any run length, as a sample set (sampleset.h:
 * the HDR buckets with exact n, min, max, mean and m2; a few kilobytes per metric): compare sizes
 * its intervals by the run's true n, and runs merge exactly. Latencies in ns; "out_tokens" (output
 * tokens per successful request, which relates request to token throughput) in tokens. Pooled ITL
 * comes from its histogram. */
static json_t *set_json(hdr_hist *h, const stats_samples *s, double scale) {
    hdr_init(h);
    for (size_t i = 0; s && i < s->n; i++) hdr_record(h, llround(s->v[i] * scale), 1);
    sampleset ss;
    sampleset_init(&ss);
    json_t *j = sampleset_from_hdr(&ss, h) == 0 ? sampleset_to_json(&ss) : NULL;
    sampleset_free(&ss);
    return j ? j : json_null();
}

json_t *summary_samples_family(const double *v, size_t n, double scale) {
    hdr_hist *h = malloc(sizeof *h);
    if (!h) return json_null();
    stats_samples s = { .v = (double *)v, .n = n, .cap = n };
    json_t *j = set_json(h, &s, scale);
    free(h);
    return j;
}

static json_t *samples_json(acc *a) {
    json_t *o = json_object();
    hdr_hist *h = malloc(sizeof *h);
    if (!h) return o;
    json_object_set_new(o, "format", json_string(SAMPLESET_FORMAT));
    json_object_set_new(o, "unit", json_string("ns"));
    json_object_set_new(o, "rel_error", json_real(HDR_REL_ERROR));
    struct { const char *name; stats_samples *s; double scale; } exact[] = {
        {"ttft", &a->ttft, NS_PER_MS}, {"tpot", &a->tpot, NS_PER_MS}, {"e2el", &a->e2el, NS_PER_MS},
        {"queue", &a->queue, NS_PER_MS}, {"ttft_from_schedule", &a->ttft_fs, NS_PER_MS},
        {"e2el_from_schedule", &a->e2el_fs, NS_PER_MS}, {"out_tokens", &a->out_tok, 1},
    };
    for (size_t i = 0; i < sizeof exact / sizeof exact[0]; i++)
        json_object_set_new(o, exact[i].name, set_json(h, exact[i].s, exact[i].scale));
    sampleset ss;
    sampleset_init(&ss);
    json_t *itl = sampleset_from_hdr(&ss, a->itl) == 0 ? sampleset_to_json(&ss) : NULL;
    sampleset_free(&ss);
    json_object_set_new(o, "itl", itl ? itl : json_null());
    json_object_set_new(o, "units", json_pack("{s:s}", "out_tokens", "tokens"));
    free(h);
    return o;
}

/* The same fields from a histogram of ns values. */
static void emit_hdr(json_t *obj, const char *name, const hdr_hist *h, const summary_opts *o) {
    int any = h->total > 0;
    set_metric(obj, "mean", name, "_ms", hdr_mean(h) / NS_PER_MS);
    set_metric(obj, "median", name, "_ms", hdr_percentile(h, 50) / NS_PER_MS);
    set_metric(obj, "std", name, "_ms", hdr_std(h) / NS_PER_MS);
    set_metric(obj, "min", name, "_ms", any ? (double)h->min / NS_PER_MS : NAN);
    set_metric(obj, "max", name, "_ms", any ? (double)h->max / NS_PER_MS : NAN);
    for (int i = 0; i < o->n_percentiles; i++) {
        char p[32], stat[40];
        summary_percentile_label(o->percentiles[i], p, sizeof p);
        snprintf(stat, sizeof stat, "p%s", p);
        set_metric(obj, stat, name, "_ms", hdr_percentile(h, o->percentiles[i]) / NS_PER_MS);
    }
}

/* p{P}_{name}_error_adjusted_ms (null when it lands on a failure) and
 * p{P}_{name}_error_adjusted_inf (true then). */
static void emit_error_adjusted(json_t *obj, const char *name, stats_samples *s, const summary_opts *o) {
    stats_sort(s);
    for (int i = 0; i < o->n_percentiles; i++) {
        char p[32], stat[40];
        summary_percentile_label(o->percentiles[i], p, sizeof p);
        snprintf(stat, sizeof stat, "p%s", p);
        double v = stats_percentile_sorted(s->v, s->n, o->percentiles[i]);
        set_metric(obj, stat, name, "_error_adjusted_ms", v);
        char key[128];
        snprintf(key, sizeof key, "%s_%s_error_adjusted_inf", stat, name);
        json_object_set_new(obj, key, json_boolean(isinf(v)));
    }
}

static json_t *errors_json(const acc *a, const recset *recs) {
    json_t *e = json_object(), *st = json_object();
    for (int k = REC_ERR_CONNECT; k < REC_OUTCOME_COUNT; k++) {
        if (k == REC_ERR_CANCELLED) continue;     /* dsperf's own cancellations are no error: see "ended" */
        json_object_set_new(e, rec_outcome_name((rec_outcome)k), json_integer(a->errors[k]));
        if (k == REC_ERR_HTTP) json_object_set(e, "http_status", st);
    }
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_ERR_HTTP) continue;
        char code[16];
        snprintf(code, sizeof code, "%d", (int)r->http_status);
        json_t *c = json_object_get(st, code);
        json_object_set_new(st, code, json_integer(c ? json_integer_value(c) + 1 : 1));
    }
    json_decref(st);
    return e;
}

/* ---- timeline: per-second bins from the first send ---- */

typedef struct { int64_t t; int d; } tl_event;

static int cmp_event(const void *x, const void *y) {
    const tl_event *a = x, *b = y;
    if (a->t != b->t) return (a->t > b->t) - (a->t < b->t);
    return a->d - b->d;   /* departures before arrivals at the same instant: [start, end) */
}

/* Sorts events and writes, per bin, the maximum of the running count within that second (the
 * count carried into the bin included). Returns the overall peak. */
static long sweep_max(tl_event *ev, size_t n, int64_t t0, long *out, size_t bins) {
    qsort(ev, n, sizeof *ev, cmp_event);
    long cur = 0, peak = 0;
    size_t j = 0;
    while (j < n && ev[j].t < t0) { cur += ev[j].d; j++; }
    if (cur > peak) peak = cur;
    for (size_t b = 0; b < bins; b++) {
        int64_t end = t0 + (int64_t)(b + 1) * (int64_t)NS_PER_S;
        long m = cur;
        while (j < n && ev[j].t < end) {
            cur += ev[j++].d;
            if (cur > m) m = cur;
        }
        out[b] = m;
        if (m > peak) peak = m;
    }
    for (; j < n; j++) { cur += ev[j].d; if (cur > peak) peak = cur; }
    return peak;
}

static json_t *long_array(const long *v, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer(v[i]));
    return a;
}

typedef struct {
    long peak_tokens, peak_in_flight;
    json_t *json;
} timeline_out;

static int timeline(const recset *recs, const acc *a, timeline_out *out) {
    memset(out, 0, sizeof *out);
    if (!a->sends) return 0;
    int64_t t0 = a->first_send, span = a->last_end > t0 ? a->last_end - t0 : 0;
    size_t bins = (size_t)(span / (int64_t)NS_PER_S) + 1;
    int truncated = bins > TIMELINE_MAX_BINS;
    if (truncated) bins = TIMELINE_MAX_BINS;
    long *started = calloc(bins, sizeof(long)), *finished = calloc(bins, sizeof(long));
    long *failed = calloc(bins, sizeof(long)), *tokens = calloc(bins, sizeof(long));
    long *inflight = calloc(bins, sizeof(long)), *queued = calloc(bins, sizeof(long));
    size_t nev = 0, nq = 0;
    for (size_t i = 0; i < recs->n; i++) if (!recs->v[i].warmup) nev++;
    tl_event *ev = malloc((2 * nev + 1) * sizeof *ev), *qev = malloc((2 * nev + 1) * sizeof *qev);
    int rc = -1;
    if (!started || !finished || !failed || !tokens || !inflight || !queued || !ev || !qev) goto done;
    nev = 0;
#define BIN(t) ((t) >= t0 && (size_t)(((t) - t0) / (int64_t)NS_PER_S) < bins ? (size_t)(((t) - t0) / (int64_t)NS_PER_S) : (size_t)-1)
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup) continue;
        if (r->send_ns <= 0) {
            /* never sent (cancelled while waiting in the client): queued until it was dropped */
            if (r->sched_ns > 0 && rec_end_time(r) > r->sched_ns) {
                qev[nq++] = (tl_event){ r->sched_ns, +1 };
                qev[nq++] = (tl_event){ rec_end_time(r), -1 };
            }
            size_t fb = BIN(rec_end_time(r));
            if (record_failed(r) && fb != (size_t)-1) failed[fb]++;
            continue;
        }
        int64_t end = rec_end_time(r);
        if (end < r->send_ns) end = r->send_ns;
        size_t b = BIN(r->send_ns);
        if (b != (size_t)-1) started[b]++;
        b = BIN(end);
        if (b != (size_t)-1 && r->outcome == REC_OK) finished[b]++;
        else if (b != (size_t)-1 && record_failed(r)) failed[b]++;
        ev[nev++] = (tl_event){ r->send_ns, +1 };
        ev[nev++] = (tl_event){ end, -1 };
        if (r->sched_ns > 0 && r->sched_ns < r->send_ns) {
            qev[nq++] = (tl_event){ r->sched_ns, +1 };
            qev[nq++] = (tl_event){ r->send_ns, -1 };
        }
        if (r->outcome == REC_OK && !a->parts) add_tokens(tokens, bins, t0, r);
    }
#undef BIN
    /* parts: the bins were made on the same axis (summary_axis) where the chunks are */
    if (a->parts && a->parts->tokens && a->parts->first_send_ns == t0)
        for (size_t b = 0; b < bins && b < a->parts->n_bins; b++) tokens[b] = a->parts->tokens[b];
    out->peak_in_flight = sweep_max(ev, nev, t0, inflight, bins);
    sweep_max(qev, nq, t0, queued, bins);
    for (size_t b = 0; b < bins; b++) if (tokens[b] > out->peak_tokens) out->peak_tokens = tokens[b];
    json_t *tl = json_object(), *ts = json_array();
    for (size_t b = 0; b < bins; b++) json_array_append_new(ts, json_integer((json_int_t)b));
    json_object_set_new(tl, "t_s", ts);
    json_object_set_new(tl, "started", long_array(started, bins));
    json_object_set_new(tl, "finished", long_array(finished, bins));
    json_object_set_new(tl, "failed", long_array(failed, bins));
    json_object_set_new(tl, "output_tokens", long_array(tokens, bins));
    json_object_set_new(tl, "in_flight", long_array(inflight, bins));
    json_object_set_new(tl, "queued", long_array(queued, bins));
    json_object_set_new(tl, "gauges", json_string("max_within_second"));
    if (truncated) json_object_set_new(tl, "truncated", json_true());
    out->json = tl;
    rc = 0;
done:
    free(started); free(finished); free(failed); free(tokens); free(inflight); free(queued);
    free(ev); free(qev);
    return rc;
}

/* ---- did the client keep its plan? ----
 * Rule: the client fell behind when
 *   (a) the p99 of queue time (send - sched, less any new connection's setup) over sent requests exceeds
 *       max(10 ms, 10 % of the mean planned inter-arrival gap) — closed loop: 10 ms, the time
 *       from a freed slot to the next send — or
 *   (b) open loop, at least 10 sends, and the achieved send rate is below 90 % of the intended.
 * Either is explained, and reported as a capped client queue instead of lag, when a
 * --max-concurrency cap is in force and the run reached it (peak in-flight >= cap): requests
 * then wait for a slot by design, and that wait is measured, not hidden. */
static void client_lag(json_t *obj, const acc *a, stats_samples *qs, const summary_opts *o, long peak_in_flight,
                       double achieved) {
    stats_sort(qs);
    double q99 = stats_percentile_sorted(qs->v, qs->n, 99);
    double gap_ms = o->intended_rate_per_s > 0 ? 1000.0 / o->intended_rate_per_s : 0;
    double thr_ms = gap_ms * 0.1 > 10.0 ? gap_ms * 0.1 : 10.0;
    char why[256] = "";
    if (qs->n && q99 > thr_ms)
        snprintf(why, sizeof why, "p99 client queue %.1f ms > %.1f ms", q99, thr_ms);
    else if (o->intended_rate_per_s > 0 && a->sends >= 10 && isfinite(achieved) &&
             achieved < 0.9 * o->intended_rate_per_s)
        snprintf(why, sizeof why, "achieved %.2f req/s < 90%% of intended %.2f req/s", achieved,
                 o->intended_rate_per_s);
    int capped = why[0] && o->max_concurrency > 0 && peak_in_flight >= o->max_concurrency;
    json_object_set_new(obj, "client_lag_threshold_ms", json_real(thr_ms));
    json_object_set_new(obj, "new_connections", json_integer((json_int_t)a->new_conns));
    json_object_set_new(obj, "mean_connect_ms", a->new_conns ? json_real(a->connect_ms_sum / a->new_conns) : json_null());
    json_object_set_new(obj, "client_fell_behind", json_boolean(why[0] && !capped));
    json_object_set_new(obj, "client_lag_reason", why[0] && !capped ? json_string(why) : json_null());
    json_object_set_new(obj, "client_queue_capped", json_boolean(capped));
    if (capped) {
        char note[400];
        snprintf(note, sizeof note, "client queue (capped by --max-concurrency %d): %s", o->max_concurrency, why);
        json_object_set_new(obj, "client_queue_reason", json_string(note));
    }
}

/* ---- did the server keep up with the offered load? (open loop) ----
 * Rule: overloaded when the server completed requests at under 97 % of the intended rate and the
 * TTFT from schedule grew through the run: its median over the last fifth of the requests (by
 * scheduled time) is at least twice, and at least 100 ms above, the median over the first fifth.
 * Both together: a short run whose last requests are still finishing has the first without the
 * second, and a burst that passes has the second without the first. An overloaded run's latencies
 * grow with its length (the queue does): they describe no steady state. Closed loop cannot
 * overload this way (the server sets the pace), so the fields are null there. */
typedef struct { double t, v; } tv_pair;

static int cmp_tv(const void *x, const void *y) {
    const tv_pair *a = x, *b = y;
    return (a->t > b->t) - (a->t < b->t);
}

static double median_of(double *v, size_t n) {
    stats_samples s = { .v = v, .n = n, .cap = n };
    stats_sort(&s);
    return stats_percentile_sorted(v, n, 50);
}

static void overload(json_t *obj, acc *a, const summary_opts *o, double served) {
    size_t n = a->trend_t.n;
    bool open = o->intended_rate_per_s > 0;
    double first = NAN, last = NAN;
    if (open && n >= 10) {
        tv_pair *p = malloc(n * sizeof *p);
        double *v = malloc(n * sizeof *v);
        if (p && v) {
            for (size_t i = 0; i < n; i++) p[i] = (tv_pair){ a->trend_t.v[i], a->trend_v.v[i] };
            qsort(p, n, sizeof *p, cmp_tv);
            size_t f = n / 5;
            for (size_t i = 0; i < f; i++) v[i] = p[i].v;
            first = median_of(v, f);
            for (size_t i = 0; i < f; i++) v[i] = p[n - f + i].v;
            last = median_of(v, f);
        }
        free(p);
        free(v);
    }
    bool slow = open && isfinite(served) && served < 0.97 * o->intended_rate_per_s;
    bool grew = isfinite(first) && isfinite(last) && last >= 2 * first && last - first >= 100;
    json_object_set_new(obj, "ttft_from_schedule_first_fifth_ms", jreal(first));
    json_object_set_new(obj, "ttft_from_schedule_last_fifth_ms", jreal(last));
    json_object_set_new(obj, "served_fraction", open && isfinite(served) ? json_real(served / o->intended_rate_per_s) : json_null());
    json_object_set_new(obj, "server_overloaded", open && n >= 10 ? json_boolean(slow && grew) : json_null());
    char why[320];
    if (slow && grew) {
        snprintf(why, sizeof why, "offered %.2f req/s, served %.2f req/s (%.0f%%); TTFT from schedule grew from %.0f ms "
                 "(first fifth of the requests) to %.0f ms (last fifth)", o->intended_rate_per_s, served,
                 100 * served / o->intended_rate_per_s, first, last);
        json_object_set_new(obj, "server_overload_reason", json_string(why));
    } else {
        json_object_set_new(obj, "server_overload_reason", json_null());
    }
}

/* ---- assembly ---- */

json_t *summary_compute(const recset *recs, const summary_opts *o) { return summary_compute_parts(recs, o, NULL); }

static int in_class(const record *r, int class_id) { return class_id < 0 || r->class_id == class_id; }

void summary_axis(const recset *recs, int class_id, int64_t *first_send_ns, size_t *n_bins) {
    int64_t first = 0, last = 0;
    long sends = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || !in_class(r, class_id)) continue;
        if (r->send_ns > 0 && (!sends++ || r->send_ns < first)) first = r->send_ns;
        if (rec_end_time(r) > last) last = rec_end_time(r);
    }
    *first_send_ns = sends ? first : 0;
    /* as timeline() sizes its bins */
    size_t bins = sends ? (size_t)((last > first ? last - first : 0) / (int64_t)NS_PER_S) + 1 : 0;
    *n_bins = bins > TIMELINE_MAX_BINS ? TIMELINE_MAX_BINS : bins;
}

void summary_parts_add(summary_parts *p, const recset *recs, int class_id) {
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_OK || !in_class(r, class_id)) continue;
        add_itl(p->itl, p->itl_tok, &p->multi_token_chunks, r);
        if (p->tokens) add_tokens(p->tokens, p->n_bins, p->first_send_ns, r);
    }
}

json_t *summary_compute_parts(const recset *recs, const summary_opts *o, const summary_parts *parts) {
    acc a;
    memset(&a, 0, sizeof a);
    a.parts = parts;
    timeline_out tl = { 0 };
    json_t *obj = NULL;
    if (accumulate(&a, recs, o) != 0 || timeline(recs, &a, &tl) != 0) goto done;
    obj = json_object();
    double d_s = a.sends && a.last_end > a.first_send ? (double)(a.last_end - a.first_send) / NS_PER_S : NAN;
    int has_slo = o->slo_ttft_ms > 0 || o->slo_tpot_ms > 0 || o->slo_e2el_ms > 0 || o->slo_ttfa_ms > 0;

    json_object_set_new(obj, "completed", json_integer(a.completed));
    json_object_set_new(obj, "failed", json_integer(a.failed));   /* server-side failures only */
    long cancelled = a.ended[REC_END_DEADLINE] + a.ended[REC_END_INTERRUPT] + a.ended[REC_END_EARLY_STOP];
    json_object_set_new(obj, "cancelled", json_integer(cancelled));
    json_t *ended = json_object();
    for (int k = 0; k < REC_END_COUNT; k++) json_object_set_new(ended, rec_end_name((rec_end)k), json_integer(a.ended[k]));
    json_object_set_new(obj, "ended", ended);
    json_object_set_new(obj, "total_requests", json_integer(a.total));
    json_object_set_new(obj, "warmup_requests", json_integer(a.warmup));
    set_real(obj, "duration", d_s);
    json_object_set_new(obj, "total_input_tokens", json_integer(a.in_tokens));
    json_object_set_new(obj, "total_output_tokens", json_integer(a.out_tokens));
    json_object_set_new(obj, "total_input_tokens_server", a.n_in_server ? json_integer(a.in_tokens_server) : json_null());
    json_object_set_new(obj, "total_output_tokens_client", a.n_out_client ? json_integer(a.out_tokens_client) : json_null());
    json_object_set_new(obj, "output_token_mismatches", json_integer(a.mismatches));
    /* what was asked for: compare refuses latencies of runs that asked for different lengths */
    set_real(obj, "max_tokens_mean", a.n_max_tokens ? a.max_tokens_sum / a.n_max_tokens : NAN);
    set_real(obj, METRIC(request_throughput), a.completed / d_s);
    if (has_slo) {
        set_real(obj, METRIC(request_goodput), a.good / d_s);
        json_object_set_new(obj, "good_requests", json_integer(a.good));
        json_t *slo = json_object();
        if (o->slo_ttft_ms > 0) json_object_set_new(slo, "ttft_ms", json_real(o->slo_ttft_ms));
        if (o->slo_tpot_ms > 0) json_object_set_new(slo, "tpot_ms", json_real(o->slo_tpot_ms));
        if (o->slo_e2el_ms > 0) json_object_set_new(slo, "e2el_ms", json_real(o->slo_e2el_ms));
        if (o->slo_ttfa_ms > 0) json_object_set_new(slo, "ttfa_ms", json_real(o->slo_ttfa_ms));
        json_object_set_new(obj, "goodput_slo", slo);
    }
    set_real(obj, METRIC(output_throughput), (double)a.out_tokens / d_s);
    set_real(obj, METRIC(total_token_throughput), (double)(a.in_tokens + a.out_tokens) / d_s);
    /* intervals that respect time (metrics/timeint.h); merged runs keep their chunks elsewhere */
    json_t *ti = parts ? NULL : timeint_run(recs, 0.95, (double)a.out_tokens / d_s, a.completed / d_s);
    if (ti) json_object_set_new(obj, "time_intervals", ti);
    /* vLLM: "max_concurrency" is the configured cap; the observed peak is max_concurrent_requests */
    json_object_set_new(obj, "max_concurrency", o->max_concurrency > 0 ? json_integer(o->max_concurrency) : json_null());
    /* vLLM writes the configured rate as request_rate, "inf" when unpaced (closed loop) */
    json_object_set_new(obj, "request_rate",
                        o->intended_rate_per_s > 0 ? json_real(o->intended_rate_per_s) : json_string("inf"));
    json_object_set_new(obj, "max_concurrent_requests", json_integer(tl.peak_in_flight));
    json_object_set_new(obj, "peak_concurrent_requests", json_integer(tl.peak_in_flight));
    json_object_set_new(obj, METRIC(max_output_tokens_per_s), json_real((double)tl.peak_tokens));
    json_object_set_new(obj, METRIC(peak_output_throughput), json_real((double)tl.peak_tokens));

    json_t *pl = json_array();
    for (int i = 0; i < o->n_percentiles; i++) json_array_append_new(pl, json_real(o->percentiles[i]));
    json_object_set_new(obj, "percentiles", pl);
    json_object_set_new(obj, "request_metrics_method", json_string("exact"));
    json_object_set_new(obj, "itl_method", json_string("hdr"));
    json_object_set_new(obj, "itl_rel_error", json_real(HDR_REL_ERROR));

    emit_exact(obj, "ttft", &a.ttft, o);
    emit_exact(obj, "tpot", &a.tpot, o);
    emit_hdr(obj, "itl", a.itl, o);
    json_object_set_new(obj, "itl_samples", json_integer((json_int_t)a.itl->total));
    emit_exact(obj, "e2el", &a.e2el, o);
    emit_exact(obj, "queue", &a.queue, o);
    emit_exact(obj, "ttft_from_schedule", &a.ttft_fs, o);
    emit_exact(obj, "e2el_from_schedule", &a.e2el_fs, o);
    /* per-token ITL only differs from the chunk view when a later chunk carried m > 1 tokens */
    json_object_set_new(obj, "multi_token_chunks", json_integer((json_int_t)a.multi_token_chunks));
    json_object_set_new(obj, "itl_per_token_reported", json_boolean(a.multi_token_chunks > 0));
    if (a.multi_token_chunks > 0) {
        emit_hdr(obj, "itl_per_token", a.itl_tok, o);
        json_object_set_new(obj, "itl_per_token_samples", json_integer((json_int_t)a.itl_tok->total));
    }
    emit_error_adjusted(obj, "ttft", &a.ttft_ea, o);
    emit_error_adjusted(obj, "e2el", &a.e2el_ea, o);
    emit_error_adjusted(obj, "ttft_from_schedule", &a.ttft_fs_ea, o);
    emit_error_adjusted(obj, "e2el_from_schedule", &a.e2el_fs_ea, o);

    json_object_set_new(obj, "errors", errors_json(&a, recs));

    double achieved = a.sends > 1 && a.last_send > a.first_send
                          ? (double)(a.sends - 1) * NS_PER_S / (double)(a.last_send - a.first_send) : NAN;
    set_real(obj, "intended_rate_per_s", o->intended_rate_per_s > 0 ? o->intended_rate_per_s : NAN);
    /* (sends - 1) / span: n sends span n - 1 gaps, so this is the mean send rate without bias */
    set_real(obj, "achieved_rate_per_s", achieved);
    if (o->planned_duration_ns > 0) set_real(obj, "planned_duration", (double)o->planned_duration_ns / NS_PER_S);
    client_lag(obj, &a, &a.queue_sent, o, tl.peak_in_flight, achieved);
    overload(obj, &a, o, a.completed / d_s);

    json_object_set_new(obj, "timeline", tl.json ? tl.json : json_object());
    tl.json = NULL;
    /* prefix-cache hits and conversations, when the workload has them (metrics/workload.h) */
    json_t *pc = workload_prefix_cache(recs, o), *ss = workload_sessions(recs, o);
    if (pc) json_object_set_new(obj, "prefix_cache", pc);
    if (ss) json_object_set_new(obj, "sessions", ss);
    json_object_set_new(obj, "samples", samples_json(&a));
    /* reasoning vs answer, the server's own timing, and the run's self-checks (metrics/phases.h) */
    phases_add(obj, recs, o);
    accept_add(obj, recs, o);   /* tokens per decode step: MTP, speculative decoding (metrics/accept.h) */
done:
    json_decref(tl.json);
    acc_free(&a);
    return obj;
}
