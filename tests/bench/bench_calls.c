/* Times N cudaMallocAsync/cudaFreeAsync pairs made from a call depth of D
 * frames (so 32-frame stacks are real), and prints ns per call. The same
 * binary runs bare and under the shim, side by side, in bench_shim.py.
 * With a third argument P, a timer interrupts the loop every 2.5 ms and its
 * handler holds the thread for P us (a preemption, for test_cost.py).
 * usage: bench_calls [N] [D] [P] */
#include <cuda_runtime_api.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long pairs;
static double ns_per_call;

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

__attribute__((noinline)) static void loop(void)
{
    void *p;
    cudaStream_t s = 0;
    double t0 = now();
    for (long i = 0; i < pairs; i++) {
        cudaMallocAsync(&p, 4096, s);
        cudaFreeAsync(p, s);
    }
    ns_per_call = (now() - t0) / (2.0 * pairs);
}

__attribute__((noinline)) static void descend(int depth)
{
    if (depth > 0) {
        descend(depth - 1);
        __asm__ volatile("" ::: "memory");
    } else {
        loop();
    }
}

static long pause_ns;

static void hold(int sig)
{
    (void)sig;
    struct timespec ts = {0, pause_ns};
    nanosleep(&ts, NULL);
}

int main(int argc, char **argv)
{
    pairs = argc > 1 ? atol(argv[1]) : 200000;
    int depth = argc > 2 ? atoi(argv[2]) : 0;
    pause_ns = argc > 3 ? atol(argv[3]) * 1000 : 0;
    void *warm;
    cudaMalloc(&warm, 1); /* the trace starts here, outside the timed loop */
    if (pause_ns) {
        struct sigaction sa = {.sa_handler = hold, .sa_flags = SA_RESTART};
        sigaction(SIGALRM, &sa, NULL);
        struct itimerval it = {{0, 2500}, {0, 2500}};
        setitimer(ITIMER_REAL, &it, NULL);
    }
    descend(depth);
    if (pause_ns) {
        struct itimerval off = {{0, 0}, {0, 0}};
        setitimer(ITIMER_REAL, &off, NULL);
    }
    printf("ns_per_call=%.1f\n", ns_per_call);
    return 0;
}
