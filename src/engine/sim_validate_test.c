/* sim --validate tests — the simulator against the project's table of published DeepSeek serving
 * measurements (data/published.json), with the default (fitted) mechanism parameters: every row is
 * printed, and the per-target median and worst errors stay within what the fit achieves (the bounds
 * are the achieved values rounded up to the next percent: a change that makes the simulator worse
 * on published deployments fails here). The leave-one-out estimate is in README-sim.md. */
#include "harness.h"
#include "testutil.h"
#include "engine/sim_validate.h"
#include <stdlib.h>
#include <string.h>

#define TABLE "data/published.json"

/* achieved with cost_default_factors() (README-sim.md, "Accuracy"), one value per row: TPOT median
 * 9.8% worst 37.4%, throughput 7.1% / 32.8%, low-load TTFT 5.4% / 7.8% ("other" is not a target) */
static const double max_median[VAL_NCAT] = {0.10, 0.08, 0.06, 10};
static const double max_worst[VAL_NCAT] = {0.38, 0.33, 0.08, 10};

TEST(sim_validate_published_table_within_fitted_bounds) {
    char err[512] = "";
    val_table *t = NULL;
    CHECK_MSG(val_load(TABLE, &t, err, sizeof err) == 0, "%s", err);
    if (!t) return;
    cost_factors f;
    cost_default_factors(&f);
    CHECK_MSG(val_run(t, &f, err, sizeof err) == 0, "%s", err);
    double med[VAL_NCAT], worst[VAL_NCAT];
    int n[VAL_NCAT];
    val_summary(t, med, worst, n);
    static const char *const names[] = {"TPOT", "per-GPU output throughput", "low-load TTFT"};
    for (int k = 0; k < VAL_OTHER; k++) {
        CHECK_MSG(n[k] > 0, "%s: no rows", names[k]);
        CHECK_MSG(med[k] <= max_median[k], "%s: median error %.1f%% > %.0f%%", names[k], med[k] * 100, max_median[k] * 100);
        CHECK_MSG(worst[k] <= max_worst[k], "%s: worst error %.1f%% > %.0f%%", names[k], worst[k] * 100, max_worst[k] * 100);
    }
    /* the targets count the rows the table scores: 10 TPOT, 14 throughput, 2 TTFT */
    CHECK_EQ_INT(n[VAL_TPOT], 10);
    CHECK_EQ_INT(n[VAL_TPUT], 14);
    CHECK_EQ_INT(n[VAL_TTFT], 2);
    val_free(t);
}

TEST(sim_validate_cli_prints_every_row) {
    char *out = NULL;
    int rc = test_run("sim --validate " TABLE, &out, NULL);
    CHECK_EQ_INT(rc, 0);
    static const char *const ids[] = {"A1", "A2", "A3", "A5", "A6", "A7", "B1", "B2", "B3", "B6", "B7", "B8", "B9", "B10",
                                      "B12", "C2", "C3", "C4", "C5", "C6", "C7", "C10", "D1"};
    for (size_t i = 0; out && i < sizeof ids / sizeof ids[0]; i++) {
        char pat[16];
        snprintf(pat, sizeof pat, "\n%-5s ", ids[i]);
        CHECK_MSG(strstr(out, pat) != NULL, "row %s missing from the output", ids[i]);
    }
    CHECK(out && strstr(out, "not simulated: the GPU type is not published"));
    CHECK(out && strstr(out, "median") && strstr(out, "worst"));
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
