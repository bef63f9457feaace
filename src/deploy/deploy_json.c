/* deploy_json — the "deployment" section: every known field as {"value", "source", "assumed"},
 * the architecture in Hugging Face config.json names (so it reads back through the same parser as
 * a config.json). Results keep it; diagnose reads it back and re-resolves with its own flags. */
#include "deploy/deploy_int.h"
#include <string.h>

static void put(json_t *o, const char *key, json_t *value, const deploy_src *s) {
    if (!s->known) { json_decref(value); return; }
    json_object_set_new(o, key, json_pack("{s:o,s:s,s:b}", "value", value, "source", s->src, "assumed", s->assumed));
}

json_t *deploy_to_json(const deploy *d) {
    json_t *o = json_object();
    put(o, "engine", json_string(d->engine), &d->engine_s);
    put(o, "sim_profile", json_string(d->sim_profile), &d->sim_profile_s);
    put(o, "served_model", json_string(d->served_model), &d->served_model_s);
    put(o, "model", json_string(d->model), &d->model_s);
    if (deploy_has_model(d)) put(o, "architecture", model_arch_to_hf_json(&d->arch), &d->arch_s);
    put(o, "weight_dtype", json_string(model_dtype_name(d->weight_dtype)), &d->weight_dtype_s);
    put(o, "kv_dtype", json_string(model_dtype_name(d->kv_dtype)), &d->kv_dtype_s);
    put(o, "gpu", json_string(d->gpu), &d->gpu_s);
    put(o, "n_gpus", json_integer(d->n_gpus), &d->n_gpus_s);
    put(o, "tp", json_integer(d->tp), &d->tp_s);
    put(o, "max_num_seqs", json_integer(d->max_num_seqs), &d->max_num_seqs_s);
    put(o, "max_num_batched_tokens", json_integer(d->max_num_batched_tokens), &d->max_num_batched_tokens_s);
    put(o, "ubatch_tokens", json_integer(d->ubatch_tokens), &d->ubatch_tokens_s);
    put(o, "cpu_threads", json_integer(d->cpu_threads), &d->cpu_threads_s);
    put(o, "gpu_layers", json_integer(d->gpu_layers), &d->gpu_layers_s);
    put(o, "split_mode", json_string(d->split_mode), &d->split_mode_s);
    put(o, "tensor_split", json_string(d->tensor_split), &d->tensor_split_s);
    put(o, "chunked_prefill", json_boolean(d->chunked_prefill == 1), &d->chunked_prefill_s);
    put(o, "context_per_seq", json_integer(d->context_per_seq), &d->context_per_seq_s);
    put(o, "kv_capacity_tokens", json_real(d->kv_capacity_tokens), &d->kv_capacity_tokens_s);
    if (d->kv_capacity_set) put(o, "kv_capacity_set", json_true(), &d->kv_capacity_tokens_s);
    put(o, "gpu_memory_utilization", json_real(d->gpu_memory_utilization), &d->gpu_memory_utilization_s);
    put(o, "time_scale", json_real(d->time_scale), &d->time_scale_s);
    put(o, "params", json_real(d->params), &d->params_s);
    put(o, "model_bytes", json_real(d->model_bytes), &d->model_bytes_s);
    return o;
}

/* A field read back: its value when stated by a source (assumptions are made again by whoever
 * resolves, with what it knows then). */
static const json_t *field(const json_t *sec, const char *key, deploy_src *s) {
    const json_t *f = json_object_get(sec, key), *v = json_object_get(f, "value");
    const char *src = json_string_value(json_object_get(f, "source"));
    if (!v || !src || json_is_true(json_object_get(f, "assumed"))) return NULL;
    deploy_set(s, false, "%s", src);
    return v;
}

static void str_field(const json_t *sec, const char *key, char *dst, size_t n, deploy_src *s) {
    deploy_src tmp = {0};
    const json_t *v = field(sec, key, &tmp);
    if (!json_is_string(v)) return;
    snprintf(dst, n, "%s", json_string_value(v));
    *s = tmp;
}

static void int_field(const json_t *sec, const char *key, int *dst, deploy_src *s) {
    deploy_src tmp = {0};
    const json_t *v = field(sec, key, &tmp);
    if (!json_is_integer(v) || json_integer_value(v) <= 0) return;
    *dst = (int)json_integer_value(v);
    *s = tmp;
}

