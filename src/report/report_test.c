/* Tests of the report: axis/tick helpers, escaping and number formatting as units; then the real
 * binary end to end — `dsperf sim` and `dsperf bench` against `dsperf serve` make the input
 * documents, `dsperf report` turns them into HTML/Markdown/CSV whose numbers are checked against
 * the documents, and headless Chromium renders the page (skipped when it is not installed). */
#include "harness.h"
#include "testutil.h"
#include "report/report_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- units ---- */

TEST(report_svg_linear_ticks) {
    svg_axis a = { 0 };
    svg_axis_linear(&a, 0, 97, 6);
    CHECK_NEAR(a.lo, 0, 1e-12);
    CHECK_NEAR(a.hi, 100, 1e-9);
    CHECK_EQ_INT(a.n_ticks, 6);
    for (int i = 0; i < a.n_ticks; i++) CHECK_NEAR(a.ticks[i], 20.0 * i, 1e-9);
    svg_axis_linear(&a, 0.013, 0.087, 6);
    CHECK_NEAR(a.lo, 0, 1e-12);
    CHECK_NEAR(a.hi, 0.1, 1e-12);
    CHECK_NEAR(a.ticks[1] - a.ticks[0], 0.02, 1e-12);
    /* a range that crosses zero has an exact 0 tick (no "-0" or 1e-17 label) */
    svg_axis_linear(&a, -5, 5, 6);
    int zero = 0;
    for (int i = 0; i < a.n_ticks; i++) zero += a.ticks[i] == 0.0;
    CHECK_EQ_INT(zero, 1);
    CHECK(a.n_ticks <= 6);
    /* never more ticks than asked, steps from the 1-2-2.5-5 ladder */
    svg_axis_linear(&a, 0, 2940, 6);
    CHECK(a.n_ticks <= 6 && a.hi >= 2940 && a.lo == 0);
    CHECK_NEAR(a.ticks[1] - a.ticks[0], 1000, 1e-9);
    /* a degenerate range is widened around the value */
    svg_axis_linear(&a, 3, 3, 5);
    CHECK(a.lo < 3 && a.hi > 3 && a.n_ticks >= 2);
    svg_axis_linear(&a, 0, 0, 5);
    CHECK(a.lo <= 0 && a.hi > 0);
}

TEST(report_svg_log_ticks) {
    svg_axis a = { 0 };
    svg_axis_log(&a, 3, 4500);
    CHECK_EQ_INT(a.kind, AXIS_LOG);
    CHECK(a.lo <= 3 && a.hi >= 4500);
    CHECK(a.n_ticks >= 3);
    for (int i = 0; i < a.n_ticks; i++) {
        double l = log10(a.ticks[i]);
        CHECK_NEAR(l, round(l), 1e-9);   /* > 3 decades: decades only */
        CHECK(a.ticks[i] >= a.lo && a.ticks[i] <= a.hi);
    }
    /* under three decades: 1-2-5 ticks */
    svg_axis_log(&a, 2.7, 60);
    int has2 = 0, has5 = 0;
    for (int i = 0; i < a.n_ticks; i++) { has2 |= fabs(a.ticks[i] - 20) < 1e-9; has5 |= fabs(a.ticks[i] - 5) < 1e-9; }
    CHECK(has2 && has5);
    /* frac: a decade is the same length everywhere */
    svg_axis_log(&a, 1, 1000);
    CHECK_NEAR(svg_axis_frac(&a, 100) - svg_axis_frac(&a, 10), svg_axis_frac(&a, 10) - svg_axis_frac(&a, 1), 1e-12);
    CHECK(svg_axis_frac(&a, 0) < 0);   /* non-positive values fall off a log axis */
    /* fit: log only for positive data spanning >= 10x */
    svg_axis_fit(&a, 5, 40, true, true);
    CHECK_EQ_INT(a.kind, AXIS_LINEAR);
    CHECK_NEAR(a.lo, 0, 1e-12);
    svg_axis_fit(&a, 5, 400, true, true);
    CHECK_EQ_INT(a.kind, AXIS_LOG);
}

TEST(report_svg_nines_labels) {
    svg_axis a = { 0 };
    svg_axis_nines(&a, 4);
    CHECK_EQ_INT(a.n_ticks, 5);
    const char *want[] = { "0%", "90%", "99%", "99.9%", "99.99%" };
    for (int i = 0; i < 5; i++) {
        char t[32];
        svg_tick_label(&a, a.ticks[i], t, sizeof t);
        CHECK_STR(t, want[i]);
    }
    CHECK_NEAR(svg_axis_frac(&a, 2), 0.5, 1e-12);
}

TEST(report_svg_chart_marks) {
    rbuf b;
    rb_init(&b);
    svg_chart c = { 0 };
    svg_axis_linear(&c.x, 0, 10, 6);
    svg_axis_linear(&c.y, 0, 100, 6);
    c.x.label = "x <unit>";
    svg_begin(&c, &b, 400, 200, "test & chart");
    CHECK_NEAR(svg_px(&c, 0), c.ml, 1e-9);
    CHECK_NEAR(svg_px(&c, 10), 400 - c.mr, 1e-9);
    CHECK_NEAR(svg_py(&c, 0), 200 - c.mb, 1e-9);
    CHECK_NEAR(svg_py(&c, 100), c.mt, 1e-9);
    double x[] = { 0, 5, NAN, 10 }, y[] = { 0, 50, 20, 100 };
    svg_line(&c, x, y, 4, "m-tok");
    svg_end(&c);
    CHECK(!b.oom);
    CHECK(strstr(b.p, "aria-label=\"test &amp; chart\"") != NULL);
    CHECK(strstr(b.p, "x &lt;unit&gt;") != NULL);
    /* the NaN breaks the line: two sub-paths */
    const char *d = strstr(b.p, "class=\"s m-tok\" d=\"");
    CHECK(d != NULL);
    if (d) {
        int moves = 0;
        for (const char *p = d + 19; *p && *p != '"'; p++) moves += *p == 'M';
        CHECK_EQ_INT(moves, 2);
    }
    rb_free(&b);
}

/* Point labels never overlap: five configurations whose points sit within a few pixels of each
 * other get five separate boxes (or are left out), each inside the plot. */
