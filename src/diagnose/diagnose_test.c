/* Tests of the diagnosis rules on runs that produce each condition: `dsperf sim` configured to be
 * KV-bound, queue-bound, decode-bandwidth-bound, prefill-bound and with prefill interference; a
 * client starved of connections against `dsperf serve`; telemetry fixtures (throttling,
 * cross-NUMA, PCIe, NVLink, an idle GPU) added to a simulated run. */
#include "harness.h"
#include "testutil.h"
#include "diagnose/diagnose.h"
#include "diagnose/diagnose_int.h"
#include "telemetry/nvml.h"
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The simulator's fitted per-kernel and per-sequence costs make small V2-Lite steps
 * overhead-bound; the KV, bandwidth, interference, prefill and physics scenarios below want the
 * plain roofline with a 1.5 ms step they were written for (diagnose models a simulated run with
 * the run's own factors). */
#define PLAIN_COSTS " --step-overhead 1.5ms --seq-overhead 0 --kernel-time 0 --moe-eff 1"

static json_t *sim_doc(const char *args, const char *name) {
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "sim --quiet --out %s %s", path, args);
    if (test_run(cmd, NULL, NULL) != 0) return NULL;
    return test_load_json(path);
}

static json_t *diag(const json_t *doc) {
    diagnose_opts o;
    diagnose_default_opts(&o);
    char err[256];
    return diagnose_run(doc, &o, err, sizeof err);
}

static const json_t *finding(const json_t *dg, const char *cls, int *rank) {
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(dg, "findings"), i, f)
        if (!strcmp(json_string_value(json_object_get(f, "class")), cls)) { if (rank) *rank = (int)i; return f; }
    return NULL;
}

static const char *top_class(const json_t *dg) {
    return json_string_value(json_object_get(json_array_get(json_object_get(dg, "findings"), 0), "class"));
}

static const json_t *evidence_from(const json_t *f, const char *source_part) {
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(f, "evidence"), i, e)
        if (strstr(json_string_value(json_object_get(e, "source")), source_part)) return e;
    return NULL;
}

static bool has_evidence_from(const json_t *f, const char *source_part) { return evidence_from(f, source_part) != NULL; }

/* 2000 KV blocks (32k tokens) for 64 users of 1024 + 512 tokens (98k wanted): preemptions. */
TEST(diagnose_sim_kv_bound) {
    json_t *d = sim_doc("--concurrency 64 --requests 200 --dataset random:in=1024,out=512 --num-gpu-blocks 2000" PLAIN_COSTS, "kv");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    CHECK_STR(top_class(g), "kv_capacity");
    const json_t *f = finding(g, "kv_capacity", NULL);
    CHECK(f && json_number_value(json_object_get(f, "confidence")) >= 0.9);
    CHECK(f && has_evidence_from(f, "engine.preemptions_total"));
    CHECK(f && json_is_object(json_object_get(f, "window")));
    json_decref(g);
    json_decref(d);
}

/* max_num_seqs 8 under 64 users with plenty of KV: requests wait for a sequence slot. */
TEST(diagnose_sim_queue_bound) {
    json_t *d = sim_doc("--concurrency 64 --requests 300 --dataset random:in=256,out=128 --max-num-seqs 8", "q");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    CHECK_STR(top_class(g), "queueing");
    const json_t *f = finding(g, "queueing", NULL);
    CHECK(f && json_number_value(json_object_get(f, "confidence")) >= 0.85);
    CHECK(!finding(g, "kv_capacity", NULL));
    /* the roofline's batch is the engine's running count: the cap */
    CHECK_NEAR(test_num(json_object_get(g, "roofline"), "batch"), 8, 0.5);
    json_decref(g);
    json_decref(d);
}

/* 32 users, short prompts, long outputs: decode steps read the weights and KV; efficiency is
 * the roofline's step time over the model's (bw_eff 0.85 plus 1.5 ms overhead per step). */
TEST(diagnose_sim_decode_bandwidth) {
    json_t *d = sim_doc("--concurrency 32 --requests 200 --dataset random:in=128,out=512" PLAIN_COSTS, "bw");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    CHECK_STR(top_class(g), "decode_bandwidth");
    const json_t *r = json_object_get(g, "roofline");
    CHECK_STR(json_string_value(json_object_get(r, "model")), "deepseek-v2-lite");
    CHECK_STR(json_string_value(json_object_get(r, "gpu")), "h200");
    CHECK_STR(json_string_value(json_object_get(r, "bound")), "memory");
    double batch = test_num(r, "batch"), bound = test_num(r, "bound_tokens_per_s");
    double expect = (batch / bound) / (test_num(r, "decode_step_ms_model") / 1e3);
    CHECK_NEAR(test_num(r, "efficiency"), expect, 0.1 * expect);
    CHECK(finding(g, "healthy", NULL) != NULL);
    json_decref(g);
    json_decref(d);
}

