/* context — sweeps along context length: `dsperf sweep --input-len 1k..128k x2` (or --output-len) at
 * one fixed --concurrency or --rate. Ladders of token lengths (k = 1024), the random dataset of each
 * level, and the "context" section of such a sweep document: per length TTFT against prompt length
 * (prefill cost per 1k tokens, its marginal cost, and where the quadratic attention term overtakes
 * the linear one), TPOT and decode tokens/s against context (with the KV bytes each token reads),
 * GPU DRAM bandwidth and KV usage from telemetry, where the deployment stops fitting (preemptions,
 * rejected prompts, admission held by a full KV cache), and beside each number the prediction of
 * `dsperf plan`'s roofline for the resolved deployment when the model and GPU are known. Pure
 * functions of the document, so a saved sweep is re-analysed the same way. */
#ifndef DSP_SWEEP_CONTEXT_H
#define DSP_SWEEP_CONTEXT_H
#include "deploy/deploy.h"
#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* A ladder of token lengths: the grammar of sweep_parse_ladder for concurrencies (a range doubles
 * unless "xK" or "step S" says otherwise) with a "k" suffix meaning 1024 ("1k..128k x2" = 1024,
 * 2048, ..., 131072). 0 ok, -1 with err. */
int sweep_parse_length_ladder(const char *spec, double *out, size_t max, size_t *n, char *err, size_t errlen);
/* "32k" (and "1.5k") for a multiple of 512 from 1024 up, else the number ("1000"). */
void sweep_length_label(double tokens, char *buf, size_t len);
/* The axis names of a sweep along length: "input_len", "output_len". */
bool sweep_axis_is_length(const char *axis);
/* The dataset of one level: base_spec (NULL: the default random:in=1024,out=128) with in= (input
 * axis) or out= set to len, and the other length set to other when other > 0. Only random datasets
 * have controlled lengths: anything else is an error. 0 ok, -1 with err. */
int sweep_length_dataset(const char *base_spec, bool input_axis, long len, long other, char *out, size_t outlen,
                         char *err, size_t errlen);

/* Thresholds of the view. */
#define CTX_QUADRATIC_MIN_LEVELS 3     /* levels with a TTFT needed to fit a + bL + cL^2 */
#define CTX_KV_FULL_PCT 98.0           /* KV usage that, with fewer running than offered, holds admission */

/* Sets doc's "context" section (a sweep along input_len or output_len; any other sweep loses the
 * section). flags: deployment overrides for the prediction (diagnose/report --model, --gpu, ...),
 * may be NULL. 0 ok, -1 not a sweep document. */
int sweep_context_analyse(json_t *doc, const deploy_flags *flags);
/* The context table (<= 100 columns) and its headline lines; nothing without a context section. */
void sweep_context_print(FILE *f, const json_t *doc);
#endif
