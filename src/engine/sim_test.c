/* sim tests — the simulated engine's event invariants and its physics: bandwidth-bound decode,
 * GPU ratios, saturation with concurrency, preemption under a tiny KV budget, chunked prefill. */
#include "harness.h"
#include "engine/sim.h"
#include "engine/profile.h"
#include "common/rng.h"
#include "engine/sim_run.h"
#include "metrics/summary.h"
#include "dataset/dataset.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MAXR 512

typedef struct {
    int64_t submit_ns[MAXR], first_ns[MAXR], last_ns[MAXR], sched_ns[MAXR];
    int tokens[MAXR], finished[MAXR], firsts[MAXR], preempted[MAXR];
    int64_t last_event_ns;
    int order_errors, after_finish_errors;
    /* ITL samples of requests flagged "watch" */
    int watch[MAXR];
    double itl_s[200000];
    int n_itl;
} trace;

static void on_event(void *ctx, const engine_event *ev) {
    trace *t = ctx;
    int i = (int)ev->id;
    if (ev->t_ns < t->last_event_ns) t->order_errors++;
    t->last_event_ns = ev->t_ns;
    if (t->finished[i]) t->after_finish_errors++;
    if (ev->flags & ENGINE_EV_SCHEDULED) t->sched_ns[i] = ev->t_ns;
    if (ev->flags & ENGINE_EV_PREEMPTED) t->preempted[i]++;
    if (ev->flags & ENGINE_EV_FIRST) { t->firsts[i]++; t->first_ns[i] = ev->t_ns; }
    if (ev->flags & ENGINE_EV_TOKENS) {
        if (t->tokens[i] > 0 && t->watch[i] && t->n_itl < 200000) t->itl_s[t->n_itl++] = (ev->t_ns - t->last_ns[i]) / 1e9;
        t->tokens[i] += ev->n_tokens;
        t->last_ns[i] = ev->t_ns;
    }
    if (ev->flags & ENGINE_EV_FINISHED) t->finished[i] = 1;
}

/* Drives an engine on a virtual clock: request i arrives at arrive_ns[i]. Returns the end time. */
static int64_t drive(engine *e, int n, const int64_t *arrive_ns, const int *prompt, const int *out, trace *t,
                     int64_t *max_waiting) {
    int next = 0;
    int64_t now = 0;
    if (max_waiting) *max_waiting = 0;
    for (;;) {
        int64_t te = engine_next_event_ns(e);
        int64_t ta = next < n ? arrive_ns[next] : ENGINE_NEVER;
        if (te == ENGINE_NEVER && ta == ENGINE_NEVER) break;
        if (ta <= te) {
            now = ta;
            engine_request r = {.id = (uint64_t)next, .prompt_tokens = prompt[next], .max_tokens = out[next], .ignore_eos = true};
            CHECK(engine_submit(e, &r, now) == 0);
            t->submit_ns[next] = now;
            next++;
        } else {
            now = te;
            engine_advance(e, now, on_event, t);
        }
        if (max_waiting) {
            engine_stats st;
            engine_get_stats(e, &st);
            if (st.waiting > *max_waiting) *max_waiting = st.waiting;
        }
    }
    return now;
}

/* Scheduler tests time their loads for a plain roofline with a 1.5 ms step: no per-kernel or
 * per-sequence cost and streaming-rate experts, whatever the fitted defaults are. */
static void plain_costs(sim_params *p) {
    p->factors.step_overhead_s = p->factors.step_overhead_v1_s = p->factors.step_overhead_atom_s = 1.5e-3;
    p->factors.seq_overhead_s = p->factors.seq_overhead_v1_s = p->factors.kernel_s = 0;
    p->factors.moe_eff = p->factors.moe_fused_eff = p->factors.moe_fused_v1_eff = 1;
}

static engine *make(sim_params *p) {
    char err[256] = "";
    engine *e = engine_sim_create(p, err, sizeof err);
    CHECK_MSG(e != NULL, "engine_sim_create: %s", err);
    return e;
}

TEST(sim_event_invariants) {
    sim_params p;
    sim_default_params(&p);
    p.max_num_seqs = 32;
    p.max_num_batched_tokens = 2048;
    engine *e = make(&p);
    if (!e) return;
    static trace t;
    memset(&t, 0, sizeof t);
    int n = 300, prompt[300], out[300];
    int64_t arr[300];
    rng g;
    rng_seed(&g, 7);
    int64_t now = 0;
    for (int i = 0; i < n; i++) {
        prompt[i] = 1 + (int)rng_below(&g, 3000);
        out[i] = 1 + (int)rng_below(&g, 200);
        now += (int64_t)rng_exponential(&g, 20e6);
        arr[i] = now;
    }
    drive(e, n, arr, prompt, out, &t, NULL);
    int bad = 0;
    for (int i = 0; i < n; i++) {
        if (t.tokens[i] != out[i] || !t.finished[i] || t.firsts[i] != 1) bad++;
        if (t.sched_ns[i] < t.submit_ns[i] || t.first_ns[i] <= t.sched_ns[i] || t.last_ns[i] < t.first_ns[i]) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK_EQ_INT(t.order_errors, 0);
    CHECK_EQ_INT(t.after_finish_errors, 0);
    engine_stats st;
    engine_get_stats(e, &st);
    CHECK_EQ_INT(st.running, 0);
    CHECK_EQ_INT(st.waiting, 0);
    CHECK_NEAR(st.kv_usage, 0, 0);
    long long sum_out = 0;
    for (int i = 0; i < n; i++) sum_out += out[i];
    CHECK_EQ_INT(st.generation_tokens_total, sum_out);
    CHECK(engine_next_event_ns(e) == ENGINE_NEVER);
    engine_request big = {.id = 9999, .prompt_tokens = 200000, .max_tokens = 10};
    CHECK(engine_submit(e, &big, now) == -1);   /* longer than max_model_len */
    engine_destroy(e);
}

TEST(sim_cancel_frees_blocks) {
    sim_params p;
    sim_default_params(&p);
    p.max_num_seqs = 4;
    engine *e = make(&p);
    if (!e) return;
    static trace t;
    memset(&t, 0, sizeof t);
    for (int i = 0; i < 10; i++) {
        engine_request r = {.id = (uint64_t)i, .prompt_tokens = 1000, .max_tokens = 500};
        CHECK(engine_submit(e, &r, 0) == 0);
    }
    /* run a few steps: 4 running, 6 waiting */
    for (int k = 0; k < 20; k++) engine_advance(e, engine_next_event_ns(e), on_event, &t);
    engine_stats st;
    engine_get_stats(e, &st);
    CHECK_EQ_INT(st.running, 4);
    CHECK_EQ_INT(st.waiting, 6);
    CHECK(st.kv_usage > 0);
    for (int i = 0; i < 10; i++) engine_cancel(e, (uint64_t)i, t.last_event_ns);
    engine_get_stats(e, &st);
    CHECK_EQ_INT(st.running, 0);
    CHECK_EQ_INT(st.waiting, 0);
    CHECK_NEAR(st.kv_usage, 0, 0);
    engine_advance(e, engine_next_event_ns(e), on_event, &t);  /* the step in flight ends */
    CHECK(engine_next_event_ns(e) == ENGINE_NEVER);
    CHECK_EQ_INT(t.after_finish_errors, 0);
    /* ids are reusable after cancel */
    engine_request r = {.id = 3, .prompt_tokens = 10, .max_tokens = 2};
    CHECK(engine_submit(e, &r, t.last_event_ns + 1) == 0);
    engine_destroy(e);
}

/* Decode at batch 1: every component is bandwidth-bound; the step is the weights (top_k experts
 * at the grouped GEMM's efficiency) and the KV over HBM x bw_eff, plus the kernels of one forward
 * pass and the scheduler (vllm-v1: no overlap). */
TEST(sim_decode_batch1_bandwidth_bound) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    cost_model c;
    CHECK(sim_params_cost(&p, &c, err, sizeof err) == 0);
    cost_batch b;
    cost_step s;
    cost_decode_batch(1, 1000, &b);
    cost_step_time(&c, &b, &s);
    CHECK_EQ_INT(s.bound, COST_BOUND_MEMORY);
    /* the grouped GEMM pads each expert's one token to its 64-row tile, still well below its reads */
    CHECK(s.comp_s[COST_MOE] > 0 && s.comp_s[COST_MOE] < s.mem_s[COST_MOE] / 2);
    /* bytes: everything but routed experts and the embedding table + top_k experts + KV */
    model_params mp;
    model_count_params(model_find("deepseek-v2-lite"), &mp);
    double w_moe = 6 * mp.expert * mp.n_moe_layers * 2, w_rest = (mp.nonexpert - mp.embed) * 2;
    CHECK_NEAR(s.weight_bytes, w_moe + w_rest, (w_moe + w_rest) * 0.001);
    CHECK_NEAR(s.kv_bytes, 1001 * 31104.0, 1);
    double hbm = 4.8e12 * p.factors.bw_eff;
    /* bf16 weights carry no block scales: the tuned grouped GEMM streams at moe_native_eff */
    double me = p.factors.moe_native_eff;
    CHECK(cost_moe_eff_of(&c, &p.factors) == &p.factors.moe_native_eff);
    CHECK_NEAR(s.mem_s[COST_MOE] * hbm * me, w_moe, w_moe * 0.002);   /* + activations */
    CHECK_NEAR(s.t_math, s.t_mem, 1e-12);                                               /* no component compute-bound */
    CHECK_NEAR(s.t_math, (s.bytes - (w_moe + 0)) / hbm + w_moe / (hbm * me), s.t_math * 0.002);
    double kernels = 27 * 17 + 26 * 9 + 4;
    /* the default profile (vLLM V1): its engine core's costs per step and per sequence */
    CHECK_NEAR(s.t - s.t_math, kernels * p.factors.kernel_s + p.factors.step_overhead_v1_s + p.factors.seq_overhead_v1_s, 1e-9);
    /* the engine's step for one decoding request matches */
    engine *e = make(&p);
    static trace t;
    memset(&t, 0, sizeof t);
    t.watch[0] = 1;
    int prompt = 999, out = 20;
    int64_t arr = 0;
    drive(e, 1, &arr, &prompt, &out, &t, NULL);
    CHECK(t.n_itl == 19);
    CHECK_NEAR(t.itl_s[0], s.t, s.t * 0.01);
    engine_destroy(e);
    cost_free(&c);
}

