/* charts — what every figure of the report shares: the <figure> frame with its title, the "which
 * way is better" note and the reading hint, value ranges and log-axis labels. The figures are in
 * charts_load.c (against offered load), charts_dist.c (distributions) and charts_time.c (the
 * time-aligned run view and the request Gantt). */
#include "report/report_internal.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

void chart_axis_label_log(svg_axis *a, char *buf, size_t len, const char *base) {
    snprintf(buf, len, "%s%s", base, a->kind == AXIS_LOG ? ", log" : "");
    size_t l = strlen(buf);
    /* close the unit parenthesis after "log" when the base ends with ")" */
    if (a->kind == AXIS_LOG && l > 5 && strstr(base, "(") && base[strlen(base) - 1] == ')') {
        snprintf(buf, len, "%.*s, log)", (int)(strlen(base) - 1), base);
    }
    a->label = buf;
}
