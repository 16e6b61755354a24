/* What the hot path costs the program, measured by the shim itself and said
 * in the trace (a `cost` note at the end): the hooks' own time per call, and
 * how much of it went to native unwinding, the calling thread's Python
 * frames, and the frames of a thread waiting in backward(). A step-time
 * ratio on a GPU machine swings by 10% from run to run; this is the shim's
 * share measured where it is spent, with no noise from the program.
 * The clock is the CPU's time-stamp counter on x86-64 (a few ns a read),
 * converted to ns with the counter's rate over the trace; elsewhere
 * CLOCK_MONOTONIC. Of every GT_COST_SAMPLE calls of a thread, one is timed
 * whole (two readings) and another part by part, and the sums scaled:
 * timing every call cost 15-40 ns a call (the stand-in's bench), a tenth of
 * the shim's own. A call timed part by part makes a dozen readings, each
 * adding its own cost to the call's time: timed in one piece, the whole
 * was 0.35 us a call where the stand-in's bench measured 0.19. Each time
 * taken holds about one reading's cost: measured at the start, taken off.
 * Each thread sums into its own counters and adds them to the shared ones
 * every FLUSH_EVERY calls (and the stopping thread at the end): a thread
 * that ended leaves at most that many calls uncounted. */
#include <stdatomic.h>
#include <stdio.h>

#include "activity.h"
#include "shim.h"

#define FLUSH_EVERY 64

GT_TLS bool gt_cost_timing;
GT_TLS uint64_t gt_cost_sums[GT_COST_N];
static GT_TLS uint32_t unflushed;
static GT_TLS uint32_t pick;   /* xorshift state: which calls are timed */
static _Atomic uint64_t total[GT_COST_N];
static _Atomic uint64_t t0_ticks, t0_ns; /* the rate's first reading */
static _Atomic uint64_t read_cost_q10;   /* one counter reading, in ticks x 1024 */

static void flush_mine(void)
{
    for (int i = 0; i < GT_COST_N; i++)
        if (gt_cost_sums[i]) {
            atomic_fetch_add_explicit(&total[i], gt_cost_sums[i], memory_order_relaxed);
            gt_cost_sums[i] = 0;
        }
    unflushed = 0;
}

uint64_t gt_cost_call(void)
{
    gt_cost_sums[GT_COST_CALLS]++;
    if (++unflushed >= FLUSH_EVERY)
        flush_mine();
    /* which calls are timed: at random, not every n-th, for a program's
     * calls come in patterns (alloc, free, alloc, free: every 8th call was
     * an allocation, and the note said half as much again as the bench) */
    if (!pick)
        pick = (uint32_t)gt_tid() * 2654435761u | 1;
    pick ^= pick << 13;
    pick ^= pick >> 17;
    pick ^= pick << 5;
    uint32_t phase = pick % GT_COST_SAMPLE;
    gt_cost_timing = phase == 1;                    /* its parts */
    return phase == 0 ? gt_cost_read_ticks() : 0;   /* the whole */
}

void gt_cost_start(void)
{
    uint64_t none = 0;
    if (!atomic_compare_exchange_strong(&t0_ticks, &none, gt_cost_read_ticks()))
        return;
    atomic_store(&t0_ns, gt_now_ns());
    /* what one reading adds to a time it is part of: back-to-back readings
     * (the least of a few rounds: a round an interrupt hit is not the cost) */
    uint64_t best = UINT64_MAX;
    for (int round = 0; round < 8; round++) {
        uint64_t a = gt_cost_read_ticks(), b = a;
        for (int i = 0; i < 256; i++)
            b = gt_cost_read_ticks();
        if (b - a < best)
            best = b - a;
    }
    atomic_store(&read_cost_q10, best * 1024 / 256);
}

void gt_cost_after_fork(void)
{
    for (int i = 0; i < GT_COST_N; i++)
        atomic_store(&total[i], 0);
    for (int i = 0; i < GT_COST_N; i++)
        gt_cost_sums[i] = 0;
    unflushed = 0;
    pick = 0;   /* (the child's own tid seeds its picks) */
    atomic_store(&t0_ticks, 0); /* read again when the child's own trace starts */
}

/* At stop, before the writer's last drain; writer_s: the writer thread's CPU seconds so far
 * (lifecycle.c asks writer.c), negative if unknown. */
void gt_cost_note(double writer_s)
{
    flush_mine();
    uint64_t calls = atomic_load(&total[GT_COST_CALLS]);
    uint64_t tk0 = atomic_load(&t0_ticks), ns0 = atomic_load(&t0_ns), tk = gt_cost_read_ticks(), ns = gt_now_ns();
    if (!calls || !tk0 || ns <= ns0 || tk <= tk0)
        return;
    double per_ns = (double)(ns - ns0) / (double)(tk - tk0); /* ns a tick */
    double read_ticks = (double)atomic_load(&read_cost_q10) / 1024.0;
    double ms[GT_COST_PARTS];
    for (int i = 0; i < GT_COST_PARTS; i++) {   /* less one reading's cost per time taken */
        double ticks = (double)atomic_load(&total[i]) - (double)atomic_load(&total[GT_COST_INTERVALS + i]) * read_ticks;
        ms[i] = (ticks > 0 ? ticks : 0) * GT_COST_SAMPLE * per_ns / 1e6;   /* one call in GT_COST_SAMPLE timed */
    }
    char writer[64] = "had used an unknown CPU time";
    if (writer_s >= 0)
        snprintf(writer, sizeof writer, "had used %.2f s of CPU", writer_s);
#define MS(i) ms[i]
    uint64_t bw = atomic_load(&total[GT_COST_BACKWARD_CALLS]);
    gt_note("cost", false, "hot path: %llu calls recorded, %.1f ms in the shim (%.2f us a call): native unwinding "
            "%.1f ms (stacks: %llu from the memo, %llu unwound for it, %llu by libunwind alone), the calling "
            "thread's Python frames %.1f ms, frames of a thread waiting in backward() %.1f ms "
            "(%llu calls, %llu checked against its memory, %llu read afresh), time stamps %.1f ms, the queue "
            "%.1f ms, the stack set %.1f ms, the device asked of CUDA %.1f ms; over %.1f s "
            "(less the timing's own %.1f ns a reading; %llu timed intervals over %llu ticks left out: preempted, "
            "or a first sighting); the writer thread %s",
            (unsigned long long)calls, MS(GT_COST_HOOK), MS(GT_COST_HOOK) * 1e3 / (double)calls, MS(GT_COST_UNWIND),
            (unsigned long long)atomic_load(&total[GT_COST_MEMO_HITS]),
            (unsigned long long)atomic_load(&total[GT_COST_MEMO_FILLS]),
            (unsigned long long)atomic_load(&total[GT_COST_MEMO_UNPLAIN]),
            MS(GT_COST_PYTHON), MS(GT_COST_BACKWARD), (unsigned long long)bw,
            (unsigned long long)atomic_load(&total[GT_COST_BACKWARD_CHECKS]),
            (unsigned long long)atomic_load(&total[GT_COST_BACKWARD_READS]), MS(GT_COST_CLOCK), MS(GT_COST_QUEUE),
            MS(GT_COST_STACK_SET), MS(GT_COST_DEVICE), (double)(ns - ns0) / 1e9, read_ticks * per_ns,
            (unsigned long long)atomic_load(&total[GT_COST_OUTLIERS]), (unsigned long long)GT_COST_OUTLIER_TICKS,
            writer);
#undef MS
}
