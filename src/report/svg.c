/* svg — chart primitives for the report: axes with "nice" ticks (linear, log decades, and the
 * HdrHistogram-style percentile axis), and lines, points, rules and bands placed in data units.
 * Colours and dashes come from CSS classes so one stylesheet serves light, dark and print. */
#include "report/report_internal.h"
#include <math.h>
#include <stdio.h>
#include <string.h>

/* ---- axes ---- */

static void widen_degenerate(double *lo, double *hi) {
    if (!isfinite(*lo) || !isfinite(*hi)) { *lo = 0; *hi = 1; }
    if (*hi < *lo) { double t = *lo; *lo = *hi; *hi = t; }
    if (*hi - *lo <= fabs(*hi) * 1e-9) {
        double d = fabs(*hi) > 0 ? fabs(*hi) * 0.1 : 1;
        *lo -= d;
        *hi += d;
    }
}

void svg_axis_linear(svg_axis *a, double lo, double hi, int max_ticks) {
    static const double mult[] = { 1, 2, 2.5, 5, 10 };
    if (max_ticks < 2) max_ticks = 2;
    if (max_ticks > SVG_MAX_TICKS) max_ticks = SVG_MAX_TICKS;
    widen_degenerate(&lo, &hi);
    double rough = (hi - lo) / (max_ticks - 1);
    double mag = pow(10, floor(log10(rough)));
    a->kind = AXIS_LINEAR;
    for (int k = 0;; k++) {
        /* walk the 1-2-2.5-5 ladder upward until the ticks fit */
        double step = mult[k % 5] * mag * pow(10, k / 5);
        if (step < rough * (1 - 1e-9)) continue;
        double t0 = floor(lo / step + 1e-9) * step, t1 = ceil(hi / step - 1e-9) * step;
        int n = (int)llround((t1 - t0) / step) + 1;
        if (n > max_ticks) continue;
        a->lo = t0;
        a->hi = t1;
        a->n_ticks = n;
        for (int i = 0; i < n; i++) {
            double v = t0 + i * step;
            a->ticks[i] = fabs(v) < step * 1e-9 ? 0 : v;   /* no "-0" or 1e-17 labels */
        }
        return;
    }
}

void svg_axis_log(svg_axis *a, double lo, double hi) {
    if (!(lo > 0)) lo = hi > 0 ? hi / 10 : 1;
    if (!(hi > lo)) hi = lo * 10;
    /* a little air around the data, then ticks at 1-2-5 x 10^k inside (decades only when the
     * range spans more than three); too few ticks inside falls back to whole decades */
    double plo = lo / 1.15, phi = hi * 1.15;
    int d0 = (int)floor(log10(plo)), d1 = (int)ceil(log10(phi));
    bool minor = d1 - d0 <= 3;
    int stride = (d1 - d0 + SVG_MAX_TICKS - 2) / (SVG_MAX_TICKS - 1);
    if (stride < 1) stride = 1;
    a->kind = AXIS_LOG;
    a->n_ticks = 0;
    for (int d = d0; d <= d1 && a->n_ticks < SVG_MAX_TICKS; d += stride) {
        for (int m = 1; m <= 5; m += m == 1 ? 1 : 3) {
            double v = m * pow(10, d);
            if ((m == 1 || minor) && v >= plo * (1 - 1e-9) && v <= phi * (1 + 1e-9) && a->n_ticks < SVG_MAX_TICKS)
                a->ticks[a->n_ticks++] = v;
        }
    }
    if (a->n_ticks >= 2) {
        a->lo = plo;
        a->hi = phi;
        return;
    }
    d0 = (int)floor(log10(lo) + 1e-9);
    d1 = (int)ceil(log10(hi) - 1e-9);
    if (d1 <= d0) d1 = d0 + 1;
    a->lo = pow(10, d0);
    a->hi = pow(10, d1);
    a->n_ticks = 0;
    for (int d = d0; d <= d1 && a->n_ticks < SVG_MAX_TICKS; d++) a->ticks[a->n_ticks++] = pow(10, d);
}

