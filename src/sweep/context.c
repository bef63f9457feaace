/* context — the context-length view of a sweep along prompt or output length (see context.h). */
#include "sweep/context.h"
#include "metrics/metric_table.h"
#include "sweep/sweep.h"
#include "plan/plan.h"
#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

static json_t *jnum(double x) { return isfinite(x) ? json_real(x) : json_null(); }
static double num(const json_t *o, const char *k) {
    const json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : NAN;
}
static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

/* ---- ladders, labels, datasets ---- */

int sweep_parse_length_ladder(const char *spec, double *out, size_t max, size_t *n, char *err, size_t errlen) {
    char buf[1024];
    size_t j = 0;
    /* numbers with a k suffix become plain integers; everything else is copied */
    for (size_t i = 0; spec[i] && j + 32 < sizeof buf;) {
        if (!isdigit((unsigned char)spec[i])) { buf[j++] = spec[i++]; continue; }
        size_t k = i;
        while (isdigit((unsigned char)spec[k])) k++;
        if (spec[k] == '.' && isdigit((unsigned char)spec[k + 1])) for (k++; isdigit((unsigned char)spec[k]); k++) {}
        double v = strtod(spec + i, NULL);
        bool kilo = spec[k] == 'k' || spec[k] == 'K';
        bool after_x = i > 0 && spec[i - 1] == 'x';     /* "x2" is a factor, never a length */
        if (kilo && !after_x) { v *= 1024; k++; }
        j += (size_t)snprintf(buf + j, sizeof buf - j, after_x ? "%g" : "%.0f", v);
        i = k;
    }
    buf[j] = 0;
    if (sweep_parse_ladder(buf, false, out, max, n, err, errlen) < 0) return -1;
    return 0;
}

void sweep_length_label(double t, char *buf, size_t len) {
    if (t >= 1024 && fmod(t, 512) == 0) snprintf(buf, len, "%gk", t / 1024);
    else snprintf(buf, len, "%.0f", t);
}

bool sweep_axis_is_length(const char *axis) {
    return axis && (!strcmp(axis, "input_len") || !strcmp(axis, "output_len"));
}

