/* fdlimit — room for thousands of sockets: the descriptor limit raised to its hard limit, and the
 * process's descriptor table grown once, up front, instead of while the run's threads work. */
#ifndef DSP_FDLIMIT_H
#define DSP_FDLIMIT_H

/* Raises RLIMIT_NOFILE's soft limit to the hard limit, then grows the descriptor table to hold
 * min(that limit, 131072) descriptors (8 bytes each: 1 MiB at 100,000 streams' limit, 160 KiB at
 * a limit of 20,000). Returns the soft limit.
 *
 * Why the table: the kernel doubles it as descriptor numbers pass 64, 128, 256, ..., and in a
 * process with several threads each doubling waits for an RCU grace period. Measured: socket()
 * blocked 6–9 ms at descriptor 256 and 512 while 1,000 streams were opening, and the stalled
 * thread's other streams showed it as 20 ms inter-token gaps. Call it before starting threads. */
long fd_limit_prepare(void);
#endif
