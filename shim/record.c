/* What every hook calls: the re-entry guard (state.c), the lazy start
 * (one call into lifecycle.c), and turning one call into one event on the
 * queue. Allocations are recorded after the real call
 * returns, frees before the real free runs (slot reserved first, its result
 * after), so the timeline never shows one address live twice. A free's
 * record is held in its slot meanwhile: one that does not return soon is
 * taken by the writer as a free that worked (queue.c), and the rare one of
 * those that then fails is corrected (GT_REC_FREE_RESULT). */
#include <string.h>

#include "shim.h"

/* The guard is set, and this call's hook lies at or above the frame of the
 * hook whose real call set it: that hook is gone, left by a longjmp (a
 * watchdog's SIGALRM handler that siglongjmps out of a CUDA call that hung).
 * The guard stayed set, and every later call of the thread passed through
 * uncounted (a helper's probe: 2 events of 2,002 calls, 0 dropped). Unless
 * this call runs on an alternate signal stack (a handler's, interrupting the
 * hook: nested), the lost call is counted, a free's reserved slot given up,
 * and the thread traced again. Left alone: a longjmp out of the shim's own
 * code (its locks may be held; the guard stays), and a later call deeper
 * than the hook left (it reads as nested until one comes at or above it). */
/* The hook this thread was in is gone: its call counted, a free's reserved
 * slot given up (the writer waits on it no more), the guard cleared. */
static void withdraw_taken_free(uint64_t pos);

static void hook_left(void)
{
    gt_drop(GT_DROP_LEFT_BY_JUMP);
    atomic_store(&gt_cuda_call_left, true);   /* cupti.c calls CUPTI no more */
    if (gt_free_pending_pos) {
        if (gt_queue_abandon(gt_free_pending_pos - 1))
            withdraw_taken_free(gt_free_pending_pos - 1);
        gt_free_pending_pos = 0;
    }
    gt_hook_real_frame = 0;
    gt_in_shim = 0;
}

__attribute__((noinline, cold)) static bool left_by_jump(void)
{
    stack_t ss;
    if (sigaltstack(NULL, &ss) == 0 && (ss.ss_flags & SS_ONSTACK))
        return false;
    hook_left();
    return true;
}

/* A longjmp (hooks_process.c) to target_sp while this thread is inside a
 * hook's real call: a target above the hook's frame, on the same stack
 * (within 1 GiB of it: not a handler's jump on its own alternate stack),
 * leaves the hook; a later call from deeper frames than the hook's was
 * taken for a nested one by the test above (a review: "2 events, 0 dropped"
 * again with the work in a function main calls). */
#define SAME_STACK_SPAN ((uintptr_t)1 << 30)
void gt_hook_left_by_jump(uintptr_t target_sp)
{
    uintptr_t real = gt_hook_real_frame;
    if (GT_LIKELY(!real) || !gt_in_shim || target_sp <= real || target_sp - real > SAME_STACK_SPAN)
        return;
    hook_left();
}

/* No trace yet: the hook's real call runs first and the trace starts at its
 * recording (gt_record_*), so that the shim's memory (queue, stack set,
 * writer thread, SQLite) is taken only after the program's first call got
 * what it asked for: under a tight address-space limit (ulimit -v) the shim
 * then fails and turns itself off, never the program's call. */
bool gt_hook_enter_at(void *frame)
{
    if (gt_in_shim) {
        uintptr_t real = gt_hook_real_frame;
        if (GT_LIKELY(!real || (uintptr_t)frame < real) || !left_by_jump())
            return false;
    }
    int st = atomic_load_explicit(&gt_state, memory_order_acquire);
    if (GT_UNLIKELY(st != GT_ACTIVE) && ((st != GT_UNINIT && st != GT_STARTING) || gt_config.disabled)) {
        if (gt_config.disabled)
            gt_config_warn_once(); /* GPUTRACE_DISABLE=fasle: its warning, by a process that calls CUDA */
        else if (st == GT_STOPPED)   /* another thread's call while the exit drains: counted (a helper's probe) */
            gt_drop(GT_DROP_AFTER_END);
        return false; /* stopped, failed or disabled: pass through */
    }
    gt_in_shim = 1;
    return true;
}

