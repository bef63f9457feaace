/* record — storage for per-request measurements. */
#include "metrics/record.h"
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

static const char *const outcome_names[REC_OUTCOME_COUNT] = {
    "ok", "connect", "timeout", "http", "stream", "truncated", "invalid_json", "cancelled",
};

const char *rec_outcome_name(rec_outcome o) {
    return (unsigned)o < REC_OUTCOME_COUNT ? outcome_names[o] : "unknown";
}

int32_t record_out_tokens(const record *r) {
    if (r->out_tokens_server >= 0) return r->out_tokens_server;
    if (r->out_tokens_client >= 0) return r->out_tokens_client;
    return (int32_t)r->n_chunks;
}

/* The state of a record that has measured nothing: zeroes, -1 for the unknown token counts. */
static void record_blank(record *r) {
    memset(r, 0, sizeof *r);
    r->in_tokens = r->in_tokens_server = r->out_tokens_server = r->out_tokens_client = -1;
    r->max_tokens = -1;
    r->cached_tokens = r->prompt_eval_server = r->cacheable_tokens = -1;
    r->reasoning_tokens_client = r->reasoning_tokens_server = r->server_predicted_n = -1;
    r->server_prompt_ms = r->server_predicted_ms = -1;
    r->server_queue_ms = r->server_ttft_ms = r->server_decode_ms = r->server_e2e_ms = -1;
    r->spec_steps_server = r->spec_accepted_server = r->spec_drafted_server = -1;
    r->spec_accept_len_server = -1;
}

void recset_init(recset *s) { memset(s, 0, sizeof *s); }

record *recset_add(recset *s) {
    if (s->n == s->cap) {
        size_t nc = s->cap ? s->cap * 2 : 1024;
        record *nv = realloc(s->v, nc * sizeof *nv);
        if (!nv) return NULL;
        s->v = nv;
        s->cap = nc;
    }
    record *r = &s->v[s->n++];
    record_blank(r);
    return r;
}

void record_reset(record *r) {
    int64_t *chunk_ns = r->chunk_ns;
    uint32_t cap = r->chunk_cap;
    free(r->chunk_tokens);
    free(r->error);
    free(r->text);
    record_blank(r);
    r->chunk_ns = chunk_ns;
    r->chunk_cap = cap;
}

/* Materialises the per-chunk token counts (every chunk so far held one token). 0, or -1 out of memory. */
static int chunk_counts(record *r) {
    if (r->chunk_tokens) return 0;
    uint16_t *k = malloc((r->chunk_cap ? r->chunk_cap : 1) * sizeof *k);
    if (!k) return -1;
    for (uint32_t i = 0; i < r->n_chunks; i++) k[i] = 1;
    r->chunk_tokens = k;
    return 0;
}

int record_add_chunk(record *r, int64_t t_ns, unsigned tokens) {
    if (tokens == 0) tokens = 1;
    uint32_t n = r->n_chunks;
    if (n == r->chunk_cap) {
        uint32_t nc = n ? n * 2 : 16;
        int64_t *t = realloc(r->chunk_ns, nc * sizeof *t);
        if (!t) return -1;
        r->chunk_ns = t;
        if (r->chunk_tokens) {
            uint16_t *k = realloc(r->chunk_tokens, nc * sizeof *k);
            if (!k) return -1;
            r->chunk_tokens = k;
        }
        r->chunk_cap = nc;
    }
    /* the first multi-token chunk materialises the per-chunk counts (all earlier ones were 1) */
    if (tokens != 1 && chunk_counts(r) < 0) return -1;
    r->chunk_ns[n] = t_ns;
    if (r->chunk_tokens) r->chunk_tokens[n] = (uint16_t)(tokens > 65535 ? 65535 : tokens);
    r->n_chunks = n + 1;
    return 0;
}

int record_extend_last_chunk(record *r, int64_t t_ns, unsigned tokens) {
    uint32_t n = r->n_chunks;
    if (n == 0) return -1;
    if (tokens == 0) tokens = 1;
    if (chunk_counts(r) < 0) return -1;
    if ((unsigned)r->chunk_tokens[n - 1] + tokens > 65535) return -1;   /* a new chunk then */
    r->chunk_ns[n - 1] = t_ns;
    r->chunk_tokens[n - 1] = (uint16_t)(r->chunk_tokens[n - 1] + tokens);
    return 0;
}

void record_free(record *r) {
    free(r->chunk_ns);
    free(r->chunk_tokens);
    free(r->error);
    free(r->text);
    r->chunk_ns = NULL;
    r->chunk_tokens = NULL;
    r->error = NULL;
    r->text = NULL;
    r->n_chunks = r->chunk_cap = 0;
}

void recset_free(recset *s) {
    for (size_t i = 0; i < s->n; i++) record_free(&s->v[i]);
    free(s->v);
    memset(s, 0, sizeof *s);
}

static const char *const end_names[REC_END_COUNT] = {
    "completed", "server_error", "client_deadline", "interrupt", "early_stop",
};

const char *rec_end_name(rec_end e) { return (unsigned)e < REC_END_COUNT ? end_names[e] : "unknown"; }

rec_end record_end(const record *r) {
    if (r->outcome == REC_OK) return REC_END_COMPLETED;
    if (r->outcome != REC_ERR_CANCELLED) return REC_END_SERVER_ERROR;
    switch ((rec_cancel)r->cancel) {
    case REC_CANCEL_INTERRUPT: return REC_END_INTERRUPT;
    case REC_CANCEL_EARLY_STOP: return REC_END_EARLY_STOP;
    default: return REC_END_DEADLINE;
    }
}

void recset_mark_cancelled(recset *s, size_t from, rec_cancel why) {
    static const char *const what[REC_CANCEL_COUNT] = {
        NULL,
        "the run's time (--duration + --grace) ran out while it was in flight or queued",
        "the run was interrupted (Ctrl-C / SIGTERM)",
        "the sweep stopped this over-saturated level early",
    };
    for (size_t i = from; i < s->n; i++) {
        record *r = &s->v[i];
        if (r->outcome != REC_ERR_CANCELLED || r->cancel != REC_CANCEL_NONE) continue;
        r->cancel = (uint8_t)why;
        if ((unsigned)why >= REC_CANCEL_COUNT || !what[why]) continue;
        char buf[200];
        snprintf(buf, sizeof buf, "cancelled by dsperf, not a server failure: %s%s", what[why],
                 r->send_ns > 0 ? "" : " (never sent: it was still in the client queue)");
        free(r->error);
        r->error = strdup(buf);
    }
}
