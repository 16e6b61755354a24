/* fake_cudart12.c: a second CUDA runtime in one process, as a CUDA 12
 * library brings its own beside PyTorch's CUDA 13 (cupy-cuda12x, a wheel's
 * bundled libcudart.so.12). TEST DOUBLE ONLY (test_capture.py): built as
 * libcudart.so.12 with its symbols versioned as the real runtime's are;
 * addresses from a range of its own, so a caller can tell which runtime
 * answered. Never installed. */
#include <stddef.h>
#include <stdint.h>

typedef int cudaError_t;   /* cudaSuccess 0, cudaErrorInvalidValue 1 */

#define BASE 0x7e1200000000ull
static uint64_t next = BASE;

cudaError_t cudaMalloc(void **p, size_t size);
cudaError_t cudaFree(void *p);
int fake_cudart12_owns(const void *p);

cudaError_t cudaMalloc(void **p, size_t size)
{
    if (!p)
        return 1;
    *p = (void *)(uintptr_t)next;
    next += (size + 0xffff) & ~(uint64_t)0xffff;
    return 0;
}

cudaError_t cudaFree(void *p)
{
    return p == NULL || fake_cudart12_owns(p) ? 0 : 1;   /* not ours: invalid */
}

int fake_cudart12_owns(const void *p)
{
    return (uint64_t)(uintptr_t)p >= BASE && (uint64_t)(uintptr_t)p < next;
}
