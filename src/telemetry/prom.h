/* prom — a parser of the Prometheus text exposition format (version 0.0.4, and the parts of
 * OpenMetrics text that servers emit in practice): comments, # HELP / # TYPE, samples with labels
 * (escapes \\ \" \n), float values incl. +Inf/-Inf/NaN, optional timestamps. Histograms and
 * summaries arrive as their _bucket/_sum/_count/quantile samples; lookups take care of the
 * `_total` suffix that counters carry in one format and not the other.
 * Malformed lines are counted and skipped, so one odd exporter line never hides the rest. */
#ifndef DSP_PROM_H
#define DSP_PROM_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef enum { PROM_UNTYPED = 0, PROM_COUNTER, PROM_GAUGE, PROM_HISTOGRAM, PROM_SUMMARY } prom_type;

typedef struct {
    char *name;
    int n_labels;
    char **label_names;
    char **label_values;      /* unescaped */
    double value;
    bool has_timestamp;
    int64_t timestamp_ms;
} prom_sample;

typedef struct {
    char *name;
    prom_type type;
    char *help;               /* unescaped; NULL when absent */
} prom_family;

typedef struct {
    prom_sample *samples;
    size_t n_samples, cap_samples;
    prom_family *families;
    size_t n_families, cap_families;
    int bad_lines;            /* lines that could not be parsed (skipped) */
} prom_doc;

/* Parses text into doc (which it initialises). Returns 0, or -1 on allocation failure only;
 * unparseable lines are counted in doc->bad_lines. Free with prom_doc_free. */
int prom_parse(const char *text, size_t len, prom_doc *doc);
/* The same, with flags: PROM_SKIP_BUCKETS drops histogram _bucket samples unparsed (the scraper
 * only needs _sum/_count, and buckets are most of a vLLM page). */
#define PROM_SKIP_BUCKETS 1
int prom_parse_flags(const char *text, size_t len, prom_doc *doc, int flags);
void prom_doc_free(prom_doc *doc);

/* Value of a label of a sample, or NULL. */
const char *prom_label(const prom_sample *s, const char *name);
/* TYPE declared for a metric family name (the base name, without _bucket/_sum/_count/_total). */
prom_type prom_family_type(const prom_doc *doc, const char *name);

/* Sum of the values of every sample called `name` (and, for counters, `name_total` or name
 * without `_total`) whose labels include label=value (label NULL: any). Returns the number of
 * samples summed; 0 means the series is absent (unknown), not zero. */
int prom_sum(const prom_doc *doc, const char *name, const char *label, const char *value, double *out);

/* Histogram/summary totals: sum of name_sum and name_count over matching samples.
 * Returns 0 when either is absent. */
int prom_hist_totals(const prom_doc *doc, const char *name, const char *label, const char *value,
                     double *sum, double *count);
#endif
