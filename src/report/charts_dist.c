/* charts_dist — percentile ("nines") plots of TTFT, TPOT, ITL and E2EL per load, from the
 * per-request file when given (exact) or the stored percentiles, with error-adjusted curves
 * (a failure counts as +inf latency). */
#include "report/report_internal.h"
#include "metrics/stats.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


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
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, title);
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
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, title);
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
