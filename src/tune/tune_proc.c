/* tune_proc — one server per configuration: a free loopback port, the command started through
 * /bin/sh in its own process group (so a server that forks workers is stopped as a whole, and a
 * terminal's Ctrl-C reaches tune, which then stops it), the health wait, the stop (SIGTERM, then
 * SIGKILL after a grace period) and the tail of its log for the failure report. */
#include "tune/tune.h"
#include "common/http.h"
#include "common/stop.h"
#include "common/curl_init.h"
#include "common/clock.h"
#include "common/redact.h"
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <arpa/inet.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void sleep_ms(int ms);

int tune_free_port(char *err, size_t errlen) {
    int fd = socket(AF_INET, SOCK_STREAM, 0);
    if (fd < 0) { snprintf(err, errlen, "socket: %s", strerror(errno)); return -1; }
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK), .sin_port = 0 };
    socklen_t len = sizeof a;
    if (bind(fd, (struct sockaddr *)&a, sizeof a) < 0 || getsockname(fd, (struct sockaddr *)&a, &len) < 0) {
        snprintf(err, errlen, "no free port on 127.0.0.1: %s", strerror(errno));
        close(fd);
        return -1;
    }
    close(fd);
    return ntohs(a.sin_port);
}

/* Forks a child in its own process group with stdin from /dev/null, stdout to /dev/null when
 * out_null (else the log) and stderr to log_path, and execs path with argv. */
static int spawn(tune_proc *p, const char *path, char *const argv[], const char *log_path, bool out_null, char *err,
                 size_t errlen) {
    memset(p, 0, sizeof *p);
    int log_fd = open(log_path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (log_fd < 0) { snprintf(err, errlen, "cannot open the log %s: %s", log_path, strerror(errno)); return -1; }
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid < 0) {
        snprintf(err, errlen, "fork: %s", strerror(errno));
        close(log_fd);
        return -1;
    }
    if (pid == 0) {
        setpgid(0, 0);
        /* if tune dies without stopping it (SIGKILL), the child gets SIGTERM rather than lingering */
        prctl(PR_SET_PDEATHSIG, SIGTERM);
        /* the child must not inherit tune's handlers or ignored signals */
        signal(SIGINT, SIG_DFL);
        signal(SIGTERM, SIG_DFL);
        signal(SIGPIPE, SIG_DFL);
        int null_in = open("/dev/null", O_RDONLY), null_out = out_null ? open("/dev/null", O_WRONLY) : -1;
        if (null_in >= 0) dup2(null_in, 0);
        dup2(null_out >= 0 ? null_out : log_fd, 1);
        dup2(log_fd, 2);
        execv(path, argv);
        dprintf(2, "cannot run %s: %s\n", path, strerror(errno));
        _exit(127);
    }
    setpgid(pid, pid);   /* also here: whichever runs first, the group exists before we signal it */
    close(log_fd);
    p->pid = pid;
    return 0;
}

int tune_proc_spawn(tune_proc *p, char *const argv[], const char *log_path, char *err, size_t errlen) {
    return spawn(p, argv[0], argv, log_path, true, err, errlen);
}

int tune_proc_wait(tune_proc *p, ds_stop_flag *stop, int64_t grace_ns) {
    while (tune_proc_alive(p)) {
        if (stop && *stop) { tune_proc_stop(p, grace_ns); return -1; }
        sleep_ms(5);
    }
    return 0;
}

int tune_proc_start(tune_proc *p, const char *cmd, const char *log_path, char *err, size_t errlen) {
    char *const argv[] = { "sh", "-c", (char *)cmd, NULL };
    return spawn(p, "/bin/sh", argv, log_path, false, err, errlen);
}

bool tune_proc_alive(tune_proc *p) {
    if (!p->pid || p->exited) return false;
    int st;
    pid_t r = waitpid(p->pid, &st, WNOHANG);
    if (r == p->pid) { p->exited = true; p->status = st; return false; }
    return true;
}

void tune_describe_status(int status, char *buf, size_t len) {
    if (WIFEXITED(status)) snprintf(buf, len, "exited with status %d", WEXITSTATUS(status));
    else if (WIFSIGNALED(status)) snprintf(buf, len, "killed by signal %d", WTERMSIG(status));
    else snprintf(buf, len, "ended (wait status %d)", status);
}

/* The HTTP status of GET url, 0 when there was no answer. */
static long http_status(http_get *h, const char *url) {
    long code = 0;
    char why[160];
    return http_get_perform(h, url, &code, NULL, NULL, why, sizeof why) == CURLE_OK ? code : 0;
}

static void sleep_ms(int ms) {
    struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000L };
    while (nanosleep(&ts, &ts) < 0 && errno == EINTR) {}
}