/* Without fixed costs, a bandwidth-bound decode step scales with the HBM bandwidth alone. */
TEST(sim_h200_vs_h100_decode_ratio) {
    sim_params p;
    sim_default_params(&p);
    p.factors.step_overhead_s = p.factors.seq_overhead_s = p.factors.kernel_s = 0;
    p.factors.step_overhead_v1_s = p.factors.seq_overhead_v1_s = 0;
    char err[256];
    cost_model a, b;
    CHECK(sim_params_cost(&p, &a, err, sizeof err) == 0);
    snprintf(p.gpu, sizeof p.gpu, "h100");
    CHECK(sim_params_cost(&p, &b, err, sizeof err) == 0);
    cost_batch cb;
    cost_step sa, sb;
    cost_decode_batch(8, 2000, &cb);
    cost_step_time(&a, &cb, &sa);
    cost_step_time(&b, &cb, &sb);
    CHECK_NEAR(sa.t / sb.t, 3.35 / 4.8, 0.005);
    cost_free(&a);
    cost_free(&b);
}

/* Output throughput with n requests all present at t=0 (closed loop at concurrency n). */
static double throughput_at(int n, int max_seqs) {
    sim_params p;
    sim_default_params(&p);
    p.max_num_seqs = max_seqs;
    engine *e = make(&p);
    static trace t;
    memset(&t, 0, sizeof t);
    int prompt[MAXR], out[MAXR];
    int64_t arr[MAXR];
    for (int i = 0; i < n; i++) { prompt[i] = 512; out[i] = 256; arr[i] = 0; }
    int64_t end = drive(e, n, arr, prompt, out, &t, NULL);
    engine_destroy(e);
    return n * 256.0 / (end / 1e9);
}

TEST(sim_throughput_rises_then_saturates) {
    double t1 = throughput_at(1, 64), t8 = throughput_at(8, 64), t64 = throughput_at(64, 64);
    double t128 = throughput_at(128, 64), t256 = throughput_at(256, 64);
    /* MoE: 8 sequences touch ~35 of 64 experts instead of 6, so less than 8x */
    CHECK_MSG(t8 > 3 * t1, "t1 %.0f t8 %.0f", t1, t8);
    CHECK_MSG(t64 > 2 * t8, "t8 %.0f t64 %.0f", t8, t64);
    /* beyond max_num_seqs the extra requests only queue */
    CHECK_MSG(fabs(t256 / t128 - 1) < 0.05, "t128 %.0f t256 %.0f", t128, t256);
    CHECK_MSG(t128 < 1.15 * t64, "t64 %.0f t128 %.0f", t64, t128);
    if (getenv("SIM_TEST_VERBOSE")) printf("tok/s: 1 %.0f, 8 %.0f, 64 %.0f, 128 %.0f, 256 %.0f\n", t1, t8, t64, t128, t256);
}

TEST(sim_tiny_kv_preempts_and_queues) {
    sim_params p;
    sim_default_params(&p);
    p.num_gpu_blocks = 400;   /* 6400 tokens: 64 requests of 1024 + 128 need 9216 */
    engine *e = make(&p);
    static trace t;
    memset(&t, 0, sizeof t);
    int prompt[64], out[64];
    int64_t arr[64];
    for (int i = 0; i < 64; i++) { prompt[i] = 1024; out[i] = 128; arr[i] = i * 1000000LL; }
    int64_t maxw;
    drive(e, 64, arr, prompt, out, &t, &maxw);
    engine_stats st;
    engine_get_stats(e, &st);
    CHECK(st.preemptions_total > 0);
    CHECK(maxw > 20);
    int done = 0;
    for (int i = 0; i < 64; i++) done += t.finished[i] && t.tokens[i] == 128;
    CHECK_EQ_INT(done, 64);
    /* with the default KV budget the same load neither preempts nor leaves anyone waiting long */
    sim_params q;
    sim_default_params(&q);
    engine *e2 = make(&q);
    memset(&t, 0, sizeof t);
    drive(e2, 64, arr, prompt, out, &t, &maxw);
    engine_get_stats(e2, &st);
    CHECK_EQ_INT(st.preemptions_total, 0);
    engine_destroy(e);
    engine_destroy(e2);
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double p99(double *v, int n) {
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n ? v[(int)(0.99 * (n - 1))] : 0;
}

/* 32 decoding requests; long prompts arrive while they decode. Without chunked prefill each
 * 8k prompt is a prefill-only step that stalls every decoder. */
static double itl_p99_with(bool chunked) {
    sim_params p;
    sim_default_params(&p);
    p.chunked_prefill = chunked;
    p.max_num_batched_tokens = chunked ? 1024 : 8192;
    engine *e = make(&p);
    static trace t;
    memset(&t, 0, sizeof t);
    int n = 48, prompt[48], out[48];
    int64_t arr[48];
    for (int i = 0; i < 32; i++) { prompt[i] = 128; out[i] = 400; arr[i] = 0; t.watch[i] = 1; }
    for (int i = 32; i < n; i++) { prompt[i] = 8000; out[i] = 4; arr[i] = 100000000LL + (i - 32) * 150000000LL; }
    drive(e, n, arr, prompt, out, &t, NULL);
    engine_destroy(e);
    return p99(t.itl_s, t.n_itl);
}

TEST(sim_chunked_prefill_lowers_itl_tail) {
    double off = itl_p99_with(false), on = itl_p99_with(true);
    if (getenv("SIM_TEST_VERBOSE")) printf("p99 ITL chunked %.2fms unchunked %.2fms\n", on * 1e3, off * 1e3);
    CHECK_MSG(on < off * 0.7, "p99 ITL chunked %.2fms vs unchunked %.2fms", on * 1e3, off * 1e3);
}

TEST(sim_params_parse) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    CHECK(sim_params_set(&p, "model", "deepseek-v3", err, sizeof err) == 0);
    CHECK(sim_params_set(&p, "tp", "8", err, sizeof err) == 0);
    CHECK(sim_params_set(&p, "kv-dtype", "fp8", err, sizeof err) == 0);
    CHECK(sim_params_set(&p, "hbm-bw", "4.8TB/s", err, sizeof err) == 0);
    CHECK_NEAR(p.hbm_bytes_per_s, 4.8e12, 1);
    CHECK(sim_params_set(&p, "bf16-flops", "989T", err, sizeof err) == 0);
    CHECK_NEAR(p.bf16_flops, 989e12, 1);
    CHECK(sim_params_set(&p, "step-overhead", "2ms", err, sizeof err) == 0);
    CHECK_NEAR(p.factors.step_overhead_s, 2e-3, 1e-12);
    CHECK(sim_params_set(&p, "chunked-prefill", "off", err, sizeof err) == 0 && !p.chunked_prefill);
    CHECK(sim_params_set(&p, "flash-attention", "off", err, sizeof err) == 0 && p.factors.no_flash_attention);
    CHECK(sim_params_set(&p, "gpu-memory-utilization", "1.5", err, sizeof err) == -1);
    CHECK(strstr(err, "gpu-memory-utilization") != NULL);
    CHECK(sim_params_set(&p, "model", "gpt-5", err, sizeof err) == -1);
    CHECK(sim_params_set(&p, "no-such-option", "1", err, sizeof err) == 1);
    /* V3 fp8 on 8 x H200 fits; on one it does not */
    engine *e = engine_sim_create(&p, err, sizeof err);
    CHECK_MSG(e != NULL, "%s", err);
    engine_destroy(e);
    p.tp = 1;
    CHECK(engine_sim_create(&p, err, sizeof err) == NULL);
    CHECK(strstr(err, "does not fit") != NULL);
}

