/* tune_page — the report of a `dsperf tune` document (dsperf.tune/1): the recommendation and what
 * it buys, the Pareto chart of output tokens/s per GPU against the objective latency over every
 * configuration's loads (the front drawn through its points, SLO misses hollow), the table of
 * configurations, and how to reproduce. Markdown and CSV carry the same table and points. */
#include "report/report_internal.h"
#include "common/redact.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_PTS 4096

static const char *str(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static const json_t *obj(const json_t *o, const char *k) { return json_object_get(o, k); }

bool report_is_tune(const json_t *doc) {
    const char *s = str(doc, "schema");
    return s && !strncmp(s, "dsperf.tune/", 12);
}

static int cmp_x(const void *a, const void *b) {
    double x = ((const double *)a)[0], y = ((const double *)b)[0];
    return (x > y) - (x < y);
}

/* The objective's name for axes and tables: "p99 E2EL" from latency_field "p99_e2el_ms". */
static void objective_name(const json_t *doc, char *buf, size_t len) {
    const char *f = str(obj(json_array_get(obj(doc, "configs"), 0), "summary"), "latency_field");
    char stat[16] = "p99", metric[24] = "latency";
    if (f) sscanf(f, "%15[^_]_%23[^_]", stat, metric);
    for (char *c = metric; *c; c++) if (*c >= 'a' && *c <= 'z') *c = (char)(*c - 'a' + 'A');
    snprintf(buf, len, "%s %s", stat, metric);
}

static void pareto_chart(rbuf *b, const json_t *doc) {
    static double xs[MAX_PTS], ys[MAX_PTS], xm[MAX_PTS], ym[MAX_PTS], front[MAX_PTS][2];
    size_t n = 0, nm = 0, nf = 0;
    double xlo = NAN, xhi = NAN, ylo = NAN, yhi = NAN;
    size_t i, k;
    json_t *c, *p;
    json_array_foreach(obj(doc, "configs"), i, c) {
        json_array_foreach(obj(obj(c, "summary"), "points"), k, p) {
            double x = rep_num(p, "output_throughput_per_gpu"), y = rep_num(p, "latency_ms");
            if (!json_is_true(obj(p, "usable")) || !isfinite(x) || !isfinite(y) || n + nm >= MAX_PTS) continue;
            if (json_is_false(obj(p, "meets_slo"))) { xm[nm] = x; ym[nm++] = y; }
            else { xs[n] = x; ys[n++] = y; }
        }
    }
    json_array_foreach(obj(obj(doc, "pareto"), "front"), i, p) {
        if (nf >= MAX_PTS) break;
        front[nf][0] = rep_num(p, "output_throughput_per_gpu");
        front[nf][1] = rep_num(p, "latency_ms");
        if (isfinite(front[nf][0]) && isfinite(front[nf][1])) nf++;
    }
    if (n + nm < 2) return;
    chart_range_of(xs, n, &xlo, &xhi);
    chart_range_of(xm, nm, &xlo, &xhi);
    chart_range_of(ys, n, &ylo, &yhi);
    chart_range_of(ym, nm, &ylo, &yhi);
    char on[48], yl[80], base[64];
    objective_name(doc, on, sizeof on);
    chart_fig_open(b, "fig-pareto", "Pareto front: output tokens/s per GPU against latency", "lower-right is better",
                   "Every measured (configuration, load) point; hollow points miss the SLO; the line joins the "
                   "front, the points no other point beats on both axes; labels name the front's configurations.");
    svg_chart ch = { 0 };
    svg_axis_fit(&ch.x, 0, xhi * 1.05, false, true);
    ch.x.label = "output tokens/s per GPU";
    svg_axis_fit(&ch.y, ylo, yhi, true, false);
    snprintf(base, sizeof base, "%s (ms)", on);
    chart_axis_label_log(&ch.y, yl, sizeof yl, base);
    svg_begin(&ch, b, SVG_CHART_W, SVG_CHART_H, "Pareto front of the tuned configurations");
    svg_points(&ch, xs, ys, n, "m-tok", 3);
    svg_points(&ch, xm, ym, nm, "m-tok hollow", 3);
    if (nf) {
        qsort(front, nf, sizeof front[0], cmp_x);
        static double fx[MAX_PTS], fy[MAX_PTS];
        static char lab[MAX_PTS][48];
        static const char *labels[MAX_PTS];
        for (size_t j = 0; j < nf; j++) { fx[j] = front[j][0]; fy[j] = front[j][1]; }
        svg_line(&ch, fx, fy, nf, "m-good");
        svg_points(&ch, fx, fy, nf, "m-good", 4);
        /* label each front point with its configuration (looked up by throughput and latency) */
        for (size_t j = 0; j < nf; j++) {
            lab[j][0] = 0;
            json_array_foreach(obj(obj(doc, "pareto"), "front"), i, p)
                if (rep_num(p, "output_throughput_per_gpu") == fx[j] && rep_num(p, "latency_ms") == fy[j])
                    snprintf(lab[j], sizeof lab[j], "%s", str(p, "label") ? str(p, "label") : "");
            labels[j] = lab[j];
        }
        svg_point_labels(&ch, fx, fy, labels, nf);
    }
    const char *cls[] = { "m-tok", "m-tok dot", "m-good" }, *txt[] = { "meets the SLO", "misses the SLO (hollow)", "Pareto front" };
    svg_legend(&ch, cls, txt, 3);
    svg_end(&ch);
    chart_fig_close(b);
}

/* goodput per GPU under the SLO "12.4 @ c=32", or "-" */
static void fmt_at(const json_t *o, const char *key, char *buf, size_t len) {
    double v = rep_num(o, key), load = rep_num(o, "load");
    if (!isfinite(v)) { snprintf(buf, len, "-"); return; }
    char a[24], l[20];
    fmt_num(v, a, sizeof a);
    fmt_num(load, l, sizeof l);
    snprintf(buf, len, "%.23s @ %.19s", a, l);
}

static void config_row(rbuf *b, const json_t *c, bool md, long rec) {
    const json_t *s = obj(c, "summary");
    char good[64], knee[64], maxo[64], lat[32];
    fmt_at(obj(s, "goodput_under_slo"), "request_goodput_per_gpu", good, sizeof good);
    fmt_at(obj(s, "knee"), "output_throughput_per_gpu", knee, sizeof knee);
    fmt_at(obj(s, "max_output_throughput"), "output_throughput_per_gpu", maxo, sizeof maxo);
    double l = rep_num(obj(s, "goodput_under_slo"), "latency_ms");
    if (isfinite(l)) fmt_ms(l, lat, sizeof lat); else snprintf(lat, sizeof lat, "-");
    long idx = (long)json_integer_value(obj(c, "index"));
    const char *label = str(c, "label") ? str(c, "label") : "?";
    const char *status = str(c, "status") ? str(c, "status") : "?";
    const char *mark = idx == rec ? "recommended" : json_is_true(obj(c, "on_front")) ? "front" : "";
    if (md) {
        rb_printf(b, "| %ld | ", idx);
        rb_md_cell(b, label);
        rb_printf(b, " | %s | %s | %s | %s | %s | %s |\n", status, good, knee, maxo, lat, mark);
        return;
    }
    rb_printf(b, "<tr%s><td class=\"l\">%ld</td><td class=\"l\">", idx == rec ? " class=\"ok\"" : "", idx);
    rb_esc(b, label);
    rb_puts(b, "</td><td class=\"l\">");
    rb_esc(b, status);
    if (str(c, "error")) { rb_puts(b, ": "); rb_esc(b, str(c, "error")); }
    rb_printf(b, "</td><td>%s</td><td>%s</td><td>%s</td><td>%s</td><td class=\"l\">%s</td></tr>", good, knee, maxo, lat, mark);
}

static void page(rbuf *b, const json_t *doc, const report_opts *o) {
    const json_t *rec = obj(doc, "recommendation");
    long rec_idx = rec ? (long)json_integer_value(obj(rec, "config")) : -1;
    rbuf title;
    rb_init(&title);
    if (o->title) rb_puts(&title, o->title);
    else {
        rb_puts(&title, "dsperf tune \xe2\x80\x94 ");
        const char *k;
        json_t *v;
        int first = 1;
        json_object_foreach((json_t *)obj(doc, "grid"), k, v) { rb_printf(&title, "%s%s", first ? "" : " \xc3\x97 ", k); first = 0; }
    }
    report_page_head(b, title.p ? title.p : "");
    rb_free(&title);
    if (str(doc, "date")) { rb_esc(b, str(doc, "date")); rb_puts(b, " &middot; "); }
    rb_printf(b, "%zu configurations &middot; dsperf ", json_array_size(obj(doc, "configs")));
    rb_esc(b, str(doc, "version") ? str(doc, "version") : "?");
    rb_puts(b, "</div><nav><a href=\"#recommendation\">Recommendation</a><a href=\"#fig-pareto\">Pareto front</a>"
               "<a href=\"#configs\">Configurations</a><a href=\"#reproduce\">Reproduce</a></nav></header>");

    rb_puts(b, "<section id=\"recommendation\" class=\"verdict\"><p class=\"sentence\">");
    if (rec) rb_esc(b, str(rec, "buys") ? str(rec, "buys") : "");
    else rb_esc(b, str(doc, "recommendation_note") ? str(doc, "recommendation_note") : "no configuration met the SLO");
    rb_puts(b, "</p>");
    if (rec && obj(rec, "runner_up")) {
        const json_t *ru = obj(rec, "runner_up");
        char lead[32];
        snprintf(lead, sizeof lead, "%.2f", rep_num(ru, "lead"));
        rb_puts(b, "<p class=\"faint\">Runner-up: ");
        rb_esc(b, str(ru, "label") ? str(ru, "label") : "?");
        rb_printf(b, ", %sx behind%s", lead, json_is_true(obj(ru, "marginal")) ? " (marginal)" : "");
        if (str(ru, "noise")) { rb_puts(b, "; "); rb_esc(b, str(ru, "noise")); }
        rb_puts(b, "</p>");
    }
    if (str(doc, "target_note")) { rb_puts(b, "<p class=\"faint\">Note: "); rb_esc(b, str(doc, "target_note")); rb_puts(b, "</p>"); }
    if (json_is_true(obj(doc, "partial"))) rb_puts(b, "<p><span class=\"badge bad\">partial: interrupted</span></p>");
    rb_puts(b, "</section><section><div class=\"grid2\">");
    pareto_chart(b, doc);
    rb_puts(b, "</div></section>");

    char on[48];
    objective_name(doc, on, sizeof on);
    rb_puts(b, "<section id=\"configs\"><h2>Configurations</h2><div class=\"tablewrap\"><table><thead><tr>"
               "<th class=\"l\">#</th><th class=\"l\">settings</th><th class=\"l\">status</th>"
               "<th>goodput/GPU under the SLO (req/s @ load)</th><th>knee (tok/s/GPU @ load)</th>"
               "<th>max (tok/s/GPU @ load)</th><th>");
    rb_esc(b, on);
    rb_puts(b, " at the goodput load</th><th class=\"l\"></th></tr></thead><tbody>");
    size_t i;
    json_t *c;
    json_array_foreach(obj(doc, "configs"), i, c) config_row(b, c, false, rec_idx);
    rb_puts(b, "</tbody></table></div></section>");

    rb_puts(b, "<section id=\"reproduce\"><h2>Reproduce</h2><pre>");
    char *cmd = rep_command(doc, NULL, NULL);
    rb_esc(b, cmd ? cmd : "");
    rb_puts(b, "</pre>");
    if (redact_command_note(cmd)) { rb_puts(b, "<p class=\"faint\">"); rb_esc(b, redact_command_note(cmd)); rb_puts(b, "</p>"); }
    free(cmd);
    rb_puts(b, "<p class=\"faint\">Each configuration's sweep file (sweep_file in the tune document) opens in "
               "dsperf report, diagnose and compare.</p></section>");
    rb_puts(b, "<footer class=\"foot\">dsperf tune report");
    if (o->source_name) { rb_puts(b, " &middot; "); rb_esc(b, o->source_name); }
    rb_puts(b, "</footer></main></body></html>\n");
}

static int check(const json_t *doc, char *err, size_t errlen) {
    if (!json_array_size(obj(doc, "configs"))) {
        snprintf(err, errlen, "the tune document holds no configurations");
        return -1;
    }
    return 0;
}

int report_tune_html(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen) {
    if (check(doc, err, errlen)) return -1;
    rbuf b;
    rb_init(&b);
    page(&b, doc, o);
    return rb_write(&b, f, err, errlen);
}

int report_tune_markdown(FILE *f, const json_t *doc, char *err, size_t errlen) {
    if (check(doc, err, errlen)) return -1;
    rbuf b;
    rb_init(&b);
    const json_t *rec = obj(doc, "recommendation");
    char on[48];
    objective_name(doc, on, sizeof on);
    rb_puts(&b, "# dsperf tune\n\n");
    if (rec) { rb_puts(&b, "**Recommendation:** "); rb_puts(&b, str(rec, "buys") ? str(rec, "buys") : ""); rb_puts(&b, "\n\n"); }
    else rb_printf(&b, "**No recommendation:** %s\n\n", str(doc, "recommendation_note") ? str(doc, "recommendation_note") : "no configuration met the SLO");
    if (str(doc, "target_note")) rb_printf(&b, "Note: %s\n\n", str(doc, "target_note"));
    rb_printf(&b, "| # | settings | status | goodput/GPU under the SLO (req/s @ load) | knee (tok/s/GPU @ load) | "
                  "max (tok/s/GPU @ load) | %s at the goodput load | |\n|---:|---|---|---:|---:|---:|---:|---|\n", on);
    size_t i;
    json_t *c;
    json_array_foreach(obj(doc, "configs"), i, c) config_row(&b, c, true, rec ? (long)json_integer_value(obj(rec, "config")) : -1);
    rb_puts(&b, "\nPareto front (output tok/s per GPU, latency):\n\n");
    json_array_foreach(obj(obj(doc, "pareto"), "front"), i, c) {
        char x[32], y[32];
        fmt_num(rep_num(c, "output_throughput_per_gpu"), x, sizeof x);
        fmt_ms(rep_num(c, "latency_ms"), y, sizeof y);
        rb_printf(&b, "- %s at load %g: %s tok/s/GPU, %s%s\n", str(c, "label") ? str(c, "label") : "?", rep_num(c, "load"), x, y,
                  json_is_false(obj(c, "meets_slo")) ? " (misses the SLO)" : "");
    }
    return rb_write(&b, f, err, errlen);
}

int report_tune_csv(FILE *f, const json_t *doc, char *err, size_t errlen) {
    if (check(doc, err, errlen)) return -1;
    rbuf b;
    rb_init(&b);
    rb_puts(&b, "config,settings,status,load,output_throughput_per_gpu,request_goodput_per_gpu,latency_ms,meets_slo,usable,on_front\n");
    size_t i, k;
    json_t *c, *p;
    json_array_foreach(obj(doc, "configs"), i, c) {
        json_array_foreach(obj(obj(c, "summary"), "points"), k, p) {
            bool front = false;
            size_t j;
            json_t *fp;
            json_array_foreach(obj(obj(doc, "pareto"), "front"), j, fp)
                front |= json_integer_value(obj(fp, "config")) == json_integer_value(obj(c, "index")) && rep_num(fp, "load") == rep_num(p, "load");
            rb_printf(&b, "%lld,", (long long)json_integer_value(obj(c, "index")));
            rb_csv_field(&b, str(c, "label") ? str(c, "label") : "");
            rb_puts(&b, ",");
            rb_csv_field(&b, str(c, "status") ? str(c, "status") : "");
            rb_printf(&b, ",%.10g,%.10g,%.10g,%.10g,%s,%s,%s\n", rep_num(p, "load"), rep_num(p, "output_throughput_per_gpu"),
                      rep_num(p, "request_goodput_per_gpu"), rep_num(p, "latency_ms"),
                      json_is_true(obj(p, "meets_slo")) ? "true" : json_is_false(obj(p, "meets_slo")) ? "false" : "",
                      json_is_true(obj(p, "usable")) ? "true" : "false", front ? "true" : "false");
        }
    }
    return rb_write(&b, f, err, errlen);
}
