/* results — the results document (schema dsperf.results/1), its atomic writers and loader, the
 * per-request JSONL, and the terminal summary in vLLM's "Serving Benchmark Result" layout. */
#include "results/results.h"
#include "metrics/metric_table.h"
#include "metrics/accept.h"
#include "results/validity.h"
#include "metrics/request_metrics.h"
#include "common/version.h"
#include "common/fileio.h"
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/utsname.h>

/* ---- environment ---- */

static json_t *cpu_model(void) {
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (!f) return json_null();
    char line[512];
    json_t *out = NULL;
    while (!out && fgets(line, sizeof line, f)) {
        if (strncmp(line, "model name", 10) != 0) continue;
        char *v = strchr(line, ':');
        if (!v) continue;
        v++;
        while (*v == ' ' || *v == '\t') v++;
        v[strcspn(v, "\n")] = 0;
        out = json_string(v);
    }
    fclose(f);
    return out ? out : json_null();
}

static json_t *environment(void) {
    json_t *env = json_object();
    char host[256] = "";
    if (gethostname(host, sizeof host - 1) == 0) json_object_set_new(env, "hostname", json_string(host));
    else json_object_set_new(env, "hostname", json_null());
    struct utsname u;
    if (uname(&u) == 0) {
        char k[2 * sizeof u.release + 2];
        snprintf(k, sizeof k, "%s %s", u.sysname, u.release);
        json_object_set_new(env, "kernel", json_string(k));
    } else {
        json_object_set_new(env, "kernel", json_null());
    }
    json_object_set_new(env, "cpu_model", cpu_model());
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    json_object_set_new(env, "cpus", n > 0 ? json_integer(n) : json_null());
    json_object_set_new(env, "gpus", json_array());   /* results_env_gpus_from_telemetry fills it */
    return env;
}

void results_env_gpus_from_telemetry(json_t *results) {
    json_t *env = json_object_get(results, "environment"), *list = json_object_get(env, "gpus");
    if (!json_is_array(list)) return;
    json_array_clear(list);
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(json_object_get(results, "telemetry"), "gpu"), i, g) {
        json_t *e = json_object();
        static const char *const keys[] = {"index", "name", "uuid", "mem_total_mib"};
        for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++) {
            json_t *v = json_object_get(g, keys[k]);
            if (v) json_object_set(e, keys[k], v);
        }
        json_array_append_new(list, e);
    }
}

/* ---- the example message of each error class ---- */

#define EX_MSGS 8   /* distinct messages tracked per class */

static int same_msg(const record *a, const record *b) {
    if (!a->error || !b->error) return a->error == b->error;
    return strcmp(a->error, b->error) == 0;
}

/* One entry per failure class (and HTTP status): how many, and its example: the message most of
 * the class carry (the earliest sent of those), so that a summary, a report and a diagnosis can say
 * what went wrong without the per-request file. The most common, not the first: when a server dies
 * mid-run, the one request the kernel had queued for it fails differently from the many that find
 * no server, and the first of the class is as likely to be that one. Largest class first. */
json_t *results_error_examples(const recset *recs) {
    typedef struct { const record *first; long count; } msg;
    typedef struct { int outcome, status; long count; msg m[EX_MSGS]; size_t nm; } ex;
    ex v[64];
    size_t n = 0;
    for (size_t i = 0; i < recs->n; i++) {
        const record *r = &recs->v[i];
        if (r->warmup || r->outcome == REC_OK) continue;
        int status = r->outcome == REC_ERR_HTTP ? r->http_status : 0;
        size_t k = 0;
        while (k < n && !(v[k].outcome == r->outcome && v[k].status == status)) k++;
        if (k == n) {
            if (n == sizeof v / sizeof v[0]) continue;
            v[n++] = (ex){ .outcome = r->outcome, .status = status };
        }
        v[k].count++;
        size_t j = 0;
        while (j < v[k].nm && !same_msg(v[k].m[j].first, r)) j++;
        if (j == v[k].nm) {
            if (j == EX_MSGS) continue;
            v[k].m[v[k].nm++] = (msg){ r, 0 };
        }
        v[k].m[j].count++;
        if (r->send_ns && (!v[k].m[j].first->send_ns || r->send_ns < v[k].m[j].first->send_ns)) v[k].m[j].first = r;
    }
    for (size_t i = 1; i < n; i++)
        for (size_t j = i; j > 0 && v[j].count > v[j - 1].count; j--) { ex t = v[j]; v[j] = v[j - 1]; v[j - 1] = t; }
    json_t *out = json_array();
    for (size_t i = 0; i < n; i++) {
        const msg *best = &v[i].m[0];
        for (size_t j = 1; j < v[i].nm; j++)
            if (v[i].m[j].count > best->count
                || (v[i].m[j].count == best->count && v[i].m[j].first->send_ns < best->first->send_ns)) best = &v[i].m[j];
        json_t *e = json_pack("{s:s,s:I}", "class", rec_outcome_name((rec_outcome)v[i].outcome), "count", (json_int_t)v[i].count);
        if (v[i].status) json_object_set_new(e, "status", json_integer(v[i].status));
        json_object_set_new(e, "message", best->first->error ? json_string(best->first->error) : json_null());
        json_object_set_new(e, "message_count", json_integer(best->count));
        json_object_set_new(e, "first_request", json_integer(best->first->index));
        json_array_append_new(out, e);
    }
    return out;
}

