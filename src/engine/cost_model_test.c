/* cost model mechanism tests — each against a closed form or a published microbenchmark:
 * collectives (alpha-beta, DeepEP's table), KV layouts (MLA latent, FlashMLA fp8, expanded K/V of
 * pre-MLA engines), DP attention, MTP tokens per step, eager launches, the overlap scheduler, the
 * GPU catalog; and in the engine: MTP emission, admission reserve, prefix caching, PD. */
#include "harness.h"
#include "engine/sim.h"
#include "engine/sim_pc.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

static int cost_for(sim_params *p, cost_model *c) {
    char err[256] = "";
    int rc = sim_params_cost(p, c, err, sizeof err);
    CHECK_MSG(rc == 0, "sim_params_cost: %s", err);
    return rc;
}

static void set(sim_params *p, const char *k, const char *v) {
    char err[256] = "";
    int rc = sim_params_set(p, k, v, err, sizeof err);
    CHECK_MSG(rc == 0, "--%s %s: %s", k, v, err);
}

TEST(comm_alpha_beta_and_deepep_table) {
    comm_model m;
    comm_init(&m, hw_find("h100"), 0.7, 10e-6, 124e-6);
    /* ring all-reduce in the NVLink domain: alpha + 2 (p-1)/p bytes / (450 GB/s x 0.7) */
    CHECK_NEAR(comm_allreduce_s(&m, 1e6, 8), 10e-6 + 2.0 * 7 / 8 * 1e6 / (450e9 * 0.7), 1e-12);
    CHECK_NEAR(comm_allreduce_s(&m, 1e6, 1), 0, 0);
    /* across nodes: the in-step latency given (a few bytes add nothing measurable) */
    CHECK_NEAR(comm_allreduce_s(&m, 4, 16), 124e-6, 0.1e-6);
    /* ... never below the in-domain one */
    comm_model lo;
    comm_init(&lo, hw_find("h100"), 0.7, 60e-6, 46.5e-6);
    CHECK_NEAR(comm_allreduce_s(&lo, 4, 16), 60e-6, 0.1e-6);
    /* DeepEP low-latency at its benchmark point (128 tokens, hidden 7168, top-8) is its table */
    CHECK_NEAR(comm_deepep_s(&m, 128, 7168, 8, 8, 0, 1), 77e-6, 1e-9);
    CHECK_NEAR(comm_deepep_s(&m, 128, 7168, 8, 8, 1, 1), 114e-6, 1e-9);
    CHECK_NEAR(comm_deepep_s(&m, 128, 7168, 8, 256, 0, 1), 194e-6, 1e-9);
    CHECK_NEAR(comm_deepep_s(&m, 128, 7168, 8, 256, 1, 1), 360e-6, 1e-9);
    /* twice the tokens: the part above the floor doubles */
    CHECK_NEAR(comm_deepep_s(&m, 256, 7168, 8, 32, 0, 1), 10e-6 + 2 * (155e-6 - 10e-6), 1e-9);
    /* normal kernels: 4096 tokens at EP16 over RDMA at 43 GB/s (fp8 + 1/32 scales) */
    double bytes = 4096.0 * 8 * 7168 * (1 + 4.0 / 128);
    CHECK_NEAR(comm_deepep_s(&m, 4096, 7168, 8, 16, 0, 0), 20e-6 + bytes / 43e9, 1e-9);
}

/* Expert parallelism inside a large NVLink domain (GB200 NVL72: 72 GPUs on NVLink, the domain size
 * from the GPU catalog) moves its tokens over NVLink; the same EP 72 on H100 nodes of 8 crosses the
 * NIC. Both at DeepEP's published points: intranode 153/158 GB/s of H800's 200 GB/s per direction. */
