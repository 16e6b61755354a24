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
#include <stdatomic.h>

#include "shim.h"

/* The streams whose capture began (0: a free slot; no stream handle the shim
 * keeps here is 0: a per-thread-default-stream build's stream 0 is kept as
 * CU_STREAM_PER_THREAD, and the legacy stream cannot be captured). An end
 * asks the driver whether its stream still captures, whatever the end
 * returned: a capture that an error ended (invalidated, unjoined) ends here
 * too, and one that an error left open (the wrong thread) stays. */
#define MAX_CAPTURING 64
static _Atomic uint64_t capturing[MAX_CAPTURING];

static struct gt_hook is_capturing_q = {"cuStreamIsCapturing", NULL, "libcuda.so", NULL, 0};

/* 1 capturing, 0 not, -1 not known (no query, or it failed) */
static int stream_captures(uint64_t stream)
{
    __typeof__(&cuStreamIsCapturing) ask = (__typeof__(&cuStreamIsCapturing))gt_real_of(&is_capturing_q);
    CUstreamCaptureStatus status;
    if (!ask || ask((CUstream)(uintptr_t)stream, &status) != CUDA_SUCCESS)
        return -1;
    return status == CU_STREAM_CAPTURE_STATUS_ACTIVE;
}

/* Counted once per capture: the runtime's entry point runs the driver's
 * inside the shim's re-entry guard (hooks.h), so only the outer call counts. */
void gt_graph_capture_begun(int result, uint64_t stream)
{
    if (result != 0 || !stream)
        return;
    for (int i = 0; i < MAX_CAPTURING; i++) {
        uint64_t free_slot = 0;
        if (atomic_compare_exchange_strong_explicit(&capturing[i], &free_slot, stream, memory_order_relaxed,
                                                    memory_order_relaxed)) {
            atomic_fetch_add_explicit(&gt_captures_open, 1, memory_order_relaxed);
            return;
        }
    }
    /* 64 captures at once: this one is not counted (its calls are recorded as outside it) */
}

void gt_graph_capture_ended(int result, uint64_t stream)
{
    (void)result;
    if (!stream || stream_captures(stream) == 1)
        return;
    for (int i = 0; i < MAX_CAPTURING; i++) {
        uint64_t was = stream;
        if (atomic_compare_exchange_strong_explicit(&capturing[i], &was, 0, memory_order_relaxed, memory_order_relaxed)) {
            atomic_fetch_sub_explicit(&gt_captures_open, 1, memory_order_relaxed);
            return;
        }
    }
}

/* Devices where an allocation node was captured: the writer reads the
 * memory the driver holds for graphs there (writer_activity.c), and so does
 * the exit sample, which may run before the writer has seen the node. A
 * graph built node by node (cudaGraphAddMemAllocNode, as a compiler's
 * command buffers may be) captures nothing: once any graph is instantiated
 * or launched, every device the program allocated on is read too. */
static _Atomic uint64_t node_devices;
static _Atomic bool graphs_used;

void gt_graph_used(void)
{
    if (!atomic_load_explicit(&graphs_used, memory_order_relaxed))
        atomic_store_explicit(&graphs_used, true, memory_order_relaxed);
}

bool gt_graph_in_use(void)
{
    return atomic_load_explicit(&graphs_used, memory_order_relaxed);
}

void gt_graph_node_made(int device)
{
    if (device >= 0 && device < 64 && !(atomic_load_explicit(&node_devices, memory_order_relaxed) >> device & 1))
        atomic_fetch_or_explicit(&node_devices, 1ull << device, memory_order_relaxed);
}

uint64_t gt_graph_node_devices(void)
{
    return atomic_load_explicit(&node_devices, memory_order_relaxed);
}

/* Fork child: its parent's captures are not its own (and CUDA does not
 * survive a fork). */
void gt_graph_after_fork_child(void)
{
    atomic_store_explicit(&node_devices, 0, memory_order_relaxed);
    atomic_store_explicit(&graphs_used, false, memory_order_relaxed);
    for (int i = 0; i < MAX_CAPTURING; i++)
        atomic_store_explicit(&capturing[i], 0, memory_order_relaxed);
    atomic_store_explicit(&gt_captures_open, 0, memory_order_relaxed);
}

/* A capture is open somewhere in the process: the flags of a call on stream
 * (GT_CALL_HAS_STREAM in flags) or without one. The legacy default stream
 * cannot be captured; the per-thread one can (the hooks of the _ptsz
 * variants record their stream 0 as CU_STREAM_PER_THREAD, as the driver
 * names it). */
uint32_t gt_graph_call_flags(uint32_t flags, uint64_t stream)
{
    if ((flags & GT_CALL_HAS_STREAM) && stream != 0 && stream != (uint64_t)(uintptr_t)CU_STREAM_LEGACY &&
        stream_captures(stream) == 1)
        return GT_CALL_CAPTURED;
    return GT_CALL_IN_CAPTURE;
}
