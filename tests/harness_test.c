/* harness tests — the runner isolates each test: tests/selftest/harness_selftest.c misbehaves on
 * purpose in its own binary, and this checks every verdict line and the closing count. */
#include "harness.h"
#include "testutil.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/wait.h>

static char *run_selftest(const char *env, int *status) {
    char cmd[1024];
    snprintf(cmd, sizeof cmd, "%s ASAN_OPTIONS=handle_segv=0:detect_leaks=0 TSAN_OPTIONS=handle_segv=0 DSPERF_TEST_TIMEOUT=1 SELFTEST_MARK=%s/mark %s 2>/dev/null", env, harness_tmpdir(),
             getenv("DSPERF_SELFTEST_BIN") ? getenv("DSPERF_SELFTEST_BIN") : "build/harness_selftest");
    FILE *p = popen(cmd, "r");
    if (!p) return NULL;
    size_t cap = 1 << 16, n = 0, k;
    char *buf = malloc(cap);
    while ((k = fread(buf + n, 1, cap - n - 1, p)) > 0) n += k;
    buf[n] = 0;
    int st = pclose(p);
    *status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
    return buf;
}

/* Every verdict of the self-test binary, run serially (jobs "1") or several at a time. */
static void isolation_and_deadlines(const char *jobs) {
    int st;
    char env[128];
    snprintf(env, sizeof env, "CI= DSPERF_TEST_JOBS=%s", jobs);
    char *out = run_selftest(env, &st);
    CHECK(out != NULL);
    if (!out) return;
    CHECK_MSG(strstr(out, "FAIL st_1_crashes (tests/selftest/harness_selftest.c): crashed with signal 11") != NULL, "%s", out);
    CHECK_MSG(strstr(out, "FAIL st_2_hangs (tests/selftest/harness_selftest.c): no verdict after 1 s") != NULL, "%s", out);
    CHECK(strstr(out, "ok   st_3_leaves_a_child") != NULL);
    CHECK(strstr(out, "FAIL st_4_fails (") != NULL);
    CHECK(strstr(out, "SKIP st_5_skips_plain: a tool is missing") != NULL);
    CHECK(strstr(out, "SKIP st_6_skips_gpu: no NVIDIA GPU") != NULL);
    CHECK(strstr(out, "FAIL st_7_exits (tests/selftest/harness_selftest.c): exited 9") != NULL);
    CHECK(strstr(out, "ok   st_8_passes") != NULL);
    CHECK_MSG(strstr(out, "2 passed, 4 failed, 2 skipped") != NULL, "%s", out);
    CHECK_EQ_INT(st, 1);
    if (strcmp(jobs, "1") != 0) {
        /* in parallel a failing test's own output follows its verdict, not mixed into others' */
        const char *f = strstr(out, "FAIL st_4_fails (");
        const char *msg = f ? strstr(f, "1 + 1 == 3") : NULL;
        const char *next = f ? strchr(f, '\n') : NULL;
        next = next ? strstr(next + 1, "\n") : NULL;
        CHECK_MSG(msg != NULL && (!next || msg < next + 1), "the failing test's message does not follow its verdict:\n%s", out);
    }
    free(out);
    /* the child st_3 left was killed with its group: 3 s later it has written nothing */
    sleep(3);
    char mark[512];
    snprintf(mark, sizeof mark, "%s/mark", harness_tmpdir());
    CHECK_MSG(access(mark, F_OK) != 0, "a test's leftover child outlived it");
    /* with CI=true a plain skip is a failure; a missing GPU is not */
    snprintf(env, sizeof env, "CI=true DSPERF_TEST_JOBS=%s", jobs);
    out = run_selftest(env, &st);
    CHECK(out && strstr(out, "FAIL st_5_skips_plain (tests/selftest/harness_selftest.c): skipped in CI") != NULL);
    CHECK(out && strstr(out, "SKIP st_6_skips_gpu: no NVIDIA GPU") != NULL);
    CHECK(out && strstr(out, "2 passed, 5 failed, 1 skipped") != NULL);
    free(out);
}

TEST(harness_isolation_and_deadlines) {
    isolation_and_deadlines("1");
}

TEST(harness_isolation_and_deadlines_in_parallel) {
    isolation_and_deadlines("4");
}
