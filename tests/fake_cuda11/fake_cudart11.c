/* fake_cudart11.c: a stand-in for the one CUDA 11 runtime entry point whose
 * signature CUDA 12 changed under the same name: cudaGraphInstantiate took
 * (pGraphExec, graph, pErrorNode, pLogBuffer, bufferSize) and writes its log
 * when instantiation fails. TEST DOUBLE ONLY (test_capture.py): built as
 * libcudart.so.11.0, never installed. No CUDA header: its types are CUDA 11's. */
#include <stddef.h>
#include <string.h>

typedef int cudaError_t;      /* cudaSuccess 0, cudaErrorInvalidValue 1 */

cudaError_t cudaGraphInstantiate(void **pGraphExec, void *graph, void **pErrorNode, char *pLogBuffer,
                                 size_t bufferSize);

cudaError_t cudaGraphInstantiate(void **pGraphExec, void *graph, void **pErrorNode, char *pLogBuffer,
                                 size_t bufferSize)
{
    static const char why[] = "graph is NULL (CUDA 11's log)";
    if (graph) {
        *pGraphExec = graph;
        return 0;
    }
    if (pErrorNode)
        *pErrorNode = NULL;
    if (pLogBuffer && bufferSize) {
        size_t n = bufferSize - 1 < sizeof why - 1 ? bufferSize - 1 : sizeof why - 1;
        memcpy(pLogBuffer, why, n);
        pLogBuffer[n] = 0;
    }
    return 1;
}
