/* Interposers for the CUDA runtime allocation API, CUDA arrays included (and the calls that make
 * or launch CUDA graphs, which cupti.c must know of): a table, one row per
 * function (macros in hooks.h). Each hook resolves the real function, calls
 * it, and hands the result to record.c (a capture's beginning and end to
 * graphs.c); nothing else happens here. The _ptsz
 * names are what the headers compile to under --default-stream per-thread. */
/* cudaGraphInstantiate took 5 parameters in CUDA 11 (pGraphExec, graph,
 * pErrorNode, pLogBuffer, bufferSize) and takes 3 from CUDA 12 (pGraphExec,
 * graph, flags) under the same name: the header's 3-parameter declaration
 * is put aside and the hook takes and passes on all five. Arguments go in
 * registers (x86-64 SysV, AArch64), so a 3-parameter runtime ignores the two
 * it does not take; with three, a CUDA 11 program whose instantiation failed
 * had its log written through whatever the shim left in those registers (a
 * helper's review: a crash on the first call). */
#define cudaGraphInstantiate gt_header_cudaGraphInstantiate
#include <cuda_runtime_api.h>
#undef cudaGraphInstantiate
extern __host__ cudaError_t CUDARTAPI cudaGraphInstantiate(cudaGraphExec_t *e, cudaGraph_t g,
                                                           unsigned long long flags_or_error_node_11, char *log_11,
                                                           size_t log_size_11);

#include "hooks.h"

/* Per-thread-stream variants (what the headers name the calls under
 * --default-stream per-thread): same signature as the plain name. */
extern __typeof__(cudaMallocAsync) cudaMallocAsync_ptsz;
extern __typeof__(cudaFreeAsync) cudaFreeAsync_ptsz;
extern __typeof__(cudaMallocFromPoolAsync) cudaMallocFromPoolAsync_ptsz;
extern __typeof__(cudaStreamBeginCapture) cudaStreamBeginCapture_ptsz;
extern __typeof__(cudaStreamBeginCaptureToGraph) cudaStreamBeginCaptureToGraph_ptsz;
extern __typeof__(cudaStreamEndCapture) cudaStreamEndCapture_ptsz;
extern __typeof__(cudaGraphInstantiateWithParams) cudaGraphInstantiateWithParams_ptsz;
extern __typeof__(cudaGraphLaunch) cudaGraphLaunch_ptsz;

#define DEV GT_DEVICE_CURRENT_RUNTIME /* asked in gt_record_alloc */
#define DEV_OF_STREAM GT_DEVICE_OF_STREAM_RUNTIME
#define DEV_OF_POOL GT_DEVICE_OF_POINTER_RUNTIME

