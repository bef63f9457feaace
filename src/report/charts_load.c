/* charts_load — figures against offered load, one point per load (repeats averaged): the
 * saturation curve with the knee and its fit, latency against throughput, the latency breakdown
 * (client queue, TTFT, decode) and errors by class. Each appends a <figure> or nothing when the
 * document lacks the data for it. */
#include "report/report_internal.h"
#include "metrics/metric_table.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


#define MAX_LEVELS 256
/* One point per distinct load: repeats averaged. */
typedef struct {
    double load, out, good, ttft50, ttft99, tpot50, tpot99;
    bool sat, knee;
    int n;
} lvl_pt;

static double add_mean(double acc, int n, double v) {
    if (isnan(v)) return acc;
    return isnan(acc) ? v : acc + (v - acc) / (n + 1);
}

static size_t level_points(const rep_model *m, lvl_pt *pt, size_t cap) {
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        const rep_level *l = &m->lv[i];
        /* auto mode's closed-loop anchor has no offered load on this axis: table only */
        if (l->kind && !strcmp(l->kind, "throughput")) continue;
        if (!l->measured) continue;     /* drawn as not measured (charts_saturation), never as 0 */
        size_t k = 0;
        while (k < n && pt[k].load != l->load) k++;
        if (k == n) {
            if (n == cap) continue;
            pt[n] = (lvl_pt){ l->load, NAN, NAN, NAN, NAN, NAN, NAN, false, false, 0 };
            n++;
        }
        lvl_pt *p = &pt[k];
        const json_t *r = l->r;
        p->out = add_mean(p->out, p->n, rep_num(r, METRIC(output_throughput)));
        p->good = add_mean(p->good, p->n, rep_goodput_tok_s(r));
        p->ttft50 = add_mean(p->ttft50, p->n, rep_pct(r, "ttft", 50));
        p->ttft99 = add_mean(p->ttft99, p->n, rep_pct(r, "ttft", 99));
        p->tpot50 = add_mean(p->tpot50, p->n, rep_pct(r, "tpot", 50));
        p->tpot99 = add_mean(p->tpot99, p->n, rep_pct(r, "tpot", 99));
        p->sat |= l->saturated;
        p->knee |= l->is_knee;
        p->n++;
    }
    /* by load, so lines run left to right */
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && pt[j - 1].load > pt[j].load; j--) {
            lvl_pt t = pt[j];
            pt[j] = pt[j - 1];
            pt[j - 1] = t;
        }
    return n;
}

static const char *axis_unit(const rep_model *m) {
    return m->axis && !strcmp(m->axis, "rate") ? "offered load (requests/s)" : "offered load (concurrent users)";
}

/* ---- saturation curve ---- */

#define FIT_POINTS 48

/* The sweep's two-segment fit of output tok/s over load: a rising line up to the break, a flat(ter)
 * one after it. Sampled densely so the straight lines read right on a log load axis. */
static bool fit_lines(svg_chart *c, const json_t *fit, double xlo, double xhi) {
    double br = rep_num(fit, "break_load"), rs = rep_num(fit, "rise_slope"), ri = rep_num(fit, "rise_intercept");
    double ts = rep_num(fit, "tail_slope"), ti = rep_num(fit, "tail_intercept");
    if (!json_is_object(fit) || !isfinite(br) || !isfinite(rs) || !isfinite(ri) || !isfinite(ts) || !isfinite(ti)) return false;
    double x[FIT_POINTS], y[FIT_POINTS];
    for (int seg = 0; seg < 2; seg++) {
        double a = seg ? br : xlo, b = seg ? xhi : br;
        if (!(b > a)) continue;
        for (int i = 0; i < FIT_POINTS; i++) {
            double f = (double)i / (FIT_POINTS - 1);
            x[i] = c->x.kind == AXIS_LOG && a > 0 ? a * pow(b / a, f) : a + (b - a) * f;
            y[i] = seg ? ti + ts * x[i] : ri + rs * x[i];
        }
        svg_line(c, x, y, FIT_POINTS, "fit");
    }
    return true;
}

