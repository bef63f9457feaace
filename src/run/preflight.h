/* run/preflight — asking a target what it serves before a run (GET /v1/models), for the commands
 * that resolve the model themselves: drift (two endpoints) and monitor (which keeps going while the
 * endpoint is down). bench and sweep do theirs inside bench_prepare (run/bench.h). */
#ifndef DSP_RUN_PREFLIGHT_H
#define DSP_RUN_PREFLIGHT_H
#include "client/client.h"
#include "common/result.h"

/* *first_model gets the first served model (malloc'd; NULL when none). DS_OK; DS_ECONNECT when
 * nothing answered (refused, timed out, no route); DS_EINVAL when what answered is no OpenAI model
 * list (a wrong URL); one line in err. */
ds_result run_preflight(const client_opts *co, char **first_model, char *err, size_t errlen);
#endif
