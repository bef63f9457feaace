/* testutil — process and socket helpers for the integration tests. */
#include "testutil.h"
#include "harness.h"
#include "common/fileio.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <signal.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/socket.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <arpa/inet.h>
#include <curl/curl.h>
#include <time.h>
#include <math.h>
#include <stdbool.h>
#include <stdatomic.h>

/* Splits a command line on spaces; '...' groups. Returns argv (malloc'd, strings in buf). */
static char **split_args(const char *args, char **buf_out) {
    char *buf = strdup(args);
    char **argv = calloc(strlen(args) + 3, sizeof *argv);
    int n = 0;
    argv[n++] = (char *)harness_bin();
    char *p = buf, *w = buf;
    while (*p) {
        while (*p == ' ') p++;
        if (!*p) break;
        argv[n++] = w;
        while (*p && *p != ' ') {
            if (*p == '\'') { p++; while (*p && *p != '\'') *w++ = *p++; if (*p) p++; }
            else *w++ = *p++;
        }
        if (*p) p++;
        *w++ = 0;
    }
    argv[n] = NULL;
    *buf_out = buf;
    return argv;
}

static char *slurp_fd(int fd) {
    size_t cap = 4096, n = 0;
    char *b = malloc(cap);
    for (;;) {
        if (n + 1024 > cap) { cap *= 2; b = realloc(b, cap); }
        ssize_t r = read(fd, b + n, cap - n - 1);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) break;
        n += (size_t)r;
    }
    b[n] = 0;
    return b;
}

static double cmd_timeout_s(void) {
    const char *e = getenv("DSPERF_TEST_CMD_TIMEOUT");
    return e && atof(e) > 0 ? atof(e) : 240;
}

