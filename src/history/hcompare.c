/* hcompare — `dsperf history compare`: a candidate (one run or several) against a baseline picked
 * from history, through compare_runs / compare_sweeps, so the statistics and the gate rules are
 * exactly those of `dsperf compare`. The baseline is what the query matches among the runs
 * recorded before the candidate with the candidate's configuration: "the last five runs of
 * branch=main" never includes the run being judged, nor a run of another workload. */
#include "history/hist_internal.h"
#include <stdlib.h>
#include <string.h>

static json_t *id_array(const history_ids *s) {
    json_t *a = json_array();
    for (size_t i = 0; i < s->n; i++) json_array_append_new(a, json_integer(s->ids[i]));
    return a;
}

/* "run 41" or "5 runs (36..40) matching 'label:branch=main last:5'" */
static char *side_label(const history_ids *s, const char *query) {
    char *out = NULL;
    if (s->n == 1) { if (asprintf(&out, "history run %lld", (long long)s->ids[0]) < 0) out = NULL; }
    else if (asprintf(&out, "history: %zu runs (%lld..%lld) matching '%s', pooled", s->n, (long long)s->ids[0],
                      (long long)s->ids[s->n - 1], query) < 0) out = NULL;
    return out;
}

/* The compare views of the runs; all of one kind (results, or a single sweep). */
static json_t **load_views(history *h, const history_ids *s, const char *side, char *err, size_t errlen) {
    json_t **v = calloc(s->n, sizeof *v);
    if (!v) { snprintf(err, errlen, "out of memory"); return NULL; }
    for (size_t i = 0; i < s->n; i++) {
        if (!(v[i] = hist_load_view(h, s->ids[i], err, errlen))) goto fail;
        const char *schema = json_string_value(json_object_get(v[i], "schema"));
        bool sweep = schema && !strncmp(schema, "dsperf.sweep/", 13);
        if (!schema || (strncmp(schema, "dsperf.results/", 15) && !sweep)) {
            snprintf(err, errlen, "run %lld (the %s) is a %s document: compare takes results and sweep runs",
                     (long long)s->ids[i], side, schema ? schema : "schema-less");
            goto fail;
        }
        if (sweep && s->n > 1) {
            snprintf(err, errlen, "the %s matches %zu sweeps; sweeps compare one to one (narrow the query, e.g. with last:1)", side, s->n);
            goto fail;
        }
    }
    return v;
fail:
    for (size_t i = 0; i < s->n; i++) json_decref(v[i]);
    free(v);
    return NULL;
}

static void free_views(json_t **v, size_t n) {
    for (size_t i = 0; v && i < n; i++) json_decref(v[i]);
    free(v);
}

