/* server_lm — the requests `dsperf serve` answers from its token model (engine/fixed_lm.h): the
 * greedy words and their logprobs in the wire formats clients meet in the wild — OpenAI's legacy
 * completions logprobs (tokens / token_logprobs / top_logprobs / text_offset, with echo), chat
 * `logprobs.content` (which llama.cpp also writes on /v1/completions: --logprobs-style llamacpp,
 * where echo is refused as llama.cpp refuses it), and vLLM's `prompt_logprobs`. These requests are
 * not the streaming hot path, so they are built with jansson. */
#include "server/server_oai.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ctype.h>

/* ---- parsing ---- */

static int get_int(json_t *root, const char *key, long long lo, long long hi, long long *out, bool *given,
                   char *err, size_t errlen) {
    json_t *v = json_object_get(root, key);
    *given = false;
    if (!v || json_is_null(v)) return 0;
    if (!json_is_integer(v) || json_integer_value(v) < lo || json_integer_value(v) > hi) {
        snprintf(err, errlen, "'%s' must be an integer between %lld and %lld", key, lo, hi);
        return -1;
    }
    *out = json_integer_value(v);
    *given = true;
    return 0;
}

static int get_flag(json_t *root, const char *key, bool *out, char *err, size_t errlen) {
    json_t *v = json_object_get(root, key);
    if (!v || json_is_null(v)) return 0;
    if (!json_is_boolean(v)) { snprintf(err, errlen, "'%s' must be true or false", key); return -1; }
    *out = json_is_true(v);
    return 0;
}

/* Appends token id (with its text when the prompt is kept) to the context. */
static int add_token(oai_lm_req *L, uint32_t id, const char *text, size_t len, bool keep, size_t *cap, size_t *tcap) {
    if (keep) {
        if ((size_t)L->n_ptoks == *cap) {
            size_t nc = *cap ? *cap * 2 : 64;
            oai_ptok *np = realloc(L->ptoks, nc * sizeof *np);
            if (!np) return -1;
            L->ptoks = np;
            *cap = nc;
        }
        size_t used = L->n_ptoks ? L->ptoks[L->n_ptoks - 1].end : 0;
        if (used + len + 1 > *tcap) {
            size_t nc = (*tcap ? *tcap : 256);
            while (used + len + 1 > nc) nc *= 2;
            char *nt = realloc(L->prompt_text, nc);
            if (!nt) return -1;
            L->prompt_text = nt;
            *tcap = nc;
        }
        memcpy(L->prompt_text + used, text, len);
        L->prompt_text[used + len] = 0;
        L->ptoks[L->n_ptoks++] = (oai_ptok){ id, (uint32_t)used, (uint32_t)(used + len) };
    }
    L->prev2 = L->prev1;
    L->prev1 = id;
    L->pos++;
    return 0;
}

/* The words of a text: each token is the whitespace before a word and the word (the counting of
 * oai_count_words, so the context has exactly prompt_tokens tokens). */
static int add_text(oai_lm_req *L, const char *s, bool keep, size_t *cap, size_t *tcap) {
    const char *tok = s;
    while (*s) {
        while (*s && isspace((unsigned char)*s)) s++;
        if (!*s) break;
        const char *w = s;
        while (*s && !isspace((unsigned char)*s)) s++;
        if (add_token(L, fixed_lm_word_id(w, (size_t)(s - w)), tok, (size_t)(s - tok), keep, cap, tcap) < 0) return -1;
        tok = s;
    }
    return 0;
}

static int add_id(oai_lm_req *L, uint32_t id, bool keep, size_t *cap, size_t *tcap) {
    char buf[32];
    const char *w = fixed_lm_word(id);
    if (!w) { snprintf(buf, sizeof buf, " <%u>", id); w = buf; }
    return add_token(L, id, w, strlen(w), keep, cap, tcap);
}

