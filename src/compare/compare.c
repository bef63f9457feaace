/* compare — baseline vs candidate with statistics, and gate rules (see compare.h).
 *
 * Point values come from the results documents (exact, over the whole run). Intervals come from
 * the runs' samples, sized by each run's n (compare_samples.c). A change counts when the interval
 * of (candidate - baseline) excludes zero; a gate rule fails when the change is beyond its
 * allowance *and* counts, so a noisy rerun of the same build passes. Without samples a rule falls
 * back to the point values and says so. A metric whose meaning depends on a setting the runs
 * differ in is not compared, and a rule on its change fails (compare_config.c). */
#include "compare/compare_int.h"
#include "metrics/metric_table.h"
#include "results/validity.h"
#include "common/redact.h"
#include <ctype.h>
#include "common/units.h"
#include "metrics/summary.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MIN_SECONDS 5          /* interior seconds needed before a throughput gets an interval */

void compare_default_opts(compare_opts *o) {
    memset(o, 0, sizeof *o);
    o->confidence = 0.95;
    o->min_effect_pct = 1.0;
    o->resamples = 2000;
    o->seed = 1;
}

/* ---- rules ---- */

static int parse_one_rule(const char *s, size_t len, gate_rule *r, char *err, size_t errlen) {
    char buf[160];
    char *a = units_copy_trimmed(buf, sizeof buf, s, len);
    memset(r, 0, sizeof *r);
    snprintf(r->text, sizeof r->text, "%.*s", (int)sizeof r->text - 1, a);   /* the rule as written, cut to fit */
    char *colon = strchr(a, ':');
    const char *want = "rules look like p99_ttft_ms:+10%, output_throughput:-5%, errors:0, p99_tpot_ms:<=50 "
                       "or output_throughput:>=1000";
    if (!colon || colon == a || !colon[1]) { snprintf(err, errlen, "bad --gate rule '%s': %s", a, want); return -1; }
    *colon = 0;
    if ((size_t)(colon - a) >= sizeof r->metric) { snprintf(err, errlen, "bad --gate rule '%s': metric name too long", r->text); return -1; }
    for (const char *c = a; *c; c++)
        if (!isalnum((unsigned char)*c) && *c != '_' && *c != '.') {
            snprintf(err, errlen, "bad --gate rule '%s': '%s' is not a metric name (%s)", r->text, a, want);
            return -1;
        }
    memcpy(r->metric, a, (size_t)(colon - a) + 1);   /* fits: checked above */
    char *v = colon + 1;
    bool pct = false, rise = false, fall = false, min = false;
    if (!strncmp(v, "<=", 2)) v += 2;
    else if (!strncmp(v, ">=", 2)) { min = true; v += 2; }
    else if (*v == '+') { rise = true; v++; }
    else if (*v == '-') { fall = true; v++; }
    size_t vl = strlen(v);
    if (vl && v[vl - 1] == '%') { pct = true; v[--vl] = 0; }
    char *end;
    double x = strtod(v, &end);
    if (!vl || *end || !isfinite(x) || x < 0) {
        snprintf(err, errlen, "bad --gate rule '%s': '%s' is not a number (%s)", r->text, colon + 1, want);
        return -1;
    }
    if (pct && !rise && !fall) {
        snprintf(err, errlen, "bad --gate rule '%s': a percentage needs a direction, +%g%% (may rise by) or -%g%% (may fall by)",
                 r->text, x, x);
        return -1;
    }
    r->value = x;
    r->kind = rise ? (pct ? GATE_RISE_PCT : GATE_RISE_ABS) : fall ? (pct ? GATE_FALL_PCT : GATE_FALL_ABS)
                   : min ? GATE_MIN : GATE_MAX;
    return 0;
}

int compare_parse_rules(const char *spec, gate_rule *rules, int max, int *n, char *err, size_t errlen) {
    const char *p = spec;
    for (;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (len) {
            if (*n >= max) { snprintf(err, errlen, "too many --gate rules (at most %d)", max); return -1; }
            if (parse_one_rule(p, len, &rules[*n], err, errlen) < 0) return -1;
            (*n)++;
        }
        if (!comma) break;
        p = comma + 1;
    }
    return 0;
}

/* ---- metrics ---- */

#define num cmp_num

/* errors / error_rate: server-side failures (validity_counts: files of every version alike). */
static double value_of(const json_t *doc, const char *name, bool *present) {
    if (!strcmp(name, "errors") || !strcmp(name, "failed") || !strcmp(name, "error_rate")) {
        double f, c;
        validity_counts(doc, &f, &c);
        *present = json_object_get(doc, "failed") != NULL;
        if (strcmp(name, "error_rate")) return f;
        return isfinite(f) && isfinite(c) && f + c > 0 ? f / (f + c) : NAN;
    }
    *present = json_object_get(doc, name) != NULL;
    return num(doc, name);
}

