/* rxstamp — see rxstamp.h. recv() is defined here so libcurl's reads reach it; the reads it does
 * not stamp go to the kernel as glibc's recv() does (recvfrom with no address). */
#include "client/rxstamp.h"
#include "common/clock.h"
#include <sys/socket.h>
#include <sys/types.h>
#include <string.h>
#include <errno.h>
#include <time.h>

static __thread bool on;
static __thread int stamp_fd = -1;
static __thread int64_t real_minus_mono_ns;   /* CLOCK_REALTIME - CLOCK_MONOTONIC at the last sync */
static __thread int64_t sync_mono_ns;
static __thread int64_t last_ns;              /* the last stamped read's arrival, monotonic */
static __thread unsigned long n_stamped;
static __thread rxstamp_ahead *ahead;        /* reads made ahead (rxbatch), until unregistered */
static __thread int n_ahead;
static __thread int ahead_hint;              /* where the last one was found: the client asks in order */
static __thread int last_fd = -1;            /* the socket of the last read that returned bytes */
static __thread unsigned long n_ahead_served;

int rxstamp_enable_socket(int fd) {
    int one = 1;
    return setsockopt(fd, SOL_SOCKET, SO_TIMESTAMPNS, &one, sizeof one);
}

void rxstamp_thread(bool enable) { on = enable; stamp_fd = -1; last_ns = 0; }
void rxstamp_socket(int fd) { stamp_fd = on ? fd : -1; last_ns = 0; }
unsigned long rxstamp_count(void) { return n_stamped; }
int rxstamp_last_socket(void) { return last_fd; }
unsigned long rxstamp_ahead_served(void) { return n_ahead_served; }

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

void rxstamp_ahead_set(rxstamp_ahead *reads, int n) { ahead = reads; n_ahead = reads ? n : 0; ahead_hint = 0; }

static rxstamp_ahead *find_ahead(int fd) {
    for (int k = 0; k < n_ahead; k++) {
        int i = (ahead_hint + k) % n_ahead;
        if (ahead[i].fd == fd && !ahead[i].taken) { ahead_hint = i; return &ahead[i]; }
    }
    return NULL;
}

/* Hands out (part of) a read made ahead. Its bytes come before anything the kernel still holds. */
static ssize_t take_ahead(rxstamp_ahead *a, void *buf, size_t len, int flags) {
    bool peek = flags & MSG_PEEK;
    if (a->res <= 0) {
        if (peek) { if (a->res == 0) return 0; errno = (int)-a->res; return -1; }
        a->taken = true;
        if (a->res == 0) return 0;
        errno = (int)-a->res;
        return -1;
    }
    size_t left = (size_t)(a->res - a->off), k = len < left ? len : left;
    memcpy(buf, a->buf + a->off, k);
    if (peek) return (ssize_t)k;
    a->off += (long)k;
    a->taken = a->off == a->res;
    last_ns = a->stamp_ns;
    last_fd = a->fd;
    n_ahead_served++;
    if (a->stamp_ns) n_stamped++;
    return (ssize_t)k;
}

ssize_t recv(int fd, void *buf, size_t len, int flags) {
    rxstamp_ahead *a = n_ahead ? find_ahead(fd) : NULL;
    if (a) return take_ahead(a, buf, len, flags);
    if (fd != stamp_fd || fd < 0) {
        ssize_t n = recvfrom(fd, buf, len, flags, NULL, NULL);
        if (n > 0 && !(flags & MSG_PEEK)) last_fd = fd;
        return n;
    }
    union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
    struct iovec iov = { .iov_base = buf, .iov_len = len };
    struct msghdr msg = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl.b, .msg_controllen = sizeof ctl.b };
    ssize_t n = recvmsg(fd, &msg, flags);
    if (n <= 0) return n;
    if (!(flags & MSG_PEEK)) last_fd = fd;
    last_ns = rxstamp_of_msg(&msg);
    if (last_ns) n_stamped++;
    return n;
}
