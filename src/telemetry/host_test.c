/* Tests of the host readers: live /proc values are sane; NUMA placement on fixture trees
 * (sysfs-like node and PCI directories, /proc/PID/status and numa_maps). */
#include "harness.h"
#include "common/clock.h"
#include "telemetry/host.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <time.h>

TEST(telemetry_host_sample_sane) {
    host_sampler *h = host_sampler_new("/proc", getpid());
    double a[HOST_COL_COUNT], b[HOST_COL_COUNT];
    host_sample(h, clock_now_ns(), a);
    CHECK(isnan(a[HOST_CPU_UTIL_PCT]));               /* needs two samples */
    CHECK(a[HOST_MEM_USED_MIB] > 0 && a[HOST_MEM_AVAILABLE_MIB] > 0);
    CHECK(a[HOST_LOAD1] >= 0);
    CHECK(a[HOST_SERVER_RSS_MIB] > 0 && a[HOST_SERVER_RSS_MIB] < 1e6);
    /* burn 60 ms of this process's CPU (however long that takes on a busy machine), then the
     * sampler's share must be what getrusage-level accounting says it was over the wall interval */
    struct timespec c0, c1;
    int64_t w0 = clock_now_ns();
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c0);
    volatile double x = 0;
    do {
        for (int i = 0; i < 100000; i++) x += 1;
        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &c1);
    } while ((c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec) < 60e6);
    host_sample(h, clock_now_ns(), b);
    double wall_ms = (clock_now_ns() - w0) / 1e6, cpu_ms = ((c1.tv_sec - c0.tv_sec) * 1e9 + (c1.tv_nsec - c0.tv_nsec)) / 1e6;
    CHECK(b[HOST_CPU_UTIL_PCT] >= 0 && b[HOST_CPU_UTIL_PCT] <= 100);
    CHECK(b[HOST_IOWAIT_PCT] >= 0 && b[HOST_IOWAIT_PCT] <= 100);
    CHECK(b[HOST_STEAL_PCT] >= 0 && b[HOST_STEAL_PCT] <= 100);
    /* one thread cannot wait for a CPU longer than the wall time between samples */
    if (access("/proc/self/schedstat", R_OK) == 0) CHECK(b[HOST_SERVER_RUNQ_PCT] >= 0 && b[HOST_SERVER_RUNQ_PCT] <= 100.0 + 1e-6);
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    /* /proc counts in 10 ms ticks: two ticks of slack on each side of the measured share */
    double want = 100.0 * cpu_ms / wall_ms, slack = 100.0 * 20.0 / wall_ms + 2;
    CHECK_MSG(fabs(b[HOST_SERVER_CPU_PCT] - want) <= slack && b[HOST_SERVER_CPU_PCT] <= 100.0 * ncpu,
              "server_cpu_pct %.1f, measured %.1f%% (%.1f ms CPU in %.1f ms) +- %.1f", b[HOST_SERVER_CPU_PCT], want, cpu_ms,
              wall_ms, slack);
    host_sampler_free(h);
    /* a pid that does not exist: process columns unknown, machine columns still there */
    h = host_sampler_new("/proc", 0x3fffffff);
    host_sample(h, clock_now_ns(), a);
    CHECK(isnan(a[HOST_SERVER_RSS_MIB]) && a[HOST_MEM_USED_MIB] > 0);
    host_sampler_free(h);
}

TEST(telemetry_host_cpulist) {
    static bool set[HOST_MAX_CPUS];
    CHECK_EQ_INT(host_parse_cpulist("0-3,8,10-11\n", set), 7);
    CHECK(set[0] && set[3] && !set[4] && set[8] && !set[9] && set[11]);
    CHECK_EQ_INT(host_parse_cpulist("5", set), 1);
    CHECK_EQ_INT(host_parse_cpulist("3-1", set), -1);
    CHECK_EQ_INT(host_parse_cpulist("a-b", set), -1);
}

