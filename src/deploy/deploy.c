/* deploy — resolution of a run's deployment from its sources (see deploy.h for the order), what a
 * server says about itself at preflight (llama.cpp /props and /v1/models meta, the served id),
 * telemetry's GPUs, the assumptions for what nobody stated, and the cost model of the result. */
#include "deploy/deploy_int.h"
#include <ctype.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

void deploy_init(deploy *d) {
    memset(d, 0, sizeof *d);
    d->chunked_prefill = -1;
    d->gpu_layers = -1;
    d->gpu_held_mib = NAN;
}

void deploy_set(deploy_src *s, bool assumed, const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(s->src, sizeof s->src, fmt, ap);
    va_end(ap);
    s->known = true;
    s->assumed = assumed;
}

static void copy(char *dst, size_t n, const char *src) { snprintf(dst, n, "%s", src ? src : ""); }

double deploy_weight_bytes(const deploy *d, const char **src) {
    if (d->model_bytes_s.known && d->model_bytes > 0) { *src = d->model_bytes_s.src; return d->model_bytes; }
    if (!deploy_has_model(d)) return NAN;
    cost_model c;
    char err[128];
    if (deploy_cost(d, NULL, &c, err, sizeof err) < 0) return NAN;
    double b = c.weight_bytes_per_gpu * (d->tp > 0 ? d->tp : 1);
    cost_free(&c);
    *src = "the model's parameters x bytes per weight";
    return b;
}

bool deploy_weights_off_gpu(const deploy *d, char *why, size_t whylen) {
    int all = d->arch.layers > 0 ? d->arch.layers + 1 : 0;   /* llama.cpp offloads the output layer as one more */
    if (d->gpu_layers_s.known && d->gpu_layers >= 0 && all && d->gpu_layers < all) {
        snprintf(why, whylen, "%s: %d of the model's %d layers (with its output layer) on the GPU, the rest on the host's CPU",
                 d->gpu_layers_s.src, d->gpu_layers, all);
        return true;
    }
    const char *wsrc = NULL;
    double wb = d->gpu_held_mib_s.known && isfinite(d->gpu_held_mib) ? deploy_weight_bytes(d, &wsrc) : NAN;
    if (wb > 0 && d->gpu_held_mib * 1048576.0 < wb) {
        snprintf(why, whylen, "the server's process held %.0f MiB of GPU memory (%s) for %.0f MiB of weights (%s): they "
                 "cannot all have been on the GPU", d->gpu_held_mib, d->gpu_held_mib_s.src, wb / 1048576.0, wsrc);
        return true;
    }
    return false;
}

bool deploy_has_model(const deploy *d) { return d->arch_s.known && d->arch.layers > 0; }
bool deploy_has_gpu(const deploy *d) { return d->gpu_s.known && hw_find(d->gpu) != NULL; }

/* ---- the catalog: a served id or a sim config's model ---- */

static bool from_catalog(deploy *d, const char *name, const char *how) {
    const model_arch *m = model_find(name);
    if (!m) return false;
    d->arch = *m;
    deploy_set(&d->arch_s, false, "catalog %s (%s)", m->name, how);
    copy(d->model, sizeof d->model, m->name);
    deploy_set(&d->model_s, false, "%s", how);
    return true;
}

int deploy_from_model_config(deploy *d, const char *path, char *err, size_t errlen) {
    FILE *f = fopen(path, "rb");
    char magic[4] = {0};
    if (!f) { snprintf(err, errlen, "cannot open model config '%s'", path); return -1; }
    size_t n = fread(magic, 1, 4, f);
    fclose(f);
    if (n == 4 && !memcmp(magic, "GGUF", 4)) return deploy_from_gguf(d, path, true, err, errlen);
    model_arch m;
    if (model_load_hf_config(path, &m, err, errlen) < 0) return -1;
    d->arch = m;
    deploy_set(&d->arch_s, false, "model config %s", path);
    copy(d->model, sizeof d->model, m.name);
    deploy_set(&d->model_s, false, "model config %s", path);
    if (m.native_dtype != DT_BF16) {
        d->weight_dtype = m.native_dtype;
        deploy_set(&d->weight_dtype_s, false, "model config %s (quantization_config / torch_dtype)", path);
    }
    return 0;
}

