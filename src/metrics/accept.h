/* accept — speculative decoding and MTP: how many tokens does a decode step give? DeepSeek-V3/R1
 * serve with MTP, and the acceptance length decides TPOT. From the stream: a chunk carrying k
 * tokens is one decode step that gave k tokens (the first chunk comes from the prefill and is left
 * out), so a request's acceptance length is its decode tokens over its decode chunks. From the
 * server, where it says (vLLM's metrics.speculative_decoding, SGLang's meta_info): its own steps
 * and tokens per step, kept beside the stream's. Also acceptance against position in the output
 * (does the draft hold up late in a long answer?). A sweep's levels each carry theirs, so
 * acceptance against load is the levels' figures side by side (diagnose names a collapse). */
#ifndef DSP_ACCEPT_H
#define DSP_ACCEPT_H
#include "metrics/record.h"
#include "metrics/summary.h"
#include <jansson.h>

/* A request's acceptance length from its chunks: tokens of chunks 1.. over their number (the
 * client's token count per chunk); NAN with fewer than 2 chunks. */
double accept_len_of(const record *r);

/* The server's tokens per step for r: its mean_acceptance_length / spec_accept_length, else
 * 1 + accepted / steps; NAN when it said nothing. */
double accept_len_server_of(const record *r);

/* Adds "spec_decode" to obj when a completed request had a decode chunk of more than one token
 * or the server reported its speculative decoding; absent otherwise (a plain stream has nothing
 * to say, and says nothing):
 *   requests, decode_chunks, decode_tokens, multi_token_chunks,
 *   mean_acceptance_length (Σ decode tokens / Σ decode chunks), {mean,median,std,min,max,pP}
 *   of the per-request acceptance length ("*_acceptance_length"),
 *   by_position: [{"from", "to", "chunks", "tokens", "acceptance_length"}] over output positions
 *   [1,16), [16,32), [32,64), ... (a chunk counts where its first token sits),
 *   server: {"requests", "steps", "acceptance_length" (Σ tokens per step × steps / Σ steps),
 *   "accepted_draft_tokens", "draft_tokens", "draft_acceptance_rate"} when the server counted. */
void accept_add(json_t *obj, const recset *recs, const summary_opts *o);
#endif
