/* charts_context — the long-context and stability views of a sweep: TTFT against prompt length
 * (measured p50/p99, the roofline prediction, the fitted a + bL + cL^2 and where its quadratic term
 * takes over), TPOT against context, the GPU's DRAM bandwidth and KV usage against context, where
 * the deployment stops fitting, a table with every number (sweep's "context" section); and the
 * stability score against the normalised batch with its fitted S0 e^(-lambda b) ("stability"
 * section). Each appends nothing when the document lacks its section. */
#include "report/report_internal.h"
#include "metrics/metric_table.h"
#include "sweep/context.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define CTX_MAX 256
#define CURVE_POINTS 64

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

typedef struct {
    size_t n;
    double x[CTX_MAX], ctx[CTX_MAX];
    double ttft50[CTX_MAX], ttft99[CTX_MAX], ttft_pred[CTX_MAX];
    double tpot50[CTX_MAX], tpot99[CTX_MAX], tpot_pred[CTX_MAX];
    double dram[CTX_MAX], dram_max[CTX_MAX], kv[CTX_MAX];
    bool input_axis, any_pred, any_dram, any_kv;
} ctx_view;

static bool view_of(const json_t *c, ctx_view *v) {
    memset(v, 0, sizeof *v);
    v->input_axis = !strcmp(json_string_value(get(c, "axis")) ? json_string_value(get(c, "axis")) : "", "input_len");
    size_t i;
    json_t *lv;
    json_array_foreach(get(c, "levels"), i, lv) {
        if (v->n == CTX_MAX) break;
        size_t k = v->n++;
        const json_t *p = get(lv, "predicted");
        v->x[k] = rep_num(lv, v->input_axis ? "input_len" : "output_len");
        v->ctx[k] = rep_num(lv, "context_mean");
        v->ttft50[k] = rep_num(lv, METRIC(median_ttft_ms));
        v->ttft99[k] = rep_num(lv, METRIC(p99_ttft_ms));
        v->tpot50[k] = rep_num(lv, METRIC(median_tpot_ms));
        v->tpot99[k] = rep_num(lv, METRIC(p99_tpot_ms));
        v->ttft_pred[k] = rep_num(p, "ttft_ms");
        v->tpot_pred[k] = rep_num(p, "tpot_ms");
        v->dram[k] = rep_num(lv, "dram_bw_util_pct_mean");
        v->dram_max[k] = rep_num(lv, "dram_bw_util_pct_max");
        v->kv[k] = rep_num(lv, "kv_usage_pct_max");
        v->any_pred |= isfinite(v->ttft_pred[k]) || isfinite(v->tpot_pred[k]);
        v->any_dram |= isfinite(v->dram[k]);
        v->any_kv |= isfinite(v->kv[k]);
    }
    return v->n >= 2;
}

/* The length where the deployment stops fitting, as a rule on an axis of lengths. */
static void stop_rule(svg_chart *c, const json_t *ctx, bool input_axis, bool use_context) {
    const json_t *sf = get(ctx, "stops_fitting");
    if (!json_is_object(sf)) return;
    double at = rep_num(sf, input_axis ? "input_len" : "output_len");
    if (use_context) at = rep_num(sf, "input_len") + rep_num(sf, "output_len") / 2;
    char l[32], lab[64];
    sweep_length_label(rep_num(sf, input_axis ? "input_len" : "output_len"), l, sizeof l);
    snprintf(lab, sizeof lab, "stops fitting at %s", l);
    svg_vrule(c, at, "slo", lab, 0.1);
}

