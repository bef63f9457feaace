/* plan_trace — the KV a prefix-cache hit rate needs on a trace, for `dsperf plan` (plan_trace.h). */
#include "plan/plan_trace.h"
#include "dataset/dataset.h"
#include "dataset/trace.h"
#include <stdio.h>
#include <string.h>

int plan_trace_report(const plan_trace_opts *o, const plan_result *r, FILE *f, json_t *json, char *err, size_t errlen) {
    char spec[4096];
    snprintf(spec, sizeof spec, "%s%s", strncmp(o->path, "mooncake:", 9) ? "mooncake:" : "", o->path);
    dataset_opts dop = { .block_tokens = o->block_tokens };
    dataset *d;
    if (dataset_open(spec, 0, 1, &dop, &d, err, errlen) < 0) return -1;
    trace_lru lru;
    if (trace_lru_compute(d, &lru) < 0) { dataset_free(d); snprintf(err, errlen, "out of memory"); return -1; }
    double bound = trace_lru_hit_rate(&lru, INT64_MAX / 4), want = o->hit_rate < 0 ? bound : o->hit_rate;
    int64_t need = trace_lru_tokens_for(&lru, want);
    int rc = 0;
    if (need < 0) {
        snprintf(err, errlen, "--hit-rate %.1f%% is above what %s allows with any cache (%.1f%%)", 100 * want, o->path, 100 * bound);
        rc = -1;
    } else {
        /* KV per token is per GPU (MLA's latent is on every tensor-parallel rank) */
        double gb = (double)need * r->kv_bytes_per_token / 1e9, have_gb = r->kv_budget_bytes / 1e9;
        double at_capacity = trace_lru_hit_rate(&lru, r->kv_tokens);
        if (json) json_object_set_new(json, "prefix_cache", json_pack("{s:s,s:f,s:f,s:I,s:f,s:I,s:f,s:b}", "trace", o->path,
            "hit_rate_bound", bound, "hit_rate", want, "kv_tokens_needed", (json_int_t)need, "kv_gb_per_gpu_needed", gb,
            "kv_tokens", (json_int_t)r->kv_tokens, "hit_rate_at_kv_tokens", at_capacity, "fits", need <= r->kv_tokens));
        if (f) {
            fprintf(f, "\nPrefix cache on %s (%zu requests; an LRU cache, requests one at a time):\n", o->path, d->n);
            fprintf(f, "  the trace allows %.1f%% of prompt tokens from the cache with no size limit\n", 100 * bound);
            fprintf(f, "  a hit rate of %.1f%% needs %lld KV tokens = %.1f GB per GPU (%s KV)\n", 100 * want, (long long)need, gb,
                    model_dtype_name(r->kv_dtype));
            fprintf(f, "  this deployment holds %lld KV tokens (%.1f GB per GPU): %s; its size allows %.1f%%\n", r->kv_tokens, have_gb,
                    need <= r->kv_tokens ? "enough" : "not enough", 100 * at_capacity);
            if (need > r->kv_tokens)
                fprintf(f, "  %.1fx the KV: %sa higher gpu_memory_utilization or more GPUs per instance; and requests in\n"
                           "  flight hold their own blocks on top\n", (double)need / (double)(r->kv_tokens > 0 ? r->kv_tokens : 1),
                        model_dtype_bytes(r->kv_dtype) > 1 ? "fp8 KV, " : "");
        }
    }
    trace_lru_free(&lru);
    dataset_free(d);
    return rc;
}
