/* fake_cudart.c: deterministic stand-in for the CUDA 13 runtime (libcudart.so.13).
 * TEST DOUBLE ONLY, for gputrace's GPU-less tests: device addresses are fake and never
 * dereferenced, pinned/managed memory is real host memory. Never installed. See README.md. */

#include <cuda.h>
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* cudaGetDriverEntryPoint */
#include <cuda_runtime_api.h>

#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Per-thread-default-stream entry points (what the header names them to when a program
 * is built with CUDA_API_PER_THREAD_DEFAULT_STREAM / nvcc --default-stream per-thread).
 * __typeof__ gives them exactly the signature the real header declares for the plain name. */
extern __typeof__(cudaMallocAsync) cudaMallocAsync_ptsz;
extern __typeof__(cudaFreeAsync) cudaFreeAsync_ptsz;
extern __typeof__(cudaMallocFromPoolAsync) cudaMallocFromPoolAsync_ptsz;
extern __typeof__(cudaMemcpyAsync) cudaMemcpyAsync_ptsz;
extern __typeof__(cudaMemsetAsync) cudaMemsetAsync_ptsz;
extern __typeof__(cudaStreamSynchronize) cudaStreamSynchronize_ptsz;
extern __typeof__(cudaMemcpy) cudaMemcpy_ptds;
extern __typeof__(cudaMemset) cudaMemset_ptds;
extern __typeof__(cudaGetDriverEntryPoint) cudaGetDriverEntryPoint_ptsz;
extern __typeof__(cudaGetDriverEntryPointByVersion) cudaGetDriverEntryPointByVersion_ptsz;

/* ---- constants ------------------------------------------------------------------------ */

#define FAKE_ALIGN        512ULL
#define REGION_BASE       0x200000000000ULL /* device 0's fake region */
#define REGION_STRIDE     0x10000000000ULL  /* 1 TiB of address space per device */
#define MAX_DEVICES       16                /* fake space ends at 0x300000000000, below PIE/heap */
#define DEFAULT_DEV_BYTES 17179869184ULL    /* 16 GiB */
#define FAKE_VERSION      13000

/* Opaque handles: never dereferenced, deterministic (counters, never reused). */
#define STREAM_HANDLE_BASE  0x100000000000ULL /* + 16 * n, n = 1, 2, ... */
#define POOL_HANDLE_BASE    0x110000000000ULL /* created pools: + 16 * n */
#define DEFPOOL_HANDLE_BASE 0x120000000000ULL /* default pool of device d: + 16 * d */
#define GRAPH_VA_BASE       0x130000000000ULL /* addresses of graph allocation nodes (stream capture) */
#define GRAPH_VA_END        0x140000000000ULL

enum kind { K_DEVICE = 1, K_POOLALLOC, K_MANAGED, K_PINNED, K_STREAM, K_MEMPOOL };
#define KBIT(k) (1u << (k))

/* ---- configuration (environment, read once) ------------------------------------------- */

static pthread_once_t env_once = PTHREAD_ONCE_INIT;
static int g_ndev = 1;
static uint64_t g_cap = DEFAULT_DEV_BYTES;
/* FAKE_CUDA_POOL_FRAGMENTATION=P: a pool holds P% more than its allocations
 * (fragmentation as a share of use), charged to the device as it grows. */
static uint64_t g_pool_frag;
/* FAKE_CUDA_POOL_SLACK_BYTES=F: a device's pools hold F bytes beyond their
 * allocations from the first one on (a part of the slack that does not grow
 * with use, as a real pool keeps its first chunks), charged once, kept. */
static uint64_t g_pool_fixed;
/* FAKE_CUDA_POOL_KEEPS=1: the device holds the pools' reservation (below). */
static uint64_t g_pool_keeps;
/* FAKE_CUDA_POOL_GRAB_LEAVE=B: at a device's first pool allocation its pools
 * reserve all the device has but B bytes, kept (implies KEEPS): a pool that
 * drew more than it needed while the device had it, as a fresh run under
 * cudaMallocAsync sometimes reserves up to the device's end; later pool
 * allocations are placed in it, and fail only past it. */
static uint64_t g_pool_grab_leave;
static int g_pool_grab;
/* FAKE_CUDA_POOL_PIECE=B: a pool's unused reserve lies in pieces of at most
 * B bytes (implies KEEPS): a larger allocation is never placed in it; the
 * pools grow by all of it (whole 2 MiB pages), as a real pool whose free
 * memory is split does (on an H200 a request of 8.34 GiB grew the pool while
 * 30.7 GiB of it lay unused). */
static uint64_t g_pool_piece;

static int parse_u64(const char *s, uint64_t *out)
{
    uint64_t v = 0;
    if (!s || !*s)
        return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9')
            return -1;
        if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
            return -1;
        v = v * 10 + (uint64_t)(*s - '0');
    }
    *out = v;
    return 0;
}

static pthread_mutex_t g_lock = PTHREAD_MUTEX_INITIALIZER;

/* fork() from a threaded program must not hand the child a locked allocator. */
static void fork_prepare(void) { pthread_mutex_lock(&g_lock); }
static void fork_release(void) { pthread_mutex_unlock(&g_lock); }

static void driver_init(void);

/* FAKE_CUDA_TEARDOWN_AT_EXIT=1: as a statically linked runtime does, an
 * atexit handler registered at the runtime's start tears CUDA down; every
 * query after it fails with cudaErrorCudartUnloading. */
static _Atomic int g_unloaded;
static void teardown(void) { g_unloaded = 1; }

static void env_init(void)
{
    const char *s;
    uint64_t v;
    pthread_atfork(fork_prepare, fork_release, fork_release);
    driver_init();
    if ((s = getenv("FAKE_CUDA_TEARDOWN_AT_EXIT")) != NULL && !strcmp(s, "1"))
        atexit(teardown);
    if ((s = getenv("FAKE_CUDA_DEVICE_COUNT")) != NULL) {
        if (parse_u64(s, &v) != 0)
            fprintf(stderr, "fake_cudart: ignoring invalid FAKE_CUDA_DEVICE_COUNT=%s\n", s);
        else if (v > MAX_DEVICES) {
            fprintf(stderr, "fake_cudart: FAKE_CUDA_DEVICE_COUNT=%s capped at %d\n", s, MAX_DEVICES);
            g_ndev = MAX_DEVICES;
        } else
            g_ndev = (int)v;
    }
    if ((s = getenv("FAKE_CUDA_POOL_FRAGMENTATION")) != NULL && parse_u64(s, &g_pool_frag) != 0) {
        fprintf(stderr, "fake_cudart: ignoring invalid FAKE_CUDA_POOL_FRAGMENTATION=%s\n", s);
        g_pool_frag = 0;
    }
    if ((s = getenv("FAKE_CUDA_POOL_SLACK_BYTES")) != NULL && parse_u64(s, &g_pool_fixed) != 0) {
        fprintf(stderr, "fake_cudart: ignoring invalid FAKE_CUDA_POOL_SLACK_BYTES=%s\n", s);
        g_pool_fixed = 0;
    }
    if ((s = getenv("FAKE_CUDA_POOL_KEEPS")) != NULL && parse_u64(s, &g_pool_keeps) != 0) {
        fprintf(stderr, "fake_cudart: ignoring invalid FAKE_CUDA_POOL_KEEPS=%s\n", s);
        g_pool_keeps = 0;
    }
    if ((s = getenv("FAKE_CUDA_POOL_GRAB_LEAVE")) != NULL) {
        if (parse_u64(s, &g_pool_grab_leave) != 0)
            fprintf(stderr, "fake_cudart: ignoring invalid FAKE_CUDA_POOL_GRAB_LEAVE=%s\n", s);
        else
            g_pool_grab = 1;
    }
    if ((s = getenv("FAKE_CUDA_POOL_PIECE")) != NULL && parse_u64(s, &g_pool_piece) != 0) {
        fprintf(stderr, "fake_cudart: ignoring invalid FAKE_CUDA_POOL_PIECE=%s\n", s);
        g_pool_piece = 0;
    }
    if ((s = getenv("FAKE_CUDA_DEVICE_BYTES")) != NULL) {
        if (parse_u64(s, &v) != 0)
            fprintf(stderr, "fake_cudart: ignoring invalid FAKE_CUDA_DEVICE_BYTES=%s\n", s);
        else if (v > REGION_STRIDE) {
            fprintf(stderr, "fake_cudart: FAKE_CUDA_DEVICE_BYTES=%s capped at %llu\n", s,
                    (unsigned long long)REGION_STRIDE);
            g_cap = REGION_STRIDE;
        } else
            g_cap = v;
    }
}

/* ---- the driver, reached the way the real runtime reaches it ---------------
 * dlopen("libcuda.so.1"), dlsym("cuGetProcAddress_v2"), and every driver
 * function through that. cudaMalloc and cudaFree go to the driver's
 * cuMemAlloc_v2/cuMemFree_v2 (so a tracer must not count them twice); the
 * other allocation calls keep their own fake memory below. */

