/* dist_int — what the dist files share: the job's state, the message tags and records, the
 * deadline-bounded point-to-point messaging (dist.c), the wire format (dist_pack.c) and the
 * clock exchange (dist_clock.c). Not part of the interface (dist.h). */
#ifndef DSP_DIST_INT_H
#define DSP_DIST_INT_H
#include "dist/dist.h"
#include <stddef.h>
#include <stdint.h>

/* Point-to-point throughout, not collectives: a collective that waits on a dead rank cannot
 * say which rank it waits on, nor be abandoned; a receive from any source can. */
enum {
    TAG_HELLO = 101,    /* f→0: preparation status, host, pid, CPUs */
    TAG_WELCOME,        /* 0→f: go (or the exit code), role */
    TAG_SYNC,           /* 0→f: start your ping-pongs */
    TAG_PING,           /* f→0 */
    TAG_PONG,           /* 0→f: rank 0's clock */
    TAG_CLOCK,          /* f→0: the estimate the follower made */
    TAG_RUN,            /* 0→f: the next run's plan */
    TAG_READY,          /* f→0: this rank's client threads for it */
    TAG_GO,             /* 0→f: shard base, shard total, start time */
    TAG_PROGRESS,       /* f→0: counters; also the heartbeat of a waiting follower */
    TAG_CTRL,           /* 0→f: heartbeat, stop, collect, end */
    TAG_FINISHED,       /* f→0: this rank's run is over */
    TAG_PART_A,         /* f→0: records, ITL histograms, client cost */
    TAG_AXIS,           /* 0→f: the timeline's axes and the job's window */
    TAG_PART_B,         /* f→0: tokens per second on those axes, telemetry */
};

enum { CTRL_HEARTBEAT = 1, CTRL_STOP, CTRL_COLLECT, CTRL_END };

typedef struct { int32_t kind, code; } msg_ctrl;

typedef struct {
    int64_t sent, finished, failed, in_flight, queued;
    int32_t final;      /* the run is over on this rank */
} msg_progress;

/* What rank 0 knows of each rank. */
typedef enum { RS_RUNNING = 0, RS_FINISHED, RS_PART_A, RS_AXIS_SENT, RS_DONE, RS_LOST } rank_stage;

typedef struct {
    char host[64];
    int pid, cpus;
    bool samples_only, leader;
    dist_clock clk, clk_end;      /* at the run's start; after it (drift) */
    int64_t clk_at_ns, clk_end_at_ns;   /* rank 0's time of each estimate */
    bool drift_applied;
    int threads, shard_base;
    int load_index;               /* among the load ranks (-1: samples only) */
    msg_progress prog;
    int64_t heard_ns;             /* rank 0's clock when it last heard from this rank */
    rank_stage stage;
    bool lost;                    /* lost at some point in the job */
    char why[160];                /* why it was lost */
    size_t records;               /* delivered in the last run */
    size_t bytes;                 /* its parts' size in the last run */
    json_t *client, *tel_series, *tel_summary;   /* from its parts (owned until merged) */
} rank_info;

typedef struct pending_send pending_send;

struct dist {
    int rank, size;
    dist_opts o;
    char host[64];
    bool samples_only, leader;
    rank_info *ri;                /* rank 0: [size] */
    dist_clock clk;               /* followers: this rank's offset to rank 0 */
    dist_clock clk_end;
    int64_t clk_at_ns, clk_end_at_ns;   /* this rank's clock at each estimate */
    int64_t root_heard_ns;        /* followers: when rank 0 last spoke */
    int64_t hb_sent_ns;           /* when this rank last sent a heartbeat */
    bool want_chunks;             /* this run's followers send chunk arrays */
    load_plan plan;               /* this run's plan (followers: with their slice) */
    int n_load_ranks, load_index;
    int end_code;                 /* followers: the exit code rank 0 ended the job with */
    bool root_ended;              /* followers: rank 0 ended the job (CTRL_END) */
    bool stop_received;           /* followers: rank 0 stopped this run (for a sampler: its end) */
    bool stop_traced;
    msg_progress last_prog;       /* followers: the counters heartbeats repeat */
    bool stop_sent;
    int32_t run_seq;              /* numbers the runs, so a late stop cannot end the next one */
    bool samplers_stopped;
    bool lost_any;                /* some rank was lost: finalize aborts */
    bool root_lost;               /* followers: rank 0 went silent */
    bool between_runs;            /* followers: waiting for rank 0's next run (it may be busy writing) */
    pending_send *sends;          /* Isends not yet complete */
};

