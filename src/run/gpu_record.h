/* run/gpu_record — `dsperf gpu --record`: the telemetry sampler that bench runs beside its load
 * (telemetry/telemetry.h), run on its own for a fixed time, its series and summary as one document.
 * The CLI parses into gpu_record_opts, writes the document and says where. */
#ifndef DSP_RUN_GPU_RECORD_H
#define DSP_RUN_GPU_RECORD_H
#include "telemetry/telemetry.h"
#include "common/result.h"
#include <jansson.h>
#include <stdint.h>

typedef struct {
    telemetry_opts tel;          /* what is sampled (tel.gpus NULL: no GPU) and how often */
    int64_t duration_ns;         /* how long (SIGINT/SIGTERM end it sooner) */
} gpu_record_opts;

/* The sampler's defaults (telemetry_default_opts), every GPU, no duration yet. */
void gpu_record_defaults(gpu_record_opts *o);

/* Samples for o->duration_ns, or until SIGINT/SIGTERM. DS_OK with *doc = {"telemetry": series,
 * "summary": summary} (the caller's; NULL only when out of memory), or DS_EINVAL when the sampler refuses the options (a GPU
 * that is not there, a bad URL, no such pid), with one line in err. */
ds_result gpu_record(const gpu_record_opts *o, json_t **doc, char *err, size_t errlen);
#endif
