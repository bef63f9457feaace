/* sim_validate — loads the published-rows table, simulates every case, scores the errors, fits the
 * mechanism parameters and runs the leave-one-out check (see sim_validate.h). */
#include "engine/sim_validate.h"
#include "metrics/metric_table.h"
#include "engine/sim_interval.h"
#include "engine/sim_calibrate.h"
#include "engine/sim.h"
#include "engine/sim_run.h"
#include "metrics/summary.h"
#include "metrics/stats.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

enum { K_SERVE, K_DECODE, K_PREFILL, K_BENCH_PP, K_BENCH_TG };

#define MAX_METRICS 8

typedef struct {
    char name[32];
    double published, predicted;
    int cat;
} val_metric;

typedef struct {
    int row;                 /* index of its row */
    char name[48];
    int kind;
    sim_params p;
    /* serve */
    char dataset[160];
    double rate;             /* 0: closed loop; INFINITY: all at once */
    const char *arrival;     /* the open loop's arrival process (NULL: Poisson); a measured sweep's config.arrival */
    int concurrency;
    long prompts;
    long warmup;             /* requests of the first wave, not measured (the sources' warm-ups) */
    /* decode / prefill / bench */
    double batch, context, tokens, prompt_len, depth, n_tokens, ub;
    double mean_in_tokens;   /* serve: the measured requests' mean prompt (the request path's per-token part) */
    double window_cells;     /* serve on llama.cpp (profile kv_window): the KV cells in use, time-weighted mean */
    val_metric m[MAX_METRICS];
    int n_m;
    int dirty;               /* must be simulated again */
} val_case;

typedef struct {
    char id[16];
    char group[48];          /* source and engine generation: rows that share fitted constants */
    int generation;          /* the engine's year (time split) */
    char deployment[64];     /* rows of one deployment at several loads (calibrate on one, predict the rest) */
    char not_simulated[200];
    /* simulated and scored, never in a fit: a miss the model has no mechanism for yet, which the
     * global parameters must not absorb (the row says why) */
    char predict_only[240];
    /* ... only its TTFTs: they stay out of the request path's fit (the row says why) */
    char ttft_predict_only[240];
    int first_case, n_cases;
    int scored;              /* has metrics in a target category */
    int has_ttft;            /* a TTFT among them */
    char pair[64];           /* engine/architecture (sim_interval_engine, sim_interval_arch) */
    int unseen;              /* no fitted group but its own runs that pair: its steady cases are SIM_IV_UNSEEN */
} val_row;

struct val_table {
    val_row *rows;
    int n_rows;
    val_case *cases;
    int n_cases;
    unsigned char *excl;     /* rows left out of the fit's objective (a group, a time split); NULL none */
    int sweeps, iters;       /* the cold fit's effort (3 and 12: --fit; fewer in the group refits) */
};

static int left_out(const val_table *t, int r, int exclude) { return r == exclude || (t->excl && t->excl[r]); }

/* Whether a fit sees row r: in its training rows (train NULL: all) and not predict-only. */
static int fit_sees(const val_table *t, const unsigned char *train, int r) {
    return (!train || train[r]) && !t->rows[r].predict_only[0];
}

/* Whether the request path's fit sees row r's TTFTs. */
static int rp_sees(const val_table *t, const unsigned char *train, int r) {
    return fit_sees(t, train, r) && !t->rows[r].ttft_predict_only[0];
}

/* The fitted parameters: where they live in cost_factors, their physical range, the prior (a
 * physically plausible value the refits' ridge pulls to), and the start: where every refit of the
 * validation starts (its Gauss-Newton linearization point), the values `--fit` gave on the 2024-25
 * rows alone (shard_loss and comm_inter_s, which those rows do not move, at their priors). The
 * headline is measured from the start so that no 2026 row shapes the point its own prediction is
 * refitted from; the defaults in use (cost_default_factors) are the same refit on every group,
 * printed as "refit on every group". */
typedef struct { const char *name, *flag; size_t off; double lo, hi, prior, start; } fit_param;
static const fit_param params[] = {
    {"kernel_s", "kernel-time", offsetof(cost_factors, kernel_s), 1e-6, 10e-6, 3e-6, 3.98e-6},
    {"launch_s", "launch-time", offsetof(cost_factors, launch_s), 5e-6, 100e-6, 15e-6, 29.77e-6},
    {"step_overhead_s", "step-overhead", offsetof(cost_factors, step_overhead_s), 0.1e-3, 10e-3, 2e-3, 9.548e-3},
    {"seq_overhead_s", "seq-overhead", offsetof(cost_factors, seq_overhead_s), 1e-6, 200e-6, 10e-6, 33.88e-6},
    /* vLLM V1's engine core (and ATOM's, taken as its): prior and start the two published bounds of
     * cost_default_factors (vllm#17866, vllm#10634); no 2024-25 row of the start's fit runs it */
    {"step_overhead_v1_s", "step-overhead-v1", offsetof(cost_factors, step_overhead_v1_s), 0.1e-3, 10e-3, 1e-3, 1e-3},
    {"seq_overhead_trt_s", "seq-overhead-trt", offsetof(cost_factors, seq_overhead_trt_s), 1e-6, 500e-6, 50e-6, 170.21e-6},
    {"comm_latency_s", "comm-latency", offsetof(cost_factors, comm_latency_s), 2.3e-6, 25e-6, 10e-6, 5.40e-6},
    /* prior and start: nccl-tests' tight loop (NVIDIA/nccl#1244); no 2024-25 row of the start's fit
     * runs a collective across nodes inside its step */
    {"comm_inter_s", "comm-inter-latency", offsetof(cost_factors, comm_inter_s), 20e-6, 400e-6, 46.5e-6, 46.5e-6},
    {"moe_eff", "moe-eff", offsetof(cost_factors, moe_eff), 0.2, 1.0, 0.7, 0.355},
    /* the 2025 Triton fused MoE on Hopper block-fp8 (MOE_FUSED); start at moe_eff's, where its rows were */
    {"moe_fused_eff", "moe-fused-eff", offsetof(cost_factors, moe_fused_eff), 0.1, 1.0, 0.5, 0.355},
    {"moe_fused_v1_eff", "moe-fused-v1-eff", offsetof(cost_factors, moe_fused_v1_eff), 0.1, 1.0, 0.5, 0.355},
    {"moe_triton_eff", "moe-triton-eff", offsetof(cost_factors, moe_triton_eff), 0.05, 1.0, 0.4, 0.470},
    {"moe_triton_fp8_eff", "moe-triton-fp8-eff", offsetof(cost_factors, moe_triton_fp8_eff), 0.02, 1.0, 0.2, 0.107},
    {"attn_triton_eff", "attn-triton-eff", offsetof(cost_factors, attn_triton_eff), 0.005, 0.667, 0.1, 0.303},
    {"ggml_compute_eff", "ggml-compute-eff", offsetof(cost_factors, ggml_compute_eff), 0.05, 1.0, 0.5, 0.27},
    {"shard_loss", "shard-loss", offsetof(cost_factors, shard_loss), 0.01, 2.0, 0.2, 0.2},
};
#define N_PARAMS (sizeof params / sizeof params[0])

static double *fp(cost_factors *f, size_t i) { return (double *)((char *)f + params[i].off); }

void val_default_factors(cost_factors *f) {
    cost_default_factors(f);
    f->request_s = COST_REQUEST_FIT_S;
    f->request_token_s = COST_REQUEST_TOKEN_FIT_S;
}

void val_prior_factors(cost_factors *f) {
    val_default_factors(f);
    for (size_t i = 0; i < N_PARAMS; i++) *fp(f, i) = params[i].prior;
}

/* One parameter's value as printed: microseconds for times (milliseconds from 1 ms), else as is. */
static double param_shown(size_t i, const cost_factors *f, const char **unit) {
    double v = *(const double *)((const char *)f + params[i].off);
    int time = strstr(params[i].name, "_s") != NULL;
    *unit = !time ? "" : params[i].prior >= 1e-3 ? " ms" : " us";
    return !time ? v : params[i].prior >= 1e-3 ? v * 1e3 : v * 1e6;
}

/* One line of every fitted parameter at f, each followed by its value at ref in brackets when ref is
 * given; the values as shown go to shown[] when it is given. */
static void print_param_line(FILE *out, const char *head, const cost_factors *f, const cost_factors *ref, double *shown) {
    fprintf(out, "%s", head);
    for (size_t i = 0; i < N_PARAMS; i++) {
        const char *u;
        double v = param_shown(i, f, &u);
        fprintf(out, " %s %.3g%s", params[i].name, v, u);
        if (ref) fprintf(out, " (%.3g)", param_shown(i, ref, &u));
        if (shown) shown[i] = v;
    }
    fputc('\n', out);
}

void val_print_factors(FILE *out, const cost_factors *f) {
    for (size_t i = 0; i < N_PARAMS; i++) {
        const char *u;
        double v = param_shown(i, f, &u);
        if (*u) fprintf(out, "  %-16s %10.2f%s   (--%s)\n", params[i].name, v, u, params[i].flag);
        else fprintf(out, "  %-16s %10.3f      (--%s)\n", params[i].name, v, params[i].flag);
    }
}

static int cat_of(const char *s) {
    if (!s) return VAL_OTHER;
    if (!strcmp(s, "tpot")) return VAL_TPOT;
    if (!strcmp(s, "tput")) return VAL_TPUT;
    if (!strcmp(s, "ttft")) return VAL_TTFT;
    if (!strcmp(s, "prefill")) return VAL_PREFILL;
    return VAL_OTHER;
}

/* "--key value --key value": the same keys as dsperf sim; fitted parameters are refused. */
static int apply_flags(sim_params *p, const char *flags, const char *where, char *err, size_t errlen) {
    if (!flags) return 0;
    char buf[1024];
    snprintf(buf, sizeof buf, "%s", flags);
    char *save = NULL;
    for (char *k = strtok_r(buf, " \t", &save); k; k = strtok_r(NULL, " \t", &save)) {
        char *v = strtok_r(NULL, " \t", &save);
        if (strncmp(k, "--", 2) || !v) {
            snprintf(err, errlen, "%s: flags must be --key value pairs (at '%s')", where, k);
            return -1;
        }
        for (size_t i = 0; i < N_PARAMS; i++)
            if (!strcmp(k + 2, params[i].flag)) {
                snprintf(err, errlen, "%s: --%s is a fitted mechanism parameter; a row may not set it", where, k + 2);
                return -1;
            }
        char e2[256];
        int rc = sim_params_set(p, k + 2, v, e2, sizeof e2);
        if (rc) {
            snprintf(err, errlen, "%s: %s", where, rc == 1 ? "unknown flag" : e2);
            if (rc == 1) snprintf(err, errlen, "%s: unknown flag %s", where, k);
            return -1;
        }
    }
    return 0;
}

