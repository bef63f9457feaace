/* Tests of the long-context diagnosis rules: DRAM bandwidth held at its ceiling (GPM telemetry
 * added to a simulated long-context run, as the sampler writes it), PCIe traffic against the link
 * NVML reports, and a KV cache short of the memory its settings give it (the simulator's own
 * accounting, and vLLM's cache_config_info read from `serve --engine sim`'s /metrics at preflight). */
#include "harness.h"
#include "testutil.h"
#include "diagnose/diagnose.h"
#include "telemetry/nvml.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

static const json_t *finding(const json_t *dg, const char *cls) {
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(dg, "findings"), i, f)
        if (!strcmp(json_string_value(json_object_get(f, "class")), cls)) return f;
    return NULL;
}

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
    const json_t *f = finding(g, "bandwidth_ceiling");
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
    CHECK(ran(g, "bandwidth_ceiling") && !finding(g, "bandwidth_ceiling"));
    json_decref(g);
    /* no GPM: the rule says why it did not run */
    json_object_del(d, "telemetry");
    g = diag(d);
    CHECK(!ran(g, "bandwidth_ceiling") && !finding(g, "bandwidth_ceiling"));
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
    CHECK_MSG(!finding(g, "host_pcie"), "22%% of a Gen5 x16 link is no finding");
    json_decref(g);
    add_gpu(d, 0, 14000, 4000, 4, 16, 4);
    g = diag(d);
    const json_t *f = finding(g, "host_pcie");
    CHECK_MSG(f != NULL, "44%% of a Gen4 x16 link (a PCIe A100's) is heavy");
    if (f) CHECK(strstr(json_string_value(json_object_get(f, "title")), "link") != NULL);
    json_decref(g);
    /* a Gen4 link trained down to Gen1 under load: said in the evidence */
    add_gpu(d, 0, 14000, 4000, 4, 16, 1);
    g = diag(d);
    f = finding(g, "host_pcie");
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
    CHECK(finding(g, "host_pcie") != NULL);
    json_decref(g);
    json_decref(d);
}

TEST(diagnose_kv_share_from_sim_accounting) {
    /* 30 GiB per GPU held outside the weights and the cache (activations, graphs): 69% of the share */
    json_t *d = sim_doc("--model deepseek-v2-lite --gpu h200 --reserved-mem 30GiB --concurrency 8 --requests 40", "kvs");
    CHECK(d != NULL);
    if (!d) return;
    json_t *g = diag(d);
    const json_t *f = finding(g, "kv_share");
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
    CHECK(ran(g, "kv_share") && !finding(g, "kv_share"));
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
    const json_t *f = finding(g, "kv_share");
    CHECK(f != NULL);
    json_decref(g);
    json_decref(d);
}
