/* monitor — the probe loop (client on this thread) and the exporter (libevent on its own thread).
 *
 * Why two threads: the client owns its epoll loop and times every probe from it; the exporter is
 * an evhttp server on a libevent loop. Folding libevent into the client's loop would mean changing
 * the client, and serving a scrape on the probe thread would put the scrape's cost inside some
 * probe's measured gaps. On its own thread the exporter only shares the aggregate, under a mutex
 * held for a fold (microseconds) or a format (tens of microseconds). */
#include "monitor/monitor.h"
#include "common/stop.h"
#include "metrics/request_metrics.h"
#include "common/clock.h"
#include "common/rng.h"
#include "common/redact.h"
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <jansson.h>
#include <math.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <errno.h>

/* A recycled record keeps its chunk-time array; one that grew past this many chunks gives it
 * back, so one very long answer does not pin its memory for the rest of the run. */
#define MON_KEEP_CHUNKS 4096

struct monitor {
    monitor_opts o;
    mon_metrics met;
    FILE *log;
    /* exporter */
    struct event_base *base;
    struct evhttp *http;
    struct event *tick;
    pthread_t thread;
    bool thread_started;
    atomic_int stop_exporter;
    int port;
    /* probe loop */
    recset recs;
    size_t *free_idx;            /* recycled record indices */
    size_t n_free, cap_free;
    size_t finished, ok, failed;
    char *model;                 /* resolved by pre-flight (owned) */
    /* period summaries: copies of the probes finished since period_start */
    recset period;
    int64_t period_start_ns;
    double period_start_unix_s;
    pthread_t period_thread;
    bool period_running;
};

void monitor_default_opts(monitor_opts *o) {
    memset(o, 0, sizeof *o);
    o->arr.kind = ARRIVAL_POISSON;
    o->arr.rate_per_s = 0.2;
    o->seed = 1;
    o->max_in_flight = 64;
    o->slo.target = 0.99;
    o->listen_host = "127.0.0.1";
    o->listen_port = 9464;
}

/* ---- exporter ---- */

