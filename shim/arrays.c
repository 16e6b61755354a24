/* The bytes a CUDA array (or mipmapped array) asks for, from its descriptor:
 * texels x bytes a texel, summed over mip levels, as a pitched allocation's
 * size is its rows x pitch. The driver's tiling and alignment on top are not
 * known: its memory-requirement queries answer only for arrays made with
 * deferred mapping. A sparse or deferred-mapping array holds no memory until
 * the program maps some (cuMemCreate, recorded on its own): 0 bytes. The
 * runtime describes a texel by its channels' bits and a kind, the driver by
 * a format and a channel count; both come down to bits a texel, or to 4x4
 * blocks for the block-compressed formats. */
#include <cuda.h>
#include <cuda_runtime_api.h>

#include "shim.h"

struct texel {
    uint64_t bits;        /* a texel's bits (planar YUV: its share of every plane) */
    uint64_t block;       /* block-compressed: bytes of a 4x4 block (bits unused) */
};

static uint64_t mul(uint64_t a, uint64_t b)
{
    uint64_t r;
    return __builtin_mul_overflow(a, b, &r) ? UINT64_MAX : r;
}

static uint64_t add(uint64_t a, uint64_t b)
{
    return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* w x h x d texels (h, d 0 for fewer dimensions); layered: d counts layers
 * (or a cubemap's faces), which do not shrink with the mip level. */
static uint64_t array_bytes(struct texel t, uint64_t w, uint64_t h, uint64_t d, bool layered, unsigned levels)
{
    if (!t.bits && !t.block) {   /* a texel format newer than these headers */
        gt_drop(GT_DROP_ARRAY_SIZE_UNKNOWN);
        return 0;
    }
    if (levels == 0)
        levels = 1;
    uint64_t total = 0;
    for (unsigned l = 0; l < levels && l < 64; l++) {
        uint64_t lw = w >> l ? w >> l : 1, lh = h >> l ? h >> l : 1;
        uint64_t ld = layered ? (d ? d : 1) : (d >> l ? d >> l : 1);
        if (h == 0)
            lh = 1;
        if (d == 0)
            ld = 1;
        uint64_t bytes;
        if (t.block)
            bytes = mul(mul(mul((lw + 3) / 4, (lh + 3) / 4), ld), t.block);
        else {
            uint64_t bits = mul(mul(mul(lw, lh), ld), t.bits);
            bytes = bits == UINT64_MAX ? bits : (bits + 7) / 8;
        }
        total = add(total, bytes);
        if (lw == 1 && lh == 1 && (layered || ld == 1))
            break;   /* the chain ends at 1x1x1 whatever the count asked */
    }
    return total;
}

/* ---- the runtime's channel descriptor ---------------------------------- */

static struct texel runtime_texel(const struct cudaChannelFormatDesc *c)
{
    struct texel t = {0, 0};
    if (!c)
        return t;
    int k = c->f;
    if (k >= cudaChannelFormatKindUnsignedNormalized8X1 && k <= cudaChannelFormatKindSignedNormalized16X4) {
        static const uint8_t bits[] = {8, 16, 32, 16, 32, 64};   /* 8X1, 8X2, 8X4, 16X1, 16X2, 16X4 */
        t.bits = bits[(k - cudaChannelFormatKindUnsignedNormalized8X1) % 6];
    } else if (k >= cudaChannelFormatKindUnsignedBlockCompressed1 && k <= cudaChannelFormatKindUnsignedBlockCompressed7SRGB) {
        /* BC1 and BC4 pack a block in 8 bytes, the others in 16 */
        t.block = k <= cudaChannelFormatKindUnsignedBlockCompressed1SRGB || k == cudaChannelFormatKindUnsignedBlockCompressed4 ||
                          k == cudaChannelFormatKindSignedBlockCompressed4 ? 8 : 16;
    } else if (k == cudaChannelFormatKindNV12)
        t.bits = 12;
    else if (k == cudaChannelFormatKindUnsignedNormalized1010102)
        t.bits = 32;
    else   /* signed, unsigned, float, and kinds newer than these headers */
        t.bits = (uint64_t)(c->x > 0 ? c->x : 0) + (uint64_t)(c->y > 0 ? c->y : 0) + (uint64_t)(c->z > 0 ? c->z : 0) +
                 (uint64_t)(c->w > 0 ? c->w : 0);
    return t;
}

static bool holds_nothing_runtime(unsigned flags)
{
    return flags & (cudaArraySparse | cudaArrayDeferredMapping);
}

uint64_t gt_array_bytes_runtime(const struct cudaChannelFormatDesc *c, uint64_t w, uint64_t h, uint64_t d,
                                unsigned flags, unsigned levels)
{
    if (holds_nothing_runtime(flags))
        return 0;
    return array_bytes(runtime_texel(c), w, h, d, flags & (cudaArrayLayered | cudaArrayCubemap), levels);
}

/* ---- the driver's array format ----------------------------------------- */

static struct texel driver_texel(unsigned format, unsigned channels)
{
    struct texel t = {0, 0};
    switch (format) {
    case CU_AD_FORMAT_UNSIGNED_INT8: case CU_AD_FORMAT_SIGNED_INT8:
        t.bits = 8ull * channels; break;
    case CU_AD_FORMAT_UNSIGNED_INT16: case CU_AD_FORMAT_SIGNED_INT16: case CU_AD_FORMAT_HALF:
        t.bits = 16ull * channels; break;
    case CU_AD_FORMAT_UNSIGNED_INT32: case CU_AD_FORMAT_SIGNED_INT32: case CU_AD_FORMAT_FLOAT:
        t.bits = 32ull * channels; break;
    case CU_AD_FORMAT_UNORM_INT8X1: case CU_AD_FORMAT_SNORM_INT8X1: t.bits = 8; break;
    case CU_AD_FORMAT_UNORM_INT8X2: case CU_AD_FORMAT_SNORM_INT8X2: case CU_AD_FORMAT_UNORM_INT16X1:
    case CU_AD_FORMAT_SNORM_INT16X1: case CU_AD_FORMAT_NV16: case CU_AD_FORMAT_YUY2: t.bits = 16; break;
    case CU_AD_FORMAT_UNORM_INT8X4: case CU_AD_FORMAT_SNORM_INT8X4: case CU_AD_FORMAT_UNORM_INT16X2:
    case CU_AD_FORMAT_SNORM_INT16X2: case CU_AD_FORMAT_UNORM_INT_101010_2: case CU_AD_FORMAT_P210:
    case CU_AD_FORMAT_P216: case CU_AD_FORMAT_Y210: case CU_AD_FORMAT_Y216: case CU_AD_FORMAT_AYUV:
    case CU_AD_FORMAT_Y410: t.bits = 32; break;
    case CU_AD_FORMAT_UNORM_INT16X4: case CU_AD_FORMAT_SNORM_INT16X4: case CU_AD_FORMAT_Y416: t.bits = 64; break;
    case CU_AD_FORMAT_NV12: t.bits = 12; break;
    case CU_AD_FORMAT_P010: case CU_AD_FORMAT_P016: case CU_AD_FORMAT_Y444_PLANAR8: t.bits = 24; break;
    case CU_AD_FORMAT_Y444_PLANAR10: t.bits = 48; break;
    case CU_AD_FORMAT_BC1_UNORM: case CU_AD_FORMAT_BC1_UNORM_SRGB: case CU_AD_FORMAT_BC4_UNORM:
    case CU_AD_FORMAT_BC4_SNORM: t.block = 8; break;
    case CU_AD_FORMAT_BC2_UNORM: case CU_AD_FORMAT_BC2_UNORM_SRGB: case CU_AD_FORMAT_BC3_UNORM:
    case CU_AD_FORMAT_BC3_UNORM_SRGB: case CU_AD_FORMAT_BC5_UNORM: case CU_AD_FORMAT_BC5_SNORM:
    case CU_AD_FORMAT_BC6H_UF16: case CU_AD_FORMAT_BC6H_SF16: case CU_AD_FORMAT_BC7_UNORM:
    case CU_AD_FORMAT_BC7_UNORM_SRGB: t.block = 16; break;
    default: break;   /* a format newer than these headers */
    }
    return t;
}

uint64_t gt_array_bytes_driver(unsigned format, unsigned channels, uint64_t w, uint64_t h, uint64_t d,
                               unsigned flags, unsigned levels)
{
    if (flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
        return 0;
    return array_bytes(driver_texel(format, channels), w, h, d, flags & (CUDA_ARRAY3D_LAYERED | CUDA_ARRAY3D_CUBEMAP),
                       levels);
}
