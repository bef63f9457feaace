/* rxbatch — many sockets read in one system call (io_uring), ahead of libcurl.
 *
 * After a wake-up the client's loop has a list of sockets with a chunk waiting, about a dozen at
 * 32 streams with a 10 ms gap (client.c gathers them). libcurl reads each with its own recv(),
 * and on a virtual machine a system call costs about 1 µs before it does anything (1.1 µs for
 * getppid on the 2-core PVM guest this project is built on, against ~0.1 µs on bare metal): a
 * third of the client's CPU per chunk. This module reads a batch of sockets with one
 * io_uring_enter: one IORING_OP_RECVMSG per socket, MSG_DONTWAIT (a socket with nothing waiting
 * answers -EAGAIN at once, it is never left pending), each with its receive stamp (rxstamp.h).
 * The reads are registered with rxstamp, whose recv() hands them to libcurl when it asks.
 * Measured on the 2-core VM, 14 loopback sockets with 200 bytes each: 3.0 µs of CPU per read one
 * recvmsg at a time, 1.6 µs in one batch (both including the ACK each read sends).
 *
 * io_uring may be unavailable (an old kernel, kernel.io_uring_disabled, a container's seccomp
 * profile): rxbatch_new says so and the client reads one socket at a time as before. */
#ifndef DSP_RXBATCH_H
#define DSP_RXBATCH_H
#include "client/rxstamp.h"

/* The most sockets one batch reads (the client's epoll batch). */
#define RXBATCH_MAX 256
/* Bytes read per socket: libcurl's own read size (CURL_MAX_WRITE_SIZE, its default buffer), so
 * one read ahead is never more than libcurl asks for at once. */
#define RXBATCH_BUF 16384

typedef struct rxbatch rxbatch;

/* NULL when io_uring cannot be used here (errno says why). */
rxbatch *rxbatch_new(void);
void rxbatch_free(rxbatch *b);
/* Reads each of fds[0..n) (n <= RXBATCH_MAX) once, without waiting, all in one system call; out[i]
 * gets socket i's bytes (valid until the next call), result and stamp. 0, or -1 when the ring
 * failed: then out[] holds the reads that completed (the others are marked taken, i.e. not read)
 * and the batch must not be used again. */
int rxbatch_read(rxbatch *b, const int *fds, int n, rxstamp_ahead *out);
#endif
