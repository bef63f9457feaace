/* diagnose — the driver: reads a results or sweep document, resolves the deployment (flags, sim
 * config, served model name, telemetry GPU name), computes the roofline, runs the rules, adds
 * "healthy" when nothing limits the run and decode sits near its roofline, ranks the findings, and
 * prints them for a person. */
#include "diagnose/diagnose_int.h"
#include "model/model.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

void diagnose_default_opts(diagnose_opts *o) { memset(o, 0, sizeof *o); }

/* ---- helpers shared with the rules ---- */

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }

json_t *diag_finding(json_t *list, const char *cls, double confidence, const char *fmt, ...) {
    char title[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(title, sizeof title, fmt, ap);
    va_end(ap);
    json_t *f = json_pack("{s:s,s:s,s:f,s:[],s:[],s:n,s:n}", "class", cls, "title", title, "confidence",
                          round(confidence * 100) / 100, "evidence", "knobs", "window", "level");
    json_array_append_new(list, f);
    return f;
}

void diag_ev(json_t *f, double value, const char *unit, const char *source, const char *fmt, ...) {
    char text[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(text, sizeof text, fmt, ap);
    va_end(ap);
    json_array_append_new(json_object_get(f, "evidence"), json_pack("{s:s,s:o,s:o,s:s}", "text", text, "value", jnum(value),
        "unit", unit ? json_string(unit) : json_null(), "source", source));
}

void diag_knob(json_t *f, const char *knob, const char *direction, const char *effect) {
    json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s}", "knob", knob, "direction", direction,
                                                                 "effect", effect));
}

void diag_window(json_t *f, double t0_s, double t1_s) {
    json_object_set_new(f, "window", json_pack("{s:f,s:f}", "t0_s", t0_s, "t1_s", t1_s));
}

double diag_num(const json_t *o, const char *key) {
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

double diag_mean(const json_t *arr) {
    double s = 0;
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_number(v)) { s += json_number_value(v); n++; }
    return n ? s / n : NAN;
}

double diag_max(const json_t *arr) {
    double m = NAN;
    size_t i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_number(v) && !(json_number_value(v) <= m)) m = json_number_value(v);
    return m;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double diag_median(const json_t *arr) {
    size_t n = 0, i;
    json_t *v;
    double *x = malloc(sizeof *x * (json_array_size(arr) + 1));
    if (!x) return NAN;
    json_array_foreach(arr, i, v) if (json_is_number(v)) x[n++] = json_number_value(v);
    qsort(x, n, sizeof *x, cmp_d);
    double m = !n ? NAN : n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    free(x);
    return m;
}

double diag_frac_at_least(const json_t *arr, double thr) {
    size_t n = 0, k = 0, i;
    json_t *v;
    json_array_foreach(arr, i, v) if (json_is_number(v)) { n++; if (json_number_value(v) >= thr) k++; }
    return n ? (double)k / n : NAN;
}

double diag_corr(const json_t *a, const json_t *b) {
    size_t n = json_array_size(a) < json_array_size(b) ? json_array_size(a) : json_array_size(b), k = 0;
    double sx = 0, sy = 0, sxx = 0, syy = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(a, i), *y = json_array_get(b, i);
        if (!json_is_number(x) || !json_is_number(y)) continue;
        double u = json_number_value(x), w = json_number_value(y);
        sx += u; sy += w; sxx += u * u; syy += w * w; sxy += u * w; k++;
    }
    if (k < 3) return NAN;
    double cov = sxy - sx * sy / k, vx = sxx - sx * sx / k, vy = syy - sy * sy / k;
    return vx > 0 && vy > 0 ? cov / sqrt(vx * vy) : NAN;
}

bool diag_span(const json_t *t, const json_t *arr, double thr, double *t0, double *t1) {
    bool any = false;
    size_t n = json_array_size(arr) < json_array_size(t) ? json_array_size(arr) : json_array_size(t);
    for (size_t i = 0; i < n; i++) {
        const json_t *v = json_array_get(arr, i);
        if (!json_is_number(v) || json_number_value(v) < thr) continue;
        double ts = json_number_value(json_array_get(t, i));
        if (!any) *t0 = ts;
        *t1 = ts;
        any = true;
    }
    return any;
}

/* ---- deployment ---- */

static void copy(char *dst, size_t len, const char *src) { snprintf(dst, len, "%s", src ? src : ""); }

/* "NVIDIA H200" → "h200", "NVIDIA H100 80GB HBM3" → "h100": the first word that names a
 * catalog GPU. */