/* ---- what the server says at preflight ---- */

static const char *engine_of_owner(const char *owner) {
    static const struct { const char *owner, *engine; } t[] = {
        {"llamacpp", "llama.cpp"}, {"vllm", "vllm"}, {"sglang", "sglang"}, {"dsperf", "dsperf serve"},
        {"tgi", "tgi"}, {"text-generation-inference", "tgi"},
    };
    for (size_t i = 0; owner && i < sizeof t / sizeof t[0]; i++)
        if (!strcasecmp(owner, t[i].owner)) return t[i].engine;
    return NULL;
}

static void dtype_from_size(deploy *d, double bytes, double params, const char *how) {
    if (d->weight_dtype_s.known || !(bytes > 0) || !(params > 0)) return;
    double bpp = bytes / params;
    model_dtype dt;
    if (bpp >= 1.8 && bpp <= 2.2) dt = DT_FP16;
    else if (bpp >= 0.95 && bpp <= 1.2) dt = DT_INT8;
    else if (bpp >= 0.45 && bpp <= 0.75) dt = DT_INT4;
    else return;
    d->weight_dtype = dt;
    deploy_set(&d->weight_dtype_s, false, "%s: %.2f bytes per parameter", how, bpp);
}

/* The served GGUF when it is readable here (same host): the whole architecture. */
static void try_gguf(deploy *d, const char *path, const char *how) {
    if (!path || !*path || d->arch_s.known || access(path, R_OK)) return;
    size_t n = strlen(path);
    if (n < 5 || strcasecmp(path + n - 5, ".gguf")) return;
    char err[256];
    if (deploy_from_gguf(d, path, false, err, sizeof err) == 0) {
        char src[DEPLOY_SRC_LEN];
        snprintf(src, sizeof src, "%.130s (%.60s)", d->arch_s.src, how);
        copy(d->arch_s.src, sizeof d->arch_s.src, src);
    }
}

/* "/models/DeepSeek-V2-Lite-Chat.gguf" → "DeepSeek-V2-Lite-Chat" for the catalog. */
static bool catalog_from_path(deploy *d, const char *id) {
    if (!id) return false;
    const char *b = strrchr(id, '/');
    char name[128];
    copy(name, sizeof name, b ? b + 1 : id);
    size_t n = strlen(name);
    if (n > 5 && !strcasecmp(name + n - 5, ".gguf")) name[n - 5] = 0;
    char how[DEPLOY_SRC_LEN];
    snprintf(how, sizeof how, "served model id '%s'", id);
    return from_catalog(d, id, how) || from_catalog(d, name, how);
}

static void from_sim_config(deploy *d, const json_t *sim, const char *where);

