/* host — /proc and sysfs readings (see host.h). Every reader takes the root directory so tests
 * can point it at fixture trees. */
#include "telemetry/host.h"
#include "common/clock.h"
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *const host_col_names[HOST_COL_COUNT] = {
    "cpu_util_pct", "iowait_pct", "mem_used_mib", "mem_available_mib", "load1", "server_cpu_pct", "server_rss_mib",
    "steal_pct", "server_runq_pct"};

struct host_sampler {
    char procroot[256];
    int pid;
    bool have_prev;
    unsigned long long prev_total, prev_idle, prev_iowait, prev_steal;
    bool have_prev_proc, have_prev_runq;
    double prev_proc_ticks, prev_runq_ns;
    int64_t prev_runq_at_ns;
    int64_t prev_ns;
    long ticks_per_s, page_kb;
};

host_sampler *host_sampler_new(const char *procroot, int server_pid) {
    host_sampler *h = calloc(1, sizeof *h);
    if (!h) return NULL;
    snprintf(h->procroot, sizeof h->procroot, "%s", procroot ? procroot : "/proc");
    h->pid = server_pid;
    h->ticks_per_s = sysconf(_SC_CLK_TCK);
    h->page_kb = sysconf(_SC_PAGESIZE) / 1024;
    return h;
}

void host_sampler_free(host_sampler *h) { free(h); }

/* Reads a small file into buf (NUL-terminated); 0 ok. */
static int read_small(const char *path, char *buf, size_t len) {
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    size_t n = fread(buf, 1, len - 1, f);
    fclose(f);
    buf[n] = 0;
    return 0;
}

static void sample_cpu(host_sampler *h, double *cols) {
    char path[300], buf[512];
    snprintf(path, sizeof path, "%s/stat", h->procroot);
    if (read_small(path, buf, sizeof buf)) return;
    /* user nice system idle iowait irq softirq steal (guest time is inside user already) */
    unsigned long long v[8] = {0};
    int nf = sscanf(buf, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6], &v[7]);
    if (nf < 4) return;
    unsigned long long total = 0;
    for (int i = 0; i < 8; i++) total += v[i];
    if (h->have_prev && total > h->prev_total) {
        double dt = (double)(total - h->prev_total);
        double idle = (double)(v[3] - h->prev_idle), iow = (double)(v[4] - h->prev_iowait);
        cols[HOST_CPU_UTIL_PCT] = 100.0 * (1.0 - (idle + iow) / dt);
        cols[HOST_IOWAIT_PCT] = 100.0 * iow / dt;
        if (nf == 8 && v[7] >= h->prev_steal) cols[HOST_STEAL_PCT] = 100.0 * (double)(v[7] - h->prev_steal) / dt;
    }
    h->prev_total = total;
    h->prev_idle = v[3];
    h->prev_iowait = v[4];
    h->prev_steal = v[7];
    h->have_prev = true;
}

static void sample_mem(host_sampler *h, double *cols) {
    char path[300], buf[4096];
    snprintf(path, sizeof path, "%s/meminfo", h->procroot);
    if (read_small(path, buf, sizeof buf)) return;
    const char *t = strstr(buf, "MemTotal:"), *a = strstr(buf, "MemAvailable:");
    double total_kb, avail_kb;
    if (t && a && sscanf(t, "MemTotal: %lf", &total_kb) == 1 && sscanf(a, "MemAvailable: %lf", &avail_kb) == 1) {
        cols[HOST_MEM_USED_MIB] = (total_kb - avail_kb) / 1024.0;
        cols[HOST_MEM_AVAILABLE_MIB] = avail_kb / 1024.0;
    }
    snprintf(path, sizeof path, "%s/loadavg", h->procroot);
    double l1;
    if (!read_small(path, buf, sizeof buf) && sscanf(buf, "%lf", &l1) == 1) cols[HOST_LOAD1] = l1;
}

