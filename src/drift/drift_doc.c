/* drift_doc — a run's tallies as the dsperf.drift/1 document: per context bucket the metrics with
 * bootstrap intervals over prompts (metrics/infer.h: each prompt is one unit, since positions of a
 * prompt are not independent), the same metrics for the noise floor (the baseline against itself)
 * and whether the candidate is distinguishable from it; plus the options and defaults of a run.
 *
 * Definitions (each prompt weighs the same; with every prompt complete, the pooled ratios):
 *   top1_agreement          mean over prompts of (positions where the candidate's top-1 is the
 *                           baseline's token) / positions
 *   topk_containment        ... where the baseline's token is within the candidate's top-k
 *   mean_logprob_delta      mean of lp_candidate(token) - lp_baseline(token), where known
 *   kl                      mean KL(baseline || candidate) per position, a lower bound (drift_score.c),
 *                           kl_tail_mass the mean baseline probability outside the shared top tokens
 *   continuation_delta_ppl  exp(mean over prompts of the per-token NLL difference) - 1 on the
 *                           baseline's continuation; text_delta_ppl the same over --text windows;
 *                           delta_ppl is the text's when there is one, else the continuation's
 *   exact_match_rate        prompts whose free-running outputs are identical; first divergence the
 *                           first differing position (the length when identical) */
#include "drift/drift_int.h"
#include "common/version.h"
#include "metrics/infer.h"
#include "results/results.h"
#include "common/units.h"
#include "common/redact.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void drift_default_opts(drift_opts *o) {
    memset(o, 0, sizeof *o);
    o->contexts[0] = 1024;
    o->contexts[1] = 4096;
    o->contexts[2] = 16384;
    o->n_contexts = 3;
    o->prompts = 8;
    o->gen_tokens = 32;
    o->top_k = 5;
    o->max_windows = 4;
    o->seed = 1;
    o->floor = true;
    o->concurrency = 4;
    o->timeout_ns = 600LL * 1000000000LL;
    o->confidence = 0.95;
    o->resamples = 2000;
    o->min_effect_agreement = 0.001;
    o->min_effect_ppl = 0.001;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

int drift_parse_contexts(const char *spec, drift_opts *o, char *err, size_t errlen) {
    o->n_contexts = 0;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        size_t l = strlen(t);
        long long mult = 1, v;
        if (l && (t[l - 1] == 'k' || t[l - 1] == 'K')) { mult = 1024; t[--l] = 0; }
        if (o->n_contexts == DRIFT_MAX_CONTEXTS || units_parse_int(t, 1, 16LL * 1024 * 1024, &v) < 0 || v * mult > 16LL * 1024 * 1024 || v * mult < 2) {
            snprintf(err, errlen, "bad --contexts '%s': up to %d lengths like 1k,4k,16k,64k (k = 1024) or 512,2048", spec, DRIFT_MAX_CONTEXTS);
            return -1;
        }
        o->contexts[o->n_contexts++] = v * mult;
    }
    if (!o->n_contexts) { snprintf(err, errlen, "bad --contexts '%s': give at least one length, like 1k,4k,16k", spec); return -1; }
    qsort(o->contexts, (size_t)o->n_contexts, sizeof o->contexts[0], cmp_i64);
    return 0;
}

/* ---- statistics over prompts ---- */

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

typedef struct { double *v; size_t n; } vec;

static void vec_add(vec *v, double x) { if (isfinite(x)) v->v[v->n++] = x; }

static double vec_mean(const vec *v) {
    double s = 0;
    for (size_t i = 0; i < v->n; i++) s += v->v[i];
    return v->n ? s / (double)v->n : NAN;
}

/* The mean with its bootstrap interval (the difference against a single zero is the mean itself). */
static void mean_ci(vec *v, const drift_opts *o, uint64_t seed, double *m, double *lo, double *hi) {
    *m = vec_mean(v);
    *lo = *hi = NAN;
    if (!v->n) return;
    qsort(v->v, v->n, sizeof *v->v, cmp_d);
    const double zero = 0;
    if (infer_bootstrap_diff(INFER_MEAN, 0, &zero, 1, v->v, v->n, o->resamples, o->confidence, seed, lo, hi) < 0) *lo = *hi = NAN;
}

static json_t *jnum(double v) { return isfinite(v) ? json_real(v) : json_null(); }
static json_t *jci(double lo, double hi) { return isfinite(lo) && isfinite(hi) ? json_pack("[f,f]", lo, hi) : json_null(); }

/* The per-prompt values of one set (the candidate's or the floor's). */
typedef struct {
    vec agree, contain, dlp, absdlp, kl, tail, dnll, exact, first, text_dnll;
    double nll_b, nll_c, text_nll_b, text_nll_c;
    long lp_known, positions, unobservable, text_tokens, n_ok, n_windows;
    int rank[DRIFT_RANKS];
} set_vals;

