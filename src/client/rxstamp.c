/* rxstamp — see rxstamp.h. recv() is defined here so libcurl's reads reach it; the reads it does
 * not stamp go to the kernel as glibc's recv() does (recvfrom with no address). */
#include "client/rxstamp.h"
#include "common/clock.h"
#include <sys/socket.h>
#include <sys/types.h>
#include <string.h>
#include <time.h>

static __thread bool on;
static __thread int stamp_fd = -1;
static __thread int64_t real_minus_mono_ns;   /* CLOCK_REALTIME - CLOCK_MONOTONIC at the last sync */
static __thread int64_t sync_mono_ns;
static __thread int64_t last_ns;              /* the last stamped read's arrival, monotonic */
static __thread unsigned long n_stamped;

int rxstamp_enable_socket(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
}

void rxstamp_thread(bool enable) { on = enable; stamp_fd = -1; last_ns = 0; }
void rxstamp_socket(int fd) { stamp_fd = on ? fd : -1; last_ns = 0; }
unsigned long rxstamp_count(void) { return n_stamped; }

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

int64_t rxstamp_last_ns(void) {
    if (!last_ns) return 0;
    int64_t now = clock_now_ns();
    return last_ns > now ? now : last_ns;
}

ssize_t recv(int fd, void *buf, size_t len, int flags) {
    if (fd != stamp_fd || fd < 0) return recvfrom(fd, buf, len, flags, NULL, NULL);
    union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b };
    ssize_t n = recvmsg(fd, &msg, flags);
    if (n <= 0) return n;
    last_ns = 0;
    for (struct cmsghdr *cm = CMSG_FIRSTHDR(&msg); cm; cm = CMSG_NXTHDR(&msg, cm)) {
        if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_TIMESTAMPNS) continue;
        struct timespec ts;
        memcpy(&ts, CMSG_DATA(cm), sizeof ts);
        int64_t mono = clock_ts_ns(ts) - real_minus_mono_ns;
        /* the bytes came in before this read, and (in a loop that syncs every wake-up) not long
         * before the last sync; anything else means the wall clock was stepped: no stamp */
        if (mono > 0 && mono > sync_mono_ns - 10 * NS_PER_S) { last_ns = mono; n_stamped++; }
    }
    return n;
}
