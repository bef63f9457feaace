/* sweep_doc — the analysis sections of a sweep document (knee, max goodput, confidence
 * intervals), its terminal table and loader. Works on the document alone, so a saved sweep can be
 * re-analysed and the live run and a re-read file print the same thing. */
#include "sweep/sweep.h"
#include "metrics/metric_table.h"
#include "sweep/context.h"
#include "metrics/summary.h"
#include "common/fileio.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "results/results.h"
#include "results/validity.h"

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }
static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* The metrics averaged per load and given confidence intervals. */
static const char *const headline[] = {
    METRIC(output_throughput), METRIC(request_throughput), METRIC(request_goodput), METRIC(total_token_throughput), METRIC(median_ttft_ms),
    METRIC(p99_ttft_ms), METRIC(median_tpot_ms), METRIC(p99_tpot_ms), METRIC(p99_itl_ms), METRIC(p99_e2el_ms), METRIC(p99_ttft_from_schedule_ms),
    METRIC(p99_e2el_from_schedule_ms), METRIC(mean_queue_ms), "error_rate", NULL,
};

/* error_rate: server-side failures of the requests that ended (dsperf's own cancellations are
 * no errors; validity_counts reads files of every version alike). */
static double level_metric(const json_t *res, const char *key) {
    if (!strcmp(key, "error_rate")) {
        double ok, bad;
        validity_counts(res, &bad, &ok);
        return ok + bad > 0 ? bad / (ok + bad) : NAN;
    }
    return num(res, key);
}

/* Whether a level measured anything (sweep_check_level): as recorded, or for files written before
 * levels said so, by the same rule on their counts (their "failed" included dsperf's cancellations,
 * under errors.cancelled). */
bool sweep_level_measured(const json_t *lv) {
    const json_t *m = json_object_get(lv, "measured");
    if (json_is_boolean(m)) return json_is_true(m);
    const json_t *res = json_object_get(lv, "results");
    double ok, bad;
    validity_counts(res, &bad, &ok);
    double cut = json_object_get(res, "ended") ? num(json_object_get(res, "ended"), "client_deadline")
                                               : num(json_object_get(res, "errors"), "cancelled");
    sweep_level_check chk;
    sweep_check_level(num(lv, "load"), false, ok, bad, cut, NAN, NAN, NAN, 0, 0, &chk);
    return chk.measured;
}

typedef struct {
    double load;
    size_t first, n;          /* levels[first .. first+n) */
    size_t n_measured;        /* of them, the levels that measured anything (the rest are left out) */
    bool saturated, early_stopped;
    const char *kind;
} group;

/* Groups consecutive levels of the same load (the repeats of one level). */
static size_t group_levels(const json_t *levels, group *g, size_t max) {
    size_t ng = 0, i;
    json_t *lv;
    json_array_foreach(levels, i, lv) {
        double load = num(lv, "load");
        const char *kind = json_string_value(json_object_get(lv, "kind"));
        if (ng && g[ng - 1].load == load && !strcmp(g[ng - 1].kind, kind ? kind : "")) g[ng - 1].n++;
        else if (ng < max) g[ng++] = (group){ .load = load, .first = i, .n = 1, .kind = kind ? kind : "" };
        else continue;
        if (sweep_level_measured(lv)) g[ng - 1].n_measured++;
        if (json_is_true(json_object_get(lv, "saturated"))) g[ng - 1].saturated = true;
        if (json_is_true(json_object_get(lv, "early_stopped"))) g[ng - 1].early_stopped = true;
    }
    return ng;
}

static double group_mean(const json_t *levels, const group *g, const char *key) {
    double s = 0;
    size_t n = 0;
    for (size_t i = 0; i < g->n; i++) {
        const json_t *lv = json_array_get(levels, g->first + i);
        if (!sweep_level_measured(lv)) continue;
        double v = level_metric(json_object_get(lv, "results"), key);
        if (isfinite(v)) { s += v; n++; }
    }
    return n ? s / n : NAN;
}

