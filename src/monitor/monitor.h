/* monitor — continuous low-rate probing of a live endpoint, exported as Prometheus metrics.
 *
 * The probe loop sends one streamed request at a time on an open-loop schedule (poisson or
 * constant at --rate) through the same client bench uses, folds each finished record into
 * fixed-bucket histograms, counters and an SLO window ring, and recycles the record: memory does
 * not grow with run time (a few records, bounded by the in-flight cap, plus fixed-size tables).
 * An exporter thread with its own libevent loop answers GET /metrics and GET /health; it reads the
 * aggregates under one mutex, so a slow scraper never delays a probe's timing and a probe never
 * waits for a scrape longer than the copy of a few hundred counters.
 *
 * The pieces below (histogram, window ring, aggregate) are separate so they can be tested on
 * known sequences with injected times. */
#ifndef DSP_MONITOR_H
#define DSP_MONITOR_H
#include "client/client.h"
#include "common/stop.h"
#include "dataset/dataset.h"
#include "load/arrival.h"
#include "metrics/record.h"
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* ---- fixed-bucket histogram (Prometheus `le` buckets, seconds) ---- */

#define MON_MAX_BOUNDS 32

typedef struct {
    const double *bounds_s;             /* upper bounds, ascending (seconds) */
    int n_bounds;
    uint64_t counts[MON_MAX_BOUNDS + 1]; /* per bucket, not cumulative; [n_bounds] is (last, +Inf) */
    uint64_t count;
    double sum_s;
} mon_hist;

/* The bucket bounds of each latency histogram (documented in src/monitor/README.md). */
extern const double mon_ttft_bounds_s[];
extern const int mon_ttft_n_bounds;
extern const double mon_itl_bounds_s[];   /* ITL and TPOT */
extern const int mon_itl_n_bounds;
extern const double mon_e2el_bounds_s[];
extern const int mon_e2el_n_bounds;

void mon_hist_init(mon_hist *h, const double *bounds_s, int n_bounds);
/* A value on a bound falls into that bound's bucket (Prometheus `le` is <=). */
void mon_hist_observe(mon_hist *h, double v_s);
/* Writes the family: # HELP, # TYPE histogram, cumulative name_bucket{le=".."} lines ending
 * with le="+Inf", name_sum, name_count. */
void mon_hist_write(const mon_hist *h, const char *name, const char *help, FILE *f);

/* ---- SLO window ring: good/total probes per 10-second slot over the last 6 hours ---- */

#define MON_SLOT_NS (10LL * 1000000000LL)
#define MON_SLOTS 2160                    /* 6 h of 10 s slots */

typedef struct {
    int64_t slot[MON_SLOTS];              /* which slot number (t / MON_SLOT_NS) an entry holds; -1 none */
    uint32_t good[MON_SLOTS], total[MON_SLOTS];
} mon_window;

void mon_window_init(mon_window *w);
void mon_window_add(mon_window *w, int64_t now_ns, bool good);
/* Probes in the window of window_ns ending at now_ns, counted in whole slots: the current
 * (partial) slot and the window_ns / MON_SLOT_NS - 1 slots before it. */
void mon_window_sum(const mon_window *w, int64_t now_ns, int64_t window_ns, uint64_t *good, uint64_t *total);
/* (bad / total) / (1 - target): 1 spends the error budget exactly over the SLO period; NAN when
 * the window holds no probe. */
double mon_burn_rate(uint64_t good, uint64_t total, double target);

/* ---- per-probe latencies and the SLO verdict ---- */

typedef struct {
    double ttft_s, tpot_s, e2el_s;        /* thresholds; <= 0: not part of the SLO */
    double ttfa_s;                        /* time to the first answer token (reasoning; request_metrics.h) */
    double target;                        /* objective: fraction of good probes, in (0, 1) */
} mon_slo;

typedef struct {
    bool ok;                              /* completed (outcome REC_OK); metrics from request_metrics.h */
    double ttft_s, e2el_s, tpot_s;        /* NAN when not defined (tpot needs > 1 output token) */
    bool has_reasoning;                   /* the stream had a reasoning phase */
    double ttfa_s;                        /* its first answer token - send; NAN without one */
    int32_t out_tokens;
} mon_probe;

/* The definitions of product.md section 3 applied to one record. */
void mon_probe_measure(const record *r, mon_probe *p);
/* Good: completed (REC_OK) and within every threshold given (a probe with one output token
 * has no TPOT and passes that part). With no threshold the SLO is availability. */
