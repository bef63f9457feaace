/* nvml — run-time NVML binding and per-GPU sampling (see nvml.h). The declarations below follow
 * NVIDIA's public nvml.h (NVML API reference; the same layouts are used by go-nvml and
 * nvidia-ml-py): versioned entry points (nvmlInit_v2, nvmlDeviceGetHandleByIndex_v2, ...) with
 * a fallback to the unversioned names of old drivers, field IDs, and the GPM structures. */
#include "telemetry/nvml.h"
#include "common/clock.h"
#include <dlfcn.h>
#include <time.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the subset of nvml.h we use ---- */
typedef int nvmlReturn_t;
typedef struct nvmlDevice_st *nvmlDevice_t;
typedef struct nvmlGpmSample_st *nvmlGpmSample_t;
enum { NVML_SUCCESS = 0, NVML_ERROR_NOT_SUPPORTED = 3, NVML_ERROR_INSUFFICIENT_SIZE = 7, NVML_ERROR_GPU_IS_LOST = 15 };
enum { NVML_CLOCK_SM = 1, NVML_CLOCK_MEM = 2 };
enum { NVML_TEMPERATURE_GPU = 0 };
enum { NVML_PCIE_UTIL_TX_BYTES = 0, NVML_PCIE_UTIL_RX_BYTES = 1 };
enum { NVML_VALUE_TYPE_DOUBLE = 0, NVML_VALUE_TYPE_UNSIGNED_INT, NVML_VALUE_TYPE_UNSIGNED_LONG,
       NVML_VALUE_TYPE_UNSIGNED_LONG_LONG, NVML_VALUE_TYPE_SIGNED_LONG_LONG, NVML_VALUE_TYPE_SIGNED_INT,
       NVML_VALUE_TYPE_UNSIGNED_SHORT };
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX 138   /* cumulative KiB, scopeId UINT_MAX = all links */
#define NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX 139
#define NVML_FI_DEV_POWER_AVERAGE 185               /* mW, averaged over 1 s */
#define NVML_FI_DEV_POWER_INSTANT 186               /* mW */
#define NVML_VALUE_NOT_AVAILABLE_ULL (~0ULL)

typedef struct { unsigned int gpu, memory; } nvmlUtilization_t;
typedef struct { unsigned long long total, free, used; } nvmlMemory_t;
typedef struct { unsigned int version; unsigned long long total, reserved, free, used; } nvmlMemory_v2_t;
#define NVML_MEMORY_V2_VERSION ((unsigned)(sizeof(nvmlMemory_v2_t) | (2u << 24)))   /* NVML_STRUCT_VERSION(Memory, 2) */
typedef struct {                       /* nvmlPciInfo_t as filled by nvmlDeviceGetPciInfo_v3 */
    char busIdLegacy[16];
    unsigned int domain, bus, device, pciDeviceId, pciSubSystemId;
    char busId[32];
} nvmlPciInfo_t;
typedef union {
    double dVal; int siVal; unsigned int uiVal; unsigned long ulVal;
    unsigned long long ullVal; signed long long sllVal; unsigned short usVal;
} nvmlValue_t;
typedef struct {
    unsigned int fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;                     /* nvmlValueType_t */
    nvmlReturn_t nvmlReturn;
    nvmlValue_t value;
} nvmlFieldValue_t;
typedef struct {                       /* nvmlProcessInfo_t of the _v3 process queries */
    unsigned int pid;
    unsigned long long usedGpuMemory;
    unsigned int gpuInstanceId, computeInstanceId;
} nvmlProcessInfo_t;
typedef struct { unsigned int version, isSupportedDevice; } nvmlGpmSupport_t;
#define NVML_GPM_SUPPORT_VERSION 1
#define NVML_GPM_METRICS_GET_VERSION 1
/* NVML_GPM_METRIC_MAX is 98, 210 or 333 depending on the header version; the library only
 * touches numMetrics entries, and we size for the largest so any library is safe. */
#define GPM_METRIC_MAX 333
typedef struct {
    unsigned int metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct { char *shortName, *longName, *unit; } metricInfo;
} nvmlGpmMetric_t;
typedef struct {
    unsigned int version, numMetrics;
    nvmlGpmSample_t sample1, sample2;
    nvmlGpmMetric_t metrics[GPM_METRIC_MAX];
} nvmlGpmMetricsGet_t;
enum { GPM_SM_UTIL = 2, GPM_SM_OCCUPANCY = 3, GPM_ANY_TENSOR_UTIL = 5, GPM_HMMA_TENSOR_UTIL = 7,
       GPM_DRAM_BW_UTIL = 10, GPM_FP32_UTIL = 12, GPM_FP16_UTIL = 13, GPM_PCIE_TX_PER_SEC = 20,
       GPM_PCIE_RX_PER_SEC = 21, GPM_NVLINK_TOTAL_RX_PER_SEC = 60, GPM_NVLINK_TOTAL_TX_PER_SEC = 61 };

