/* sim --validate tests — the simulator against the project's table of published DeepSeek serving
 * measurements (data/published.json), with the default (fitted) mechanism parameters: every row is
 * simulated and printed, the headline is leave-one-group-out (README-sim.md, "Accuracy"). */
#include "harness.h"
#include "testutil.h"
#include "engine/sim_validate.h"
#include "engine/sim_run.h"
#include "metrics/stats.h"
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define TABLE "data/published.json"

/* Rows per target the table scores, counted from the file itself: a row counts once per target. */
static void count_targets(int n[VAL_NCAT]) {
    memset(n, 0, sizeof(int) * VAL_NCAT);
    json_t *root = json_load_file(TABLE, 0, NULL);
    CHECK(root != NULL);
    size_t i, j, k;
    json_t *r, *c, *m;
    static const char *const score[] = {"tpot", "tput", "ttft", "prefill"};
    json_array_foreach(json_object_get(root, "rows"), i, r) {
        json_t *sim = json_object_get(r, "sim");
        if (json_object_get(sim, "not_simulated")) continue;
        int has[VAL_NCAT] = {0};
        json_array_foreach(json_object_get(sim, "cases"), j, c) json_array_foreach(json_object_get(c, "metrics"), k, m) {
            const char *sc = json_string_value(json_object_get(m, "score"));
            for (int q = 0; q < VAL_OTHER; q++) if (sc && !strcmp(sc, score[q])) has[q] = 1;
        }
        for (int q = 0; q < VAL_OTHER; q++) n[q] += has[q];
    }
    json_decref(root);
}

/* Every simulated row predicts every scored metric (a finite, positive number), and the summary
 * counts each row once per target. Accuracy is not asserted here: it is what --validate reports
 * out of group (README-sim.md, "Accuracy"), not a number to pin. */
TEST(sim_validate_published_table_simulates_every_row) {
    char err[512] = "";
    val_table *t = NULL;
    CHECK_MSG(val_load(TABLE, &t, err, sizeof err) == 0, "%s", err);
    if (!t) return;
    cost_factors f;
    cost_default_factors(&f);
    CHECK_MSG(val_run(t, &f, err, sizeof err) == 0, "%s", err);
    double med[VAL_NCAT], worst[VAL_NCAT];
    int n[VAL_NCAT], want[VAL_NCAT];
    val_summary(t, med, worst, n);
    count_targets(want);
    static const char *const names[] = {"TPOT", "throughput", "TTFT", "prefill"};
    for (int k = 0; k < VAL_OTHER; k++) {
        CHECK_MSG(n[k] == want[k], "%s: %d rows scored, the table has %d", names[k], n[k], want[k]);
        CHECK_MSG(isfinite(med[k]) && isfinite(worst[k]) && worst[k] >= med[k], "%s: median %g worst %g", names[k], med[k], worst[k]);
    }
    val_free(t);
}

/* The headline is out of group: the CLI labels the in-sample table, then prints leave-one-group-out,
 * the time split, the calibrate-then-predict table and the intervals' coverage (each a count of
 * metrics inside out of those predicted, consistent with its percentage). */
TEST(sim_validate_cli_prints_every_row) {
    char *out = NULL;
    int rc = test_run("sim --validate " TABLE, &out, NULL);
    CHECK_EQ_INT(rc, 0);
    static const char *const ids[] = {"A1", "A2", "A3", "A5", "A6", "A7", "B1", "B2", "B3", "B6", "B7", "B8", "B9", "B10",
                                      "B12", "C2", "C3", "C4", "C5", "C6", "C7", "C10", "D1", "N11", "N18", "N19", "N25",
                                      "N26", "N27", "N49", "N62", "N63", "N68", "N74", "N75"};
    for (size_t i = 0; out && i < sizeof ids / sizeof ids[0]; i++) {
        char pat[16];
        snprintf(pat, sizeof pat, "\n%-5s ", ids[i]);
        CHECK_MSG(strstr(out, pat) != NULL, "row %s missing from the output", ids[i]);
    }
    CHECK(out && strstr(out, "not simulated: the GPU type is not published"));
    const char *in = out ? strstr(out, "IN-SAMPLE") : NULL, *logo = out ? strstr(out, "leave-one-group-out (the headline)") : NULL;
    CHECK(in && logo && in < logo);
    CHECK(out && strstr(out, "time split: fit on the") && strstr(out, "calibrate-then-predict summary"));
    const char *cov = out ? strstr(out, "80% intervals, leave-one-group-out") : NULL;
    CHECK(cov != NULL);
    const char *all = cov ? strstr(cov, "all targets") : NULL;
    int inside = -1, total = -1, pct = -1;
    CHECK(all && sscanf(all, "all targets %d of %d (%d%%)", &inside, &total, &pct) == 3);
    CHECK(total > 0 && inside >= 0 && inside <= total);
    CHECK(total > 0 && abs(pct - (int)(100.0 * inside / total + 0.5)) <= 1);
    /* the half-widths that sim, plan and tune put on their numbers (sim_interval.c) follow what this
     * table gives out of group, TPOT and throughput within 5 points (TTFT's are too wide to matter) */
    static const char *const hw[] = {"(uncalibrated):", "(calibrated):"};
    for (int h = 0; h < 2; h++) {
        const char *l = out ? strstr(out, hw[h]) : NULL;
        int t1 = -1, t2 = -1, x1 = -1, x2 = -1;
        CHECK_MSG(l && sscanf(l + strlen(hw[h]), " TPOT +-%d%% (in use +-%d%%); per-GPU throughput +-%d%% (in use +-%d%%)", &t1, &t2, &x1, &x2) == 4,
                  "no half-widths %s", hw[h]);
        CHECK_MSG(abs(t1 - t2) <= 5 && abs(x1 - x2) <= 5, "%s TPOT +-%d%% vs +-%d%% in use, throughput +-%d%% vs +-%d%%: update sim_interval.c",
                  hw[h], t1, t2, x1, x2);
    }
    /* ... and the bursts' (every request at once), measured on the burst rows alone; within 10
     * points (a handful of groups: one more row moves a percentile further) */
    const char *bl = out ? strstr(out, "(uncalibrated):") : NULL;
    const char *eol = bl ? strchr(bl, '\n') : NULL, *b = bl ? strstr(bl, "|burst:") : NULL;
    int t1 = -1, t2 = -1, x1 = -1, x2 = -1;
    CHECK_MSG(b && b < eol && sscanf(b, "|burst: TPOT +-%d%% (in use +-%d%%); per-GPU throughput +-%d%% (in use +-%d%%)", &t1, &t2, &x1, &x2) == 4,
              "no burst half-widths");
    CHECK_MSG(abs(t1 - t2) <= 10 && abs(x1 - x2) <= 10, "bursts: TPOT +-%d%% vs +-%d%% in use, throughput +-%d%% vs +-%d%%: update sim_interval.c",
              t1, t2, x1, x2);
    /* ... and the unseen pairs' (an engine on an architecture no other fitted group runs), within 5
     * points; the pairs the fitted rows hold are the list sim_interval.c keeps */
    const char *ul = bl ? strstr(bl, "|unseen:") : NULL;
    t1 = t2 = x1 = x2 = -1;
    CHECK_MSG(ul && ul < eol && sscanf(ul, "|unseen: TPOT +-%d%% (in use +-%d%%); per-GPU throughput +-%d%% (in use +-%d%%)", &t1, &t2, &x1, &x2) == 4,
              "no unseen half-widths");
    CHECK_MSG(abs(t1 - t2) <= 5 && abs(x1 - x2) <= 5, "unseen pairs: TPOT +-%d%% vs +-%d%% in use, throughput +-%d%% vs +-%d%%: update sim_interval.c",
              t1, t2, x1, x2);
    const char *pl = out ? strstr(out, "\nengine/architecture pairs of the fitted rows: ") : NULL;
    const char *pe = pl ? strchr(pl + 1, '\n') : NULL;
    CHECK_MSG(pl && pe && strstr(pl, "(in use: the same)") && strstr(pl, "(in use: the same)") < pe, "the fitted pairs differ from sim_interval.c's");
    /* the defaults in use are the refit on every group (each within 2%): the table and
     * cost_default_factors move together */
    const char *ra = out ? strstr(out, "refit on every group (in use):") : NULL;
    CHECK_MSG(ra != NULL, "no refit on every group");
    int npar = 0;
    for (const char *q = ra ? ra + strlen("refit on every group (in use):") : NULL; q && *q && *q != '\n';) {
        char name[64];
        double fit = NAN, use = NAN;
        int used = 0;
        if (sscanf(q, " %63s %lf%*[ a-z](%lf)%n", name, &fit, &use, &used) != 3 || used <= 0) break;
        CHECK_MSG(fabs(fit / use - 1) <= 0.02, "%s: refit %g, in use %g: update cost_default_factors", name, fit, use);
        npar++;
        q += used;
    }
    CHECK_MSG(npar >= 10, "%d parameters read from the refit line", npar);
    /* the request path in use (COST_REQUEST_FIT_*) is the one fitted at these defaults, within 2% */
    const char *rp = out ? strstr(out, "\nrequest path (a Python server's time outside the engine's steps), fitted on the TTFTs of") : NULL;
    double f_ms = NAN, f_us = NAN, u_ms = NAN, u_us = NAN;
    CHECK_MSG(rp && sscanf(strchr(rp, ':') + 1, " %lf ms + %lf us per prompt token (in use: %lf ms + %lf us)", &f_ms, &f_us, &u_ms, &u_us) == 4,
              "no request path line");
    CHECK_MSG(fabs(f_ms / u_ms - 1) <= 0.02 && fabs(f_us / u_us - 1) <= 0.02,
              "request path fitted %.1f ms + %.2f us, in use %.1f ms + %.2f us: update COST_REQUEST_FIT_*", f_ms, f_us, u_ms, u_us);
    free(out);
    CHECK_EQ_INT(test_run("sim --fit", NULL, NULL), 2);                          /* --fit needs --validate */
    CHECK_EQ_INT(test_run("sim --validate /nonexistent/table.json", NULL, NULL), 2);
}

/* A row may set its engine and hardware, never a fitted parameter. */
TEST(sim_validate_refuses_a_fitted_parameter_in_a_row) {
    char path[512];
    snprintf(path, sizeof path, "%s/t.json", harness_tmpdir());
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (!fp) return;
    fputs("{\"rows\":[{\"id\":\"X\",\"sim\":{\"flags\":\"--moe-eff 0.9\",\"cases\":[{\"name\":\"c\",\"kind\":\"decode\","
          "\"workload\":{\"batch\":8,\"context\":1000},\"metrics\":[{\"name\":\"tpot_ms\",\"published\":5,\"score\":\"tpot\"}]}]}}]}",
          fp);
    fclose(fp);
    char err[512] = "";
    val_table *t = NULL;
    CHECK(val_load(path, &t, err, sizeof err) < 0);
    CHECK(strstr(err, "fitted mechanism parameter") != NULL);
    val_free(t);
}

/* Calibrate, then predict, on real GPU sweeps of llama.cpp c392e50 on one H200 (256 in / 128 out,
 * c = 1..32): tests/fixtures/real-gpu/gpu_overhead.json (V2-Lite f16) and the hold-out
 * medium_sweep.json (the 906M preset, 32 experts top 6), and gpu_overhead_long.json (V2-Lite, longer
 * requests), each calibrated on its c = 1 level alone.
 * Profile llamacpp-b4747 prices the MoE's host loop over touched experts, a multi-row expert (the
 * cuBLAS path) at the host calls it makes; the profile without the loop (llamacpp) can only slow
 * the bandwidth and misses the growth with the batch. */
/* One row of `sim --validate SWEEP` output: load, x base, metric, measured, predicted and the error
 * in % (NAN where the row has none). */
typedef struct {
    double load, x, measured, predicted, err_pct;
    char name[32];
} val_row;

/* The row after *at in `sim --validate` output, *at moved onto it; 0 when none is left. Start with
 * *at at the output's beginning (its first line is never a row). */