/* +1 higher is better, -1 lower, 0 unknown: the metric table's word (metrics/metric_table.h). */
static int direction(const char *name) { return (int)metric_direction(name); }

static void fill_metric(metric_cmp *m, const char *name, const json_t *base, const json_t *cand, const compare_opts *o,
                        const cmp_config_diff *cd) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    bool pb, pc;
    m->base = value_of(base, name, &pb);
    m->cand = value_of(cand, name, &pc);
    m->known = pb || pc;
    m->dir = direction(name);
    m->p_mwu = NAN;
    cmp_refuse(m, cd, o);
    if (!m->refused[0]) cmp_infer(m, base, cand, o);
}

static double pct_of(double d, double base) { return base != 0 && isfinite(base) ? 100.0 * d / fabs(base) : NAN; }

/* better / worse (higher / lower when the direction is unknown) when the interval excludes zero
 * and the change is at least min_effect; "negligible" when it is real but smaller; "no significant
 * change" when the interval holds zero. Without an interval, by the points, marked "not tested". */
static const char *verdict(const metric_cmp *m, double min_effect_pct) {
    if (m->refused[0]) return "not comparable";
    if (!isfinite(m->base) || !isfinite(m->cand)) return "n/a";
    int moved = 0;
    if (m->have_ci) moved = m->ci_lo > 0 ? 1 : m->ci_hi < 0 ? -1 : 0;
    else moved = m->cand > m->base ? 1 : m->cand < m->base ? -1 : 0;
    if (!moved) return m->have_ci ? "no significant change" : "same";
    double pct = pct_of(m->cand - m->base, m->base);
    if (isfinite(pct) && fabs(pct) < min_effect_pct) return m->have_ci ? "negligible" : "same";
    const char *tag = m->have_ci ? "" : " (not tested)";
    static char buf[64];
    if (!m->dir) snprintf(buf, sizeof buf, "%s%s", moved > 0 ? "higher" : "lower", tag);
    else snprintf(buf, sizeof buf, "%s%s", moved * m->dir > 0 ? "better" : "worse", tag);
    return buf;
}

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

static json_t *metric_json(const metric_cmp *m, double min_effect_pct) {
    json_t *j = json_object();
    double d = m->cand - m->base;
    json_object_set_new(j, "name", json_string(m->name));
    json_object_set_new(j, "baseline", jnum(m->base));
    json_object_set_new(j, "candidate", jnum(m->cand));
    json_object_set_new(j, "change", jnum(d));
    json_object_set_new(j, "change_pct", jnum(pct_of(d, m->base)));
    json_object_set_new(j, "ci_low", m->have_ci ? jnum(m->ci_lo) : json_null());
    json_object_set_new(j, "ci_high", m->have_ci ? jnum(m->ci_hi) : json_null());
    json_object_set_new(j, "ci_low_pct", m->have_ci ? jnum(pct_of(m->ci_lo, m->base)) : json_null());
    json_object_set_new(j, "ci_high_pct", m->have_ci ? jnum(pct_of(m->ci_hi, m->base)) : json_null());
    json_object_set_new(j, "p_mann_whitney", jnum(m->p_mwu));
    json_object_set_new(j, "basis", m->basis[0] ? json_string(m->basis) : json_null());
    json_object_set_new(j, "direction", json_string(m->dir > 0 ? "higher_is_better" : m->dir < 0 ? "lower_is_better" : "unknown"));
    json_object_set_new(j, "verdict", json_string(verdict(m, min_effect_pct)));
    json_object_set_new(j, "comparable", json_boolean(!m->refused[0]));
    json_object_set_new(j, "not_comparable_because", m->refused[0] ? json_string(m->refused) : json_null());
    json_object_set_new(j, "no_interval_because", !m->have_ci && m->no_ci_why[0] ? json_string(m->no_ci_why) : json_null());
    return j;
}

/* ---- gate ---- */