void svg_axis_nines(svg_axis *a, int max_nines) {
    if (max_nines < 1) max_nines = 1;
    if (max_nines > 6) max_nines = 6;
    a->kind = AXIS_NINES;
    a->lo = 0;
    a->hi = max_nines;
    a->n_ticks = max_nines + 1;
    for (int i = 0; i <= max_nines; i++) a->ticks[i] = i;
}

void svg_axis_fit(svg_axis *a, double lo, double hi, bool want_log, bool include_zero) {
    const char *label = a->label;
    if (want_log && lo > 0 && isfinite(hi) && hi >= 10 * lo) {
        svg_axis_log(a, lo, hi);
    } else {
        if (include_zero && lo > 0) lo = 0;
        svg_axis_linear(a, lo, hi, 6);
    }
    a->label = label;
}

double svg_axis_frac(const svg_axis *a, double v) {
    if (a->kind == AXIS_LOG) {
        if (!(v > 0)) return -1;
        return (log10(v) - log10(a->lo)) / (log10(a->hi) - log10(a->lo));
    }
    return (v - a->lo) / (a->hi - a->lo);
}

void svg_tick_label(const svg_axis *a, double v, char *buf, size_t len) {
    if (a->kind == AXIS_NINES) {
        int n = (int)llround(v);
        if (n <= 0) { snprintf(buf, len, "0%%"); return; }
        if (n == 1) { snprintf(buf, len, "90%%"); return; }
        snprintf(buf, len, "%.*f%%", n - 2, 100.0 * (1 - pow(10, -n)));
        return;
    }
    fmt_tick(v, buf, len);
}

/* ---- chart frame ---- */

double svg_px(const svg_chart *c, double x) {
    return c->ml + svg_axis_frac(&c->x, x) * (c->w - c->ml - c->mr);
}

double svg_py(const svg_chart *c, double y) {
    return c->h - c->mb - svg_axis_frac(&c->y, y) * (c->h - c->mt - c->mb);
}

void svg_begin(svg_chart *c, rbuf *out, double w, double h, const char *aria_label) {
    c->out = out;
    c->w = w;
    c->h = h;
    if (c->ml <= 0) c->ml = 60;
    if (c->mr <= 0) c->mr = 16;
    if (c->mt <= 0) c->mt = 30;
    if (c->mb <= 0) c->mb = 42;
    double x0 = c->ml, x1 = w - c->mr, y0 = c->mt, y1 = h - c->mb;
    /* the buffer offset is unique within the document: a clip id that cannot collide */
    size_t id = out->len;
    c->clip_id = id;
    /* never drawn larger than its own size: text reads at one size in every chart (a grid cell
     * of the page holds SVG_CHART_W, a full-width figure SVG_WIDE_W) */
    rb_printf(out, "<svg class=\"chart\" viewBox=\"0 0 %.0f %.0f\" style=\"max-width:%.0fpx\" role=\"img\" aria-label=\"",
              w, h, w);
    rb_esc(out, aria_label);
    rb_puts(out, "\"><title>");
    rb_esc(out, aria_label);
    rb_printf(out, "</title><defs><clipPath id=\"cp%zu\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>"
                   "</clipPath></defs>", id, x0 - 3, y0 - 3, x1 - x0 + 6, y1 - y0 + 6);
    rb_puts(out, "<g class=\"grid\">");
    char t[32];
    for (int i = 0; i < c->y.n_ticks; i++) {
        double py = svg_py(c, c->y.ticks[i]);
        if (py < y0 - 0.5 || py > y1 + 0.5) continue;
        rb_printf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", x0, py, x1, py);
    }
    for (int i = 0; i < c->x.n_ticks; i++) {
        double px = svg_px(c, c->x.ticks[i]);
        if (px < x0 - 0.5 || px > x1 + 0.5) continue;
        rb_printf(out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", px, y0, px, y1);
    }
    rb_puts(out, "</g><g class=\"axis\">");
    rb_printf(out, "<path class=\"frame\" d=\"M%.1f %.1fV%.1fH%.1f\"/>", x0, y0, y1, x1);
    /* minor log ticks have no label when they would crowd: only 1x, 2x, 5x are ticks anyway */
    for (int i = 0; i < c->y.n_ticks; i++) {
        double py = svg_py(c, c->y.ticks[i]);
        if (py < y0 - 0.5 || py > y1 + 0.5) continue;
        svg_tick_label(&c->y, c->y.ticks[i], t, sizeof t);
        rb_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">%s</text>", x0 - 5, py + 3.5, t);
    }
    for (int i = 0; i < c->x.n_ticks; i++) {
        double px = svg_px(c, c->x.ticks[i]);
        if (px < x0 - 0.5 || px > x1 + 0.5) continue;
        svg_tick_label(&c->x, c->x.ticks[i], t, sizeof t);
        rb_printf(out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">%s</text>", px, y1 + 15, t);
    }
    if (c->x.label) {
        rb_printf(out, "<text class=\"alabel\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", (x0 + x1) / 2, h - 8);
        rb_esc(out, c->x.label);
        rb_puts(out, "</text>");
    }
    if (c->y.label) {
        rb_printf(out, "<text class=\"alabel\" transform=\"translate(13 %.1f) rotate(-90)\" text-anchor=\"middle\">",
                  (y0 + y1) / 2);
        rb_esc(out, c->y.label);
        rb_puts(out, "</text>");
    }
    rb_printf(out, "</g><g clip-path=\"url(#cp%zu)\">", id);
}

