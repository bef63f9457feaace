/* cmd_sim — `dsperf sim`: the simulated DeepSeek engine offline. Builds the load plan (open-loop
 * arrivals or a closed loop of users, request lengths from the dataset spec), runs the engine on
 * a virtual clock as fast as the CPU allows, and writes the same summary and results JSON as
 * `bench`, plus the engine's own series under "engine". Also `--calibrate`: fits the cost model's
 * efficiency factors to a measured run and saves them as a profile. */
#include "cli/cli.h"
#include "cli/bench_opts.h"
#include "cli/history_opts.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/units.h"
#include "engine/fixed.h"
#include "engine/sim.h"
#include "cli/sim_sweep.h"
#include "engine/sim_calibrate.h"
#include "engine/sim_run.h"
#include "engine/sim_validate.h"
#include "engine/sim_interval.h"
#include "load/arrival.h"
#include "results/results.h"
#include "results/validity.h"
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *f) {
    fprintf(f,
        "usage: dsperf sim [options]\n"
        "Runs the simulated vLLM-like engine serving a DeepSeek model on a virtual clock and reports\n"
        "the same metrics and results JSON as `dsperf bench`, plus engine series (running, waiting,\n"
        "KV usage, preemptions, step time, batch tokens).\n\n"
        "Load:\n"
        "  --dataset SPEC             random:in=N,out=M[,range=F] (default random:in=1024,out=128; the same\n"
        "                             lengths bench draws for the seed without a tokenizer), jsonl:FILE,\n"
        "                             sharegpt:FILE, prefix:groups=G,prefix=P,suffix=S,out=M (lengths in words;\n"
        "                             with --prefix-caching on a group's shared prompt is cached),\n"
        "                             lognormal:in=MEAN,out=MEAN[,sigma=S,max_in=N,max_total=N] (ShareGPT-like),\n"
        "                             mooncake:FILE (a Mooncake trace: its hash ids go to the prefix cache; the\n"
        "                             whole trace unless --requests says less; --arrival trace replays its times)\n"
        "                             or sessions:n=N,turns=T,first=P,user=U,out=M,think=D,system=S (N\n"
        "                             conversations; each turn sends the history with the engine's answers, so\n"
        "                             with --prefix-caching on the history is cached; --concurrency: users,\n"
        "                             --rate: conversation starts; lengths in tokens as given, no template)\n"
        "  --trace-block-size N       tokens per hash id of a mooncake trace (512, as in bench and trace)\n"
        "  --time-scale F             multiply trace timestamps by F (0.5: twice as fast)\n"
        "  --trace-window A..B        replay the trace's requests from A to B after its first (10m..20m)\n"
        "  --output-len N             max_tokens for jsonl items without one (128)\n"
        "  --rate R/s | inf           open-loop arrival rate (inf: all at once)\n"
        "  --arrival KIND             poisson (default), gamma:K, constant, or trace (the jsonl timestamps)\n"
        "  --max-concurrency N        open loop: cap in-flight requests; the excess waits in a measured\n"
        "                             client queue\n"
        "  --concurrency N            closed loop: N users instead of --rate\n"
        "  --think DUR                closed loop: pause between a user's requests (0)\n"
        "  --requests N               measured requests (1000; a jsonl file: each line once)\n"
        "  --duration DUR             open loop: requests = rate x duration\n"
        "  --warmup N                 extra requests first, excluded from statistics (0)\n"
        "  --seed S                   seed for arrivals and lengths (1)\n"
        "  --transit on|off           the way to the engine as over HTTP: prompt upload and parse (50 ns per\n"
        "                             token) and a seeded turnaround (exponential, mean 0.3 ms), so same-time\n"
        "                             bursts reach it small bodies first and closed loops do not run in\n"
        "                             lockstep (on)\n"
        "Output:\n"
        "  --out FILE                 results JSON (schema dsperf.results/1, producer \"sim\")\n"
        "  --save-requests FILE       per-request JSONL (as bench)\n"
        "  --percentiles LIST         (50,90,95,99,99.9)\n"
        "  --slo ttft=200ms,tpot=50ms,e2el=10s   goodput SLOs, any subset (as bench)\n"
        "  --max-error-rate F         failed requests above this share fail the run: exit 1, as bench\n"
        "                             (default 1%%)\n"
        "  --quiet                    no summary on stdout\n"
        "  --db PATH, --label K=V     record the run in the results history (dsperf history --help)\n"
        "Calibration:\n"
        "  --calibrate FILE           fit bw_eff, step overhead and compute_eff to a measured run: its\n"
        "                             per-request JSONL (bench --save-requests), or its results JSON\n"
        "                             (coarser: bw_eff only); the flags above/below give the setup;\n"
        "                             writes the profile to --profile-out (default profile.json)\n"
        "  --requests-jsonl FILE      per-request JSONL of the run being calibrated against\n"
        "  --profile-out FILE\n"
        "Ladders (a sweep document, dsperf.sweep/1, one simulated run per level):\n"
        "  --input-len LADDER         prompt lengths, e.g. 1k..128k x2 (k = 1024), at one --concurrency or --rate\n"
        "  --output-len LADDER        output lengths likewise (one value: max_tokens as below)\n"
        "  --concurrency LADDER, --rate LADDER   a load ladder, e.g. 1..64x2 (as dsperf sweep)\n"
        "  --stability-score S        itl-cv (default), tpot-tail or throughput-cv (see dsperf sweep --help)\n"
        "Engine:\n"
        "  --engine sim|fixed         the simulated DeepSeek engine (default), or serve's fixed-timing engine on\n"
        "                             the virtual clock with its options (--ttft --itl --jitter\n"
        "                             --jitter-per-stream --capacity ...; see dsperf serve --help)\n"
        "Validation against published deployments:\n"
        "  --validate TABLE           simulate every row of a published-measurements table (data/published.json)\n"
        "                             and print predicted vs published, the error per metric, the median and\n"
        "                             the worst per target (TPOT, per-GPU output throughput, low-load TTFT);\n"
        "                             the headline is leave-one-group-out, with 80%% intervals' coverage\n"
        "  --validate SWEEP.json      a measured concurrency sweep: calibrate on its lowest load (with the\n"
        "                             setup flags), predict every level, print measured vs predicted\n"
        "  --fit                      with --validate: fit the mechanism parameters (per-kernel time, eager\n"
        "                             launch, scheduler cost, collective latency, MoE kernel efficiency) to\n"
        "                             the table first, and print them\n"
        "  --loo                      with --validate: leave-one-out (fit without each row, predict it)\n"
        "Engine and hardware:\n%s\n"
        "examples:\n"
        "  dsperf sim --model deepseek-v2-lite --gpu h200 --tp 1 --dataset random:in=1024,out=128 \\\n"
        "             --rate 20/s --requests 5000 --out results.json\n"
        "  dsperf sim --model deepseek-v3 --gpu h200 --tp 8 --kv-dtype fp8 --concurrency 256 --requests 2000\n"
        "  dsperf sim --calibrate measured.requests.jsonl --model deepseek-v2-lite --gpu h200 --profile-out h200.json\n"
        "  dsperf sim --profile h200.json --rate 30/s\n",
        sim_params_help());
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
    if (p->prefill_instances > 0) {
        json_object_set_new(o, "kv_transfers", json_integer(info.kv_transfers));
        json_object_set_new(o, "kv_transfer_ms_mean", info.kv_transfers ? json_real(info.kv_transfer_s / info.kv_transfers * 1e3) : json_null());
        json_object_set_new(o, "prefill_busy_s", json_real(info.prefill_busy_s));
    }
    json_object_set_new(o, "factors", sim_params_factors_json(&p->factors));
    /* the scheduler's CPU cost per step and per sequence that this engine profile pays */
    engine_profile prof;
    if (sim_params_profile(p, &prof) == 0) {
        cost_factors f = p->factors;
        json_object_set_new(o, "step_overhead_s", json_real(prof.python ? *cost_step_overhead_of(&f, &prof) : 0));
        json_object_set_new(o, "seq_overhead_s", json_real(prof.python ? *cost_seq_overhead_of(&f, &prof) : 0));
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
    const char *model = p->model_config[0] ? p->model_config : p->model;
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
    json_object_set_new(c, "sim", json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:i,s:i,s:i,s:f,s:b,s:s}",
        "model", model, "gpu", p->gpu, "tp", p->tp, "ep", p->ep, "weight_dtype", p->weight_dtype,
        "kv_dtype", p->kv_dtype, "max_num_seqs", p->max_num_seqs, "max_num_batched_tokens", p->max_num_batched_tokens,
        "block_size", p->block_size, "gpu_memory_utilization", p->gpu_memory_utilization,
        "chunked_prefill", p->chunked_prefill, "scheduling_policy", p->priority_scheduling ? "priority" : "fcfs"));
    return c;
}