static int add_prompt(oai_lm_req *L, json_t *p, bool keep, size_t *cap, size_t *tcap) {
    if (json_is_string(p)) return add_text(L, json_string_value(p), keep, cap, tcap);
    if (!json_is_array(p)) return 0;
    if (json_array_size(p) == 1 && !json_is_integer(json_array_get(p, 0))) return add_prompt(L, json_array_get(p, 0), keep, cap, tcap);
    size_t i;
    json_t *v;
    json_array_foreach(p, i, v) {
        json_int_t id = json_integer_value(v);
        if (add_id(L, id < 0 || id > 0x7fffffff ? FIXED_LM_NONE - 1 : (uint32_t)id, keep, cap, tcap) < 0) return -1;
    }
    return 0;
}

static int add_messages(oai_lm_req *L, json_t *msgs, size_t *cap, size_t *tcap) {
    size_t i, j;
    json_t *m, *part;
    json_array_foreach(msgs, i, m) {
        json_t *c = json_object_get(m, "content");
        if (json_is_string(c) && add_text(L, json_string_value(c), false, cap, tcap) < 0) return -1;
        if (json_is_array(c))
            json_array_foreach(c, j, part)
                if (json_is_string(json_object_get(part, "text")) &&
                    add_text(L, json_string_value(json_object_get(part, "text")), false, cap, tcap) < 0) return -1;
    }
    return 0;
}

int oai_lm_parse(oai_request *rq, json_t *root, json_t *prompt, json_t *msgs, const fixed_lm *lm, int style,
                 int *status, char *err, size_t errlen) {
    oai_lm_req *L = &rq->lm;
    L->style = style;
    L->model = lm;
    L->top_logprobs = -1;
    L->prompt_logprobs = -1;
    L->prev1 = L->prev2 = FIXED_LM_NONE;
    bool engaged = false, given, flag = false;
    long long v;
    json_t *t = json_object_get(root, "temperature");
    if (t && !json_is_null(t)) {
        if (!json_is_number(t) || json_number_value(t) < 0) { snprintf(err, errlen, "'temperature' must be a number >= 0"); return -1; }
        engaged = json_number_value(t) == 0;
    }
    if (rq->api == OAI_COMPLETIONS) {
        if (get_int(root, "logprobs", 0, FIXED_LM_VOCAB, &v, &given, err, errlen) < 0) return -1;
        if (given) { L->top_logprobs = (int32_t)v; engaged = true; }
        if (get_flag(root, "echo", &L->echo, err, errlen) < 0) return -1;
        if (L->echo && style == OAI_LOGPROBS_LLAMACPP) {
            *status = 500;   /* what llama.cpp's server answers */
            snprintf(err, errlen, "Unsupported param: echo");
            return -1;
        }
        if (style != OAI_LOGPROBS_LLAMACPP) {   /* llama.cpp ignores fields it does not know */
            if (get_int(root, "prompt_logprobs", -1, FIXED_LM_VOCAB, &v, &given, err, errlen) < 0) return -1;
            if (given) L->prompt_logprobs = v < 0 ? FIXED_LM_VOCAB : (int32_t)v;
        }
    } else {
        if (get_flag(root, "logprobs", &flag, err, errlen) < 0) return -1;
        if (get_int(root, "top_logprobs", 0, FIXED_LM_VOCAB, &v, &given, err, errlen) < 0) return -1;
        if (given && !flag) { snprintf(err, errlen, "'top_logprobs' needs 'logprobs': true"); return -1; }
        if (flag) { L->top_logprobs = given ? (int32_t)v : 0; engaged = true; }
    }
    if (!engaged && !L->echo && L->prompt_logprobs < 0) return 0;
    L->on = true;
    bool keep = L->echo || L->prompt_logprobs >= 0;
    size_t cap = 0, tcap = 0;
    int rc = prompt ? add_prompt(L, prompt, keep, &cap, &tcap) : msgs ? add_messages(L, msgs, &cap, &tcap) : 0;
    if (rc < 0) { snprintf(err, errlen, "out of memory"); return -1; }
    if (keep && !L->prompt_text) {
        L->prompt_text = calloc(1, 1);
        if (!L->prompt_text) { snprintf(err, errlen, "out of memory"); return -1; }
    }
    return 0;
}

