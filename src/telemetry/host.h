/* host — the machine around the GPUs: CPU utilisation (whole machine from /proc/stat, and of the
 * server process from /proc/PID/stat), the CPU a hypervisor took (steal) and the time the server's
 * main thread waited for a CPU (/proc/PID/schedstat), memory, load; and NUMA placement: the node of each GPU
 * (sysfs) against the CPUs the server may run on and the nodes its memory sits on
 * (/proc/PID/status, /proc/PID/numa_maps). A server whose threads or pages live on another
 * node than its GPU pays a cross-socket hop on every host<->device copy and kernel launch. */
#ifndef DSP_HOST_H
#define DSP_HOST_H
#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

typedef enum {
    HOST_CPU_UTIL_PCT,       /* all CPUs, 0..100 */
    HOST_IOWAIT_PCT,
    HOST_MEM_USED_MIB,       /* MemTotal - MemAvailable */
    HOST_MEM_AVAILABLE_MIB,
    HOST_LOAD1,
    HOST_SERVER_CPU_PCT,     /* server process, % of one core (may exceed 100) */
    HOST_SERVER_RSS_MIB,
    HOST_STEAL_PCT,          /* all CPUs: time a hypervisor ran something else on them, 0..100 */
    HOST_SERVER_RUNQ_PCT,    /* the server's main thread: % of wall time runnable but waiting for a
                              * CPU (/proc/PID/schedstat); llama.cpp's main thread launches the kernels */
    HOST_COL_COUNT
} host_col;
extern const char *const host_col_names[HOST_COL_COUNT];

typedef struct host_sampler host_sampler;
/* procroot: "/proc" normally (tests pass a fixture dir). pid <= 0: no server process. */
host_sampler *host_sampler_new(const char *procroot, int server_pid);
void host_sampler_free(host_sampler *h);
/* Fills cols (NaN where unknown; utilisation needs a previous sample, so NaN on the first). */
void host_sample(host_sampler *h, int64_t now_ns, double *cols);

#define HOST_MAX_CPUS 4096
#define HOST_MAX_NODES 64
/* Parses a kernel cpulist ("0-3,8,10-11") into set[HOST_MAX_CPUS]; returns the count, -1 malformed. */
int host_parse_cpulist(const char *s, bool *set);
/* NUMA node of a PCI device ("0000:1b:00.0") under sysroot ("/" normally); -1 unknown/none. */
int host_pci_numa_node(const char *sysroot, const char *bus_id);
/* Sums numa_maps N<node>=<pages> × kernelpagesize_kB into kb[HOST_MAX_NODES]; returns 0, -1 unreadable. */
int host_numa_maps_kb(const char *path, double *kb);

/* The placement report: {"nodes":[{"node":0,"cpus":"0-15"}...], "gpus":[{"index","bus_id","numa_node"}],
 * "server":{"pid","cpus_allowed","cmdline":["llama-server","-t","1",..],"cpu_nodes":[..],"mem_kb_by_node":{"0":..}},
 * "cross_numa":true|false|null,
 * "why":"..."}. bus_ids[i] may be "" (unknown). */
json_t *host_numa_json(const char *sysroot, const char *procroot, int pid, const char *const *bus_ids, int n_gpus);
#endif