void svg_end(svg_chart *c) { rb_puts(c->out, "</g></svg>"); }

/* ---- marks ---- */

static bool finite_pt(const svg_chart *c, double x, double y) {
    if (!isfinite(x) || !isfinite(y)) return false;
    if (c->x.kind == AXIS_LOG && !(x > 0)) return false;
    if (c->y.kind == AXIS_LOG && !(y > 0)) return false;
    return true;
}

static void path_open(svg_chart *c, const char *cls) {
    rb_puts(c->out, "<path class=\"s ");
    rb_esc(c->out, cls);
    rb_puts(c->out, "\" d=\"");
}

/* Remembers a drawn segment for the label placement (svg_point_labels, rules); a chart with more
 * segments than it keeps (dense timelines) keeps the first ones. */
static void note_seg(svg_chart *c, double x0, double y0, double x1, double y1) {
    if (c->n_seg < SVG_MAX_SEGS) c->seg[c->n_seg++] = (svg_seg){ (float)x0, (float)y0, (float)x1, (float)y1 };
}

void svg_line(svg_chart *c, const double *x, const double *y, size_t n, const char *cls) {
    path_open(c, cls);
    bool pen = false;
    double lx = 0, ly = 0;
    for (size_t i = 0; i < n; i++) {
        if (!finite_pt(c, x[i], y[i])) { pen = false; continue; }
        double px = svg_px(c, x[i]), py = svg_py(c, y[i]);
        rb_printf(c->out, "%c%.1f %.1f", pen ? 'L' : 'M', px, py);
        if (pen) note_seg(c, lx, ly, px, py);
        lx = px, ly = py;
        pen = true;
    }
    rb_puts(c->out, "\"/>");
}

void svg_area(svg_chart *c, const double *x, const double *lo, const double *hi, size_t n, const char *cls) {
    /* one closed shape per run of consecutive finite points: along hi, back along lo */
    size_t i = 0;
    while (i < n) {
        while (i < n && !(finite_pt(c, x[i], lo[i]) && finite_pt(c, x[i], hi[i]))) i++;
        size_t j = i;
        while (j < n && finite_pt(c, x[j], lo[j]) && finite_pt(c, x[j], hi[j])) j++;
        if (j > i) {
            rb_puts(c->out, "<path class=\"area ");
            rb_esc(c->out, cls);
            rb_puts(c->out, "\" d=\"");
            for (size_t k = i; k < j; k++) rb_printf(c->out, "%c%.1f %.1f", k == i ? 'M' : 'L', svg_px(c, x[k]), svg_py(c, hi[k]));
            if (j - i == 1) {   /* a lone point: a narrow bar so it shows */
                rb_printf(c->out, "h2V%.1fh-4V%.1fh2", svg_py(c, lo[i]), svg_py(c, hi[i]));
            } else {
                for (size_t k = j; k-- > i;) rb_printf(c->out, "L%.1f %.1f", svg_px(c, x[k]), svg_py(c, lo[k]));
            }
            rb_puts(c->out, "Z\"/>");
        }
        i = j;
    }
}

