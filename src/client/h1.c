/* h1 — see h1.h. One thread owns a client: its sockets in one level-triggered epoll, the request
 * timeouts folded into the epoll timeout (ns, epoll_pwait2). Each readable socket is read once per
 * wake-up (a read is one kernel stamp); a wake-up that finds several is read in one io_uring call.
 * Response bytes go through the framing (chunked / length / close) into the SSE parser and the
 * OpenAI chunk interpreter, stamped with the kernel's receive time of the read. */
#include "client/h1.h"
#include "client/outcome.h"
#include "common/http.h"
#include "client/sse.h"
#include "client/rxstamp.h"
#include "client/rxbatch.h"
#include "common/clock.h"
#include "common/redact.h"
#include "common/log.h"
#include <curl/curl.h>
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>
#include <errno.h>
#include <time.h>
#include <sys/prctl.h>

#define ERROR_BODY_MAX 8192
#define SSE_EVENT_MAX (4u << 20)
#define HEAD_MAX (64u << 10)     /* a status line and headers longer than this: not a server we speak to */
#define READ_BUF 16384           /* one read: as much as libcurl read at once (CURL_MAX_WRITE_SIZE) */
#define MAX_ADDRS 8
/* Requests started per turn of the loop, with a look at the sockets in between (client.c's
 * SEND_BATCH says why: a closed loop whose streams end together resubmits hundreds at once). */
#define SEND_BATCH 4
/* Events one epoll wait takes. A wait that fills them all leaves more sockets ready: no gathering
 * window follows it (else a client with more ready sockets than this would read only this many per
 * window, fall behind, and let a stream's chunks merge into one read). */
#define EVENTS_MAX 1024
/* The gathering window (client README "Gathering reads"): at most GATHER_DEFAULT_US, under half
 * the 10th percentile of a stream's read gap and under 1/100 of the requests' duration. */
#define GATHER_DEFAULT_US 5000
#define GATHER_EPOCH_NS (250 * NS_PER_MS)
#define GATHER_MIN_SAMPLES 32
/* How far ahead of its send time a request may be handed over and prepared (h1_submit_at): its
 * bytes built and its connection taken or opened, so that at the instant only the send is left.
 * Preparing 1,024 requests that each open a connection took ~50 ms on the loaded 2-core VM (about
 * 5 system calls per connection at tens of µs each under that load): twice that. */
#define ARM_DEFAULT_US 100000
#define ARM_APPROACH_NS (1 * NS_PER_MS)
/* The last stretch before an armed instant is spun, not slept (client README "Bursts"): a sleep
 * ends when the host wakes the thread (tens of µs late on the 2-core VM, and differently late on
 * each of several client threads), a spin on the monotonic clock within a clock read of the instant,
 * so threads releasing one burst all start sending within ~1 µs of it. The sleep before the spin
 * ends SPIN_NS early: twice the latest wake-ups' lateness seen by this client (the last
 * SPIN_HIST), SPIN_MIN_NS to SPIN_MAX_NS, SPIN_START_NS before any is seen; DSPERF_CLIENT_SPIN_US
 * sets it (0: no spin, the instant is slept to as before). Spinning is bounded to SPIN_BUDGET of
 * the client's time (an open loop of thousands of arrivals a second would otherwise spin all the
 * time): past it the instant is slept to. */
#define SPIN_START_NS (200 * NS_PER_US)
#define SPIN_MIN_NS (20 * NS_PER_US)
#define SPIN_MAX_NS ARM_APPROACH_NS
#define SPIN_HIST 8
#define SPIN_BUDGET 50          /* 1/50: 2% of a core */

/* X_ARMED: prepared for a send time still ahead (its connection, if any, up and idle) */
typedef enum { X_PENDING, X_ARMED, X_CONNECTING, X_SENDING, X_HEAD, X_BODY } xstate;
typedef enum { B_CLOSE, B_LENGTH, B_CHUNKED } bframe;
typedef enum { C_SIZE, C_EXT, C_SIZE_LF, C_DATA, C_DATA_CR, C_DATA_LF, C_TRAILER, C_DONE } cstate;

typedef struct xfer {
    struct h1 *c;
    size_t rec;
    xstate ph;
    int fd;
    int addr_i;                 /* the address being connected to */
    char *req;                  /* the request bytes (head + body), kept until the response starts */
    size_t req_len, req_off;
    bool reused;                /* on an idle connection: an early close is retried once */
    bool retried;
    bool fresh;                 /* this transfer opened its connection */
    bool armed;                 /* waiting for at_ns (h1_submit_at): a connection that comes up is parked */
    bool rearmed;               /* its parked connection was closed once and opened again */
    int64_t at_ns;              /* when it is to be sent (armed) */
    int64_t connect_start_ns, connect_ns, deadline_ns;
    /* the response */
    char *head;                 /* status line and headers as they come (freed once parsed) */
    size_t head_len, head_cap;
    int status;
    bool is_sse, keep_alive;
    bframe frame;
    int64_t body_left;          /* B_LENGTH: bytes still to come */
    cstate cs;
    uint64_t chunk_left;
    int size_digits;
    bool trailer_empty;
    bool got_body, read_counted;
    sse_parser sse;
    openai_stream st;
    char *errbody;
    size_t errlen;
    int64_t read_ns;            /* when the bytes being parsed arrived */
    int64_t read_stamp_ns;      /* the current read's kernel stamp (0 none) */
    struct xfer *pending_next;
    struct xfer *arm_next;      /* the armed list, by at_ns */
    struct xfer *prev, *next;
} xfer;

/* ev: the events epoll watches on the socket now (a change of none is not a system call) */
typedef struct { struct xfer *x; bool idle; int batch_i; uint32_t ev; } fdslot;

struct h1 {
    client_opts o;
    recset *recs;
    client_done_fn done;
    void *ctx;
    int epfd;
    struct sockaddr_storage addrs[MAX_ADDRS];
    socklen_t addr_lens[MAX_ADDRS];
    int n_addrs, addr_pref;
    int n_local;                /* DSPERF_CLIENT_LOCAL_ADDRS: spread the source over 127.0.0.1..N */
    unsigned local_next;
    char *head;                 /* the request head every request shares (up to Content-Length) */
    size_t head_len;
    size_t in_flight;
    xfer *live, *pending_head, *pending_tail;
    xfer *arm_head, *arm_tail;  /* prepared for a send time ahead, earliest first */
    size_t n_armed;
    int64_t arm_lead_ns;        /* how far ahead requests are prepared (0: only what is due) */
    fdslot *slots;
    int slots_cap;
    int *idle;                  /* idle keep-alive connections (a stack: the warmest is reused first) */
    size_t n_idle, idle_cap, max_idle;
    int finished_now;
    int64_t next_deadline_ns;   /* the earliest request timeout; INT64_MAX none */
    bool rxstamp;
    int64_t gather_max_ns, last_wake_ns;
    int sockets_sending;
    bool last_wait_full;        /* the last epoll wait returned EVENTS_MAX events */
    int64_t spin_ns;            /* how long before an armed instant the spin starts; 0 none */
    bool spin_fixed;            /* DSPERF_CLIENT_SPIN_US set it */
    int64_t wake_late[SPIN_HIST];   /* the last wake-ups' lateness (a ring) */
    unsigned wake_late_i;
    int64_t spun_total_ns, born_ns;
    int64_t waited_at_ns, released_at_ns;   /* the last instant arm_wait waited for; the last released */
    uint32_t gap_hist[64], dur_hist[64];
    int64_t gap_floor_ns, dur_floor_ns, epoch_end_ns;
    uint32_t reads_stamped, reads_unstamped;
    bool stamps_flow;
    rxbatch *batch;
    int batch_min;              /* a wake-up's reads are batched from this many ready sockets (rxbatch.h) */
    rxbatch_res bres[RXBATCH_MAX];
    int bfds[RXBATCH_MAX];
    xfer *bx[RXBATCH_MAX];
    struct epoll_event evs[EVENTS_MAX];
    char rbuf[READ_BUF];
};

