/* Unit tests of dist without MPI: the clock estimate, the wire format, and the exactness of a
 * merge — records split over "ranks" whose clocks differ, each rank's ITL histograms and token
 * bins made where its chunks are, merged as rank 0 merges them, must give the summary a single
 * process computes over all the records. (tests/mpi_test.c runs real jobs under mpirun.) */
#include "harness.h"
#include "dist/dist_int.h"
#include "metrics/summary.h"
#include "telemetry/telemetry.h"
#include "common/rng.h"
#include "common/clock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

TEST(dist_clock_estimate_takes_the_shortest_round_trip) {
    /* rank 0's clock is 5 ms ahead; round trips of 400, 30, 90 us with asymmetric delays */
    int64_t off = 5000000;
    int64_t t1[] = { 1000000, 2000000, 3000000, -1 };
    int64_t t2[] = { 1400000, 2030000, 3090000, 10 };
    /* rank 0 read its clock 300 us / 10 us / 45 us after the ping left */
    int64_t tm[] = { 1300000 + off, 2010000 + off, 3045000 + off, 0 };
    dist_clock c;
    CHECK_EQ_INT(dist_clock_estimate(t1, tm, t2, 4, &c), 0);
    CHECK_EQ_INT(c.rtt_min_ns, 30000);
    CHECK_EQ_INT(c.uncertainty_ns, 15000);
    /* the estimate is within half the shortest round trip of the truth */
    CHECK(llabs(c.offset_ns - off) <= c.uncertainty_ns);
    CHECK_EQ_INT(c.offset_ns, off - 5000);   /* tm at +10 us, midpoint at +15 us */
    CHECK_EQ_INT(c.samples, 3);              /* the failed exchange (t1 < 0) is left out */
    CHECK_EQ_INT(c.rtt_median_ns, 90000);
    int64_t bad1[] = { -1 }, bad2[] = { 0 };
    CHECK_EQ_INT(dist_clock_estimate(bad1, bad2, bad2, 1, &c), -1);
}

/* A run's worth of records: classes, warm-up, failures, multi-token chunks, over ~3 s. */
static void make_records(recset *rs, size_t n, uint64_t seed) {
    rng r;
    rng_seed(&r, seed);
    int64_t t0 = 1000 * NS_PER_S;
    for (size_t i = 0; i < n; i++) {
        record *x = recset_add(rs);
        x->index = (uint32_t)i;
        x->class_id = (uint16_t)(i % 3 == 0);
        x->warmup = i < 4;
        x->sched_ns = t0 + (int64_t)(rng_uniform(&r) * 2.5e9);
        x->send_ns = x->sched_ns + (int64_t)(rng_uniform(&r) * 2e6);
        x->in_tokens = 16 + (int32_t)(i % 5);
        x->max_tokens = 20;
        if (i % 17 == 5) {   /* a failure */
            x->outcome = i % 2 ? REC_ERR_HTTP : REC_ERR_TRUNCATED;
            x->http_status = i % 2 ? 503 : 200;
            x->end_ns = x->send_ns + 30 * NS_PER_MS;
            x->error = strdup("HTTP 503: overloaded");
            continue;
        }
        int k = 3 + (int)(i % 13);
        int64_t t = x->send_ns + 20 * NS_PER_MS + (int64_t)(rng_uniform(&r) * 5e6);
        for (int c = 0; c < k; c++) {
            record_add_chunk(x, t, i % 7 == 0 && c == 2 ? 3 : 1);
            t += 5 * NS_PER_MS + (int64_t)(rng_uniform(&r) * 8e6);
        }
        x->first_ns = x->chunk_ns[0];
        x->last_ns = x->chunk_ns[x->n_chunks - 1];
        x->end_ns = x->last_ns + 100000;
        x->out_tokens_server = (int32_t)x->n_chunks + (i % 7 == 0 ? 2 : 0);
        x->out_tokens_client = x->out_tokens_server;
        x->outcome = REC_OK;
    }
}