static void print_engine(FILE *f, engine *e, const sim_params *p, int64_t span_ns) {
    sim_info info;
    engine_stats st;
    sim_get_info(e, &info);
    engine_get_stats(e, &st);
    fprintf(f, "%s\n", "============ Simulated engine ============");
    fprintf(f, "%-40s%-10s\n", "Model / GPU:", p->model_config[0] ? p->model_config : p->model);
    fprintf(f, "%-40s%d x %s%s\n", "GPUs (TP):", p->tp, p->gpu, p->prefill_instances > 0 ? " (decode instance)" : "");
    fprintf(f, "%-40s%lld (%lld tokens)\n", "KV blocks:", info.total_blocks, info.total_blocks * p->block_size);
    fprintf(f, "%-40s%lld\n", "Engine steps:", (long long)st.steps_total);
    fprintf(f, "%-40s%.2f\n", "Mean tokens per step:",
            st.steps_total ? (double)(info.prefill_tokens_total + st.generation_tokens_total) / st.steps_total : 0);
    fprintf(f, "%-40s%.1f%%\n", "Engine busy:", span_ns > 0 ? 100 * info.busy_s / (span_ns / 1e9) : 0);
    fprintf(f, "%-40s%lld\n", "Preemptions:", (long long)st.preemptions_total);
    fprintf(f, "%-40s%s\n", "Engine profile:", p->engine_profile);
    fprintf(f, "%-40sTPOT x/%.2f, throughput x/%.2f, TTFT x/%.1f (%s)\n", "80% interval:", exp(sim_interval_q(SIM_IV_TPOT, p->calibrated)),
            exp(sim_interval_q(SIM_IV_TPUT, p->calibrated)), exp(sim_interval_q(SIM_IV_TTFT, p->calibrated)),
            p->calibrated ? "calibrate-then-predict errors" : "errors on published deployments outside the fit");
    if (info.prefix_query_tokens > 0)
        fprintf(f, "%-40s%.1f%%\n", "Prefix cache hit rate (tokens):", 100.0 * info.prefix_hit_tokens / info.prefix_query_tokens);
    if (p->prefill_instances > 0)
        fprintf(f, "%-40s%lld, %.2f ms mean\n", "KV transfers (PD):", (long long)info.kv_transfers,
                info.kv_transfers ? info.kv_transfer_s / info.kv_transfers * 1e3 : 0);
    fprintf(f, "%s\n", "==================================================");
}