int sweep_length_dataset(const char *base, bool input_axis, long len, long other, char *out, size_t outlen, char *err,
                         size_t errlen) {
    double in = 1024, outl = 128, range = 0;
    if (base) {
        if (strncmp(base, "random:", 7) && strcmp(base, "random")) {
            snprintf(err, errlen, "a length ladder sends prompts of exact length, so --dataset must be random:... (got "
                     "'%s'); drop --dataset or give random:in=N,out=M", base);
            return -1;
        }
        const char *p = strchr(base, ':');
        char copy[256];
        snprintf(copy, sizeof copy, "%s", p ? p + 1 : "");
        char *save = NULL;
        for (char *t = strtok_r(copy, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
            char *eq = strchr(t, '='), *end = NULL;
            double v = eq ? strtod(eq + 1, &end) : NAN;
            if (!eq || !end || *end || !(v >= 0)) { snprintf(err, errlen, "bad dataset '%s': expected random:in=N,out=M,range=F", base); return -1; }
            *eq = 0;
            if (!strcmp(t, "in")) in = v;
            else if (!strcmp(t, "out")) outl = v;
            else if (!strcmp(t, "range")) range = v;
            else { snprintf(err, errlen, "bad dataset '%s': unknown key '%s'", base, t); return -1; }
        }
    }
    if (input_axis) { in = (double)len; if (other > 0) outl = (double)other; }
    else { outl = (double)len; if (other > 0) in = (double)other; }
    if (range > 0) snprintf(out, outlen, "random:in=%.0f,out=%.0f,range=%g", in, outl, range);
    else snprintf(out, outlen, "random:in=%.0f,out=%.0f", in, outl);
    return 0;
}

/* ---- what one length measured ---- */

#define CTX_NFIELDS 15

typedef struct {
    double load;                         /* the axis value */
    double in_len, out_len, ctx;         /* prompt, output, mean decode context (prompt + output / 2) */
    int n;                               /* measured repeats */
    double completed, failed, rejected;
    double ttft50, ttft99, tpot50, tpot99, out_tps, req_tps, e2el_mean, ttft_mean;
    double dram_mean, dram_max, dram_hi_s;   /* GPM DRAM bandwidth %, mean/max over GPUs; longest run >= 92% */
    double kv_max, kv_mean, preempt, run_mean, run_max;
    bool have_dram, have_kv;
    int cnt[CTX_NFIELDS];                /* repeats that had each field (mean fields divide by it) */
} ctx_level;


/* Prompts the server refused outright: HTTP 400 (vLLM, the simulator), 413 (body too large), 422. */
static double rejected_of(const json_t *res) {
    const json_t *st = get(get(res, "errors"), "http_status");
    double r = 0;
    static const char *const codes[] = { "400", "413", "422" };
    for (int i = 0; i < 3; i++) if (json_is_number(get(st, codes[i]))) r += json_number_value(get(st, codes[i]));
    return r;
}

/* Longest stretch (seconds) a series stays at or above thr. */
static double longest_at_least(const json_t *t, const json_t *v, double thr) {
    double best = 0, start = NAN;
    size_t n = json_array_size(v) < json_array_size(t) ? json_array_size(v) : json_array_size(t);
    for (size_t i = 0; i < n; i++) {
        const json_t *x = json_array_get(v, i);
        double ts = json_number_value(json_array_get(t, i));
        if (json_is_number(x) && json_number_value(x) >= thr) {
            if (isnan(start)) start = ts;
            if (ts - start > best) best = ts - start;
        } else if (json_is_number(x)) {
            start = NAN;
        }
    }
    return best;
}

static void series_stats(const json_t *arr, double *mean, double *max) {
    double s = 0, m = NAN;
    size_t n = 0, i;
    json_t *v;
    json_array_foreach(arr, i, v) {
        if (!json_is_number(v)) continue;
        double x = json_number_value(v);
        s += x;
        n++;
        if (!(x <= m)) m = x;
    }
    *mean = n ? s / n : NAN;
    *max = m;
}

static void telemetry_of(const json_t *res, ctx_level *L) {
    const json_t *tel = get(res, "telemetry");
    size_t i;
    json_t *g;
    double sum = 0;
    int ng = 0;
    json_array_foreach(get(tel, "gpu"), i, g) {
        const json_t *s = get(g, "series");
        double m, x;
        series_stats(get(s, "dram_bw_util_pct"), &m, &x);
        if (!isfinite(m)) continue;
        sum += m;
        ng++;
        if (!(x <= L->dram_max)) L->dram_max = x;
        double hi = longest_at_least(get(s, "t_s"), get(s, "dram_bw_util_pct"), 92.0);
        if (!(hi <= L->dram_hi_s)) L->dram_hi_s = hi;
    }
    if (ng) { L->dram_mean = sum / ng; L->have_dram = true; }
    const json_t *srv = get(get(tel, "server"), "series");
    if (get(srv, "kv_usage_pct")) {
        series_stats(get(srv, "kv_usage_pct"), &L->kv_mean, &L->kv_max);
        L->have_kv = isfinite(L->kv_max);
    }
    double pre = 0, dummy;
    size_t k;
    json_t *v;
    bool any = false;
    json_array_foreach(get(srv, "preemptions"), k, v) if (json_is_number(v)) { pre += json_number_value(v); any = true; }
    if (!any && json_is_number(get(get(res, "engine"), "preemptions_total"))) { pre = num(get(res, "engine"), "preemptions_total"); any = true; }
    L->preempt = any ? pre : NAN;
    /* running: the mean while anything runs (the ramp-down after the last request is not load) */
    double rs = 0;
    size_t rn = 0;
    L->run_max = NAN;
    json_array_foreach(get(srv, "running"), k, v) {
        if (!json_is_number(v) || json_number_value(v) <= 0) continue;
        rs += json_number_value(v);
        rn++;
    }
    series_stats(get(srv, "running"), &dummy, &L->run_max);
    L->run_mean = rn ? rs / rn : NAN;
}

/* The fields summed over repeats, in one order: counts, then means. */
static void fields(ctx_level *L, double **f) {
    double *v[CTX_NFIELDS] = { &L->completed, &L->failed, &L->rejected, &L->preempt, &L->ttft50, &L->ttft99, &L->tpot50,
                               &L->tpot99, &L->out_tps, &L->req_tps, &L->e2el_mean, &L->ttft_mean, &L->dram_mean,
                               &L->kv_mean, &L->run_mean };
    memcpy(f, v, sizeof v);
}
static const bool is_count[CTX_NFIELDS] = { true, true, true, true };

/* Adds one repeat's numbers (means over repeats are taken at the end). */
static void add_repeat(ctx_level *L, const json_t *lv) {
    const json_t *res = get(lv, "results");
    ctx_level r = { .dram_max = NAN, .dram_hi_s = NAN, .kv_max = NAN, .kv_mean = NAN, .dram_mean = NAN };
    r.completed = num(res, "completed");
    r.failed = num(res, "failed");
    r.rejected = rejected_of(res);
    r.ttft50 = num(res, METRIC(median_ttft_ms));
    r.ttft99 = num(res, METRIC(p99_ttft_ms));
    r.tpot50 = num(res, METRIC(median_tpot_ms));
    r.tpot99 = num(res, METRIC(p99_tpot_ms));
    r.out_tps = num(res, METRIC(output_throughput));
    r.req_tps = num(res, METRIC(request_throughput));
    r.e2el_mean = num(res, METRIC(mean_e2el_ms));
    r.ttft_mean = num(res, METRIC(mean_ttft_ms));
    telemetry_of(res, &r);
    double *dst[CTX_NFIELDS], *src[CTX_NFIELDS];
    fields(L, dst);
    fields(&r, src);
    for (int i = 0; i < CTX_NFIELDS; i++) {
        if (!isfinite(*src[i])) continue;
        *dst[i] = isfinite(*dst[i]) ? *dst[i] + *src[i] : *src[i];
        L->cnt[i]++;
    }
    if (!(r.dram_max <= L->dram_max)) L->dram_max = r.dram_max;
    if (!(r.dram_hi_s <= L->dram_hi_s)) L->dram_hi_s = r.dram_hi_s;
    if (!(r.kv_max <= L->kv_max)) L->kv_max = r.kv_max;
    if (!(r.run_max <= L->run_max)) L->run_max = r.run_max;
    L->have_dram |= r.have_dram;
    L->have_kv |= r.have_kv;
    L->n++;
}

static void finish_level(ctx_level *L) {
    double *f[CTX_NFIELDS];
    fields(L, f);
    /* counts stay sums over the repeats ("3 preemptions" means 3 happened); the rest are means
     * over the repeats that had them */
    for (int i = 0; i < CTX_NFIELDS; i++) if (!is_count[i] && L->cnt[i] > 0) *f[i] /= L->cnt[i];
}

/* ---- the prediction: dsperf plan's roofline of the resolved deployment ---- */

static void set_key(sim_params *p, const char *key, const json_t *v) {
    char val[64], err[128];
    if (json_is_string(v)) snprintf(val, sizeof val, "%s", json_string_value(v));
    else if (json_is_boolean(v)) snprintf(val, sizeof val, "%s", json_is_true(v) ? "on" : "off");
    else if (json_is_integer(v)) snprintf(val, sizeof val, "%lld", (long long)json_integer_value(v));
    else if (json_is_real(v)) snprintf(val, sizeof val, "%.17g", json_real_value(v));
    else return;
    sim_params_set(p, key, val, err, sizeof err);
}

/* The simulator's own settings when the run was simulated (config.sim, or what `serve --engine sim`
 * said at preflight), else the deployment resolved from what the run recorded and the flags. */
static int predict_params(const json_t *res, const deploy_flags *flags, sim_params *p, double *scale, char *src,
                          size_t srclen, char *why, size_t whylen) {
    sim_default_params(p);
    *scale = 1;
    const json_t *sim = get(get(res, "config"), "sim");
    if (json_is_object(sim) && !(flags && (flags->model || flags->gpu || flags->model_config))) {
        static const char *const keys[][2] = {
            {"model", "model"}, {"gpu", "gpu"}, {"tp", "tp"}, {"ep", "ep"}, {"weight_dtype", "weight-dtype"},
            {"kv_dtype", "kv-dtype"}, {"max_num_seqs", "max-num-seqs"}, {"max_num_batched_tokens", "max-num-batched-tokens"},
            {"block_size", "block-size"}, {"gpu_memory_utilization", "gpu-memory-utilization"},
            {"chunked_prefill", "chunked-prefill"}, {"max_model_len", "max-model-len"}, {"reserved_bytes", "reserved-mem"},
            {"num_gpu_blocks", "num-gpu-blocks"} };
        for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
            const json_t *v = get(sim, keys[i][0]);
            if (v && !(json_is_integer(v) && json_integer_value(v) == 0)) set_key(p, keys[i][1], v);
        }
        char ae[128];   /* a model given whole (a profile calibrated on a GGUF): kept as the catalog's otherwise */
        if (json_is_object(get(sim, "architecture"))) sim_params_set_arch(p, get(sim, "architecture"), "config.sim.architecture", "sim", ae, sizeof ae);
        const json_t *eng = get(res, "engine"), *f = get(eng, "factors");
        /* the blocks the engine really had: exact capacity, whatever the memory arithmetic */
        if (json_is_integer(get(eng, "kv_blocks")) && json_integer_value(get(eng, "kv_blocks")) > 0)
            p->num_gpu_blocks = (long long)json_integer_value(get(eng, "kv_blocks"));
        /* every factor and the engine profile the run had: the prediction steps on the same cost model */
        if (json_is_object(f)) sim_params_apply_factors(p, f, json_string_value(get(eng, "engine_profile")));
        snprintf(src, srclen, "the simulated deployment (%s on %s, tp %d)", p->model, p->gpu, p->tp);
        return 0;
    }
    deploy d;
    char err[256];
    if (deploy_resolve(res, flags, &d, err, sizeof err) < 0) { snprintf(why, whylen, "%s", err); return -1; }
    if (!deploy_has_model(&d) || !deploy_has_gpu(&d)) {
        snprintf(why, whylen, "the model or GPU of the deployment is unknown (give --model and --gpu to report or diagnose)");
        return -1;
    }
    char e2[256];
    if (flags && flags->model_config) snprintf(p->model_config, sizeof p->model_config, "%s", flags->model_config);
    else if (sim_params_set(p, "model", d.model, e2, sizeof e2) != 0) {
        snprintf(why, whylen, "model '%s' is not in the simulator's catalog", d.model);
        return -1;
    }
    snprintf(p->gpu, sizeof p->gpu, "%s", d.gpu);
    p->tp = d.tp > 0 ? d.tp : 1;
    snprintf(p->weight_dtype, sizeof p->weight_dtype, "%s", model_dtype_name(d.weight_dtype));
    snprintf(p->kv_dtype, sizeof p->kv_dtype, "%s", model_dtype_name(d.kv_dtype));
    if (d.max_num_seqs > 0) p->max_num_seqs = d.max_num_seqs;
    if (d.max_num_batched_tokens > 0) { p->max_num_batched_tokens = d.max_num_batched_tokens; p->max_num_batched_tokens_set = true; }
    if (d.chunked_prefill >= 0 && d.chunked_prefill_s.known) p->chunked_prefill = d.chunked_prefill == 1;
    if (d.context_per_seq > 0) p->max_model_len = d.context_per_seq;
    if (d.gpu_memory_utilization > 0) p->gpu_memory_utilization = d.gpu_memory_utilization;
    if (d.kv_capacity_tokens > 0) p->num_gpu_blocks = (long long)(d.kv_capacity_tokens / p->block_size);
    deploy_describe(&d, src, srclen);
    if (d.time_scale > 0 && d.time_scale != 1) {
        /* serve --speedup K: the client sees the engine's times divided by K */
        *scale = d.time_scale;
        size_t n = strlen(src);
        snprintf(src + n, srclen - n, "; its clock runs %gx the client's, so the predictions are divided by %g", *scale, *scale);
    }
    return 0;
}

