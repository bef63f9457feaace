/* export_br — a recorded run as llm-d's Benchmark Report, schema v0.2 (the format llm-d-benchmark
 * harnesses write and its dashboards read). Only the fields BR0.2 defines are written (its
 * models forbid others): run (ids, time), scenario.stack (the engine as an inference_engine
 * component when the GPUs are known, else a generic one), scenario.load (dsperf as the workload
 * tool, sequence lengths and the load), and results.request_performance.aggregate (request
 * counts and lengths, TTFT / TPOT / ITL / request latency statistics in ms, throughputs).
 * A sweep gives one report per level: BR0.2 describes one point of a sweep. */
#include "history/hist_internal.h"
#include "metrics/metric_table.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

static void put(json_t *o, const char *k, double x) {
    if (isfinite(x)) json_object_set_new(o, k, json_real(x));
}

/* BR0.2 Statistics of a latency family: mean (required), stddev, min, max and the percentiles it
 * names (p50 ... p99p9) from the results' own fields. NULL when the mean is unknown. */
static json_t *stats_of(const json_t *r, const char *family, const char *units) {
    char key[96];
    snprintf(key, sizeof key, "mean_%s_ms", family);
    double mean = num(r, key);
    if (!isfinite(mean)) return NULL;
    json_t *s = json_object();
    json_object_set_new(s, "units", json_string(units));
    json_object_set_new(s, "mean", json_real(mean));
    const struct { const char *br, *ours; } f[] = {
        {"stddev", "std"}, {"min", "min"}, {"p0p1", "p0.1"}, {"p1", "p1"}, {"p5", "p5"}, {"p10", "p10"}, {"p25", "p25"},
        {"p50", "p50"}, {"p75", "p75"}, {"p90", "p90"}, {"p95", "p95"}, {"p99", "p99"}, {"p99p9", "p99.9"}, {"max", "max"},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        snprintf(key, sizeof key, "%s_%s_ms", f[i].ours, family);
        double x = num(r, key);
        if (!isfinite(x) && !strcmp(f[i].br, "p50")) { snprintf(key, sizeof key, "median_%s_ms", family); x = num(r, key); }
        if (!strcmp(f[i].br, "stddev") && isfinite(x) && x < 0) continue;
        put(s, f[i].br, x);
    }
    return s;
}

static json_t *rate(double x, const char *units) {
    if (!isfinite(x)) return NULL;
    return json_pack("{s:s,s:f}", "units", units, "mean", x);
}

static void set_opt(json_t *o, const char *k, json_t *v) { if (v) json_object_set_new(o, k, v); }

/* "random:in=1024,out=128,range=0.1" -> value of `key` (NAN when absent). */
static double spec_value(const char *spec, const char *key) {
    if (!spec) return NAN;
    char pat[32];
    snprintf(pat, sizeof pat, "%s=", key);
    const char *p = strstr(spec, pat);
    return p ? strtod(p + strlen(pat), NULL) : NAN;
}

static json_t *seq_len(double value, double range, bool random) {
    if (!(value >= 1)) return NULL;
    json_t *s = json_object();
    json_object_set_new(s, "distribution", json_string(!random ? "other" : range > 0 ? "random" : "fixed"));
    json_object_set_new(s, "value", json_real(value));
    if (random && range > 0) {
        json_object_set_new(s, "min", json_integer((json_int_t)floor(value * (1 - range))));
        json_object_set_new(s, "max", json_integer((json_int_t)ceil(value * (1 + range))));
    }
    return s;
}

