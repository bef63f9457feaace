/* requests_read — the per-request JSONL back into records (see results.h). */
#include "results/results.h"
#include "common/fileio.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <stddef.h>

/* Shift applied to the file's relative times: far beyond any schedule before the first send. */
#define T0_NS (INT64_C(1) << 50)

static int64_t t_of(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) + T0_NS : 0;
}

static int32_t i_of(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int32_t)json_integer_value(v) : -1;
}

static rec_outcome outcome_of(const char *name) {
    for (int k = 0; k < REC_OUTCOME_COUNT; k++)
        if (name && !strcmp(name, rec_outcome_name((rec_outcome)k))) return (rec_outcome)k;
    return REC_ERR_STREAM;
}

static rec_cancel cancel_of(const char *end) {
    if (!end) return REC_CANCEL_NONE;
    if (!strcmp(end, "interrupt")) return REC_CANCEL_INTERRUPT;
    if (!strcmp(end, "early_stop")) return REC_CANCEL_EARLY_STOP;
    if (!strcmp(end, "client_deadline")) return REC_CANCEL_DEADLINE;
    return REC_CANCEL_NONE;
}

static int fill(record *r, const json_t *o) {
    r->index = (uint32_t)i_of(o, "index");
    r->class_id = (uint16_t)(i_of(o, "class") > 0 ? i_of(o, "class") : 0);
    r->outcome = (uint8_t)outcome_of(json_string_value(json_object_get(o, "outcome")));
    if (r->outcome == REC_ERR_CANCELLED) r->cancel = (uint8_t)cancel_of(json_string_value(json_object_get(o, "end")));
    r->warmup = json_is_true(json_object_get(o, "warmup"));
    r->http_status = i_of(o, "http_status") > 0 ? i_of(o, "http_status") : 0;
    r->sched_ns = t_of(o, "sched_ns");
    r->send_ns = t_of(o, "send_ns");
    r->first_ns = t_of(o, "first_ns");
    r->last_ns = t_of(o, "last_ns");
    r->end_ns = t_of(o, "end_ns");
    double cms = json_number_value(json_object_get(o, "connect_ms"));
    r->connect_ns = cms > 0 ? (int64_t)llround(cms * 1e6) : 0;
    r->in_tokens = i_of(o, "in_tokens");
    r->in_tokens_server = i_of(o, "in_tokens_server");
    r->out_tokens_server = i_of(o, "out_tokens_server");
    r->out_tokens_client = i_of(o, "out_tokens_client");
    r->max_tokens = i_of(o, "max_tokens");
    if (json_is_integer(json_object_get(o, "reasoning_chunks"))) {
        r->reasoning_chunks = (uint32_t)i_of(o, "reasoning_chunks");
        r->answer_ns = t_of(o, "answer_ns");
        r->reasoning_tokens_server = i_of(o, "reasoning_tokens_server");
        r->reasoning_tokens_client = i_of(o, "reasoning_tokens_client");
    }
    const json_t *spm = json_object_get(o, "server_prompt_ms"), *sdm = json_object_get(o, "server_predicted_ms");
    if (json_is_number(spm)) r->server_prompt_ms = json_number_value(spm);
    if (json_is_number(sdm)) r->server_predicted_ms = json_number_value(sdm);
    if (json_is_integer(json_object_get(o, "server_predicted_n"))) r->server_predicted_n = i_of(o, "server_predicted_n");
    if (json_is_integer(json_object_get(o, "server_prompt_n"))) r->prompt_eval_server = i_of(o, "server_prompt_n");
    static const struct { const char *k; size_t off; } ms[] = {
        {"server_queue_ms", offsetof(record, server_queue_ms)}, {"server_ttft_ms", offsetof(record, server_ttft_ms)},
        {"server_decode_ms", offsetof(record, server_decode_ms)}, {"server_e2e_ms", offsetof(record, server_e2e_ms)},
        {"spec_accept_len_server", offsetof(record, spec_accept_len_server)} };
    for (size_t k = 0; k < sizeof ms / sizeof ms[0]; k++) {
        const json_t *v = json_object_get(o, ms[k].k);
        if (json_is_number(v)) *(double *)((char *)r + ms[k].off) = json_number_value(v);
    }
    if (json_is_integer(json_object_get(o, "spec_steps_server"))) r->spec_steps_server = i_of(o, "spec_steps_server");
    if (json_is_integer(json_object_get(o, "spec_accepted_server"))) r->spec_accepted_server = i_of(o, "spec_accepted_server");
    if (json_is_integer(json_object_get(o, "spec_drafted_server"))) r->spec_drafted_server = i_of(o, "spec_drafted_server");
    const json_t *ch = json_object_get(o, "chunk_ns"), *tok = json_object_get(o, "chunk_tokens");
    for (size_t k = 0; k < json_array_size(ch); k++) {
        json_int_t m = json_integer_value(json_array_get(tok, k));
        if (record_add_chunk(r, (int64_t)json_integer_value(json_array_get(ch, k)) + T0_NS, m > 0 ? (unsigned)m : 1) < 0) return -1;
    }
    const char *e = json_string_value(json_object_get(o, "error"));
    if (e && !(r->error = strdup(e))) return -1;
    return 0;
}

int results_read_requests_jsonl(const char *path, recset *out, int64_t *t0_ns, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    *t0_ns = T0_NS;
    if (fileio_read_all(path, &text, &len) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return -1;
    }
    size_t line = 0;
    int rc = 0;
    for (char *p = text; rc == 0 && p < text + len;) {
        char *nl = memchr(p, '\n', (size_t)(text + len - p));
        size_t n = nl ? (size_t)(nl - p) : (size_t)(text + len - p);
        line++;
        if (n > 0) {
            json_error_t je;
            json_t *o = json_loadb(p, n, 0, &je);
            if (!json_is_object(o)) {
                snprintf(err, errlen, "%s:%zu: not a JSON object (%s)", path, line, je.text);
                rc = -1;
            } else {
                record *r = recset_add(out);
                if (!r || fill(r, o) < 0) {
                    snprintf(err, errlen, "out of memory reading %s", path);
                    rc = -1;
                }
            }
            json_decref(o);
        }
        p += n + 1;
    }
    free(text);
    return rc;
}
