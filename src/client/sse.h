/* sse — an incremental Server-Sent Events parser for streamed completions. Bytes arrive in
 * arbitrary pieces (an event split across reads, several events in one read); lines end in LF,
 * CRLF or CR; `:` lines are comments/keep-alives; several `data:` lines in one event are joined
 * with "\n"; an `error:` line (llama.cpp's mid-stream error) is reported as its own field.
 * Buffers are kept between events, so steady-state parsing does not allocate. Field values passed
 * to the callback are valid only during the callback. */
#ifndef DSP_SSE_H
#define DSP_SSE_H
#include <stddef.h>
#include <stdbool.h>

typedef struct {
    const char *data;   /* joined data lines (NUL-terminated), or NULL when the event had none */
    size_t data_len;
    const char *event;  /* `event:` field or NULL */
    const char *error;  /* `error:` field (non-standard, llama.cpp) or NULL */
} sse_event;

/* Return non-zero to stop parsing (sse_feed then returns that value). */
typedef int (*sse_event_fn)(void *ctx, const sse_event *ev);

typedef struct { char *p; size_t len, cap; } sse_buf;

typedef struct {
    sse_buf line;       /* an incomplete line carried over from the previous feed */
    sse_buf data, event, error;
    bool has_data, has_event, has_error;
    bool last_was_cr;   /* a CR ended the last line: an LF right after it belongs to it */
    unsigned bom_pos;   /* BOM bytes matched so far; 3 = check done */
    size_t max;         /* cap on one line / one field */
    size_t n_comments;  /* comment / keep-alive lines seen */
    size_t n_events;
} sse_parser;

/* max_event_bytes caps one event (a misbehaving server cannot make us grow without bound). */
void sse_init(sse_parser *p, size_t max_event_bytes);
void sse_free(sse_parser *p);
/* Feeds bytes. Returns 0, a callback's non-zero value, or -1 when an event exceeds the cap
 * or memory runs out. */
int sse_feed(sse_parser *p, const char *bytes, size_t n, sse_event_fn fn, void *ctx);
/* End of body: a pending line and an event not terminated by a blank line are dispatched. */
int sse_finish(sse_parser *p, sse_event_fn fn, void *ctx);
#endif