void charts_saturation(rbuf *b, const rep_model *m) {
    if (!m->sweep) return;
    lvl_pt pt[MAX_LEVELS];
    size_t n = level_points(m, pt, MAX_LEVELS);
    if (n < 2) return;
    double x[MAX_LEVELS], out[MAX_LEVELS], good[MAX_LEVELS];
    double xlo = NAN, xhi = NAN, ylo = NAN, yhi = NAN;
    bool any_good = false;
    for (size_t i = 0; i < n; i++) {
        x[i] = pt[i].load;
        out[i] = pt[i].out;
        good[i] = pt[i].good;
        any_good |= !isnan(good[i]);
    }
    chart_range_of(x, n, &xlo, &xhi);
    for (size_t i = 0; i < m->n; i++) if (!m->lv[i].measured) chart_range_of(&m->lv[i].load, 1, &xlo, &xhi);
    chart_range_of(out, n, &ylo, &yhi);
    chart_range_of(good, n, &ylo, &yhi);
    if (isnan(xlo) || isnan(yhi)) return;
    char note[640] = "";
    const char *method = json_string_value(json_object_get(m->knee, "method"));
    const char *why = json_string_value(json_object_get(m->knee, "decided_by"));
    const char *conf = json_string_value(json_object_get(m->knee, "confidence"));
    if (!why) why = json_string_value(json_object_get(m->doc, "knee_note"));
    if (m->knee)
        snprintf(note, sizeof note, "Knee rule: %s%s%s%s%s%s.", method ? method : "as decided by the sweep",
                 conf ? " (confidence " : "", conf ? conf : "", conf ? ")" : "", why ? ": " : "", why ? why : "");
    else
        snprintf(note, sizeof note, "No knee in the measured range%s%s.", why ? ": " : "", why ? why : "");
    chart_fig_open(b, "fig-saturation", "Saturation curve: output tokens/s vs offered load", "higher is better", note);
    svg_chart c = { 0 };
    char xl[96], yl[96];
    svg_axis_fit(&c.x, xlo, xhi, true, false);
    chart_axis_label_log(&c.x, xl, sizeof xl, axis_unit(m));
    svg_axis_fit(&c.y, 0, yhi, false, true);
    snprintf(yl, sizeof yl, "output tokens/s");
    c.y.label = yl;
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, "Output tokens per second against offered load, with the knee marked");
    /* over-saturated region: from the first saturated level to the right edge */
    for (size_t i = 0; i < n; i++)
        if (pt[i].sat) {
            double x0 = i > 0 ? (c.x.kind == AXIS_LOG ? sqrt(x[i - 1] * x[i]) : (x[i - 1] + x[i]) / 2) : c.x.lo;
            svg_xband(&c, x0, c.x.hi, "sat", "over-saturated");
            break;
        }
    /* goodput first: below the SLO knee it equals throughput, and throughput must stay visible */
    if (any_good) {
        svg_line(&c, x, good, n, "m-good dash");
        svg_points(&c, x, good, n, "m-good", 2.5);
    }
    svg_line(&c, x, out, n, "m-tok");
    svg_points(&c, x, out, n, "m-tok", 3.5);
    /* a level the sweep could not measure has no throughput to draw: a rule says so */
    for (size_t i = 0; i < m->n; i++)
        if (!m->lv[i].measured && (i == 0 || m->lv[i - 1].load != m->lv[i].load))
            svg_vrule(&c, m->lv[i].load, "nm", "not measured", 0.15);
    bool fit = fit_lines(&c, json_object_get(m->knee, "fit"), xlo, xhi);
    const json_t *mg = m->max_goodput;
    double boundary = rep_num(mg, METRIC(slo_boundary_load));
    if (!isnan(boundary)) {
        char bl[96], ll[32];
        const char *by = json_string_value(json_object_get(mg, "slo_boundary_limited_by"));
        rep_load_label(m, boundary, ll, sizeof ll);
        snprintf(bl, sizeof bl, "SLO boundary %s%s%s", ll, by ? " by " : "", by ? by : "");
        svg_vrule(&c, boundary, "slo", bl, 0.45);
    }
    if (m->knee) {
        char kl[96], ll[32];
        double kf = rep_num(m->knee, "knee_load_fit"), kload = rep_num(m->knee, "load");
        rep_load_label(m, kload, ll, sizeof ll);
        if (isfinite(kf) && kf != kload) snprintf(kl, sizeof kl, "knee %s (fit %.3g)", ll, kf);
        else snprintf(kl, sizeof kl, "knee %s", ll);
        svg_vrule(&c, kload, "knee", kl, 1);
    }
    const char *cls[] = { "m-tok", "m-good dash", "fit" };
    const char *txt[] = { "output tok/s", "goodput tok/s (within SLO)", "two-segment fit" };
    if (!any_good) { cls[1] = cls[2]; txt[1] = txt[2]; }
    svg_legend(&c, cls, txt, (size_t)(1 + any_good + fit));
    svg_end(&c);
    chart_fig_close(b);
}

