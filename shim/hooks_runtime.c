/* Interposers for the CUDA runtime allocation API: a table, one line per
 * function. Each hook resolves the real function, calls it, and hands the
 * result to record.c; nothing else happens here. The _ptsz names are what the
 * headers compile to under --default-stream per-thread. */
#include <cuda_runtime_api.h>

#include "shim.h"

/* The device the calling thread's allocations go to (after the program has
 * initialised CUDA: we only call this after one of its own calls succeeded). */
static int current_device(void)
{
    static cudaError_t (*get)(int *);
    if (!get)
        get = (cudaError_t(*)(int *))gt_real_symbol("cudaGetDevice", "libcudart.so");
    int d = GT_DEVICE_UNKNOWN;
    if (!get || get(&d) != cudaSuccess)
        return GT_DEVICE_UNKNOWN;
    return d;
}

#define RESOLVE(sym, params) \
    static cudaError_t(*real) params; \
    if (GT_UNLIKELY(!real)) { \
        real = (cudaError_t(*) params)gt_real_symbol(#sym, "libcudart.so"); \
        if (!real) \
            return cudaErrorSharedObjectSymbolNotFound; \
    }

/* An allocation: PTR, SIZE, DEVICE and STREAM are expressions over the
 * arguments, evaluated after the real call returned. */
#define ALLOC_HOOK(...) ALLOC_HOOK_(__VA_ARGS__)
#define ALLOC_HOOK_(sym, api, params, args, PTR, SIZE, DEVICE, STREAM, FLAGS) \
    GT_EXPORT cudaError_t sym params \
    { \
        RESOLVE(sym, params); \
        if (!gt_hook_enter()) \
            return real args; \
        cudaError_t rc = real args; \
        gt_record_alloc(GT_API_##api, rc, rc == cudaSuccess ? (uint64_t)(uintptr_t)(PTR) : 0, (SIZE), \
                        (DEVICE), (STREAM), (FLAGS)); \
        gt_hook_leave(); \
        return rc; \
    }

/* A free: recorded (its place in the order taken) before the real free runs. */
#define FREE_HOOK(...) FREE_HOOK_(__VA_ARGS__)
#define FREE_HOOK_(sym, api, params, args, PTR, DEVICE, STREAM, FLAGS) \
    GT_EXPORT cudaError_t sym params \
    { \
        RESOLVE(sym, params); \
        if ((PTR) == NULL || !gt_hook_enter()) \
            return real args; \
        struct gt_pending_free pf; \
        gt_record_free_begin(&pf, GT_API_##api, (uint64_t)(uintptr_t)(PTR), (DEVICE), (STREAM), (FLAGS)); \
        cudaError_t rc = real args; \
        gt_record_free_end(&pf, rc); \
        gt_hook_leave(); \
        return rc; \
    }

#define DEV current_device()
#define HOST GT_DEVICE_HOST
#define ANY GT_DEVICE_UNKNOWN /* a free's device comes from its allocation */
#define NOSTREAM 0, 0
#define STREAM(s) (uint64_t)(uintptr_t)(s), GT_EV_HAS_STREAM

ALLOC_HOOK(cudaMalloc, cudaMalloc, (void **p, size_t size), (p, size), p ? *p : 0, size, DEV, NOSTREAM)
FREE_HOOK(cudaFree, cudaFree, (void *p), (p), p, ANY, NOSTREAM)
ALLOC_HOOK(cudaMallocAsync, cudaMallocAsync, (void **p, size_t size, cudaStream_t s), (p, size, s), p ? *p : 0, size, DEV, STREAM(s))
ALLOC_HOOK(cudaMallocAsync_ptsz, cudaMallocAsync, (void **p, size_t size, cudaStream_t s), (p, size, s), p ? *p : 0, size, DEV, STREAM(s))
FREE_HOOK(cudaFreeAsync, cudaFreeAsync, (void *p, cudaStream_t s), (p, s), p, ANY, STREAM(s))
FREE_HOOK(cudaFreeAsync_ptsz, cudaFreeAsync, (void *p, cudaStream_t s), (p, s), p, ANY, STREAM(s))
ALLOC_HOOK(cudaMallocFromPoolAsync, cudaMallocFromPoolAsync, (void **p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s), p ? *p : 0, size, DEV, STREAM(s))
ALLOC_HOOK(cudaMallocFromPoolAsync_ptsz, cudaMallocFromPoolAsync, (void **p, size_t size, cudaMemPool_t pool, cudaStream_t s), (p, size, pool, s), p ? *p : 0, size, DEV, STREAM(s))
ALLOC_HOOK(cudaMallocManaged, cudaMallocManaged, (void **p, size_t size, unsigned int flags), (p, size, flags), p ? *p : 0, size, DEV, NOSTREAM)
ALLOC_HOOK(cudaMallocHost, cudaMallocHost, (void **p, size_t size), (p, size), p ? *p : 0, size, HOST, NOSTREAM)
ALLOC_HOOK(cudaHostAlloc, cudaHostAlloc, (void **p, size_t size, unsigned int flags), (p, size, flags), p ? *p : 0, size, HOST, NOSTREAM)
FREE_HOOK(cudaFreeHost, cudaFreeHost, (void *p), (p), p, HOST, NOSTREAM)
ALLOC_HOOK(cudaMallocPitch, cudaMallocPitch, (void **p, size_t *pitch, size_t width, size_t height), (p, pitch, width, height), p ? *p : 0, (pitch ? *pitch : width) * height, DEV, NOSTREAM)
ALLOC_HOOK(cudaMalloc3D, cudaMalloc3D, (struct cudaPitchedPtr *pp, struct cudaExtent e), (pp, e), pp ? pp->ptr : 0, (pp ? pp->pitch : e.width) * e.height * e.depth, DEV, NOSTREAM)
