/* plan — capacity calculators over the cost model: memory, KV capacity, roofline step times,
 * batch recommendations, MoE all-to-all volume; printed as a table or JSON. */
#include "plan/plan.h"
#include "engine/sim_interval.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdarg.h>
#include <string.h>

#define GIB 1073741824.0

void plan_default_inputs(plan_inputs *in) {
    memset(in, 0, sizeof *in);
    sim_default_params(&in->target);
    in->prompt_tokens = 1024;
    in->output_tokens = 128;
    in->batch = 64;
    in->tpot_target_s = 0.05;
}

static void reason(plan_result *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static void reason(plan_result *r, const char *fmt, ...) {
    if (r->n_reasons >= PLAN_MAX_REASONS) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(r->reasons[r->n_reasons++], sizeof r->reasons[0], fmt, ap);
    va_end(ap);
}

/* Whether the weights fit (some KV blocks left) with p changed to tp and weight dtype wd. */
static bool fits_with(const sim_params *p, int tp, const char *wd, const char *gpu) {
    sim_params q = *p;
    q.tp = tp;
    if (q.n_gpus > 0 && q.n_gpus < tp) q.n_gpus = tp;
    if (q.n_gpus > 0 && q.n_gpus % tp) q.n_gpus = tp;
    if (wd) snprintf(q.weight_dtype, sizeof q.weight_dtype, "%s", wd);
    if (gpu) snprintf(q.gpu, sizeof q.gpu, "%s", gpu);
    cost_model c;
    char err[256];
    if (sim_params_cost(&q, &c, err, sizeof err) < 0) return false;
    bool ok = sim_params_kv_blocks(&q, &c) > 0;
    cost_free(&c);
    return ok;
}

/* Advice for a model that does not fit, from the current setting to one that fits: the smallest
 * tensor-parallel size, a smaller weight dtype (only when the weights are not already 1 byte or
 * less), a GPU with more memory at this tp. */
static void does_not_fit_advice(plan_result *r, const sim_params *p) {
    char tp_s[64] = "", wd_s[96] = "", gpu_s[96] = "";
    for (int tp = p->tp * 2; tp <= 64; tp *= 2)
        if (fits_with(p, tp, NULL, NULL)) { snprintf(tp_s, sizeof tp_s, "--tp %d \xe2\x86\x92 %d", p->tp, tp); break; }
    if (model_dtype_bytes(r->weight_dtype) > 1 && fits_with(p, p->tp, "fp8", NULL))
        snprintf(wd_s, sizeof wd_s, "--weight-dtype %s \xe2\x86\x92 fp8", model_dtype_name(r->weight_dtype));
    else if (model_dtype_bytes(r->weight_dtype) > 0.5 && fits_with(p, p->tp, "int4", NULL))
        snprintf(wd_s, sizeof wd_s, "--weight-dtype %s \xe2\x86\x92 int4 (4-bit weights cost accuracy)",
                 model_dtype_name(r->weight_dtype));
    for (size_t i = 0; hw_catalog(i); i++) {
        const hw_gpu *g = hw_catalog(i);
        if (g->mem_bytes > r->gpu_mem_bytes && fits_with(p, p->tp, NULL, g->name)) {
            snprintf(gpu_s, sizeof gpu_s, "--gpu %s \xe2\x86\x92 %s (%.0f GiB)", r->gpu, g->name, g->mem_bytes / GIB);
            break;
        }
    }
    if (!tp_s[0] && !wd_s[0] && !gpu_s[0]) {
        reason(r, "no single change fits it: neither tp up to 64, a smaller weight dtype nor a catalog GPU");
        return;
    }
    reason(r, "to fit: %s%s%s%s%s", tp_s, tp_s[0] && (wd_s[0] || gpu_s[0]) ? ", or " : "", wd_s,
           wd_s[0] && gpu_s[0] ? ", or " : "", gpu_s);
}

static void decode_at(cost_model *c, long long b, double ctx, cost_step *s) {
    cost_batch cb;
    cost_decode_batch(b, ctx, &cb);
    cost_step_time(c, &cb, s);
}

/* Largest batch in [1, hi] whose decode step is at most t_max (step time grows with the batch);
 * 0 when even batch 1 is slower. */
static long long max_batch_within(cost_model *c, double ctx, long long hi, double t_max) {
    cost_step s;
    decode_at(c, 1, ctx, &s);
    if (s.t > t_max) return 0;
    long long lo = 1;
    while (lo < hi) {
        long long mid = lo + (hi - lo + 1) / 2;
        decode_at(c, mid, ctx, &s);
        if (s.t <= t_max) lo = mid;
        else hi = mid - 1;
    }
    return lo;
}

/* The prompt in chunks of max_num_batched_tokens, alone on the engine. */
static void prefill(cost_model *c, const plan_inputs *in, plan_result *r) {
    int chunk = in->target.chunked_prefill ? sim_params_batch_tokens(&in->target) : in->prompt_tokens;
    if (chunk < 1) chunk = 1;
    r->prefill_s = 0;
    r->prefill_chunks = 0;
    for (int done = 0; done < in->prompt_tokens;) {
        int n = in->prompt_tokens - done < chunk ? in->prompt_tokens - done : chunk;
        cost_batch b;
        memset(&b, 0, sizeof b);
        b.tokens = n;
        b.seqs = done + n == in->prompt_tokens;
        b.prefill_pairs = (double)n * done + (double)n * (n + 1) / 2;
        b.prefill_keys_read = done;
        cost_step s;
        cost_step_time(c, &b, &s);
        if (!r->prefill_chunks) r->prefill = s;
        r->prefill_s += s.t;
        r->prefill_chunks++;
        done += n;
    }
}

static void a2a(cost_model *c, const plan_inputs *in, plan_result *r) {
    const model_arch *a = &c->arch;
    r->allreduce_bytes_decode = c->tp > 1 ? 2.0 * a->layers * in->batch * a->hidden * 2.0 : 0;
    if (!model_is_moe(a)) return;
    int ep = c->ep > 1 ? c->ep : c->tp;
    if (ep < 2) return;
    r->ep_for_a2a = ep;
    double bw = c->gpu.link_bytes_per_s / 2 * c->f.link_eff;
    int layers = c->params.n_moe_layers;
    /* dispatch + combine, every MoE layer; each GPU sends its 1/ep share, (ep-1)/ep of it away */
    double dec = 2.0 * layers * cost_a2a_bytes_per_layer(c, in->batch);
    double pre = 2.0 * layers * cost_a2a_bytes_per_layer(c, in->prompt_tokens);
    r->a2a_bytes_decode = dec;
    r->a2a_bytes_prefill = pre;
    double share = (double)(ep - 1) / ep / ep;
    r->a2a_s_decode = dec * share / bw + 2.0 * layers * c->f.comm_latency_s;
    r->a2a_s_prefill = pre * share / bw + 2.0 * layers * c->f.comm_latency_s;
}

/* Little's law for the decoders: mean concurrency m = rate x output x TPOT(m); the batch must
 * hold the P99 of a Poisson(m) concurrency (m + 2.33 sqrt(m)) without queueing, and the step at
 * that batch must stay under the P99 target. */
static void adaptive(cost_model *c, const plan_inputs *in, plan_result *r, double ctx, long long cap) {
    double p99t = in->p99_target_s > 0 ? in->p99_target_s : in->tpot_target_s;
    long long b_slo = max_batch_within(c, ctx, cap, p99t);
    r->have_rate = 1;
    cost_step s;
    if (b_slo > 0) {
        decode_at(c, b_slo, ctx, &s);
        r->max_rate_per_instance = b_slo / (in->output_tokens * s.t);
    }
    double m = 1;
    int converged = 0;
    for (int it = 0; it < 200; it++) {
        decode_at(c, (long long)ceil(m), ctx, &s);
        double next = in->rate_per_s * in->output_tokens * s.t;
        if (next > 4.0 * cap) break;
        if (fabs(next - m) < 1e-3) { m = next; converged = 1; break; }
        m = next;
    }
    if (converged) {
        r->mean_concurrency = m;
        r->p99_concurrency = m + 2.326 * sqrt(m);
    }
    reason(r, "adaptive batch: %.3g req/s x %d output tokens x TPOT gives the decoding concurrency by Little's law",
           in->rate_per_s, in->output_tokens);
    if (converged && ceil(r->p99_concurrency) <= b_slo) {
        r->adaptive_max_num_seqs = (long long)ceil(r->p99_concurrency);
        decode_at(c, r->adaptive_max_num_seqs, ctx, &s);
        reason(r, "mean concurrency %.1f; its P99 (Poisson, m + 2.33 sqrt m) is %.1f -> max_num_seqs %lld, step %.2f ms <= P99 target %.1f ms",
               m, r->p99_concurrency, r->adaptive_max_num_seqs, s.t * 1e3, p99t * 1e3);
        reason(r, "a larger max_num_seqs (up to %lld) only adds headroom for bursts; a smaller one queues requests at the P99", b_slo);
        r->replicas_needed = 1;
    } else {
        r->adaptive_max_num_seqs = 0;
        r->replicas_needed = r->max_rate_per_instance > 0 ? (int)ceil(in->rate_per_s / r->max_rate_per_instance) : 0;
        if (b_slo == 0)
            reason(r, "even batch 1 misses the P99 target of %.1f ms on this setup (tp %d, %s weights): more GPUs per "
                   "instance (--tp %d \xe2\x86\x92 %d), a faster GPU%s", p99t * 1e3, c->tp, model_dtype_name(c->weight_dtype),
                   c->tp, 2 * c->tp, model_dtype_bytes(c->weight_dtype) > 1 ? ", or fp8 weights" : "");
        else
            reason(r, "the P99 target %.1f ms allows batch <= %lld, which sustains %.2f req/s per instance; %.3g req/s needs %d instances",
                   p99t * 1e3, b_slo, r->max_rate_per_instance, in->rate_per_s, r->replicas_needed);
    }
}

int plan_compute(const plan_inputs *in, plan_result *r, char *err, size_t errlen) {
    memset(r, 0, sizeof *r);
    const sim_params *p = &in->target;
    if (in->prompt_tokens < 1 || in->output_tokens < 1 || in->batch < 1) {
        snprintf(err, errlen, "prompt, output and batch must be >= 1");
        return -1;
    }
    cost_model c;
    if (sim_params_cost(p, &c, err, errlen) < 0) return -1;
    snprintf(r->model, sizeof r->model, "%s", c.arch.name);
    snprintf(r->gpu, sizeof r->gpu, "%s", c.gpu.name);
    r->n_gpus = p->n_gpus > 0 ? p->n_gpus : p->tp;
    r->replicas = r->n_gpus / p->tp;
    r->params = c.params;
    r->weight_dtype = c.weight_dtype;
    r->kv_dtype = c.kv_dtype;
    r->weight_bytes_per_gpu = c.weight_bytes_per_gpu;
    r->weight_bytes_total = c.weight_bytes_per_gpu * p->tp;
    r->gpu_mem_bytes = c.gpu.mem_bytes;
    r->usable_bytes = c.gpu.mem_bytes * p->gpu_memory_utilization;
    r->kv_budget_bytes = r->usable_bytes - c.weight_bytes_per_gpu - p->reserved_bytes;
    r->kv_bytes_per_token = c.kv_bytes_per_token;
    r->kv_blocks = sim_params_kv_blocks(p, &c);
    r->fits = r->kv_blocks > 0;
    r->kv_tokens = r->kv_blocks * p->block_size;
    int len = in->context_len > 0 ? in->context_len : in->prompt_tokens + in->output_tokens;
    long long blocks_per_seq = (len + p->block_size - 1) / p->block_size;
    r->seqs_at_context_len = r->kv_blocks / blocks_per_seq;
    double ctx = in->context > 0 ? in->context : in->prompt_tokens + in->output_tokens / 2.0;
    r->context = ctx;

    prefill(&c, in, r);
    decode_at(&c, in->batch, ctx, &r->decode);
    r->decode_tokens_per_s = in->batch / r->decode.t;
    r->bw_ceiling_tokens_per_s = in->batch * c.gpu.hbm_bytes_per_s / r->decode.bytes;
    cost_step s1;
    decode_at(&c, 1, ctx, &s1);
    r->single_stream_tokens_per_s = 1 / s1.t;
    long long ctx_blocks = (long long)ceil(ctx / p->block_size);
    long long cap = r->kv_blocks / (ctx_blocks > 0 ? ctx_blocks : 1);
    if (cap > p->max_num_seqs) cap = p->max_num_seqs;
    r->max_batch = cap;
    if (cap > 0) {
        decode_at(&c, cap, ctx, &r->decode_max);
        r->max_batch_tokens_per_s = cap / r->decode_max.t;
        r->max_batch_bw_ceiling_tokens_per_s = cap * c.gpu.hbm_bytes_per_s / r->decode_max.bytes;
    }
    /* crossover: compute time catches memory time; both grow with B, compute faster */
    r->crossover_batch = -1;
    for (long long lo = 1, hi = 1 << 20; lo <= hi;) {
        long long mid = (lo + hi) / 2;
        cost_step s;
        decode_at(&c, mid, ctx, &s);
        if (s.bound == COST_BOUND_COMPUTE) { r->crossover_batch = mid; hi = mid - 1; }
        else lo = mid + 1;
    }
    if (!r->fits) {
        reason(r, "%s does not fit: %.1f GiB of weights per GPU vs %.1f GiB usable (%.0f%% of %.1f GiB, less %.1f GiB reserved)",
               r->model, r->weight_bytes_per_gpu / GIB, (r->usable_bytes - p->reserved_bytes) / GIB,
               p->gpu_memory_utilization * 100, r->gpu_mem_bytes / GIB, p->reserved_bytes / GIB);
        does_not_fit_advice(r, p);
    } else {
        long long rec = max_batch_within(&c, ctx, cap, in->tpot_target_s);
        r->rec_max_num_seqs = rec;
        if (rec > 0) {
            cost_step s;
            decode_at(&c, rec, ctx, &s);
            r->rec_tpot_s = s.t;
            reason(r, "max_num_seqs %lld: the largest batch whose decode step (%.2f ms at context %.0f) meets the TPOT target %.1f ms",
                   rec, s.t * 1e3, ctx, in->tpot_target_s * 1e3);
            /* what caps the batch: the KV memory, or the running-sequence cap and where it came from */
            const char *seqs_cap = p->max_num_seqs_set ? "--max-num-seqs"
                                 : p->from_profile & SIM_GIVEN_SEQS ? "the calibrated server's running-sequence cap (--profile)"
                                 : "the engine profile's default of running sequences (--max-num-seqs N to change)";
            if (rec == cap && cap < p->max_num_seqs)
                reason(r, "capped by KV memory: %lld sequences of context %.0f fit in %lld KV blocks", cap, ctx, r->kv_blocks);
            else if (rec == cap)
                reason(r, "capped by %s at %lld (KV memory would hold %lld of context %.0f)", seqs_cap, cap,
                       r->kv_blocks / (ctx_blocks > 0 ? ctx_blocks : 1), ctx);
            else
                reason(r, "%s would allow %lld sequences; beyond %lld the step exceeds the target (%s-bound there)",
                       cap < p->max_num_seqs ? "KV memory" : seqs_cap, cap, rec, cost_step_limit(&s));
        } else {
            reason(r, "even batch 1 takes %.2f ms per token, above the TPOT target %.1f ms", s1.t * 1e3, in->tpot_target_s * 1e3);
        }
        if (in->rate_per_s > 0) adaptive(&c, in, r, ctx, cap);
    }
    a2a(&c, in, r);
    cost_free(&c);
    return 0;
}

static json_t *step_json(const cost_step *s) {
    json_t *o = json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:f,s:s}", "weight_bytes", s->weight_bytes, "kv_bytes", s->kv_bytes,
                          "bytes", s->bytes, "flops", s->flops, "t_mem_ms", s->t_mem * 1e3, "t_compute_ms", s->t_compute * 1e3,
                          "t_comm_ms", s->t_comm * 1e3, "t_overhead_ms", s->t_overhead * 1e3, "t_ms", s->t * 1e3,
                          "bound", s->bound == COST_BOUND_COMPUTE ? "compute" : "memory");
    json_object_set_new(o, "limited_by", json_string(cost_step_limit(s)));
    /* where the time goes: each component's memory and compute time, the kernels, the CPU */
    static const char *const names[COST_NCOMP] = {"attention_projections", "attention", "dense_ffn", "routed_experts"};
    json_t *parts = json_object();
    for (int k = 0; k < COST_NCOMP; k++)
        json_object_set_new(parts, names[k], json_pack("{s:f,s:f}", "mem_ms", s->mem_s[k] * 1e3, "compute_ms", s->comp_s[k] * 1e3));
    json_object_set_new(parts, "kernels_ms", json_real(s->t_kernels * 1e3));
    json_object_set_new(parts, "eager_launch_cpu_ms", json_real(s->graphs ? 0 : s->t_launch_cpu * 1e3));
    json_object_set_new(parts, "scheduler_per_seq_ms", json_real(s->t_sched * 1e3));
    json_object_set_new(o, "components", parts);
    return o;
}

