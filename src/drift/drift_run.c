/* drift_run — the requests of a drift run and the tallies they give (see drift.h). Per context
 * bucket, in two batches:
 *   A  the baseline generates each prompt's continuation greedily with top-k logprobs; the
 *      candidate (and, for the floor, the baseline again) generates it too (free-running)
 *   B  the candidate scores prompt + the baseline's continuation (echo, prompt_logprobs, or one
 *      request per position), so its position i sees the baseline's prefix; the floor has the
 *      baseline score it the same way; each side scores the reference text's windows
 * Prompts are sent as text: the continuation is the baseline's tokens' bytes appended to the
 * prompt, and every scored position is checked to be the baseline's token (echo: the echoed
 * tokens; prompt_logprobs: the decoded tokens; stepwise: the prompt grows one token a step), so a
 * server that re-tokenizes the text differently is counted as misaligned, never compared wrong. */
#include "drift/drift_int.h"
#include "common/stop.h"
#include "client/client.h"
#include "common/clock.h"
#include "common/fileio.h"
#include "common/log.h"
#include "dataset/dataset.h"
#include <ctype.h>
#include <stdarg.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>


typedef struct {
    const char *name;             /* "baseline" / "candidate" */
    const char *base_url;
    char *url;                    /* completions or chat URL */
    drift_req_opts ro;
    drift_score_method method;
    bool ids;                     /* takes token-id prompts and names its tokens by id */
    char *native_url;             /* llama.cpp's /completion */
    bool native;                  /* ... answers return_tokens: generations name every id */
} side;

typedef struct {
    const drift_opts *o;
    drift_http_opts h;
    ds_stop_flag *stop;
    drift_run *run;
    side b, c;
    FILE *pos_out;                /* --save-positions, or NULL */
    bool ids;                     /* both sides take token ids: prompts and continuations go as ids */
} ctx;

const char *drift_score_method_name(drift_score_method m) {
    switch (m) {
    case DRIFT_SCORE_ECHO: return "echo";
    case DRIFT_SCORE_PROMPT_LOGPROBS: return "prompt_logprobs";
    case DRIFT_SCORE_STEPWISE: return "stepwise";
    default: return "auto";
    }
}

