/* One thread forks continuously (each child _exits at once) while the main
 * thread allocates and then exits: an exit between a fork's prepare and its
 * parent handler left the writer's lock taken, and the exit waited out the
 * writer's 30 s bound. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

static void *forker(void *arg)
{
    (void)arg;
    for (;;) {
        pid_t p = fork();
        if (p == 0)
            _exit(0);
        if (p > 0)
            waitpid(p, NULL, 0);
    }
    return NULL;
}

int main(void)
{
    void *p;
    if (cudaMalloc(&p, 4096))
        return 3;
    pthread_t t;
    pthread_create(&t, NULL, forker, NULL);
    for (int i = 0; i < 200; i++) {
        if (cudaMalloc(&p, 4096) == cudaSuccess)
            cudaFree(p);
        usleep(100);
    }
    exit(0);
}
