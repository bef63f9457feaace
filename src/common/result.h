/* result — one set of result codes for the run layer (src/run) and the modules it calls, with a
 * strerror-like text, in the way libcurl does it (CURLcode + curl_easy_strerror).
 *
 * The convention:
 *  - A function that can fail returns ds_result: DS_OK (0) on success, a negative DS_E* otherwise.
 *    Nothing else is overloaded onto the return value ("-1 means go on", -2/-3 for special cases):
 *    a result that is not a failure (a level that should end the ladder, a run judged failed by
 *    the run policy but still measured) is a field of the result struct, not a code.
 *  - The detail goes into the caller's err buffer (char *err, size_t errlen) as one line without
 *    a trailing period; the code says what kind of failure it was.
 *  - Errors become text at the edge: the CLI prints "what: detail" once, using ds_strerror() only
 *    when there is no detail, and maps the code to the exit status with ds_exit_code().
 *  - Where a module still returns 0/-1 (most of the tree), the run layer turns -1 into the code
 *    that fits at the call (DS_EIO for a file, DS_EINVAL for a bad spec, ...). */
#ifndef DSP_RESULT_H
#define DSP_RESULT_H

typedef enum {
    DS_OK = 0,
    DS_EINVAL = -1,     /* bad input: an option, a spec, a file's contents (the user can fix it) */
    DS_EIO = -2,        /* a file could not be read or written */
    DS_ENOMEM = -3,     /* out of memory */
    DS_ECONNECT = -4,   /* the target did not answer its pre-flight (down, wrong URL, refused) */
    DS_ERUN = -5,       /* the run could not be carried out (client or engine set-up, a level failed) */
    DS_EINTR = -6,      /* stopped by a signal before it finished (what was measured is kept) */
    DS_EJUDGED = -7,    /* measured, then failed by the run policy (results/validity.h, a gate) */
} ds_result;

/* A short constant text for code ("invalid input", ...); "unknown result code" for others. */
const char *ds_strerror(ds_result code);
/* The process exit status for code: 0 ok, 2 bad input (DS_EINVAL, DS_ECONNECT: the user named a
 * target that is not there), 1 every other failure (the run failed or was judged failed). */
int ds_exit_code(ds_result code);
#endif
