/* run/sweep — running a sweep: the levels (each one bench run watched by the over-saturation
 * detector and its early-stop rule), repeats, the auto ladder, and the atomic rewrite of the sweep
 * file after every level, so Ctrl-C or a crash loses at most the level in progress. Used by
 * `dsperf sweep` and, once per server configuration, by `dsperf tune`. */
#include "run/sweep.h"
#include "metrics/metric_table.h"
#include "run/sweep_doc.h"
#include "common/stop.h"
#include "common/fileio.h"
#include "run/bench.h"
#include "run/job.h"
#include "results/results.h"
#include "sweep/context.h"
#include "sweep/stability.h"
#include "metrics/request_metrics.h"
#include "common/clock.h"
#include "common/log.h"
#include "common/units.h"
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* g_stop: the whole sweep stops (a signal); g_level_stop: the level in progress stops (a signal
 * or the over-saturation detector). */
static ds_stop_flag g_stop, g_level_stop;
void sweep_run_request_stop(void) { g_stop = 1; g_level_stop = LOAD_STOP_INTERRUPT; }
bool sweep_run_stop_requested(void) { return g_stop != 0; }

/* What the progress hook of one level needs. */
typedef struct {
    sweep_osd osd;
    bool watch, fired;
    const recset *recs;
    size_t cursor;
    int64_t last_ns;            /* records whose first token came after this are new */
    int64_t t0_ns;
    size_t planned;
    int64_t duration_ns;
    bool tty;
    char label[32];
    sweep_osd_verdict verdict;
    double sat_since;           /* when the current run of saturated verdicts began (-1 none) */
} level_watch;

static void on_tick(void *ctx, const load_progress *p) {
    level_watch *w = ctx;
    int64_t now = clock_now_ns();
    if (!w->t0_ns) w->t0_ns = now - p->elapsed_ns;
    bool scheduling = (!p->planned || p->sent + p->queued < p->planned) &&
                      (!w->duration_ns || p->elapsed_ns < w->duration_ns);
    if (scheduling) {
        /* the plan is still sending: a backlog that grows now is the server falling behind */
        sweep_osd_add_conc(&w->osd, p->elapsed_ns / 1e9, (double)(p->in_flight + p->queued));
        const recset *rs = w->recs;
        while (w->cursor < rs->n && (rs->v[w->cursor].first_ns || rs->v[w->cursor].end_ns)) w->cursor++;
        size_t from = w->cursor;
        /* a request that got its first token before the cursor's was already counted */
        while (from > 0 && rs->v[from - 1].first_ns > w->last_ns) from--;
        for (size_t i = from; i < rs->n; i++) {
            const record *r = &rs->v[i];
            if (!(r->first_ns > w->last_ns && r->first_ns <= now && r->sched_ns > 0)) continue;
            req_metrics m;
            req_metrics_of(r, &m);
            if (m.has_ttft) sweep_osd_add_ttft(&w->osd, (r->first_ns - w->t0_ns) / 1e9, m.ttft_from_schedule_ms);
        }
        w->last_ns = now;
        if (w->watch && !w->fired) {
            double t = p->elapsed_ns / 1e9;
            sweep_osd_check(&w->osd, t, false, &w->verdict);
            /* "keep climbing": the verdict must hold for a further whole window, so a Poisson
             * burst (or the ramp-up at the start) that looks like a trend in one window does not
             * stop a level */
            if (!w->verdict.saturated) w->sat_since = -1;
            else if (w->sat_since < 0) w->sat_since = t;
            else if (t - w->sat_since >= w->osd.window_s) { w->fired = true; g_level_stop = LOAD_STOP_EARLY; }
        }
    }
    if (w->tty) {
        char ttft[32] = "-";
        if (!isnan(p->ttft_p50_ms)) snprintf(ttft, sizeof ttft, "%.0f ms", p->ttft_p50_ms);
        fprintf(stderr, "\r\033[K  %s: %4.0fs done %zu failed %zu in-flight %zu queued %zu  %.1f req/s  p50 TTFT %s",
                w->label, p->elapsed_ns / 1e9, p->finished, p->failed, p->in_flight, p->queued, p->rate_per_s, ttft);
        fflush(stderr);
    }
}

