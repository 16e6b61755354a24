/* The same planted pattern of driver allocations, reached along one path
 * chosen by argv[1], so a test can check that each path is traced alike:
 *   direct        the linked symbols (built without STATIC_LIKE only)
 *   dlsym         dlopen("libcuda.so.1") + dlsym of each versioned name
 *   procaddress   dlsym("cuGetProcAddress_v2"), then base names at 13000
 *   procaddress1  the pre-12.0 dlsym("cuGetProcAddress") (no status argument)
 *   perthread     procaddress with CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
 *   entrypoint    cudaGetDriverEntryPointByVersion (without STATIC_LIKE only)
 *   entrypoint0   cudaGetDriverEntryPoint           (without STATIC_LIKE only)
 *   runtime       dlopen("libcudart.so.13") + dlsym("cudaMalloc"/"cudaFree")
 * Prints "api ptr size" per allocation, then what the fake driver counted
 * ("ptsz N": calls that reached a _ptsz function; "v1 N": the 32-bit
 * cuMemAlloc). Built twice: driver_paths links the fake libcuda and libcudart;
 * driver_static_like (-DSTATIC_LIKE) links neither, like an nvcc-built program
 * with static cudart, which dlopens libcuda and asks it for everything. */
#include <cuda.h>
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#ifndef STATIC_LIKE
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cuda_runtime_api.h>
#endif

#define FAIL(...) do { fprintf(stderr, __VA_ARGS__); fputc('\n', stderr); return 1; } while (0)

static struct {
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free_)(CUdeviceptr);
    CUresult (*pitch)(CUdeviceptr *, size_t *, size_t, size_t, unsigned int);
    CUresult (*managed)(CUdeviceptr *, size_t, unsigned int);
    CUresult (*host)(void **, size_t);
    CUresult (*host_alloc)(void **, size_t, unsigned int);
    CUresult (*free_host)(void *);
    CUresult (*async)(CUdeviceptr *, size_t, CUstream);
    CUresult (*free_async)(CUdeviceptr, CUstream);
    CUresult (*from_pool)(CUdeviceptr *, size_t, CUmemoryPool, CUstream);
} f;

/* name: the versioned export (dlsym); base: what cuGetProcAddress takes */
static const struct { const char *name, *base; void **slot; } fns[] = {
    {"cuMemAlloc_v2", "cuMemAlloc", (void **)&f.alloc},
    {"cuMemFree_v2", "cuMemFree", (void **)&f.free_},
    {"cuMemAllocPitch_v2", "cuMemAllocPitch", (void **)&f.pitch},
    {"cuMemAllocManaged", "cuMemAllocManaged", (void **)&f.managed},
    {"cuMemAllocHost_v2", "cuMemAllocHost", (void **)&f.host},
    {"cuMemHostAlloc", "cuMemHostAlloc", (void **)&f.host_alloc},
    {"cuMemFreeHost", "cuMemFreeHost", (void **)&f.free_host},
    {"cuMemAllocAsync", "cuMemAllocAsync", (void **)&f.async},
    {"cuMemFreeAsync", "cuMemFreeAsync", (void **)&f.free_async},
    {"cuMemAllocFromPoolAsync", "cuMemAllocFromPoolAsync", (void **)&f.from_pool},
};
#define NFNS (sizeof fns / sizeof fns[0])

typedef CUresult (*gpa2_fn)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
typedef CUresult (*gpa1_fn)(const char *, void **, int, cuuint64_t);

/* The 32-bit cuMemAlloc of versions before 3.2: a version-aware lookup must
 * give the program this one, untraced, when it asks for version 3000. */
static int check_old_version(void *h, gpa2_fn gpa)
{
    void *old = NULL, *cur = NULL;
    CUdriverProcAddressQueryResult st;
    if (gpa("cuMemAlloc", &old, 3000, 0, &st) || gpa("cuMemAlloc", &cur, 13000, 0, &st))
        FAIL("cuGetProcAddress(cuMemAlloc) failed");
    if (old != dlsym(h, "cuMemAlloc") || old == cur || cur != (void *)f.alloc)
        FAIL("cuGetProcAddress(cuMemAlloc, 3000) is not the 32-bit cuMemAlloc");
    unsigned int p32;
    if (((CUresult(*)(unsigned int *, unsigned int))old)(&p32, 512) != CUDA_ERROR_NOT_SUPPORTED)
        FAIL("the 32-bit cuMemAlloc answered unexpectedly");
    return 0;
}

