/* server_oai — OpenAI request parsing (jansson) and vLLM-shaped response writing (see
 * server_oai.h). Stream chunks are written with printf templates rather than a JSON library
 * because they are the hot path (tens of thousands per second); every string in them is either
 * pre-escaped (the model name) or from the fixed word list (nothing to escape). */
#include "server/server_oai.h"
#include <jansson.h>
#include <string.h>
#include <stdio.h>
#include <ctype.h>
#include <stdlib.h>

const char *oai_word(uint64_t seq, int64_t i) {
    return fixed_lm_word((uint32_t)((seq * 7 + (uint64_t)i) % FIXED_LM_VOCAB));
}

int32_t oai_count_words(const char *s) {
    int32_t n = 0;
    int in_word = 0;
    for (; *s; s++) {
        int sp = isspace((unsigned char)*s);
        if (!sp && !in_word) n++;
        in_word = !sp;
    }
    return n;
}

/* Words of a chat message content: a string, or an array of parts with "text". */
static int content_words(json_t *c, int32_t *n) {
    if (json_is_string(c)) { *n += oai_count_words(json_string_value(c)); return 0; }
    if (json_is_null(c)) return 0;
    if (!json_is_array(c)) return -1;
    size_t i;
    json_t *part;
    json_array_foreach(c, i, part) {
        json_t *t = json_object_get(part, "text");
        if (json_is_string(t)) *n += oai_count_words(json_string_value(t));
    }
    return 0;
}

/* prompt: a string, an array of one string, an array of token ids, or an array of one such array. */
static int prompt_tokens(json_t *p, int32_t *n, char *err, size_t errlen) {
    if (json_is_string(p)) { *n = oai_count_words(json_string_value(p)); return 0; }
    if (json_is_array(p) && json_array_size(p) > 0) {
        json_t *first = json_array_get(p, 0);
        if (json_is_integer(first)) { *n = (int32_t)json_array_size(p); return 0; }
        if (json_array_size(p) == 1) return prompt_tokens(first, n, err, errlen);
        snprintf(err, errlen, "batched prompts (an array of %zu prompts) are not supported; send one prompt per request",
                 json_array_size(p));
        return -1;
    }
    snprintf(err, errlen, "'prompt' must be a string, an array of token ids, or an array of one string");
    return -1;
}

static int get_bool(json_t *root, const char *key, bool *out, char *err, size_t errlen) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) { snprintf(err, errlen, "'%s' must be true or false", key); return -1; }
    *out = json_is_true(v);
    return 0;
}

