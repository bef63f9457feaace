/* fdlimit — raise the descriptor limit and pre-grow the descriptor table (see fdlimit.h). */
#include "common/fdlimit.h"
#include <sys/resource.h>
#include <unistd.h>
#include <fcntl.h>

/* 100,000 streams in one process (issue 27) need a table past 65,536: grown to 131,072 (1 MiB of
 * kernel memory) where the limit allows that many, so it is not doubled mid-run either */
#define TABLE_FDS 131072L

long fd_limit_prepare(void) {
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0) return -1;
    if (rl.rlim_cur < rl.rlim_max) {
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) != 0) getrlimit(RLIMIT_NOFILE, &rl);
    }
    long limit = rl.rlim_cur == RLIM_INFINITY ? TABLE_FDS : (long)rl.rlim_cur;
    long top = (limit < TABLE_FDS ? limit : TABLE_FDS) - 1;
    /* a descriptor at the top makes the kernel size the table for it once; closing it keeps the
     * table (tables never shrink) */
    if (top > 64) {
        int fd = fcntl(STDERR_FILENO, F_DUPFD_CLOEXEC, (int)top);
        if (fd < 0) fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, (int)top);
        if (fd >= 0) close(fd);
    }
    return limit;
}