/* ---- one position ---- */

typedef struct {
    uint32_t id;               /* the token at this position */
    const char *text;          /* its text */
    size_t len;
    bool has_lp;               /* false: the first prompt token (nothing before it) */
    double lp[FIXED_LM_CLASSES];
} lm_pos;

static void gen_next(oai_request *rq, uint64_t nonce, lm_pos *p) {
    oai_lm_req *L = &rq->lm;
    fixed_lm_logprobs(L->model, L->prev2, L->prev1, L->pos, nonce, p->lp);
    p->id = fixed_lm_argmax(p->lp);
    p->text = fixed_lm_word(p->id);
    p->len = strlen(p->text);
    p->has_lp = true;
    L->prev2 = L->prev1;
    L->prev1 = p->id;
    L->pos++;
}

static void prompt_pos(const oai_lm_req *L, int32_t j, uint64_t nonce, lm_pos *p) {
    const oai_ptok *t = &L->ptoks[j];
    p->id = t->id;
    p->text = L->prompt_text + t->start;
    p->len = t->end - t->start;
    p->has_lp = j > 0;
    if (p->has_lp)
        fixed_lm_logprobs(L->model, j >= 2 ? L->ptoks[j - 2].id : FIXED_LM_NONE, L->ptoks[j - 1].id, j, nonce, p->lp);
}

static json_t *jstrn(const char *s, size_t n) { return json_stringn(s, n); }

static json_t *bytes_of(const char *s, size_t n) {
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++) json_array_append_new(a, json_integer((unsigned char)s[i]));
    return a;
}

/* ---- legacy completions logprobs ---- */

typedef struct { json_t *obj, *tokens, *lps, *tops, *offs; size_t off; } legacy;

static void legacy_init(legacy *a) {
    a->tokens = json_array();
    a->lps = json_array();
    a->tops = json_array();
    a->offs = json_array();
    a->obj = json_pack("{s:o,s:o,s:o,s:o}", "text_offset", a->offs, "token_logprobs", a->lps,
                       "tokens", a->tokens, "top_logprobs", a->tops);
    a->off = 0;
}

static void legacy_add(legacy *a, const lm_pos *p, int k) {
    json_array_append_new(a->tokens, jstrn(p->text, p->len));
    json_array_append_new(a->offs, json_integer((json_int_t)a->off));
    a->off += p->len;
    if (!p->has_lp) {
        json_array_append_new(a->lps, json_null());
        json_array_append_new(a->tops, json_null());
        return;
    }
    json_array_append_new(a->lps, json_real(p->lp[fixed_lm_class(p->id)]));
    uint32_t ids[FIXED_LM_VOCAB];
    int n = fixed_lm_top(p->lp, k, ids);
    json_t *top = json_object();
    for (int i = 0; i < n; i++) json_object_set_new(top, fixed_lm_word(ids[i]), json_real(p->lp[ids[i]]));
    json_array_append_new(a->tops, top);
}

/* ---- chat / llama.cpp "content" entries ---- */

static json_t *content_entry(const lm_pos *p, int k, bool with_id) {
    json_t *e = json_object();
    if (with_id) json_object_set_new(e, "id", json_integer(p->id));
    json_object_set_new(e, "token", jstrn(p->text, p->len));
    json_object_set_new(e, "bytes", bytes_of(p->text, p->len));
    json_object_set_new(e, "logprob", json_real(p->lp[fixed_lm_class(p->id)]));
    uint32_t ids[FIXED_LM_VOCAB];
    int n = fixed_lm_top(p->lp, k, ids);
    json_t *top = json_array();
    for (int i = 0; i < n; i++) {
        const char *w = fixed_lm_word(ids[i]);
        json_t *t = json_object();
        if (with_id) json_object_set_new(t, "id", json_integer(ids[i]));
        json_object_set_new(t, "token", json_string(w));
        json_object_set_new(t, "bytes", bytes_of(w, strlen(w)));
        json_object_set_new(t, "logprob", json_real(p->lp[ids[i]]));
        json_array_append_new(top, t);
    }
    json_object_set_new(e, "top_logprobs", top);
    return e;
}

