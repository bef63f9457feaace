/* trend_page — the report of a results history (`dsperf report --db PATH --query Q`): for each
 * metric, its values over the comparable runs as points with each run's 95% noise band shaded
 * (from the run's own samples), the level of each segment between change points, and the change
 * points marked with what changed; then the change sentences, the runs' table and the
 * configuration they share. Input: dsperf.history-trend/1 documents (src/history). */
#include "report/report_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TABLE_ROWS 200

static const char *str(const json_t *o, const char *k) { return json_string_value(json_object_get(o, k)); }
static const json_t *obj(const json_t *o, const char *k) { return json_object_get(o, k); }

/* The colour class of a metric, as the other pages use it. */
static const char *metric_class(const char *m) {
    if (strstr(m, "ttft")) return "m-ttft";
    if (strstr(m, "tpot")) return "m-tpot";
    if (strstr(m, "itl")) return "m-itl";
    if (strstr(m, "e2el")) return "m-e2el";
    if (strstr(m, "goodput")) return "m-good";
    return "m-tok";
}

/* The history's own verdict when some metric has too few runs for a change point (its
 * enough_runs is false), as `dsperf history trend` says it; false when every metric has enough. */
static bool too_few_runs(const json_t *trends, char *buf, size_t len) {
    size_t i;
    json_t *t;
    json_array_foreach(trends, i, t) {
        if (!json_is_false(json_object_get(t, "enough_runs"))) continue;
        snprintf(buf, len, "Too few runs to tell a change from noise: %lld comparable runs, and a change point needs %lld "
                 "on each side (dsperf history compare tests two runs).", (long long)json_integer_value(json_object_get(t, "n_runs")),
                 (long long)json_integer_value(json_object_get(t, "min_runs")));
        return true;
    }
    return false;
}

static void trend_chart(rbuf *b, const json_t *t, size_t index) {
    const char *metric = str(t, "metric");
    const json_t *runs = obj(t, "runs");
    size_t n = json_array_size(runs);
    if (!n || !metric) return;
    double *x = malloc(n * sizeof *x), *y = malloc(n * sizeof *y), *lo = malloc(n * sizeof *lo), *hi = malloc(n * sizeof *hi);
    if (!x || !y || !lo || !hi) { free(x); free(y); free(lo); free(hi); return; }
    double ylo = NAN, yhi = NAN;
    for (size_t i = 0; i < n; i++) {
        const json_t *r = json_array_get(runs, i);
        x[i] = (double)json_integer_value(obj(r, "id"));
        y[i] = rep_num(r, "value");
        lo[i] = rep_num(r, "lo");
        hi[i] = rep_num(r, "hi");
    }
    chart_range_of(y, n, &ylo, &yhi);
    chart_range_of(lo, n, &ylo, &yhi);
    chart_range_of(hi, n, &ylo, &yhi);
    char id[32], title[160], note[400];
    snprintf(id, sizeof id, "fig-trend-%zu", index);
    snprintf(title, sizeof title, "%s over %zu comparable runs", metric, n);
    const char *dir = str(t, "direction");
    snprintf(note, sizeof note, "Each point is a run (x: its run id); the shaded band is each run's 95%% interval from its own "
             "samples; the grey steps are the segments' levels; a red rule marks a change that compare's test confirms.");
    chart_fig_open(b, id, title, dir && !strcmp(dir, "lower_is_better") ? "lower is better"
                                 : dir && !strcmp(dir, "higher_is_better") ? "higher is better" : NULL, note);
    svg_chart ch = { 0 };
    double x0 = x[0], x1 = x[n - 1];
    if (x1 <= x0) { x0 -= 1; x1 += 1; }
    svg_axis_linear(&ch.x, x0, x1, 10);
    ch.x.label = "run";
    svg_axis_fit(&ch.y, ylo - (yhi - ylo) * 0.05, yhi + (yhi - ylo) * 0.05, false, false);
    ch.y.label = metric;
    svg_begin(&ch, b, SVG_WIDE_W, SVG_CHART_H, title);   /* one run per point: the page's width */
    const char *cls = metric_class(metric);
    svg_area(&ch, x, lo, hi, n, cls);
    /* segment levels */
    size_t i;
    json_t *s;
    json_array_foreach(obj(t, "segments"), i, s) {
        double sx[2] = { (double)json_integer_value(obj(s, "from_id")), (double)json_integer_value(obj(s, "to_id")) };
        double sy[2] = { rep_num(s, "mean"), rep_num(s, "mean") };
        if (sx[1] == sx[0]) { sx[0] -= 0.3; sx[1] += 0.3; }
        svg_line(&ch, sx, sy, 2, "fit");
    }
    if (n <= 2000) svg_points(&ch, x, y, n, cls, n > 200 ? 1.5 : 3);
    else svg_line(&ch, x, y, n, cls);   /* 100,000 circles would be megabytes of page for one line's worth of ink */
    json_array_foreach(obj(t, "change_points"), i, s) {
        if (!json_is_true(obj(s, "confirmed"))) continue;
        char lab[96];
        snprintf(lab, sizeof lab, "run %lld %+.0f%%", (long long)json_integer_value(obj(s, "id")), rep_num(s, "change_pct"));
        svg_vrule(&ch, (double)json_integer_value(obj(s, "id")) - 0.5, "change", lab, 0.08 + 0.1 * (double)(i % 3));
    }
    const char *lc[] = { cls, "fit", "change" }, *lt[] = { "run (95% band shaded)", "segment level", "change point" };
    svg_legend(&ch, lc, lt, 3);
    svg_end(&ch);
    chart_fig_close(b);
    free(x); free(y); free(lo); free(hi);
}

