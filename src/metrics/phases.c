/* phases — reasoning vs answer, the server's side of each request, and the run's self-checks
 * (see phases.h; the definitions are the README's metric table). */
#include "metrics/phases.h"
#include "metrics/request_metrics.h"
#include "metrics/stats.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define NS_PER_MS 1e6
#define NS_PER_S 1e9

static json_t *jreal(double x) { return isfinite(x) ? json_real(x) : json_null(); }

/* ---- reasoning vs answer ---- */

static void reasoning(json_t *obj, const recset *recs, const summary_opts *o) {
    stats_samples ttfa, rtpot, atpot;
    stats_init(&ttfa); stats_init(&rtpot); stats_init(&atpot);
    long n = 0, answered = 0, n_srv = 0, n_cli = 0, mismatches = 0;
    long long r_tok = 0, a_tok = 0, r_srv = 0, r_cli = 0;
    int rc = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_OK) continue;
        req_metrics m;
        req_metrics_of(r, &m);
        if (!m.has_reasoning) continue;
        n++;
        r_tok += m.reasoning_tokens;
        a_tok += m.answer_tokens;
        if (r->reasoning_tokens_server >= 0) { n_srv++; r_srv += r->reasoning_tokens_server; }
        if (r->reasoning_tokens_client >= 0) { n_cli++; r_cli += r->reasoning_tokens_client; }
        if (r->reasoning_tokens_server >= 0 && r->reasoning_tokens_client >= 0 &&
            r->reasoning_tokens_server != r->reasoning_tokens_client) mismatches++;
        if (m.has_ttfa) { answered++; rc |= stats_add(&ttfa, m.ttfa_ms); }
        if (isfinite(m.reasoning_tpot_ms)) rc |= stats_add(&rtpot, m.reasoning_tpot_ms);
        if (isfinite(m.answer_tpot_ms)) rc |= stats_add(&atpot, m.answer_tpot_ms);
    }
    if (n > 0 && rc == 0) {
        json_object_set_new(obj, "reasoning_requests", json_integer(n));
        json_object_set_new(obj, "reasoning_answered", json_integer(answered));
        json_object_set_new(obj, "total_reasoning_tokens", json_integer(r_tok));
        json_object_set_new(obj, "total_answer_tokens", json_integer(a_tok));
        json_object_set_new(obj, "mean_reasoning_tokens", json_real((double)r_tok / (double)n));
        json_object_set_new(obj, "mean_answer_tokens", json_real((double)a_tok / (double)n));
        json_object_set_new(obj, "total_reasoning_tokens_server", n_srv ? json_integer(r_srv) : json_null());
        json_object_set_new(obj, "total_reasoning_tokens_client", n_cli ? json_integer(r_cli) : json_null());
        json_object_set_new(obj, "reasoning_tokens_source",
                            json_string(n_srv == n ? "server_usage" : n_srv == 0 ? "client" : "mixed"));
        json_object_set_new(obj, "reasoning_token_mismatches", json_integer(mismatches));
        summary_emit_exact(obj, "ttfa", &ttfa, o);
        summary_emit_exact(obj, "reasoning_tpot", &rtpot, o);
        summary_emit_exact(obj, "answer_tpot", &atpot, o);
        json_t *samples = json_object_get(obj, "samples");
        if (json_is_object(samples)) {
            json_object_set_new(samples, "ttfa", summary_samples_family(ttfa.v, ttfa.n, NS_PER_MS));
            json_object_set_new(samples, "reasoning_tpot", summary_samples_family(rtpot.v, rtpot.n, NS_PER_MS));
            json_object_set_new(samples, "answer_tpot", summary_samples_family(atpot.v, atpot.n, NS_PER_MS));
        }
    }
    stats_free(&ttfa); stats_free(&rtpot); stats_free(&atpot);
}

/* ---- the server's side of each request ----
 * llama.cpp's timings: prompt_ms is its prompt evaluation, which ends with the first token's
 * logits, so it is the server's TTFT less its own queue (llama.cpp reports no queue time).
 * TTFT - prompt_ms is what the server never saw: the client, the network, HTTP parsing and
 * tokenization, llama.cpp's wait for a free slot. predicted_ms covers the predicted_n - 1
 * tokens after the first: the server's TPOT is predicted_ms / (predicted_n - 1). */
