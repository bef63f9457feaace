/* sessions — multi-turn conversations whose turns carry the server's real answers (sessions.h). */
#include "dataset/sessions.h"
#include "dataset/dataset_int.h"
#include "common/units.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    char **answers;            /* [turns] the server's answers so far (owned) */
    int32_t prev_in, prev_out; /* the last turn's prompt and answer tokens */
} conversation;

struct ds_sessions {
    size_t n;
    int turns;
    int32_t first, user, out, system;
    int64_t think_ns;
    uint64_t seed;
    word_source w;
    dataset_opts o;            /* the length measure (o.tok) */
    bool chat;                 /* render the history as chat messages (else a transcript) */
    const tokenizer *tok;      /* set by dataset_count_for_api: lengths as the server counts them */
    char *system_text;
    int32_t system_tokens;
    conversation *c;
};

size_t sessions_count(const ds_sessions *s) { return s->n; }
int sessions_turns(const ds_sessions *s) { return s->turns; }
int64_t sessions_think_ns(const ds_sessions *s) { return s->think_ns; }

void sessions_lengths(const ds_sessions *s, int32_t *first, int32_t *user, int32_t *out, int32_t *system) {
    *first = s->first;
    *user = s->user;
    *out = s->out;
    *system = s->system;
}

static void conversation_clear(ds_sessions *s, conversation *c) {
    if (!c->answers) return;
    for (int t = 0; t < s->turns; t++) free(c->answers[t]);
    free(c->answers);
    c->answers = NULL;
}

void ds_sessions_free(ds_sessions *s) {
    if (!s) return;
    for (size_t i = 0; s->c && i < s->n; i++) conversation_clear(s, &s->c[i]);
    free(s->c);
    free(s->system_text);
    ds_words_close(&s->w);
    free(s);
}

/* The user message of (conversation, turn): exact length, the same in every run with this seed. */
static char *user_message(const ds_sessions *s, size_t sid, int turn) {
    rng r;
    rng_seed(&r, s->seed ^ ((uint64_t)sid * 0x9e3779b97f4a7c15ULL) ^ ((uint64_t)(turn + 1) << 48));
    size_t rebuilt = 0;
    return ds_exact_prompt(&s->w, &s->o, &r, turn ? s->user : s->first, &rebuilt);
}

/* A growable string. */
typedef struct { char *p; size_t n, cap; bool oom; } sbuf;

static void sb_add(sbuf *b, const char *s, size_t n) {
    if (b->oom) return;
    if (b->n + n + 1 > b->cap) {
        size_t nc = (b->n + n + 1) * 2;
        char *np = realloc(b->p, nc);
        if (!np) { b->oom = true; return; }
        b->p = np;
        b->cap = nc;
    }
    memcpy(b->p + b->n, s, n);
    b->n += n;
    b->p[b->n] = 0;
}

static void sb_str(sbuf *b, const char *s) { sb_add(b, s, strlen(s)); }

/* The history of turn `turn` as (role, content) pairs; contents borrowed or owned in *own. */
static size_t history(const ds_sessions *s, const conversation *c, size_t sid, int turn, const char **roles,
                      const char **contents, char **own) {
    size_t k = 0;
    if (s->system_text) { roles[k] = "system"; contents[k++] = s->system_text; }
    for (int t = 0; t <= turn; t++) {
        own[t] = user_message(s, sid, t);
        roles[k] = "user";
        contents[k++] = own[t] ? own[t] : "";
        if (t < turn) { roles[k] = "assistant"; contents[k++] = c->answers && c->answers[t] ? c->answers[t] : ""; }
    }
    return k;
}

/* "SYSTEM\n\nUser: U0\n\nAssistant:A0\n\nUser: U1\n\nAssistant:" — each prompt starts with the
 * previous one and its answer, so a prefix cache can hold the whole history. */