static void ttft_chart(rbuf *b, const json_t *ctx, const ctx_view *v) {
    double lo = NAN, hi = NAN, xlo = NAN, xhi = NAN;
    chart_range_of(v->x, v->n, &xlo, &xhi);
    chart_range_of(v->ttft50, v->n, &lo, &hi);
    chart_range_of(v->ttft99, v->n, &lo, &hi);
    chart_range_of(v->ttft_pred, v->n, &lo, &hi);
    if (isnan(hi) || isnan(xhi)) return;
    const json_t *pf = get(ctx, "prefill");
    double a = rep_num(pf, "a_ms"), bb = rep_num(pf, "b_ms_per_1k_tokens"), cc = rep_num(pf, "c_ms_per_1k_tokens2");
    double lq = rep_num(pf, "quadratic_from_tokens");
    char note[400];
    const char *pnote = json_string_value(get(pf, "note"));
    snprintf(note, sizeof note, "Dotted grey: the prefill roofline of the deployment (dsperf plan: the prompt alone on the "
             "engine). Thin grey: the least-squares fit a + bL + cL². %s", pnote ? pnote : "");
    chart_fig_open(b, "fig-ctx-ttft", "TTFT against prompt length", "lower is better", note);
    svg_chart c = { 0 };
    char xl[64], yl[64];
    svg_axis_fit(&c.x, xlo, xhi, true, false);
    chart_axis_label_log(&c.x, xl, sizeof xl, "prompt length (tokens)");
    svg_axis_fit(&c.y, lo > 0 ? lo : hi / 1000, hi, true, false);
    chart_axis_label_log(&c.y, yl, sizeof yl, "TTFT (ms)");
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, "Time to first token against prompt length, measured and predicted");
    if (isfinite(a) && isfinite(bb) && isfinite(cc)) {
        double x[CURVE_POINTS], y[CURVE_POINTS];
        for (int i = 0; i < CURVE_POINTS; i++) {
            x[i] = xlo * pow(xhi / xlo, (double)i / (CURVE_POINTS - 1));
            double k = x[i] / 1000;
            y[i] = a + bb * k + cc * k * k;
            if (!(y[i] > 0)) y[i] = NAN;
        }
        svg_line(&c, x, y, CURVE_POINTS, "fit thin");
    }
    if (v->any_pred) { svg_line(&c, v->x, v->ttft_pred, v->n, "pred"); svg_points(&c, v->x, v->ttft_pred, v->n, "m-host", 2); }
    svg_line(&c, v->x, v->ttft99, v->n, "m-ttft dash");
    svg_line(&c, v->x, v->ttft50, v->n, "m-ttft");
    svg_points(&c, v->x, v->ttft50, v->n, "m-ttft", 3);
    if (isfinite(lq) && lq >= xlo && lq <= xhi) {
        char t[64];
        snprintf(t, sizeof t, "quadratic from ~%.0fk", lq / 1024);
        svg_vrule(&c, lq, "fail", t, 0.9);
    }
    stop_rule(&c, ctx, v->input_axis, false);
    const char *cls[] = { "m-ttft", "m-ttft dash", "pred" }, *txt[] = { "p50", "p99", "roofline (plan)" };
    svg_legend(&c, cls, txt, v->any_pred ? 3 : 2);
    svg_end(&c);
    chart_fig_close(b);
}

static void tpot_chart(rbuf *b, const json_t *ctx, const ctx_view *v) {
    double lo = NAN, hi = NAN, xlo = NAN, xhi = NAN;
    chart_range_of(v->ctx, v->n, &xlo, &xhi);
    chart_range_of(v->tpot50, v->n, &lo, &hi);
    chart_range_of(v->tpot99, v->n, &lo, &hi);
    chart_range_of(v->tpot_pred, v->n, &lo, &hi);
    if (isnan(hi) || isnan(xhi)) return;
    const json_t *dc = get(ctx, "decode");
    char note[400] = "";
    double e = rep_num(dc, "e_ms_per_1k_context"), bw = rep_num(dc, "kv_read_bytes_per_s_implied");
    if (isfinite(e)) {
        char bws[96] = "";
        if (isfinite(bw)) snprintf(bws, sizeof bws, ", as if the added context were read at %.3g TB/s", bw / 1e12);
        snprintf(note, sizeof note, "Each decode step reads every running sequence's whole KV cache: TPOT grows by %.3g ms per "
                 "1k tokens of context%s. Dotted grey: one decode step of the roofline (dsperf plan) at the offered batch.",
                 e, bws);
    }
    chart_fig_open(b, "fig-ctx-tpot", "TPOT against context", "lower is better", note[0] ? note : NULL);
    svg_chart c = { 0 };
    char xl[64], yl[64];
    svg_axis_fit(&c.x, xlo, xhi, true, false);
    chart_axis_label_log(&c.x, xl, sizeof xl, "mean decode context (tokens)");
    svg_axis_fit(&c.y, 0, hi, false, true);
    snprintf(yl, sizeof yl, "TPOT (ms)");
    c.y.label = yl;
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, "Time per output token against context, measured and predicted");
    if (v->any_pred) { svg_line(&c, v->ctx, v->tpot_pred, v->n, "pred"); svg_points(&c, v->ctx, v->tpot_pred, v->n, "m-host", 2); }
    svg_line(&c, v->ctx, v->tpot99, v->n, "m-tpot dash");
    svg_line(&c, v->ctx, v->tpot50, v->n, "m-tpot");
    svg_points(&c, v->ctx, v->tpot50, v->n, "m-tpot", 3);
    stop_rule(&c, ctx, v->input_axis, true);
    const char *cls[] = { "m-tpot", "m-tpot dash", "pred" }, *txt[] = { "p50", "p99", "roofline (plan)" };
    svg_legend(&c, cls, txt, v->any_pred ? 3 : 2);
    svg_end(&c);
    chart_fig_close(b);
}