static size_t confirmed_changes(const json_t *t) {
    size_t i, n = 0;
    json_t *cp;
    json_array_foreach(obj(t, "change_points"), i, cp) n += json_is_true(obj(cp, "confirmed"));
    return n;
}

static void page(rbuf *b, const json_t *trends, const report_opts *o) {
    const json_t *t0 = json_array_get(trends, 0);
    report_page_head(b, o->title ? o->title : "dsperf history \xe2\x80\x94 trend");
    rb_puts(b, "query <code>");
    rb_esc(b, str(t0, "query") && *str(t0, "query") ? str(t0, "query") : "(all runs)");
    rb_printf(b, "</code> &middot; %lld comparable runs", (long long)json_integer_value(obj(t0, "n_runs")));
    if (str(t0, "config")) { rb_puts(b, " &middot; config "); rb_esc(b, str(t0, "config")); }
    if (o->source_name) { rb_puts(b, " &middot; "); rb_esc(b, o->source_name); }
    rb_puts(b, "</div><nav><a href=\"#changes\">Changes</a>");
    size_t i, k;
    json_t *t, *cp;
    json_array_foreach(trends, i, t) rb_printf(b, "<a href=\"#fig-trend-%zu\">%s</a>", i, str(t, "metric"));
    rb_puts(b, "<a href=\"#runs\">Runs</a><a href=\"#config\">Configuration</a></nav></header>");
    rb_puts(b, "<section id=\"changes\" class=\"verdict\">");
    size_t total = 0;
    json_array_foreach(trends, i, t) total += confirmed_changes(t);
    if (!total) {
        /* with too few runs for a change point, "no change" would be a claim nothing tested */
        char few[300];
        if (too_few_runs(trends, few, sizeof few)) { rb_puts(b, "<p class=\"sentence\">"); rb_esc(b, few); rb_puts(b, "</p>"); }
        else rb_puts(b, "<p class=\"sentence\">No change beyond noise.</p>");
    }
    json_array_foreach(trends, i, t) json_array_foreach(obj(t, "change_points"), k, cp) {
        if (!json_is_true(obj(cp, "confirmed"))) continue;
        rb_puts(b, "<p class=\"sentence\">");
        rb_esc(b, str(cp, "sentence"));
        rb_printf(b, " <span class=\"faint\">(%s; %lld runs before, %lld after, pooled and tested as dsperf compare tests)</span></p>",
                  str(cp, "verdict") ? str(cp, "verdict") : "?", (long long)json_integer_value(obj(cp, "runs_before")),
                  (long long)json_integer_value(obj(cp, "runs_after")));
    }
    if (str(t0, "note")) { rb_puts(b, "<p class=\"faint\">Note: "); rb_esc(b, str(t0, "note")); rb_puts(b, "</p>"); }
    rb_puts(b, "</section><section>");
    json_array_foreach(trends, i, t) trend_chart(b, t, i);
    rb_puts(b, "</section>");
    /* the runs' table: the newest TABLE_ROWS runs of the first metric, a column per metric (each
     * trend's runs are in id order: one cursor per trend) */
    size_t nt = json_array_size(trends), n0 = json_array_size(obj(t0, "runs"));
    size_t from = n0 > TABLE_ROWS ? n0 - TABLE_ROWS : 0;
    size_t *cur = calloc(nt ? nt : 1, sizeof *cur);
    rb_printf(b, "<section id=\"runs\"><h2>Runs</h2>%s<div class=\"tablewrap\"><table><thead><tr><th class=\"l\">run</th>"
                 "<th class=\"l\">date (UTC)</th>", from ? "<p class=\"faint\">The newest runs; the CSV has every one.</p>" : "");
    json_array_foreach(trends, i, t) { rb_puts(b, "<th>"); rb_esc(b, str(t, "metric")); rb_puts(b, " [95% band]</th>"); }
    rb_puts(b, "<th class=\"l\">labels</th></tr></thead><tbody>");
    for (k = from; cur && k < n0; k++) {
        const json_t *r0 = json_array_get(obj(t0, "runs"), k);
        json_int_t id = json_integer_value(obj(r0, "id"));
        bool change = false;
        json_array_foreach(trends, i, t) { size_t j; json_array_foreach(obj(t, "change_points"), j, cp)
            change |= json_is_true(obj(cp, "confirmed")) && json_integer_value(obj(cp, "id")) == id; }
        rb_printf(b, "<tr%s><td class=\"l\">%lld</td><td class=\"l\">", change ? " class=\"bad\"" : "", (long long)id);
        rb_esc(b, str(r0, "date"));
        rb_puts(b, "</td>");
        json_array_foreach(trends, i, t) {
            const json_t *runs = obj(t, "runs"), *r = NULL;
            while (cur[i] < json_array_size(runs) && json_integer_value(obj(json_array_get(runs, cur[i]), "id")) < id) cur[i]++;
            if (cur[i] < json_array_size(runs) && json_integer_value(obj(json_array_get(runs, cur[i]), "id")) == id)
                r = json_array_get(runs, cur[i]);
            char v[32], l[32], h[32];
            fmt_num(r ? rep_num(r, "value") : NAN, v, sizeof v);
            rb_printf(b, "<td>%s", v);
            if (r && isfinite(rep_num(r, "lo"))) {
                fmt_num(rep_num(r, "lo"), l, sizeof l);
                fmt_num(rep_num(r, "hi"), h, sizeof h);
                rb_printf(b, " <span class=\"faint\">[%s, %s]</span>", l, h);
            }
            rb_puts(b, "</td>");
        }
        rb_puts(b, "<td class=\"l\">");
        rb_esc(b, str(r0, "labels") ? str(r0, "labels") : "");
        rb_puts(b, "</td></tr>");
    }
    free(cur);
    rb_puts(b, "</tbody></table></div></section><section id=\"config\"><h2>Configuration</h2><p class=\"faint\">The runs "
               "above share this configuration (its hash decides which runs are comparable).</p><pre>");
    char *cfg = obj(t0, "config_json") ? json_dumps(obj(t0, "config_json"), JSON_INDENT(1) | JSON_SORT_KEYS) : NULL;
    rb_esc(b, cfg ? cfg : "(several: the query said config:any)");
    free(cfg);
    rb_puts(b, "</pre></section><footer class=\"foot\">dsperf history trend</footer></main></body></html>\n");
}