typedef struct {
    bool ok;
    double ttft_ms, tpot_ms, decode_tps_per_seq, kv_read_bytes_per_token, kv_share_of_step;
    long long seqs_fit, kv_tokens;
    int max_model_len;
    bool fits, rejected;
    double batch;
} ctx_pred;

static void predict(const sim_params *p, const ctx_level *L, double batch, double scale, ctx_pred *o) {
    memset(o, 0, sizeof *o);
    plan_inputs in;
    plan_default_inputs(&in);
    in.target = *p;
    in.prompt_tokens = (int)L->in_len;
    in.output_tokens = (int)(L->out_len > 0 ? L->out_len : 1);
    in.batch = batch >= 1 ? (int)llround(batch) : 1;
    plan_result r;
    char err[256];
    if (plan_compute(&in, &r, err, sizeof err) < 0 || !r.fits) return;
    cost_model c;
    int mml = p->max_model_len;
    if (mml <= 0 && sim_params_cost(p, &c, err, sizeof err) == 0) { mml = c.arch.max_position; cost_free(&c); }
    o->ok = true;
    o->batch = in.batch;
    o->ttft_ms = r.prefill_s * 1e3 / scale;
    o->tpot_ms = r.decode.t * 1e3 / scale;
    o->decode_tps_per_seq = scale / r.decode.t;
    o->kv_read_bytes_per_token = r.context * r.kv_bytes_per_token;
    o->kv_share_of_step = r.decode.bytes > 0 ? r.decode.kv_bytes / r.decode.bytes : NAN;
    o->seqs_fit = r.seqs_at_context_len;
    o->kv_tokens = r.kv_tokens;
    o->max_model_len = mml;
    o->rejected = (mml > 0 && L->in_len + L->out_len > mml) || r.seqs_at_context_len < 1;
    o->fits = !o->rejected && r.seqs_at_context_len >= in.batch;
    if (o->rejected) o->ttft_ms = o->tpot_ms = o->decode_tps_per_seq = NAN;   /* never served */
}

