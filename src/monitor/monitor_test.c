/* monitor tests: the histogram and its exposition, the SLO window ring and burn rate on known
 * sequences, record recycling, the per-probe verdict, and the real binary against `dsperf serve`
 * with known timing and injected faults (loopback only). */
#include "harness.h"
#include "common/stop.h"
#include "testutil.h"
#include "monitor/monitor.h"
#include "telemetry/prom.h"
#include "common/clock.h"
#include <jansson.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

/* ---- helpers ---- */

static double prom_get(const prom_doc *d, const char *name, const char *label, const char *value) {
    double v = NAN;
    if (prom_sum(d, name, label, value, &v) == 0) return NAN;
    return v;
}

/* The upper bound of the bucket that holds the median of a histogram of n samples. */
/* A finished record with send at 1 s, first chunk at send+ttft, then n-1 chunks itl apart. */
static void fake_record(record *r, rec_outcome o, int64_t ttft_ns, int64_t itl_ns, int n) {
    memset(r, 0, sizeof *r);
    r->in_tokens = r->in_tokens_server = r->out_tokens_client = r->max_tokens = -1;
    r->out_tokens_server = o == REC_OK ? n : -1;
    r->outcome = (uint8_t)o;
    r->sched_ns = r->send_ns = NS_PER_S;
    if (o != REC_OK) { r->end_ns = r->send_ns + ttft_ns; return; }
    for (int k = 0; k < n; k++) record_add_chunk(r, r->send_ns + ttft_ns + k * itl_ns, 1);
    r->first_ns = r->chunk_ns[0];
    r->last_ns = r->end_ns = r->chunk_ns[n - 1];
}

/* ---- unit ---- */

TEST(monitor_hist_buckets_and_exposition) {
    static const double b[] = { 0.01, 0.02, 0.05 };
    mon_hist h;
    mon_hist_init(&h, b, 3);
    const double v[] = { 0.005, 0.01, 0.0100001, 0.02, 0.03, 0.05, 0.2, 7 };
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) mon_hist_observe(&h, v[i]);
    mon_hist_observe(&h, NAN);   /* ignored */
    CHECK_EQ_INT(h.counts[0], 2);   /* 0.005, 0.01 (a value on a bound is in its bucket: le) */
    CHECK_EQ_INT(h.counts[1], 2);   /* 0.0100001, 0.02 */
    CHECK_EQ_INT(h.counts[2], 2);   /* 0.03, 0.05 */
    CHECK_EQ_INT(h.counts[3], 2);   /* +Inf */
    CHECK_EQ_INT(h.count, 8);
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    mon_hist_write(&h, "x_seconds", "test", f);
    fclose(f);
    CHECK(strstr(text, "# TYPE x_seconds histogram\n") != NULL);
    CHECK(strstr(text, "x_seconds_bucket{le=\"0.01\"} 2\n") != NULL);
    CHECK(strstr(text, "x_seconds_bucket{le=\"0.02\"} 4\n") != NULL);
    CHECK(strstr(text, "x_seconds_bucket{le=\"0.05\"} 6\n") != NULL);
    CHECK(strstr(text, "x_seconds_bucket{le=\"+Inf\"} 8\n") != NULL);
    CHECK(strstr(text, "x_seconds_count 8\n") != NULL);
    prom_doc d;
    CHECK(prom_parse(text, len, &d) == 0);
    CHECK_EQ_INT(d.bad_lines, 0);
    CHECK(prom_family_type(&d, "x_seconds") == PROM_HISTOGRAM);
    double sum = 0;
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++) sum += v[i];
    CHECK_NEAR(prom_get(&d, "x_seconds_sum", NULL, NULL), sum, 1e-7);
    prom_doc_free(&d);
    free(text);
    /* the shipped bounds ascend and fit */
    const double *all[] = { mon_ttft_bounds_s, mon_itl_bounds_s, mon_e2el_bounds_s };
    const int n_all[] = { mon_ttft_n_bounds, mon_itl_n_bounds, mon_e2el_n_bounds };
    for (int k = 0; k < 3; k++) {
        CHECK(n_all[k] <= MON_MAX_BOUNDS);
        for (int i = 1; i < n_all[k]; i++) CHECK(all[k][i] > all[k][i - 1]);
    }
}