static struct {
    CUresult (*alloc)(CUdeviceptr *, size_t);
    CUresult (*free)(CUdeviceptr);
    CUresult (*retain)(CUcontext *, CUdevice);
    CUresult (*set_current)(CUcontext);
    CUresult (*reset)(CUdevice);
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *);
    CUresult (*ipc_open)(CUdeviceptr *, CUipcMemHandle, unsigned int);
    CUresult (*ipc_close)(CUdeviceptr);
    CUresult (*array3d)(CUarray *, const CUDA_ARRAY3D_DESCRIPTOR *);
    CUresult (*mipmapped)(CUmipmappedArray *, const CUDA_ARRAY3D_DESCRIPTOR *, unsigned int);
    CUresult (*array_destroy)(CUarray);
    CUresult (*host_register)(void *, size_t, unsigned int);
    CUresult (*host_unregister)(void *);
    CUresult (*mipmapped_destroy)(CUmipmappedArray);
    int (*charge)(int, long long);              /* test-only: the driver keeps the device's capacity */
    unsigned long long (*used)(int);
} drv;

#define DRIVER_BASE 0x300000000000ULL /* the fake driver's device memory and reservations */
#define DRIVER_END  0x400000000000ULL

static void driver_init(void)
{
    void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
    if (!h)
        return; /* every cudaMalloc then fails with cudaErrorInsufficientDriver */
    CUresult (*gpa)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *) =
        (CUresult(*)(const char *, void **, int, cuuint64_t, CUdriverProcAddressQueryResult *))dlsym(h, "cuGetProcAddress_v2");
    if (!gpa)
        return;
    drv.gpa = gpa;
    struct { const char *name; void **fn; } want[] = {
        {"cuMemAlloc", (void **)&drv.alloc}, {"cuMemFree", (void **)&drv.free},
        {"cuDevicePrimaryCtxRetain", (void **)&drv.retain}, {"cuCtxSetCurrent", (void **)&drv.set_current},
        {"cuDevicePrimaryCtxReset", (void **)&drv.reset},
        {"cuIpcOpenMemHandle", (void **)&drv.ipc_open}, {"cuIpcCloseMemHandle", (void **)&drv.ipc_close},
        {"cuArray3DCreate", (void **)&drv.array3d}, {"cuMipmappedArrayCreate", (void **)&drv.mipmapped},
        {"cuArrayDestroy", (void **)&drv.array_destroy}, {"cuMipmappedArrayDestroy", (void **)&drv.mipmapped_destroy},
        {"cuMemHostRegister", (void **)&drv.host_register}, {"cuMemHostUnregister", (void **)&drv.host_unregister},
    };
    /* private to the stand-ins: one capacity per device for the memory of both */
    drv.charge = (int (*)(int, long long))dlsym(h, "fake_cuda_charge");
    drv.used = (unsigned long long (*)(int))dlsym(h, "fake_cuda_device_used");
    CUdriverProcAddressQueryResult st;
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (gpa(want[i].name, want[i].fn, FAKE_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &st) != CUDA_SUCCESS)
            *want[i].fn = NULL;
}

static inline int is_driver_addr(const void *p)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    return a >= DRIVER_BASE && a < DRIVER_END;
}

static inline void init(void) { pthread_once(&env_once, env_init); }

/* ---- per-thread state ----------------------------------------------------------------- */

static _Thread_local int tl_dev;                      /* current device, default 0 */
static _Thread_local cudaError_t tl_err = cudaSuccess; /* last error */

static inline cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess)
        tl_err = e;
    return e;
}

/* ---- shared state, all under g_lock --------------------------------------------------- */

/* Live-object table: open addressing, linear probing, backward-shift deletion.
 * key 0 = empty slot. Holds allocations, streams and created pools. */
struct rec {
    uint64_t key;
    uint64_t size;
    int32_t dev;
    uint32_t kind;
};
static struct rec *tab;
static size_t tab_mask, tab_len;

static inline size_t slot_of(uint64_t k)
{
    k ^= k >> 33;
    k *= 0xff51afd7ed558ccdULL;
    k ^= k >> 33;
    return (size_t)k & tab_mask;
}

static struct rec *tab_find(uint64_t key)
{
    if (!tab || key == 0)
        return NULL;
    for (size_t i = slot_of(key);; i = (i + 1) & tab_mask) {
        if (tab[i].key == key)
            return &tab[i];
        if (tab[i].key == 0)
            return NULL;
    }
}

static void tab_put(struct rec r) /* caller made room with tab_reserve() */
{
    size_t i = slot_of(r.key);
    while (tab[i].key != 0)
        i = (i + 1) & tab_mask;
    tab[i] = r;
    tab_len++;
}

/* Make room for one more entry (load <= 1/2). The only place the table allocates. */
static int tab_reserve(void)
{
    if (tab && (tab_len + 1) * 2 <= tab_mask + 1)
        return 0;
    size_t ncap = tab ? (tab_mask + 1) * 2 : 1024;
    struct rec *n = calloc(ncap, sizeof *n);
    if (!n)
        return -1;
    struct rec *old = tab;
    size_t oldcap = tab ? tab_mask + 1 : 0;
    tab = n;
    tab_mask = ncap - 1;
    tab_len = 0;
    for (size_t i = 0; i < oldcap; i++)
        if (old[i].key)
            tab_put(old[i]);
    free(old);
    return 0;
}

static inline int cyc_in(size_t lo, size_t x, size_t hi) /* x in (lo, hi], cyclically */
{
    return lo <= hi ? (lo < x && x <= hi) : (lo < x || x <= hi);
}

static void tab_del(struct rec *r)
{
    size_t i = (size_t)(r - tab), j = i;
    tab_len--;
    for (;;) {
        j = (j + 1) & tab_mask;
        if (tab[j].key == 0)
            break;
        if (cyc_in(i, slot_of(tab[j].key), j))
            continue;
        tab[i] = tab[j];
        i = j;
    }
    tab[i].key = 0;
}

/* Per-device fake address space: sorted, coalesced list of free ranges [lo, hi). */
struct range {
    uint64_t lo, hi;
};
struct devstate {
    struct range *fr;
    size_t nfr, cfr;
    uint64_t used; /* charged: live device bytes (rounded to FAKE_ALIGN) + the pools' reservation */
    size_t live;   /* live device + pool allocations */
    uint64_t pool_used, pool_reserved; /* stream-ordered: live bytes; what the pools hold (never released) */
    int pool_fixed_in;                 /* FAKE_CUDA_POOL_SLACK_BYTES charged (in pool_used for good) */
    int pool_grabbed;                  /* FAKE_CUDA_POOL_GRAB_LEAVE's reservation made */
};
static struct devstate devs[MAX_DEVICES];
static uint64_t stream_counter, pool_counter;

static inline uint64_t region_base(int d) { return REGION_BASE + (uint64_t)d * REGION_STRIDE; }

static void dev_reset_ranges(int d)
{
    struct devstate *ds = &devs[d];
    ds->fr[0].lo = region_base(d);
    ds->fr[0].hi = region_base(d) + REGION_STRIDE;
    ds->nfr = 1;
    ds->used = 0;
    ds->live = 0;
    ds->pool_used = ds->pool_reserved = 0;
    ds->pool_fixed_in = 0;
    ds->pool_grabbed = 0;
}

#define POOL_GRANULE (2ULL << 20) /* a pool grows by whole 2 MiB pages, like the real one */

/* Pool allocations: the pools of a device hold their high-water mark, as the
 * real ones do with PyTorch's release threshold (UINT64_MAX). */
static void pool_account_locked(int d, int64_t delta)
{
    struct devstate *ds = &devs[d];
    ds->pool_used += (uint64_t)delta;
    uint64_t need = (ds->pool_used + POOL_GRANULE - 1) & ~(POOL_GRANULE - 1);
    if (need > ds->pool_reserved)
        ds->pool_reserved = need;
}

/* Free ranges never exceed live + 1, so keeping cfr >= live + 2 (grown at allocation
 * time) means freeing never needs to allocate. */
static int dev_reserve(int d)
{
    struct devstate *ds = &devs[d];
    if (!ds->fr) {
        ds->fr = malloc(16 * sizeof *ds->fr);
        if (!ds->fr)
            return -1;
        ds->cfr = 16;
        dev_reset_ranges(d);
    }
    if (ds->cfr < ds->live + 3) {
        size_t ncap = ds->cfr * 2;
        struct range *n = realloc(ds->fr, ncap * sizeof *n);
        if (!n)
            return -1;
        ds->fr = n;
        ds->cfr = ncap;
    }
    return 0;
}

/* First fit: lowest address whose free range holds sz. Locked. */
static uint64_t pool_extra(enum kind kind, uint64_t sz)
{
    return kind == K_POOLALLOC ? sz / 100 * g_pool_frag + sz % 100 * g_pool_frag / 100 : 0;
}

/* Charges delta bytes to device d's capacity (the driver's, when it is
 * loaded: one capacity for both); -1 when it does not fit. */
static int charge_locked(int d, long long delta)
{
    struct devstate *ds = &devs[d];
    if (drv.charge ? drv.charge(d, delta) != 0
                   : delta > 0 && ((uint64_t)delta > g_cap || ds->used > g_cap - (uint64_t)delta))
        return -1;
    ds->used += (uint64_t)delta;
    return 0;
}