/* With DSPERF_DIST_TRACE set in the environment: one stderr line per step of the job, with the
 * rank and its monotonic time (for finding where a job spends its time; off by default). */
void dist_trace(const dist *d, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* ---- messaging (dist.c) ---- */
/* Posts a nonblocking send of a copy of buf (any size: pieces of at most 64 MiB). 0 ok. */
int dist_post(dist *d, int dest, int tag, const void *buf, size_t len);
/* Frees the sends that completed. */
void dist_reap(dist *d);
/* Whether a message with tag from src (MPI_ANY_SOURCE: -1) waits; its source in *src. */
bool dist_probe(dist *d, int src, int tag, int *from);
/* Receives the waiting message (after dist_probe said so), pieces reassembled. 0 ok; -1 when it
 * did not arrive by deadline_ns. *buf is malloc'd (free it); *len its length. */
int dist_recv(dist *d, int src, int tag, void **buf, size_t *len, int64_t deadline_ns);
/* Waits for a message with tag from src until deadline_ns; -1 on timeout. While waiting, a
 * follower heartbeats and answers rank 0's clock requests; rank 0 heartbeats followers. */
int dist_wait(dist *d, int src, int tag, int *from, int64_t deadline_ns);
/* How long a follower waits for rank 0 to speak before it gives the job up. */
int64_t dist_root_timeout_ns(const dist *d);
/* Heartbeats when one is due (every 1 s): followers send their last counters, rank 0 a CTRL. */
void dist_heartbeat(dist *d);
/* Rank 0: marks rank r lost with why (once). */
void dist_mark_lost(dist *d, int r, const char *why);
/* Rank 0: stops every rank's run (once per run). */
void dist_send_stop(dist *d);
/* Followers: handles a waiting CTRL (heartbeat, stop, collect, end); returns its kind or 0. */
int dist_take_ctrl(dist *d, msg_ctrl *c);

/* ---- clock (dist_clock.c) ---- */
/* Rank 0: measures follower r's clock now (it must be waiting in dist_wait). 0 ok, -1 lost. */
int dist_clock_measure(dist *d, int r, bool end_of_run);
/* Followers: answers one measurement (after TAG_SYNC arrived). 0 ok. */
int dist_clock_answer(dist *d);
/* Followers: the offset that moves a timestamp t of this rank onto rank 0's clock (the start
 * estimate, or the line through both estimates when the drift is larger than their errors). */
int64_t dist_offset_at(const dist *d, int64_t t_ns);

/* ---- wire format (dist_pack.c) ---- */
typedef struct { unsigned char *p; size_t n, cap; int oom; } dist_buf;
void dbuf_put(dist_buf *b, const void *v, size_t len);
void dbuf_i64(dist_buf *b, int64_t v);
void dbuf_str(dist_buf *b, const char *s);        /* NULL allowed */
typedef struct { const unsigned char *p; size_t n, off; int bad; } dist_rd;
void drd_get(dist_rd *r, void *v, size_t len);
int64_t drd_i64(dist_rd *r);
char *drd_str(dist_rd *r);                         /* malloc'd, or NULL for a NULL string */

/* Records (timestamps moved by offset_ns(t) of each record, evaluated at its first timestamp),
 * optionally with their chunk arrays; error texts are kept (cut at 256 bytes). */
void dist_pack_records(dist_buf *b, const recset *recs, bool chunks);
/* Appends the records read from r to out. 0 ok, -1 malformed or out of memory. */
int dist_unpack_records(dist_rd *r, recset *out);
/* A histogram as its non-empty buckets. */
void dist_pack_hist(dist_buf *b, const hdr_hist *h);
/* Adds the histogram read from r into h (merge). 0 ok, -1 malformed. */
int dist_unpack_hist_merge(dist_rd *r, hdr_hist *h);
/* Moves every timestamp of recs onto rank 0's clock (one offset per record). */
void dist_shift_records(recset *recs, const dist *d);

/* ---- the job-level sections of a merged result (dist_merge.c) ---- */
json_t *dist_client_merge(const dist *d, const json_t *own);
json_t *dist_section(const dist *d, const dist_merged *m);
void dist_telemetry_merge(dist *d, dist_merged *m, const dist_local *loc);
#endif