static int val_row_next(const char **at, val_row *r) {
    for (const char *l = *at; l && (l = strchr(l, '\n')); ) {
        l++;
        r->err_pct = NAN;
        if (sscanf(l, "%lf %lf %31s %lf %lf %lf%%", &r->load, &r->x, r->name, &r->measured, &r->predicted, &r->err_pct) >= 5) {
            *at = l;
            return 1;
        }
    }
    return 0;
}

static int sweep_run_on(const char *path, const char *profile, const char *model, const char *gpu, const char *dtype, double pred[8],
                        double meas[8], double err_pct[2][8], int *inside, int *total) {
    char cmd[1024], *out = NULL;
    /* the server's slot cap as the sweep read it (GET /props); the one sweep recorded before dsperf
     * read it (medium_sweep) ran llama-server -np 32, as every overhead construction does
     * (fixtures README): a flag says so there, and only there, since a flag overrides the run */
    json_t *d = json_load_file(path, 0, NULL);
    int stated = json_is_number(json_object_get(json_object_get(json_object_get(d, "deployment"), "max_num_seqs"), "value"));
    json_decref(d);
    snprintf(cmd, sizeof cmd, "sim --validate %s --engine-profile %s %s --gpu %s --weight-dtype %s%s", path, profile, model, gpu, dtype,
             stated ? "" : " --max-num-seqs 32");
    int rc = test_run(cmd, &out, NULL), n = 0, nt = 0;
    CHECK_EQ_INT(rc, 0);
    val_row r;
    for (const char *at = out; n < 8 && val_row_next(&at, &r); ) {
        if (isnan(r.err_pct)) continue;
        if (!strcmp(r.name, "median_tpot_ms")) { meas[n] = r.measured; pred[n] = r.predicted; err_pct[0][n] = r.err_pct; n++; }
        else if (!strcmp(r.name, "output_throughput") && nt < 8) err_pct[1][nt++] = r.err_pct;
    }
    const char *cov = out ? strstr(out, "80% intervals (calibrated): ") : NULL;
    *inside = *total = -1;
    CHECK(cov && sscanf(cov, "80%% intervals (calibrated): %d of %d", inside, total) == 2);
    CHECK(out && strstr(out, "(calibration point)") && strstr(out, "at 2-8x the calibration load:"));
    CHECK_EQ_INT(nt, n);
    free(out);
    return n;
}

static int sweep_run(const char *sweep, const char *profile, const char *model, double pred[8], double meas[8], double err_pct[2][8],
                     int *inside, int *total) {
    char path[512];
    snprintf(path, sizeof path, "tests/fixtures/real-gpu/%s", sweep);
    return sweep_run_on(path, profile, model, "h200", "fp16", pred, meas, err_pct, inside, total);
}

/* Inside-count of a claimed 80% interval over n predictions that a correct interval reaches with
 * probability >= 95% (binomial(n, 0.8)): below it the intervals claim more than they deliver. */
static int coverage_floor(int n) {
    double cum = 0;
    for (int k = 0; k <= n; k++) {
        double c = 1;
        for (int i = 0; i < k; i++) c = c * (n - i) / (i + 1);
        cum += c * pow(0.8, k) * pow(0.2, n - k);
        if (cum > 0.05) return k;
    }
    return n;
}

/* The model flag of a recorded sweep by its preset: NULL V2-Lite (in the catalog), "m" the 906M
 * preset (its config file), "t" the 30M preset, whose shape comes from the GGUF header the sweep
 * recorded (deployment.architecture), so no flag. */
static const char *fixture_model(const char *preset) {
    return !preset ? "--model deepseek-v2-lite" : *preset == 'm' ? "--model-config tests/fixtures/real-gpu/medium_config.json" : "";
}

/* sweep_run_on for tests/fixtures/real-gpu/NAME with the llama.cpp b4747 profile: its TPOT and
 * throughput errors in e, its calibrated-interval counts added to *in_all / *tot_all (pooled over
 * sweeps: one host's speed moves all of a sweep's levels together). Returns the levels read. */
static int fixture_sweep(const char *name, const char *model, const char *gpu, const char *dtype, double e[2][8], int *in_all,
                         int *tot_all) {
    char path[512];
    double p[8], m[8];
    int in, tot;
    snprintf(path, sizeof path, "tests/fixtures/real-gpu/%s", name);
    int n = sweep_run_on(path, "llamacpp-b4747", model, gpu, dtype, p, m, e, &in, &tot);
    *in_all += in > 0 ? in : 0;
    *tot_all += tot > 0 ? tot : 0;
    return n;
}

/* The criterion on a sweep calibrated at c = 1: TPOT and throughput within 15% at c = 2, 4, 8. */
static void check_within15(const char *sweep, double e[2][8]) {
    for (int i = 1; i <= 3; i++)
        for (int k = 0; k < 2; k++)
            CHECK_MSG(fabs(e[k][i]) <= 15, "%s c = %d: %s off by %+.1f%%", sweep, 1 << i, k ? "throughput" : "TPOT", e[k][i]);
}

TEST(sim_validate_sweep_calibrate_then_predict) {
    double p1[8], m1[8], p0[8], m0[8], e1[2][8], e0[2][8];
    int in1, tot1, in0, tot0;
    int n1 = sweep_run("gpu_overhead.json", "llamacpp-b4747", "--model deepseek-v2-lite", p1, m1, e1, &in1, &tot1);
    int n0 = sweep_run("gpu_overhead.json", "llamacpp", "--model deepseek-v2-lite", p0, m0, e0, &in0, &tot0);
    CHECK_EQ_INT(n1, 6);   /* c = 1, 2, 4, 8, 16, 32 */
    CHECK_EQ_INT(n0, 6);
    if (n1 != 6 || n0 != 6) return;
    CHECK_NEAR(p1[0], m1[0], m1[0] * 0.02);   /* the aggregate fit solves its own point */
    for (int i = 1; i < 6; i++)
        CHECK_MSG(fabs(log(p1[i] / m1[i])) < fabs(log(p0[i] / m0[i])), "level %d: %.1f ms with the expert loop, %.1f without, %.1f measured",
                  i, p1[i], p0[i], m1[i]);
    /* the criterion: at 2-8x the calibration load (c = 2, 4, 8) TPOT and throughput within 15% */
    for (int i = 1; i <= 3; i++)
        for (int k = 0; k < 2; k++) CHECK_MSG(fabs(e1[k][i]) <= 15, "c = %d: %s off by %+.1f%%", 1 << i, k ? "throughput" : "TPOT", e1[k][i]);
    CHECK_MSG(tot1 == 10 && in1 >= coverage_floor(tot1), "gpu_overhead: %d of %d inside the 80%% intervals", in1, tot1);
    /* the hold-out: nothing above was set from it; calibrated on its own c = 1 only */
    double ph[8], mh[8], eh[2][8];
    int inh, toth;
    int nh = sweep_run("medium_sweep.json", "llamacpp-b4747", "--model-config tests/fixtures/real-gpu/medium_config.json", ph, mh, eh, &inh, &toth);
    CHECK_EQ_INT(nh, 6);
    CHECK_MSG(toth == 10 && inh >= coverage_floor(toth), "medium_sweep: %d of %d inside the 80%% intervals", inh, toth);
    for (int i = 1; i <= 3; i++)
        for (int k = 0; k < 2; k++) CHECK_MSG(fabs(eh[k][i]) <= 15, "medium c = %d: %s off by %+.1f%%", 1 << i, k ? "throughput" : "TPOT", eh[k][i]);
    /* a second hold-out, recorded after the model was set (gpu_overhead_long: V2-Lite, 1024 in /
     * 256 out, c = 1..8; the device session ended before c = 16): closer than the loop-less
     * profile at every level, and its intervals cover as an 80% interval should */
    double pl[8], ml[8], el[2][8], pl0[8], ml0[8], el0[2][8];
    int inl, totl, inl0, totl0;
    int nl = sweep_run("gpu_overhead_long.json", "llamacpp-b4747", "--model deepseek-v2-lite", pl, ml, el, &inl, &totl);
    int nl0 = sweep_run("gpu_overhead_long.json", "llamacpp", "--model deepseek-v2-lite", pl0, ml0, el0, &inl0, &totl0);
    CHECK_EQ_INT(nl, 4);
    CHECK_EQ_INT(nl0, 4);
    for (int i = 1; i < nl && i < nl0; i++)
        CHECK_MSG(fabs(log(pl[i] / ml[i])) < fabs(log(pl0[i] / ml0[i])), "long level %d: %.1f ms with the expert loop, %.1f without, %.1f measured",
                  i, pl[i], pl0[i], ml[i]);
    CHECK_MSG(totl == 6 && inl >= coverage_floor(totl), "gpu_overhead_long: %d of %d inside the 80%% intervals", inl, totl);
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/medium_config.json", NULL, NULL), 2);
}

/* A copy of a sweep without its c = 1 level's server timing: TTFT alone leaves the expert loop's
 * host constants at their prior (the H200 host they were fitted on). */
static int sweep_without_prompt_time(const char *sweep, char *out, size_t outlen) {
    char src[512];
    snprintf(src, sizeof src, "tests/fixtures/real-gpu/%s", sweep);
    snprintf(out, outlen, "%s/prior_%s", harness_tmpdir(), sweep);
    json_error_t je;
    json_t *doc = json_load_file(src, 0, &je);
    json_t *r0 = json_object_get(json_array_get(json_object_get(doc, "levels"), 0), "results");
    int rc = doc && r0 && json_object_del(r0, "server_timing") == 0 && json_dump_file(doc, out, JSON_COMPACT) == 0 ? 0 : -1;
    json_decref(doc);
    return rc;
}

/* Four sweeps on an H100 host (tests/fixtures/real-gpu/README.md), held out: nothing of the model
 * was set from them. Calibrated on c = 1 alone, its prompt (llama.cpp's own prompt time) measures
 * this host's expert loop (a factor of about 0.6-0.7 of the H200 host's), and the loop runs no
 * faster than the GPU's kernels. Every level up to `closer` closer than with the loop at its H200
 * prior; the f16 and Q8_0 sweeps within 15% at 2-8x (the criterion), and the four together
 * covered as 80% intervals should be (pooled: one host's speed moves all of a sweep's levels
 * together, so a sweep's levels are not independent draws). Q4_0 ran on a host whose decode loop is
 * ~1.5x slower per call than its prompt shows: -17 / -11% TPOT at c = 4 / 8, and the prior lands
 * closer from c = 4 (README-sim.md, "The one-token step loops too"). The f16 sweep's levels above
 * c = 1 found 43-100% of their prompts cached (the sweep resent them): with that share taken off,
 * +17% TPOT at c = 4 and 8 since stop 41 (README-sim.md, "llama-server's ubatches and sampling"). */
TEST(sim_validate_h100_holdouts_calibrate_then_predict) {
    static const struct { const char *sweep, *dtype; int levels, within15, closer; } sw[] = {
        {"h100_overhead.json", "fp16", 6, 0, 6}, {"h100_overhead_long.json", "fp16", 5, 1, 5}, {"h100_overhead_q8.json", "int8", 6, 1, 5},
        {"h100_overhead_q4.json", "q4_0", 6, 0, 2}};
    int in_all = 0, tot_all = 0;
    for (size_t s = 0; s < sizeof sw / sizeof sw[0]; s++) {
        char prior[512];
        CHECK(sweep_without_prompt_time(sw[s].sweep, prior, sizeof prior) == 0);
        double e[2][8], p0[8], m0[8], e0[2][8];
        int in0, tot0;
        int n = fixture_sweep(sw[s].sweep, "--model deepseek-v2-lite", "h100", sw[s].dtype, e, &in_all, &tot_all);
        int n0 = sweep_run_on(prior, "llamacpp-b4747", "--model deepseek-v2-lite", "h100", sw[s].dtype, p0, m0, e0, &in0, &tot0);
        CHECK_EQ_INT(n, sw[s].levels);
        CHECK_EQ_INT(n0, sw[s].levels);
        if (n != sw[s].levels || n0 != n) continue;
        /* (Q8_0 at c = 32 is the exception: there the prior's too-slow host and the model's missing
         * part of the quantized loop's growth cancel, +10% vs -12% TPOT) */
        for (int i = 1; i < sw[s].closer && i < n; i++)
            for (int k = 0; k < 2; k++)
                CHECK_MSG(fabs(e[k][i]) < fabs(e0[k][i]), "%s c = %d: %s %+.1f%% with the host factor, %+.1f%% at the prior", sw[s].sweep,
                          1 << i, k ? "throughput" : "TPOT", e[k][i], e0[k][i]);
        if (sw[s].within15) check_within15(sw[s].sweep, e);
    }
    CHECK_EQ_INT(tot_all, 38);
    CHECK_MSG(in_all >= coverage_floor(tot_all), "%d of %d inside the 80%% intervals", in_all, tot_all);
}

