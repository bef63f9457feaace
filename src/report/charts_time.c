/* charts_time — the time-aligned run view (tokens/s, in-flight and queued requests, the TTFT
 * scatter, GPU and KV utilisation and the diagnosis's windows on one time axis) and the request
 * Gantt. */
#include "report/report_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


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
    svg_begin(&c, b, SVG_WIDE_W, 170, aria);
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
        svg_begin(&c, b, SVG_WIDE_W, 170, "TTFT of each request against its send time");
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
    svg_begin(&c, b, SVG_WIDE_W, 340 + c.mt + c.mb, "Timeline of individual requests around the worst time to first token");
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
