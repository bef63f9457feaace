/* plan_trace — `dsperf plan --trace FILE --hit-rate H`: the KV a prefix-cache hit rate needs on a
 * Mooncake trace (an LRU cache, dataset/trace.h), against the KV the planned deployment holds. */
#ifndef DSP_PLAN_TRACE_H
#define DSP_PLAN_TRACE_H
#include "plan/plan.h"
#include <jansson.h>
#include <stdio.h>

typedef struct {
    const char *path;            /* mooncake:FILE or FILE; NULL: not asked */
    int32_t block_tokens;        /* 0: 512 */
    double hit_rate;             /* share of prompt tokens (0..1); < 0: the trace's bound */
} plan_trace_opts;

/* Reads the trace and prints (json NULL) or adds to json ("prefix_cache") what the hit rate needs
 * next to r's KV capacity. 0 ok, -1 with a one-line err (unreadable trace, a rate above its bound). */
int plan_trace_report(const plan_trace_opts *o, const plan_result *r, FILE *f, json_t *json, char *err, size_t errlen);
#endif
