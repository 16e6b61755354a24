/* A program that captures a CUDA graph, as PyTorch's torch.cuda.graph does
 * under its two allocators: while the stream is captured, a cudaMalloc for
 * the graph's private pool (real memory, taken now), and stream-ordered
 * allocations and a free on the capturing stream (the graph's allocation and
 * free nodes: no memory now). The graph is launched; then the
 * address of the node the graph did not free is freed outside it, the graph
 * launched once more and that address freed again, and the pool is used as
 * usual. Inside the capture, ending a capture on another
 * stream (which is not capturing) fails and ends nothing, and an address
 * range is reserved (the driver's cuMemAddressReserve, as PyTorch's
 * expandable segments do: addresses, no memory), freed after the capture. Prints nothing;
 * exit code 0 (97: the driver's entry points not found; 98: under the stand-in, something asked the capturing
 * stream more than whether it captures).
 * PAUSE_MS: a pause after the first allocation and before the exit, so that
 * a tracer's first sample and its reading at exit fall while CUDA is up
 * (without it the whole program may end before the tracer's writer has
 * looked once).
 * usage: graph_capture [MIB_SCALE [PAUSE_MS]] */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdlib.h>
#include <time.h>

#define MIB ((size_t)1 << 20)
#define OK(x) do { if ((x) != cudaSuccess) return __LINE__; } while (0)

int main(int argc, char **argv)
{
    size_t k = argc > 1 ? (size_t)atoi(argv[1]) : 1;
    long pause_ms = argc > 2 ? atol(argv[2]) : 0;
    struct timespec pause = {pause_ms / 1000, pause_ms % 1000 * 1000000};
    void *weights, *segment, *a, *b, *c;
    cudaStream_t s, other;
    cudaGraph_t g, none;
    cudaGraphExec_t e;
    unsigned long long range;   /* a CUdeviceptr */
    OK(cudaMalloc(&weights, 64 * MIB * k));
    /* the runtime has loaded the driver; its calls through dlsym, as a program without -lcuda makes them */
    void *driver = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
    int (*reserve)(unsigned long long *, size_t, size_t, unsigned long long, unsigned long long) =
        driver ? (int (*)(unsigned long long *, size_t, size_t, unsigned long long, unsigned long long))dlsym(
                     driver, "cuMemAddressReserve") : NULL;
    int (*unreserve)(unsigned long long, size_t) =
        driver ? (int (*)(unsigned long long, size_t))dlsym(driver, "cuMemAddressFree") : NULL;
    if (!reserve || !unreserve)
        return 97;
    nanosleep(&pause, NULL);
    OK(cudaStreamCreate(&s));
    OK(cudaStreamCreate(&other));
    OK(cudaStreamBeginCapture(s, cudaStreamCaptureModeRelaxed));
    if (cudaStreamEndCapture(other, &none) == cudaSuccess)
        return 99;
    (void)cudaGetLastError();
    OK(cudaMalloc(&segment, 20 * MIB * k));          /* the private pool's segment */
    if (reserve(&range, 1024 * MIB * k, 0, 0, 0))     /* an expandable segment's addresses */
        return __LINE__;
    OK(cudaMallocAsync(&a, 8 * MIB * k, s));         /* allocation nodes */
    OK(cudaMallocAsync(&b, 16 * MIB * k, s));
    OK(cudaFreeAsync(a, s));                          /* a free node */
    OK(cudaStreamEndCapture(s, &g));
    OK(cudaGraphInstantiate(&e, g, 0));
    OK(cudaGraphLaunch(e, s));
    OK(cudaFreeAsync(b, s));                          /* the node's address, freed outside the graph */
    OK(cudaGraphLaunch(e, s));                        /* (not before: a graph with an allocation */
                                                      /* still unfreed cannot run again) it takes it again, */
    OK(cudaFreeAsync(b, s));                          /* and it is freed again */
    OK(cudaMallocAsync(&c, 4 * MIB * k, s));         /* the pool, as usual */
    OK(cudaFreeAsync(c, s));
    OK(cudaStreamSynchronize(s));
    if (unreserve(range, 1024 * MIB * k))
        return __LINE__;
    OK(cudaFree(segment));
    OK(cudaFree(weights));
    nanosleep(&pause, NULL);
    /* the stand-in driver counts queries of a stream while it was captured (a real one has no such count) */
    int (*queries)(void) = driver ? (int (*)(void))dlsym(driver, "fake_cuda_capture_queries") : NULL;
    return queries && queries() ? 98 : 0;
}