/* Sweeps recorded on H100 hosts not seen before (tests/fixtures/real-gpu/README.md), held out: the
 * loop-floor sweeps (c = 1, 2, 4, 8 of V2-Lite, -np 8) on two hosts and the overhead construction
 * (c = 1..32, -np 32) on a third. Calibrated on c = 1 alone, the predictions fall inside their 80%
 * intervals as often as 80% intervals should (pooled, as above), and the sweeps marked within15 meet
 * the 15% at 2-8x. (The misses, README-sim.md: the first floor host's decode loop, slower
 * per call than its prompt shows: f16 -19% TPOT at c = 2, Q8_0 -19% at c = 4; f16 on the second
 * host -15% TPOT at c = 2.) */
TEST(sim_validate_sweeps_on_more_hosts) {
    static const struct { const char *sweep, *dtype; int levels, within15; } sw[] = {
        {"h100_floor_f16.json", "fp16", 4, 0}, {"h100_floor_q8.json", "int8", 4, 0}, {"h100_floor_q4.json", "q4_0", 4, 1},
        {"h100b_floor_f16.json", "fp16", 4, 0}, {"h100b_floor_q8.json", "int8", 4, 1},
        {"h100c_overhead.json", "fp16", 6, 1}, {"h100c_overhead_q8.json", "int8", 6, 1}};
    int in_all = 0, tot_all = 0;
    for (size_t s = 0; s < sizeof sw / sizeof sw[0]; s++) {
        double e[2][8];
        int n = fixture_sweep(sw[s].sweep, "--model deepseek-v2-lite", "h100", sw[s].dtype, e, &in_all, &tot_all);
        CHECK_EQ_INT(n, sw[s].levels);
        if (n == sw[s].levels && sw[s].within15) check_within15(sw[s].sweep, e);
    }
    CHECK_EQ_INT(tot_all, 50);
    CHECK_MSG(in_all >= coverage_floor(tot_all), "%d of %d inside the 80%% intervals", in_all, tot_all);
}

/* `sim --validate` of a table of rows_json: the line that starts with `line` (NULL when missing);
 * when rows_json marks a row with `mark`, the output must say so with `said`. */
/* Writes a table of rows_json into the test's directory as `name`; 0 ok. */
static int write_table(const char *name, const char *rows_json, char *path, size_t pathlen) {
    snprintf(path, pathlen, "%s/%s", harness_tmpdir(), name);
    FILE *fp = fopen(path, "w");
    CHECK(fp != NULL);
    if (!fp) return -1;
    fprintf(fp, "{\"rows\":[%s]}", rows_json);
    fclose(fp);
    return 0;
}

static char *validate_line_of(const char *rows_json, const char *line, const char *mark, const char *said) {
    char path[512];
    if (write_table("po.json", rows_json, path, sizeof path) < 0) return NULL;
    char cmd[600], *out = NULL;
    snprintf(cmd, sizeof cmd, "sim --validate %s", path);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    const char *l = out ? strstr(out, line) : NULL;
    char *got = l ? strndup(l, strcspn(l, "\n")) : NULL;
    CHECK(got != NULL);
    if (out && strstr(rows_json, mark)) CHECK_MSG(strstr(out, said) != NULL, "no \"%s\" in the output", said);
    free(out);
    return got;
}

/* The table `base` plus a fourth row: `with` (the row marked), `plain` (the same row unmarked). The
 * line that `line_of` reads is the same with the marked row as without it, and its part from `from`
 * on (the whole line when NULL) moves with the plain row. */
static void check_marked_row_stays_out(char *(*line_of)(const char *), const char *base, const char *marked, const char *ordinary,
                                       const char *from, const char *what) {
    char with[4096], plain[4096];
    snprintf(with, sizeof with, "%s,%s", base, marked);
    snprintf(plain, sizeof plain, "%s,%s", base, ordinary);
    char *a = line_of(base), *b = line_of(with), *c = line_of(plain);
    CHECK_MSG(a && b && !strcmp(a, b), "the marked row moved the %s:\n%s\n%s", what, a ? a : "", b ? b : "");
    const char *va = a && from ? strstr(a, from) : a, *vc = c && from ? strstr(c, from) : c;
    CHECK_MSG(va && vc && strcmp(va, vc), "the same row unmarked did not move the %s: %s", what, c ? c : "");
    free(a);
    free(b);
    free(c);
}

/* A row marked predict_only is simulated, scored and predicted out of group, but no fit sees it:
 * the refit on every group is the same with it as without it, and differs when the same row is
 * an ordinary one (its published TPOT is 3x what the model gives: it would pull the parameters). */
static char *refit_line_of(const char *rows_json) {
    return validate_line_of(rows_json, "refit on every group (in use):", "\"predict_only\"", "predicted, in no fit: a test");
}

#define PO_ROW(id, group, tpot, extra) \
    "{\"id\":\"" id "\",\"sim\":{\"flags\":\"--model deepseek-v3 --gpu h200 --tp 8 --weight-dtype fp8\",\"group\":\"" group \
    "\",\"generation\":2025" extra ",\"cases\":[{\"name\":\"b8\",\"kind\":\"decode\",\"workload\":{\"batch\":8,\"context\":1000}," \
    "\"metrics\":[{\"name\":\"tpot_ms\",\"published\":" tpot ",\"score\":\"tpot\"}]},{\"name\":\"b64\",\"kind\":\"decode\"," \
    "\"workload\":{\"batch\":64,\"context\":1000},\"metrics\":[{\"name\":\"tpot_ms\",\"published\":" tpot ",\"score\":\"tpot\"}]}]}}"

TEST(sim_validate_predict_only_rows_stay_out_of_the_fits) {
    /* the fourth row's published TPOT is 3x what the model gives: as an ordinary row it pulls the fit */
    check_marked_row_stays_out(refit_line_of, PO_ROW("P1", "g1", "20", "") "," PO_ROW("P2", "g2", "25", "") "," PO_ROW("P3", "g3", "30", ""),
                               PO_ROW("P4", "g4", "90", ",\"predict_only\":\"a test\""), PO_ROW("P4", "g4", "90", ""), NULL, "refit");
}

/* A row's TTFTs marked ttft_predict_only are predicted and scored, but the request path's fit does
 * not see them: the fitted path is the same with the row as without it, and moves when the same row
 * is an ordinary one (its TTFTs 10x the others'). */
static char *request_path_line_of(const char *rows_json) {
    return validate_line_of(rows_json, "request path (a Python server's time outside the engine's steps)", "ttft_predict_only",
                            "TTFTs predicted, in no fit: a test");
}

#define TTFT_ROW(id, group, ttft, extra) \
    "{\"id\":\"" id "\",\"sim\":{\"flags\":\"--model deepseek-v2-lite --gpu h100 --tp 1\",\"group\":\"" group \
    "\",\"generation\":2025" extra ",\"cases\":[{\"name\":\"c1\",\"kind\":\"serve\",\"workload\":{\"dataset\":" \
    "\"random:in=512,out=16\",\"concurrency\":1,\"prompts\":2},\"metrics\":[{\"name\":\"mean_ttft_ms\",\"published\":" ttft \
    ",\"score\":\"ttft\"}]}]}}"

TEST(sim_validate_ttft_predict_only_stays_out_of_the_request_path) {
    /* the fourth row's TTFT is 10x the others'; the fitted values move, not only the count of rows */
    check_marked_row_stays_out(request_path_line_of, TTFT_ROW("T1", "g1", "120", "") "," TTFT_ROW("T2", "g2", "150", "") "," TTFT_ROW("T3", "g3", "135", ""),
                               TTFT_ROW("T4", "g4", "1400", ",\"ttft_predict_only\":\"a test\""), TTFT_ROW("T4", "g4", "1400", ""), "rows: ",
                               "request path");
}

/* The predicted value of `metric` in case `name` from val_print's table (NAN when absent). */
static double printed_metric(const char *table, const char *name, const char *metric) {
    char key[128];
    snprintf(key, sizeof key, "%s", name);
    for (const char *l = table; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char id[16], cs[32], m[64];
        double pub, pred;
        if (sscanf(l, "%15s %31s %63s %lf %lf", id, cs, m, &pub, &pred) == 5 && !strcmp(cs, key) && !strcmp(m, metric)) return pred;
    }
    return NAN;
}

/* Calibrate, then predict, on a deployment published at several loads: its lowest load calibrates
 * the deployment's own factors, predict-only or not (predict_only keeps rows out of the table's
 * fits, not out of their own calibration; with the row unseen the calibration fell back to the
 * priors, which run faster than the defaults). The calibrate-then-predict lines are the same either
 * way, and on a deployment ~3x slower than the model they predict its other loads slower than the
 * defaults do. */
#define DEP_ROW(id, batch, tpot, extra) \
    "{\"id\":\"" id "\",\"sim\":{\"flags\":\"--model deepseek-v3 --gpu h200 --tp 8 --weight-dtype fp8\",\"group\":\"gd\"," \
    "\"deployment\":\"dep\",\"generation\":2025" extra ",\"cases\":[{\"name\":\"b" batch "\",\"kind\":\"decode\",\"workload\":" \
    "{\"batch\":" batch ",\"context\":1000},\"metrics\":[{\"name\":\"tpot_ms\",\"published\":" tpot ",\"score\":\"tpot\"}]}]}}"

static char *validate_output_of(const char *rows_json) {
    char path[512];
    if (write_table("dep.json", rows_json, path, sizeof path) < 0) return NULL;
    char cmd[600], *out = NULL;
    snprintf(cmd, sizeof cmd, "sim --validate %s", path);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    return out;
}

/* the calibrate-then-predict lines of a validate output */
static char *calibrated_part(const char *out) {
    const char *a = out ? strstr(out, "\ncalibrate on one load") : NULL, *b = a ? strstr(a, "calibrate-then-predict summary") : NULL;
    return a && b ? strndup(a, (size_t)(b - a)) : NULL;
}

TEST(sim_validate_predict_only_deployment_calibrates_on_its_own_load) {
#define DEP_TABLE(x) PO_ROW("P1", "g1", "20", "") "," DEP_ROW("D1", "8", "60", x) "," DEP_ROW("D2", "16", "66", x) "," DEP_ROW("D3", "32", "75", x)
    char *ord = validate_output_of(DEP_TABLE("")), *pon = validate_output_of(DEP_TABLE(",\"predict_only\":\"a test\""));
#undef DEP_TABLE
    char *a = calibrated_part(ord), *b = calibrated_part(pon);
    CHECK_MSG(a && b && !strcmp(a, b), "predict-only rows calibrate differently:\n%s\n%s", a ? a : "", b ? b : "");
    int lines = 0;
    for (const char *l = b; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
        char dep[32], id[16], cs[32], m[32];
        double pub, pred;
        if (sscanf(l, "%31s %15s %31s %31s %lf %lf", dep, id, cs, m, &pub, &pred) != 6 || strcmp(dep, "dep")) continue;
        lines++;
        double dflt = printed_metric(pon, cs, "tpot_ms");   /* the in-sample table's: the defaults */
        CHECK_MSG(pred > dflt, "%s: calibrated %.2f ms, the defaults %.2f ms, published %.2f ms", id, pred, dflt, pub);
    }
    CHECK_EQ_INT(lines, 2);
    free(a);
    free(b);
    free(ord);
    free(pon);
}


/* DP attention with fewer users than ranks: 4 users on DP 8 keep 4 ranks busy with one sequence
 * each, 8 users all 8. The step is about the same (one sequence on the busiest rank; the MoE sees 4
 * or 8 tokens), so 4 users give about half the throughput of 8, and never more than users over
 * their time per token (a closed loop cannot). Scaling one rank's results by dp gave 4 users the
 * throughput of 8. */
