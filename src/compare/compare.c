/* compare — baseline vs candidate with statistics, and gate rules (see compare.h).
 *
 * Point values come from the results documents (exact, over the whole run). Intervals come from
 * the runs' `samples` (latency metrics: every value or 2,000 evenly spaced quantiles) or from the
 * per-second timeline (throughputs, the interior seconds only: the first and last are partial).
 * A change counts when the bootstrap interval of (candidate - baseline) excludes zero; a gate rule
 * fails when the change is beyond its allowance *and* counts, so a noisy rerun of the same build
 * passes. Without samples a rule falls back to the point values and says so. */
#include "compare/compare.h"
#include "metrics/infer.h"
#include "common/redact.h"
#include <ctype.h>
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
    if (len >= sizeof buf) len = sizeof buf - 1;
    memcpy(buf, s, len);
    buf[len] = 0;
    char *a = buf, *e = buf + strlen(buf);
    while (isspace((unsigned char)*a)) a++;
    while (e > a && isspace((unsigned char)e[-1])) *--e = 0;
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

typedef struct {
    char name[64];
    bool known;              /* the name means something in at least one run */
    double base, cand;       /* NAN when absent or null */
    int dir;                 /* +1 higher is better, -1 lower is better, 0 unknown */
    bool have_ci;
    double ci_lo, ci_hi;     /* of cand - base, in the metric's unit */
    double p_mwu;            /* distribution shift, NAN when not tested */
    char basis[96];          /* what the interval was computed from */
    const char *no_ci_why;   /* why there is no interval (NULL: "no samples") */
} metric_cmp;

