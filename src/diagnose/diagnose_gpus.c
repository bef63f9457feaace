/* diagnose_gpus — a deployment split over several GPUs, read from every GPU's own series (one
 * sampler tick reads every GPU, so row k of each GPU's series is the same moment):
 *  - layer_split: the GPUs take turns. llama.cpp's layer split (-sm layer) runs a token's layers
 *    on GPU 0, then on GPU 1: the utilisations add up to about one GPU's worth (sum <= 115 %) and
 *    move against each other, so the deployment is bounded by one GPU's work at a time;
 *  - uneven_split: one GPU busier than its share (max / mean busy >= 1.25), named by index — the
 *    straggler; the fix is the tensor split (-ts) that evens the measured busy time: each GPU's new
 *    share is its current share / its busy time (what it gets through per unit of busy time);
 *  - row_split: both GPUs busy at once (sum > 115 %) and the interconnect carrying >= 20 % of its
 *    capacity (NVLink against the GPU catalog's link, PCIe against the link NVML reported): the
 *    per-layer exchange of a row split (-sm row) takes a share of each step.
 * Each claim checks its own numbers: two GPUs with samples of their own at the same ticks, work in
 * those samples, the split mode where the server's command line gave it. Nothing on one GPU. */
#include "diagnose/diagnose_int.h"
#include "model/model.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define GV_MAX 16
#define DIAG_SPLIT_MIN_ROWS 5          /* paired busy samples a split rule needs */
#define DIAG_SPLIT_ROW_BUSY 5.0        /* % summed over GPUs under which a sample holds no work */
#define DIAG_TURNS_SUM 115.0           /* % summed over GPUs up to which they take turns (one GPU's worth + noise) */
#define DIAG_TURNS_MIN 10.0            /* % each GPU works for it to take part in the turns */
#define DIAG_TURNS_CORR (-0.5)         /* correlation of two GPUs' utilisation that shows the turns in the samples */
#define DIAG_UNEVEN 1.25               /* busiest GPU / mean over GPUs from which the split is uneven */
#define DIAG_SPLIT_BUSY 30.0           /* % the busiest GPU must work for its imbalance to matter */
#define DIAG_SPLIT_LINK 0.2            /* interconnect traffic / capacity from which a row split's exchange matters */

static const json_t *get(const json_t *o, const char *k) { return json_object_get(o, k); }

typedef struct {
    int n;                             /* GPUs with a utilisation series */
    int index[GV_MAX];                 /* NVML index */
    const char *host[GV_MAX];          /* NULL on one node */
    double busy[GV_MAX];               /* mean utilisation over the busy samples, % */
    double own[GV_MAX];                /* mean over the GPU's own known samples (GPUs on other nodes tick apart) */
    size_t own_n[GV_MAX];
    bool paired;                       /* busy[] from samples paired by tick (else from each GPU's own) */
    double mem_used[GV_MAX], mem_total[GV_MAX];   /* MiB, means; NAN unknown */
    size_t rows;                       /* paired samples with work */
    double sum;                        /* mean over those of the summed utilisation, % */
    double corr;                       /* correlation of GPU 0's and GPU 1's utilisation (NAN: not 2 GPUs or no spread) */
    double t0_s, t1_s;                 /* the busy samples' span */
} gpu_view;

