/* sweep — ladders, knee fit, SLO crossing, over-saturation detector and confidence intervals. */
#include "sweep/sweep.h"
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- ladders ---- */

static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int add_level(double *out, size_t max, size_t *n, double v, bool is_rate, char *err, size_t errlen) {
    if (!is_rate) v = round(v);
    if (!(v > 0) || !isfinite(v)) {
        snprintf(err, errlen, "load levels must be > 0 (got %g)", v);
        return -1;
    }
    if (*n >= max) {
        snprintf(err, errlen, "too many load levels (at most %zu)", max);
        return -1;
    }
    out[(*n)++] = v;
    return 0;
}

/* Copies s without "/s" and spaces except the one before "step" (turned into '@'). */
static void normalise(const char *s, char *buf, size_t len) {
    size_t j = 0;
    for (size_t i = 0; s[i] && j + 1 < len; i++) {
        if (s[i] == '/' && s[i + 1] == 's') { i++; continue; }
        if (!strncmp(s + i, "step", 4)) { buf[j++] = '@'; i += 3; continue; }
        if (isspace((unsigned char)s[i])) continue;
        buf[j++] = s[i];
    }
    buf[j] = 0;
}

static int parse_num(const char *s, char **end, double *v) {
    *v = strtod(s, end);
    return *end == s ? -1 : 0;
}

static int parse_item(const char *item, bool is_rate, double *out, size_t max, size_t *n, char *err, size_t errlen) {
    char *end;
    double a, b;
    const char *dots = strstr(item, "..");
    if (!dots) {
        if (parse_num(item, &end, &a) < 0 || *end) goto bad;
        return add_level(out, max, n, a, is_rate, err, errlen);
    }
    char head[64];
    size_t hl = (size_t)(dots - item);
    if (hl == 0 || hl >= sizeof head) goto bad;
    memcpy(head, item, hl);
    head[hl] = 0;   /* strtod would read "1." of "1..8" */
    if (parse_num(head, &end, &a) < 0 || *end) goto bad;
    if (parse_num(dots + 2, &end, &b) < 0) goto bad;
    if (!(a > 0) || !(b >= a)) {
        snprintf(err, errlen, "range '%s' must go up from a value > 0", item);
        return -1;
    }
    double factor = 0, step = 0;
    if (*end == 'x') {
        if (parse_num(end + 1, &end, &factor) < 0 || *end || !(factor > 1)) goto bad;
    } else if (*end == '@' || *end == '+') {
        if (parse_num(end + 1, &end, &step) < 0 || *end || !(step > 0)) goto bad;
    } else if (*end) {
        goto bad;
    } else if (is_rate) {
        step = (b - a) / 9;   /* 10 even points */
        if (step <= 0) return add_level(out, max, n, a, is_rate, err, errlen);
    } else {
        factor = 2;
    }
    double v = a;
    for (int k = 0; v <= b * (1 + 1e-9); k++) {
        if (add_level(out, max, n, v, is_rate, err, errlen) < 0) return -1;
        v = factor > 0 ? a * pow(factor, k + 1) : a + step * (k + 1);
    }
    return add_level(out, max, n, b, is_rate, err, errlen);   /* the top is always measured */
bad:
    snprintf(err, errlen, "cannot read '%s': use N, A..B, A..BxK or A..B step S", item);
    return -1;
}

int sweep_parse_ladder(const char *spec, bool is_rate, double *out, size_t max, size_t *n, char *err,
                       size_t errlen) {
    char buf[1024];
    *n = 0;
    normalise(spec, buf, sizeof buf);
    if (!buf[0]) {
        snprintf(err, errlen, "empty ladder");
        return -1;
    }
    char *save = NULL;
    for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save))
        if (parse_item(t, is_rate, out, max, n, err, errlen) < 0) return -1;
    qsort(out, *n, sizeof *out, cmp_double);
    size_t k = 0;
    for (size_t i = 0; i < *n; i++)
        if (k == 0 || fabs(out[i] - out[k - 1]) > 1e-9 * out[i]) out[k++] = out[i];
    *n = k;
    if (!k) {
        snprintf(err, errlen, "empty ladder");
        return -1;
    }
    return 0;
}

/* ---- statistics ---- */

static const double t975[30] = {12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
                                2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
                                2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042};
static const double t99[30] = {31.821, 6.965, 4.541, 3.747, 3.365, 3.143, 2.998, 2.896, 2.821, 2.764,
                               2.718, 2.681, 2.650, 2.624, 2.602, 2.583, 2.567, 2.552, 2.539, 2.528,
                               2.518, 2.508, 2.500, 2.492, 2.485, 2.479, 2.473, 2.467, 2.462, 2.457};
