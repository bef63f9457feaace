/* diagnose — the driver: reads a results or sweep document, resolves the deployment (src/deploy:
 * flags, what the run recorded, sim config, served model name, telemetry), computes the roofline
 * (a run that beats it makes a configuration finding instead), runs the rules, adds "healthy" when
 * nothing limits the run and decode sits near its roofline, ranks the findings by what they cost,
 * and prints them for a person. Also the builders and series helpers the rules share. */
#include "diagnose/diagnose_int.h"
#include "model/model.h"
#include "metrics/stats.h"
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

static size_t gpm_part(char *buf, size_t len, size_t at, const char *name, const char *fmt, double lo, double hi) {
    if (!isfinite(lo) || at >= len) return at;
    char a[32], b[32];
    snprintf(a, sizeof a, fmt, lo);
    snprintf(b, sizeof b, fmt, hi);
    int n = !strcmp(a, b) ? snprintf(buf + at, len - at, "%s%s %s%%", at ? ", " : "", name, a)
                          : snprintf(buf + at, len - at, "%s%s %s-%s%%", at ? ", " : "", name, a, b);
    return n < 0 ? at : at + (size_t)n;
}

const char *diag_gpm_text(char *buf, size_t len, double dram_lo, double dram_hi, double tensor_lo, double tensor_hi,
                          double sm_lo, double sm_hi) {
    size_t at = 0;
    if (len) buf[0] = 0;
    at = gpm_part(buf, len, at, "DRAM bandwidth", "%.1f", dram_lo, dram_hi);
    at = gpm_part(buf, len, at, "tensor", "%.2f", tensor_lo, tensor_hi);
    gpm_part(buf, len, at, "SM", "%.0f", sm_lo, sm_hi);
    return buf;
}

void diag_knob(json_t *f, const char *knob, const char *direction, const char *effect) {
    json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:s,s:s}", "knob", knob, "direction", direction,
                                                                 "effect", effect));
}

bool diag_llamacpp_fa_runs(const diag_in *in) {
    bool mla = in->dep.arch_s.known && model_is_mla(&in->dep.arch);
    return !mla || deploy_llamacpp_build(&in->dep) >= LLAMACPP_FA_MLA_BUILD;
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
    double m = stats_percentile_sorted(x, n, 50);
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


double diag_gpu_mean(const diag_in *in, const char *col) {
    double s = 0;
    int n = 0;
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(in->tel, "gpu"), i, g) {
        double m = diag_mean(json_object_get(json_object_get(g, "series"), col));
        if (isfinite(m)) { s += m; n++; }
    }
    return n ? s / n : NAN;
}

void diag_checked(json_t *checked, const char *rule, bool ran, const char *used) {
    json_array_append_new(checked, json_pack("{s:s,s:b,s:s}", "rule", rule, "ran", ran, ran ? "used" : "why", used));
}

