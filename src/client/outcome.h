/* outcome — one request's outcome class and error text from how its transfer ended, the same for
 * both read paths (client.c's libcurl one and h1.c's own): the error classes and their examples
 * must not depend on which path read the response. */
#ifndef DSP_CLIENT_OUTCOME_H
#define DSP_CLIENT_OUTCOME_H
#include "client/openai.h"
#include "metrics/record.h"
#include <curl/curl.h>
#include <stdbool.h>
#include <stddef.h>

typedef struct {
    CURLcode res;                /* how the transfer ended, in libcurl's terms (the own path maps to them) */
    long status;                 /* the HTTP status; 0 when no status line came */
    bool got_body;               /* a byte of the body arrived */
    bool is_sse;                 /* Content-Type was text/event-stream */
    size_t n_events;             /* SSE events parsed */
    const openai_stream *st;     /* what the events said */
    const char *errbody;         /* the body kept for an error message */
    size_t errlen;
} client_end;

/* Sets r->error (redacted, first one wins) and r->http_status; returns the outcome. */
rec_outcome client_outcome(record *r, const client_end *e);
/* The first error text of a record, redacted (a server may echo the key it refused). */
void client_set_err(record *r, const char *msg);
#endif
