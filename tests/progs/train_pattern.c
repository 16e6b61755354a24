/* A training loop whose allocations look like a real framework's under
 * cudaMallocAsync, for the automatic iteration finder: each step allocates
 * the input batch, then forward activations of many sizes from different
 * layers (a stack of identical blocks among them), backward frees them in
 * reverse order beside gradient temporaries, the optimizer's first step
 * creates its state (kept) and every step makes a few temporaries; some steps
 * do more: every LOG_EVERY-th a logging tensor, every WS_EVERY-th a larger
 * convolution workspace tried first. No markers: the steps are only in the
 * allocation pattern.
 * usage: train_pattern STEPS */
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <stdlib.h>

enum { BLOCKS = 6, LOG_EVERY = 7, WS_EVERY = 5, MAX_ACTS = 64 };

static void *acts[MAX_ACTS];
static int nacts;

static void *t_alloc(size_t n)
{
    void *p = NULL;
    if (cudaMallocAsync(&p, n, 0) != cudaSuccess) {
        fprintf(stderr, "out of memory\n");
        exit(1);
    }
    return p;
}

__attribute__((noinline)) static void *load_batch(void) { return t_alloc(3 << 20); }
__attribute__((noinline)) static void stem(void) { acts[nacts++] = t_alloc(8 << 20); }
__attribute__((noinline)) static void block(size_t width) { acts[nacts++] = t_alloc(width); acts[nacts++] = t_alloc(width / 2); }
__attribute__((noinline)) static void head(void) { acts[nacts++] = t_alloc(40960); acts[nacts++] = t_alloc(512); }
__attribute__((noinline)) static void *conv_workspace(size_t n) { return t_alloc(n); }
__attribute__((noinline)) static void *logging_tensor(void) { return t_alloc(4096); }

__attribute__((noinline)) static void forward(long step)
{
    stem();
    for (int b = 0; b < BLOCKS; b++) {
        if (b == 2 && step % WS_EVERY == 0) {   /* a larger workspace tried, then released */
            void *big = conv_workspace(64 << 20);
            cudaFreeAsync(big, 0);
        }
        void *ws = conv_workspace(1 << 20);
        block((size_t)(b < 3 ? 4 : 2) << 20);
        cudaFreeAsync(ws, 0);
    }
    head();
}

__attribute__((noinline)) static void backward(void **grads, size_t ngrads)
{
    while (nacts > 0) {
        void *tmp = t_alloc(1 << 20);   /* the gradient of one activation */
        cudaFreeAsync(acts[--nacts], 0);
        cudaFreeAsync(tmp, 0);
    }
    for (size_t g = 0; g < ngrads; g++)
        grads[g] = t_alloc((g + 1) << 18);
}

__attribute__((noinline)) static void optimizer_step(void **state, void **grads, size_t ngrads)
{
    if (!state[0])   /* Adam's state, created at the first step and kept */
        for (size_t g = 0; g < 2 * ngrads; g++)
            state[g] = t_alloc((g / 2 + 1) << 18);
    void *tmp = t_alloc(1 << 18);
    for (size_t g = 0; g < ngrads; g++)
        cudaFreeAsync(grads[g], 0);   /* zero_grad(set_to_none=True) */
    cudaFreeAsync(tmp, 0);
}

int main(int argc, char **argv)
{
    long steps = argc > 1 ? atol(argv[1]) : 30;
    enum { NGRADS = 4 };
    void *params = t_alloc(16 << 20), *state[2 * NGRADS] = {0}, *grads[NGRADS];
    for (long step = 0; step < steps; step++) {
        void *x = load_batch();
        forward(step);
        backward(grads, NGRADS);
        optimizer_step(state, grads, NGRADS);
        cudaFreeAsync(x, 0);
        if (step % LOG_EVERY == LOG_EVERY - 1) {
            void *log = logging_tensor();
            cudaFreeAsync(log, 0);
        }
    }
    for (size_t g = 0; g < 2 * NGRADS; g++)
        cudaFreeAsync(state[g], 0);
    cudaFreeAsync(params, 0);
    printf("%ld steps\n", steps);
    return 0;
}
