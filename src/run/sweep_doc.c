/* run/sweep_doc — starting a sweep document and making simulated levels (see sweep_doc.h). */
#include "run/sweep_doc.h"
#include "metrics/metric_table.h"
#include "common/version.h"
#include "sweep/context.h"
#include "sweep/sweep.h"
#include <string.h>
#include <time.h>

json_t *run_sweep_doc_new(const char *command_line, const char *axis, json_t *config, json_t *deployment) {
    char date[32];
    time_t now = time(NULL);
    struct tm tm;
    gmtime_r(&now, &tm);
    strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", &tm);
    json_t *d = json_object();
    if (!d) { json_decref(config); return NULL; }
    json_object_set_new(d, "schema", json_string(SWEEP_SCHEMA));
    json_object_set_new(d, "tool", json_string("dsperf"));
    json_object_set_new(d, "version", json_string(DSPERF_VERSION));
    json_object_set_new(d, "command_line", json_string(command_line ? command_line : ""));
    json_object_set_new(d, "date", json_string(date));
    json_object_set_new(d, "environment", json_null());
    json_object_set_new(d, "config", config ? config : json_null());
    /* what the server said about itself at preflight; each level's results add what they saw */
    if (deployment) json_object_set(d, "deployment", deployment);
    json_object_set_new(d, "axis", json_string(axis));
    json_object_set_new(d, "partial", json_false());
    json_object_set_new(d, "partial_reason", json_null());
    json_object_set_new(d, "levels", json_array());
    json_object_set_new(d, "knee", json_null());
    json_object_set_new(d, METRIC(max_goodput), json_null());
    json_object_set_new(d, "ci", json_null());
    return d;
}

json_t *run_sweep_sim_level(json_t *res, const char *kind, double load, int repeat, uint64_t seed, long other_len) {
    json_t *lv = json_pack("{s:f,s:i,s:s,s:I,s:b,s:b,s:b,s:b,s:{s:b,s:s}}", "load", load, "repeat", repeat, "kind", kind,
        "seed", (json_int_t)seed, "measured", 1, "saturated", 0, "early_stopped", 0, "interrupted", 0, "over_saturation",
        "judged", 0, "why", "simulated on a virtual clock: every level runs to its end");
    if (sweep_axis_is_length(kind)) {
        bool in = !strcmp(kind, "input_len");
        json_object_set_new(lv, "input_len", json_real(in ? load : (double)other_len));
        json_object_set_new(lv, "output_len", json_real(in ? (double)other_len : load));
    }
    json_object_set_new(lv, "results", res);
    return lv;
}

void run_sweep_doc_environment(json_t *doc, const json_t *res) {
    const json_t *env = json_object_get(doc, "environment");
    if (!env || json_is_null(env)) json_object_set(doc, "environment", json_object_get(res, "environment"));
}