/* /proc/PID/stat: the command name (field 2) may hold spaces and parentheses, so fields are
 * counted from the last ')'. utime/stime are fields 14/15, rss (pages) field 24. */
static void sample_proc(host_sampler *h, int64_t now_ns, double *cols) {
    char path[300], buf[2048];
    snprintf(path, sizeof path, "%s/%d/stat", h->procroot, h->pid);
    if (read_small(path, buf, sizeof buf)) { h->have_prev_proc = false; return; }
    char *p = strrchr(buf, ')');
    if (!p) return;
    p += 2;                                   /* now at field 3 */
    double utime = NAN, stime = NAN, rss = NAN;
    for (int field = 3; *p && field <= 24; field++) {
        if (field == 14) utime = strtod(p, NULL);
        if (field == 15) stime = strtod(p, NULL);
        if (field == 24) rss = strtod(p, NULL);
        while (*p && *p != ' ') p++;
        while (*p == ' ') p++;
    }
    if (isnan(utime) || isnan(stime)) return;
    double ticks = utime + stime;
    if (h->have_prev_proc && now_ns > h->prev_ns && ticks >= h->prev_proc_ticks)
        cols[HOST_SERVER_CPU_PCT] = 100.0 * (ticks - h->prev_proc_ticks) / (double)h->ticks_per_s /
                                    ((double)(now_ns - h->prev_ns) / 1e9);
    if (!isnan(rss)) cols[HOST_SERVER_RSS_MIB] = rss * (double)h->page_kb / 1024.0;
    h->prev_proc_ticks = ticks;
    h->have_prev_proc = true;
}

/* /proc/PID/schedstat: the main thread's (the tid equal to the pid) nanoseconds on a CPU, waiting
 * on a run queue, and its time slices. The wait grows when the thread was ready and a CPU was not:
 * other threads on its core, or the scheduler's placement. (A vCPU the hypervisor took away shows
 * as steal, not here.) */
static void sample_runq(host_sampler *h, int64_t now_ns, double *cols) {
    char path[300], buf[256];
    snprintf(path, sizeof path, "%s/%d/schedstat", h->procroot, h->pid);
    double run_ns, wait_ns;
    if (read_small(path, buf, sizeof buf) || sscanf(buf, "%lf %lf", &run_ns, &wait_ns) != 2) { h->have_prev_runq = false; return; }
    if (h->have_prev_runq && now_ns > h->prev_runq_at_ns && wait_ns >= h->prev_runq_ns)
        cols[HOST_SERVER_RUNQ_PCT] = 100.0 * (wait_ns - h->prev_runq_ns) / (double)(now_ns - h->prev_runq_at_ns);
    h->prev_runq_ns = wait_ns;
    h->prev_runq_at_ns = now_ns;
    h->have_prev_runq = true;
}

void host_sample(host_sampler *h, int64_t now_ns, double *cols) {
    for (int i = 0; i < HOST_COL_COUNT; i++) cols[i] = NAN;
    sample_cpu(h, cols);
    sample_mem(h, cols);
    if (h->pid > 0) sample_proc(h, now_ns, cols);
    if (h->pid > 0) sample_runq(h, now_ns, cols);
    h->prev_ns = now_ns;
}

int host_parse_cpulist(const char *s, bool *set) {
    memset(set, 0, HOST_MAX_CPUS * sizeof *set);
    int count = 0;
    const char *p = s;
    while (*p && isspace((unsigned char)*p)) p++;
    while (*p && *p != '\n') {
        char *e;
        long a = strtol(p, &e, 10), b;
        if (e == p || a < 0) return -1;
        p = e;
        b = a;
        if (*p == '-') {
            b = strtol(p + 1, &e, 10);
            if (e == p + 1 || b < a) return -1;
            p = e;
        }
        for (long c = a; c <= b && c < HOST_MAX_CPUS; c++)
            if (!set[c]) { set[c] = true; count++; }
        if (*p == ',') p++;
        else if (*p && !isspace((unsigned char)*p)) return -1;
        while (*p == ' ' || *p == '\t') p++;
    }
    return count;
}