void diag_cost(json_t *f, double lost_frac, const char *fmt, ...) {
    char basis[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(basis, sizeof basis, fmt, ap);
    va_end(ap);
    double x = isfinite(lost_frac) ? (lost_frac < 0 ? 0 : lost_frac > 1 ? 1 : lost_frac) : DIAG_COST_UNKNOWN;
    json_object_set_new(f, "cost", json_pack("{s:f,s:s}", "lost_frac", round(x * 1000) / 1000, "basis", basis));
}

/* ---- settings: the engine's own flag, current value → suggested ---- */

/* The engine's flag for a setting; "" when the engine has no such setting (the advice is then
 * not given), NULL when the engine is unknown. */
static const char *engine_flag(const char *engine, const char *knob) {
    static const struct { const char *knob, *vllm, *sglang, *llama, *sim; } t[] = {
        {"max_num_seqs", "--max-num-seqs", "--max-running-requests", "-np (slots)", "--max-num-seqs"},
        {"kv_cache_dtype", "--kv-cache-dtype", "--kv-cache-dtype", "-ctk/-ctv", "--kv-dtype"},
        {"weight_dtype", "--quantization", "--quantization", "a quantized GGUF", "--weight-dtype"},
        {"tensor_parallel_size", "--tensor-parallel-size", "--tp-size", "--split-mode row", "--tp"},
        {"enable_chunked_prefill", "--enable-chunked-prefill", "--chunked-prefill-size", "", "--chunked-prefill"},
        {"max_num_batched_tokens", "--max-num-batched-tokens", "--chunked-prefill-size", "-b/-ub", "--max-num-batched-tokens"},
        {"gpu_memory_utilization", "--gpu-memory-utilization", "--mem-fraction-static", "", "--gpu-memory-utilization"},
        {"context_per_seq", "--max-model-len", "--context-length", "-c (total, split over -np slots)", "--max-model-len"},
        {"enable_prefix_caching", "--enable-prefix-caching", "(on unless --disable-radix-cache)", "--cache-reuse N (and cache_prompt)",
         "--prefix-caching on"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        if (strcmp(t[i].knob, knob)) continue;
        if (!strcmp(engine, "vllm")) return t[i].vllm;
        if (!strcmp(engine, "sglang")) return t[i].sglang;
        if (!strcmp(engine, "llama.cpp")) return t[i].llama;
        if (!strcmp(engine, "dsperf sim")) return t[i].sim;
    }
    return NULL;
}

/* The deployment field behind a setting, to say when its current value is only assumed. */
static const deploy_src *setting_src(const deploy *d, const char *knob) {
    if (!strcmp(knob, "kv_cache_dtype")) return &d->kv_dtype_s;
    if (!strcmp(knob, "weight_dtype")) return &d->weight_dtype_s;
    if (!strcmp(knob, "tensor_parallel_size")) return &d->tp_s;
    if (!strcmp(knob, "max_num_seqs")) return &d->max_num_seqs_s;
    if (!strcmp(knob, "enable_chunked_prefill")) return &d->chunked_prefill_s;
    if (!strcmp(knob, "max_num_batched_tokens")) return &d->max_num_batched_tokens_s;
    return NULL;
}

/* Already there: equal values, or a dtype already as small as the suggested one. */
static bool already(const char *knob, const char *cur, const char *sug) {
    if (!cur || !sug) return false;
    if (!strcasecmp(cur, sug)) return true;
    if (strstr(knob, "dtype")) {
        model_dtype a, b;
        if (model_dtype_parse(cur, DT_BF16, &a) == 0 && model_dtype_parse(sug, DT_BF16, &b) == 0)
            return model_dtype_bytes(a) <= model_dtype_bytes(b);
    }
    char *e1, *e2;
    double x = strtod(cur, &e1), y = strtod(sug, &e2);
    return !*e1 && !*e2 && *cur && *sug && x == y;
}

static void setting(const diag_in *in, json_t *f, const char *knob, const char *cur, const char *sug, const char *effect,
                    bool cap_by_run);

void diag_setting(const diag_in *in, json_t *f, const char *knob, const char *cur, const char *sug, const char *effect) {
    setting(in, f, knob, cur, sug, effect, true);
}

void diag_setting_any(const diag_in *in, json_t *f, const char *knob, const char *cur, const char *sug, const char *effect) {
    setting(in, f, knob, cur, sug, effect, false);
}

static void setting(const diag_in *in, json_t *f, const char *knob, const char *cur, const char *sug, const char *effect,
                    bool cap_by_run) {
    if (already(knob, cur, sug)) return;
    /* llama.cpp has no fp8: its 1-byte types are q8_0 (a GGUF's weights, -ctk/-ctv for the KV cache) */
    if (strstr(knob, "dtype") && !strcmp(sug, "fp8") && !strcmp(in->dep.engine, "llama.cpp")) {
        model_dtype c;
        if (cur && model_dtype_parse(cur, DT_BF16, &c) == 0 && model_dtype_bytes(c) <= 1) return;
        sug = "q8_0";
    }
    char *e;
    double num = strtod(sug, &e);
    /* more sequence slots than requests were ever in flight buy nothing: never beyond the run */
    char capped[32];
    if (cap_by_run && !strcmp(knob, "max_num_seqs") && cur && !*e && in->offered_peak >= 1 && num > atof(cur)) {
        if (in->offered_peak <= atof(cur)) return;
        if (num > in->offered_peak) {
            snprintf(capped, sizeof capped, "%.0f", in->offered_peak);
            sug = capped;
            num = in->offered_peak;
        }
    }
    if (!*e && num <= 0) return;                 /* nothing below one GPU, one sequence, one token */
    const deploy_src *s = setting_src(&in->dep, knob);
    bool assumed = cur && s && s->assumed;
    char dir[160];
    if (cur) snprintf(dir, sizeof dir, "%s%s \xe2\x86\x92 %s", cur, assumed ? " (assumed)" : "", sug);
    else snprintf(dir, sizeof dir, "%s (current value unknown)", sug);
    const char *flag = engine_flag(in->dep.engine, knob);
    if (flag && !*flag) return;
    json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:o,s:s,s:s,s:o,s:s}", "knob", knob,
        "current", cur ? json_string(cur) : json_null(), "suggested", sug, "direction", dir,
        "flag", flag ? json_string(flag) : json_null(), "effect", effect));
}