TEST(monitor_window_burn_rate) {
    mon_window w;
    mon_window_init(&w);
    const int64_t S = NS_PER_S, t0 = 100000 * S;   /* slot-aligned: 100000 s = 10000 slots */
    /* one probe every 10 s for 10 minutes (60 probes); every 4th is bad */
    for (int i = 0; i < 60; i++) mon_window_add(&w, t0 + i * 10 * S, i % 4 != 0);
    int64_t now = t0 + 59 * 10 * S + 5 * S;           /* inside the slot of the last probe */
    uint64_t g, t;
    mon_window_sum(&w, now, 300 * S, &g, &t);         /* 5m = the last 30 slots: probes 30..59 */
    CHECK_EQ_INT(t, 30);
    CHECK_EQ_INT(g, 30 - 7);                          /* bad: 32,36,...,56 */
    CHECK_NEAR(mon_burn_rate(g, t, 0.99), (7.0 / 30) / 0.01, 1e-9);
    mon_window_sum(&w, now, 3600 * S, &g, &t);        /* 1h holds all 60 */
    CHECK_EQ_INT(t, 60);
    CHECK_EQ_INT(g, 45);
    CHECK_NEAR(mon_burn_rate(g, t, 0.9), (15.0 / 60) / 0.1, 1e-9);
    /* 5 minutes after the last probe the 5m window is empty: no data, not zero */
    mon_window_sum(&w, now + 300 * S, 300 * S, &g, &t);
    CHECK_EQ_INT(t, 0);
    CHECK(isnan(mon_burn_rate(g, t, 0.99)));
    CHECK_NEAR(mon_burn_rate(10, 10, 0.99), 0, 0);
    CHECK_NEAR(mon_burn_rate(0, 10, 0.99), 100, 1e-9);
    /* 6 h later the ring entries are reused: the old probes are gone, a new one counts alone */
    int64_t later = now + 6 * 3600 * S;
    mon_window_add(&w, later, false);
    mon_window_sum(&w, later, 6 * 3600 * S, &g, &t);
    CHECK_EQ_INT(t, 1);
    CHECK_EQ_INT(g, 0);
    /* several probes in one slot */
    mon_window_init(&w);
    for (int i = 0; i < 5; i++) mon_window_add(&w, t0 + i * S, i < 2);
    mon_window_sum(&w, t0 + 9 * S, 10 * S, &g, &t);
    CHECK_EQ_INT(t, 5);
    CHECK_EQ_INT(g, 2);
}

TEST(monitor_record_reset_recycles) {
    recset s;
    recset_init(&s);
    record *r = recset_add(&s);
    for (int k = 0; k < 40; k++) record_add_chunk(r, 1000 + k, k == 5 ? 3 : 1);
    r->error = strdup("boom");
    r->outcome = REC_ERR_STREAM;
    r->out_tokens_server = 42;
    r->http_status = 200;
    int64_t *arr = r->chunk_ns;
    uint32_t cap = r->chunk_cap;
    CHECK(r->chunk_tokens != NULL);
    record_reset(r);
    CHECK_EQ_INT(r->n_chunks, 0);
    CHECK(r->chunk_ns == arr);          /* the array is kept for the next request */
    CHECK_EQ_INT(r->chunk_cap, cap);
    CHECK(r->chunk_tokens == NULL);
    CHECK(r->error == NULL);
    CHECK_EQ_INT(r->outcome, REC_OK);
    CHECK_EQ_INT(r->http_status, 0);
    CHECK_EQ_INT(r->out_tokens_server, -1);
    CHECK_EQ_INT(r->out_tokens_client, -1);
    CHECK_EQ_INT(r->in_tokens, -1);
    CHECK_EQ_INT(r->max_tokens, -1);
    CHECK_EQ_INT(r->send_ns, 0);
    /* reused without new allocation while it fits, and counted as fresh */
    for (int k = 0; k < 10; k++) record_add_chunk(r, 5000 + k, 1);
    CHECK(r->chunk_ns == arr);
    CHECK_EQ_INT(r->n_chunks, 10);
    CHECK(r->chunk_tokens == NULL);
    CHECK_EQ_INT(record_out_tokens(r), 10);
    recset_free(&s);
}