static json_t *eval_rule(const gate_rule *r, const metric_cmp *m, bool *passed) {
    json_t *j = json_object();
    char why[900];
    double b = m->base, c = m->cand, d = c - b;
    bool rel = r->kind == GATE_RISE_PCT || r->kind == GATE_FALL_PCT;
    bool change_rule = r->kind != GATE_MAX && r->kind != GATE_MIN;
    *passed = true;
    if (change_rule && m->refused[0]) {
        *passed = false;
        snprintf(why, sizeof why, "not comparable: %s; --allow-config-change compares anyway", m->refused);
    } else if (!isfinite(c) || (change_rule && !isfinite(b))) {
        *passed = false;
        snprintf(why, sizeof why, "cannot evaluate: %s is missing in the %s", m->name, !isfinite(c) ? "candidate" : "baseline");
    } else if (r->kind == GATE_MAX) {
        *passed = c <= r->value;
        snprintf(why, sizeof why, "candidate %g %s %g", c, *passed ? "<=" : ">", r->value);
    } else if (r->kind == GATE_MIN) {
        *passed = c >= r->value;
        snprintf(why, sizeof why, "candidate %g %s %g", c, *passed ? ">=" : "<", r->value);
    } else {
        bool up = r->kind == GATE_RISE_PCT || r->kind == GATE_RISE_ABS;
        /* the change allowed, in the metric's unit */
        double allowed = rel ? r->value / 100.0 * fabs(b) : r->value;
        double over = up ? d - allowed : -d - allowed;
        bool beyond = over > 0 || (rel && b == 0 && (up ? d > 0 : d < 0));
        bool real = !m->have_ci || (up ? m->ci_lo > 0 : m->ci_hi < 0);
        *passed = !(beyond && real);
        char change[64], ci[96] = "";
        if (rel && b != 0) snprintf(change, sizeof change, "%+.1f%%", pct_of(d, b));
        else snprintf(change, sizeof change, "%+g", d);
        if (m->have_ci) {
            if (rel && b != 0) snprintf(ci, sizeof ci, ", interval %+.1f%%..%+.1f%%", pct_of(m->ci_lo, b), pct_of(m->ci_hi, b));
            else snprintf(ci, sizeof ci, ", interval %+g..%+g", m->ci_lo, m->ci_hi);
        }
        char no_ci[240];
        snprintf(no_ci, sizeof no_ci, " (%s: not tested for noise)", m->no_ci_why[0] ? m->no_ci_why : "no samples");
        const char *tail = !m->have_ci ? no_ci
                         : beyond && !real ? " (within noise)" : "";
        snprintf(why, sizeof why, "%s %g -> %g, %s%s; allowed %s%g%s%s", m->name, b, c, change, ci,
                 up ? "+" : "-", r->value, rel ? "%" : "", tail);
    }
    json_object_set_new(j, "rule", json_string(r->text));
    json_object_set_new(j, "passed", json_boolean(*passed));
    json_object_set_new(j, "reason", json_string(why));
    return j;
}

/* ---- the document ---- */

static const char *default_metrics[] = {
    METRIC(request_throughput), METRIC(output_throughput), METRIC(request_goodput),
    METRIC(mean_ttft_ms), METRIC(median_ttft_ms), METRIC(p99_ttft_ms), METRIC(mean_tpot_ms), METRIC(p99_tpot_ms),
    METRIC(median_itl_ms), METRIC(p99_itl_ms), METRIC(median_e2el_ms), METRIC(p99_e2el_ms), METRIC(p99_ttft_from_schedule_ms),
    /* reasoning models: compared when both runs had a reasoning phase (metrics/phases.h) */
    METRIC(mean_ttfa_ms), METRIC(p99_ttfa_ms), METRIC(mean_answer_tpot_ms),
    "failed", "error_rate",
};

static json_t *run_info(const json_t *doc, const char *path) {
    json_t *j = json_object();
    json_object_set_new(j, "path", path ? json_string(path) : json_null());
    const char *keys[] = {"producer", "date", "command_line", "version"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *v = json_object_get(doc, keys[i]);
        json_object_set_new(j, keys[i], json_is_string(v) ? redact_json(json_string_value(v)) : json_incref(v ? v : json_null()));
    }
    json_object_set(j, "partial", json_object_get(doc, "partial") ? json_object_get(doc, "partial") : json_false());
    return j;
}

/* Differences in what was run, so a reader does not take a changed load for a regression. */
static json_t *config_warnings(const json_t *base, const json_t *cand) {
    json_t *w = json_array();
    const json_t *cb = json_object_get(base, "config"), *cc = json_object_get(cand, "config");
    const char *keys[] = {"model", "api", "load", "concurrency", "rate_per_s", "arrival", "max_concurrency",
                          "dataset", "tokenizer", "ignore_eos", "requests", "duration_s"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        json_t *x = json_object_get(cb, keys[i]), *y = json_object_get(cc, keys[i]);
        if ((!x && !y) || (x && y && json_equal(x, y))) continue;
        char *sx = x ? json_dumps(x, JSON_ENCODE_ANY) : NULL, *sy = y ? json_dumps(y, JSON_ENCODE_ANY) : NULL;
        char msg[400];
        snprintf(msg, sizeof msg, "the runs differ in %s: %s vs %s", keys[i], sx ? sx : "(none)", sy ? sy : "(none)");
        json_array_append_new(w, json_string(msg));
        free(sx);
        free(sy);
    }
    if (json_is_true(json_object_get(base, "partial")))
        json_array_append_new(w, json_string("the baseline run is partial (interrupted): its numbers cover part of the plan"));
    if (json_is_true(json_object_get(cand, "partial")))
        json_array_append_new(w, json_string("the candidate run is partial (interrupted): the gate fails"));
    /* a sweep keeps its samples in its levels' results */
    const json_t *rb = json_object_get(json_array_get(json_object_get(base, "levels"), 0), "results");
    const json_t *rc = json_object_get(json_array_get(json_object_get(cand, "levels"), 0), "results");
    if (!json_object_get(rb ? rb : base, "samples") || !json_object_get(rc ? rc : cand, "samples"))
        json_array_append_new(w, json_string("a run has no samples (written by an older dsperf): latency changes are not tested for noise"));
    return w;
}