TEST(sim_run_records_open_and_closed_loop) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    enum { N = 200 };
    int64_t arr[N];
    int32_t in[N], out[N];
    for (int i = 0; i < N; i++) { arr[i] = i * 20000000LL; in[i] = 100 + i; out[i] = 1 + i % 50; }
    in[7] = 10000000;   /* beyond the model length: rejected, recorded as a failure */
    engine *e = make(&p);
    recset rs;
    recset_init(&rs);
    sim_series ser;
    sim_workload w = {.n = N, .arrival_ns = arr, .in_tokens = in, .max_tokens = out, .max_series_points = 64};
    CHECK(sim_run(e, &w, &rs, &ser, err, sizeof err) == 0);
    CHECK_EQ_INT(rs.n, N);
    int bad = 0;
    for (int i = 0; i < N; i++) {
        record *r = &rs.v[i];
        if (i == 7) { CHECK(r->outcome == REC_ERR_HTTP && r->http_status == 400 && r->error); continue; }
        if (r->outcome != REC_OK || (int)r->n_chunks != out[i] || record_out_tokens(r) != out[i]) bad++;
        if (r->sched_ns != SIM_RUN_T0_NS + arr[i] || r->send_ns != r->sched_ns || r->first_ns <= r->send_ns) bad++;
        if (r->last_ns != r->chunk_ns[r->n_chunks - 1] || r->end_ns != r->last_ns || r->in_tokens != in[i]) bad++;
    }
    CHECK_EQ_INT(bad, 0);
    CHECK(ser.n > 4 && ser.n <= 64);
    int saw_running = 0;
    for (size_t i = 0; i < ser.n; i++) saw_running |= ser.running[i] > 0;
    CHECK(saw_running);
    json_t *j = sim_series_json(&ser);
    CHECK(json_array_size(json_object_get(j, "kv_usage")) == ser.n);
    json_decref(j);
    sim_series_free(&ser);
    recset_free(&rs);
    engine_destroy(e);

    /* closed loop: never more than `concurrency` requests between send and end */
    e = make(&p);
    recset_init(&rs);
    in[7] = 100;
    sim_workload c = {.n = N, .concurrency = 5, .in_tokens = in, .max_tokens = out};
    CHECK(sim_run(e, &c, &rs, NULL, err, sizeof err) == 0);
    int maxc = 0;
    for (int i = 0; i < N; i++) {
        int k = 0;
        for (int j = 0; j < N; j++) k += rs.v[j].send_ns <= rs.v[i].send_ns && rs.v[j].end_ns > rs.v[i].send_ns;
        if (k > maxc) maxc = k;
        CHECK(rs.v[i].outcome == REC_OK);
    }
    CHECK_EQ_INT(maxc, 5);
    recset_free(&rs);
    engine_destroy(e);
}

/* sim draws the same request lengths as bench's dataset for the same seed, without the text. */
TEST(sim_workload_matches_dataset) {
    const char *spec = "random:in=300,out=40,range=0.3";
    size_t n = 50;
    int32_t *ins, *outs;
    int64_t *ts;
    char err[256];
    CHECK(sim_workload_lengths(spec, &n, 42, 128, &ins, &outs, &ts, err, sizeof err) == 0);
    dataset *d;
    CHECK(dataset_open(spec, 50, 42, NULL, &d, err, sizeof err) == 0);
    int same = 0;
    for (size_t i = 0; i < 50; i++) same += ins[i] == d->items[i].in_tokens && outs[i] == d->items[i].max_tokens;
    CHECK_EQ_INT(same, 50);
    CHECK(ts == NULL);
    dataset_free(d);
    free(ins);
    free(outs);
    /* jsonl: lengths by the word counter, default max_tokens, timestamps, cycling */
    char path[512];
    snprintf(path, sizeof path, "%s/w.jsonl", harness_tmpdir());
    FILE *f = fopen(path, "w");
    CHECK(f != NULL);
    if (!f) return;
    fputs("{\"prompt\":\"one two three\",\"max_tokens\":7,\"timestamp\":1.5}\n"
          "{\"messages\":[{\"role\":\"user\",\"content\":\"a b\"}],\"timestamp\":2.0}\n", f);
    fclose(f);
    char spec2[600];
    snprintf(spec2, sizeof spec2, "jsonl:%s", path);
    n = 5;
    CHECK(sim_workload_lengths(spec2, &n, 1, 99, &ins, &outs, &ts, err, sizeof err) == 0);
    CHECK(ins[0] == 3 && outs[0] == 7 && ins[1] == 2 && outs[1] == 99 && ins[4] == 3);
    CHECK(ts && ts[0] == 1500000000LL && ts[1] == 2000000000LL && ts[2] == 1500000000LL);
    free(ins);
    free(outs);
    free(ts);
}

/* lognormal: the totals are n x the means (what a published run gives), the prompts spread;
 * out_sigma=0 fixes every output at its mean (vllm bench serve --sharegpt-output-len), the
 * default spreads the outputs like the prompts; a negative or unknown key is refused. */
