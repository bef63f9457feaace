/* run/sim — one offline simulated run (see sim.h): the load plan, the engine on its virtual clock,
 * the results document; calibration and validation. */
#include "run/sim.h"
#include "engine/sim_interval.h"
#include "common/rng.h"
#include "deploy/deploy.h"
#include "engine/sim_calibrate.h"
#include "engine/sim_run.h"
#include "engine/sim_validate.h"
#include "load/arrival.h"
#include "results/results.h"
#include "results/validity.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void run_sim_defaults(run_sim_opts *o) {
    memset(o, 0, sizeof *o);
    sim_default_params(&o->sim);
    fixed_default_params(&o->fixed_p);
    summary_default_opts(&o->summary);
    o->dataset = "random:in=1024,out=128";
    o->dso.tolerance = 0.05;
    o->arrival = "poisson";
    o->requests = 1000;
    o->output_len = 128;
    o->seed = 1;
    o->transit = true;
    o->max_error_rate = VALIDITY_DEFAULT_MAX_ERROR_RATE;
}

void run_sim_result_free(run_sim_result *r) {
    json_decref(r->doc);
    r->doc = NULL;
    recset_free(&r->recs);
}

static json_t *engine_section(engine *e, const sim_params *p, const sim_series *ser) {
    sim_info info;
    engine_stats st;
    sim_get_info(e, &info);
    engine_get_stats(e, &st);
    json_t *o = json_pack("{s:s,s:I,s:f,s:f,s:I,s:I,s:I,s:I,s:I,s:f}", "name", "sim",
        "kv_blocks", (json_int_t)info.total_blocks, "weight_bytes_per_gpu", info.weight_bytes_per_gpu,
        "kv_bytes_per_token", info.kv_bytes_per_token, "preemptions_total", (json_int_t)st.preemptions_total,
        "steps_total", (json_int_t)st.steps_total, "prompt_tokens_total", (json_int_t)st.prompt_tokens_total,
        "generation_tokens_total", (json_int_t)st.generation_tokens_total,
        "prefill_tokens_total", (json_int_t)info.prefill_tokens_total, "busy_s", info.busy_s);
    json_object_set_new(o, "kv_tokens", json_integer((json_int_t)info.total_blocks * p->block_size));
    json_object_set_new(o, "engine_profile", json_string(p->engine_profile));
    /* prefix cache: prompt tokens found cached over prompt tokens looked up (vLLM's hit rate) */
    json_object_set_new(o, "prefix_cache_queries_tokens", json_integer(info.prefix_query_tokens));
    json_object_set_new(o, "prefix_cache_hit_tokens", json_integer(info.prefix_hit_tokens));
    json_object_set_new(o, "prefix_cache_hit_rate", info.prefix_query_tokens > 0
                        ? json_real((double)info.prefix_hit_tokens / info.prefix_query_tokens) : json_null());
    /* llama-server's attention window (profile kv_window): cells every step attended, idle slots' included */
    if (info.window_token_s > 0 && info.busy_s > 0)
        json_object_set_new(o, "kv_window_tokens_mean", json_real(info.window_token_s / info.busy_s));
    if (p->prefill_instances > 0) {
        json_object_set_new(o, "kv_transfers", json_integer(info.kv_transfers));
        json_object_set_new(o, "kv_transfer_ms_mean", info.kv_transfers ? json_real(info.kv_transfer_s / info.kv_transfers * 1e3) : json_null());
        json_object_set_new(o, "prefill_busy_s", json_real(info.prefill_busy_s));
    }
    /* the scheduler's CPU cost per step and per sequence that this engine profile pays */
    engine_profile prof;
    int have_prof = sim_params_profile(p, &prof) == 0;
    /* the factors the run used: an uncalibrated llama.cpp b4747 loop's at its host speed */
    cost_factors used = p->factors;
    cost_apply_loop_prior(&used, have_prof && prof.expert_loop);
    json_object_set_new(o, "factors", sim_params_factors_json(&used));
    if (have_prof) {
        cost_factors f = p->factors;
        json_object_set_new(o, "step_overhead_s", json_real(prof.python ? *cost_step_overhead_of(&f, prof.sched) : 0));
        json_object_set_new(o, "seq_overhead_s", json_real(prof.python ? *cost_seq_overhead_of(&f, prof.sched) : 0));
    }
    /* sampled gauges in a few numbers, for diagnosis at a glance */
    double kv_max = 0, run_sum = 0;
    long long wait_max = 0, run_max = 0;
    for (size_t i = 0; i < ser->n; i++) {
        if (ser->kv_usage[i] > kv_max) kv_max = ser->kv_usage[i];
        if (ser->waiting[i] > wait_max) wait_max = ser->waiting[i];
        if (ser->running[i] > run_max) run_max = ser->running[i];
        run_sum += ser->running[i];
    }
    json_object_set_new(o, "kv_usage_max", json_real(kv_max));
    json_object_set_new(o, "waiting_max", json_integer(wait_max));
    json_object_set_new(o, "running_max", json_integer(run_max));
    json_object_set_new(o, "running_mean", json_real(ser->n ? run_sum / ser->n : 0));
    json_object_set_new(o, "max_num_seqs", json_integer(p->max_num_seqs));
    json_object_set_new(o, "series", sim_series_json(ser));
    return o;
}