/* A device allocation charges its size. With a pool slack planted
 * (FAKE_CUDA_POOL_FRAGMENTATION, FAKE_CUDA_POOL_SLACK_BYTES), or with
 * FAKE_CUDA_POOL_KEEPS=1, a pool
 * allocation charges what its pools' reservation grows by (whole 2 MiB pages,
 * the slack included), which they keep, as a pool with PyTorch's release
 * threshold does: the device holds the reservation, as NVML shows it.
 * Without, each pool allocation charges its size, given back at its free,
 * while cudaMemPoolGetAttribute still reports the high-water mark as the
 * reservation: a device no real driver gives (NVML's figure for the process
 * then falls below what the trace says its pool holds, and a sweep reads no
 * memory outside the trace). Tests that read NVML beside a pool keep. */
static int pool_keeps(void) { return g_pool_frag || g_pool_fixed || g_pool_keeps || g_pool_grab || g_pool_piece; }

/* What device d holds (the driver's figure, when it is loaded: one
 * capacity for both), as cudaMemGetInfo reports it. Locked. */
static uint64_t device_used_locked(int d)
{
    return drv.used ? drv.used(d) : devs[d].used;
}

/* FAKE_CUDA_POOL_GRAB_LEAVE: the pools take all of device d but the bytes
 * left, once; what cannot be charged is not taken. Locked. */
static void pool_grab_locked(int d)
{
    struct devstate *ds = &devs[d];
    ds->pool_grabbed = 1;
    uint64_t used = device_used_locked(d);
    if (g_cap <= used + g_pool_grab_leave)
        return;
    uint64_t grab = ds->pool_reserved + ((g_cap - used - g_pool_grab_leave) & ~(POOL_GRANULE - 1));
    if (grab > ds->pool_reserved && charge_locked(d, (long long)(grab - ds->pool_reserved)) == 0)
        ds->pool_reserved = grab;
}

static cudaError_t dev_alloc_locked(int d, uint64_t sz, enum kind kind, uint64_t *out)
{
    struct devstate *ds = &devs[d];
    uint64_t fixed = kind == K_POOLALLOC && !ds->pool_fixed_in ? g_pool_fixed : 0;
    uint64_t extra = pool_extra(kind, sz) + fixed;   /* free gives back pool_extra's part only */
    uint64_t charge = sz;
    /* (dev_reserve first: a device's first allocation starts its state over) */
    if (kind == K_POOLALLOC && g_pool_grab && !ds->pool_grabbed && dev_reserve(d) == 0)
        pool_grab_locked(d);
    if (kind == K_POOLALLOC && pool_keeps()) {
        uint64_t need = (ds->pool_used + sz + extra + POOL_GRANULE - 1) & ~(POOL_GRANULE - 1);
        charge = need > ds->pool_reserved ? need - ds->pool_reserved : 0;
        if (g_pool_piece && sz > g_pool_piece)   /* no unused piece holds it: the pool grows by all of it */
            charge = (sz + extra + POOL_GRANULE - 1) & ~(POOL_GRANULE - 1);
    }
    /* the ranges first: the device's first one starts its state over */
    if (dev_reserve(d) != 0 || tab_reserve() != 0 || (charge && charge_locked(d, (long long)charge) != 0))
        return cudaErrorMemoryAllocation;
    size_t i = 0;
    while (i < ds->nfr && ds->fr[i].hi - ds->fr[i].lo < sz)
        i++;
    if (i == ds->nfr) { /* fragmentation defeats a cap near 1 TiB */
        charge_locked(d, -(long long)charge);
        return cudaErrorMemoryAllocation;
    }
    uint64_t addr = ds->fr[i].lo;
    ds->fr[i].lo += sz;
    if (ds->fr[i].lo == ds->fr[i].hi) {
        memmove(&ds->fr[i], &ds->fr[i + 1], (ds->nfr - i - 1) * sizeof *ds->fr);
        ds->nfr--;
    }
    ds->live++;
    tab_put((struct rec){ .key = addr, .size = sz, .dev = d, .kind = kind });
    if (kind == K_POOLALLOC && g_pool_piece && sz > g_pool_piece)
        ds->pool_reserved += charge;   /* before the accounting, which only raises it to what is in use */
    if (kind == K_POOLALLOC)
        pool_account_locked(d, (int64_t)(sz + extra));
    if (fixed)
        ds->pool_fixed_in = 1;
    *out = addr;
    return cudaSuccess;
}

/* Gives the range back; a device allocation's size back to the capacity
 * (uncharge), a pool allocation's stays in the pool's reservation. */
static void dev_release_locked(int d, uint64_t addr, uint64_t sz, int uncharge)
{
    struct devstate *ds = &devs[d];
    uint64_t end = addr + sz;
    size_t lo = 0, hi = ds->nfr; /* first range with .lo > addr */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (ds->fr[mid].lo > addr)
            hi = mid;
        else
            lo = mid + 1;
    }
    size_t i = lo;
    int prev = i > 0 && ds->fr[i - 1].hi == addr;
    int next = i < ds->nfr && ds->fr[i].lo == end;
    if (prev && next) {
        ds->fr[i - 1].hi = ds->fr[i].hi;
        memmove(&ds->fr[i], &ds->fr[i + 1], (ds->nfr - i - 1) * sizeof *ds->fr);
        ds->nfr--;
    } else if (prev) {
        ds->fr[i - 1].hi = end;
    } else if (next) {
        ds->fr[i].lo = addr;
    } else {
        memmove(&ds->fr[i + 1], &ds->fr[i], (ds->nfr - i) * sizeof *ds->fr);
        ds->fr[i].lo = addr;
        ds->fr[i].hi = end;
        ds->nfr++;
    }
    ds->live--;
    if (uncharge)
        charge_locked(d, -(long long)sz);
}

/* ---- helpers shared by the entry points (static: never go through exported symbols) --- */

static inline int valid_dev(int d) { return d >= 0 && d < g_ndev; }

/* Inside a configured device's fake region. Real host memory (PIE images and their heap
 * at 0x55..., mmap at 0x7f...) is never there. */
static inline int is_fake_dev_addr(const void *p)
{
    uint64_t a = (uint64_t)(uintptr_t)p;
    return (a >= REGION_BASE && a < REGION_BASE + (uint64_t)g_ndev * REGION_STRIDE) || is_driver_addr(p);
}

static inline int is_special_stream(cudaStream_t s)
{
    return s == NULL || s == cudaStreamLegacy || s == cudaStreamPerThread;
}