TEST(sim_validate_dp_closed_loop_below_one_user_a_rank) {
    char rows[2048], path[512];
    int n = snprintf(rows, sizeof rows, "{\"id\":\"D1\",\"sim\":{\"flags\":\"--engine-profile sglang --model deepseek-v3 --gpu h200 "
                     "--tp 8 --dp 8 --a2a allgather --weight-dtype fp8\",\"group\":\"g\",\"generation\":2025,\"cases\":[");
    for (int c = 4; c <= 8; c += 4)
        n += snprintf(rows + n, sizeof rows - (size_t)n,
                      "%s{\"name\":\"c%d\",\"kind\":\"serve\",\"workload\":{\"dataset\":\"random:in=64,out=64\",\"concurrency\":%d,"
                      "\"prompts\":16},\"metrics\":[{\"name\":\"mean_tpot_ms\",\"published\":20,\"score\":\"tpot\"},"
                      "{\"name\":\"output_throughput_per_gpu\",\"published\":20,\"score\":\"tput\"}]}",
                      c == 4 ? "" : ",", c, c);
    snprintf(rows + n, sizeof rows - (size_t)n, "]}}");
    if (write_table("dp.json", rows, path, sizeof path) < 0) return;
    char err[512] = "";
    val_table *t = NULL;
    CHECK_MSG(val_load(path, &t, err, sizeof err) == 0, "%s", err);
    if (!t) return;
    cost_factors f;
    cost_default_factors(&f);
    CHECK_MSG(val_run(t, &f, err, sizeof err) == 0, "%s", err);
    char *buf = NULL;
    size_t len = 0;
    FILE *ms = open_memstream(&buf, &len);
    CHECK(ms != NULL);
    if (ms) {
        val_print(ms, t);
        fclose(ms);
    }
    double thr4 = printed_metric(buf, "c4", "output_throughput_per_gpu"), thr8 = printed_metric(buf, "c8", "output_throughput_per_gpu");
    double tpot4 = printed_metric(buf, "c4", "mean_tpot_ms");
    CHECK_MSG(isfinite(thr4) && isfinite(thr8) && isfinite(tpot4), "%s", buf ? buf : "");
    /* a closed loop's tokens per second: at most users / time per token (x 8 GPUs), TTFT only lowers it */
    CHECK_MSG(thr4 * 8 <= 4 / (tpot4 / 1e3) * 1.0001, "4 users: %g tokens/s a GPU above 4 / %g ms", thr4, tpot4);
    CHECK_MSG(thr4 / thr8 > 0.4 && thr4 / thr8 < 0.65, "4 users give %.3g of 8 users' throughput", thr4 / thr8);
    free(buf);
    val_free(t);
}

/* A mistyped table row fails in one line (exit 2) that names the row, the case and what is wrong,
 * instead of simulating with a default (an unknown workload key) or scoring nothing (a metric the
 * case kind does not predict). The well-formed row is accepted, so each failure is the mistake's. */
TEST(sim_validate_table_schema_mistakes_are_named) {
#define SCHEMA_ROW(id, case_extra, workload, metric) \
    "{\"id\":\"" id "\",\"sim\":{\"flags\":\"--model deepseek-v3 --gpu h200 --tp 8 --weight-dtype fp8\",\"group\":\"g\"," \
    "\"cases\":[{\"name\":\"b8\",\"kind\":\"decode\"" case_extra ",\"workload\":{" workload "},\"metrics\":[" metric "]}]}}"
#define GOOD_METRIC "{\"name\":\"tpot_ms\",\"published\":20,\"score\":\"tpot\"}"
    static const struct { const char *rows, *said; } t[] = {
        {SCHEMA_ROW("S1", "", "\"batch\":8,\"context\":1000", GOOD_METRIC), NULL},
        {SCHEMA_ROW("S1", "", "\"batch\":8,\"contxt\":1000", GOOD_METRIC), "row S1 case b8: unknown workload key 'contxt'"},
        {SCHEMA_ROW("S1", "", "\"batch\":8", "{\"name\":\"median_tpot_ms\",\"published\":20,\"score\":\"tpot\"}"),
         "row S1 case b8: metric 'median_tpot_ms' is not one a decode case predicts"},
        {SCHEMA_ROW("S1", "", "\"batch\":8", "{\"name\":\"tpot_ms\",\"published\":-3,\"score\":\"tpot\"}"),
         "row S1 case b8: metric tpot_ms has no positive \"published\" number"},
        {SCHEMA_ROW("S1", "", "\"batch\":8", "{\"name\":\"tpot_ms\",\"published\":20,\"score\":\"tpott\"}"),
         "row S1 case b8: metric tpot_ms: score must be"},
        {SCHEMA_ROW("S1", ",\"flag\":\"--tp 4\"", "\"batch\":8", GOOD_METRIC), "row S1 case b8: unknown case key 'flag'"},
        {SCHEMA_ROW("S1", "", "\"batch\":8", GOOD_METRIC) "," SCHEMA_ROW("S1", "", "\"batch\":16", GOOD_METRIC), "row S1: a second row with that id"},
    };
    for (size_t i = 0; i < sizeof t / sizeof t[0]; i++) {
        char path[512], cmd[600], *out = NULL, *errout = NULL;
        if (write_table("schema.json", t[i].rows, path, sizeof path) < 0) return;
        snprintf(cmd, sizeof cmd, "sim --validate %s", path);
        int rc = test_run(cmd, &out, &errout);
        if (!t[i].said) {
            CHECK_MSG(rc == 0, "the well-formed row: exit %d (%s)", rc, errout ? errout : "");
        } else {
            CHECK_MSG(rc == 2, "case %zu: exit %d, want 2", i, rc);
            CHECK_MSG(errout && strstr(errout, t[i].said), "case %zu: \"%s\" not in: %s", i, t[i].said, errout ? errout : "(none)");
            CHECK_MSG(errout && !strchr(strchr(errout, '\n') ? strchr(errout, '\n') + 1 : "", '\n'), "case %zu: more than one line: %s", i,
                      errout ? errout : "");
        }
        free(out);
        free(errout);
    }
#undef SCHEMA_ROW
#undef GOOD_METRIC
}

/* llama.cpp b4747's host speed at c = 1 is read twice (sim_calibrate.c): off the server's prompt
 * time through the expert loop's part of it, and off the c = 1 step through the time per kernel at
 * the prior's ratio, each to its own uncertainty. On the 30M preset (h100l_long_tiny_*) a fifth of
 * the prompt is the KQ mask and sampling, priced from replicas, so the step's reading must carry the
 * larger weight (the prompt alone put the factor at its bound 2.0 and the predictions 11-40 % slow);
 * on V2-Lite from the same host right after (h100l_long) the loop is nearly all the prompt and the
 * prompt's reading must carry three quarters or more. Then the 30M preset's calibrated TPOT at 2-8x:
 * its median |error| within the criterion's 15 %, over the two sweeps the combination was made on
 * and three more from another host (h100m_long_tiny_*, stop 49, predicted blind: step weights 65-80 %,
 * where the fitted pair had 77 and 87 %). */
TEST(sim_calibrate_host_speed_read_twice) {
    static const struct { const char *sweep; int step_decides; } sw[] = {
        {"h100l_long_tiny_a", 1}, {"h100l_long_tiny_b", 1}, {"h100l_long", 0},
        {"h100m_long_tiny_a", 1}, {"h100m_long_tiny_b", 1}, {"h100m_long_tiny_c", 1}, {"h100m_long", 0}};
    stats_samples tiny;
    stats_init(&tiny);
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++) {
        char cmd[512], *out = NULL;
        snprintf(cmd, sizeof cmd, "sim --validate tests/fixtures/real-gpu/%s.json --engine-profile llamacpp-b4747 --gpu h100 --weight-dtype fp16",
                 sw[i].sweep);
        CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
        const char *hl = out ? strstr(out, "loop host factor ") : NULL, *rd = out ? strstr(out, "from the prompt ") : NULL;
        double h = NAN, hp = NAN, hs = NAN, wp = NAN, ws = NAN;
        CHECK_MSG(hl && sscanf(hl, "loop host factor %lf", &h) == 1, "%s: no host factor line", sw[i].sweep);
        const char *st = rd ? strstr(rd, "from the c = 1 step ") : NULL, *wt = st ? strstr(st, "weighted ") : NULL;
        CHECK_MSG(rd && st && wt && sscanf(rd, "from the prompt %lf", &hp) == 1 && sscanf(st, "from the c = 1 step %lf", &hs) == 1 &&
                      sscanf(wt, "weighted %lf / %lf", &wp, &ws) == 2,
                  "%s: no reading line", sw[i].sweep);
        CHECK_NEAR(wp + ws, 100, 1.01);
        CHECK_MSG(sw[i].step_decides ? ws > wp : wp >= 75, "%s: prompt %.0f %% / step %.0f %%", sw[i].sweep, wp, ws);
        double lo = fmin(2.0, fmax(0.5, fmin(hp, hs))), hi = fmax(0.5, fmin(2.0, fmax(hp, hs)));   /* both clamped to [0.5, 2] */
        CHECK_MSG(h >= lo * 0.999 && h <= hi * 1.001, "%s: host factor %.3f outside its readings %.3f and %.3f", sw[i].sweep, h, hp, hs);
        val_row r;
        for (const char *at = out; sw[i].step_decides && val_row_next(&at, &r); )
            if (!strcmp(r.name, "median_tpot_ms") && r.x >= 2 && r.x <= 8 && !isnan(r.err_pct)) stats_add(&tiny, fabs(r.err_pct));
        free(out);
    }
    CHECK_EQ_INT((int)tiny.n, 15);
    stats_sort(&tiny);
    double med = tiny.n ? stats_percentile_sorted(tiny.v, tiny.n, 50) : NAN;
    fprintf(stderr, "    30M preset, calibrated at c = 1: median |TPOT error| at 2-8x %.1f %% over %d\n", med, (int)tiny.n);
    CHECK_MSG(med <= 15, "30M preset: median |TPOT error| %.1f %% at 2-8x", med);
    stats_free(&tiny);
}

/* A calibration on a llama.cpp b4747 sweep scales the server's host work by the host factor it
 * finds, the KV mask's with the loop's (sim_calibrate.c, host_scale): the profile it writes holds the
 * mask's two constants at their defaults times the factor it prints. */
TEST(sim_calibrate_mask_at_the_host_factor) {
    char cmd[512], *out = NULL;
    const char *prof = "build/test_mask_host_profile.json";
    snprintf(cmd, sizeof cmd, "sim --calibrate tests/fixtures/real-gpu/h100m_long_tiny_a.json --profile-out %s", prof);
    remove(prof);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    const char *hl = out ? strstr(out, "loop host factor ") : NULL;
    double h = NAN;
    CHECK_MSG(hl && sscanf(hl, "loop host factor %lf", &h) == 1, "no host factor line");
    free(out);
    json_error_t je;
    json_t *d = json_load_file(prof, 0, &je);
    CHECK_MSG(d != NULL, "%s: %s", prof, je.text);
    json_t *f = json_object_get(d, "factors");
    double m = json_number_value(json_object_get(f, "ggml_mask_s")), r = json_number_value(json_object_get(f, "ggml_mask_row_s"));
    cost_factors q;
    cost_default_factors(&q);
    CHECK(h > 1.2);   /* this sweep's host reads slow: a factor that left the mask at 1 would show */
    CHECK_NEAR(m, q.ggml_mask_s * h, q.ggml_mask_s * h * 2e-3);   /* the factor is printed to 3 decimals */
    CHECK_NEAR(r, q.ggml_mask_row_s * h, q.ggml_mask_row_s * h * 2e-3);
    json_decref(d);
    remove(prof);
}

/* llama-server's own way outside its timings (HTTP, tokenization, the slot's launch, the first
 * chunk back) is what the c = 1 level measured of it (server_timing.median_ttft_outside_server_ms):
 * the calibrated profile carries it, less the simulator's own ingest per prompt token, as the
 * recorded hosts' line (a fixed part and one per prompt token) scaled to it, and the
 * calibration level's TTFT then comes out within half that path of the measured one on V2-Lite and
 * the 906M preset, whose prompt time the calibration reproduces (without it the whole path was
 * missing: 2.6-9.2 % low). Left out at several users, where a prompt also waits for the step in
 * flight, the simulator's own. */
