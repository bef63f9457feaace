/* client — libcurl multi + epoll event loop for streamed completions.
 *
 * One thread owns everything: curl tells us which sockets to watch (socket callback → epoll) and
 * when to call it back (timer callback → a deadline folded into the epoll timeout, at ns precision
 * with epoll_pwait2). Response bytes go through the SSE parser and the OpenAI chunk interpreter
 * straight into the request's record, stamped with the time the kernel received them (rxstamp.h;
 * the monotonic clock when they were handed to us where there is no kernel stamp). Because the
 * stamp does not depend on when we read, the loop lets lone chunks gather for a short window
 * before it sleeps again (see client_poll), instead of paying one wake-up per chunk. */
#include "client/client.h"
#include "common/curl_init.h"
#include "common/http.h"
#include "client/sse.h"
#include "client/readpoll.h"
#include "client/rxstamp.h"
#include "client/rxbatch.h"
#include "common/clock.h"
#include "common/redact.h"
#include "common/log.h"
#include <curl/curl.h>
#include <sys/epoll.h>
#include <unistd.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#include <errno.h>
#include <time.h>

#define ERROR_BODY_MAX 8192
#define SSE_EVENT_MAX (4u << 20)

typedef struct transfer {
    client *c;
    CURL *easy;
    size_t rec;                 /* index into c->recs */
    char *body;                 /* request body (owned) */
    sse_parser sse;
    openai_stream st;
    long status;                /* HTTP status, read at the first body byte */
    bool is_sse;                /* Content-Type was text/event-stream */
    bool got_body;
    char *errbody;              /* body of a non-2xx response (capped) */
    bool added;                 /* handed to the multi handle (not pending) */
    struct transfer *pending_next;
    int64_t read_ns;            /* when the bytes being parsed arrived (kernel stamp, else when handed to us) */
    size_t errlen;
    int stream_fd;              /* the socket it streams an SSE body on (reads ahead allowed); -1 none */
    struct transfer *prev, *next;
} transfer;

struct client {
    client_opts o;
    recset *recs;
    client_done_fn done;
    void *ctx;
    CURLM *multi;
    int epfd;
    int64_t curl_deadline_ns;   /* when curl wants CURL_SOCKET_TIMEOUT; INT64_MAX none */
    struct curl_slist *hdrs;
    char *url;
    size_t in_flight;           /* submitted and not finished (pending ones included) */
    transfer *live;             /* list of in-flight transfers */
    transfer *pending_head, *pending_tail;   /* submitted, not yet handed to libcurl (FIFO) */
    CURL **pool;                /* easy handles of finished transfers, options kept, for reuse */
    size_t pool_n, pool_cap;
    int finished_now;           /* transfers finished during the current poll */
    bool curl_poll;             /* DSPERF_CLIENT_CURL_POLL=1: let libcurl make its post-read poll (make bench compares) */
    bool rxstamp;               /* reads stamped by the kernel (DSPERF_CLIENT_RXSTAMP=0: when handed to us) */
    int64_t gather_max_ns;      /* longest gathering window (DSPERF_CLIENT_GATHER_US; 0 off; needs rxstamp) */
    int64_t last_wake_ns;       /* when the last epoll wait returned with events */
    int sockets_sending;        /* sockets libcurl waits to write a request to (no gathering then) */
    bool in_action;             /* transfers finishing now were ended by a socket action's read */
    uint32_t gap_hist[64];      /* gaps between two reads of one stream this epoch, by power of two (ns) */
    uint32_t dur_hist[64];      /* send to end of the requests that finished this epoch, likewise */
    int64_t gap_floor_ns;       /* their 10th percentiles in the last epoch that had any (this epoch's
                                 * once it has enough): bound the window */
    int64_t dur_floor_ns;
    uint32_t reads_stamped, reads_unstamped;   /* body reads this epoch with and without a kernel stamp */
    bool stamps_flow;           /* the last epoch's reads were (>= 99%) stamped: gathering allowed */
    int64_t epoch_end_ns;
    rxbatch *batch;             /* batched reads ahead of libcurl (rxbatch.h); NULL: one recv() each */
    rxstamp_ahead ahead[RXBATCH_MAX];   /* this wake-up's reads ahead */
    int n_ahead;
    int batch_fds[RXBATCH_MAX];
    transfer **streams;         /* socket → the transfer streaming an SSE body on it (NULL none) */
    int streams_cap;
};

/* Submitted requests are handed to libcurl (and so sent) at most this many per turn of the
 * loop, with a look at the sockets in between: a closed loop whose streams all end together
 * resubmits hundreds of requests at once, and sending them in one pass (~20 us each) held
 * back the reads of every other stream for milliseconds, which showed up as ITL error. Their
 * own wait is measured as queue time (send_ns is taken when the bytes go out). */
