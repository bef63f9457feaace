/* telemetry — the sampler thread that records GPU (NVML/GPM), host and server (/metrics)
 * series on the same monotonic clock as the request records (clock_now_ns), so a report can
 * draw them under the latency timeline and diagnosis can correlate them with phases of a run.
 * JSON layout: src/telemetry/README.md. Unknown values are null, never zero. */
#ifndef DSP_TELEMETRY_H
#define DSP_TELEMETRY_H
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct {
    const char *gpus;               /* NULL: no GPU sampling; "all"; or indices "0,1" (--gpu-ids) */
    const char *server_metrics_url; /* NULL: no scraping; else http(s)://host:port/metrics */
    bool host;                      /* CPU, memory, load, NUMA placement */
    int server_pid;                 /* > 0: also CPU/RSS/NUMA of this process */
    int64_t interval_ns;            /* default 100 ms; at least 10 ms */
    int64_t scrape_timeout_ns;      /* default 500 ms */
} telemetry_opts;

typedef struct telemetry telemetry;

void telemetry_default_opts(telemetry_opts *o);
/* Validates the options and starts the thread. NULL + err on bad options (malformed GPU list,
 * GPU index not present, bad URL, no such pid, interval < 10 ms). A missing NVML is a warning
 * (telemetry_warning, and log_warn once), not an error: host and server sampling go on. */
telemetry *telemetry_start(const telemetry_opts *o, char *err, size_t errlen);
/* Stops and joins the thread (idempotent). Series stay readable. */
void telemetry_stop(telemetry *t);
/* One line about what could not be sampled (e.g. no NVML), or NULL. */
const char *telemetry_warning(const telemetry *t);
/* Series with times in seconds relative to t0_ns; new reference, caller decrefs. */
json_t *telemetry_series_json(const telemetry *t, int64_t t0_ns);
/* Per-run summary over samples with from_ns <= t <= to_ns: mean/max GPU, SM, tensor and DRAM
 * utilisation, power, energy (and per output token when output_tokens > 0), max KV usage,
 * preemptions, host CPU. New reference. */
json_t *telemetry_summary_json(const telemetry *t, int64_t from_ns, int64_t to_ns, double output_tokens);
void telemetry_free(telemetry *t);

/* ---- many nodes (one job over many hosts, src/dist) ----
 * One node's series and summary (telemetry_series_json / telemetry_summary_json, their times
 * already on the job's clock), labelled with the host and the rank that sampled it. */
typedef struct {
    const char *host;
    int rank;
    const json_t *series, *summary;   /* either may be NULL */
} telemetry_node;
/* The job's series: every node's GPUs in one "gpu" array (each labelled "host" and "rank"), the
 * first node's "host" and "server" sections, every node's host section under "hosts", and per
 * node its sampler and warning under "nodes". New reference. */
json_t *telemetry_merge_series(const telemetry_node *nodes, int n);
/* The job's summary: every GPU's entry (labelled), means over all GPUs, power and energy summed,
 * a per-node view ("nodes"), and with two or more GPUs the slowest one ("slowest_gpu": the lowest
 * mean SM clock when the clocks differ by 2% or more, else the busiest). New reference. */
json_t *telemetry_merge_summary(const telemetry_node *nodes, int n, double output_tokens);

/* "all" (*all set, 0 returned) or distinct indices "0,1,3" (at most max, each below 64) into idx;
 * the count, or -1 when malformed. */
int telemetry_parse_gpu_list(const char *s, int *idx, int max, bool *all);
#endif
