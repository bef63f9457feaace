/* Tests of the NVML binding (skipped, with the reason, where there is no NVIDIA driver) and of
 * the `gpu` and `env` front-ends, which must work or fail cleanly on machines without a GPU. */
#include "harness.h"
#include "testutil.h"
#include "common/clock.h"
#include "telemetry/nvml.h"
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

TEST(telemetry_nvml_sample) {
    char err[256];
    nvml *n = nvml_open(err, sizeof err);
    if (!n) SKIP_NO_GPU("no NVIDIA GPU / libnvidia-ml.so.1 not found");
    int count = nvml_device_count(n);
    CHECK(count >= 1);
    char drv[96];
    CHECK_EQ_INT(nvml_driver_version(n, drv, sizeof drv), 0);
    nvml_gpu_info in;
    CHECK_EQ_INT(nvml_gpu_info_get(n, 0, &in), 0);
    CHECK(in.mem_total_mib > 1000 && in.name[0]);
    nvml_gpu *g = nvml_gpu_open(n, 0);
    CHECK(g != NULL);
    double a[GPU_COL_COUNT], b[GPU_COL_COUNT];
    nvml_gpu_sample(g, clock_now_ns(), a);
    clock_sleep_ns(150 * NS_PER_MS);
    nvml_gpu_sample(g, clock_now_ns(), b);
    CHECK(b[GPU_UTIL_GPU_PCT] >= 0 && b[GPU_UTIL_GPU_PCT] <= 100);
    CHECK_NEAR(b[GPU_MEM_TOTAL_MIB], in.mem_total_mib, 1);
    CHECK(b[GPU_MEM_USED_MIB] >= 0 && b[GPU_MEM_USED_MIB] <= b[GPU_MEM_TOTAL_MIB]);
    CHECK(b[GPU_SM_CLOCK_MHZ] > 0 && b[GPU_POWER_W] > 0 && b[GPU_TEMP_C] > 0);
    if (in.gpm_supported) CHECK(b[GPU_SM_UTIL_PCT] >= 0 && b[GPU_DRAM_BW_UTIL_PCT] >= 0);
    else CHECK(isnan(b[GPU_SM_UTIL_PCT]));
    nvml_gpu_close(g);
    nvml_close(n);
}

TEST(telemetry_cli_env) {
    static char out[65536];
    CHECK_EQ_INT(test_run_into("env --json", out, sizeof out), 0);
    json_error_t e;
    json_t *j = json_loads(out, 0, &e);
    CHECK_MSG(j != NULL, "env --json is not JSON: %s", e.text);
    if (!j) return;
    json_t *checks = json_object_get(j, "checks");
    CHECK(json_array_size(checks) >= 5);
    bool saw_nofile = false, saw_gpu = false;
    size_t i;
    json_t *c;
    json_array_foreach(checks, i, c) {
        const char *st = json_string_value(json_object_get(c, "status")), *name = json_string_value(json_object_get(c, "check"));
        CHECK(!strcmp(st, "OK") || !strcmp(st, "WARN") || !strcmp(st, "INFO"));
        if (!strcmp(name, "ulimit_nofile")) saw_nofile = true;
        if (!strcmp(name, "nvml") || !strcmp(name, "driver")) saw_gpu = true;   /* absent NVML is reported */
    }
    CHECK(saw_nofile && saw_gpu);
    json_decref(j);
    CHECK_EQ_INT(test_run_into("env --bogus", out, sizeof out), 2);
}

TEST(telemetry_cli_gpu) {
    static char out[65536];
    CHECK_EQ_INT(test_run_into("gpu --interval 1ms", out, sizeof out), 2);
    CHECK(strstr(out, "--interval") != NULL);
    CHECK_EQ_INT(test_run_into("gpu --prom nope", out, sizeof out), 2);
    CHECK_EQ_INT(test_run_into("gpu --record x.json", out, sizeof out), 2);   /* needs --duration */
    CHECK_EQ_INT(test_run_into("gpu --help", out, sizeof out), 0);
    CHECK(strstr(out, "examples") != NULL);
    char err[256];
    nvml *n = nvml_open(err, sizeof err);
    if (!n) {
        CHECK_EQ_INT(test_run_into("gpu --count 1", out, sizeof out), 1);
        CHECK(strstr(out, "libnvidia-ml.so.1") != NULL);
        /* the recorder still records the host without NVML */
        char args[512];
        /* 20 intervals asked for, 3 samples required: a loaded host delays the sampler's wake-ups,
         * it does not take most of a second from each */
        snprintf(args, sizeof args, "gpu --record %s/t.json --duration 1s --interval 50ms --host-metrics", harness_tmpdir());
        CHECK_EQ_INT(test_run_into(args, out, sizeof out), 0);
        char path[512];
        snprintf(path, sizeof path, "%s/t.json", harness_tmpdir());
        json_t *j = json_load_file(path, 0, NULL);
        CHECK(j != NULL);
        json_t *tel = json_object_get(j, "telemetry");
        CHECK(json_string_value(json_object_get(tel, "warning")) != NULL);
        CHECK(json_array_size(json_object_get(json_object_get(json_object_get(tel, "host"), "series"), "t_s")) >= 3);
        json_decref(j);
        return;
    }
    nvml_close(n);
    CHECK_EQ_INT(test_run_into("gpu --count 2 --interval 100ms --csv", out, sizeof out), 0);
    CHECK(strncmp(out, "t_s,gpu,util_gpu_pct", 20) == 0);
}