TEST(monitor_probe_verdict) {
    record r;
    mon_probe p;
    mon_slo slo = { .ttft_s = 0.1, .tpot_s = 0.02, .e2el_s = 0, .target = 0.99 };
    fake_record(&r, REC_OK, 50 * NS_PER_MS, 10 * NS_PER_MS, 11);
    mon_probe_measure(&r, &p);
    CHECK(p.ok);
    CHECK_NEAR(p.ttft_s, 0.05, 1e-12);
    CHECK_NEAR(p.e2el_s, 0.15, 1e-12);
    CHECK_NEAR(p.tpot_s, 0.01, 1e-12);
    CHECK_EQ_INT(p.out_tokens, 11);
    CHECK(mon_slo_good(&slo, &p));
    slo.tpot_s = 0.005;
    CHECK(!mon_slo_good(&slo, &p));                 /* TPOT over */
    slo.tpot_s = 0.01;
    CHECK(mon_slo_good(&slo, &p));                  /* on the threshold is good (<=) */
    slo.ttft_s = 0.04;
    CHECK(!mon_slo_good(&slo, &p));                 /* TTFT over */
    record_free(&r);
    fake_record(&r, REC_OK, 30 * NS_PER_MS, 0, 1);  /* one token: no TPOT, passes that part */
    mon_probe_measure(&r, &p);
    CHECK(isnan(p.tpot_s));
    slo = (mon_slo){ .ttft_s = 0.04, .tpot_s = 0.001, .target = 0.99 };
    CHECK(mon_slo_good(&slo, &p));
    record_free(&r);
    fake_record(&r, REC_ERR_HTTP, 0, 0, 0);
    mon_probe_measure(&r, &p);
    CHECK(!p.ok);
    mon_slo none = { .target = 0.99 };
    CHECK(!mon_slo_good(&none, &p));                /* a failure is never good */
    record_free(&r);
}

TEST(monitor_metrics_fold_and_format) {
    mon_metrics m;
    mon_slo slo = { .ttft_s = 0.1, .target = 0.9 };
    mon_metrics_init(&m, &slo, 0.5, "http://h:1/\"x\"", "chat");
    mon_metrics_set_model(&m, "deepseek");
    const int64_t now = 50000 * NS_PER_S;
    record r;
    fake_record(&r, REC_OK, 20 * NS_PER_MS, 5 * NS_PER_MS, 9);     /* good */
    CHECK(mon_metrics_fold(&m, &r, now, 1.7e9));
    record_free(&r);
    fake_record(&r, REC_OK, 200 * NS_PER_MS, 5 * NS_PER_MS, 9);    /* completed, TTFT over: bad */
    CHECK(!mon_metrics_fold(&m, &r, now, 1.7e9 + 1));
    record_free(&r);
    fake_record(&r, REC_ERR_TIMEOUT, 0, 0, 0);                    /* bad */
    CHECK(!mon_metrics_fold(&m, &r, now, 1.7e9 + 2));
    fake_record(&r, REC_ERR_HTTP, 0, 0, 0);                       /* bad, by status */
    r.http_status = 503;
    CHECK(!mon_metrics_fold(&m, &r, now, 1.7e9 + 2));
    fake_record(&r, REC_ERR_CANCELLED, 0, 0, 0);                  /* ours: not judged */
    CHECK(!mon_metrics_fold(&m, &r, now, 1.7e9 + 3));
    size_t len;
    char *text = mon_metrics_format(&m, now, &len);
    CHECK(text != NULL);
    prom_doc d;
    CHECK(prom_parse(text, len, &d) == 0);
    CHECK_EQ_INT(d.bad_lines, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_requests_total", "outcome", "ok"), 2, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_requests_total", "outcome", "timeout"), 1, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_requests_total", "outcome", "cancelled"), 1, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_requests_total", "outcome", "http"), 1, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_http_errors_total", "code", "503"), 1, 0);
    CHECK(isnan(prom_get(&d, "dsperf_http_errors_total", "code", "500")));
    CHECK_NEAR(prom_get(&d, "dsperf_output_tokens_total", NULL, NULL), 18, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_good_total", NULL, NULL), 1, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_total", NULL, NULL), 4, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_burn_rate", "window", "5m"), (3.0 / 4) / 0.1, 1e-6);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_window_probes", "window", "1h"), 4, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_ttft_seconds_count", NULL, NULL), 2, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_ttft_seconds_bucket", "le", "0.02"), 1, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_ttft_seconds_bucket", "le", "0.2"), 2, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_itl_seconds_count", NULL, NULL), 16, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_itl_seconds_sum", NULL, NULL), 16 * 0.005, 1e-9);
    CHECK_NEAR(prom_get(&d, "dsperf_tpot_seconds_sum", NULL, NULL), 2 * 0.005, 1e-9);
    CHECK_NEAR(prom_get(&d, "dsperf_last_ttft_seconds", NULL, NULL), 0.2, 1e-9);
    CHECK_NEAR(prom_get(&d, "dsperf_last_probe_success", NULL, NULL), 0, 0);   /* the timeout */
    CHECK_NEAR(prom_get(&d, "dsperf_last_probe_timestamp_seconds", NULL, NULL), 1.7e9 + 2, 1e-3);
    CHECK_NEAR(prom_get(&d, "dsperf_last_success_timestamp_seconds", NULL, NULL), 1.7e9 + 1, 1e-3);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_threshold_seconds", "sli", "ttft"), 0.1, 1e-12);
    CHECK(isnan(prom_get(&d, "dsperf_slo_threshold_seconds", "sli", "tpot")));   /* absent */
    /* the info labels come back unescaped */
    const char *url = NULL;
    for (size_t i = 0; i < d.n_samples; i++)
        if (!strcmp(d.samples[i].name, "dsperf_monitor_info")) url = prom_label(&d.samples[i], "url");
    CHECK_STR(url, "http://h:1/\"x\"");
    prom_doc_free(&d);
    free(text);
    /* an hour later the short windows have no probes: NaN, spelled as Prometheus reads it */
    text = mon_metrics_format(&m, now + 3601 * NS_PER_S, &len);
    CHECK(strstr(text, "dsperf_slo_burn_rate{window=\"5m\"} NaN\n") != NULL);
    CHECK(strstr(text, "dsperf_slo_window_probes{window=\"6h\"} 4\n") != NULL);
    free(text);
    mon_metrics_free(&m);
}