/* Device a stream belongs to; default streams belong to the calling thread's device. */
static cudaError_t stream_device(cudaStream_t s, int *dev)
{
    if (is_special_stream(s)) {
        *dev = tl_dev;
        return cudaSuccess;
    }
    cudaError_t e = cudaErrorInvalidResourceHandle;
    pthread_mutex_lock(&g_lock);
    struct rec *r = tab_find((uint64_t)(uintptr_t)s);
    if (r && r->kind == K_STREAM) {
        *dev = r->dev;
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return e;
}

static cudaError_t pool_device(cudaMemPool_t p, int *dev)
{
    uint64_t h = (uint64_t)(uintptr_t)p;
    if (h >= DEFPOOL_HANDLE_BASE && h < DEFPOOL_HANDLE_BASE + 16ULL * (uint64_t)g_ndev &&
        (h - DEFPOOL_HANDLE_BASE) % 16 == 0) {
        *dev = (int)((h - DEFPOOL_HANDLE_BASE) / 16);
        return cudaSuccess;
    }
    cudaError_t e = cudaErrorInvalidValue;
    pthread_mutex_lock(&g_lock);
    struct rec *r = tab_find(h);
    if (r && r->kind == K_MEMPOOL) {
        *dev = r->dev;
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return e;
}

static cudaError_t alloc_device(void **out, size_t size, int dev, enum kind kind)
{
    if (!out)
        return cudaErrorInvalidValue;
    *out = NULL;
    if (size == 0)
        return cudaSuccess;
    if ((uint64_t)size > UINT64_MAX - (FAKE_ALIGN - 1))
        return cudaErrorMemoryAllocation;
    uint64_t sz = ((uint64_t)size + FAKE_ALIGN - 1) & ~(FAKE_ALIGN - 1);
    uint64_t addr = 0;
    pthread_mutex_lock(&g_lock);
    cudaError_t e = dev_alloc_locked(dev, sz, kind, &addr);
    pthread_mutex_unlock(&g_lock);
    if (e == cudaSuccess)
        *out = (void *)(uintptr_t)addr;
    return e;
}

static cudaError_t alloc_host(void **out, size_t size, enum kind kind)
{
    void *p = NULL;
    if (!out)
        return cudaErrorInvalidValue;
    *out = NULL;
    /* more than a host could lock fails as the driver's would, before the
     * host allocator is asked (a sanitizer's aborts on a request that large) */
    if (size > ((size_t)1 << 40) || posix_memalign(&p, FAKE_ALIGN, size) != 0 || !p)
        return cudaErrorMemoryAllocation;
    pthread_mutex_lock(&g_lock);
    int rc = tab_reserve();
    if (rc == 0)
        tab_put((struct rec){ .key = (uint64_t)(uintptr_t)p, .size = size, .dev = tl_dev, .kind = kind });
    pthread_mutex_unlock(&g_lock);
    if (rc != 0) {
        free(p);
        return cudaErrorMemoryAllocation;
    }
    *out = p;
    return cudaSuccess;
}

/* Free ptr if its kind is in `allowed` (bitmask of KBIT(kind)). */
static cudaError_t free_common(void *ptr, unsigned allowed)
{
    if (!ptr)
        return cudaSuccess;
    void *host = NULL;
    cudaError_t e = cudaErrorInvalidValue;
    pthread_mutex_lock(&g_lock);
    struct rec *r = tab_find((uint64_t)(uintptr_t)ptr);
    if (r && (allowed & KBIT(r->kind))) {
        if (r->kind == K_POOLALLOC)
            pool_account_locked(r->dev, -(int64_t)(r->size + pool_extra(K_POOLALLOC, r->size)));
        if (r->kind == K_DEVICE || r->kind == K_POOLALLOC)
            dev_release_locked(r->dev, r->key, r->size, r->kind == K_DEVICE || !pool_keeps());
        else
            host = ptr;
        tab_del(r);
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    free(host);
    return e;
}

#define DEVICE_FREEABLE (KBIT(K_DEVICE) | KBIT(K_POOLALLOC) | KBIT(K_MANAGED))

static cudaError_t pitch_of(size_t width, size_t *pitch)
{
    if ((uint64_t)width > UINT64_MAX - (FAKE_ALIGN - 1))
        return cudaErrorMemoryAllocation;
    *pitch = (size_t)(((uint64_t)width + FAKE_ALIGN - 1) & ~(FAKE_ALIGN - 1));
    return cudaSuccess;
}

static cudaError_t memcpy_common(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    if ((unsigned)kind > (unsigned)cudaMemcpyDefault)
        return cudaErrorInvalidMemcpyDirection;
    if (count == 0)
        return cudaSuccess;
    if (!dst || !src)
        return cudaErrorInvalidValue;
    int dfake = is_fake_dev_addr(dst), sfake = is_fake_dev_addr(src);
    if (!dfake && !sfake)
        memmove(dst, src, count);
    else if (!dfake)
        memset(dst, 0, count); /* device -> host: fake device memory reads as zeros */
    return cudaSuccess;
}

static cudaError_t memset_common(void *p, int value, size_t count)
{
    if (count == 0)
        return cudaSuccess;
    if (!p)
        return cudaErrorInvalidValue;
    if (!is_fake_dev_addr(p))
        memset(p, value, count);
    return cudaSuccess;
}

#define NEED_DEVICE()                           \
    do {                                        \
        init();                                 \
        if (g_ndev == 0)                        \
            return ret(cudaErrorNoDevice);      \
    } while (0)

/* ---- allocation API ------------------------------------------------------------------- */

static cudaError_t from_driver(CUresult rc)
{
    return rc == CUDA_SUCCESS ? cudaSuccess : rc == CUDA_ERROR_OUT_OF_MEMORY ? cudaErrorMemoryAllocation : cudaErrorInvalidValue;
}

cudaError_t cudaMalloc(void **devPtr, size_t size)
{
    if (devPtr)
        *devPtr = NULL; /* NULL on every failure, including cudaErrorNoDevice */
    NEED_DEVICE();
    if (!devPtr)
        return ret(cudaErrorInvalidValue);
    if (size == 0)
        return cudaSuccess;
    if (!drv.alloc)
        return ret(cudaErrorInsufficientDriver);
    CUdeviceptr p = 0;
    cudaError_t e = from_driver(drv.alloc(&p, size));
    if (e == cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return ret(e);
}

/* Driver memory goes back to the driver, the rest to our own fake memory. */
static cudaError_t free_any(void *devPtr)
{
    if (devPtr && is_driver_addr(devPtr))
        return drv.free ? from_driver(drv.free((CUdeviceptr)(uintptr_t)devPtr)) : cudaErrorInvalidValue;
    return free_common(devPtr, DEVICE_FREEABLE);
}

/* IPC goes to the driver, as in the real runtime (the stand-in's handle: see
 * cuIpcOpenMemHandle_v2 in fake_libcuda.c). */
cudaError_t cudaIpcOpenMemHandle(void **devPtr, cudaIpcMemHandle_t handle, unsigned int flags)
{
    NEED_DEVICE();
    if (!devPtr || !drv.ipc_open)
        return ret(cudaErrorInvalidValue);
    CUipcMemHandle h;
    memcpy(h.reserved, handle.reserved, sizeof h.reserved);
    CUdeviceptr p = 0;
    cudaError_t e = from_driver(drv.ipc_open(&p, h, flags));
    if (e == cudaSuccess)
        *devPtr = (void *)(uintptr_t)p;
    return ret(e);
}

cudaError_t cudaIpcCloseMemHandle(void *devPtr)
{
    NEED_DEVICE();
    return ret(drv.ipc_close ? from_driver(drv.ipc_close((CUdeviceptr)(uintptr_t)devPtr)) : cudaErrorInvalidValue);
}

cudaError_t cudaFree(void *devPtr)
{
    NEED_DEVICE();
    return ret(free_any(devPtr));
}

/* ---- stream capture: as the CUDA Programming Guide's graph memory nodes say.
 * A stream-ordered allocation on a capturing stream creates an allocation
 * node: it returns an address the graph owns and takes no memory now (the
 * memory is taken when the graph runs: no graph runs here); a free of such
 * an address, captured or not, releases nothing of the device's. A graph
 * holding an allocation it does not free cannot run again until the program
 * frees it (a real runtime refuses the launch: found on an H200). A launch
 * takes the memory of all its allocation nodes from the device, which the
 * driver keeps for graphs until trimmed (cuDeviceGetGraphMemAttribute shows
 * it; a real one rounds it up: 40 MiB took 64 MiB on an H200). One graph is
 * modelled; capture mode and cross-stream capture (events) are not. */
#define MAX_CAPTURING 16
static uint64_t capturing[MAX_CAPTURING];   /* streams being captured; under g_lock */
static uint64_t graph_va_next = GRAPH_VA_BASE;
static int graph_unfreed_nodes;   /* allocation nodes the graph does not free; under g_lock */
static int graph_launch_unfreed;  /* of those, from the last launch, not yet freed; under g_lock */
static uint64_t graph_node_bytes;  /* of the graph's allocation nodes; under g_lock */
static uint64_t graph_memory[MAX_DEVICES];   /* held for graphs; under g_lock */

static int capture_slot(uint64_t s)   /* under g_lock */
{
    for (int i = 0; i < MAX_CAPTURING; i++)
        if (capturing[i] == s)
            return i;
    return -1;
}

static int is_capturing(cudaStream_t s)
{
    if (is_special_stream(s))
        return 0;
    pthread_mutex_lock(&g_lock);
    int yes = capture_slot((uint64_t)(uintptr_t)s) >= 0;
    pthread_mutex_unlock(&g_lock);
    return yes;
}

static inline int is_graph_addr(const void *p)
{
    return (uint64_t)(uintptr_t)p >= GRAPH_VA_BASE && (uint64_t)(uintptr_t)p < GRAPH_VA_END;
}

static cudaError_t begin_capture(cudaStream_t s)
{
    NEED_DEVICE();
    int dev;
    if (s == NULL || s == cudaStreamLegacy)
        return ret(cudaErrorStreamCaptureUnsupported);
    if (stream_device(s, &dev) != cudaSuccess || s == cudaStreamPerThread)
        return ret(cudaErrorInvalidResourceHandle);
    cudaError_t e = cudaErrorIllegalState;
    pthread_mutex_lock(&g_lock);
    int free_slot = capture_slot(0);
    if (capture_slot((uint64_t)(uintptr_t)s) < 0 && free_slot >= 0) {
        capturing[free_slot] = (uint64_t)(uintptr_t)s;
        graph_node_bytes = 0;
        graph_unfreed_nodes = 0;
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return ret(e);
}

static cudaError_t end_capture(cudaStream_t s, cudaGraph_t *graph)
{
    NEED_DEVICE();
    if (!graph)
        return ret(cudaErrorInvalidValue);
    cudaError_t e = cudaErrorIllegalState;
    pthread_mutex_lock(&g_lock);
    int i = is_special_stream(s) ? -1 : capture_slot((uint64_t)(uintptr_t)s);
    if (i >= 0) {
        capturing[i] = 0;
        *graph = (cudaGraph_t)(uintptr_t)(STREAM_HANDLE_BASE + 24);
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return ret(e);
}

cudaError_t cudaStreamBeginCapture(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void)mode;
    return begin_capture(s);
}
cudaError_t cudaStreamBeginCapture_ptsz(cudaStream_t s, enum cudaStreamCaptureMode mode)
{
    (void)mode;
    return begin_capture(s);
}
cudaError_t cudaStreamEndCapture(cudaStream_t s, cudaGraph_t *graph) { return end_capture(s, graph); }
cudaError_t cudaStreamEndCapture_ptsz(cudaStream_t s, cudaGraph_t *graph) { return end_capture(s, graph); }
cudaError_t cudaStreamIsCapturing(cudaStream_t s, enum cudaStreamCaptureStatus *status)
{
    NEED_DEVICE();
    if (!status)
        return ret(cudaErrorInvalidValue);
    *status = is_capturing(s) ? cudaStreamCaptureStatusActive : cudaStreamCaptureStatusNone;
    return cudaSuccess;
}
/* for the stand-in driver's cuStreamIsCapturing: 1 capturing, 0 not */
int fake_cudart_stream_capturing(void *s);
int fake_cudart_stream_capturing(void *s) { return is_capturing((cudaStream_t)s); }

static cudaError_t malloc_async(void **devPtr, size_t size, cudaStream_t hStream)
{
    int dev;
    if (devPtr)
        *devPtr = NULL;
    NEED_DEVICE();
    cudaError_t e = stream_device(hStream, &dev);
    if (e != cudaSuccess)
        return ret(e);
    if (devPtr && size && is_capturing(hStream)) {   /* an allocation node: an address, no memory */
        pthread_mutex_lock(&g_lock);
        *devPtr = (void *)(uintptr_t)graph_va_next;
        graph_va_next += (size + 0x1fffff) & ~(uint64_t)0x1fffff;
        graph_node_bytes += (size + 0x1fffff) & ~(uint64_t)0x1fffff;
        graph_unfreed_nodes++;
        pthread_mutex_unlock(&g_lock);
        return cudaSuccess;
    }
    return ret(alloc_device(devPtr, size, dev, K_POOLALLOC));
}

static cudaError_t free_async(void *devPtr, cudaStream_t hStream)
{
    int dev;
    NEED_DEVICE();
    cudaError_t e = stream_device(hStream, &dev);
    if (e != cudaSuccess)
        return ret(e);
    if (is_graph_addr(devPtr)) {   /* a free node, or the free of a graph's allocation after a launch */
        int node = is_capturing(hStream);
        pthread_mutex_lock(&g_lock);
        if (node && graph_unfreed_nodes > 0)
            graph_unfreed_nodes--;
        else if (!node && graph_launch_unfreed > 0)
            graph_launch_unfreed--;
        pthread_mutex_unlock(&g_lock);
        return cudaSuccess;
    }
    return ret(free_any(devPtr));
}

static cudaError_t malloc_from_pool_async(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    int dev, sdev;
    if (ptr)
        *ptr = NULL;
    NEED_DEVICE();
    cudaError_t e = pool_device(memPool, &dev);
    if (e == cudaSuccess)
        e = stream_device(stream, &sdev);
    if (e != cudaSuccess)
        return ret(e);
    return ret(alloc_device(ptr, size, dev, K_POOLALLOC)); /* memory lives on the pool's device */
}

cudaError_t cudaMallocAsync(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(devPtr, size, hStream);
}
cudaError_t cudaMallocAsync_ptsz(void **devPtr, size_t size, cudaStream_t hStream)
{
    return malloc_async(devPtr, size, hStream);
}
cudaError_t cudaFreeAsync(void *devPtr, cudaStream_t hStream) { return free_async(devPtr, hStream); }
cudaError_t cudaFreeAsync_ptsz(void *devPtr, cudaStream_t hStream) { return free_async(devPtr, hStream); }
cudaError_t cudaMallocFromPoolAsync(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return malloc_from_pool_async(ptr, size, memPool, stream);
}
cudaError_t cudaMallocFromPoolAsync_ptsz(void **ptr, size_t size, cudaMemPool_t memPool, cudaStream_t stream)
{
    return malloc_from_pool_async(ptr, size, memPool, stream);
}

/* Private to the stand-ins: the driver answers for the runtime's streams and
 * memory as a real driver does for its own objects (fake_libcuda.c's
 * cuStreamGetDevice, cuPointerGetAttributes, cuMemAllocAsync). 0: known. */
int fake_cudart_stream_device(void *s, int *dev);
int fake_cudart_stream_device(void *s, int *dev)
{
    if (is_special_stream((cudaStream_t)s))
        return -1;
    return stream_device((cudaStream_t)s, dev) == cudaSuccess ? 0 : -1;
}
int fake_cudart_pointer(const void *ptr, int *dev, int *host);
int fake_cudart_pointer(const void *ptr, int *dev, int *host)
{
    int rc = -1;
    pthread_mutex_lock(&g_lock);
    struct rec *r = tab_find((uint64_t)(uintptr_t)ptr);
    if (r && (r->kind == K_DEVICE || r->kind == K_POOLALLOC || r->kind == K_MANAGED || r->kind == K_PINNED)) {
        *dev = r->dev;
        *host = r->kind == K_PINNED;
        rc = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return rc;
}

cudaError_t cudaStreamGetDevice(cudaStream_t s, int *device)
{
    NEED_DEVICE();
    if (!device)
        return ret(cudaErrorInvalidValue);
    return ret(stream_device(s, device));
}

/* The block a pointer starts: its device and memory type. */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *ptr)
{
    NEED_DEVICE();
    if (!a)
        return ret(cudaErrorInvalidValue);
    memset(a, 0, sizeof *a);
    a->device = -2;
    pthread_mutex_lock(&g_lock);
    struct rec *r = tab_find((uint64_t)(uintptr_t)ptr);
    if (r && (r->kind == K_DEVICE || r->kind == K_POOLALLOC || r->kind == K_MANAGED || r->kind == K_PINNED)) {
        a->type = r->kind == K_PINNED ? cudaMemoryTypeHost : r->kind == K_MANAGED ? cudaMemoryTypeManaged
                                                                                 : cudaMemoryTypeDevice;
        a->device = r->kind == K_PINNED ? 0 : r->dev;
        a->devicePointer = r->kind == K_PINNED ? NULL : (void *)ptr;
        a->hostPointer = r->kind == K_DEVICE || r->kind == K_POOLALLOC ? NULL : (void *)ptr;
    } else {
        a->type = cudaMemoryTypeUnregistered;
    }
    pthread_mutex_unlock(&g_lock);
    return cudaSuccess;
}

cudaError_t cudaMallocManaged(void **devPtr, size_t size, unsigned int flags)
{
    if (devPtr)
        *devPtr = NULL;
    NEED_DEVICE();
    if (!devPtr)
        return ret(cudaErrorInvalidValue);
    if (size == 0 || (flags != cudaMemAttachGlobal && flags != cudaMemAttachHost))
        return ret(cudaErrorInvalidValue);
    return ret(alloc_host(devPtr, size, K_MANAGED));
}

cudaError_t cudaMallocHost(void **ptr, size_t size)
{
    if (ptr)
        *ptr = NULL;
    NEED_DEVICE();
    if (!ptr)
        return ret(cudaErrorInvalidValue);
    if (size == 0)
        return cudaSuccess;
    return ret(alloc_host(ptr, size, K_PINNED));
}

cudaError_t cudaHostAlloc(void **pHost, size_t size, unsigned int flags)
{
    if (pHost)
        *pHost = NULL;
    NEED_DEVICE();
    if (!pHost)
        return ret(cudaErrorInvalidValue);
    if (flags & ~(unsigned)(cudaHostAllocPortable | cudaHostAllocMapped | cudaHostAllocWriteCombined))
        return ret(cudaErrorInvalidValue);
    if (size == 0)
        return cudaSuccess;
    return ret(alloc_host(pHost, size, K_PINNED));
}

cudaError_t cudaFreeHost(void *ptr)
{
    NEED_DEVICE();
    return ret(free_common(ptr, KBIT(K_PINNED)));
}

/* Page-locking the program's own memory goes to the driver, as in the real
 * runtime; the driver's refusals keep their numbers (712, 713). */
cudaError_t cudaHostRegister(void *ptr, size_t size, unsigned int flags)
{
    NEED_DEVICE();
    if (!drv.host_register)
        return ret(cudaErrorInsufficientDriver);
    CUresult rc = drv.host_register(ptr, size, flags);
    return ret(rc == CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED ? cudaErrorHostMemoryAlreadyRegistered : from_driver(rc));
}

cudaError_t cudaHostUnregister(void *ptr)
{
    NEED_DEVICE();
    if (!drv.host_unregister)
        return ret(cudaErrorInsufficientDriver);
    CUresult rc = drv.host_unregister(ptr);
    return ret(rc == CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED ? cudaErrorHostMemoryNotRegistered : from_driver(rc));
}

/* CUDA arrays go to the driver, as in the real runtime (cudaArray_t is the
 * driver's CUarray): a channel descriptor of 1, 2 or 4 equal 8/16/32-bit
 * channels, the flags' values the driver's. */
static cudaError_t array_descriptor(const struct cudaChannelFormatDesc *c, struct cudaExtent e, unsigned flags,
                                    CUDA_ARRAY3D_DESCRIPTOR *d)
{
    if (!c)
        return cudaErrorInvalidValue;
    int bits[4] = {c->x, c->y, c->z, c->w}, n = 0;
    while (n < 4 && bits[n] > 0)
        n++;
    for (int i = 1; i < n; i++)
        if (bits[i] != bits[0])
            return cudaErrorInvalidChannelDescriptor;
    if (n == 0 || n == 3 || (bits[0] != 8 && bits[0] != 16 && bits[0] != 32))
        return cudaErrorInvalidChannelDescriptor;
    CUarray_format f;
    if (c->f == cudaChannelFormatKindFloat)
        f = bits[0] == 32 ? CU_AD_FORMAT_FLOAT : CU_AD_FORMAT_HALF;
    else if (c->f == cudaChannelFormatKindSigned || c->f == cudaChannelFormatKindUnsigned) {
        int sig = c->f == cudaChannelFormatKindSigned;
        f = bits[0] == 8 ? (sig ? CU_AD_FORMAT_SIGNED_INT8 : CU_AD_FORMAT_UNSIGNED_INT8)
          : bits[0] == 16 ? (sig ? CU_AD_FORMAT_SIGNED_INT16 : CU_AD_FORMAT_UNSIGNED_INT16)
                          : (sig ? CU_AD_FORMAT_SIGNED_INT32 : CU_AD_FORMAT_UNSIGNED_INT32);
    } else
        return cudaErrorInvalidChannelDescriptor;
    *d = (CUDA_ARRAY3D_DESCRIPTOR){e.width, e.height, e.depth, f, (unsigned)n, flags};
    return cudaSuccess;
}

struct cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, enum cudaChannelFormatKind f)
{
    return (struct cudaChannelFormatDesc){x, y, z, w, f};
}

cudaError_t cudaMalloc3DArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, struct cudaExtent extent,
                              unsigned int flags)
{
    NEED_DEVICE();
    CUDA_ARRAY3D_DESCRIPTOR d;
    cudaError_t e = array_descriptor(desc, extent, flags, &d);
    if (e != cudaSuccess || !array)
        return ret(e != cudaSuccess ? e : cudaErrorInvalidValue);
    if (!drv.array3d)
        return ret(cudaErrorInsufficientDriver);
    return ret(from_driver(drv.array3d((CUarray *)array, &d)));
}

cudaError_t cudaMallocArray(cudaArray_t *array, const struct cudaChannelFormatDesc *desc, size_t width, size_t height,
                            unsigned int flags)
{
    return cudaMalloc3DArray(array, desc, (struct cudaExtent){width, height, 0}, flags);
}

cudaError_t cudaMallocMipmappedArray(cudaMipmappedArray_t *m, const struct cudaChannelFormatDesc *desc,
                                     struct cudaExtent extent, unsigned int levels, unsigned int flags)
{
    NEED_DEVICE();
    CUDA_ARRAY3D_DESCRIPTOR d;
    cudaError_t e = array_descriptor(desc, extent, flags, &d);
    if (e != cudaSuccess || !m)
        return ret(e != cudaSuccess ? e : cudaErrorInvalidValue);
    if (!drv.mipmapped)
        return ret(cudaErrorInsufficientDriver);
    return ret(from_driver(drv.mipmapped((CUmipmappedArray *)m, &d, levels)));
}

cudaError_t cudaFreeArray(cudaArray_t array)
{
    if (!array)
        return cudaSuccess;
    return ret(drv.array_destroy ? from_driver(drv.array_destroy((CUarray)array)) : cudaErrorInvalidValue);
}

cudaError_t cudaFreeMipmappedArray(cudaMipmappedArray_t m)
{
    if (!m)
        return cudaSuccess;
    return ret(drv.mipmapped_destroy ? from_driver(drv.mipmapped_destroy((CUmipmappedArray)m)) : cudaErrorInvalidValue);
}

cudaError_t cudaMallocPitch(void **devPtr, size_t *pitch, size_t width, size_t height)
{
    size_t p, size;
    if (devPtr)
        *devPtr = NULL;
    NEED_DEVICE();
    if (!devPtr || !pitch)
        return ret(cudaErrorInvalidValue);
    if (pitch_of(width, &p) != cudaSuccess || __builtin_mul_overflow(p, height, &size))
        return ret(cudaErrorMemoryAllocation);
    cudaError_t e = alloc_device(devPtr, size, tl_dev, K_DEVICE);
    if (e == cudaSuccess)
        *pitch = p;
    return ret(e);
}

cudaError_t cudaMalloc3D(struct cudaPitchedPtr *pitchedDevPtr, struct cudaExtent extent)
{
    size_t p, size;
    void *ptr = NULL;
    if (pitchedDevPtr)
        pitchedDevPtr->ptr = NULL;
    NEED_DEVICE();
    if (!pitchedDevPtr)
        return ret(cudaErrorInvalidValue);
    if (pitch_of(extent.width, &p) != cudaSuccess || __builtin_mul_overflow(p, extent.height, &size) ||
        __builtin_mul_overflow(size, extent.depth, &size))
        return ret(cudaErrorMemoryAllocation);
    cudaError_t e = alloc_device(&ptr, size, tl_dev, K_DEVICE);
    if (e == cudaSuccess) {
        pitchedDevPtr->ptr = ptr;
        pitchedDevPtr->pitch = p;
        pitchedDevPtr->xsize = extent.width;
        pitchedDevPtr->ysize = extent.height;
    }
    return ret(e);
}

cudaError_t cudaMemGetInfo(size_t *freeBytes, size_t *totalBytes)
{
    NEED_DEVICE();
    if (!freeBytes || !totalBytes)
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_lock);
    uint64_t used = device_used_locked(tl_dev);
    pthread_mutex_unlock(&g_lock);
    *freeBytes = (size_t)(g_cap - used);
    *totalBytes = (size_t)g_cap;
    return cudaSuccess;
}

/* ---- device / runtime state ----------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *count)
{
    init();
    if (g_unloaded)
        return ret(cudaErrorCudartUnloading);
    if (!count)
        return ret(cudaErrorInvalidValue);
    *count = g_ndev;
    return g_ndev == 0 ? ret(cudaErrorNoDevice) : cudaSuccess;
}

cudaError_t cudaGetDevice(int *device)
{
    NEED_DEVICE();
    if (!device)
        return ret(cudaErrorInvalidValue);
    *device = tl_dev;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int device)
{
    NEED_DEVICE();
    if (!valid_dev(device))
        return ret(cudaErrorInvalidDevice);
    tl_dev = device;
    CUcontext ctx; /* the driver's current context follows the runtime's device */
    if (drv.retain && drv.set_current && drv.retain(&ctx, device) == CUDA_SUCCESS)
        drv.set_current(ctx);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    NEED_DEVICE();
    return cudaSuccess;
}

/* Like the real one (an H200, driver 580): the current device's primary
 * context goes, and with it (no frees reported) its device memory, streams,
 * managed and pinned memory; stream-ordered pools and their allocations
 * outlive it (a cudaMallocAsync allocation was still device memory after the
 * reset, and cudaFree took it). The driver's allocations in that context go
 * too (its cuDevicePrimaryCtxReset). */
cudaError_t cudaDeviceReset(void)
{
    NEED_DEVICE();
    int d = tl_dev;
    void **host = NULL;
    size_t nhost = 0;
    pthread_mutex_lock(&g_lock);
    if (tab) {
        const unsigned gone = KBIT(K_DEVICE) | KBIT(K_STREAM) | KBIT(K_MANAGED) | KBIT(K_PINNED);
        host = tab_len ? malloc(tab_len * sizeof *host) : NULL;
        for (size_t i = 0; i <= tab_mask;) {
            /* Backward-shift deletion only moves unvisited entries into slot i or later:
             * re-examine slot i after a deletion. */
            if (tab[i].key && tab[i].dev == d && (gone & KBIT(tab[i].kind))) {
                if (tab[i].kind == K_DEVICE)
                    dev_release_locked(d, tab[i].key, tab[i].size, 1);
                else if ((tab[i].kind == K_MANAGED || tab[i].kind == K_PINNED) && host)
                    host[nhost++] = (void *)(uintptr_t)tab[i].key;
                tab_del(&tab[i]);
            } else {
                i++;
            }
        }
    }
    pthread_mutex_unlock(&g_lock);
    for (size_t i = 0; i < nhost; i++)
        free(host[i]);
    free(host);
    if (drv.reset)
        drv.reset(d);
    return cudaSuccess;
}

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = tl_err;
    tl_err = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return tl_err; }