#define SEND_BATCH 4

/* Gathering chunks. After a wake-up the loop sleeps until a window after it has passed before it
 * waits for sockets again, so the chunks of the streams that arrive meanwhile are read in one
 * wake-up instead of one each; their stamps are the kernel's, so reading them later does not move
 * them. The window (at most GATHER_DEFAULT_US, DSPERF_CLIENT_GATHER_US):
 *  - never passes the caller's wake-up time (a scheduled send) or libcurl's timer, and is not
 *    taken while requests wait to be sent or are being written (a socket waits to be writable);
 *  - is only taken while reads carry kernel stamps (99% of this epoch's, or the last epoch's);
 *  - stays under half the gap between two reads of one stream (the 10th percentile, rounded down
 *    to a power of two, of this epoch once it has GATHER_MIN_SAMPLES gaps, else of the last), so a
 *    stream's consecutive chunks still arrive in separate reads and keep separate stamps; no
 *    window until gaps have been seen;
 *  - stays under 1/100 of the requests' send-to-end time (same statistic), because a request's end
 *    is seen up to a window late and a closed loop sends the next request only then: at most 1%
 *    (0.5% on average) less offered load. */
#define GATHER_DEFAULT_US 5000
#define GATHER_EPOCH_NS (250 * NS_PER_MS)
#define GATHER_MIN_SAMPLES 32


char *client_url(const char *base_url, const char *path) {
    /* a query (?api-key=..., gateways that take the key there) stays at the end */
    const char *q = strchr(base_url, '?');
    size_t bl = q ? (size_t)(q - base_url) : strlen(base_url), ql = q ? strlen(q) : 0;
    while (bl && base_url[bl - 1] == '/') bl--;
    if (bl >= 3 && !strncmp(base_url + bl - 3, "/v1", 3) && !strncmp(path, "/v1/", 4)) bl -= 3;
    size_t pl = strlen(path);
    char *u = malloc(bl + pl + ql + 1);
    if (!u) return NULL;
    memcpy(u, base_url, bl);
    memcpy(u + bl, path, pl);
    memcpy(u + bl + pl, q ? q : "", ql + 1);
    return u;
}

/* ---- the gathering window's statistics ---- */

static void hist_add(uint32_t *hist, int64_t ns) {
    if (ns > 0) hist[63 - __builtin_clzll((unsigned long long)ns)]++;
}

/* The 10th percentile of a power-of-two histogram, rounded down; -1 with fewer than min_n samples. */
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

/* ---- reads ahead (rxbatch.h) ----
 * Only sockets that carry an SSE body of a 2xx response over plain HTTP are read ahead: libcurl
 * reads such a socket whenever it is readable, with a buffer as large as one read ahead
 * (RXBATCH_BUF), so it takes each read whole in that socket's action. Headers, TLS (whose
 * library reads a record at a time) and anything else are read by libcurl itself. */

static void forget_stream(client *c, int fd) {
    if (fd < 0) return;
    if (fd < c->streams_cap && c->streams[fd]) { c->streams[fd]->stream_fd = -1; c->streams[fd] = NULL; }
    /* bytes read ahead for a connection that is gone must not reach a new one on the same fd */
    for (int i = 0; i < c->n_ahead; i++)
        if (c->ahead[i].fd == fd) c->ahead[i].taken = true;
}

static void mark_stream(client *c, transfer *t, int fd) {
    if (fd < 0 || t->stream_fd == fd) return;
    if (fd >= c->streams_cap) {
        int cap = c->streams_cap ? c->streams_cap : 64;
        while (cap <= fd) cap *= 2;
        transfer **np = realloc(c->streams, (size_t)cap * sizeof *np);
        if (!np) return;   /* not read ahead: libcurl reads it */
        memset(np + c->streams_cap, 0, (size_t)(cap - c->streams_cap) * sizeof *np);
        c->streams = np;
        c->streams_cap = cap;
    }
    forget_stream(c, t->stream_fd);
    c->streams[fd] = t;
    t->stream_fd = fd;
}

static bool is_stream(const client *c, int fd) { return fd >= 0 && fd < c->streams_cap && c->streams[fd]; }

/* ---- curl → epoll glue ---- */

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *sockp) {
    client *c = userp;
    struct epoll_event ev = { .data.fd = s };
    /* sockets libcurl is writing a request to (it waits for them to be writable): while there are
     * any, the loop does not gather, so a request body larger than the socket buffer goes out at
     * the pace the server reads it, not one piece per window */
    bool was_out = sockp != NULL, is_out = what != CURL_POLL_REMOVE && (what & CURL_POLL_OUT);
    if (was_out != is_out) {
        c->sockets_sending += is_out ? 1 : -1;
        curl_multi_assign(c->multi, s, is_out ? (void *)c : NULL);
    }
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(c->epfd, EPOLL_CTL_DEL, s, NULL);
        forget_stream(c, s);
        return 0;
    }
    ev.events = (what & CURL_POLL_IN ? EPOLLIN : 0) | (what & CURL_POLL_OUT ? EPOLLOUT : 0);
    if (epoll_ctl(c->epfd, EPOLL_CTL_MOD, s, &ev) < 0 && errno == ENOENT)
        epoll_ctl(c->epfd, EPOLL_CTL_ADD, s, &ev);
    return 0;
}