TEST(report_svg_point_labels_do_not_overlap) {
    rbuf b;
    rb_init(&b);
    svg_chart c = { 0 };
    svg_axis_linear(&c.x, 0, 100, 6);
    svg_axis_linear(&c.y, 0, 100, 6);
    svg_begin(&c, &b, 640, 340, "labels");
    double x[] = { 50, 50.5, 51, 50.2, 49.8 }, y[] = { 50, 50.5, 49.5, 50.2, 51 };
    const char *labels[] = { "seqs=64 kv=auto", "seqs=64 kv=fp8", "seqs=128 kv=auto", "seqs=128 kv=fp8", "seqs=256 kv=fp8" };
    svg_point_labels(&c, x, y, labels, 5);
    svg_end(&c);
    double bx0[5], by0[5], bx1[5], by1[5];
    int n = 0;
    for (const char *p = strstr(b.p, "<g class=\"plabel\">"); p && (p = strstr(p, "<text x=\"")) && n < 5; p++) {
        double tx, ty;
        if (sscanf(p, "<text x=\"%lf\" y=\"%lf\"", &tx, &ty) != 2) break;
        bool end = strncmp(strchr(p + 9, '"') + 1, " y=", 3) == 0 && strstr(p, "text-anchor=\"end\"") &&
                   strstr(p, "text-anchor=\"end\"") < strchr(p, '>');
        const char *t = strchr(p, '>') + 1;
        double w = 5.6 * (double)(strchr(t, '<') - t) + 2;
        bx0[n] = end ? tx - w : tx;
        bx1[n] = end ? tx : tx + w;
        by0[n] = ty - 10;
        by1[n] = ty + 2;
        CHECK(bx0[n] >= c.ml && bx1[n] <= 640 - c.mr + 2 && by0[n] >= c.mt - 2 && by1[n] <= 340 - c.mb);
        n++;
    }
    CHECK_MSG(n >= 4, "only %d of 5 labels placed", n);
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            CHECK_MSG(!(bx0[i] < bx1[j] && bx0[j] < bx1[i] && by0[i] < by1[j] && by0[j] < by1[i]), "labels %d and %d overlap", i, j);
    rb_free(&b);
}

TEST(report_escape_and_format) {
    rbuf b;
    rb_init(&b);
    rb_esc(&b, "<a href='x'>&\"\x01ok");
    CHECK_STR(b.p, "&lt;a href=&#39;x&#39;&gt;&amp;&quot;ok");
    rb_free(&b);
    rb_md_cell(&b, "a|b\n<c>");
    CHECK_STR(b.p, "a\\|b &lt;c&gt;");
    rb_free(&b);
    rb_csv_field(&b, "say \"hi\", all");
    CHECK_STR(b.p, "\"say \"\"hi\"\", all\"");
    rb_free(&b);
    char t[64];
    fmt_num(3910, t, sizeof t); CHECK_STR(t, "3,910");
    fmt_num(-1234567, t, sizeof t); CHECK_STR(t, "-1,234,567");
    fmt_num(12.345, t, sizeof t); CHECK_STR(t, "12.3");
    fmt_num(0.0123, t, sizeof t); CHECK_STR(t, "0.0123");
    fmt_num(NAN, t, sizeof t); CHECK_STR(t, "n/a");
    fmt_ms(1517, t, sizeof t); CHECK_STR(t, "1.52 s");
    fmt_ms(20, t, sizeof t); CHECK_STR(t, "20 ms");
    fmt_ms(261.5, t, sizeof t); CHECK_STR(t, "262 ms");
    fmt_ms(0.42, t, sizeof t); CHECK_STR(t, "0.42 ms");
    fmt_tick(1500, t, sizeof t); CHECK_STR(t, "1500");
    fmt_tick(25000, t, sizeof t); CHECK_STR(t, "25k");
    fmt_tick(2e6, t, sizeof t); CHECK_STR(t, "2M");
    fmt_tick(0.25, t, sizeof t); CHECK_STR(t, "0.25");
    fmt_pct(100, t, sizeof t); CHECK_STR(t, "100%");
    fmt_pct(3.42, t, sizeof t); CHECK_STR(t, "3.4%");
    fmt_pct(0.25, t, sizeof t); CHECK_STR(t, "0.25%");
    fmt_pct(0, t, sizeof t); CHECK_STR(t, "0%");
    /* a "%" column: the precision a percentage carries, never "0.0195" */
    fmt_pct_cell(0.0195, t, sizeof t); CHECK_STR(t, "<0.1");
    fmt_pct_cell(0.26, t, sizeof t); CHECK_STR(t, "0.3");
    fmt_pct_cell(3.42, t, sizeof t); CHECK_STR(t, "3.4");
    fmt_pct_cell(45.6, t, sizeof t); CHECK_STR(t, "46");
    fmt_pct_cell(0, t, sizeof t); CHECK_STR(t, "0");
    fmt_pct_cell(NAN, t, sizeof t); CHECK_STR(t, "n/a");
}

/* Whether segment (x0,y0)-(x1,y1) passes through box b: sampled every 0.25 px (independent of
 * svg.c's clipping test). */
static bool seg_in_box(double x0, double y0, double x1, double y1, const double b[4]) {
    double len = hypot(x1 - x0, y1 - y0);
    int steps = (int)(len / 0.25) + 1;
    for (int i = 0; i <= steps; i++) {
        double t = (double)i / steps, x = x0 + t * (x1 - x0), y = y0 + t * (y1 - y0);
        if (x > b[0] && x < b[2] && y > b[1] && y < b[3]) return true;
    }
    return false;
}

/* No label over a curve: a rising line crosses where a knee label and point labels would go
 * first (right of the rule at the top, right of each point); every label drawn is off the line. */
TEST(report_svg_labels_stay_off_curves) {
    rbuf b;
    rb_init(&b);
    svg_chart c = { 0 };
    svg_axis_linear(&c.x, 0, 100, 6);
    svg_axis_linear(&c.y, 0, 100, 6);
    svg_begin(&c, &b, SVG_CHART_W, SVG_CHART_H, "labels off curves");
    /* the line runs just right of x=50 up to the top, and through the points' label spots */
    double lx[] = { 0, 20, 52, 56, 100 }, ly[] = { 0, 24, 96, 100, 100 };
    svg_line(&c, lx, ly, 5, "m-tok");
    double px[] = { 20, 40, 60 }, py[] = { 20, 46, 100 };
    svg_points(&c, px, py, 3, "m-tok", 3);
    const char *labels[] = { "c=16", "c=32", "c=64" };
    svg_point_labels(&c, px, py, labels, 3);
    svg_vrule(&c, 50, "knee", "knee c=48 (fit 47.5)", 0);
    svg_hrule(&c, 25, "slo", "SLO 25 ms");
    svg_end(&c);
    /* the line's segments as drawn */
    double sx[8], sy[8];
    int ns = 0;
    const char *d = strstr(b.p, "<path class=\"s m-tok\" d=\"");
    CHECK(d != NULL);
    for (const char *p = d ? strchr(d + 20, 'M') : NULL; p && (*p == 'M' || *p == 'L') && ns < 8;) {
        if (sscanf(p + 1, "%lf %lf", &sx[ns], &sy[ns]) != 2) break;
        ns++;
        p++;
        while (*p && *p != 'L' && *p != '"') p++;
    }
    CHECK_EQ_INT(ns, 5);
    int texts = 0;
    for (const char *p = strstr(b.p, "<g class=\"plabel\">"); p && (p = strstr(p, "<text x=\"")); p++) {
        double tx, ty;
        if (sscanf(p, "<text x=\"%lf\" y=\"%lf\"", &tx, &ty) != 2) break;
        const char *gt = strchr(p, '>');
        bool end = strstr(p, "text-anchor=\"end\"") && strstr(p, "text-anchor=\"end\"") < gt;
        const char *t = gt + 1;
        double w = (strstr(t, "knee") == t || strstr(t, "SLO") == t ? 6.2 : 5.6) * (double)(strchr(t, '<') - t);
        double box[4] = { end ? tx - w : tx, ty - 9, end ? tx : tx + w, ty + 1 };
        for (int k = 1; k < ns; k++)
            CHECK_MSG(!seg_in_box(sx[k - 1], sy[k - 1], sx[k], sy[k], box), "label '%.*s' at %.0f,%.0f covers the line",
                      (int)(strchr(t, '<') - t), t, tx, ty);
        texts++;
    }
    CHECK_MSG(texts >= 4, "%d labels drawn", texts);   /* the rule's and the SLO's always, and the points' */
    CHECK(strstr(b.p, ">knee c=48 (fit 47.5)<") != NULL);
    rb_free(&b);
}

