/* server_metrics — the counters and histograms behind `dsperf serve`'s /metrics, with vLLM's
 * names and bucket bounds, rendered in the Prometheus text format. The server fills them from
 * engine events, so they mean the same thing whichever engine runs. Internal to src/server. */
#ifndef DSP_SERVER_METRICS_H
#define DSP_SERVER_METRICS_H
#include "engine/engine.h"
#include <stdint.h>
#include <event2/buffer.h>

typedef struct {
    const double *bounds;     /* upper bounds, ascending (le) */
    int n_bounds;
    uint64_t counts[32];      /* per bucket (not cumulative); [n_bounds] is +Inf */
    double sum;
    uint64_t count;
} srv_hist;

enum { SRV_FAULT_HTTP_500, SRV_FAULT_HTTP_429, SRV_FAULT_DROP, SRV_FAULT_STALL, SRV_FAULT_ERROR_EVENT, SRV_N_FAULTS };
enum { SRV_FINISH_STOP, SRV_FINISH_LENGTH, SRV_FINISH_ABORT, SRV_N_FINISH };

typedef struct {
    srv_hist ttft_s, itl_s, e2e_s, queue_s, prefill_s, decode_s, iteration_tokens;
    srv_hist lateness_s;                  /* wall time between an emission's due time and its write */
    uint64_t prompt_tokens, generation_tokens;
    /* speculative decoding as vLLM counts it (docs/features/speculative_decoding/acceptance_metrics.md):
     * decode steps and the tokens they gave beyond one each; exposed once a step gave more than one */
    uint64_t spec_steps, spec_accepted;
    uint64_t success[SRV_N_FINISH];       /* by finished_reason */
    uint64_t http_status[600];            /* responses started, by status code */
    uint64_t faults[SRV_N_FAULTS];        /* injected faults by kind */
    uint64_t client_disconnects;          /* clients gone before their request finished */
    int64_t streams_open;                 /* requests with a live connection */
    uint64_t generate_requests;           /* generation requests handled (per loop: the spread) */
} srv_metrics;

void srv_metrics_init(srv_metrics *m);
void srv_hist_observe(srv_hist *h, double v);
/* a += b (both from srv_metrics_init): /metrics of a server with several loops is their sum. */
void srv_metrics_add(srv_metrics *a, const srv_metrics *b);
/* Appends the whole exposition to out. model_label is the model name (escaped here). */
void srv_metrics_render(const srv_metrics *m, const engine_stats *st, const char *model, struct evbuffer *out);
/* Appends dsperf_loop_requests_total{loop="i"}: generation requests each event loop handled. */
void srv_metrics_render_loops(const uint64_t *requests, int n_loops, struct evbuffer *out);
const char *srv_fault_name(int kind);
/* vllm:prefix_cache_queries_total / vllm:prefix_cache_hits_total (prompt tokens looked up in the
 * engine's prefix cache, and found there), for an engine that has one. */
void srv_metrics_render_prefix_cache(int64_t queries, int64_t hits, const char *model, struct evbuffer *out);
/* vllm:cache_config_info{block_size, enable_prefix_caching, gpu_memory_utilization (when > 0), num_gpu_blocks,
 * num_gpu_blocks_override ("None" when 0)} 1: the KV cache's size and what set it. */
void srv_metrics_render_cache_config(int32_t block_size, int64_t num_gpu_blocks, bool prefix_caching,
                                     double gpu_memory_utilization, int64_t num_gpu_blocks_override, struct evbuffer *out);
#endif