/* ---- latency vs throughput ---- */

void charts_latency_vs_throughput(rbuf *b, const rep_model *m, const char *metric, const char *name) {
    if (!m->sweep) return;
    lvl_pt pt[MAX_LEVELS];
    size_t n = level_points(m, pt, MAX_LEVELS);
    if (n < 2) return;
    bool ttft = !strcmp(metric, "ttft");
    double x[MAX_LEVELS], p50[MAX_LEVELS], p99[MAX_LEVELS];
    char lab[MAX_LEVELS][24];
    const char *labels[MAX_LEVELS];
    double xlo = NAN, xhi = NAN, ylo = NAN, yhi = NAN;
    for (size_t i = 0; i < n; i++) {
        x[i] = pt[i].out;
        p50[i] = ttft ? pt[i].ttft50 : pt[i].tpot50;
        p99[i] = ttft ? pt[i].ttft99 : pt[i].tpot99;
        rep_load_label(m, pt[i].load, lab[i], sizeof lab[i]);
        labels[i] = lab[i];
    }
    chart_range_of(x, n, &xlo, &xhi);
    chart_range_of(p50, n, &ylo, &yhi);
    chart_range_of(p99, n, &ylo, &yhi);
    if (isnan(xhi) || isnan(yhi)) return;
    double slo = rep_slo_ms(m->lv[0].r, metric);
    if (!isnan(slo)) { if (slo > yhi) yhi = slo; if (slo < ylo) ylo = slo; }
    char title[96], id[48];
    snprintf(title, sizeof title, "%s p50 / p99 vs output tokens/s", name);
    snprintf(id, sizeof id, "fig-lvt-%s", metric);
    chart_fig_open(b, id, title, "lower-right is better", "Points are labelled with their load level; dashed rule: the SLO.");
    svg_chart c = { 0 };
    char xl[64], yl[64], base[48];
    svg_axis_fit(&c.x, 0, xhi * 1.05, false, true);
    snprintf(xl, sizeof xl, "output tokens/s");
    c.x.label = xl;
    svg_axis_fit(&c.y, ylo, yhi, true, true);
    snprintf(base, sizeof base, "%s (ms)", name);
    chart_axis_label_log(&c.y, yl, sizeof yl, base);
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, title);
    const char *cl50 = ttft ? "m-ttft" : "m-tpot", *cl99 = ttft ? "m-ttft dash" : "m-tpot dash";
    svg_line(&c, x, p50, n, cl50);
    svg_points(&c, x, p50, n, cl50, 3);
    svg_line(&c, x, p99, n, cl99);
    svg_points(&c, x, p99, n, cl50, 3);
    svg_point_labels(&c, x, p99, labels, n);
    if (!isnan(slo)) {
        char sl[48], t[24];
        fmt_ms(slo, t, sizeof t);
        snprintf(sl, sizeof sl, "SLO %s", t);
        svg_hrule(&c, slo, "slo", sl);
    }
    const char *cls[] = { cl50, cl99 }, *txt[] = { "p50", "p99" };
    svg_legend(&c, cls, txt, 2);
    svg_end(&c);
    chart_fig_close(b);
}

