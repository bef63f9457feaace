/* accept — acceptance length per request and per run (see accept.h; the definitions are the
 * README's metric table). */
#include "metrics/accept.h"
#include "metrics/stats.h"
#include <math.h>
#include <stdio.h>

#define POS_BINS 16   /* [1,16), [16,32), ... [2^18, 2^19): far past any max_tokens */

static unsigned chunk_tok(const record *r, uint32_t k) {
    return r->chunk_tokens && r->chunk_tokens[k] > 0 ? r->chunk_tokens[k] : 1;
}

double accept_len_of(const record *r) {
    if (!r->chunk_ns || r->n_chunks < 2) return NAN;
    double tok = 0;
    for (uint32_t k = 1; k < r->n_chunks; k++) tok += chunk_tok(r, k);
    return tok / (r->n_chunks - 1);
}

double accept_len_server_of(const record *r) {
    if (r->spec_accept_len_server >= 1) return r->spec_accept_len_server;
    if (r->spec_steps_server > 0 && r->spec_accepted_server >= 0)
        return 1 + (double)r->spec_accepted_server / r->spec_steps_server;
    return NAN;
}

/* The position bin of output position p >= 1: [1,16) is 0, then one per doubling. */
static int pos_bin(long p) {
    int b = 0;
    for (long hi = 16; p >= hi && b < POS_BINS - 1; hi *= 2) b++;
    return b;
}

void accept_add(json_t *obj, const recset *recs, const summary_opts *o) {
    stats_samples per;
    stats_init(&per);
    long n = 0, multi = 0, chunks = 0, tokens = 0, srv_n = 0;
    long bin_chunks[POS_BINS] = { 0 }, bin_tokens[POS_BINS] = { 0 };
    double srv_steps = 0, srv_tok = 0, srv_acc = 0, srv_draft = 0;
    long srv_acc_n = 0;
    int rc = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_OK) continue;
        double a = accept_len_of(r), as = accept_len_server_of(r);
        if (isfinite(as) && r->spec_steps_server > 0) {
            srv_n++;
            srv_steps += r->spec_steps_server;
            srv_tok += as * r->spec_steps_server;
            if (r->spec_accepted_server >= 0 && r->spec_drafted_server > 0) {
                srv_acc += r->spec_accepted_server;
                srv_draft += r->spec_drafted_server;
                srv_acc_n++;
            }
        }
        if (!isfinite(a)) continue;
        n++;
        rc |= stats_add(&per, a);
        long pos = chunk_tok(r, 0);
        for (uint32_t k = 1; k < r->n_chunks; k++) {
            unsigned m = chunk_tok(r, k);
            chunks++;
            tokens += m;
            if (m > 1) multi++;
            int b = pos_bin(pos);
            bin_chunks[b]++;
            bin_tokens[b] += m;
            pos += m;
        }
    }
    if (rc == 0 && (multi > 0 || srv_n > 0)) {
        json_t *sd = json_object();
        json_object_set_new(sd, "requests", json_integer(n));
        json_object_set_new(sd, "decode_chunks", json_integer(chunks));
        json_object_set_new(sd, "decode_tokens", json_integer(tokens));
        json_object_set_new(sd, "multi_token_chunks", json_integer(multi));
        json_object_set_new(sd, "mean_acceptance_length", chunks ? json_real((double)tokens / chunks) : json_null());
        stats_sort(&per);
        if (per.n) {
            json_object_set_new(sd, "mean_request_acceptance_length", json_real(stats_mean(per.v, per.n)));
            json_object_set_new(sd, "median_request_acceptance_length", json_real(stats_percentile_sorted(per.v, per.n, 50)));
            json_object_set_new(sd, "std_request_acceptance_length", json_real(stats_std(per.v, per.n)));
            json_object_set_new(sd, "min_request_acceptance_length", json_real(per.v[0]));
            json_object_set_new(sd, "max_request_acceptance_length", json_real(per.v[per.n - 1]));
            for (int i = 0; i < o->n_percentiles; i++) {
                char p[32], key[80];
                summary_percentile_label(o->percentiles[i], p, sizeof p);
                snprintf(key, sizeof key, "p%s_request_acceptance_length", p);
                json_object_set_new(sd, key, json_real(stats_percentile_sorted(per.v, per.n, o->percentiles[i])));
            }
        }
        json_t *bp = json_array();
        for (int b = 0; b < POS_BINS; b++) {
            if (!bin_chunks[b]) continue;
            long from = b == 0 ? 1 : 16L << (b - 1), to = 16L << b;
            json_t *e = json_object();
            json_object_set_new(e, "from", json_integer(from));
            json_object_set_new(e, "to", json_integer(to));
            json_object_set_new(e, "chunks", json_integer(bin_chunks[b]));
            json_object_set_new(e, "tokens", json_integer(bin_tokens[b]));
            json_object_set_new(e, "acceptance_length", json_real((double)bin_tokens[b] / bin_chunks[b]));
            json_array_append_new(bp, e);
        }
        json_object_set_new(sd, "by_position", bp);
        if (srv_n > 0) {
            json_t *s = json_object();
            json_object_set_new(s, "requests", json_integer(srv_n));
            json_object_set_new(s, "steps", json_real(srv_steps));
            json_object_set_new(s, "acceptance_length", json_real(srv_tok / srv_steps));
            if (srv_acc_n > 0) {
                json_object_set_new(s, "accepted_draft_tokens", json_real(srv_acc));
                json_object_set_new(s, "draft_tokens", json_real(srv_draft));
                json_object_set_new(s, "draft_acceptance_rate", json_real(srv_acc / srv_draft));
            }
            json_object_set_new(sd, "server", s);
        }
        json_object_set_new(obj, "spec_decode", sd);
    }
    stats_free(&per);
}