static void warn(drift_run *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void warn(drift_run *r, const char *fmt, ...) {
    char buf[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    size_t i;
    json_t *w;
    json_array_foreach(r->warnings, i, w) if (!strcmp(json_string_value(w), buf)) return;
    json_array_append_new(r->warnings, json_string(buf));
}

/* One request, synchronously (probes). The response is parsed into *resp on HTTP 200. Returns the
 * HTTP status (0: no answer), with a one-line description in why otherwise. */
static long one(ctx *x, const side *s, char *body, drift_resp *resp, char *why, size_t wl) {
    drift_http_req r = { .url = s->url, .body = body };
    drift_http_opts h = x->h;
    h.concurrency = 1;
    drift_http_run(&r, 1, &h, x->stop);
    long st = r.status;
    memset(resp, 0, sizeof *resp);
    if (!st) snprintf(why, wl, "no answer from %s: %s", s->url, r.err);
    else if (st != 200) {
        char perr[200];
        if (drift_resp_parse(r.resp ? r.resp : "", r.resp_len, resp, perr, sizeof perr) == 0) drift_resp_free(resp);
        snprintf(why, wl, "HTTP %ld from %s: %s", st, s->url, r.resp ? perr : "(empty body)");
    } else if (drift_resp_parse(r.resp ? r.resp : "", r.resp_len, resp, why, wl) < 0) {
        st = -1;
    }
    drift_http_req_free(&r);
    return st;
}

/* Whether the side takes a prompt as token ids and names its tokens by id (llama.cpp, vLLM): then
 * the candidate scores exactly the baseline's tokens and no text is re-tokenized (a BPE merge
 * across the prompt/continuation boundary, or a token ending inside a UTF-8 character, would
 * otherwise shift positions). The client tokenizer must count the probe prompt as the server does
 * (server_count, from the text probe), else its ids are not the served model's. */
static void probe_ids(ctx *x, side *s, const char *p, int64_t server_count) {
    int32_t *ids = NULL;
    size_t n = 0;
    if (tokenizer_encode(x->o->tok, p, strlen(p), tokenizer_add_bos_default(x->o->tok), &ids, &n) < 0 || !n) { free(ids); return; }
    if (server_count != (int64_t)n) {
        warn(x->run, "the client tokenizer counts %zu tokens in a probe prompt where the %s counts %lld: is --tokenizer the "
             "served model's? Prompts go as text", n, s->name, (long long)server_count);
        free(ids);
        return;
    }
    drift_resp r;
    char why[400];
    long st = one(x, s, drift_body_generate_ids(&s->ro, ids, n, 2), &r, why, sizeof why);
    s->ids = st == 200 && r.have_logprobs && r.gen[0].tok.id >= 0 && r.gen[0].n_top > 0 && r.gen[0].top[0].id >= 0 &&
             r.prompt_tokens == (int64_t)n;
    drift_resp_free(&r);
    if (s->ids && s->native_url) {
        /* llama.cpp leaves out the logprobs entry of a token after which its text ends inside a UTF-8
         * character, on every endpoint; its native /completion still names that token's id
         * (return_tokens), so the baseline's continuation stays exact with the gap marked */
        side ns = *s;
        ns.url = s->native_url;
        st = one(x, &ns, drift_body_native_ids(&s->ro, ids, n, 2), &r, why, sizeof why);
        s->native = st == 200 && r.n_ids == 2 && r.have_logprobs && r.prompt_tokens == (int64_t)n && drift_resp_align_ids(&r) == 0;
        drift_resp_free(&r);
    }
    free(ids);
}

/* Checks that the side answers greedy requests with logprobs and picks how it scores a text. */
static int probe(ctx *x, side *s, char *err, size_t errlen) {
    const char *p = "The quick brown fox jumps over the lazy dog";
    drift_resp r;
    char why[400];
    long st = one(x, s, drift_body_generate(&s->ro, p, 2), &r, why, sizeof why);
    if (st != 200) {
        snprintf(err, errlen, "the %s does not answer a logprobs request (%s)", s->name, why);
        return -1;
    }
    bool lp = r.have_logprobs && r.gen[0].n_top > 0;
    int64_t server_count = r.prompt_tokens;
    drift_resp_free(&r);
    if (!lp) {
        snprintf(err, errlen, "the %s (%s) returned no logprobs: drift needs top-%d logprobs per token (vLLM: "
                 "--max-logprobs >= %d; llama.cpp, SGLang and TGI give them on request; a proxy may strip them)",
                 s->name, s->url, s->ro.top_k, s->ro.top_k);
        return -1;
    }
    if (x->o->chat) { s->method = DRIFT_SCORE_STEPWISE; return 0; }
    if (x->o->tok) probe_ids(x, s, p, server_count);
    if (x->o->score != DRIFT_SCORE_AUTO) { s->method = x->o->score; return 0; }
    st = one(x, s, drift_body_score(&s->ro, DRIFT_SCORE_ECHO, p), &r, why, sizeof why);
    int64_t gen = r.completion_tokens >= 0 ? r.completion_tokens : 1;
    bool echo = st == 200 && r.have_logprobs && (int64_t)r.n_gen > gen + 1 && isnan(r.gen[0].tok.lp);
    drift_resp_free(&r);
    if (echo) { s->method = DRIFT_SCORE_ECHO; return 0; }
    st = one(x, s, drift_body_score(&s->ro, DRIFT_SCORE_PROMPT_LOGPROBS, p), &r, why, sizeof why);
    bool pl = st == 200 && r.have_prompt_logprobs && r.n_prompt > 1;
    drift_resp_free(&r);
    s->method = pl ? DRIFT_SCORE_PROMPT_LOGPROBS : DRIFT_SCORE_STEPWISE;
    return 0;
}

/* ---- prompts and text windows ---- */

typedef struct { char *text; int32_t len; int32_t *ids; size_t n_ids; } prompt_t;

/* The prompt's token ids as the server counts them (BOS when the model asks for one). */
static int prompt_encode(const drift_opts *o, prompt_t *p) {
    free(p->ids);
    p->ids = NULL;
    if (tokenizer_encode(o->tok, p->text, strlen(p->text), tokenizer_add_bos_default(o->tok), &p->ids, &p->n_ids) < 0) return -1;
    p->len = (int32_t)p->n_ids;
    return 0;
}

/* Random real-word prompts of exactly L units as the server counts them (BOS included). */
static int random_prompts(const drift_opts *o, int bi, prompt_t *out, char *err, size_t errlen) {
    int64_t L = o->contexts[bi];
    int64_t bos = o->tok && !o->chat && tokenizer_add_bos_default(o->tok) ? 1 : 0;
    char spec[96];
    snprintf(spec, sizeof spec, "random:in=%lld,out=%d,range=0", (long long)(L - bos > 1 ? L - bos : 1), o->gen_tokens);
    dataset_opts dopt = { .tok = o->tok, .tolerance = 0.05 };
    dataset *d = NULL;
    if (dataset_open(spec, (size_t)o->prompts, o->seed * 1000003ULL + (uint64_t)bi, &dopt, &d, err, errlen) < 0) return -1;
    dataset_count_for_api(d, o->tok, o->chat);
    for (int j = 0; j < o->prompts; j++) {
        dataset_item *it = &d->items[(size_t)j % d->n];
        out[j].text = strdup(it->prompt ? it->prompt : "");
        out[j].len = it->in_tokens;
    }
    dataset_free(d);
    return 0;
}

/* A dataset's prompts, each in the smallest context that holds it. */
static int dataset_prompts(const drift_opts *o, prompt_t **per_bucket, int *counts, char *err, size_t errlen, drift_run *run) {
    dataset_opts dopt = { .tok = o->tok, .tolerance = 0.05 };
    dataset *d = NULL;
    if (dataset_open(o->dataset, (size_t)o->prompts * (size_t)o->n_contexts, o->seed, &dopt, &d, err, errlen) < 0) return -1;
    dataset_count_for_api(d, o->tok, o->chat);
    size_t skipped = 0;
    for (size_t i = 0; i < d->n; i++) {
        dataset_item *it = &d->items[i];
        int bi = -1;
        for (int k = 0; k < o->n_contexts && bi < 0; k++) if (it->prompt && it->in_tokens <= o->contexts[k]) bi = k;
        if (bi < 0 || counts[bi] >= o->prompts) { skipped++; continue; }
        per_bucket[bi][counts[bi]].text = strdup(it->prompt);
        per_bucket[bi][counts[bi]++].len = it->in_tokens;
    }
    if (skipped) warn(run, "%zu dataset prompts were not used (longer than the largest context, no plain prompt, or their context "
                      "already had %d)", skipped, o->prompts);
    dataset_free(d);
    return 0;
}

typedef struct { char *text; int32_t *ids; size_t n; bool words; } ref_text;

static int ref_text_load(const drift_opts *o, ref_text *t, char *err, size_t errlen) {
    memset(t, 0, sizeof *t);
    if (!o->text_path) return 0;
    size_t len;
    if (fileio_read_all(o->text_path, &t->text, &len) < 0) {
        snprintf(err, errlen, "cannot read --text %s: %s", o->text_path, strerror(errno));
        return -1;
    }
    if (o->tok) {
        if (tokenizer_encode(o->tok, t->text, len, false, &t->ids, &t->n) < 0) {
            snprintf(err, errlen, "--text %s: the tokenizer could not encode it", o->text_path);
            return -1;
        }
    } else {
        t->words = true;
        t->n = (size_t)dataset_count_words(t->text, len);
    }
    return 0;
}

/* Window w of L units (as the server counts them) of the reference text, malloc'd; NULL if short. */
static char *ref_window(const drift_opts *o, const ref_text *t, int64_t L, int w) {
    int64_t bos = o->tok && tokenizer_add_bos_default(o->tok) ? 1 : 0;
    size_t n = (size_t)(L - bos), start = (size_t)w * n;
    if (L - bos < 2 || start + n > t->n) return NULL;
    if (!t->words) {
        char *s = NULL;
        size_t sl;
        return tokenizer_decode(o->tok, t->ids + start, n, &s, &sl) == 0 ? s : NULL;
    }
    /* the words [start, start + n), joined by single spaces */
    size_t cap = 64, len = 0, k = 0;
    char *s = malloc(cap);
    const char *p = t->text;
    while (s && *p && k < start + n) {
        while (*p && isspace((unsigned char)*p)) p++;
        const char *wd = p;
        while (*p && !isspace((unsigned char)*p)) p++;
        if (p == wd) break;
        if (k++ < start) continue;
        size_t wl = (size_t)(p - wd);
        if (len + wl + 2 > cap) { while (len + wl + 2 > cap) cap *= 2; char *ns = realloc(s, cap); if (!ns) { free(s); return NULL; } s = ns; }
        if (len) s[len++] = ' ';
        memcpy(s + len, wd, wl);
        len += wl;
    }
    if (s) s[len] = 0;
    return s;
}

/* ---- tallies ---- */

/* Where a compared position goes in --save-positions (f NULL: nowhere). */
typedef struct {
    FILE *f;
    int64_t context;
    const char *kind;          /* "candidate", "floor", "text", "text_floor" */
    int index;                 /* prompt or window */
    int64_t ctx0;              /* context length before the first logged position; -1 unknown */
    int k;                     /* top-k asked for: longer lists are cut to it */
} pos_log;

static json_t *top_json(const drift_tok *t, int n) {
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_pack("[s%,o]", t[i].text, t[i].len, isnan(t[i].lp) ? json_null() : json_real(t[i].lp)));
    return a;
}

static void log_pos(const pos_log *lg, int i, const drift_pos *b, const drift_tok *c_top, int c_n, const drift_cmp *c) {
    if (!lg || !lg->f) return;
    json_t *j = json_pack("{s:I,s:s,s:i,s:i,s:o,s:s%,s:o,s:o,s:b,s:i,s:f,s:f,s:o,s:o}",
        "context", (json_int_t)lg->context, "kind", lg->kind, "index", lg->index, "pos", i,
        "context_len", lg->ctx0 >= 0 ? json_integer(lg->ctx0 + i) : json_null(), "token", b->tok.text, b->tok.len,
        "baseline_lp", isnan(c->lp_b) ? json_null() : json_real(c->lp_b), "candidate_lp", c->lp_known ? json_real(c->lp_c) : json_null(),
        "agree", c->agree, "rank", c->rank, "kl", c->kl, "tail", c->tail,
        "baseline_top", top_json(b->top, b->n_top), "candidate_top", top_json(c_top, c_n));
    char *s = j ? json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(17)) : NULL;
    if (s) fprintf(lg->f, "%s\n", s);
    free(s);
    json_decref(j);
}

