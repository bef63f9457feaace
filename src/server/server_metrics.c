/* server_metrics — vLLM-named Prometheus metrics for `dsperf serve` (see server_metrics.h).
 * Bucket bounds follow vLLM's so dashboards and scrapers built for vLLM read ours unchanged. */
#include "server/server_metrics.h"
#include <string.h>
#include <stdio.h>

static const double ttft_bounds[] = {0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75,
                                     1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0, 160.0, 640.0, 2560.0};
static const double itl_bounds[] = {0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75,
                                    1.0, 2.5, 5.0, 7.5, 10.0, 20.0, 40.0, 80.0};
static const double latency_bounds[] = {0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0,
                                        40.0, 50.0, 60.0, 120.0, 240.0, 480.0, 960.0, 1920.0, 7680.0};
static const double late_bounds[] = {0.00001, 0.00005, 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01,
                                     0.025, 0.05, 0.1, 0.25, 1.0};
static const double iter_bounds[] = {1, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384};

#define NB(a) ((int)(sizeof a / sizeof a[0]))

static void hist_init(srv_hist *h, const double *b, int n) {
    memset(h, 0, sizeof *h);
    h->bounds = b;
    h->n_bounds = n;
}

void srv_metrics_init(srv_metrics *m) {
    memset(m, 0, sizeof *m);
    hist_init(&m->ttft_s, ttft_bounds, NB(ttft_bounds));
    hist_init(&m->itl_s, itl_bounds, NB(itl_bounds));
    hist_init(&m->e2e_s, latency_bounds, NB(latency_bounds));
    hist_init(&m->queue_s, latency_bounds, NB(latency_bounds));
    hist_init(&m->prefill_s, latency_bounds, NB(latency_bounds));
    hist_init(&m->decode_s, latency_bounds, NB(latency_bounds));
    hist_init(&m->iteration_tokens, iter_bounds, NB(iter_bounds));
    hist_init(&m->lateness_s, late_bounds, NB(late_bounds));
}

void srv_hist_observe(srv_hist *h, double v) {
    int i = 0;
    while (i < h->n_bounds && v > h->bounds[i]) i++;
    h->counts[i]++;
    h->sum += v;
    h->count++;
}

static void hist_add(srv_hist *a, const srv_hist *b) {
    for (int i = 0; i <= a->n_bounds; i++) a->counts[i] += b->counts[i];
    a->sum += b->sum;
    a->count += b->count;
}

void srv_metrics_add(srv_metrics *a, const srv_metrics *b) {
    hist_add(&a->ttft_s, &b->ttft_s);
    hist_add(&a->itl_s, &b->itl_s);
    hist_add(&a->e2e_s, &b->e2e_s);
    hist_add(&a->queue_s, &b->queue_s);
    hist_add(&a->prefill_s, &b->prefill_s);
    hist_add(&a->decode_s, &b->decode_s);
    hist_add(&a->iteration_tokens, &b->iteration_tokens);
    hist_add(&a->lateness_s, &b->lateness_s);
    a->prompt_tokens += b->prompt_tokens;
    a->generation_tokens += b->generation_tokens;
    a->spec_steps += b->spec_steps;
    a->spec_accepted += b->spec_accepted;
    for (int i = 0; i < SRV_N_FINISH; i++) a->success[i] += b->success[i];
    for (int i = 0; i < 600; i++) a->http_status[i] += b->http_status[i];
    for (int i = 0; i < SRV_N_FAULTS; i++) a->faults[i] += b->faults[i];
    a->client_disconnects += b->client_disconnects;
    a->streams_open += b->streams_open;
    a->generate_requests += b->generate_requests;
}


const char *srv_fault_name(int kind) {
    static const char *names[SRV_N_FAULTS] = {"http_500", "http_429", "drop", "stall", "error_event"};
    return kind >= 0 && kind < SRV_N_FAULTS ? names[kind] : "unknown";
}

/* Prometheus label values escape backslash, double quote and newline. */
static void escape_label(const char *in, char *out, size_t len) {
    size_t j = 0;
    for (; *in && j + 3 < len; in++) {
        if (*in == '\\' || *in == '"') { out[j++] = '\\'; out[j++] = *in; }
        else if (*in == '\n') { out[j++] = '\\'; out[j++] = 'n'; }
        else out[j++] = *in;
    }
    out[j] = 0;
}

