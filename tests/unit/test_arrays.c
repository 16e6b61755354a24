/* Unit tests of the bytes a CUDA array asks for (shim/arrays.c), against
 * sizes worked out by hand: plain, layered and cubemap shapes, mip chains
 * that end at 1x1, block-compressed and planar formats, sparse and
 * deferred-mapping arrays (no memory), a format newer than the headers
 * (0 bytes, counted), and sizes that would overflow (saturated). */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdint.h>

#include "shim.h"
#include "tap.h"

static int unknown;   /* gt_drop's stand-in: the reason counted */
void gt_drop(enum gt_drop_reason r)
{
    if (r == GT_DROP_ARRAY_SIZE_UNKNOWN)
        unknown++;
}

static struct cudaChannelFormatDesc ch(int x, int y, int z, int w, enum cudaChannelFormatKind f)
{
    return (struct cudaChannelFormatDesc){x, y, z, w, f};
}

static void runtime_shapes(void)
{
    struct cudaChannelFormatDesc f4 = ch(32, 32, 32, 32, cudaChannelFormatKindFloat), u1 = ch(8, 0, 0, 0, cudaChannelFormatKindUnsigned);
    CHECK(gt_array_bytes_runtime(&u1, 1000, 0, 0, 0, 1) == 1000);               /* 1D */
    CHECK(gt_array_bytes_runtime(&f4, 64, 32, 0, 0, 0) == 64 * 32 * 16);        /* levels 0: one */
    CHECK(gt_array_bytes_runtime(&f4, 16, 8, 4, 0, 1) == 16 * 8 * 4 * 16);
    /* 3D mips shrink in depth too: 8x8x8 + 4x4x4 + 2x2x2 + 1 */
    CHECK(gt_array_bytes_runtime(&u1, 8, 8, 8, 0, 4) == 512 + 64 + 8 + 1);
    /* the chain ends at 1x1x1 however many levels are asked */
    CHECK(gt_array_bytes_runtime(&u1, 8, 8, 8, 0, 20) == 512 + 64 + 8 + 1);
    /* a 2D chain of a non-square array: 8x2, 4x1, 2x1, 1x1 */
    CHECK(gt_array_bytes_runtime(&u1, 8, 2, 0, 0, 10) == 16 + 4 + 2 + 1);
    /* layers never shrink: 5 layers of 32x16 then 16x8 */
    CHECK(gt_array_bytes_runtime(&u1, 32, 16, 5, cudaArrayLayered, 2) == 5 * (512 + 128));
    /* a cubemap's 6 faces are layers too */
    CHECK(gt_array_bytes_runtime(&u1, 4, 4, 6, cudaArrayCubemap, 3) == 6 * (16 + 4 + 1));
    CHECK(gt_array_bytes_runtime(&u1, 4096, 4096, 0, cudaArraySparse, 1) == 0);
    CHECK(gt_array_bytes_runtime(&u1, 4096, 4096, 0, cudaArrayDeferredMapping, 1) == 0);
}

static void runtime_formats(void)
{
    struct cudaChannelFormatDesc bc1 = ch(0, 0, 0, 0, cudaChannelFormatKindUnsignedBlockCompressed1);
    struct cudaChannelFormatDesc bc7 = ch(0, 0, 0, 0, cudaChannelFormatKindUnsignedBlockCompressed7);
    struct cudaChannelFormatDesc nv12 = ch(8, 8, 8, 0, cudaChannelFormatKindNV12);
    struct cudaChannelFormatDesc n16x4 = ch(0, 0, 0, 0, cudaChannelFormatKindSignedNormalized16X4);
    /* BC1: 8 bytes a 4x4 block; 10x6 texels take 3x2 blocks */
    CHECK(gt_array_bytes_runtime(&bc1, 10, 6, 0, 0, 1) == 3 * 2 * 8);
    CHECK(gt_array_bytes_runtime(&bc7, 16, 16, 0, 0, 1) == 16 * 16);
    /* NV12: a luma byte a texel and half as much chroma */
    CHECK(gt_array_bytes_runtime(&nv12, 64, 32, 0, 0, 1) == 64 * 32 * 3 / 2);
    CHECK(gt_array_bytes_runtime(&n16x4, 10, 0, 0, 0, 1) == 80);
    CHECK(gt_array_bytes_runtime(NULL, 10, 10, 0, 0, 1) == 0);
}

static void driver_formats(void)
{
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_HALF, 2, 100, 10, 0, 0, 1) == 100 * 10 * 4);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_UNSIGNED_INT32, 1, 10, 10, 10, 0, 1) == 4000);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_FLOAT, 4, 2, 2, 3, CUDA_ARRAY3D_LAYERED, 2) == 3 * (4 + 1) * 16);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_UNORM_INT8X4, 4, 10, 0, 0, 0, 1) == 40);   /* channels in the format */
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_BC4_UNORM, 1, 8, 8, 0, 0, 1) == 4 * 8);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_BC5_UNORM, 2, 8, 8, 0, 0, 1) == 4 * 16);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_P016, 3, 4, 4, 0, 0, 1) == 16 * 3);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_FLOAT, 1, 1 << 20, 1 << 20, 0, CUDA_ARRAY3D_SPARSE, 1) == 0);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_FLOAT, 1, 1 << 20, 1 << 20, 0, CUDA_ARRAY3D_DEFERRED_MAPPING, 1) == 0);
}

static void unknown_format_is_counted(void)
{
    unknown = 0;
    CHECK(gt_array_bytes_driver(0x7777, 1, 10, 10, 0, 0, 1) == 0);
    CHECKF(unknown == 1, "unknown %d", unknown);
}

static void overflow_saturates(void)
{
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_FLOAT, 4, UINT64_MAX / 2, 4, 4, 0, 1) == UINT64_MAX);
    CHECK(gt_array_bytes_driver(CU_AD_FORMAT_FLOAT, 4, UINT64_MAX / 2, 4, 4, 0, 3) == UINT64_MAX);
}

int main(void)
{
    TAP_RUN(runtime_shapes);
    TAP_RUN(runtime_formats);
    TAP_RUN(driver_formats);
    TAP_RUN(unknown_format_is_counted);
    TAP_RUN(overflow_saturates);
    return tap_done();
}
