/* drift_int — what the drift module's files share: the parsed shape of a logprobs response
 * (drift_wire.c), the comparison of one position (drift_score.c), the per-prompt and per-window
 * tallies the runner fills (drift_run.c) and the document is computed from (drift_doc.c), and the
 * HTTP batch runner (drift_http.c). Not for other modules: they use drift.h. */
#ifndef DSP_DRIFT_INT_H
#define DSP_DRIFT_INT_H
#include "drift/drift.h"
#include "common/stop.h"
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* ---- wire (drift_wire.c) ---- */

/* A token as a server names it: its bytes (from "bytes" when given, else the token string), its id
 * when the server says (llama.cpp "id", vLLM prompt_logprobs keys; -1 otherwise) and its logprob
 * (NAN when the server gave none, as for the first prompt token). */
typedef struct {
    char *text;
    size_t len;
    int64_t id;
    double lp;
} drift_tok;

/* One position: the token there and the server's most likely tokens, most likely first. */
typedef struct {
    drift_tok tok;
    drift_tok *top;
    int n_top;
    int rank;              /* the token's rank in the vocabulary when the server says (vLLM), else 0 */
} drift_pos;

typedef struct {
    drift_pos *gen;        /* choices[0].logprobs: generated tokens (with echo, the prompt's first) */
    size_t n_gen;
    drift_pos *prompt;     /* choices[0].prompt_logprobs (vLLM): one per prompt token */
    size_t n_prompt;
    bool have_logprobs;    /* choices[0].logprobs was an object with entries */
    bool have_prompt_logprobs;
    int64_t prompt_tokens, completion_tokens;   /* usage; -1 when absent */
    char *text;            /* choices[0].text or message.content */
    size_t text_len;
    int64_t *ids;          /* llama.cpp's native /completion with return_tokens: every generated id */
    size_t n_ids;
} drift_resp;

/* Parses a completions or chat response body: legacy logprobs (tokens / token_logprobs /
 * top_logprobs), chat-style logprobs.content (also what llama.cpp writes on /v1/completions) and
 * vLLM's prompt_logprobs. 0, or -1 with a one-line err (not JSON, no choices, an error object). */
int drift_resp_parse(const char *body, size_t len, drift_resp *out, char *err, size_t errlen);
void drift_resp_free(drift_resp *r);
/* Whether two tokens are the same: by id when both have one, else by bytes. */
bool drift_tok_same(const drift_tok *a, const drift_tok *b);

/* Request bodies (malloc'd JSON; NULL on out-of-memory), all greedy (temperature 0) with top_k
 * logprobs per position. */
typedef struct {
    bool chat;             /* /v1/chat/completions: the prompt is one user message */
    const char *model;
    int top_k;             /* top logprobs per position */
    bool ignore_eos;
} drift_req_opts;
char *drift_body_generate(const drift_req_opts *o, const char *prompt, int max_tokens);
/* Scoring the prompt: echo (OpenAI legacy) or vLLM prompt_logprobs, one generated token. */
char *drift_body_score(const drift_req_opts *o, drift_score_method m, const char *prompt);
/* One stepwise position: the prompt and the continuation so far, one generated token (chat: the
 * continuation is the assistant's message, continued). */
char *drift_body_step(const drift_req_opts *o, const char *prompt, const char *continuation);

/* The same with the prompt as token ids (completions only: "prompt": [id, ...], which llama.cpp and
 * vLLM accept; llama.cpp adds no BOS to an id prompt, so ids carry their own). Stepwise scoring of
 * a position is a one-token generation from the prompt's ids and the continuation's ids before it. */
char *drift_body_generate_ids(const drift_req_opts *o, const int32_t *ids, size_t n, int max_tokens);
char *drift_body_score_ids(const drift_req_opts *o, drift_score_method m, const int32_t *ids, size_t n);
/* llama.cpp's native /completion, greedy, with n_probs and return_tokens: the response names every
 * generated id ("tokens") beside the logprobs entries, which skip a token after which the text
 * ends inside a UTF-8 character (the OpenAI endpoints skip it too, and say nothing of its id). */
char *drift_body_native_ids(const drift_req_opts *o, const int32_t *ids, size_t n, int max_tokens);
/* Native responses: makes gen[] one entry per generated id, in order, a skipped token becoming an
 * entry with its id and no top list (n_top 0: unobservable, never compared). 0, or -1 when the
 * entries are not a subsequence of the ids. */
