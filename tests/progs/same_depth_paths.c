/* Allocation paths that reach cudaMalloc at the same stack depth: path_a and
 * path_b have the same frame and are called, in a pseudo-random order, from
 * one call site through a function pointer, so the stack pointer at the
 * allocation is the same for both and only the frames above differ. path_a
 * allocates 4096 bytes, path_b 8192; a recursion of depth 1-3 in front of
 * some calls moves the whole chain. The recorded stack of every allocation
 * must name its own path (the shim's per-thread stack memo is keyed by the
 * stack depth and checked against the stack). usage: same_depth_paths [N] */
#include <cuda_runtime_api.h>
#include <stdlib.h>

__attribute__((noinline)) static void *alloc_here(size_t n)
{
    void *p = NULL;
    cudaMalloc(&p, n);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *path_a(size_t n)
{
    void *p = alloc_here(n);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *path_b(size_t n)
{
    void *p = alloc_here(2 * n);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *nest(void *(*fn)(size_t), int depth)
{
    void *p = depth > 0 ? nest(fn, depth - 1) : fn(4096);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 2000;
    void *(*const paths[2])(size_t) = {path_a, path_b};
    unsigned x = 12345;
    for (int i = 0; i < n; i++) {
        x = x * 1103515245u + 12345u;
        void *p = nest(paths[(x >> 16) & 1], (int)((x >> 20) % 4) == 3 ? 1 + (int)((x >> 24) % 3) : 0);
        if (cudaFree(p) != cudaSuccess)
            return 1;
    }
    return 0;
}