/* ---- fits ---- */

/* Least squares y = a + b x + c x^2 (x in thousands of tokens for conditioning). */
static bool quadfit(const double *x, const double *y, size_t n, double *a, double *b, double *c) {
    double S[5] = {0}, T[3] = {0};
    for (size_t i = 0; i < n; i++) {
        double p = 1;
        for (int k = 0; k < 5; k++) { S[k] += p; if (k < 3) T[k] += p * y[i]; p *= x[i]; }
    }
    double M[3][4] = { {S[0], S[1], S[2], T[0]}, {S[1], S[2], S[3], T[1]}, {S[2], S[3], S[4], T[2]} };
    for (int col = 0; col < 3; col++) {
        int piv = col;
        for (int r = col + 1; r < 3; r++) if (fabs(M[r][col]) > fabs(M[piv][col])) piv = r;
        if (fabs(M[piv][col]) < 1e-12) return false;
        for (int k = 0; k < 4; k++) { double t = M[col][k]; M[col][k] = M[piv][k]; M[piv][k] = t; }
        for (int r = 0; r < 3; r++) {
            if (r == col) continue;
            double f = M[r][col] / M[col][col];
            for (int k = col; k < 4; k++) M[r][k] -= f * M[col][k];
        }
    }
    *a = M[0][3] / M[0][0];
    *b = M[1][3] / M[1][1];
    *c = M[2][3] / M[2][2];
    return true;
}

/* TTFT against prompt length: a + b L + c L^2; the quadratic (attention) term equals the linear one
 * at L = b / c. Only for a prompt-length sweep. */
