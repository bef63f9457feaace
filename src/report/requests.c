/* requests — per-request samples for the report from the JSONL that bench (--save-requests) and
 * sim (--save-requests) write: exact TTFT/TPOT/E2EL/ITL distributions for the nines plots, the
 * TTFT-over-time scatter, and the first error message of each failure class. */
#include "report/report_internal.h"
#include "common/fileio.h"
#include "metrics/stats.h"
#include <errno.h>
#include <stdbool.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

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

/* Send, first token and end of a request in seconds (NaN when it did not happen). */
static int add_gantt(acc *a, const json_t *o, bool ok) {
    double send = num(o, "send_ns"), first = num(o, "first_ns"), last = num(o, "last_ns"), end = num(o, "end_ns");
    if (!isfinite(send)) return 0;   /* never sent */
    double stop = isfinite(last) && (!isfinite(end) || last > end) ? last : end;
    if (!isfinite(stop)) stop = send;
    return stats_add(&a->g_send, send / 1e9) | stats_add(&a->g_first, isfinite(first) ? first / 1e9 : NAN) |
           stats_add(&a->g_end, stop / 1e9) | stats_add(&a->g_ok, ok);
}

static int add_line(report_requests *r, acc *a, const json_t *o) {
    if (json_is_true(json_object_get(o, "warmup"))) return 0;
    r->n++;
    const char *outcome = json_string_value(json_object_get(o, "outcome"));
    if (outcome && strcmp(outcome, "ok") != 0) {
        r->n_failed++;
        return add_gantt(a, o, false) | note_error(r, outcome, json_string_value(json_object_get(o, "error")));
    }
    r->n_ok++;
    double ttft = num(o, "ttft_ms"), e2el = num(o, "e2el_ms"), send = num(o, "send_ns"), out = num(o, "out_tokens");
    int rc = add_gantt(a, o, true);
    if (isfinite(ttft)) {
        rc |= stats_add(&a->ttft, ttft);
        rc |= stats_add(&a->send, isfinite(send) ? send / 1e9 : NAN) | stats_add(&a->ttft_t, ttft);
    }
    if (isfinite(e2el)) rc |= stats_add(&a->e2el, e2el);
    if (isfinite(ttft) && isfinite(e2el) && out > 1) rc |= stats_add(&a->tpot, (e2el - ttft) / (out - 1));
    const json_t *ch = json_object_get(o, "chunk_ns");
    for (size_t k = 1; k < json_array_size(ch); k++) {
        double g = json_number_value(json_array_get(ch, k)) - json_number_value(json_array_get(ch, k - 1));
        rc |= stats_add(&a->itl, g / 1e6);
    }
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
    char *text = NULL;
    size_t len = 0;
    if (fileio_read_all(path, &text, &len) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    report_requests *r = calloc(1, sizeof *r);
    acc a;
    memset(&a, 0, sizeof a);
    int rc = r ? 0 : -1;
    size_t line = 0;
    for (char *p = text; rc == 0 && p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        line++;
        if (n > 0) {
            json_error_t je;
            json_t *o = json_loadb(p, n, 0, &je);
            if (!json_is_object(o)) {
                snprintf(err, errlen, "%s:%zu: not a JSON object (%s)", path, line, je.text);
                json_decref(o);
                rc = -2;
                break;
            }
            if (add_line(r, &a, o) != 0) rc = -1;
            json_decref(o);
        }
        p += n + 1;
    }
    free(text);
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
        if (rc == -1) snprintf(err, errlen, "out of memory reading %s", path);
        report_requests_free(r);
        return NULL;
    }
    return r;
}
