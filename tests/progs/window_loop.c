/* A long job in miniature for the flight recorder tests (test_window.py):
 * at the start an allocation kept to the end (1 MiB, never freed), a spike
 * of 1 GiB freed at once (the whole run's peak), one held until the end
 * (2 MiB) and a failed allocation; then for argv[1] ms (default 2500) a 4 KiB
 * temporary every 5 ms; argv[2] more 8 KiB allocations at the start, never
 * freed (default none). Prints "temporaries N". */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
    double run_ms = argc > 1 ? atof(argv[1]) : 2500;
    void *kept, *spike, *held, *huge, *tmp;
    if (cudaMalloc(&kept, 1u << 20) != cudaSuccess || cudaMalloc(&spike, 1u << 30) != cudaSuccess ||
        cudaFree(spike) != cudaSuccess || cudaMalloc(&held, 2u << 20) != cudaSuccess)
        return 1;
    if (cudaMalloc(&huge, (size_t)1 << 40) == cudaSuccess) /* beyond the stand-in's 16 GiB */
        return 1;
    for (long i = 0, more = argc > 2 ? atol(argv[2]) : 0; i < more; i++)
        if (cudaMalloc(&tmp, 8192) != cudaSuccess)
            return 1;
    long n = 0;
    struct timespec pause = {0, 5000000};
    for (double t0 = now_ms(); now_ms() - t0 < run_ms; n++) {
        if (cudaMalloc(&tmp, 4096) != cudaSuccess || cudaFree(tmp) != cudaSuccess)
            return 1;
        nanosleep(&pause, NULL);
    }
    if (cudaFree(held) != cudaSuccess)
        return 1;
    printf("temporaries %ld\n", n);
    return 0;
}
