/* openai — the OpenAI-compatible wire format as vLLM, SGLang, TGI, TensorRT-LLM and llama.cpp
 * speak it: request bodies for /v1/completions and /v1/chat/completions, and the interpretation of
 * each streamed data message into a record (content chunks with their arrival time, usage,
 * finish, in-stream errors). Role-only and usage-only chunks carry no tokens and are not chunks. */
#ifndef DSP_OPENAI_H
#define DSP_OPENAI_H
#include "metrics/record.h"
#include "dataset/dataset.h"
#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>

typedef enum { OPENAI_COMPLETIONS, OPENAI_CHAT } openai_api;

/* Counts length units (tokens) in generated text: the client tokenizer when one is loaded,
 * otherwise words. */
typedef struct {
    int32_t (*count)(void *ctx, const char *text, size_t len);
    void *ctx;
    const char *name;            /* "words" / "tokenizer" */
} token_counter;

/* The JSON body for one request (malloc'd), or NULL on OOM. */
char *openai_request_body(openai_api api, const char *model, const dataset_item *item,
                          bool ignore_eos, bool include_usage);
/* The path to POST to for the api ("/v1/completions" or "/v1/chat/completions"). */
const char *openai_path(openai_api api);

/* Per-request stream state. */
typedef struct {
    bool done;            /* [DONE] seen */
    bool finished;        /* a finish_reason was seen */
    bool stream_error;    /* an error event / error object arrived */
    bool bad_json;        /* a data message was not valid JSON */
    int64_t last_data_ns; /* arrival of the last data message before [DONE] */
    int32_t tokens_client;/* sum of counted tokens over content chunks */
    bool in_reasoning;    /* the stream began with reasoning text and no answer text has come yet */
    bool keep_text;       /* collect the generated text (content, not reasoning) into text */
    char *text;           /* owned until openai_stream_end hands it to the record */
    size_t text_len, text_cap;
} openai_stream;

/* Interprets one SSE event that arrived at t_ns; updates st and r (chunks, usage, error).
 * Returns 0, or 1 when the stream is over ([DONE] or an error) and reading can stop. */
int openai_stream_event(openai_stream *st, record *r, const char *data, size_t data_len,
                        const char *error_field, int64_t t_ns, const token_counter *tc);

/* The stream is over: what is read from the whole response goes into r (llama.cpp's cached
 * prompt tokens: usage.prompt_tokens - timings.prompt_n, when no cached_tokens was given) and the
 * kept text moves to r->text. */
void openai_stream_end(openai_stream *st, record *r);

/* Extracts a readable message from an error body (`{"error":{"message":..}}`, `{"detail":..}`,
 * `{"message":..}`, or the text itself), truncated to fit. Writes into buf. */
void openai_error_message(const char *body, size_t len, char *buf, size_t buflen);
#endif