static void put(const char *root, const char *rel, const char *text) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", root, rel);
    for (char *p = path + strlen(root) + 1; *p; p++)          /* mkdir -p of the parents */
        if (*p == '/') { *p = 0; mkdir(path, 0755); *p = '/'; }
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs(text, f);
    fclose(f);
}

TEST(telemetry_host_numa_maps) {
    const char *dir = harness_tmpdir();
    put(dir, "maps", "7f00 default anon=10 dirty=10 N0=10 kernelpagesize_kB=4\n"
                     "7f10 bind:1 file=/x mapped=3 N0=1 N1=2 kernelpagesize_kB=4\n"
                     "7f20 default huge anon=2 dirty=2 N1=2 kernelpagesize_kB=2048\n"
                     "7f30 default\n");
    char path[512];
    snprintf(path, sizeof path, "%s/maps", dir);
    double kb[HOST_MAX_NODES];
    CHECK_EQ_INT(host_numa_maps_kb(path, kb), 0);
    CHECK_NEAR(kb[0], 44, 0);
    CHECK_NEAR(kb[1], 8 + 4096, 0);
    CHECK_NEAR(kb[2], 0, 0);
    CHECK_EQ_INT(host_numa_maps_kb("/nonexistent/numa_maps", kb), -1);
}

/* Two nodes (CPUs 0-3 and 4-7), the GPU on node 1. Process 100 runs on node 0 with its
 * memory there: cross-NUMA. Process 200 is pinned to node 1: fine. */
TEST(telemetry_host_numa_placement) {
    const char *root = harness_tmpdir();
    put(root, "sys/devices/system/node/node0/cpulist", "0-3\n");
    put(root, "sys/devices/system/node/node1/cpulist", "4-7\n");
    put(root, "sys/bus/pci/devices/0000:1b:00.0/numa_node", "1\n");
    put(root, "sys/bus/pci/devices/0000:9a:00.0/numa_node", "-1\n");
    put(root, "proc/100/status", "Name:\tpython3\nCpus_allowed:\tff\nCpus_allowed_list:\t0-7\nMems_allowed_list:\t0-1\n");
    put(root, "proc/100/numa_maps", "7f00 default anon=900 N0=900 kernelpagesize_kB=4\n7f10 default anon=100 N1=100 kernelpagesize_kB=4\n");
    put(root, "proc/200/status", "Name:\tpython3\nCpus_allowed_list:\t4-7\n");
    put(root, "proc/200/numa_maps", "7f00 bind:1 anon=1000 N1=1000 kernelpagesize_kB=4\n");
    char proc[512];
    snprintf(proc, sizeof proc, "%s/proc", root);
    const char *bus[] = {"0000:1b:00.0", "0000:9a:00.0", ""};
    CHECK_EQ_INT(host_pci_numa_node(root, bus[0]), 1);
    CHECK_EQ_INT(host_pci_numa_node(root, bus[1]), -1);

    /* the command line as the kernel keeps it: NUL after each argument */
    put(root, "proc/100/cmdline", "");
    char cpath[1024];
    snprintf(cpath, sizeof cpath, "%s/proc/100/cmdline", root);
    FILE *cf = fopen(cpath, "w");
    CHECK(cf != NULL);
    if (cf) { fwrite("llama-server\0-t\0001\0-ub\000512\0", 1, 26, cf); fclose(cf); }

    json_t *j = host_numa_json(root, proc, 100, bus, 1);
    json_t *argv = json_object_get(json_object_get(j, "server"), "cmdline");
    CHECK_EQ_INT(json_array_size(argv), 5);
    CHECK_STR(json_string_value(json_array_get(argv, 0)), "llama-server");
    CHECK_STR(json_string_value(json_array_get(argv, 2)), "1");
    CHECK_STR(json_string_value(json_array_get(argv, 4)), "512");
    CHECK_EQ_INT(json_array_size(json_object_get(j, "nodes")), 2);
    CHECK(json_is_true(json_object_get(j, "cross_numa")));
    json_t *srv = json_object_get(j, "server");
    CHECK_STR(json_string_value(json_object_get(srv, "cpus_allowed")), "0-7");
    CHECK_EQ_INT(json_array_size(json_object_get(srv, "cpu_nodes")), 2);
    CHECK_NEAR(json_real_value(json_object_get(srv, "mem_off_gpu_node_pct")), 90, 1e-9);
    CHECK(strstr(json_string_value(json_object_get(j, "why")), "CPUs of a node without its GPUs") != NULL);
    json_decref(j);

    j = host_numa_json(root, proc, 200, bus, 1);
    CHECK(json_is_false(json_object_get(j, "cross_numa")));
    CHECK(json_object_get(json_object_get(j, "server"), "cmdline") == NULL);   /* none there: none claimed */
    CHECK_NEAR(json_real_value(json_object_get(json_object_get(j, "server"), "mem_off_gpu_node_pct")), 0, 1e-9);
    json_decref(j);

    /* GPU node unknown (-1, as on single-socket VMs): no verdict, said why */
    j = host_numa_json(root, proc, 100, bus + 1, 2);
    CHECK(json_is_null(json_object_get(j, "cross_numa")));
    CHECK(json_is_null(json_object_get(json_array_get(json_object_get(j, "gpus"), 0), "numa_node")));
    json_decref(j);

    /* no pid: layout only */
    j = host_numa_json(root, proc, 0, bus, 1);
    CHECK(json_is_null(json_object_get(j, "cross_numa")) && !json_object_get(j, "server"));
    json_decref(j);
}

