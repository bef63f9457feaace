/* drift_wire — the logprobs wire formats drift reads (see drift_int.h) and the request bodies it
 * sends. Formats met in the wild:
 *   OpenAI legacy completions   logprobs {tokens[], token_logprobs[], top_logprobs[{token: lp}]},
 *                               with echo the prompt's tokens first (the first logprob null)
 *   chat                        logprobs.content[{token, bytes, logprob, top_logprobs[{token, bytes,
 *                               logprob}]}]; llama.cpp writes this on /v1/completions too, with "id"
 *   vLLM prompt_logprobs        [null, {"<id>": {logprob, rank, decoded_token}, ...}, ...], the
 *                               prompt's own token first, then the top-k
 * Top lists are sorted here (a JSON object's order is not the server's promise). A token's bytes
 * come from "bytes" when given: llama.cpp sends a token that ends inside a UTF-8 character as an
 * empty or mangled string with its true bytes beside it. */
#include "drift/drift_int.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int tok_set(drift_tok *t, const char *s, size_t len, int64_t id, double lp) {
    t->text = malloc(len + 1);
    if (!t->text) return -1;
    memcpy(t->text, s, len);
    t->text[len] = 0;
    t->len = len;
    t->id = id;
    t->lp = lp;
    return 0;
}

static double num_or_nan(const json_t *v) { return json_is_number(v) ? json_number_value(v) : NAN; }

/* token text: "bytes" (an array of 0..255) when present and well formed, else "token" */
static int tok_from_entry(drift_tok *t, const json_t *e) {
    const json_t *bytes = json_object_get(e, "bytes");
    const json_t *tokstr = json_object_get(e, "token");
    const json_t *id = json_object_get(e, "id");
    int64_t idv = json_is_integer(id) ? json_integer_value(id) : -1;
    double lp = num_or_nan(json_object_get(e, "logprob"));
    if (json_is_array(bytes) && json_array_size(bytes) > 0) {
        size_t n = json_array_size(bytes);
        char *b = malloc(n + 1);
        if (!b) return -1;
        for (size_t i = 0; i < n; i++) {
            json_int_t x = json_integer_value(json_array_get(bytes, i));
            if (!json_is_integer(json_array_get(bytes, i)) || x < 0 || x > 255) { free(b); goto from_string; }
            b[i] = (char)x;
        }
        int rc = tok_set(t, b, n, idv, lp);
        free(b);
        return rc;
    }
from_string:
    if (!json_is_string(tokstr)) return tok_set(t, "", 0, idv, lp);
    return tok_set(t, json_string_value(tokstr), json_string_length(tokstr), idv, lp);
}

static int cmp_lp_desc(const void *a, const void *b) {
    double x = ((const drift_tok *)a)->lp, y = ((const drift_tok *)b)->lp;
    if (isnan(x)) return isnan(y) ? 0 : 1;
    if (isnan(y)) return -1;
    return (x < y) - (x > y);
}

static void sort_top(drift_pos *p) {
    if (p->n_top > 1) qsort(p->top, (size_t)p->n_top, sizeof *p->top, cmp_lp_desc);
}

static int alloc_positions(drift_pos **out, size_t n) {
    *out = n ? calloc(n, sizeof **out) : NULL;
    return n && !*out ? -1 : 0;
}

static int parse_content(const json_t *content, drift_resp *r) {
    size_t n = json_array_size(content), i, j;
    if (alloc_positions(&r->gen, n) < 0) return -1;
    const json_t *e, *t;
    json_array_foreach(content, i, e) {
        drift_pos *p = &r->gen[r->n_gen++];
        if (tok_from_entry(&p->tok, e) < 0) return -1;
        const json_t *top = json_object_get(e, "top_logprobs");
        if (!json_is_array(top)) continue;
        p->top = calloc(json_array_size(top) + 1, sizeof *p->top);
        if (!p->top) return -1;
        json_array_foreach(top, j, t)
            if (tok_from_entry(&p->top[p->n_top], t) == 0) p->n_top++;
        sort_top(p);
    }
    return 0;
}

