/* A preallocating framework (JAX's default; TensorFlow's): one allocation of
 * most of a device, made before the loop and still held, inside which the
 * framework carves every array out of the trace's sight. No figure of memory
 * in use inside it can be stood behind: peak fits no line (peak.c), and
 * growth and leaks say they cannot tell (a JAX MLP under preallocation read
 * "growth: stable, 0 B per iteration" once its steps were found from their
 * kernels, whatever it kept inside the pool). */
#include <string.h>

#include "analyzer.h"

/* One allocation of this share of the device (as gputrace sweep tells it). */
#define PREALLOC_SHARE 0.5

/* Allocators that take memory as it is needed, a segment or an array at a
 * time: a large allocation through one is one large tensor (a dataset held
 * on the device), whose fellows the trace sees, not a pool made up front. */
static const char *const grows_as_needed[] = {
    "c10::cuda::",      /* PyTorch, both backends */
    "CUDACachingAllocator",
    "libc10_cuda.so",
    "cupy.cuda.memory", /* CuPy's memory pool */
};

static int through_one_that_grows(struct gt_ctx *c, int32_t site, int *code)
{
    char **f;
    int n;
    *code = gt_trace_frames(&c->t, site, &f, &n);
    for (int k = 0; k < n && !*code; k++)
        for (size_t q = 0; q < sizeof grows_as_needed / sizeof *grows_as_needed; q++)
            if (strstr(f[k], grows_as_needed[q]))
                return 1;
    return 0;
}

int64_t gt_preallocated(struct gt_ctx *c, const struct gt_sel *s, size_t before_ev, size_t live_at_ev, int64_t total,
                        int *device)
{
    const struct gt_trace *t = &c->t;
    for (size_t i = 0; i < before_ev && i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || !gt_sel_has(t, s, e) || e->device < 0)
            continue;
        int64_t of = total > 0 ? total : gt_trace_device_total(t, e->device);
        if (of <= 0 || (double)e->size < PREALLOC_SHARE * (double)of)
            continue;
        uint32_t freed = c->p.partner[i];
        if (freed != GT_NO_EVENT && freed < live_at_ev)
            continue;   /* given back before the loop: no pool of the loop's */
        int code = GT_EXIT_OK;
        if (e->site >= 0 && through_one_that_grows(c, e->site, &code))
            continue;
        if (code)
            continue;   /* frames unreadable: not called a pool on no evidence */
        if (device)
            *device = e->device;
        return e->size;
    }
    return 0;
}