/* Copies r (with its arrays) into s, its timestamps moved by off. */
static void copy_shifted(recset *s, const record *r, int64_t off) {
    record *c = recset_add(s);
    *c = *r;
    c->chunk_ns = NULL;
    c->chunk_tokens = NULL;
    c->chunk_cap = 0;
    c->n_chunks = 0;
    c->error = r->error ? strdup(r->error) : NULL;
    for (uint32_t k = 0; k < r->n_chunks; k++)
        record_add_chunk(c, r->chunk_ns[k] + off, r->chunk_tokens ? r->chunk_tokens[k] : 0);
    int64_t *ts[] = { &c->sched_ns, &c->send_ns, &c->first_ns, &c->last_ns, &c->end_ns };
    for (size_t i = 0; i < 5; i++) if (*ts[i] > 0) *ts[i] += off;
}

static int json_near(const json_t *a, const json_t *b, const char *path) {
    if (json_is_number(a) && json_is_number(b)) {
        double x = json_number_value(a), y = json_number_value(b);
        if (x == y || fabs(x - y) <= 1e-9 * fabs(y)) return 1;
        fprintf(stderr, "    %s: %.17g vs %.17g\n", path, x, y);
        return 0;
    }
    if (json_typeof(a) != json_typeof(b)) { fprintf(stderr, "    %s: types differ\n", path); return 0; }
    if (json_is_object(a)) {
        const char *k;
        json_t *v;
        int ok = json_object_size(a) == json_object_size(b);
        json_object_foreach((json_t *)a, k, v) {
            char p[256];
            snprintf(p, sizeof p, "%s.%s", path, k);
            ok &= json_near(v, json_object_get(b, k), p);
        }
        return ok;
    }
    if (json_is_array(a)) {
        if (json_array_size(a) != json_array_size(b)) { fprintf(stderr, "    %s: lengths differ\n", path); return 0; }
        int ok = 1;
        for (size_t i = 0; i < json_array_size(a); i++) ok &= json_near(json_array_get(a, i), json_array_get(b, i), path);
        return ok;
    }
    return json_equal(a, b) || (fprintf(stderr, "    %s: values differ\n", path), 0);
}

/* The merge as the ranks do it: rank k holds records i % R == k on a clock off[k] behind rank 0's;
 * each packs its records (moved onto rank 0's clock) and ITL histograms, rank 0 unpacks all,
 * fixes the axes, each rank bins its tokens on them. */
static void merge_like_ranks(const recset *all, int R, const int64_t *off, int class_id, recset *merged,
                             summary_parts *parts) {
    recset part[4];
    for (int k = 0; k < R; k++) recset_init(&part[k]);
    for (size_t i = 0; i < all->n; i++) copy_shifted(&part[i % (size_t)R], &all->v[i], -off[i % (size_t)R]);
    parts->itl = calloc(1, sizeof *parts->itl);
    parts->itl_tok = calloc(1, sizeof *parts->itl_tok);
    for (int k = 0; k < R; k++) {
        /* on rank k: its ITL from its own clock's chunks, then its records onto rank 0's clock */
        summary_parts mine = { calloc(1, sizeof(hdr_hist)), calloc(1, sizeof(hdr_hist)), 0, NULL, 0, 0 };
        summary_parts_add(&mine, &part[k], class_id);
        for (size_t i = 0; i < part[k].n; i++) {
            record *r = &part[k].v[i];
            int64_t *ts[] = { &r->sched_ns, &r->send_ns, &r->first_ns, &r->last_ns, &r->end_ns };
            for (size_t j = 0; j < 5; j++) if (*ts[j] > 0) *ts[j] += off[k];
            for (uint32_t c = 0; c < r->n_chunks; c++) r->chunk_ns[c] += off[k];
        }
        dist_buf b = { 0 };
        dist_pack_records(&b, &part[k], false);
        dist_pack_hist(&b, mine.itl);
        dist_pack_hist(&b, mine.itl_tok);
        dist_rd rd = { b.p, b.n, 0, 0 };
        CHECK_EQ_INT(dist_unpack_records(&rd, merged), 0);
        CHECK_EQ_INT(dist_unpack_hist_merge(&rd, parts->itl), 0);
        CHECK_EQ_INT(dist_unpack_hist_merge(&rd, parts->itl_tok), 0);
        CHECK_EQ_INT(rd.off, b.n);
        parts->multi_token_chunks += mine.multi_token_chunks;
        free(b.p);
        free(mine.itl);
        free(mine.itl_tok);
    }
    summary_axis(merged, class_id, &parts->first_send_ns, &parts->n_bins);
    parts->tokens = calloc(parts->n_bins + 1, sizeof *parts->tokens);
    for (int k = 0; k < R; k++) {
        summary_parts bins = *parts;
        bins.itl = bins.itl_tok = NULL;
        summary_parts_add(&bins, &part[k], class_id);
        recset_free(&part[k]);
    }
}