json_t *plan_to_json(const plan_inputs *in, const plan_result *r) {
    const sim_params *p = &in->target;
    json_t *o = json_object();
    json_object_set_new(o, "schema", json_string("dsperf.plan/1"));
    json_object_set_new(o, "setup", json_pack("{s:s,s:s,s:i,s:i,s:i,s:i,s:s,s:s,s:f,s:i,s:i,s:i,s:b}",
        "model", r->model, "gpu", r->gpu, "gpus", r->n_gpus, "replicas", r->replicas, "tp", p->tp, "ep", p->ep,
        "weight_dtype", model_dtype_name(r->weight_dtype), "kv_dtype", model_dtype_name(r->kv_dtype),
        "gpu_memory_utilization", p->gpu_memory_utilization, "block_size", p->block_size,
        "max_num_seqs", p->max_num_seqs, "max_num_batched_tokens", sim_params_batch_tokens(p),
        "chunked_prefill", p->chunked_prefill));
    json_object_set_new(o, "params", json_pack("{s:f,s:f,s:f,s:i,s:i}", "total", r->params.total, "active", r->params.active,
        "mtp_excluded", r->params.mtp, "dense_layers", r->params.n_dense_layers, "moe_layers", r->params.n_moe_layers));
    json_object_set_new(o, "memory", json_pack("{s:f,s:f,s:f,s:f,s:f,s:f,s:b,s:f,s:I,s:I,s:I,s:i}",
        "weight_bytes_per_gpu", r->weight_bytes_per_gpu, "weight_bytes_total", r->weight_bytes_total,
        "gpu_mem_bytes", r->gpu_mem_bytes, "usable_bytes", r->usable_bytes, "reserved_bytes", p->reserved_bytes,
        "kv_budget_bytes_per_gpu", r->kv_budget_bytes, "fits", r->fits, "kv_bytes_per_token", r->kv_bytes_per_token,
        "kv_blocks", (json_int_t)r->kv_blocks, "kv_tokens", (json_int_t)r->kv_tokens,
        "seqs_at_context_len", (json_int_t)r->seqs_at_context_len,
        "context_len", in->context_len > 0 ? in->context_len : in->prompt_tokens + in->output_tokens));
    json_t *pre = step_json(&r->prefill);
    json_object_set_new(pre, "tokens", json_integer(in->prompt_tokens));
    json_object_set_new(pre, "chunks", json_integer(r->prefill_chunks));
    json_object_set_new(pre, "total_ms", json_real(r->prefill_s * 1e3));
    json_object_set_new(pre, "tokens_per_s", json_real(in->prompt_tokens / r->prefill_s));
    json_object_set_new(o, "prefill", pre);
    json_t *dec = step_json(&r->decode);
    json_object_set_new(dec, "batch", json_integer(in->batch));
    json_object_set_new(dec, "context", json_real(r->context));
    json_object_set_new(dec, "experts_touched", json_real(r->decode.experts_touched));
    json_object_set_new(dec, "tokens_per_s", json_real(r->decode_tokens_per_s));
    json_object_set_new(dec, "bw_ceiling_tokens_per_s", json_real(r->bw_ceiling_tokens_per_s));
    /* 80% intervals: the simulator's errors on published deployments outside its fit (sim_interval.h) */
    sim_iv_load iv = sim_interval_kind(SIM_IV_STEADY, p->engine_profile, p->gpu);   /* an unseen engine/architecture: wider */
    double qt = sim_interval_q(SIM_IV_TPOT, iv, p->calibrated), qx = sim_interval_q(SIM_IV_TPUT, iv, p->calibrated);
    json_object_set_new(dec, "step_ms_80", json_pack("[f,f]", r->decode.t * 1e3 * exp(-qt), r->decode.t * 1e3 * exp(qt)));
    json_object_set_new(dec, "tokens_per_s_80", json_pack("[f,f]", r->decode_tokens_per_s * exp(-qx), r->decode_tokens_per_s * exp(qx)));
    json_object_set_new(o, "decode", dec);
    json_object_set_new(o, "ceilings", json_pack("{s:f,s:I,s:f,s:f,s:f,s:I}",
        "single_stream_tokens_per_s", r->single_stream_tokens_per_s, "max_batch", (json_int_t)r->max_batch,
        "max_batch_tokens_per_s", r->max_batch_tokens_per_s, "all_replicas_tokens_per_s",
        r->replicas * r->max_batch_tokens_per_s, "max_batch_bw_ceiling_tokens_per_s",
        r->max_batch_bw_ceiling_tokens_per_s, "compute_bound_from_batch", (json_int_t)r->crossover_batch));
    json_t *rec = json_pack("{s:f,s:I,s:f}", "tpot_target_ms", in->tpot_target_s * 1e3,
        "max_num_seqs", (json_int_t)r->rec_max_num_seqs, "tpot_ms", r->rec_tpot_s * 1e3);
    if (r->have_rate) {
        json_object_set_new(rec, "adaptive", json_pack("{s:f,s:f,s:f,s:f,s:f,s:I,s:i}", "rate_per_s", in->rate_per_s,
            "p99_target_ms", (in->p99_target_s > 0 ? in->p99_target_s : in->tpot_target_s) * 1e3,
            "mean_concurrency", r->mean_concurrency, "p99_concurrency", r->p99_concurrency,
            "max_rate_per_instance", r->max_rate_per_instance, "max_num_seqs", (json_int_t)r->adaptive_max_num_seqs,
            "instances_needed", r->replicas_needed));
    }
    json_t *why = json_array();
    for (int i = 0; i < r->n_reasons; i++) json_array_append_new(why, json_string(r->reasons[i]));
    json_object_set_new(rec, "reasoning", why);
    json_object_set_new(o, "recommendation", rec);
    json_object_set_new(o, "communication", json_pack("{s:f,s:i,s:f,s:f,s:f,s:f}",
        "allreduce_bytes_per_decode_step", r->allreduce_bytes_decode, "ep", r->ep_for_a2a,
        "a2a_bytes_per_decode_step", r->a2a_bytes_decode, "a2a_ms_per_decode_step", r->a2a_s_decode * 1e3,
        "a2a_bytes_prefill", r->a2a_bytes_prefill, "a2a_ms_prefill", r->a2a_s_prefill * 1e3));
    return o;
}

