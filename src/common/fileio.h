/* fileio — whole-file reads and the one way dsperf writes an output file, so a results file is
 * either the old one or the complete new one, never half-written, and writing never destroys
 * something that is not ours to replace:
 *   - "-" is standard output (every output flag);
 *   - a symlink is followed: the temp file is made beside the link's final target and renamed
 *     there, so the link stays a link and its target is updated (a dangling link creates its
 *     target, as the shell's > would);
 *   - a target that exists and is not a regular file (a character device such as /dev/null, a
 *     FIFO, /dev/stdout) is opened and written directly, never renamed over;
 *   - otherwise: temp file in the target's folder, fsync, rename (an existing file's mode kept).
 * Fault injection for tests: DSPERF_FILEIO_FAIL_AFTER=N makes every write fail with ENOSPC once N
 * bytes of one file are written (a full disk), after a short write. */
#ifndef DSP_FILEIO_H
#define DSP_FILEIO_H
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>

/* Reads the whole file; *out is NUL-terminated and owned by the caller (free). -1 + errno on error. */
int fileio_read_all(const char *path, char **out, size_t *len);
/* Writes data to path as above (credentials the process holds are masked first: common/redact.h).
 * Returns 0, or -1 with errno set; on failure an existing regular file is left as it was. */
int fileio_write_atomic(const char *path, const void *data, size_t len);
/* Checks, before any work is done, that path can later be written as above: a probe file is
 * created beside the (symlink-resolved) target and removed again; a folder fails (EISDIR); an
 * existing device or FIFO must be writable by us; "-" passes. Returns 0, or -1 with errno set. */
int fileio_check_writable(const char *path);
/* True for "-", the name of standard output in every output flag, and for the names of descriptor 1
 * (/dev/stdout, /dev/fd/1, /proc/self/fd/1). */
bool fileio_is_stdout(const char *path);
/* How to name path in a message: "standard output" for "-", else path itself. */
const char *fileio_display(const char *path);

/* A streamed output (a file too large to build in memory first), with the same rules: write to
 * fileio_out_file(), then commit (flush, fsync, rename into place; 0 or -1 + errno) or abort
 * (nothing replaced). Both free the handle. NULL + errno when it cannot be opened. */
typedef struct fileio_out fileio_out;
fileio_out *fileio_out_open(const char *path);
FILE *fileio_out_file(fileio_out *o);
int fileio_out_commit(fileio_out *o);
void fileio_out_abort(fileio_out *o);

/* A default output name that names no earlier run: DIR/STEM-YYYYmmdd-HHMMSS.EXT (then -2, -3, ...
 * when taken), DIR being $DSPERF_RESULTS_DIR or the current folder. The file is created empty with
 * O_EXCL, so two runs started in the same second do not pick one name. 0, or -1 with errno. */
int fileio_unique_path(const char *stem, const char *ext, char *buf, size_t cap);
#endif