static __thread h1_counts counts;
h1_counts h1_thread_counts(void) { return counts; }

/* ---- which URLs ---- */

/* libcurl's proxy variables for http:// (it reads http_proxy lowercase only, and all_proxy either way) */
static bool proxy_set(void) {
    const char *v[] = { "http_proxy", "all_proxy", "ALL_PROXY" };
    for (size_t i = 0; i < sizeof v / sizeof *v; i++) { const char *s = getenv(v[i]); if (s && *s) return true; }
    return false;
}

const char *h1_why_not(const char *url) {
    const char *p = getenv("DSPERF_CLIENT_PATH");
    if (p && !strcmp(p, "curl")) return "DSPERF_CLIENT_PATH=curl";
    if (strncasecmp(url, "http://", 7)) return "TLS (https)";
    if (proxy_set()) return "a proxy (http_proxy / all_proxy)";
    const char *a = url + 7, *e = a + strcspn(a, "/?#");
    if (memchr(a, '@', (size_t)(e - a))) return "credentials in the URL";
    return NULL;
}

/* ---- the gathering window (client README) ---- */

static void hist_add(uint32_t *hist, int64_t ns) {
    if (ns > 0) hist[63 - __builtin_clzll((unsigned long long)ns)]++;
}

static int64_t hist_p10(const uint32_t *hist, uint64_t min_n) {
    uint64_t total = 0, below = 0;
    for (int b = 0; b < 64; b++) total += hist[b];
    if (!total || total < min_n) return -1;
    for (int b = 0; b < 64; b++) {
        below += hist[b];
        if (below * 10 >= total) return (int64_t)1 << b;
    }
    return -1;
}

static int64_t gather_until(h1 *c, int64_t now) {
    if (!c->gather_max_ns || c->sockets_sending > 0 || c->last_wait_full) return 0;
    if (now >= c->epoch_end_ns) {
        int64_t g = hist_p10(c->gap_hist, 1), d = hist_p10(c->dur_hist, 1);
        if (g >= 0) c->gap_floor_ns = g;
        if (d >= 0) c->dur_floor_ns = d;
        uint32_t reads = c->reads_stamped + c->reads_unstamped;
        if (reads) c->stamps_flow = c->reads_unstamped * 100 <= reads;
        memset(c->gap_hist, 0, sizeof c->gap_hist);
        memset(c->dur_hist, 0, sizeof c->dur_hist);
        c->reads_stamped = c->reads_unstamped = 0;
        c->epoch_end_ns = now + GATHER_EPOCH_NS;
    }
    uint32_t reads = c->reads_stamped + c->reads_unstamped;
    if (reads >= GATHER_MIN_SAMPLES ? c->reads_unstamped * 100 > reads : !c->stamps_flow) return 0;
    int64_t gap = hist_p10(c->gap_hist, GATHER_MIN_SAMPLES), dur = hist_p10(c->dur_hist, GATHER_MIN_SAMPLES / 4);
    if (gap < 0) gap = c->gap_floor_ns;
    if (dur < 0) dur = c->dur_floor_ns;
    int64_t w = c->gather_max_ns;
    if (gap / 2 < w) w = gap / 2;
    if (dur / 100 < w) w = dur / 100;
    return c->last_wake_ns + w;
}

/* ---- sockets ---- */

static fdslot *slot_of(h1 *c, int fd) {
    if (fd >= c->slots_cap) {
        int cap = c->slots_cap ? c->slots_cap : 256;
        while (cap <= fd) cap *= 2;
        fdslot *ns = realloc(c->slots, (size_t)cap * sizeof *ns);
        if (!ns) return NULL;
        for (int i = c->slots_cap; i < cap; i++) ns[i] = (fdslot){ .batch_i = -1 };
        c->slots = ns;
        c->slots_cap = cap;
    }
    return &c->slots[fd];
}

/* -1 when epoll refused it (a new socket beyond fs.epoll.max_user_watches, which the client's and
 * a local server's sockets share at 100,000 streams; out of memory) */
static int watch(h1 *c, int fd, uint32_t events, bool add) {
    fdslot *s = fd < c->slots_cap ? &c->slots[fd] : NULL;
    if (!add && s && s->ev == events) return 0;   /* already so: e.g. a request sent on an idle connection */
    struct epoll_event ev = { .events = events, .data.fd = fd };
    if (epoll_ctl(c->epfd, add ? EPOLL_CTL_ADD : EPOLL_CTL_MOD, fd, &ev) < 0) return -1;
    if (s) s->ev = events;
    return 0;
}

static void close_fd(h1 *c, int fd) {
    if (fd < 0) return;
    if (fd < c->slots_cap) { c->slots[fd].x = NULL; c->slots[fd].idle = false; c->slots[fd].ev = 0; }
    epoll_ctl(c->epfd, EPOLL_CTL_DEL, fd, NULL);
    close(fd);
}

static void idle_drop(h1 *c, int fd) {
    for (size_t i = 0; i < c->n_idle; i++)
        if (c->idle[i] == fd) { memmove(c->idle + i, c->idle + i + 1, (c->n_idle - i - 1) * sizeof *c->idle); c->n_idle--; break; }
    close_fd(c, fd);
}

/* A finished transfer's connection, kept for the next request when the response allows it. */
static void idle_keep(h1 *c, int fd) {
    fdslot *s = fd < c->slots_cap ? &c->slots[fd] : NULL;
    if (!s || c->n_idle >= c->max_idle) { close_fd(c, fd); return; }
    if (c->n_idle == c->idle_cap) {
        size_t cap = c->idle_cap ? c->idle_cap * 2 : 64;
        int *ni = realloc(c->idle, cap * sizeof *ni);
        if (!ni) { close_fd(c, fd); return; }
        c->idle = ni;
        c->idle_cap = cap;
    }
    s->x = NULL;
    s->idle = true;
    c->idle[c->n_idle++] = fd;
    watch(c, fd, EPOLLIN | EPOLLRDHUP, false);   /* the server closing it is seen (and it is dropped) */
}

/* ---- per-transfer bookkeeping ---- */

static void set_sending(h1 *c, xfer *x, xstate st) {
    bool was = x->ph == X_CONNECTING || x->ph == X_SENDING, is = st == X_CONNECTING || st == X_SENDING;
    c->sockets_sending += (int)is - (int)was;
    x->ph = st;
}