json_t *results_build(const recset *recs, const summary_opts *o, const results_meta *m) {
    json_t *summary = summary_compute_parts(recs, o, m ? m->parts : NULL);
    if (!summary) return NULL;
    json_t *doc = json_object();
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_object_set_new(doc, "schema", json_string(RESULTS_SCHEMA));
    json_object_set_new(doc, "tool", json_string("dsperf"));
    json_object_set_new(doc, "version", json_string(DSPERF_VERSION));
    json_object_set_new(doc, "producer", m && m->producer ? json_string(m->producer) : json_null());
    json_object_set_new(doc, "command_line", m && m->command_line ? json_string(m->command_line) : json_null());
    json_object_set_new(doc, "date", json_string(date));
    json_object_set_new(doc, "environment", environment());
    /* a copy: the caller keeps and may change its config after the build */
    json_object_set_new(doc, "config", m && m->config ? json_deep_copy(m->config) : json_object());
    json_object_set_new(doc, "partial", json_boolean(m && m->partial));
    json_object_set_new(doc, "partial_reason",
                        m && m->partial && m->partial_reason ? json_string(m->partial_reason) : json_null());
    if (json_object_update(doc, summary) != 0) {
        json_decref(doc);
        doc = NULL;
    }
    json_decref(summary);
    if (doc) json_object_set_new(doc, "error_examples", results_error_examples(recs));
    return doc;
}

/* ---- files ---- */

int results_write_json(const char *path, const json_t *results, char *err, size_t errlen) {
    char *text = json_dumps(results, JSON_INDENT(1) | JSON_REAL_PRECISION(10));
    if (!text) {
        snprintf(err, errlen, "cannot serialise results (out of memory)");
        return -1;
    }
    size_t len = strlen(text);
    text[len] = '\n';   /* json_dumps leaves room: overwrite the NUL, length + 1 below */
    int rc = fileio_write_atomic(path, text, len + 1);
    int e = errno;
    free(text);
    if (rc != 0) {
        snprintf(err, errlen, "cannot write %s: %s", fileio_display(path), strerror(e));
        return -1;
    }
    return 0;
}

/* A relative timestamp, or null when the event did not happen (0). */
static void put_rel(FILE *f, const char *key, int64_t t, int64_t t0) {
    if (t > 0) fprintf(f, ",\"%s\":%lld", key, (long long)(t - t0));
    else fprintf(f, ",\"%s\":null", key);
}

static void put_int(FILE *f, const char *key, long long v, int known) {
    if (known) fprintf(f, ",\"%s\":%lld", key, v);
    else fprintf(f, ",\"%s\":null", key);
}

static void put_ms(FILE *f, const char *key, int64_t ns, int known) {
    if (known) fprintf(f, ",\"%s\":%.6f", key, (double)ns / 1e6);
    else fprintf(f, ",\"%s\":null", key);
}

/* A metric in ms from request_metrics, or null when it is not defined. */
static void put_msv(FILE *f, const char *key, double ms) {
    if (isfinite(ms)) fprintf(f, ",\"%s\":%.6f", key, ms);
    else fprintf(f, ",\"%s\":null", key);
}

/* One line, written with fprintf rather than through a jansson tree: a run can hold a million
 * chunk timestamps, and the writer streams them without building a document. */