/* Inside a hook: is a trace running, once started if it was not? */
static inline bool tracing(void)
{
    if (GT_LIKELY(gt_trace_active()))
        return true;
    gt_start_lazily(GT_START_TRACE);
    return gt_trace_active();
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

/* stream: a stream (GT_CALL_HAS_STREAM), cuMemMap's handle (GT_CALL_HAS_HANDLE) or 0 */
static void fill(struct gt_rec *rec, int kind, int api, uint64_t ptr, int device, uint64_t stream, uint32_t flags)
{
    rec->kind = (uint8_t)kind;
    rec->flags = (uint8_t)flags;
    rec->tid = gt_tid();
    rec->call.ptr = ptr;
    if (flags & GT_CALL_HAS_HANDLE) /* the hook's one extra argument: a handle or a stream */
        rec->call.handle = stream;
    else
        rec->call.stream = stream;
    rec->call.api = (uint16_t)api;
    rec->call.device = (int16_t)device;
    rec->call.size = 0;
}

void gt_record_alloc(int api, int result, uint64_t ptr, uint64_t size, int device,
                     uint64_t stream, uint32_t flags)
{
    if (!tracing())
        return;
    uint64_t t0 = gt_cost_call();
    /* First, right after the real call: a stamp waits for the instructions
     * before it (lfence; rdtsc, and the vDSO's ordered read), and here few are still
     * in flight; after the stack's cache misses it waited for them (the time
     * stamp's part of the cost note was 50-60 ns a call on the stand-in's bench
     * with cold caches, the counter or clock_gettime alike). */
    uint64_t t = gt_cost_ticks();
    uint64_t stamp = gt_stamp();
    gt_cost_add(GT_COST_CLOCK, t);
    flags |= gt_graph_flags(flags, stream);   /* one load, unless a CUDA graph is being captured */
    if (GT_UNLIKELY(flags & GT_CALL_CAPTURED) && device < GT_DEVICE_CURRENT_DRIVER)
        /* a graph's allocation node: no stream or pointer query on a capturing
         * stream (only cuStreamIsCapturing is documented as meant for one);
         * the node is in no level, and the current device names it */
        device = device == GT_DEVICE_OF_STREAM_RUNTIME || device == GT_DEVICE_OF_POINTER_RUNTIME
                     ? GT_DEVICE_CURRENT_RUNTIME : GT_DEVICE_CURRENT_DRIVER;
    if (device < GT_DEVICE_UNKNOWN) { /* asked of CUDA now */
        t = gt_cost_ticks();
        device = gt_allocation_device(device, result, result == 0 ? ptr : 0, stream);
        gt_cost_add(GT_COST_DEVICE, t);
    }
    if (GT_UNLIKELY(flags & GT_CALL_CAPTURED) && result == 0)
        gt_graph_node_made(device);
    if (GT_UNLIKELY(device == GT_DEVICE_HOST) && result == 0)
        gt_note_host_context();
    struct gt_rec rec;
    fill(&rec, GT_REC_ALLOC, api, result == 0 ? ptr : 0, device, stream, flags | GT_CALL_HAS_SIZE);
    rec.call.size = size;
    rec.call.result = result;
    rec.call.stack_hash = gt_stack_capture();
    rec.t_ns = stamp;
    t = gt_cost_ticks();
    struct gt_reservation r;
    if (gt_queue_reserve(&r, GT_DROP_QUEUE_FULL))
        gt_queue_publish(&r, &rec);
    gt_cost_add(GT_COST_QUEUE, t);
    gt_cost_end(t0);
    note_cuda_ready(result);
}

/* Frees the writer may take before they return: not a reset (its frees
 * follow from its result) nor a call on mapped memory, whose state the
 * writer keeps from each call's result (vmm.c). */
static bool may_hold(int api)
{
    return api != GT_API_cuMemUnmap && api != GT_API_cuMemRelease && api != GT_API_cuMemAddressFree;
}

static void free_begin(struct gt_pending_free *p, int api, uint64_t ptr, uint64_t size, int device,
                       uint64_t stream, uint32_t flags, bool holdable)
{
    p->reserved = false;
    if (!tracing())
        return;
    uint64_t t0 = gt_cost_call();
    uint64_t t = gt_cost_ticks();
    p->rec.t_ns = gt_stamp(); /* before the real free runs, and first (gt_record_alloc says why) */
    gt_cost_add(GT_COST_CLOCK, t);
    flags |= gt_graph_flags(flags, stream);
    fill(&p->rec, GT_REC_FREE, api, ptr, device, stream, flags);   /* leaves t_ns */
    p->rec.call.size = size; /* kept only with GT_CALL_HAS_SIZE (cuMemUnmap's range) */
    p->rec.call.result = 0;  /* as written should the writer take it before the call returns */
    /* Under a stream-ordered pool frees are half the program's calls, and
     * no report reads a free's stack (an allocation's stack names the site
     * that holds memory): by default a free gets none, the whole stack on
     * request or when it fails (gt_record_free_end). Its Python frames alone
     * were a third of the Python frames' time (a transformer under
     * cudaMallocAsync on an H200 host: 147 -> 101 ns a call, median of 13
     * runs); gt_stack_skip still tells backward-pass frames Python ran. */
    if (gt_config.free_stacks) {
        p->rec.call.stack_hash = gt_stack_capture();
    } else {
        p->rec.call.stack_hash = 0;
        gt_stack_skip();
    }
    p->whole_stack = gt_config.free_stacks;
    t = gt_cost_ticks();
    p->reserved = gt_queue_reserve(&p->res, GT_DROP_QUEUE_FULL);
    if (p->reserved)
        gt_free_pending_pos = p->res.pos + 1;
    p->held = p->reserved && holdable && gt_queue_hold(&p->res, &p->rec);
    gt_cost_add(GT_COST_QUEUE, t);
    gt_cost_end(t0);
}

void gt_record_free_begin(struct gt_pending_free *p, int api, uint64_t ptr, uint64_t size, int device,
                          uint64_t stream, uint32_t flags)
{
    free_begin(p, api, ptr, size, device, stream, flags, may_hold(api));
}

void gt_record_reset_begin(struct gt_pending_free *p, int api, int device)
{
    free_begin(p, api, 0, 0, device, 0, 0, false);   /* a reset is never held (may_hold) */
    if (p->reserved && !p->whole_stack) {   /* where the program reset the device: its stack, always */
        p->rec.call.stack_hash = gt_stack_capture();
        p->whole_stack = true;
    }
}

/* What became of a held free the writer took as one that worked (rec:
 * GT_REC_FREE_RESULT), for its row (writer_events.c). Queued while the trace
 * is stopped too: at an exec that fails it goes on, the queue kept. Its loss
 * is no event's (the free's row was written): counted as a record not
 * written (after the trace's end, only a failure the row then misses). */
static void queue_free_result(struct gt_rec *rec, uint64_t pos, bool may_wait)
{
    int st = atomic_load_explicit(&gt_state, memory_order_acquire);
    if (st != GT_ACTIVE && st != GT_STOPPED) {
        if (gt_free_result_changes_row(rec))
            gt_drop(GT_DROP_NOT_WRITTEN);
        return;
    }
    rec->kind = GT_REC_FREE_RESULT;
    rec->call.size = pos;
    rec->t_ns = gt_stamp();
    struct gt_reservation r;
    enum gt_drop_reason full = GT_DROP_NOT_WRITTEN;
    if (may_wait ? gt_queue_reserve(&r, full) : gt_queue_reserve_now(&r, full))
        gt_queue_publish(&r, rec);
}

/* It returned: its result (and a failure's stack). */
static void report_taken_free(const struct gt_pending_free *p, int result, uint64_t stack_hash)
{
    struct gt_rec rec = p->rec;
    rec.flags = 0;
    rec.call.result = result;
    rec.call.stack_hash = stack_hash ? stack_hash : p->rec.call.stack_hash;
    queue_free_result(&rec, p->res.pos, true);
}

/* It was left by a longjmp: its row withdrawn, as the call is counted
 * (left_by_longjmp) and what it freed is unknown. */
static void withdraw_taken_free(uint64_t pos)
{
    struct gt_rec rec;
    memset(&rec, 0, sizeof rec);
    rec.tid = gt_tid();
    rec.flags = GT_CALL_LEFT;
    queue_free_result(&rec, pos, false);   /* (the jump may come from a signal handler: no sleep) */
}

void gt_record_free_end(struct gt_pending_free *p, int result)
{
    if (!p->reserved)
        return;
    gt_free_pending_pos = 0;
    uint64_t stack_hash = 0;
    if (result != 0 && !p->whole_stack)   /* still inside the hook: the same stack */
        stack_hash = gt_stack_capture();
    if (p->held) {
        /* taken: its result, a failure or the success that lets the writer forget it */
        if (gt_queue_finish_held(&p->res, result, stack_hash) == GT_HELD_TAKEN)
            report_taken_free(p, result, stack_hash);
    } else {
        p->rec.call.result = result;
        if (stack_hash)
            p->rec.call.stack_hash = stack_hash;
        gt_queue_publish(&p->res, &p->rec);
    }
    note_cuda_ready(result);
}