static void on_metrics(struct evhttp_request *req, void *arg) {
    monitor *m = arg;
    size_t len = 0;
    char *text = mon_metrics_format(&m->met, clock_now_ns(), &len);
    if (!text) { evhttp_send_error(req, 500, "out of memory"); return; }
    struct evbuffer *b = evbuffer_new();
    evbuffer_add(b, text, len);
    free(text);
    evhttp_add_header(evhttp_request_get_output_headers(req), "Content-Type", "text/plain; version=0.0.4; charset=utf-8");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

static void on_health(struct evhttp_request *req, void *arg) {
    (void)arg;
    struct evbuffer *b = evbuffer_new();
    evbuffer_add_printf(b, "ok\n");
    evhttp_send_reply(req, 200, "OK", b);
    evbuffer_free(b);
}

/* The exporter's loop looks at the stop flag every 100 ms: no cross-thread wake-up (and so no
 * libevent threading setup) is needed to end it. */
static void on_tick(evutil_socket_t fd, short ev, void *arg) {
    (void)fd; (void)ev;
    monitor *m = arg;
    if (atomic_load(&m->stop_exporter)) event_base_loopbreak(m->base);
}

static void *exporter_thread(void *arg) {
    monitor *m = arg;
    event_base_dispatch(m->base);
    return NULL;
}

monitor *monitor_new(const monitor_opts *o, char *err, size_t errlen) {
    monitor *m = calloc(1, sizeof *m);
    if (!m) { snprintf(err, errlen, "out of memory"); return NULL; }
    m->o = *o;
    mon_metrics_init(&m->met, &o->slo, o->arr.rate_per_s, o->client.base_url,
                     o->client.api == OPENAI_CHAT ? "chat" : "completions");
    if (o->client.model) mon_metrics_set_model(&m->met, o->client.model);
    recset_init(&m->recs);
    recset_init(&m->period);
    /* "-" is standard output, as in every output flag */
    if (o->log_path && !(m->log = strcmp(o->log_path, "-") ? fopen(o->log_path, "a") : stdout)) {
        snprintf(err, errlen, "--log %s: %s", o->log_path, strerror(errno));
        monitor_free(m);
        return NULL;
    }
    m->base = event_base_new();
    m->http = m->base ? evhttp_new(m->base) : NULL;
    if (!m->http) { snprintf(err, errlen, "cannot set up the exporter (libevent)"); monitor_free(m); return NULL; }
    evhttp_set_allowed_methods(m->http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD);
    struct evhttp_bound_socket *bs = evhttp_bind_socket_with_handle(m->http, o->listen_host, (ev_uint16_t)o->listen_port);
    if (!bs) {
        snprintf(err, errlen, "cannot listen on %s:%d for the exporter: %s (in use? pick another --listen)",
                 o->listen_host, o->listen_port, strerror(errno));
        monitor_free(m);
        return NULL;
    }
    struct sockaddr_storage sa;
    socklen_t sl = sizeof sa;
    m->port = o->listen_port;
    if (getsockname(evhttp_bound_socket_get_fd(bs), (struct sockaddr *)&sa, &sl) == 0)
        m->port = ntohs(sa.ss_family == AF_INET6 ? ((struct sockaddr_in6 *)&sa)->sin6_port : ((struct sockaddr_in *)&sa)->sin_port);
    evhttp_set_cb(m->http, "/metrics", on_metrics, m);
    evhttp_set_cb(m->http, "/health", on_health, m);
    m->tick = event_new(m->base, -1, EV_PERSIST, on_tick, m);
    struct timeval tv = { 0, 100000 };
    if (!m->tick || event_add(m->tick, &tv) < 0 || pthread_create(&m->thread, NULL, exporter_thread, m) != 0) {
        snprintf(err, errlen, "cannot start the exporter thread");
        monitor_free(m);
        return NULL;
    }
    m->thread_started = true;
    return m;
}

int monitor_port(const monitor *m) { return m->port; }
mon_metrics *monitor_metrics(monitor *m) { return &m->met; }

void monitor_free(monitor *m) {
    if (!m) return;
    if (m->thread_started) {
        atomic_store(&m->stop_exporter, 1);
        pthread_join(m->thread, NULL);
    }
    if (m->tick) event_free(m->tick);
    if (m->http) evhttp_free(m->http);
    if (m->base) event_base_free(m->base);
    if (m->log && m->log != stdout) fclose(m->log);
    if (m->period_running) pthread_join(m->period_thread, NULL);
    recset_free(&m->period);
    recset_free(&m->recs);
    free(m->free_idx);
    free(m->model);
    mon_metrics_free(&m->met);
    free(m);
}

/* ---- the per-probe log ---- */

static void log_probe(monitor *m, const record *r, double now_unix_s, bool good) {
    if (!m->log) return;
    mon_probe p;
    mon_probe_measure(r, &p);
    json_t *j = json_object();
    json_object_set_new(j, "time", json_real(now_unix_s));
    json_object_set_new(j, "probe", json_integer(r->index));
    json_object_set_new(j, "outcome", json_string(rec_outcome_name((rec_outcome)r->outcome)));
    json_object_set_new(j, "http_status", json_integer(r->http_status));
    json_object_set_new(j, "ttft_ms", isnan(p.ttft_s) ? json_null() : json_real(p.ttft_s * 1e3));
    json_object_set_new(j, "tpot_ms", isnan(p.tpot_s) ? json_null() : json_real(p.tpot_s * 1e3));
    json_object_set_new(j, "e2el_ms", isnan(p.e2el_s) ? json_null() : json_real(p.e2el_s * 1e3));
    if (p.has_reasoning) json_object_set_new(j, "ttfa_ms", isnan(p.ttfa_s) ? json_null() : json_real(p.ttfa_s * 1e3));
    int64_t max_gap = 0;
    for (uint32_t k = 1; k < r->n_chunks; k++)
        if (r->chunk_ns[k] - r->chunk_ns[k - 1] > max_gap) max_gap = r->chunk_ns[k] - r->chunk_ns[k - 1];
    json_object_set_new(j, "max_itl_ms", r->n_chunks > 1 ? json_real(max_gap / 1e6) : json_null());
    req_metrics rm;
    req_metrics_of(r, &rm);
    json_object_set_new(j, "queue_ms", r->sched_ns && isfinite(rm.queue_ms) ? json_real(rm.queue_ms) : json_null());
    json_object_set_new(j, "chunks", json_integer(r->n_chunks));
    json_object_set_new(j, "output_tokens", json_integer(p.out_tokens));
    json_object_set_new(j, "input_tokens", json_integer(r->in_tokens));
    json_object_set_new(j, "slo_good", r->outcome == REC_ERR_CANCELLED ? json_null() : json_boolean(good));
    json_object_set_new(j, "error", r->error ? json_string(r->error) : json_null());
    char *line = json_dumps(j, JSON_COMPACT | JSON_REAL_PRECISION(15));
    if (line) {
        fputs(line, m->log);
        fputc('\n', m->log);
        fflush(m->log);   /* a post-mortem needs the lines written before the crash or the kill */
        free(line);
    }
    json_decref(j);
}

/* ---- the probe loop ---- */

typedef struct {
    monitor *m;
    client *c;
} loop_ctx;

static int free_push(monitor *m, size_t idx) {
    if (m->n_free == m->cap_free) {
        size_t nc = m->cap_free ? m->cap_free * 2 : 16;
        size_t *nf = realloc(m->free_idx, nc * sizeof *nf);
        if (!nf) return -1;
        m->free_idx = nf;
        m->cap_free = nc;
    }
    m->free_idx[m->n_free++] = idx;
    return 0;
}

/* ---- period summaries ---- */

/* A deep copy of a finished probe into the current period (its record is about to be recycled).
 * Out of memory drops the copy: the period's summary then covers fewer probes, never wrong ones. */
static void keep_for_period(monitor *m, const record *r) {
    record *c = recset_add(&m->period);
    if (!c) return;
    *c = *r;
    c->chunk_ns = NULL;
    c->chunk_tokens = NULL;
    c->error = r->error ? strdup(r->error) : NULL;
    c->chunk_cap = 0;
    if (r->n_chunks) {
        c->chunk_ns = malloc(r->n_chunks * sizeof *c->chunk_ns);
        if (c->chunk_ns) memcpy(c->chunk_ns, r->chunk_ns, r->n_chunks * sizeof *c->chunk_ns);
        if (r->chunk_tokens && (c->chunk_tokens = malloc(r->n_chunks * sizeof *c->chunk_tokens)))
            memcpy(c->chunk_tokens, r->chunk_tokens, r->n_chunks * sizeof *c->chunk_tokens);
        if (!c->chunk_ns) { record_free(c); m->period.n--; return; }
        c->chunk_cap = r->n_chunks;
    }
}

typedef struct {
    monitor *m;
    recset probes;
    double start_unix_s, end_unix_s;
} period_job;

static void *period_thread(void *arg) {
    period_job *j = arg;
    j->m->o.on_period(j->m->o.period_ctx, &j->probes, j->start_unix_s, j->end_unix_s);
    recset_free(&j->probes);
    free(j);
    return NULL;
}

/* Hands the period over when it is over (or when `last`), to a thread of its own; the previous
 * period's thread is joined first, so periods are recorded in order. */
static void period_check(monitor *m, int64_t now, bool last) {
    if (!m->o.on_period || m->o.period_ns <= 0) return;
    size_t max = m->o.period_max_probes ? m->o.period_max_probes : 100000;
    if (!m->period_start_ns) { m->period_start_ns = now; m->period_start_unix_s = clock_wall_ns() / 1e9; }
    bool over = now - m->period_start_ns >= m->o.period_ns || m->period.n >= max;
    if (!(over || last) || !m->period.n) {
        if (over) { m->period_start_ns = now; m->period_start_unix_s = clock_wall_ns() / 1e9; }
        return;
    }
    if (m->period_running) { pthread_join(m->period_thread, NULL); m->period_running = false; }
    period_job *j = malloc(sizeof *j);
    if (!j) return;
    j->m = m;
    j->probes = m->period;
    j->start_unix_s = m->period_start_unix_s;
    j->end_unix_s = clock_wall_ns() / 1e9;
    recset_init(&m->period);
    m->period_start_ns = now;
    m->period_start_unix_s = j->end_unix_s;
    if (last) { period_thread(j); return; }
    if (pthread_create(&m->period_thread, NULL, period_thread, j) == 0) m->period_running = true;
    else period_thread(j);   /* no thread: summarise here rather than lose the period */
}

/* Folds a finished probe, logs it, and recycles its record. */
static void finish_probe(monitor *m, size_t idx) {
    record *r = &m->recs.v[idx];
    double now_unix_s = clock_wall_ns() / 1e9;
    bool good = mon_metrics_fold(&m->met, r, clock_now_ns(), now_unix_s);
    log_probe(m, r, now_unix_s, good);
    if (m->o.on_period) keep_for_period(m, r);
    m->finished++;
    if (r->outcome == REC_OK) m->ok++;
    else if (record_failed(r)) m->failed++;
    if (r->chunk_cap > MON_KEEP_CHUNKS) record_free(r);
    record_reset(r);
    if (free_push(m, idx) < 0) record_free(r);   /* out of memory: the slot is lost, not reused */
}

static void on_done(void *ctx, size_t idx) {
    loop_ctx *l = ctx;
    pthread_mutex_lock(&l->m->met.mu);
    l->m->met.in_flight--;
    pthread_mutex_unlock(&l->m->met.mu);
    finish_probe(l->m, idx);
}

/* A blank record for the next probe: a recycled one, else a new one (the set only grows to the
 * peak number in flight). SIZE_MAX on out-of-memory. */
static size_t take_record(monitor *m) {
    if (m->n_free) return m->free_idx[--m->n_free];
    if (!recset_add(&m->recs)) return SIZE_MAX;
    return m->recs.n - 1;
}

/* Without a model the endpoint has not answered GET /v1/models yet: ask again. A failed attempt
 * is a failed probe (what a user would feel: the service is not there), counted as connect. */
static bool resolve_model(monitor *m, size_t idx, size_t index, int64_t sched_ns) {
    char err[512];
    char *model = NULL;
    if (client_preflight(&m->o.client, &model, NULL, err, sizeof err) == 0) {
        m->model = model;
        m->o.client.model = model;
        mon_metrics_set_model(&m->met, model);
        return true;
    }
    record *r = &m->recs.v[idx];
    r->index = (uint32_t)index;
    r->sched_ns = sched_ns;
    r->outcome = REC_ERR_CONNECT;
    r->end_ns = clock_now_ns();
    r->error = redact_text(err);   /* the pre-flight message quotes the URL */
    finish_probe(m, idx);
    return false;
}

int monitor_run(monitor *m, ds_stop_flag *stop, monitor_totals *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    const monitor_opts *o = &m->o;
    rng r;
    rng_seed(&r, o->seed);
    client_opts co = o->client;
    if (!co.max_connections) co.max_connections = (size_t)o->max_in_flight + 4;
    loop_ctx l = { .m = m };
    int64_t t0 = clock_now_ns();
    int64_t deadline = o->duration_ns > 0 ? t0 + o->duration_ns : INT64_MAX;
    int64_t next = t0;           /* the first probe goes out at once */
    size_t scheduled = 0;        /* probes due so far; probe k asks the dataset's item k mod n */
    int rc = 0;
    for (;;) {
        if (stop && *stop) { out->interrupted = true; break; }
        int64_t now = clock_now_ns();
        period_check(m, now, false);
        bool open = (!o->requests || scheduled < o->requests) && next < deadline;
        if (open && next <= now) {
            size_t in_flight = l.c ? client_in_flight(l.c) : 0;
            if (in_flight >= (size_t)o->max_in_flight) {
                pthread_mutex_lock(&m->met.mu);
                m->met.skipped++;
                pthread_mutex_unlock(&m->met.mu);
            } else {
                size_t idx = take_record(m);
                if (idx == SIZE_MAX) { snprintf(err, errlen, "out of memory"); rc = -1; break; }
                bool ready = m->o.client.model || resolve_model(m, idx, scheduled, next);
                if (ready && !l.c) {
                    co.model = m->o.client.model;
                    l.c = client_new(&co, &m->recs, on_done, &l, err, errlen);
                    if (!l.c) { rc = -1; break; }
                }
                if (ready) {
                    record *rec = &m->recs.v[idx];
                    rec->index = (uint32_t)scheduled;
                    rec->sched_ns = next;
                    const dataset_item *item = &o->ds->items[scheduled % o->ds->n];
                    if (client_submit(l.c, idx, item) < 0) {
                        rec->outcome = REC_ERR_CONNECT;
                        rec->end_ns = clock_now_ns();
                        rec->error = strdup("client out of memory");
                        finish_probe(m, idx);
                    } else {
                        pthread_mutex_lock(&m->met.mu);
                        m->met.in_flight++;
                        pthread_mutex_unlock(&m->met.mu);
                    }
                }
            }
            scheduled++;
            next += arrival_next_gap_ns(&o->arr, &r);
            /* after a stall (a slow pre-flight, a suspended process) the missed probes are not
             * sent in a burst: a monitor's probes must not load the endpoint beyond its rate */
            now = clock_now_ns();
            if (next < now - NS_PER_S) next = now;
            continue;
        }
        size_t in_flight = l.c ? client_in_flight(l.c) : 0;
        if (!open && in_flight == 0) break;
        int64_t wake = now + NS_PER_S;
        if (open && next < wake) wake = next;
        if (l.c) client_poll(l.c, wake);
        else {
            /* nothing in flight yet: sleep in short steps so a signal ends it promptly */
            int64_t until = wake < now + 100 * NS_PER_MS ? wake : now + 100 * NS_PER_MS;
            clock_sleep_until_ns(until);
        }
    }
    if (l.c) {
        client_abort_all(l.c, REC_ERR_CANCELLED);   /* the records are folded as cancelled */
        client_free(l.c);
    }
    if (m->period_running) { pthread_join(m->period_thread, NULL); m->period_running = false; }
    period_check(m, clock_now_ns(), true);   /* the last, partial period */
    out->probes = m->finished;
    out->ok = m->ok;
    out->failed = m->failed;
    out->records = m->recs.n;
    return rc;
}
