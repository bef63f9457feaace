/* openai — request bodies and streamed-chunk interpretation for OpenAI-compatible servers. */
#include "client/openai.h"
#include "client/chunkscan.h"
#include "common/redact.h"
#include <jansson.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>

const char *openai_path(openai_api api) {
    return api == OPENAI_CHAT ? "/v1/chat/completions" : "/v1/completions";
}

/* A trace item's prompt (hundreds of KB of words) goes into the body as it is: it needs no JSON
 * escaping, and passing it through the JSON library cost ten times the rendering. The other
 * fields come from jansson; key order does not matter in JSON. */
static char *splice_prompt(openai_api api, const char *text, size_t len, const char *rest) {
    const char *head = api == OPENAI_CHAT ? "{\"messages\":[{\"role\":\"user\",\"content\":\"" : "{\"prompt\":\"";
    const char *tail = api == OPENAI_CHAT ? "\"}]," : "\",";
    size_t hl = strlen(head), tl = strlen(tail), rl = strlen(rest + 1);
    char *b = malloc(hl + len + tl + rl + 1);
    if (!b) return NULL;
    memcpy(b, head, hl);
    memcpy(b + hl, text, len);
    memcpy(b + hl + len, tail, tl);
    memcpy(b + hl + len + tl, rest + 1, rl + 1);   /* rest without its "{" */
    return b;
}

char *openai_request_body(openai_api api, const char *model, const dataset_item *item,
                          bool ignore_eos, bool include_usage) {
    json_t *o = json_object();
    if (!o) return NULL;
    /* a trace item's prompt is rendered now, from its block ids, and let go with the body */
    char *rendered = NULL;
    size_t text_len = 0;
    const char *text = dataset_item_text(item, &rendered, &text_len);
    if (item->blocks && !text) { json_decref(o); return NULL; }
    bool splice = item->blocks && dataset_item_text_plain(item);
    if (model) json_object_set_new(o, "model", json_string(model));
    if (splice) {
        /* the prompt goes in below */
    } else if (api == OPENAI_CHAT) {
        json_t *msgs = NULL;
        if (item->messages_json) msgs = json_loads(item->messages_json, 0, NULL);
        if (!msgs) {
            msgs = json_array();
            json_t *m = json_object();
            json_object_set_new(m, "role", json_string("user"));
            json_object_set_new(m, "content", json_string(text ? text : ""));
            json_array_append_new(msgs, m);
        }
        json_object_set_new(o, "messages", msgs);
    } else {
        const char *prompt = text;
        json_t *joined = NULL;
        if (!prompt && item->messages_json) {
            /* a chat-shaped item sent to the completions API: join the contents */
            json_t *msgs = json_loads(item->messages_json, 0, NULL);
            size_t i; json_t *m;
            char *acc = strdup("");
            json_array_foreach(msgs, i, m) {
                const char *c = json_string_value(json_object_get(m, "content"));
                if (!c) continue;
                size_t a = strlen(acc), b = strlen(c);
                char *n = realloc(acc, a + b + 2);
                if (!n) break;
                acc = n;
                if (a) acc[a++] = '\n';
                memcpy(acc + a, c, b + 1);
            }
            json_decref(msgs);
            joined = json_string(acc);
            free(acc);
        }
        json_object_set_new(o, "prompt", joined ? joined : json_string(prompt ? prompt : ""));
    }
    if (item->max_tokens >= 0) json_object_set_new(o, "max_tokens", json_integer(item->max_tokens));
    if (ignore_eos) json_object_set_new(o, "ignore_eos", json_true());
    json_object_set_new(o, "stream", json_true());
    if (include_usage) {
        json_t *so = json_object();
        json_object_set_new(so, "include_usage", json_true());
        json_object_set_new(o, "stream_options", so);
    }
    char *body = json_dumps(o, JSON_COMPACT);
    json_decref(o);
    if (splice && body) {
        char *whole = splice_prompt(api, text, text_len, body);
        free(body);
        body = whole;
    }
    free(rendered);
    return body;
}

static void set_error(record *r, const char *msg) {
    if (r->error) return;   /* keep the first */
    r->error = redact_text(msg);   /* a server may quote a credential in its error */
}

static void error_from_json(record *r, json_t *err) {
    char buf[512];
    const char *msg = NULL;
    if (json_is_string(err)) msg = json_string_value(err);
    else if (json_is_object(err)) msg = json_string_value(json_object_get(err, "message"));
    if (!msg) {
        char *d = json_dumps(err, JSON_COMPACT);
        snprintf(buf, sizeof buf, "%s", d ? d : "error");
        free(d);
        msg = buf;
    }
    set_error(r, msg);
}

