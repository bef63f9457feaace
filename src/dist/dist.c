/* dist — MPI start and end, deadline-bounded messaging, joining the job, announcing runs (see
 * dist.h). Every wait here polls nonblocking operations against a deadline: an MPI call that
 * blocks on a dead peer would hold the job forever. */
#include "dist/dist_int.h"
#include "common/clock.h"
#include "common/log.h"
#include "dist/mpi_load.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define PIECE_MAX ((size_t)64 << 20)   /* MPI counts are int: big parts go in pieces */
#define HEARTBEAT_NS NS_PER_S

static const mpi_api *M;   /* libmpi, loaded by dist_init */

struct pending_send {
    MPI_Request req;
    void *buf;
    pending_send *next;
};

/* ---- detection and start ---- */

static const char *const launcher_vars[] = { "OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", NULL };

bool dist_launched(void) {
    for (const char *const *v = launcher_vars; *v; v++)
        if (getenv(*v)) return true;
    return false;
}

int dist_env_rank(void) {
    static const char *const rank_vars[] = { "OM->comm_world_RANK", "PMIX_RANK", "PMI_RANK", NULL };
    if (!dist_launched()) return -1;
    for (const char *const *v = rank_vars; *v; v++)
        if (getenv(*v)) return atoi(getenv(*v));
    return 0;
}

void dist_default_opts(dist_opts *o) {
    memset(o, 0, sizeof *o);
    o->rank_timeout_ns = 30 * NS_PER_S;
}

static void nap(void) {
    struct timespec ts = { 0, 50000 };   /* 50 us: a waiting rank leaves the cores to the load */
    nanosleep(&ts, NULL);
}

dist *dist_init(const dist_opts *o, char *err, size_t errlen) {
    /* MPI carries only this job's control messages; the cores belong to the client threads. Open
     * MPI spins in its progress loop unless it thinks a node is oversubscribed, and a spinning
     * rank delays the very packets it waits for: on 2 cores a TCP round trip between two hosts
     * took 0.8-12 ms spinning, 55 us yielding. A setting the user made is kept. */
    setenv("OMPI_MCA_mpi_yield_when_idle", "1", 0);
    if (!(M = mpi_api_load(err, errlen))) return NULL;
    int provided = 0, rc = M->init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Init_thread failed (code %d): is this Open MPI's mpirun / srun --mpi=pmix?", rc);
        return NULL;
    }
    /* errors come back as codes; the default handler would abort the whole job */
    M->comm_set_errhandler(M->comm_world, M->errors_return);
    dist *d = calloc(1, sizeof *d);
    if (!d) { snprintf(err, errlen, "out of memory"); return NULL; }
    d->o = *o;
    if (d->o.rank_timeout_ns <= 0) d->o.rank_timeout_ns = 30 * NS_PER_S;
    M->comm_rank(M->comm_world, &d->rank);
    M->comm_size(M->comm_world, &d->size);
    if (gethostname(d->host, sizeof d->host - 1) != 0) snprintf(d->host, sizeof d->host, "unknown");
    d->root_heard_ns = clock_now_ns();
    if (d->rank > 0) {
        char p[96];
        snprintf(p, sizeof p, "rank %d (%s): ", d->rank, d->host);
        log_set_prefix(p);
        log_set_quiet(1);      /* rank 0 speaks for the job */
    }
    if (d->rank == 0) {
        d->ri = calloc((size_t)d->size, sizeof *d->ri);
        if (!d->ri) { free(d); snprintf(err, errlen, "out of memory"); return NULL; }
    }
    return d;
}

int dist_rank(const dist *d) { return d->rank; }
int dist_size(const dist *d) { return d->size; }
bool dist_is_root(const dist *d) { return d->rank == 0; }
bool dist_samples_only(const dist *d) { return d->samples_only; }
bool dist_node_leader(const dist *d) { return d->leader; }

