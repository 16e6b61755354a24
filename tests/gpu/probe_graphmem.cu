// probe: cuDeviceGetGraphMemAttribute from a thread with no current context
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
static void *reader(void *arg)
{
    CUcontext cur = 0;
    cuCtxGetCurrent(&cur);
    cuuint64_t r = 0, u = 0;
    CUresult a = cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT, &r);
    CUresult b = cuDeviceGetGraphMemAttribute(0, CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT, &u);
    printf("%s: ctx %p rc %d %d reserved %llu used %llu\n", (const char *)arg, (void *)cur, a, b,
           (unsigned long long)r, (unsigned long long)u);
    return 0;
}
static void probe(const char *what)
{
    pthread_t t;
    pthread_create(&t, 0, reader, (void *)what);
    pthread_join(t, 0);
}
int main()
{
    void *x, *a;
    cudaMalloc(&x, 1 << 20);
    probe("after first malloc");
    cudaStream_t s;
    cudaStreamCreate(&s);
    cudaGraph_t g;
    cudaGraphExec_t e;
    cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);
    cudaMallocAsync(&a, 40 << 20, s);
    cudaStreamEndCapture(s, &g);
    cudaGraphInstantiate(&e, g, 0);
    probe("captured, not launched");
    printf("launch %d\n", cudaGraphLaunch(e, s));
    cudaStreamSynchronize(s);
    probe("launched, node unfreed");
    cudaFreeAsync(a, s);
    cudaStreamSynchronize(s);
    probe("node freed");
    cudaGraphExecDestroy(e);
    cudaGraphDestroy(g);
    cudaDeviceSynchronize();
    probe("graph destroyed");
    cudaDeviceGraphMemTrim(0);
    probe("trimmed");
    return 0;
}
