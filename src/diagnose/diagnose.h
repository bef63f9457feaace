/* diagnose — names the bottleneck of a run with evidence: reads a results document
 * ("dsperf.results/1", from bench or sim, with whatever telemetry/engine series it holds) or a sweep
 * document ("dsperf.sweep/1") and returns ranked findings, each with its class, evidence (numbers
 * from this run and where they came from), confidence, and knobs to turn with the expected effect,
 * plus roofline efficiency against the model/GPU catalogs. Works on saved files only: it never
 * needs the run's memory.
 *
 * Returned JSON:
 * {"findings": [ {"class": "kv_capacity" | "queueing" | "client_bound" | "decode_bandwidth" |
 *                 "prefill_compute" | "prefill_interference" | "host_pcie" | "communication" |
 *                 "underutilization" | "throttling" | "cross_numa" | "healthy" | ...,
 *                 "title": "one line a person reads first",
 *                 "confidence": 0..1,
 *                 "evidence": [ {"text": "...", "value": number|null, "unit": "ms", "source": "results.p99_ttft_ms"} ],
 *                 "knobs": [ {"knob": "max_num_seqs", "direction": "raise", "effect": "..."} ],
 *                 "window": {"t0_s": number, "t1_s": number} | null,    (time range on the run timeline)
 *                 "level": load level (sweeps) | null } ... ],      sorted by rank (most important first)
 *  "roofline": {"model": ..., "gpu": ..., "decode_tokens_per_s": achieved, "bound_tokens_per_s": ...,
 *               "efficiency": 0..1, "batch": ..., "context": ..., "source": "catalog"|"flags"} | null }
 */
#ifndef DSP_DIAGNOSE_H
#define DSP_DIAGNOSE_H
#include <jansson.h>
#include <stdio.h>

typedef struct {
    const char *model;          /* catalog name for an unknown deployment (NULL: from the doc) */
    const char *gpu;            /* catalog GPU name (NULL: from the doc / telemetry) */
    int n_gpus;                 /* 0: from the doc */
    int tp;                     /* 0: from the doc */
    const char *kv_dtype;       /* NULL: from the doc, else bf16 */
} diagnose_opts;

void diagnose_default_opts(diagnose_opts *o);
/* NULL with err filled when the document is neither a results nor a sweep document. */
json_t *diagnose_run(const json_t *doc, const diagnose_opts *o, char *err, size_t errlen);
/* Prints the findings for a person (ranked, evidence indented, knobs). */
void diagnose_print(FILE *f, const json_t *diagnosis);
#endif
