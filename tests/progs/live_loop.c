/* A marked training loop to read while it runs (test_trace_files.py's
 * StillWritten): argv[1] steps (default 2000), each marked with
 * gputrace_iteration (batch size 32), argv[2] 1 MiB temporaries allocated
 * and freed (default 200), one 64 KiB allocation kept (memory grows 64 KiB a
 * step) and argv[3] microseconds of pause (default 2000). Prints "steps N". */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "gputrace.h"

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 2000, per = argc > 2 ? atol(argv[2]) : 200;
    long pause_us = argc > 3 ? atol(argv[3]) : 2000;
    void *weights, *p;
    if (cudaMalloc(&weights, 64u << 20) != cudaSuccess)
        return 1;
    for (long i = 0; i < steps; i++) {
        gputrace_iteration(i, 32);
        for (long k = 0; k < per; k++)
            if (cudaMalloc(&p, 1u << 20) != cudaSuccess || cudaFree(p) != cudaSuccess)
                return 1;
        if (cudaMalloc(&p, 64u << 10) != cudaSuccess)   /* kept */
            return 1;
        if (pause_us)
            usleep((useconds_t)pause_us);
    }
    printf("steps %ld\n", steps);
    return 0;
}
