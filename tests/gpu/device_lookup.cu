// What the shim's device lookup costs and whether the driver's answer is the
// runtime's (built by check_device_lookup.py: `nvcc device_lookup.cu -lcuda`).
// The shim asks cudaGetDevice after every successful runtime allocation
// (shim/current_device.c), ~80 ns an allocation on the GPU hosts' cost notes;
// cuCtxGetDevice (the current context's device) would do if it always
// answers the same right after a runtime call. Prints:
//   "ns cudaGetDevice X", "ns cuCtxGetDevice Y", "ns cuCtxGetCurrent Z"
//   (median of 9 loops of 1M calls each, on a thread with a current context);
//   per case "case NAME runtime R driver D own W" (after a successful
//   cudaMalloc, cudaMallocAsync or cudaMallocFromPoolAsync in that state; W
//   is the allocation's own device, asked of the pointer), where R and D
//   must be equal, and W tells whether the current device is the right
//   question at all (a stream or a pool of another device);
//   "done 0".
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#define CK(call) do { int r_ = (int)(call); if (r_) { std::printf("error %s %d\n", #call, r_); return 1; } } while (0)

template <class F> static double ns_per_call(F f)
{
    std::vector<double> t;
    for (int k = 0; k < 9; k++) {
        auto a = std::chrono::steady_clock::now();
        for (int i = 0; i < 1000000; i++)
            f();
        auto b = std::chrono::steady_clock::now();
        t.push_back(std::chrono::duration<double, std::nano>(b - a).count() / 1e6);
    }
    std::sort(t.begin(), t.end());
    return t[4];
}

static int both(const char *name, void *p)
{
    int r = -1;
    CUdevice d = -1;
    int own = -1;
    CK(cudaGetDevice(&r));
    CK(cuCtxGetDevice(&d));
    CK(cuPointerGetAttribute(&own, CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL, (CUdeviceptr)p));
    std::printf("case %s runtime %d driver %d own %d\n", name, r, (int)d, own);
    return 0;
}

int main()
{
    int n = 0;
    CK(cudaGetDeviceCount(&n));
    void *p = nullptr;
    CK(cudaMalloc(&p, 1 << 20));   // the runtime's primary context, device 0, current
    CK(both("first cudaMalloc", p));
    int dev;
    CUdevice cd;
    CUcontext cur;
    volatile int sink = 0;
    std::printf("ns cudaGetDevice %.1f\n", ns_per_call([&] { cudaGetDevice(&dev); sink = dev; }));
    std::printf("ns cuCtxGetDevice %.1f\n", ns_per_call([&] { cuCtxGetDevice(&cd); sink = cd; }));
    std::printf("ns cuCtxGetCurrent %.1f\n", ns_per_call([&] { cuCtxGetCurrent(&cur); sink = cur != nullptr; }));
    CK(cudaFree(p));
    for (int k = 0; k < n; k++) {   // each device through the runtime
        CK(cudaSetDevice(k));
        CK(cudaMalloc(&p, 1 << 20));
        char name[64];
        std::snprintf(name, sizeof name, "cudaSetDevice(%d) cudaMalloc", k);
        CK(both(name, p));
        CK(cudaFree(p));
        cudaStream_t s;
        CK(cudaStreamCreate(&s));
        CK(cudaMallocAsync(&p, 1 << 20, s));
        std::snprintf(name, sizeof name, "cudaSetDevice(%d) cudaMallocAsync", k);
        CK(both(name, p));
        CK(cudaFreeAsync(p, s));
        CK(cudaStreamSynchronize(s));
        CK(cudaStreamDestroy(s));
    }
    // a context the driver made current behind the runtime's back: the last device's own (not primary)
    CUdevice last;
    CK(cuDeviceGet(&last, n - 1));
    CUcontext mine;
    CK(cuCtxCreate(&mine, nullptr, 0, last));
    CK(cudaSetDevice(0));
    CK(cuCtxSetCurrent(mine));
    CK(cudaMalloc(&p, 1 << 20));
    CK(both("cuCtxSetCurrent(own context of the last device) cudaMalloc", p));
    CK(cudaFree(p));
    CK(cuCtxSetCurrent(nullptr));   // no current context: the runtime makes its own current again
    CK(cudaMalloc(&p, 1 << 20));
    CK(both("no current context, cudaMalloc", p));
    CK(cudaFree(p));
    CK(cuCtxDestroy(mine));
    if (n > 1) {   // a stream and a pool of device 1 used while device 0 is current
        CK(cudaSetDevice(1));
        cudaStream_t s1;
        CK(cudaStreamCreate(&s1));
        cudaMemPool_t pool1;
        CK(cudaDeviceGetDefaultMemPool(&pool1, 1));
        CK(cudaSetDevice(0));
        int r = (int)cudaMallocAsync(&p, 1 << 20, s1);
        std::printf("note cudaMallocAsync on device 1's stream, device 0 current: result %d\n", r);
        if (r == 0) {
            CK(both("cudaSetDevice(0) cudaMallocAsync on device 1's stream", p));
            CK(cudaFreeAsync(p, s1));
        }
        cudaStream_t s0;
        CK(cudaStreamCreate(&s0));
        r = (int)cudaMallocFromPoolAsync(&p, 1 << 20, pool1, s0);
        std::printf("note cudaMallocFromPoolAsync from device 1's pool, device 0 current: result %d\n", r);
        if (r == 0) {
            CK(both("cudaSetDevice(0) cudaMallocFromPoolAsync from device 1's pool", p));
            CK(cudaFreeAsync(p, s0));
        }
        CK(cudaDeviceSynchronize());
        CK(cudaSetDevice(1));
        CK(cudaDeviceSynchronize());
    }
    std::printf("done %d\n", sink & 0);
    return 0;
}
