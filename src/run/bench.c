/* run/bench — one load run for bench, sweep, tune and monitor (see bench.h). */
#include "run/bench.h"
#include "engine/sim_interval.h"
#include "run/job.h"
#include "metrics/metric_table.h"
#include "common/stop.h"
#include "deploy/deploy.h"
#include "telemetry/engine_metrics.h"
#include "common/clock.h"
#include "dataset/sessions.h"
#include "metrics/workload.h"
#include "results/results.h"
#include "client/identify.h"
#include "client/rxbatch.h"
#include "results/validity.h"
#include "common/log.h"
#include "common/clock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>
#include <sys/resource.h>
#include <signal.h>
#include <unistd.h>


static void show_progress(void *ctx, const load_progress *p) {
    (void)ctx;
    char ttft[32] = "-";
    if (!isnan(p->ttft_p50_ms)) snprintf(ttft, sizeof ttft, "%.1f ms", p->ttft_p50_ms);
    char planned[32] = "";
    if (p->planned) snprintf(planned, sizeof planned, "/%zu", p->planned);
    fprintf(stderr, "\r\033[K[%5.0fs] done %zu%s  failed %zu  in-flight %zu  queued %zu  %.1f req/s  p50 TTFT %s",
            p->elapsed_ns / 1e9, p->finished, planned, p->failed, p->in_flight, p->queued, p->rate_per_s, ttft);
    fflush(stderr);
}

/* The client's own CPU cost, so a run can show it was not client-bound: CPU seconds of this
 * process, its share of one core over the run, and CPU microseconds per received chunk. */
static double tv_s(struct timeval tv) { return tv.tv_sec + tv.tv_usec / 1e6; }

/* Only this run's CPU counts: `before` is the process's usage when the run started (a sweep runs
 * many levels in one process). */
static void add_client_cost(json_t *res, const recset *recs, int64_t wall_ns, const struct rusage *before) {
    struct rusage ru;
    if (getrusage(RUSAGE_SELF, &ru) != 0) return;
    double user_s = tv_s(ru.ru_utime) - tv_s(before->ru_utime);
    double sys_s = tv_s(ru.ru_stime) - tv_s(before->ru_stime);
    uint64_t chunks = 0;
    for (size_t i = 0; i < recs->n; i++) chunks += recs->v[i].n_chunks;
    json_t *c = json_object();
    json_object_set_new(c, "cpu_user_s", json_real(user_s));
    json_object_set_new(c, "cpu_sys_s", json_real(sys_s));
    json_object_set_new(c, "cpu_core_share", json_real(wall_ns > 0 ? (user_s + sys_s) / (wall_ns / 1e9) : 0));
    json_object_set_new(c, "chunks", json_integer((json_int_t)chunks));
    json_object_set_new(c, "cpu_us_per_chunk", chunks ? json_real((user_s + sys_s) * 1e6 / chunks) : json_null());
    json_object_set_new(c, "chunks_per_s", json_real(wall_ns > 0 ? chunks / (wall_ns / 1e9) : 0));
    json_object_set_new(c, "max_rss_kib", json_integer(ru.ru_maxrss));
    json_object_set_new(res, "client", c);
}

static int32_t count_tokens(void *ctx, const char *text, size_t len) {
    size_t n = tokenizer_count(ctx, text, len);
    return n == (size_t)-1 ? 0 : (int32_t)n;
}

/* Says where the output token counts came from: the server's usage (preferred), the client's
 * counter over the generated text (tokenizer or words), or nothing but the chunk count. */
