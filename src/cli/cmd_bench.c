/* cmd_bench — `dsperf bench`: one endpoint, one load setting. Validates everything first (flags,
 * dataset, a GET /v1/models pre-flight), then runs the plan, prints the summary and writes the
 * results atomically — also when interrupted, marked partial. */
#include "cli/cli.h"
#include "common/stop.h"
#include "common/fileio.h"
#include "common/fdlimit.h"
#include "cli/bench_opts.h"
#include "run/bench.h"
#include "results/results.h"
#include "common/log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <unistd.h>

static ds_stop_flag g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

/* Under an MPI launcher: starts the job (NULL and exit code in *rc when it cannot). */
static int start_job(bench_opts *b) {
    if (!dist_launched()) return EXIT_OK;
    char err[512];
    log_set_quiet(b->quiet);
    if (!(b->dist = dist_init(&b->dist_o, err, sizeof err))) { log_error("%s", err); return EXIT_RUN_FAILED; }
    return EXIT_OK;
}

static int end_job(bench_opts *b, int exit_code) {
    if (b->dist) {
        dist_end(b->dist, exit_code);
        dist_finalize(b->dist, exit_code);
        b->dist = NULL;
    }
    return exit_code;
}

int cmd_bench(int argc, char **argv) {
    bench_opts b;
    if (dist_env_rank() > 0) log_set_quiet(2);   /* a job's followers: rank 0 reports bad options */
    int rc = bench_opts_parse(&b, argc, argv);
    if (rc >= 0) { bench_opts_free(&b); return rc; }   /* --help or a usage error (reported) */
    if ((rc = start_job(&b)) != EXIT_OK) { bench_opts_free(&b); return rc; }
    /* outputs and the history are checked before the run; only rank 0 of a job writes them */
    if (!b.dist || dist_is_root(b.dist)) {
        if ((rc = cli_check_output("--out", b.out_path)) == EXIT_OK) rc = cli_check_output("--save-requests", b.requests_path);
        if (rc == EXIT_OK && !b.out_path) rc = cli_check_default_output("--out", "bench", "json");
        if (rc == EXIT_OK) rc = history_opts_check(&b.hist);
    }
    if (rc != EXIT_OK && !b.dist) { bench_opts_free(&b); return rc; }
    fd_limit_prepare();     /* thousands of streams: before any thread starts */
    dataset *ds = NULL;
    char *model = NULL;
    if (rc == EXIT_OK) rc = ds_exit_code(bench_prepare(&b, &ds, &model));
    if (b.dist) {
        /* every rank prepared (pre-flight from its host, dataset); a job goes on only if all did */
        rc = dist_join(b.dist, rc, NULL);
        if (rc == EXIT_OK && !dist_is_root(b.dist)) rc = bench_follow(&b, ds);
        if (rc != EXIT_OK || !dist_is_root(b.dist)) {
            dataset_free(ds); free(model);
            dist_finalize(b.dist, rc);
            bench_opts_free(&b);
            return rc;
        }
    }
    if (rc != EXIT_OK) {
        dataset_free(ds); free(model); bench_opts_free(&b);
        return rc;
    }
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    const char *ranks = "";
    char job[64] = "";
    if (b.dist) { snprintf(job, sizeof job, " over %d MPI ranks", dist_size(b.dist)); ranks = job; }
    if (b.plan.concurrency) log_info("bench %s model %s: closed loop, %d users, %s%s", b.client.base_url, b.client.model, b.plan.concurrency, b.dataset_spec, ranks);
    else log_info("bench %s model %s: open loop, %.3g req/s %s%s, %s%s", b.client.base_url, b.client.model, b.plan.arr.rate_per_s,
                  b.arrival_spec, b.plan.max_concurrency ? " (max-concurrency capped)" : "", b.dataset_spec, ranks);

    recset recs;
    recset_init(&recs);
    bench_result br;
    char err[1024];
    bool tty = isatty(STDERR_FILENO) && !b.quiet && !b.no_progress;
    int exit_code = EXIT_OK;
    if (bench_run_once(&b, ds, &g_stop, tty, &recs, &br, err, sizeof err) != DS_OK) {
        log_error("%s", err);
        exit_code = EXIT_RUN_FAILED;
    } else {
        json_t *res = br.results;
        FILE *sum = cli_summary_stream();
        if (!b.quiet) { results_print_summary(sum, res); bench_print_classes(sum, res); }
        /* no --out: a new file, so a measured run is kept and no earlier one is overwritten */
        char def[4096];
        const char *out = b.out_path ? b.out_path : cli_default_output("--out", "bench", "json", def, sizeof def);
        if (!out) exit_code = EXIT_RUN_FAILED;
        else if (results_write_json(out, res, err, sizeof err) < 0) { log_error("%s", err); exit_code = EXIT_RUN_FAILED; }
        else if (!fileio_is_stdout(out)) log_info("results written to %s", out);
        if (b.requests_path && results_write_requests_jsonl(b.requests_path, &recs, err, sizeof err) < 0) { log_error("%s", err); exit_code = EXIT_RUN_FAILED; }
        if (history_opts_record(&b.hist, res, NULL, 0) != EXIT_OK) exit_code = EXIT_RUN_FAILED;
        /* one policy (results/validity.h): interrupted, nothing completed, or server-side
         * failures over --max-error-rate fail the run, after everything measured is written */
        const char *why = json_string_value(json_object_get(res, "run_failed_reason"));
        if (json_is_true(json_object_get(res, "run_failed"))) {
            const char *first = NULL;
            for (size_t i = 0; i < recs.n && !first; i++) if (record_failed(&recs.v[i])) first = recs.v[i].error;
            if (first) log_error("%s (first error: %s)", why ? why : "the run failed", first);
            else log_error("%s", why ? why : "the run failed");
            exit_code = EXIT_RUN_FAILED;
        }
        /* a partial run: interrupted, or ranks of a job lost */
        if ((br.interrupted || json_is_true(json_object_get(res, "partial"))) && exit_code == EXIT_OK) exit_code = EXIT_RUN_FAILED;
        json_decref(res);
    }
    recset_free(&recs);
    dataset_free(ds);
    free(model);
    bench_opts_free(&b);
    return end_job(&b, exit_code);
}