/* GPM metrics we request, and where each goes. PCIe/NVLink rates come in MiB/s. */
static const struct { unsigned id; gpu_col col; double scale; } gpm_metrics[] = {
    {GPM_SM_UTIL, GPU_SM_UTIL_PCT, 1}, {GPM_SM_OCCUPANCY, GPU_SM_OCCUPANCY_PCT, 1},
    {GPM_ANY_TENSOR_UTIL, GPU_TENSOR_UTIL_PCT, 1}, {GPM_HMMA_TENSOR_UTIL, GPU_HMMA_UTIL_PCT, 1},
    {GPM_DRAM_BW_UTIL, GPU_DRAM_BW_UTIL_PCT, 1}, {GPM_FP16_UTIL, GPU_FP16_UTIL_PCT, 1},
    {GPM_FP32_UTIL, GPU_FP32_UTIL_PCT, 1},
    {GPM_PCIE_TX_PER_SEC, GPU_GPM_PCIE_TX_MB_S, 1.048576}, {GPM_PCIE_RX_PER_SEC, GPU_GPM_PCIE_RX_MB_S, 1.048576},
    {GPM_NVLINK_TOTAL_TX_PER_SEC, GPU_GPM_NVLINK_TX_MB_S, 1.048576},
    {GPM_NVLINK_TOTAL_RX_PER_SEC, GPU_GPM_NVLINK_RX_MB_S, 1.048576},
};
#define N_GPM (sizeof gpm_metrics / sizeof gpm_metrics[0])

const char *const gpu_col_names[GPU_COL_COUNT] = {
    "util_gpu_pct", "util_mem_pct", "mem_used_mib", "mem_total_mib", "sm_clock_mhz", "mem_clock_mhz",
    "power_w", "power_avg_w", "energy_j", "temp_c", "pcie_tx_mb_s", "pcie_rx_mb_s", "nvlink_tx_mb_s",
    "nvlink_rx_mb_s", "clock_event_reasons", "throttled", "n_processes", "pcie_link_gen", "pcie_link_width", "sm_util_pct", "sm_occupancy_pct",
    "tensor_util_pct", "hmma_util_pct", "dram_bw_util_pct", "fp16_util_pct", "fp32_util_pct",
    "gpm_pcie_tx_mb_s", "gpm_pcie_rx_mb_s", "gpm_nvlink_tx_mb_s", "gpm_nvlink_rx_mb_s"};

struct nvml {
    void *lib;
    nvmlReturn_t (*Init)(void);
    nvmlReturn_t (*Shutdown)(void);
    const char *(*ErrorString)(nvmlReturn_t);
    nvmlReturn_t (*SystemGetDriverVersion)(char *, unsigned);
    nvmlReturn_t (*SystemGetCudaDriverVersion)(int *);
    nvmlReturn_t (*DeviceGetCount)(unsigned *);
    nvmlReturn_t (*DeviceGetHandleByIndex)(unsigned, nvmlDevice_t *);
    nvmlReturn_t (*DeviceGetName)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*DeviceGetUUID)(nvmlDevice_t, char *, unsigned);
    nvmlReturn_t (*DeviceGetPciInfo)(nvmlDevice_t, nvmlPciInfo_t *);
    nvmlReturn_t (*DeviceGetCudaComputeCapability)(nvmlDevice_t, int *, int *);
    nvmlReturn_t (*DeviceGetMemoryInfo)(nvmlDevice_t, nvmlMemory_t *);
    nvmlReturn_t (*DeviceGetMemoryInfo_v2)(nvmlDevice_t, nvmlMemory_v2_t *);
    nvmlReturn_t (*DeviceGetUtilizationRates)(nvmlDevice_t, nvmlUtilization_t *);
    nvmlReturn_t (*DeviceGetClockInfo)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*DeviceGetMaxClockInfo)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*DeviceGetTemperature)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*DeviceGetTotalEnergyConsumption)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*DeviceGetFieldValues)(nvmlDevice_t, int, nvmlFieldValue_t *);
    nvmlReturn_t (*DeviceGetPowerUsage)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*DeviceGetPcieThroughput)(nvmlDevice_t, int, unsigned *);
    nvmlReturn_t (*DeviceGetCurrPcieLinkGeneration)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*DeviceGetCurrPcieLinkWidth)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*DeviceGetMaxPcieLinkGeneration)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*DeviceGetMaxPcieLinkWidth)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*DeviceGetClocksEventReasons)(nvmlDevice_t, unsigned long long *);
    nvmlReturn_t (*DeviceGetComputeRunningProcesses)(nvmlDevice_t, unsigned *, nvmlProcessInfo_t *);
    nvmlReturn_t (*DeviceGetMigMode)(nvmlDevice_t, unsigned *, unsigned *);
    nvmlReturn_t (*DeviceGetPersistenceMode)(nvmlDevice_t, int *);
    nvmlReturn_t (*DeviceGetPowerManagementLimit)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*DeviceGetPowerManagementDefaultLimit)(nvmlDevice_t, unsigned *);
    nvmlReturn_t (*GpmQueryDeviceSupport)(nvmlDevice_t, nvmlGpmSupport_t *);
    nvmlReturn_t (*GpmSampleAlloc)(nvmlGpmSample_t *);
    nvmlReturn_t (*GpmSampleFree)(nvmlGpmSample_t);
    nvmlReturn_t (*GpmSampleGet)(nvmlDevice_t, nvmlGpmSample_t);
    nvmlReturn_t (*GpmMetricsGet)(nvmlGpmMetricsGet_t *);
};

