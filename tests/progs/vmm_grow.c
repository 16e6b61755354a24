/* The growable-range idiom of CUDA's virtual-memory samples: reserve a range,
 * map N chunks of 2 MiB, releasing each handle right after mapping it, then
 * unmap the whole range with one cuMemUnmap, which frees all N handles.
 * usage: vmm_grow N */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>

#define CHECK(call) do { CUresult r_ = (call); if (r_) { fprintf(stderr, "%s: %d\n", #call, (int)r_); return 1; } } while (0)
#define G (2ull << 20)

int main(int argc, char **argv)
{
    unsigned long long n = argc > 1 ? strtoull(argv[1], NULL, 10) : 1000;
    CUcontext ctx;
    CHECK(cuInit(0));
    CHECK(cuDevicePrimaryCtxRetain(&ctx, 0));
    CHECK(cuCtxSetCurrent(ctx));
    CUmemAllocationProp prop = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUdeviceptr va;
    CHECK(cuMemAddressReserve(&va, n * G, 0, 0, 0));
    for (unsigned long long i = 0; i < n; i++) {
        CUmemGenericAllocationHandle h;
        CHECK(cuMemCreate(&h, G, &prop, 0));
        CHECK(cuMemMap(va + i * G, G, 0, h, 0));
        CHECK(cuMemRelease(h));
    }
    CHECK(cuMemUnmap(va, n * G));
    CHECK(cuMemAddressFree(va, n * G));
    printf("mapped and freed %llu chunks\n", n);
    return 0;
}
