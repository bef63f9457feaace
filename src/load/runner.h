/* runner — executes a load plan against an endpoint: closed loop (N users, each sends its next
 * request when the last finished, optional think time) or open loop (arrivals from a seeded
 * process; --max-concurrency caps in-flight requests and the excess waits in a client FIFO whose
 * wait is measured as queue time, never hidden). Every request gets a record whose sched_ns is
 * when the plan intended to send it. Stops by request count or duration (in-flight requests then
 * finish within a grace period), or early on *stop (Ctrl-C, an early stop): what was measured is
 * kept, and every request the runner cancels says why (record.cancel: the deadline, an interrupt
 * or an early stop), so no request dsperf ended itself reads as a server failure.
 *
 * One client thread (an epoll loop over libcurl) ingests a few hundred thousand chunks a second
 * when chunks arrive in bursts, but only ~100k/s when each arrives alone. Past that the plan is
 * sharded over several threads, each running an independent slice: closed loop splits the users,
 * open loop splits the rate (the superposition of W Poisson streams of R/W is Poisson of R;
 * constant streams are phase-shifted to interleave exactly; gamma streams superpose smoother than
 * one gamma stream), --max-concurrency and the request count split likewise, and a trace is dealt
 * out request by request on one shared timeline. Request indices interleave (shard k sends
 * k, k+W, ...), so the dataset and the per-request records read as from one client.
 *
 * Open loop without --max-concurrency and without conversations: each arrival is handed to the
 * client up to its lead ahead (client_submit_at: built, its connection taken or opened) and sent
 * at its instant, so a burst scheduled at one instant leaves back to back (client README
 * "Bursts"); the progress line counts such a request as sent once it is handed over.
 *
 * Multi-turn sessions (a dataset with conversations, dataset/sessions.h): a request may depend on
 * the answer to an earlier one. Users (closed loop: all start at once) or arrivals (open loop: by
 * the rate) start conversations instead of single requests; when a turn ends, the dataset says
 * whether its conversation goes on, and the next turn is due at the end plus the think time (its
 * sched_ns), built from the history when it is sent. A closed-loop user stays with its
 * conversation until the conversation ends (last turn, a failed turn, or a turn due after
 * --duration), then starts the next. Conversations are the unit the plan is split by (shard k runs
 * k, k+W, ...), so each is handled by one thread; --warmup counts conversations. */
#ifndef DSP_RUNNER_H
#define DSP_RUNNER_H
#include "client/client.h"
#include "common/stop.h"
#include "load/arrival.h"
#include "dataset/dataset.h"
#include "metrics/record.h"
#include <signal.h>
#include <stdint.h>
#include <stdbool.h>

typedef struct {
    int concurrency;          /* closed loop: number of users (0 = open loop) */
    arrival arr;              /* open loop arrivals (arr.rate_per_s > 0) */
    bool trace;               /* open loop from the dataset's timestamps */
    int max_concurrency;      /* open loop in-flight cap (0 = none) */
    size_t requests;          /* measured requests to send (0 = until duration) */
    int64_t duration_ns;      /* stop scheduling after this (0 = until requests) */
    size_t warmup;            /* extra requests sent first and excluded from statistics */
    int64_t think_ns;         /* closed loop: pause between a user's requests */
    int64_t grace_ns;         /* after the duration, how long in-flight requests may finish */
    uint64_t seed;
    int64_t progress_interval_ns; /* how often the progress callback runs (0 = 1 s) */
    int client_threads;       /* client event loops, each on its own thread (0 = auto) */
    /* request classes (tenants): each request draws its class by weight, from a generator of
     * its own so the arrival schedule does not change; n_classes <= 1: one class, load_run's ds */
    int n_classes;
    const dataset *const *class_ds;
    const double *class_weight;
    /* one job over many processes (src/dist): this process runs the shards shard_base ..
     * shard_base + its threads - 1 of shard_total, numbered as one process with shard_total
     * threads would number them, so the job's schedule is that process's; shard_total 0: this
     * process is the whole plan */
    int shard_base, shard_total;
    int64_t start_ns;         /* the plan's time zero on this clock (0: now); may lie ahead */
    size_t trace_burst;       /* a trace's most requests due within 1 ms (load_run sets it when it
                               * picks the thread count; 0: none known) */
} load_plan;

/* How many client threads a plan gets: `threads` when > 0, else auto — one per 256 concurrent
 * streams (a trace: its mean rate x 2), at most half the CPUs and 8, at least 1 (so 1 on a 2-core
 * machine). A trace whose peak is a burst (trace_burst, at least 2 x LOAD_BURST_SHARE requests due
 * within 1 ms, more than its rate's streams): one thread per LOAD_BURST_SHARE of the burst, at most
 * all CPUs but one (and 64): each thread sends its share at the same instant, and the sends are
 * what a burst's spread is made of. */
#define LOAD_BURST_SHARE 64
int load_client_threads(const load_plan *p, int threads);

typedef struct {
    size_t planned;           /* 0 when duration-bound */
    size_t sent, finished, failed, in_flight, queued;   /* failed: the server's (cancelled by dsperf is not) */
    int64_t elapsed_ns;
    double ttft_p50_ms;       /* of the recent successes (NaN when none) */
    double rate_per_s;        /* finished per second over the run so far */
} load_progress;

typedef void (*load_progress_fn)(void *ctx, const load_progress *p);

/* Values of *stop (load_run): why the caller stopped the run, which the requests cancelled in
 * flight carry (record.h rec_cancel). Any other non-zero value counts as an interrupt. */
#define LOAD_STOP_INTERRUPT 1   /* Ctrl-C / SIGTERM */
#define LOAD_STOP_EARLY 2       /* the sweep's over-saturation early stop */

typedef struct {
    int64_t start_ns;         /* first scheduled send */
    int64_t end_ns;
    bool interrupted;         /* stopped by *stop */
    int stop_code;            /* *stop's value when it stopped the run (LOAD_STOP_*), 0 otherwise */
    bool grace_expired;       /* in-flight requests were cancelled at the end of the grace period */
    int client_threads;       /* client event loops the plan ran on */
} load_outcome;

/* Runs the plan; records go into recs (one per scheduled request). Returns 0, or -1 with err
 * when the client could not be set up. */
int load_run(const load_plan *p, const client_opts *co, const dataset *ds, recset *recs,
             ds_stop_flag *stop, load_progress_fn progress, void *ctx,
             load_outcome *out, char *err, size_t errlen);
#endif