static bool gpu_from_name(const char *name, char *out, size_t len) {
    char buf[128];
    snprintf(buf, sizeof buf, "%s", name);
    char *save = NULL;
    for (char *w = strtok_r(buf, " -", &save); w; w = strtok_r(NULL, " -", &save)) {
        for (char *p = w; *p; p++) *p = (char)tolower((unsigned char)*p);
        if (hw_find(w)) { snprintf(out, len, "%s", w); return true; }
    }
    return false;
}

static void resolve(diag_in *in) {
    const diagnose_opts *o = in->o;
    const json_t *sim = json_object_get(in->cfg, "sim");
    in->tp = o->tp;
    in->chunked_prefill = -1;
    in->step_overhead_s = NAN;
    in->deploy_source = "flags";
    const char *m = o->model, *g = o->gpu, *kv = o->kv_dtype;
    if (sim) {
        if (!m) m = json_string_value(json_object_get(sim, "model"));
        if (!g) g = json_string_value(json_object_get(sim, "gpu"));
        if (!kv) kv = json_string_value(json_object_get(sim, "kv_dtype"));
        if (!in->tp) in->tp = (int)json_integer_value(json_object_get(sim, "tp"));
        copy(in->weight_dtype, sizeof in->weight_dtype, json_string_value(json_object_get(sim, "weight_dtype")));
        in->max_num_seqs = (int)json_integer_value(json_object_get(sim, "max_num_seqs"));
        in->max_num_batched_tokens = (int)json_integer_value(json_object_get(sim, "max_num_batched_tokens"));
        const json_t *cp = json_object_get(sim, "chunked_prefill");
        if (json_is_boolean(cp)) in->chunked_prefill = json_is_true(cp);
        in->step_overhead_s = diag_num(json_object_get(in->engine, "factors"), "step_overhead_s");
        if (!o->model || !o->gpu) in->deploy_source = "sim config";
    }
    if (!m) {
        m = json_string_value(json_object_get(in->cfg, "model"));
        if (m) in->deploy_source = "results config (served model name)";
    }
    if (!g) {
        const json_t *gpus = json_object_get(in->tel, "gpu");
        const char *name = json_string_value(json_object_get(json_array_get(gpus, 0), "name"));
        if (name && gpu_from_name(name, in->gpu, sizeof in->gpu)) {
            in->have_gpu = true;
            if (!o->tp && !in->tp) in->tp = (int)json_array_size(gpus);
        }
    } else {
        copy(in->gpu, sizeof in->gpu, g);
        in->have_gpu = hw_find(g) != NULL;
    }
    if (in->tp <= 0) in->tp = 1;
    if (m && model_find(m)) { copy(in->model, sizeof in->model, m); in->have_model = true; }
    copy(in->kv_dtype, sizeof in->kv_dtype, kv && strcmp(kv, "auto") ? kv : "");
    if (o->kv_dtype) copy(in->kv_dtype, sizeof in->kv_dtype, o->kv_dtype);
}

/* ---- one results document ---- */

static int cmp_conf(const void *a, const void *b) {
    double x = json_number_value(json_object_get(*(json_t *const *)a, "confidence"));
    double y = json_number_value(json_object_get(*(json_t *const *)b, "confidence"));
    return x > y ? -1 : x < y;
}

static json_t *sorted(json_t *list) {
    size_t n = json_array_size(list);
    json_t **v = malloc(sizeof *v * (n + 1));
    for (size_t i = 0; i < n; i++) v[i] = json_array_get(list, i);
    /* stable: insertion sort keeps rule order among equal confidences */
    for (size_t i = 1; i < n; i++) {
        json_t *x = v[i];
        size_t j = i;
        while (j > 0 && cmp_conf(&v[j - 1], &x) > 0) { v[j] = v[j - 1]; j--; }
        v[j] = x;
    }
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) json_array_append(out, v[i]);
    free(v);
    json_decref(list);
    return out;
}

static json_t *roofline_json(const diag_in *in) {
    if (!in->have_roof) return json_null();
    return json_pack("{s:s,s:s,s:i,s:s,s:o,s:o,s:o,s:o,s:o,s:s,s:s,s:s,s:o,s:o}", "model", in->model, "gpu", in->gpu,
        "tp", in->tp, "kv_dtype", in->kv_dtype[0] ? in->kv_dtype : "bf16",
        "decode_tokens_per_s", jnum(in->roof_achieved), "bound_tokens_per_s", jnum(in->roof_bound),
        "efficiency", jnum(in->roof_eff), "batch", jnum(in->roof_batch), "context", jnum(in->roof_context),
        "batch_source", in->roof_batch_source ? in->roof_batch_source : "",
        "bound", in->roof_mem_bound ? "memory" : "compute",
        "source", !strcmp(in->deploy_source, "flags") ? "flags" : "catalog",
        "decode_step_ms_model", jnum(in->roof_decode_ms), "prefill_ms_model", jnum(in->roof_prefill_ms));
}