TEST(sim_calibrate_server_path_from_the_run) {
    static const struct { const char *sweep, *model; } sw[] = {{"h100m_long", NULL}, {"h100m_long_medium_a", "m"}, {"h100k_long", NULL},
                                                               {"h100j_long_a", NULL}};
    for (size_t i = 0; i < sizeof sw / sizeof sw[0]; i++) {
        char path[256], cmd[512], *out = NULL;
        snprintf(path, sizeof path, "tests/fixtures/real-gpu/%s.json", sw[i].sweep);
        json_error_t je;
        json_t *d = json_load_file(path, 0, &je);
        CHECK_MSG(d != NULL, "%s: %s", path, je.text);
        json_t *r1 = json_object_get(json_array_get(json_object_get(d, "levels"), 0), "results");
        double outside_ms = json_number_value(json_object_get(json_object_get(r1, "server_timing"), "median_ttft_outside_server_ms"));
        double per_req_in = json_number_value(json_object_get(r1, "total_input_tokens")) / json_number_value(json_object_get(r1, "completed"));
        double ttft_ms = json_number_value(json_object_get(r1, "median_ttft_ms"));
        json_decref(d);
        CHECK_MSG(outside_ms > 1, "%s: %.2f ms outside the server", sw[i].sweep, outside_ms);
        const char *model = fixture_model(sw[i].model);
        const char *prof = "build/test_server_path_profile.json";
        remove(prof);
        snprintf(cmd, sizeof cmd, "sim --calibrate %s %s --profile-out %s", path, model, prof);
        CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
        json_t *pd = json_load_file(prof, 0, &je);
        CHECK_MSG(pd != NULL, "%s: %s", prof, je.text);
        json_t *pf = json_object_get(pd, "factors");
        double sp = json_number_value(json_object_get(pf, "server_path_s")), spt = json_number_value(json_object_get(pf, "server_path_token_s"));
        json_decref(pd);
        remove(prof);
        /* the recorded hosts' line scaled to this run: its parts keep their ratio */
        CHECK_NEAR(sp * 1e3 + spt * 1e3 * per_req_in, outside_ms - SIM_INGEST_NS_PER_TOKEN * 1e-6 * per_req_in, 1e-6);
        CHECK_NEAR(spt / sp, COST_SERVER_PATH_TOKEN_S / COST_SERVER_PATH_S, 1e-9);
        snprintf(cmd, sizeof cmd, "sim --validate %s %s", path, model);
        CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
        val_row r;
        int seen = 0;
        for (const char *at = out; val_row_next(&at, &r); ) {
            if (strcmp(r.name, "median_ttft_ms") || r.load != 1) continue;
            seen = 1;
            CHECK_MSG(fabs(r.predicted - ttft_ms) < outside_ms / 2, "%s: c = 1 TTFT %.2f ms simulated, %.2f measured (path %.2f ms)",
                      sw[i].sweep, r.predicted, ttft_ms, outside_ms);
        }
        CHECK_MSG(seen, "%s: no c = 1 TTFT row", sw[i].sweep);
        free(out);
    }
}

/* Every real llama.cpp sweep in tests/fixtures/real-gpu of four or more levels (forty-six, on
 * seventeen GPUs: four H200, thirteen H100; h100g_repeat and h100h_* have tests of their own), each
 * calibrated on its own c = 1 alone: the calibrated 80% intervals, pooled over all of them,
 * hold the measured TPOT and throughput at least as often as an 80% interval does with 95%
 * probability over that many predictions. The stop-40 sweeps (h100d_*: the 906M preset in f16 and
 * Q8_0, V2-Lite Q8_0 with 1024-token prompts, V2-Lite f16) were recorded after the model was settled
 * and are in no constant; README-sim.md, "Four more sweeps on a fourth H100 host", has their errors;
 * the stop-42 ones (h100f_*), stop 48's (h100l_*) and stop 49's (h100m_*) were predicted with the model
 * as it stood. */
TEST(sim_validate_every_real_sweep_pooled) {
    static const struct { const char *sweep, *model, *gpu, *dtype; } sw[] = {
        {"gpu_overhead", NULL, "h200", "fp16"}, {"gpu_overhead_long", NULL, "h200", "fp16"}, {"medium_sweep", "m", "h200", "fp16"},
        {"h100_overhead", NULL, "h100", "fp16"}, {"h100_overhead_long", NULL, "h100", "fp16"}, {"h100_overhead_q8", NULL, "h100", "int8"},
        {"h100_overhead_q4", NULL, "h100", "q4_0"}, {"h100_floor_f16", NULL, "h100", "fp16"}, {"h100_floor_q8", NULL, "h100", "int8"},
        {"h100_floor_q4", NULL, "h100", "q4_0"}, {"h100b_floor_f16", NULL, "h100", "fp16"}, {"h100b_floor_q8", NULL, "h100", "int8"},
        {"h100c_overhead", NULL, "h100", "fp16"}, {"h100c_overhead_q8", NULL, "h100", "int8"}, {"h100d_medium_f16", "m", "h100", "fp16"},
        {"h100d_medium_q8", "m", "h100", "int8"}, {"h100d_overhead_long_q8", NULL, "h100", "int8"}, {"h100d_overhead", NULL, "h100", "fp16"},
        {"h100e_overhead", NULL, "h100", "fp16"}, {"h100e_overhead_q4", NULL, "h100", "q4_0"}, {"h100e_medium_f16", "m", "h100", "fp16"},
        {"h100e_floor_f16", NULL, "h100", "fp16"}, {"h100e_overhead_q8", NULL, "h100", "int8"},
        {"h100f_overhead_long", NULL, "h100", "fp16"}, {"h100f_medium_q8", "m", "h100", "int8"}, {"h100f_medium_q4", "m", "h100", "q4_0"},
        {"h100f_long_q4", NULL, "h100", "q4_0"}, {"h100f_floor_q8", NULL, "h100", "int8"},
        {"h200a_overhead", NULL, "h200", "fp16"}, {"h200a_medium_f16", "m", "h200", "fp16"},
        {"h100i_overhead", NULL, "h100", "fp16"}, {"h100i_medium_f16", "m", "h100", "fp16"},
        {"h100j_long_a", NULL, "h100", "fp16"}, {"h100j_long_b", NULL, "h100", "fp16"},
        {"h100j_long_medium_a", "m", "h100", "fp16"}, {"h100j_long_medium_b", "m", "h100", "fp16"}, {"h100k_long", NULL, "h100", "fp16"},
        {"h100l_long", NULL, "h100", "fp16"}, {"h100l_long_tiny_a", "t", "h100", "fp16"}, {"h100l_long_tiny_b", "t", "h100", "fp16"},
        {"h100m_long", NULL, "h100", "fp16"}, {"h100m_long_medium_a", "m", "h100", "fp16"}, {"h100m_long_medium_b", "m", "h100", "fp16"},
        {"h100m_long_tiny_a", "t", "h100", "fp16"}, {"h100m_long_tiny_b", "t", "h100", "fp16"}, {"h100m_long_tiny_c", "t", "h100", "fp16"}};
    int in_all = 0, tot_all = 0;
    for (size_t s = 0; s < sizeof sw / sizeof sw[0]; s++) {
        char name[128];
        snprintf(name, sizeof name, "%s.json", sw[s].sweep);
        double e[2][8];
        int before = tot_all;
        int n = fixture_sweep(name, fixture_model(sw[s].model), sw[s].gpu, sw[s].dtype, e, &in_all, &tot_all);
        CHECK_MSG(n >= 4 && tot_all - before == 2 * (n - 1), "%s: %d levels, %d predicted metrics", sw[s].sweep, n, tot_all - before);
        /* the calibrated profile reproduces its own point: the steps are fitted to the level's mean
         * gap, so what is left is the prompt (fitted to its median, at most a tenth of a request's
         * time at c = 1 here) and the HTTP path. Fitted to the median gap, the throughput came out
         * 1.5-8.9 % high on 27 of the 30 (the host's jitter lifts the mean step above the median) */
        CHECK_MSG(n >= 1 && fabs(e[1][0]) <= 3, "%s: the calibration point's throughput off by %+.1f%%", sw[s].sweep, e[1][0]);
    }
    fprintf(stderr, "    pooled: %d of %d inside\n", in_all, tot_all);
    CHECK_EQ_INT(tot_all, 392);
    CHECK_MSG(in_all >= coverage_floor(tot_all), "%d of %d inside the calibrated 80%% intervals (floor %d)", in_all, tot_all,
              coverage_floor(tot_all));
}

/* llama-server's KV cells in use at each level of a fresh-prompt sweep (its kv_cache_usage_ratio x
 * -c, time-averaged by the sweep's telemetry) against the simulated slots' (profile kv_window: idle
 * slots keep their last request, a new prompt takes the least recently used one, the sweep's earlier
 * levels leave first_prompt of them warm): within one request's tokens, what one slot changing hands
 * moves the measured mean by. */
static void check_slot_cells(const char *path, const char *model, const char *gpu, const char *dtype, int levels) {
    char cmd[1024], *out = NULL;
    snprintf(cmd, sizeof cmd, "sim --validate %s --engine-profile llamacpp-b4747 %s --gpu %s --weight-dtype %s", path, model, gpu, dtype);
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    json_error_t je;
    json_t *d = json_load_file(path, 0, &je);
    const char *ds = json_string_value(json_object_get(json_object_get(d, "config"), "dataset"));
    int in = 0, outn = 0;
    CHECK(ds && sscanf(ds, "random:in=%d,out=%d", &in, &outn) == 2);
    json_decref(d);
    int n = 0;
    val_row r;
    for (const char *at = out; val_row_next(&at, &r); ) {
        if (strcmp(r.name, "kv_cells_in_use_mean")) continue;
        CHECK_MSG(fabs(r.predicted - r.measured) <= in + outn - 1, "%s c = %g: %.0f KV cells in use simulated, %.0f measured", path, r.load,
                  r.predicted, r.measured);
        n++;
    }
    CHECK_MSG(n == levels, "%s: %d levels with KV cells compared", path, n);
    free(out);
}

/* Twenty-eight sweeps recorded after the sweep sent each level fresh prompts (tests/fixtures/real-gpu/README.md:
 * h100e_*, stop 41; h100f_*, stop 42, on a sixth H100 host; h200a_*, stop 43, on an H200; h100i_*,
 * stop 45, on an eleventh H100, both within 15% at 2-8x; h100j_*, stop 46, on a twelfth, with 30-40 s
 * levels, two server starts each: 21 of 24 within 15%, the misses the second V2-Lite start's c = 2
 * TPOT +19% and the first 906M start's c = 8, +29% TPOT and -19% throughput; h100k_long, stop 46, on
 * a thirteenth, 6 of 6; h100l_*, stop 48, on a fourteenth (the 30M preset twice, V2-Lite: 12 of 18);
 * h100m_*, stop 49, on a fifteenth (the 30M preset three times, the 906M preset twice, V2-Lite: 31 of 36,
 * the misses all the 30M preset's at c = 4-8); each predicted
 * with the model as it stood; the H200 V2-Lite f16 sweep within 15% at 2-8x, its 906M sweep -19% TPOT
 * and +25% throughput at c = 2): no
 * level found its prompts cached, the c = 1 calibration predicts the stop-41 Q4_0, Q8_0 and
 * short-prompt f16 sweeps within 15% at 2-8x, every level's KV cells in use match llama-server's
 * own count (check_slot_cells), and all of them together cover as 80% intervals should (pooled).
 * (Misses, README-sim.md: V2-Lite f16 -16% TPOT at c = 8; the 906M preset -19% at c = 8; one metric
 * of each stop-42 sweep, two of long_q4.) Of the stop-41 five, medium_f16, floor_f16 and overhead_q8
 * were in no choice of a constant; the ggml_gemm_s and ggml_mmq_s values were chosen on the eighteen
 * older sweeps. */
