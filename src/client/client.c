/* client — the two read paths behind one interface, and the libcurl one.
 *
 * Plain http:// without a proxy goes to the client's own HTTP/1.1 path (h1.h): its own sockets,
 * reads stamped by the kernel, batched, gathered. Everything else (TLS, proxies, credentials in the
 * URL, DSPERF_CLIENT_PATH=curl) goes to libcurl's multi interface on an epoll loop: curl tells us
 * which sockets to watch (socket callback → epoll) and when to call it back (timer callback → a
 * deadline folded into the epoll timeout, at ns precision with epoll_pwait2). Its response bytes
 * go through the same SSE parser and OpenAI chunk interpreter, stamped when libcurl hands them
 * over (no kernel stamps there: they could only be had by replacing recv() for the whole process,
 * which this program no longer does), so that path does not gather reads either. */
#include "client/client.h"
#include "common/curl_init.h"
#include "common/http.h"
#include "client/sse.h"
#include "client/h1.h"
#include "client/outcome.h"
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
    int64_t read_ns;            /* when the bytes being parsed were handed to us */
    size_t errlen;
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
    h1 *own;                    /* the own path (plain HTTP/1.1): every call goes there; NULL: libcurl */
    const char *why_curl;       /* why libcurl reads (own == NULL) */
};

/* Submitted requests are handed to libcurl (and so sent) at most this many per turn of the
 * loop, with a look at the sockets in between: a closed loop whose streams all end together
 * resubmits hundreds of requests at once, and sending them in one pass (~20 us each) held
 * back the reads of every other stream for milliseconds, which showed up as ITL error. Their
 * own wait is measured as queue time (send_ns is taken when the bytes go out). */
#define SEND_BATCH 4

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

/* ---- curl → epoll glue ---- */

static int on_socket(CURL *e, curl_socket_t s, int what, void *userp, void *sockp) {
    client *c = userp;
    struct epoll_event ev = { .data.fd = s };
    if (what == CURL_POLL_REMOVE) {
        epoll_ctl(c->epfd, EPOLL_CTL_DEL, s, NULL);
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
    t->read_ns = clock_now_ns();
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
    if (sse_feed(&t->sse, buf, len, on_sse_event, t) < 0) {
        record *r = &t->c->recs->v[t->rec];
        if (!r->error) r->error = strdup("SSE event larger than 4 MiB");
        t->st.bad_json = true;
    }
    return len;
}

/* The outcome (outcome.h): the status is libcurl's when no body came, else the one on_header kept. */
static rec_outcome classify(transfer *t, CURLcode res) {
    long status = t->status;
    if (!t->got_body) curl_easy_getinfo(t->easy, CURLINFO_RESPONSE_CODE, &status);
    client_end e = { .res = res, .status = status, .got_body = t->got_body, .is_sse = t->is_sse,
                     .n_events = t->sse.n_events, .st = &t->st, .errbody = t->errbody, .errlen = t->errlen };
    return client_outcome(&t->c->recs->v[t->rec], &e);
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
    r->end_ns = clock_now_ns();
    r->outcome = forced_outcome >= 0 ? (uint8_t)forced_outcome : (uint8_t)classify(t, res);
    if (forced_outcome >= 0) client_set_err(r, "cancelled: still in flight when the run stopped");
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
    c->url = client_url(o->base_url, openai_path(o->api));
    if (!c->url) { snprintf(err, errlen, "out of memory"); free(c); return NULL; }
    c->why_curl = h1_why_not(c->url);
    if (!c->why_curl) {
        char e2[256];
        c->own = h1_new(o, c->url, recs, done, ctx, e2, sizeof e2);
        if (c->own) return c;
        /* e.g. the host does not resolve: libcurl reports it per request, as it always did */
        c->why_curl = "the own path could not start";
    }
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

const char *client_read_path_of(const client_opts *o) {
    char *url = client_url(o->base_url, openai_path(o->api));
    const char *why = url ? h1_why_not(url) : "out of memory";
    free(url);
    return why;
}

void client_prepare_host(const client_opts *o) {
    if (!client_read_path_of(o)) h1_prepare_host();
}

const char *client_read_path(const client *c) { return c->own ? "own" : "libcurl"; }
const char *client_read_path_why(const client *c) { return c->own ? NULL : c->why_curl; }

void client_free(client *c) {
    if (!c) return;
    h1_free(c->own);
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
     * hook) and the chunk stamps (write callback) must all be in place, or the request is not
     * sent (the run counts it as failed; client_new checked the hook's presence) */
    if (common_easy_opts(e, &c->o) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_URL, c->url) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_HTTPHEADER, c->hdrs) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header) != CURLE_OK
        || curl_easy_setopt(e, CURLOPT_PREREQFUNCTION, on_prereq) != CURLE_OK) {
        curl_easy_cleanup(e);
        return NULL;
    }
    return e;
}

int client_submit(client *c, size_t rec_index, const dataset_item *item) {
    if (c->own) return h1_submit(c->own, rec_index, item);
    transfer *t = calloc(1, sizeof *t);
    if (!t) return -1;
    t->c = c;
    t->rec = rec_index;
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
            client_set_err(&c->recs->v[t->rec], "client: libcurl would not take the request");
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

int client_submit_at(client *c, size_t rec_index, const dataset_item *item, int64_t send_at_ns) {
    /* the libcurl path sends on submit (its lead is 0: the runner hands it only what is due) */
    if (c->own) return h1_submit_at(c->own, rec_index, item, send_at_ns);
    return client_submit(c, rec_index, item);
}
int64_t client_arm_lead_ns(const client *c) { return c->own ? h1_arm_lead_ns(c->own) : 0; }
size_t client_armed(const client *c) { return c->own ? h1_armed(c->own) : 0; }

size_t client_in_flight(const client *c) { return c->own ? h1_in_flight(c->own) : c->in_flight; }

/* One socket action: libcurl reads (and writes) the socket. */
static void socket_action(client *c, int fd, int mask) {
    int running;
    curl_multi_socket_action(c->multi, fd, mask, &running);
    drain_done(c);
}

int client_poll(client *c, int64_t wake_at_ns) {
    if (c->own) return h1_poll(c->own, wake_at_ns);
    c->finished_now = 0;
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
        for (int i = 0; i < n; i++) {
            int mask = 0;
            if (evs[i].events & (EPOLLIN | EPOLLHUP | EPOLLRDHUP)) mask |= CURL_CSELECT_IN;
            if (evs[i].events & EPOLLOUT) mask |= CURL_CSELECT_OUT;
            if (evs[i].events & EPOLLERR) mask |= CURL_CSELECT_ERR;
            socket_action(c, evs[i].data.fd, mask);
        }
        if (c->finished_now || clock_now_ns() >= wake_at_ns) return c->finished_now;
    }
}

void client_abort_all(client *c, rec_outcome outcome) {
    if (c->own) { h1_abort_all(c->own, outcome); return; }
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
