/* rxstamp — each response read stamped with the time the kernel received its bytes.
 *
 * The client used to stamp a chunk when libcurl handed it over, i.e. when our thread had woken up
 * and read it: so every chunk had to be read the moment it arrived, one wake-up per lone chunk,
 * and that wake-up (epoll sleep, context switch back in) was half the client's CPU per chunk.
 * With the kernel's receive time (SO_TIMESTAMPNS; TCP hands it over as a control message on
 * recvmsg, the time of the last segment the read copied) a chunk's stamp no longer depends on
 * when we read it, so the client can let a few streams' chunks gather and read them in one
 * wake-up (client.c's coalescing window) without losing precision.
 *
 * libcurl (7.88, Debian 12) reads HTTP responses with recv(). This module defines recv() (the
 * executable's definition comes first in the dynamic lookup, as readpoll.c does for poll()):
 * on the socket of the running curl_multi_socket_action (readpoll_enter) of a thread that turned
 * stamping on, it reads with recvmsg and keeps the stamp, converted to the monotonic clock;
 * every other recv() is recvfrom(..., NULL, NULL) as glibc's. State is per thread.
 *
 * The client may also read a batch of sockets itself, in one system call, before it hands them to
 * libcurl (rxbatch.h): those reads are registered here (rxstamp_ahead_set), and recv() on such a
 * socket hands out the bytes already read, with their stamp, before it reads the kernel again, so
 * libcurl sees the stream's bytes in order whichever socket action asks. */
#ifndef DSP_RXSTAMP_H
#define DSP_RXSTAMP_H
#include <stdbool.h>
#include <stdint.h>

/* Ask the kernel to stamp what this socket receives (SO_TIMESTAMPNS); 0 or -1. */
int rxstamp_enable_socket(int fd);
/* Turn stamped reads on or off for this thread (the client's loop). */
void rxstamp_thread(bool on);
/* A converted stamp is within this of the monotonic time of arrival (the wall/monotonic offset
 * is sampled until it is known to a tenth of this; typically to tens of ns). */
#define RXSTAMP_SYNC_SLACK_NS 20000

/* Samples the offset between the kernel's stamp clock (CLOCK_REALTIME) and the monotonic
 * clock; the client calls it once per wake-up, so a clock step costs at most one wake-up. */
int64_t rxstamp_sync(void);   /* returns the monotonic time it sampled */
/* The socket whose reads are stamped now (-1: none); the client sets it around each socket action. */
void rxstamp_socket(int fd);
/* The monotonic time (ns) the bytes of this thread's last read on the stamped socket arrived,
 * never later than now; 0 when that read had no usable stamp (a socket not stamped, or a stamp
 * that a step of the wall clock since rxstamp_sync made implausible). Reset by rxstamp_socket. */
int64_t rxstamp_last_ns(void);
/* The socket of this thread's last recv() that returned bytes (-1: none yet). */
int rxstamp_last_socket(void);
/* Reads stamped by the kernel on this thread (for tests and profiling). */
unsigned long rxstamp_count(void);

struct msghdr;
/* The receive stamp in a recvmsg()'s control data, on the monotonic clock; 0 when it has none
 * (or an implausible one: the wall clock was stepped since rxstamp_sync). */
int64_t rxstamp_of_msg(const struct msghdr *msg);

/* One read made ahead of libcurl (rxbatch.h). res: the bytes read; 0 the end of the stream;
 * < 0 the read's -errno (-EAGAIN: nothing was there). */
typedef struct {
    int fd;
    const char *buf;
    long res;
    long off;            /* bytes recv() has handed out */
    bool taken;          /* recv() has handed out all of it (or its end / error, once) */
    int64_t stamp_ns;    /* rxstamp_of_msg of the read */
} rxstamp_ahead;
/* Registers n reads made ahead (NULL, 0: none); this thread's recv() on their sockets serves them
 * first. The array must stay valid until it is unregistered. */
void rxstamp_ahead_set(rxstamp_ahead *reads, int n);
/* recv() calls this thread answered from reads made ahead (for tests and profiling). */
unsigned long rxstamp_ahead_served(void);
#endif