static const char *const problems[] = { "errors", "client_bound", "queueing", "kv_capacity", "prefill_interference",
    "host_pcie", "communication", "throttling", "cross_numa", "prefill_compute", NULL };

static void add_healthy(diag_in *in, json_t *list) {
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f) {
        const char *c = json_string_value(json_object_get(f, "class"));
        for (int k = 0; problems[k]; k++) if (!strcmp(c, problems[k])) return;
        if (!strcmp(c, "underutilization") && json_number_value(json_object_get(f, "confidence")) >= 0.5) return;
    }
    if (in->have_roof && in->roof_eff >= DIAG_HEALTHY_EFF) {
        json_t *h = diag_finding(list, "healthy", 0.7, "healthy: decode within %.0f%% of the physical limit (HBM roofline)",
                                 100 * (1 - in->roof_eff));
        diag_ev(h, 100 * in->roof_eff, "%", "roofline", "decode at %.0f%% of the bandwidth roofline, no errors, no queue, "
                "no KV pressure found", 100 * in->roof_eff);
        diag_knob(h, "load", "hold", "this is near what the hardware allows at this batch");
    } else if (json_array_size(list) == 0) {
        json_t *h = diag_finding(list, "healthy", 0.3, "no bottleneck found in the data this run holds");
        diag_ev(h, NAN, NULL, "diagnose.checked", "%s", in->have_roof ? "decode below the healthy efficiency threshold, but no rule fired"
                : "no roofline (model/GPU unknown: --model, --gpu) and no telemetry: few rules could run");
    }
}

static json_t *inputs_json(const diag_in *in) {
    const json_t *tel = in->tel;
    return json_pack("{s:s,s:b,s:b,s:b,s:b,s:b,s:b,s:s,s:s,s:s,s:i}", "producer",
        json_string_value(json_object_get(in->doc, "producer")) ? json_string_value(json_object_get(in->doc, "producer")) : "?",
        "timeline", in->timeline != NULL, "client", in->client != NULL, "engine", in->eng_series != NULL,
        "telemetry_gpu", json_object_get(tel, "gpu") != NULL, "telemetry_host", json_object_get(tel, "host") != NULL,
        "telemetry_server", json_object_get(tel, "server") != NULL, "model", in->have_model ? in->model : "unknown",
        "gpu", in->have_gpu ? in->gpu : "unknown", "deployment_from", in->deploy_source, "tp", in->tp);
}

/* Diagnoses one results document: {"findings","roofline","checked","inputs"}. */
static json_t *diagnose_results(const json_t *doc, const diagnose_opts *o, double level) {
    diag_in in;
    memset(&in, 0, sizeof in);
    in.doc = doc;
    in.o = o;
    in.level = level;
    in.cfg = json_object_get(doc, "config");
    in.engine = json_object_get(doc, "engine");
    in.eng_series = json_object_get(in.engine, "series");
    in.tel = json_object_get(doc, "telemetry");
    in.client = json_object_get(doc, "client");
    in.timeline = json_object_get(doc, "timeline");
    resolve(&in);
    diag_roofline(&in);
    json_t *list = json_array(), *checked = json_array();
    diag_rules(&in, list, checked);
    add_healthy(&in, list);
    if (isfinite(level)) {
        size_t i;
        json_t *f;
        json_array_foreach(list, i, f) json_object_set_new(f, "level", json_real(level));
    }
    return json_pack("{s:o,s:o,s:o,s:o}", "findings", sorted(list), "roofline", roofline_json(&in), "checked", checked,
                     "inputs", inputs_json(&in));
}

/* A sweep: every level is diagnosed; per class the most confident finding is kept (the lowest
 * load among equals), so the list says where each problem first shows most clearly. The
 * roofline is the knee level's (else the level with the highest output throughput). */