/* The same flat keys as bench's config (so compare and report read both), plus "sim": the engine
 * settings. */
typedef struct {
    const char *dataset, *arrival;
    double rate;
    int concurrency, max_concurrency;
    size_t requests, warmup;
    int64_t think_ns;
    uint64_t seed;
} load_desc;

static json_t *config_section(const sim_params *p, const load_desc *l) {
    json_t *c = json_object();
    const char *model = sim_params_model_name(p);
    json_object_set_new(c, "url", json_string("sim"));
    json_object_set_new(c, "model", json_string(model));
    json_object_set_new(c, "load", json_string(l->concurrency ? "closed" : "open"));
    if (l->concurrency) json_object_set_new(c, "concurrency", json_integer(l->concurrency));
    else {
        json_object_set_new(c, "rate_per_s", isinf(l->rate) || l->rate <= 0 ? json_null() : json_real(l->rate));
        json_object_set_new(c, "arrival", json_string(isinf(l->rate) ? "all-at-once" : l->arrival));
        json_object_set_new(c, "max_concurrency", l->max_concurrency ? json_integer(l->max_concurrency) : json_null());
    }
    json_object_set_new(c, "requests", json_integer((json_int_t)(l->requests - l->warmup)));
    json_object_set_new(c, "warmup", json_integer((json_int_t)l->warmup));
    json_object_set_new(c, "think_s", json_real(l->think_ns / 1e9));
    json_object_set_new(c, "seed", json_integer((json_int_t)l->seed));
    json_object_set_new(c, "dataset", json_string(l->dataset));
    json_object_set_new(c, "ignore_eos", json_true());
    json_object_set_new(c, "sim", json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:i,s:i,s:i,s:f,s:b,s:i,s:i,s:f,s:s}",
        "model", model, "gpu", p->gpu, "tp", p->tp, "ep", p->ep, "weight_dtype", p->weight_dtype,
        "kv_dtype", p->kv_dtype, "max_num_seqs", p->max_num_seqs, "max_num_batched_tokens", sim_params_batch_tokens(p),
        "block_size", p->block_size, "gpu_memory_utilization", p->gpu_memory_utilization,
        "chunked_prefill", p->chunked_prefill, "scheduler_recv_interval", p->recv_interval_steps,
        "batch_wait_iters", p->batch_wait_iters, "batch_wait_max_tokens_ratio", p->batch_wait_tokens_ratio,
        "scheduling_policy", p->priority_scheduling ? "priority" : "fcfs"));
    if (p->arch_set) json_object_set_new(json_object_get(c, "sim"), "architecture", model_arch_to_hf_json(&p->arch));
    json_object_set_new(json_object_get(c, "sim"), "engine_profile", json_string(p->engine_profile));
    return c;
}