static void memory_chart(rbuf *b, const json_t *ctx, const ctx_view *v) {
    if (!v->any_dram && !v->any_kv) return;
    double xlo = NAN, xhi = NAN;
    chart_range_of(v->ctx, v->n, &xlo, &xhi);
    if (isnan(xhi)) return;
    chart_fig_open(b, "fig-ctx-mem", "GPU DRAM bandwidth and KV cache against context", NULL,
                   "DRAM: GPM bandwidth utilisation, mean over the level (dots: the peak). KV: peak usage from the server's "
                   "/metrics or the simulated engine. Long contexts fill the cache first, then the bandwidth.");
    svg_chart c = { 0 };
    char xl[64];
    svg_axis_fit(&c.x, xlo, xhi, true, false);
    chart_axis_label_log(&c.x, xl, sizeof xl, "mean decode context (tokens)");
    svg_axis_fit(&c.y, 0, 100, false, true);
    c.y.label = "% of capacity";
    svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, "DRAM bandwidth and KV cache usage against context");
    if (v->any_dram) {
        svg_line(&c, v->ctx, v->dram, v->n, "m-dram");
        svg_points(&c, v->ctx, v->dram_max, v->n, "m-dram", 2.5);
        svg_hrule(&c, 92, "fail", "92%: the bandwidth ceiling");
    }
    if (v->any_kv) { svg_line(&c, v->ctx, v->kv, v->n, "m-kv"); svg_points(&c, v->ctx, v->kv, v->n, "m-kv", 3); }
    stop_rule(&c, ctx, v->input_axis, true);
    const char *cls[] = { "m-dram", "m-kv" }, *txt[] = { "DRAM bandwidth (GPM)", "KV cache peak" };
    svg_legend(&c, v->any_dram ? cls : cls + 1, v->any_dram ? txt : txt + 1, (size_t)(v->any_dram + v->any_kv));
    svg_end(&c);
    chart_fig_close(b);
}

static void td(rbuf *b, double v, bool bad) {
    char s[32];
    fmt_num(v, s, sizeof s);
    rb_printf(b, "<td class=\"n%s\">%s</td>", bad ? " bad" : "", s);
}

static void td_pct(rbuf *b, double v, bool bad) {
    char s[32];
    fmt_pct_cell(v, s, sizeof s);
    rb_printf(b, "<td class=\"n%s\">%s</td>", bad ? " bad" : "", s);
}