static void why_set(char *why, size_t wl, const char *fmt, const char *a, long b) {
    if (!why[0]) snprintf(why, wl, fmt, a, b);
}

/* The concatenated bytes of the first n generated tokens. */
static char *continuation(const drift_resp *r, int n) {
    size_t len = 0;
    for (int i = 0; i < n; i++) len += r->gen[i].tok.len;
    char *s = malloc(len + 1);
    if (!s) return NULL;
    len = 0;
    for (int i = 0; i < n; i++) { memcpy(s + len, r->gen[i].tok.text, r->gen[i].tok.len); len += r->gen[i].tok.len; }
    s[len] = 0;
    return s;
}

/* The positions of a scored prompt (echo: the echoed prompt tokens; prompt_logprobs: its entries). */
static const drift_pos *scored_positions(const drift_resp *r, drift_score_method m, size_t *n) {
    if (m == DRIFT_SCORE_PROMPT_LOGPROBS) { *n = r->n_prompt; return r->prompt; }
    int64_t gen = r->completion_tokens >= 0 ? r->completion_tokens : 1;
    *n = r->n_gen > (size_t)gen ? r->n_gen - (size_t)gen : 0;
    return r->gen;
}

static void tally_pos(drift_prompt *p, const drift_pos *b, const drift_tok *c_top, int c_n, double c_lp, int c_rank,
                      const pos_log *lg, int i) {
    if (c_n > lg->k) c_n = lg->k;          /* the k asked for (vLLM lists the prompt's token beside them) */
    drift_cmp c;
    drift_compare_pos(b, c_top, c_n, c_lp, c_rank, &c);
    log_pos(lg, i, b, c_top, c_n, &c);
    p->positions++;
    p->agree += c.agree;
    p->in_topk += c.rank > 0;
    p->rank_hist[c.rank < DRIFT_RANKS ? c.rank : 0]++;
    p->sum_kl += c.kl;
    p->sum_tail += c.tail;
    if (b->n_top > 0 && !drift_tok_same(&b->top[0], &b->tok)) p->not_greedy = true;
    if (c.lp_known) {
        p->lp_known++;
        p->sum_dlp += c.lp_c - c.lp_b;
        p->sum_abs_dlp += fabs(c.lp_c - c.lp_b);
        p->nll_b -= c.lp_b;
        p->nll_c -= c.lp_c;
    }
}

