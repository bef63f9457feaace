/* rxbatch — many sockets read in one system call (io_uring).
 *
 * After a wake-up the client's loop has a list of sockets with a chunk waiting, about a dozen at
 * 32 streams with a 10 ms gap (h1.c gathers them). Read one at a time, each is its own
 * recvmsg(), and on a virtual machine a system call costs about 1 µs before it does anything
 * (1.1 µs for getppid on the 2-core PVM guest this project is built on, against ~0.1 µs on bare
 * metal): a third of the client's CPU per chunk. This module reads a batch of sockets with one
 * io_uring_enter: one IORING_OP_RECVMSG per socket, MSG_DONTWAIT (a socket with nothing waiting
 * answers -EAGAIN at once, it is never left pending), each with its receive stamp (rxstamp.h).
 * Measured on the 2-core VM, 14 loopback sockets with 200 bytes each: 3.0 µs of CPU per read one
 * recvmsg at a time, 1.6 µs in one batch (both including the ACK each read sends).
 *
 * io_uring may be unavailable (an old kernel, kernel.io_uring_disabled, a container's seccomp
 * profile): rxbatch_new says so and the client reads one socket at a time as before. */
#ifndef DSP_RXBATCH_H
#define DSP_RXBATCH_H
#include "client/rxstamp.h"
#include <stdbool.h>

/* The most sockets one batch reads (the client's epoll batch). */
#define RXBATCH_MAX 256
/* Bytes read per socket: one read of the client (h1.c READ_BUF, libcurl's CURL_MAX_WRITE_SIZE). */
#define RXBATCH_BUF 16384

typedef struct rxbatch rxbatch;

/* One socket's read. res: the bytes read; 0 the end of the stream; < 0 the read's -errno
 * (-EAGAIN: nothing was there); RXBATCH_NOT_READ: the ring failed before this read was made. */
typedef struct {
    int fd;
    const char *buf;
    long res;
    int64_t stamp_ns;    /* rxstamp_of_msg of the read (0 none) */
} rxbatch_res;
#define RXBATCH_NOT_READ (-(1L << 40))

/* NULL when io_uring cannot be used here (errno says why). */
rxbatch *rxbatch_new(void);
void rxbatch_free(rxbatch *b);
/* Reads each of fds[0..n) (n <= RXBATCH_MAX) once, without waiting, all in one system call; out[i]
 * gets socket i's bytes (valid until the next call), result and stamp. 0, or -1 when the ring
 * failed: then out[] holds the reads that completed (the others are RXBATCH_NOT_READ) and the
 * batch must not be used again. */
int rxbatch_read(rxbatch *b, const int *fds, int n, rxbatch_res *out);
/* Reads this thread's batches made (for tests and profiling). */
unsigned long rxbatch_thread_reads(void);

/* When a batch pays (issue 27: batched vs one recvmsg each, chosen from a measurement, not a
 * guess). Reading k ready sockets costs about k x one_us one recvmsg at a time, and enter_us +
 * k x per_read_us in one batch (the bytes copied, the ACK sent and the stamp are the same either
 * way and cancel out). So a batch is taken from k >= min_sockets, the least k (>= 2) with
 * enter_us + k x per_read_us < k x one_us; never (RXBATCH_NEVER) where a read in the ring costs
 * as much as a recvmsg of its own. The costs are measured on this host, on the client's own code:
 * rxstamp_recv and rxbatch_read of an empty loopback TCP socket (each read answers -EAGAIN at
 * once), the least of several samples (the host's noise only ever adds). On the 2-core VM a
 * system call costs ~1.1 µs before it does anything, on the 16-core host ~0.1 µs: the same rule
 * gives each its own K. */
#define RXBATCH_NEVER (RXBATCH_MAX + 1)
typedef struct {
    double one_us;        /* one recvmsg of its own */
    double enter_us;      /* a batch's fixed cost: the io_uring_enter and reaping the completions */
    double per_read_us;   /* each read in a batch */
    int min_sockets;      /* the least ready sockets for which a batch costs less; RXBATCH_NEVER */
    bool measured;        /* false: set by DSPERF_CLIENT_RXBATCH_MIN, or nothing could be measured */
} rxbatch_cost;
/* The rule from given costs (min_sockets of the struct is not read). */
int rxbatch_min_from(double one_us, double enter_us, double per_read_us);
/* Measures the costs now on b (~0.5 ms; the first in a process ~4 ms, with the kernel switching
 * receive stamps on); -1 when the measurement itself failed. */
int rxbatch_measure(rxbatch *b, rxbatch_cost *out);
/* The process's rule, measured once, on the first call (thread-safe): DSPERF_CLIENT_RXBATCH_MIN=K
 * sets K instead (2: every wake-up with two or more ready sockets batches, the rule before). A
 * measurement that fails gives 2. */
const rxbatch_cost *rxbatch_cost_of_host(rxbatch *b);
/* The process's rule if a client has taken it already, else NULL (for the run's results). */
const rxbatch_cost *rxbatch_cost_known(void);
#endif