TEST(comm_deepep_inside_an_nvl72_domain_is_nvlink) {
    comm_model gb, h1;
    comm_init(&gb, hw_find("gb200"), 0.7, 5e-6, 46.5e-6);
    comm_init(&h1, hw_find("h100"), 0.7, 5e-6, 46.5e-6);
    double tokens = 128, per_disp = 1 + 4.0 / 128;
    double bytes = tokens * 8 * 7168 * per_disp;
    /* GB200's NVLink5: 1.8 TB/s both directions, 900 GB/s one; DeepEP's fraction 153/200 of it */
    double nvl = 900e9 * 153.0 / 200;
    CHECK_NEAR(comm_deepep_s(&gb, tokens, 7168, 8, 72, 0, 1), 10e-6 + bytes / nvl, 1e-9);
    CHECK_NEAR(comm_deepep_s(&gb, 4096, 7168, 8, 72, 0, 0), 20e-6 + 4096 * 8 * 7168 * per_disp / nvl, 1e-9);
    /* across nodes on H100: the RDMA table (between EP 64's 173 us and EP 128's 192 us) */
    double h = comm_deepep_s(&h1, tokens, 7168, 8, 72, 0, 1);
    CHECK(h > 173e-6 && h < 192e-6);
    CHECK(comm_deepep_s(&gb, tokens, 7168, 8, 72, 0, 1) < h / 4);
    /* an all-reduce over 72 GB200s stays a ring in the domain (no inter-node latency) */
    CHECK_NEAR(comm_allreduce_s(&gb, 1e6, 72), 5e-6 + 2.0 * 71 / 72 * 1e6 / (900e9 * 0.7), 1e-12);
    CHECK(comm_allreduce_s(&h1, 1e6, 72) > 46e-6);
    /* and the whole engine: V3 decode at EP 72 with DeepEP costs less communication on NVL72 */
    sim_params p;
    cost_model c;
    cost_batch b;
    cost_step s1, s2;
    double t_comm[2];
    const char *gpu[2] = {"gb200", "h100"};
    for (int i = 0; i < 2; i++) {
        sim_default_params(&p);
        set(&p, "model", "deepseek-v3");
        set(&p, "gpu", gpu[i]);
        set(&p, "engine-profile", "sglang");
        set(&p, "tp", "72"); set(&p, "dp", "72"); set(&p, "ep", "72"); set(&p, "a2a", "deepep");
        char err[256];
        CHECK_MSG(sim_params_cost(&p, &c, err, sizeof err) == 0, "%s", err);
        cost_decode_batch(72 * 64, 2000, &b);
        cost_step_time(&c, &b, i ? &s2 : &s1);
        t_comm[i] = (i ? s2 : s1).t_comm;
        cost_free(&c);
    }
    CHECK_MSG(t_comm[0] < t_comm[1] / 3, "NVL72 comm %.3f ms vs 9 H100 nodes %.3f ms", t_comm[0] * 1e3, t_comm[1] * 1e3);
}

/* TP 16 over two nodes of 8: each layer's two all-reduces (attention out, MoE out) cross the NIC,
 * each at comm_inter_s; TP 8 inside one node never pays it. At one sequence the bytes are a few KB,
 * so the step's communication moves by exactly 61 x 2 x the change of comm_inter_s. */
TEST(cost_tp_across_nodes_pays_comm_inter_per_allreduce) {
    sim_params p;
    cost_model c;
    cost_batch b;
    cost_step s;
    double t_comm[3];
    const char *limit[3] = {"", "", ""};
    const char *tp[3] = {"16", "16", "8"}, *inter[3] = {"46.5us", "134us", "134us"};
    cost_decode_batch(1, 128, &b);
    for (int i = 0; i < 3; i++) {
        sim_default_params(&p);
        set(&p, "model", "deepseek-v3");
        set(&p, "gpu", "h100");
        set(&p, "engine-profile", "sglang");
        set(&p, "tp", tp[i]);
        set(&p, "comm-inter-latency", inter[i]);
        t_comm[i] = NAN;
        if (cost_for(&p, &c) != 0) continue;
        cost_step_time(&c, &b, &s);
        t_comm[i] = s.t_comm;
        limit[i] = cost_step_limit(&s);
        cost_free(&c);
    }
    CHECK_NEAR(t_comm[1] - t_comm[0], 61 * 2 * (134e-6 - 46.5e-6), 1e-6);
    /* the step says what it waits for: across nodes the all-reduces (16 ms of a ~25 ms step),
     * inside one node not */
    CHECK_MSG(!strcmp(limit[1], "communication"), "TP 16 over two nodes at batch 1: %s", limit[1]);
    CHECK_MSG(strcmp(limit[2], "communication") != 0, "TP 8 in one node at batch 1: %s", limit[2]);
    /* inside one node: the in-domain latency, whatever comm_inter_s is */
    sim_default_params(&p);
    CHECK(t_comm[2] < 61 * 2 * 2 * p.factors.comm_latency_s);
}

TEST(cost_kv_layouts) {
    sim_params p;
    cost_model c;
    sim_default_params(&p);
    set(&p, "model", "deepseek-v3");
    set(&p, "tp", "8");
    set(&p, "kv-dtype", "fp8-flashmla");
    if (cost_for(&p, &c) == 0) { CHECK_NEAR(c.kv_bytes_per_token, 61 * 656.0, 0); cost_free(&c); }  /* FlashMLA: 656 B */
    set(&p, "kv-dtype", "fp8");
    if (cost_for(&p, &c) == 0) { CHECK_NEAR(c.kv_bytes_per_token, 61 * 576.0, 0); cost_free(&c); }
    /* a pre-MLA engine expands K and V per head, padded to 192 (vLLM 0.5) or 256 (SGLang + FlashInfer) */
    sim_default_params(&p);
    set(&p, "engine-profile", "vllm-v0");
    if (cost_for(&p, &c) == 0) { CHECK_NEAR(c.kv_bytes_per_token, 27 * 2 * 16 * 192 * 2.0, 0); cost_free(&c); }
    set(&p, "engine-profile", "sglang-2024");
    set(&p, "mla", "off");
    if (cost_for(&p, &c) == 0) { CHECK_NEAR(c.kv_bytes_per_token, 27 * 2 * 16 * 256 * 2.0, 0); cost_free(&c); }
}

