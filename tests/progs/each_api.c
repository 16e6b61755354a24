/* Calls every traced runtime allocation API once with known sizes and prints
 * "api ptr size" for each, so a test can compare the trace with what the
 * program itself saw. Frees everything it allocated. */
#include <cuda_runtime_api.h>
#include <stdio.h>

#define CHECK(call) do { cudaError_t e_ = (call); if (e_) { fprintf(stderr, "%s: %d\n", #call, e_); return 1; } } while (0)

int main(void)
{
    void *d, *a, *ap, *m, *h1, *h2, *pp;
    size_t pitch;
    cudaStream_t s;
    cudaMemPool_t pool;
    struct cudaPitchedPtr p3;
    CHECK(cudaStreamCreate(&s));
    CHECK(cudaDeviceGetDefaultMemPool(&pool, 0));
    CHECK(cudaMalloc(&d, 1000));                  printf("cudaMalloc %p 1000\n", d);
    CHECK(cudaMallocAsync(&a, 2000, s));          printf("cudaMallocAsync %p 2000\n", a);
    CHECK(cudaMallocFromPoolAsync(&ap, 3000, pool, s)); printf("cudaMallocFromPoolAsync %p 3000\n", ap);
    CHECK(cudaMallocManaged(&m, 4000, cudaMemAttachGlobal)); printf("cudaMallocManaged %p 4000\n", m);
    CHECK(cudaMallocHost(&h1, 5000));             printf("cudaMallocHost %p 5000\n", h1);
    CHECK(cudaHostAlloc(&h2, 6000, cudaHostAllocDefault)); printf("cudaHostAlloc %p 6000\n", h2);
    CHECK(cudaMallocPitch(&pp, &pitch, 700, 10)); printf("cudaMallocPitch %p %zu\n", pp, pitch * 10);
    CHECK(cudaMalloc3D(&p3, (struct cudaExtent){.width = 300, .height = 4, .depth = 5})); printf("cudaMalloc3D %p %zu\n", p3.ptr, p3.pitch * 4 * 5);
    printf("stream %p\n", (void *)s);
    CHECK(cudaFree(d));
    CHECK(cudaFreeAsync(a, s));
    CHECK(cudaFreeAsync(ap, s));
    CHECK(cudaFree(m));
    CHECK(cudaFreeHost(h1));
    CHECK(cudaFreeHost(h2));
    CHECK(cudaFree(pp));
    CHECK(cudaFree(p3.ptr));
    CHECK(cudaStreamDestroy(s));
    return 0;
}