static int on_timer(CURLM *m, long timeout_ms, void *userp) {
    client *c = userp;
    c->curl_deadline_ns = timeout_ms < 0 ? INT64_MAX : clock_now_ns() + timeout_ms * NS_PER_MS;
    return 0;
}

/* ---- per-transfer callbacks ---- */

/* Every connection the client opens asks the kernel for receive stamps. */
static int on_sockopt(void *clientp, curl_socket_t fd, curlsocktype purpose) {
    client *c = clientp;
    if (c->rxstamp && purpose == CURLSOCKTYPE_IPCXN) rxstamp_enable_socket(fd);
    return CURL_SOCKOPT_OK;
}

static int on_prereq(void *clientp, char *conn_primary_ip, char *conn_local_ip, int conn_primary_port, int conn_local_port) {
    transfer *t = clientp;
    t->c->recs->v[t->rec].send_ns = clock_now_ns();
    return CURL_PREREQFUNC_OK;
}

static int on_sse_event(void *ctx, const sse_event *ev) {
    transfer *t = ctx;
    record *r = &t->c->recs->v[t->rec];
    /* after [DONE] or an error the rest of the body is still read (so the connection can be
     * reused); the stream state already says how it ended */
    openai_stream_event(&t->st, r, ev->data, ev->data_len, ev->error, t->read_ns, &t->c->o.counter);
    return 0;
}

static size_t on_header(char *buf, size_t size, size_t n, void *ud) {
    transfer *t = ud;
    size_t len = size * n;
    if (len > 13 && !strncasecmp(buf, "content-type:", 13)) {
        const char *v = buf + 13;
        while (*v == ' ') v++;
        t->is_sse = !strncasecmp(v, "text/event-stream", 17);
    }
    return len;
}

static size_t on_write(char *buf, size_t size, size_t n, void *ud) {
    transfer *t = ud;
    size_t len = size * n;
    /* every event in one read arrived together: one stamp for them all, the kernel's receive
     * time of the read's last segment where there is one */
    int64_t stamp = rxstamp_last_ns();
    if (stamp) {
        client *c = t->c;
        c->reads_stamped++;
        if (t->read_ns) hist_add(c->gap_hist, stamp - t->read_ns);
        t->read_ns = stamp;
    } else {
        t->c->reads_unstamped++;
        t->read_ns = clock_now_ns();
    }
    if (!t->c->curl_poll) readpoll_delivered();   /* libcurl's "more bytes waiting?" poll is answered by epoll */
    if (!t->got_body) {
        t->got_body = true;
        curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &t->status);
    }
    if (t->status < 200 || t->status >= 300 || !t->is_sse) {
        /* keep the start of an error or non-SSE body for the message */
        size_t room = ERROR_BODY_MAX - t->errlen;
        size_t take = len < room ? len : room;
        if (take) {
            if (!t->errbody) t->errbody = malloc(ERROR_BODY_MAX + 1);
            if (t->errbody) { memcpy(t->errbody + t->errlen, buf, take); t->errlen += take; t->errbody[t->errlen] = 0; }
        }
        if (t->status >= 200 && t->status < 300 && !t->is_sse) {
            /* a 2xx that is not SSE may still be an event stream with a wrong content type
             * (some proxies); parse it anyway and decide at the end */
            sse_feed(&t->sse, buf, len, on_sse_event, t);
        }
        return len;
    }
    if (t->c->batch) mark_stream(t->c, t, rxstamp_last_socket());
    if (sse_feed(&t->sse, buf, len, on_sse_event, t) < 0) {
        record *r = &t->c->recs->v[t->rec];
        if (!r->error) r->error = strdup("SSE event larger than 4 MiB");
        t->st.bad_json = true;
    }
    return len;
}

static void set_err(record *r, const char *msg) {
    if (!r->error && msg) r->error = redact_text(msg);   /* a server may echo the key it refused */
}

