/* run/tune — running `dsperf tune`'s configurations: one server per grid point from the launch
 * template (started in its own process group, health-checked, swept with run/sweep.h, stopped), or
 * one simulated run per level in this process (run/sim.h) with --sim-flags; each configuration's
 * sweep file and summary, and the tune document they fill; for --dry-run, the configurations as
 * they would run (tune_plan). Used by cmd_tune, which parses the options and prints, as
 * run/sweep.h is by cmd_sweep. */
#include "run/tune.h"
#include "run/sweep_doc.h"
#include "common/version.h"
#include "common/stop.h"
#include "run/bench.h"
#include "engine/sim_interval.h"
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

ds_result tune_plan(const tune_opts *t, tune_planned **out, size_t *n) {
    *n = tune_grid_size(&t->grid);
    if (!(*out = calloc(*n ? *n : 1, sizeof **out))) return DS_ENOMEM;
    size_t choice[TUNE_MAX_KEYS];
    char err[256];   /* the templates were checked when parsed: a render that fails shows as "?" */
    for (size_t i = 0; i < *n; i++) {
        tune_planned *p = &(*out)[i];
        tune_grid_point(&t->grid, i, choice);
        char *cmd = tune_template_render(t->sim_flags ? t->sim_flags : t->server_cmd, &t->grid, choice, -1, true, err, sizeof err);
        char *url = tune_template_render(t->url, &t->grid, choice, -1, true, err, sizeof err);
        p->label = tune_grid_label(&t->grid, choice);
        p->command = redact_text(cmd);   /* printed: no credentials */
        p->url = redact_text(url);
        p->gpus = tune_config_gpus(t, choice);
        free(cmd);
        free(url);
    }
    return DS_OK;
}