/* The parts both kinds of comparison share: what was compared and how. */
static json_t *doc_header(const json_t *base, const json_t *cand, const compare_opts *o, const char *sweep_axis) {
    json_t *doc = json_object();
    json_object_set_new(doc, "schema", json_string(COMPARE_SCHEMA));
    json_object_set_new(doc, "kind", json_string(sweep_axis ? "sweep" : "results"));
    if (sweep_axis) json_object_set_new(doc, "axis", json_string(sweep_axis));
    json_object_set_new(doc, "baseline", run_info(base, o->baseline_path));
    json_object_set_new(doc, "candidate", run_info(cand, o->candidate_path));
    json_object_set_new(doc, "confidence", json_real(o->confidence));
    json_object_set_new(doc, "resamples", json_integer(o->resamples));
    json_object_set_new(doc, "min_effect_pct", json_real(o->min_effect_pct));
    json_object_set_new(doc, "allow_config_change", json_boolean(o->allow_config_change));
    cmp_config_diff cd;
    cmp_config_diff_of(base, cand, &cd);
    json_t *diff = json_object();
    static const char *const group[] = { "workload", "load", "slo" };
    for (int g = 0; g < 3; g++) json_object_set_new(diff, group[g], cd.why[g][0] ? json_string(cd.why[g]) : json_null());
    json_object_set_new(doc, "config_differences", diff);
    return doc;
}

/* The verdict of a pipeline: every rule passed and the candidate run is whole. */
static void attach_gate(json_t *doc, const json_t *cand, json_t *rules, bool all_passed) {
    bool partial = json_is_true(json_object_get(cand, "partial"));
    json_t *gate = json_object();
    json_object_set_new(gate, "rules", rules);
    json_object_set_new(gate, "candidate_partial", json_boolean(partial));
    json_object_set_new(gate, "passed", json_boolean(all_passed && !partial));
    json_object_set_new(doc, "gate", gate);
}

static bool has_metric(json_t *list, const char *name) {
    size_t i;
    json_t *m;
    json_array_foreach(list, i, m) if (!strcmp(json_string_value(json_object_get(m, "name")), name)) return true;
    return false;
}

/* The comparison of a metric, computed once (a bootstrap is thousands of resamples): from done[]
 * when a metric of that name was compared already, else computed into it. */
static const metric_cmp *compared(const char *name, metric_cmp *done, int *n_done, const json_t *base, const json_t *cand,
                                  const compare_opts *o, const cmp_config_diff *cd) {
    for (int i = 0; i < *n_done; i++) if (!strcmp(done[i].name, name)) return &done[i];
    fill_metric(&done[*n_done], name, base, cand, o, cd);
    return &done[(*n_done)++];
}

/* "p99_ttft_ms" -> 99 and the samples behind it in doc (pooled gaps for ITL, else completed
 * requests); false for a name that is no percentile. */
static bool pct_samples(const json_t *doc, const char *name, double *p, long *n) {
    if (name[0] != 'p' || !isdigit((unsigned char)name[1])) return false;
    char *end;
    *p = strtod(name + 1, &end);
    if (*end != '_') return false;
    bool itl = !strncmp(end + 1, "itl", 3);
    const json_t *v = json_object_get(doc, itl ? "itl_samples" : "completed");
    if (!json_is_integer(v)) return false;
    *n = (long)json_integer_value(v);
    return true;
}

/* A percentile from fewer samples than it needs is the largest samples relabelled: each such
 * metric says so ("thin": both sides' counts and the count it needs), and the table marks it. */
static void mark_thin(json_t *list, const json_t *base, const json_t *cand) {
    size_t i;
    json_t *m;
    json_array_foreach(list, i, m) {
        const char *name = json_string_value(json_object_get(m, "name"));
        double p;
        long nb = -1, nc = -1;
        if (!name || !pct_samples(base, name, &p, &nb) || !pct_samples(cand, name, &p, &nc)) continue;
        long need = summary_percentile_samples_needed(p);
        if (nb >= need && nc >= need) continue;
        json_object_set_new(m, "thin", json_pack("{s:I,s:I,s:I}", "baseline_samples", (json_int_t)nb, "candidate_samples",
                                                 (json_int_t)nc, "samples_needed", (json_int_t)need));
    }
}

