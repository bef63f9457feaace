/* rxstamp — each response read stamped with the time the kernel received its bytes.
 *
 * A chunk stamped when the client reads it has to be read the moment it arrives: one wake-up per
 * lone chunk, and that wake-up (epoll sleep, context switch back in) was half the client's CPU per
 * chunk. With the kernel's receive time (SO_TIMESTAMPNS; TCP hands it over as a control message on
 * recvmsg, the time of the last segment the read copied; SIOCGSTAMPNS does not work on TCP) a
 * chunk's stamp no longer depends on when it is read, so the client (h1.c) lets a few streams'
 * chunks gather and reads them in one wake-up without losing precision.
 *
 * The stamp is CLOCK_REALTIME; it is moved to the monotonic clock with the offset between the two,
 * sampled at every wake-up (rxstamp_sync). The reads themselves are the client's own (h1.c,
 * rxbatch.c): no libc function is replaced. State is per thread (each client thread syncs its own
 * offset). */
#ifndef DSP_RXSTAMP_H
#define DSP_RXSTAMP_H
#include <stdbool.h>
#include <stdint.h>

/* Ask the kernel to stamp what this socket receives (SO_TIMESTAMPNS); 0 or -1. */
int rxstamp_enable_socket(int fd);
/* A converted stamp is within this of the monotonic time of arrival (the wall/monotonic offset
 * is sampled until it is known to a tenth of this; typically to tens of ns). */
#define RXSTAMP_SYNC_SLACK_NS 20000

/* Samples the offset between the kernel's stamp clock (CLOCK_REALTIME) and the monotonic
 * clock; the client calls it once per wake-up, so a clock step costs at most one wake-up. */
int64_t rxstamp_sync(void);   /* returns the monotonic time it sampled */

struct msghdr;
/* The receive stamp in a recvmsg()'s control data, on the monotonic clock; 0 when it has none
 * (or an implausible one: the wall clock was stepped since rxstamp_sync). */
int64_t rxstamp_of_msg(const struct msghdr *msg);
/* recvmsg(fd, buf, len, flags) with the stamp of what it read in *stamp_ns (0 none): the bytes, 0
 * at the end of the stream, -1 with errno. */
long rxstamp_recv(int fd, void *buf, unsigned long len, int flags, int64_t *stamp_ns);
#endif
