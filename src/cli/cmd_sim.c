/* cmd_sim — `dsperf sim`: the simulated DeepSeek engine offline. Builds the load plan (open-loop
 * arrivals or a closed loop of users, request lengths from the dataset spec), runs the engine on
 * a virtual clock as fast as the CPU allows, and writes the same summary and results JSON as
 * `bench`, plus the engine's own series under "engine". Also `--calibrate`: fits the cost model's
 * efficiency factors to a measured run and saves them as a profile. */
#include "cli/cli.h"
#include "common/log.h"
#include "common/rng.h"
#include "common/units.h"
#include "engine/sim.h"
#include "engine/sim_calibrate.h"
#include "engine/sim_run.h"
#include "load/arrival.h"
#include "results/results.h"
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
        "  --dataset SPEC             random:in=N,out=M[,range=F] (lengths; default random:in=1024,out=128)\n"
        "  --rate R/s | inf           open-loop arrival rate (inf: all at once)\n"
        "  --arrival KIND             poisson (default), gamma:K, constant\n"
        "  --concurrency N            closed loop: N users instead of --rate\n"
        "  --requests N               requests to simulate (1000)\n"
        "  --duration DUR             open loop: requests = rate x duration\n"
        "  --warmup N                 first N requests excluded from statistics\n"
        "  --seed S                   seed for arrivals and lengths (1)\n"
        "Output:\n"
        "  --out FILE                 results JSON (schema dsperf.results/1, producer \"sim\")\n"
        "  --requests-out FILE        per-request JSONL\n"
        "  --percentiles LIST         (50,90,95,99,99.9)\n"
        "  --slo-ttft DUR, --slo-tpot DUR, --slo-e2el DUR   goodput SLOs\n"
        "  --quiet                    no summary on stdout\n"
        "Calibration:\n"
        "  --calibrate FILE           fit efficiency factors and step overhead to a measured results\n"
        "                             JSON (with --requests-jsonl FILE of the same run for per-request\n"
        "                             fits); writes the profile to --profile-out (default profile.json)\n"
        "  --requests-jsonl FILE      per-request JSONL of the run being calibrated against\n"
        "  --profile-out FILE\n"
        "Engine and hardware:\n%s\n"
        "examples:\n"
        "  dsperf sim --model deepseek-v2-lite --gpu h200 --tp 1 --dataset random:in=1024,out=128 \\\n"
        "             --rate 20/s --requests 5000 --out results.json\n"
        "  dsperf sim --model deepseek-v3 --gpu h200 --tp 8 --kv-dtype fp8 --concurrency 256 --requests 2000\n"
        "  dsperf sim --calibrate measured.json --requests-jsonl measured.requests.jsonl --profile-out h200.json\n"
        "  dsperf sim --profile h200.json --rate 30/s\n",
        sim_params_help());
}

/* "random:in=1024,out=128,range=0.1" — lengths only: the simulator needs no prompt text, which
 * keeps 100k-request runs cheap. */
static int parse_random(const char *spec, int *in, int *out, double *range) {
    if (strncmp(spec, "random", 6)) return -1;
    const char *s = spec + 6;
    *in = 1024;
    *out = 128;
    *range = 0;
    if (!*s) return 0;
    if (*s++ != ':') return -1;
    char buf[256];
    snprintf(buf, sizeof buf, "%s", s);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        char *eq = strchr(tok, '=');
        if (!eq) return -1;
        *eq = 0;
        long long v;
        double d;
        if (!strcmp(tok, "in") && !units_parse_int(eq + 1, 1, 1 << 24, &v)) *in = (int)v;
        else if (!strcmp(tok, "out") && !units_parse_int(eq + 1, 1, 1 << 24, &v)) *out = (int)v;
        else if (!strcmp(tok, "range") && !units_parse_double(eq + 1, &d) && d >= 0 && d < 1) *range = d;
        else return -1;
    }
    return 0;
}

