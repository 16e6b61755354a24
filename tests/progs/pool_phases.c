/* Stream-ordered allocations in phases a writer round apart, for
 * test_cost.py: the pool's reservation (read by the writer from the pool,
 * not from CUPTI) must follow each growth and cost no row while it holds.
 * Phase 1: 3 MiB (the stand-in's pool reserves 4 MiB); phase 2: 10 MiB more
 * (14 MiB); phase 3: everything freed (the pool keeps its 14 MiB). */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <time.h>

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

int main(void)
{
    void *a, *b;
    if (cudaMallocAsync(&a, 3u << 20, 0) != cudaSuccess)
        return 1;
    pause_ms(100);
    if (cudaMallocAsync(&b, 10u << 20, 0) != cudaSuccess)
        return 1;
    pause_ms(100);
    if (cudaFreeAsync(a, 0) != cudaSuccess || cudaFreeAsync(b, 0) != cudaSuccess)
        return 1;
    pause_ms(100);
    printf("done\n");
    return 0;
}