void deploy_from_server(deploy *d, const json_t *models, const json_t *props, const char *model_id,
                        const char *tokenizer_path) {
    const json_t *data = json_object_get(models, "data"), *entry = json_array_get(data, 0), *e;
    size_t i;
    json_array_foreach(data, i, e)
        if (model_id && json_string_value(json_object_get(e, "id")) && !strcmp(json_string_value(json_object_get(e, "id")), model_id))
            entry = e;
    const char *id = json_string_value(json_object_get(entry, "id"));
    if (id) {
        copy(d->served_model, sizeof d->served_model, id);
        deploy_set(&d->served_model_s, false, "GET /v1/models");
    }
    const char *owner = json_string_value(json_object_get(entry, "owned_by"));
    const char *eng = engine_of_owner(owner);
    if (eng) {
        copy(d->engine, sizeof d->engine, eng);
        deploy_set(&d->engine_s, false, "GET /v1/models owned_by \"%s\"", owner);
    }
    bool llama = json_is_object(props) && (json_object_get(props, "total_slots") || json_object_get(props, "default_generation_settings"));
    if (llama) {
        const char *bi = json_string_value(json_object_get(props, "build_info"));
        copy(d->engine, sizeof d->engine, "llama.cpp");
        deploy_set(&d->engine_s, false, "GET /props answered (llama-server%s%s)", bi ? " build " : "", bi ? bi : "");
        const json_t *slots = json_object_get(props, "total_slots");
        if (json_is_integer(slots) && json_integer_value(slots) > 0) {
            d->max_num_seqs = (int)json_integer_value(slots);
            deploy_set(&d->max_num_seqs_s, false, "GET /props total_slots (llama-server -np)");
        }
        const json_t *nctx = json_object_get(json_object_get(props, "default_generation_settings"), "n_ctx");
        if (json_is_integer(nctx) && json_integer_value(nctx) > 0) {
            d->context_per_seq = (int)json_integer_value(nctx);
            deploy_set(&d->context_per_seq_s, false, "GET /props default_generation_settings.n_ctx (per slot)");
        }
        /* one KV cache of -c cells, cut into -np slots of -c / -np: its size is a setting, not
         * what memory allowed */
        if (d->max_num_seqs_s.known && d->context_per_seq_s.known && !d->kv_capacity_tokens_s.known) {
            d->kv_capacity_tokens = (double)d->max_num_seqs * d->context_per_seq;
            d->kv_capacity_set = true;
            deploy_set(&d->kv_capacity_tokens_s, false, "GET /props total_slots x n_ctx per slot (llama-server -c)");
        }
        try_gguf(d, json_string_value(json_object_get(props, "model_path")), "GET /props model_path, readable here");
    }
    const json_t *meta = json_object_get(entry, "meta");
    double np = json_number_value(json_object_get(meta, "n_params")), sz = json_number_value(json_object_get(meta, "size"));
    if (np > 0) { d->params = np; deploy_set(&d->params_s, false, "GET /v1/models meta.n_params"); }
    if (sz > 0) { d->model_bytes = sz; deploy_set(&d->model_bytes_s, false, "GET /v1/models meta.size"); }
    from_sim_config(d, json_object_get(meta, "sim"), "GET /v1/models meta.sim");
    double speedup = json_number_value(json_object_get(meta, "speedup"));
    if (speedup > 0 && json_object_get(meta, "sim")) {
        d->time_scale = speedup;
        deploy_set(&d->time_scale_s, false, "GET /v1/models meta.speedup (serve --speedup)");
    }
    try_gguf(d, id, "the served id, readable here");
    try_gguf(d, tokenizer_path, "the --tokenizer file is the served model");
    if (!d->arch_s.known) catalog_from_path(d, id);
    dtype_from_size(d, sz, np, "GET /v1/models meta size / n_params");
}

/* ---- a results document ---- */

/* NVML: the GPU type by name ("NVIDIA H200" → h200), and how many GPUs the server holds: those
 * listing the server's pid when it is known, else those with any process, else all sampled. */
static bool gpu_from_name(const char *name, char *out, size_t len) {
    char buf[128];
    copy(buf, sizeof buf, name);
    char *save = NULL;
    for (char *w = strtok_r(buf, " -", &save); w; w = strtok_r(NULL, " -", &save)) {
        for (char *p = w; *p; p++) *p = (char)tolower((unsigned char)*p);
        if (hw_find(w)) { copy(out, len, hw_find(w)->name); return true; }
    }
    return false;
}

static bool gpu_holds(const json_t *g, json_int_t pid) {
    size_t i;
    json_t *p;
    json_array_foreach(json_object_get(g, "processes"), i, p)
        if (pid <= 0 || json_integer_value(json_object_get(p, "pid")) == pid) return true;
    return false;
}

