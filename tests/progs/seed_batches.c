/* Seeds 000 and 002 in C: a model trained with Adam through a sequence of
 * batch sizes (seed 000 runs 64, 8, 32, 4), whose memory follows seed 002's
 * equation
 *     peak = model + optimizer state + gradients + loss      (fixed)
 *          + batch size * (input + activations + one backward temporary)
 * Parameters, Adam's two states (exp_avg, exp_avg_sq) and the loss scalar
 * (PyTorch's smallest block, 512 bytes) do not depend on the batch; the input
 * batch, one activation per layer and the backward temporary (the widest
 * layer's gradient) do. Each tensor is one cudaMalloc/cudaFree, as under
 * PYTORCH_NO_CUDA_MEMORY_CACHING=1, in PyTorch's order: zero_grad (frees the
 * last step's grads), forward, backward (creates the grads), step. A failed
 * allocation ends the program like torch.OutOfMemoryError (exit 1).
 * usage: seed_batches nvtx|marker|none PARAMS INPUT_FLOATS W1,W2,... BS...
 *   PARAMS: floats in the model; INPUT_FLOATS: floats per sample;
 *   W1,W2,...: floats per sample of each layer's activation */
#include "seed_common.h"

enum { F = 4, LOSS_BYTES = 512, MAX_LAYERS = 32 };

static size_t widths[MAX_LAYERS], n_layers, widest;
static size_t n_params, input_floats;
static void *grads;

/* SEED_SPLIT_INPUT=1: each sample's input is its own allocation (a batch kept
 * as a list of per-sample tensors), so the live allocations grow with the batch */
static int split_input;
static void **samples;

__attribute__((noinline)) static void *load_batch(long bs)
{
    if (!split_input)
        return cuda_empty((size_t)bs * input_floats * F);
    samples = realloc(samples, (size_t)bs * sizeof *samples);
    for (long i = 0; i < bs; i++)
        samples[i] = cuda_empty(input_floats * F);
    return NULL;
}

static void free_batch(void *x, long bs)
{
    cudaFree(x);
    for (long i = 0; split_input && i < bs; i++)
        cudaFree(samples[i]);
}
__attribute__((noinline)) static void *layer_forward(long bs, size_t l) { return cuda_empty((size_t)bs * widths[l] * F); }

__attribute__((noinline)) static void backward(long bs)
{
    void *tmp = cuda_empty((size_t)bs * widest * F);   /* grad of the widest activation */
    grads = cuda_empty(n_params * F);
    cudaFree(tmp);
}

__attribute__((noinline)) static void train_step(long bs)
{
    void *act[MAX_LAYERS];
    cudaFree(grads);   /* optimizer.zero_grad(set_to_none=True) */
    grads = NULL;
    void *x = load_batch(bs);
    for (size_t l = 0; l < n_layers; l++)
        act[l] = layer_forward(bs, l);
    void *loss = cuda_empty(LOSS_BYTES);
    backward(bs);
    for (size_t l = n_layers; l-- > 0;)
        cudaFree(act[l]);
    cudaFree(loss);
    free_batch(x, bs);
    /* optimizer.step(): Adam updates its states in place */
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: seed_batches nvtx|marker|none PARAMS INPUT_FLOATS W1,W2,... BS...\n");
        return 2;
    }
    enum mark_mode mark = mark_mode_of(argv[1]);
    split_input = getenv("SEED_SPLIT_INPUT") && !strcmp(getenv("SEED_SPLIT_INPUT"), "1");
    n_params = strtoull(argv[2], NULL, 10);
    input_floats = strtoull(argv[3], NULL, 10);
    for (char *s = argv[4], *end; *s && n_layers < MAX_LAYERS; s = *end ? end + 1 : end) {
        widths[n_layers] = strtoull(s, &end, 10);
        if (widths[n_layers] > widest)
            widest = widths[n_layers];
        n_layers++;
    }
    void *model = cuda_empty(n_params * F);
    void *exp_avg = cuda_empty(n_params * F), *exp_avg_sq = cuda_empty(n_params * F);
    for (int i = 5; i < argc; i++) {
        long bs = atol(argv[i]);
        step_begin(mark, i - 5, bs);
        train_step(bs);
        step_end(mark);
        printf("step %d batch size %ld done\n", i - 5, bs);
    }
    cudaFree(grads);
    cudaFree(exp_avg_sq);
    cudaFree(exp_avg);
    cudaFree(model);
    return 0;
}