static void write_request_line(FILE *f, const record *r, int64_t t0) {
    fprintf(f, "{\"index\":%u,\"class\":%u,\"outcome\":\"%s\",\"end\":\"%s\",\"http_status\":%d,\"warmup\":%s",
            r->index, (unsigned)r->class_id, rec_outcome_name((rec_outcome)r->outcome), rec_end_name(record_end(r)),
            (int)r->http_status, r->warmup ? "true" : "false");
    put_rel(f, "sched_ns", r->sched_ns, t0);
    put_rel(f, "send_ns", r->send_ns, t0);
    put_rel(f, "first_ns", r->first_ns, t0);
    put_rel(f, "last_ns", r->last_ns, t0);
    put_rel(f, "end_ns", r->end_ns, t0);
    req_metrics m;
    req_metrics_of(r, &m);
    put_msv(f, "queue_ms", m.queue_ms);
    put_ms(f, "connect_ms", r->connect_ns, r->connect_ns > 0);
    put_msv(f, "ttft_ms", m.ttft_ms);
    put_msv(f, "tpot_ms", m.tpot_ms);
    put_msv(f, "e2el_ms", m.e2el_ms);
    put_int(f, "in_tokens", r->in_tokens, r->in_tokens >= 0);
    put_int(f, "in_tokens_server", r->in_tokens_server, r->in_tokens_server >= 0);
    put_int(f, "out_tokens", record_out_tokens(r), 1);
    put_int(f, "out_tokens_server", r->out_tokens_server, r->out_tokens_server >= 0);
    put_int(f, "out_tokens_client", r->out_tokens_client, r->out_tokens_client >= 0);
    put_int(f, "max_tokens", r->max_tokens, r->max_tokens >= 0);
    put_int(f, "cached_tokens", r->cached_tokens, r->cached_tokens >= 0);
    put_int(f, "cacheable_tokens", r->cacheable_tokens, r->cacheable_tokens >= 0);
    if (m.has_reasoning) {   /* reasoning vs answer: only for a stream that had a reasoning phase */
        fprintf(f, ",\"reasoning_chunks\":%u", r->reasoning_chunks);
        put_rel(f, "answer_ns", r->answer_ns, t0);
        put_msv(f, "ttfa_ms", m.ttfa_ms);
        put_int(f, "reasoning_tokens", m.reasoning_tokens, 1);
        put_int(f, "answer_tokens", m.answer_tokens, 1);
        put_int(f, "reasoning_tokens_server", r->reasoning_tokens_server, r->reasoning_tokens_server >= 0);
        put_int(f, "reasoning_tokens_client", r->reasoning_tokens_client, r->reasoning_tokens_client >= 0);
        put_msv(f, "reasoning_tpot_ms", m.reasoning_tpot_ms);
        put_msv(f, "answer_tpot_ms", m.answer_tpot_ms);
    }
    if (r->server_prompt_ms >= 0) {   /* the server's own timing (llama.cpp's timings) */
        put_msv(f, "server_prompt_ms", r->server_prompt_ms);
        put_msv(f, "server_predicted_ms", r->server_predicted_ms >= 0 ? r->server_predicted_ms : NAN);
        put_int(f, "server_predicted_n", r->server_predicted_n, r->server_predicted_n >= 0);
        put_int(f, "server_prompt_n", r->prompt_eval_server, r->prompt_eval_server >= 0);
    }
    /* vLLM's per-request metrics, SGLang's meta_info (metrics/phases.h) */
    if (r->server_queue_ms >= 0) put_msv(f, "server_queue_ms", r->server_queue_ms);
    if (r->server_ttft_ms >= 0) put_msv(f, "server_ttft_ms", r->server_ttft_ms);
    if (r->server_decode_ms >= 0) put_msv(f, "server_decode_ms", r->server_decode_ms);
    if (r->server_e2e_ms >= 0) put_msv(f, "server_e2e_ms", r->server_e2e_ms);
    /* tokens per decode step (metrics/accept.h): the stream's, and the server's where it counted */
    double acc = accept_len_of(r);
    if (isfinite(acc)) fprintf(f, ",\"acceptance_length\":%.17g", acc);
    put_int(f, "spec_steps_server", r->spec_steps_server, r->spec_steps_server >= 0);
    put_int(f, "spec_accepted_server", r->spec_accepted_server, r->spec_accepted_server >= 0);
    put_int(f, "spec_drafted_server", r->spec_drafted_server, r->spec_drafted_server >= 0);
    if (r->spec_accept_len_server >= 0) fprintf(f, ",\"spec_accept_len_server\":%.17g", r->spec_accept_len_server);
    if (r->session) fprintf(f, ",\"session\":%u,\"turn\":%u", r->session - 1, (unsigned)r->turn);
    fprintf(f, ",\"n_chunks\":%u,\"chunk_ns\":[", r->n_chunks);
    for (uint32_t k = 0; k < r->n_chunks; k++)
        fprintf(f, k ? ",%lld" : "%lld", (long long)(r->chunk_ns[k] - t0));
    fputc(']', f);
    if (r->chunk_tokens) {
        fputs(",\"chunk_tokens\":[", f);
        for (uint32_t k = 0; k < r->n_chunks; k++) fprintf(f, k ? ",%u" : "%u", (unsigned)r->chunk_tokens[k]);
        fputc(']', f);
    }
    fputs(",\"error\":", f);
    json_t *e = r->error ? json_string(r->error) : NULL;
    char *es = e ? json_dumps(e, JSON_ENCODE_ANY) : NULL;
    fputs(es ? es : "null", f);
    free(es);
    json_decref(e);
    fputs("}\n", f);
}