static double jnum(json_t *o, const char *k, double dflt) {
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

/* The table's schema, checked on load so that a mistyped row fails in one line instead of
 * simulating with a default (an unknown workload key) or scoring nothing (an unknown metric). */
static const char *const CASE_KEYS[] = {"name", "kind", "flags", "workload", "metrics", NULL};
static const char *const WORKLOAD_KEYS[] = {"dataset", "rate", "concurrency", "prompts", "sim_prompts", "sim_warmup", "batch",
                                            "context", "tokens", "prompt", "depth", "n", "ub", NULL};
static const char *const METRIC_KEYS[] = {"name", "published", "score", "derived", NULL};
static const char *const SIM_KEYS[] = {"cases", "flags", "group", "generation", "deployment", "assumptions", "predict_only",
                                       "ttft_predict_only", "not_simulated", NULL};
/* what each kind of case predicts: a serve case the summary's latencies as they are (run_serve reads
 * these) and the throughputs it derives from the summary and the records (run_serve sets those) */
static const char *const SERVE_SUMMARY_METRICS[] = {METRIC(median_ttft_ms), METRIC(mean_ttft_ms), METRIC(median_tpot_ms),
                                                    METRIC(mean_tpot_ms), METRIC(median_itl_ms), METRIC(mean_e2el_ms),
                                                    METRIC(median_e2el_ms), NULL};
static const char *const SERVE_DERIVED_METRICS[] = {METRIC(output_throughput), METRIC(request_throughput), "output_throughput_per_gpu",
                                                    "total_throughput_per_gpu", "per_user_tok_s", NULL};
static const char *const DECODE_METRICS[] = {"tok_s_per_gpu", "tpot_ms", NULL};
static const char *const PREFILL_METRICS[] = {"prefill_tok_s_per_gpu", NULL};
static const char *const BENCH_METRICS[] = {"tok_s", "tpot_ms", NULL};

static int in_list(const char *const *list, const char *s) {
    for (; s && *list; list++)
        if (!strcmp(*list, s)) return 1;
    return 0;
}

/* appends the list's entries to buf, comma-separated */
static void join_list(const char *const *list, char *buf, size_t len) {
    size_t o = strlen(buf);
    for (; *list && o < len; list++) o += (size_t)snprintf(buf + o, len - o, "%s%s", o ? ", " : "", *list);
}

/* every key of object o is in list; else the message names the first stranger and the known ones */
static int keys_known(json_t *o, const char *const *list, const char *what, const char *where, char *err, size_t errlen) {
    const char *k;
    json_t *v;
    json_object_foreach(o, k, v) {
        if (in_list(list, k)) continue;
        char known[400] = "";
        join_list(list, known, sizeof known);
        snprintf(err, errlen, "%s: unknown %s key '%s' (known: %s)", where, what, k, known);
        return -1;
    }
    return 0;
}

static int load_case(val_table *t, int row, const char *row_flags, json_t *c, char *err, size_t errlen) {
    val_case *vc = &t->cases[t->n_cases];
    memset(vc, 0, sizeof *vc);
    vc->row = row;
    vc->dirty = 1;
    snprintf(vc->name, sizeof vc->name, "%s", json_string_value(json_object_get(c, "name")) ?: "");
    const char *kind = json_string_value(json_object_get(c, "kind"));
    char where[96];
    snprintf(where, sizeof where, "row %s case %s", t->rows[row].id, vc->name);
    if (!kind) { snprintf(err, errlen, "%s: no kind", where); return -1; }
    vc->kind = !strcmp(kind, "serve") ? K_SERVE : !strcmp(kind, "decode") ? K_DECODE : !strcmp(kind, "prefill") ? K_PREFILL
             : !strcmp(kind, "bench-pp") ? K_BENCH_PP : !strcmp(kind, "bench-tg") ? K_BENCH_TG : -1;
    if (vc->kind < 0) { snprintf(err, errlen, "%s: unknown kind '%s'", where, kind); return -1; }
    for (int i = 0; i < t->n_cases; i++)
        if (t->cases[i].row == row && !strcmp(t->cases[i].name, vc->name)) {
            snprintf(err, errlen, "%s: a second case of that name in the row (case names are what the output reports)", where);
            return -1;
        }
    if (keys_known(c, CASE_KEYS, "case", where, err, errlen) < 0) return -1;
    sim_default_params(&vc->p);
    if (apply_flags(&vc->p, row_flags, where, err, errlen) < 0) return -1;
    if (apply_flags(&vc->p, json_string_value(json_object_get(c, "flags")), where, err, errlen) < 0) return -1;
    json_t *w = json_object_get(c, "workload");
    if (w && (!json_is_object(w) || keys_known(w, WORKLOAD_KEYS, "workload", where, err, errlen) < 0)) {
        if (!json_is_object(w)) snprintf(err, errlen, "%s: \"workload\" is not an object", where);
        return -1;
    }
    snprintf(vc->dataset, sizeof vc->dataset, "%s", json_string_value(json_object_get(w, "dataset")) ?: "random:in=1024,out=128");
    json_t *rate = json_object_get(w, "rate");
    vc->rate = json_is_string(rate) && !strcmp(json_string_value(rate), "inf") ? INFINITY : jnum(w, "rate", 0);
    vc->concurrency = (int)jnum(w, "concurrency", 0);
    vc->prompts = (long)jnum(w, "sim_prompts", jnum(w, "prompts", 1000));
    vc->warmup = (long)jnum(w, "sim_warmup", 0);
    vc->batch = jnum(w, "batch", 1);
    vc->context = jnum(w, "context", 1024);
    vc->tokens = jnum(w, "tokens", 1024);
    vc->prompt_len = jnum(w, "prompt", 1024);
    vc->depth = jnum(w, "depth", 0);
    vc->n_tokens = jnum(w, "n", 512);
    vc->ub = jnum(w, "ub", 512);
    if (vc->kind == K_SERVE && vc->rate == 0 && vc->concurrency <= 0) {
        snprintf(err, errlen, "%s: a serve case needs a rate or a concurrency", where);
        return -1;
    }
    json_t *ms = json_object_get(c, "metrics");
    if (!json_is_array(ms) || json_array_size(ms) == 0) { snprintf(err, errlen, "%s: no \"metrics\" array", where); return -1; }
    if (json_array_size(ms) > MAX_METRICS) { snprintf(err, errlen, "%s: more than %d metrics", where, MAX_METRICS); return -1; }
    const char *const *names = vc->kind == K_SERVE ? SERVE_SUMMARY_METRICS : vc->kind == K_DECODE ? DECODE_METRICS
                             : vc->kind == K_PREFILL ? PREFILL_METRICS : BENCH_METRICS;
    const char *const *more = vc->kind == K_SERVE ? SERVE_DERIVED_METRICS : NULL;
    size_t i;
    json_t *m;
    json_array_foreach(ms, i, m) {
        val_metric *x = &vc->m[vc->n_m++];
        if (keys_known(m, METRIC_KEYS, "metric", where, err, errlen) < 0) return -1;
        const char *mname = json_string_value(json_object_get(m, "name"));
        if (!in_list(names, mname) && !(more && in_list(more, mname))) {
            char known[600] = "";
            join_list(names, known, sizeof known);
            if (more) join_list(more, known, sizeof known);
            snprintf(err, errlen, "%s: metric '%s' is not one a %s case predicts (%s)", where, mname ?: "(no name)", kind, known);
            return -1;
        }
        snprintf(x->name, sizeof x->name, "%s", mname);
        x->published = jnum(m, "published", NAN);
        if (!(x->published > 0) || !isfinite(x->published)) {
            snprintf(err, errlen, "%s: metric %s has no positive \"published\" number", where, mname);
            return -1;
        }
        const char *score = json_string_value(json_object_get(m, "score"));
        if (json_object_get(m, "score") && !(score && (cat_of(score) != VAL_OTHER || !strcmp(score, "other")))) {
            snprintf(err, errlen, "%s: metric %s: score must be tpot, tput, ttft, prefill or other", where, mname);
            return -1;
        }
        x->cat = cat_of(score);
        x->predicted = NAN;
        if (x->cat != VAL_OTHER) t->rows[row].scored = 1;
        if (x->cat == VAL_TTFT) t->rows[row].has_ttft = 1;
    }
    /* the engine must build: a bad layout is the table's error, said now */
    cost_model cm;
    if (sim_params_cost(&vc->p, &cm, err, errlen) < 0) {
        char e2[400];
        snprintf(e2, sizeof e2, "%s: %s", where, err);
        snprintf(err, errlen, "%s", e2);
        return -1;
    }
    cost_free(&cm);
    t->n_cases++;
    return 0;
}

static void mark_unseen(val_table *t);

int val_load(const char *path, val_table **out, char *err, size_t errlen) {
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    if (!root) { snprintf(err, errlen, "cannot read %s: %s (line %d)", path, je.text, je.line); return -1; }
    json_t *rows = json_object_get(root, "rows");
    if (!json_is_array(rows)) { snprintf(err, errlen, "%s: no \"rows\" array", path); json_decref(root); return -1; }
    val_table *t = calloc(1, sizeof *t);
    size_t nc = 0, i, j;
    json_t *r, *c;
    json_array_foreach(rows, i, r) nc += json_array_size(json_object_get(json_object_get(r, "sim"), "cases"));
    if (!t || !(t->rows = calloc(json_array_size(rows) + 1, sizeof *t->rows)) || !(t->cases = calloc(nc + 1, sizeof *t->cases))) {
        val_free(t);
        json_decref(root);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    json_array_foreach(rows, i, r) {
        val_row *vr = &t->rows[t->n_rows];
        snprintf(vr->id, sizeof vr->id, "%s", json_string_value(json_object_get(r, "id")) ?: "");
        json_t *sim = json_object_get(r, "sim");
        int bad = !vr->id[0] || !json_is_object(sim);
        for (int k = 0; !bad && k < t->n_rows; k++) bad = !strcmp(t->rows[k].id, vr->id) ? 2 : 0;
        if (bad || keys_known(sim, SIM_KEYS, "sim", vr->id, err, errlen) < 0) {
            if (bad == 2) snprintf(err, errlen, "%s: row %s: a second row with that id", path, vr->id);
            else if (bad) snprintf(err, errlen, "%s: row %zu: no \"id\" string or no \"sim\" object", path, i + 1);
            val_free(t);
            json_decref(root);
            return -1;
        }
        snprintf(vr->not_simulated, sizeof vr->not_simulated, "%s", json_string_value(json_object_get(sim, "not_simulated")) ?: "");
        snprintf(vr->predict_only, sizeof vr->predict_only, "%s", json_string_value(json_object_get(sim, "predict_only")) ?: "");
        snprintf(vr->ttft_predict_only, sizeof vr->ttft_predict_only, "%s",
                 json_string_value(json_object_get(sim, "ttft_predict_only")) ?: "");
        snprintf(vr->group, sizeof vr->group, "%s", json_string_value(json_object_get(sim, "group")) ?: vr->id);
        vr->generation = (int)jnum(sim, "generation", 0);
        snprintf(vr->deployment, sizeof vr->deployment, "%s", json_string_value(json_object_get(sim, "deployment")) ?: "");
        vr->first_case = t->n_cases;
        const char *flags = json_string_value(json_object_get(sim, "flags"));
        int row = t->n_rows++;
        json_array_foreach(json_object_get(sim, "cases"), j, c) {
            if (load_case(t, row, flags, c, err, errlen) < 0) { val_free(t); json_decref(root); return -1; }
        }
        t->rows[row].n_cases = t->n_cases - t->rows[row].first_case;
    }
    json_decref(root);
    mark_unseen(t);
    *out = t;
    return 0;
}

void val_free(val_table *t) {
    if (!t) return;
    free(t->rows);
    free(t->cases);
    free(t);
}

static int gpus_of(const sim_params *p) {
    int n = p->tp;
    if (p->prefill_instances > 0) n += p->prefill_instances * (p->prefill_tp > 0 ? p->prefill_tp : p->tp);
    return n;
}

static void set_metric(val_case *c, const char *name, double v) {
    for (int i = 0; i < c->n_m; i++)
        if (!strcmp(c->m[i].name, name)) c->m[i].predicted = v;
}

static int run_serve(val_case *c, char *err, size_t errlen) {
    /* wide DP: one rank's share of the load, its batch counted dp times (the ranks are symmetric;
     * Poisson arrivals split into dp Poisson streams) */
    int k = c->p.dp > 1 && c->p.prefill_instances == 0 ? c->p.dp : (c->p.dp == 0 ? c->p.tp : 1);
    /* a closed loop of c users puts ceil(c / dp) on the busiest rank: fewer users than ranks leave
     * ranks idle, so the rank's results scale by c over its users (4 users on DP 8: 4 ranks busy),
     * not by dp, and the MoE sees c tokens */
    double scale = k;
    if (c->concurrency > 0 && k > 1) {
        int rank_users = (c->concurrency + k - 1) / k;
        scale = (double)c->concurrency / rank_users;
        k = (int)lround(scale);
        if (k < 1) k = 1;
    }
    c->p.rank_sample = k;
    size_t wu = (size_t)((c->warmup + k - 1) / k);
    size_t n = (size_t)((c->prompts + k - 1) / k) + wu;
    int32_t *ins = NULL, *outs = NULL;
    int64_t *stamps = NULL, *times = NULL;
    if (sim_workload_lengths(c->dataset, &n, 1, 128, &ins, &outs, &stamps, err, errlen) < 0) return -1;
    free(stamps);
    engine *e = engine_sim_create(&c->p, err, errlen);
    if (!e) { free(ins); free(outs); return -1; }
    int rc = -1;
    recset recs;
    recset_init(&recs);
    if (c->concurrency <= 0) {
        if (isinf(c->rate)) {   /* all at once */
            times = calloc(n ? n : 1, sizeof *times);
            if (!times) goto out;
        } else if (sim_workload_arrivals(c->arrival, c->rate / k, n, &times) < 0) {
            snprintf(err, errlen, "%s: no arrivals at %g req/s", c->name, c->rate);
            goto out;
        }
    }
    sim_workload w = {.n = n, .arrival_ns = times, .concurrency = c->concurrency > 0 ? (c->concurrency + k - 1) / k : 0,
                      .in_tokens = ins, .max_tokens = outs, .warmup = wu, .turnaround_ns = SIM_TURNAROUND_NS,
                      .ingest_ns_per_token = SIM_INGEST_NS_PER_TOKEN, .transit_seed = 2};
    sim_params_add_request_path(&c->p, &w.ingest_fixed_ns, &w.ingest_ns_per_token);
    /* a case that publishes no inter-token latency needs none recorded (sim_workload.coarse_chunks) */
    w.coarse_chunks = 1;
    for (int j = 0; j < c->n_m; j++)
        if (strstr(c->m[j].name, "itl")) w.coarse_chunks = 0;
    double in_sum = 0;
    for (size_t i = wu; i < n; i++) in_sum += ins[i];
    c->mean_in_tokens = n > wu ? in_sum / (double)(n - wu) : 0;
    if (sim_run(e, &w, &recs, NULL, err, errlen) < 0) goto out;
    sim_info si;
    c->window_cells = !sim_get_info(e, &si) && si.busy_s > 0 ? si.window_token_s / si.busy_s : 0;
    summary_opts so;
    summary_default_opts(&so);
    json_t *s = summary_compute(&recs, &so);
    if (!s) { snprintf(err, errlen, "out of memory"); goto out; }
    for (const char *const *k = SERVE_SUMMARY_METRICS; *k; k++) set_metric(c, *k, json_number_value(json_object_get(s, *k)));
    double out_tps = json_number_value(json_object_get(s, METRIC(output_throughput))) * scale;
    set_metric(c, METRIC(output_throughput), out_tps);
    set_metric(c, METRIC(request_throughput), json_number_value(json_object_get(s, METRIC(request_throughput))) * scale);
    set_metric(c, "output_throughput_per_gpu", out_tps / gpus_of(&c->p));
    set_metric(c, "total_throughput_per_gpu", json_number_value(json_object_get(s, METRIC(total_token_throughput))) * scale / gpus_of(&c->p));
    json_decref(s);
    double user = 0;
    long done = 0;
    for (size_t i = 0; i < recs.n; i++) {
        const record *r = &recs.v[i];
        if (r->outcome != REC_OK || r->warmup || r->end_ns <= r->send_ns) continue;
        user += record_out_tokens(r) / ((r->end_ns - r->send_ns) / 1e9);
        done++;
    }
    set_metric(c, "per_user_tok_s", done ? user / done : NAN);
    rc = 0;
out:
    recset_free(&recs);
    engine_destroy(e);
    free(times);
    free(ins);
    free(outs);
    return rc;
}

/* Steady-state cases straight from the cost model: the step the engine would run. */
static int run_step(val_case *c, char *err, size_t errlen) {
    cost_model cm;
    if (sim_params_cost(&c->p, &cm, err, errlen) < 0) return -1;
    cost_batch b;
    cost_step s;
    int g = c->p.tp;
    if (c->kind == K_DECODE) {
        cost_decode_batch_mtp(&cm, (int64_t)c->batch, c->context, &b);
        cost_step_time(&cm, &b, &s);
        double per_step = cost_mtp_tokens_per_step(&cm);
        set_metric(c, "tok_s_per_gpu", c->batch * per_step / s.t / g);
        set_metric(c, "tpot_ms", s.t / per_step * 1e3);
    } else if (c->kind == K_PREFILL) {
        double seqs = fmax(1, round(c->tokens / c->prompt_len));
        memset(&b, 0, sizeof b);
        b.tokens = (int64_t)c->tokens;
        b.seqs = b.prefill_seqs = (int64_t)seqs;
        b.prefill_pairs = seqs * c->prompt_len * (c->prompt_len + 1) / 2;
        cost_step_time(&cm, &b, &s);
        set_metric(c, "prefill_tok_s_per_gpu", c->tokens / s.t / g);
    } else {
        /* llama-bench: one sequence; pp: n tokens in micro-batches of ub after `depth`; tg: n tokens one by
         * one, fed without sampling (llama-bench times llama_decode alone); its -ub is the case's ub */
        cm.f.ggml_sample_s = 0;
        cm.f.ggml_wake_s = 0;
        cm.s.prof.ubatch = 0;
        double t = 0;
        for (double done = 0; done < c->n_tokens;) {
            double n = c->kind == K_BENCH_TG ? 1 : fmin(c->ub, c->n_tokens - done), ctx = c->depth + done;
            if (n == 1) {
                cost_decode_batch(1, ctx + 1, &b);
            } else {
                memset(&b, 0, sizeof b);
                b.tokens = (int64_t)n;
                b.seqs = b.prefill_seqs = 1;
                b.prefill_pairs = n * ctx + n * (n + 1) / 2;
                b.prefill_keys_read = ctx;
            }
            cost_step_time(&cm, &b, &s);
            t += s.t;
            done += n;
        }
        set_metric(c, "tok_s", c->n_tokens / t);
        set_metric(c, "tpot_ms", t / c->n_tokens * 1e3);
    }
    cost_free(&cm);
    return 0;
}

static void set_factors(sim_params *p, const cost_factors *f) {
    for (size_t i = 0; i < N_PARAMS; i++) *fp(&p->factors, i) = *(const double *)((const char *)f + params[i].off);
    /* the request path is the validation's own (fitted on TTFTs apart from the step's parameters) */
    p->factors.request_s = f->request_s;
    p->factors.request_token_s = f->request_token_s;
}

static int run_cases(val_table *t, const cost_factors *f, int only_dirty, char *err, size_t errlen) {
    for (int i = 0; i < t->n_cases; i++) {
        val_case *c = &t->cases[i];
        if (only_dirty && !c->dirty) continue;
        set_factors(&c->p, f);
        int rc = c->kind == K_SERVE ? run_serve(c, err, errlen) : run_step(c, err, errlen);
        if (rc < 0) {
            char e2[400];
            snprintf(e2, sizeof e2, "row %s case %s: %s", t->rows[c->row].id, c->name, err);
            snprintf(err, errlen, "%s", e2);
            return -1;
        }
        c->dirty = 0;
    }
    return 0;
}

int val_run(val_table *t, const cost_factors *f, char *err, size_t errlen) {
    for (int i = 0; i < t->n_cases; i++) t->cases[i].dirty = 1;
    return run_cases(t, f, 0, err, errlen);
}

static double lerr(const val_metric *m) {
    return m->published > 0 && m->predicted > 0 ? log(m->predicted / m->published) : NAN;
}

static int cmp_d(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static int cmp_str(const void *a, const void *b) { return strcmp(*(const char *const *)a, *(const char *const *)b); }

/* A row the table's fits use: simulated, scored, not predict-only. */
static int fitted(const val_table *t, int r) {
    return t->rows[r].scored && !t->rows[r].not_simulated[0] && !t->rows[r].predict_only[0];
}

/* Median and worst over one value per (row, category): a row's cases and metrics of one category
 * are averaged in log space first, so a row with eight cases counts as much as a row with one. */
static void summarize(const val_table *t, const int *use_row, double med[VAL_NCAT], double worst[VAL_NCAT], int n[VAL_NCAT]) {
    double *v = malloc(sizeof(double) * (size_t)(t->n_rows + 1));
    for (int k = 0; k < VAL_NCAT; k++) {
        int m = 0;
        for (int r = 0; v && r < t->n_rows; r++) {
            if (use_row && !use_row[r]) continue;
            double s = 0;
            int cnt = 0;
            for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++)
                for (int j = 0; j < t->cases[ci].n_m; j++) {
                    const val_metric *x = &t->cases[ci].m[j];
                    double e = lerr(x);
                    if (x->cat == k && isfinite(e)) { s += fabs(e); cnt++; }
                }
            if (cnt) v[m++] = s / cnt;
        }
        n[k] = m;
        med[k] = worst[k] = NAN;
        if (m) {
            qsort(v, (size_t)m, sizeof *v, cmp_d);
            med[k] = exp(stats_percentile_sorted(v, (size_t)m, 50)) - 1;
            worst[k] = exp(v[m - 1]) - 1;
        }
    }
    free(v);
}

void val_summary(const val_table *t, double med[VAL_NCAT], double worst[VAL_NCAT], int n[VAL_NCAT]) {
    summarize(t, NULL, med, worst, n);
}

static const char *const cat_names[VAL_NCAT] = {"TPOT", "per-GPU throughput", "TTFT", "prefill throughput", "other"};

/* Median and worst per category over the rows in use (all when NULL), the first ncat categories. */
static void print_summary(FILE *out, const val_table *t, const int *use, int ncat, const char *title) {
    double med[VAL_NCAT], worst[VAL_NCAT];
    int n[VAL_NCAT];
    summarize(t, use, med, worst, n);
    fprintf(out, "%s\n", title);
    for (int k = 0; k < ncat; k++)
        if (n[k]) fprintf(out, "  %-28s rows %2d   median %5.1f%%   worst %5.1f%%\n", cat_names[k], n[k], med[k] * 100, worst[k] * 100);
}

void val_print(FILE *out, const val_table *t) {
    fprintf(out, "%-5s %-22s %-26s %12s %12s %8s  %s\n", "row", "case", "metric", "published", "predicted", "error", "target");
    for (int r = 0; r < t->n_rows; r++) {
        if (t->rows[r].not_simulated[0]) {
            fprintf(out, "%-5s not simulated: %s\n", t->rows[r].id, t->rows[r].not_simulated);
            continue;
        }
        if (t->rows[r].predict_only[0]) fprintf(out, "%-5s predicted, in no fit: %s\n", t->rows[r].id, t->rows[r].predict_only);
        if (t->rows[r].ttft_predict_only[0])
            fprintf(out, "%-5s TTFTs predicted, in no fit: %s\n", t->rows[r].id, t->rows[r].ttft_predict_only);
        for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++)
            for (int j = 0; j < t->cases[ci].n_m; j++) {
                const val_metric *m = &t->cases[ci].m[j];
                double e = lerr(m);
                fprintf(out, "%-5s %-22s %-26s %12.6g %12.6g %+7.1f%%  %s\n", t->rows[r].id, t->cases[ci].name, m->name,
                        m->published, m->predicted, isfinite(e) ? (m->predicted / m->published - 1) * 100 : NAN,
                        m->cat == VAL_OTHER ? "-" : cat_names[m->cat]);
            }
    }
    print_summary(out, t, NULL, VAL_NCAT, "\nper target (one value per row: the mean |log error| of its cases, as a relative error)");
}

/* The fit's objective over the rows in use: the mean over (row, target category) of the squared
 * mean log error. */
static double objective(const val_table *t, int exclude) {
    double sum = 0;
    int cnt = 0;
    for (int r = 0; r < t->n_rows; r++) {
        if (left_out(t, r, exclude) || !fit_sees(t, NULL, r)) continue;
        for (int k = 0; k < VAL_OTHER; k++) {
            double s = 0;
            int m = 0;
            for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++)
                for (int j = 0; j < t->cases[ci].n_m; j++) {
                    double e = lerr(&t->cases[ci].m[j]);
                    if (t->cases[ci].m[j].cat == k && isfinite(e)) { s += e; m++; }
                }
            if (m) { sum += (s / m) * (s / m); cnt++; }
        }
    }
    return cnt ? sum / cnt : 0;
}