json_t *compare_runs(const json_t *base, const json_t *cand, const compare_opts *o, char *err, size_t errlen) {
    for (int i = 0; i < o->n_rules; i++) {
        bool pb, pc;
        value_of(base, o->rules[i].metric, &pb);
        value_of(cand, o->rules[i].metric, &pc);
        if (!pb && !pc) {
            snprintf(err, errlen, "--gate rule '%s': neither run has a metric '%s' (names as in the results file, "
                     "e.g. p99_ttft_ms, output_throughput, request_goodput, errors, error_rate)",
                     o->rules[i].text, o->rules[i].metric);
            return NULL;
        }
    }
    int n_names = o->metrics ? o->n_metrics : (int)(sizeof default_metrics / sizeof default_metrics[0]), n_done = 0;
    cmp_config_diff cd;
    cmp_config_diff_of(base, cand, &cd);
    metric_cmp *done = calloc((size_t)(n_names + o->n_rules + 1), sizeof *done);
    if (!done) { snprintf(err, errlen, "out of memory"); return NULL; }
    json_t *doc = doc_header(base, cand, o, NULL);
    json_object_set_new(doc, "warnings", config_warnings(base, cand));
    json_t *list = json_array();
    for (int i = 0; i < n_names; i++) {
        const char *name = o->metrics ? o->metrics[i] : default_metrics[i];
        const metric_cmp *m = compared(name, done, &n_done, base, cand, o, &cd);
        if (!m->known || has_metric(list, name)) continue;     /* e.g. goodput without an SLO */
        json_array_append_new(list, metric_json(m, o->min_effect_pct));
    }
    json_t *rules = json_array();
    bool all = true;
    for (int i = 0; i < o->n_rules; i++) {
        const metric_cmp *m = compared(o->rules[i].metric, done, &n_done, base, cand, o, &cd);
        if (!has_metric(list, m->name)) json_array_append_new(list, metric_json(m, o->min_effect_pct));
        bool ok;
        json_array_append_new(rules, eval_rule(&o->rules[i], m, &ok));
        all = all && ok;
    }
    free(done);
    mark_thin(list, base, cand);
    json_object_set_new(doc, "metrics", list);
    attach_gate(doc, cand, rules, all);
    return doc;
}

/* ---- sweeps ---- */

typedef struct { const char *name; const char *obj; const char *key; } headline_def;

static const headline_def headlines[] = {
    {METRIC(knee_load), "knee", "load"},
    {METRIC(knee_output_throughput), "knee", METRIC(output_throughput)},
    {METRIC(peak_output_throughput), NULL, NULL},
    {METRIC(max_goodput), METRIC(max_goodput), METRIC(request_goodput)},
    {METRIC(max_goodput_load), METRIC(max_goodput), "load"},
    {METRIC(slo_boundary_load), METRIC(max_goodput), METRIC(slo_boundary_load)},
};

static const headline_def *headline_of(const char *name) {
    for (size_t i = 0; i < sizeof headlines / sizeof headlines[0]; i++)
        if (!strcmp(headlines[i].name, name)) return &headlines[i];
    return NULL;
}

static double headline_value(const json_t *sweep, const headline_def *h) {
    if (h->obj) return num(json_object_get(sweep, h->obj), h->key);
    double peak = NAN;              /* the highest output throughput of any level */
    size_t i;
    json_t *lv;
    json_array_foreach(json_object_get(sweep, "levels"), i, lv) {
        double x = num(json_object_get(lv, "results"), METRIC(output_throughput));
        if (isfinite(x) && (!isfinite(peak) || x > peak)) peak = x;
    }
    return peak;
}

/* A headline number of both sweeps: one point each, so no interval. */
static void headline_cmp(metric_cmp *m, const headline_def *h, const json_t *base, const json_t *cand, const compare_opts *o,
                         const cmp_config_diff *cd) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", h->name);
    m->base = headline_value(base, h);
    m->cand = headline_value(cand, h);
    m->dir = +1;                 /* more throughput, goodput or load before a limit is better */
    m->p_mwu = NAN;
    snprintf(m->no_ci_why, sizeof m->no_ci_why, "one number per sweep");
    cmp_refuse(m, cd, o);
}

/* The first level of the sweep at this load (repeats after the first are left out). */
static const json_t *level_at(const json_t *sweep, double load) {
    size_t i;
    json_t *lv;
    json_array_foreach(json_object_get(sweep, "levels"), i, lv)
        if (fabs(num(lv, "load") - load) <= 1e-9 * fabs(load) && json_object_get(lv, "results")) return lv;
    return NULL;
}

static const char *sweep_level_metrics[] = {METRIC(output_throughput), METRIC(p99_ttft_ms), METRIC(p99_tpot_ms), METRIC(p99_e2el_ms), "error_rate"};

