/* A training step's pace of allocation: per step P cudaMallocAsync calls,
 * each followed by CPU work over a 256 KiB buffer (W reads; ~8 us at
 * W=10000 on the CI machine), a cudaFreeAsync of each after 64; prints the
 * median step in us. Tight loops (bench_calls) keep the writer behind and
 * draining full batches; a program at this pace hands it a few events at a
 * time, the regime of a real training step (bench_writer.py).
 * usage: bench_paced [STEPS] [P] [W] */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int by_value(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double buf[32768];
static volatile double sink;

int main(int argc, char **argv)
{
    int steps = argc > 1 ? atoi(argv[1]) : 100, per = argc > 2 ? atoi(argv[2]) : 700;
    int work = argc > 3 ? atoi(argv[3]) : 10000;
    for (int j = 0; j < 32768; j++)
        buf[j] = j * argc; /* not known to the compiler: the reads stay */
    void *warm, *p[64];
    cudaMalloc(&warm, 16);
    double *t = malloc(sizeof *t * (size_t)steps);
    for (int s = 0; s < steps; s++) {
        double t0 = now();
        for (int i = 0; i < per; i++) {
            cudaMallocAsync(&p[i & 63], 4096 + (size_t)(i & 7) * 512, 0);
            double acc = 0;
            for (int j = 0; j < work; j++)
                acc += buf[(j * 17 + i) & 32767];
            sink = acc;
            if ((i & 63) == 63)
                for (int k = 0; k < 64; k++)
                    cudaFreeAsync(p[k], 0);
        }
        t[s] = now() - t0;
    }
    qsort(t, (size_t)steps, sizeof *t, by_value);
    printf("median_step_us=%.1f\n", t[steps / 2] / 1e3);
    return 0;
}