/* Which cases a parameter moves (found once by perturbing it): a coordinate step re-simulates only those. */
static int sensitivity(val_table *t, const cost_factors *f, unsigned char *sens, char *err, size_t errlen) {
    if (val_run(t, f, err, errlen) < 0) return -1;
    double *base = malloc(sizeof(double) * (size_t)t->n_cases * MAX_METRICS);
    if (!base) return -1;
    for (int i = 0; i < t->n_cases; i++)
        for (int j = 0; j < MAX_METRICS; j++) base[i * MAX_METRICS + j] = j < t->cases[i].n_m ? t->cases[i].m[j].predicted : 0;
    for (size_t k = 0; k < N_PARAMS; k++) {
        cost_factors g = *f;
        double *x = fp(&g, k);
        *x = *x * 1.5 > params[k].hi ? *x / 1.5 : *x * 1.5;
        if (val_run(t, &g, err, errlen) < 0) { free(base); return -1; }
        for (int i = 0; i < t->n_cases; i++) {
            sens[k * (size_t)t->n_cases + i] = 0;
            for (int j = 0; j < t->cases[i].n_m; j++) {
                double a = base[i * MAX_METRICS + j], b = t->cases[i].m[j].predicted;
                if (isfinite(a) && isfinite(b) && fabs(a - b) > 1e-9 * fabs(a)) sens[k * (size_t)t->n_cases + i] = 1;
            }
        }
    }
    free(base);
    return val_run(t, f, err, errlen);
}

