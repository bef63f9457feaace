/* server — the HTTP/SSE layer of `dsperf serve` (see server.h and README.md here).
 *
 * One libevent loop per thread (--threads; each with its own listening socket on the port,
 * SO_REUSEPORT, and its own engine; /metrics sums them). A request becomes a `stream` submitted to the engine with the
 * stream's address as its id; one timer is kept armed at the engine's next event time, and when
 * it fires the engine is advanced to now and every event is written to its connection at once
 * (evhttp_send_reply_chunk). Faults are decided per request, in arrival order, from one seeded
 * rng. Cancels the server decides on inside an advance are deferred until the advance returns,
 * so an engine never sees a call into itself from its own emit callback. */
#include "server/server.h"
#include "common/version.h"
#include "server/server_oai.h"
#include "server/server_metrics.h"
#include "server/server_log.h"
#include "server/server_hash.h"
#include "engine/sim.h"
#include "common/clock.h"
#include "common/rng.h"
#include "common/fdlimit.h"
#include <event2/event.h>
#include <event2/http.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <netdb.h>
#include <time.h>
#include <sys/socket.h>
#include <sys/eventfd.h>
#include <netinet/in.h>
#include <netinet/tcp.h>

enum { FAULT_NONE, FAULT_DROP, FAULT_STALL, FAULT_ERROR_EVENT };

typedef struct worker worker;

typedef struct stream {
    worker *srv;
    struct evhttp_request *req;     /* NULL once the response is complete or the connection gone */
    struct evhttp_connection *evcon;
    oai_request rq;
    oai_ident ident;
    bool in_engine;                 /* submitted, not finished, not cancelled */
    bool dropping;                  /* the server is closing this connection on purpose */
    bool deferred;                  /* on the after-advance list */
    bool free_when_cancelled;       /* nothing else refers to it once the engine lets go */
    int fault;                      /* FAULT_* */
    int32_t fault_at;               /* tokens sent before the drop / error event / stall */
    bool stall_counted;
    int32_t sent;                   /* tokens emitted so far */
    int32_t steps;                  /* token events after the first (decode steps) */
    int64_t arrival_ns, sched_ns, first_ns, last_ns;   /* engine time */
    int64_t last_write_wall_ns;     /* when something was last written to the client */
    struct stream *prev, *next;     /* all streams, for shutdown */
    struct stream *deferred_next;
    bool flush_pending;             /* on the flush list of the current advance */
    struct stream *flush_next;
} stream;

/* One event loop: its own listening socket (SO_REUSEPORT when there are several), engine,
 * streams, fault rng and metrics. Nothing in it is touched by another thread except `m` and the
 * engine's stats, read by another worker's /metrics under `lock` (taken only when threads > 1). */
struct worker {
    server *top;
    int index;                      /* 0..threads-1; worker 0 runs in server_run's thread */
    server_params p;
    const char *model, *model_json; /* the server's */
    engine *eng;
    struct event_base *base;
    struct evhttp *http;
    struct event *timer, *stop_ev, *sweep_ev;
    int64_t loop_wall_ns;           /* wall clock at the start of the current timer callback */
    int stop_fd, listen_fd;
    int64_t armed_ns;               /* engine time the timer is armed for (ENGINE_NEVER: not armed) */
    int64_t t0_ns;                  /* wall = engine at start; engine = t0 + (wall - t0) * speedup */
    rng fault_rng;
    rng reasoning_rng;              /* --reasoning-tokens draws (apart, so faults keep their sequence) */
    uint64_t seq;
    srv_metrics m;
    stream *streams;
    stream *sweep_at;               /* where the next sweep resumes (NULL: from the start) */
    int64_t sweep_budget_ns;        /* SWEEP_BUDGET_NS (DSPERF_SERVE_SWEEP_BUDGET_NS, for the tests) */
    stream *deferred;               /* cancels and frees to do after the current advance */
    stream *flush_list;             /* streams written to during the current advance */
    bool in_advance;
    int64_t advance_now;            /* engine time the current advance was called with */
    int64_t iter_t, iter_tokens;    /* tokens of the engine step being reported (same t_ns) */
    struct evbuffer *buf;           /* scratch for one chunk */
    bool locking;                   /* threads > 1 */
    pthread_mutex_t lock;           /* recursive: close callbacks can run inside a timer callback */
    pthread_t thread;
    bool thread_started;
};

struct server {
    server_params p;
    char *model, *model_json;
    int port, n;
    atomic_ulong completed;          /* responses completed, over every loop (--exit-after) */
    worker **w;
    struct event *dur_ev, *sig_int, *sig_term;   /* on worker 0's loop */
    prompt_log *plog;                /* --log-prompts */
};

/* Every libevent callback that changes a worker's metrics or engine holds its lock, so another
 * worker's /metrics reads a consistent copy. A worker never holds its own lock while taking
 * another's (the /metrics path takes none of its own), so there is no lock-order cycle. */
static void wlock(worker *s) { if (s->locking) pthread_mutex_lock(&s->lock); }
static void wunlock(worker *s) { if (s->locking) pthread_mutex_unlock(&s->lock); }

void server_default_params(server_params *p) {
    memset(p, 0, sizeof *p);
    p->host = "127.0.0.1";
    p->port = 0;
    p->backlog = 65535;
    p->model = "deepseek-ai/DeepSeek-V2-Lite";
    p->speedup = 1.0;
    p->default_max_tokens = 256;
    p->seed = 1;
    p->threads = 1;
    p->max_body_bytes = 4 << 20;   /* a 160k-token prompt is ~1 MB of JSON */
    p->stall_ns = 2 * NS_PER_S;
    p->error_style = SERVER_ERROR_STYLE_LLAMACPP;
    fixed_lm_default(&p->lm);
}

/* ---- clocks ---- */

static int64_t engine_at(const worker *s, int64_t wall_ns) {
    if (s->p.speedup == 1.0) return wall_ns;
    return s->t0_ns + (int64_t)((double)(wall_ns - s->t0_ns) * s->p.speedup);
}

static int64_t engine_now(const worker *s) { return engine_at(s, clock_now_ns()); }


static double secs(const worker *s, int64_t engine_ns) { (void)s; return (double)engine_ns / 1e9; }

