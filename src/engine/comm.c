/* comm — alpha-beta collectives and DeepEP's measured dispatch/combine (see comm.h for sources). */
#include "engine/comm.h"
#include <math.h>

#define DEEPEP_LL_FLOOR_S 10e-6  /* assumed fixed part of a low-latency kernel (launch + one RDMA round trip) */
#define DEEPEP_NORMAL_ALPHA_S 20e-6
#define DEEPEP_LL_MEASURED_EP 8  /* the smallest EP of the low-latency table (one H800 node) */

void comm_init(comm_model *m, const hw_gpu *g, double link_eff, double alpha_s, double alpha_inter_s) {
    m->link_dir_bytes_per_s = g->link_bytes_per_s / 2;
    m->link_bytes_per_s = g->link_bytes_per_s / 2 * link_eff;
    m->nic_bytes_per_s = (g->nic_bytes_per_s > 0 ? g->nic_bytes_per_s : g->link_bytes_per_s / 2) * link_eff;
    m->alpha_s = alpha_s;
    m->alpha_inter_s = alpha_s > alpha_inter_s ? alpha_s : alpha_inter_s;
    m->domain_gpus = g->domain_gpus > 0 ? g->domain_gpus : 1;
}

double comm_allreduce_s(const comm_model *m, double bytes, int p) {
    if (p <= 1) return 0;
    if (p <= m->domain_gpus)
        return m->alpha_s + 2.0 * (p - 1) / p * bytes / m->link_bytes_per_s;
    /* reduce-scatter in the node, all-reduce of 1/g of the buffer between nodes (each GPU on its
     * own NIC), all-gather in the node */
    int g = m->domain_gpus, nodes = (p + g - 1) / g;
    double intra = g > 1 ? 2.0 * (g - 1) / g * bytes / m->link_bytes_per_s : 0;
    double inter = 2.0 * (nodes - 1) / nodes * bytes / g / m->nic_bytes_per_s;
    return m->alpha_inter_s + intra + inter;
}

double comm_allgather_s(const comm_model *m, double total_bytes, int p) {
    if (p <= 1) return 0;
    if (p <= m->domain_gpus) return m->alpha_s + (double)(p - 1) / p * total_bytes / m->link_bytes_per_s;
    int g = m->domain_gpus;
    double in_node = (double)g / p * total_bytes, remote = total_bytes - in_node;
    return m->alpha_inter_s + (g > 1 ? (double)(g - 1) / g * in_node / m->link_bytes_per_s : 0) +
           remote / m->nic_bytes_per_s;
}

/* log-linear interpolation in the EP size over the published points */
static double interp_ep(const int *ep, const double *v, int n, int x) {
    if (x <= ep[0]) return v[0];
    if (x >= ep[n - 1]) return v[n - 1];
    for (int i = 1; i < n; i++)
        if (x <= ep[i]) {
            double f = (log(x) - log(ep[i - 1])) / (log(ep[i]) - log(ep[i - 1]));
            return v[i - 1] + f * (v[i] - v[i - 1]);
        }
    return v[n - 1];
}

/* DeepEP's intranode kernels on H800 (NVLink 400 GB/s: 200 GB/s per direction) reach 153 GB/s
 * dispatch and 158 GB/s combine: these fractions of one direction of the GPU's own link hold inside
 * any NVLink domain (an HGX node of 8, an NVL72 rack of 72) */
#define DEEPEP_NVL_DISPATCH_FRAC (153.0 / 200.0)
#define DEEPEP_NVL_COMBINE_FRAC (158.0 / 200.0)

double comm_deepep_s(const comm_model *m, double tokens, int hidden, int top_k, int ep, int combine, int low_latency) {
    if (ep <= 1 || tokens <= 0) return 0;
    /* bytes this rank sends: tokens x top_k copies of hidden values (fp8 + 1/32 scales dispatch, bf16 combine) */
    double per_val = combine ? 2.0 : 1.0 + 4.0 / 128;
    double bytes = tokens * top_k * hidden * per_val;
    /* the whole EP group inside one NVLink domain: the tokens move over NVLink, not the NIC (the
     * domain's size is the GPU catalog's: 8 on HGX, 72 on GB200 NVL72). The low-latency table's
     * EP 8 point was itself measured inside an 8-GPU node (its RDMA path): it stands for EP <= 8;
     * a larger group inside the domain (NVL72) goes over NVLink. */
    double nvl = m->link_dir_bytes_per_s * (combine ? DEEPEP_NVL_COMBINE_FRAC : DEEPEP_NVL_DISPATCH_FRAC);
    if (ep <= m->domain_gpus && nvl > 0 && !(low_latency && ep <= DEEPEP_LL_MEASURED_EP))
        return (low_latency ? DEEPEP_LL_FLOOR_S : DEEPEP_NORMAL_ALPHA_S) + bytes / nvl;
    if (low_latency) {
        static const int eps[] = {8, 16, 32, 64, 128, 256};
        static const double disp_us[] = {77, 118, 155, 173, 192, 194}, comb_us[] = {114, 195, 273, 314, 369, 360};
        double ref_s = interp_ep(eps, combine ? comb_us : disp_us, 6, ep) * 1e-6;
        double ref_bytes = 128.0 * 8 * 7168 * per_val;
        return DEEPEP_LL_FLOOR_S + (ref_s - DEEPEP_LL_FLOOR_S) * bytes / ref_bytes;
    }
    /* over RDMA: the published bandwidths at EP 16/32/64 (EP 8 over RDMA is not published; the
     * EP 16 value stands for it) */
    static const int eps[] = {16, 32, 64};
    static const double disp_gbs[] = {43, 58, 51}, comb_gbs[] = {43, 57, 50};
    double gbs = interp_ep(eps, combine ? comb_gbs : disp_gbs, 3, ep);
    return DEEPEP_NORMAL_ALPHA_S + bytes / (gbs * 1e9);
}