/* Counts the tokens of one raw JSON string span (decoding escapes when present). */
static int32_t count_span(const token_counter *tc, const char *s, size_t n, bool escaped) {
    if (!n || !tc || !tc->count) return 0;
    if (!escaped) return tc->count(tc->ctx, s, n);
    char stackbuf[2048];
    char *buf = n * 2 + 8 <= sizeof stackbuf ? stackbuf : malloc(n * 2 + 8);
    if (!buf) return 1;
    long m = chunkscan_unescape(s, n, buf, n * 2 + 8);
    int32_t k = m > 0 ? tc->count(tc->ctx, buf, (size_t)m) : 0;
    if (buf != stackbuf) free(buf);
    return k;
}

/* Appends generated text to the kept answer (decoding escapes when present). */
static void keep_text(openai_stream *st, const char *s, size_t n, bool escaped) {
    if (!st->keep_text || !n) return;
    if (st->text_len + n * 2 + 8 > st->text_cap) {
        size_t nc = (st->text_len + n * 2 + 8) * 2;
        char *p = realloc(st->text, nc);
        if (!p) return;
        st->text = p;
        st->text_cap = nc;
    }
    if (!escaped) { memcpy(st->text + st->text_len, s, n); st->text_len += n; }
    else {
        long m = chunkscan_unescape(s, n, st->text + st->text_len, st->text_cap - st->text_len);
        if (m > 0) st->text_len += (size_t)m;
    }
    st->text[st->text_len] = 0;
}

void openai_stream_end(openai_stream *st, record *r) {
    if (r->cached_tokens < 0 && r->prompt_eval_server >= 0 && r->in_tokens_server >= 0)
        r->cached_tokens = r->in_tokens_server > r->prompt_eval_server ? r->in_tokens_server - r->prompt_eval_server : 0;
    if (st->keep_text && !r->text) {
        r->text = st->text ? st->text : strdup("");
        st->text = NULL;
        st->text_len = st->text_cap = 0;
    }
}

/* One content-carrying chunk: k_text answer tokens and k_reason reasoning tokens by the client's
 * counter. It becomes one chunk arrival, and it moves the reasoning phase along: the phase is
 * there when the first chunk carries reasoning text, and it ends at the first chunk with answer
 * text (its arrival is a_i, record.answer_ns). */
static int add_counted(openai_stream *st, record *r, int64_t t_ns, int32_t k_text, int32_t k_reason, bool has_text,
                       bool has_reason) {
    int32_t k = k_text + k_reason;
    /* a chunk of only whitespace still carries a token the server generated */
    if (k < 1) k = 1;
    st->tokens_client += k;
    if (has_reason) {
        /* the whitespace token belongs to the reasoning when the chunk has nothing else */
        int32_t kr = k_reason > 0 ? k_reason : (has_text ? 0 : 1);
        r->reasoning_tokens_client = (r->reasoning_tokens_client > 0 ? r->reasoning_tokens_client : 0) + kr;
    }
    if (r->n_chunks == 0) {
        r->first_ns = t_ns;
        st->in_reasoning = has_reason;
    }
    if (st->in_reasoning) {
        if (has_reason) r->reasoning_chunks++;
        if (has_text) { r->answer_ns = t_ns; st->in_reasoning = false; }
    }
    return record_add_chunk(r, t_ns, (unsigned)k);
}

/* A content-carrying chunk becomes one chunk arrival with its token count. */
static int add_content(openai_stream *st, record *r, const chunk_fields *f, int64_t t_ns, const token_counter *tc) {
    if (f->text_len + f->reasoning_len == 0) return 0;
    keep_text(st, f->text, f->text_len, f->text_escaped);
    return add_counted(st, r, t_ns, count_span(tc, f->text, f->text_len, f->text_escaped),
                       count_span(tc, f->reasoning, f->reasoning_len, f->reasoning_escaped), f->text_len > 0,
                       f->reasoning_len > 0);
}

/* A JSON number >= 0 as a double, else -1. */
static double nonneg(const json_t *v) { return json_is_number(v) && json_number_value(v) >= 0 ? json_number_value(v) : -1; }

