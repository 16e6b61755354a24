/* Allocates until the device is full: the last cudaMalloc fails with
 * cudaErrorMemoryAllocation, then a cudaMallocPitch of two rows of the same
 * width fails too. Prints the live bytes and the failed requests. */
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
            /* a failed pitched allocation leaves pitch as it was: whatever
             * was in it must not become the recorded size */
            size_t pitch = 0xdeadbeef;
            e = cudaMallocPitch(&p, &pitch, chunk, 2);
            printf("pitch failed %zu result %d\n", chunk * 2, (int)e);
            return 0;
        }
        live += chunk;
    }
    return 1;
}
