/* A Python extension's stand-in: a library that calls the CUDA runtime it
 * was linked against, a renamed copy as a wheel repaired by auditwheel
 * bundles (libcudart-<hash>.so.13), loaded by local_loader RTLD_LOCAL as
 * Python loads extensions. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int ext_work(void)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, 4096);
    printf("cudaMalloc %d\n", (int)e);
    if (!e)
        printf("cudaFree %d\n", (int)cudaFree(p));
    e = cudaMallocHost(&p, 8192);
    printf("cudaMallocHost %d\n", (int)e);
    if (!e)
        printf("cudaFreeHost %d\n", (int)cudaFreeHost(p));
    return (int)e;
}