/* ---- the real binary ---- */

typedef struct {
    pid_t pid;
    int out_fd;
    char metrics_url[128];
    char err_path[512];
} mon_proc;

/* Reads one line of the child's stdout within timeout_ms. 0 ok. */
static int read_line(int fd, char *line, size_t cap, int timeout_ms) {
    size_t n = 0;
    int64_t end = clock_now_ns() + (int64_t)timeout_ms * NS_PER_MS;
    while (n < cap - 1) {
        int left = (int)((end - clock_now_ns()) / NS_PER_MS);
        struct pollfd pf = { .fd = fd, .events = POLLIN };
        if (left <= 0 || poll(&pf, 1, left) <= 0) break;
        ssize_t r = read(fd, line + n, 1);
        if (r <= 0) break;
        if (line[n] == '\n') { line[n] = 0; return 0; }
        n++;
    }
    line[n] = 0;
    return -1;
}

/* Starts `dsperf monitor --listen 127.0.0.1:0 <args>` and reads its exporter address. */
static int mon_start(mon_proc *p, const char *args) {
    char full[2048];
    snprintf(full, sizeof full, "exec %s monitor --listen 127.0.0.1:0 %s", harness_bin(), args);
    snprintf(p->err_path, sizeof p->err_path, "%s/monitor-%d.err", harness_tmpdir(), (int)getpid());
    int po[2];
    if (pipe(po) < 0) return -1;
    p->pid = fork();
    if (p->pid == 0) {
        dup2(po[1], 1);
        close(po[0]); close(po[1]);
        int ef = open(p->err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (ef >= 0) dup2(ef, 2);
        execl("/bin/sh", "sh", "-c", full, (char *)NULL);   /* via the shell: quotes in args work */
        _exit(127);
    }
    close(po[1]);
    p->out_fd = po[0];
    char line[512];
    if (read_line(p->out_fd, line, sizeof line, 15000) < 0) return -1;
    const char *u = strstr(line, "http://");
    if (!u) return -1;
    snprintf(p->metrics_url, sizeof p->metrics_url, "%s", u);
    return 0;
}

/* Waits for the "done:" line (the probes are over; the exporter lingers). */
static int mon_wait_done(mon_proc *p, char *line, size_t cap, int timeout_ms) {
    while (read_line(p->out_fd, line, cap, timeout_ms) == 0)
        if (strstr(line, "done:")) return 0;
    return -1;
}

/* SIGTERM, then the exit code (-1 when it had to be killed). */
static int mon_stop(mon_proc *p) {
    if (p->pid <= 0) return -1;
    kill(p->pid, SIGTERM);
    int st = 0;
    for (int i = 0; i < 500; i++) {
        if (waitpid(p->pid, &st, WNOHANG) == p->pid) {
            close(p->out_fd);
            p->pid = 0;
            return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
        }
        usleep(10000);
    }
    kill(p->pid, SIGKILL);
    waitpid(p->pid, NULL, 0);
    close(p->out_fd);
    p->pid = 0;
    return -1;
}

static char *scrape(const mon_proc *p, prom_doc *d) {
    char *t = test_http_get(p->metrics_url);
    if (t) prom_parse(t, strlen(t), d);
    else memset(d, 0, sizeof *d);
    return t;
}

static int count_lines(const char *path, int *ok) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char buf[4096];
    int n = 0;
    *ok = 0;
    while (fgets(buf, sizeof buf, f)) {
        json_t *j = json_loads(buf, 0, NULL);
        if (!j) continue;
        n++;
        if (!strcmp(json_string_value(json_object_get(j, "outcome")) ? json_string_value(json_object_get(j, "outcome")) : "", "ok")) (*ok)++;
        json_decref(j);
    }
    fclose(f);
    return n;
}

