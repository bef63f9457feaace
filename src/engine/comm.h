/* comm — collective times on the GPUs' links: latency + bytes / bandwidth (alpha-beta), inside the
 * NVLink domain or across nodes over the NIC, and DeepEP's expert-parallel dispatch/combine from its
 * published microbenchmarks (low-latency kernels by EP size, normal kernels by bandwidth).
 *
 * Sources: DeepEP docs/legacy.md @0297fc8 (H800 + CX7 400 Gb/s: low-latency dispatch 77/118/155/
 * 173/192/194 us and combine 114/195/273/314/369/360 us at EP 8/16/32/64/128/256 for 128 tokens per
 * rank, hidden 7168, top-8, fp8 dispatch, bf16 combine; normal kernels 153/158 GB/s intranode EP8,
 * 43/43, 58/57, 51/50 GB/s over RDMA at EP 16/32/64); NVIDIA/nccl#1244 (small all-reduce across
 * 2 x 8 H20 over IB in nccl-tests' tight loop: 46-47 us, COMM_NET_ALPHA_S). A collective inside a
 * serving engine's step that spans nodes costs more than that loop's figure (cost_factors.comm_inter_s,
 * fitted: README-sim.md, "Collectives across nodes inside a step"). */
#ifndef DSP_COMM_H
#define DSP_COMM_H
#include "model/model.h"

typedef struct {
    double link_bytes_per_s;   /* one direction, x link efficiency */
    double link_dir_bytes_per_s; /* one direction, as marketed (DeepEP's intranode fractions apply to it) */
    double nic_bytes_per_s;    /* one direction per GPU, x link efficiency */
    double alpha_s;            /* latency of one collective inside the NVLink domain */
    double alpha_inter_s;      /* ... spanning nodes, inside an engine's step */
    int domain_gpus;           /* GPUs on the fast link */
} comm_model;

/* One message's latency across nodes in nccl-tests' loop (NVIDIA/nccl#1244): a transfer outside the
 * step (prefill -> decode KV) starts with it. */
#define COMM_NET_ALPHA_S 46.5e-6

/* link_eff scales both bandwidths; alpha_s the in-domain latency, alpha_inter_s a collective's
 * spanning nodes (never below alpha_s). */
void comm_init(comm_model *m, const hw_gpu *g, double link_eff, double alpha_s, double alpha_inter_s);
/* All-reduce of `bytes` (per GPU buffer) over p GPUs: ring inside the domain, hierarchical across it. */
double comm_allreduce_s(const comm_model *m, double bytes, int p);
/* All-gather (or reduce-scatter) where every one of p GPUs ends with (or starts from) total_bytes. */
double comm_allgather_s(const comm_model *m, double total_bytes, int p);
/* DeepEP dispatch (combine = 0) or combine (1) for `tokens` per rank of `hidden` values, top_k
 * copies, over ep ranks; low_latency: the decode kernels (latency table scaled by bytes), else the
 * normal kernels (bandwidth table). dispatch moves fp8, combine bf16. An EP group inside one NVLink
 * domain (m->domain_gpus, from the GPU catalog) moves over NVLink at DeepEP's intranode fraction of
 * the link, whatever the EP size. */
double comm_deepep_s(const comm_model *m, double tokens, int hidden, int top_k, int ep, int combine, int low_latency);
#endif