static int parse_legacy(const json_t *lp, drift_resp *r) {
    const json_t *tokens = json_object_get(lp, "tokens"), *lps = json_object_get(lp, "token_logprobs");
    const json_t *tops = json_object_get(lp, "top_logprobs");
    size_t n = json_array_size(tokens);
    if (alloc_positions(&r->gen, n) < 0) return -1;
    for (size_t i = 0; i < n; i++) {
        drift_pos *p = &r->gen[r->n_gen++];
        const json_t *s = json_array_get(tokens, i);
        if (tok_set(&p->tok, json_is_string(s) ? json_string_value(s) : "", json_is_string(s) ? json_string_length(s) : 0,
                    -1, num_or_nan(json_array_get(lps, i))) < 0) return -1;
        const json_t *top = json_array_get(tops, i);
        if (!json_is_object(top)) continue;
        p->top = calloc(json_object_size(top) + 1, sizeof *p->top);
        if (!p->top) return -1;
        const char *k;
        const json_t *v;
        json_object_foreach((json_t *)top, k, v)
            if (tok_set(&p->top[p->n_top], k, strlen(k), -1, num_or_nan(v)) == 0) p->n_top++;
        sort_top(p);
    }
    return 0;
}

/* vLLM prompt_logprobs: each entry's first key is the prompt's own token, the others the top-k; the
 * prompt's token is kept in the list too (sorted, it falls beyond the top-k when it is not one of
 * them: the comparison cuts every list to the k asked for). */
static int parse_prompt_logprobs(const json_t *pl, drift_resp *r) {
    size_t n = json_array_size(pl), i;
    if (alloc_positions(&r->prompt, n) < 0) return -1;
    const json_t *e;
    json_array_foreach(pl, i, e) {
        drift_pos *p = &r->prompt[r->n_prompt++];
        if (!json_is_object(e)) { if (tok_set(&p->tok, "", 0, -1, NAN) < 0) return -1; continue; }
        p->top = calloc(json_object_size(e) + 1, sizeof *p->top);
        if (!p->top) return -1;
        const char *k;
        const json_t *v;
        bool first = true;
        json_object_foreach((json_t *)e, k, v) {
            const json_t *dt = json_object_get(v, "decoded_token");
            const char *text = json_is_string(dt) ? json_string_value(dt) : "";
            size_t tl = json_is_string(dt) ? json_string_length(dt) : 0;
            char *end;
            long long id = strtoll(k, &end, 10);
            double lp = num_or_nan(json_object_get(v, "logprob"));
            int rank = json_is_integer(json_object_get(v, "rank")) ? (int)json_integer_value(json_object_get(v, "rank")) : 0;
            if (first) {
                if (tok_set(&p->tok, text, tl, *end ? -1 : id, lp) < 0) return -1;
                p->rank = rank;
                first = false;
            }
            if (tok_set(&p->top[p->n_top], text, tl, *end ? -1 : id, lp) < 0) return -1;
            p->n_top++;
        }
        sort_top(p);
    }
    return 0;
}