/* waitpid with a deadline: a command that never ends must not hang the test run. 1 when killed. */
static int wait_child(pid_t pid, int *status) {
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (;;) {
        pid_t r = waitpid(pid, status, WNOHANG);
        if (r == pid) return 0;
        if (r < 0 && errno != EINTR) return 0;
        clock_gettime(CLOCK_MONOTONIC, &t);
        if ((double)(t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 > cmd_timeout_s()) {
            kill(pid, SIGKILL);
            waitpid(pid, status, 0);
            return 1;
        }
        usleep(2000);
    }
}

typedef struct { int fd; char *text; } reader;
static void *read_thread(void *arg) { reader *r = arg; r->text = slurp_fd(r->fd); return NULL; }

/* When to send SIGINT to a running command: after a delay, when a file exists, or when a
 * `dsperf serve` has answered enough requests and still has some in flight. */
typedef struct {
    int delay_ms;
    const char *file;
    const char *copy_to;   /* with file: its bytes as they were when it appeared, kept here */
    const test_server *server;
    int min_done, min_running;
} interrupt_at;

/* The served counts of a `dsperf serve`, from its /metrics: done = every finished reason's
 * request_success_total summed. 0 when the numbers could be read. */
static int served_counts(const test_server *s, double *done, double *running) {
    char url[128];
    snprintf(url, sizeof url, "%s/metrics", s->url);
    char *m = test_http_get(url);
    if (!m) return -1;
    *done = 0;
    *running = test_prom_value(m, "vllm:num_requests_running{");
    const char *key = "vllm:request_success_total{";
    for (const char *l = strstr(m, key); l; l = strstr(l + 1, key)) {
        if (l != m && l[-1] != '\n') continue;
        *done += test_prom_value(l, key);
    }
    free(m);
    return isnan(*running) ? -1 : 0;
}

static bool interrupt_due(const interrupt_at *at) {
    if (at->file) {   /* there and written to: a log the command opens before it forks has nothing yet */
        struct stat st;
        return stat(at->file, &st) == 0 && st.st_size > 0;
    }
    double done, running;
    return served_counts(at->server, &done, &running) == 0 && done >= at->min_done && running >= at->min_running;
}

static int run_impl(const char *args, const interrupt_at *at, char **out, char **err) {
    int po[2], pe[2];
    if (pipe(po) < 0 || pipe(pe) < 0) return -1;
    char *buf;
    char **argv = split_args(args, &buf);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], 1); dup2(pe[1], 2);
        close(po[0]); close(pe[0]); close(po[1]); close(pe[1]);
        execv(argv[0], argv);
        _exit(127);
    }
    close(po[1]); close(pe[1]);
    reader ro = { po[0], NULL }, re = { pe[0], NULL };
    pthread_t to, te;
    pthread_create(&to, NULL, read_thread, &ro);
    pthread_create(&te, NULL, read_thread, &re);
    if (at && at->delay_ms > 0) {
        struct timespec ts = { at->delay_ms / 1000, (at->delay_ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
        kill(pid, SIGINT);
    } else if (at) {
        /* poll while the command runs; the moment never coming is the command's failure (the
         * command's own deadline ends the wait) */
        for (;;) {
            if (interrupt_due(at)) {
                if (at->file && at->copy_to) {   /* written atomically (rename): whole when it exists */
                    int fd = open(at->file, O_RDONLY | O_CLOEXEC);
                    char *text = fd >= 0 ? slurp_fd(fd) : NULL;
                    if (fd >= 0) close(fd);
                    FILE *f = text ? fopen(at->copy_to, "w") : NULL;
                    if (f) { fputs(text, f); fclose(f); }
                    free(text);
                }
                break;
            }
            siginfo_t si = { 0 };
            if (waitid(P_PID, (id_t)pid, &si, WEXITED | WNOHANG | WNOWAIT) != 0 || si.si_pid == pid) break;   /* it ended */
            usleep(at->file ? 5000 : 20000);
        }
        kill(pid, SIGINT);
    }
    int status = 0;
    int timed_out = wait_child(pid, &status);
    pthread_join(to, NULL);
    pthread_join(te, NULL);
    close(po[0]); close(pe[0]);
    if (out) *out = ro.text; else free(ro.text);
    if (err) *err = re.text; else { if (re.text && *re.text && getenv("DSPERF_TEST_VERBOSE")) fputs(re.text, stderr); free(re.text); }
    free(argv);
    free(buf);
    if (timed_out) {
        fprintf(stderr, "    killed after %.0f s: dsperf %s\n", cmd_timeout_s(), args);
        return 124;
    }
    return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int test_run(const char *args, char **out, char **err) { return run_impl(args, NULL, out, err); }
int test_run_interrupt(const char *args, int delay_ms, char **out, char **err) {
    interrupt_at at = { .delay_ms = delay_ms };
    return run_impl(args, &at, out, err);
}
int test_run_interrupt_when_file(const char *args, const char *path, char **out, char **err) {
    interrupt_at at = { .file = path };
    return run_impl(args, &at, out, err);
}
int test_run_interrupt_when_file_kept(const char *args, const char *path, const char *copy_to, char **out, char **err) {
    interrupt_at at = { .file = path, .copy_to = copy_to };
    return run_impl(args, &at, out, err);
}
int test_run_interrupt_when_served(const char *args, const test_server *s, int min_done, int min_running, char **out,
                                   char **err) {
    interrupt_at at = { .server = s, .min_done = min_done, .min_running = min_running };
    return run_impl(args, &at, out, err);
}

int test_serve_start(test_server *s, const char *args) {
    char full[2048];
    snprintf(full, sizeof full, "serve --port 0 --duration 300s %s", args ? args : "");
    int po[2];
    if (pipe(po) < 0) return -1;
    char *buf;
    char **argv = split_args(full, &buf);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(po[1], 1);
        close(po[0]); close(po[1]);
        if (!getenv("DSPERF_TEST_VERBOSE")) { int dn = open("/dev/null", O_WRONLY); dup2(dn, 2); }
        execv(argv[0], argv);
        _exit(127);
    }
    free(argv);
    free(buf);
    close(po[1]);
    s->pid = pid;
    s->port = 0;
    char line[512];
    size_t n = 0;
    struct pollfd pf = { .fd = po[0], .events = POLLIN };
    while (n < sizeof line - 1 && poll(&pf, 1, 10000) > 0) {
        ssize_t r = read(po[0], line + n, 1);
        if (r <= 0) break;
        if (line[n] == '\n') { line[n] = 0; break; }
        n++;
    }
    line[n] = 0;
    close(po[0]);
    const char *u = strstr(line, "http://");
    if (!u) { kill(pid, SIGKILL); waitpid(pid, NULL, 0); return -1; }   /* killed: waitpid returns at once */
    snprintf(s->url, sizeof s->url, "%s", u);
    const char *colon = strrchr(s->url, ':');
    s->port = atoi(colon + 1);
    return 0;
}

int test_serve_stop(test_server *s) {
    int rc = -1, st;
    if (s->pid > 0) {
        kill(s->pid, SIGTERM);
        for (int i = 0; i < 200; i++) {
            if (waitpid(s->pid, &st, WNOHANG) == s->pid) {
                s->pid = 0;
                return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
            }
            usleep(10000);
        }
        kill(s->pid, SIGKILL);
        waitpid(s->pid, NULL, 0);
        s->pid = 0;
    }
    return rc;
}

char *test_run_merged(const char *args, int *status) {
    size_t clen = strlen(harness_bin()) + strlen(args) + 16;
    char *cmd = malloc(clen);
    snprintf(cmd, clen, "%s %s 2>&1", harness_bin(), args);
    FILE *p = popen(cmd, "r");
    free(cmd);
    *status = -1;
    if (!p) return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while (buf && (k = fread(buf + n, 1, cap - n - 1, p)) > 0) {
        n += k;
        if (n + 1 == cap) buf = realloc(buf, cap *= 2);
    }
    if (buf) buf[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

int test_run_into(const char *args, char *out, size_t cap) {
    int st;
    char *all = test_run_merged(args, &st);
    if (!all) return -1;
    snprintf(out, cap, "%s", all);
    free(all);
    return st;
}

json_t *test_load_json(const char *path) { return json_load_file(path, 0, NULL); }

int test_cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

double test_quantile_sorted(const double *v, size_t n, double q) {
    if (n == 0) return NAN;
    double pos = q * (double)(n - 1);
    size_t i = (size_t)pos;
    if (i + 1 >= n) return v[n - 1];
    return v[i] + (pos - (double)i) * (v[i + 1] - v[i]);
}

double test_num(const json_t *o, const char *key) {
    json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

typedef struct { char *p; size_t n; } mbuf;
static size_t mwrite(char *b, size_t s, size_t n, void *ud) {
    mbuf *m = ud;
    m->p = realloc(m->p, m->n + s * n + 1);
    memcpy(m->p + m->n, b, s * n);
    m->n += s * n;
    m->p[m->n] = 0;
    return s * n;
}

char *test_http_get(const char *url) {
    CURL *e = curl_easy_init();
    mbuf m = {0};
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, mwrite);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &m);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 10L);
    CURLcode rc = curl_easy_perform(e);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK) { free(m.p); return NULL; }
    return m.p ? m.p : strdup("");
}