static const double t95[30] = {6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
                               1.796, 1.782, 1.771, 1.761, 1.753, 1.746, 1.740, 1.734, 1.729, 1.725,
                               1.721, 1.717, 1.714, 1.711, 1.708, 1.706, 1.703, 1.701, 1.699, 1.697};
static const double t995[30] = {63.657, 9.925, 5.841, 4.604, 4.032, 3.707, 3.499, 3.355, 3.250, 3.169,
                                3.106, 3.055, 3.012, 2.977, 2.947, 2.921, 2.898, 2.878, 2.861, 2.845,
                                2.831, 2.819, 2.807, 2.797, 2.787, 2.779, 2.771, 2.763, 2.756, 2.750};

double sweep_t_quantile(double p, int df) {
    const double *tab;
    double z;
    if (p >= 0.995) { tab = t995; z = 2.5758; }
    else if (p >= 0.99) { tab = t99; z = 2.3263; }
    else if (p >= 0.975) { tab = t975; z = 1.9600; }
    else { tab = t95; z = 1.6449; }
    if (df < 1) df = 1;
    if (df <= 30) return tab[df - 1];
    /* Cornish-Fisher expansion of the t quantile around the normal one */
    double z3 = z * z * z, z5 = z3 * z * z;
    return z + (z3 + z) / (4.0 * df) + (5 * z5 + 16 * z3 + 3 * z) / (96.0 * df * df);
}

void sweep_linfit(const double *x, const double *y, size_t n, double *slope, double *intercept, double *sse,
                  double *t_stat) {
    double sx = 0, sy = 0;
    for (size_t i = 0; i < n; i++) { sx += x[i]; sy += y[i]; }
    double mx = n ? sx / n : 0, my = n ? sy / n : 0, sxx = 0, sxy = 0;
    for (size_t i = 0; i < n; i++) { sxx += (x[i] - mx) * (x[i] - mx); sxy += (x[i] - mx) * (y[i] - my); }
    double b = sxx > 0 ? sxy / sxx : 0, a = my - b * mx, e = 0;
    for (size_t i = 0; i < n; i++) { double r = y[i] - (a + b * x[i]); e += r * r; }
    if (slope) *slope = b;
    if (intercept) *intercept = a;
    if (sse) *sse = e;
    if (t_stat) {
        if (n < 3 || sxx <= 0) *t_stat = 0;
        else {
            double se = sqrt(e / (double)(n - 2) / sxx);
            *t_stat = se > 0 ? b / se : (b > 0 ? INFINITY : b < 0 ? -INFINITY : 0);
        }
    }
}

void sweep_ci_mean(const double *v, size_t n, double confidence, double *mean, double *std, double *lo,
                   double *hi) {
    double s = 0, ss = 0;
    for (size_t i = 0; i < n; i++) s += v[i];
    double m = n ? s / n : NAN;
    for (size_t i = 0; i < n; i++) ss += (v[i] - m) * (v[i] - m);
    double sd = n > 1 ? sqrt(ss / (double)(n - 1)) : NAN;
    *mean = m;
    *std = sd;
    if (n < 2) { *lo = *hi = NAN; return; }
    double half = sweep_t_quantile(1 - (1 - confidence) / 2, (int)n - 1) * sd / sqrt((double)n);
    *lo = m - half;
    *hi = m + half;
}

/* ---- knee ---- */

static void fit_range(const double *x, const double *y, size_t from, size_t to, double *b, double *a, double *e) {
    sweep_linfit(x + from, y + from, to - from + 1, b, a, e, NULL);
}

