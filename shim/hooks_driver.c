/* Interposers for the CUDA driver allocation API, one row per function
 * (macros in hooks.h). They catch programs that call the driver themselves,
 * linked, through dlsym or through the entry-point queries (entrypoints.c):
 * PyTorch's expandable segments (cuMemCreate/cuMemMap), statically linked
 * cudart, driver-API programs, and CUDA arrays (sizes: arrays.c). Inside a runtime hook the guard in record.c
 * makes them pass straight through: cudaMalloc -> cuMemAlloc_v2 is one event,
 * under the API the program called. */
#include <cuda.h>

#include "hooks.h"

/* Per-thread-stream variants (what cuda.h names the calls under
 * CUDA_API_PER_THREAD_DEFAULT_STREAM): same signature as the plain name. */
extern __typeof__(cuMemAllocAsync) cuMemAllocAsync_ptsz;
extern __typeof__(cuMemFreeAsync) cuMemFreeAsync_ptsz;
extern __typeof__(cuMemAllocFromPoolAsync) cuMemAllocFromPoolAsync_ptsz;
extern __typeof__(cuStreamBeginCapture_v2) cuStreamBeginCapture_v2_ptsz;
/* Older graph entry points libcuda still exports (cuda.h maps the names to
 * newer ones, and declares these only for its own build): what a program
 * built against CUDA 11, or cuGetProcAddress at an 11.x version, reaches. */
#undef cuGraphInstantiate
#undef cuStreamBeginCapture
#undef cuDevicePrimaryCtxReset
/* (the statically linked runtime's cudaDeviceReset asks cuGetProcAddress for
 * this one, at version 7000: an H200, CUDA 13) */
CUresult CUDAAPI cuDevicePrimaryCtxReset(CUdevice dev);
CUresult CUDAAPI cuGraphInstantiate(CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t n);
CUresult CUDAAPI cuGraphInstantiate_v2(CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t n);
CUresult CUDAAPI cuStreamBeginCapture(CUstream s);
CUresult CUDAAPI cuStreamBeginCapture_ptsz(CUstream s);
extern __typeof__(cuStreamBeginCaptureToGraph) cuStreamBeginCaptureToGraph_ptsz;
extern __typeof__(cuStreamEndCapture) cuStreamEndCapture_ptsz;
extern __typeof__(cuGraphInstantiateWithParams) cuGraphInstantiateWithParams_ptsz;
extern __typeof__(cuGraphLaunch) cuGraphLaunch_ptsz;

#define DEV GT_DEVICE_CURRENT_DRIVER /* asked in gt_record_alloc */
#define DEV_OF_STREAM GT_DEVICE_OF_STREAM_DRIVER
#define DEV_OF_POOL GT_DEVICE_OF_POINTER_DRIVER

static bool host_located(const CUmemAllocationProp *prop)
{
    return prop && (prop->location.type == CU_MEM_LOCATION_TYPE_HOST || prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
                    prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT);
}

/* cuMemCreate holds device memory, or pinned host memory when its location is
 * the host: a separate apis row, so every reader counts it as host memory. */
static int create_api(const CUmemAllocationProp *prop)
{
    return host_located(prop) ? GT_API_cuMemCreate_host : GT_API_cuMemCreate;
}
static int create_device(const CUmemAllocationProp *prop)
{
    if (host_located(prop))
        return GT_DEVICE_HOST;
    return prop && prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE ? prop->location.id : GT_DEVICE_UNKNOWN;
}

/* cuMemCreate: like GT_HOOK_ALLOC, with the apis row chosen by location. */
#define GT_HOOK_CREATE(sym, api, params, args, PTR, SIZE, DEVICE, STREAM, FLAGS) \
    GT_EXPORT CUresult sym params \
    { \
        GT_RESOLVE(sym, params) \
        if (!gt_hook_enter()) \
            return real args; \
        GT_REAL_BEGIN(); \
        CUresult rc = real args; \
        GT_REAL_END(); \
        gt_record_alloc(create_api(prop), (int)rc, rc == CUDA_SUCCESS ? (uint64_t)(PTR) : 0, (SIZE), (DEVICE), \
                        (STREAM), (FLAGS)); \
        gt_hook_leave(); \
        return rc; \
    }

