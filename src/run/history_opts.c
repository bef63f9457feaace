/* history_opts — --db / --label for the commands that write results (see history_opts.h), and the
 * history kinds of other modules' documents (dsperf.drift/1). */
#include "run/history_opts.h"
#include "common/log.h"
#include "drift/drift.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ---- dsperf.drift/1: the headline is the longest context asked for, when it was measured ---- */

static const json_t *drift_headline(const json_t *doc) {
    const json_t *b = json_object_get(doc, "buckets"), *ctx = json_object_get(json_object_get(doc, "config"), "contexts");
    const json_t *last = json_array_get(b, json_array_size(b) - 1);
    const json_t *want = json_array_get(ctx, json_array_size(ctx) - 1);
    if (!json_is_true(json_object_get(last, "complete")) || !want ||
        json_integer_value(json_object_get(last, "context")) != json_integer_value(want)) return NULL;
    return last;
}

static double drift_value(const json_t *doc, const char *name) {
    const json_t *v = json_object_get(drift_headline(doc), name);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

/* the bucket's own 95% interval over prompts (a bootstrap, drift_doc.c) */
static bool drift_band(const json_t *doc, const char *name, double *lo, double *hi) {
    char key[64];
    snprintf(key, sizeof key, "%s_ci", name);
    const json_t *ci = json_object_get(drift_headline(doc), key), *l = json_array_get(ci, 0), *h = json_array_get(ci, 1);
    bool ok = json_array_size(ci) == 2 && json_is_number(l) && json_is_number(h);
    *lo = ok ? json_number_value(l) : NAN;
    *hi = ok ? json_number_value(h) : NAN;
    return ok;
}

static const history_metric_def drift_metrics[] = {
    {"top1_agreement", NULL, +1}, {"topk_containment", NULL, +1}, {"exact_match_rate", NULL, +1},
    {"mean_first_divergence", NULL, +1}, {"kl", NULL, -1}, {"mean_abs_logprob_delta", NULL, -1},
    {"mean_logprob_delta", NULL, 0}, {"delta_ppl", NULL, 0},     /* nearest zero is best, either sign */
    {"failed_requests", "failed_requests", -1}, {NULL, NULL, 0},
};

/* the same comparison: both models, the contexts and prompts, the scoring settings; not the URLs,
 * the seed (other prompts of the same shape), the tokenizer's path or the interval settings */
static const char *const drift_keys[] = {
    "baseline.model", "candidate.model", "contexts", "prompts_per_context", "gen_tokens", "top_k", "length_unit",
    "api", "dataset", "text", "max_windows", "floor", NULL,
};

static const history_kind drift_kind = {
    .kind = "drift", .schema_prefix = "dsperf.drift/", .metrics = drift_metrics, .config_keys = drift_keys,
    .value = drift_value, .band = drift_band, .time_path = "started_unix", .command_path = "command",
    .version_path = "tool.version", .endpoint_path = "candidate.url", .model_path = "candidate.model",
};

void history_opts_register_kinds(void) {
    static bool done;
    if (done) return;
    done = true;
    history_register_kind(&drift_kind);
}

void history_opts_init(history_opts *o) {
    history_opts_register_kinds();
    memset(o, 0, sizeof *o);
    const char *env = getenv("DSPERF_DB");
    o->db = env && *env ? env : NULL;
}

ds_result history_opts_apply(history_opts *o, const char *name, const char *value, bool *taken) {
    char err[512];
    bool ours = !strcmp(name, "db") || !strcmp(name, "label");
    if (taken) *taken = ours;
    if (!strcmp(name, "db")) {
        if (!value || !*value) { log_error("--db wants the path of the history database"); return DS_EINVAL; }
        o->db = value;
        return DS_OK;
    }
    if (!ours) return DS_OK;
    if (history_check_label(value, err, sizeof err) < 0) { log_error("%s", err); return DS_EINVAL; }
    if (o->n_labels == HISTORY_MAX_LABELS) { log_error("at most %d --label options", HISTORY_MAX_LABELS); return DS_EINVAL; }
    o->labels[o->n_labels++] = value;
    return DS_OK;
}

ds_result history_opts_check(const history_opts *o) {
    char err[1024];
    if (o->n_labels && !o->db) {
        log_error("--label names a run in the history: give --db PATH (or DSPERF_DB) too");
        return DS_EINVAL;
    }
    if (!o->db) return DS_OK;
    if (history_prepare(o->db, err, sizeof err) < 0) { log_error("--db: %s", err); return DS_EINVAL; }
    return DS_OK;
}

ds_result history_opts_record(const history_opts *o, const json_t *doc, const char *const *extra, int n_extra) {
    if (!o->db) return DS_OK;
    const char *labels[2 * HISTORY_MAX_LABELS];
    int n = 0;
    for (int i = 0; i < o->n_labels; i++) labels[n++] = o->labels[i];
    for (int i = 0; i < n_extra && n < 2 * HISTORY_MAX_LABELS; i++) labels[n++] = extra[i];
    history_record_opts ro = { .labels = labels, .n_labels = n };
    char err[1024];
    int64_t id;
    if (history_record_to(o->db, doc, &ro, &id, err, sizeof err) < 0) {
        log_error("the run was not recorded in the history: %s", err);
        return DS_EIO;
    }
    log_info("recorded in %s as run %lld", o->db, (long long)id);
    return DS_OK;
}
