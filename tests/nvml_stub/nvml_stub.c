/* nvml_stub — a stand-in libnvidia-ml.so.1 for tests on machines without a GPU. It exports the NVML
 * entry points src/telemetry/nvml.c binds (same names and argument layouts as NVIDIA's public nvml.h)
 * and answers with known values, so the tests can assert what dsperf computes from them: the sampler,
 * the GPM math (metrics between two GPM samples), rates from cumulative counters, and the error paths.
 *
 * Every reading is a function of the GPU index and of how many samples of that GPU were taken (one
 * sample = one nvmlDeviceGetUtilizationRates call, the first call nvml_gpu_sample makes):
 *   utilization gpu 40 + 10*index % (or NVML_STUB_UTIL's pattern), memory 20 %;  memory total 143771 MiB, used 1024*(index+1) MiB
 *   clocks SM 1980 MHz, memory 3201 MHz (max 1980 / 3201);  temperature 50 + index C
 *   power 350 W instant, 300 W average (field values); power limit 700 W, default 700 W
 *   energy 1e9 + 5000 * samples mJ;  NVLink TX/RX 1000 * samples / 2000 * samples KiB (cumulative)
 *   clock-event reasons 0x4 (SW power cap) from the third sample on, else 0;  one process, pid 4242, 2 GiB
 *   GPM (nvmlGpmMetricsGet between the two samples it is given): SM 10*s2, occupancy 5*s2, tensor 60,
 *   HMMA 55, DRAM bandwidth 70, FP16 1, FP32 2 %, PCIe TX/RX 1000/2000 MiB/s, NVLink TX/RX 300/400 MiB/s,
 *   where s2 is the sample number stored in the second GPM sample.
 *   PCIe link: max generation 4 (NVML_STUB_PCIE_GEN), width 16; the current generation reads 1 before
 *   the GPU's first sample (an idle GPU trains its link down) and the max from then on.
 * Environment knobs (read by nvmlInit):
 *   NVML_STUB_GPUS=N            devices (default 2)
 *   NVML_STUB_NO_GPM=1          GPM unsupported (nvmlGpmQueryDeviceSupport says so)
 *   NVML_STUB_NOT_SUPPORTED=fn  that entry point (e.g. nvmlDeviceGetTemperature) returns NOT_SUPPORTED
 *   NVML_STUB_LOST_AFTER=K      from sample K+1 on, GPU 0 is lost: its calls return GPU_IS_LOST
 *   NVML_STUB_INIT_FAIL=1       nvmlInit fails (NVML_ERROR_DRIVER_NOT_LOADED)
 *   NVML_STUB_DRAM=P            GPM DRAM bandwidth utilisation P % (default 70)
 *   NVML_STUB_PCIE_GEN=G        the PCIe link's generation (default 4)
 *   NVML_STUB_UTIL="P0;P1;..."  per-GPU utilisation patterns (GPU i takes the i-th; a GPU without one keeps
 *                               40 + 10*index): each a comma list of percentages the GPU's samples cycle
 *                               through, sample k reading entry (k-1) mod length. "70,30;30,70": two GPUs
 *                               taking turns (llama.cpp's layer split); "95;95" both busy (row split);
 *                               "75;25" one GPU with three quarters of the work (-ts 3,1). With a pattern
 *                               the GPM SM activity reads the same value (the GPU is busy as NVML says)
 *   NVML_STUB_NVLINK=M          GPM NVLink TX and RX M MiB/s each on every GPU (default 300 / 400)
 * nvml_stub_count(name) tells how often an entry point was called (in-process tests). */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>

typedef int nvmlReturn_t;
enum { OK = 0, UNINITIALIZED = 1, INVALID_ARGUMENT = 2, NOT_SUPPORTED = 3, DRIVER_NOT_LOADED = 9, GPU_IS_LOST = 15 };

#define MAX_GPUS 8
typedef struct { int index; unsigned long samples; } dev;
typedef struct { unsigned magic; unsigned long sample_no; int index; } gpm_sample;

static dev devs[MAX_GPUS];
static int n_gpus = 2, no_gpm, lost_after = -1, initialized, pcie_gen = 4;
static double dram_pct = 70, nvlink_mib_s = -1;
static char not_supported[64];
/* NVML_STUB_UTIL: per GPU, the percentages its samples cycle through (n_util[i] == 0: no pattern) */
#define MAX_PATTERN 64
static unsigned util_pat[MAX_GPUS][MAX_PATTERN];
static int n_util[MAX_GPUS];

