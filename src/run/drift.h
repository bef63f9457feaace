/* run/drift — `dsperf drift` from parsed options to its document: the tokenizer, both endpoints'
 * models (GET /v1/models, the first listed when none was named), the comparison of drift/drift.h
 * (a signal ends it, partial) and the gate. The CLI parses, then prints the table and writes the
 * document, the history's record included. */
#ifndef DSP_RUN_DRIFT_H
#define DSP_RUN_DRIFT_H
#include "drift/drift.h"
#include "common/result.h"
#include <jansson.h>
#include <stdbool.h>

typedef struct {
    drift_opts drift;            /* the comparison; a model left NULL is the endpoint's first */
    const char *tokenizer_path;  /* loaded here (NULL: lengths in words) */
    const drift_rule *rules;     /* the gate (n_rules 0: none) */
    int n_rules;
} run_drift_opts;

/* drift_default_opts, no tokenizer, no gate. */
void run_drift_defaults(run_drift_opts *o);

typedef struct {
    json_t *doc;                 /* the dsperf.drift/1 document (the caller's); NULL when nothing ran */
    bool interrupted;            /* SIGINT/SIGTERM ended it: the document is partial */
    bool gate_failed;            /* a gate rule did not hold (doc's "gate") */
} run_drift_result;

/* Runs o. DS_OK with out->doc; DS_EINVAL or DS_ECONNECT with one line in err when it cannot
 * start (the tokenizer, an endpoint that does not answer or has no logprobs, a bad dataset), and
 * no document; DS_EINVAL with err and the document when a gate rule names what no bucket has (the
 * measurements are still the caller's to print and keep). out is always initialised. */
ds_result run_drift(const run_drift_opts *o, run_drift_result *out, char *err, size_t errlen);
#endif