int results_write_requests_jsonl(const char *path, const recset *recs, char *err, size_t errlen) {
    /* the run's first send (warm-up excluded when there is any other), so times read from 0 */
    int64_t t0 = 0;
    for (int pass = 0; pass < 2 && t0 == 0; pass++)
        for (size_t i = 0; i < recs->n; i++) {
            const record *r = &recs->v[i];
            if ((pass == 0 && r->warmup) || r->send_ns <= 0) continue;
            if (t0 == 0 || r->send_ns < t0) t0 = r->send_ns;
        }
    fileio_out *o = fileio_out_open(path);
    if (!o) {
        snprintf(err, errlen, "cannot write %s: %s", fileio_display(path), strerror(errno));
        return -1;
    }
    FILE *f = fileio_out_file(o);
    for (size_t i = 0; i < recs->n; i++) write_request_line(f, &recs->v[i], t0);
    if (fileio_out_commit(o) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", fileio_display(path), strerror(errno));
        return -1;
    }
    return 0;
}

json_t *results_load_doc(const char *path, const char *const *schema_prefixes, const char *what, char *err, size_t errlen) {
    char *text = NULL;
    size_t len = 0;
    if (fileio_read_all(path, &text, &len) != 0) {
        snprintf(err, errlen, "cannot read %s: %s", path, strerror(errno));
        return NULL;
    }
    json_error_t je;
    json_t *doc = json_loadb(text, len, 0, &je);
    free(text);
    if (!doc) {
        snprintf(err, errlen, "%s: not valid JSON (line %d: %s)", path, je.line, je.text);
        return NULL;
    }
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    for (const char *const *p = schema_prefixes; schema && *p; p++)
        if (!strncmp(schema, *p, strlen(*p))) return doc;
    char want[160] = "";
    for (const char *const *p = schema_prefixes; *p; p++)
        snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s...", p == schema_prefixes ? "" : " or ", *p);
    snprintf(err, errlen, "%s: not a dsperf %s file (schema \"%s\", want %s)", path, what, schema ? schema : "missing", want);
    json_decref(doc);
    return NULL;
}

json_t *results_load(const char *path, char *err, size_t errlen) {
    static const char *const schemas[] = { "dsperf.results/", NULL };
    return results_load_doc(path, schemas, "results", err, errlen);
}

/* ---- terminal summary: vLLM's block, then dsperf's additions in the same style ---- */

#define RULE_WIDTH 50

/* Python's "{:c^50}": the left pad is the floor of half. */
static void rule(FILE *f, const char *title, char c) {
    int len = (int)strlen(title), pad = RULE_WIDTH - len;
    if (pad < 0) pad = 0;
    for (int i = 0; i < pad / 2; i++) fputc(c, f);
    fputs(title, f);
    for (int i = 0; i < pad - pad / 2; i++) fputc(c, f);
    fputc('\n', f);
}

/* "{:<40} {:<10.2f}" — or "{:<10}" for integers — and "n/a" for a null. */
static void row_real(FILE *f, const char *label, const json_t *v) {
    if (json_is_number(v)) fprintf(f, "%-40s %-10.2f\n", label, json_number_value(v));
    else fprintf(f, "%-40s %-10s\n", label, "n/a");
}

static void row_int(FILE *f, const char *label, const json_t *v) {
    if (json_is_integer(v)) fprintf(f, "%-40s %-10lld\n", label, (long long)json_integer_value(v));
    else row_real(f, label, v);
}

static const json_t *get(const json_t *r, const char *key) { return json_object_get(r, key); }