/* ---- vLLM prompt_logprobs: [null, {"<id>": {logprob, rank, decoded_token}, ...}, ...] with the
 * prompt's own token first, then the top-k ---- */

static json_t *prompt_logprobs_json(const oai_lm_req *L, uint64_t nonce) {
    json_t *a = json_array();
    for (int32_t j = 0; j < L->n_ptoks; j++) {
        lm_pos p;
        prompt_pos(L, j, nonce, &p);
        if (!p.has_lp) { json_array_append_new(a, json_null()); continue; }
        json_t *d = json_object();
        char key[16];
        uint32_t c = fixed_lm_class(p.id);
        snprintf(key, sizeof key, "%u", p.id);
        json_object_set_new(d, key, json_pack("{s:f,s:i,s:s%}", "logprob", p.lp[c], "rank", fixed_lm_rank(p.lp, c),
                                              "decoded_token", p.text, p.len));
        uint32_t ids[FIXED_LM_VOCAB];
        int n = fixed_lm_top(p.lp, L->prompt_logprobs, ids);
        for (int i = 0; i < n; i++) {
            if (ids[i] == p.id) continue;
            snprintf(key, sizeof key, "%u", ids[i]);
            json_object_set_new(d, key, json_pack("{s:f,s:i,s:s}", "logprob", p.lp[ids[i]], "rank", fixed_lm_rank(p.lp, ids[i]),
                                                  "decoded_token", fixed_lm_word(ids[i])));
        }
        json_array_append_new(a, d);
    }
    return a;
}

/* ---- a choice: the text and logprobs of n new words (after the prompt when it is due) ---- */

typedef struct { json_t *text_parts; json_t *logprobs; json_t *prompt_lp; } choice_parts;

static void build(oai_request *rq, const oai_ident *id, int32_t n, bool with_prompt, choice_parts *out) {
    oai_lm_req *L = &rq->lm;
    bool content_style = id->api == OAI_CHAT || L->style == OAI_LOGPROBS_LLAMACPP;
    bool want_lp = L->top_logprobs >= 0;
    int k = want_lp ? L->top_logprobs : 0;
    legacy lg = { 0 };
    json_t *content = NULL;
    if (want_lp && content_style) content = json_array();
    if (want_lp && !content_style) legacy_init(&lg);
    size_t tlen = 0;
    char *text = NULL;
    size_t plen = with_prompt && L->echo ? strlen(L->prompt_text) : 0;
    text = malloc(plen + (size_t)n * 16 + 1);
    if (text) {
        memcpy(text, plen ? L->prompt_text : "", plen);
        tlen = plen;
    }
    if (with_prompt && L->echo && want_lp && !content_style)
        for (int32_t j = 0; j < L->n_ptoks; j++) {
            lm_pos p;
            prompt_pos(L, j, id->seq, &p);
            legacy_add(&lg, &p, k);
        }
    for (int32_t i = 0; i < n; i++) {
        lm_pos p;
        gen_next(rq, id->seq, &p);
        if (text) { memcpy(text + tlen, p.text, p.len); tlen += p.len; }
        if (content) json_array_append_new(content, content_entry(&p, k, L->style == OAI_LOGPROBS_LLAMACPP));
        else if (lg.obj) legacy_add(&lg, &p, k);
    }
    out->text_parts = text ? json_stringn(text, tlen) : json_string("");
    free(text);
    out->logprobs = content ? json_pack("{s:o}", "content", content) : lg.obj ? lg.obj : json_null();
    out->prompt_lp = with_prompt && L->prompt_logprobs >= 0 ? prompt_logprobs_json(L, id->seq) : NULL;
}

