/* Tests of deployment resolution on real inputs: a GGUF header (the DeepSeek-LLM vocabulary file in
 * shared/testdata, whose architecture keys are those of deepseek-llm-7b), llama.cpp's /props and
 * /v1/models as a real server sent them (tests/fixtures/llamacpp), the real H200 sweep's telemetry,
 * and the order in which sources override each other. */
#include "harness.h"
#include "testutil.h"
#include "deploy/deploy.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define VOCAB_GGUF "tokenizers/deepseek-llm/ggml-vocab-deepseek-llm.gguf"

/* The body of a captured response (after the blank line of its .headers file, the .body is alone). */
static json_t *fixture_body(const char *name) {
    char path[256];
    snprintf(path, sizeof path, "tests/fixtures/llamacpp/%s.body", name);
    return test_load_json(path);
}

TEST(deploy_gguf_architecture) {
    const char *gguf = harness_testdata_file(VOCAB_GGUF);
    if (!gguf) SKIP_NO_SHARED_DATA(VOCAB_GGUF);
    deploy d;
    deploy_init(&d);
    char err[256];
    /* a vocabulary-only file (no tensors) is no claim about the served model ... */
    CHECK(deploy_from_gguf(&d, gguf, false, err, sizeof err) < 0);
    CHECK(strstr(err, "vocabulary-only") != NULL);
    CHECK(!deploy_has_model(&d));
    /* ... unless the user names it as the model: its keys are deepseek-llm-7b's */
    CHECK_EQ_INT(deploy_from_gguf(&d, gguf, true, err, sizeof err), 0);
    CHECK(deploy_has_model(&d));
    const model_arch *ref = model_find("deepseek-llm-7b");
    CHECK_EQ_INT(d.arch.layers, ref->layers);
    CHECK_EQ_INT(d.arch.hidden, ref->hidden);
    CHECK_EQ_INT(d.arch.heads, ref->heads);
    CHECK_EQ_INT(d.arch.kv_heads, ref->kv_heads);
    CHECK_EQ_INT(d.arch.intermediate, ref->intermediate);
    CHECK_EQ_INT(d.arch.vocab, ref->vocab);
    model_params a, b;
    model_count_params(&d.arch, &a);
    model_count_params(ref, &b);
    CHECK_NEAR(a.total, b.total, 1);
    CHECK_EQ_INT(d.weight_dtype, DT_FP16);                   /* general.file_type 1 */
    CHECK(strstr(d.weight_dtype_s.src, "general.file_type 1") != NULL);
    CHECK(deploy_from_gguf(&d, "/nonexistent.gguf", true, err, sizeof err) < 0);
}

TEST(deploy_llamacpp_props_and_models) {
    json_t *models = fixture_body("v1_models"), *props = fixture_body("props");
    CHECK(models && props);
    deploy d;
    deploy_init(&d);
    deploy_from_server(&d, models, props, "/opt/llms/models/ds2-random-tiny-f16.gguf", NULL);
    CHECK_STR(d.engine, "llama.cpp");
    CHECK(strstr(d.engine_s.src, "/props") != NULL);
    CHECK_EQ_INT(d.max_num_seqs, 4);
    CHECK_EQ_INT(d.context_per_seq, 1024);
    CHECK_NEAR(d.params, 29575040, 0);
    CHECK_NEAR(d.model_bytes, 59166208, 0);
    CHECK_EQ_INT(d.weight_dtype, DT_FP16);                   /* 59166208 / 29575040 = 2.00 bytes */
    CHECK(!deploy_has_model(&d));                            /* the GGUF is on another host */
    /* the section reads back with its sources */
    json_t *sec = deploy_to_json(&d);
    deploy e;
    deploy_init(&e);
    deploy_from_json(&e, sec);
    CHECK_STR(e.engine, "llama.cpp");
    CHECK_EQ_INT(e.max_num_seqs, 4);
    CHECK_STR(e.max_num_seqs_s.src, d.max_num_seqs_s.src);
    json_decref(sec);
    json_decref(models);
    json_decref(props);
}

