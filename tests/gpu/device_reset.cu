// A test suite's way with a device, on a real one: each case allocates
// device (4 x 64 MiB), managed (8 MiB, touched), pinned (4 MiB) and pool
// (2 MiB) memory, then resets the device instead of freeing: cudaDeviceReset,
// or ("driver") the driver's cuDevicePrimaryCtxReset through
// cuGetProcAddress. Prints "case N reset RC free_mib_after" per case (the
// device's free memory after the reset, in MiB: what the reset gave back).
// usage: device_reset CASES [driver]   (nvcc, -cudart shared or static)
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cstdio>
#include <cstdlib>
#include <cstring>

int main(int argc, char **argv) {
    int cases = argc > 1 ? std::atoi(argv[1]) : 3, driver = argc > 2 && !std::strcmp(argv[2], "driver");
    CUresult (*reset)(CUdevice) = nullptr;
    if (cudaFree(0) != cudaSuccess) { std::printf("no device\n"); return 1; }
    if (driver) {
        CUdriverProcAddressQueryResult st;
        if (cuGetProcAddress("cuDevicePrimaryCtxReset", (void **)&reset, 12000, 0, &st) || !reset) {
            std::printf("no cuDevicePrimaryCtxReset\n");
            return 1;
        }
    }
    for (int c = 0; c < cases; c++) {
        void *d[4], *m, *h, *p;
        for (int i = 0; i < 4; i++)
            if (cudaMalloc(&d[i], 64 << 20)) return 2;
        if (cudaMallocManaged(&m, 8 << 20) || cudaMemset(m, 1, 8 << 20) || cudaMallocHost(&h, 4 << 20) ||
            cudaMallocAsync(&p, 2 << 20, 0) || cudaDeviceSynchronize())
            return 3;
        int rc = driver ? (int)reset(0) : (int)cudaDeviceReset();
        size_t fr = 0, tot = 0;
        cudaMemGetInfo(&fr, &tot);
        std::printf("case %d reset %d\n", c, rc);
    }
    return 0;
}