static void arm_timer(worker *s) {
    int64_t next = engine_next_event_ns(s->eng);
    if (next == ENGINE_NEVER) {
        if (s->armed_ns != ENGINE_NEVER) evtimer_del(s->timer);
        s->armed_ns = ENGINE_NEVER;
        return;
    }
    if (next == s->armed_ns && evtimer_pending(s->timer, NULL)) return;
    int64_t delay = next - engine_now(s);
    if (s->p.speedup != 1.0) delay = (int64_t)((double)delay / s->p.speedup);
    if (delay < 0) delay = 0;
    struct timeval tv = { .tv_sec = delay / NS_PER_S, .tv_usec = (delay % NS_PER_S) / 1000 };
    evtimer_add(s->timer, &tv);
    s->armed_ns = next;
}

/* ---- responses ---- */

static void count_status(worker *s, int status) {
    if (status >= 100 && status < 600) s->m.http_status[status]++;
}

static void reply(worker *s, struct evhttp_request *req, int status, const char *ctype, struct evbuffer *body) {
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", ctype);
    count_status(s, status);
    evhttp_send_reply(req, status, NULL, body);
}

static void reply_error(worker *s, struct evhttp_request *req, int status, const char *msg) {
    struct evbuffer *b = evbuffer_new();
    oai_error_body(b, status, msg);
    reply(s, req, status, "application/json", b);
    evbuffer_free(b);
}

/* ---- closing a connection without resetting it ----
 *
 * evhttp closes a connection on its own after some answers. A chunked body over --max-body is the
 * one that matters: evhttp answers 413 as soon as a chunk's size takes the body over the cap, and
 * closes with the rest of the body unread (EVHTTP_SERVER_LINGERING_CLOSE drains only a body whose
 * Content-Length is over the cap). close() on a socket with unread data, or data arriving after
 * it, makes the kernel reset the connection: a client still sending gets EPIPE/ECONNRESET, often
 * before it has read the 413 (curl: "Failed sending data to the peer"). libevent 2.1 has no hook
 * on a request before its body is read (evhttp_set_newreqcb came in 2.2), so the drain is done at
 * the socket: when evhttp frees a connection the client has not closed, its close callback keeps
 * the socket open through a duplicate descriptor, ends our side after the answer (FIN), and reads
 * and drops whatever the client still sends until it closes its side. Nothing read is kept.
 *
 * Bounds: while evhttp reads a body (a chunked one under the cap, or a Content-Length one it drains
 * itself), its timeout (evhttp_set_timeout, 600 s without a byte) bounds a client that stalls; one
 * that keeps sending is evhttp's to refuse at the cap. After the close the linger bounds it: it
 * ends after LINGER_IDLE_S without a byte or LINGER_MAX_NS in all, so a body that never ends costs
 * a descriptor for at most LINGER_MAX_NS and its bandwidth, never memory. */
#define LINGER_IDLE_S 5                 /* a client that has stopped sending has had its answer and FIN */
#define LINGER_MAX_NS (60 * NS_PER_S)   /* a client still sending after this is reset after all */

typedef struct lingering {
    struct event *ev;                   /* EV_READ|EV_PERSIST on fd, with the idle timeout */
    int fd;                             /* our duplicate of the connection's socket */
    int64_t until_ns;                   /* wall clock */
} lingering;

static void linger_end(lingering *l) {
    event_free(l->ev);
    close(l->fd);
    free(l);
}

static void linger_read(evutil_socket_t fd, short what, void *arg) {
    lingering *l = arg;
    char drop[16384];
    if (what & EV_TIMEOUT) { linger_end(l); return; }
    /* at most 1 MiB a wake-up, so a fast sender does not starve the loop's other connections */
    for (int i = 0; i < 64; i++) {
        ssize_t n = recv(fd, drop, sizeof drop, MSG_DONTWAIT);
        if (n > 0) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR)) break;
        linger_end(l);                  /* the client closed (or reset) its side: done */
        return;
    }
    if (clock_now_ns() >= l->until_ns) linger_end(l);
}

/* evhttp is freeing evcon; afterwards it shuts down and closes its descriptor. */
static void on_close_linger(struct evhttp_connection *evcon, void *arg) {
    (void)arg;
    struct bufferevent *bev = evhttp_connection_get_bufferevent(evcon);
    int fd = bev ? bufferevent_getfd(bev) : -1;
    char c;
    ssize_t peeked = fd >= 0 ? recv(fd, &c, 1, MSG_PEEK | MSG_DONTWAIT) : 0;
    if (peeked == 0 || (peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK)) return;   /* closed first, or gone */
    lingering *l = calloc(1, sizeof *l);
    struct timeval idle = { .tv_sec = LINGER_IDLE_S };
    if (!l || (l->fd = fcntl(fd, F_DUPFD_CLOEXEC, 0)) < 0) { free(l); return; }   /* a plain close, as before */
    l->until_ns = clock_now_ns() + LINGER_MAX_NS;
    l->ev = event_new(evhttp_connection_get_base(evcon), l->fd, EV_READ | EV_PERSIST, linger_read, l);
    if (!l->ev || event_add(l->ev, &idle) < 0) {
        if (l->ev) event_free(l->ev);
        close(l->fd);
        free(l);
        return;
    }
    shutdown(l->fd, SHUT_WR);   /* evhttp frees after its answer is written (or with none): end it */
}

/* The first bytes of a connection: evhttp has set it up (evhttp_get_request sets the bufferevent's
 * callbacks before it returns to the loop), so its close callback can be set now, before any
 * request is read. libevent 2.1 offers no public way to reach a connection before its first
 * request is complete; its evhttp passes the connection as the bufferevent's callback argument
 * (http.c, bufferevent_setcb(..., evcon)). That internal is checked as far as it can be here, and
 * pinned by server_body_refused_chunked_is_drained, which fails without this callback. */
static void on_first_input(struct evbuffer *in, const struct evbuffer_cb_info *info, void *arg) {
    struct bufferevent *bev = arg;
    void *cbarg = NULL;
    bufferevent_event_cb eventcb = NULL;
    (void)info;
    bufferevent_getcb(bev, NULL, NULL, &eventcb, &cbarg);
    struct evhttp_connection *evcon = cbarg;
    if (eventcb && evcon && evhttp_connection_get_bufferevent(evcon) == bev)
        evhttp_connection_set_closecb(evcon, on_close_linger, NULL);
    evbuffer_remove_cb(in, on_first_input, bev);   /* once a connection (safe inside the callback) */
}