/* ---- end to end ---- */

static char *slurp(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *s = malloc((size_t)n + 1);
    if (s && fread(s, 1, (size_t)n, f) != (size_t)n) { free(s); s = NULL; }
    if (s) s[n] = 0;
    fclose(f);
    return s;
}

static size_t count(const char *hay, const char *needle) {
    size_t n = 0;
    for (const char *p = hay; p && (p = strstr(p, needle)); p += strlen(needle)) n++;
    return n;
}

static const char *tmp(const char *name) {
    static char buf[8][512];
    static int k;
    k = (k + 1) % 8;
    snprintf(buf[k], sizeof buf[k], "%s/%s", harness_tmpdir(), name);
    return buf[k];
}

/* `dsperf sim` at concurrency c: results (and per-request JSONL when jsonl is non-NULL). */
static int sim_run(int c, int requests, const char *out, const char *jsonl) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sim --quiet --concurrency %d --requests %d --max-num-seqs 16 --slo-ttft 300ms "
                              "--slo-tpot 30ms --out %s%s%s", c, requests, out, jsonl ? " --save-requests " : "",
             jsonl ? jsonl : "");
    return test_run(cmd, NULL, NULL);
}

/* CSV: the value of column `col` in data row `row` (1-based), NaN when absent or empty. */
static double csv_value(const char *csv, int row, const char *col) {
    const char *line = csv;
    int ci = -1, i = 0;
    for (const char *p = csv, *s = csv;; p++) {
        if (*p == ',' || *p == '\n' || !*p) {
            if ((size_t)(p - s) == strlen(col) && !strncmp(s, col, (size_t)(p - s))) ci = i;
            i++;
            s = p + 1;
            if (*p != ',') { line = *p ? p + 1 : p; break; }
        }
    }
    if (ci < 0) return NAN;
    for (int r = 1; r < row && *line; r++) line = strchr(line, '\n') ? strchr(line, '\n') + 1 : line + strlen(line);
    for (int k = 0; k < ci && line; k++) {
        line = strchr(line, ',');
        if (line) line++;
    }
    if (!line || *line == ',' || *line == '\n' || !*line) return NAN;
    return strtod(line, NULL);
}

TEST(report_single_run_md_csv) {
    const char *res = tmp("single.json"), *jl = tmp("single.jsonl");
    CHECK_EQ_INT(sim_run(8, 120, res, jl), 0);
    json_t *r = test_load_json(res);
    CHECK(r != NULL);
    if (!r) return;
    char cmd[2048];
    const char *html = tmp("single.html"), *md = tmp("single.md"), *csv = tmp("single.csv");
    snprintf(cmd, sizeof cmd, "report %s -o %s --md %s --csv %s --save-requests %s", res, html, md, csv, jl);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *c = slurp(csv), *m = slurp(md), *h = slurp(html);
    CHECK(c && m && h);
    if (c && m && h) {
        CHECK_EQ_INT(count(c, "\n"), 2);   /* header + one row */
        CHECK_NEAR(csv_value(c, 1, "load"), 8, 0);
        CHECK_NEAR(csv_value(c, 1, "completed"), 120, 0);
        CHECK_NEAR(csv_value(c, 1, "output_throughput"), test_num(r, "output_throughput"), 1e-6 * test_num(r, "output_throughput"));
        CHECK_NEAR(csv_value(c, 1, "p99_ttft_ms"), test_num(r, "p99_ttft_ms"), 1e-6);
        CHECK_NEAR(csv_value(c, 1, "p99_tpot_ms"), test_num(r, "p99_tpot_ms"), 1e-6);
        /* goodput tok/s = good req/s x mean output tokens */
        CHECK_NEAR(csv_value(c, 1, "goodput_tok_s"),
                   test_num(r, "request_goodput") * test_num(r, "total_output_tokens") / test_num(r, "completed"), 1e-6);
        CHECK(!isnan(csv_value(c, 1, "kv_peak_pct")));
        /* Markdown: the verdict, the row, the command */
        char want[64], n[32];
        fmt_num(test_num(r, "output_throughput"), n, sizeof n);
        snprintf(want, sizeof want, "%s out tok/s", n);
        CHECK(strstr(m, "**Verdict.** 120 requests at c=8") != NULL);
        CHECK(strstr(m, want) != NULL);
        CHECK(strstr(m, "| c=8 |") != NULL);
        CHECK(strstr(m, "    dsperf sim --quiet --concurrency 8") != NULL);
        /* HTML: exact nines from 120 samples, the TTFT scatter, the engine's KV line */
        CHECK(strstr(h, "Exact, from 120 per-request samples") != NULL);
        CHECK(strstr(h, "TTFT of each request") != NULL);
        CHECK(strstr(h, "class=\"s m-kv\"") != NULL);
        /* the Gantt: 120 requests (under its cap of 200), TTFT and decode segments, no failures */
        CHECK(strstr(h, "id=\"fig-gantt\"") != NULL);
        CHECK(strstr(h, "120 requests in send order") != NULL);
        const char *gt = strstr(h, "<path class=\"gantt m-ttft\"");
        CHECK(gt != NULL);
        const char *d = gt ? strstr(gt, " d=\"") : NULL;
        int segs = 0;
        for (const char *p = d ? d + 4 : ""; *p && *p != '"'; p++) segs += *p == 'M';
        CHECK_EQ_INT(segs, 120);
        CHECK_EQ_INT(count(h, "<svg"), count(h, "</svg>"));
        CHECK(count(h, "<svg") >= 8);
    }
    free(c); free(m); free(h);
    json_decref(r);
}

/* Everything a document carries is text to the page, never markup. */
TEST(report_html_injection_safe) {
    const char *res = tmp("inj.json");
    CHECK_EQ_INT(sim_run(2, 20, res, NULL), 0);
    json_t *r = test_load_json(res);
    if (!r) { CHECK(r != NULL); return; }
    const char *evil = "<script>alert(1)</script><img src=x onerror=alert(2)>\"'&";
    json_object_set_new(r, "command_line", json_string(evil));
    json_object_set_new(json_object_get(r, "config"), "model", json_string(evil));
    json_t *f = json_pack("[{s:s,s:s,s:f,s:[{s:s,s:f,s:s,s:s}],s:[{s:s,s:s,s:s}]}]", "class", evil, "title", evil,
                          "confidence", 0.5, "evidence", "text", evil, "value", 1.0, "unit", evil, "source", evil,
                          "knobs", "knob", evil, "direction", evil, "effect", evil);
    json_object_set_new(r, "findings", f);
    json_dump_file(r, res, 0);
    const char *html = tmp("inj.html"), *md = tmp("inj.md");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "report %s -o %s --md %s --title <b>t</b>", res, html, md);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html), *m = slurp(md);
    CHECK(h && m);
    if (h && m) {
        CHECK(strcasestr(h, "<script") == NULL);
        CHECK(strcasestr(h, "<img") == NULL);
        CHECK(strstr(h, "<b>t</b>") == NULL);
        CHECK(strstr(h, "&lt;script&gt;alert(1)&lt;/script&gt;") != NULL);
        CHECK(count(h, "&lt;script&gt;") >= 6);   /* title, command, finding fields */
        /* the finding is listed, with its confidence, in both formats */
        CHECK(strstr(h, "confidence 50%") != NULL);
        CHECK(strstr(m, "1. **&lt;script&gt;") != NULL);
        CHECK(strstr(m, ", confidence 50%") != NULL);
        /* Markdown: raw text only inside the indented code block (renderers show code verbatim) */
        for (const char *p = strcasestr(m, "<script"); p; p = strcasestr(p + 1, "<script")) {
            const char *bol = p;
            while (bol > m && bol[-1] != '\n') bol--;
            CHECK_MSG(!strncmp(bol, "    ", 4), "markup outside a code block: %.40s", bol);
        }
    }
    free(h); free(m);
    json_decref(r);
}