static json_t *verdict_json(const sweep_osd_verdict *v, double window_s) {
    if (!v->enough) return json_pack("{s:b,s:s}", "judged", 0, "why", "too few samples in the window");
    return json_pack("{s:b,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:I,s:I,s:f,s:f,s:s}", "judged", 1, "window_s", window_s,
        "inflight_slope_per_s", v->conc_slope, "inflight_t", isfinite(v->conc_t) ? v->conc_t : 1e9, "inflight_mean",
        v->conc_mean, "ttft_slope_ms_per_s", v->ttft_slope, "ttft_t", isfinite(v->ttft_t) ? v->ttft_t : 1e9,
        "ttft_mean_ms", v->ttft_mean, "t_critical", v->t_crit, "inflight_samples", (json_int_t)v->conc_n,
        "ttft_samples", (json_int_t)v->ttft_n, "t0_s", isfinite(v->t0_s) ? v->t0_s : 0, "t1_s", v->t1_s, "rule",
        "both slopes > 0 with one-sided t > t_critical (99%), in-flight rise >= max(2, 10% of mean), "
        "TTFT (from schedule) rise >= 10% of mean; early stop when this holds for two windows in a row");
}

/* Sets the plan of b for one level (a sweep along length keeps the load bench parsed). DS_OK, or
 * DS_EINVAL when the arrival does not take the level's rate. */
static ds_result set_level(bench_opts *b, bool rate_axis, double load, uint64_t seed, bool length_axis) {
    b->plan.seed = seed;
    if (length_axis) return DS_OK;
    if (!rate_axis) {
        b->plan.concurrency = (int)load;
        b->plan.arr.rate_per_s = 0;
        b->summary.intended_rate_per_s = 0;
        b->summary.max_concurrency = 0;
        return DS_OK;
    }
    b->plan.concurrency = 0;
    if (arrival_parse(b->arrival_spec, load, &b->plan.arr) < 0) return DS_EINVAL;
    b->summary.intended_rate_per_s = load;
    b->summary.max_concurrency = b->plan.max_concurrency;
    return DS_OK;
}

typedef struct {
    bench_opts *b;
    dataset *ds;
    sweep_opts *so;          /* save() names the default output in it */
    json_t *doc;
    bool tty, rate_axis;
    uint64_t seed0;
    const char *base_spec;      /* the --dataset a length sweep varies */
    char spec[256];             /* the current level's dataset */
    double prev_e2e_s;          /* p99 E2E of the last measured level (NAN none) */
    bool not_measured;          /* a level could not be measured: the sweep stopped there */
    bool level_failed;          /* a level failed by the run policy (server errors over --max-error-rate) */
    bool ladder_ended;          /* no further level runs: interrupted, saturated or not measured */
    size_t prompts_used;        /* prompts the levels so far sent (warm-ups included) */
    bool prompts_wrapped;       /* said once: the pool ran out and levels resend earlier prompts */
} sweep_ctx;

/* The longest any request dsperf cut at the level's deadline had been waiting or in flight. */
static double longest_cut_s(const recset *rs) {
    double m = 0;
    for (size_t i = 0; i < rs->n; i++) {
        const record *r = &rs->v[i];
        if (r->warmup || record_end(r) != REC_END_DEADLINE) continue;
        int64_t from = r->send_ns > 0 ? r->send_ns : r->sched_ns;
        if (from > 0 && r->end_ns > from && (r->end_ns - from) / 1e9 > m) m = (r->end_ns - from) / 1e9;
    }
    return m;
}

/* Whether the level measured anything (sweep_check_level), recorded in the level. */
static bool check_level(sweep_ctx *c, json_t *lv, const recset *recs, double load, bool rate) {
    const json_t *res = json_object_get(lv, "results");
    double completed = json_number_value(json_object_get(res, "completed"));
    double failed = json_number_value(json_object_get(res, "failed"));
    double cut = json_number_value(json_object_get(json_object_get(res, "ended"), "client_deadline"));
    const json_t *e2e = json_object_get(res, METRIC(p99_e2el_ms));
    sweep_level_check chk;
    /* Little's law: requests in flight / completions per second is the time each one takes */
    double rt = json_number_value(json_object_get(res, METRIC(request_throughput)));
    double little = rt > 0 ? json_number_value(json_object_get(res, "max_concurrent_requests")) / rt : NAN;
    double this_e2e = json_is_number(e2e) ? json_number_value(e2e) / 1e3 : NAN;
    if (isfinite(little) && !(this_e2e >= little)) this_e2e = little;
    sweep_check_level(load, rate, completed, failed, cut, longest_cut_s(recs), this_e2e,
                      c->prev_e2e_s, c->b->plan.duration_ns / 1e9, c->b->plan.duration_ns ? c->b->plan.grace_ns / 1e9 : 0, &chk);
    json_object_set_new(lv, "measured", json_boolean(chk.measured));
    json_object_set_new(lv, "not_measured_reason", chk.measured ? json_null() : json_string(chk.reason));
    if (!chk.measured)
        json_object_set_new(lv, "advice", json_pack("{s:f,s:I}", "duration_s", chk.min_duration_s, "requests", (json_int_t)chk.requests));
    else if (json_is_number(e2e))
        c->prev_e2e_s = json_number_value(e2e) / 1e3;
    return chk.measured;
}