static void add_token_sources(json_t *res, const recset *recs, const char *counter) {
    size_t usage = 0, client = 0, chunks = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome != REC_OK) continue;
        if (r->out_tokens_server >= 0) usage++;
        else if (r->out_tokens_client >= 0) client++;
        else chunks++;
    }
    const char *src = usage && !client && !chunks ? "server_usage"
                    : client && !usage && !chunks ? (counter && !strcmp(counter, "tokenizer") ? "client_tokenizer" : "client_words")
                    : chunks && !usage && !client ? "chunk_count" : (usage + client + chunks ? "mixed" : "none");
    json_object_set_new(res, "output_tokens_source", json_string(src));
    json_t *n = json_object();
    json_object_set_new(n, "server_usage", json_integer((json_int_t)usage));
    json_object_set_new(n, "client_counter", json_integer((json_int_t)client));
    json_object_set_new(n, "chunk_count", json_integer((json_int_t)chunks));
    json_object_set_new(res, "output_tokens_sources", n);
}

/* Every request class summarised on its own, with its own SLOs ("does one tenant's burst hurt
 * another's tail?"). Whether the client kept its plan is a property of the whole run, so those
 * fields stay at the top level only. */
static void add_class_summaries(json_t *res, const recset *recs, const bench_opts *b, const summary_parts *parts) {
    json_t *arr = json_array();
    record *view = malloc((recs->n ? recs->n : 1) * sizeof *view);
    if (!view) return;
    for (int c = 0; c < b->n_classes; c++) {
        recset sub = { .v = view, .n = 0, .cap = recs->n };
        for (size_t i = 0; i < recs->n; i++)
            if (recs->v[i].class_id == c) view[sub.n++] = recs->v[i];   /* shallow: the view owns nothing */
        json_t *sm = summary_compute_parts(&sub, &b->classes[c].summary, parts ? &parts[c] : NULL);
        if (!sm) continue;
        static const char *const whole_run[] = { "client_fell_behind", "client_lag_reason", "client_lag_threshold_ms",
            "client_queue_capped", "client_queue_reason", "intended_rate_per_s", "timeline", NULL };
        for (const char *const *k = whole_run; *k; k++) json_object_del(sm, *k);
        json_object_set_new(sm, "class", json_string(b->classes[c].name));
        json_object_set_new(sm, "weight", json_real(b->classes[c].weight));
        json_object_set_new(sm, "dataset", json_string(b->classes[c].dataset_spec));
        json_array_append_new(arr, sm);
    }
    free(view);
    json_object_set_new(res, "classes", arr);
}

/* The per-class lines under the summary table. */
void bench_print_classes(FILE *f, const json_t *res) {
    json_t *arr = json_object_get(res, "classes");
    if (!json_array_size(arr)) return;
    fprintf(f, "%s\n", "--------------------Per class---------------------");
    fprintf(f, "%-12s %6s %6s %9s %9s %9s %9s %8s\n", "class", "ok", "failed", "TTFT p50", "TTFT p99", "TPOT p50", "TPOT p99", "goodput");
    size_t i;
    json_t *c;
    json_array_foreach(arr, i, c) {
        json_t *g = json_object_get(c, METRIC(request_goodput));
        char good[32] = "-";
        if (json_is_number(g)) snprintf(good, sizeof good, "%.2f", json_number_value(g));
        fprintf(f, "%-12.12s %6lld %6lld %9.2f %9.2f %9.2f %9.2f %8s\n", json_string_value(json_object_get(c, "class")),
                json_integer_value(json_object_get(c, "completed")), json_integer_value(json_object_get(c, "failed")),
                json_number_value(json_object_get(c, METRIC(median_ttft_ms))), json_number_value(json_object_get(c, METRIC(p99_ttft_ms))),
                json_number_value(json_object_get(c, METRIC(median_tpot_ms))), json_number_value(json_object_get(c, METRIC(p99_tpot_ms))), good);
    }
    fprintf(f, "(latencies in ms; goodput in req/s, under each class's SLOs)\n");
}

/* What the server says about itself (its /v1/models entry; llama.cpp's /props with the slots, the
 * context per slot and the GGUF it loaded), kept for every results file of the run so that the
 * roofline knows what is served. A server that answers neither is no error. */