static double eval_at(val_table *t, cost_factors *f, size_t k, double v, const unsigned char *sens, int exclude, char *err,
                      size_t errlen, int *fail) {
    *fp(f, k) = v;
    for (int i = 0; i < t->n_cases; i++) t->cases[i].dirty = sens[k * (size_t)t->n_cases + i] && !left_out(t, t->cases[i].row, exclude);
    if (run_cases(t, f, 1, err, errlen) < 0) *fail = 1;
    return objective(t, exclude);
}

/* Coordinate descent: golden-section search on log(value) per parameter, over its physical range
 * (or, warm, within a factor of 3 of the starting value, fewer steps: the leave-one-out refits). */
static int fit(val_table *t, cost_factors *f, int exclude, int warm, FILE *logf, char *err, size_t errlen) {
    unsigned char *sens = malloc(N_PARAMS * (size_t)(t->n_cases + 1));
    if (!sens) { snprintf(err, errlen, "out of memory"); return -1; }
    if (sensitivity(t, f, sens, err, errlen) < 0) { free(sens); return -1; }
    int fail = 0;
    double best = objective(t, exclude);
    for (int sweep = 0; sweep < (warm ? 1 : t->sweeps ? t->sweeps : 3) && !fail; sweep++) {
        double before = best;
        for (size_t k = 0; k < N_PARAMS && !fail; k++) {
            if (warm && exclude >= 0) {
                /* a refit without row `exclude` moves only the parameters that row depends on; one
                 * that no other row depends on has no data left: back to its prior */
                int touches = 0, others = 0;
                for (int i = 0; i < t->n_cases; i++) {
                    if (!sens[k * (size_t)t->n_cases + i]) continue;
                    if (t->cases[i].row == exclude) touches = 1;
                    else others = 1;
                }
                if (touches && !others) {
                    eval_at(t, f, k, params[k].prior, sens, exclude, err, errlen, &fail);
                    continue;
                }
                if (!touches) continue;
            }
            /* golden-section search on log(value) over the parameter's physical range */
            double x0 = *fp(f, k);
            double a = log(warm ? fmax(params[k].lo, x0 / 3) : params[k].lo), b = log(warm ? fmin(params[k].hi, x0 * 3) : params[k].hi);
            const double gr = 0.6180339887;
            double c = b - gr * (b - a), d = a + gr * (b - a);
            double fc = eval_at(t, f, k, exp(c), sens, exclude, err, errlen, &fail);
            double fd = eval_at(t, f, k, exp(d), sens, exclude, err, errlen, &fail);
            for (int it = 0; it < (warm ? 6 : t->iters ? t->iters : 12) && !fail; it++) {
                if (fc < fd) { b = d; d = c; fd = fc; c = b - gr * (b - a); fc = eval_at(t, f, k, exp(c), sens, exclude, err, errlen, &fail); }
                else { a = c; c = d; fc = fd; d = a + gr * (b - a); fd = eval_at(t, f, k, exp(d), sens, exclude, err, errlen, &fail); }
            }
            double xv = fc < fd ? exp(c) : exp(d), fx = fmin(fc, fd);
            double f0 = eval_at(t, f, k, x0, sens, exclude, err, errlen, &fail);
            if (warm && exclude >= 0) {
                /* without the left-out row the data may not care about this parameter any more
                 * (flat around the start): then the start, fitted with that row, must not stand */
                double fp0 = eval_at(t, f, k, params[k].prior, sens, exclude, err, errlen, &fail);
                if (fp0 <= fmin(fx, f0) + 1e-9) { best = fp0; continue; }
            }
            /* the last evaluation left the parameter elsewhere: set the winner */
            best = eval_at(t, f, k, fx < f0 ? xv : x0, sens, exclude, err, errlen, &fail);
        }
        if (logf) fprintf(logf, "fit sweep %d: objective %.4f (rms log error %.1f%%)\n", sweep + 1, best, (exp(sqrt(best)) - 1) * 100);
        if (before - best < 1e-4) break;
    }
    if (logf && !fail) {
        fprintf(logf, "rows each parameter rests on (their predictions move with it):\n");
        for (size_t k = 0; k < N_PARAMS; k++) {
            fprintf(logf, "  %-20s", params[k].name);
            for (int r = 0; r < t->n_rows; r++) {
                int on = 0;
                for (int i = t->rows[r].first_case; i < t->rows[r].first_case + t->rows[r].n_cases; i++)
                    on |= sens[k * (size_t)t->n_cases + i];
                if (on && !left_out(t, r, exclude)) fprintf(logf, " %s", t->rows[r].id);
            }
            fputc('\n', logf);
        }
    }
    free(sens);
    if (fail) return -1;
    return val_run(t, f, err, errlen);
}