static json_t *ci_section(const json_t *levels, const group *g, size_t ng) {
    json_t *arr = json_array();
    for (size_t k = 0; k < ng; k++) {
        double *v = malloc(sizeof *v * g[k].n);
        json_t *m = json_object();
        for (int h = 0; headline[h] && v; h++) {
            size_t n = 0;
            for (size_t i = 0; i < g[k].n; i++) {
                const json_t *lv = json_array_get(levels, g[k].first + i);
                if (!sweep_level_measured(lv)) continue;
                double x = level_metric(json_object_get(lv, "results"), headline[h]);
                if (isfinite(x)) v[n++] = x;
            }
            if (!n) continue;
            double mean, sd, lo, hi;
            sweep_ci_mean(v, n, 0.95, &mean, &sd, &lo, &hi);
            json_object_set_new(m, headline[h], json_pack("{s:o,s:o,s:o,s:o,s:I}", "mean", jnum(mean), "std", jnum(sd),
                                                          "lo", jnum(lo), "hi", jnum(hi), "n", (json_int_t)n));
        }
        free(v);
        json_array_append_new(arr, json_pack("{s:o,s:s,s:I,s:b,s:o}", "load", jnum(g[k].load), "kind", g[k].kind,
                                             "n", (json_int_t)g[k].n_measured, "measured", g[k].n_measured > 0, "metrics", m));
    }
    int repeats = 0;
    for (size_t k = 0; k < ng; k++) if ((int)g[k].n > repeats) repeats = (int)g[k].n;
    return json_pack("{s:s,s:f,s:i,s:s,s:o}", "method", "t", "confidence", 0.95, "max_repeats", repeats, "note",
                     repeats > 1 ? "mean over repeats with a two-sided Student t interval of the mean"
                                 : "one run per level: no interval (use --repeats N)", "levels", arr);
}

static json_t *knee_section(json_t *doc, const json_t *levels, const group *g, size_t ng) {
    double x[SWEEP_MAX_LEVELS], y[SWEEP_MAX_LEVELS], lat[SWEEP_MAX_LEVELS];
    size_t idx[SWEEP_MAX_LEVELS], n = 0;
    const char *lat_key = METRIC(p99_ttft_from_schedule_ms);
    for (int pass = 0; pass < 2; pass++) {
        n = 0;
        bool lat_ok = true;
        for (size_t k = 0; k < ng && n < SWEEP_MAX_LEVELS; k++) {
            if (!strcmp(g[k].kind, "throughput")) continue;   /* auto mode's closed-loop anchor */
            if (!g[k].n_measured) continue;    /* a level not measured says nothing about throughput */
            x[n] = g[k].load;
            y[n] = group_mean(levels, &g[k], METRIC(output_throughput));
            lat[n] = group_mean(levels, &g[k], lat_key);
            if (!isfinite(lat[n])) lat_ok = false;
            if (!isfinite(y[n])) y[n] = 0;
            idx[n++] = k;
        }
        if (lat_ok) break;
        lat_key = pass == 0 ? METRIC(p99_e2el_from_schedule_ms) : NULL;
    }
    sweep_knee kn;
    sweep_find_knee(x, y, lat_key ? lat : NULL, n, &kn);
    json_object_set_new(doc, "knee_note", json_string(kn.reason));
    bool osd_bound = false;
    if (!kn.found && n >= 2 && g[idx[n - 1]].saturated && !g[idx[n - 2]].saturated) {
        /* the ladder ended at an over-saturated level: the knee lies between it and the level
         * below, which is the highest load the server kept up with */
        osd_bound = true;
        kn.index = n - 2;
        kn.knee_load = x[n - 2];
        snprintf(kn.reason, sizeof kn.reason, "the next level (%.3g) was over-saturated (in-flight and TTFT "
                 "climbing); too few levels for the fit", x[n - 1]);
    }
    if (!kn.found && !osd_bound) return json_null();
    const group *gk = &g[idx[kn.index]];
    json_t *fit = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}",
        "break_load", jnum(x[kn.break_index]), "rise_slope", jnum(kn.rise_slope), "rise_intercept", jnum(kn.rise_intercept),
        "tail_slope", jnum(kn.tail_slope), "tail_intercept", jnum(kn.tail_intercept), "tail_to_rise", jnum(kn.tail_ratio),
        "sse_one_line", jnum(kn.sse_one), "sse_two_segments", jnum(kn.sse_two), "sse_reduction", jnum(kn.sse_gain),
        METRIC(peak_output_throughput), jnum(kn.peak), "break_to_peak", jnum(kn.break_frac));
    json_t *lt = json_pack("{s:o,s:b,s:b,s:o,s:o,s:o}", "metric", lat_key ? json_string(lat_key) : json_null(),
        "checked", kn.have_latency, "upturn", kn.latency_upturn, "slope_before", jnum(kn.lat_slope_before),
        "slope_after", jnum(kn.lat_slope_after), "last_to_knee_ratio", jnum(kn.lat_ratio));
    json_t *thr = json_pack("{s:f,s:f,s:f,s:f,s:f,s:i}", "tail_to_rise_max", SWEEP_KNEE_TAIL_RATIO,
        "sse_reduction_min", SWEEP_KNEE_SSE_GAIN, "break_to_peak_min", SWEEP_KNEE_PEAK_FRAC,
        "latency_slope_factor", SWEEP_KNEE_LAT_SLOPE, "latency_ratio_min", SWEEP_KNEE_LAT_RATIO, "min_levels",
        SWEEP_KNEE_MIN_LEVELS);
    json_t *k = json_object();
    json_object_set_new(k, "load", jnum(gk->load));
    json_object_set_new(k, "load_index", json_integer((json_int_t)idx[kn.index]));
    json_object_set_new(k, "knee_load_fit", jnum(kn.knee_load));
    static const char *const at[] = { METRIC(output_throughput), METRIC(request_throughput), METRIC(median_ttft_ms), METRIC(p99_ttft_ms),
        METRIC(p99_tpot_ms), METRIC(p99_e2el_ms), METRIC(p99_ttft_from_schedule_ms), METRIC(p99_e2el_from_schedule_ms), NULL };
    for (int i = 0; at[i]; i++) json_object_set_new(k, at[i], jnum(group_mean(levels, gk, at[i])));
    json_object_set_new(k, "method", json_string(osd_bound ? "highest level below over-saturation"
                                                 : kn.latency_upturn ? "two-segment fit + latency upturn"
                                                 : "two-segment fit (throughput plateau only)"));
    json_object_set_new(k, "confidence", json_string(kn.latency_upturn && !osd_bound ? "high" : "medium"));
    json_object_set_new(k, "decided_by", json_string(kn.reason));
    json_object_set_new(k, "fit", osd_bound ? (json_decref(fit), json_null()) : fit);
    json_object_set_new(k, "latency", lt);
    json_object_set_new(k, "thresholds", thr);
    return k;
}