/* A position of the baseline's continuation the server gave no logprobs for (drift_resp_align_ids):
 * nothing to compare there, on any side (a step there generates the same token, without logprobs). */
static bool unobservable(const drift_resp *bg, int i) { return bg->ids && bg->gen[i].n_top == 0 && isnan(bg->gen[i].tok.lp); }

/* Teacher-forced: the baseline's continuation bg (G tokens) against one scoring response (echo,
 * prompt_logprobs) or G stepwise responses. */
static void tally_forced(drift_prompt *p, const drift_resp *bg, int G, drift_score_method m, const drift_resp *sc,
                         const drift_resp *steps, pos_log *lg) {
    if (m != DRIFT_SCORE_STEPWISE) {
        size_t n;
        const drift_pos *pos = scored_positions(sc, m, &n);
        if (n < (size_t)G) { why_set(p->why, sizeof p->why, "the %s scoring returned %ld positions", drift_score_method_name(m), (long)n); return; }
        for (int i = 0; i < G; i++) {
            const drift_pos *c = &pos[n - (size_t)G + (size_t)i];
            if (unobservable(bg, i)) continue;
            if (!drift_tok_same(&c->tok, &bg->gen[i].tok)) {
                why_set(p->why, sizeof p->why, "misaligned: split differently (%s, position %ld)",
                        drift_score_method_name(m), i);
                return;
            }
        }
        lg->ctx0 = (int64_t)(n - (size_t)G);
        for (int i = 0; i < G; i++) {
            const drift_pos *c = &pos[n - (size_t)G + (size_t)i];
            if (unobservable(bg, i)) { p->unobservable++; continue; }
            tally_pos(p, &bg->gen[i], c->top, c->n_top, c->tok.lp, c->rank, lg, i);
        }
    } else {
        for (int i = 0; i < G; i++) {
            if (unobservable(bg, i)) continue;
            if (!steps[i].n_gen) { why_set(p->why, sizeof p->why, "a stepwise request (%s %ld) gave no logprobs", "position", i); return; }
            if (steps[i].prompt_tokens >= 0 && steps[0].prompt_tokens >= 0 && steps[i].prompt_tokens - steps[0].prompt_tokens != i) {
                why_set(p->why, sizeof p->why, "misaligned: split differently (%s, position %ld)", "stepwise", i);
                return;
            }
        }
        lg->ctx0 = bg->prompt_tokens;
        for (int i = 0; i < G; i++) {
            if (unobservable(bg, i)) { p->unobservable++; continue; }
            const drift_pos *c = &steps[i].gen[0];
            tally_pos(p, &bg->gen[i], c->top, c->n_top, NAN, 0, lg, i);
        }
    }
    p->ok = true;
}

/* Free-running: the first position where the two outputs differ; one that ended earlier (EOS,
 * ignore_eos not honoured) differs where it ended, so only equal outputs of equal length match. */
static void tally_free(drift_prompt *p, const drift_resp *a, const drift_resp *b) {
    size_t n = a->n_gen < b->n_gen ? a->n_gen : b->n_gen;
    p->free_ok = n > 0;
    p->free_len = (int)(a->n_gen > b->n_gen ? a->n_gen : b->n_gen);
    p->first_diff = (int)n;
    for (size_t i = 0; i < n; i++)
        if (!drift_tok_same(&a->gen[i].tok, &b->gen[i].tok)) { p->first_diff = (int)i; break; }
}

static void tally_window(drift_window *w, const drift_resp *b, drift_score_method mb, const drift_resp *c, drift_score_method mc,
                         const pos_log *lg) {
    size_t nb, nc;
    const drift_pos *pb = scored_positions(b, mb, &nb), *pc = scored_positions(c, mc, &nc);
    if (nb != nc || nb < 2) { snprintf(w->why, sizeof w->why, "the sides scored %zu and %zu positions", nb, nc); return; }
    for (size_t i = 1; i < nb; i++) {
        if (!drift_tok_same(&pb[i].tok, &pc[i].tok)) { snprintf(w->why, sizeof w->why, "the sides split the text differently at %zu", i); return; }
    }
    for (size_t i = 1; i < nb; i++) {
        if (isnan(pb[i].tok.lp) || isnan(pc[i].tok.lp)) continue;
        w->tokens++;
        w->nll_b -= pb[i].tok.lp;
        w->nll_c -= pc[i].tok.lp;
        if (lg && lg->f) {
            drift_cmp cmp;
            int cn = pc[i].n_top < lg->k ? pc[i].n_top : lg->k;
            drift_compare_pos(&pb[i], pc[i].top, cn, pc[i].tok.lp, pc[i].rank, &cmp);
            log_pos(lg, (int)i, &pb[i], pc[i].top, cn, &cmp);
        }
    }
    w->ok = w->tokens > 0;
}

/* ---- one bucket ---- */

typedef struct { const side *s; int prompt; int step; int kind; } tag;
enum { T_CAND, T_FLOOR, T_TEXT_B, T_TEXT_C, T_TEXT_B2 };

