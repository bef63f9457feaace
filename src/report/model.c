/* model — flattens a results document (one level) or a sweep document (many levels) into the
 * rows every writer shows, and reads the numbers they need with NaN for "not in the document",
 * so a section can tell "absent" from zero and leave itself out. */
#include "report/report_internal.h"
#include "metrics/metric_table.h"
#include "metrics/summary.h"
#include "sweep/context.h"
#include "results/validity.h"
#include "sweep/sweep.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

double rep_num(const json_t *r, const char *key) {
    const json_t *v = json_object_get(r, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

char *rep_command(const json_t *doc, const json_t *r, const char **loopback_url) {
    const json_t *c = json_object_get(doc, "command_line");
    if (!json_is_string(c)) c = json_object_get(r, "command_line");
    const char *cmd = json_string_value(c);
    const char *url = json_string_value(json_object_get(json_object_get(doc, "config"), "url"));
    if (!url) url = json_string_value(json_object_get(json_object_get(r, "config"), "url"));
    if (loopback_url) {
        const char *h = url && strstr(url, "://") ? strstr(url, "://") + 3 : NULL;
        bool lo = h && (!strncmp(h, "127.", 4) || !strncmp(h, "[::1]", 5) || !strncmp(h, "localhost", 9));
        *loopback_url = lo ? url : NULL;
    }
    if (!cmd) return NULL;
    char *line = NULL;
    if (asprintf(&line, "%s%s", strncmp(cmd, "dsperf ", 7) ? "dsperf " : "", cmd) < 0) return NULL;
    return line;
}

double rep_pct(const json_t *r, const char *metric, double p) {
    char key[96], lab[32];
    if (p == floor(p)) snprintf(lab, sizeof lab, "%.0f", p);
    else snprintf(lab, sizeof lab, "%g", p);
    snprintf(key, sizeof key, "p%s_%s_ms", lab, metric);
    double v = rep_num(r, key);
    if (isnan(v) && p == 50) {
        snprintf(key, sizeof key, "median_%s_ms", metric);
        v = rep_num(r, key);
    }
    return v;
}

double rep_goodput_tok_s(const json_t *r) {
    double g = rep_num(r, METRIC(request_goodput)), out = rep_num(r, "total_output_tokens"), n = rep_num(r, "completed");
    if (isnan(g) || !(n > 0) || isnan(out)) return NAN;
    return g * out / n;
}

/* Server-side failures only (validity_counts: dsperf's own cancellations are no errors). */
double rep_error_pct(const json_t *r) {
    double ok, bad;
    validity_counts(r, &bad, &ok);
    if (isnan(ok) || isnan(bad) || ok + bad <= 0) return NAN;
    return 100.0 * bad / (ok + bad);
}

double rep_results_load(const json_t *r, const char **axis) {
    const json_t *cfg = json_object_get(r, "config");
    /* sim nests the load under config.load; bench keeps it flat beside load: "closed"/"open" */
    const json_t *load = json_object_get(cfg, "load");
    const json_t *src = json_is_object(load) ? load : cfg;
    double c = rep_num(src, "concurrency"), rate = rep_num(src, "rate_per_s");
    if (c > 0) { if (axis) *axis = "concurrency"; return c; }
    if (rate > 0) { if (axis) *axis = "rate"; return rate; }
    rate = rep_num(r, "intended_rate_per_s");
    if (rate > 0) { if (axis) *axis = "rate"; return rate; }
    if (axis) *axis = NULL;
    return NAN;
}

void rep_load_label(const rep_model *m, double load, char *buf, size_t len) {
    char n[32];
    fmt_num(load, n, sizeof n);
    char l[24];
    if (isnan(load)) snprintf(buf, len, "run");
    else if (m->axis && !strcmp(m->axis, "rate")) snprintf(buf, len, "%s/s", n);
    else if (sweep_axis_is_length(m->axis)) {
        sweep_length_label(load, l, sizeof l);
        snprintf(buf, len, "%s=%s", strcmp(m->axis, "input_len") ? "out" : "in", l);
    }
    else snprintf(buf, len, "c=%s", n);
}

void rep_level_label(const rep_model *m, const rep_level *l, char *buf, size_t len) {
    char ld[40];
    rep_load_label(m, l->load, ld, sizeof ld);
    if (l->kind && !strcmp(l->kind, "synchronous")) snprintf(buf, len, "sync (%s)", ld);
    else if (l->kind && !strcmp(l->kind, "throughput")) snprintf(buf, len, "max (%s)", ld);
    else snprintf(buf, len, "%s", ld);
}

bool rep_ci(const rep_model *m, double load, const char *metric, double *lo, double *hi, int *n) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(json_object_get(m->doc, "ci"), "levels"), i, c) {
        if (rep_num(c, "load") != load) continue;
        const json_t *v = json_object_get(json_object_get(c, "metrics"), metric);
        *lo = rep_num(v, "lo");
        *hi = rep_num(v, "hi");
        *n = (int)rep_num(v, "n");
        return isfinite(*lo) && isfinite(*hi);
    }
    return false;
}