static json_t *prefill_json(const ctx_level *L, size_t n, bool input_axis) {
    if (!input_axis) return json_pack("{s:s}", "note", "prompt length is fixed in an output-length sweep");
    double x[64], y[64];
    size_t k = 0;
    for (size_t i = 0; i < n && k < 64; i++)
        if (isfinite(L[i].ttft50) && L[i].completed > 0) { x[k] = L[i].in_len / 1000; y[k] = L[i].ttft50; k++; }
    if (k < CTX_QUADRATIC_MIN_LEVELS)
        return json_pack("{s:s}", "note", "fewer than 3 lengths with a TTFT: no fit of TTFT against prompt length");
    double a, b, c;
    if (!quadfit(x, y, k, &a, &b, &c))
        return json_pack("{s:s}", "note", "TTFT against prompt length could not be fitted (lengths too close)");
    double lq = b > 0 && c > 0 ? b / c * 1000 : NAN;
    const char *note = !(c > 0) ? "no quadratic growth measured: TTFT is linear in the prompt over this ladder"
                     : !(b > 0) ? "TTFT grows quadratically over the whole ladder"
                     : lq > L[n - 1].in_len ? "the quadratic (attention) term stays below the linear one up to the longest prompt"
                     : "beyond quadratic_from_tokens the attention term (quadratic) costs more than the rest of prefill";
    return json_pack("{s:s,s:o,s:o,s:o,s:o,s:s}", "model", "median TTFT ms = a + b x L/1000 + c x (L/1000)^2 (least squares)",
                     "a_ms", jnum(a), "b_ms_per_1k_tokens", jnum(b), "c_ms_per_1k_tokens2", jnum(c),
                     "quadratic_from_tokens", jnum(lq), "note", note);
}

/* TPOT against context: d + e C; each sequence's step reads its whole context's KV, so e is the KV
 * read per 1k tokens of context, and batch x KV bytes per token / e the bandwidth it was read at. */
static json_t *decode_json(const ctx_level *L, size_t n, double kv_bytes_per_token, double batch, double scale,
                           double hbm_bytes_per_s) {
    double x[SWEEP_MAX_LEVELS], y[SWEEP_MAX_LEVELS];
    size_t k = 0;
    for (size_t i = 0; i < n && k < SWEEP_MAX_LEVELS; i++)
        if (isfinite(L[i].tpot50) && L[i].completed > 0) { x[k] = L[i].ctx / 1000; y[k] = L[i].tpot50; k++; }
    if (k < 2) return json_pack("{s:s}", "note", "fewer than 2 lengths with a TPOT: no slope against context");
    double slope, icpt, sse, t;
    sweep_linfit(x, y, k, &slope, &icpt, &sse, &t);
    /* e is in the client's ms; the engine's is e x scale (serve --speedup) */
    double bw = slope > 0 && kv_bytes_per_token > 0 && batch >= 1 ? batch * kv_bytes_per_token * 1000 / (slope * scale / 1e3) : NAN;
    const char *note = "batch x KV bytes per token x 1000 / e: the bandwidth the added context was read at "
                       "(prefill of other requests in the same steps adds to e at higher load)";
    if (isfinite(bw) && hbm_bytes_per_s > 0 && bw > hbm_bytes_per_s) {
        /* faster than the GPU's HBM: the slope is not the KV read alone (noise, or a clock the
         * deployment did not state) — no number that breaks physics */
        bw = NAN;
        note = "the slope would put the KV read beyond the GPU's HBM bandwidth: TPOT's growth here is not the KV "
               "read alone (noisy lengths, or an engine clock the run did not state), so no bandwidth is given";
    }
    return json_pack("{s:s,s:o,s:o,s:o,s:o,s:s}", "model", "median TPOT ms = d + e x context/1000 (least squares)",
                     "d_ms", jnum(icpt), "e_ms_per_1k_context", jnum(slope), "batch", jnum(batch),
                     "kv_read_bytes_per_s_implied", jnum(bw), "note", note);
}

/* Why a length does not fit, or NULL. */
static const char *no_fit(const ctx_level *L, double offered, char *buf, size_t len) {
    if (L->rejected > 0) { snprintf(buf, len, "%.0f prompt%s rejected by the server", L->rejected, L->rejected == 1 ? "" : "s"); return buf; }
    if (L->preempt > 0) { snprintf(buf, len, "%.0f preemption%s: the KV cache ran out", L->preempt, L->preempt == 1 ? "" : "s"); return buf; }
    if (L->kv_max >= CTX_KV_FULL_PCT && isfinite(offered) && L->run_max < offered) {
        snprintf(buf, len, "KV cache full (%.0f%%) with %.0f of %.0f requests running: admission waits for blocks", L->kv_max,
                 L->run_max, offered);
        return buf;
    }
    return NULL;
}

/* ---- the section ---- */

