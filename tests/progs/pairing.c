/* Every way a trace's allocations and frees can fail to pair neatly, for
 * test_pairing.py, which checks that the schema's allocations view and the
 * analyzer's pairing (analyzer/live.c) pair this trace identically:
 *   frees that fail: a double free, an unknown address, the wrong kind of free
 *   cudaFree(NULL) and a size-0 cudaMalloc (both succeed with a NULL pointer)
 *   an address handed out again after its free (same size, same address)
 *   cudaDeviceReset, which drops device allocations with no free call (the
 *   shim writes their frees), so the next allocation returns an address the
 *   reset gave back; a pool allocation outlives it
 *   runtime, driver, pool, managed and host memory; a runtime allocation
 *   freed through the driver
 *   VMM: a handle released while mapped and freed by its last cuMemUnmap, one
 *   released after unmapping, one at a host location, reserve and free of
 *   address ranges, a handle number equal to nothing else's
 *   a fork child (with argv[1] "fork") that frees the parent's allocations:
 *   successful frees of addresses its own trace never saw allocated.
 * Exits 0 when every call behaved as the stand-in documents. */
#include <cuda.h>
#include <cuda_runtime_api.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

static int failures;
#define EXPECT(call, want)                                                                          \
    do {                                                                                            \
        int r_ = (int)(call);                                                                       \
        if (r_ != (int)(want)) {                                                                    \
            fprintf(stderr, "%s:%d: %s returned %d, expected %d\n", __FILE__, __LINE__, #call, r_, (int)(want)); \
            failures++;                                                                             \
        }                                                                                           \
    } while (0)
#define G (2ull << 20)

static void vmm(void)
{
    CUcontext ctx;
    EXPECT(cuInit(0), CUDA_SUCCESS);
    EXPECT(cuDevicePrimaryCtxRetain(&ctx, 0), CUDA_SUCCESS);
    EXPECT(cuCtxSetCurrent(ctx), CUDA_SUCCESS);
    CUmemAllocationProp dev = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_DEVICE, 0}};
    CUmemAllocationProp host = {.type = CU_MEM_ALLOCATION_TYPE_PINNED, .location = {CU_MEM_LOCATION_TYPE_HOST, 0}};
    CUdeviceptr va, va2;
    CUmemGenericAllocationHandle h1, h2, h3, hh;
    EXPECT(cuMemAddressReserve(&va, 16 * G, 0, 0, 0), CUDA_SUCCESS);
    EXPECT(cuMemCreate(&h1, 2 * G, &dev, 0), CUDA_SUCCESS);
    EXPECT(cuMemCreate(&h2, 1 * G, &dev, 0), CUDA_SUCCESS);
    EXPECT(cuMemCreate(&h3, 1 * G, &dev, 0), CUDA_SUCCESS);
    EXPECT(cuMemCreate(&hh, 1 * G, &host, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va, 2 * G, 0, h1, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va + 2 * G, 2 * G, 0, h1, 0), CUDA_SUCCESS);   /* a second mapping of h1 */
    EXPECT(cuMemMap(va + 4 * G, 1 * G, 0, h2, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va + 5 * G, 1 * G, 0, h3, 0), CUDA_SUCCESS);
    EXPECT(cuMemMap(va + 6 * G, 1 * G, 0, hh, 0), CUDA_SUCCESS);
    EXPECT(cuMemRelease(h2), CUDA_SUCCESS);              /* while mapped: held until unmapped */
    EXPECT(cuMemUnmap(va, 2 * G), CUDA_SUCCESS);         /* h1 keeps its second mapping */
    EXPECT(cuMemRelease(h1), CUDA_SUCCESS);              /* while mapped */
    EXPECT(cuMemUnmap(va + 2 * G, 3 * G), CUDA_SUCCESS); /* last mappings of h1 and h2: both freed */
    EXPECT(cuMemUnmap(va + 5 * G, 1 * G), CUDA_SUCCESS);
    EXPECT(cuMemRelease(h3), CUDA_SUCCESS);              /* released after its unmap */
    EXPECT(cuMemRelease(h3), CUDA_ERROR_INVALID_VALUE);  /* double release */
    EXPECT(cuMemUnmap(va + 6 * G, 1 * G), CUDA_SUCCESS);
    EXPECT(cuMemAddressFree(va, 16 * G), CUDA_SUCCESS);
    EXPECT(cuMemAddressReserve(&va2, 4 * G, 0, 0, 0), CUDA_SUCCESS); /* never freed */
    EXPECT(cuMemCreate(&h1, 1 * G, &dev, 0), CUDA_SUCCESS);          /* never released */
    (void)hh;                                                         /* host handle: never released */
}