TEST(cost_dp_attention_splits_attention_and_kv) {
    sim_params p;
    cost_model a, b;
    sim_default_params(&p);
    set(&p, "model", "deepseek-v3");
    set(&p, "tp", "8");
    if (cost_for(&p, &a) != 0) return;
    set(&p, "dp", "8");
    if (cost_for(&p, &b) != 0) { cost_free(&a); return; }
    /* every rank holds its own sequences' KV: 8x the blocks of a TP-8 instance (less the
     * attention weights each rank now holds whole) */
    CHECK(sim_params_kv_blocks(&p, &b) > 4 * sim_params_kv_blocks(&p, &a));
    cost_batch cb;
    cost_step sa, sb;
    cost_decode_batch(64, 4000, &cb);
    cost_step_time(&a, &cb, &sa);
    cost_step_time(&b, &cb, &sb);
    /* TP 8 reads all 64 sequences' latent KV on every GPU; DP 8 reads 8 per rank */
    CHECK_NEAR(sa.kv_bytes / sb.kv_bytes, (64 * 4000.0 + 64) / (8 * 4000.0 + 8), 0.01);
    cost_free(&a);
    cost_free(&b);
}

/* The same setup at two shard_loss values, the same prefill of `tokens` stepped on each. 0 ok. */
static int shard_pair(sim_params *p, double lo, double hi, int64_t tokens, cost_step *slo, cost_step *shi) {
    char v[32];
    cost_model a, b;
    snprintf(v, sizeof v, "%g", lo);
    set(p, "shard-loss", v);
    if (cost_for(p, &a) != 0) return -1;
    snprintf(v, sizeof v, "%g", hi);
    set(p, "shard-loss", v);
    if (cost_for(p, &b) != 0) { cost_free(&a); return -1; }
    cost_batch cb;
    cost_prefill_batch(tokens, &cb);
    cost_step_time(&a, &cb, slo);
    cost_step_time(&b, &cb, shi);
    cost_free(&a);
    cost_free(&b);
    return 0;
}

/* A GEMM split over w GPUs runs at compute_eff / (1 + shard_loss (w - 1)): on a compute-bound
 * prefill the dense and expert GEMMs' compute time of TP 8 grows by exactly 1 + 7 shard_loss
 * (memory and attention untouched), and with the experts whole per GPU (EP 8) the experts' does not
 * move at all. Each value against the same setup at shard_loss 0. */
TEST(cost_shard_loss_prices_split_gemms) {
    const double loss = 0.5;
    struct { const char *ep; double moe_ways; } lay[] = {{"1", 8}, {"8", 1}};
    for (int l = 0; l < 2; l++) {
        sim_params p;
        sim_default_params(&p);
        set(&p, "model", "deepseek-v3");
        set(&p, "gpu", "h200");
        set(&p, "tp", "8");
        set(&p, "ep", lay[l].ep);
        cost_step sa, sb;
        if (shard_pair(&p, 0, loss, 8192, &sa, &sb) != 0) return;
        CHECK_NEAR(sb.comp_s[COST_ATTN_PROJ] / sa.comp_s[COST_ATTN_PROJ], 1 + loss * 7, 1e-9);
        CHECK_NEAR(sb.comp_s[COST_FFN_DENSE] / sa.comp_s[COST_FFN_DENSE], 1 + loss * 7, 1e-9);
        CHECK_NEAR(sb.comp_s[COST_MOE] / sa.comp_s[COST_MOE], 1 + loss * (lay[l].moe_ways - 1), 1e-9);
        CHECK_NEAR(sb.comp_s[COST_ATTN], sa.comp_s[COST_ATTN], 0);
        for (int k = 0; k < COST_NCOMP; k++) CHECK_NEAR(sb.mem_s[k], sa.mem_s[k], 0);
        /* the 8k prefill is compute-heavy: the step grows */
        CHECK(sb.t > sa.t * 1.2);
    }
    /* one GPU: nothing is split */
    sim_params p;
    sim_default_params(&p);
    set(&p, "model", "deepseek-v2-lite");
    cost_step sa, sb;
    if (shard_pair(&p, 0, 2, 4096, &sa, &sb) != 0) return;
    CHECK_NEAR(sb.t, sa.t, 0);
}

/* One decode step of DeepSeek-V3 at TP 8 on `gpu` with fp8 weights at the CDNA3 floor `floor`
 * (SGLang's profile, or `engine`'s). */
