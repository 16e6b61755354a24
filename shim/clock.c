/* The shim's one clock: CLOCK_MONOTONIC in nanoseconds. Every event and (with
 * CUPTI's timestamp callback) every activity record is on it, so one timeline
 * (allocations and frees may be stamped with the time-stamp counter and
 * mapped to it by the writer: stamp.c). */
#include <time.h>

#include "shim.h"

uint64_t gt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
