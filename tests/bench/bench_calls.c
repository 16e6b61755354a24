/* Times N cudaMallocAsync/cudaFreeAsync pairs made from a call depth of D
 * frames (so 32-frame stacks are real), and prints ns per call. The same
 * binary runs bare and under the shim, side by side, in bench_shim.py. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static long pairs;
static double ns_per_call;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) static void loop(void)
{
    void *p;
    cudaStream_t s = 0;
    double t0 = now();
    for (long i = 0; i < pairs; i++) {
        cudaMallocAsync(&p, 4096, s);
        cudaFreeAsync(p, s);
    }
    ns_per_call = (now() - t0) / (2.0 * pairs);
}

__attribute__((noinline)) static void descend(int depth)
{
    if (depth > 0) {
        descend(depth - 1);
        __asm__ volatile("" ::: "memory");
    } else {
        loop();
    }
}

int main(int argc, char **argv)
{
    pairs = argc > 1 ? atol(argv[1]) : 200000;
    int depth = argc > 2 ? atoi(argv[2]) : 0;
    void *warm;
    cudaMalloc(&warm, 1); /* the trace starts here, outside the timed loop */
    descend(depth);
    printf("ns_per_call=%.1f\n", ns_per_call);
    return 0;
}