/* evhttp_set_bevcb: the bufferevent evhttp would make itself, watched for its first input. */
static struct bufferevent *new_conn_bufferevent(struct event_base *base, void *arg) {
    (void)arg;
    struct bufferevent *bev = bufferevent_socket_new(base, -1, BEV_OPT_CLOSE_ON_FREE);
    if (bev) evbuffer_add_cb(bufferevent_get_input(bev), on_first_input, bev);
    return bev;
}

static int find_lingering(const struct event_base *base, const struct event *ev, void *arg) {
    (void)base;
    if (event_get_callback(ev) != linger_read) return 0;
    *(lingering **)arg = event_get_callback_arg(ev);
    return 1;   /* stop: it is ended outside the walk, which may not remove events */
}

/* At shutdown, after evhttp_free (whose close callbacks may have started some). */
static void linger_end_all(struct event_base *base) {
    for (;;) {
        lingering *l = NULL;
        event_base_foreach_event(base, find_lingering, &l);
        if (!l) return;
        linger_end(l);
    }
}

/* ---- stream lifetime ---- */

static void stream_unlink_free(stream *st) {
    worker *s = st->srv;
    if (st->prev) st->prev->next = st->next; else s->streams = st->next;
    if (st->next) st->next->prev = st->prev;
    if (s->sweep_at == st) s->sweep_at = st->next;
    s->m.streams_open--;
    oai_request_free(&st->rq);
    free(st);
}

/* Leaves the engine (now, or after the current advance) and frees the stream if free_now. */
static void stream_retire(stream *st, bool free_now) {
    worker *s = st->srv;
    st->free_when_cancelled = st->free_when_cancelled || free_now;
    if (s->in_advance) {
        if (!st->deferred) {
            st->deferred = true;
            st->deferred_next = s->deferred;
            s->deferred = st;
        }
        return;
    }
    if (st->in_engine) {
        st->in_engine = false;
        engine_cancel(s->eng, (uint64_t)(uintptr_t)st, engine_now(s));
        arm_timer(s);                      /* a cancel can let a waiting request in */
    }
    if (st->free_when_cancelled) stream_unlink_free(st);
}

static void run_deferred(worker *s) {
    while (s->deferred) {
        stream *st = s->deferred;
        s->deferred = st->deferred_next;
        st->deferred = false;
        stream_retire(st, false);
    }
}

/* The connection is going away: the client closed it, the server dropped it, or shutdown. */
static void on_conn_close(struct evhttp_connection *evcon, void *arg) {
    stream *st = arg;
    worker *s = st->srv;
    (void)evcon;
    wlock(s);
    if (st->req && !evhttp_request_get_connection(st->req))
        evhttp_send_reply_end(st->req);    /* evhttp detached it from the dying connection: free it */
    st->req = NULL;
    st->evcon = NULL;
    if (st->in_engine && !st->dropping) {
        s->m.client_disconnects++;
        s->m.success[SRV_FINISH_ABORT]++;
    }
    stream_retire(st, true);
    wunlock(s);
}

/* Ends a response normally: the connection is kept alive for the next request. */
static void stream_complete(stream *st) {
    if (st->evcon) evhttp_connection_set_closecb(st->evcon, on_close_linger, NULL);   /* the connection's own again */
    st->req = NULL;
    st->evcon = NULL;
    server *top = st->srv->top;
    stream_retire(st, true);
    if (top->p.exit_after && atomic_fetch_add(&top->completed, 1) + 1 == top->p.exit_after) server_stop(top);
}

static void send_chunk(stream *st, void (*flushed)(struct evhttp_connection *, void *)) {
    worker *s = st->srv;
    st->last_write_wall_ns = s->loop_wall_ns;
    if (flushed) {
        evhttp_send_reply_chunk_with_cb(st->req, s->buf, flushed, st);
    } else {
        evhttp_send_reply_chunk(st->req, s->buf);
        if (s->in_advance && !st->flush_pending) {
            st->flush_pending = true;
            st->flush_next = s->flush_list;
            s->flush_list = st;
        }
    }
    evbuffer_drain(s->buf, evbuffer_get_length(s->buf));
}

/* After an advance, each stream written to gets one write() with all its chunks of this turn,
 * instead of an epoll round trip per connection. When everything went out, the write interest
 * evhttp enabled is withdrawn in the same turn, which the epoll changelist turns into no syscall.
 * Partial writes and errors are left to the bufferevent as usual. Streams whose response ended
 * in this turn are left to evhttp (it needs its write callback to finish the request). */
static void flush_written(worker *s) {
    while (s->flush_list) {
        stream *st = s->flush_list;
        s->flush_list = st->flush_next;
        st->flush_pending = false;
        struct bufferevent *bev = st->evcon && st->req ? evhttp_connection_get_bufferevent(st->evcon) : NULL;
        if (!bev || st->dropping) continue;
        struct evbuffer *out = bufferevent_get_output(bev);
        if (evbuffer_write(out, bufferevent_getfd(bev)) >= 0 && evbuffer_get_length(out) == 0)
            bufferevent_disable(bev, EV_WRITE);
    }
}

static void drop_flushed(struct evhttp_connection *evcon, void *arg) {
    stream *st = arg;
    worker *s = st->srv;
    wlock(s);
    evhttp_connection_free(evcon);     /* on_conn_close frees the stream */
    wunlock(s);
}

/* ---- faults ---- */

static void inject_drop(stream *st) {
    worker *s = st->srv;
    s->m.faults[SRV_FAULT_DROP]++;
    s->m.success[SRV_FINISH_ABORT]++;
    st->dropping = true;
    stream_retire(st, false);          /* leave the engine; the close callback frees */
    if (st->rq.stream && evbuffer_get_length(s->buf)) {
        send_chunk(st, drop_flushed);  /* close once what was sent has reached the socket */
    } else {
        evbuffer_drain(s->buf, evbuffer_get_length(s->buf));
        evhttp_connection_free(st->evcon);
    }
}

