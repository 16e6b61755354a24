/* A program that captures a CUDA graph, as PyTorch's torch.cuda.graph does
 * under its two allocators: while the stream is captured, a cudaMalloc for
 * the graph's private pool (real memory, taken now), and stream-ordered
 * allocations and a free on the capturing stream (the graph's allocation and
 * free nodes: no memory now). The graph is launched three times; then the
 * address of the node the graph did not free is freed outside it, the graph
 * launched once more and that address freed again, and the pool is used as
 * usual. Inside the capture, ending a capture on another
 * stream (which is not capturing) fails and ends nothing. Prints nothing;
 * exit code 0 (98: under the stand-in, something asked the capturing
 * stream more than whether it captures).
 * usage: graph_capture [MIB_SCALE] */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>

#define MIB ((size_t)1 << 20)
#define OK(x) do { if ((x) != cudaSuccess) return __LINE__; } while (0)

int main(int argc, char **argv)
{
    size_t k = argc > 1 ? (size_t)atoi(argv[1]) : 1;
    void *weights, *segment, *a, *b, *c;
    cudaStream_t s, other;
    cudaGraph_t g, none;
    cudaGraphExec_t e;
    OK(cudaMalloc(&weights, 64 * MIB * k));
    OK(cudaStreamCreate(&s));
    OK(cudaStreamCreate(&other));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    if (cudaStreamEndCapture(other, &none) == cudaSuccess)
        return 99;
    (void)cudaGetLastError();
    OK(cudaMalloc(&segment, 20 * MIB * k));          /* the private pool's segment */
    OK(cudaMallocAsync(&a, 8 * MIB * k, s));         /* allocation nodes */
    OK(cudaMallocAsync(&b, 16 * MIB * k, s));
    OK(cudaFreeAsync(a, s));                          /* a free node */
    OK(cudaStreamEndCapture(s, &g));
    OK(cudaGraphInstantiate(&e, g, 0));
    for (int i = 0; i < 3; i++)
        OK(cudaGraphLaunch(e, s));
    OK(cudaFreeAsync(b, s));                          /* the node's address, freed outside the graph */
    OK(cudaGraphLaunch(e, s));                        /* the graph takes it again, */
    OK(cudaFreeAsync(b, s));                          /* and it is freed again */
    OK(cudaMallocAsync(&c, 4 * MIB * k, s));         /* the pool, as usual */
    OK(cudaFreeAsync(c, s));
    OK(cudaStreamSynchronize(s));
    OK(cudaFree(segment));
    OK(cudaFree(weights));
    /* the stand-in driver counts queries of a stream while it was captured (a real one has no such count) */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*queries)(void) = driver ? (int (*)(void))dlsym(driver, "fake_cuda_capture_queries") : NULL;
    return queries && queries() ? 98 : 0;
}
