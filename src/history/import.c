/* import — files made elsewhere into the history: dsperf's own results, sweep and tune files as
 * they are, and vLLM's benchmark result JSON (`vllm bench serve --save-result`, or the older
 * benchmark_serving.py), whose field names are ours. With --save-detailed, vLLM keeps every
 * request's TTFT, inter-token gaps and lengths; they become the samples compare and the noise
 * band need, with the definitions of src/metrics (E2EL = TTFT + the gaps, TPOT = (E2EL - TTFT) /
 * (Nout - 1)). Without them only vLLM's summary numbers come across, and compare says so. */
#include "history/hist_internal.h"
#include "metrics/metric_table.h"
#include "metrics/summary.h"
#include "metrics/sampleset.h"
#include "results/results.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* vLLM's "20250131-120000" as ISO 8601 (UTC assumed: vLLM writes local time without a zone). */
static json_t *vllm_date(const json_t *v) {
    const char *d = json_string_value(json_object_get(v, "date"));
    struct tm tm;
    memset(&tm, 0, sizeof tm);
    if (!d || !strptime(d, "%Y%m%d-%H%M%S", &tm)) return json_null();
    char iso[32];
    strftime(iso, sizeof iso, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(iso);
}

static bool succeeded(const json_t *errors, size_t i) {
    const json_t *e = json_array_get(errors, i);
    return !e || json_is_null(e) || (json_is_string(e) && !*json_string_value(e));
}

/* samples from the per-request lists: ttfts (s), itls (lists of s), output_lens; sample sets as a
 * results file keeps them (sampleset.h: every sample, latencies in ns, output tokens in tokens). */
static json_t *vllm_samples(const json_t *v, size_t *failed) {
    const json_t *ttfts = json_object_get(v, "ttfts"), *itls = json_object_get(v, "itls");
    const json_t *outs = json_object_get(v, "output_lens"), *errors = json_object_get(v, "errors");
    size_t n = json_array_size(ttfts);
    *failed = 0;
    if (!n) return NULL;
    size_t n_itl = 0;
    for (size_t i = 0; i < json_array_size(itls); i++) n_itl += json_array_size(json_array_get(itls, i));
    double *ttft = malloc(n * sizeof *ttft), *e2el = malloc(n * sizeof *e2el), *tpot = malloc(n * sizeof *tpot);
    double *toks = malloc(n * sizeof *toks), *gap = malloc((n_itl ? n_itl : 1) * sizeof *gap);
    if (!ttft || !e2el || !tpot || !toks || !gap) { free(ttft); free(e2el); free(tpot); free(toks); free(gap); return NULL; }
    size_t k = 0, kt = 0, kg = 0, ko = 0;
    for (size_t i = 0; i < n; i++) {
        if (!succeeded(errors, i)) { (*failed)++; continue; }
        double t = json_number_value(json_array_get(ttfts, i)) * 1000.0, sum = 0;
        const json_t *g = json_array_get(itls, i);
        for (size_t j = 0; j < json_array_size(g); j++) {
            double x = json_number_value(json_array_get(g, j)) * 1000.0;
            sum += x;
            gap[kg++] = x;
        }
        ttft[k] = t;
        e2el[k] = t + sum;
        const json_t *o = json_array_get(outs, i);
        json_int_t out = json_integer_value(o);
        if (json_is_integer(o)) toks[ko++] = (double)out;
        if (out > 1) tpot[kt++] = sum / (double)(out - 1);
        k++;
    }
    json_t *s = json_object();
    json_object_set_new(s, "format", json_string(SAMPLESET_FORMAT));
    json_object_set_new(s, "unit", json_string("ns"));
    json_object_set_new(s, "rel_error", json_real(HDR_REL_ERROR));
    json_object_set_new(s, "ttft", summary_samples_family(ttft, k, 1e6));
    json_object_set_new(s, "e2el", summary_samples_family(e2el, k, 1e6));
    if (kt) json_object_set_new(s, "tpot", summary_samples_family(tpot, kt, 1e6));
    if (kg) json_object_set_new(s, "itl", summary_samples_family(gap, kg, 1e6));
    if (ko) {
        json_object_set_new(s, "out_tokens", summary_samples_family(toks, ko, 1));
        json_object_set_new(s, "units", json_pack("{s:s}", "out_tokens", "tokens"));
    }
    free(ttft); free(e2el); free(tpot); free(toks); free(gap);
    return s;
}

json_t *history_from_vllm(const json_t *v, const char *path, char *err, size_t errlen) {
    if (!json_is_object(v) || !json_is_number(json_object_get(v, "completed")) ||
        (!json_object_get(v, METRIC(mean_ttft_ms)) && !json_object_get(v, "ttfts"))) {
        snprintf(err, errlen, "%s: not a dsperf document nor a vLLM benchmark result (no \"schema\"; no \"completed\" and "
                 "\"mean_ttft_ms\")", path);
        return NULL;
    }
    json_t *d = json_object();
    json_object_set_new(d, "schema", json_string(RESULTS_SCHEMA));
    json_object_set_new(d, "tool", json_string("vllm"));
    json_object_set_new(d, "version", json_null());
    json_object_set_new(d, "producer", json_string("import-vllm"));
    json_object_set_new(d, "command_line", json_null());
    json_object_set_new(d, "date", vllm_date(v));
    json_object_set_new(d, "partial", json_false());
    /* the numbers: vLLM's names are ours */
    const char *k;
    json_t *x;
    json_object_foreach((json_t *)v, k, x)
        if (json_is_number(x)) json_object_set(d, k, x);
    size_t failed = 0;
    json_t *samples = vllm_samples(v, &failed);
    if (samples) json_object_set_new(d, "samples", samples);
    if (!json_object_get(d, "failed")) {
        json_int_t np = json_integer_value(json_object_get(v, "num_prompts"));
        json_int_t done = json_integer_value(json_object_get(v, "completed"));
        json_object_set_new(d, "failed", json_integer(samples ? (json_int_t)failed : np > done ? np - done : 0));
    }
    /* the workload, as far as vLLM recorded it */
    json_t *c = json_object();
    const json_t *model = json_object_get(v, "model_id");
    json_object_set_new(c, "model", json_is_string(model) ? json_incref((json_t *)model) : json_null());
    const json_t *be = json_object_get(v, "endpoint_type");
    if (!be) be = json_object_get(v, "backend");
    if (json_is_string(be)) json_object_set(c, "api", (json_t *)be);
    const json_t *rate = json_object_get(v, "request_rate");
    bool finite_rate = json_is_number(rate) && isfinite(json_number_value(rate));
    json_object_set_new(c, "load", json_string(finite_rate ? "open" : "burst"));
    if (finite_rate) json_object_set(c, "rate_per_s", (json_t *)rate);
    const json_t *burst = json_object_get(v, "burstiness");
    if (finite_rate && json_is_number(burst)) {
        char a[48];
        if (json_number_value(burst) == 1) snprintf(a, sizeof a, "poisson");
        else snprintf(a, sizeof a, "gamma:%g", json_number_value(burst));
        json_object_set_new(c, "arrival", json_string(a));
    }
    if (json_is_integer(json_object_get(v, "max_concurrency"))) json_object_set(c, "max_concurrency", json_object_get(v, "max_concurrency"));
    if (json_is_integer(json_object_get(v, "num_prompts"))) json_object_set(c, "requests", json_object_get(v, "num_prompts"));
    if (json_is_string(json_object_get(v, "tokenizer_id"))) json_object_set(c, "tokenizer", json_object_get(v, "tokenizer_id"));
    json_object_set_new(d, "config", c);
    json_object_set_new(d, "imported_from", json_pack("{s:s,s:s}", "tool", "vllm bench serve", "path", path));
    if (json_is_string(json_object_get(v, "label"))) json_object_set(d, "vllm_label", json_object_get(v, "label"));
    (void)err; (void)errlen;
    return d;
}

json_t *history_import_file(const char *path, char *err, size_t errlen) {
    static const char *const any[] = {"", NULL};
    json_t *doc = results_load_doc(path, any, "JSON", err, errlen);
    if (!doc) {
        /* results_load_doc wants a "schema": a vLLM file has none, so read it again plainly */
        json_error_t je;
        doc = json_load_file(path, 0, &je);
        if (!doc) { snprintf(err, errlen, "%s: not valid JSON (line %d: %s)", path, je.line, je.text); return NULL; }
    }
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (schema) {
        if (history_kind_of(doc)) return doc;
        snprintf(err, errlen, "%s: a %s document cannot be recorded (dsperf records results, sweep and tune files)", path, schema);
        json_decref(doc);
        return NULL;
    }
    json_t *d = history_from_vllm(doc, path, err, errlen);
    json_decref(doc);
    return d;
}