ds_result run_sim(const run_sim_opts *o, run_sim_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    recset_init(&out->recs);
    bool replay = !strcmp(o->arrival, "trace");
    double rate = o->rate_per_s;
    long long n_req = o->requests;
    if (o->duration_ns > 0 && !o->requests_given) n_req = (long long)ceil(rate * o->duration_ns / 1e9);
    arrival arr;
    if (!replay && o->concurrency == 0 && !isinf(rate) && arrival_parse(o->arrival, rate, &arr) < 0) {
        snprintf(err, errlen, "--arrival '%s': expected poisson, gamma:K, constant or trace", o->arrival);
        return DS_EINVAL;
    }
    /* as bench: warm-up requests come first and add to --requests */
    size_t n = (size_t)(n_req + o->warmup);
    if (!o->requests_given && strncmp(o->dataset, "random", 6)) n = 0;   /* a file: every line once */
    sim_load ld;
    char why[512];
    if (sim_load_open(o->dataset, n, o->seed, o->output_len, &o->dso, &ld, why, sizeof why) < 0) {
        snprintf(err, errlen, "--dataset: %s", why);
        return DS_EINVAL;
    }
    n = ld.n;
    const sim_sessions *sess = ld.sess.n ? &ld.sess : NULL;
    if (sess && (o->requests_given || replay || o->duration_ns > 0)) {
        snprintf(err, errlen, "a sessions dataset runs its n= conversations: --requests, --duration and --arrival trace do not apply");
        sim_load_free(&ld);
        return DS_EINVAL;
    }
    if (sess && (size_t)o->warmup >= n) {
        snprintf(err, errlen, "--warmup counts conversations with a sessions dataset: %lld of %zu leaves none measured", o->warmup, n);
        sim_load_free(&ld);
        return DS_EINVAL;
    }
    if (replay && !ld.stamps_ns) {
        snprintf(err, errlen, "--arrival trace needs a dataset with a timestamp on every line (jsonl:FILE or mooncake:FILE)");
        sim_load_free(&ld);
        return DS_EINVAL;
    }
    int64_t *times = NULL;
    if (replay) {
        /* bench's trace pacing (load/arrival.h) */
        times = ld.stamps_ns;
        ld.stamps_ns = NULL;
        arrival_trace_schedule(times, n);
    }
    sim_params p = o->sim;
    fixed_params fp = o->fixed_p;
    fp.seed = o->seed;
    engine *e = o->fixed ? engine_fixed_create(&fp, err, errlen) : engine_sim_create(&p, err, errlen);
    if (!e) {
        sim_load_free(&ld);
        free(times);
        return DS_EINVAL;
    }
    ds_result rc = DS_OK;
    sim_series ser;
    memset(&ser, 0, sizeof ser);
    json_t *doc = NULL, *cfg = NULL;
    summary_opts so = o->summary;
    rng g;
    rng_seed(&g, o->seed);
    if (o->concurrency == 0 && !replay) {
        if (!(times = calloc(n ? n : 1, sizeof *times))) goto oom;
        if (!isinf(rate)) arrival_schedule(&arr, &g, 0, times, n);
    }
    sim_workload w = {.n = n, .arrival_ns = times, .concurrency = o->concurrency, .think_ns = o->think_ns,
                      .prefix_group = ld.groups, .prefix_len = ld.prefix_len, .ds = ld.ds, .sessions = sess,
                      .block_tokens = p.block_size, .max_concurrency = o->max_concurrency, .in_tokens = ld.ins,
                      .max_tokens = ld.outs, .warmup = (size_t)o->warmup,
                      .turnaround_ns = o->transit ? SIM_TURNAROUND_NS : 0,
                      .ingest_ns_per_token = o->transit ? SIM_INGEST_NS_PER_TOKEN : 0, .transit_seed = o->seed + 1};
    if (o->transit) sim_params_add_request_path(&p, &w.ingest_fixed_ns, &w.ingest_ns_per_token);
    so.max_concurrency = o->max_concurrency;
    if (sess) so.session_turns = sess->turns;
    if (sim_run(e, &w, &out->recs, &ser, err, errlen) < 0) {
        rc = DS_ERUN;
        goto done;
    }
    if (o->concurrency == 0 && !isinf(rate) && !replay) so.intended_rate_per_s = rate;
    if (times && n) so.planned_duration_ns = times[n - 1];
    load_desc desc = {.dataset = o->dataset, .arrival = replay ? "trace" : o->arrival, .rate = rate,
                      .concurrency = o->concurrency, .max_concurrency = o->max_concurrency, .requests = n,
                      .warmup = (size_t)o->warmup, .think_ns = o->think_ns, .seed = o->seed};
    if (sess) {   /* conversations: the requests are their turns */
        desc.requests = out->recs.n;
        desc.warmup = 0;
        for (size_t i = 0; i < out->recs.n; i++) desc.warmup += out->recs.v[i].warmup;
    }
    cfg = config_section(&p, &desc);
    if (!o->fixed) {
        /* what a prediction needs to redo this deployment: the context limit and the memory overrides */
        json_t *sc = json_object_get(cfg, "sim");
        json_object_set_new(sc, "max_model_len", json_integer(p.max_model_len));
        json_object_set_new(sc, "num_gpu_blocks", json_integer(p.num_gpu_blocks));
        json_object_set_new(sc, "reserved_bytes", json_real(p.reserved_bytes));
    } else {
        /* no simulated DeepSeek deployment here: the fixed engine's timing instead */
        json_object_del(cfg, "sim");
        json_object_set_new(cfg, "fixed", json_pack("{s:f,s:f,s:f,s:i,s:i,s:f,s:f}", "ttft_ms", fp.ttft_ns / 1e6,
            "itl_ms", fp.itl_ns / 1e6, "prefill_per_token_ms", fp.prefill_per_token_ns / 1e6, "capacity", fp.capacity,
            "tokens_per_chunk", fp.tokens_per_chunk, "jitter", fp.jitter, "jitter_per_stream", fp.jitter_per_stream));
    }
    results_meta meta = {.producer = "sim", .command_line = o->command_line ? o->command_line : "", .config = cfg};
    doc = results_build(&out->recs, &so, &meta);
    if (!doc) goto oom;
    json_object_set_new(doc, "engine", o->fixed ? json_pack("{s:s,s:o}", "name", "fixed", "series", sim_series_json(&ser))
                                                : engine_section(e, &p, &ser));
    if (!o->fixed) json_object_set_new(doc, "prediction_interval", sim_interval_json(doc, p.calibrated));
    json_t *tel = json_object_get(doc, "telemetry");
    if (!json_is_object(tel)) {
        tel = json_object();
        json_object_set_new(tel, "interval_s", json_real(ser.interval_ns / 1e9));
        json_object_set_new(doc, "telemetry", tel);
    }
    json_object_set_new(tel, "server", sim_series_server_json(&ser));
    json_object_set_new(doc, "interrupted", json_false());
    if (!o->fixed && !p.prefix_caching)
        out->prefix_hit_bound = json_number_value(json_object_get(json_object_get(doc, "prefix_cache"), "hit_rate_bound"));
    /* the same run policy as bench (results/validity.h) */
    out->judged_failed = validity_judge(doc, o->max_error_rate, out->why, sizeof out->why) != 0;
    if (!o->fixed) sim_get_info(e, &out->info);
    engine_get_stats(e, &out->stats);
    int64_t first = out->recs.n ? out->recs.v[0].send_ns : 0, last = first;
    for (size_t i = 0; i < out->recs.n; i++) if (out->recs.v[i].end_ns > last) last = out->recs.v[i].end_ns;
    out->span_ns = last - first;
    out->doc = doc;
    doc = NULL;
    goto done;
oom:
    snprintf(err, errlen, "out of memory");
    rc = DS_ENOMEM;
done:
    json_decref(doc);
    json_decref(cfg);
    sim_series_free(&ser);
    free(times);
    sim_load_free(&ld);
    engine_destroy(e);
    return rc;
}

