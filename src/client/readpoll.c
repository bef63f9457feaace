/* readpoll — see readpoll.h. poll() is defined here, so libcurl's calls (resolved through the
 * dynamic symbol table, where the executable comes first) reach it; everything it does not
 * answer itself goes to the kernel through ppoll(), which nothing here redefines. */
#include "client/readpoll.h"
#include <poll.h>
#include <stddef.h>
#include <time.h>

static __thread int action_fd = -1;   /* socket of the running socket action */
static __thread int skip_fd = -1;     /* a read on it just delivered bytes: skip the next readability poll */
static __thread unsigned long n_skipped;

void readpoll_enter(int fd) { action_fd = fd; skip_fd = -1; }
void readpoll_leave(void) { action_fd = skip_fd = -1; }
void readpoll_delivered(void) { skip_fd = action_fd; }
unsigned long readpoll_skipped(void) { return n_skipped; }

/* glibc's <poll.h> declares fds write-only (access attribute), yet poll() reads fd and events. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#endif
int poll(struct pollfd *fds, nfds_t nfds, int timeout_ms) {
    int fd = skip_fd;
    skip_fd = -1;   /* one skip per delivery: whatever libcurl asks next goes to the kernel */
    if (fd >= 0 && nfds == 1 && timeout_ms == 0 && fds[0].fd == fd &&
        !(fds[0].events & (POLLOUT | POLLWRNORM | POLLWRBAND))) {
        fds[0].revents = 0;
        n_skipped++;
        return 0;
    }
    if (timeout_ms < 0) return ppoll(fds, nfds, NULL, NULL);
    struct timespec ts = { .tv_sec = timeout_ms / 1000, .tv_nsec = (long)(timeout_ms % 1000) * 1000000L };
    return ppoll(fds, nfds, &ts, NULL);
}
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif
