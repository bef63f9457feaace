/* run/sim_ladder — the simulator over a ladder of lengths or loads (see sim_ladder.h). */
#include "run/sim_ladder.h"
#include "run/sweep_doc.h"
#include "common/fileio.h"
#include "results/results.h"
#include "sweep/context.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void run_sim_ladder_defaults(run_sim_ladder_opts *o) {
    memset(o, 0, sizeof *o);
    run_sim_defaults(&o->level);
    o->repeats = 1;
}

/* The sweep's config: the first level's (bench's flat keys and the simulator's), with the ladder. */
static void set_config(json_t *doc, const json_t *res, const run_sim_ladder_opts *o) {
    json_t *c = json_deep_copy(json_object_get(res, "config"));
    if (!c) return;
    bool length = sweep_axis_is_length(o->axis);
    if (!length) {
        json_object_del(c, "concurrency");
        json_object_del(c, "rate_per_s");
    } else {
        json_object_set_new(c, strcmp(o->axis, "input_len") ? "input_len" : "output_len", json_integer(o->other_len));
    }
    json_object_set_new(c, "mode", json_string(o->axis));
    json_object_set_new(c, "ladder", json_string(o->ladder_text ? o->ladder_text : ""));
    json_object_set_new(c, "repeats", json_integer(o->repeats));
    json_object_set_new(c, "early_stop", json_false());
    json_object_set_new(c, "slo_percentile", json_real(99));
    json_object_set_new(c, "stability_score", json_string(stability_score_name(o->score)));
    json_object_set_new(doc, "config", c);
    json_object_set(doc, "environment", json_object_get(res, "environment"));
}

/* One level: run_sim with the level's dataset, load and seed. DS_OK with *res (a level the run
 * policy failed, as the rejections of a prompt past the context, is still the engine's answer at
 * that level: kept, *judged set), or the run's failure. */
static ds_result run_level(const run_sim_ladder_opts *o, double load, int repeat, size_t index, json_t **res, bool *judged,
                           char *err, size_t errlen) {
    run_sim_opts lo = o->level;
    char spec[256];
    if (sweep_axis_is_length(o->axis)) {
        if (sweep_length_dataset(o->base_dataset, !strcmp(o->axis, "input_len"), (long)load, o->other_len, spec, sizeof spec,
                                 err, errlen) < 0)
            return DS_EINVAL;
        lo.dataset = spec;
    } else if (!strcmp(o->axis, "rate")) {
        lo.rate_per_s = load;
        lo.concurrency = 0;
    } else {
        lo.concurrency = (int)load;
        lo.rate_per_s = 0;
    }
    lo.seed = o->level.seed + (uint64_t)repeat;
    run_sim_result r;
    ds_result rc = run_sim(&lo, &r, err, errlen);
    if (rc == DS_OK && o->save_prefix) {
        char path[1100];
        snprintf(path, sizeof path, "%s.%zu.%d.jsonl", o->save_prefix, index, repeat);
        if (results_write_requests_jsonl(path, &r.recs, err, errlen) < 0) rc = DS_EIO;
    }
    if (rc == DS_OK) {
        *judged = r.judged_failed;
        *res = r.doc;
        r.doc = NULL;
    }
    run_sim_result_free(&r);
    return rc;
}

static void analyse(json_t *doc, stab_score score) {
    sweep_analyse(doc, 99);
    sweep_context_analyse(doc, NULL);
    sweep_stability_analyse(doc, score);
}

ds_result run_sim_ladder(const run_sim_ladder_opts *o, run_sim_ladder_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    json_t *doc = run_sweep_doc_new(o->level.command_line, o->axis, NULL, NULL);
    if (!doc) { snprintf(err, errlen, "out of memory"); return DS_ENOMEM; }
    json_t *levels = json_object_get(doc, "levels");
    ds_result rc = DS_OK;
    bool to_file = o->out_path && !fileio_is_stdout(o->out_path);
    for (size_t i = 0; i < o->n_levels && rc == DS_OK; i++) {
        for (int k = 0; k < o->repeats && rc == DS_OK; k++) {
            json_t *res = NULL;
            bool judged = false;
            rc = run_level(o, o->levels[i], k, i, &res, &judged, err, errlen);
            if (rc != DS_OK) break;
            if (judged) out->level_failed = true;
            if (!json_array_size(levels)) set_config(doc, res, o);
            json_t *lv = run_sweep_sim_level(res, o->axis, o->levels[i], k, o->level.seed + (uint64_t)k, o->other_len);
            json_array_append_new(levels, lv);
            if (o->progress) {
                sweep_print_level(o->progress, lv, o->axis, json_array_size(levels) == 1);
                fflush(o->progress);
            }
            analyse(doc, o->score);
            /* after each level (an interrupted sweep keeps what it measured); standard output once, below */
            if (to_file && results_write_json(o->out_path, doc, err, errlen) < 0) rc = DS_EIO;
        }
    }
    if (!json_array_size(levels)) {
        json_decref(doc);
        return rc;
    }
    if (o->out_path && !to_file && results_write_json(o->out_path, doc, err, errlen) < 0 && rc == DS_OK) rc = DS_EIO;
    if (rc != DS_OK) {
        json_object_set_new(doc, "partial", json_true());
        json_object_set_new(doc, "partial_reason", json_string("a level failed; the levels before it are kept"));
        char e2[512];
        if (to_file && results_write_json(o->out_path, doc, e2, sizeof e2) < 0) snprintf(err, errlen, "%s", e2);
    }
    out->doc = doc;
    return rc;
}