/* Rank 0 may itself wait a rank timeout on a lost rank before it speaks again: followers give it
 * twice as long. Between runs it computes and writes the results without speaking (for millions
 * of requests that takes minutes; README, "Beyond one machine"): ten times as long. */
int64_t dist_root_timeout_ns(const dist *d) { return (d->between_runs ? 10 : 2) * d->o.rank_timeout_ns; }

bool dist_telemetry_opts(const dist *d, telemetry_opts *o) {
    if (!d->leader) { o->gpus = NULL; o->host = false; }
    if (d->rank != 0) { o->server_metrics_url = NULL; o->server_pid = 0; }
    return o->gpus || o->host || o->server_metrics_url;
}

void dist_trace(const dist *d, const char *fmt, ...) {
    static int on = -1;
    static FILE *out;
    if (on < 0) {
        const char *t = getenv("DSPERF_DIST_TRACE");
        on = t != NULL;
        /* a path: there (mpirun stops forwarding the ranks' stderr while it aborts a job) */
        out = t && *t == '/' ? fopen(t, "a") : stderr;
        if (!out) out = stderr;
    }
    if (!on) return;
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    fprintf(out, "[dist rank %d %.3f s] %s\n", d->rank, clock_now_ns() / 1e9, line);
    fflush(out);
}

/* ---- messaging ---- */

static int post_piece(dist *d, int dest, int tag, void *buf, size_t len) {
    pending_send *ps = malloc(sizeof *ps);
    if (!ps) return -1;
    ps->buf = buf;
    if (M->isend(buf, (int)len, M->byte, dest, tag, M->comm_world, &ps->req) != MPI_SUCCESS) {
        free(ps);
        return -1;
    }
    ps->next = d->sends;
    d->sends = ps;
    return 0;
}

/* A message is [u64 total length][first bytes]; what does not fit the first piece follows in
 * further pieces of the same tag (MPI keeps their order between two ranks). */
int dist_post(dist *d, int dest, int tag, const void *buf, size_t len) {
    dist_reap(d);
    size_t first = len < PIECE_MAX ? len : PIECE_MAX;
    unsigned char *m = malloc(8 + first);
    if (!m) return -1;
    uint64_t total = len;
    memcpy(m, &total, 8);
    if (first) memcpy(m + 8, buf, first);
    if (post_piece(d, dest, tag, m, 8 + first) < 0) { free(m); return -1; }
    for (size_t off = first; off < len; off += PIECE_MAX) {
        size_t n = len - off < PIECE_MAX ? len - off : PIECE_MAX;
        void *p = malloc(n);
        if (!p) return -1;
        memcpy(p, (const unsigned char *)buf + off, n);
        if (post_piece(d, dest, tag, p, n) < 0) { free(p); return -1; }
    }
    return 0;
}

