/* fileio — read a file whole; write an output the one safe way (fileio.h): "-" is stdout, symlinks
 * are followed to their target, devices and FIFOs are written in place, regular files are replaced
 * atomically (temp beside the target + fsync + rename). */
#include "common/fileio.h"
#include "common/redact.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <time.h>
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


/* The name a chain of symlinks ends at (the path itself when it is no link), whether or not that
 * name exists: a dangling link's target is where the file will be created. malloc'd; NULL + errno. */
static char *follow_links(const char *path) {
    char *cur = strdup(path);
    for (int hops = 0; cur && hops < 40; hops++) {
        struct stat l;
        if (lstat(cur, &l) != 0 || !S_ISLNK(l.st_mode)) return cur;
        char link[PATH_MAX];
        ssize_t n = readlink(cur, link, sizeof link - 1);
        if (n < 0) { int e = errno; free(cur); errno = e; return NULL; }
        link[n] = 0;
        char *next = NULL;
        const char *slash = strrchr(cur, '/');
        if (link[0] == '/' || !slash) next = strdup(link);
        else if (asprintf(&next, "%.*s/%s", (int)(slash - cur), cur, link) < 0) next = NULL;
        free(cur);
        cur = next;
    }
    if (cur) { free(cur); errno = ELOOP; }
    else errno = ENOMEM;
    return NULL;
}

/* /dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N: the descriptor itself (a new open of the
 * magic link would start at offset 0 of a file the shell opened for appending). -1 when not one. */
static int std_fd_of(const char *path) {
    if (!strcmp(path, "/dev/stdout")) return 1;
    if (!strcmp(path, "/dev/stderr")) return 2;
    const char *n = NULL;
    if (!strncmp(path, "/dev/fd/", 8)) n = path + 8;
    else if (!strncmp(path, "/proc/self/fd/", 14)) n = path + 14;
    if (!n || !*n) return -1;
    char *end;
    long v = strtol(n, &end, 10);
    return *end || v < 0 || v > INT_MAX ? -1 : (int)v;
}

static long fail_after(void) {
    const char *s = getenv("DSPERF_FILEIO_FAIL_AFTER");
    return s && *s ? strtol(s, NULL, 10) : -1;
}

bool fileio_is_stdout(const char *path) { return path && (!strcmp(path, "-") || std_fd_of(path) == 1); }

const char *fileio_display(const char *path) { return path && !strcmp(path, "-") ? "standard output" : path; }

struct fileio_out {
    FILE *f;
    int fd;            /* the descriptor written (direct or temp); -1 for stdio's stdout */
    bool own_fd;       /* opened here: closed at commit */
    char *tmp;         /* the temp file, NULL when writing in place */
    char *target;      /* where tmp is renamed to */
    int err;           /* the first write error (errno) */
    long limit;        /* DSPERF_FILEIO_FAIL_AFTER, or -1 */
    size_t written;
};

/* The cookie's write: every byte, or 0 with the error kept (stdio's own errno may be lost). 0, not
 * -1: fopencookie(3) says a write function must never return a negative value, and glibc's stdio
 * adds a -1 to its count (it then copied one byte past the caller's buffer). */
static ssize_t out_write(void *cookie, const char *buf, size_t n) {
    fileio_out *o = cookie;
    size_t want = n;
    bool full = false;
    if (o->limit >= 0 && o->written + n > (size_t)o->limit) {   /* the injected full disk */
        want = (size_t)o->limit > o->written ? (size_t)o->limit - o->written : 0;
        full = true;
    }
    size_t done = 0;
    while (done < want) {
        ssize_t w = write(o->fd, buf + done, want - done);
        if (w < 0) {
            if (errno == EINTR) continue;
            if (!o->err) o->err = errno;
            return 0;
        }
        done += (size_t)w;
    }
    o->written += done;
    if (full) { if (!o->err) o->err = ENOSPC; errno = ENOSPC; return 0; }
    return (ssize_t)n;
}

static void out_free(fileio_out *o) {
    if (!o) return;
    free(o->tmp);
    free(o->target);
    free(o);
}

static FILE *cookie_file(fileio_out *o) {
    cookie_io_functions_t io = { .write = out_write };
    return fopencookie(o, "w", io);
}

