/* report — turns a saved results document ("dsperf.results/1", from bench or sim) or a sweep
 * document ("dsperf.sweep/1") into things people read: one self-contained HTML page (inline SVG
 * charts, no network, no script, light/dark and print friendly), a Markdown summary with the same
 * tables and findings, and a CSV with one row per load level. A `dsperf tune` document gets its own
 * page: the recommendation, the Pareto front and the configurations; a `dsperf drift` document one
 * of accuracy against context length. Works on saved files only. */
#ifndef DSP_REPORT_H
#define DSP_REPORT_H
#include <jansson.h>
#include <stdio.h>

typedef struct report_requests report_requests;   /* per-request samples from a JSONL file */

typedef struct {
    const char *title;              /* NULL: derived from the document (model, target) */
    const report_requests *requests;/* optional exact samples (single-run documents) */
    const json_t *diagnosis;        /* diagnose_run() output, or NULL: none shown */
    const char *source_name;        /* the input file name, shown in the footer */
} report_opts;

void report_default_opts(report_opts *o);

/* Loads a results, sweep or tune document (schema "dsperf.results/...", "dsperf.sweep/...",
 * "dsperf.tune/..."; the writers take any of them).
 * NULL with err filled. */
json_t *report_load(const char *path, char *err, size_t errlen);

/* Reads a per-request JSONL (`bench --save-requests`, `sim --save-requests`). Warm-up lines are
 * skipped. NULL with err filled (unreadable file, or a line that is not a JSON object). */
report_requests *report_requests_load(const char *path, char *err, size_t errlen);
void report_requests_free(report_requests *r);
size_t report_requests_count(const report_requests *r);

/* Deployment facts passed to diagnose (NULL/0: from the document), as `dsperf diagnose` takes them. */
typedef struct {
    const char *model, *gpu, *kv_dtype;
    int tp;
} report_deploy;

/* The findings to show: the document's own "findings" array (wrapped as {"findings": [...]},
 * with "roofline"/"checked" when present), else diagnose_run() over the document when diagnose is
 * linked in (deploy may be NULL), else NULL. Caller decrefs. */
json_t *report_diagnosis(const json_t *doc, const report_deploy *deploy);

/* Writers. 0 ok, -1 with err filled (bad document, out of memory, write error). */
int report_write_html(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen);
int report_write_markdown(FILE *f, const json_t *doc, const report_opts *o, char *err, size_t errlen);
int report_write_csv(FILE *f, const json_t *doc, char *err, size_t errlen);

/* A results history's trends (dsperf history / dsperf report --db): an array of
 * dsperf.history-trend/1 documents, one chart per metric (the runs, their noise bands, the
 * segments' levels and the change points), the change sentences and the runs' table. */
int report_trend_html(FILE *f, const json_t *trends, const report_opts *o, char *err, size_t errlen);
int report_trend_markdown(FILE *f, const json_t *trends, char *err, size_t errlen);
int report_trend_csv(FILE *f, const json_t *trends, char *err, size_t errlen);
#endif