json_t *compare_sweeps(const json_t *base, const json_t *cand, const compare_opts *o, char *err, size_t errlen) {
    const char *ab = json_string_value(json_object_get(base, "axis")), *ac = json_string_value(json_object_get(cand, "axis"));
    if (!ab || !ac || strcmp(ab, ac)) {
        snprintf(err, errlen, "the sweeps have different axes (%s vs %s): compare sweeps over the same kind of load",
                 ab ? ab : "?", ac ? ac : "?");
        return NULL;
    }
    /* headline rules are checked once; the rest at every level */
    gate_rule level_rules[64];
    int n_level = 0;
    for (int i = 0; i < o->n_rules && n_level < 64; i++)
        if (!headline_of(o->rules[i].metric)) level_rules[n_level++] = o->rules[i];
    json_t *levels = json_array();
    size_t i;
    json_t *lv;
    compare_opts lo = *o;
    lo.rules = level_rules;
    lo.n_rules = n_level;
    if (!o->metrics) {
        lo.metrics = sweep_level_metrics;
        lo.n_metrics = (int)(sizeof sweep_level_metrics / sizeof sweep_level_metrics[0]);
    }
    json_array_foreach(json_object_get(base, "levels"), i, lv) {
        double load = num(lv, "load");
        const json_t *other = level_at(cand, load);
        if (!json_object_get(lv, "results") || !other || level_at(base, load) != lv) continue;
        json_t *c = compare_runs(json_object_get(lv, "results"), json_object_get(other, "results"), &lo, err, errlen);
        if (!c) { json_decref(levels); return NULL; }
        json_array_append_new(levels, json_pack("{s:f,s:o}", "load", load, "comparison", c));
    }
    if (!json_array_size(levels)) {
        json_decref(levels);
        snprintf(err, errlen, "the sweeps have no %s level in common: nothing to compare level by level", ab);
        return NULL;
    }
    json_t *doc = doc_header(base, cand, o, ab);
    json_t *warn = config_warnings(base, cand);
    cmp_config_diff cd;
    cmp_config_diff_of(base, cand, &cd);
    size_t nb = json_array_size(json_object_get(base, "levels")), nc = json_array_size(json_object_get(cand, "levels"));
    if (json_array_size(levels) < nb || json_array_size(levels) < nc) {
        char msg[200];
        snprintf(msg, sizeof msg, "%zu of %zu / %zu levels are at loads both sweeps ran; the rest are left out",
                 json_array_size(levels), nb, nc);
        json_array_append_new(warn, json_string(msg));
    }
    json_object_set_new(doc, "warnings", warn);
    /* headline: points only (one number per sweep) */
    json_t *list = json_array();
    metric_cmp m;
    for (size_t h = 0; h < sizeof headlines / sizeof headlines[0]; h++) {
        headline_cmp(&m, &headlines[h], base, cand, o, &cd);
        if (isfinite(m.base) || isfinite(m.cand)) json_array_append_new(list, metric_json(&m, o->min_effect_pct));
    }
    json_object_set_new(doc, "metrics", list);
    json_t *names = json_array();
    for (int k = 0; k < lo.n_metrics; k++) json_array_append_new(names, json_string(lo.metrics[k]));
    for (int k = 0; k < n_level; k++) {
        bool dup = false;
        for (int j = 0; j < lo.n_metrics; j++) dup = dup || !strcmp(lo.metrics[j], level_rules[k].metric);
        for (int j = 0; j < k; j++) dup = dup || !strcmp(level_rules[j].metric, level_rules[k].metric);
        if (!dup) json_array_append_new(names, json_string(level_rules[k].metric));
    }
    json_object_set_new(doc, "level_metrics", names);
    json_object_set_new(doc, "levels", levels);
    /* the gate: headline rules on the points, level rules at every common level */
    json_t *rules = json_array();
    bool all = true;
    int li = 0;
    for (int r = 0; r < o->n_rules; r++) {
        const headline_def *h = headline_of(o->rules[r].metric);
        bool ok = true;
        json_t *res = NULL;
        if (h) {
            headline_cmp(&m, h, base, cand, o, &cd);
            res = eval_rule(&o->rules[r], &m, &ok);
        } else {
            /* this rule's result at each level: the first failing level speaks for it */
            json_t *first_fail = NULL;
            size_t n_lv = json_array_size(levels);
            json_array_foreach(levels, i, lv) {
                const json_t *lr = json_array_get(json_object_get(json_object_get(json_object_get(lv, "comparison"), "gate"), "rules"), (size_t)li);
                if (!json_is_true(json_object_get(lr, "passed")) && !first_fail) {
                    char why[480];
                    snprintf(why, sizeof why, "at %s %g: %s", ab, num(lv, "load"), json_string_value(json_object_get(lr, "reason")));
                    first_fail = json_string(why);
                }
            }
            li++;
            ok = first_fail == NULL;
            char why[200];
            snprintf(why, sizeof why, "within the rule at all %zu common levels", n_lv);
            res = json_pack("{s:s,s:b,s:o}", "rule", o->rules[r].text, "passed", ok, "reason", first_fail ? first_fail : json_string(why));
        }
        json_array_append_new(rules, res);
        all = all && ok;
    }
    attach_gate(doc, cand, rules, all);
    return doc;
}