static const char *human_bytes(double b, char *buf, size_t n) {
    if (b >= GIB) snprintf(buf, n, "%.2f GiB", b / GIB);
    else if (b >= 1048576) snprintf(buf, n, "%.2f MiB", b / 1048576);
    else if (b >= 1024) snprintf(buf, n, "%.1f KiB", b / 1024);
    else snprintf(buf, n, "%.0f B", b);
    return buf;
}

static void print_step(FILE *f, const char *label, const cost_step *s) {
    char b1[32], b2[32];
    fprintf(f, "  %-34s %9.3f ms  (%s-bound: memory %.3f ms for %s [%s KV]", label, s->t * 1e3, cost_step_limit(s),
            (s->t_mem - s->t_moe_floor) * 1e3, human_bytes(s->bytes, b1, sizeof b1), human_bytes(s->kv_bytes, b2, sizeof b2));
    /* the floor is time without traffic: said apart, so the bytes and the time still agree */
    if (s->t_moe_floor > 0) fprintf(f, " + %.3f ms of CDNA3's MoE floor", s->t_moe_floor * 1e3);
    fprintf(f, ", compute %.3f ms for %.3g FLOP", s->t_compute * 1e3, s->flops);
    if (s->t_comm > 0) fprintf(f, ", comm %.3f ms", s->t_comm * 1e3);
    fprintf(f, ", overhead %.2f ms)\n", s->t_overhead * 1e3);
}