/* The percentile the added sections show: 99 when configured, else the highest configured. */
static double key_percentile(const json_t *r) {
    double best = NAN;
    size_t i;
    json_t *pv;
    json_array_foreach(json_object_get(r, "percentiles"), i, pv) {
        double p = json_number_value(pv);
        if (p == 99) return 99;
        if (isnan(best) || p > best) best = p;
    }
    return best;
}

/* "P{p} {name} (ms):" from p{p}_{field}_ms, or from the error-adjusted field, where a
 * percentile that lands on a failure reads "inf". */
static void p_row(FILE *f, const json_t *r, double pct, const char *field, const char *name, int error_adjusted) {
    char label[96], key[128], p[32];
    summary_percentile_label(pct, p, sizeof p);
    snprintf(label, sizeof label, "P%s %s (ms):", p, name);
    if (error_adjusted) {
        snprintf(key, sizeof key, "p%s_%s_error_adjusted_inf", p, field);
        if (json_is_true(get(r, key))) {
            fprintf(f, "%-40s %-10s\n", label, "inf");
            return;
        }
    }
    snprintf(key, sizeof key, "p%s_%s%s", p, field, error_adjusted ? "_error_adjusted_ms" : "_ms");
    /* the samples behind it: pooled gaps for ITL, else one per completed request (failures too
     * when they count as +inf); too few, and the "percentile" is the largest sample: say so */
    char nkey[64];
    snprintf(nkey, sizeof nkey, "%s_samples", field);
    long n = json_is_integer(get(r, nkey)) ? (long)json_integer_value(get(r, nkey))
           : (long)json_integer_value(get(r, "completed")) + (error_adjusted ? (long)json_integer_value(get(r, "failed")) : 0);
    long need = summary_percentile_samples_needed(pct);
    const json_t *v = get(r, key);
    if (json_is_number(v) && n < need) {
        char val[32];
        snprintf(val, sizeof val, "%.2f", json_number_value(v));
        fprintf(f, "%-40s %-10s (from %ld sample%s; P%s needs %ld)\n", label, val, n, n == 1 ? "" : "s",
                p, need);
        return;
    }
    row_real(f, label, v);
}

/* Prefix-cache hits against the workload's bound, and conversations (metrics/workload.h). */
static void workload_section(FILE *f, const json_t *r) {
    const json_t *pc = get(r, "prefix_cache"), *ss = get(r, "sessions");
    if (pc) {
        rule(f, "Prefix cache", '-');
        const json_t *hr = get(pc, "hit_rate"), *hm = get(pc, "hit_rate_metrics"), *bd = get(pc, "hit_rate_bound");
        if (json_is_number(hr)) fprintf(f, "%-40s %-10.1f\n", "Hit rate, server usage (%):", 100 * json_number_value(hr));
        if (json_is_number(hm)) fprintf(f, "%-40s %-10.1f\n", "Hit rate, server /metrics (%):", 100 * json_number_value(hm));
        if (!json_is_number(hr) && !json_is_number(hm)) fprintf(f, "%-40s %-10s\n", "Hit rate, server-reported (%):", "unknown");
        if (json_is_number(bd)) fprintf(f, "%-40s %-10.1f\n", "Hit rate the workload allows (%):", 100 * json_number_value(bd));
        if (json_integer_value(get(pc, "reported_requests")) > 0) {
            row_real(f, "Median TTFT, cache hits (ms):", get(get(pc, "ttft_hit"), "median_ms"));
            row_real(f, "Median TTFT, cache misses (ms):", get(get(pc, "ttft_miss"), "median_ms"));
        }
    }
    if (ss) {
        rule(f, "Sessions", '-');
        fprintf(f, "%-40s %lld / %lld / %lld\n", "Completed / ended by error / cut:", json_integer_value(get(ss, "completed")),
                json_integer_value(get(ss, "ended_by_error")), json_integer_value(get(ss, "cut_by_run_end")));
        size_t i;
        const json_t *t;
        json_array_foreach(get(ss, "by_turn"), i, t) {
            if (i >= 8) { fprintf(f, "(%zu more turns in the results)\n", json_array_size(get(ss, "by_turn")) - i); break; }
            char label[64];
            snprintf(label, sizeof label, "Turn %zu median TTFT (ms):", i);
            row_real(f, label, get(get(t, "ttft"), "median_ms"));
        }
    }
}

/* "Mean {name} (ms):" / "Median {name} (ms):" from {stat}_{field}_ms. */
static void stat_row(FILE *f, const json_t *r, const char *stat, const char *word, const char *field,
                     const char *name) {
    char label[96], key[96];
    snprintf(label, sizeof label, "%s %s (ms):", word, name);
    snprintf(key, sizeof key, "%s_%s_ms", stat, field);
    row_real(f, label, get(r, key));
}