/* A sweep document assembled from real sim runs (the sweep command's own output has the same
 * layout): knee row, saturation chart with the knee rule, one CSV row per level. */
static const char *make_sweep(void) {
    static const int loads[] = { 1, 4, 16, 64 };
    json_t *levels = json_array();
    for (int i = 0; i < 4; i++) {
        char name[32];
        snprintf(name, sizeof name, "lv%d.json", loads[i]);
        const char *p = tmp(name);
        if (sim_run(loads[i], 6 * loads[i] + 16, p, NULL) != 0) { json_decref(levels); return NULL; }
        json_t *r = test_load_json(p);
        if (!r) { json_decref(levels); return NULL; }
        json_array_append_new(levels, json_pack("{s:i,s:i,s:b,s:b,s:o}", "load", loads[i], "repeat", 0, "saturated",
                                                loads[i] == 64, "early_stopped", 0, "results", r));
    }
    json_t *knee_r = json_object_get(json_array_get(levels, 2), "results");
    json_t *doc = json_pack("{s:s,s:s,s:{},s:s,s:o,s:{s:i,s:f,s:s},s:{s:i}}", "schema", "dsperf.sweep/1",
                            "command_line", "dsperf sweep --concurrency 1,4,16,64", "config", "axis", "concurrency",
                            "levels", levels, "knee", "load", 16, "output_throughput",
                            json_number_value(json_object_get(knee_r, "output_throughput")), "method",
                            "two-segment fit", "max_goodput", "load", 16);
    /* the analysis parts of a sweep document (src/sweep/sweep_doc.c layout): the fit, the SLO
     * boundary, a confidence interval; the numbers only have to be drawable here */
    json_object_set_new(json_object_get(doc, "knee"), "knee_load_fit", json_real(14.2));
    json_object_set_new(json_object_get(doc, "knee"), "fit",
                        json_pack("{s:f,s:f,s:f,s:f,s:f}", "break_load", 16.0, "rise_slope", 100.0, "rise_intercept",
                                  300.0, "tail_slope", 1.0, "tail_intercept", 1900.0));
    json_object_set_new(json_object_get(doc, "max_goodput"), "slo_boundary_load", json_real(40.5));
    json_object_set_new(json_object_get(doc, "max_goodput"), "request_goodput", json_real(12.5));
    json_object_set_new(json_object_get(doc, "max_goodput"), "slo_boundary_limited_by", json_string("ttft"));
    json_object_set_new(doc, "ci", json_pack("{s:[{s:f,s:{s:{s:f,s:f,s:i}}}]}", "levels", "load", 16.0, "metrics",
                                             "output_throughput", "lo", 1000.0, "hi", 1100.0, "n", 3));
    json_object_set_new(json_array_get(levels, 0), "kind", json_string("synchronous"));
    const char *path = tmp("sweep.json");
    int rc = json_dump_file(doc, path, 0);
    json_decref(doc);
    return rc == 0 ? path : NULL;
}

TEST(report_sweep_html_csv) {
    const char *sw = make_sweep();
    CHECK(sw != NULL);
    if (!sw) return;
    const char *html = tmp("sweep.html"), *csv = tmp("sweep.csv"), *md = tmp("sweep.md");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "report %s -o %s --csv %s --md %s", sw, html, csv, md);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html), *c = slurp(csv), *m = slurp(md);
    json_t *doc = test_load_json(sw);
    CHECK(h && c && m && doc);
    if (h && c && m && doc) {
        CHECK(strstr(h, "id=\"fig-saturation\"") != NULL);
        CHECK(strstr(h, "id=\"fig-breakdown\"") != NULL);
        /* 4 levels x (client queue, TTFT, decode): sim's closed-loop users turn around before they send
         * (the transit, src/engine/sim_run.c), which is client queue time as bench measures it */
        CHECK_EQ_INT(count(h, "<rect class=\"bar "), 12);
        CHECK_EQ_INT(count(h, "<rect class=\"bar m-queued"), 4);
        CHECK(strstr(h, "id=\"fig-lvt-ttft\"") != NULL);
        CHECK(strstr(h, "knee c=16 (fit 14.2)") != NULL);
        CHECK_EQ_INT(count(h, "<path class=\"s fit\" d=\"M"), 3);   /* rise and tail segments, legend swatch */
        CHECK(strstr(h, "SLO boundary c=40.5 by ttft") != NULL);
        CHECK(strstr(h, "95% CI of the mean over 3 repeats: 1000\xe2\x80\x93" "1100 tok/s") != NULL);
        CHECK(strstr(h, "<td>sync (c=1)") != NULL);
        CHECK_EQ_INT(count(h, " class=\"knee\"><td>"), 1);
        CHECK(strstr(h, "<tr id=\"level-2\" class=\"knee\">") != NULL);
        CHECK(strstr(h, "over-saturated") != NULL);
        CHECK(strstr(h, "knee at c=16") != NULL);
        /* the reproduce block names the program and the sweep (not its first level's "bench"); a
         * goodput tile reads in requests/s like the terminal and the JSON */
        CHECK(strstr(h, "<pre>dsperf sweep --concurrency 1,4,16,64</pre>") != NULL);
        CHECK(strstr(h, "<dt>producer</dt><dd>sweep</dd>") != NULL);
        CHECK(strstr(h, "<dt>gpus</dt>") == NULL);   /* sim's "gpus": [] says nothing */
        CHECK(strstr(h, "<div class=\"k\">max goodput</div><div class=\"v\">12.5 req/s</div>") != NULL);
        CHECK_EQ_INT(count(c, "\n"), 5);
        for (int i = 0; i < 4; i++) {
            const json_t *r = json_object_get(json_array_get(json_object_get(doc, "levels"), (size_t)i), "results");
            CHECK_NEAR(csv_value(c, i + 1, "output_throughput"), test_num(r, "output_throughput"), 1e-6 * test_num(r, "output_throughput"));
            CHECK_NEAR(csv_value(c, i + 1, "knee"), i == 2, 0);
            CHECK_NEAR(csv_value(c, i + 1, "saturated"), i == 3, 0);
        static const double loads[] = { 1, 4, 16, 64 };
        CHECK_NEAR(csv_value(c, i + 1, "load"), loads[i], 0);
        }
        CHECK(strstr(m, "**\xe2\x96\xb6 c=16 (knee)**") != NULL);
        /* throughput rises with load in the simulated engine: the verdict names the knee level's tok/s */
        char n[32], want[96];
        fmt_num(json_number_value(json_object_get(json_object_get(doc, "knee"), "output_throughput")), n, sizeof n);
        snprintf(want, sizeof want, "knee at c=16 (%s out tok/s)", n);
        CHECK(strstr(m, want) != NULL);
    }
    free(h); free(c); free(m);
    json_decref(doc);
}

