/* A watchdog: a CUDA call that hangs (the stand-in's FAKE_CUDA_HANG_ALLOC_BYTES
 * or FAKE_CUDA_HANG_FREE_BYTES) is left after 50 ms by a SIGALRM handler's
 * siglongjmp, and the program goes on: N more cudaMalloc + cudaFree pairs.
 * usage: jump_out alloc|free HANG_BYTES N [deep] [alarm=MS] [sleep=MS] [forks=K] [pthread_exit]
 *   deep: the N pairs from frames deeper than the call left; alarm: the
 *   watchdog's delay (50 ms); sleep: a pause after the jump, before the pairs;
 *   forks: K fork()s after the pairs, each child _exiting at once;
 *   pthread_exit: main leaves by it (the process ends with its last thread)
 * Prints how many calls succeeded after the jump. */
#include <cuda_runtime_api.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>
#include <time.h>

static sigjmp_buf watchdog;
static long alarm_ms = 50;

static void on_alarm(int sig)
{
    (void)sig;
    siglongjmp(watchdog, 1);
}

__attribute__((noinline)) static int guarded(const char *what, size_t hang_bytes, void **held)
{
    struct itimerval t = {{0, 0}, {alarm_ms / 1000, alarm_ms % 1000 * 1000}};
    if (sigsetjmp(watchdog, 1))
        return 1;   /* left by the handler */
    setitimer(ITIMER_REAL, &t, NULL);
    if (!strcmp(what, "alloc"))
        cudaMalloc(held, hang_bytes);
    else
        cudaFree(*held);
    return 0;
}

/* the calls after the jump from frames deeper than the call that was left */
__attribute__((noinline)) static int work(int depth, int n)
{
    volatile char pad[4096];
    pad[0] = (char)depth;
    if (depth > 0)
        return work(depth - 1, n) + pad[0] * 0;
    int ok = 0;
    void *p;
    for (int i = 0; i < n; i++) {
        ok += cudaMalloc(&p, 8192) == cudaSuccess;
        ok += cudaFree(p) == cudaSuccess;
    }
    return ok;
}

int main(int argc, char **argv)
{
    if (argc < 4)
        return 2;
    size_t hang_bytes = strtoull(argv[2], NULL, 10);
    int n = atoi(argv[3]);
    int deep = 0, leave_thread = 0;
    long sleep_ms = 0;
    int forks = 0;
    for (int i = 4; i < argc; i++) {
        deep |= !strcmp(argv[i], "deep");
        leave_thread |= !strcmp(argv[i], "pthread_exit");
        if (!strncmp(argv[i], "alarm=", 6))
            alarm_ms = atol(argv[i] + 6);
        if (!strncmp(argv[i], "sleep=", 6))
            sleep_ms = atol(argv[i] + 6);
        if (!strncmp(argv[i], "forks=", 6))
            forks = atoi(argv[i] + 6);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    void *p = NULL, *held = NULL;
    cudaMalloc(&p, 4096);
    cudaFree(p);
    if (!strcmp(argv[1], "free"))
        cudaMalloc(&held, hang_bytes);
    int left = guarded(argv[1], hang_bytes, &held);
    if (sleep_ms) {
        struct timespec ts = {sleep_ms / 1000, sleep_ms % 1000 * 1000000};
        while (nanosleep(&ts, &ts) != 0)
            ;
    }
    int ok = 0;
    if (deep) {
        ok = work(4, n);
    } else {
        for (int i = 0; i < n; i++) {
            ok += cudaMalloc(&p, 8192) == cudaSuccess;
            ok += cudaFree(p) == cudaSuccess;
        }
    }
    for (int i = 0; i < forks; i++) {
        pid_t c = fork();
        if (c == 0)
            _exit(0);
        if (c > 0)
            waitpid(c, NULL, 0);
    }
    printf("left %d, %d calls after\n", left, ok);
    if (leave_thread) {
        fflush(stdout);
        pthread_exit(NULL);
    }
    return 0;
}