/* The setup flags left open, from what the measured run res stated about its deployment (a
 * results document, or the sweep level calibrated on): *p filled in, and what was taken in said ("" when
 * none: a per-request JSONL, a run that stated nothing, every key given). -1 with err when the run
 * cannot calibrate the simulator at all: its server kept weights off the GPU (the host's CPU ran
 * those layers; the simulator models servers whose layers are all on their GPUs). */
static int setup_from_run(const json_t *res, sim_params *p, char *said, size_t saidlen, char *err, size_t errlen) {
    said[0] = 0;
    deploy d;
    char e[256], sim_prof[160] = "";
    /* a simulated run names its engine profile (engine.engine_profile) */
    const char *ep = json_string_value(json_object_get(json_object_get(res, "engine"), "engine_profile"));
    unsigned given = p->given;
    if (ep && !(given & SIM_GIVEN_PROFILE) && sim_params_set(p, "engine-profile", ep, e, sizeof e) == 0)
        snprintf(sim_prof, sizeof sim_prof, "engine profile %s (the simulated run's engine.engine_profile); ", ep);
    bool resolved = json_is_object(res) && deploy_resolve(res, NULL, &d, e, sizeof e) == 0;
    char off[400];
    if (resolved && deploy_weights_off_gpu(&d, off, sizeof off)) {
        snprintf(err, errlen, "the run's server did not have all its weights on the GPU (%s): the simulator models a server "
                 "whose layers all run on its GPUs, so this run cannot calibrate it; measure a server with every layer on "
                 "the GPU%s", off, strcmp(d.engine, "llama.cpp") ? "" : " (llama-server -ngl 99)");
        return -1;
    }
    if (resolved) deploy_sim_setup(&d, p, said, saidlen);
    p->given = given;
    if (sim_prof[0]) {
        size_t n = strlen(sim_prof), m = strlen(said);
        if (n + m < saidlen) { memmove(said + n, said, m + 1); memcpy(said, sim_prof, n); }
    }
    return 0;
}