int drift_resp_parse(const char *body, size_t len, drift_resp *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    r->prompt_tokens = r->completion_tokens = -1;
    json_error_t je;
    json_t *root = json_loadb(body, len, 0, &je);
    if (!root) { snprintf(err, errlen, "the response is not JSON (%s)", je.text); return -1; }
    int rc = -1;
    const json_t *e = json_object_get(root, "error");
    if (e) {
        const json_t *m = json_is_object(e) ? json_object_get(e, "message") : e;
        snprintf(err, errlen, "the server answered an error: %.150s", json_is_string(m) ? json_string_value(m) : "(no message)");
        goto out;
    }
    const json_t *c0 = json_array_get(json_object_get(root, "choices"), 0);
    const json_t *native_ids = json_object_get(root, "tokens");
    if (!json_is_object(c0) && json_is_array(native_ids)) {
        /* llama.cpp's native /completion: completion_probabilities, tokens, tokens_evaluated/predicted */
        const json_t *cp = json_object_get(root, "completion_probabilities");
        if (json_is_array(cp) && parse_content(cp, r) < 0) { snprintf(err, errlen, "out of memory"); goto out; }
        r->have_logprobs = r->n_gen > 0;
        size_t n = json_array_size(native_ids);
        r->ids = n ? calloc(n, sizeof *r->ids) : NULL;
        if (n && !r->ids) { snprintf(err, errlen, "out of memory"); goto out; }
        for (size_t i = 0; i < n; i++) r->ids[r->n_ids++] = json_integer_value(json_array_get(native_ids, i));
        const json_t *content = json_object_get(root, "content");
        if (json_is_string(content)) { r->text = strndup(json_string_value(content), json_string_length(content)); r->text_len = json_string_length(content); }
        if (json_is_integer(json_object_get(root, "tokens_evaluated"))) r->prompt_tokens = json_integer_value(json_object_get(root, "tokens_evaluated"));
        if (json_is_integer(json_object_get(root, "tokens_predicted"))) r->completion_tokens = json_integer_value(json_object_get(root, "tokens_predicted"));
        rc = 0;
        goto out;
    }
    if (!json_is_object(c0)) { snprintf(err, errlen, "the response has no choices"); goto out; }
    const json_t *text = json_object_get(c0, "text");
    if (!json_is_string(text)) text = json_object_get(json_object_get(c0, "message"), "content");
    if (json_is_string(text)) {
        r->text = strndup(json_string_value(text), json_string_length(text));
        r->text_len = json_string_length(text);
    }
    const json_t *lp = json_object_get(c0, "logprobs");
    int prc = 0;
    if (json_is_array(json_object_get(lp, "content"))) prc = parse_content(json_object_get(lp, "content"), r);
    else if (json_is_array(json_object_get(lp, "tokens"))) prc = parse_legacy(lp, r);
    r->have_logprobs = r->n_gen > 0;
    const json_t *pl = json_object_get(c0, "prompt_logprobs");
    if (!json_is_array(pl)) pl = json_object_get(root, "prompt_logprobs");
    if (prc == 0 && json_is_array(pl)) {
        prc = parse_prompt_logprobs(pl, r);
        r->have_prompt_logprobs = r->n_prompt > 0;
    }
    if (prc < 0) { snprintf(err, errlen, "out of memory"); goto out; }
    const json_t *u = json_object_get(root, "usage");
    if (json_is_integer(json_object_get(u, "prompt_tokens"))) r->prompt_tokens = json_integer_value(json_object_get(u, "prompt_tokens"));
    if (json_is_integer(json_object_get(u, "completion_tokens"))) r->completion_tokens = json_integer_value(json_object_get(u, "completion_tokens"));
    rc = 0;
out:
    json_decref(root);
    if (rc < 0) drift_resp_free(r);
    return rc;
}

static void pos_free(drift_pos *p, size_t n) {
    for (size_t i = 0; i < n; i++) {
        free(p[i].tok.text);
        for (int j = 0; j < p[i].n_top; j++) free(p[i].top[j].text);
        free(p[i].top);
    }
    free(p);
}

void drift_resp_free(drift_resp *r) {
    free(r->ids);
    pos_free(r->gen, r->n_gen);
    pos_free(r->prompt, r->n_prompt);
    free(r->text);
    memset(r, 0, sizeof *r);
}

bool drift_tok_same(const drift_tok *a, const drift_tok *b) {
    if (a->id >= 0 && b->id >= 0) return a->id == b->id;
    return a->len == b->len && !memcmp(a->text, b->text, a->len);
}

/* ---- request bodies ---- */

/* prompt_ids: the completions prompt as a JSON array of token ids (stolen), or NULL for the text. */
static json_t *base_body_p(const drift_req_opts *o, const char *prompt, json_t *prompt_ids, const char *assistant_prefix, int max_tokens) {
    json_t *b = json_object();
    if (o->model) json_object_set_new(b, "model", json_string(o->model));
    if (o->chat) {
        json_t *msgs = json_pack("[{s:s,s:s}]", "role", "user", "content", prompt);
        if (assistant_prefix && *assistant_prefix) {
            /* the continuation so far is the assistant's message, continued (vLLM) or prefilled (llama.cpp) */
            json_array_append_new(msgs, json_pack("{s:s,s:s}", "role", "assistant", "content", assistant_prefix));
            json_object_set_new(b, "continue_final_message", json_true());
            json_object_set_new(b, "add_generation_prompt", json_false());
        }
        json_object_set_new(b, "messages", msgs);
        json_object_set_new(b, "logprobs", json_true());
        json_object_set_new(b, "top_logprobs", json_integer(o->top_k));
    } else {
        json_object_set_new(b, "prompt", prompt_ids ? prompt_ids : json_string(prompt));
        json_object_set_new(b, "logprobs", json_integer(o->top_k));
    }
    json_object_set_new(b, "max_tokens", json_integer(max_tokens));
    json_object_set_new(b, "temperature", json_real(0));
    if (o->ignore_eos) json_object_set_new(b, "ignore_eos", json_true());
    return b;
}

