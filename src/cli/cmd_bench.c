/* cmd_bench — `dsperf bench`: one endpoint, one load setting. Validates everything first (flags,
 * dataset, a GET /v1/models pre-flight), then runs the plan, prints the summary and writes the
 * results atomically — also when interrupted, marked partial. */
#include "cli/cli.h"
#include "common/fdlimit.h"
#include "cli/bench_run.h"
#include "results/results.h"
#include "common/log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

static volatile sig_atomic_t g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

int cmd_bench(int argc, char **argv) {
    bench_opts b;
    int rc = bench_opts_parse(&b, argc, argv);
    if (rc >= 0) { bench_opts_free(&b); return rc; }   /* --help or a usage error (reported) */
    if ((rc = cli_check_output("--out", b.out_path)) || (rc = cli_check_output("--save-requests", b.requests_path))) {
        bench_opts_free(&b);
        return rc;
    }
    if ((rc = history_opts_check(&b.hist)) != EXIT_OK) { bench_opts_free(&b); return rc; }
    fd_limit_prepare();     /* thousands of streams: before any thread starts */
    dataset *ds = NULL;
    char *model = NULL;
    if ((rc = bench_prepare(&b, &ds, &model)) != EXIT_OK) {
        dataset_free(ds); free(model); bench_opts_free(&b);
        return rc;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    if (b.plan.concurrency) log_info("bench %s model %s: closed loop, %d users, %s", b.client.base_url, b.client.model, b.plan.concurrency, b.dataset_spec);
    else log_info("bench %s model %s: open loop, %.3g req/s %s%s, %s", b.client.base_url, b.client.model, b.plan.arr.rate_per_s,
                  b.arrival_spec, b.plan.max_concurrency ? " (max-concurrency capped)" : "", b.dataset_spec);

    recset recs;
    recset_init(&recs);
    bench_result br;
    char err[1024];
    bool tty = isatty(STDERR_FILENO) && !b.quiet && !b.no_progress;
    int exit_code = EXIT_OK;
    if (bench_run_once(&b, ds, &g_stop, tty, &recs, &br, err, sizeof err) < 0) {
        log_error("%s", err);
        exit_code = EXIT_RUN_FAILED;
    } else {
        json_t *res = br.results;
        if (!b.quiet) { results_print_summary(stdout, res); bench_print_classes(stdout, res); }
        if (b.out_path && results_write_json(b.out_path, res, err, sizeof err) < 0) { log_error("%s", err); exit_code = EXIT_RUN_FAILED; }
        else if (b.out_path) log_info("results written to %s", b.out_path);
        if (b.requests_path && results_write_requests_jsonl(b.requests_path, &recs, err, sizeof err) < 0) { log_error("%s", err); exit_code = EXIT_RUN_FAILED; }
        if (history_opts_record(&b.hist, res, NULL, 0) != EXIT_OK) exit_code = EXIT_RUN_FAILED;
        if (exit_code == EXIT_OK && json_integer_value(json_object_get(res, "completed")) == 0) {
            const char *first = NULL;
            for (size_t i = 0; i < recs.n && !first; i++) first = recs.v[i].error;
            log_error("no request completed successfully (first error: %s)", first ? first : "none");
            exit_code = EXIT_RUN_FAILED;
        }
        if (br.interrupted && exit_code == EXIT_OK) exit_code = EXIT_RUN_FAILED; /* partial run */
        json_decref(res);
    }
    recset_free(&recs);
    dataset_free(ds);
    free(model);
    bench_opts_free(&b);
    return exit_code;
}
