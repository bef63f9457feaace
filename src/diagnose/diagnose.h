/* diagnose — names the bottleneck of a run with evidence: reads a results document
 * ("dsperf.results/1", from bench or sim, with whatever telemetry/engine series it holds) or a sweep
 * document ("dsperf.sweep/1") and returns findings ranked by what they cost the user, each with its
 * class, evidence (numbers from this run and where they came from), confidence, and the settings to
 * change (current value → suggested), plus roofline efficiency against the resolved deployment
 * (src/deploy). A rate that beats physics is not a finding: it says the assumed deployment is
 * wrong, and goes to "configuration". Works on saved files only: it never needs the run's memory.
 *
 * Returned JSON:
 * {"findings": [ {"class": "errors" | "client_bound" | "kv_capacity" | "queueing" | "decode_bandwidth" | "deployment" | "prefill" |
 *                 "engine_overhead" | "prefill_compute" | "prefill_interference" | "tenants" | "prefix_cache" | "host_pcie" |
 *                 "communication" | "throttling" | "cross_numa" | "healthy",
 *                 "title": "one line a person reads first",
 *                 "confidence": 0..1,
 *                 "cost": {"lost_frac": 0..1, "basis": "of output throughput vs the HBM roofline"},
 *                 "evidence": [ {"text": "...", "value": number|null, "unit": "ms", "source": "results.p99_ttft_ms"} ],
 *                 "knobs": [ {"knob": "max_num_seqs", "current": "32"|null, "suggested": "64",
 *                             "direction": "32 → 64", "flag": "--max-num-seqs"|null, "effect": "..."} ],
 *                 "window": {"t0_s": number, "t1_s": number} | null,    (time range on the run timeline)
 *                 "level": load level (sweeps) | null, "levels": [loads where it fired] (sweeps) } ... ],
 *                 sorted by cost x confidence (most important first)
 *  "configuration": [ findings of class "configuration": a measured rate beyond the roofline of the
 *                     assumed deployment; evidence names each assumption and its source, knobs the
 *                     flags that would make the numbers possible ],
 *  "roofline": {"model", "gpu", "tp", "kv_dtype", "weight_dtype", "decode_tokens_per_s" (achieved),
 *               "bound_tokens_per_s", "efficiency" (null when not valid), "valid": bool, ...} | null,
 *  "deployment": the resolved deployment (deploy.h's section, with sources),
 *  "checked": [ {"rule", "ran", "used" | "why"} ], "inputs": {...} }
 */
#ifndef DSP_DIAGNOSE_H
#define DSP_DIAGNOSE_H
#include <jansson.h>
#include <stdio.h>

typedef struct {
    const char *model;          /* catalog name for an unknown deployment (NULL: from the doc) */
    const char *model_config;   /* a config.json or GGUF file with the architecture (NULL: none) */
    const char *gpu;            /* catalog GPU name (NULL: from the doc / telemetry) */
    int n_gpus;                 /* 0: from the doc */
    int tp;                     /* 0: from the doc */
    const char *kv_dtype;       /* NULL: from the doc, else bf16 */
    const char *weight_dtype;   /* NULL: from the doc, else the release's dtype */
} diagnose_opts;

void diagnose_default_opts(diagnose_opts *o);
/* NULL with err filled when the document is neither a results nor a sweep document, or when an
 * option cannot be used (an unreadable --model-config). */
json_t *diagnose_run(const json_t *doc, const diagnose_opts *o, char *err, size_t errlen);
/* Prints the diagnosis for a person: configuration problems first, then the ranked findings
 * (evidence indented, settings as current → suggested), the roofline and the deployment. */
void diagnose_print(FILE *f, const json_t *diagnosis);
#endif