#define FAKE_ERRORS(X)                                                                        \
    X(cudaSuccess, "no error")                                                                \
    X(cudaErrorInvalidValue, "invalid argument")                                              \
    X(cudaErrorMemoryAllocation, "out of memory")                                             \
    X(cudaErrorInitializationError, "initialization error")                                   \
    X(cudaErrorCudartUnloading, "driver shutting down")                                       \
    X(cudaErrorInvalidConfiguration, "invalid configuration argument")                        \
    X(cudaErrorInvalidPitchValue, "invalid pitch argument")                                   \
    X(cudaErrorInvalidSymbol, "invalid device symbol")                                        \
    X(cudaErrorInvalidMemcpyDirection, "invalid copy direction for memcpy")                   \
    X(cudaErrorInsufficientDriver, "CUDA driver version is insufficient for CUDA runtime version") \
    X(cudaErrorNoDevice, "no CUDA-capable device is detected")                                \
    X(cudaErrorInvalidDevice, "invalid device ordinal")                                       \
    X(cudaErrorInvalidResourceHandle, "invalid resource handle")                              \
    X(cudaErrorNotReady, "device not ready")                                                  \
    X(cudaErrorIllegalAddress, "an illegal memory access was encountered")                    \
    X(cudaErrorLaunchFailure, "unspecified launch failure")                                   \
    X(cudaErrorNotSupported, "operation not supported")                                       \
    X(cudaErrorUnknown, "unknown error")