static void from_telemetry(deploy *d, const json_t *doc) {
    const json_t *tel = json_object_get(doc, "telemetry"), *gpus = json_object_get(tel, "gpu");
    const char *src = json_string_value(json_object_get(json_object_get(tel, "server"), "source"));
    if (src && !strcmp(src, "llamacpp")) {
        copy(d->engine, sizeof d->engine, "llama.cpp");
        deploy_set(&d->engine_s, false, "telemetry.server.source (llama.cpp /metrics names)");
    } else if (src && (!strcmp(src, "vllm") || !strcmp(src, "sglang") || !strcmp(src, "tgi"))) {
        copy(d->engine, sizeof d->engine, src);
        deploy_set(&d->engine_s, false, "telemetry.server.source (/metrics names)");
    }
    const char *name = json_string_value(json_object_get(json_array_get(gpus, 0), "name"));
    if (!name) {
        /* no sampler: the environment's GPU list (names only) */
        const json_t *env = json_object_get(json_object_get(doc, "environment"), "gpus");
        const json_t *g0 = json_array_get(env, 0);
        name = json_is_string(g0) ? json_string_value(g0) : json_string_value(json_object_get(g0, "name"));
        if (name && gpu_from_name(name, d->gpu, sizeof d->gpu)) {
            deploy_set(&d->gpu_s, false, "environment.gpus: \"%s\"", name);
            d->n_gpus = (int)json_array_size(env);
            deploy_set(&d->n_gpus_s, true, "environment.gpus: %d on the client host (assumed all serve)", d->n_gpus);
        }
        return;
    }
    if (!gpu_from_name(name, d->gpu, sizeof d->gpu)) return;
    deploy_set(&d->gpu_s, false, "NVML: \"%s\"", name);
    json_int_t pid = json_integer_value(json_object_get(json_object_get(json_object_get(json_object_get(tel, "host"), "numa"),
                                                                        "server"), "pid"));
    size_t i, k, with_pid = 0, with_any = 0;
    const json_t *g, *pr;
    double held_pid = 0, held_any = 0;
    json_array_foreach(gpus, i, g) {
        if (pid > 0 && gpu_holds(g, pid)) with_pid++;
        if (gpu_holds(g, 0)) with_any++;
        json_array_foreach(json_object_get(g, "processes"), k, pr) {
            double m = json_number_value(json_object_get(pr, "used_mib"));
            held_any += m;
            if (pid > 0 && json_integer_value(json_object_get(pr, "pid")) == pid) held_pid += m;
        }
    }
    /* what the server held of GPU memory: its own process's where the run named it, else every
     * process's (at least the server's: enough to say its weights did not fit) */
    if (with_pid) {
        d->gpu_held_mib = held_pid;
        deploy_set(&d->gpu_held_mib_s, false, "NVML processes: pid %lld", (long long)pid);
    } else if (with_any) {
        d->gpu_held_mib = held_any;
        deploy_set(&d->gpu_held_mib_s, false, "NVML processes: all on the GPUs");
    }
    if (with_pid) {
        d->n_gpus = (int)with_pid;
        deploy_set(&d->n_gpus_s, false, "NVML: %zu of %zu GPUs hold the server's process (pid %lld)", with_pid,
                   json_array_size(gpus), (long long)pid);
    } else if (with_any) {
        d->n_gpus = (int)with_any;
        deploy_set(&d->n_gpus_s, false, "NVML: %zu of %zu GPUs hold a process", with_any, json_array_size(gpus));
    } else {
        d->n_gpus = (int)json_array_size(gpus);
        deploy_set(&d->n_gpus_s, true, "NVML: %d GPUs sampled, none listing a process (assumed all serve)", d->n_gpus);
    }
}

/* The simulator's settings: a sim run's config.sim, or what `serve --engine sim` says about itself
 * in GET /v1/models (meta.sim). where names the source in each field's provenance. */