/* A sweep calibrates on one level (--calibrate-at, or its lowest load): say which, and how many
 * runs of that load the sweep holds (--repeats), which `sim --validate SWEEP.json` calibrates on
 * together. */
static void say_sweep_level(const json_t *doc, size_t i, int lowest, const char *file, FILE *out) {
    const json_t *levels = json_object_get(doc, "levels");
    double base = json_number_value(json_object_get(json_array_get(levels, i), "load"));
    const char *axis = json_string_value(json_object_get(doc, "axis"));
    char at[64];
    if (axis && !strcmp(axis, "concurrency")) snprintf(at, sizeof at, "c = %g", base);
    else if (axis && !strcmp(axis, "rate")) snprintf(at, sizeof at, "%g req/s", base);
    else snprintf(at, sizeof at, "%s %g", axis ? axis : "load", base);
    size_t k, runs = 0;
    const json_t *lv;
    json_array_foreach(levels, k, lv) runs += json_number_value(json_object_get(lv, "load")) == base;
    const char *which = lowest ? "lowest load" : "level";
    if (runs > 1)
        fprintf(out, "Calibrating on the sweep's %s (%s), the first of its %zu runs (`dsperf sim --validate %s` "
                "calibrates on all of them and predicts their mean)\n", which, at, runs, file);
    else
        fprintf(out, "Calibrating on the sweep's %s (%s)\n", which, at);
}

ds_result run_sim_calibrate(const sim_params *given, const char *file, const char *requests_jsonl, double at_load,
                            const char *profile_out, FILE *summary, char *err, size_t errlen) {
    sim_calibration cal;
    char why[1024], said[1024];
    sim_params setup = *given, *p = &setup;
    json_t *doc = json_load_file(file, 0, NULL);   /* NULL for a per-request JSONL: nothing to take */
    long level = -1;
    if (at_load > 0 && requests_jsonl) {
        json_decref(doc);
        snprintf(err, errlen, "calibrate: --requests-jsonl holds one run's requests, and --calibrate-at picks a sweep's level: "
                 "pass one of them");
        return DS_EINVAL;
    }
    if (val_is_sweep(doc) && !requests_jsonl) {
        level = sim_sweep_level_at(doc, at_load, why, sizeof why);
        if (level < 0) {
            json_decref(doc);
            snprintf(err, errlen, "calibrate: %s: %s", file, why);
            return DS_EINVAL;
        }
    } else if (at_load > 0) {
        json_decref(doc);
        snprintf(err, errlen, "calibrate: --calibrate-at picks a level of a sweep, and %s is not a sweep (dsperf sweep's JSON); "
                 "drop --calibrate-at", file);
        return DS_EINVAL;
    }
    const json_t *res = level >= 0 ? json_object_get(json_array_get(json_object_get(doc, "levels"), (size_t)level), "results")
                                   : sim_run_results(doc);
    if (setup_from_run(res, p, said, sizeof said, why, sizeof why) < 0) {
        json_decref(doc);
        snprintf(err, errlen, "calibrate: %s", why);
        return DS_EINVAL;
    }
    if (summary && said[0]) fprintf(summary, "The run's deployment: %s\n", said);
    int rc;
    if (level >= 0) {
        /* a sweep's level: its server as the levels before left it (llama-server's slots keep KV) */
        if (summary) say_sweep_level(doc, (size_t)level, !(at_load > 0), file, summary);
        sim_sweep_level_server(doc, (size_t)level, p);
        rc = sim_calibrate_results(p, res, &cal, why, sizeof why);
    } else {
        rc = sim_calibrate_from_files(p, file, requests_jsonl, &cal, why, sizeof why);
    }
    json_decref(doc);
    if (rc < 0) {
        snprintf(err, errlen, "calibrate: %s", why);
        return rc == -2 ? DS_EINVAL : DS_ERUN;
    }
    if (sim_calibration_write(&cal, p, profile_out, err, errlen) < 0) return DS_ERUN;
    if (summary) sim_calibration_print(summary, &cal, profile_out);
    return DS_OK;
}