/* Call groups timed under DSPERF_NVML_PROFILE (to find what the sampler's CPU goes to). */
enum { PROF_UTIL, PROF_MEM, PROF_CLOCKS, PROF_TEMP, PROF_ENERGY, PROF_FIELDS, PROF_REASONS, PROF_GPM_GET,
       PROF_GPM_METRICS, PROF_PROCS, PROF_PCIE, PROF_COUNT };
static const char *const prof_names[PROF_COUNT] = {"utilization", "memory", "clocks", "temperature", "energy",
    "field_values", "clock_reasons", "gpm_sample_get", "gpm_metrics_get", "processes", "pcie"};

static int64_t thread_cpu_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return clock_ts_ns(ts);
}

/* Runs stmt, timing it into group k when profiling. */
#define PROF(g, k, stmt) do { \
        if (!(g)->profile) { stmt; break; } \
        int64_t c0_ = thread_cpu_ns(), w0_ = clock_now_ns(); \
        stmt; \
        (g)->prof_cpu_ns[k] += thread_cpu_ns() - c0_; (g)->prof_wall_ns[k] += clock_now_ns() - w0_; (g)->prof_calls[k]++; \
    } while (0)

#define ENERGY_PERIOD_NS (5 * NS_PER_S)
#define PROCS_PERIOD_NS NS_PER_S

struct nvml_gpu {
    nvml *n;
    nvmlDevice_t dev;
    int index;
    bool gpm;
    nvmlGpmSample_t gpm_prev, gpm_cur;
    int64_t gpm_prev_ns;                  /* 0: no previous GPM sample */
    nvmlGpmMetricsGet_t *mg;
    double energy0_mj;                    /* first energy reading (NaN until read) */
    double nvl_prev_tx_kib, nvl_prev_rx_kib;
    int64_t nvl_prev_ns;
    bool gpm_units_logged;
    int64_t procs_ns, energy_ns;          /* last process-list / energy read; 0 never */
    bool profile;                         /* DSPERF_NVML_PROFILE: per-call CPU and wall time */
    int64_t prof_cpu_ns[PROF_COUNT], prof_wall_ns[PROF_COUNT];
    long prof_calls[PROF_COUNT];
    nvml_process procs[64];
    int n_procs, n_listed;           /* processes on the GPU; how many of them are in procs */
    bool lost;                       /* NVML said the GPU is lost (fell off the bus): no more calls */
};

/* Resolves the first of the given names that the library exports. */
static void *sym(void *lib, const char *a, const char *b) {
    void *p = dlsym(lib, a);
    if (!p && b) p = dlsym(lib, b);
    return p;
}
#define BIND(field, a, b) (*(void **)&n->field = sym(n->lib, a, b))

