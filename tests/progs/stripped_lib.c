/* A shared library stripped of its .symtab (as cuBLAS is): only exported
 * functions keep a name. hidden_helper is a static function placed right
 * after exported_before_helper (built with -fno-toplevel-reorder) and calls
 * cudaMalloc: a symbolizer that takes the nearest symbol below an address
 * names hidden_helper's frame "exported_before_helper", which is wrong. */
#include <cuda_runtime_api.h>
#include <stddef.h>

__attribute__((noinline)) int exported_before_helper(int x)
{
    return x * 3 + 1;
}

static __attribute__((noinline)) void *hidden_helper(size_t n)
{
    void *p = NULL;
    cudaMalloc(&p, n);
    __asm__ volatile("" ::: "memory"); /* keep the call from becoming a tail call */
    return p;
}

__attribute__((noinline)) void *exported_entry(size_t n)
{
    void *p = hidden_helper(n);
    __asm__ volatile("" ::: "memory");
    return p;
}
