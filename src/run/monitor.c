/* run/monitor — `dsperf monitor`'s run (see monitor.h): everything between the parsed options and
 * the lines the CLI prints. An endpoint that does not answer at start is no failure here: a monitor
 * must outlive restarts of what it watches, so it keeps probing and counts the failures. */
#include "run/monitor.h"
#include "run/bench.h"
#include "run/preflight.h"
#include "common/clock.h"
#include "common/fdlimit.h"
#include "common/log.h"
#include "common/redact.h"
#include "results/results.h"
#include "results/validity.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

void run_monitor_defaults(run_monitor_opts *o, bench_opts *b) {
    memset(o, 0, sizeof *o);
    o->b = b;
    monitor_default_opts(&o->mon);
    o->db_interval_ns = 600 * NS_PER_S;
    b->client.timeout_ns = 60 * NS_PER_S;   /* a probe slower than a minute is a failure */
    b->dataset_spec = "random:in=256,out=64";
}

/* ---- period summaries into the history ---- */

static void iso(double unix_s, char *buf, size_t len) {
    time_t t = (time_t)unix_s;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(buf, len, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A period's probes as a results document (the same summary bench writes), recorded. */
static void record_period(void *ctx, const recset *probes, double start_unix_s, double end_unix_s) {
    const run_monitor_opts *o = ctx;
    const bench_opts *b = o->b;
    json_t *cfg = json_object();
    json_object_set_new(cfg, "url", redact_json(b->client.base_url));
    json_object_set_new(cfg, "api", json_string(b->client.api == OPENAI_CHAT ? "chat" : "completions"));
    json_object_set_new(cfg, "model", b->client.model ? json_string(b->client.model) : json_null());
    json_object_set_new(cfg, "load", json_string("monitor"));
    json_object_set_new(cfg, "rate_per_s", json_real(o->mon.arr.rate_per_s));
    json_object_set_new(cfg, "arrival", json_string(b->arrival_spec));
    json_object_set_new(cfg, "dataset", json_string(b->dataset_spec));
    json_object_set_new(cfg, "period_s", json_real(o->db_interval_ns / 1e9));
    results_meta meta = { .producer = "monitor", .command_line = b->command_line, .config = cfg };
    json_t *doc = results_build(probes, &b->summary, &meta);
    json_decref(cfg);
    if (!doc) { log_error("monitor: out of memory while summarising a period for the history"); return; }
    char s[32], e[32];
    iso(start_unix_s, s, sizeof s);
    iso(end_unix_s, e, sizeof e);
    json_object_set_new(doc, "monitor_period", json_pack("{s:s,s:s,s:I}", "start", s, "end", e, "probes", (json_int_t)probes->n));
    history_opts_record(&b->hist, doc, NULL, 0);   /* a failure is reported; the monitor goes on */
    json_decref(doc);
}

static ds_stop_flag g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

ds_result run_monitor(run_monitor_opts *o, run_monitor_result *out, char *err, size_t errlen) {
    bench_opts *b = o->b;
    monitor_opts *mo = &o->mon;
    memset(out, 0, sizeof *out);
    err[0] = 0;
    mo->seed = b->plan.seed;
    mo->slo.ttft_s = b->summary.slo_ttft_ms / 1e3;
    mo->slo.tpot_s = b->summary.slo_tpot_ms / 1e3;
    mo->slo.e2el_s = b->summary.slo_e2el_ms / 1e3;
    mo->slo.ttfa_s = b->summary.slo_ttfa_ms / 1e3;
    b->client.headers = b->headers;
    if (b->hist.db) {
        mo->period_ns = o->db_interval_ns;
        mo->on_period = record_period;
        mo->period_ctx = o;
    }

    fd_limit_prepare();     /* before the exporter thread starts: see common/fdlimit.h */

    /* from here a signal ends the command cleanly (exit 0), also during a slow pre-flight */
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    /* Pre-flight: an answer that is not an OpenAI model list means a wrong URL (usage error); no
     * answer at all means the endpoint is down right now, which is what a monitor is for. */
    char *model = NULL;
    ds_result rc = run_preflight(&b->client, &model, err, errlen);
    if (rc == DS_OK) {
        if (!b->client.model) b->client.model = model;
    } else if (rc == DS_ECONNECT) {
        log_warn("%s; probing anyway (failures count as outcome=\"connect\")", err);
        err[0] = 0;
    } else {
        return rc;
    }
    dataset *ds = NULL;
    size_t n_hint = mo->requests && mo->requests < 1000 ? mo->requests : 1000;   /* cycled when the run is longer */
    monitor *m = NULL;
    if ((rc = bench_prepare_dataset(b, n_hint, &ds)) != DS_OK) goto out;
    mo->client = b->client;
    mo->ds = ds;

    if (g_stop) goto out;
    if (!(m = monitor_new(mo, err, errlen))) { rc = DS_ERUN; goto out; }
    if (o->on_listening) o->on_listening(o->ctx, mo->listen_host, monitor_port(m));
    log_info("monitor %s model %s: %.3g probes/s (%s), %s", b->client.base_url, b->client.model ? b->client.model : "(not known yet)",
             mo->arr.rate_per_s, b->arrival_spec, b->dataset_spec);
    monitor_totals *t = &out->totals;
    if (monitor_run(m, &g_stop, t, err, errlen) < 0) { rc = DS_ERUN; goto out; }
    /* the run policy (results/validity.h) for a bounded run; a signal is a monitor's normal end */
    if (!t->interrupted && validity_error_rate_over((double)t->failed, (double)t->ok, b->max_error_rate)) {
        out->judged_failed = true;
        snprintf(out->why, sizeof out->why, "%zu of %zu probes failed on the server side, over --max-error-rate %g%%",
                 t->failed, t->failed + t->ok, 100 * b->max_error_rate);
    }
    if (o->on_done) o->on_done(o->ctx, out);
    if (!t->interrupted && o->linger_ns > 0) {
        int64_t until = clock_now_ns() + o->linger_ns;
        while (!g_stop && clock_now_ns() < until) clock_sleep_ns(50 * NS_PER_MS);
    }
out:
    monitor_free(m);
    dataset_free(ds);
    if (b->client.model == model) b->client.model = NULL;   /* the caller's options outlive model */
    free(model);
    return rc;
}
