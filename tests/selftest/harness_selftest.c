/* harness_selftest — tests that misbehave on purpose, linked with the harness into their own binary
 * (build/harness_selftest) and run by harness_isolation_and_deadlines in the real suite: a crash, a
 * hang, a server left running, skips of each kind, and one test that passes after them. */
#include "harness.h"
#include <signal.h>
#include <stdlib.h>
#include <stdio.h>
#include <unistd.h>

TEST(st_1_crashes) {
    raise(SIGSEGV);
}

TEST(st_2_hangs) {
    for (;;) pause();
}

/* leaves a child behind; the runner kills the test's process group, so it writes no file */
TEST(st_3_leaves_a_child) {
    const char *mark = getenv("SELFTEST_MARK");
    if (fork() == 0) {
        sleep(2);
        FILE *f = mark ? fopen(mark, "w") : NULL;
        if (f) fclose(f);
        _exit(0);
    }
}

TEST(st_4_fails) {
    CHECK_EQ_INT(1 + 1, 3);
}

TEST(st_5_skips_plain) { SKIP("a tool is missing"); }
TEST(st_6_skips_gpu) { SKIP_NO_GPU("no NVIDIA GPU"); }
TEST(st_7_exits) { exit(9); }
TEST(st_8_passes) { CHECK(1); }
