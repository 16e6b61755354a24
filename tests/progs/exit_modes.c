/* Allocates N buffers (never freed) then leaves the process by the way named
 * in argv[1]: return | busy-return (a thread allocating meanwhile) | exit | _exit | _Exit | exec | abort-free, or waits to
 * be killed (hang: prints "allocated N", then sleeps). Exit code 7, so a test
 * can see the shim does not change it. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* busy-return: a thread that allocates and frees without pause while main returns */
static void *busy(void *arg)
{
    (void)arg;
    for (;;) {
        void *p;
        if (cudaMalloc(&p, 4096) == cudaSuccess)
            cudaFree(p);
    }
    return NULL;
}

int main(int argc, char **argv)
{
    const char *how = argc > 1 ? argv[1] : "return";
    int n = argc > 2 ? atoi(argv[2]) : 1000;
    for (int i = 0; i < n; i++) {
        void *p;
        if (cudaMalloc(&p, 4096 + (size_t)i) != cudaSuccess)
            return 1;
    }
    printf("allocated %d\n", n);
    fflush(stdout);
    if (!strcmp(how, "busy-return")) {
        pthread_t t;
        pthread_create(&t, NULL, busy, NULL);
        usleep(50000);
        return 7;
    }
    if (!strcmp(how, "exit"))
        exit(7);
    if (!strcmp(how, "_exit"))
        _exit(7);
    if (!strcmp(how, "_Exit"))
        _Exit(7);
    if (!strcmp(how, "quick_exit"))
        quick_exit(7);
    if (!strcmp(how, "pthread_exit"))   /* main leaves, the process ends with its last thread: status 0 */
        pthread_exit(NULL);
    if (!strcmp(how, "exec")) {
        execl("/bin/sh", "sh", "-c", "exit 7", (char *)NULL);
        return 99;
    }
    if (!strcmp(how, "hang"))
        for (;;)
            pause();
    if (!strcmp(how, "exec-fails")) { /* exec fails; tracing must go on */
        execl("/nonexistent/program", "x", (char *)NULL);
        void *p;
        cudaMalloc(&p, 123);
        return 7;
    }
    return 7;
}