static char *transcript(const ds_sessions *s, const char *const *roles, const char *const *contents, size_t k) {
    sbuf b = {0};
    const char *sp = s->w.leading_space ? "" : " ";   /* tokenizer words carry their own space */
    for (size_t i = 0; i < k; i++) {
        if (!strcmp(roles[i], "system")) { sb_str(&b, contents[i]); sb_str(&b, "\n\n"); }
        else if (!strcmp(roles[i], "user")) { sb_str(&b, "User:"); sb_str(&b, sp); sb_str(&b, contents[i]); sb_str(&b, "\n\nAssistant:"); }
        else { sb_str(&b, contents[i]); sb_str(&b, "\n\n"); }
    }
    if (b.oom || !b.p) { free(b.p); return NULL; }
    return b.p;
}

static char *messages_json(const char *const *roles, const char *const *contents, size_t k) {
    json_t *a = json_array();
    for (size_t i = 0; i < k; i++) json_array_append_new(a, json_pack("{s:s,s:s}", "role", roles[i], "content", contents[i]));
    char *out = json_dumps(a, JSON_COMPACT);
    json_decref(a);
    return out;
}

/* The prompt's length as the server counts it: the tokenizer (BOS, chat template) or words. */
static int32_t count(const ds_sessions *s, const char *text, const char *const *roles, const char *const *contents, size_t k) {
    if (s->tok && s->chat) {
        size_t n;
        return tokenizer_chat_prompt_tokens(s->tok, roles, contents, k, &n) == 0 ? (int32_t)n : -1;
    }
    if (s->tok) {
        size_t n = tokenizer_count(s->tok, text, strlen(text));
        return n == (size_t)-1 ? -1 : (int32_t)n + (tokenizer_add_bos_default(s->tok) ? 1 : 0);
    }
    if (!s->chat) return dataset_count_words(text, strlen(text));
    int32_t n = 0;
    for (size_t i = 0; i < k; i++) n += dataset_count_words(contents[i], strlen(contents[i]));
    return n;
}

int sessions_build_turn(ds_sessions *s, size_t sid, int turn, dataset_item *item) {
    memset(item, 0, sizeof *item);
    item->timestamp_ns = -1;
    item->group = -1;
    conversation *c = &s->c[sid % s->n];
    size_t cap = (size_t)turn * 2 + 2;
    const char **roles = malloc(cap * sizeof *roles), **contents = malloc(cap * sizeof *contents);
    char **own = calloc((size_t)turn + 1, sizeof *own);
    int rc = -1;
    if (roles && contents && own) {
        size_t k = history(s, c, sid, turn, roles, contents, own);
        char *text = transcript(s, roles, contents, k);
        bool ok = text != NULL;
        for (int t = 0; t <= turn; t++) ok = ok && own[t];
        if (ok) {
            item->in_tokens = count(s, text, roles, contents, k);
            if (s->chat) { item->messages_json = messages_json(roles, contents, k); free(text); ok = item->messages_json != NULL; }
            else item->prompt = text;
        } else free(text);
        if (ok) {
            item->max_tokens = s->out;
            /* the previous turn's prompt and answer were in the cache; turn 0 shares the system prompt */
            int32_t prev = c->prev_in + c->prev_out;
            item->cacheable_tokens = turn ? (prev < item->in_tokens ? prev : item->in_tokens)
                                          : (sid > 0 ? s->system_tokens : 0);
            rc = 0;
        }
    }
    for (int t = 0; own && t <= turn; t++) free(own[t]);
    free(own);
    free(roles);
    free(contents);
    if (rc) sessions_item_free(item);
    return rc;
}

void sessions_item_free(dataset_item *item) {
    free(item->prompt);
    free(item->messages_json);
    item->prompt = item->messages_json = NULL;
}

bool sessions_turn_done(ds_sessions *s, record *r) {
    if (!r->session) return false;
    size_t sid = (size_t)(r->session - 1) % s->n;
    conversation *c = &s->c[sid];
    int turn = r->turn;
    bool more = r->outcome == REC_OK && turn + 1 < s->turns;
    if (more && !c->answers) c->answers = calloc((size_t)s->turns, sizeof *c->answers);
    if (more && c->answers) {
        free(c->answers[turn]);
        c->answers[turn] = r->text ? r->text : strdup("");
        r->text = NULL;
        c->prev_in = r->in_tokens;
        c->prev_out = record_out_tokens(r);
        return c->answers[turn] != NULL;
    }
    /* the conversation is over (its last turn, or a failed one): its history is let go, so memory
     * follows the conversations in flight, not all of them */
    conversation_clear(s, c);
    return false;
}

