/* nvml — NVIDIA GPU readings through NVML, loaded at run time with dlopen("libnvidia-ml.so.1")
 * so dsperf builds and runs without any NVIDIA software; the subset of the API we call is
 * declared in nvml.c from NVIDIA's public nvml.h. On Hopper and newer, GPM (GPU performance
 * monitoring) adds SM/tensor/DRAM-bandwidth utilisation between two samples, which is what
 * tells a compute-bound phase (prefill) from a memory-bound one (decode) without DCGM. */
#ifndef DSP_NVML_H
#define DSP_NVML_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Columns of one GPU sample; NaN = unknown (not supported here, or no previous sample yet). */
typedef enum {
    GPU_UTIL_GPU_PCT, GPU_UTIL_MEM_PCT,           /* NVML: time a kernel ran / memory was read or written */
    GPU_MEM_USED_MIB, GPU_MEM_TOTAL_MIB,          /* used: allocated by processes (as nvidia-smi), not driver-reserved */
    GPU_SM_CLOCK_MHZ, GPU_MEM_CLOCK_MHZ,
    GPU_POWER_W, GPU_POWER_AVG_W,                 /* field values POWER_INSTANT / POWER_AVERAGE (1 s) */
    GPU_ENERGY_J,                                 /* energy counter relative to the first read; read every 5 s (costly) */
    GPU_TEMP_C,
    GPU_PCIE_TX_MB_S, GPU_PCIE_RX_MB_S,           /* MB = 1e6 bytes */
    GPU_NVLINK_TX_MB_S, GPU_NVLINK_RX_MB_S,       /* from the cumulative NVLink throughput fields */
    GPU_CLOCK_EVENT_REASONS,                      /* bitmask, nvmlClocksEventReason* */
    GPU_THROTTLED,                                /* 1 if power cap, thermal or HW slowdown bits set */
    GPU_N_PROCESSES,                              /* compute processes (refreshed once a second) */
    GPU_PCIE_LINK_GEN, GPU_PCIE_LINK_WIDTH,       /* the PCIe link as trained now (idle GPUs train down to save power) */
    GPU_SM_UTIL_PCT, GPU_SM_OCCUPANCY_PCT,        /* GPM from here on */
    GPU_TENSOR_UTIL_PCT, GPU_HMMA_UTIL_PCT,
    GPU_DRAM_BW_UTIL_PCT,
    GPU_FP16_UTIL_PCT, GPU_FP32_UTIL_PCT,
    GPU_GPM_PCIE_TX_MB_S, GPU_GPM_PCIE_RX_MB_S,
    GPU_GPM_NVLINK_TX_MB_S, GPU_GPM_NVLINK_RX_MB_S,
    GPU_COL_COUNT
} gpu_col;
extern const char *const gpu_col_names[GPU_COL_COUNT];

/* Clock-event (throttle) reason bits, as in nvml.h. */
#define NVML_REASON_GPU_IDLE        0x1ULL
#define NVML_REASON_APP_CLOCKS      0x2ULL
#define NVML_REASON_SW_POWER_CAP    0x4ULL
#define NVML_REASON_HW_SLOWDOWN     0x8ULL
#define NVML_REASON_SYNC_BOOST      0x10ULL
#define NVML_REASON_SW_THERMAL      0x20ULL
#define NVML_REASON_HW_THERMAL      0x40ULL
#define NVML_REASON_HW_POWER_BRAKE  0x80ULL

typedef struct nvml nvml;

typedef struct {
    int index;
    char name[96];
    char uuid[96];
    char bus_id[32];             /* sysfs form, "0000:1b:00.0"; "" if unknown */
    int cc_major, cc_minor;      /* compute capability; -1 unknown */
    double mem_total_mib;
    int mig_mode;                /* 1 on, 0 off, -1 unknown/unsupported */
    int persistence_mode;        /* 1 on, 0 off, -1 unknown */
    double sm_clock_max_mhz, mem_clock_max_mhz;   /* NaN unknown */
    double power_limit_w, power_default_limit_w;  /* NaN unknown */
    bool gpm_supported;
    /* PCIe link: the most this GPU and slot can train to (nvmlDeviceGetMaxPcieLinkGeneration /
     * Width), and what it was trained to when read (Curr...); -1 unknown */
    int pcie_gen_max, pcie_width_max, pcie_gen_curr, pcie_width_curr;
} nvml_gpu_info;

/* What one direction of a PCIe link carries after line encoding, MB/s (1e6 bytes): lanes x per-lane
 * rate (gen 1 2.5 GT/s 8b/10b = 250 MB/s, gen 2 500, gen 3 8 GT/s 128b/130b = 984.6, gen 4 1969,
 * gen 5 3938, gen 6 7563 with FLIT); NAN for an unknown generation or width. A Gen4 x16 A100 PCIe
 * card: 31,508 MB/s each way. */
double nvml_pcie_link_mb_s(int gen, int width);

typedef struct { unsigned pid; double used_mib; } nvml_process;

/* Per-GPU sampling state (previous counters, GPM samples). */
typedef struct nvml_gpu nvml_gpu;

/* Loads and initialises NVML. Returns NULL with a one-line reason ("libnvidia-ml.so.1 not
 * found: no NVIDIA driver on this machine") when it cannot. */
nvml *nvml_open(char *err, size_t errlen);
void nvml_close(nvml *n);
int nvml_device_count(nvml *n);
int nvml_driver_version(nvml *n, char *buf, size_t len);   /* 0 ok */
int nvml_cuda_driver_version(nvml *n, int *version);        /* e.g. 12080 for 12.8; 0 ok */
int nvml_gpu_info_get(nvml *n, int index, nvml_gpu_info *info);

/* Opens sampling state for GPU `index` (GPM is used when the device supports it). */
nvml_gpu *nvml_gpu_open(nvml *n, int index);
void nvml_gpu_close(nvml_gpu *g);
/* One sample: fills cols[GPU_COL_COUNT] (NaN where unknown). Rates (NVLink, GPM) need a
 * previous sample and are NaN on the first call; GPM values need the previous GPM sample to be
 * at least ~100 ms old (else NaN and the older sample is kept). */
void nvml_gpu_sample(nvml_gpu *g, int64_t now_ns, double *cols);
/* Whether NVML said the GPU is lost (NVML_ERROR_GPU_IS_LOST): its samples stay NaN from then on. */
bool nvml_gpu_lost(const nvml_gpu *g);
/* Compute processes seen at the last refresh; returns the count (<= max). */
int nvml_gpu_processes(nvml_gpu *g, nvml_process *out, int max);
#endif
