/* Tests of timeint with known truth: Student t quantiles against their tables; an AR(1) series
 * (lag-1 correlation 0.9) whose naive interval is provably too narrow (its true variance is
 * (1+φ)/(1−φ) = 19 times the independent one, so mean ± 1.96 s/√N covers about
 * P(|Z| < 1.96/√19) = 35 %) while batch means cover about 95 % and estimate the effective sample
 * size N(1−φ)/(1+φ); and synthetic runs of a lockstep engine (8 streams share every step, step
 * times AR(1)) through timeint_run, whose pooled-ITL and throughput intervals must cover the
 * configured truth. */
#include "harness.h"
#include "metrics/timeint.h"
#include "common/rng.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

TEST(timeint_t_quantiles) {
    /* two-sided 95 % Student t, from the tables */
    CHECK_NEAR(timeint_t(0.95, 1), 12.706204736, 1e-6);
    CHECK_NEAR(timeint_t(0.95, 3), 3.182446305, 1e-6);
    CHECK_NEAR(timeint_t(0.95, 9), 2.262157163, 1e-6);
    CHECK_NEAR(timeint_t(0.95, 30), 2.042272456, 1e-6);
    CHECK_NEAR(timeint_t(0.99, 10), 3.169272673, 1e-6);
    CHECK(timeint_batch_size(15) == 0);
    CHECK(timeint_batch_size(16) == 4);
    CHECK(timeint_batch_size(10000) == 100);
}

TEST(timeint_ar1_naive_too_narrow_batch_means_cover) {
    const double phi = 0.9, mu = 5;
    const long n = 10000;
    const int reps = 400;
    int m = timeint_batch_size(n), b = (int)(n / m);
    double *sum = malloc(b * sizeof *sum), *cnt = malloc(b * sizeof *cnt);
    rng g;
    rng_seed(&g, 26);
    int cover_bm = 0, cover_iid = 0;
    double ess_sum = 0;
    for (int rep = 0; rep < reps; rep++) {
        /* stationary start: x_0 ~ N(0, 1/(1-phi^2)) */
        double x = rng_normal(&g) / sqrt(1 - phi * phi), s1 = 0, s2 = 0;
        for (int j = 0; j < b; j++) { sum[j] = 0; cnt[j] = m; }
        for (long i = 0; i < (long)b * m; i++) {
            double v = mu + x;
            sum[i / m] += v;
            s1 += v;
            s2 += v * v;
            x = phi * x + rng_normal(&g);
        }
        long N = (long)b * m;
        double var = (s2 - s1 * s1 / N) / (N - 1);
        timeint_result r;
        CHECK(timeint_batch_means(sum, cnt, b, var, N, 0.95, &r) == 0);
        if (r.lo <= mu && mu <= r.hi) cover_bm++;
        if (fabs(r.estimate - mu) <= r.iid_half_width) cover_iid++;
        ess_sum += r.ess;
    }
    double ess_true = n * (1 - phi) / (1 + phi);
    fprintf(stderr, "    AR(1) phi %.2f, N %ld, %d batches of %d: batch means cover %.1f %%, naive %.1f %%; "
            "mean ESS %.0f (true %.0f)\n", phi, n, b, m, 100.0 * cover_bm / reps, 100.0 * cover_iid / reps,
            ess_sum / reps, ess_true);
    /* binomial noise at 400 draws is ±2.2 % (2 sd); batch means of 100 units lose ~5 % of the
     * long-run variance at this memory, so the floor is 90 % */
    CHECK(cover_bm >= 0.90 * reps && cover_bm <= 0.99 * reps);
    /* the naive interval's true coverage is 35 %; 60 % is far above what it can reach */
    CHECK(cover_iid < 0.60 * reps);
    CHECK(fabs(ess_sum / reps - ess_true) <= 0.15 * ess_true);
    free(sum);
    free(cnt);
}

/* One synthetic run: `streams` streams decode in lockstep (each engine step ends with one chunk
 * of one token on every stream), step k lasting mu_ms (1 + 0.3 y_k), y an AR(1) of correlation
 * phi and unit variance; a request is 100 tokens, then its stream starts the next one at once. */
