/* hw — the GPU catalog: memory, HBM bandwidth, dense tensor peaks per dtype, the GPU-to-GPU link
 * and the scale-out network, from the vendors' datasheets and whitepapers (dense numbers, i.e. the
 * sparsity figures halved). Memory is what the driver reports where known. */
#include "model/model.h"
#include <stdio.h>
#include <string.h>
#include <strings.h>

#define GB 1e9
#define MIB 1048576.0
#define T 1e12

/* name, description, memory, HBM B/s, bf16, fp8, int8, link B/s (both directions), link name,
 * fp4, NIC B/s per GPU (one direction), GPUs per link domain, PCIe-only, architecture, reachable
 * GEMM rate against the H200's (0: the same) */
static const hw_gpu gpus[] = {
    {"a100-40g", "NVIDIA A100-SXM4-40GB", 40960 * MIB, 1.555e12, 312 * T, 0, 624 * T, 600 * GB, "NVLink3", 0, 25 * GB, 8, 0, "ampere", 0},
    {"a100-80g", "NVIDIA A100-SXM4-80GB", 81920 * MIB, 2.039e12, 312 * T, 0, 624 * T, 600 * GB, "NVLink3", 0, 25 * GB, 8, 0, "ampere", 0},
    {"h100", "NVIDIA H100 80GB HBM3 (SXM)", 81559 * MIB, 3.35e12, 989 * T, 1979 * T, 1979 * T, 900 * GB, "NVLink4", 0, 50 * GB, 8, 0, "hopper", 0},
    {"h800", "NVIDIA H800 80GB HBM3 (SXM)", 81559 * MIB, 3.35e12, 989 * T, 1979 * T, 1979 * T, 400 * GB, "NVLink4 (H800)", 0, 50 * GB, 8, 0, "hopper", 0},
    {"h200", "NVIDIA H200 141GB HBM3e (SXM)", 143771 * MIB, 4.8e12, 989 * T, 1979 * T, 1979 * T, 900 * GB, "NVLink4", 0, 50 * GB, 8, 0, "hopper", 0},
    {"h20", "NVIDIA H20 96GB HBM3", 97871 * MIB, 4.0e12, 148 * T, 296 * T, 296 * T, 900 * GB, "NVLink4", 0, 50 * GB, 8, 0, "hopper", 0},
    {"b200", "NVIDIA B200 180GB HBM3e (HGX)", 183359 * MIB, 8.0e12, 2250 * T, 4500 * T, 4500 * T, 1800 * GB, "NVLink5", 9000 * T, 50 * GB, 8, 0, "blackwell", 0},
    /* NVIDIA's HGX B300 figures (8 GPUs: 2.3 TB, FP8 72 PF and BF16 36 PF with sparsity, FP4
     * 108 PF dense, INT8 2 POPS with sparsity; NVLink 5 1.8 TB/s a GPU, ConnectX-8 800 Gb/s a GPU),
     * per GPU and dense; 8 TB/s HBM3e (Blackwell Ultra); memory nominal (the driver's figure n/s) */
    {"b300", "NVIDIA B300 288GB HBM3e (HGX)", 288 * GB, 8.0e12, 2250 * T, 4500 * T, 125 * T, 1800 * GB, "NVLink5", 13500 * T, 100 * GB, 8, 0, "blackwell", 0},
    {"gb200", "NVIDIA GB200 186GB HBM3e (NVL72)", 186 * GB, 8.0e12, 2500 * T, 5000 * T, 5000 * T, 1800 * GB, "NVLink5 (NVL72)", 10000 * T, 50 * GB, 72, 0, "blackwell", 0},
    {"l40s", "NVIDIA L40S 48GB GDDR6", 46068 * MIB, 0.864e12, 362 * T, 733 * T, 733 * T, 64 * GB, "PCIe4 x16", 0, 25 * GB, 1, 1, "ada", 0},
    /* AMD's own max-achievable FLOPs (ROCm blog "Measuring Max-Achievable FLOPs - Part 2", 2025:
     * hipBLASLt at 4096 x 3648-4864 x 32896): MI300X 708 TF bf16 at 1207 MHz, 1273 TF fp8 at
     * 1230 MHz, 54 % and 49 % of the 2.1 GHz datasheet peaks; MI325X 843 and 1519 TF, 65 % and
     * 58 %: against the H200's 80 % and 73 %, x0.67 and x0.80 */
    {"mi300x", "AMD Instinct MI300X 192GB HBM3", 196608 * MIB, 5.3e12, 1307 * T, 2615 * T, 2615 * T, 896 * GB, "Infinity Fabric", 0, 50 * GB, 8, 0, "cdna3", 0.67},
    /* AMD's MI325X: the MI300X's CDNA3 compute (1307.4 TF bf16, 2614.9 TF fp8 / int8, dense) with
     * 256 GB of HBM3E at 6 TB/s; the same 7 Infinity Fabric links */
    {"mi325x", "AMD Instinct MI325X 256GB HBM3E", 262144 * MIB, 6.0e12, 1307 * T, 2615 * T, 2615 * T, 896 * GB, "Infinity Fabric", 0, 50 * GB, 8, 0, "cdna3", 0.80},
    /* AMD's MI355X datasheet: 288 GB HBM3E, 8 TB/s, dense 2.5 PF bf16, 5.0 PF fp8/int8, 10.1 PF
     * MXFP4; 7 Infinity Fabric links of 153.6 GB/s */
    {"mi355x", "AMD Instinct MI355X 288GB HBM3E", 294912 * MIB, 8.0e12, 2516 * T, 5033 * T, 5033 * T, 1075 * GB, "Infinity Fabric", 10066 * T, 50 * GB, 8, 0, "cdna4", 0},
    /* AMD's MI350X: the MI355X's CDNA4 die (256 CUs, 288 GB HBM3E at 8 TB/s, the same links), air
     * cooled at 1000 W with a 2.2 GHz peak clock against the MI355X's 2.4 GHz (AMD at Hot Chips
     * 2025): dense 2.3 PF bf16, 4.6 PF fp8 / int8, 9.2 PF MXFP4 */
    {"mi350x", "AMD Instinct MI350X 288GB HBM3E", 294912 * MIB, 8.0e12, 2307 * T, 4614 * T, 4614 * T, 1075 * GB, "Infinity Fabric", 9228 * T, 50 * GB, 8, 0, "cdna4", 0},
    /* GeForce cards (llama.cpp, ktransformers rows): bf16 with fp32 accumulate, int8 dense */
    {"rtx3090", "NVIDIA GeForce RTX 3090 24GB", 24576 * MIB, 936e9, 71 * T, 0, 284 * T, 64 * GB, "PCIe4 x16", 0, 0, 1, 1, "ampere", 0},
    {"rtx4080", "NVIDIA GeForce RTX 4080 16GB", 16376 * MIB, 716.8e9, 97.5 * T, 389.9 * T, 389.9 * T, 64 * GB, "PCIe4 x16", 0, 0, 1, 1, "ada", 0},
    {"rtx4090", "NVIDIA GeForce RTX 4090 24GB", 24564 * MIB, 1008e9, 165.2 * T, 660.6 * T, 660.6 * T, 64 * GB, "PCIe4 x16", 0, 0, 1, 1, "ada", 0},
    {"rtx5090", "NVIDIA GeForce RTX 5090 32GB", 32607 * MIB, 1792e9, 209.5 * T, 419 * T, 838 * T, 128 * GB, "PCIe5 x16", 1676 * T, 0, 1, 1, "blackwell-geforce", 0},
};
#define N_GPUS (sizeof gpus / sizeof gpus[0])

