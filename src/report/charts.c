/* charts — the report's figures as inline SVG: the saturation curve with the knee, latency vs
 * throughput, percentile ("nines") plots with error-adjusted curves, and the time-aligned run
 * view (tokens/s, in-flight/queued, TTFT scatter, GPU/KV utilisation on one time axis). Each
 * function appends a <figure> or nothing when the document lacks the data for it. */
#include "report/report_internal.h"
#include "metrics/stats.h"
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
        p->out = add_mean(p->out, p->n, rep_num(r, "output_throughput"));
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

void chart_range_of(const double *v, size_t n, double *lo, double *hi) {
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(v[i])) continue;
        if (isnan(*lo) || v[i] < *lo) *lo = v[i];
        if (isnan(*hi) || v[i] > *hi) *hi = v[i];
    }
}

void chart_fig_open(rbuf *b, const char *id, const char *title, const char *better, const char *note) {
    rb_printf(b, "<figure id=\"%s\"><figcaption><b>", id);
    rb_esc(b, title);
    rb_puts(b, "</b>");
    if (better) {
        rb_puts(b, " <span class=\"better\">");
        rb_esc(b, better);
        rb_puts(b, "</span>");
    }
    if (note) {
        rb_puts(b, "<br><span class=\"note\">");
        rb_esc(b, note);
        rb_puts(b, "</span>");
    }
    rb_puts(b, "</figcaption>");
}

void chart_fig_close(rbuf *b) { rb_puts(b, "</figure>"); }

static const char *axis_unit(const rep_model *m) {
    return m->axis && !strcmp(m->axis, "rate") ? "offered load (requests/s)" : "offered load (concurrent users)";
}

