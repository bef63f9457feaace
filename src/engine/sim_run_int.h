/* sim_run_int — what the request-plan driver (sim_run.c) and the conversations driver
 * (sim_sess.c) share: a record filled from engine events as a client would fill it, a request
 * submitted with its record, the engine's sampled series. Internal to src/engine. */
#ifndef DSP_SIM_RUN_INT_H
#define DSP_SIM_RUN_INT_H
#include "engine/sim_run.h"

/* Tokens (a chunk per event; coarse: after the second, the last chunk extended, sim_workload.
 * coarse_chunks), first and last token times, the cached prompt tokens a server's usage would
 * report, and the end of a finished request. */
void simr_on_tokens(record *r, const engine_event *ev, int coarse);
/* Sends q (sched: when the plan meant to, t: now): 0 submitted, 1 rejected by the engine
 * (recorded as an HTTP 400 failure), -1 out of memory. */
int simr_submit(engine *e, record *r, const engine_request *q, int64_t sched, int64_t t);
int simr_series_init(sim_series *s, size_t max_points);
/* Samples the gauges at every sample time before t. */
void simr_sample_until(engine *e, sim_series *s, int64_t t, int64_t *next_sample);
/* sim_run for a workload of conversations (w->sessions). */
int sim_run_sessions(engine *e, const sim_workload *w, recset *recs, sim_series *series, char *err, size_t errlen);
#endif