/* Pairs the GPUs' rows by tick (same t_s within half an interval) and keeps those with work. */
static void gpu_view_read(const diag_in *in, gpu_view *v) {
    memset(v, 0, sizeof *v);
    v->sum = v->corr = v->t0_s = v->t1_s = NAN;
    const json_t *gpus = get(in->tel, "gpu");
    const json_t *util[GV_MAX], *ts[GV_MAX];
    size_t len = SIZE_MAX, i;
    json_t *g;
    json_array_foreach(gpus, i, g) {
        const json_t *s = get(g, "series");
        if (v->n == GV_MAX || !json_array_size(get(s, "util_gpu_pct"))) continue;
        util[v->n] = get(s, "util_gpu_pct");
        ts[v->n] = get(s, "t_s");
        v->index[v->n] = (int)json_integer_value(get(g, "index"));
        v->host[v->n] = json_string_value(get(g, "host"));
        v->mem_used[v->n] = diag_mean(get(s, "mem_used_mib"));
        v->mem_total[v->n] = diag_num(g, "mem_total_mib");
        v->own[v->n] = diag_mean(util[v->n]);
        size_t k;
        json_t *x;
        json_array_foreach(util[v->n], k, x) if (json_is_number(x)) v->own_n[v->n]++;
        size_t m = json_array_size(util[v->n]) < json_array_size(ts[v->n]) ? json_array_size(util[v->n]) : json_array_size(ts[v->n]);
        if (m < len) len = m;
        v->n++;
    }
    if (v->n < 2) return;
    double half = diag_num(in->tel, "interval_s") / 2;
    if (!(half > 0)) half = 0.05;
    double s[GV_MAX] = {0}, sum = 0, sxy = 0, sxx = 0, syy = 0;
    for (size_t k = 0; k < len; k++) {
        double row[GV_MAX], tot = 0, t = json_number_value(json_array_get(ts[0], k));
        bool ok = true;
        for (int j = 0; j < v->n && ok; j++) {
            const json_t *x = json_array_get(util[j], k);
            ok = json_is_number(x) && fabs(json_number_value(json_array_get(ts[j], k)) - t) <= half;
            row[j] = json_number_value(x);
            tot += row[j];
        }
        if (!ok || tot < DIAG_SPLIT_ROW_BUSY) continue;
        for (int j = 0; j < v->n; j++) s[j] += row[j];
        sum += tot;
        sxy += row[0] * row[1];
        sxx += row[0] * row[0];
        syy += row[1] * row[1];
        if (!v->rows) v->t0_s = t > 0 ? t : 0;   /* the first tick may read a hair before the run's t0 */
        v->t1_s = t;
        v->rows++;
    }
    if (!v->rows) return;
    v->paired = true;
    double n = (double)v->rows;
    for (int j = 0; j < v->n; j++) v->busy[j] = s[j] / n;
    v->sum = sum / n;
    if (v->n == 2) {
        double cov = sxy / n - v->busy[0] * v->busy[1];
        double va = sxx / n - v->busy[0] * v->busy[0], vb = syy / n - v->busy[1] * v->busy[1];
        if (va > 1e-9 && vb > 1e-9) v->corr = cov / sqrt(va * vb);
    }
}

/* "GPU 1" or "GPU 1 on host-b". */
static const char *gpu_name(const gpu_view *v, int j, char *buf, size_t len) {
    if (v->host[j]) snprintf(buf, len, "GPU %d on %s", v->index[j], v->host[j]);
    else snprintf(buf, len, "GPU %d", v->index[j]);
    return buf;
}

/* A llama.cpp setting as the other rules' knobs read: {"knob","current","suggested","direction","flag","effect"}. */
static void split_setting(const diag_in *in, json_t *f, const char *knob, const char *flag, const char *cur,
                          const deploy_src *src, const char *sug, const char *effect) {
    if (cur && !strcmp(cur, sug)) return;
    char fl[64];
    /* the flags are llama.cpp's: another engine's run says whose they are */
    snprintf(fl, sizeof fl, "%s%s", flag, strcmp(in->dep.engine, "llama.cpp") && !src->known ? " (llama.cpp)" : "");
    flag = fl;
    char dir[200];
    if (cur) snprintf(dir, sizeof dir, "%s%s \xe2\x86\x92 %s", cur, src && strstr(src->src, "default") ? " (llama.cpp's default)" : "", sug);
    else snprintf(dir, sizeof dir, "%s (current value unknown)", sug);
    json_array_append_new(json_object_get(f, "knobs"), json_pack("{s:s,s:o,s:s,s:s,s:s,s:s}", "knob", knob,
        "current", cur ? json_string(cur) : json_null(), "suggested", sug, "direction", dir, "flag", flag, "effect", effect));
}

static bool mode_is(const diag_in *in, const char *m) { return in->dep.split_mode_s.known && !strcmp(in->dep.split_mode, m); }

/* Every GPU's busy time and share as evidence. */
static void busy_evidence(json_t *f, const gpu_view *v) {
    double tot = 0;
    for (int j = 0; j < v->n; j++) tot += v->busy[j];
    for (int j = 0; j < v->n; j++) {
        char nm[96];
        diag_ev(f, v->busy[j], "%", "telemetry.gpu[].series.util_gpu_pct", "%s busy %.0f%% of the time (%.0f%% of the GPUs' "
                "busy time) over %zu samples%s", gpu_name(v, j, nm, sizeof nm), v->busy[j], tot > 0 ? 100 * v->busy[j] / tot : NAN,
                v->rows, v->paired ? " with work" : " of its own");
    }
}