int main(int argc, char **argv)
{
    void *a, *b, *c, *z = (void *)1, *p, *q, *m, *h, *kept;
    size_t pitch;
    cudaStream_t s;
    EXPECT(cudaMalloc(&a, 1024), cudaSuccess);
    EXPECT(cudaMalloc(&b, 2048), cudaSuccess);
    EXPECT(cudaFree(a), cudaSuccess);
    EXPECT(cudaFree(a), cudaErrorInvalidValue);                 /* double free */
    EXPECT(cudaFree((char *)b + 512), cudaErrorInvalidValue);  /* interior pointer */
    EXPECT(cudaFree((void *)0x1234), cudaErrorInvalidValue);   /* unknown address */
    EXPECT(cudaMalloc(&c, 1024), cudaSuccess);                  /* a's address again */
    if (c != a)
        fprintf(stderr, "expected the freed address back\n"), failures++;
    EXPECT(cudaFree(NULL), cudaSuccess);
    EXPECT(cudaMalloc(&z, 0), cudaSuccess);                     /* NULL */
    if (z != NULL)
        fprintf(stderr, "size 0 gave %p\n", z), failures++;
    EXPECT(cudaFree(z), cudaSuccess);
    EXPECT(cuMemFree_v2((CUdeviceptr)(uintptr_t)c), CUDA_SUCCESS); /* runtime memory, driver free */

    EXPECT(cudaStreamCreate(&s), cudaSuccess);
    EXPECT(cudaMallocAsync(&p, 4096, s), cudaSuccess);
    EXPECT(cudaFreeAsync(p, s), cudaSuccess);
    EXPECT(cudaMallocAsync(&p, 4096, s), cudaSuccess);          /* same address, pool */
    EXPECT(cudaMallocHost(&h, 512), cudaSuccess);
    EXPECT(cudaFree(h), cudaErrorInvalidValue);                 /* the wrong kind of free */
    EXPECT(cudaFreeHost(h), cudaSuccess);
    EXPECT(cudaMallocManaged(&m, 512, cudaMemAttachGlobal), cudaSuccess);
    EXPECT(cudaFree(m), cudaSuccess);

    /* the reset drops q without a free (p, a pool allocation, outlives it);
     * the next pitched allocation gets q's address back */
    EXPECT(cudaMallocPitch(&q, &pitch, 512, 4), cudaSuccess);
    EXPECT(cudaDeviceReset(), cudaSuccess);
    void *q2;
    EXPECT(cudaMallocPitch(&q2, &pitch, 512, 4), cudaSuccess);
    if (q2 != q)
        fprintf(stderr, "expected the reset's address back\n"), failures++;
    EXPECT(cudaFree(q2), cudaSuccess);

    vmm();

    EXPECT(cudaMalloc(&kept, 8192), cudaSuccess);   /* live at exit, freed only by the fork child */
    EXPECT(cudaMalloc(&b, 2048), cudaSuccess);      /* (the first b went with the reset) likewise */
    if (argc > 1 && !strcmp(argv[1], "fork")) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) {
            int bad = failures;
            EXPECT(cudaFree(kept), cudaSuccess);   /* allocated before this trace */
            EXPECT(cudaFree(b), cudaSuccess);
            EXPECT(cudaFree(b), cudaErrorInvalidValue);
            void *k2;
            EXPECT(cudaMalloc(&k2, 8192), cudaSuccess);  /* kept's address, now the child's */
            EXPECT(cudaFree(k2), cudaSuccess);
            _exit(failures != bad);
        }
        int st = 0;
        waitpid(pid, &st, 0);
        if (!WIFEXITED(st) || WEXITSTATUS(st))
            failures++;
    }
    printf("pairing: %d unexpected results\n", failures);
    return failures != 0;
}
