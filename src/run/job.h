/* run/job — the lifecycle of a load command (bench, sweep) as one job over many hosts when an
 * MPI launcher started dsperf (src/dist), and as one process otherwise: the job's start, the
 * leader's checks, every rank's preparation joined, the followers' whole part (prepare, join, run
 * what rank 0 announces), the end announced and MPI finished. bench_run_job (run/bench.h) and
 * sweep_run_job (run/sweep.h) are built on it, so nothing in src/cli calls src/dist.
 *
 * Without a launcher nothing here touches MPI (dist_launched() reads the environment only), so a
 * run outside mpirun needs no Open MPI installed (src/dist/mpi_load.c loads it under one only). */
#ifndef DSP_RUN_JOB_H
#define DSP_RUN_JOB_H
#include "run/bench_opts.h"
#include "common/result.h"

/* Before the options are parsed: a job's followers log nothing, so that a bad option is reported
 * once, by rank 0. Reads the environment only. */
void run_job_quiet_followers(void);

/* What a command adds to the lifecycle. Both run on the leader only: rank 0 of a job, or the one
 * process. */
typedef struct {
    /* Before any load and before the job's preparation: the outputs and the history are checked
     * (nothing measured is then lost to a path that cannot be written). DS_OK, or a failure after
     * its one line: the job ends with it. NULL: nothing to check. */
    ds_result (*check)(void *check_ctx);
    void *check_ctx;
    /* The leader's run from preparation on. It calls run_job_join with its preparation's result
     * before any run (bench_prepare), and returns the result the job ends with. */
    ds_result (*lead)(void *lead_ctx, bench_opts *b);
    void *lead_ctx;
} run_job_parts;

/* Runs a load command: under a launcher, starts the job (b->dist; DS_ERUN after one line when MPI
 * cannot start), then the leader's check and lead, or on a follower its preparation and every run
 * rank 0 announces with this rank's slice of the plan (bench_run_once_hook); rank 0 announces the
 * end with its result, and MPI ends (dist_finalize; b->dist is NULL again on return). Without a
 * launcher: check, then lead. Returns the leader's result; on a follower, the job's (rank 0's
 * exit status as a result: ds_exit_code gives it back). */
ds_result run_job(bench_opts *b, const run_job_parts *parts);

/* For a lead: every rank says how its preparation went and the job goes on only if all did.
 * Without a job, returns prepared. With one, DS_OK to go on; otherwise the job has ended (MPI
 * finished, b->dist NULL) and the result every rank ends with comes back (rank 0 has said why). */
ds_result run_job_join(bench_opts *b, ds_result prepared);

/* The ranks of the job (1 without one), for the leader's log line. */
int run_job_size(const bench_opts *b);
#endif
