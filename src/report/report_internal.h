/* report_internal — what the report's files share: a growable text buffer with HTML escaping,
 * number formatting, SVG chart primitives (axes with nice ticks, lines, points, rules), and the
 * "view model" that flattens a results or sweep document into load levels. Not for other modules. */
#ifndef DSP_REPORT_INTERNAL_H
#define DSP_REPORT_INTERNAL_H
#include "report/report.h"
#include <stdbool.h>
#include <stddef.h>

/* ---- text buffer (rbuf.c) ---- */

typedef struct {
    char *p;
    size_t len, cap;
    bool oom;                    /* a failed allocation: later writes are dropped, the writer reports it */
} rbuf;

void rb_init(rbuf *b);
void rb_free(rbuf *b);
/* Writes the buffer to f and frees it. 0 ok, -1 with err (out of memory while building, write error). */
int rb_write(rbuf *b, FILE *f, char *err, size_t errlen);
void rb_puts(rbuf *b, const char *s);
void rb_putn(rbuf *b, const char *s, size_t n);
void rb_printf(rbuf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s with & < > " ' replaced by entities (safe in text and in quoted attributes). NULL writes nothing. */
void rb_esc(rbuf *b, const char *s);
/* Markdown table cell: | and newlines neutralised, HTML-significant characters escaped. */
void rb_md_cell(rbuf *b, const char *s);
/* CSV field (RFC 4180: quoted when it holds a comma, quote or newline). */
void rb_csv_field(rbuf *b, const char *s);

/* ---- number formatting (rbuf.c) ---- */

/* Human number with thousands separators and sensible precision: 3910 -> "3,910", 12.345 ->
 * "12.3", 0.0123 -> "0.0123"; NaN -> "n/a". */
void fmt_num(double v, char *buf, size_t len);
/* Compact tick label: 1500 -> "1.5k", 2e6 -> "2M", 0.25 -> "0.25". */
void fmt_tick(double v, char *buf, size_t len);
/* A percentage: 100 -> "100%", 3.4 -> "3.4%", 0.25 -> "0.25%". */
void fmt_pct(double pct, char *buf, size_t len);
/* A percentage for a column whose header says "%": 0.1 points of precision below 10 ("3.4",
 * "0.3"), whole points above; a share too small to read at that precision is "<0.1", not
 * "0.0195" (a number of significant digits the measurement does not carry); NaN -> "n/a". */
void fmt_pct_cell(double pct, char *buf, size_t len);
/* A duration in ms as a person reads it: 0.42 -> "0.42 ms", 262 -> "262 ms", 1517 -> "1.52 s". */
void fmt_ms(double ms, char *buf, size_t len);

/* ---- SVG charts (svg.c) ---- */

#define SVG_MAX_TICKS 24

typedef enum { AXIS_LINEAR, AXIS_LOG, AXIS_NINES } axis_kind;

typedef struct {
    axis_kind kind;
    double lo, hi;               /* data units (AXIS_NINES: "nines" n = -log10(1 - p/100)) */
    double ticks[SVG_MAX_TICKS];
    int n_ticks;
    const char *label;           /* with unit, e.g. "TTFT (ms, log)" */
} svg_axis;

/* Linear "nice" ticks (steps 1, 2, 2.5, 5 x 10^k) covering [lo, hi]; lo/hi are widened to the
 * outer ticks. At most max_ticks (>= 2). A degenerate range is widened around the value. */
void svg_axis_linear(svg_axis *a, double lo, double hi, int max_ticks);
/* Decades covering [lo, hi] (lo > 0); with fewer than 3 decades, 2x and 5x are added. */
void svg_axis_log(svg_axis *a, double lo, double hi);
/* Percentile axis for "nines" plots: 0%, 90%, 99%, ... up to max_nines. */
void svg_axis_nines(svg_axis *a, int max_nines);
/* Fits an axis to data: log when asked and all positive, else linear from 0 when include_zero. */
void svg_axis_fit(svg_axis *a, double lo, double hi, bool want_log, bool include_zero);
/* Position 0..1 of v along the axis (may fall outside for out-of-range v). */
double svg_axis_frac(const svg_axis *a, double v);
/* Tick text ("1.5k", "99.9%"). */
void svg_tick_label(const svg_axis *a, double v, char *buf, size_t len);

/* What a label must not cover: the curves and points drawn so far (px), the labels placed. */
#define SVG_MAX_SEGS 1024
#define SVG_MAX_LABELS 64
typedef struct { float x0, y0, x1, y1; } svg_seg;
typedef struct { double x0, y0, x1, y1; } svg_box;

typedef struct {
    rbuf *out;
    double w, h;                 /* px */
    double ml, mr, mt, mb;       /* plot-area margins */
    svg_axis x, y;
    size_t clip_id;              /* id of the plot-area clipPath (set by svg_begin) */
    svg_seg seg[SVG_MAX_SEGS];   /* lines and points drawn (a point is a segment of length 0) */
    size_t n_seg;
    svg_box lab[SVG_MAX_LABELS]; /* labels placed */
    size_t n_lab;
} svg_chart;

/* Every chart in a grid cell has this size, so that text and marks read at one scale; a chart
 * across the page (timelines) is SVG_WIDE_W wide. */
#define SVG_CHART_W 580
#define SVG_CHART_H 320
#define SVG_WIDE_W 1200

/* Opens <svg> with a title for screen readers, draws grid, ticks and axis labels. */
void svg_begin(svg_chart *c, rbuf *out, double w, double h, const char *aria_label);
void svg_end(svg_chart *c);
double svg_px(const svg_chart *c, double x);
double svg_py(const svg_chart *c, double y);
/* A line through the finite points (a gap at NaN); cls picks the colour/dash from the CSS. */
void svg_line(svg_chart *c, const double *x, const double *y, size_t n, const char *cls);
/* A shaded band between lo and hi along x (a noise band); a gap where either is NaN. */
void svg_area(svg_chart *c, const double *x, const double *lo, const double *hi, size_t n, const char *cls);
/* The same as a step line (value holds until the next x; the last for the previous width). */
void svg_steps(svg_chart *c, const double *x, const double *y, size_t n, const char *cls);
void svg_points(svg_chart *c, const double *x, const double *y, size_t n, const char *cls, double r);
/* Text beside each point (e.g. the load level). */
void svg_point_labels(svg_chart *c, const double *x, const double *y, const char *const *labels, size_t n);
/* Vertical / horizontal rules at a data value, with a short label; dashed by class. A vertical
 * rule's label sits at label_at of the plot height (0 top, 1 bottom). */
void svg_vrule(svg_chart *c, double x, const char *cls, const char *label, double label_at);
void svg_hrule(svg_chart *c, double y, const char *cls, const char *label);
/* A shaded band between two x values over the whole plot height. */
void svg_xband(svg_chart *c, double x0, double x1, const char *cls, const char *label);
/* A bar from y0 to y1 centred on x (stacked bars: one call per segment), with a hover title. */
void svg_bar(svg_chart *c, double x, double width_px, double y0, double y1, const char *cls, const char *title);
/* Category labels under the x axis (for bar charts whose x ticks are positions). */
void svg_x_labels(svg_chart *c, const double *x, const char *const *labels, size_t n);
/* A legend row above the plot: n entries of (class, text). */
void svg_legend(svg_chart *c, const char *const *cls, const char *const *text, size_t n);

/* ---- figure helpers shared by the chart builders (charts.c) ---- */

/* Widens [*lo, *hi] (NaN: unset) to the finite values of v. */
void chart_range_of(const double *v, size_t n, double *lo, double *hi);
/* <figure id> with a caption: title, "higher is better"-style hint, and a note (either may be NULL). */
void chart_fig_open(rbuf *b, const char *id, const char *title, const char *better, const char *note);
void chart_fig_close(rbuf *b);
/* Sets a->label to base, with ", log" inside its unit parenthesis on a log axis (buf holds it). */
void chart_axis_label_log(svg_axis *a, char *buf, size_t len, const char *base);

/* The page's head: doctype, meta, title, the inline CSS, and <h1> title, then an open
 * <div class="meta"> (html.c). */
void report_page_head(rbuf *b, const char *title);

/* ---- tune documents (tune_page.c) ---- */

/* dsperf.tune/1: the recommendation, the Pareto chart over every configuration's loads, and the
 * configuration table. 0 ok, -1 with err filled. */
int report_tune_html(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen);
int report_tune_markdown(FILE *f, const json_t *doc, char *err, size_t errlen);
/* One row per (configuration, load) point. */
int report_tune_csv(FILE *f, const json_t *doc, char *err, size_t errlen);
bool report_is_tune(const json_t *doc);

/* ---- drift documents (drift_page.c) ---- */

/* dsperf.drift/1: the verdict at the longest context, agreement / ΔPPL / KL against context length
 * with the noise floor, the per-context table and the gate. 0 ok, -1 with err filled. */
int report_drift_html(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen);
int report_drift_markdown(FILE *f, const json_t *doc, char *err, size_t errlen);
/* One row per context. */
int report_drift_csv(FILE *f, const json_t *doc, char *err, size_t errlen);
bool report_is_drift(const json_t *doc);

/* ---- view model (model.c) ---- */

typedef struct {
    double load;                 /* concurrency or request rate; NaN when unknown */
    const char *kind;            /* sweep level kind: "synchronous", "throughput" (auto mode), ... or NULL */
    int repeat;
    bool saturated, early_stopped, is_knee, is_max_goodput;
    bool measured;               /* false: the sweep could not measure it (requests outlast the level) */
    const json_t *r;             /* the level's results document (borrowed) */
    const json_t *level;         /* the sweep's level object (load, kind, over_saturation, ...) or NULL */
} rep_level;

typedef struct {
    const json_t *doc;
    bool sweep;
    const char *axis;            /* "concurrency" | "rate" | "input_len" | "output_len" */
    rep_level *lv;
    size_t n;
    const json_t *knee, *max_goodput;   /* sweep objects or NULL */
} rep_model;

/* Builds the model; -1 with err filled when the document is neither kind. */
int rep_model_init(rep_model *m, const json_t *doc, char *err, size_t errlen);
void rep_model_free(rep_model *m);
/* Number at key, NaN when absent or not a number. */
double rep_num(const json_t *r, const char *key);
/* The command that made the document, as the user would type it ("dsperf ..."; files written
 * before the command line carried the program name get it prepended), or NULL. When the target
 * was a loopback address (a server started beside dsperf for the run, its port long gone),
 * *loopback_url gets that URL, else NULL. The string is malloc'd. */
char *rep_command(const json_t *doc, const json_t *first_results, const char **loopback_url);
/* p{P}_{metric}_ms (P = 50 reads median_{metric}_ms when there is no p50). */
double rep_pct(const json_t *r, const char *metric, double p);
/* Goodput in output tokens/s: request_goodput x mean output tokens per completed request. */
double rep_goodput_tok_s(const json_t *r);
/* Failed / (completed + failed) in percent; NaN when no requests. */
double rep_error_pct(const json_t *r);
/* "c=32", "8/s", or "run" when the load is unknown. */
void rep_load_label(const rep_model *m, double load, char *buf, size_t len);
/* A level's label: the load, or "sync" / "max" for auto mode's anchor runs. */
void rep_level_label(const rep_model *m, const rep_level *l, char *buf, size_t len);
/* The sweep's confidence interval of a metric at a load ("ci" section); false when absent. */
bool rep_ci(const rep_model *m, double load, const char *metric, double *lo, double *hi, int *n);
/* The load of a single results document from its config (concurrency or rate). */
double rep_results_load(const json_t *r, const char **axis);
/* Mean / max of a numeric series array (nulls skipped); NaN when empty. */
double rep_series_mean(const json_t *arr);
double rep_series_max(const json_t *arr);
/* Mean of a GPU column over all GPUs in r's telemetry; NaN when absent. */
double rep_gpu_mean(const json_t *r, const char *column);
/* Peak KV usage in percent from server telemetry or the simulated engine; NaN when absent. */
double rep_kv_max_pct(const json_t *r);
/* The samples behind a percentile of metric ("ttft", "itl", ...): pooled gaps for ITL, else one per
 * completed request; -1 when the document does not say. */
long rep_pct_samples(const json_t *r, const char *metric);
/* A percentile p from fewer samples than it needs (summary_percentile_samples_needed): the largest
 * samples relabelled, marked wherever the report shows it. */
bool rep_pct_thin(const json_t *r, const char *metric, double p);
/* Which telemetry columns a per-level table shows: those some measured level has a value for. */
void rep_telemetry_columns(const rep_model *m, bool *gpu_util, bool *dram_bw, bool *kv_peak);
/* The SLO in ms for "ttft", "tpot", "e2el" from goodput_slo; NaN when none. */
double rep_slo_ms(const json_t *r, const char *metric);
/* Verdict sentence (plain text). */
void rep_verdict(const rep_model *m, const json_t *diagnosis, rbuf *out);

/* ---- per-request samples (requests.c) ---- */

struct report_requests {
    size_t n, n_ok, n_failed;
    double *send_s, *ttft_ms;    /* per successful request (x for the TTFT scatter) */
    double *ttft_sorted, *tpot_sorted, *e2el_sorted, *itl_sorted;   /* ms, ascending */
    size_t n_ttft, n_tpot, n_e2el, n_itl;
    char **first_error_class, **first_error_text;   /* first message per outcome class */
    size_t n_error_classes;
    /* every sent request, for the Gantt view: seconds from the first send; first NaN when no token */
    double *g_send, *g_first, *g_end;
    unsigned char *g_ok;
    size_t n_g;
};

/* The page's stylesheet (style.c). */
extern const char report_css[];

/* ---- sections shared by the writers ---- */
/* Chart blocks (charts.c): each appends a <figure> or nothing when the data is missing. */
void charts_saturation(rbuf *b, const rep_model *m);
void charts_latency_vs_throughput(rbuf *b, const rep_model *m, const char *metric, const char *name);
void charts_breakdown(rbuf *b, const rep_model *m);
void charts_nines(rbuf *b, const rep_model *m, const report_requests *rq, const char *metric, const char *name);
void charts_timeline(rbuf *b, const rep_model *m, const report_requests *rq, const json_t *diagnosis);
void charts_gantt(rbuf *b, const rep_model *m, const report_requests *rq);
void charts_errors(rbuf *b, const rep_model *m);
/* A sweep along context length: TTFT, TPOT, DRAM and KV against length, where it stops fitting,
 * the roofline beside it, and the table (charts_context.c); the stability fit of any sweep. */
void charts_context(rbuf *b, const rep_model *m);
void charts_stability(rbuf *b, const rep_model *m);
/* The same two views as Markdown sections (nothing when the document lacks them). */
void md_context_and_stability(rbuf *b, const rep_model *m);
/* Prefix-cache hit rates against the workload's bound, conversations by turn (cache_page.c). */
void report_cache_section(rbuf *b, const rep_model *m);
/* Reasoning vs answer, the server's side of each request, failed self-checks (phases_page.c). */
void report_phases_section(rbuf *b, const rep_model *m);
/* A run from many hosts, a deployment over many nodes or over several GPUs (deployment.c): ranks,
 * clocks, lost ranks, GPUs per node and the slowest, each GPU (per level of m's sweep; m may be
 * NULL: r alone); nothing for one process on one node with one GPU. r: the first results. */
void report_deployment(rbuf *b, const json_t *r, const rep_model *m);
#endif