TEST(sim_validate_fresh_prompt_sweeps) {
    static const struct { const char *sweep, *model, *gpu, *dtype; int levels, within15; } sw[] = {
        {"h100e_overhead", NULL, "h100", "fp16", 6, 0}, {"h100e_overhead_q4", NULL, "h100", "q4_0", 6, 1},
        {"h100e_medium_f16", "m", "h100", "fp16", 6, 0}, {"h100e_floor_f16", NULL, "h100", "fp16", 4, 1},
        {"h100e_overhead_q8", NULL, "h100", "int8", 6, 1}, {"h100f_overhead_long", NULL, "h100", "fp16", 4, 0},
        {"h100f_medium_q8", "m", "h100", "int8", 6, 0}, {"h100f_medium_q4", "m", "h100", "q4_0", 6, 0},
        {"h100f_long_q4", NULL, "h100", "q4_0", 5, 0}, {"h100f_floor_q8", NULL, "h100", "int8", 4, 0},
        {"h200a_overhead", NULL, "h200", "fp16", 6, 1}, {"h200a_medium_f16", "m", "h200", "fp16", 6, 0},
        {"h100i_overhead", NULL, "h100", "fp16", 6, 1}, {"h100i_medium_f16", "m", "h100", "fp16", 6, 1},
        {"h100j_long_a", NULL, "h100", "fp16", 5, 1}, {"h100j_long_b", NULL, "h100", "fp16", 5, 0},
        {"h100j_long_medium_a", "m", "h100", "fp16", 5, 0}, {"h100j_long_medium_b", "m", "h100", "fp16", 5, 1},
        {"h100k_long", NULL, "h100", "fp16", 5, 1}, {"h100l_long", NULL, "h100", "fp16", 5, 1},
        {"h100l_long_tiny_a", "t", "h100", "fp16", 5, 0}, {"h100l_long_tiny_b", "t", "h100", "fp16", 5, 1},
        {"h100m_long", NULL, "h100", "fp16", 5, 1}, {"h100m_long_medium_a", "m", "h100", "fp16", 5, 1},
        {"h100m_long_medium_b", "m", "h100", "fp16", 5, 1}, {"h100m_long_tiny_a", "t", "h100", "fp16", 5, 1},
        {"h100m_long_tiny_b", "t", "h100", "fp16", 5, 0}, {"h100m_long_tiny_c", "t", "h100", "fp16", 5, 0}};
    int in_all = 0, tot_all = 0;
    for (size_t s = 0; s < sizeof sw / sizeof sw[0]; s++) {
        char name[128], path[512];
        snprintf(name, sizeof name, "%s.json", sw[s].sweep);
        snprintf(path, sizeof path, "tests/fixtures/real-gpu/%s", name);
        json_error_t je;
        json_t *d = json_load_file(path, 0, &je);
        CHECK_MSG(d != NULL, "%s: %s", path, je.text);
        size_t i;
        json_t *lv;
        json_array_foreach(json_object_get(d, "levels"), i, lv) {
            double hit = json_number_value(json_object_get(json_object_get(json_object_get(lv, "results"), "prefix_cache"), "hit_rate"));
            CHECK_MSG(hit <= 0.02, "%s level %zu: %.0f%% of its prompt tokens cached", sw[s].sweep, i, hit * 100);
        }
        json_decref(d);
        double e[2][8];
        const char *model = fixture_model(sw[s].model);
        int n = fixture_sweep(name, model, sw[s].gpu, sw[s].dtype, e, &in_all, &tot_all);
        CHECK_EQ_INT(n, sw[s].levels);
        if (n == sw[s].levels && sw[s].within15) check_within15(sw[s].sweep, e);
        check_slot_cells(path, model, sw[s].gpu, sw[s].dtype, sw[s].levels);
    }
    CHECK_EQ_INT(tot_all, 238);
    CHECK_MSG(in_all >= coverage_floor(tot_all), "%d of %d inside the calibrated 80%% intervals (floor %d)", in_all, tot_all,
              coverage_floor(tot_all));
}

/* Calibrate on a busier level (--calibrate-at 2) of twenty-five fresh-prompt sweeps (stop 49's six,
 * h100m_*, predicted blind), predict the rest. A level of several sequences is simulated and one factor fitted on its median ITL, the
 * host's speed (the loop's host constants and the time per kernel together). Fitting the host on the
 * median TTFT and the time per kernel on the ITL instead, the predictions at 2-8x were within 15 %
 * in 148 of 214 cases over all sweeps (one factor: 191). Each sweep marked is within 15 % at 2-8x
 * (c = 4, 8, 16); the others miss on one host's share at c >= 8 (README-sim.md, "Calibrating on a
 * level of several users"); the intervals pooled cover as 80 % intervals should. The option's
 * refusals: a load the sweep did not run, a published table, no sweep at all. */
TEST(sim_validate_calibrated_on_a_busier_level) {
    static const struct { const char *sweep; int within15; } sw[] = {
        {"h100e_overhead", 1}, {"h100e_overhead_q4", 1}, {"h100e_floor_f16", 1}, {"h100e_medium_f16", 0}, {"h100e_overhead_q8", 0},
        {"h100f_overhead_long", 0}, {"h100f_medium_q8", 1}, {"h100f_medium_q4", 0}, {"h100f_long_q4", 0}, {"h100f_floor_q8", 1},
        {"h200a_overhead", 0}, {"h200a_medium_f16", 0}, {"h100i_overhead", 1}, {"h100i_medium_f16", 1},
        {"h100j_long_a", 0}, {"h100j_long_b", 0}, {"h100j_long_medium_a", 0}, {"h100j_long_medium_b", 1}, {"h100k_long", 1},
        {"h100m_long", 1}, {"h100m_long_medium_a", 1}, {"h100m_long_medium_b", 0}, {"h100m_long_tiny_a", 0}, {"h100m_long_tiny_b", 0},
        {"h100m_long_tiny_c", 0}};
    int in_all = 0, tot_all = 0;
    for (size_t s = 0; s < sizeof sw / sizeof sw[0]; s++) {
        char cmd[512], *out = NULL;
        snprintf(cmd, sizeof cmd, "sim --validate tests/fixtures/real-gpu/%s.json --calibrate-at 2", sw[s].sweep);
        CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
        CHECK_MSG(out && strstr(out, "calibrate on the load (c = 2)") && strstr(out, "the host's speed x"), "%s: no fit at c = 2", sw[s].sweep);
        int n = 0;
        val_row r;
        for (const char *at = out; val_row_next(&at, &r); ) {
            if (isnan(r.err_pct) || (strcmp(r.name, "median_tpot_ms") && strcmp(r.name, "output_throughput")) || r.x < 2 || r.x > 8) continue;
            n++;
            if (sw[s].within15) CHECK_MSG(fabs(r.err_pct) <= 15, "%s c = %g: %s off by %+.1f%%", sw[s].sweep, r.load, r.name, r.err_pct);
        }
        CHECK_MSG(n >= 4, "%s: %d predictions at 2-8x", sw[s].sweep, n);
        int in = 0, tot = 0;
        const char *cov = out ? strstr(out, "80% intervals (calibrated): ") : NULL;
        CHECK(cov && sscanf(cov, "80%% intervals (calibrated): %d of %d", &in, &tot) == 2);
        in_all += in;
        tot_all += tot;
        free(out);
    }
    CHECK_MSG(tot_all > 0 && in_all >= coverage_floor(tot_all), "%d of %d inside the calibrated 80%% intervals (floor %d)", in_all, tot_all,
              coverage_floor(tot_all));
    /* a level whose prompts the server found cached calibrates on the part it computed */
    char *out = NULL, *err = NULL;
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/h100c_overhead.json --calibrate-at 4", &out, NULL), 0);
    CHECK(out && strstr(out, "66% of the prompt tokens were in the server's prefix cache: simulated as random:in=86,out=128"));
    free(out);
    static const struct { const char *cmd, *said; } bad[] = {
        {"sim --validate tests/fixtures/real-gpu/h100i_restart_a.json --calibrate-at 2", "no measured level at load 2 (its measured loads: 1, 4, 8)"},
        {"sim --validate data/published.json --calibrate-at 2", "is a published table"},
        {"sim --calibrate tests/fixtures/real-gpu/medium_config.json --calibrate-at 2", "is not a sweep"},
        {"sim --calibrate-at 2", "it goes with --calibrate SWEEP.json or --validate SWEEP.json"},
        {"sim --validate tests/fixtures/real-gpu/h100i_restart_a.json --calibrate-at 0", "--calibrate-at"}};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        err = NULL;
        CHECK_MSG(test_run(bad[i].cmd, NULL, &err) == 2, "%s: not refused", bad[i].cmd);
        CHECK_MSG(err && strstr(err, bad[i].said) && !strchr(strchr(err, '\n') ? strchr(err, '\n') + 1 : "", '\n'), "%s: %s", bad[i].cmd,
                  err ? err : "(nothing)");
        free(err);
    }
}

/* One server started anew for each sweep (tests/fixtures/real-gpu/README.md, stop 45): five times on
 * a tenth H100 (GPU-70677161; h100h_restart_a..c as started, h100h_pinned_a..b with the
 * kernel-launching main thread pinned to one core) and twice on an eleventh (h100i_restart_a..b),
 * c = 1, 4, 8 each, predicted with the model as it stood: each calibrated on its own c = 1 puts TPOT
 * and throughput at c = 4 and 8 within 15%, the KV cells in use match llama-server's, and the
 * twenty-eight predictions cover as 80% intervals should. (On the first host c = 8's TPOT is
 * 64.3-69.3 ms across the five starts; on the second 72.2-75.9 ms, where its overhead sweep minutes
 * earlier had 65.5 ms: README-sim.md, "What the one-level calibration cannot see".) */
TEST(sim_validate_restarted_servers_one_host) {
    static const char *const sw[] = {"h100h_restart_a", "h100h_restart_b", "h100h_restart_c", "h100h_pinned_a", "h100h_pinned_b",
                                     "h100i_restart_a", "h100i_restart_b"};
    int in_all = 0, tot_all = 0;
    for (size_t s = 0; s < sizeof sw / sizeof sw[0]; s++) {
        char name[128], path[512];
        snprintf(name, sizeof name, "%s.json", sw[s]);
        snprintf(path, sizeof path, "tests/fixtures/real-gpu/%s", name);
        double e[2][8];
        int n = fixture_sweep(name, "--model deepseek-v2-lite", "h100", "fp16", e, &in_all, &tot_all);
        CHECK_EQ_INT(n, 3);   /* c = 1, 4, 8 */
        for (int i = 1; i < n && n == 3; i++)
            for (int k = 0; k < 2; k++)
                CHECK_MSG(fabs(e[k][i]) <= 15, "%s c = %d: %s off by %+.1f%%", sw[s], 4 << (i - 1), k ? "throughput" : "TPOT", e[k][i]);
        check_slot_cells(path, "--model deepseek-v2-lite", "h100", "fp16", 3);
    }
    CHECK_EQ_INT(tot_all, 28);
    CHECK_MSG(in_all >= coverage_floor(tot_all), "%d of %d inside the calibrated 80%% intervals (floor %d)", in_all, tot_all,
              coverage_floor(tot_all));
    /* these c = 1 levels held 4-6 requests: the calibration says its point rests on few; the 906M
     * sweep's c = 1 held 11 and says nothing of the kind */
    char *out = NULL;
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/h100i_restart_b.json", &out, NULL), 0);
    CHECK(out && strstr(out, "few requests: the fit rests on 5;"));
    free(out);
    out = NULL;
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/h100i_medium_f16.json", &out, NULL), 0);
    CHECK(out && !strstr(out, "few requests"));
    free(out);
}

/* Median TPOT and output throughput by load of a recorded sweep (levels in file order); returns
 * how many levels were read. */
static int sweep_measured(const char *name, double load[8], double tpot_ms[8], double thr[8]) {
    char path[512];
    snprintf(path, sizeof path, "tests/fixtures/real-gpu/%s.json", name);
    json_t *d = json_load_file(path, 0, NULL);
    json_t *levels = json_object_get(d, "levels"), *lv;
    size_t i;
    int n = 0;
    json_array_foreach(levels, i, lv) {
        json_t *r = json_object_get(lv, "results");
        if (n == 8 || !json_is_number(json_object_get(r, "median_tpot_ms"))) continue;
        load[n] = json_number_value(json_object_get(lv, "load"));
        tpot_ms[n] = json_number_value(json_object_get(r, "median_tpot_ms"));
        thr[n] = json_number_value(json_object_get(r, "output_throughput"));
        n++;
    }
    json_decref(d);
    return n;
}

