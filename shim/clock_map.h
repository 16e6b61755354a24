/* Time-stamp-counter readings to CLOCK_MONOTONIC nanoseconds, off the
 * program's threads (clock.c; the writer thread alone adds pairs and maps).
 *
 * Why: the time stamp on the program's thread was clock_gettime through the
 * vDSO, 64 ns a call in the cost note of an H100 host under cudaMallocAsync;
 * the counter, which touches no memory, took 42 there (session 24, side by
 * side). The default where the kernel's own clocksource is the counter
 * (gt_clock_choose below, stamp.c).
 *
 * The map: pairs (tsc, ns) of readings taken together, kept in order, the
 * newest PAIRS of them, and the first one ever taken. A reading between two
 * kept pairs is interpolated between them; one past the newest or before the
 * oldest kept is extended along the line from the first pair to the newest
 * (a long baseline: its slope is the counter's mean rate, so its error is the
 * drift of CLOCK_MONOTONIC against the counter over the reading's age alone).
 * At any one moment the map is one continuous, non-decreasing function of
 * the reading, so the records of one batch keep their order. A reading
 * below the newest pair when first mapped (the writer takes a pair after
 * taking records off the queue, so every record it maps was stamped before)
 * maps the same in every later batch while the pairs around it are kept
 * (half a second or more); one older than every kept pair, or mapped when the
 * writer kept no fresh pair (its reading was preempted), follows the long
 * baseline instead: parts per million of its age apart, far less than any
 * two calls on one address. */
#ifndef GT_CLOCK_MAP_H
#define GT_CLOCK_MAP_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define GT_CLOCK_PAIRS 4096 /* at one pair a writer batch (~8,000 a second at most): half a second or more */

struct gt_clock_pair { uint64_t tsc, ns; };
struct gt_clock_map {
    struct gt_clock_pair first;               /* the first pair ever taken: the long baseline's start */
    struct gt_clock_pair p[GT_CLOCK_PAIRS];   /* a ring: the newest n pairs, oldest at head */
    uint32_t head, n;
};

static inline void gt_clock_map_reset(struct gt_clock_map *m, struct gt_clock_pair first)
{
    m->first = first;
    m->p[0] = first;
    m->head = 0;
    m->n = 1;
}

static inline const struct gt_clock_pair *gt_clock_map_at(const struct gt_clock_map *m, uint32_t i)
{
    return &m->p[(m->head + i) % GT_CLOCK_PAIRS];
}

/* A pair later than every pair kept in both readings; false: not kept. */
static inline bool gt_clock_map_add(struct gt_clock_map *m, struct gt_clock_pair q)
{
    const struct gt_clock_pair *last = gt_clock_map_at(m, m->n - 1);
    if (q.tsc <= last->tsc || q.ns <= last->ns)
        return false;
    if (m->n == GT_CLOCK_PAIRS) {
        m->p[m->head] = q;
        m->head = (m->head + 1) % GT_CLOCK_PAIRS;
    } else {
        m->p[(m->head + m->n) % GT_CLOCK_PAIRS] = q;
        m->n++;
    }
    return true;
}

/* dt counter ticks in nanoseconds at the rate of ns_span / tsc_span, exact in 128 bits */
static inline uint64_t gt_clock_scale(uint64_t dt, uint64_t ns_span, uint64_t tsc_span)
{
    return (uint64_t)((unsigned __int128)dt * ns_span / tsc_span);
}

/* The nanoseconds of counter reading t. With one pair alone (no slope yet)
 * the pair's own nanoseconds: the writer maps nothing before its second
 * pair, so this only serves a caller that asks too early. */
static inline uint64_t gt_clock_map_ns(const struct gt_clock_map *m, uint64_t t)
{
    const struct gt_clock_pair *oldest = gt_clock_map_at(m, 0), *newest = gt_clock_map_at(m, m->n - 1);
    if (m->n < 2 || newest->tsc <= m->first.tsc)
        return newest->ns;
    uint64_t ns_span = newest->ns - m->first.ns, tsc_span = newest->tsc - m->first.tsc;   /* the long baseline */
    if (t >= newest->tsc)
        return newest->ns + gt_clock_scale(t - newest->tsc, ns_span, tsc_span);
    if (t < oldest->tsc) {
        uint64_t back = gt_clock_scale(oldest->tsc - t, ns_span, tsc_span);
        return back >= oldest->ns ? 0 : oldest->ns - back;
    }
    /* the last kept pair at or before t: most readings are in the newest segment */
    uint32_t lo = 0, hi = m->n - 1;   /* pair lo at or before t, pair hi after it */
    if (gt_clock_map_at(m, hi - 1)->tsc <= t) {
        lo = hi - 1;
    } else {
        while (hi - lo > 1) {
            uint32_t mid = lo + (hi - lo) / 2;
            if (gt_clock_map_at(m, mid)->tsc <= t)
                lo = mid;
            else
                hi = mid;
        }
    }
    const struct gt_clock_pair *a = gt_clock_map_at(m, lo), *b = gt_clock_map_at(m, lo + 1);
    return a->ns + gt_clock_scale(t - a->tsc, b->ns - a->ns, b->tsc - a->tsc);
}

/* How the program's threads stamp: GPUTRACE_CLOCK's value ("", "tsc",
 * "monotonic"), the kernel's clocksource and whether the processor's counter
 * is invariant. Unset takes the counter only where the kernel itself chose it
 * as its clocksource (it found the cores' counters in agreement and watches
 * them: it would switch away if they drifted); "tsc" takes it on any
 * invariant counter; a counter that is not invariant is never taken. */
enum gt_clock_choice {
    GT_CLOCK_MONOTONIC,            /* clock_gettime: asked for, or unset and the kernel's clocksource is not tsc */
    GT_CLOCK_TSC,                  /* the counter: unset and the kernel's clocksource is tsc, or asked for */
    GT_CLOCK_TSC_NOT_INVARIANT,    /* asked for, but this counter's rate is not constant: clock_gettime instead */
};

static inline enum gt_clock_choice gt_clock_choose(const char *mode, const char *clocksource, bool invariant)
{
    bool asked = strcmp(mode, "tsc") == 0;
    if (strcmp(mode, "monotonic") == 0)
        return GT_CLOCK_MONOTONIC;
    if (!invariant)
        return asked ? GT_CLOCK_TSC_NOT_INVARIANT : GT_CLOCK_MONOTONIC;
    if (asked)
        return GT_CLOCK_TSC;
    return strcmp(clocksource, "tsc") == 0 ? GT_CLOCK_TSC : GT_CLOCK_MONOTONIC;
}

#endif
