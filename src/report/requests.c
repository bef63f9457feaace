/* requests — per-request samples for the report from the JSONL that bench and sim write
 * (--save-requests): exact TTFT/TPOT/E2EL/ITL distributions for the nines plots, the
 * TTFT-over-time scatter, the Gantt, and the first error message of each failure class. The file
 * is read back into records (results.h) and every metric comes from request_metrics.h. */
#include "report/report_internal.h"
#include "results/results.h"
#include "metrics/request_metrics.h"
#include "metrics/stats.h"
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

size_t report_requests_count(const report_requests *r) { return r ? r->n : 0; }

void report_requests_free(report_requests *r) {
    if (!r) return;
    free(r->send_s);
    free(r->ttft_ms);
    free(r->ttft_sorted);
    free(r->tpot_sorted);
    free(r->e2el_sorted);
    free(r->itl_sorted);
    free(r->g_send);
    free(r->g_first);
    free(r->g_end);
    free(r->g_ok);
    for (size_t i = 0; i < r->n_error_classes; i++) {
        free(r->first_error_class[i]);
        free(r->first_error_text[i]);
    }
    free(r->first_error_class);
    free(r->first_error_text);
    free(r);
}

/* Remembers the first message of a failure class (a handful of classes: linear search). */
static int note_error(report_requests *r, const char *cls, const char *text) {
    for (size_t i = 0; i < r->n_error_classes; i++)
        if (!strcmp(r->first_error_class[i], cls)) return 0;
    char **c = realloc(r->first_error_class, (r->n_error_classes + 1) * sizeof *c);
    if (!c) return -1;
    r->first_error_class = c;
    char **t = realloc(r->first_error_text, (r->n_error_classes + 1) * sizeof *t);
    if (!t) return -1;
    r->first_error_text = t;
    c[r->n_error_classes] = strdup(cls);
    t[r->n_error_classes] = strdup(text ? text : "");
    if (!c[r->n_error_classes] || !t[r->n_error_classes]) {
        free(c[r->n_error_classes]);
        free(t[r->n_error_classes]);
        return -1;
    }
    r->n_error_classes++;
    return 0;
}

typedef struct {
    stats_samples send, ttft_t, ttft, tpot, e2el, itl;
    stats_samples g_send, g_first, g_end, g_ok;
} acc;

/* Send, first token and end of a request in seconds from t0 (NaN when it did not happen). */
static int add_gantt(acc *a, const record *r, int64_t t0, bool ok) {
    if (r->send_ns <= 0) return 0;   /* never sent */
    int64_t stop = r->last_ns > r->end_ns ? r->last_ns : r->end_ns;
    if (stop <= 0) stop = r->send_ns;
    return stats_add(&a->g_send, (double)(r->send_ns - t0) / 1e9) |
           stats_add(&a->g_first, r->first_ns > 0 ? (double)(r->first_ns - t0) / 1e9 : NAN) |
           stats_add(&a->g_end, (double)(stop - t0) / 1e9) | stats_add(&a->g_ok, ok);
}

/* One request: its metrics from request_metrics.h, the one definition the summary uses too. */
static int add_record(report_requests *rq, acc *a, const record *r, int64_t t0) {
    if (r->warmup) return 0;
    rq->n++;
    if (r->outcome != REC_OK) {
        /* dsperf's own cancellations are no failures: drawn in the Gantt, not counted */
        if (!record_failed(r)) return add_gantt(a, r, t0, false);
        rq->n_failed++;
        return add_gantt(a, r, t0, false) | note_error(rq, rec_outcome_name((rec_outcome)r->outcome), r->error);
    }
    rq->n_ok++;
    req_metrics m;
    req_metrics_of(r, &m);
    int rc = add_gantt(a, r, t0, true);
    if (m.has_ttft) {
        rc |= stats_add(&a->ttft, m.ttft_ms);
        rc |= stats_add(&a->send, (double)(r->send_ns - t0) / 1e9) | stats_add(&a->ttft_t, m.ttft_ms);
    }
    if (isfinite(m.e2el_ms)) rc |= stats_add(&a->e2el, m.e2el_ms);
    if (isfinite(m.tpot_ms)) rc |= stats_add(&a->tpot, m.tpot_ms);
    for (uint32_t k = 1; k < r->n_chunks; k++) rc |= stats_add(&a->itl, (double)(r->chunk_ns[k] - r->chunk_ns[k - 1]) / 1e6);
    return rc;
}

/* Sorts the samples (as the metrics module does) and hands the array over. */
static double *sorted(stats_samples *d, size_t *n) {
    stats_sort(d);
    *n = d->n;
    double *v = d->v;
    d->v = NULL;
    return v;
}

report_requests *report_requests_load(const char *path, char *err, size_t errlen) {
    recset recs;
    recset_init(&recs);
    int64_t t0 = 0;
    if (results_read_requests_jsonl(path, &recs, &t0, err, errlen) < 0) {
        recset_free(&recs);
        return NULL;
    }
    report_requests *r = calloc(1, sizeof *r);
    acc a;
    memset(&a, 0, sizeof a);
    int rc = r ? 0 : -1;
    for (size_t i = 0; rc == 0 && i < recs.n; i++) if (add_record(r, &a, &recs.v[i], t0) != 0) rc = -1;
    recset_free(&recs);
    if (rc == 0) {
        r->send_s = a.send.v;
        r->ttft_ms = a.ttft_t.v;
        a.send.v = a.ttft_t.v = NULL;
        r->ttft_sorted = sorted(&a.ttft, &r->n_ttft);
        r->tpot_sorted = sorted(&a.tpot, &r->n_tpot);
        r->e2el_sorted = sorted(&a.e2el, &r->n_e2el);
        r->itl_sorted = sorted(&a.itl, &r->n_itl);
        r->n_g = a.g_send.n;
        r->g_send = a.g_send.v;
        r->g_first = a.g_first.v;
        r->g_end = a.g_end.v;
        r->g_ok = malloc(r->n_g ? r->n_g : 1);
        for (size_t i = 0; r->g_ok && i < r->n_g; i++) r->g_ok[i] = a.g_ok.v[i] != 0;
        a.g_send.v = a.g_first.v = a.g_end.v = NULL;
        if (!r->g_ok) rc = -1;
    }
    free(a.g_send.v); free(a.g_first.v); free(a.g_end.v); free(a.g_ok.v);
    free(a.send.v); free(a.ttft_t.v); free(a.ttft.v); free(a.tpot.v); free(a.e2el.v); free(a.itl.v);
    if (rc != 0) {
        snprintf(err, errlen, "out of memory reading %s", path);
        report_requests_free(r);
        return NULL;
    }
    return r;
}
