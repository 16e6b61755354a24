// CUDA arrays on a real GPU (check_arrays.py): runtime and driver arrays of
// known descriptors, each printed as "api HANDLE BYTES HELD" where BYTES is
// worked out here by hand (texels x texel bytes, summed over mip levels) and
// HELD is what cudaMemGetInfo says the device lost to the call. A texture
// kernel reads the largest one (so it is a real, usable array). The runtime
// array and the driver array named on the "live" line are left to the exit.
#include <cuda.h>
#include <cuda_runtime.h>
#include <stdio.h>

#define RT(call) do { cudaError_t e_ = (call); if (e_) { fprintf(stderr, "%s: %s\n", #call, cudaGetErrorString(e_)); return 1; } } while (0)
#define DR(call) do { CUresult e_ = (call); if (e_) { fprintf(stderr, "%s: %d\n", #call, (int)e_); return 1; } } while (0)

static size_t used(void)
{
    size_t f, t;
    cudaMemGetInfo(&f, &t);
    return t - f;
}

__global__ void sum(cudaTextureObject_t tex, int w, int h, float *out)
{
    float s = 0;
    for (int y = threadIdx.x; y < h; y += blockDim.x)
        for (int x = 0; x < w; x += 64)
            s += tex2D<float4>(tex, x, y).x;
    atomicAdd(out, s);
}

int main(void)
{
    RT(cudaFree(0));   // the context first: its memory is not an array's
    cudaChannelFormatDesc f4 = cudaCreateChannelDesc<float4>(), u1 = cudaCreateChannelDesc<unsigned char>();
    cudaArray_t big, a3, lay, sp;
    cudaMipmappedArray_t mm;
    size_t u = used();
    RT(cudaMallocArray(&big, &f4, 4096, 4096));
    printf("cudaMallocArray %p %zu %zu\n", (void *)big, (size_t)4096 * 4096 * 16, used() - u);
    u = used();
    RT(cudaMalloc3DArray(&a3, &f4, make_cudaExtent(256, 256, 64)));
    printf("cudaMalloc3DArray %p %zu %zu\n", (void *)a3, (size_t)256 * 256 * 64 * 16, used() - u);
    u = used();
    RT(cudaMalloc3DArray(&lay, &u1, make_cudaExtent(2048, 2048, 16), cudaArrayLayered));
    printf("cudaMalloc3DArray %p %zu %zu\n", (void *)lay, (size_t)2048 * 2048 * 16, used() - u);
    u = used();
    RT(cudaMallocMipmappedArray(&mm, &f4, make_cudaExtent(2048, 2048, 0), 3));
    printf("cudaMallocMipmappedArray %p %zu %zu\n", (void *)mm, (size_t)(2048 * 2048 + 1024 * 1024 + 512 * 512) * 16, used() - u);
    int sparse_ok = 0;
    cudaDeviceGetAttribute(&sparse_ok, cudaDevAttrSparseCudaArraySupported, 0);
    u = used();
    if (sparse_ok && cudaMalloc3DArray(&sp, &u1, make_cudaExtent(8192, 8192, 0), cudaArraySparse) == cudaSuccess)
        printf("cudaMalloc3DArray %p %d %zu\n", (void *)sp, 0, used() - u);
    else
        sp = 0;

    CUarray d3;
    CUDA_ARRAY3D_DESCRIPTOR d = {};
    d.Width = 1024; d.Height = 1024; d.Depth = 32; d.Format = CU_AD_FORMAT_HALF; d.NumChannels = 2;
    u = used();
    DR(cuArray3DCreate(&d3, &d));
    printf("cuArray3DCreate_v2 %p %zu %zu\n", (void *)d3, (size_t)1024 * 1024 * 32 * 4, used() - u);
    CUarray d2;
    CUDA_ARRAY_DESCRIPTOR d2d = {};
    d2d.Width = 3000; d2d.Height = 3000; d2d.Format = CU_AD_FORMAT_UNSIGNED_INT8; d2d.NumChannels = 4;
    u = used();
    DR(cuArrayCreate(&d2, &d2d));
    printf("cuArrayCreate_v2 %p %zu %zu\n", (void *)d2, (size_t)3000 * 3000 * 4, used() - u);

    // read the big array through a texture, so it is a real, usable array
    cudaResourceDesc rd = {};
    rd.resType = cudaResourceTypeArray;
    rd.res.array.array = big;
    cudaTextureDesc td = {};
    td.readMode = cudaReadModeElementType;
    cudaTextureObject_t tex;
    RT(cudaCreateTextureObject(&tex, &rd, &td, NULL));
    float *out;
    RT(cudaMalloc(&out, sizeof(float)));
    RT(cudaMemset(out, 0, sizeof(float)));
    sum<<<1, 256>>>(tex, 4096, 4096, out);
    float s;
    RT(cudaMemcpy(&s, out, sizeof s, cudaMemcpyDeviceToHost));
    printf("texture sum %.1f\n", s);
    RT(cudaDestroyTextureObject(tex));
    RT(cudaFree(out));

    RT(cudaFreeArray(a3));
    RT(cudaFreeArray(lay));
    RT(cudaFreeMipmappedArray(mm));
    if (sp)
        RT(cudaFreeArray(sp));
    DR(cuArrayDestroy(d3));
    printf("live %p %p\n", (void *)big, (void *)d2);
    return 0;
}
