/* What every hook calls: the re-entry guard, lazy start, and turning one call
 * into one event on the queue. Allocations are recorded after the real call
 * returns, frees before the real free runs (slot reserved first, published
 * after), so the timeline never shows one address live twice. */
#include <sys/syscall.h>
#include <unistd.h>

#include "activity.h"

/* Set while inside a hook: anything CUDA, libunwind or libc call back into
 * passes straight through (cudaMalloc -> cuMemAlloc is one event, not two). */
static GT_TLS int in_hook;
static GT_TLS int32_t cached_tid;

_Atomic uint64_t gt_drops[GT_DROP_COUNT];
_Atomic bool gt_cuda_ready; /* activity.h: the writer's device queries wait for it */
static _Atomic bool ready_claimed; /* one thread starts CUPTI (note_cuda_ready) */
const char *const gt_drop_names[GT_DROP_COUNT] = {"queue_full", "unfinished_at_exit", "stack_lost"};
const char *const gt_drop_meanings[GT_DROP_COUNT] = {
    "event dropped: the queue to the writer was full and the writer made no progress for GPUTRACE_QUEUE_WAIT_MS",
    "event dropped: a thread was still inside a traced free when the process ended",
    "event recorded without its stack: no memory for the stack record",
};

int32_t gt_tid(void)
{
    if (GT_UNLIKELY(!cached_tid))
        cached_tid = (int32_t)syscall(SYS_gettid);
    return cached_tid;
}

/* Called by the fork child handler: the forking thread keeps its TLS. */
void gt_record_after_fork_child(void)
{
    cached_tid = 0;
    in_hook = 0;
    atomic_store(&ready_claimed, false);
    atomic_store(&gt_cuda_ready, false);
}

bool gt_hook_enter(void)
{
    if (in_hook)
        return false;
    int st = atomic_load_explicit(&gt_state, memory_order_acquire);
    if (GT_UNLIKELY(st != GT_ACTIVE)) {
        if ((st != GT_UNINIT && st != GT_STARTING) || gt_config.disabled)
            return false; /* stopped or failed: pass through */
        in_hook = 1;
        gt_ensure_started();
        in_hook = 0;
        if (atomic_load_explicit(&gt_state, memory_order_acquire) != GT_ACTIVE)
            return false;
    }
    in_hook = 1;
    return true;
}

void gt_hook_leave(void)
{
    in_hook = 0;
}

/* The writer thread calls CUPTI, the driver and NVML: none of that is the program's. */
void gt_thread_untraced(void)
{
    in_hook = 1;
}

/* The first successful call means the program has initialised CUDA: from
 * now on the shim may start CUPTI and query devices without creating anything
 * itself. One thread claims the start and runs it here, after the real call
 * returned and inside the hook (CUPTI's own CUDA calls pass through). The
 * writer reads the devices once gt_cuda_ready is set. */
__attribute__((noinline, cold)) static void cuda_became_ready(void)
{
    bool no = false;
    if (!atomic_compare_exchange_strong(&ready_claimed, &no, true))
        return;
    gt_cupti_start();
    atomic_store_explicit(&gt_cuda_ready, true, memory_order_release);
}

static inline void note_cuda_ready(int result)
{
    if (GT_UNLIKELY(result == 0 && !atomic_load_explicit(&ready_claimed, memory_order_relaxed)))
        cuda_became_ready();
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
