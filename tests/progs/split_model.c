/* A model split across two devices (pipeline style), one cudaMalloc per
 * tensor: device 0 holds the larger part of the weights and a little
 * activation per sample, device 1 the smaller part and most of the
 * activations. So device 0 has the higher peak at every traced batch size,
 * yet device 1 is the one that runs out first as the batch grows: the
 * largest batch is device 1's. A failed allocation ends the program as
 * torch.OutOfMemoryError does (exit 1).
 * usage: split_model W0 W1 A0 A1 BS...   (bytes: weights on devices 0 and 1,
 *   activation per sample on devices 0 and 1; each batch size runs 3 steps,
 *   each an NVTX range "train_step N bs=B") */
#include "seed_common.h"

__attribute__((noinline)) static void *stage0(size_t n) { return cuda_empty(n); }
__attribute__((noinline)) static void *stage1(size_t n) { return cuda_empty(n); }

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: split_model W0 W1 A0 A1 BS...\n");
        return 2;
    }
    size_t w0 = strtoull(argv[1], NULL, 10), w1 = strtoull(argv[2], NULL, 10);
    size_t a0 = strtoull(argv[3], NULL, 10), a1 = strtoull(argv[4], NULL, 10);
    cudaSetDevice(0);
    void *weights0 = cuda_empty(w0);
    cudaSetDevice(1);
    void *weights1 = cuda_empty(w1);
    long step = 0;
    for (int i = 5; i < argc; i++) {
        long bs = atol(argv[i]);
        for (int r = 0; r < 3; r++, step++) {
            step_begin(MARK_NVTX, step, bs);
            cudaSetDevice(0);
            void *x0 = stage0((size_t)bs * a0);
            cudaSetDevice(1);
            void *x1 = stage1((size_t)bs * a1);
            cudaFree(x1);
            cudaSetDevice(0);
            cudaFree(x0);
            step_end(MARK_NVTX);
        }
    }
    cudaSetDevice(1);
    cudaFree(weights1);
    cudaSetDevice(0);
    cudaFree(weights0);
    return 0;
}