/* One metric section as vLLM's process_one_metric prints it: Mean, Median and one P line per
 * configured percentile (P50 is skipped: it is the Median line). `field` is the JSON name
 * (ttft), `name` the label word (TTFT). compact: Mean, Median and the key percentile only. */
static void metric_section(FILE *f, const json_t *r, const char *header, const char *field, const char *name,
                           int compact) {
    rule(f, header, '-');
    stat_row(f, r, "mean", "Mean", field, name);
    stat_row(f, r, "median", "Median", field, name);
    if (compact) {
        double kp = key_percentile(r);
        if (!isnan(kp)) p_row(f, r, kp, field, name, 0);
        return;
    }
    size_t i;
    json_t *pv;
    json_array_foreach(get(r, "percentiles"), i, pv) {
        if (json_number_value(pv) != 50) p_row(f, r, json_number_value(pv), field, name, 0);
    }
}

static void errors_section(FILE *f, const json_t *r) {
    const json_t *e = get(r, "errors");
    if (!json_is_object(e) || json_integer_value(get(r, "failed")) <= 0) return;
    rule(f, "Errors", '-');
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)e, k, v) {
        if (json_is_object(v)) {
            const char *code;
            json_t *n;
            json_object_foreach(v, code, n) {
                char label[64];
                snprintf(label, sizeof label, "HTTP %s:", code);
                row_int(f, label, n);
            }
        } else if (json_integer_value(v) > 0) {
            char label[64];
            snprintf(label, sizeof label, "%s errors:", k);
            row_int(f, label, v);
        }
    }
    size_t i;
    json_array_foreach(get(r, "error_examples"), i, v) {
        const char *msg = json_string_value(get(v, "message"));
        if (!msg) continue;
        /* one line each: the first failure of the class says what went wrong */
        fprintf(f, "  first %s error: %.*s\n", json_string_value(get(v, "class")), 160, msg);
    }
    double kp = key_percentile(r);
    if (isnan(kp)) return;
    p_row(f, r, kp, "ttft", "TTFT incl. failures", 1);
    p_row(f, r, kp, "e2el", "E2EL incl. failures", 1);
}

/* Reasoning vs answer (metrics/phases.h), when the run had a reasoning phase: TTFA and the tokens
 * and TPOT of each phase, compact. */
static void reasoning_section(FILE *f, const json_t *r) {
    if (!json_is_integer(get(r, "reasoning_requests"))) return;
    metric_section(f, r, "Time to First Answer token (reasoning)", "ttfa", "TTFA", 1);
    row_int(f, "Requests with a reasoning phase:", get(r, "reasoning_requests"));
    row_int(f, "  ... that reached an answer:", get(r, "reasoning_answered"));
    row_real(f, "Mean reasoning tokens:", get(r, "mean_reasoning_tokens"));
    row_real(f, "Mean answer tokens:", get(r, "mean_answer_tokens"));
    stat_row(f, r, "mean", "Mean", "reasoning_tpot", "reasoning TPOT");
    stat_row(f, r, "mean", "Mean", "answer_tpot", "answer TPOT");
    if (json_integer_value(get(r, "reasoning_token_mismatches")) > 0)
        row_int(f, "Reasoning token mismatches (srv/client):", get(r, "reasoning_token_mismatches"));
}

/* The server's own timing joined per request, and the part of TTFT it never saw. */
static void server_section(FILE *f, const json_t *r) {
    const json_t *st = get(r, "server_timing");
    if (!json_is_object(st)) return;
    double kp = key_percentile(r);
    const char *src = json_string_value(get(st, "source"));
    char title[80];
    snprintf(title, sizeof title, "Server's side (%s)", src && !strcmp(src, "vllm_metrics") ? "vLLM per-request metrics" :
             src && !strcmp(src, "sglang_meta_info") ? "SGLang meta_info" : src && !strcmp(src, "mixed") ? "several servers" :
             "llama.cpp timings");
    rule(f, title, '-');
    row_int(f, "Requests joined:", get(st, "requests_joined"));
    stat_row(f, st, "mean", "Mean", "server_queue", "server queue");
    stat_row(f, st, "mean", "Mean", "server_prefill", "server prefill");
    stat_row(f, st, "mean", "Mean", "ttft_outside_server", "TTFT outside server");
    if (!isnan(kp)) p_row(f, st, kp, "ttft_outside_server", "TTFT outside server", 0);
    const json_t *sh = get(st, "ttft_outside_server_share");
    if (json_is_number(sh)) fprintf(f, "%-40s %-10.1f\n", "TTFT outside server (% of TTFT):", 100 * json_number_value(sh));
    stat_row(f, st, "mean", "Mean", "server_tpot", "server TPOT");
    stat_row(f, st, "mean", "Mean", "e2el_outside_server", "E2EL outside server");
    if (json_integer_value(get(st, "causality_violations")) > 0)
        row_int(f, "CAUSALITY VIOLATIONS (prefill > TTFT):", get(st, "causality_violations"));
}