static json_t *goodput_section(const json_t *doc, const json_t *levels, const group *g, size_t ng, double pct) {
    const json_t *slo = NULL;
    size_t i;
    json_t *lv;
    json_array_foreach(levels, i, lv) {
        slo = json_object_get(json_object_get(lv, "results"), "goodput_slo");
        if (slo) break;
    }
    if (!json_is_object(slo) || !ng) return json_null();
    long best = -1;
    double best_gp = -1;
    double x[SWEEP_MAX_LEVELS], v[SWEEP_MAX_LEVELS];
    size_t n = 0;
    for (size_t k = 0; k < ng; k++) {
        double gp = group_mean(levels, &g[k], METRIC(request_goodput));
        if (isfinite(gp) && gp > best_gp) { best_gp = gp; best = (long)k; }
    }
    if (best < 0) return json_null();
    (void)doc;
    char plabel[32];
    summary_percentile_label(pct, plabel, sizeof plabel);
    json_t *per = json_object();
    double boundary = NAN;
    const char *limited = NULL;
    int any_below = 0;
    static const char *const names[] = { "ttft", "tpot", "e2el" };
    for (int m = 0; m < 3; m++) {
        char sk[32], fk[64];
        snprintf(sk, sizeof sk, "%s_ms", names[m]);
        double thr = num(slo, sk);
        if (!isfinite(thr)) continue;
        snprintf(fk, sizeof fk, "p%s_%s_ms", plabel, names[m]);
        n = 0;
        for (size_t k = 0; k < ng; k++) {
            if (!strcmp(g[k].kind, "throughput") || !g[k].n_measured) continue;
            x[n] = g[k].load;
            v[n++] = group_mean(levels, &g[k], fk);
        }
        int where;
        double b = sweep_slo_crossing(x, v, n, thr, &where);
        json_object_set_new(per, names[m], json_pack("{s:s,s:f,s:o,s:s}", "field", fk, "slo_ms", thr, "load", jnum(b),
            "where", where == 0 ? "between levels" : where < 0 ? "above the SLO at the lowest level"
                                                                : "within the SLO at every level"));
        if (where < 0) any_below = 1;
        if (where == 0 && (!isfinite(boundary) || b < boundary)) { boundary = b; limited = names[m]; }
    }
    const group *gb = &g[best];
    json_t *o = json_object();
    json_object_set_new(o, "load", jnum(gb->load));
    json_object_set_new(o, "load_index", json_integer(best));
    json_object_set_new(o, METRIC(request_goodput), jnum(best_gp));
    json_object_set_new(o, METRIC(request_throughput), jnum(group_mean(levels, gb, METRIC(request_throughput))));
    json_object_set_new(o, METRIC(output_throughput), jnum(group_mean(levels, gb, METRIC(output_throughput))));
    double rt = group_mean(levels, gb, METRIC(request_throughput));
    json_object_set_new(o, "good_fraction", jnum(rt > 0 ? best_gp / rt : NAN));
    json_object_set_new(o, "slo", json_deep_copy(slo));
    json_object_set_new(o, "percentile", json_real(pct));
    json_object_set_new(o, METRIC(slo_boundary_load), any_below ? json_null() : jnum(boundary));
    json_object_set_new(o, "slo_boundary_limited_by", limited && !any_below ? json_string(limited) : json_null());
    json_object_set_new(o, "slo_boundary_method", json_string("linear interpolation of the percentile between the "
                                                              "two measured levels around the first crossing"));
    json_object_set_new(o, "slo_boundary_per_metric", per);
    return o;
}