/* The outcome, from the libcurl result the own path's ending maps to (outcome.h). */
static rec_outcome classify(xfer *x, CURLcode res) {
    client_end e = { .res = res, .status = x->status, .got_body = x->got_body, .is_sse = x->is_sse,
                     .n_events = x->sse.n_events, .st = &x->st, .errbody = x->errbody, .errlen = x->errlen };
    return client_outcome(&x->c->recs->v[x->rec], &e);
}

static int on_sse_event(void *ctx, const sse_event *ev) {
    xfer *x = ctx;
    record *r = &x->c->recs->v[x->rec];
    openai_stream_event(&x->st, r, ev->data, ev->data_len, ev->error, x->read_ns, &x->c->o.counter);
    return 0;
}

static void xfer_free(xfer *x) {
    sse_free(&x->sse);
    free(x->st.text);
    free(x->req);
    free(x->head);
    free(x->errbody);
    free(x);
}

/* Ends a transfer. keep: its connection may serve the next request. end_stamp_ns: the arrival of
 * the read that ended it (0: it did not end with a read). forced >= 0: dsperf ended it. */
static void finish(h1 *c, xfer *x, CURLcode res, int forced, bool keep, int64_t end_stamp_ns) {
    record *r = &c->recs->v[x->rec];
    if (forced < 0) sse_finish(&x->sse, on_sse_event, x);
    if (end_stamp_ns) { int64_t now = clock_now_ns(); if (end_stamp_ns > now) end_stamp_ns = now; }
    r->end_ns = end_stamp_ns ? end_stamp_ns : clock_now_ns();
    if (r->send_ns) hist_add(c->dur_hist, r->end_ns - r->send_ns);
    r->outcome = forced >= 0 ? (uint8_t)forced : (uint8_t)classify(x, res);
    if (forced >= 0) client_set_err(r, "cancelled: still in flight when the run stopped");
    if (r->http_status == 0 && x->got_body && x->status) r->http_status = (int32_t)x->status;
    r->last_ns = x->st.last_data_ns;
    if (x->fresh && x->connect_ns > 0) r->connect_ns = x->connect_ns;
    r->out_tokens_client = r->n_chunks ? x->st.tokens_client : (r->outcome == REC_OK ? 0 : -1);
    openai_stream_end(&x->st, r);
    if (x->ph != X_PENDING) set_sending(c, x, X_HEAD);
    if (x->fd >= 0) { if (keep) idle_keep(c, x->fd); else close_fd(c, x->fd); }
    if (x->prev) x->prev->next = x->next; else c->live = x->next;
    if (x->next) x->next->prev = x->prev;
    c->in_flight--;
    size_t idx = x->rec;
    xfer_free(x);
    c->finished_now++;
    if (c->done) c->done(c->ctx, idx);
}

/* ---- connecting and sending ---- */

static int start_connect(h1 *c, xfer *x);

/* Writes what is left of the request; the first write stamps send_ns (libcurl's pre-request hook
 * stamped just before its first write likewise). */
static void send_more(h1 *c, xfer *x) {
    record *r = &c->recs->v[x->rec];
    if (x->req_off == 0) r->send_ns = clock_now_ns();
    while (x->req_off < x->req_len) {
        ssize_t n = send(x->fd, x->req + x->req_off, x->req_len - x->req_off, MSG_NOSIGNAL);
        if (n > 0) { x->req_off += (size_t)n; continue; }
        if (n < 0 && errno == EINTR) continue;
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
            if (x->ph != X_SENDING) { set_sending(c, x, X_SENDING); watch(c, x->fd, EPOLLOUT, false); }
            return;
        }
        /* the server had closed an idle connection: once more on a new one */
        if (x->reused && !x->retried) {
            close_fd(c, x->fd);
            x->fd = -1;
            x->retried = true;
            x->req_off = 0;
            if (start_connect(c, x) < 0) finish(c, x, CURLE_COULDNT_CONNECT, -1, false, 0);
            return;
        }
        finish(c, x, CURLE_SEND_ERROR, -1, false, 0);
        return;
    }
    set_sending(c, x, X_HEAD);
    watch(c, x->fd, EPOLLIN | EPOLLRDHUP, false);
}

/* The connection is up: mark it and send. */
static void connected(h1 *c, xfer *x) {
    x->connect_ns = clock_now_ns() - x->connect_start_ns;
    c->addr_pref = x->addr_i;
    if (x->armed) {
        /* prepared ahead: the connection waits for the send time; a close meanwhile is seen */
        set_sending(c, x, X_ARMED);
        watch(c, x->fd, EPOLLIN | EPOLLRDHUP, false);
        return;
    }
    send_more(c, x);
}

/* A new non-blocking connection to the next address; 0 (connecting or connected) or -1. */
static int start_connect(h1 *c, xfer *x) {
    for (; x->addr_i < c->n_addrs; x->addr_i++) {
        const struct sockaddr *sa = (const struct sockaddr *)&c->addrs[x->addr_i];
        int fd = socket(sa->sa_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_TCP);
        if (fd < 0) return -1;
        fdslot *s = slot_of(c, fd);
        if (!s) { close(fd); return -1; }
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        if (c->rxstamp) rxstamp_enable_socket(fd);
        if (c->n_local > 1 && sa->sa_family == AF_INET) {
            /* many streams to one loopback port: each source address has its own ephemeral ports */
            struct sockaddr_in la = { .sin_family = AF_INET };
            la.sin_addr.s_addr = htonl(INADDR_LOOPBACK + (c->local_next++ % (unsigned)c->n_local));
            setsockopt(fd, IPPROTO_IP, IP_BIND_ADDRESS_NO_PORT, &one, sizeof one);
            bind(fd, (struct sockaddr *)&la, sizeof la);
        }
        x->fd = fd;
        x->fresh = true;
        x->reused = false;
        x->connect_start_ns = clock_now_ns();
        s->x = x;
        s->idle = false;
        int rc = connect(fd, sa, c->addr_lens[x->addr_i]);
        if (rc == 0 || errno == EINPROGRESS) {
            /* a socket epoll does not watch would never be heard from: the connection fails now
             * (the transfer is "Couldn't connect", not a timeout minutes later) */
            if (watch(c, fd, rc == 0 ? EPOLLIN | EPOLLRDHUP : EPOLLOUT, true) < 0) {
                log_warn("client: epoll cannot watch another socket (%s): fs.epoll.max_user_watches?", strerror(errno));
                s->x = NULL;
                close(fd);
                x->fd = -1;
                return -1;
            }
            if (rc == 0) {
                set_sending(c, x, X_SENDING);
                connected(c, x);
            } else set_sending(c, x, X_CONNECTING);
            return 0;
        }
        s->x = NULL;
        close(fd);
        x->fd = -1;
    }
    return -1;
}

/* Gives x the warmest idle keep-alive connection; false when there is none. */
static bool take_idle(h1 *c, xfer *x) {
    if (!c->n_idle) return false;
    int fd = c->idle[--c->n_idle];
    fdslot *s = &c->slots[fd];
    s->idle = false;
    s->x = x;
    x->fd = fd;
    x->reused = true;
    x->fresh = false;
    return true;
}