static void set_alloc(set_vals *s, size_t n, size_t nw) {
    memset(s, 0, sizeof *s);
    vec *vs[] = { &s->agree, &s->contain, &s->dlp, &s->absdlp, &s->kl, &s->tail, &s->dnll, &s->exact, &s->first };
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++) vs[i]->v = calloc(n ? n : 1, sizeof(double));
    s->text_dnll.v = calloc(nw ? nw : 1, sizeof(double));
}

static void set_free(set_vals *s) {
    vec *vs[] = { &s->agree, &s->contain, &s->dlp, &s->absdlp, &s->kl, &s->tail, &s->dnll, &s->exact, &s->first, &s->text_dnll };
    for (size_t i = 0; i < sizeof vs / sizeof *vs; i++) free(vs[i]->v);
}

static bool set_ok(const set_vals *s) {
    return s->agree.v && s->contain.v && s->dlp.v && s->absdlp.v && s->kl.v && s->tail.v && s->dnll.v && s->exact.v &&
           s->first.v && s->text_dnll.v;
}

static void set_add_prompt(set_vals *s, const drift_prompt *p) {
    if (p->ok && p->positions > 0) {
        double n = p->positions;
        s->n_ok++;
        s->positions += p->positions;
        s->unobservable += p->unobservable;
        vec_add(&s->agree, p->agree / n);
        vec_add(&s->contain, p->in_topk / n);
        vec_add(&s->kl, p->sum_kl / n);
        vec_add(&s->tail, p->sum_tail / n);
        if (p->lp_known > 0) {
            vec_add(&s->dlp, p->sum_dlp / p->lp_known);
            vec_add(&s->absdlp, p->sum_abs_dlp / p->lp_known);
            vec_add(&s->dnll, (p->nll_c - p->nll_b) / p->lp_known);
            s->nll_b += p->nll_b;
            s->nll_c += p->nll_c;
            s->lp_known += p->lp_known;
        }
        for (int r = 0; r < DRIFT_RANKS; r++) s->rank[r] += p->rank_hist[r];
    }
    if (p->free_ok) {
        vec_add(&s->exact, p->first_diff == p->free_len ? 1.0 : 0.0);
        vec_add(&s->first, p->first_diff);
    }
}

static void set_add_window(set_vals *s, const drift_window *w) {
    if (!w->ok) return;
    vec_add(&s->text_dnll, (w->nll_c - w->nll_b) / w->tokens);
    s->text_nll_b += w->nll_b;
    s->text_nll_c += w->nll_c;
    s->text_tokens += w->tokens;
    s->n_windows++;
}

static void put_mean(json_t *o, const char *name, vec *v, const drift_opts *opt, uint64_t seed) {
    double m, lo, hi;
    mean_ci(v, opt, seed, &m, &lo, &hi);
    char ci[64];
    snprintf(ci, sizeof ci, "%s_ci", name);
    json_object_set_new(o, name, jnum(m));
    json_object_set_new(o, ci, jci(lo, hi));
}

/* ΔPPL = exp(mean per-token NLL difference) - 1; its interval maps through exp (monotone). */
static void put_dppl(json_t *o, const char *name, vec *v, const drift_opts *opt, uint64_t seed) {
    double m, lo, hi;
    mean_ci(v, opt, seed, &m, &lo, &hi);
    char ci[64];
    snprintf(ci, sizeof ci, "%s_ci", name);
    json_object_set_new(o, name, jnum(expm1(m)));
    json_object_set_new(o, ci, jci(expm1(lo), expm1(hi)));
}

