/* rxbatch — see rxbatch.h. liburing sets up the ring and its submission/completion queues. */
#include "client/rxbatch.h"
#include <liburing.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <pthread.h>
#include <unistd.h>
#include <arpa/inet.h>
#include <netinet/in.h>

typedef struct {
    struct msghdr msg;
    struct iovec iov;
    union { char b[CMSG_SPACE(sizeof(struct timespec))]; struct cmsghdr align; } ctl;
} slot;

struct rxbatch {
    struct io_uring ring;
    slot slots[RXBATCH_MAX];
    char *bufs;            /* RXBATCH_MAX * RXBATCH_BUF; pages are touched only as far as reads fill them */
    bool broken;
};

rxbatch *rxbatch_new(void) {
    rxbatch *b = calloc(1, sizeof *b);
    if (!b) return NULL;
    b->bufs = malloc((size_t)RXBATCH_MAX * RXBATCH_BUF);
    /* SUBMIT_ALL: a submission that fails does not leave the rest of the batch unsubmitted;
     * older kernels refuse the flag, and plain setup is enough there */
    struct io_uring_params p = { .flags = IORING_SETUP_SUBMIT_ALL };
    int rc = b->bufs ? io_uring_queue_init_params(RXBATCH_MAX, &b->ring, &p) : -ENOMEM;
    if (rc == -EINVAL) rc = io_uring_queue_init(RXBATCH_MAX, &b->ring, 0);
    if (rc < 0) {
        free(b->bufs);
        free(b);
        errno = -rc;
        return NULL;
    }
    return b;
}

void rxbatch_free(rxbatch *b) {
    if (!b) return;
    /* a broken ring may still own reads into the buffers: keep them (it is the end of the run) */
    if (b->broken) return;
    io_uring_queue_exit(&b->ring);
    free(b->bufs);
    free(b);
}

static __thread unsigned long n_reads;
unsigned long rxbatch_thread_reads(void) { return n_reads; }

int rxbatch_read(rxbatch *b, const int *fds, int n, rxbatch_res *out) {
    if (b->broken || n <= 0 || n > RXBATCH_MAX) return -1;
    for (int i = 0; i < n; i++) {
        slot *s = &b->slots[i];
        s->iov = (struct iovec){ .iov_base = b->bufs + (size_t)i * RXBATCH_BUF, .iov_len = RXBATCH_BUF };
        s->msg = (struct msghdr){ .msg_iov = &s->iov, .msg_iovlen = 1, .msg_control = s->ctl.b, .msg_controllen = sizeof s->ctl.b };
        struct io_uring_sqe *sqe = io_uring_get_sqe(&b->ring);
        if (!sqe) { b->broken = true; return -1; }   /* cannot happen: the ring has RXBATCH_MAX entries and is empty */
        io_uring_prep_recvmsg(sqe, fds[i], &s->msg, MSG_DONTWAIT);
        io_uring_sqe_set_data64(sqe, (unsigned long long)i);
        /* not read until its completion is seen: a read that never completes is not handed out */
        out[i] = (rxbatch_res){ .fd = fds[i], .buf = s->iov.iov_base, .res = RXBATCH_NOT_READ };
    }
    /* every read completes inline (MSG_DONTWAIT): one enter submits them all and finds them done */
    int got = 0, rc = io_uring_submit_and_wait(&b->ring, (unsigned)n);
    bool unsupported = false;
    for (;;) {
        struct io_uring_cqe *cqe;
        unsigned head, seen = 0;
        io_uring_for_each_cqe(&b->ring, head, cqe) {
            int i = (int)io_uring_cqe_get_data64(cqe);
            if (i >= 0 && i < n) {
                if (cqe->res == -EINVAL || cqe->res == -EOPNOTSUPP) {
                    unsupported = true;   /* a kernel without this operation: nothing was read */
                } else {
                    out[i].res = cqe->res;
                    n_reads++;
                    if (cqe->res > 0) out[i].stamp_ns = rxstamp_of_msg(&b->slots[i].msg);
                }
            }
            seen++;
        }
        io_uring_cq_advance(&b->ring, seen);
        got += (int)seen;
        if (got >= n && unsupported) {   /* the rest were handed out; read one at a time from now on */
            b->broken = true;
            return -1;
        }
        if (got >= n) return 0;
        if (rc < 0 && rc != -EINTR && rc != -EAGAIN && rc != -EBUSY) break;
        rc = io_uring_submit_and_wait(&b->ring, 1);   /* interrupted before all were seen: wait for the rest */
    }
    /* the ring failed with reads outstanding: those that completed are handed out; the others are
     * not (were one to complete later, its bytes would be lost with the ring) */
    b->broken = true;
    return -1;
}