static rec_outcome classify(transfer *t, CURLcode res) {
    record *r = &t->c->recs->v[t->rec];
    char msg[600];
    if (res == CURLE_OPERATION_TIMEDOUT) {
        set_err(r, "timed out");
        return REC_ERR_TIMEOUT;
    }
    long code = 0;
    if (res != CURLE_OK && !t->got_body) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &code);
    if (res != CURLE_OK && !t->got_body && code == 0) {
        snprintf(msg, sizeof msg, "%s", curl_easy_strerror(res));
        set_err(r, msg);
        return REC_ERR_CONNECT;
    }
    /* The server answered (its status line came) and the connection ended before a byte of body: a
     * stream cut short, not a failure to connect; else "connect" errors of a server that died
     * mid-run show "Transferred a partial file" as their example. */
    if (res != CURLE_OK && !t->got_body && code >= 200 && code < 300) {
        r->http_status = (int32_t)code;
        snprintf(msg, sizeof msg, "stream ended before its first event: %s", curl_easy_strerror(res));
        set_err(r, msg);
        return REC_ERR_TRUNCATED;
    }
    long status = t->status;
    if (!t->got_body) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    r->http_status = (int32_t)status;
    if (status < 200 || status >= 300) {
        char em[400];
        openai_error_message(t->errbody, t->errlen, em, sizeof em);
        snprintf(msg, sizeof msg, "HTTP %ld%s%s", status, em[0] ? ": " : "", em);
        set_err(r, msg);
        return REC_ERR_HTTP;
    }
    if (t->st.stream_error) return REC_ERR_STREAM;
    if (t->st.bad_json) return REC_ERR_JSON;
    if (!t->is_sse && t->sse.n_events == 0) {
        char em[300];
        openai_error_message(t->errbody, t->errlen, em, sizeof em);
        snprintf(msg, sizeof msg, "not an SSE stream (Content-Type is not text/event-stream): %.200s", em);
        set_err(r, msg);
        return REC_ERR_JSON;
    }
    if (res != CURLE_OK || !(t->st.done || t->st.finished)) {
        snprintf(msg, sizeof msg, "stream ended before [DONE]%s%s", res != CURLE_OK ? ": " : "",
                 res != CURLE_OK ? curl_easy_strerror(res) : "");
        set_err(r, msg);
        return REC_ERR_TRUNCATED;
    }
    return REC_OK;
}

/* A finished transfer's easy handle keeps its options and buffers for the next request
 * (curl_easy_init/cleanup per request was a tenth of the client's CPU at short requests). */
static void easy_release(client *c, CURL *e) {
    if (c->pool_n == c->pool_cap) {
        size_t cap = c->pool_cap ? c->pool_cap * 2 : 64;
        CURL **np = realloc(c->pool, cap * sizeof *np);
        if (!np) { curl_easy_cleanup(e); return; }
        c->pool = np;
        c->pool_cap = cap;
    }
    c->pool[c->pool_n++] = e;
}

static void transfer_free(transfer *t) {
    if (t->easy) {
        if (t->added) curl_multi_remove_handle(t->c->multi, t->easy);
        easy_release(t->c, t->easy);
    }
    sse_free(&t->sse);
    free(t->st.text);
    free(t->body);
    free(t->errbody);
    free(t);
}

static void unlink_transfer(client *c, transfer *t) {
    if (t->prev) t->prev->next = t->next; else c->live = t->next;
    if (t->next) t->next->prev = t->prev;
    c->in_flight--;
}

static void finish(client *c, transfer *t, CURLcode res, int forced_outcome) {
    record *r = &c->recs->v[t->rec];
    if (forced_outcome < 0) sse_finish(&t->sse, on_sse_event, t);
    /* a transfer ends with the read that brought its last bytes: their arrival, when stamped */
    int64_t end_stamp = c->in_action ? rxstamp_last_ns() : 0;
    r->end_ns = end_stamp ? end_stamp : clock_now_ns();
    if (r->send_ns) hist_add(c->dur_hist, r->end_ns - r->send_ns);
    r->outcome = forced_outcome >= 0 ? (uint8_t)forced_outcome : (uint8_t)classify(t, res);
    if (forced_outcome >= 0) set_err(r, "cancelled: still in flight when the run stopped");
    if (r->http_status == 0 && t->status) r->http_status = (int32_t)t->status;
    r->last_ns = t->st.last_data_ns;
    /* a new connection's setup happens between sched and send: keep it apart from client lag */
    long new_conns = 0;
    curl_off_t conn_us = 0, app_us = 0;
    if (t->easy && curl_easy_getinfo(t->easy, CURLINFO_NUM_CONNECTS, &new_conns) == CURLE_OK && new_conns > 0) {
        curl_easy_getinfo(t->easy, CURLINFO_CONNECT_TIME_T, &conn_us);
        curl_easy_getinfo(t->easy, CURLINFO_APPCONNECT_TIME_T, &app_us);
        r->connect_ns = (int64_t)(app_us > conn_us ? app_us : conn_us) * NS_PER_US;
    }
    r->out_tokens_client = r->n_chunks ? t->st.tokens_client : (r->outcome == REC_OK ? 0 : -1);
    openai_stream_end(&t->st, r);
    forget_stream(c, t->stream_fd);
    unlink_transfer(c, t);
    size_t idx = t->rec;
    transfer_free(t);
    c->finished_now++;
    if (c->done) c->done(c->ctx, idx);
}

