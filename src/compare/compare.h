/* compare — a baseline run against a candidate run (two dsperf.results/1 documents): every metric
 * side by side with its change, a confidence interval of the change from the runs' samples, sized
 * by each run's n (so noise is told from change), a Mann–Whitney p-value for the distribution, and a
 * verdict; then `--gate` rules that decide pass or fail for a pipeline. A metric whose meaning
 * depends on a setting the runs differ in is refused (compare_config.c). The output is a
 * dsperf.compare/1 document, printed as a table or Markdown. */
#ifndef DSP_COMPARE_H
#define DSP_COMPARE_H
#include "metrics/infer.h"
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define COMPARE_SCHEMA "dsperf.compare/1"

typedef enum {
    GATE_RISE_PCT,    /* metric:+X%   fails when the metric rises by more than X %  (and not by noise) */
    GATE_FALL_PCT,    /* metric:-X%   fails when it falls by more than X %          (and not by noise) */
    GATE_RISE_ABS,    /* metric:+X    fails when it rises by more than X, in its unit (and not by noise) */
    GATE_FALL_ABS,    /* metric:-X    fails when it falls by more than X             (and not by noise) */
    GATE_MAX,         /* metric:X or metric:<=X   fails when the candidate is above X */
    GATE_MIN,         /* metric:>=X               fails when the candidate is below X */
} gate_kind;

typedef struct {
    char metric[64];
    gate_kind kind;
    double value;
    char text[96];    /* the rule as written */
} gate_rule;

/* Parses comma-separated rules ("p99_ttft_ms:+10%,output_throughput:-5%,errors:0") and appends
 * them to rules[*n..max). 0 ok, -1 with a one-line err naming the bad rule. Metric names are
 * checked when the runs are compared (they depend on the runs' percentiles). */
int compare_parse_rules(const char *spec, gate_rule *rules, int max, int *n, char *err, size_t errlen);

typedef struct {
    double confidence;             /* of the intervals (0.95) */
    double min_effect_pct;         /* a significant change smaller than this is "negligible" (1 %) */
    int resamples;                 /* bootstrap rounds (2000) */
    uint64_t seed;                 /* bootstrap rng (1) */
    const gate_rule *rules;
    int n_rules;
    const char *const *metrics;    /* metrics to show (NULL: a default set); rule metrics are added */
    int n_metrics;
    bool allow_config_change;      /* compare metrics whose meaning depends on a setting that differs */
    const char *baseline_path, *candidate_path;   /* for the document only */
} compare_opts;

void compare_default_opts(compare_opts *o);

/* Compares two results documents. Returns the dsperf.compare/1 document, or NULL with a one-line
 * err when a rule names a metric neither run has (a usage error). doc.gate.passed is false when any
 * rule failed or could not be evaluated, or the candidate is partial. */
json_t *compare_runs(const json_t *base, const json_t *cand, const compare_opts *o, char *err, size_t errlen);

/* Compares two sweeps (dsperf.sweep/1) of the same axis: the headline numbers (knee_load,
 * knee_output_throughput, peak_output_throughput, max_goodput, max_goodput_load,
 * slo_boundary_load; points only) and, at every load both swept, the levels' results as
 * compare_runs does. A rule on a headline name is checked once; any other rule at every common
 * level, failing if it fails at any. NULL with err when the axes differ, no load is common, or a
 * rule names a metric no level has. */
json_t *compare_sweeps(const json_t *base, const json_t *cand, const compare_opts *o, char *err, size_t errlen);

/* Prints either document: a table (markdown false) or GitHub-flavoured Markdown. */
void compare_print(FILE *f, const json_t *doc, bool markdown);

/* ---- compare's reading of a results document, for other readers (the history) ---- */

/* +1 higher is better (throughputs, goodput), -1 lower is better (latencies, errors), 0 unknown. */
int compare_metric_direction(const char *metric);
/* A sweep's headline number (knee_load, knee_output_throughput, peak_output_throughput,
 * max_goodput, max_goodput_load, slo_boundary_load) as compare_sweeps reads it; NAN otherwise. */
double compare_sweep_headline(const json_t *sweep, const char *name);

/* The samples compare tests a metric with, as a sample set: a latency statistic's every
 * per-request sample (ns; an older file's 2,000 quantiles each standing for n / 2,000 samples), or
 * a throughput's interior per-second values (tokens or requests in each second). */
typedef struct {
    infer_stat stat;
    double param;        /* the percentile for INFER_PERCENTILE */
    double unit;         /* the metric's unit per set unit: 1e-6 for latencies (ns -> ms), 1 for throughputs */
    bool quantiles;      /* from an older file's quantiles */
    sampleset set;
} compare_samples;
/* 0 with out->set filled (compare_samples_free it), -1 when the document has no samples for this
 * metric (out->set empty). */
int compare_metric_samples_of(const json_t *doc, const char *metric, compare_samples *out);
void compare_samples_free(compare_samples *s);
#endif
