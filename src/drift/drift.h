/* drift — what does a deployment change (KV-cache dtype, weight dtype, engine version, TP) cost in
 * accuracy? Two deployments of one model, a baseline and a candidate, are compared token by token:
 *   teacher-forced  the baseline decodes greedily with its top-k logprobs; the candidate scores the
 *                   same text (prompt + the baseline's tokens), so position i of both sides sees the
 *                   same prefix: top-1 agreement, the logprob difference of the baseline's token,
 *                   KL(baseline || candidate) from the two top-k lists (a lower bound; the baseline
 *                   mass outside them is reported beside it), the rank of the baseline's token
 *   free-running    both decode greedily: the first position where they differ, exact matches
 *   perplexity      of the continuation (always) and of a reference text (--text), and ΔPPL
 * by context length (prompts of exact token lengths in buckets), each with a bootstrap interval
 * over prompts (metrics/infer.h), against a noise floor: the baseline scored against itself.
 * The result is a dsperf.drift/1 document; gate rules ("top1_agreement>=0.99,delta_ppl<=+2%") give
 * a pipeline its exit code; diagnose and tune show a KV-dtype recommendation's accuracy cost
 * from a saved document (drift_kv_note). */
#ifndef DSP_DRIFT_H
#define DSP_DRIFT_H
#include "tokenizer/tokenizer.h"
#include "common/stop.h"
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#define DRIFT_SCHEMA "dsperf.drift/1"
#define DRIFT_MAX_CONTEXTS 16
#define DRIFT_MAX_TOP_K 32

/* How a side scores a given text: OpenAI legacy echo with logprobs (vLLM, dsperf serve), vLLM's
 * prompt_logprobs, or one request per position (prompt + the tokens before it, one generated token
 * with its top-k: any server with generation logprobs, e.g. llama.cpp, which refuses echo). */
typedef enum { DRIFT_SCORE_AUTO, DRIFT_SCORE_ECHO, DRIFT_SCORE_PROMPT_LOGPROBS, DRIFT_SCORE_STEPWISE } drift_score_method;
const char *drift_score_method_name(drift_score_method m);

typedef struct {
    const char *baseline_url, *candidate_url;
    const char *baseline_model, *candidate_model;  /* resolved names (sent as "model") */
    bool chat;                     /* /v1/chat/completions (stepwise scoring) instead of /v1/completions */
    int64_t contexts[DRIFT_MAX_CONTEXTS];          /* prompt lengths, ascending */
    int n_contexts;
    int prompts;                   /* per context (8) */
    int gen_tokens;                /* continuation length per prompt (32) */
    int top_k;                     /* top logprobs per position (5) */
    const char *dataset;           /* NULL: random real-word prompts of exact lengths; else a dataset spec
                                    * whose prompts go to the smallest context >= their length */
    const char *text_path;         /* reference text for perplexity, or NULL */
    int max_windows;               /* text windows per context (4) */
    const tokenizer *tok;          /* exact token lengths; NULL: words (dsperf serve counts words) */
    const char *tokenizer_path;    /* for the document */
    uint64_t seed;                 /* prompts (1) */
    drift_score_method score;      /* AUTO probes each side: echo, then prompt_logprobs, then stepwise */
    bool floor;                    /* also score the baseline against itself (true) */
    int concurrency;               /* requests in flight, both sides together (4) */
    int64_t timeout_ns;            /* per request (600 s) */
    const char *const *headers;    /* extra "Name: value" headers, NULL-terminated */
    const char *api_key;           /* Authorization: Bearer (NULL: none) */
    bool insecure;
    double confidence;             /* of the intervals (0.95) */
    int resamples;                 /* bootstrap rounds (2000) */
    double min_effect_agreement;   /* agreement changes under this are negligible against the floor (0.001) */
    double min_effect_ppl;         /* ΔPPL changes under this fraction are negligible (0.001) */
    const char *command_line;      /* for the document */
    const char *positions_path;    /* --save-positions: one JSON line per compared position, or NULL */
} drift_opts;

void drift_default_opts(drift_opts *o);

/* Parses "1k,4k,16k,64k" (k = 1024) into o->contexts. 0, or -1 with err. */
int drift_parse_contexts(const char *spec, drift_opts *o, char *err, size_t errlen);

typedef struct drift_run drift_run;

/* Runs the comparison (requests to both URLs, per context bucket). Returns 0 with *out; 1 when
 * interrupted by *stop (*out holds the finished buckets: the document is then partial); -1 with a
 * one-line err when it cannot start (a side has no logprobs, no way to score, a bad dataset). */
int drift_run_all(const drift_opts *o, drift_run **out, ds_stop_flag *stop, char *err, size_t errlen);
void drift_run_free(drift_run *r);

/* The dsperf.drift/1 document of a run (the history database records it as it is). */
json_t *drift_doc_build(const drift_run *r, const drift_opts *o);

/* Loads a saved drift document. NULL with err. */
json_t *drift_load(const char *path, char *err, size_t errlen);

/* ---- gate ---- */

typedef struct {
    char metric[48];               /* a bucket metric name (top1_agreement, delta_ppl, kl, ...) */
    int64_t context;               /* the bucket it applies to; 0: every bucket */
    bool at_least;                 /* >= (a floor); else <= (a ceiling) */
    double value;                  /* in the metric's unit; "X%" is X/100 */
    char text[96];                 /* as written */
} drift_rule;

/* Parses "top1_agreement>=0.99,delta_ppl<=+2%,kl@16k<=0.01" (":>=" / ":<=" as in compare also).
 * Appends to rules[*n..max). 0, or -1 with a one-line err naming the bad rule. */
int drift_parse_rules(const char *spec, drift_rule *rules, int max, int *n, char *err, size_t errlen);
/* Evaluates the rules on doc's buckets and sets doc.gate {rules, passed}. A rule naming a metric no
 * bucket has, or a context no bucket has, is -1 with err (a usage error); a partial document fails. */
int drift_gate(json_t *doc, const drift_rule *rules, int n, char *err, size_t errlen);

/* The terminal table (and the gate when evaluated). */
void drift_print(FILE *f, const json_t *doc);

/* ---- for diagnose and tune ---- */

/* One sentence on what a KV-cache dtype change costs in accuracy, from a drift document (NULL: the
 * recommendation is untested for accuracy, and the sentence says how to test it). */
void drift_kv_note(const json_t *drift_doc, char *buf, size_t len);
/* Adds "accuracy" (drift_kv_note, drift_doc may be NULL) to every kv_cache_dtype knob of a
 * diagnosis's findings, and appends it to the knob's "effect". */
void drift_annotate_findings(json_t *diagnosis, const json_t *drift_doc);
/* When a tune document's recommendation changes the KV-cache dtype (the grid key a template passes
 * to --kv-cache-dtype / --kv-dtype / --cache-type-k, or one named like it) from the configuration
 * it is compared with, adds "accuracy" to it and appends it to "buys". tune_analyse calls it with
 * the tune document's "drift" (the dsperf.drift/1 result given with tune --drift, or none). */
void drift_annotate_tune(json_t *tune_doc, const json_t *drift_doc);
#endif
