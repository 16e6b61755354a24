/* Parent allocates, then forks. argv[1]: "quiet" child never calls CUDA;
 * "cuda" child allocates argv[2] buffers of its own; "cuda-exec-fails" as
 * "cuda", then tries to exec a program on two paths that do not exist (as
 * execvp over PATH does) and _exits 127, as a shell's child does. Parent
 * allocates once more after the child exits. Prints the child's pid. */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

int main(int argc, char **argv)
{
    int child_allocs = argc > 2 ? atoi(argv[2]) : 50;
    void *p;
    for (int i = 0; i < 100; i++)
        cudaMalloc(&p, 1 << 16);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        if (!strncmp(argv[1], "cuda", 4))
            for (int i = 0; i < child_allocs; i++)
                cudaMalloc(&p, 1 << 12);
        if (!strcmp(argv[1], "cuda-exec-fails")) {
            execl("/nonexistent/a/program", "program", (char *)NULL);
            execl("/nonexistent/b/program", "program", (char *)NULL);
            _exit(127);
        }
        exit(0);
    }
    int st;
    waitpid(pid, &st, 0);
    cudaMalloc(&p, 1 << 20);
    printf("child %d\n", (int)pid);
    return WIFEXITED(st) ? WEXITSTATUS(st) : 1;
}