int sweep_analyse(json_t *doc, double slo_percentile) {
    const json_t *levels = json_object_get(doc, "levels");
    if (!json_is_array(levels)) return -1;
    group g[SWEEP_MAX_LEVELS];
    size_t ng = group_levels(levels, g, SWEEP_MAX_LEVELS);
    if (sweep_axis_is_length(json_string_value(json_object_get(doc, "axis")))) {
        /* throughput falls as prompts grow: a plateau along context length is no knee */
        json_object_set_new(doc, "knee", json_null());
        json_object_set_new(doc, "knee_note", json_string("a sweep along context length has no knee (see \"context\")"));
    } else {
        json_object_set_new(doc, "knee", knee_section(doc, levels, g, ng));
    }
    json_object_set_new(doc, METRIC(max_goodput), goodput_section(doc, levels, g, ng, slo_percentile));
    json_object_set_new(doc, "ci", ci_section(levels, g, ng));
    return 0;
}

/* ---- terminal ---- */

static void load_label(char *buf, size_t len, const char *axis, const char *kind, double load) {
    if (kind && !strcmp(kind, "synchronous")) snprintf(buf, len, "sync");
    else if (kind && !strcmp(kind, "throughput")) snprintf(buf, len, "max");
    else if (axis && !strcmp(axis, "rate")) snprintf(buf, len, "%.3g/s", load);
    else if (sweep_axis_is_length(axis)) {
        char l[24];
        sweep_length_label(load, l, sizeof l);
        snprintf(buf, len, "%s=%s", strcmp(axis, "input_len") ? "out" : "in", l);
    }
    else snprintf(buf, len, "c=%.0f", load);
}

static void fmt(char *buf, size_t len, double v, const char *f) {
    if (isfinite(v)) snprintf(buf, len, f, v);
    else snprintf(buf, len, "-");
}

/* One table row from per-load numbers. */
static void row(FILE *f, const char *mark, const char *label, double rps, double tok, double t50, double t99,
                double tpot, double e2e, double gp, double err, const char *state) {
    char a[16], b[16], c[32], d[16], e[16], g[16], h[16], t1[16], t2[16];
    fmt(a, sizeof a, rps, "%.2f");
    fmt(b, sizeof b, tok, "%.0f");
    fmt(t1, sizeof t1, t50, "%.0f");
    fmt(t2, sizeof t2, t99, "%.0f");
    snprintf(c, sizeof c, "%s/%s", t1, t2);
    fmt(d, sizeof d, tpot, "%.1f");
    fmt(e, sizeof e, e2e, "%.0f");
    fmt(g, sizeof g, gp, "%.2f");
    fmt(h, sizeof h, err * 100, "%.1f");
    fprintf(f, "%s%-8s %7s %9s %13s %8s %8s %7s %5s  %s\n", mark, label, a, b, c, d, e, g, h, state);
}