void diag_kv_memory_settings(const diag_in *in, json_t *f, const char *dtype_effect, const char *memory_effect) {
    diag_setting(in, f, "kv_cache_dtype", model_dtype_name(in->dep.kv_dtype), "fp8", dtype_effect);
    double gmu = diag_num(json_object_get(in->cfg, "sim"), "gpu_memory_utilization");
    char cur[16];
    snprintf(cur, sizeof cur, "%.2f", gmu);
    diag_setting(in, f, "gpu_memory_utilization", isfinite(gmu) ? cur : NULL, isfinite(gmu) && gmu < 0.95 ? "0.95" : "raise",
                 memory_effect);
}

/* ---- one results document ---- */

static double score(const json_t *f) {
    const json_t *c = json_object_get(f, "cost");
    double lost = c ? json_number_value(json_object_get(c, "lost_frac")) : DIAG_COST_UNKNOWN;
    return lost * json_number_value(json_object_get(f, "confidence"));
}

static bool ranks_before(const json_t *a, const json_t *b) {
    double x = score(a), y = score(b);
    if (x != y) return x > y;
    return json_number_value(json_object_get(a, "confidence")) > json_number_value(json_object_get(b, "confidence"));
}

json_t *diag_rank(json_t *list) {
    size_t n = json_array_size(list);
    json_t **v = malloc(sizeof *v * (n + 1));
    json_t *out = json_array();
    if (!v) return list;
    for (size_t i = 0; i < n; i++) v[i] = json_array_get(list, i);
    /* stable: insertion sort keeps rule order among equal scores */
    for (size_t i = 1; i < n; i++) {
        json_t *x = v[i];
        size_t j = i;
        while (j > 0 && ranks_before(x, v[j - 1])) { v[j] = v[j - 1]; j--; }
        v[j] = x;
    }
    for (size_t i = 0; i < n; i++) json_array_append(out, v[i]);
    free(v);
    json_decref(list);
    return out;
}

static json_t *roofline_json(const diag_in *in) {
    if (!in->have_roof && !in->roof_impossible) return json_null();
    const deploy *d = &in->dep;
    json_t *r = json_pack("{s:s,s:s,s:i,s:s,s:s,s:o,s:o,s:o,s:b,s:o,s:o,s:s,s:s,s:o,s:o,s:o,s:o}", "model", d->model,
        "gpu", d->gpu, "tp", d->tp, "kv_dtype", model_dtype_name(d->kv_dtype), "weight_dtype", model_dtype_name(d->weight_dtype),
        "decode_tokens_per_s", jnum(in->roof_achieved), "bound_tokens_per_s", jnum(in->roof_bound),
        "efficiency", in->have_roof ? jnum(in->roof_eff) : json_null(), "valid", in->have_roof,
        "batch", jnum(in->roof_batch), "context", jnum(in->roof_context),
        "batch_source", in->roof_batch_source ? in->roof_batch_source : "", "bound", in->roof_mem_bound ? "memory" : "compute",
        "decode_step_ms_model", jnum(in->roof_decode_ms), "decode_step_ms_floor", jnum(in->roof_mem_ms),
        "decode_step_ms_measured", jnum(in->roof_step_ms), "prefill_ms_model", jnum(in->roof_prefill_ms));
    json_object_set_new(r, "source", json_string(d->arch_s.src));
    if (in->roof_impossible) {
        json_object_set_new(r, "efficiency_if_valid", jnum(in->roof_eff));
        json_object_set_new(r, "why_not_valid", json_string("the run beats this roofline: the assumed deployment is wrong "
                                                            "(see configuration)"));
    }
    return r;
}

static const char *const problems[] = { "errors", "client_bound", "queueing", "kv_capacity", "prefill_interference",
    "host_pcie", "communication", "throttling", "cross_numa", "prefill_compute", "prefill", "deployment", "tenants", "prefix_cache", "kv_share",
    "layer_split", "uneven_split", "row_split", "spec_acceptance", NULL };

