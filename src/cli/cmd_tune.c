/* cmd_tune — `dsperf tune`: for every point of a grid of server settings, start the server from a
 * launch template, wait for it to be healthy, run a sweep (sweep_run, as `dsperf sweep` does), stop
 * it, and record what the configuration achieved; then the Pareto front of throughput per GPU
 * against tail latency and the recommendation under the SLO. The tune file is rewritten atomically
 * after every configuration, and Ctrl-C stops the running server before exiting. */
#include "cli/cli.h"
#include "common/fdlimit.h"
#include "run/bench.h"
#include "cli/sweep_opts.h"
#include "run/tune.h"
#include "tune/tune.h"
#include "drift/drift.h"
#include "results/results.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "common/fileio.h"
#include <errno.h>
#include <stdarg.h>
#include <sys/wait.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>

static const char usage_text[] =
"usage: dsperf tune (--server-cmd TEMPLATE | --sim-flags FLAGS) --grid KEY=V1,V2,... [--grid ...]\n"
"                   (--concurrency LADDER | --rate LADDER | --auto) [sweep options] [options]\n"
"\n"
"Searches server settings. For every combination of the --grid values (cartesian product) it\n"
"starts TEMPLATE with /bin/sh in its own process group ({port} becomes a free loopback port,\n"
"{KEY} the combination's value; output to a log beside --out), waits until GET /health or\n"
"/v1/models answers 200, runs a sweep with the sweep options, stops the server (SIGTERM to\n"
"the group, SIGKILL after --stop-grace) and goes on. A server that exits or never becomes\n"
"healthy is recorded as failed with the tail of its log. Then: a table of every configuration,\n"
"the Pareto front (output tok/s per GPU up, p<P> latency down, over every measured load) and\n"
"the recommendation: the configuration with the highest request goodput per GPU at a load\n"
"where every --slo holds (without --slo: the highest output tok/s per GPU).\n"
"\n"
"tune options:\n"
"  --server-cmd TEMPLATE   the launch command; placeholders {port} and {KEY} for every grid key\n"
"                          ({{ is a literal brace; ${VAR} is left to the shell)\n"
"  --grid KEY=V1,V2,...    one axis; repeat it or list several after one --grid; a value may be\n"
"                          a numeric range like a sweep ladder: seqs=16..256x2\n"
"  --sim-flags FLAGS       instead of a server: `dsperf sim FLAGS` per level, on the simulator's\n"
"                          virtual clock (seconds for a whole grid; engine and hardware flags\n"
"                          such as '--model deepseek-v3 --tp {tp} --max-num-seqs {seqs}'); per GPU\n"
"                          uses its --gpus/--tp unless --gpus/--gpus-key say otherwise; levels\n"
"                          run --requests N (default 10 x load, 200..20000) or, open loop, --duration\n"
"  --url URL               where the server answers (default http://127.0.0.1:{port})\n"
"  --health-timeout T      how long a server may take to become healthy (default 10m)\n"
"  --stop-grace T          SIGTERM to SIGKILL (default 10s)\n"
"  --gpus N                GPUs per configuration, for the per-GPU figures\n"
"  --gpus-key KEY          GPUs per configuration = the value of grid key KEY (e.g. tp)\n"
"  --objective M           latency of the Pareto front: e2el (default), ttft or tpot, at the\n"
"                          --slo-percentile (default p99), server-view as goodput is judged\n"
"  --dry-run               print every configuration's command and URL, start nothing\n"
"  --show FILE             print the table, front and recommendation of a saved tune file\n"
"  --drift FILE            a dsperf drift result: a recommendation that changes the KV-cache dtype shows\n"
"                          its accuracy cost (without it, such a recommendation says it is untested)\n"
"  --out FILE              tune results, schema dsperf.tune/1 (default a new tune-<date>-<time>.json); beside it\n"
"                          FILE-stem.<i>.log (server output) and FILE-stem.<i>.sweep.json\n"
"  --db PATH, --label K=V  record the tune and each configuration's sweep (labelled tune.KEY=VALUE)\n"
"                          in the results history (dsperf history --help)\n"
"\n"
"sweep options (as `dsperf sweep`; {KEY} and {port} are filled in them too):\n"
"  --concurrency LADDER | --rate LADDER | --auto, --duration T | --requests N, --warmup N,\n"
"  --repeats N, --slo ttft=..,tpot=..,e2el=.., --slo-percentile P, --dataset SPEC, --model M,\n"
"  --api, --seed, --server-metrics URL, --quiet ... (see dsperf sweep --help and bench --help)\n"
"\n"
"Exit: 0 when at least one configuration was measured, 1 when none could be or on Ctrl-C (what\n"
"was measured is kept), 2 usage. Against `dsperf serve --speedup K` every throughput is K times\n"
"(and every latency 1/K of) what the simulated hardware would give; the ranking holds and the\n"
"file says so.\n"
"\n"
"examples:\n"
"  dsperf tune --server-cmd 'vllm serve deepseek-ai/DeepSeek-V2-Lite --port {port} --max-num-seqs {seqs}\n"
"      --kv-cache-dtype {kv}' --grid seqs=64,128,256 kv=auto,fp8 --gpus 1 --concurrency 8..256x2\n"
"      --duration 60s --slo ttft=500ms,tpot=50ms --out tune.json\n"
"  dsperf tune --server-cmd 'dsperf serve --engine sim --port {port} --max-num-seqs {seqs} --speedup 10'\n"
"      --grid seqs=4,16,64 --concurrency 4..64x2 --duration 5s --dataset random:in=512,out=128\n"
"      --slo ttft=2s,tpot=20ms\n"
"  dsperf tune --sim-flags '--model deepseek-v3 --gpu h200 --tp 8 --max-num-seqs {seqs} --kv-dtype {kv}'\n"
"      --grid seqs=64..512x2 kv=bf16,fp8 --concurrency 16..512x2 --slo ttft=2s,tpot=50ms\n"
"  dsperf tune --server-cmd 'vllm serve M --port {port} -tp {tp}' --grid tp=1,2,4 --gpus-key tp\n"
"      --rate 2..40/s step 4 --duration 60s --objective ttft\n";