/* Parses a finished request into r (zeroed on failure, with why). */
static bool take(ctx *x, drift_http_req *q, drift_resp *r, char *why, size_t wl) {
    memset(r, 0, sizeof *r);
    x->run->requests++;
    char perr[200] = "";
    if (q->status == 200 && drift_resp_parse(q->resp ? q->resp : "", q->resp_len, r, perr, sizeof perr) == 0) return true;
    x->run->failed_requests++;
    if (!why[0]) {
        if (!q->status) snprintf(why, wl, "no answer: %.80s", q->err);
        else if (q->status != 200) {
            if (q->resp && drift_resp_parse(q->resp, q->resp_len, r, perr, sizeof perr) == 0) drift_resp_free(r);
            snprintf(why, wl, "HTTP %ld: %.70s", q->status, q->resp ? perr : "");
        } else snprintf(why, wl, "%.90s", perr);
    }
    return false;
}

static int push(drift_http_req **rq, tag **tg, size_t *n, size_t *cap, const side *s, char *body, tag t) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 64;
        drift_http_req *a = realloc(*rq, nc * sizeof *a);
        if (a) *rq = a;
        tag *b = realloc(*tg, nc * sizeof *b);
        if (b) *tg = b;
        if (!a || !b) { free(body); return -1; }
        *cap = nc;
    }
    (*rq)[*n] = (drift_http_req){ .url = s->url, .body = body };
    t.s = s;
    (*tg)[(*n)++] = t;
    return 0;
}

static char *gen_body(const ctx *x, const side *s, const prompt_t *p, int G) {
    if (x->ids && s->native) return drift_body_native_ids(&s->ro, p->ids, p->n_ids, G);
    return x->ids ? drift_body_generate_ids(&s->ro, p->ids, p->n_ids, G) : drift_body_generate(&s->ro, p->text, G);
}

static const char *gen_url(const ctx *x, const side *s) { return x->ids && s->native ? s->native_url : s->url; }

/* Token-id mode: the prompt's ids and the baseline's G generated ids, or NULL (why says) when the
 * baseline did not name a token by id. */
static int32_t *forced_ids(const prompt_t *p, const drift_resp *bg, int G, char *why, size_t wl) {
    int32_t *f = malloc((p->n_ids + (size_t)G) * sizeof *f);
    if (!f) { snprintf(why, wl, "out of memory"); return NULL; }
    memcpy(f, p->ids, p->n_ids * sizeof *f);
    for (int i = 0; i < G; i++) {
        if (bg->gen[i].tok.id < 0 || bg->gen[i].tok.id > INT32_MAX) {
            snprintf(why, wl, "the baseline named no token id at position %d", i);
            free(f);
            return NULL;
        }
        f[p->n_ids + (size_t)i] = (int32_t)bg->gen[i].tok.id;
    }
    return f;
}