static void context_table(rbuf *b, const json_t *ctx) {
    rb_puts(b, "<div class=\"tablewrap\"><table><thead><tr><th>prompt</th><th>output</th><th>TTFT p50 (ms)</th>"
               "<th>predicted</th><th>per 1k prompt</th><th>marginal per 1k</th><th>TPOT p50 (ms)</th><th>predicted</th>"
               "<th>decode tok/s per seq</th><th>KV read per token (MB)</th><th>KV peak %</th><th>DRAM %</th>"
               "<th>preemptions</th><th>rejected</th><th>fits</th><th>plan: fits</th></tr></thead><tbody>");
    size_t i;
    json_t *lv;
    json_array_foreach(get(ctx, "levels"), i, lv) {
        const json_t *p = get(lv, "predicted");
        char in[24], out[24];
        sweep_length_label(rep_num(lv, "input_len"), in, sizeof in);
        sweep_length_label(rep_num(lv, "output_len"), out, sizeof out);
        bool fits = json_is_true(get(lv, "fits"));
        rb_printf(b, "<tr%s><td>%s</td><td>%s</td>", fits ? "" : " class=\"bad\"", in, out);
        td(b, rep_num(lv, METRIC(median_ttft_ms)), false);
        td(b, rep_num(p, "ttft_ms"), false);
        td(b, rep_num(lv, "ttft_ms_per_1k_prompt"), false);
        td(b, rep_num(lv, "ttft_marginal_ms_per_1k"), false);
        td(b, rep_num(lv, METRIC(median_tpot_ms)), false);
        td(b, rep_num(p, "tpot_ms"), false);
        td(b, rep_num(lv, "decode_tok_s_per_seq"), false);
        td(b, rep_num(lv, "kv_read_bytes_per_token") / 1e6, false);
        td_pct(b, rep_num(lv, "kv_usage_pct_max"), rep_num(lv, "kv_usage_pct_max") >= 98);
        td_pct(b, rep_num(lv, "dram_bw_util_pct_mean"), rep_num(lv, "dram_bw_util_pct_mean") >= 92);
        td(b, rep_num(lv, "preemptions"), rep_num(lv, "preemptions") > 0);
        td(b, rep_num(lv, "rejected"), rep_num(lv, "rejected") > 0);
        rb_puts(b, "<td>");
        if (fits) rb_puts(b, "yes");
        else rb_esc(b, json_string_value(get(lv, "why_not")));
        rb_printf(b, "</td><td>%s</td></tr>", !json_is_object(p) ? "n/a" : json_is_true(get(p, "rejected")) ? "rejected"
                  : json_is_true(get(p, "fits")) ? "yes" : "no");
    }
    rb_puts(b, "</tbody></table></div>");
}

void charts_context(rbuf *b, const rep_model *m) {
    const json_t *ctx = get(m->doc, "context");
    ctx_view v;
    if (!m->sweep || !json_is_object(ctx) || !view_of(ctx, &v)) return;
    rb_printf(b, "<section id=\"context\"><h2>Context length: %s at a fixed load</h2><p>", v.input_axis ? "prompt length"
              : "output length");
    const json_t *sf = get(ctx, "stops_fitting"), *pred = get(ctx, "prediction");
    if (json_is_object(sf)) {
        char l[24];
        sweep_length_label(rep_num(sf, v.input_axis ? "input_len" : "output_len"), l, sizeof l);
        rb_printf(b, "<b>The deployment stops fitting at %s tokens</b>: ", l);
        rb_esc(b, json_string_value(get(sf, "why")));
        rb_puts(b, ". ");
    } else {
        rb_puts(b, "Every length fitted (no preemption, no rejected prompt). ");
    }
    if (json_is_string(get(pred, "deployment"))) {
        rb_puts(b, "Predicted: ");
        rb_esc(b, json_string_value(get(pred, "deployment")));
        rb_puts(b, " — ");
        rb_esc(b, json_string_value(get(pred, "note")));
        rb_puts(b, ".");
    } else if (json_is_string(get(pred, "why"))) {
        rb_puts(b, "No prediction: ");
        rb_esc(b, json_string_value(get(pred, "why")));
        rb_puts(b, ".");
    }
    rb_puts(b, "</p><div class=\"grid2\">");
    if (v.input_axis) ttft_chart(b, ctx, &v);
    tpot_chart(b, ctx, &v);
    memory_chart(b, ctx, &v);
    rb_puts(b, "</div>");
    context_table(b, ctx);
    rb_puts(b, "</section>");
}