/* Starts a request: on an idle connection when there is one, else on a new one. */
static void start(h1 *c, xfer *x) {
    if (c->o.timeout_ns > 0) {
        x->deadline_ns = clock_now_ns() + c->o.timeout_ns;
        if (x->deadline_ns < c->next_deadline_ns) c->next_deadline_ns = x->deadline_ns;
    }
    if (take_idle(c, x)) {
        set_sending(c, x, X_SENDING);
        send_more(c, x);
        return;
    }
    x->addr_i = c->addr_pref;
    if (start_connect(c, x) == 0) return;
    x->addr_i = 0;   /* the preferred address failed: try them all */
    if (start_connect(c, x) < 0) finish(c, x, CURLE_COULDNT_CONNECT, -1, false, 0);
}

/* A request prepared ahead takes its connection now: an idle one, or a new one opened now (it is
 * parked when it comes up). Where none can be opened it connects at its send time, as before. */
static void arm_connection(h1 *c, xfer *x) {
    x->ph = X_ARMED;
    if (take_idle(c, x)) return;
    x->addr_i = c->addr_pref;
    if (start_connect(c, x) == 0) return;
    x->addr_i = 0;
    if (start_connect(c, x) == 0) return;
    x->fd = -1;
}

/* The connection of a transfer failed before the response: the next address, or the error. */
static void connect_failed(h1 *c, xfer *x) {
    close_fd(c, x->fd);
    x->fd = -1;
    x->addr_i++;
    if (start_connect(c, x) == 0) return;
    /* prepared ahead: the request is not failed before its send time; it connects again then */
    if (x->armed) { x->fd = -1; set_sending(c, x, X_ARMED); return; }
    finish(c, x, CURLE_COULDNT_CONNECT, -1, false, 0);
}

/* ---- the response ---- */

/* Body bytes of the response, in order: what libcurl's write callback got (client.c on_write). */
static void deliver(xfer *x, const char *buf, size_t len) {
    h1 *c = x->c;
    if (!len) return;
    if (!x->read_counted) {
        /* every event in one read arrived together: one stamp for them all */
        x->read_counted = true;
        int64_t stamp = x->read_stamp_ns;
        if (stamp) {
            int64_t now = clock_now_ns();
            if (stamp > now) stamp = now;
            c->reads_stamped++;
            if (x->read_ns) hist_add(c->gap_hist, stamp - x->read_ns);
            x->read_ns = stamp;
        } else {
            c->reads_unstamped++;
            x->read_ns = clock_now_ns();
        }
    }
    x->got_body = true;
    if (x->status < 200 || x->status >= 300 || !x->is_sse) {
        size_t room = ERROR_BODY_MAX - x->errlen, take = len < room ? len : room;
        if (take) {
            if (!x->errbody) x->errbody = malloc(ERROR_BODY_MAX + 1);
            if (x->errbody) { memcpy(x->errbody + x->errlen, buf, take); x->errlen += take; x->errbody[x->errlen] = 0; }
        }
        /* a 2xx that is not SSE may still be an event stream with a wrong content type */
        if (x->status >= 200 && x->status < 300 && !x->is_sse) sse_feed(&x->sse, buf, len, on_sse_event, x);
        return;
    }
    if (sse_feed(&x->sse, buf, len, on_sse_event, x) < 0) {
        record *r = &c->recs->v[x->rec];
        if (!r->error) r->error = strdup("SSE event larger than 4 MiB");
        x->st.bad_json = true;
    }
}

static bool header_is(const char *line, size_t len, const char *name, const char **val, size_t *vlen) {
    size_t n = strlen(name);
    if (len <= n || strncasecmp(line, name, n) || line[n] != ':') return false;
    const char *v = line + n + 1, *e = line + len;
    while (v < e && (*v == ' ' || *v == '\t')) v++;
    while (e > v && (e[-1] == ' ' || e[-1] == '\t' || e[-1] == '\r')) e--;
    *val = v;
    *vlen = (size_t)(e - v);
    return true;
}

static bool has_token(const char *v, size_t n, const char *tok) {
    size_t tl = strlen(tok);
    for (size_t i = 0; i + tl <= n; i++)
        if (!strncasecmp(v + i, tok, tl) && (i == 0 || v[i - 1] == ',' || v[i - 1] == ' ') &&
            (i + tl == n || v[i + tl] == ',' || v[i + tl] == ' ' || v[i + tl] == ';')) return true;
    return false;
}

/* Parses the status line and headers in x->head[0..end). 0 a final response; 1 an interim 1xx
 * (skipped); -1 not HTTP. */
static int parse_head(xfer *x, size_t end) {
    const char *h = x->head, *e = h + end;
    const char *nl = memchr(h, '\n', end);
    if (!nl || end < 12 || strncmp(h, "HTTP/1.", 7) || (h[7] != '0' && h[7] != '1') || h[8] != ' ') return -1;
    bool v10 = h[7] == '0';
    if (h[9] < '1' || h[9] > '5' || h[10] < '0' || h[10] > '9' || h[11] < '0' || h[11] > '9') return -1;
    int status = (h[9] - '0') * 100 + (h[10] - '0') * 10 + (h[11] - '0');
    if (status >= 100 && status < 200 && status != 101) return 1;
    x->status = status;
    bool chunked = false, close_hdr = false, ka_hdr = false;
    int64_t clen = -1;
    for (const char *l = nl + 1; l < e;) {
        const char *le = memchr(l, '\n', (size_t)(e - l));
        if (!le) le = e;
        size_t ll = (size_t)(le - l);
        const char *v;
        size_t vl;
        if (header_is(l, ll, "content-type", &v, &vl)) x->is_sse = vl >= 17 && !strncasecmp(v, "text/event-stream", 17);
        else if (header_is(l, ll, "transfer-encoding", &v, &vl)) chunked = has_token(v, vl, "chunked");
        else if (header_is(l, ll, "content-length", &v, &vl)) {
            char *endp;
            char tmp[32];
            size_t k = vl < sizeof tmp - 1 ? vl : sizeof tmp - 1;
            memcpy(tmp, v, k);
            tmp[k] = 0;
            long long n = strtoll(tmp, &endp, 10);
            if (endp != tmp && n >= 0) clen = n;
        } else if (header_is(l, ll, "connection", &v, &vl)) {
            if (has_token(v, vl, "close")) close_hdr = true;
            if (has_token(v, vl, "keep-alive")) ka_hdr = true;
        }
        l = le + 1;
    }
    if (chunked && !v10) x->frame = B_CHUNKED;
    else if (clen >= 0) { x->frame = B_LENGTH; x->body_left = clen; }
    else x->frame = B_CLOSE;
    if (status == 204 || status == 304) { x->frame = B_LENGTH; x->body_left = 0; }
    x->keep_alive = x->frame != B_CLOSE && !close_hdr && (!v10 || ka_hdr);
    return 0;
}