static void drain_done(client *c) {
    CURLMsg *m;
    int left;
    while ((m = curl_multi_info_read(c->multi, &left))) {
        if (m->msg != CURLMSG_DONE) continue;
        transfer *t = NULL;
        curl_easy_getinfo(m->easy_handle, CURLINFO_PRIVATE, (char **)&t);
        CURLcode res = m->data.result;
        finish(c, t, res, -1);
    }
}

/* ---- public API ---- */

/* The run's request options as the HTTP helper takes them: HTTP/1.1, the run's timeout, TLS and
 * credentials. */
static http_opts client_http_opts(const client_opts *o) {
    return (http_opts){ .api_key = o->api_key, .headers = o->headers, .timeout_ns = o->timeout_ns, .insecure = o->insecure,
                        .http_1_1 = true };
}

client *client_new(const client_opts *o, recset *recs, client_done_fn done, void *ctx, char *err, size_t errlen) {
    if (curl_check_features(err, errlen) != 0) return NULL;
    client *c = calloc(1, sizeof *c);
    if (!c) { snprintf(err, errlen, "out of memory"); return NULL; }
    c->o = *o;
    c->recs = recs;
    c->done = done;
    c->ctx = ctx;
    c->curl_deadline_ns = INT64_MAX;
    const char *cp = getenv("DSPERF_CLIENT_CURL_POLL");
    c->curl_poll = cp && *cp == '1';
    const char *rs = getenv("DSPERF_CLIENT_RXSTAMP");
    c->rxstamp = !(rs && *rs == '0');
    const char *gu = getenv("DSPERF_CLIENT_GATHER_US");
    c->gather_max_ns = c->rxstamp ? (gu && *gu ? atoll(gu) : GATHER_DEFAULT_US) * NS_PER_US : 0;
    if (c->gather_max_ns < 0) c->gather_max_ns = 0;
    if (c->gather_max_ns > 5 * NS_PER_MS) c->gather_max_ns = 5 * NS_PER_MS;
    c->gap_floor_ns = 0;            /* unknown: no window until gaps are seen */
    c->dur_floor_ns = INT64_MAX;    /* unknown: bounded by the gaps alone */
    c->url = client_url(o->base_url, openai_path(o->api));
    const char *rb = getenv("DSPERF_CLIENT_RXBATCH");
    if (c->rxstamp && !(rb && *rb == '0') && c->url && !strncasecmp(c->url, "http://", 7))
        c->batch = rxbatch_new();   /* NULL (no io_uring here): libcurl reads each socket itself */
    c->epfd = epoll_create1(EPOLL_CLOEXEC);
    c->multi = curl_multi_init();
    if (!c->url || c->epfd < 0 || !c->multi) { snprintf(err, errlen, "cannot set up the HTTP client: %s", strerror(errno)); client_free(c); return NULL; }
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETFUNCTION, on_socket);
    curl_multi_setopt(c->multi, CURLMOPT_SOCKETDATA, c);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERFUNCTION, on_timer);
    curl_multi_setopt(c->multi, CURLMOPT_TIMERDATA, c);
    long maxc = o->max_connections ? (long)o->max_connections : 1024;
    curl_multi_setopt(c->multi, CURLMOPT_MAXCONNECTS, maxc);
    c->hdrs = curl_slist_append(NULL, "Content-Type: application/json");
    c->hdrs = curl_slist_append(c->hdrs, "Accept: text/event-stream");
    c->hdrs = curl_slist_append(c->hdrs, "Expect:");   /* no 100-continue round trip */
    http_opts ho = client_http_opts(o);
    if (!c->hdrs || http_headers_append(&c->hdrs, &ho) != 0) { snprintf(err, errlen, "out of memory"); client_free(c); return NULL; }
    return c;
}

void client_free(client *c) {
    if (!c) return;
    while (c->live) {
        transfer *t = c->live;
        unlink_transfer(c, t);
        transfer_free(t);
    }
    c->pending_head = c->pending_tail = NULL;
    for (size_t i = 0; i < c->pool_n; i++) curl_easy_cleanup(c->pool[i]);
    free(c->pool);
    if (c->multi) curl_multi_cleanup(c->multi);
    if (c->epfd >= 0) close(c->epfd);
    rxbatch_free(c->batch);
    free(c->streams);
    curl_slist_free_all(c->hdrs);
    free(c->url);
    free(c);
}

