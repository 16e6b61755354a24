/* A thread started with a small stack (STACK bytes) calls cudaMalloc and
 * cudaFree USE bytes deep, 100 times; the main thread has called both first
 * (their first calls resolve the real functions). Untraced it runs; traced,
 * taking the call stack on top of the program's own (about 8 KiB) overflowed
 * it: the shim takes none there and counts it (drops: stack_low).
 * usage: small_stack STACK USE   (prints "done") */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>


static size_t use;

__attribute__((noinline)) static void allocate_deep(size_t n)
{
    volatile char pad[n];   /* the program's own stack before the call */
    memset((char *)pad, 1, n);
    for (int i = 0; i < 100; i++) {
        void *p;
        if (cudaMalloc(&p, 1 << 20) == cudaSuccess)
            cudaFree(p);
    }
    __asm__ volatile("" ::"r"(pad) : "memory");
}

static void *worker(void *arg)
{
    (void)arg;
    allocate_deep(use);
    return NULL;
}

int main(int argc, char **argv)
{
    if (argc != 3)
        return 2;
    size_t stack = strtoul(argv[1], NULL, 0);
    use = strtoul(argv[2], NULL, 0);
    void *p;
    if (cudaMalloc(&p, 4096) != cudaSuccess || cudaFree(p) != cudaSuccess)
        return 1;
    pthread_attr_t a;
    pthread_t t;
    if (pthread_attr_init(&a) || pthread_attr_setstacksize(&a, stack) || pthread_create(&t, &a, worker, NULL))
        return 3;
    pthread_join(t, NULL);
    puts("done");
    return 0;
}