/* ---- latency breakdown vs load ---- */

/* Stacked mean latency per level: client queue, time to first token, decode (E2E - TTFT). The
 * means add up (E2E from schedule = queue + TTFT + decode), which percentiles would not. */
void charts_breakdown(rbuf *b, const rep_model *m) {
    if (!m->sweep || m->n < 2 || m->n > MAX_LEVELS) return;
    double x[MAX_LEVELS], q[MAX_LEVELS], t[MAX_LEVELS], d[MAX_LEVELS], hi = 0;
    char lab[MAX_LEVELS][40];
    const char *labels[MAX_LEVELS];
    size_t n = 0;
    for (size_t i = 0; i < m->n; i++) {
        const json_t *r = m->lv[i].r;
        double qq = rep_num(r, METRIC(mean_queue_ms)), tt = rep_num(r, METRIC(mean_ttft_ms)), ee = rep_num(r, METRIC(mean_e2el_ms));
        if (isnan(tt) || isnan(ee)) continue;
        x[n] = (double)n;
        q[n] = isnan(qq) ? 0 : qq;
        t[n] = tt;
        d[n] = ee > tt ? ee - tt : 0;
        if (q[n] + t[n] + d[n] > hi) hi = q[n] + t[n] + d[n];
        rep_level_label(m, &m->lv[i], lab[n], sizeof lab[n]);
        labels[n] = lab[n];
        n++;
    }
    if (n < 2 || !(hi > 0)) return;
    chart_fig_open(b, "fig-breakdown", "Mean latency breakdown by load", "lower is better",
             "Client queue (scheduled to sent), time to first token (queueing in the server and prefill), decode "
             "(first to last token). Hover a bar for its value.");
    svg_chart c = { 0 };
    c.x.kind = AXIS_LINEAR;
    c.x.lo = -0.6;
    c.x.hi = (double)n - 0.4;
    c.x.n_ticks = 0;
    c.x.label = m->axis && !strcmp(m->axis, "rate") ? "offered load (requests/s)" : "offered load (concurrent users)";
    svg_axis_linear(&c.y, 0, hi, 6);
    c.y.label = "mean latency (ms)";
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, "Mean latency per load level split into client queue, time to first token and decode");
    double w = (c.w - c.ml - c.mr) / (double)n * 0.6;
    for (size_t i = 0; i < n; i++) {
        char tq[64], tt[64], td[64], v[24];
        fmt_ms(q[i], v, sizeof v); snprintf(tq, sizeof tq, "%s: client queue %s", labels[i], v);
        fmt_ms(t[i], v, sizeof v); snprintf(tt, sizeof tt, "%s: TTFT %s", labels[i], v);
        fmt_ms(d[i], v, sizeof v); snprintf(td, sizeof td, "%s: decode %s", labels[i], v);
        svg_bar(&c, x[i], w, 0, q[i], "m-queued", tq);
        svg_bar(&c, x[i], w, q[i], q[i] + t[i], "m-ttft", tt);
        svg_bar(&c, x[i], w, q[i] + t[i], q[i] + t[i] + d[i], "m-e2el", td);
    }
    svg_x_labels(&c, x, labels, n);
    const char *cls[] = { "m-queued", "m-ttft", "m-e2el" }, *txt[] = { "client queue", "TTFT", "decode (E2E - TTFT)" };
    svg_legend(&c, cls, txt, 3);
    svg_end(&c);
    chart_fig_close(b);
}

/* ---- errors by class vs load ---- */

#define ERR_CLASSES 6

/* Failed requests per level stacked by class (HTTP statuses split out), as a share of the level's
 * requests, so levels of different sizes compare. */
