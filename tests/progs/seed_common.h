/* seed_common.h - what the seed programs share: device allocation that ends
 * the program the way PyTorch's "CUDA out of memory" does, and the three ways
 * a step can be marked (NVTX range, marker API, nothing) so one workload is
 * analysed from each iteration source. */
#ifndef SEED_COMMON_H
#define SEED_COMMON_H
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "gputrace.h"

enum mark_mode { MARK_NVTX, MARK_MARKER, MARK_NONE };

static inline enum mark_mode mark_mode_of(const char *s)
{
    if (!strcmp(s, "nvtx"))
        return MARK_NVTX;
    if (!strcmp(s, "marker"))
        return MARK_MARKER;
    if (!strcmp(s, "none"))
        return MARK_NONE;
    fprintf(stderr, "unknown marking %s (nvtx|marker|none)\n", s);
    exit(2);
}

/* A failed allocation ends the program like an uncaught torch.OutOfMemoryError:
 * a message and exit status 1. */
__attribute__((noinline)) static void *cuda_empty(size_t n)
{
    void *p = NULL;
    cudaError_t e = cudaMalloc(&p, n);
    if (e != cudaSuccess) {
        printf("CUDA out of memory. Tried to allocate %zu bytes\n", n);
        exit(1);
    }
    return p;
}

/* Step `index` begins: an NVTX range "train_step N bs=B", or gputrace_iteration. */
static inline void step_begin(enum mark_mode m, long index, long batch_size)
{
    char msg[64];
    if (m == MARK_NVTX) {
        snprintf(msg, sizeof msg, "train_step %ld bs=%ld", index, batch_size);
        nvtxRangePushA(msg);
    } else if (m == MARK_MARKER) {
        gputrace_iteration(index, batch_size);
    }
}

static inline void step_end(enum mark_mode m)
{
    if (m == MARK_NVTX)
        nvtxRangePop();
}
#endif
