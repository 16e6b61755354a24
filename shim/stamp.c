/* How allocations and frees are stamped on the program's threads: the
 * time-stamp counter (lfence; rdtsc: after the real call's instructions, no
 * memory touched), which the writer maps to nanoseconds (clock_map.h) before
 * anything reads the record, or clock_gettime(CLOCK_MONOTONIC). The counter
 * is the default where the kernel's clocksource is tsc (the kernel found the
 * cores' counters in agreement and watches them); GPUTRACE_CLOCK=tsc takes it
 * on any invariant counter, GPUTRACE_CLOCK=monotonic never. On an H100 host
 * the stamp took 42 ns a call against clock_gettime's 64 (cost note, median
 * of 14 runs each, session 24), and the GPU capture check passed under it.
 * Chosen once, when the trace starts and before anything is stamped, and said
 * in the trace's notes. */
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"
#include "clock_map.h"
#include "shim.h"

bool gt_stamp_ticks;

#if defined(__x86_64__)
static struct gt_clock_map map; /* the writer's, once started (64 KiB in .bss: untouched unless used) */

/* A pair read together: the counter either side of the clock, its middle
 * kept; read again if something came between (the thread was preempted).
 * The clock is read once before, unkept: a cold read spends most of its time
 * before it reads the counter (its data page missed), which put the middle
 * ~110 ns after the clock's own reading on a kvm-clock host; warm, the two
 * counter readings are tens of ns apart. */
static struct gt_clock_pair take_pair(uint64_t *gap)
{
    struct gt_clock_pair best = {0, 0};
    uint64_t best_gap = UINT64_MAX;
    for (int i = 0; i < 3; i++) {
        (void)gt_now_ns();
        __builtin_ia32_lfence();
        uint64_t a = __builtin_ia32_rdtsc();
        uint64_t ns = gt_now_ns();
        __builtin_ia32_lfence();
        uint64_t b = __builtin_ia32_rdtsc();
        if (b - a < best_gap) {
            best_gap = b - a;
            best = (struct gt_clock_pair){a + (b - a) / 2, ns};
        }
        if (best_gap < 200)
            break;
    }
    *gap = best_gap;
    return best;
}

/* The kernel's clocksource ("tsc", "kvm-clock", ...) into name; read with
 * plain read(2) once, at the trace's start (the program is inside its first
 * CUDA call). */
static void kernel_clocksource(char *name, size_t size)
{
    snprintf(name, size, "unknown");
    int fd = open("/sys/devices/system/clocksource/clocksource0/current_clocksource", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return;
    char buf[32] = {0};
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n > 0 && buf[n - 1] == '\n')
        buf[n - 1] = 0;
    if (n > 1)
        snprintf(name, size, "%s", buf);
}

/* CPUID 0x80000007 EDX bit 8: the counter runs at a constant rate in every
 * state (read with lfence; rdtsc, as the kernel's ordered read: rdtscp may
 * be hidden by a hypervisor that keeps the counter invariant) */
static bool invariant_tsc(void)
{
    unsigned a, b, c, d;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000000u), "c"(0));
    if (a < 0x80000007u)
        return false;
    __asm__ volatile("cpuid" : "=a"(a), "=b"(b), "=c"(c), "=d"(d) : "a"(0x80000007u), "c"(0));
    return (d >> 8) & 1;
}
#endif

void gt_clock_start(void)
{
    gt_stamp_ticks = false;
#if defined(__x86_64__)
    char source[32];
    kernel_clocksource(source, sizeof source);
    const char *mode = gt_config.clock_mode;
    bool invariant = invariant_tsc();
    switch (gt_clock_choose(mode, source, invariant)) {
    case GT_CLOCK_TSC: {
        uint64_t gap;
        gt_clock_map_reset(&map, take_pair(&gap));
        gt_stamp_ticks = true;
        if (mode[0])
            gt_note("clock", false, "the time-stamp counter on the program's threads, mapped to CLOCK_MONOTONIC "
                                    "by the writer (GPUTRACE_CLOCK=tsc; the kernel's clocksource is %s%s)", source,
                    strcmp(source, "tsc") == 0 ? "" : ", so the kernel does not vouch for the cores' counters "
                                                      "agreeing");
        else
            gt_note("clock", false, "the time-stamp counter on the program's threads, mapped to CLOCK_MONOTONIC "
                                    "by the writer (the default where the kernel's clocksource is tsc; "
                                    "GPUTRACE_CLOCK=monotonic for clock_gettime)");
        return;
    }
    case GT_CLOCK_TSC_NOT_INVARIANT:
        gt_note("clock", true, "GPUTRACE_CLOCK=tsc: this processor's time-stamp counter is not invariant; "
                               "clock_gettime(CLOCK_MONOTONIC) on the program's threads instead");
        return;
    case GT_CLOCK_MONOTONIC:
        if (!mode[0]) {
            gt_note("clock", false, "clock_gettime(CLOCK_MONOTONIC) on the program's threads (the kernel's "
                                    "clocksource is %s, not tsc%s)", source,
                    invariant ? "; GPUTRACE_CLOCK=tsc takes the counter anyway" : "");
            return;
        }
        break;
    }
#endif
    gt_note("clock", false, "clock_gettime(CLOCK_MONOTONIC) on the program's threads");
}

void gt_clock_to_ns(struct gt_rec *recs, int n)
{
#if defined(__x86_64__)
    if (!gt_stamp_ticks || n <= 0)
        return;
    uint64_t gap;   /* after the records were taken: each was stamped before it */
    struct gt_clock_pair q = take_pair(&gap);
    if (gap < 20000)   /* not a pair the thread was preempted inside of (its middle could be microseconds off) */
        gt_clock_map_add(&map, q);
    for (int i = 0; i < n; i++)
        if (gt_rec_is_call(recs[i].kind) || recs[i].kind == GT_REC_FREE_RESULT)
            recs[i].t_ns = gt_clock_map_ns(&map, recs[i].t_ns);
#else
    (void)recs;
    (void)n;
#endif
}