static void from_sim_config(deploy *d, const json_t *sim, const char *where) {
    if (!json_is_object(sim)) return;
    const char *m = json_string_value(json_object_get(sim, "model"));
    char err[256], how[DEPLOY_SRC_LEN];
    snprintf(how, sizeof how, "%s.model", where);
    const json_t *arch = json_object_get(sim, "architecture");   /* a model given whole (a calibrated run's GGUF) */
    model_arch a;
    if (json_is_object(arch) && model_arch_from_hf_json(arch, how, m ? m : "sim", &a, err, sizeof err) == 0) {
        d->arch = a;
        copy(d->model, sizeof d->model, a.name);
        snprintf(how, sizeof how, "%s.architecture", where);
        deploy_set(&d->arch_s, false, "%s", how);
        deploy_set(&d->model_s, false, "%s", how);
    } else if (m && !from_catalog(d, m, how) && !access(m, R_OK)) {
        deploy_from_model_config(d, m, err, sizeof err);
    }
    copy(d->engine, sizeof d->engine, "dsperf sim");
    deploy_set(&d->engine_s, false, "%s", where);
    const char *ep = json_string_value(json_object_get(sim, "engine_profile"));
    if (ep && *ep) { copy(d->sim_profile, sizeof d->sim_profile, ep); deploy_set(&d->sim_profile_s, false, "%s.engine_profile", where); }
    const char *g = json_string_value(json_object_get(sim, "gpu"));
    if (g && hw_find(g)) { copy(d->gpu, sizeof d->gpu, hw_find(g)->name); deploy_set(&d->gpu_s, false, "%s.gpu", where); }
    int tp = (int)json_integer_value(json_object_get(sim, "tp"));
    if (tp > 0) {
        d->tp = tp;
        deploy_set(&d->tp_s, false, "%s.tp", where);
        d->n_gpus = tp;
        deploy_set(&d->n_gpus_s, false, "%s.tp (sim models one instance)", where);
    }
    model_dtype dt;
    const char *wd = json_string_value(json_object_get(sim, "weight_dtype")), *kv = json_string_value(json_object_get(sim, "kv_dtype"));
    /* "auto" is what the simulator ran with, not a guess: the release's dtype, 16-bit KV */
    if (wd && model_dtype_parse(wd, d->arch.native_dtype, &dt) == 0 && (strcmp(wd, "auto") || deploy_has_model(d))) {
        d->weight_dtype = dt;
        deploy_set(&d->weight_dtype_s, false, "%s.weight_dtype%s", where, strcmp(wd, "auto") ? "" : " (auto: as released)");
    }
    if (kv && model_dtype_parse(kv, DT_BF16, &dt) == 0) {
        d->kv_dtype = dt;
        deploy_set(&d->kv_dtype_s, false, "%s.kv_dtype%s", where, strcmp(kv, "auto") ? "" : " (auto: bf16)");
    }
    int seqs = (int)json_integer_value(json_object_get(sim, "max_num_seqs"));
    if (seqs > 0) { d->max_num_seqs = seqs; deploy_set(&d->max_num_seqs_s, false, "%s.max_num_seqs", where); }
    int mnbt = (int)json_integer_value(json_object_get(sim, "max_num_batched_tokens"));
    if (mnbt > 0) {
        d->max_num_batched_tokens = mnbt;
        deploy_set(&d->max_num_batched_tokens_s, false, "%s.max_num_batched_tokens", where);
    }
    const json_t *cp = json_object_get(sim, "chunked_prefill");
    if (json_is_boolean(cp)) { d->chunked_prefill = json_is_true(cp); deploy_set(&d->chunked_prefill_s, false, "%s.chunked_prefill", where); }
    int mml = (int)json_integer_value(json_object_get(sim, "max_model_len"));
    if (mml > 0) { d->context_per_seq = mml; deploy_set(&d->context_per_seq_s, false, "%s.max_model_len", where); }
    double gmu = json_number_value(json_object_get(sim, "gpu_memory_utilization"));
    if (gmu > 0) { d->gpu_memory_utilization = gmu; deploy_set(&d->gpu_memory_utilization_s, false, "%s.gpu_memory_utilization", where); }
    double kvt = json_number_value(json_object_get(sim, "kv_tokens"));
    if (kvt > 0) { d->kv_capacity_tokens = kvt; deploy_set(&d->kv_capacity_tokens_s, false, "%s.kv_tokens", where); }
    if (json_integer_value(json_object_get(sim, "num_gpu_blocks")) > 0) d->kv_capacity_set = true;
}

