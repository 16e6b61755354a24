/* growth_follow.c - what `gputrace growth` reports where what reports take
 * by default does not grow: one thread's own loop (the loop ran on several
 * threads), one device alone, another level of memory; each only where it
 * grew by at least a page. The fits themselves are growth.c's. */
#include <stdio.h>
#include <string.h>

#include "analyzer.h"

/* Followed only where it grew by at least a page over the fitted
 * iterations: another level, one device, one thread's loop is reported in
 * place of what reports take by default, and a few bytes there are no
 * accumulation worth it (a Hugging Face Trainer on two H200s read "growing,
 * 0.125 B per iteration": pinned flags of 1 and 4 bytes kept in its loop). */
#define FOLLOW_MIN_BYTES 4096
static int worth_following(const struct gt_growth *d)
{
    return !strcmp(d->verdict, "growing") && d->used >= 2 && d->slope * (double)(d->used - 1) >= FOLLOW_MIN_BYTES;
}

/* d, which grew where g did not (or more narrowly), becomes the report; the
 * default level's reading g carried stays said unless d has its own. */
static void adopt(struct gt_growth *g, struct gt_growth *d)
{
    if (!d->default_verdict) {
        d->default_verdict = g->default_verdict;
        d->default_slope = g->default_slope;
    }
    gt_growth_free(g);
    *g = *d;
}

/* The iterations' kind of range ran on several threads (a thread per device
 * or worker, each its own loop): the live memory at one loop's iteration
 * ends is the whole process's, which the other threads' steps scatter
 * (loops at once: unknown) or leave flat (a worker's leak made after the
 * chosen loop had ended read "stable" beside leaks' 12 MiB; the GPU check
 * of thread_loops.py). Then each loop, its own first, is fitted on the
 * allocations made on its own thread; the first that grows is reported,
 * and says so. Only growth is taken from it: what a thread's step allocates
 * on another thread (PyTorch runs backward on autograd's) is not in its
 * series, so a flat one proves nothing and the process-wide verdict stands. */
static int thread_growth(struct gt_ctx *c, struct gt_growth *g)
{
    const struct gt_iterations *its;
    const unsigned char *loop_of;
    int code = gt_ctx_iterations(c, &its);
    if (code || !its->nthreads || (code = gt_ctx_event_loops(c, &loop_of)) || !loop_of)
        return code;
    for (size_t k = 0; k <= its->nthreads; k++) {
        struct gt_iterations own = *its;
        own.later = NULL;
        own.nlater = 0;
        if (k) {
            own.it = its->threads[k - 1].it;
            own.n = its->threads[k - 1].n;
            own.tid = its->threads[k - 1].tid;
        }
        struct gt_sel keep = c->sel;
        c->sel.loop_of = loop_of;
        c->sel.loop = k ? (unsigned char)k : GT_OWN_LOOP;
        struct gt_growth d;
        code = gt_growth_over(c, &own, &d);
        c->sel = keep;
        if (code || !worth_following(&d)) {
            gt_growth_free(&d);
            if (code)
                return code;
            continue;
        }
        d.thread_tid = own.tid;
        d.process_verdict = g->verdict;
        d.process_slope = g->slope;
        adopt(g, &d);
        return GT_EXIT_OK;
    }
    return GT_EXIT_OK;
}

/* Memory on several devices, none asked for: one device's growth is read
 * against all of them together, whose sum another device's scatter hides
 * (a model split over two GPUs, device 1 keeping 256 KiB a step beside
 * device 0's prefetched batch of varying size: unknown) or cancels (device 1
 * growing 1 MiB a step while device 0 freed 1 MiB of a buffer: stable, and
 * leaks said 60 MiB; a helper's probe). A device runs out of memory on its
 * own, as peak says: when the devices together do not grow, each device is
 * fitted alone and the first that grows is reported, saying so. */
static int device_growth(struct gt_ctx *c, struct gt_growth *g)
{
    int devs[64];
    if (c->sel.device != GT_ANY_DEVICE)
        return GT_EXIT_OK;
    size_t ndev = gt_ctx_devices(c, &c->sel, devs, 64);
    for (size_t k = 0; ndev > 1 && k < ndev; k++) {
        struct gt_sel keep = c->sel;
        c->sel.device = devs[k];
        struct gt_growth d;
        int code = gt_growth_on(c, &d);
        c->sel = keep;
        if (code || !worth_following(&d)) {
            gt_growth_free(&d);
            if (code)
                return code;
            continue;
        }
        d.by_device = 1;
        d.device = devs[k];
        d.devices = ndev;
        d.devices_verdict = g->verdict;
        d.devices_slope = g->slope;
        adopt(g, &d);
        return GT_EXIT_OK;
    }
    return GT_EXIT_OK;
}

/* A thread's own loop where the loop ran on several threads, whether or not
 * the whole grew: the whole process's live bytes at one thread's iteration
 * ends are the other threads' steps too (threads at once, one of them
 * leaking 1 MiB a step: the whole read growing at 1.5 MiB, its top site a
 * backward pass of another thread; on two H200s); then, where the whole
 * still does not grow, a device alone. */
static int narrower(struct gt_ctx *c, struct gt_growth *g)
{
    int code = thread_growth(c, g);
    if (!code && strcmp(g->verdict, "growing"))
        code = device_growth(c, g);
    return code;
}

/* A stream-ordered pool is the level reports choose when the trace has one
 * (context.c): its bytes in use are what a per-tensor allocator holds. Device
 * memory outside it (cudaMalloc: a library's, an extension's) is then out of
 * sight, and a leak there read "stable" (a helper's probe: 80 MiB of
 * cudaMalloc leaked beside a 2 MiB pool allocation, and --fail-above passed).
 * So are managed memory and pinned host memory beside device memory (a
 * forgotten cudaHostUnregister or cudaFreeHost every step read "stable").
 * When the default level does not grow and another level does (device,
 * then managed, then host), the report follows the first that grows and
 * says what the default level read. */
int gt_growth_compute(struct gt_ctx *c, struct gt_growth *g)
{
    int code = gt_growth_on(c, g);
    if (!code)
        code = narrower(c, g);
    if (code || c->o->memory_set || !strcmp(g->verdict, "growing"))
        return code;
    static const int others[] = {GT_MEM_DEVICE, GT_MEM_MANAGED, GT_MEM_HOST};
    for (size_t k = 0; k < sizeof others / sizeof others[0]; k++) {
        if (c->sel.mem_mask == GT_MASK(others[k]) || !gt_ctx_has_memory(c, others[k], c->sel.device))
            continue;
        struct gt_sel keep = c->sel;
        char keep_name[sizeof c->sel_name];
        memcpy(keep_name, c->sel_name, sizeof keep_name);
        c->sel.mem_mask = GT_MASK(others[k]);
        snprintf(c->sel_name, sizeof c->sel_name, "%s", gt_memory_name(others[k]));
        struct gt_growth d;
        code = gt_growth_on(c, &d);
        if (!code)
            code = narrower(c, &d);
        c->sel = keep;
        memcpy(c->sel_name, keep_name, sizeof keep_name);
        if (code) {
            gt_growth_free(&d);
            return code;
        }
        if (!worth_following(&d)) {
            gt_growth_free(&d);
            continue;
        }
        d.default_verdict = g->verdict;
        d.default_slope = g->slope;
        adopt(g, &d);
        return GT_EXIT_OK;
    }
    return GT_EXIT_OK;
}