/* bench against serve with injected failures: error classes, error-adjusted curves, first message. */
TEST(report_bench_errors) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 5ms --seed 3 --fail-rate 0.1") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    const char *res = tmp("bench.json"), *jl = tmp("bench.jsonl"), *html = tmp("bench.html"), *md = tmp("bench.md");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency 4 --requests 120 --dataset random:in=8,out=8 "
                              "--out %s --save-requests %s", s.url, res, jl);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK(rc == 0 || rc == 1);
    json_t *r = test_load_json(res);
    if (!r) { CHECK(r != NULL); return; }
    double failed = test_num(r, "failed");
    CHECK(failed > 0);
    snprintf(cmd, sizeof cmd, "report %s -o %s --md %s --save-requests %s", res, html, md, jl);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html), *m = slurp(md);
    CHECK(h && m);
    if (h && m) {
        CHECK(strstr(h, "<td>HTTP 500</td>") != NULL);
        /* the run's server was on a loopback port that is gone now: the reproduce block says so */
        CHECK(strstr(h, "<pre>dsperf bench --url ") != NULL);
        CHECK(strstr(h, "a loopback address of the machine that ran this") != NULL);
        CHECK(strstr(m, "a loopback address of the machine that ran this") != NULL);
        CHECK(strstr(h, "error-adjusted (failures count as +inf)") != NULL);
        CHECK(strstr(h, "class=\"rule fail\"") != NULL);
        CHECK(strstr(h, "client CPU") != NULL);            /* validity badge from "client" */
        char want[64];
        snprintf(want, sizeof want, "HTTP 500 %.0f;", failed);
        CHECK(strstr(m, want) != NULL);
    }
    free(h); free(m);
    json_decref(r);
}

/* Nothing succeeded: the report still says what happened, with no empty charts. */
TEST(report_all_failed) {
    test_server s;
    if (test_serve_start(&s, "--fail-rate 1") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    const char *res = tmp("fail.json"), *html = tmp("fail.html"), *md = tmp("fail.md");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency 2 --requests 10 --dataset random:in=8,out=8 --out %s",
             s.url, res);
    test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    snprintf(cmd, sizeof cmd, "report %s -o %s --md %s", res, html, md);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html), *m = slurp(md);
    CHECK(h && m);
    if (h && m) {
        CHECK(strstr(m, "**Verdict.** 10 requests at c=2: 0 out tok/s") != NULL);
        CHECK(strstr(m, "100% errors") != NULL);
        CHECK(strstr(m, "- c=2: HTTP 500 10;") != NULL);
        CHECK(strstr(h, "No request completed successfully") != NULL);
        CHECK(strstr(h, "id=\"fig-nines-") == NULL);
        CHECK(strstr(h, "<td>HTTP 500</td>") != NULL);
        CHECK(strstr(h, "<td>http</td>") == NULL);   /* the class total is not listed beside its statuses */
    }
    free(h); free(m);
}

/* The real `dsperf sweep` against the simulated engine (8 sequences at most, so throughput
 * flattens from c=8): whatever the sweep decided is what the page shows. */
TEST(report_real_sweep) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --speedup 20 --max-num-seqs 8") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    const char *sw = tmp("real_sweep.json"), *html = tmp("real_sweep.html"), *csv = tmp("real_sweep.csv");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sweep --url %s --concurrency 1..64x2 --requests 64 --dataset random:in=256,out=32 "
                              "--slo ttft=50ms --out %s --quiet --no-progress", s.url, sw);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK(rc == 0 || rc == 1);
    json_t *doc = test_load_json(sw);
    if (!doc) { CHECK(doc != NULL); return; }
    snprintf(cmd, sizeof cmd, "report %s -o %s --csv %s", sw, html, csv);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html), *c = slurp(csv);
    CHECK(h && c);
    size_t nl = json_array_size(json_object_get(doc, "levels"));
    CHECK(nl >= 5);
    if (h && c) {
        CHECK_EQ_INT(count(c, "\n"), nl + 1);
        CHECK(strstr(h, "id=\"fig-saturation\"") != NULL);
        CHECK_EQ_INT(count(h, "<tr id=\"level-"), nl);
        const json_t *knee = json_object_get(doc, "knee");
        if (json_is_object(knee)) {
            char want[64];
            snprintf(want, sizeof want, "knee at c=%.0f (", json_number_value(json_object_get(knee, "load")));
            CHECK(strstr(h, want) != NULL);
            CHECK_EQ_INT(count(h, " class=\"knee\"><td>"), 1);
            CHECK(strstr(h, "<path class=\"s fit\"") != NULL);
        } else {
            CHECK(strstr(h, "no knee found") != NULL);
        }
        for (size_t i = 0; i < nl; i++) {
            const json_t *r = json_object_get(json_array_get(json_object_get(doc, "levels"), i), "results");
            CHECK_NEAR(csv_value(c, (int)i + 1, "output_throughput"), test_num(r, "output_throughput"),
                       1e-6 * test_num(r, "output_throughput"));
        }
    }
    free(h); free(c);
    json_decref(doc);
}

/* What a newcomer reads first says one thing one way: max goodput in the same unit in the verdict,
 * the tile and the table; no all-"n/a" column when no GPU was sampled; evidence sources folded
 * into <details>, not in the sentences; every grid chart one size; the stability axis names what
 * it plots and its caption describes only what is drawn. */