void charts_stability(rbuf *b, const rep_model *m) {
    const json_t *s = get(m->doc, "stability");
    if (!m->sweep || !json_is_object(s) || !json_is_array(get(s, "points"))) return;
    rb_puts(b, "<section id=\"stability\"><h2>Stability as batches grow</h2><p>");
    const char *score = json_string_value(get(s, "score"));
    if (json_is_true(get(s, "fitted"))) {
        const json_t *r = get(s, "recommended_batch");
        rb_printf(b, "<b>%s</b>: λ = %.3f (95%% interval %.3f to %.3f), S₀ = %.3f; recommended batch %.0f–%.0f. ",
                  json_string_value(get(s, "grade")), rep_num(s, "lambda"), rep_num(s, "lambda_lo"), rep_num(s, "lambda_hi"),
                  rep_num(s, "s0"), rep_num(r, "lo"), rep_num(r, "hi"));
        const char *note = json_string_value(get(r, "note"));
        if (note && *note) { rb_esc(b, note); rb_puts(b, ". "); }
    } else {
        rb_puts(b, "<b>Not graded</b>: ");
        rb_esc(b, json_string_value(get(s, "why")));
        rb_puts(b, ". ");
    }
    if (json_is_string(get(s, "why")) && json_is_true(get(s, "fitted"))) { rb_esc(b, json_string_value(get(s, "why"))); rb_puts(b, ". "); }
    rb_puts(b, "Score: ");
    rb_esc(b, json_string_value(get(s, "score_formula")));
    rb_puts(b, "; grades: λ &lt; 0.05 highly stable (batch 64–512), up to 0.15 moderately stable (32–256), above unstable.</p>");
    double x[CTX_MAX], y[CTX_MAX];
    size_t n = 0, i;
    json_t *p;
    json_array_foreach(get(s, "points"), i, p) {
        if (n == CTX_MAX || !json_is_true(get(p, "used"))) continue;
        x[n] = rep_num(p, "batch");
        y[n++] = rep_num(p, "score");
    }
    if (n >= 2) {
        double xlo = NAN, xhi = NAN, ylo = NAN, yhi = NAN;
        chart_range_of(x, n, &xlo, &xhi);
        chart_range_of(y, n, &ylo, &yhi);
        /* the axis says what the batch is: the sweep's offered concurrency (what a closed loop
         * holds the client to, not what the server ran) or requests in the system by Little's law */
        const char *src = json_string_value(get(s, "batch_source"));
        bool offered = !src || strstr(src, "concurrency") != NULL;
        const char *xname = offered ? "batch: offered concurrency (users)" : "batch: requests in the system (Little's law)";
        char cap[400];
        snprintf(cap, sizeof cap, "Points: each level's score against %s. %s", offered ? "the level's offered concurrency"
                 : "request_throughput × mean E2EL, the mean requests in the system (client side, so it counts the server's queue)",
                 json_is_true(get(s, "fitted")) ? "Line: the fitted S₀·e^(−λb), b = batch / 64; dotted: the ends of λ's interval."
                                                : "No line: the sweep could not fit the decay (see above).");
        rb_puts(b, "<div class=\"grid2\">");   /* one grid cell, the size of every other chart */
        chart_fig_open(b, "fig-stability", "Stability score against batch size", "higher is better", cap);
        svg_chart c = { 0 };
        char xl[80], yl[64];
        svg_axis_fit(&c.x, xlo, xhi, true, false);
        chart_axis_label_log(&c.x, xl, sizeof xl, xname);
        svg_axis_fit(&c.y, 0, 1, false, true);
        snprintf(yl, sizeof yl, "stability score S (%s)", score ? score : "?");
        c.y.label = yl;
        svg_begin(&c, b, SVG_CHART_W, SVG_CHART_H, "Stability score against batch size with the fitted exponential decay");
        if (json_is_true(get(s, "fitted"))) {
            const char *which[] = { "lambda", "lambda_lo", "lambda_hi" }, *cls[] = { "m-tok", "fit", "fit" };
            for (int k = 0; k < 3; k++) {
                double cx[CURVE_POINTS], cy[CURVE_POINTS], lam = rep_num(s, which[k]), s0 = rep_num(s, "s0");
                for (int j = 0; j < CURVE_POINTS; j++) {
                    cx[j] = xlo * pow(xhi / xlo, (double)j / (CURVE_POINTS - 1));
                    cy[j] = s0 * exp(-lam * cx[j] / 64);
                }
                svg_line(&c, cx, cy, CURVE_POINTS, cls[k]);
            }
        }
        svg_points(&c, x, y, n, "m-ttft", 3.5);
        const char *lc[] = { "m-ttft", "m-tok" }, *lt[] = { "level score", "fit S0 e^(-lambda b)" };
        svg_legend(&c, lc, lt, json_is_true(get(s, "fitted")) ? 2 : 1);
        svg_end(&c);
        chart_fig_close(b);
        rb_puts(b, "</div>");
    }
    rb_puts(b, "</section>");
}

