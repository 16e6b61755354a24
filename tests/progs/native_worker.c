/* A library a Python test loads with ctypes: run_on_native_thread(size)
 * allocates and frees size bytes through the CUDA stand-in on a new native
 * thread, which runs no Python, and waits for it, as PyTorch's backward()
 * waits for its autograd thread (test_pystacks.py); native_loop_ns(pairs)
 * times cudaMallocAsync/cudaFreeAsync pairs on such a thread
 * (tests/bench/bench_pystacks.py); alloc_here_a/_b: two native paths to one
 * allocation, for sites that read alike in Python; on_kept_thread(size):
 * the same on one native thread kept for every call (an autograd thread
 * serves many backward passes); malloc_here(size), free_here(p): an allocation
 * and a free on the calling thread. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <time.h>

static void *worker(void *arg)
{
    void *p = NULL;
    cudaMalloc(&p, (size_t)arg);
    cudaFree(p);
    return NULL;
}

__attribute__((visibility("default"))) void run_on_native_thread(size_t size)
{
    pthread_t t;
    if (pthread_create(&t, NULL, worker, (void *)size) == 0)
        pthread_join(t, NULL);
}

static void *loop(void *arg)
{
    double *io = arg;   /* in: pairs; out: ns per call */
    long pairs = (long)io[0];
    void *p = NULL;
    struct timespec a, b;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &a);
    for (long i = 0; i < pairs; i++) {
        cudaMallocAsync(&p, 4096, 0);
        cudaFreeAsync(p, 0);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &b);
    io[0] = ((b.tv_sec - a.tv_sec) * 1e9 + (b.tv_nsec - a.tv_nsec)) / (2.0 * pairs);
    return NULL;
}

__attribute__((visibility("default"))) double native_loop_ns(long pairs)
{
    double io = (double)pairs;
    pthread_t t;
    if (pthread_create(&t, NULL, loop, &io) != 0)
        return -1;
    pthread_join(t, NULL);
    return io;
}

/* Two native paths to an allocation on the calling thread: the same Python
 * line calling each gives two sites that read alike in Python. */
__attribute__((visibility("default"), noinline)) void alloc_here_a(size_t size)
{
    void *p = NULL;
    cudaMalloc(&p, size);
    __asm__ volatile("" ::: "memory");
}

__attribute__((visibility("default"), noinline)) void alloc_here_b(size_t size)
{
    void *p = NULL;
    cudaMalloc(&p, size);
    __asm__ volatile("" ::: "memory");
}

__attribute__((visibility("default"))) void free_here(void *p)
{
    cudaFree(p);
}

static struct {
    pthread_mutex_t lock;
    pthread_cond_t change;
    size_t size;    /* asked: allocate and free this many bytes; 0: nothing asked */
    bool started;
} kept = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, 0, false};

static void *kept_thread(void *arg)
{
    (void)arg;
    pthread_mutex_lock(&kept.lock);
    for (;;) {
        while (!kept.size)
            pthread_cond_wait(&kept.change, &kept.lock);
        worker((void *)kept.size);
        kept.size = 0;
        pthread_cond_broadcast(&kept.change);
    }
    return NULL;
}

__attribute__((visibility("default"))) void on_kept_thread(size_t size)
{
    pthread_mutex_lock(&kept.lock);
    if (!kept.started) {
        pthread_t t;
        kept.started = pthread_create(&t, NULL, kept_thread, NULL) == 0;
        if (kept.started)
            pthread_detach(t);
    }
    kept.size = size;
    pthread_cond_broadcast(&kept.change);
    while (kept.started && kept.size)
        pthread_cond_wait(&kept.change, &kept.lock);
    pthread_mutex_unlock(&kept.lock);
}

__attribute__((visibility("default"))) void *malloc_here(size_t size)
{
    void *p = NULL;
    cudaMalloc(&p, size);
    return p;
}