TEST(sim_workload_lognormal_totals_and_fixed_outputs) {
    char err[256];
    for (int fixed = 0; fixed < 2; fixed++) {
        const char *spec = fixed ? "lognormal:in=227,out=300,sigma=1,out_sigma=0,max_in=1024,max_total=2048"
                                 : "lognormal:in=227,out=300,sigma=1,max_in=1024,max_total=2048";
        size_t n = 1000;
        int32_t *ins = NULL, *outs = NULL;
        int64_t *ts = NULL;
        CHECK_MSG(sim_workload_lengths(spec, &n, 7, 128, &ins, &outs, &ts, err, sizeof err) == 0, "%s", err);
        if (!ins || !outs) return;
        double si = 0, so = 0;
        int32_t omin = outs[0], omax = outs[0], imin = ins[0], imax = ins[0];
        for (size_t i = 0; i < n; i++) {
            si += ins[i];
            so += outs[i];
            if (outs[i] < omin) omin = outs[i];
            if (outs[i] > omax) omax = outs[i];
            if (ins[i] < imin) imin = ins[i];
            if (ins[i] > imax) imax = ins[i];
        }
        CHECK_MSG(fabs(si / n - 227) < 1 && fabs(so / n - 300) < 1, "means %g in, %g out", si / n, so / n);
        CHECK_MSG(imax > 4 * imin, "prompts do not spread: %d .. %d", imin, imax);
        if (fixed) CHECK_MSG(omin == 300 && omax == 300, "fixed outputs %d .. %d", omin, omax);
        else CHECK_MSG(omax > 4 * omin, "outputs do not spread: %d .. %d", omin, omax);
        free(ins);
        free(outs);
        free(ts);
    }
    size_t n = 4;
    int32_t *ins = NULL, *outs = NULL;
    int64_t *ts = NULL;
    CHECK(sim_workload_lengths("lognormal:in=227,out=300,out_sigma=-1", &n, 7, 128, &ins, &outs, &ts, err, sizeof err) < 0);
    CHECK(sim_workload_lengths("lognormal:in=227,out=300,sigma=0", &n, 7, 128, &ins, &outs, &ts, err, sizeof err) < 0);
}

/* A stall fault delays one request's next token; the others keep decoding. */
TEST(sim_stall_fault_delays_one_request) {
    sim_params p;
    sim_default_params(&p);
    plain_costs(&p);
    engine *e = make(&p);
    static trace t;
    memset(&t, 0, sizeof t);
    t.watch[0] = t.watch[1] = 1;
    engine_request a = {.id = 0, .prompt_tokens = 100, .max_tokens = 20, .stall_after = 5, .stall_ns = 500000000};
    engine_request b = {.id = 1, .prompt_tokens = 100, .max_tokens = 20};
    CHECK(engine_submit(e, &a, 0) == 0);
    CHECK(engine_submit(e, &b, 0) == 0);
    for (int64_t now = 0; (now = engine_next_event_ns(e)) != ENGINE_NEVER;) engine_advance(e, now, on_event, &t);
    CHECK(t.finished[0] && t.finished[1] && t.tokens[0] == 20 && t.tokens[1] == 20);
    /* request 0's total time includes the 0.5 s stall, request 1's does not */
    CHECK((t.last_ns[0] - t.first_ns[0]) > 500000000LL);
    CHECK((t.last_ns[1] - t.first_ns[1]) < 200000000LL);
    double maxgap = 0;
    for (int i = 0; i < t.n_itl; i++) if (t.itl_s[i] > maxgap) maxgap = t.itl_s[i];
    CHECK_NEAR(maxgap, 0.5, 0.01);
    engine_destroy(e);
}

/* fp8 KV doubles the engine's blocks; the model's step does not depend on the KV budget. */
TEST(sim_fp8_kv_doubles_blocks) {
    sim_params p;
    sim_default_params(&p);
    engine *a = make(&p);
    snprintf(p.kv_dtype, sizeof p.kv_dtype, "fp8");
    engine *b = make(&p);
    sim_info ia, ib;
    CHECK(sim_get_info(a, &ia) == 0 && sim_get_info(b, &ib) == 0);
    CHECK_NEAR((double)ib.total_blocks / ia.total_blocks, 2.0, 1e-4);
    CHECK_NEAR(ia.kv_bytes_per_token, 31104, 0);
    CHECK_NEAR(ib.kv_bytes_per_token, 15552, 0);
    engine_destroy(a);
    engine_destroy(b);
}

/* Without flash attention the prefill's score matrix goes through HBM: heads x pairs x 2 bytes,
 * written and read twice, every layer. */
TEST(sim_no_flash_attention_adds_score_traffic) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    cost_model a, b;
    CHECK(sim_params_cost(&p, &a, err, sizeof err) == 0);
    p.factors.no_flash_attention = 1;
    CHECK(sim_params_cost(&p, &b, err, sizeof err) == 0);
    cost_batch cb;
    cost_step sa, sb;
    cost_prefill_batch(4096, &cb);
    cost_step_time(&a, &cb, &sa);
    cost_step_time(&b, &cb, &sb);
    CHECK_NEAR(sb.bytes - sa.bytes, 4096.0 * 4097 / 2 * 27 * 16 * 2 * 4, 1);
    CHECK(sb.t >= sa.t);
    cost_free(&a);
    cost_free(&b);
}

/* Under overload, priority scheduling serves the high-priority class first; fcfs does not care. */
static void mean_ttft_by_class(bool priority, double *hi, double *lo) {
    sim_params p;
    sim_default_params(&p);
    plain_costs(&p);
    p.max_num_seqs = 8;
    p.priority_scheduling = priority;
    engine *e = make(&p);
    static trace t;
    memset(&t, 0, sizeof t);
    int n = 200;
    int64_t now = 0;
    int next = 0;
    for (;;) {
        int64_t te = engine_next_event_ns(e), ta = next < n ? next * 2000000LL : ENGINE_NEVER;
        if (te == ENGINE_NEVER && ta == ENGINE_NEVER) break;
        if (ta <= te) {
            now = ta;
            engine_request r = {.id = (uint64_t)next, .prompt_tokens = 256, .max_tokens = 64, .priority = next % 4 == 0 ? 0 : 1};
            CHECK(engine_submit(e, &r, now) == 0);
            t.submit_ns[next++] = now;
        } else {
            engine_advance(e, now = te, on_event, &t);
        }
    }
    double sh = 0, sl = 0;
    for (int i = 0; i < n; i++) {
        double ttft = (t.first_ns[i] - t.submit_ns[i]) / 1e9;
        if (i % 4 == 0) sh += ttft; else sl += ttft;
        CHECK(t.finished[i] && t.tokens[i] == 64);
    }
    *hi = sh / (n / 4);
    *lo = sl / (n - n / 4);
    engine_destroy(e);
}

TEST(sim_priority_scheduling) {
    double fh, fl, ph, pl;
    mean_ttft_by_class(false, &fh, &fl);
    mean_ttft_by_class(true, &ph, &pl);
    CHECK_MSG(fabs(fh / fl - 1) < 0.25, "fcfs: high %.3fs low %.3fs", fh, fl);
    CHECK_MSG(ph < 0.2 * pl, "priority: high %.3fs low %.3fs", ph, pl);
    CHECK(pl > fl);   /* the low class pays for it */
}

/* Open loop with a concurrency cap: never more in flight than the cap, the excess waits in the
 * client queue and that wait is in the records (send - sched). Closed loop think time spaces a
 * user's requests. */
TEST(sim_run_max_concurrency_and_think) {
    sim_params p;
    sim_default_params(&p);
    plain_costs(&p);
    char err[256];
    enum { N = 120 };
    int64_t arr[N];
    int32_t in[N], out[N];
    for (int i = 0; i < N; i++) { arr[i] = i * 5000000LL; in[i] = 512; out[i] = 100; }
    engine *e = make(&p);
    recset rs;
    recset_init(&rs);
    sim_workload w = {.n = N, .arrival_ns = arr, .max_concurrency = 3, .in_tokens = in, .max_tokens = out};
    CHECK(sim_run(e, &w, &rs, NULL, err, sizeof err) == 0);
    int maxc = 0, queued = 0;
    for (int i = 0; i < N; i++) {
        int k = 0;
        for (int j = 0; j < N; j++) k += rs.v[j].send_ns <= rs.v[i].send_ns && rs.v[j].end_ns > rs.v[i].send_ns;
        if (k > maxc) maxc = k;
        queued += rs.v[i].send_ns > rs.v[i].sched_ns;
        CHECK(rs.v[i].sched_ns == SIM_RUN_T0_NS + arr[i] && rs.v[i].outcome == REC_OK);
    }
    CHECK_EQ_INT(maxc, 3);
    CHECK(queued > N / 2);
    recset_free(&rs);
    engine_destroy(e);
    /* closed loop, 2 users, 1 s think: 10 requests per user need at least 9 s of thinking */
    e = make(&p);
    recset_init(&rs);
    sim_workload c = {.n = 20, .concurrency = 2, .think_ns = 1000000000LL, .in_tokens = in, .max_tokens = out};
    CHECK(sim_run(e, &c, &rs, NULL, err, sizeof err) == 0);
    int64_t end = 0;
    for (int i = 0; i < 20; i++) if (rs.v[i].end_ns > end) end = rs.v[i].end_ns;
    CHECK((end - SIM_RUN_T0_NS) / 1e9 > 9.0);
    CHECK((end - SIM_RUN_T0_NS) / 1e9 < 9.0 + 10 * 1.0);  /* each request well under a second */
    recset_free(&rs);
    engine_destroy(e);
}

