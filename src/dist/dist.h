/* dist — one bench or sweep run as one job over many processes and hosts, on Open MPI.
 *
 * Started by an MPI launcher (mpirun/mpiexec, srun --mpi=pmix), every process ("rank") runs a
 * slice of the one load plan: the plan's shards are numbered across the job exactly as one
 * process with that many client threads numbers them (users split, Poisson rates superposed,
 * constant phases interleaved, trace requests dealt out, request indices interleaved), so the
 * job's schedule is that process's. Rank 0 leads: it measures every rank's monotonic clock
 * against its own (MPI ping-pong, minimum round trip), announces each run (the plan and a start
 * time ahead on its clock), sums the ranks' progress, and at the end gathers every rank's
 * records (timestamps moved onto its clock), pooled-ITL histograms, tokens per second,
 * client cost and telemetry, and writes the one result. Followers (ranks > 0) only run what rank
 * 0 announces.
 *
 * Faults: MPI errors return (MPI_ERRORS_RETURN); every wait has a deadline. A rank silent for
 * the rank timeout is lost, and rank 0 writes the result of the ranks that finished, marked
 * partial with the lost ranks and why; a follower that loses rank 0 ends. A stop (Ctrl-C,
 * SIGTERM from mpirun, the sweep's over-saturation detector) on rank 0 reaches every rank.
 *
 * Without a launcher none of this runs: dist_launched() reads the environment only, and nothing
 * here touches MPI before dist_init. Only the main thread calls MPI (MPI_THREAD_FUNNELED). */
#ifndef DSP_DIST_H
#define DSP_DIST_H
#include "load/runner.h"
#include "common/stop.h"
#include "metrics/summary.h"
#include "telemetry/telemetry.h"
#include <jansson.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#define DIST_MAX_CLASSES 16

typedef struct dist dist;

/* True when an MPI launcher started this process (OMPI_COMM_WORLD_SIZE, PMIX_RANK, PMI_RANK or
 * PMI_SIZE in the environment). Touches nothing else. */
bool dist_launched(void);
/* The rank the launcher's environment gives, before dist_init (-1 when not launched). */
int dist_env_rank(void);

typedef struct {
    int64_t rank_timeout_ns;    /* a rank silent this long is lost (default 30 s) */
    const char *gpu_nodes;      /* hosts whose ranks sample telemetry only, no load: "g1,g2" */
} dist_opts;

void dist_default_opts(dist_opts *o);
/* Initialises MPI with errors returned. Followers' log_info is silenced and their warnings and
 * errors name the rank. NULL with err when MPI cannot start. */
dist *dist_init(const dist_opts *o, char *err, size_t errlen);
int dist_rank(const dist *d);
int dist_size(const dist *d);
bool dist_is_root(const dist *d);
/* This rank runs no load (its host is one of --gpu-nodes): it samples telemetry only. */
bool dist_samples_only(const dist *d);
/* This rank is the lowest on its host: it samples the host's GPUs and host metrics. */
bool dist_node_leader(const dist *d);

/* Narrows the command's telemetry options to what this rank samples: a host's GPUs and host
 * metrics by its lowest rank only (one sampler per node; --server-pid on rank 0's node), the
 * server's /metrics by rank 0 only. Returns whether this rank samples anything. */
bool dist_telemetry_opts(const dist *d, telemetry_opts *o);

/* Every rank says how its preparation went (EXIT_OK, or an exit code with one line why). Rank 0
 * collects all within the join deadline (4 rank timeouts), names every rank that failed or did
 * not join, and measures the clocks. Returns EXIT_OK to go on, or the exit code every rank ends
 * with (rank 0 has said why). */
int dist_join(dist *d, int status, const char *why);

/* Rank 0: announces the next run of *p to every rank and fills p's job fields (shards, start
 * time; client_threads 0 on a rank that runs no shard). want_chunks: followers send their chunk
 * arrays too (for --save-requests). 0 ok, -1 with err. */
