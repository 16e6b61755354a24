/* The writer's records in time order. Threads stamp a call, then reserve its
 * place in the queue: a thread preempted between the two lands behind
 * others' later calls, and the writer, counting live bytes in queue order,
 * reported another peak than the analyzer, which orders by time (a helper's
 * probe: `gputrace run` said 9.25 MiB of pool, summary 11.25, of one trace).
 * Each drained batch is written in time order (stable: one thread's records
 * keep theirs); a batch nearly always is already, checked in one pass. */
#ifndef GPUTRACE_TIME_ORDER_H
#define GPUTRACE_TIME_ORDER_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* The order of n items (n <= 65536) by the uint64_t at key_offset in each
 * (stride bytes apart), stable, in order[]; tmp[] is scratch of n. Returns
 * 0 when the items were in order already (order[] is then 0..n-1). */
static inline int gt_time_order(const void *base, size_t stride, size_t key_offset, int n, uint16_t *order,
                                uint16_t *tmp)
{
#define GT_KEY(i) (*(const uint64_t *)((const char *)base + (size_t)(i) * stride + key_offset))
    int sorted = 1;
    for (int i = 0; i < n; i++) {
        order[i] = (uint16_t)i;
        if (i && GT_KEY(i) < GT_KEY(i - 1))
            sorted = 0;
    }
    if (sorted)
        return 0;
    uint16_t *src = order, *dst = tmp;
    for (int width = 1; width < n; width *= 2) {   /* bottom-up merge: stable */
        for (int lo = 0; lo < n; lo += 2 * width) {
            int mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            int i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                dst[k++] = GT_KEY(src[j]) < GT_KEY(src[i]) ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        uint16_t *s = src;
        src = dst;
        dst = s;
    }
    if (src != order)
        memcpy(order, src, (size_t)n * sizeof *order);
    return 1;
#undef GT_KEY
}

#endif