/* Distinct end times among requests [a, b). */
static int distinct_ends(const recset *rs, size_t a, size_t b) {
    int n = 0;
    for (size_t i = a; i < b; i++) {
        int seen = 0;
        for (size_t j = a; j < i && !seen; j++) seen = rs->v[j].end_ns == rs->v[i].end_ns;
        n += !seen;
    }
    return n;
}

/* A closed loop of fixed lengths whose prompts all fit one step's budget: straight into the
 * engine, every user of a wave finishes in the same step (lockstep on the virtual clock); with the
 * transit a real client and server have (a seeded turnaround), some users miss a step boundary
 * and the waves break up, as they do against a real engine. Seeded: the same seed, the same run. */
TEST(sim_transit_breaks_closed_loop_lockstep) {
    enum { U = 32, N = 32 * 12 };
    static int32_t in[N], out[N];
    for (int i = 0; i < N; i++) { in[i] = 200; out[i] = 64; }
    sim_params p;
    sim_default_params(&p);
    char err[256];
    int ends[2];
    int64_t last_end[3];
    for (int k = 0; k < 3; k++) {
        engine *e = make(&p);
        recset rs;
        recset_init(&rs);
        sim_workload w = {.n = N, .concurrency = U, .in_tokens = in, .max_tokens = out};
        if (k) { w.turnaround_ns = SIM_TURNAROUND_NS; w.ingest_ns_per_token = SIM_INGEST_NS_PER_TOKEN; w.transit_seed = 7; }
        CHECK_MSG(e && sim_run(e, &w, &rs, NULL, err, sizeof err) == 0, "%s", err);
        if (k < 2) ends[k] = distinct_ends(&rs, N - U, N);   /* the last wave */
        last_end[k] = 0;
        for (size_t i = 0; i < rs.n; i++) {
            CHECK(rs.v[i].outcome == REC_OK);
            if (rs.v[i].end_ns > last_end[k]) last_end[k] = rs.v[i].end_ns;
            /* the record keeps the client's send; the engine saw the request later, never earlier */
            if (k) CHECK(rs.v[i].first_ns > rs.v[i].send_ns);
        }
        recset_free(&rs);
        engine_destroy(e);
    }
    CHECK_MSG(ends[0] == 1, "without transit the last wave ends at %d times (lockstep: 1)", ends[0]);
    CHECK_MSG(ends[1] >= 2, "with transit the last wave still ends at only %d time(s)", ends[1]);
    CHECK(last_end[1] == last_end[2]);   /* seeded */
}

/* A burst of same-timestamp requests, one long prompt first: straight in, the long one takes the
 * step's whole token budget and the short ones wait behind it; over the transit (as over HTTP,
 * where `serve --engine sim` admits a request when its body is in) the short bodies reach the
 * engine first and get their first token before the long prompt's. */
TEST(sim_transit_burst_small_bodies_first) {
    enum { N = 4 };
    int32_t in[N] = {20000, 100, 100, 100}, out[N] = {8, 8, 8, 8};
    int64_t arr[N] = {0, 0, 0, 0};
    sim_params p;
    sim_default_params(&p);
    char err[256];
    for (int k = 0; k < 2; k++) {
        engine *e = make(&p);
        recset rs;
        recset_init(&rs);
        sim_workload w = {.n = N, .arrival_ns = arr, .in_tokens = in, .max_tokens = out};
        if (k) { w.ingest_ns_per_token = SIM_INGEST_NS_PER_TOKEN; }
        CHECK_MSG(e && sim_run(e, &w, &rs, NULL, err, sizeof err) == 0, "%s", err);
        for (int i = 1; i < N; i++) {
            if (k) CHECK_MSG(rs.v[i].first_ns < rs.v[0].first_ns, "short %d first token after the long prompt's", i);
            else CHECK_MSG(rs.v[i].first_ns > rs.v[0].send_ns + 1000000, "short %d was not held behind the long prompt", i);
        }
        /* every send is the burst's timestamp: the transit is the server's side, not the client's */
        for (int i = 0; i < N; i++) CHECK(rs.v[i].send_ns == rs.v[0].send_ns);
        recset_free(&rs);
        engine_destroy(e);
    }
}

/* Block-scaled weights (fp8) on a GPU whose tensor cores do not take block scales (H200) read the
 * experts at moe_eff; on B200 and MI355X (fp4 tensor cores: native block-scaled MMA) and for bf16
 * weights at moe_native_eff; the Triton and llama.cpp kernels keep their own. SGLang's swapAB
 * fused MoE (profile sglang) streams TP-sharded fp8 experts natively on Hopper only: not on
 * MI300X, not under DeepEP, not with --moe-kernel tuned. The 2025 Triton fused MoE (--moe-kernel
 * fused: SGLang before 0.5.7, vLLM 0.7) and vLLM V1's (its default) have their own efficiencies on
 * exactly those experts (Hopper, fp8, no DeepEP) and are the tuned kind elsewhere. */