/* ---- Markdown ---- */

static void md_cell_num(rbuf *b, double v) {
    char s[32];
    fmt_num(v, s, sizeof s);
    rb_printf(b, " %s |", s);
}

void md_context_and_stability(rbuf *b, const rep_model *m) {
    const json_t *ctx = get(m->doc, "context"), *s = get(m->doc, "stability");
    if (m->sweep && json_is_object(ctx)) {
        bool in = !strcmp(json_string_value(get(ctx, "axis")) ? json_string_value(get(ctx, "axis")) : "", "input_len");
        rb_printf(b, "\n## Context length (%s)\n\n", in ? "prompt" : "output");
        const json_t *sf = get(ctx, "stops_fitting");
        if (json_is_object(sf)) {
            char l[24];
            sweep_length_label(rep_num(sf, in ? "input_len" : "output_len"), l, sizeof l);
            rb_printf(b, "**Stops fitting at %s tokens**: ", l);
            rb_md_cell(b, json_string_value(get(sf, "why")));
            rb_puts(b, ".\n\n");
        }
        rb_puts(b, "| prompt | output | TTFT p50 (ms) | predicted | TPOT p50 (ms) | predicted | decode tok/s per seq | "
                   "KV peak % | DRAM % | preemptions | rejected | fits |\n|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|\n");
        size_t i;
        json_t *lv;
        json_array_foreach(get(ctx, "levels"), i, lv) {
            const json_t *p = get(lv, "predicted");
            char a[24], c[24];
            sweep_length_label(rep_num(lv, "input_len"), a, sizeof a);
            sweep_length_label(rep_num(lv, "output_len"), c, sizeof c);
            rb_printf(b, "| %s | %s |", a, c);
            md_cell_num(b, rep_num(lv, METRIC(median_ttft_ms)));
            md_cell_num(b, rep_num(p, "ttft_ms"));
            md_cell_num(b, rep_num(lv, METRIC(median_tpot_ms)));
            md_cell_num(b, rep_num(p, "tpot_ms"));
            md_cell_num(b, rep_num(lv, "decode_tok_s_per_seq"));
            md_cell_num(b, rep_num(lv, "kv_usage_pct_max"));
            md_cell_num(b, rep_num(lv, "dram_bw_util_pct_mean"));
            md_cell_num(b, rep_num(lv, "preemptions"));
            md_cell_num(b, rep_num(lv, "rejected"));
            rb_puts(b, " ");
            rb_md_cell(b, json_is_true(get(lv, "fits")) ? "yes" : json_string_value(get(lv, "why_not")));
            rb_puts(b, " |\n");
        }
        const json_t *pred = get(ctx, "prediction");
        if (json_is_string(get(pred, "deployment"))) {
            rb_puts(b, "\nPredicted with dsperf plan's roofline for ");
            rb_md_cell(b, json_string_value(get(pred, "deployment")));
            rb_puts(b, ".\n");
        }
    }
    if (m->sweep && json_is_object(s) && json_is_array(get(s, "points"))) {
        rb_puts(b, "\n## Stability\n\n");
        if (json_is_true(get(s, "fitted"))) {
            const json_t *r = get(s, "recommended_batch");
            rb_printf(b, "**%s**: lambda %.3f (95%% interval %.3f to %.3f), S0 %.3f, recommended batch %.0f-%.0f (score ",
                      json_string_value(get(s, "grade")), rep_num(s, "lambda"), rep_num(s, "lambda_lo"), rep_num(s, "lambda_hi"),
                      rep_num(s, "s0"), rep_num(r, "lo"), rep_num(r, "hi"));
            rb_md_cell(b, json_string_value(get(s, "score")));
            rb_puts(b, ", b = batch / 64).\n");
        } else {
            rb_puts(b, "Not graded: ");
            rb_md_cell(b, json_string_value(get(s, "why")));
            rb_puts(b, ".\n");
        }
    }
}
