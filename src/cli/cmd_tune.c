/* cmd_tune — `dsperf tune`: for every point of a grid of server settings, start the server from a
 * launch template, wait for it to be healthy, run a sweep (sweep_run, as `dsperf sweep` does), stop
 * it, and record what the configuration achieved; then the Pareto front of throughput per GPU
 * against tail latency and the recommendation under the SLO. The tune file is rewritten atomically
 * after every configuration, and Ctrl-C stops the running server before exiting. */
#include "cli/cli.h"
#include "cli/history_opts.h"
#include "common/fdlimit.h"
#include "cli/bench_run.h"
#include "cli/sweep_run.h"
#include "tune/tune.h"
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
"  --out FILE              tune results, schema dsperf.tune/1 (default tune.json); beside it\n"
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

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; sweep_run_request_stop(); }

typedef struct {
    const char *server_cmd, *sim_flags, *url, *out_path, *gpus_key, *objective;
    double gpus;
    bool dry_run;
    int64_t health_timeout_ns, stop_grace_ns;
    tune_grid grid;
    char **rest;                /* the sweep options, argv-style (rest[0] = "tune") */
    int nrest;
    history_opts hist;          /* --db / --label: the tune and each configuration's sweep recorded */
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
        else if (IS("--db") || IS("--label")) {
            bool db = IS("--db");
            if (!(val = VAL())) goto missing;
            if (history_opts_apply(&t->hist, db ? "db" : "label", val) != 0) return EXIT_USAGE;
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

/* A configuration's sweep into the history, labelled with its grid values (tune.seqs=64), so
 * `dsperf history best` ranks the settings of every tune run of this workload. */
static int record_config_sweep(const tune_opts *t, const json_t *cfg) {
    const char *path = json_string_value(json_object_get(cfg, "sweep_file"));
    json_t *sdoc = path ? json_load_file(path, 0, NULL) : NULL;
    if (!sdoc || !json_array_size(json_object_get(sdoc, "levels"))) { json_decref(sdoc); return EXIT_OK; }
    char buf[HISTORY_MAX_LABELS][256];
    const char *extra[HISTORY_MAX_LABELS];
    int n = 0;
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(cfg, "settings"), k, v) {
        if (n == HISTORY_MAX_LABELS) break;
        snprintf(buf[n], sizeof buf[n], "tune.%s=%s", k, json_string_value(v) ? json_string_value(v) : "");
        char err[256];
        if (history_check_label(buf[n], err, sizeof err) == 0) { extra[n] = buf[n]; n++; }
    }
    int rc = history_opts_record(&t->hist, sdoc, extra, n);
    json_decref(sdoc);
    return rc;
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

/* ---- --sim-flags: the offline simulator, one `dsperf sim` run per level ---- */

/* Requests per level when neither --requests nor (open loop) --duration was given: enough for a
 * p99 at every level. */
static size_t sim_default_requests(double load) {
    double n = 10 * load;
    return n < 200 ? 200 : n > 20000 ? 20000 : (size_t)n;
}

static bool arg_given(const tune_opts *t, const char *name) {
    size_t n = strlen(name);
    for (int i = 1; i < t->nrest; i++)
        if (!strncmp(t->rest[i], name, n) && (t->rest[i][n] == 0 || t->rest[i][n] == '=')) return true;
    return false;
}

typedef struct { char **v; int n, cap; } argvec;
static void av_add(argvec *a, const char *s) {
    if (a->n + 2 > a->cap) { a->cap = a->cap ? 2 * a->cap : 32; a->v = realloc(a->v, (size_t)a->cap * sizeof *a->v); }
    a->v[a->n++] = strdup(s);
    a->v[a->n] = NULL;
}
static void av_addf(argvec *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void av_addf(argvec *a, const char *fmt, ...) {
    char buf[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    av_add(a, buf);
}
static void av_free(argvec *a) { for (int i = 0; i < a->n; i++) free(a->v[i]); free(a->v); }

/* `dsperf sim` for one level: the configuration's flags, then the load from the sweep options. */
static void sim_level_args(argvec *a, const char *exe, const wordexp_t *we, const bench_opts *b, const sweep_opts *so,
                           bool requests_given, double load, uint64_t seed, const char *out) {
    av_add(a, exe);
    av_add(a, "sim");
    for (size_t i = 0; i < we->we_wordc; i++) av_add(a, we->we_wordv[i]);
    av_add(a, "--dataset");
    av_add(a, b->dataset_spec);
    av_add(a, "--seed");
    av_addf(a, "%llu", (unsigned long long)seed);
    av_add(a, "--quiet");
    av_add(a, "--out");
    av_add(a, out);
    if (so->rate_ladder) {
        av_add(a, "--rate");
        av_addf(a, "%.9g/s", load);
        av_add(a, "--arrival");
        av_add(a, b->arrival_spec);
        if (b->plan.max_concurrency) { av_add(a, "--max-concurrency"); av_addf(a, "%d", b->plan.max_concurrency); }
    } else {
        av_add(a, "--concurrency");
        av_addf(a, "%.0f", load);
        if (b->plan.think_ns) { av_add(a, "--think"); av_addf(a, "%lldns", (long long)b->plan.think_ns); }
    }
    if (requests_given) { av_add(a, "--requests"); av_addf(a, "%zu", b->plan.requests); }
    else if (so->rate_ladder && b->plan.duration_ns) { av_add(a, "--duration"); av_addf(a, "%lldns", (long long)b->plan.duration_ns); }
    else { av_add(a, "--requests"); av_addf(a, "%zu", sim_default_requests(load)); }
    if (b->plan.warmup) { av_add(a, "--warmup"); av_addf(a, "%zu", b->plan.warmup); }
    char slo[160] = "";
    size_t n = 0;
    if (b->summary.slo_ttft_ms > 0) n += (size_t)snprintf(slo + n, sizeof slo - n, "ttft=%.9gms,", b->summary.slo_ttft_ms);
    if (b->summary.slo_tpot_ms > 0 && n < sizeof slo) n += (size_t)snprintf(slo + n, sizeof slo - n, "tpot=%.9gms,", b->summary.slo_tpot_ms);
    if (b->summary.slo_e2el_ms > 0 && n < sizeof slo) n += (size_t)snprintf(slo + n, sizeof slo - n, "e2el=%.9gms,", b->summary.slo_e2el_ms);
    if (n && n < sizeof slo) { slo[n - 1] = 0; av_add(a, "--slo"); av_add(a, slo); }
    char pct[256] = "";
    n = 0;
    for (int i = 0; i < b->summary.n_percentiles && n < sizeof pct; i++)
        n += (size_t)snprintf(pct + n, sizeof pct - n, "%s%.9g", i ? "," : "", b->summary.percentiles[i]);
    if (n) { av_add(a, "--percentiles"); av_add(a, pct); }
}

/* The sweep document of a simulated configuration, as sweep_run would start it. */
static json_t *sim_sweep_doc(const tune_opts *t, const sweep_opts *so, const bench_opts *b, const char *flags) {
    json_t *slo = json_object();
    if (b->summary.slo_ttft_ms > 0) json_object_set_new(slo, "ttft_ms", json_real(b->summary.slo_ttft_ms));
    if (b->summary.slo_tpot_ms > 0) json_object_set_new(slo, "tpot_ms", json_real(b->summary.slo_tpot_ms));
    if (b->summary.slo_e2el_ms > 0) json_object_set_new(slo, "e2el_ms", json_real(b->summary.slo_e2el_ms));
    const char *axis = so->rate_ladder ? "rate" : "concurrency";
    json_t *cfg = json_pack("{s:s,s:s,s:s,s:s,s:s,s:i,s:f,s:o}", "url", "sim", "sim_flags", flags, "mode", axis, "ladder",
                            so->rate_ladder ? so->rate_ladder : so->conc_ladder, "dataset", b->dataset_spec, "repeats",
                            so->repeats, "slo_percentile", so->slo_pct, "slo", slo);
    (void)t;
    return json_pack("{s:s,s:s,s:s,s:s,s:n,s:o,s:s,s:b,s:n,s:[],s:n,s:n,s:n}", "schema", SWEEP_SCHEMA, "tool", "dsperf",
                     "version", DSPERF_VERSION, "command_line", b->command_line ? b->command_line : "", "environment",
                     "config", cfg, "axis", axis, "partial", 0, "partial_reason", "levels", "knee", "max_goodput", "ci");
}

static const char *self_exe(void) {
    static char path[4096];
    if (!path[0]) {
        ssize_t n = readlink("/proc/self/exe", path, sizeof path - 1);
        if (n <= 0) snprintf(path, sizeof path, "dsperf");
        else path[n] = 0;
    }
    return path;
}

/* Runs configuration idx on the offline simulator; fills cfg. True when it measured anything. */
static bool run_config_sim(const tune_opts *t, size_t idx, size_t total, const char *stem, json_t *cfg) {
    size_t choice[TUNE_MAX_KEYS];
    tune_grid_point(&t->grid, idx, choice);
    char err[1024];
    const char *label = json_string_value(json_object_get(cfg, "label"));
    char *flags = tune_template_render(t->sim_flags, &t->grid, choice, -1, true, err, sizeof err);
    char log_path[1024], sweep_path[1024], level_path[1100];
    snprintf(log_path, sizeof log_path, "%s.%zu.log", stem, idx);
    snprintf(sweep_path, sizeof sweep_path, "%s.%zu.sweep.json", stem, idx);
    snprintf(level_path, sizeof level_path, "%s.%zu.level.json", stem, idx);
    remove(log_path);
    json_object_set_new(cfg, "sim_flags", json_string(flags ? flags : ""));
    json_object_set_new(cfg, "log", json_string(log_path));
    json_object_set_new(cfg, "sweep_file", json_string(sweep_path));
    log_info("config %zu/%zu [%s]: dsperf sim %s", idx + 1, total, label && *label ? label : "no grid", flags ? flags : "?");
    wordexp_t we;
    int wrc = flags ? wordexp(flags, &we, WRDE_NOCMD) : -1;
    if (wrc != 0) {
        if (flags) snprintf(err, sizeof err, "cannot split --sim-flags '%s' into words (unbalanced quotes or $(...))", flags);
        json_object_set_new(cfg, "status", json_string("failed"));
        json_object_set_new(cfg, "error", json_string(err));
        free(flags);
        return false;
    }
    int sargc;
    char **sargv = config_argv(t, choice, 1, "http://127.0.0.1:1", sweep_path, &sargc);
    sweep_opts so;
    bench_opts b;
    int rc = sweep_opts_parse(&so, &b, sargc, sargv, "tune", NULL);
    bool measured = false;
    json_t *sdoc = NULL;
    if (rc < 0) {
        bool requests_given = arg_given(t, "--requests");
        sdoc = sim_sweep_doc(t, &so, &b, flags);
        json_t *levels = json_object_get(sdoc, "levels");
        const char *kind = so.rate_ladder ? "rate" : "concurrency";
        for (size_t i = 0; i < so.n_levels && !g_stop && rc < 0; i++) {
            for (int k = 0; k < so.repeats && !g_stop; k++) {
                argvec a = { 0 };
                sim_level_args(&a, self_exe(), &we, &b, &so, requests_given, so.ladder[i], b.plan.seed + (uint64_t)k, level_path);
                if (i == 0 && k == 0) {
                    char *line = cli_join_argv(a.n, a.v);
                    json_object_set_new(cfg, "command", json_string(line));
                    free(line);
                }
                tune_proc p;
                int r = tune_proc_spawn(&p, a.v, log_path, err, sizeof err);
                av_free(&a);
                if (r < 0) { rc = EXIT_RUN_FAILED; break; }
                if (tune_proc_wait(&p, &g_stop, t->stop_grace_ns) < 0) break;
                if (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0) {
                    char st[64];
                    tune_describe_status(p.status, st, sizeof st);
                    snprintf(err, sizeof err, "dsperf sim %s at %s %.6g", st, kind, so.ladder[i]);
                    rc = EXIT_RUN_FAILED;
                    break;
                }
                json_error_t je;
                json_t *res = json_load_file(level_path, 0, &je);
                remove(level_path);
                if (!res) { snprintf(err, sizeof err, "dsperf sim wrote no results: %s", je.text); rc = EXIT_RUN_FAILED; break; }
                json_t *lv = json_pack("{s:f,s:i,s:s,s:I,s:b,s:b,s:b,s:n,s:o}", "load", so.ladder[i], "repeat", k, "kind", kind,
                                       "seed", (json_int_t)(b.plan.seed + (uint64_t)k), "saturated", 0, "early_stopped", 0,
                                       "interrupted", 0, "over_saturation", "results", res);
                json_array_append_new(levels, lv);
                if (json_is_null(json_object_get(sdoc, "environment")))
                    json_object_set(sdoc, "environment", json_object_get(res, "environment"));
                if (!b.quiet) {
                    sweep_print_level(stdout, lv, kind, json_array_size(levels) == 1);
                    fflush(stdout);
                }
                sweep_analyse(sdoc, so.slo_pct);
                char e2[512];
                if (results_write_json(sweep_path, sdoc, e2, sizeof e2) < 0) log_warn("%s", e2);
            }
        }
        if (rc >= 0 || g_stop) {
            json_object_set_new(sdoc, "partial", json_true());
            json_object_set_new(sdoc, "partial_reason", json_string(g_stop ? "interrupted (SIGINT/SIGTERM)" : err));
        }
        sweep_analyse(sdoc, so.slo_pct);
        char e2[512];
        if (results_write_json(sweep_path, sdoc, e2, sizeof e2) < 0) log_warn("%s", e2);
        sweep_opts_free(&so, &b);
    } else {
        snprintf(err, sizeof err, "the sweep options do not apply to this configuration (see the error line above)");
    }
    wordfree(&we);
    /* GPUs: --gpus or --gpus-key, else the simulator's own (its config's gpus or tp) */
    double g = config_gpus(t, choice);
    if (g <= 0 && sdoc && json_array_size(json_object_get(sdoc, "levels"))) {
        const json_t *sim = json_object_get(json_object_get(json_object_get(json_array_get(json_object_get(sdoc, "levels"), 0),
                                                                            "results"), "config"), "sim");
        const json_t *v = json_object_get(sim, "gpus");
        if (!json_is_number(v)) v = json_object_get(sim, "tp");
        if (json_is_number(v)) {
            g = json_number_value(v);
            json_object_set_new(cfg, "gpus", json_real(g));
            json_object_set_new(cfg, "gpus_source", json_string("the simulator's --gpus/--tp"));
        }
    }
    json_t *sum = sdoc ? tune_config_summary(sdoc, g, t->objective) : NULL;
    measured = sum != NULL;
    const char *status = g_stop ? "interrupted" : !measured ? "failed" : rc < 0 ? "ok" : "partial";
    json_object_set_new(cfg, "status", json_string(status));
    if (rc >= 0) {
        json_object_set_new(cfg, "error", json_string(err));
        char *tail = tune_log_tail(log_path, 20, 4096);
        json_object_set_new(cfg, "log_tail", json_string(tail));
        if (!g_stop) log_warn("config %zu [%s]: %s%s%s", idx + 1, label, err, *tail ? ": " : "",
                              *tail ? (strrchr(tail, '\n') ? strrchr(tail, '\n') + 1 : tail) : "");
        free(tail);
    }
    if (sum) json_object_set_new(cfg, "summary", sum);
    json_decref(sdoc);
    free_argv(sargv, sargc);
    free(flags);
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
    json_object_set_new(d, "mode", json_string(t->sim_flags ? "sim" : "server"));
    json_object_set_new(d, "server_cmd", t->server_cmd ? json_string(t->server_cmd) : json_null());
    json_object_set_new(d, "sim_flags", t->sim_flags ? json_string(t->sim_flags) : json_null());
    json_object_set_new(d, "url", t->sim_flags ? json_null() : json_string(t->url));
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
    if (t.sim_flags) {
        const char *why = so.autom ? "--auto needs a live server; give --concurrency or --rate"
                        : so.conc_ladder && b.plan.duration_ns && !arg_given(&t, "--requests")
                        ? "closed-loop levels on the simulator need --requests N (it runs on a virtual clock, not for a --duration)"
                        : NULL;
        if (why) {
            log_error("--sim-flags: %s", why);
            sweep_opts_free(&so, &b);
            free_argv(pargv, pargc);
            free(stem);
            free_opts(&t);
            return EXIT_USAGE;
        }
    }
    if (t.dry_run) {
        sweep_opts_free(&so, &b);
        free_argv(pargv, pargc);
        for (size_t i = 0; i < total; i++) {
            tune_grid_point(&t.grid, i, choice);
            char err[256];
            char *label = tune_grid_label(&t.grid, choice);
            char *cmd = t.sim_flags ? tune_template_render(t.sim_flags, &t.grid, choice, -1, true, err, sizeof err)
                                    : tune_template_render(t.server_cmd, &t.grid, choice, -1, true, err, sizeof err);
            char *url = tune_template_render(t.url, &t.grid, choice, -1, true, err, sizeof err);
            double g = config_gpus(&t, choice);
            char gpus[48] = "";
            if (g > 0) snprintf(gpus, sizeof gpus, " %g GPU%s", g, g == 1 ? "" : "s");
            if (t.sim_flags)
                printf("%zu [%s]%s: dsperf sim %s\n   log %s.%zu.log, sweep %s.%zu.sweep.json\n", i,
                       label && *label ? label : "no grid", gpus, cmd ? cmd : "?", stem, i, stem, i);
            else
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
        bool used = strstr(t.sim_flags ? t.sim_flags : t.server_cmd, ph) || strstr(t.url, ph);
        for (int i = 1; i < t.nrest && !used; i++) used = strstr(t.rest[i], ph) != NULL;
        if (!used) log_warn("grid key %s appears in no placeholder ({%s}): its configurations differ only in name",
                            t.grid.axes[k].key, t.grid.axes[k].key);
    }
    fd_limit_prepare();     /* thousands of streams: before any thread starts */
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    json_t *configs = json_object_get(doc, "configs");
    size_t measured = 0;
    int exit_history = EXIT_OK;
    double speedup = 1;
    /* a file that cannot be written would lose every measurement: say so before starting servers */
    if (history_opts_check(&t.hist) != EXIT_OK || save(doc, t.out_path) < 0) {
        json_decref(doc);
        free(stem);
        free_opts(&t);
        return EXIT_USAGE;
    }
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
        if (t.sim_flags ? run_config_sim(&t, i, total, stem, cfg) : run_config(&t, i, total, stem, cfg)) measured++;
        double k = json_number_value(json_object_get(cfg, "speedup"));
        if (k > 0) speedup = k;
        if (t.sim_flags) {
            json_object_set_new(doc, "target_note", json_string("the offline simulator (`dsperf sim`) on a virtual clock: "
                "figures are the simulated hardware's, without network or client costs"));
        } else if (speedup != 1) {
            char note[400];
            snprintf(note, sizeof note, "the server runs `dsperf serve --speedup %g`: engine time runs %gx wall time, so "
                     "throughputs are %gx and latencies 1/%g of what the simulated hardware would give; the ranking holds",
                     speedup, speedup, speedup, speedup);
            json_object_set_new(doc, "target_note", json_string(note));
        }
        if (!g_stop) log_info("config %zu/%zu [%s]: %s", i + 1, total, label && *label ? label : "no grid",
                              json_string_value(json_object_get(cfg, "status")));
        if (t.hist.db && record_config_sweep(&t, cfg) != EXIT_OK) exit_history = EXIT_RUN_FAILED;
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
    if (history_opts_record(&t.hist, doc, NULL, 0) != EXIT_OK || exit_history != EXIT_OK) exit_code = EXIT_RUN_FAILED;
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
