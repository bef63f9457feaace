/* run/serve — `dsperf serve`'s composition (see serve.h): the engines built from their options,
 * one per event loop, and the server started, run until it stops, and torn down. */
#include "run/serve.h"
#include "common/bindaddr.h"
#include "engine/fixed.h"
#include "engine/sim.h"
#include "engine/sim_interval.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Builds an engine from the options the server did not recognise. Returns NULL with err set;
 * every failure here is a usage error (unknown key or bad value). */
typedef engine *(*serve_engine_factory)(const run_serve_kv *opts, int n_opts, uint64_t seed, const char *served_model,
                                        server_params *sp, char *err, size_t errlen);

static engine *fixed_from_options(const run_serve_kv *opts, int n, uint64_t seed, const char *served_model, server_params *sp,
                                  char *err, size_t errlen) {
    (void)served_model;
    (void)sp;
    fixed_params p;
    fixed_default_params(&p);
    p.seed = seed;
    for (int i = 0; i < n; i++) {
        int rc = fixed_params_set(&p, opts[i].key, opts[i].value, err, errlen);
        if (rc == 1) snprintf(err, errlen, "unknown option --%s for --engine fixed (see dsperf serve --help)", opts[i].key);
        if (rc) return NULL;
    }
    return engine_fixed_create(&p, err, errlen);
}

/* The simulated deployment as clients may read it: GET /v1/models meta.sim (the simulator's settings,
 * which deploy_from_server reads: a sweep's roofline then knows the GPU), and for vLLM's
 * cache_config_info on /metrics what set the KV cache's size. meta is set once (the first loop's
 * engine); the caller frees it. */
static void sim_facts(const sim_params *p, engine *e, server_params *sp) {
    sim_info info;
    cost_model c;
    char err[256];
    int mml = p->max_model_len;
    if (mml <= 0 && sim_params_cost(p, &c, err, sizeof err) == 0) { mml = c.arch.max_position; cost_free(&c); }
    long long blocks = sim_get_info(e, &info) == 0 ? info.total_blocks : 0;
    json_t *sim = json_pack("{s:s,s:s,s:i,s:i,s:s,s:s,s:i,s:i,s:i,s:f,s:b,s:i,s:I}", "model",
        sim_params_model_name(p), "gpu", p->gpu, "tp", p->tp, "ep", p->ep, "weight_dtype",
        p->weight_dtype, "kv_dtype", p->kv_dtype, "max_num_seqs", p->max_num_seqs, "max_num_batched_tokens",
        sim_params_batch_tokens(p), "block_size", p->block_size, "gpu_memory_utilization", p->gpu_memory_utilization,
        "chunked_prefill", p->chunked_prefill, "max_model_len", mml, "kv_tokens", (json_int_t)(blocks * p->block_size));
    json_object_set_new(sim, "num_gpu_blocks", json_integer(p->num_gpu_blocks));   /* an override; 0 none */
    json_object_set_new(sim, "engine_profile", json_string(p->engine_profile));    /* whose steps it times */
    if (p->arch_set) json_object_set_new(sim, "architecture", model_arch_to_hf_json(&p->arch));   /* a model given whole */
    /* what the served figures are: the simulator's predictions, each good to its 80% interval
     * (sim_interval.h); a client that measures this server records the interval beside its
     * measurements (bench's prediction_interval), never in them */
    sim_iv_load iv = sim_interval_kind(SIM_IV_STEADY, p->engine_profile, p->gpu);   /* an unseen engine/architecture: wider */
    json_object_set_new(sim, "prediction_interval", json_pack("{s:f,s:b,s:b,s:f,s:f,s:f,s:s}", "level", 0.8, "calibrated", p->calibrated,
        "unseen", iv == SIM_IV_UNSEEN,
        "tpot_factor", exp(sim_interval_q(SIM_IV_TPOT, iv, p->calibrated)), "throughput_factor", exp(sim_interval_q(SIM_IV_TPUT, iv, p->calibrated)),
        "ttft_factor", exp(sim_interval_q(SIM_IV_TTFT, iv, p->calibrated)),
        "basis", sim_interval_basis(iv, p->calibrated)));
    json_t *meta = json_pack("{s:s,s:o}", "engine", "dsperf sim", "sim", sim);
    if (!sp->models_meta_json) sp->models_meta_json = meta ? json_dumps(meta, JSON_COMPACT) : NULL;
    json_decref(meta);
    sp->gpu_memory_utilization = p->gpu_memory_utilization;
    sp->num_gpu_blocks_override = p->num_gpu_blocks;
}

/* The simulated DeepSeek engine: the served --model picks the catalog model (HF ids work) unless
 * the simulator's own --sim-model is given; every other unknown option is a simulator option. */