void svg_steps(svg_chart *c, const double *x, const double *y, size_t n, const char *cls) {
    path_open(c, cls);
    bool pen = false;
    for (size_t i = 0; i < n; i++) {
        if (!finite_pt(c, x[i], y[i])) { pen = false; continue; }
        double py = svg_py(c, y[i]);
        if (pen) rb_printf(c->out, "V%.1f", py);
        rb_printf(c->out, "%c%.1f %.1f", pen ? 'L' : 'M', svg_px(c, x[i]), py);
        /* each value holds until the next x; the last one for the previous step's width (or 1),
         * so a single bin still shows as a segment */
        double xn = i + 1 < n ? x[i + 1] : x[i] + (i > 0 && isfinite(x[i - 1]) ? x[i] - x[i - 1] : 1);
        if (isfinite(xn)) rb_printf(c->out, "H%.1f", svg_px(c, xn));
        pen = true;
    }
    rb_puts(c->out, "\"/>");
}

void svg_points(svg_chart *c, const double *x, const double *y, size_t n, const char *cls, double r) {
    rb_puts(c->out, "<g class=\"pt ");
    rb_esc(c->out, cls);
    rb_puts(c->out, "\">");
    for (size_t i = 0; i < n; i++) {
        if (!finite_pt(c, x[i], y[i])) continue;
        rb_printf(c->out, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\"/>", svg_px(c, x[i]), svg_py(c, y[i]), r);
        note_seg(c, svg_px(c, x[i]), svg_py(c, y[i]), svg_px(c, x[i]), svg_py(c, y[i]));
    }
    rb_puts(c->out, "</g>");
}

/* Labels at 10 px: about 5.6 px per character, 11 px from baseline to cap. */
typedef svg_box label_box;

static bool boxes_overlap(const label_box *a, const label_box *b) {
    return a->x0 < b->x1 && b->x0 < a->x1 && a->y0 < b->y1 && b->y0 < a->y1;
}

/* Whether segment s crosses box b (Liang-Barsky clipping of the segment to the box). */
static bool seg_hits_box(const svg_seg *s, const label_box *b) {
    double t0 = 0, t1 = 1, dx = s->x1 - s->x0, dy = s->y1 - s->y0;
    const double p[4] = { -dx, dx, -dy, dy }, q[4] = { s->x0 - b->x0, b->x1 - s->x0, s->y0 - b->y0, b->y1 - s->y0 };
    for (int i = 0; i < 4; i++) {
        if (p[i] == 0) {
            if (q[i] < 0) return false;
            continue;
        }
        double t = q[i] / p[i];
        if (p[i] < 0) { if (t > t1) return false; if (t > t0) t0 = t; }
        else { if (t < t0) return false; if (t < t1) t1 = t; }
    }
    return t0 <= t1;
}

/* A label box is free when it covers no drawn curve or point and no label placed before it. */
static bool box_free(const svg_chart *c, const label_box *b) {
    for (size_t i = 0; i < c->n_lab; i++) if (boxes_overlap(b, &c->lab[i])) return false;
    for (size_t i = 0; i < c->n_seg; i++) if (seg_hits_box(&c->seg[i], b)) return false;
    return true;
}

static void note_label(svg_chart *c, const label_box *b) {
    if (c->n_lab < SVG_MAX_LABELS) c->lab[c->n_lab++] = *b;
}

/* Each label goes to the first of a few places around its point (right, left, above, below, then
 * farther up or down) where it overlaps no label already placed and stays inside the plot; a label
 * moved away from its point gets a thin leader line. A label with no free place is left out rather
 * than drawn over another (the tables below a chart carry every name). */