int drift_resp_align_ids(drift_resp *r);

/* ---- one position compared (drift_score.c) ---- */

typedef struct {
    bool agree;            /* the candidate's most likely token is the baseline's token */
    int rank;              /* of the baseline's token among the candidate's (1-based); 0: beyond its top-k */
    bool lp_known;         /* the candidate's logprob of the baseline's token is known */
    double lp_b, lp_c;     /* logprob of the baseline's token on each side */
    double kl;             /* KL(baseline || candidate) over the shared top tokens and the rest (a lower bound) */
    double tail;           /* baseline probability outside the shared top tokens */
} drift_cmp;

/* b: the baseline's position (its token and top list). c_top: the candidate's top list at the same
 * prefix; c_lp: the candidate's logprob of b's token when known exactly (echo / prompt_logprobs),
 * else NAN (it is then looked up in c_top); c_rank: the server's rank of the token, 0 if unknown. */
void drift_compare_pos(const drift_pos *b, const drift_tok *c_top, int c_n, double c_lp, int c_rank, drift_cmp *out);

#define DRIFT_RANKS 33     /* rank histogram: ranks 1..32, and [0] counts "beyond the top-k" */

/* One prompt's tallies, teacher-forced and free-running. */
typedef struct {
    bool ok;               /* every request answered and the continuation aligned */
    char why[96];          /* when not ok */
    int positions;
    int agree, in_topk, lp_known;
    double sum_dlp, sum_abs_dlp;          /* over lp_known positions: lp_c - lp_b */
    double sum_kl, sum_tail;
    double nll_b, nll_c;                  /* over lp_known positions */
    int rank_hist[DRIFT_RANKS];
    bool not_greedy;                      /* the baseline's token was not its own top-1 somewhere */
    int unobservable;                     /* positions the server gave no logprobs for (llama.cpp: a
                                           * token ending inside a UTF-8 character), not compared */
    /* free running: both sides generated greedily from the prompt */
    bool free_ok;
    int free_len;                         /* the longer output's length */
    int first_diff;                       /* first differing position; free_len when identical */
} drift_prompt;

/* One window of the reference text scored on both sides. */
typedef struct {
    bool ok;
    char why[96];
    int tokens;                           /* positions with a logprob on both sides */
    double nll_b, nll_c;
} drift_window;

/* The measurements of one context bucket: the candidate's against the baseline, and the floor
 * (the baseline against itself) when measured. */
typedef struct {
    int64_t context;                      /* nominal context length (tokens, or words without a tokenizer) */
    double prompt_len_mean;               /* measured prompt length, as the server counts it */
    int32_t prompt_len_min, prompt_len_max;
    drift_prompt *cand, *floor;
    size_t n_prompts;
    drift_window *text_cand, *text_floor;
    size_t n_windows;
    bool have_floor;
    bool done;                            /* every request of the bucket ran (false: interrupted) */
} drift_bucket;

/* A run: its buckets and what was learned on the way (drift_run.c fills it, drift_doc.c reads it). */
struct drift_run {
    drift_bucket *b;
    int n_b;
    drift_score_method method_b, method_c;
    bool token_ids;               /* prompts went as token ids on both sides (else as text) */
    bool same_deployment;         /* candidate == baseline: the run is itself the noise floor */
    bool partial;
    const char *length_unit;
    json_t *warnings;             /* strings */
    int64_t text_units;           /* reference text length (tokens or words); -1 none */
    int64_t started_unix;
    double elapsed_s;
    long requests, failed_requests;
};

/* ---- HTTP batch (drift_http.c) ---- */

typedef struct {
    const char *url;       /* full URL */
    char *body;            /* owned */
    long status;           /* 0: no response (err says why) */
    char *resp;            /* owned, NUL-terminated */
    size_t resp_len;
    char err[200];
} drift_http_req;

typedef struct {
    int concurrency;
    int64_t timeout_ns;
    const char *const *headers;
    const char *api_key;
    bool insecure;
} drift_http_opts;

/* Runs the requests, at most concurrency at once. Returns 0, or -1 when *stop was set (the
 * unfinished ones have status 0 and err "interrupted"). */
int drift_http_run(drift_http_req *reqs, size_t n, const drift_http_opts *o, ds_stop_flag *stop);
void drift_http_req_free(drift_http_req *r);
#endif