int val_fit(val_table *t, cost_factors *f, int exclude, FILE *logf, char *err, size_t errlen) {
    return fit(t, f, exclude, 0, logf, err, errlen);
}

int val_loo(val_table *t, FILE *out, char *err, size_t errlen) {
    /* every refit starts from the fit on all rows and searches within a factor of 3 of it: the
     * objective without row i is what is minimized, the start only saves work */
    cost_factors all;
    val_prior_factors(&all);
    if (fit(t, &all, -1, 0, NULL, err, errlen) < 0) return -1;
    fprintf(out, "fit on every row:\n");
    val_print(out, t);
    val_print_factors(out, &all);
    fprintf(out, "\n");
    int *use = calloc((size_t)t->n_rows, sizeof *use);
    val_case *keep = malloc(sizeof(val_case) * (size_t)(t->n_cases + 1));
    if (!use || !keep) { free(use); free(keep); snprintf(err, errlen, "out of memory"); return -1; }
    fprintf(out, "leave-one-out: fit on every other row, predict this one\n");
    for (int r = 0; r < t->n_rows; r++) {
        if (!t->rows[r].scored || t->rows[r].not_simulated[0]) continue;
        cost_factors f = all;
        if (fit(t, &f, r, 1, NULL, err, errlen) < 0) { free(use); free(keep); return -1; }
        for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++) {
            keep[ci] = t->cases[ci];
            for (int j = 0; j < t->cases[ci].n_m; j++) {
                const val_metric *m = &t->cases[ci].m[j];
                if (m->cat == VAL_OTHER) continue;
                fprintf(out, "  %-5s %-22s %-24s published %10.5g  LOO predicted %10.5g  %+7.1f%%\n", t->rows[r].id,
                        t->cases[ci].name, m->name, m->published, m->predicted, (m->predicted / m->published - 1) * 100);
            }
        }
        use[r] = 1;
    }
    for (int r = 0; r < t->n_rows; r++)
        if (use[r])
            for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++) t->cases[ci] = keep[ci];
    print_summary(out, t, use, VAL_OTHER, "leave-one-out summary (one value per row)");
    free(use);
    free(keep);
    return 0;
}

/* ---- Prediction on unseen deployments: leave one group out, the time split, intervals ---------
 *
 * A group is a source and engine generation: its rows share whatever the fitted constants absorb
 * of that source (its engine version, its benchmark client), so leaving one row out measures
 * memory, leaving its group out measures prediction. Each refit minimizes the fit's objective over
 * the other groups' rows, linearized around the defaults (one Jacobian of every (row, target) mean
 * log error in every log parameter, by re-simulation), with a ridge to each parameter's prior: a
 * parameter that only the left-out group moves has no data left and goes back to its prior. The
 * left-out rows are then simulated at the refit parameters (exact, not linearized). */

#define GN_RIDGE 0.02     /* weight of (log value - log prior)^2 against the squared log errors */
#define GN_STEP 1.3       /* finite-difference factor of the Jacobian */

typedef struct { int row, cat; } rc_key;

/* The (row, target) pairs of simulated, scored rows and their mean log error now. */
static int row_errors(const val_table *t, rc_key *keys, double *e) {
    int n = 0;
    for (int r = 0; r < t->n_rows; r++)
        for (int k = 0; k < VAL_OTHER; k++) {
            double s = 0;
            int m = 0;
            for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++)
                for (int j = 0; j < t->cases[ci].n_m; j++) {
                    double x = lerr(&t->cases[ci].m[j]);
                    if (t->cases[ci].m[j].cat == k && isfinite(x)) { s += x; m++; }
                }
            if (!m) continue;
            if (keys) keys[n] = (rc_key){r, k};
            if (e) e[n] = s / m;
            n++;
        }
    return n;
}

/* Solves A x = b (n x n, Gaussian elimination with partial pivoting); A and b are destroyed. */
static void solve(double *A, double *b, double *x, int n) {
    for (int c = 0; c < n; c++) {
        int p = c;
        for (int r = c + 1; r < n; r++) if (fabs(A[r * n + c]) > fabs(A[p * n + c])) p = r;
        for (int k = 0; k < n; k++) { double tmp = A[c * n + k]; A[c * n + k] = A[p * n + k]; A[p * n + k] = tmp; }
        double tb = b[c]; b[c] = b[p]; b[p] = tb;
        for (int r = c + 1; r < n; r++) {
            double f = A[c * n + c] != 0 ? A[r * n + c] / A[c * n + c] : 0;
            for (int k = c; k < n; k++) A[r * n + k] -= f * A[c * n + k];
            b[r] -= f * b[c];
        }
    }
    for (int c = n - 1; c >= 0; c--) {
        double s = b[c];
        for (int k = c + 1; k < n; k++) s -= A[c * n + k] * x[k];
        x[c] = A[c * n + c] != 0 ? s / A[c * n + c] : 0;
    }
}

/* own: the training rows are a deployment's own measurement (calibrate, then predict), seen even
 * when predict-only, which keeps a row out of the table's fits, not out of its own calibration */
static int refit_sees(const val_table *t, const unsigned char *train, int r, int own) {
    return own ? train[r] : fit_sees(t, train, r);
}

/* The refit on the (row, target) pairs with train[row]: one ridge-regularized Gauss-Newton step
 * from f0 in log parameters, each clamped to its physical range. */
static void gn_refit(const val_table *t, const cost_factors *f0, const double *J, const double *e0, const rc_key *keys, int n,
                     const unsigned char *train, int own, cost_factors *out) {
    enum { P = N_PARAMS };
    double A[P * P], b[P], x[P];
    memset(A, 0, sizeof A);
    memset(b, 0, sizeof b);
    /* Each group weighs as one observation: its rows share the source's conditions and the engine
     * version's constants, so 20 loads of one deployment are not 20 independent facts (without this
     * one large group sets the global parameters for everyone). TTFT is predicted, not fitted: the
     * published TTFTs carry time the engine model does not have (the client's and server's HTTP,
     * tokenization), which the step parameters must not absorb. */
    int *in_group = calloc((size_t)t->n_rows + 1, sizeof *in_group);
    for (int r = 0; in_group && r < t->n_rows; r++)
        if (refit_sees(t, train, r, own))
            for (int q = 0; q < t->n_rows; q++) in_group[r] += refit_sees(t, train, q, own) && !strcmp(t->rows[q].group, t->rows[r].group);
    for (int i = 0; i < n; i++) {
        if (!refit_sees(t, train, keys[i].row, own) || keys[i].cat == VAL_TTFT) continue;
        double w = in_group && in_group[keys[i].row] > 0 ? 1.0 / in_group[keys[i].row] : 1;
        for (int a = 0; a < P; a++) {
            b[a] -= w * J[i * P + a] * e0[i];
            for (int c = 0; c < P; c++) A[a * P + c] += w * J[i * P + a] * J[i * P + c];
        }
    }
    free(in_group);
    for (int a = 0; a < P; a++) {
        double v0 = *(const double *)((const char *)f0 + params[a].off);
        A[a * P + a] += GN_RIDGE;
        b[a] += GN_RIDGE * (log(params[a].prior) - log(v0));
    }
    solve(A, b, x, P);
    *out = *f0;
    for (int a = 0; a < P; a++) {
        double v = *fp(out, a) * exp(x[a]);
        *fp(out, a) = fmin(params[a].hi, fmax(params[a].lo, v));
    }
}

/* Simulates only the rows in want[] at f. */
static int run_rows(val_table *t, const cost_factors *f, const unsigned char *want, char *err, size_t errlen) {
    for (int i = 0; i < t->n_cases; i++) t->cases[i].dirty = want[t->cases[i].row];
    return run_cases(t, f, 1, err, errlen);
}

/* The load kind a case is of (sim_interval.h): a serve case without a concurrency is an open loop at
 * its rate (inf: every request at once), never capped. */
static sim_iv_load case_load(const val_table *t, const val_case *c) {
    sim_iv_load ld = c->kind == K_SERVE ? sim_interval_load_kind(c->concurrency <= 0, c->rate, 0) : SIM_IV_STEADY;
    return ld == SIM_IV_STEADY && t->rows[c->row].unseen ? SIM_IV_UNSEEN : ld;
}

/* Each row's engine/architecture pair, and whether a fitted group other than its own runs it: out
 * of group, a row no other group shares its pair with is what a deployment of an unseen pair is.
 * Judged against the whole table's fitted rows, also in the time split, where a pair that only
 * later rows hold counts as seen and its rows take the narrower interval. */
static void mark_unseen(val_table *t) {
    for (int r = 0; r < t->n_rows; r++) {
        const sim_params *p = t->rows[r].n_cases ? &t->cases[t->rows[r].first_case].p : NULL;
        char eng[32];
        snprintf(t->rows[r].pair, sizeof t->rows[r].pair, "%s/%s", p ? sim_interval_engine(p->engine_profile, eng, sizeof eng) : "",
                 p ? sim_interval_arch(p->gpu) : "");
    }
    for (int r = 0; r < t->n_rows; r++) {
        t->rows[r].unseen = 1;
        for (int q = 0; q < t->n_rows && t->rows[r].unseen; q++)
            if (fitted(t, q) && strcmp(t->rows[q].group, t->rows[r].group) && !strcmp(t->rows[q].pair, t->rows[r].pair))
                t->rows[r].unseen = 0;
    }
}

/* The pairs of the fitted rows, "a/b, c/d" sorted (sim_interval.c keeps the same list). */
static void seen_pairs(const val_table *t, char *buf, size_t len) {
    const char *v[512];
    int n = 0;
    for (int r = 0; r < t->n_rows && n < 512; r++) {
        if (!fitted(t, r)) continue;
        int dup = 0;
        for (int i = 0; i < n && !dup; i++) dup = !strcmp(v[i], t->rows[r].pair);
        if (!dup) v[n++] = t->rows[r].pair;
    }
    qsort(v, (size_t)n, sizeof *v, cmp_str);
    size_t o = 0;
    buf[0] = 0;
    for (int i = 0; i < n && o < len; i++) o += (size_t)snprintf(buf + o, len - o, "%s%s", i ? ", " : "", v[i]);
}