/* Tokens per decode step (MTP, speculative decoding; metrics/accept.h). */
static void spec_section(FILE *f, const json_t *r) {
    const json_t *sd = get(r, "spec_decode");
    if (!json_is_object(sd)) return;
    rule(f, "Tokens per decode step (MTP / spec. decoding)", '-');
    row_real(f, "Acceptance length, from chunks:", get(sd, "mean_acceptance_length"));
    row_real(f, "  median per request:", get(sd, "median_request_acceptance_length"));
    const json_t *srv = get(sd, "server");
    if (json_is_object(srv)) row_real(f, "Acceptance length, server's count:", get(srv, "acceptance_length"));
    const json_t *bp = get(sd, "by_position");
    size_t n = json_array_size(bp);
    if (n > 1) {
        const json_t *a = json_array_get(bp, 0), *b = json_array_get(bp, n - 1);
        fprintf(f, "%-40s %.3g (tokens %lld-%lld) -> %.3g (tokens %lld-%lld)\n", "By output position:",
                json_number_value(get(a, "acceptance_length")), (long long)json_integer_value(get(a, "from")),
                (long long)json_integer_value(get(a, "to")) - 1, json_number_value(get(b, "acceptance_length")),
                (long long)json_integer_value(get(b, "from")), (long long)json_integer_value(get(b, "to")) - 1);
    }
}

/* Intervals that respect time (metrics/timeint.h): each figure ± its batch-means half-width, with
 * the effective sample size beside the units it came from and what independent units would claim. */
static void intervals_section(FILE *f, const json_t *r) {
    const json_t *ti = get(r, "time_intervals");
    if (!json_is_object(ti)) return;
    char title[96];
    snprintf(title, sizeof title, "Intervals over time (%d batches of %.3g s, %.0f%%)",
             (int)json_integer_value(get(ti, "batches")), json_number_value(get(ti, "batch_s")),
             100 * json_number_value(get(ti, "confidence")));
    rule(f, title, '-');
    const char *keys[] = { METRIC(output_throughput), METRIC(request_throughput), METRIC(mean_itl_ms) };
    const char *labels[] = { "Output token throughput (tok/s):", "Request throughput (req/s):", "Mean ITL (ms):" };
    for (int i = 0; i < 3; i++) {
        const json_t *x = get(ti, keys[i]);
        if (!json_is_object(x)) continue;
        fprintf(f, "%-40s %.4g ± %.3g (ESS %.0f of %lld; as if independent ± %.3g)\n", labels[i],
                json_number_value(get(x, "estimate")), json_number_value(get(x, "half_width")),
                json_number_value(get(x, "ess")), (long long)json_integer_value(get(x, "n")),
                json_number_value(get(x, "iid_half_width")));
    }
}

/* A run against `dsperf serve --engine sim`: what it measured are the simulator's predictions, and
 * where the simulated deployment would fall (its 80% interval) is said apart from them. */
static void prediction_section(FILE *f, const json_t *r) {
    const json_t *pi = get(r, "prediction_interval"), *m = get(pi, "metrics");
    if (!json_is_object(m) || !json_is_string(get(pi, "of"))) return;
    rule(f, "Simulated server: 80% prediction interval", '-');
    const char *keys[] = { METRIC(median_ttft_ms), METRIC(median_tpot_ms), METRIC(output_throughput) };
    const char *labels[] = { "Median TTFT (ms):", "Median TPOT (ms):", "Output token throughput (tok/s):" };
    for (int i = 0; i < 3; i++) {
        const json_t *x = get(m, keys[i]);
        if (json_is_object(x))
            fprintf(f, "%-40s %.4g to %.4g\n", labels[i], json_number_value(get(x, "lo")), json_number_value(get(x, "hi")));
    }
}