int dist_run_begin(dist *d, load_plan *p, bool want_chunks, char *err, size_t errlen);
/* Followers: waits for rank 0's next announcement. 1: a run, *p overwritten with rank 0's plan
 * (this rank's slice); 0: the job is over, *exit_code says how it ended. */
int dist_run_wait(dist *d, load_plan *p, int *exit_code);

/* The progress callback a rank runs the plan with: followers report their counters to rank 0
 * and take rank 0's stop; rank 0 sums the job's counters for `user` (the live line, the sweep's
 * detector) and passes a stop to every rank. *stop is the run's stop flag. */
typedef struct dist_progress dist_progress;
dist_progress *dist_progress_new(dist *d, load_progress_fn user, void *user_ctx, ds_stop_flag *stop);
void dist_progress_tick(void *ctx, const load_progress *p);   /* a load_progress_fn over ctx */
void dist_progress_free(dist_progress *pr);
/* The run of a rank without shards (telemetry only, or no user of this run's plan falls to it):
 * heartbeats until rank 0 ends it. */
void dist_idle_run(dist *d, dist_progress *pr, load_outcome *lo);

/* What rank 0 holds after a gather: every rank's records on its clock, the chunk-level parts of
 * the whole run and of each class, the ranks' client cost and telemetry. */
typedef struct {
    recset recs;                /* every delivered rank's records, by request index */
    summary_parts whole;        /* with its own histograms and bins (owned) */
    summary_parts cls[DIST_MAX_CLASSES];
    int n_classes;
    load_outcome lo;            /* the job's: start and end on rank 0's clock, any interruption */
    json_t *client;             /* merged client cost: totals and "ranks" */
    json_t *telemetry, *telemetry_summary;   /* merged over nodes, or NULL when none sampled */
    json_t *section;            /* the results' "dist" section (ranks, clocks, lost ranks) */
    int lost;                   /* ranks that delivered nothing (or not everything) */
    char partial_reason[512];   /* which ranks were lost and why ("" when none) */
} dist_merged;

/* What a rank contributes besides its records. */
typedef struct {
    json_t *client;                   /* this rank's client cost (borrowed) */
    const telemetry *tel;             /* its sampler, stopped (NULL: none ran here) */
} dist_local;

/* After a run: followers move their records onto rank 0's clock, send their part and return 0
 * with nothing in *m; rank 0 takes its own records out of recs into m->recs, collects every
 * rank's part within the deadlines (*stop raised: within 0.7 s more) and fills *m (free with
 * dist_merged_free). lo: this rank's outcome. -1 with err: out of memory on rank 0, or a
 * follower that lost rank 0. */
int dist_gather(dist *d, recset *recs, int n_classes, const load_outcome *lo, const dist_local *local,
                ds_stop_flag *stop, dist_merged *m, char *err, size_t errlen);
void dist_merged_free(dist_merged *m);

/* Rank 0: the job is over (followers' dist_run_wait returns 0 with exit_code). */
void dist_end(dist *d, int exit_code);
/* Ends MPI: MPI_Finalize when every rank is accounted for; when a rank was lost, MPI_Abort with
 * exit_code so that a hung rank cannot hold the job (rank 0 has written its result by then). */
void dist_finalize(dist *d, int exit_code);

/* ---- clock offsets (exposed for tests) ----
 * One ping-pong: the follower sends at t1 (its clock), rank 0 answers with its clock tm, the
 * follower receives at t2. Rank 0's clock at the midpoint reads tm, so offset = tm - (t1 + t2)/2
 * (rank 0's clock minus this one's), with error at most (t2 - t1)/2. The sample with the shortest
 * round trip is the estimate. */
typedef struct {
    int64_t offset_ns;          /* add to this rank's timestamps to put them on rank 0's clock */
    int64_t uncertainty_ns;     /* half the shortest round trip */
    int64_t rtt_min_ns, rtt_median_ns;
    int samples;
} dist_clock;

/* Fills c from n samples (t1, tm, t2) by the minimum round trip. -1 when none is usable. */
int dist_clock_estimate(const int64_t *t1, const int64_t *tm, const int64_t *t2, int n, dist_clock *c);
#endif