TEST(sim_moe_eff_follows_native_block_scaling) {
    static const struct { const char *gpu, *dtype, *prof, *key, *val; int want; } cases[] = {
        {"h200", "fp8", "sglang", NULL, NULL, 1}, {"h20", "fp8", "sglang", NULL, NULL, 1},
        {"h200", "fp8", "sglang", "moe-kernel", "tuned", 0}, {"h200", "fp8", "sglang", "a2a", "deepep", 0},
        {"h200", "fp8", "sglang", "moe-kernel", "fused", 4}, {"h20", "fp8", "vllm-v1", NULL, NULL, 5},
        {"h200", "fp8", "vllm-v0", "moe-kernel", "fused", 4}, {"mi300x", "fp8", "vllm-v0", "moe-kernel", "fused", 0},
        {"h200", "fp8", "vllm-v1", "a2a", "deepep", 0}, {"mi300x", "fp8", "vllm-v1", NULL, NULL, 0},
        {"h200", "bf16", "vllm-v1", NULL, NULL, 1}, {"b200", "fp8", "vllm-v1", NULL, NULL, 1},
        {"h200", "fp8", "vllm-v1", "moe-kernel", "swapab", 1}, {"mi300x", "fp8", "sglang", NULL, NULL, 0},
        {"b200", "fp8", "sglang", NULL, NULL, 1}, {"mi355x", "mxfp4", "vllm-v1", NULL, NULL, 1},
        {"h200", "bf16", "sglang", NULL, NULL, 1}, {"h200", "fp4", "trtllm", NULL, NULL, 0},
        {"h200", "fp8", "sglang-v0.4", NULL, NULL, 2}, {"rtx4090", "q4", "llamacpp", NULL, NULL, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        sim_params p;
        sim_default_params(&p);
        char err[256];
        CHECK(sim_params_set(&p, "model", "deepseek-v2-lite", err, sizeof err) == 0);
        CHECK(sim_params_set(&p, "gpu", cases[i].gpu, err, sizeof err) == 0);
        CHECK(sim_params_set(&p, "weight-dtype", cases[i].dtype, err, sizeof err) == 0);
        CHECK(sim_params_set(&p, "engine-profile", cases[i].prof, err, sizeof err) == 0);
        if (cases[i].key) CHECK_MSG(sim_params_set(&p, cases[i].key, cases[i].val, err, sizeof err) == 0, "%s", err);
        cost_model c;
        CHECK_MSG(sim_params_cost(&p, &c, err, sizeof err) == 0, "%s", err);
        double *e = cost_moe_eff_of(&c, &p.factors);
        const double *want = cases[i].want == 0 ? &p.factors.moe_eff : cases[i].want == 1 ? &p.factors.moe_native_eff
                           : cases[i].want == 2 ? &p.factors.moe_triton_fp8_eff
                           : cases[i].want == 4 ? &p.factors.moe_fused_eff
                           : cases[i].want == 5 ? &p.factors.moe_fused_v1_eff : NULL;
        CHECK_MSG(e == want, "%s %s %s %s: wrong MoE efficiency", cases[i].gpu, cases[i].dtype, cases[i].prof, cases[i].val ? cases[i].val : "");
        /* the step reads the experts at that efficiency: a decode step on it moves with it */
        cost_batch b;
        cost_step s1, s2;
        cost_decode_batch(64, 1000, &b);
        cost_step_time(&c, &b, &s1);
        if (e) {
            cost_free(&c);
            *e *= 0.5;
            CHECK(sim_params_cost(&p, &c, err, sizeof err) == 0);
            cost_step_time(&c, &b, &s2);
            CHECK_MSG(s2.mem_s[COST_MOE] > 1.9 * s1.mem_s[COST_MOE], "%s: experts' reads did not follow the efficiency", cases[i].gpu);
        }
        cost_free(&c);
    }
}

/* One request (128 prompt, 400 out) decodes from t = 0; a second (prompt2 tokens, 4 out) arrives
 * at 60 ms, mid-decode. Returns the trace (the decoder watched). */
static const trace *mid_decode_arrival_of(sim_params *p, int prompt2, int64_t *arrival_ns) {
    engine *e = make(p);
    static trace t;
    memset(&t, 0, sizeof t);
    int prompt[2] = {128, prompt2}, out[2] = {400, 4};
    int64_t arr[2] = {0, 60000000LL};
    t.watch[0] = 1;
    drive(e, 2, arr, prompt, out, &t, NULL);
    engine_destroy(e);
    *arrival_ns = arr[1];
    return &t;
}

static const trace *mid_decode_arrival(sim_params *p, int64_t *arrival_ns) { return mid_decode_arrival_of(p, 64, arrival_ns); }

/* The decoder's k-th step start (k = 0: its first token), rebuilt from its stored ITLs; -1 past the end. */
static int64_t decoder_step_start(const trace *t, int k) {
    if (k > t->n_itl) return -1;
    int64_t b = t->first_ns[0];
    for (int i = 0; i < k; i++) b += (int64_t)llround(t->itl_s[i] * 1e9);
    return b;
}

/* --scheduler-recv-interval N: one request decodes; a second arrives mid-decode and is admitted
 * only at the scheduler's next look, which comes after the first request's prefill step and then
 * every N decode steps (step starts b_0 = its first token, b_N, b_2N, ...); with N = 1 at the
 * next step. The step starts are the decoder's token times, so the admission time is exact. */
static void recv_interval_case(int interval, int64_t *sched_ns, int64_t *expect_ns) {
    sim_params p;
    sim_default_params(&p);
    plain_costs(&p);
    p.recv_interval_steps = interval;
    int64_t arr;
    const trace *t = mid_decode_arrival(&p, &arr);
    *sched_ns = t->sched_ns[1];
    *expect_ns = -1;
    for (int k = 0; k <= t->n_itl; k++) {
        int64_t b = decoder_step_start(t, k);
        if (b >= arr && k % interval == 0) { *expect_ns = b; break; }
    }
}

TEST(sim_recv_interval_delays_admission_to_the_schedulers_look) {
    int64_t s1, e1, s8, e8;
    recv_interval_case(1, &s1, &e1);
    recv_interval_case(8, &s8, &e8);
    CHECK(e1 > 0 && e8 > 0);
    /* ITLs are stored in seconds: the rebuilt step starts are exact to a few ns */
    CHECK_MSG(llabs(s1 - e1) < 100, "interval 1: admitted at %lld ns, next step at %lld", (long long)s1, (long long)e1);
    CHECK_MSG(llabs(s8 - e8) < 100, "interval 8: admitted at %lld ns, look at %lld", (long long)s8, (long long)e8);
    CHECK_MSG(s8 >= s1, "interval 8 admits at %lld ns, before every step's %lld", (long long)s8, (long long)s1);
}

/* TensorRT-LLM's batch waiting (--batch-wait-iters N, --batch-wait-max-tokens-ratio F): one request
 * decodes; a second (64 prompt tokens) arrives mid-decode. With a token threshold it cannot reach
 * (F = 1: 8,192 tokens) it is held for N steps and admitted at the (N + 1)th step start after it
 * arrived; with F x 8,192 below the step's 1 + 64 tokens it goes in at the first, as without batch
 * waiting. Exact step starts, as in the receive-interval test. */
static void batch_wait_case(int iters, double ratio, int64_t *sched_ns, int64_t *expect_ns, int hold) {
    sim_params p;
    sim_default_params(&p);
    plain_costs(&p);
    p.batch_wait_iters = iters;
    p.batch_wait_tokens_ratio = ratio;
    int64_t arr;
    const trace *t = mid_decode_arrival(&p, &arr);
    *sched_ns = t->sched_ns[1];
    *expect_ns = -1;
    int seen = 0;
    for (int k = 0; k <= t->n_itl; k++) {
        int64_t b = decoder_step_start(t, k);
        if (b >= arr && seen++ == hold) { *expect_ns = b; break; }
    }
}

TEST(sim_batch_wait_holds_prompts_for_its_steps_or_tokens) {
    int64_t s0, e0, s8, e8, sr, er;
    batch_wait_case(0, 0, &s0, &e0, 0);        /* off: the first step after arrival */
    batch_wait_case(8, 1.0, &s8, &e8, 8);      /* held 8 steps, in at the 9th */
    batch_wait_case(8, 0.005, &sr, &er, 0);    /* 41 tokens reached at once: no hold */
    CHECK(e0 > 0 && e8 > 0 && er > 0);
    CHECK_MSG(llabs(s0 - e0) < 100, "off: admitted at %lld ns, next step at %lld", (long long)s0, (long long)e0);
    CHECK_MSG(llabs(s8 - e8) < 100, "8 steps: admitted at %lld ns, the 9th step at %lld", (long long)s8, (long long)e8);
    CHECK_MSG(llabs(sr - er) < 100, "threshold reached: admitted at %lld ns, next step at %lld", (long long)sr, (long long)er);
    CHECK(s8 > s0);
}

/* ATOM's scheduler (profile atom): a step with a waiting prompt is all prefill, the whole prompt in
 * one step; vLLM V1 (vllm-v1) puts the prompt's chunk in the running request's decode step. One
 * request decodes; a 4,096-token prompt arrives mid-decode. With atom the decoder gets no token at
 * the prompt's first token (that step had no decode in it) and waits the prefill step out; with
 * vllm-v1 both come out of the same mixed step. */
static int64_t prefill_first_case(const char *profile, int64_t *gap_ns) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    CHECK(sim_params_set(&p, "engine-profile", profile, err, sizeof err) == 0);
    /* ATOM does not chunk prompts (the rows say so with the flag); vLLM V1 does */
    if (!strcmp(profile, "atom")) CHECK(sim_params_set(&p, "chunked-prefill", "off", err, sizeof err) == 0);
    plain_costs(&p);
    int64_t arr;
    const trace *t = mid_decode_arrival_of(&p, 4096, &arr);
    int64_t first = t->first_ns[1], same = 0;
    *gap_ns = 0;
    for (int k = 0; k < t->n_itl; k++) {
        int64_t a = decoder_step_start(t, k), b = decoder_step_start(t, k + 1);
        if (llabs(b - first) < 100) same = 1;
        if (a < first && b >= first) *gap_ns = b - a;
    }
    return same;
}