TEST(monitor_serve_known_timing) {
    test_server s;
    if (test_serve_start(&s, "--ttft 20ms --itl 5ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char log[600], args[1024];
    snprintf(log, sizeof log, "%s/probes.jsonl", harness_tmpdir());
    const int N = 20, OUT = 16;
    snprintf(args, sizeof args, "--url %s --rate 10/s --requests %d --dataset random:in=32,out=%d "
             "--slo ttft=1s,tpot=200ms --slo-target 0.95 --log %s --linger 60s --quiet", s.url, N, OUT, log);
    mon_proc p;
    if (mon_start(&p, args) != 0) { CHECK_MSG(0, "monitor did not start"); mon_stop(&p); test_serve_stop(&s); return; }
    char *health = NULL, *url2 = strdup(p.metrics_url);
    char *slash = strstr(url2, "/metrics");
    if (slash) strcpy(slash, "/health");
    health = test_http_get(url2);
    CHECK_STR(health, "ok\n");
    free(health);
    free(url2);
    char line[512];
    CHECK(mon_wait_done(&p, line, sizeof line, 20000) == 0);
    prom_doc d;
    char *text = scrape(&p, &d);
    CHECK(text != NULL);
    CHECK_EQ_INT(mon_stop(&p), 0);
    test_serve_stop(&s);
    if (!text) return;
    CHECK_EQ_INT(d.bad_lines, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_requests_total", "outcome", "ok"), N, 0);
    double failed = 0;
    for (int o = 1; o < REC_OUTCOME_COUNT; o++) failed += prom_get(&d, "dsperf_requests_total", "outcome", rec_outcome_name((rec_outcome)o));
    CHECK_NEAR(failed, 0, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_output_tokens_total", NULL, NULL), N * OUT, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_ttft_seconds_count", NULL, NULL), N, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_itl_seconds_count", NULL, NULL), N * (OUT - 1), 0);
    CHECK_NEAR(prom_get(&d, "dsperf_tpot_seconds_count", NULL, NULL), N, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_e2el_seconds_count", NULL, NULL), N, 0);
    /* the server waits 20 ms before the first token: no probe can see less */
    CHECK_NEAR(prom_get(&d, "dsperf_ttft_seconds_bucket", "le", "0.015"), 0, 0);
    /* generous SLO: every probe is good, no budget burns */
    CHECK_NEAR(prom_get(&d, "dsperf_slo_good_total", NULL, NULL), N, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_total", NULL, NULL), N, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_burn_rate", "window", "5m"), 0, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_target", NULL, NULL), 0.95, 1e-12);
    CHECK_NEAR(prom_get(&d, "dsperf_last_probe_success", NULL, NULL), 1, 0);
    int ok = 0;
    CHECK_EQ_INT(count_lines(log, &ok), N);
    CHECK_EQ_INT(ok, N);
    /* timing that holds on any machine: the server's deadlines are floors (20 ms to the first
     * token, 20 + (OUT - 1) x 5 ms to the last); how close the probes land is make bench's business */
    CHECK_MSG(prom_get(&d, "dsperf_ttft_seconds_sum", NULL, NULL) / N >= 0.020, "mean TTFT below the server's 20 ms");
    CHECK_MSG(prom_get(&d, "dsperf_e2el_seconds_sum", NULL, NULL) / N >= 0.020 + (OUT - 1) * 0.005,
              "mean E2EL below the server's %.0f ms", (0.020 + (OUT - 1) * 0.005) * 1e3);
    prom_doc_free(&d);
    free(text);
}

TEST(monitor_serve_injected_faults) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 1ms --fail-rate 0.3 --seed 11") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    const int N = 30;
    char args[1024];
    snprintf(args, sizeof args, "--url %s --rate 20/s --arrival constant --requests %d --dataset random:in=16,out=4 "
             "--slo-target 0.9 --linger 60s --quiet", s.url, N);
    mon_proc p;
    if (mon_start(&p, args) != 0) { CHECK_MSG(0, "monitor did not start"); mon_stop(&p); test_serve_stop(&s); return; }
    char line[512];
    CHECK(mon_wait_done(&p, line, sizeof line, 20000) == 0);
    prom_doc d, sd;
    char *text = scrape(&p, &d);
    char surl[128];
    snprintf(surl, sizeof surl, "%s/metrics", s.url);
    char *stext = test_http_get(surl);
    /* the run policy: a bounded run with server-side failures over --max-error-rate (1 %) exits 1 */
    CHECK_EQ_INT(mon_stop(&p), 1);
    test_serve_stop(&s);
    if (!text || !stext) { CHECK(0); free(text); free(stext); return; }
    prom_parse(stext, strlen(stext), &sd);
    double injected = prom_get(&sd, "dsperf_injected_faults_total", "kind", "http_500");
    double http = prom_get(&d, "dsperf_requests_total", "outcome", "http");
    double ok = prom_get(&d, "dsperf_requests_total", "outcome", "ok");
    CHECK_MSG(injected > 0 && injected < N, "seed 11 injects some faults: %g", injected);
    CHECK_NEAR(http, injected, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_http_errors_total", "code", "500"), injected, 0);
    CHECK_NEAR(ok + http, N, 0);
    /* no thresholds: the SLO is availability */
    CHECK_NEAR(prom_get(&d, "dsperf_slo_good_total", NULL, NULL), ok, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_total", NULL, NULL), N, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_window_probes", "window", "5m"), N, 0);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_burn_rate", "window", "5m"), (http / N) / (1 - 0.9), 1e-6);
    CHECK_NEAR(prom_get(&d, "dsperf_slo_burn_rate", "window", "6h"), (http / N) / (1 - 0.9), 1e-6);
    CHECK_NEAR(prom_get(&d, "dsperf_ttft_seconds_count", NULL, NULL), ok, 0);   /* failures have no latency */
    prom_doc_free(&d);
    prom_doc_free(&sd);
    free(text);
    free(stext);
}

/* A port nobody listens on (bound, then closed). */
static int dead_port(void) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bind(fd, (struct sockaddr *)&a, sizeof a);
    socklen_t l = sizeof a;
    getsockname(fd, (struct sockaddr *)&a, &l);
    close(fd);
    return ntohs(a.sin_port);
}

TEST(monitor_unreachable_endpoint_is_counted) {
    int port = dead_port();
    /* without --model the model list is asked for at each probe; with it, the probe itself fails.
     * Every probe fails: over the default --max-error-rate the bounded run exits 1; a rate of 100 %
     * allows it */
    const char *variants[] = { "", "--model m --max-error-rate 100%" };
    for (int v = 0; v < 2; v++) {
        char args[512];
        snprintf(args, sizeof args, "--url http://127.0.0.1:%d %s --rate 20/s --requests 4 --linger 60s --quiet", port, variants[v]);
        mon_proc p;
        if (mon_start(&p, args) != 0) { CHECK_MSG(0, "monitor did not start (%s)", variants[v]); mon_stop(&p); continue; }
        char line[512];
        CHECK(mon_wait_done(&p, line, sizeof line, 20000) == 0);
        CHECK(strstr(line, "done: 4 probes, 0 ok") != NULL);
        prom_doc d;
        char *text = scrape(&p, &d);
        CHECK_EQ_INT(mon_stop(&p), v == 0 ? 1 : 0);
        if (!text) { CHECK(0); continue; }
        CHECK_NEAR(prom_get(&d, "dsperf_requests_total", "outcome", "connect"), 4, 0);
        CHECK_NEAR(prom_get(&d, "dsperf_slo_good_total", NULL, NULL), 0, 0);
        CHECK_NEAR(prom_get(&d, "dsperf_slo_total", NULL, NULL), 4, 0);
        CHECK_NEAR(prom_get(&d, "dsperf_last_probe_success", NULL, NULL), 0, 0);
        prom_doc_free(&d);
        free(text);
    }
}

TEST(monitor_duration_bound) {
    /* constant arrivals from t0 every 100 ms; the last one before 650 ms is the 7th (at 600 ms).
     * The schedule, not the wall clock, decides the count: exact. */
    char args[512];
    snprintf(args, sizeof args, "--url http://127.0.0.1:%d --model m --rate 10/s --arrival constant --duration 650ms --linger 60s --quiet", dead_port());
    mon_proc p;
    if (mon_start(&p, args) != 0) { CHECK_MSG(0, "monitor did not start"); mon_stop(&p); return; }
    char line[512];
    CHECK(mon_wait_done(&p, line, sizeof line, 10000) == 0);
    CHECK_MSG(strstr(line, "done: 7 probes, 0 ok") != NULL, "%s", line);
    CHECK_EQ_INT(mon_stop(&p), 1);   /* every probe failed (connect): over --max-error-rate */
}

TEST(monitor_runs_until_signal) {
    test_server s;
    if (test_serve_start(&s, "--ttft 5ms --itl 2ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[512];
    snprintf(args, sizeof args, "--url %s --rate 20/s --dataset random:in=16,out=8 --quiet", s.url);
    mon_proc p;
    if (mon_start(&p, args) != 0) { CHECK_MSG(0, "monitor did not start"); mon_stop(&p); test_serve_stop(&s); return; }
    /* no bound: it probes until told to stop; wait until some probes finished, then SIGTERM */
    double ok = 0;
    for (int i = 0; i < 100 && !(ok >= 3); i++) {
        usleep(50000);
        char *t = test_http_get(p.metrics_url);
        if (t) ok = test_prom_value(t, "dsperf_requests_total{outcome=\"ok\"}");
        free(t);
    }
    CHECK_MSG(ok >= 3, "probes completed before the stop: %g", ok);
    kill(p.pid, SIGTERM);
    char line[512];
    CHECK(mon_wait_done(&p, line, sizeof line, 5000) == 0);
    CHECK(strstr(line, "stopped by a signal") != NULL);
    CHECK_EQ_INT(mon_stop(&p), 0);
    test_serve_stop(&s);
}

/* Polls the monitor's exporter until outcome's counter reaches at least want (5 s at most). */
static double wait_outcome(const mon_proc *p, const char *outcome, double want) {
    char key[96];
    snprintf(key, sizeof key, "dsperf_requests_total{outcome=\"%s\"}", outcome);
    double v = NAN;
    for (int i = 0; i < 100; i++) {
        char *t = test_http_get(p->metrics_url);
        if (t) v = test_prom_value(t, key);
        free(t);
        if (v >= want) break;
        usleep(50000);
    }
    return v;
}

TEST(monitor_survives_endpoint_restart) {
    test_server a, b;
    if (test_serve_start(&a, "--ttft 2ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[512];
    snprintf(args, sizeof args, "--url %s --rate 20/s --arrival constant --dataset random:in=8,out=4 --quiet", a.url);
    mon_proc p;
    if (mon_start(&p, args) != 0) { CHECK_MSG(0, "monitor did not start"); mon_stop(&p); test_serve_stop(&a); return; }
    double ok1 = wait_outcome(&p, "ok", 3);
    CHECK_MSG(ok1 >= 3, "ok before the restart: %g", ok1);
    int port = a.port;
    test_serve_stop(&a);                          /* the endpoint goes away: probes fail as connect */
    double down = wait_outcome(&p, "connect", 2);
    CHECK_MSG(down >= 2, "connect failures while down: %g", down);
    char again[64];
    snprintf(again, sizeof again, "--ttft 2ms --itl 1ms --port %d", port);   /* the last --port wins */
    if (test_serve_start(&b, again) != 0) { CHECK_MSG(0, "serve did not restart on port %d", port); mon_stop(&p); return; }
    double ok_before = wait_outcome(&p, "ok", 0);
    double ok2 = wait_outcome(&p, "ok", ok_before + 3);   /* and it recovers by itself */
    CHECK_MSG(ok2 >= ok_before + 3, "ok after the restart: %g (was %g)", ok2, ok_before);
    CHECK_EQ_INT(mon_stop(&p), 0);
    test_serve_stop(&b);
}

TEST(monitor_bad_flags_exit_2) {
    const char *bad[] = {
        "monitor --rate 1/s",                                        /* no --url */
        "monitor --url ftp://x:1",
        "monitor --url 'http://'",
        "monitor --url http://127.0.0.1:1 --rate 0/s",
        "monitor --url http://127.0.0.1:1 --rate fast",
        "monitor --url http://127.0.0.1:1 --arrival gamma:2",
        "monitor --url http://127.0.0.1:1 --slo-target 1",
        "monitor --url http://127.0.0.1:1 --slo ttft=abc",
        "monitor --url http://127.0.0.1:1 --listen nowhere",
        "monitor --url http://127.0.0.1:1 --listen :70000",
        "monitor --url http://127.0.0.1:1 --requests 0",
        "monitor --url http://127.0.0.1:1 --bogus",
        "monitor --url http://127.0.0.1:1 extra",
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char *out = NULL, *err = NULL;
        int rc = test_run(bad[i], &out, &err);
        CHECK_MSG(rc == 2, "'%s' exited %d", bad[i], rc);
        size_t lines = 0;
        for (const char *c = err ? err : ""; *c; c++) lines += *c == '\n';
        CHECK_MSG(lines == 1 && strstr(err, "dsperf: error:"), "'%s' said: %s", bad[i], err ? err : "");
        CHECK_MSG(!out || !*out, "'%s' printed on stdout: %s", bad[i], out);
        free(out);
        free(err);
    }
    char *out = NULL;
    CHECK_EQ_INT(test_run("monitor --help", &out, NULL), 0);
    CHECK(out && strstr(out, "examples:"));
    free(out);
}

/* In process: records are recycled, so a run holds only as many as were in flight at once. */
TEST(monitor_memory_bounded_in_process) {
    test_server s;
    if (test_serve_start(&s, "--ttft 1ms --itl 1ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char err[512];
    dataset *ds = NULL;
    CHECK(dataset_open("random:in=8,out=4", 16, 1, &(dataset_opts){ .tolerance = 0.05 }, &ds, err, sizeof err) == 0);
    if (!ds) { test_serve_stop(&s); return; }
    monitor_opts o;
    monitor_default_opts(&o);
    o.client.base_url = s.url;
    o.client.api = OPENAI_COMPLETIONS;
    o.client.model = NULL;            /* resolved by the pre-flight inside the loop */
    o.client.timeout_ns = 10 * NS_PER_S;
    o.client.ignore_eos = true;
    o.client.include_usage = true;
    o.ds = ds;
    o.arr.kind = ARRIVAL_CONSTANT;
    o.arr.rate_per_s = 200;
    o.requests = 200;
    o.max_in_flight = 16;             /* the bound the records must keep to */
    o.listen_port = 0;
    monitor *m = monitor_new(&o, err, sizeof err);
    CHECK_MSG(m != NULL, "%s", err);
    if (!m) { dataset_free(ds); test_serve_stop(&s); return; }
    CHECK(monitor_port(m) > 0);
    ds_stop_flag stop = 0;
    monitor_totals t;
    CHECK(monitor_run(m, &stop, &t, err, sizeof err) == 0);
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%d/metrics", monitor_port(m));
    char *text = test_http_get(url);   /* the exporter still serves after the run */
    /* every due probe is sent or skipped (a busy host delays probes until the cap is reached);
     * each one sent succeeds */
    double skipped = text ? test_prom_value(text, "dsperf_probes_skipped_total") : NAN;
    CHECK_MSG(t.probes + skipped == 200, "probes %zu + skipped %.0f", t.probes, skipped);
    CHECK_EQ_INT(t.ok, t.probes);
    /* records are the peak in flight, recycled: at most the cap, never one per probe (each probe
     * takes ~5 ms at 5 ms spacing: many more probes than the cap are sent) */
    CHECK_MSG(t.probes > 2 * (size_t)o.max_in_flight, "only %zu probes sent", t.probes);
    CHECK_MSG(t.records >= 1 && t.records <= (size_t)o.max_in_flight, "records allocated: %zu for %zu probes", t.records,
              t.probes);
    CHECK(text && test_prom_value(text, "dsperf_requests_total{outcome=\"ok\"}") == (double)t.ok);
    CHECK(text && strstr(text, "dsperf_monitor_info{url=\"") && strstr(text, "model=\"deepseek-ai/DeepSeek-V2-Lite\""));
    free(text);
    monitor_free(m);
    dataset_free(ds);
    test_serve_stop(&s);
}

/* A probe with a reasoning phase: 4 reasoning chunks at +50..+80 ms, the answer from +90 ms, so
 * TTFA is 90 ms; the TTFA SLO judges it, and dsperf_ttfa_seconds appears once such a probe was
 * seen (absent before: a model that does not reason shows no TTFA). */
TEST(monitor_ttfa_probe_slo_and_histogram) {
    record r;
    mon_probe p;
    fake_record(&r, REC_OK, 50 * NS_PER_MS, 10 * NS_PER_MS, 11);
    mon_slo slo = { .ttfa_s = 0.08, .target = 0.9 };
    mon_metrics m;
    mon_metrics_init(&m, &slo, 1, "http://h:1", "chat");
    CHECK(mon_metrics_fold(&m, &r, 100 * NS_PER_S, 1.7e9));      /* no reasoning: judged by TTFT 50 ms */
    size_t len;
    char *text = mon_metrics_format(&m, 100 * NS_PER_S, &len);
    CHECK(text && !strstr(text, "dsperf_ttfa_seconds"));
    CHECK(text && strstr(text, "dsperf_slo_threshold_seconds{sli=\"ttfa\"} 0.08"));
    free(text);
    r.reasoning_chunks = 4;
    r.answer_ns = r.chunk_ns[4];
    r.reasoning_tokens_client = 4;
    r.reasoning_tokens_server = -1;
    mon_probe_measure(&r, &p);
    CHECK(p.has_reasoning);
    CHECK_NEAR(p.ttfa_s, 0.09, 1e-12);
    CHECK(!mon_slo_good(&slo, &p));
    slo.ttfa_s = 0.09;
    CHECK(mon_slo_good(&slo, &p));
    CHECK(!mon_metrics_fold(&m, &r, 100 * NS_PER_S, 1.7e9 + 1));  /* the monitor's SLO is still 80 ms */
    text = mon_metrics_format(&m, 100 * NS_PER_S, &len);
    CHECK(text && strstr(text, "dsperf_ttfa_seconds_count 1"));
    free(text);
    mon_metrics_free(&m);
    record_free(&r);
}
