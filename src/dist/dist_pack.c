/* dist_pack — the bytes a rank's part travels in: records (fixed fields, their error text, their
 * chunk arrays when the run saves requests), histograms as their non-empty buckets, and the
 * shift of a rank's timestamps onto rank 0's clock. Hosts of one job share the byte order (the
 * platforms Open MPI runs dsperf on are little-endian), so fields are copied as they are. */
#include "dist/dist_int.h"
#include <stdlib.h>
#include <string.h>

#define ERROR_MAX 256

void dbuf_put(dist_buf *b, const void *v, size_t len) {
    if (b->oom || !len) return;
    if (b->n + len > b->cap) {
        size_t nc = b->cap ? b->cap : 4096;
        while (nc < b->n + len) nc *= 2;
        unsigned char *np = realloc(b->p, nc);
        if (!np) { b->oom = 1; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, v, len);
    b->n += len;
}

void dbuf_i64(dist_buf *b, int64_t v) { dbuf_put(b, &v, sizeof v); }

void dbuf_str(dist_buf *b, const char *s) {
    int64_t n = s ? (int64_t)strlen(s) : -1;
    dbuf_i64(b, n);
    if (s) dbuf_put(b, s, (size_t)n);
}

void drd_get(dist_rd *r, void *v, size_t len) {
    if (r->bad || len > r->n - r->off) { r->bad = 1; memset(v, 0, len); return; }
    memcpy(v, r->p + r->off, len);
    r->off += len;
}

int64_t drd_i64(dist_rd *r) { int64_t v; drd_get(r, &v, sizeof v); return v; }

char *drd_str(dist_rd *r) {
    int64_t n = drd_i64(r);
    if (n < 0 || r->bad) return NULL;
    if ((size_t)n > r->n - r->off) { r->bad = 1; return NULL; }
    char *s = malloc((size_t)n + 1);
    if (!s) { r->bad = 1; return NULL; }
    drd_get(r, s, (size_t)n);
    s[n] = 0;
    return s;
}

/* The fixed part of a record, as it travels. */
typedef struct {
    uint32_t index;
    uint16_t class_id;
    uint8_t outcome, warmup;
    int32_t http_status;
    int64_t sched_ns, send_ns, first_ns, last_ns, end_ns, connect_ns;
    int32_t in_tokens, in_tokens_server, out_tokens_server, out_tokens_client, max_tokens;
    int32_t cached_tokens, prompt_eval_server, cacheable_tokens;   /* prefix cache (metrics/workload.h) */
    uint32_t session;                                               /* conversation + 1, and its turn */
    uint32_t reasoning_chunks;                                      /* reasoning vs answer (metrics/phases.h) */
    int32_t reasoning_tokens_client, reasoning_tokens_server, server_predicted_n;
    int64_t answer_ns;
    double server_prompt_ms, server_predicted_ms;                   /* the server's timing (llama.cpp) */
    double server_queue_ms, server_ttft_ms, server_decode_ms, server_e2e_ms;   /* vLLM metrics, SGLang meta_info */
    double spec_accept_len_server;                                  /* speculative decoding (metrics/accept.h) */
    int32_t spec_steps_server, spec_accepted_server, spec_drafted_server, pad3;
    uint16_t turn, pad2;
    uint32_t n_chunks;
    uint8_t has_error, has_chunks, has_chunk_tokens, pad;
} wire_record;

void dist_pack_records(dist_buf *b, const recset *recs, bool chunks) {
    dbuf_i64(b, (int64_t)recs->n);
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        wire_record w;
        memset(&w, 0, sizeof w);
        w.index = r->index; w.class_id = r->class_id; w.outcome = r->outcome; w.warmup = r->warmup;
        w.http_status = r->http_status;
        w.sched_ns = r->sched_ns; w.send_ns = r->send_ns; w.first_ns = r->first_ns; w.last_ns = r->last_ns;
        w.end_ns = r->end_ns; w.connect_ns = r->connect_ns;
        w.in_tokens = r->in_tokens; w.in_tokens_server = r->in_tokens_server;
        w.out_tokens_server = r->out_tokens_server; w.out_tokens_client = r->out_tokens_client;
        w.max_tokens = r->max_tokens; w.n_chunks = r->n_chunks;
        w.cached_tokens = r->cached_tokens; w.prompt_eval_server = r->prompt_eval_server;
        w.cacheable_tokens = r->cacheable_tokens; w.session = r->session; w.turn = r->turn;
        w.reasoning_chunks = r->reasoning_chunks; w.answer_ns = r->answer_ns;
        w.reasoning_tokens_client = r->reasoning_tokens_client; w.reasoning_tokens_server = r->reasoning_tokens_server;
        w.server_prompt_ms = r->server_prompt_ms; w.server_predicted_ms = r->server_predicted_ms;
        w.server_predicted_n = r->server_predicted_n;
        w.server_queue_ms = r->server_queue_ms; w.server_ttft_ms = r->server_ttft_ms;
        w.server_decode_ms = r->server_decode_ms; w.server_e2e_ms = r->server_e2e_ms;
        w.spec_accept_len_server = r->spec_accept_len_server; w.spec_steps_server = r->spec_steps_server;
        w.spec_accepted_server = r->spec_accepted_server; w.spec_drafted_server = r->spec_drafted_server;
        w.has_error = r->error != NULL;
        w.has_chunks = chunks && r->n_chunks && r->chunk_ns;
        w.has_chunk_tokens = w.has_chunks && r->chunk_tokens;
        dbuf_put(b, &w, sizeof w);
        if (w.has_error) {
            /* error texts are for people: cut, so a run of failures stays small */
            char e[ERROR_MAX + 1];
            snprintf(e, sizeof e, "%s", r->error);
            dbuf_str(b, e);
        }
        if (w.has_chunks) dbuf_put(b, r->chunk_ns, r->n_chunks * sizeof *r->chunk_ns);
        if (w.has_chunk_tokens) dbuf_put(b, r->chunk_tokens, r->n_chunks * sizeof *r->chunk_tokens);
    }
}