/* Chunked framing: the data of buf[0..n) goes to deliver; returns -1 on a framing error. */
static int dechunk(xfer *x, const char *p, size_t n) {
    size_t i = 0;
    while (i < n && x->cs != C_DONE) {
        char ch = p[i];
        switch (x->cs) {
        case C_SIZE: {
            int d = ch >= '0' && ch <= '9' ? ch - '0' : ch >= 'a' && ch <= 'f' ? ch - 'a' + 10 : ch >= 'A' && ch <= 'F' ? ch - 'A' + 10 : -1;
            if (d >= 0) {
                if (++x->size_digits > 15) return -1;
                x->chunk_left = x->chunk_left * 16 + (uint64_t)d;
                i++;
                break;
            }
            if (!x->size_digits) return -1;
            if (ch == ';' || ch == ' ' || ch == '\t') { x->cs = C_EXT; i++; break; }
            if (ch == '\r') { x->cs = C_SIZE_LF; i++; break; }
            if (ch == '\n') { x->cs = C_SIZE_LF; break; }
            return -1;
        }
        case C_EXT:
            if (ch == '\n') x->cs = C_SIZE_LF; else i++;
            break;
        case C_SIZE_LF:
            if (ch != '\n') return -1;
            i++;
            x->size_digits = 0;
            if (x->chunk_left == 0) { x->cs = C_TRAILER; x->trailer_empty = true; }
            else x->cs = C_DATA;
            break;
        case C_DATA: {
            size_t k = n - i < x->chunk_left ? n - i : (size_t)x->chunk_left;
            deliver(x, p + i, k);
            i += k;
            x->chunk_left -= k;
            if (!x->chunk_left) x->cs = C_DATA_CR;
            break;
        }
        case C_DATA_CR:
            if (ch == '\r') { x->cs = C_DATA_LF; i++; break; }
            x->cs = C_DATA_LF;
            /* fall through */
        case C_DATA_LF:
            if (ch != '\n') return -1;
            i++;
            x->cs = C_SIZE;
            break;
        case C_TRAILER:
            if (ch == '\n') { if (x->trailer_empty) x->cs = C_DONE; else x->trailer_empty = true; }
            else if (ch != '\r') x->trailer_empty = false;
            i++;
            break;
        case C_DONE:
            break;
        }
    }
    return (int)(n - i);   /* bytes after the end of the body (0 normally) */
}

/* Bytes of one read (n > 0). Returns when the transfer is finished or wants more. */
static void on_bytes(h1 *c, xfer *x, const char *p, size_t n, int64_t stamp_ns) {
    x->read_stamp_ns = c->rxstamp ? stamp_ns : 0;
    x->read_counted = false;
    counts.reads++;
    if (x->read_stamp_ns) counts.stamped++;
    while (x->ph == X_HEAD && n) {
        if (x->req) { free(x->req); x->req = NULL; }   /* the server answered: no retry any more */
        size_t old = x->head_len;
        size_t take = n < HEAD_MAX - old ? n : HEAD_MAX - old;
        if (old + take + 1 > x->head_cap) {   /* grown as needed: a typical head is a few hundred bytes */
            size_t cap = x->head_cap ? x->head_cap : 512;
            while (cap < old + take + 1) cap *= 2;
            char *nh = realloc(x->head, cap);
            if (!nh) { finish(c, x, CURLE_OUT_OF_MEMORY, -1, false, 0); return; }
            x->head = nh;
            x->head_cap = cap;
        }
        memcpy(x->head + old, p, take);
        x->head_len += take;
        x->head[x->head_len] = 0;
        size_t from = old > 3 ? old - 3 : 0, end = 0;
        for (size_t i = from; i < x->head_len; i++) {
            if (x->head[i] != '\n') continue;
            if (i >= 1 && x->head[i - 1] == '\n') { end = i + 1; break; }
            if (i >= 2 && x->head[i - 1] == '\r' && x->head[i - 2] == '\n') { end = i + 1; break; }
        }
        if (!end) {
            if (x->head_len >= HEAD_MAX) { finish(c, x, CURLE_WEIRD_SERVER_REPLY, -1, false, 0); return; }
            return;   /* the rest of the head comes later */
        }
        int rc = parse_head(x, end);
        if (rc < 0) { finish(c, x, CURLE_UNSUPPORTED_PROTOCOL, -1, false, 0); return; }   /* libcurl: "HTTP/0.9 not allowed" */
        size_t used = end - old;   /* of this read */
        p += used;
        n -= used;
        x->head_len = 0;
        if (rc == 1) continue;     /* 100 Continue and the like: the real head follows */
        free(x->head);
        x->head = NULL;
        x->head_cap = 0;
        x->ph = X_BODY;
        x->cs = C_SIZE;
        if (x->frame == B_LENGTH && x->body_left == 0) {
            finish(c, x, CURLE_OK, -1, x->keep_alive && !n, stamp_ns);
            return;
        }
    }
    if (x->ph != X_BODY || !n) return;
    if (x->frame == B_CLOSE) { deliver(x, p, n); return; }
    if (x->frame == B_LENGTH) {
        size_t k = (int64_t)n < x->body_left ? n : (size_t)x->body_left;
        deliver(x, p, k);
        x->body_left -= (int64_t)k;
        if (!x->body_left) finish(c, x, CURLE_OK, -1, x->keep_alive && k == n, stamp_ns);
        return;
    }
    int left = dechunk(x, p, n);
    if (left < 0) { finish(c, x, CURLE_RECV_ERROR, -1, false, 0); return; }
    if (x->cs == C_DONE) finish(c, x, CURLE_OK, -1, x->keep_alive && left == 0, stamp_ns);
}

/* The end of the connection (res 0) or a read error (res < 0: -errno). */
static void on_end(h1 *c, xfer *x, long res) {
    if (x->ph == X_HEAD && x->head_len == 0 && x->reused && !x->retried && x->req) {
        /* the server closed the idle connection as the request went out: once more on a new one */
        close_fd(c, x->fd);
        x->fd = -1;
        x->retried = true;
        x->req_off = 0;
        x->addr_i = c->addr_pref;
        if (start_connect(c, x) < 0) finish(c, x, CURLE_COULDNT_CONNECT, -1, false, 0);
        return;
    }
    if (res < 0) { finish(c, x, x->ph == X_HEAD && x->head_len == 0 ? CURLE_RECV_ERROR : CURLE_RECV_ERROR, -1, false, 0); return; }
    if (x->ph == X_HEAD) { finish(c, x, CURLE_GOT_NOTHING, -1, false, 0); return; }
    bool complete = x->frame == B_CLOSE;
    finish(c, x, complete ? CURLE_OK : CURLE_PARTIAL_FILE, -1, false, 0);
}

/* One read's result for a transfer's socket. */
static void on_read(h1 *c, xfer *x, const char *buf, long res, int64_t stamp_ns) {
    if (res > 0) on_bytes(c, x, buf, (size_t)res, stamp_ns);
    else if (res == -EAGAIN || res == -EWOULDBLOCK || res == -EINTR) return;
    else on_end(c, x, res);
}

static long read_one(int fd, char *buf, size_t len, int64_t *stamp_ns) {
    long n = rxstamp_recv(fd, buf, len, MSG_DONTWAIT, stamp_ns);
    return n < 0 ? -errno : n;
}

