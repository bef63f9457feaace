/* run/drift — `dsperf drift`'s run (see drift.h). Everything that asks an endpoint something
 * happens here, in the order a user waits for it: the cheap checks first (the tokenizer, both
 * endpoints' model lists), so a typo fails in a second instead of after the first bucket. */
#include "run/drift.h"
#include "run/preflight.h"
#include "common/stop.h"
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void run_drift_defaults(run_drift_opts *o) {
    memset(o, 0, sizeof *o);
    drift_default_opts(&o->drift);
}

/* The endpoint answers /v1/models; its first model is the default (*owned keeps it). */
static ds_result resolve(const char *what, const drift_opts *d, const char *url, const char **model, char **owned,
                         char *err, size_t errlen) {
    client_opts co = { .base_url = url, .headers = d->headers, .api_key = d->api_key, .insecure = d->insecure };
    char why[1024];
    char *first = NULL;
    ds_result rc = run_preflight(&co, &first, why, sizeof why);
    if (rc != DS_OK) {
        snprintf(err, errlen, "the %s: %s", what, why);
        return rc;
    }
    if (!*model) *model = *owned = first;
    else free(first);
    return DS_OK;
}

static ds_stop_flag g_stop;
static void on_signal(int sig) { (void)sig; g_stop = 1; }

ds_result run_drift(const run_drift_opts *o, run_drift_result *out, char *err, size_t errlen) {
    memset(out, 0, sizeof *out);
    drift_opts d = o->drift;     /* the tokenizer and the resolved models live in this call */
    tokenizer *tok = NULL;
    char *bm = NULL, *cm = NULL;
    drift_run *run = NULL;
    char why[1024];
    ds_result rc = DS_EINVAL;
    if (o->tokenizer_path && tokenizer_load(o->tokenizer_path, &tok, why, sizeof why) < 0) {
        snprintf(err, errlen, "--tokenizer %s: %s", o->tokenizer_path, why);
        goto out;
    }
    d.tok = tok;
    d.tokenizer_path = o->tokenizer_path;
    if ((rc = resolve("baseline", &d, d.baseline_url, &d.baseline_model, &bm, err, errlen)) != DS_OK ||
        (rc = resolve("candidate", &d, d.candidate_url, &d.candidate_model, &cm, err, errlen)) != DS_OK)
        goto out;
    /* from here a signal ends the comparison, and what was measured is kept (partial) */
    struct sigaction sa = { .sa_handler = on_signal };
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    int r = drift_run_all(&d, &run, &g_stop, err, errlen);
    if (r < 0) { rc = DS_EINVAL; goto out; }
    out->doc = drift_doc_build(run, &d);
    out->interrupted = r > 0;
    rc = DS_OK;
    if (o->n_rules && drift_gate(out->doc, o->rules, o->n_rules, err, errlen) < 0) rc = DS_EINVAL;
    else if (o->n_rules) out->gate_failed = !json_is_true(json_object_get(json_object_get(out->doc, "gate"), "passed"));
out:
    drift_run_free(run);
    tokenizer_free(tok);
    free(bm);
    free(cm);
    return rc;
}
