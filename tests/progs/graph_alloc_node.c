/* A CUDA graph built node by node, as a compiler's command buffers may be
 * (no stream capture): an allocation node of 48 MiB x MIB_SCALE on device 0
 * and its free node, launched three times. The driver takes the node's
 * memory when the graph first runs and keeps it for graphs until trimmed,
 * with no allocation call for a tracer to see. PAUSE_MS: a pause after the
 * first allocation and before the exit (graph_capture.c says why).
 * Prints nothing; exit code 0, else the failing line.
 * usage: graph_alloc_node [MIB_SCALE [PAUSE_MS]] */
#include <cuda_runtime_api.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MIB ((size_t)1 << 20)
#define OK(x) do { if ((x) != cudaSuccess) return __LINE__; } while (0)

int main(int argc, char **argv)
{
    size_t k = argc > 1 ? (size_t)atoi(argv[1]) : 1;
    long pause_ms = argc > 2 ? atol(argv[2]) : 0;
    struct timespec pause = {pause_ms / 1000, pause_ms % 1000 * 1000000};
    void *weights;
    cudaStream_t s;
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaGraphNode_t alloc, release;
    OK(cudaMalloc(&weights, 16 * MIB));
    OK(cudaStreamCreate(&s));
    nanosleep(&pause, NULL);
    struct cudaMemAllocNodeParams params;
    memset(&params, 0, sizeof params);
    params.poolProps.allocType = cudaMemAllocationTypePinned;
    params.poolProps.location.type = cudaMemLocationTypeDevice;
    params.poolProps.location.id = 0;
    params.bytesize = 48 * MIB * k;
    OK(cudaGraphCreate(&g, 0));
    OK(cudaGraphAddMemAllocNode(&alloc, g, NULL, 0, &params));
    OK(cudaGraphAddMemFreeNode(&release, g, &alloc, 1, params.dptr));
    OK(cudaGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 3; i++)
        OK(cudaGraphLaunch(e, s));
    OK(cudaStreamSynchronize(s));
    OK(cudaFree(weights));
    nanosleep(&pause, NULL);
    return 0;
}