static void server_timing(json_t *obj, const recset *recs, const summary_opts *o) {
    stats_samples prefill, outside, stpot, tpot_gap, queue, e2el_out;
    stats_init(&prefill); stats_init(&outside); stats_init(&stpot); stats_init(&tpot_gap);
    stats_init(&queue); stats_init(&e2el_out);
    long n = 0, violations = 0, n_pred = 0, pred_equal = 0, n_llama = 0, n_vllm = 0, n_sglang = 0;
    double ttft_sum = 0, outside_sum = 0;
    json_t *viol = json_array();
    int rc = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_OK) continue;
        req_metrics m;
        req_metrics_of(r, &m);
        if (!m.has_ttft) continue;
        /* the server's share of TTFT: llama.cpp's prompt_ms (its prefill; it reports no queue), or
         * vLLM's queue_time_ms + time_to_first_token_ms (its queue, then scheduling to first token) */
        double srv_ttft = -1, srv_prefill = -1;
        if (r->server_ttft_ms >= 0) {
            srv_prefill = r->server_ttft_ms;
            srv_ttft = r->server_ttft_ms + (r->server_queue_ms >= 0 ? r->server_queue_ms : 0);
            n_vllm++;
            if (r->server_queue_ms >= 0) rc |= stats_add(&queue, r->server_queue_ms);
            if (r->server_decode_ms >= 0 && isfinite(m.e2el_ms))
                rc |= stats_add(&e2el_out, m.e2el_ms - srv_ttft - r->server_decode_ms);
            if (r->server_decode_ms >= 0 && m.out_tokens > 1) {
                double s = r->server_decode_ms / (double)(m.out_tokens - 1);
                rc |= stats_add(&stpot, s);
                if (isfinite(m.tpot_ms)) rc |= stats_add(&tpot_gap, m.tpot_ms - s);
            }
        } else if (r->server_prompt_ms >= 0) {
            srv_prefill = srv_ttft = r->server_prompt_ms;
            n_llama++;
        } else if (r->server_e2e_ms >= 0) {
            /* SGLang's meta_info gives its whole handling only: the E2EL it did not see */
            n_sglang++;
            if (isfinite(m.e2el_ms)) rc |= stats_add(&e2el_out, m.e2el_ms - r->server_e2e_ms);
            continue;
        } else {
            continue;
        }
        n++;
        double out = m.ttft_ms - srv_ttft;
        rc |= stats_add(&prefill, srv_prefill) | stats_add(&outside, out);
        ttft_sum += m.ttft_ms;
        outside_sum += out;
        /* causality: the server's part happened inside the client's TTFT */
        if (out < 0) {
            violations++;
            if (json_array_size(viol) < 5)
                json_array_append_new(viol, json_pack("{s:i,s:f,s:f}", "index", (json_int_t)r->index, "ttft_ms", m.ttft_ms,
                                                      "server_ttft_ms", srv_ttft));
        }
        if (r->server_ttft_ms < 0 && r->server_predicted_n >= 0) {
            n_pred++;
            if (r->server_predicted_n == m.out_tokens) pred_equal++;
            if (r->server_predicted_n > 1 && r->server_predicted_ms >= 0) {
                double s = r->server_predicted_ms / (double)(r->server_predicted_n - 1);
                rc |= stats_add(&stpot, s);
                if (isfinite(m.tpot_ms)) rc |= stats_add(&tpot_gap, m.tpot_ms - s);
            }
        }
    }
    if ((n > 0 || n_sglang > 0) && rc == 0) {
        json_t *st = json_object();
        int kinds = (n_llama > 0) + (n_vllm > 0) + (n_sglang > 0);
        json_object_set_new(st, "source", json_string(kinds > 1 ? "mixed" : n_vllm ? "vllm_metrics" :
                                                      n_llama ? "llamacpp_timings" : "sglang_meta_info"));
        json_object_set_new(st, "requests_joined", json_integer(n + n_sglang));
        if (n > 0) {
            summary_emit_exact(st, "server_prefill", &prefill, o);
            summary_emit_exact(st, "ttft_outside_server", &outside, o);
            /* the samples behind its percentiles (the terminal says when they are too few) */
            json_object_set_new(st, "ttft_outside_server_samples", json_integer(n));
            json_object_set_new(st, "ttft_outside_server_share", jreal(ttft_sum > 0 ? outside_sum / ttft_sum : NAN));
        }
        if (queue.n) summary_emit_exact(st, "server_queue", &queue, o);
        if (e2el_out.n) summary_emit_exact(st, "e2el_outside_server", &e2el_out, o);
        if (stpot.n) {
            summary_emit_exact(st, "server_tpot", &stpot, o);
            summary_emit_exact(st, "tpot_outside_server", &tpot_gap, o);
        }
        if (n_llama) {
            json_object_set_new(st, "predicted_n_compared", json_integer(n_pred));
            json_object_set_new(st, "predicted_n_equal_output_tokens", json_integer(pred_equal));
        }
        json_object_set_new(st, "causality_violations", json_integer(violations));
        json_object_set_new(st, "causality_examples", viol);
        viol = NULL;
        json_object_set_new(obj, "server_timing", st);
    }
    json_decref(viol);
    stats_free(&prefill); stats_free(&outside); stats_free(&stpot); stats_free(&tpot_gap);
    stats_free(&queue); stats_free(&e2el_out);
}