static int run_bucket(ctx *x, drift_bucket *bk, prompt_t *pr, size_t np, const ref_text *text) {
    const drift_opts *o = x->o;
    int G = o->gen_tokens;
    bool fl = bk->have_floor;
    int rc = 0;
    /* A: generation */
    size_t nA = np * (fl ? 3 : 2);
    drift_http_req *A = calloc(nA ? nA : 1, sizeof *A);
    drift_resp *bg = calloc(np ? np : 1, sizeof *bg), *cg = calloc(np ? np : 1, sizeof *cg), *bg2 = calloc(np ? np : 1, sizeof *bg2);
    drift_http_req *B = NULL;
    tag *tg = NULL;
    size_t nB = 0, capB = 0;
    drift_resp *out = NULL;
    bool *okr = NULL;
    char **conts = calloc(np ? np : 1, sizeof *conts);
    int32_t **fids = calloc(np ? np : 1, sizeof *fids);
    bool *okb = calloc(np ? np : 1, sizeof *okb), *spelled = calloc(np ? np : 1, sizeof *spelled);
    if (!A || !bg || !cg || !bg2 || !conts || !fids || !okb || !spelled) { rc = -1; goto done; }
    for (size_t j = 0; j < np; j++) {
        A[j] = (drift_http_req){ .url = gen_url(x, &x->b), .body = gen_body(x, &x->b, &pr[j], G) };
        A[np + j] = (drift_http_req){ .url = gen_url(x, &x->c), .body = gen_body(x, &x->c, &pr[j], G) };
        if (fl) A[2 * np + j] = (drift_http_req){ .url = gen_url(x, &x->b), .body = gen_body(x, &x->b, &pr[j], G) };
    }
    if (drift_http_run(A, nA, &x->h, x->stop) < 0) { rc = 1; goto done; }
    for (size_t j = 0; j < np; j++) {
        drift_prompt *pc = &bk->cand[j], *pf = fl ? &bk->floor[j] : NULL;
        okb[j] = take(x, &A[j], &bg[j], pc->why, sizeof pc->why);
        if (okb[j] && drift_resp_align_ids(&bg[j]) < 0) {
            snprintf(pc->why, sizeof pc->why, "the baseline's logprobs entries do not follow its generated ids");
            okb[j] = false;
        }
        if (okb[j] && (int)bg[j].n_gen < G) {
            /* llama.cpp adds no logprobs entry for a token after which its text ends inside a UTF-8
             * character: the usage says G tokens, the list has fewer, and the ids after the gap
             * would sit one position early, so the prompt cannot be scored */
            if (bg[j].completion_tokens >= G)
                snprintf(pc->why, sizeof pc->why, "logprobs for %d of %d tokens: one ends inside a UTF-8 character?",
                         (int)bg[j].n_gen, (int)(bg[j].completion_tokens < INT32_MAX ? bg[j].completion_tokens : INT32_MAX));
            else
                snprintf(pc->why, sizeof pc->why, "the baseline generated %zu of %d tokens with logprobs (EOS? ignore_eos not honoured?)", bg[j].n_gen, G);
            okb[j] = false;
        }
        if (pf && !okb[j]) snprintf(pf->why, sizeof pf->why, "%s", pc->why);
        char w2[96] = "";
        if (take(x, &A[np + j], &cg[j], w2, sizeof w2) && drift_resp_align_ids(&cg[j]) == 0 && okb[j]) tally_free(pc, &bg[j], &cg[j]);
        if (fl && take(x, &A[2 * np + j], &bg2[j], w2, sizeof w2) && drift_resp_align_ids(&bg2[j]) == 0 && okb[j]) tally_free(pf, &bg[j], &bg2[j]);
        if (okb[j] && x->ids && !(fids[j] = forced_ids(&pr[j], &bg[j], G, pc->why, sizeof pc->why))) {
            okb[j] = false;
            if (pf) snprintf(pf->why, sizeof pf->why, "%s", pc->why);
        }
        if (okb[j] && !(conts[j] = continuation(&bg[j], G))) okb[j] = false;
        /* The token strings may not spell the text: vLLM writes a token that ends inside a UTF-8
         * character as a replacement. Echo and prompt_logprobs then score the server's own text
         * (their alignment check compares token strings the same server wrote); stepwise needs
         * the token boundaries, so such a prompt cannot be scored stepwise. */
        spelled[j] = okb[j] && (x->ids || !bg[j].text || bg[j].n_gen != (size_t)G || !strcmp(conts[j], bg[j].text));
        if (okb[j] && !spelled[j]) {
            free(conts[j]);
            if (!(conts[j] = strdup(bg[j].text))) okb[j] = false;
        }
        if (okb[j] && bg[j].prompt_tokens > 0) {
            int32_t l = (int32_t)bg[j].prompt_tokens;
            pr[j].len = l;
        }
    }
    /* B: scoring */
    for (size_t j = 0; j < np; j++) {
        if (!okb[j]) continue;
        for (int k = 0; k < (fl ? 2 : 1); k++) {
            const side *s = k == 0 ? &x->c : &x->b;
            int kind = k == 0 ? T_CAND : T_FLOOR;
            if (s->method == DRIFT_SCORE_STEPWISE && !spelled[j]) {
                drift_prompt *p = kind == T_CAND ? &bk->cand[j] : &bk->floor[j];
                snprintf(p->why, sizeof p->why, "the baseline's token strings do not spell its text (a token inside a UTF-8 character?)");
                continue;
            }
            if (x->ids) {
                /* the prompt's ids and the baseline's: one scoring request, or one per position */
                bool sw = s->method == DRIFT_SCORE_STEPWISE;
                for (int i = sw ? 0 : G; i <= (sw ? G - 1 : G); i++) {
                    tag t = { .prompt = (int)j, .step = s->method == DRIFT_SCORE_STEPWISE ? i : -1, .kind = kind };
                    if (push(&B, &tg, &nB, &capB, s, drift_body_score_ids(&s->ro, s->method, fids[j], pr[j].n_ids + (size_t)i), t) < 0) {
                        rc = -1;
                        goto done;
                    }
                }
                continue;
            }
            if (s->method != DRIFT_SCORE_STEPWISE) {
                size_t a = strlen(pr[j].text), c = strlen(conts[j]);
                char *full = malloc(a + c + 1);
                if (!full) { rc = -1; goto done; }
                memcpy(full, pr[j].text, a);
                memcpy(full + a, conts[j], c + 1);
                int e = push(&B, &tg, &nB, &capB, s, drift_body_score(&s->ro, s->method, full), (tag){ .prompt = (int)j, .step = -1, .kind = kind });
                free(full);
                if (e < 0) { rc = -1; goto done; }
                continue;
            }
            size_t off = 0;
            for (int i = 0; i < G; i++) {
                char save = conts[j][off];
                conts[j][off] = 0;
                int e = push(&B, &tg, &nB, &capB, s, drift_body_step(&s->ro, pr[j].text, conts[j]), (tag){ .prompt = (int)j, .step = i, .kind = kind });
                conts[j][off] = save;
                if (e < 0) { rc = -1; goto done; }
                off += bg[j].gen[i].tok.len;
            }
        }
    }
    bool text_ok = x->b.method != DRIFT_SCORE_STEPWISE && x->c.method != DRIFT_SCORE_STEPWISE;
    for (size_t w = 0; text->text && text_ok && w < bk->n_windows; w++) {
        char *win = ref_window(o, text, bk->context, (int)w);
        for (int k = 0; win && k < (fl ? 3 : 2); k++) {
            const side *s = k == 1 ? &x->c : &x->b;
            if (push(&B, &tg, &nB, &capB, s, drift_body_score(&s->ro, s->method, win), (tag){ .prompt = (int)w, .step = -1, .kind = T_TEXT_B + k }) < 0) {
                free(win);
                rc = -1;
                goto done;
            }
        }
        free(win);
    }
    if (drift_http_run(B, nB, &x->h, x->stop) < 0) { rc = 1; goto done; }
    out = calloc(nB ? nB : 1, sizeof *out);
    okr = calloc(nB ? nB : 1, sizeof *okr);
    if (!out || !okr) { rc = -1; goto done; }
    /* each prompt's responses: one (echo / prompt_logprobs) or G (stepwise) per side */
    for (size_t i = 0; i < nB; i++) {
        const tag *t = &tg[i];
        char *why = t->kind == T_CAND ? bk->cand[t->prompt].why : t->kind == T_FLOOR ? bk->floor[t->prompt].why
                  : t->kind == T_TEXT_B2 ? bk->text_floor[t->prompt].why : bk->text_cand[t->prompt].why;
        okr[i] = take(x, &B[i], &out[i], why, 96);
    }
    for (size_t i = 0; i < nB;) {
        const tag *t = &tg[i];
        size_t span = t->step >= 0 ? (size_t)G : 1;
        if (t->kind == T_CAND || t->kind == T_FLOOR) {
            drift_prompt *p = t->kind == T_CAND ? &bk->cand[t->prompt] : &bk->floor[t->prompt];
            pos_log lg = { x->pos_out, bk->context, t->kind == T_CAND ? "candidate" : "floor", t->prompt, -1, o->top_k };
            if (!p->why[0]) tally_forced(p, &bg[t->prompt], G, t->s->method, &out[i], &out[i], &lg);
        } else if (t->kind == T_TEXT_B) {
            drift_window *wc = &bk->text_cand[t->prompt], *wf = fl ? &bk->text_floor[t->prompt] : NULL;
            pos_log lc = { x->pos_out, bk->context, "text", t->prompt, 0, o->top_k }, lf = { x->pos_out, bk->context, "text_floor", t->prompt, 0, o->top_k };
            if (okr[i] && okr[i + 1]) tally_window(wc, &out[i], x->b.method, &out[i + 1], x->c.method, &lc);
            if (wf && okr[i] && okr[i + 2]) tally_window(wf, &out[i], x->b.method, &out[i + 2], x->b.method, &lf);
            if (wf && !okr[i]) snprintf(wf->why, sizeof wf->why, "%s", wc->why);
            span = fl ? 3 : 2;
        }
        i += span;
    }
    for (size_t j = 0; j < np; j++) {
        if (!bk->cand[j].ok) warn(x->run, "a %lld-context prompt was left out: %s", (long long)bk->context, bk->cand[j].why);
        if (bk->cand[j].not_greedy)
            warn(x->run, "the baseline's token was not its own most likely token somewhere: is temperature 0 honoured?");
    }
    /* measured prompt lengths (as the server counted them) */
    bk->prompt_len_min = INT32_MAX;
    bk->prompt_len_max = 0;
    double sum = 0;
    for (size_t j = 0; j < np; j++) {
        if (pr[j].len < bk->prompt_len_min) bk->prompt_len_min = pr[j].len;
        if (pr[j].len > bk->prompt_len_max) bk->prompt_len_max = pr[j].len;
        sum += pr[j].len;
    }
    bk->prompt_len_mean = np ? sum / (double)np : NAN;
    bk->done = true;
done:
    for (size_t i = 0; A && i < nA; i++) drift_http_req_free(&A[i]);
    for (size_t i = 0; i < nB; i++) { drift_http_req_free(&B[i]); if (out) drift_resp_free(&out[i]); }
    for (size_t j = 0; j < np; j++) {
        if (bg) drift_resp_free(&bg[j]);
        if (cg) drift_resp_free(&cg[j]);
        if (bg2) drift_resp_free(&bg2[j]);
        if (conts) free(conts[j]);
        if (fids) free(fids[j]);
    }
    free(A); free(B); free(tg); free(out); free(okr); free(bg); free(cg); free(bg2); free(conts); free(fids); free(okb); free(spelled);
    return rc;
}

