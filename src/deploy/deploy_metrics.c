/* deploy_metrics — what a server's /metrics page says about its KV cache, read once at preflight:
 * vLLM's vllm:cache_config_info (an info gauge whose labels are the cache settings: num_gpu_blocks,
 * block_size, gpu_memory_utilization; `dsperf serve --engine sim` exposes the same) and SGLang's
 * sglang:max_total_num_tokens. The KV capacity is what diagnose compares with the share of memory
 * the settings should have given the cache, and what the context view predicts fitting with. */
#include "deploy/deploy_int.h"
#include "telemetry/prom.h"
#include <stdlib.h>
#include <string.h>

static double label_num(const prom_sample *s, const char *name) {
    const char *v = prom_label(s, name);
    char *end;
    double x = v ? strtod(v, &end) : 0;
    return v && end != v && !*end ? x : 0;
}

void deploy_from_metrics_text(deploy *d, const char *text, size_t len) {
    prom_doc doc;
    if (!text || prom_parse_flags(text, len, &doc, PROM_SKIP_BUCKETS) < 0) return;
    for (size_t i = 0; i < doc.n_samples; i++) {
        const prom_sample *s = &doc.samples[i];
        if (!strcmp(s->name, "vllm:cache_config_info")) {
            double blocks = label_num(s, "num_gpu_blocks"), bs = label_num(s, "block_size");
            double gmu = label_num(s, "gpu_memory_utilization");
            const char *ov = prom_label(s, "num_gpu_blocks_override");
            if (blocks > 0 && bs > 0) {
                d->kv_capacity_tokens = blocks * bs;
                d->kv_capacity_set = ov && *ov && strcmp(ov, "None");
                deploy_set(&d->kv_capacity_tokens_s, false, "/metrics vllm:cache_config_info num_gpu_blocks x block_size");
            }
            if (gmu > 0 && gmu <= 1) {
                d->gpu_memory_utilization = gmu;
                deploy_set(&d->gpu_memory_utilization_s, false, "/metrics vllm:cache_config_info gpu_memory_utilization");
            }
        } else if (!strcmp(s->name, "sglang:max_total_num_tokens") && s->value > 0) {
            d->kv_capacity_tokens = s->value;
            deploy_set(&d->kv_capacity_tokens_s, false, "/metrics sglang:max_total_num_tokens");
        }
    }
    prom_doc_free(&doc);
}
