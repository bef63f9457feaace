/* sessions — multi-turn conversations (the sessions: dataset):
 *   sessions:n=N,turns=T,first=P,user=U,out=M,think=D,system=S
 * N conversations of T turns. Turn 0 sends an optional S-token system prompt (the same in every
 * conversation) and a P-token user message; every later turn sends the whole history — each
 * earlier user message followed by the server's real answer to it — plus a new U-token user
 * message, D after the previous answer ended. max_tokens is M per turn (ignore_eos). User
 * messages are real words of exact length, drawn from (seed, conversation, turn), so a
 * conversation's messages are the same in every run with the same seed; only the answers differ.
 *
 * The load runner drives them (load/runner.h): it starts conversations (all at once under
 * --concurrency, by a rate under --rate), asks for each turn's request here, and reports each
 * turn's end; a turn that fails ends its conversation. Each conversation is touched by one client
 * thread only (conversations are the unit the plan is split by), so no locks are needed. */
#ifndef DSP_SESSIONS_H
#define DSP_SESSIONS_H
#include "dataset/dataset.h"
#include "metrics/record.h"
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

typedef struct ds_sessions ds_sessions;

size_t sessions_count(const ds_sessions *s);
int sessions_turns(const ds_sessions *s);
int64_t sessions_think_ns(const ds_sessions *s);
/* The spec's lengths (first message, later messages, answers' max_tokens, system prompt): what the
 * simulator, which builds no text, uses as tokens. */
void sessions_lengths(const ds_sessions *s, int32_t *first, int32_t *user, int32_t *out, int32_t *system);

/* Builds turn `turn` of conversation sid into *item: the history as chat messages (chat) or as a
 * "User: ... Assistant: ..." transcript (completions), its length as the server counts it, its
 * max_tokens, and the workload's bound on cached tokens (the previous turn's prompt and answer).
 * The item owns its text: release it with sessions_item_free. 0 ok, -1 out of memory. */
int sessions_build_turn(ds_sessions *s, size_t sid, int turn, dataset_item *item);
void sessions_item_free(dataset_item *item);
/* The turn held by r (r->session, r->turn) has ended. Its answer (r->text) is taken into the
 * conversation's history when the turn succeeded. Returns true when the conversation goes on
 * (the turn succeeded and it was not the last). */
bool sessions_turn_done(ds_sessions *s, record *r);
#endif
