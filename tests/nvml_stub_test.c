/* NVML without a GPU: tests/nvml_stub/ builds a stand-in libnvidia-ml.so.1 (BUILD/nvml_stub/) that
 * answers with known values (listed in nvml_stub.c). In this process the stub is loaded by path
 * first, so nvml.c's dlopen("libnvidia-ml.so.1") finds it by its soname, and the test hands
 * nvml_gpu_sample the sample times itself: the sampler's numbers are checked exactly, GPM pairing
 * and its 95 ms rule included. The `gpu` command is then run as a child with LD_LIBRARY_PATH on the
 * stub: its JSON lines, the recorder's lost-GPU warning and the init failure. Error paths: an entry
 * point that returns NOT_SUPPORTED, GPM unsupported, and a GPU that disappears mid-run. */
#include "harness.h"
#include "testutil.h"
#include "common/clock.h"
#include "telemetry/nvml.h"
#include "diagnose/diagnose.h"
#include "report/report_internal.h"
#include <dlfcn.h>
#include <jansson.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static const char *stub_dir(void) {
    static char dir[PATH_MAX];
    char bin[PATH_MAX];
    snprintf(bin, sizeof bin, "%s", harness_bin());
    snprintf(dir, sizeof dir, "%s/nvml_stub", dirname(bin));
    return dir;
}

static const char *const knobs[] = {"NVML_STUB_GPUS", "NVML_STUB_NO_GPM", "NVML_STUB_NOT_SUPPORTED",
                                    "NVML_STUB_LOST_AFTER", "NVML_STUB_INIT_FAIL", "NVML_STUB_DRAM",
                                    "NVML_STUB_PCIE_GEN", "NVML_STUB_UTIL", "NVML_STUB_NVLINK", NULL};

/* Sets the stub's knobs (read by nvmlInit) from "KEY=VALUE KEY=VALUE"; the others are cleared. */
static void knobs_set(const char *spec) {
    for (const char *const *k = knobs; *k; k++) unsetenv(*k);
    char buf[256];
    snprintf(buf, sizeof buf, "%s", spec);
    for (char *save = NULL, *kv = strtok_r(buf, " ", &save); kv; kv = strtok_r(NULL, " ", &save)) {
        char *eq = strchr(kv, '=');
        if (eq) { *eq = 0; setenv(kv, eq + 1, 1); }
    }
}

typedef struct {
    void *lib;                                /* our handle on the stub (keeps it loaded) */
    unsigned long (*count)(const char *name); /* calls per entry point */
} stub;

/* Loads the stub by path; NULL (with the test failed or skipped) when it cannot be used here. */
static bool stub_load(stub *s) {
    char path[PATH_MAX + 32];
    snprintf(path, sizeof path, "%s/libnvidia-ml.so.1", stub_dir());
    s->lib = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    CHECK_MSG(s->lib != NULL, "cannot load the NVML stand-in %s: %s (the Makefile builds it with the tests)", path, dlerror());
    if (!s->lib) return false;
    *(void **)&s->count = dlsym(s->lib, "nvml_stub_count");
    return s->count != NULL;
}

/* Opens NVML (which must be the stub) with the given knobs. */
static nvml *open_stub(const char *spec, char *err, size_t errlen) {
    knobs_set(spec);
    nvml *n = nvml_open(err, errlen);
    knobs_set("");
    return n;
}

static bool is_stub(nvml *n) {
    char drv[96] = "";
    return nvml_driver_version(n, drv, sizeof drv) == 0 && !strcmp(drv, "580.00-stub");
}

#define MS (NS_PER_MS)

