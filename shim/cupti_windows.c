/* The schedule of sampled CUPTI activity (cupti_windows.h): every kernel,
 * copy and memset for the first period, then 1 s at a random moment of
 * every period. No CUPTI call, no lock: the writer thread's alone. */
#include <stdio.h>

#include "cupti_windows.h"

#define S 1000000000ull

/* The first period lasts GPUTRACE_KERNELS_FULL_S seconds of GPU work, not
 * of wall time: a program often spends seconds between its first CUDA call
 * and its first step (imports, data, compilation on the CPU), and a window
 * by the clock would close before the training loop's kernels begin (it
 * did on the GPU: train_mlp.py's optimizer import took 3.9 s). Idle costs
 * nothing with CUPTI attached: it works on launches. Each pause between the
 * starts of recorded kernels, copies and memsets counts at most 1 s. */
#define PAUSE_COUNTS_NS S

/* It also lasts until no kernel of a new name has begun for SETTLE_NS of
 * busy work (the records' own time, each pause between them counted
 * BUSY_GAP_NS at most: a kernel of seconds is busy all through), or for the
 * whole period, if shorter; and FULL_AT_MOST times the period at most.
 * Before its first step a program may compile for seconds, launching now
 * and then the kernels of its start-up and a compiler's autotuning (XLA's;
 * Triton's under torch.compile's max-autotune; cuDNN's benchmark mode):
 * on an H200 a JAX job under preallocation spent its whole first window so
 * (331 kernels in 6.7 ms of the GPU's time; the work was its pauses, 1 s
 * each) and its 20 steps, 4 s of compiling later, were not recorded: no
 * iterations. A loop's kernels are new in its first step, or ran among
 * the autotuning's: once the names settle, SETTLE_NS of busy work follows,
 * which pauses for compiling do not make up. */
#define SETTLE_NS (3 * S)
#define BUSY_GAP_NS (100 * 1000000ull)
#define FULL_AT_MOST 6

static uint64_t at_most(uint64_t a, uint64_t b)
{
    return a < b ? a : b;
}

static uint64_t settle_ns(const struct gt_windows *w)
{
    return at_most(w->full_ns, SETTLE_NS);
}

/* The window of the period from `from`: 1 s at a random moment of it, and
 * at least 1 s after the last window closed (`closed`; or recording
 * started), so that CUPTI is detached in between. At a fixed moment (each
 * period's last second, as first written) a program whose memory rises and
 * falls every 19.5 s was caught at a phase that crept up window after
 * window, and read as growing (a review's stand-in job). */
static uint64_t window_in_period(struct gt_windows *w, uint64_t from, uint64_t closed)
{
    w->rng ^= w->rng << 13;
    w->rng ^= w->rng >> 7;
    w->rng ^= w->rng << 17;
    uint64_t room = w->every_ns - S;
    w->period_end = from + w->every_ns;
    uint64_t at = from + (room ? w->rng % (room + 1) : 0);
    return at > closed + S ? at : closed + S;
}

void gt_windows_start(struct gt_windows *w, uint32_t full_s, uint32_t every_s, bool work_kinds, uint64_t now,
                      uint64_t seed)
{
    *w = (struct gt_windows){.full_ns = full_s * S, .every_ns = (every_s > 1 ? every_s : 1) * S, .rng = seed | 1};
    w->full = full_s > 0 && work_kinds;
    w->next_toggle = full_s > 0 ? now + w->full_ns : window_in_period(w, now, now);
}

void gt_windows_work_at(struct gt_windows *w, uint64_t start_ns, uint64_t end_ns, bool new_name)
{
    if (!w->full)
        return;
    if (start_ns > w->last_work) {
        if (w->last_work)
            w->work_ns += at_most(start_ns - w->last_work, PAUSE_COUNTS_NS);
        w->last_work = start_ns;
    }
    /* busy: records arrive a buffer at a time, streams interleaved, so only
     * what lies past busy_to adds: the pause before it (capped), its time */
    if (!w->busy_to)
        w->busy_to = start_ns;
    if (start_ns > w->busy_to) {
        w->busy_ns += at_most(start_ns - w->busy_to, BUSY_GAP_NS);
        w->busy_to = start_ns;
    }
    if (new_name)
        w->busy_at_new_name = w->busy_ns;
    if (end_ns > w->busy_to) {
        w->busy_ns += end_ns - w->busy_to;
        w->busy_to = end_ns;
    }
}

/* The first period is over: its work so far, with the time since the
 * latest record counted as work too (up to a pause; busy, likewise),
 * since records reach the writer only with each flush; and the kernels'
 * names settled. */
static bool first_period_over(const struct gt_windows *w, uint64_t now)
{
    if (!w->last_work)
        return false; /* no GPU work yet */
    uint64_t work = w->work_ns + (now > w->last_work ? at_most(now - w->last_work, PAUSE_COUNTS_NS) : 0);
    if (work < w->full_ns)
        return false;
    uint64_t busy = w->busy_ns + (now > w->busy_to ? at_most(now - w->busy_to, BUSY_GAP_NS) : 0);
    return work >= FULL_AT_MOST * w->full_ns || busy - w->busy_at_new_name >= settle_ns(w);
}

bool gt_windows_due(const struct gt_windows *w, bool recording, uint64_t now)
{
    return recording && w->full ? first_period_over(w, now) : now >= w->next_toggle;
}

void gt_windows_opened(struct gt_windows *w, uint64_t now)
{
    w->next_toggle = now + S;
}

void gt_windows_closed(struct gt_windows *w, uint64_t now)
{
    /* the next period begins now after the first, else where this one ends */
    w->next_toggle = window_in_period(w, w->full || !w->period_end ? now : w->period_end, now);
    w->full = false;
}

void gt_windows_first_period_words(const struct gt_windows *w, char *out, unsigned size)
{
    if (!size)
        return;
    *out = 0;
    if (w->full)
        snprintf(out, size, " of GPU work (a pause counts 1 s) and until %.0f s of busy GPU work passed with no kernel "
                 "of a new name (%.0f s at most)", (double)settle_ns(w) / S, (double)(FULL_AT_MOST * w->full_ns) / S);
}