/* Whether the model and its cache (the memory the GPUs hold together) fit on one of them. */
static bool fits_one_gpu(const gpu_view *v, double *used_gib, double *one_gib) {
    double used = 0, one = INFINITY;
    for (int j = 0; j < v->n; j++) {
        if (!isfinite(v->mem_used[j]) || !(v->mem_total[j] > 0)) return false;
        used += v->mem_used[j];
        if (v->mem_total[j] < one) one = v->mem_total[j];
    }
    *used_gib = used / 1024;
    *one_gib = one / 1024;
    return used <= 0.9 * one;   /* 10 % left for activations and the runtime */
}

static void replica_knob(json_t *f, const gpu_view *v) {
    double used, one;
    if (!fits_one_gpu(v, &used, &one)) return;
    char eff[256];
    snprintf(eff, sizeof eff, "the GPUs hold %.1f GiB together, which fits one GPU's %.0f GiB: a server per GPU (-sm none -mg I, "
             "or CUDA_VISIBLE_DEVICES=I) behind one URL each puts every GPU to work on its own requests", used, one);
    diag_knob(f, "replicas", "one server per GPU", eff);
}

static void rule_layer_split(const diag_in *in, const gpu_view *v, json_t *L) {
    if (mode_is(in, "none") || mode_is(in, "row")) return;   /* independent servers, or GPUs that work together */
    double lo = INFINITY;
    for (int j = 0; j < v->n; j++) if (v->busy[j] < lo) lo = v->busy[j];
    bool anti = isfinite(v->corr) && v->corr <= DIAG_TURNS_CORR;
    /* two GPUs half busy each are also two idle replicas: the turns must show in the samples, or
     * the server must be one llama.cpp splitting by layer */
    if (!(v->sum <= DIAG_TURNS_SUM && lo >= DIAG_TURNS_MIN && (anti || mode_is(in, "layer")))) return;
    double conf = anti && mode_is(in, "layer") ? 0.85 : 0.7;
    json_t *f = diag_finding(L, "layer_split", conf, "the %d GPUs take turns: together they work %.0f%% of the time, one GPU's "
                             "worth, so the deployment is bounded by one GPU's work at a time", v->n, v->sum);
    diag_cost(f, 1 - v->sum / (100.0 * v->n), "of the GPUs' time idle while another works (the most that running them at "
              "once could give back)");
    diag_ev(f, v->sum, "%", "telemetry.gpu[].series.util_gpu_pct (summed per sample)", "utilisation summed over the %d GPUs: "
            "%.0f%% on average in samples with work (at most %.0f%% counts as taking turns)", v->n, v->sum, DIAG_TURNS_SUM);
    busy_evidence(f, v);
    if (isfinite(v->corr))
        diag_ev(f, v->corr, NULL, "telemetry.gpu[0..1].series.util_gpu_pct", "correlation of GPU %d's and GPU %d's utilisation "
                "%.2f%s", v->index[0], v->index[1], v->corr, anti ? ": one works while the other waits" : "");
    if (in->dep.split_mode_s.known)
        diag_ev(f, NAN, NULL, "deployment.split_mode", "split mode %s (%s)", in->dep.split_mode, in->dep.split_mode_s.src);
    if (isfinite(v->t0_s)) diag_window(f, v->t0_s, v->t1_s);
    split_setting(in, f, "split_mode", "-sm/--split-mode", in->dep.split_mode_s.known ? in->dep.split_mode : NULL,
                  &in->dep.split_mode_s, "row", "every layer runs on all GPUs at once, at the cost of exchanging each "
                  "layer's partial results over NVLink/PCIe (measure it: on PCIe it can be slower)");
    replica_knob(f, v);
}

/* The current split as proportions per GPU: -ts as given (llama.cpp splits on ',' or '/'), else
 * equal (llama.cpp's default follows each GPU's free memory: equal on equal, empty GPUs). */
static bool current_split(const diag_in *in, const gpu_view *v, double *frac, bool *assumed) {
    for (int j = 0; j < v->n; j++) frac[j] = 1;
    *assumed = !in->dep.tensor_split_s.known;
    if (!*assumed) {
        const char *p = in->dep.tensor_split;
        for (int j = 0; j < v->n; j++) {
            char *end;
            double x = strtod(p, &end);
            if (end == p || !(x >= 0)) return false;
            frac[j] = x;
            p = *end == ',' || *end == '/' ? end + 1 : end;
        }
    }
    double tot = 0;
    for (int j = 0; j < v->n; j++) tot += frac[j];
    if (!(tot > 0)) return false;
    for (int j = 0; j < v->n; j++) frac[j] /= tot;
    return true;
}

