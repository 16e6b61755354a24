/* One thread's cudaFree waits (FAKE_CUDA_SLOW_FREE_MS, a synchronizing free
 * waiting on a kernel) while the main thread makes N cudaMallocAsync /
 * cudaFreeAsync pairs of 4 KiB. usage: slow_free BYTES N [may-fail|no-join]
 * (BYTES: the block whose free waits, as FAKE_CUDA_HANG_FREE_BYTES names it;
 * may-fail: a failed free is said on stdout, not an abort; no-join: main
 * returns with the free still waiting) */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void *block;
static int may_fail;
static cudaError_t free_result;

static void *free_it(void *arg)
{
    (void)arg;
    free_result = cudaFree(block);
    if (free_result != cudaSuccess && !may_fail)
        abort();
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return 2;
    size_t bytes = strtoull(argv[1], NULL, 10);
    int n = atoi(argv[2]);
    may_fail = argc > 3 && strcmp(argv[3], "may-fail") == 0;
    int join = !(argc > 3 && strcmp(argv[3], "no-join") == 0);
    if (cudaMalloc(&block, bytes) != cudaSuccess)
        return 3;
    pthread_t t;
    pthread_create(&t, NULL, free_it, NULL);
    usleep(20000);   /* (the free has begun) */
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMallocAsync(&p, 4096, 0) != cudaSuccess || cudaFreeAsync(p, 0) != cudaSuccess)
            return 4;
    }
    if (join)
        pthread_join(t, NULL);
    if (free_result != cudaSuccess)
        printf("free failed %d\n", (int)free_result);
    printf("%d\n", n);
    return 0;
}