void chart_axis_label_log(svg_axis *a, char *buf, size_t len, const char *base) {
    snprintf(buf, len, "%s%s", base, a->kind == AXIS_LOG ? ", log" : "");
    size_t l = strlen(buf);
    /* close the unit parenthesis after "log" when the base ends with ")" */
    if (a->kind == AXIS_LOG && l > 5 && strstr(base, "(") && base[strlen(base) - 1] == ')') {
        snprintf(buf, len, "%.*s, log)", (int)(strlen(base) - 1), base);
    }
    a->label = buf;
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
    chart_range_of(out, n, &ylo, &yhi);
    chart_range_of(good, n, &ylo, &yhi);
    if (isnan(xlo) || isnan(yhi)) return;
    for (size_t i = 0; i < m->n; i++) if (!m->lv[i].measured) chart_range_of(&m->lv[i].load, 1, &xlo, &xhi);
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
    svg_begin(&c, b, 640, 320, "Output tokens per second against offered load, with the knee marked");
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
    double boundary = rep_num(mg, "slo_boundary_load");
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
    svg_begin(&c, b, 640, 320, title);
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
        double qq = rep_num(r, "mean_queue_ms"), tt = rep_num(r, "mean_ttft_ms"), ee = rep_num(r, "mean_e2el_ms");
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
    svg_begin(&c, b, 640, 320, "Mean latency per load level split into client queue, time to first token and decode");
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

/* ---- nines ---- */

#define NINES_POINTS 160

static double nines_of(double p_pct) { return -log10(1 - p_pct / 100); }

/* The quantile of sorted v at fraction q: the metrics module's percentile (numpy "linear"), the
 * one definition the summary uses. */
static double quantile(const double *v, size_t n, double q) { return stats_percentile_sorted(v, n, 100 * q); }

static const double *req_samples(const report_requests *rq, const char *metric, size_t *n) {
    if (!strcmp(metric, "ttft")) { *n = rq->n_ttft; return rq->ttft_sorted; }
    if (!strcmp(metric, "tpot")) { *n = rq->n_tpot; return rq->tpot_sorted; }
    if (!strcmp(metric, "itl")) { *n = rq->n_itl; return rq->itl_sorted; }
    *n = rq->n_e2el;
    return rq->e2el_sorted;
}

/* The levels a sweep's nines plots compare: the lowest load, the knee, the highest. */
static size_t nines_levels(const rep_model *m, size_t *idx) {
    size_t n = 0;
    if (!m->n) return 0;
    size_t lo = 0, hi = 0, knee = (size_t)-1;
    for (size_t i = 0; i < m->n; i++) {
        if (m->lv[i].load < m->lv[lo].load) lo = i;
        if (m->lv[i].load > m->lv[hi].load) hi = i;
        if (m->lv[i].is_knee && knee == (size_t)-1) knee = i;
    }
    idx[n++] = lo;
    if (knee != (size_t)-1 && knee != lo && knee != hi) idx[n++] = knee;
    if (hi != lo) idx[n++] = hi;
    return n;
}

static void nines_from_samples(rbuf *b, const rep_model *m, const report_requests *rq, const char *metric,
                               const char *name) {
    size_t n;
    const double *v = req_samples(rq, metric, &n);
    if (n < 2) return;
    /* failures enter TTFT and E2EL as +infinity (the request never got its token / its end) */
    bool ea = (!strcmp(metric, "ttft") || !strcmp(metric, "e2el")) && rq->n_failed > 0;
    size_t total = ea ? n + rq->n_failed : n;
    double max_n = floor(log10((double)total));
    if (max_n < 1) max_n = 1;
    double x[NINES_POINTS + 3], y_ok[NINES_POINTS + 3], y_ea[NINES_POINTS + 3], x_ea[NINES_POINTS + 3];
    double ok_frac = (double)n / (double)total;
    size_t n_ea = 0;
    for (int i = 0; i <= NINES_POINTS; i++) {
        double t = max_n * i / NINES_POINTS, q = 1 - pow(10, -t);
        x[i] = t;
        y_ok[i] = quantile(v, n, q);
        if (q <= ok_frac) { x_ea[n_ea] = t; y_ea[n_ea++] = quantile(v, n, q / ok_frac); }
    }
    if (ea) {
        /* from the last successful quantile the curve goes vertical: the rest is +inf */
        x_ea[n_ea] = nines_of(100 * ok_frac);
        y_ea[n_ea++] = v[n - 1];
        x_ea[n_ea] = x_ea[n_ea - 1];
        y_ea[n_ea++] = v[n - 1] * 1e6;   /* far above the axis: the clip draws it to the top */
    }
    char note[320];
    bool itl = !strcmp(metric, "itl");
    char nn[32];
    fmt_num((double)n, nn, sizeof nn);
    snprintf(note, sizeof note, "Exact, from %s %s%s. Greyed: the tail with fewer than 10 samples behind it.", nn,
             itl ? "inter-token gaps of the per-request file" : "per-request samples",
             ea ? "; solid = error-adjusted (failures count as +inf), dotted = successful requests only" : "");
    char title[96], id[48];
    snprintf(title, sizeof title, "%s by percentile", name);
    snprintf(id, sizeof id, "fig-nines-%s", metric);
    chart_fig_open(b, id, title, "lower is better", note);
    svg_chart c = { 0 };
    svg_axis_nines(&c.x, (int)max_n);
    c.x.label = "percentile (log scale of 1/(1-p))";
    char yl[64], base[48];
    /* a stray minimum far below the median would stretch the log axis: the axis starts at
     * median/10 then, and the curve's first point is clipped */
    double med = quantile(v, n, 0.5), ylo = v[0] < med / 10 ? med / 10 : v[0];
    svg_axis_fit(&c.y, ylo, v[n - 1], true, true);
    snprintf(base, sizeof base, "%s (ms)", name);
    chart_axis_label_log(&c.y, yl, sizeof yl, base);
    svg_begin(&c, b, 640, 300, title);
    double tail = log10((double)total / 10);
    if (tail < max_n) svg_xband(&c, tail, max_n, "tail", "< 10 samples");
    const char *cls = !strcmp(metric, "ttft") ? "m-ttft" : !strcmp(metric, "tpot") ? "m-tpot"
                      : !strcmp(metric, "itl") ? "m-itl" : "m-e2el";
    char dotted[32];
    snprintf(dotted, sizeof dotted, "%s dot", cls);
    svg_line(&c, x, y_ok, NINES_POINTS + 1, ea ? dotted : cls);
    if (ea) {
        svg_line(&c, x_ea, y_ea, n_ea, cls);
        char fl[64];
        char pc[24];
        fmt_pct(100.0 * (double)rq->n_failed / (double)total, pc, sizeof pc);
        snprintf(fl, sizeof fl, "failures: %s", pc);
        svg_vrule(&c, nines_of(100 * ok_frac), "fail", fl, 0);
    }
    double slo = rep_slo_ms(m->lv[0].r, metric);
    if (!isnan(slo)) {
        char sl[48], t[24];
        fmt_ms(slo, t, sizeof t);
        snprintf(sl, sizeof sl, "SLO %s", t);
        svg_hrule(&c, slo, "slo", sl);
    }
    svg_end(&c);
    char a[24], mx[24], mean[24];
    double s = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    fmt_ms(s / (double)n, mean, sizeof mean);
    fmt_ms(v[n - 1], mx, sizeof mx);
    fmt_num((double)n, a, sizeof a);
    rb_printf(b, "<div class=\"foot\">n %s &middot; mean %s &middot; max %s</div>", a, mean, mx);
    chart_fig_close(b);
}

static void nines_from_percentiles(rbuf *b, const rep_model *m, const char *metric, const char *name) {
    size_t idx[3] = { 0 }, nl = nines_levels(m, idx);
    const json_t *pl = json_object_get(m->lv[idx[0]].r, "percentiles");
    size_t np = json_array_size(pl);
    if (!nl || !np) return;
    double x[3][SVG_MAX_TICKS + 2], y[3][SVG_MAX_TICKS + 2], ylo = NAN, yhi = NAN, maxn = 1;
    size_t cnt[3] = { 0 };
    bool inf_any = false;
    for (size_t s = 0; s < nl; s++) {
        const json_t *r = m->lv[idx[s]].r;
        char key[64];
        snprintf(key, sizeof key, "min_%s_ms", metric);
        /* the minimum anchors the curve at 0%, unless it is a stray far below the median (a
         * near-zero ITL between two chunks of one read) that would stretch the log axis */
        double mn = rep_num(r, key), med = rep_pct(r, metric, 50);
        cnt[s] = 0;
        if (isfinite(mn) && !(isfinite(med) && mn < med / 10)) {
            x[s][0] = 0;
            y[s][0] = mn;
            cnt[s] = 1;
        }
        for (size_t i = 0; i < np && cnt[s] < SVG_MAX_TICKS + 2; i++) {
            double p = json_number_value(json_array_get(pl, i));
            if (!(p > 0 && p < 100)) continue;
            x[s][cnt[s]] = nines_of(p);
            y[s][cnt[s]] = rep_pct(r, metric, p);
            if (x[s][cnt[s]] > maxn) maxn = x[s][cnt[s]];
            char lab[32], ik[96];
            if (p == floor(p)) snprintf(lab, sizeof lab, "%.0f", p);
            else snprintf(lab, sizeof lab, "%g", p);
            snprintf(ik, sizeof ik, "p%s_%s_error_adjusted_inf", lab, metric);
            inf_any |= json_is_true(json_object_get(r, ik));
            cnt[s]++;
        }
        chart_range_of(y[s], cnt[s], &ylo, &yhi);
    }
    if (isnan(yhi)) return;
    char note[256];
    snprintf(note, sizeof note, "Drawn from the percentiles stored in the results (no per-request file given: "
                                "pass --requests FILE.jsonl for exact curves).%s",
             inf_any ? " Error-adjusted: some percentiles land on failed requests (+inf)." : "");
    char title[96], id[48];
    snprintf(title, sizeof title, "%s by percentile", name);
    snprintf(id, sizeof id, "fig-nines-%s", metric);
    chart_fig_open(b, id, title, "lower is better", note);
    svg_chart c = { 0 };
    svg_axis_nines(&c.x, (int)ceil(maxn - 1e-9));
    c.x.label = "percentile (log scale of 1/(1-p))";
    char yl[64], base[48];
    svg_axis_fit(&c.y, ylo, yhi, true, true);
    snprintf(base, sizeof base, "%s (ms)", name);
    chart_axis_label_log(&c.y, yl, sizeof yl, base);
    svg_begin(&c, b, 640, 300, title);
    const char *cls = !strcmp(metric, "ttft") ? "m-ttft" : !strcmp(metric, "tpot") ? "m-tpot"
                      : !strcmp(metric, "itl") ? "m-itl" : "m-e2el";
    static const char *const shade[] = { "", " faint", " dash" };
    char cl[3][48], lab[3][48];
    const char *cls_l[3], *txt_l[3];
    for (size_t s = 0; s < nl; s++) {
        /* the lowest load faint, the knee solid, the highest dashed */
        const char *sh = nl == 1 ? "" : s == 0 ? shade[1] : s == nl - 1 ? shade[2] : shade[0];
        snprintf(cl[s], sizeof cl[s], "%s%s", cls, sh);
        svg_line(&c, x[s], y[s], cnt[s], cl[s]);
        svg_points(&c, x[s], y[s], cnt[s], cls, 2.5);
        char ll[32];
        rep_level_label(m, &m->lv[idx[s]], ll, sizeof ll);
        snprintf(lab[s], sizeof lab[s], "%s%s", ll, m->lv[idx[s]].is_knee ? " (knee)" : "");
        cls_l[s] = cl[s];
        txt_l[s] = lab[s];
    }
    double slo = rep_slo_ms(m->lv[0].r, metric);
    if (!isnan(slo)) {
        char sl[48], t[24];
        fmt_ms(slo, t, sizeof t);
        snprintf(sl, sizeof sl, "SLO %s", t);
        svg_hrule(&c, slo, "slo", sl);
    }
    if (m->sweep) svg_legend(&c, cls_l, txt_l, nl);
    svg_end(&c);
    const json_t *r = m->lv[idx[nl - 1]].r;
    char key[64], mean[24], mx[24], a[24];
    snprintf(key, sizeof key, "mean_%s_ms", metric);
    fmt_ms(rep_num(r, key), mean, sizeof mean);
    snprintf(key, sizeof key, "max_%s_ms", metric);
    fmt_ms(rep_num(r, key), mx, sizeof mx);
    fmt_num(!strcmp(metric, "itl") ? rep_num(r, "itl_samples") : rep_num(r, "completed"), a, sizeof a);
    rb_printf(b, "<div class=\"foot\">%s%s: n %s &middot; mean %s &middot; max %s</div>", m->sweep ? "highest load" : "run",
              "", a, mean, mx);
    chart_fig_close(b);
}

void charts_nines(rbuf *b, const rep_model *m, const report_requests *rq, const char *metric, const char *name) {
    if (rq && !m->sweep) nines_from_samples(b, m, rq, metric, name);
    else nines_from_percentiles(b, m, metric, name);
}

/* ---- time-aligned run view ---- */

#define TL_MAX_POINTS 600
#define SCATTER_MAX 4000

typedef struct {
    double *x, *y;
    size_t n;
} tseries;

/* Reads t/y arrays, averaging into at most TL_MAX_POINTS buckets (a 10 ms engine series over a
 * long run would otherwise make a heavy page). Caller frees x and y. */
static tseries series_of(const json_t *t, const json_t *v, double scale) {
    tseries s = { 0 };
    size_t n = json_array_size(t);
    if (json_array_size(v) < n) n = json_array_size(v);
    if (!n) return s;
    size_t stride = (n + TL_MAX_POINTS - 1) / TL_MAX_POINTS;
    s.x = malloc((n / stride + 1) * sizeof *s.x);
    s.y = malloc((n / stride + 1) * sizeof *s.y);
    if (!s.x || !s.y) { free(s.x); free(s.y); memset(&s, 0, sizeof s); return s; }
    for (size_t i = 0; i < n; i += stride) {
        double sx = 0, sy = 0;
        size_t kx = 0, ky = 0;
        for (size_t j = i; j < i + stride && j < n; j++) {
            const json_t *tj = json_array_get(t, j), *vj = json_array_get(v, j);
            if (json_is_number(tj)) { sx += json_number_value(tj); kx++; }
            if (json_is_number(vj)) { sy += json_number_value(vj); ky++; }
        }
        s.x[s.n] = kx ? sx / (double)kx : NAN;
        s.y[s.n] = ky ? scale * sy / (double)ky : NAN;
        s.n++;
    }
    return s;
}

static void ts_free(tseries *s) { free(s->x); free(s->y); memset(s, 0, sizeof *s); }

typedef struct {
    tseries s;
    const char *cls, *label;
    bool step;
} tl_line;

#define TL_MAX_WINDOWS 8

/* Time windows the findings point at, shaded on every row with the finding's rank. */
typedef struct {
    double t0[TL_MAX_WINDOWS], t1[TL_MAX_WINDOWS];
    char label[TL_MAX_WINDOWS][32];
    size_t n;
} tl_windows;

static void draw_windows(svg_chart *c, const tl_windows *w) {
    for (size_t i = 0; w && i < w->n; i++) svg_xband(c, w->t0[i], w->t1[i], "finding", w->label[i]);
}

/* One row of the run view: lines on a shared x axis [0, t_end]. */
static void tl_row(rbuf *b, double t_end, const char *title, const char *ylabel, tl_line *lines, size_t n,
                   bool zero_to_100, const char *aria, const tl_windows *w) {
    double lo = NAN, hi = NAN;
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        if (!lines[i].s.n) continue;
        have++;
        chart_range_of(lines[i].s.y, lines[i].s.n, &lo, &hi);
    }
    if (!have || isnan(hi)) return;
    rb_puts(b, "<div class=\"tlrow\"><div class=\"tltitle\">");
    rb_esc(b, title);
    rb_puts(b, "</div>");
    svg_chart c = { 0 };
    c.ml = 64;
    c.mt = 26;
    c.mb = 30;
    svg_axis_linear(&c.x, 0, t_end, 12);
    c.x.label = NULL;
    if (zero_to_100) { c.y.kind = AXIS_LINEAR; svg_axis_linear(&c.y, 0, 100, 5); }
    else svg_axis_linear(&c.y, 0, hi > 0 ? hi : 1, 5);
    c.y.label = ylabel;
    svg_begin(&c, b, 1200, 170, aria);
    draw_windows(&c, w);
    const char *cls[8], *txt[8];
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        if (!lines[i].s.n) continue;
        if (lines[i].step) svg_steps(&c, lines[i].s.x, lines[i].s.y, lines[i].s.n, lines[i].cls);
        else svg_line(&c, lines[i].s.x, lines[i].s.y, lines[i].s.n, lines[i].cls);
        if (k < 8) { cls[k] = lines[i].cls; txt[k] = lines[i].label; k++; }
    }
    svg_legend(&c, cls, txt, k);
    svg_end(&c);
    rb_puts(b, "</div>");
}