static void parse_util(const char *spec) {
    memset(n_util, 0, sizeof n_util);
    for (int g = 0; spec && *spec && g < MAX_GPUS; g++) {
        while (*spec && *spec != ';') {
            char *end;
            long v = strtol(spec, &end, 10);
            if (end == spec) break;   /* malformed: the rest of this GPU's pattern is ignored */
            if (n_util[g] < MAX_PATTERN) util_pat[g][n_util[g]++] = (unsigned)(v < 0 ? 0 : v > 100 ? 100 : v);
            spec = *end == ',' ? end + 1 : end;
        }
        while (*spec && *spec != ';') spec++;
        if (*spec == ';') spec++;
    }
}

/* GPU utilisation of sample k (1-based) of GPU index. */
static unsigned util_of(int index, unsigned long k) {
    if (!n_util[index]) return 40 + 10 * (unsigned)index;
    return util_pat[index][(k ? k - 1 : 0) % (unsigned long)n_util[index]];
}

/* Calls per entry point (names as exported). */
static struct { const char *name; unsigned long n; } calls[64];

__attribute__((visibility("default"))) unsigned long nvml_stub_count(const char *name) {
    for (int i = 0; i < 64 && calls[i].name; i++)
        if (!strcmp(calls[i].name, name)) return calls[i].n;
    return 0;
}

static void count(const char *name) {
    int i = 0;
    while (i < 63 && calls[i].name && strcmp(calls[i].name, name)) i++;
    calls[i].name = name;
    calls[i].n++;
}

/* The common prologue: counts the call, then says whether it fails and how. */
static nvmlReturn_t enter(const char *name, const dev *d) {
    count(name);
    if (!initialized) return UNINITIALIZED;
    if (!strcmp(not_supported, name)) return NOT_SUPPORTED;
    if (d && d->index == 0 && lost_after >= 0 && d->samples > (unsigned long)lost_after) return GPU_IS_LOST;
    return OK;
}
#define ENTER(d) do { nvmlReturn_t rc_ = enter(__func__, (d)); if (rc_) return rc_; } while (0)
#define API __attribute__((visibility("default")))

