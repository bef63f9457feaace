/* cmd_bench — `dsperf bench`: one endpoint, one load setting. Validates everything first (flags,
 * dataset, a GET /v1/models pre-flight), then runs the plan, prints the summary and writes the
 * results atomically — also when interrupted, marked partial. */
#include "cli/cli.h"
#include "cli/bench_opts.h"
#include "client/client.h"
#include "load/runner.h"
#include "results/results.h"
#include "common/log.h"
#include "common/clock.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>
#include <math.h>

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

static void show_progress(void *ctx, const load_progress *p) {
    (void)ctx;
    char ttft[32] = "-";
    if (!isnan(p->ttft_p50_ms)) snprintf(ttft, sizeof ttft, "%.1f ms", p->ttft_p50_ms);
    char planned[32] = "";
    if (p->planned) snprintf(planned, sizeof planned, "/%zu", p->planned);
    fprintf(stderr, "\r\033[K[%5.0fs] done %zu%s  failed %zu  in-flight %zu  queued %zu  %.1f req/s  p50 TTFT %s",
            p->elapsed_ns / 1e9, p->finished, planned, p->failed, p->in_flight, p->queued, p->rate_per_s, ttft);
    fflush(stderr);
}

int cmd_bench(int argc, char **argv) {
    bench_opts b;
    int rc = bench_opts_parse(&b, argc, argv);
    if (rc >= 0) return rc;   /* --help or a usage error (already reported) */

    char err[1024];
    char *model = NULL;
    if (client_preflight(&b.client, &model, NULL, err, sizeof err) < 0) {
        log_error("%s", err);
        bench_opts_free(&b);
        return EXIT_USAGE;
    }
    if (!b.client.model) b.client.model = model;
    else { free(model); model = NULL; }

    dataset *ds = NULL;
    size_t n_hint = b.plan.requests ? b.plan.requests + b.plan.warmup : 10000;
    if (dataset_open(b.dataset_spec, n_hint, b.plan.seed, &ds, err, sizeof err) < 0) {
        log_error("%s", err);
        free(model);
        bench_opts_free(&b);
        return EXIT_USAGE;
    }
    b.client.ignore_eos = ds->ignore_eos || b.ignore_eos;
    if (b.plan.trace && ds->items[0].timestamp_ns < 0) {
        log_error("--arrival trace needs a dataset with a \"timestamp\" on every line (jsonl:FILE)");
        dataset_free(ds); free(model); bench_opts_free(&b);
        return EXIT_USAGE;
    }

    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);

    bool tty = isatty(STDERR_FILENO) && !b.quiet && !b.no_progress;
    if (!b.quiet) {
        if (b.plan.concurrency) log_info("bench %s model %s: closed loop, %d users, %s", b.client.base_url, b.client.model, b.plan.concurrency, b.dataset_spec);
        else log_info("bench %s model %s: open loop, %.3g req/s %s%s, %s", b.client.base_url, b.client.model, b.plan.arr.rate_per_s,
                      b.arrival_spec, b.plan.max_concurrency ? " (max-concurrency capped)" : "", b.dataset_spec);
    }
    recset recs;
    recset_init(&recs);
    load_outcome lo;
    if (load_run(&b.plan, &b.client, ds, &recs, &g_stop, tty ? show_progress : NULL, NULL, &lo, err, sizeof err) < 0) {
        log_error("%s", err);
        recset_free(&recs); dataset_free(ds); free(model); bench_opts_free(&b);
        return EXIT_RUN_FAILED;
    }
    if (tty) fprintf(stderr, "\r\033[K");

    results_meta meta = {
        .producer = "bench", .command_line = b.command_line, .config = bench_opts_config_json(&b, ds),
        .partial = lo.interrupted, .partial_reason = lo.interrupted ? "interrupted (SIGINT/SIGTERM): results cover what finished before the stop" : NULL,
    };
    json_t *res = results_build(&recs, &b.summary, &meta);
    json_decref(meta.config);
    int exit_code = EXIT_OK;
    if (!res) { log_error("out of memory while computing the summary"); exit_code = EXIT_RUN_FAILED; }
    else {
        if (!b.quiet) results_print_summary(stdout, res);
        if (b.out_path && results_write_json(b.out_path, res, err, sizeof err) < 0) { log_error("%s", err); exit_code = EXIT_RUN_FAILED; }
        else if (b.out_path && !b.quiet) log_info("results written to %s", b.out_path);
        if (b.requests_path && results_write_requests_jsonl(b.requests_path, &recs, err, sizeof err) < 0) { log_error("%s", err); exit_code = EXIT_RUN_FAILED; }
        json_t *completed = json_object_get(res, "completed");
        if (exit_code == EXIT_OK && json_integer_value(completed) == 0) {
            log_error("no request completed successfully; see the errors above (first: %s)", recs.n && recs.v[recs.n - 1].error ? recs.v[recs.n - 1].error : "none");
            exit_code = EXIT_RUN_FAILED;
        }
        if (lo.interrupted && exit_code == EXIT_OK) exit_code = EXIT_RUN_FAILED; /* partial run */
        json_decref(res);
    }
    recset_free(&recs);
    dataset_free(ds);
    free(model);
    bench_opts_free(&b);
    return exit_code;
}