static int v3_decode_on(const char *engine, const char *gpu, const char *floor, int64_t batch, cost_step *s) {
    sim_params p;
    sim_default_params(&p);
    set(&p, "model", "deepseek-v3");
    set(&p, "engine-profile", engine);
    set(&p, "gpu", gpu);
    set(&p, "tp", "8");
    set(&p, "weight-dtype", "fp8");
    set(&p, "moe-floor-cdna3", floor);
    cost_model c;
    if (cost_for(&p, &c) != 0) return -1;
    cost_batch b;
    cost_decode_batch(batch, 1500, &b);
    cost_step_time(&c, &b, s);
    return 0;
}

static int v3_decode(const char *gpu, const char *floor, int64_t batch, cost_step *s) {
    return v3_decode_on("sglang", gpu, floor, batch, s);
}

TEST(cost_cdna3_moe_floor_streams_every_expert) {
    cost_step one, one_off, all, all_off, h, h_off, m, m_off;
    if (v3_decode("mi300x", "1", 1, &one) || v3_decode("mi300x", "0", 1, &one_off) ||
        v3_decode("mi300x", "1", 512, &all) || v3_decode("mi300x", "0", 512, &all_off) ||
        v3_decode("h200", "1", 1, &h) || v3_decode("h200", "0", 1, &h_off) ||
        v3_decode("mi355x", "1", 1, &m) || v3_decode("mi355x", "0", 1, &m_off)) return;
    /* one token on MI300X: the 58 MoE layers each stream all 256 experts' slices (3 x 7168 x 2048
     * fp8 weights / 8 GPUs) at the streaming efficiency, not the 8 touched at the MoE kernel's */
    sim_params d;
    sim_default_params(&d);
    double expert_bytes = 3.0 * 7168 * 2048 / 8;
    CHECK_NEAR(one.mem_s[COST_MOE], 58 * 256 * expert_bytes / (5.3e12 * d.factors.bw_eff), 1e-9);
    CHECK(one_off.mem_s[COST_MOE] < one.mem_s[COST_MOE] / 10);
    CHECK(one.t > one_off.t + 0.5 * one.mem_s[COST_MOE]);
    /* the floor is named as the step's limit, not the bandwidth it does not use */
    CHECK(one.t_moe_floor > 0.8 * one.mem_s[COST_MOE]);
    CHECK_STR(cost_step_limit(&one), "moe-floor");
    CHECK(strcmp(cost_step_limit(&all), "moe-floor") != 0);
    /* 512 tokens touch every expert at the slower grouped-GEMM rate: the floor is not reached */
    CHECK_NEAR(all.t, all_off.t, 0);
    CHECK(all.mem_s[COST_MOE] > one.mem_s[COST_MOE]);
    /* neither Hopper nor CDNA4 (native block-scaled MMA) has it */
    CHECK_NEAR(h.t, h_off.t, 0);
    CHECK_NEAR(m.t, m_off.t, 0);
    /* ATOM's MoE reads the experts at a plain stream's rate on MI300X: at 512 tokens, every expert
     * once and the 4,096 token-expert pairs' bf16 activations in and out, at bw_eff (512 tokens
     * touch all but a hair of an expert: 1e-7 s), where SGLang's grouped GEMM takes longer */
    cost_step atom;
    if (v3_decode_on("atom", "mi300x", "1", 512, &atom)) return;
    CHECK_NEAR(atom.mem_s[COST_MOE], 58 * (256 * expert_bytes + 512 * 8 * 7168 * 2.0 * 2) / (5.3e12 * d.factors.bw_eff), 1e-7);
    CHECK(all.mem_s[COST_MOE] > 2 * atom.mem_s[COST_MOE]);
}

TEST(cost_mtp_tokens_per_step) {
    sim_params p;
    cost_model c;
    sim_default_params(&p);
    set(&p, "mtp", "3");
    set(&p, "mtp-accept", "0.7");
    if (cost_for(&p, &c) == 0) { CHECK_NEAR(cost_mtp_tokens_per_step(&c), 1 + 0.7 + 0.49 + 0.343, 1e-12); cost_free(&c); }
    set(&p, "mtp-accept-len", "2.44");
    if (cost_for(&p, &c) == 0) {
        CHECK_NEAR(cost_mtp_tokens_per_step(&c), 2.44, 0);
        /* the verify step carries 1 + 3 tokens per sequence and the drafts add work */
        cost_batch b1, b4;
        cost_step s1, s4;
        cost_decode_batch(16, 1000, &b1);
        cost_decode_batch_mtp(&c, 16, 1000, &b4);
        CHECK_EQ_INT(b4.tokens, 64);
        cost_step_time(&c, &b1, &s1);
        cost_step_time(&c, &b4, &s4);
        CHECK(s4.t > s1.t);
        cost_free(&c);
    }
}