static void probe_deployment(bench_opts *b) {
    json_t *models = client_get_json(&b->client, "/v1/models");
    json_t *props = client_get_json(&b->client, "/props");
    deploy d;
    deploy_init(&d);
    deploy_from_server(&d, models, props, b->client.model, b->tokenizer_path);
    /* the KV cache as the server configured it (vLLM's cache_config_info), once, when scraped */
    if (b->telemetry.server_metrics_url) {
        em_scraper *sc = em_scraper_new(b->telemetry.server_metrics_url, 2 * NS_PER_S);
        const char *text;
        size_t len;
        char err[256];
        if (sc && em_scrape(sc, &text, &len, err, sizeof err) == 0) deploy_from_metrics_text(&d, text, len);
        em_scraper_free(sc);
    }
    json_decref(b->deployment);
    b->deployment = deploy_to_json(&d);
    /* a simulated server says so, with how good its figures are (serve --engine sim) */
    size_t i;
    json_t *e;
    b->sim_served = b->sim_calibrated = 0;
    b->sim_engine_profile[0] = b->sim_gpu[0] = 0;
    json_array_foreach(json_object_get(models, "data"), i, e) {
        const char *id = json_string_value(json_object_get(e, "id"));
        if (b->client.model && id && strcmp(id, b->client.model)) continue;
        const json_t *pi = json_object_get(json_object_get(json_object_get(e, "meta"), "sim"), "prediction_interval");
        if (json_is_object(pi)) {
            b->sim_served = 1;
            b->sim_calibrated = json_is_true(json_object_get(pi, "calibrated"));
            const json_t *sim = json_object_get(json_object_get(e, "meta"), "sim");
            snprintf(b->sim_engine_profile, sizeof b->sim_engine_profile, "%s", json_string_value(json_object_get(sim, "engine_profile")) ?: "");
            snprintf(b->sim_gpu, sizeof b->sim_gpu, "%s", json_string_value(json_object_get(sim, "gpu")) ?: "");
            double sp = json_number_value(json_object_get(json_object_get(e, "meta"), "speedup"));
            b->sim_speedup = sp > 0 ? sp : 1;
        }
        break;
    }
    json_decref(models);
    json_decref(props);
}

/* The simulator's 80% interval for a run against `serve --engine sim`: around what the client
 * measured, on the simulated deployment's clock (a server run at --speedup k serves latencies 1/k
 * and throughputs k times the simulated ones). */
static json_t *sim_served_interval(const json_t *results, int calibrated, double speedup, const char *engine_profile, const char *gpu) {
    static const char *const lat[] = {METRIC(mean_tpot_ms), METRIC(median_tpot_ms), METRIC(mean_itl_ms), METRIC(median_itl_ms),
                                      METRIC(mean_ttft_ms), METRIC(median_ttft_ms)};
    static const char *const tput[] = {METRIC(output_throughput), METRIC(total_token_throughput), METRIC(request_throughput)};
    json_t *r = json_copy((json_t *)results);   /* shallow: only the scaled numbers and the config are replaced */
    /* the served deployment's engine and GPU, where the interval's kind reads them (config.sim) */
    json_t *cfg = json_deep_copy(json_object_get(r, "config"));
    if (!cfg) cfg = json_object();
    json_object_set_new(cfg, "sim", json_pack("{s:s,s:s}", "engine_profile", engine_profile, "gpu", gpu));
    json_object_set_new(r, "config", cfg);
    for (size_t i = 0; speedup != 1 && i < sizeof lat / sizeof lat[0]; i++) {
        double v = json_number_value(json_object_get(r, lat[i]));
        if (v > 0) json_object_set_new(r, lat[i], json_real(v * speedup));
    }
    for (size_t i = 0; speedup != 1 && i < sizeof tput / sizeof tput[0]; i++) {
        double v = json_number_value(json_object_get(r, tput[i]));
        if (v > 0) json_object_set_new(r, tput[i], json_real(v / speedup));
    }
    json_t *pi = sim_interval_json(r, calibrated);
    json_decref(r);
    char of[320];
    snprintf(of, sizeof of, "dsperf serve --engine sim: the values are this run's measurements of the simulated server%s; lo-hi "
             "is where the simulated deployment would fall", speedup != 1 ? ", on the simulated clock (served at --speedup)" : "");
    json_object_set_new(pi, "of", json_string(of));
    json_object_set_new(pi, "speedup", json_real(speedup));
    return pi;
}

