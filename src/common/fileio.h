/* fileio — whole-file reads and atomic writes (temp file in the same directory, fsync, rename),
 * so a results file is either the old one or the complete new one, never half-written. */
#ifndef DSP_FILEIO_H
#define DSP_FILEIO_H
#include <stddef.h>

/* Reads the whole file; *out is NUL-terminated and owned by the caller (free). -1 + errno on error. */
int fileio_read_all(const char *path, char **out, size_t *len);
/* Writes data to path atomically. Returns 0, or -1 with errno set. */
int fileio_write_atomic(const char *path, const void *data, size_t len);
/* Checks, before any work is done, that path can later be written atomically: a file is created
 * in its folder and removed again, and path itself must not be a folder. "-" (stdout) passes.
 * Returns 0, or -1 with errno set. */
int fileio_check_writable(const char *path);
#endif