static json_t *diagnose_sweep(const json_t *doc, const diagnose_opts *o) {
    const json_t *levels = json_object_get(doc, "levels");
    const json_t *knee = json_object_get(doc, "knee");
    double ref_load = json_is_object(knee) ? diag_num(knee, "load") : NAN, best_tput = -1;
    size_t i;
    json_t *lv;
    if (!isfinite(ref_load))
        json_array_foreach(levels, i, lv) {
            double t = json_is_false(json_object_get(lv, "measured")) ? -1 : diag_num(json_object_get(lv, "results"), "output_throughput");
            if (t > best_tput) { best_tput = t; ref_load = diag_num(lv, "load"); }
        }
    json_t *best = json_object(), *roof = json_null(), *checked = NULL, *inputs = NULL;
    json_array_foreach(levels, i, lv) {
        double load = diag_num(lv, "load");
        /* a level the sweep could not measure (requests outlast it) says nothing about the server */
        if (json_is_false(json_object_get(lv, "measured"))) continue;
        json_t *d = diagnose_results(json_object_get(lv, "results"), o, load);
        size_t k;
        json_t *f;
        json_array_foreach(json_object_get(d, "findings"), k, f) {
            const char *c = json_string_value(json_object_get(f, "class"));
            json_t *have = json_object_get(best, c);
            double cf = json_number_value(json_object_get(f, "confidence"));
            if (!have || cf > json_number_value(json_object_get(have, "confidence")))
                json_object_set(best, c, f);
        }
        if (load == ref_load && json_is_null(roof)) {
            json_decref(roof);
            roof = json_incref(json_object_get(d, "roofline"));
            json_object_set_new(roof, "level", json_real(load));
            checked = json_incref(json_object_get(d, "checked"));
            inputs = json_incref(json_object_get(d, "inputs"));
        }
        json_decref(d);
    }
    /* "healthy" only when no level found a problem */
    if (json_object_size(best) > 1) json_object_del(best, "healthy");
    json_t *list = json_array();
    const char *k;
    json_t *f;
    json_object_foreach(best, k, f) json_array_append(list, f);
    json_decref(best);
    json_t *out = json_pack("{s:o,s:o}", "findings", sorted(list), "roofline", roof);
    json_object_set_new(out, "checked", checked ? checked : json_array());
    json_object_set_new(out, "inputs", inputs ? inputs : json_object());
    if (json_is_object(knee)) json_object_set_new(out, "knee_load", json_real(ref_load));
    return out;
}

json_t *diagnose_run(const json_t *doc, const diagnose_opts *o, char *err, size_t errlen) {
    diagnose_opts dflt;
    if (!o) { diagnose_default_opts(&dflt); o = &dflt; }
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (schema && !strncmp(schema, "dsperf.results/", 15)) return diagnose_results(doc, o, NAN);
    if (schema && !strncmp(schema, "dsperf.sweep/", 13)) return diagnose_sweep(doc, o);
    snprintf(err, errlen, "not a dsperf results or sweep document (schema \"%s\")", schema ? schema : "missing");
    return NULL;
}

/* ---- printing ---- */

void diagnose_print(FILE *f, const json_t *dg) {
    const json_t *list = json_object_get(dg, "findings");
    fprintf(f, "Diagnosis (%zu finding%s, most important first)\n", json_array_size(list), json_array_size(list) == 1 ? "" : "s");
    size_t i;
    json_t *x;
    json_array_foreach(list, i, x) {
        const json_t *lvl = json_object_get(x, "level");
        char at[48] = "";
        if (json_is_number(lvl)) snprintf(at, sizeof at, " [at load %.3g]", json_number_value(lvl));
        fprintf(f, "%zu. %s (%s, confidence %.2f)%s\n", i + 1, json_string_value(json_object_get(x, "title")),
                json_string_value(json_object_get(x, "class")), json_number_value(json_object_get(x, "confidence")), at);
        size_t k;
        json_t *e;
        json_array_foreach(json_object_get(x, "evidence"), k, e)
            fprintf(f, "     - %s  [%s]\n", json_string_value(json_object_get(e, "text")),
                    json_string_value(json_object_get(e, "source")));
        const json_t *w = json_object_get(x, "window");
        if (json_is_object(w)) fprintf(f, "     window: %.1f s to %.1f s of the run\n", diag_num(w, "t0_s"), diag_num(w, "t1_s"));
        json_array_foreach(json_object_get(x, "knobs"), k, e)
            fprintf(f, "     > %s: %s (%s)\n", json_string_value(json_object_get(e, "knob")),
                    json_string_value(json_object_get(e, "direction")), json_string_value(json_object_get(e, "effect")));
    }
    const json_t *r = json_object_get(dg, "roofline");
    if (json_is_object(r))
        fprintf(f, "Roofline: decode %.0f tok/s of %.0f tok/s bound (%.0f%%) for %s on %s, batch %.1f, context %.0f (%s)\n",
                diag_num(r, "decode_tokens_per_s"), diag_num(r, "bound_tokens_per_s"), 100 * diag_num(r, "efficiency"),
                json_string_value(json_object_get(r, "model")), json_string_value(json_object_get(r, "gpu")),
                diag_num(r, "batch"), diag_num(r, "context"), json_string_value(json_object_get(r, "source")));
    else
        fprintf(f, "Roofline: not computed (model or GPU unknown: give --model and --gpu)\n");
    json_array_foreach(json_object_get(dg, "checked"), i, x)
        if (!json_is_true(json_object_get(x, "ran")))
            fprintf(f, "  (not checked: %s — %s)\n", json_string_value(json_object_get(x, "rule")),
                    json_string_value(json_object_get(x, "why")));
}
