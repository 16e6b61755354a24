/* Allocates until the device is full: the last cudaMalloc fails with
 * cudaErrorMemoryAllocation. Prints the live bytes and the failed request. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char **argv)
{
    size_t chunk = argc > 1 ? strtoull(argv[1], NULL, 10) : (1u << 20);
    size_t live = 0;
    void *p;
    for (int i = 0; i < 100000; i++) {
        cudaError_t e = cudaMalloc(&p, chunk);
        if (e != cudaSuccess) {
            printf("failed %zu result %d live %zu\n", chunk, (int)e, live);
            return 0;
        }
        live += chunk;
    }
    return 1;
}
