/* run/job — a load command as one multi-host job or one process (see job.h). The order of the
 * steps is src/dist/README.md's "A run, step by step"; src/dist speaks exit statuses on the wire
 * (a rank's preparation, the job's end), turned into results here and back at the CLI's edge. */
#include "run/job.h"
#include "run/bench.h"
#include "common/fdlimit.h"
#include "common/log.h"
#include <signal.h>
#include <stdlib.h>

void run_job_quiet_followers(void) {
    if (dist_env_rank() > 0) log_set_quiet(2);
}

/* An exit status from src/dist as a result whose ds_exit_code is that status (dist only sends
 * EXIT_OK, EXIT_RUN_FAILED and EXIT_USAGE). */
static ds_result result_of_status(int status) {
    return status == EXIT_OK ? DS_OK : status == EXIT_USAGE ? DS_EINVAL : DS_ERUN;
}

ds_result run_job_join(bench_opts *b, ds_result prepared) {
    if (!b->dist) return prepared;
    int status = dist_join(b->dist, ds_exit_code(prepared), NULL);
    if (status == EXIT_OK) return DS_OK;
    /* the followers end with it (rank 0 has said why); nothing was announced, so no end is */
    dist_finalize(b->dist, status);
    b->dist = NULL;
    return status == ds_exit_code(prepared) ? prepared : result_of_status(status);
}

int run_job_size(const bench_opts *b) { return b->dist ? dist_size(b->dist) : 1; }

/* A follower's signals end its run (and the job's next ones): mpirun forwards Ctrl-C as SIGTERM. */
static ds_stop_flag follow_signalled, follow_run_stop;
static void follow_signal(int sig) { (void)sig; follow_signalled = 1; follow_run_stop = 1; }

/* A follower after the join: every run rank 0 announces, with this rank's slice of the plan,
 * until rank 0 ends the job; returns the job's exit status. */
static int follow_runs(bench_opts *b, const dataset *ds) {
    struct sigaction sa = { .sa_handler = follow_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    load_plan whole = b->plan;
    int code = EXIT_RUN_FAILED;
    for (;;) {
        load_plan p = whole;
        if (dist_run_wait(b->dist, &p, &code) != 1) break;
        b->plan = p;
        follow_run_stop = follow_signalled;
        recset recs;
        recset_init(&recs);
        bench_result br;
        char err[1024];
        ds_result rc = bench_run_once_hook(b, ds, &follow_run_stop, NULL, NULL, &recs, &br, err, sizeof err);
        recset_free(&recs);
        json_decref(br.results);
        b->plan = whole;
        if (rc != DS_OK) { log_error("%s", err); code = EXIT_RUN_FAILED; break; }
    }
    return code;
}

/* A follower's whole part: prepares from its host (pre-flight, dataset), joins, runs. */
static ds_result follow(bench_opts *b) {
    dataset *ds = NULL;
    char *model = NULL;
    ds_result rc = run_job_join(b, bench_prepare(b, &ds, &model));
    if (rc == DS_OK) rc = result_of_status(follow_runs(b, ds));
    dataset_free(ds);
    if (b->client.model == model) b->client.model = NULL;
    free(model);
    return rc;
}

ds_result run_job(bench_opts *b, const run_job_parts *parts) {
    if (dist_launched()) {
        char err[512];
        log_set_quiet(b->quiet);
        if (!(b->dist = dist_init(&b->dist_o, err, sizeof err))) { log_error("%s", err); return DS_ERUN; }
    }
    bool lead = !b->dist || dist_is_root(b->dist);
    ds_result rc = lead && parts->check ? parts->check(parts->check_ctx) : DS_OK;
    if (rc != DS_OK) return run_job_join(b, rc);   /* a job's followers end with it */
    fd_limit_prepare();     /* thousands of streams: before any thread starts */
    rc = lead ? parts->lead(parts->lead_ctx, b) : follow(b);
    if (b->dist) {
        if (lead) dist_end(b->dist, ds_exit_code(rc));
        dist_finalize(b->dist, ds_exit_code(rc));
        b->dist = NULL;
    }
    return rc;
}
