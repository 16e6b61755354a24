// A program that uses only the CUDA driver API (built with `nvcc driver_api.cu
// -lcuda`): cuMemAlloc/cuMemFree, then virtual memory: one handle mapped twice,
// one released while still mapped. Prints what it did, for check_driver.py:
//   "cuMemAlloc_v2 PTR SIZE", "granularity G", "cuMemCreate HANDLE SIZE",
//   "va VA", "done 0".
#include <cuda.h>
#include <cstdio>

#define CK(call) do { CUresult r_ = (call); if (r_) { std::printf("error %s %d\n", #call, (int)r_); return 1; } } while (0)

int main() {
    CK(cuInit(0));
    CUdevice dev;
    CUcontext ctx;
    CK(cuDeviceGet(&dev, 0));
    CK(cuDevicePrimaryCtxRetain(&ctx, dev));
    CK(cuCtxSetCurrent(ctx));
    const size_t sizes[] = {1 << 20, 5 << 20, 12345};
    CUdeviceptr p[3];
    for (int i = 0; i < 3; i++) { CK(cuMemAlloc(&p[i], sizes[i])); std::printf("cuMemAlloc_v2 %#llx %zu\n", (unsigned long long)p[i], sizes[i]); }
    CK(cuMemsetD8(p[1], 7, sizes[1]));
    for (int i = 0; i < 3; i++) CK(cuMemFree(p[i]));

    CUmemAllocationProp prop = {};
    prop.type = CU_MEM_ALLOCATION_TYPE_PINNED;
    prop.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    prop.location.id = dev;
    size_t g = 0;
    CK(cuMemGetAllocationGranularity(&g, &prop, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    std::printf("granularity %zu\n", g);
    CUdeviceptr va;
    CK(cuMemAddressReserve(&va, 8 * g, 0, 0, 0));
    std::printf("va %#llx\n", (unsigned long long)va);
    CUmemGenericAllocationHandle h1, h2;
    CK(cuMemCreate(&h1, 2 * g, &prop, 0)); std::printf("cuMemCreate %#llx %zu\n", (unsigned long long)h1, 2 * g);
    CK(cuMemCreate(&h2, 1 * g, &prop, 0)); std::printf("cuMemCreate %#llx %zu\n", (unsigned long long)h2, 1 * g);
    CK(cuMemMap(va, 2 * g, 0, h1, 0));
    CK(cuMemMap(va + 2 * g, 2 * g, 0, h1, 0));     // the same physical memory, mapped twice
    CK(cuMemMap(va + 4 * g, 1 * g, 0, h2, 0));
    CUmemAccessDesc rw = {};
    rw.location = prop.location;
    rw.flags = CU_MEM_ACCESS_FLAGS_PROT_READWRITE;
    CK(cuMemSetAccess(va, 5 * g, &rw, 1));
    CK(cuMemsetD8(va, 1, 5 * g));
    CK(cuCtxSynchronize());
    CK(cuMemRelease(h2));                          // still mapped: memory stays
    CK(cuMemUnmap(va, 2 * g));
    CK(cuMemRelease(h1));                          // still mapped once
    CK(cuMemUnmap(va + 2 * g, 3 * g));             // frees h1 and h2
    CK(cuMemAddressFree(va, 8 * g));
    std::printf("done 0\n");
    return 0;
}