static void lockstep_run(recset *rs, rng *g, int streams, long steps, double mu_ms, double phi) {
    recset_init(rs);
    size_t *cur = calloc(streams, sizeof *cur);   /* indices: recset_add may move the array */
    int64_t t = 1000000000LL;
    double y = rng_normal(g);
    for (int s = 0; s < streams; s++) {
        record *r = recset_add(rs);
        r->send_ns = r->sched_ns = t;
        cur[s] = rs->n - 1;
    }
    for (long k = 0; k < steps; k++) {
        double step = mu_ms * (1 + 0.3 * y);
        y = phi * y + sqrt(1 - phi * phi) * rng_normal(g);
        t += (int64_t)llround(step * 1e6);
        for (int s = 0; s < streams; s++) {
            record *r = &rs->v[cur[s]];
            record_add_chunk(r, t, 1);
            if (r->n_chunks == 1) r->first_ns = t;
            if (r->n_chunks < 100 && k < steps - 1) continue;
            r->last_ns = r->end_ns = t;
            r->out_tokens_server = (int32_t)r->n_chunks;
            if (k == steps - 1) continue;
            record *nr = recset_add(rs);
            nr->send_ns = nr->sched_ns = t;
            cur[s] = rs->n - 1;
        }
    }
    free(cur);
}

TEST(timeint_lockstep_runs_cover_the_truth) {
    const int streams = 8, reps = 200;
    const double mu_ms = 10, phi = 0.95;
    rng g;
    rng_seed(&g, 2626);
    int cover_itl = 0, cover_tps = 0, iid_itl = 0;
    double ess_frac = 0;
    for (int rep = 0; rep < reps; rep++) {
        recset rs;
        lockstep_run(&rs, &g, streams, 4000, mu_ms, phi);
        int64_t t0 = rs.v[0].send_ns, t1 = 0;
        long done = 0, tokens = 0;
        for (size_t i = 0; i < rs.n; i++) {
            if (rs.v[i].end_ns > t1) t1 = rs.v[i].end_ns;
            if (rs.v[i].end_ns) { done++; tokens += rs.v[i].n_chunks; }
        }
        double d_s = (double)(t1 - t0) / 1e9;
        json_t *ti = timeint_run(&rs, 0.95, tokens / d_s, done / d_s);
        CHECK(ti != NULL);
        if (!ti) { recset_free(&rs); break; }
        json_t *itl = json_object_get(ti, "mean_itl_ms"), *tps = json_object_get(ti, "output_throughput");
        double lo = json_real_value(json_object_get(itl, "lo")), hi = json_real_value(json_object_get(itl, "hi"));
        double est = json_real_value(json_object_get(itl, "estimate"));
        double iid = json_real_value(json_object_get(itl, "iid_half_width"));
        if (lo <= mu_ms && mu_ms <= hi) cover_itl++;
        if (fabs(est - mu_ms) <= iid) iid_itl++;
        /* the long-run token rate of a renewal process: streams tokens every mean step */
        double rate = streams * 1000.0 / mu_ms;
        if (json_real_value(json_object_get(tps, "lo")) <= rate && rate <= json_real_value(json_object_get(tps, "hi")))
            cover_tps++;
        ess_frac += json_real_value(json_object_get(itl, "ess")) / (double)json_integer_value(json_object_get(itl, "n"));
        json_decref(ti);
        recset_free(&rs);
    }
    fprintf(stderr, "    lockstep runs (8 streams, step AR(1) phi %.2f): ITL interval covers %.1f %%, "
            "naive %.1f %%; throughput covers %.1f %%; ITL ESS / gaps %.4f\n", phi, 100.0 * cover_itl / reps,
            100.0 * iid_itl / reps, 100.0 * cover_tps / reps, ess_frac / reps);
    CHECK(cover_itl >= 0.88 * reps && cover_itl <= 0.995 * reps);
    CHECK(cover_tps >= 0.88 * reps && cover_tps <= 0.995 * reps);
    /* every gap is shared by 8 streams and the steps remember 1/(1-0.95) = 20 steps: the naive
     * interval is √(8 · 39) ≈ 18 times too narrow, and the gaps are worth under 1/8 of their number */
    CHECK(iid_itl < 0.40 * reps);
    CHECK(ess_frac / reps < 1.0 / streams);
}