static void add_healthy(diag_in *in, json_t *list) {
    size_t i;
    json_t *f;
    json_array_foreach(list, i, f) {
        const char *c = json_string_value(json_object_get(f, "class"));
        for (int k = 0; problems[k]; k++) if (!strcmp(c, problems[k])) return;
        if (!strcmp(c, "engine_overhead") && json_number_value(json_object_get(f, "confidence")) >= 0.5) return;
    }
    if (in->have_roof && in->roof_eff >= DIAG_HEALTHY_EFF) {
        json_t *h = in->roof_eff <= 1
            ? diag_finding(list, "healthy", 0.7, "healthy: decode within %.0f%% of the physical limit (HBM roofline)",
                           100 * (1 - in->roof_eff))
            : diag_finding(list, "healthy", 0.7, "healthy: decode at the physical limit (HBM roofline; %.0f%% of the "
                           "modelled bound, within its %.0f%% tolerance)", 100 * in->roof_eff, 100 * (DIAG_PHYSICS_TOL - 1));
        diag_cost(h, 0, "nothing lost that the hardware would give at this batch");
        diag_ev(h, 100 * in->roof_eff, "%", "roofline", "decode at %.0f%% of the bandwidth roofline, no errors, no queue, "
                "no KV pressure found", 100 * in->roof_eff);
        diag_knob(h, "load", "hold", "this is near what the hardware allows at this batch");
    } else if (json_array_size(list) == 0) {
        json_t *h = diag_finding(list, "healthy", 0.3, "no bottleneck found in the data this run holds");
        diag_cost(h, 0, "nothing found");
        diag_ev(h, NAN, NULL, "diagnose.checked", "%s", in->have_roof ? "decode below the healthy efficiency threshold, but no rule fired"
                : "no valid roofline (model/GPU unknown: --model or --model-config, --gpu) and little telemetry: few rules could run");
    }
}

static json_t *inputs_json(const diag_in *in) {
    const json_t *tel = in->tel;
    const char *producer = json_string_value(json_object_get(in->doc, "producer"));
    return json_pack("{s:s,s:b,s:b,s:b,s:b,s:b,s:b,s:s,s:s,s:s,s:i}", "producer", producer ? producer : "?",
        "timeline", in->timeline != NULL, "client", in->client != NULL, "engine", in->eng_series != NULL,
        "telemetry_gpu", json_object_get(tel, "gpu") != NULL, "telemetry_host", json_object_get(tel, "host") != NULL,
        "telemetry_server", json_object_get(tel, "server") != NULL,
        "model", deploy_has_model(&in->dep) ? in->dep.model : "unknown", "gpu", deploy_has_gpu(&in->dep) ? in->dep.gpu : "unknown",
        "deployment_from", in->dep.arch_s.known ? in->dep.arch_s.src : "nothing: give --model or --model-config", "tp", in->dep.tp);
}

/* The run's warnings are evidence: an overloaded server's latencies describe no steady state, a
 * lagging client's rate is not the server's, a p99 of few requests is their maximum. */
static void warnings_as_evidence(json_t *list, const json_t *warnings) {
    size_t i, k;
    json_t *f, *w;
    json_array_foreach(list, i, f) {
        bool warned = false;
        json_array_foreach(warnings, k, w) warned |= strcmp(json_string_value(json_object_get(w, "kind")), "few_samples") != 0;
        if (!strcmp(json_string_value(json_object_get(f, "class")), "healthy") && warned)
            json_object_set_new(f, "confidence", json_real(0.3));   /* no verdict of health on an overloaded or lagging run */
        /* few samples qualify the request percentiles: they stay in "warnings", beside the findings */
        json_array_foreach(warnings, k, w)
            if (strcmp(json_string_value(json_object_get(w, "kind")), "few_samples"))
                diag_ev(f, NAN, NULL, "results.warnings", "%s", json_string_value(json_object_get(w, "message")));
    }
}

static void flags_of(const diagnose_opts *o, deploy_flags *f) {
    memset(f, 0, sizeof *f);
    f->model = o->model;
    f->model_config = o->model_config;
    f->gpu = o->gpu;
    f->tp = o->tp;
    f->n_gpus = o->n_gpus;
    f->kv_dtype = o->kv_dtype;
    f->weight_dtype = o->weight_dtype;
}