/* An IPC-opened range's size: cuIpcOpenMemHandle does not say it; the driver
 * does, asked only after the program's own call succeeded. 0 if it cannot. */
static struct gt_hook get_range = {"cuMemGetAddressRange_v2", NULL, "libcuda.so", NULL, 0};
uint64_t gt_ipc_range_size(uint64_t ptr)
{
    __typeof__(&cuMemGetAddressRange_v2) get = (__typeof__(&cuMemGetAddressRange_v2))gt_real_of(&get_range);
    CUdeviceptr base;
    size_t size;
    if (!ptr || !get || get(&base, &size, (CUdeviceptr)ptr) != CUDA_SUCCESS)
        return 0;
    return size;
}
#define IPC_SIZE(p) (rc == CUDA_SUCCESS && (p) ? gt_ipc_range_size(*(p)) : 0)

#define AUX(h) (uint64_t)(h), GT_CALL_HAS_HANDLE         /* cuMemMap: the handle it maps */
#define RANGE 0, GT_CALL_HAS_SIZE                      /* cuMemUnmap: SIZE is its range */

#define DRIVER_HOOKS(X) \
    X(ALLOC, cuMemAlloc_v2, cuMemAlloc_v2, (CUdeviceptr *p, size_t size), (p, size), p ? *p : 0, size, DEV, NOSTREAM) \
    X(FREE, cuMemFree_v2, cuMemFree_v2, (CUdeviceptr p), (p), p, 0, ANY, NOSTREAM) \
    X(ALLOC, cuMemAllocPitch_v2, cuMemAllocPitch_v2, (CUdeviceptr *p, size_t *pitch, size_t width, size_t height, unsigned int elem), (p, pitch, width, height, elem), p ? *p : 0, gt_size_mul(rc == GT_HOOK_OK && pitch ? *pitch : width, height), DEV, NOSTREAM) \
    X(ALLOC, cuMemAllocManaged, cuMemAllocManaged, (CUdeviceptr *p, size_t size, unsigned int flags), (p, size, flags), p ? *p : 0, size, DEV, NOSTREAM) \
    X(ALLOC, cuMemAllocHost_v2, cuMemAllocHost_v2, (void **p, size_t size), (p, size), p ? *p : 0, size, HOST, NOSTREAM) \
    X(ALLOC, cuMemHostAlloc, cuMemHostAlloc, (void **p, size_t size, unsigned int flags), (p, size, flags), p ? *p : 0, size, HOST, NOSTREAM) \
    X(FREE, cuMemFreeHost, cuMemFreeHost, (void *p), (p), p, 0, HOST, NOSTREAM) \
    X(RESET, cuDevicePrimaryCtxReset_v2, cuDevicePrimaryCtxReset_v2, (CUdevice dev), (dev), 0, 0, (int)dev, NOSTREAM) \
    X(RESET, cuDevicePrimaryCtxReset, cuDevicePrimaryCtxReset, (CUdevice dev), (dev), 0, 0, (int)dev, NOSTREAM) \
    X(ALLOC, cuMemHostRegister_v2, cuMemHostRegister_v2, (void *p, size_t size, unsigned int flags), (p, size, flags), p, size, HOST, NOSTREAM) \
    X(FREE, cuMemHostUnregister, cuMemHostUnregister, (void *p), (p), p, 0, HOST, NOSTREAM) \
    X(ALLOC, cuMemAllocAsync, cuMemAllocAsync, (CUdeviceptr *p, size_t size, CUstream s), (p, size, s), p ? *p : 0, size, DEV_OF_STREAM, STREAM(s)) \
    X(ALLOC, cuMemAllocAsync_ptsz, cuMemAllocAsync, (CUdeviceptr *p, size_t size, CUstream s), (p, size, s), p ? *p : 0, size, DEV_OF_STREAM, STREAM_PTSZ(s)) \
    X(FREE, cuMemFreeAsync, cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s), p, 0, ANY, STREAM(s)) \
    X(FREE, cuMemFreeAsync_ptsz, cuMemFreeAsync, (CUdeviceptr p, CUstream s), (p, s), p, 0, ANY, STREAM_PTSZ(s)) \
    X(ALLOC, cuMemAllocFromPoolAsync, cuMemAllocFromPoolAsync, (CUdeviceptr *p, size_t size, CUmemoryPool pool, CUstream s), (p, size, pool, s), p ? *p : 0, size, DEV_OF_POOL, STREAM(s)) \
    X(ALLOC, cuMemAllocFromPoolAsync_ptsz, cuMemAllocFromPoolAsync, (CUdeviceptr *p, size_t size, CUmemoryPool pool, CUstream s), (p, size, pool, s), p ? *p : 0, size, DEV_OF_POOL, STREAM_PTSZ(s)) \
    X(CREATE, cuMemCreate, cuMemCreate, (CUmemGenericAllocationHandle *h, size_t size, const CUmemAllocationProp *prop, unsigned long long flags), (h, size, prop, flags), h ? *h : 0, size, create_device(prop), NOSTREAM) \
    X(FREE, cuMemRelease, cuMemRelease, (CUmemGenericAllocationHandle h), (h), h, 0, ANY, NOSTREAM) \
    X(ALLOC, cuMemMap, cuMemMap, (CUdeviceptr va, size_t size, size_t offset, CUmemGenericAllocationHandle h, unsigned long long flags), (va, size, offset, h, flags), va, size, ANY, AUX(h)) \
    X(FREE, cuMemUnmap, cuMemUnmap, (CUdeviceptr va, size_t size), (va, size), va, size, ANY, RANGE) \
    X(ALLOC, cuMemAddressReserve, cuMemAddressReserve, (CUdeviceptr *p, size_t size, size_t align, CUdeviceptr addr, unsigned long long flags), (p, size, align, addr, flags), p ? *p : 0, size, ANY, NOSTREAM) \
    X(FREE, cuMemAddressFree, cuMemAddressFree, (CUdeviceptr p, size_t size), (p, size), p, 0, ANY, NOSTREAM) \
    X(ALLOC, cuMemRetainAllocationHandle, cuMemRetainAllocationHandle, (CUmemGenericAllocationHandle *h, void *addr), (h, addr), h ? *h : 0, 0, ANY, NOSTREAM) \
    X(ALLOC, cuMemImportFromShareableHandle, cuMemImportFromShareableHandle, (CUmemGenericAllocationHandle *h, void *os_handle, CUmemAllocationHandleType type), (h, os_handle, type), h ? *h : 0, 0, ANY, NOSTREAM) \
    X(ALLOC, cuIpcOpenMemHandle_v2, cuIpcOpenMemHandle_v2, (CUdeviceptr *p, CUipcMemHandle handle, unsigned int flags), (p, handle, flags), p ? *p : 0, IPC_SIZE(p), DEV, NOSTREAM) \
    X(FREE, cuIpcCloseMemHandle, cuIpcCloseMemHandle, (CUdeviceptr p), (p), p, 0, ANY, NOSTREAM) \
    X(ALLOC, cuArrayCreate_v2, cuArrayCreate_v2, (CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d), (a, d), a ? *a : 0, d ? gt_array_bytes_driver(d->Format, d->NumChannels, d->Width, d->Height, 0, 0, 1) : 0, DEV, NOSTREAM) \
    X(ALLOC, cuArray3DCreate_v2, cuArray3DCreate_v2, (CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d), (a, d), a ? *a : 0, d ? gt_array_bytes_driver(d->Format, d->NumChannels, d->Width, d->Height, d->Depth, d->Flags, 1) : 0, DEV, NOSTREAM) \
    X(ALLOC, cuMipmappedArrayCreate, cuMipmappedArrayCreate, (CUmipmappedArray *m, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels), (m, d, levels), m ? *m : 0, d ? gt_array_bytes_driver(d->Format, d->NumChannels, d->Width, d->Height, d->Depth, d->Flags, levels) : 0, DEV, NOSTREAM) \
    X(FREE, cuArrayDestroy, cuArrayDestroy, (CUarray a), (a), a, 0, ANY, NOSTREAM) \
    X(FREE, cuMipmappedArrayDestroy, cuMipmappedArrayDestroy, (CUmipmappedArray m), (m), m, 0, ANY, NOSTREAM) \
    X(BEGIN, cuStreamBeginCapture, s, (CUstream s), (s)) \
    X(BEGIN, cuStreamBeginCapture_ptsz, PTSZ(s), (CUstream s), (s)) \
    X(GRAPH, cuGraphInstantiate, -, (CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t n), (e, g, err, log, n)) \
    X(GRAPH, cuGraphInstantiate_v2, -, (CUgraphExec *e, CUgraph g, CUgraphNode *err, char *log, size_t n), (e, g, err, log, n)) \
    X(BEGIN, cuStreamBeginCapture_v2, s, (CUstream s, CUstreamCaptureMode mode), (s, mode)) \
    X(BEGIN, cuStreamBeginCapture_v2_ptsz, PTSZ(s), (CUstream s, CUstreamCaptureMode mode), (s, mode)) \
    X(BEGIN, cuStreamBeginCaptureToGraph, s, (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode), (s, g, deps, data, n, mode)) \
    X(BEGIN, cuStreamBeginCaptureToGraph_ptsz, PTSZ(s), (CUstream s, CUgraph g, const CUgraphNode *deps, const CUgraphEdgeData *data, size_t n, CUstreamCaptureMode mode), (s, g, deps, data, n, mode)) \
    X(END, cuStreamEndCapture, s, (CUstream s, CUgraph *g), (s, g)) \
    X(END, cuStreamEndCapture_ptsz, PTSZ(s), (CUstream s, CUgraph *g), (s, g)) \
    X(GRAPH, cuGraphInstantiateWithFlags, -, (CUgraphExec *e, CUgraph g, unsigned long long flags), (e, g, flags)) \
    X(GRAPH, cuGraphInstantiateWithParams, -, (CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *params), (e, g, params)) \
    X(GRAPH, cuGraphInstantiateWithParams_ptsz, -, (CUgraphExec *e, CUgraph g, CUDA_GRAPH_INSTANTIATE_PARAMS *params), (e, g, params)) \
    X(GRAPH, cuGraphLaunch, -, (CUgraphExec e, CUstream s), (e, s)) \
    X(GRAPH, cuGraphLaunch_ptsz, -, (CUgraphExec e, CUstream s), (e, s))

#define GT_HOOK_RESULT CUresult
#define GT_HOOK_OK CUDA_SUCCESS
#define GT_HOOK_NOT_FOUND CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND
#define GT_HOOK_LIB "libcuda.so"
#define GT_HOOK_TABLE driver_hooks

enum { DRIVER_HOOKS(GT_HOOK_ENUM) N_DRIVER_HOOKS };
static struct gt_hook driver_hooks[N_DRIVER_HOOKS];
DRIVER_HOOKS(GT_HOOK_DEFINE)
static struct gt_hook driver_hooks[N_DRIVER_HOOKS] = {DRIVER_HOOKS(GT_HOOK_ROW)};
const struct gt_hook_table gt_driver_hooks = {driver_hooks, N_DRIVER_HOOKS};