static void inject_error_event(stream *st) {
    worker *s = st->srv;
    s->m.faults[SRV_FAULT_ERROR_EVENT]++;
    s->m.success[SRV_FINISH_ABORT]++;
    const char *msg = "injected error event (dsperf serve --error-event-rate)";
    if (st->rq.stream) {
        oai_sse_error(s->buf, s->p.error_style == SERVER_ERROR_STYLE_OPENAI, msg);
        send_chunk(st, NULL);
        evhttp_send_reply_end(st->req);
    } else {
        reply_error(s, st->req, 500, msg);
    }
    stream_complete(st);
}

/* ---- engine events ---- */

static void flush_iteration(worker *s) {
    if (s->iter_tokens > 0) srv_hist_observe(&s->m.iteration_tokens, (double)s->iter_tokens);
    s->iter_tokens = 0;
}

static void finish(stream *st, const engine_event *ev) {
    worker *s = st->srv;
    if (!st->req) return;
    const char *reason = ev->finish_reason ? ev->finish_reason : "length";
    st->in_engine = false;
    srv_hist_observe(&s->m.e2e_s, secs(s, ev->t_ns - st->arrival_ns));
    srv_hist_observe(&s->m.decode_s, secs(s, ev->t_ns - st->first_ns));
    s->m.success[strcmp(reason, "stop") ? SRV_FINISH_LENGTH : SRV_FINISH_STOP]++;
    if (st->rq.stream) {
        if (st->rq.include_usage && s->p.per_request_metrics) {
            /* vLLM's per-request metrics in the engine's own times, as wall ms */
            double ms = 1e-6 / (s->p.speedup > 0 ? s->p.speedup : 1);
            int64_t sched = st->sched_ns ? st->sched_ns : st->arrival_ns;
            oai_metrics m = { (double)(sched - st->arrival_ns) * ms, (double)(st->first_ns - sched) * ms,
                              (double)(ev->t_ns - st->first_ns) * ms, st->steps };
            oai_sse_usage_metrics(s->buf, &st->ident, st->rq.prompt_tokens, st->sent, st->rq.cached_tokens,
                                  st->rq.reasoning_tokens, &m);
        } else if (st->rq.include_usage) {
            oai_sse_usage(s->buf, &st->ident, st->rq.prompt_tokens, st->sent, st->rq.cached_tokens,
                          st->rq.reasoning_tokens);
        }
        oai_sse_done(s->buf);
        send_chunk(st, NULL);
        evhttp_send_reply_end(st->req);
        /* The last token and [DONE] go out now (they are what a client times); evhttp writes the
         * 5-byte terminating chunk from its write callback, which it needs to finish the request. */
        struct bufferevent *bev = st->evcon ? evhttp_connection_get_bufferevent(st->evcon) : NULL;
        struct evbuffer *out = bev ? bufferevent_get_output(bev) : NULL;
        if (out && evbuffer_get_length(out) > 5)
            evbuffer_write_atmost(out, bufferevent_getfd(bev), (ev_ssize_t)(evbuffer_get_length(out) - 5));
    } else {
        oai_body(s->buf, &st->ident, &st->rq, st->sent, reason, st->rq.prompt_tokens);
        reply(s, st->req, 200, "application/json", s->buf);
        evbuffer_drain(s->buf, evbuffer_get_length(s->buf));
    }
    stream_complete(st);
}

static void on_event(void *ctx, const engine_event *ev) {
    worker *s = ctx;
    stream *st = (stream *)(uintptr_t)ev->id;
    if (!st->req || !st->in_engine || st->dropping) return;     /* already answered or being dropped */
    if (ev->t_ns != s->iter_t) { flush_iteration(s); s->iter_t = ev->t_ns; }
    if (ev->flags & ENGINE_EV_SCHEDULED) {
        st->sched_ns = ev->t_ns;
        srv_hist_observe(&s->m.queue_s, secs(s, ev->t_ns - st->arrival_ns));
    }
    if (!(ev->flags & ENGINE_EV_TOKENS) || ev->n_tokens <= 0) {
        if (ev->flags & ENGINE_EV_FINISHED) finish(st, ev);
        return;
    }
    bool fin = ev->flags & ENGINE_EV_FINISHED;
    if (ev->flags & ENGINE_EV_FIRST) {
        st->first_ns = ev->t_ns;
        if (ev->flags & ENGINE_EV_CACHED) st->rq.cached_tokens = ev->cached_tokens;
        srv_hist_observe(&s->m.ttft_s, secs(s, ev->t_ns - st->arrival_ns));
        srv_hist_observe(&s->m.prefill_s, secs(s, ev->t_ns - st->sched_ns));
        s->m.prompt_tokens += (uint64_t)st->rq.prompt_tokens;
        s->iter_tokens += st->rq.prompt_tokens;
        if (st->rq.stream && st->rq.api == OAI_CHAT) oai_sse_role(s->buf, &st->ident);
    } else {
        srv_hist_observe(&s->m.itl_s, secs(s, ev->t_ns - st->last_ns));
        st->steps++;
        s->m.spec_steps++;
        s->m.spec_accepted += (uint64_t)(ev->n_tokens - 1);
    }
    st->last_ns = ev->t_ns;
    srv_hist_observe(&s->m.lateness_s, (double)(s->advance_now - ev->t_ns) / 1e9 / s->p.speedup);
    if (fin) st->in_engine = false;            /* the engine has let go of it */
    s->m.generation_tokens += (uint64_t)ev->n_tokens;
    s->iter_tokens += ev->n_tokens;
    if (st->fault == FAULT_STALL && !st->stall_counted && st->sent >= st->fault_at) {
        st->stall_counted = true;
        s->m.faults[SRV_FAULT_STALL]++;
    }
    if (st->rq.stream)
        oai_sse_tokens(s->buf, &st->ident, &st->rq, st->sent, ev->n_tokens, fin ? (ev->finish_reason ? ev->finish_reason : "length") : NULL);
    st->sent += ev->n_tokens;
    if (st->fault == FAULT_DROP && st->sent >= st->fault_at) { inject_drop(st); return; }
    if (st->rq.stream) send_chunk(st, NULL);
    if (st->fault == FAULT_ERROR_EVENT && st->sent >= st->fault_at) { inject_error_event(st); return; }
    if (fin) finish(st, ev);
}

