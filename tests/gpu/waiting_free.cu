// A synchronizing cudaFree that waits on the GPU while another thread allocates:
// a kernel spins for SPIN_MS on a stream of its own, thread A's cudaFree of a
// block then waits for it (an implicit synchronization), and thread B, started
// 20 ms later, makes N cudaMallocAsync + cudaFreeAsync pairs of 4 KiB on its
// own non-blocking stream. Prints how long the free took and how many of B's
// pairs ended while it waited. fault: the kernel then writes through a bad
// address, so the waiting free fails (the error is sticky: B's later calls
// fail too, counted, not fatal).
// usage: waiting_free SPIN_MS N [fault]; prints "free S s, result R, pairs during it D of N, failed F"
#include <cuda_runtime_api.h>
#include <atomic>
#include <stdint.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

__global__ void spin(long long cycles, int *fault)
{
    long long start = clock64();
    while (clock64() - start < cycles)
        ;
    if (fault)
        *fault = 1;
}

static void *block;
static double free_s;
static cudaError_t free_result;
static std::atomic<int> freeing{1};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void *free_it(void *)
{
    double t0 = now_s();
    free_result = cudaFree(block);
    free_s = now_s() - t0;
    freeing.store(0);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    long spin_ms = atol(argv[1]);
    int n = atoi(argv[2]);
    bool fault = argc > 3 && argv[3][0] == 'f';
    int khz = 0;
    cudaStream_t s, s2;
    if (cudaMalloc(&block, 777777) != cudaSuccess || cudaDeviceGetAttribute(&khz, cudaDevAttrClockRate, 0) ||
        cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) || cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking))
        return 3;
    spin<<<1, 1, 0, s>>>((long long)spin_ms * khz, fault ? (int *)(uintptr_t)0x10 : NULL);
    pthread_t t;
    pthread_create(&t, NULL, free_it, NULL);
    usleep(20000);
    int during = 0, failed = 0;
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMallocAsync(&p, 4096, s2) != cudaSuccess || cudaFreeAsync(p, s2) != cudaSuccess) {
            if (!fault)
                return 4;
            failed++;
        }
        during += freeing.load();
    }
    pthread_join(t, NULL);
    cudaStreamSynchronize(s2);
    if (free_result != cudaSuccess && !fault)
        return 5;
    printf("free %.2f s, result %d, pairs during it %d of %d, failed %d\n", free_s, (int)free_result, during, n,
           failed);
    return 0;
}
