/* tune_run — running `dsperf tune`'s configurations: one server per grid point from the launch
 * template (started in its own process group, health-checked, swept with sweep_run, stopped), or
 * one offline `dsperf sim` run per level with --sim-flags; each configuration's sweep file and
 * summary, and the tune document they fill. Used by cmd_tune, which parses the options and
 * drives the loop over the grid, as sweep_run is by cmd_sweep. */
#include "cli/tune_run.h"
#include "common/stop.h"
#include "cli/cli.h"
#include "cli/bench_run.h"
#include "results/results.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include "common/fileio.h"
#include "common/redact.h"
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

/* set by a signal: the running server or simulator is stopped and no configuration starts */
static ds_stop_flag g_stop;
void tune_run_request_stop(void) { g_stop = 1; sweep_run_request_stop(); }
bool tune_run_stopped(void) { return g_stop != 0; }

/* The sweep's argv for one configuration: the rest with placeholders filled, then --url, --out. */
char **tune_config_argv(const tune_opts *t, const size_t *choice, int port, const char *url, const char *sweep_path,
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

void tune_free_argv(char **v, int n) {
    for (int i = 0; i < n; i++) free(v[i]);
    free(v);
}

/* The stem of --out: "runs/tune.json" → "runs/tune". */
char *tune_out_stem(const char *out) {
    char *s = strdup(out);
    size_t n = strlen(s);
    if (n > 5 && !strcmp(s + n - 5, ".json")) s[n - 5] = 0;
    return s;
}

int tune_save(json_t *doc, const char *path) {
    tune_analyse(doc);
    char err[512];
    if (results_write_json(path, doc, err, sizeof err) < 0) { log_error("%s", err); return -1; }
    return 0;
}

double tune_config_gpus(const tune_opts *t, const size_t *choice) {
    if (t->gpus > 0) return t->gpus;
    if (t->gpus_key) {
        double g = 0;
        units_parse_double(tune_grid_lookup(&t->grid, choice, t->gpus_key), &g);
        return g;
    }
    return 0;
}

/* Runs configuration idx; fills cfg. Returns true when it measured anything. */
bool tune_run_config(const tune_opts *t, size_t idx, size_t total, const char *stem, json_t *cfg) {
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
    json_object_set_new(cfg, "command", redact_json(cmd ? cmd : ""));
    json_object_set_new(cfg, "url", redact_json(url ? url : ""));
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
        redact_file(log_path);   /* a server may print its own command line, keys and all */
        json_object_set_new(cfg, "status", json_string(hr == -3 ? "interrupted" : "failed"));
        json_object_set_new(cfg, "error", redact_json(err));   /* it quotes the health URL */
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
    char **sargv = tune_config_argv(t, choice, port, url, sweep_path, &sargc);
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
    /* Still alive is not still serving: a server on its way out (a sanitizer's exit checks, a crash
     * handler) or hung answers nothing. One that does not answer its health check gets a few
     * seconds to show whether it is exiting; one that stays up without answering is reported so. */
    bool alive = tune_proc_alive(&p), unresponsive = false;
    if (alive && !g_stop) {
        const char *hp2;
        char herr[256];
        if (tune_wait_healthy(&p, url, 2 * NS_PER_S, &g_stop, &hp2, herr, sizeof herr) != 0) {
            for (int i = 0; i < 50 && (alive = tune_proc_alive(&p)); i++) usleep(100 * 1000);
            unresponsive = alive;
        }
    }
    char died[128] = "";
    if (!alive) tune_describe_status(p.status, died, sizeof died);
    int how = tune_proc_stop(&p, t->stop_grace_ns);
    redact_file(log_path);
    json_object_set_new(cfg, "stopped_by", alive ? json_string(how ? "SIGKILL" : "SIGTERM") : json_null());
    json_object_set_new(cfg, "sweep_exit_code", json_integer(rc));
    json_t *sum = sdoc ? tune_config_summary(sdoc, tune_config_gpus(t, choice), t->objective) : NULL;
    measured = sum != NULL;
    const char *status = g_stop ? "interrupted" : !measured ? "failed" : rc == EXIT_OK && alive && !unresponsive ? "ok" : "partial";
    json_object_set_new(cfg, "status", json_string(status));
    if (unresponsive) {
        json_object_set_new(cfg, "error", json_string("the server stopped answering its health check during the sweep"));
    } else if (!alive) {
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
    tune_free_argv(sargv, sargc);
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

bool tune_arg_given(const tune_opts *t, const char *name) {
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
    av_add(a, "--max-error-rate");
    av_addf(a, "%.9g", b->max_error_rate);
    char slo[160] = "";
    size_t n = 0;
    if (b->summary.slo_ttft_ms > 0) n += (size_t)snprintf(slo + n, sizeof slo - n, "ttft=%.9gms,", b->summary.slo_ttft_ms);
    if (b->summary.slo_tpot_ms > 0 && n < sizeof slo) n += (size_t)snprintf(slo + n, sizeof slo - n, "tpot=%.9gms,", b->summary.slo_tpot_ms);
    if (b->summary.slo_e2el_ms > 0 && n < sizeof slo) n += (size_t)snprintf(slo + n, sizeof slo - n, "e2el=%.9gms,", b->summary.slo_e2el_ms);
    if (b->summary.slo_ttfa_ms > 0 && n < sizeof slo) n += (size_t)snprintf(slo + n, sizeof slo - n, "ttfa=%.9gms,", b->summary.slo_ttfa_ms);
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
    if (b->summary.slo_ttfa_ms > 0) json_object_set_new(slo, "ttfa_ms", json_real(b->summary.slo_ttfa_ms));
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
bool tune_run_config_sim(const tune_opts *t, size_t idx, size_t total, const char *stem, json_t *cfg) {
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
    char **sargv = tune_config_argv(t, choice, 1, "http://127.0.0.1:1", sweep_path, &sargc);
    sweep_opts so;
    bench_opts b;
    int rc = sweep_opts_parse(&so, &b, sargc, sargv, "tune", NULL);
    bool measured = false;
    json_t *sdoc = NULL;
    if (rc < 0) {
        bool requests_given = tune_arg_given(t, "--requests");
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
                /* exit 1 with results written: a level measured and judged failed by the run policy
                 * (results/validity.h), kept as a sweep keeps such a level */
                bool judged = WIFEXITED(p.status) && WEXITSTATUS(p.status) == 1 && access(level_path, R_OK) == 0;
                if (!judged && (!WIFEXITED(p.status) || WEXITSTATUS(p.status) != 0)) {
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
    double g = tune_config_gpus(t, choice);
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
    tune_free_argv(sargv, sargc);
    free(flags);
    return measured;
}

json_t *tune_new_doc(const tune_opts *t, int argc, char **argv, const bench_opts *b, double slo_pct) {
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    char *line = cli_command_line(argc, argv);
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
    if (b->summary.slo_ttfa_ms > 0) json_object_set_new(slo, "ttfa_ms", json_real(b->summary.slo_ttfa_ms));
    char *sweep_line = cli_join_argv(t->nrest - 1, t->rest + 1);
    json_t *d = json_object();
    json_object_set_new(d, "schema", json_string(TUNE_SCHEMA));
    json_object_set_new(d, "tool", json_string("dsperf"));
    json_object_set_new(d, "version", json_string(DSPERF_VERSION));
    json_object_set_new(d, "command_line", json_string(line));
    json_object_set_new(d, "date", json_string(date));
    json_object_set_new(d, "mode", json_string(t->sim_flags ? "sim" : "server"));
    json_object_set_new(d, "server_cmd", redact_json(t->server_cmd));
    json_object_set_new(d, "sim_flags", redact_json(t->sim_flags));
    json_object_set_new(d, "url", redact_json(t->sim_flags ? NULL : t->url));
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