/* A self-check that failed says so (metrics/phases.h). */
static void self_check_lines(FILE *f, const json_t *r) {
    const json_t *sc = get(r, "self_check");
    const char *why = json_string_value(get(get(sc, "littles_law"), "reason"));
    if (why) fprintf(f, "Note: Little's law does not hold: %s\n", why);
    const char *k[] = { "prompt", "output" };
    for (int i = 0; i < 2; i++) {
        const json_t *t = get(get(sc, "token_agreement"), k[i]);
        json_int_t n = json_integer_value(get(t, "compared")), eq = json_integer_value(get(t, "equal"));
        if (n > 0 && eq < n)
            fprintf(f, "Note: %s tokens, client vs server: %s\n", k[i], json_string_value(get(t, "explained")));
    }
}

void results_print_summary(FILE *f, const json_t *r) {
    rule(f, " Serving Benchmark Result ", '=');
    if (json_is_true(get(r, "partial"))) {
        const char *why = json_string_value(get(r, "partial_reason"));
        fprintf(f, "(partial: %s)\n", why ? why : "interrupted");
    }
    row_int(f, "Successful requests:", get(r, "completed"));
    row_int(f, "Failed requests:", get(r, "failed"));
    if (json_integer_value(get(r, "cancelled")) > 0) row_int(f, "Cancelled by dsperf (not failures):", get(r, "cancelled"));
    if (json_is_integer(get(r, "max_concurrency"))) row_int(f, "Maximum request concurrency:", get(r, "max_concurrency"));
    if (json_is_number(get(r, "intended_rate_per_s")))
        row_real(f, "Request rate configured (RPS):", get(r, "intended_rate_per_s"));
    row_real(f, "Benchmark duration (s):", get(r, "duration"));
    row_int(f, "Total input tokens:", get(r, "total_input_tokens"));
    row_int(f, "Total generated tokens:", get(r, "total_output_tokens"));
    row_real(f, "Request throughput (req/s):", get(r, METRIC(request_throughput)));
    if (get(r, METRIC(request_goodput))) row_real(f, "Request goodput (req/s):", get(r, METRIC(request_goodput)));
    row_real(f, "Output token throughput (tok/s):", get(r, METRIC(output_throughput)));
    row_real(f, "Peak output token throughput (tok/s):", get(r, METRIC(max_output_tokens_per_s)));
    row_real(f, "Peak concurrent requests:", get(r, "max_concurrent_requests"));
    row_real(f, "Total token throughput (tok/s):", get(r, METRIC(total_token_throughput)));
    metric_section(f, r, "Time to First Token", "ttft", "TTFT", 0);
    metric_section(f, r, "Time per Output Token (excl. 1st token)", "tpot", "TPOT", 0);
    metric_section(f, r, "Inter-token Latency", "itl", "ITL", 0);
    if (json_is_true(get(r, "itl_per_token_reported")))
        metric_section(f, r, "Inter-token Latency (per token)", "itl_per_token", "ITL/token", 1);
    metric_section(f, r, "End-to-end Latency", "e2el", "E2EL", 0);
    /* dsperf's additions, compact: the key percentile only */
    rule(f, "Client-side Queueing", '-');
    stat_row(f, r, "mean", "Mean", "queue", "Client Queue Time");
    double kp = key_percentile(r);
    if (!isnan(kp)) {
        p_row(f, r, kp, "queue", "Client Queue Time", 0);
        rule(f, "Latency from schedule", '-');
        p_row(f, r, kp, "ttft_from_schedule", "TTFT from schedule", 0);
        p_row(f, r, kp, "e2el_from_schedule", "E2EL from schedule", 0);
    }
    intervals_section(f, r);
    prediction_section(f, r);
    spec_section(f, r);
    reasoning_section(f, r);
    server_section(f, r);
    workload_section(f, r);
    errors_section(f, r);
    self_check_lines(f, r);
    const char *capped = json_string_value(get(r, "client_queue_reason"));
    if (capped) fprintf(f, "Note: %s\n", capped);
    if (get(r, "warnings")) {
        validity_print(f, r);    /* judged (validity.h): every warning and the failure */
    } else if (json_is_true(get(r, "client_fell_behind"))) {
        const char *why = json_string_value(get(r, "client_lag_reason"));
        fprintf(f, "WARNING: CLIENT FELL BEHIND ITS PLAN (%s): the client, not the server, limited this run;"
                   " see *_from_schedule latencies\n", why ? why : "see results");
    }
    for (int i = 0; i < RULE_WIDTH; i++) fputc('=', f);
    fputc('\n', f);
}