static int apply_flags(deploy *d, const deploy_flags *f, char *err, size_t errlen) {
    if (!f) return 0;
    if (f->model_config && deploy_from_model_config(d, f->model_config, err, errlen) < 0) return -1;
    if (f->model && !f->model_config) {
        if (!from_catalog(d, f->model, "--model")) { snprintf(err, errlen, "unknown model '%s' for --model", f->model); return -1; }
    }
    if (f->gpu) {
        if (!hw_find(f->gpu)) { snprintf(err, errlen, "unknown GPU '%s' for --gpu", f->gpu); return -1; }
        copy(d->gpu, sizeof d->gpu, hw_find(f->gpu)->name);
        deploy_set(&d->gpu_s, false, "--gpu");
    }
    model_dtype dt;
    if (f->weight_dtype) {
        if (model_dtype_parse(f->weight_dtype, d->arch.native_dtype, &dt) < 0) { snprintf(err, errlen, "bad --weight-dtype '%s'", f->weight_dtype); return -1; }
        d->weight_dtype = dt;
        deploy_set(&d->weight_dtype_s, false, "--weight-dtype");
    }
    if (f->kv_dtype) {
        if (model_dtype_parse(f->kv_dtype, DT_BF16, &dt) < 0) { snprintf(err, errlen, "bad --kv-dtype '%s'", f->kv_dtype); return -1; }
        d->kv_dtype = dt;
        deploy_set(&d->kv_dtype_s, false, "--kv-dtype");
    }
    if (f->tp > 0) { d->tp = f->tp; deploy_set(&d->tp_s, false, "--tp"); }
    if (f->n_gpus > 0) { d->n_gpus = f->n_gpus; deploy_set(&d->n_gpus_s, false, "--gpus"); }
    else if (f->tp > 0 && (!d->n_gpus_s.known || d->n_gpus < f->tp)) { d->n_gpus = f->tp; deploy_set(&d->n_gpus_s, false, "--tp"); }
    return 0;
}

/* What nobody stated gets the usual default, marked as an assumption. */
static void assume(deploy *d) {
    if (deploy_has_model(d) && !d->weight_dtype_s.known) {
        d->weight_dtype = d->arch.native_dtype;
        deploy_set(&d->weight_dtype_s, true, "assumed: the release's dtype (%s)", model_dtype_name(d->arch.native_dtype));
    }
    if (!d->kv_dtype_s.known) {
        d->kv_dtype = DT_BF16;
        deploy_set(&d->kv_dtype_s, true, "assumed: 16-bit KV cache (the engines' default)");
    }
    if (!d->tp_s.known) {
        /* split_mode is known only from llama-server's own command line */
        bool llama = !strcmp(d->engine, "llama.cpp") || d->split_mode_s.known;
        if (llama && !strcmp(d->split_mode, "row") && d->n_gpus_s.known && d->n_gpus > 1) {
            d->tp = d->n_gpus;
            deploy_set(&d->tp_s, false, "llama-server -sm row splits each layer's tensors over the %d GPUs", d->n_gpus);
        } else if (llama) {
            d->tp = 1;
            deploy_set(&d->tp_s, false, "llama.cpp splits layers across GPUs, not tensors: one GPU works at a time");
        } else if (d->n_gpus_s.known && d->n_gpus > 1) {
            d->tp = d->n_gpus;
            deploy_set(&d->tp_s, true, "assumed: the %d GPUs form one tensor-parallel group", d->n_gpus);
        } else {
            d->tp = 1;
            deploy_set(&d->tp_s, true, "assumed: tp 1 (nothing stated the GPU count)");
        }
    }
    if (!d->n_gpus_s.known) {
        d->n_gpus = d->tp;
        deploy_set(&d->n_gpus_s, true, "assumed: one instance of tp %d", d->tp);
    }
}