void plan_print(FILE *f, const plan_inputs *in, const plan_result *r) {
    const sim_params *p = &in->target;
    char b1[32], b2[32], b3[32];
    fprintf(f, "%s on %d x %s (TP %d, EP %d%s), weights %s, KV %s\n", r->model, r->n_gpus, r->gpu, p->tp, p->ep,
            r->replicas > 1 ? ", data-parallel replicas" : "", model_dtype_name(r->weight_dtype), model_dtype_name(r->kv_dtype));
    fprintf(f, "  parameters: %.2fB total, %.2fB active per token", r->params.total / 1e9, r->params.active / 1e9);
    if (r->params.mtp > 0) fprintf(f, " (MTP module %.1fB not counted)", r->params.mtp / 1e9);
    fprintf(f, "\n\nMemory (per GPU)\n");
    fprintf(f, "  %-34s %s (all GPUs %s)\n", "weights", human_bytes(r->weight_bytes_per_gpu, b1, sizeof b1),
            human_bytes(r->weight_bytes_total, b2, sizeof b2));
    fprintf(f, "  %-34s %s of %s, less %s reserved\n", "usable (gpu_memory_utilization)",
            human_bytes(r->usable_bytes, b1, sizeof b1), human_bytes(r->gpu_mem_bytes, b2, sizeof b2),
            human_bytes(p->reserved_bytes, b3, sizeof b3));
    fprintf(f, "  %-34s %s\n", "KV cache budget", r->fits ? human_bytes(r->kv_budget_bytes, b1, sizeof b1) : "none: does not fit");
    fprintf(f, "  %-34s %.0f B/token%s\n", "KV bytes per token", r->kv_bytes_per_token,
            p->tp > 1 ? " (per GPU)" : "");
    fprintf(f, "  %-34s %lld tokens = %lld blocks of %d\n", "KV capacity", r->kv_tokens, r->kv_blocks, p->block_size);
    fprintf(f, "  %-34s %lld sequences of %d tokens\n", "fits at once",
            r->seqs_at_context_len, in->context_len > 0 ? in->context_len : in->prompt_tokens + in->output_tokens);
    /* a GEMM split over the TP group runs at a fraction of compute_eff (cost_shard_eff): the header
     * says so where it applies, so the compute times below agree with it */
    char split[96] = "";
    if (p->tp > 1 && p->factors.shard_loss > 0)
        snprintf(split, sizeof split, " (%.1f%% for a GEMM split %d ways)", p->factors.compute_eff * 100 * cost_shard_eff(&p->factors, p->tp), p->tp);
    fprintf(f, "\nRoofline step times (efficiency: HBM %.0f%%, compute %.0f%%%s, link %.0f%%)\n",
            p->factors.bw_eff * 100, p->factors.compute_eff * 100, split, p->factors.link_eff * 100);
    char host[192];
    if (sim_params_loop_host_note(p, host, sizeof host)) fprintf(f, "  %-34s %s\n", "llama.cpp host speed", host);
    char lab[96];
    snprintf(lab, sizeof lab, "prefill %d tokens (%d chunk%s)", in->prompt_tokens, r->prefill_chunks, r->prefill_chunks > 1 ? "s" : "");
    fprintf(f, "  %-34s %9.3f ms  (%.0f tokens/s)\n", lab, r->prefill_s * 1e3, in->prompt_tokens / r->prefill_s);
    print_step(f, r->prefill_chunks > 1 ? "  first chunk" : "  step", &r->prefill);
    snprintf(lab, sizeof lab, "decode batch %d, context %.0f", in->batch, r->context);
    print_step(f, lab, &r->decode);
    if (r->decode.experts_touched > 0)
        fprintf(f, "  %-34s %.1f of %d routed experts per MoE layer\n", "  experts read", r->decode.experts_touched,
                r->params.n_moe_layers ? (int)(r->params.routed_total / r->params.expert / r->params.n_moe_layers) : 0);
    sim_iv_load iv = sim_interval_kind(SIM_IV_STEADY, p->engine_profile, p->gpu);   /* an unseen engine/architecture: wider */
    double qt = sim_interval_q(SIM_IV_TPOT, iv, p->calibrated), qx = sim_interval_q(SIM_IV_TPUT, iv, p->calibrated);
    fprintf(f, "  %-34s %.0f tokens/s (80%%: %.0f-%.0f; bandwidth roofline %.0f tokens/s)\n", "  decode throughput",
            r->decode_tokens_per_s, r->decode_tokens_per_s * exp(-qx), r->decode_tokens_per_s * exp(qx), r->bw_ceiling_tokens_per_s);
    fprintf(f, "  %-34s %.1f tokens/s (80%%: %.1f-%.1f)\n", "single stream (batch 1)", r->single_stream_tokens_per_s,
            r->single_stream_tokens_per_s * exp(-qt), r->single_stream_tokens_per_s * exp(qt));
    if (r->max_batch > 0)
        fprintf(f, "  %-34s batch %lld: %.0f tokens/s (bandwidth roofline %.0f)\n", "largest batch that fits",
                r->max_batch, r->max_batch_tokens_per_s, r->max_batch_bw_ceiling_tokens_per_s);
    if (r->replicas > 1 && r->max_batch > 0)
        fprintf(f, "  %-34s %d replicas x %.0f = %.0f tokens/s\n", "all GPUs (data parallel)", r->replicas,
                r->max_batch_tokens_per_s, r->replicas * r->max_batch_tokens_per_s);
    if (r->crossover_batch > 0) fprintf(f, "  %-34s batch %lld\n", "decode turns compute-bound at", r->crossover_batch);
    else fprintf(f, "  %-34s never below batch 1M\n", "decode turns compute-bound at");
    fprintf(f, "\nCommunication per decode step (batch %d)\n", in->batch);
    if (p->tp > 1) fprintf(f, "  %-34s %s per GPU group\n", "TP all-reduce payload", human_bytes(r->allreduce_bytes_decode, b1, sizeof b1));
    if (r->ep_for_a2a > 0)
        fprintf(f, "  %-34s %s per decode step (%.3f ms on the link), %s per %d-token prefill (%.3f ms)%s\n",
                "MoE all-to-all (EP)", human_bytes(r->a2a_bytes_decode, b1, sizeof b1), r->a2a_s_decode * 1e3,
                human_bytes(r->a2a_bytes_prefill, b2, sizeof b2), in->prompt_tokens, r->a2a_s_prefill * 1e3,
                p->ep > 1 ? "" : " — if --ep were --tp");
    else fprintf(f, "  %-34s %s\n", "MoE all-to-all (EP)", p->tp > 1 ? "n/a (dense model)" : "n/a (one GPU)");
    fprintf(f, "\nRecommendation\n");
    if (r->rec_max_num_seqs > 0)
        fprintf(f, "  %-34s %lld (TPOT %.2f ms <= %.1f ms)\n", "max_num_seqs", r->rec_max_num_seqs, r->rec_tpot_s * 1e3,
                in->tpot_target_s * 1e3);
    if (r->have_rate) {
        if (r->adaptive_max_num_seqs > 0)
            fprintf(f, "  %-34s %lld for %.3g req/s\n", "adaptive max_num_seqs", r->adaptive_max_num_seqs, in->rate_per_s);
        else if (r->replicas_needed > 0)
            fprintf(f, "  %-34s %d instances for %.3g req/s\n", "scale out", r->replicas_needed, in->rate_per_s);
    }
    for (int i = 0; i < r->n_reasons; i++) fprintf(f, "  - %s\n", r->reasons[i]);
}
