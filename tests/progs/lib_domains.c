/* A training loop of 30 steps that calls a library marking its own calls in
 * NVTX domain "CCCL" (libcccl_like.so) on 23 of them; argv[1] "ranges" also
 * marks each step with a default-domain range "step N", "none" leaves the
 * loop unmarked. Each step allocates and frees the same buffers. */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdlib.h>
#include <string.h>

void cccl_like_sort(void);

static void *alloc(size_t n)
{
    void *p;
    if (cudaMalloc(&p, n) != cudaSuccess)
        exit(3);
    return p;
}

int main(int argc, char **argv)
{
    int marked = argc > 1 && !strcmp(argv[1], "ranges");
    void *weights = alloc(8 << 20);
    for (int step = 0; step < 30; step++) {
        if (marked)
            nvtxRangePushA(step < 10 ? "step 0" : "step 10"); /* digits normalise: one kind */
        void *act = alloc(1 << 20), *grad = alloc(2 << 20);
        if (step % 4 != 3)
            cccl_like_sort();
        cudaFree(grad);
        cudaFree(act);
        if (marked)
            nvtxRangePop();
    }
    cudaFree(weights);
    return 0;
}