static void check_merge(int class_id) {
    recset all;
    recset_init(&all);
    make_records(&all, 300, 7);
    /* three hosts whose monotonic clocks started at different times */
    int64_t off[3] = { 0, -123456789012LL, 987654321LL };
    recset merged;
    recset_init(&merged);
    summary_parts parts = { 0 };
    merge_like_ranks(&all, 3, off, class_id, &merged, &parts);
    CHECK_EQ_INT(merged.n, all.n);
    summary_opts o;
    summary_default_opts(&o);
    summary_parse_slo(&o, "ttft=25ms,tpot=9ms");
    recset want_set = all, got_set = merged;
    record *wv = NULL, *gv = NULL;
    if (class_id >= 0) {   /* a class's summary runs over that class's records */
        wv = malloc(all.n * sizeof *wv);
        gv = malloc(merged.n * sizeof *gv);
        want_set = (recset){ wv, 0, all.n };
        got_set = (recset){ gv, 0, merged.n };
        for (size_t i = 0; i < all.n; i++) if (all.v[i].class_id == class_id) wv[want_set.n++] = all.v[i];
        for (size_t i = 0; i < merged.n; i++) if (merged.v[i].class_id == class_id) gv[got_set.n++] = merged.v[i];
    }
    json_t *want = summary_compute(&want_set, &o);
    json_t *got = summary_compute_parts(&got_set, &o, &parts);
    CHECK(want && got);
    /* a merged run's records come without their chunk times (the parts carry the histograms and
     * bins): the time-respecting intervals and the chunk-level acceptance length are left out of
     * it, not guessed (metrics/timeint.h, metrics/accept.h) */
    CHECK(!json_object_get(got, "time_intervals") && !json_object_get(got, "spec_decode"));
    json_object_del(want, "time_intervals");
    json_object_del(want, "spec_decode");
    /* records arrive rank by rank: a single process's order differs, so means may differ in the
     * last bits; everything else (counts, exact percentiles, histograms, bins) is equal */
    CHECK_MSG(json_near(got, want, "summary"), "merged summary differs from the single-process one");
    CHECK(json_integer_value(json_object_get(got, "itl_samples")) > (class_id < 0 ? 1000 : 300));
    CHECK(json_is_true(json_object_get(got, "itl_per_token_reported")));
    json_decref(want);
    json_decref(got);
    free(wv);
    free(gv);
    free(parts.itl);
    free(parts.itl_tok);
    free(parts.tokens);
    recset_free(&merged);
    recset_free(&all);
}

TEST(dist_merge_equals_single_process_summary) { check_merge(-1); }
TEST(dist_merge_equals_single_process_class_summary) { check_merge(1); }

