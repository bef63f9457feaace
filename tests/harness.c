/* harness — runs the registered tests (all, or those whose name or file contains an argument),
 * each in order, and ends with the line "N passed, N failed, N skipped". */
#include "harness.h"
#include <stdlib.h>
#include <string.h>
#include <stdarg.h>
#include <unistd.h>
#include <time.h>
#include <signal.h>
#include <sys/stat.h>

typedef struct { const char *name, *file; test_fn fn; } test_case;
static test_case *cases;
static int n_cases, cap_cases;
static int cur_failed, cur_skipped;
static char cur_skip_reason[256];
static char tmp_root[256], cur_tmp[300];
static int tmp_seq;

void harness_register(const char *name, const char *file, test_fn fn) {
    if (n_cases == cap_cases) {
        cap_cases = cap_cases ? cap_cases * 2 : 64;
        cases = realloc(cases, sizeof *cases * cap_cases);
    }
    cases[n_cases++] = (test_case){ name, file, fn };
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

const char *harness_bin(void) {
    const char *b = getenv("DSPERF_BIN");
    return b && *b ? b : "./dsperf";
}

const char *harness_testdata(void) {
    const char *d = getenv("DSPERF_TESTDATA");
    return d && *d ? d : "../shared/testdata";
}

const char *harness_tmpdir(void) {
    if (!cur_tmp[0]) {
        snprintf(cur_tmp, sizeof cur_tmp, "%s/t%d", tmp_root, ++tmp_seq);
        mkdir(cur_tmp, 0755);
    }
    return cur_tmp;
}

static void cleanup_tmp(void) {
    if (!tmp_root[0] || getenv("DSPERF_KEEP_TMP")) return;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    if (system(cmd) != 0) fprintf(stderr, "harness: could not remove %s\n", tmp_root);
}

static int wanted(const test_case *t, int argc, char **argv) {
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(t->name, argv[i]) || strstr(t->file, argv[i])) return 1;
    return 0;
}

static int by_file(const void *a, const void *b) {
    const test_case *x = a, *y = b;
    int c = strcmp(x->file, y->file);
    return c ? c : (x < y ? -1 : x > y);
}

int main(int argc, char **argv) {
    signal(SIGPIPE, SIG_IGN);
    snprintf(tmp_root, sizeof tmp_root, "/tmp/dsperf-test.%ld", (long)getpid());
    mkdir(tmp_root, 0755);
    atexit(cleanup_tmp);
    qsort(cases, n_cases, sizeof *cases, by_file);
    int passed = 0, failed = 0, skipped = 0;
    for (int i = 0; i < n_cases; i++) {
        test_case *t = &cases[i];
        if (!wanted(t, argc, argv)) continue;
        cur_failed = 0; cur_skipped = 0; cur_tmp[0] = 0;
        struct timespec a, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        fprintf(stderr, "  %-48s ...\n", t->name);
        t->fn();
        clock_gettime(CLOCK_MONOTONIC, &b);
        double ms = (b.tv_sec - a.tv_sec) * 1e3 + (b.tv_nsec - a.tv_nsec) / 1e6;
        if (cur_failed) { failed++; printf("FAIL %s (%s, %.0f ms)\n", t->name, t->file, ms); }
        else if (cur_skipped) { skipped++; printf("SKIP %s: %s\n", t->name, cur_skip_reason); }
        else { passed++; printf("ok   %s (%.0f ms)\n", t->name, ms); }
        fflush(stdout);
    }
    printf("%d passed, %d failed, %d skipped\n", passed, failed, skipped);
    return failed ? 1 : 0;
}
