/* drift_advice — where a KV-cache dtype recommendation meets its accuracy cost: diagnose's knobs
 * and tune's recommendation get drift_kv_note()'s sentence (the measured cost from a drift
 * document, or "untested for accuracy" and how to test it). The sentence is set as "accuracy" and
 * also appended to the text people read (a knob's "effect", the recommendation's "buys"), so the
 * existing printers and report pages show it unchanged. */
#include "drift/drift_int.h"
#include <ctype.h>
#include <stdio.h>
#include <string.h>

static void append(json_t *o, const char *key, const char *note) {
    const char *old = json_string_value(json_object_get(o, key));
    char buf[1200];
    snprintf(buf, sizeof buf, "%s%saccuracy: %s", old ? old : "", old && *old ? "; " : "", note);
    json_object_set_new(o, key, json_string(buf));
    json_object_set_new(o, "accuracy", json_string(note));
}

static bool is_kv_knob(const char *name) {
    return name && (!strcmp(name, "kv_cache_dtype") || !strcmp(name, "kv-cache-dtype") || !strcmp(name, "kv_dtype") ||
                    !strcmp(name, "kv-dtype"));
}

void drift_annotate_findings(json_t *diagnosis, const json_t *drift_doc) {
    char note[700];
    drift_kv_note(drift_doc, note, sizeof note);
    size_t i, j;
    json_t *f, *k;
    json_array_foreach(json_object_get(diagnosis, "findings"), i, f)
        json_array_foreach(json_object_get(f, "knobs"), j, k)
            if (is_kv_knob(json_string_value(json_object_get(k, "knob")))) append(k, "effect", note);
}

/* The grid key that sets the KV-cache dtype: the one a template passes to --kv-cache-dtype
 * (vLLM, SGLang), --kv-dtype (dsperf sim) or --cache-type-k (llama.cpp), else a key named like it. */
static const char *kv_key(const json_t *tune_doc, const json_t *settings) {
    static const char *const flags[] = { "--kv-cache-dtype", "--kv-dtype", "--cache-type-k", "-ctk" };
    const char *tmpl[2] = { json_string_value(json_object_get(tune_doc, "server_cmd")), json_string_value(json_object_get(tune_doc, "sim_flags")) };
    const char *k;
    const json_t *v;
    json_object_foreach((json_t *)settings, k, v) {
        char ph[80];
        snprintf(ph, sizeof ph, "{%s}", k);
        for (int t = 0; t < 2; t++) {
            const char *at = tmpl[t] ? strstr(tmpl[t], ph) : NULL;
            for (size_t f = 0; at && f < sizeof flags / sizeof *flags; f++) {
                size_t fl = strlen(flags[f]);
                const char *p = at;
                while (p > tmpl[t] && (p[-1] == ' ' || p[-1] == '=' || p[-1] == '\'')) p--;
                if ((size_t)(p - tmpl[t]) >= fl && !strncmp(p - fl, flags[f], fl)) return k;
            }
        }
    }
    json_object_foreach((json_t *)settings, k, v) {
        char low[80];
        size_t n = 0;
        for (; k[n] && n + 1 < sizeof low; n++) low[n] = (char)tolower((unsigned char)k[n]);
        low[n] = 0;
        if (!strcmp(low, "kv") || strstr(low, "kv_") || strstr(low, "kv-") || strstr(low, "cache_type") || strstr(low, "cache-type"))
            return k;
    }
    return NULL;
}

void drift_annotate_tune(json_t *tune_doc, const json_t *drift_doc) {
    json_t *rec = json_object_get(tune_doc, "recommendation");
    const json_t *settings = json_object_get(rec, "settings");
    const char *key = json_is_object(settings) ? kv_key(tune_doc, settings) : NULL;
    if (!key) return;
    /* a change: against the configuration the recommendation is compared with, else the first */
    const json_t *configs = json_object_get(tune_doc, "configs");
    const json_t *ref = json_object_get(rec, "compared_with");
    const json_t *other = json_is_integer(ref) ? json_array_get(configs, (size_t)json_integer_value(ref)) : json_array_get(configs, 0);
    const char *mine = json_string_value(json_object_get(settings, key));
    const char *theirs = json_string_value(json_object_get(json_object_get(other, "settings"), key));
    if (!mine || !theirs || !strcmp(mine, theirs)) return;
    char note[700], head[800];
    drift_kv_note(drift_doc, note, sizeof note);
    snprintf(head, sizeof head, "%s=%s instead of %s: %s", key, mine, theirs, note);
    append(rec, "buys", head);
}