/* How close a prediction from c = 1 can get: the same server, flags and dataset started again on the
 * same host (tests/fixtures/real-gpu/README.md: h100h_* five starts, h100i_restart_* two, h100j_long_*
 * and h100j_long_medium_* two each). The best a level-to-level predictor could know is another start's
 * own measured growth: start b's level k predicted as b's c = 1 x (a's level k / a's c = 1), for every
 * ordered pair of starts. That is within 15 % at 2-8x in 96 of 112 cases (off by up to 39 %: the 906M
 * pair at c = 8, 31.6 against 43.7 ms): a start's growth from c = 1 is not repeatable to 15 %. The
 * simulator, calibrated on each start's own c = 1, must be within 15 % at least as often on the same
 * starts' same levels (47 of 52 when written; README-sim.md, "What the one-level calibration cannot
 * see"), and its intervals cover as 80 % intervals should. */
TEST(sim_validate_as_close_as_a_restart_of_the_same_server) {
    static const char *const groups[][6] = {
        {"h100h_restart_a", "h100h_restart_b", "h100h_restart_c", "h100h_pinned_a", "h100h_pinned_b", NULL},
        {"h100i_restart_a", "h100i_restart_b", NULL},
        {"h100j_long_a", "h100j_long_b", NULL},
        {"h100j_long_medium_a", "h100j_long_medium_b", NULL}};
    int rep_ok = 0, rep_n = 0, sim_ok = 0, sim_n = 0, in_all = 0, tot_all = 0;
    for (size_t g = 0; g < sizeof groups / sizeof groups[0]; g++) {
        double load[6][8], tp[6][8], thr[6][8];
        int nl[6], ns = 0;
        for (; ns < 6 && groups[g][ns]; ns++) nl[ns] = sweep_measured(groups[g][ns], load[ns], tp[ns], thr[ns]);
        for (int b = 0; b < ns; b++) {
            char name[128];
            double e[2][8];
            snprintf(name, sizeof name, "%s.json", groups[g][b]);
            int medium = strstr(groups[g][b], "medium") != NULL;
            int n = fixture_sweep(name, medium ? "--model-config tests/fixtures/real-gpu/medium_config.json" : "--model deepseek-v2-lite", "h100",
                                  "fp16", e, &in_all, &tot_all);
            CHECK_MSG(n == nl[b] && n >= 3 && load[b][0] == 1, "%s: %d levels simulated, %d measured", groups[g][b], n, nl[b]);
            if (n != nl[b] || load[b][0] != 1) continue;
            for (int i = 1; i < n; i++) {
                if (load[b][i] < 2 || load[b][i] > 8) continue;
                for (int k = 0; k < 2; k++) sim_ok += fabs(e[k][i]) <= 15, sim_n++;
                for (int a = 0; a < ns; a++) {
                    if (a == b || nl[a] != n || load[a][i] != load[b][i]) continue;
                    double ptp = tp[b][0] * tp[a][i] / tp[a][0], pthr = thr[b][0] * thr[a][i] / thr[a][0];
                    rep_ok += fabs(ptp / tp[b][i] - 1) <= 0.15;
                    rep_ok += fabs(pthr / thr[b][i] - 1) <= 0.15;
                    rep_n += 2;
                }
            }
        }
    }
    CHECK_EQ_INT(sim_n, 52);    /* 7 starts x c = 4, 8 + 4 starts x c = 2, 4, 8; TPOT and throughput */
    CHECK_EQ_INT(rep_n, 112);   /* 20 ordered pairs x 2 levels + 2 x 2 + 2 x 3 + 2 x 3, two metrics each */
    CHECK_MSG(rep_ok < rep_n, "every restart within 15%% of another's growth (%d of %d): then the floor is not one", rep_ok, rep_n);
    CHECK_MSG(sim_ok * rep_n >= rep_ok * sim_n, "simulator from c = 1: %d of %d within 15%%; another start's own growth: %d of %d", sim_ok,
              sim_n, rep_ok, rep_n);
    CHECK_MSG(in_all >= coverage_floor(tot_all), "%d of %d inside the calibrated 80%% intervals (floor %d)", in_all, tot_all,
              coverage_floor(tot_all));
}

/* Median TPOT of an uncalibrated `dsperf sim` of a recorded sweep's c = 1 level (its GPU, -np and
 * dataset), with extra flags; NAN when it did not run. */
static double uncalibrated_c1_tpot(const char *sweep, const char *gpu, const char *extra, double *measured) {
    char path[512], cmd[1024], *out = NULL;
    snprintf(path, sizeof path, "tests/fixtures/real-gpu/%s.json", sweep);
    json_t *d = json_load_file(path, 0, NULL);
    json_t *r = json_object_get(json_array_get(json_object_get(d, "levels"), 0), "results");
    const char *ds = json_string_value(json_object_get(json_object_get(r, "config"), "dataset"));
    json_t *np = json_object_get(json_object_get(json_object_get(d, "deployment"), "max_num_seqs"), "value");
    *measured = json_number_value(json_object_get(r, "median_tpot_ms"));
    snprintf(cmd, sizeof cmd, "sim --engine-profile llamacpp-b4747 --model deepseek-v2-lite --gpu %s --weight-dtype fp16 --max-num-seqs %d "
             "--concurrency 1 --requests 8 --dataset %s %s", gpu, json_is_integer(np) ? (int)json_integer_value(np) : 32, ds ? ds : "?", extra);
    json_decref(d);
    double tpot = NAN;
    if (test_run(cmd, &out, NULL) == 0 && out && strstr(out, "Median TPOT (ms):"))
        tpot = strtod(strstr(out, "Median TPOT (ms):") + strlen("Median TPOT (ms):"), NULL);
    free(out);
    return tpot;
}

/* llama.cpp b4747 with no calibration at all: the loop's host constants were timed on one H200
 * host, and its time per kernel was the graph engines' (4.09 us). On the V2-Lite f16 sweeps recorded
 * on 13 hosts (one per recording session; c = 1 levels) that put the c = 1 TPOT 37-60 % low. The
 * prior now takes the median recorded host (loop_host_x 0.80: each loop constant x 0.80, 16.3 us x
 * 0.80 a kernel), which leaves each session's own spread (its c = 1 loop factor 0.65-1.15): the
 * median |error| over the sweeps at most 15 %, and below half the old one's; both signs occur. The
 * median host comes from these sessions' calibrations, each left out changes it by at most 0.002
 * (README-sim.md, "An uncalibrated llama.cpp host"). A calibrated deployment's constants are its own:
 * sim_validate_every_real_sweep_pooled and the rest did not move. */
TEST(sim_llamacpp_uncalibrated_host_is_the_median_recorded_one) {
    static const struct { const char *sweep, *gpu; } sw[] = {
        {"gpu_overhead", "h200"}, {"gpu_overhead_long", "h200"}, {"h100_overhead", "h100"}, {"h100_overhead_long", "h100"},
        {"h100_floor_f16", "h100"}, {"h100b_floor_f16", "h100"}, {"h100c_overhead", "h100"}, {"h100d_overhead", "h100"},
        {"h100e_overhead", "h100"}, {"h100e_floor_f16", "h100"}, {"h100f_overhead_long", "h100"}, {"h100g_repeat", "h100"},
        {"h100h_restart_a", "h100"}, {"h100i_overhead", "h100"}, {"h100j_long_a", "h100"}, {"h100k_long", "h100"},
        {"h200a_overhead", "h200"}};
    enum { N = sizeof sw / sizeof sw[0] };
    stats_samples now, before;   /* |TPOT error| in %, with the prior and at the timing host */
    stats_init(&now);
    stats_init(&before);
    int neg = 0, pos = 0;
    for (int i = 0; i < N; i++) {
        double m = NAN;
        double t = uncalibrated_c1_tpot(sw[i].sweep, sw[i].gpu, "", &m);
        double t0 = uncalibrated_c1_tpot(sw[i].sweep, sw[i].gpu, "--loop-host-speed 1 --kernel-time 4.09us", &m);
        CHECK_MSG(t > 0 && t0 > 0 && m > 0, "%s: simulated %.2f / %.2f ms, measured %.2f ms", sw[i].sweep, t, t0, m);
        stats_add(&now, fabs(t / m - 1) * 100);
        stats_add(&before, fabs(t0 / m - 1) * 100);
        neg += t < m;
        pos += t > m;
    }
    stats_sort(&now);
    stats_sort(&before);
    double med = stats_percentile_sorted(now.v, now.n, 50), med0 = stats_percentile_sorted(before.v, before.n, 50);
    stats_free(&now);
    stats_free(&before);
    CHECK_MSG(med <= 15, "median |TPOT error| at c = 1 %.1f%% over %d sweeps", med, N);
    CHECK_MSG(med < med0 / 2, "median |TPOT error| %.1f%%, at the timing host %.1f%%", med, med0);
    CHECK_MSG(neg > 0 && pos > 0, "errors of one sign only (%d low, %d high): the median host is not the middle", neg, pos);
    /* a flag's own value stands: --kernel-time is not moved by the host speed */
    char cmd[1024], res[512];
    snprintf(res, sizeof res, "%s/uncal.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --engine-profile llamacpp-b4747 --model deepseek-v2-lite --gpu h100 --concurrency 1 --requests 2 "
             "--dataset random:in=64,out=16 --kernel-time 9us --loop-host-speed 2 --out %s", res);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    json_t *doc = json_load_file(res, 0, NULL);
    json_t *f = json_object_get(json_object_get(doc, "engine"), "factors");
    CHECK_MSG(f && fabs(json_number_value(json_object_get(f, "kernel_s")) - 9e-6) < 1e-12 &&
              fabs(json_number_value(json_object_get(f, "ggml_call_s")) - 2 * 5.2e-6) < 1e-12,
              "factors the run used: kernel_s %g, ggml_call_s %g", json_number_value(json_object_get(f, "kernel_s")),
              json_number_value(json_object_get(f, "ggml_call_s")));
    json_decref(doc);
    CHECK_EQ_INT(test_run("sim --engine-profile llamacpp-b4747 --loop-host-speed 0 --requests 2", NULL, NULL), 2);
    /* a calibrated profile carries its own loop: the uncalibrated host speed with it is refused, on
     * either side of it */
    char prof[512];
    snprintf(prof, sizeof prof, "%s/h100k.profile.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --calibrate tests/fixtures/real-gpu/h100k_long.json --calibrate-at 1 --profile-out %s", prof);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    for (int k = 0; k < 2; k++) {
        char *e = NULL;
        snprintf(cmd, sizeof cmd, k ? "sim --loop-host-speed 1 --profile %s --requests 2" : "sim --profile %s --loop-host-speed 1 --requests 2", prof);
        CHECK_EQ_INT(test_run(cmd, NULL, &e), 2);
        CHECK_MSG(e && strstr(e, "--loop-host-speed states an uncalibrated host"), "%s: %s", cmd, e ? e : "");
        free(e);
    }
    /* the run says which host it took */
    char *out = NULL;
    CHECK_EQ_INT(test_run("sim --engine-profile llamacpp-b4747 --gpu h100 --concurrency 1 --requests 2 --dataset random:in=64,out=16", &out,
                          NULL), 0);
    CHECK(out && strstr(out, "llama.cpp host speed:                   x 0.80 of the host its loop was timed on (the median recorded host"));
    free(out);
    out = NULL;
    CHECK_EQ_INT(test_run("plan --engine-profile llamacpp-b4747 --gpu h100 --batch 1 --loop-host-speed 1.1", &out, NULL), 0);
    CHECK(out && strstr(out, "llama.cpp host speed               x 1.10 of the host its loop was timed on (--loop-host-speed"));
    free(out);
}