static json_t *model_name(const oai_ident *id) {
    json_t *m = json_loads(id->model_json, JSON_DECODE_ANY, NULL);
    return m ? m : json_string("");
}

static json_t *finish_json(const char *finish_reason) {
    return finish_reason ? json_string(finish_reason) : json_null();
}

static void emit_json(struct evbuffer *o, json_t *root, bool sse) {
    char *s = json_dumps(root, JSON_COMPACT | JSON_REAL_PRECISION(17));
    if (sse) evbuffer_add_printf(o, "data: %s\n\n", s ? s : "{}");
    else evbuffer_add_printf(o, "%s", s ? s : "{}");
    free(s);
    json_decref(root);
}

static json_t *envelope(const oai_ident *id, bool chunk) {
    char idbuf[40];
    snprintf(idbuf, sizeof idbuf, "%s-%016llx", id->api == OAI_CHAT ? "chatcmpl" : "cmpl", (unsigned long long)id->seq);
    const char *object = id->api == OAI_CHAT ? (chunk ? "chat.completion.chunk" : "chat.completion") : "text_completion";
    return json_pack("{s:s,s:s,s:I,s:o}", "id", idbuf, "object", object, "created", (json_int_t)id->created, "model", model_name(id));
}

static json_t *choice(const oai_ident *id, const choice_parts *cp, const char *finish_reason, bool chunk) {
    json_t *c = json_pack("{s:i}", "index", 0);
    if (id->api == OAI_CHAT) {
        json_object_set_new(c, chunk ? "delta" : "message",
                            chunk ? json_pack("{s:O}", "content", cp->text_parts)
                                  : json_pack("{s:s,s:O}", "role", "assistant", "content", cp->text_parts));
    } else {
        json_object_set(c, "text", cp->text_parts);
    }
    json_object_set(c, "logprobs", cp->logprobs);
    json_object_set_new(c, "finish_reason", finish_json(finish_reason));
    if (id->api != OAI_CHAT) json_object_set_new(c, "stop_reason", json_null());
    if (cp->prompt_lp) json_object_set(c, "prompt_logprobs", cp->prompt_lp);
    return c;
}

static void parts_free(choice_parts *cp) {
    json_decref(cp->text_parts);
    json_decref(cp->logprobs);
    json_decref(cp->prompt_lp);
}

void oai_lm_sse_tokens(struct evbuffer *o, const oai_ident *id, oai_request *rq, int32_t n, const char *finish_reason) {
    choice_parts cp;
    build(rq, id, n, !rq->lm.prompt_sent, &cp);
    rq->lm.prompt_sent = true;
    json_t *root = envelope(id, true);
    json_object_set_new(root, "choices", json_pack("[o]", choice(id, &cp, finish_reason, true)));
    parts_free(&cp);
    emit_json(o, root, true);
}

void oai_lm_body(struct evbuffer *o, const oai_ident *id, oai_request *rq, int32_t n, const char *finish_reason) {
    choice_parts cp;
    build(rq, id, n, true, &cp);
    json_t *root = envelope(id, false);
    json_object_set_new(root, "choices", json_pack("[o]", choice(id, &cp, finish_reason, false)));
    json_t *usage = json_pack("{s:i,s:i,s:i}", "prompt_tokens", rq->prompt_tokens, "total_tokens", rq->prompt_tokens + n,
                              "completion_tokens", n);
    if (rq->cached_tokens >= 0)
        json_object_set_new(usage, "prompt_tokens_details", json_pack("{s:i}", "cached_tokens", rq->cached_tokens));
    json_object_set_new(root, "usage", usage);
    parts_free(&cp);
    emit_json(o, root, false);
}
