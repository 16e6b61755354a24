/* A CUDA 12 extension's stand-in: calls the libcudart.so.12 it was linked
 * with (tests/fake_cuda12), loaded RTLD_LOCAL beside one that calls CUDA 13's
 * runtime (bundled_ext). Says which runtime answered. */
#include <stddef.h>
#include <stdio.h>

int cudaMalloc(void **p, size_t size);
int cudaFree(void *p);
int fake_cudart12_owns(const void *p);

int ext_work(void)
{
    void *p = NULL;
    int e = cudaMalloc(&p, 1 << 20);
    printf("cuda 12 extension: cudaMalloc %d from %s\n", e, fake_cudart12_owns(p) ? "its own runtime" : "another runtime");
    int f = cudaFree(p);
    printf("cuda 12 extension: cudaFree %d\n", f);
    return e || f;
}
