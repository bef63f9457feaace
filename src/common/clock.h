/* clock — the one monotonic clock every timestamp in dsperf comes from (CLOCK_MONOTONIC, ns),
 * so request records, telemetry samples and server events can be aligned without conversion. */
#ifndef DSP_CLOCK_H
#define DSP_CLOCK_H
#include <stdint.h>
#include <time.h>

#define NS_PER_US 1000LL
#define NS_PER_MS 1000000LL
#define NS_PER_S  1000000000LL

/* A timespec of any clock in ns. */
static inline int64_t clock_ts_ns(struct timespec ts) { return (int64_t)ts.tv_sec * NS_PER_S + ts.tv_nsec; }
int64_t clock_now_ns(void);                 /* CLOCK_MONOTONIC in ns */
int64_t clock_wall_ns(void);                /* CLOCK_REALTIME in ns (for human timestamps only) */
void clock_sleep_until_ns(int64_t deadline_ns); /* absolute sleep on the monotonic clock */
void clock_sleep_ns(int64_t ns);
#endif