int rep_model_init(rep_model *m, const json_t *doc, char *err, size_t errlen) {
    memset(m, 0, sizeof *m);
    m->doc = doc;
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (schema && !strncmp(schema, "dsperf.sweep/", 13)) {
        const json_t *levels = json_object_get(doc, "levels");
        m->sweep = true;
        m->axis = json_string_value(json_object_get(doc, "axis"));
        m->knee = json_is_object(json_object_get(doc, "knee")) ? json_object_get(doc, "knee") : NULL;
        m->max_goodput = json_is_object(json_object_get(doc, METRIC(max_goodput))) ? json_object_get(doc, METRIC(max_goodput)) : NULL;
        size_t n = json_array_size(levels);
        m->lv = calloc(n ? n : 1, sizeof *m->lv);
        if (!m->lv) { snprintf(err, errlen, "out of memory"); return -1; }
        double knee = rep_num(m->knee, "load"), mg = rep_num(m->max_goodput, "load");
        for (size_t i = 0; i < n; i++) {
            const json_t *l = json_array_get(levels, i);
            const json_t *r = json_object_get(l, "results");
            if (!json_is_object(r)) continue;
            rep_level *v = &m->lv[m->n++];
            v->r = r;
            v->level = l;
            v->load = rep_num(l, "load");
            v->kind = json_string_value(json_object_get(l, "kind"));
            v->repeat = (int)(json_is_integer(json_object_get(l, "repeat")) ? json_integer_value(json_object_get(l, "repeat")) : 0);
            v->saturated = json_is_true(json_object_get(l, "saturated"));
            v->early_stopped = json_is_true(json_object_get(l, "early_stopped"));
            v->measured = sweep_level_measured(l);
            v->is_knee = !isnan(knee) && v->load == knee;
            v->is_max_goodput = !isnan(mg) && v->load == mg;
        }
        if (!m->axis) m->axis = "concurrency";
        return 0;
    }
    if (schema && !strncmp(schema, "dsperf.results/", 15)) {
        m->lv = calloc(1, sizeof *m->lv);
        if (!m->lv) { snprintf(err, errlen, "out of memory"); return -1; }
        m->n = 1;
        m->lv[0].r = doc;
        m->lv[0].measured = true;
        m->lv[0].load = rep_results_load(doc, &m->axis);
        return 0;
    }
    snprintf(err, errlen, "not a dsperf results or sweep document (schema \"%s\")", schema ? schema : "missing");
    return -1;
}

void rep_model_free(rep_model *m) {
    free(m->lv);
    memset(m, 0, sizeof *m);
}

/* ---- series ---- */

double rep_series_mean(const json_t *arr) {
    double s = 0;
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (!json_is_number(v)) continue;
        s += json_number_value(v);
        n++;
    }
    return n ? s / (double)n : NAN;
}

double rep_series_max(const json_t *arr) {
    double m = NAN;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (json_is_number(v) && (isnan(m) || json_number_value(v) > m)) m = json_number_value(v);
    }
    return m;
}

double rep_gpu_mean(const json_t *r, const char *column) {
    /* bench's telemetry summary holds the run-window means; else average the series */
    char key[96];
    snprintf(key, sizeof key, "%s_mean", column);
    double s0 = rep_num(json_object_get(r, "telemetry_summary"), key);
    if (!isnan(s0)) return s0;
    const json_t *gpus = json_object_get(json_object_get(r, "telemetry"), "gpu");
    double s = 0;
    size_t n = 0, i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        double v = rep_series_mean(json_object_get(json_object_get(g, "series"), column));
        if (!isnan(v)) { s += v; n++; }
    }
    return n ? s / (double)n : NAN;
}