static int32_t draw_len(rng *g, int base, double range) {
    if (range <= 0) return base;
    int lo = (int)floor(base * (1 - range)), hi = (int)ceil(base * (1 + range));
    if (lo < 1) lo = 1;
    return lo + (int32_t)rng_below(g, (uint64_t)(hi - lo + 1));
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
    json_object_set_new(o, "factors", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f}", "bw_eff", p->factors.bw_eff,
        "compute_eff", p->factors.compute_eff, "link_eff", p->factors.link_eff, "step_overhead_s",
        p->factors.step_overhead_s, "comm_latency_s", p->factors.comm_latency_s, "expert_skew", p->factors.expert_skew));
    json_object_set_new(o, "series", sim_series_json(ser));
    return o;
}

static json_t *config_section(const sim_params *p, const char *dataset, double rate, const char *arrival_spec,
                              int concurrency, size_t n, uint64_t seed) {
    json_t *t = json_pack("{s:s,s:s,s:s,s:i,s:i,s:s,s:s,s:i,s:i,s:i,s:f,s:b}", "engine", "sim",
        "model", p->model_config[0] ? p->model_config : p->model, "gpu", p->gpu, "tp", p->tp, "ep", p->ep,
        "weight_dtype", p->weight_dtype, "kv_dtype", p->kv_dtype, "max_num_seqs", p->max_num_seqs,
        "max_num_batched_tokens", p->max_num_batched_tokens, "block_size", p->block_size,
        "gpu_memory_utilization", p->gpu_memory_utilization, "chunked_prefill", p->chunked_prefill);
    json_t *load = json_object();
    if (concurrency > 0) json_object_set_new(load, "concurrency", json_integer(concurrency));
    else {
        json_object_set_new(load, "rate_per_s", isinf(rate) ? json_string("inf") : json_real(rate));
        json_object_set_new(load, "arrival", json_string(arrival_spec));
    }
    json_object_set_new(load, "requests", json_integer((json_int_t)n));
    json_object_set_new(load, "seed", json_integer((json_int_t)seed));
    return json_pack("{s:s,s:o,s:s,s:o}", "target", "sim", "sim", t, "dataset", dataset, "load", load);
}

static void print_engine(FILE *f, engine *e, const sim_params *p, int64_t span_ns) {
    sim_info info;
    engine_stats st;
    sim_get_info(e, &info);
    engine_get_stats(e, &st);
    fprintf(f, "%s\n", "============ Simulated engine ============");
    fprintf(f, "%-40s%-10s\n", "Model / GPU:", p->model_config[0] ? p->model_config : p->model);
    fprintf(f, "%-40s%d x %s\n", "GPUs (TP):", p->tp, p->gpu);
    fprintf(f, "%-40s%lld (%lld tokens)\n", "KV blocks:", info.total_blocks, info.total_blocks * p->block_size);
    fprintf(f, "%-40s%lld\n", "Engine steps:", (long long)st.steps_total);
    fprintf(f, "%-40s%.2f\n", "Mean tokens per step:",
            st.steps_total ? (double)(info.prefill_tokens_total + st.generation_tokens_total) / st.steps_total : 0);
    fprintf(f, "%-40s%.1f%%\n", "Engine busy:", span_ns > 0 ? 100 * info.busy_s / (span_ns / 1e9) : 0);
    fprintf(f, "%-40s%lld\n", "Preemptions:", (long long)st.preemptions_total);
    fprintf(f, "%s\n", "==================================================");
}

enum { O_DATASET = 1000, O_RATE, O_ARRIVAL, O_CONC, O_REQUESTS, O_DURATION, O_WARMUP, O_SEED, O_OUT, O_REQ_OUT,
       O_PCT, O_SLO_TTFT, O_SLO_TPOT, O_SLO_E2EL, O_QUIET, O_CALIBRATE, O_REQ_JSONL, O_PROFILE_OUT, O_HELP,
       O_SIM = 2000 };

