/* mon_metrics — the monitor's aggregates: fixed-bucket histograms, outcome counters, the SLO
 * window ring and the Prometheus text exposition of all of them. */
#include "monitor/monitor.h"
#include "metrics/request_metrics.h"
#include "common/clock.h"
#include "common/redact.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Bucket bounds in seconds. Denser where LLM serving latencies usually sit (TTFT 10 ms - 2 s,
 * inter-token gaps 2 - 100 ms, whole requests 0.5 - 60 s), with a long tail so timeouts still
 * land in a finite bucket. */
const double mon_ttft_bounds_s[] = {
    0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5,
    0.75, 1, 1.5, 2, 3, 5, 7.5, 10, 20, 30, 60, 120,
};
const int mon_ttft_n_bounds = (int)(sizeof mon_ttft_bounds_s / sizeof mon_ttft_bounds_s[0]);
const double mon_itl_bounds_s[] = {
    0.001, 0.0025, 0.005, 0.0075, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15,
    0.2, 0.3, 0.5, 0.75, 1, 2.5, 5, 10,
};
const int mon_itl_n_bounds = (int)(sizeof mon_itl_bounds_s / sizeof mon_itl_bounds_s[0]);
const double mon_e2el_bounds_s[] = {
    0.05, 0.1, 0.25, 0.5, 0.75, 1, 1.5, 2, 3, 4, 5, 7.5, 10, 15, 20, 30, 45, 60, 90, 120, 180,
    300, 600,
};
const int mon_e2el_n_bounds = (int)(sizeof mon_e2el_bounds_s / sizeof mon_e2el_bounds_s[0]);

/* ---- histogram ---- */

void mon_hist_init(mon_hist *h, const double *bounds_s, int n_bounds) {
    memset(h, 0, sizeof *h);
    h->bounds_s = bounds_s;
    h->n_bounds = n_bounds > MON_MAX_BOUNDS ? MON_MAX_BOUNDS : n_bounds;
}

void mon_hist_observe(mon_hist *h, double v_s) {
    if (isnan(v_s)) return;
    /* first bound >= v (binary search; bounds ascend) */
    int lo = 0, hi = h->n_bounds;
    while (lo < hi) {
        int mid = (lo + hi) / 2;
        if (h->bounds_s[mid] >= v_s) hi = mid; else lo = mid + 1;
    }
    h->counts[lo]++;
    h->count++;
    h->sum_s += v_s;
}

void mon_hist_write(const mon_hist *h, const char *name, const char *help, FILE *f) {
    fprintf(f, "# HELP %s %s\n# TYPE %s histogram\n", name, help, name);
    uint64_t cum = 0;
    for (int i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        fprintf(f, "%s_bucket{le=\"%.6g\"} %llu\n", name, h->bounds_s[i], (unsigned long long)cum);
    }
    cum += h->counts[h->n_bounds];
    fprintf(f, "%s_bucket{le=\"+Inf\"} %llu\n", name, (unsigned long long)cum);
    fprintf(f, "%s_sum %.9g\n%s_count %llu\n", name, h->sum_s, name, (unsigned long long)h->count);
}

/* ---- SLO window ring ---- */

void mon_window_init(mon_window *w) {
    memset(w, 0, sizeof *w);
    for (int i = 0; i < MON_SLOTS; i++) w->slot[i] = -1;
}

void mon_window_add(mon_window *w, int64_t now_ns, bool good) {
    if (now_ns < 0) now_ns = 0;
    int64_t s = now_ns / MON_SLOT_NS;
    int i = (int)(s % MON_SLOTS);
    if (w->slot[i] != s) {   /* the entry held a slot 6 h old (or none): start it afresh */
        w->slot[i] = s;
        w->good[i] = w->total[i] = 0;
    }
    w->total[i]++;
    if (good) w->good[i]++;
}

void mon_window_sum(const mon_window *w, int64_t now_ns, int64_t window_ns, uint64_t *good, uint64_t *total) {
    *good = *total = 0;
    if (now_ns < 0) now_ns = 0;
    int64_t cur = now_ns / MON_SLOT_NS;
    int64_t n = window_ns / MON_SLOT_NS;
    if (n < 1) n = 1;
    if (n > MON_SLOTS) n = MON_SLOTS;
    for (int64_t s = cur - n + 1; s <= cur; s++) {
        if (s < 0) continue;
        int i = (int)(s % MON_SLOTS);
        if (w->slot[i] != s) continue;
        *good += w->good[i];
        *total += w->total[i];
    }
}