/* The options every streaming request shares; CURLE_OK or the first one libcurl refused. */
static CURLcode common_easy_opts(CURL *e, const client_opts *o) {
    char err[160];
    http_opts ho = client_http_opts(o);
    CURLcode rc = http_easy_setup(e, &ho, err, sizeof err);
    return rc != CURLE_OK ? rc : curl_easy_setopt(e, CURLOPT_TCP_NODELAY, 1L);
}

/* A pooled easy handle, or a new one with the options every request shares. */
static CURL *easy_get(client *c) {
    if (c->pool_n) return c->pool[--c->pool_n];
    CURL *e = curl_easy_init();
    if (!e) return NULL;
    /* what the measurement rests on: the timeout and TLS options, the send stamp (pre-request
     * hook), the chunk stamps (write callback) and the kernel receive stamps (sockopt callback)
     * must all be in place, or the request is not sent (the run counts it as failed; client_new
     * checked the hook's presence) */
    if (common_easy_opts(e, &c->o) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_URL, c->url) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_SOCKOPTFUNCTION, on_sockopt) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_SOCKOPTDATA, c) != CURLE_OK) {
        curl_easy_cleanup(e);
        return NULL;
    }
    return e;
}

int client_submit(client *c, size_t rec_index, const dataset_item *item) {
    transfer *t = calloc(1, sizeof *t);
    if (!t) return -1;
    t->c = c;
    t->rec = rec_index;
    t->stream_fd = -1;
    sse_init(&t->sse, SSE_EVENT_MAX);
    t->st.keep_text = c->o.keep_text;
    t->body = openai_request_body(c->o.api, c->o.model, item, c->o.ignore_eos, c->o.include_usage);
    t->easy = easy_get(c);
    if (!t->body || !t->easy) { transfer_free(t); return -1; }
    record *r = &c->recs->v[rec_index];
    r->max_tokens = item->max_tokens;
    r->in_tokens = item->in_tokens;
    r->cacheable_tokens = item->cacheable_tokens;
    CURL *e = t->easy;
    /* the body, and the transfer the stamping callbacks write to: a request without them is not sent */
    if (curl_easy_setopt(e, CURLOPT_POSTFIELDS, t->body) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE, (long)strlen(t->body)) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_WRITEDATA, t) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_HEADERDATA, t) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_PREREQDATA, t) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_PRIVATE, t) != CURLE_OK) {
        transfer_free(t);
        return -1;
    }
    t->next = c->live;
    if (c->live) c->live->prev = t;
    c->live = t;
    c->in_flight++;
    if (c->pending_tail) c->pending_tail->pending_next = t; else c->pending_head = t;
    c->pending_tail = t;
    return 0;
}

/* Hands up to SEND_BATCH pending requests to libcurl and lets it send them. */
static void send_pending(client *c) {
    int running;
    for (int k = 0; k < SEND_BATCH && c->pending_head; k++) {
        transfer *t = c->pending_head;
        c->pending_head = t->pending_next;
        if (!c->pending_head) c->pending_tail = NULL;
        if (curl_multi_add_handle(c->multi, t->easy) != CURLM_OK) {
            set_err(&c->recs->v[t->rec], "client: libcurl would not take the request");
            finish(c, t, CURLE_OUT_OF_MEMORY, REC_ERR_CONNECT);
            continue;
        }
        t->added = true;
    }
    /* libcurl set its timer to "now" for each: one timeout action sends them all */
    curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
    long ms = -1;
    curl_multi_timeout(c->multi, &ms);
    c->curl_deadline_ns = ms < 0 ? INT64_MAX : clock_now_ns() + ms * NS_PER_MS;
    drain_done(c);
}

size_t client_in_flight(const client *c) { return c->in_flight; }

/* When the gathering window after the last wake-up ends (<= now: none). Each statistic is this
 * epoch's once it has enough samples, else the last epoch's; with neither (the start of a run)
 * there is no window. */