/* The run's deployment: what the server said, with what the results add (NVML's GPUs). */
static void add_deployment(json_t *res, const bench_opts *b) {
    if (b->deployment) json_object_set(res, "deployment", b->deployment);
    deploy d;
    char err[256];
    if (deploy_resolve(res, NULL, &d, err, sizeof err) == 0) json_object_set_new(res, "deployment", deploy_to_json(&d));
}

ds_result bench_prepare(bench_opts *b, dataset **ds, char **model) {
    char err[1024];
    *model = NULL;
    *ds = NULL;
    int pf = client_preflight(&b->client, model, NULL, err, sizeof err);
    if (pf < 0) {
        log_error("%s", err);
        return pf == CLIENT_UNREACHABLE ? DS_ECONNECT : DS_EINVAL;
    }
    if (!b->client.model) b->client.model = *model;
    probe_deployment(b);
    if (!b->server_identity) b->server_identity = client_identify(&b->client, b->telemetry.server_metrics_url);
    return bench_prepare_dataset(b, b->plan.requests ? b->plan.requests + b->plan.warmup : 10000, ds);
}

/* What a trace or a sessions dataset changes in the plan, and the flags that only they take. */
static ds_result bench_prepare_workload(bench_opts *b, const dataset *ds) {
    if ((b->block_tokens || b->window_start_ns || b->window_end_ns) && !ds->blocks) {
        log_error("--block-size and --trace-window apply to a mooncake:FILE trace, not to --dataset %s", b->dataset_spec);
        return DS_EINVAL;
    }
    if (b->time_scale > 0 && !b->plan.trace) {
        log_error("--time-scale scales a trace's timestamps: add --arrival trace");
        return DS_EINVAL;
    }
    /* a trace replay sends the trace (its window), unless told to send less or more */
    if (ds->blocks && !b->requests_given && !b->plan.duration_ns) b->plan.requests = ds->n;
    if (!ds->sessions) return DS_OK;
    size_t n = sessions_count(ds->sessions);
    int turns = sessions_turns(ds->sessions);
    if (b->requests_given || b->n_classes || b->plan.trace || b->plan.arr.ramp_ns > 0) {
        log_error("a sessions dataset sets the run's size and shape itself (sessions:n=N conversations of turns=T): "
                  "drop %s", b->requests_given ? "--requests" : b->n_classes ? "--class" : b->plan.trace ? "--arrival trace" : "--ramp");
        return DS_EINVAL;
    }
    if (b->plan.warmup >= n) {
        log_error("--warmup counts conversations with a sessions dataset: %zu would leave none of the %zu measured", b->plan.warmup, n);
        return DS_EINVAL;
    }
    b->plan.requests = n * (size_t)turns;   /* at most: a failed turn ends its conversation */
    b->client.keep_text = true;             /* each turn sends the answers back */
    b->summary.session_turns = turns;
    return DS_OK;
}