void dist_reap(dist *d) {
    for (pending_send **pp = &d->sends; *pp;) {
        int done = 0;
        if (M->test(&(*pp)->req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) done = 1;   /* failed: drop it */
        if (!done) { pp = &(*pp)->next; continue; }
        pending_send *f = *pp;
        *pp = f->next;
        free(f->buf);
        free(f);
    }
}

bool dist_probe(dist *d, int src, int tag, int *from) {
    int flag = 0;
    MPI_Status st;
    if (M->iprobe(src < 0 ? MPI_ANY_SOURCE : src, tag, M->comm_world, &flag, &st) != MPI_SUCCESS || !flag) return false;
    if (from) *from = st.MPI_SOURCE;
    (void)d;
    return true;
}

/* Receives one piece from src into a buffer of its size. */
static int recv_piece(int src, int tag, void **buf, size_t *len, int64_t deadline_ns) {
    MPI_Status st;
    int flag = 0;
    while (!flag) {
        if (M->iprobe(src, tag, M->comm_world, &flag, &st) != MPI_SUCCESS) return -1;
        if (!flag) { if (clock_now_ns() > deadline_ns) return -1; nap(); }
    }
    int count = 0;
    M->get_count(&st, M->byte, &count);
    void *b = malloc(count > 0 ? (size_t)count : 1);
    if (!b) return -1;
    MPI_Request rq;
    if (M->irecv(b, count, M->byte, src, tag, M->comm_world, &rq) != MPI_SUCCESS) { free(b); return -1; }
    for (int done = 0; !done;) {
        if (M->test(&rq, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) { free(b); return -1; }
        if (!done && clock_now_ns() > deadline_ns) {
            /* the sender stopped mid-message: leave the request, it cannot be cancelled safely */
            M->request_free(&rq);
            return -2;   /* b stays owned by the abandoned request */
        }
    }
    *buf = b;
    *len = (size_t)count;
    return 0;
}

int dist_recv(dist *d, int src, int tag, void **buf, size_t *len, int64_t deadline_ns) {
    void *first;
    size_t n;
    *buf = NULL;
    *len = 0;
    if (recv_piece(src, tag, &first, &n, deadline_ns) != 0 || n < 8) return -1;
    uint64_t total;
    memcpy(&total, first, 8);
    unsigned char *out = malloc(total ? total : 1);
    if (!out) { free(first); return -1; }
    size_t have = n - 8 < total ? n - 8 : total;
    memcpy(out, (unsigned char *)first + 8, have);
    free(first);
    while (have < total) {
        void *p;
        size_t k;
        if (recv_piece(src, tag, &p, &k, deadline_ns) != 0) { free(out); return -1; }
        if (k > total - have) k = total - have;
        memcpy(out + have, p, k);
        have += k;
        free(p);
    }
    if (d->rank == 0 && d->ri) d->ri[src].heard_ns = clock_now_ns();
    if (src == 0) d->root_heard_ns = clock_now_ns();
    *buf = out;
    *len = total;
    return 0;
}

void dist_mark_lost(dist *d, int r, const char *why) {
    rank_info *ri = &d->ri[r];
    if (ri->stage == RS_LOST) return;
    ri->stage = RS_LOST;
    ri->lost = true;
    d->lost_any = true;
    snprintf(ri->why, sizeof ri->why, "%s", why);
    log_warn("rank %d (%s) lost: %s", r, ri->host, why);
}

void dist_heartbeat(dist *d) {
    int64_t now = clock_now_ns();
    dist_reap(d);
    if (now - d->hb_sent_ns < HEARTBEAT_NS) return;
    d->hb_sent_ns = now;
    if (d->rank == 0) {
        msg_ctrl c = { CTRL_HEARTBEAT, 0 };
        for (int r = 1; r < d->size; r++)
            if (d->ri[r].stage != RS_LOST) dist_post(d, r, TAG_CTRL, &c, sizeof c);
    } else {
        msg_progress pr = d->last_prog;
        pr.final = 1;     /* a waiting follower's run is over (or not begun) */
        dist_post(d, 0, TAG_PROGRESS, &pr, sizeof pr);
    }
}

int dist_take_ctrl(dist *d, msg_ctrl *c) {
    if (!dist_probe(d, 0, TAG_CTRL, NULL)) return 0;
    void *b;
    size_t n;
    if (dist_recv(d, 0, TAG_CTRL, &b, &n, clock_now_ns() + d->o.rank_timeout_ns) != 0) return 0;
    int kind = 0;
    if (n == sizeof *c) { memcpy(c, b, sizeof *c); kind = c->kind; }
    free(b);
    return kind;
}

int dist_wait(dist *d, int src, int tag, int *from, int64_t deadline_ns) {
    for (;;) {
        if (dist_probe(d, src, tag, from)) return 0;
        if (d->rank > 0) {
            if (dist_probe(d, 0, TAG_SYNC, NULL) && dist_clock_answer(d) != 0) return -1;
            if (tag != TAG_CTRL) {
                msg_ctrl c;
                int k = dist_take_ctrl(d, &c);
                if (k == CTRL_END) { d->end_code = c.code; return -2; }
            }
            if (clock_now_ns() - d->root_heard_ns > dist_root_timeout_ns(d)) { d->root_lost = true; return -1; }
        }
        dist_heartbeat(d);
        if (clock_now_ns() > deadline_ns) return -1;
        nap();
    }
}

/* ---- joining ---- */

typedef struct {
    int32_t status, pid, cpus;
    char host[64];
    char why[400];
} msg_hello;

typedef struct {
    int32_t code;            /* EXIT_OK: go; else the job ends with it */
    int32_t samples_only, leader, load_index, n_load;
} msg_welcome;

static bool host_listed(const char *list, const char *host) {
    if (!list) return false;
    size_t hl = strcspn(host, ".");   /* "gpu1" also matches gpu1.cluster.local */
    for (const char *p = list; *p;) {
        size_t n = strcspn(p, ",");
        if ((n == strlen(host) && !strncmp(p, host, n)) || (n == hl && !strncmp(p, host, n))) return true;
        p += n;
        if (*p == ',') p++;
    }
    return false;
}

static int join_follower(dist *d, int status, const char *why) {
    msg_hello h = { status, (int32_t)getpid(), (int32_t)sysconf(_SC_NPROCESSORS_ONLN), "", "" };
    snprintf(h.host, sizeof h.host, "%s", d->host);
    snprintf(h.why, sizeof h.why, "%s", why ? why : "");
    if (dist_post(d, 0, TAG_HELLO, &h, sizeof h) != 0) return EXIT_RUN_FAILED;
    int64_t deadline = clock_now_ns() + 4 * d->o.rank_timeout_ns;
    d->root_heard_ns = clock_now_ns() + 3 * d->o.rank_timeout_ns;   /* rank 0 may still be preparing */
    void *b;
    size_t n;
    if (dist_wait(d, 0, TAG_WELCOME, NULL, deadline) != 0 || dist_recv(d, 0, TAG_WELCOME, &b, &n, deadline) != 0) {
        log_error("rank 0 did not answer within %.0f s of joining", 4 * d->o.rank_timeout_ns / 1e9);
        d->root_lost = true;
        return EXIT_RUN_FAILED;
    }
    msg_welcome w = { EXIT_RUN_FAILED, 0, 0, 0, 0 };
    if (n == sizeof w) memcpy(&w, b, sizeof w);
    free(b);
    d->samples_only = w.samples_only;
    d->leader = w.leader;
    d->load_index = w.load_index;
    d->n_load_ranks = w.n_load;
    return w.code;
}

/* Rank 0: roles from the hosts (the lowest rank of a host leads it; --gpu-nodes only sample). */
static int assign_roles(dist *d) {
    int n_load = 0;
    for (int r = 0; r < d->size; r++) {
        rank_info *ri = &d->ri[r];
        ri->leader = true;
        for (int q = 0; q < r; q++)
            if (!strcmp(d->ri[q].host, ri->host)) { ri->leader = false; break; }
        ri->samples_only = host_listed(d->o.gpu_nodes, ri->host);
        ri->load_index = ri->samples_only ? -1 : n_load++;
    }
    /* Ctrl-C: mpirun sends SIGTERM, then SIGKILL after odls_base_sigkill_timeout (1 s unless set;
     * mpirun passes --mca settings to its ranks as OMPI_MCA_ variables) */
    if (getenv("OMPI_COMM_WORLD_SIZE") && !getenv("OMPI_MCA_odls_base_sigkill_timeout"))
        log_info("mpirun kills ranks 1 s after a Ctrl-C (or a lost rank); to keep a partial result on a busy "
                 "or large job, give them time: mpirun --mca odls_base_sigkill_timeout 5 ...");
    if (d->ri[0].samples_only) {
        log_error("rank 0 runs on %s, one of --gpu-nodes: rank 0 leads the job and sends load; put a client host first "
                  "in the hostfile", d->ri[0].host);
        return EXIT_USAGE;
    }
    d->n_load_ranks = n_load;
    d->leader = d->ri[0].leader;
    return EXIT_OK;
}

static int join_root(dist *d, int status, const char *why) {
    rank_info *me = &d->ri[0];
    snprintf(me->host, sizeof me->host, "%s", d->host);
    me->pid = (int)getpid();
    me->cpus = (int)sysconf(_SC_NPROCESSORS_ONLN);
    me->heard_ns = clock_now_ns();
    int code = status;
    if (status != EXIT_OK && why && *why) log_error("%s", why);
    int64_t deadline = clock_now_ns() + 4 * d->o.rank_timeout_ns;
    int joined = 1;
    for (int r = 1; r < d->size; r++) d->ri[r].stage = RS_RUNNING;
    while (joined < d->size) {
        int from;
        if (dist_wait(d, -1, TAG_HELLO, &from, deadline) != 0) break;
        void *b;
        size_t n;
        if (dist_recv(d, from, TAG_HELLO, &b, &n, deadline) != 0) break;
        msg_hello h;
        memset(&h, 0, sizeof h);
        if (n == sizeof h) memcpy(&h, b, sizeof h);
        free(b);
        h.host[sizeof h.host - 1] = h.why[sizeof h.why - 1] = 0;
        rank_info *ri = &d->ri[from];
        snprintf(ri->host, sizeof ri->host, "%s", h.host);
        ri->pid = h.pid;
        ri->cpus = h.cpus;
        joined++;
        if (h.status != EXIT_OK) {
            log_error("rank %d (%s): %s", from, h.host, h.why[0] ? h.why : "preparation failed");
            if (code == EXIT_OK || h.status == EXIT_USAGE) code = h.status;
        }
    }
    for (int r = 1; r < d->size; r++)
        if (!d->ri[r].host[0]) {
            char w[160];
            snprintf(w, sizeof w, "did not join within %.0f s", 4 * d->o.rank_timeout_ns / 1e9);
            dist_mark_lost(d, r, w);
            if (code == EXIT_OK) code = EXIT_RUN_FAILED;
        }
    if (code == EXIT_OK) code = assign_roles(d);
    for (int r = 1; r < d->size; r++) {
        if (d->ri[r].stage == RS_LOST) continue;
        msg_welcome w = { code, d->ri[r].samples_only, d->ri[r].leader, d->ri[r].load_index, d->n_load_ranks };
        dist_post(d, r, TAG_WELCOME, &w, sizeof w);
    }
    if (code != EXIT_OK) return code;
    /* every clock against rank 0's, one rank after another; a rank lost here leaves the job
     * before its first run (the others run the whole plan) */
    for (int r = 1; r < d->size; r++)
        if (dist_clock_measure(d, r, false) != 0) dist_mark_lost(d, r, "did not answer the clock measurement before the run");
    return EXIT_OK;
}

int dist_join(dist *d, int status, const char *why) {
    return d->rank == 0 ? join_root(d, status, why) : join_follower(d, status, why);
}

/* ---- runs ---- */

typedef struct {
    int32_t concurrency, max_concurrency, client_threads, trace, want_chunks, n_load, seq;
    arrival arr;
    uint64_t requests, warmup, seed;
    int64_t duration_ns, think_ns, grace_ns, progress_interval_ns;
} msg_run;

typedef struct { int32_t threads; } msg_ready;
typedef struct { int32_t shard_base, shard_total; int64_t start_ns; } msg_go;

/* The client threads a load rank runs: the auto rule (or --client-threads) over its share of
 * the plan. A rank whose share of the users (or of the --max-concurrency slots) is zero runs no
 * shard this time and waits, as a telemetry-only rank does (a synchronous run: one user). */
static int threads_for(const load_plan *p, int load_index, int n_load) {
    if (load_index < 0 || n_load <= 0) return 0;
    load_plan q = *p;
    size_t k = (size_t)load_index, w = (size_t)n_load;
#define SHARE(n) ((n) / w + (k < (n) % w))
    if (p->concurrency && !(q.concurrency = (int)SHARE((size_t)p->concurrency))) return 0;
    if (p->max_concurrency && !(q.max_concurrency = (int)SHARE((size_t)p->max_concurrency))) return 0;
#undef SHARE
    q.arr.rate_per_s = p->arr.rate_per_s / n_load;
    q.shard_total = 0;
    return load_client_threads(&q, p->client_threads);
}

int dist_run_begin(dist *d, load_plan *p, bool want_chunks, char *err, size_t errlen) {
    (void)err; (void)errlen;
    d->run_seq++;
    msg_run m = { p->concurrency, p->max_concurrency, p->client_threads, p->trace, want_chunks, d->n_load_ranks,
                  d->run_seq, p->arr, p->requests, p->warmup, p->seed, p->duration_ns, p->think_ns, p->grace_ns,
                  p->progress_interval_ns };
    d->want_chunks = want_chunks;
    d->stop_sent = false;
    d->samplers_stopped = false;
    for (int r = 1; r < d->size; r++) {
        rank_info *ri = &d->ri[r];
        if (ri->stage == RS_LOST) continue;
        ri->stage = RS_RUNNING;
        ri->records = ri->bytes = 0;
        /* the last run's closing clock measurement opens this one */
        if (ri->clk_end_at_ns) { ri->clk = ri->clk_end; ri->clk_at_ns = ri->clk_end_at_ns; ri->clk_end_at_ns = 0; }
        ri->threads = 0;
        memset(&ri->prog, 0, sizeof ri->prog);
        dist_post(d, r, TAG_RUN, &m, sizeof m);
    }
    /* followers answer with their thread counts; a silent one is lost and gets no shards */
    for (int r = 1; r < d->size; r++) {
        rank_info *ri = &d->ri[r];
        if (ri->stage == RS_LOST) continue;
        int64_t deadline = clock_now_ns() + d->o.rank_timeout_ns;
        void *b;
        size_t n;
        if (dist_wait(d, r, TAG_READY, NULL, deadline) != 0 || dist_recv(d, r, TAG_READY, &b, &n, deadline) != 0) {
            dist_mark_lost(d, r, "did not take the run's plan");
            continue;
        }
        msg_ready rd = { 0 };
        if (n == sizeof rd) memcpy(&rd, b, sizeof rd);
        free(b);
        ri->threads = rd.threads;
    }
    d->ri[0].threads = threads_for(p, 0, d->n_load_ranks);
    int total = 0;
    for (int r = 0; r < d->size; r++) {
        d->ri[r].shard_base = total;
        if (d->ri[r].stage != RS_LOST || r == 0) total += d->ri[r].threads;
    }
    /* far enough ahead that every rank has the start before it comes */
    int64_t rtt = 0;
    for (int r = 1; r < d->size; r++) if (d->ri[r].clk.rtt_min_ns > rtt) rtt = d->ri[r].clk.rtt_min_ns;
    int64_t start = clock_now_ns() + 100 * NS_PER_MS + 20 * rtt;
    for (int r = 1; r < d->size; r++) {
        if (d->ri[r].stage == RS_LOST) continue;
        msg_go g = { d->ri[r].shard_base, total, start };
        dist_post(d, r, TAG_GO, &g, sizeof g);
        d->ri[r].heard_ns = clock_now_ns();
    }
    p->shard_base = 0;
    p->shard_total = total;
    p->client_threads = d->ri[0].threads;
    p->start_ns = start;
    d->plan = *p;
    return 0;
}

/* Followers: the next message with tag from rank 0, of exactly len bytes, into out. 0 ok; -2 the
 * job ended (CTRL_END); -1 rank 0 is lost (said in one line, with `what` it failed to do). */
static int from_root(dist *d, int tag, void *out, size_t len, int64_t deadline_ns, const char *what) {
    void *b = NULL;
    size_t n = 0;
    int rc = dist_wait(d, 0, tag, NULL, deadline_ns);
    if (rc == -2) return -2;
    if (rc != 0 || dist_recv(d, 0, tag, &b, &n, clock_now_ns() + d->o.rank_timeout_ns) != 0 || n != len) {
        free(b);
        log_error("rank 0 (the job's lead) sent %s (waited up to %.0f s): this rank ends", what, dist_root_timeout_ns(d) / 1e9);
        d->root_lost = true;
        return -1;
    }
    memcpy(out, b, len);
    free(b);
    return 0;
}

int dist_run_wait(dist *d, load_plan *p, int *exit_code) {
    *exit_code = EXIT_RUN_FAILED;
    if (d->root_lost) return 0;
    msg_run m;
    d->between_runs = true;
    int rc = from_root(d, TAG_RUN, &m, sizeof m, INT64_MAX, "neither a next run nor the end");
    d->between_runs = false;
    if (rc == -2) { *exit_code = d->end_code; return 0; }
    if (rc != 0) return 0;
    p->concurrency = m.concurrency;
    p->max_concurrency = m.max_concurrency;
    p->client_threads = m.client_threads;
    p->trace = m.trace;
    p->arr = m.arr;
    p->requests = m.requests;
    p->warmup = m.warmup;
    p->seed = m.seed;
    p->duration_ns = m.duration_ns;
    p->think_ns = m.think_ns;
    p->grace_ns = m.grace_ns;
    p->progress_interval_ns = m.progress_interval_ns;
    d->want_chunks = m.want_chunks;
    d->run_seq = m.seq;
    d->stop_received = false;
    memset(&d->last_prog, 0, sizeof d->last_prog);
    if (d->clk_end_at_ns) { d->clk = d->clk_end; d->clk_at_ns = d->clk_end_at_ns; d->clk_end_at_ns = 0; }
    msg_ready rd = { d->samples_only ? 0 : threads_for(p, d->load_index, m.n_load) };
    dist_post(d, 0, TAG_READY, &rd, sizeof rd);
    msg_go g;
    if (from_root(d, TAG_GO, &g, sizeof g, clock_now_ns() + d->o.rank_timeout_ns, "no start time for the run") != 0) return 0;
    p->shard_base = g.shard_base;
    p->shard_total = g.shard_total;
    p->client_threads = rd.threads;
    /* rank 0's start on this clock */
    p->start_ns = g.start_ns - d->clk.offset_ns;
    d->plan = *p;
    return 1;
}

void dist_end(dist *d, int exit_code) {
    if (d->rank != 0) return;
    msg_ctrl c = { CTRL_END, exit_code };
    for (int r = 1; r < d->size; r++)
        if (d->ri[r].stage != RS_LOST) dist_post(d, r, TAG_CTRL, &c, sizeof c);
}

void dist_finalize(dist *d, int exit_code) {
    if (!d) return;
    /* let the last messages go (END to every follower), within a deadline */
    int64_t deadline = clock_now_ns() + 2 * NS_PER_S;
    while (d->sends && clock_now_ns() < deadline) { dist_reap(d); if (d->sends) nap(); }
    bool whole = !d->lost_any && !d->root_lost && !d->sends;
    if (!whole) {
        /* MPI_Finalize waits for every rank; a hung one would hold the job: end it instead */
        fflush(stdout);
        fflush(stderr);
        M->abort(M->comm_world, exit_code ? exit_code : EXIT_RUN_FAILED);
    }
    while (d->sends) { pending_send *f = d->sends; d->sends = f->next; free(f->buf); free(f); }
    if (d->ri)
        for (int r = 0; r < d->size; r++) {
            json_decref(d->ri[r].client);
            json_decref(d->ri[r].tel_series);
            json_decref(d->ri[r].tel_summary);
        }
    free(d->ri);
    free(d);
    M->finalize();
}