/* ---- when a batch pays (rxbatch.h) ---- */

int rxbatch_min_from(double one_us, double enter_us, double per_read_us) {
    double saved = one_us - per_read_us;   /* what each read saves in a batch */
    if (!(saved > 0)) return RXBATCH_NEVER;
    if (enter_us < 0) enter_us = 0;
    /* the least k with enter + k x per_read < k x one, i.e. k > enter / saved */
    double k = enter_us / saved;
    if (k >= RXBATCH_MAX) return RXBATCH_NEVER;
    int m = (int)k + 1;
    return m < 2 ? 2 : m;
}

static double mono_us(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e6 + t.tv_nsec / 1e3;
}

#define CAL_BIG 8        /* the larger batch the per-read cost is taken from */
#define CAL_REPS 12      /* reads (or batches) per sample */
#define CAL_SAMPLES 5    /* the least sample is kept: preemption and cache misses only add */

int rxbatch_measure(rxbatch *b, rxbatch_cost *out) {
    *out = (rxbatch_cost){ .min_sockets = 2 };
    if (!b || b->broken) return -1;
    /* an empty loopback TCP connection: every read of it answers -EAGAIN at once, by the same
     * path (socket lookup, lock, receive queue) a read with bytes takes before it copies them */
    int l = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), cl = -1, sv = -1;
    struct sockaddr_in a = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
    socklen_t al = sizeof a;
    if (l >= 0 && !bind(l, (struct sockaddr *)&a, al) && !listen(l, 1) && !getsockname(l, (struct sockaddr *)&a, &al)) {
        cl = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (cl >= 0 && !connect(cl, (struct sockaddr *)&a, al)) sv = accept(l, NULL, NULL);
    }
    if (l >= 0) close(l);
    if (sv < 0) { if (cl >= 0) close(cl); return -1; }
    rxstamp_enable_socket(cl);
    int fds[CAL_BIG];
    for (int i = 0; i < CAL_BIG; i++) fds[i] = cl;
    rxbatch_res res[CAL_BIG];
    char buf[64];
    double one = 1e30, b1 = 1e30, bbig = 1e30;
    int rc = 0;
    unsigned long reads_before = n_reads;
    for (int s = 0; s < CAL_SAMPLES && rc == 0; s++) {
        double t0 = mono_us();
        for (int r = 0; r < CAL_REPS; r++) { int64_t st; rxstamp_recv(cl, buf, sizeof buf, MSG_DONTWAIT, &st); }
        double t1 = mono_us();
        for (int r = 0; r < CAL_REPS && rc == 0; r++) rc = rxbatch_read(b, fds, 1, res);
        double t2 = mono_us();
        for (int r = 0; r < CAL_REPS && rc == 0; r++) rc = rxbatch_read(b, fds, CAL_BIG, res);
        double t3 = mono_us();
        if ((t1 - t0) / CAL_REPS < one) one = (t1 - t0) / CAL_REPS;
        if ((t2 - t1) / CAL_REPS < b1) b1 = (t2 - t1) / CAL_REPS;
        if ((t3 - t2) / CAL_REPS < bbig) bbig = (t3 - t2) / CAL_REPS;
    }
    n_reads = reads_before;   /* the calibration's reads are not the run's */
    close(cl);
    close(sv);
    if (rc != 0) return -1;
    double per = (bbig - b1) / (CAL_BIG - 1);
    if (per < 0) per = 0;
    *out = (rxbatch_cost){ .one_us = one, .enter_us = b1 - per, .per_read_us = per, .measured = true };
    out->min_sockets = rxbatch_min_from(out->one_us, out->enter_us, out->per_read_us);
    return 0;
}

static rxbatch_cost host_cost;
static pthread_once_t host_once = PTHREAD_ONCE_INIT;
static __thread rxbatch *host_ring;
static _Atomic bool host_known;   /* the ring of the thread that calls: the one that measures */

static void host_measure(void) {
    const char *e = getenv("DSPERF_CLIENT_RXBATCH_MIN");
    if (e && *e) {
        int k = atoi(e);
        host_cost = (rxbatch_cost){ .min_sockets = k < 2 ? 2 : k > RXBATCH_NEVER ? RXBATCH_NEVER : k };
        return;
    }
    if (rxbatch_measure(host_ring, &host_cost) < 0) host_cost = (rxbatch_cost){ .min_sockets = 2 };
}

const rxbatch_cost *rxbatch_cost_of_host(rxbatch *b) {
    host_ring = b;
    pthread_once(&host_once, host_measure);
    host_known = true;
    return &host_cost;
}

const rxbatch_cost *rxbatch_cost_known(void) { return host_known ? &host_cost : NULL; }
