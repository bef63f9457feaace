/* readpoll — drops the readability poll() libcurl makes after every read of a response.
 *
 * libcurl (7.88, Debian 12) ends each read of a transfer by asking whether more bytes are waiting:
 * readwrite_data() loops `while (data_pending(...))`, and for a plain socket that is
 * poll(fd, POLLIN, timeout 0), one system call per read. When every chunk of a stream arrives on
 * its own (a 5-10 ms inter-token gap), that is a third of the client's system calls: epoll_wait,
 * recvfrom, poll. The client already watches every socket with a level-triggered epoll, so the
 * answer "nothing more" is always safe: bytes that are in fact waiting make the very next
 * epoll_wait return at once, and they are read then (with their kernel receive stamp, rxstamp.h,
 * so reading them a little later does not move their time).
 *
 * The client marks the socket it is handing to curl_multi_socket_action (readpoll_enter/leave);
 * its write callback marks that a read delivered bytes (readpoll_delivered). This module defines
 * poll(): the first poll() after a delivery that asks only whether that same socket is readable,
 * with a zero timeout, is answered "not readable" without a system call; every other call goes to
 * the kernel (ppoll). State is per thread (each client thread has its own loop). */
#ifndef DSP_READPOLL_H
#define DSP_READPOLL_H

/* The socket of the current curl_multi_socket_action call (-1: none). */
void readpoll_enter(int fd);
void readpoll_leave(void);
/* The write callback got bytes read from the current socket. */
void readpoll_delivered(void);
/* Readability polls answered without a system call by this thread (for tests and profiling). */
unsigned long readpoll_skipped(void);
#endif