ds_result bench_prepare_dataset(bench_opts *b, size_t n_hint, dataset **ds) {
    char err[1024];
    *ds = NULL;
    if (b->tokenizer_path && !b->tok) {
        if (tokenizer_load(b->tokenizer_path, &b->tok, err, sizeof err) < 0) {
            log_error("--tokenizer %s: %s", b->tokenizer_path, err);
            return DS_EINVAL;
        }
        b->client.counter = (token_counter){ count_tokens, b->tok, "tokenizer" };
    }
    dataset_opts dop = { .tok = b->tok, .tolerance = b->length_tolerance, .time_scale = b->time_scale,
                         .window_start_ns = b->window_start_ns, .window_end_ns = b->window_end_ns,
                         .block_tokens = b->block_tokens };
    if (dataset_open(b->dataset_spec, n_hint, b->plan.seed, &dop, ds, err, sizeof err) < 0) {
        log_error("%s", err);
        return DS_EINVAL;
    }
    dataset_count_for_api(*ds, b->tok, b->client.api == OPENAI_CHAT);
    if ((*ds)->length_error[0]) {
        log_error("%s", (*ds)->length_error);
        return DS_EINVAL;
    }
    ds_result rc = bench_prepare_workload(b, *ds);
    if (rc != DS_OK) return rc;
    if (b->tok) log_info("dataset %s: %zu prompts of %d..%d tokens (mean %.1f) as the server will count them%s",
                         b->dataset_spec, (*ds)->n, (*ds)->len_min, (*ds)->len_max, (*ds)->len_mean,
                         (*ds)->rebuilt ? " (some random prompts rebuilt to hit their length)" : "");
    b->client.ignore_eos = (*ds)->ignore_eos || b->ignore_eos;
    /* request classes: one dataset each; ignore_eos is asked for when any class controls its
     * output length (it is one flag per client) */
    for (int i = 0; i < b->n_classes; i++) {
        bench_class *c = &b->classes[i];
        if (dataset_open(c->dataset_spec, n_hint, b->plan.seed + (uint64_t)i + 1, &dop, &c->ds, err, sizeof err) < 0) {
            log_error("--class %s: %s", c->name, err);
            return DS_EINVAL;
        }
        dataset_count_for_api(c->ds, b->tok, b->client.api == OPENAI_CHAT);
        b->client.ignore_eos = b->client.ignore_eos || c->ds->ignore_eos;
        b->class_ds[i] = c->ds;
        b->class_weight[i] = c->weight;
    }
    b->plan.n_classes = b->n_classes;
    b->plan.class_ds = b->class_ds;
    b->plan.class_weight = b->class_weight;
    if (b->plan.trace && (*ds)->items[0].timestamp_ns < 0) {
        log_error("--arrival trace needs a dataset with a \"timestamp\" on every line (jsonl:FILE or mooncake:FILE)");
        return DS_EINVAL;
    }
    return DS_OK;
}

ds_result bench_run_once(bench_opts *b, const dataset *ds, ds_stop_flag *stop, bool progress,
                   recset *recs, bench_result *out, char *err, size_t errlen) {
    ds_result rc = bench_run_once_hook(b, ds, stop, progress ? show_progress : NULL, NULL, recs, out, err, errlen);
    if (progress) fprintf(stderr, "\r\033[K");
    return rc;
}