/* The real sweep's first level: NVML names the GPU, the server's pid is on it, the /metrics names
 * say llama.cpp (which splits layers, so tp 1); flags override; an architecture survives the
 * results' section round trip exactly. */
TEST(deploy_resolve_sources_and_flags) {
    json_t *sweep = test_load_json("tests/fixtures/real-gpu/medium_sweep.json");
    CHECK(sweep != NULL);
    if (!sweep) return;
    const json_t *res = json_object_get(json_array_get(json_object_get(sweep, "levels"), 0), "results");
    deploy d;
    char err[256];
    CHECK_EQ_INT(deploy_resolve(res, NULL, &d, err, sizeof err), 0);
    CHECK_STR(d.gpu, "h200");
    CHECK(strstr(d.gpu_s.src, "NVML") != NULL);
    CHECK_EQ_INT(d.n_gpus, 1);
    CHECK(strstr(d.n_gpus_s.src, "pid 4471") != NULL);
    CHECK_STR(d.engine, "llama.cpp");
    CHECK_EQ_INT(d.tp, 1);
    CHECK(!d.tp_s.assumed);
    CHECK(!deploy_has_model(&d));            /* "models/medium.gguf" is in no catalog */
    deploy_flags f = { .model_config = "tests/fixtures/real-gpu/medium_config.json", .gpu = "h100", .tp = 2 };
    CHECK_EQ_INT(deploy_resolve(res, &f, &d, err, sizeof err), 0);
    CHECK(deploy_has_model(&d));
    CHECK_EQ_INT(d.arch.n_routed_experts, 32);
    CHECK_STR(d.gpu, "h100");
    CHECK_STR(d.gpu_s.src, "--gpu");
    CHECK_EQ_INT(d.tp, 2);
    CHECK_EQ_INT(d.weight_dtype, DT_FP16);    /* torch_dtype float16 */
    model_params a, b;
    model_count_params(&d.arch, &a);
    CHECK_NEAR(a.total / 1e9, 0.906, 0.001);
    /* round trip through the results' section */
    json_t *sec = deploy_to_json(&d);
    deploy e;
    deploy_init(&e);
    deploy_from_json(&e, sec);
    model_count_params(&e.arch, &b);
    CHECK_NEAR(a.total, b.total, 0);
    CHECK_NEAR(a.active, b.active, 0);
    json_decref(sec);
    f = (deploy_flags){ .model_config = "/nonexistent/config.json" };
    CHECK(deploy_resolve(res, &f, &d, err, sizeof err) < 0);
    json_decref(sweep);
}

/* What nobody stated is assumed, and says so. */
TEST(deploy_assumptions_are_marked) {
    json_t *doc = json_pack("{s:s,s:{s:s}}", "schema", "dsperf.results/1", "config", "model", "deepseek-ai/DeepSeek-R1");
    deploy d;
    char err[256];
    CHECK_EQ_INT(deploy_resolve(doc, NULL, &d, err, sizeof err), 0);
    CHECK_STR(d.model, "deepseek-v3");
    CHECK_EQ_INT(d.weight_dtype, DT_FP8);       /* R1 is released in fp8 */
    CHECK(d.weight_dtype_s.assumed);
    CHECK(d.kv_dtype_s.assumed && d.tp_s.assumed);
    CHECK(!deploy_has_gpu(&d));
    json_decref(doc);
}

/* llama-server's command line (recorded from /proc/PID/cmdline with --server-pid): the settings
 * /props does not report, with this version's defaults for the absent ones; /props wins where it
 * speaks; another program's flags are not read. */
