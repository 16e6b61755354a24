/* A thread stuck inside a CUDA call for good, no longjmp: the stand-in's
 * FAKE_CUDA_HANG_ALLOC_BYTES=777 with FAKE_CUDA_HANG_HOLDS_CUPTI=1 holds
 * CUPTI's lock as the real driver holds the one CUPTI's flush waits for
 * inside a synchronizing memory call. CUPTI gets K kernels first (the
 * stand-in's fake_cupti_emit); main allocates for MS ms (CUPTI's periodic
 * flushes come due), then makes F forks and exits.
 * usage: stuck_call K MS F [late]; prints "kernels K, forks F", and on
 * stderr "forks took S s". late: the K kernels after the MS ms, before the
 * forks (the stop's flush is then the one that takes them) */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void *stuck(void *arg)
{
    (void)arg;
    void *p;
    cudaMalloc(&p, 777);
    return NULL;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    int kernels = atoi(argv[1]), forks = atoi(argv[3]);
    double ms = atof(argv[2]);
    void *a;
    cudaMalloc(&a, 111);
    const char *path = getenv("GPUTRACE_CUPTI_PATH");
    void *h = path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    int (*emit)(const char *, const char *, uint64_t, uint64_t, uint64_t, uint32_t) =
        h ? (int (*)(const char *, const char *, uint64_t, uint64_t, uint64_t, uint32_t))dlsym(h, "fake_cupti_emit")
          : NULL;
    bool late = argc > 4 && !strcmp(argv[4], "late");
    for (int i = 0; emit && !late && i < kernels; i++)
        emit("kernel", "_Z5planti", 1, 32, 1000, (uint32_t)i + 1);
    pthread_t t;
    pthread_create(&t, NULL, stuck, NULL);
    for (double end = now_s() + ms / 1000; now_s() < end;) {
        void *p;
        cudaMalloc(&p, 256);
        cudaFree(p);
        usleep(5000);
    }
    for (int i = 0; emit && late && i < kernels; i++)
        emit("kernel", "_Z5planti", 1, 32, 1000, (uint32_t)i + 1);
    double f0 = now_s();
    for (int i = 0; i < forks; i++) {
        pid_t c = fork();
        if (c == 0)
            _exit(0);
        if (c > 0)
            waitpid(c, NULL, 0);
    }
    fprintf(stderr, "forks took %.3f s\n", now_s() - f0);
    printf("kernels %d, forks %d\n", kernels, forks);
    fflush(stdout);
    exit(3);
}