static void rule_uneven(const diag_in *in, const gpu_view *v, json_t *L) {
    int hi = 0;
    double mean = 0;
    for (int j = 0; j < v->n; j++) { mean += v->busy[j] / v->n; if (v->busy[j] > v->busy[hi]) hi = j; }
    double ratio = mean > 0 ? v->busy[hi] / mean : NAN;
    if (!(v->busy[hi] >= DIAG_SPLIT_BUSY && ratio >= DIAG_UNEVEN)) return;
    bool turns = !mode_is(in, "row") && !mode_is(in, "none") && v->sum <= DIAG_TURNS_SUM;
    char nm[96];
    json_t *f = diag_finding(L, "uneven_split", 0.75, "%s is the straggler: busy %.0f%% of the time, %.2fx the mean over the %d "
                             "GPUs (uneven split)", gpu_name(v, hi, nm, sizeof nm), v->busy[hi], ratio, v->n);
    diag_cost(f, 1 - mean / v->busy[hi], turns ? "of the straggler's time the other GPUs could take: bounds prompt batches "
              "llama.cpp pipelines over the GPUs (a single decode step, taking turns, is the sum over GPUs either way)"
              : "of the straggler's time the other GPUs could take: the others wait for it (row split) or it saturates "
              "first (one server per GPU)");
    json_object_set_new(f, "gpu_index", json_integer(v->index[hi]));
    if (v->host[hi]) json_object_set_new(f, "gpu_host", json_string(v->host[hi]));
    busy_evidence(f, v);
    if (isfinite(v->t0_s)) diag_window(f, v->t0_s, v->t1_s);
    if (mode_is(in, "none")) {   /* a server per GPU: the load is what is uneven */
        diag_knob(f, "load balance", "even the requests over the servers", "the busier server's GPU saturates first");
        return;
    }
    double frac[GV_MAX];
    bool assumed;
    if (!current_split(in, v, frac, &assumed)) return;
    /* GPU j gets through frac[j] of the work in busy[j] of the time: frac/busy per unit of busy
     * time; shares in that proportion give every GPU the same busy time */
    double w[GV_MAX], lo = INFINITY;
    for (int j = 0; j < v->n; j++) {
        if (!(v->busy[j] > 0) || !(frac[j] > 0)) return;   /* a GPU with no work or no share: no rate to even */
        w[j] = frac[j] / v->busy[j];
        if (w[j] < lo) lo = w[j];
    }
    char sug[64] = "", cur[64] = "";
    for (int j = 0; j < v->n; j++)
        snprintf(sug + strlen(sug), sizeof sug - strlen(sug), "%s%.2g", j ? "," : "", w[j] / lo);
    if (assumed) snprintf(cur, sizeof cur, "by free memory");
    else snprintf(cur, sizeof cur, "%s", in->dep.tensor_split);
    diag_ev(f, NAN, NULL, assumed ? "llama.cpp's default (no -ts on the command line)" : "deployment.tensor_split",
            "tensor split %s%s: GPU shares %s", cur, assumed ? " (equal on equal GPUs, assumed)" : "",
            assumed ? "equal" : in->dep.tensor_split_s.src);
    split_setting(in, f, "tensor_split", "-ts/--tensor-split", cur, &in->dep.tensor_split_s, sug,
                  "shares in proportion to what each GPU gets through per unit of busy time: every GPU busy as long as "
                  "the others (keep each GPU's share within its memory)");
}

/* The interconnect's busiest share over the GPUs: NVLink (rx + tx against the catalog's link, both
 * directions, as the communication rule reads it), else PCIe one way against the NVML link. */
static double link_share(const diag_in *in, const char **what) {
    const hw_gpu *hw = deploy_has_gpu(&in->dep) ? hw_find(in->dep.gpu) : NULL;
    int gen, width;
    double pcie = diag_pcie_link_mb_s(in, &gen, &width), best = NAN;
    size_t i;
    json_t *g;
    json_array_foreach(get(in->tel, "gpu"), i, g) {
        const json_t *s = get(g, "series");
        double rx = diag_mean(get(s, "gpm_nvlink_rx_mb_s")), tx = diag_mean(get(s, "gpm_nvlink_tx_mb_s"));
        if (!isfinite(rx)) { rx = diag_mean(get(s, "nvlink_rx_mb_s")); tx = diag_mean(get(s, "nvlink_tx_mb_s")); }
        if (isfinite(rx) && hw && hw->link_bytes_per_s > 0 && !hw->pcie) {
            double x = (rx + (isfinite(tx) ? tx : 0)) * 1e6 / hw->link_bytes_per_s;
            if (!(x <= best)) { best = x; *what = "NVLink"; }
        }
        double prx = diag_mean(get(s, "gpm_pcie_rx_mb_s")), ptx = diag_mean(get(s, "gpm_pcie_tx_mb_s"));
        if (!isfinite(prx)) { prx = diag_mean(get(s, "pcie_rx_mb_s")); ptx = diag_mean(get(s, "pcie_tx_mb_s")); }
        if (isfinite(prx) && isfinite(pcie) && pcie > 0) {
            double x = (isfinite(ptx) && ptx > prx ? ptx : prx) / pcie;
            if (!(x <= best)) { best = x; *what = "PCIe"; }
        }
    }
    return best;
}

