/* The stream-ordered pool's reservation (the device memory a cudaMallocAsync
 * pool holds), read by the writer thread from the pool itself instead of from
 * CUPTI's per-allocation driver records, which cost the traced program work on
 * every cudaMallocAsync/cudaFreeAsync. Only the devices where the program made
 * pool allocations are read, so CUDA is initialised there; the driver's
 * queries need no context (a device and a pool handle); the runtime's serve
 * only where no libcuda is loaded (a stand-in runtime). Likewise the memory
 * the driver holds for CUDA graphs' allocation nodes (taken when a graph
 * runs, kept until trimmed): read on an H200 from a thread with no current
 * context, it answered. */
#include <pthread.h>

#include <cuda.h>
#include <cuda_runtime_api.h>

#include "activity.h"

static struct {
    CUresult (*dev_get)(CUdevice *, int);
    CUresult (*dev_pool)(CUmemoryPool *, CUdevice);
    CUresult (*attr)(CUmemoryPool, CUmemPool_attribute, void *);
    cudaError_t (*rt_pool)(cudaMemPool_t *, int);
    cudaError_t (*rt_attr)(cudaMemPool_t, enum cudaMemPoolAttr, void *);
    CUresult (*graph_attr)(CUdevice, CUgraphMem_attribute, void *);
    cudaError_t (*rt_graph_attr)(int, enum cudaGraphMemAttributeType, void *);
} P;

static pthread_once_t once = PTHREAD_ONCE_INIT;

static void resolve(void)
{
    P.dev_get = (CUresult(*)(CUdevice *, int))gt_real_symbol("cuDeviceGet", "libcuda.so");
    P.dev_pool = (CUresult(*)(CUmemoryPool *, CUdevice))gt_real_symbol("cuDeviceGetMemPool", "libcuda.so");
    P.attr = (CUresult(*)(CUmemoryPool, CUmemPool_attribute, void *))gt_real_symbol("cuMemPoolGetAttribute",
                                                                                     "libcuda.so");
    P.graph_attr = (CUresult(*)(CUdevice, CUgraphMem_attribute, void *))gt_real_symbol("cuDeviceGetGraphMemAttribute",
                                                                                         "libcuda.so");
    if (P.dev_get && P.dev_pool && P.attr)
        return;
    P.dev_get = NULL;
    P.rt_pool = (cudaError_t(*)(cudaMemPool_t *, int))gt_real_symbol("cudaDeviceGetMemPool", "libcudart.so");
    P.rt_attr = (cudaError_t(*)(cudaMemPool_t, enum cudaMemPoolAttr, void *))gt_real_symbol(
        "cudaMemPoolGetAttribute", "libcudart.so");
    P.graph_attr = NULL;
    P.rt_graph_attr = (cudaError_t(*)(int, enum cudaGraphMemAttributeType, void *))gt_real_symbol(
        "cudaDeviceGetGraphMemAttribute", "libcudart.so");
}

/* Capped as the trace stores it: SQLite's integers are signed. */
static int64_t capped(cuuint64_t v)
{
    return v > INT64_MAX ? INT64_MAX : (int64_t)v;
}

/* Reads the current pool of device d, in one lookup of it: reserved into
 * out->used, in use into out->total (the memory_pools row's size and
 * utilized_size), and its release threshold (what it keeps of freed memory
 * past a synchronization: PyTorch's cudaMallocAsync backend sets UINT64_MAX,
 * CUDA's default is 0; -1 when unanswered). false when neither API answers. */
/* A longjmp left a CUDA memory call (record.c): the driver may hold for good
 * the lock that call took, which a pool query may wait for (CUPTI's flush
 * did, on an H200). No reading from then on; said once. */
static bool call_left(void)
{
    static _Atomic bool said;
    if (GT_LIKELY(!atomic_load(&gt_cuda_call_left)))
        return false;
    if (!atomic_exchange(&said, true))
        gt_note("pools", false, "not read after a longjmp left a CUDA call (drops: left_by_longjmp): the query could "
                "wait for ever on the lock that call left held; the readings before it stand");
    return true;
}

bool gt_pool_read(int d, struct gt_mem_sample *out)
{
    if (call_left())
        return false;
    pthread_once(&once, resolve);
    cuuint64_t r = 0, u = 0, th = 0;
    bool ok, have_th;
    if (P.dev_get) {
        CUdevice dev;
        CUmemoryPool pool;
        ok = P.dev_get(&dev, d) == CUDA_SUCCESS && P.dev_pool(&pool, dev) == CUDA_SUCCESS &&
             P.attr(pool, CU_MEMPOOL_ATTR_RESERVED_MEM_CURRENT, &r) == CUDA_SUCCESS &&
             P.attr(pool, CU_MEMPOOL_ATTR_USED_MEM_CURRENT, &u) == CUDA_SUCCESS;
        have_th = ok && P.attr(pool, CU_MEMPOOL_ATTR_RELEASE_THRESHOLD, &th) == CUDA_SUCCESS;
    } else {
        cudaMemPool_t pool;
        ok = P.rt_pool && P.rt_attr && P.rt_pool(&pool, d) == cudaSuccess &&
             P.rt_attr(pool, cudaMemPoolAttrReservedMemCurrent, &r) == cudaSuccess &&
             P.rt_attr(pool, cudaMemPoolAttrUsedMemCurrent, &u) == cudaSuccess;
        have_th = ok && P.rt_attr(pool, cudaMemPoolAttrReleaseThreshold, &th) == cudaSuccess;
    }
    if (ok) {
        out->used = r;
        out->total = u;
        out->threshold = have_th ? capped(th) : -1;
    }
    return ok;
}

/* The memory held for graphs on device d: reserved into out->used, in use
 * into out->total; false when neither API answers. */
bool gt_graph_memory_read(int d, struct gt_mem_sample *out)
{
    if (call_left())
        return false;
    pthread_once(&once, resolve);
    cuuint64_t r = 0, u = 0;
    bool ok;
    if (P.dev_get) {
        CUdevice dev;
        ok = P.graph_attr && P.dev_get(&dev, d) == CUDA_SUCCESS &&
             P.graph_attr(dev, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r) == CUDA_SUCCESS &&
             P.graph_attr(dev, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u) == CUDA_SUCCESS;
    } else {
        ok = P.rt_graph_attr && P.rt_graph_attr(d, cudaGraphMemAttrReservedMemCurrent, &r) == cudaSuccess &&
             P.rt_graph_attr(d, cudaGraphMemAttrUsedMemCurrent, &u) == cudaSuccess;
    }
    if (ok) {
        out->used = r;
        out->total = u;
        out->threshold = -1;
    }
    return ok;
}