/* The 80th percentile of |log error| over the metrics of target k of the rows in use, of cases of
 * load kind `load` (-1: all; STEADY_ANY: steady, seen or unseen), NAN with fewer than 3: per
 * metric, since an interval is put on each predicted metric. */
#define STEADY_ANY (-2)
static int load_is(int ld, int want) { return want == -1 || ld == want || (want == STEADY_ANY && ld != SIM_IV_BURST); }

static double q80(const val_table *t, const int *use, int k, int load) {
    double v[2048];
    int m = 0;
    for (int r = 0; r < t->n_rows && m < 2048; r++) {
        if (!use[r]) continue;
        for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++) {
            if (!load_is((int)case_load(t, &t->cases[ci]), load)) continue;
            for (int j = 0; j < t->cases[ci].n_m && m < 2048; j++) {
                double x = lerr(&t->cases[ci].m[j]);
                if (t->cases[ci].m[j].cat == k && isfinite(x)) v[m++] = fabs(x);
            }
        }
    }
    if (m < 3) return NAN;
    qsort(v, (size_t)m, sizeof *v, cmp_d);
    return stats_percentile_sorted(v, (size_t)m, 80);
}

/* Coverage of 80% intervals for the predictions held in t for the rows in use: a metric's interval
 * is its prediction times exp(+-q), q the 80th percentile of the out-of-group |log errors| of the
 * *other* groups' rows of the same load kind (so no row's own error sets its interval; a kind with
 * fewer than 3 such errors takes every kind's). */
static void coverage(FILE *out, const val_table *t, const int *use, const char *title) {
    int *oth = malloc(sizeof(int) * (size_t)(t->n_rows + 1));
    if (!oth) return;
    int in[SIM_IV_LOADS][VAL_OTHER] = {{0}}, all[SIM_IV_LOADS][VAL_OTHER] = {{0}};
    for (int r = 0; r < t->n_rows; r++) {
        if (!use[r]) continue;
        for (int q = 0; q < t->n_rows; q++) oth[q] = use[q] && strcmp(t->rows[q].group, t->rows[r].group);
        for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++) {
            int ld = case_load(t, &t->cases[ci]);
            for (int j = 0; j < t->cases[ci].n_m; j++) {
                const val_metric *m = &t->cases[ci].m[j];
                if (m->cat >= VAL_OTHER) continue;
                double x = lerr(m), h = q80(t, oth, m->cat, ld);
                if (!isfinite(h)) h = q80(t, oth, m->cat, -1);
                if (!isfinite(x) || !isfinite(h)) continue;
                all[ld][m->cat]++;
                in[ld][m->cat] += fabs(x) <= h;
            }
        }
    }
    fprintf(out, "%s\n", title);
    int ti = 0, ta = 0;
    for (int k = 0; k < VAL_OTHER; k++) {
        int a = 0, i = 0;
        for (int ld = 0; ld < SIM_IV_LOADS; ld++) { a += all[ld][k]; i += in[ld][k]; }
        if (!a) continue;
        fprintf(out, "  %-28s %3d of %3d metrics inside (%.0f%%)   interval +-%.0f%% (all groups, steady loads)", cat_names[k], i, a,
                100.0 * i / a, expm1(q80(t, use, k, SIM_IV_STEADY)) * 100);
        if (all[SIM_IV_UNSEEN][k])
            fprintf(out, "; unseen pairs %d of %d inside, interval +-%.0f%%", in[SIM_IV_UNSEEN][k], all[SIM_IV_UNSEEN][k],
                    expm1(q80(t, use, k, SIM_IV_UNSEEN)) * 100);
        if (all[SIM_IV_BURST][k])
            fprintf(out, "; bursts %d of %d inside, interval +-%.0f%%", in[SIM_IV_BURST][k], all[SIM_IV_BURST][k],
                    expm1(q80(t, use, k, SIM_IV_BURST)) * 100);
        fputc('\n', out);
        ti += i;
        ta += a;
    }
    if (ta) fprintf(out, "  %-28s %3d of %3d (%.0f%%)\n", "all targets", ti, ta, 100.0 * ti / ta);
    free(oth);
}

/* The half-widths that sim, plan, serve --engine sim and tune put on their numbers (sim_interval.c),
 * beside the ones this table gives now, per load kind: the constants must follow the table. A kind
 * the rows hold too few of (calibrated bursts) says so. */
static void print_halfwidths(FILE *out, const val_table *t, const int *use, int calibrated) {
    static const int cat[SIM_IV_N] = {VAL_TPOT, VAL_TPUT, VAL_TTFT};
    fprintf(out, "interval half-widths for predictions (%s):", calibrated ? "calibrated" : "uncalibrated");
    for (int ld = 0; ld < SIM_IV_LOADS; ld++) {
        /* a calibrated deployment is measured, seen or not: one steady width over both */
        if (calibrated && ld == SIM_IV_UNSEEN) continue;
        int want = calibrated && ld == SIM_IV_STEADY ? STEADY_ANY : ld;
        if (ld) fprintf(out, " |%s:", sim_interval_load_name((sim_iv_load)ld));
        int any = 0;
        for (int k = 0; k < SIM_IV_N; k++) any |= isfinite(q80(t, use, cat[k], want));
        if (!any) {   /* calibrated bursts: sim_interval_q gives them the uncalibrated bursts' q */
            fprintf(out, " none among these rows%s", calibrated && ld == SIM_IV_BURST ? " (in use: the uncalibrated ones)" : "");
            continue;
        }
        for (int k = 0; k < SIM_IV_N; k++)
            fprintf(out, " %s +-%.0f%% (in use +-%.0f%%)%s", sim_interval_name((sim_iv_target)k), expm1(q80(t, use, cat[k], want)) * 100,
                    expm1(sim_interval_q((sim_iv_target)k, (sim_iv_load)ld, calibrated)) * 100, k + 1 < SIM_IV_N ? ";" : "");
    }
    fputc('\n', out);
}

/* The request path (request_s + request_token_s x prompt tokens, a Python server's time outside
 * the engine's steps) fitted on the TTFTs of the rows in train[]: each TTFT is taken as the one
 * simulated without a request path (base[], per case and metric) plus the path, which is what the
 * transit does to a request (it reaches the queue later; the closed loop's cycle grows by the same
 * few hundred ms in tens of seconds). Least squares of the log error, each group weighing once as
 * in gn_refit; a grid over the physical ranges (0-1 s, 0-100 us a token), then a finer one around
 * the best. Returns the TTFT metrics used (0: f's values kept). */
#define RP_FIXED_MAX_S 1.0
#define RP_TOKEN_MAX_S 100e-6
static double rp_objective(const val_table *t, const double *base, const unsigned char *train, const int *in_group, double a,
                           double b) {
    double sum = 0;
    for (int r = 0; r < t->n_rows; r++) {
        if (!train[r] || in_group[r] <= 0) continue;
        for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++)
            for (int j = 0; j < t->cases[ci].n_m; j++) {
                const val_metric *m = &t->cases[ci].m[j];
                double x = base[ci * MAX_METRICS + j];
                if (m->cat != VAL_TTFT || !(x > 0) || !(m->published > 0)) continue;
                double e = log((x + 1e3 * (a + b * t->cases[ci].mean_in_tokens)) / m->published);
                sum += e * e / in_group[r];
            }
    }
    return sum;
}

static int rp_fit(const val_table *t, const double *base, const unsigned char *train, cost_factors *f) {
    int *in_group = calloc((size_t)t->n_rows + 1, sizeof *in_group), used = 0;
    if (!in_group) return 0;
    /* in_group[r]: the TTFT metrics of r's group in train (a group weighs once) */
    for (int r = 0; r < t->n_rows; r++) {
        if (!rp_sees(t, train, r)) continue;
        for (int q = 0; q < t->n_rows; q++) {
            if (!rp_sees(t, train, q) || strcmp(t->rows[q].group, t->rows[r].group)) continue;
            for (int ci = t->rows[q].first_case; ci < t->rows[q].first_case + t->rows[q].n_cases; ci++)
                for (int j = 0; j < t->cases[ci].n_m; j++)
                    in_group[r] += t->cases[ci].m[j].cat == VAL_TTFT && base[ci * MAX_METRICS + j] > 0 && t->cases[ci].m[j].published > 0;
        }
        if (in_group[r]) used++;
    }
    if (used) {
        double best = INFINITY, ba = 0, bb = 0, da = RP_FIXED_MAX_S / 40, db = RP_TOKEN_MAX_S / 40;
        for (int pass = 0; pass < 3; pass++) {
            double ca = ba, cb = bb;
            for (int i = -20; i <= 40; i++)
                for (int k = -20; k <= 40; k++) {
                    double a = (pass ? ca : 0) + i * da, b = (pass ? cb : 0) + k * db;
                    if (a < 0 || b < 0 || a > RP_FIXED_MAX_S || b > RP_TOKEN_MAX_S || (!pass && (i < 0 || k < 0))) continue;
                    double o = rp_objective(t, base, train, in_group, a, b);
                    if (o < best) { best = o; ba = a; bb = b; }
                }
            da /= 20;
            db /= 20;
        }
        f->request_s = ba;
        f->request_token_s = bb;
    }
    free(in_group);
    return used;
}

