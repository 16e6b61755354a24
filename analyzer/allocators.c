/* allocators.c - the caching allocators the analyzer knows by the frames of
 * an allocating stack: device memory they reserve is their cache (segments,
 * blocks), which holds the program's tensors or arrays out of the trace's
 * sight. Each says how to trace it at tensor level, which is what tells a
 * kept tensor from a cache (leaks, growth). */
#include <string.h>

#include "analyzer.h"

/* Substrings of a frame (function or module). CuPy's pool is Cython: its
 * frames are mangled C names (__pyx_f_4cupy_4cuda_6memory_22SingleDeviceMemoryPool_malloc,
 * in memory.cpython-312-x86_64-linux-gnu.so), never "cupy.cuda.memory" (an
 * H200 trace, session 48); the pool's classes, not the module: without the
 * pool (set_allocator(None)) each array is still made through
 * cupy.cuda.memory.Memory, one cudaMalloc an array, which is no cache. */
static const char *const torch_frames[] = {"CUDACachingAllocator", "DeviceCachingAllocator", "c10::cuda::",
                                           "libc10_cuda.so", "CachingHostAllocator" /* pinned host blocks */, NULL};
static const char *const cupy_frames[] = {"_4cupy_4cuda_6memory_22SingleDeviceMemoryPool",
                                          "_4cupy_4cuda_6memory_10MemoryPool", "cupy.cuda.memory.MemoryPool",
                                          "cupy.cuda.memory.SingleDeviceMemoryPool", NULL};
static const char *const bfc_frames[] = {"BFCAllocator", NULL};
/* RMM's resources that keep what they are given back; its default,
 * cuda_memory_resource, is one cudaMalloc a buffer and no cache (a review) */
static const char *const rmm_frames[] = {"rmm::mr::pool_memory_resource", "rmm::mr::arena_memory_resource",
                                         "rmm::mr::binning_memory_resource", "rmm::mr::fixed_size_memory_resource",
                                         NULL};
static const char *const pool_frames[] = {"MemoryPool::malloc", NULL};

static const struct gt_caching_allocator known[] = {
    {"PyTorch's caching allocator", torch_frames, "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync"},
    {"CuPy's memory pool", cupy_frames,
     "cupy.cuda.set_allocator(cupy.cuda.MemoryAsyncPool().malloc), or set_allocator(None) for no pool"},
    {"a BFC allocator (XLA, TensorFlow)", bfc_frames,
     "JAX: XLA_PYTHON_CLIENT_PREALLOCATE=false XLA_PYTHON_CLIENT_ALLOCATOR=platform; TensorFlow: "
     "TF_GPU_ALLOCATOR=cuda_malloc_async"},
    {"RMM's pool", rmm_frames, "RMM's CudaAsyncMemoryResource (rmm.mr.CudaAsyncMemoryResource())"},
    {"a memory pool", pool_frames, "the library's own setting for an allocation per buffer"},
};

const struct gt_caching_allocator *gt_caching_allocator_of(char *const *frames, int n)
{
    for (int k = 0; k < n; k++)
        for (size_t q = 0; q < sizeof known / sizeof *known; q++)
            for (const char *const *p = known[q].frames; *p; p++)
                if (strstr(frames[k], *p))
                    return &known[q];
    return NULL;
}

const struct gt_caching_allocator *gt_site_caching_allocator(struct gt_ctx *c, int32_t site, int *code)
{
    char **f;
    int n;
    *code = gt_trace_frames(&c->t, site, &f, &n);
    return *code ? NULL : gt_caching_allocator_of(f, n);
}