static void on_event(h1 *c, int fd, uint32_t ev) {
    fdslot *s = fd < c->slots_cap ? &c->slots[fd] : NULL;
    int bi = s ? s->batch_i : -1;
    if (s) s->batch_i = -1;
    if (!s) return;
    if (s->idle) {
        /* an idle connection became readable: the server closed it (or sent what nobody asked for) */
        idle_drop(c, fd);
        return;
    }
    xfer *x = s->x;
    if (!x) return;
    if (x->ph == X_ARMED) {
        /* its parked connection was closed by the server (or got what nobody asked for) before
         * the send time: another one, once; else it connects at the send time */
        close_fd(c, fd);
        x->fd = -1;
        if (!x->rearmed) { x->rearmed = true; arm_connection(c, x); }
        return;
    }
    if (x->ph == X_CONNECTING) {
        int err = 0;
        socklen_t el = sizeof err;
        if (!(ev & (EPOLLOUT | EPOLLERR | EPOLLHUP))) return;
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &el) < 0) err = errno;
        if (err) { connect_failed(c, x); return; }
        set_sending(c, x, X_SENDING);
        connected(c, x);
        return;
    }
    if (x->ph == X_SENDING) {
        if (ev & EPOLLOUT) send_more(c, x);
        else if (ev & (EPOLLERR | EPOLLHUP)) on_end(c, x, -ECONNRESET);
        return;
    }
    if (bi >= 0 && c->bx[bi] == x) { on_read(c, x, c->bres[bi].buf, c->bres[bi].res, c->bres[bi].stamp_ns); return; }
    int64_t stamp;
    long res = read_one(fd, c->rbuf, sizeof c->rbuf, &stamp);
    on_read(c, x, c->rbuf, res, stamp);
}

/* Reads every readable transfer socket of this wake-up in one system call (rxbatch.h). */
static void read_ahead(h1 *c, const struct epoll_event *evs, int n) {
    int nb = 0;
    for (int i = 0; i < n && nb < RXBATCH_MAX; i++) {
        int fd = evs[i].data.fd;
        if (!(evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP | EPOLLERR)) || fd >= c->slots_cap) continue;
        xfer *x = c->slots[fd].x;
        if (!x || (x->ph != X_HEAD && x->ph != X_BODY)) continue;
        c->bfds[nb] = fd;
        c->bx[nb] = x;
        nb++;
    }
    if (nb < c->batch_min) return;   /* fewer reads than pay for a batch's enter on this host (rxbatch.h) */
    int rc = rxbatch_read(c->batch, c->bfds, nb, c->bres);
    for (int i = 0; i < nb; i++) {
        if (c->bres[i].res == RXBATCH_NOT_READ) continue;
        c->slots[c->bfds[i]].batch_i = i;
        counts.batched++;
    }
    if (rc < 0) {
        log_warn("client: io_uring batch read failed; reading one socket at a time from now on");
        c->batch = NULL;   /* rxbatch_read keeps a broken ring's memory: its reads may still land */
    }
}

static void expire(h1 *c, int64_t now) {
    c->next_deadline_ns = INT64_MAX;
    for (xfer *x = c->live, *nx; x; x = nx) {
        nx = x->next;
        if (x->ph == X_PENDING || !x->deadline_ns) continue;
        if (x->deadline_ns <= now) finish(c, x, CURLE_OPERATION_TIMEDOUT, -1, false, 0);
        else if (x->deadline_ns < c->next_deadline_ns) c->next_deadline_ns = x->deadline_ns;
    }
}

/* ---- public ---- */

h1 *h1_new(const client_opts *o, const char *url, recset *recs, client_done_fn done, void *ctx, char *err, size_t errlen) {
    h1 *c = calloc(1, sizeof *c);
    if (!c) { snprintf(err, errlen, "out of memory"); return NULL; }
    c->o = *o;
    c->recs = recs;
    c->done = done;
    c->ctx = ctx;
    c->epfd = -1;
    c->next_deadline_ns = INT64_MAX;
    const char *rs = getenv("DSPERF_CLIENT_RXSTAMP");
    c->rxstamp = !(rs && *rs == '0');
    const char *gu = getenv("DSPERF_CLIENT_GATHER_US");
    c->gather_max_ns = c->rxstamp ? (gu && *gu ? atoll(gu) : GATHER_DEFAULT_US) * NS_PER_US : 0;
    if (c->gather_max_ns < 0) c->gather_max_ns = 0;
    if (c->gather_max_ns > 5 * NS_PER_MS) c->gather_max_ns = 5 * NS_PER_MS;
    c->dur_floor_ns = INT64_MAX;
    const char *la = getenv("DSPERF_CLIENT_LOCAL_ADDRS");
    c->n_local = la && *la ? atoi(la) : 0;
    if (c->n_local > 254) c->n_local = 254;
    c->max_idle = o->max_connections ? o->max_connections : 1024;
    const char *au = getenv("DSPERF_CLIENT_ARM_US");
    c->arm_lead_ns = (au && *au ? atoll(au) : ARM_DEFAULT_US) * NS_PER_US;
    if (c->arm_lead_ns < 0) c->arm_lead_ns = 0;
    /* a send time is kept to the ns the kernel can: without the default 50 µs of timer slack the
     * wake-up for an armed instant (and for a gathering window) is not rounded late */
    if (c->arm_lead_ns) prctl(PR_SET_TIMERSLACK, 1UL, 0, 0, 0);
    const char *su = getenv("DSPERF_CLIENT_SPIN_US");
    c->spin_fixed = su && *su;
    c->spin_ns = c->spin_fixed ? atoll(su) * NS_PER_US : SPIN_START_NS;
    if (c->spin_ns < 0) c->spin_ns = 0;
    if (c->spin_ns > SPIN_MAX_NS) c->spin_ns = SPIN_MAX_NS;
    c->born_ns = clock_now_ns();

    /* the URL: http://host[:port][/path][?query] */
    const char *a = url + 7, *ae = a + strcspn(a, "/?#");
    const char *path = *ae == '/' ? ae : "/";
    char host[256], port[16] = "80";
    const char *hs = a, *he, *pc = NULL;
    if (*a == '[') {
        hs = a + 1;
        he = memchr(hs, ']', (size_t)(ae - hs));
        if (!he) { snprintf(err, errlen, "bad URL '%s': an IPv6 address needs its closing ]", url); free(c); return NULL; }
        if (he + 1 < ae && he[1] == ':') pc = he + 2;
    } else {
        pc = memchr(a, ':', (size_t)(ae - a));
        he = pc ? pc : ae;
        if (pc) pc++;
    }
    if ((size_t)(he - hs) >= sizeof host) { snprintf(err, errlen, "bad URL '%s': host name too long", url); free(c); return NULL; }
    memcpy(host, hs, (size_t)(he - hs));
    host[he - hs] = 0;
    if (pc && pc < ae) {
        size_t pl = (size_t)(ae - pc);
        if (pl >= sizeof port) { snprintf(err, errlen, "bad URL '%s': bad port", url); free(c); return NULL; }
        memcpy(port, pc, pl);
        port[pl] = 0;
    }
    struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_family = AF_UNSPEC }, *res = NULL;
    int gr = getaddrinfo(host, port, &hints, &res);
    if (gr != 0) { snprintf(err, errlen, "cannot resolve '%s': %s", host, gai_strerror(gr)); free(c); return NULL; }
    for (struct addrinfo *ai = res; ai && c->n_addrs < MAX_ADDRS; ai = ai->ai_next) {
        if (ai->ai_addrlen > sizeof c->addrs[0]) continue;
        memcpy(&c->addrs[c->n_addrs], ai->ai_addr, ai->ai_addrlen);
        c->addr_lens[c->n_addrs++] = ai->ai_addrlen;
    }
    freeaddrinfo(res);
    if (!c->n_addrs) { snprintf(err, errlen, "cannot resolve '%s': no address", host); free(c); return NULL; }

    /* the head every request shares: what client.c gives libcurl (no User-Agent: it sets none);
     * the credentials and extra headers come from the one place that builds them (common/http.h) */
    http_opts ho = { .api_key = o->api_key, .headers = o->headers };
    struct curl_slist *hl = NULL;
    if (http_headers_append(&hl, &ho) != 0) { snprintf(err, errlen, "out of memory"); free(c); return NULL; }
    size_t cap = 1024 + strlen(path) + strlen(host);
    for (const struct curl_slist *h = hl; h; h = h->next) cap += strlen(h->data) + 2;
    c->head = malloc(cap);
    if (!c->head) { snprintf(err, errlen, "out of memory"); curl_slist_free_all(hl); free(c); return NULL; }
    bool own_host = false;
    for (const struct curl_slist *h = hl; h; h = h->next) if (!strncasecmp(h->data, "host:", 5)) own_host = true;
    char hostport[300];
    if (strchr(host, ':')) snprintf(hostport, sizeof hostport, "[%s]%s%s", host, pc ? ":" : "", pc ? port : "");
    else snprintf(hostport, sizeof hostport, "%s%s%s", host, pc ? ":" : "", pc ? port : "");
    int k = snprintf(c->head, cap, "POST %s HTTP/1.1\r\n", path);
    if (!own_host) k += snprintf(c->head + k, cap - (size_t)k, "Host: %s\r\n", hostport);
    k += snprintf(c->head + k, cap - (size_t)k, "Content-Type: application/json\r\nAccept: text/event-stream\r\n");
    for (const struct curl_slist *h = hl; h; h = h->next) {
        const char *colon = strchr(h->data, ':');
        /* "Name:" with nothing after removes a header in libcurl's list: nothing is sent */
        if (colon) { const char *v = colon + 1; while (*v == ' ') v++; if (!*v) continue; }
        k += snprintf(c->head + k, cap - (size_t)k, "%s\r\n", h->data);
    }
    curl_slist_free_all(hl);
    c->head_len = (size_t)k;

    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    if (c->epfd < 0) { snprintf(err, errlen, "cannot set up the HTTP client: %s", strerror(errno)); h1_free(c); return NULL; }
    const char *rb = getenv("DSPERF_CLIENT_RXBATCH");
    if (c->rxstamp && !(rb && *rb == '0')) c->batch = rxbatch_new();   /* NULL (no io_uring here): one read each */
    if (c->batch) {
        /* from how many ready sockets a batch costs less than a recvmsg each: measured once per
         * process (rxbatch_cost_of_host); DSPERF_CLIENT_RXBATCH_MIN=K sets it for this client */
        const char *bm = getenv("DSPERF_CLIENT_RXBATCH_MIN");
        if (bm && *bm) { int k = atoi(bm); c->batch_min = k < 2 ? 2 : k > RXBATCH_NEVER ? RXBATCH_NEVER : k; }
        else c->batch_min = rxbatch_cost_of_host(c->batch)->min_sockets;
    }
    return c;
}