/* ---- Little's law ----
 * L, the mean number of requests in flight over the run's span D (first send to last end), is
 * the exact time integral of the in-flight count: the sum of every sent request's time in flight
 * (send to end of transfer) over D. λ·W is request_throughput × mean E2EL: completed / D times
 * the completed requests' mean (send to last data message). L·D − λW·D is therefore exactly the
 * time in flight of requests that did not complete (failed or cancelled: lost to the throughput)
 * plus the completed requests' time after their last data message ([DONE], the connection's end,
 * a client that read late). What is left after those two is a timestamp inconsistency (a clock
 * problem). The law "holds" when the gap is within 2% of L; otherwise the largest part is named. */
static json_t *littles_law(const recset *recs) {
    int64_t first = 0, last_end = 0;
    long sends = 0, completed = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup) continue;
        int64_t end = r->end_ns > r->last_ns ? r->end_ns : r->last_ns;
        if (end > last_end) last_end = end;
        if (r->send_ns > 0 && (!sends++ || r->send_ns < first)) first = r->send_ns;
    }
    if (!sends || last_end <= first) return NULL;
    double d_ns = (double)(last_end - first);
    double in_flight_ns = 0, e2el_ns = 0, lost_ns = 0, after_ns = 0, clock_ns = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->send_ns <= 0) continue;
        int64_t end = r->end_ns > r->last_ns ? r->end_ns : r->last_ns;
        if (end < r->send_ns) { clock_ns += (double)(r->send_ns - end); end = r->send_ns; }
        in_flight_ns += (double)(end - r->send_ns);
        if (r->outcome != REC_OK) { lost_ns += (double)(end - r->send_ns); continue; }
        int64_t last = r->last_ns > 0 ? r->last_ns : end;
        completed++;
        e2el_ns += (double)(last - r->send_ns);
        after_ns += (double)(end - last);
    }
    double L = in_flight_ns / d_ns;
    double lambda = completed / (d_ns / NS_PER_S);
    double W = completed ? e2el_ns / completed / NS_PER_S : NAN;
    double lw = completed ? lambda * W : 0;
    double gap = L - lw;
    double lost = lost_ns / d_ns, after = after_ns / d_ns, resid = gap - lost - after;
    bool holds = L > 0 && fabs(gap) <= 0.02 * L;
    char why[320] = "";
    if (!holds && L > 0) {
        const char *part = fabs(resid) > lost && fabs(resid) > after
                               ? "timestamps that do not add up (a clock problem: an end before its send, or a stamp from another clock)"
                           : lost >= after ? "requests that did not complete held connections (failed or cancelled: lost to the throughput)"
                                           : "completed requests stayed in flight after their last data message (slow [DONE] or connection close, or a client that read late)";
        snprintf(why, sizeof why, "mean in flight %.3f vs throughput x mean E2EL %.3f (%+.1f%%): mostly %s", L, lw,
                 100 * gap / L, part);
    }
    json_t *j = json_object();
    json_object_set_new(j, "mean_in_flight", json_real(L));
    json_object_set_new(j, "throughput_times_mean_e2el", json_real(lw));
    json_object_set_new(j, "relative_gap", jreal(L > 0 ? gap / L : NAN));
    json_object_set_new(j, "lost_requests_part", json_real(lost));
    json_object_set_new(j, "after_last_data_part", json_real(after));
    json_object_set_new(j, "unexplained_part", json_real(resid + clock_ns / d_ns));
    json_object_set_new(j, "holds", json_boolean(holds));
    json_object_set_new(j, "reason", why[0] ? json_string(why) : json_null());
    return j;
}