TEST(deploy_llama_server_cmdline) {
    json_t *doc = json_pack("{s:{s:{s:{s:{s:[sssssssssssssss]}}}}}", "telemetry", "host", "numa", "server", "cmdline",
                            "/opt/llama/bin/llama-server", "-m", "tiny.gguf", "-t", "3", "--ubatch-size=64", "-np", "4",
                            "-c", "4096", "-ctk", "q8_0", "--port", "0", "--metrics");
    deploy d;
    char err[256];
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK_EQ_INT(d.cpu_threads, 3);
    CHECK(d.cpu_threads_s.known && !d.cpu_threads_s.assumed && strstr(d.cpu_threads_s.src, "-t 3"));
    CHECK_EQ_INT(d.ubatch_tokens, 64);
    CHECK_EQ_INT(d.max_num_batched_tokens, 2048);                 /* -b absent: the default */
    CHECK(strstr(d.max_num_batched_tokens_s.src, "default") != NULL);
    CHECK_EQ_INT(d.max_num_seqs, 4);
    CHECK_EQ_INT(d.context_per_seq, 1024);                         /* -c is split over the slots */
    CHECK_EQ_INT((int)d.kv_dtype, (int)DT_INT8);
    CHECK(!d.kv_dtype_s.assumed);
    /* the section round-trips the new fields */
    json_t *sec = deploy_to_json(&d);
    deploy back;
    deploy_init(&back);
    deploy_from_json(&back, sec);
    CHECK_EQ_INT(back.cpu_threads, 3);
    CHECK_EQ_INT(back.ubatch_tokens, 64);
    json_decref(sec);
    /* /props said 2 slots of 2048: it is the stronger source */
    json_object_set_new(doc, "deployment", json_pack("{s:{s:i,s:s,s:b},s:{s:i,s:s,s:b}}",
                        "max_num_seqs", "value", 2, "source", "GET /props total_slots", "assumed", 0,
                        "context_per_seq", "value", 2048, "source", "GET /props n_ctx", "assumed", 0));
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK_EQ_INT(d.max_num_seqs, 2);
    CHECK_EQ_INT(d.context_per_seq, 2048);
    CHECK_EQ_INT(d.cpu_threads, 3);
    json_decref(doc);
    /* another program's -t is not llama-server's */
    doc = json_pack("{s:{s:{s:{s:{s:[sss]}}}}}", "telemetry", "host", "numa", "server", "cmdline", "vllm", "-t", "3");
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK_EQ_INT(d.cpu_threads, 0);
    CHECK(!d.ubatch_tokens_s.known);
    json_decref(doc);
}

/* How llama-server splits a model over GPUs (-sm, -ts on its command line): read with their values,
 * the default layer split marked as the default, a malformed mode not believed; both round-trip. */
TEST(deploy_llama_server_split_flags) {
    json_t *doc = json_pack("{s:{s:{s:{s:{s:[sssssss]}}}}}", "telemetry", "host", "numa", "server", "cmdline",
                            "llama-server", "-m", "v2lite.gguf", "--split-mode=row", "-ts", "3,1", "-ngl");
    deploy d;
    char err[256];
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK_STR(d.split_mode, "row");
    CHECK(strstr(d.split_mode_s.src, "-sm row") != NULL && !d.split_mode_s.assumed);
    CHECK_STR(d.tensor_split, "3,1");
    CHECK(strstr(d.tensor_split_s.src, "-ts 3,1") != NULL);
    json_t *sec = deploy_to_json(&d);
    deploy back;
    deploy_init(&back);
    deploy_from_json(&back, sec);
    CHECK_STR(back.split_mode, "row");
    CHECK_STR(back.tensor_split, "3,1");
    json_decref(sec);
    json_decref(doc);
    /* no -sm: llama.cpp's default layer split; no -ts: unknown here (it follows free memory) */
    doc = json_pack("{s:{s:{s:{s:{s:[sss]}}}}}", "telemetry", "host", "numa", "server", "cmdline", "llama-server", "-m", "x.gguf");
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK_STR(d.split_mode, "layer");
    CHECK(strstr(d.split_mode_s.src, "default") != NULL);
    CHECK(!d.tensor_split_s.known && d.tensor_split[0] == 0);
    json_decref(doc);
    /* a mode this llama.cpp does not have is not taken for one */
    doc = json_pack("{s:{s:{s:{s:{s:[sss]}}}}}", "telemetry", "host", "numa", "server", "cmdline", "llama-server", "-sm", "graph");
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK(!d.split_mode_s.known);
    json_decref(doc);
}

