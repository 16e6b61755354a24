/* The shim's one clock: CLOCK_MONOTONIC in nanoseconds. Every event and (with
 * CUPTI's timestamp callback) every activity record uses it, so one timeline. */
#include <time.h>

#include "shim.h"

uint64_t gt_now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}