int oai_parse_request(int api, const char *body, size_t len, int32_t default_max_tokens,
                      const fixed_lm *lm, int lm_style, oai_request *out, int *status, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->cached_tokens = -1;
    *status = 400;
    out->api = api;
    out->max_tokens = default_max_tokens;
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root) {
        snprintf(err, errlen, "invalid JSON body: %s (line %d, column %d)", je.text, je.line, je.column);
        return -1;
    }
    int rc = -1;
    if (!json_is_object(root)) { snprintf(err, errlen, "the body must be a JSON object"); goto out; }
    json_t *model = json_object_get(root, "model");
    if (model && !json_is_null(model)) {
        if (!json_is_string(model)) { snprintf(err, errlen, "'model' must be a string"); goto out; }
        snprintf(out->model, sizeof out->model, "%s", json_string_value(model));
    }
    if (api == OAI_COMPLETIONS) {
        json_t *p = json_object_get(root, "prompt");
        if (!p) { snprintf(err, errlen, "missing required field 'prompt'"); goto out; }
        if (prompt_tokens(p, &out->prompt_tokens, err, errlen) < 0) goto out;
    } else {
        json_t *msgs = json_object_get(root, "messages");
        if (!json_is_array(msgs) || json_array_size(msgs) == 0) {
            snprintf(err, errlen, "missing required field 'messages' (a non-empty array)");
            goto out;
        }
        size_t i;
        json_t *m;
        json_array_foreach(msgs, i, m) {
            if (!json_is_object(m) || !json_is_string(json_object_get(m, "role"))) {
                snprintf(err, errlen, "messages[%zu] must be an object with a 'role'", i);
                goto out;
            }
            if (content_words(json_object_get(m, "content"), &out->prompt_tokens) < 0) {
                snprintf(err, errlen, "messages[%zu].content must be a string or an array of parts", i);
                goto out;
            }
        }
    }
    const char *mt_keys[2] = {"max_tokens", api == OAI_CHAT ? "max_completion_tokens" : NULL};
    for (int k = 0; k < 2; k++) {
        if (!mt_keys[k]) continue;
        json_t *v = json_object_get(root, mt_keys[k]);
        if (!v || json_is_null(v)) continue;
        if (!json_is_integer(v) || json_integer_value(v) < 1 || json_integer_value(v) > 10000000) {
            snprintf(err, errlen, "'%s' must be an integer between 1 and 10000000", mt_keys[k]);
            goto out;
        }
        out->max_tokens = (int32_t)json_integer_value(v);
    }
    json_t *n = json_object_get(root, "n");
    if (n && !json_is_null(n) && !(json_is_integer(n) && json_integer_value(n) == 1)) {
        snprintf(err, errlen, "only n=1 is supported");
        goto out;
    }
    if (get_bool(root, "stream", &out->stream, err, errlen) < 0) goto out;
    if (get_bool(root, "ignore_eos", &out->ignore_eos, err, errlen) < 0) goto out;
    json_t *so = json_object_get(root, "stream_options");
    if (so && !json_is_null(so)) {
        if (!json_is_object(so)) { snprintf(err, errlen, "'stream_options' must be an object"); goto out; }
        if (get_bool(so, "include_usage", &out->include_usage, err, errlen) < 0) goto out;
    }
    if (oai_lm_parse(out, root, api == OAI_COMPLETIONS ? json_object_get(root, "prompt") : NULL,
                     api == OAI_CHAT ? json_object_get(root, "messages") : NULL, lm, lm_style, status, err, errlen) < 0)
        goto out;
    rc = 0;
out:
    json_decref(root);
    if (rc < 0) oai_request_free(out);
    return rc;
}

void oai_request_free(oai_request *rq) {
    free(rq->lm.prompt_text);
    free(rq->lm.ptoks);
    rq->lm.prompt_text = NULL;
    rq->lm.ptoks = NULL;
    rq->lm.n_ptoks = 0;
}

/* ---- stream chunks ---- */

static void chunk_head(struct evbuffer *o, const oai_ident *id) {
    if (id->api == OAI_CHAT)
        evbuffer_add_printf(o, "data: {\"id\":\"chatcmpl-%016llx\",\"object\":\"chat.completion.chunk\","
                               "\"created\":%lld,\"model\":%s,\"choices\":",
                            (unsigned long long)id->seq, (long long)id->created, id->model_json);
    else
        evbuffer_add_printf(o, "data: {\"id\":\"cmpl-%016llx\",\"object\":\"text_completion\","
                               "\"created\":%lld,\"model\":%s,\"choices\":",
                            (unsigned long long)id->seq, (long long)id->created, id->model_json);
}

void oai_sse_role(struct evbuffer *o, const oai_ident *id) {
    chunk_head(o, id);
    evbuffer_add_printf(o, "[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"},"
                           "\"logprobs\":null,\"finish_reason\":null}]}\n\n");
}

static void add_words(struct evbuffer *o, uint64_t seq, int64_t first, int32_t n) {
    for (int32_t i = 0; i < n; i++) {
        const char *w = oai_word(seq, first + i);
        evbuffer_add(o, w, strlen(w));
    }
}

static void add_finish(struct evbuffer *o, const char *finish_reason) {
    if (finish_reason) evbuffer_add_printf(o, "\"%s\"", finish_reason);
    else evbuffer_add(o, "null", 4);
}