fileio_out *fileio_out_open(const char *path) {
    if (!path || !*path) { errno = ENOENT; return NULL; }
    fileio_out *o = calloc(1, sizeof *o);
    if (!o) { errno = ENOMEM; return NULL; }
    o->fd = -1;
    o->limit = fail_after();
    int sfd = fileio_is_stdout(path) ? 1 : std_fd_of(path);
    if (sfd == 1 || sfd == 2) {      /* stdio's own stream, so the bytes keep their order with printf's */
        o->f = sfd == 1 ? stdout : stderr;
        return o;
    }
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (!exists && errno != ENOENT) { int e = errno; out_free(o); errno = e; return NULL; }
    if (exists && S_ISDIR(st.st_mode)) { out_free(o); errno = EISDIR; return NULL; }
    if (sfd >= 0 || (exists && !S_ISREG(st.st_mode))) {
        /* a device, a FIFO, a descriptor: written where it is, never replaced */
        o->fd = sfd >= 0 ? sfd : open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOCTTY);
        o->own_fd = sfd < 0;
    } else {
        if (!(o->target = follow_links(path))) { int e = errno; out_free(o); errno = e; return NULL; }
        if (exists && access(o->target, W_OK) != 0) { int e = errno; out_free(o); errno = e; return NULL; }
        if (asprintf(&o->tmp, "%s.tmp.%ld", o->target, (long)getpid()) < 0) { o->tmp = NULL; out_free(o); errno = ENOMEM; return NULL; }
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0666);
        o->own_fd = true;
        if (o->fd >= 0 && exists) (void)fchmod(o->fd, st.st_mode & 07777);   /* the file keeps its mode */
    }
    if (o->fd < 0) { int e = errno; out_free(o); errno = e; return NULL; }
    if (!(o->f = cookie_file(o))) {
        int e = errno;
        if (o->own_fd) close(o->fd);
        if (o->tmp) unlink(o->tmp);
        out_free(o);
        errno = e;
        return NULL;
    }
    return o;
}

FILE *fileio_out_file(fileio_out *o) { return o ? o->f : NULL; }

int fileio_out_commit(fileio_out *o) {
    if (!o) { errno = EINVAL; return -1; }
    int e = 0;
    if (o->fd < 0) {                 /* stdout/stderr through stdio */
        if (fflush(o->f) != 0 || ferror(o->f)) e = errno ? errno : EIO;
        out_free(o);
        if (e) { errno = e; return -1; }
        return 0;
    }
    if (fclose(o->f) != 0 && !o->err) o->err = errno ? errno : EIO;
    e = o->err;
    if (!e && o->tmp && fsync(o->fd) != 0) e = errno;
    if (o->own_fd && close(o->fd) != 0 && !e) e = errno;
    if (!e && o->tmp && rename(o->tmp, o->target) != 0) e = errno;
    if (e && o->tmp) unlink(o->tmp);
    out_free(o);
    if (e) { errno = e; return -1; }
    return 0;
}

void fileio_out_abort(fileio_out *o) {
    if (!o) return;
    int e = errno;
    if (o->fd < 0) { fflush(o->f); out_free(o); errno = e; return; }
    fclose(o->f);
    if (o->own_fd) close(o->fd);
    if (o->tmp) unlink(o->tmp);
    out_free(o);
    errno = e;
}

int fileio_write_atomic(const char *path, const void *data, size_t len) {
    /* the last line of defence: a credential the process holds never reaches a file */
    size_t safe_len = 0;
    char *safe = redact_known(data, len, &safe_len);
    if (safe) { data = safe; len = safe_len; }
    int rc = -1;
    fileio_out *o = fileio_out_open(path);
    if (o) {
        if (len && fwrite(data, 1, len, o->f) != len) {
            int e = o->err ? o->err : (errno ? errno : EIO);
            fileio_out_abort(o);
            errno = e;
        } else {
            rc = fileio_out_commit(o);
        }
    }
    int e = errno;
    free(safe);
    errno = e;
    return rc;
}

int fileio_check_writable(const char *path) {
    if (!path || !*path) { errno = ENOENT; return -1; }
    if (fileio_is_stdout(path)) return 0;
    int sfd = std_fd_of(path);
    if (sfd >= 0) return fcntl(sfd, F_GETFL) < 0 ? -1 : 0;
    struct stat st;
    bool exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) { errno = EISDIR; return -1; }
    if (exists && !S_ISREG(st.st_mode)) return access(path, W_OK);
    char *target = follow_links(path);
    if (!target) return -1;
    if (exists && access(target, W_OK) != 0) { int e = errno; free(target); errno = e; return -1; }
    char *probe = NULL;
    /* beside the target, as the atomic write's temp file will be */
    if (asprintf(&probe, "%s.check.%ld", target, (long)getpid()) < 0) { free(target); errno = ENOMEM; return -1; }
    free(target);
    int fd = open(probe, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
    if (fd < 0) { int e = errno; free(probe); errno = e; return -1; }
    close(fd);
    unlink(probe);
    free(probe);
    return 0;
}

int fileio_unique_path(const char *stem, const char *ext, char *buf, size_t cap) {
    const char *dir = getenv("DSPERF_RESULTS_DIR");
    time_t now = time(NULL);
    struct tm tm;
    char stamp[32];
    if (!localtime_r(&now, &tm) || !strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm)) { errno = EINVAL; return -1; }
    for (int i = 1; i < 1000; i++) {
        char suffix[16] = "";
        if (i > 1) snprintf(suffix, sizeof suffix, "-%d", i);
        int n = dir && *dir ? snprintf(buf, cap, "%s/%s-%s%s.%s", dir, stem, stamp, suffix, ext)
                            : snprintf(buf, cap, "%s-%s%s.%s", stem, stamp, suffix, ext);
        if (n < 0 || (size_t)n >= cap) { errno = ENAMETOOLONG; return -1; }
        int fd = open(buf, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (fd >= 0) { close(fd); return 0; }
        if (errno != EEXIST) return -1;
    }
    errno = EEXIST;
    return -1;
}