double mon_burn_rate(uint64_t good, uint64_t total, double target) {
    if (!total || !(target < 1)) return NAN;
    return ((double)(total - good) / (double)total) / (1 - target);
}

/* ---- one probe ---- */

/* The metrics are request_metrics' (the one definition); the monitor keeps them in seconds. */
void mon_probe_measure(const record *r, mon_probe *p) {
    req_metrics m;
    req_metrics_of(r, &m);
    p->ok = m.completed;
    p->out_tokens = m.out_tokens;
    p->ttft_s = p->e2el_s = p->tpot_s = p->ttfa_s = NAN;
    p->has_reasoning = false;
    if (!p->ok) return;
    p->has_reasoning = m.has_reasoning;
    p->ttfa_s = m.ttfa_ms / 1e3;
    p->ttft_s = m.ttft_ms / 1e3;
    p->e2el_s = m.e2el_ms / 1e3;
    p->tpot_s = m.tpot_ms / 1e3;
}

bool mon_slo_good(const mon_slo *s, const mon_probe *p) {
    req_metrics m = { .completed = p->ok, .has_ttft = p->ok && !isnan(p->ttft_s), .ttft_ms = p->ttft_s * 1e3,
                      .tpot_ms = p->tpot_s * 1e3, .e2el_ms = p->e2el_s * 1e3, .has_reasoning = p->has_reasoning,
                      .has_ttfa = p->has_reasoning && !isnan(p->ttfa_s), .ttfa_ms = p->ttfa_s * 1e3 };
    req_slo slo = { s->ttft_s * 1e3, s->tpot_s * 1e3, s->e2el_s * 1e3, s->ttfa_s * 1e3 };
    return req_meets_slo(&slo, &m);
}

/* ---- aggregate ---- */

void mon_metrics_init(mon_metrics *m, const mon_slo *slo, double rate_per_s, const char *url, const char *api) {
    memset(m, 0, sizeof *m);
    pthread_mutex_init(&m->mu, NULL);
    m->slo = *slo;
    mon_hist_init(&m->ttft, mon_ttft_bounds_s, mon_ttft_n_bounds);
    mon_hist_init(&m->itl, mon_itl_bounds_s, mon_itl_n_bounds);
    mon_hist_init(&m->tpot, mon_itl_bounds_s, mon_itl_n_bounds);
    mon_hist_init(&m->e2el, mon_e2el_bounds_s, mon_e2el_n_bounds);
    mon_hist_init(&m->ttfa, mon_e2el_bounds_s, mon_e2el_n_bounds);   /* TTFA spans reasoning: E2EL's range */
    mon_window_init(&m->win);
    m->rate_per_s = rate_per_s;
    m->url = redact_text(url ? url : "");   /* a label anyone who scrapes reads */
    m->api = strdup(api ? api : "");
    m->model = strdup("");
    m->start_unix_s = clock_wall_ns() / 1e9;
}

void mon_metrics_free(mon_metrics *m) {
    pthread_mutex_destroy(&m->mu);
    free(m->url);
    free(m->model);
    free(m->api);
    m->url = m->model = m->api = NULL;
}

void mon_metrics_set_model(mon_metrics *m, const char *model) {
    char *c = strdup(model ? model : "");
    if (!c) return;
    pthread_mutex_lock(&m->mu);
    free(m->model);
    m->model = c;
    pthread_mutex_unlock(&m->mu);
}

bool mon_metrics_fold(mon_metrics *m, const record *r, int64_t now_ns, double now_unix_s) {
    mon_probe p;
    mon_probe_measure(r, &p);
    bool cancelled = r->outcome == REC_ERR_CANCELLED;
    bool good = !cancelled && mon_slo_good(&m->slo, &p);
    pthread_mutex_lock(&m->mu);
    m->outcomes[r->outcome < REC_OUTCOME_COUNT ? r->outcome : REC_ERR_CONNECT]++;
    if (r->outcome == REC_ERR_HTTP && r->http_status >= 100 && r->http_status < 600) m->http_status[r->http_status]++;
    if (p.out_tokens > 0) m->output_tokens += (uint64_t)p.out_tokens;
    if (p.ok) {
        mon_hist_observe(&m->ttft, p.ttft_s);
        mon_hist_observe(&m->e2el, p.e2el_s);
        mon_hist_observe(&m->tpot, p.tpot_s);
        if (p.has_reasoning && !isnan(p.ttfa_s)) mon_hist_observe(&m->ttfa, p.ttfa_s);
        for (uint32_t k = 1; k < r->n_chunks; k++) mon_hist_observe(&m->itl, (r->chunk_ns[k] - r->chunk_ns[k - 1]) / 1e9);
        m->have_last_ok = true;
        m->last_ttft_s = p.ttft_s;
        m->last_e2el_s = p.e2el_s;
        m->last_ok_unix_s = now_unix_s;
    }
    if (!cancelled) {
        m->have_last = true;
        m->last_ok = p.ok;
        m->last_unix_s = now_unix_s;
        m->slo_total++;
        if (good) m->slo_good++;
        mon_window_add(&m->win, now_ns, good);
    }
    pthread_mutex_unlock(&m->mu);
    return good;
}

