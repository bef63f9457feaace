/* cmd_sim — `dsperf sim`: the simulated DeepSeek engine offline. Parses the options into the run
 * layer's run_sim_opts (run/sim.h) or, for a ladder of lengths or loads, run_sim_ladder_opts
 * (run/sim_ladder.h), calls it, and prints the same summary as `bench` plus the engine's own
 * account. Also `--calibrate` and `--validate` (run/sim.h). cli_sim_parse_flags is the same parser
 * for tune's --sim-flags. */
#include "cli/cli.h"
#include "cli/bench_opts.h"
#include "run/history_opts.h"
#include "common/log.h"
#include "common/units.h"
#include "run/sim.h"
#include "run/sim_ladder.h"
#include "engine/sim_interval.h"
#include "results/results.h"
#include "results/validity.h"
#include "sweep/context.h"
#include "sweep/stability.h"
#include "common/fileio.h"
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
        "                             lognormal:in=MEAN,out=MEAN[,sigma=S,out_sigma=S,max_in=N,max_total=N]\n"
        "                             (ShareGPT-like; out_sigma=0: every output the mean),\n"
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
        "                             (coarser: bw_eff only), or a sweep (its lowest load); the flags\n"
        "                             above/below give the setup; writes the profile to --profile-out\n"
        "                             (default profile.json)\n"
        "  --calibrate-at LOAD        with --calibrate SWEEP.json or --validate SWEEP.json: calibrate on\n"
        "                             the sweep's level at this load (users or req/s) instead of the lowest\n"
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
        "  --validate SWEEP.json      a measured sweep (--concurrency or --rate): calibrate on its lowest\n"
        "                             load or --calibrate-at's (with the setup flags; a sweep run with\n"
        "                             --repeats: each run of it calibrates, the predictions are their\n"
        "                             mean), predict every measured level, print measured vs\n"
        "                             predicted (a level whose server found prompts cached is simulated\n"
        "                             with that share already computed; median TTFT and ITL are shown,\n"
        "                             not scored); refused for a run whose server kept weights off the GPU\n"
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

static void print_engine(FILE *f, const run_sim_result *r, const sim_params *p) {
    const sim_info *info = &r->info;
    const engine_stats *st = &r->stats;
    fprintf(f, "%s\n", "============ Simulated engine ============");
    fprintf(f, "%-40s%-10s\n", "Model / GPU:", sim_params_model_name(p));
    fprintf(f, "%-40s%d x %s%s\n", "GPUs (TP):", p->tp, p->gpu, p->prefill_instances > 0 ? " (decode instance)" : "");
    fprintf(f, "%-40s%lld (%lld tokens)\n", "KV blocks:", info->total_blocks, info->total_blocks * p->block_size);
    fprintf(f, "%-40s%d%s\n", "Running sequences at most:", p->max_num_seqs,
            p->from_profile & SIM_GIVEN_SEQS ? " (the calibrated server's, from --profile)" : "");
    fprintf(f, "%-40s%lld\n", "Engine steps:", (long long)st->steps_total);
    fprintf(f, "%-40s%.2f\n", "Mean tokens per step:",
            st->steps_total ? (double)(info->prefill_tokens_total + st->generation_tokens_total) / st->steps_total : 0);
    fprintf(f, "%-40s%.1f%%\n", "Engine busy:", r->span_ns > 0 ? 100 * info->busy_s / (r->span_ns / 1e9) : 0);
    fprintf(f, "%-40s%lld\n", "Preemptions:", (long long)st->preemptions_total);
    fprintf(f, "%-40s%s\n", "Engine profile:", p->engine_profile);
    char host[192];
    if (sim_params_loop_host_note(p, host, sizeof host)) fprintf(f, "%-40s%s\n", "llama.cpp host speed:", host);
    sim_iv_load kind = sim_interval_load_of(r->doc);
    fprintf(f, "%-40sTPOT x/%.2f, throughput x/%.2f, TTFT x/%.1f (%s%s)\n", "80% interval:", exp(sim_interval_q(SIM_IV_TPOT, kind, p->calibrated)),
            exp(sim_interval_q(SIM_IV_TPUT, kind, p->calibrated)), exp(sim_interval_q(SIM_IV_TTFT, kind, p->calibrated)),
            p->calibrated && kind != SIM_IV_BURST ? "calibrate-then-predict errors" : "errors on published deployments outside the fit",
            kind == SIM_IV_BURST ? ", bursts: every request sent at once"
            : kind == SIM_IV_UNSEEN && !p->calibrated ? ", of an engine on a GPU architecture none of the fitted rows runs" : "");
    if (info->prefix_query_tokens > 0)
        fprintf(f, "%-40s%.1f%%\n", "Prefix cache hit rate (tokens):", 100.0 * info->prefix_hit_tokens / info->prefix_query_tokens);
    if (info->window_token_s > 0 && info->busy_s > 0)
        fprintf(f, "%-40s%.0f cells, step-time mean (idle slots' KV included)\n", "KV window each step attends:",
                info->window_token_s / info->busy_s);
    if (p->prefill_instances > 0)
        fprintf(f, "%-40s%lld, %.2f ms mean\n", "KV transfers (PD):", (long long)info->kv_transfers,
                info->kv_transfers ? info->kv_transfer_s / info->kv_transfers * 1e3 : 0);
    fprintf(f, "%s\n", "==================================================");
}

