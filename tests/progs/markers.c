/* The marker API from C (gputrace.h: nothing to link; every call a no-op
 * without the shim). Five iterations with batch sizes 8, 16, ..., 40; each
 * allocates 1000 * (i + 1) bytes, then 10 * (i + 1) inside a "fwd" range,
 * and marks "end". Prints what the calls returned. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

#include "gputrace.h"

int main(void)
{
    int before = gputrace_recording(); /* no CUDA call yet: no trace */
    int depths = 0, pops = 0;
    for (long i = 0; i < 5; i++) {
        gputrace_iteration(i, 8 * (i + 1));
        void *a, *b;
        if (cudaMalloc(&a, 1000 * (size_t)(i + 1)) != cudaSuccess)
            abort();
        depths += gputrace_range_push("fwd");
        if (cudaMalloc(&b, 10 * (size_t)(i + 1)) != cudaSuccess)
            abort();
        pops += gputrace_range_pop();
        gputrace_mark("end");
        cudaFree(b);
        cudaFree(a);
    }
    printf("recording %d %d depths %d pops %d extra_pop %d\n", before, gputrace_recording(), depths, pops,
           gputrace_range_pop());
    return 0;
}
