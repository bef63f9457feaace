/* record — what the client measured for one request: every timestamp on the monotonic clock,
 * token counts from both sides, and the failure class. Records are the only input of the
 * statistics; bench (real HTTP) and sim (simulated engine) both produce them. */
#ifndef DSP_RECORD_H
#define DSP_RECORD_H
#include <stdint.h>
#include <stddef.h>

typedef enum {
    REC_OK = 0,
    REC_ERR_CONNECT,    /* could not connect / connection refused or reset before a response */
    REC_ERR_TIMEOUT,    /* --timeout elapsed */
    REC_ERR_HTTP,       /* non-2xx status (http_status says which) */
    REC_ERR_STREAM,     /* an `error:` event or an error object inside the stream */
    REC_ERR_TRUNCATED,  /* the stream ended before [DONE] / finish_reason (dropped connection) */
    REC_ERR_JSON,       /* a data message that is not valid JSON, or a non-SSE/non-JSON body */
    REC_ERR_CANCELLED,  /* ended by dsperf itself, not the server: `cancel` says why. Not a failure */
    REC_OUTCOME_COUNT
} rec_outcome;

/* Stable names used in results JSON ("ok", "connect", "timeout", "http", "stream", "truncated",
 * "invalid_json", "cancelled"). */
const char *rec_outcome_name(rec_outcome o);

/* Why dsperf cancelled a request (outcome REC_ERR_CANCELLED). A request dsperf ended itself says
 * nothing about the server: it is neither a success nor a failure, and it is left out of the
 * error counts, the error-adjusted percentiles and --max-error-rate. */
typedef enum {
    REC_CANCEL_NONE = 0,
    REC_CANCEL_DEADLINE,    /* the run or sweep level ended (--duration + --grace) while it was in flight or queued */
    REC_CANCEL_INTERRUPT,   /* Ctrl-C / SIGTERM, or a monitor stopping */
    REC_CANCEL_EARLY_STOP,  /* the sweep stopped an over-saturated level */
    REC_CANCEL_COUNT
} rec_cancel;

/* Who ended a request and why, one word each: "completed", "server_error" (the outcome names the
 * class), "client_deadline", "interrupt", "early_stop". */
typedef enum { REC_END_COMPLETED = 0, REC_END_SERVER_ERROR, REC_END_DEADLINE, REC_END_INTERRUPT, REC_END_EARLY_STOP,
               REC_END_COUNT } rec_end;
const char *rec_end_name(rec_end e);