double rep_kv_max_pct(const json_t *r) {
    double s0 = rep_num(json_object_get(json_object_get(r, "telemetry_summary"), "server"), "kv_usage_pct_max");
    if (!isnan(s0)) return s0;
    const json_t *srv = json_object_get(json_object_get(json_object_get(r, "telemetry"), "server"), "series");
    double v = rep_series_max(json_object_get(srv, "kv_usage_pct"));
    if (!isnan(v)) return v;
    /* the simulated engine reports KV usage as a fraction of its blocks */
    v = rep_series_max(json_object_get(json_object_get(json_object_get(r, "engine"), "series"), "kv_usage"));
    return isnan(v) ? NAN : 100.0 * v;
}

void rep_telemetry_columns(const rep_model *m, bool *gpu_util, bool *dram_bw, bool *kv_peak) {
    *gpu_util = *dram_bw = *kv_peak = false;
    for (size_t i = 0; i < m->n; i++) {
        if (!m->lv[i].measured) continue;
        *gpu_util |= !isnan(rep_gpu_mean(m->lv[i].r, "util_gpu_pct"));
        *dram_bw |= !isnan(rep_gpu_mean(m->lv[i].r, "dram_bw_util_pct"));
        *kv_peak |= !isnan(rep_kv_max_pct(m->lv[i].r));
    }
}

long rep_pct_samples(const json_t *r, const char *metric) {
    double n = rep_num(r, !strcmp(metric, "itl") ? "itl_samples" : "completed");
    return n >= 0 ? (long)n : -1;
}

bool rep_pct_thin(const json_t *r, const char *metric, double p) {
    long n = rep_pct_samples(r, metric);
    return n >= 0 && n < summary_percentile_samples_needed(p);
}

double rep_slo_ms(const json_t *r, const char *metric) {
    char key[32];
    snprintf(key, sizeof key, "%s_ms", metric);
    double v = rep_num(json_object_get(r, "goodput_slo"), key);
    return v > 0 ? v : NAN;
}

/* ---- verdict ---- */

static const json_t *first_finding(const json_t *diagnosis) {
    const json_t *f = json_array_get(json_object_get(diagnosis, "findings"), 0);
    return json_is_object(f) ? f : NULL;
}

static void slo_clause(rbuf *out, const json_t *r) {
    static const char *const names[] = { "ttft", "tpot", "e2el" }, *const labels[] = { "TTFT", "TPOT", "E2EL" };
    int k = 0;
    for (int i = 0; i < 3; i++) {
        double s = rep_slo_ms(r, names[i]);
        if (isnan(s)) continue;
        char t[32];
        fmt_ms(s, t, sizeof t);
        rb_printf(out, "%s%s\xe2\x89\xa4%s", k++ ? ", " : " under ", labels[i], t);
    }
}