static void rule_row_split(const diag_in *in, const gpu_view *v, json_t *L) {
    if (mode_is(in, "none") || mode_is(in, "layer")) return;   /* no per-layer exchange between independent servers or turns */
    double lo = INFINITY;
    for (int j = 0; j < v->n; j++) if (v->busy[j] < lo) lo = v->busy[j];
    const char *what = NULL;
    double share = link_share(in, &what);
    if (!(v->sum > DIAG_TURNS_SUM && lo >= DIAG_SPLIT_BUSY && share >= DIAG_SPLIT_LINK)) return;
    json_t *f = diag_finding(L, "row_split", mode_is(in, "row") ? 0.75 : 0.6, "the %d GPUs work at once and exchange each layer's "
                             "results: %s carries %.0f%% of its capacity", v->n, what, 100 * share);
    diag_cost(f, share, "of the time the %s link is busy (llama.cpp's row split copies between GPUs within the step)", what);
    diag_ev(f, 100 * share, "%", what[0] == 'N' ? "telemetry.gpu[].series nvlink rx+tx vs the GPU catalog's link"
            : "telemetry.gpu[].series pcie (one way) vs the link NVML reported", "%s traffic %.0f%% of the link on the busiest GPU "
            "(counts from %.0f%%)", what, 100 * share, 100 * DIAG_SPLIT_LINK);
    diag_ev(f, v->sum, "%", "telemetry.gpu[].series.util_gpu_pct (summed per sample)", "utilisation summed over the %d GPUs %.0f%%: "
            "they work at the same time", v->n, v->sum);
    busy_evidence(f, v);
    if (in->dep.split_mode_s.known)
        diag_ev(f, NAN, NULL, "deployment.split_mode", "split mode %s (%s)", in->dep.split_mode, in->dep.split_mode_s.src);
    if (isfinite(v->t0_s)) diag_window(f, v->t0_s, v->t1_s);
    split_setting(in, f, "split_mode", "-sm/--split-mode", in->dep.split_mode_s.known ? in->dep.split_mode : NULL,
                  &in->dep.split_mode_s, "layer", "one activation per token crosses at each split point instead of every "
                  "layer's partial results (the GPUs then take turns)");
    replica_knob(f, v);
}

void diag_gpu_split_rules(diag_in *in, json_t *list, json_t *checked) {
    gpu_view v;
    gpu_view_read(in, &v);
    if (v.n < 2) {
        diag_checked(checked, "gpu_split", false, v.n ? "one GPU: a split needs two or more" : "no GPU telemetry");
        return;
    }
    if (v.rows < DIAG_SPLIT_MIN_ROWS) {
        /* GPUs of several nodes tick apart: no turns or concurrency to read, but each GPU's own mean
         * still tells a straggler */
        bool own = true;
        for (int j = 0; j < v.n; j++) own = own && v.own_n[j] >= DIAG_SPLIT_MIN_ROWS && isfinite(v.own[j]);
        if (!own) {
            diag_checked(checked, "gpu_split", false, "fewer than 5 samples where every GPU was read at the same tick with work");
            return;
        }
        diag_checked(checked, "gpu_split", true, "the GPUs were not read at the same ticks (several nodes): only the straggler, "
                     "from each GPU's own mean utilisation");
        size_t least = SIZE_MAX;
        for (int j = 0; j < v.n; j++) { v.busy[j] = v.own[j]; if (v.own_n[j] < least) least = v.own_n[j]; }
        v.rows = least;
        v.sum = v.t0_s = v.t1_s = NAN;
        rule_uneven(in, &v, list);
        return;
    }
    diag_checked(checked, "gpu_split", true, "telemetry.gpu[].series.util_gpu_pct paired by tick, NVLink/PCIe columns, "
                 "deployment.split_mode / tensor_split (llama-server's command line)");
    rule_layer_split(in, &v, list);
    rule_uneven(in, &v, list);
    rule_row_split(in, &v, list);
}
