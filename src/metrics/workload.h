/* workload — what a structured workload shows beyond the request-level summary, from the same
 * records (warm-up excluded):
 *
 * "prefix_cache": the hit rate the server reports (Σ cached prompt tokens / Σ prompt tokens it
 *   counted, over the requests that said: usage.prompt_tokens_details.cached_tokens, DeepSeek's
 *   prompt_cache_hit_tokens, or llama.cpp's prompt_tokens - timings.prompt_n), the hit rate the
 *   workload allows (Σ cacheable / Σ prompt tokens sent: what a prefix cache of unbounded size
 *   could have served, from the trace's repeated blocks or the conversations' histories), and TTFT
 *   split into hits (more than half of the prompt served from the cache) and misses.
 * "sessions": multi-turn conversations — how many ended complete, by a failed turn, or cut by the
 *   run's end; per turn index the TTFT statistics, prompt length and hit rates (TTFT by turn shows
 *   whether the cache holds the history); per conversation a summary line.
 * Each is NULL when the records carry nothing for it. */
#ifndef DSP_WORKLOAD_H
#define DSP_WORKLOAD_H
#include "metrics/record.h"
#include "metrics/summary.h"
#include <jansson.h>

/* A request counts as a cache hit when more than this share of its prompt came from the cache. */
#define WORKLOAD_HIT_SHARE 0.5
/* Conversations listed one by one in "sessions.per_session" (the counts cover all of them). */
#define WORKLOAD_MAX_SESSIONS_LISTED 10000

json_t *workload_prefix_cache(const recset *recs, const summary_opts *o);
/* The hit rate the server's /metrics show over the run, into results.prefix_cache
 * (hit_rate_metrics, metrics_source), from results.telemetry_summary.server: vLLM's prefix-cache
 * hits / queries counters or SGLang's cache_hit_rate; for llama.cpp, whose prompt_tokens_total
 * counts only the prompt tokens it evaluated, 1 - evaluated / the prompt tokens its usage
 * reported (warm-up requests are in the counter, not in the sum: run without --warmup to compare).
 * Nothing when the server exposes neither. */
void workload_add_metrics_hit_rate(json_t *results);
json_t *workload_sessions(const recset *recs, const summary_opts *o);
#endif
