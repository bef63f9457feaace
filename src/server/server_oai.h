/* server_oai — the OpenAI wire format of `dsperf serve`: parsing completion and chat requests,
 * and writing vLLM-shaped stream chunks, bodies and errors. Tokens are words with a leading
 * space from a fixed list, so a client counting words counts tokens. A request that sets
 * temperature 0 or asks for logprobs gets the words the token model (engine/fixed_lm.h) decodes
 * greedily, with its logprobs (server_lm.c); any other request gets a fixed rotation of the words
 * (the hot path, no model). Internal to src/server. */
#ifndef DSP_SERVER_OAI_H
#define DSP_SERVER_OAI_H
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <event2/buffer.h>
#include <jansson.h>
#include "engine/fixed_lm.h"
#include "server/server.h"

enum { OAI_COMPLETIONS = 0, OAI_CHAT = 1 };
enum { OAI_LOGPROBS_OPENAI = SERVER_LOGPROBS_OPENAI, OAI_LOGPROBS_LLAMACPP = SERVER_LOGPROBS_LLAMACPP };

/* One prompt token for echo / prompt_logprobs: its id and its text (the whitespace before the
 * word and the word) as a span of oai_lm_req.prompt_text. */
typedef struct { uint32_t id; uint32_t start, end; } oai_ptok;

/* The token model's part of a request (all zero / off when the request did not engage it). */
typedef struct {
    bool on;                   /* temperature 0, logprobs, echo or prompt_logprobs was asked */
    int style;                 /* OAI_LOGPROBS_* (how completions logprobs are written) */
    const fixed_lm *model;
    int32_t top_logprobs;      /* per generated token: -1 no logprobs, else the top-k listed */
    bool echo;                 /* completions: the prompt (and its logprobs) comes first */
    int32_t prompt_logprobs;   /* vLLM's prompt_logprobs: -1 none, else the top-k per prompt token */
    char *prompt_text;         /* the prompt, for echo (malloc'd, only with echo/prompt_logprobs) */
    oai_ptok *ptoks;           /* its tokens (malloc'd, same condition) */
    int32_t n_ptoks;
    uint32_t prev2, prev1;     /* the last two token ids of the context so far */
    int64_t pos;               /* tokens in the context so far */
    bool prompt_sent;          /* echo / prompt_logprobs already written (streaming) */
} oai_lm_req;

typedef struct {
    int api;                 /* OAI_* */
    bool stream;
    bool include_usage;      /* stream_options.include_usage */
    int32_t cached_tokens;   /* prompt tokens the engine served from its prefix cache (-1: unknown,
                              * usage then has no prompt_tokens_details) — set by the server */
    bool ignore_eos;
    int32_t max_tokens;
    int32_t prompt_tokens;   /* whitespace-separated words of the prompt / message contents */
    int32_t reasoning_tokens;/* chat: the first this many generated words stream as
                              * delta.reasoning_content, the rest as delta.content (0: none) — set by the server */
    char model[256];         /* "" when the request names none */
    oai_lm_req lm;
} oai_request;

/* Parses a request body; lm is the server's token model, lm_style its OAI_LOGPROBS_* style.
 * Returns 0, or -1 with a message in err and the HTTP status for it in *status (400; 500 where
 * llama.cpp answers 500, as for echo in its style). Free a parsed request with oai_request_free. */
int oai_parse_request(int api, const char *body, size_t len, int32_t default_max_tokens,
                      const fixed_lm *lm, int lm_style, oai_request *out, int *status, char *err, size_t errlen);
void oai_request_free(oai_request *rq);

/* Whitespace-separated words of s. */
int32_t oai_count_words(const char *s);

/* What every chunk of one response shares. model_json is the model name as a JSON string. */
typedef struct {
    int api;
    uint64_t seq;
    int64_t created;         /* unix seconds */
    const char *model_json;
} oai_ident;

/* Word i of response seq (" alpha", ...). */
const char *oai_word(uint64_t seq, int64_t i);

/* SSE events ("data: ...\n\n") appended to out. */
void oai_sse_role(struct evbuffer *out, const oai_ident *id);
void oai_sse_tokens(struct evbuffer *out, const oai_ident *id, oai_request *rq, int64_t first_word, int32_t n,
                    const char *finish_reason);
/* usage.prompt_tokens_details.cached_tokens (vLLM's field) when cached_tokens >= 0, and
 * usage.completion_tokens_details.reasoning_tokens (DeepSeek's and OpenAI's field) when
 * reasoning_tokens > 0 */
void oai_sse_usage(struct evbuffer *out, const oai_ident *id, int32_t prompt_tokens, int32_t completion_tokens,
                   int32_t cached_tokens, int32_t reasoning_tokens);
/* The same, with vLLM's per-request "metrics" object beside usage (docs/features/per_request_metrics.md):
 * times in ms; decode_steps > 0 adds speculative_decoding (num_spec_steps, num_accepted_draft_tokens,
 * mean_acceptance_length) when the steps gave more tokens than their number. */
typedef struct {
    double queue_ms, ttft_ms, generation_ms;
    int32_t decode_steps;       /* token events after the first */
} oai_metrics;
void oai_sse_usage_metrics(struct evbuffer *out, const oai_ident *id, int32_t prompt_tokens, int32_t completion_tokens,
                           int32_t cached_tokens, int32_t reasoning_tokens, const oai_metrics *m);
void oai_sse_done(struct evbuffer *out);
/* A mid-stream error event: llama.cpp style "error: {...}" or OpenAI/vLLM style "data: {"error":...}"
 * followed by "data: [DONE]". */
void oai_sse_error(struct evbuffer *out, bool openai_style, const char *message);

/* Non-streaming body with all n words (usage as oai_sse_usage, cached tokens from rq). */
void oai_body(struct evbuffer *out, const oai_ident *id, oai_request *rq, int32_t n, const char *finish_reason,
              int32_t prompt_tokens);

/* ---- the token model's requests (server_lm.c) ---- */

/* Reads temperature, logprobs, top_logprobs, echo and prompt_logprobs, and for an engaged request
 * the prompt's tokens (p: the completions prompt, or NULL) or the chat messages' words (msgs).
 * 0, or -1 with err and *status. */
int oai_lm_parse(oai_request *rq, json_t *root, json_t *prompt, json_t *msgs, const fixed_lm *lm, int style,
                 int *status, char *err, size_t errlen);
/* Streaming chunk / body of an engaged request: n greedy words from the model's state (which
 * advances), with their logprobs when asked, and the prompt first with echo. */
void oai_lm_sse_tokens(struct evbuffer *out, const oai_ident *id, oai_request *rq, int32_t n, const char *finish_reason);
void oai_lm_body(struct evbuffer *out, const oai_ident *id, oai_request *rq, int32_t n, const char *finish_reason);

/* {"error":{"message":...,"type":...,"param":null,"code":N}} */
void oai_error_body(struct evbuffer *out, int status, const char *message);
/* vLLM's error type for a status ("BadRequestError", "NotFoundError", ...). */
const char *oai_error_type(int status);

/* The /v1/models body. */
void oai_models_body(struct evbuffer *out, const char *model_json, int64_t created, const char *meta_json);
#endif