TEST(cost_eager_and_overlap) {
    sim_params p;
    cost_model c;
    sim_default_params(&p);
    set(&p, "cuda-graphs", "off");
    set(&p, "launch-time", "100us");
    if (cost_for(&p, &c) != 0) return;
    cost_batch b;
    cost_step s;
    cost_decode_batch(1, 100, &b);
    cost_step_time(&c, &b, &s);
    /* eager: the CPU cannot launch faster than kernels x launch time */
    double kernels = 27 * 17 + 26 * 9 + 4;
    CHECK(!s.graphs);
    CHECK_NEAR(s.t, kernels * (100e-6 + p.factors.kernel_s) + p.factors.step_overhead_v1_s + p.factors.seq_overhead_v1_s, 1e-9);
    cost_free(&c);
    /* the overlap scheduler hides the CPU's step behind the GPU's */
    sim_default_params(&p);
    set(&p, "step-overhead", "1ms");
    if (cost_for(&p, &c) != 0) return;
    cost_decode_batch(64, 1000, &b);
    cost_step_time(&c, &b, &s);
    double serial = s.t;
    cost_free(&c);
    set(&p, "overlap-schedule", "on");
    if (cost_for(&p, &c) != 0) return;
    cost_step_time(&c, &b, &s);
    CHECK_NEAR(serial - s.t, 1e-3 + 64 * p.factors.seq_overhead_v1_s, 1e-9);
    cost_free(&c);
}

/* Each engine profile pays its own scheduler: vLLM V1's engine core its per-step and per-sequence
 * costs, vLLM V0 (and the other 2024 schedulers) the fitted ones, TensorRT-LLM's executor its own
 * per-sequence cost. Moving one profile's factor moves that profile's step by exactly that much
 * times what it counts, and no other profile's. */
/* One decode step of `batch` sequences at context 1000 on the setup p (NAN when it does not set
 * up); overlap, when given, gets the profile's overlap scheduler. */
static double decode_step_s(sim_params *p, int64_t batch, int *overlap) {
    cost_model c;
    if (cost_for(p, &c) != 0) return NAN;
    if (overlap) *overlap = c.s.prof.overlap_schedule;
    cost_batch b;
    cost_step s;
    cost_decode_batch(batch, 1000, &b);
    cost_step_time(&c, &b, &s);
    cost_free(&c);
    return s.t;
}

TEST(cost_scheduler_cost_per_profile) {
    static const char *const prof[] = {"vllm-v1", "vllm-v0"};
    for (int i = 0; i < 2; i++) {
        double t[3];
        for (int k = 0; k < 3; k++) {
            sim_params p;
            sim_default_params(&p);
            set(&p, "engine-profile", prof[i]);
            p.factors.step_overhead_s = 5e-3;
            p.factors.seq_overhead_s = 20e-6;
            p.factors.step_overhead_v1_s = 1e-3;
            p.factors.seq_overhead_v1_s = 10e-6;
            if (k == 1) p.factors.step_overhead_v1_s += 2e-3, p.factors.seq_overhead_v1_s += 1e-6;   /* V1's own */
            if (k == 2) p.factors.step_overhead_s += 2e-3, p.factors.seq_overhead_s += 1e-6;         /* the 2024 ones */
            int overlap = -1;
            t[k] = decode_step_s(&p, 64, &overlap);
            if (isnan(t[k])) return;
            CHECK(!overlap);
        }
        bool v1 = i == 0;
        CHECK_NEAR(t[1] - t[0], v1 ? 2e-3 + 64 * 1e-6 : 0, 1e-12);
        CHECK_NEAR(t[2] - t[0], v1 ? 0 : 2e-3 + 64 * 1e-6, 1e-12);
    }
    /* TensorRT-LLM's executor: its own per-sequence cost, the 2024 per-step one */
    sim_params p;
    sim_default_params(&p);
    set(&p, "engine-profile", "trtllm");
    engine_profile pr;
    CHECK(sim_params_profile(&p, &pr) == 0);
    CHECK(cost_seq_overhead_of(&p.factors, pr.sched) == &p.factors.seq_overhead_trt_s);
    CHECK(cost_step_overhead_of(&p.factors, pr.sched) == &p.factors.step_overhead_s);
    /* ATOM's engine core: its own per-step cost (not vLLM V1's, which is fitted on vLLM's rows), V1's
     * per sequence */
    set(&p, "engine-profile", "atom");
    CHECK(sim_params_profile(&p, &pr) == 0);
    CHECK(cost_step_overhead_of(&p.factors, pr.sched) == &p.factors.step_overhead_atom_s);
    CHECK(cost_seq_overhead_of(&p.factors, pr.sched) == &p.factors.seq_overhead_v1_s);
    /* --step-overhead / --seq-overhead: any engine's; the -v1 flags only V1's */
    set(&p, "step-overhead", "3ms");
    set(&p, "seq-overhead", "7us");
    CHECK_NEAR(p.factors.step_overhead_s, 3e-3, 1e-15);
    CHECK_NEAR(p.factors.step_overhead_v1_s, 3e-3, 1e-15);
    CHECK_NEAR(p.factors.step_overhead_atom_s, 3e-3, 1e-15);
    CHECK_NEAR(p.factors.seq_overhead_v1_s, 7e-6, 1e-15);
    set(&p, "step-overhead-v1", "0.5ms");
    set(&p, "seq-overhead-v1", "4us");
    CHECK_NEAR(p.factors.step_overhead_s, 3e-3, 1e-15);
    CHECK_NEAR(p.factors.step_overhead_v1_s, 0.5e-3, 1e-15);
    CHECK_NEAR(p.factors.seq_overhead_s, 7e-6, 1e-15);
    CHECK_NEAR(p.factors.seq_overhead_v1_s, 4e-6, 1e-15);
}