nvml *nvml_open(char *err, size_t errlen) {
    void *lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        snprintf(err, errlen, "libnvidia-ml.so.1 not found (no NVIDIA driver on this machine)");
        return NULL;
    }
    nvml *n = calloc(1, sizeof *n);
    if (!n) { dlclose(lib); snprintf(err, errlen, "out of memory"); return NULL; }
    n->lib = lib;
    BIND(Init, "nvmlInit_v2", "nvmlInit");
    BIND(Shutdown, "nvmlShutdown", NULL);
    BIND(ErrorString, "nvmlErrorString", NULL);
    BIND(SystemGetDriverVersion, "nvmlSystemGetDriverVersion", NULL);
    BIND(SystemGetCudaDriverVersion, "nvmlSystemGetCudaDriverVersion_v2", "nvmlSystemGetCudaDriverVersion");
    BIND(DeviceGetCount, "nvmlDeviceGetCount_v2", "nvmlDeviceGetCount");
    BIND(DeviceGetHandleByIndex, "nvmlDeviceGetHandleByIndex_v2", "nvmlDeviceGetHandleByIndex");
    BIND(DeviceGetName, "nvmlDeviceGetName", NULL);
    BIND(DeviceGetUUID, "nvmlDeviceGetUUID", NULL);
    BIND(DeviceGetPciInfo, "nvmlDeviceGetPciInfo_v3", NULL);
    BIND(DeviceGetCudaComputeCapability, "nvmlDeviceGetCudaComputeCapability", NULL);
    BIND(DeviceGetMemoryInfo, "nvmlDeviceGetMemoryInfo", NULL);
    BIND(DeviceGetMemoryInfo_v2, "nvmlDeviceGetMemoryInfo_v2", NULL);
    BIND(DeviceGetUtilizationRates, "nvmlDeviceGetUtilizationRates", NULL);
    BIND(DeviceGetClockInfo, "nvmlDeviceGetClockInfo", NULL);
    BIND(DeviceGetMaxClockInfo, "nvmlDeviceGetMaxClockInfo", NULL);
    BIND(DeviceGetTemperature, "nvmlDeviceGetTemperature", NULL);
    BIND(DeviceGetTotalEnergyConsumption, "nvmlDeviceGetTotalEnergyConsumption", NULL);
    BIND(DeviceGetFieldValues, "nvmlDeviceGetFieldValues", NULL);
    BIND(DeviceGetPowerUsage, "nvmlDeviceGetPowerUsage", NULL);
    BIND(DeviceGetPcieThroughput, "nvmlDeviceGetPcieThroughput", NULL);
    BIND(DeviceGetCurrPcieLinkGeneration, "nvmlDeviceGetCurrPcieLinkGeneration", NULL);
    BIND(DeviceGetCurrPcieLinkWidth, "nvmlDeviceGetCurrPcieLinkWidth", NULL);
    BIND(DeviceGetMaxPcieLinkGeneration, "nvmlDeviceGetMaxPcieLinkGeneration", NULL);
    BIND(DeviceGetMaxPcieLinkWidth, "nvmlDeviceGetMaxPcieLinkWidth", NULL);
    BIND(DeviceGetClocksEventReasons, "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetCurrentClocksThrottleReasons");
    BIND(DeviceGetComputeRunningProcesses, "nvmlDeviceGetComputeRunningProcesses_v3", NULL);
    BIND(DeviceGetMigMode, "nvmlDeviceGetMigMode", NULL);
    BIND(DeviceGetPersistenceMode, "nvmlDeviceGetPersistenceMode", NULL);
    BIND(DeviceGetPowerManagementLimit, "nvmlDeviceGetPowerManagementLimit", NULL);
    BIND(DeviceGetPowerManagementDefaultLimit, "nvmlDeviceGetPowerManagementDefaultLimit", NULL);
    BIND(GpmQueryDeviceSupport, "nvmlGpmQueryDeviceSupport", NULL);
    BIND(GpmSampleAlloc, "nvmlGpmSampleAlloc", NULL);
    BIND(GpmSampleFree, "nvmlGpmSampleFree", NULL);
    BIND(GpmSampleGet, "nvmlGpmSampleGet", NULL);
    BIND(GpmMetricsGet, "nvmlGpmMetricsGet", NULL);
    if (!n->Init || !n->Shutdown || !n->DeviceGetCount || !n->DeviceGetHandleByIndex) {
        snprintf(err, errlen, "libnvidia-ml.so.1 lacks nvmlInit/nvmlDeviceGetCount");
        dlclose(lib);
        free(n);
        return NULL;
    }
    nvmlReturn_t rc = n->Init();
    if (rc != NVML_SUCCESS) {
        snprintf(err, errlen, "NVML init failed (%s)", n->ErrorString ? n->ErrorString(rc) : "error");
        dlclose(lib);
        free(n);
        return NULL;
    }
    return n;
}