int dist_unpack_records(dist_rd *rd, recset *out) {
    int64_t n = drd_i64(rd);
    if (rd->bad || n < 0 || (size_t)n > (rd->n - rd->off) / sizeof(wire_record)) return -1;
    for (int64_t i = 0; i < n; i++) {
        wire_record w;
        drd_get(rd, &w, sizeof w);
        if (rd->bad) return -1;
        record *r = recset_add(out);
        if (!r) return -1;
        r->index = w.index; r->class_id = w.class_id; r->outcome = w.outcome; r->warmup = w.warmup;
        r->http_status = w.http_status;
        r->sched_ns = w.sched_ns; r->send_ns = w.send_ns; r->first_ns = w.first_ns; r->last_ns = w.last_ns;
        r->end_ns = w.end_ns; r->connect_ns = w.connect_ns;
        r->in_tokens = w.in_tokens; r->in_tokens_server = w.in_tokens_server;
        r->out_tokens_server = w.out_tokens_server; r->out_tokens_client = w.out_tokens_client;
        r->max_tokens = w.max_tokens;
        r->cached_tokens = w.cached_tokens; r->prompt_eval_server = w.prompt_eval_server;
        r->cacheable_tokens = w.cacheable_tokens; r->session = w.session; r->turn = w.turn;
        r->reasoning_chunks = w.reasoning_chunks; r->answer_ns = w.answer_ns;
        r->reasoning_tokens_client = w.reasoning_tokens_client; r->reasoning_tokens_server = w.reasoning_tokens_server;
        r->server_prompt_ms = w.server_prompt_ms; r->server_predicted_ms = w.server_predicted_ms;
        r->server_predicted_n = w.server_predicted_n;
        r->server_queue_ms = w.server_queue_ms; r->server_ttft_ms = w.server_ttft_ms;
        r->server_decode_ms = w.server_decode_ms; r->server_e2e_ms = w.server_e2e_ms;
        r->spec_accept_len_server = w.spec_accept_len_server; r->spec_steps_server = w.spec_steps_server;
        r->spec_accepted_server = w.spec_accepted_server; r->spec_drafted_server = w.spec_drafted_server;
        /* without its chunk arrays a record keeps its chunk count (summary_compute_parts) */
        r->n_chunks = w.n_chunks;
        if (w.has_error) r->error = drd_str(rd);
        if (w.has_chunks) {
            size_t bytes = (size_t)w.n_chunks * sizeof *r->chunk_ns;
            if (bytes > rd->n - rd->off || !(r->chunk_ns = malloc(bytes))) return -1;
            drd_get(rd, r->chunk_ns, bytes);
            r->chunk_cap = w.n_chunks;
            if (w.has_chunk_tokens) {
                size_t tb = (size_t)w.n_chunks * sizeof *r->chunk_tokens;
                if (tb > rd->n - rd->off || !(r->chunk_tokens = malloc(tb))) return -1;
                drd_get(rd, r->chunk_tokens, tb);
            }
        }
        if (rd->bad) return -1;
    }
    return 0;
}

