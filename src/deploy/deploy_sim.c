/* deploy_sim — the simulator's setup for a measured run: what the run's deployment stated (engine,
 * model, GPU, TP, weights), for the keys no flag gave, so `sim --calibrate` and `sim --validate` on a
 * run predict the deployment that ran without being told it again. */
#include "deploy/deploy_int.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

long deploy_llamacpp_build(const deploy *d) {
    const char *b = strstr(d->engine_s.src, "build b");
    return b ? strtol(b + 7, NULL, 10) : 0;
}

static void say(char *said, size_t len, const char *fmt, const char *a, const char *b) {
    size_t n = strlen(said);
    if (n + 2 < len) snprintf(said + n, len - n, n ? "; " : "");
    n = strlen(said);
    if (n + 1 < len) snprintf(said + n, len - n, fmt, a, b);
}

static bool stated(const deploy_src *s) { return s->known && !s->assumed; }

void deploy_sim_setup(const deploy *d, sim_params *p, char *said, size_t saidlen) {
    char err[256], num[32];
    said[0] = 0;
    unsigned given = p->given;
    if (!(given & SIM_GIVEN_PROFILE) && stated(&d->engine_s) && !strcmp(d->engine, "llama.cpp")) {
        long build = deploy_llamacpp_build(d);
        const char *prof = build > 0 && build >= LLAMACPP_MOE_REWORK_BUILD ? "llamacpp" : "llamacpp-b4747";
        snprintf(num, sizeof num, "b%ld", build);
        if (sim_params_set(p, "engine-profile", prof, err, sizeof err) == 0)
            say(said, saidlen, build > 0 ? "engine llama.cpp: profile %s (build %s)" : "engine llama.cpp: profile %s (build unknown%s: "
                "taken as before the April 2025 MoE rework, as this project's c392e50; --engine-profile llamacpp for a later build)",
                prof, build > 0 ? num : "");
    }
    /* a simulated server says whose steps it timed */
    if (!(given & SIM_GIVEN_PROFILE) && stated(&d->sim_profile_s) && !strcmp(d->engine, "dsperf sim") &&
        sim_params_set(p, "engine-profile", d->sim_profile, err, sizeof err) == 0)
        say(said, saidlen, "engine dsperf sim: profile %s (%s)", d->sim_profile, d->sim_profile_s.src);
    /* vLLM and SGLang: their current engines (a run does not record which version served it) */
    static const struct { const char *engine, *profile; } cur[] = {{"vllm", "vllm-v1"}, {"sglang", "sglang"}};
    for (size_t i = 0; i < sizeof cur / sizeof cur[0]; i++)
        if (!(given & SIM_GIVEN_PROFILE) && stated(&d->engine_s) && !strcmp(d->engine, cur[i].engine) &&
            sim_params_set(p, "engine-profile", cur[i].profile, err, sizeof err) == 0)
            say(said, saidlen, "engine %s: profile %s (its current version; --engine-profile for an older one)", cur[i].engine, cur[i].profile);
    if (!(given & SIM_GIVEN_MODEL) && stated(&d->arch_s) && deploy_has_model(d)) {
        p->arch = d->arch;
        p->arch_set = true;
        p->model_config[0] = 0;
        say(said, saidlen, "model %s (%s)", d->arch.name, d->arch_s.src);
    }
    if (!(given & SIM_GIVEN_GPU) && stated(&d->gpu_s) && sim_params_set(p, "gpu", d->gpu, err, sizeof err) == 0)
        say(said, saidlen, "GPU %s (%s)", d->gpu, d->gpu_s.src);
    if (!(given & SIM_GIVEN_TP) && stated(&d->tp_s) && d->tp > 0) {
        snprintf(num, sizeof num, "%d", d->tp);
        if (sim_params_set(p, "tp", num, err, sizeof err) == 0) say(said, saidlen, "TP %s (%s)", num, d->tp_s.src);
    }
    if (!(given & SIM_GIVEN_WDTYPE) && stated(&d->weight_dtype_s)) {
        const char *w = model_dtype_name(d->weight_dtype);
        if (sim_params_set(p, "weight-dtype", w, err, sizeof err) == 0) say(said, saidlen, "weights %s (%s)", w, d->weight_dtype_s.src);
    }
    if (!p->max_num_seqs_set && stated(&d->max_num_seqs_s) && d->max_num_seqs > 0) {
        snprintf(num, sizeof num, "%d", d->max_num_seqs);
        if (sim_params_set(p, "max-num-seqs", num, err, sizeof err) == 0)
            say(said, saidlen, "%s running sequences at most (%s)", num, d->max_num_seqs_s.src);
    }
    if (!(given & SIM_GIVEN_BLOCKS) && stated(&d->kv_capacity_tokens_s) && d->kv_capacity_set && d->kv_capacity_tokens > 0) {
        p->num_gpu_blocks = (long long)ceil(d->kv_capacity_tokens / (p->block_size > 0 ? p->block_size : 16));
        snprintf(num, sizeof num, "%.0f", d->kv_capacity_tokens);
        say(said, saidlen, "KV %s tokens (%s)", num, d->kv_capacity_tokens_s.src);
    }
    /* what the run did not state stays at the simulator's default: said, so a wrong one is seen */
    if (!(given & SIM_GIVEN_PROFILE) && !strstr(said, "engine "))
        say(said, saidlen, "engine not recognised in the run: the default profile %s%s", p->engine_profile, " (--engine-profile to name it)");
    if (!(given & SIM_GIVEN_MODEL) && !p->arch_set && !p->model_config[0])
        say(said, saidlen, "model not stated by the run: the default %s%s", p->model, " (--model or --model-config to name it)");
    if (!p->max_num_seqs_set) {
        snprintf(num, sizeof num, "%d", p->max_num_seqs);
        say(said, saidlen, "running sequences not stated by the run: the engine profile's default %s%s", num, " (--max-num-seqs to name it)");
    }
    p->given = given;   /* taken from the run, not given: a later flag still changes them */
}