#define RUNTIME_HOOKS(X) \
    X(ALLOC, cudaMalloc, cudaMalloc, (void **p, size_t size), (p, size), p ? *p : 0, size, DEV, NOSTREAM) \
    X(FREE, cudaFree, cudaFree, (void *p), (p), p, 0, ANY, NOSTREAM) \
    X(ALLOC, cudaMallocAsync, cudaMallocAsync, (void **p, size_t size, cudaStream_t s), (p, size, s), p ? *p : 0, size, DEV_OF_STREAM, STREAM(s)) \
    X(ALLOC, cudaMallocAsync_ptsz, cudaMallocAsync, (void **p, size_t size, cudaStream_t s), (p, size, s), p ? *p : 0, size, DEV_OF_STREAM, STREAM_PTSZ(s)) \
    X(FREE, cudaFreeAsync, cudaFreeAsync, (void *p, cudaStream_t s), (p, s), p, 0, ANY, STREAM(s)) \
    X(FREE, cudaFreeAsync_ptsz, cudaFreeAsync, (void *p, cudaStream_t s), (p, s), p, 0, ANY, STREAM_PTSZ(s)) \
    X(ALLOC, cudaMallocFromPoolAsync, cudaMallocFromPoolAsync, (void **p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s), p ? *p : 0, size, DEV_OF_POOL, STREAM(s)) \
    X(ALLOC, cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync, (void **p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s), p ? *p : 0, size, DEV_OF_POOL, STREAM_PTSZ(s)) \
    X(ALLOC, cudaMallocManaged, cudaMallocManaged, (void **p, size_t size, unsigned int flags), (p, size, flags), p ? *p : 0, size, DEV, NOSTREAM) \
    X(ALLOC, cudaMallocHost, cudaMallocHost, (void **p, size_t size), (p, size), p ? *p : 0, size, HOST, NOSTREAM) \
    X(ALLOC, cudaHostAlloc, cudaHostAlloc, (void **p, size_t size, unsigned int flags), (p, size, flags), p ? *p : 0, size, HOST, NOSTREAM) \
    X(FREE, cudaFreeHost, cudaFreeHost, (void *p), (p), p, 0, HOST, NOSTREAM) \
    X(RESET, cudaDeviceReset, cudaDeviceReset, (void), (), 0, 0, DEV, NOSTREAM) \
    X(ALLOC, cudaHostRegister, cudaHostRegister, (void *p, size_t size, unsigned int flags), (p, size, flags), p, size, HOST, NOSTREAM) \
    X(FREE, cudaHostUnregister, cudaHostUnregister, (void *p), (p), p, 0, HOST, NOSTREAM) \
    X(ALLOC, cudaMallocPitch, cudaMallocPitch, (void **p, size_t *pitch, size_t width, size_t height), (p, pitch, width, height), p ? *p : 0, gt_size_mul(rc == GT_HOOK_OK && pitch ? *pitch : width, height), DEV, NOSTREAM) \
    X(ALLOC, cudaMalloc3D, cudaMalloc3D, (struct cudaPitchedPtr *pp, struct cudaExtent e), (pp, e), pp ? pp->ptr : 0, gt_size_mul(gt_size_mul(rc == GT_HOOK_OK && pp ? pp->pitch : e.width, e.height), e.depth), DEV, NOSTREAM) \
    X(ALLOC, cudaIpcOpenMemHandle, cudaIpcOpenMemHandle, (void **p, cudaIpcMemHandle_t handle, unsigned int flags), (p, handle, flags), p ? *p : 0, rc == GT_HOOK_OK && p ? gt_ipc_range_size((uint64_t)(uintptr_t)*p) : 0, DEV, NOSTREAM) \
    X(FREE, cudaIpcCloseMemHandle, cudaIpcCloseMemHandle, (void *p), (p), p, 0, ANY, NOSTREAM) \
    X(ALLOC, cudaMallocArray, cudaMallocArray, (cudaArray_t *a, const struct cudaChannelFormatDesc *desc, size_t w, size_t h, unsigned int flags), (a, desc, w, h, flags), a ? *a : 0, gt_array_bytes_runtime(desc, w, h, 0, flags, 1), DEV, NOSTREAM) \
    X(ALLOC, cudaMalloc3DArray, cudaMalloc3DArray, (cudaArray_t *a, const struct cudaChannelFormatDesc *desc, struct cudaExtent e, unsigned int flags), (a, desc, e, flags), a ? *a : 0, gt_array_bytes_runtime(desc, e.width, e.height, e.depth, flags, 1), DEV, NOSTREAM) \
    X(ALLOC, cudaMallocMipmappedArray, cudaMallocMipmappedArray, (cudaMipmappedArray_t *m, const struct cudaChannelFormatDesc *desc, struct cudaExtent e, unsigned int levels, unsigned int flags), (m, desc, e, levels, flags), m ? *m : 0, gt_array_bytes_runtime(desc, e.width, e.height, e.depth, flags, levels), DEV, NOSTREAM) \
    X(FREE, cudaFreeArray, cudaFreeArray, (cudaArray_t a), (a), a, 0, ANY, NOSTREAM) \
    X(FREE, cudaFreeMipmappedArray, cudaFreeMipmappedArray, (cudaMipmappedArray_t m), (m), m, 0, ANY, NOSTREAM) \
    X(BEGIN, cudaStreamBeginCapture, s, (cudaStream_t s, enum cudaStreamCaptureMode mode), (s, mode)) \
    X(BEGIN, cudaStreamBeginCapture_ptsz, PTSZ(s), (cudaStream_t s, enum cudaStreamCaptureMode mode), (s, mode)) \
    X(BEGIN, cudaStreamBeginCaptureToGraph, s, (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t *deps, const cudaGraphEdgeData *data, size_t n, enum cudaStreamCaptureMode mode), (s, g, deps, data, n, mode)) \
    X(BEGIN, cudaStreamBeginCaptureToGraph_ptsz, PTSZ(s), (cudaStream_t s, cudaGraph_t g, const cudaGraphNode_t *deps, const cudaGraphEdgeData *data, size_t n, enum cudaStreamCaptureMode mode), (s, g, deps, data, n, mode)) \
    X(END, cudaStreamEndCapture, s, (cudaStream_t s, cudaGraph_t *g), (s, g)) \
    X(END, cudaStreamEndCapture_ptsz, PTSZ(s), (cudaStream_t s, cudaGraph_t *g), (s, g)) \
    X(GRAPH, cudaGraphInstantiate, -, (cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags_or_error_node_11, char *log_11, size_t log_size_11), (e, g, flags_or_error_node_11, log_11, log_size_11)) \
    X(GRAPH, cudaGraphInstantiateWithFlags, -, (cudaGraphExec_t *e, cudaGraph_t g, unsigned long long flags), (e, g, flags)) \
    X(GRAPH, cudaGraphInstantiateWithParams, -, (cudaGraphExec_t *e, cudaGraph_t g, cudaGraphInstantiateParams *params), (e, g, params)) \
    X(GRAPH, cudaGraphInstantiateWithParams_ptsz, -, (cudaGraphExec_t *e, cudaGraph_t g, cudaGraphInstantiateParams *params), (e, g, params)) \
    X(GRAPH, cudaGraphLaunch, -, (cudaGraphExec_t e, cudaStream_t s), (e, s)) \
    X(GRAPH, cudaGraphLaunch_ptsz, -, (cudaGraphExec_t e, cudaStream_t s), (e, s))

#define GT_HOOK_RESULT cudaError_t
#define GT_HOOK_OK cudaSuccess
#define GT_HOOK_NOT_FOUND cudaErrorSharedObjectSymbolNotFound
#define GT_HOOK_LIB "libcudart.so"
#define GT_HOOK_TABLE runtime_hooks

enum { RUNTIME_HOOKS(GT_HOOK_ENUM) N_RUNTIME_HOOKS };
static struct gt_hook runtime_hooks[N_RUNTIME_HOOKS];
RUNTIME_HOOKS(GT_HOOK_DEFINE)
static struct gt_hook runtime_hooks[N_RUNTIME_HOOKS] = {RUNTIME_HOOKS(GT_HOOK_ROW)};
const struct gt_hook_table gt_runtime_hooks = {runtime_hooks, N_RUNTIME_HOOKS};
