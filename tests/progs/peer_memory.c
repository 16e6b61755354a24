/* Memory this process holds beside memory other processes own and it maps,
 * as NCCL and CUDA IPC leave it (G = 2 MiB granularity):
 *   cudaMalloc 1 MiB (kept to the end)
 *   h1 = 4G: map at va, release (still mapped), retain at va (same handle),
 *            unmap: the retained reference keeps its memory
 *   h2 = 2G: map at va+4G, retain, release (the retained reference is left),
 *            unmap: still held
 *   print the device bytes the driver holds (h1 + h2 + 1 MiB: the peak)
 *   release h1, release h2: now both are freed
 *   imported = 8G from another process: map at va+8G, release (left mapped)
 *   cudaIpcOpenMemHandle of a 6G range, closed; cuIpcOpenMemHandle of a 3G
 *   range, left open
 * The stand-in's shareable and IPC handles carry the size of the other
 * process's allocation (fake_libcuda.c). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>

#define CHECK(call) do { long r_ = (long)(call); if (r_) { fprintf(stderr, "%s: %ld\n", #call, r_); return 1; } } while (0)
#define G (2ull << 20)

unsigned long long fake_cuda_device_used(int dev);

int main(void)
{
    void *small;
    CHECK(cudaMalloc(&small, 1 << 20));
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CUmemAllocationProp dev = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUdeviceptr va;
    CUmemGenericAllocationHandle h1, h2, r1, r2, imp;
    CHECK(cuMemAddressReserve(&va, 16 * G, 0, 0, 0));

    CHECK(cuMemCreate(&h1, 4 * G, &dev, 0));
    CHECK(cuMemMap(va, 4 * G, 0, h1, 0));
    CHECK(cuMemRelease(h1));
    CHECK(cuMemRetainAllocationHandle(&r1, (void *)(uintptr_t)(va + G)));
    CHECK(cuMemUnmap(va, 4 * G));

    CHECK(cuMemCreate(&h2, 2 * G, &dev, 0));
    CHECK(cuMemMap(va + 4 * G, 2 * G, 0, h2, 0));
    CHECK(cuMemRetainAllocationHandle(&r2, (void *)(uintptr_t)(va + 4 * G)));
    CHECK(cuMemRelease(h2));
    CHECK(cuMemUnmap(va + 4 * G, 2 * G));
    printf("peak held %llu\n", fake_cuda_device_used(0));
    CHECK(cuMemRelease(r1));
    CHECK(cuMemRelease(r2));

    CHECK(cuMemImportFromShareableHandle(&imp, (void *)(uintptr_t)(8 * G), CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR));
    CHECK(cuMemMap(va + 8 * G, 8 * G, 0, imp, 0));
    CHECK(cuMemRelease(imp));
    printf("imported held %llu\n", fake_cuda_device_used(0));

    cudaIpcMemHandle_t rh;
    CUipcMemHandle dh;
    unsigned long long six = 6 * G, three = 3 * G;
    memset(&rh, 0, sizeof rh);
    memset(&dh, 0, sizeof dh);
    memcpy(rh.reserved, &six, sizeof six);
    memcpy(dh.reserved, &three, sizeof three);
    void *p6;
    CUdeviceptr p3;
    CHECK(cudaIpcOpenMemHandle(&p6, rh, cudaIpcMemLazyEnablePeerAccess));
    CHECK(cuIpcOpenMemHandle(&p3, dh, CU_IPC_MEM_LAZY_ENABLE_PEER_ACCESS));
    printf("ipc held %llu\n", fake_cuda_device_used(0));
    CHECK(cudaIpcCloseMemHandle(p6));
    printf("end held %llu\n", fake_cuda_device_used(0));
    return 0;
}