double test_prom_value(const char *text, const char *prefix) {
    size_t pl = strlen(prefix);
    for (const char *l = text; l && *l;) {
        if (!strncmp(l, prefix, pl)) {
            const char *sp = strrchr(l, ' ');
            const char *nl = strchr(l, '\n');
            /* the value is the last field of the line */
            const char *v = l;
            for (const char *q = l; q < (nl ? nl : l + strlen(l)); q++) if (*q == ' ') v = q + 1;
            (void)sp;
            return atof(v);
        }
        l = strchr(l, '\n');
        if (l) l++;
    }
    return NAN;
}

/* ---- scripted server ---- */

static void write_all(int fd, const char *p, size_t n) {
    while (n) {
        ssize_t w = write(fd, p, n);
        if (w <= 0) return;
        p += w;
        n -= (size_t)w;
    }
}

#define SCRIPT_ROUTES 8
struct test_script {
    int lfd;
    pthread_t th;
    atomic_int stop;   /* set by the test's thread, read by the server thread */
    char *resp;
    size_t len, piece;
    pthread_mutex_t mu;            /* guards the routes (added while the thread runs) and seen */
    struct { char prefix[64]; char *resp; size_t len; } routes[SCRIPT_ROUTES];
    int n_routes;
    char *seen;                    /* every request read, for test_script_requests */
    size_t seen_n;
};

static void remember(test_script *s, const char *req, size_t n) {
    pthread_mutex_lock(&s->mu);
    if (s->seen_n + n <= (1u << 20)) {
        char *p = realloc(s->seen, s->seen_n + n + 1);
        if (p) { memcpy(p + s->seen_n, req, n); s->seen_n += n; p[s->seen_n] = 0; s->seen = p; }
    }
    pthread_mutex_unlock(&s->mu);
}

char *test_script_requests(test_script *s) {
    pthread_mutex_lock(&s->mu);
    char *r = strdup(s->seen ? s->seen : "");
    pthread_mutex_unlock(&s->mu);
    return r;
}