API nvmlReturn_t nvmlInit_v2(void) {
    count(__func__);
    const char *e;
    if ((e = getenv("NVML_STUB_INIT_FAIL")) && *e == '1') return DRIVER_NOT_LOADED;
    n_gpus = (e = getenv("NVML_STUB_GPUS")) ? atoi(e) : 2;
    if (n_gpus < 0 || n_gpus > MAX_GPUS) n_gpus = 2;
    no_gpm = (e = getenv("NVML_STUB_NO_GPM")) && *e == '1';
    lost_after = (e = getenv("NVML_STUB_LOST_AFTER")) ? atoi(e) : -1;
    snprintf(not_supported, sizeof not_supported, "%s", (e = getenv("NVML_STUB_NOT_SUPPORTED")) ? e : "");
    dram_pct = (e = getenv("NVML_STUB_DRAM")) ? atof(e) : 70;
    pcie_gen = (e = getenv("NVML_STUB_PCIE_GEN")) ? atoi(e) : 4;
    parse_util(getenv("NVML_STUB_UTIL"));
    nvlink_mib_s = (e = getenv("NVML_STUB_NVLINK")) ? atof(e) : -1;
    for (int i = 0; i < MAX_GPUS; i++) devs[i] = (dev){i, 0};
    initialized = 1;
    return OK;
}
API nvmlReturn_t nvmlShutdown(void) { count(__func__); initialized = 0; return OK; }
API const char *nvmlErrorString(nvmlReturn_t r) {
    return r == GPU_IS_LOST ? "GPU is lost" : r == NOT_SUPPORTED ? "Not Supported" : r == DRIVER_NOT_LOADED ? "Driver Not Loaded" : "Unknown Error";
}
API nvmlReturn_t nvmlSystemGetDriverVersion(char *buf, unsigned len) { ENTER(NULL); snprintf(buf, len, "580.00-stub"); return OK; }
API nvmlReturn_t nvmlSystemGetCudaDriverVersion_v2(int *v) { ENTER(NULL); *v = 12080; return OK; }
API nvmlReturn_t nvmlDeviceGetCount_v2(unsigned *c) { ENTER(NULL); *c = (unsigned)n_gpus; return OK; }
API nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned i, dev **d) {
    ENTER(NULL);
    if (i >= (unsigned)n_gpus) return INVALID_ARGUMENT;
    *d = &devs[i];
    return OK;
}
API nvmlReturn_t nvmlDeviceGetName(dev *d, char *buf, unsigned len) { ENTER(d); snprintf(buf, len, "NVIDIA H200 (stub %d)", d->index); return OK; }
API nvmlReturn_t nvmlDeviceGetUUID(dev *d, char *buf, unsigned len) { ENTER(d); snprintf(buf, len, "GPU-00000000-stub-%04d", d->index); return OK; }
typedef struct { char busIdLegacy[16]; unsigned domain, bus, device, pciDeviceId, pciSubSystemId; char busId[32]; } pci_info;
API nvmlReturn_t nvmlDeviceGetPciInfo_v3(dev *d, pci_info *p) {
    ENTER(d);
    memset(p, 0, sizeof *p);
    p->bus = 0x1b + (unsigned)d->index;
    snprintf(p->busId, sizeof p->busId, "00000000:%02X:00.0", p->bus);
    return OK;
}
API nvmlReturn_t nvmlDeviceGetCudaComputeCapability(dev *d, int *ma, int *mi) { ENTER(d); *ma = 9; *mi = 0; return OK; }
typedef struct { unsigned long long total, free, used; } mem_v1;
typedef struct { unsigned version; unsigned long long total, reserved, free, used; } mem_v2;
#define MIB 1048576ULL
API nvmlReturn_t nvmlDeviceGetMemoryInfo(dev *d, mem_v1 *m) {
    ENTER(d);
    m->total = 143771 * MIB;
    m->used = 1024 * MIB * (unsigned)(d->index + 1) + 500 * MIB;   /* v1 counts the reserved part too */
    m->free = m->total - m->used;
    return OK;
}
API nvmlReturn_t nvmlDeviceGetMemoryInfo_v2(dev *d, mem_v2 *m) {
    ENTER(d);
    if ((m->version >> 24) != 2) return INVALID_ARGUMENT;
    m->total = 143771 * MIB;
    m->reserved = 500 * MIB;
    m->used = 1024 * MIB * (unsigned)(d->index + 1);
    m->free = m->total - m->used - m->reserved;
    return OK;
}
typedef struct { unsigned gpu, memory; } util;
API nvmlReturn_t nvmlDeviceGetUtilizationRates(dev *d, util *u) {
    d->samples++;   /* the first call of every sample: the stub's notion of "sample number" */
    ENTER(d);
    u->gpu = util_of(d->index, d->samples);
    u->memory = 20;
    return OK;
}
API nvmlReturn_t nvmlDeviceGetClockInfo(dev *d, int type, unsigned *v) { ENTER(d); *v = type == 1 ? 1980 : 3201; return OK; }
API nvmlReturn_t nvmlDeviceGetMaxClockInfo(dev *d, int type, unsigned *v) { ENTER(d); *v = type == 1 ? 1980 : 3201; return OK; }
API nvmlReturn_t nvmlDeviceGetTemperature(dev *d, int sensor, unsigned *v) { ENTER(d); *v = 50 + (unsigned)d->index; return OK; }
API nvmlReturn_t nvmlDeviceGetTotalEnergyConsumption(dev *d, unsigned long long *mj) { ENTER(d); *mj = 1000000000ULL + 5000ULL * d->samples; return OK; }
typedef struct {
    unsigned fieldId, scopeId;
    long long timestamp, latencyUsec;
    int valueType;
    nvmlReturn_t nvmlReturn;
    union { double d; unsigned ui; unsigned long ul; unsigned long long ull; long long sll; int si; unsigned short us; } value;
} field_value;
API nvmlReturn_t nvmlDeviceGetFieldValues(dev *d, int n, field_value *f) {
    ENTER(d);
    for (int i = 0; i < n; i++) {
        f[i].nvmlReturn = OK;
        switch (f[i].fieldId) {
        case 186: f[i].valueType = 1; f[i].value.ui = 350000; break;                   /* POWER_INSTANT, mW */
        case 185: f[i].valueType = 1; f[i].value.ui = 300000; break;                   /* POWER_AVERAGE */
        case 138: f[i].valueType = 3; f[i].value.ull = 1000ULL * d->samples; break;    /* NVLink TX, KiB */
        case 139: f[i].valueType = 3; f[i].value.ull = 2000ULL * d->samples; break;    /* NVLink RX */
        default: f[i].nvmlReturn = NOT_SUPPORTED;
        }
    }
    return OK;
}
API nvmlReturn_t nvmlDeviceGetPowerUsage(dev *d, unsigned *mw) { ENTER(d); *mw = 345000; return OK; }
API nvmlReturn_t nvmlDeviceGetPcieThroughput(dev *d, int counter, unsigned *kb_s) { ENTER(d); *kb_s = counter == 0 ? 7000 : 9000; return OK; }
API nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(dev *d, unsigned *g) { ENTER(d); *g = (unsigned)pcie_gen; return OK; }
API nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(dev *d, unsigned *w) { ENTER(d); *w = 16; return OK; }
API nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(dev *d, unsigned *g) { ENTER(d); *g = d->samples ? (unsigned)pcie_gen : 1; return OK; }
API nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(dev *d, unsigned *w) { ENTER(d); *w = 16; return OK; }
API nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(dev *d, unsigned long long *r) { ENTER(d); *r = d->samples >= 3 ? 0x4 : 0; return OK; }
typedef struct { unsigned pid; unsigned long long usedGpuMemory; unsigned gpuInstanceId, computeInstanceId; } proc_info;
API nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(dev *d, unsigned *n, proc_info *p) {
    ENTER(d);
    if (*n < 1) { *n = 1; return 7; /* INSUFFICIENT_SIZE */ }
    *n = 1;
    p[0] = (proc_info){4242, 2048 * MIB, 0, 0};
    return OK;
}
API nvmlReturn_t nvmlDeviceGetMigMode(dev *d, unsigned *cur, unsigned *pend) { ENTER(d); *cur = *pend = 0; return OK; }
API nvmlReturn_t nvmlDeviceGetPersistenceMode(dev *d, int *m) { ENTER(d); *m = 1; return OK; }
API nvmlReturn_t nvmlDeviceGetPowerManagementLimit(dev *d, unsigned *mw) { ENTER(d); *mw = 700000; return OK; }
API nvmlReturn_t nvmlDeviceGetPowerManagementDefaultLimit(dev *d, unsigned *mw) { ENTER(d); *mw = 700000; return OK; }