static int resolve(const char *mode, void *h)
{
    if (!strcmp(mode, "dlsym")) {
        for (size_t i = 0; i < NFNS; i++) {
            dlerror();
            *fns[i].slot = dlsym(h, fns[i].name);
            const char *err = dlerror(); /* the usual idiom: a success leaves no error */
            if (err)
                FAIL("dlsym(%s) succeeded but dlerror() says %s", fns[i].name, err);
        }
        dlerror();
        if (dlsym(h, "cuNoSuchFunction") || !dlerror())
            FAIL("dlsym of a missing name: no NULL and error");
    } else if (!strcmp(mode, "procaddress") || !strcmp(mode, "perthread")) {
        gpa2_fn gpa = (gpa2_fn)dlsym(h, "cuGetProcAddress_v2");
        if (!gpa)
            FAIL("no cuGetProcAddress_v2");
        cuuint64_t flags = mode[0] == 'p' && mode[1] == 'e' ? CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM
                                                            : CU_GET_PROC_ADDRESS_DEFAULT;
        CUdriverProcAddressQueryResult st;
        for (size_t i = 0; i < NFNS; i++)
            if (gpa(fns[i].base, fns[i].slot, 13000, flags, &st) || st != CU_GET_PROC_ADDRESS_SUCCESS)
                FAIL("cuGetProcAddress(%s) failed", fns[i].base);
        /* the query hands out itself too: asking it for itself gives what dlsym gave */
        void *self = NULL;
        if (gpa("cuGetProcAddress", &self, 13000, 0, &st) || self != (void *)gpa)
            FAIL("cuGetProcAddress(cuGetProcAddress) differs from dlsym");
        return check_old_version(h, gpa);
    } else if (!strcmp(mode, "procaddress1")) {
        gpa1_fn gpa = (gpa1_fn)dlsym(h, "cuGetProcAddress");
        if (!gpa)
            FAIL("no cuGetProcAddress");
        for (size_t i = 0; i < NFNS; i++)
            if (gpa(fns[i].base, fns[i].slot, 13000, 0))
                FAIL("cuGetProcAddress(%s) failed", fns[i].base);
#ifndef STATIC_LIKE
    } else if (!strcmp(mode, "direct")) {
        f.alloc = cuMemAlloc_v2, f.free_ = cuMemFree_v2, f.pitch = cuMemAllocPitch_v2;
        f.managed = cuMemAllocManaged, f.host = cuMemAllocHost_v2, f.host_alloc = cuMemHostAlloc;
        f.free_host = cuMemFreeHost, f.async = cuMemAllocAsync, f.free_async = cuMemFreeAsync;
        f.from_pool = cuMemAllocFromPoolAsync;
    } else if (!strcmp(mode, "entrypoint") || !strcmp(mode, "entrypoint0")) {
        enum cudaDriverEntryPointQueryResult st;
        for (size_t i = 0; i < NFNS; i++) {
            cudaError_t e = mode[10] ? cudaGetDriverEntryPoint(fns[i].base, fns[i].slot, cudaEnableDefault, &st)
                                     : cudaGetDriverEntryPointByVersion(fns[i].base, fns[i].slot, 13000,
                                                                        cudaEnableDefault, &st);
            if (e || st != cudaDriverEntryPointSuccess)
                FAIL("cudaGetDriverEntryPoint(%s) failed", fns[i].base);
        }
#endif
    } else
        FAIL("unknown mode %s", mode);
    for (size_t i = 0; i < NFNS; i++)
        if (!*fns[i].slot)
            FAIL("%s not found", fns[i].name);
    return 0;
}

#define CHECK(call) do { CUresult r_ = (call); if (r_) FAIL("%s: %d", #call, (int)r_); } while (0)

/* The planted pattern: one call of each allocation API with a known size,
 * then each freed. */
static int pattern(void)
{
    CUdeviceptr d, p, m, a, ap;
    void *h1, *h2;
    size_t pitch;
    CUstream s = (CUstream)0; /* the default stream */
    CUmemoryPool pool = (CUmemoryPool)0x120000000000ULL;
    CHECK(f.alloc(&d, 1000));                      printf("cuMemAlloc_v2 %#llx 1000\n", (unsigned long long)d);
    CHECK(f.pitch(&p, &pitch, 1000, 3, 4));        printf("cuMemAllocPitch_v2 %#llx %zu\n", (unsigned long long)p, pitch * 3);
    CHECK(f.managed(&m, 4000, CU_MEM_ATTACH_GLOBAL)); printf("cuMemAllocManaged %#llx 4000\n", (unsigned long long)m);
    CHECK(f.host(&h1, 5000));                      printf("cuMemAllocHost_v2 %#llx 5000\n", (unsigned long long)(size_t)h1);
    CHECK(f.host_alloc(&h2, 6000, 0));             printf("cuMemHostAlloc %#llx 6000\n", (unsigned long long)(size_t)h2);
    CHECK(f.async(&a, 7000, s));                   printf("cuMemAllocAsync %#llx 7000\n", (unsigned long long)a);
    CHECK(f.from_pool(&ap, 8000, pool, s));        printf("cuMemAllocFromPoolAsync %#llx 8000\n", (unsigned long long)ap);
    CHECK(f.free_(d));
    CHECK(f.free_(p));
    CHECK(f.free_(m));
    CHECK(f.free_host(h1));
    CHECK(f.free_host(h2));
    CHECK(f.free_async(a, s));
    CHECK(f.free_async(ap, s));
    return 0;
}

/* dlopen(libcudart) + dlsym: the runtime hooks must be handed out too. */
static int runtime_by_dlsym(void)
{
    void *rt = dlopen("libcudart.so.13", RTLD_NOW | RTLD_LOCAL);
    if (!rt)
        FAIL("dlopen libcudart.so.13: %s", dlerror());
    int (*rt_malloc)(void **, size_t) = (int (*)(void **, size_t))dlsym(rt, "cudaMalloc");
    int (*rt_free)(void *) = (int (*)(void *))dlsym(rt, "cudaFree");
    void *p = NULL;
    if (!rt_malloc || !rt_free || rt_malloc(&p, 3000) || rt_free(p))
        FAIL("cudaMalloc/cudaFree through dlsym failed");
    printf("cudaMalloc %p 3000\n", p);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc != 2)
        FAIL("usage: %s MODE", argv[0]);
    if (!strcmp(argv[1], "runtime"))
        return runtime_by_dlsym();
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        FAIL("dlopen libcuda.so.1: %s", dlerror());
    if (resolve(argv[1], h) || pattern())
        return 1;
    unsigned long (*ptsz)(void) = (unsigned long (*)(void))dlsym(h, "fake_cuda_ptsz_calls");
    unsigned long (*v1)(void) = (unsigned long (*)(void))dlsym(h, "fake_cuda_v1_calls");
    printf("ptsz %lu\nv1 %lu\n", ptsz ? ptsz() : 0, v1 ? v1() : 0);
    return 0;
}