static int64_t gather_until(client *c, int64_t now) {
    if (!c->gather_max_ns || c->sockets_sending > 0) return 0;
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
    /* without kernel stamps a late read would move the chunk's time: gather only while they
     * arrive (the kernel turns receive stamping on from a workqueue, so the first reads of a run
     * may have none; a kernel or socket that never gives any never gathers) */
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

/* One socket action: libcurl reads (and writes) the socket, with its reads stamped; a transfer
 * the action finished ended with the read it made, so it is finished with that stamp. */
static void socket_action(client *c, int fd, int mask) {
    int running;
    readpoll_enter(fd);
    rxstamp_socket(fd);
    curl_multi_socket_action(c->multi, fd, mask, &running);
    readpoll_leave();
    /* the stamp is read only for a transfer that ended here (finish), not after every action */
    c->in_action = true;
    drain_done(c);
    c->in_action = false;
    rxstamp_socket(-1);
}

/* Reads every streaming socket among this wake-up's events in one system call (rxbatch.h); their
 * socket actions then find the bytes already there. */
static void read_ahead(client *c, const struct epoll_event *evs, int n) {
    int nb = 0;
    for (int i = 0; i < n && nb < RXBATCH_MAX; i++)
        if (evs[i].events == EPOLLIN && is_stream(c, evs[i].data.fd)) c->batch_fds[nb++] = evs[i].data.fd;
    if (nb < 2) return;   /* one read gains nothing from a batch */
    int rc = rxbatch_read(c->batch, c->batch_fds, nb, c->ahead);
    c->n_ahead = nb;
    rxstamp_ahead_set(c->ahead, nb);
    if (rc < 0) {   /* the ring failed: what it read is handed out, and libcurl reads by itself from now on */
        log_warn("client: io_uring batch read failed; reading one socket at a time from now on");
        c->batch = NULL;   /* rxbatch_read keeps a broken ring's memory: its reads may still land */
    }
}

/* After the wake-up's socket actions: libcurl took every read ahead of a live stream whole (it
 * reads a readable stream with a buffer as large as the read). Should it ever not, the socket's
 * action is run again while it takes more; bytes it still leaves would be lost, so that stream
 * fails, saying why. Reads of a socket whose transfer has ended are dropped (libcurl would have
 * discarded them as well). */
static void ahead_done(client *c) {
    for (int i = 0; i < c->n_ahead; i++) {
        rxstamp_ahead *a = &c->ahead[i];
        for (int tries = 0; !a->taken && a->res > 0 && is_stream(c, a->fd) && tries < 4; tries++) {
            long before = a->off;
            socket_action(c, a->fd, CURL_CSELECT_IN);
            if (a->off == before) break;
        }
        if (!a->taken && a->res > 0 && is_stream(c, a->fd)) {
            transfer *t = c->streams[a->fd];
            set_err(&c->recs->v[t->rec], "client: libcurl did not take bytes read ahead (a dsperf bug: please report it)");
            finish(c, t, CURLE_RECV_ERROR, -1);
        }
    }
    rxstamp_ahead_set(NULL, 0);
    c->n_ahead = 0;
}

int client_poll(client *c, int64_t wake_at_ns) {
    c->finished_now = 0;
    rxstamp_thread(c->rxstamp);
    struct epoll_event evs[256];
    int running;
    for (;;) {
        if (c->pending_head) {
            send_pending(c);
            if (c->finished_now) return c->finished_now;
        }
        int64_t now = clock_now_ns();
        if (c->curl_deadline_ns <= now) {
            curl_multi_socket_action(c->multi, CURL_SOCKET_TIMEOUT, 0, &running);
            /* libcurl skips the timer callback when its next expiry is unchanged; ask it
             * directly rather than assume the timer fired once and is gone */
            long ms = -1;
            curl_multi_timeout(c->multi, &ms);
            c->curl_deadline_ns = ms < 0 ? INT64_MAX : clock_now_ns() + ms * NS_PER_MS;
            drain_done(c);
            if (c->finished_now) return c->finished_now;
            now = clock_now_ns();
        }
        /* even when the wake-up time has passed, look at the sockets once (zero wait) */
        int64_t until = wake_at_ns < c->curl_deadline_ns ? wake_at_ns : c->curl_deadline_ns;
        int64_t wait_ns = c->pending_head ? 0 : until - now;   /* more to send: only look */
        if (wait_ns < 0) wait_ns = 0;
        if (wait_ns > 0) {
            int64_t g = gather_until(c, now);
            if (g > now) {
                clock_sleep_until_ns(g < until ? g : until);
                now = clock_now_ns();
                wait_ns = until - now;
                if (wait_ns < 0) wait_ns = 0;
            }
        }
        if (wait_ns > 100 * NS_PER_MS) wait_ns = 100 * NS_PER_MS;   /* stay responsive to signals */
        struct timespec ts = { .tv_sec = wait_ns / NS_PER_S, .tv_nsec = wait_ns % NS_PER_S };
        int n = epoll_pwait2(c->epfd, evs, 256, &ts, NULL);
        if (n < 0) {
            if (errno == EINTR) return c->finished_now;
            if (errno == ENOSYS) {
                n = epoll_wait(c->epfd, evs, 256, (int)((wait_ns + NS_PER_MS - 1) / NS_PER_MS));
                if (n < 0) return c->finished_now;
            } else return c->finished_now;
        }
        if (n > 0) {
            c->last_wake_ns = c->rxstamp ? rxstamp_sync() : 0;
        }
        if (c->batch && n > 1) read_ahead(c, evs, n);
        for (int i = 0; i < n; i++) {
            int mask = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) mask |= CURL_CSELECT_IN;
            if (evs[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
            if (evs[i].events & EPOLLERR) mask |= CURL_CSELECT_ERR;
            socket_action(c, evs[i].data.fd, mask);
        }
        if (c->n_ahead) ahead_done(c);
        if (c->finished_now || clock_now_ns() >= wake_at_ns) return c->finished_now;
    }
}

void client_abort_all(client *c, rec_outcome outcome) {
    c->pending_head = c->pending_tail = NULL;    /* every pending transfer is also on the live list */
    while (c->live) finish(c, c->live, CURLE_OK, (int)outcome);
}

/* ---- pre-flight ---- */

#include <jansson.h>

/* GET {url} with the run's credentials and headers, a 5 s connection and 15 s transfer limit and
 * a body of at most 1 MiB: the body (malloc'd), the status and curl's result. */
static CURLcode get_body(const client_opts *o, const char *url, char **body, size_t *len, long *status, char *err, size_t errlen) {
    http_opts ho = client_http_opts(o);
    ho.connect_timeout_ns = 5 * NS_PER_S;
    ho.timeout_ns = 15 * NS_PER_S;
    ho.max_body_bytes = 1u << 20;
    return http_get_once(&ho, url, status, body, len, err, errlen);
}

json_t *client_get_json(const client_opts *o, const char *path) {
    char *url = client_url(o->base_url, path), *body = NULL, e[256];
    size_t len = 0;
    long status = 0;
    CURLcode res = url ? get_body(o, url, &body, &len, &status, e, sizeof e) : CURLE_OUT_OF_MEMORY;
    json_t *j = res == CURLE_OK && status == 200 ? json_loadb(body, len, 0, NULL) : NULL;
    free(body);
    free(url);
    if (j && !json_is_object(j)) { json_decref(j); j = NULL; }
    return j;
}

int client_preflight(const client_opts *o, char **model_out, char ***all_models, char *err, size_t errlen) {
    if (strncmp(o->base_url, "http://", 7) && strncmp(o->base_url, "https://", 8)) {
        snprintf(err, errlen, "bad --url '%s': it must start with http:// or https:// (e.g. http://127.0.0.1:8000)", o->base_url);
        return -1;
    }
    char *url = client_url(o->base_url, "/v1/models"), *body = NULL, why[256];
    size_t len = 0;
    long status = 0;
    CURLcode res = url ? get_body(o, url, &body, &len, &status, why, sizeof why) : CURLE_OUT_OF_MEMORY;
    int rc = -1;
    if (!url) {
        snprintf(err, errlen, "out of memory");
    } else if (res != CURLE_OK) {
        snprintf(err, errlen, "cannot reach %s: %s (is the server running and the URL right?)", url, why);
        /* nothing answered (vs a malformed URL, a TLS certificate problem, ...: those are ours) */
        if (res == CURLE_COULDNT_CONNECT || res == CURLE_COULDNT_RESOLVE_HOST || res == CURLE_COULDNT_RESOLVE_PROXY ||
            res == CURLE_OPERATION_TIMEDOUT || res == CURLE_GOT_NOTHING || res == CURLE_SEND_ERROR || res == CURLE_RECV_ERROR)
            rc = CLIENT_UNREACHABLE;
    } else if (status == 401 || status == 403) {
        snprintf(err, errlen, "GET %s returned HTTP %ld: the server wants credentials (set OPENAI_API_KEY or --header 'Authorization: Bearer ...')", url, status);
    } else if (status != 200) {
        snprintf(err, errlen, "GET %s returned HTTP %ld: this does not look like an OpenAI-compatible server (check the URL and path)", url, status);
    } else {
        json_t *j = json_loadb(body, len, 0, NULL);
        json_t *data = j ? json_object_get(j, "data") : NULL;
        size_t n = json_is_array(data) ? json_array_size(data) : 0;
        if (!n) {
            snprintf(err, errlen, "GET %s did not return an OpenAI model list ({\"data\":[{\"id\":...}]}); not an OpenAI-compatible server?", url);
        } else {
            const char *id = json_string_value(json_object_get(json_array_get(data, 0), "id"));
            if (!id) snprintf(err, errlen, "GET %s: the model list has no \"id\"", url);
            else {
                *model_out = strdup(id);
                if (all_models) {
                    char **v = calloc(n + 1, sizeof *v);
                    for (size_t i = 0; v && i < n; i++) {
                        const char *x = json_string_value(json_object_get(json_array_get(data, i), "id"));
                        v[i] = strdup(x ? x : "");
                    }
                    *all_models = v;
                }
                rc = 0;
            }
        }
        json_decref(j);
    }
    free(body);
    free(url);
    return rc;
}
