/* Plants CUPTI activity through the CUPTI stand-in (tests/fake_cupti) between
 * two allocations, so the test can check that kernels, copies, memsets and
 * the driver's memory records land on the events' clock. Loads libstdc++ as
 * any C++ program has it (the shim demangles kernel names with it).
 *   plant:    200 kernels "_Z6matmulPfS_i" (grid 4, block 128, 1 us each),
 *             a 4096-byte HtoD copy, a 2048-byte memset of 7, a 1 MiB driver
 *             allocation record and a 32 MiB pool creation
 *   takeover: as plant, then registers its own activity buffers (as
 *             torch.profiler does) and plants 5 kernels "_Z5afterv" that the
 *             shim must not see
 *   steady MS: a kernel "_Z4stepv" every 5 ms for MS milliseconds (default
 *             3500), as a training loop launches them; prints "steady N of M
 *             attached K detaches D" (N recorded by the stand-in: kernel
 *             records were on; K planted while CUPTI was attached; D detaches)
 *   graph MS: 300 ms with no CUDA call, then instantiates and launches a
 *             CUDA graph (prints "graph R", R the launch's result), then as
 *             steady MS
 *   pause MS: 3 kernels "_Z5setupv", 2.5 s with no CUDA call (a program
 *             importing, building its model on the CPU), then as steady MS
 *   autotune MS: for 1.5 s a kernel of a new name every 5 ms ("candidate_N",
 *             "_Z4stepv" the first: a compiler's autotuning, which runs the
 *             step's kernel among its candidates), 1.2 s with no CUDA call
 *             (compiling on the CPU), then as steady MS
 *   subscribe: sleeps 300 ms with no CUDA call (the shim, which detaches CUPTI
 *             outside its windows, then waits for an API exit with its own
 *             subscriber in CUPTI's one slot), then subscribes as
 *             torch.profiler does; prints "subscribe R" (R: CUPTI's result, 0
 *             is success), then goes on as steady MS; subscribe_v2: the same
 *             through cuptiSubscribe_v2; subscribe_profiler: a profiling
 *             session of its own instead (cuptiProfilerInitialize); each
 *             with "_handle" appended finds the function by dlsym on a handle
 *             of libcupti, as a program that dlopens CUPTI does
 * Prints the CLOCK_MONOTONIC span of the planting. */
#include <cuda_runtime_api.h>
#include <cupti.h>
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef int (*emit_fn)(const char *, const char *, uint64_t, uint64_t, uint64_t, uint32_t);

