// A CUDA C program built with `nvcc -cudart shared`: allocates and frees a
// known pattern through every runtime allocation API, prints what it did.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void fill(float *p, int n) { int i = blockIdx.x * blockDim.x + threadIdx.x; if (i < n) p[i] = i; }

int main() {
    const size_t sizes[] = {1 << 20, 3 << 20, 12345, 1 << 26};
    void *p[4];
    for (int i = 0; i < 4; i++) { cudaMalloc(&p[i], sizes[i]); printf("cudaMalloc %p %zu\n", p[i], sizes[i]); }
    fill<<<(1 << 18) / 256, 256>>>((float *)p[0], 1 << 18);
    cudaStream_t s; cudaStreamCreate(&s);
    void *a; cudaMallocAsync(&a, 5 << 20, s); printf("cudaMallocAsync %p %d\n", a, 5 << 20);
    cudaFreeAsync(a, s);
    void *h; cudaMallocHost(&h, 2 << 20); printf("cudaMallocHost %p %d\n", h, 2 << 20);
    void *m; cudaMallocManaged(&m, 1 << 20); printf("cudaMallocManaged %p %d\n", m, 1 << 20);
    size_t pitch; void *pp; cudaMallocPitch(&pp, &pitch, 1000, 100); printf("cudaMallocPitch %p %zu\n", pp, pitch * 100);
    void *fail; cudaError_t e = cudaMalloc(&fail, (size_t)1 << 50); printf("cudaMalloc failed %d\n", (int)e);
    cudaStreamSynchronize(s);
    for (int i = 0; i < 4; i++) cudaFree(p[i]);
    cudaFreeHost(h); cudaFree(m); cudaFree(pp);
    cudaStreamDestroy(s);
    printf("done %d\n", (int)cudaGetLastError());
    return 0;
}