const hw_gpu *hw_catalog(size_t i) { return i < N_GPUS ? &gpus[i] : NULL; }

int hw_arch_is(const hw_gpu *g, const char *arch) { return g && arch && !strcmp(g->arch, arch); }

const hw_gpu *hw_find(const char *name) {
    if (!name) return NULL;
    static const struct { const char *alias, *name; } al[] = {
        {"a100", "a100-80g"}, {"a100-80gb", "a100-80g"}, {"a100-sxm", "a100-80g"}, {"a100-40gb", "a100-40g"},
        {"h100-sxm", "h100"}, {"h100-80g", "h100"}, {"h800-sxm", "h800"}, {"h200-141g", "h200"}, {"h200-sxm", "h200"},
        {"l40s-48g", "l40s"}, {"mi300", "mi300x"}, {"h20-96g", "h20"}, {"b200-180g", "b200"}, {"b300-288g", "b300"}, {"mi325", "mi325x"}, {"mi350", "mi350x"}, {"gb200-nvl72", "gb200"},
        {"rtx-3090", "rtx3090"}, {"rtx-4080", "rtx4080"}, {"rtx-4090", "rtx4090"}, {"rtx-5090", "rtx5090"},
    };
    for (size_t i = 0; i < sizeof al / sizeof al[0]; i++)
        if (!strcasecmp(name, al[i].alias)) name = al[i].name;
    for (size_t i = 0; i < N_GPUS; i++)
        if (!strcasecmp(name, gpus[i].name)) return &gpus[i];
    return NULL;
}

const char *hw_names(void) {
    static char buf[512];
    if (!buf[0]) {
        size_t n = 0;
        for (size_t i = 0; i < N_GPUS && n + 40 < sizeof buf; i++)
            n += (size_t)snprintf(buf + n, sizeof buf - n, "%s%s", i ? ", " : "", gpus[i].name);
    }
    return buf;
}

double hw_matmul_flops(const hw_gpu *g, model_dtype d) {
    if (d == DT_FP4 || d == DT_MXFP4) {
        if (g->fp4_flops > 0) return g->fp4_flops;
        d = DT_FP8;   /* dequantized into the fp8 (or bf16) path */
    }
    if (d == DT_FP8 && g->fp8_flops > 0) return g->fp8_flops;
    if ((d == DT_INT8 || d == DT_Q4) && g->int8_ops > 0) return g->int8_ops;
    return g->bf16_flops;
}

void hw_print_catalog(FILE *f) {
    fprintf(f, "GPUs (dense peak, per GPU)\n");
    fprintf(f, "  %-9s %-33s %9s %9s %8s %8s %8s %s\n", "name", "device", "memory", "HBM", "bf16", "fp8", "fp4",
            "link / network");
    for (size_t i = 0; i < N_GPUS; i++) {
        const hw_gpu *g = &gpus[i];
        char fp8[16], fp4[16];
        if (g->fp8_flops > 0) snprintf(fp8, sizeof fp8, "%.0fT", g->fp8_flops / T);
        else snprintf(fp8, sizeof fp8, "-");
        if (g->fp4_flops > 0) snprintf(fp4, sizeof fp4, "%.0fT", g->fp4_flops / T);
        else snprintf(fp4, sizeof fp4, "-");
        fprintf(f, "  %-9s %-33s %7.1fGiB %6.2fTB/s %7.0fT %8s %8s %.0f GB/s %s x%d", g->name, g->descr,
                g->mem_bytes / 1073741824.0, g->hbm_bytes_per_s / 1e12, g->bf16_flops / T, fp8, fp4,
                g->link_bytes_per_s / GB, g->link_name, g->domain_gpus);
        if (g->nic_bytes_per_s > 0) fprintf(f, ", %.0f GB/s NIC", g->nic_bytes_per_s / GB);
        fputc('\n', f);
    }
}