static uint64_t mono(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

static int find(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    if (info->dlpi_name && strstr(info->dlpi_name, "libcupti.so")) {
        snprintf(data, 4096, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

static void CUPTIAPI my_callback(void *u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void *info)
{
    (void)u, (void)d, (void)id, (void)info;
}

static int mine;
static void CUPTIAPI my_request(uint8_t **b, size_t *size, size_t *max)
{
    *b = aligned_alloc(8, 1 << 16);
    *size = 1 << 16;
    *max = 0;
}
static void CUPTIAPI my_complete(CUcontext c, uint32_t s, uint8_t *b, size_t size, size_t valid)
{
    (void)c, (void)s, (void)size;
    mine += (int)(valid / sizeof(CUpti_ActivityKernel10)); /* only kernels are planted after takeover */
    free(b);
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "plant";
    dlopen("libstdc++.so.6", RTLD_NOW | RTLD_GLOBAL);
    void *a, *b;
    if (cudaMalloc(&a, 111) != cudaSuccess) /* the shim starts CUPTI in this call */
        abort();
    char path[4096] = "";
    emit_fn emit = NULL;
    void (*counts)(int *, int *) = NULL;
    if (dl_iterate_phdr(find, path)) {
        void *h = dlopen(path, RTLD_NOW | RTLD_NOLOAD);
        emit = h ? (emit_fn)dlsym(h, "fake_cupti_emit") : NULL;
        counts = h ? (void (*)(int *, int *))dlsym(h, "fake_cupti_counts") : NULL;
    }
    if (emit && !strncmp(mode, "subscribe", 9)) {
        struct timespec wait = {0, 300000000};
        nanosleep(&wait, NULL);
        CUpti_SubscriberHandle h;
        CUptiResult r = CUPTI_ERROR_UNKNOWN;
        /* "..._handle": found as a program that dlopens CUPTI finds it */
        void *from = strstr(mode, "_handle") ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : RTLD_DEFAULT;
        if (!strncmp(mode, "subscribe_profiler", 18)) {
            CUptiResult (*init)(void *) = (CUptiResult(*)(void *))dlsym(from, "cuptiProfilerInitialize");
            r = init ? init(NULL) : r;
        } else if (!strncmp(mode, "subscribe_v2", 12)) {
            CUptiResult (*sub2)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *) =
                (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *, CUpti_SubscriberParams *))dlsym(
                    from, "cuptiSubscribe_v2");
            r = sub2 ? sub2(&h, my_callback, NULL, NULL) : r;
        } else {
            CUptiResult (*sub)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *) =
                (CUptiResult(*)(CUpti_SubscriberHandle *, CUpti_CallbackFunc, void *))dlsym(from, "cuptiSubscribe");
            r = sub ? sub(&h, my_callback, NULL) : r;
        }
        printf("subscribe %d\n", (int)r);
    }
    if (emit && !strcmp(mode, "graph")) { /* 300 ms with no CUDA call (a detach may be waiting), then a graph */
        struct timespec wait = {0, 300000000};
        nanosleep(&wait, NULL);
        cudaGraphExec_t exec;
        cudaError_t r = cudaGraphInstantiate(&exec, NULL, 0);
        printf("graph %d\n", (int)(r == cudaSuccess ? cudaGraphLaunch(exec, NULL) : r));
    }
    if (emit && !strcmp(mode, "pause")) { /* a little work, then seconds of none before the loop */
        for (uint32_t i = 1; i <= 3; i++)
            emit("kernel", "_Z5setupv", 1, 32, 1000, 100000 + i);
        struct timespec wait = {2, 500000000};
        nanosleep(&wait, NULL);
    }
    if (emit && !strcmp(mode, "autotune")) {
        char name[32] = "_Z4stepv";
        struct timespec gap = {0, 5000000}, compile = {1, 200000000};
        uint64_t until = mono() + 1500000000ull;
        for (uint32_t i = 1; mono() < until; i++) {
            emit("kernel", name, 1, 32, 1000, 200000 + i);
            snprintf(name, sizeof name, "candidate_%u", i);
            nanosleep(&gap, NULL);
        }
        nanosleep(&compile, NULL);
    }
    if (emit && (!strcmp(mode, "steady") || !strcmp(mode, "pause") || !strcmp(mode, "autotune") ||
                 !strcmp(mode, "graph") ||
                 !strncmp(mode, "subscribe", 9))) {
        uint64_t until = mono() + (uint64_t)(argc > 2 ? atof(argv[2]) : 3500) * 1000000ull;
        int on = 0, all = 0;
        struct timespec pause = {0, 5000000};
        for (uint32_t i = 1; mono() < until; i++, all++) {
            on += emit("kernel", "_Z4stepv", 1, 32, 1000, i);
            nanosleep(&pause, NULL);
        }
        cudaFree(a);
        int attached = -1, detaches = -1;
        if (counts)
            counts(&attached, &detaches);
        printf("steady %d of %d attached %d detaches %d\n", on, all, attached, detaches);
        return 0;
    }
    uint64_t t0 = mono();
    int n = 0;
    for (uint32_t i = 0; emit && i < 200; i++)
        n += emit("kernel", "_Z6matmulPfS_i", 4, 128, 1000, i + 1);
    if (emit) {
        n += emit("memcpy", NULL, 1 /* HtoD */, 4096, 500, 1001);
        n += emit("memset", NULL, 7, 2048, 300, 1002);
        n += emit("memory", NULL, 1 /* allocation */, 1 << 20, 0, 1003);
        n += emit("pool", NULL, 0, 32 << 20, 0, 1004);
    }
    uint64_t t1 = mono();
    if (cudaMalloc(&b, 222) != cudaSuccess)
        abort();
    if (emit && !strcmp(mode, "takeover")) {
        CUptiResult (*reg)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc) =
            (CUptiResult(*)(CUpti_BuffersCallbackRequestFunc, CUpti_BuffersCallbackCompleteFunc))dlsym(
                RTLD_DEFAULT, "cuptiActivityRegisterCallbacks");
        CUptiResult (*enable)(CUpti_ActivityKind) =
            (CUptiResult(*)(CUpti_ActivityKind))dlsym(dlopen(path, RTLD_NOW | RTLD_NOLOAD), "cuptiActivityEnable");
        CUptiResult (*flush)(uint32_t) =
            (CUptiResult(*)(uint32_t))dlsym(dlopen(path, RTLD_NOW | RTLD_NOLOAD), "cuptiActivityFlushAll");
        if (!reg || reg(my_request, my_complete) != CUPTI_SUCCESS)
            abort();
        enable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        for (uint32_t i = 0; i < 5; i++)
            emit("kernel", "_Z5afterv", 1, 1, 100, 2000 + i);
        flush(0);
        printf("program got %d\n", mine);
    }
    cudaFree(b);
    cudaFree(a);
    printf("emitted %d span %llu %llu\n", n, (unsigned long long)t0, (unsigned long long)t1);
    return 0;
}