/* ---- GPM ---- */
typedef struct { unsigned version, isSupportedDevice; } gpm_support;
API nvmlReturn_t nvmlGpmQueryDeviceSupport(dev *d, gpm_support *s) { ENTER(d); s->isSupportedDevice = !no_gpm; return OK; }
API nvmlReturn_t nvmlGpmSampleAlloc(gpm_sample **s) {
    ENTER(NULL);
    *s = calloc(1, sizeof **s);
    if (!*s) return 2;
    (*s)->magic = 0x6770;
    return OK;
}
API nvmlReturn_t nvmlGpmSampleFree(gpm_sample *s) { ENTER(NULL); if (!s || s->magic != 0x6770) return INVALID_ARGUMENT; s->magic = 0; free(s); return OK; }
API nvmlReturn_t nvmlGpmSampleGet(dev *d, gpm_sample *s) {
    ENTER(d);
    if (!s || s->magic != 0x6770) return INVALID_ARGUMENT;
    s->sample_no = d->samples;
    s->index = d->index;
    return OK;
}
typedef struct {
    unsigned metricId;
    nvmlReturn_t nvmlReturn;
    double value;
    struct { char *shortName, *longName, *unit; } metricInfo;
} gpm_metric;
typedef struct { unsigned version, numMetrics; gpm_sample *sample1, *sample2; gpm_metric metrics[98]; } gpm_get;
API nvmlReturn_t nvmlGpmMetricsGet(gpm_get *g) {
    ENTER(NULL);
    /* metrics describe what happened between two distinct, older-then-newer samples of one GPU */
    if (g->version != 1 || !g->sample1 || !g->sample2 || g->sample1->magic != 0x6770 || g->sample2->magic != 0x6770 ||
        g->sample1->index != g->sample2->index || g->sample2->sample_no <= g->sample1->sample_no || g->numMetrics > 98)
        return INVALID_ARGUMENT;
    double s2 = (double)g->sample2->sample_no;
    for (unsigned i = 0; i < g->numMetrics; i++) {
        gpm_metric *m = &g->metrics[i];
        m->nvmlReturn = OK;
        switch (m->metricId) {
        case 2: m->value = n_util[g->sample2->index] ? util_of(g->sample2->index, g->sample2->sample_no) : 10 * s2; break;   /* SM activity */
        case 3: m->value = 5 * s2; break;     /* SM occupancy */
        case 5: m->value = 60; break;         /* any tensor */
        case 7: m->value = 55; break;         /* HMMA */
        case 10: m->value = dram_pct; break;  /* DRAM bandwidth */
        case 12: m->value = 2; break;         /* FP32 */
        case 13: m->value = 1; break;         /* FP16 */
        case 20: m->value = 1000; break;      /* PCIe TX, MiB/s */
        case 21: m->value = 2000; break;      /* PCIe RX */
        case 60: m->value = nvlink_mib_s >= 0 ? nvlink_mib_s : 400; break;   /* NVLink RX total */
        case 61: m->value = nvlink_mib_s >= 0 ? nvlink_mib_s : 300; break;   /* NVLink TX total */
        default: m->nvmlReturn = NOT_SUPPORTED; m->value = 0;
        }
    }
    return OK;
}
