/* engine_metrics — alias tables, per-interval derivation and the /metrics scraper (see
 * engine_metrics.h). Names were checked against each engine's published metrics docs:
 * vLLM "Production Metrics" (V0 and V1 names), SGLang "Production Metrics", TGI "Metrics"
 * reference, llama.cpp server README (--metrics). */
#include "telemetry/engine_metrics.h"
#include "common/http.h"
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const em_col_names[EM_COL_COUNT] = {
    "running", "waiting", "kv_usage_pct", "preemptions", "prefix_cache_hits", "prefix_cache_queries",
    "prefix_cache_hit_rate_pct", "prompt_tokens_per_s", "generation_tokens_per_s", "tokens_per_step",
    "queue_time_ms", "prefill_time_ms", "decode_time_ms", "prompt_tokens", "kv_capacity_tokens",
    "spec_acceptance_length"};

typedef enum { A_VALUE, A_HIST } alias_kind;   /* A_VALUE: gauge or counter (prom_sum); A_HIST: _sum/_count */
typedef struct {
    em_engine engine;
    int raw;                 /* EM_RAW_* */
    alias_kind kind;
    const char *name;
    double scale;            /* applied to values (ratio -> %); histograms keep seconds */
    const char *label, *label_value;
} alias;

/* Order matters: for each (engine, raw) the first name present wins, so the current name comes
 * before the deprecated one. Counters are listed with _total; prom_sum also tries without. */
static const alias aliases[] = {
    /* vLLM V1 (current) and V0 (old) names; also `dsperf serve`. */
    {EM_ENGINE_VLLM, EM_RAW_RUNNING, A_VALUE, "vllm:num_requests_running", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_WAITING, A_VALUE, "vllm:num_requests_waiting", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_KV_PCT, A_VALUE, "vllm:kv_cache_usage_perc", 100, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_KV_PCT, A_VALUE, "vllm:gpu_cache_usage_perc", 100, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PREFIX_RATE_PCT, A_VALUE, "vllm:gpu_prefix_cache_hit_rate", 100, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PREEMPTIONS, A_VALUE, "vllm:num_preemptions_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PREFIX_HITS, A_VALUE, "vllm:prefix_cache_hits_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PREFIX_HITS, A_VALUE, "vllm:gpu_prefix_cache_hits_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PREFIX_QUERIES, A_VALUE, "vllm:prefix_cache_queries_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PREFIX_QUERIES, A_VALUE, "vllm:gpu_prefix_cache_queries_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PROMPT_TOKENS, A_VALUE, "vllm:prompt_tokens_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_GEN_TOKENS, A_VALUE, "vllm:generation_tokens_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_STEP_TOKENS, A_HIST, "vllm:iteration_tokens_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_QUEUE_S, A_HIST, "vllm:request_queue_time_seconds", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_PREFILL_S, A_HIST, "vllm:request_prefill_time_seconds", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_DECODE_S, A_HIST, "vllm:request_decode_time_seconds", 1, 0, 0},
    /* speculative decoding (docs/features/speculative_decoding/acceptance_metrics.md) */
    {EM_ENGINE_VLLM, EM_RAW_SPEC_DRAFTS, A_VALUE, "vllm:spec_decode_num_drafts_total", 1, 0, 0},
    {EM_ENGINE_VLLM, EM_RAW_SPEC_ACCEPTED, A_VALUE, "vllm:spec_decode_num_accepted_tokens_total", 1, 0, 0},
    /* SGLang (--enable-metrics). Prefix cache: cached prompt tokens over prompt tokens. */
    {EM_ENGINE_SGLANG, EM_RAW_RUNNING, A_VALUE, "sglang:num_running_reqs", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_WAITING, A_VALUE, "sglang:num_queue_reqs", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_KV_PCT, A_VALUE, "sglang:token_usage", 100, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_PREFIX_RATE_PCT, A_VALUE, "sglang:cache_hit_rate", 100, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_PREEMPTIONS, A_VALUE, "sglang:num_retracted_requests_total", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_PREFIX_HITS, A_VALUE, "sglang:cached_tokens_total", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_PREFIX_QUERIES, A_VALUE, "sglang:prompt_tokens_total", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_PROMPT_TOKENS, A_VALUE, "sglang:prompt_tokens_total", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_GEN_TOKENS, A_VALUE, "sglang:generation_tokens_total", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_QUEUE_S, A_HIST, "sglang:queue_time_seconds", 1, 0, 0},
    {EM_ENGINE_SGLANG, EM_RAW_SPEC_LEN, A_VALUE, "sglang:spec_accept_length", 1, 0, 0},
    /* TGI: batch size = running; per-batch forward times split by method label; token counts
     * come from the per-request histograms' _sum. */
    {EM_ENGINE_TGI, EM_RAW_RUNNING, A_VALUE, "tgi_batch_current_size", 1, 0, 0},
    {EM_ENGINE_TGI, EM_RAW_WAITING, A_VALUE, "tgi_queue_size", 1, 0, 0},
    {EM_ENGINE_TGI, EM_RAW_PROMPT_TOKENS, A_VALUE, "tgi_request_input_length_sum", 1, 0, 0},
    {EM_ENGINE_TGI, EM_RAW_GEN_TOKENS, A_VALUE, "tgi_request_generated_tokens_sum", 1, 0, 0},
    {EM_ENGINE_TGI, EM_RAW_QUEUE_S, A_HIST, "tgi_request_queue_duration", 1, 0, 0},
    {EM_ENGINE_TGI, EM_RAW_PREFILL_S, A_HIST, "tgi_batch_inference_duration", 1, "method", "prefill"},
    {EM_ENGINE_TGI, EM_RAW_DECODE_S, A_HIST, "tgi_batch_inference_duration", 1, "method", "decode"},
    /* llama.cpp server (--metrics). kv_cache_usage_ratio is gone in newer builds: then unknown. */
    {EM_ENGINE_LLAMACPP, EM_RAW_RUNNING, A_VALUE, "llamacpp:requests_processing", 1, 0, 0},
    {EM_ENGINE_LLAMACPP, EM_RAW_WAITING, A_VALUE, "llamacpp:requests_deferred", 1, 0, 0},
    {EM_ENGINE_LLAMACPP, EM_RAW_KV_PCT, A_VALUE, "llamacpp:kv_cache_usage_ratio", 100, 0, 0},
    {EM_ENGINE_LLAMACPP, EM_RAW_PROMPT_TOKENS, A_VALUE, "llamacpp:prompt_tokens_total", 1, 0, 0},
    {EM_ENGINE_LLAMACPP, EM_RAW_GEN_TOKENS, A_VALUE, "llamacpp:tokens_predicted_total", 1, 0, 0},
};
#define N_ALIASES (sizeof aliases / sizeof aliases[0])