static json_t *level_json(const ctx_level *L, const ctx_level *prev, const ctx_pred *pr, const char *why, bool input_axis,
                          double kvb) {
    json_t *o = json_object();
    json_object_set_new(o, "input_len", jnum(L->in_len));
    json_object_set_new(o, "output_len", jnum(L->out_len));
    json_object_set_new(o, "context_mean", jnum(L->ctx));
    json_object_set_new(o, "repeats", json_integer(L->n));
    json_object_set_new(o, "completed", jnum(L->completed));
    json_object_set_new(o, "failed", jnum(L->failed));
    json_object_set_new(o, "rejected", jnum(L->rejected));
    json_object_set_new(o, METRIC(median_ttft_ms), jnum(L->ttft50));
    json_object_set_new(o, METRIC(p99_ttft_ms), jnum(L->ttft99));
    json_object_set_new(o, "ttft_ms_per_1k_prompt", jnum(input_axis && L->in_len > 0 ? L->ttft50 / (L->in_len / 1000) : NAN));
    double marg = prev && input_axis && L->in_len > prev->in_len ? (L->ttft50 - prev->ttft50) / ((L->in_len - prev->in_len) / 1000) : NAN;
    json_object_set_new(o, "ttft_marginal_ms_per_1k", jnum(marg));
    json_object_set_new(o, METRIC(median_tpot_ms), jnum(L->tpot50));
    json_object_set_new(o, METRIC(p99_tpot_ms), jnum(L->tpot99));
    json_object_set_new(o, "decode_tok_s_per_seq", jnum(L->tpot50 > 0 ? 1000 / L->tpot50 : NAN));
    json_object_set_new(o, METRIC(output_throughput), jnum(L->out_tps));
    json_object_set_new(o, "kv_read_bytes_per_token", jnum(kvb > 0 ? L->ctx * kvb : NAN));
    json_object_set_new(o, "dram_bw_util_pct_mean", L->have_dram ? jnum(L->dram_mean) : json_null());
    json_object_set_new(o, "dram_bw_util_pct_max", L->have_dram ? jnum(L->dram_max) : json_null());
    json_object_set_new(o, "dram_bw_above_92pct_s", L->have_dram ? jnum(L->dram_hi_s) : json_null());
    json_object_set_new(o, "kv_usage_pct_max", L->have_kv ? jnum(L->kv_max) : json_null());
    json_object_set_new(o, "kv_usage_pct_mean", L->have_kv ? jnum(L->kv_mean) : json_null());
    json_object_set_new(o, "preemptions", jnum(L->preempt));
    json_object_set_new(o, "running_mean", jnum(L->run_mean));
    json_object_set_new(o, "fits", json_boolean(why == NULL));
    json_object_set_new(o, "why_not", why ? json_string(why) : json_null());
    if (pr && pr->ok) {
        json_object_set_new(o, "predicted", json_pack("{s:o,s:o,s:o,s:o,s:o,s:I,s:I,s:i,s:b,s:b,s:o}",
            "ttft_ms", jnum(pr->ttft_ms), "tpot_ms", jnum(pr->tpot_ms), "decode_tok_s_per_seq", jnum(pr->decode_tps_per_seq),
            "kv_read_bytes_per_token", jnum(pr->kv_read_bytes_per_token), "kv_share_of_step_bytes", jnum(pr->kv_share_of_step),
            "seqs_fit", (json_int_t)pr->seqs_fit, "kv_tokens", (json_int_t)pr->kv_tokens, "max_model_len", pr->max_model_len,
            "fits", pr->fits, "rejected", pr->rejected, "batch", jnum(pr->batch)));
    } else {
        json_object_set_new(o, "predicted", json_null());
    }
    return o;
}

/* The load that was held fixed: concurrency, else the rate. */
static void fixed_load(const json_t *cfg, double *conc, double *rate) {
    *conc = num(cfg, "concurrency");
    *rate = num(cfg, "rate_per_s");
}