static const char *state_of(bool sat, bool early, bool measured) {
    return !measured ? "NOT MEASURED" : early ? "saturated (stopped)" : sat ? "saturated" : "ok";
}

static void header(FILE *f) {
    fprintf(f, "  %-8s %7s %9s %13s %8s %8s %7s %5s  %s\n", "load", "req/s", "tok/s", "TTFT p50/p99", "TPOT p99",
            "E2E p99", "goodput", "err%", "state");
}

void sweep_print_level(FILE *f, const json_t *lv, const char *axis, bool with_header) {
    const json_t *r = json_object_get(lv, "results");
    char label[32];
    load_label(label, sizeof label, axis, json_string_value(json_object_get(lv, "kind")), num(lv, "load"));
    long k = (long)json_integer_value(json_object_get(lv, "repeat"));
    char with_rep[64];
    snprintf(with_rep, sizeof with_rep, "%s#%ld", label, k + 1);
    if (k > 0 && strlen(with_rep) <= 8) memcpy(label, with_rep, strlen(with_rep) + 1);   /* the column is 8 wide */
    if (with_header) header(f);
    bool m = sweep_level_measured(lv);
    char state[96];
    snprintf(state, sizeof state, "%s",
             state_of(json_is_true(json_object_get(lv, "saturated")), json_is_true(json_object_get(lv, "early_stopped")), m));
    /* a p99 from fewer requests than it needs is the slowest one or two: the row says so */
    double done = num(r, "completed");
    if (m && done >= 0 && done < summary_percentile_samples_needed(99))
        snprintf(state + strlen(state), sizeof state - strlen(state), ", p99 of %.0f req (needs %ld)", done,
                 summary_percentile_samples_needed(99));
    /* a level not measured shows no numbers: what little completed is a biased sample */
    row(f, "  ", label, m ? num(r, METRIC(request_throughput)) : NAN, m ? num(r, METRIC(output_throughput)) : NAN,
        m ? num(r, METRIC(median_ttft_ms)) : NAN, m ? num(r, METRIC(p99_ttft_ms)) : NAN, m ? num(r, METRIC(p99_tpot_ms)) : NAN,
        m ? num(r, METRIC(p99_e2el_ms)) : NAN, m ? num(r, METRIC(request_goodput)) : NAN, level_metric(r, "error_rate"), state);
}

