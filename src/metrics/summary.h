/* summary — statistics over a run's records, exactly as product.md section 3 defines them:
 * TTFT, TPOT, ITL (chunk view and per-token view), E2EL, queue time, latency from schedule,
 * throughputs, goodput under SLOs, failure classes, error-adjusted percentiles, the per-second
 * timeline, peak tokens/s, achieved vs intended rate, and whether the client fell behind.
 * Request-level percentiles are exact over stored samples (numpy "linear" interpolation); pooled
 * ITL comes from an HDR histogram (<= 1% relative error). */
#ifndef DSP_SUMMARY_H
#define DSP_SUMMARY_H
#include "metrics/record.h"
#include "metrics/hdr.h"
#include "metrics/stats.h"
#include <jansson.h>
#include <stdbool.h>

#define SUMMARY_MAX_PERCENTILES 16

typedef struct {
    double slo_ttft_ms;        /* <= 0: no SLO on TTFT */
    double slo_tpot_ms;
    double slo_e2el_ms;
    double slo_ttfa_ms;        /* time to the first answer token (reasoning models; request_metrics.h) */
    double percentiles[SUMMARY_MAX_PERCENTILES];  /* e.g. 50, 90, 95, 99, 99.9 */
    int n_percentiles;
    double intended_rate_per_s;  /* open loop: the planned rate; 0 for closed loop */
    int64_t planned_duration_ns; /* open loop: span of the plan's schedule (0 unknown) */
    int max_concurrency;         /* the --max-concurrency cap in force (0 none): a client queue
                                  * it explains is reported as capped, not as client lag */
    int session_turns;           /* multi-turn sessions: turns per conversation (0: none) */
} summary_opts;

void summary_default_opts(summary_opts *o);
/* Parses "50,90,99,99.9" into o->percentiles. 0 ok, -1 malformed or out of (0,100]. */
int summary_parse_percentiles(summary_opts *o, const char *list);
/* Parses SLOs "ttft=200ms,tpot=50ms,e2el=10s,ttfa=5s" (any subset, durations with units) into o.
 * 0 ok, -1 malformed (o may be partly set). */
int summary_parse_slo(summary_opts *o, const char *spec);

/* Computes every metric over the non-warm-up records and returns them as a JSON object with
 * vLLM's field names (completed, failed, duration, request_throughput, output_throughput,
 * mean_ttft_ms, median_ttft_ms, std_ttft_ms, p99_ttft_ms, ...) plus dsperf's additions
 * (mean_queue_ms, p99_ttft_from_schedule_ms, errors{...}, timeline{...}, ...).
 * NULL on out-of-memory. */
json_t *summary_compute(const recset *recs, const summary_opts *o);

/* One family of the results' "samples" (a sample set, sampleset.h, as summary_compute writes it)
 * from per-request values: latencies in ms with scale NS_PER_MS (the set is in ns), token counts
 * with scale 1. For documents built from another tool's per-request lists (the history's vLLM
 * import). JSON null on out of memory. */
json_t *summary_samples_family(const double *v, size_t n, double scale);

/* ---- a run measured in parts (the processes of a multi-host job, src/dist) ----
 * Each part keeps its records' chunk arrays; the whole run's summary needs from them only the
 * pooled ITL histograms (which merge bucket by bucket) and the output tokens per second of the
 * timeline (which add bin by bin on one time axis, from the run's first send), so the records
 * can travel without their chunks. summary_compute uses the same functions, so a summary of the
 * merged records with their merged parts equals the one a single process would compute. */
typedef struct {
    hdr_hist *itl, *itl_tok;        /* pooled ITL, chunk view and per-token view (ns) */
    uint64_t multi_token_chunks;    /* later chunks carrying m > 1 tokens */
    long *tokens;                   /* output tokens per 1 s bin from first_send_ns [n_bins] */
    size_t n_bins;
    int64_t first_send_ns;
} summary_parts;

/* The timeline's axis over the measured (non-warm-up) records of class_id (-1: every class):
 * the first send and the number of 1 s bins up to the last end. 0 bins when nothing was sent. */
void summary_axis(const recset *recs, int class_id, int64_t *first_send_ns, size_t *n_bins);
/* Adds the chunks of recs' measured successful records of class_id (-1: all) into p: their
 * gaps into p->itl/itl_tok (when set) and their tokens into p->tokens (when set). */
void summary_parts_add(summary_parts *p, const recset *recs, int class_id);
/* summary_compute with the chunk-level inputs taken from parts instead of the records' chunk
 * arrays (which are not read: records may carry n_chunks without them). NULL parts: as
 * summary_compute. NULL on out-of-memory. */
json_t *summary_compute_parts(const recset *recs, const summary_opts *o, const summary_parts *parts);

/* mean_/median_/std_/min_/max_/p{P}_{name}_ms of exact samples in ms into obj (sorts s), as the
 * summary writes TTFT; JSON null for an empty set. For the summary's sections in other files. */
void summary_emit_exact(json_t *obj, const char *name, stats_samples *s, const summary_opts *o);

/* vLLM's spelling of a percentile in field names and labels: integral values without a
 * decimal point ("99"), others in the shortest form that reads back exactly ("99.9"). */
void summary_percentile_label(double p, char *buf, size_t len);

/* The fewest samples for which the p-th percentile is more than the largest sample relabelled:
 * 100 / (100 - p), rounded up (p99: 100, p99.9: 1000, p90: 10). With fewer, a "p99" is the
 * maximum, and is shown marked as such. */
long summary_percentile_samples_needed(double p);
#endif
