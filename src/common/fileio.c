/* fileio — read a file whole; write one atomically (temp + fsync + rename). */
#include "common/fileio.h"
#include "common/redact.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <unistd.h>
#include <sys/stat.h>

int fileio_read_all(const char *path, char **out, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return -1;
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap + 1);
    if (!buf) { fclose(f); errno = ENOMEM; return -1; }
    for (;;) {
        size_t got = fread(buf + n, 1, cap - n, f);
        n += got;
        if (n < cap) break;
        char *nb = realloc(buf, cap * 2 + 1);
        if (!nb) { free(buf); fclose(f); errno = ENOMEM; return -1; }
        buf = nb;
        cap *= 2;
    }
    int err = ferror(f);
    fclose(f);
    if (err) { free(buf); errno = EIO; return -1; }
    buf[n] = 0;
    *out = buf;
    if (len) *len = n;
    return 0;
}

static int write_atomic(const char *path, const void *data, size_t len);

int fileio_write_atomic(const char *path, const void *data, size_t len) {
    /* the last line of defence: a credential the process holds never reaches a file */
    size_t safe_len = 0;
    char *safe = redact_known(data, len, &safe_len);
    if (safe) { data = safe; len = safe_len; }
    int rc = write_atomic(path, data, len);
    int e = errno;
    free(safe);
    errno = e;
    return rc;
}

static int write_atomic(const char *path, const void *data, size_t len) {
    size_t plen = strlen(path);
    char *tmp = malloc(plen + 32);
    if (!tmp) { errno = ENOMEM; return -1; }
    snprintf(tmp, plen + 32, "%s.tmp.%ld", path, (long)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) { free(tmp); return -1; }
    const char *p = data;
    size_t left = len;
    while (left) {
        ssize_t w = write(fd, p, left);
        if (w < 0) {
            if (errno == EINTR) continue;
            int e = errno; close(fd); unlink(tmp); free(tmp); errno = e; return -1;
        }
        p += w;
        left -= (size_t)w;
    }
    if (fsync(fd) < 0 || close(fd) < 0) { int e = errno; unlink(tmp); free(tmp); errno = e; return -1; }
    if (rename(tmp, path) < 0) { int e = errno; unlink(tmp); free(tmp); errno = e; return -1; }
    free(tmp);
    return 0;
}

int fileio_check_writable(const char *path) {
    if (!path || !*path) { errno = ENOENT; return -1; }
    if (!strcmp(path, "-")) return 0;
    struct stat st;
    if (stat(path, &st) == 0 && S_ISDIR(st.st_mode)) { errno = EISDIR; return -1; }
    size_t plen = strlen(path);
    char *probe = malloc(plen + 48);
    if (!probe) { errno = ENOMEM; return -1; }
    /* beside the target, as the atomic write's temp file will be */
    snprintf(probe, plen + 48, "%s.check.%ld", path, (long)getpid());
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) { int e = errno; free(probe); errno = e; return -1; }
    close(fd);
    unlink(probe);
    free(probe);
    return 0;
}
