/* cmd_env — `dsperf env`: checks the machine for what skews a benchmark (GPU driver state,
 * MIG, persistence, clocks and power limit, NUMA, CPU governor, fd limit, transparent huge
 * pages, background load), each with OK / WARN / INFO and why it matters. Works without a GPU. */
#include "cli/cli.h"
#include "common/clock.h"
#include "common/log.h"
#include "telemetry/host.h"
#include "telemetry/nvml.h"
#include <getopt.h>
#include <glob.h>
#include <jansson.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/utsname.h>
#include <unistd.h>

typedef struct {
    json_t *checks;
    int warns;
} env_ctx;

static void add(env_ctx *c, const char *status, const char *check, const char *why, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static void add(env_ctx *c, const char *status, const char *check, const char *why, const char *fmt, ...) {
    char value[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(value, sizeof value, fmt, ap);
    va_end(ap);
    if (!strcmp(status, "WARN")) c->warns++;
    json_array_append_new(c->checks, json_pack("{s:s,s:s,s:s,s:s}", "status", status, "check", check, "value", value,
                                               "why", why ? why : ""));
}

static int read_line(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    if (!fgets(buf, (int)len, f)) buf[0] = 0;
    fclose(f);
    buf[strcspn(buf, "\n")] = 0;
    return 0;
}

static void check_gpus(env_ctx *c, char bus[][32], int *n_out) {
    char err[256];
    *n_out = 0;
    nvml *nv = nvml_open(err, sizeof err);
    if (!nv) {
        add(c, "INFO", "nvml", "GPU checks skipped; CPU-side checks below still apply", "%s", err);
        return;
    }
    char drv[96] = "?";
    int cuda = 0;
    nvml_driver_version(nv, drv, sizeof drv);
    if (nvml_cuda_driver_version(nv, &cuda)) cuda = 0;
    add(c, "INFO", "driver", "record it with results: kernels and NCCL behave differently across drivers",
        "NVIDIA driver %s, CUDA driver API %d.%d", drv, cuda / 1000, cuda % 1000 / 10);
    int n = nvml_device_count(nv);
    add(c, "INFO", "gpus", NULL, "%d GPU(s)", n);
    for (int i = 0; i < n && i < 64; i++) {
        nvml_gpu_info in;
        if (nvml_gpu_info_get(nv, i, &in)) continue;
        snprintf(bus[i], 32, "%s", in.bus_id);
        *n_out = i + 1;
        char name[32];
        snprintf(name, sizeof name, "gpu%d", i);
        add(c, "INFO", name, NULL, "%s, %.0f MiB, compute %d.%d, bus %s, GPM %s", in.name, in.mem_total_mib, in.cc_major,
            in.cc_minor, in.bus_id[0] ? in.bus_id : "?", in.gpm_supported ? "yes" : "no");
        snprintf(name, sizeof name, "gpu%d.mig", i);
        if (in.mig_mode == 1)
            add(c, "WARN", name, "the GPU is partitioned: a benchmark sees one slice, not the whole GPU", "MIG enabled");
        else
            add(c, in.mig_mode == 0 ? "OK" : "INFO", name, NULL, "%s", in.mig_mode == 0 ? "MIG off" : "MIG not supported");
        snprintf(name, sizeof name, "gpu%d.persistence", i);
        if (in.persistence_mode == 0)
            add(c, "WARN", name, "without it the driver may tear down and re-initialise the GPU between runs, "
                "adding seconds to the first request (nvidia-smi -pm 1)", "persistence mode off");
        else
            add(c, in.persistence_mode == 1 ? "OK" : "INFO", name, NULL, "%s",
                in.persistence_mode == 1 ? "persistence mode on" : "persistence mode unknown");
        nvml_gpu *g = nvml_gpu_open(nv, i);
        double s[GPU_COL_COUNT];
        if (g) nvml_gpu_sample(g, clock_now_ns(), s);
        else for (int k = 0; k < GPU_COL_COUNT; k++) s[k] = NAN;
        nvml_gpu_close(g);
        snprintf(name, sizeof name, "gpu%d.clocks", i);
        add(c, "INFO", name, "idle GPUs clock down; the first seconds of a run measure the ramp-up (warm up first)",
            "SM %.0f of %.0f MHz, memory %.0f of %.0f MHz", s[GPU_SM_CLOCK_MHZ], in.sm_clock_max_mhz,
            s[GPU_MEM_CLOCK_MHZ], in.mem_clock_max_mhz);
        snprintf(name, sizeof name, "gpu%d.power_limit", i);
        if (!isnan(in.power_limit_w) && !isnan(in.power_default_limit_w) && in.power_limit_w < in.power_default_limit_w - 1)
            add(c, "WARN", name, "a lowered power limit caps clocks under load: throughput will not match the datasheet",
                "%.0f W, below the default %.0f W", in.power_limit_w, in.power_default_limit_w);
        else
            add(c, isnan(in.power_limit_w) ? "INFO" : "OK", name, NULL, "%.0f W (default %.0f W)", in.power_limit_w,
                in.power_default_limit_w);
        snprintf(name, sizeof name, "gpu%d.throttle", i);
        double r = s[GPU_CLOCK_EVENT_REASONS];
        if (s[GPU_THROTTLED] == 1)
            add(c, "WARN", name, "clocks are being held down now (power or thermal): results will be low and noisy",
                "clock event reasons 0x%llx", (unsigned long long)r);
        else
            add(c, isnan(r) ? "INFO" : "OK", name, NULL, "%s", isnan(r) ? "unknown" : "no power/thermal throttling now");
        snprintf(name, sizeof name, "gpu%d.processes", i);
        if (s[GPU_N_PROCESSES] > 0)
            add(c, "WARN", name, "another process on the GPU competes for SMs and memory bandwidth",
                "%.0f compute process(es) running", s[GPU_N_PROCESSES]);
        else if (s[GPU_N_PROCESSES] == 0)
            add(c, "OK", name, NULL, "no compute processes");
    }
    nvml_close(nv);
}

static void check_numa(env_ctx *c, char bus[][32], int n_gpus) {
    const char *ids[64];
    for (int i = 0; i < n_gpus; i++) ids[i] = bus[i];
    json_t *numa = host_numa_json("", "/proc", 0, ids, n_gpus);
    size_t n_nodes = json_array_size(json_object_get(numa, "nodes"));
    char gpus[256] = "";
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(numa, "gpus"), i, g) {
        json_t *nd = json_object_get(g, "numa_node");
        size_t l = strlen(gpus);
        if (json_is_integer(nd)) snprintf(gpus + l, sizeof gpus - l, "%sgpu%zu:node%lld", l ? " " : "", i, (long long)json_integer_value(nd));
        else snprintf(gpus + l, sizeof gpus - l, "%sgpu%zu:node?", l ? " " : "", i);
    }
    if (n_nodes > 1)
        add(c, "INFO", "numa", "pin the server to its GPUs' node (numactl --cpunodebind=N --membind=N); run bench with "
            "--host-metrics --server-pid to check placement", "%zu NUMA nodes%s%s", n_nodes, gpus[0] ? "; " : "", gpus);
    else
        add(c, "OK", "numa", NULL, "%s%s%s", n_nodes == 1 ? "single NUMA node" : "no NUMA information",
            gpus[0] ? "; " : "", gpus);
    json_decref(numa);
}

static void check_host(env_ctx *c) {
    struct utsname u;
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    if (!uname(&u)) add(c, "INFO", "kernel", NULL, "%s %s %s, %ld CPUs online", u.sysname, u.release, u.machine, ncpu);
    glob_t gl;
    int perf = 0, other = 0;
    char other_name[64] = "";
    if (!glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor", 0, NULL, &gl)) {
        for (size_t i = 0; i < gl.gl_pathc; i++) {
            char g[64];
            if (read_line(gl.gl_pathv[i], g, sizeof g)) continue;
            if (!strcmp(g, "performance")) perf++;
            else { other++; snprintf(other_name, sizeof other_name, "%s", g); }
        }
        globfree(&gl);
    }
    if (other)
        add(c, "WARN", "cpu_governor", "frequency scaling adds jitter to the load generator and the server's CPU work "
            "(cpupower frequency-set -g performance)", "%d CPU(s) on '%s', %d on performance", other, other_name, perf);
    else if (perf)
        add(c, "OK", "cpu_governor", NULL, "performance on all %d CPUs", perf);
    else
        add(c, "INFO", "cpu_governor", "frequency is controlled by the hypervisor or firmware", "no cpufreq (VM or container)");
    struct rlimit rl;
    if (!getrlimit(RLIMIT_NOFILE, &rl)) {
        if (rl.rlim_cur < 65536)
            add(c, "WARN", "ulimit_nofile", "each concurrent connection needs a file descriptor; high-concurrency runs "
                "fail with EMFILE (ulimit -n 65536)", "soft %llu, hard %llu", (unsigned long long)rl.rlim_cur,
                (unsigned long long)rl.rlim_max);
        else
            add(c, "OK", "ulimit_nofile", NULL, "soft %llu", (unsigned long long)rl.rlim_cur);
    }
    char thp[128];
    if (!read_line("/sys/kernel/mm/transparent_hugepage/enabled", thp, sizeof thp)) {
        if (strstr(thp, "[always]"))
            add(c, "WARN", "transparent_hugepages", "khugepaged compaction can stall the server for milliseconds; "
                "madvise is the usual setting for serving", "%s", thp);
        else
            add(c, "OK", "transparent_hugepages", NULL, "%s", thp);
    } else {
        add(c, "INFO", "transparent_hugepages", NULL, "not readable");
    }
    double l1;
    char la[128];
    if (!read_line("/proc/loadavg", la, sizeof la) && sscanf(la, "%lf", &l1) == 1) {
        if (ncpu > 0 && l1 > 0.5 * (double)ncpu)
            add(c, "WARN", "load", "other work on this machine competes with the load generator and skews latency",
                "load average %.2f on %ld CPUs", l1, ncpu);
        else
            add(c, "OK", "load", NULL, "load average %.2f on %ld CPUs", l1, ncpu);
    }
}

static void usage(FILE *f) {
    fprintf(f,
        "usage: dsperf env [--json] [--strict]\n\n"
        "Checks the environment for what skews a benchmark: NVIDIA driver and CUDA version, GPUs, MIG,\n"
        "persistence mode, clocks vs max, power limit, throttling, other GPU processes, NUMA layout,\n"
        "CPU governor, open-file limit, transparent huge pages, background load. Each line is\n"
        "OK, WARN or INFO with the reason. Works on machines without a GPU.\n\n"
        "  --json     machine-readable: {\"checks\":[{\"status\",\"check\",\"value\",\"why\"}],\"warnings\":N}\n"
        "  --strict   exit 1 if any check is WARN (for CI gates)\n\n"
        "examples:\n  dsperf env\n  dsperf env --json > env.json\n");
}

int cmd_env(int argc, char **argv) {
    static const struct option opts[] = {{"json", no_argument, 0, 'j'}, {"strict", no_argument, 0, 's'},
                                         {"help", no_argument, 0, 'h'}, {0, 0, 0, 0}};
    bool as_json = false, strict = false;
    int ch;
    optind = 1;
    cli_option_table("env", opts);   /* DSPERF_OPTION_TABLE: the table, for completion */
    while ((ch = getopt_long(argc, argv, "jsh", opts, NULL)) != -1) {
        if (ch == 'j') as_json = true;
        else if (ch == 's') strict = true;
        else if (ch == 'h') { usage(stdout); return EXIT_OK; }
        else { usage(stderr); return EXIT_USAGE; }
    }
    if (optind < argc) {
        log_error("unexpected argument '%s'; see dsperf env --help", argv[optind]);
        return EXIT_USAGE;
    }
    env_ctx c = {.checks = json_array()};
    char bus[64][32];
    int n_gpus;
    check_gpus(&c, bus, &n_gpus);
    check_numa(&c, bus, n_gpus);
    check_host(&c);
    if (as_json) {
        json_t *o = json_pack("{s:O,s:i}", "checks", c.checks, "warnings", c.warns);
        char *s = json_dumps(o, JSON_INDENT(2));
        printf("%s\n", s);
        free(s);
        json_decref(o);
    } else {
        size_t i;
        json_t *e;
        json_array_foreach(c.checks, i, e) {
            const char *why = json_string_value(json_object_get(e, "why"));
            printf("%-4s  %-22s %s\n", json_string_value(json_object_get(e, "status")),
                   json_string_value(json_object_get(e, "check")), json_string_value(json_object_get(e, "value")));
            if (why && *why) printf("      %-22s -> %s\n", "", why);
        }
        printf("%d warning(s)\n", c.warns);
    }
    json_decref(c.checks);
    return strict && c.warns ? EXIT_RUN_FAILED : EXIT_OK;
}