void h1_free(h1 *c) {
    if (!c) return;
    while (c->live) {
        xfer *x = c->live;
        c->live = x->next;
        if (x->fd >= 0) close(x->fd);
        xfer_free(x);
    }
    for (size_t i = 0; i < c->n_idle; i++) close(c->idle[i]);
    free(c->idle);
    free(c->slots);
    if (c->epfd >= 0) close(c->epfd);
    rxbatch_free(c->batch);
    free(c->head);
    free(c);
}

void h1_prepare_host(void) {
    const char *rs = getenv("DSPERF_CLIENT_RXSTAMP"), *rb = getenv("DSPERF_CLIENT_RXBATCH"), *bm = getenv("DSPERF_CLIENT_RXBATCH_MIN");
    if ((rs && *rs == '0') || (rb && *rb == '0') || (bm && *bm)) return;
    rxbatch *b = rxbatch_new();
    if (!b) return;
    rxbatch_cost_of_host(b);
    rxbatch_free(b);
}

/* A transfer with its request bytes built, on the live list (not yet pending or armed). */
static xfer *new_xfer(h1 *c, size_t rec_index, const dataset_item *item) {
    xfer *x = calloc(1, sizeof *x);
    if (!x) return NULL;
    x->c = c;
    x->rec = rec_index;
    x->fd = -1;
    sse_init(&x->sse, SSE_EVENT_MAX);
    x->st.keep_text = c->o.keep_text;
    char *body = openai_request_body(c->o.api, c->o.model, item, c->o.ignore_eos, c->o.include_usage);
    if (body) {
        size_t bl = strlen(body);
        x->req = malloc(c->head_len + 40 + bl);
        if (x->req) {
            memcpy(x->req, c->head, c->head_len);
            int k = snprintf(x->req + c->head_len, 40, "Content-Length: %zu\r\n\r\n", bl);
            memcpy(x->req + c->head_len + (size_t)k, body, bl);
            x->req_len = c->head_len + (size_t)k + bl;
        }
        free(body);
    }
    if (!x->req) { xfer_free(x); return NULL; }
    record *r = &c->recs->v[rec_index];
    r->max_tokens = item->max_tokens;
    r->in_tokens = item->in_tokens;
    r->cacheable_tokens = item->cacheable_tokens;
    x->next = c->live;
    if (c->live) c->live->prev = x;
    c->live = x;
    c->in_flight++;
    return x;
}

static void pending_push(h1 *c, xfer *x) {
    x->ph = X_PENDING;
    x->pending_next = NULL;
    if (c->pending_tail) c->pending_tail->pending_next = x; else c->pending_head = x;
    c->pending_tail = x;
}

int h1_submit(h1 *c, size_t rec_index, const dataset_item *item) {
    xfer *x = new_xfer(c, rec_index, item);
    if (!x) return -1;
    pending_push(c, x);
    return 0;
}

int64_t h1_arm_lead_ns(const h1 *c) { return c->arm_lead_ns; }
size_t h1_armed(const h1 *c) { return c->n_armed; }

int h1_submit_at(h1 *c, size_t rec_index, const dataset_item *item, int64_t at_ns) {
    if (!c->arm_lead_ns || at_ns <= clock_now_ns()) return h1_submit(c, rec_index, item);
    xfer *x = new_xfer(c, rec_index, item);
    if (!x) return -1;
    x->armed = true;
    x->at_ns = at_ns;
    /* by send time; a plan's arrivals come in order, so this is an append */
    xfer **pp = &c->arm_head, *prev = NULL;
    if (c->arm_tail && c->arm_tail->at_ns <= at_ns) { prev = c->arm_tail; pp = &prev->arm_next; }
    else while (*pp && (*pp)->at_ns <= at_ns) { prev = *pp; pp = &prev->arm_next; }
    x->arm_next = *pp;
    *pp = x;
    if (!x->arm_next) c->arm_tail = x;
    c->n_armed++;
    arm_connection(c, x);
    return 0;
}

/* Sends every armed request whose time has come, back to back, each stamped just before its own
 * send (send_more: the stamp TTFT is measured from), with only the list walk in between. One
 * whose connection is still opening sends when it is up; one without a connection connects now. */