/* Steal and the main thread's run-queue wait from a /proc tree written here: the shares are the
 * counters' growth over the interval (steal over all CPU time; the wait over wall time), and a
 * /proc/stat without the steal column (kernels before 2.6.11) leaves steal unknown. */
TEST(telemetry_host_steal_and_runq) {
    const char *dir = harness_tmpdir();
    put(dir, "stat", "cpu  1000 0 500 8000 100 0 0 400 0 0\n");
    put(dir, "meminfo", "MemTotal: 1000 kB\nMemAvailable: 500 kB\n");
    put(dir, "loadavg", "0.5 0.4 0.3 1/100 42\n");
    put(dir, "42/stat", "42 (llama-server) R 1 1 1 0 -1 0 0 0 0 0 100 50 0 0 20 0 9 0 1 1000 256\n");
    put(dir, "42/schedstat", "5000000000 200000000 9000\n");
    host_sampler *h = host_sampler_new(dir, 42);
    double a[HOST_COL_COUNT], b[HOST_COL_COUNT];
    host_sample(h, 1000000000, a);
    CHECK(isnan(a[HOST_STEAL_PCT]) && isnan(a[HOST_SERVER_RUNQ_PCT]));   /* both need a previous sample */
    /* 1000 ticks later: 300 of them stolen; over 2 s of wall time the main thread waited 0.5 s */
    put(dir, "stat", "cpu  1400 0 600 8200 100 0 0 700 0 0\n");
    put(dir, "42/schedstat", "6500000000 700000000 9500\n");
    host_sample(h, 3000000000, b);
    CHECK_NEAR(b[HOST_STEAL_PCT], 30.0, 1e-9);
    CHECK_NEAR(b[HOST_CPU_UTIL_PCT], 80.0, 1e-9);   /* steal is time the CPUs were not idle */
    CHECK_NEAR(b[HOST_SERVER_RUNQ_PCT], 25.0, 1e-9);
    host_sampler_free(h);
    put(dir, "stat", "cpu  1000 0 500 8000\n");
    h = host_sampler_new(dir, 0);
    host_sample(h, 1000000000, a);
    put(dir, "stat", "cpu  1100 0 500 8100\n");
    host_sample(h, 2000000000, b);
    CHECK_NEAR(b[HOST_CPU_UTIL_PCT], 50.0, 1e-9);
    CHECK(isnan(b[HOST_STEAL_PCT]) && isnan(b[HOST_SERVER_RUNQ_PCT]));
    host_sampler_free(h);
}
