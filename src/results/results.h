/* results — the results file (schema "dsperf.results/1") and the terminal summary. The file holds
 * the exact command line, tool version, environment, config, summary metrics (vLLM-compatible
 * names at the top level), per-second timeline, and any telemetry/engine series a producer adds.
 * Everything downstream (report, diagnose, compare) reads this file, never the run's memory. */
#ifndef DSP_RESULTS_H
#define DSP_RESULTS_H
#include "metrics/record.h"
#include "metrics/summary.h"
#include <jansson.h>
#include <stdio.h>
#include <stdbool.h>

#define RESULTS_SCHEMA "dsperf.results/1"

typedef struct {
    const char *producer;       /* "bench" or "sim" */
    const char *command_line;   /* exact command line */
    json_t *config;             /* borrowed: the run's configuration (target, load, dataset, ...) */
    bool partial;               /* the run was interrupted; what was measured is kept */
    const char *partial_reason; /* e.g. "interrupted (SIGINT)" */
    const summary_parts *parts; /* a multi-host run: chunk-level parts merged from the ranks (NULL: from recs) */
} results_meta;

/* Builds the results document: summary_compute() over recs plus schema, meta and environment.
 * The caller may add sections (e.g. "telemetry", "engine") before writing. NULL on OOM. */
json_t *results_build(const recset *recs, const summary_opts *o, const results_meta *m);
/* "error_examples": per failure class (and HTTP status) its count and its most common message
 * (with how many carry it and the earliest such request), largest class first
 * ([{"class","status"?,"count","message","message_count","first_request"}]). */
json_t *results_error_examples(const recset *recs);
/* environment.gpus from the run's telemetry (telemetry.gpu: index, name, uuid, memory of each GPU
 * the sampler saw); left empty when the run sampled none. */
void results_env_gpus_from_telemetry(json_t *results);
/* Writes the document atomically (pretty-printed). 0 ok, -1 with err filled. */
int results_write_json(const char *path, const json_t *results, char *err, size_t errlen);
/* Writes one JSON line per request with every timestamp (ns, relative to the first send) and
 * chunk arrivals. Atomic. 0 ok, -1 with err filled. */
int results_write_requests_jsonl(const char *path, const recset *recs, char *err, size_t errlen);
/* Reads a per-request JSONL (results_write_requests_jsonl's lines, any dsperf version) back into
 * records, so that whatever reads it computes each request's metrics with request_metrics.h, the
 * one definition. Times in the file are relative to the run's first send (and may be negative for
 * a schedule before it); records get them shifted by *t0_ns (> 0) so that 0 keeps meaning "did
 * not happen". Every line is kept, warm-up included (record.warmup). 0 ok, -1 with err filled
 * (unreadable file, out of memory; "FILE:LINE: ..." for a line that is not a request object). */
int results_read_requests_jsonl(const char *path, recset *out, int64_t *t0_ns, char *err, size_t errlen);
/* Reads and checks a results file (schema prefix "dsperf.results/"). NULL with err filled. */
json_t *results_load(const char *path, char *err, size_t errlen);
/* Reads any dsperf document whose "schema" starts with one of the NULL-terminated prefixes
 * (e.g. "dsperf.results/", "dsperf.sweep/"); `what` names it in the message ("results or sweep").
 * NULL with a one-line err (unreadable, not JSON with line number, wrong schema). */
json_t *results_load_doc(const char *path, const char *const *schema_prefixes, const char *what, char *err, size_t errlen);
/* The compact summary table, vLLM's 40/10 "Serving Benchmark Result" block layout, from a
 * results document (so bench and sim print the same thing). */
void results_print_summary(FILE *f, const json_t *results);
#endif