typedef struct {
    uint32_t index;            /* position in the load plan */
    uint16_t class_id;         /* request class (tenant); 0 when there is one */
    uint8_t outcome;           /* rec_outcome */
    uint8_t warmup;            /* 1: excluded from statistics */
    uint8_t cancel;            /* rec_cancel: why dsperf ended it (outcome REC_ERR_CANCELLED) */
    int32_t http_status;       /* 0 when no response */
    int64_t sched_ns;          /* when the plan intended to send it */
    int64_t send_ns;           /* just before the request bytes were written */
    int64_t first_ns;          /* first content chunk (0: none) */
    int64_t last_ns;           /* last data message before [DONE] / end (0: none) */
    int64_t end_ns;            /* transfer finished (success or failure) */
    int64_t connect_ns;        /* time opening a new connection (incl. TLS) within the queue; 0 reused */
    int32_t in_tokens;         /* prompt length by the client's counter (-1 unknown) */
    int32_t in_tokens_server;  /* usage.prompt_tokens (-1 not given) */
    int32_t out_tokens_server; /* usage.completion_tokens (-1 not given) */
    int32_t out_tokens_client; /* client's count over the generated text (-1 unknown) */
    int32_t max_tokens;        /* what was asked for */
    /* prefix cache: prompt tokens the server says it served from its cache
     * (usage.prompt_tokens_details.cached_tokens, DeepSeek's usage.prompt_cache_hit_tokens, or
     * llama.cpp's usage.prompt_tokens - timings.prompt_n); -1 not said */
    int32_t cached_tokens;
    int32_t prompt_eval_server;/* llama.cpp timings.prompt_n: prompt tokens it evaluated (-1 not given) */
    int32_t cacheable_tokens;  /* the workload's bound: tokens a prefix cache of unbounded size could
                                * have served, given every request before this one (-1 unknown) */
    /* reasoning models (R1, V3.x thinking): the stream's reasoning phase is the content chunks
     * before the first chunk with answer text (delta.content), when the first chunk carried
     * reasoning text (delta.reasoning_content / delta.reasoning) */
    uint32_t reasoning_chunks; /* chunks of the reasoning phase that carried reasoning text (0: no phase) */
    int64_t answer_ns;         /* a_i: arrival of the first answer chunk after a reasoning phase (0: none) */
    int32_t reasoning_tokens_client; /* client's count over the reasoning text (-1: no reasoning text) */
    int32_t reasoning_tokens_server; /* usage.completion_tokens_details.reasoning_tokens (-1 not given) */
    /* the server's own timing of the request (llama.cpp's timings in its last chunk; -1 not given) */
    double server_prompt_ms;   /* timings.prompt_ms: prompt evaluation (prefill) */
    double server_predicted_ms;/* timings.predicted_ms: generation after the first token */
    int32_t server_predicted_n;/* timings.predicted_n: tokens generated */
    /* vLLM's per-request `metrics` object (--enable-per-request-metrics) and SGLang's meta_info,
     * where the server gives them (-1 not given) */
    double server_queue_ms;    /* vLLM metrics.queue_time_ms: waiting in its scheduler queue */
    double server_ttft_ms;     /* vLLM metrics.time_to_first_token_ms: from scheduling to the first token */
    double server_decode_ms;   /* vLLM metrics.generation_time_ms: first to last output token */
    double server_e2e_ms;      /* SGLang meta_info.e2e_latency (s, here ms): its whole handling of the request */
    /* speculative decoding / MTP as the server counted it (vLLM metrics.speculative_decoding with
     * --per-request-spec-decode-metrics; SGLang meta_info; -1 not given) */
    int32_t spec_steps_server;     /* verification steps: vLLM num_spec_steps, SGLang spec_verify_ct */
    int32_t spec_accepted_server;  /* accepted draft tokens: vLLM num_accepted_draft_tokens */
    int32_t spec_drafted_server;   /* proposed draft tokens: vLLM num_draft_tokens */
    double spec_accept_len_server; /* tokens per step incl. the bonus token: vLLM mean_acceptance_length,
                                    * SGLang spec_accept_length */
    uint32_t session;          /* multi-turn: the conversation's id + 1 (0: not part of one) */
    uint16_t turn;             /* ... and its turn, from 0 */
    uint32_t n_chunks;         /* content-carrying SSE messages */
    uint32_t chunk_cap;        /* allocated length of the chunk arrays */
    int64_t *chunk_ns;         /* arrival time of each content chunk [n_chunks] */
    uint16_t *chunk_tokens;    /* tokens in each chunk by the client's counter [n_chunks], or NULL (1 each) */
    char *error;               /* first error message for failures (owned), or NULL */
    char *text;                /* the generated text, when the client was asked to keep it (a
                                * multi-turn session's next turn carries it); owned, or NULL */
} record;

/* Output tokens: the server's usage when given, else the client's count, else the chunk count. */
int32_t record_out_tokens(const record *r);
/* Who ended r and why (a cancelled record without a reason counts as the client's deadline). */
rec_end record_end(const record *r);
/* A failure the server is answerable for: any outcome but ok and cancelled. */
static inline int record_failed(const record *r) { return r->outcome != 0 && r->outcome != REC_ERR_CANCELLED; }

/* A growable array of records that owns their chunk arrays and error strings. */
typedef struct {
    record *v;
    size_t n, cap;
} recset;

void recset_init(recset *s);
record *recset_add(recset *s);           /* zeroed record with -1 token fields; NULL on OOM */
void recset_free(recset *s);
/* Marks every cancelled record of s[from..] that has no reason yet with `why` and a message
 * saying so ("cancelled by dsperf: ..."), replacing the client's generic one. */
void recset_mark_cancelled(recset *s, size_t from, rec_cancel why);
/* Appends one chunk arrival to r (grows its arrays). tokens may be 0 for unknown → counted as 1. */
int record_add_chunk(record *r, int64_t t_ns, unsigned tokens);
/* Moves the last chunk to t_ns and counts `tokens` more in it (a coarse recording that keeps the
 * first and the newest token's times and the count, not the gaps between). 0, or -1 when there is
 * no chunk yet or its count would overflow (add a chunk instead). */
int record_extend_last_chunk(record *r, int64_t t_ns, unsigned tokens);
void record_free(record *r);
/* Makes r blank again, as recset_add returns it, for the next request (a long-running monitor
 * recycles a few records instead of growing a recset): its chunk-time array is kept, empty, so
 * a recycled record measures without allocating; the per-chunk token counts and the error text
 * are freed. */
void record_reset(record *r);
#endif