void nvml_close(nvml *n) {
    if (!n) return;
    n->Shutdown();
    dlclose(n->lib);
    free(n);
}

int nvml_device_count(nvml *n) {
    unsigned c = 0;
    return n->DeviceGetCount(&c) == NVML_SUCCESS ? (int)c : 0;
}

int nvml_driver_version(nvml *n, char *buf, size_t len) {
    if (!n->SystemGetDriverVersion || n->SystemGetDriverVersion(buf, (unsigned)len) != NVML_SUCCESS) return -1;
    return 0;
}

int nvml_cuda_driver_version(nvml *n, int *version) {
    if (!n->SystemGetCudaDriverVersion || n->SystemGetCudaDriverVersion(version) != NVML_SUCCESS) return -1;
    return 0;
}

static nvmlDevice_t handle(nvml *n, int index) {
    nvmlDevice_t d = NULL;
    return n->DeviceGetHandleByIndex((unsigned)index, &d) == NVML_SUCCESS ? d : NULL;
}

/* Calls an optional NVML getter; true when it exists and succeeded. */
#define OK(fn, ...) (n->fn && n->fn(__VA_ARGS__) == NVML_SUCCESS)

int nvml_gpu_info_get(nvml *n, int index, nvml_gpu_info *info) {
    memset(info, 0, sizeof *info);
    info->index = index;
    info->cc_major = info->cc_minor = info->mig_mode = info->persistence_mode = -1;
    info->pcie_gen_max = info->pcie_width_max = info->pcie_gen_curr = info->pcie_width_curr = -1;
    info->sm_clock_max_mhz = info->mem_clock_max_mhz = info->power_limit_w = info->power_default_limit_w = NAN;
    info->mem_total_mib = NAN;
    nvmlDevice_t d = handle(n, index);
    if (!d) return -1;
    if (!OK(DeviceGetName, d, info->name, sizeof info->name)) snprintf(info->name, sizeof info->name, "GPU %d", index);
    if (!OK(DeviceGetUUID, d, info->uuid, sizeof info->uuid)) info->uuid[0] = 0;
    nvmlPciInfo_t pci;
    if (OK(DeviceGetPciInfo, d, &pci))
        snprintf(info->bus_id, sizeof info->bus_id, "%04x:%02x:%02x.0", pci.domain & 0xffff, pci.bus, pci.device);
    if (!OK(DeviceGetCudaComputeCapability, d, &info->cc_major, &info->cc_minor)) info->cc_major = info->cc_minor = -1;
    nvmlMemory_t m;
    if (OK(DeviceGetMemoryInfo, d, &m)) info->mem_total_mib = (double)m.total / 1048576.0;
    unsigned cur, pend, v;
    if (OK(DeviceGetMigMode, d, &cur, &pend)) info->mig_mode = (int)cur;
    int pm;
    if (OK(DeviceGetPersistenceMode, d, &pm)) info->persistence_mode = pm;
    if (OK(DeviceGetMaxClockInfo, d, NVML_CLOCK_SM, &v)) info->sm_clock_max_mhz = v;
    if (OK(DeviceGetMaxClockInfo, d, NVML_CLOCK_MEM, &v)) info->mem_clock_max_mhz = v;
    if (OK(DeviceGetPowerManagementLimit, d, &v)) info->power_limit_w = v / 1000.0;
    if (OK(DeviceGetPowerManagementDefaultLimit, d, &v)) info->power_default_limit_w = v / 1000.0;
    if (OK(DeviceGetMaxPcieLinkGeneration, d, &v)) info->pcie_gen_max = (int)v;
    if (OK(DeviceGetMaxPcieLinkWidth, d, &v)) info->pcie_width_max = (int)v;
    if (OK(DeviceGetCurrPcieLinkGeneration, d, &v)) info->pcie_gen_curr = (int)v;
    if (OK(DeviceGetCurrPcieLinkWidth, d, &v)) info->pcie_width_curr = (int)v;
    nvmlGpmSupport_t gs = {.version = NVML_GPM_SUPPORT_VERSION};
    info->gpm_supported = n->GpmSampleAlloc && n->GpmMetricsGet && OK(GpmQueryDeviceSupport, d, &gs) && gs.isSupportedDevice;
    return 0;
}

