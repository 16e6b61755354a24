/* The device an allocation went to, asked of CUDA after the program's own
 * call (record.c, inside the recording, so the cost note times it).
 *
 * Current device: the current context's. After a successful runtime
 * allocation the context the runtime used is current on this thread, so the
 * driver's cuCtxGetDevice answers as cudaGetDevice does, for less: 18
 * against 44 ns a call on an H200 host (tests/gpu/check_device_lookup.py:
 * both agree after cudaMalloc and cudaMallocAsync on each of two devices,
 * with a context the driver made current, and with none current before the
 * call). A failed runtime call may have made no context current: cudaGetDevice
 * answers it.
 *
 * Not always the current device: on two H200s, cudaMallocAsync on a stream
 * of device 1 and cudaMallocFromPoolAsync from device 1's pool, each with
 * device 0 current, both put the memory on device 1 (the same check). A
 * stream-ordered allocation on a stream the program made is asked its
 * stream's device (the default streams are the current context's); one
 * from a given pool is asked where its pointer is, and a pool on the host
 * gives host memory. Either falls back to the current device when the query
 * is missing (a driver older than 12.8 has no stream query) or fails.
 *
 * Called, not interposed: each row's pointer is atomic, as every row's. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdatomic.h>

#include "shim.h"

static struct gt_hook get_device = {"cudaGetDevice", NULL, "libcudart.so", NULL, 0};
static int runtime_current_device(void)
{
    __typeof__(&cudaGetDevice) get = (__typeof__(&cudaGetDevice))gt_real_of(&get_device);
    int d = GT_DEVICE_UNKNOWN;
    if (!get || get(&d) != cudaSuccess)
        return GT_DEVICE_UNKNOWN;
    return d;
}

static struct gt_hook get_ctx_device = {"cuCtxGetDevice", NULL, "libcuda.so", NULL, 0};
static int driver_current_device(void)
{
    __typeof__(&cuCtxGetDevice) get = (__typeof__(&cuCtxGetDevice))gt_real_of(&get_ctx_device);
    CUdevice d;
    if (!get || get(&d) != CUDA_SUCCESS)
        return GT_DEVICE_UNKNOWN;
    return (int)d;
}

static int current_device(bool runtime, int result)
{
    if (!runtime)
        return driver_current_device();
    int d = result == 0 ? driver_current_device() : GT_DEVICE_UNKNOWN;
    return d != GT_DEVICE_UNKNOWN ? d : runtime_current_device();
}

/* The legacy default stream (0 or cudaStreamLegacy) and the per-thread one
 * belong to the current context; CU_STREAM_LEGACY and CU_STREAM_PER_THREAD
 * are the same handles. */
static bool default_stream(uint64_t s)
{
    return s == 0 || s == (uint64_t)(uintptr_t)cudaStreamLegacy || s == (uint64_t)(uintptr_t)cudaStreamPerThread;
}

/* Asked of the driver for either API: a runtime stream is a driver stream,
 * and the driver keeps no last error (a failed cudaStreamGetDevice or
 * cudaPointerGetAttributes would leave one for the program's next
 * cudaGetLastError: a runtime of 12.8 on an older driver lacks the stream
 * query, and PyTorch raises on what it finds there). A query the driver
 * lacks (cuStreamGetDevice is 12.8's) is looked up once, not on every call. */
static struct gt_hook stream_device_q = {"cuStreamGetDevice", NULL, "libcuda.so", NULL, 0};
static _Atomic bool no_stream_query;
static int stream_device(uint64_t stream)
{
    if (atomic_load_explicit(&no_stream_query, memory_order_relaxed))
        return GT_DEVICE_UNKNOWN;
    __typeof__(&cuStreamGetDevice) get = (__typeof__(&cuStreamGetDevice))gt_real_of(&stream_device_q);
    if (!get) {
        atomic_store_explicit(&no_stream_query, true, memory_order_relaxed);
        return GT_DEVICE_UNKNOWN;
    }
    CUdevice d;
    return get((CUstream)(uintptr_t)stream, &d) == CUDA_SUCCESS ? (int)d : GT_DEVICE_UNKNOWN;
}

/* Where an allocation from a given pool is: the pointer's device, or the
 * host for a pool on the host. A failed call has no pointer: the current
 * device is recorded (a pool of another device is then not named). */
static struct gt_hook pointer_q = {"cuPointerGetAttributes", NULL, "libcuda.so", NULL, 0};
static _Atomic bool no_pointer_query;
static int pointer_device(uint64_t ptr)
{
    if (!ptr || atomic_load_explicit(&no_pointer_query, memory_order_relaxed))
        return GT_DEVICE_UNKNOWN;
    __typeof__(&cuPointerGetAttributes) get = (__typeof__(&cuPointerGetAttributes))gt_real_of(&pointer_q);
    if (!get) {
        atomic_store_explicit(&no_pointer_query, true, memory_order_relaxed);
        return GT_DEVICE_UNKNOWN;
    }
    CUpointer_attribute which[2] = {CU_POINTER_ATTRIBUTE_MEMORY_TYPE, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL};
    unsigned int type = 0;
    int ordinal = -1;
    void *out[2] = {&type, &ordinal};
    if (get(2, which, out, (CUdeviceptr)ptr) != CUDA_SUCCESS)
        return GT_DEVICE_UNKNOWN;
    return type == CU_MEMORYTYPE_HOST ? GT_DEVICE_HOST
         : type == CU_MEMORYTYPE_DEVICE && ordinal >= 0 ? ordinal : GT_DEVICE_UNKNOWN;
}

/* The devices whose contexts hold pinned host memory (a device reset frees
 * the host memory of its context only: writer_events.c's free_reset). */
static _Atomic uint64_t host_contexts;

void gt_note_host_context(void)
{
    int d = driver_current_device();
    if (d >= 0 && d < 64 && !(atomic_load_explicit(&host_contexts, memory_order_relaxed) >> d & 1))
        atomic_fetch_or_explicit(&host_contexts, 1ull << d, memory_order_relaxed);
}

uint64_t gt_host_context_devices(void)
{
    return atomic_load_explicit(&host_contexts, memory_order_relaxed);
}

int gt_reset_device(int dev)
{
    return dev >= 0 ? dev : gt_allocation_device(dev, 0, 0, 0);
}

int gt_allocation_device(int how, int result, uint64_t ptr, uint64_t stream)
{
    bool runtime = how == GT_DEVICE_CURRENT_RUNTIME || how == GT_DEVICE_OF_STREAM_RUNTIME ||
                   how == GT_DEVICE_OF_POINTER_RUNTIME;
    int d = GT_DEVICE_UNKNOWN;
    if ((how == GT_DEVICE_OF_STREAM_RUNTIME || how == GT_DEVICE_OF_STREAM_DRIVER) && !default_stream(stream))
        d = stream_device(stream);
    else if (how == GT_DEVICE_OF_POINTER_RUNTIME || how == GT_DEVICE_OF_POINTER_DRIVER)
        d = pointer_device(ptr);
    return d != GT_DEVICE_UNKNOWN ? d : current_device(runtime, result);
}
