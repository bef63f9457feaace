/* request_metrics — the one definition of every per-request metric (product.md section 3), from
 * a record: TTFT, TPOT, E2EL, client queue time and the latencies from schedule, output tokens,
 * and whether the request met the SLOs. The summary, the per-request file, the report, the
 * monitor and the live progress lines all call these; nothing else computes them. */
#ifndef DSP_REQUEST_METRICS_H
#define DSP_REQUEST_METRICS_H
#include "metrics/record.h"
#include <stdbool.h>

typedef struct {
    bool sent;                   /* send_ns was taken */
    bool completed;              /* outcome ok */
    bool has_ttft;               /* sent and a content chunk arrived */
    double ttft_ms;              /* c[0] - send; NAN without a content chunk */
    double e2el_ms;              /* last - send: the last data message (a completed request without one:
                                  * the end of its transfer); NAN when unsent or nothing came */
    double tpot_ms;              /* (E2EL - TTFT) / (Nout - 1); NAN when Nout <= 1 or no TTFT */
    double queue_ms;             /* send - sched; 0 without a schedule; NAN unsent */
    double ttft_from_schedule_ms, e2el_from_schedule_ms;   /* TTFT + queue, E2EL + queue */
    int32_t out_tokens;          /* record_out_tokens */
    /* reasoning models: all absent (false / NAN / -1) when the stream had no reasoning phase */
    bool has_reasoning;          /* the first content chunk carried reasoning text */
    bool has_ttfa;               /* ... and an answer chunk came after it */
    double ttfa_ms;              /* a - send: time to the first answer token; NAN without one */
    int32_t reasoning_tokens;    /* R: usage.completion_tokens_details.reasoning_tokens, else the client's count */
    int32_t answer_tokens;       /* Nout - R (>= 0) */
    double reasoning_tpot_ms;    /* (TTFA - TTFT) / R: R gaps from the first reasoning token to the first
                                  * answer token; without an answer (E2EL - TTFT) / (R - 1) when R > 1 */
    double answer_tpot_ms;       /* (E2EL - TTFA) / (A - 1) when A > 1 */
} req_metrics;

/* The metrics of one record. Defined for any outcome (a failed request that streamed has a TTFT);
 * the statistics use completed requests only. */
void req_metrics_of(const record *r, req_metrics *m);

/* SLO thresholds in ms; <= 0: not part of the SLO. */
typedef struct { double ttft_ms, tpot_ms, e2el_ms, ttfa_ms; } req_slo;

bool req_slo_any(const req_slo *s);
/* A request meets the SLOs when it completed and every given one holds (vLLM: metric <= SLO).
 * A TPOT SLO holds for Nout <= 1 (TPOT undefined, vLLM counts 0); a TTFT SLO fails without a
 * content chunk. A TTFA SLO judges a request with a reasoning phase by its TTFA (it fails when no
 * answer came) and one without by its TTFT (its first token is its answer). */
bool req_meets_slo(const req_slo *s, const req_metrics *m);
#endif