nvml_gpu *nvml_gpu_open(nvml *n, int index) {
    nvmlDevice_t d = handle(n, index);
    if (!d) return NULL;
    nvml_gpu *g = calloc(1, sizeof *g);
    if (!g) return NULL;
    g->n = n;
    g->dev = d;
    g->index = index;
    g->energy0_mj = NAN;
    g->profile = getenv("DSPERF_NVML_PROFILE") != NULL;
    nvmlGpmSupport_t gs = {.version = NVML_GPM_SUPPORT_VERSION};
    if (n->GpmSampleAlloc && n->GpmSampleGet && n->GpmMetricsGet && n->GpmSampleFree &&
        OK(GpmQueryDeviceSupport, d, &gs) && gs.isSupportedDevice &&
        (g->mg = calloc(1, sizeof *g->mg)) && n->GpmSampleAlloc(&g->gpm_prev) == NVML_SUCCESS &&
        n->GpmSampleAlloc(&g->gpm_cur) == NVML_SUCCESS)
        g->gpm = true;
    return g;
}

void nvml_gpu_close(nvml_gpu *g) {
    if (!g) return;
    for (int k = 0; g->profile && k < PROF_COUNT; k++)
        if (g->prof_calls[k])
            fprintf(stderr, "nvml profile gpu%d %-16s %6ld calls  cpu %8.1f us/call  wall %8.1f us/call\n", g->index,
                    prof_names[k], g->prof_calls[k], (double)g->prof_cpu_ns[k] / 1e3 / (double)g->prof_calls[k],
                    (double)g->prof_wall_ns[k] / 1e3 / (double)g->prof_calls[k]);
    if (g->gpm_prev) g->n->GpmSampleFree(g->gpm_prev);
    if (g->gpm_cur) g->n->GpmSampleFree(g->gpm_cur);
    free(g->mg);
    free(g);
}

static double field_double(const nvmlFieldValue_t *f) {
    if (f->nvmlReturn != NVML_SUCCESS) return NAN;
    switch (f->valueType) {
    case NVML_VALUE_TYPE_DOUBLE: return f->value.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return f->value.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return (double)f->value.ulVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return (double)f->value.ullVal;
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return (double)f->value.sllVal;
    case NVML_VALUE_TYPE_SIGNED_INT: return f->value.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return f->value.usVal;
    default: return NAN;
    }
}

static void sample_fields(nvml_gpu *g, int64_t now_ns, double *cols) {
    nvml *n = g->n;
    if (!n->DeviceGetFieldValues) return;
    nvmlFieldValue_t f[4];
    memset(f, 0, sizeof f);
    f[0].fieldId = NVML_FI_DEV_POWER_INSTANT;
    f[1].fieldId = NVML_FI_DEV_POWER_AVERAGE;
    f[2].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_TX;
    f[2].scopeId = 0xFFFFFFFFu;
    f[3].fieldId = NVML_FI_DEV_NVLINK_THROUGHPUT_DATA_RX;
    f[3].scopeId = 0xFFFFFFFFu;
    if (n->DeviceGetFieldValues(g->dev, 4, f) != NVML_SUCCESS) return;
    cols[GPU_POWER_W] = field_double(&f[0]) / 1000.0;
    cols[GPU_POWER_AVG_W] = field_double(&f[1]) / 1000.0;
    double tx = field_double(&f[2]), rx = field_double(&f[3]);
    if (!isnan(tx) && !isnan(rx)) {
        if (g->nvl_prev_ns && now_ns > g->nvl_prev_ns && tx >= g->nvl_prev_tx_kib && rx >= g->nvl_prev_rx_kib) {
            double dt = (double)(now_ns - g->nvl_prev_ns) / 1e9;
            cols[GPU_NVLINK_TX_MB_S] = (tx - g->nvl_prev_tx_kib) * 1024.0 / 1e6 / dt;
            cols[GPU_NVLINK_RX_MB_S] = (rx - g->nvl_prev_rx_kib) * 1024.0 / 1e6 / dt;
        }
        g->nvl_prev_tx_kib = tx;
        g->nvl_prev_rx_kib = rx;
        g->nvl_prev_ns = now_ns;
    }
}

