/* A preallocating framework (JAX's default; TensorFlow's): one allocation of
 * a large share of a device, made before the loop and still held, inside which the
 * framework carves every array out of the trace's sight. No figure of memory
 * in use inside it can be stood behind: peak fits no line (peak.c), sweep
 * stops at its first run, and growth and leaks say they cannot tell (a JAX
 * MLP under preallocation read "growth: stable, 0 B per iteration" once its
 * steps were found from their kernels, whatever it kept inside the pool).
 * Only on evidence that a framework's pool made it: a plain CUDA program's
 * one large buffer, or a PyTorch job's dataset held on the device, is
 * memory the trace sees being used, and its growth is told. */
#include <string.h>

#include "analyzer.h"

/* One allocation of this share of the device, where its stack passes through
 * a pooling allocator: JAX's default is 75%, XLA_PYTHON_CLIENT_MEM_FRACTION
 * sets another (0.3 or lower where processes share a GPU), RAPIDS' pool
 * takes half of the free memory, under half the device. A growing BFC
 * allocator's first regions (XLA_PYTHON_CLIENT_PREALLOCATE=false) are of a
 * few MiB: under it until the job is large, and then its arrays lie inside
 * the regions as well. */
#define PREALLOC_SHARE_POOL 0.1
/* Without stacks, only the driver call tells (a sweep's runs): most of it. */
#define PREALLOC_SHARE_DRIVER 0.5

/* Frames of the allocators that preallocate: XLA's and TensorFlow's BFC
 * allocator, RAPIDS' pool and arena resources. Not XLA or StreamExecutor
 * as such: under XLA's platform allocator each array is its own
 * allocation through them, which the trace sees. */
static const char *const pool_frames[] = {
    "BFCAllocator", /* tsl::BFCAllocator::Extend (xla_cuda_plugin.so) on an H200, JAX 0.11.2 */
    "pool_memory_resource", "arena_memory_resource",
};

/* The share of the device that makes an allocation a preallocating
 * framework's pool: with frames, when they pass through one's allocator;
 * without (a sweep's runs, GPUTRACE_STACK_DEPTH=0), when the program called
 * the driver for it (cuMemAlloc, cuMemCreate), as XLA and TensorFlow do,
 * where PyTorch, CuPy and most CUDA programs call the runtime (cudaMalloc).
 * 0: no evidence, none. */
static double pool_share(struct gt_ctx *c, const struct gt_event *e)
{
    char **f = NULL;
    int n = 0;
    if (e->site >= 0 && gt_trace_frames(&c->t, e->site, &f, &n) != GT_EXIT_OK)
        return 0;   /* frames unreadable: not called a pool on no evidence */
    if (n == 0)
        return !strncmp(c->t.api[e->api].name, "cuMem", 5) ? PREALLOC_SHARE_DRIVER : 0;
    for (int k = 0; k < n; k++)
        for (size_t q = 0; q < sizeof pool_frames / sizeof *pool_frames; q++)
            if (strstr(f[k], pool_frames[q]))
                return PREALLOC_SHARE_POOL;
    return 0;
}

int64_t gt_preallocated(struct gt_ctx *c, const struct gt_sel *s, size_t before_ev, size_t live_at_ev, int *device,
                        int *percent)
{
    const struct gt_trace *t = &c->t;
    for (size_t i = 0; i < before_ev && i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        /* (a stream-ordered pool's allocation is one tensor: PyTorch's async backend) */
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || a->memory != GT_MEM_DEVICE || !gt_sel_has(t, s, e) ||
            e->device < 0)
            continue;
        int64_t of = c->o->device_bytes > 0 ? c->o->device_bytes : gt_trace_device_total(t, e->device);
        if (of <= 0 || (double)e->size < PREALLOC_SHARE_POOL * (double)of)
            continue;
        uint32_t freed = c->p.partner[i];
        if (freed != GT_NO_EVENT && freed < live_at_ev)
            continue;   /* given back before the loop: no pool of the loop's */
        double share = pool_share(c, e);
        if (!share || (double)e->size < share * (double)of)
            continue;
        if (device)
            *device = e->device;
        if (percent)
            *percent = (int)(100.0 * (double)e->size / (double)of + 0.5);
        return e->size;
    }
    return 0;
}