/* Runs one level (one repeat); appends it to doc; c->ladder_ended when the sweep must stop there
 * (interrupted, saturated or not measured). DS_OK, or DS_ERUN on a run failure (err filled).
 * *res_out borrows the results. */
static ds_result run_level(sweep_ctx *c, const char *kind, double load, int repeat, const json_t **res_out, char *err,
                     size_t errlen) {
    bench_opts *b = c->b;
    bool rate = strcmp(kind, "rate") == 0, length = c->so->length_axis != NULL;
    if (set_level(b, rate, load, c->seed0 + (uint64_t)repeat, length) != DS_OK) { snprintf(err, errlen, "bad arrival"); return DS_ERUN; }
    int64_t tick = c->so->osd_window_ns / 10;
    if (tick < 50 * NS_PER_MS) tick = 50 * NS_PER_MS;
    if (tick > NS_PER_S) tick = NS_PER_S;
    b->plan.progress_interval_ns = tick;
    level_watch w = { .watch = c->so->early_stop, .tty = c->tty, .planned = b->plan.requests ? b->plan.requests + b->plan.warmup : 0,
                      .duration_ns = b->plan.duration_ns, .sat_since = -1 };
    sweep_osd_init(&w.osd, c->so->osd_window_ns / 1e9);
    char len_label[24];
    sweep_length_label(load, len_label, sizeof len_label);
    if (length) snprintf(w.label, sizeof w.label, "%s=%s", strcmp(kind, "input_len") ? "out" : "in", len_label);
    else if (rate) snprintf(w.label, sizeof w.label, "%.3g/s", load);
    else snprintf(w.label, sizeof w.label, "c=%.0f", load);
    recset recs;
    recset_init(&recs);
    w.recs = &recs;
    g_level_stop = g_stop;
    bench_result br;
    /* Each level sends prompts no earlier level sent: the same prompts again find the server's
     * prefix cache warm from the level before (llama-server keeps each slot's last prompt and picks
     * the slot that shares most of a new one; vLLM and SGLang cache blocks), and the later levels
     * would time cached prefills. A length sweep builds its own prompts per level; a trace and
     * conversations are sent as they are. */
    dataset view = *c->ds;
    size_t offset = 0;
    if (!length && !c->ds->sessions && !c->ds->blocks && !b->plan.trace && c->ds->n > 1) {
        offset = c->prompts_used % c->ds->n;
        if (c->prompts_used >= c->ds->n && !c->prompts_wrapped) {
            log_warn("the sweep's levels have sent all %zu distinct prompts; later levels resend earlier ones (a prefix "
                     "cache may skip their prefill): give --requests per level so enough are built", c->ds->n);
            c->prompts_wrapped = true;
        }
        view.items = c->ds->items + offset;
        view.n = c->ds->n - offset;
    }
    ds_result rc = bench_run_once_hook(b, &view, &g_level_stop, on_tick, &w, &recs, &br, err, errlen);
    c->prompts_used += recs.n;
    if (c->tty) fprintf(stderr, "\r\033[K");
    if (rc != DS_OK) { recset_free(&recs); sweep_osd_free(&w.osd); return DS_ERUN; }
    bool interrupted = g_stop != 0;
    bool early = w.fired && !interrupted;
    sweep_osd_verdict v = w.verdict;
    if (!early) {
        double end_s = w.osd.cn ? w.osd.ct[w.osd.cn - 1] : 0;
        sweep_osd_check(&w.osd, end_s, true, &v);
    }
    if (early) {
        json_object_set_new(br.results, "partial_reason",
                            json_string("over-saturation early stop: in-flight requests and TTFT kept climbing; "
                                        "requests still in flight were cancelled"));
    }
    json_t *lv = json_object();
    json_object_set_new(lv, "load", json_real(load));
    json_object_set_new(lv, "repeat", json_integer(repeat));
    json_object_set_new(lv, "kind", json_string(kind));
    json_object_set_new(lv, "seed", json_integer((json_int_t)b->plan.seed));
    if (!length) json_object_set_new(lv, "first_prompt", json_integer((json_int_t)offset));
    if (length) {
        /* the lengths the level's prompts were built with (the dataset's own measure) */
        const dataset *ds = c->ds;
        json_object_set_new(lv, "input_len", json_real(strcmp(kind, "input_len") ? (double)c->so->other_len : load));
        json_object_set_new(lv, "output_len", json_real(strcmp(kind, "input_len") ? load : (double)c->so->other_len));
        json_object_set_new(lv, "distinct_prompts", json_integer((json_int_t)ds->n));
    }
    json_object_set_new(lv, "saturated", json_boolean(early || (v.enough && v.saturated)));
    json_object_set_new(lv, "early_stopped", json_boolean(early));
    json_object_set_new(lv, "interrupted", json_boolean(interrupted));
    json_object_set_new(lv, "over_saturation", verdict_json(&v, w.osd.window_s));
    json_object_set_new(lv, "results", br.results);
    bool measured = check_level(c, lv, &recs, load, rate);
    if (!measured) c->not_measured = true;
    else if (!interrupted && json_is_true(json_object_get(br.results, "run_failed"))) c->level_failed = true;
    json_array_append_new(json_object_get(c->doc, "levels"), lv);
    if (c->so->save_prefix) {
        char path[1024];
        snprintf(path, sizeof path, "%s.%zu.%d.jsonl", c->so->save_prefix, json_array_size(json_object_get(c->doc, "levels")) - 1, repeat);
        if (results_write_requests_jsonl(path, &recs, err, errlen) < 0) log_warn("%s", err);
    }
    recset_free(&recs);
    sweep_osd_free(&w.osd);
    if (!b->quiet) {
        sweep_print_level(c->so->summary, lv, length ? kind : c->rate_axis ? "rate" : "concurrency",
                          json_array_size(json_object_get(c->doc, "levels")) == 1);
        fflush(c->so->summary);
    }
    *res_out = br.results;
    if (!measured && !interrupted) log_warn("%s: %s; no higher level runs", w.label, json_string_value(json_object_get(lv, "not_measured_reason")));
    if (interrupted || early || !measured) c->ladder_ended = true;
    return DS_OK;
}

