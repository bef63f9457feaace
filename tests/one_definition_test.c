/* one_definition_test — every per-request metric has one definition (src/metrics/request_metrics):
 * the results' summary, the report's exact distributions (read back from the per-request file)
 * and the monitor's probe metrics agree to the last bit on a real run against dsperf serve with
 * jittered timing and varied output lengths. */
#include "harness.h"
#include "testutil.h"
#include "report/report_internal.h"
#include "results/results.h"
#include "metrics/request_metrics.h"
#include "metrics/stats.h"
#include "monitor/monitor.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(metrics_have_one_definition) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms --jitter 0.5 --seed 4 --fail-rate 0.05") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char res[512], reqs[512], cmd[1400];
    snprintf(res, sizeof res, "%s/one.json", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/one.jsonl", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 8 --requests 300 --dataset random:in=8,out=12,range=0.5 --quiet "
             "--max-error-rate 50%% --out %s --save-requests %s", s.url, res, reqs);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *r = test_load_json(res);
    char err[256];
    report_requests *rq = report_requests_load(reqs, err, sizeof err);
    CHECK(r && rq);
    if (!r || !rq) { json_decref(r); report_requests_free(rq); return; }
    /* the report's exact distributions give the summary's numbers (the results file keeps 10
     * significant digits) */
    struct { const char *name; const double *v; size_t n; } fam[] = {
        { "ttft", rq->ttft_sorted, rq->n_ttft }, { "tpot", rq->tpot_sorted, rq->n_tpot }, { "e2el", rq->e2el_sorted, rq->n_e2el },
    };
    const double ps[] = { 50, 90, 99 };
    for (size_t f = 0; f < 3; f++) {
        CHECK(fam[f].n > 200);
        for (size_t i = 0; i < 3; i++) {
            char key[64];
            snprintf(key, sizeof key, "p%g_%s_ms", ps[i], fam[f].name);
            double a = stats_percentile_sorted(fam[f].v, fam[f].n, ps[i]), b = test_num(r, key);
            CHECK_MSG(fabs(a - b) <= 1e-9 * fabs(b), "%s: report %.12g vs results %.12g", key, a, b);
        }
        char key[64];
        snprintf(key, sizeof key, "mean_%s_ms", fam[f].name);
        CHECK_NEAR(stats_mean(fam[f].v, fam[f].n), test_num(r, key), 1e-9 * test_num(r, key));
    }
    CHECK_EQ_INT(rq->n_failed, test_num(r, "failed"));
    CHECK(rq->n_failed > 0);
    /* the monitor's probe metrics are the same numbers, in seconds */
    recset recs;
    recset_init(&recs);
    int64_t t0;
    CHECK_EQ_INT(results_read_requests_jsonl(reqs, &recs, &t0, err, sizeof err), 0);
    size_t checked = 0;
    for (size_t i = 0; i < recs.n; i++) {
        req_metrics m;
        mon_probe p;
        req_metrics_of(&recs.v[i], &m);
        mon_probe_measure(&recs.v[i], &p);
        CHECK(p.ok == m.completed);
        if (!m.completed) continue;
        CHECK(p.ttft_s == m.ttft_ms / 1e3 && p.e2el_s == m.e2el_ms / 1e3);
        CHECK((isnan(p.tpot_s) && isnan(m.tpot_ms)) || p.tpot_s == m.tpot_ms / 1e3);
        checked++;
    }
    CHECK_EQ_INT(checked, test_num(r, "completed"));
    /* the file round-trips: the summary of the records read back is the run's */
    summary_opts so;
    summary_default_opts(&so);
    json_t *again = summary_compute(&recs, &so);
    CHECK(again && fabs(test_num(again, "p99_ttft_ms") - test_num(r, "p99_ttft_ms")) <= 1e-9 * test_num(r, "p99_ttft_ms"));
    CHECK(again && fabs(test_num(again, "p99_itl_ms") - test_num(r, "p99_itl_ms")) <= 1e-9 * test_num(r, "p99_itl_ms"));
    CHECK(again && test_num(again, "failed") == test_num(r, "failed"));
    json_decref(again);
    recset_free(&recs);
    report_requests_free(rq);
    json_decref(r);
}