void sweep_print_table(FILE *f, const json_t *doc, bool utf8, bool rows) {
    const json_t *levels = json_object_get(doc, "levels");
    const char *axis = json_string_value(json_object_get(doc, "axis"));
    group g[SWEEP_MAX_LEVELS];
    size_t ng = group_levels(levels, g, SWEEP_MAX_LEVELS);
    const json_t *cfg = json_object_get(doc, "config");
    double reqs = 0, fails = 0, secs = 0;
    size_t i;
    json_t *lv;
    json_array_foreach(levels, i, lv) {
        const json_t *r = json_object_get(lv, "results");
        double ok, bad;
        validity_counts(r, &bad, &ok);
        reqs += ok + bad;
        fails += bad;
        if (isfinite(num(r, "duration"))) secs += num(r, "duration");
    }
    const char *bar = utf8 ? "═" : "=";
    const char *model = json_string_value(json_object_get(cfg, "model"));
    const char *url = json_string_value(json_object_get(cfg, "url"));
    if (model && strrchr(model, '/')) model = strrchr(model, '/') + 1;
    if (url && strstr(url, "://")) url = strstr(url, "://") + 3;
    fprintf(f, "%s dsperf sweep %s %.28s @ %.28s %s %zu levels, %.0fs, %.0f req (%.1f%% err) %s\n", bar, bar,
            model ? model : "?", url ? url : "?", bar, json_array_size(levels), secs, reqs,
            reqs > 0 ? 100 * fails / reqs : 0, bar);
    if (json_is_true(json_object_get(doc, "partial")))
        fprintf(f, " PARTIAL: %s\n", json_string_value(json_object_get(doc, "partial_reason")));
    const json_t *kn = json_object_get(doc, "knee");
    const char *approx = utf8 ? "≈" : "~";
    char kl[32] = "";
    if (json_is_object(kn)) {
        load_label(kl, sizeof kl, axis, NULL, num(kn, "load"));
        fprintf(f, " KNEE %s (fit %s%.3g): %.0f out tok/s, p99 TTFT %.0f ms (from schedule %.0f ms), p99 TPOT %.1f ms\n",
                kl, approx, num(kn, "knee_load_fit"), num(kn, METRIC(output_throughput)), num(kn, METRIC(p99_ttft_ms)),
                num(kn, METRIC(p99_ttft_from_schedule_ms)), num(kn, METRIC(p99_tpot_ms)));
        fprintf(f, "      %s\n      (%s)\n", json_string_value(json_object_get(kn, "method")),
                json_string_value(json_object_get(kn, "decided_by")));
    } else {
        fprintf(f, " KNEE not found: %s\n", json_string_value(json_object_get(doc, "knee_note")));
    }
    const json_t *mg = json_object_get(doc, METRIC(max_goodput));
    if (json_is_object(mg)) {
        char gl[32];
        load_label(gl, sizeof gl, axis, NULL, num(mg, "load"));
        fprintf(f, " MAX GOODPUT %.2f req/s at %s (%.0f%% of requests within SLO)", num(mg, METRIC(request_goodput)), gl,
                100 * num(mg, "good_fraction"));
        if (isfinite(num(mg, METRIC(slo_boundary_load)))) {
            const char *lim = json_string_value(json_object_get(mg, "slo_boundary_limited_by"));
            fprintf(f, "; SLO boundary %s%.3g%s (%s)", approx, num(mg, METRIC(slo_boundary_load)),
                    axis && !strcmp(axis, "rate") ? "/s" : "", lim ? lim : "");
        }
        fputc('\n', f);
    }
    if (!rows) return;   /* the caller printed every level's row as it finished */
    header(f);
    size_t knee_idx = json_is_object(kn) ? (size_t)json_integer_value(json_object_get(kn, "load_index")) : SIZE_MAX;
    for (size_t k = 0; k < ng; k++) {
        char label[32];
        load_label(label, sizeof label, axis, g[k].kind, g[k].load);
        const char *mark = k == knee_idx ? (utf8 ? "▶ " : "> ") : "  ";
        row(f, mark, label, group_mean(levels, &g[k], METRIC(request_throughput)), group_mean(levels, &g[k], METRIC(output_throughput)),
            group_mean(levels, &g[k], METRIC(median_ttft_ms)), group_mean(levels, &g[k], METRIC(p99_ttft_ms)),
            group_mean(levels, &g[k], METRIC(p99_tpot_ms)), group_mean(levels, &g[k], METRIC(p99_e2el_ms)),
            group_mean(levels, &g[k], METRIC(request_goodput)),
            g[k].n_measured ? group_mean(levels, &g[k], "error_rate")
                            : level_metric(json_object_get(json_array_get(levels, g[k].first), "results"), "error_rate"),
            state_of(g[k].saturated, g[k].early_stopped, g[k].n_measured > 0));
    }
    json_array_foreach(levels, i, lv) {
        const char *why = json_string_value(json_object_get(lv, "not_measured_reason"));
        char label[32];
        load_label(label, sizeof label, axis, json_string_value(json_object_get(lv, "kind")), num(lv, "load"));
        if (!sweep_level_measured(lv)) fprintf(f, "  %s %s\n", label, why ? why : "not measured: requests outlast the level");
    }
    fprintf(f, "  (latencies in ms; tok/s = output tokens/s; %s = knee row%s)\n", utf8 ? "▶" : ">",
            ng && g[0].n > 1 ? "; means over repeats, intervals in the JSON \"ci\"" : "");
}

json_t *sweep_load(const char *path, char *err, size_t errlen) {
    static const char *const schemas[] = { "dsperf.sweep/", NULL };
    return results_load_doc(path, schemas, "sweep", err, errlen);
}
