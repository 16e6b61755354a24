/* One rank of a planted multi-rank job for test_ranks.py: weights, then STEPS
 * iterations (marked by the marker API) that each allocate an activation,
 * keep LEAK bytes (0: none) and free the activation. So the peak of step k
 * is WEIGHTS + ACT + (k + 1) * LEAK, and the rank's peak that of its last
 * step. "child" forks, before the loop, a child that allocates CHILD bytes of
 * its own (a DataLoader worker that inherits RANK). A failed allocation ends
 * the rank like PyTorch's out-of-memory error: a message and exit status 1.
 * usage: rank_train WEIGHTS ACT LEAK STEPS [child CHILD] */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gputrace.h"

static void *take(size_t n)
{
    void *p = NULL;
    if (n && cudaMalloc(&p, n) != cudaSuccess) {
        printf("CUDA out of memory. Tried to allocate %zu bytes\n", n);
        exit(1);
    }
    return p;
}

int main(int argc, char **argv)
{
    if (argc < 5)
        return 2;
    size_t weights = strtoull(argv[1], NULL, 0), act = strtoull(argv[2], NULL, 0), leak = strtoull(argv[3], NULL, 0);
    int steps = atoi(argv[4]);
    void *w = take(weights);
    if (argc > 6 && !strcmp(argv[5], "child")) {
        fflush(stdout);
        pid_t pid = fork();
        if (pid == 0) {
            void *c = take(strtoull(argv[6], NULL, 0));
            cudaFree(c);
            exit(0);
        }
        int st;
        waitpid(pid, &st, 0);
    }
    for (int k = 0; k < steps; k++) {
        gputrace_iteration(k, -1);
        void *a = take(act);
        take(leak);
        cudaFree(a);
    }
    cudaFree(w);
    return 0;
}