const char *cudaGetErrorName(cudaError_t error)
{
    switch (error) {
#define NAME_CASE(code, str) case code: return #code;
        FAKE_ERRORS(NAME_CASE)
#undef NAME_CASE
    default:
        return "unrecognized error code";
    }
}

const char *cudaGetErrorString(cudaError_t error)
{
    switch (error) {
#define STR_CASE(code, str) case code: return str;
        FAKE_ERRORS(STR_CASE)
#undef STR_CASE
    default:
        return "unrecognized error code";
    }
}

cudaError_t cudaDriverGetVersion(int *driverVersion)
{
    if (!driverVersion)
        return ret(cudaErrorInvalidValue);
    *driverVersion = FAKE_VERSION;
    return cudaSuccess;
}

cudaError_t cudaRuntimeGetVersion(int *runtimeVersion)
{
    if (!runtimeVersion)
        return ret(cudaErrorInvalidValue);
    *runtimeVersion = FAKE_VERSION;
    return cudaSuccess;
}

/* The CUDA 13 header declares this name directly (CUDA 12 headers #define'd it to
 * cudaGetDeviceProperties_v2; the 13 header and the real libcudart.so.13 do not). */
cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *prop, int device)
{
    NEED_DEVICE();
    if (g_unloaded)
        return ret(cudaErrorCudartUnloading);
    if (!prop)
        return ret(cudaErrorInvalidValue);
    if (!valid_dev(device))
        return ret(cudaErrorInvalidDevice);
    memset(prop, 0, sizeof *prop);
    snprintf(prop->name, sizeof prop->name, "%s", "gputrace fake GPU");
    static const char uuid[16] = { 'g', 'p', 'u', 't', 'r', 'a', 'c', 'e', '-', 'f', 'a', 'k', 'e', '-', 0, 0 };
    memcpy(prop->uuid.bytes, uuid, sizeof uuid);
    prop->uuid.bytes[15] = (char)device;
    prop->totalGlobalMem = (size_t)g_cap;
    prop->sharedMemPerBlock = 48 * 1024;
    prop->regsPerBlock = 65536;
    prop->warpSize = 32;
    prop->memPitch = 2147483647;
    prop->maxThreadsPerBlock = 1024;
    prop->maxThreadsDim[0] = 1024;
    prop->maxThreadsDim[1] = 1024;
    prop->maxThreadsDim[2] = 64;
    prop->maxGridSize[0] = 2147483647;
    prop->maxGridSize[1] = 65535;
    prop->maxGridSize[2] = 65535;
    prop->totalConstMem = 65536;
    prop->major = 9;
    prop->minor = 0;
    prop->textureAlignment = 512;
    prop->texturePitchAlignment = 32;
    prop->multiProcessorCount = 132;
    prop->canMapHostMemory = 1;
    prop->concurrentKernels = 1;
    prop->pciBusID = device;
    prop->asyncEngineCount = 2;
    prop->unifiedAddressing = 1;
    prop->memoryBusWidth = 5120;
    prop->l2CacheSize = 50 * 1024 * 1024;
    prop->maxThreadsPerMultiProcessor = 2048;
    prop->streamPrioritiesSupported = 1;
    prop->globalL1CacheSupported = 1;
    prop->localL1CacheSupported = 1;
    prop->sharedMemPerMultiprocessor = 228 * 1024;
    prop->regsPerMultiprocessor = 65536;
    prop->managedMemory = 1;
    prop->concurrentManagedAccess = 1;
    prop->maxBlocksPerMultiProcessor = 32;
    prop->memoryPoolsSupported = 1;
    prop->deviceNumaId = -1;
    prop->hostNumaId = -1;
    return cudaSuccess;
}

