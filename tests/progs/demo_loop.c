/* The setup demo, after seed 001: a training loop whose step allocates
 * activations and frees them, but keeps one tensor per step (the classic
 * `total_loss += loss` that retains the graph): memory grows per iteration. */
#include <cuda_runtime_api.h>
#include <stdio.h>

__attribute__((noinline)) static void *alloc(size_t n)
{
    void *p = NULL;
    cudaMalloc(&p, n);
    return p;
}

__attribute__((noinline)) void *retain_loss_history(void) { return alloc(256 << 10); }

__attribute__((noinline)) void train_step(int bs)
{
    void *act1 = alloc((size_t)bs * 4096), *act2 = alloc((size_t)bs * 2048), *grad = alloc(1 << 20);
    cudaFree(act2);
    cudaFree(act1);
    cudaFree(grad);
}

int main(void)
{
    void *weights = alloc(64 << 20);
    for (int step = 0; step < 50; step++) {
        train_step(64);
        retain_loss_history(); /* leaked: 256 KiB per step */
    }
    cudaFree(weights);
    printf("trained 50 steps\n");
    return 0;
}
