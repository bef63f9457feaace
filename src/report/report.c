/* report — loading the documents a report reads, and where its findings come from: the
 * document's own "findings" when it carries them, else diagnose_run() on the document. */
#include "report/report_internal.h"
#include "common/fileio.h"
#include "diagnose/diagnose.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "results/results.h"

json_t *report_load(const char *path, char *err, size_t errlen) {
    static const char *const schemas[] = { "dsperf.results/", "dsperf.sweep/", "dsperf.tune/", "dsperf.drift/", NULL };
    return results_load_doc(path, schemas, "results, sweep, tune or drift", err, errlen);
}

json_t *report_diagnosis(const json_t *doc, const report_deploy *deploy) {
    if (report_is_tune(doc)) return NULL;   /* each configuration's sweep file has its own diagnosis */
    if (report_is_drift(doc)) return NULL;  /* accuracy, not performance: nothing to diagnose */
    /* findings saved in the document win: they are what was concluded about this run */
    const json_t *f = json_object_get(doc, "findings");
    if (json_is_array(f)) {
        json_t *d = json_object();
        json_object_set_new(d, "findings", json_deep_copy(f));
        static const char *const extra[] = { "roofline", "checked", "configuration", "deployment" };
        for (size_t i = 0; i < 4; i++) {
            const json_t *v = json_object_get(doc, extra[i]);
            if (v) json_object_set_new(d, extra[i], json_deep_copy(v));
        }
        const json_t *w = json_object_get(doc, "diagnosis_warnings"), *t = json_object_get(doc, "diagnosis_time");
        if (w) json_object_set_new(d, "warnings", json_deep_copy(w));
        if (t) json_object_set_new(d, "time", json_deep_copy(t));
        return d;
    }
    diagnose_opts o;
    diagnose_default_opts(&o);
    if (deploy) {
        if (deploy->model) o.model = deploy->model;
        if (deploy->gpu) o.gpu = deploy->gpu;
        if (deploy->kv_dtype) o.kv_dtype = deploy->kv_dtype;
        if (deploy->tp > 0) o.tp = deploy->tp;
    }
    char err[256];
    return diagnose_run(doc, &o, err, sizeof err);   /* NULL: no findings shown */
}
