/* What every thread asks on the hot path, in one small module that depends
 * on nothing: the trace's state (written by lifecycle.c only), this thread's
 * id, the re-entry guard that makes nested calls pass straight through, and
 * whether CUDA is ready (the program's first call succeeded). */
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

_Atomic int gt_state = GT_UNINIT;
_Atomic bool gt_cuda_ready;
_Atomic bool gt_cuda_ready_claimed;
_Atomic int gt_captures_open;   /* graphs.c's; here, beside what every recorded call reads */
GT_TLS int gt_in_shim;
GT_TLS uintptr_t gt_hook_real_frame;
GT_TLS uint64_t gt_free_pending_pos;
_Atomic bool gt_cuda_call_left;
static GT_TLS int32_t cached_tid;

int32_t gt_tid(void)
{
    if (GT_UNLIKELY(!cached_tid))
        cached_tid = (int32_t)syscall(SYS_gettid);
    return cached_tid;
}

/* The writer thread calls CUPTI, the driver and NVML: none of that is the program's. */
void gt_thread_untraced(void)
{
    gt_in_shim = 1;
}

/* Fork child: the forking thread keeps its TLS, but not its pid. */
void gt_state_after_fork_child(void)
{
    atomic_store(&gt_cuda_call_left, false);   /* the child's CUDA, if any, is its own */
    cached_tid = 0;
    gt_in_shim = 0;
    gt_hook_real_frame = 0;
    gt_free_pending_pos = 0;
    atomic_store(&gt_cuda_ready_claimed, false);
    atomic_store(&gt_cuda_ready, false);
}