enum { O_DATASET = 1000, O_RATE, O_ARRIVAL, O_CONC, O_REQUESTS, O_DURATION, O_WARMUP, O_SEED, O_OUT, O_REQ_OUT,
       O_PCT, O_OUTPUT_LEN, O_MAXCONC, O_THINK, O_SLO, O_SLO_TTFT, O_SLO_TPOT, O_SLO_E2EL, O_QUIET, O_CALIBRATE, O_CAL_AT, O_REQ_JSONL, O_PROFILE_OUT, O_HELP, O_MAXERR,
       O_DB, O_LABEL, O_INPUT_LEN, O_REPEATS, O_STAB,
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

/* Everything `dsperf sim` takes: the run's options, the load as typed (one value, or a ladder),
 * the outputs, and the modes beside a run (calibrate, validate). */
typedef struct {
    run_sim_opts o;
    const char *conc, *rate, *out_len, *in_len, *score;   /* as typed: one value or a ladder */
    const char *out_path, *req_out, *calibrate, *req_jsonl, *profile_out, *validate;
    bool fit, loo, quiet, help, repeats_given;
    long long repeats;
    double calibrate_at;               /* --calibrate-at: the sweep level's load (0: the lowest) */
    const char *sim_opt, *fixed_opt;   /* an option of the one engine, the other's */
    history_opts hist;
    char joined[4][256];               /* ladders typed as several words */
    int n_joined;
} sim_cli;

/* A value that names more than one level. */
static bool is_ladder(const char *v) { return v && (strchr(v, ',') || strstr(v, "..")); }

/* "1k..64k x2" or "1..40/s step 4" typed without quotes: the rest of the ladder follows the value
 * as one or two more words, taken here. */
static const char *join_ladder(sim_cli *c, const char *v, int argc, char **argv) {
    if (optind >= argc || c->n_joined >= 4) return v;
    const char *nx = argv[optind];
    int more = nx[0] == 'x' && nx[1] && strspn(nx + 1, "0123456789.") == strlen(nx + 1) ? 1
             : !strcmp(nx, "step") && optind + 1 < argc ? 2 : 0;
    if (!more) return v;
    char *j = c->joined[c->n_joined++];
    snprintf(j, 256, "%s %s%s%s", v, nx, more == 2 ? " " : "", more == 2 ? argv[optind + 1] : "");
    optind += more;
    return j;
}

/* Parses argv (argv[0] the command name) into c. Returns -1 to go on, or an exit code with the
 * one-line reason in err (EXIT_OK after --help, with c->help set). */
static int sim_parse(int argc, char **argv, sim_cli *c, char *err, size_t errlen) {
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
        {"calibrate-at", required_argument, 0, O_CAL_AT},
        {"requests-jsonl", required_argument, 0, O_REQ_JSONL}, {"profile-out", required_argument, 0, O_PROFILE_OUT},
        {"output-len", required_argument, 0, O_OUTPUT_LEN}, {"max-concurrency", required_argument, 0, O_MAXCONC},
        {"think", required_argument, 0, O_THINK}, {"slo", required_argument, 0, O_SLO},
        {"save-requests", required_argument, 0, O_REQ_OUT}, {"engine", required_argument, 0, O_ENGINE},
        {"help", no_argument, 0, O_HELP}, {"max-error-rate", required_argument, 0, O_MAXERR},
        {"validate", required_argument, 0, O_VALIDATE}, {"fit", no_argument, 0, O_FIT}, {"loo", no_argument, 0, O_LOO},
        {"trace-block-size", required_argument, 0, O_TBLOCK}, {"time-scale", required_argument, 0, O_TSCALE},
        {"trace-window", required_argument, 0, O_TWINDOW}, {"transit", required_argument, 0, O_TRANSIT},
        {"db", required_argument, 0, O_DB}, {"label", required_argument, 0, O_LABEL},
        {"input-len", required_argument, 0, O_INPUT_LEN}, {"repeats", required_argument, 0, O_REPEATS},
        {"stability-score", required_argument, 0, O_STAB},
    };
    const char *const *keys = sim_params_keys(), *const *fkeys = fixed_params_keys();
    struct option *opts = sim_options(own, sizeof own / sizeof own[0]);
    if (!opts) { snprintf(err, errlen, "out of memory"); return EXIT_RUN_FAILED; }
    memset(c, 0, sizeof *c);
    run_sim_defaults(&c->o);
    history_opts_init(&c->hist);
    c->profile_out = "profile.json";
    c->repeats = 1;
    run_sim_opts *o = &c->o;
    const char *engine_name = "sim";
    long long ll;
    int64_t ns;
    int ch, idx = 0;
    optind = 1;
    opterr = 0;
    cli_option_table("sim", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((ch = getopt_long(argc, argv, "", opts, &idx)) != -1) {
        int bad = 0;
        switch (ch) {
        case O_HELP: c->help = true; free(opts); return EXIT_OK;
        case O_DATASET: o->dataset = optarg; break;
        case O_RATE: c->rate = join_ladder(c, optarg, argc, argv); break;
        case O_CONC: c->conc = join_ladder(c, optarg, argc, argv); break;
        case O_OUTPUT_LEN: c->out_len = join_ladder(c, optarg, argc, argv); break;
        case O_INPUT_LEN: c->in_len = join_ladder(c, optarg, argc, argv); break;
        case O_ARRIVAL: o->arrival = optarg; break;
        case O_REQUESTS: bad = units_parse_int(optarg, 1, 100000000, &o->requests); o->requests_given = true; break;
        case O_DURATION: bad = units_parse_duration_ns(optarg, &o->duration_ns) || o->duration_ns <= 0; break;
        case O_WARMUP: bad = units_parse_int(optarg, 0, 100000000, &o->warmup); break;
        case O_SEED: bad = units_parse_int(optarg, 0, INT64_MAX, &ll); o->seed = (uint64_t)ll; break;
        case O_REPEATS: bad = units_parse_int(optarg, 1, 1000, &c->repeats); c->repeats_given = true; break;
        case O_STAB: c->score = optarg; break;
        case O_TRANSIT:
            if (!strcmp(optarg, "on")) o->transit = true;
            else if (!strcmp(optarg, "off")) o->transit = false;
            else bad = 1;
            break;
        case O_OUT: c->out_path = optarg; break;
        case O_REQ_OUT: c->req_out = optarg; break;
        case O_PCT: bad = summary_parse_percentiles(&o->summary, optarg); break;
        case O_MAXCONC: bad = units_parse_int(optarg, 1, 1 << 24, &ll); o->max_concurrency = (int)ll; break;
        case O_THINK: bad = units_parse_duration_ns(optarg, &o->think_ns); break;
        case O_SLO: bad = summary_parse_slo(&o->summary, optarg); break;
        case O_SLO_TTFT: bad = units_parse_duration_ns(optarg, &ns); o->summary.slo_ttft_ms = ns / 1e6; break;
        case O_SLO_TPOT: bad = units_parse_duration_ns(optarg, &ns); o->summary.slo_tpot_ms = ns / 1e6; break;
        case O_SLO_E2EL: bad = units_parse_duration_ns(optarg, &ns); o->summary.slo_e2el_ms = ns / 1e6; break;
        case O_QUIET: c->quiet = true; break;
        case O_MAXERR: bad = validity_parse_rate(optarg, &o->max_error_rate); break;
        case O_CALIBRATE: c->calibrate = optarg; break;
        case O_CAL_AT: bad = units_parse_double(optarg, &c->calibrate_at) || !(c->calibrate_at > 0) || !isfinite(c->calibrate_at); break;
        case O_REQ_JSONL: c->req_jsonl = optarg; break;
        case O_PROFILE_OUT: c->profile_out = optarg; break;
        case O_DB: case O_LABEL:
            if (history_opts_apply(&c->hist, ch == O_DB ? "db" : "label", optarg, NULL) != DS_OK) {
                err[0] = 0;   /* history_opts_apply said what is wrong */
                free(opts);
                return EXIT_USAGE;
            }
            break;
        case O_ENGINE:
            engine_name = optarg;
            bad = strcmp(optarg, "sim") && strcmp(optarg, "fixed");
            break;
        case O_VALIDATE: c->validate = optarg; break;
        case O_FIT: c->fit = true; break;
        case O_LOO: c->loo = true; break;
        case O_TBLOCK: bad = units_parse_int(optarg, 1, 1 << 20, &ll); o->dso.block_tokens = (int32_t)ll; break;
        case O_TSCALE: bad = units_parse_double(optarg, &o->dso.time_scale) || !(o->dso.time_scale > 0) || o->dso.time_scale > 1e6; break;
        case O_TWINDOW: bad = bench_opts_parse_window(optarg, &o->dso.window_start_ns, &o->dso.window_end_ns) < 0; break;
        case '?': {
            int rc = cli_bad_option_text("sim", opts, argc, argv, optind, optopt, err, errlen);
            free(opts);
            return rc;
        }
        default: {
            bool fixed_key = ch >= O_FIXED;
            const char *key = fixed_key ? fkeys[ch - O_FIXED] : keys[ch - O_SIM];
            int r = fixed_key ? fixed_params_set(&o->fixed_p, key, optarg, err, errlen) : sim_params_set(&o->sim, key, optarg, err, errlen);
            if (r != 0) { free(opts); return EXIT_USAGE; }
            if (fixed_key) c->fixed_opt = key;
            else c->sim_opt = key;
        }
        }
        if (bad) {
            snprintf(err, errlen, "bad value '%s' for --%s; see dsperf sim --help", optarg, opts[idx].name);
            free(opts);
            return EXIT_USAGE;
        }
    }
    free(opts);
    if (optind < argc) { snprintf(err, errlen, "unexpected argument '%s'", argv[optind]); return EXIT_USAGE; }
    o->fixed = !strcmp(engine_name, "fixed");
    if ((o->fixed && c->sim_opt) || (!o->fixed && c->fixed_opt)) {
        snprintf(err, errlen, "--%s is an option of --engine %s; give --engine %s or drop it", o->fixed ? c->sim_opt : c->fixed_opt,
                 o->fixed ? "sim" : "fixed", o->fixed ? "sim" : "fixed");
        return EXIT_USAGE;
    }
    return -1;
}

/* The load of one run from its typed values (--concurrency N, --rate R/s | inf, --output-len N). */
static int single_load(sim_cli *c, char *err, size_t errlen) {
    run_sim_opts *o = &c->o;
    long long ll;
    if (c->conc) {
        if (units_parse_int(c->conc, 1, 1 << 20, &ll)) { snprintf(err, errlen, "bad value '%s' for --concurrency; see dsperf sim --help", c->conc); return EXIT_USAGE; }
        o->concurrency = (int)ll;
    }
    if (c->rate) {
        if (!strcmp(c->rate, "inf")) o->rate_per_s = INFINITY;
        else if (units_parse_rate_per_s(c->rate, &o->rate_per_s) || o->rate_per_s <= 0) {
            snprintf(err, errlen, "bad value '%s' for --rate; see dsperf sim --help", c->rate);
            return EXIT_USAGE;
        }
    }
    if (c->out_len) {
        if (units_parse_int(c->out_len, 1, 1 << 24, &ll)) { snprintf(err, errlen, "bad value '%s' for --output-len; see dsperf sim --help", c->out_len); return EXIT_USAGE; }
        o->output_len = (int32_t)ll;
    }
    return -1;
}

/* The checks on the load that need no dataset (the rest are run_sim's). */
static int check_load(const run_sim_opts *o, char *err, size_t errlen) {
    bool replay = !strcmp(o->arrival, "trace");
    if (o->concurrency > 0 && (o->rate_per_s > 0 || replay)) {
        snprintf(err, errlen, "give --rate/--arrival trace (open loop) or --concurrency (closed loop), not both");
        return EXIT_USAGE;
    }
    if (o->concurrency == 0 && o->rate_per_s == 0 && !replay) {
        snprintf(err, errlen, "give --rate R/s (open loop), --concurrency N (closed loop) or --arrival trace");
        return EXIT_USAGE;
    }
    if (o->duration_ns > 0 && (o->concurrency > 0 || replay || isinf(o->rate_per_s))) {
        snprintf(err, errlen, "--duration needs a finite --rate");
        return EXIT_USAGE;
    }
    if (o->max_concurrency > 0 && o->concurrency > 0) {
        snprintf(err, errlen, "--max-concurrency caps an open loop; with --concurrency the users are the cap");
        return EXIT_USAGE;
    }
    return -1;
}

int cli_sim_parse_flags(int argc, char **argv, run_sim_opts *o, char *err, size_t errlen) {
    sim_cli c;
    int rc = sim_parse(argc, argv, &c, err, errlen);
    if (rc < 0) rc = single_load(&c, err, errlen);
    if (rc >= 0) {
        if (c.help) snprintf(err, errlen, "--help is not a simulator setting");
        return EXIT_USAGE;
    }
    *o = c.o;
    return -1;
}

/* The ladder: which axis, its levels, the load held fixed. -1 to go on, or EXIT_USAGE with err. */
static int ladder_of(sim_cli *c, run_sim_ladder_opts *l, char *err, size_t errlen) {
    char why[256];
    if (c->score && stability_parse_score(c->score, &l->score) < 0) {
        snprintf(err, errlen, "bad value '%s' for --stability-score: itl-cv, tpot-tail or throughput-cv", c->score);
        return EXIT_USAGE;
    }
    l->repeats = (int)c->repeats;
    bool out_ladder = is_ladder(c->out_len);
    if (c->in_len || out_ladder) {
        if (c->in_len && out_ladder) { snprintf(err, errlen, "sweep one length at a time: --input-len or an --output-len ladder"); return EXIT_USAGE; }
        if (!!c->conc + !!c->rate != 1 || is_ladder(c->conc) || is_ladder(c->rate)) {
            snprintf(err, errlen, "a sweep along context length holds the load fixed: give one --concurrency N or --rate R/s");
            return EXIT_USAGE;
        }
        l->axis = c->in_len ? "input_len" : "output_len";
        l->ladder_text = c->in_len ? c->in_len : c->out_len;
        if (sweep_parse_length_ladder(l->ladder_text, l->levels, SWEEP_MAX_LEVELS, &l->n_levels, why, sizeof why) < 0) {
            snprintf(err, errlen, "bad ladder for --%s: %s (e.g. 1k..128k x2)", c->in_len ? "input-len" : "output-len", why);
            return EXIT_USAGE;
        }
        double other[SWEEP_MAX_LEVELS];
        size_t no = 0;
        if (c->in_len && c->out_len && (sweep_parse_length_ladder(c->out_len, other, SWEEP_MAX_LEVELS, &no, why, sizeof why) < 0 || no != 1)) {
            snprintf(err, errlen, "bad value '%s' for --output-len: one length", c->out_len);
            return EXIT_USAGE;
        }
        l->other_len = no ? (long)other[0] : 0;
        l->base_dataset = c->o.dataset;
        char spec[256];
        if (sweep_length_dataset(l->base_dataset, c->in_len != NULL, (long)l->levels[0], l->other_len, spec, sizeof spec, why, sizeof why) < 0) {
            snprintf(err, errlen, "%s", why);
            return EXIT_USAGE;
        }
        if (!l->other_len) {
            const char *k = strstr(spec, c->in_len ? "out=" : "in=");
            l->other_len = k ? strtol(k + (c->in_len ? 4 : 3), NULL, 10) : 0;
        }
        c->out_len = NULL;   /* the lengths are the dataset's */
        return single_load(c, err, errlen);
    }
    if (is_ladder(c->conc) && is_ladder(c->rate)) { snprintf(err, errlen, "give one ladder: --concurrency or --rate"); return EXIT_USAGE; }
    bool rate = !is_ladder(c->conc);
    l->axis = rate ? "rate" : "concurrency";
    l->ladder_text = rate ? c->rate : c->conc;
    if (sweep_parse_ladder(l->ladder_text, rate, l->levels, SWEEP_MAX_LEVELS, &l->n_levels, why, sizeof why) < 0) {
        snprintf(err, errlen, "bad ladder for --%s: %s", l->axis, why);
        return EXIT_USAGE;
    }
    if (rate) c->rate = NULL;
    else c->conc = NULL;
    int rc = single_load(c, err, errlen);
    if (rc >= 0) return rc;
    /* the checks of one run, at the first level's load */
    run_sim_opts first = c->o;
    if (rate) first.rate_per_s = l->levels[0];
    else first.concurrency = (int)l->levels[0];
    return check_load(&first, err, errlen);
}

static int run_ladder(sim_cli *c, int argc, char **argv) {
    char err[512];
    run_sim_ladder_opts l;
    run_sim_ladder_defaults(&l);
    int rc = ladder_of(c, &l, err, sizeof err);
    if (rc >= 0) { log_error("sim: %s", err); return rc; }
    if (cli_check_output("--out", c->out_path) || history_opts_check(&c->hist) != DS_OK) return EXIT_USAGE;
    char *cmdline = cli_command_line(argc, argv);
    l.level = c->o;
    l.level.command_line = cmdline;
    l.out_path = c->out_path;
    l.save_prefix = c->req_out;
    l.progress = c->quiet ? NULL : cli_summary_stream();
    run_sim_ladder_result res;
    ds_result r = run_sim_ladder(&l, &res, err, sizeof err);
    rc = ds_exit_code(r);
    if (r != DS_OK) log_error("sim: %s", err);
    if (r == DS_OK && res.level_failed) {
        log_error("sim: a level failed: server-side failures over --max-error-rate (see each level's run_failed_reason)");
        rc = EXIT_RUN_FAILED;
    }
    if (res.doc && history_opts_record(&c->hist, res.doc, NULL, 0) != DS_OK && rc == EXIT_OK) rc = EXIT_RUN_FAILED;
    if (!c->quiet && res.doc) {
        FILE *sum = cli_summary_stream();
        fputc('\n', sum);
        sweep_print_table(sum, res.doc, false, l.repeats > 1);
        sweep_context_print(sum, res.doc);
        sweep_stability_print(sum, res.doc);
        if (c->out_path && !fileio_is_stdout(c->out_path)) log_info("sweep written to %s", c->out_path);
    }
    json_decref(res.doc);
    free(cmdline);
    return rc;
}

int cmd_sim(int argc, char **argv) {
    sim_cli c;
    char err[512];
    int rc = sim_parse(argc, argv, &c, err, sizeof err);
    if (c.help) { usage(stdout); return EXIT_OK; }
    if (rc >= 0) { if (err[0]) log_error("sim: %s", err); return rc; }
    /* a ladder of prompt lengths, output lengths or loads: one run per level, one sweep document */
    if (c.in_len || is_ladder(c.out_len) || is_ladder(c.conc) || is_ladder(c.rate)) return run_ladder(&c, argc, argv);
    if (c.repeats_given || c.score) {
        log_error("sim: --%s goes with a ladder (--input-len, or a ladder for --output-len, --concurrency or --rate)",
                  c.repeats_given ? "repeats" : "stability-score");
        return EXIT_USAGE;
    }
    if ((rc = single_load(&c, err, sizeof err)) >= 0) { log_error("sim: %s", err); return rc; }
    const run_sim_opts *o = &c.o;
    if (o->fixed && c.calibrate) { log_error("sim: --calibrate fits the simulated engine; drop --engine fixed"); return EXIT_USAGE; }
    if ((c.fit || c.loo) && !c.validate) { log_error("sim: --fit and --loo go with --validate TABLE"); return EXIT_USAGE; }
    if (c.calibrate_at > 0 && !c.validate && !c.calibrate) {
        log_error("sim: --calibrate-at picks the level of a sweep to calibrate on: it goes with --calibrate SWEEP.json or --validate SWEEP.json");
        return EXIT_USAGE;
    }
    if (c.validate) {
        ds_result r = run_sim_validate(c.validate, &o->sim, c.calibrate_at, c.fit, c.loo, stdout, c.quiet ? NULL : stderr, err, sizeof err);
        if (r != DS_OK) log_error("sim: %s", err);
        return ds_exit_code(r);
    }
    if (cli_check_output("--out", c.out_path) || cli_check_output("--save-requests", c.req_out) ||
        cli_check_output("--profile-out", c.profile_out))
        return EXIT_USAGE;
    if (!c.calibrate && history_opts_check(&c.hist) != DS_OK) return EXIT_USAGE;
    if (c.calibrate) {
        ds_result r = run_sim_calibrate(&o->sim, c.calibrate, c.req_jsonl, c.calibrate_at, c.profile_out, c.quiet ? NULL : stdout, err, sizeof err);
        if (r != DS_OK) { log_error("sim: %s", err); return ds_exit_code(r); }
        return EXIT_OK;
    }
    if ((rc = check_load(o, err, sizeof err)) >= 0) { log_error("sim: %s", err); return rc; }
    char *cmdline = cli_command_line(argc, argv);   /* argv[0] is "sim" */
    c.o.command_line = cmdline;
    run_sim_result res;
    ds_result r = run_sim(o, &res, err, sizeof err);
    free(cmdline);
    if (r != DS_OK) {
        log_error("sim: %s", err);
        run_sim_result_free(&res);
        return ds_exit_code(r);
    }
    if (res.prefix_hit_bound > 0)
        log_info("sim: this workload allows a %.1f%% prefix-cache hit rate; --prefix-caching on models it (vLLM V1 "
                 "caches by default)", 100 * res.prefix_hit_bound);
    rc = res.judged_failed ? EXIT_RUN_FAILED : EXIT_OK;
    if (c.out_path && results_write_json(c.out_path, res.doc, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
    }
    if (c.req_out && results_write_requests_jsonl(c.req_out, &res.recs, err, sizeof err) < 0) {
        log_error("sim: %s", err);
        rc = EXIT_RUN_FAILED;
    }
    if (history_opts_record(&c.hist, res.doc, NULL, 0) != DS_OK) rc = EXIT_RUN_FAILED;
    if (!c.quiet) {
        results_print_summary(cli_summary_stream(), res.doc);
        if (!o->fixed) print_engine(cli_summary_stream(), &res, &o->sim);
    }
    if (res.judged_failed && res.why[0]) log_error("sim: %s", res.why);
    run_sim_result_free(&res);
    return rc;
}
