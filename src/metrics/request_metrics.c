/* request_metrics — per-request metrics from a record (see request_metrics.h). */
#include "metrics/request_metrics.h"
#include <math.h>

#define NS_PER_MS 1e6

static void reasoning_of(const record *r, req_metrics *m);

void req_metrics_of(const record *r, req_metrics *m) {
    m->sent = r->send_ns > 0;
    m->completed = r->outcome == REC_OK;
    m->has_ttft = m->sent && r->n_chunks > 0 && r->first_ns > 0;
    m->out_tokens = record_out_tokens(r);
    m->ttft_ms = m->e2el_ms = m->tpot_ms = m->queue_ms = NAN;
    m->ttft_from_schedule_ms = m->e2el_from_schedule_ms = NAN;
    m->has_reasoning = m->has_ttfa = false;
    m->ttfa_ms = m->reasoning_tpot_ms = m->answer_tpot_ms = NAN;
    m->reasoning_tokens = m->answer_tokens = -1;
    if (!m->sent) return;
    /* the last data message; a completed request without one (an empty answer) ends with its transfer */
    int64_t last = r->last_ns > 0 ? r->last_ns : (m->completed ? r->end_ns : 0);
    m->queue_ms = r->sched_ns > 0 && r->send_ns >= r->sched_ns ? (double)(r->send_ns - r->sched_ns) / NS_PER_MS : 0;
    if (last > 0) {
        m->e2el_ms = (double)(last - r->send_ns) / NS_PER_MS;
        m->e2el_from_schedule_ms = m->e2el_ms + m->queue_ms;
    }
    if (m->has_ttft) {
        m->ttft_ms = (double)(r->first_ns - r->send_ns) / NS_PER_MS;
        m->ttft_from_schedule_ms = m->ttft_ms + m->queue_ms;
        if (m->out_tokens > 1 && isfinite(m->e2el_ms)) m->tpot_ms = (m->e2el_ms - m->ttft_ms) / (double)(m->out_tokens - 1);
        reasoning_of(r, m);
    }
}

/* The reasoning phase's metrics (request_metrics.h); m's TTFT and E2EL are set. */
static void reasoning_of(const record *r, req_metrics *m) {
    if (r->reasoning_chunks == 0) return;
    m->has_reasoning = true;
    int32_t R = r->reasoning_tokens_server >= 0 ? r->reasoning_tokens_server : r->reasoning_tokens_client;
    if (R < 0) R = (int32_t)r->reasoning_chunks;
    if (R > m->out_tokens) R = m->out_tokens;
    m->reasoning_tokens = R;
    m->answer_tokens = m->out_tokens - R;
    m->has_ttfa = r->answer_ns >= r->first_ns && r->answer_ns > 0;
    if (m->has_ttfa) {
        m->ttfa_ms = (double)(r->answer_ns - r->send_ns) / NS_PER_MS;
        if (R >= 1) m->reasoning_tpot_ms = (m->ttfa_ms - m->ttft_ms) / (double)R;
        if (m->answer_tokens > 1 && isfinite(m->e2el_ms))
            m->answer_tpot_ms = (m->e2el_ms - m->ttfa_ms) / (double)(m->answer_tokens - 1);
    } else if (R > 1 && isfinite(m->e2el_ms)) {
        m->reasoning_tpot_ms = (m->e2el_ms - m->ttft_ms) / (double)(R - 1);
    }
}

bool req_slo_any(const req_slo *s) { return s->ttft_ms > 0 || s->tpot_ms > 0 || s->e2el_ms > 0 || s->ttfa_ms > 0; }

bool req_meets_slo(const req_slo *s, const req_metrics *m) {
    if (!m->completed) return false;
    if (s->ttft_ms > 0 && !(m->has_ttft && m->ttft_ms <= s->ttft_ms)) return false;
    if (s->tpot_ms > 0 && isfinite(m->tpot_ms) && m->tpot_ms > s->tpot_ms) return false;
    if (s->e2el_ms > 0 && !(m->e2el_ms <= s->e2el_ms)) return false;
    if (s->ttfa_ms > 0) {
        double a = m->has_reasoning ? m->ttfa_ms : m->ttft_ms;   /* NAN when no answer / no chunk: fails */
        if (!(a <= s->ttfa_ms)) return false;
    }
    return true;
}
