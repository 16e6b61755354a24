// What cudaDeviceReset and cuDevicePrimaryCtxReset free: allocate one of each
// kind, reset, then ask the runtime about each pointer and free it (a freed
// one is refused). Prints "kind attr_rc type free_rc" per pointer, and the
// device's free memory before and after. usage: probe_reset [runtime|driver]
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    int driver = argc > 1 && !strcmp(argv[1], "driver");
    void *p[6] = {0};
    const char *name[6] = {"cudaMalloc", "cudaMallocManaged", "cudaMallocHost", "cudaHostAlloc_portable",
                           "cudaMallocAsync", "cudaMallocManaged_touched"};
    static char registered[1 << 20];   /* the program's own memory, page-locked */
    int reg_rc = (int)cudaHostRegister(registered, sizeof registered, 0);
    cudaMalloc(&p[0], 256 << 20);
    cudaMallocManaged(&p[1], 256 << 20, cudaMemAttachGlobal);
    cudaMallocHost(&p[2], 256 << 20);
    cudaHostAlloc(&p[3], 256 << 20, cudaHostAllocPortable);
    cudaMallocAsync(&p[4], 256 << 20, 0);
    cudaMallocManaged(&p[5], 256 << 20, cudaMemAttachGlobal);
    cudaMemset(p[5], 1, 256 << 20);
    cudaDeviceSynchronize();
    size_t f0, f1, total;
    cudaMemGetInfo(&f0, &total);
    if (driver) {
        CUdevice d;
        cuDeviceGet(&d, 0);
        printf("reset cuDevicePrimaryCtxReset %d\n", (int)cuDevicePrimaryCtxReset(d));
    } else {
        printf("reset cudaDeviceReset %d\n", (int)cudaDeviceReset());
    }
    cudaMemGetInfo(&f1, &total);
    printf("free before %zu after %zu (MiB %zu -> %zu)\n", f0, f1, f0 >> 20, f1 >> 20);
    int unreg_rc = (int)cudaHostUnregister(registered);   /* refused if the reset unregistered it */
    cudaGetLastError();
    printf("cudaHostRegister reg_rc %d unregister_after_reset_rc %d\n", reg_rc, unreg_rc);
    for (int i = 0; i < 6; i++) {
        struct cudaPointerAttributes a;
        memset(&a, 0, sizeof a);
        cudaError_t e = cudaPointerGetAttributes(&a, p[i]);
        cudaGetLastError();
        cudaError_t fe = i == 2 || i == 3 ? cudaFreeHost(p[i]) : cudaFree(p[i]);
        cudaGetLastError();
        printf("%s attr_rc %d type %d free_rc %d\n", name[i], (int)e, (int)a.type, (int)fe);
    }
    return 0;
}