/* How many layers llama-server put on the GPU (-ngl on its command line; c392e50's default is none)
 * and whether the weights were all there: a V2-Lite shape has 27 layers and the output layer, so
 * -ngl 27 leaves the output matmul on the host and -ngl 28 does not; without a command line, GPU
 * memory held below the weights says the same. */
TEST(deploy_llama_server_gpu_layers) {
    static const struct { const char *a, *b; int layers; bool off; } cases[] = {
        {"-ngl", "99", 99, false}, {"-ngl", "28", 28, false}, {"-ngl", "27", 27, true}, {"--n-gpu-layers=8", NULL, 8, true},
        {"-ngl", "0", 0, true}, {"-c", "4096", 0, true}};   /* the last: no -ngl at all, the default */
    deploy d;
    char err[256], why[400];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *argv = json_pack("[sss]", "llama-server", "-m", "v2lite.gguf");
        json_array_append_new(argv, json_string(cases[i].a));
        if (cases[i].b) json_array_append_new(argv, json_string(cases[i].b));
        json_t *doc = json_pack("{s:{s:{s:{s:{s:o}}}}}", "telemetry", "host", "numa", "server", "cmdline", argv);
        CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){.model = "deepseek-v2-lite"}, &d, err, sizeof err), 0);
        CHECK_MSG(d.gpu_layers == cases[i].layers && d.gpu_layers_s.known, "%s %s: %d layers", cases[i].a, cases[i].b ? cases[i].b : "",
                  d.gpu_layers);
        CHECK_MSG(deploy_weights_off_gpu(&d, why, sizeof why) == cases[i].off, "%s %s: %s", cases[i].a, cases[i].b ? cases[i].b : "",
                  cases[i].off ? "not flagged" : why);
        if (i == 5) CHECK(strstr(d.gpu_layers_s.src, "default -ngl 0") != NULL);
        if (i == 2) CHECK(strstr(why, "27 of the model's 28 layers") != NULL);
        json_t *sec = deploy_to_json(&d);   /* 0 layers round-trips: it is a count, not a missing value */
        deploy back;
        deploy_init(&back);
        deploy_from_json(&back, sec);
        CHECK_EQ_INT(back.gpu_layers, cases[i].layers);
        json_decref(sec);
        json_decref(doc);
    }
    /* no -ngl on a build past the one read here: its default is not known, so not assumed */
    json_t *late = json_pack("{s:{s:{s:s,s:s,s:b}},s:{s:{s:{s:{s:[sss]}}}}}", "deployment", "engine", "value", "llama.cpp", "source",
                             "GET /props answered (llama-server build b7000-abcdef0)", "assumed", 0, "telemetry", "host", "numa",
                             "server", "cmdline", "llama-server", "-m", "x.gguf");
    CHECK_EQ_INT(deploy_resolve(late, &(deploy_flags){.model = "deepseek-v2-lite"}, &d, err, sizeof err), 0);
    CHECK(!d.gpu_layers_s.known && !deploy_weights_off_gpu(&d, why, sizeof why));
    json_decref(late);
    /* a later build's -ngl auto is not a count: unknown, and nothing said about the weights */
    json_t *doc = json_pack("{s:{s:{s:{s:{s:[sss]}}}}}", "telemetry", "host", "numa", "server", "cmdline", "llama-server", "-ngl", "auto");
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){.model = "deepseek-v2-lite"}, &d, err, sizeof err), 0);
    CHECK(!d.gpu_layers_s.known && !deploy_weights_off_gpu(&d, why, sizeof why));
    json_decref(doc);
    /* no command line: the server's process held 1000 MiB of GPU memory for 1728 MiB of weights */
    doc = json_pack("{s:{s:{s:f,s:s,s:b}},s:{s:[{s:s,s:[{s:i,s:f}]}],s:{s:{s:{s:i}}}}}", "deployment", "model_bytes", "value",
                    1728.0 * 1048576, "source", "GET /v1/models meta.size", "assumed", 0, "telemetry", "gpu", "name", "NVIDIA H200",
                    "processes", "pid", 77, "used_mib", 1000.0, "host", "numa", "server", "pid", 77);
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK(deploy_weights_off_gpu(&d, why, sizeof why) && strstr(why, "held 1000 MiB") && strstr(why, "pid 77"));
    json_object_set_new(json_array_get(json_object_get(json_array_get(json_object_get(json_object_get(doc, "telemetry"), "gpu"), 0),
                                                       "processes"), 0), "used_mib", json_real(5000));
    CHECK_EQ_INT(deploy_resolve(doc, &(deploy_flags){0}, &d, err, sizeof err), 0);
    CHECK(!deploy_weights_off_gpu(&d, why, sizeof why));
    json_decref(doc);
}

