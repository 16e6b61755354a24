/* Seed 001 ("Does PyTorch GPU memory usage increase per batch?") in C: the
 * ModelWithStoredTensor of its examples 2 and 3, a Linear(10, 20) -> ReLU ->
 * Linear(20, 1) trained with SGD on a batch of 32, whose forward appends the
 * ReLU output to model.intermediate_tensors.
 *   leak:  example 2, the list is never cleared: 32 * 20 floats = 2560 bytes
 *          stay live per step, allocated in ModelWithStoredTensor_forward
 *   fixed: example 3, intermediate_tensors.clear() after the optimizer step
 * Every tensor is one cudaMalloc/cudaFree, as under
 * PYTORCH_NO_CUDA_MEMORY_CACHING=1, and the step mirrors PyTorch's order:
 * zero_grad (set_to_none: frees last step's parameter grads), forward,
 * backward (allocates the grads), step. At the end the model is freed, and
 * in "fixed" so is everything else.
 * usage: seed_leak leak|fixed nvtx|marker|none STEPS */
#include "seed_common.h"

enum { BATCH = 32, IN = 10, HIDDEN = 20, OUT = 1, F = 4 /* sizeof(float) */ };

struct param { void *w, *grad; size_t bytes; };

static struct param params[4];   /* linear1.weight, linear1.bias, linear2.weight, linear2.bias */
static void **intermediate_tensors;
static size_t n_intermediate;

__attribute__((noinline)) static void *tensor_linear(size_t rows, size_t cols) { return cuda_empty(rows * cols * F); }
__attribute__((noinline)) static void *tensor_relu(size_t rows, size_t cols) { return cuda_empty(rows * cols * F); }

/* x = relu(linear1(x)); self.intermediate_tensors.append(x); x = linear2(x) */
__attribute__((noinline)) void *ModelWithStoredTensor_forward(void *input)
{
    (void)input;
    void *h = tensor_linear(BATCH, HIDDEN);
    void *x = tensor_relu(BATCH, HIDDEN);
    cudaFree(h);
    intermediate_tensors[n_intermediate++] = x;   /* the append */
    return tensor_linear(BATCH, OUT);
}

__attribute__((noinline)) static void *mse_loss(void *out)
{
    (void)out;
    return cuda_empty(F);
}

/* loss.backward(): the gradient of the output and of the hidden layer are
 * temporaries; the parameters' .grad tensors are created and kept. */
__attribute__((noinline)) static void loss_backward(void)
{
    void *g_out = cuda_empty(BATCH * OUT * F);
    void *g_hidden = cuda_empty(BATCH * HIDDEN * F);
    for (int k = 0; k < 4; k++)
        params[k].grad = cuda_empty(params[k].bytes);
    cudaFree(g_hidden);
    cudaFree(g_out);
}

__attribute__((noinline)) static void optimizer_zero_grad(void)
{
    for (int k = 0; k < 4; k++) {
        cudaFree(params[k].grad);
        params[k].grad = NULL;
    }
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: seed_leak leak|fixed nvtx|marker|none STEPS\n");
        return 2;
    }
    int leak = !strcmp(argv[1], "leak");
    enum mark_mode mark = mark_mode_of(argv[2]);
    long steps = atol(argv[3]);
    intermediate_tensors = calloc((size_t)steps + 1, sizeof *intermediate_tensors);

    size_t shapes[4] = {HIDDEN * IN, HIDDEN, OUT * HIDDEN, OUT};
    for (int k = 0; k < 4; k++) {
        params[k].bytes = shapes[k] * F;
        params[k].w = cuda_empty(params[k].bytes);
    }
    void *input_data = cuda_empty(BATCH * IN * F), *target_data = cuda_empty(BATCH * OUT * F);

    for (long i = 0; i < steps; i++) {
        step_begin(mark, i, BATCH);
        optimizer_zero_grad();
        void *outputs = ModelWithStoredTensor_forward(input_data);
        void *loss = mse_loss(outputs);
        loss_backward();
        cudaFree(loss);
        cudaFree(outputs);
        /* optimizer.step(): SGD without momentum allocates nothing */
        if (!leak) {
            while (n_intermediate)   /* model.intermediate_tensors.clear() */
                cudaFree(intermediate_tensors[--n_intermediate]);
        }
        step_end(mark);
    }
    optimizer_zero_grad();
    for (int k = 0; k < 4; k++)
        cudaFree(params[k].w);
    cudaFree(input_data);
    cudaFree(target_data);
    printf("%ld steps, %zu intermediate tensors kept\n", steps, n_intermediate);
    return 0;
}