/* --validate: the published table, simulated with the current factors (or fitted ones). */
static int run_validate(const char *path, const sim_params *p, int fit, int loo, int quiet) {
    char err[512];
    val_table *t;
    if (val_is_sweep(path)) {   /* a measured sweep: calibrate on its lowest load, predict the rest */
        if (val_sweep(path, p, stdout, err, sizeof err) == 0) return EXIT_OK;
        log_error("sim: --validate: %s", err);
        return EXIT_USAGE;
    }
    if (val_load(path, &t, err, sizeof err) < 0) {
        log_error("sim: --validate: %s", err);
        return EXIT_USAGE;
    }
    cost_factors f = p->factors;
    int rc = EXIT_OK;
    if (loo) {
        if (val_loo(t, stdout, err, sizeof err) < 0) { log_error("sim: --loo: %s", err); rc = EXIT_RUN_FAILED; }
        val_free(t);
        return rc;
    }
    if (fit) {
        val_prior_factors(&f);
        if (val_fit(t, &f, -1, quiet ? NULL : stderr, err, sizeof err) < 0) { log_error("sim: --fit: %s", err); val_free(t); return EXIT_RUN_FAILED; }
    } else if (val_run(t, &f, err, sizeof err) < 0) {
        log_error("sim: --validate: %s", err);
        val_free(t);
        return EXIT_RUN_FAILED;
    }
    printf("IN-SAMPLE: every row at the %s (their errors measure the fit, not prediction; the headline is below)\n",
           fit ? "parameters just fitted on all rows" : "default parameters, fitted on the rows of engine generations <= 2025");
    val_print(stdout, t);
    if (fit) {
        printf("\nfitted mechanism parameters:\n");
        val_print_factors(stdout, &f);
    } else {
        printf("\n");
        if (val_logo(t, stdout, 2025, err, sizeof err) < 0) { log_error("sim: --validate: %s", err); rc = EXIT_RUN_FAILED; }
    }
    val_free(t);
    return rc;
}