void tune_plan_free(tune_planned *p, size_t n) {
    for (size_t i = 0; p && i < n; i++) {
        free(p[i].label);
        free(p[i].command);
        free(p[i].url);
    }
    free(p);
}

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
    /* the CLI's parser: -1 to go on, else the exit status it stopped with (its line said why) */
    int prc = t->parse_sweep(&so, &b, sargc, sargv);
    ds_result rc = prc < 0 || prc == EXIT_OK ? DS_OK : prc == EXIT_USAGE ? DS_EINVAL : DS_ERUN;
    json_t *sdoc = NULL;
    char *save_prefix = NULL;
    if (prc < 0) {
        so.print_table = false;
        if (so.save_prefix && asprintf(&save_prefix, "%s.%zu", so.save_prefix, idx) > 0) so.save_prefix = save_prefix;
        rc = sweep_run(&so, &b, &sdoc);
        t->free_sweep(&so, &b);
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
    /* the document's field is what `dsperf sweep` would have exited with */
    json_object_set_new(cfg, "sweep_exit_code", json_integer(prc >= 0 ? prc : ds_exit_code(rc)));
    json_t *sum = sdoc ? tune_config_summary(sdoc, tune_config_gpus(t, choice), t->objective) : NULL;
    measured = sum != NULL;
    const char *status = g_stop ? "interrupted" : !measured ? "failed" : rc == DS_OK && alive && !unresponsive ? "ok" : "partial";
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
        json_object_set_new(cfg, "error", json_string(rc == DS_EINVAL || rc == DS_ECONNECT ? "the sweep could not start (pre-flight or dataset; "
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

/* The sweep config of a simulated configuration. */
static json_t *sim_sweep_config(const sweep_opts *so, const bench_opts *b, const char *flags) {
    json_t *slo = json_object();
    if (b->summary.slo_ttft_ms > 0) json_object_set_new(slo, "ttft_ms", json_real(b->summary.slo_ttft_ms));
    if (b->summary.slo_tpot_ms > 0) json_object_set_new(slo, "tpot_ms", json_real(b->summary.slo_tpot_ms));
    if (b->summary.slo_e2el_ms > 0) json_object_set_new(slo, "e2el_ms", json_real(b->summary.slo_e2el_ms));
    if (b->summary.slo_ttfa_ms > 0) json_object_set_new(slo, "ttfa_ms", json_real(b->summary.slo_ttfa_ms));
    const char *axis = so->rate_ladder ? "rate" : "concurrency";
    return json_pack("{s:s,s:s,s:s,s:s,s:s,s:i,s:f,s:o}", "url", "sim", "sim_flags", flags, "mode", axis, "ladder",
                     so->rate_ladder ? so->rate_ladder : so->conc_ladder, "dataset", b->dataset_spec, "repeats",
                     so->repeats, "slo_percentile", so->slo_pct, "slo", slo);
}

/* One level's run: the configuration's simulator settings, then the load from the sweep options. */
static void sim_level(run_sim_opts *o, const bench_opts *b, const sweep_opts *so, bool requests_given, double load,
                      uint64_t seed) {
    o->dataset = b->dataset_spec;
    o->seed = seed;
    if (so->rate_ladder) {
        o->rate_per_s = load;
        o->concurrency = 0;
        o->arrival = b->arrival_spec;
        o->max_concurrency = b->plan.max_concurrency;
    } else {
        o->concurrency = (int)load;
        o->rate_per_s = 0;
        o->think_ns = b->plan.think_ns;
    }
    o->requests_given = true;
    o->duration_ns = 0;
    if (requests_given) o->requests = (long long)b->plan.requests;
    else if (so->rate_ladder && b->plan.duration_ns) { o->requests_given = false; o->duration_ns = b->plan.duration_ns; }
    else o->requests = (long long)sim_default_requests(load);
    o->warmup = (long long)b->plan.warmup;
    o->max_error_rate = b->max_error_rate;
    /* the sweep's SLOs and percentiles */
    o->summary.slo_ttft_ms = b->summary.slo_ttft_ms;
    o->summary.slo_tpot_ms = b->summary.slo_tpot_ms;
    o->summary.slo_e2el_ms = b->summary.slo_e2el_ms;
    o->summary.slo_ttfa_ms = b->summary.slo_ttfa_ms;
    if (b->summary.n_percentiles) {
        o->summary.n_percentiles = b->summary.n_percentiles;
        memcpy(o->summary.percentiles, b->summary.percentiles, sizeof o->summary.percentiles);
    }
}

/* What the first level ran, as the `dsperf sim` line that gives the same numbers (a record for the
 * reader; nothing runs it). */
static char *sim_level_line(const char *flags, const run_sim_opts *o) {
    char load[96], count[64];
    if (o->concurrency) snprintf(load, sizeof load, "--concurrency %d", o->concurrency);
    else snprintf(load, sizeof load, "--rate %.9g/s --arrival %s", o->rate_per_s, o->arrival);
    if (o->requests_given) snprintf(count, sizeof count, "--requests %lld", o->requests);
    else snprintf(count, sizeof count, "--duration %lldns", (long long)o->duration_ns);
    char *line = NULL;
    if (asprintf(&line, "dsperf sim %s --dataset '%s' --seed %llu %s %s --max-error-rate %.9g", flags, o->dataset,
                 (unsigned long long)o->seed, load, count, o->max_error_rate) < 0)
        return NULL;
    return line;
}

/* A line of the configuration's log (what each level ran, and why one failed), as a server's log is
 * kept beside its sweep. */
static void log_note(const char *path, const char *prefix, const char *text) {
    FILE *f = fopen(path, "a");
    if (!f) return;
    fprintf(f, "%s%s\n", prefix, text);
    fclose(f);
}
static void log_line(const char *path, const char *text) { log_note(path, "dsperf: error: sim: ", text); }

/* Runs configuration idx on the offline simulator, in this process; fills cfg. True when it
 * measured anything. */
bool tune_run_config_sim(const tune_opts *t, size_t idx, size_t total, const char *stem, json_t *cfg) {
    size_t choice[TUNE_MAX_KEYS];
    tune_grid_point(&t->grid, idx, choice);
    char err[1024];
    const char *label = json_string_value(json_object_get(cfg, "label"));
    char *flags = tune_template_render(t->sim_flags, &t->grid, choice, -1, true, err, sizeof err);
    char log_path[1024], sweep_path[1024];
    snprintf(log_path, sizeof log_path, "%s.%zu.log", stem, idx);
    snprintf(sweep_path, sizeof sweep_path, "%s.%zu.sweep.json", stem, idx);
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
    /* the configuration's simulator settings, parsed once as `dsperf sim` parses its own */
    char **words = calloc(we.we_wordc + 2, sizeof *words);
    words[0] = "sim";
    for (size_t i = 0; i < we.we_wordc; i++) words[i + 1] = we.we_wordv[i];
    run_sim_opts base;
    int prc = t->parse_sim((int)we.we_wordc + 1, words, &base, err, sizeof err);
    free(words);
    int sargc;
    char **sargv = tune_config_argv(t, choice, 1, "http://127.0.0.1:1", sweep_path, &sargc);
    sweep_opts so;
    bench_opts b;
    /* the CLI's parsers: -1 to go on, else the exit status they stopped with */
    int sprc = prc < 0 ? t->parse_sweep(&so, &b, sargc, sargv) : EXIT_USAGE;
    ds_result rc = DS_OK;        /* DS_OK: every level ran; else err says what stopped them */
    bool measured = false;
    json_t *sdoc = NULL;
    if (prc >= 0) {
        log_line(log_path, err);
        rc = DS_EINVAL;
    } else if (sprc < 0) {
        bool requests_given = tune_arg_given(t, "--requests");
        const char *kind = so.rate_ladder ? "rate" : "concurrency";
        sdoc = run_sweep_doc_new(b.command_line, kind, sim_sweep_config(&so, &b, flags), NULL);
        json_t *levels = json_object_get(sdoc, "levels");
        for (size_t i = 0; i < so.n_levels && !g_stop && rc == DS_OK; i++) {
            for (int k = 0; k < so.repeats && !g_stop; k++) {
                run_sim_opts lo = base;
                sim_level(&lo, &b, &so, requests_given, so.ladder[i], b.plan.seed + (uint64_t)k);
                char *line = sim_level_line(flags, &lo);
                if (i == 0 && k == 0) json_object_set_new(cfg, "command", json_string(line ? line : ""));
                if (line) log_note(log_path, "level: ", line);
                free(line);
                run_sim_result r;
                char why[512];
                ds_result sr = run_sim(&lo, &r, why, sizeof why);
                /* a level measured and judged failed by the run policy (results/validity.h) is kept,
                 * as a sweep keeps such a level */
                if (sr != DS_OK) {
                    log_line(log_path, why);
                    snprintf(err, sizeof err, "dsperf sim failed at %s %.6g: %s", kind, so.ladder[i], why);
                    run_sim_result_free(&r);
                    rc = sr;
                    break;
                }
                if (r.judged_failed) log_line(log_path, r.why);
                json_t *res = r.doc;
                r.doc = NULL;
                run_sim_result_free(&r);
                json_t *lv = run_sweep_sim_level(res, kind, so.ladder[i], k, b.plan.seed + (uint64_t)k, 0);
                json_array_append_new(levels, lv);
                run_sweep_doc_environment(sdoc, res);
                if (!b.quiet) {
                    sweep_print_level(stdout, lv, kind, json_array_size(levels) == 1);
                    fflush(stdout);
                }
                sweep_analyse(sdoc, so.slo_pct);
                char e2[512];
                if (results_write_json(sweep_path, sdoc, e2, sizeof e2) < 0) log_warn("%s", e2);
            }
        }
        if (rc != DS_OK || g_stop) {
            json_object_set_new(sdoc, "partial", json_true());
            json_object_set_new(sdoc, "partial_reason", json_string(g_stop ? "interrupted (SIGINT/SIGTERM)" : err));
        }
        sweep_analyse(sdoc, so.slo_pct);
        char e2[512];
        if (results_write_json(sweep_path, sdoc, e2, sizeof e2) < 0) log_warn("%s", e2);
        t->free_sweep(&so, &b);
    } else {
        snprintf(err, sizeof err, "the sweep options do not apply to this configuration (see the error line above)");
        rc = DS_EINVAL;
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
    const char *status = g_stop ? "interrupted" : !measured ? "failed" : rc == DS_OK ? "ok" : "partial";
    json_object_set_new(cfg, "status", json_string(status));
    if (rc != DS_OK) {
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

/* A configuration's sweep into the history, labelled with its grid values (tune.seqs=64), so
 * `dsperf history best` ranks the settings of every tune run of this workload. */
static ds_result record_config_sweep(const tune_opts *t, const json_t *cfg) {
    const char *path = json_string_value(json_object_get(cfg, "sweep_file"));
    json_t *sdoc = path ? json_load_file(path, 0, NULL) : NULL;
    if (!sdoc || !json_array_size(json_object_get(sdoc, "levels"))) { json_decref(sdoc); return DS_OK; }
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
    ds_result rc = history_opts_record(&t->hist, sdoc, extra, n);
    json_decref(sdoc);
    return rc;
}

void run_tune(const tune_opts *t, json_t *doc, const char *stem, size_t *measured, bool *history_failed) {
    json_t *configs = json_object_get(doc, "configs");
    size_t total = tune_grid_size(&t->grid), choice[TUNE_MAX_KEYS];
    double speedup = 1;
    *measured = 0;
    *history_failed = false;
    log_info("tune: %zu configuration%s, results in %s", total, total == 1 ? "" : "s", t->out_path);
    for (size_t i = 0; i < total && !tune_run_stopped(); i++) {
        tune_grid_point(&t->grid, i, choice);
        json_t *cfg = json_object();
        char *label = tune_grid_label(&t->grid, choice);
        json_t *settings = json_object();
        for (size_t k = 0; k < t->grid.n; k++)
            json_object_set_new(settings, t->grid.axes[k].key, json_string(t->grid.axes[k].values[choice[k]]));
        double g = tune_config_gpus(t, choice);
        json_object_set_new(cfg, "index", json_integer((json_int_t)i));
        json_object_set_new(cfg, "label", json_string(label ? label : ""));
        json_object_set_new(cfg, "settings", settings);
        json_object_set_new(cfg, "gpus", g > 0 ? json_real(g) : json_null());
        json_object_set_new(cfg, "status", json_string("running"));
        json_object_set_new(cfg, "error", json_null());
        json_array_append_new(configs, cfg);
        tune_save(doc, t->out_path);
        if (t->sim_flags ? tune_run_config_sim(t, i, total, stem, cfg) : tune_run_config(t, i, total, stem, cfg)) (*measured)++;
        double k = json_number_value(json_object_get(cfg, "speedup"));
        if (k > 0) speedup = k;
        if (t->sim_flags) {
            char note[640];
            snprintf(note, sizeof note, "the offline simulator (`dsperf sim`) on a virtual clock: figures are the simulated "
                     "hardware's, without network or client costs; its 80%% interval is x/%.2f on throughput and x/%.2f on TPOT "
                     "(errors on published deployments outside its fit; x/%.2f and x/%.2f for an engine on a GPU architecture "
                     "none of the fitted rows runs, each level's results say which), shared in good part by configurations of one deployment",
                     exp(sim_interval_q(SIM_IV_TPUT, SIM_IV_STEADY, 0)), exp(sim_interval_q(SIM_IV_TPOT, SIM_IV_STEADY, 0)),
                     exp(sim_interval_q(SIM_IV_TPUT, SIM_IV_UNSEEN, 0)), exp(sim_interval_q(SIM_IV_TPOT, SIM_IV_UNSEEN, 0)));
            json_object_set_new(doc, "target_note", json_string(note));
            json_object_set_new(doc, "sim_interval", json_pack("{s:f,s:f,s:f}", "level", 0.8, "throughput_factor",
                                exp(sim_interval_q(SIM_IV_TPUT, SIM_IV_STEADY, 0)), "tpot_factor", exp(sim_interval_q(SIM_IV_TPOT, SIM_IV_STEADY, 0))));
        } else if (speedup != 1) {
            char note[400];
            snprintf(note, sizeof note, "the server runs `dsperf serve --speedup %g`: engine time runs %gx wall time, so "
                     "throughputs are %gx and latencies 1/%g of what the simulated hardware would give; the ranking holds",
                     speedup, speedup, speedup, speedup);
            json_object_set_new(doc, "target_note", json_string(note));
        }
        if (!tune_run_stopped()) log_info("config %zu/%zu [%s]: %s", i + 1, total, label && *label ? label : "no grid",
                              json_string_value(json_object_get(cfg, "status")));
        if (t->hist.db && record_config_sweep(t, cfg) != DS_OK) *history_failed = true;
        free(label);
        tune_save(doc, t->out_path);
    }
}

json_t *tune_new_doc(const tune_opts *t, const char *line, const char *sweep_line, const bench_opts *b, double slo_pct) {
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
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
    return d;
}

/* --show FILE: the saved file re-analysed and printed. */