void rep_verdict(const rep_model *m, const json_t *diagnosis, rbuf *out) {
    char a[48], b[48], c[48];
    const json_t *ctx = m->sweep ? json_object_get(m->doc, "context") : NULL;
    if (json_is_object(ctx)) {
        /* along context length: where it stops fitting is the headline, not a knee */
        bool in = !strcmp(m->axis, "input_len");
        double conc = rep_num(ctx, "concurrency"), rate = rep_num(ctx, "rate_per_s");
        fmt_num(isfinite(conc) ? conc : rate, b, sizeof b);
        rb_printf(out, "%zu %s lengths at %s %s", m->n, in ? "prompt" : "output", isfinite(conc) ? "concurrency" : "rate", b);
        const json_t *sf = json_object_get(ctx, "stops_fitting");
        if (json_is_object(sf)) {
            sweep_length_label(rep_num(sf, in ? "input_len" : "output_len"), a, sizeof a);
            rb_printf(out, "; the deployment stops fitting at %s tokens (%s)", a, json_string_value(json_object_get(sf, "why")));
        } else {
            rb_puts(out, "; every length fitted");
        }
    } else if (m->sweep) {
        rb_printf(out, "%zu load levels", m->n);
        if (m->knee) {
            rep_load_label(m, rep_num(m->knee, "load"), a, sizeof a);
            fmt_num(rep_num(m->knee, METRIC(output_throughput)), b, sizeof b);
            rb_printf(out, "; knee at %s (%s out tok/s)", a, b);
        } else {
            const char *why = json_string_value(json_object_get(m->doc, "knee_note"));
            rb_printf(out, "; no knee found in the measured range%s%s", why ? " (" : "", why ? why : "");
            if (why) rb_puts(out, ")");
        }
        if (m->max_goodput) {
            const json_t *r = NULL;
            for (size_t i = 0; i < m->n; i++) if (m->lv[i].is_max_goodput) r = m->lv[i].r;
            /* in the unit the tile and the terminal use (requests within the SLO per second),
             * the tokens those requests carried beside it */
            double g = r ? rep_goodput_tok_s(r) : NAN;
            rep_load_label(m, rep_num(m->max_goodput, "load"), a, sizeof a);
            fmt_num(rep_num(m->max_goodput, METRIC(request_goodput)), b, sizeof b);
            fmt_num(g, c, sizeof c);
            rb_printf(out, "; max goodput %s req/s (%s out tok/s) at %s", b, c, a);
            if (r) slo_clause(out, r);
        }
    } else {
        const json_t *r = m->lv[0].r;
        rep_load_label(m, m->lv[0].load, a, sizeof a);
        double ok = rep_num(r, "completed"), bad = rep_num(r, "failed");
        fmt_num(ok + (isnan(bad) ? 0 : bad), b, sizeof b);
        rb_printf(out, "%s requests at %s: ", b, a);
        fmt_num(rep_num(r, METRIC(output_throughput)), b, sizeof b);
        rb_printf(out, "%s out tok/s", b);
        fmt_ms(rep_pct(r, "ttft", 99), b, sizeof b);
        fmt_ms(rep_pct(r, "tpot", 99), c, sizeof c);
        rb_printf(out, ", p99 TTFT %s, p99 TPOT %s", b, c);
        if (rep_pct_thin(r, "ttft", 99))
            rb_printf(out, " (p99 from %ld requests: the largest, not a tail)", rep_pct_samples(r, "ttft"));
        double e = rep_error_pct(r);
        if (!isnan(e)) {
            fmt_pct(e, b, sizeof b);
            rb_printf(out, ", %s errors", b);
        }
        double g = rep_goodput_tok_s(r);
        if (!isnan(g)) {
            fmt_num(rep_num(r, METRIC(request_goodput)), b, sizeof b);
            fmt_num(g, c, sizeof c);
            rb_printf(out, "; goodput %s req/s (%s out tok/s)", b, c);
            slo_clause(out, r);
        }
    }
    const json_t *f = first_finding(diagnosis);
    const char *title = json_string_value(json_object_get(f, "title"));
    if (title) {
        rb_puts(out, "; bottleneck: ");
        rb_puts(out, title);
    }
    /* the headline is diagnose's first finding; the roofline is added only when that finding does
     * not already state it, and named at its level, so two numbers of two levels never meet */
    const json_t *rf = json_object_get(diagnosis, "roofline");
    double eff = rep_num(rf, "efficiency"), lvl = rep_num(rf, "level");
    if (isfinite(eff) && !(title && strstr(title, "roofline"))) {
        rb_printf(out, "; decode at %.0f%% of the HBM-bandwidth roofline", 100 * eff);
        if (isfinite(lvl) && m->sweep) {
            rep_load_label(m, lvl, a, sizeof a);
            rb_printf(out, " at %s", a);
        }
    }
    /* the run's warnings belong to the verdict (one clause per kind, naming its levels): an
     * overloaded level's latencies are no steady state, a lagging client's rate is not the server's */
    static const char *const kinds[] = { "overload", "client" }, *const says[] = { "server overloaded", "client fell behind" };
    bool any = false;
    for (int k = 0; k < 2; k++) {
        size_t i, nl = 0;
        const json_t *w;
        bool hit = false;
        json_array_foreach(json_object_get(diagnosis, "warnings"), i, w) {
            const char *kind = json_string_value(json_object_get(w, "kind"));
            if (!kind || strcmp(kind, kinds[k])) continue;
            if (!hit) { rb_puts(out, any ? ", " : "; warning: "); rb_puts(out, says[k]); hit = any = true; }
            double wl = rep_num(w, "level");
            if (isfinite(wl) && m->sweep) {
                rep_load_label(m, wl, a, sizeof a);
                rb_printf(out, "%s%s", nl++ ? ", " : " at ", a);
            }
        }
    }
    rb_puts(out, ".");
}