/* The server's own account of the request, where it gives one:
 * - vLLM (--enable-per-request-metrics; docs/features/per_request_metrics.md): a top-level
 *   "metrics" object on the final usage chunk, time_to_first_token_ms (from scheduling),
 *   generation_time_ms (first to last output token), queue_time_ms; with
 *   --per-request-spec-decode-metrics, metrics.speculative_decoding: num_spec_steps,
 *   num_accepted_draft_tokens, num_draft_tokens, mean_acceptance_length
 *   (docs/features/speculative_decoding/acceptance_metrics.md);
 * - SGLang: "meta_info" (top level on its native stream, per choice on its OpenAI endpoints with
 *   return_meta_info): e2e_latency (s), spec_verify_ct, spec_accept_length. */
static void server_report(record *r, const json_t *o, const json_t *c0) {
    const json_t *met = json_object_get(o, "metrics");
    if (json_is_object(met)) {
        double v;
        if ((v = nonneg(json_object_get(met, "queue_time_ms"))) >= 0) r->server_queue_ms = v;
        if ((v = nonneg(json_object_get(met, "time_to_first_token_ms"))) >= 0) r->server_ttft_ms = v;
        if ((v = nonneg(json_object_get(met, "generation_time_ms"))) >= 0) r->server_decode_ms = v;
        const json_t *sd = json_object_get(met, "speculative_decoding");
        if (json_is_object(sd)) {
            if ((v = nonneg(json_object_get(sd, "num_spec_steps"))) >= 0) r->spec_steps_server = (int32_t)v;
            if ((v = nonneg(json_object_get(sd, "num_accepted_draft_tokens"))) >= 0) r->spec_accepted_server = (int32_t)v;
            if ((v = nonneg(json_object_get(sd, "num_draft_tokens"))) >= 0) r->spec_drafted_server = (int32_t)v;
            if ((v = nonneg(json_object_get(sd, "mean_acceptance_length"))) >= 0) r->spec_accept_len_server = v;
        }
    }
    const json_t *mi = json_object_get(o, "meta_info");
    if (!json_is_object(mi) && c0) mi = json_object_get(c0, "meta_info");
    if (json_is_object(mi)) {
        double v;
        if ((v = nonneg(json_object_get(mi, "e2e_latency"))) >= 0) r->server_e2e_ms = v * 1000;
        if ((v = nonneg(json_object_get(mi, "spec_verify_ct"))) >= 0) r->spec_steps_server = (int32_t)v;
        if ((v = nonneg(json_object_get(mi, "spec_accept_length"))) >= 0) r->spec_accept_len_server = v;
    }
}