TEST(dist_records_round_trip_with_chunks_and_errors) {
    recset a, b;
    recset_init(&a);
    recset_init(&b);
    make_records(&a, 40, 3);
    dist_buf buf = { 0 };
    dist_pack_records(&buf, &a, true);
    dist_rd rd = { buf.p, buf.n, 0, 0 };
    CHECK_EQ_INT(dist_unpack_records(&rd, &b), 0);
    CHECK_EQ_INT(b.n, a.n);
    for (size_t i = 0; i < a.n && i < b.n; i++) {
        const record *x = &a.v[i], *y = &b.v[i];
        CHECK(x->index == y->index && x->class_id == y->class_id && x->outcome == y->outcome && x->warmup == y->warmup);
        CHECK(x->sched_ns == y->sched_ns && x->send_ns == y->send_ns && x->first_ns == y->first_ns && x->end_ns == y->end_ns);
        CHECK(x->out_tokens_server == y->out_tokens_server && x->n_chunks == y->n_chunks && x->http_status == y->http_status);
        CHECK((x->error == NULL) == (y->error == NULL));
        if (x->error && y->error) CHECK_STR(y->error, x->error);
        for (uint32_t k = 0; x->chunk_ns && k < x->n_chunks; k++) CHECK(x->chunk_ns[k] == y->chunk_ns[k]);
        CHECK((x->chunk_tokens == NULL) == (y->chunk_tokens == NULL));
    }
    /* a truncated part does not read back */
    recset c;
    recset_init(&c);
    dist_rd cut = { buf.p, buf.n / 2, 0, 0 };
    CHECK_EQ_INT(dist_unpack_records(&cut, &c), -1);
    recset_free(&c);
    free(buf.p);
    recset_free(&a);
    recset_free(&b);
}

TEST(dist_histogram_merge_is_bucket_exact) {
    hdr_hist *a = calloc(1, sizeof *a), *b = calloc(1, sizeof *b), *all = calloc(1, sizeof *all), *m = calloc(1, sizeof *m);
    rng r;
    rng_seed(&r, 11);
    for (int i = 0; i < 20000; i++) {
        int64_t v = (int64_t)(rng_uniform(&r) * 50e6) + 1000;
        hdr_record(i % 2 ? a : b, v, 1);
        hdr_record(all, v, 1);
    }
    dist_buf buf = { 0 };
    dist_pack_hist(&buf, a);
    dist_pack_hist(&buf, b);
    dist_rd rd = { buf.p, buf.n, 0, 0 };
    CHECK_EQ_INT(dist_unpack_hist_merge(&rd, m), 0);
    CHECK_EQ_INT(dist_unpack_hist_merge(&rd, m), 0);
    CHECK(memcmp(m->counts, all->counts, sizeof m->counts) == 0);
    CHECK_EQ_INT(m->total, 20000);
    CHECK_EQ_INT(m->min, all->min);
    CHECK_EQ_INT(m->max, all->max);
    CHECK_NEAR(m->mean, all->mean, 1e-9 * all->mean);
    double pcts[] = { 50, 90, 99, 99.9 };
    for (int i = 0; i < 4; i++) CHECK(hdr_percentile(m, pcts[i]) == hdr_percentile(all, pcts[i]));
    /* a corrupted count does not merge */
    uint64_t first_count;
    memcpy(&first_count, buf.p + 7 * 8 + 4, 8);
    first_count++;
    memcpy(buf.p + 7 * 8 + 4, &first_count, 8);
    hdr_hist *z = calloc(1, sizeof *z);
    dist_rd bad = { buf.p, buf.n, 0, 0 };
    CHECK_EQ_INT(dist_unpack_hist_merge(&bad, z), -1);
    CHECK_EQ_INT(z->total, 0);
    free(buf.p);
    free(a); free(b); free(all); free(m); free(z);
}

