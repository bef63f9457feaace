/* sim_run — drives an engine on a virtual clock with a workload (open-loop arrival times or a
 * closed loop of N users) and measures each request as a client would: one record per request
 * (sched = send = arrival, a chunk per token event, first/last/end times, usage tokens), so the
 * lead's summary and results code treats a simulated run exactly like a `bench` run. Also samples
 * the engine's gauges into time series (running, waiting, KV usage, preemptions, step time,
 * batch tokens). */
#ifndef DSP_SIM_RUN_H
#define DSP_SIM_RUN_H
#include "engine/engine.h"
#include "metrics/record.h"
#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#define SIM_RUN_T0_NS 1000000000LL   /* virtual clock origin: times are never 0 ("none" in records) */

typedef struct {
    size_t n;                    /* requests */
    const int64_t *arrival_ns;   /* open loop: offsets from the start (non-decreasing); NULL: closed loop */
    int concurrency;             /* closed loop: users, each sends its next request when the last finished */
    const int32_t *in_tokens;    /* per request */
    const int32_t *max_tokens;   /* per request (ignore_eos: the exact output length) */
    size_t warmup;               /* the first `warmup` requests are marked warm-up */
    size_t max_series_points;    /* series resolution cap (0: 2048) */
} sim_workload;

typedef struct {
    size_t n, cap;
    int64_t interval_ns;
    double *t_s;                 /* seconds from the start */
    int32_t *running, *waiting, *batch_tokens;
    float *kv_usage, *step_ms;
    int64_t *preemptions;
} sim_series;

/* Runs the whole workload to completion. recs receives exactly w->n records (index = position in
 * the plan); requests the engine rejects are recorded as HTTP 400 failures. 0 ok, -1 with err. */
int sim_run(engine *e, const sim_workload *w, recset *recs, sim_series *series, char *err, size_t errlen);
/* {"interval_s":..,"t_s":[..],"running":[..],"waiting":[..],"kv_usage":[..],"preemptions":[..],
 *  "step_ms":[..],"batch_tokens":[..]} */
json_t *sim_series_json(const sim_series *s);
void sim_series_free(sim_series *s);
#endif