json_t *diag_results(const json_t *doc, const diagnose_opts *o, double level, char *err, size_t errlen) {
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
    /* the engine profile's own per-step cost (a simulated run states it; older ones: the factor) */
    in.step_overhead_s = diag_num(in.engine, "step_overhead_s");
    if (!isfinite(in.step_overhead_s)) in.step_overhead_s = diag_num(json_object_get(in.engine, "factors"), "step_overhead_s");
    deploy_flags fl;
    flags_of(o, &fl);
    if (deploy_resolve(doc, &fl, &in.dep, err, errlen) < 0) return NULL;
    in.config = json_array();
    diag_roofline(&in);
    diag_admission(&in);
    json_t *list = json_array(), *checked = json_array();
    diag_rules(&in, list, checked);
    add_healthy(&in, list);
    json_t *warnings = diag_warnings(doc, level);
    warnings_as_evidence(list, warnings);
    if (isfinite(level)) {
        size_t i;
        json_t *f;
        json_array_foreach(list, i, f) json_object_set_new(f, "level", json_real(level));
        json_array_foreach(in.config, i, f) json_object_set_new(f, "level", json_real(level));
    }
    json_t *ranked = diag_rank(list);
    diag_one_story(ranked);
    return json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "findings", ranked, "configuration", in.config,
                     "roofline", roofline_json(&in), "deployment", deploy_to_json(&in.dep), "checked", checked,
                     "inputs", inputs_json(&in), "time", diag_time(&in), "warnings", warnings);
}

json_t *diagnose_run(const json_t *doc, const diagnose_opts *o, char *err, size_t errlen) {
    diagnose_opts dflt;
    if (!o) { diagnose_default_opts(&dflt); o = &dflt; }
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (schema && !strncmp(schema, "dsperf.results/", 15)) return diag_results(doc, o, NAN, err, errlen);
    if (schema && !strncmp(schema, "dsperf.sweep/", 13)) return diag_sweep(doc, o, err, errlen);
    snprintf(err, errlen, "not a dsperf results or sweep document (schema \"%s\")", schema ? schema : "missing");
    return NULL;
}

/* ---- printing ---- */

static void print_finding(FILE *f, const json_t *x, const char *lead, bool lengths) {
    const json_t *lvl = json_object_get(x, "level"), *lvls = json_object_get(x, "levels");
    char at[160] = "";
    if (json_array_size(lvls) > 1) {
        size_t n = 0, i;
        json_t *v;
        snprintf(at, sizeof at, " [at %s ", lengths ? "lengths" : "loads");
        json_array_foreach(lvls, i, v)
            n += (size_t)snprintf(at + strlen(at), sizeof at - strlen(at), "%s%g", i ? ", " : "", json_number_value(v));
        strncat(at, "]", sizeof at - strlen(at) - 1);
        (void)n;
    } else if (json_is_number(lvl)) {
        snprintf(at, sizeof at, " [at %s %g]", lengths ? "length" : "load", json_number_value(lvl));
    }
    fprintf(f, "%s%s (%s, confidence %.2f)%s\n", lead, json_string_value(json_object_get(x, "title")),
            json_string_value(json_object_get(x, "class")), json_number_value(json_object_get(x, "confidence")), at);
    const json_t *c = json_object_get(x, "cost");
    double lost = json_number_value(json_object_get(c, "lost_frac"));
    if (c && lost > 0) fprintf(f, "     costs ~%.0f%% %s\n", 100 * lost, json_string_value(json_object_get(c, "basis")));
    size_t k;
    json_t *e;
    json_array_foreach(json_object_get(x, "evidence"), k, e)
        fprintf(f, "     - %s  [%s]\n", json_string_value(json_object_get(e, "text")), json_string_value(json_object_get(e, "source")));
    const json_t *w = json_object_get(x, "window");
    if (json_is_object(w)) fprintf(f, "     window: %.1f s to %.1f s of the run\n", diag_num(w, "t0_s"), diag_num(w, "t1_s"));
    json_array_foreach(json_object_get(x, "knobs"), k, e) {
        const char *flag = json_string_value(json_object_get(e, "flag"));
        fprintf(f, "     > %s: %s%s%s%s (%s)\n", json_string_value(json_object_get(e, "knob")),
                json_string_value(json_object_get(e, "direction")), flag ? " [" : "", flag ? flag : "", flag ? "]" : "",
                json_string_value(json_object_get(e, "effect")));
    }
}

static void print_parts(FILE *f, const json_t *parts) {
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p) {
        const char *bound = json_string_value(json_object_get(p, "bound"));
        fprintf(f, "    %-58s %9.3f ms %5.1f%%%s%s\n", json_string_value(json_object_get(p, "part")), diag_num(p, "ms"),
                100 * diag_num(p, "share"), bound ? "  bound: " : "", bound ? bound : "");
    }
}