/* Chunked prefill off, 4k prompts arriving while others decode: whole-prompt steps stall ITL. */
TEST(diagnose_sim_prefill_interference) {
    json_t *d = sim_doc("--rate 4/s --requests 120 --dataset random:in=4096,out=256 --chunked-prefill off" PLAIN_COSTS, "pi");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    CHECK_STR(top_class(g), "prefill_interference");
    const json_t *f = finding(g, "prefill_interference", NULL);
    bool knob = false;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(f, "knobs"), i, k)
        if (!strcmp(json_string_value(json_object_get(k, "knob")), "enable_chunked_prefill")) knob = true;
    CHECK(knob);
    CHECK(has_evidence_from(f, "engine.series.step_ms"));
    json_decref(g);
    json_decref(d);
}

TEST(diagnose_sim_prefill_compute) {
    json_t *d = sim_doc("--rate 2/s --requests 60 --dataset random:in=8192,out=8" PLAIN_COSTS, "pc");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    CHECK_STR(top_class(g), "prefill_compute");
    json_decref(g);
    json_decref(d);
}

/* `dsperf serve <serve_args>` on loopback, benched with bench_args: the results, or NULL. */
static json_t *served_doc(const char *serve_args, const char *bench_args, const char *name) {
    test_server s;
    if (test_serve_start(&s, serve_args) != 0) { CHECK_MSG(0, "serve did not start"); return NULL; }
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "bench --url %s %s --quiet --out %s", s.url, bench_args, path);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    return rc == 0 ? test_load_json(path) : NULL;
}

/* 300/s planned with 2 connections to a server that takes 30 ms per request (~67/s): the client
 * queue, not the server, sets the latency users see. */
TEST(diagnose_client_starved) {
    json_t *d = served_doc("--ttft 10ms --itl 2ms", "--rate 300/s --max-concurrency 2 --requests 60 --dataset random:in=8,out=10",
                           "starved");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    CHECK_STR(top_class(g), "client_bound");
    CHECK(has_evidence_from(finding(g, "client_bound", NULL), "results.mean_queue_ms"));
    json_decref(g);
    json_decref(d);
}

/* A small simulated run with a telemetry section as the sampler writes it. */
static json_t *with_telemetry(const char *name) {
    json_t *d = sim_doc("--concurrency 4 --requests 40 --dataset random:in=256,out=64", name);
    if (!d) return NULL;
    json_t *t = json_array(), *thr = json_array(), *why = json_array(), *clk = json_array(), *util = json_array();
    json_t *pcie = json_array(), *nvl = json_array();
    for (int i = 0; i < 20; i++) {
        json_array_append_new(t, json_real(i * 0.1));
        json_array_append_new(thr, json_integer(i >= 10));
        json_array_append_new(why, json_integer(i >= 10 ? 0x4 | 0x20 : 0));
        json_array_append_new(clk, json_integer(i >= 10 ? 1200 : 1980));
        json_array_append_new(util, json_integer(30));
        json_array_append_new(pcie, json_real(12000));
        json_array_append_new(nvl, json_real(150000));
    }
    json_t *series = json_pack("{s:o,s:o,s:o,s:o,s:o,s:o,s:o,s:o}", "t_s", t, "throttled", thr, "clock_event_reasons", why,
                               "sm_clock_mhz", clk, "util_gpu_pct", util, "gpm_pcie_rx_mb_s", pcie,
                               "gpm_pcie_tx_mb_s", json_deep_copy(pcie), "gpm_nvlink_rx_mb_s", nvl);
    json_t *gpu = json_pack("{s:i,s:s,s:i,s:o}", "index", 0, "name", "NVIDIA H200", "sm_clock_max_mhz", 1980, "series", series);
    json_t *numa = json_pack("{s:b,s:s,s:{s:f}}", "cross_numa", 1, "why", "server may run on CPUs of node 1, GPU on node 0",
                             "server", "mem_off_gpu_node_pct", 90.0);
    json_object_set_new(d, "telemetry", json_pack("{s:f,s:[o],s:{s:o}}", "interval_s", 0.1, "gpu", gpu, "host", "numa", numa));
    return d;
}

