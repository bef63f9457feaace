/* chunkscan — the hot-path reader of streamed completion chunks. A full JSON DOM per chunk
 * (jansson) cost more than half of the client's CPU at 100k+ chunks/s, yet a chunk only needs a
 * handful of fields. This scanner walks the chunk once, strictly, and picks out: the generated
 * text (choices[0].text / delta.content / delta.reasoning_content / delta.reasoning), whether a
 * finish_reason is set, usage token counts (with the prefix cache's cached tokens and the
 * reasoning tokens, and llama.cpp's timings: prompt_n, prompt_ms, predicted_n, predicted_ms) and whether an error is present. Anything it does not
 * fully understand — malformed JSON, unexpected types — returns -1, and the caller falls back to
 * jansson, which then decides (and names) what is wrong. */
#ifndef DSP_CHUNKSCAN_H
#define DSP_CHUNKSCAN_H
#include <stddef.h>
#include <stdbool.h>

typedef struct {
    const char *text;       /* raw (still escaped) span inside the quotes, or NULL */
    size_t text_len;
    bool text_escaped;      /* the span contains backslash escapes: decode before use */
    const char *reasoning;  /* delta.reasoning_content or delta.reasoning, raw span, or NULL */
    size_t reasoning_len;
    bool reasoning_escaped;
    bool has_choices;
    bool finished;          /* choices[0].finish_reason is a non-null value */
    bool has_usage;
    long long prompt_tokens, completion_tokens;   /* -1 when absent */
    long long cached_tokens;   /* usage.prompt_tokens_details.cached_tokens, or DeepSeek's
                                * usage.prompt_cache_hit_tokens; -1 when absent */
    long long prompt_eval;     /* llama.cpp's timings.prompt_n (prompt tokens evaluated); -1 absent */
    long long reasoning_tokens;/* usage.completion_tokens_details.reasoning_tokens; -1 absent */
    long long predicted_n;     /* llama.cpp's timings.predicted_n; -1 absent */
    double prompt_ms, predicted_ms;   /* llama.cpp's timings.prompt_ms / predicted_ms; -1 absent */
    bool has_error;         /* a non-null top-level "error" */
} chunk_fields;

/* 0 when the chunk was understood (fields filled), -1 otherwise (use a full JSON parser). */
int chunkscan(const char *json, size_t len, chunk_fields *out);
/* Decodes a JSON string body (without quotes) into dst (UTF-8). Returns the decoded length,
 * or -1 on a malformed escape or when dst is too small. */
long chunkscan_unescape(const char *s, size_t len, char *dst, size_t cap);
#endif