static engine *sim_from_options(const run_serve_kv *opts, int n, uint64_t seed, const char *served_model, server_params *sp,
                                char *err, size_t errlen) {
    (void)seed;
    sim_params p;
    sim_default_params(&p);
    bool model_given = false;
    for (int i = 0; i < n; i++) {
        const char *key = opts[i].key;
        if (!strcmp(key, "sim-model")) { key = "model"; model_given = true; }
        int rc = sim_params_set(&p, key, opts[i].value, err, errlen);
        if (rc == 1) snprintf(err, errlen, "unknown option --%s for --engine sim (see dsperf serve --help)", opts[i].key);
        if (rc) return NULL;
    }
    /* the request path is the simulator's stand-in for a Python server's HTTP and tokenization; here
     * requests come over real HTTP into the engine itself, so the flags would change nothing: said */
    if (p.factors.request_s > 0 || p.factors.request_token_s > 0) {
        snprintf(err, errlen, "--request-time and --request-per-token-time model a server's way outside the engine for dsperf sim "
                 "(and sim --validate); serve --engine sim is reached over real HTTP: leave them out here");
        return NULL;
    }
    /* a calibrated profile's model is the one its factors were fitted on */
    if (!model_given && !(p.from_profile & SIM_GIVEN_MODEL) && served_model) {
        char e2[256];
        if (sim_params_set(&p, "model", served_model, e2, sizeof e2) != 0) {
            snprintf(err, errlen, "--engine sim does not know the model '%s' (dsperf plan --list shows the catalog; "
                     "or give --sim-model NAME and keep --model as the served name)", served_model);
            return NULL;
        }
    }
    /* with prefix caching the engine needs each prompt's identity: its KV blocks' hashes */
    if (p.prefix_caching) sp->prefix_block_tokens = p.block_size;
    sp->kv_block_tokens = p.block_size;
    engine *e = engine_sim_create(&p, err, errlen);
    if (e) sim_facts(&p, e, sp);
    return e;
}

static const char *fixed_help(void) { return fixed_params_help; }
/* The simulator's own option list, less its --model entry (and that entry's continuation lines):
 * in serve, --model is the served name and --sim-model names the catalog model. */
static const char *sim_help(void) {
    static char buf[8192];
    size_t n = (size_t)snprintf(buf, sizeof buf, "  --sim-model NAME           catalog model to simulate (default: the served --model;\n                             dsperf plan --list names them)\n");
    bool skipping = false;
    for (const char *l = sim_params_help(); *l && n < sizeof buf - 1;) {
        const char *nl = strchr(l, '\n');
        size_t len = nl ? (size_t)(nl - l) + 1 : strlen(l);
        bool option_line = !strncmp(l, "  --", 4);
        if (option_line) skipping = !strncmp(l, "  --model ", 10);
        if (!skipping) n += (size_t)snprintf(buf + n, sizeof buf - n, "%.*s", (int)len, l);
        l += len;
    }
    return buf;
}

static const struct {
    const char *name;
    serve_engine_factory create;
    const char *(*help)(void);
} engines[] = {
    {"fixed", fixed_from_options, fixed_help},
    {"sim", sim_from_options, sim_help},
};
#define N_ENGINES (int)(sizeof engines / sizeof engines[0])


size_t run_serve_engine_count(void) { return (size_t)N_ENGINES; }
const char *run_serve_engine_name(size_t i) { return i < (size_t)N_ENGINES ? engines[i].name : NULL; }
const char *run_serve_engine_help(size_t i) { return i < (size_t)N_ENGINES ? engines[i].help() : NULL; }

void run_serve_defaults(run_serve_opts *o) {
    memset(o, 0, sizeof *o);
    server_default_params(&o->server);
    o->engine = "fixed";
}

ds_result run_serve(run_serve_opts *o, char *err, size_t errlen) {
    server_params *sp = &o->server;
    int ei = -1;
    for (int i = 0; i < N_ENGINES; i++) if (!strcmp(engines[i].name, o->engine)) ei = i;
    if (ei < 0) { snprintf(err, errlen, "unknown --engine '%s' (known: fixed, sim)", o->engine); return DS_EINVAL; }
    ds_result rc = DS_EINVAL;
    server *srv = NULL;
    engine **engs = calloc((size_t)sp->threads, sizeof *engs);
    if (!engs) { snprintf(err, errlen, "out of memory"); return DS_ENOMEM; }
    for (int i = 0; i < sp->threads; i++) {
        engs[i] = engines[ei].create(o->engine_opts, o->n_engine_opts, sp->seed + (uint64_t)i, sp->model, sp, err, errlen);
        if (!engs[i]) goto out;   /* an unknown key or a bad value: a usage error */
    }
    if (sp->models_meta_json && sp->speedup != 1) {
        /* engine time runs `speedup` times faster than the client's clock: say so, so that what the
         * client measures is compared with the engine's predictions on one clock */
        json_t *m = json_loads(sp->models_meta_json, 0, NULL);
        if (m) {
            json_object_set_new(m, "speedup", json_real(sp->speedup));
            free((char *)sp->models_meta_json);
            sp->models_meta_json = json_dumps(m, JSON_COMPACT);
            json_decref(m);
        }
    }
    sp->handle_signals = true;
    bindaddr_warn_exposed("dsperf serve", sp->host);
    sp->lm.nonce_salt = sp->seed;   /* servers started with different --seed draw different --logprob-jitter */
    if (server_start(&srv, sp, engs, err, errlen) < 0) { rc = DS_ERUN; goto out; }
    if (o->on_listening) o->on_listening(o->ctx, sp->host, server_port(srv));
    server_run(srv);
    rc = DS_OK;
out:
    server_free(srv);
    for (int i = 0; i < sp->threads; i++) engine_destroy(engs[i]);
    free(engs);
    free((char *)sp->models_meta_json);
    sp->models_meta_json = NULL;
    return rc;
}