void sweep_find_knee(const double *x, const double *y, const double *lat, size_t n, sweep_knee *k) {
    memset(k, 0, sizeof *k);
    k->knee_load = NAN;
    if (n < SWEEP_KNEE_MIN_LEVELS) {
        snprintf(k->reason, sizeof k->reason, "need at least %d levels for the two-segment fit (have %zu)",
                 SWEEP_KNEE_MIN_LEVELS, n);
        return;
    }
    for (size_t i = 0; i < n; i++) if (y[i] > k->peak) k->peak = y[i];
    fit_range(x, y, 0, n - 1, NULL, NULL, &k->sse_one);
    double best = INFINITY;
    for (size_t b = 1; b + 1 < n; b++) {
        double s1, a1, e1, s2, a2, e2;
        fit_range(x, y, 0, b, &s1, &a1, &e1);
        fit_range(x, y, b, n - 1, &s2, &a2, &e2);
        if (e1 + e2 < best) {
            best = e1 + e2;
            k->break_index = b;
            k->rise_slope = s1; k->rise_intercept = a1;
            k->tail_slope = s2; k->tail_intercept = a2;
        }
    }
    k->sse_two = best;
    k->sse_gain = k->sse_one > 0 ? 1 - best / k->sse_one : 0;
    k->tail_ratio = k->rise_slope > 0 ? k->tail_slope / k->rise_slope : NAN;
    k->break_frac = k->peak > 0 ? y[k->break_index] / k->peak : 0;
    if (!(k->rise_slope > 0)) {
        snprintf(k->reason, sizeof k->reason, "throughput does not rise with load (rise slope %.4g)", k->rise_slope);
        return;
    }
    if (k->tail_ratio > SWEEP_KNEE_TAIL_RATIO) {
        snprintf(k->reason, sizeof k->reason, "throughput still rising at the highest load: tail slope %.3g is "
                 "%.0f%% of the rise slope %.3g (plateau needs <= %.0f%%)", k->tail_slope, 100 * k->tail_ratio,
                 k->rise_slope, 100 * SWEEP_KNEE_TAIL_RATIO);
        return;
    }
    if (k->sse_gain < SWEEP_KNEE_SSE_GAIN) {
        snprintf(k->reason, sizeof k->reason, "two segments fit no better than one line (squared error -%.0f%%, "
                 "needs -%.0f%%)", 100 * k->sse_gain, 100 * SWEEP_KNEE_SSE_GAIN);
        return;
    }
    if (k->break_frac < SWEEP_KNEE_PEAK_FRAC) {
        snprintf(k->reason, sizeof k->reason, "throughput at the break is %.0f%% of the peak (needs >= %.0f%%)",
                 100 * k->break_frac, 100 * SWEEP_KNEE_PEAK_FRAC);
        return;
    }
    k->found = true;
    size_t b = k->break_index;
    double xk = (k->tail_intercept - k->rise_intercept) / (k->rise_slope - k->tail_slope);
    if (!isfinite(xk) || xk < x[b - 1]) xk = x[b - 1];
    if (xk > x[b + 1]) xk = x[b + 1];
    k->knee_load = xk;
    double bestd = INFINITY;
    for (size_t i = 0; i < n; i++) {
        double d = fabs(log(x[i] / xk));
        if (d < bestd) { bestd = d; k->index = i; }
    }
    size_t ki = k->index;
    if (lat) {
        k->have_latency = ki >= 1 && ki + 1 < n;
        if (k->have_latency) {
            fit_range(x, lat, 0, ki, &k->lat_slope_before, NULL, NULL);
            fit_range(x, lat, ki, n - 1, &k->lat_slope_after, NULL, NULL);
            k->lat_ratio = lat[ki] > 0 ? lat[n - 1] / lat[ki] : NAN;
            double before = k->lat_slope_before > 0 ? k->lat_slope_before : 0;
            k->latency_upturn = k->lat_slope_after > 0 && k->lat_slope_after >= SWEEP_KNEE_LAT_SLOPE * before &&
                                k->lat_ratio >= SWEEP_KNEE_LAT_RATIO;
        }
    }
    snprintf(k->reason, sizeof k->reason, "tail/rise slope %.0f%%, SSE -%.0f%% vs one line, break at %.0f%% of "
             "peak%s", 100 * k->tail_ratio, 100 * k->sse_gain, 100 * k->break_frac,
             !k->have_latency ? "; latency not checked (knee at the end)"
             : k->latency_upturn ? "; latency turns up after it" : "; no latency upturn");
}

double sweep_slo_crossing(const double *x, const double *v, size_t n, double thr, int *where) {
    *where = 1;
    for (size_t i = 0; i < n; i++) {
        if (!(v[i] > thr)) continue;
        if (i == 0) { *where = -1; return NAN; }
        *where = 0;
        double lo = v[i - 1], hi = v[i];
        if (!(hi > lo)) return x[i - 1];
        return x[i - 1] + (thr - lo) * (x[i] - x[i - 1]) / (hi - lo);
    }
    return NAN;
}

/* ---- over-saturation detector ---- */

void sweep_osd_init(sweep_osd *d, double window_s) {
    memset(d, 0, sizeof *d);
    d->window_s = window_s;
}

void sweep_osd_free(sweep_osd *d) {
    free(d->ct); free(d->cv); free(d->tt); free(d->tv);
    memset(d, 0, sizeof *d);
}

static int push2(double **a, double **b, size_t *n, size_t *cap, double x, double y) {
    if (*n == *cap) {
        size_t nc = *cap ? *cap * 2 : 256;
        double *na = realloc(*a, nc * sizeof *na);
        if (!na) return -1;
        *a = na;
        double *nb = realloc(*b, nc * sizeof *nb);
        if (!nb) return -1;
        *b = nb;
        *cap = nc;
    }
    (*a)[*n] = x;
    (*b)[*n] = y;
    (*n)++;
    return 0;
}

