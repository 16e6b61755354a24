/* Page-locks the program's own host memory through the runtime
 * (cudaHostRegister) and the driver (its export and cuGetProcAddress, as a
 * framework reaches it), with one refusal of each kind, and prints
 * "api ptr size result" per call so a test can compare the trace with what
 * the program saw. The last range stays registered at exit. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>

typedef CUresult (*gpa_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);

int main(void)
{
    char *b1 = malloc(10000), *b2 = malloc(20000), *b3 = malloc(30000);
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    gpa_fn gpa = h ? (gpa_fn)dlsym(h, "cuGetProcAddress_v2") : NULL;
    CUresult (*reg)(void *, size_t, unsigned int) = NULL;
    CUresult (*unreg)(void *) = h ? (CUresult(*)(void *))dlsym(h, "cuMemHostUnregister") : NULL;
    CUdriverProcAddressQueryResult st;
    if (!b1 || !b2 || !b3 || !gpa || gpa("cuMemHostRegister", (void **)&reg, 13000, 0, &st) || !reg || !unreg) {
        fprintf(stderr, "setup failed\n");
        return 1;
    }
    printf("cudaHostRegister %p 10000 %d\n", (void *)b1, (int)cudaHostRegister(b1, 10000, cudaHostRegisterDefault));
    printf("cudaHostRegister %p 5000 %d\n", (void *)(b1 + 4096), (int)cudaHostRegister(b1 + 4096, 5000, 0));
    printf("cudaHostUnregister %p 10000 %d\n", (void *)b1, (int)cudaHostUnregister(b1));
    printf("cudaHostUnregister %p 0 %d\n", (void *)b1, (int)cudaHostUnregister(b1));
    printf("cuMemHostRegister_v2 %p 20000 %d\n", (void *)b2, (int)reg(b2, 20000, 0));
    printf("cuMemHostUnregister %p 20000 %d\n", (void *)b2, (int)unreg(b2));
    printf("cuMemHostRegister_v2 %p 30000 %d\n", (void *)b3, (int)cuMemHostRegister(b3, 30000, 0));
    return 0;
}