TEST(sim_atom_profile_runs_prompts_in_steps_of_their_own) {
    int64_t gap_atom, gap_v1;
    CHECK(prefill_first_case("atom", &gap_atom) == 0);
    CHECK(prefill_first_case("vllm-v1", &gap_v1) == 1);
    /* the decoder's gap across the prompt holds the prefill step and a decode step of its own */
    CHECK_MSG(gap_atom > gap_v1, "atom gap %lld ns, vllm-v1 gap %lld ns", (long long)gap_atom, (long long)gap_v1);
}

/* llama.cpp runs a step of more tokens than its ubatch (512) as ubatches one after another, each a
 * whole pass with its own loop over the experts: four 512-token prompts in one step cost what four
 * steps of one cost; without the split (--ubatch 4096) the loop would be paid once */
TEST(sim_llamacpp_step_runs_as_ubatches) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    CHECK(sim_params_set(&p, "engine-profile", "llamacpp-b4747", err, sizeof err) == 0);
    CHECK(sim_params_set(&p, "gpu", "h100", err, sizeof err) == 0);
    /* the result queue's cost grows with the square of the step's sequences, not with its ubatches:
     * left out here (sim_llamacpp_result_queue_wakes_every_stream) */
    CHECK(sim_params_set(&p, "ggml-wake-time", "0us", err, sizeof err) == 0);
    CHECK_EQ_INT(sim_params_batch_tokens(&p), 2048);   /* llama-server's -b */
    cost_model c;
    CHECK(sim_params_cost(&p, &c, err, sizeof err) == 0);
    cost_batch one, four;
    memset(&one, 0, sizeof one);
    one.tokens = 512, one.seqs = one.prefill_seqs = 1, one.prefill_pairs = 512.0 * 513 / 2;
    four = one;
    four.tokens = 2048, four.seqs = four.prefill_seqs = 4, four.prefill_pairs = 4 * one.prefill_pairs;
    cost_step s1, s4;
    cost_step_time(&c, &one, &s1);
    cost_step_time(&c, &four, &s4);
    CHECK_NEAR(s4.t, 4 * s1.t, 4 * s1.t * 1e-9);
    CHECK_NEAR(s4.t_kernels, 4 * s1.t_kernels, 4 * s1.t_kernels * 1e-9);
    cost_free(&c);
    CHECK(sim_params_set(&p, "ubatch", "4096", err, sizeof err) == 0);
    CHECK(sim_params_cost(&p, &c, err, sizeof err) == 0);
    cost_step_time(&c, &four, &s4);
    CHECK(s4.t < 4 * s1.t - 3 * s1.t_kernels * 0.9);   /* the loop once, not four times */
    cost_free(&c);
}

/* Runs n (<= 80) requests of mixed lengths through llama-server's slots, pricing each step afresh
 * or through the memo; fills t and returns the steps run and (priced) the steps the cost model
 * priced. One slot (b4747's default) with every request arriving at once; or two with a request
 * every second, each alone on the GPU while the other slot keeps the request before: its window
 * then differs at the same context. */
static int64_t slots_run(int slots, int n, bool afresh, trace *t, int64_t *priced) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    CHECK(sim_params_set(&p, "engine-profile", "llamacpp-b4747", err, sizeof err) == 0);
    CHECK(sim_params_set(&p, "model", "deepseek-v2-lite", err, sizeof err) == 0);
    CHECK(sim_params_set(&p, "gpu", "h100", err, sizeof err) == 0);
    p.price_every_step = afresh;
    p.max_num_seqs = slots;
    p.max_num_seqs_set = true;
    engine *e = make(&p);
    int64_t arrive[80];
    int prompt[80], out[80];
    for (int i = 0; i < n; i++) {
        arrive[i] = slots > 1 ? i * (int64_t)1000000000 : 0;
        prompt[i] = 48 + 40 * (i % 3);   /* three prompt lengths and two output lengths */
        out[i] = 20 + 12 * (i % 2);
    }
    memset(t, 0, sizeof *t);
    drive(e, n, arrive, prompt, out, t, NULL);
    engine_stats st;
    sim_info info;
    engine_get_stats(e, &st);
    CHECK(sim_get_info(e, &info) == 0);
    *priced = info.steps_priced;
    for (int i = 0; i < n; i++) CHECK_EQ_INT(t->tokens[i], out[i]);
    engine_destroy(e);
    return st.steps_total;
}

/* The step memo answers a repeated batch with the time the cost model gave it: the same run priced
 * afresh gives every token at the same nanosecond. And it does answer repeats: the lengths cycle
 * every 6 requests, so 40 more requests bring no batch the first 40 did not, and the memo answers
 * their steps. */
TEST(sim_step_memo_times_as_the_cost_model) {
    static trace fresh, memo;
    for (int slots = 1; slots <= 2; slots++) {
        int64_t priced_fresh, priced_memo, priced_more;
        int64_t steps_fresh = slots_run(slots, 40, true, &fresh, &priced_fresh);
        int64_t steps_memo = slots_run(slots, 40, false, &memo, &priced_memo);
        CHECK_EQ_INT(steps_fresh, steps_memo);
        CHECK_EQ_INT(priced_fresh, steps_fresh);
        for (int i = 0; i < 40; i++) {
            CHECK_EQ_INT(memo.first_ns[i], fresh.first_ns[i]);
            CHECK_EQ_INT(memo.last_ns[i], fresh.last_ns[i]);
        }
        int64_t steps_more = slots_run(slots, 80, false, &memo, &priced_more);
        CHECK(steps_more > steps_memo);
        CHECK_EQ_INT(priced_more, priced_memo);
    }
}

/* The decode step's growth (seconds) at seqs sequences of 500 tokens' context when key goes from lo
 * to hi on engine profile prof (the other factors at their defaults). */
static double step_gain(const char *prof, const char *key, const char *lo, const char *hi, int seqs) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    cost_model a, b;
    CHECK(sim_params_set(&p, "engine-profile", prof, err, sizeof err) == 0);
    CHECK(sim_params_set(&p, key, lo, err, sizeof err) == 0);
    CHECK(sim_params_cost(&p, &a, err, sizeof err) == 0);
    CHECK(sim_params_set(&p, key, hi, err, sizeof err) == 0);
    CHECK(sim_params_cost(&p, &b, err, sizeof err) == 0);
    cost_batch d;
    cost_step sa, sb;
    cost_decode_batch(seqs, 500, &d);
    cost_step_time(&a, &d, &sa);
    cost_step_time(&b, &d, &sb);
    cost_free(&a);
    cost_free(&b);
    return sb.t - sa.t;
}

/* llama-server samples each sequence on the host after the decode returns (the GPU waits): a decode
 * step of n sequences carries n x ggml_sample_s, scaled by the vocabulary (V2-Lite's is 102,400) */
TEST(sim_llamacpp_sampling_per_sequence) {
    CHECK_NEAR(step_gain("llamacpp-b4747", "ggml-sample-time", "0us", "150us", 16), 16 * 150e-6, 1e-9);
}

/* llama-server's result queue (server_response::send, c392e50): each token a step sends wakes every
 * waiting stream, so a decode step of n sequences carries n x n x ggml_wake_s on the host: 16
 * sequences at 10 us, 2.56 ms; 32, four times that; llama-bench rows, which have no server, none */
