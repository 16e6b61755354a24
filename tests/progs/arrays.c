/* CUDA arrays through the runtime and the driver: 1D, 2D, 3D, layered,
 * mipmapped and sparse, with known descriptors. Prints "api handle bytes"
 * for each (bytes: texels x texel bytes summed over mip levels, worked out
 * here by hand, not by gputrace's rule), then frees all but two: "leak" lines
 * name the runtime array and the driver array left live at exit. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>

#define RT(call) do { cudaError_t e_ = (call); if (e_) { fprintf(stderr, "%s: %d\n", #call, e_); return 1; } } while (0)
#define DR(call) do { CUresult e_ = (call); if (e_) { fprintf(stderr, "%s: %d\n", #call, e_); return 1; } } while (0)

int main(void)
{
    struct cudaChannelFormatDesc f4 = cudaCreateChannelDesc(32, 32, 32, 32, cudaChannelFormatKindFloat); /* 16 B */
    struct cudaChannelFormatDesc u1 = cudaCreateChannelDesc(8, 0, 0, 0, cudaChannelFormatKindUnsigned);   /* 1 B */
    cudaArray_t a1, a2, a3, al, sp;
    cudaMipmappedArray_t mm;
    RT(cudaMallocArray(&a1, &u1, 1000, 0, 0));            printf("cudaMallocArray %p %d\n", (void *)a1, 1000);
    RT(cudaMallocArray(&a2, &f4, 64, 32, 0));             printf("cudaMallocArray %p %d\n", (void *)a2, 64 * 32 * 16);
    RT(cudaMalloc3DArray(&a3, &f4, (struct cudaExtent){16, 8, 4}, 0)); printf("cudaMalloc3DArray %p %d\n", (void *)a3, 16 * 8 * 4 * 16);
    /* layered: 5 layers of 32 x 16, one byte a texel */
    RT(cudaMalloc3DArray(&al, &u1, (struct cudaExtent){32, 16, 5}, cudaArrayLayered)); printf("cudaMalloc3DArray %p %d\n", (void *)al, 32 * 16 * 5);
    /* mipmapped 64 x 32 of 16 B, 3 levels: 64x32 + 32x16 + 16x8 texels */
    RT(cudaMallocMipmappedArray(&mm, &f4, (struct cudaExtent){64, 32, 0}, 3, 0)); printf("cudaMallocMipmappedArray %p %d\n", (void *)mm, (64 * 32 + 32 * 16 + 16 * 8) * 16);
    /* sparse: no memory until the program maps some */
    RT(cudaMalloc3DArray(&sp, &u1, (struct cudaExtent){4096, 4096, 0}, cudaArraySparse)); printf("cudaMalloc3DArray %p %d\n", (void *)sp, 0);

    CUarray d1, d3;
    CUmipmappedArray dm;
    CUDA_ARRAY_DESCRIPTOR dd = {.Width = 100, .Height = 10, .Format = CU_AD_FORMAT_HALF, .NumChannels = 2};  /* 4 B */
    DR(cuArrayCreate(&d1, &dd));                          printf("cuArrayCreate_v2 %p %d\n", (void *)d1, 100 * 10 * 4);
    CUDA_ARRAY3D_DESCRIPTOR d3d = {.Width = 10, .Height = 10, .Depth = 10, .Format = CU_AD_FORMAT_UNSIGNED_INT32, .NumChannels = 1};
    DR(cuArray3DCreate(&d3, &d3d));                       printf("cuArray3DCreate_v2 %p %d\n", (void *)d3, 10 * 10 * 10 * 4);
    /* 8 x 8 x 8 of 1 B, 4 levels: 512 + 64 + 8 + 1 */
    CUDA_ARRAY3D_DESCRIPTOR dmd = {.Width = 8, .Height = 8, .Depth = 8, .Format = CU_AD_FORMAT_UNSIGNED_INT8, .NumChannels = 1};
    DR(cuMipmappedArrayCreate(&dm, &dmd, 4));             printf("cuMipmappedArrayCreate %p %d\n", (void *)dm, 512 + 64 + 8 + 1);

    RT(cudaFreeArray(a1));
    RT(cudaFreeArray(a3));
    RT(cudaFreeArray(al));
    RT(cudaFreeArray(sp));
    RT(cudaFreeMipmappedArray(mm));
    DR(cuArrayDestroy(d3));
    DR(cuMipmappedArrayDestroy(dm));
    printf("leak %p\nleak %p\n", (void *)a2, (void *)d1);
    return 0;
}
