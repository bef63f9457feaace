/* run/preflight — GET /v1/models before a run (see preflight.h). */
#include "run/preflight.h"

ds_result run_preflight(const client_opts *co, char **first_model, char *err, size_t errlen) {
    *first_model = NULL;
    int r = client_preflight(co, first_model, NULL, err, errlen);
    return r == 0 ? DS_OK : r == CLIENT_UNREACHABLE ? DS_ECONNECT : DS_EINVAL;
}