const char *em_engine_name(em_engine e) {
    static const char *n[] = {"unknown", "vllm", "sglang", "tgi", "llamacpp"};
    return (unsigned)e < 5 ? n[e] : "unknown";
}

em_engine em_detect_engine(const prom_doc *doc) {
    static const struct { const char *prefix; em_engine e; } p[] = {
        {"vllm:", EM_ENGINE_VLLM}, {"sglang:", EM_ENGINE_SGLANG}, {"tgi_", EM_ENGINE_TGI},
        {"llamacpp:", EM_ENGINE_LLAMACPP}};
    int hits[5] = {0};
    for (size_t i = 0; i < doc->n_samples; i++)
        for (size_t k = 0; k < sizeof p / sizeof p[0]; k++)
            if (!strncmp(doc->samples[i].name, p[k].prefix, strlen(p[k].prefix))) hits[p[k].e]++;
    em_engine best = EM_ENGINE_UNKNOWN;
    for (int e = 1; e < 5; e++)
        if (hits[e] > hits[best]) best = (em_engine)e;
    return best;
}

/* vLLM states its KV cache's size in the labels of an info gauge:
 * vllm:cache_config_info{block_size="16",num_gpu_blocks="52000",...} 1. */
static double kv_capacity_tokens(const prom_doc *doc) {
    for (size_t i = 0; i < doc->n_samples; i++) {
        const prom_sample *s = &doc->samples[i];
        if (strcmp(s->name, "vllm:cache_config_info")) continue;
        const char *bs = prom_label(s, "block_size"), *nb = prom_label(s, "num_gpu_blocks");
        char *e1, *e2;
        double b = bs ? strtod(bs, &e1) : NAN, n = nb ? strtod(nb, &e2) : NAN;
        if (bs && nb && !*e1 && !*e2 && b > 0 && n > 0) return b * n;
    }
    return NAN;
}

void em_read(const prom_doc *doc, em_engine e, int64_t t_ns, em_reading *out) {
    out->t_ns = t_ns;
    for (int i = 0; i < EM_RAW_COUNT; i++) out->value[i] = out->hsum[i] = out->hcount[i] = NAN;
    if (e == EM_ENGINE_VLLM) out->value[EM_RAW_KV_CAPACITY] = kv_capacity_tokens(doc);
    for (size_t i = 0; i < N_ALIASES; i++) {
        const alias *a = &aliases[i];
        if (a->engine != e) continue;
        if (a->kind == A_VALUE) {
            double v;
            if (isnan(out->value[a->raw]) && prom_sum(doc, a->name, a->label, a->label_value, &v))
                out->value[a->raw] = v * a->scale;
        } else {
            double s, c;
            if (isnan(out->hcount[a->raw]) && prom_hist_totals(doc, a->name, a->label, a->label_value, &s, &c)) {
                out->hsum[a->raw] = s * a->scale;
                out->hcount[a->raw] = c;
            }
        }
    }
}

/* Increase of a cumulative counter; NaN if either end is unknown or the counter went back
 * (server restart). */
