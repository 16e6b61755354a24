/* main -> exported_entry (libstripped.so) -> hidden_helper -> cudaMalloc */
#include <cuda_runtime_api.h>
#include <stddef.h>
#include <stdio.h>

void *exported_entry(size_t n);

int main(void)
{
    void *p = exported_entry(4096);
    printf("%s\n", p ? "allocated" : "failed");
    return cudaFree(p) == cudaSuccess ? 0 : 1;
}
