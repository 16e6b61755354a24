/* THREADS threads, each N times: an NVTX range around a cudaMalloc/cudaFree
 * pair and a mark inside it, as fast as it can, so that a small queue to the
 * writer overflows. Prints "calls C records R" (allocation calls; range
 * pushes, pops and marks). usage: nvtx_flood N THREADS */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static long n;

static void *work(void *arg)
{
    (void)arg;
    for (long i = 0; i < n; i++) {
        nvtxRangePushA("flood");
        void *p;
        if (cudaMalloc(&p, 1024) == cudaSuccess)
            cudaFree(p);
        nvtxMarkA("inside");
        nvtxRangePop();
    }
    return NULL;
}

int main(int argc, char **argv)
{
    n = argc > 1 ? atol(argv[1]) : 1000;
    int threads = argc > 2 ? atoi(argv[2]) : 4;
    pthread_t t[64];
    threads = threads < 1 ? 1 : threads > 64 ? 64 : threads;
    for (int i = 0; i < threads; i++)
        pthread_create(&t[i], NULL, work, NULL);
    for (int i = 0; i < threads; i++)
        pthread_join(t[i], NULL);
    printf("calls %ld records %ld\n", 2 * n * threads, 3 * n * threads);
    return 0;
}