/* ---- the run ---- */

static void bucket_free(drift_bucket *b) {
    free(b->cand);
    free(b->floor);
    free(b->text_cand);
    free(b->text_floor);
}

void drift_run_free(drift_run *r) {
    if (!r) return;
    for (int i = 0; i < r->n_b; i++) bucket_free(&r->b[i]);
    free(r->b);
    json_decref(r->warnings);
    free(r);
}

static int side_init(side *s, const char *name, const char *base, const char *model, const drift_opts *o) {
    s->name = name;
    s->base_url = base;
    s->url = client_url(base, o->chat ? "/v1/chat/completions" : "/v1/completions");
    s->native_url = o->chat ? NULL : client_url(base, "/completion");
    s->ro = (drift_req_opts){ .chat = o->chat, .model = model, .top_k = o->top_k, .ignore_eos = true };
    return s->url ? 0 : -1;
}

int drift_run_all(const drift_opts *o, drift_run **out, ds_stop_flag *stop, char *err, size_t errlen) {
    *out = NULL;
    ctx x = { .o = o, .stop = stop };
    x.h = (drift_http_opts){ .concurrency = o->concurrency, .timeout_ns = o->timeout_ns, .headers = o->headers,
                             .api_key = o->api_key, .insecure = o->insecure };
    drift_run *r = calloc(1, sizeof *r);
    size_t nctx = o->n_contexts > 0 ? (size_t)o->n_contexts : 1;
    prompt_t **pb = calloc(nctx, sizeof *pb);
    int *counts = calloc(nctx, sizeof *counts);
    ref_text text = { 0 };
    int rc = -1;
    if (!r || !pb || !counts || !(r->warnings = json_array())) { snprintf(err, errlen, "out of memory"); goto out; }
    x.run = r;
    r->started_unix = (int64_t)time(NULL);
    int64_t t0 = clock_now_ns();
    r->length_unit = o->tok ? "tokens" : "words";
    r->text_units = -1;
    r->same_deployment = !strcmp(o->baseline_url, o->candidate_url) &&
                         !strcmp(o->baseline_model ? o->baseline_model : "", o->candidate_model ? o->candidate_model : "");
    if (side_init(&x.b, "baseline", o->baseline_url, o->baseline_model, o) < 0 ||
        side_init(&x.c, "candidate", o->candidate_url, o->candidate_model, o) < 0) {
        snprintf(err, errlen, "out of memory");
        goto out;
    }
    if (probe(&x, &x.b, err, errlen) < 0) goto out;
    if (r->same_deployment) { x.c.method = x.b.method; x.c.ids = x.b.ids; x.c.native = x.b.native; }
    else if (probe(&x, &x.c, err, errlen) < 0) goto out;
    x.ids = r->token_ids = x.b.ids && x.c.ids;
    r->method_b = x.b.method;
    r->method_c = x.c.method;
    if (ref_text_load(o, &text, err, errlen) < 0) goto out;
    /* "-" is standard output, as in every output flag */
    if (o->positions_path && !(x.pos_out = strcmp(o->positions_path, "-") ? fopen(o->positions_path, "w") : stdout)) {
        snprintf(err, errlen, "cannot write --save-positions %s: %s", o->positions_path, strerror(errno));
        goto out;
    }
    if (text.text) r->text_units = (int64_t)text.n;
    if (text.text && (x.b.method == DRIFT_SCORE_STEPWISE || x.c.method == DRIFT_SCORE_STEPWISE))
        warn(r, "no perplexity of --text: the %s scores only stepwise (it answers neither echo nor prompt_logprobs), which gives "
             "the top-%d of each position, not the text token's logprob", x.b.method == DRIFT_SCORE_STEPWISE ? "baseline" : "candidate", o->top_k);
    for (int i = 0; i < o->n_contexts; i++) {
        pb[i] = calloc((size_t)o->prompts, sizeof **pb);
        if (!pb[i]) { snprintf(err, errlen, "out of memory"); goto out; }
    }
    if (o->dataset) {
        if (dataset_prompts(o, pb, counts, err, errlen, r) < 0) goto out;
    } else {
        for (int i = 0; i < o->n_contexts; i++) {
            if (random_prompts(o, i, pb[i], err, errlen) < 0) goto out;
            counts[i] = o->prompts;
        }
    }
    for (int i = 0; x.ids && i < o->n_contexts; i++)
        for (int j = 0; j < counts[i]; j++)
            if (prompt_encode(o, &pb[i][j]) < 0) { snprintf(err, errlen, "the tokenizer could not encode a prompt"); goto out; }
    r->b = calloc(o->n_contexts > 0 ? (size_t)o->n_contexts : 1, sizeof *r->b);
    if (!r->b) { snprintf(err, errlen, "out of memory"); goto out; }
    rc = 0;
    for (int i = 0; i < o->n_contexts && rc == 0; i++) {
        drift_bucket *bk = &r->b[r->n_b++];
        bk->context = o->contexts[i];
        bk->n_prompts = (size_t)counts[i];
        bk->have_floor = o->floor && !r->same_deployment;
        int64_t bos = o->tok && tokenizer_add_bos_default(o->tok) ? 1 : 0;
        size_t nw = text.text && bk->context - bos > 1 ? text.n / (size_t)(bk->context - bos) : 0;
        bk->n_windows = nw < (size_t)o->max_windows ? nw : (size_t)o->max_windows;
        if (text.text && !bk->n_windows)
            warn(r, "--text has %zu %s, fewer than one %lld-%s window", text.n, r->length_unit, (long long)bk->context, r->length_unit);
        size_t np = bk->n_prompts ? bk->n_prompts : 1, nwin = bk->n_windows ? bk->n_windows : 1;
        bk->cand = calloc(np, sizeof *bk->cand);
        bk->floor = calloc(np, sizeof *bk->floor);
        bk->text_cand = calloc(nwin, sizeof *bk->text_cand);
        bk->text_floor = calloc(nwin, sizeof *bk->text_floor);
        if (!bk->cand || !bk->floor || !bk->text_cand || !bk->text_floor) { snprintf(err, errlen, "out of memory"); rc = -1; break; }
        int brc = run_bucket(&x, bk, pb[i], bk->n_prompts, &text);
        if (brc == 0)
            log_info("drift: context %lld (%d of %d) measured: %zu prompts, %ld requests so far", (long long)bk->context, i + 1,
                     o->n_contexts, bk->n_prompts, r->requests);
        if (brc < 0) { snprintf(err, errlen, "out of memory"); rc = -1; }
        if (brc > 0) { r->partial = true; rc = 1; }
    }
    if (rc >= 0 && stop && *stop) { r->partial = true; rc = 1; }
    r->elapsed_s = (double)(clock_now_ns() - t0) / 1e9;
out:
    free(x.b.url);
    free(x.c.url);
    free(x.b.native_url);
    free(x.c.native_url);
    if (x.pos_out && (x.pos_out == stdout ? fflush(x.pos_out) : fclose(x.pos_out)) != 0 && rc >= 0 && r && r->warnings) warn(r, "writing --save-positions %s failed: %s", o->positions_path, strerror(errno));
    for (int i = 0; pb && i < o->n_contexts; i++) {
        for (int j = 0; pb[i] && j < o->prompts; j++) { free(pb[i][j].text); free(pb[i][j].ids); }
        free(pb[i]);
    }
    free(pb);
    free(counts);
    free(text.text);
    free(text.ids);
    if (rc < 0) { drift_run_free(r); return -1; }
    *out = r;
    return rc;
}