/* A label value with Prometheus escapes (\\, \", \n). */
static void write_label(FILE *f, const char *s) {
    for (; *s; s++) {
        if (*s == '\\' || *s == '"') { fputc('\\', f); fputc(*s, f); }
        else if (*s == '\n') fputs("\\n", f);
        else fputc(*s, f);
    }
}

/* A sample value as Prometheus spells it (NaN, +Inf, -Inf; C would print nan/inf). */
static void write_value(FILE *f, double v) {
    if (isnan(v)) fputs("NaN", f);
    else if (isinf(v)) fputs(v > 0 ? "+Inf" : "-Inf", f);
    else fprintf(f, "%.9g", v);
}

static void gauge(FILE *f, const char *name, const char *help, double v) {
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s ", name, help, name, name);
    write_value(f, v);
    fputc('\n', f);
}

/* Unix times need more digits than %.9g keeps (that rounds to 10 s). */
static void gauge_time(FILE *f, const char *name, const char *help, double unix_s) {
    fprintf(f, "# HELP %s %s\n# TYPE %s gauge\n%s %.3f\n", name, help, name, name, unix_s);
}

static void counter(FILE *f, const char *name, const char *help, uint64_t v) {
    fprintf(f, "# HELP %s %s\n# TYPE %s counter\n%s %llu\n", name, help, name, name, (unsigned long long)v);
}

static const struct { const char *label; int64_t ns; } burn_windows[] = {
    {"5m", 300LL * 1000000000LL}, {"30m", 1800LL * 1000000000LL},
    {"1h", 3600LL * 1000000000LL}, {"6h", 21600LL * 1000000000LL},
};
#define N_BURN_WINDOWS (sizeof burn_windows / sizeof burn_windows[0])