void charts_errors(rbuf *b, const rep_model *m) {
    if (!m->sweep || m->n < 2 || m->n > MAX_LEVELS) return;
    const char *cls_name[ERR_CLASSES];
    size_t nc = 0;
    double total_failed = 0;
    for (size_t i = 0; i < m->n; i++) {
        const json_t *e = json_object_get(m->lv[i].r, "errors");
        const json_t *st = json_object_get(e, "http_status");
        const char *k;
        json_t *v;
        total_failed += rep_num(m->lv[i].r, "failed") > 0 ? rep_num(m->lv[i].r, "failed") : 0;
        json_object_foreach((json_t *)e, k, v) {
            const char *names[64];
            size_t nn = 0;
            if (json_is_object(v)) {
                const char *code;
                json_t *cnt;
                json_object_foreach(v, code, cnt) if (nn < 64 && json_integer_value(cnt) > 0) names[nn++] = code;
            } else if (json_integer_value(v) > 0 && !(strcmp(k, "http") == 0 && json_object_size(st))) {
                names[nn++] = k;
            }
            for (size_t j = 0; j < nn; j++) {
                size_t c = 0;
                while (c < nc && strcmp(cls_name[c], names[j])) c++;
                if (c == nc && nc < ERR_CLASSES) cls_name[nc++] = names[j];
            }
        }
    }
    if (total_failed <= 0 || !nc) return;
    double x[MAX_LEVELS], hi = 0;
    char lab[MAX_LEVELS][40];
    const char *labels[MAX_LEVELS];
    for (size_t i = 0; i < m->n; i++) {
        const json_t *r = m->lv[i].r;
        x[i] = (double)i;
        double e = rep_error_pct(r);
        if (e > hi) hi = e;
        rep_level_label(m, &m->lv[i], lab[i], sizeof lab[i]);
        labels[i] = lab[i];
    }
    chart_fig_open(b, "fig-errors", "Failed requests by class and load", "lower is better",
             "Share of each level's requests that failed, stacked by class; HTTP statuses apart.");
    svg_chart c = { 0 };
    c.x.kind = AXIS_LINEAR;
    c.x.lo = -0.6;
    c.x.hi = (double)m->n - 0.4;
    c.x.n_ticks = 0;
    c.x.label = m->axis && !strcmp(m->axis, "rate") ? "offered load (requests/s)" : "offered load (concurrent users)";
    svg_axis_linear(&c.y, 0, hi > 0 ? hi : 1, 6);
    c.y.label = "failed (% of requests)";
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, "Failed requests per level, stacked by class");
    double w = (c.w - c.ml - c.mr) / (double)m->n * 0.6;
    char css[ERR_CLASSES][24], txt[ERR_CLASSES][40];
    const char *lc[ERR_CLASSES], *lt[ERR_CLASSES];
    for (size_t k = 0; k < nc; k++) {
        snprintf(css[k], sizeof css[k], "e%zu", k + 1);
        bool http = cls_name[k][0] >= '0' && cls_name[k][0] <= '9';
        snprintf(txt[k], sizeof txt[k], "%s%s", http ? "HTTP " : "", cls_name[k]);
        lc[k] = css[k];
        lt[k] = txt[k];
    }
    for (size_t i = 0; i < m->n; i++) {
        const json_t *r = m->lv[i].r, *e = json_object_get(r, "errors");
        double all = rep_num(r, "completed") + rep_num(r, "failed"), y = 0;
        if (!(all > 0)) continue;
        for (size_t k = 0; k < nc; k++) {
            bool http = cls_name[k][0] >= '0' && cls_name[k][0] <= '9';
            double cnt = rep_num(http ? json_object_get(e, "http_status") : e, cls_name[k]);
            if (!(cnt > 0)) continue;
            char title[160];
            snprintf(title, sizeof title, "%.40s: %.40s %.0f of %.0f", labels[i], txt[k], cnt, all);
            svg_bar(&c, x[i], w, y, y + 100 * cnt / all, css[k], title);
            y += 100 * cnt / all;
        }
    }
    svg_x_labels(&c, x, labels, m->n);
    svg_legend(&c, lc, lt, nc);
    svg_end(&c);
    chart_fig_close(b);
}
