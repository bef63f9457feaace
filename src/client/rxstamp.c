/* rxstamp — see rxstamp.h. */
#include "client/rxstamp.h"
#include "common/clock.h"
#include <sys/socket.h>
#include <sys/types.h>
#include <string.h>
#include <errno.h>
#include <time.h>

static __thread int64_t real_minus_mono_ns;   /* CLOCK_REALTIME - CLOCK_MONOTONIC at the last sync */
static __thread int64_t sync_mono_ns;

int rxstamp_enable_socket(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
}

/* CLOCK_REALTIME - CLOCK_MONOTONIC. Linux keeps the two a fixed offset apart (NTP slews both
 * alike); only a step of the wall clock moves it. Each sample is one wall read bracketed by two
 * monotonic reads, good to half the bracket; the tightest sample is kept, and one that disagrees
 * by more than both errors means the wall clock was stepped and replaces it. */
static __thread int64_t offset_err_ns = -1;   /* half the kept sample's bracket; -1 none yet */


int64_t rxstamp_sync(void) {
    int64_t mb = 0;
    for (int tries = 0; tries < 4; tries++) {
        struct timespec a, r, b;
        clock_gettime(CLOCK_MONOTONIC, &a);
        clock_gettime(CLOCK_REALTIME, &r);
        clock_gettime(CLOCK_MONOTONIC, &b);
        int64_t ma = clock_ts_ns(a);
        mb = clock_ts_ns(b);
        int64_t err = (mb - ma) / 2 + 1, est = clock_ts_ns(r) - (ma + (mb - ma) / 2);
        int64_t diff = est > real_minus_mono_ns ? est - real_minus_mono_ns : real_minus_mono_ns - est;
        if (offset_err_ns < 0 || diff > err + offset_err_ns + NS_PER_US || err < offset_err_ns) {
            real_minus_mono_ns = est;
            offset_err_ns = err;
        }
        if (offset_err_ns <= RXSTAMP_SYNC_SLACK_NS / 10) break;   /* a clean sample: done */
    }
    sync_mono_ns = mb;
    return mb;
}

int64_t rxstamp_of_msg(const struct msghdr *msg) {
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(msg); cm; cm = CMSG_NXTHDR((struct msghdr *)msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS) continue;
        struct timespec ts;
        memcpy(&ts, CMSG_DATA(cm), sizeof ts);
        int64_t mono = clock_ts_ns(ts) - real_minus_mono_ns;
        /* the bytes came in before this read, and (in a loop that syncs every wake-up) not long
         * before the last sync; anything else means the wall clock was stepped: no stamp */
        if (mono > 0 && mono > sync_mono_ns - 10 * NS_PER_S) return mono;
    }
    return 0;
}

long rxstamp_recv(int fd, void *buf, unsigned long len, int flags, int64_t *stamp_ns) {
    union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b };
    ssize_t n = recvmsg(fd, &msg, flags);
    *stamp_ns = n > 0 ? rxstamp_of_msg(&msg) : 0;
    return (long)n;
}