static json_t *base_body(const drift_req_opts *o, const char *prompt, const char *assistant_prefix, int max_tokens) {
    return base_body_p(o, prompt, NULL, assistant_prefix, max_tokens);
}

static json_t *ids_json(const int32_t *ids, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; a && i < n; i++) json_array_append_new(a, json_integer(ids[i]));
    return a;
}

static char *dump(json_t *b) {
    char *s = b ? json_dumps(b, JSON_COMPACT) : NULL;
    json_decref(b);
    return s;
}

char *drift_body_generate(const drift_req_opts *o, const char *prompt, int max_tokens) {
    return dump(base_body(o, prompt, NULL, max_tokens));
}

char *drift_body_score(const drift_req_opts *o, drift_score_method m, const char *prompt) {
    json_t *b = base_body(o, prompt, NULL, 1);
    if (m == DRIFT_SCORE_ECHO) json_object_set_new(b, "echo", json_true());
    if (m == DRIFT_SCORE_PROMPT_LOGPROBS) json_object_set_new(b, "prompt_logprobs", json_integer(o->top_k));
    return dump(b);
}

char *drift_body_step(const drift_req_opts *o, const char *prompt, const char *continuation) {
    if (o->chat) return dump(base_body(o, prompt, continuation, 1));
    size_t a = strlen(prompt), c = strlen(continuation);
    char *full = malloc(a + c + 1);
    if (!full) return NULL;
    memcpy(full, prompt, a);
    memcpy(full + a, continuation, c + 1);
    char *s = dump(base_body(o, full, NULL, 1));
    free(full);
    return s;
}

/* Token-id prompts: nothing is re-tokenized, so position i of every side is the same token. */
char *drift_body_generate_ids(const drift_req_opts *o, const int32_t *ids, size_t n, int max_tokens) {
    return dump(base_body_p(o, NULL, ids_json(ids, n), NULL, max_tokens));
}

char *drift_body_score_ids(const drift_req_opts *o, drift_score_method m, const int32_t *ids, size_t n) {
    if (m == DRIFT_SCORE_STEPWISE) return drift_body_generate_ids(o, ids, n, 1);
    json_t *b = base_body_p(o, NULL, ids_json(ids, n), NULL, 1);
    if (m == DRIFT_SCORE_ECHO) json_object_set_new(b, "echo", json_true());
    if (m == DRIFT_SCORE_PROMPT_LOGPROBS) json_object_set_new(b, "prompt_logprobs", json_integer(o->top_k));
    return dump(b);
}

char *drift_body_native_ids(const drift_req_opts *o, const int32_t *ids, size_t n, int max_tokens) {
    json_t *b = json_object();
    json_object_set_new(b, "prompt", ids_json(ids, n));
    json_object_set_new(b, "n_predict", json_integer(max_tokens));
    json_object_set_new(b, "n_probs", json_integer(o->top_k));
    json_object_set_new(b, "temperature", json_real(0));
    json_object_set_new(b, "return_tokens", json_true());
    if (o->ignore_eos) json_object_set_new(b, "ignore_eos", json_true());
    return dump(b);
}

int drift_resp_align_ids(drift_resp *r) {
    if (!r->ids) return 0;
    /* the entries must be a subsequence of the ids (matched in order), else the shape is not this */
    size_t e = 0;
    for (size_t p = 0; p < r->n_ids; p++)
        if (e < r->n_gen && r->gen[e].tok.id == r->ids[p]) e++;
    if (e < r->n_gen) return -1;
    drift_pos *g = calloc(r->n_ids ? r->n_ids : 1, sizeof *g);
    bool *filler = calloc(r->n_ids ? r->n_ids : 1, sizeof *filler);
    if (!g || !filler) { free(g); free(filler); return -1; }
    e = 0;
    for (size_t p = 0; p < r->n_ids; p++) {
        if (e < r->n_gen && r->gen[e].tok.id == r->ids[p]) { g[p] = r->gen[e++]; continue; }
        /* no entry for this token: its id, no text, no top list */
        if (tok_set(&g[p].tok, "", 0, r->ids[p], NAN) < 0) {
            for (size_t q = 0; q < p; q++) if (filler[q]) free(g[q].tok.text);
            free(g);
            free(filler);
            return -1;   /* out of memory: the originals are untouched (entries were copied, not moved) */
        }
        filler[p] = true;
    }
    free(filler);
    free(r->gen);
    r->gen = g;
    r->n_gen = r->n_ids;
    return 0;
}
