/* identify — the serving engine's identity before a run (see identify.h). The GETs go through
 * client_get_json (the run's headers and credentials) and, for /metrics, the telemetry scraper; a
 * 404 or a body that is not the expected JSON just means "not this engine", so the probes cost a
 * few milliseconds on a live server and never fail a run. */
#include "client/identify.h"
#include "telemetry/prom.h"
#include "telemetry/engine_metrics.h"
#include <stdlib.h>
#include <string.h>

/* owned_by as engines write it → the engine's name */
static const char *engine_of_owner(const char *owned_by) {
    static const struct { const char *owner, *engine; } map[] = {
        {"vllm", "vllm"}, {"sglang", "sglang"}, {"llamacpp", "llama.cpp"}, {"dsperf", "dsperf-serve"},
        {"tensorrt_llm", "tensorrt-llm"}, {"tgi", "tgi"},
    };
    for (size_t i = 0; owned_by && i < sizeof map / sizeof map[0]; i++)
        if (!strcmp(owned_by, map[i].owner)) return map[i].engine;
    return NULL;
}

static void set_str(json_t *o, const char *k, const char *v) { json_object_set_new(o, k, v ? json_string(v) : json_null()); }

json_t *client_identify(const client_opts *o, const char *metrics_url) {
    json_t *models = client_get_json(o, "/v1/models");
    const json_t *m0 = json_array_get(json_object_get(models, "data"), 0);
    if (!json_is_object(m0)) { json_decref(models); return NULL; }
    json_t *id = json_object();
    json_t *from = json_array();
    json_array_append_new(from, json_string("/v1/models"));
    const char *owned_by = json_string_value(json_object_get(m0, "owned_by"));
    const char *engine = engine_of_owner(owned_by);
    set_str(id, "model_id", json_string_value(json_object_get(m0, "id")));
    set_str(id, "owned_by", owned_by);
    const json_t *mml = json_object_get(m0, "max_model_len");
    json_object_set_new(id, "max_model_len", json_is_integer(mml) ? json_incref((json_t *)mml) : json_null());
    char version[128] = "";
    /* the version endpoints, the engine's own first; at most three GETs */
    const char *order_llama[] = {"/props", "/version", "/info"}, *order_other[] = {"/version", "/props", "/info"};
    const char **order = engine && !strcmp(engine, "llama.cpp") ? order_llama : order_other;
    for (int i = 0; i < 3 && !version[0]; i++) {
        if (engine && strcmp(engine, "llama.cpp") && !strcmp(order[i], "/props")) continue;
        json_t *j = client_get_json(o, order[i]);
        const char *v = NULL;
        if (!strcmp(order[i], "/props")) {
            v = json_string_value(json_object_get(j, "build_info"));
            if (v && !engine) engine = "llama.cpp";
        } else if (!strcmp(order[i], "/info")) {
            v = json_string_value(json_object_get(j, "version"));
            if (v && !engine && json_object_get(j, "model_id")) engine = "tgi";
        } else {
            v = json_string_value(json_object_get(j, "version"));
        }
        if (v) {
            snprintf(version, sizeof version, "%s", v);
            json_array_append_new(from, json_string(order[i]));
        }
        json_decref(j);
    }
    if (!engine) {   /* the metric names say which engine even when nothing else does */
        char *url = metrics_url ? strdup(metrics_url) : client_url(o->base_url, "/metrics");
        em_scraper *sc = url ? em_scraper_new(url, 3000000000LL) : NULL;
        const char *text;
        size_t len;
        char e2[256];
        prom_doc doc;
        if (sc && em_scrape(sc, &text, &len, e2, sizeof e2) == 0 && prom_parse(text, len, &doc) == 0) {
            em_engine e = em_detect_engine(&doc);
            if (e != EM_ENGINE_UNKNOWN) {
                engine = em_engine_name(e);
                json_array_append_new(from, json_string("/metrics"));
            }
            prom_doc_free(&doc);
        }
        em_scraper_free(sc);
        free(url);
    }
    set_str(id, "engine", engine);
    set_str(id, "engine_version", version[0] ? version : NULL);
    json_object_set_new(id, "identified_from", from);
    json_decref(models);
    return id;
}