json_t *history_compare(history *h, const history_compare_opts *ho, const compare_opts *co_in, bool *no_baseline,
                        char *err, size_t errlen) {
    *no_baseline = false;
    const char *cq_text = ho->candidate && *ho->candidate ? ho->candidate : "latest";
    const char *bq_text = ho->baseline ? ho->baseline : "";
    hist_query *cq = NULL, *bq = NULL;
    history_ids cand = {0}, base = {0};
    json_t **cv = NULL, **bv = NULL, *bdoc = NULL, *cdoc = NULL, *out = NULL;
    char *ref = NULL, *bl = NULL, *cl = NULL, *diff = NULL;
    if (hist_query_parse(cq_text, &cq, err, errlen) < 0 || hist_query_parse(bq_text, &bq, err, errlen) < 0) goto done;
    /* the candidate: the runs its query names */
    if (hist_select_before(h, cq, 0, NULL, &cand, err, errlen) < 0) goto done;
    if (!cand.n) { snprintf(err, errlen, "no candidate: no run in %s matches '%s'", h->path, cq_text); goto done; }
    ref = hist_config_hash_of(h, cand.ids[cand.n - 1]);
    if (cand.n > 1 && !hist_query_any_config(cq) && (diff = hist_config_differences(h, cand.ids, cand.n))) {
        snprintf(err, errlen, "the candidate runs have different configurations (%s): narrow the query or add config:any", diff);
        goto done;
    }
    /* the baseline: as named by id, else among the runs before the candidate, comparable with it */
    bool explicit_ids = hist_query_only_ids(bq);
    if (hist_select_before(h, bq, explicit_ids ? 0 : cand.ids[0], explicit_ids || hist_query_any_config(bq) ? NULL : ref,
                           &base, err, errlen) < 0) goto done;
    if (!base.n) {
        history_ids all = {0};
        size_t others = 0;
        if (!explicit_ids && hist_select_before(h, bq, cand.ids[0], NULL, &all, err, errlen) == 0) others = all.n;
        history_ids_free(&all);
        *no_baseline = true;
        snprintf(err, errlen, "no baseline: no run matching '%s' was recorded before run %lld with its configuration "
                 "(config %.12s)%s", bq_text, (long long)cand.ids[0], ref ? ref : "?",
                 others ? "; runs of other configurations match: add config:any to compare against them" : "");
        goto done;
    }
    for (size_t i = 0; i < base.n; i++)
        for (size_t k = 0; k < cand.n; k++)
            if (base.ids[i] == cand.ids[k]) {
                snprintf(err, errlen, "run %lld is on both sides: the baseline and the candidate must be different runs", (long long)base.ids[i]);
                goto done;
            }
    if (!(cv = load_views(h, &cand, "candidate", err, errlen)) || !(bv = load_views(h, &base, "baseline", err, errlen))) goto done;
    bl = side_label(&base, bq_text);
    cl = side_label(&cand, cq_text);
    bdoc = hist_pool(bv, base.n, bl);
    cdoc = hist_pool(cv, cand.n, cl);
    if (!bdoc || !cdoc) { snprintf(err, errlen, "out of memory"); goto done; }
    const char *sb = json_string_value(json_object_get(bdoc, "schema")), *sc = json_string_value(json_object_get(cdoc, "schema"));
    sb = sb ? sb : "";
    sc = sc ? sc : "";
    for (int side = 0; side < 2; side++) {
        const char *sch = side ? sc : sb;
        if (strncmp(sch, "dsperf.results/", 15) && strncmp(sch, "dsperf.sweep/", 13)) {
            snprintf(err, errlen, "the %s is a %s document: history compare compares results runs and sweeps (a tune or "
                     "drift run's metrics are in history trend and best)", side ? "candidate" : "baseline", sch);
            goto done;
        }
    }
    bool sweep_b = !strncmp(sb, "dsperf.sweep/", 13), sweep_c = !strncmp(sc, "dsperf.sweep/", 13);
    if (sweep_b != sweep_c) {
        snprintf(err, errlen, "compare a results run with a results run, or a sweep with a sweep (the baseline is a %s, the candidate a %s)",
                 sweep_b ? "sweep" : "results run", sweep_c ? "sweep" : "results run");
        goto done;
    }
    compare_opts co = *co_in;
    co.baseline_path = bl;
    co.candidate_path = cl;
    out = sweep_b ? compare_sweeps(bdoc, cdoc, &co, err, errlen) : compare_runs(bdoc, cdoc, &co, err, errlen);
    if (!out) goto done;
    json_t *hist = json_object();
    json_object_set_new(hist, "database", json_string(h->path));
    json_object_set_new(hist, "baseline_query", json_string(bq_text));
    json_object_set_new(hist, "candidate_query", json_string(cq_text));
    json_object_set_new(hist, "baseline_runs", id_array(&base));
    json_object_set_new(hist, "candidate_runs", id_array(&cand));
    json_object_set_new(hist, "config", ref ? json_string(ref) : json_null());
    history_ids both = {0};
    both.n = base.n + cand.n;
    both.ids = malloc(both.n * sizeof *both.ids);
    if (both.ids) {
        memcpy(both.ids, base.ids, base.n * sizeof *both.ids);
        memcpy(both.ids + base.n, cand.ids, cand.n * sizeof *both.ids);
        diff = hist_config_differences(h, both.ids, both.n);
    }
    history_ids_free(&both);
    json_object_set_new(hist, "config_differences", diff ? json_string(diff) : json_null());
    json_object_set_new(out, "history", hist);
done:
    free_views(cv, cand.n);
    free_views(bv, base.n);
    json_decref(bdoc);
    json_decref(cdoc);
    history_ids_free(&cand);
    history_ids_free(&base);
    hist_query_free(cq);
    hist_query_free(bq);
    free(ref); free(bl); free(cl); free(diff);
    return out;
}