TEST(diagnose_telemetry_throttling_and_numa) {
    json_t *d = with_telemetry("tel");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    const json_t *f = finding(g, "throttling", NULL);
    CHECK(f != NULL);
    if (f) {
        CHECK(strstr(json_string_value(json_object_get(f, "title")), "50%") != NULL);
        const json_t *w = json_object_get(f, "window");
        CHECK_NEAR(test_num(w, "t0_s"), 1.0, 1e-9);
        CHECK_NEAR(test_num(w, "t1_s"), 1.9, 1e-9);
        const char *ev = json_string_value(json_object_get(json_array_get(json_object_get(f, "evidence"), 0), "text"));
        CHECK(ev && strstr(ev, "SW power cap") && strstr(ev, "SW thermal"));
    }
    f = finding(g, "cross_numa", NULL);
    CHECK(f && has_evidence_from(f, "mem_off_gpu_node_pct"));
    /* PCIe 24 GB/s, NVLink 150 GB/s of 900 GB/s (17%: below the 30% threshold), GPU 30% busy */
    CHECK(finding(g, "host_pcie", NULL) != NULL);
    CHECK(finding(g, "communication", NULL) == NULL);
    f = finding(g, "engine_overhead", NULL);
    CHECK(f && has_evidence_from(f, "util_gpu_pct"));
    CHECK(!finding(g, "healthy", NULL));
    json_decref(g);
    /* NVLink at 400 GB/s of the H200's 900 GB/s: communication */
    json_t *nvl = json_object_get(json_object_get(json_array_get(json_object_get(json_object_get(d, "telemetry"), "gpu"), 0),
                                                  "series"), "gpm_nvlink_rx_mb_s");
    for (size_t i = 0; i < json_array_size(nvl); i++) json_array_set_new(nvl, i, json_real(400000));
    g = diag(d);
    f = finding(g, "communication", NULL);
    CHECK(f && has_evidence_from(f, "nvlink"));
    json_decref(g);
    /* without the section none of them is claimed, and the rules say why they did not run */
    json_object_del(d, "telemetry");
    g = diag(d);
    CHECK(!finding(g, "throttling", NULL) && !finding(g, "cross_numa", NULL) && !finding(g, "host_pcie", NULL));
    bool said = false;
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(g, "checked"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "rule")), "throttling") && !json_is_true(json_object_get(c, "ran")))
            said = true;
    CHECK(said);
    json_decref(g);
    json_decref(d);
}

/* A sweep: per class the most confident level wins and the finding names its level. */
TEST(diagnose_sweep_document) {
    json_t *a = sim_doc("--concurrency 4 --requests 60 --dataset random:in=128,out=256", "s1");
    json_t *b = sim_doc("--concurrency 64 --requests 200 --dataset random:in=256,out=128 --max-num-seqs 8", "s2");
    CHECK(a && b);
    if (!a || !b) { json_decref(a); json_decref(b); return; }
    json_t *doc = json_pack("{s:s,s:s,s:[{s:f,s:o},{s:f,s:o}],s:n}", "schema", "dsperf.sweep/1", "axis", "concurrency",
                            "levels", "load", 4.0, "results", a, "load", 64.0, "results", b, "knee");
    json_t *g = diag(doc);
    const json_t *f = finding(g, "queueing", NULL);
    CHECK(f && test_num(f, "level") == 64);
    CHECK(json_is_object(json_object_get(g, "roofline")));
    json_decref(g);
    json_decref(doc);
}

/* Speculative decoding whose acceptance falls with load (known truth: `dsperf sim --mtp 2` at the
 * configured acceptance lengths, 2.5 tokens a step at load 4 and 1.5 at load 32: 90 decode tokens
 * are 36 and 60 steps exactly) is named with the
 * tokens per step at each load; the same sweep at 2.5 on both levels is not. */
TEST(diagnose_sweep_acceptance_collapse) {
    const char *la[2] = { "2.5", "2.5" }, *lb[2] = { "1.5", "2.5" };
    for (int k = 0; k < 2; k++) {
        char a_args[256], b_args[256], an[16], bn[16];
        snprintf(a_args, sizeof a_args, "--concurrency 4 --requests 40 --dataset random:in=64,out=91 --mtp 2 --mtp-accept-len %s", la[k]);
        snprintf(b_args, sizeof b_args, "--concurrency 32 --requests 64 --dataset random:in=64,out=91 --mtp 2 --mtp-accept-len %s", lb[k]);
        snprintf(an, sizeof an, "acc%da", k);
        snprintf(bn, sizeof bn, "acc%db", k);
        json_t *a = sim_doc(a_args, an), *b = sim_doc(b_args, bn);
        CHECK(a && b);
        if (!a || !b) { json_decref(a); json_decref(b); return; }
        CHECK_NEAR(test_num(json_object_get(a, "spec_decode"), "mean_acceptance_length"), 2.5, 1e-9);
        json_t *doc = json_pack("{s:s,s:s,s:[{s:f,s:o},{s:f,s:o}],s:n}", "schema", "dsperf.sweep/1", "axis", "concurrency",
                                "levels", "load", 4.0, "results", a, "load", 32.0, "results", b, "knee");
        json_t *g = diag(doc);
        const json_t *f = finding(g, "spec_acceptance", NULL);
        if (k == 0) {
            CHECK(f != NULL);
            CHECK(f && strstr(json_string_value(json_object_get(f, "title")), "2.50 tokens a step at load 4, 1.50 at load 32"));
            CHECK_NEAR(test_num(json_object_get(f, "cost"), "lost_frac"), 1 - 1.5 / 2.5, 1e-9);
        } else {
            CHECK(f == NULL);
        }
        json_decref(g);
        json_decref(doc);
    }
}