int val_logo(val_table *t, FILE *out, int split_year, char *err, size_t errlen) {
    enum { P = N_PARAMS };
    double pmin[P], pmax[P];
    for (size_t i = 0; i < P; i++) { pmin[i] = NAN; pmax[i] = NAN; }
    cost_factors f0, in_use;
    val_default_factors(&in_use);
    f0 = in_use;
    for (size_t i = 0; i < P; i++) *fp(&f0, i) = params[i].start;
    int n = 0, rc = -1;
    unsigned char *train = calloc((size_t)t->n_rows + 1, 1), *want = calloc((size_t)t->n_rows + 1, 1);
    int *use = calloc((size_t)t->n_rows + 1, sizeof *use);
    val_case *keep = malloc(sizeof(val_case) * (size_t)(t->n_cases + 1));
    rc_key *keys = malloc(sizeof(rc_key) * (size_t)(t->n_rows * VAL_OTHER + 1));
    double *e0 = malloc(sizeof(double) * (size_t)(t->n_rows * VAL_OTHER + 1)), *ek = malloc(sizeof(double) * (size_t)(t->n_rows * VAL_OTHER + 1));
    double *J = malloc(sizeof(double) * (size_t)(t->n_rows * VAL_OTHER + 1) * P);
    double *base = malloc(sizeof(double) * (size_t)(t->n_cases + 1) * MAX_METRICS);
    if (!train || !want || !use || !keep || !keys || !e0 || !ek || !J || !base) { snprintf(err, errlen, "out of memory"); goto out; }
    if (val_run(t, &f0, err, errlen) < 0) goto out;
    n = row_errors(t, keys, e0);
    for (size_t a = 0; a < P; a++) {
        cost_factors g = f0;
        double *x = fp(&g, a), s = *x * GN_STEP > params[a].hi ? 1 / GN_STEP : GN_STEP;
        *x *= s;
        if (val_run(t, &g, err, errlen) < 0) goto out;
        row_errors(t, NULL, ek);
        for (int i = 0; i < n; i++) J[i * P + a] = (ek[i] - e0[i]) / log(s);
    }
    /* every simulated, scored row, and its group */
    for (int r = 0; r < t->n_rows; r++) use[r] = t->rows[r].scored && !t->rows[r].not_simulated[0];
    /* the same refit on every group: what a fold's refit is of, with nothing left out (the defaults
     * in use are compared with it) */
    {
        for (int r = 0; r < t->n_rows; r++) train[r] = t->rows[r].scored && !t->rows[r].not_simulated[0];
        cost_factors fa;
        gn_refit(t, &f0, J, e0, keys, n, train, 0, &fa);
        print_param_line(out, "refit on every group (in use):", &fa, &in_use, NULL);
    }
    /* the TTFTs without a request path: what the path's fits start from (at the defaults in use for
     * the path in use, COST_REQUEST_*; at the start for the folds' own fits) */
    for (int pass = 0; pass < 2; pass++) {
        cost_factors g = pass ? f0 : in_use;
        g.request_s = g.request_token_s = 0;
        if (val_run(t, &g, err, errlen) < 0) goto out;
        for (int ci = 0; ci < t->n_cases; ci++)
            for (int j = 0; j < MAX_METRICS; j++) base[ci * MAX_METRICS + j] = j < t->cases[ci].n_m ? t->cases[ci].m[j].predicted : NAN;
        if (pass) break;
        for (int r = 0; r < t->n_rows; r++) train[r] = (unsigned char)use[r];
        cost_factors all = in_use;
        int nrp = rp_fit(t, base, train, &all);
        fprintf(out, "request path (a Python server's time outside the engine's steps), fitted on the TTFTs of %d rows: %.1f ms + %.2f us "
                "per prompt token (in use: %.1f ms + %.2f us)\n\n", nrp, all.request_s * 1e3, all.request_token_s * 1e6,
                in_use.request_s * 1e3, in_use.request_token_s * 1e6);
    }
    if (val_run(t, &f0, err, errlen) < 0) goto out;
    fprintf(out, "leave-one-group-out (the headline): each group of rows (one source and engine generation) predicted by a fit on the other groups\n");
    fprintf(out, "%-26s %-5s %-22s %-26s %12s %12s %8s\n", "group", "row", "case", "metric", "published", "predicted", "error");
    for (int r = 0; r < t->n_rows; r++) {
        if (!use[r]) continue;
        int seen = 0;
        for (int q = 0; q < r && !seen; q++) seen = use[q] && !strcmp(t->rows[q].group, t->rows[r].group);
        if (seen) continue;   /* the group was done with its first row */
        for (int q = 0; q < t->n_rows; q++) { want[q] = use[q] && !strcmp(t->rows[q].group, t->rows[r].group); train[q] = use[q] && !want[q]; }
        cost_factors f;
        gn_refit(t, &f0, J, e0, keys, n, train, 0, &f);
        /* each fold's parameters, and their spread over the folds (printed after the table): a
         * parameter that moves far when one group leaves rests on that group */
        char head[96];
        double shown[P];
        snprintf(head, sizeof head, "%-26s refit without this group:", t->rows[r].group);
        print_param_line(out, head, &f, NULL, shown);
        for (size_t i = 0; i < P; i++) {
            if (!(shown[i] >= pmin[i])) pmin[i] = shown[i];
            if (!(shown[i] <= pmax[i])) pmax[i] = shown[i];
        }
        int group_ttft = 0;
        for (int q = 0; q < t->n_rows; q++) group_ttft |= want[q] && t->rows[q].has_ttft;
        if (rp_fit(t, base, train, &f) && group_ttft)
            fprintf(out, "%-26s request path fitted without this group: %.1f ms + %.2f us per prompt token\n", t->rows[r].group,
                    f.request_s * 1e3, f.request_token_s * 1e6);
        if (run_rows(t, &f, want, err, errlen) < 0) goto out;
        for (int q = 0; q < t->n_rows; q++) {
            if (!want[q]) continue;
            for (int ci = t->rows[q].first_case; ci < t->rows[q].first_case + t->rows[q].n_cases; ci++) {
                keep[ci] = t->cases[ci];
                for (int j = 0; j < t->cases[ci].n_m; j++) {
                    const val_metric *m = &t->cases[ci].m[j];
                    if (m->cat == VAL_OTHER) continue;
                    fprintf(out, "%-26s %-5s %-22s %-26s %12.5g %12.5g %+7.1f%%\n", t->rows[q].group, t->rows[q].id, t->cases[ci].name,
                            m->name, m->published, m->predicted, (m->predicted / m->published - 1) * 100);
                }
            }
        }
    }
    for (int r = 0; r < t->n_rows; r++)
        if (use[r])
            for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++) t->cases[ci] = keep[ci];
    print_summary(out, t, use, VAL_OTHER, "\nleave-one-group-out summary (one value per row, predicted without its group)");
    fprintf(out, "parameters over the leave-one-group-out refits (least .. most; in use):\n");
    for (size_t i = 0; i < P; i++) {
        const char *u;
        double v = param_shown(i, &in_use, &u);
        fprintf(out, "  %-20s %.3g .. %.3g%s (%.3g)\n", params[i].name, pmin[i], pmax[i], u, v);
    }
    coverage(out, t, use, "80% intervals, leave-one-group-out (each from the other groups' out-of-group errors):");
    print_halfwidths(out, t, use, 0);
    {
        char pairs[1024];
        seen_pairs(t, pairs, sizeof pairs);
        fprintf(out, "engine/architecture pairs of the fitted rows: %s (%s)\n", pairs,
                strcmp(pairs, sim_interval_seen_list()) ? "in use differs: update sim_interval.c" : "in use: the same");
    }
    /* the time split: fit on the older engine generations, predict the newer */
    if (split_year > 0) {
        int *late = calloc((size_t)t->n_rows + 1, sizeof *late);
        if (!late) { snprintf(err, errlen, "out of memory"); goto out; }
        int nl = 0, ne = 0;
        for (int r = 0; r < t->n_rows; r++) {
            late[r] = use[r] && t->rows[r].generation > split_year;
            train[r] = use[r] && !late[r];
            want[r] = (unsigned char)late[r];
            nl += late[r];
            ne += fit_sees(t, train, r);
        }
        if (nl && ne) {
            cost_factors f;
            gn_refit(t, &f0, J, e0, keys, n, train, 0, &f);
            int nrp = rp_fit(t, base, train, &f);
            fprintf(out, "\ntime split: request path fitted on the TTFTs of %d older rows: %.1f ms + %.2f us per prompt token\n", nrp,
                    f.request_s * 1e3, f.request_token_s * 1e6);
            if (run_rows(t, &f, want, err, errlen) < 0) { free(late); goto out; }
            char title[160];
            snprintf(title, sizeof title, "\ntime split: fit on the %d rows of engine generations <= %d, predict the %d later rows", ne, split_year, nl);
            print_summary(out, t, late, VAL_OTHER, title);
            coverage(out, t, late, "80% intervals on the later rows (from the other groups' errors):");
        }
        free(late);
    }
    /* calibrate, then predict: a deployment published at several loads (one row each), fitted on
     * its lowest load alone (the deployment's own factors from one measured run), the other loads
     * predicted ("uncal.": the defaults in use, simulated again here; f0 is the refits' start) */
    if (val_run(t, &in_use, err, errlen) < 0) goto out;
    fprintf(out, "\ncalibrate on one load, predict the others (deployments with rows at several loads):\n");
    fprintf(out, "%-28s %-5s %-22s %-26s %12s %12s %8s %8s\n", "deployment", "row", "case", "metric", "published", "predicted",
            "error", "uncal.");
    int cal_use_n = 0;
    int *cal_use = calloc((size_t)t->n_rows + 1, sizeof *cal_use);
    if (!cal_use) { snprintf(err, errlen, "out of memory"); goto out; }
    for (int r = 0; r < t->n_rows; r++) {
        if (!use[r] || !t->rows[r].deployment[0]) continue;
        int first = 1, count = 0;
        for (int q = 0; q < t->n_rows; q++)
            if (use[q] && !strcmp(t->rows[q].deployment, t->rows[r].deployment)) { count++; if (q < r) first = 0; }
        if (!first || count < 3) continue;
        /* rows come in load order in the table: r is the lowest */
        for (int q = 0; q < t->n_rows; q++) { train[q] = q == r; want[q] = use[q] && q != r && !strcmp(t->rows[q].deployment, t->rows[r].deployment); }
        cost_factors f;
        gn_refit(t, &f0, J, e0, keys, n, train, 1, &f);
        /* the deployment's own request path: the fixed part moved by what its calibration load's
         * TTFT leaves unexplained (the per-token part stays the table's: one length, one point) */
        if (run_rows(t, &f, train, err, errlen) < 0) { free(cal_use); goto out; }
        {
            double res = 0;
            int nres = 0;
            for (int ci = t->rows[r].first_case; ci < t->rows[r].first_case + t->rows[r].n_cases; ci++)
                for (int j = 0; j < t->cases[ci].n_m; j++) {
                    const val_metric *m = &t->cases[ci].m[j];
                    if (m->cat == VAL_TTFT && m->published > 0 && m->predicted > 0) { res += (m->published - m->predicted) / 1e3; nres++; }
                }
            if (nres) f.request_s = fmin(RP_FIXED_MAX_S, fmax(0, f.request_s + res / nres));
        }
        for (int q = 0; q < t->n_rows; q++)
            if (want[q])
                for (int ci = t->rows[q].first_case; ci < t->rows[q].first_case + t->rows[q].n_cases; ci++) keep[ci] = t->cases[ci];
        if (run_rows(t, &f, want, err, errlen) < 0) { free(cal_use); goto out; }
        for (int q = 0; q < t->n_rows; q++) {
            if (!want[q]) continue;
            cal_use[q] = 1;
            cal_use_n++;
            for (int ci = t->rows[q].first_case; ci < t->rows[q].first_case + t->rows[q].n_cases; ci++)
                for (int j = 0; j < t->cases[ci].n_m; j++) {
                    const val_metric *m = &t->cases[ci].m[j];
                    if (m->cat == VAL_OTHER) continue;
                    fprintf(out, "%-28s %-5s %-22s %-26s %12.5g %12.5g %+7.1f%% %+7.1f%%\n", t->rows[q].deployment, t->rows[q].id,
                            t->cases[ci].name, m->name, m->published, m->predicted, (m->predicted / m->published - 1) * 100,
                            (keep[ci].m[j].predicted / m->published - 1) * 100);
                }
        }
    }
    if (cal_use_n) {
        print_summary(out, t, cal_use, VAL_OTHER, "calibrate-then-predict summary (one value per predicted row; uncal. = the defaults)");
        print_halfwidths(out, t, cal_use, 1);
    }
    free(cal_use);
    rc = val_run(t, &f0, err, errlen);
