/* phases — the summary's sections that split a request where other tools see one number:
 * reasoning vs answer (TTFA, tokens and TPOT per phase; request_metrics.h defines them per
 * request), the server's own timing joined request by request (llama.cpp's `timings`: how much
 * of every TTFT the server never saw), and the run's checks on itself (Little's law from the
 * requests' own intervals; client and server token counts per request). Each section is absent
 * when the run has nothing for it — never zeros. */
#ifndef DSP_PHASES_H
#define DSP_PHASES_H
#include "metrics/record.h"
#include "metrics/summary.h"
#include <jansson.h>

/* Adds to obj (a summary being built, with its "samples" object already set):
 * - reasoning: reasoning_requests, reasoning_answered, {mean,median,std,min,max,pP}_{ttfa,
 *   reasoning_tpot,answer_tpot}_ms, token totals per phase from both sides, samples ttfa /
 *   reasoning_tpot / answer_tpot — when a completed request had a reasoning phase;
 * - "server_timing": the join with the server's per-request timing, when any request carried one;
 * - "self_check": {"littles_law": ..., "token_agreement": ...}. */
void phases_add(json_t *obj, const recset *recs, const summary_opts *o);
#endif