void oai_sse_tokens(struct evbuffer *o, const oai_ident *id, oai_request *rq, int64_t first_word, int32_t n,
                    const char *finish_reason) {
    if (rq->lm.on) { oai_lm_sse_tokens(o, id, rq, n, finish_reason); return; }
    if (id->api == OAI_CHAT && first_word < rq->reasoning_tokens) {
        /* the reasoning phase, as vLLM and SGLang stream it with a reasoning parser: its words in
         * delta.reasoning_content; a chunk that crosses into the answer is written as two */
        int32_t k = rq->reasoning_tokens - first_word < n ? (int32_t)(rq->reasoning_tokens - first_word) : n;
        chunk_head(o, id);
        evbuffer_add_printf(o, "[{\"index\":0,\"delta\":{\"reasoning_content\":\"");
        add_words(o, id->seq, first_word, k);
        evbuffer_add_printf(o, "\"},\"logprobs\":null,\"finish_reason\":");
        add_finish(o, k == n ? finish_reason : NULL);
        evbuffer_add_printf(o, "}]}\n\n");
        if (k == n) return;
        first_word += k;
        n -= k;
    }
    chunk_head(o, id);
    if (id->api == OAI_CHAT) {
        evbuffer_add_printf(o, "[{\"index\":0,\"delta\":{\"content\":\"");
        add_words(o, id->seq, first_word, n);
        evbuffer_add_printf(o, "\"},\"logprobs\":null,\"finish_reason\":");
        add_finish(o, finish_reason);
        evbuffer_add_printf(o, "}]}\n\n");
    } else {
        evbuffer_add_printf(o, "[{\"index\":0,\"text\":\"");
        add_words(o, id->seq, first_word, n);
        evbuffer_add_printf(o, "\",\"logprobs\":null,\"finish_reason\":");
        add_finish(o, finish_reason);
        evbuffer_add_printf(o, ",\"stop_reason\":null}]}\n\n");
    }
}

/* ,"prompt_tokens_details":{"cached_tokens":N} as vLLM writes it (--enable-prompt-tokens-details) */
static void add_cached(struct evbuffer *o, int32_t cached_tokens) {
    if (cached_tokens >= 0) evbuffer_add_printf(o, ",\"prompt_tokens_details\":{\"cached_tokens\":%d}", cached_tokens);
}

/* ,"completion_tokens_details":{"reasoning_tokens":N} of the words generated so far */
static void add_reasoning(struct evbuffer *o, int32_t reasoning_tokens, int32_t completion_tokens) {
    if (reasoning_tokens > 0)
        evbuffer_add_printf(o, ",\"completion_tokens_details\":{\"reasoning_tokens\":%d}",
                            reasoning_tokens < completion_tokens ? reasoning_tokens : completion_tokens);
}

void oai_sse_usage_metrics(struct evbuffer *o, const oai_ident *id, int32_t prompt_tokens, int32_t completion_tokens,
                           int32_t cached_tokens, int32_t reasoning_tokens, const oai_metrics *m) {
    chunk_head(o, id);
    evbuffer_add_printf(o, "[],\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":%d",
                        prompt_tokens, prompt_tokens + completion_tokens, completion_tokens);
    add_cached(o, cached_tokens);
    add_reasoning(o, reasoning_tokens, completion_tokens);
    evbuffer_add_printf(o, "}");
    if (m) {
        evbuffer_add_printf(o, ",\"metrics\":{\"time_to_first_token_ms\":%.6f,\"generation_time_ms\":%.6f,"
                            "\"queue_time_ms\":%.6f", m->ttft_ms, m->generation_ms, m->queue_ms);
        int32_t decoded = completion_tokens - 1;
        if (m->decode_steps > 0 && decoded > m->decode_steps)
            evbuffer_add_printf(o, ",\"speculative_decoding\":{\"mean_acceptance_length\":%.17g,"
                                "\"num_spec_steps\":%d,\"num_accepted_draft_tokens\":%d}",
                                (double)decoded / m->decode_steps, m->decode_steps, decoded - m->decode_steps);
        evbuffer_add_printf(o, "}");
    }
    evbuffer_add_printf(o, "}\n\n");
}

void oai_sse_usage(struct evbuffer *o, const oai_ident *id, int32_t prompt_tokens, int32_t completion_tokens,
                   int32_t cached_tokens, int32_t reasoning_tokens) {
    oai_sse_usage_metrics(o, id, prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens, NULL);
}