/* ---- client and server token counts, request by request ----
 * Per completed request where both sides counted: the server's count minus the client's. Equal
 * counts agree; a difference that is the same on every request is a constant the client does not
 * count (prompt: the chat template's markers or a BOS; output: a token the server counts but does
 * not stream); other differences are a different tokenizer (or the client counting words, without
 * --tokenizer), and for output also generated text that does not re-tokenize to the tokens the
 * server generated (the real llama.cpp with random weights: 16 tokens whose text counts 24). Output counts of reasoning requests are compared with and without the
 * reasoning tokens, so a server whose completion_tokens leave the reasoning out is named. */
#define TA_MAX_DELTAS 8
typedef struct {
    long compared, equal, other;
    struct { long delta, n; } d[TA_MAX_DELTAS];
    int nd;
} tally;

static void tally_add(tally *t, long delta) {
    t->compared++;
    if (delta == 0) { t->equal++; return; }
    for (int i = 0; i < t->nd; i++) if (t->d[i].delta == delta) { t->d[i].n++; return; }
    if (t->nd < TA_MAX_DELTAS) { t->d[t->nd].delta = delta; t->d[t->nd++].n = 1; }
    else t->other++;
}

static json_t *tally_json(const tally *t, const char *constant_why, const char *varying_why) {
    json_t *j = json_object(), *ds = json_array();
    json_object_set_new(j, "compared", json_integer(t->compared));
    json_object_set_new(j, "equal", json_integer(t->equal));
    for (int i = 0; i < t->nd; i++)
        json_array_append_new(ds, json_pack("{s:I,s:I}", "server_minus_client", (json_int_t)t->d[i].delta, "requests",
                                            (json_int_t)t->d[i].n));
    json_object_set_new(j, "differences", ds);
    char why[480];
    const char *w = NULL;
    if (!t->compared) w = "not compared: one side gave no count";
    else if (t->equal == t->compared) w = "agree on every request";
    else if (t->nd == 1 && t->equal == 0 && t->other == 0) {
        snprintf(why, sizeof why, "the server counts %+ld on every request: %s", t->d[0].delta, constant_why);
        w = why;
    } else {
        snprintf(why, sizeof why, "%ld of %ld requests differ: %s", t->compared - t->equal, t->compared, varying_why);
        w = why;
    }
    json_object_set_new(j, "explained", json_string(w));
    return j;
}

static json_t *token_agreement(const recset *recs) {
    tally in = { 0 }, out = { 0 };
    long reasoning_left_out = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_OK) continue;
        if (r->in_tokens >= 0 && r->in_tokens_server >= 0) tally_add(&in, (long)r->in_tokens_server - r->in_tokens);
        if (r->out_tokens_client >= 0 && r->out_tokens_server >= 0) {
            long d = (long)r->out_tokens_server - r->out_tokens_client;
            /* a server that does not count reasoning in completion_tokens */
            if (d != 0 && r->reasoning_tokens_client > 0 && d == -(long)r->reasoning_tokens_client) reasoning_left_out++;
            tally_add(&out, d);
        }
    }
    json_t *j = json_object();
    json_object_set_new(j, "prompt", tally_json(&in, "the chat template's markers or a BOS the client did not count",
                                                "the client's tokenizer is not the server's (or it counted words: give --tokenizer)"));
    json_t *o = tally_json(&out, "a token the server counts but does not stream (an EOS / stop token)",
                           "the streamed text does not re-tokenize to the tokens generated (pieces a tokenizer merges or "
                           "splits otherwise, ids that decode to placeholder text), or the client's tokenizer is not the "
                           "server's (or it counted words: give --tokenizer)");
    if (reasoning_left_out) {
        char why[200];
        snprintf(why, sizeof why, "%ld requests: the server's completion_tokens leave the streamed reasoning out",
                 reasoning_left_out);
        json_object_set_new(o, "explained", json_string(why));
    }
    json_object_set_new(j, "output", o);
    return j;
}

void phases_add(json_t *obj, const recset *recs, const summary_opts *o) {
    reasoning(obj, recs, o);
    server_timing(obj, recs, o);
    json_t *sc = json_object(), *ll = littles_law(recs);
    if (ll) json_object_set_new(sc, "littles_law", ll);
    json_object_set_new(sc, "token_agreement", token_agreement(recs));
    json_object_set_new(obj, "self_check", sc);
}
