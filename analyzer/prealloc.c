/* A preallocating framework (JAX's default; TensorFlow's): one allocation of
 * a large share of a device, made before the loop and still held, inside which
 * the framework carves every array out of the trace's sight; or the regions of
 * a pooling allocator that grows (XLA's BFC under
 * XLA_PYTHON_CLIENT_PREALLOCATE=false, TensorFlow's allow_growth, RAPIDS'
 * pool), whose arrays lie inside them the same way. No figure of memory in
 * use inside it can be stood behind: peak fits no line (peak.c), sweep stops
 * at its first run, and growth and leaks say they cannot tell (a JAX MLP
 * under preallocation read "growth: stable, 0 B per iteration" once its
 * steps were found from their kernels, whatever it kept inside the pool).
 * Only on evidence that a framework's pool made it: a plain CUDA program's
 * one large buffer, or a PyTorch job's dataset held on the device, is
 * memory the trace sees being used, and its growth is told. */
#include <stdio.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"

/* Through a pooling allocator (its frames): the pool's allocations live at
 * the loop hold at least this share of the device memory the program then
 * held, whatever their size (JAX's default 75% of the device, its
 * XLA_PYTHON_CLIENT_MEM_FRACTION, a growing BFC's regions from 2 MiB, RAPIDS'
 * pool of half the free memory, all hold the program's arrays); a RAPIDS
 * pool made for preprocessing beside a PyTorch job's own segments does not. */
#define PREALLOC_SHARE_OF_HELD 0.5
/* Without stacks only a driver call tells (a sweep's runs): one allocation
 * of this share of the device; and the sweep's own test (its runs' peaks do
 * not follow the batch size): one allocation of it with frames too. */
#define PREALLOC_SHARE_DEVICE 0.5

/* Frames of the allocators that preallocate: XLA's and TensorFlow's BFC
 * allocator, RAPIDS' pool and arena resources. Not XLA or StreamExecutor
 * as such: under XLA's platform allocator each array is its own
 * allocation through them, which the trace sees. */
static const char *const pool_frames[] = {
    "BFCAllocator", /* tsl::BFCAllocator::Extend (xla_cuda_plugin.so) on an H200, JAX 0.11.2 */
    "pool_memory_resource", "arena_memory_resource",
};

enum evidence { NONE, DRIVER, POOL };

/* Made by a preallocating framework? With frames, when they pass through a
 * pooling allocator; without (a sweep's runs, GPUTRACE_STACK_DEPTH=0), when
 * the program called the driver for it (cuMemAlloc, cuMemCreate), as XLA and
 * TensorFlow do, where PyTorch, CuPy and most CUDA programs call the runtime
 * (cudaMalloc). by_site: what each call site's frames said (0: not read yet;
 * every allocation before the loop is asked, a trace's millions). */
static enum evidence made_by(struct gt_ctx *c, const struct gt_event *e, signed char *by_site)
{
    enum { UNREAD, NO_FRAMES, POOL_FRAMES, OTHER_FRAMES };
    int in_range = e->site >= 0 && (size_t)e->site < c->t.nsites;
    int said = in_range ? by_site[e->site] : UNREAD;
    if (said == UNREAD) {
        char **f = NULL;
        int n = 0;
        if (e->site >= 0 && gt_trace_frames(&c->t, e->site, &f, &n) != GT_EXIT_OK)
            said = OTHER_FRAMES;   /* frames unreadable: not called a pool on no evidence */
        else
            said = n == 0 ? NO_FRAMES : OTHER_FRAMES;
        for (int k = 0; k < n && said != POOL_FRAMES; k++)
            for (size_t q = 0; q < sizeof pool_frames / sizeof *pool_frames; q++)
                if (strstr(f[k], pool_frames[q]))
                    said = POOL_FRAMES;
        if (in_range)
            by_site[e->site] = (signed char)said;
    }
    if (said == POOL_FRAMES)
        return POOL;
    return said == NO_FRAMES && !strncmp(c->t.api[e->api].name, "cuMem", 5) ? DRIVER : NONE;
}

#define MAX_DEV 64