void oai_sse_done(struct evbuffer *o) {
    evbuffer_add(o, "data: [DONE]\n\n", 14);
}

static char *error_json(int status, const char *message, int wrapped) {
    json_t *e = json_pack("{s:s, s:s, s:n, s:i}", "message", message, "type", oai_error_type(status),
                          "param", "code", status);
    json_t *root = wrapped ? json_pack("{s:o}", "error", e) : e;
    char *s = json_dumps(root, JSON_COMPACT);
    json_decref(root);
    return s;
}

void oai_sse_error(struct evbuffer *o, bool openai_style, const char *message) {
    char *js = error_json(500, message, openai_style);
    if (openai_style) evbuffer_add_printf(o, "data: %s\n\ndata: [DONE]\n\n", js ? js : "{}");
    else evbuffer_add_printf(o, "error: %s\n\n", js ? js : "{}");
    free(js);
}

void oai_body(struct evbuffer *o, const oai_ident *id, oai_request *rq, int32_t n, const char *finish_reason,
              int32_t prompt_tokens) {
    if (rq->lm.on) { oai_lm_body(o, id, rq, n, finish_reason); return; }
    if (id->api == OAI_CHAT) {
        evbuffer_add_printf(o, "{\"id\":\"chatcmpl-%016llx\",\"object\":\"chat.completion\",\"created\":%lld,"
                               "\"model\":%s,\"choices\":[{\"index\":0,\"message\":{\"role\":\"assistant\",",
                            (unsigned long long)id->seq, (long long)id->created, id->model_json);
        int32_t r = rq->reasoning_tokens < n ? rq->reasoning_tokens : n;
        if (r > 0) {
            evbuffer_add_printf(o, "\"reasoning_content\":\"");
            add_words(o, id->seq, 0, r);
            evbuffer_add_printf(o, "\",");
        }
        evbuffer_add_printf(o, "\"content\":\"");
        add_words(o, id->seq, r, n - r);
        evbuffer_add_printf(o, "\"},\"logprobs\":null,\"finish_reason\":");
    } else {
        evbuffer_add_printf(o, "{\"id\":\"cmpl-%016llx\",\"object\":\"text_completion\",\"created\":%lld,"
                               "\"model\":%s,\"choices\":[{\"index\":0,\"text\":\"",
                            (unsigned long long)id->seq, (long long)id->created, id->model_json);
        add_words(o, id->seq, 0, n);
        evbuffer_add_printf(o, "\",\"logprobs\":null,\"finish_reason\":");
    }
    add_finish(o, finish_reason);
    if (id->api != OAI_CHAT) evbuffer_add_printf(o, ",\"stop_reason\":null");
    evbuffer_add_printf(o, "}],\"usage\":{\"prompt_tokens\":%d,\"total_tokens\":%d,\"completion_tokens\":%d",
                        prompt_tokens, prompt_tokens + n, n);
    add_cached(o, rq->cached_tokens);
    add_reasoning(o, id->api == OAI_CHAT ? rq->reasoning_tokens : 0, n);
    evbuffer_add_printf(o, "}}");
}

const char *oai_error_type(int status) {
    switch (status) {
    case 400: return "BadRequestError";
    case 404: return "NotFoundError";
    case 405: return "MethodNotAllowedError";
    case 429: return "RateLimitError";
    default: return status >= 500 ? "InternalServerError" : "BadRequestError";
    }
}

void oai_error_body(struct evbuffer *o, int status, const char *message) {
    char *js = error_json(status, message, 1);
    evbuffer_add_printf(o, "%s", js ? js : "{}");
    free(js);
}

void oai_models_body(struct evbuffer *o, const char *model_json, int64_t created, const char *meta_json) {
    evbuffer_add_printf(o, "{\"object\":\"list\",\"data\":[{\"id\":%s,\"object\":\"model\",\"created\":%lld,"
                           "\"owned_by\":\"dsperf\",\"root\":%s,\"parent\":null%s%s}]}",
                        model_json, (long long)created, model_json, meta_json ? ",\"meta\":" : "", meta_json ? meta_json : "");
}