int tune_wait_healthy(tune_proc *p, const char *base_url, int64_t timeout_ns, ds_stop_flag *stop,
                      const char **path_out, char *err, size_t errlen) {
    /* the server root: the base without a trailing '/' or "/v1"; a query (?api_key=...) kept */
    char root[1024];
    const char *q = strchr(base_url, '?');
    snprintf(root, sizeof root, "%.*s", q ? (int)(q - base_url) : (int)strlen(base_url), base_url);
    size_t n = strlen(root);
    while (n && root[n - 1] == '/') root[--n] = 0;
    if (n >= 3 && !strcmp(root + n - 3, "/v1")) root[n -= 3] = 0;
    char health[2100], models[2100];
    snprintf(health, sizeof health, "%s/health%s", root, q ? q : "");
    snprintf(models, sizeof models, "%s/v1/models%s", root, q ? q : "");
    http_opts ho = { .timeout_ns = 2 * NS_PER_S, .connect_timeout_ns = NS_PER_S, .discard_body = true, .fresh_connection = true };
    http_get *h = http_get_new(&ho, err, errlen);
    if (!h) return -2;
    int64_t t0 = clock_now_ns();
    int rc;
    for (;;) {
        if (stop && *stop) { snprintf(err, errlen, "interrupted while waiting for the server"); rc = -3; break; }
        if (!tune_proc_alive(p)) {
            char st[64];
            tune_describe_status(p->status, st, sizeof st);
            snprintf(err, errlen, "the server %s before it answered %s", st, health);
            rc = -1;
            break;
        }
        if (http_status(h, health) == 200) { *path_out = "/health"; rc = 0; break; }
        if (http_status(h, models) == 200) { *path_out = "/v1/models"; rc = 0; break; }
        int64_t waited = clock_now_ns() - t0;
        if (waited >= timeout_ns) {
            snprintf(err, errlen, "the server did not answer 200 on %s or /v1/models within %.1f s (--health-timeout)",
                     health, timeout_ns / 1e9);
            rc = -2;
            break;
        }
        sleep_ms(200);
    }
    http_get_free(h);
    return rc;
}

/* Waits up to grace_ns for the leader to exit and the group to empty. True when both happened. */
static bool wait_gone(tune_proc *p, int64_t grace_ns) {
    int64_t end = clock_now_ns() + grace_ns;
    for (;;) {
        bool leader = tune_proc_alive(p);
        /* members of the group that outlive the shell (a server started in the background) */
        bool group = kill(-p->pid, 0) == 0;
        if (!leader && !group) return true;
        if (clock_now_ns() >= end) return false;
        sleep_ms(20);
    }
}

int tune_proc_stop(tune_proc *p, int64_t grace_ns) {
    if (!p->pid) return 0;
    kill(-p->pid, SIGTERM);
    int rc = 0;
    if (!wait_gone(p, grace_ns)) {
        kill(-p->pid, SIGKILL);
        rc = 1;
        if (!p->exited) {
            int st;
            while (waitpid(p->pid, &st, 0) < 0 && errno == EINTR) {}
            p->exited = true;
            p->status = st;
        }
        wait_gone(p, NS_PER_S);
    }
    return rc;
}

char *tune_log_tail(const char *path, int max_lines, size_t max_bytes) {
    FILE *f = fopen(path, "rb");
    if (!f) return strdup("");
    fseek(f, 0, SEEK_END);
    long size = ftell(f);
    long from = size > (long)max_bytes ? size - (long)max_bytes : 0;
    fseek(f, from, SEEK_SET);
    char *buf = malloc(max_bytes + 1);
    size_t n = buf ? fread(buf, 1, max_bytes, f) : 0;
    fclose(f);
    if (!buf) return strdup("");
    buf[n] = 0;
    while (n && buf[n - 1] == '\n') buf[--n] = 0;
    /* keep the last max_lines lines */
    int lines = 0;
    size_t start = 0;
    for (size_t i = n; i > 0; i--) {
        if (buf[i - 1] == '\n' && ++lines >= max_lines) { start = i; break; }
    }
    char *out = redact_text(buf + start);   /* the tail goes into the tune file */
    free(buf);
    return out ? out : strdup("");
}

double tune_detect_speedup(const char *cmd) {
    if (!strstr(cmd, "serve")) return 1;
    const char *p = strstr(cmd, "--speedup");
    if (!p) return 1;
    p += strlen("--speedup");
    while (*p == ' ' || *p == '=' || *p == '\'' || *p == '"') p++;
    char *end;
    double k = strtod(p, &end);
    return end != p && k > 0 ? k : 1;
}