static void on_timer(evutil_socket_t fd, short what, void *arg) {
    worker *s = arg;
    (void)fd; (void)what;
    wlock(s);
    s->armed_ns = ENGINE_NEVER;
    s->in_advance = true;
    s->iter_t = INT64_MIN;
    s->loop_wall_ns = clock_now_ns();
    s->advance_now = engine_now(s);
    engine_advance(s->eng, s->advance_now, on_event, s);
    flush_iteration(s);
    flush_written(s);
    s->in_advance = false;
    run_deferred(s);
    arm_timer(s);
    wunlock(s);
}

/* ---- requests ---- */

/* Draws every fault decision for one request, always the same number of draws, so the faults
 * injected over N requests depend only on the seed and the arrival order. Returns an HTTP
 * status to answer with (500/429) or 0, and sets st->fault. */
static int decide_faults(worker *s, stream *st) {
    double u500 = rng_uniform(&s->fault_rng), u429 = rng_uniform(&s->fault_rng);
    double udrop = rng_uniform(&s->fault_rng), uerr = rng_uniform(&s->fault_rng);
    double ustall = rng_uniform(&s->fault_rng), upoint = rng_uniform(&s->fault_rng);
    int32_t mt = st->rq.max_tokens;
    /* mid-stream: after 1..max-1 tokens (after the only token when max is 1) */
    st->fault_at = mt >= 2 ? 1 + (int32_t)(upoint * (double)(mt - 1)) : 1;
    if (u500 < s->p.fail_rate) return 500;
    if (u429 < s->p.status_429_rate) return 429;
    if (udrop < s->p.drop_rate) st->fault = FAULT_DROP;
    else if (uerr < s->p.error_event_rate) st->fault = FAULT_ERROR_EVENT;
    else if (ustall < s->p.stall_rate && s->p.stall_ns > 0) st->fault = FAULT_STALL;
    return 0;
}

static void handle_generate(worker *s, struct evhttp_request *req, int api) {
    struct evbuffer *in = evhttp_request_get_input_buffer(req);
    size_t len = evbuffer_get_length(in);
    const char *body = (const char *)evbuffer_pullup(in, -1);
    stream *st = calloc(1, sizeof *st);
    char err[256];
    int bad_status = 400;
    s->m.generate_requests++;
    if (!st) { reply_error(s, req, 500, "out of memory"); return; }
    if (oai_parse_request(api, body ? body : "", len, s->p.default_max_tokens, &s->p.lm, s->p.logprobs_style,
                          &st->rq, &bad_status, err, sizeof err) < 0) {
        free(st);
        reply_error(s, req, bad_status, err);
        return;
    }
    if (st->rq.model[0] && strcmp(st->rq.model, s->model)) {
        snprintf(err, sizeof err, "The model `%.160s` does not exist.", st->rq.model);
        oai_request_free(&st->rq);
        free(st);
        reply_error(s, req, 404, err);
        return;
    }
    prompt_log_write(s->top->plog, s->index, clock_now_ns(), api == OAI_CHAT ? "/v1/chat/completions" : "/v1/completions",
                     st->rq.prompt_tokens, body ? body : "", len);
    int status = decide_faults(s, st);
    if (status) {
        s->m.faults[status == 500 ? SRV_FAULT_HTTP_500 : SRV_FAULT_HTTP_429]++;
        oai_request_free(&st->rq);
        free(st);
        reply_error(s, req, status, status == 500 ? "injected server error (dsperf serve --fail-rate)"
                                                  : "injected rate limit (dsperf serve --status-429-rate)");
        return;
    }
    st->srv = s;
    st->req = req;
    st->evcon = evhttp_request_get_connection(req);
    /* a reasoning phase: the first R words of a chat answer (R uniform in [min, max], at most
     * max_tokens); the token model's requests (temperature 0, logprobs) have none */
    if (api == OAI_CHAT && s->p.reasoning_max_tokens > 0 && !st->rq.lm.on) {
        int32_t lo = s->p.reasoning_min_tokens, hi = s->p.reasoning_max_tokens;
        int32_t r = lo + (int32_t)(rng_uniform(&s->reasoning_rng) * (double)(hi - lo + 1));
        if (r > hi) r = hi;
        st->rq.reasoning_tokens = r < st->rq.max_tokens ? r : st->rq.max_tokens;
    }
    st->ident = (oai_ident){ .api = api, .seq = (++s->seq - 1) * (uint64_t)s->top->n + (uint64_t)s->index + 1, .created = (int64_t)time(NULL), .model_json = s->model_json };
    /* arrival = when the request is handled, not the loop's wake-up: a burst read in one wake-up
     * would otherwise have every token of every stream due at the same instants, and the writes
     * of each instant serialised (measured: client-side median TTFT/E2EL several ms worse at 512) */
    st->arrival_ns = engine_now(s);
    engine_request er = {
        .id = (uint64_t)(uintptr_t)st,
        .prompt_tokens = st->rq.prompt_tokens,
        .max_tokens = st->rq.max_tokens,
        .ignore_eos = st->rq.ignore_eos,
        .stall_after = st->fault == FAULT_STALL ? st->fault_at : 0,
        .stall_ns = st->fault == FAULT_STALL ? (int64_t)((double)s->p.stall_ns * s->p.speedup) : 0,
    };
    /* an engine with a prefix cache sees the prompt's identity: its whole blocks' chained hashes,
     * continued over the words this server will generate (known in advance unless the token model
     * answers), so the answer's blocks are cached under the hashes the next turn's prompt has */
    uint64_t *hashes = NULL;
    int32_t out_words = st->rq.lm.on ? 0 : st->rq.max_tokens;
    if (s->p.prefix_block_tokens > 0 &&
        srv_sequence_hashes(api, body ? body : "", len, s->p.prefix_block_tokens, st->ident.seq, out_words, &hashes,
                            &er.n_block_hashes) == 0) {
        er.block_hashes = hashes;
        er.hash_block_tokens = s->p.prefix_block_tokens;
        er.hashed_tokens = st->rq.prompt_tokens + out_words;
    }
    int submitted = engine_submit(s->eng, &er, st->arrival_ns);
    free(hashes);   /* the engine reads them during submit only */
    if (submitted < 0) {
        /* like vLLM's answer to a prompt longer than the context: the request, not the server, is wrong */
        char msg[256];
        snprintf(msg, sizeof msg, "the engine rejected the request: %d prompt tokens + %d max_tokens do not fit "
                 "(longer than the model's context or the whole KV cache)", er.prompt_tokens, er.max_tokens);
        oai_request_free(&st->rq);
        free(st);
        reply_error(s, req, 400, msg);
        return;
    }
    st->in_engine = true;
    st->next = s->streams;
    if (s->streams) s->streams->prev = st;
    s->streams = st;
    s->m.streams_open++;
    evhttp_connection_set_closecb(st->evcon, on_conn_close, st);
    st->last_write_wall_ns = clock_now_ns();
    if (st->rq.stream) {
        struct evkeyvalq *h = evhttp_request_get_output_headers(req);
        evhttp_add_header(h, "Content-Type", "text/event-stream; charset=utf-8");
        evhttp_add_header(h, "Cache-Control", "no-cache");
        count_status(s, 200);
        evhttp_send_reply_start(req, 200, "OK");
    }
    if (!s->in_advance) arm_timer(s);
}