void ds_sessions_set_api(ds_sessions *s, const tokenizer *tok, bool chat) {
    s->tok = tok;
    s->chat = chat;
    if (s->system_text) {
        int32_t n = s->tok ? (int32_t)tokenizer_count(s->tok, s->system_text, strlen(s->system_text))
                           : dataset_count_words(s->system_text, strlen(s->system_text));
        s->system_tokens = n + (s->tok && !chat && tokenizer_add_bos_default(s->tok) ? 1 : 0);
    }
}

/* "n=16,turns=4,first=512,user=128,out=128,think=1s,system=0" */
static int parse_spec(ds_sessions *s, const char *args, char *err, size_t errlen) {
    s->n = 16; s->turns = 4; s->first = 512; s->user = 128; s->out = 128; s->system = 0;
    char *copy = strdup(args), *save = NULL;
    int rc = copy ? 0 : -1;
    for (char *tok = copy ? strtok_r(copy, ",", &save) : NULL; tok && !rc; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        long long v;
        if (!eq) { rc = -1; break; }
        *eq++ = 0;
        if (!strcmp(tok, "think")) { rc = units_parse_duration_ns(eq, &s->think_ns); continue; }
        long long lo = !strcmp(tok, "system") ? 0 : 1, hi = !strcmp(tok, "n") ? 1000000 : !strcmp(tok, "turns") ? 1000 : 1000000;
        rc = units_parse_int(eq, lo, hi, &v);
        if (rc) break;
        if (!strcmp(tok, "n")) s->n = (size_t)v;
        else if (!strcmp(tok, "turns")) s->turns = (int)v;
        else if (!strcmp(tok, "first")) s->first = (int32_t)v;
        else if (!strcmp(tok, "user")) s->user = (int32_t)v;
        else if (!strcmp(tok, "out")) s->out = (int32_t)v;
        else if (!strcmp(tok, "system")) s->system = (int32_t)v;
        else rc = -1;
    }
    free(copy);
    if (rc) snprintf(err, errlen, "bad dataset 'sessions:%s': expected sessions:n=N,turns=T,first=P,user=U,out=M,think=D,system=S "
                     "(N conversations of T turns; P, U, M tokens >= 1; D a duration such as 2s; S >= 0)", args);
    return rc;
}

int ds_open_sessions(const char *spec, const char *args, uint64_t seed, const dataset_opts *o, dataset **out,
                     char *err, size_t errlen) {
    ds_sessions *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return -1; }
    if (parse_spec(s, args, err, errlen) < 0 || ds_words_open(&s->w, o, err, errlen) < 0) { ds_sessions_free(s); return -1; }
    s->seed = seed ^ 0x5e5510115ULL;
    if (o) s->o = *o;
    s->c = calloc(s->n, sizeof *s->c);
    dataset *d = ds_new(spec, s->n, o);
    rng r;
    rng_seed(&r, s->seed);
    size_t rebuilt = 0;
    if (s->system) s->system_text = ds_exact_prompt(&s->w, &s->o, &r, s->system, &rebuilt);
    if (!s->c || !d || (s->system && !s->system_text)) {
        ds_sessions_free(s); dataset_free(d);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    d->sessions = s;
    d->ignore_eos = true;
    ds_sessions_set_api(s, NULL, false);
    /* the items are the conversations' first turns (what a single-request reader of the dataset
     * would send); the runner builds every turn itself */
    for (size_t i = 0; i < s->n; i++) {
        if (sessions_build_turn(s, i, 0, &d->items[i]) < 0) {
            dataset_free(d);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        d->n++;
    }
    ds_finish_stats(d);
    *out = d;
    return 0;
}
