/* A program built against CUDA 11 (libcudart.so.11.0) whose graph
 * instantiation fails: the runtime writes why into the program's log buffer
 * (the 5-parameter cudaGraphInstantiate of CUDA 11). Prints the result and
 * the log; the shim must pass all five arguments on (test_capture.py). */
#include <stdio.h>
#include <string.h>

int cudaGraphInstantiate(void **pGraphExec, void *graph, void **pErrorNode, char *pLogBuffer, size_t bufferSize);

int main(void)
{
    void *exec = NULL, *node = (void *)1;
    char log[64];
    memset(log, 'x', sizeof log - 1);
    log[sizeof log - 1] = 0;
    int rc = cudaGraphInstantiate(&exec, NULL, &node, log, sizeof log);
    printf("rc %d node %s log '%s'\n", rc, node ? "set" : "NULL", log);
    return 0;
}