int64_t gt_preallocated(struct gt_ctx *c, const struct gt_sel *s, size_t before_ev, size_t live_at_ev, int one_only,
                        struct gt_prealloc *out)
{
    const struct gt_trace *t = &c->t;
    /* device and pool memory whatever the command looks at: a command on a
     * trace with stream-ordered allocations selects the pool alone, and a
     * framework's pool is device memory */
    const struct gt_sel sel = {.mem_mask = s->mem_mask | GT_MASK(GT_MEM_DEVICE) | GT_MASK(GT_MEM_POOL), .device = s->device};
    int64_t held[MAX_DEV] = {0}, pooled[MAX_DEV] = {0}, largest[MAX_DEV] = {0};
    int count[MAX_DEV] = {0};
    enum evidence largest_by[MAX_DEV] = {NONE};
    signed char *by_site = gt_xcalloc(c->t.nsites + 1, 1);
    for (size_t i = 0; i < before_ev && i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || e->size <= 0 || e->device < 0 || e->device >= MAX_DEV ||
            !gt_sel_has(t, &sel, e) || (a->memory != GT_MEM_DEVICE && a->memory != GT_MEM_POOL))
            continue;
        uint32_t freed = c->p.partner[i];
        if (freed != GT_NO_EVENT && freed < live_at_ev)
            continue;   /* given back before the loop: none of the loop's */
        held[e->device] += e->size;
        /* (a stream-ordered pool's allocation is one tensor: PyTorch's async backend) */
        enum evidence by = a->memory == GT_MEM_DEVICE ? made_by(c, e, by_site) : NONE;
        if (by == POOL) {
            pooled[e->device] += e->size;
            count[e->device]++;
        }
        if (by != NONE && e->size > largest[e->device]) {
            largest[e->device] = e->size;
            largest_by[e->device] = by;
        }
    }
    free(by_site);
    struct gt_prealloc best = {0};
    for (int d = 0; d < MAX_DEV; d++) {
        int64_t of = c->o->device_bytes > 0 ? c->o->device_bytes : gt_trace_device_total(t, d);
        struct gt_prealloc p = {0};
        if (!one_only && pooled[d] > 0 && (double)pooled[d] >= PREALLOC_SHARE_OF_HELD * (double)held[d])
            p = (struct gt_prealloc){pooled[d], d, 0, count[d]};
        else if (largest_by[d] != NONE && of > 0 && (double)largest[d] >= PREALLOC_SHARE_DEVICE * (double)of)
            p = (struct gt_prealloc){largest[d], d, 0, 1};
        if (p.bytes > best.bytes) {
            best = p;
            /* of the device's total; -1 where the trace has none */
            best.percent = of > 0 ? (int)(100.0 * (double)p.bytes / (double)of + 0.5) : -1;
        }
    }
    if (out)
        *out = best;
    return best.bytes;
}

/* "78% of device 0" ("over 100%" past --device-bytes), "device 0" where its total is unknown */
static void share_of_device(const struct gt_prealloc *p, char *buf, size_t len)
{
    if (p->percent < 0)
        snprintf(buf, len, "device %d", p->device);
    else
        snprintf(buf, len, "%s%d%% of device %d", p->percent > 100 ? "over " : "", p->percent > 100 ? 100 : p->percent,
                 p->device);
}

/* "one allocation of 100.00 GiB, 78% of device 0, was made", "13 allocations
 * of 15.00 GiB in all, 11% of device 0, were made" */
const char *gt_prealloc_made(const struct gt_prealloc *p, char *buf, size_t len)
{
    char b[GT_FMT_LEN], of[40], share[48] = "";
    if (p->percent >= 0) {
        share_of_device(p, of, sizeof of);
        snprintf(share, sizeof share, ", %s,", of);
    }
    if (p->count == 1)
        snprintf(buf, len, "one allocation of %s%s was made", gt_fmt_bytes(p->bytes, b), share);
    else
        snprintf(buf, len, "%d allocations of %s in all%s were made", p->count, gt_fmt_bytes(p->bytes, b), share);
    return buf;
}

/* "its one allocation of 78% of device 0", "its 13 allocations, 11% of device 0" */
const char *gt_prealloc_short(const struct gt_prealloc *p, char *buf, size_t len)
{
    char share[48];
    share_of_device(p, share, sizeof share);
    if (p->count == 1)
        snprintf(buf, len, "its one allocation %s %s", p->percent < 0 ? "on" : "of", share);
    else
        snprintf(buf, len, "its %d allocations, %s%s", p->count, p->percent < 0 ? "on " : "", share);
    return buf;
}
