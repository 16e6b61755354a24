/* A known call chain main -> outer_layer -> middle_layer -> inner_layer ->
 * cudaMalloc, so a test can check the recorded stack names them in order. */
#include <cuda_runtime_api.h>
#include <stdio.h>

__attribute__((noinline)) void *inner_layer(size_t n)
{
    void *p = NULL;
    cudaMalloc(&p, n);
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return p;
}

__attribute__((noinline)) void *middle_layer(size_t n)
{
    void *p = inner_layer(n + 1);
    __asm__ volatile("" ::: "memory");
    return p;
}

__attribute__((noinline)) void *outer_layer(size_t n)
{
    void *p = middle_layer(n + 1);
    __asm__ volatile("" ::: "memory");
    return p;
}

int main(void)
{
    void *p = outer_layer(4094);
    printf("%p\n", p);
    return cudaFree(p) == cudaSuccess ? 0 : 1;
}
