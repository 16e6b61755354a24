/* Seed 004 ("allocated vs reserved") in C: a training loop whose tensors come
 * from a caching allocator shaped like PyTorch's DeviceCachingAllocator. It
 * reserves device memory in segments (requests rounded up to 2 MiB, one
 * tensor per segment, no splitting), hands a freed tensor's segment back to
 * its cache instead of calling cudaFree, and reuses the smallest cached
 * segment that is large enough. So reserved memory (what the trace sees)
 * stays at the largest batch's level while allocated memory (what the
 * program's tensors use) follows each batch, and the segments are still
 * reserved at exit: cached, not leaked. One real leak sits beside it:
 * load_vocabulary_table's cudaMalloc, never freed.
 * usage: caching_allocator BYTES_PER_SAMPLE BS...   (NVTX "train_step N bs=B") */
#include "seed_common.h"

enum { SEGMENT_ROUND = 2 << 20, MAX_SEGMENTS = 256, VOCABULARY_BYTES = 3 << 20 };

struct segment { void *ptr; size_t bytes; int in_use; };
static struct segment segments[MAX_SEGMENTS];
static size_t n_segments, allocated, max_allocated;

__attribute__((noinline)) void *DeviceCachingAllocator_malloc(size_t bytes)
{
    size_t want = (bytes + SEGMENT_ROUND - 1) / SEGMENT_ROUND * SEGMENT_ROUND;
    struct segment *best = NULL;
    for (size_t k = 0; k < n_segments; k++)
        if (!segments[k].in_use && segments[k].bytes >= want && (!best || segments[k].bytes < best->bytes))
            best = &segments[k];
    if (!best) {
        if (n_segments == MAX_SEGMENTS)
            abort();
        best = &segments[n_segments++];
        best->bytes = want;
        best->ptr = cuda_empty(want);
    }
    best->in_use = 1;
    allocated += bytes;
    if (allocated > max_allocated)
        max_allocated = allocated;
    return best->ptr;
}

__attribute__((noinline)) void DeviceCachingAllocator_free(void *p, size_t bytes)
{
    for (size_t k = 0; k < n_segments; k++)
        if (segments[k].ptr == p)
            segments[k].in_use = 0;   /* back to the cache: no cudaFree */
    allocated -= bytes;
}

__attribute__((noinline)) static void *load_vocabulary_table(void) { return cuda_empty(VOCABULARY_BYTES); }

int main(int argc, char **argv)
{
    if (argc < 3) {
        fprintf(stderr, "usage: caching_allocator BYTES_PER_SAMPLE BS...\n");
        return 2;
    }
    size_t per_sample = strtoull(argv[1], NULL, 10);
    void *vocabulary = load_vocabulary_table();
    (void)vocabulary;   /* the leak: never freed */
    size_t weights_bytes = 5 << 20;
    void *weights = DeviceCachingAllocator_malloc(weights_bytes);
    (void)weights;
    for (int i = 2; i < argc; i++) {
        long bs = atol(argv[i]);
        step_begin(MARK_NVTX, i - 2, bs);
        size_t act_bytes = (size_t)bs * per_sample, grad_bytes = (size_t)bs * per_sample / 2;
        void *act = DeviceCachingAllocator_malloc(act_bytes);
        void *grad = DeviceCachingAllocator_malloc(grad_bytes);
        DeviceCachingAllocator_free(grad, grad_bytes);
        DeviceCachingAllocator_free(act, act_bytes);
        step_end(MARK_NVTX);
        printf("batch size %ld: allocated %zu bytes in %zu segments\n", bs, allocated, n_segments);
    }
    printf("max allocated %zu\n", max_allocated);
    return 0;   /* segments stay reserved until exit, as PyTorch's do */
}
