/* identify — the serving engine's identity before a run (see identify.h). Each GET has a short
 * timeout and a size cap; a 404 or a body that is not the expected JSON just means "not this
 * engine", so the probes cost a few milliseconds on a live server and never fail a run. */
#include "client/identify.h"
#include "telemetry/prom.h"
#include "telemetry/engine_metrics.h"
#include <curl/curl.h>
#include <stdlib.h>
#include <string.h>

typedef struct { char *p; size_t n; } body;

static size_t body_write(char *buf, size_t size, size_t n, void *ud) {
    body *b = ud;
    size_t len = size * n;
    if (b->n + len > (4u << 20)) return 0;   /* a /metrics page of a big server fits; more is not identity */
    char *np = realloc(b->p, b->n + len + 1);
    if (!np) return 0;
    memcpy(np + b->n, buf, len);
    b->p = np;
    b->n += len;
    b->p[b->n] = 0;
    return len;
}

/* GET url with the run's credentials; the body on HTTP 200, else NULL. */
static char *get(const client_opts *o, const char *url, size_t *len) {
    CURL *e = curl_easy_init();
    if (!e) return NULL;
    body b = {0};
    struct curl_slist *h = client_get_headers(o);
    curl_easy_setopt(e, CURLOPT_URL, url);
    curl_easy_setopt(e, CURLOPT_HTTPHEADER, h);
    curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, body_write);
    curl_easy_setopt(e, CURLOPT_WRITEDATA, &b);
    curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, 2000L);
    curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, 3000L);
    if (o->insecure) { curl_easy_setopt(e, CURLOPT_SSL_VERIFYPEER, 0L); curl_easy_setopt(e, CURLOPT_SSL_VERIFYHOST, 0L); }
    long status = 0;
    CURLcode rc = curl_easy_perform(e);
    curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(h);
    curl_easy_cleanup(e);
    if (rc != CURLE_OK || status != 200 || !b.p) { free(b.p); return NULL; }
    *len = b.n;
    return b.p;
}

static json_t *get_json(const client_opts *o, const char *path) {
    char *url = client_url(o->base_url, path);
    size_t len = 0;
    char *text = url ? get(o, url, &len) : NULL;
    free(url);
    json_t *j = text ? json_loadb(text, len, 0, NULL) : NULL;
    free(text);
    return j;
}

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
    json_t *models = get_json(o, "/v1/models");
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
        json_t *j = get_json(o, order[i]);
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
        size_t len = 0;
        char *text = url ? get(o, url, &len) : NULL;
        prom_doc doc;
        if (text && prom_parse(text, len, &doc) == 0) {
            em_engine e = em_detect_engine(&doc);
            if (e != EM_ENGINE_UNKNOWN) {
                engine = em_engine_name(e);
                json_array_append_new(from, json_string("/metrics"));
            }
            prom_doc_free(&doc);
        }
        free(text);
        free(url);
    }
    set_str(id, "engine", engine);
    set_str(id, "engine_version", version[0] ? version : NULL);
    json_object_set_new(id, "identified_from", from);
    json_decref(models);
    return id;
}