int sweep_context_analyse(json_t *doc, const deploy_flags *flags) {
    const json_t *levels = get(doc, "levels");
    if (!json_is_array(levels)) return -1;
    const char *axis = json_string_value(get(doc, "axis"));
    if (!sweep_axis_is_length(axis)) { json_object_del(doc, "context"); return 0; }
    bool input_axis = !strcmp(axis, "input_len");
    ctx_level L[SWEEP_MAX_LEVELS];
    size_t n = 0, i;
    json_t *lv;
    const json_t *first_res = NULL;
    json_array_foreach(levels, i, lv) {
        if (!sweep_level_measured(lv)) continue;   /* a level not measured says nothing */
        double load = num(lv, "load");
        if (!n || L[n - 1].load != load) {       /* repeats of one length are consecutive */
            if (n == SWEEP_MAX_LEVELS) break;
            ctx_level *x = &L[n++];
            memset(x, 0, sizeof *x);
            x->load = load;
            x->in_len = num(lv, "input_len");
            x->out_len = num(lv, "output_len");
            double *nan_fields[] = { &x->completed, &x->failed, &x->rejected, &x->ttft50, &x->ttft99, &x->tpot50,
                                     &x->tpot99, &x->out_tps, &x->req_tps, &x->e2el_mean, &x->ttft_mean, &x->dram_mean,
                                     &x->dram_max, &x->dram_hi_s, &x->kv_max, &x->kv_mean, &x->preempt, &x->run_mean,
                                     &x->run_max };
            for (size_t k = 0; k < sizeof nan_fields / sizeof nan_fields[0]; k++) *nan_fields[k] = NAN;
        }
        if (!first_res) first_res = get(lv, "results");
        add_repeat(&L[n - 1], lv);
    }
    for (size_t k = 0; k < n; k++) {
        finish_level(&L[k]);
        L[k].ctx = L[k].in_len + L[k].out_len / 2;
    }
    double conc, rate;
    fixed_load(get(doc, "config"), &conc, &rate);
    /* the prediction: one deployment for the whole sweep (the first measured level's) */
    sim_params p;
    char src[320] = "", why[320] = "";
    double scale = 1;
    bool can_predict = first_res && predict_params(first_res, flags, &p, &scale, src, sizeof src, why, sizeof why) == 0;
    if (!first_res) snprintf(why, sizeof why, "no level was measured");
    double kvb = NAN, hbm = NAN;
    cost_model cm;
    char err[256];
    if (can_predict && sim_params_cost(&p, &cm, err, sizeof err) == 0) {
        kvb = cm.kv_bytes_per_token;
        hbm = cm.gpu.hbm_bytes_per_s;
        cost_free(&cm);
    }
    json_t *arr = json_array();
    long stop_at = -1;
    const char *stop_why = NULL;
    char whybuf[SWEEP_MAX_LEVELS][200];
    double batch_used = NAN;
    for (size_t k = 0; k < n; k++) {
        double batch = isfinite(conc) ? conc : L[k].req_tps * (L[k].e2el_mean - L[k].ttft_mean) / 1000;
        if (isfinite(conc) && can_predict && p.max_num_seqs > 0 && batch > p.max_num_seqs) batch = p.max_num_seqs;
        if (!isfinite(batch_used)) batch_used = batch;
        ctx_pred pr;
        if (can_predict) predict(&p, &L[k], batch, scale, &pr);
        const char *w = no_fit(&L[k], conc, whybuf[k], sizeof whybuf[k]);
        if (w && stop_at < 0) { stop_at = (long)k; stop_why = w; }
        json_array_append_new(arr, level_json(&L[k], k ? &L[k - 1] : NULL, can_predict ? &pr : NULL, w, input_axis, kvb));
    }
    json_t *c = json_object();
    json_object_set_new(c, "axis", json_string(axis));
    json_object_set_new(c, "concurrency", jnum(conc));
    json_object_set_new(c, "rate_per_s", jnum(rate));
    json_object_set_new(c, "kv_bytes_per_token", jnum(kvb));
    json_object_set_new(c, "levels", arr);
    json_object_set_new(c, "prefill", prefill_json(L, n, input_axis));
    json_object_set_new(c, "decode", decode_json(L, n, kvb, batch_used, scale, hbm));
    json_object_set_new(c, "stops_fitting", stop_at < 0 ? json_null() : json_pack("{s:o,s:o,s:s}", "input_len",
        jnum(L[stop_at].in_len), "output_len", jnum(L[stop_at].out_len), "why", stop_why));
    json_object_set_new(c, "prediction", can_predict
        ? json_pack("{s:s,s:f,s:s,s:s}", "deployment", src, "time_scale", scale, "method", "dsperf plan's roofline per length: TTFT = the prompt's "
                    "prefill alone on the engine (chunked as configured); TPOT = one decode step at the offered batch "
                    "(concurrency, capped by max_num_seqs; open loop: the measured decoding concurrency) and mean context "
                    "prompt + output/2; fits = that batch of sequences of prompt + output tokens fits the KV cache",
                    "note", "at a concurrency above 1, TTFT adds queueing and TPOT other requests' prefill chunks: the "
                    "roofline is then a floor")
        : json_pack("{s:s}", "why", why));
    json_object_set_new(doc, "context", c);
    return 0;
}

/* ---- terminal ---- */

static void cell(char *buf, size_t len, double v, const char *f) {
    if (isfinite(v)) snprintf(buf, len, f, v);
    else snprintf(buf, len, "-");
}