/* the same for a count that may be 0 (llama.cpp -ngl 0: no layer on the GPU) */
static void count_field(const json_t *sec, const char *key, int *dst, deploy_src *s) {
    deploy_src tmp = {0};
    const json_t *v = field(sec, key, &tmp);
    if (!json_is_integer(v) || json_integer_value(v) < 0) return;
    *dst = (int)json_integer_value(v);
    *s = tmp;
}

static void real_field(const json_t *sec, const char *key, double *dst, deploy_src *s) {
    deploy_src tmp = {0};
    const json_t *v = field(sec, key, &tmp);
    if (!json_is_number(v) || !(json_number_value(v) > 0)) return;
    *dst = json_number_value(v);
    *s = tmp;
}

static void dtype_field(const json_t *sec, const char *key, model_dtype *dst, deploy_src *s) {
    char name[32] = "";
    deploy_src tmp = {0};
    str_field(sec, key, name, sizeof name, &tmp);
    model_dtype d;
    if (!tmp.known || model_dtype_parse(name, DT_BF16, &d) < 0) return;
    /* results written before stop 43 called a GGUF's 4-bit types int4 (deploy_gguf.c: they are q4) */
    if (d == DT_INT4 && strstr(tmp.src, "GGUF general.file_type")) d = DT_Q4;
    *dst = d;
    *s = tmp;
}

void deploy_from_json(deploy *d, const json_t *sec) {
    if (!json_is_object(sec)) return;
    str_field(sec, "engine", d->engine, sizeof d->engine, &d->engine_s);
    str_field(sec, "sim_profile", d->sim_profile, sizeof d->sim_profile, &d->sim_profile_s);
    str_field(sec, "served_model", d->served_model, sizeof d->served_model, &d->served_model_s);
    str_field(sec, "model", d->model, sizeof d->model, &d->model_s);
    deploy_src as = {0};
    const json_t *a = field(sec, "architecture", &as);
    model_arch m;
    char err[256];
    if (a && model_arch_from_hf_json(a, "deployment.architecture", d->model, &m, err, sizeof err) == 0) {
        d->arch = m;
        d->arch_s = as;
    }
    dtype_field(sec, "weight_dtype", &d->weight_dtype, &d->weight_dtype_s);
    dtype_field(sec, "kv_dtype", &d->kv_dtype, &d->kv_dtype_s);
    char gpu[32] = "";
    deploy_src gs = {0};
    str_field(sec, "gpu", gpu, sizeof gpu, &gs);
    if (gs.known && hw_find(gpu)) { snprintf(d->gpu, sizeof d->gpu, "%s", hw_find(gpu)->name); d->gpu_s = gs; }
    int_field(sec, "n_gpus", &d->n_gpus, &d->n_gpus_s);
    int_field(sec, "tp", &d->tp, &d->tp_s);
    int_field(sec, "max_num_seqs", &d->max_num_seqs, &d->max_num_seqs_s);
    int_field(sec, "max_num_batched_tokens", &d->max_num_batched_tokens, &d->max_num_batched_tokens_s);
    int_field(sec, "context_per_seq", &d->context_per_seq, &d->context_per_seq_s);
    int_field(sec, "ubatch_tokens", &d->ubatch_tokens, &d->ubatch_tokens_s);
    int_field(sec, "cpu_threads", &d->cpu_threads, &d->cpu_threads_s);
    count_field(sec, "gpu_layers", &d->gpu_layers, &d->gpu_layers_s);
    str_field(sec, "split_mode", d->split_mode, sizeof d->split_mode, &d->split_mode_s);
    str_field(sec, "tensor_split", d->tensor_split, sizeof d->tensor_split, &d->tensor_split_s);
    real_field(sec, "kv_capacity_tokens", &d->kv_capacity_tokens, &d->kv_capacity_tokens_s);
    deploy_src ks = {0};
    if (json_is_true(field(sec, "kv_capacity_set", &ks))) d->kv_capacity_set = true;
    real_field(sec, "gpu_memory_utilization", &d->gpu_memory_utilization, &d->gpu_memory_utilization_s);
    real_field(sec, "time_scale", &d->time_scale, &d->time_scale_s);
    deploy_src cs = {0};
    const json_t *cp = field(sec, "chunked_prefill", &cs);
    if (json_is_boolean(cp)) { d->chunked_prefill = json_is_true(cp); d->chunked_prefill_s = cs; }
    real_field(sec, "params", &d->params, &d->params_s);
    real_field(sec, "model_bytes", &d->model_bytes, &d->model_bytes_s);
}