/* UTF-8 box and arrow characters only where the terminal's locale says UTF-8. */
static bool utf8_tty(void) {
    if (!isatty(STDOUT_FILENO)) return false;
    const char *vars[] = { "LC_ALL", "LC_CTYPE", "LANG" };
    for (int i = 0; i < 3; i++) {
        const char *v = getenv(vars[i]);
        if (v && *v) return strcasestr(v, "utf-8") || strcasestr(v, "utf8");
    }
    return false;
}

/* Writes the sweep so far (after each level, so an interrupted sweep keeps what it measured). To
 * standard output only once, at the end (final): one document, not one per level. Without --out
 * the first save makes a new sweep-<date>-<time>.json, never an earlier run's file. */
static ds_result save(sweep_ctx *c, bool final, char *err, size_t errlen) {
    sweep_opts *so = c->so;
    if (!final && fileio_is_stdout(so->out_path)) return DS_OK;
    sweep_analyse(c->doc, so->slo_pct);
    sweep_context_analyse(c->doc, NULL);
    sweep_stability_analyse(c->doc, so->stab);
    if (!so->out_path) {
        if (!(so->out_path = so->name_default_out("--out", "sweep", "json", so->default_out, sizeof so->default_out))) {
            snprintf(err, errlen, "the sweep is not saved");
            return DS_EIO;
        }
    }
    if (final) return results_write_json(so->out_path, c->doc, err, errlen) < 0 ? DS_EIO : DS_OK;
    /* a file read while the sweep runs (or left by one killed outright) holds only the levels so
     * far: it says so, and the final write says what the whole sweep came to */
    json_t *was = json_incref(json_object_get(c->doc, "partial")), *why = json_incref(json_object_get(c->doc, "partial_reason"));
    json_object_set_new(c->doc, "partial", json_true());
    json_object_set_new(c->doc, "partial_reason", json_string("in progress: the levels measured so far (the sweep was still "
                                                              "running when this was written, or ended before its last write)"));
    ds_result rc = results_write_json(so->out_path, c->doc, err, errlen) < 0 ? DS_EIO : DS_OK;
    json_object_set_new(c->doc, "partial", was ? was : json_false());
    json_object_set_new(c->doc, "partial_reason", why ? why : json_null());
    return rc;
}