TEST(nvml_stub_sampler_numbers) {
    stub s;
    if (!stub_load(&s)) return;
    char err[256];
    nvml *n = open_stub("NVML_STUB_GPUS=2", err, sizeof err);
    CHECK_MSG(n != NULL, "nvml_open with the stand-in: %s", err);
    if (n && !is_stub(n)) {   /* a GPU host's own libnvidia-ml was loaded in this process first */
        nvml_close(n);
        dlclose(s.lib);
        SKIP("a real libnvidia-ml.so.1 is loaded in this process (GPU host); the stand-in runs through the binary");
    }
    if (!n) { dlclose(s.lib); return; }
    CHECK_EQ_INT(nvml_device_count(n), 2);
    int cuda;
    CHECK(nvml_cuda_driver_version(n, &cuda) == 0 && cuda == 12080);
    nvml_gpu_info in;
    CHECK_EQ_INT(nvml_gpu_info_get(n, 1, &in), 0);
    CHECK_STR(in.name, "NVIDIA H200 (stub 1)");
    CHECK_STR(in.bus_id, "0000:1c:00.0");
    CHECK(in.cc_major == 9 && in.cc_minor == 0 && in.mig_mode == 0 && in.persistence_mode == 1 && in.gpm_supported);
    CHECK_NEAR(in.mem_total_mib, 143771, 0);
    CHECK_NEAR(in.power_limit_w, 700, 0);
    CHECK_NEAR(in.sm_clock_max_mhz, 1980, 0);
    /* the PCIe link: Gen4 x16 at most, trained down to Gen1 before the GPU is sampled (idle) */
    CHECK(in.pcie_gen_max == 4 && in.pcie_width_max == 16 && in.pcie_gen_curr == 1 && in.pcie_width_curr == 16);
    CHECK_NEAR(nvml_pcie_link_mb_s(in.pcie_gen_max, in.pcie_width_max), 31507.69, 0.01);

    nvml_gpu *g = nvml_gpu_open(n, 0);
    CHECK(g != NULL);
    if (!g) { nvml_close(n); dlclose(s.lib); return; }
    double c[GPU_COL_COUNT];
    int64_t t0 = 1000 * MS;
    nvml_gpu_sample(g, t0, c);   /* sample 1 */
    CHECK_NEAR(c[GPU_UTIL_GPU_PCT], 40, 0);
    CHECK_NEAR(c[GPU_UTIL_MEM_PCT], 20, 0);
    CHECK_NEAR(c[GPU_MEM_USED_MIB], 1024, 0);        /* v2: what processes allocated, not the reserved part */
    CHECK_NEAR(c[GPU_MEM_TOTAL_MIB], 143771, 0);
    CHECK_NEAR(c[GPU_SM_CLOCK_MHZ], 1980, 0);
    CHECK_NEAR(c[GPU_MEM_CLOCK_MHZ], 3201, 0);
    CHECK_NEAR(c[GPU_TEMP_C], 50, 0);
    CHECK_NEAR(c[GPU_POWER_W], 350, 0);
    CHECK_NEAR(c[GPU_POWER_AVG_W], 300, 0);
    CHECK_NEAR(c[GPU_ENERGY_J], 0, 0);               /* relative to the first reading */
    CHECK_NEAR(c[GPU_CLOCK_EVENT_REASONS], 0, 0);
    CHECK_NEAR(c[GPU_THROTTLED], 0, 0);
    CHECK_NEAR(c[GPU_N_PROCESSES], 1, 0);
    CHECK(c[GPU_PCIE_LINK_GEN] == 4 && c[GPU_PCIE_LINK_WIDTH] == 16);   /* trained up once in use */
    CHECK(isnan(c[GPU_NVLINK_TX_MB_S]) && isnan(c[GPU_SM_UTIL_PCT]));   /* rates need a previous sample */
    nvml_process p[4];
    CHECK_EQ_INT(nvml_gpu_processes(g, p, 4), 1);
    CHECK(p[0].pid == 4242 && p[0].used_mib == 2048);

    nvml_gpu_sample(g, t0 + 50 * MS, c);   /* sample 2: 50 ms later */
    CHECK_NEAR(c[GPU_NVLINK_TX_MB_S], 1000 * 1024 / 1e6 / 0.050, 1e-9);   /* 1000 KiB in 50 ms */
    CHECK_NEAR(c[GPU_NVLINK_RX_MB_S], 2000 * 1024 / 1e6 / 0.050, 1e-9);
    CHECK(isnan(c[GPU_SM_UTIL_PCT]));      /* GPM wants >= ~100 ms between samples: sample 1 is kept */
    CHECK(isnan(c[GPU_ENERGY_J]));         /* the energy counter is read every 5 s */

    nvml_gpu_sample(g, t0 + 200 * MS, c);  /* sample 3: GPM between samples 1 and 3 */
    CHECK_NEAR(c[GPU_SM_UTIL_PCT], 30, 0);
    CHECK_NEAR(c[GPU_SM_OCCUPANCY_PCT], 15, 0);
    CHECK_NEAR(c[GPU_TENSOR_UTIL_PCT], 60, 0);
    CHECK_NEAR(c[GPU_HMMA_UTIL_PCT], 55, 0);
    CHECK_NEAR(c[GPU_DRAM_BW_UTIL_PCT], 70, 0);
    CHECK_NEAR(c[GPU_FP16_UTIL_PCT], 1, 0);
    CHECK_NEAR(c[GPU_FP32_UTIL_PCT], 2, 0);
    CHECK_NEAR(c[GPU_GPM_PCIE_TX_MB_S], 1000 * 1.048576, 1e-9);   /* GPM reports MiB/s; columns are MB/s */
    CHECK_NEAR(c[GPU_GPM_PCIE_RX_MB_S], 2000 * 1.048576, 1e-9);
    CHECK_NEAR(c[GPU_GPM_NVLINK_TX_MB_S], 300 * 1.048576, 1e-9);
    CHECK_NEAR(c[GPU_GPM_NVLINK_RX_MB_S], 400 * 1.048576, 1e-9);
    CHECK_NEAR(c[GPU_NVLINK_TX_MB_S], 1000 * 1024 / 1e6 / 0.150, 1e-9);
    CHECK_NEAR(c[GPU_CLOCK_EVENT_REASONS], 4, 0);   /* SW power cap from the third sample on */
    CHECK_NEAR(c[GPU_THROTTLED], 1, 0);
    CHECK(isnan(c[GPU_PCIE_TX_MB_S]));              /* with GPM, NVML's own PCIe counter is not read */

    nvml_gpu_sample(g, t0 + 5300 * MS, c);  /* sample 4, 5.3 s in: energy again, GPM between 3 and 4 */
    CHECK_NEAR(c[GPU_ENERGY_J], 5000 * 3 / 1000.0, 1e-9);
    CHECK_NEAR(c[GPU_SM_UTIL_PCT], 40, 0);
    CHECK(!nvml_gpu_lost(g));
    nvml_gpu_close(g);
    nvml_close(n);
    CHECK_EQ_INT(s.count("nvmlGpmSampleAlloc"), s.count("nvmlGpmSampleFree"));   /* GPM samples not leaked */
    dlclose(s.lib);
}