enum { O_DATASET = 1000, O_RATE, O_ARRIVAL, O_CONC, O_REQUESTS, O_DURATION, O_WARMUP, O_SEED, O_OUT, O_REQ_OUT,
       O_PCT, O_OUTPUT_LEN, O_MAXCONC, O_THINK, O_SLO, O_SLO_TTFT, O_SLO_TPOT, O_SLO_E2EL, O_QUIET, O_CALIBRATE, O_REQ_JSONL, O_PROFILE_OUT, O_HELP, O_MAXERR,
       O_DB, O_LABEL,
       O_VALIDATE, O_FIT, O_LOO, O_TRANSIT, O_TBLOCK, O_TSCALE, O_TWINDOW, O_ENGINE, O_SIM = 2000, O_FIXED = 3000 };

/* The simulator's keys and the fixed engine's in one getopt table: key i of sim_params_keys() is
 * O_SIM + i, key j of fixed_params_keys() O_FIXED + j. */
static struct option *sim_options(const struct option *own, size_t n_own) {
    const char *const *sk = sim_params_keys(), *const *fk = fixed_params_keys();
    size_t ns = 0, nf = 0;
    while (sk[ns]) ns++;
    while (fk[nf]) nf++;
    struct option *a = cli_options_with_keys(own, n_own, sk, O_SIM);
    struct option *o = a ? realloc(a, (n_own + ns + nf + 1) * sizeof *o) : NULL;
    if (!o) { free(a); return NULL; }
    for (size_t j = 0; j < nf; j++) o[n_own + ns + j] = (struct option){ fk[j], required_argument, 0, O_FIXED + (int)j };
    memset(&o[n_own + ns + nf], 0, sizeof *o);
    return o;
}