TEST(diagnose_cli) {
    json_t *d = sim_doc("--concurrency 8 --requests 40 --dataset random:in=128,out=64", "cli");
    CHECK(d != NULL);
    json_decref(d);
    char cmd[1024], *out = NULL, *err = NULL;
    snprintf(cmd, sizeof cmd, "diagnose %s/cli.json --json", harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    json_t *g = out ? json_loads(out, 0, NULL) : NULL;
    CHECK(json_is_array(json_object_get(g, "findings")));
    json_decref(g);
    free(out);
    out = NULL;
    snprintf(cmd, sizeof cmd, "diagnose %s/cli.json", harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, &out, NULL), 0);
    CHECK(out && strstr(out, "Roofline: decode"));
    free(out);
    snprintf(cmd, sizeof cmd, "diagnose %s/cli.json --model nosuch", harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, &err), 2);
    CHECK(err && strstr(err, "unknown model"));
    free(err);
    /* --save stores the findings in the file itself, which stays a results document */
    snprintf(cmd, sizeof cmd, "diagnose %s/cli.json --save", harness_tmpdir());
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 0);
    snprintf(cmd, sizeof cmd, "%s/cli.json", harness_tmpdir());
    json_t *saved = test_load_json(cmd);
    CHECK(json_is_array(json_object_get(saved, "findings")) && json_is_object(json_object_get(saved, "roofline")));
    CHECK_STR(json_string_value(json_object_get(saved, "schema")), "dsperf.results/1");
    json_decref(saved);
    CHECK_EQ_INT(test_run("diagnose /nonexistent.json", NULL, NULL), 2);
    CHECK_EQ_INT(test_run("diagnose", NULL, NULL), 2);
}

/* Two tenants on a server with 2 slots: 'batch' (40-token answers, loose SLO) holds the slots,
 * 'chat' (2 tokens, TTFT SLO 30 ms) waits behind it first come, first served. */
static json_t *tenant_run(const char *chat_slo, const char *name) {
    test_server s;
    if (test_serve_start(&s, "--capacity 2 --ttft 5ms --itl 2ms") != 0) return NULL;
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/%s.json", harness_tmpdir(), name);
    snprintf(cmd, sizeof cmd, "bench --url %s --quiet --concurrency 6 --requests 60 --out %s "
             "--class 'batch;weight=0.7;dataset=random:in=64,out=40;slo=ttft=10s' "
             "--class 'chat;weight=0.3;dataset=random:in=8,out=2;slo=%s'", s.url, path, chat_slo);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    return rc == 0 ? test_load_json(path) : NULL;
}

TEST(diagnose_tenant_waits_behind_another) {
    json_t *d = tenant_run("ttft=30ms", "tenants");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    const json_t *f = finding(g, "tenants", NULL);
    CHECK(f != NULL);
    if (f) {
        CHECK(strstr(json_string_value(json_object_get(f, "title")), "'chat' misses its SLO") != NULL);
        CHECK(has_evidence_from(f, "results.classes[1]"));
        CHECK(has_evidence_from(f, "median_ttft_ms"));     /* first come, first served */
        bool priority = false;
        size_t i;
        json_t *k;
        json_array_foreach(json_object_get(f, "knobs"), i, k) priority |= !strcmp(json_string_value(json_object_get(k, "knob")), "priority");
        CHECK(priority);
    }
    json_decref(g);
    json_decref(d);
    /* with a TTFT SLO the wait fits in (queueing behind 40-token answers stays well under 2 s),
     * every tenant is served well: no finding */
    d = tenant_run("ttft=2s", "tenants_ok");
    CHECK(d != NULL);
    if (!d) return;
    g = diag(d);
    CHECK(finding(g, "tenants", NULL) == NULL);
    json_decref(g);
    json_decref(d);
}

static json_t *diag_with(const json_t *doc, const diagnose_opts *o) {
    char err[256];
    return diagnose_run(doc, o, err, sizeof err);
}

/* The real H200 run (llama.cpp, tests/fixtures/real-gpu): with the architecture resolved, the
 * first finding is the engine's overhead, read at every level, with the roofline fraction and the
 * scaling as evidence; no number beyond physics, no level left out. */