static void head(struct evbuffer *o, const char *name, const char *type, const char *help) {
    evbuffer_add_printf(o, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void hist(struct evbuffer *o, const char *name, const char *help, const srv_hist *h, const char *ml) {
    head(o, name, "histogram", help);
    uint64_t cum = 0;
    for (int i = 0; i < h->n_bounds; i++) {
        cum += h->counts[i];
        evbuffer_add_printf(o, "%s_bucket{le=\"%g\",model_name=\"%s\"} %llu\n", name, h->bounds[i], ml,
                            (unsigned long long)cum);
    }
    cum += h->counts[h->n_bounds];
    evbuffer_add_printf(o, "%s_bucket{le=\"+Inf\",model_name=\"%s\"} %llu\n", name, ml, (unsigned long long)cum);
    evbuffer_add_printf(o, "%s_sum{model_name=\"%s\"} %.9g\n", name, ml, h->sum);
    evbuffer_add_printf(o, "%s_count{model_name=\"%s\"} %llu\n", name, ml, (unsigned long long)h->count);
}

void srv_metrics_render(const srv_metrics *m, const engine_stats *st, const char *model, struct evbuffer *o) {
    char ml[512];
    escape_label(model, ml, sizeof ml);
    head(o, "vllm:num_requests_running", "gauge", "Number of requests in model execution batches.");
    evbuffer_add_printf(o, "vllm:num_requests_running{model_name=\"%s\"} %lld\n", ml, (long long)st->running);
    head(o, "vllm:num_requests_waiting", "gauge", "Number of requests waiting to be processed.");
    evbuffer_add_printf(o, "vllm:num_requests_waiting{model_name=\"%s\"} %lld\n", ml, (long long)st->waiting);
    if (st->kv_usage >= 0) {
        head(o, "vllm:kv_cache_usage_perc", "gauge", "KV-cache usage. 1 means 100 percent usage.");
        evbuffer_add_printf(o, "vllm:kv_cache_usage_perc{model_name=\"%s\"} %.6g\n", ml, st->kv_usage);
    }
    if (st->preemptions_total >= 0) {
        head(o, "vllm:num_preemptions_total", "counter", "Cumulative number of preemption from the engine.");
        evbuffer_add_printf(o, "vllm:num_preemptions_total{model_name=\"%s\"} %lld\n", ml,
                            (long long)st->preemptions_total);
    }
    head(o, "vllm:prompt_tokens_total", "counter", "Number of prefill tokens processed.");
    evbuffer_add_printf(o, "vllm:prompt_tokens_total{model_name=\"%s\"} %llu\n", ml, (unsigned long long)m->prompt_tokens);
    head(o, "vllm:generation_tokens_total", "counter", "Number of generation tokens processed.");
    evbuffer_add_printf(o, "vllm:generation_tokens_total{model_name=\"%s\"} %llu\n", ml,
                        (unsigned long long)m->generation_tokens);
    if (m->spec_accepted > 0) {
        head(o, "vllm:spec_decode_num_drafts_total", "counter", "Number of spec decoding drafts.");
        evbuffer_add_printf(o, "vllm:spec_decode_num_drafts_total{model_name=\"%s\"} %llu\n", ml,
                            (unsigned long long)m->spec_steps);
        head(o, "vllm:spec_decode_num_accepted_tokens_total", "counter", "Number of accepted tokens.");
        evbuffer_add_printf(o, "vllm:spec_decode_num_accepted_tokens_total{model_name=\"%s\"} %llu\n", ml,
                            (unsigned long long)m->spec_accepted);
    }
    head(o, "vllm:request_success_total", "counter", "Count of successfully processed requests.");
    static const char *reasons[SRV_N_FINISH] = {"stop", "length", "abort"};
    for (int i = 0; i < SRV_N_FINISH; i++)
        evbuffer_add_printf(o, "vllm:request_success_total{finished_reason=\"%s\",model_name=\"%s\"} %llu\n",
                            reasons[i], ml, (unsigned long long)m->success[i]);
    hist(o, "vllm:time_to_first_token_seconds", "Histogram of time to first token in seconds.", &m->ttft_s, ml);
    hist(o, "vllm:inter_token_latency_seconds", "Histogram of inter-token latency in seconds.", &m->itl_s, ml);
    hist(o, "vllm:e2e_request_latency_seconds", "Histogram of e2e request latency in seconds.", &m->e2e_s, ml);
    hist(o, "vllm:request_queue_time_seconds", "Histogram of time spent in WAITING phase for request.", &m->queue_s, ml);
    hist(o, "vllm:request_prefill_time_seconds", "Histogram of time spent in PREFILL phase for request.", &m->prefill_s, ml);
    hist(o, "vllm:request_decode_time_seconds", "Histogram of time spent in DECODE phase for request.", &m->decode_s, ml);
    hist(o, "vllm:iteration_tokens_total", "Histogram of number of tokens per engine_step.", &m->iteration_tokens, ml);

    head(o, "dsperf_emit_lateness_seconds", "histogram",
         "Wall time from when the engine said a token was due to when the server wrote it (server-side timing error).");
    uint64_t cum = 0;
    for (int i = 0; i <= m->lateness_s.n_bounds; i++) {
        cum += m->lateness_s.counts[i];
        if (i < m->lateness_s.n_bounds)
            evbuffer_add_printf(o, "dsperf_emit_lateness_seconds_bucket{le=\"%g\"} %llu\n", m->lateness_s.bounds[i], (unsigned long long)cum);
        else
            evbuffer_add_printf(o, "dsperf_emit_lateness_seconds_bucket{le=\"+Inf\"} %llu\n", (unsigned long long)cum);
    }
    evbuffer_add_printf(o, "dsperf_emit_lateness_seconds_sum %.9g\ndsperf_emit_lateness_seconds_count %llu\n",
                        m->lateness_s.sum, (unsigned long long)m->lateness_s.count);
    head(o, "dsperf_http_responses_total", "counter", "HTTP responses started, by status code.");
    for (int c = 100; c < 600; c++)
        if (m->http_status[c])
            evbuffer_add_printf(o, "dsperf_http_responses_total{code=\"%d\"} %llu\n", c,
                                (unsigned long long)m->http_status[c]);
    head(o, "dsperf_injected_faults_total", "counter", "Faults injected by dsperf serve, by kind.");
    for (int k = 0; k < SRV_N_FAULTS; k++)
        evbuffer_add_printf(o, "dsperf_injected_faults_total{kind=\"%s\"} %llu\n", srv_fault_name(k),
                            (unsigned long long)m->faults[k]);
    head(o, "dsperf_client_disconnects_total", "counter", "Requests whose client went away before they finished.");
    evbuffer_add_printf(o, "dsperf_client_disconnects_total %llu\n", (unsigned long long)m->client_disconnects);
    head(o, "dsperf_streams_open", "gauge", "Generation requests with an open connection.");
    evbuffer_add_printf(o, "dsperf_streams_open %lld\n", (long long)m->streams_open);
}

void srv_metrics_render_loops(const uint64_t *requests, int n_loops, struct evbuffer *o) {
    head(o, "dsperf_loop_requests_total", "counter", "Generation requests handled by each event loop (serve --threads).");
    for (int i = 0; i < n_loops; i++)
        evbuffer_add_printf(o, "dsperf_loop_requests_total{loop=\"%d\"} %llu\n", i, (unsigned long long)requests[i]);
}

void srv_metrics_render_prefix_cache(int64_t queries, int64_t hits, const char *model, struct evbuffer *o) {
    char ml[512];
    escape_label(model, ml, sizeof ml);
    head(o, "vllm:prefix_cache_queries_total", "counter", "Prefix cache queries, in terms of number of queried tokens.");
    evbuffer_add_printf(o, "vllm:prefix_cache_queries_total{model_name=\"%s\"} %lld\n", ml, (long long)queries);
    head(o, "vllm:prefix_cache_hits_total", "counter", "Prefix cache hits, in terms of number of cached tokens.");
    evbuffer_add_printf(o, "vllm:prefix_cache_hits_total{model_name=\"%s\"} %lld\n", ml, (long long)hits);
}

void srv_metrics_render_cache_config(int32_t block_size, int64_t num_gpu_blocks, bool prefix_caching,
                                     double gpu_memory_utilization, int64_t num_gpu_blocks_override, struct evbuffer *o) {
    head(o, "vllm:cache_config_info", "gauge", "Information of the LLMEngine CacheConfig");
    char gmu[64] = "", ov[32] = "None";
    if (gpu_memory_utilization > 0) snprintf(gmu, sizeof gmu, ",gpu_memory_utilization=\"%g\"", gpu_memory_utilization);
    if (num_gpu_blocks_override > 0) snprintf(ov, sizeof ov, "%lld", (long long)num_gpu_blocks_override);
    evbuffer_add_printf(o, "vllm:cache_config_info{block_size=\"%d\",enable_prefix_caching=\"%s\"%s,num_gpu_blocks=\"%lld\","
                        "num_gpu_blocks_override=\"%s\"} 1.0\n", (int)block_size, prefix_caching ? "True" : "False", gmu,
                        (long long)num_gpu_blocks, ov);
}