int openai_stream_event(openai_stream *st, record *r, const char *data, size_t data_len,
                        const char *error_field, int64_t t_ns, const token_counter *tc) {
    if (error_field) {
        /* llama.cpp: `error: {...}` ends the stream */
        json_t *e = json_loads(error_field, 0, NULL);
        json_t *inner = e ? json_object_get(e, "error") : NULL;
        if (e) error_from_json(r, inner ? inner : e);
        else set_error(r, error_field);
        json_decref(e);
        st->stream_error = true;
        return 1;
    }
    if (!data) return 0;
    if (data_len == 6 && !memcmp(data, "[DONE]", 6)) { st->done = true; return 1; }
    chunk_fields f;
    if (chunkscan(data, data_len, &f) == 0 && !f.has_error) {
        st->last_data_ns = t_ns;
        if (add_content(st, r, &f, t_ns, tc) < 0) return 1;
        if (f.finished) st->finished = true;
        if (f.completion_tokens >= 0) r->out_tokens_server = (int32_t)f.completion_tokens;
        if (f.prompt_tokens >= 0) r->in_tokens_server = (int32_t)f.prompt_tokens;
        if (f.cached_tokens >= 0) r->cached_tokens = (int32_t)f.cached_tokens;
        if (f.prompt_eval >= 0) r->prompt_eval_server = (int32_t)f.prompt_eval;
        if (f.reasoning_tokens >= 0) r->reasoning_tokens_server = (int32_t)f.reasoning_tokens;
        if (f.prompt_ms >= 0) r->server_prompt_ms = f.prompt_ms;
        if (f.predicted_ms >= 0) r->server_predicted_ms = f.predicted_ms;
        if (f.predicted_n >= 0) r->server_predicted_n = (int32_t)f.predicted_n;
        return 0;
    }
    /* anything unusual (errors, malformed JSON, odd types) goes through the full parser. A
     * generated U+0000 is valid JSON ("\u0000", a token a random-weight or broken model does
     * emit): jansson refuses it unless asked, and the stream would be counted as failed */
    json_error_t jerr;
    json_t *o = json_loadb(data, data_len, JSON_ALLOW_NUL, &jerr);
    if (!o || !json_is_object(o)) {
        char msg[300];
        snprintf(msg, sizeof msg, "invalid JSON in stream: %.200s", data);
        set_error(r, msg);
        st->bad_json = true;
        json_decref(o);
        return 1;
    }
    st->last_data_ns = t_ns;
    json_t *err = json_object_get(o, "error");
    if (err && !json_is_null(err)) {
        error_from_json(r, err);
        st->stream_error = true;
        json_decref(o);
        return 1;
    }
    json_t *choices = json_object_get(o, "choices");
    json_t *c0 = json_is_array(choices) ? json_array_get(choices, 0) : NULL;
    if (c0) {
        const char *text = json_string_value(json_object_get(c0, "text"));
        size_t tlen = text ? json_string_length(json_object_get(c0, "text")) : 0;
        const char *reasoning = NULL;
        size_t rlen = 0;
        json_t *delta = json_object_get(c0, "delta");
        if (!text && delta) {
            json_t *c = json_object_get(delta, "content");
            text = json_string_value(c);
            tlen = text ? json_string_length(c) : 0;
            json_t *rc = json_object_get(delta, "reasoning_content");
            if (!json_is_string(rc)) rc = json_object_get(delta, "reasoning");
            reasoning = json_string_value(rc);
            rlen = reasoning ? json_string_length(rc) : 0;
        }
        if (tlen + rlen > 0) {
            int32_t kt = tlen && tc && tc->count ? tc->count(tc->ctx, text, tlen) : 0;
            int32_t kr = rlen && tc && tc->count ? tc->count(tc->ctx, reasoning, rlen) : 0;
            keep_text(st, text, tlen, false);
            if (add_counted(st, r, t_ns, kt, kr, tlen > 0, rlen > 0) < 0) { json_decref(o); return 1; }
        }
        json_t *fr = json_object_get(c0, "finish_reason");
        if (fr && !json_is_null(fr)) st->finished = true;
    }
    json_t *usage = json_object_get(o, "usage");
    if (json_is_object(usage)) {
        json_t *ct = json_object_get(usage, "completion_tokens");
        json_t *pt = json_object_get(usage, "prompt_tokens");
        if (json_is_integer(ct)) r->out_tokens_server = (int32_t)json_integer_value(ct);
        if (json_is_integer(pt)) r->in_tokens_server = (int32_t)json_integer_value(pt);
        json_t *cached = json_object_get(json_object_get(usage, "prompt_tokens_details"), "cached_tokens");
        if (!json_is_integer(cached)) cached = json_object_get(usage, "prompt_cache_hit_tokens");
        if (json_is_integer(cached)) r->cached_tokens = (int32_t)json_integer_value(cached);
        json_t *rt = json_object_get(json_object_get(usage, "completion_tokens_details"), "reasoning_tokens");
        if (json_is_integer(rt)) r->reasoning_tokens_server = (int32_t)json_integer_value(rt);
    }
    server_report(r, o, c0);
    json_t *timings = json_object_get(o, "timings");
    json_t *pn = json_object_get(timings, "prompt_n"), *dn = json_object_get(timings, "predicted_n");
    json_t *pms = json_object_get(timings, "prompt_ms"), *dms = json_object_get(timings, "predicted_ms");
    if (json_is_integer(pn)) r->prompt_eval_server = (int32_t)json_integer_value(pn);
    if (json_is_integer(dn)) r->server_predicted_n = (int32_t)json_integer_value(dn);
    if (json_is_number(pms) && json_number_value(pms) >= 0) r->server_prompt_ms = json_number_value(pms);
    if (json_is_number(dms) && json_number_value(dms) >= 0) r->server_predicted_ms = json_number_value(dms);
    json_decref(o);
    return 0;
}

void openai_error_message(const char *body, size_t len, char *buf, size_t buflen) {
    buf[0] = 0;
    if (!body || !len) return;
    json_t *o = json_loadb(body, len, 0, NULL);
    const char *msg = NULL;
    if (o) {
        json_t *e = json_object_get(o, "error");
        if (json_is_object(e)) msg = json_string_value(json_object_get(e, "message"));
        else if (json_is_string(e)) msg = json_string_value(e);
        if (!msg) msg = json_string_value(json_object_get(o, "detail"));
        if (!msg) msg = json_string_value(json_object_get(o, "message"));
    }
    if (msg) snprintf(buf, buflen, "%s", msg);
    else {
        /* not JSON: the first line of the body, printable bytes only */
        size_t j = 0;
        for (size_t i = 0; i < len && j + 1 < buflen && body[i] != '\n'; i++)
            buf[j++] = (body[i] >= 32 && body[i] < 127) ? body[i] : '?';
        buf[j] = 0;
    }
    json_decref(o);
}
