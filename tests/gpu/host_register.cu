// Page-locks the program's own host memory through the runtime
// (cudaHostRegister) and the driver (cuMemHostRegister, linked with -lcuda),
// with one refused registration and one refused unregistration, and leaves
// the last range registered at exit. Prints "api PTR SIZE RESULT" per call
// for check_host_register.py (built with `nvcc -cudart shared ... -lcuda`).
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <cstdio>
#include <cstdlib>

int main() {
    char *b1 = (char *)std::malloc(1 << 20), *b2 = (char *)std::malloc(3 << 20), *b3 = (char *)std::malloc(12345);
    if (cudaFree(0) != cudaSuccess) { std::printf("no device\n"); return 1; }
    std::printf("cudaHostRegister %p %d %d\n", (void *)b1, 1 << 20, (int)cudaHostRegister(b1, 1 << 20, cudaHostRegisterDefault));
    std::printf("cudaHostRegister %p %d %d\n", (void *)(b1 + 4096), 8192, (int)cudaHostRegister(b1 + 4096, 8192, 0));
    std::printf("cudaHostUnregister %p %d %d\n", (void *)b1, 1 << 20, (int)cudaHostUnregister(b1));
    std::printf("cudaHostUnregister %p %d %d\n", (void *)b1, 0, (int)cudaHostUnregister(b1));
    std::printf("cuMemHostRegister_v2 %p %d %d\n", (void *)b2, 3 << 20, (int)cuMemHostRegister(b2, 3 << 20, 0));
    std::printf("cuMemHostUnregister %p %d %d\n", (void *)b2, 3 << 20, (int)cuMemHostUnregister(b2));
    std::printf("cudaHostRegister %p %d %d\n", (void *)b3, 12345, (int)cudaHostRegister(b3, 12345, cudaHostRegisterMapped));
    return 0;
}