int host_pci_numa_node(const char *sysroot, const char *bus_id) {
    if (!bus_id || !*bus_id) return -1;
    char path[512], buf[32];
    snprintf(path, sizeof path, "%s/sys/bus/pci/devices/%s/numa_node", sysroot, bus_id);
    if (read_small(path, buf, sizeof buf)) return -1;
    return atoi(buf);
}

int host_numa_maps_kb(const char *path, double *kb) {
    for (int i = 0; i < HOST_MAX_NODES; i++) kb[i] = 0;
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    char *line = NULL;
    size_t cap = 0;
    while (getline(&line, &cap, f) > 0) {
        double page_kb = 4;
        const char *k = strstr(line, "kernelpagesize_kB=");
        if (k) page_kb = atof(k + 18);
        for (char *p = line; (p = strstr(p, " N")); p++) {
            char *e;
            long node = strtol(p + 2, &e, 10);
            if (e == p + 2 || *e != '=' || node < 0 || node >= HOST_MAX_NODES) continue;
            kb[node] += atof(e + 1) * page_kb;
        }
    }
    free(line);
    fclose(f);
    return 0;
}

/* Node whose cpulist includes cpu; reads sysroot/sys/devices/system/node/node<N>/cpulist. */
static int node_cpus(const char *sysroot, int node, bool *set, char *list, size_t len) {
    char path[512];
    snprintf(path, sizeof path, "%s/sys/devices/system/node/node%d/cpulist", sysroot, node);
    if (read_small(path, list, len)) return -1;
    list[strcspn(list, "\n")] = 0;
    return host_parse_cpulist(list, set) < 0 ? -1 : 0;
}

