/* A test suite's way with a device: each case allocates device, managed,
 * pinned and pool memory, then resets the device (cudaDeviceReset, or the
 * driver's cuDevicePrimaryCtxReset reached through cuGetProcAddress as a
 * framework reaches it) instead of freeing; a CUDA sample's way at the end.
 * Prints "case N" per case. usage: device_reset CASES [driver|driver-v1|other-device] */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

int main(int argc, char **argv)
{
    int cases = argc > 1 ? atoi(argv[1]) : 3, driver = argc > 2 && !strncmp(argv[2], "driver", 6);
    int version = argc > 2 && !strcmp(argv[2], "driver-v1") ? 7000 : 12000;   /* v1: as a static runtime asks */
    CUresult (*reset)(CUdevice) = NULL;
    if (driver) {
        void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
        gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
        CUdriverProcAddressQueryResult st;
        if (!gpa || gpa("cuDevicePrimaryCtxReset", (void **)&reset, version, 0, &st) || !reset) {
            fprintf(stderr, "no cuDevicePrimaryCtxReset\n");
            return 1;
        }
    }
    if (argc > 2 && !strcmp(argv[2], "other-device")) {
        /* pinned memory made while device 0 is current, device memory on device 1 only, device 1 reset:
         * the pinned buffer is device 0's context's and outlives it (needs FAKE_CUDA_DEVICE_COUNT=2) */
        void *h, *d;
        if (cudaMallocHost(&h, 4 << 20) || cudaSetDevice(1) || cudaMalloc(&d, 64 << 20))
            return 4;
        int rc = (int)cudaDeviceReset();
        printf("reset %d freehost %d\n", rc, (cudaSetDevice(0), (int)cudaFreeHost(h)));
        return 0;
    }
    for (int c = 0; c < cases; c++) {
        void *d[4], *m, *h, *p;
        for (int i = 0; i < 4; i++)
            if (cudaMalloc(&d[i], 64 << 20))
                return 2;
        if (cudaMallocManaged(&m, 8 << 20, cudaMemAttachGlobal) || cudaMallocHost(&h, 4 << 20) ||
            cudaMallocAsync(&p, 2 << 20, 0))
            return 3;
        int rc = driver ? (int)reset(0) : (int)cudaDeviceReset();
        printf("case %d reset %d\n", c, rc);
    }
    return 0;
}