/* GPM needs two samples: metrics describe what happened between them. */
static void sample_gpm(nvml_gpu *g, int64_t now_ns, double *cols) {
    nvml *n = g->n;
    bool ok;
    PROF(g, PROF_GPM_GET, ok = n->GpmSampleGet(g->dev, g->gpm_cur) == NVML_SUCCESS);
    if (!ok) return;
    if (g->gpm_prev_ns && now_ns - g->gpm_prev_ns < 95 * NS_PER_MS) return;   /* keep the older one */
    if (g->gpm_prev_ns) {
        nvmlGpmMetricsGet_t *mg = g->mg;
        memset(mg, 0, offsetof(nvmlGpmMetricsGet_t, metrics) + N_GPM * sizeof mg->metrics[0]);
        mg->version = NVML_GPM_METRICS_GET_VERSION;
        mg->numMetrics = N_GPM;
        mg->sample1 = g->gpm_prev;
        mg->sample2 = g->gpm_cur;
        for (size_t i = 0; i < N_GPM; i++) mg->metrics[i].metricId = gpm_metrics[i].id;
        PROF(g, PROF_GPM_METRICS, ok = n->GpmMetricsGet(mg) == NVML_SUCCESS);
        if (ok) {
            for (size_t i = 0; i < N_GPM; i++)
                if (mg->metrics[i].nvmlReturn == NVML_SUCCESS)
                    cols[gpm_metrics[i].col] = mg->metrics[i].value * gpm_metrics[i].scale;
            if (getenv("DSPERF_NVML_DEBUG") && !g->gpm_units_logged) {   /* names and units, once */
                for (size_t i = 0; i < N_GPM; i++)
                    fprintf(stderr, "gpm metric %u %s [%s] rc=%d\n", mg->metrics[i].metricId,
                            mg->metrics[i].metricInfo.shortName ? mg->metrics[i].metricInfo.shortName : "?",
                            mg->metrics[i].metricInfo.unit ? mg->metrics[i].metricInfo.unit : "?", mg->metrics[i].nvmlReturn);
                g->gpm_units_logged = true;
            }
        }
    }
    nvmlGpmSample_t t = g->gpm_prev;
    g->gpm_prev = g->gpm_cur;
    g->gpm_cur = t;
    g->gpm_prev_ns = now_ns;
}

static void refresh_processes(nvml_gpu *g) {
    nvml *n = g->n;
    if (!n->DeviceGetComputeRunningProcesses) return;
    nvmlProcessInfo_t p[64];
    unsigned cnt = 64;
    nvmlReturn_t rc = n->DeviceGetComputeRunningProcesses(g->dev, &cnt, p);
    if (rc != NVML_SUCCESS && rc != NVML_ERROR_INSUFFICIENT_SIZE) { g->n_procs = -1; return; }
    g->n_procs = (int)cnt;        /* on INSUFFICIENT_SIZE, cnt is how many exist and p is not filled */
    g->n_listed = rc == NVML_SUCCESS ? (int)(cnt > 64 ? 64 : cnt) : 0;
    for (int i = 0; i < g->n_listed; i++) {
        g->procs[i].pid = p[i].pid;
        g->procs[i].used_mib = p[i].usedGpuMemory == NVML_VALUE_NOT_AVAILABLE_ULL ? NAN : (double)p[i].usedGpuMemory / 1048576.0;
    }
}