/* ---- printing ---- */

static void fmt_val(char *buf, size_t len, const json_t *v) {
    if (!json_is_number(v)) { snprintf(buf, len, "-"); return; }
    double x = json_number_value(v);
    if (fabs(x) >= 1000 || x == floor(x)) snprintf(buf, len, "%.0f", x);
    else if (fabs(x) >= 10) snprintf(buf, len, "%.1f", x);
    else if (fabs(x) >= 0.01) snprintf(buf, len, "%.3f", x);
    else snprintf(buf, len, "%.3g", x);
}

static void fmt_change(char *buf, size_t len, const json_t *m) {
    const json_t *p = json_object_get(m, "change_pct");
    if (json_is_number(p)) snprintf(buf, len, "%+.1f%%", json_number_value(p));
    else if (json_is_number(json_object_get(m, "change"))) snprintf(buf, len, "%+g", json_number_value(json_object_get(m, "change")));
    else snprintf(buf, len, "-");
}

static void fmt_ci(char *buf, size_t len, const json_t *m) {
    const json_t *lo = json_object_get(m, "ci_low_pct"), *hi = json_object_get(m, "ci_high_pct");
    if (json_is_number(lo) && json_is_number(hi)) snprintf(buf, len, "%+.1f%% .. %+.1f%%", json_number_value(lo), json_number_value(hi));
    else if (json_is_number(json_object_get(m, "ci_low")))
        snprintf(buf, len, "%+.3g .. %+.3g", json_number_value(json_object_get(m, "ci_low")), json_number_value(json_object_get(m, "ci_high")));
    else snprintf(buf, len, "-");
}

/* "p99_ttft_ms" -> "99" (a static buffer: one row at a time). */
static const char *pct_label(const char *name) {
    static char buf[16];
    size_t n = strcspn(name + 1, "_");
    snprintf(buf, sizeof buf, "%.*s", (int)(n < sizeof buf ? n : sizeof buf - 1), name + 1);
    return buf;
}

static void print_metric_rows(FILE *f, const json_t *metrics, int conf, bool md) {
    if (md) fprintf(f, "| metric | baseline | candidate | change | %d%% interval | p (MWU) | verdict |\n|---|---:|---:|---:|---:|---:|---|\n", conf);
    else fprintf(f, "%-28s %12s %12s %9s %20s %8s  %s\n", "metric", "baseline", "candidate", "change",
                 conf == 95 ? "95% interval" : "interval", "p (MWU)", "verdict");
    size_t i;
    json_t *m;
    json_array_foreach(metrics, i, m) {
        char bv[32], cv[32], ch[32], ci[64], p[16] = "-";
        fmt_val(bv, sizeof bv, json_object_get(m, "baseline"));
        fmt_val(cv, sizeof cv, json_object_get(m, "candidate"));
        fmt_change(ch, sizeof ch, m);
        fmt_ci(ci, sizeof ci, m);
        const json_t *pv = json_object_get(m, "p_mann_whitney");
        if (json_is_number(pv)) snprintf(p, sizeof p, json_number_value(pv) < 0.001 ? "<0.001" : "%.3f", json_number_value(pv));
        const char *name = json_string_value(json_object_get(m, "name")), *v = json_string_value(json_object_get(m, "verdict"));
        const json_t *thin = json_object_get(m, "thin");
        char vt[160];
        if (thin)
            snprintf(vt, sizeof vt, "%s (from %lld / %lld samples; P%s needs %lld)", v,
                     (long long)json_integer_value(json_object_get(thin, "baseline_samples")),
                     (long long)json_integer_value(json_object_get(thin, "candidate_samples")), pct_label(name),
                     (long long)json_integer_value(json_object_get(thin, "samples_needed")));
        else snprintf(vt, sizeof vt, "%s", v ? v : "");
        if (md) fprintf(f, "| `%s` | %s | %s | %s | %s | %s | %s |\n", name, bv, cv, ch, ci, p, vt);
        else fprintf(f, "%-28s %12s %12s %9s %20s %8s  %s\n", name, bv, cv, ch, ci, p, vt);
    }
}

/* One cell per level and metric: "+3.2% worse". */
static void level_cell(char *buf, size_t len, const json_t *m) {
    char ch[32];
    fmt_change(ch, sizeof ch, m);
    const char *v = json_string_value(json_object_get(m, "verdict"));
    snprintf(buf, len, "%s %s", ch, !strcmp(v, "no significant change") ? "(noise)" : v);
}