/* The vllm profile (vLLM >= 0.14) is vllm-v1 with async scheduling: the same step as vllm-v1 with
 * --overlap-schedule on, and shorter than vllm-v1's by what the engine core's CPU step hides. */
TEST(cost_vllm_profile_is_v1_with_async_scheduling) {
    double t[3];
    for (int k = 0; k < 3; k++) {
        sim_params p;
        sim_default_params(&p);
        set(&p, "engine-profile", k == 0 ? "vllm" : "vllm-v1");
        if (k == 1) set(&p, "overlap-schedule", "on");
        t[k] = decode_step_s(&p, 16, NULL);
        if (isnan(t[k])) return;
    }
    CHECK_NEAR(t[0], t[1], 1e-12);
    CHECK_MSG(t[2] > t[0] * 1.01, "vllm-v1 %g s, vllm %g s", t[2], t[0]);
}

TEST(hw_catalog_entries) {
    const hw_gpu *b = hw_find("b200"), *h8 = hw_find("h800"), *a4 = hw_find("a100-40g"), *g = hw_find("gb200");
    CHECK(b && h8 && a4 && g && hw_find("h20") && hw_find("rtx3090"));
    if (!b || !h8 || !a4 || !g) return;
    CHECK_NEAR(hw_matmul_flops(b, DT_FP4), 9000e12, 1);
    CHECK_NEAR(hw_matmul_flops(hw_find("h200"), DT_FP4), 1979e12, 1);   /* no fp4 cores: the fp8 path */
    CHECK_NEAR(h8->link_bytes_per_s, 400e9, 1);
    CHECK_NEAR(a4->hbm_bytes_per_s, 1.555e12, 1);
    CHECK_EQ_INT(g->domain_gpus, 72);
    CHECK_NEAR(model_dtype_bytes(DT_FP4), 0.5625, 0);
    model_dtype mx;
    CHECK(model_dtype_parse("mxfp4", DT_BF16, &mx) == 0 && mx == DT_MXFP4);
    CHECK_NEAR(model_dtype_bytes(DT_MXFP4), 4.25 / 8, 0);
    /* AMD Instinct MI355X (the ATOM rows): 288 GB HBM3E at 8 TB/s, 2.5 / 5 / 10 PFLOPS dense
     * bf16 / fp8 / MXFP4, 8 GPUs on Infinity Fabric */
    const hw_gpu *m5 = hw_find("mi355x");
    CHECK(m5 != NULL);
    if (m5) {
        CHECK_NEAR(m5->hbm_bytes_per_s, 8.0e12, 1);
        CHECK_NEAR(hw_matmul_flops(m5, DT_FP4), 10066e12, 1);
        CHECK_NEAR(hw_matmul_flops(m5, DT_FP8), 5033e12, 1);
        CHECK_EQ_INT(m5->domain_gpus, 8);
    }
}

typedef struct { int64_t tokens[64], chunks[64], first_ns[64], sched_ns[64], end_ns[64]; int64_t preempt; } counts;

static void count_ev(void *ctx, const engine_event *ev) {
    counts *c = ctx;
    if (ev->id >= 64) return;
    if (ev->flags & ENGINE_EV_TOKENS) { c->tokens[ev->id] += ev->n_tokens; c->chunks[ev->id]++; }
    if (ev->flags & ENGINE_EV_FIRST) c->first_ns[ev->id] = ev->t_ns;
    if (ev->flags & ENGINE_EV_SCHEDULED) c->sched_ns[ev->id] = ev->t_ns;
    if (ev->flags & ENGINE_EV_FINISHED) c->end_ns[ev->id] = ev->t_ns;
    if (ev->flags & ENGINE_EV_PREEMPTED) c->preempt++;
}

