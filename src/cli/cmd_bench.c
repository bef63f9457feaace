/* cmd_bench — `dsperf bench`: one endpoint, one load setting. Validates everything first (flags,
 * dataset, a GET /v1/models pre-flight), then runs the plan, prints the summary and writes the
 * results atomically — also when interrupted, marked partial. */
#include "cli/cli.h"
#include "common/fileio.h"
#include "cli/bench_opts.h"
#include "run/bench.h"
#include "run/job.h"
#include "results/results.h"
#include "common/log.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The outputs and the history, checked before the run (on rank 0 of a job: it writes them). */
static ds_result check_outputs(void *ctx) {
    const bench_opts *b = ctx;
    int rc = cli_check_output("--out", b->out_path);
    if (rc == EXIT_OK) rc = cli_check_output("--save-requests", b->requests_path);
    if (rc == EXIT_OK && !b->out_path) rc = cli_check_default_output("--out", "bench", "json");
    if (rc != EXIT_OK) return DS_EINVAL;
    return history_opts_check(&b->hist);
}

/* The run's summary printed, its files written, and the run policy's verdict. */
static ds_result report(void *ctx, const bench_opts *b, const bench_result *br, const recset *recs) {
    (void)ctx;
    json_t *res = br->results;
    char err[1024];
    ds_result rc = DS_OK;
    FILE *sum = cli_summary_stream();
    if (!b->quiet) { results_print_summary(sum, res); bench_print_classes(sum, res); }
    /* no --out: a new file, so a measured run is kept and no earlier one is overwritten */
    char def[4096];
    const char *out = b->out_path ? b->out_path : cli_default_output("--out", "bench", "json", def, sizeof def);
    if (!out) rc = DS_EIO;
    else if (results_write_json(out, res, err, sizeof err) < 0) { log_error("%s", err); rc = DS_EIO; }
    else if (!fileio_is_stdout(out)) log_info("results written to %s", out);
    if (b->requests_path && results_write_requests_jsonl(b->requests_path, recs, err, sizeof err) < 0) { log_error("%s", err); rc = DS_EIO; }
    if (history_opts_record(&b->hist, res, NULL, 0) != DS_OK) rc = DS_EIO;
    /* one policy (results/validity.h): interrupted, nothing completed, or server-side
     * failures over --max-error-rate fail the run, after everything measured is written */
    const char *why = json_string_value(json_object_get(res, "run_failed_reason"));
    if (json_is_true(json_object_get(res, "run_failed"))) {
        const char *first = NULL;
        for (size_t i = 0; i < recs->n && !first; i++) if (record_failed(&recs->v[i])) first = recs->v[i].error;
        if (first) log_error("%s (first error: %s)", why ? why : "the run failed", first);
        else log_error("%s", why ? why : "the run failed");
        rc = DS_EJUDGED;
    }
    /* a partial run: interrupted, or ranks of a job lost */
    if ((br->interrupted || json_is_true(json_object_get(res, "partial"))) && rc == DS_OK) rc = DS_EINTR;
    return rc;
}

int cmd_bench(int argc, char **argv) {
    bench_opts b;
    run_job_quiet_followers();   /* a job's followers: rank 0 reports bad options */
    int rc = bench_opts_parse(&b, argc, argv);
    if (rc >= 0) { bench_opts_free(&b); return rc; }   /* --help or a usage error (reported) */
    bench_job_hooks h = { .check = check_outputs, .report = report, .ctx = &b };
    ds_result r = bench_run_job(&b, &h);
    bench_opts_free(&b);
    return ds_exit_code(r);
}
