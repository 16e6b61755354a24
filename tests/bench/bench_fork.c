/* fork() while threads allocate (DataLoader workers forked while the main
 * process's threads run): NTHREADS threads allocate and free in a loop, the
 * main thread forks 20 children that _exit at once; prints the mean and the
 * largest fork() time in ms. usage: bench_fork NTHREADS */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static atomic_int stop;

static void *worker(void *arg)
{
    (void)arg;
    while (!stop) {
        void *p;
        if (cudaMalloc(&p, 4096) == cudaSuccess)
            cudaFree(p);
    }
    return NULL;
}

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    int n = argc > 1 ? atoi(argv[1]) : 4;
    pthread_t t[64];
    n = n < 1 ? 1 : n > 64 ? 64 : n;
    for (int i = 0; i < n; i++)
        pthread_create(&t[i], NULL, worker, NULL);
    usleep(50000);
    double max = 0, sum = 0;
    for (int c = 0; c < 20; c++) {
        double a = now();
        pid_t pid = fork();
        if (pid == 0)
            _exit(0);
        double d = now() - a;
        waitpid(pid, NULL, 0);
        sum += d;
        max = d > max ? d : max;
    }
    stop = 1;
    for (int i = 0; i < n; i++)
        pthread_join(t[i], NULL);
    printf("%.3f %.3f\n", sum / 20 * 1e3, max * 1e3);
    return 0;
}