static void add_known(int64_t *a, int64_t b) { if (*a >= 0 && b >= 0) *a += b; else *a = -1; }

static void stats_add(engine_stats *a, const engine_stats *b) {
    add_known(&a->running, b->running);
    add_known(&a->waiting, b->waiting);
    add_known(&a->preemptions_total, b->preemptions_total);
    add_known(&a->prompt_tokens_total, b->prompt_tokens_total);
    add_known(&a->generation_tokens_total, b->generation_tokens_total);
    add_known(&a->steps_total, b->steps_total);
    if (a->kv_usage >= 0 && b->kv_usage >= 0) a->kv_usage += b->kv_usage; else a->kv_usage = -1;
}

/* Sums every worker's metrics and engine stats: this worker's directly (only its own thread
 * writes them), the others' under their locks. */
static void handle_metrics(worker *s, struct evhttp_request *req) {
    wlock(s);
    s->m.http_status[200]++;      /* counted before rendering so this scrape shows itself */
    wunlock(s);
    srv_metrics tot, one;
    engine_stats es_tot, es;
    srv_metrics_init(&tot);
    memset(&es_tot, 0, sizeof es_tot);
    int kv_n = 0;
    uint64_t *per_loop = calloc((size_t)s->top->n, sizeof *per_loop);
    int64_t pc_queries = 0, pc_hits = 0, kv_blocks = 0;
    bool pc_known = false;
    for (int i = 0; i < s->top->n; i++) {
        worker *w = s->top->w[i];
        if (w != s) wlock(w);
        one = w->m;
        if (per_loop) per_loop[i] = one.generate_requests;
        engine_get_stats(w->eng, &es);
        sim_info si;   /* the simulated engine's prefix cache and KV size, in vLLM's names */
        if (sim_get_info(w->eng, &si) == 0) kv_blocks += si.total_blocks;
        if (s->p.prefix_block_tokens > 0 && sim_get_info(w->eng, &si) == 0) {
            pc_known = true;
            pc_queries += si.prefix_query_tokens;
            pc_hits += si.prefix_hit_tokens;
        }
        if (w != s) wunlock(w);
        srv_metrics_add(&tot, &one);
        if (i == 0) es_tot = es;
        else stats_add(&es_tot, &es);
        if (es.kv_usage >= 0) kv_n++;
    }
    if (kv_n > 1 && es_tot.kv_usage >= 0) es_tot.kv_usage /= kv_n;   /* mean over the loops' engines */
    struct evbuffer *b = evbuffer_new();
    srv_metrics_render(&tot, &es_tot, s->model, b);
    if (per_loop) srv_metrics_render_loops(per_loop, s->top->n, b);
    if (pc_known) srv_metrics_render_prefix_cache(pc_queries, pc_hits, s->model, b);
    if (kv_blocks > 0 && s->p.kv_block_tokens > 0)
        srv_metrics_render_cache_config(s->p.kv_block_tokens, kv_blocks, s->p.prefix_block_tokens > 0,
                                        s->p.gpu_memory_utilization, s->p.num_gpu_blocks_override, b);
    free(per_loop);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, NULL, b);
    evbuffer_free(b);
}

static void handle_request(struct evhttp_request *req, void *arg) {
    worker *s = arg;
    const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
    const char *path = uri ? evhttp_uri_get_path(uri) : NULL;
    enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
    if (!path) path = "/";
    int api = !strcmp(path, "/v1/completions") ? OAI_COMPLETIONS : !strcmp(path, "/v1/chat/completions") ? OAI_CHAT : -1;
    bool get_path = !strcmp(path, "/v1/models") || !strcmp(path, "/health") || !strcmp(path, "/metrics") ||
                    !strcmp(path, "/version");
    if (api < 0 && !get_path) {
        char msg[300];
        snprintf(msg, sizeof msg, "no route for %.200s (try /v1/completions, /v1/chat/completions, /v1/models, /health, /metrics, /version)", path);
        wlock(s);
        reply_error(s, req, 404, msg);
        wunlock(s);
        return;
    }
    if ((api >= 0 && cmd != EVHTTP_REQ_POST) || (get_path && cmd != EVHTTP_REQ_GET)) {
        wlock(s);
        reply_error(s, req, 405, api >= 0 ? "use POST" : "use GET");
        wunlock(s);
        return;
    }
    if (!strcmp(path, "/metrics") && cmd == EVHTTP_REQ_GET) { handle_metrics(s, req); return; }
    wlock(s);
    if (api >= 0) { handle_generate(s, req, api); wunlock(s); return; }
    struct evbuffer *b = evbuffer_new();
    if (!strcmp(path, "/health")) {
        reply(s, req, 200, "application/json", b);
    } else if (!strcmp(path, "/v1/models")) {
        oai_models_body(b, s->model_json, (int64_t)time(NULL), s->p.models_meta_json);
        reply(s, req, 200, "application/json", b);
    } else if (!strcmp(path, "/version")) {
        /* as vLLM answers it, so a client can tell which build it measured */
        evbuffer_add_printf(b, "{\"version\":\"%s\"}", DSPERF_VERSION);
        reply(s, req, 200, "application/json", b);
    }
    evbuffer_free(b);
    wunlock(s);
}

