/* clock — monotonic time in ns, and absolute sleeps that do not drift. */
#include "common/clock.h"
#include <time.h>
#include <errno.h>

int64_t clock_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return clock_ts_ns(ts);
}

int64_t clock_wall_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return clock_ts_ns(ts);
}

void clock_sleep_until_ns(int64_t deadline_ns) {
    struct timespec ts = { .tv_sec = deadline_ns / NS_PER_S, .tv_nsec = deadline_ns % NS_PER_S };
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {}
}

void clock_sleep_ns(int64_t ns) {
    if (ns > 0) clock_sleep_until_ns(clock_now_ns() + ns);
}