TEST(report_first_hour_presentation) {
    const char *sw = tmp("fh_sweep.json"), *html = tmp("fh_sweep.html"), *md = tmp("fh_sweep.md");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "sim --quiet --concurrency 2..64x2 --requests 96 --max-num-seqs 16 --slo-ttft 300ms "
                              "--slo-tpot 30ms --out %s", sw);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "report %s -o %s --md %s", sw, html, md);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "diagnose %s --json", sw);
    char *dout = NULL;
    int drc = test_run(cmd, &dout, NULL);
    json_t *doc = test_load_json(sw), *diag = drc == 0 && dout ? json_loads(dout, 0, NULL) : NULL;
    free(dout);
    CHECK(diag != NULL);
    char *h = slurp(html), *m = slurp(md);
    CHECK(doc && h && m);
    if (!doc || !h || !m) { free(h); free(m); json_decref(doc); json_decref(diag); return; }
    /* one unit for max goodput: the tile's req/s number is the verdict's */
    const json_t *mg = json_object_get(doc, "max_goodput");
    CHECK(json_is_object(mg));
    char g[32], want[96];
    fmt_num(json_number_value(json_object_get(mg, "request_goodput")), g, sizeof g);
    snprintf(want, sizeof want, "<div class=\"k\">max goodput</div><div class=\"v\">%s req/s</div>", g);
    CHECK_MSG(strstr(h, want) != NULL, "tile: %s", want);
    snprintf(want, sizeof want, "max goodput %s req/s (", g);
    CHECK_MSG(strstr(h, want) && strstr(m, want), "verdict: %s", want);
    CHECK(strstr(h, "<th>goodput req/s</th>") && strstr(m, "| goodput req/s |"));
    CHECK(!strstr(h, "goodput tok/s</th>"));
    /* the simulator samples no GPU: no GPU columns, no "n/a" cell in the table; KV from the engine */
    const char *tab = strstr(h, "<section id=\"levels\">"), *tend = tab ? strstr(tab, "</section>") : NULL;
    CHECK(tab && tend);
    if (tab && tend) {
        char *t = strndup(tab, (size_t)(tend - tab));
        CHECK(!strstr(t, "GPU util %") && !strstr(t, "DRAM BW %"));
        CHECK(strstr(t, "<th>KV peak %</th>") != NULL);
        CHECK_EQ_INT(count(t, ">n/a<"), 0);
        CHECK(strstr(t, "Not sampled, so not shown: GPU utilization and DRAM bandwidth") != NULL);
        free(t);
    }
    CHECK(!strstr(m, "GPU util %"));
    /* evidence sources: each in a <details>, none in the findings' sentences */
    if (diag) {
        size_t i, k, n_src = 0;
        json_t *f, *e;
        json_array_foreach(json_object_get(diag, "findings"), i, f) json_array_foreach(json_object_get(f, "evidence"), k, e) {
            const char *src = json_string_value(json_object_get(e, "source"));
            if (!src || strchr(src, '&') || strchr(src, '<') || strchr(src, '>') || strchr(src, '\'')) continue;
            n_src++;
            char tag[600];
            snprintf(tag, sizeof tag, "<code>%s</code>", src);
            /* every occurrence sits inside a details element */
            for (const char *p = strstr(h, tag); p; p = strstr(p + 1, tag)) {
                const char *open = NULL;
                for (const char *q = strstr(h, "<details"); q && q < p; q = strstr(q + 1, "<details")) open = q;
                const char *close = open ? strstr(open, "</details>") : NULL;
                CHECK_MSG(open && close && close > p, "source outside a details element: %s", src);
            }
            CHECK_MSG(strstr(h, tag) != NULL, "source not shown at all: %s", src);
        }
        CHECK(n_src > 0);
        CHECK(strstr(h, "<summary class=\"note\">where the numbers come from</summary>") != NULL);
        /* Markdown the same: folded, never "(`source`)" after a sentence */
        CHECK(strstr(m, "<details><summary>where the numbers come from</summary>") != NULL);
        CHECK(!strstr(m, " (`"));
    }
    /* one size: every chart in a grid cell has the same viewBox and is never drawn larger */
    size_t charts = 0;
    for (const char *p = strstr(h, "<svg class=\"chart\" viewBox=\""); p; p = strstr(p + 1, "<svg class=\"chart\" viewBox=\"")) {
        double w, hh, mw;
        CHECK(sscanf(p, "<svg class=\"chart\" viewBox=\"0 0 %lf %lf\" style=\"max-width:%lfpx\"", &w, &hh, &mw) == 3);
        CHECK_MSG((w == SVG_CHART_W && hh == SVG_CHART_H) || w == SVG_WIDE_W, "a chart of %.0f x %.0f", w, hh);
        CHECK(mw == w);
        charts++;
    }
    CHECK(charts >= 6);
    /* the stability figure: in a grid cell; its axis is the offered concurrency; the caption
     * describes the fitted line only when it is drawn */
    const json_t *st = json_object_get(doc, "stability");
    const char *fig = strstr(h, "id=\"fig-stability\"");
    if (json_is_object(st) && fig) {
        const char *before = fig;
        while (before > h && strncmp(before, "<div class=\"grid2\">", 19)) before--;
        CHECK_MSG(fig - before < 40, "the stability figure is not in a grid cell");
        CHECK(strstr(fig, "batch: offered concurrency (users") != NULL);
        CHECK(!strstr(h, "batch (requests in service)"));
        bool fitted = json_is_true(json_object_get(st, "fitted"));
        const char *fend = strstr(fig, "</figure>");
        char *f = fend ? strndup(fig, (size_t)(fend - fig)) : NULL;
        CHECK(f != NULL);
        if (f) {
            CHECK_EQ_INT(strstr(f, "Line: the fitted") != NULL, fitted);
            CHECK_EQ_INT(strstr(f, "No line: the sweep could not fit") != NULL, !fitted);
            CHECK_EQ_INT(strstr(f, "<path class=\"s m-tok\"") != NULL, fitted);
        }
        free(f);
        /* the same figure from a document whose fit failed: no line, and the caption says so */
        if (fitted) json_object_set_new((json_t *)st, "fitted", json_false());
        json_object_set_new((json_t *)st, "why", json_string("the fit failed (test)"));
        const char *sw2 = tmp("fh_sweep_nofit.json"), *html2 = tmp("fh_sweep_nofit.html");
        json_dump_file(doc, sw2, 0);
        snprintf(cmd, sizeof cmd, "report %s -o %s", sw2, html2);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
        char *h2 = slurp(html2);
        const char *f2 = h2 ? strstr(h2, "id=\"fig-stability\"") : NULL;
        const char *f2e = f2 ? strstr(f2, "</figure>") : NULL;
        CHECK(f2 && f2e);
        if (f2 && f2e) {
            char *x = strndup(f2, (size_t)(f2e - f2));
            CHECK(!strstr(x, "Line: the fitted") && strstr(x, "No line") && !strstr(x, "<path class=\"s m-tok\""));
            free(x);
        }
        free(h2);
    } else {
        CHECK_MSG(0, "the sim ladder has no stability figure");
    }
    free(h); free(m);
    json_decref(doc);
    json_decref(diag);
}

/* A sweep whose levels failed in two ways: the errors chart stacks the classes per level. */
TEST(report_sweep_errors_chart) {
    test_server s;
    if (test_serve_start(&s, "--ttft 2ms --itl 1ms --seed 5 --fail-rate 0.2 --status-429-rate 0.1") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    json_t *levels = json_array();
    static const int loads[] = { 2, 8 };
    for (int i = 0; i < 2; i++) {
        char name[32], cmd[1024];
        snprintf(name, sizeof name, "err%d.json", loads[i]);
        const char *p = tmp(name);
        snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency %d --requests 60 --dataset random:in=8,out=4 --out %s",
                 s.url, loads[i], p);
        test_run(cmd, NULL, NULL);
        json_t *r = test_load_json(p);
        if (r) json_array_append_new(levels, json_pack("{s:i,s:i,s:o}", "load", loads[i], "repeat", 0, "results", r));
    }
    test_serve_stop(&s);
    CHECK_EQ_INT(json_array_size(levels), 2);
    json_t *doc = json_pack("{s:s,s:s,s:o,s:n,s:n}", "schema", "dsperf.sweep/1", "axis", "concurrency", "levels", levels,
                            "knee", "max_goodput");
    const char *sw = tmp("errsweep.json"), *html = tmp("errsweep.html");
    json_dump_file(doc, sw, 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "report %s -o %s", sw, html);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html);
    CHECK(h != NULL);
    if (h) {
        CHECK(strstr(h, "id=\"fig-errors\"") != NULL);
        CHECK(strstr(h, "HTTP 500") != NULL && strstr(h, "HTTP 429") != NULL);
        /* one bar segment per (level, class) that failed: both classes at both levels with 60 requests */
        CHECK_EQ_INT(count(h, "<rect class=\"bar e"), 4);
        CHECK(strstr(h, "no knee found") != NULL);
    }
    free(h);
    json_decref(doc);
}