/* The results document whose timeline the run view shows: the run itself, or for a sweep the
 * knee level (else the highest load that was not saturated, else the highest). */
static const json_t *timeline_doc(const rep_model *m, char *why, size_t len) {
    if (!m->sweep) { snprintf(why, len, "the run"); return m->lv[0].r; }
    size_t pick = (size_t)-1;
    for (size_t i = 0; i < m->n; i++) if (m->lv[i].is_knee) { pick = i; break; }
    for (size_t i = 0; pick == (size_t)-1 && i < m->n; i++) {
        if (m->lv[i].saturated || !m->lv[i].measured) continue;
        size_t best = (size_t)-1;
        for (size_t j = 0; j < m->n; j++)
            if (!m->lv[j].saturated && m->lv[j].measured && (best == (size_t)-1 || m->lv[j].load > m->lv[best].load)) best = j;
        pick = best;
    }
    if (pick == (size_t)-1) pick = m->n - 1;
    char ll[32];
    rep_level_label(m, &m->lv[pick], ll, sizeof ll);
    snprintf(why, len, "level %s%s", ll, m->lv[pick].is_knee ? " (the knee)" : "");
    return m->lv[pick].r;
}

/* The windows of findings about this run (for a sweep: about the level shown, or about no level). */
static void finding_windows(const json_t *diagnosis, const rep_model *m, const json_t *shown, tl_windows *w) {
    double shown_load = NAN;
    for (size_t i = 0; i < m->n; i++) if (m->lv[i].r == shown) shown_load = m->lv[i].load;
    size_t i;
    json_t *f;
    w->n = 0;
    json_array_foreach(json_object_get(diagnosis, "findings"), i, f) {
        const json_t *win = json_object_get(f, "window");
        double t0 = rep_num(win, "t0_s"), t1 = rep_num(win, "t1_s"), lvl = rep_num(f, "level");
        if (!isfinite(t0) || !isfinite(t1) || t1 <= t0 || w->n == TL_MAX_WINDOWS) continue;
        if (m->sweep && !isnan(lvl) && lvl != shown_load) continue;
        w->t0[w->n] = t0;
        w->t1[w->n] = t1;
        snprintf(w->label[w->n], sizeof w->label[w->n], "finding %zu", i + 1);
        w->n++;
    }
}

