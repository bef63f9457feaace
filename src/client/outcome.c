/* outcome — the outcome class of a finished request, shared by both read paths (outcome.h). */
#include "client/outcome.h"
#include "common/redact.h"
#include <stdio.h>

void client_set_err(record *r, const char *msg) {
    if (!r->error && msg) r->error = redact_text(msg);
}

rec_outcome client_outcome(record *r, const client_end *e) {
    char msg[600];
    if (e->res == CURLE_OPERATION_TIMEDOUT) {
        client_set_err(r, "timed out");
        return REC_ERR_TIMEOUT;
    }
    if (e->res != CURLE_OK && !e->got_body && e->status == 0) {
        snprintf(msg, sizeof msg, "%s", curl_easy_strerror(e->res));
        client_set_err(r, msg);
        return REC_ERR_CONNECT;
    }
    r->http_status = (int32_t)e->status;
    /* The server answered (its status line came) and the connection ended before a byte of body: a
     * stream cut short, not a failure to connect; else "connect" errors of a server that died
     * mid-run show "Transferred a partial file" as their example. */
    if (e->res != CURLE_OK && !e->got_body && e->status >= 200 && e->status < 300) {
        snprintf(msg, sizeof msg, "stream ended before its first event: %s", curl_easy_strerror(e->res));
        client_set_err(r, msg);
        return REC_ERR_TRUNCATED;
    }
    if (e->status < 200 || e->status >= 300) {
        char em[400];
        openai_error_message(e->errbody, e->errlen, em, sizeof em);
        snprintf(msg, sizeof msg, "HTTP %ld%s%s", e->status, em[0] ? ": " : "", em);
        client_set_err(r, msg);
        return REC_ERR_HTTP;
    }
    if (e->st->stream_error) return REC_ERR_STREAM;
    if (e->st->bad_json) return REC_ERR_JSON;
    if (!e->is_sse && e->n_events == 0) {
        char em[300];
        openai_error_message(e->errbody, e->errlen, em, sizeof em);
        snprintf(msg, sizeof msg, "not an SSE stream (Content-Type is not text/event-stream): %.200s", em);
        client_set_err(r, msg);
        return REC_ERR_JSON;
    }
    if (e->res != CURLE_OK || !(e->st->done || e->st->finished)) {
        snprintf(msg, sizeof msg, "stream ended before [DONE]%s%s", e->res != CURLE_OK ? ": " : "",
                 e->res != CURLE_OK ? curl_easy_strerror(e->res) : "");
        client_set_err(r, msg);
        return REC_ERR_TRUNCATED;
    }
    return REC_OK;
}