char *mon_metrics_format(mon_metrics *m, int64_t now_ns, size_t *len) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    if (!f) return NULL;
    pthread_mutex_lock(&m->mu);
    fprintf(f, "# HELP dsperf_monitor_info The endpoint this monitor probes.\n# TYPE dsperf_monitor_info gauge\n"
               "dsperf_monitor_info{url=\"");
    write_label(f, m->url);
    fputs("\",model=\"", f);
    write_label(f, m->model);
    fputs("\",api=\"", f);
    write_label(f, m->api);
    fputs("\"} 1\n", f);
    gauge_time(f, "dsperf_monitor_start_time_seconds", "Unix time the monitor started.", m->start_unix_s);
    gauge(f, "dsperf_probe_rate", "Configured probes per second.", m->rate_per_s);
    gauge(f, "dsperf_probes_in_flight", "Probes sent and not yet finished.", (double)m->in_flight);
    counter(f, "dsperf_probes_skipped_total", "Probes not sent because the in-flight cap was reached.", m->skipped);

    fputs("# HELP dsperf_requests_total Finished probes by outcome (cancelled: stopped by the monitor itself).\n"
          "# TYPE dsperf_requests_total counter\n", f);
    for (int o = 0; o < REC_OUTCOME_COUNT; o++)
        fprintf(f, "dsperf_requests_total{outcome=\"%s\"} %llu\n", rec_outcome_name((rec_outcome)o), (unsigned long long)m->outcomes[o]);
    fputs("# HELP dsperf_http_errors_total Probes answered with a non-2xx status, by status code.\n"
          "# TYPE dsperf_http_errors_total counter\n", f);
    for (int c = 100; c < 600; c++)
        if (m->http_status[c]) fprintf(f, "dsperf_http_errors_total{code=\"%d\"} %llu\n", c, (unsigned long long)m->http_status[c]);
    counter(f, "dsperf_output_tokens_total", "Output tokens received (server usage, else the client's count).", m->output_tokens);

    mon_hist_write(&m->ttft, "dsperf_ttft_seconds", "Time to first token of completed probes (first content chunk - send).", f);
    mon_hist_write(&m->itl, "dsperf_itl_seconds", "Gaps between consecutive content chunks of completed probes.", f);
    mon_hist_write(&m->tpot, "dsperf_tpot_seconds", "Time per output token after the first, per completed probe with > 1 token.", f);
    mon_hist_write(&m->e2el, "dsperf_e2el_seconds", "End-to-end latency of completed probes (last data message - send).", f);
    if (m->ttfa.count > 0)
        mon_hist_write(&m->ttfa, "dsperf_ttfa_seconds",
                       "Time to the first answer token after the reasoning phase, of completed probes that reasoned.", f);

    if (m->have_last) {
        gauge_time(f, "dsperf_last_probe_timestamp_seconds", "Unix time the last probe finished.", m->last_unix_s);
        gauge(f, "dsperf_last_probe_success", "1 when the last probe completed, 0 when it failed.", m->last_ok ? 1 : 0);
    }
    if (m->have_last_ok) {
        gauge_time(f, "dsperf_last_success_timestamp_seconds", "Unix time the last completed probe finished.", m->last_ok_unix_s);
        gauge(f, "dsperf_last_ttft_seconds", "TTFT of the last completed probe.", m->last_ttft_s);
        gauge(f, "dsperf_last_e2el_seconds", "End-to-end latency of the last completed probe.", m->last_e2el_s);
    }

    counter(f, "dsperf_slo_good_total", "Probes that completed within every SLO threshold.", m->slo_good);
    counter(f, "dsperf_slo_total", "Probes judged against the SLO (all but cancelled).", m->slo_total);
    gauge(f, "dsperf_slo_target", "SLO objective: the fraction of probes that must be good.", m->slo.target);
    fputs("# HELP dsperf_slo_threshold_seconds SLO thresholds in force (absent: not part of the SLO).\n"
          "# TYPE dsperf_slo_threshold_seconds gauge\n", f);
    if (m->slo.ttft_s > 0) fprintf(f, "dsperf_slo_threshold_seconds{sli=\"ttft\"} %.9g\n", m->slo.ttft_s);
    if (m->slo.tpot_s > 0) fprintf(f, "dsperf_slo_threshold_seconds{sli=\"tpot\"} %.9g\n", m->slo.tpot_s);
    if (m->slo.e2el_s > 0) fprintf(f, "dsperf_slo_threshold_seconds{sli=\"e2el\"} %.9g\n", m->slo.e2el_s);
    if (m->slo.ttfa_s > 0) fprintf(f, "dsperf_slo_threshold_seconds{sli=\"ttfa\"} %.9g\n", m->slo.ttfa_s);
    uint64_t wg[N_BURN_WINDOWS], wt[N_BURN_WINDOWS];
    for (size_t i = 0; i < N_BURN_WINDOWS; i++) mon_window_sum(&m->win, now_ns, burn_windows[i].ns, &wg[i], &wt[i]);
    fputs("# HELP dsperf_slo_burn_rate Error-budget burn rate over the window: (bad/total) / (1 - target); NaN without probes.\n"
          "# TYPE dsperf_slo_burn_rate gauge\n", f);
    for (size_t i = 0; i < N_BURN_WINDOWS; i++)
    {
        fprintf(f, "dsperf_slo_burn_rate{window=\"%s\"} ", burn_windows[i].label);
        write_value(f, mon_burn_rate(wg[i], wt[i], m->slo.target));
        fputc('\n', f);
    }
    fputs("# HELP dsperf_slo_window_probes Probes judged in the window (10 s slots).\n"
          "# TYPE dsperf_slo_window_probes gauge\n", f);
    for (size_t i = 0; i < N_BURN_WINDOWS; i++)
        fprintf(f, "dsperf_slo_window_probes{window=\"%s\"} %llu\n", burn_windows[i].label, (unsigned long long)wt[i]);
    fputs("# HELP dsperf_slo_window_good Good probes in the window (10 s slots).\n"
          "# TYPE dsperf_slo_window_good gauge\n", f);
    for (size_t i = 0; i < N_BURN_WINDOWS; i++)
        fprintf(f, "dsperf_slo_window_good{window=\"%s\"} %llu\n", burn_windows[i].label, (unsigned long long)wg[i]);
    pthread_mutex_unlock(&m->mu);
    if (fclose(f) != 0) { free(buf); return NULL; }
    if (len) *len = n;
    return buf;
}
