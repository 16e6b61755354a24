/* What every hook calls: the re-entry guard (state.c), the lazy start
 * (one call into lifecycle.c), and turning one call into one event on the
 * queue. Allocations are recorded after the real call
 * returns, frees before the real free runs (slot reserved first, published
 * after), so the timeline never shows one address live twice. */
#include "shim.h"

bool gt_hook_enter(void)
{
    if (gt_in_shim)
        return false;
    int st = atomic_load_explicit(&gt_state, memory_order_acquire);
    if (GT_UNLIKELY(st != GT_ACTIVE)) {
        if ((st != GT_UNINIT && st != GT_STARTING) || gt_config.disabled)
            return false; /* stopped or failed: pass through */
        gt_in_shim = 1;
        gt_start_lazily(GT_START_TRACE);
        gt_in_shim = 0;
        if (atomic_load_explicit(&gt_state, memory_order_acquire) != GT_ACTIVE)
            return false;
    }
    gt_in_shim = 1;
    return true;
}

void gt_hook_leave(void)
{
    gt_in_shim = 0;
}

/* The first successful call means the program has initialised CUDA
 * (lifecycle.c then starts CUPTI, once). */
static inline void note_cuda_ready(int result)
{
    if (GT_UNLIKELY(result == 0 && !atomic_load_explicit(&gt_cuda_ready_claimed, memory_order_relaxed)))
        gt_start_lazily(GT_START_CUDA);
}

static void fill(struct gt_event *ev, int api, uint64_t ptr, int device, uint64_t stream, uint32_t flags)
{
    ev->ptr = ptr;
    ev->stream = stream;
    ev->api = (uint16_t)api;
    ev->device = (int16_t)device;
    ev->flags = flags;
    ev->tid = gt_tid();
    ev->size = 0;
}

void gt_record_alloc(int api, int result, uint64_t ptr, uint64_t size, int device,
                     uint64_t stream, uint32_t flags)
{
    struct gt_event ev;
    fill(&ev, api, result == 0 ? ptr : 0, device, stream, flags | GT_EV_HAS_SIZE);
    ev.size = size;
    ev.result = result;
    ev.stack_hash = gt_stack_capture();
    ev.t_ns = gt_now_ns();
    struct gt_reservation r;
    if (gt_queue_reserve(&r))
        gt_queue_publish(&r, &ev);
    note_cuda_ready(result);
}

void gt_record_free_begin(struct gt_pending_free *p, int api, uint64_t ptr, uint64_t size, int device,
                          uint64_t stream, uint32_t flags)
{
    fill(&p->ev, api, ptr, device, stream, flags);
    p->ev.size = size; /* kept only with GT_EV_HAS_SIZE (cuMemUnmap's range) */
    p->ev.stack_hash = gt_stack_capture();
    p->reserved = gt_queue_reserve(&p->res);
    p->ev.t_ns = gt_now_ns();
}

void gt_record_free_end(struct gt_pending_free *p, int result)
{
    p->ev.result = result;
    if (p->reserved)
        gt_queue_publish(&p->res, &p->ev);
    note_cuda_ready(result);
}
