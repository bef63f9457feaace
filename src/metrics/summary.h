/* summary — statistics over a run's records, exactly as product.md section 3 defines them:
 * TTFT, TPOT, ITL (chunk view and per-token view), E2EL, queue time, latency from schedule,
 * throughputs, goodput under SLOs, failure classes, error-adjusted percentiles, the per-second
 * timeline, peak tokens/s, achieved vs intended rate, and whether the client fell behind.
 * Request-level percentiles are exact over stored samples (numpy "linear" interpolation); pooled
 * ITL comes from an HDR histogram (<= 1% relative error). */
#ifndef DSP_SUMMARY_H
#define DSP_SUMMARY_H
#include "metrics/record.h"
#include <jansson.h>
#include <stdbool.h>

#define SUMMARY_MAX_PERCENTILES 16

typedef struct {
    double slo_ttft_ms;        /* <= 0: no SLO on TTFT */
    double slo_tpot_ms;
    double slo_e2el_ms;
    double percentiles[SUMMARY_MAX_PERCENTILES];  /* e.g. 50, 90, 95, 99, 99.9 */
    int n_percentiles;
    double intended_rate_per_s;  /* open loop: the planned rate; 0 for closed loop */
    int64_t planned_duration_ns; /* open loop: span of the plan's schedule (0 unknown) */
    int max_concurrency;         /* the --max-concurrency cap in force (0 none): a client queue
                                  * it explains is reported as capped, not as client lag */
} summary_opts;

void summary_default_opts(summary_opts *o);
/* Parses "50,90,99,99.9" into o->percentiles. 0 ok, -1 malformed or out of (0,100]. */
int summary_parse_percentiles(summary_opts *o, const char *list);
/* Parses SLOs "ttft=200ms,tpot=50ms,e2el=10s" (any subset, durations with units) into o.
 * 0 ok, -1 malformed (o may be partly set). */
int summary_parse_slo(summary_opts *o, const char *spec);

/* Computes every metric over the non-warm-up records and returns them as a JSON object with
 * vLLM's field names (completed, failed, duration, request_throughput, output_throughput,
 * mean_ttft_ms, median_ttft_ms, std_ttft_ms, p99_ttft_ms, ...) plus dsperf's additions
 * (mean_queue_ms, p99_ttft_from_schedule_ms, errors{...}, timeline{...}, ...).
 * NULL on out-of-memory. */
json_t *summary_compute(const recset *recs, const summary_opts *o);

/* One family of the results' "samples" ({"values": µs ascending, "n", "method"}) from per-request
 * values in ms, as summary_compute writes it (every value up to 2,000, else 2,000 evenly spaced
 * quantiles): for documents built from another tool's per-request lists. Sorts ms in place. */
json_t *summary_samples_family(double *ms, size_t n);

/* vLLM's spelling of a percentile in field names and labels: integral values without a
 * decimal point ("99"), others in the shortest form that reads back exactly ("99.9"). */
void summary_percentile_label(double p, char *buf, size_t len);
#endif