/* The simulator's setup from a real run's deployment (tests/fixtures/real-gpu/h100_overhead_q4.json,
 * level c = 1: llama-server c392e50 on an H100, V2-Lite in Q4_0, -np 32 -c 65536): the b4747 profile
 * (its build unknown: a source tarball), the GGUF's architecture whole, the GPU by its NVML name, the
 * weights as q4 (the run recorded int4, as dsperf did before stop 43), the slots and the KV; a flag
 * given first stands, and what the run did not state is said to be the default. */
TEST(deploy_sim_setup_from_a_real_run) {
    json_t *doc = test_load_json("tests/fixtures/real-gpu/h100_overhead_q4.json");
    const json_t *res = json_object_get(json_array_get(json_object_get(doc, "levels"), 0), "results");
    deploy d;
    char err[256], said[2048];
    CHECK(res && deploy_resolve(res, NULL, &d, err, sizeof err) == 0);
    CHECK_EQ_INT(d.weight_dtype, DT_Q4);
    sim_params p;
    sim_default_params(&p);
    deploy_sim_setup(&d, &p, said, sizeof said);
    CHECK_STR(p.engine_profile, "llamacpp-b4747");
    CHECK(p.arch_set && p.arch.layers == 27 && p.arch.n_routed_experts == 64);
    CHECK_STR(p.gpu, "h100");
    CHECK_STR(p.weight_dtype, "q4");
    CHECK_EQ_INT(p.max_num_seqs, 32);
    CHECK_EQ_INT((int)(p.num_gpu_blocks * p.block_size), 65536);
    CHECK_MSG(strstr(said, "build unknown") && !strstr(said, "not stated"), "%s", said);
    /* a flag before it stands */
    sim_default_params(&p);
    CHECK(sim_params_set(&p, "gpu", "h200", err, sizeof err) == 0 && sim_params_set(&p, "max-num-seqs", "8", err, sizeof err) == 0);
    deploy_sim_setup(&d, &p, said, sizeof said);
    CHECK_STR(p.gpu, "h200");
    CHECK_EQ_INT(p.max_num_seqs, 8);
    /* a run that states nothing: the defaults, each said */
    deploy_init(&d);
    sim_default_params(&p);
    deploy_sim_setup(&d, &p, said, sizeof said);
    CHECK_MSG(strstr(said, "model not stated by the run: the default deepseek-v2-lite") &&
              strstr(said, "running sequences not stated by the run"), "%s", said);
    json_decref(doc);
}