TEST(sim_llamacpp_result_queue_wakes_every_stream) {
    CHECK_NEAR(step_gain("llamacpp-b4747", "ggml-wake-time", "0us", "10us", 16), 16 * 16 * 10e-6, 1e-9);
    CHECK_NEAR(step_gain("llamacpp-b4747", "ggml-wake-time", "0us", "10us", 32), 32 * 32 * 10e-6, 1e-9);
    /* a profile of graphs and a Python scheduler (vLLM) has no such queue */
    CHECK_NEAR(step_gain("vllm", "ggml-wake-time", "0us", "10us", 32), 0, 1e-12);
}

/* Coarse recording (sim_workload.coarse_chunks, what `sim --validate` uses where no inter-token
 * latency is scored) gives the same TTFT, TPOT, E2E and throughputs as recording every token, on
 * the same closed loop; it keeps two chunks a request instead of one a token */
TEST(sim_coarse_chunks_keep_the_request_metrics) {
    sim_params p;
    sim_default_params(&p);
    enum { N = 40 };
    int32_t in[N], out[N];
    for (int i = 0; i < N; i++) in[i] = 200 + 37 * i, out[i] = 50 + 11 * i;
    json_t *s[2];
    size_t chunks[2] = {0, 0};
    for (int k = 0; k < 2; k++) {
        engine *e = make(&p);
        recset rs;
        recset_init(&rs);
        char err[256] = "";
        sim_workload w = {.n = N, .concurrency = 6, .in_tokens = in, .max_tokens = out, .coarse_chunks = k, .turnaround_ns = 300000,
                          .transit_seed = 3};
        CHECK(sim_run(e, &w, &rs, NULL, err, sizeof err) == 0);
        for (size_t i = 0; i < rs.n; i++) chunks[k] += rs.v[i].n_chunks;
        summary_opts o;
        summary_default_opts(&o);
        s[k] = summary_compute(&rs, &o);
        recset_free(&rs);
        engine_destroy(e);
    }
    CHECK(chunks[0] > 10 * chunks[1] && chunks[1] == 2 * N);
    static const char *const keys[] = {"mean_ttft_ms", "median_tpot_ms", "mean_tpot_ms", "p99_e2el_ms", "output_throughput",
                                       "total_token_throughput", "completed"};
    for (size_t i = 0; i < sizeof keys / sizeof keys[0]; i++) {
        double a = json_number_value(json_object_get(s[0], keys[i])), b = json_number_value(json_object_get(s[1], keys[i]));
        CHECK_MSG(a > 0 && fabs(a - b) <= 1e-9 * a, "%s: %.9g every token, %.9g coarse", keys[i], a, b);
    }
    json_decref(s[0]);
    json_decref(s[1]);
}

/* Runs one request (prompt, out) alone on e from now to its end; *first: the KV window of its first
 * step. Returns the time it ended. */
static int64_t one_alone(engine *e, uint64_t id, int prompt, int out, int64_t now, double *first) {
    static trace t;
    memset(&t, 0, sizeof t);
    engine_request r = {.id = id, .prompt_tokens = prompt, .max_tokens = out, .ignore_eos = true};
    CHECK(engine_submit(e, &r, now) == 0);
    *first = -1;
    for (int64_t te; (te = engine_next_event_ns(e)) != ENGINE_NEVER;) {
        engine_advance(e, now = te, on_event, &t);
        sim_info si;
        if (*first < 0 && !sim_get_info(e, &si) && si.window_tokens > 0) *first = si.window_tokens;
    }
    return now;
}

/* llama-server b4747 keeps each slot's last request in the KV cache after it ends, and a fresh
 * prompt takes the least recently used idle slot, a never-used one first: with 4 slots, the idle
 * slots' cells grow by one request (prompt + all but the last token) per request up to 3 of them,
 * then stay; slots warm from an earlier load count from the start. The window each step's attention
 * spans is those cells plus the running request's, padded to 32 cells. */
TEST(sim_llamacpp_idle_slots_keep_their_kv) {
    sim_params p;
    sim_default_params(&p);
    char err[256];
    CHECK(sim_params_set(&p, "engine-profile", "llamacpp-b4747", err, sizeof err) == 0);
    CHECK(sim_params_set(&p, "gpu", "h100", err, sizeof err) == 0);
    p.max_num_seqs = 4;
    engine *e = make(&p);
    if (!e) return;
    int64_t now = 0;
    for (int k = 0; k < 7; k++) {
        double first;
        now = one_alone(e, (uint64_t)k, 100, 10, now, &first);
        double idle = (k < 3 ? k : 3) * 109.0;
        CHECK_NEAR(first, ceil((idle + 100) / 32) * 32, 1e-9);
    }
    engine_destroy(e);
    p.slots_warm = 2, p.slots_warm_tokens = 500;
    e = make(&p);
    if (!e) return;
    double first;
    now = one_alone(e, 0, 100, 10, 0, &first);
    CHECK_NEAR(first, ceil((1000.0 + 100) / 32) * 32, 1e-9);   /* a never-used slot: the warm ones keep theirs */
    one_alone(e, 1, 100, 10, now, &first);
    CHECK_NEAR(first, ceil((1000.0 + 109 + 100) / 32) * 32, 1e-9);
    engine_destroy(e);
    /* the idle slots never hold more than the cache: a KV of 40 blocks of 16 caps the window at 640 */
    p.num_gpu_blocks = 40;
    e = make(&p);
    if (!e) return;
    one_alone(e, 0, 100, 10, 0, &first);
    CHECK_NEAR(first, 40.0 * p.block_size, 1e-9);
    engine_destroy(e);
    p.num_gpu_blocks = 0;
    /* a profile without llama-server's slots attends only its own sequences' context */
    CHECK(sim_params_set(&p, "engine-profile", "llamacpp", err, sizeof err) == 0);
    e = make(&p);
    if (!e) return;
    one_alone(e, 0, 100, 10, 0, &first);
    CHECK(first < 0);
    engine_destroy(e);
}

/* `dsperf sim --help` lists every engine profile with its line, the last one included (the list
 * once outgrew its buffer and lost its last two profiles) */
TEST(sim_profile_help_lists_every_profile) {
    const char *help = profile_help(), *names = profile_names();
    char name[64];
    int n = 0;
    for (const char *p = names; *p; ) {
        size_t k = strcspn(p, ", ");
        if (k > 0 && k < sizeof name) {
            memcpy(name, p, k);
            name[k] = 0;
            char want[80];
            snprintf(want, sizeof want, "      %-12s ", name);
            CHECK_MSG(strstr(help, want) != NULL, "profile %s missing from the help", name);
            n++;
        }
        p += k;
        p += strspn(p, ", ");
    }
    CHECK(n >= 10);
    CHECK(help[strlen(help) - 1] == '\n');
}

/* An engine profile brings its own default of running sequences (llama-server's slots: -np 1 on
 * b4747, 4 since late 2025; ATOM's 512; vLLM's 256 for the rest), and --max-num-seqs wins over it
 * whichever comes first */
TEST(sim_profile_default_running_sequences) {
    static const struct { const char *profile; int seqs; } want[] = {
        {"llamacpp-b4747", 1}, {"llamacpp", 4}, {"atom", 512}, {"sglang", 256}, {"vllm-v1", 256}};
    char err[256];
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        sim_params p;
        sim_default_params(&p);
        CHECK(sim_params_set(&p, "engine-profile", "atom", err, sizeof err) == 0);   /* another profile first */
        CHECK(sim_params_set(&p, "engine-profile", want[i].profile, err, sizeof err) == 0);
        CHECK_MSG(p.max_num_seqs == want[i].seqs, "%s: %d running sequences by default", want[i].profile, p.max_num_seqs);
        sim_default_params(&p);
        CHECK(sim_params_set(&p, "max-num-seqs", "8", err, sizeof err) == 0);
        CHECK(sim_params_set(&p, "engine-profile", want[i].profile, err, sizeof err) == 0);
        CHECK_EQ_INT(p.max_num_seqs, 8);
        CHECK(sim_params_set(&p, "max-num-seqs", "12", err, sizeof err) == 0);
        CHECK_EQ_INT(p.max_num_seqs, 12);
    }
}
