/* run/monitor — `dsperf monitor` from parsed options to its end: the pre-flight (an endpoint that is
 * down is probed anyway), the prompts, the exporter and the probe loop of monitor/monitor.h, the
 * period summaries recorded in the history, the run policy on a bounded run, the linger. The CLI
 * parses into run_monitor_opts and prints through the two hooks, which run at the moments the
 * output belongs to (the exporter's address before the first probe, the totals before the linger). */
#ifndef DSP_RUN_MONITOR_H
#define DSP_RUN_MONITOR_H
#include "run/bench_opts.h"
#include "monitor/monitor.h"
#include "common/result.h"
#include "common/stop.h"
#include <stdbool.h>
#include <stdint.h>

typedef struct {
    monitor_totals totals;
    bool judged_failed;          /* a bounded run whose server-side failures were over b->max_error_rate */
    char why[256];               /* the one line that says so, when judged_failed */
} run_monitor_result;

typedef struct {
    bench_opts *b;               /* target, prompts, SLO thresholds, history, error rate: parsed as bench's */
    monitor_opts mon;            /* the loop's settings; its client, prompts, seed and SLO are filled from b */
    int64_t linger_ns;           /* after a bounded run, keep exporting this long (0: none) */
    int64_t db_interval_ns;      /* the period of the summaries recorded in b->hist.db */
    /* the exporter listens (the CLI prints its address), and the probes ended (the CLI prints the
     * totals and the run policy's line): called before the first probe and before the linger, so
     * a scraper that waits for those lines finds the exporter up; NULL: nothing said */
    void (*on_listening)(void *ctx, const char *host, int port);
    void (*on_done)(void *ctx, const run_monitor_result *r);
    void *ctx;
} run_monitor_opts;

/* monitor's defaults into o (monitor_default_opts, no linger, a 10 min period) and its departures
 * from bench's into b (a 60 s timeout, random:in=256,out=64); o->b = b. */
void run_monitor_defaults(run_monitor_opts *o, bench_opts *b);

/* Runs until the bound of mon.requests / mon.duration_ns (then the linger) or SIGINT/SIGTERM, which
 * is a monitor's normal end (DS_OK, totals.interrupted). DS_OK with *out filled (judged_failed for
 * the run policy's verdict); DS_EINVAL when what answered the pre-flight is no OpenAI endpoint or
 * the prompts cannot be made; DS_ERUN when the exporter or the client cannot be set up. One line
 * in err, or "" when it was logged already (the prompts' failures, as bench_prepare logs them). */
ds_result run_monitor(run_monitor_opts *o, run_monitor_result *out, char *err, size_t errlen);
#endif
