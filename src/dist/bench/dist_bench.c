/* dist_bench — what merging a multi-host run costs (make bench; scripts/bench_dist.sh): run under
 * mpirun, every rank makes the records a run of --streams streams would have left it (--requests
 * requests per stream, --out tokens each, one chunk per token, over --seconds), then the job
 * gathers and merges them exactly as bench does (dist_gather), and rank 0 computes the summary
 * (summary_compute_parts) and serialises the results. Prints one line of key=value numbers:
 * bytes each rank sent, the gather's wall time, the summary's, and rank 0's peak memory.
 * Not a test: nothing is asserted; speed belongs here. */
#include "dist/dist.h"
#include "metrics/summary.h"
#include "common/clock.h"
#include "common/rng.h"
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

static long rss_kib(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru.ru_maxrss;
}

/* The records of `streams` closed-loop users over the window from t0: each request waits ~25 ms
 * for its first token, then emits `out` chunks ~20 ms apart (with jitter), back to back. */
static void synthesize(recset *rs, int streams, int requests, int out, int rank, int ranks, int64_t t0) {
    rng r;
    rng_seed(&r, 1000 + (uint64_t)rank);
    for (int u = 0; u < streams; u++) {
        int64_t t = t0 + (int64_t)(rng_uniform(&r) * 50e6);
        for (int q = 0; q < requests; q++) {
            record *x = recset_add(rs);
            if (!x) { fprintf(stderr, "dist_bench: out of memory\n"); exit(1); }
            x->index = (uint32_t)(((size_t)u * (size_t)requests + (size_t)q) * (size_t)ranks + (size_t)rank);
            x->sched_ns = t;
            x->send_ns = t + 20000;
            x->in_tokens = 512;
            x->max_tokens = out;
            int64_t c = x->send_ns + 25 * NS_PER_MS + (int64_t)(rng_uniform(&r) * 5e6);
            for (int k = 0; k < out; k++) {
                record_add_chunk(x, c, 1);
                c += 20 * NS_PER_MS + (int64_t)((rng_uniform(&r) - 0.5) * 8e6);
            }
            x->first_ns = x->chunk_ns[0];
            x->last_ns = x->chunk_ns[out - 1];
            x->end_ns = x->last_ns + 50000;
            x->out_tokens_server = out;
            x->outcome = REC_OK;
            t = x->end_ns;
        }
    }
}

int main(int argc, char **argv) {
    int streams = 10000, requests = 10, out = 128;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--streams")) streams = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--requests")) requests = atoi(argv[i + 1]);
        else if (!strcmp(argv[i], "--out")) out = atoi(argv[i + 1]);
    }
    if (!dist_launched()) { fprintf(stderr, "dist_bench: run it under mpirun (scripts/bench_dist.sh)\n"); return 2; }
    dist_opts o;
    dist_default_opts(&o);
    char err[512];
    dist *d = dist_init(&o, err, sizeof err);
    if (!d || dist_join(d, 0, NULL) != 0) { fprintf(stderr, "dist_bench: %s\n", d ? "join failed" : err); return 1; }
    load_plan p;
    memset(&p, 0, sizeof p);
    p.concurrency = streams * dist_size(d);
    p.requests = (size_t)streams * (size_t)requests * (size_t)dist_size(d);
    p.client_threads = 1;
    int code = 0;
    if (dist_is_root(d)) dist_run_begin(d, &p, false, err, sizeof err);
    else if (dist_run_wait(d, &p, &code) != 1) return code;
    recset recs;
    recset_init(&recs);
    synthesize(&recs, streams, requests, out, dist_rank(d), dist_size(d), p.start_ns);
    long rss_before = rss_kib();
    load_outcome lo = { .start_ns = p.start_ns, .end_ns = clock_now_ns(), .client_threads = 1 };
    json_t *client = json_pack("{s:f,s:f}", "cpu_user_s", 0.0, "cpu_sys_s", 0.0);
    dist_local loc = { client, NULL };
    dist_merged m;
    int64_t t0 = clock_now_ns();
    if (dist_gather(d, &recs, 0, &lo, &loc, NULL, &m, err, sizeof err) < 0) { fprintf(stderr, "dist_bench: %s\n", err); return 1; }
    int64_t t1 = clock_now_ns();
    if (dist_is_root(d)) {
        summary_opts so;
        summary_default_opts(&so);
        json_t *sum = summary_compute_parts(&m.recs, &so, &m.whole);
        int64_t t2 = clock_now_ns();
        char *text = json_dumps(sum, JSON_COMPACT);
        int64_t t3 = clock_now_ns();
        size_t bytes = 0, recs_total = m.recs.n;
        size_t i;
        json_t *ri;
        json_array_foreach(json_object_get(m.section, "rank_info"), i, ri)
            bytes += (size_t)json_integer_value(json_object_get(ri, "bytes_received"));
        size_t per_rank = dist_size(d) > 1 ? bytes / (size_t)(dist_size(d) - 1) : 0;
        printf("ranks=%d streams_per_rank=%d requests=%zu chunks=%zu bytes_per_rank=%zu bytes_per_record=%.1f "
               "gather_s=%.3f summary_s=%.3f json_s=%.3f rank0_rss_before_mib=%.0f rank0_rss_peak_mib=%.0f "
               "completed=%lld itl_samples=%lld\n",
               dist_size(d), streams, recs_total, recs_total * (size_t)out, per_rank,
               recs_total ? (double)per_rank / ((double)recs_total / dist_size(d)) : 0, (t1 - t0) / 1e9, (t2 - t1) / 1e9,
               (t3 - t2) / 1e9, rss_before / 1024.0, rss_kib() / 1024.0,
               (long long)json_integer_value(json_object_get(sum, "completed")),
               (long long)json_integer_value(json_object_get(sum, "itl_samples")));
        free(text);
        json_decref(sum);
        dist_merged_free(&m);
        dist_end(d, 0);
    } else {
        while (dist_run_wait(d, &p, &code) == 1) {}
    }
    recset_free(&recs);
    json_decref(client);
    dist_finalize(d, 0);
    return 0;
}