TEST(diagnose_real_gpu_sweep) {
    json_t *doc = test_load_json("tests/fixtures/real-gpu/medium_sweep.json");
    CHECK(doc != NULL);
    if (!doc) return;
    diagnose_opts o;
    diagnose_default_opts(&o);
    o.model_config = "tests/fixtures/real-gpu/medium_config.json";
    json_t *g = diag_with(doc, &o);
    CHECK(g != NULL);
    if (!g) { json_decref(doc); return; }
    CHECK_STR(top_class(g), "engine_overhead");
    const json_t *f = json_array_get(json_object_get(g, "findings"), 0);
    CHECK_EQ_INT(json_array_size(json_object_get(f, "levels")), 6);
    CHECK(json_is_null(json_object_get(f, "level")));           /* a finding about the whole sweep */
    /* the roofline fraction at the best level: decode at about 0.6% of what HBM allows */
    const json_t *roof = evidence_from(f, "roofline");
    CHECK(roof && test_num(roof, "value") > 0.1 && test_num(roof, "value") < 2);
    /* scaling: 453 / 104 tok/s = 4.4x for 32x the users */
    const json_t *sc = evidence_from(f, "output_throughput");
    CHECK(sc && fabs(test_num(sc, "value") - 453.5 / 103.5) < 0.05);
    CHECK(sc && strstr(json_string_value(json_object_get(sc, "text")), "32x the load"));
    CHECK(evidence_from(f, "dram_bw_util_pct") != NULL);
    CHECK(test_num(json_object_get(f, "cost"), "lost_frac") > 0.9);
    const json_t *r = json_object_get(g, "roofline");
    CHECK(json_is_true(json_object_get(r, "valid")));
    CHECK(test_num(r, "efficiency") > 0 && test_num(r, "efficiency") < 0.02);
    CHECK_EQ_INT(json_array_size(json_object_get(g, "configuration")), 0);
    const json_t *dep = json_object_get(g, "deployment");
    CHECK_STR(json_string_value(json_object_get(json_object_get(dep, "engine"), "value")), "llama.cpp");
    CHECK_STR(json_string_value(json_object_get(json_object_get(dep, "gpu"), "value")), "h200");
    json_decref(g);
    /* without the architecture the same fact comes from the GPU's own counters, and the diagnosis
     * says what would give the roofline */
    g = diag(doc);
    CHECK_STR(top_class(g), "engine_overhead");
    CHECK(json_is_null(json_object_get(g, "roofline")));
    json_decref(g);
    json_decref(doc);
}

/* `serve --engine sim --tp 8` benched and diagnosed as if on one H200: decode beats the one-GPU
 * roofline, which is a configuration finding naming tp as the assumption, never a bottleneck or a
 * health verdict. Told the truth (--tp 8), the roofline holds. */
TEST(diagnose_physics_names_the_wrong_assumption) {
    /* --speedup 0.25: the server runs its engine at a quarter of real time (and says so: meta.speedup,
     * which diagnose reads), so the few ms a busy machine adds to each token cannot pull a 182 %
     * efficiency under the 120 % tolerance */
    json_t *d = served_doc("--engine sim --tp 8 --speedup 0.25" PLAIN_COSTS, "--concurrency 32 --requests 96", "tp8");
    CHECK(d != NULL);
    if (!d) return;
    diagnose_opts o;
    diagnose_default_opts(&o);
    o.gpu = "h200";
    /* serve --engine sim says what it simulates (GET /v1/models meta.sim): tp 8 is known */
    json_t *g = diag_with(d, &o);
    CHECK_EQ_INT(json_array_size(json_object_get(g, "configuration")), 0);
    json_decref(g);
    /* a server that does not say (vLLM does not report its tensor-parallel size): leave out what
     * meta.sim stated, and the one-GPU assumption meets physics */
    json_t *dep = json_object_get(d, "deployment"), *v;
    const char *key;
    void *tmp;
    json_object_foreach_safe(dep, tmp, key, v) {
        const char *src = json_string_value(json_object_get(v, "source"));
        if (src && strstr(src, "meta.sim")) json_object_del(dep, key);
    }
    g = diag_with(d, &o);
    const json_t *cfg = json_array_get(json_object_get(g, "configuration"), 0);
    CHECK(cfg != NULL);
    CHECK(cfg && has_evidence_from(cfg, "deployment"));
    bool tp_knob = false;
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(cfg, "knobs"), i, k)
        if (!strcmp(json_string_value(json_object_get(k, "knob")), "--tp")) tp_knob = atoi(json_string_value(json_object_get(k, "suggested"))) >= 2;
    CHECK(tp_knob);
    CHECK(!finding(g, "decode_bandwidth", NULL) && !finding(g, "healthy", NULL) && !finding(g, "configuration", NULL));
    CHECK(json_is_false(json_object_get(json_object_get(g, "roofline"), "valid")));
    CHECK(json_is_null(json_object_get(json_object_get(g, "roofline"), "efficiency")));
    json_decref(g);
    o.tp = 8;
    g = diag_with(d, &o);
    CHECK_EQ_INT(json_array_size(json_object_get(g, "configuration")), 0);
    const json_t *r = json_object_get(g, "roofline");
    CHECK(json_is_true(json_object_get(r, "valid")) && test_num(r, "efficiency") <= 1.2);
    json_decref(g);
    json_decref(d);
}