int sweep_osd_add_conc(sweep_osd *d, double t_s, double conc) { return push2(&d->ct, &d->cv, &d->cn, &d->ccap, t_s, conc); }
int sweep_osd_add_ttft(sweep_osd *d, double t_s, double ttft_ms) { return push2(&d->tt, &d->tv, &d->tn, &d->tcap, t_s, ttft_ms); }

/* First index whose time is >= t0 (times are non-decreasing). */
static size_t from_time(const double *t, size_t n, double t0) {
    size_t i = n;
    while (i > 0 && t[i - 1] >= t0) i--;
    return i;
}

void sweep_osd_check(const sweep_osd *d, double now_s, bool whole, sweep_osd_verdict *v) {
    memset(v, 0, sizeof *v);
    /* the whole level: without its first fifth, where in-flight ramps up from zero */
    double t0 = now_s - d->window_s;
    if (whole) t0 = d->cn ? d->ct[0] + 0.2 * (now_s - d->ct[0]) : 0;
    size_t ci = from_time(d->ct, d->cn, t0), ti = from_time(d->tt, d->tn, t0);
    v->conc_n = d->cn - ci;
    v->ttft_n = d->tn - ti;
    v->t0_s = v->conc_n ? d->ct[ci] : NAN;
    v->t1_s = now_s;
    bool full = whole || (d->cn && now_s - d->ct[0] >= d->window_s);
    v->enough = full && v->conc_n >= 5 && v->ttft_n >= 10;
    if (!v->enough) return;
    double a, e;
    sweep_linfit(d->ct + ci, d->cv + ci, v->conc_n, &v->conc_slope, &a, &e, &v->conc_t);
    sweep_linfit(d->tt + ti, d->tv + ti, v->ttft_n, &v->ttft_slope, &a, &e, &v->ttft_t);
    double cm = 0, tm = 0;
    for (size_t i = ci; i < d->cn; i++) cm += d->cv[i];
    for (size_t i = ti; i < d->tn; i++) tm += d->tv[i];
    v->conc_mean = cm / v->conc_n;
    v->ttft_mean = tm / v->ttft_n;
    size_t df = (v->conc_n < v->ttft_n ? v->conc_n : v->ttft_n) - 2;
    v->t_crit = sweep_t_quantile(0.99, (int)df);
    double span_c = d->ct[d->cn - 1] - d->ct[ci], span_t = d->tt[d->tn - 1] - d->tt[ti];
    double conc_rise = v->conc_slope * span_c, ttft_rise = v->ttft_slope * span_t;
    double conc_need = v->conc_mean * 0.1 > 2 ? v->conc_mean * 0.1 : 2;
    v->saturated = v->conc_t > v->t_crit && v->ttft_t > v->t_crit && conc_rise >= conc_need &&
                   ttft_rise >= 0.1 * v->ttft_mean;
}

/* ---- levels the sweep could not measure ---- */

void sweep_check_level(double load, bool rate_axis, double completed, double failed, double cut, double in_flight_s,
                       double this_e2e_s, double prev_e2e_s, double level_s, double grace_s, sweep_level_check *out) {
    memset(out, 0, sizeof *out);
    if (!isfinite(cut)) cut = 0;
    out->measured = !(cut > completed) && completed + failed > 0;
    if (out->measured) return;
    double e2e = 0;
    const double est[] = { in_flight_s, this_e2e_s, prev_e2e_s };
    for (int i = 0; i < 3; i++) if (isfinite(est[i]) && est[i] > e2e) e2e = est[i];
    if (!(e2e > 0)) e2e = level_s + grace_s;
    out->min_duration_s = ceil(SWEEP_LEVEL_E2E_FACTOR * e2e);
    if (out->min_duration_s < level_s + 1) out->min_duration_s = ceil(level_s + 1);
    double n = rate_axis ? ceil(load * SWEEP_LEVEL_E2E_FACTOR * e2e) : ceil(load * SWEEP_LEVEL_E2E_FACTOR);
    out->requests = (long)(n > SWEEP_LEVEL_MIN_REQUESTS ? n : SWEEP_LEVEL_MIN_REQUESTS);
    char where[200] = "";
    if (cut > 0 && level_s > 0)
        snprintf(where, sizeof where, "; %.0f were still in flight after %.0f s + %.0f s grace (the longest for %.0f s)", cut, level_s,
                 grace_s, in_flight_s);
    char prev[96] = "";
    if (isfinite(prev_e2e_s)) snprintf(prev, sizeof prev, "; E2E p99 at the previous level %.1f s", prev_e2e_s);
    snprintf(out->reason, sizeof out->reason, "not measured: requests outlast the level — %.0f completed%s%s: use "
             "--duration >= %.0fs or --requests %ld", completed, where, prev, out->min_duration_s, out->requests);
}