ds_result run_sim_validate(const char *path, const sim_params *p, double at_load, bool fit, bool loo, FILE *out, FILE *progress,
                           char *err, size_t errlen) {
    char why[1024];
    val_table *t;
    json_t *doc = json_load_file(path, 0, NULL);   /* read once: the setup and the levels come from it */
    if (val_is_sweep(doc)) {   /* a measured sweep: calibrate on one load (the lowest), predict the rest */
        sim_params setup = *p;
        char said[1024];
        long level = sim_sweep_level_at(doc, at_load, why, sizeof why);
        int rc = level < 0 ? -1 : setup_from_run(json_object_get(json_array_get(json_object_get(doc, "levels"), (size_t)level), "results"),
                                                  &setup, said, sizeof said, why, sizeof why);
        if (rc == 0 && said[0]) fprintf(out, "the sweep's deployment: %s\n", said);
        if (rc == 0) rc = val_sweep(doc, path, &setup, at_load, out, why, sizeof why);
        json_decref(doc);
        if (rc == 0) return DS_OK;
        snprintf(err, errlen, "--validate: %s", why);
        return DS_EINVAL;
    }
    json_decref(doc);
    if (at_load > 0) {
        snprintf(err, errlen, "--calibrate-at picks the level of a sweep to calibrate on, and %s is a published table: drop it", path);
        return DS_EINVAL;
    }
    if (val_load(path, &t, why, sizeof why) < 0) {
        snprintf(err, errlen, "--validate: %s", why);
        return DS_EINVAL;
    }
    cost_factors f = p->factors;
    if (f.request_s == 0 && f.request_token_s == 0) {
        /* the published TTFTs carry the server's path: the table is predicted with the fitted one */
        f.request_s = COST_REQUEST_FIT_S;
        f.request_token_s = COST_REQUEST_TOKEN_FIT_S;
    }
    ds_result rc = DS_OK;
    if (loo) {
        if (val_loo(t, out, why, sizeof why) < 0) { snprintf(err, errlen, "--loo: %s", why); rc = DS_ERUN; }
        val_free(t);
        return rc;
    }
    if (fit) {
        val_prior_factors(&f);
        if (val_fit(t, &f, -1, progress, why, sizeof why) < 0) { snprintf(err, errlen, "--fit: %s", why); val_free(t); return DS_ERUN; }
    } else if (val_run(t, &f, why, sizeof why) < 0) {
        snprintf(err, errlen, "--validate: %s", why);
        val_free(t);
        return DS_ERUN;
    }
    fprintf(out, "IN-SAMPLE: every row at the %s (their errors measure the fit, not prediction; the headline is below)\n",
            fit ? "parameters just fitted on all rows" : "default parameters, fitted on the rows of engine generations <= 2025");
    val_print(out, t);
    if (fit) {
        fprintf(out, "\nfitted mechanism parameters:\n");
        val_print_factors(out, &f);
    } else {
        fprintf(out, "\n");
        if (val_logo(t, out, 2025, why, sizeof why) < 0) { snprintf(err, errlen, "--validate: %s", why); rc = DS_ERUN; }
    }
    val_free(t);
    return rc;
}
