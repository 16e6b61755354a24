/* selftest.c: self-check of the fake CUDA runtime (tests/fake_cuda/fake_cudart.c)
 * and of how it reaches the fake driver (fake_libcuda.c: cudaMalloc/cudaFree).
 * Run by `meson test` (tests/fake_cuda/meson.build), or alone; prints "fake_cuda_selftest: OK" and exits 0.
 * Sets FAKE_CUDA_DEVICE_COUNT=2 and FAKE_CUDA_DEVICE_BYTES=1 MiB for itself. */
#include <cuda_runtime_api.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

/* The per-thread-default-stream names the library also exports (same signatures). */
extern __typeof__(cudaMallocAsync) cudaMallocAsync_ptsz;
extern __typeof__(cudaFreeAsync) cudaFreeAsync_ptsz;
extern __typeof__(cudaMallocFromPoolAsync) cudaMallocFromPoolAsync_ptsz;
extern __typeof__(cudaMemsetAsync) cudaMemsetAsync_ptsz;
extern __typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;

static int failures;

#define CHECK(cond)                                                              \
    do {                                                                         \
        if (!(cond)) {                                                           \
            fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
            failures++;                                                          \
        }                                                                        \
    } while (0)
#define OK(call) CHECK((call) == cudaSuccess)

#define BASE0 0x200000000000ULL  /* the runtime's own device memory (pitched, 3D, pools) */
#define BASE1 0x210000000000ULL
#define DBASE0 0x300000000000ULL /* the driver's (cudaMalloc) */
#define DBASE1 0x310000000000ULL
#define CAP   (1024ULL * 1024ULL)
#define A(p)  ((uint64_t)(uintptr_t)(p))

#define NTHREADS 8
#define NPAIRS   20000

