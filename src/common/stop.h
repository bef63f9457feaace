/* stop — the flag that asks a running measurement to stop: raised by a signal handler (or the
 * sweep's over-saturation detector, or a multi-host job's leader) and read by the load, drift,
 * monitor and tune threads while they run. A C11 atomic, not `volatile sig_atomic_t`: volatile
 * orders nothing between threads (a data race in C11, and what TSan reports), while a lock-free
 * atomic is both safe to store from a signal handler (C11 7.14.1.1) and to share across threads. */
#ifndef DSP_STOP_H
#define DSP_STOP_H
#include <stdatomic.h>

/* 0: keep going; any other value says why to stop (e.g. load/runner.h's LOAD_STOP_*). */
typedef atomic_int ds_stop_flag;

/* A signal handler may store to it only when it is lock-free on this target. */
_Static_assert(ATOMIC_INT_LOCK_FREE == 2, "stop flags are stored from signal handlers: atomic_int must be lock-free");
#endif
