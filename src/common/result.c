/* result — the texts and exit statuses of the result codes (see result.h). */
#include "common/result.h"
#include "common/log.h"

const char *ds_strerror(ds_result code) {
    switch (code) {
    case DS_OK: return "ok";
    case DS_EINVAL: return "invalid input";
    case DS_EIO: return "file read or write failed";
    case DS_ENOMEM: return "out of memory";
    case DS_ECONNECT: return "the target did not answer";
    case DS_ERUN: return "the run failed";
    case DS_EINTR: return "interrupted";
    case DS_EJUDGED: return "the run was judged failed";
    }
    return "unknown result code";
}

int ds_exit_code(ds_result code) {
    switch (code) {
    case DS_OK: return EXIT_OK;
    case DS_EINVAL: case DS_ECONNECT: return EXIT_USAGE;
    default: return EXIT_RUN_FAILED;
    }
}
