/* server_oai — the OpenAI wire format of `dsperf serve`: parsing completion and chat requests,
 * and writing vLLM-shaped stream chunks, bodies and errors. Tokens are words with a leading
 * space from a fixed list, so a client counting words counts tokens. Internal to src/server. */
#ifndef DSP_SERVER_OAI_H
#define DSP_SERVER_OAI_H
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>
#include <event2/buffer.h>

enum { OAI_COMPLETIONS = 0, OAI_CHAT = 1 };

typedef struct {
    int api;                 /* OAI_* */
    bool stream;
    bool include_usage;      /* stream_options.include_usage */
    bool ignore_eos;
    int32_t max_tokens;
    int32_t prompt_tokens;   /* whitespace-separated words of the prompt / message contents */
    char model[256];         /* "" when the request names none */
} oai_request;

/* Parses a request body. Returns 0, or -1 with a message for a 400 in err. */
int oai_parse_request(int api, const char *body, size_t len, int32_t default_max_tokens,
                      oai_request *out, char *err, size_t errlen);

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
void oai_sse_tokens(struct evbuffer *out, const oai_ident *id, int64_t first_word, int32_t n,
                    const char *finish_reason);
void oai_sse_usage(struct evbuffer *out, const oai_ident *id, int32_t prompt_tokens, int32_t completion_tokens);
void oai_sse_done(struct evbuffer *out);
/* A mid-stream error event: llama.cpp style "error: {...}" or OpenAI/vLLM style "data: {"error":...}"
 * followed by "data: [DONE]". */
void oai_sse_error(struct evbuffer *out, bool openai_style, const char *message);

/* Non-streaming body with all n words. */
void oai_body(struct evbuffer *out, const oai_ident *id, int32_t n, const char *finish_reason,
              int32_t prompt_tokens);

/* {"error":{"message":...,"type":...,"param":null,"code":N}} */
void oai_error_body(struct evbuffer *out, int status, const char *message);
/* vLLM's error type for a status ("BadRequestError", "NotFoundError", ...). */
const char *oai_error_type(int status);

/* The /v1/models body. */
void oai_models_body(struct evbuffer *out, const char *model_json, int64_t created, const char *meta_json);
#endif