TEST(report_cli_errors) {
    char *err = NULL;
    CHECK_EQ_INT(test_run("report", NULL, &err), 2);
    free(err); err = NULL;
    CHECK_EQ_INT(test_run("report /nonexistent/x.json -o /dev/null", NULL, &err), 2);
    CHECK(err && strstr(err, "cannot read") != NULL);
    free(err); err = NULL;
    const char *p = tmp("notours.json");
    FILE *f = fopen(p, "w");
    if (f) { fputs("{\"schema\":\"other/1\"}", f); fclose(f); }
    char cmd[600];
    snprintf(cmd, sizeof cmd, "report %s -o %s", p, tmp("x.html"));
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "not a dsperf results, sweep, tune or drift file") != NULL);
    free(err); err = NULL;
    CHECK_EQ_INT(test_run("report --bogus x", NULL, &err), 2);
    free(err); err = NULL;
    /* --diagnosis: a saved `diagnose --json` output is shown instead of diagnosing here */
    const char *res = tmp("cli.json"), *dg = tmp("cli.diag.json"), *md = tmp("cli.md");
    CHECK_EQ_INT(sim_run(2, 10, res, NULL), 0);
    f = fopen(dg, "w");
    if (f) { fputs("{\"findings\":[{\"class\":\"healthy\",\"title\":\"saved finding\",\"confidence\":0.9}]}", f); fclose(f); }
    snprintf(cmd, sizeof cmd, "report %s --md %s --diagnosis %s", res, md, dg);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *m = slurp(md);
    CHECK(m && strstr(m, "1. **saved finding** — `healthy`, confidence 90%") != NULL);
    CHECK(m && strstr(m, "bottleneck: saved finding") != NULL);
    free(m);
    snprintf(cmd, sizeof cmd, "report %s --md %s --diagnosis %s", res, md, res);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "not a diagnosis") != NULL);
    free(err); err = NULL;
    snprintf(cmd, sizeof cmd, "report %s --md %s --tp 0", res, md);
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    free(err);
}

/* Telemetry in the layout src/telemetry/README.md documents (a GPU with GPM columns, server
 * scrape series with a gap): the run view draws each line, the table shows the means/peaks. */
TEST(report_telemetry_lines) {
    const char *res = tmp("tel.json");
    CHECK_EQ_INT(sim_run(4, 40, res, NULL), 0);
    json_t *r = test_load_json(res);
    if (!r) { CHECK(r != NULL); return; }
    json_object_del(r, "engine");   /* the server series must be what the KV line comes from */
    json_t *tel = json_pack("{s:f,s:[{s:i,s:s,s:{s:[f,f,f,f],s:[f,f,n,f],s:[f,f,f,f],s:[f,f,f,f],s:[f,f,f,f]}}],"
                            "s:{s:s,s:{s:[f,f,f],s:[f,n,f],s:[i,i,i],s:[i,i,i]}}}",
                            "interval_s", 0.5, "gpu", "index", 0, "name", "NVIDIA H200", "series",
                            "t_s", 0.0, 0.5, 1.0, 1.5, "util_gpu_pct", 50.0, 70.0, 90.0, "sm_util_pct", 40.0, 60.0, 80.0, 60.0,
                            "tensor_util_pct", 10.0, 20.0, 30.0, 20.0, "dram_bw_util_pct", 5.0, 15.0, 25.0, 15.0,
                            "server", "source", "vllm", "series", "t_s", 0.0, 0.5, 1.0, "kv_usage_pct", 12.0, 33.0,
                            "running", 4, 4, 4, "waiting", 0, 1, 0);
    CHECK(tel != NULL);
    json_object_set_new(r, "telemetry", tel);
    json_dump_file(r, res, 0);
    const char *html = tmp("tel.html"), *csv = tmp("tel.csv");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "report %s -o %s --csv %s", res, html, csv);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html), *c = slurp(csv);
    CHECK(h && c);
    if (h && c) {
        const char *cls[] = { "m-gpu", "m-sm", "m-tensor", "m-dram", "m-kv", "m-running thin", "m-waiting thin" };
        for (size_t i = 0; i < sizeof cls / sizeof cls[0]; i++) {
            char want[64];
            snprintf(want, sizeof want, "<path class=\"s %s\" d=\"M", cls[i]);
            CHECK_MSG(strstr(h, want) != NULL, "no line %s", cls[i]);
        }
        CHECK(strstr(h, "GPU: NVIDIA H200") != NULL);
        CHECK(strstr(h, "GPU telemetry aligned") != NULL);
        /* the KV line has a gap at the null: two sub-paths */
        const char *kv = strstr(h, "<path class=\"s m-kv\" d=\"");
        int moves = 0;
        for (const char *p = kv ? kv + strlen("<path class=\"s m-kv\" d=\"") : ""; *p && *p != '"'; p++) moves += *p == 'M';
        CHECK_EQ_INT(moves, 2);
        CHECK_NEAR(csv_value(c, 1, "gpu_util_pct"), 70, 1e-9);      /* mean of 50, 70, 90 (null skipped) */
        CHECK_NEAR(csv_value(c, 1, "dram_bw_util_pct"), 15, 1e-9);
        CHECK_NEAR(csv_value(c, 1, "kv_peak_pct"), 33, 1e-9);
    }
    free(h); free(c);
    json_decref(r);
}

/* ---- headless Chromium ---- */

static const char *find_chromium(void) {
    static const char *const names[] = { "chromium", "chromium-browser", "google-chrome", "google-chrome-stable" };
    static char found[512];
    const char *path = getenv("PATH");
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        const char *p = path ? path : "/usr/bin:/bin";
        while (*p) {
            size_t n = strcspn(p, ":");
            snprintf(found, sizeof found, "%.*s/%s", (int)n, p, names[i]);
            if (access(found, X_OK) == 0) return found;
            p += n;
            if (*p) p++;
        }
    }
    return NULL;
}

/* Runs chromium headless with the flags CI uses; `mode` is "--screenshot=FILE" or "--dump-dom". */
static int chromium(const char *bin, const char *mode, const char *html, const char *out) {
    char profile[512], cmd[4096];
    snprintf(profile, sizeof profile, "%s/chrome-profile-%d", harness_tmpdir(), rand());
    mkdir(profile, 0700);
    snprintf(cmd, sizeof cmd, "timeout 60 %s --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                              "--disable-background-networking --disable-component-update --disable-sync --disable-dev-shm-usage "
                              "--user-data-dir=%s %s --window-size=1280,4000 file://%s > %s 2>/dev/null",
             bin, profile, mode, html, out);
    return system(cmd);
}