static double delta(const em_reading *p, const em_reading *c, int raw) {
    if (!p) return NAN;
    double d = c->value[raw] - p->value[raw];
    return d >= 0 ? d : NAN;        /* NaN propagates and also fails the test */
}

static double hist_mean(const em_reading *p, const em_reading *c, int raw, double scale) {
    if (!p) return NAN;
    double dc = c->hcount[raw] - p->hcount[raw], ds = c->hsum[raw] - p->hsum[raw];
    if (!(dc > 0) || !(ds >= 0)) return NAN;   /* no observations this interval: nothing to average */
    return ds / dc * scale;
}

void em_derive(const em_reading *prev, const em_reading *cur, double out[EM_COL_COUNT]) {
    double dt_s = prev ? (double)(cur->t_ns - prev->t_ns) / 1e9 : NAN;
    out[EM_RUNNING] = cur->value[EM_RAW_RUNNING];
    out[EM_WAITING] = cur->value[EM_RAW_WAITING];
    out[EM_KV_USAGE_PCT] = cur->value[EM_RAW_KV_PCT];
    out[EM_PREEMPTIONS] = delta(prev, cur, EM_RAW_PREEMPTIONS);
    out[EM_PREFIX_HITS] = delta(prev, cur, EM_RAW_PREFIX_HITS);
    out[EM_PREFIX_QUERIES] = delta(prev, cur, EM_RAW_PREFIX_QUERIES);
    if (out[EM_PREFIX_QUERIES] > 0 && out[EM_PREFIX_HITS] >= 0)
        out[EM_PREFIX_HIT_RATE_PCT] = 100.0 * out[EM_PREFIX_HITS] / out[EM_PREFIX_QUERIES];
    else
        out[EM_PREFIX_HIT_RATE_PCT] = cur->value[EM_RAW_PREFIX_RATE_PCT];
    out[EM_PROMPT_TOKENS_PER_S] = dt_s > 0 ? delta(prev, cur, EM_RAW_PROMPT_TOKENS) / dt_s : NAN;
    out[EM_GENERATION_TOKENS_PER_S] = dt_s > 0 ? delta(prev, cur, EM_RAW_GEN_TOKENS) / dt_s : NAN;
    out[EM_TOKENS_PER_STEP] = hist_mean(prev, cur, EM_RAW_STEP_TOKENS, 1);
    out[EM_QUEUE_TIME_MS] = hist_mean(prev, cur, EM_RAW_QUEUE_S, 1e3);
    out[EM_PREFILL_TIME_MS] = hist_mean(prev, cur, EM_RAW_PREFILL_S, 1e3);
    out[EM_DECODE_TIME_MS] = hist_mean(prev, cur, EM_RAW_DECODE_S, 1e3);
    out[EM_PROMPT_TOKENS] = delta(prev, cur, EM_RAW_PROMPT_TOKENS);
    out[EM_KV_CAPACITY_TOKENS] = cur->value[EM_RAW_KV_CAPACITY];
    double drafts = delta(prev, cur, EM_RAW_SPEC_DRAFTS), acc = delta(prev, cur, EM_RAW_SPEC_ACCEPTED);
    out[EM_SPEC_ACCEPT_LEN] = drafts > 0 && acc >= 0 ? 1 + acc / drafts : cur->value[EM_RAW_SPEC_LEN];
}

/* ---- scraper ---- */

#define SCRAPE_MAX_BYTES (32u << 20)   /* a /metrics page bigger than this is an error, not a crash */

struct em_scraper {
    http_get *get;
    char *url;
};

em_scraper *em_scraper_new(const char *url, int64_t timeout_ns) {
    em_scraper *s = calloc(1, sizeof *s);
    char err[160];
    /* the whole scrape and its connection within timeout_ns; a redirect followed; gzip when offered */
    http_opts o = { .timeout_ns = timeout_ns > 0 ? timeout_ns : 1, .connect_timeout_ns = timeout_ns > 0 ? timeout_ns : 1,
                    .max_body_bytes = SCRAPE_MAX_BYTES, .follow_redirects = true, .accept_encoding = true };
    if (!s || !(s->url = strdup(url)) || !(s->get = http_get_new(&o, err, sizeof err))) {
        if (s) free(s->url);
        free(s);
        return NULL;
    }
    return s;
}

int em_scrape(em_scraper *s, const char **text, size_t *len, char *err, size_t errlen) {
    char why[160];
    long code = 0;
    if (http_get_perform(s->get, s->url, &code, text, len, why, sizeof why) != CURLE_OK) {
        snprintf(err, errlen, "%s: %s", s->url, why);
        return -1;
    }
    if (code != 200) {
        snprintf(err, errlen, "%s: HTTP %ld", s->url, code);
        return -1;
    }
    return 0;
}

void em_scraper_free(em_scraper *s) {
    if (!s) return;
    http_get_free(s->get);
    free(s->url);
    free(s);
}