/* Advice knows the current setting: R1 (fp8 weights as released) with an fp8 KV cache is never
 * told to use fp8; the sequence cap it queues at is given as "16 -> 32". */
TEST(diagnose_advice_knows_current_setting) {
    json_t *d = sim_doc("--model deepseek-r1 --tp 8 --kv-dtype fp8 --max-num-seqs 16 --concurrency 64 --requests 200 "
                        "--dataset random:in=256,out=128", "r1");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    bool seqs = false;
    size_t i, j;
    json_t *f, *k;
    json_array_foreach(json_object_get(g, "findings"), i, f)
        json_array_foreach(json_object_get(f, "knobs"), j, k) {
            const char *knob = json_string_value(json_object_get(k, "knob")), *sug = json_string_value(json_object_get(k, "suggested"));
            const char *cur = json_string_value(json_object_get(k, "current"));
            CHECK_MSG(!(strstr(knob, "dtype") && sug && !strcmp(sug, "fp8")), "%s suggested fp8 (current %s)", knob, cur ? cur : "?");
            CHECK_MSG(!(cur && sug && !strcmp(cur, sug)), "%s suggested its current value %s", knob, cur);
            if (!strcmp(knob, "max_num_seqs") && cur && !strcmp(cur, "16")) {
                seqs = !strcmp(sug, "32") && strstr(json_string_value(json_object_get(k, "direction")), "16 \xe2\x86\x92 32");
            }
        }
    CHECK(seqs);
    CHECK(finding(g, "queueing", NULL) != NULL);
    json_decref(g);
    json_decref(d);
    /* plan: V3 is released in fp8, so a V3 that does not fit on 4 x H100 is not told "fp8" */
    char *out = NULL;
    CHECK_EQ_INT(test_run("plan --model deepseek-v3 --gpu h100 --tp 4", &out, NULL), 0);
    CHECK(out && strstr(out, "--tp 4 \xe2\x86\x92 16") && !strstr(out, "weight-dtype fp8") && !strstr(out, "fp8 weights"));
    free(out);
}

/* ---- the long-context rules: DRAM bandwidth held at its ceiling (GPM telemetry added to a
 * simulated long-context run, as the sampler writes it), PCIe traffic against the link NVML
 * reports, and a KV cache short of the memory its settings give it (the simulator's own
 * accounting, and vLLM's cache_config_info read from `serve --engine sim`'s /metrics) ---- */

static bool ran(const json_t *dg, const char *rule) {
    size_t i;
    json_t *c;
    json_array_foreach(json_object_get(dg, "checked"), i, c)
        if (!strcmp(json_string_value(json_object_get(c, "rule")), rule)) return json_is_true(json_object_get(c, "ran"));
    return false;
}

static const char *knob_direction(const json_t *f, const char *knob) {
    size_t i;
    json_t *k;
    json_array_foreach(json_object_get(f, "knobs"), i, k)
        if (!strcmp(json_string_value(json_object_get(k, "knob")), knob)) return json_string_value(json_object_get(k, "direction"));
    return NULL;
}

/* A GPU telemetry section: 0.5 s samples of DRAM bandwidth (high for `high_s` from t=2 s), PCIe
 * rx/tx, the link's generation under load, and the link NVML reported (gen_max 0: none). */
static void add_gpu(json_t *doc, double high_s, double rx, double tx, int gen_max, int width, double gen_now) {
    json_t *t = json_array(), *dram = json_array(), *prx = json_array(), *ptx = json_array(), *lg = json_array();
    for (int i = 0; i < 60; i++) {
        double ts = i * 0.5;
        json_array_append_new(t, json_real(ts));
        json_array_append_new(dram, i == 0 ? json_null() : json_real(ts >= 2 && ts <= 2 + high_s ? 95 : 60));
        json_array_append_new(prx, json_real(rx));
        json_array_append_new(ptx, json_real(tx));
        json_array_append_new(lg, json_real(gen_now));
    }
    json_t *series = json_pack("{s:o,s:o,s:o,s:o,s:o}", "t_s", t, "dram_bw_util_pct", dram, "gpm_pcie_rx_mb_s", prx,
                               "gpm_pcie_tx_mb_s", ptx, "pcie_link_gen", lg);
    json_t *gpu = json_pack("{s:i,s:s,s:o}", "index", 0, "name", "NVIDIA H200", "series", series);
    if (gen_max > 0)
        json_object_set_new(gpu, "pcie", json_pack("{s:i,s:i,s:f}", "gen_max", gen_max, "width_max", width,
                                                   "link_mb_s_per_direction", nvml_pcie_link_mb_s(gen_max, width)));
    json_object_set_new(doc, "telemetry", json_pack("{s:f,s:[o]}", "interval_s", 0.5, "gpu", gpu));
}