static json_t *load_section(const json_t *r, const json_t *info) {
    const json_t *cfg = json_object_get(r, "config");
    const char *ds = json_string_value(json_object_get(cfg, "dataset"));
    bool random = ds && !strncmp(ds, "random:", 7);
    double range = spec_value(ds, "range");
    if (!isfinite(range)) range = 0;
    double completed = num(r, "completed");
    double in = random ? spec_value(ds, "in") : NAN, out = random ? spec_value(ds, "out") : NAN;
    if (!isfinite(in) && completed > 0) in = num(r, "total_input_tokens") / completed;
    if (!isfinite(out) && completed > 0) out = num(r, "total_output_tokens") / completed;
    json_t *st = json_object();
    json_object_set_new(st, "tool", json_string("dsperf"));
    const char *ver = json_string_value(json_object_get(info, "tool_version"));
    json_object_set_new(st, "tool_version", json_string(ver ? ver : "unknown"));
    json_object_set_new(st, "source", json_string(random ? "random" : "sampled"));
    json_t *isl = seq_len(in, range, random);
    json_object_set_new(st, "input_seq_len", isl ? isl : json_pack("{s:s,s:i}", "distribution", "other", "value", 1));
    set_opt(st, "output_seq_len", seq_len(out, range, random));
    double conc = num(cfg, "concurrency"), rps = num(cfg, "rate_per_s");
    if (conc >= 1) json_object_set_new(st, "concurrency", json_integer((json_int_t)conc));
    if (rps > 0) json_object_set_new(st, "rate_qps", json_real(rps));
    json_t *meta = json_object();
    json_object_set_new(meta, "schema_version", json_string("0.0.1"));
    const char *eid = json_string_value(json_object_get(info, "eid"));
    if (eid) json_object_set_new(meta, "cfg_id", json_string(eid));
    const char *cmd = json_string_value(json_object_get(r, "command_line"));
    json_object_set_new(meta, "description", json_string(cmd ? cmd : "dsperf run"));
    json_t *native = json_object();
    json_object_set_new(native, "config", cfg ? json_deep_copy(cfg) : json_null());
    return json_pack("{s:o,s:o,s:o}", "metadata", meta, "standardized", st, "native", native);
}

static json_t *stack_section(const json_t *info) {
    const char *engine = json_string_value(json_object_get(info, "engine"));
    const char *ev = json_string_value(json_object_get(info, "engine_version"));
    const char *gpu = json_string_value(json_object_get(info, "gpu_type"));
    const char *model = json_string_value(json_object_get(info, "model"));
    json_int_t n = json_integer_value(json_object_get(info, "gpu_count"));
    const char *endpoint = json_string_value(json_object_get(info, "endpoint"));
    bool full = gpu && n >= 1 && model;
    json_t *meta = json_object();
    json_object_set_new(meta, "kind", json_string(full ? "inference_engine" : "generic"));
    json_object_set_new(meta, "schema_version", json_string("0.0.1"));
    json_object_set_new(meta, "label", json_string(endpoint ? endpoint : engine ? engine : "endpoint"));
    char cfg[17];
    char *ident = NULL;
    if (asprintf(&ident, "%s|%s|%s|%s|%lld", engine ? engine : "", ev ? ev : "", model ? model : "", gpu ? gpu : "", (long long)n) < 0) ident = NULL;
    hist_hash_hex(ident ? ident : "", ident ? strlen(ident) : 0, cfg);
    free(ident);
    json_object_set_new(meta, "cfg_id", json_string(cfg));
    json_t *st = json_object();
    json_object_set_new(st, "tool", json_string(engine ? engine : "unknown"));
    json_object_set_new(st, "tool_version", json_string(ev ? ev : "unknown"));
    if (full) {
        json_object_set_new(st, "role", json_string("replica"));
        json_object_set_new(st, "model", json_pack("{s:s}", "name", model));
        json_object_set_new(st, "accelerator", json_pack("{s:s,s:I,s:{s:i,s:i,s:i,s:i}}", "model", gpu, "count", n,
                                                         "parallelism", "dp", 1, "ep", 1, "pp", 1, "tp", (int)n));
    } else if (model) {
        json_object_set_new(st, "model", json_string(model));   /* generic components take extra fields */
    }
    json_t *comp = json_pack("{s:o,s:o,s:{}}", "metadata", meta, "standardized", st, "native");
    return json_pack("[o]", comp);
}

static json_t *iso_time(int64_t t) {
    if (t <= 0) return json_null();
    time_t tt = (time_t)t;
    struct tm tm;
    gmtime_r(&tt, &tm);
    char b[32];
    strftime(b, sizeof b, "%Y-%m-%dT%H:%M:%SZ", &tm);
    return json_string(b);
}

