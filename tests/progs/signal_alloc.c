/* Allocations made from a signal handler: a timer interrupts a loop that
 * calls spin() (no CUDA) wherever it is, and the handler calls cudaMalloc and
 * cudaFree. The slot above a signal frame holds whatever the interrupted code
 * last popped, which can look like a return address where one belongs: the
 * shim's stack memo must never take such a path for one it saw before
 * (test_capture.py runs this with GPUTRACE_UNWIND_CHECK=1).
 * usage: signal_alloc [N_ALLOCATIONS] */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static volatile sig_atomic_t taken;
static volatile unsigned sink;

static void on_alarm(int sig)
{
    (void)sig;
    void *p = NULL;
    if (cudaMalloc(&p, 4096) == cudaSuccess)
        cudaFree(p);
    taken++;
}

__attribute__((noinline)) static unsigned spin(unsigned x)
{
    return x * 1103515245u + 12345u;   /* short: the loop calling it is half the time */
}

int main(int argc, char **argv)
{
    int want = argc > 1 ? atoi(argv[1]) : 2000;
    void *warm;
    cudaMalloc(&warm, 1);   /* the trace starts outside the handler */
    struct sigaction sa = {.sa_handler = on_alarm, .sa_flags = SA_RESTART};
    sigaction(SIGALRM, &sa, NULL);
    struct itimerval it = {{0, 200}, {0, 200}};
    setitimer(ITIMER_REAL, &it, NULL);
    unsigned x = 1;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    for (long i = 1; taken < want; i++) {
        x = spin(x);
        if (i % (1 << 20) == 0) {   /* a handler that never runs ends the program, not the test's patience */
            clock_gettime(CLOCK_MONOTONIC, &t);
            if (t.tv_sec - t0.tv_sec > 30)
                return 2;
        }
    }
    struct itimerval off = {{0, 0}, {0, 0}};
    setitimer(ITIMER_REAL, &off, NULL);
    sink = x;
    return cudaFree(warm) == cudaSuccess ? 0 : 1;
}