static int check(const json_t *trends, char *err, size_t errlen) {
    if (!json_array_size(trends)) { snprintf(err, errlen, "no trend to draw"); return -1; }
    return 0;
}

int report_trend_html(FILE *f, const json_t *trends, const report_opts *o, char *err, size_t errlen) {
    if (check(trends, err, errlen)) return -1;
    rbuf b;
    rb_init(&b);
    page(&b, trends, o);
    return rb_write(&b, f, err, errlen);
}

int report_trend_markdown(FILE *f, const json_t *trends, char *err, size_t errlen) {
    if (check(trends, err, errlen)) return -1;
    rbuf b;
    rb_init(&b);
    rb_puts(&b, "# dsperf history trend\n\n");
    size_t i, k, total = 0;
    json_t *t, *cp, *r;
    json_array_foreach(trends, i, t) json_array_foreach(obj(t, "change_points"), k, cp) {
        if (!json_is_true(obj(cp, "confirmed"))) continue;
        rb_printf(&b, "- **%s** (%s)\n", str(cp, "sentence"), str(cp, "verdict") ? str(cp, "verdict") : "?");
        total++;
    }
    char few[300];
    if (!total) rb_printf(&b, "%s\n", too_few_runs(trends, few, sizeof few) ? few : "No change beyond noise.");
    json_array_foreach(trends, i, t) {
        size_t nr = json_array_size(obj(t, "runs"));
        rb_printf(&b, "\n## %s\n\n%s| run | date (UTC) | value | 95%% band | labels |\n|---:|---|---:|---|---|\n", str(t, "metric"),
                  nr > TABLE_ROWS ? "(the newest runs; the CSV has every one)\n\n" : "");
        json_array_foreach(obj(t, "runs"), k, r) {
            if (nr > TABLE_ROWS && k < nr - TABLE_ROWS) continue;
            char v[32], l[32], h[32];
            fmt_num(rep_num(r, "value"), v, sizeof v);
            fmt_num(rep_num(r, "lo"), l, sizeof l);
            fmt_num(rep_num(r, "hi"), h, sizeof h);
            rb_printf(&b, "| %lld | %s | %s | %s .. %s | ", (long long)json_integer_value(obj(r, "id")), str(r, "date"), v, l, h);
            rb_md_cell(&b, str(r, "labels") ? str(r, "labels") : "");
            rb_puts(&b, " |\n");
        }
    }
    return rb_write(&b, f, err, errlen);
}

int report_trend_csv(FILE *f, const json_t *trends, char *err, size_t errlen) {
    if (check(trends, err, errlen)) return -1;
    rbuf b;
    rb_init(&b);
    rb_puts(&b, "metric,run,date,value,lo,hi,labels,change\n");
    size_t i, k;
    json_t *t, *r;
    json_array_foreach(trends, i, t) json_array_foreach(obj(t, "runs"), k, r) {
        json_int_t id = json_integer_value(obj(r, "id"));
        bool change = false;
        size_t j;
        json_t *cp;
        json_array_foreach(obj(t, "change_points"), j, cp) change |= json_is_true(obj(cp, "confirmed")) && json_integer_value(obj(cp, "id")) == id;
        rb_csv_field(&b, str(t, "metric"));
        rb_printf(&b, ",%lld,%s,%.10g,%.10g,%.10g,", (long long)id, str(r, "date"), rep_num(r, "value"), rep_num(r, "lo"), rep_num(r, "hi"));
        rb_csv_field(&b, str(r, "labels") ? str(r, "labels") : "");
        rb_printf(&b, ",%s\n", change ? "true" : "false");
    }
    return rb_write(&b, f, err, errlen);
}
