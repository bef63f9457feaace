/* Tests of the time accounting and of the checks every finding makes against its own numbers:
 * queueing found from admitted below offered with no waiting gauge (real llama.cpp sweeps on the
 * CPU, tests/fixtures/llamacpp-cpu), a deployment whose weights are not on its GPU (the real H200
 * run with its GPU memory and CPU telemetry set to what `-ngl 0` shows), a context ladder read as
 * one, "compute bound" only near the tensor roofline, advice that fits the engine and the run, and
 * the run's warnings reaching the diagnosis and the report's headline. */
#include "harness.h"
#include "testutil.h"
#include "diagnose/diagnose.h"
#include "diagnose/diagnose_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static json_t *diag_o(const json_t *doc, const char *model_config) {
    diagnose_opts o;
    diagnose_default_opts(&o);
    o.model_config = model_config;
    char err[256];
    json_t *g = diagnose_run(doc, &o, err, sizeof err);
    if (!g) fprintf(stderr, "diagnose: %s\n", err);
    return g;
}

static const json_t *first(const json_t *dg) { return json_array_get(json_object_get(dg, "findings"), 0); }

static const char *cls(const json_t *f) { return json_string_value(json_object_get(f, "class")); }

static const json_t *finding(const json_t *dg, const char *c) {
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(dg, "findings"), i, f) if (!strcmp(cls(f), c)) return f;
    return NULL;
}

static const json_t *knob(const json_t *f, const char *name) {
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(f, "knobs"), i, k)
        if (!strcmp(json_string_value(json_object_get(k, "knob")), name)) return k;
    return NULL;
}

static const char *kstr(const json_t *k, const char *field) { return json_string_value(json_object_get(k, field)); }

/* Any evidence, title or knob text of any finding containing s. */
static bool says(const json_t *dg, const char *s) {
    size_t i, j;
    json_t *f, *e;
    json_array_foreach(json_object_get(dg, "findings"), i, f) {
        if (strstr(json_string_value(json_object_get(f, "title")), s)) return true;
        json_array_foreach(json_object_get(f, "evidence"), j, e)
            if (strstr(json_string_value(json_object_get(e, "text")), s)) return true;
        json_array_foreach(json_object_get(f, "knobs"), j, e)
            if (strstr(json_string_value(json_object_get(e, "knob")), s) || strstr(json_string_value(json_object_get(e, "direction")), s))
                return true;
    }
    return false;
}

/* llama-server -np 2 under 8 users (a real CPU sweep, c=2 then c=8): running pinned at 2 of about 7
 * offered, TTFT ~15x its fastest; llama.cpp's requests_deferred gauge mostly reads 0. Queueing comes
 * first, with the slot count as the current value (from /props total_slots), and the suggestion no
 * larger than the users ever in flight. */