static void print_levels(FILE *f, const json_t *doc, bool md) {
    const json_t *levels = json_object_get(doc, "levels");
    const json_t *names = json_object_get(doc, "level_metrics");
    const char *axis = json_string_value(json_object_get(doc, "axis"));
    size_t i, k;
    json_t *n, *lv;
    if (md) {
        fprintf(f, "\n| %s |", axis ? axis : "load");
        json_array_foreach(names, k, n) fprintf(f, " `%s` |", json_string_value(n));
        fprintf(f, "\n|---:|");
        json_array_foreach(names, k, n) fprintf(f, "---|");
        fputc('\n', f);
    } else {
        fprintf(f, "\nper level (change, verdict):\n%-10s", axis ? axis : "load");
        json_array_foreach(names, k, n) fprintf(f, " %-24s", json_string_value(n));
        fputc('\n', f);
    }
    json_array_foreach(levels, i, lv) {
        double load = json_number_value(json_object_get(lv, "load"));
        if (md) fprintf(f, "| %g |", load); else fprintf(f, "%-10g", load);
        const json_t *ms = json_object_get(json_object_get(lv, "comparison"), "metrics");
        json_array_foreach(names, k, n) {
            char cell[64] = "-";
            size_t j;
            json_t *m;
            json_array_foreach(ms, j, m)
                if (!strcmp(json_string_value(json_object_get(m, "name")), json_string_value(n))) level_cell(cell, sizeof cell, m);
            if (md) fprintf(f, " %s |", cell); else fprintf(f, " %-24s", cell);
        }
        fputc('\n', f);
    }
}

void compare_print(FILE *f, const json_t *doc, bool md) {
    const json_t *b = json_object_get(doc, "baseline"), *c = json_object_get(doc, "candidate");
    const char *bp = json_string_value(json_object_get(b, "path")), *cp = json_string_value(json_object_get(c, "path"));
    int conf = (int)lround(json_number_value(json_object_get(doc, "confidence")) * 100);
    bool sweep = json_object_get(doc, "levels") != NULL;
    if (md) fprintf(f, "### dsperf compare%s: `%s` → `%s`\n\n", sweep ? " (sweeps)" : "", bp ? bp : "baseline", cp ? cp : "candidate");
    else fprintf(f, "dsperf compare%s: baseline %s, candidate %s\n", sweep ? " (sweeps)" : "", bp ? bp : "-", cp ? cp : "-");
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(doc, "warnings"), i, w)
        fprintf(f, md ? "> **warning:** %s\n" : "warning: %s\n", json_string_value(w));
    if (md && json_array_size(json_object_get(doc, "warnings"))) fputc('\n', f);
    print_metric_rows(f, json_object_get(doc, "metrics"), conf, md);
    /* the metrics refused, and why: one line per distinct reason */
    const json_t *ms = json_object_get(doc, "metrics"), *m;
    json_array_foreach(ms, i, m) {
        const char *why = json_string_value(json_object_get(m, "not_comparable_because"));
        bool seen = false;
        for (size_t k = 0; why && k < i && !seen; k++) {
            const char *w2 = json_string_value(json_object_get(json_array_get(ms, k), "not_comparable_because"));
            seen = w2 && !strcmp(w2, why);
        }
        if (why && !seen)
            fprintf(f, md ? "\n> **not comparable:** %s; `--allow-config-change` compares anyway\n"
                          : "not comparable: %s; --allow-config-change compares anyway\n", why);
    }
    if (sweep) print_levels(f, doc, md);
    const json_t *gate = json_object_get(doc, "gate");
    const json_t *rules = json_object_get(gate, "rules");
    if (!json_array_size(rules) && !json_is_true(json_object_get(gate, "candidate_partial"))) return;
    bool passed = json_is_true(json_object_get(gate, "passed"));
    size_t failed = 0;
    json_t *r;
    json_array_foreach(rules, i, r) failed += !json_is_true(json_object_get(r, "passed"));
    if (md) fprintf(f, "\n**gate: %s**", passed ? "passed" : "FAILED");
    else fprintf(f, "\ngate: %s", passed ? "PASSED" : "FAILED");
    fprintf(f, " (%zu of %zu rules failed%s)\n", failed, json_array_size(rules),
            json_is_true(json_object_get(gate, "candidate_partial")) ? "; the candidate run is partial" : "");
    json_array_foreach(rules, i, r)
        fprintf(f, md ? "- %s `%s`: %s\n" : "  %-4s %-30s %s\n", json_is_true(json_object_get(r, "passed")) ? "ok" : "FAIL",
                json_string_value(json_object_get(r, "rule")), json_string_value(json_object_get(r, "reason")));
}

/* ---- for other readers of results (the history's noise band and trend) ---- */

int compare_metric_direction(const char *metric) { return direction(metric); }

double compare_sweep_headline(const json_t *sweep, const char *name) {
    const headline_def *h = headline_of(name);
    return h ? headline_value(sweep, h) : NAN;
}