/* The per-GPU utilisation patterns (NVML_STUB_UTIL): each GPU cycles through its own list, a GPU
 * without one keeps the default, GPM SM activity follows the pattern, NVLink follows its knob. */
TEST(nvml_stub_util_patterns) {
    stub s;
    if (!stub_load(&s)) return;
    char err[256];
    nvml *n = open_stub("NVML_STUB_GPUS=3 NVML_STUB_UTIL=70,30;30,70 NVML_STUB_NVLINK=5000", err, sizeof err);
    CHECK_MSG(n != NULL, "%s", err);
    if (n && !is_stub(n)) { nvml_close(n); dlclose(s.lib); SKIP("a real libnvidia-ml.so.1 is loaded in this process (GPU host)"); }
    if (!n) { dlclose(s.lib); return; }
    nvml_gpu *g[3] = {nvml_gpu_open(n, 0), nvml_gpu_open(n, 1), nvml_gpu_open(n, 2)};
    static const double want[3][4] = {{70, 30, 70, 30}, {30, 70, 30, 70}, {60, 60, 60, 60}};
    double c[GPU_COL_COUNT];
    for (int k = 0; k < 4; k++)
        for (int i = 0; i < 3; i++) {
            nvml_gpu_sample(g[i], (1000 + 200 * k) * MS, c);
            CHECK_MSG(c[GPU_UTIL_GPU_PCT] == want[i][k], "GPU %d sample %d: util %g, want %g", i, k + 1, c[GPU_UTIL_GPU_PCT], want[i][k]);
            if (k > 0 && i < 2) CHECK_NEAR(c[GPU_SM_UTIL_PCT], want[i][k], 0);    /* GPM between samples k and k+1 */
            if (k > 0 && i == 2) CHECK_NEAR(c[GPU_SM_UTIL_PCT], 10.0 * (k + 1), 0);   /* no pattern: the default */
            if (k > 0) CHECK_NEAR(c[GPU_GPM_NVLINK_TX_MB_S], 5000 * 1.048576, 1e-9);
        }
    for (int i = 0; i < 3; i++) nvml_gpu_close(g[i]);
    nvml_close(n);
    dlclose(s.lib);
}

TEST(nvml_stub_error_paths) {
    stub s;
    if (!stub_load(&s)) return;
    char err[256];
    double c[GPU_COL_COUNT];
    /* an entry point that is not supported: its column is unknown, the rest is read */
    nvml *n = open_stub("NVML_STUB_NOT_SUPPORTED=nvmlDeviceGetTemperature", err, sizeof err);
    if (n && !is_stub(n)) { nvml_close(n); dlclose(s.lib); SKIP("a real libnvidia-ml.so.1 is loaded in this process (GPU host)"); }
    CHECK_MSG(n != NULL, "%s", err);
    if (!n) { dlclose(s.lib); return; }
    nvml_gpu *g = nvml_gpu_open(n, 0);
    nvml_gpu_sample(g, 1000 * MS, c);
    CHECK(isnan(c[GPU_TEMP_C]));
    CHECK_NEAR(c[GPU_UTIL_GPU_PCT], 40, 0);
    nvml_gpu_close(g);
    nvml_close(n);
    /* no field values: power falls back to nvmlDeviceGetPowerUsage; no 1 s average, no NVLink */
    n = open_stub("NVML_STUB_NOT_SUPPORTED=nvmlDeviceGetFieldValues", err, sizeof err);
    g = nvml_gpu_open(n, 0);
    nvml_gpu_sample(g, 1000 * MS, c);
    nvml_gpu_sample(g, 1200 * MS, c);
    CHECK_NEAR(c[GPU_POWER_W], 345, 0);
    CHECK(isnan(c[GPU_POWER_AVG_W]) && isnan(c[GPU_NVLINK_TX_MB_S]));
    nvml_gpu_close(g);
    nvml_close(n);
    /* no memory v2 (older drivers): v1's "used", which counts the reserved part */
    n = open_stub("NVML_STUB_NOT_SUPPORTED=nvmlDeviceGetMemoryInfo_v2", err, sizeof err);
    g = nvml_gpu_open(n, 1);
    nvml_gpu_sample(g, 1000 * MS, c);
    CHECK_NEAR(c[GPU_MEM_USED_MIB], 2048 + 500, 0);
    nvml_gpu_close(g);
    nvml_close(n);
    /* GPM unsupported: its columns stay unknown; PCIe from NVML's own counter (KB/s -> MB/s) */
    n = open_stub("NVML_STUB_NO_GPM=1", err, sizeof err);
    unsigned long gpm_gets = s.count("nvmlGpmSampleGet");
    nvml_gpu_info in;
    nvml_gpu_info_get(n, 0, &in);
    CHECK(!in.gpm_supported);
    g = nvml_gpu_open(n, 0);
    nvml_gpu_sample(g, 1000 * MS, c);
    nvml_gpu_sample(g, 1200 * MS, c);
    CHECK(isnan(c[GPU_SM_UTIL_PCT]) && isnan(c[GPU_DRAM_BW_UTIL_PCT]));
    CHECK_NEAR(c[GPU_PCIE_TX_MB_S], 7, 1e-9);
    CHECK_NEAR(c[GPU_PCIE_RX_MB_S], 9, 1e-9);
    CHECK_EQ_INT(s.count("nvmlGpmSampleGet"), gpm_gets);
    nvml_gpu_close(g);
    nvml_close(n);
    /* GPU 0 disappears after two samples: lost, every column unknown, and NVML is not asked again */
    n = open_stub("NVML_STUB_LOST_AFTER=2", err, sizeof err);
    g = nvml_gpu_open(n, 0);
    nvml_gpu *g1 = nvml_gpu_open(n, 1);
    nvml_gpu_sample(g, 1000 * MS, c);
    nvml_gpu_sample(g, 1200 * MS, c);
    CHECK(!nvml_gpu_lost(g) && c[GPU_UTIL_GPU_PCT] == 40);
    nvml_gpu_sample(g, 1400 * MS, c);
    CHECK(nvml_gpu_lost(g));
    bool all_nan = true;
    for (int k = 0; k < GPU_COL_COUNT; k++) all_nan = all_nan && isnan(c[k]);
    CHECK(all_nan);
    unsigned long calls = s.count("nvmlDeviceGetUtilizationRates"), temp = s.count("nvmlDeviceGetTemperature");
    nvml_gpu_sample(g, 1600 * MS, c);
    CHECK_EQ_INT(s.count("nvmlDeviceGetUtilizationRates"), calls);
    CHECK_EQ_INT(s.count("nvmlDeviceGetTemperature"), temp);
    nvml_gpu_sample(g1, 1600 * MS, c);   /* the other GPU goes on */
    CHECK(!nvml_gpu_lost(g1) && c[GPU_UTIL_GPU_PCT] == 50);
    nvml_gpu_close(g);
    nvml_gpu_close(g1);
    nvml_close(n);
    /* a driver that does not load: one line saying so */
    n = open_stub("NVML_STUB_INIT_FAIL=1", err, sizeof err);
    CHECK(n == NULL);
    CHECK_MSG(strstr(err, "NVML init failed (Driver Not Loaded)") != NULL, "%s", err);
    nvml_close(n);
    dlclose(s.lib);
}

