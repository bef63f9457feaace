/* cmd_tune — `dsperf tune`: for every point of a grid of server settings, start the server from a
 * launch template, wait for it to be healthy, run a sweep (sweep_run, as `dsperf sweep` does), stop
 * it, and record what the configuration achieved; then the Pareto front of throughput per GPU
 * against tail latency and the recommendation under the SLO. The tune file is rewritten atomically
 * after every configuration, and Ctrl-C stops the running server before exiting. */
#include "cli/cli.h"
#include "cli/bench_run.h"
#include "cli/sweep_run.h"
#include "tune/tune.h"
#include "results/results.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "common/fileio.h"
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char usage_text[] =
"usage: dsperf tune --server-cmd TEMPLATE --grid KEY=V1,V2,... [--grid ...]\n"
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
"  --url URL               where the server answers (default http://127.0.0.1:{port})\n"
"  --health-timeout T      how long a server may take to become healthy (default 10m)\n"
"  --stop-grace T          SIGTERM to SIGKILL (default 10s)\n"
"  --gpus N                GPUs per configuration, for the per-GPU figures\n"
"  --gpus-key KEY          GPUs per configuration = the value of grid key KEY (e.g. tp)\n"
"  --objective M           latency of the Pareto front: e2el (default), ttft or tpot, at the\n"
"                          --slo-percentile (default p99), server-view as goodput is judged\n"
"  --dry-run               print every configuration's command and URL, start nothing\n"
"  --show FILE             print the table, front and recommendation of a saved tune file\n"
"  --out FILE              tune results, schema dsperf.tune/1 (default tune.json); beside it\n"
"                          FILE-stem.<i>.log (server output) and FILE-stem.<i>.sweep.json\n"
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
"  dsperf tune --server-cmd 'vllm serve M --port {port} -tp {tp}' --grid tp=1,2,4 --gpus-key tp\n"
"      --rate 2..40/s step 4 --duration 60s --objective ttft\n";

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; sweep_run_request_stop(); }