json_t *history_br02_of_results(const json_t *r, const json_t *info) {
    json_t *br = json_object();
    json_object_set_new(br, "version", json_string("0.2"));
    json_t *run = json_object();
    const char *uid = json_string_value(json_object_get(info, "uid")), *eid = json_string_value(json_object_get(info, "eid"));
    if (uid) json_object_set_new(run, "uid", json_string(uid));
    if (eid) json_object_set_new(run, "eid", json_string(eid));
    int64_t end = json_integer_value(json_object_get(info, "run_time"));
    double dur = num(r, "duration");
    json_t *t = json_object();
    if (end > 0) {
        json_object_set_new(t, "end", iso_time(end));
        if (isfinite(dur)) json_object_set_new(t, "start", iso_time(end - (int64_t)ceil(dur)));
    }
    if (isfinite(dur)) {
        char d[48];
        snprintf(d, sizeof d, "PT%.3fS", dur);
        json_object_set_new(t, "duration", json_string(d));
    }
    json_object_set_new(run, "time", t);
    json_object_set_new(br, "run", run);
    json_object_set_new(br, "scenario", json_pack("{s:o,s:o}", "stack", stack_section(info), "load", load_section(r, info)));
    json_t *req = json_object();
    double completed = num(r, "completed"), failed = num(r, "failed");
    json_object_set_new(req, "total", json_integer((json_int_t)((isfinite(completed) ? completed : 0) + (isfinite(failed) ? failed : 0))));
    if (isfinite(failed)) json_object_set_new(req, "failures", json_integer((json_int_t)failed));
    if (completed > 0) {
        set_opt(req, "input_length", rate(num(r, "total_input_tokens") / completed, "count"));
        set_opt(req, "output_length", rate(num(r, "total_output_tokens") / completed, "count"));
    }
    json_t *lat = json_object();
    set_opt(lat, "time_to_first_token", stats_of(r, "ttft", "ms"));
    set_opt(lat, "time_per_output_token", stats_of(r, "tpot", "ms/token"));
    set_opt(lat, "inter_token_latency", stats_of(r, "itl", "ms/token"));
    set_opt(lat, "request_latency", stats_of(r, "e2el", "ms"));
    json_t *thr = json_object();
    double d = num(r, "duration");
    set_opt(thr, "input_token_rate", d > 0 ? rate(num(r, "total_input_tokens") / d, "tokens/s") : NULL);
    set_opt(thr, "output_token_rate", rate(num(r, METRIC(output_throughput)), "tokens/s"));
    set_opt(thr, "total_token_rate", rate(num(r, METRIC(total_token_throughput)), "tokens/s"));
    set_opt(thr, "requests_rate", rate(num(r, METRIC(request_throughput)), "queries/s"));
    json_t *agg = json_pack("{s:o,s:o,s:o}", "requests", req, "latency", lat, "throughput", thr);
    json_object_set_new(br, "results", json_pack("{s:{s:o}}", "request_performance", "aggregate", agg));
    return br;
}

/* What the run table knows about a run, for the report's identity fields. */
static json_t *run_info(history *h, int64_t id) {
    sqlite3_stmt *st;
    json_t *info = json_object();
    if (sqlite3_prepare_v2(h->db, "SELECT doc_hash, config_hash, engine, engine_version, gpu_type, gpu_count, model, endpoint, "
                           "tool_version, run_time FROM run WHERE id = ?", -1, &st, NULL) != SQLITE_OK) return info;
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) == SQLITE_ROW) {
        const char *keys[] = {"uid", "eid", "engine", "engine_version", "gpu_type", NULL, "model", "endpoint", "tool_version"};
        for (int c = 0; c < 9; c++) {
            const unsigned char *t = sqlite3_column_text(st, c);
            if (keys[c] && t) json_object_set_new(info, keys[c], json_string((const char *)t));
        }
        if (sqlite3_column_type(st, 5) != SQLITE_NULL) json_object_set_new(info, "gpu_count", json_integer(sqlite3_column_int(st, 5)));
        json_object_set_new(info, "run_time", json_integer(sqlite3_column_int64(st, 9)));
    }
    sqlite3_finalize(st);
    return info;
}

json_t *history_export_br02(history *h, int64_t id, char *err, size_t errlen) {
    json_t *doc = history_load_doc(h, id, err, errlen);
    if (!doc) return NULL;
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    json_t *info = run_info(h, id), *out = NULL;
    if (schema && !strncmp(schema, "dsperf.results/", 15)) {
        out = history_br02_of_results(doc, info);
    } else if (schema && !strncmp(schema, "dsperf.sweep/", 13)) {
        out = json_array();
        size_t i;
        json_t *lv;
        json_array_foreach(json_object_get(doc, "levels"), i, lv) {
            json_t *r = json_object_get(lv, "results");
            if (!json_is_object(r)) continue;
            json_t *li = json_deep_copy(info);
            char uid[64];
            snprintf(uid, sizeof uid, "%s-%zu", json_string_value(json_object_get(info, "uid")) ? json_string_value(json_object_get(info, "uid")) : "run", i);
            json_object_set_new(li, "uid", json_string(uid));
            json_array_append_new(out, history_br02_of_results(r, li));
            json_decref(li);
        }
    } else {
        snprintf(err, errlen, "run %lld is a %s document: BR0.2 describes load runs (results and sweeps)", (long long)id,
                 schema ? schema : "schema-less");
    }
    json_decref(info);
    json_decref(doc);
    return out;
}
