/* Tests for the common helpers: units parsing, rng distributions, atomic writes. */
#include "harness.h"
#include "common/units.h"
#include "common/rng.h"
#include "common/fileio.h"
#include "common/fdlimit.h"
#include "common/result.h"
#include "common/log.h"
#include <sys/resource.h>
#include <string.h>
#include <stdlib.h>
#include <stdio.h>

TEST(units_durations) {
    int64_t ns = 0;
    CHECK(units_parse_duration_ns("500ms", &ns) == 0); CHECK_EQ_INT(ns, 500000000);
    CHECK(units_parse_duration_ns("30s", &ns) == 0); CHECK_EQ_INT(ns, 30000000000LL);
    CHECK(units_parse_duration_ns("5m", &ns) == 0); CHECK_EQ_INT(ns, 300000000000LL);
    CHECK(units_parse_duration_ns("20us", &ns) == 0); CHECK_EQ_INT(ns, 20000);
    CHECK(units_parse_duration_ns("1.5", &ns) == 0); CHECK_EQ_INT(ns, 1500000000);
    CHECK(units_parse_duration_ns("0", &ns) == 0); CHECK_EQ_INT(ns, 0);
    CHECK(units_parse_duration_ns("10 ms", &ns) == -1);
    CHECK(units_parse_duration_ns("-1s", &ns) == -1);
    CHECK(units_parse_duration_ns("abc", &ns) == -1);
    CHECK(units_parse_duration_ns("", &ns) == -1);
}

TEST(units_rates_and_bytes) {
    double r = 0;
    CHECK(units_parse_rate_per_s("20/s", &r) == 0); CHECK_NEAR(r, 20, 1e-12);
    CHECK(units_parse_rate_per_s("120/m", &r) == 0); CHECK_NEAR(r, 2, 1e-12);
    CHECK(units_parse_rate_per_s("3.5", &r) == 0); CHECK_NEAR(r, 3.5, 1e-12);
    CHECK(units_parse_rate_per_s("3/x", &r) == -1);
    int64_t b = 0;
    CHECK(units_parse_bytes("80GB", &b) == 0); CHECK_EQ_INT(b, 80000000000LL);
    CHECK(units_parse_bytes("1GiB", &b) == 0); CHECK_EQ_INT(b, 1073741824LL);
    CHECK(units_parse_bytes("12XB", &b) == -1);
    long long v;
    CHECK(units_parse_int("42", 0, 100, &v) == 0 && v == 42);
    CHECK(units_parse_int("420", 0, 100, &v) == -1);
    CHECK(units_parse_int("4x", 0, 100, &v) == -1);
}

TEST(rng_same_seed_same_sequence) {
    rng a, b;
    rng_seed(&a, 7); rng_seed(&b, 7);
    for (int i = 0; i < 1000; i++) CHECK(rng_next(&a) == rng_next(&b));
    rng_seed(&b, 8);
    CHECK(rng_next(&a) != rng_next(&b));
}

/* Mean and variance of the draws against theory: with n = 200k, the standard error of the mean
 * is sd/sqrt(n) ≈ 0.22% of the mean for the exponential; 6 standard errors is a safe bound. */
TEST(rng_distribution_moments) {
    rng r;
    rng_seed(&r, 12345);
    const int n = 200000;
    double s = 0, s2 = 0;
    for (int i = 0; i < n; i++) { double x = rng_exponential(&r, 2.0); s += x; s2 += x * x; }
    double m = s / n, var = s2 / n - m * m;
    CHECK_NEAR(m, 2.0, 6 * 2.0 / sqrt(n));
    CHECK_NEAR(var, 4.0, 0.1);
    for (double k = 0.5; k <= 4.0; k *= 2) {
        s = s2 = 0;
        for (int i = 0; i < n; i++) { double x = rng_gamma(&r, k, 1.0 / k); s += x; s2 += x * x; }
        m = s / n; var = s2 / n - m * m;
        CHECK_NEAR(m, 1.0, 6 * sqrt(1.0 / k) / sqrt(n));
        CHECK_NEAR(var, 1.0 / k, 0.05 / k + 0.02);
    }
}

TEST(fileio_atomic_write_roundtrip) {
    char path[512];
    snprintf(path, sizeof path, "%s/x.json", harness_tmpdir());
    CHECK(fileio_write_atomic(path, "hello", 5) == 0);
    char *data; size_t len;
    CHECK(fileio_read_all(path, &data, &len) == 0);
    CHECK_EQ_INT(len, 5);
    CHECK_STR(data, "hello");
    free(data);
    CHECK(fileio_write_atomic("/nonexistent-dir/x", "a", 1) == -1);
}

/* The descriptor table is sized up front: /proc/self/status shows it as FDSize. */
TEST(fdlimit_table_grown_up_front) {
    long limit = fd_limit_prepare();
    CHECK(limit > 0);
    struct rlimit rl;
    CHECK(getrlimit(RLIMIT_NOFILE, &rl) == 0);
    CHECK(rl.rlim_cur == rl.rlim_max);
    FILE *f = fopen("/proc/self/status", "r");
    if (!f) SKIP("no /proc/self/status");
    char line[256];
    long fdsize = -1;
    while (fgets(line, sizeof line, f)) if (!strncmp(line, "FDSize:", 7)) fdsize = atol(line + 7);
    fclose(f);
    long want = limit < 131072 ? limit : 131072;
    CHECK_MSG(fdsize >= want, "FDSize %ld, wanted >= %ld", fdsize, want);
}

/* every result code has its own text and the exit status the brief gives its kind */
TEST(result_codes_have_texts_and_exit_codes) {
    const ds_result all[] = { DS_OK, DS_EINVAL, DS_EIO, DS_ENOMEM, DS_ECONNECT, DS_ERUN, DS_EINTR, DS_EJUDGED };
    const size_t n = sizeof all / sizeof all[0];
    for (size_t i = 0; i < n; i++) {
        CHECK(strcmp(ds_strerror(all[i]), "unknown result code") != 0);
        for (size_t j = 0; j < i; j++) CHECK_MSG(strcmp(ds_strerror(all[i]), ds_strerror(all[j])) != 0, "codes %d and %d share a text", all[i], all[j]);
    }
    CHECK(strcmp(ds_strerror((ds_result)-99), "unknown result code") == 0);
    CHECK_EQ_INT(ds_exit_code(DS_OK), EXIT_OK);
    CHECK_EQ_INT(ds_exit_code(DS_EINVAL), EXIT_USAGE);
    CHECK_EQ_INT(ds_exit_code(DS_ECONNECT), EXIT_USAGE);
    CHECK_EQ_INT(ds_exit_code(DS_EIO), EXIT_RUN_FAILED);
    CHECK_EQ_INT(ds_exit_code(DS_EJUDGED), EXIT_RUN_FAILED);
    CHECK_EQ_INT(ds_exit_code(DS_EINTR), EXIT_RUN_FAILED);
}