static void release_due(h1 *c, int64_t now) {
    int64_t deadline = c->o.timeout_ns > 0 ? now + c->o.timeout_ns : 0;
    if (deadline && c->arm_head && deadline < c->next_deadline_ns) c->next_deadline_ns = deadline;
    while (c->arm_head && c->arm_head->at_ns <= now) {
        xfer *x = c->arm_head;
        if (x->at_ns != c->released_at_ns) {
            c->released_at_ns = x->at_ns;
            if (x->at_ns != c->waited_at_ns) counts.arm_passed++;
        }
        c->arm_head = x->arm_next;
        if (!c->arm_head) c->arm_tail = NULL;
        c->n_armed--;
        x->armed = false;
        if (x->ph == X_ARMED && x->fd >= 0) {
            x->deadline_ns = deadline;
            set_sending(c, x, X_SENDING);
            send_more(c, x);
            counts.sent_armed++;
            continue;
        }
        counts.armed_unready++;
        if (x->ph == X_CONNECTING) x->deadline_ns = deadline;
        else pending_push(c, x);    /* start() connects it and sets its timeout */
    }
}

size_t h1_in_flight(const h1 *c) { return c->in_flight; }

static inline void cpu_relax(void) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    __asm__ __volatile__("yield");
#endif
}

/* Waits for an armed instant less than ARM_APPROACH_NS away: sleeps to spin_ns before it, then
 * spins on the clock (h1.c SPIN_NS above). Past the spin budget, or with spinning off, it sleeps to
 * the instant. */
static void arm_wait(h1 *c, int64_t at_ns) {
    int64_t now = clock_now_ns();
    c->waited_at_ns = at_ns;
    bool spin = c->spin_ns > 0 && c->spun_total_ns <= (now - c->born_ns) / SPIN_BUDGET + c->spin_ns;
    if (!spin) { clock_sleep_until_ns(at_ns); return; }
    int64_t from = at_ns - c->spin_ns;
    if (now < from) {
        clock_sleep_until_ns(from);
        now = clock_now_ns();
        if (!c->spin_fixed) {
            /* twice the worst of the last wake-ups: one that came later than the spin's length
             * would start the sends late */
            c->wake_late[c->wake_late_i++ % SPIN_HIST] = now - from;
            int64_t worst = 0;
            for (int i = 0; i < SPIN_HIST; i++) if (c->wake_late[i] > worst) worst = c->wake_late[i];
            int64_t sn = 2 * worst;
            c->spin_ns = sn < SPIN_MIN_NS ? SPIN_MIN_NS : sn > SPIN_MAX_NS ? SPIN_MAX_NS : sn;
        }
    }
    if (now >= at_ns) { counts.spin_late++; return; }
    int64_t spin_start = now;
    while ((now = clock_now_ns()) < at_ns) cpu_relax();
    c->spun_total_ns += now - spin_start;
    counts.spun++;
}

static void send_pending(h1 *c) {
    for (int k = 0; k < SEND_BATCH && c->pending_head; k++) {
        xfer *x = c->pending_head;
        c->pending_head = x->pending_next;
        if (!c->pending_head) c->pending_tail = NULL;
        x->ph = X_HEAD;   /* no longer pending; start sets the real state */
        start(c, x);
    }
}

int h1_poll(h1 *c, int64_t wake_at_ns) {
    c->finished_now = 0;
    struct epoll_event *evs = c->evs;
    for (;;) {
        if (c->arm_head && c->arm_head->at_ns <= clock_now_ns()) release_due(c, clock_now_ns());
        if (c->pending_head) {
            send_pending(c);
            if (c->finished_now) return c->finished_now;
        }
        int64_t now = clock_now_ns();
        if (c->next_deadline_ns <= now) {
            expire(c, now);
            if (c->finished_now) return c->finished_now;
        }
        int64_t until = wake_at_ns < c->next_deadline_ns ? wake_at_ns : c->next_deadline_ns;
        if (c->arm_head && c->arm_head->at_ns < until) until = c->arm_head->at_ns;
        int64_t wait_ns = c->pending_head ? 0 : until - now;
        if (wait_ns < 0) wait_ns = 0;
        if (wait_ns > 0) {
            int64_t g = gather_until(c, now);
            /* an armed instant's last stretch is spun (arm_wait), not slept through */
            int64_t gend = g < until ? g : until;
            if (c->arm_head && c->arm_head->at_ns == until && gend > until - c->spin_ns) gend = until - c->spin_ns;
            if (gend > now) {
                clock_sleep_until_ns(gend);
                now = clock_now_ns();
                wait_ns = until - now;
                if (wait_ns < 0) wait_ns = 0;
            }
        }
        if (c->arm_head && c->arm_head->at_ns == until && wait_ns > 0) {
            /* an armed instant: epoll rounds a timeout up by 0.1% of it (the kernel's
             * select_estimate_accuracy: 100 µs late after a 100 ms wait), clock_nanosleep only by
             * the timer slack (set to 1 ns): so the wait ends ARM_APPROACH_NS early and the rest
             * is slept exactly (no socket is read for that last stretch; its reads keep their
             * kernel stamps) */
            if (wait_ns > ARM_APPROACH_NS) wait_ns -= ARM_APPROACH_NS;
            else {
                /* at the instant: its sends go out now, with no epoll turn (a system call, and
                 * the events it returns) between the spin and the first send */
                arm_wait(c, until);
                continue;
            }
        }
        if (wait_ns > 100 * NS_PER_MS) wait_ns = 100 * NS_PER_MS;   /* stay responsive to signals */
        struct timespec ts = { .tv_sec = wait_ns / NS_PER_S, .tv_nsec = wait_ns % NS_PER_S };
        int n = epoll_pwait2(c->epfd, evs, EVENTS_MAX, &ts, NULL);
        if (n < 0) {
            if (errno == EINTR) return c->finished_now;
            if (errno != ENOSYS) return c->finished_now;
            n = epoll_wait(c->epfd, evs, EVENTS_MAX, (int)((wait_ns + NS_PER_MS - 1) / NS_PER_MS));
            if (n < 0) return c->finished_now;
        }
        c->last_wait_full = n == EVENTS_MAX;
        if (n > 0 && c->rxstamp) c->last_wake_ns = rxstamp_sync();
        /* a batch reads at most RXBATCH_MAX sockets: the events are taken in windows of that many */
        for (int base = 0; base < n; base += RXBATCH_MAX) {
            int w = n - base < RXBATCH_MAX ? n - base : RXBATCH_MAX;
            if (c->batch && w >= c->batch_min) read_ahead(c, evs + base, w);
            for (int i = base; i < base + w; i++) on_event(c, evs[i].data.fd, evs[i].events);
        }
        if (c->finished_now || clock_now_ns() >= wake_at_ns) return c->finished_now;
    }
}

void h1_abort_all(h1 *c, rec_outcome outcome) {
    c->pending_head = c->pending_tail = NULL;   /* every pending or armed transfer is also on the live list */
    c->arm_head = c->arm_tail = NULL;
    c->n_armed = 0;
    while (c->live) finish(c, c->live, CURLE_OK, (int)outcome, false, 0);
}