TEST(diagnose_queue_from_admission_without_a_waiting_gauge) {
    json_t *doc = test_load_json("tests/fixtures/llamacpp-cpu/admission_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *g = diag_o(doc, NULL);
    CHECK(g != NULL);
    const json_t *f = first(g);
    CHECK_STR(cls(f), "queueing");
    CHECK_NEAR(test_num(f, "level"), 8, 0);
    const json_t *k = knob(f, "max_num_seqs");
    CHECK(k != NULL);
    CHECK_STR(kstr(k, "current"), "2");
    CHECK_STR(kstr(k, "suggested"), "4");
    CHECK_STR(kstr(k, "flag"), "-np (slots)");
    json_decref(g);
    /* the mechanism, not the gauge: with the waiting series all zero and the slot count unknown
     * (no /props), the same queue is found, and the cap is read from running pinned at 2 */
    json_t *lv8 = json_object_get(json_array_get(json_object_get(doc, "levels"), 1), "results");
    json_t *ws = json_object_get(json_object_get(json_object_get(json_object_get(lv8, "telemetry"), "server"), "series"), "waiting");
    for (size_t i = 0; i < json_array_size(ws); i++) json_array_set_new(ws, i, json_real(0));
    json_object_del(json_object_get(lv8, "deployment"), "max_num_seqs");
    json_t *res = json_deep_copy(lv8);
    g = diag_o(res, NULL);
    f = first(g);
    CHECK_STR(cls(f), "queueing");
    k = knob(f, "max_num_seqs");
    CHECK(k && kstr(k, "current") && !strcmp(kstr(k, "current"), "2"));
    /* and the time accounting says where a request's time went: most of it waiting for a slot */
    const json_t *parts = json_object_get(json_object_get(g, "time"), "request");
    double wait = NAN, sum = 0;
    size_t i;
    json_t *p;
    json_array_foreach(parts, i, p) {
        sum += test_num(p, "share");
        if (!strcmp(kstr(p, "part"), "waiting for admission")) wait = test_num(p, "share");
    }
    CHECK(wait > 0.5);
    CHECK_NEAR(sum, 1, 0.01);
    json_decref(g);
    json_decref(res);
    json_decref(doc);
}

/* The real H200 sweep (-np 32): at 32 users all 32 run, so offered equals admitted and no queue is
 * claimed though TTFT grows with the load (prefills interleaved, not admission). */
TEST(diagnose_no_queue_when_admitted_equals_offered) {
    json_t *doc = test_load_json("tests/fixtures/real-gpu/medium_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *g = diag_o(doc, "tests/fixtures/real-gpu/medium_config.json");
    CHECK(!finding(g, "queueing"));
    CHECK_STR(cls(first(g)), "engine_overhead");
    /* the overhead claim states its own split: a fixed part and a part per sequence, and the
     * time accounting of the step leaves little unexplained once both are counted */
    CHECK(says(g, "fixed"));
    const json_t *st = json_object_get(json_object_get(g, "time"), "decode_step");
    double unexplained = NAN, fixed = NAN;
    size_t i;
    json_t *p;
    json_array_foreach(st, i, p) {
        if (strstr(kstr(p, "part"), "unexplained")) unexplained = test_num(p, "share");
        if (!strcmp(kstr(p, "part"), "fixed per-step cost")) fixed = test_num(p, "share");
    }
    CHECK(fixed > 0 && fixed < 1);
    CHECK(unexplained >= 0 && unexplained < 0.2);
    /* the run's warning about few samples per level reaches the diagnosis */
    CHECK(json_array_size(json_object_get(g, "warnings")) >= 1);
    json_decref(g);
    json_decref(doc);
}

/* The overhead-bound H200 level with the host series a virtual machine under a busy hypervisor would
 * show (steal 6 %, the server's main thread waiting for a CPU 9 % of the time): the overhead finding
 * names both; as measured (no such columns in that sweep) it names neither. */
TEST(diagnose_overhead_names_steal_and_runq) {
    json_t *doc = test_load_json("tests/fixtures/real-gpu/medium_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *r = json_deep_copy(json_object_get(json_array_get(json_object_get(doc, "levels"), 3), "results"));
    json_t *hs = json_object_get(json_object_get(json_object_get(r, "telemetry"), "host"), "series");
    size_t n = json_array_size(json_object_get(hs, "t_s"));
    CHECK(n > 2);
    json_t *g = diag_o(r, "tests/fixtures/real-gpu/medium_config.json");
    CHECK(finding(g, "engine_overhead") && !says(g, "steal") && !says(g, "waited for a CPU"));
    json_decref(g);
    json_t *steal = json_array(), *runq = json_array();
    for (size_t i = 0; i < n; i++) {
        json_array_append_new(steal, json_real(6));
        json_array_append_new(runq, json_real(9));
    }
    json_object_set_new(hs, "steal_pct", steal);
    json_object_set_new(hs, "server_runq_pct", runq);
    g = diag_o(r, "tests/fixtures/real-gpu/medium_config.json");
    CHECK(finding(g, "engine_overhead"));
    CHECK(says(g, "took 6.0% of the host's CPU time (steal)"));
    CHECK(says(g, "main thread waited for a CPU 9.0%"));
    json_decref(g);
    json_decref(r);
    json_decref(doc);
}

/* The overhead-bound c = 8 level of a real llama.cpp sweep (h100i_overhead: a source build of c392e50
 * serving V2-Lite): the advice knows the build. Before the spring 2025 MoE rework the experts loop
 * on the host, so a later build is the first knob, with the build it has; -fa is not offered, since
 * that build forces it off for DeepSeek's unequal K/V heads. A build past both offers -fa and no
 * upgrade. */
TEST(diagnose_llamacpp_advice_knows_the_build) {
    json_t *doc = test_load_json("tests/fixtures/real-gpu/h100i_overhead.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *r = json_deep_copy(json_object_get(json_array_get(json_object_get(doc, "levels"), 3), "results"));
    json_t *src = json_object_get(json_object_get(json_object_get(r, "deployment"), "engine"), "source");
    CHECK(src != NULL);
    /* the build as the server said it (NULL: as recorded, a source build stating no number); the
     * build knob's current value (exact, or a part of it) and suggestion (NULL: no such knob);
     * whether -fa is offered */
    static const struct { const char *source, *current; int exact; const char *suggested; int fa; } c[] = {
        {NULL, "unknown", 0, "b5280 or later", 0},
        {"GET /props answered (llama-server build b4747-c392e50)", "b4747", 1, NULL, 0},
        {"GET /props answered (llama-server build b5300-1a2b3c4)", NULL, 0, NULL, 1}};
    for (size_t i = 0; i < sizeof c / sizeof c[0] && src; i++) {
        if (c[i].source) json_string_set(src, c[i].source);
        json_t *g = diag_o(r, NULL);
        const json_t *f = finding(g, "engine_overhead"), *k = f ? knob(f, "llama.cpp build") : NULL;
        CHECK_MSG(f != NULL, "case %zu: no engine_overhead finding", i);
        if (c[i].current)
            CHECK_MSG(k && (c[i].exact ? !strcmp(kstr(k, "current"), c[i].current) : strstr(kstr(k, "current"), c[i].current) != NULL) &&
                          (!c[i].suggested || !strcmp(kstr(k, "suggested"), c[i].suggested)),
                      "case %zu: the build knob", i);
        else CHECK_MSG(f && !k, "case %zu: a build knob offered", i);
        CHECK_MSG(f && !knob(f, "flash attention") == !c[i].fa, "case %zu: flash attention %s", i, c[i].fa ? "not offered" : "offered");
        json_decref(g);
    }
    json_decref(r);
    json_decref(doc);
}

/* The same H200 run as `-ngl 0` would show it: the server holds 300 MiB of GPU memory for 1.7 GiB of
 * weights, the GPU idles (5 %), the server keeps ten cores busy. That is a deployment that is not
 * what it should be, with -ngl as the knob, not "engine overhead: try vLLM". */
TEST(diagnose_deployment_weights_not_on_the_gpu) {
    json_t *doc = test_load_json("tests/fixtures/real-gpu/medium_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *r = json_deep_copy(json_object_get(json_array_get(json_object_get(doc, "levels"), 3), "results"));
    json_t *gpu = json_array_get(json_object_get(json_object_get(r, "telemetry"), "gpu"), 0);
    json_object_set_new(json_array_get(json_object_get(gpu, "processes"), 0), "used_mib", json_real(300));
    json_t *util = json_object_get(json_object_get(gpu, "series"), "util_gpu_pct");
    for (size_t i = 0; i < json_array_size(util); i++) json_array_set_new(util, i, json_real(5));
    json_t *cpu = json_object_get(json_object_get(json_object_get(json_object_get(r, "telemetry"), "host"), "series"), "server_cpu_pct");
    for (size_t i = 0; i < json_array_size(cpu); i++) json_array_set_new(cpu, i, json_real(1000));
    json_t *g = diag_o(r, "tests/fixtures/real-gpu/medium_config.json");
    const json_t *f = first(g);
    CHECK_STR(cls(f), "deployment");
    const json_t *k = knob(f, "gpu_layers");
    CHECK(k && !strcmp(kstr(k, "flag"), "-ngl"));
    CHECK(!finding(g, "engine_overhead"));
    CHECK(!says(g, "vLLM"));
    json_decref(g);
    /* as measured (5.3 GiB held, 38 % busy, 1.5 cores) the deployment holds */
    json_t *asis = json_deep_copy(json_object_get(json_array_get(json_object_get(doc, "levels"), 3), "results"));
    g = diag_o(asis, "tests/fixtures/real-gpu/medium_config.json");
    CHECK(!finding(g, "deployment"));
    json_decref(g);
    json_decref(asis);
    json_decref(r);
    json_decref(doc);
}

static json_t *sim_json(const char *args, const char *name) {
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "sim --quiet --out %s %s", path, args);
    if (test_run(cmd, NULL, NULL) != 0) return NULL;
    return test_load_json(path);
}

/* A context ladder (sim --input-len): no load-scaling evidence (throughput "for 16x the load", a
 * negative cost "per added sequence"), its own evidence per 1k tokens instead; the vLLM V1 profile
 * captures CUDA graphs, so they are not advised. */
TEST(diagnose_context_ladder_has_its_own_evidence) {
    json_t *d = sim_json("--input-len 1k..16k --concurrency 8 --requests 16 --dataset random:in=1024,out=128", "ctx");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag_o(d, NULL);
    CHECK(g != NULL);
    CHECK(!says(g, "the load ("));
    CHECK(!says(g, "each added sequence"));
    CHECK(!says(g, "CUDA graphs"));
    if (finding(g, "engine_overhead")) CHECK(says(g, "each 1k tokens of context"));
    json_decref(g);
    json_decref(d);
}

/* Prefill at 2 % of the tensor peak (--compute-eff 0.02) is slow, not compute bound; at the
 * simulator's usual 70 % it is compute bound. */
TEST(diagnose_compute_bound_needs_the_tensor_roofline) {
    const char *base = "--rate 0.1/s --requests 8 --dataset random:in=8192,out=8 --step-overhead 1.5ms --seq-overhead 0 "
                       "--kernel-time 0 --moe-eff 1";
    char args[512];
    snprintf(args, sizeof args, "%s --compute-eff 0.02 --attn-compute-eff 0.02", base);
    json_t *d = sim_json(args, "slowpf");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag_o(d, NULL);
    CHECK(!finding(g, "prefill_compute"));
    const json_t *f = finding(g, "prefill");
    CHECK(f != NULL);
    CHECK(f && strstr(json_string_value(json_object_get(f, "title")), "tensor roofline"));
    CHECK(!says(g, "compute bound"));
    json_decref(g);
    json_decref(d);
}

/* One direction per knob: the first finding's way wins; a setting suggested twice differently
 * keeps the first. */
TEST(diagnose_one_story_per_knob) {
    json_t *list = json_array();
    json_t *a = diag_finding(list, "queueing", 0.9, "a");
    diag_knob(a, "load", "lower", "x");
    json_t *b = diag_finding(list, "engine_overhead", 0.8, "b");
    diag_knob(b, "load", "hold", "y");
    diag_knob(b, "load (batch)", "raise", "z");
    diag_knob(b, "flash attention", "-fa on", "w");
    diag_one_story(list);
    CHECK_EQ_INT(json_array_size(json_object_get(b, "knobs")), 1);
    CHECK_STR(kstr(json_array_get(json_object_get(b, "knobs"), 0), "knob"), "flash attention");
    CHECK_EQ_INT(json_array_size(json_object_get(a, "knobs")), 1);
    json_decref(list);
}

/* llama.cpp's GGUF quantizations do not run on fp8 tensor cores: no "weight_dtype fp8" for it. */
TEST(diagnose_fp8_only_where_it_computes) {
    diag_in in;
    memset(&in, 0, sizeof in);
    snprintf(in.dep.engine, sizeof in.dep.engine, "llama.cpp");
    snprintf(in.dep.gpu, sizeof in.dep.gpu, "h200");
    in.dep.gpu_s.known = true;
    CHECK(!diag_fp8_compute(&in));
    /* and a smaller dtype for llama.cpp is its own 1-byte type, never given to a model already in one */
    json_t *list = json_array(), *f = diag_finding(list, "decode_bandwidth", 0.5, "t");
    diag_setting(&in, f, "kv_cache_dtype", "bf16", "fp8", "e");
    diag_setting(&in, f, "weight_dtype", "int8", "fp8", "e");
    CHECK_EQ_INT(json_array_size(json_object_get(f, "knobs")), 1);
    CHECK_STR(kstr(json_array_get(json_object_get(f, "knobs"), 0), "suggested"), "q8_0");
    json_decref(list);
    snprintf(in.dep.engine, sizeof in.dep.engine, "vllm");
    CHECK(diag_fp8_compute(&in));
    snprintf(in.dep.gpu, sizeof in.dep.gpu, "a100-80g");
    CHECK(!diag_fp8_compute(&in));   /* no fp8 tensor cores on Ampere */
}

/* An open-loop sweep whose top rate overloads a one-slot llama-server (real, on the CPU): bench's
 * SERVER OVERLOADED warning is in the diagnosis and in the report's headline, beside the queueing
 * finding at the slot cap. */
TEST(diagnose_overload_warning_reaches_the_report) {
    json_t *doc = test_load_json("tests/fixtures/llamacpp-cpu/admission_open_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *g = diag_o(doc, NULL);
    CHECK_STR(cls(first(g)), "queueing");
    const json_t *k = knob(first(g), "max_num_seqs");
    CHECK(k && !strcmp(kstr(k, "current"), "1"));
    bool overload = false;
    size_t i;
    json_t *w;
    json_array_foreach(json_object_get(g, "warnings"), i, w) overload |= !strcmp(kstr(w, "kind"), "overload");
    CHECK(overload);
    json_decref(g);
    json_decref(doc);
    char *buf = NULL;
    CHECK_EQ_INT(test_run("report tests/fixtures/llamacpp-cpu/admission_open_sweep.json --md -", &buf, NULL), 0);
    if (!buf) return;
    CHECK(strstr(buf, "server overloaded") != NULL);
    CHECK(strstr(buf, "SERVER OVERLOADED") != NULL);
    CHECK(strstr(buf, "bottleneck: requests queue for admission") != NULL);
    free(buf);
}

/* One request at a time cannot stall behind another's prefill: a c=1 run's ITL tail is no
 * interference finding (real llama.cpp on a busy CPU, tests/fixtures/llamacpp-cpu/healthy). */
TEST(diagnose_no_interference_with_one_request_in_flight) {
    json_t *doc = test_load_json("tests/fixtures/llamacpp-cpu/healthy_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *g = diag_o(doc, NULL);
    CHECK(!finding(g, "prefill_interference"));
    json_decref(g);
    json_decref(doc);
    /* a 1500-token prompt through -ub 8 at c=1: prefill is 94 % of the time; with no roofline on the
     * CPU it is named slow, not compute bound, with the batch knob */
    doc = test_load_json("tests/fixtures/llamacpp-cpu/small_ubatch_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    g = diag_o(doc, NULL);
    CHECK_STR(cls(first(g)), "prefill");
    CHECK(knob(first(g), "max_num_batched_tokens") != NULL);
    json_decref(g);
    json_decref(doc);
}

/* The demo's story on the simulator's virtual clock: a load ladder whose knee is the sequence cap
 * (max_num_seqs 32). What limits the deployment at its capacity comes first (queueing at the cap,
 * 32 -> 64); the per-step overhead seen only at batch 1..8 ranks after it and says it is below the
 * knee; the report's headline is that first finding. */
TEST(diagnose_knee_cause_first_on_a_load_ladder) {
    json_t *d = sim_json("--concurrency 1..128x2 --max-num-seqs 32 --requests 128 --dataset random:in=512,out=128", "ladder");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag_o(d, NULL);
    const json_t *f = first(g);
    CHECK_STR(cls(f), "queueing");
    const json_t *k = knob(f, "max_num_seqs");
    CHECK(k && kstr(k, "current") && !strcmp(kstr(k, "current"), "32") && !strcmp(kstr(k, "suggested"), "64"));
    const json_t *eo = finding(g, "engine_overhead");
    if (eo) CHECK(json_is_true(json_object_get(eo, "below_knee")));
    json_decref(g);
    json_decref(d);
}

/* 48 users on 32 slots: the cap is raised to 48, the most ever in flight, not to 64. */
TEST(diagnose_cap_never_raised_beyond_the_run) {
    json_t *d = sim_json("--concurrency 48 --max-num-seqs 32 --requests 192 --dataset random:in=512,out=128", "cap48");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag_o(d, NULL);
    const json_t *f = finding(g, "queueing");
    CHECK(f != NULL);
    const json_t *k = f ? knob(f, "max_num_seqs") : NULL;
    CHECK(k && kstr(k, "suggested") && !strcmp(kstr(k, "suggested"), "48"));
    json_decref(g);
    json_decref(d);
}

/* The five real H200 runs of the GPU scenario corpus, each with its cause known by construction: the
 * first finding names it, with its knob and current value, and no claim contradicts its numbers. */
TEST(diagnose_gpu_corpus_first_findings) {
    json_t *doc = test_load_json("tests/fixtures/real-gpu/gpu_slots.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *g = diag_o(doc, NULL);
    const json_t *f = first(g);
    CHECK_STR(cls(f), "queueing");
    const json_t *k = knob(f, "max_num_seqs");
    CHECK(k && kstr(k, "current") && !strcmp(kstr(k, "current"), "4") && !strcmp(kstr(k, "flag"), "-np (slots)"));
    json_decref(g);
    json_decref(doc);
    /* -ngl 0: the server holds less GPU memory than its weights and computes on 14 host cores */
    doc = test_load_json("tests/fixtures/real-gpu/gpu_cpu_only.json");
    CHECK(doc != NULL);
    if (!doc) return;
    g = diag_o(doc, NULL);
    f = first(g);
    CHECK_STR(cls(f), "deployment");
    k = knob(f, "gpu_layers");
    CHECK(k && !strcmp(kstr(k, "flag"), "-ngl"));
    CHECK(!finding(g, "engine_overhead"));
    json_decref(g);
    json_decref(doc);
    /* a context ladder at c = 2: prefill's cost per 1k tokens, not load scaling, and no "compute
     * bound" for a prefill at about 1 % of the tensor roofline */
    doc = test_load_json("tests/fixtures/real-gpu/gpu_context.json");
    CHECK(doc != NULL);
    if (!doc) return;
    g = diag_o(doc, NULL);
    f = first(g);
    CHECK_STR(cls(f), "prefill");
    CHECK(says(g, "per 1k prompt tokens"));
    CHECK(!says(g, "the load ("));
    CHECK(!says(g, "each added sequence"));
    CHECK(!says(g, "compute bound"));
    json_decref(g);
    json_decref(doc);
    /* -ngl 8 of 27 layers: 11.6 GB of GPU memory for 31.4 GB of weights, the host's cores busy */
    doc = test_load_json("tests/fixtures/real-gpu/gpu_partial_offload.json");
    CHECK(doc != NULL);
    if (!doc) return;
    g = diag_o(doc, NULL);
    f = first(g);
    CHECK_STR(cls(f), "deployment");
    k = knob(f, "gpu_layers");
    CHECK(k && !strcmp(kstr(k, "flag"), "-ngl"));
    CHECK(!finding(g, "engine_overhead"));
    json_decref(g);
    json_decref(doc);
    /* every layer on the GPU, 32 slots, short prompts: the engine's per-step cost, and no
     * admission finding (c never exceeds the 32 slots) */
    doc = test_load_json("tests/fixtures/real-gpu/gpu_overhead.json");
    CHECK(doc != NULL);
    if (!doc) return;
    g = diag_o(doc, NULL);
    f = first(g);
    CHECK_STR(cls(f), "engine_overhead");
    CHECK(!finding(g, "queueing"));
    CHECK(!finding(g, "deployment"));
    json_decref(g);
    json_decref(doc);
}

/* Every knob with its current value, from the runs themselves (real llama.cpp on the CPU): the
 * client's --timeout (1s), the one slot that holds one prefix (-np 1), the one thread a prefill on
 * the host runs on (-t 1, from the server's command line). */
TEST(diagnose_knobs_carry_their_current_value) {
    json_t *doc = test_load_json("tests/fixtures/llamacpp-cpu/client_timeout_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *g = diag_o(doc, NULL);
    CHECK_STR(cls(first(g)), "errors");
    const json_t *k = knob(first(g), "--timeout");
    CHECK(k && kstr(k, "current") && !strcmp(kstr(k, "current"), "1s"));
    json_decref(g);
    json_decref(doc);
    doc = test_load_json("tests/fixtures/llamacpp-cpu/prefix_slots_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    g = diag_o(doc, NULL);
    CHECK_STR(cls(first(g)), "prefix_cache");
    k = knob(first(g), "max_num_seqs");
    CHECK(k && kstr(k, "current") && !strcmp(kstr(k, "current"), "1") && !strcmp(kstr(k, "flag"), "-np (slots)"));
    json_decref(g);
    json_decref(doc);
    /* the prefill: as recorded, the server kept its one thread's core busy (0.93 cores): compute
     * bound on that thread. With the host's other processes taking the core (server 0.36 cores, host
     * 100 %), the same prefill is slow, not compute bound, and the host is named. Either way the knob
     * is -t, current 1. */
    doc = test_load_json("tests/fixtures/llamacpp-cpu/prefill_threads_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    g = diag_o(doc, NULL);
    CHECK_STR(cls(first(g)), "prefill_compute");
    k = knob(first(g), "cpu_threads");
    CHECK(k && kstr(k, "current") && !strcmp(kstr(k, "current"), "1") && !strcmp(kstr(k, "flag"), "-t"));
    json_decref(g);
    json_t *r = json_object_get(json_array_get(json_object_get(doc, "levels"), 0), "results");
    json_t *hs = json_object_get(json_object_get(json_object_get(r, "telemetry"), "host"), "series");
    json_t *cpu = json_object_get(hs, "server_cpu_pct"), *host = json_object_get(hs, "cpu_util_pct");
    for (size_t i = 0; i < json_array_size(cpu); i++) json_array_set_new(cpu, i, json_real(36));
    for (size_t i = 0; i < json_array_size(host); i++) json_array_set_new(host, i, json_real(100));
    g = diag_o(doc, NULL);
    CHECK_STR(cls(first(g)), "prefill");
    CHECK(knob(first(g), "host CPU") != NULL);
    k = knob(first(g), "cpu_threads");
    CHECK(k && kstr(k, "current") && !strcmp(kstr(k, "current"), "1"));
    json_decref(g);
    json_decref(doc);
}

/* Long prompts beside chats (real llama.cpp, two request classes): mean TTFT is 1.1 s, but each
 * class's fastest TTFT says the prefills themselves are ~0.3 s on average; the rest is waiting
 * behind other requests' steps. So prefill is no headline of its own; the stalls are. */
TEST(diagnose_prefill_is_not_the_wait_behind_others) {
    json_t *doc = test_load_json("tests/fixtures/llamacpp-cpu/interference_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *g = diag_o(doc, NULL);
    CHECK_STR(cls(first(g)), "prefill_interference");
    CHECK(!finding(g, "prefill"));
    double prefill = NAN, behind = NAN;
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(json_object_get(g, "time"), "request"), i, p) {
        if (!strcmp(kstr(p, "part"), "prefill")) prefill = test_num(p, "share");
        if (strstr(kstr(p, "part"), "behind other requests")) behind = test_num(p, "share");
    }
    CHECK(prefill < 0.3);
    CHECK(behind > prefill);
    json_decref(g);
    json_decref(doc);
}

/* The same run as a starved host shows it (two CPU hogs beside llama-server: the scenario corpus
 * under load): the server's running count lags the four requests in flight, each busy sample one
 * lower, so about one request of four is "offered but not running" while TTFT is long. With four
 * users against four slots no request can wait for a slot: the gap is time outside a slot, and
 * the finding stays prefill interference. The same gap with the client's peak above the slots
 * (eight in flight at once) is a queue for admission. */
TEST(diagnose_no_admission_queue_with_no_more_in_flight_than_slots) {
    json_t *doc = test_load_json("tests/fixtures/llamacpp-cpu/interference_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    json_t *r = json_object_get(json_array_get(json_object_get(doc, "levels"), 0), "results");
    json_t *run = json_object_get(json_object_get(json_object_get(json_object_get(r, "telemetry"), "server"), "series"), "running");
    CHECK(json_array_size(run) > 0);
    for (size_t i = 0; i < json_array_size(run); i++) {
        double x = json_number_value(json_array_get(run, i));
        if (x >= 2) json_array_set_new(run, i, json_real(x - 1));
    }
    CHECK_NEAR(test_num(r, "max_concurrent_requests"), 4, 0);
    json_t *g = diag_o(doc, NULL);
    CHECK(g && !finding(g, "queueing"));
    CHECK_STR(cls(first(g)), "prefill_interference");
    json_decref(g);
    json_object_set_new(r, "max_concurrent_requests", json_integer(8));
    g = diag_o(doc, NULL);
    CHECK(g && finding(g, "queueing"));
    json_decref(g);
    json_decref(doc);
}
