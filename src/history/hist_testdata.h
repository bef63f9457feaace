/* hist_testdata — for the history's tests only: a results document made from synthetic requests
 * pushed through the real summary, so the right answers are known. */
#ifndef DSP_HIST_TESTDATA_H
#define DSP_HIST_TESTDATA_H
#include "results/results.h"
#include "metrics/record.h"
#include "common/rng.h"

/* n requests one after another into rs (from t_ns on; returns the time after the last): TTFT =
 * ttft_ms +- jitter_ms (uniform), `chunks` content chunks 2 ms apart, the server's usage. */
static inline int64_t hist_test_records(recset *rs, double ttft_ms, double jitter_ms, size_t n, int chunks, uint64_t seed,
                                        int64_t t) {
    rng r;
    rng_seed(&r, seed);
    for (size_t i = 0; i < n; i++) {
        record *x = recset_add(rs);
        x->index = (uint32_t)rs->n - 1;
        x->sched_ns = t;
        x->send_ns = t + 10000;
        x->http_status = 200;
        x->outcome = REC_OK;
        x->in_tokens = 8;
        x->max_tokens = chunks;
        int64_t first = x->send_ns + (int64_t)((ttft_ms + jitter_ms * (2 * rng_uniform(&r) - 1)) * 1e6);
        for (int k = 0; k < chunks; k++) record_add_chunk(x, first + (int64_t)k * 2000000, 1);
        x->first_ns = first;
        x->last_ns = x->end_ns = first + (int64_t)(chunks - 1) * 2000000;
        x->out_tokens_server = chunks;
        t = x->end_ns + 100000;
    }
    return t;
}

/* The results document of rs: a closed loop of one user on `dataset`. */
static inline json_t *hist_test_doc(const recset *rs, const char *dataset) {
    summary_opts so;
    summary_default_opts(&so);
    json_t *cfg = json_pack("{s:s,s:s,s:s,s:i,s:s}", "url", "http://127.0.0.1:1", "model", "m", "load", "closed",
                            "concurrency", 1, "dataset", dataset);
    results_meta meta = { .producer = "bench", .command_line = "bench (synthetic)", .config = cfg };
    json_t *doc = results_build(rs, &so, &meta);
    json_decref(cfg);
    return doc;
}

/* hist_test_records of one run, as its results document. */
static inline json_t *hist_test_run(double ttft_ms, double jitter_ms, size_t n, int chunks, uint64_t seed, const char *dataset) {
    recset rs;
    recset_init(&rs);
    hist_test_records(&rs, ttft_ms, jitter_ms, n, chunks, seed, 1000000000LL);
    json_t *doc = hist_test_doc(&rs, dataset);
    recset_free(&rs);
    return doc;
}
#endif