ds_result bench_run_once_hook(bench_opts *b, const dataset *ds, ds_stop_flag *stop, load_progress_fn progress,
                        void *ctx, recset *recs, bench_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    dist *d = b->dist;           /* a multi-host job: src/dist; NULL otherwise */
    load_plan plan = b->plan;    /* the run's copy: a job adds its shards and start time */
    telemetry_opts topts = b->telemetry;
    bool tel_on = b->telemetry_on;
    dist_progress *dp = NULL;
    if (d) {
        if (!plan.progress_interval_ns || plan.progress_interval_ns > 100 * NS_PER_MS)
            plan.progress_interval_ns = 100 * NS_PER_MS;   /* the ranks' heartbeat and stop latency */
        if (dist_is_root(d) && dist_run_begin(d, &plan, b->requests_path || b->keep_request_chunks, err, errlen) < 0) return DS_ERUN;
        tel_on = tel_on && dist_telemetry_opts(d, &topts);
        if (!(dp = dist_progress_new(d, progress, ctx, stop))) { snprintf(err, errlen, "out of memory"); return DS_ERUN; }
    }
    telemetry *tel = NULL;
    if (tel_on) {
        /* bad telemetry options are usage errors: they were validated before the run */
        tel = telemetry_start(&topts, err, errlen);
        if (!tel) { dist_progress_free(dp); return DS_ERUN; }
    }
    load_outcome lo;
    struct rusage ru_before;
    client_prepare_host(&b->client);   /* one-time measurements of the host: not the run's CPU */
    getrusage(RUSAGE_SELF, &ru_before);
    if (d && (dist_samples_only(d) || plan.client_threads == 0)) dist_idle_run(d, dp, &lo);   /* no shard here */
    else if (load_run(&plan, &b->client, ds, recs, stop, dp ? dist_progress_tick : progress, dp ? (void *)dp : ctx, &lo,
                      err, errlen) < 0) {
        telemetry_free(tel);
        dist_progress_free(dp);
        return DS_ERUN;
    }
    dist_progress_free(dp);
    json_t *client = json_object();
    add_client_cost(client, recs, lo.end_ns - lo.start_ns, &ru_before);
    json_t *cost = json_incref(json_object_get(client, "client"));
    json_decref(client);
    json_object_set_new(cost, "threads", json_integer(lo.client_threads));
    /* which path read the responses (the own one stamps every chunk's kernel arrival; libcurl's
     * stamps the handover), and why libcurl when it was */
    const char *why = client_read_path_of(&b->client);
    json_object_set_new(cost, "read_path", json_string(why ? "libcurl" : "own"));
    if (why) json_object_set_new(cost, "read_path_why", json_string(why));
    if (!why) {
        /* from how many ready sockets a wake-up's reads went in one io_uring call, and the costs
         * measured on this host that chose it (src/client/rxbatch.h; measured when the first
         * client came up; absent when io_uring or kernel stamps were off) */
        const rxbatch_cost *k = rxbatch_cost_known();
        if (k) {
            json_t *rb = json_object();
            json_object_set_new(rb, "min_sockets", k->min_sockets >= RXBATCH_NEVER ? json_null() : json_integer(k->min_sockets));
            if (k->measured) {
                json_object_set_new(rb, "recvmsg_us", json_real(k->one_us));
                json_object_set_new(rb, "enter_us", json_real(k->enter_us));
                json_object_set_new(rb, "per_read_us", json_real(k->per_read_us));
            }
            json_object_set_new(cost, "read_batch", rb);
        }
    }
    if (tel) telemetry_stop(tel);
    dist_merged m;
    memset(&m, 0, sizeof m);
    if (d) {
        dist_local loc = { cost, tel };
        int rc = dist_gather(d, recs, b->n_classes, &lo, &loc, stop, &m, err, errlen);
        telemetry_free(tel);
        tel = NULL;
        if (rc < 0 || !dist_is_root(d)) { json_decref(cost); dist_merged_free(&m); return rc < 0 ? DS_ERUN : DS_OK; }
        /* rank 0 goes on with the job's records, on its clock, as if it had measured them all */
        recset_free(recs);
        *recs = m.recs;
        recset_init(&m.recs);
        lo = m.lo;
        json_decref(cost);
        cost = json_incref(m.client);
    }
    /* the sweep's early stop ends a level the way Ctrl-C does, but it is no interruption */
    bool interrupted = lo.interrupted && lo.stop_code != LOAD_STOP_EARLY;
    char reason[768];
    snprintf(reason, sizeof reason, "%s%s%s", interrupted ? "interrupted (SIGINT/SIGTERM): results cover what finished before the stop" : "",
             interrupted && m.lost ? "; " : "", m.lost ? m.partial_reason : "");
    results_meta meta = {
        .producer = "bench", .command_line = b->command_line, .config = bench_opts_config_json(b, ds),
        .partial = lo.interrupted || m.lost > 0, .partial_reason = reason[0] ? reason : NULL, .parts = d ? &m.whole : NULL,
    };
    out->results = results_build(recs, &b->summary, &meta);
    json_decref(meta.config);
    out->interrupted = interrupted;
    if (!out->results) { json_decref(cost); dist_merged_free(&m); telemetry_free(tel); snprintf(err, errlen, "out of memory while computing the summary"); return DS_ERUN; }
    json_object_set_new(out->results, "interrupted", json_boolean(interrupted));
    json_object_set_new(out->results, "client", cost);
    if (b->server_identity) json_object_set(out->results, "server", b->server_identity);
    add_token_sources(out->results, recs, b->client.counter.name);
    if (b->n_classes) add_class_summaries(out->results, recs, b, d ? m.cls : NULL);
    if (tel) {
        double out_tokens = json_number_value(json_object_get(out->results, "total_output_tokens"));
        json_object_set_new(out->results, "telemetry", telemetry_series_json(tel, lo.start_ns));
        json_object_set_new(out->results, "telemetry_summary", telemetry_summary_json(tel, lo.start_ns, lo.end_ns, out_tokens));
        telemetry_free(tel);
        workload_add_metrics_hit_rate(out->results);
    }
    if (d) {
        if (m.telemetry) json_object_set(out->results, "telemetry", m.telemetry);
        if (m.telemetry_summary) json_object_set(out->results, "telemetry_summary", m.telemetry_summary);
        json_object_set(out->results, "dist", m.section);
        dist_merged_free(&m);
    }
    results_env_gpus_from_telemetry(out->results);
    add_deployment(out->results, b);
    if (b->sim_served) {
        /* against the simulator the measured figures are its predictions (plus loopback transit):
         * the interval of the deployment it simulates, in a section of its own, beside them */
        json_t *pi = sim_served_interval(out->results, b->sim_calibrated, b->sim_speedup, b->sim_engine_profile, b->sim_gpu);
        json_object_set_new(out->results, "prediction_interval", pi);
    }
    validity_judge(out->results, b->max_error_rate, NULL, 0);
    return DS_OK;
}

