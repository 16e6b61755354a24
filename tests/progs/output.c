/* Writes to stdout and stderr, allocates, and exits with code 3: the shim must
 * leave output and exit code exactly as they are. */
#include <cuda_runtime_api.h>
#include <stdio.h>

int main(void)
{
    void *p;
    for (int i = 0; i < 20; i++) {
        cudaMalloc(&p, 100 * (size_t)(i + 1));
        printf("line %d %d\n", i, (int)cudaGetLastError());
    }
    fprintf(stderr, "to stderr\n");
    return 3;
}
