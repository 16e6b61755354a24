/* A program that looks like a Python the shim does not know: it exports
 * Py_Version (argv[1] in hex, e.g. 0x030E00F0 for 3.14.0 final, set before
 * the first CUDA call) and no interpreter. test_pystacks.py checks that the
 * trace says Python frames are off, once, and has native stacks only. */
#include <cuda_runtime_api.h>
#include <stdlib.h>

__attribute__((visibility("default"))) unsigned long Py_Version;

int main(int argc, char **argv)
{
    Py_Version = argc > 1 ? strtoul(argv[1], NULL, 16) : 0x030E00F0ul;
    void *p = NULL;
    cudaMalloc(&p, 5001);
    cudaFree(p);
    return 0;
}