typedef struct {
    const char *server_cmd, *url, *out_path, *gpus_key, *objective;
    double gpus;
    bool dry_run;
    int64_t health_timeout_ns, stop_grace_ns;
    tune_grid grid;
    char **rest;                /* the sweep options, argv-style (rest[0] = "tune") */
    int nrest;
} tune_opts;

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
static int parse_own(int argc, char **argv, tune_opts *t) {
    memset(t, 0, sizeof *t);
    t->url = "http://127.0.0.1:{port}";
    t->out_path = "tune.json";
    t->objective = "e2el";
    t->health_timeout_ns = 600 * NS_PER_S;
    t->stop_grace_ns = 10 * NS_PER_S;
    tune_grid_init(&t->grid);
    t->rest = calloc((size_t)argc + 8, sizeof *t->rest);
    t->rest[t->nrest++] = argv[0];
    char err[512];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *eq = strchr(a, '=');
        size_t nlen = eq && !strncmp(a, "--", 2) ? (size_t)(eq - a) : strlen(a);
#define IS(name) (strlen(name) == nlen && !strncmp(a, name, nlen))
#define VAL() (eq ? eq + 1 : (i + 1 < argc ? argv[++i] : NULL))
        const char *val;
        if (IS("--help") || IS("-h")) { fputs(usage_text, stdout); return EXIT_OK; }
        else if (IS("--dry-run")) t->dry_run = true;
        else if (IS("--server-cmd")) { if (!(t->server_cmd = VAL())) goto missing; }
        else if (IS("--url")) { if (!(t->url = VAL())) goto missing; }
        else if (IS("--out")) { if (!(t->out_path = VAL())) goto missing; }
        else if (IS("--gpus-key")) { if (!(t->gpus_key = VAL())) goto missing; }
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
    if (!t->server_cmd) {
        log_error("--server-cmd is required: the launch template, e.g. 'vllm serve M --port {port} --max-num-seqs {seqs}'");
        return EXIT_USAGE;
    }
    if (tune_template_check(t->server_cmd, &t->grid, err, sizeof err) < 0) { log_error("--server-cmd: %s", err); return EXIT_USAGE; }
    if (tune_template_check(t->url, &t->grid, err, sizeof err) < 0) { log_error("--url: %s", err); return EXIT_USAGE; }
    if (!strstr(t->server_cmd, "{port}") && strstr(t->url, "{port}")) {
        log_error("--server-cmd has no {port} but --url does: add --port {port} to the command or give the fixed --url");
        return EXIT_USAGE;
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

/* The sweep's argv for one configuration: the rest with placeholders filled, then --url, --out. */
static char **config_argv(const tune_opts *t, const size_t *choice, int port, const char *url, const char *sweep_path,
                          int *argc_out) {
    char **v = calloc((size_t)t->nrest + 6, sizeof *v);
    int n = 0;
    v[n++] = strdup(t->rest[0]);
    char err[256];
    for (int i = 1; i < t->nrest; i++) v[n++] = tune_template_render(t->rest[i], &t->grid, choice, port, false, err, sizeof err);
    v[n++] = strdup("--url");
    v[n++] = strdup(url);
    v[n++] = strdup("--out");
    v[n++] = strdup(sweep_path);
    *argc_out = n;
    return v;
}

static void free_argv(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* The stem of --out: "runs/tune.json" → "runs/tune". */
static char *out_stem(const char *out) {
    char *s = strdup(out);
    size_t n = strlen(s);
    if (n > 5 && !strcmp(s + n - 5, ".json")) s[n - 5] = 0;
    return s;
}

static int save(json_t *doc, const char *path) {
    tune_analyse(doc);
    char err[512];
    if (results_write_json(path, doc, err, sizeof err) < 0) { log_error("%s", err); return -1; }
    return 0;
}

static double config_gpus(const tune_opts *t, const size_t *choice) {
    if (t->gpus > 0) return t->gpus;
    if (t->gpus_key) {
        double g = 0;
        units_parse_double(tune_grid_lookup(&t->grid, choice, t->gpus_key), &g);
        return g;
    }
    return 0;
}

/* Runs configuration idx; fills cfg. Returns true when it measured anything. */
static bool run_config(const tune_opts *t, size_t idx, size_t total, const char *stem, json_t *cfg) {
    size_t choice[TUNE_MAX_KEYS];
    tune_grid_point(&t->grid, idx, choice);
    char err[1024];
    const char *label = json_string_value(json_object_get(cfg, "label"));
    int port = tune_free_port(err, sizeof err);
    if (port < 0) {
        json_object_set_new(cfg, "status", json_string("failed"));
        json_object_set_new(cfg, "error", json_string(err));
        return false;
    }
    char *cmd = tune_template_render(t->server_cmd, &t->grid, choice, port, true, err, sizeof err);
    char *url = tune_template_render(t->url, &t->grid, choice, port, true, err, sizeof err);
    char log_path[1024], sweep_path[1024];
    snprintf(log_path, sizeof log_path, "%s.%zu.log", stem, idx);
    snprintf(sweep_path, sizeof sweep_path, "%s.%zu.sweep.json", stem, idx);
    remove(log_path);
    json_object_set_new(cfg, "port", json_integer(port));
    json_object_set_new(cfg, "command", json_string(cmd ? cmd : ""));
    json_object_set_new(cfg, "url", json_string(url ? url : ""));
    json_object_set_new(cfg, "log", json_string(log_path));
    json_object_set_new(cfg, "sweep_file", json_string(sweep_path));
    double speedup = cmd ? tune_detect_speedup(cmd) : 1;
    json_object_set_new(cfg, "speedup", speedup != 1 ? json_real(speedup) : json_null());
    log_info("config %zu/%zu [%s]: starting %s", idx + 1, total, label && *label ? label : "no grid", cmd ? cmd : "?");
    tune_proc p;
    bool measured = false;
    if (!cmd || !url || tune_proc_start(&p, cmd, log_path, err, sizeof err) < 0) {
        json_object_set_new(cfg, "status", json_string("failed"));
        json_object_set_new(cfg, "error", json_string(err));
        free(cmd);
        free(url);
        return false;
    }
    int64_t t0 = clock_now_ns();
    const char *hpath = NULL;
    int hr = tune_wait_healthy(&p, url, t->health_timeout_ns, &g_stop, &hpath, err, sizeof err);
    if (hr < 0) {
        bool was_alive = tune_proc_alive(&p);
        int how = tune_proc_stop(&p, t->stop_grace_ns);
        json_object_set_new(cfg, "status", json_string(hr == -3 ? "interrupted" : "failed"));
        json_object_set_new(cfg, "error", json_string(err));
        json_object_set_new(cfg, "stopped_by", was_alive ? json_string(how ? "SIGKILL" : "SIGTERM") : json_null());
        char *tail = tune_log_tail(log_path, 20, 4096);
        json_object_set_new(cfg, "log_tail", json_string(tail));
        if (hr != -3) log_warn("config %zu [%s] failed: %s%s%s", idx + 1, label, err, *tail ? "; log tail: " : "",
                               *tail ? (strrchr(tail, '\n') ? strrchr(tail, '\n') + 1 : tail) : "");
        free(tail);
        free(cmd);
        free(url);
        return false;
    }
    json_object_set_new(cfg, "healthy_after_s", json_real((clock_now_ns() - t0) / 1e9));
    json_object_set_new(cfg, "health_path", json_string(hpath));
    int sargc;
    char **sargv = config_argv(t, choice, port, url, sweep_path, &sargc);
    sweep_opts so;
    bench_opts b;
    int rc = sweep_opts_parse(&so, &b, sargc, sargv, "tune", NULL);
    json_t *sdoc = NULL;
    char *save_prefix = NULL;
    if (rc < 0) {
        so.print_table = false;
        if (so.save_prefix && asprintf(&save_prefix, "%s.%zu", so.save_prefix, idx) > 0) so.save_prefix = save_prefix;
        rc = sweep_run(&so, &b, &sdoc);
        sweep_opts_free(&so, &b);
    }
    bool alive = tune_proc_alive(&p);
    char died[128] = "";
    if (!alive) tune_describe_status(p.status, died, sizeof died);
    int how = tune_proc_stop(&p, t->stop_grace_ns);
    json_object_set_new(cfg, "stopped_by", alive ? json_string(how ? "SIGKILL" : "SIGTERM") : json_null());
    json_object_set_new(cfg, "sweep_exit_code", json_integer(rc));
    json_t *sum = sdoc ? tune_config_summary(sdoc, config_gpus(t, choice), t->objective) : NULL;
    measured = sum != NULL;
    const char *status = g_stop ? "interrupted" : !measured ? "failed" : rc == EXIT_OK && alive ? "ok" : "partial";
    json_object_set_new(cfg, "status", json_string(status));
    if (!alive) {
        char *tail = tune_log_tail(log_path, 20, 4096);
        snprintf(err, sizeof err, "the server %s during the sweep", died);
        json_object_set_new(cfg, "log_tail", json_string(tail));
        free(tail);
        json_object_set_new(cfg, "error", json_string(err));
    } else if (!measured) {
        json_object_set_new(cfg, "error", json_string(rc == EXIT_USAGE ? "the sweep could not start (pre-flight or dataset; "
                                                      "see the error line above)" : "the sweep measured no level"));
    } else if (json_is_true(json_object_get(sdoc, "partial"))) {
        json_object_set_new(cfg, "error", json_deep_copy(json_object_get(sdoc, "partial_reason")));
    }
    if (sum) json_object_set_new(cfg, "summary", sum);
    json_decref(sdoc);
    free(save_prefix);
    free_argv(sargv, sargc);
    free(cmd);
    free(url);
    return measured;
}

static json_t *new_doc(const tune_opts *t, int argc, char **argv, const bench_opts *b, double slo_pct) {
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char *line = cli_join_argv(argc, argv);
    json_t *grid = json_object();
    for (size_t i = 0; i < t->grid.n; i++) {
        json_t *vals = json_array();
        for (size_t j = 0; j < t->grid.axes[i].n; j++) json_array_append_new(vals, json_string(t->grid.axes[i].values[j]));
        json_object_set_new(grid, t->grid.axes[i].key, vals);
    }
    json_t *slo = json_object();
    if (b->summary.slo_ttft_ms > 0) json_object_set_new(slo, "ttft_ms", json_real(b->summary.slo_ttft_ms));
    if (b->summary.slo_tpot_ms > 0) json_object_set_new(slo, "tpot_ms", json_real(b->summary.slo_tpot_ms));
    if (b->summary.slo_e2el_ms > 0) json_object_set_new(slo, "e2el_ms", json_real(b->summary.slo_e2el_ms));
    char *sweep_line = cli_join_argv(t->nrest - 1, t->rest + 1);
    json_t *d = json_object();
    json_object_set_new(d, "schema", json_string(TUNE_SCHEMA));
    json_object_set_new(d, "tool", json_string("dsperf"));
    json_object_set_new(d, "version", json_string(DSPERF_VERSION));
    json_object_set_new(d, "command_line", json_string(line));
    json_object_set_new(d, "date", json_string(date));
    json_object_set_new(d, "server_cmd", json_string(t->server_cmd));
    json_object_set_new(d, "url", json_string(t->url));
    json_object_set_new(d, "grid", grid);
    json_object_set_new(d, "sweep_options", json_string(sweep_line ? sweep_line : ""));
    json_object_set_new(d, "gpus", t->gpus > 0 ? json_real(t->gpus) : json_null());
    json_object_set_new(d, "gpus_key", t->gpus_key ? json_string(t->gpus_key) : json_null());
    json_object_set_new(d, "objective", json_string(t->objective));
    json_object_set_new(d, "slo", slo);
    json_object_set_new(d, "slo_percentile", json_real(slo_pct));
    json_object_set_new(d, "health_timeout_s", json_real(t->health_timeout_ns / 1e9));
    json_object_set_new(d, "stop_grace_s", json_real(t->stop_grace_ns / 1e9));
    json_object_set_new(d, "target_note", json_null());
    json_object_set_new(d, "partial", json_false());
    json_object_set_new(d, "partial_reason", json_null());
    json_object_set_new(d, "configs", json_array());
    json_object_set_new(d, "pareto", json_null());
    json_object_set_new(d, "recommendation", json_null());
    json_object_set_new(d, "recommendation_note", json_null());
    free(line);
    free(sweep_line);
    return d;
}

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
    tune_analyse(doc);
    tune_print(stdout, doc);
    json_decref(doc);
    return EXIT_OK;
}

int cmd_tune(int argc, char **argv) {
    for (int i = 1; i + 1 < argc; i++)
        if (!strcmp(argv[i], "--show")) return show(argv[i + 1]);
    tune_opts t;
    int rc = parse_own(argc, argv, &t);
    if (rc >= 0) { free_opts(&t); return rc; }
    /* the sweep options are checked once, up front, with the first configuration's values */
    size_t total = tune_grid_size(&t.grid);
    size_t choice[TUNE_MAX_KEYS];
    tune_grid_point(&t.grid, 0, choice);
    char *stem = out_stem(t.out_path);
    char probe_sweep[1100];
    snprintf(probe_sweep, sizeof probe_sweep, "%s.0.sweep.json", stem);
    int pargc;
    char **pargv = config_argv(&t, choice, 1, "http://127.0.0.1:1", probe_sweep, &pargc);
    sweep_opts so;
    bench_opts b;
    rc = sweep_opts_parse(&so, &b, pargc, pargv, "tune", NULL);
    if (rc >= 0) {
        free_argv(pargv, pargc);
        free(stem);
        free_opts(&t);
        return rc == EXIT_OK ? EXIT_USAGE : rc;
    }
    if (t.dry_run) {
        sweep_opts_free(&so, &b);
        free_argv(pargv, pargc);
        for (size_t i = 0; i < total; i++) {
            tune_grid_point(&t.grid, i, choice);
            char err[256];
            char *label = tune_grid_label(&t.grid, choice);
            char *cmd = tune_template_render(t.server_cmd, &t.grid, choice, -1, true, err, sizeof err);
            char *url = tune_template_render(t.url, &t.grid, choice, -1, true, err, sizeof err);
            double g = config_gpus(&t, choice);
            char gpus[48] = "";
            if (g > 0) snprintf(gpus, sizeof gpus, " %g GPU%s", g, g == 1 ? "" : "s");
            printf("%zu [%s]%s: %s\n   url %s, log %s.%zu.log, sweep %s.%zu.sweep.json\n", i,
                   label && *label ? label : "no grid", gpus, cmd ? cmd : "?", url ? url : "?", stem, i, stem, i);
            free(label);
            free(cmd);
            free(url);
        }
        free(stem);
        free_opts(&t);
        return EXIT_OK;
    }
    json_t *doc = new_doc(&t, argc, argv, &b, so.slo_pct);
    bool quiet = b.quiet;
    sweep_opts_free(&so, &b);
    free_argv(pargv, pargc);
    /* a grid key no placeholder uses gives configurations that differ only in name */
    for (size_t k = 0; k < t.grid.n; k++) {
        char ph[160];
        snprintf(ph, sizeof ph, "{%s}", t.grid.axes[k].key);
        bool used = strstr(t.server_cmd, ph) || strstr(t.url, ph);
        for (int i = 1; i < t.nrest && !used; i++) used = strstr(t.rest[i], ph) != NULL;
        if (!used) log_warn("grid key %s appears in no placeholder ({%s}): its configurations differ only in name",
                            t.grid.axes[k].key, t.grid.axes[k].key);
    }
    bench_raise_fd_limit();
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    json_t *configs = json_object_get(doc, "configs");
    size_t measured = 0;
    double speedup = 1;
    log_info("tune: %zu configuration%s, results in %s", total, total == 1 ? "" : "s", t.out_path);
    for (size_t i = 0; i < total && !g_stop; i++) {
        tune_grid_point(&t.grid, i, choice);
        json_t *cfg = json_object();
        char *label = tune_grid_label(&t.grid, choice);
        json_t *settings = json_object();
        for (size_t k = 0; k < t.grid.n; k++)
            json_object_set_new(settings, t.grid.axes[k].key, json_string(t.grid.axes[k].values[choice[k]]));
        double g = config_gpus(&t, choice);
        json_object_set_new(cfg, "index", json_integer((json_int_t)i));
        json_object_set_new(cfg, "label", json_string(label ? label : ""));
        json_object_set_new(cfg, "settings", settings);
        json_object_set_new(cfg, "gpus", g > 0 ? json_real(g) : json_null());
        json_object_set_new(cfg, "status", json_string("running"));
        json_object_set_new(cfg, "error", json_null());
        json_array_append_new(configs, cfg);
        save(doc, t.out_path);
        if (run_config(&t, i, total, stem, cfg)) measured++;
        double k = json_number_value(json_object_get(cfg, "speedup"));
        if (k > 0) speedup = k;
        if (speedup != 1) {
            char note[400];
            snprintf(note, sizeof note, "the server runs `dsperf serve --speedup %g`: engine time runs %gx wall time, so "
                     "throughputs are %gx and latencies 1/%g of what the simulated hardware would give; the ranking holds",
                     speedup, speedup, speedup, speedup);
            json_object_set_new(doc, "target_note", json_string(note));
        }
        if (!g_stop) log_info("config %zu/%zu [%s]: %s", i + 1, total, label && *label ? label : "no grid",
                              json_string_value(json_object_get(cfg, "status")));
        free(label);
        save(doc, t.out_path);
    }
    int exit_code = measured ? EXIT_OK : EXIT_RUN_FAILED;
    if (g_stop) {
        json_object_set_new(doc, "partial", json_true());
        json_object_set_new(doc, "partial_reason", json_string("interrupted (SIGINT/SIGTERM): the configurations measured "
                                                               "so far are kept; the running server was stopped"));
        exit_code = EXIT_RUN_FAILED;
    }
    if (save(doc, t.out_path) < 0) exit_code = EXIT_RUN_FAILED;
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
