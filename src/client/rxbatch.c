/* rxbatch — see rxbatch.h. liburing sets up the ring and its submission/completion queues. */
#include "client/rxbatch.h"
#include <liburing.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

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