/* Submits reqs[i] at arrive[i] and runs the engine dry. */
static void run_all(engine *e, const engine_request *reqs, const int64_t *arrive, int n, counts *c) {
    int next = 0;
    for (;;) {
        int64_t te = engine_next_event_ns(e), ta = next < n ? arrive[next] : ENGINE_NEVER;
        if (te == ENGINE_NEVER && ta == ENGINE_NEVER) break;
        if (ta <= te) { CHECK(engine_submit(e, &reqs[next], ta) == 0); next++; }
        else engine_advance(e, te, count_ev, c);
    }
}

static engine *make_engine(sim_params *p) {
    char err[256] = "";
    engine *e = engine_sim_create(p, err, sizeof err);
    CHECK_MSG(e != NULL, "engine_sim_create: %s", err);
    return e;
}

/* The engine emits the acceptance length per decode step on average (chunks of several tokens). */
TEST(sim_mtp_emits_accepted_tokens) {
    sim_params p;
    sim_default_params(&p);
    set(&p, "mtp", "2");
    set(&p, "mtp-accept-len", "2.5");
    engine *e = make_engine(&p);
    if (!e) return;
    static counts c;
    memset(&c, 0, sizeof c);
    engine_request r = {.id = 1, .prompt_tokens = 100, .max_tokens = 201, .ignore_eos = true};
    int64_t t0 = 0;
    run_all(e, &r, &t0, 1, &c);
    CHECK_EQ_INT(c.tokens[1], 201);
    /* the first token from the prefill, then 200 tokens in 80 steps of 2.5 on average */
    CHECK_EQ_INT(c.chunks[1], 1 + 80);
    engine_destroy(e);
}

/* Guaranteed-no-evict admission (TensorRT-LLM): with a KV pool too small for every request's
 * whole output, requests wait instead of being preempted; vLLM-style admission preempts. */
TEST(sim_admission_reserve_avoids_preemption) {
    for (int reserve = 0; reserve < 2; reserve++) {
        sim_params p;
        sim_default_params(&p);
        p.num_gpu_blocks = 200;   /* 3,200 tokens */
        if (reserve) set(&p, "engine-profile", "trtllm");
        engine *e = make_engine(&p);
        if (!e) return;
        static counts c;
        memset(&c, 0, sizeof c);
        engine_request reqs[16];
        int64_t at[16];
        for (int i = 0; i < 16; i++) {
            reqs[i] = (engine_request){.id = (uint64_t)i, .prompt_tokens = 200, .max_tokens = 400, .ignore_eos = true};
            at[i] = 0;
        }
        run_all(e, reqs, at, 16, &c);
        for (int i = 0; i < 16; i++) CHECK_EQ_INT(c.tokens[i], 400);
        if (reserve) CHECK_EQ_INT(c.preempt, 0);
        else CHECK(c.preempt > 0);
        engine_destroy(e);
    }
}

/* Prefix caching: a second request with the same 8,192-token prefix skips those blocks' prefill
 * (it is scheduled and done sooner), the hit rate counts them, and without caching nothing hits. */
TEST(sim_prefix_cache_hits_skip_prefill) {
    for (int on = 0; on < 2; on++) {
        sim_params p;
        sim_default_params(&p);
        p.prefix_caching = on;
        engine *e = make_engine(&p);
        if (!e) return;
        static counts c;
        memset(&c, 0, sizeof c);
        engine_request reqs[2];
        int64_t at[2] = {0, 1000000000};   /* the second arrives after the first finished */
        for (int i = 0; i < 2; i++)
            reqs[i] = (engine_request){.id = (uint64_t)i, .prompt_tokens = 8300, .max_tokens = 8, .ignore_eos = true,
                                       .prefix_id = 42, .prefix_len = 8192};
        run_all(e, reqs, at, 2, &c);
        sim_info info;
        CHECK(sim_get_info(e, &info) == 0);
        double ttft0 = (double)(c.first_ns[0] - at[0]), ttft1 = (double)(c.first_ns[1] - at[1]);
        if (on) {
            CHECK_EQ_INT(info.prefix_hit_tokens, 8192);          /* 512 blocks of 16 */
            CHECK_EQ_INT(info.prefix_query_tokens, 16600);
            CHECK(ttft1 < 0.5 * ttft0);                           /* 108 tokens prefilled instead of 8,300 */
            CHECK_EQ_INT(info.prefill_tokens_total, 8300 + 108);
        } else {
            CHECK_EQ_INT(info.prefix_hit_tokens, 0);
            CHECK_NEAR(ttft1, ttft0, 0.01 * ttft0);
        }
        engine_destroy(e);
    }
}

/* PD: the first token arrives when the prompt's KV has crossed the network: prefill step + alpha +
 * bytes / NIC bandwidth; decoding then runs on the decode instance. */
