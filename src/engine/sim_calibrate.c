/* sim_calibrate — least-squares fits of the cost model's efficiency factors to a measured run
 * (grid search over the factor, closed-form intercept), and the profile file. */
#include "engine/sim_calibrate.h"
#include "metrics/metric_table.h"
#include "common/fileio.h"
#include "engine/sim_run.h"
#include "metrics/summary.h"
#include <jansson.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

/* The engine profile's own CPU cost per step (vLLM V1's engine core, ATOM's, or the 2024
 * schedulers': cost_step_overhead_of): the one the fit reads and writes. */
static double ov_get(const sim_calibration *c) {
    cost_factors f = c->factors;
    return *cost_step_overhead_of(&f, c->sched);
}
static void ov_set(sim_calibration *c, double v) { *cost_step_overhead_of(&c->factors, c->sched) = v; }

static void note(sim_calibration *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void note(sim_calibration *c, const char *fmt, ...) {
    if (c->n_notes >= (int)(sizeof c->notes / sizeof c->notes[0])) return;
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
typedef struct {
    float itl_s;
    float mem[COST_NCOMP], comp[COST_NCOMP];   /* the step's components at the base factors */
    float comm, kern, launch, sched;
    unsigned char graphs, mixed;
} itl_sample;

#define MAX_ITL_SAMPLES 200000

/* Requests sorted by first-token time and by last-token time, with prefix sums of per-request
 * quantities, so sums over "decoding at t" (first < t <= last) are two binary searches. */
enum { PS_IN, PS_PAIRS, PS_RATE, PS_FIRST_RATE, PS_COUNT };
typedef struct {
    int64_t *firsts, *lasts;    /* sorted */
    double *by_first[PS_COUNT]; /* prefix sums [n + 1] in first-token order */
    double *by_last[PS_COUNT];  /* ... in last-token order */
    long n;
} timeline_index;

typedef struct { int64_t t; long i; } tl_key;

static int cmp_key(const void *a, const void *b) {
    int64_t x = ((const tl_key *)a)->t, y = ((const tl_key *)b)->t;
    return x < y ? -1 : x > y;
}

/* Per-request quantities: prompt tokens, causal prefill pairs, decode rate (tokens per second of
 * its decode span) and first-token time (s) x rate, so generated-by-t = t x rate - first x rate. */
static void tl_quantities(const sim_calib_data *d, long i, double q[PS_COUNT]) {
    double L = d->in_tokens[i];
    double span = (d->last_ns[i] - d->first_ns[i]) / 1e9;
    double rate = span > 0 ? (d->out_tokens[i] - 1) / span : 0;
    q[PS_IN] = L;
    q[PS_PAIRS] = L * (L + 1) / 2;
    q[PS_RATE] = rate;
    q[PS_FIRST_RATE] = d->first_ns[i] / 1e9 * rate;
}

static int tl_build(timeline_index *x, const sim_calib_data *d) {
    long n = d->n;
    x->n = n;
    x->firsts = malloc(sizeof(int64_t) * n);
    x->lasts = malloc(sizeof(int64_t) * n);
    tl_key *key = malloc(sizeof(tl_key) * n);
    int ok = x->firsts && x->lasts && key;
    for (int k = 0; k < PS_COUNT; k++) {
        x->by_first[k] = malloc(sizeof(double) * (n + 1));
        x->by_last[k] = malloc(sizeof(double) * (n + 1));
        ok = ok && x->by_first[k] && x->by_last[k];
    }
    if (!ok) { free(key); return -1; }
    for (int pass = 0; pass < 2; pass++) {
        for (long i = 0; i < n; i++) key[i] = (tl_key){pass ? d->last_ns[i] : d->first_ns[i], i};
        qsort(key, n, sizeof *key, cmp_key);
        double **ps = pass ? x->by_last : x->by_first;
        for (int k = 0; k < PS_COUNT; k++) ps[k][0] = 0;
        for (long j = 0; j < n; j++) {
            double q[PS_COUNT];
            tl_quantities(d, key[j].i, q);
            for (int k = 0; k < PS_COUNT; k++) ps[k][j + 1] = ps[k][j] + q[k];
            (pass ? x->lasts : x->firsts)[j] = key[j].t;
        }
    }
    free(key);
    return 0;
}

static void tl_free(timeline_index *x) {
    free(x->firsts);
    free(x->lasts);
    for (int k = 0; k < PS_COUNT; k++) { free(x->by_first[k]); free(x->by_last[k]); }
}

typedef struct {
    itl_sample *v;
    long m;
    const cost_model *cm;
    double bw0, ce0;        /* the factors the components were computed at */
} itl_set;

/* Matches every gap (subsampled) with its step's work and computes, at bw_eff 1 and compute_eff 1,
 * the step's bytes, compute time and communication: the fits then only rescale. */
static int itl_build(cost_model *cm, const sim_params *p, const sim_calib_data *d, double ctx, sim_calibration *c,
                     itl_set *out) {
    timeline_index x;
    memset(&x, 0, sizeof x);
    memset(out, 0, sizeof *out);
    long total = 0;
    for (long i = 0; i < d->n; i++) total += d->n_chunks[i] > 1 ? d->n_chunks[i] - 1 : 0;
    c->n_itl_samples = total;
    c->n_itl_bins = 0;
    long stride = total > MAX_ITL_SAMPLES ? (total + MAX_ITL_SAMPLES - 1) / MAX_ITL_SAMPLES : 1;
    itl_sample *v = malloc(sizeof(itl_sample) * (size_t)(total / stride + 2));
    unsigned char *seen = calloc((size_t)d->n + 2, 1);
    int rc = -1;
    if (!v || !seen || tl_build(&x, d) < 0 || total < 10) goto out;
    cost_factors keep = cm->f;
    long m = 0, k_all = 0;
    for (long i = 0; i < d->n; i++)
        for (uint32_t k = 1; k < d->n_chunks[i]; k++, k_all++) {
            if (k_all % stride) continue;
            int64_t t0 = d->chunk_ns[i][k - 1], t = d->chunk_ns[i][k];
            /* decoding: first token before t, last at or after t; their context is the prompt
             * plus what they generated by t (at their own average pace) */
            long f = count_below(x.firsts, x.n, t, 0), l = count_below(x.lasts, x.n, t, 0);
            long b = f - l;
            double keys = x.by_first[PS_IN][f] - x.by_last[PS_IN][l] +
                          t / 1e9 * (x.by_first[PS_RATE][f] - x.by_last[PS_RATE][l]) -
                          (x.by_first[PS_FIRST_RATE][f] - x.by_last[PS_FIRST_RATE][l]);
            if (b < 1) { b = 1; keys = ctx; }
            if (b <= d->n) seen[b] = 1;
            /* prompts that got their first token in (t0, t] were prefilled in this step */
            long a = count_below(x.firsts, x.n, t0, 1), z = count_below(x.firsts, x.n, t, 1);
            double ptoks = x.by_first[PS_IN][z] - x.by_first[PS_IN][a], pairs = x.by_first[PS_PAIRS][z] - x.by_first[PS_PAIRS][a];
            double cap = sim_params_batch_tokens(p);
            if (ptoks > cap) { pairs *= cap / ptoks; ptoks = cap; }
            cost_batch cb;
            cost_decode_batch(b, ctx, &cb);
            cb.decode_keys = keys > b ? keys : b;
            cb.tokens += (int64_t)ptoks;
            cb.seqs += z - a;
            cb.prefill_pairs = pairs;
            cost_step st;
            cost_step_time(cm, &cb, &st);
            itl_sample *x = &v[m++];
            x->itl_s = (float)((t - t0) / 1e9);
            for (int k = 0; k < COST_NCOMP; k++) { x->mem[k] = (float)st.mem_s[k]; x->comp[k] = (float)st.comp_s[k]; }
            x->comm = (float)st.t_comm;
            x->kern = (float)st.t_kernels;
            x->launch = (float)st.t_launch_cpu;
            x->sched = (float)st.t_sched;
            x->graphs = (unsigned char)st.graphs;
            x->mixed = z > a;
        }
    cm->f = keep;
    for (long b = 1; b <= d->n; b++) c->n_itl_bins += seen[b];
    out->v = v;
    out->m = m;
    out->cm = cm;
    out->bw0 = keep.bw_eff;
    out->ce0 = keep.compute_eff;
    v = NULL;
    rc = 0;
out:
    free(v);
    free(seen);
    tl_free(&x);
    return rc;
}

/* The step time of a gap's step at (bw, ce), the scheduler's fixed cost left to the caller. */
static double itl_pred(const itl_set *s, const itl_sample *v, double bw, double ce) {
    cost_step st;
    memset(&st, 0, sizeof st);
    for (int k = 0; k < COST_NCOMP; k++) { st.mem_s[k] = v->mem[k] * s->bw0 / bw; st.comp_s[k] = v->comp[k] * s->ce0 / ce; }
    st.t_comm = v->comm;
    st.t_kernels = v->kern;
    st.t_launch_cpu = v->launch;
    st.t_sched = v->sched;
    st.graphs = v->graphs;
    return cost_step_rescale(s->cm, &st, s->cm->f.bw_eff, s->cm->f.compute_eff, 0);
}

/* Sum of squared errors over the selected gaps (use[j]) for (bw_eff, compute_eff) and overhead
 * *ov; with fit_ov, *ov becomes the mean residual (>= 0), which minimizes it. */
static double itl_sse(const itl_set *s, const unsigned char *use, double hbm, double bw, double ce, int fit_ov,
                      double *ov, long *n_used) {
    double sr = 0, sse = 0;
    long n = 0;
    if (fit_ov) {
        for (long j = 0; j < s->m; j++)
            if (use[j]) { sr += s->v[j].itl_s - itl_pred(s, &s->v[j], bw, ce); n++; }
        *ov = n ? fmax(0, sr / n) : *ov;
    }
    n = 0;
    for (long j = 0; j < s->m; j++) {
        if (!use[j]) continue;
        double e = s->v[j].itl_s - itl_pred(s, &s->v[j], bw, ce) - *ov;
        sse += e * e;
        n++;
    }
    if (n_used) *n_used = n;
    return sse;
}

/* One-dimensional grid fit (coarse 0.01, then 0.0005 around the best) of bw_eff (which = 0, with
 * the overhead in closed form when fit_ov) or compute_eff (which = 1, overhead held), over the
 * gaps in use[]. Returns the best SSE; *flat says whether the parameter hardly mattered. */
static double grid_fit(const itl_set *s, const unsigned char *use, double hbm, int which, int fit_ov,
                       double *bw, double *ce, double *ov, int *flat) {
    double best = INFINITY, best_x = which ? *ce : *bw, best_ov = *ov, worst = 0;
    for (int pass = 0; pass < 2; pass++) {
        double lo = pass ? fmax(0.01, best_x - 0.01) : 0.02, hi = pass ? fmin(1.0, best_x + 0.01) : 1.0;
        double step = pass ? 0.0005 : 0.01, bx = best_x;
        for (double x = lo; x <= hi + 1e-9; x += step) {
            double o = *ov;
            double e = itl_sse(s, use, hbm, which ? *bw : x, which ? x : *ce, fit_ov, &o, NULL);
            if (!pass && e > worst) worst = e;
            if (e < best) { best = e; bx = x; best_ov = o; }
        }
        best_x = bx;
    }
    if (which) *ce = best_x;
    else *bw = best_x;
    *ov = best_ov;
    if (flat) *flat = worst < 1.05 * best;
    return best;
}

/* Drops gaps the model misses by more than 3 rmse (steps it cannot see: a prompt split over two
 * steps, a client hiccup), so a few outliers do not drag the fit. */
static void trim(const itl_set *s, unsigned char *use, double hbm, double bw, double ce, double ov, double rmse) {
    for (long j = 0; j < s->m; j++)
        if (use[j] && fabs(s->v[j].itl_s - itl_pred(s, &s->v[j], bw, ce) - ov) > 3 * rmse) use[j] = 0;
}

/* Decode-only gaps give bw_eff and the overhead; gaps whose step carried a prefill give
 * compute_eff (when ce_fixed <= 0). */
static void itl_fit(const itl_set *s, double hbm, double ce_fixed, sim_calibration *c, int *ce_identified) {
    unsigned char *dec = malloc((size_t)s->m + 1), *mix = malloc((size_t)s->m + 1);
    if (!dec || !mix) { free(dec); free(mix); return; }
    long n_dec = 0, n_mix = 0;
    for (long j = 0; j < s->m; j++) {
        dec[j] = !s->v[j].mixed;
        mix[j] = (unsigned char)s->v[j].mixed;
        n_dec += dec[j];
        n_mix += mix[j];
    }
    if (n_dec < 50) { memset(dec, 1, (size_t)s->m); n_dec = s->m; }   /* too few: all gaps */
    int fit_ov = c->n_itl_bins >= 2;
    double bw = c->factors.bw_eff, ce = ce_fixed > 0 ? ce_fixed : c->factors.compute_eff, ov = ov_get(c);
    long used;
    for (int round = 0; round < 2; round++) {
        double sse = grid_fit(s, dec, hbm, 0, fit_ov, &bw, &ce, &ov, NULL);
        double rmse = sqrt(itl_sse(s, dec, hbm, bw, ce, 0, &ov, &used) / (used ? used : 1));
        if (round == 0) trim(s, dec, hbm, bw, ce, ov, rmse);
        (void)sse;
    }
    c->itl_rmse_ms = sqrt(itl_sse(s, dec, hbm, bw, ce, 0, &ov, &used) / (used ? used : 1)) * 1e3;
    if (ce_identified) *ce_identified = 0;
    if (ce_fixed <= 0 && n_mix >= 10) {
        int flat = 1;
        for (int round = 0; round < 2; round++) {
            grid_fit(s, mix, hbm, 1, 0, &bw, &ce, &ov, round ? NULL : &flat);
            double rmse = sqrt(itl_sse(s, mix, hbm, bw, ce, 0, &ov, &used) / (used ? used : 1));
            if (round == 0) trim(s, mix, hbm, bw, ce, ov, rmse);
        }
        if (ce_identified) *ce_identified = !flat;
        if (!flat) c->factors.compute_eff = ce;
    }
    c->factors.bw_eff = bw;
    c->fitted_bw = 1;
    if (fit_ov) {
        ov_set(c, ov);
        c->fitted_overhead = 1;
    }
    free(dec);
    free(mix);
}

/* TTFT of a prompt of L tokens sent while `dec` requests decode at context ctx: on average half
 * of the step in flight, then its chunks back to back, each sharing its step with the decoders. */
static double prefill_s(cost_model *cm, int chunk, int L, long dec, double ctx) {
    double t = 0;
    if (dec > 0) {
        cost_batch b;
        cost_step s;
        cost_decode_batch(dec, ctx, &b);
        cost_step_time(cm, &b, &s);
        t = 0.5 * s.t;
    }
    for (int done = 0; done < L;) {
        int n = L - done < chunk ? L - done : chunk;
        cost_batch b;
        cost_decode_batch(dec, ctx, &b);
        b.tokens += n;
        b.seqs += done + n == L;
        b.prefill_pairs = (double)n * done + (double)n * (n + 1) / 2;
        b.prefill_keys_read = done;
        cost_step s;
        cost_step_time(cm, &b, &s);
        t += s.t;
        done += n;
    }
    return t;
}

static int cmp_long(const void *a, const void *b) {
    long x = *(const long *)a, y = *(const long *)b;
    return x < y ? -1 : x > y;
}

/* The lightest-loaded requests (fewest others in flight at send, at least 20 of them when the
 * run has them, none queued behind max_num_seqs): TTFT against prompt length, with the decoders
 * in flight at send added to each prefill step. */
static void fit_ttft(cost_model *cm, const sim_params *p, const sim_calib_data *d, double ctx, sim_calibration *c) {
    long n = d->n;
    int64_t *sends = malloc(sizeof(int64_t) * n), *lasts = malloc(sizeof(int64_t) * n), *firsts = malloc(sizeof(int64_t) * n);
    long *others = malloc(sizeof(long) * n), *pick = malloc(sizeof(long) * n), *sorted = malloc(sizeof(long) * n);
    long *dec = malloc(sizeof(long) * n);
    double *pred = malloc(sizeof(double) * n);
    if (!sends || !lasts || !firsts || !others || !pick || !sorted || !dec || !pred) goto out;
    for (long i = 0; i < n; i++) { sends[i] = d->send_ns[i]; lasts[i] = d->last_ns[i]; firsts[i] = d->first_ns[i]; }
    qsort(sends, n, sizeof *sends, cmp_i64);
    qsort(lasts, n, sizeof *lasts, cmp_i64);
    qsort(firsts, n, sizeof *firsts, cmp_i64);
    for (long i = 0; i < n; i++) {
        int64_t t = d->send_ns[i];
        others[i] = count_below(sends, n, t, 1) - count_below(lasts, n, t, 0) - 1;
        dec[i] = count_below(firsts, n, t, 0) - count_below(lasts, n, t, 0);
        if (dec[i] < 0) dec[i] = 0;
        sorted[i] = others[i];
    }
    qsort(sorted, n, sizeof *sorted, cmp_long);
    long k = sorted[0];   /* the lightest load seen; it must be light */
    long np = 0;
    for (long i = 0; i < n; i++) if (others[i] <= k) pick[np++] = i;
    c->n_ttft_points = np;
    if (np < 3 || k > 2) {
        note(c, "TTFT: too few requests at low load (%ld with %ld others in flight)", np, k);
        goto out;
    }
    double mean_l = 0, var_l = 0;
    for (long j = 0; j < np; j++) mean_l += d->in_tokens[pick[j]];
    mean_l /= np;
    for (long j = 0; j < np; j++) var_l += pow(d->in_tokens[pick[j]] - mean_l, 2);
    int slope_fit = sqrt(var_l / np) > 0.05 * mean_l;   /* lengths vary: fit slope and offset */
    int chunk = p->chunked_prefill ? sim_params_batch_tokens(p) : 1 << 30;
    double keep = cm->f.compute_eff, best = INFINITY, best_eff = keep, best_off = 0, lo_pred = 0, hi_pred = 0;
    *cost_step_overhead_of(&cm->f, cm->s.prof.sched) = ov_get(c);
    cm->f.bw_eff = c->factors.bw_eff;
    for (int pass = 0; pass < 2; pass++) {
        double lo = pass ? fmax(0.01, best_eff - 0.01) : 0.02, hi = pass ? fmin(1.0, best_eff + 0.01) : 1.0;
        double step = pass ? 0.0005 : 0.01;
        for (double eff = lo; eff <= hi + 1e-9; eff += step) {
            cm->f.compute_eff = eff;
            double sr = 0, sse = 0, sum_pred = 0;
            for (long j = 0; j < np; j++) {
                long i = pick[j];
                pred[j] = prefill_s(cm, chunk, d->in_tokens[i], dec[i], ctx);
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
    note(c, "TTFT: %ld requests sent with <= %ld others in flight (%s) fit compute_eff %.3f (rmse %.2f ms, %.2f ms unexplained offset)",
         np, k, slope_fit ? "prompt lengths vary" : "one prompt length", best_eff, c->ttft_rmse_ms, best_off * 1e3);
out:
    free(sends); free(lasts); free(firsts); free(others); free(pick); free(sorted); free(dec); free(pred);
}

int sim_calibrate(const sim_params *p, const sim_calib_data *d, sim_calibration *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    out->factors = p->factors;
    out->n_requests = d->n;
    cost_model cm;
    if (sim_params_cost(p, &cm, err, errlen) < 0) return -1;
    out->sched = cm.s.prof.sched;
    double in_mean = 0, out_mean = 0;
    for (long i = 0; i < d->n; i++) { in_mean += d->in_tokens[i]; out_mean += d->out_tokens[i]; }
    in_mean /= d->n;
    out_mean /= d->n;
    double ctx = in_mean + out_mean / 2;
    itl_set set;
    cm.f = out->factors;
    if (itl_build(&cm, p, d, ctx, out, &set) < 0) {
        cost_free(&cm);
        snprintf(err, errlen, "too few inter-token gaps to fit (%ld); needs requests with several output tokens",
                 out->n_itl_samples);
        return -1;
    }
    /* 1. all three from the gaps: steps that carried a prefill pin compute_eff */
    int ce_from_itl = 0;
    itl_fit(&set, cm.gpu.hbm_bytes_per_s, -1, out, &ce_from_itl);
    sim_calibration joint = *out;
    /* 2. TTFT at low load pins compute_eff more directly; alternate with the gap fit */
    char ttft_note[256] = "";
    int ttft_ok = 0;
    for (int round = 0; round < 3; round++) {
        cm.f = out->factors;
        out->n_notes = 0;
        int had = out->fitted_compute;
        out->fitted_compute = 0;
        fit_ttft(&cm, p, d, ctx, out);
        snprintf(ttft_note, sizeof ttft_note, "%s", out->n_notes ? out->notes[0] : "");
        if (!out->fitted_compute) { out->fitted_compute = had; break; }
        ttft_ok = 1;
        itl_fit(&set, cm.gpu.hbm_bytes_per_s, out->factors.compute_eff, out, NULL);
    }
    out->n_notes = 0;
    if (!out->fitted_compute) {
        /* no low-load requests: the joint gap fit stands, compute_eff only if it mattered */
        cost_factors keep = p->factors;
        *out = joint;
        out->n_notes = 0;
        if (ce_from_itl) out->fitted_compute = 1;
        else out->factors.compute_eff = keep.compute_eff;
    }
    free(set.v);
    note(out, "ITL: %ld gaps at %ld decoding batch sizes fit bw_eff %.3f, step overhead %.2f ms%s (rmse %.2f ms)",
         out->n_itl_samples, out->n_itl_bins, out->factors.bw_eff, ov_get(out) * 1e3,
         ce_from_itl && out->fitted_compute && !ttft_ok ? ", compute_eff from the steps that carried prefill" : "",
         out->itl_rmse_ms);
    if (!out->fitted_overhead)
        note(out, "only one decoding batch size seen: step overhead kept at %.2f ms (run at several loads to fit it)",
             ov_get(out) * 1e3);
    if (*ttft_note) note(out, "%s", ttft_note);
    cost_free(&cm);
    return 0;
}

/* The engine's step at the aggregate's operating point with factors f: the same cost model the
 * simulator runs (components, MoE kernel efficiency, kernels, eager floor, the profile's overlap). */
static double agg_step_s(cost_model *cm, const cost_factors *f, double batch, double ctx, double window) {
    cost_batch b;
    cost_step s;
    cm->f = *f;
    cost_decode_batch_mtp(cm, (int64_t)batch, ctx, &b);
    b.window_keys = window;
    cost_step_time(cm, &b, &s);
    return s.t / cost_mtp_tokens_per_step(cm);
}

/* llama-server's prompt of L tokens at batch 1 with factors f: its ubatches of 512 (n_ubatch's
 * default), each a prefill chunk after the ones before it. A chunk of 2+ tokens runs b4747's loop
 * over the touched experts (all of them at these lengths, each with many rows). *sched (when not
 * NULL) takes the part of it that is the server's host work around the graph (the KQ mask, sampling). */
#define LLAMACPP_UBATCH 512
static double agg_prefill_s(cost_model *cm, const cost_factors *f, double L, double window, double *sched) {
    cm->f = *f;
    double t = 0, done = 0;
    if (sched) *sched = 0;
    while (done < L) {
        double n = fmin(LLAMACPP_UBATCH, L - done);
        cost_batch b;
        cost_step s;
        memset(&b, 0, sizeof b);
        b.tokens = (int64_t)n;
        b.seqs = 1;
        b.prefill_seqs = 1;
        b.prefill_pairs = n * done + n * (n + 1) / 2;
        b.prefill_keys_read = done;
        b.window_keys = window;
        cost_step_time(cm, &b, &s);
        t += s.t;
        if (sched) *sched += s.t_sched;
        done += n;
    }
    return t;
}

/* The host's speed factor h: every piece of llama-server's host work x h (cost_scale_host; the
 * run's measured times decide all of them, flags or not). */
static void host_scale(cost_factors *g, const cost_factors *f0, double h) { cost_scale_host(g, f0, h, 0); }

/* The host-speed factor (host_scale, h in [lo, hi]) at which the prompt of L tokens takes target
 * seconds: bisection on log(h). Returns 1 inside. */
static int agg_solve_loop_host(cost_model *cm, cost_factors *f, double L, double window, double target, double lo, double hi,
                               double *h_out) {
    const cost_factors f0 = *f;
    cost_factors g = *f;
    double a = log(lo), z = log(hi);
    host_scale(&g, &f0, lo);
    double t_lo = agg_prefill_s(cm, &g, L, window, NULL);
    host_scale(&g, &f0, hi);
    double t_hi = agg_prefill_s(cm, &g, L, window, NULL);
    double h;
    int inside = 1;
    if (target <= t_lo) { h = lo; inside = 0; }
    else if (target >= t_hi) { h = hi; inside = 0; }
    else {
        for (int it = 0; it < 60; it++) {
            double m = (a + z) / 2;
            host_scale(&g, &f0, exp(m));
            if (agg_prefill_s(cm, &g, L, window, NULL) > target) z = m;
            else a = m;
        }
        h = exp((a + z) / 2);
    }
    host_scale(f, &f0, h);
    *h_out = h;
    return inside;
}

/* The whole expert loop at x h of f (its host constants and its small kernels' GPU time: the
 * factor a decode step faster than the prompt's loop allows asks of both). */
static void loop_scale(cost_factors *g, const cost_factors *f, double h) {
    host_scale(g, f, h);
    g->ggml_kernel_gpu_s = f->ggml_kernel_gpu_s * h;
}

/* The factor h in [lo, 1] on f's loop (loop_scale) at which the step equals target; f keeps it.
 * 1 inside, 0 clamped. */
static int agg_solve_step_loop(cost_model *cm, cost_factors *f, double lo, double batch, double ctx, double window, double target,
                               double *h_out) {
    const cost_factors f0 = *f;
    cost_factors g = f0;
    loop_scale(&g, &f0, lo);
    double t_lo = agg_step_s(cm, &g, batch, ctx, window), t_hi = agg_step_s(cm, &f0, batch, ctx, window);
    double h = target <= t_lo ? lo : target >= t_hi ? 1 : 0;
    if (h == 0) {
        double a = log(lo), z = 0;
        for (int it = 0; it < 60; it++) {
            double m = (a + z) / 2;
            loop_scale(&g, &f0, exp(m));
            if (agg_step_s(cm, &g, batch, ctx, window) > target) z = m;
            else a = m;
        }
        h = exp((a + z) / 2);
    }
    loop_scale(f, &f0, h);
    *h_out = h;
    return target > t_lo && target < t_hi;
}

/* The value in [lo, hi] of *x at which the step (decreasing in *x when up, increasing when not)
 * equals target: bisection on log(x). Returns 1 when target lies inside, 0 when it is clamped. */
static int agg_solve(cost_model *cm, cost_factors *f, double *x, double lo, double hi, int up, double batch, double ctx,
                     double window, double target) {
    *x = hi;
    double t_hi = agg_step_s(cm, f, batch, ctx, window);
    *x = lo;
    double t_lo = agg_step_s(cm, f, batch, ctx, window);
    double fast = up ? t_hi : t_lo, slow = up ? t_lo : t_hi;
    if (target <= fast) { *x = up ? hi : lo; return 0; }
    if (target >= slow) { *x = up ? lo : hi; return 0; }
    double a = log(lo), z = log(hi);
    for (int it = 0; it < 60; it++) {
        double m = (a + z) / 2;
        *x = exp(m);
        double t = agg_step_s(cm, f, batch, ctx, window);
        if ((t > target) == up) a = m;
        else z = m;
    }
    *x = exp((a + z) / 2);
    return 1;
}

/* requests under which a calibration point is noted as resting on few */
#define SIM_CAL_FEW_REQUESTS 10

/* llama.cpp b4747's host speed at c = 1, read two ways (the c = 1 branch of the aggregate fit):
 * each is solved over [HOST_WIDE_LO, HOST_WIDE_HI], their combination clamped to [HOST_LO, HOST_HI].
 * HOST_STEP_SIGMA: the log spread of the time per kernel over the loop's host factor (kernel_s / h,
 * 12.3-17.9 us, mean 15.7) over the 22 V2-Lite f16 c = 1 calibrations of the recorded sweeps on 15
 * hosts, what reading h off the c = 1 step at the prior's ratio (16.3 us) misses by. HOST_REST_SIGMA:
 * the prompt's host work outside the loop (the KQ mask over the KV window, the last token's
 * sampling), priced from replicas timed on this project's CPU, known to a factor of 2 (ln 2): on the
 * 30M preset's sweeps (h100l_long_tiny_*) the prompt at a near-empty window took 7.6-8.7 ms, the
 * model's 7.6, and at the level's mean window of 8,800 cells 16.6-21.0 ms, 2-3x the mask's replica */
#define HOST_WIDE_LO 0.25
#define HOST_WIDE_HI 4.0
#define HOST_LO 0.5
#define HOST_HI 2.0
#define HOST_STEP_SIGMA 0.10
#define HOST_REST_SIGMA 0.693

/* A measured level to simulate: conc users in a closed loop, or (conc 0) arrivals at rate_per_s by
 * the run's arrival process (arrival, "poisson" when the run names none), over dataset ds; n
 * requests after warm warm-ups. */
typedef struct { int conc; double rate_per_s; const char *arrival; const char *ds; long n, warm; } sim_lvl;

/* The level simulated with factors f on p's server: its median ITL and TTFT in seconds. 0 ok. */
static int sim_level(const sim_params *p, const cost_factors *f, const sim_lvl *L, double *itl, double *ttft) {
    sim_params q = *p;
    q.factors = *f;
    size_t total = (size_t)(L->n + L->warm);
    int32_t *ins = NULL, *outs = NULL;
    int64_t *stamps = NULL, *times = NULL;
    char err[256];
    if (sim_workload_lengths(L->ds, &total, 1, 128, &ins, &outs, &stamps, err, sizeof err) < 0) return -1;
    free(stamps);
    if (L->conc <= 0 && sim_workload_arrivals(L->arrival, L->rate_per_s, total, &times) < 0) {
        free(ins);
        free(outs);
        return -1;
    }
    engine *e = engine_sim_create(&q, err, sizeof err);
    int rc = -1;
    recset recs;
    recset_init(&recs);
    if (e) {
        sim_workload w = {.n = total, .arrival_ns = times, .concurrency = L->conc > 0 ? L->conc : 0, .in_tokens = ins,
                          .max_tokens = outs, .warmup = (size_t)L->warm, .turnaround_ns = SIM_TURNAROUND_NS,
                          .ingest_ns_per_token = SIM_INGEST_NS_PER_TOKEN, .transit_seed = 2};
        /* the server's request path, as the levels predicted from this fit take it (run_serve) */
        sim_params_add_request_path(&q, &w.ingest_fixed_ns, &w.ingest_ns_per_token);
        summary_opts so;
        summary_default_opts(&so);
        json_t *sum = sim_run(e, &w, &recs, NULL, err, sizeof err) == 0 ? summary_compute(&recs, &so) : NULL;
        *itl = json_number_value(json_object_get(sum, METRIC(median_itl_ms))) / 1e3;
        *ttft = json_number_value(json_object_get(sum, METRIC(median_ttft_ms))) / 1e3;
        rc = sum && *itl > 0 && *ttft > 0 ? 0 : -1;
        json_decref(sum);
        engine_destroy(e);
    }
    recset_free(&recs);
    free(times);
    free(ins);
    free(outs);
    return rc;
}

/* A level of several users, llama.cpp b4747 (its loop): the aggregate point cannot be solved in
 * closed form there, since the ITL's median step is not the Little's-law batch's and other prompts
 * share steps with the decodes. So the level itself is simulated (its users or arrivals, dataset,
 * requests and server) and one factor solved by bisection on its median ITL: the host's speed,
 * which scales the loop's host constants and the time per kernel together (one host thread
 * launches both, eagerly). Two factors (the host on the median TTFT, the time per kernel on the
 * ITL) over-fitted: at several users the TTFT holds the wait for the step in flight and the
 * prompt's share of a mixed step, and calibrated on c = 2 of the recorded sweeps the predictions at
 * 2-8x were within 15 % in 148 of 214 cases (one factor: 191). */

/* The level simulated at host speed x: the loop's host constants x their prior, the time per
 * kernel x COST_LOOP_KERNEL_S. */
static void set_host_speed(cost_factors *g, const cost_factors *prior, double x) {
    host_scale(g, prior, x);
    g->kernel_s = COST_LOOP_KERNEL_S * x;
}

/* A time the factors g give (a closed-form step, a simulated level's median ITL) in *t; < 0 when
 * it cannot be had. */
typedef int (*host_time_fn)(void *ctx, const cost_factors *g, double *t);

/* The host speed x in [lo, hi] (bisection on log x, `iters` halvings) at which fn's time, which grows
 * with x, reaches target, the factors at set_host_speed(g, prior, x) from *start. 0, or -1 when fn
 * fails. */
static int bisect_host_speed(host_time_fn fn, void *ctx, const cost_factors *start, const cost_factors *prior, double target,
                             double lo, double hi, int iters, double *x_out) {
    double a = log(lo), z = log(hi), t;
    cost_factors g = *start;
    for (int it = 0; it < iters; it++) {
        double m = (a + z) / 2;
        set_host_speed(&g, prior, exp(m));
        if (fn(ctx, &g, &t) < 0) return -1;
        if (t > target) z = m;
        else a = m;
    }
    *x_out = exp((a + z) / 2);
    return 0;
}

/* the closed-form step of `batch` sequences (agg_step_s) as a host_time_fn */
typedef struct { cost_model *cm; double batch, ctx, window; } step_at;
static int step_time(void *ctx, const cost_factors *g, double *t) {
    step_at *s = ctx;
    *t = agg_step_s(s->cm, g, s->batch, s->ctx, s->window);
    return 0;
}

/* The host speed x (set_host_speed: the loop's host constants and the time per kernel together) at
 * which the closed-form step of `batch` sequences takes itl, within [HOST_WIDE_LO, HOST_WIDE_HI]. */
static double host_from_step(cost_model *cm, const cost_factors *prior, double batch, double ctx, double window, double itl) {
    step_at s = {cm, batch, ctx, window};
    double x = 1;
    bisect_host_speed(step_time, &s, prior, prior, itl, HOST_WIDE_LO, HOST_WIDE_HI, 50, &x);
    return x;
}

/* a level simulated (sim_level) as a host_time_fn: its median ITL */
typedef struct { const sim_params *p; const sim_lvl *L; } level_at;
static int level_time(void *ctx, const cost_factors *g, double *t) {
    level_at *l = ctx;
    double st;
    return sim_level(l->p, g, l->L, t, &st);
}

/* The x in [lo, hi] at which the level simulated with set_host_speed(f, x) has its median ITL at itl
 * (it grows with x); f takes it. 1 inside the range, 0 at a bound, -1 when a simulation fails. */
static int sim_fit_level(const sim_params *p, const sim_lvl *L, cost_factors *f, const cost_factors *prior, double itl, double lo,
                         double hi, double *x_out) {
    level_at l = {p, L};
    double x = 1;
    if (bisect_host_speed(level_time, &l, f, prior, itl, lo, hi, 22, &x) < 0) return -1;
    set_host_speed(f, prior, x);
    *x_out = x;
    return x > lo * 1.01 && x < hi * 0.99;
}

/* Results JSON only (a dsperf results file, or one built from published aggregates): the median
 * ITL (TPOT when no ITL) at the run's mean decoding concurrency (Little's law) is the calibration
 * point. The step the engine would run there is solved for it, in order, each within its physical
 * range: the bandwidth efficiency (0.05-1); when the point is faster than the whole HBM bandwidth
 * allows at this engine's kernels, the MoE kernel's efficiency relative to a stream (up to 1); then
 * the fixed step cost (the profile's scheduler cost, then the per-kernel time, down to 0). A point
 * faster than the roofline itself cannot be reproduced: that is an error in the setup, said so. */
static int calibrate_aggregate(const sim_params *p, json_t *doc, sim_calibration *c, char *err, size_t errlen) {
    memset(c, 0, sizeof *c);
    c->factors = p->factors;
    double itl = json_number_value(json_object_get(doc, METRIC(median_itl_ms))) / 1e3;
    const char *point = "median ITL";
    if (!(itl > 0)) { itl = json_number_value(json_object_get(doc, METRIC(median_tpot_ms))) / 1e3; point = "median TPOT"; }
    double dur = json_number_value(json_object_get(doc, METRIC(duration)));
    double done = json_number_value(json_object_get(doc, METRIC(completed)));
    double e2el = json_number_value(json_object_get(doc, METRIC(mean_e2el_ms))) / 1e3;
    double ttft = json_number_value(json_object_get(doc, METRIC(mean_ttft_ms))) / 1e3;
    double tin = json_number_value(json_object_get(doc, "total_input_tokens"));
    double tout = json_number_value(json_object_get(doc, "total_output_tokens"));
    if (!(itl > 0 && dur > 0 && done > 0 && e2el > 0)) {
        snprintf(err, errlen, "results lack median_itl_ms/duration/completed/mean_e2el_ms; pass --requests-jsonl");
        return -1;
    }
    cost_model cm;
    if (sim_params_cost(p, &cm, err, errlen) < 0) return -1;
    c->sched = cm.s.prof.sched;
    /* the fit starts from the loop's constants as timed (host speed 1) and leaves its own in them.
     * Without the server's prompt time nothing measures this host's loop and they stay there. (The
     * median recorded host, loop_host_x, as that start instead moved the two sweeps of the host they
     * were timed on, gpu_overhead and medium_sweep, which recorded no prompt time, from at most 16 %
     * off at 2-32x to up to 29 %; stop 47.) */
    if (cm.s.prof.expert_loop) c->factors.loop_host_x = 0;
    /* with MTP a step emits several tokens: the gap between chunks is a step, TPOT a token */
    if (cm.s.mtp_draft > 0 && !strcmp(point, "median ITL")) {
        double tp = json_number_value(json_object_get(doc, METRIC(median_tpot_ms))) / 1e3;
        if (tp > 0) { itl = tp; point = "median TPOT"; }
    }
    double batch = fmax(1, round(done * (e2el - ttft) / dur));
    /* At one user every gap is a decode step of one sequence, so the mean gap is the mean step: what
     * the run's throughput and TPOT hold, and what the simulated step (no jitter: its median is its
     * mean) must be to reproduce them. The median sits below it by the host's jitter (up to 9 % on the
     * real sweeps' c = 1 levels, whose calibrated profiles then overshot their own throughput by as
     * much). Above one user other prompts stall some gaps, which the median skips and the closed
     * form below does not model: the median stays the point there. */
    double mean_itl = json_number_value(json_object_get(doc, METRIC(mean_itl_ms))) / 1e3;
    if (batch == 1 && !strcmp(point, "median ITL") && mean_itl > 0) { itl = mean_itl; point = "mean ITL"; }
    double ctx = tin / done + tout / done / 2;
    /* a level whose server found a share of its prompt tokens in its prefix cache (llama-server's
     * slots keep the last prompt: a run that resends a sweep's prompts) computed only the rest: its
     * prompt time and its simulated prompts are that much shorter (the context is not) */
    double hit = json_number_value(json_object_get(json_object_get(doc, "prefix_cache"), "hit_rate"));
    char ds_uncached[256];
    /* llama-server (profile kv_window): every step's attention spans the cells in use, idle slots'
     * included; the run's own count of them is its usage x the capacity it read from /props */
    double window = cm.s.prof.kv_window ? sim_results_kv_cells(doc) : 0;
    cost_factors f = c->factors;
    double before = agg_step_s(&cm, &f, batch, ctx, window);
    int moe = model_is_moe(&cm.arch) && cm.s.prof.moe_kernel != MOE_GEMV;
    double *moe_f = cost_moe_eff_of(&cm, &f);
    double *ov = cost_step_overhead_of(&f, cm.s.prof.sched);
    int ok = 0;
    const char *moved = "bw_eff";
    const cost_factors loop_prior = f;   /* the loop's host constants at their prior */
    int cm_loop = cm.s.prof.expert_loop, cm_ggml = cm.s.prof.ggml;
    const json_t *cfgd = json_object_get(doc, "config");
    int conc = (int)json_integer_value(json_object_get(cfgd, "concurrency"));
    const char *ds = json_string_value(json_object_get(cfgd, "dataset"));
    if (ds && sim_workload_uncached(ds, hit, ds_uncached, sizeof ds_uncached)) {
        note(c, "%.0f%% of the prompt tokens were in the server's prefix cache: simulated as %s", hit * 100, ds_uncached);
        ds = ds_uncached;
    }
    double ttft_med = json_number_value(json_object_get(doc, METRIC(median_ttft_ms))) / 1e3;
    long warm = (long)json_integer_value(json_object_get(cfgd, "warmup"));
    /* an open-loop level (a rate sweep's, a bench --rate run) names its rate and arrival process */
    double rate = conc > 0 ? 0 : json_number_value(json_object_get(doc, "request_rate"));
    const char *arr = json_string_value(json_object_get(cfgd, "arrival"));
    /* llama.cpp b4747 at a level of several sequences: the level is simulated (below), and the
     * closed forms of one sequence (the prompt's loop, the one-token step) do not apply */
    int level_fit = cm_loop && batch >= 1.5 && (conc >= 2 || (rate > 0 && isfinite(rate))) && ds && !strcmp(point, "median ITL");
    if (cm.s.prof.expert_loop && !level_fit) {
        /* llama.cpp b4747 launches eagerly (MUL_MAT_ID turns CUDA graphs off): the host, not HBM,
         * sets the step (12-16 ms at batch 1 where the bytes take ~1 ms on an H200). Fit the time per
         * kernel of the step, bandwidth held */
        ok = agg_solve(&cm, &f, &f.kernel_s, 1e-7, 1e-3, 0, batch, ctx, window, itl);
        moved = "the time per kernel (kernel_s; the expert loop's calls at their prior)";
        /* The same c = 1 level's prompt ran b4747's loop over all the experts (a ubatch of L
         * tokens touches every one, with many rows each): the server's own prompt time (llama.cpp's
         * timings.prompt_ms, without the HTTP path) measures this host's loop. The loop's two host
         * constants and the server's sampling time move together by the factor that reproduces it, within [0.5, 2] (a host core's
         * speed and its driver's launch path, README-sim.md); TTFT alone, with an HTTP path of unknown
         * size in it, leaves them at their prior. The c = 1 step holds the one-token loop (k calls an
         * op) and the prompt holds c = 1's kernels, so the two solves alternate: four rounds (the real
         * sweeps settle within 0.1 % in two or three). */
        double L = fmax(1, tin / done * sim_workload_uncached_share(hit));
        double pre = json_number_value(json_object_get(json_object_get(doc, "server_timing"), "median_server_prefill_ms")) / 1e3;
        if (L >= 2 && pre > 0) {
            const cost_factors prior = f;
            double t0 = agg_prefill_s(&cm, &f, L, window, NULL), hp = 1;
            for (int round = 0; round < 4; round++) {
                host_scale(&f, &prior, 1);
                agg_solve_loop_host(&cm, &f, L, window, pre, HOST_WIDE_LO, HOST_WIDE_HI, &hp);
                ok = agg_solve(&cm, &f, &f.kernel_s, 1e-7, 1e-3, 0, batch, ctx, window, itl);
            }
            /* The prompt reads the loop's host speed hp through the loop's part of it; the server's
             * host work around the graph (the KQ mask over the window, the last token's sampling:
             * constants replicated on another CPU) is known to a factor of 2 (HOST_REST_SIGMA), which
             * moves hp by its share of the prompt over the prompt's elasticity in h. The c = 1 step
             * reads the host speed too (hs), through the time per kernel at the prior's ratio
             * (set_host_speed), to HOST_STEP_SIGMA: the spread of the two readings over the V2-Lite
             * sweeps, their prompts' noise in it. The two combine by their variances: where the loop
             * is nearly all the prompt (V2-Lite, the 906M preset) the prompt decides; on the 30M
             * preset (four layers), whose prompt is a fifth mask and sampling, the step does. */
            cost_factors g = f;
            double t_sched = 0, t_all = agg_prefill_s(&cm, &f, L, window, &t_sched);
            host_scale(&g, &prior, hp * 1.01);
            double elast = log(agg_prefill_s(&cm, &g, L, window, NULL) / t_all) / log(1.01);
            /* (a floor on the variance: no host work around the graph, as with --ggml-sample-time 0 and no
             * window, leaves the prompt deciding, not a division by zero) */
            double rest = elast > 0.01 ? t_sched / t_all * HOST_REST_SIGMA / elast : 10, var_p = fmax(rest * rest, 1e-8);
            double hs = host_from_step(&cm, &prior, batch, ctx, window, itl);
            double wp = 1 / var_p, ws = 1 / (HOST_STEP_SIGMA * HOST_STEP_SIGMA);
            double h = exp((wp * log(hp) + ws * log(hs)) / (wp + ws));
            int in = h >= HOST_LO && h <= HOST_HI;
            h = fmin(HOST_HI, fmax(HOST_LO, h));
            host_scale(&f, &prior, h);
            ok = agg_solve(&cm, &f, &f.kernel_s, 1e-7, 1e-3, 0, batch, ctx, window, itl);
            note(c, "loop host factor %.3f%s: the server's prompt time %.1f ms (%.0f tokens, median) against the model's %.1f ms at the loop's "
                    "prior (ggml_call_s %.2f us, ggml_gemm_s %.1f us, ggml_sample_s %.0f us after)", h, in ? "" : " (at its bound)",
                 pre * 1e3, L, t0 * 1e3, f.ggml_call_s * 1e6, f.ggml_gemm_s * 1e6, f.ggml_sample_s * 1e6);
            note(c, "the host factor from the prompt %.3f (+-%.0f %%: the prompt moves %.2f x as much as h; %.0f %% of it the mask and sampling), from the "
                    "c = 1 step %.3f (+-%.0f %%): weighted %.0f / %.0f %%", hp, sqrt(var_p) * 100, elast, t_sched / t_all * 100, hs,
                 HOST_STEP_SIGMA * 100, wp / (wp + ws) * 100, ws / (wp + ws) * 100);
            moved = "the time per kernel (kernel_s) on the ITL, the expert loop's host factor on the prompt time and the c = 1 step";
            if (!ok && f.kernel_s <= 1.01e-7) {
                /* the decode step is faster than the loop the prompt shows allows, even with no time
                 * per kernel (c = 2 on the Q8_0 sweeps: their prompts put the loop at the factor's
                 * bound, and the small kernels' GPU floor alone exceeds the step): the ITL scales the
                 * whole loop then, host and small kernels, down to a quarter */
                double hd = 1;
                ok = agg_solve_step_loop(&cm, &f, 0.25, batch, ctx, window, itl, &hd);
                note(c, "the decode step (median ITL %.2f ms at batch %.0f) is faster than that loop allows even with no time per "
                        "kernel: the whole loop (host calls and its small kernels' GPU time) x %.3f on the ITL", itl * 1e3, batch, hd);
                moved = "the expert loop as a whole on the ITL (no time per kernel left)";
            }
        }
    }
    if (!ok && !level_fit) { ok = agg_solve(&cm, &f, &f.bw_eff, 0.05, 1.0, 1, batch, ctx, window, itl); moved = "bw_eff"; }
    if (!ok && f.bw_eff >= 1.0 && moe) { ok = agg_solve(&cm, &f, moe_f, *moe_f, 1.0, 1, batch, ctx, window, itl); moved = "bw_eff at its bound 1, then the MoE kernel efficiency"; }
    if (!ok && f.bw_eff >= 1.0 && cm.s.prof.python && *ov > 0) {
        ok = agg_solve(&cm, &f, ov, 1e-7, *ov, 0, batch, ctx, window, itl);
        moved = "bw_eff at its bound 1, then the step overhead";
        c->fitted_overhead = ok;
    }
    if (!ok && f.bw_eff >= 1.0 && f.kernel_s > 1e-8) {
        ok = agg_solve(&cm, &f, &f.kernel_s, 1e-9, f.kernel_s, 0, batch, ctx, window, itl);
        moved = "bw_eff at its bound 1, then the step overhead and the per-kernel time";
    }
    if (level_fit) {
        double x = 1, si = 0, st = 0;
        const sim_lvl L = {conc > 0 ? conc : 0, conc > 0 ? 0 : rate, arr, ds, (long)done, warm > 0 ? warm : 0};
        int in = sim_fit_level(p, &L, &f, &loop_prior, itl, 0.25, 4.0, &x);
        if (in < 0 || sim_level(p, &f, &L, &si, &st) < 0) {
            snprintf(err, errlen, "the level could not be simulated (%s)", ds);
            cost_free(&cm);
            return -1;
        }
        char who[64];
        if (L.conc > 0) snprintf(who, sizeof who, "%d users", L.conc);
        else snprintf(who, sizeof who, "%s arrivals at %g req/s", arr ? arr : "poisson", L.rate_per_s);
        note(c, "the level simulated (%s, %s, %.0f requests): the host's speed x %.3f%s on the median ITL (%.2f ms; simulated %.2f): "
                "the loop's host constants and the time per kernel (%.2f us) together; median TTFT %.0f ms (simulated %.0f, not fitted)",
             who, ds, done, x, in ? "" : " (at its bound)", itl * 1e3, si * 1e3, f.kernel_s * 1e6, ttft_med * 1e3, st * 1e3);
        /* A bisection that ends inside its range found where the simulated median crosses the
         * measured one, and that is the fit even where the median jumps across it: a level of few
         * requests whose gaps mix batch sizes has a median that moves from one batch size's step
         * to the next's as x crosses a point (a 1 req/s level of 8 requests: 38.4 ms, then 46.8 ms
         * at x 0.863, against 40.0 measured). At a bound it must have come within 5 %. */
        int near = fabs(si / itl - 1) < 0.05;
        ok = in == 1 || near;
        if (in == 1 && !near)
            note(c, "the simulated median ITL jumps across the measured %.2f ms at x %.3f (its gaps mix batch sizes): x taken "
                    "at the jump", itl * 1e3, x);
        moved = "the level's own simulation (its load and server)";
    }
    double after = agg_step_s(&cm, &f, batch, ctx, window);
    cost_free(&cm);
    if (!ok && fabs(after / itl - 1) > 0.01) {
        snprintf(err, errlen,
                 "%s %.2f ms at decoding batch %.0f is %s than this setup can run (%.2f ms at the factors' physical bounds); "
                 "check --model, --gpu, --tp and the dtypes",
                 point, itl * 1e3, batch, after > itl ? "faster" : "slower", after * 1e3);
        return -1;
    }
    /* llama-server's own way outside its timings (HTTP and JSON, the prompt's tokenization, the
     * slot's launch, the first chunk's way back) is what a run that joined the server's timings
     * measured: the median TTFT outside the server's prompt time, less the ingest the simulator adds
     * per prompt token. One prompt length cannot split it into its fixed and per-token parts, so the
     * recorded hosts' line (COST_SERVER_PATH_*) is scaled to it: another length then moves it as
     * tokenization does (across the recorded sweeps' 256- and 1024-token prompts on one host: 16 %
     * off in the median, where the measured time carried over as it was is 68 % off). At one user
     * only: with more, a new prompt also waits for the step in flight, the simulator's own. */
    double outside = json_number_value(json_object_get(json_object_get(doc, "server_timing"), "median_ttft_outside_server_ms")) / 1e3;
    if (cm_ggml && batch == 1 && outside > 0) {
        double L = tin / done, line = COST_SERVER_PATH_S + COST_SERVER_PATH_TOKEN_S * L;
        double x = fmax(0, outside - SIM_INGEST_NS_PER_TOKEN * 1e-9 * L) / line;
        f.server_path_s = COST_SERVER_PATH_S * x;
        f.server_path_token_s = COST_SERVER_PATH_TOKEN_S * x;
        note(c, "the server's own path: %.2f ms of the median TTFT outside its prompt time (HTTP, tokenization, the slot's launch, "
                "the first chunk back): %.2f x the recorded hosts' %.2f ms + %.1f us a prompt token", outside * 1e3, x,
             COST_SERVER_PATH_S * 1e3, COST_SERVER_PATH_TOKEN_S * 1e6);
    }
    c->factors = f;
    c->fitted_bw = 1;
    c->n_requests = (long)done;
    note(c, "aggregate fit: %s %.2f ms at mean decoding concurrency %.0f (context %.0f): the model's step %.2f ms -> %.2f ms, "
         "solved with %s (bw_eff %.3f, kernel_s %.2f us, ggml_call_s %.2f us)", point, itl * 1e3, batch, ctx, before * 1e3, after * 1e3, moved,
         f.bw_eff, f.kernel_s * 1e6, f.ggml_call_s * 1e6);
    if (window > 0)
        note(c, "KV window %.0f cells (llama-server's mean usage x its -c): every step's attention and mask span them, idle slots' too",
             window);
    if (f.bw_eff >= 0.999)
        note(c, "warning: bw_eff reached its physical bound 1.0; the point is faster than HBM streaming at the default kernel "
                "efficiencies, so the rest went to %s", moe ? "the MoE kernel and the fixed step cost" : "the fixed step cost");
    if (!cm_loop) note(c, "pass the run's per-request JSONL (--requests-jsonl) to fit the overhead and compute_eff too");
    /* a handful of requests is a noisy point: three runs of one c = 1 level on one server gave TPOT
     * 12.1-13.6 ms (h100g_repeat), and 4-6 prompts a level put the loop's host factor at 0.73-0.88
     * on one host (h100i_*) */
    if (done < SIM_CAL_FEW_REQUESTS)
        note(c, "few requests: the fit rests on %.0f; runs of one level of so few differ by several percent (one "
                "server's c = 1: TPOT 12.1-13.6 ms over three runs): a longer level (--duration) steadies it", done);
    return 0;
}

double sim_results_kv_cells(const json_t *results) {
    double pct = json_number_value(json_object_get(json_object_get(json_object_get(results, "telemetry_summary"), "server"),
                                                   "kv_usage_pct_mean"));
    double cap = json_number_value(json_object_get(json_object_get(json_object_get(results, "deployment"), "kv_capacity_tokens"), "value"));
    return pct > 0 && cap > 0 ? pct / 100 * cap : 0;
}

/* Whether level i of a sweep measured anything it can stand for: requests completed at a load the
 * sweep can run (rate > 0, or concurrency >= 1), and not set aside by the sweep (measured false). */
int sim_sweep_level_measured(const json_t *doc, size_t i) {
    const json_t *lv = json_array_get(json_object_get(doc, "levels"), i), *res = json_object_get(lv, "results");
    const char *axis = json_string_value(json_object_get(doc, "axis"));
    double load = json_number_value(json_object_get(lv, "load"));
    return json_is_object(res) && json_integer_value(json_object_get(res, METRIC(completed))) > 0 &&
           (axis && !strcmp(axis, "rate") ? load > 0 : load >= 1) && !json_is_false(json_object_get(lv, "measured"));
}

long sim_sweep_level_at(const json_t *doc, double load, char *err, size_t errlen) {
    const json_t *levels = json_object_get(doc, "levels");
    char have[256] = "";
    size_t i, n = 0;
    const json_t *lv;
    json_array_foreach(levels, i, lv) {
        double l = json_number_value(json_object_get(lv, "load"));
        if (!sim_sweep_level_measured(doc, i)) continue;
        if (load <= 0 || l == load) return (long)i;
        if (n < sizeof have - 16) n += (size_t)snprintf(have + n, sizeof have - n, "%s%g", n ? ", " : "", l);
    }
    if (load <= 0) snprintf(err, errlen, "the sweep has no measured level to calibrate on");
    else snprintf(err, errlen, "the sweep has no measured level at load %g (its measured loads: %s); pass one of them to --calibrate-at",
                  load, have[0] ? have : "none");
    return -1;
}

void sim_sweep_level_server(const json_t *doc, size_t i, sim_params *p) {
    const json_t *levels = json_object_get(doc, "levels"), *cfg = json_object_get(doc, "config");
    long warm = (long)json_integer_value(json_object_get(cfg, "warmup")), resent = 0;
    if (warm < 0) warm = 0;
    /* fresh prompts: the level's first_prompt of them; resent ones: as many as the largest level
     * before sent */
    json_t *fp = json_object_get(json_array_get(levels, i), "first_prompt");
    for (size_t k = 0; k < i && k < json_array_size(levels) && !json_is_integer(fp); k++) {
        if (!sim_sweep_level_measured(doc, k)) continue;
        long done = (long)json_integer_value(json_object_get(json_object_get(json_array_get(levels, k), "results"), METRIC(completed)));
        if (done + warm > resent) resent = done + warm;
    }
    p->slots_warm = (int)(json_is_integer(fp) ? json_integer_value(fp) : resent);
    p->slots_warm_tokens = sim_workload_slot_tokens(json_string_value(json_object_get(cfg, "dataset")));
}

const json_t *sim_run_results(const json_t *doc) {
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    if (!schema) return NULL;
    if (!strncmp(schema, "dsperf.results/", 15)) return doc;
    if (strncmp(schema, "dsperf.sweep/", 13)) return NULL;
    /* a sweep: its lowest measured level, the one run to calibrate on (the others are to predict) */
    char e[8];
    long i = sim_sweep_level_at(doc, 0, e, sizeof e);
    return i < 0 ? NULL : json_object_get(json_array_get(json_object_get(doc, "levels"), (size_t)i), "results");
}

int sim_calibrate_results(const sim_params *p, const json_t *results, sim_calibration *out, char *err, size_t errlen) {
    if (!json_is_object(results)) { snprintf(err, errlen, "not a results object"); return -1; }
    return calibrate_aggregate(p, (json_t *)results, out, err, errlen);
}

int sim_calibrate_from_files(const sim_params *p, const char *results_path, const char *requests_jsonl,
                             sim_calibration *out, char *err, size_t errlen) {
    const char *jsonl = requests_jsonl;
    /* llama.cpp b4747's step is its host loop over the touched experts: the per-request fit's
     * factors (HBM bandwidth, a scheduler's step cost, GEMM efficiency) cannot carry it (on a
     * simulated run it ran bw_eff into 1.0, the gaps still 6.2 ms rms off a 7.3 ms step, the loop
     * left at its priors). The aggregate fit solves the loop's own factors from the run's median ITL and the server's
     * prompt time, so its results JSON calibrates, and the JSONL is not needed. */
    json_t *doc = json_load_file(results_path, 0, NULL);
    const json_t *res = sim_run_results(doc);
    engine_profile prof;
    if (sim_params_profile(p, &prof) == 0 && prof.expert_loop) {
        if (!res) {
            json_decref(doc);
            snprintf(err, errlen, "--engine-profile %s is calibrated from the run's results JSON (its median ITL and llama-server's "
                     "own prompt time fit the expert loop), not from per-request JSONL: pass bench's --out file", prof.name);
            return -2;
        }
        jsonl = NULL;
    }
    if (!jsonl && res) {
        int rc = sim_calibrate_results(p, res, out, err, errlen);
        json_decref(doc);
        return rc;
    }
    json_decref(doc);
    if (!jsonl) jsonl = results_path;   /* not a results document: a per-request JSONL */
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
    json_t *fac = sim_params_factors_json(f);
    /* the deployment calibrated: what `sim --profile` predicts unless a flag changes it. A model
     * config by its absolute path (the profile is read from elsewhere); the server's running-sequence
     * cap and KV capacity as the run measured them, else as flags set them */
    char model[PATH_MAX];
    if (p->arch_set || !p->model_config[0] || !realpath(p->model_config, model)) snprintf(model, sizeof model, "%s", sim_params_model_name(p));
    json_t *setup = json_pack("{s:s,s:s,s:s,s:i,s:i,s:i,s:s,s:s}", "model", model, "gpu", p->gpu, "engine_profile", p->engine_profile,
                              "tp", p->tp, "ep", p->ep, "dp", p->dp, "weight_dtype", p->weight_dtype, "kv_dtype", p->kv_dtype);
    int seqs = p->max_num_seqs_set ? p->max_num_seqs : 0;
    double kv = p->num_gpu_blocks > 0 ? (double)p->num_gpu_blocks * p->block_size : 0;
    if (p->arch_set) json_object_set_new(setup, "architecture", model_arch_to_hf_json(&p->arch));   /* the run's own */
    if (seqs > 0) json_object_set_new(setup, "max_num_seqs", json_integer(seqs));
    if (kv > 0) json_object_set_new(setup, "kv_capacity_tokens", json_integer((json_int_t)kv));
    if (p->given & SIM_GIVEN_FA) json_object_set_new(setup, "flash_attention", json_boolean(!p->factors.no_flash_attention));
    json_t *o = json_pack("{s:s,s:o,s:o,"
                          "s:{s:b,s:b,s:b,s:I,s:I,s:I,s:f,s:f,s:f},s:o}",
        "schema", "dsperf.sim-profile/1",
        "setup", setup,
        "factors", fac,
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
    fprintf(f, "  step_overhead   %.3f ms%s%s\n", ov_get(c) * 1e3, c->sched == SCHED_V1 ? " (vLLM V1's engine core)" : c->sched == SCHED_ATOM ? " (ATOM's engine core)" : "",
            c->fitted_overhead ? "" : " (kept)");
    for (int i = 0; i < c->n_notes; i++) fprintf(f, "  - %s\n", c->notes[i]);
    fprintf(f, "profile written to %s (use: dsperf sim --profile %s ...)\n", path, path);
}