static void write_pieces(int fd, const char *p, size_t len, size_t piece) {
    for (size_t off = 0; off < len; off += piece) {
        size_t k = len - off < piece ? len - off : piece;
        write_all(fd, p + off, k);
        usleep(2000);
    }
}

/* A registered route's response for this request head, copied (NULL: none matches). */
static char *route_for(test_script *s, const char *req, size_t *len) {
    char *out = NULL;
    pthread_mutex_lock(&s->mu);
    for (int i = 0; i < s->n_routes && !out; i++)
        if (!strncmp(req, s->routes[i].prefix, strlen(s->routes[i].prefix)) && (out = malloc(s->routes[i].len + 1))) {
            memcpy(out, s->routes[i].resp, s->routes[i].len);
            *len = s->routes[i].len;
        }
    pthread_mutex_unlock(&s->mu);
    return out;
}


static void *script_thread(void *arg) {
    test_script *s = arg;
    while (!atomic_load(&s->stop)) {
        struct pollfd pf = { .fd = s->lfd, .events = POLLIN };
        if (poll(&pf, 1, 50) <= 0) continue;
        int fd = accept(s->lfd, NULL, NULL);
        if (fd < 0) continue;
        int one = 1;
        setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
        /* one request per connection: read the head (and any body), answer, close */
        char req[65536];
        size_t n = 0;
        for (;;) {
            struct pollfd rp = { .fd = fd, .events = POLLIN };
            if (poll(&rp, 1, 2000) <= 0) break;
            ssize_t r = read(fd, req + n, sizeof req - 1 - n);
            if (r <= 0) break;
            n += (size_t)r;
            req[n] = 0;
            char *end = strstr(req, "\r\n\r\n");
            if (!end) continue;
            const char *cl = strcasestr(req, "content-length:");
            size_t body = cl ? (size_t)atol(cl + 15) : 0;
            if (n >= (size_t)(end + 4 - req) + body) break;
        }
        remember(s, req, n);
        size_t rlen = 0;
        char *routed = route_for(s, req, &rlen);
        if (routed) {
            write_pieces(fd, routed, rlen, s->piece < rlen ? s->piece : rlen);
            free(routed);
        } else if (!strncmp(req, "GET /v1/models", 14)) {
            const char *b = "{\"object\":\"list\",\"data\":[{\"id\":\"scripted\",\"object\":\"model\"}]}";
            char h[256];
            snprintf(h, sizeof h, "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %zu\r\nConnection: close\r\n\r\n", strlen(b));
            write_all(fd, h, strlen(h));
            write_all(fd, b, strlen(b));
        } else {
            write_pieces(fd, s->resp, s->len, s->piece);
        }
        close(fd);
    }
    return NULL;
}

test_script *test_script_start(const char *response, size_t len, size_t piece, int *port) {
    test_script *s = calloc(1, sizeof *s);
    s->resp = malloc(len);
    memcpy(s->resp, response, len);
    s->len = len;
    s->piece = piece ? piece : len;
    pthread_mutex_init(&s->mu, NULL);
    s->lfd = socket(AF_INET, SOCK_STREAM, 0);
    int one = 1;
    setsockopt(s->lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    bind(s->lfd, (struct sockaddr *)&a, sizeof a);
    listen(s->lfd, 64);
    socklen_t al = sizeof a;
    getsockname(s->lfd, (struct sockaddr *)&a, &al);
    *port = ntohs(a.sin_port);
    pthread_create(&s->th, NULL, script_thread, s);
    return s;
}

void test_script_stop(test_script *s) {
    if (!s) return;
    atomic_store(&s->stop, 1);
    pthread_join(s->th, NULL);
    close(s->lfd);
    free(s->resp);
    free(s->seen);
    for (int i = 0; i < s->n_routes; i++) free(s->routes[i].resp);
    pthread_mutex_destroy(&s->mu);
    free(s);
}

void test_script_route(test_script *s, const char *request_prefix, const char *response, size_t len) {
    char *copy = malloc(len ? len : 1);
    if (!copy) return;
    memcpy(copy, response, len);
    pthread_mutex_lock(&s->mu);
    if (s->n_routes < SCRIPT_ROUTES) {
        snprintf(s->routes[s->n_routes].prefix, sizeof s->routes[0].prefix, "%s", request_prefix);
        s->routes[s->n_routes].resp = copy;
        s->routes[s->n_routes++].len = len;
        copy = NULL;
    }
    pthread_mutex_unlock(&s->mu);
    free(copy);
}