static double num(const json_t *doc, const char *key) {
    const json_t *v = json_object_get(doc, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static double error_rate(const json_t *doc) {
    double f = num(doc, "failed"), c = num(doc, "completed");
    return isfinite(f) && isfinite(c) && f + c > 0 ? f / (f + c) : NAN;
}

static double value_of(const json_t *doc, const char *name, bool *present) {
    if (!strcmp(name, "errors")) name = "failed";
    if (!strcmp(name, "error_rate")) { *present = json_object_get(doc, "failed") != NULL; return error_rate(doc); }
    *present = json_object_get(doc, name) != NULL;
    return num(doc, name);
}

static int direction(const char *name) {
    size_t n = strlen(name);
    if (n > 3 && !strcmp(name + n - 3, "_ms")) return -1;
    if (!strcmp(name, "failed") || !strcmp(name, "errors") || !strcmp(name, "error_rate") ||
        !strcmp(name, "output_token_mismatches")) return -1;
    if (strstr(name, "throughput") || strstr(name, "goodput") || !strcmp(name, "completed") ||
        !strcmp(name, "good_requests") || !strcmp(name, "max_output_tokens_per_s")) return +1;
    return 0;
}

/* "p99_ttft_ms" -> stat percentile 99, family "ttft"; "mean_e2el_from_schedule_ms" -> mean. */
static bool parse_family(const char *name, infer_stat *stat, double *param, char *family, size_t flen) {
    size_t n = strlen(name);
    if (n < 4 || strcmp(name + n - 3, "_ms")) return false;
    const char *us = strchr(name, '_');
    if (!us) return false;
    size_t sl = (size_t)(us - name);
    if (sl == 4 && !strncmp(name, "mean", 4)) { *stat = INFER_MEAN; *param = 0; }
    else if (sl == 3 && !strncmp(name, "std", 3)) { *stat = INFER_STD; *param = 0; }
    else if (sl == 6 && !strncmp(name, "median", 6)) { *stat = INFER_PERCENTILE; *param = 50; }
    else if (name[0] == 'p' && sl > 1) {
        char buf[16];
        if (sl >= sizeof buf) return false;
        memcpy(buf, name + 1, sl - 1);
        buf[sl - 1] = 0;
        char *end;
        *param = strtod(buf, &end);
        if (*end || *param < 0 || *param > 100) return false;
        *stat = INFER_PERCENTILE;
    } else return false;     /* min/max: extremes get no interval */
    size_t fl = n - 3 - sl - 1;
    if (!fl || fl >= flen) return false;
    memcpy(family, us + 1, fl);
    family[fl] = 0;
    return true;
}

static int cmp_d(const void *x, const void *y) {
    double a = *(const double *)x, b = *(const double *)y;
    return (a > b) - (a < b);
}

/* The run's samples of a family, in ms, ascending. NULL when the run has none. */
static double *family_samples(const json_t *doc, const char *family, size_t *n, size_t *n_run, const char **method) {
    const json_t *f = json_object_get(json_object_get(doc, "samples"), family);
    const json_t *vals = json_object_get(f, "values");
    *n = json_array_size(vals);
    *n_run = (size_t)json_integer_value(json_object_get(f, "n"));
    *method = json_string_value(json_object_get(f, "method"));
    if (!*n) return NULL;
    double *v = malloc(*n * sizeof *v);
    if (!v) return NULL;
    for (size_t i = 0; i < *n; i++) v[i] = (double)json_integer_value(json_array_get(vals, i)) / 1000.0;
    for (size_t i = 1; i < *n; i++)           /* written ascending; keep the promise if edited */
        if (v[i] < v[i - 1]) { qsort(v, *n, sizeof *v, cmp_d); break; }
    return v;
}

/* Per-second values of a timeline series, interior seconds only, ascending. */
static double *second_samples(const json_t *doc, const char *series, size_t *n) {
    const json_t *arr = json_object_get(json_object_get(doc, "timeline"), series);
    size_t len = json_array_size(arr);
    *n = len >= 2 ? len - 2 : 0;
    if (*n < MIN_SECONDS) { *n = 0; return NULL; }
    double *v = malloc(*n * sizeof *v);
    if (!v) { *n = 0; return NULL; }
    for (size_t i = 0; i < *n; i++) v[i] = json_number_value(json_array_get(arr, i + 1));
    qsort(v, *n, sizeof *v, cmp_d);
    return v;
}

static void infer(metric_cmp *m, const json_t *base, const json_t *cand, const compare_opts *o) {
    m->have_ci = false;
    m->p_mwu = NAN;
    infer_stat stat = INFER_MEAN;
    double param = 0;
    char family[48];
    double *a = NULL, *b = NULL;
    size_t na = 0, nb = 0;
    if (parse_family(m->name, &stat, &param, family, sizeof family)) {
        size_t ra, rb;
        const char *ma = NULL, *mb = NULL;
        a = family_samples(base, family, &na, &ra, &ma);
        b = family_samples(cand, family, &nb, &rb, &mb);
        if (a && b) {
            bool q = (ma && !strcmp(ma, "quantiles")) || (mb && !strcmp(mb, "quantiles"));
            snprintf(m->basis, sizeof m->basis, "%s samples %zu / %zu%s", family, na, nb, q ? " (quantiles)" : "");
        }
    } else if (!strcmp(m->name, "output_throughput") || !strcmp(m->name, "request_throughput")) {
        const char *series = m->name[0] == 'o' ? "output_tokens" : "finished";
        a = second_samples(base, series, &na);
        b = second_samples(cand, series, &nb);
        stat = INFER_MEAN;
        if (a && b) snprintf(m->basis, sizeof m->basis, "per-second %s, %zu / %zu s", series, na, nb);
        else m->no_ci_why = "under 5 whole seconds of timeline";
    } else {
        m->no_ci_why = "no per-request samples for this metric";
    }
    if (a && b) {
        double lo, hi;
        if (infer_bootstrap_diff(stat, param, a, na, b, nb, o->resamples, o->confidence, o->seed, &lo, &hi) == 0) {
            m->have_ci = true;
            m->ci_lo = lo;
            m->ci_hi = hi;
        }
        m->p_mwu = infer_mann_whitney_p(a, na, b, nb, NULL);
    } else {
        m->basis[0] = 0;
    }
    free(a);
    free(b);
}

static void fill_metric(metric_cmp *m, const char *name, const json_t *base, const json_t *cand, const compare_opts *o) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", name);
    bool pb, pc;
    m->base = value_of(base, name, &pb);
    m->cand = value_of(cand, name, &pc);
    m->known = pb || pc;
    m->dir = direction(name);
    infer(m, base, cand, o);
}

static double pct_of(double d, double base) { return base != 0 && isfinite(base) ? 100.0 * d / fabs(base) : NAN; }

/* better / worse (higher / lower when the direction is unknown) when the interval excludes zero
 * and the change is at least min_effect; "negligible" when it is real but smaller; "no significant
 * change" when the interval holds zero. Without an interval, by the points, marked "not tested". */
static const char *verdict(const metric_cmp *m, double min_effect_pct) {
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
    return j;
}

/* ---- gate ---- */

static json_t *eval_rule(const gate_rule *r, const metric_cmp *m, bool *passed) {
    json_t *j = json_object();
    char why[512];
    double b = m->base, c = m->cand, d = c - b;
    bool rel = r->kind == GATE_RISE_PCT || r->kind == GATE_FALL_PCT;
    bool change_rule = r->kind != GATE_MAX && r->kind != GATE_MIN;
    *passed = true;
    if (!isfinite(c) || (change_rule && !isfinite(b))) {
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
        char no_ci[96];
        snprintf(no_ci, sizeof no_ci, " (%s: not tested for noise)", m->no_ci_why ? m->no_ci_why : "no samples");
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
    "request_throughput", "output_throughput", "request_goodput",
    "mean_ttft_ms", "median_ttft_ms", "p99_ttft_ms", "mean_tpot_ms", "p99_tpot_ms",
    "median_itl_ms", "p99_itl_ms", "median_e2el_ms", "p99_e2el_ms", "p99_ttft_from_schedule_ms",
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
                                  const compare_opts *o) {
    for (int i = 0; i < *n_done; i++) if (!strcmp(done[i].name, name)) return &done[i];
    fill_metric(&done[*n_done], name, base, cand, o);
    return &done[(*n_done)++];
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
    metric_cmp *done = calloc((size_t)(n_names + o->n_rules + 1), sizeof *done);
    if (!done) { snprintf(err, errlen, "out of memory"); return NULL; }
    json_t *doc = doc_header(base, cand, o, NULL);
    json_object_set_new(doc, "warnings", config_warnings(base, cand));
    json_t *list = json_array();
    for (int i = 0; i < n_names; i++) {
        const char *name = o->metrics ? o->metrics[i] : default_metrics[i];
        const metric_cmp *m = compared(name, done, &n_done, base, cand, o);
        if (!m->known || has_metric(list, name)) continue;     /* e.g. goodput without an SLO */
        json_array_append_new(list, metric_json(m, o->min_effect_pct));
    }
    json_t *rules = json_array();
    bool all = true;
    for (int i = 0; i < o->n_rules; i++) {
        const metric_cmp *m = compared(o->rules[i].metric, done, &n_done, base, cand, o);
        if (!has_metric(list, m->name)) json_array_append_new(list, metric_json(m, o->min_effect_pct));
        bool ok;
        json_array_append_new(rules, eval_rule(&o->rules[i], m, &ok));
        all = all && ok;
    }
    free(done);
    json_object_set_new(doc, "metrics", list);
    attach_gate(doc, cand, rules, all);
    return doc;
}

/* ---- sweeps ---- */

typedef struct { const char *name; const char *obj; const char *key; } headline_def;

static const headline_def headlines[] = {
    {"knee_load", "knee", "load"},
    {"knee_output_throughput", "knee", "output_throughput"},
    {"peak_output_throughput", NULL, NULL},
    {"max_goodput", "max_goodput", "request_goodput"},
    {"max_goodput_load", "max_goodput", "load"},
    {"slo_boundary_load", "max_goodput", "slo_boundary_load"},
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
        double x = num(json_object_get(lv, "results"), "output_throughput");
        if (isfinite(x) && (!isfinite(peak) || x > peak)) peak = x;
    }
    return peak;
}

/* A headline number of both sweeps: one point each, so no interval. */
static void headline_cmp(metric_cmp *m, const headline_def *h, const json_t *base, const json_t *cand) {
    memset(m, 0, sizeof *m);
    snprintf(m->name, sizeof m->name, "%s", h->name);
    m->base = headline_value(base, h);
    m->cand = headline_value(cand, h);
    m->dir = +1;                 /* more throughput, goodput or load before a limit is better */
    m->p_mwu = NAN;
    m->no_ci_why = "one number per sweep";
}

/* The first level of the sweep at this load (repeats after the first are left out). */
static const json_t *level_at(const json_t *sweep, double load) {
    size_t i;
    json_t *lv;
    json_array_foreach(json_object_get(sweep, "levels"), i, lv)
        if (fabs(num(lv, "load") - load) <= 1e-9 * fabs(load) && json_object_get(lv, "results")) return lv;
    return NULL;
}

static const char *sweep_level_metrics[] = {"output_throughput", "p99_ttft_ms", "p99_tpot_ms", "p99_e2el_ms", "error_rate"};

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
        headline_cmp(&m, &headlines[h], base, cand);
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
            headline_cmp(&m, h, base, cand);
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
        if (md) fprintf(f, "| `%s` | %s | %s | %s | %s | %s | %s |\n", name, bv, cv, ch, ci, p, v);
        else fprintf(f, "%-28s %12s %12s %9s %20s %8s  %s\n", name, bv, cv, ch, ci, p, v);
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

int compare_metric_samples_of(const json_t *doc, const char *metric, compare_samples *out) {
    memset(out, 0, sizeof *out);
    char family[48];
    if (parse_family(metric, &out->stat, &out->param, family, sizeof family)) {
        const char *method = NULL;
        out->v = family_samples(doc, family, &out->n, &out->n_run, &method);
    } else if (!strcmp(metric, "output_throughput") || !strcmp(metric, "request_throughput")) {
        out->stat = INFER_MEAN;
        out->v = second_samples(doc, metric[0] == 'o' ? "output_tokens" : "finished", &out->n);
        out->n_run = out->n;
    }
    if (!out->v) { out->n = 0; return -1; }
    if (out->n_run < out->n) out->n_run = out->n;
    return 0;
}
