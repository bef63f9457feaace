/* trace — what a Mooncake trace (mooncake:FILE, dataset.h) asks of a KV cache: the prefix-cache
 * hit rate an LRU cache of each capacity allows, and the capacity a target hit rate needs.
 *
 * The model: requests in replay order, one at a time, each touching its blocks in order; a block
 * is served from the cache when fewer distinct blocks than the capacity were touched since its last
 * use (LRU, by Mattson's stack distances, computed once for every capacity), and a request's hit is
 * the leading run of served blocks (prefix caching: after a miss nothing is reused). With an
 * unbounded capacity this is exactly the workload's bound (cacheable_tokens). Requests in flight
 * together hold their blocks at once, so a real engine needs somewhat more than this. */
#ifndef DSP_TRACE_H
#define DSP_TRACE_H
#include "dataset/dataset.h"
#include <stdint.h>

typedef struct {
    int64_t *need;           /* ascending: capacity (blocks) from which each step of hits is served */
    double *hit_tokens;      /* cumulative prompt tokens served at capacity need[i] */
    size_t n;
    double prompt_tokens;    /* all prompt tokens of the trace (the rate's denominator) */
    int32_t block_tokens;
} trace_lru;

/* For a mooncake dataset (d->blocks). 0 ok, -1 not a trace or out of memory. */
int trace_lru_compute(const dataset *d, trace_lru *out);
void trace_lru_free(trace_lru *c);
/* The hit rate (share of prompt tokens) at a capacity of cap_tokens. */
double trace_lru_hit_rate(const trace_lru *c, int64_t cap_tokens);
/* The smallest capacity in tokens at which the hit rate reaches hit_rate; -1 when no capacity
 * does (beyond the trace's bound). */
int64_t trace_lru_tokens_for(const trace_lru *c, double hit_rate);
#endif