void charts_timeline(rbuf *b, const rep_model *m, const report_requests *rq, const json_t *diagnosis) {
    if (!m->n) return;
    char which[64];
    const json_t *r = timeline_doc(m, which, sizeof which);
    tl_windows win;
    finding_windows(diagnosis, m, r, &win);
    const json_t *tl = json_object_get(r, "timeline");
    const json_t *t = json_object_get(tl, "t_s");
    if (json_array_size(t) < 1) return;
    /* per-second bins: a bin's value holds over [t, t+1) */
    double t_end = rep_series_max(t) + 1;
    const json_t *eng = json_object_get(json_object_get(r, "engine"), "series");
    const json_t *tel = json_object_get(r, "telemetry");
    const json_t *srv = json_object_get(json_object_get(tel, "server"), "series");
    const json_t *gpu0 = json_object_get(json_array_get(json_object_get(tel, "gpu"), 0), "series");
    const json_t *hostser = json_object_get(json_object_get(tel, "host"), "series");
    char note[200];
    snprintf(note, sizeof note, "Time since the first request of %s, seconds; every row shares this axis.", which);
    rb_puts(b, "<figure id=\"fig-timeline\" class=\"wide\"><figcaption><span class=\"note\">");
    rb_esc(b, note);
    rb_puts(b, "</span></figcaption>");

    tl_line a[1] = { { series_of(t, json_object_get(tl, "output_tokens"), 1), "m-tok", "output tok/s", true } };
    tl_row(b, t_end, "Output tokens per second", "tok/s", a, 1, false, "Output tokens per second over time", &win);
    ts_free(&a[0].s);
    tl_line rs[3] = { { series_of(t, json_object_get(tl, "started"), 1), "m-inflight thin", "sent/s", true },
                      { series_of(t, json_object_get(tl, "finished"), 1), "m-good", "finished/s", true },
                      { series_of(t, json_object_get(tl, "failed"), 1), "m-queued", "failed/s", true } };
    if (rep_series_max(json_object_get(tl, "failed")) <= 0) ts_free(&rs[2].s);   /* no failures: no flat line */
    tl_row(b, t_end, "Requests per second: sent (achieved load), finished, failed", "req/s", rs, 3, false,
           "Requests sent, finished and failed per second over time", &win);
    for (int i = 0; i < 3; i++) ts_free(&rs[i].s);

    tl_line q[4] = {
        { series_of(t, json_object_get(tl, "in_flight"), 1), "m-inflight", "in flight (client)", true },
        { series_of(t, json_object_get(tl, "queued"), 1), "m-queued", "queued in client", true },
        { eng ? series_of(json_object_get(eng, "t_s"), json_object_get(eng, "running"), 1)
              : series_of(json_object_get(srv, "t_s"), json_object_get(srv, "running"), 1), "m-running thin", "running (server)", false },
        { eng ? series_of(json_object_get(eng, "t_s"), json_object_get(eng, "waiting"), 1)
              : series_of(json_object_get(srv, "t_s"), json_object_get(srv, "waiting"), 1), "m-waiting thin", "waiting (server)", false },
    };
    tl_row(b, t_end, "Concurrency and queues", "requests", q, 4, false, "Requests in flight and queued over time", &win);
    for (int i = 0; i < 4; i++) ts_free(&q[i].s);

    if (rq && !m->sweep && rq->n_ttft) {
        double lo = NAN, hi = NAN;
        chart_range_of(rq->ttft_ms, rq->n_ttft, &lo, &hi);
        /* past SCATTER_MAX points the page gets heavy and the dots merge anyway: draw every k-th */
        size_t stride = (rq->n_ttft + SCATTER_MAX - 1) / SCATTER_MAX;
        rb_puts(b, "<div class=\"tlrow\"><div class=\"tltitle\">TTFT of each request, at its send time");
        if (stride > 1) rb_printf(b, " (every %zu%s request of %zu)", stride, stride == 2 ? "nd" : stride == 3 ? "rd" : "th", rq->n_ttft);
        rb_puts(b, "</div>");
        svg_chart c = { 0 };
        c.ml = 64; c.mt = 26; c.mb = 30;
        svg_axis_linear(&c.x, 0, t_end, 12);
        char yl[48];
        svg_axis_fit(&c.y, lo, hi, true, true);
        chart_axis_label_log(&c.y, yl, sizeof yl, "TTFT (ms)");
        svg_begin(&c, b, 1200, 170, "TTFT of each request against its send time");
        draw_windows(&c, &win);
        if (stride == 1) {
            svg_points(&c, rq->send_s, rq->ttft_ms, rq->n_ttft, "m-ttft", 1.6);
        } else {
            size_t k = 0, cap = rq->n_ttft / stride + 1;
            double *xs = malloc(cap * sizeof *xs), *ys = malloc(cap * sizeof *ys);
            for (size_t i = 0; xs && ys && i < rq->n_ttft; i += stride) { xs[k] = rq->send_s[i]; ys[k] = rq->ttft_ms[i]; k++; }
            if (xs && ys) svg_points(&c, xs, ys, k, "m-ttft", 1.6);
            free(xs);
            free(ys);
        }
        double slo = rep_slo_ms(r, "ttft");
        if (!isnan(slo)) svg_hrule(&c, slo, "slo", "SLO");
        svg_end(&c);
        rb_puts(b, "</div>");
    }

    tl_line u[6] = {
        { series_of(json_object_get(gpu0, "t_s"), json_object_get(gpu0, "util_gpu_pct"), 1), "m-gpu", "GPU util %", false },
        { series_of(json_object_get(gpu0, "t_s"), json_object_get(gpu0, "sm_util_pct"), 1), "m-sm", "SM active %", false },
        { series_of(json_object_get(gpu0, "t_s"), json_object_get(gpu0, "tensor_util_pct"), 1), "m-tensor", "tensor %", false },
        { series_of(json_object_get(gpu0, "t_s"), json_object_get(gpu0, "dram_bw_util_pct"), 1), "m-dram", "DRAM BW %", false },
        { srv && json_object_get(srv, "kv_usage_pct")
              ? series_of(json_object_get(srv, "t_s"), json_object_get(srv, "kv_usage_pct"), 1)
              : series_of(json_object_get(eng, "t_s"), json_object_get(eng, "kv_usage"), 100), "m-kv", "KV cache %", false },
        { series_of(json_object_get(hostser, "t_s"), json_object_get(hostser, "cpu_util_pct"), 1), "m-host thin", "host CPU %", false },
    };
    const char *gpu_name = json_string_value(json_object_get(json_array_get(json_object_get(tel, "gpu"), 0), "name"));
    char ut[160];
    size_t ngpu = json_array_size(json_object_get(tel, "gpu"));
    if (gpu_name)
        snprintf(ut, sizeof ut, "Utilisation, %% (GPU: %s%s; KV cache from the %s)", gpu_name, ngpu > 1 ? " #0" : "",
                 eng ? "simulated engine" : "server");
    else
        snprintf(ut, sizeof ut, "Utilisation, %% (KV cache from the %s)", eng ? "simulated engine" : "server");
    tl_row(b, t_end, ut, "percent", u, 6, true, "GPU utilisation, tensor and DRAM activity, KV cache usage and host CPU over time", &win);
    for (int i = 0; i < 6; i++) ts_free(&u[i].s);
    if (!tel && !eng)
        rb_puts(b, "<p class=\"note\">No GPU or server telemetry in this document: the utilisation row is absent.</p>");
    rb_puts(b, "</figure>");
}

