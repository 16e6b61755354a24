/* The CUDA virtual-memory API with a planted pattern (G = 2 MiB granularity):
 *   reserve 16G of addresses
 *   h1 = 2G on device 0, h2 = 1G on device 0, hh = 1G at a host location
 *   release hh at once (never mapped)
 *   map h1 at va and again at va+2G (two mappings, one physical allocation),
 *   map h2 at va+4G
 *   release h2 while mapped (its memory stays until unmapped)
 *   unmap [va, va+2G): h1 keeps its second mapping
 *   release h1 while mapped
 *   unmap [va+2G, va+5G): one call removes the last mappings of h1 and h2,
 *   which frees both
 *   free the reservation
 * Prints the handles and the reserved address. */
#include <cuda.h>
#include <stdio.h>

#define CHECK(call) do { CUresult r_ = (call); if (r_) { fprintf(stderr, "%s: %d\n", #call, (int)r_); return 1; } } while (0)
#define G (2ull << 20)

int main(void)
{
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CUmemAllocationProp dev = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemAllocationProp host = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_HOST, 0}};
    size_t gran = 0;
    CHECK(cuMemGetAllocationGranularity(&gran, &dev, CU_MEM_ALLOC_GRANULARITY_MINIMUM));
    if (gran != G)
        return 2;
    CUdeviceptr va;
    CUmemGenericAllocationHandle h1, h2, hh;
    CHECK(cuMemAddressReserve(&va, 16 * G, 0, 0, 0));
    CHECK(cuMemCreate(&h1, 2 * G, &dev, 0));
    CHECK(cuMemCreate(&h2, 1 * G, &dev, 0));
    CHECK(cuMemCreate(&hh, 1 * G, &host, 0));
    printf("handles %#llx %#llx %#llx va %#llx\n", (unsigned long long)h1, (unsigned long long)h2,
           (unsigned long long)hh, (unsigned long long)va);
    CHECK(cuMemRelease(hh));
    CHECK(cuMemMap(va, 2 * G, 0, h1, 0));
    CHECK(cuMemMap(va + 2 * G, 2 * G, 0, h1, 0));
    CHECK(cuMemMap(va + 4 * G, 1 * G, 0, h2, 0));
    CUmemAccessDesc rw = {{CU_MEM_LOCATION_TYPE_DEVICE, 0}, CU_MEM_ACCESS_FLAGS_PROT_READWRITE};
    CHECK(cuMemSetAccess(va, 5 * G, &rw, 1));
    CHECK(cuMemRelease(h2));
    CHECK(cuMemUnmap(va, 2 * G));
    CHECK(cuMemRelease(h1));
    CHECK(cuMemUnmap(va + 2 * G, 3 * G));
    CHECK(cuMemAddressFree(va, 16 * G));
    return 0;
}