static json_t *sweep_config(const sweep_opts *so, const bench_opts *b, const dataset *ds, const char *axis) {
    json_t *c = bench_opts_config_json(b, ds);
    if (!so->length_axis) {   /* a sweep along length keeps its one load */
        json_object_del(c, "concurrency");
        json_object_del(c, "rate_per_s");
        json_object_set_new(c, "load", json_string(strcmp(axis, "rate") ? "closed" : "open"));
    } else {
        json_object_set_new(c, strcmp(so->length_axis, "input_len") ? "input_len" : "output_len", json_integer(so->other_len));
    }
    json_object_set_new(c, "mode", json_string(so->autom ? "auto" : axis));
    json_object_set_new(c, "ladder", so->autom ? json_null() : json_string(so->length_axis ? (!strcmp(so->length_axis, "input_len")
                        ? so->in_ladder : so->outlen_ladder) : so->conc_ladder ? so->conc_ladder : so->rate_ladder));
    json_object_set_new(c, "stability_score", json_string(stability_score_name(so->stab)));
    json_object_set_new(c, "repeats", json_integer(so->repeats));
    json_object_set_new(c, "early_stop", json_boolean(so->early_stop));
    json_object_set_new(c, "osd_window_s", json_real(so->osd_window_ns / 1e9));
    json_object_set_new(c, "slo_percentile", json_real(so->slo_pct));
    if (so->autom) {
        json_object_set_new(c, "auto_levels", json_integer(so->auto_levels));
        json_object_set_new(c, "auto_max_concurrency", json_integer(so->auto_max_conc));
    }
    json_t *slo = json_object();
    if (b->summary.slo_ttft_ms > 0) json_object_set_new(slo, "ttft_ms", json_real(b->summary.slo_ttft_ms));
    if (b->summary.slo_tpot_ms > 0) json_object_set_new(slo, "tpot_ms", json_real(b->summary.slo_tpot_ms));
    if (b->summary.slo_e2el_ms > 0) json_object_set_new(slo, "e2el_ms", json_real(b->summary.slo_e2el_ms));
    if (b->summary.slo_ttfa_ms > 0) json_object_set_new(slo, "ttfa_ms", json_real(b->summary.slo_ttfa_ms));
    json_object_set_new(c, "slo", slo);
    return c;
}


/* The prompts a level of a length sweep sends: the dataset spec with this length, as many distinct
 * prompts as the level sends (a prefix cache would skip repeated ones) within a budget of text
 * (LENGTH_TOKEN_BUDGET tokens; beyond it they are reused). DS_OK, or DS_ERUN with err. */
#define LENGTH_TOKEN_BUDGET 16000000.0
static ds_result length_dataset(sweep_ctx *c, double len, char *err, size_t errlen) {
    bench_opts *b = c->b;
    bool input = !strcmp(c->so->length_axis, "input_len");
    if (sweep_length_dataset(c->base_spec, input, (long)len, c->so->other_len, c->spec, sizeof c->spec, err, errlen) < 0)
        return DS_ERUN;
    double per = input ? len : (double)c->so->other_len;
    size_t want = b->plan.requests ? b->plan.requests + b->plan.warmup : 10000;
    size_t cap = (size_t)(LENGTH_TOKEN_BUDGET / (per > 1 ? per : 1));
    if (cap < 16) cap = 16;
    if (want > cap) {
        if (b->plan.requests) log_warn("%s: %zu prompts of %.0f tokens exceed the text budget; %zu distinct prompts are reused "
                                       "(a prefix cache may then skip their prefill)", c->spec, want, per, cap);
        want = cap;
    }
    b->dataset_spec = c->spec;
    dataset_free(c->ds);
    c->ds = NULL;
    if (bench_prepare_dataset(b, want, &c->ds) != DS_OK) {
        snprintf(err, errlen, "could not build the prompts of %s", c->spec);
        return DS_ERUN;
    }
    return DS_OK;
}

/* Runs all repeats of one level (fewer when c->ladder_ended). DS_OK, or DS_ERUN with err. *rps:
 * their mean request rate (set only when every repeat ran). */