/* bench's stop: a signal during the run ends it, and what finished is written, marked partial */
static ds_stop_flag g_bench_stop;
static void bench_signal(int sig) { (void)sig; g_bench_stop = 1; }

/* The leader of `dsperf bench`: prepares, joins a job's ranks, runs the plan once and hands the
 * result to the command's report. */
static ds_result bench_lead(void *ctx, bench_opts *b) {
    const bench_job_hooks *h = ctx;
    dataset *ds = NULL;
    char *model = NULL;
    ds_result rc = run_job_join(b, bench_prepare(b, &ds, &model));
    if (rc != DS_OK) {
        dataset_free(ds);
        free(model);
        return rc;
    }
    struct sigaction sa = { .sa_handler = bench_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    const char *ranks = "";
    char job[64] = "";
    if (b->dist) { snprintf(job, sizeof job, " over %d MPI ranks", run_job_size(b)); ranks = job; }
    if (b->plan.concurrency) log_info("bench %s model %s: closed loop, %d users, %s%s", b->client.base_url, b->client.model, b->plan.concurrency, b->dataset_spec, ranks);
    else log_info("bench %s model %s: open loop, %.3g req/s %s%s, %s%s", b->client.base_url, b->client.model, b->plan.arr.rate_per_s,
                  b->arrival_spec, b->plan.max_concurrency ? " (max-concurrency capped)" : "", b->dataset_spec, ranks);
    recset recs;
    recset_init(&recs);
    bench_result br;
    char err[1024];
    bool tty = isatty(STDERR_FILENO) && !b->quiet && !b->no_progress;
    if ((rc = bench_run_once(b, ds, &g_bench_stop, tty, &recs, &br, err, sizeof err)) != DS_OK) {
        log_error("%s", err);
    } else {
        rc = h->report(h->ctx, b, &br, &recs);
        json_decref(br.results);
    }
    recset_free(&recs);
    dataset_free(ds);
    if (b->client.model == model) b->client.model = NULL;
    free(model);
    return rc;
}

ds_result bench_run_job(bench_opts *b, const bench_job_hooks *h) {
    run_job_parts parts = { .check = h->check, .check_ctx = h->ctx, .lead = bench_lead, .lead_ctx = (void *)h };
    return run_job(b, &parts);
}
