/* sim_calibrate — least-squares fits of the cost model's efficiency factors to a measured run
 * (grid search over the factor, closed-form intercept), and the profile file. */
#include "engine/sim_calibrate.h"
#include "common/fileio.h"
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

static void note(sim_calibration *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(sim_calibration *c, const char *fmt, ...) {
    if (c->n_notes >= 6) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(c->notes[c->n_notes++], sizeof c->notes[0], fmt, ap);
    va_end(ap);
}

void sim_calib_data_free(sim_calib_data *d) {
    for (long i = 0; i < d->n; i++) free(d->chunk_ns ? d->chunk_ns[i] : NULL);
    free(d->send_ns); free(d->first_ns); free(d->last_ns); free(d->in_tokens); free(d->out_tokens);
    free(d->chunk_ns); free(d->n_chunks);
    memset(d, 0, sizeof *d);
}

static int grow(sim_calib_data *d, long cap) {
#define G(f) do { void *p = realloc(d->f, (size_t)cap * sizeof *d->f); if (!p) return -1; d->f = p; } while (0)
    G(send_ns); G(first_ns); G(last_ns); G(in_tokens); G(out_tokens); G(chunk_ns); G(n_chunks);
#undef G
    return 0;
}

int sim_calib_load_jsonl(const char *path, sim_calib_data *d, char *err, size_t errlen) {
    memset(d, 0, sizeof *d);
    char *text;
    size_t len;
    if (fileio_read_all(path, &text, &len) < 0) {
        snprintf(err, errlen, "cannot read %s", path);
        return -1;
    }
    long cap = 0, line_no = 0;
    for (char *line = text, *nl; line && *line; line = nl ? nl + 1 : NULL) {
        nl = strchr(line, '\n');
        size_t ll = nl ? (size_t)(nl - line) : strlen(line);
        line_no++;
        if (ll == 0) continue;
        json_error_t je;
        json_t *o = json_loadb(line, ll, 0, &je);
        if (!json_is_object(o)) {
            json_decref(o);
            snprintf(err, errlen, "%s line %ld: not a JSON object (expected per-request JSONL)", path, line_no);
            free(text);
            sim_calib_data_free(d);
            return -1;
        }
        const char *outcome = json_string_value(json_object_get(o, "outcome"));
        json_t *chunks = json_object_get(o, "chunk_ns");
        json_t *in = json_object_get(o, "in_tokens_server");
        if (!json_is_integer(in) || json_integer_value(in) < 0) in = json_object_get(o, "in_tokens");
        if (!outcome || strcmp(outcome, "ok") || json_is_true(json_object_get(o, "warmup")) || !json_is_array(chunks) ||
            json_array_size(chunks) < 1 || !json_is_integer(in) || !json_is_integer(json_object_get(o, "send_ns"))) {
            json_decref(o);
            continue;
        }
        if (d->n == cap && grow(d, cap = cap ? cap * 2 : 1024) < 0) {
            json_decref(o);
            free(text);
            sim_calib_data_free(d);
            snprintf(err, errlen, "out of memory");
            return -1;
        }
        long i = d->n++;
        size_t k = json_array_size(chunks);
        d->chunk_ns[i] = malloc(k * sizeof(int64_t));
        d->n_chunks[i] = d->chunk_ns[i] ? (uint32_t)k : 0;
        for (size_t j = 0; d->chunk_ns[i] && j < k; j++) d->chunk_ns[i][j] = json_integer_value(json_array_get(chunks, j));
        d->send_ns[i] = json_integer_value(json_object_get(o, "send_ns"));
        d->first_ns[i] = d->n_chunks[i] ? d->chunk_ns[i][0] : 0;
        d->last_ns[i] = d->n_chunks[i] ? d->chunk_ns[i][k - 1] : 0;
        d->in_tokens[i] = (int32_t)json_integer_value(in);
        json_t *out = json_object_get(o, "out_tokens");
        d->out_tokens[i] = json_is_integer(out) ? (int32_t)json_integer_value(out) : (int32_t)k;
        json_decref(o);
    }
    free(text);
    if (d->n == 0) {
        snprintf(err, errlen, "%s: no successful requests with chunk times", path);
        return -1;
    }
    return 0;
}

static int cmp_i64(const void *a, const void *b) {
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* Number of sorted values < t (strict) or <= t. */
static long count_below(const int64_t *v, long n, int64_t t, int inclusive) {
    long lo = 0, hi = n;
    while (lo < hi) {
        long mid = (lo + hi) / 2;
        if (v[mid] < t || (inclusive && v[mid] == t)) lo = mid + 1;
        else hi = mid;
    }
    return lo;
}

/* One inter-token gap and the work of the step that produced it: the decoding batch, and the
 * prompts whose first token came in the same gap (their prefill ran in that step). */
typedef struct { float itl_s; float bytes, t_comp, t_comm; } itl_sample;

#define MAX_ITL_SAMPLES 200000

typedef struct {
    int64_t *firsts;            /* sorted first-token times */
    double *in_prefix, *pairs_prefix; /* prefix sums over firsts: prompt tokens, causal pairs */
    int64_t *lasts;             /* sorted last-token times */
    long n;
} timeline_index;

static int tl_build(timeline_index *x, const sim_calib_data *d) {
    long n = d->n;
    x->n = n;
    x->firsts = malloc(sizeof(int64_t) * n);
    x->lasts = malloc(sizeof(int64_t) * n);
    x->in_prefix = malloc(sizeof(double) * (n + 1));
    x->pairs_prefix = malloc(sizeof(double) * (n + 1));
    long *order = malloc(sizeof(long) * n);
    if (!x->firsts || !x->lasts || !x->in_prefix || !x->pairs_prefix || !order) { free(order); return -1; }
    /* sort request indices by first-token time (pack time and index for qsort) */
    int64_t *key = malloc(sizeof(int64_t) * 2 * n);
    if (!key) { free(order); return -1; }
    for (long i = 0; i < n; i++) { key[2 * i] = d->first_ns[i]; key[2 * i + 1] = i; }
    qsort(key, n, 2 * sizeof(int64_t), cmp_i64);
    x->in_prefix[0] = x->pairs_prefix[0] = 0;
    for (long k = 0; k < n; k++) {
        long i = (long)key[2 * k + 1];
        double L = d->in_tokens[i];
        x->firsts[k] = key[2 * k];
        x->in_prefix[k + 1] = x->in_prefix[k] + L;
        x->pairs_prefix[k + 1] = x->pairs_prefix[k] + L * (L + 1) / 2;
        x->lasts[k] = d->last_ns[i];
    }
    free(key);
    free(order);
    qsort(x->lasts, n, sizeof(int64_t), cmp_i64);
    return 0;
}

static void tl_free(timeline_index *x) {
    free(x->firsts); free(x->lasts); free(x->in_prefix); free(x->pairs_prefix);
}

static int fit_itl(cost_model *cm, const sim_params *p, const sim_calib_data *d, double ctx, sim_calibration *c) {
    timeline_index x;
    memset(&x, 0, sizeof x);
    long total = 0;
    for (long i = 0; i < d->n; i++) total += d->n_chunks[i] > 1 ? d->n_chunks[i] - 1 : 0;
    c->n_itl_samples = total;
    c->n_itl_bins = 0;
    long stride = total > MAX_ITL_SAMPLES ? (total + MAX_ITL_SAMPLES - 1) / MAX_ITL_SAMPLES : 1;
    itl_sample *v = malloc(sizeof(itl_sample) * (size_t)(total / stride + 2));
    unsigned char *seen = calloc((size_t)d->n + 2, 1);
    int rc = -1;
    if (!v || !seen || tl_build(&x, d) < 0) goto out;
    if (total < 10) goto out;
    long m = 0, k_all = 0;
    for (long i = 0; i < d->n; i++)
        for (uint32_t k = 1; k < d->n_chunks[i]; k++, k_all++) {
            if (k_all % stride) continue;
            int64_t t0 = d->chunk_ns[i][k - 1], t = d->chunk_ns[i][k];
            /* decoding: first token before t, last at or after t */
            long b = count_below(x.firsts, x.n, t, 0) - count_below(x.lasts, x.n, t, 0);
            if (b < 1) b = 1;
            if (b <= d->n) seen[b] = 1;
            /* prompts that got their first token in (t0, t] were prefilled in this step */
            long a = count_below(x.firsts, x.n, t0, 1), z = count_below(x.firsts, x.n, t, 1);
            double ptoks = x.in_prefix[z] - x.in_prefix[a], pairs = x.pairs_prefix[z] - x.pairs_prefix[a];
            double cap = p->max_num_batched_tokens;
            if (ptoks > cap) { pairs *= cap / ptoks; ptoks = cap; }
            cost_batch cb;
            cost_decode_batch(b, ctx, &cb);
            cb.tokens += (int64_t)ptoks;
            cb.seqs += z - a;
            cb.prefill_pairs = pairs;
            cost_step st;
            cost_step_time(cm, &cb, &st);
            v[m++] = (itl_sample){(float)((t - t0) / 1e9), (float)st.bytes, (float)st.t_compute, (float)st.t_comm};
        }
    for (long b = 1; b <= d->n; b++) c->n_itl_bins += seen[b];
    double bw = cm->gpu.hbm_bytes_per_s, best = INFINITY, best_eff = 0, best_ov = 0;
    /* coarse grid, then a fine one around the best point */
    for (int pass = 0; pass < 2; pass++) {
        double lo = pass ? fmax(0.01, best_eff - 0.01) : 0.02, hi = pass ? fmin(1.0, best_eff + 0.01) : 1.0;
        double step = pass ? 0.0005 : 0.01;
        for (double eff = lo; eff <= hi + 1e-9; eff += step) {
            double sr = 0, sse = 0;
            for (long j = 0; j < m; j++) sr += v[j].itl_s - (fmax(v[j].bytes / (bw * eff), v[j].t_comp) + v[j].t_comm);
            double ov = c->n_itl_bins >= 2 ? fmax(0, sr / m) : cm->f.step_overhead_s;
            for (long j = 0; j < m; j++) {
                double e = v[j].itl_s - (fmax(v[j].bytes / (bw * eff), v[j].t_comp) + v[j].t_comm + ov);
                sse += e * e;
            }
            if (sse < best) { best = sse; best_eff = eff; best_ov = ov; c->itl_rmse_ms = sqrt(sse / m) * 1e3; }
        }
    }
    c->factors.bw_eff = fmin(1.0, best_eff);
    c->fitted_bw = 1;
    if (c->n_itl_bins >= 2) {
        c->factors.step_overhead_s = best_ov;
        c->fitted_overhead = 1;
    }
    rc = 0;
out:
    free(v);
    free(seen);
    tl_free(&x);
    return rc;
}

/* TTFT of a prompt of L tokens alone on the engine: its chunks back to back. */
static double prefill_s(cost_model *cm, int chunk, int L) {
    double t = 0;
    for (int done = 0; done < L;) {
        int n = L - done < chunk ? L - done : chunk;
        cost_batch b;
        memset(&b, 0, sizeof b);
        b.tokens = n;
        b.seqs = done + n == L;
        b.prefill_pairs = (double)n * done + (double)n * (n + 1) / 2;
        b.prefill_keys_read = done;
        cost_step s;
        cost_step_time(cm, &b, &s);
        t += s.t;
        done += n;
    }
    return t;
}

static void fit_ttft(cost_model *cm, const sim_params *p, const sim_calib_data *d, sim_calibration *c) {
    long n = d->n;
    int64_t *sends = malloc(sizeof(int64_t) * n), *lasts = malloc(sizeof(int64_t) * n);
    long *others = malloc(sizeof(long) * n), *pick = malloc(sizeof(long) * n);
    double *pred = malloc(sizeof(double) * n);
    if (!sends || !lasts || !others || !pick || !pred) goto out;
    for (long i = 0; i < n; i++) { sends[i] = d->send_ns[i]; lasts[i] = d->last_ns[i]; }
    qsort(sends, n, sizeof *sends, cmp_i64);
    qsort(lasts, n, sizeof *lasts, cmp_i64);
    long min_others = n;
    for (long i = 0; i < n; i++) {
        others[i] = count_below(sends, n, d->send_ns[i], 1) - count_below(lasts, n, d->send_ns[i], 0) - 1;
        if (others[i] < min_others) min_others = others[i];
    }
    long np = 0;
    for (long i = 0; i < n; i++) if (others[i] <= min_others) pick[np++] = i;
    c->n_ttft_points = np;
    if (np < 3 || min_others > 2) {
        note(c, "TTFT: too few requests at low load (%ld with %ld others in flight): compute_eff kept at %.2f", np,
             min_others, cm->f.compute_eff);
        goto out;
    }
    double mean_l = 0, var_l = 0;
    for (long j = 0; j < np; j++) mean_l += d->in_tokens[pick[j]];
    mean_l /= np;
    for (long j = 0; j < np; j++) var_l += pow(d->in_tokens[pick[j]] - mean_l, 2);
    int slope_fit = sqrt(var_l / np) > 0.05 * mean_l;   /* lengths vary: fit slope and offset */
    int chunk = p->chunked_prefill ? p->max_num_batched_tokens : 1 << 30;
    double keep = cm->f.compute_eff, best = INFINITY, best_eff = keep, best_off = 0, lo_pred = 0, hi_pred = 0;
    cm->f.step_overhead_s = c->factors.step_overhead_s;
    cm->f.bw_eff = c->factors.bw_eff;
    for (int pass = 0; pass < 2; pass++) {
        double lo = pass ? fmax(0.01, best_eff - 0.01) : 0.02, hi = pass ? fmin(1.0, best_eff + 0.01) : 1.0;
        double step = pass ? 0.0005 : 0.01;
        for (double eff = lo; eff <= hi + 1e-9; eff += step) {
            cm->f.compute_eff = eff;
            double sr = 0, sse = 0, sum_pred = 0;
            for (long j = 0; j < np; j++) {
                long i = pick[j];
                pred[j] = prefill_s(cm, chunk, d->in_tokens[i]);
                sum_pred += pred[j];
                sr += (d->first_ns[i] - d->send_ns[i]) / 1e9 - pred[j];
            }
            double off = slope_fit ? sr / np : 0;
            for (long j = 0; j < np; j++) {
                long i = pick[j];
                double e = (d->first_ns[i] - d->send_ns[i]) / 1e9 - pred[j] - off;
                sse += e * e;
            }
            if (!pass && eff < 0.021) lo_pred = sum_pred;
            if (!pass) hi_pred = sum_pred;
            if (sse < best) { best = sse; best_eff = eff; best_off = off; c->ttft_rmse_ms = sqrt(sse / np) * 1e3; }
        }
    }
    cm->f.compute_eff = keep;
    if (fabs(lo_pred - hi_pred) < 0.01 * hi_pred) {
        note(c, "TTFT: prefill is bandwidth-bound at these prompt lengths, compute_eff not identifiable (kept %.2f)", keep);
        goto out;
    }
    c->factors.compute_eff = best_eff;
    c->fitted_compute = 1;
    c->ttft_offset_ms = best_off * 1e3;
    note(c, "TTFT: %ld requests at low load (%s) fit compute_eff %.3f (rmse %.2f ms%s%.2f ms unexplained offset)", np,
         slope_fit ? "prompt lengths vary" : "one prompt length", best_eff, c->ttft_rmse_ms, slope_fit ? ", " : "",
         slope_fit ? best_off * 1e3 : 0);
out:
    free(sends); free(lasts); free(others); free(pick); free(pred);
}

int sim_calibrate(const sim_params *p, const sim_calib_data *d, sim_calibration *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->factors = p->factors;
    out->n_requests = d->n;
    cost_model cm;
    if (sim_params_cost(p, &cm, err, errlen) < 0) return -1;
    double in_mean = 0, out_mean = 0;
    for (long i = 0; i < d->n; i++) { in_mean += d->in_tokens[i]; out_mean += d->out_tokens[i]; }
    in_mean /= d->n;
    out_mean /= d->n;
    /* the ITL fit needs compute_eff (steps with prefill), the TTFT fit needs the overhead: alternate */
    for (int round = 0; round < 3; round++) {
        cm.f = out->factors;
        if (fit_itl(&cm, p, d, in_mean + out_mean / 2, out) < 0) {
            cost_free(&cm);
            snprintf(err, errlen, "too few inter-token gaps to fit (%ld); needs requests with several output tokens",
                     out->n_itl_samples);
            return -1;
        }
        cm.f = out->factors;
        out->n_notes = 0;
        fit_ttft(&cm, p, d, out);
    }
    char ttft_note[256];
    snprintf(ttft_note, sizeof ttft_note, "%s", out->n_notes ? out->notes[0] : "");
    out->n_notes = 0;
    note(out, "ITL: %ld gaps at %ld decoding batch sizes fit bw_eff %.3f, step overhead %.2f ms (rmse %.2f ms)",
         out->n_itl_samples, out->n_itl_bins, out->factors.bw_eff, out->factors.step_overhead_s * 1e3, out->itl_rmse_ms);
    if (!out->fitted_overhead)
        note(out, "only one decoding batch size seen: step overhead kept at %.2f ms (run at several loads to fit it)",
             out->factors.step_overhead_s * 1e3);
    if (*ttft_note) note(out, "%s", ttft_note);
    cost_free(&cm);
    return 0;
}

/* Results JSON only: the median ITL at the run's mean decoding concurrency fixes bw_eff with the
 * overhead held at its current value. */
static int calibrate_aggregate(const sim_params *p, json_t *doc, sim_calibration *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->factors = p->factors;
    double itl = json_number_value(json_object_get(doc, "median_itl_ms")) / 1e3;
    double dur = json_number_value(json_object_get(doc, "duration"));
    double done = json_number_value(json_object_get(doc, "completed"));
    double e2el = json_number_value(json_object_get(doc, "mean_e2el_ms")) / 1e3;
    double ttft = json_number_value(json_object_get(doc, "mean_ttft_ms")) / 1e3;
    double tin = json_number_value(json_object_get(doc, "total_input_tokens"));
    double tout = json_number_value(json_object_get(doc, "total_output_tokens"));
    if (!(itl > 0 && dur > 0 && done > 0 && e2el > 0)) {
        snprintf(err, errlen, "results lack median_itl_ms/duration/completed/mean_e2el_ms; pass --requests-jsonl");
        return -1;
    }
    cost_model cm;
    if (sim_params_cost(p, &cm, err, errlen) < 0) return -1;
    double batch = fmax(1, round(done * (e2el - ttft) / dur));
    double ctx = tin / done + tout / done / 2;
    cost_batch b;
    cost_step s;
    cost_decode_batch((int64_t)batch, ctx, &b);
    cost_step_time(&cm, &b, &s);
    double avail = itl - p->factors.step_overhead_s - s.t_comm;
    cost_free(&cm);
    if (avail <= 0) {
        snprintf(err, errlen, "median ITL %.2f ms is below the step overhead %.2f ms; lower --step-overhead", itl * 1e3,
                 p->factors.step_overhead_s * 1e3);
        return -1;
    }
    c->factors.bw_eff = fmin(1.0, s.bytes / cm.gpu.hbm_bytes_per_s / avail);
    c->fitted_bw = 1;
    c->n_requests = (long)done;
    note(c, "aggregate fit: median ITL %.2f ms at mean decoding concurrency %.0f (context %.0f) gives bw_eff %.3f with overhead %.2f ms held",
         itl * 1e3, batch, ctx, c->factors.bw_eff, p->factors.step_overhead_s * 1e3);
    note(c, "pass the run's per-request JSONL (--requests-jsonl) to fit the overhead and compute_eff too");
    return 0;
}

int sim_calibrate_from_files(const sim_params *p, const char *results_path, const char *requests_jsonl,
                             sim_calibration *out, char *err, size_t errlen) {
    const char *jsonl = requests_jsonl;
    if (!jsonl) {
        json_error_t je;
        json_t *doc = json_load_file(results_path, 0, &je);
        const char *schema = json_string_value(json_object_get(doc, "schema"));
        if (doc && schema && !strncmp(schema, "dsperf.results/", 15)) {
            int rc = calibrate_aggregate(p, doc, out, err, errlen);
            json_decref(doc);
            return rc;
        }
        json_decref(doc);
        jsonl = results_path;   /* not a results document: a per-request JSONL */
    }
    sim_calib_data d;
    if (sim_calib_load_jsonl(jsonl, &d, err, errlen) < 0) return -1;
    int rc = sim_calibrate(p, &d, out, err, errlen);
    sim_calib_data_free(&d);
    return rc;
}

int sim_calibration_write(const sim_calibration *c, const sim_params *p, const char *path, char *err, size_t errlen) {
    const cost_factors *f = &c->factors;
    json_t *notes = json_array();
    for (int i = 0; i < c->n_notes; i++) json_array_append_new(notes, json_string(c->notes[i]));
    json_t *o = json_pack("{s:s,s:{s:s,s:s,s:i,s:i,s:s,s:s},s:{s:f,s:f,s:f,s:f,s:f,s:f},"
                          "s:{s:b,s:b,s:b,s:I,s:I,s:I,s:f,s:f,s:f},s:o}",
        "schema", "dsperf.sim-profile/1",
        "setup", "model", p->model_config[0] ? p->model_config : p->model, "gpu", p->gpu, "tp", p->tp, "ep", p->ep,
        "weight_dtype", p->weight_dtype, "kv_dtype", p->kv_dtype,
        "factors", "bw_eff", f->bw_eff, "compute_eff", f->compute_eff, "link_eff", f->link_eff,
        "step_overhead_s", f->step_overhead_s, "comm_latency_s", f->comm_latency_s, "expert_skew", f->expert_skew,
        "fit", "bw_eff", c->fitted_bw, "step_overhead", c->fitted_overhead, "compute_eff", c->fitted_compute,
        "requests", (json_int_t)c->n_requests, "itl_samples", (json_int_t)c->n_itl_samples,
        "ttft_points", (json_int_t)c->n_ttft_points, "itl_rmse_ms", c->itl_rmse_ms, "ttft_rmse_ms", c->ttft_rmse_ms,
        "ttft_offset_ms", c->ttft_offset_ms,
        "notes", notes);
    char *s = o ? json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(8)) : NULL;
    json_decref(o);
    if (!s) { snprintf(err, errlen, "out of memory"); return -1; }
    size_t n = strlen(s);
    s[n] = '\n';
    int rc = fileio_write_atomic(path, s, n + 1);
    free(s);
    if (rc < 0) { snprintf(err, errlen, "cannot write profile %s", path); return -1; }
    return 0;
}

void sim_calibration_print(FILE *f, const sim_calibration *c, const char *path) {
    fprintf(f, "Calibrated factors (%ld requests):\n", c->n_requests);
    fprintf(f, "  bw_eff          %.3f%s\n", c->factors.bw_eff, c->fitted_bw ? "" : " (kept)");
    fprintf(f, "  compute_eff     %.3f%s\n", c->factors.compute_eff, c->fitted_compute ? "" : " (kept)");
    fprintf(f, "  step_overhead   %.3f ms%s\n", c->factors.step_overhead_s * 1e3, c->fitted_overhead ? "" : " (kept)");
    for (int i = 0; i < c->n_notes; i++) fprintf(f, "  - %s\n", c->notes[i]);
    fprintf(f, "profile written to %s (use: dsperf sim --profile %s ...)\n", path, path);
}