json_t *host_numa_json(const char *sysroot, const char *procroot, int pid, const char *const *bus_ids, int n_gpus) {
    json_t *o = json_object(), *nodes = json_array(), *gpus = json_array();
    bool (*cpus)[HOST_MAX_CPUS] = calloc(HOST_MAX_NODES, sizeof *cpus);
    if (!o || !nodes || !gpus || !cpus) { json_decref(o); json_decref(nodes); json_decref(gpus); free(cpus); return NULL; }
    bool have_node[HOST_MAX_NODES] = {0}, gpu_node[HOST_MAX_NODES] = {0};
    int n_nodes = 0, n_gpu_nodes = 0;
    for (int nd = 0; nd < HOST_MAX_NODES; nd++) {
        char list[1024];
        if (node_cpus(sysroot, nd, cpus[nd], list, sizeof list)) continue;
        have_node[nd] = true;
        n_nodes++;
        json_array_append_new(nodes, json_pack("{s:i,s:s}", "node", nd, "cpus", list));
    }
    json_object_set_new(o, "nodes", nodes);
    for (int i = 0; i < n_gpus; i++) {
        int nd = host_pci_numa_node(sysroot, bus_ids[i]);
        json_array_append_new(gpus, json_pack("{s:i,s:s,s:o}", "index", i, "bus_id", bus_ids[i] ? bus_ids[i] : "",
                                              "numa_node", nd >= 0 ? json_integer(nd) : json_null()));
        if (nd >= 0 && nd < HOST_MAX_NODES && !gpu_node[nd]) { gpu_node[nd] = true; n_gpu_nodes++; }
    }
    json_object_set_new(o, "gpus", gpus);
    if (pid <= 0) {
        json_object_set_new(o, "cross_numa", json_null());
        json_object_set_new(o, "why", json_string("no server pid given (--server-pid)"));
        free(cpus);
        return o;
    }
    json_t *srv = json_object(), *cpu_nodes = json_array(), *mem = json_object();
    json_object_set_new(srv, "pid", json_integer(pid));
    char path[512], buf[8192];
    bool allowed[HOST_MAX_CPUS];
    bool have_allowed = false;
    snprintf(path, sizeof path, "%s/%d/status", procroot, pid);
    if (!read_small(path, buf, sizeof buf)) {
        const char *c = strstr(buf, "Cpus_allowed_list:");
        if (c) {
            c += 18;
            while (*c == ' ' || *c == '\t') c++;
            char list[1024];
            snprintf(list, sizeof list, "%.*s", (int)strcspn(c, "\n"), c);
            json_object_set_new(srv, "cpus_allowed", json_string(list));
            have_allowed = host_parse_cpulist(list, allowed) > 0;
        }
    }
    /* its command line: what the server was told (llama-server -t, -ub, -ctk ...), which its HTTP
     * API does not say; deploy reads it back. NUL-separated, as the kernel keeps it. */
    snprintf(path, sizeof path, "%s/%d/cmdline", procroot, pid);
    FILE *cf = fopen(path, "r");
    if (cf) {
        size_t n = fread(buf, 1, sizeof buf - 1, cf);
        fclose(cf);
        buf[n] = 0;
        json_t *argv = json_array();
        for (size_t at = 0; at < n; at += strlen(buf + at) + 1) json_array_append_new(argv, json_string(buf + at));
        if (json_array_size(argv)) json_object_set_new(srv, "cmdline", argv);
        else json_decref(argv);
    }
    bool cpu_off = false, cpu_node[HOST_MAX_NODES] = {0};
    for (int nd = 0; have_allowed && nd < HOST_MAX_NODES; nd++) {
        if (!have_node[nd]) continue;
        for (int c = 0; c < HOST_MAX_CPUS; c++)
            if (allowed[c] && cpus[nd][c]) { cpu_node[nd] = true; break; }
        if (cpu_node[nd]) {
            json_array_append_new(cpu_nodes, json_integer(nd));
            if (n_gpu_nodes && !gpu_node[nd]) cpu_off = true;
        }
    }
    json_object_set_new(srv, "cpu_nodes", cpu_nodes);
    double kb[HOST_MAX_NODES], total = 0, off = 0;
    snprintf(path, sizeof path, "%s/%d/numa_maps", procroot, pid);
    bool have_maps = host_numa_maps_kb(path, kb) == 0;
    for (int nd = 0; have_maps && nd < HOST_MAX_NODES; nd++) {
        if (kb[nd] <= 0) continue;
        char key[16];
        snprintf(key, sizeof key, "%d", nd);
        json_object_set_new(mem, key, json_real(kb[nd]));
        total += kb[nd];
        if (n_gpu_nodes && !gpu_node[nd]) off += kb[nd];
    }
    json_object_set_new(srv, "mem_kb_by_node", mem);
    json_object_set_new(o, "server", srv);
    double off_frac = total > 0 ? off / total : 0;
    json_object_set_new(srv, "mem_off_gpu_node_pct", total > 0 && n_gpu_nodes ? json_real(100 * off_frac) : json_null());
    char why[256];
    if (!n_gpu_nodes || n_nodes < 2) {
        json_object_set_new(o, "cross_numa", n_nodes == 1 && n_gpu_nodes ? json_false() : json_null());
        snprintf(why, sizeof why, "%s", n_nodes < 2 ? "single NUMA node (or no NUMA information)" : "NUMA node of the GPUs unknown");
    } else if (cpu_off || off_frac > 0.10) {
        json_object_set_new(o, "cross_numa", json_true());
        snprintf(why, sizeof why, "%s%s%s", cpu_off ? "server may run on CPUs of a node without its GPUs" : "",
                 cpu_off && off_frac > 0.10 ? "; " : "",
                 off_frac > 0.10 ? "over 10% of server memory sits on a node without its GPUs" : "");
    } else {
        json_object_set_new(o, "cross_numa", json_false());
        snprintf(why, sizeof why, "server CPUs and memory are on the GPUs' node(s)");
    }
    json_object_set_new(o, "why", json_string(why));
    free(cpus);
    return o;
}
