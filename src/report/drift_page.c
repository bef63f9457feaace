/* drift_page — the report of a `dsperf drift` document (dsperf.drift/1): the verdict at the longest
 * context (agreement and ΔPPL with their intervals, against the noise floor), top-1 agreement, ΔPPL
 * and KL against context length (the candidate in colour with its interval whiskers, the noise floor
 * grey), the per-context table, the gate, warnings and how to reproduce. Markdown carries the
 * verdict and the table; the CSV one row per context. */
#include "report/report_internal.h"
#include "common/redact.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

#define MAX_CTX 64

static const char *str(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static const json_t *obj(const json_t *o, const char *k) { return json_object_get(o, k); }

bool report_is_drift(const json_t *doc) {
    const char *s = str(doc, "schema");
    return s && !strncmp(s, "dsperf.drift/", 13);
}

static double ci_of(const json_t *b, const char *k, int i) {
    char key[64];
    snprintf(key, sizeof key, "%s_ci", k);
    const json_t *v = json_array_get(obj(b, key), (size_t)i);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void ctx_label(double c, char *buf, size_t len) {
    if (c >= 1024 && fmod(c, 1024) == 0) snprintf(buf, len, "%.0fk", c / 1024);
    else snprintf(buf, len, "%.0f", c);
}

/* "98.70% [98.30, 99.00]" (scale 100, %), signed for deltas; "n/a" when absent. sep goes between
 * the value and its interval (" ", or a line break in a table cell). */
static void fmt_val_ci_sep(const json_t *b, const char *k, bool pct, bool sign, const char *sep, const char *end, char *buf, size_t len) {
    double v = rep_num(b, k), lo = ci_of(b, k, 0), hi = ci_of(b, k, 1), m = pct ? 100 : 1;
    if (!isfinite(v)) { snprintf(buf, len, "n/a"); return; }
    const char *u = pct ? "%" : "";
    if (isfinite(lo) && isfinite(hi))
        snprintf(buf, len, sign ? "%+.2f%s%s[%+.2f, %+.2f]%s" : "%.2f%s%s[%.2f, %.2f]%s", v * m, u, sep, lo * m, hi * m, end);
    else snprintf(buf, len, sign ? "%+.2f%s" : "%.2f%s", v * m, u);
}

static void fmt_val_ci(const json_t *b, const char *k, bool pct, bool sign, char *buf, size_t len) {
    fmt_val_ci_sep(b, k, pct, sign, " ", "", buf, len);
}

/* The complete buckets, in context order. */
static size_t complete_buckets(const json_t *doc, const json_t **out) {
    size_t n = 0, i;
    const json_t *b;
    json_array_foreach(obj(doc, "buckets"), i, b)
        if (json_is_true(obj(b, "complete")) && n < MAX_CTX) out[n++] = b;
    return n;
}

/* One metric against context length: the candidate with interval whiskers, the floor grey. */
static void by_context_chart(rbuf *b, const json_t *doc, const char *id, const char *title, const char *better, const char *key,
                             double scale, const char *ylabel, bool zero_rule, double y_floor, double y_ceil, const char *note) {
    const json_t *bk[MAX_CTX];
    size_t n = complete_buckets(doc, bk);
    double x[MAX_CTX], y[MAX_CTX], fy[MAX_CTX], lo = NAN, hi = NAN, xlo = NAN, xhi = NAN;
    size_t have = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *fl = obj(bk[i], "floor");
        x[i] = rep_num(bk[i], "context");
        y[i] = rep_num(bk[i], key) * scale;
        fy[i] = json_is_object(fl) ? rep_num(fl, key) * scale : NAN;
        double v[4] = { y[i], ci_of(bk[i], key, 0) * scale, ci_of(bk[i], key, 1) * scale, fy[i] };
        chart_range_of(v, 4, &lo, &hi);
        chart_range_of(&x[i], 1, &xlo, &xhi);
        have += isfinite(y[i]);
    }
    if (!have) return;
    if (zero_rule) { double z = 0; chart_range_of(&z, 1, &lo, &hi); }
    chart_fig_open(b, id, title, better, note);
    svg_chart ch = { 0 };
    bool log_x = xhi / xlo >= 4;
    if (xlo == xhi) { xlo *= 0.5; xhi *= 2; }
    svg_axis_fit(&ch.x, xlo / (log_x ? 1.3 : 1), xhi * (log_x ? 1.3 : 1), log_x, false);
    char xl[80];
    chart_axis_label_log(&ch.x, xl, sizeof xl, "context length (tokens)");
    if (!strcmp(str(obj(doc, "config"), "length_unit") ? str(obj(doc, "config"), "length_unit") : "", "words"))
        chart_axis_label_log(&ch.x, xl, sizeof xl, "context length (words)");
    double pad = (hi - lo) * 0.08 + 1e-9, ylo = lo - pad, yhi = hi + pad;
    if (isfinite(y_floor) && ylo < y_floor) ylo = y_floor;     /* no axis room a metric cannot take */
    if (isfinite(y_ceil) && yhi > y_ceil) yhi = y_ceil;
    svg_axis_fit(&ch.y, ylo, yhi, false, false);
    ch.y.label = ylabel;
    svg_begin(&ch, b, SVG_CHART_W, SVG_CHART_H, title);
    if (zero_rule) svg_hrule(&ch, 0, "dash", NULL);
    for (size_t i = 0; i < n; i++) {
        double l = ci_of(bk[i], key, 0) * scale, h = ci_of(bk[i], key, 1) * scale;
        char t[160], cl[24];
        ctx_label(x[i], cl, sizeof cl);
        snprintf(t, sizeof t, "%s: %.4g [%.4g, %.4g]", cl, y[i], l, h);
        if (isfinite(l) && isfinite(h) && h > l) svg_bar(&ch, x[i], 3, l, h, "m-tok", t);
        const json_t *fl = obj(bk[i], "floor");
        double fl_lo = json_is_object(fl) ? ci_of(fl, key, 0) * scale : NAN, fl_hi = json_is_object(fl) ? ci_of(fl, key, 1) * scale : NAN;
        if (isfinite(fl_lo) && isfinite(fl_hi) && fl_hi > fl_lo) svg_bar(&ch, x[i], 3, fl_lo, fl_hi, "m-host faint", "noise floor interval");
    }
    svg_line(&ch, x, fy, n, "m-host dash");
    svg_points(&ch, x, fy, n, "m-host", 2.5);
    svg_line(&ch, x, y, n, "m-tok");
    svg_points(&ch, x, y, n, "m-tok", 3.5);
    const char *cls[] = { "m-tok", "m-host dash" }, *txt[] = { "candidate vs baseline (95% interval)", "noise floor: baseline vs itself" };
    svg_legend(&ch, cls, txt, 2);
    svg_end(&ch);
    chart_fig_close(b);
}

static void table_row(rbuf *b, const json_t *bk, bool md) {
    char c[24], ag[96], dp[96], kl[32], tail[32], dl[32], ex[32], fd[32], fa[96], fdp[96], cont[32], pt[32];
    const char *sep = md ? " " : "<br><small>", *end = md ? "" : "</small>";
    ctx_label(rep_num(bk, "context"), c, sizeof c);
    fmt_val_ci_sep(bk, "top1_agreement", true, false, sep, end, ag, sizeof ag);
    fmt_val_ci_sep(bk, "delta_ppl", true, true, sep, end, dp, sizeof dp);
    snprintf(kl, sizeof kl, "%.4g", rep_num(bk, "kl"));
    snprintf(tail, sizeof tail, "%.2g", rep_num(bk, "kl_tail_mass"));
    snprintf(dl, sizeof dl, "%+.4f", rep_num(bk, "mean_logprob_delta"));
    snprintf(ex, sizeof ex, "%.0f%%", rep_num(bk, "exact_match_rate") * 100);
    snprintf(fd, sizeof fd, "%.1f", rep_num(bk, "mean_first_divergence"));
    snprintf(cont, sizeof cont, "%.2f%%", rep_num(bk, "topk_containment") * 100);
    snprintf(pt, sizeof pt, "%.0f", rep_num(bk, "prompt_tokens_mean"));
    const json_t *fl = obj(bk, "floor");
    if (json_is_object(fl)) {
        fmt_val_ci_sep(fl, "top1_agreement", true, false, sep, end, fa, sizeof fa);
        fmt_val_ci_sep(fl, "delta_ppl", true, true, sep, end, fdp, sizeof fdp);
    } else {
        snprintf(fa, sizeof fa, "-");
        snprintf(fdp, sizeof fdp, "-");
    }
    const char *v = str(bk, "verdict") ? str(bk, "verdict") : "";
    long long np = (long long)json_integer_value(obj(bk, "prompts"));
    if (md) {
        rb_printf(b, "| %s | %lld | %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | ", c, np, pt, ag, dp, kl, dl, cont, ex, fd, fa, fdp);
        rb_md_cell(b, v);
        rb_puts(b, " |\n");
        return;
    }
    bool beyond = !strcmp(v, "beyond the noise floor");
    rb_printf(b, "<tr><td class=\"l\">%s</td><td>%lld</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td>"
                 "<td>%s</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"l\"><span class=\"badge %s\">",
              c, np, pt, ag, dp, kl, tail, dl, cont, ex, fd, fa, fdp, beyond ? "warn" : !strcmp(v, "indistinguishable from the noise floor") ? "ok" : "");
    rb_esc(b, v);
    rb_puts(b, "</span></td></tr>");
}

/* "At 16k: top-1 agreement 98.70% [98.30, 99.00], ΔPPL +2.10% [...]: beyond the noise floor." */
static void verdict_sentence(rbuf *b, const json_t *doc) {
    const json_t *bk[MAX_CTX];
    size_t n = complete_buckets(doc, bk);
    if (!n) { rb_puts(b, "No context was measured completely."); return; }
    const json_t *last = bk[n - 1];
    char c[24], ag[64], dp[64];
    ctx_label(rep_num(last, "context"), c, sizeof c);
    fmt_val_ci(last, "top1_agreement", true, false, ag, sizeof ag);
    fmt_val_ci(last, "delta_ppl", true, true, dp, sizeof dp);
    rb_printf(b, "At %s: top-1 agreement %s, \xce\x94PPL %s", c, ag, dp);
    const char *v = str(last, "verdict");
    if (v) { rb_puts(b, ": "); rb_esc(b, v); }
    rb_puts(b, ".");
    if (n > 1) {
        char c0[24], a0[64];
        ctx_label(rep_num(bk[0], "context"), c0, sizeof c0);
        fmt_val_ci(bk[0], "top1_agreement", true, false, a0, sizeof a0);
        rb_printf(b, " At %s: %s.", c0, a0);
    }
}

static const char *table_head_md =
    "| context | prompts | prompt tokens | top-1 agreement | \xce\x94PPL | KL | \xce\x94logprob | in top-k | exact match | first divergence | floor agreement | floor \xce\x94PPL | verdict |\n"
    "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|\n";

int report_drift_html(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) {
    (void)err; (void)errlen;
    rbuf b;
    rb_init(&b);
    const json_t *base = obj(doc, "baseline"), *cand = obj(doc, "candidate"), *cfg = obj(doc, "config");
    report_page_head(&b, o->title ? o->title : "dsperf drift \xe2\x80\x94 accuracy by context length");
    rb_puts(&b, "baseline ");
    rb_esc(&b, str(base, "url"));
    rb_puts(&b, " &middot; candidate ");
    rb_esc(&b, str(cand, "url"));
    rb_puts(&b, " &middot; model ");
    rb_esc(&b, str(base, "model") ? str(base, "model") : "?");
    rb_puts(&b, " &middot; dsperf ");
    rb_esc(&b, str(obj(doc, "tool"), "version") ? str(obj(doc, "tool"), "version") : "?");
    rb_puts(&b, "</div><nav><a href=\"#verdict\">Verdict</a><a href=\"#charts\">By context</a><a href=\"#table\">Table</a>"
                "<a href=\"#reproduce\">Reproduce</a></nav></header>");
    rb_puts(&b, "<section id=\"verdict\" class=\"verdict\"><p class=\"sentence\">");
    verdict_sentence(&b, doc);
    rb_puts(&b, "</p><div class=\"badges\">");
    if (json_is_true(obj(doc, "partial"))) rb_puts(&b, "<span class=\"badge bad\">partial: interrupted</span>");
    if (json_is_true(obj(doc, "same_deployment"))) rb_puts(&b, "<span class=\"badge\">the candidate is the baseline: this run is the noise floor</span>");
    const json_t *gate = obj(doc, "gate");
    if (gate) rb_printf(&b, "<span class=\"badge %s\">gate %s</span>", json_is_true(obj(gate, "passed")) ? "ok" : "bad",
                        json_is_true(obj(gate, "passed")) ? "passed" : "FAILED");
    rb_printf(&b, "<span class=\"badge\">scored by %s / %s</span>", str(base, "score_method") ? str(base, "score_method") : "?",
              str(cand, "score_method") ? str(cand, "score_method") : "?");
    rb_puts(&b, "</div>");
    if (gate) {
        rb_puts(&b, "<ul>");
        size_t i;
        const json_t *r;
        json_array_foreach(obj(gate, "rules"), i, r) {
            rb_printf(&b, "<li><span class=\"badge %s\">%s</span> ", json_is_true(obj(r, "passed")) ? "ok" : "bad", json_is_true(obj(r, "passed")) ? "ok" : "fail");
            rb_esc(&b, str(r, "rule"));
            rb_puts(&b, ": ");
            rb_esc(&b, str(r, "reason"));
            rb_puts(&b, "</li>");
        }
        rb_puts(&b, "</ul>");
    }
    rb_puts(&b, "</section><section id=\"charts\"><h2>Accuracy by context length</h2><div class=\"grid2\">");
    by_context_chart(&b, doc, "fig-agreement", "Top-1 agreement by context length", "higher is better", "top1_agreement", 100,
                     "top-1 agreement (%)", false, NAN, 100,
                     "Positions where the candidate's most likely token is the baseline's greedy token, the candidate scoring "
                     "the baseline's continuation (same prefix). Whiskers: 95% bootstrap intervals over prompts.");
    const json_t *b0 = json_array_get(obj(doc, "buckets"), 0);
    bool text = str(b0, "delta_ppl_source") && !strcmp(str(b0, "delta_ppl_source"), "text");
    by_context_chart(&b, doc, "fig-ppl", text ? "\xce\x94PPL of the reference text by context length" : "\xce\x94PPL of the continuation by context length",
                     "lower is better", "delta_ppl", 100, "\xce\x94PPL (%)", true, NAN, NAN,
                     text ? "Perplexity change of the candidate over windows of the reference text of each length."
                          : "Perplexity change of the candidate on the baseline's own greedy continuation.");
    by_context_chart(&b, doc, "fig-kl", "KL(baseline \xe2\x80\x96 candidate) per token by context length", "lower is better", "kl", 1,
                     "KL (nats per token)", true, 0, NAN,
                     "From the top-k lists: a lower bound; kl_tail_mass in the table is the baseline probability it cannot see.");
    rb_puts(&b, "</div></section><section id=\"table\"><h2>By context length</h2><div class=\"tablewrap\"><table><thead><tr>"
                "<th class=\"l\">context</th><th>prompts</th><th>prompt tokens</th><th>top-1 agreement</th><th>\xce\x94PPL</th>"
                "<th>KL</th><th>KL tail mass</th><th>\xce\x94logprob</th><th>in top-k</th><th>exact match</th><th>first divergence</th>"
                "<th>floor agreement</th><th>floor \xce\x94PPL</th><th class=\"l\">verdict</th></tr></thead><tbody>");
    size_t i;
    const json_t *bk;
    json_array_foreach(obj(doc, "buckets"), i, bk) table_row(&b, bk, false);
    rb_puts(&b, "</tbody></table></div>");
    if (json_array_size(obj(doc, "warnings"))) {
        rb_puts(&b, "<h3>Warnings</h3><ul>");
        json_array_foreach(obj(doc, "warnings"), i, bk) { rb_puts(&b, "<li>"); rb_esc(&b, json_string_value(bk)); rb_puts(&b, "</li>"); }
        rb_puts(&b, "</ul>");
    }
    rb_puts(&b, "<p class=\"faint\">");
    rb_esc(&b, str(doc, "kl_estimate") ? str(doc, "kl_estimate") : "");
    rb_puts(&b, "</p></section><section id=\"reproduce\"><h2>Reproduce</h2><pre>");
    rb_esc(&b, str(doc, "command") ? str(doc, "command") : "");
    rb_puts(&b, "</pre>");
    if (redact_command_note(str(doc, "command"))) {
        rb_puts(&b, "<p class=\"faint\">");
        rb_esc(&b, redact_command_note(str(doc, "command")));
        rb_puts(&b, "</p>");
    }
    rb_printf(&b, "<p class=\"faint\">%lld prompts per context, %lld tokens each, top-%lld logprobs, lengths in ",
              (long long)json_integer_value(obj(cfg, "prompts_per_context")), (long long)json_integer_value(obj(cfg, "gen_tokens")),
              (long long)json_integer_value(obj(cfg, "top_k")));
    rb_esc(&b, str(cfg, "length_unit") ? str(cfg, "length_unit") : "?");
    rb_printf(&b, "; %lld requests, %lld failed.</p></section>", (long long)json_integer_value(obj(doc, "requests")),
              (long long)json_integer_value(obj(doc, "failed_requests")));
    rb_puts(&b, "<footer>Generated by <b>dsperf report</b>");
    if (o->source_name) { rb_puts(&b, " from "); rb_esc(&b, o->source_name); }
    rb_puts(&b, ". Self-contained: no scripts, no network.</footer></main></body></html>\n");
    return rb_write(&b, f, err, errlen);
}

int report_drift_markdown(FILE *f, const json_t *doc, char *err, size_t errlen) {
    rbuf b;
    rb_init(&b);
    rb_puts(&b, "# dsperf drift\n\n");
    rb_printf(&b, "Baseline `%s`, candidate `%s`.\n\n", str(obj(doc, "baseline"), "url"), str(obj(doc, "candidate"), "url"));
    rbuf v;
    rb_init(&v);
    verdict_sentence(&v, doc);
    rb_puts(&b, "**");
    rb_puts(&b, v.p ? v.p : "");
    rb_puts(&b, "**\n\n");
    rb_free(&v);
    rb_puts(&b, table_head_md);
    size_t i;
    const json_t *bk;
    json_array_foreach(obj(doc, "buckets"), i, bk) table_row(&b, bk, true);
    const json_t *gate = obj(doc, "gate");
    if (gate) {
        rb_printf(&b, "\n**gate: %s**\n\n", json_is_true(obj(gate, "passed")) ? "passed" : "FAILED");
        json_array_foreach(obj(gate, "rules"), i, bk) {
            rb_printf(&b, "- %s `", json_is_true(obj(bk, "passed")) ? "ok" : "FAIL");
            rb_md_cell(&b, str(bk, "rule"));
            rb_puts(&b, "`: ");
            rb_md_cell(&b, str(bk, "reason"));
            rb_puts(&b, "\n");
        }
    }
    return rb_write(&b, f, err, errlen);
}

int report_drift_csv(FILE *f, const json_t *doc, char *err, size_t errlen) {
    static const char *const cols[] = { "context", "prompts", "positions", "prompt_tokens_mean", "top1_agreement", "topk_containment",
        "mean_logprob_delta", "mean_abs_logprob_delta", "kl", "kl_tail_mass", "ppl_baseline", "ppl_candidate",
        "continuation_delta_ppl", "text_ppl_baseline", "text_ppl_candidate", "text_delta_ppl", "delta_ppl",
        "exact_match_rate", "mean_first_divergence" };
    rbuf b;
    rb_init(&b);
    for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) rb_printf(&b, "%s,", cols[k]);
    rb_puts(&b, "top1_agreement_ci_low,top1_agreement_ci_high,delta_ppl_ci_low,delta_ppl_ci_high,floor_top1_agreement,floor_delta_ppl,verdict\n");
    size_t i;
    const json_t *bk;
    json_array_foreach(obj(doc, "buckets"), i, bk) {
        for (size_t k = 0; k < sizeof cols / sizeof *cols; k++) {
            double x = rep_num(bk, cols[k]);
            if (isfinite(x)) rb_printf(&b, "%.10g", x);
            rb_puts(&b, ",");
        }
        double v[6] = { ci_of(bk, "top1_agreement", 0), ci_of(bk, "top1_agreement", 1), ci_of(bk, "delta_ppl", 0), ci_of(bk, "delta_ppl", 1),
                        rep_num(obj(bk, "floor"), "top1_agreement"), rep_num(obj(bk, "floor"), "delta_ppl") };
        for (int k = 0; k < 6; k++) { if (isfinite(v[k])) rb_printf(&b, "%.10g", v[k]); rb_puts(&b, ","); }
        rb_csv_field(&b, str(bk, "verdict") ? str(bk, "verdict") : "");
        rb_puts(&b, "\n");
    }
    return rb_write(&b, f, err, errlen);
}