out:
    free(train); free(want); free(use); free(keep); free(keys); free(e0); free(ek); free(J); free(base);
    return rc;
}

/* Calibrate, then predict, on a measured sweep: the lowest load calibrates the setup's own
 * factors (sim --calibrate on it), then every level is simulated as it was run (its concurrency,
 * the sweep's dataset, the requests it completed after the sweep's warm-ups) and compared with what
 * was measured: median TPOT and output throughput, each with its calibrated 80% interval. */
int val_sweep(const json_t *doc, const char *path, const sim_params *setup, double at_load, FILE *out, char *err, size_t errlen) {
    json_t *levels = json_object_get(doc, "levels"), *cfg = json_object_get(doc, "config");
    const char *axis = json_string_value(json_object_get(doc, "axis")), *ds = json_string_value(json_object_get(cfg, "dataset"));
    int by_rate = axis && !strcmp(axis, "rate");
    if (!json_array_size(levels) || !axis || (strcmp(axis, "concurrency") && !by_rate) || !ds) {
        snprintf(err, errlen, "%s: calibrate-then-predict needs a sweep over concurrency or request rate with a dataset "
                 "(dsperf sweep --concurrency or --rate)", path);
        return -1;
    }
    /* setup holds the sweep's server as its run stated it (deploy_sim_setup, in the run layer): the
     * slots it admits (llama-server's -np, which with idle slots keeping their KV sets how far the
     * window grows) and its KV capacity (-c), where no flag gave them */
    /* the lowest load calibrates; a sweep run with --repeats has several runs of it, and each
     * calibrates a profile of its own: the predictions are their mean (one run of one user moves
     * the step by several percent: the H100 sweep h100g_repeat's three c = 1 runs, 12.1-13.6 ms) */
    enum { MAX_CAL = 16 };
    sim_calibration cal[MAX_CAL];
    int n_cal = 0;
    long first = sim_sweep_level_at(doc, at_load, err, errlen);
    if (first < 0) return -1;
    double base = json_number_value(json_object_get(json_array_get(levels, (size_t)first), "load"));
    long warm = (long)json_integer_value(json_object_get(cfg, "warmup"));
    for (size_t i = (size_t)first; i < json_array_size(levels) && n_cal < MAX_CAL; i++) {
        json_t *l = json_array_get(levels, i);
        if (json_number_value(json_object_get(l, "load")) != base || !sim_sweep_level_measured(doc, i)) continue;
        /* the level's server as the levels before left it (its slots' KV), as predicted below */
        sim_params at = *setup;
        sim_sweep_level_server(doc, i, &at);
        if (sim_calibrate_results(&at, json_object_get(l, "results"), &cal[n_cal], err, errlen) < 0) return -1;
        n_cal++;
    }
    const char *which = at_load > 0 ? "the load" : "the lowest load";
    if (by_rate)
        fprintf(out, "calibrate on %s (%g req/s) of %s, predict the others (80%% intervals: calibrated)\n", which, base, path);
    else
        fprintf(out, "calibrate on %s (c = %g) of %s, predict the others (80%% intervals: calibrated)\n", which, base, path);
    if (n_cal > 1)
        fprintf(out, "  %s ran %d times (--repeats): each run calibrates a profile, the predictions are their mean "
                "(the first run's fit below)\n", which, n_cal);
    for (int i = 0; i < cal[0].n_notes; i++) fprintf(out, "  %s\n", cal[0].notes[i]);
    fprintf(out, "%-6s %-7s %-20s %12s %12s %8s %s\n", "load", "x base", "metric", "measured", "predicted", "error", "inside");
    /* median TTFT and ITL too, shown but not scored (no interval: the prompt's host time is the
     * calibration's own; the ITL is the decode step the TPOT holds, without the stalls of other prompts) */
    static const char *const names[] = {METRIC(median_tpot_ms), METRIC(output_throughput), METRIC(median_ttft_ms), METRIC(median_itl_ms)};
    const sim_iv_target tg[] = {SIM_IV_TPOT, SIM_IV_TPUT};
    int n = 0, inside = 0, n_in = 0, n15 = 0;
    size_t li;
    json_t *lv;
    int rc = 0;
    json_array_foreach(levels, li, lv) {
        json_t *res = json_object_get(lv, "results");
        double load = json_number_value(json_object_get(lv, "load"));
        long done = (long)json_integer_value(json_object_get(res, METRIC(completed)));
        if (!json_is_object(res) || done <= 0 || !(by_rate ? load > 0 : load >= 1)) continue;
        /* a level the sweep did not count as measured (its requests outlasted it: the completed
         * ones are the short ones) is no measurement to predict */
        if (json_is_false(json_object_get(lv, "measured"))) {
            fprintf(out, "%-6g %-7.3g not predicted: %s\n", load, load / base,
                    json_string_value(json_object_get(lv, "not_measured_reason")) ? json_string_value(json_object_get(lv, "not_measured_reason"))
                                                                                   : "the sweep did not count it as measured");
            continue;
        }
        val_case c;
        memset(&c, 0, sizeof c);
        c.p = *setup;
        c.p.factors = cal[0].factors;
        snprintf(c.dataset, sizeof c.dataset, "%s", ds);
        double hit = json_number_value(json_object_get(json_object_get(res, "prefix_cache"), "hit_rate"));
        char cached_note[sizeof c.dataset + 48] = "";
        if (li > 0 && sim_workload_uncached(ds, hit, c.dataset, sizeof c.dataset))
            snprintf(cached_note, sizeof cached_note, " (%.0f%% of prompt tokens cached: %s)", hit * 100, c.dataset);
        /* a rate level: Poisson arrivals at that rate (as the sweep sent them), as many as completed */
        c.concurrency = by_rate ? 0 : (int)load;
        c.rate = by_rate ? load : 0;
        c.arrival = json_string_value(json_object_get(cfg, "arrival"));
        c.prompts = done;
        c.warmup = warm > 0 ? warm : 0;
        sim_sweep_level_server(doc, li, &c.p);
        c.n_m = 4;
        for (int k = 0; k < 4; k++) {
            snprintf(c.m[k].name, sizeof c.m[k].name, "%s", names[k]);
            c.m[k].published = json_number_value(json_object_get(res, names[k]));
            c.m[k].predicted = NAN;
        }
        double sum[MAX_METRICS] = {0}, cells = 0;
        for (int r = 0; r < n_cal && !rc; r++) {
            c.p.factors = cal[r].factors;
            if (run_serve(&c, err, errlen) < 0) rc = -1;
            for (int k = 0; k < c.n_m; k++) sum[k] += c.m[k].predicted;
            cells += c.window_cells;
        }
        if (rc) break;
        for (int k = 0; k < c.n_m; k++) c.m[k].predicted = sum[k] / n_cal;
        c.window_cells = cells / n_cal;
        for (int k = 0; k < 2; k++) {
            double e = c.m[k].predicted / c.m[k].published - 1, q = sim_interval_q(tg[k], SIM_IV_STEADY, 1);
            int in = fabs(log(c.m[k].predicted / c.m[k].published)) <= q;
            int predicted = load != base;   /* the calibration load's runs calibrated */
            fprintf(out, "%-6g %-7.3g %-20s %12.5g %12.5g %+7.1f%% %s%s\n", load, load / base, names[k], c.m[k].published,
                    c.m[k].predicted, e * 100, !predicted ? "(calibration point)" : in ? "yes" : "no", k == 0 ? cached_note : "");
            if (predicted && load / base >= 2 && load / base <= 8) { n++; n15 += fabs(e) <= 0.15; }
            if (predicted) { n_in++; inside += in; }
        }
        for (int k = 2; k < 4; k++)
            if (c.m[k].published > 0)
                fprintf(out, "%-6g %-7.3g %-20s %12.5g %12.5g %+7.1f%% (not scored)\n", load, load / base, names[k], c.m[k].published,
                        c.m[k].predicted, (c.m[k].predicted / c.m[k].published - 1) * 100);
        /* llama-server's KV cells in use (its kv_cache_usage_ratio x the capacity), against the
         * simulated slots' cells: the window every step's attention spans */
        double kv_cells = sim_results_kv_cells(res);
        if (c.window_cells > 0 && kv_cells > 0)
            fprintf(out, "%-6g %-7.3g %-20s %12.5g %12.5g %+7.1f%% (not scored)\n", load, load / base, "kv_cells_in_use_mean", kv_cells,
                    c.window_cells, (c.window_cells / kv_cells - 1) * 100);
    }
    if (!rc) {
        fprintf(out, "at 2-8x the calibration load: %d of %d metrics within 15%%\n", n15, n);
        fprintf(out, "80%% intervals (calibrated): %d of %d predicted metrics inside\n", inside, n_in);
    }
    return rc;
}

int val_is_sweep(const json_t *doc) {
    const char *schema = json_string_value(json_object_get(doc, "schema"));
    return schema && !strncmp(schema, "dsperf.sweep/", 13);
}
