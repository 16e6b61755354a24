/* CUDA graph capture, as the allocation timeline sees it. While a stream is
 * being captured (cudaStreamBeginCapture ... cudaStreamEndCapture, or the
 * driver's), two kinds of memory calls happen, and neither is what it looks
 * like outside a capture:
 *  - a stream-ordered allocation or free on a capturing stream is itself
 *    captured: it makes an allocation (free) node of the graph. It takes no
 *    memory when it is made; the graph owns the address, and the memory is
 *    taken from the device's graph memory pool when the graph runs (the CUDA
 *    Programming Guide's "graph memory nodes"). Recorded GT_CALL_CAPTURED.
 *  - any other allocation made meanwhile is real memory taken now: typically
 *    a framework filling a graph's private pool (PyTorch's torch.cuda.graph
 *    gives each capture a pool of its own). Recorded GT_CALL_IN_CAPTURE.
 * The hot path pays one relaxed load while no capture is open; during one,
 * a stream-ordered call asks the driver whether its stream is capturing
 * (cuStreamIsCapturing: a runtime stream is a driver stream, and the driver
 * keeps no last error for the program's next cudaGetLastError to find). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>

#include "shim.h"

/* Counted once per capture: the runtime's entry point runs the driver's
 * inside the shim's re-entry guard (hooks.h), so only the outer call counts. */
void gt_graph_capture_begun(int result)
{
    if (result == 0)
        atomic_fetch_add_explicit(&gt_captures_open, 1, memory_order_relaxed);
}

/* An end that returns an invalidated capture ends it too; any other error
 * (the wrong thread, a stream not capturing) leaves the count. Never below
 * zero: a capture begun before the shim saw it ends without one. */
void gt_graph_capture_ended(int result)
{
    if (result != 0 && result != (int)cudaErrorStreamCaptureInvalidated)
        return;
    int n = atomic_load_explicit(&gt_captures_open, memory_order_relaxed);
    while (n > 0 && !atomic_compare_exchange_weak_explicit(&gt_captures_open, &n, n - 1, memory_order_relaxed,
                                                          memory_order_relaxed))
        ;
}

/* Fork child: its parent's captures are not its own (and CUDA does not
 * survive a fork). */
void gt_graph_after_fork_child(void)
{
    atomic_store_explicit(&gt_captures_open, 0, memory_order_relaxed);
}

static struct gt_hook is_capturing_q = {"cuStreamIsCapturing", NULL, "libcuda.so", NULL, 0};

/* A capture is open somewhere in the process: the flags of a call on stream
 * (GT_CALL_HAS_STREAM in flags) or without one. The legacy default stream
 * cannot be captured; the per-thread one can (its handle is the driver's
 * too). Stream 0 of a per-thread-default-stream build (_ptsz) is asked as
 * the legacy stream: such a capture is recorded as made meanwhile. */
uint32_t gt_graph_call_flags(uint32_t flags, uint64_t stream)
{
    uint32_t out = GT_CALL_IN_CAPTURE;
    if (!(flags & GT_CALL_HAS_STREAM) || stream == 0 || stream == (uint64_t)(uintptr_t)cudaStreamLegacy)
        return out;
    __typeof__(&cuStreamIsCapturing) ask = (__typeof__(&cuStreamIsCapturing))gt_real_of(&is_capturing_q);
    CUstreamCaptureStatus status;
    if (ask && ask((CUstream)(uintptr_t)stream, &status) == CUDA_SUCCESS && status == CU_STREAM_CAPTURE_STATUS_ACTIVE)
        out = GT_CALL_CAPTURED;
    return out;
}