TEST(dist_telemetry_merge_labels_every_gpu_and_names_the_slowest) {
    json_t *s0 = json_pack("{s:f,s:[{s:i,s:s,s:{s:[f,f],s:[f,f]}}],s:{s:[f],s:[f]}}", "interval_s", 0.1, "gpu", "index", 0,
                           "name", "NVIDIA H200", "series", "t_s", 0.0, 0.1, "util_gpu_pct", 90.0, 91.0, "host", "t_s", 0.0,
                           "cpu_util_pct", 20.0);
    json_t *s1 = json_pack("{s:f,s:[{s:i,s:s},{s:i,s:s}]}", "interval_s", 0.1, "gpu", "index", 0, "name", "NVIDIA H200",
                           "index", 1, "name", "NVIDIA H200");
    json_t *m0 = json_pack("{s:f,s:[{s:i,s:{s:f,s:f},s:{s:f,s:f},s:f}]}", "window_s", 10.0, "gpus", "index", 0,
                           "sm_clock_mhz", "mean", 1980.0, "max", 1980.0, "power_w", "mean", 600.0, "max", 700.0, "energy_j", 6000.0);
    json_t *m1 = json_pack("{s:f,s:[{s:i,s:{s:f,s:f},s:{s:f,s:f},s:f},{s:i,s:{s:f,s:f},s:{s:f,s:f},s:f}]}", "window_s", 10.0,
                           "gpus", "index", 0, "sm_clock_mhz", "mean", 1975.0, "max", 1980.0, "power_w", "mean", 610.0, "max", 700.0,
                           "energy_j", 6100.0, "index", 1, "sm_clock_mhz", "mean", 1410.0, "max", 1980.0, "power_w", "mean",
                           700.0, "max", 700.0, "energy_j", 7000.0);
    telemetry_node nodes[2] = { { "client-a", 0, s0, m0 }, { "gpu-b", 2, s1, m1 } };
    json_t *series = telemetry_merge_series(nodes, 2), *sum = telemetry_merge_summary(nodes, 2, 1000);
    json_t *gpus = json_object_get(series, "gpu");
    CHECK_EQ_INT(json_array_size(gpus), 3);
    CHECK_STR(json_string_value(json_object_get(json_array_get(gpus, 2), "host")), "gpu-b");
    CHECK_EQ_INT(json_integer_value(json_object_get(json_array_get(gpus, 2), "rank")), 2);
    CHECK_EQ_INT(json_array_size(json_object_get(series, "hosts")), 1);
    CHECK_EQ_INT(json_array_size(json_object_get(series, "nodes")), 2);
    CHECK_NEAR(json_number_value(json_object_get(sum, "power_w_mean_total")), 1910, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(sum, "energy_j")), 19100, 1e-9);
    CHECK_NEAR(json_number_value(json_object_get(sum, "energy_j_per_output_token")), 19.1, 1e-9);
    json_t *slow = json_object_get(sum, "slowest_gpu");
    CHECK_STR(json_string_value(json_object_get(slow, "host")), "gpu-b");
    CHECK_EQ_INT(json_integer_value(json_object_get(slow, "index")), 1);
    CHECK_STR(json_string_value(json_object_get(slow, "by")), "sm_clock");
    json_decref(series); json_decref(sum);
    json_decref(s0); json_decref(s1); json_decref(m0); json_decref(m1);
}

/* Open MPI only where it is used: the binary does not name libmpi among the libraries the loader
 * must find, so `dsperf --version`, bench and sim start on a machine without Open MPI; libmpi is
 * loaded by dist_init, under a launcher only (the mpi_* tests run that path). */
TEST(dist_binary_starts_without_open_mpi) {
    char cmd[1200];
    snprintf(cmd, sizeof cmd, "readelf -d '%s' 2>&1", harness_bin());
    FILE *p = popen(cmd, "r");
    CHECK(p != NULL);
    if (!p) return;
    char line[512];
    int needed = 0, mpi = 0;
    while (fgets(line, sizeof line, p)) {
        if (!strstr(line, "(NEEDED)")) continue;
        needed++;
        if (strstr(line, "libmpi") || strstr(line, "libopen-")) mpi++;
    }
    int st = pclose(p);
    CHECK_MSG(st == 0 && needed > 0, "readelf -d %s gave no NEEDED entries (exit %d)", harness_bin(), st);
    CHECK_MSG(mpi == 0, "%s links Open MPI (%d NEEDED entries): it must be loaded only under a launcher", harness_bin(), mpi);
}