/* ---- streams -------------------------------------------------------------------------- */

static cudaError_t stream_create(cudaStream_t *pStream, unsigned int flags)
{
    NEED_DEVICE();
    if (!pStream || (flags & ~(unsigned)cudaStreamNonBlocking))
        return ret(cudaErrorInvalidValue);
    cudaError_t e = cudaErrorMemoryAllocation;
    pthread_mutex_lock(&g_lock);
    if (tab_reserve() == 0) {
        uint64_t h = STREAM_HANDLE_BASE + 16 * ++stream_counter;
        tab_put((struct rec){ .key = h, .size = flags, .dev = tl_dev, .kind = K_STREAM });
        *pStream = (cudaStream_t)(uintptr_t)h;
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return ret(e);
}

cudaError_t cudaStreamCreate(cudaStream_t *pStream) { return stream_create(pStream, cudaStreamDefault); }

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *pStream, unsigned int flags)
{
    return stream_create(pStream, flags);
}

/* CUDA graphs, as far as a program needs them to tell the shim it uses
 * them: an instantiation hands out a handle, a launch of it succeeds unless
 * its last launch's allocation is still held (above). No graph is built or
 * run. */
cudaError_t cudaGraphInstantiate(cudaGraphExec_t *pGraphExec, cudaGraph_t graph, unsigned long long flags)
{
    NEED_DEVICE();
    (void)graph;
    if (!pGraphExec || flags)
        return ret(cudaErrorInvalidValue);
    *pGraphExec = (cudaGraphExec_t)(uintptr_t)(STREAM_HANDLE_BASE + 8);
    return ret(cudaSuccess);
}

cudaError_t cudaGraphLaunch(cudaGraphExec_t graphExec, cudaStream_t stream)
{
    NEED_DEVICE();
    (void)stream;
    if (graphExec != (cudaGraphExec_t)(uintptr_t)(STREAM_HANDLE_BASE + 8))
        return ret(cudaErrorInvalidResourceHandle);
    int dev;
    cudaError_t e = stream_device(stream, &dev);
    if (e != cudaSuccess)
        return ret(e);
    e = cudaErrorInvalidValue;   /* its last launch's allocation is still held */
    pthread_mutex_lock(&g_lock);
    if (!graph_launch_unfreed) {
        e = cudaSuccess;
        if (graph_node_bytes > graph_memory[dev]) {   /* the driver takes what the graph's nodes need */
            e = charge_locked(dev, (long long)(graph_node_bytes - graph_memory[dev])) ? cudaErrorMemoryAllocation
                                                                                       : cudaSuccess;
            if (e == cudaSuccess)
                graph_memory[dev] = graph_node_bytes;
        }
        if (e == cudaSuccess)
            graph_launch_unfreed = graph_unfreed_nodes;
    }
    pthread_mutex_unlock(&g_lock);
    return ret(e);
}

/* A graph built node by node: its allocation nodes are the captured ones'
 * (one graph modelled, as for capture). */
cudaError_t cudaGraphCreate(cudaGraph_t *pGraph, unsigned int flags)
{
    NEED_DEVICE();
    if (!pGraph || flags)
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_lock);
    graph_node_bytes = 0;
    graph_unfreed_nodes = 0;
    pthread_mutex_unlock(&g_lock);
    *pGraph = (cudaGraph_t)(uintptr_t)(STREAM_HANDLE_BASE + 24);
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemAllocNode(cudaGraphNode_t *node, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                     size_t ndeps, struct cudaMemAllocNodeParams *params)
{
    NEED_DEVICE();
    (void)deps;
    (void)ndeps;
    if (!node || !params || !params->bytesize || graph != (cudaGraph_t)(uintptr_t)(STREAM_HANDLE_BASE + 24))
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_lock);
    params->dptr = (void *)(uintptr_t)graph_va_next;
    graph_va_next += (params->bytesize + 0x1fffff) & ~(uint64_t)0x1fffff;
    graph_node_bytes += (params->bytesize + 0x1fffff) & ~(uint64_t)0x1fffff;
    graph_unfreed_nodes++;
    pthread_mutex_unlock(&g_lock);
    *node = (cudaGraphNode_t)(uintptr_t)(STREAM_HANDLE_BASE + 32);
    return cudaSuccess;
}

cudaError_t cudaGraphAddMemFreeNode(cudaGraphNode_t *node, cudaGraph_t graph, const cudaGraphNode_t *deps,
                                    size_t ndeps, void *dptr)
{
    NEED_DEVICE();
    (void)deps;
    (void)ndeps;
    if (!node || !is_graph_addr(dptr) || graph != (cudaGraph_t)(uintptr_t)(STREAM_HANDLE_BASE + 24))
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_lock);
    if (graph_unfreed_nodes > 0)
        graph_unfreed_nodes--;
    pthread_mutex_unlock(&g_lock);
    *node = (cudaGraphNode_t)(uintptr_t)(STREAM_HANDLE_BASE + 40);
    return cudaSuccess;
}

/* Gives the memory held for graphs back, unless a launch's allocation is still held. */
cudaError_t cudaDeviceGraphMemTrim(int device)
{
    NEED_DEVICE();
    if (device < 0 || device >= g_ndev)
        return ret(cudaErrorInvalidDevice);
    pthread_mutex_lock(&g_lock);
    if (!graph_launch_unfreed && graph_memory[device]) {
        charge_locked(device, -(long long)graph_memory[device]);
        graph_memory[device] = 0;
    }
    pthread_mutex_unlock(&g_lock);
    return cudaSuccess;
}