int deploy_resolve(const json_t *doc, const deploy_flags *f, deploy *d, char *err, size_t errlen) {
    deploy_init(d);
    const json_t *cfg = json_object_get(doc, "config");
    from_telemetry(d, doc);
    const char *served = json_string_value(json_object_get(cfg, "model"));
    if (served && !json_object_get(cfg, "sim")) {
        copy(d->served_model, sizeof d->served_model, served);
        deploy_set(&d->served_model_s, false, "config.model");
        char how[DEPLOY_SRC_LEN];
        snprintf(how, sizeof how, "the served model name '%s' (config.model)", served);
        from_catalog(d, served, how);
    }
    try_gguf(d, json_string_value(json_object_get(cfg, "tokenizer")), "the run's --tokenizer file is the served model");
    deploy_from_json(d, json_object_get(doc, "deployment"));
    deploy_from_cmdline(d, json_object_get(json_object_get(json_object_get(json_object_get(json_object_get(doc, "telemetry"),
                                                                                           "host"), "numa"), "server"), "cmdline"));
    from_sim_config(d, json_object_get(cfg, "sim"), "config.sim");
    /* a simulated run's engine section: the KV blocks it really had */
    double kvt = json_number_value(json_object_get(json_object_get(doc, "engine"), "kv_tokens"));
    if (json_object_get(cfg, "sim") && kvt > 0) {
        d->kv_capacity_tokens = kvt;
        deploy_set(&d->kv_capacity_tokens_s, false, "engine.kv_tokens");
    }
    if (apply_flags(d, f, err, errlen) < 0) return -1;
    assume(d);
    return 0;
}

/* ---- the cost model and words ---- */

int deploy_cost(const deploy *d, const cost_factors *f, cost_model *c, char *err, size_t errlen) {
    if (!deploy_has_model(d) || !deploy_has_gpu(d)) { snprintf(err, errlen, "model or GPU unknown"); return -1; }
    cost_factors dflt;
    if (!f) { cost_default_factors(&dflt); f = &dflt; }
    /* the simulator's engine profile for the engine that served (vLLM V1 for anything else) */
    cost_setup s;
    cost_default_setup(&s, d->tp > 0 ? d->tp : 1, 1);
    static const struct { const char *engine, *profile; } map[] = {{"llama.cpp", "llamacpp"}, {"sglang", "sglang"}};
    for (size_t i = 0; i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(d->engine, map[i].engine)) profile_find(map[i].profile, &s.prof);
    return cost_init(c, &d->arch, hw_find(d->gpu), &s, d->weight_dtype, d->kv_dtype, f, err, errlen);
}

void deploy_describe(const deploy *d, char *buf, size_t len) {
    snprintf(buf, len, "%s, %s weights, %s KV, %d x %s, tp %d", deploy_has_model(d) ? d->model : "model unknown",
             d->weight_dtype_s.known ? model_dtype_name(d->weight_dtype) : "?", model_dtype_name(d->kv_dtype),
             d->n_gpus > 0 ? d->n_gpus : 1, d->gpu_s.known ? d->gpu : "GPU unknown", d->tp > 0 ? d->tp : 1);
}

void deploy_assumptions(const deploy *d, char *buf, size_t len) {
    snprintf(buf, len, "model %s (%s); weights %s (%s); KV %s (%s); GPU %s (%s); %d GPUs (%s); tp %d (%s)",
             d->model, d->arch_s.src, model_dtype_name(d->weight_dtype), d->weight_dtype_s.src,
             model_dtype_name(d->kv_dtype), d->kv_dtype_s.src, d->gpu, d->gpu_s.src, d->n_gpus, d->n_gpus_s.src,
             d->tp, d->tp_s.src);
}