static json_t *set_json(set_vals *s, const drift_opts *o, int k, uint64_t seed) {
    json_t *j = json_object();
    json_object_set_new(j, "prompts", json_integer(s->n_ok));
    json_object_set_new(j, "positions", json_integer(s->positions));
    /* generated tokens of kept prompts the server gave no logprobs for (not compared) */
    json_object_set_new(j, "unobservable_positions", json_integer(s->unobservable));
    put_mean(j, "top1_agreement", &s->agree, o, seed);
    put_mean(j, "topk_containment", &s->contain, o, seed + 1);
    put_mean(j, "mean_logprob_delta", &s->dlp, o, seed + 2);
    json_object_set_new(j, "mean_abs_logprob_delta", jnum(vec_mean(&s->absdlp)));
    json_object_set_new(j, "logprob_coverage", jnum(s->positions ? (double)s->lp_known / (double)s->positions : NAN));
    put_mean(j, "kl", &s->kl, o, seed + 3);
    json_object_set_new(j, "kl_tail_mass", jnum(vec_mean(&s->tail)));
    json_t *ranks = json_array();
    for (int r = 0; r <= k && r < DRIFT_RANKS; r++) json_array_append_new(ranks, json_integer(s->rank[r]));
    json_object_set_new(j, "rank_counts", ranks);
    json_object_set_new(j, "ppl_baseline", jnum(s->lp_known ? exp(s->nll_b / (double)s->lp_known) : NAN));
    json_object_set_new(j, "ppl_candidate", jnum(s->lp_known ? exp(s->nll_c / (double)s->lp_known) : NAN));
    put_dppl(j, "continuation_delta_ppl", &s->dnll, o, seed + 4);
    json_object_set_new(j, "text_windows", json_integer(s->n_windows));
    json_object_set_new(j, "text_tokens", json_integer(s->text_tokens));
    json_object_set_new(j, "text_ppl_baseline", jnum(s->text_tokens ? exp(s->text_nll_b / (double)s->text_tokens) : NAN));
    json_object_set_new(j, "text_ppl_candidate", jnum(s->text_tokens ? exp(s->text_nll_c / (double)s->text_tokens) : NAN));
    put_dppl(j, "text_delta_ppl", &s->text_dnll, o, seed + 5);
    bool text = s->n_windows > 0;
    json_object_set_new(j, "delta_ppl", json_deep_copy(json_object_get(j, text ? "text_delta_ppl" : "continuation_delta_ppl")));
    json_object_set_new(j, "delta_ppl_ci", json_deep_copy(json_object_get(j, text ? "text_delta_ppl_ci" : "continuation_delta_ppl_ci")));
    json_object_set_new(j, "delta_ppl_source", json_string(text ? "text" : "continuation"));
    put_mean(j, "exact_match_rate", &s->exact, o, seed + 6);
    json_object_set_new(j, "mean_first_divergence", jnum(vec_mean(&s->first)));
    return j;
}

/* Candidate against floor for one per-prompt metric: the bootstrap interval of the difference of
 * means and the Mann-Whitney p-value. Returns whether it is indistinguishable (the interval holds
 * zero, or the difference is under min_effect in the metric's reported unit). */
static bool vs_floor(json_t *out, const char *name, vec *cand, vec *floor, const drift_opts *o, uint64_t seed,
                     bool ppl, double min_effect) {
    if (!cand->n || !floor->n) return true;
    qsort(cand->v, cand->n, sizeof(double), cmp_d);
    qsort(floor->v, floor->n, sizeof(double), cmp_d);
    double lo = NAN, hi = NAN, d = vec_mean(cand) - vec_mean(floor);
    infer_bootstrap_diff(INFER_MEAN, 0, floor->v, floor->n, cand->v, cand->n, o->resamples, o->confidence, seed, &lo, &hi);
    double p = infer_mann_whitney_p(floor->v, floor->n, cand->v, cand->n, NULL);
    /* ΔPPL metrics compare per-token NLL differences: reported as exp(d) - 1 */
    double shown = ppl ? expm1(d) : d, slo = ppl ? expm1(lo) : lo, shi = ppl ? expm1(hi) : hi;
    bool holds_zero = !(lo > 0) && !(hi < 0);
    bool negligible = fabs(shown) < min_effect;
    json_object_set_new(out, name, json_pack("{s:o,s:o,s:o,s:b}", "difference", jnum(shown), "difference_ci", jci(slo, shi),
                                             "p_mann_whitney", jnum(p), "indistinguishable", holds_zero || negligible));
    return holds_zero || negligible;
}

static json_t *bucket_json(const drift_bucket *b, const drift_opts *o, uint64_t seed) {
    json_t *j = json_object();
    json_object_set_new(j, "context", json_integer(b->context));
    json_object_set_new(j, "complete", json_boolean(b->done));
    json_object_set_new(j, "prompts_planned", json_integer((json_int_t)b->n_prompts));
    json_object_set_new(j, "prompt_tokens_mean", jnum(b->done ? b->prompt_len_mean : NAN));
    json_object_set_new(j, "prompt_tokens_min", b->done ? json_integer(b->prompt_len_min) : json_null());
    json_object_set_new(j, "prompt_tokens_max", b->done ? json_integer(b->prompt_len_max) : json_null());
    set_vals c, f;
    set_alloc(&c, b->n_prompts, b->n_windows);
    set_alloc(&f, b->n_prompts, b->n_windows);
    if (!set_ok(&c) || !set_ok(&f)) { set_free(&c); set_free(&f); json_decref(j); return NULL; }
    for (size_t i = 0; b->done && i < b->n_prompts; i++) {
        set_add_prompt(&c, &b->cand[i]);
        if (b->have_floor) set_add_prompt(&f, &b->floor[i]);
    }
    for (size_t i = 0; b->done && i < b->n_windows; i++) {
        set_add_window(&c, &b->text_cand[i]);
        if (b->have_floor) set_add_window(&f, &b->text_floor[i]);
    }
    json_t *cj = set_json(&c, o, o->top_k, seed);
    json_object_update(j, cj);   /* the candidate's metrics at the top level */
    json_decref(cj);
    json_t *fl = b->have_floor && b->done ? set_json(&f, o, o->top_k, seed + 100) : json_null();
    json_object_set_new(j, "floor", fl);
    if (b->have_floor && b->done) {
        json_t *vs = json_object();
        bool same = vs_floor(vs, "top1_agreement", &c.agree, &f.agree, o, seed + 200, false, o->min_effect_agreement);
        same = vs_floor(vs, "continuation_delta_ppl", &c.dnll, &f.dnll, o, seed + 201, true, o->min_effect_ppl) && same;
        if (c.text_dnll.n && f.text_dnll.n)
            same = vs_floor(vs, "text_delta_ppl", &c.text_dnll, &f.text_dnll, o, seed + 202, true, o->min_effect_ppl) && same;
        vs_floor(vs, "kl", &c.kl, &f.kl, o, seed + 203, false, 0);
        json_object_set_new(j, "vs_floor", vs);
        json_object_set_new(j, "verdict", json_string(same ? "indistinguishable from the noise floor" : "beyond the noise floor"));
    } else {
        json_object_set_new(j, "vs_floor", json_null());
        json_object_set_new(j, "verdict", json_string(b->done ? "no noise floor measured" : "not measured (interrupted)"));
    }
    set_free(&c);
    set_free(&f);
    return j;
}