void dist_pack_hist(dist_buf *b, const hdr_hist *h) {
    dbuf_i64(b, (int64_t)h->total);
    dbuf_i64(b, (int64_t)h->saturated);
    dbuf_i64(b, h->min);
    dbuf_i64(b, h->max);
    dbuf_put(b, &h->mean, sizeof h->mean);
    dbuf_put(b, &h->m2, sizeof h->m2);
    int64_t nz = 0;
    for (size_t i = 0; i < HDR_BUCKETS; i++) nz += h->counts[i] != 0;
    dbuf_i64(b, nz);
    for (size_t i = 0; i < HDR_BUCKETS; i++) {
        if (!h->counts[i]) continue;
        uint32_t idx = (uint32_t)i;
        dbuf_put(b, &idx, sizeof idx);
        dbuf_put(b, &h->counts[i], sizeof h->counts[i]);
    }
}

int dist_unpack_hist_merge(dist_rd *r, hdr_hist *h) {
    hdr_hist *t = malloc(sizeof *t);
    if (!t) return -1;
    hdr_init(t);
    t->total = (uint64_t)drd_i64(r);
    t->saturated = (uint64_t)drd_i64(r);
    t->min = drd_i64(r);
    t->max = drd_i64(r);
    drd_get(r, &t->mean, sizeof t->mean);
    drd_get(r, &t->m2, sizeof t->m2);
    int64_t nz = drd_i64(r);
    uint64_t sum = 0;
    if (nz < 0 || nz > HDR_BUCKETS) r->bad = 1;
    for (int64_t k = 0; k < nz && !r->bad; k++) {
        uint32_t idx;
        uint64_t c;
        drd_get(r, &idx, sizeof idx);
        drd_get(r, &c, sizeof c);
        if (idx >= HDR_BUCKETS) { r->bad = 1; break; }
        t->counts[idx] += c;
        sum += c;
    }
    /* a histogram whose buckets do not add up to its total is corrupt, not mergeable */
    int bad = r->bad || sum != t->total;
    if (!bad) hdr_merge(h, t);
    free(t);
    return bad ? -1 : 0;
}

static void shift(int64_t *t, int64_t off) { if (*t > 0) *t += off; }

void dist_shift_records(recset *recs, const dist *d) {
    for (size_t i = 0; i < recs->n; i++) {
        record *r = &recs->v[i];
        /* one offset per record: its latencies stay differences of one clock's readings */
        int64_t at = r->sched_ns > 0 ? r->sched_ns : r->send_ns;
        int64_t off = dist_offset_at(d, at);
        shift(&r->sched_ns, off); shift(&r->send_ns, off); shift(&r->first_ns, off);
        shift(&r->last_ns, off); shift(&r->end_ns, off);
        for (uint32_t k = 0; r->chunk_ns && k < r->n_chunks; k++) r->chunk_ns[k] += off;
    }
}