void svg_point_labels(svg_chart *c, const double *x, const double *y, const char *const *labels, size_t n) {
    rb_puts(c->out, "<g class=\"plabel\">");
    static const struct { double dx, dy; bool left; } spots[] = {
        { 5, -5, false }, { -5, -5, true }, { 5, 13, false }, { -5, 13, true },
        { 5, -18, false }, { -5, -18, true }, { 5, 26, false }, { -5, 26, true },
        { 5, -31, false }, { -5, -31, true }, { 5, 39, false }, { -5, 39, true },
    };
    for (size_t i = 0; i < n; i++) {
        if (!finite_pt(c, x[i], y[i]) || !labels[i] || !*labels[i]) continue;
        double px = svg_px(c, x[i]), py = svg_py(c, y[i]);
        double w = 5.6 * (double)strlen(labels[i]) + 2;
        int chosen = -1;
        label_box box = { 0, 0, 0, 0 };
        for (size_t k = 0; k < sizeof spots / sizeof spots[0] && chosen < 0; k++) {
            double tx = px + spots[k].dx, ty = py + spots[k].dy;
            box = (label_box){ spots[k].left ? tx - w : tx, ty - 10, spots[k].left ? tx : tx + w, ty + 2 };
            if (box.x0 < c->ml || box.x1 > c->w - c->mr + 2 || box.y0 < c->mt - 2 || box.y1 > c->h - c->mb) continue;
            if (box_free(c, &box)) chosen = (int)k;
        }
        if (chosen < 0 || c->n_lab == SVG_MAX_LABELS) continue;
        note_label(c, &box);
        double tx = px + spots[chosen].dx, ty = py + spots[chosen].dy;
        if (chosen >= 4)
            rb_printf(c->out, "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", px, py, tx, ty - 4);
        rb_printf(c->out, "<text x=\"%.1f\" y=\"%.1f\"%s>", tx, ty, spots[chosen].left ? " text-anchor=\"end\"" : "");
        rb_esc(c->out, labels[i]);
        rb_puts(c->out, "</text>");
    }
    rb_puts(c->out, "</g>");
}