/* Writes reveal a client that went away; a request with nothing to write for a while (waiting
 * in the queue, in a stall, or non-streaming) is checked by peeking at its socket instead. */
#define SWEEP_NS (100 * NS_PER_MS)       /* how often */
#define SWEEP_IDLE_NS (500 * NS_PER_MS) /* how long without a write before a stream is looked at */
/* The longest one sweep holds the loop; the next resumes where it stopped. A walk of every stream
 * with a recv peek of each idle one held it ~10-15 ms at 10,000 streams with a 4 s token gap (its
 * emissions due meanwhile were written that late: the server's lateness p99 25 ms at 10,000
 * streams, 1 s at 100,000 over 6 servers on the 2-core VM). At 100,000 streams a full pass then
 * takes a few sweeps: a closed client is still seen within about a second. */
#define SWEEP_BUDGET_NS (200 * NS_PER_US)

static void on_sweep(evutil_socket_t fd, short what, void *arg) {
    worker *s = arg;
    (void)fd; (void)what;
    int64_t now = clock_now_ns();
    stream *next;
    wlock(s);
    stream *st = s->sweep_at ? s->sweep_at : s->streams;
    for (unsigned k = 1; st; st = next, k++) {
        if (!(k & 63) && clock_now_ns() - now > s->sweep_budget_ns) break;   /* the rest next time */
        next = st->next;
        if (!st->evcon || st->dropping || now - st->last_write_wall_ns < SWEEP_IDLE_NS) continue;
        struct bufferevent *bev = evhttp_connection_get_bufferevent(st->evcon);
        int sfd = bev ? bufferevent_getfd(bev) : -1;
        char c;
        ssize_t r = sfd >= 0 ? recv(sfd, &c, 1, MSG_PEEK | MSG_DONTWAIT) : 1;
        if (r == 0 || (r < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR))
            evhttp_connection_free(st->evcon);     /* on_conn_close cancels and counts */
        else
            st->last_write_wall_ns = now;          /* alive: look again in SWEEP_IDLE_NS */
    }
    s->sweep_at = st;   /* NULL: the pass is complete, the next starts over */
    wunlock(s);
}

/* ---- setup and loop ---- */

static void on_stop(evutil_socket_t fd, short what, void *arg) {
    worker *s = arg;
    (void)what;
    uint64_t v;
    if (fd == s->stop_fd && read(fd, &v, sizeof v) < 0) { /* nothing to do: the loop stops anyway */ }
    event_base_loopbreak(s->base);
}

/* A signal or the duration, on worker 0's loop: every loop stops. */
static void on_stop_all(evutil_socket_t fd, short what, void *arg) {
    (void)fd; (void)what;
    server_stop(arg);
}

/* Binds `port` (0: a free one, stored in *bound). With several loops every loop has its own
 * socket on the same port (SO_REUSEPORT), and the kernel spreads connections over them. */
static int open_listener(const server_params *p, int port, bool reuseport, int *fd_out, int *bound, char *err, size_t errlen) {
    const char *host = p->host ? p->host : "127.0.0.1";
    struct addrinfo hints = { .ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE }, *ai;
    char port_s[16];
    snprintf(port_s, sizeof port_s, "%d", port);
    int rc = getaddrinfo(host, port_s, &hints, &ai);
    if (rc) { snprintf(err, errlen, "cannot resolve --host '%s': %s", host, gai_strerror(rc)); return -1; }
    int fd = socket(ai->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    int one = 1;
    if (fd >= 0) {
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
        if (reuseport) setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, sizeof one);
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);   /* inherited by accepted sockets */
    }
    if (fd < 0 || bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 || listen(fd, p->backlog) < 0) {
        snprintf(err, errlen, "cannot listen on %s port %d: %s", host, port, strerror(errno));
        if (fd >= 0) close(fd);
        freeaddrinfo(ai);
        return -1;
    }
    freeaddrinfo(ai);
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    getsockname(fd, (struct sockaddr *)&ss, &sl);
    *bound = ntohs(ss.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&ss)->sin6_port
                                            : ((struct sockaddr_in *)&ss)->sin_port);
    *fd_out = fd;
    return 0;
}

static void worker_free(worker *s) {
    if (!s) return;
    if (s->http) evhttp_free(s->http);    /* closes connections: on_conn_close cancels their requests */
    if (s->base) linger_end_all(s->base);
    while (s->streams) {                    /* anything left without a connection */
        stream *st = s->streams;
        st->free_when_cancelled = true;
        stream_retire(st, true);
    }
    if (s->timer) event_free(s->timer);
    if (s->sweep_ev) event_free(s->sweep_ev);
    if (s->stop_ev) event_free(s->stop_ev);
    if (s->stop_fd >= 0) close(s->stop_fd);
    if (s->listen_fd >= 0) close(s->listen_fd);
    if (s->buf) evbuffer_free(s->buf);
    if (s->base) event_base_free(s->base);
    if (s->locking) pthread_mutex_destroy(&s->lock);
    free(s);
}