static ds_result run_repeats(sweep_ctx *c, const char *kind, double load, double *rps, char *err, size_t errlen) {
    double sum = 0;
    int n = 0;
    for (int k = 0; k < c->so->repeats; k++) {
        const json_t *res = NULL;
        if (run_level(c, kind, load, k, &res, err, errlen) != DS_OK) return DS_ERUN;
        if (!json_object_get(c->doc, "environment") || json_is_null(json_object_get(c->doc, "environment")))
            json_object_set(c->doc, "environment", json_object_get(res, "environment"));
        double r = json_number_value(json_object_get(res, METRIC(request_throughput)));
        if (isfinite(r)) { sum += r; n++; }
        char e2[512];
        if (save(c, false, e2, sizeof e2) != DS_OK) log_warn("%s", e2);
        if (c->ladder_ended) return DS_OK;
    }
    if (rps) *rps = n ? sum / n : NAN;
    return DS_OK;
}



/* Whether the ladder goes on to its next level: nothing failed and nothing ended it. */
static bool next_level(const sweep_ctx *c, ds_result r) { return r == DS_OK && !c->ladder_ended; }

ds_result sweep_run(sweep_opts *so, bench_opts *b, json_t **doc_out) {
    *doc_out = NULL;
    char err[1024];
    dataset *ds = NULL;
    char *model = NULL;
    /* a sweep along length builds each level's prompts itself: the pre-flight gets a one-word set */
    const char *base_spec = b->dataset_spec;
    if (so->length_axis) b->dataset_spec = "random:in=1,out=1";
    ds_result rc = bench_prepare(b, &ds, &model);
    b->dataset_spec = base_spec;
    rc = run_job_join(b, rc);   /* a multi-host job goes on only if every rank prepared */
    if (rc != DS_OK) {
        dataset_free(ds);
        free(model);
        return rc;
    }
    /* a level of --requests N sends N + warm-ups prompts, and every level its own (run_level):
     * build enough random prompts for all of them, within the length sweep's token budget */
    size_t runs = (so->autom ? (size_t)so->auto_levels + 2 : so->n_levels) * (size_t)(so->repeats > 0 ? so->repeats : 1);
    if (!so->length_axis && b->plan.requests && runs > 1 && !b->n_classes && !strncmp(b->dataset_spec, "random:", 7)) {
        size_t per = b->plan.requests + b->plan.warmup, want = per * runs;
        size_t cap = (size_t)(LENGTH_TOKEN_BUDGET / (ds->len_mean > 1 ? ds->len_mean : 1));
        if (want > cap) want = cap > per ? cap : per;
        if (want > ds->n) {
            dataset *more = NULL;
            if (bench_prepare_dataset(b, want, &more) != DS_OK) {
                dataset_free(ds);
                free(model);
                return DS_EINVAL;
            }
            dataset_free(ds);
            ds = more;
        }
    }
    const char *axis = so->length_axis ? so->length_axis : so->conc_ladder ? "concurrency" : "rate";
    sweep_ctx c = { .b = b, .ds = ds, .so = so, .rate_axis = !so->conc_ladder, .seed0 = b->plan.seed, .prev_e2e_s = NAN,
                    .tty = isatty(STDERR_FILENO) && !b->quiet && !b->no_progress, .base_spec = base_spec };
    c.doc = run_sweep_doc_new(b->command_line, axis, sweep_config(so, b, ds, axis), b->deployment);
    if (!b->quiet) log_info("sweep %s model %s: %s, %s per level%s", b->client.base_url, b->client.model,
                            so->autom ? "auto (synchronous, throughput, then rates)" : axis,
                            b->plan.duration_ns ? "duration" : "request count", so->repeats > 1 ? ", repeated" : "");
    ds_result result = DS_OK;
    ds_result r = DS_OK;
    if (so->autom) {
        double r_sync = NAN, r_max = NAN;
        r = run_repeats(&c, "synchronous", 1, &r_sync, err, sizeof err);
        if (next_level(&c, r)) r = run_repeats(&c, "throughput", so->auto_max_conc, &r_max, err, sizeof err);
        if (next_level(&c, r) && !(r_sync > 0 && r_max > 0)) {
            snprintf(err, sizeof err, "the synchronous or saturating run completed no request; no rates to sweep");
            r = DS_ERUN;
        }
        /* the anchors' load is their achieved request rate, so every level reads on one axis */
        json_t *lvs = json_object_get(c.doc, "levels");
        size_t i;
        json_t *lv;
        json_array_foreach(lvs, i, lv) json_object_set_new(lv, "load", json_real(json_number_value(
            json_object_get(json_object_get(lv, "results"), METRIC(request_throughput)))));
        if (next_level(&c, r)) {
            c.rate_axis = true;
            /* the max must be exceeded for the plateau to show: rates up to 1.25x it */
            double top = 1.25 * r_max;
            for (int k = 1; k <= so->auto_levels && next_level(&c, r); k++)
                r = run_repeats(&c, "rate", r_sync + (top - r_sync) * k / so->auto_levels, NULL, err, sizeof err);
        }
        json_object_set_new(c.doc, "axis", json_string("rate"));
    } else if (so->length_axis) {
        for (size_t i = 0; i < so->n_levels && next_level(&c, r); i++) {
            r = length_dataset(&c, so->ladder[i], err, sizeof err);
            if (r == DS_OK) r = run_repeats(&c, so->length_axis, so->ladder[i], NULL, err, sizeof err);
        }
    } else {
        for (size_t i = 0; i < so->n_levels && next_level(&c, r); i++)
            r = run_repeats(&c, so->conc_ladder ? "concurrency" : "rate", so->ladder[i], NULL, err, sizeof err);
    }
    if (r != DS_OK) {
        log_error("%s", err);
        result = DS_ERUN;
        json_object_set_new(c.doc, "partial", json_true());
        json_object_set_new(c.doc, "partial_reason", json_string(err));
    } else if (g_stop) {
        json_object_set_new(c.doc, "partial", json_true());
        json_object_set_new(c.doc, "partial_reason", json_string("interrupted (SIGINT/SIGTERM): the levels measured so far are kept"));
        result = DS_EINTR;
    } else if (c.not_measured) {
        /* the run policy (results/validity.h): a level asked for and not measured fails the sweep */
        json_object_set_new(c.doc, "partial", json_true());
        json_object_set_new(c.doc, "partial_reason", json_string("a level could not be measured (requests outlast it): "
                                                                 "the sweep stopped there; see the level's not_measured_reason"));
        result = DS_EJUDGED;
    } else if (c.level_failed) {
        log_error("a level failed: server-side failures over --max-error-rate %g%% (see each level's run_failed_reason)",
                  100 * b->max_error_rate);
        result = DS_EJUDGED;
    }
    if (save(&c, true, err, sizeof err) != DS_OK) { log_error("%s", err); result = DS_EIO; }
    if (!b->quiet && so->print_table) {
        FILE *sum = so->summary;
        fputc('\n', sum);
        /* each level's row was printed as it finished; the table comes again only when repeats
         * are grouped into means */
        sweep_print_table(sum, c.doc, sum == stdout && utf8_tty(), so->repeats > 1);
        sweep_context_print(sum, c.doc);
        sweep_stability_print(sum, c.doc);
        if (so->out_path && !fileio_is_stdout(so->out_path)) log_info("sweep written to %s", so->out_path);
    }
    *doc_out = c.doc;
    dataset_free(c.ds);             /* the last level's prompts, or the pre-flight's */
    b->dataset_spec = base_spec;    /* not c.spec, which lives in this frame */
    /* b->client.model may point at model: keep the name for the caller in the document only */
    if (b->client.model == model) b->client.model = NULL;
    free(model);
    return result;
}

static void on_signal(int sig) { (void)sig; sweep_run_request_stop(); }

/* The leader of `dsperf sweep`: the whole sweep (its pre-flight joins a job's ranks), then the
 * document recorded in the history. */
static ds_result sweep_lead(void *ctx, bench_opts *b) {
    sweep_opts *so = ctx;
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    json_t *doc = NULL;
    ds_result rc = sweep_run(so, b, &doc);
    if (doc && history_opts_record(&b->hist, doc, NULL, 0) != DS_OK && rc == DS_OK) rc = DS_EIO;
    json_decref(doc);
    return rc;
}

ds_result sweep_run_job(sweep_opts *so, bench_opts *b, ds_result (*check)(void *ctx), void *ctx) {
    b->keep_request_chunks = so->save_prefix != NULL;   /* a job's ranks send their chunks for it */
    run_job_parts parts = { .check = check, .check_ctx = ctx, .lead = sweep_lead, .lead_ctx = so };
    return run_job(b, &parts);
}
