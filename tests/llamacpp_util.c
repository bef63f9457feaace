/* llamacpp_util — starts and stops the real llama-server that `make real-engine` built (see
 * llamacpp_util.h). Loopback only; the port is the kernel's choice (--port 0), read back from the
 * server's own log line, so tests never collide. */
#include "llamacpp_util.h"
#include "harness.h"
#include <curl/curl.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

const char *test_llama_dir(void) {
    const char *d = getenv("DSPERF_ENGINE_DIR");
    return d && *d ? d : "build-engine";
}

const char *test_llama_model(const char *name) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/models/%s.gguf", test_llama_dir(), name);
    return access(path, R_OK) == 0 ? path : NULL;
}

int test_llama_available(const char **why, int *shared_absent) {
    static char msg[1400];
    char bin[1024], tarball[1024];
    snprintf(bin, sizeof bin, "%s/bin/llama-server", test_llama_dir());
    const char *td = harness_testdata();
    snprintf(tarball, sizeof tarball, "%s/../engines/llama.cpp-c392e50-src.tar.gz", td);
    *shared_absent = access(tarball, R_OK) != 0;
    if (access(bin, X_OK) != 0 || !test_llama_model("tiny")) {
        snprintf(msg, sizeof msg, "the real engine is not built (%s or its tiny model is missing): run `make real-engine`", bin);
        *why = msg;
        return 0;
    }
    *why = "";
    return 1;
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void pause_ms(long ms) {
    struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
    nanosleep(&ts, NULL);
}

/* The port from the log line "HTTP server is listening, hostname: H, port: N"; 0 until it is there. */
static int port_from_log(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return 0;
    char line[1024];
    int port = 0;
    while (!port && fgets(line, sizeof line, f)) {
        const char *p = strstr(line, "HTTP server is listening");
        if (p && (p = strstr(p, "port: "))) port = atoi(p + 6);
    }
    fclose(f);
    return port;
}

static size_t discard(void *p, size_t sz, size_t n, void *u) { (void)p; (void)u; return sz * n; }

static long health_status(const char *url) {
    char u[128];
    snprintf(u, sizeof u, "%s/health", url);
    CURL *e = curl_easy_init();
    if (!e) return 0;
    curl_easy_setopt(e, CURLOPT_URL, u);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, discard);
    curl_easy_setopt(e, CURLOPT_TIMEOUT, 5L);
    long code = 0;
    if (curl_easy_perform(e) == CURLE_OK) curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &code);
    curl_easy_cleanup(e);
    return code;
}

static void print_log_tail(const char *path) {
    FILE *f = fopen(path, "r");
    if (!f) return;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, n > 2000 ? n - 2000 : 0, SEEK_SET);
    char buf[2048];
    size_t r = fread(buf, 1, sizeof buf - 1, f);
    buf[r] = 0;
    fclose(f);
    fprintf(stderr, "    llama-server log (%s), last part:\n%s\n", path, buf);
}

int test_llama_start(test_llama *s, const char *model_name, const char *args) {
    memset(s, 0, sizeof *s);
    const char *model = test_llama_model(model_name);
    if (!model) { fprintf(stderr, "    no model %s under %s/models\n", model_name, test_llama_dir()); return -1; }
    char bin[1024], modelp[1024];
    snprintf(bin, sizeof bin, "%s/bin/llama-server", test_llama_dir());
    snprintf(modelp, sizeof modelp, "%s", model);
    static int seq;
    snprintf(s->log_path, sizeof s->log_path, "%s/llama-server-%d.log", harness_tmpdir(), seq++);
    char *copy = strdup(args ? args : "");
    char *argv[96];
    int argc = 0;
    argv[argc++] = bin;
    argv[argc++] = "-m"; argv[argc++] = modelp;
    argv[argc++] = "--host"; argv[argc++] = "127.0.0.1";
    argv[argc++] = "--port"; argv[argc++] = "0";
    for (char *tok = strtok(copy, " "); tok && argc < 94; tok = strtok(NULL, " ")) argv[argc++] = tok;
    argv[argc] = NULL;
    pid_t pid = fork();
    if (pid < 0) { free(copy); return -1; }
    if (pid == 0) {
        int fd = open(s->log_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
        if (fd >= 0) { dup2(fd, 1); dup2(fd, 2); close(fd); }
        execv(bin, argv);
        _exit(127);
    }
    free(copy);
    s->pid = pid;
    double deadline = now_s() + 180;
    while (now_s() < deadline) {
        int st;
        if (waitpid(pid, &st, WNOHANG) == pid) {
            s->pid = 0;
            fprintf(stderr, "    llama-server exited before it was ready\n");
            print_log_tail(s->log_path);
            return -1;
        }
        if (!s->port && (s->port = port_from_log(s->log_path)) > 0)
            snprintf(s->url, sizeof s->url, "http://127.0.0.1:%d", s->port);
        if (s->port && health_status(s->url) == 200) return 0;
        pause_ms(100);
    }
    fprintf(stderr, "    llama-server was not ready after 180 s\n");
    print_log_tail(s->log_path);
    test_llama_stop(s);
    return -1;
}

void test_llama_stop(test_llama *s) {
    if (s->pid <= 0) return;
    kill(s->pid, SIGTERM);
    for (int i = 0; i < 1000; i++) {
        if (waitpid(s->pid, NULL, WNOHANG) == s->pid) { s->pid = 0; return; }
        pause_ms(10);
    }
    kill(s->pid, SIGKILL);
    waitpid(s->pid, NULL, 0);
    s->pid = 0;
}