bool mon_slo_good(const mon_slo *s, const mon_probe *p);

/* ---- the aggregate the exporter shows ---- */

typedef struct {
    pthread_mutex_t mu;                   /* guards everything below */
    mon_slo slo;
    mon_hist ttft, itl, tpot, e2el;
    mon_hist ttfa;                        /* probes with a reasoning phase and an answer (shown once there is one) */
    uint64_t outcomes[REC_OUTCOME_COUNT];
    uint64_t http_status[600];            /* outcome http, by status code (100..599) */
    uint64_t output_tokens;
    uint64_t slo_good, slo_total;
    mon_window win;
    bool have_last, have_last_ok;
    bool last_ok;
    double last_unix_s, last_ok_unix_s;   /* wall time of the last probe / last good completion */
    double last_ttft_s, last_e2el_s;      /* of the last completed probe */
    uint64_t skipped;                     /* due while the in-flight cap was reached; not sent */
    uint64_t in_flight;
    double rate_per_s;
    double start_unix_s;
    char *url, *model, *api;              /* for dsperf_monitor_info (owned) */
} mon_metrics;

void mon_metrics_init(mon_metrics *m, const mon_slo *slo, double rate_per_s, const char *url, const char *api);
void mon_metrics_free(mon_metrics *m);
void mon_metrics_set_model(mon_metrics *m, const char *model);
/* Folds one finished record, finished at now_ns (monotonic) / now_unix_s (wall). Cancelled
 * probes (stopped by us) are counted by outcome only, never in the SLO. Returns the verdict
 * (false for cancelled too). Takes the lock. */
bool mon_metrics_fold(mon_metrics *m, const record *r, int64_t now_ns, double now_unix_s);
/* The whole exposition at now_ns, as a malloc'd NUL-terminated text (*len its length). Takes the
 * lock. NULL on out-of-memory. */
char *mon_metrics_format(mon_metrics *m, int64_t now_ns, size_t *len);

/* ---- the probe loop ---- */

/* The probes that finished in one period (a copy, the callee's to read during the call), with the
 * period's wall-clock bounds (Unix s). Called from a thread of its own, so that summarising and
 * recording a period never delays a probe's measurement; periods are handed over one at a time. */
typedef void (*monitor_period_fn)(void *ctx, const recset *probes, double start_unix_s, double end_unix_s);

typedef struct {
    client_opts client;          /* client.model NULL: resolved by GET /v1/models, retried per probe */
    const dataset *ds;
    arrival arr;                 /* poisson or constant at arr.rate_per_s */
    uint64_t seed;
    size_t requests;             /* stop after this many probes (0: no bound) */
    int64_t duration_ns;         /* stop scheduling after this (0: no bound) */
    int max_in_flight;           /* probes due while this many are in flight are skipped */
    mon_slo slo;
    const char *listen_host;     /* exporter address */
    int listen_port;             /* 0: any free port (see monitor_port) */
    const char *log_path;        /* one JSON line per probe, appended (NULL: none) */
    int64_t period_ns;           /* > 0 with on_period: every period, its finished probes are handed over */
    size_t period_max_probes;    /* a period also ends after this many probes (0: 100,000): bounded memory */
    monitor_period_fn on_period;
    void *period_ctx;
} monitor_opts;

void monitor_default_opts(monitor_opts *o);

typedef struct monitor monitor;
/* Opens the log, binds the exporter and starts its thread. NULL with err on failure (address in
 * use, log not writable). */
monitor *monitor_new(const monitor_opts *o, char *err, size_t errlen);
int monitor_port(const monitor *m);
mon_metrics *monitor_metrics(monitor *m);

typedef struct {
    size_t probes;               /* finished (any outcome, cancelled included) */
    size_t ok;
    size_t records;              /* records allocated over the run: the peak in flight, the memory bound */
    size_t failed;               /* probes that failed on the server side (not cancelled by the monitor) */
    bool interrupted;            /* *stop ended it */
} monitor_totals;

/* Probes until the request count or the duration is reached (then waits for the probes in
 * flight), or until *stop (then cancels them). The exporter keeps serving after it returns,
 * until monitor_free. 0, or -1 with err when the client cannot be set up. */
int monitor_run(monitor *m, ds_stop_flag *stop, monitor_totals *out, char *err, size_t errlen);
/* Stops the exporter thread and frees everything. */
void monitor_free(monitor *m);
#endif