static json_t *side_json(const char *url, const char *model, drift_score_method m) {
    return json_pack("{s:o,s:s?,s:s}", "url", redact_json(url), "model", model, "score_method", drift_score_method_name(m));
}

json_t *drift_doc_build(const drift_run *r, const drift_opts *o) {
    json_t *d = json_object();
    json_object_set_new(d, "schema", json_string(DRIFT_SCHEMA));
    json_object_set_new(d, "tool", json_pack("{s:s,s:s}", "name", "dsperf", "version", DSPERF_VERSION));
    json_object_set_new(d, "command", redact_json(o->command_line));
    json_object_set_new(d, "started_unix", json_integer(r->started_unix));
    json_object_set_new(d, "elapsed_s", json_real(r->elapsed_s));
    json_object_set_new(d, "partial", json_boolean(r->partial));
    json_object_set_new(d, "baseline", side_json(o->baseline_url, o->baseline_model, r->method_b));
    json_object_set_new(d, "candidate", side_json(o->candidate_url, o->candidate_model, r->method_c));
    json_object_set_new(d, "same_deployment", json_boolean(r->same_deployment));
    /* token_ids: prompt and continuation went as token ids (nothing re-tokenized); text: as text,
     * each scored position checked to be the baseline's token */
    json_object_set_new(d, "prompt_format", json_string(r->token_ids ? "token_ids" : "text"));
    json_t *ctxs = json_array();
    for (int i = 0; i < o->n_contexts; i++) json_array_append_new(ctxs, json_integer(o->contexts[i]));
    json_object_set_new(d, "config", json_pack("{s:o,s:i,s:i,s:i,s:s,s:s,s:s?,s:s?,s:I,s:i,s:s?,s:I,s:b,s:f,s:i}",
        "contexts", ctxs, "prompts_per_context", o->prompts, "gen_tokens", o->gen_tokens, "top_k", o->top_k,
        "length_unit", r->length_unit, "api", o->chat ? "chat" : "completions", "dataset", o->dataset,
        "text", o->text_path, "text_units", (json_int_t)r->text_units, "max_windows", o->max_windows,
        "tokenizer", o->tokenizer_path, "seed", (json_int_t)o->seed, "floor", o->floor, "confidence", o->confidence,
        "resamples", o->resamples));
    json_object_set_new(d, "kl_estimate",
        json_string("kl is a lower bound: the vocabulary is merged into the tokens both top-k lists name and one rest cell, "
                    "and merging never increases KL; the true KL exceeds it by kl_tail_mass times the KL within the rest"));
    json_t *bs = json_array();
    for (int i = 0; i < r->n_b; i++) {
        json_t *bj = bucket_json(&r->b[i], o, o->seed + 7919ULL * (uint64_t)i);
        if (bj) json_array_append_new(bs, bj);
    }
    json_object_set_new(d, "buckets", bs);
    json_object_set_new(d, "requests", json_integer(r->requests));
    json_object_set_new(d, "failed_requests", json_integer(r->failed_requests));
    json_t *w = json_deep_copy(r->warnings);
    redact_json_tree(w);   /* a server's error message may echo a key */
    json_object_set_new(d, "warnings", w);
    return d;
}

json_t *drift_load(const char *path, char *err, size_t errlen) {
    static const char *const schemas[] = { "dsperf.drift/", NULL };
    return results_load_doc(path, schemas, "drift", err, errlen);
}
