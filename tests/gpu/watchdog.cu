// A watchdog around a CUDA call that does not come back in time: a kernel
// spins for SPIN_MS, cudaFree then waits for it (an implicit synchronization),
// and a SIGALRM handler ALARM_MS (200) later siglongjmps out of the free. The program
// goes on: it waits for the device, then makes N cudaMalloc + cudaFree pairs
// of 8 KiB from a function deeper than the call it left.
// usage: watchdog SPIN_MS N [ALARM_MS [sync]]; prints "left L, C calls after"
// sync: the call left is cudaDeviceSynchronize, which the shim does not hook
#include <cuda_runtime_api.h>
#include <setjmp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>

static sigjmp_buf watchdog;
static long alarm_ms = 200;
static bool left_sync;

static void on_alarm(int) { siglongjmp(watchdog, 1); }

__global__ void spin(long long cycles)
{
    long long start = clock64();
    while (clock64() - start < cycles)
        ;
}

__attribute__((noinline)) static int guarded_free(void *p)
{
    struct itimerval t = {{0, 0}, {alarm_ms / 1000, alarm_ms % 1000 * 1000}};
    if (sigsetjmp(watchdog, 1))
        return 1;   // left by the handler
    setitimer(ITIMER_REAL, &t, NULL);
    if (left_sync)
        cudaDeviceSynchronize();
    else
        cudaFree(p);
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    return 0;
}

__attribute__((noinline)) static int work(int depth, int n)
{
    volatile char pad[4096];
    pad[0] = (char)depth;
    if (depth > 0)
        return work(depth - 1, n) + pad[0] * 0;
    int ok = 0;
    for (int i = 0; i < n; i++) {
        void *p;
        ok += cudaMalloc(&p, 8192) == cudaSuccess;
        ok += cudaFree(p) == cudaSuccess;
    }
    return ok;
}

int main(int argc, char **argv)
{
    int spin_ms = argc > 1 ? atoi(argv[1]) : 2000, n = argc > 2 ? atoi(argv[2]) : 1000;
    if (argc > 3)
        alarm_ms = atol(argv[3]);
    left_sync = argc > 4 && !strcmp(argv[4], "sync");
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_alarm;
    sigaction(SIGALRM, &sa, NULL);
    int rate_khz = 0;
    cudaDeviceGetAttribute(&rate_khz, cudaDevAttrClockRate, 0);
    void *p = NULL;
    cudaMalloc(&p, 4096);
    spin<<<1, 1>>>((long long)rate_khz * spin_ms);
    int left = guarded_free(p);
    cudaDeviceSynchronize();
    int ok = work(4, n);
    printf("left %d, %d calls after\n", left, ok);
    return 0;
}