TEST(sim_pd_ttft_includes_kv_transfer) {
    sim_params p, one;
    sim_default_params(&p);
    set(&p, "model", "deepseek-v3");
    set(&p, "tp", "8");
    one = p;
    set(&p, "pd-prefill", "1");
    engine *e = make_engine(&p), *u = make_engine(&one);
    if (!e || !u) { engine_destroy(e); engine_destroy(u); return; }
    static counts c, d;
    memset(&c, 0, sizeof c);
    memset(&d, 0, sizeof d);
    engine_request r = {.id = 3, .prompt_tokens = 4000, .max_tokens = 32, .ignore_eos = true};
    int64_t at = 0;
    run_all(e, &r, &at, 1, &c);
    run_all(u, &r, &at, 1, &d);
    CHECK_EQ_INT(c.tokens[3], 32);
    cost_model cm;
    if (cost_for(&one, &cm) == 0) {
        double transfer = 46.5e-6 + 4000 * cm.kv_bytes_per_token / (50e9 * p.factors.link_eff);
        /* the unified engine's first token is the same prefill step (alone on an idle engine) */
        CHECK_NEAR((c.first_ns[3] - d.first_ns[3]) / 1e9, transfer, 1e-6);
        sim_info info;
        CHECK(sim_get_info(e, &info) == 0 && info.kv_transfers == 1);
        CHECK_NEAR(info.kv_transfer_s, transfer, 1e-6);
        cost_free(&cm);
    }
    engine_destroy(e);
    engine_destroy(u);
}

/* llama.cpp b4747's KV mask is built on the host by the thread that runs the expert loop, samples
 * and wakes the streams (llama_set_inputs before each pass): it moves with the host's speed like
 * those do. A 257-token prompt against an 8,000-cell window: the window's host time is the
 * constants' closed form (per token and cell, per padded row and cell) times the host speed, for
 * --loop-host-speed 1 and 2 and for the uncalibrated median host (a calibrated profile's:
 * sim_calibrate_mask_at_the_host_factor). */
static double mask_part_s(sim_params *p, double window) {
    cost_model c;
    if (cost_for(p, &c) != 0) return NAN;
    cost_batch b;
    memset(&b, 0, sizeof b);
    b.tokens = 257, b.seqs = b.prefill_seqs = 1, b.prefill_pairs = 257.0 * 258 / 2, b.window_keys = window;
    cost_step s;
    cost_step_time(&c, &b, &s);
    double with = s.t_sched;
    b.window_keys = 0;
    cost_step_time(&c, &b, &s);
    cost_free(&c);
    return with - s.t_sched;
}

TEST(sim_llamacpp_mask_moves_with_the_host) {
    const double window = 8000, rows = 288;   /* 257 tokens padded to GGML_KQ_MASK_PAD 32 */
    sim_params p;
    sim_default_params(&p);
    set(&p, "engine-profile", "llamacpp-b4747");
    set(&p, "gpu", "h100");
    const double x0 = p.factors.loop_host_x, per_cell = 257 * p.factors.ggml_mask_s + rows * p.factors.ggml_mask_row_s;
    CHECK(x0 > 0 && per_cell > 0);
    double d0 = mask_part_s(&p, window);
    CHECK_NEAR(d0, window * per_cell * x0, 1e-12);
    set(&p, "loop-host-speed", "1");
    double d1 = mask_part_s(&p, window);
    CHECK_NEAR(d1, window * per_cell, 1e-12);
    set(&p, "loop-host-speed", "2");
    CHECK_NEAR(mask_part_s(&p, window), 2 * d1, 1e-12);
}

/* A llama.cpp profile's requests take llama-server's own path (HTTP, tokenization, the slot's
 * launch) before the engine sees them: the recorded hosts' line, 1.75 ms + 12.6 us a prompt token,
 * until a calibration scales it (sim_calibrate_server_path_from_the_run); a Python server's is its
 * fitted request path, none until set. */
TEST(sim_llamacpp_requests_take_the_servers_path) {
    sim_params p;
    sim_default_params(&p);
    set(&p, "engine-profile", "llamacpp-b4747");
    int64_t fixed = 0;
    double per_token = 0;
    sim_params_add_request_path(&p, &fixed, &per_token);
    CHECK_EQ_INT((int)fixed, (int)llround(COST_SERVER_PATH_S * 1e9));
    CHECK_NEAR(per_token, COST_SERVER_PATH_TOKEN_S * 1e9, 1e-9);
    CHECK_NEAR((fixed + per_token * 1024) / 1e6, 1.75 + 12.6e-3 * 1024, 1e-6);   /* a 1,024-token prompt: 14.65 ms */
    set(&p, "engine-profile", "vllm");
    fixed = 0, per_token = 0;
    sim_params_add_request_path(&p, &fixed, &per_token);
    CHECK_EQ_INT((int)fixed, 0);
    CHECK_NEAR(per_token, 0, 1e-12);
}