static void on_signal(int sig) { (void)sig; tune_run_request_stop(); }



/* Is a the start of another grid spec written after one --grid ("--grid a=1,2 b=x,y")? */
static bool looks_like_grid(const char *a) {
    if (!a || a[0] == '-') return false;
    const char *eq = strchr(a, '=');
    if (!eq || eq == a) return false;
    for (const char *p = a; p < eq; p++)
        if (!(p == a ? (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z'))
                     : (*p == '_' || (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9'))))
            return false;
    return true;
}

/* Takes tune's own options out of argv; the rest is kept for the sweep. -1 to go on, else an
 * exit code. */
/* The parsers the run layer applies to each configuration's words (run/tune.h). */
static int parse_config_sweep(sweep_opts *so, bench_opts *b, int argc, char **argv) {
    return sweep_opts_parse(so, b, argc, argv, "tune", NULL);
}

static int parse_own(int argc, char **argv, tune_opts *t) {
    memset(t, 0, sizeof *t);
    t->parse_sweep = parse_config_sweep;
    t->free_sweep = sweep_opts_free;
    t->parse_sim = cli_sim_parse_flags;
    t->url = "http://127.0.0.1:{port}";
    t->out_path = NULL;     /* a new tune-<date>-<time>.json (cmd_tune) */
    t->objective = "e2el";
    t->health_timeout_ns = 600 * NS_PER_S;
    t->stop_grace_ns = 10 * NS_PER_S;
    tune_grid_init(&t->grid);
    history_opts_init(&t->hist);
    t->rest = calloc((size_t)argc + 8, sizeof *t->rest);
    t->rest[t->nrest++] = argv[0];
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        cli_word w;
        cli_word_init(&w, a);
        size_t nlen = w.name_len;
#define IS(name) cli_word_is(&w, name)
#define VAL() cli_word_value(&w, argc, argv, &i)
        const char *val;
        if (IS("--help") || IS("-h")) { fputs(usage_text, stdout); return EXIT_OK; }
        else if (IS("--dry-run")) t->dry_run = true;
        else if (IS("--server-cmd")) { if (!(t->server_cmd = VAL())) goto missing; }
        else if (IS("--sim-flags")) { if (!(t->sim_flags = VAL())) goto missing; }
        else if (IS("--url")) { if (!(t->url = VAL())) goto missing; }
        else if (IS("--out")) { if (!(t->out_path = VAL())) goto missing; }
        else if (IS("--gpus-key")) { if (!(t->gpus_key = VAL())) goto missing; }
        else if (IS("--drift")) { if (!VAL()) goto missing; }   /* loaded by load_drift */
        else if (IS("--db") || IS("--label")) {
            bool db = IS("--db");
            if (!(val = VAL())) goto missing;
            if (history_opts_apply(&t->hist, db ? "db" : "label", val, NULL) != DS_OK) return EXIT_USAGE;
        }
        else if (IS("--objective")) {
            if (!(t->objective = VAL())) goto missing;
            if (!tune_objective_valid(t->objective)) {
                log_error("bad value '%s' for --objective: e2el, ttft or tpot", t->objective);
                return EXIT_USAGE;
            }
        } else if (IS("--gpus")) {
            if (!(val = VAL())) goto missing;
            if (units_parse_double(val, &t->gpus) < 0 || !(t->gpus > 0)) {
                log_error("bad value '%s' for --gpus: GPUs per configuration, a number > 0", val);
                return EXIT_USAGE;
            }
        } else if (IS("--health-timeout") || IS("--stop-grace")) {
            bool health = IS("--health-timeout");
            if (!(val = VAL())) goto missing;
            int64_t ns;
            if (units_parse_duration_ns(val, &ns) < 0 || ns <= 0) {
                log_error("bad value '%s' for %s: a duration such as 30s or 10m", val, health ? "--health-timeout" : "--stop-grace");
                return EXIT_USAGE;
            }
            if (health) t->health_timeout_ns = ns;
            else t->stop_grace_ns = ns;
        } else if (IS("--grid")) {
            if (!(val = VAL())) goto missing;
            for (;;) {
                if (tune_grid_add(&t->grid, val, err, sizeof err) < 0) { log_error("--grid: %s", err); return EXIT_USAGE; }
                if (!looks_like_grid(i + 1 < argc ? argv[i + 1] : NULL)) break;
                val = argv[++i];
            }
        } else t->rest[t->nrest++] = argv[i];
        continue;
    missing:
        log_error("%.*s needs a value; see dsperf tune --help", (int)nlen, a);
        return EXIT_USAGE;
#undef IS
#undef VAL
    }
    if (!t->server_cmd == !t->sim_flags) {
        log_error(t->server_cmd ? "--server-cmd and --sim-flags exclude each other; give one"
                                : "give --server-cmd (a launch template, e.g. 'vllm serve M --port {port} --max-num-seqs {seqs}') "
                                  "or --sim-flags (e.g. '--max-num-seqs {seqs}')");
        return EXIT_USAGE;
    }
    if (t->sim_flags) {
        /* no server: the template has no port, and the load runs on the simulator's clock */
        if (strstr(t->sim_flags, "{port}")) { log_error("--sim-flags: {port} has no meaning without a server"); return EXIT_USAGE; }
        if (tune_template_check(t->sim_flags, &t->grid, err, sizeof err) < 0) { log_error("--sim-flags: %s", err); return EXIT_USAGE; }
        t->url = "sim";
    } else {
        if (tune_template_check(t->server_cmd, &t->grid, err, sizeof err) < 0) { log_error("--server-cmd: %s", err); return EXIT_USAGE; }
        if (tune_template_check(t->url, &t->grid, err, sizeof err) < 0) { log_error("--url: %s", err); return EXIT_USAGE; }
        if (!strstr(t->server_cmd, "{port}") && strstr(t->url, "{port}")) {
            log_error("--server-cmd has no {port} but --url does: add --port {port} to the command or give the fixed --url");
            return EXIT_USAGE;
        }
    }
    if (tune_grid_size(&t->grid) > TUNE_MAX_CONFIGS) {
        log_error("the grid has more than %d configurations; give fewer values", TUNE_MAX_CONFIGS);
        return EXIT_USAGE;
    }
    if (t->gpus_key) {
        if (t->gpus > 0) { log_error("--gpus and --gpus-key exclude each other; give one"); return EXIT_USAGE; }
        size_t k = 0;
        while (k < t->grid.n && strcmp(t->grid.axes[k].key, t->gpus_key)) k++;
        if (k == t->grid.n) { log_error("--gpus-key %s is not a grid key; add --grid %s=1,2,...", t->gpus_key, t->gpus_key); return EXIT_USAGE; }
        for (size_t j = 0; j < t->grid.axes[k].n; j++) {
            double g;
            if (units_parse_double(t->grid.axes[k].values[j], &g) < 0 || !(g > 0)) {
                log_error("--gpus-key %s: value '%s' is not a GPU count", t->gpus_key, t->grid.axes[k].values[j]);
                return EXIT_USAGE;
            }
        }
    }
    return -1;
}

static void free_opts(tune_opts *t) {
    tune_grid_free(&t->grid);
    free(t->rest);
}

static json_t *g_drift;   /* --drift: a dsperf.drift/1 document, or NULL */

/* --show FILE: the saved file re-analysed and printed. */
static int show(const char *path) {
    char *text = NULL;
    size_t len = 0;
    if (fileio_read_all(path, &text, &len) < 0) { log_error("cannot read %s: %s", path, strerror(errno)); return EXIT_USAGE; }
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    free(text);
    const char *schema = doc ? json_string_value(json_object_get(doc, "schema")) : NULL;
    if (!schema || strcmp(schema, TUNE_SCHEMA)) {
        if (doc) log_error("%s is not a tune file (schema %s, want %s)", path, schema ? schema : "none", TUNE_SCHEMA);
        else log_error("%s: invalid JSON at line %d: %s", path, je.line, je.text);
        json_decref(doc);
        return EXIT_USAGE;
    }
    if (g_drift) json_object_set(doc, "drift", g_drift);   /* analysed with this accuracy result */
    tune_analyse(doc);
    tune_print(stdout, doc);
    json_decref(doc);
    return EXIT_OK;
}

/* --drift FILE (taken before the other options, as --show is); 0, or an exit code. */
static int load_drift(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++) {
        if (strcmp(argv[i], "--drift")) continue;
        char err[512];
        json_decref(g_drift);
        if (!(g_drift = drift_load(argv[i + 1], err, sizeof err))) { log_error("--drift: %s", err); return EXIT_USAGE; }
    }
    return 0;
}

int cmd_tune(int argc, char **argv) {
    if (load_drift(argc, argv)) return EXIT_USAGE;
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--show")) return show(argv[i + 1]);
    tune_opts t;
    int rc = parse_own(argc, argv, &t);
    if (rc >= 0) { free_opts(&t); return rc; }
    char tune_default[1024];
    if (t.out_path && fileio_is_stdout(t.out_path)) {
        log_error("tune --out takes a file name, not -: each configuration's server log and sweep are written beside it");
        free_opts(&t);
        return EXIT_USAGE;
    }
    /* no --out: a new tune-<date>-<time>.json, never an earlier tune's file, made once the options
     * are known to be good (below); the placeholder names the files in a --dry-run */
    bool default_out = !t.out_path;
    if (default_out) t.out_path = "tune-<date>-<time>.json";
    /* the sweep options are checked once, up front, with the first configuration's values */
    size_t choice[TUNE_MAX_KEYS];
    tune_grid_point(&t.grid, 0, choice);
    char *stem = tune_out_stem(t.out_path);
    char probe_sweep[1100];
    snprintf(probe_sweep, sizeof probe_sweep, "%s.0.sweep.json", stem);
    int pargc;
    char **pargv = tune_config_argv(&t, choice, 1, "http://127.0.0.1:1", probe_sweep, &pargc);
    sweep_opts so;
    bench_opts b;
    rc = sweep_opts_parse(&so, &b, pargc, pargv, "tune", NULL);
    if (rc >= 0) {
        tune_free_argv(pargv, pargc);
        free(stem);
        free_opts(&t);
        return rc == EXIT_OK ? EXIT_USAGE : rc;
    }
    if (t.sim_flags) {
        const char *why = so.autom ? "--auto needs a live server; give --concurrency or --rate"
                        : so.conc_ladder && b.plan.duration_ns && !tune_arg_given(&t, "--requests")
                        ? "closed-loop levels on the simulator need --requests N (it runs on a virtual clock, not for a --duration)"
                        : NULL;
        if (why) {
            log_error("--sim-flags: %s", why);
            sweep_opts_free(&so, &b);
            tune_free_argv(pargv, pargc);
            free(stem);
            free_opts(&t);
            return EXIT_USAGE;
        }
    }
    if (t.dry_run) {
        sweep_opts_free(&so, &b);
        tune_free_argv(pargv, pargc);
        tune_planned *plan;
        size_t n;
        ds_result pr = tune_plan(&t, &plan, &n);
        if (pr != DS_OK) {
            log_error("tune --dry-run: %s", ds_strerror(pr));
            free(stem);
            free_opts(&t);
            return ds_exit_code(pr);
        }
        for (size_t i = 0; i < n; i++) {
            const tune_planned *p = &plan[i];
            const char *label = p->label && *p->label ? p->label : "no grid";
            char gpus[48] = "";
            if (p->gpus > 0) snprintf(gpus, sizeof gpus, " %g GPU%s", p->gpus, p->gpus == 1 ? "" : "s");
            if (t.sim_flags)
                printf("%zu [%s]%s: dsperf sim %s\n   log %s.%zu.log, sweep %s.%zu.sweep.json\n", i, label, gpus,
                       p->command ? p->command : "?", stem, i, stem, i);
            else
                printf("%zu [%s]%s: %s\n   url %s, log %s.%zu.log, sweep %s.%zu.sweep.json\n", i, label, gpus,
                       p->command ? p->command : "?", p->url ? p->url : "?", stem, i, stem, i);
        }
        tune_plan_free(plan, n);
        free(stem);
        free_opts(&t);
        return EXIT_OK;
    }
    if (default_out) {
        if (!(t.out_path = cli_default_output("--out", "tune", "json", tune_default, sizeof tune_default))) {
            sweep_opts_free(&so, &b);
            tune_free_argv(pargv, pargc);
            free(stem);
            free_opts(&t);
            return EXIT_USAGE;
        }
        free(stem);
        stem = tune_out_stem(t.out_path);
    }
    char *line = cli_command_line(argc, argv), *sweep_line = cli_join_argv(t.nrest - 1, t.rest + 1);
    json_t *doc = tune_new_doc(&t, line, sweep_line ? sweep_line : "", &b, so.slo_pct);
    free(line);
    free(sweep_line);
    if (doc && g_drift) json_object_set(doc, "drift", g_drift);   /* tune_analyse shows its accuracy cost */
    bool quiet = b.quiet;
    sweep_opts_free(&so, &b);
    tune_free_argv(pargv, pargc);
    /* a grid key no placeholder uses gives configurations that differ only in name */
    for (size_t k = 0; k < t.grid.n; k++) {
        char ph[160];
        snprintf(ph, sizeof ph, "{%s}", t.grid.axes[k].key);
        bool used = strstr(t.sim_flags ? t.sim_flags : t.server_cmd, ph) || strstr(t.url, ph);
        for (int i = 1; i < t.nrest && !used; i++) used = strstr(t.rest[i], ph) != NULL;
        if (!used) log_warn("grid key %s appears in no placeholder ({%s}): its configurations differ only in name",
                            t.grid.axes[k].key, t.grid.axes[k].key);
    }
    fd_limit_prepare();     /* thousands of streams: before any thread starts */
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    /* a file that cannot be written would lose every measurement: say so before starting servers */
    if (history_opts_check(&t.hist) != DS_OK || tune_save(doc, t.out_path) < 0) {
        json_decref(doc);
        free(stem);
        free_opts(&t);
        return EXIT_USAGE;
    }
    size_t measured = 0;
    bool history_failed = false;
    run_tune(&t, doc, stem, &measured, &history_failed);
    int exit_history = history_failed ? EXIT_RUN_FAILED : EXIT_OK;
    int exit_code = measured ? EXIT_OK : EXIT_RUN_FAILED;
    if (tune_run_stopped()) {
        json_object_set_new(doc, "partial", json_true());
        json_object_set_new(doc, "partial_reason", json_string("interrupted (SIGINT/SIGTERM): the configurations measured "
                                                               "so far are kept; the running server was stopped"));
        exit_code = EXIT_RUN_FAILED;
    }
    if (tune_save(doc, t.out_path) < 0) exit_code = EXIT_RUN_FAILED;
    if (history_opts_record(&t.hist, doc, NULL, 0) != DS_OK || exit_history != EXIT_OK) exit_code = EXIT_RUN_FAILED;
    if (!quiet) {
        fputc('\n', stdout);
        tune_print(stdout, doc);
        fflush(stdout);
    }
    if (!measured) log_error("no configuration could be measured; see the \"error\" and \"log_tail\" of each in %s", t.out_path);
    else log_info("tune written to %s", t.out_path);
    json_decref(doc);
    free(stem);
    free_opts(&t);
    return exit_code;
}