TEST(diagnose_pcie_link_capacity) {
    CHECK_NEAR(nvml_pcie_link_mb_s(4, 16), 31507.69, 0.01);
    CHECK_NEAR(nvml_pcie_link_mb_s(5, 16), 63015.38, 0.01);
    CHECK_NEAR(nvml_pcie_link_mb_s(1, 16), 4000, 1e-9);
    CHECK_NEAR(nvml_pcie_link_mb_s(3, 8), 7876.92, 0.01);
    CHECK(isnan(nvml_pcie_link_mb_s(0, 16)) && isnan(nvml_pcie_link_mb_s(4, 0)) && isnan(nvml_pcie_link_mb_s(7, 16)));
}

/* 64k prompts decoding on one H200, the DRAM pipe at 95% for 15 s: the ceiling, when and where. */
TEST(diagnose_bandwidth_ceiling_sustained) {
    json_t *d = sim_doc("--model deepseek-v2-lite --gpu h200 --concurrency 4 --requests 8 --dataset random:in=65536,out=256", "bw");
    CHECK(d != NULL);
    if (!d) return;
    add_gpu(d, 15, 100, 100, 5, 16, 5);
    json_t *g = diag(d);
    CHECK(ran(g, "bandwidth_ceiling"));
    const json_t *f = finding(g, "bandwidth_ceiling", NULL);
    CHECK(f != NULL);
    if (f) {
        const json_t *w = json_object_get(f, "window");
        CHECK_NEAR(test_num(w, "t0_s"), 2, 1e-9);
        CHECK_NEAR(test_num(w, "t1_s"), 17, 1e-9);
        const json_t *ev = json_array_get(json_object_get(f, "evidence"), 0);
        CHECK_NEAR(test_num(ev, "value"), 15, 1e-9);
        /* the context: 65536 + 256/2 tokens */
        bool ctx = false, kv = false;
        size_t i;
        json_t *e;
        json_array_foreach(json_object_get(f, "evidence"), i, e) {
            if (!strcmp(json_string_value(json_object_get(e, "unit")) ? json_string_value(json_object_get(e, "unit")) : "", "tokens"))
                ctx = fabs(test_num(e, "value") - 65664) < 1;
            if (strstr(json_string_value(json_object_get(e, "text")), "of the bytes a decode step reads")) kv = test_num(e, "value") > 25;
        }
        CHECK_MSG(ctx, "the context of the run is in the evidence");
        CHECK_MSG(kv, "at 64k the KV read is a large part of a decode step (37%% for V2-Lite at batch 3)");
        const char *dir = knob_direction(f, "kv_cache_dtype");
        CHECK(dir && strstr(dir, "bf16") && strstr(dir, "fp8"));
    }
    json_decref(g);
    /* 9.5 s at the ceiling is not sustained */
    add_gpu(d, 9.5, 100, 100, 5, 16, 5);
    g = diag(d);
    CHECK(ran(g, "bandwidth_ceiling") && !finding(g, "bandwidth_ceiling", NULL));
    json_decref(g);
    /* no GPM: the rule says why it did not run */
    json_object_del(d, "telemetry");
    g = diag(d);
    CHECK(!ran(g, "bandwidth_ceiling") && !finding(g, "bandwidth_ceiling", NULL));
    json_decref(g);
    json_decref(d);
}

TEST(diagnose_pcie_against_the_link) {
    json_t *d = sim_doc("--concurrency 2 --requests 10 --dataset random:in=256,out=32", "pcie");
    CHECK(d != NULL);
    if (!d) return;
    /* 14 GB/s in, 4 GB/s out (18 GB/s: the fixed 16 GB/s rule would fire on any link) */
    add_gpu(d, 0, 14000, 4000, 5, 16, 5);
    json_t *g = diag(d);
    CHECK_MSG(!finding(g, "host_pcie", NULL), "22%% of a Gen5 x16 link is no finding");
    json_decref(g);
    add_gpu(d, 0, 14000, 4000, 4, 16, 4);
    g = diag(d);
    const json_t *f = finding(g, "host_pcie", NULL);
    CHECK_MSG(f != NULL, "44%% of a Gen4 x16 link (a PCIe A100's) is heavy");
    if (f) CHECK(strstr(json_string_value(json_object_get(f, "title")), "link") != NULL);
    json_decref(g);
    /* a Gen4 link trained down to Gen1 under load: said in the evidence */
    add_gpu(d, 0, 14000, 4000, 4, 16, 1);
    g = diag(d);
    f = finding(g, "host_pcie", NULL);
    bool down = false;
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(f, "evidence"), i, e)
        if (strstr(json_string_value(json_object_get(e, "source")), "pcie_link_gen")) down = true;
    CHECK(down);
    json_decref(g);
    /* NVML gave no link: the fixed threshold, and the check says so */
    add_gpu(d, 0, 14000, 4000, 0, 0, NAN);
    g = diag(d);
    CHECK(finding(g, "host_pcie", NULL) != NULL);
    json_decref(g);
    json_decref(d);
}