int cmd_sim(int argc, char **argv) {
    /* a ladder of prompt lengths, output lengths or loads: one run of this command per level */
    if (sim_sweep_wanted(argc, argv)) return sim_sweep_main(argc, argv);
    static const struct option own[] = {
        {"dataset", required_argument, 0, O_DATASET}, {"rate", required_argument, 0, O_RATE},
        {"request-rate", required_argument, 0, O_RATE}, {"arrival", required_argument, 0, O_ARRIVAL},
        {"concurrency", required_argument, 0, O_CONC}, {"requests", required_argument, 0, O_REQUESTS},
        {"num-prompts", required_argument, 0, O_REQUESTS}, {"duration", required_argument, 0, O_DURATION},
        {"warmup", required_argument, 0, O_WARMUP}, {"seed", required_argument, 0, O_SEED},
        {"out", required_argument, 0, O_OUT},
        {"percentiles", required_argument, 0, O_PCT}, {"slo-ttft", required_argument, 0, O_SLO_TTFT},
        {"slo-tpot", required_argument, 0, O_SLO_TPOT}, {"slo-e2el", required_argument, 0, O_SLO_E2EL},
        {"quiet", no_argument, 0, O_QUIET}, {"calibrate", required_argument, 0, O_CALIBRATE},
        {"requests-jsonl", required_argument, 0, O_REQ_JSONL}, {"profile-out", required_argument, 0, O_PROFILE_OUT},
        {"output-len", required_argument, 0, O_OUTPUT_LEN}, {"max-concurrency", required_argument, 0, O_MAXCONC},
        {"think", required_argument, 0, O_THINK}, {"slo", required_argument, 0, O_SLO},
        {"save-requests", required_argument, 0, O_REQ_OUT}, {"engine", required_argument, 0, O_ENGINE},
        {"help", no_argument, 0, O_HELP}, {"max-error-rate", required_argument, 0, O_MAXERR},
        {"validate", required_argument, 0, O_VALIDATE}, {"fit", no_argument, 0, O_FIT}, {"loo", no_argument, 0, O_LOO},
        {"trace-block-size", required_argument, 0, O_TBLOCK}, {"time-scale", required_argument, 0, O_TSCALE},
        {"trace-window", required_argument, 0, O_TWINDOW}, {"transit", required_argument, 0, O_TRANSIT},
        {"db", required_argument, 0, O_DB}, {"label", required_argument, 0, O_LABEL},
    };
    const char *const *keys = sim_params_keys(), *const *fkeys = fixed_params_keys();
    struct option *opts = sim_options(own, sizeof own / sizeof own[0]);
    if (!opts) return EXIT_RUN_FAILED;

    sim_params p;
    sim_default_params(&p);
    fixed_params fp;
    fixed_default_params(&fp);
    const char *engine_name = "sim", *sim_opt = NULL, *fixed_opt = NULL;
    summary_opts so;
    summary_default_opts(&so);
    history_opts hist;
    history_opts_init(&hist);
    const char *dataset = "random:in=1024,out=128", *arrival_spec = "poisson", *out_path = NULL, *req_out = NULL;
    const char *calibrate = NULL, *req_jsonl = NULL, *profile_out = "profile.json", *validate = NULL;
    int fit = 0, loo = 0;
    double rate = 0, max_error_rate = VALIDITY_DEFAULT_MAX_ERROR_RATE;
    long long concurrency = 0, n_req = 1000, warmup = 0, seed = 1, output_len = 128, max_conc = 0;
    int64_t think_ns = 0;
    int64_t duration_ns = 0, ns;
    dataset_opts dso = {.tolerance = 0.05};
    long long trace_block = 0;
    int quiet = 0, c, idx = 0, n_req_given = 0, rc = EXIT_USAGE, transit = 1;
    char err[512];
    optind = 1;
    opterr = 0;
    cli_option_table("sim", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((c = getopt_long(argc, argv, "", opts, &idx)) != -1) {
        int bad = 0;
        switch (c) {
        case O_HELP: usage(stdout); free(opts); return EXIT_OK;
        case O_DATASET: dataset = optarg; break;
        case O_RATE:
            if (!strcmp(optarg, "inf")) rate = INFINITY;
            else bad = units_parse_rate_per_s(optarg, &rate) || rate <= 0;
            break;
        case O_ARRIVAL: arrival_spec = optarg; break;
        case O_CONC: bad = units_parse_int(optarg, 1, 1 << 20, &concurrency); break;
        case O_REQUESTS: bad = units_parse_int(optarg, 1, 100000000, &n_req); n_req_given = 1; break;
        case O_DURATION: bad = units_parse_duration_ns(optarg, &duration_ns) || duration_ns <= 0; break;
        case O_WARMUP: bad = units_parse_int(optarg, 0, 100000000, &warmup); break;
        case O_SEED: bad = units_parse_int(optarg, 0, INT64_MAX, &seed); break;
        case O_TRANSIT:
            if (!strcmp(optarg, "on")) transit = 1;
            else if (!strcmp(optarg, "off")) transit = 0;
            else bad = 1;
            break;
        case O_OUT: out_path = optarg; break;
        case O_REQ_OUT: req_out = optarg; break;
        case O_PCT: bad = summary_parse_percentiles(&so, optarg); break;
        case O_OUTPUT_LEN: bad = units_parse_int(optarg, 1, 1 << 24, &output_len); break;
        case O_MAXCONC: bad = units_parse_int(optarg, 1, 1 << 24, &max_conc); break;
        case O_THINK: bad = units_parse_duration_ns(optarg, &think_ns); break;
        case O_SLO: bad = summary_parse_slo(&so, optarg); break;
        case O_SLO_TTFT: bad = units_parse_duration_ns(optarg, &ns); so.slo_ttft_ms = ns / 1e6; break;
        case O_SLO_TPOT: bad = units_parse_duration_ns(optarg, &ns); so.slo_tpot_ms = ns / 1e6; break;
        case O_SLO_E2EL: bad = units_parse_duration_ns(optarg, &ns); so.slo_e2el_ms = ns / 1e6; break;
        case O_QUIET: quiet = 1; break;
        case O_MAXERR: bad = validity_parse_rate(optarg, &max_error_rate); break;
        case O_CALIBRATE: calibrate = optarg; break;
        case O_REQ_JSONL: req_jsonl = optarg; break;
        case O_PROFILE_OUT: profile_out = optarg; break;
        case O_DB: case O_LABEL:
            if (history_opts_apply(&hist, c == O_DB ? "db" : "label", optarg) != 0) { free(opts); return EXIT_USAGE; }
            break;
        case O_ENGINE:
            engine_name = optarg;
            bad = strcmp(optarg, "sim") && strcmp(optarg, "fixed");
            break;
        case O_VALIDATE: validate = optarg; break;
        case O_FIT: fit = 1; break;
        case O_LOO: loo = 1; break;
        case O_TBLOCK: bad = units_parse_int(optarg, 1, 1 << 20, &trace_block); dso.block_tokens = (int32_t)trace_block; break;
        case O_TSCALE: bad = units_parse_double(optarg, &dso.time_scale) || !(dso.time_scale > 0) || dso.time_scale > 1e6; break;
        case O_TWINDOW: bad = bench_opts_parse_window(optarg, &dso.window_start_ns, &dso.window_end_ns) < 0; break;
        case '?':
            cli_bad_option("sim", opts, argc, argv, optind, optopt);
            free(opts);
            return EXIT_USAGE;
        default: {
            bool fixed_key = c >= O_FIXED;
            const char *key = fixed_key ? fkeys[c - O_FIXED] : keys[c - O_SIM];
            int r = fixed_key ? fixed_params_set(&fp, key, optarg, err, sizeof err) : sim_params_set(&p, key, optarg, err, sizeof err);
            if (r != 0) { log_error("sim: %s", err); free(opts); return EXIT_USAGE; }
            if (fixed_key) fixed_opt = key;
            else sim_opt = key;
        }
        }
        if (bad) {
            log_error("sim: bad value '%s' for --%s; see dsperf sim --help", optarg, opts[idx].name);
            free(opts);
            return EXIT_USAGE;
        }
    }
    free(opts);
    if (optind < argc) {
        log_error("sim: unexpected argument '%s'", argv[optind]);
        return EXIT_USAGE;
    }
    bool fixed = !strcmp(engine_name, "fixed");
    if ((fixed && sim_opt) || (!fixed && fixed_opt)) {
        log_error("sim: --%s is an option of --engine %s; give --engine %s or drop it", fixed ? sim_opt : fixed_opt,
                  fixed ? "sim" : "fixed", fixed ? "sim" : "fixed");
        return EXIT_USAGE;
    }
    if (fixed && calibrate) { log_error("sim: --calibrate fits the simulated engine; drop --engine fixed"); return EXIT_USAGE; }
    if ((fit || loo) && !validate) {
        log_error("sim: --fit and --loo go with --validate TABLE");
        return EXIT_USAGE;
    }
    if (validate) return run_validate(validate, &p, fit, loo, quiet);
    if (cli_check_output("--out", out_path) || cli_check_output("--save-requests", req_out) ||
        cli_check_output("--profile-out", profile_out))
        return EXIT_USAGE;
    if (!calibrate && history_opts_check(&hist) != EXIT_OK) return EXIT_USAGE;
    if (calibrate) {
        sim_calibration cal;
        if (sim_calibrate_from_files(&p, calibrate, req_jsonl, &cal, err, sizeof err) < 0) {
            log_error("sim: calibrate: %s", err);
            return EXIT_RUN_FAILED;
        }
        if (sim_calibration_write(&cal, &p, profile_out, err, sizeof err) < 0) {
            log_error("sim: %s", err);
            return EXIT_RUN_FAILED;
        }
        if (!quiet) sim_calibration_print(stdout, &cal, profile_out);
        return EXIT_OK;
    }
    int replay = !strcmp(arrival_spec, "trace");
    if (concurrency > 0 && (rate > 0 || replay)) {
        log_error("sim: give --rate/--arrival trace (open loop) or --concurrency (closed loop), not both");
        return EXIT_USAGE;
    }
    if (concurrency == 0 && rate == 0 && !replay) {
        log_error("sim: give --rate R/s (open loop), --concurrency N (closed loop) or --arrival trace");
        return EXIT_USAGE;
    }
    if (duration_ns > 0) {
        if (concurrency > 0 || replay || isinf(rate)) { log_error("sim: --duration needs a finite --rate"); return EXIT_USAGE; }
        if (!n_req_given) n_req = (long long)ceil(rate * duration_ns / 1e9);
    }
    arrival arr;
    if (!replay && concurrency == 0 && !isinf(rate) && arrival_parse(arrival_spec, rate, &arr) < 0) {
        log_error("sim: --arrival '%s': expected poisson, gamma:K, constant or trace", arrival_spec);
        return EXIT_USAGE;
    }
    /* as bench: warm-up requests come first and add to --requests */
    size_t n = (size_t)(n_req + warmup);
    if (!n_req_given && strncmp(dataset, "random", 6)) n = 0;   /* a file: every line once */
    int64_t *times = NULL;
    sim_load ld;
    if (sim_load_open(dataset, n, (uint64_t)seed, (int32_t)output_len, &dso, &ld, err, sizeof err) < 0) {
        log_error("sim: --dataset: %s", err);
        return EXIT_USAGE;
    }
    n = ld.n;
    const sim_sessions *sess = ld.sess.n ? &ld.sess : NULL;
    if (sess && (n_req_given || replay || duration_ns > 0)) {
        log_error("sim: a sessions dataset runs its n= conversations: --requests, --duration and --arrival trace do not apply");
        sim_load_free(&ld);
        return EXIT_USAGE;
    }
    if (sess && (size_t)warmup >= n) {
        log_error("sim: --warmup counts conversations with a sessions dataset: %lld of %zu leaves none measured", warmup, n);
        sim_load_free(&ld);
        return EXIT_USAGE;
    }
    if (replay && !ld.stamps_ns) {
        log_error("sim: --arrival trace needs a dataset with a timestamp on every line (jsonl:FILE or mooncake:FILE)");
        sim_load_free(&ld);
        return EXIT_USAGE;
    }
    if (replay) {
        /* bench's trace pacing: the gap between consecutive items, 0 when time goes back (or the
         * file wraps around) */
        times = ld.stamps_ns;
        ld.stamps_ns = NULL;
        int64_t t = 0, prev = times[0];
        times[0] = 0;
        for (size_t i = 1; i < n; i++) {
            int64_t cur = times[i];
            t += cur > prev ? cur - prev : 0;
            prev = cur;
            times[i] = t;
        }
    }
    fp.seed = (uint64_t)seed;
    engine *e = fixed ? engine_fixed_create(&fp, err, sizeof err) : engine_sim_create(&p, err, sizeof err);
    if (!e) {
        log_error("sim: %s", err);
        sim_load_free(&ld);
        free(times);
        return EXIT_USAGE;
    }
    recset recs;
    recset_init(&recs);
    sim_series ser;
    memset(&ser, 0, sizeof ser);
    json_t *doc = NULL, *cfg = NULL;
    char *cmdline = NULL;
    rng g;
    rng_seed(&g, (uint64_t)seed);
    if (concurrency == 0 && !replay) {
        if (!(times = calloc(n, sizeof *times))) goto oom;
        if (!isinf(rate)) arrival_schedule(&arr, &g, 0, times, n);
    }
    if (max_conc > 0 && concurrency > 0) {
        log_error("sim: --max-concurrency caps an open loop; with --concurrency the users are the cap");
        rc = EXIT_USAGE;
        goto done;
    }
    sim_workload w = {.n = n, .arrival_ns = times, .concurrency = (int)concurrency, .think_ns = think_ns,
                      .prefix_group = ld.groups, .prefix_len = ld.prefix_len, .ds = ld.ds, .sessions = sess,
                      .block_tokens = p.block_size, .max_concurrency = (int)max_conc, .in_tokens = ld.ins,
                      .max_tokens = ld.outs, .warmup = (size_t)warmup,
                      .turnaround_ns = transit ? SIM_TURNAROUND_NS : 0, .ingest_ns_per_token = transit ? SIM_INGEST_NS_PER_TOKEN : 0,
                      .transit_seed = (uint64_t)seed + 1};
    so.max_concurrency = (int)max_conc;
    if (sess) so.session_turns = sess->turns;
    if (sim_run(e, &w, &recs, &ser, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
        goto done;
    }
    if (concurrency == 0 && !isinf(rate) && !replay) so.intended_rate_per_s = rate;
    if (times && n) so.planned_duration_ns = times[n - 1];
    cmdline = cli_command_line(argc, argv);   /* argv[0] is "sim" */
    load_desc desc = {.dataset = dataset, .arrival = replay ? "trace" : arrival_spec, .rate = rate,
                      .concurrency = (int)concurrency, .max_concurrency = (int)max_conc, .requests = n,
                      .warmup = (size_t)warmup, .think_ns = think_ns, .seed = (uint64_t)seed};
    if (sess) {   /* conversations: the requests are their turns */
        desc.requests = recs.n;
        desc.warmup = 0;
        for (size_t i = 0; i < recs.n; i++) desc.warmup += recs.v[i].warmup;
    }
    cfg = config_section(&p, &desc);
    if (!fixed) {
        /* what a prediction needs to redo this deployment: the context limit and the memory overrides */
        json_t *sc = json_object_get(cfg, "sim");
        json_object_set_new(sc, "max_model_len", json_integer(p.max_model_len));
        json_object_set_new(sc, "num_gpu_blocks", json_integer(p.num_gpu_blocks));
        json_object_set_new(sc, "reserved_bytes", json_real(p.reserved_bytes));
    }
    if (fixed) {
        /* no simulated DeepSeek deployment here: the fixed engine's timing instead */
        json_object_del(cfg, "sim");
        json_object_set_new(cfg, "fixed", json_pack("{s:f,s:f,s:f,s:i,s:i,s:f,s:f}", "ttft_ms", fp.ttft_ns / 1e6,
            "itl_ms", fp.itl_ns / 1e6, "prefill_per_token_ms", fp.prefill_per_token_ns / 1e6, "capacity", fp.capacity,
            "tokens_per_chunk", fp.tokens_per_chunk, "jitter", fp.jitter, "jitter_per_stream", fp.jitter_per_stream));
    }
    results_meta meta = {.producer = "sim", .command_line = cmdline, .config = cfg};
    doc = results_build(&recs, &so, &meta);
    if (!doc) goto oom;
    json_object_set_new(doc, "engine", fixed ? json_pack("{s:s,s:o}", "name", "fixed", "series", sim_series_json(&ser))
                                             : engine_section(e, &p, &ser));
    if (!fixed) json_object_set_new(doc, "prediction_interval", sim_interval_json(doc, p.calibrated));
    json_t *tel = json_object_get(doc, "telemetry");
    if (!json_is_object(tel)) {
        tel = json_object();
        json_object_set_new(tel, "interval_s", json_real(ser.interval_ns / 1e9));
        json_object_set_new(doc, "telemetry", tel);
    }
    json_object_set_new(tel, "server", sim_series_server_json(&ser));
    if (sim_sweep_capture) *sim_sweep_capture = json_incref(doc);   /* a level of sim_sweep */
    rc = EXIT_OK;
    json_object_set_new(doc, "interrupted", json_false());
    double bound = json_number_value(json_object_get(json_object_get(doc, "prefix_cache"), "hit_rate_bound"));
    if (!fixed && !p.prefix_caching && bound > 0)
        log_info("sim: this workload allows a %.1f%% prefix-cache hit rate; --prefix-caching on models it (vLLM V1 "
                 "caches by default)", 100 * bound);
    /* the same warnings and exit code as bench (results/validity.h) */
    char why[400];
    rc = validity_judge(doc, max_error_rate, why, sizeof why) ? EXIT_RUN_FAILED : EXIT_OK;
    if (out_path && results_write_json(out_path, doc, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
    }
    if (req_out && results_write_requests_jsonl(req_out, &recs, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
    }
    if (history_opts_record(&hist, doc, NULL, 0) != EXIT_OK) rc = EXIT_RUN_FAILED;
    if (!quiet) {
        results_print_summary(cli_summary_stream(), doc);
        int64_t first = recs.n ? recs.v[0].send_ns : 0, last = first;
        for (size_t i = 0; i < recs.n; i++) if (recs.v[i].end_ns > last) last = recs.v[i].end_ns;
        if (!fixed) print_engine(cli_summary_stream(), e, &p, last - first);
    }
    if (rc == EXIT_RUN_FAILED && why[0]) log_error("sim: %s", why);
    goto done;
oom:
    log_error("sim: out of memory");
    rc = EXIT_RUN_FAILED;
done:
    json_decref(doc);
    json_decref(cfg);
    free(cmdline);
    sim_series_free(&ser);
    recset_free(&recs);
    free(times);
    sim_load_free(&ld);
    engine_destroy(e);
    return rc;
}