/* PNG width/height from the IHDR chunk; 0 when the file is not a PNG. */
static int png_size(const char *path, unsigned *w, unsigned *h, long *bytes) {
    FILE *f = fopen(path, "rb");
    unsigned char hd[24];
    if (!f) return 0;
    size_t n = fread(hd, 1, sizeof hd, f);
    fseek(f, 0, SEEK_END);
    *bytes = ftell(f);
    fclose(f);
    if (n < 24 || memcmp(hd, "\x89PNG\r\n\x1a\n", 8) || memcmp(hd + 12, "IHDR", 4)) return 0;
    *w = (unsigned)hd[16] << 24 | (unsigned)hd[17] << 16 | (unsigned)hd[18] << 8 | hd[19];
    *h = (unsigned)hd[20] << 24 | (unsigned)hd[21] << 16 | (unsigned)hd[22] << 8 | hd[23];
    return 1;
}

TEST(report_chromium_render) {
    const char *bin = find_chromium();
    if (!bin) SKIP("chromium not installed (Debian package 'chromium'): browser rendering not checked");
    const char *res = tmp("render.json"), *jl = tmp("render.jsonl"), *html = tmp("render.html");
    CHECK_EQ_INT(sim_run(16, 160, res, jl), 0);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "report %s -o %s --save-requests %s", res, html, jl);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    /* the page as the browser parsed it: every chart is an <svg> with drawn paths */
    const char *dom = tmp("render.dom");
    CHECK_EQ_INT(chromium(bin, "--dump-dom", html, dom), 0);
    char *d = slurp(dom), *src = slurp(html);
    CHECK(d && src);
    if (d && src) {
        size_t svgs = count(d, "<svg");
        CHECK(svgs >= 8);
        CHECK_EQ_INT(svgs, count(src, "<svg"));
        CHECK(count(d, "<path class=\"s ") >= svgs);
        CHECK(count(d, "d=\"M") >= svgs);
        CHECK(count(d, "<circle") >= 100);     /* the TTFT scatter: one per request */
        CHECK(strstr(d, "id=\"verdict\"") != NULL);
    }
    free(d); free(src);
    /* a sweep page as well: bars, rules, bands and fit lines survive the browser's parser */
    const char *sw = make_sweep(), *sw_html = tmp("render_sweep.html"), *sw_dom = tmp("render_sweep.dom");
    CHECK(sw != NULL);
    if (sw) {
        snprintf(cmd, sizeof cmd, "report %s -o %s", sw, sw_html);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
        CHECK_EQ_INT(chromium(bin, "--dump-dom", sw_html, sw_dom), 0);
        char *sd = slurp(sw_dom), *ss = slurp(sw_html);
        CHECK(sd && ss);
        if (sd && ss) {
            CHECK_EQ_INT(count(sd, "<svg"), count(ss, "<svg"));
            CHECK(count(sd, "<svg") >= 9);
            CHECK_EQ_INT(count(sd, "<rect class=\"bar "), count(ss, "<rect class=\"bar "));
            CHECK(strstr(sd, "<g class=\"rule knee\">") != NULL);
            CHECK(strstr(sd, "<g class=\"band sat\">") != NULL);
            CHECK(strstr(sd, "<path class=\"s fit\"") != NULL);
        }
        free(sd); free(ss);
    }
    /* the screenshot: a real PNG of the window, far from blank (a blank page of the same size
     * compresses to ~23 kB at 1280x4000; the report's text and charts do not) */
    const char *png = tmp("render.png"), *blank_html = tmp("blank.html"), *blank_png = tmp("blank.png");
    FILE *f = fopen(blank_html, "w");
    if (f) { fputs("<!DOCTYPE html><html><body></body></html>", f); fclose(f); }
    char shot[600];
    snprintf(shot, sizeof shot, "--screenshot=%s", png);
    CHECK_EQ_INT(chromium(bin, shot, html, "/dev/null"), 0);
    snprintf(shot, sizeof shot, "--screenshot=%s", blank_png);
    CHECK_EQ_INT(chromium(bin, shot, blank_html, "/dev/null"), 0);
    unsigned w = 0, h = 0, bw = 0, bh = 0;
    long bytes = 0, bbytes = 0;
    CHECK(png_size(png, &w, &h, &bytes));
    CHECK(png_size(blank_png, &bw, &bh, &bbytes));
    CHECK_EQ_INT(w, 1280);
    CHECK_EQ_INT(h, 4000);
    CHECK_MSG(bytes > 8 * bbytes && bytes > 100000, "screenshot %ld bytes vs blank %ld", bytes, bbytes);
}

/* A tune document from the offline simulator (two settings of max_num_seqs, a few loads): the
 * page names the recommendation, draws every point with the front through it, and lists each
 * configuration; the CSV has one row per (configuration, load); the browser parses the chart. */
TEST(report_tune_page) {
    const char *tj = tmp("tune.json"), *html = tmp("tune.html"), *md = tmp("tune.md"), *csv = tmp("tune.csv");
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "tune --sim-flags '--model deepseek-v2-lite --gpu h200 --max-num-seqs {seqs}' --grid seqs=4,32 "
             "--concurrency 2,8,32 --requests 120 --dataset random:in=512,out=64 --slo ttft=300ms --quiet --out %s", tj);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *doc = test_load_json(tj);
    if (!doc) { CHECK(doc != NULL); return; }
    snprintf(cmd, sizeof cmd, "report %s -o %s --md %s --csv %s", tj, html, md, csv);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    char *h = slurp(html), *m = slurp(md), *c = slurp(csv);
    CHECK(h && m && c);
    const json_t *rec = json_object_get(doc, "recommendation");
    CHECK(rec != NULL);
    if (h && m && c && rec) {
        const char *label = json_string_value(json_object_get(rec, "label"));
        CHECK_STR(label, "seqs=32");                              /* the larger batch serves more under the SLO */
        CHECK(strstr(h, "id=\"fig-pareto\"") && strstr(h, "<svg"));
        CHECK_EQ_INT(count(h, "<tr"), 1 + 2);                     /* header row and one per configuration */
        CHECK_EQ_INT(count(h, ">recommended<"), 1);
        CHECK(strstr(m, "**Recommendation:** seqs=32") != NULL);
        size_t points = 0, i;
        json_t *cf;
        json_array_foreach(json_object_get(doc, "configs"), i, cf)
            points += json_array_size(json_object_get(json_object_get(cf, "summary"), "points"));
        CHECK_EQ_INT(points, 2 * 3);
        CHECK_EQ_INT(count(c, "\n"), points + 1);
        CHECK_EQ_INT(count(c, ",true\n"), json_array_size(json_object_get(json_object_get(doc, "pareto"), "front")));
    }
    const char *bin = find_chromium();
    if (bin && h) {
        const char *dom = tmp("tune.dom");
        CHECK_EQ_INT(chromium(bin, "--dump-dom", html, dom), 0);
        char *d = slurp(dom);
        CHECK(d && count(d, "<circle") == count(h, "<circle") && count(d, "<circle") >= 6);
        free(d);
    }
    free(h); free(m); free(c);
    json_decref(doc);
}