cudaError_t cudaDeviceGetGraphMemAttribute(int device, enum cudaGraphMemAttributeType attr, void *value)
{
    NEED_DEVICE();
    if (device < 0 || device >= g_ndev)
        return ret(cudaErrorInvalidDevice);
    if (!value || (attr != cudaGraphMemAttrReservedMemCurrent && attr != cudaGraphMemAttrUsedMemCurrent))
        return ret(cudaErrorInvalidValue);
    pthread_mutex_lock(&g_lock);
    *(unsigned long long *)value = graph_memory[device];
    pthread_mutex_unlock(&g_lock);
    return cudaSuccess;
}
/* for the stand-in driver's cuDeviceGetGraphMemAttribute */
unsigned long long fake_cudart_graph_memory(int device);
unsigned long long fake_cudart_graph_memory(int device)
{
    unsigned long long v = 0;
    return device >= 0 && device < g_ndev && cudaDeviceGetGraphMemAttribute(device, cudaGraphMemAttrReservedMemCurrent,
                                                                             &v) == cudaSuccess ? v : 0;
}

cudaError_t cudaStreamDestroy(cudaStream_t stream)
{
    NEED_DEVICE();
    cudaError_t e = cudaErrorInvalidResourceHandle;
    pthread_mutex_lock(&g_lock);
    struct rec *r = tab_find((uint64_t)(uintptr_t)stream);
    if (!is_special_stream(stream) && r && r->kind == K_STREAM) {
        tab_del(r);
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return ret(e);
}

static cudaError_t stream_sync(cudaStream_t stream)
{
    int dev;
    NEED_DEVICE();
    return ret(stream_device(stream, &dev));
}

cudaError_t cudaStreamSynchronize(cudaStream_t stream) { return stream_sync(stream); }
cudaError_t cudaStreamSynchronize_ptsz(cudaStream_t stream) { return stream_sync(stream); }

/* ---- copies and sets: real on host memory, no-ops on fake device memory --------------- */

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    NEED_DEVICE();
    return ret(memcpy_common(dst, src, count, kind));
}
cudaError_t cudaMemcpy_ptds(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    NEED_DEVICE();
    return ret(memcpy_common(dst, src, count, kind));
}

static cudaError_t memcpy_async(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                cudaStream_t stream)
{
    int dev;
    NEED_DEVICE();
    cudaError_t e = stream_device(stream, &dev);
    if (e == cudaSuccess)
        e = memcpy_common(dst, src, count, kind);
    return ret(e);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind, cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream);
}
cudaError_t cudaMemcpyAsync_ptsz(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                                 cudaStream_t stream)
{
    return memcpy_async(dst, src, count, kind, stream);
}

cudaError_t cudaMemset(void *devPtr, int value, size_t count)
{
    NEED_DEVICE();
    return ret(memset_common(devPtr, value, count));
}
cudaError_t cudaMemset_ptds(void *devPtr, int value, size_t count)
{
    NEED_DEVICE();
    return ret(memset_common(devPtr, value, count));
}

static cudaError_t memset_async(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    int dev;
    NEED_DEVICE();
    cudaError_t e = stream_device(stream, &dev);
    if (e == cudaSuccess)
        e = memset_common(devPtr, value, count);
    return ret(e);
}

cudaError_t cudaMemsetAsync(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_async(devPtr, value, count, stream);
}
cudaError_t cudaMemsetAsync_ptsz(void *devPtr, int value, size_t count, cudaStream_t stream)
{
    return memset_async(devPtr, value, count, stream);
}

/* ---- memory pools --------------------------------------------------------------------- */

cudaError_t cudaDeviceGetDefaultMemPool(cudaMemPool_t *memPool, int device)
{
    NEED_DEVICE();
    if (!memPool)
        return ret(cudaErrorInvalidValue);
    if (!valid_dev(device))
        return ret(cudaErrorInvalidDevice);
    *memPool = (cudaMemPool_t)(uintptr_t)(DEFPOOL_HANDLE_BASE + 16ULL * (uint64_t)device);
    return cudaSuccess;
}

cudaError_t cudaMemPoolCreate(cudaMemPool_t *memPool, const struct cudaMemPoolProps *poolProps)
{
    NEED_DEVICE();
    if (!memPool || !poolProps || poolProps->allocType != cudaMemAllocationTypePinned)
        return ret(cudaErrorInvalidValue);
    if (poolProps->location.type != cudaMemLocationTypeDevice)
        return ret(cudaErrorNotSupported); /* host / NUMA pools are not faked */
    if (!valid_dev(poolProps->location.id))
        return ret(cudaErrorInvalidValue);
    cudaError_t e = cudaErrorMemoryAllocation;
    pthread_mutex_lock(&g_lock);
    if (tab_reserve() == 0) {
        uint64_t h = POOL_HANDLE_BASE + 16 * ++pool_counter;
        tab_put((struct rec){ .key = h, .size = 0, .dev = poolProps->location.id, .kind = K_MEMPOOL });
        *memPool = (cudaMemPool_t)(uintptr_t)h;
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return ret(e);
}

/* Allocations still live from the pool stay valid until freed (as with the real one). */
cudaError_t cudaMemPoolDestroy(cudaMemPool_t memPool)
{
    NEED_DEVICE();
    cudaError_t e = cudaErrorInvalidValue; /* includes default pools, which can't be destroyed */
    pthread_mutex_lock(&g_lock);
    struct rec *r = tab_find((uint64_t)(uintptr_t)memPool);
    if (r && r->kind == K_MEMPOOL) {
        tab_del(r);
        e = cudaSuccess;
    }
    pthread_mutex_unlock(&g_lock);
    return ret(e);
}

/* The current pool is always the default one (cudaDeviceSetMemPool is not faked). */
cudaError_t cudaDeviceGetMemPool(cudaMemPool_t *memPool, int device)
{
    return cudaDeviceGetDefaultMemPool(memPool, device);
}

/* Reads of a pool's reservation so far: a test program waits on it to know
 * the tracer's writer has read the pool (tests/progs/pool_phases.c). */
static _Atomic unsigned long reserved_reads;
unsigned long fake_cudart_pool_reads(void);
unsigned long fake_cudart_pool_reads(void) { return reserved_reads; }

/* Reserved and used bytes: those of all the pools of the pool's device together. */
cudaError_t cudaMemPoolGetAttribute(cudaMemPool_t memPool, enum cudaMemPoolAttr attr, void *value)
{
    int dev;
    NEED_DEVICE();
    if (attr == cudaMemPoolAttrReservedMemCurrent)
        reserved_reads++;
    cudaError_t e = pool_device(memPool, &dev);
    if (e != cudaSuccess || !value)
        return ret(e != cudaSuccess ? e : cudaErrorInvalidValue);
    /* the release threshold: a pool that keeps its reservation keeps all
     * (PyTorch sets UINT64_MAX); one charged per allocation gives back at
     * once (CUDA's default, 0) */
    if (attr == cudaMemPoolAttrReleaseThreshold) {
        uint64_t keeps = pool_keeps() ? UINT64_MAX : 0;
        memcpy(value, &keeps, sizeof keeps);
        return cudaSuccess;
    }
    pthread_mutex_lock(&g_lock);
    uint64_t v = attr == cudaMemPoolAttrReservedMemCurrent ? devs[dev].pool_reserved
               : attr == cudaMemPoolAttrUsedMemCurrent ? devs[dev].pool_used : UINT64_MAX;
    pthread_mutex_unlock(&g_lock);
    if (v == UINT64_MAX)
        return ret(cudaErrorNotSupported);
    memcpy(value, &v, sizeof v);
    return cudaSuccess;
}

cudaError_t cudaMemPoolTrimTo(cudaMemPool_t memPool, size_t minBytesToKeep)
{
    int dev;
    (void)minBytesToKeep;
    NEED_DEVICE();
    return ret(pool_device(memPool, &dev));
}

/* ---- driver entry points: the driver's cuGetProcAddress answers --------------- */

static cudaError_t entry_point(const char *symbol, void **funcPtr, unsigned int version, unsigned long long flags,
                               enum cudaDriverEntryPointQueryResult *status)
{
    init();
    if (!symbol || !funcPtr)
        return ret(cudaErrorInvalidValue);
    if (!drv.gpa)
        return ret(cudaErrorInsufficientDriver);
    CUdriverProcAddressQueryResult st = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    CUresult rc = drv.gpa(symbol, funcPtr, (int)version, flags, &st); /* cudaEnable* == CU_GET_PROC_ADDRESS_* */
    if (status)
        *status = (enum cudaDriverEntryPointQueryResult)st;
    return rc == CUDA_SUCCESS || rc == CUDA_ERROR_NOT_FOUND ? cudaSuccess : ret(cudaErrorInvalidValue);
}

cudaError_t cudaGetDriverEntryPointByVersion(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                             unsigned long long flags, enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, status);
}
cudaError_t cudaGetDriverEntryPointByVersion_ptsz(const char *symbol, void **funcPtr, unsigned int cudaVersion,
                                                  unsigned long long flags, enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, funcPtr, cudaVersion, flags, status);
}
/* Without a version: the runtime's own (CUDA 13.0). */
cudaError_t cudaGetDriverEntryPoint(const char *symbol, void **funcPtr, unsigned long long flags,
                                    enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, funcPtr, FAKE_VERSION, flags, status);
}
cudaError_t cudaGetDriverEntryPoint_ptsz(const char *symbol, void **funcPtr, unsigned long long flags,
                                         enum cudaDriverEntryPointQueryResult *status)
{
    return entry_point(symbol, funcPtr, FAKE_VERSION, flags, status);
}