TEST(diagnose_kv_share_from_sim_accounting) {
    /* 30 GiB per GPU held outside the weights and the cache (activations, graphs): 69% of the share */
    json_t *d = sim_doc("--model deepseek-v2-lite --gpu h200 --reserved-mem 30GiB --concurrency 8 --requests 40", "kvs");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    const json_t *f = finding(g, "kv_share", NULL);
    CHECK(f != NULL);
    if (f) {
        CHECK(strstr(json_string_value(json_object_get(f, "title")), "69%") != NULL);
        const char *dir = knob_direction(f, "gpu_memory_utilization");
        CHECK(dir && strstr(dir, "0.90") && strstr(dir, "0.95"));
    }
    json_decref(g);
    json_decref(d);
    /* the simulator's default 2 GiB: the cache has its share */
    d = sim_doc("--model deepseek-v2-lite --gpu h200 --concurrency 8 --requests 40", "kvs2");
    g = diag(d);
    CHECK(ran(g, "kv_share") && !finding(g, "kv_share", NULL));
    json_decref(g);
    json_decref(d);
}

/* bench reads vLLM's cache_config_info from /metrics once at preflight; diagnose compares it. */
TEST(diagnose_kv_share_from_metrics) {
    test_server s;
    if (test_serve_start(&s, "--engine sim --model deepseek-v2-lite --gpu h200 --reserved-mem 40GiB --speedup 10") != 0) {
        CHECK_MSG(0, "serve did not start");
        return;
    }
    char cmd[1024], path[512];
    snprintf(path, sizeof path, "%s/bench.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "bench --url %s --concurrency 2 --requests 4 --dataset random:in=64,out=8 --server-metrics "
             "%s/metrics --quiet --out %s", s.url, s.url, path);
    int rc = test_run(cmd, NULL, NULL);
    test_serve_stop(&s);
    CHECK_EQ_INT(rc, 0);
    json_t *d = test_load_json(path);
    const json_t *dep = json_object_get(d, "deployment");
    const char *src = json_string_value(json_object_get(json_object_get(dep, "kv_capacity_tokens"), "source"));
    CHECK_MSG(src && strstr(src, "cache_config_info"), "kv capacity source: %s", src ? src : "(none)");
    json_t *g = diag(d);
    const json_t *f = finding(g, "kv_share", NULL);
    CHECK(f != NULL);
    json_decref(g);
    json_decref(d);
}

/* A level where every request failed on the server is measured (the server's answer), by the
 * sweep's own rule: diagnose reports the failures at those loads instead of skipping the levels. */
TEST(diagnose_sweep_level_all_server_failures_is_measured) {
    test_server s;
    CHECK_EQ_INT(test_serve_start(&s, "--fail-rate 1 --ttft 2ms --itl 1ms"), 0);
    char path[512], cmd[1024];
    snprintf(path, sizeof path, "%s/allfail.json", harness_tmpdir());
    snprintf(cmd, sizeof cmd, "sweep --url %s --concurrency 1,2 --requests 10 --dataset random:in=8,out=4 --quiet --out %s",
             s.url, path);
    CHECK_EQ_INT(test_run(cmd, NULL, NULL), 1);          /* every level over --max-error-rate */
    test_serve_stop(&s);
    json_t *doc = test_load_json(path);
    CHECK(doc);
    if (!doc) return;
    json_t *g = diag(doc);
    const json_t *f = finding(g, "errors", NULL);
    CHECK(f && strstr(json_string_value(json_object_get(f, "title")), "HTTP 500"));
    CHECK_EQ_INT((int)json_array_size(json_object_get(g, "levels_not_measured")), 0);
    json_decref(g);
    json_decref(doc);
}

/* GPM evidence names only the activities that were sampled (a GPU that gives DRAM only prints no
 * "tensor nan%"), a range as lo-hi, a value once. */
TEST(diagnose_gpm_text_leaves_out_what_was_not_sampled) {
    char b[160];
    CHECK_STR(diag_gpm_text(b, sizeof b, 0.8, 1.4, 0.11, 0.3, 4, 10), "DRAM bandwidth 0.8-1.4%, tensor 0.11-0.30%, SM 4-10%");
    CHECK_STR(diag_gpm_text(b, sizeof b, 92, 92, NAN, NAN, NAN, NAN), "DRAM bandwidth 92.0%");
    CHECK_STR(diag_gpm_text(b, sizeof b, NAN, NAN, 0.5, 0.5, 7, 7), "tensor 0.50%, SM 7%");
    CHECK_STR(diag_gpm_text(b, sizeof b, NAN, NAN, NAN, NAN, NAN, NAN), "");
}
