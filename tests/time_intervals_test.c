/* Intervals that respect time on a real `dsperf serve` run: the results file's batch-means
 * interval of the mean ITL is recomputed here, independently, from the per-request file's chunk
 * times by the README's definition (a run under 100 s: 100 units of span/100, batches of
 * ⌊√100⌋ = 10 units, a gap in the unit its later chunk arrived in, se² = Σ(S_j − R n_j)² /
 * (b(b−1) n̄²), half-width t₉ se), and the terminal summary shows it. No timing is asserted. */
#include "harness.h"
#include "testutil.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(timeint_serve_matches_definition) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 5ms --jitter 0.5") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    char path[512], reqs[512], cmd[2048];
    snprintf(path, sizeof path, "%s/ti.json", harness_tmpdir());
    snprintf(reqs, sizeof reqs, "%s/ti.jsonl", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --out %s --save-requests %s --concurrency 4 --requests 40 "
             "--dataset random:in=16,out=40", s.url, path, reqs);
    char *out = NULL;
    int rc = test_run(cmd, &out, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *r = test_load_json(path);
    CHECK(r != NULL);
    if (!r) { free(out); return; }
    json_t *ti = json_object_get(r, "time_intervals");
    CHECK(json_is_object(ti));
    CHECK_EQ_INT(test_num(ti, "batches"), 10);
    json_t *itl = json_object_get(ti, "mean_itl_ms");
    /* recompute from the per-request file */
    FILE *f = fopen(reqs, "r");
    CHECK(f != NULL);
    if (!f) { json_decref(r); free(out); return; }
    static char line[1 << 17];
    json_t *all = json_array();
    long long t0 = -1, t1 = 0;
    while (fgets(line, sizeof line, f)) {
        json_t *q = json_loads(line, 0, NULL);
        if (!q) continue;
        long long send = (long long)test_num(q, "send_ns"), end = (long long)test_num(q, "end_ns");
        double last = test_num(q, "last_ns");
        if (isfinite(last) && last > end) end = (long long)last;
        if (t0 < 0 || send < t0) t0 = send;
        if (end > t1) t1 = end;
        json_array_append_new(all, q);
    }
    fclose(f);
    double sum[10] = { 0 }, cnt[10] = { 0 }, gs = 0, gn = 0;
    size_t i;
    json_t *q;
    json_array_foreach(all, i, q) {
        json_t *ch = json_object_get(q, "chunk_ns");
        for (size_t k = 1; k < json_array_size(ch); k++) {
            long long a = json_integer_value(json_array_get(ch, k - 1)), b = json_integer_value(json_array_get(ch, k));
            double gap = (b - a) / 1e6;
            gs += gap;
            gn++;
            long u = (long)((b - t0) * 100 / (t1 - t0));   /* units of span/100, in whole numbers */
            if (u >= 0 && u < 100) { sum[u / 10] += gap; cnt[u / 10] += 1; }
        }
    }
    double S = 0, C = 0, ss = 0;
    for (int j = 0; j < 10; j++) { S += sum[j]; C += cnt[j]; }
    double R = S / C;
    for (int j = 0; j < 10; j++) { double d = (sum[j] - R * cnt[j]) / (C / 10); ss += d * d; }
    double hw = 2.262157163 * sqrt(ss / 90);
    fprintf(stderr, "    mean ITL %.4f ms ± %.4f (recomputed ± %.4f), ESS %.0f of %.0f gaps\n",
            test_num(itl, "estimate"), test_num(itl, "half_width"), hw, test_num(itl, "ess"), gn);
    CHECK_NEAR(test_num(itl, "estimate"), gs / gn, 1e-9 * gs / gn);
    CHECK_NEAR(test_num(itl, "half_width"), hw, 1e-6 * hw);
    CHECK_EQ_INT(test_num(itl, "n"), gn);
    CHECK(test_num(itl, "ess") > 0);
    /* the throughput intervals are centred on the reported figures */
    CHECK_NEAR(test_num(json_object_get(ti, "output_throughput"), "estimate"), test_num(r, "output_throughput"), 1e-9);
    CHECK_NEAR(test_num(json_object_get(ti, "request_throughput"), "estimate"), test_num(r, "request_throughput"), 1e-9);
    CHECK(out && strstr(out, "Intervals over time (10 batches"));
    CHECK(out && strstr(out, "Mean ITL (ms):") && strstr(out, "ESS "));
    json_decref(all);
    json_decref(r);
    free(out);
}
