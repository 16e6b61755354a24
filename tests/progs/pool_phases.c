/* Stream-ordered allocations in phases a writer round apart, for
 * test_cost.py: the pool's reservation (read by the writer from the pool,
 * not from CUPTI) must follow each growth and cost no row while it holds.
 * Phase 1: 3 MiB (the stand-in's pool reserves 4 MiB), held until the
 * writer has read the pool; phase 2: 10 MiB more, the same
 * (14 MiB); phase 3: everything freed (the pool keeps its 14 MiB). */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <time.h>

static void pause_ms(long ms)
{
    struct timespec ts = {ms / 1000, (ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

/* The stand-in's count of reads of a pool's reservation (the tracer's
 * writer reads it after each change), or NULL elsewhere. */
static unsigned long (*pool_reads)(void);

/* Returns once the writer has read the pool more than `before` times (a
 * sanitizer on a busy machine can hold its rounds past any fixed pause), at
 * most 30 s; 100 ms where the stand-in does not count. */
static void after_a_pool_read(unsigned long before)
{
    if (!pool_reads) {
        pause_ms(100);
        return;
    }
    for (int i = 0; i < 3000 && pool_reads() == before; i++)
        pause_ms(10);
    pause_ms(20);   /* (the reading's row is kept just after the read) */
}

static unsigned long reads_now(void)
{
    return pool_reads ? pool_reads() : 0;
}

int main(void)
{
    void *a, *b;
    pool_reads = (unsigned long (*)(void))dlsym(RTLD_DEFAULT, "fake_cudart_pool_reads");
    unsigned long before = reads_now();
    if (cudaMallocAsync(&a, 3u << 20, 0) != cudaSuccess)
        return 1;
    after_a_pool_read(before);
    before = reads_now();
    if (cudaMallocAsync(&b, 10u << 20, 0) != cudaSuccess)
        return 1;
    after_a_pool_read(before);
    if (cudaFreeAsync(a, 0) != cudaSuccess || cudaFreeAsync(b, 0) != cudaSuccess)
        return 1;
    pause_ms(100);
    printf("done\n");
    return 0;
}