void nvml_gpu_sample(nvml_gpu *g, int64_t now_ns, double *cols) {
    nvml *n = g->n;
    nvmlDevice_t d = g->dev;
    bool ok;
    for (int i = 0; i < GPU_COL_COUNT; i++) cols[i] = NAN;
    if (g->lost) return;
    nvmlUtilization_t u;
    nvmlReturn_t urc = NVML_ERROR_NOT_SUPPORTED;
    PROF(g, PROF_UTIL, if (n->DeviceGetUtilizationRates) urc = n->DeviceGetUtilizationRates(d, &u));
    /* A GPU that fell off the bus answers every call with GPU_IS_LOST: stop asking (each call can
     * take the driver's timeout) and let the caller say so once. */
    if (urc == NVML_ERROR_GPU_IS_LOST) { g->lost = true; return; }
    if (urc == NVML_SUCCESS) { cols[GPU_UTIL_GPU_PCT] = u.gpu; cols[GPU_UTIL_MEM_PCT] = u.memory; }
    /* v2 reports driver-reserved memory apart: its "used" is what processes allocated, as
     * nvidia-smi shows it (v1's "used" also counts the reserved part; seen on H200, driver 580). */
    nvmlMemory_v2_t m2 = {.version = NVML_MEMORY_V2_VERSION};
    nvmlMemory_t m;
    PROF(g, PROF_MEM, ok = OK(DeviceGetMemoryInfo_v2, d, &m2));
    if (ok) {
        cols[GPU_MEM_USED_MIB] = (double)m2.used / 1048576.0;
        cols[GPU_MEM_TOTAL_MIB] = (double)m2.total / 1048576.0;
    } else if (OK(DeviceGetMemoryInfo, d, &m)) {
        cols[GPU_MEM_USED_MIB] = (double)m.used / 1048576.0;
        cols[GPU_MEM_TOTAL_MIB] = (double)m.total / 1048576.0;
    }
    unsigned v, v2;
    PROF(g, PROF_CLOCKS, ok = OK(DeviceGetClockInfo, d, NVML_CLOCK_SM, &v); if (OK(DeviceGetClockInfo, d, NVML_CLOCK_MEM, &v2)) cols[GPU_MEM_CLOCK_MHZ] = v2);
    if (ok) cols[GPU_SM_CLOCK_MHZ] = v;
    PROF(g, PROF_TEMP, ok = OK(DeviceGetTemperature, d, NVML_TEMPERATURE_GPU, &v));
    if (ok) cols[GPU_TEMP_C] = v;
    /* The energy counter costs 3-6 ms of CPU per read on an H200 (driver 580), 30x any other
     * call: read it every 5 s; rows in between carry null and summaries bridge the gap
     * with the power readings. */
    if (!g->energy_ns || now_ns - g->energy_ns >= ENERGY_PERIOD_NS) {
        unsigned long long e;
        PROF(g, PROF_ENERGY, ok = OK(DeviceGetTotalEnergyConsumption, d, &e));
        if (ok) {
            if (isnan(g->energy0_mj)) g->energy0_mj = (double)e;
            cols[GPU_ENERGY_J] = ((double)e - g->energy0_mj) / 1000.0;
        }
        g->energy_ns = now_ns;
    }
    PROF(g, PROF_FIELDS, sample_fields(g, now_ns, cols));
    if (isnan(cols[GPU_POWER_W]) && OK(DeviceGetPowerUsage, d, &v)) cols[GPU_POWER_W] = v / 1000.0;
    unsigned long long r;
    PROF(g, PROF_REASONS, ok = OK(DeviceGetClocksEventReasons, d, &r));
    if (ok) {
        cols[GPU_CLOCK_EVENT_REASONS] = (double)r;
        cols[GPU_THROTTLED] = (r & (NVML_REASON_SW_POWER_CAP | NVML_REASON_HW_SLOWDOWN | NVML_REASON_SW_THERMAL |
                                    NVML_REASON_HW_THERMAL | NVML_REASON_HW_POWER_BRAKE)) ? 1 : 0;
    }
    if (g->gpm) {
        sample_gpm(g, now_ns, cols);
    } else {
        /* Without GPM, NVML's own PCIe counter (a 20 ms window inside the driver, KB/s). */
        PROF(g, PROF_PCIE, if (OK(DeviceGetPcieThroughput, d, NVML_PCIE_UTIL_TX_BYTES, &v)) cols[GPU_PCIE_TX_MB_S] = v * 1e3 / 1e6;
                           if (OK(DeviceGetPcieThroughput, d, NVML_PCIE_UTIL_RX_BYTES, &v)) cols[GPU_PCIE_RX_MB_S] = v * 1e3 / 1e6);
    }
    if (!g->procs_ns || now_ns - g->procs_ns >= PROCS_PERIOD_NS) {
        PROF(g, PROF_PROCS, refresh_processes(g));
        g->procs_ns = now_ns;
    }
    if (g->n_procs >= 0) cols[GPU_N_PROCESSES] = g->n_procs;
    /* the link as trained now: an idle GPU trains down (power saving), a loaded one should not */
    if (OK(DeviceGetCurrPcieLinkGeneration, d, &v)) cols[GPU_PCIE_LINK_GEN] = v;
    if (OK(DeviceGetCurrPcieLinkWidth, d, &v)) cols[GPU_PCIE_LINK_WIDTH] = v;
}

double nvml_pcie_link_mb_s(int gen, int width) {
    static const double lane_mb_s[] = { 0, 250, 500, 8000.0 * 128 / 130 / 8, 16000.0 * 128 / 130 / 8,
                                        32000.0 * 128 / 130 / 8, 64000.0 * 242 / 256 / 8 };
    if (gen < 1 || gen > 6 || width < 1 || width > 32) return NAN;
    return lane_mb_s[gen] * width;
}

bool nvml_gpu_lost(const nvml_gpu *g) { return g->lost; }

int nvml_gpu_processes(nvml_gpu *g, nvml_process *out, int max) {
    int k = g->n_listed < max ? g->n_listed : max;
    memcpy(out, g->procs, (size_t)k * sizeof *out);
    return k;
}
