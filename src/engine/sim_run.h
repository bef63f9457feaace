/* sim_run — drives an engine on a virtual clock with a workload (open-loop arrival times or a
 * closed loop of N users) and measures each request as a client would: one record per request
 * (sched = send = arrival, a chunk per token event, first/last/end times, usage tokens), so the
 * lead's summary and results code treats a simulated run exactly like a `bench` run (also the
 * open-loop client queue under --max-concurrency, and the closed loop's think time). Also samples
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
    int64_t think_ns;            /* closed loop: pause between a user's requests */
    int max_concurrency;         /* open loop: cap on in-flight requests (0 none); the excess waits in
                                  * a client queue and that wait is measured (send - sched) */
    const int32_t *in_tokens;    /* per request */
    const int32_t *max_tokens;   /* per request (ignore_eos: the exact output length) */
    size_t warmup;               /* the first `warmup` requests are marked warm-up */
    const int32_t *prefix_group; /* per request: shared-prefix group (-1 none), or NULL (prefix caching) */
    int32_t prefix_len;          /* tokens every request of a group shares */
    size_t max_series_points;    /* series resolution cap (0: 2048) */
} sim_workload;

typedef struct {
    size_t n, cap;
    int64_t interval_ns;
    double *t_s;                 /* seconds from the start */
    int32_t *running, *waiting, *batch_tokens;
    float *kv_usage, *step_ms;
    int64_t *preemptions, *prompt_tokens, *gen_tokens, *steps;   /* cumulative */
} sim_series;

/* Request lengths for a dataset spec, without building prompt text: random:in=N,out=M,range=F
 * draws exactly the lengths dataset_open() draws for the same seed (so sim and bench see the same
 * workload); jsonl:FILE reads the file (in_tokens by the client's counter; items without
 * max_tokens get default_out; cycled when n exceeds the file, as bench does). *times_ns gets each
 * request's item timestamp when every item has one, else NULL. n == 0: as many requests as the
 * file has (random: error). 0 ok, -1 with err. */
int sim_workload_lengths(const char *spec, size_t *n, uint64_t seed, int32_t default_out, int32_t **ins,
                         int32_t **outs, int64_t **times_ns, char *err, size_t errlen);
/* The same, and for prefix:groups=G,prefix=P,... datasets each request's group (*groups, NULL for
 * other datasets) and P (*prefix_len), so the engine's prefix cache sees the shared prompts. */
int sim_workload_lengths_groups(const char *spec, size_t *n, uint64_t seed, int32_t default_out, int32_t **ins,
                                int32_t **outs, int64_t **times_ns, int32_t **groups, int32_t *prefix_len, char *err,
                                size_t errlen);

/* Runs the whole workload to completion. recs receives exactly w->n records (index = position in
 * the plan); requests the engine rejects are recorded as HTTP 400 failures. 0 ok, -1 with err. */
int sim_run(engine *e, const sim_workload *w, recset *recs, sim_series *series, char *err, size_t errlen);
/* {"interval_s":..,"t_s":[..],"running":[..],"waiting":[..],"kv_usage":[..],"preemptions":[..],
 *  "step_ms":[..],"batch_tokens":[..]} */
json_t *sim_series_json(const sim_series *s);
/* The same series in the shape of telemetry's scraped server section (telemetry.series.server:
 * running, waiting, kv_usage_pct, preemptions / prompt_tokens_per_s / generation_tokens_per_s /
 * tokens_per_step per interval, null where the interval is unknown), so diagnose and report read a
 * simulated run like a scraped vLLM. */
json_t *sim_series_server_json(const sim_series *s);
void sim_series_free(sim_series *s);
#endif