void svg_vrule(svg_chart *c, double x, const char *cls, const char *label, double label_at) {
    if (!finite_pt(c, x, c->y.kind == AXIS_LOG ? c->y.lo : 0)) return;
    double px = svg_px(c, x);
    rb_puts(c->out, "<g class=\"rule ");
    rb_esc(c->out, cls);
    rb_printf(c->out, "\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", px, c->mt, px, c->h - c->mb);
    if (label) {
        /* on the side with more room at the height asked for; where that covers a curve or a
         * label, the first free height on either side */
        bool left = px > c->ml + (c->w - c->ml - c->mr) * 0.7;
        double w = 6.2 * (double)strlen(label) + 2, span = c->h - c->mb - 8 - c->mt - 12, y = 0;
        static const double at[] = { -1, 0, 1, 0.15, 0.85, 0.3, 0.7, 0.45, 0.55 };
        bool found = false;
        for (size_t k = 0; k < 2 * (sizeof at / sizeof at[0]) && !found; k++) {
            bool l = (k % 2) ? !left : left;
            size_t slot = k / 2;   /* each height is tried on both sides of the point */
            double f = at[slot] < 0 ? label_at : at[slot];
            double ty = c->mt + 12 + f * span, tx = l ? px - 4 : px + 4;
            label_box box = { l ? tx - w : tx, ty - 11, l ? tx : tx + w, ty + 2 };
            if (box.x0 < c->ml || box.x1 > c->w - c->mr + 2) continue;
            if (box_free(c, &box)) { found = true; left = l; y = ty; note_label(c, &box); }
        }
        if (!found) y = c->mt + 12 + label_at * span;
        rb_printf(c->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", left ? px - 4 : px + 4, y, left ? "end" : "start");
        rb_esc(c->out, label);
        rb_puts(c->out, "</text>");
    }
    rb_puts(c->out, "</g>");
}

void svg_hrule(svg_chart *c, double y, const char *cls, const char *label) {
    if (!finite_pt(c, c->x.kind == AXIS_LOG ? c->x.lo : 0, y)) return;
    double py = svg_py(c, y);
    if (py < c->mt - 1 || py > c->h - c->mb + 1) return;   /* off the plot: no rule */
    rb_puts(c->out, "<g class=\"rule ");
    rb_esc(c->out, cls);
    rb_printf(c->out, "\"><line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\"/>", c->ml, py, c->w - c->mr, py);
    if (label) {
        /* at the right end above the rule (below it when it runs along the top); where that
         * covers a curve or a label, below it, then at the left end */
        double w = 6.2 * (double)strlen(label) + 2, tx = c->w - c->mr - 4, ty = py - 14 < c->mt ? py + 13 : py - 4;
        bool end = true;
        const double ys[] = { ty, py - 14 < c->mt ? py - 4 : py + 13 };
        for (int k = 0; k < 4; k++) {
            double x = k < 2 ? c->w - c->mr - 4 : c->ml + 4, y = ys[k % 2];
            label_box box = { k < 2 ? x - w : x, y - 11, k < 2 ? x : x + w, y + 2 };
            if (box.y0 < c->mt - 2 || box.y1 > c->h - c->mb + 2 || !box_free(c, &box)) continue;
            tx = x, ty = y, end = k < 2;
            note_label(c, &box);
            break;
        }
        rb_printf(c->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", tx, ty, end ? "end" : "start");
        rb_esc(c->out, label);
        rb_puts(c->out, "</text>");
    }
    rb_puts(c->out, "</g>");
}

void svg_xband(svg_chart *c, double x0, double x1, const char *cls, const char *label) {
    double p0 = svg_px(c, x0), p1 = svg_px(c, x1);
    if (!isfinite(p0) || !isfinite(p1) || p1 <= p0) return;
    rb_puts(c->out, "<g class=\"band ");
    rb_esc(c->out, cls);
    rb_printf(c->out, "\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\"/>", p0, c->mt, p1 - p0,
              c->h - c->mt - c->mb);
    if (label) {
        /* anchored inside the band's right edge, so a narrow band at the plot edge keeps its text */
        rb_printf(c->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"end\">", p1 - 4, c->mt + 12);
        rb_esc(c->out, label);
        rb_puts(c->out, "</text>");
    }
    rb_puts(c->out, "</g>");
}

void svg_legend(svg_chart *c, const char *const *cls, const char *const *text, size_t n) {
    /* drawn outside the clip group: close it, draw, reopen with the same clip */
    double x = c->ml;
    rb_puts(c->out, "</g><g class=\"legend\">");
    for (size_t i = 0; i < n; i++) {
        rb_printf(c->out, "<path class=\"s ");
        rb_esc(c->out, cls[i]);
        rb_printf(c->out, "\" d=\"M%.1f %.1fh18\"/><text x=\"%.1f\" y=\"%.1f\">", x, c->mt - 13.0, x + 22, c->mt - 9.5);
        rb_esc(c->out, text[i]);
        rb_puts(c->out, "</text>");
        x += 34 + 6.2 * (double)strlen(text[i]);
    }
    rb_printf(c->out, "</g><g clip-path=\"url(#cp%zu)\">", c->clip_id);
}

void svg_bar(svg_chart *c, double x, double width_px, double y0, double y1, const char *cls, const char *title) {
    double px = svg_px(c, x), p0 = svg_py(c, y0), p1 = svg_py(c, y1);
    if (!isfinite(px) || !isfinite(p0) || !isfinite(p1) || p0 <= p1) return;
    rb_puts(c->out, "<rect class=\"bar ");
    rb_esc(c->out, cls);
    rb_printf(c->out, "\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\">", px - width_px / 2, p1, width_px, p0 - p1);
    if (title) {
        rb_puts(c->out, "<title>");
        rb_esc(c->out, title);
        rb_puts(c->out, "</title>");
    }
    rb_puts(c->out, "</rect>");
}

void svg_x_labels(svg_chart *c, const double *x, const char *const *labels, size_t n) {
    /* every k-th label when they would overlap (about 6.2 px per character at 11 px) */
    size_t longest = 1;
    for (size_t i = 0; i < n; i++) if (labels[i] && strlen(labels[i]) > longest) longest = strlen(labels[i]);
    double room = n > 1 ? fabs(svg_px(c, x[1]) - svg_px(c, x[0])) : c->w;
    size_t every = (size_t)ceil((6.2 * (double)longest + 6) / (room > 1 ? room : 1));
    if (every < 1) every = 1;
    rb_puts(c->out, "</g><g class=\"axis\">");
    for (size_t i = 0; i < n; i += every) {
        rb_printf(c->out, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", svg_px(c, x[i]), c->h - c->mb + 15);
        rb_esc(c->out, labels[i]);
        rb_puts(c->out, "</text>");
    }
    rb_printf(c->out, "</g><g clip-path=\"url(#cp%zu)\">", c->clip_id);
}