/* A run whose server kept weights off the GPU cannot calibrate a simulator of servers whose layers
 * all run on their GPUs: `sim --validate` and `sim --calibrate` say so in one line and exit 2 (no
 * profile written). From GPU memory (gpu_cpu_only: -ngl 0, 1006 MiB held for 1728 MiB of weights;
 * gpu_partial_offload: -ngl 8) and from the command line (h100i_restart_a told -ngl 8 instead of 99:
 * 8 of 28 layers). Before, each was calibrated by stretching the GPU's time per kernel, and its c = 4
 * predicted +46% and +206% off. */
TEST(sim_refuses_runs_with_weights_off_the_gpu) {
    char *err = NULL, cmd[1024], prof[512], path[512];
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/gpu_cpu_only.json", NULL, &err), 2);
    CHECK(err && strstr(err, "held 1006 MiB of GPU memory") && strstr(err, "-ngl 99") && !strchr(strchr(err, '\n') ? strchr(err, '\n') + 1 : "", '\n'));
    free(err);
    snprintf(prof, sizeof prof, "%s/offload_profile.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sim --calibrate tests/fixtures/real-gpu/gpu_partial_offload.json --profile-out %s", prof);
    err = NULL;
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "did not have all its weights on the GPU"));
    CHECK(access(prof, F_OK) != 0);
    free(err);
    /* the command line says it where memory would not: -ngl 8 of V2-Lite's 27 + 1 */
    json_error_t je;
    json_t *d = json_load_file("tests/fixtures/real-gpu/h100i_restart_a.json", 0, &je);
    CHECK(d != NULL);
    if (!d) return;
    size_t i, k;
    json_t *lv, *a;
    int changed = 0;
    json_array_foreach(json_object_get(d, "levels"), i, lv) {
        json_t *argv = json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(lv, "results"),
                                       "telemetry"), "host"), "numa"), "server"), "cmdline");
        json_array_foreach(argv, k, a)
            if (!strcmp(json_string_value(a) ? json_string_value(a) : "", "-ngl")) changed += !json_array_set_new(argv, k + 1, json_string("8"));
    }
    CHECK_EQ_INT(changed, 3);
    snprintf(path, sizeof path, "%s/ngl8.json", harness_tmpdir());
    CHECK_EQ_INT(json_dump_file(d, path, JSON_COMPACT), 0);
    json_decref(d);
    snprintf(cmd, sizeof cmd, "sim --validate %s", path);
    err = NULL;
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "llama-server -ngl 8 (the server's command line): 8 of the model's 28 layers"));
    free(err);
    /* as recorded (-ngl 99) it calibrates */
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/h100i_restart_a.json", NULL, NULL), 0);
}

/* Calibrate-then-predict on a sweep over request rate: `dsperf sweep --rate` against `serve --engine
 * sim` (V2-Lite on an H100 as llama.cpp b4747 times it, 8 slots), then `sim --validate` on the file
 * alone. The sweep says which engine profile served it (meta.sim.engine_profile: before, the
 * validation took vLLM's and missed the prompt by 88 %); the lowest rate's level is simulated with
 * its own Poisson arrivals to fit the loop (before, the closed form at its mean batch missed its own
 * point by +42 % TPOT here, and 2 req/s by +12 %); the higher rate is predicted from it. The server is the simulator itself,
 * with the sweep's arrivals on the simulation's seed, so what separates the two is the HTTP path
 * and the client's clock: TPOT and throughput within 5 % at every rate. */
/* `sim --validate` of a rate sweep against the simulated server: the lowest rate calibrates (its
 * note `said`, when given), each rate's TPOT and throughput within 5 %. */
static void check_rate_sweep_validates(const char *path, const char *said) {
    char cmd[1024], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "sim --validate %s", path);
    int rc = test_run(cmd, &out, &err);
    CHECK_MSG(rc == 0, "%s: exit %d: %s", path, rc, err ? err : "");
    CHECK(out && strstr(out, "profile llamacpp-b4747 (GET /v1/models meta.sim.engine_profile)"));
    CHECK(out && strstr(out, "poisson arrivals at 1 req/s"));
    if (said) CHECK_MSG(out && strstr(out, said), "%s: no \"%s\"", path, said);
    int n = 0;
    val_row r;
    for (const char *at = out; val_row_next(&at, &r); ) {
        if (strcmp(r.name, "median_tpot_ms") && strcmp(r.name, "output_throughput")) continue;
        CHECK_MSG(fabs(r.predicted / r.measured - 1) <= 0.05, "%s %g req/s %s: %.4g predicted, %.4g measured", path, r.load, r.name,
                  r.predicted, r.measured);
        n++;
    }
    CHECK_EQ_INT(n, 4);
    free(out);
    free(err);
}

TEST(sim_validate_rate_sweep_against_the_simulated_server) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --model deepseek-ai/DeepSeek-V2-Lite --gpu h100 --engine-profile llamacpp-b4747 --kernel-time 16.3us "
                             "--max-num-seqs 8") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/rate_sweep.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sweep --url %s --rate 1,2 --duration 8s --dataset random:in=256,out=64 --quiet --out %s", s.url, path);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    check_rate_sweep_validates(path, NULL);
    /* the same sweep recorded under load (tests/fixtures/sim-served): its 1 req/s level's median ITL
     * falls between the simulated steps of two batch sizes, and the fit takes the x of the jump */
    check_rate_sweep_validates("tests/fixtures/sim-served/rate_sweep_loaded.json", "jumps across the measured 39.96 ms");
}

/* The predicted median TPOT at load `load` in `sim --validate` output (the first such line). */
static double predicted_tpot_at(const char *out, double load) {
    val_row r;
    for (const char *at = out; val_row_next(&at, &r); )
        if (r.load == load && !strcmp(r.name, "median_tpot_ms")) return r.predicted;
    return NAN;
}

/* A sweep carries its own deployment (the server's /props, the GGUF header, NVML): `sim --validate`
 * with no setup flag at all predicts exactly what the flags of notes/sweeps.sh gave (the fresh V2-Lite
 * f16 and 906M-preset Q4_0 sweeps), and says what it took; a sweep that stated no model (the first
 * H200 906M sweep, recorded before dsperf read GGUF headers) is said to run on the default model. */
TEST(sim_validate_sweep_takes_its_setup_from_the_run) {
    static const struct { const char *sweep, *flags; } sw[] = {
        {"h100e_overhead.json", "--engine-profile llamacpp-b4747 --model deepseek-v2-lite --gpu h100 --weight-dtype fp16"},
        {"h100f_medium_q4.json", "--engine-profile llamacpp-b4747 --model-config tests/fixtures/real-gpu/medium_config.json --gpu h100 --weight-dtype q4_0"}};
    for (size_t s = 0; s < sizeof sw / sizeof sw[0]; s++) {
        char cmd[1024], *a = NULL, *b = NULL;
        snprintf(cmd, sizeof cmd, "sim --validate tests/fixtures/real-gpu/%s", sw[s].sweep);
        CHECK_EQ_INT(test_run(cmd, &a, NULL), 0);
        snprintf(cmd, sizeof cmd, "sim --validate tests/fixtures/real-gpu/%s %s", sw[s].sweep, sw[s].flags);
        CHECK_EQ_INT(test_run(cmd, &b, NULL), 0);
        const char *ta = a ? strstr(a, "\nload ") : NULL, *tb = b ? strstr(b, "\nload ") : NULL;
        CHECK_MSG(ta && tb && !strcmp(ta, tb), "%s: without flags\n%s\nwith them\n%s", sw[s].sweep, ta ? ta : "", tb ? tb : "");
        CHECK(a && strstr(a, "the sweep's deployment: engine llama.cpp: profile llamacpp-b4747") && strstr(a, "GPU h100"));
        free(a);
        free(b);
    }
    char *o = NULL;
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/medium_sweep.json", &o, NULL), 0);
    CHECK(o && strstr(o, "model not stated by the run: the default deepseek-v2-lite"));
    free(o);
    /* a flag overrides what the run stated: 4 slots where the server had 32 (-np 32) run c = 8 as
     * two batches of 4, each step shorter (the sweep's own slot count once overrode the flag) */
    char *a = NULL, *b = NULL;
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/h100e_overhead.json", &a, NULL), 0);
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/h100e_overhead.json --max-num-seqs 4", &b, NULL), 0);
    CHECK(a && b && !strstr(b, "32 running sequences at most"));
    double t32 = a ? predicted_tpot_at(a, 8) : NAN, t4 = b ? predicted_tpot_at(b, 8) : NAN;
    CHECK_MSG(t4 < 0.8 * t32, "c = 8 with 4 slots: TPOT %.4g ms, with the server's 32: %.4g", t4, t32);
    free(a);
    free(b);
}


/* A sweep run with --repeats (tests/fixtures/real-gpu/h100g_repeat.json: a seventh H100 host, three
 * runs of each level on one server) calibrates on every run of its lowest load: each run's profile
 * predicts every level and the prediction is their mean, which the three sweeps of one repeat each
 * give apart (5 significant digits printed). The c = 1 runs differ by 12 % (12.1-13.6 ms TPOT):
 * calibrated on the first alone, c = 8 came out 64.05 ms, on the mean of the three 67.02. All three
 * repeats of c = 2, 4, 8 are within 15 % (each single-run calibration predicted them so, made before
 * the pooling), and every repeat of the lowest load is a calibration point, not a prediction. */
TEST(sim_validate_repeated_levels_calibrate_together) {
    const char *path = "tests/fixtures/real-gpu/h100g_repeat.json";
    char *o = NULL;
    CHECK_EQ_INT(test_run("sim --validate tests/fixtures/real-gpu/h100g_repeat.json", &o, NULL), 0);
    CHECK(o && strstr(o, "the lowest load ran 3 times (--repeats)"));
    CHECK(o && strstr(o, "at 2-8x the calibration load: 18 of 18 metrics within 15%"));
    int calpoints = 0;
    for (const char *q = o; q && (q = strstr(q, "median_tpot_ms")); q++)
        if (!strncmp(strchr(q, '\n') - 19, "(calibration point)", 19)) calpoints++;
    CHECK_EQ_INT(calpoints, 3);
    int inside = -1, total = -1;
    const char *cov = o ? strstr(o, "80% intervals (calibrated): ") : NULL;
    CHECK(cov && sscanf(cov, "80%% intervals (calibrated): %d of %d", &inside, &total) == 2);
    CHECK_EQ_INT(total, 18);
    CHECK_MSG(inside >= coverage_floor(total), "%d of %d inside (floor %d)", inside, total, coverage_floor(total));
    /* the same sweep cut into its three repeats: each calibrates on its own c = 1 */
    json_error_t je;
    json_t *d = json_load_file(path, 0, &je);
    CHECK_MSG(d != NULL, "%s: %s", path, je.text);
    if (!d) { free(o); return; }
    double sum[3] = {0};
    for (int r = 0; r < 3; r++) {
        json_t *one = json_deep_copy(d), *keep = json_array();
        size_t i;
        json_t *lv;
        json_array_foreach(json_object_get(d, "levels"), i, lv)
            if (json_integer_value(json_object_get(lv, "repeat")) == r) json_array_append(keep, lv);
        json_object_set_new(one, "levels", keep);
        char tmp[512], cmd[640], *out = NULL;
        snprintf(tmp, sizeof tmp, "%s/rep%d.json", harness_tmpdir(), r);
        CHECK_EQ_INT(json_dump_file(one, tmp, 0), 0);
        json_decref(one);
        snprintf(cmd, sizeof cmd, "sim --validate %s", tmp);
        CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
        CHECK(out && !strstr(out, "--repeats"));
        for (int k = 0; k < 3; k++) sum[k] += predicted_tpot_at(out, 2 << k) / 3;
        free(out);
    }
    json_decref(d);
    for (int k = 0; k < 3; k++) {
        double pooled = predicted_tpot_at(o, 2 << k);
        CHECK_MSG(fabs(pooled / sum[k] - 1) < 2e-4, "c = %d: pooled %.5g, the three runs' mean %.5g", 2 << k, pooled, sum[k]);
    }
    free(o);
    /* one profile from a sweep is its lowest load's first run, and says so */
    char cmd[640], *c = NULL;
    snprintf(cmd, sizeof cmd, "sim --calibrate %s --profile-out %s/rep.profile.json", path, harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, &c, NULL), 0);
    CHECK(c && strstr(c, "Calibrating on the sweep's lowest load (c = 1), the first of its 3 runs"));
    free(c);
}