static worker *worker_new(server *top, int index, engine *eng, char *err, size_t errlen) {
    worker *s = calloc(1, sizeof *s);
    if (!s) { snprintf(err, errlen, "out of memory"); return NULL; }
    s->top = top;
    s->index = index;
    s->p = top->p;
    s->model = top->model;
    s->model_json = top->model_json;
    s->eng = eng;
    s->stop_fd = s->listen_fd = -1;
    s->armed_ns = ENGINE_NEVER;
    s->t0_ns = top->w[0] ? top->w[0]->t0_ns : clock_now_ns();   /* one engine clock for all loops */
    rng_seed(&s->fault_rng, top->p.seed + (uint64_t)index);
    rng_seed(&s->reasoning_rng, (top->p.seed + (uint64_t)index) ^ 0x5265617330ULL);
    srv_metrics_init(&s->m);
    if (top->n > 1) {
        pthread_mutexattr_t a;
        pthread_mutexattr_init(&a);
        pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
        pthread_mutex_init(&s->lock, &a);
        pthread_mutexattr_destroy(&a);
        s->locking = true;
    }
    struct event_config *cfg = event_config_new();
    event_config_set_flag(cfg, EVENT_BASE_FLAG_PRECISE_TIMER);   /* timerfd: sub-ms timer precision */
    event_config_set_flag(cfg, EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST); /* enable+disable in one turn: no epoll_ctl */
    s->base = event_base_new_with_config(cfg);
    event_config_free(cfg);
    s->buf = evbuffer_new();
    if (!s->base || !s->buf) {
        snprintf(err, errlen, "cannot set up the event loop");
        worker_free(s);
        return NULL;
    }
    int bound;
    if (open_listener(&top->p, index ? top->port : top->p.port, top->n > 1, &s->listen_fd, &bound, err, errlen) < 0) {
        worker_free(s);
        return NULL;
    }
    if (index == 0) top->port = bound;
    s->p.host = NULL;
    s->http = evhttp_new(s->base);
    evhttp_set_allowed_methods(s->http, EVHTTP_REQ_GET | EVHTTP_REQ_POST | EVHTTP_REQ_HEAD | EVHTTP_REQ_PUT |
                                        EVHTTP_REQ_DELETE | EVHTTP_REQ_OPTIONS | EVHTTP_REQ_PATCH);
    /* A body over the cap is answered 413 by evhttp; with lingering close the rest of a
     * Content-Length body is read and dropped (not kept) first, so the client gets the 413 rather
     * than a connection reset. A chunked one is answered at once and drained after evhttp's close
     * (on_close_linger, set up through new_conn_bufferevent). */
    evhttp_set_max_body_size(s->http, (ev_ssize_t)top->p.max_body_bytes);
    evhttp_set_flags(s->http, EVHTTP_SERVER_LINGERING_CLOSE);
    evhttp_set_bevcb(s->http, new_conn_bufferevent, NULL);
    evhttp_set_timeout(s->http, 600);
    evhttp_set_gencb(s->http, handle_request, s);
    if (!evhttp_accept_socket_with_handle(s->http, s->listen_fd)) {
        snprintf(err, errlen, "evhttp cannot accept on the listening socket");
        worker_free(s);
        return NULL;
    }
    s->listen_fd = -1;   /* owned by evhttp now */
    s->timer = evtimer_new(s->base, on_timer, s);
    const char *sb = getenv("DSPERF_SERVE_SWEEP_BUDGET_NS");
    s->sweep_budget_ns = sb && *sb ? atoll(sb) : SWEEP_BUDGET_NS;
    s->sweep_ev = event_new(s->base, -1, EV_PERSIST, on_sweep, s);
    struct timeval sweep_tv = { .tv_sec = 0, .tv_usec = SWEEP_NS / 1000 };
    event_add(s->sweep_ev, &sweep_tv);
    s->stop_fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    s->stop_ev = event_new(s->base, s->stop_fd, EV_READ | EV_PERSIST, on_stop, s);
    event_add(s->stop_ev, NULL);
    return s;
}

int server_start(server **out, const server_params *p, engine *const *engines, char *err, size_t errlen) {
    *out = NULL;
    if (p->speedup <= 0) { snprintf(err, errlen, "speedup must be > 0"); return -1; }
    int n = p->threads > 0 ? p->threads : 1;
    fd_limit_prepare();     /* before the loops' threads exist: see common/fdlimit.h */
    server *s = calloc(1, sizeof *s);
    worker **w = calloc((size_t)n, sizeof *w);
    if (!s || !w) { free(s); free(w); snprintf(err, errlen, "out of memory"); return -1; }
    s->p = *p;
    s->n = n;
    s->w = w;
    s->model = strdup(p->model);
    json_t *mj = json_string(p->model);
    s->model_json = mj ? json_dumps(mj, JSON_ENCODE_ANY) : NULL;
    json_decref(mj);
    if (!s->model || !s->model_json) { snprintf(err, errlen, "out of memory"); server_free(s); return -1; }
    s->p.model = s->model;
    if (p->log_prompts && !(s->plog = prompt_log_open(p->log_prompts, err, errlen))) { server_free(s); return -1; }
    for (int i = 0; i < n; i++) {
        if (!(s->w[i] = worker_new(s, i, engines[i], err, errlen))) { server_free(s); return -1; }
    }
    s->p.host = NULL;   /* the caller's string; not needed after binding */
    worker *w0 = s->w[0];
    if (p->duration_ns > 0) {
        s->dur_ev = evtimer_new(w0->base, on_stop_all, s);
        struct timeval tv = { .tv_sec = p->duration_ns / NS_PER_S, .tv_usec = (p->duration_ns % NS_PER_S) / 1000 };
        evtimer_add(s->dur_ev, &tv);
    }
    if (p->handle_signals) {
        s->sig_int = evsignal_new(w0->base, SIGINT, on_stop_all, s);
        s->sig_term = evsignal_new(w0->base, SIGTERM, on_stop_all, s);
        event_add(s->sig_int, NULL);
        event_add(s->sig_term, NULL);
    }
    *out = s;
    return 0;
}

int server_port(const server *s) { return s->port; }

static void *worker_main(void *arg) {
    worker *s = arg;
    event_base_dispatch(s->base);
    return NULL;
}

int server_run(server *s) {
    for (int i = 1; i < s->n; i++)
        s->w[i]->thread_started = pthread_create(&s->w[i]->thread, NULL, worker_main, s->w[i]) == 0;
    event_base_dispatch(s->w[0]->base);
    server_stop(s);                         /* worker 0 stopped: so do the others */
    for (int i = 1; i < s->n; i++) {
        if (s->w[i]->thread_started) pthread_join(s->w[i]->thread, NULL);
        s->w[i]->thread_started = false;
    }
    return 0;
}

void server_stop(server *s) {
    uint64_t one = 1;
    for (int i = 0; s && i < s->n; i++)
        if (s->w[i] && s->w[i]->stop_fd >= 0 && write(s->w[i]->stop_fd, &one, sizeof one) < 0) { /* already signalled */ }
}

void server_free(server *s) {
    if (!s) return;
    if (s->dur_ev) event_free(s->dur_ev);
    if (s->sig_int) event_free(s->sig_int);
    if (s->sig_term) event_free(s->sig_term);
    for (int i = 0; i < s->n; i++) worker_free(s->w[i]);
    prompt_log_close(s->plog);
    free(s->w);
    free(s->model);
    free(s->model_json);
    free(s);
}