static void *worker(void *arg)
{
    (void)arg;
    for (int i = 0; i < NPAIRS; i++) {
        void *p = NULL;
        if (cudaMalloc(&p, 1024) != cudaSuccess || A(p) % 512 != 0 || cudaFree(p) != cudaSuccess) {
            __atomic_fetch_add(&failures, 1, __ATOMIC_RELAXED);
            break;
        }
    }
    return NULL;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(void)
{
    setenv("FAKE_CUDA_DEVICE_COUNT", "2", 1);
    setenv("FAKE_CUDA_DEVICE_BYTES", "1048576", 1);

    int n = -1, v = 0, dev = -1;
    OK(cudaGetDeviceCount(&n));
    CHECK(n == 2);
    OK(cudaDriverGetVersion(&v));
    CHECK(v == 13000);
    OK(cudaRuntimeGetVersion(&v));
    CHECK(v == 13000);
    OK(cudaGetDevice(&dev));
    CHECK(dev == 0);

    /* cudaMalloc through the driver: deterministic addresses, same-size reuse after free */
    void *a, *b, *c, *d, *z = (void *)1;
    OK(cudaMalloc(&a, 1000));
    OK(cudaMalloc(&b, 1));
    OK(cudaMalloc(&c, 513));
    CHECK(A(a) == DBASE0);
    CHECK(A(b) == DBASE0 + 1024);
    CHECK(A(c) == DBASE0 + 1536);
    OK(cudaFree(b));
    OK(cudaMalloc(&d, 1));
    CHECK(d == b);
    OK(cudaMalloc(&z, 0));
    CHECK(z == NULL);
    OK(cudaFree(a));
    OK(cudaFree(d));
    OK(cudaFree(c));

    /* the runtime's own memory: first fit, reuse after free, coalescing */
    cudaStream_t s00 = 0;
    OK(cudaMallocAsync(&a, 1000, s00));
    OK(cudaMallocAsync(&b, 1, s00));
    OK(cudaMallocAsync(&c, 513, s00));
    CHECK(A(a) == BASE0 && A(b) == BASE0 + 1024 && A(c) == BASE0 + 1536);
    OK(cudaFreeAsync(a, s00));
    OK(cudaFreeAsync(b, s00));
    OK(cudaMallocAsync(&a, 1536, s00)); /* coalesced hole [BASE0, BASE0+1536) */
    CHECK(A(a) == BASE0);
    OK(cudaFreeAsync(a, s00));
    OK(cudaFreeAsync(c, s00));
    OK(cudaMallocAsync(&a, 4096, s00)); /* everything coalesced back */
    CHECK(A(a) == BASE0);
    OK(cudaFreeAsync(a, s00));

    /* alignment */
    void *ps[64];
    for (int i = 0; i < 64; i++) {
        OK(cudaMalloc(&ps[i], (size_t)(i * 37 + 1)));
        CHECK(A(ps[i]) % 512 == 0);
    }
    for (int i = 0; i < 64; i += 2)
        OK(cudaFree(ps[i]));
    for (int i = 1; i < 64; i += 2)
        OK(cudaFree(ps[i]));

    /* freeing errors */
    OK(cudaFree(NULL));
    int local;
    CHECK(cudaFree(&local) == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaErrorInvalidValue);
    CHECK(cudaGetLastError() == cudaSuccess);
    OK(cudaMalloc(&a, 512));
    OK(cudaFree(a));
    CHECK(cudaFree(a) == cudaErrorInvalidValue); /* double free */
    CHECK(cudaFree((char *)a + 512) == cudaErrorInvalidValue);
    (void)cudaGetLastError();

    /* capacity: 1 MiB, counted as allocated (rounded up to 512) */
    size_t fr = 0, tot = 0;
    OK(cudaMemGetInfo(&fr, &tot));
    CHECK(tot == CAP && fr == CAP);
    OK(cudaMalloc(&a, CAP - 100));
    OK(cudaMemGetInfo(&fr, &tot));
    CHECK(fr == 0);
    b = (void *)0x1234;
    CHECK(cudaMalloc(&b, 1) == cudaErrorMemoryAllocation);
    CHECK(b == NULL);
    CHECK(cudaPeekAtLastError() == cudaErrorMemoryAllocation);
    CHECK(cudaGetLastError() == cudaErrorMemoryAllocation);
    CHECK(cudaGetLastError() == cudaSuccess);
    CHECK(strcmp(cudaGetErrorName(cudaErrorMemoryAllocation), "cudaErrorMemoryAllocation") == 0);
    CHECK(strcmp(cudaGetErrorString(cudaErrorMemoryAllocation), "out of memory") == 0);
    b = (void *)0x1234;
    CHECK(cudaMallocAsync(&b, 1, 0) == cudaErrorMemoryAllocation); /* pools share the capacity */
    CHECK(b == NULL);
    CHECK(cudaMalloc(&b, (size_t)-1) == cudaErrorMemoryAllocation);
    OK(cudaMallocManaged(&b, 4096, cudaMemAttachGlobal)); /* managed does not count */
    OK(cudaFree(b));
    OK(cudaFree(a));
    (void)cudaGetLastError();

    /* pitch math */
    size_t pitch = 0;
    OK(cudaMallocPitch(&a, &pitch, 1000, 3));
    CHECK(pitch == 1024 && A(a) == BASE0);
    OK(cudaMallocAsync(&b, 1, 0));
    CHECK(A(b) == BASE0 + 3 * 1024);
    OK(cudaFree(a));
    OK(cudaFree(b));
    struct cudaPitchedPtr pp;
    struct cudaExtent ext = { .width = 513, .height = 2, .depth = 3 };
    OK(cudaMalloc3D(&pp, ext));
    CHECK(pp.pitch == 1024 && pp.xsize == 513 && pp.ysize == 2 && A(pp.ptr) == BASE0);
    OK(cudaMallocAsync(&b, 1, 0));
    CHECK(A(b) == BASE0 + 1024 * 2 * 3);
    OK(cudaFree(pp.ptr));
    OK(cudaFree(b));
    OK(cudaMemGetInfo(&fr, &tot));
    CHECK(fr == CAP);

    /* pinned and managed memory are real and writable */
    char *h1, *h2, *m;
    OK(cudaMallocHost((void **)&h1, 4096));
    OK(cudaHostAlloc((void **)&h2, 4096, cudaHostAllocMapped | cudaHostAllocPortable));
    OK(cudaMallocManaged((void **)&m, 4096, cudaMemAttachGlobal));
    CHECK(A(h1) % 512 == 0 && A(h2) % 512 == 0 && A(m) % 512 == 0);
    memset(h1, 0xab, 4096);
    OK(cudaMemcpy(h2, h1, 4096, cudaMemcpyHostToHost));
    CHECK((unsigned char)h2[4095] == 0xab);
    OK(cudaMemset(m, 7, 4096));
    CHECK(m[0] == 7 && m[4095] == 7);
    OK(cudaMalloc(&a, 4096));
    OK(cudaMemcpy(a, h1, 4096, cudaMemcpyHostToDevice)); /* fake device: nothing touched */
    OK(cudaMemset(a, 1, 4096));
    OK(cudaMemcpy(h1, a, 4096, cudaMemcpyDeviceToHost)); /* reads back zeros */
    CHECK(h1[0] == 0 && h1[4095] == 0);
    CHECK(cudaMemcpy(h1, h2, 1, (enum cudaMemcpyKind)42) == cudaErrorInvalidMemcpyDirection);
    CHECK(cudaFree(h1) == cudaErrorInvalidValue);     /* pinned needs cudaFreeHost */
    CHECK(cudaFreeHost(m) == cudaErrorInvalidValue);  /* managed needs cudaFree */
    CHECK(cudaMallocManaged((void **)&z, 0, cudaMemAttachGlobal) == cudaErrorInvalidValue);
    CHECK(cudaMallocManaged((void **)&z, 8, 0) == cudaErrorInvalidValue);
    OK(cudaFreeHost(h1));
    OK(cudaFreeHost(h2));
    OK(cudaFree(m));
    OK(cudaFree(a));
    (void)cudaGetLastError();

    /* devices, streams, pools */
    CHECK(cudaSetDevice(2) == cudaErrorInvalidDevice);
    CHECK(cudaSetDevice(-1) == cudaErrorInvalidDevice);
    struct cudaDeviceProp prop;
    OK(cudaGetDeviceProperties(&prop, 1));
    CHECK(strcmp(prop.name, "gputrace fake GPU") == 0 && prop.totalGlobalMem == CAP && prop.major == 9 &&
          prop.minor == 0 && prop.pciBusID == 1);
    cudaStream_t s0, s1, s2;
    OK(cudaStreamCreate(&s0));
    OK(cudaSetDevice(1));
    OK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
    OK(cudaMalloc(&a, 100));
    CHECK(A(a) == DBASE1); /* the driver's current context follows cudaSetDevice */
    OK(cudaSetDevice(0));
    CHECK(s0 != NULL && s1 != NULL && s0 != s1);
    OK(cudaMallocAsync(&b, 100, s1)); /* stream of device 1 */
    CHECK(A(b) == BASE1);
    OK(cudaMallocAsync_ptsz(&c, 100, s0));
    CHECK(A(c) == BASE0);
    OK(cudaFree(b)); /* cudaFree on pool memory */
    OK(cudaFreeAsync(a, s0)); /* cudaFreeAsync on cudaMalloc memory */
    OK(cudaFreeAsync_ptsz(c, cudaStreamPerThread));
    OK(cudaStreamSynchronize(s1));
    OK(cudaStreamSynchronize_ptsz(0));
    OK(cudaMemsetAsync_ptsz(NULL, 0, 0, s0));
    cudaMemPool_t dp, np;
    OK(cudaDeviceGetDefaultMemPool(&dp, 1));
    OK(cudaMallocFromPoolAsync(&a, 10, dp, s0)); /* pool's device wins */
    CHECK(A(a) == BASE1);
    struct cudaMemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = cudaMemAllocationTypePinned;
    props.location.type = cudaMemLocationTypeDevice;
    props.location.id = 0;
    OK(cudaMemPoolCreate(&np, &props));
    OK(cudaMallocFromPoolAsync_ptsz(&b, 10, np, s1));
    CHECK(A(b) == BASE0);
    OK(cudaMemPoolTrimTo(np, 0));
    OK(cudaMemPoolDestroy(np));
    CHECK(cudaMemPoolDestroy(dp) == cudaErrorInvalidValue);
    CHECK(cudaMemPoolTrimTo(np, 0) == cudaErrorInvalidValue);
    OK(cudaFreeAsync(a, s1));
    OK(cudaFreeAsync(b, s1));
    OK(cudaStreamDestroy(s0));
    CHECK(cudaStreamDestroy(s0) == cudaErrorInvalidResourceHandle);
    CHECK(cudaMallocAsync(&a, 10, s0) == cudaErrorInvalidResourceHandle);
    OK(cudaStreamDestroy(s1));
    OK(cudaStreamCreate(&s2));
    CHECK(s2 != s0 && s2 != s1);
    OK(cudaStreamDestroy(s2));
    OK(cudaDeviceSynchronize());
    (void)cudaGetLastError();

    /* cudaDeviceReset drops the device's memory without frees, as the real
     * one does; pool allocations outlive it */
    {
        void *m, *h;
        OK(cudaMalloc(&a, 100));
        OK(cudaMallocAsync(&b, 100, 0));
        OK(cudaMallocManaged(&m, 100, cudaMemAttachGlobal));
        OK(cudaMallocHost(&h, 100));
        OK(cudaDeviceReset());
        CHECK(cudaFree(a) == cudaErrorInvalidValue);
        CHECK(cudaFree(m) == cudaErrorInvalidValue);
        CHECK(cudaFreeHost(h) == cudaErrorInvalidValue);
        OK(cudaFree(b));
        OK(cudaMemGetInfo(&fr, &tot));
        CHECK(fr == CAP);
        (void)cudaGetLastError();
    }

    /* threads: 8 x 20000 alloc/free pairs of 1 KiB */
    pthread_t th[NTHREADS];
    double t0 = now();
    for (int i = 0; i < NTHREADS; i++)
        pthread_create(&th[i], NULL, worker, NULL);
    for (int i = 0; i < NTHREADS; i++)
        pthread_join(th[i], NULL);
    double dt = now() - t0;
    printf("fake_cuda_selftest: %d threads x %d alloc/free pairs: %.3f s\n", NTHREADS, NPAIRS, dt);
    /* the stand-in's locks stay cheap enough for the suite's many calls; a
     * sanitizer's build runs them 5-20x slower, more on a loaded machine (TSan:
     * 0.29 s alone, 1.3 s beside another suite on two cores) */
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
    CHECK(dt < 10.0);
#else
    CHECK(dt < 1.0);
#endif
    OK(cudaMemGetInfo(&fr, &tot));
    CHECK(fr == CAP);
    OK(cudaMalloc(&a, 1024));
    CHECK(A(a) >= DBASE0 && A(a) < DBASE1);
    OK(cudaFree(a));

    if (failures) {
        printf("fake_cuda_selftest: %d FAILED\n", failures);
        return 1;
    }
    printf("fake_cuda_selftest: OK\n");
    return 0;
}