/* Where the time went: a request's mean time and one decode step, each part with its share. */
static void print_time(FILE *f, const json_t *t) {
    if (!json_is_object(t)) return;
    const json_t *lv = json_object_get(t, "level");
    char at[48] = "";
    if (json_is_number(lv)) snprintf(at, sizeof at, " at load %g", json_number_value(lv));
    fprintf(f, "Time%s: a request takes %.1f ms on average\n", at, diag_num(t, "request_ms"));
    print_parts(f, json_object_get(t, "request"));
    if (json_object_get(t, "decode_step")) {
        fprintf(f, "  a decode step takes %.3f ms:\n", diag_num(t, "decode_step_ms"));
        print_parts(f, json_object_get(t, "decode_step"));
    }
}

void diagnose_print(FILE *f, const json_t *dg) {
    const char *axis = json_string_value(json_object_get(dg, "axis"));
    bool lengths = axis && (!strcmp(axis, "input_len") || !strcmp(axis, "output_len"));
    const json_t *cfg = json_object_get(dg, "configuration"), *list = json_object_get(dg, "findings");
    size_t i;
    json_t *x;
    if (json_array_size(cfg)) {
        fprintf(f, "Configuration: the assumed deployment cannot be right (correct it, then read the findings)\n");
        json_array_foreach(cfg, i, x) print_finding(f, x, "!  ", lengths);
    }
    fprintf(f, "Diagnosis (%zu finding%s, ranked by what they cost)\n", json_array_size(list), json_array_size(list) == 1 ? "" : "s");
    json_array_foreach(list, i, x) {
        char lead[32];
        snprintf(lead, sizeof lead, "%zu. ", i + 1);
        print_finding(f, x, lead, lengths);
    }
    const json_t *ws = json_object_get(dg, "warnings");
    if (json_array_size(ws)) {
        fprintf(f, "Warnings from the run:\n");
        json_array_foreach(ws, i, x) {
            const json_t *lv = json_object_get(x, "level");
            if (json_is_number(lv)) fprintf(f, "  ! [load %g] %s\n", json_number_value(lv), json_string_value(json_object_get(x, "message")));
            else fprintf(f, "  ! %s\n", json_string_value(json_object_get(x, "message")));
        }
    }
    print_time(f, json_object_get(dg, "time"));
    const json_t *r = json_object_get(dg, "roofline");
    if (json_is_object(r) && json_is_true(json_object_get(r, "valid")))
        fprintf(f, "Roofline: decode %.0f tok/s of %.0f tok/s bound (%.1f%%) for %s on %s, batch %.1f, context %.0f\n",
                diag_num(r, "decode_tokens_per_s"), diag_num(r, "bound_tokens_per_s"), 100 * diag_num(r, "efficiency"),
                json_string_value(json_object_get(r, "model")), json_string_value(json_object_get(r, "gpu")),
                diag_num(r, "batch"), diag_num(r, "context"));
    else if (json_is_object(r))
        fprintf(f, "Roofline: not valid: decode %.0f tok/s beats the %.0f tok/s bound of the assumed deployment (see "
                "Configuration)\n", diag_num(r, "decode_tokens_per_s"), diag_num(r, "bound_tokens_per_s"));
    else
        fprintf(f, "Roofline: not computed (architecture or GPU unknown: give --model or --model-config, and --gpu)\n");
    const json_t *d = json_object_get(dg, "deployment");
    const char *k;
    json_t *v;
    fprintf(f, "Deployment:");
    json_object_foreach((json_t *)d, k, v) {
        if (!strcmp(k, "architecture") || !strcmp(k, "served_model")) continue;
        const json_t *val = json_object_get(v, "value");
        char s[64];
        if (json_is_string(val)) snprintf(s, sizeof s, "%s", json_string_value(val));
        else if (json_is_integer(val)) snprintf(s, sizeof s, "%lld", (long long)json_integer_value(val));
        else if (json_is_number(val)) snprintf(s, sizeof s, "%.4g", json_number_value(val));
        else snprintf(s, sizeof s, "%s", json_is_true(val) ? "on" : "off");
        fprintf(f, "\n  %-22s %-18s %s", k, s, json_string_value(json_object_get(v, "source")));
    }
    fprintf(f, "\n");
    json_array_foreach(json_object_get(dg, "checked"), i, x)
        if (!json_is_true(json_object_get(x, "ran")))
            fprintf(f, "  (not checked: %s — %s)\n", json_string_value(json_object_get(x, "rule")),
                    json_string_value(json_object_get(x, "why")));
}
