/* server — the HTTP/SSE layer of `dsperf serve`: an OpenAI-compatible server (libevent evhttp,
 * one or more event-loop threads, each with its own engine) that streams tokens when an engine
 * (engine/engine.h) says they are due, injects seeded faults, and exposes vLLM-named Prometheus metrics computed from engine events.
 * It knows nothing about how an engine decides timing, so any engine plugs in unchanged. */
#ifndef DSP_SERVER_H
#define DSP_SERVER_H
#include "engine/engine.h"
#include "engine/fixed_lm.h"
#include <stdint.h>
#include <stdbool.h>
#include <stddef.h>

enum { SERVER_ERROR_STYLE_LLAMACPP = 0, SERVER_ERROR_STYLE_OPENAI = 1 };
/* How completions logprobs are written: OpenAI/vLLM legacy arrays, or llama.cpp's chat-style content. */
enum { SERVER_LOGPROBS_OPENAI = 0, SERVER_LOGPROBS_LLAMACPP = 1 };

typedef struct {
    const char *host;            /* "127.0.0.1" (loopback by default; "::1", "0.0.0.0" also) */
    int port;                    /* 0 = pick a free port */
    int backlog;                 /* listen backlog (65535) */
    const char *model;           /* served model name ("deepseek-ai/DeepSeek-V2-Lite") */
    double speedup;              /* engine time runs this many times faster than wall time (1) */
    int64_t duration_ns;         /* stop after this long; 0 = run until stopped */
    uint64_t exit_after;         /* stop once this many responses have completed (a server that dies
                                    mid-run, on a count rather than a clock); 0 = never */
    int32_t default_max_tokens;  /* when the request has no max_tokens (256) */
    uint64_t seed;               /* fault injection rng (1) */
    double fail_rate;            /* HTTP 500 */
    double status_429_rate;      /* HTTP 429 */
    double drop_rate;            /* close the connection mid-stream, no [DONE] */
    double stall_rate;           /* one long gap mid-stream */
    int64_t stall_ns;            /* length of that gap (2 s) */
    double error_event_rate;     /* an error event mid-stream, then the end */
    int error_style;             /* SERVER_ERROR_STYLE_* */
    int64_t max_body_bytes;      /* larger request bodies are answered 413 unread (4 MiB) */
    int threads;                 /* event loops, each with its own engine and SO_REUSEPORT socket (1) */
    bool handle_signals;         /* stop cleanly on SIGINT/SIGTERM (for the command, not threads) */
    const char *models_meta_json;/* a JSON object: GET /v1/models data[0].meta (what the engine is), or NULL */
    double gpu_memory_utilization;   /* the engine's, for vllm:cache_config_info (0: not said) */
    int64_t num_gpu_blocks_override; /* the engine's KV blocks set by a setting, for cache_config_info (0: none) */
    const char *log_prompts;     /* write every accepted request to this JSONL file (NULL: none) */
    int32_t prefix_block_tokens; /* > 0: give the engine each prompt's chained block hashes, blocks of
                                  * this many tokens (its KV block size), for its prefix cache */
    int32_t kv_block_tokens;     /* the engine's KV block size when it has one (0: none), for
                                  * vllm:cache_config_info on /metrics */
    fixed_lm lm;                 /* the token model for logprobs requests (engine/fixed_lm.h) */
    int logprobs_style;          /* SERVER_LOGPROBS_* */
    int32_t reasoning_min_tokens, reasoning_max_tokens; /* > 0: a chat answer's first R words (R uniform
                                  * in [min, max], at most max_tokens) stream as reasoning_content */
    bool per_request_metrics;    /* vLLM's --enable-per-request-metrics: a "metrics" object on the
                                  * final usage chunk (queue, TTFT from scheduling, generation time, and
                                  * speculative_decoding when a step gave more than one token) */
} server_params;

typedef struct server server;

void server_default_params(server_params *p);

/* Binds and listens (raising RLIMIT_NOFILE to its hard limit first). engines[i] serves loop i
 * (p->threads of them; the kernel spreads connections over the loops, so each engine sees its
 * share of the streams and /metrics shows their sum). The engines stay owned by the caller and
 * must outlive the server. Returns 0, or -1 with err filled. */
int server_start(server **out, const server_params *p, engine *const *engines, char *err, size_t errlen);

/* The bound port (useful with port 0). */
int server_port(const server *s);

/* Runs loop 0 in the calling thread (the others on threads of their own) until server_stop(),
 * the duration, or a signal; returns when every loop has stopped. Returns 0. */
int server_run(server *s);

/* Asks a running server to stop; safe from another thread or a signal handler. */
void server_stop(server *s);

/* Closes every connection (cancelling their requests in the engine) and frees the server. */
void server_free(server *s);
#endif
