/* identify — which engine, which version and which model answer at an endpoint, asked the ways
 * engines tell: GET /v1/models (the served id, owned_by, max_model_len), GET /version (vLLM,
 * `dsperf serve`), GET /props (llama.cpp's build_info), GET /info (TGI), and as a last resort
 * the metric-name prefixes of GET /metrics (vllm:, sglang:, tgi_, llamacpp:). A few short GETs
 * before a run; what cannot be learned stays null. */
#ifndef DSP_IDENTIFY_H
#define DSP_IDENTIFY_H
#include "client/client.h"
#include <jansson.h>

/* {"model_id", "owned_by", "engine", "engine_version", "max_model_len", "identified_from": [...]}
 * (nulls where unknown), or NULL when /v1/models did not answer. metrics_url: the server's
 * /metrics when known (NULL: base URL + /metrics). */
json_t *client_identify(const client_opts *o, const char *metrics_url);
#endif