int cmd_sim(int argc, char **argv) {
    static const struct option own[] = {
        {"dataset", required_argument, 0, O_DATASET}, {"rate", required_argument, 0, O_RATE},
        {"request-rate", required_argument, 0, O_RATE}, {"arrival", required_argument, 0, O_ARRIVAL},
        {"concurrency", required_argument, 0, O_CONC}, {"requests", required_argument, 0, O_REQUESTS},
        {"num-prompts", required_argument, 0, O_REQUESTS}, {"duration", required_argument, 0, O_DURATION},
        {"warmup", required_argument, 0, O_WARMUP}, {"seed", required_argument, 0, O_SEED},
        {"out", required_argument, 0, O_OUT}, {"requests-out", required_argument, 0, O_REQ_OUT},
        {"percentiles", required_argument, 0, O_PCT}, {"slo-ttft", required_argument, 0, O_SLO_TTFT},
        {"slo-tpot", required_argument, 0, O_SLO_TPOT}, {"slo-e2el", required_argument, 0, O_SLO_E2EL},
        {"quiet", no_argument, 0, O_QUIET}, {"calibrate", required_argument, 0, O_CALIBRATE},
        {"requests-jsonl", required_argument, 0, O_REQ_JSONL}, {"profile-out", required_argument, 0, O_PROFILE_OUT},
        {"help", no_argument, 0, O_HELP},
    };
    const size_t n_own = sizeof own / sizeof own[0];
    const char *const *keys = sim_params_keys();
    size_t n_keys = 0;
    while (keys[n_keys]) n_keys++;
    struct option *opts = calloc(n_own + n_keys + 1, sizeof *opts);
    if (!opts) return EXIT_RUN_FAILED;
    memcpy(opts, own, sizeof own);
    for (size_t i = 0; i < n_keys; i++) opts[n_own + i] = (struct option){keys[i], required_argument, 0, O_SIM + (int)i};

    sim_params p;
    sim_default_params(&p);
    summary_opts so;
    summary_default_opts(&so);
    const char *dataset = "random:in=1024,out=128", *arrival_spec = "poisson", *out_path = NULL, *req_out = NULL;
    const char *calibrate = NULL, *req_jsonl = NULL, *profile_out = "profile.json";
    double rate = 0;
    long long concurrency = 0, n_req = 1000, warmup = 0, seed = 1;
    int64_t duration_ns = 0, ns;
    int quiet = 0, c, idx, n_req_given = 0, rc = EXIT_USAGE;
    char err[512];
    optind = 1;
    opterr = 0;
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
        case O_OUT: out_path = optarg; break;
        case O_REQ_OUT: req_out = optarg; break;
        case O_PCT: bad = summary_parse_percentiles(&so, optarg); break;
        case O_SLO_TTFT: bad = units_parse_duration_ns(optarg, &ns); so.slo_ttft_ms = ns / 1e6; break;
        case O_SLO_TPOT: bad = units_parse_duration_ns(optarg, &ns); so.slo_tpot_ms = ns / 1e6; break;
        case O_SLO_E2EL: bad = units_parse_duration_ns(optarg, &ns); so.slo_e2el_ms = ns / 1e6; break;
        case O_QUIET: quiet = 1; break;
        case O_CALIBRATE: calibrate = optarg; break;
        case O_REQ_JSONL: req_jsonl = optarg; break;
        case O_PROFILE_OUT: profile_out = optarg; break;
        case '?':
            log_error("sim: unknown or incomplete option '%s'; see dsperf sim --help", argv[optind - 1]);
            free(opts);
            return EXIT_USAGE;
        default: {
            int r = sim_params_set(&p, keys[c - O_SIM], optarg, err, sizeof err);
            if (r != 0) { log_error("sim: %s", err); free(opts); return EXIT_USAGE; }
        }
        }
        if (bad) {
            log_error("sim: bad value '%s' for %s; see dsperf sim --help", optarg, argv[optind - 1]);
            free(opts);
            return EXIT_USAGE;
        }
    }
    free(opts);
    if (optind < argc) {
        log_error("sim: unexpected argument '%s'", argv[optind]);
        return EXIT_USAGE;
    }
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
    if (concurrency > 0 && rate > 0) {
        log_error("sim: give --rate (open loop) or --concurrency (closed loop), not both");
        return EXIT_USAGE;
    }
    if (concurrency == 0 && rate == 0) {
        log_error("sim: give --rate R/s (open loop) or --concurrency N (closed loop)");
        return EXIT_USAGE;
    }
    if (duration_ns > 0) {
        if (concurrency > 0 || isinf(rate)) { log_error("sim: --duration needs a finite --rate"); return EXIT_USAGE; }
        if (!n_req_given) n_req = (long long)ceil(rate * duration_ns / 1e9);
    }
    int in_len, out_len;
    double range;
    if (parse_random(dataset, &in_len, &out_len, &range) < 0) {
        log_error("sim: --dataset '%s': expected random:in=N,out=M[,range=F] with 0 <= F < 1", dataset);
        return EXIT_USAGE;
    }
    arrival arr;
    if (concurrency == 0 && !isinf(rate) && arrival_parse(arrival_spec, rate, &arr) < 0) {
        log_error("sim: --arrival '%s': expected poisson, gamma:K or constant", arrival_spec);
        return EXIT_USAGE;
    }
    engine *e = engine_sim_create(&p, err, sizeof err);
    if (!e) {
        log_error("sim: %s", err);
        return EXIT_USAGE;
    }
    size_t n = (size_t)n_req;
    int64_t *times = NULL;
    int32_t *ins = malloc(sizeof(int32_t) * n), *outs = malloc(sizeof(int32_t) * n);
    recset recs;
    recset_init(&recs);
    sim_series ser;
    memset(&ser, 0, sizeof ser);
    json_t *doc = NULL, *cfg = NULL;
    char *cmdline = NULL;
    rng g;
    rng_seed(&g, (uint64_t)seed);
    if (!ins || !outs) goto oom;
    if (concurrency == 0) {
        if (!(times = calloc(n, sizeof *times))) goto oom;
        if (!isinf(rate)) arrival_schedule(&arr, &g, 0, times, n);
    }
    rng lg;
    rng_seed(&lg, (uint64_t)seed ^ 0x5eed1e57ull);
    for (size_t i = 0; i < n; i++) {
        ins[i] = draw_len(&lg, in_len, range);
        outs[i] = draw_len(&lg, out_len, range);
    }
    sim_workload w = {.n = n, .arrival_ns = times, .concurrency = (int)concurrency, .in_tokens = ins,
                      .max_tokens = outs, .warmup = (size_t)warmup};
    if (sim_run(e, &w, &recs, &ser, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
        goto done;
    }
    if (concurrency == 0 && !isinf(rate)) {
        so.intended_rate_per_s = rate;
        so.planned_duration_ns = times[n - 1];
    }
    {
        char *args = cli_join_argv(argc, argv);   /* argv[0] is "sim" */
        if (!args || asprintf(&cmdline, "dsperf %s", args) < 0) cmdline = NULL;
        free(args);
    }
    cfg = config_section(&p, dataset, rate, arrival_spec, (int)concurrency, n, (uint64_t)seed);
    results_meta meta = {.producer = "sim", .command_line = cmdline, .config = cfg};
    doc = results_build(&recs, &so, &meta);
    if (!doc) goto oom;
    json_object_set_new(doc, "engine", engine_section(e, &p, &ser));
    rc = EXIT_OK;
    if (out_path && results_write_json(out_path, doc, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
    }
    if (req_out && results_write_requests_jsonl(req_out, &recs, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
    }
    if (!quiet) {
        results_print_summary(stdout, doc);
        int64_t first = recs.n ? recs.v[0].send_ns : 0, last = first;
        for (size_t i = 0; i < recs.n; i++) if (recs.v[i].end_ns > last) last = recs.v[i].end_ns;
        print_engine(stdout, e, &p, last - first);
    }
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
    free(ins);
    free(outs);
    engine_destroy(e);
    return rc;
}