/* `dsperf gpu` and the recorder, as a child process finding the stub through LD_LIBRARY_PATH. */
static char *run_with_stub(const char *knob_spec, const char *args, int *status) {
    const char *old = getenv("LD_LIBRARY_PATH");
    char *saved = old ? strdup(old) : NULL;
    setenv("LD_LIBRARY_PATH", stub_dir(), 1);
    knobs_set(knob_spec);
    char *out = test_run_merged(args, status);
    knobs_set("");
    if (saved) setenv("LD_LIBRARY_PATH", saved, 1);
    else unsetenv("LD_LIBRARY_PATH");
    free(saved);
    return out;
}

TEST(nvml_stub_gpu_command) {
    int st;
    char *out = run_with_stub("NVML_STUB_GPUS=2", "gpu --count 4 --interval 100ms --json", &st);
    CHECK_EQ_INT(st, 0);
    int lines = 0, k[2] = {0, 0}, gpm_rows = 0;
    for (char *save = NULL, *l = out ? strtok_r(out, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
        json_t *j = json_loads(l, 0, NULL);
        if (!j) continue;   /* a header or warning line */
        lines++;
        int gpu = (int)json_integer_value(json_object_get(j, "gpu")) ? 1 : 0;
        k[gpu]++;           /* this GPU's sample number, as the stub counts them */
        CHECK_NEAR(test_num(j, "util_gpu_pct"), gpu == 0 ? 40 : 50, 0);
        CHECK_NEAR(test_num(j, "mem_used_mib"), gpu == 0 ? 1024 : 2048, 0);
        CHECK_NEAR(test_num(j, "power_w"), 350, 0);
        CHECK_NEAR(test_num(j, "throttled"), k[gpu] >= 3 ? 1 : 0, 0);
        /* GPM: unknown when the sample came under 95 ms after the kept one (a loaded machine may
         * delay the timer), else the metrics between them, SM activity = 10 x the newer's number */
        double sm = test_num(j, "sm_util_pct");
        CHECK_MSG(isnan(sm) || sm == 10.0 * k[gpu], "gpu %d sample %d: sm_util_pct %g", gpu, k[gpu], sm);
        if (!isnan(sm)) {
            gpm_rows++;
            CHECK_NEAR(test_num(j, "tensor_util_pct"), 60, 0);
            CHECK_NEAR(test_num(j, "dram_bw_util_pct"), 70, 0);
            CHECK_NEAR(test_num(j, "gpm_pcie_rx_mb_s"), 2000 * 1.048576, 0.01);   /* printed with 6 digits */
        }
        json_decref(j);
    }
    CHECK_EQ_INT(lines, 8);
    CHECK_MSG(gpm_rows >= 2, "%d rows with GPM metrics", gpm_rows);   /* 4 samples 100 ms apart: GPM metrics for most of them */
    free(out);

    /* the recorder (the sampler bench uses) with GPU 0 lost after 3 samples: it says so once */
    char args[1024], path[800];
    snprintf(path, sizeof path, "%s/gpu.json", harness_tmpdir());
    snprintf(args, sizeof args, "gpu --record %s --duration 800ms --interval 100ms", path);
    out = run_with_stub("NVML_STUB_LOST_AFTER=3", args, &st);
    CHECK_MSG(st == 0, "gpu --record: %s", out ? out : "");
    free(out);
    json_t *doc = test_load_json(path);
    json_t *tel = json_object_get(doc, "telemetry");
    const char *warn = json_string_value(json_object_get(tel, "warning"));
    CHECK_MSG(warn && strstr(warn, "GPU 0 was lost (NVML: GPU is lost)"), "warning: %s", warn ? warn : "(none)");
    json_decref(doc);

    out = run_with_stub("NVML_STUB_INIT_FAIL=1", "gpu --count 1", &st);
    CHECK_EQ_INT(st, 1);
    CHECK_MSG(out && strstr(out, "NVML init failed (Driver Not Loaded)"), "output: %s", out ? out : "");
    free(out);
}

/* The long-context rules on telemetry the sampler took through the stand-in: bench for 12 s at
 * DRAM bandwidth 95% on a PCIe link of Gen1 x16 (4 GB/s each way, 2 GB/s received): diagnose finds
 * the bandwidth held at its ceiling for more than 10 s, and the PCIe traffic heavy against the
 * link NVML reported. The same traffic on the default Gen4 link is no finding. */
TEST(nvml_stub_long_context_rules) {
    test_server sv;
    if (test_serve_start(&sv, "--ttft 5ms --itl 5ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    char args[1400], path[800];
    snprintf(path, sizeof path, "%s/bench.json", harness_tmpdir());
    snprintf(args, sizeof args, "bench --url %s --concurrency 2 --duration 12s --dataset random:in=8,out=20 --gpu-ids 0 "
             "--telemetry-interval 500ms --quiet --out %s", sv.url, path);
    int st;
    char *out = run_with_stub("NVML_STUB_GPUS=1 NVML_STUB_DRAM=95 NVML_STUB_PCIE_GEN=1", args, &st);
    test_serve_stop(&sv);
    CHECK_MSG(st == 0, "bench with the stand-in: %s", out ? out : "");
    free(out);
    json_t *doc = test_load_json(path);
    CHECK(doc != NULL);
    if (!doc) return;
    const json_t *gpu = json_array_get(json_object_get(json_object_get(doc, "telemetry"), "gpu"), 0);
    const json_t *link = json_object_get(gpu, "pcie");
    CHECK(test_num(link, "gen_max") == 1 && test_num(link, "width_max") == 16);
    CHECK_NEAR(test_num(link, "link_mb_s_per_direction"), 4000, 1e-9);
    diagnose_opts o;
    diagnose_default_opts(&o);
    char err[256];
    json_t *dg = diagnose_run(doc, &o, err, sizeof err);
    const json_t *bw = NULL, *pcie = NULL, *f;
    size_t i;
    json_array_foreach(json_object_get(dg, "findings"), i, f) {
        const char *c = json_string_value(json_object_get(f, "class"));
        if (!strcmp(c, "bandwidth_ceiling")) bw = f;
        if (!strcmp(c, "host_pcie")) pcie = f;
    }
    CHECK_MSG(bw != NULL, "no bandwidth_ceiling finding");
    if (bw) CHECK(test_num(json_array_get(json_object_get(bw, "evidence"), 0), "value") > 10);
    CHECK_MSG(pcie && strstr(json_string_value(json_object_get(pcie, "title")), "link"), "PCIe against a Gen1 x16 link");
    json_decref(dg);
    /* the same 2 GB/s on a Gen4 x16 link (31.5 GB/s each way) is no finding */
    json_object_set_new((json_t *)link, "gen_max", json_integer(4));
    json_object_set_new((json_t *)link, "link_mb_s_per_direction", json_real(nvml_pcie_link_mb_s(4, 16)));
    dg = diagnose_run(doc, &o, err, sizeof err);
    json_array_foreach(json_object_get(dg, "findings"), i, f)
        CHECK(strcmp(json_string_value(json_object_get(f, "class")), "host_pcie") != 0);
    json_decref(dg);
    json_decref(doc);
}

/* ---- a deployment split over two GPUs: bench against `dsperf serve` with the stand-in giving each
 * GPU a known utilisation pattern, then diagnose. The split mode and tensor split are what llama-server's
 * command line says; `dsperf serve` has none, so where a case needs them the test writes the command
 * line a run of `llama-server ... -sm M -ts A,B` records (telemetry.host.numa.server.cmdline, from
 * /proc/PID/cmdline with --server-pid) into the results, as that run would hold it. */

/* Benches `serve` for 1.5 s under the stand-in with the knobs; the results, or NULL (test failed). */
static json_t *split_bench(const test_server *sv, const char *knob_spec, const char *name) {
    char args[1400], path[800];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(args, sizeof args, "bench --url %s --concurrency 2 --duration 1500ms --dataset random:in=8,out=20 --gpu-ids all "
             "--telemetry-interval 100ms --quiet --out %s", sv->url, path);
    int st;
    char *out = run_with_stub(knob_spec, args, &st);
    CHECK_MSG(st == 0, "bench (%s) with the stand-in: %s", knob_spec, out ? out : "");
    free(out);
    return test_load_json(path);
}

/* Puts a llama-server command line where the host sampler records the server's. */
static void set_cmdline(json_t *doc, const char *const *argv) {
    json_t *tel = json_object_get(doc, "telemetry"), *host = json_object_get(tel, "host");
    if (!host) json_object_set_new(tel, "host", host = json_object());
    json_t *numa = json_object_get(host, "numa");
    if (!numa) json_object_set_new(host, "numa", numa = json_object());
    json_t *srv = json_object_get(numa, "server");
    if (!srv) json_object_set_new(numa, "server", srv = json_object());
    json_t *a = json_array();
    for (; *argv; argv++) json_array_append_new(a, json_string(*argv));
    json_object_set_new(srv, "cmdline", a);
}

static json_t *split_diagnose(const json_t *doc) {
    diagnose_opts o;
    diagnose_default_opts(&o);
    char err[256] = "";
    json_t *dg = diagnose_run(doc, &o, err, sizeof err);
    CHECK_MSG(dg != NULL, "diagnose: %s", err);
    return dg;
}

static const json_t *split_finding(const json_t *dg, const char *cls) {
    size_t i;
    const json_t *f;
    json_array_foreach(json_object_get(dg, "findings"), i, f)
        if (!strcmp(json_string_value(json_object_get(f, "class")), cls)) return f;
    return NULL;
}

static const json_t *split_knob(const json_t *f, const char *knob) {
    size_t i;
    const json_t *k;
    json_array_foreach(json_object_get(f, "knobs"), i, k)
        if (!strcmp(json_string_value(json_object_get(k, "knob")), knob)) return k;
    return NULL;
}

static bool knob_is(const json_t *k, const char *cur, const char *sug) {
    const char *c = json_string_value(json_object_get(k, "current")), *s = json_string_value(json_object_get(k, "suggested"));
    return k && (cur ? c && !strcmp(c, cur) : json_is_null(json_object_get(k, "current"))) && s && !strcmp(s, sug);
}

/* The cost's share must follow the busy times the stand-in was told: the idle share of the GPUs'
 * time while they take turns, 1 - mean/max for a straggler. */
static double cost_of(const json_t *f) { return test_num(json_object_get(f, "cost"), "lost_frac"); }

TEST(nvml_stub_split_layer_turns) {
    test_server sv;
    if (test_serve_start(&sv, "--ttft 5ms --itl 5ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    /* llama.cpp's layer split: 70/30 then 30/70, sample after sample (one GPU's worth together) */
    json_t *doc = split_bench(&sv, "NVML_STUB_GPUS=2 NVML_STUB_UTIL=70,30;30,70", "layer");
    test_serve_stop(&sv);
    if (!doc) return;
    CHECK_EQ_INT((int)json_array_size(json_object_get(json_object_get(doc, "telemetry"), "gpu")), 2);
    /* the environment lists the GPUs the sampler saw (it stayed empty before stop 44) */
    const json_t *env_gpus = json_object_get(json_object_get(doc, "environment"), "gpus");
    CHECK_EQ_INT((int)json_array_size(env_gpus), 2);
    for (int i = 0; i < 2; i++) {
        const json_t *t = json_array_get(json_object_get(json_object_get(doc, "telemetry"), "gpu"), (size_t)i);
        CHECK(json_equal(json_object_get(json_array_get(env_gpus, (size_t)i), "uuid"), json_object_get(t, "uuid")));
        CHECK(json_is_string(json_object_get(json_array_get(env_gpus, (size_t)i), "name")));
    }
    json_t *dg = split_diagnose(doc);
    const json_t *f = split_finding(dg, "layer_split");
    CHECK_MSG(f != NULL, "no layer_split finding");
    if (f) {
        CHECK(strstr(json_string_value(json_object_get(f, "title")), "take turns") != NULL);
        CHECK_NEAR(test_num(json_array_get(json_object_get(f, "evidence"), 0), "value"), 100, 1e-9);   /* 70 + 30 every sample */
        CHECK_NEAR(cost_of(f), 0.5, 1e-9);                       /* half of two GPUs' time idle */
        CHECK_NEAR(test_num(f, "confidence"), 0.7, 1e-9);        /* seen in the samples; the split mode unknown */
        CHECK(knob_is(split_knob(f, "split_mode"), NULL, "row"));
        CHECK(split_knob(f, "replicas") != NULL);                /* 1 + 2 GiB held: fits one 140 GiB GPU */
    }
    CHECK(split_finding(dg, "uneven_split") == NULL);            /* 50 % each on average: even */
    CHECK(split_finding(dg, "row_split") == NULL);
    json_decref(dg);
    /* the same run of llama-server with no -sm: its default layer split is the current value */
    static const char *const argv[] = {"/opt/llama/llama-server", "-m", "v2lite.gguf", "-ngl", "99", "--port", "8080", NULL};
    set_cmdline(doc, argv);
    dg = split_diagnose(doc);
    f = split_finding(dg, "layer_split");
    CHECK(f && test_num(f, "confidence") == 0.85);
    CHECK(f && knob_is(split_knob(f, "split_mode"), "layer", "row"));
    /* taking turns, one GPU streams at a time: the roofline is one GPU's, not a tensor-parallel pair's */
    CHECK(test_num(json_object_get(json_object_get(dg, "deployment"), "tp"), "value") == 1);
    json_decref(dg);
    json_decref(doc);
}

TEST(nvml_stub_split_straggler) {
    test_server sv;
    if (test_serve_start(&sv, "--ttft 5ms --itl 5ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    /* -ts 1,3 with -sm layer: GPU 1 holds three quarters of the layers and works 70 % of the time, GPU 0 30 % */
    json_t *doc = split_bench(&sv, "NVML_STUB_GPUS=2 NVML_STUB_UTIL=30;70", "straggler");
    test_serve_stop(&sv);
    if (!doc) return;
    json_t *dg = split_diagnose(doc);
    const json_t *f = split_finding(dg, "uneven_split");
    CHECK_MSG(f != NULL, "no uneven_split finding");
    if (f) {
        CHECK_EQ_INT((int)test_num(f, "gpu_index"), 1);
        CHECK(strstr(json_string_value(json_object_get(f, "title")), "GPU 1 is the straggler") != NULL);
        CHECK_NEAR(cost_of(f), 1 - 50.0 / 70, 1e-3);
        /* no -ts: llama.cpp's default split (equal on equal GPUs); even busy time needs 1/30 : 1/70 */
        char want[32];
        snprintf(want, sizeof want, "%.2g,1", (1 / 30.0) / (1 / 70.0));
        CHECK_MSG(knob_is(split_knob(f, "tensor_split"), "by free memory", want), "tensor_split knob, want by free memory -> %s", want);
    }
    /* constant readings: no turns to see, and the split mode unknown: no layer_split claim */
    CHECK(split_finding(dg, "layer_split") == NULL);
    json_decref(dg);
    /* the report's hosts-and-GPUs section: each GPU with its utilisation, memory and busy share */
    rbuf b;
    rb_init(&b);
    report_deployment(&b, doc, NULL);
    CHECK(b.p && strstr(b.p, "<h2>Hosts and GPUs</h2>") && strstr(b.p, "<h3>Each GPU</h3>"));
    CHECK_MSG(b.p && strstr(b.p, "<td>GPU 1</td><td>NVIDIA H200 (stub 1)</td><td>70%</td><td>70%</td>"), "GPU 1's row: %s", b.p ? b.p : "");
    CHECK_MSG(b.p && strstr(b.p, "<td>2 GiB</td><td>140 GiB</td><td>70%</td></tr>"), "%s", b.p ? b.p : "");   /* 2048 MiB used; 70 / (30 + 70) */
    CHECK(b.p && strstr(b.p, "<td>1 GiB</td><td>140 GiB</td><td>30%</td></tr>"));
    rb_free(&b);
    static const char *const argv[] = {"llama-server", "-m", "v2lite.gguf", "-sm", "layer", "--tensor-split", "1,3", NULL};
    set_cmdline(doc, argv);
    dg = split_diagnose(doc);
    f = split_finding(dg, "uneven_split");
    char want[32];
    snprintf(want, sizeof want, "1,%.2g", (0.75 / 70) / (0.25 / 30));   /* each share / its busy time */
    CHECK_MSG(f && knob_is(split_knob(f, "tensor_split"), "1,3", want), "tensor_split knob, want 1,3 -> %s", want);
    f = split_finding(dg, "layer_split");                         /* 30 + 70: one GPU's worth, -sm layer */
    CHECK(f && knob_is(split_knob(f, "split_mode"), "layer", "row"));
    json_decref(dg);
    /* the same GPUs as two nodes would report them (a merged job: labelled by host, GPU 1's sampler
     * ticking 70 ms after GPU 0's): no turns can be read across nodes, the straggler still is */
    json_t *g1 = json_array_get(json_object_get(json_object_get(doc, "telemetry"), "gpu"), 1);
    json_object_set_new(json_array_get(json_object_get(json_object_get(doc, "telemetry"), "gpu"), 0), "host", json_string("node-a"));
    json_object_set_new(g1, "host", json_string("node-b"));
    json_object_set_new(g1, "index", json_integer(0));
    size_t k;
    json_t *t;
    json_array_foreach(json_object_get(json_object_get(g1, "series"), "t_s"), k, t) json_real_set(t, json_number_value(t) + 0.07);
    dg = split_diagnose(doc);
    CHECK(split_finding(dg, "layer_split") == NULL);
    f = split_finding(dg, "uneven_split");
    CHECK_MSG(f && strstr(json_string_value(json_object_get(f, "title")), "GPU 0 on node-b is the straggler"), "%s",
              f ? json_string_value(json_object_get(f, "title")) : "no uneven_split across nodes");
    CHECK(f && !strcmp(json_string_value(json_object_get(f, "gpu_host")), "node-b"));
    json_decref(dg);
    json_decref(doc);
}

TEST(nvml_stub_split_row_traffic) {
    test_server sv;
    if (test_serve_start(&sv, "--ttft 5ms --itl 5ms") != 0) { CHECK_MSG(0, "serve did not start"); return; }
    /* -sm row: both GPUs 90 % busy, NVLink 200,000 MiB/s each way on each GPU */
    json_t *doc = split_bench(&sv, "NVML_STUB_GPUS=2 NVML_STUB_UTIL=90;90 NVML_STUB_NVLINK=200000", "row");
    /* the single-GPU run of the same patterns: no split findings at all */
    json_t *one = split_bench(&sv, "NVML_STUB_GPUS=1 NVML_STUB_UTIL=70,30 NVML_STUB_NVLINK=200000", "one");
    test_serve_stop(&sv);
    if (!doc || !one) { json_decref(doc); json_decref(one); return; }
    static const char *const argv[] = {"llama-server", "-m", "v2lite.gguf", "-sm", "row", NULL};
    set_cmdline(doc, argv);
    json_t *dg = split_diagnose(doc);
    const json_t *f = split_finding(dg, "row_split");
    CHECK_MSG(f != NULL, "no row_split finding");
    if (f) {
        double share = 2 * 200000 * 1.048576 / 900e3;            /* rx + tx against the H200's 900 GB/s NVLink */
        CHECK_NEAR(cost_of(f), share, 1e-3);
        CHECK(test_num(f, "confidence") == 0.75);
        CHECK(knob_is(split_knob(f, "split_mode"), "row", "layer"));
    }
    /* a row split is tensor parallel over the GPUs the server holds: the roofline's tp is theirs */
    const json_t *tp = json_object_get(json_object_get(dg, "deployment"), "tp");
    CHECK_MSG(test_num(tp, "value") == 2 && strstr(json_string_value(json_object_get(tp, "source")), "-sm row"),
              "tp %g from %s", test_num(tp, "value"), json_string_value(json_object_get(tp, "source")));
    CHECK(split_finding(dg, "layer_split") == NULL && split_finding(dg, "uneven_split") == NULL);
    json_decref(dg);
    set_cmdline(one, argv);
    dg = split_diagnose(one);
    CHECK(split_finding(dg, "layer_split") == NULL && split_finding(dg, "uneven_split") == NULL &&
          split_finding(dg, "row_split") == NULL);
    const json_t *c;
    size_t i;
    bool said = false;
    json_array_foreach(json_object_get(dg, "checked"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "rule")), "gpu_split"))
            said = !json_is_true(json_object_get(c, "ran")) && strstr(json_string_value(json_object_get(c, "why")), "one GPU");
    CHECK_MSG(said, "checked must say the split rules need two GPUs");
    json_decref(dg);
    json_decref(doc);
    json_decref(one);
}

/* scripts/gpu_scenarios.sh asked for the split runs on a one-GPU machine: one line, exit 2, nothing
 * built or written. nvidia-smi -L is what it counts GPUs by; a one-line stand-in for it on PATH says
 * one GPU (on any machine, GPU hosts included). */
TEST(gpu_scenarios_refuse_split_runs_on_one_gpu) {
    char bin[PATH_MAX], root[PATH_MAX], dir[PATH_MAX + 16], cmd[4 * PATH_MAX + 256];
    snprintf(bin, sizeof bin, "%s", harness_bin());
    snprintf(root, sizeof root, "%s", dirname(dirname(bin)));   /* BUILD/dsperf_test -> the checkout */
    snprintf(dir, sizeof dir, "%s/fakebin", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "mkdir -p %s && printf '#!/bin/sh\\necho \"GPU 0: NVIDIA H200 (UUID: GPU-1)\"\\n' > %s/nvidia-smi && "
             "chmod +x %s/nvidia-smi", dir, dir, dir);
    CHECK_EQ_INT(system(cmd), 0);
    static const char *const asks[] = {"multigpu", "slots uneven_split"};
    for (int k = 0; k < 2; k++) {
        snprintf(cmd, sizeof cmd, "cd %s && PATH=%s:$PATH sh scripts/gpu_scenarios.sh --work %s/w --out %s/o %s 2>%s/err.txt",
                 root, dir, harness_tmpdir(), harness_tmpdir(), asks[k], harness_tmpdir());
        int st = system(cmd);
        CHECK_MSG(WIFEXITED(st) && WEXITSTATUS(st) == 2, "%s: status %d", asks[k], st);
        char path[PATH_MAX + 16];
        snprintf(path, sizeof path, "%s/err.txt", harness_tmpdir());
        FILE *f = fopen(path, "r");
        char line[512] = "", more[8] = "";
        if (f) { if (!fgets(line, sizeof line, f)) line[0] = 0; if (!fgets(more, sizeof more, f)) more[0] = 0; fclose(f); }
        CHECK_MSG(strstr(line, "need 2 GPUs; this machine has 1") != NULL && !more[0], "stderr: %s%s", line, more);
        snprintf(path, sizeof path, "%s/w", harness_tmpdir());
        CHECK_MSG(access(path, F_OK) != 0, "refused, yet it made %s", path);
    }
}