/* ---- request Gantt ---- */

#define GANTT_MAX 200

typedef struct {
    double send, first, end;
    bool ok;
} gantt_req;

static int cmp_send(const void *a, const void *b) {
    double x = ((const gantt_req *)a)->send, y = ((const gantt_req *)b)->send;
    return (x > y) - (x < y);
}

/* About 200 requests in send order around the one with the worst TTFT: each a bar from its send
 * to its first token (waiting + prefill) and on to its last token (decode); failures in red. */
void charts_gantt(rbuf *b, const rep_model *m, const report_requests *rq) {
    if (!rq || m->sweep || rq->n_g < 2) return;
    gantt_req *g = malloc(rq->n_g * sizeof *g);
    if (!g) return;
    for (size_t i = 0; i < rq->n_g; i++)
        g[i] = (gantt_req){ rq->g_send[i], rq->g_first[i], rq->g_end[i], rq->g_ok[i] != 0 };
    qsort(g, rq->n_g, sizeof *g, cmp_send);
    size_t worst = 0;
    double wt = -1;
    for (size_t i = 0; i < rq->n_g; i++) {
        double t = isfinite(g[i].first) ? g[i].first - g[i].send : (g[i].ok ? -1 : g[i].end - g[i].send);
        if (t > wt) { wt = t; worst = i; }
    }
    size_t k = rq->n_g < GANTT_MAX ? rq->n_g : GANTT_MAX;
    size_t from = worst > k / 2 ? worst - k / 2 : 0;
    if (from + k > rq->n_g) from = rq->n_g - k;
    double t0 = g[from].send, t1 = t0;
    for (size_t i = from; i < from + k; i++) if (g[i].end > t1) t1 = g[i].end;
    char note[200], a[24];
    fmt_ms(wt * 1000, a, sizeof a);
    snprintf(note, sizeof note, "%zu requests in send order around the slowest first token (%s, request %zu of %zu). "
                                "First sent at the top.", k, a, worst + 1, rq->n_g);
    chart_fig_open(b, "fig-gantt", "Requests around the worst TTFT", NULL, note);
    svg_chart c = { 0 };
    c.ml = 64;
    svg_axis_linear(&c.x, t0, t1, 12);
    c.x.label = "time since the first send (s)";
    svg_axis_linear(&c.y, 0, (double)k, 6);
    c.y.label = "requests (send order, first on top)";
    double row_px = 340.0 / (double)k;
    svg_begin(&c, b, 1200, 340 + c.mt + c.mb, "Timeline of individual requests around the worst time to first token");
    static const char *const seg_cls[] = { "m-ttft", "m-e2el", "m-queued" };
    for (int seg = 0; seg < 3; seg++) {
        rb_printf(b, "<path class=\"gantt %s\" stroke-width=\"%.2f\" d=\"", seg_cls[seg], row_px > 6 ? 5 : row_px * 0.8);
        for (size_t i = from; i < from + k; i++) {
            double y = svg_py(&c, (double)(k - (i - from)) - 0.5), s0, s1;   /* first sent on top */
            if (seg == 0) { if (!g[i].ok || !isfinite(g[i].first)) continue; s0 = g[i].send; s1 = g[i].first; }
            else if (seg == 1) { if (!g[i].ok || !isfinite(g[i].first)) continue; s0 = g[i].first; s1 = g[i].end; }
            else { if (g[i].ok) continue; s0 = g[i].send; s1 = g[i].end; }
            double p0 = svg_px(&c, s0), p1 = svg_px(&c, s1);
            if (p1 - p0 < 1) p1 = p0 + 1;   /* an instant still shows */
            rb_printf(b, "M%.1f %.1fH%.1f", p0, y, p1);
        }
        rb_puts(b, "\"/>");
    }
    const char *cls[] = { "m-ttft", "m-e2el", "m-queued" }, *txt[] = { "send to first token", "decode", "failed" };
    svg_legend(&c, cls, txt, 3);
    svg_end(&c);
    chart_fig_close(b);
    free(g);
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
    svg_begin(&c, b, 640, 300, "Failed requests per level, stacked by class");
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