void sweep_context_print(FILE *f, const json_t *doc) {
    const json_t *c = get(doc, "context");
    if (!json_is_object(c)) return;
    bool input_axis = !strcmp(json_string_value(get(c, "axis")) ? json_string_value(get(c, "axis")) : "", "input_len");
    const json_t *pred = get(c, "prediction");
    bool have_pred = json_is_string(get(pred, "deployment"));
    fprintf(f, " CONTEXT %s at %s: TTFT and TPOT measured%s\n", input_axis ? "prompt length" : "output length",
            isfinite(num(c, "concurrency")) ? "fixed concurrency" : "fixed rate",
            have_pred ? " | roofline predicted (dsperf plan)" : "");
    fprintf(f, "  %-6s %-6s %14s %7s %13s %7s %5s %5s %5s  %s\n", "prompt", "output", "TTFT p50/pred", "ms/1k",
            "TPOT p50/pred", "tok/s", "KV%", "DRAM%", "pre", "fits/pred");
    size_t i;
    json_t *lv;
    json_array_foreach(get(c, "levels"), i, lv) {
        char in[16], out[16], t[32], t1[16], t2[16], m[16], tp[32], p1[16], p2[16], tk[16], kv[16], dr[16], pre[16], fit[24];
        sweep_length_label(num(lv, "input_len"), in, sizeof in);
        sweep_length_label(num(lv, "output_len"), out, sizeof out);
        const json_t *pr = get(lv, "predicted");
        cell(t1, sizeof t1, num(lv, METRIC(median_ttft_ms)), "%.0f");
        cell(t2, sizeof t2, num(pr, "ttft_ms"), "%.0f");
        snprintf(t, sizeof t, "%s/%s", t1, t2);
        cell(m, sizeof m, num(lv, "ttft_ms_per_1k_prompt"), "%.1f");
        cell(p1, sizeof p1, num(lv, METRIC(median_tpot_ms)), "%.2f");
        cell(p2, sizeof p2, num(pr, "tpot_ms"), "%.2f");
        snprintf(tp, sizeof tp, "%s/%s", p1, p2);
        cell(tk, sizeof tk, num(lv, "decode_tok_s_per_seq"), "%.0f");
        cell(kv, sizeof kv, num(lv, "kv_usage_pct_max"), "%.0f");
        cell(dr, sizeof dr, num(lv, "dram_bw_util_pct_mean"), "%.0f");
        cell(pre, sizeof pre, num(lv, "preemptions"), "%.0f");
        snprintf(fit, sizeof fit, "%s/%s", json_is_true(get(lv, "fits")) ? "yes" : "NO",
                 !json_is_object(pr) ? "-" : json_is_true(get(pr, "fits")) ? "yes" : "no");
        fprintf(f, "  %-6s %-6s %14s %7s %13s %7s %5s %5s %5s  %s\n", in, out, t, m, tp, tk, kv, dr, pre, fit);
    }
    json_array_foreach(get(c, "levels"), i, lv) {
        const char *why = json_string_value(get(lv, "why_not"));
        const json_t *pr = get(lv, "predicted");
        if (!why && !(json_is_object(pr) && !json_is_true(get(pr, "fits")))) continue;
        char in[16];
        sweep_length_label(num(lv, input_axis ? "input_len" : "output_len"), in, sizeof in);
        char plan_says[96] = "";
        if (json_is_object(pr) && json_is_true(get(pr, "rejected")))
            snprintf(plan_says, sizeof plan_says, " (plan: longer than the context or the whole KV cache)");
        else if (json_is_object(pr) && !json_is_true(get(pr, "fits")))
            snprintf(plan_says, sizeof plan_says, " (plan: %.0f sequences fit, %.0f offered)", num(pr, "seqs_fit"), num(pr, "batch"));
        else if (json_is_object(pr))
            snprintf(plan_says, sizeof plan_says, " (plan: fits)");
        fprintf(f, "  %s: %s%s", in, why ? why : "fits", plan_says);
        fputc('\n', f);
    }
    const json_t *pf = get(c, "prefill");
    if (isfinite(num(pf, "quadratic_from_tokens")))
        fprintf(f, "  prefill: attention (quadratic) outweighs the linear cost from ~%.0f prompt tokens\n",
                num(pf, "quadratic_from_tokens"));
    else if (json_is_string(get(pf, "note")))
        fprintf(f, "  prefill: %s\n", json_string_value(get(pf, "note")));
    const json_t *dc = get(c, "decode");
    if (isfinite(num(dc, "e_ms_per_1k_context"))) {
        fprintf(f, "  decode: TPOT %+.3f ms per 1k tokens of context", num(dc, "e_ms_per_1k_context"));
        /* the bandwidth the added context was read at, when the KV bytes per token are known */
        if (isfinite(num(dc, "kv_read_bytes_per_s_implied")))
            fprintf(f, " (the added KV read at %.2f TB/s)", num(dc, "kv_read_bytes_per_s_implied") / 1e12);
        fputc('\n', f);
    }
    const json_t *sf = get(c, "stops_fitting");
    if (json_is_object(sf)) {
        char in[16];
        sweep_length_label(num(sf, input_axis ? "input_len" : "output_len"), in, sizeof in);
        fprintf(f, "  STOPS FITTING at %s %s: %s\n", input_axis ? "prompt" : "output", in, json_string_value(get(sf, "why")));
    }
    if (!have_pred && json_is_string(get(pred, "why"))) fprintf(f, "  (no prediction: %s)\n", json_string_value(get(pred, "why")));
    fprintf(f, "  (ms; ms/1k: median TTFT per 1k prompt tokens; tok/s: decode per sequence; KV%%: peak usage; pre: preemptions)\n");
}
