/* fake_libcuda.c: deterministic stand-in for the CUDA driver (libcuda.so.1).
 * TEST DOUBLE ONLY, for gputrace's GPU-less tests: the driver allocation API,
 * the virtual-memory API, contexts enough to pick a device, and the entry-point
 * query cuGetProcAddress(_v2) with versions and per-thread variants. Device
 * addresses are fake and never dereferenced; host and managed memory are real.
 * The fake runtime (fake_cudart.c) reaches it as the real one does: dlopen,
 * dlsym("cuGetProcAddress_v2"), then everything through that. See README.md. */
#include <cuda.h>
#include <dlfcn.h>

#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <time.h>

#undef cuGetProcAddress
#undef cuMemAlloc
/* Older exports a real libcuda keeps: the pre-12.0 query, and the pre-3.2
 * cuMemAlloc with 32-bit sizes (what cuGetProcAddress gives for version < 3020). */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize);
extern __typeof__(cuMemAllocAsync) cuMemAllocAsync_ptsz;
extern __typeof__(cuMemFreeAsync) cuMemFreeAsync_ptsz;
extern __typeof__(cuMemAllocFromPoolAsync) cuMemAllocFromPoolAsync_ptsz;
/* Test-only: how many calls reached a _ptsz entry point or the 32-bit cuMemAlloc. */
unsigned long fake_cuda_ptsz_calls(void);
unsigned long fake_cuda_v1_calls(void);

#define ALIGN 512ULL
#define GRANULARITY (2ULL << 20)             /* VMM sizes are multiples of 2 MiB, as on real GPUs */
#define REGION_BASE 0x300000000000ULL         /* device d: + d * REGION_STRIDE (the runtime's is 0x2000...) */
#define REGION_STRIDE 0x10000000000ULL        /* 1 TiB */
#define VA_BASE 0x380000000000ULL             /* cuMemAddressReserve ranges */
#define HANDLE_BASE 0x140000000000ULL         /* cuMemCreate handles: + 16 n */
#define CTX_BASE 0x130000000000ULL            /* primary context of device d: + 16 d */
#define MAX_DEVICES 16

enum kind { K_DEVICE = 1, K_ASYNC, K_MANAGED, K_PINNED, K_ARRAY, K_REGISTERED };

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_once_t once = PTHREAD_ONCE_INIT;
static int ndev = 1;
static uint64_t cap_bytes = 17179869184ULL;
/* FAKE_CUDA_GRANULARITY: cuMemAlloc rounds sizes (and so fresh addresses) up to
 * it, as the real driver rounds to its pages: the rounding a tracer must allow
 * for. FAKE_CUDA_CONTEXT_BYTES and FAKE_CUDA_OTHER_BYTES: held on every device
 * from the start, as a CUDA context and another process's memory are; both
 * count against the capacity, no traced call makes them (the fake NVML tells
 * them apart). */
static uint64_t granularity = 512, context_bytes, other_bytes;
static _Thread_local int cur_dev;
static unsigned long ptsz_calls, v1_calls;

static uint64_t next_addr[MAX_DEVICES], used[MAX_DEVICES];

static void env_init(void)
{
    const char *s = getenv("FAKE_CUDA_DEVICE_COUNT");
    if (s && *s)
        ndev = atoi(s) < 0 ? 0 : atoi(s) > MAX_DEVICES ? MAX_DEVICES : atoi(s);
    s = getenv("FAKE_CUDA_DEVICE_BYTES");
    if (s && *s)
        cap_bytes = strtoull(s, NULL, 10);
    s = getenv("FAKE_CUDA_GRANULARITY");
    if (s && *s && strtoull(s, NULL, 10) >= 512 && !(strtoull(s, NULL, 10) & (strtoull(s, NULL, 10) - 1)))
        granularity = strtoull(s, NULL, 10);
    s = getenv("FAKE_CUDA_CONTEXT_BYTES");
    context_bytes = s && *s ? strtoull(s, NULL, 10) : 0;
    s = getenv("FAKE_CUDA_OTHER_BYTES");
    other_bytes = s && *s ? strtoull(s, NULL, 10) : 0;
    for (int d = 0; d < MAX_DEVICES; d++)
        used[d] = context_bytes + other_bytes;
}

/* ---- allocations: a growable list, linear search (tests hold few at once) -- */

struct block { uint64_t addr, size; int dev, kind; void *host; };
static struct block *live;
static size_t nlive, caplive;
static struct block *freed; /* device blocks given back, reused for the same size */
static size_t nfreed, capfreed;

static int push(struct block **v, size_t *n, size_t *cap, struct block b)
{
    if (*n == *cap) {
        size_t c = *cap ? *cap * 2 : 64;
        struct block *p = realloc(*v, c * sizeof *p);
        if (!p)
            return -1;
        *v = p;
        *cap = c;
    }
    (*v)[(*n)++] = b;
    return 0;
}

/* Device memory on device d: a freed block of the same size if there is one
 * (so a free and an allocation of the same size get the same address back),
 * else the next fresh address. Counts against the capacity. Locked. */
static CUresult device_alloc(uint64_t size, int d, int kind, uint64_t *out)
{
    if (size > UINT64_MAX - (granularity - 1))
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t sz = (size + granularity - 1) & ~(granularity - 1);
    if (sz > cap_bytes || used[d] > cap_bytes - sz)
        return CUDA_ERROR_OUT_OF_MEMORY;
    uint64_t addr = 0;
    for (size_t i = nfreed; i-- > 0;)
        if (freed[i].dev == d && freed[i].size == sz) {
            addr = freed[i].addr;
            freed[i] = freed[--nfreed];
            break;
        }
    if (!addr) {
        addr = REGION_BASE + (uint64_t)d * REGION_STRIDE + next_addr[d];
        next_addr[d] += sz;
    }
    if (push(&live, &nlive, &caplive, (struct block){addr, sz, d, kind, NULL}))
        return CUDA_ERROR_OUT_OF_MEMORY;
    used[d] += sz;
    *out = addr;
    return CUDA_SUCCESS;
}

/* On device d (the current one: alloc_dev) */
static CUresult alloc_dev_on(CUdeviceptr *p, size_t size, int d, int kind)
{
    pthread_once(&once, env_init);
    if (!p)
        return CUDA_ERROR_INVALID_VALUE;
    *p = 0;
    if (ndev == 0)
        return CUDA_ERROR_NO_DEVICE;
    if (size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t a = 0;
    pthread_mutex_lock(&lock);
    CUresult rc = device_alloc(size, d, kind, &a);
    pthread_mutex_unlock(&lock);
    *p = a;
    return rc;
}

static CUresult alloc_dev(CUdeviceptr *p, size_t size, int kind) { return alloc_dev_on(p, size, cur_dev, kind); }

static CUresult alloc_host(void **p, size_t size, int kind)
{
    pthread_once(&once, env_init);
    if (!p || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    void *h = NULL;
    if (posix_memalign(&h, ALIGN, size) != 0)
        return CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    int bad = push(&live, &nlive, &caplive, (struct block){(uint64_t)(uintptr_t)h, size, -1, kind, h});
    pthread_mutex_unlock(&lock);
    if (bad) {
        free(h);
        return CUDA_ERROR_OUT_OF_MEMORY;
    }
    *p = h;
    return CUDA_SUCCESS;
}

/* Frees addr if it is a live block of one of the kinds in `kinds` (bit mask). */
static CUresult free_block(uint64_t addr, unsigned kinds)
{
    void *host = NULL;
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nlive; i++)
        if (live[i].addr == addr && (kinds & (1u << live[i].kind))) {
            struct block b = live[i];
            live[i] = live[--nlive];
            if (b.kind == K_REGISTERED)
                ;   /* the program's own memory: unpinned, never freed here */
            else if (b.host)
                host = b.host;
            else {
                used[b.dev] -= b.size;
                if (b.kind != K_ARRAY)   /* a handle is never an address to reuse */
                    push(&freed, &nfreed, &capfreed, b);
            }
            rc = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    free(host);
    return rc;
}
#define DEVICE_KINDS ((1u << K_DEVICE) | (1u << K_ASYNC) | (1u << K_MANAGED))

/* Like the real one (an H200, driver 580): the device's primary context goes
 * and with it its device memory, arrays, managed and pinned host memory and
 * host registrations, without frees; stream-ordered pools' memory outlives it.
 * The stand-in's host blocks belong to no device: all of them go. */
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev);
#undef cuDevicePrimaryCtxReset
CUresult cuDevicePrimaryCtxReset(CUdevice dev);
CUresult cuDevicePrimaryCtxReset(CUdevice dev) { return cuDevicePrimaryCtxReset_v2(dev); }   /* CUDA 7's export */
CUresult cuDevicePrimaryCtxReset_v2(CUdevice dev)
{
    pthread_once(&once, env_init);
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    void **host = NULL;
    size_t nhost = 0;
    pthread_mutex_lock(&lock);
    host = nlive ? malloc(nlive * sizeof *host) : NULL;
    for (size_t i = 0; i < nlive;) {
        struct block b = live[i];
        int gone = (b.dev == dev && (b.kind == K_DEVICE || b.kind == K_ARRAY)) || b.kind == K_MANAGED ||
                   b.kind == K_PINNED || b.kind == K_REGISTERED;
        if (!gone) {
            i++;
            continue;
        }
        live[i] = live[--nlive];
        if (b.kind == K_MANAGED || b.kind == K_PINNED) {
            if (host)
                host[nhost++] = b.host;
        } else if (b.kind != K_REGISTERED) {
            used[b.dev] -= b.size;
            if (b.kind != K_ARRAY)
                push(&freed, &nfreed, &capfreed, b);
        }
    }
    pthread_mutex_unlock(&lock);
    for (size_t i = 0; i < nhost; i++)
        free(host[i]);
    free(host);
    return CUDA_SUCCESS;
}

/* FAKE_CUDA_HANG_ALLOC_BYTES=N: cuMemAlloc_v2 of exactly N bytes, and
 * FAKE_CUDA_HANG_FREE_BYTES=N: cuMemFree_v2 of a block allocated with N bytes
 * (as rounded), never return (a GPU that stopped answering): they sit in
 * pause() until a signal handler leaves them by a longjmp. They hold no
 * lock, but with FAKE_CUDA_HANG_HOLDS_CUPTI=1 the stand-in CUPTI's (found at
 * GPUTRACE_CUPTI_PATH once loaded), as the real driver held the lock that
 * CUPTI's flush waits for inside a synchronizing cudaFree (an H200, CUDA 13):
 * left by the jump, it stays held, and every flush after waits for ever. */
static uint64_t hang_bytes(const char *name)
{
    const char *s = getenv(name);
    return s && *s ? strtoull(s, NULL, 10) : 0;
}

static void pause_for_ever(void)
{
    for (;;)
        pause();
}

static void hang(void)
{
    const char *hold = getenv("FAKE_CUDA_HANG_HOLDS_CUPTI"), *path = getenv("GPUTRACE_CUPTI_PATH");
    void *h = hold && *hold == '1' && path ? dlopen(path, RTLD_NOW | RTLD_NOLOAD) : NULL;
    void (*locked)(void (*)(void)) = h ? (void (*)(void (*)(void)))dlsym(h, "fake_cupti_while_locked") : NULL;
    if (locked)
        locked(pause_for_ever);
    pause_for_ever();
}

CUresult cuMemAlloc_v2(CUdeviceptr *dptr, size_t bytesize)
{
    if (bytesize && bytesize == hang_bytes("FAKE_CUDA_HANG_ALLOC_BYTES"))
        hang();
    return alloc_dev(dptr, bytesize, K_DEVICE);
}

static int hangs_at_free(CUdeviceptr dptr)
{
    uint64_t h = hang_bytes("FAKE_CUDA_HANG_FREE_BYTES");
    if (!h)
        return 0;
    pthread_once(&once, env_init);
    uint64_t rounded = (h + granularity - 1) / granularity * granularity;
    int found = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nlive && !found; i++)
        found = live[i].addr == dptr && live[i].size == rounded;
    pthread_mutex_unlock(&lock);
    return found;
}
CUresult cuMemAlloc(unsigned int *dptr, unsigned int bytesize)
{
    (void)dptr;
    (void)bytesize;
    v1_calls++;
    return CUDA_ERROR_NOT_SUPPORTED; /* fake addresses do not fit 32 bits */
}
CUresult cuMemFree_v2(CUdeviceptr dptr)
{
    /* FAKE_CUDA_SLOW_FREE_MS=M with FAKE_CUDA_HANG_FREE_BYTES: that free
     * waits M ms, then frees (a synchronizing cudaFree waiting on a kernel);
     * with FAKE_CUDA_SLOW_FREE_RESULT=R too, it then fails with R instead (a
     * kernel that faulted meanwhile) and the block stays allocated */
    uint64_t slow = hang_bytes("FAKE_CUDA_SLOW_FREE_MS");
    if (dptr && hangs_at_free(dptr) && slow) {
        struct timespec ts = {(time_t)(slow / 1000), (long)(slow % 1000) * 1000000L};
        while (nanosleep(&ts, &ts) != 0)
            ;
        uint64_t fails = hang_bytes("FAKE_CUDA_SLOW_FREE_RESULT");
        if (fails)
            return (CUresult)fails;
    } else if (dptr && hangs_at_free(dptr)) {
        hang();
    }
    return dptr ? free_block(dptr, DEVICE_KINDS) : CUDA_SUCCESS;
}
CUresult cuMemAllocPitch_v2(CUdeviceptr *dptr, size_t *pPitch, size_t width, size_t height, unsigned int elem)
{
    (void)elem;
    if (!pPitch)
        return CUDA_ERROR_INVALID_VALUE;
    size_t pitch = (width + ALIGN - 1) & ~(ALIGN - 1);
    CUresult rc = alloc_dev(dptr, pitch * height, K_DEVICE);
    if (rc == CUDA_SUCCESS)
        *pPitch = pitch;
    return rc;
}
/* ---- CUDA arrays: device memory behind a handle of its own -------------------
 * The stand-in knows the plain formats only (8/16/32-bit channels, 1, 2 or 4
 * of them) and the layered flag; its handles are not device addresses (the
 * real driver's are host pointers). Sparse and deferred-mapping arrays hold
 * nothing, as on a real device. The size counted against the device is
 * texels x texel bytes summed over the levels, rounded like cuMemAlloc. */
#define ARRAY_BASE 0x150000000000ULL          /* array handles: + 16 n */
static uint64_t next_array;

static uint64_t texel_bytes(CUarray_format f, unsigned channels)
{
    unsigned b = f == CU_AD_FORMAT_UNSIGNED_INT8 || f == CU_AD_FORMAT_SIGNED_INT8 ? 1
               : f == CU_AD_FORMAT_UNSIGNED_INT16 || f == CU_AD_FORMAT_SIGNED_INT16 || f == CU_AD_FORMAT_HALF ? 2
               : f == CU_AD_FORMAT_UNSIGNED_INT32 || f == CU_AD_FORMAT_SIGNED_INT32 || f == CU_AD_FORMAT_FLOAT ? 4 : 0;
    return channels == 1 || channels == 2 || channels == 4 ? (uint64_t)b * channels : 0;
}

static CUresult array_make(uint64_t *handle, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned levels)
{
    pthread_once(&once, env_init);
    if (!handle || !d)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t texel = texel_bytes(d->Format, d->NumChannels);
    if (!texel || d->Width == 0 || levels == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t size = 0;
    int layered = (d->Flags & CUDA_ARRAY3D_LAYERED) != 0;
    for (unsigned l = 0; l < levels; l++) {
        uint64_t w = d->Width >> l, h = d->Height >> l, dd = layered ? d->Depth : d->Depth >> l;
        size += texel * (w ? w : 1) * (h ? h : 1) * (dd ? dd : 1);
    }
    if (d->Flags & (CUDA_ARRAY3D_SPARSE | CUDA_ARRAY3D_DEFERRED_MAPPING))
        size = 0;
    uint64_t sz = (size + granularity - 1) & ~(granularity - 1);
    pthread_mutex_lock(&lock);
    CUresult rc = CUDA_SUCCESS;
    if (sz > cap_bytes || used[cur_dev] > cap_bytes - sz)
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        uint64_t h = ARRAY_BASE + 16 * ++next_array;
        if (push(&live, &nlive, &caplive, (struct block){h, sz, cur_dev, K_ARRAY, NULL}))
            rc = CUDA_ERROR_OUT_OF_MEMORY;
        else {
            used[cur_dev] += sz;
            *handle = h;
        }
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuArrayCreate_v2(CUarray *a, const CUDA_ARRAY_DESCRIPTOR *d)
{
    if (!d)
        return CUDA_ERROR_INVALID_VALUE;
    CUDA_ARRAY3D_DESCRIPTOR d3 = {d->Width, d->Height, 0, d->Format, d->NumChannels, 0};
    return array_make((uint64_t *)a, &d3, 1);
}
CUresult cuArray3DCreate_v2(CUarray *a, const CUDA_ARRAY3D_DESCRIPTOR *d) { return array_make((uint64_t *)a, d, 1); }
CUresult cuMipmappedArrayCreate(CUmipmappedArray *m, const CUDA_ARRAY3D_DESCRIPTOR *d, unsigned int levels)
{
    return array_make((uint64_t *)m, d, levels);
}
CUresult cuArrayDestroy(CUarray a) { return free_block((uint64_t)(uintptr_t)a, 1u << K_ARRAY); }
CUresult cuMipmappedArrayDestroy(CUmipmappedArray m) { return free_block((uint64_t)(uintptr_t)m, 1u << K_ARRAY); }

CUresult cuMemAllocManaged(CUdeviceptr *dptr, size_t bytesize, unsigned int flags)
{
    (void)flags;
    void *p = NULL;
    CUresult rc = alloc_host(&p, bytesize, K_MANAGED);
    if (dptr)
        *dptr = (CUdeviceptr)(uintptr_t)p;
    return rc;
}
CUresult cuMemAllocHost_v2(void **pp, size_t bytesize) { return alloc_host(pp, bytesize, K_PINNED); }
CUresult cuMemHostAlloc(void **pp, size_t bytesize, unsigned int flags)
{
    (void)flags;
    return alloc_host(pp, bytesize, K_PINNED);
}
CUresult cuMemFreeHost(void *p) { return free_block((uint64_t)(uintptr_t)p, 1u << K_PINNED); }
/* Page-locking the program's own memory: a range may be registered once
 * (CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED if it overlaps one), and only
 * its start unregisters it (CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED else). */
CUresult cuMemHostRegister_v2(void *p, size_t bytesize, unsigned int flags)
{
    (void)flags;
    pthread_once(&once, env_init);
    if (!p || bytesize == 0)
        return CUDA_ERROR_INVALID_VALUE;
    uint64_t a = (uint64_t)(uintptr_t)p;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nlive && rc == CUDA_SUCCESS; i++)
        if (live[i].kind == K_REGISTERED && a < live[i].addr + live[i].size && live[i].addr < a + bytesize)
            rc = CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED;
    if (rc == CUDA_SUCCESS && push(&live, &nlive, &caplive, (struct block){a, bytesize, -1, K_REGISTERED, NULL}))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_unlock(&lock);
    return rc;
}
CUresult cuMemHostUnregister(void *p)
{
    return free_block((uint64_t)(uintptr_t)p, 1u << K_REGISTERED) == CUDA_SUCCESS ? CUDA_SUCCESS
                                                                                : CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED;
}
/* A stream the runtime stand-in made: its device (as the real driver knows
 * the runtime's streams, its own objects); -1 for the default streams and
 * streams it does not know. */
static void *runtime_sym(const char *name)   /* from the runtime stand-in, if loaded (even RTLD_LOCAL) */
{
    void *h = dlopen("libcudart.so.13", RTLD_NOW | RTLD_NOLOAD);
    if (!h) {
        (void)dlerror();   /* not loaded: a real driver leaves the program no dlerror() message */
        return NULL;
    }
    void *f = dlsym(h, name);
    dlclose(h);
    return f;
}

static int runtime_stream_device(CUstream s)
{
    static int (*ask)(void *, int *);
    if (!ask)
        ask = (int (*)(void *, int *))runtime_sym("fake_cudart_stream_device");
    int d;
    return ask && ask((void *)s, &d) == 0 && d >= 0 && d < ndev ? d : -1;
}

/* Stream-ordered: memory goes to the stream's device (the current one for
 * the default streams and streams only the driver made). */
CUresult cuMemAllocAsync(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
    int d = runtime_stream_device(s);
    return d >= 0 ? alloc_dev_on(dptr, bytesize, d, K_ASYNC) : alloc_dev(dptr, bytesize, K_ASYNC);
}
CUresult cuMemAllocAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUstream s)
{
    ptsz_calls++;
    return cuMemAllocAsync(dptr, bytesize, s);
}
CUresult cuMemFreeAsync(CUdeviceptr dptr, CUstream s)
{
    (void)s;
    return free_block(dptr, DEVICE_KINDS);
}
CUresult cuMemFreeAsync_ptsz(CUdeviceptr dptr, CUstream s)
{
    ptsz_calls++;
    return cuMemFreeAsync(dptr, s);
}
/* A device's default pool: POOL_BASE + 16 d (cuDeviceGetDefaultMemPool).
 * Memory from it lives on d, whichever device is current (as on a GPU);
 * any other pool handle gives the current device's. */
#define POOL_BASE 0x150000000000ULL
CUresult cuDeviceGetDefaultMemPool(CUmemoryPool *pool, CUdevice dev)
{
    pthread_once(&once, env_init);
    if (!pool)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *pool = (CUmemoryPool)(uintptr_t)(POOL_BASE + 16 * (uint64_t)dev);
    return CUDA_SUCCESS;
}
CUresult cuMemAllocFromPoolAsync(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s)
{
    (void)s;
    uint64_t h = (uint64_t)(uintptr_t)pool;
    if (h < POOL_BASE || (h - POOL_BASE) % 16 || (h - POOL_BASE) / 16 >= (uint64_t)ndev)
        return alloc_dev(dptr, bytesize, K_ASYNC);
    return alloc_dev_on(dptr, bytesize, (int)((h - POOL_BASE) / 16), K_ASYNC);
}
/* Capture is the runtime stand-in's (its streams are the only ones that
 * capture): ACTIVE while it captures the stream. */
CUresult cuStreamIsCapturing(CUstream s, CUstreamCaptureStatus *status)
{
    static int (*ask)(void *);
    if (!status)
        return CUDA_ERROR_INVALID_VALUE;
    if (!ask)
        ask = (int (*)(void *))runtime_sym("fake_cudart_stream_capturing");
    *status = ask && ask((void *)s) ? CU_STREAM_CAPTURE_STATUS_ACTIVE : CU_STREAM_CAPTURE_STATUS_NONE;
    return CUDA_SUCCESS;
}
/* The memory the runtime stand-in's graph launches hold on device d (its
 * graphs are the only ones): reserved and used alike. */
CUresult cuDeviceGetGraphMemAttribute(CUdevice d, CUgraphMem_attribute attr, void *value)
{
    static unsigned long long (*held)(int);
    if (!value || (attr != CU_GRAPH_MEM_ATTR_RESERVED_MEM_CURRENT && attr != CU_GRAPH_MEM_ATTR_USED_MEM_CURRENT))
        return CUDA_ERROR_INVALID_VALUE;
    if (d < 0 || d >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    if (!held)
        held = (unsigned long long (*)(int))runtime_sym("fake_cudart_graph_memory");
    *(cuuint64_t *)value = held ? held(d) : 0;
    return CUDA_SUCCESS;
}
/* Asked of a stream while it was being captured: the shim asks only
 * cuStreamIsCapturing of such a stream (graphs.c), and a test holds it to
 * that through this count. */
static _Atomic int capturing_stream_queries;
int fake_cuda_capture_queries(void);
int fake_cuda_capture_queries(void) { return capturing_stream_queries; }

CUresult cuStreamGetDevice(CUstream s, CUdevice *dev)
{
    static int (*capturing)(void *);
    if (!capturing)
        capturing = (int (*)(void *))runtime_sym("fake_cudart_stream_capturing");
    if (capturing && capturing((void *)s))
        capturing_stream_queries++;
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    int d = runtime_stream_device(s);
    *dev = d >= 0 ? d : cur_dev;
    return CUDA_SUCCESS;
}
/* Memory type and device ordinal of a live device or pinned block. */
CUresult cuPointerGetAttributes(unsigned int n, CUpointer_attribute *which, void **data, CUdeviceptr ptr)
{
    pthread_once(&once, env_init);
    int dev = -2, kind = 0;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nlive; i++)
        if (ptr >= live[i].addr && ptr - live[i].addr < live[i].size) {
            dev = live[i].dev;
            kind = live[i].kind;
            break;
        }
    pthread_mutex_unlock(&lock);
    if (dev == -2) {   /* the runtime stand-in's own memory, as a real driver knows the runtime's */
        static int (*ask)(const void *, int *, int *);
        if (!ask)
            ask = (int (*)(const void *, int *, int *))runtime_sym("fake_cudart_pointer");
        int host = 0;
        if (ask && ask((const void *)(uintptr_t)ptr, &dev, &host) == 0)
            kind = host ? K_PINNED : K_DEVICE;
        else
            dev = -2;
    }
    if (dev == -2) {   /* not CUDA's: success with empty answers, as the real driver gives */
        for (unsigned int i = 0; i < n; i++)
            if (which[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
                *(unsigned int *)data[i] = 0;
        return CUDA_SUCCESS;
    }
    for (unsigned int i = 0; i < n; i++) {
        if (which[i] == CU_POINTER_ATTRIBUTE_MEMORY_TYPE)
            *(unsigned int *)data[i] = kind == K_PINNED ? CU_MEMORYTYPE_HOST : CU_MEMORYTYPE_DEVICE;
        else if (which[i] == CU_POINTER_ATTRIBUTE_DEVICE_ORDINAL)
            *(int *)data[i] = kind == K_PINNED ? -2 : dev;
        else
            return CUDA_ERROR_INVALID_VALUE;
    }
    return CUDA_SUCCESS;
}
CUresult cuMemAllocFromPoolAsync_ptsz(CUdeviceptr *dptr, size_t bytesize, CUmemoryPool pool, CUstream s)
{
    ptsz_calls++;
    return cuMemAllocFromPoolAsync(dptr, bytesize, pool, s);
}
unsigned long fake_cuda_ptsz_calls(void) { return ptsz_calls; }
unsigned long fake_cuda_v1_calls(void) { return v1_calls; }

/* ---- virtual memory ---------------------------------------------------------
 * A handle holds its bytes from cuMemCreate until every reference to it is
 * released (cuMemCreate's and each cuMemRetainAllocationHandle's) and it is
 * no longer mapped, as on the real driver. An imported handle (dev IMPORTED)
 * holds no memory here: another process owns it. */

#define IMPORTED (-2)
struct handle { uint64_t h, size; int dev, mappings, refs; };
struct vrange { uint64_t va, size, handle; }; /* a reservation (handle 0) or a mapping */
/* room for a growable range of thousands of 2 MiB chunks (test_driver.py) */
static struct handle handles[16384];
static struct vrange reserves[256], maps[16384];
static size_t nhandles, nreserves, nmaps;
static uint64_t handle_counter, next_va;

static struct handle *handle_of(uint64_t h)
{
    for (size_t i = 0; i < nhandles; i++)
        if (handles[i].h == h)
            return &handles[i];
    return NULL;
}

static void drop_handle(struct handle *x) /* locked; its memory goes back */
{
    if (x->dev >= 0)
        used[x->dev] -= x->size;
    *x = handles[--nhandles];
}

CUresult cuMemGetAllocationGranularity(size_t *granularity, const CUmemAllocationProp *prop,
                                       CUmemAllocationGranularity_flags option)
{
    (void)option;
    if (!granularity || !prop)
        return CUDA_ERROR_INVALID_VALUE;
    *granularity = GRANULARITY;
    return CUDA_SUCCESS;
}

CUresult cuMemCreate(CUmemGenericAllocationHandle *handle, size_t size, const CUmemAllocationProp *prop,
                     unsigned long long flags)
{
    pthread_once(&once, env_init);
    if (!handle || !prop || flags || size == 0 || size % GRANULARITY || prop->type != CU_MEM_ALLOCATION_TYPE_PINNED)
        return CUDA_ERROR_INVALID_VALUE;
    int dev;
    if (prop->location.type == CU_MEM_LOCATION_TYPE_DEVICE) {
        if (prop->location.id < 0 || prop->location.id >= ndev)
            return CUDA_ERROR_INVALID_DEVICE;
        dev = prop->location.id;
    } else if (prop->location.type == CU_MEM_LOCATION_TYPE_HOST || prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA ||
               prop->location.type == CU_MEM_LOCATION_TYPE_HOST_NUMA_CURRENT) {
        dev = -1;
    } else
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_SUCCESS;
    pthread_mutex_lock(&lock);
    if (nhandles == sizeof handles / sizeof handles[0] || (dev >= 0 && (size > cap_bytes || used[dev] > cap_bytes - size)))
        rc = CUDA_ERROR_OUT_OF_MEMORY;
    else {
        if (dev >= 0)
            used[dev] += size;
        *handle = HANDLE_BASE + 16 * ++handle_counter;
        handles[nhandles++] = (struct handle){*handle, size, dev, 0, 1};
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuMemRelease(CUmemGenericAllocationHandle handle)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct handle *x = handle_of(handle);
    if (x && x->refs > 0) {
        if (--x->refs == 0 && x->mappings == 0)
            drop_handle(x);
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuMemAddressReserve(CUdeviceptr *ptr, size_t size, size_t alignment, CUdeviceptr addr, unsigned long long flags)
{
    (void)alignment;
    (void)addr;
    (void)flags;
    if (!ptr || size == 0 || size % GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    if (nreserves < sizeof reserves / sizeof reserves[0]) {
        *ptr = VA_BASE + next_va;
        next_va += size + GRANULARITY; /* a gap: ranges never touch */
        reserves[nreserves++] = (struct vrange){*ptr, size, 0};
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuMemAddressFree(CUdeviceptr ptr, size_t size)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nreserves; i++)
        if (reserves[i].va == ptr && reserves[i].size == size) {
            reserves[i] = reserves[--nreserves];
            rc = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuMemMap(CUdeviceptr ptr, size_t size, size_t offset, CUmemGenericAllocationHandle handle,
                  unsigned long long flags)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    struct handle *x = handle_of(handle);
    int inside = 0;
    for (size_t i = 0; i < nreserves; i++)
        inside |= reserves[i].va <= ptr && ptr + size <= reserves[i].va + reserves[i].size;
    for (size_t i = 0; i < nmaps; i++)
        inside &= ptr + size <= maps[i].va || maps[i].va + maps[i].size <= ptr;
    if (x && x->refs > 0 && inside && !flags && size && offset + size <= x->size &&
        nmaps < sizeof maps / sizeof maps[0]) {
        maps[nmaps++] = (struct vrange){ptr, size, handle};
        x->mappings++;
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Unmaps every mapping inside [ptr, ptr + size); a released handle whose last
 * mapping goes gives its memory back now. */
CUresult cuMemUnmap(CUdeviceptr ptr, size_t size)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nmaps;) {
        if (maps[i].va >= ptr && maps[i].va + maps[i].size <= ptr + size) {
            struct handle *x = handle_of(maps[i].handle);
            if (x && --x->mappings == 0 && x->refs == 0)
                drop_handle(x);
            maps[i] = maps[--nmaps];
            rc = CUDA_SUCCESS;
        } else
            i++;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Another reference to the handle mapped at addr: the same handle value (as
 * the real driver documents), released by one more cuMemRelease. */
CUresult cuMemRetainAllocationHandle(CUmemGenericAllocationHandle *handle, void *addr)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    uint64_t a = (uint64_t)(uintptr_t)addr;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; handle && i < nmaps; i++)
        if (maps[i].va <= a && a < maps[i].va + maps[i].size) {
            struct handle *x = handle_of(maps[i].handle);
            if (x) {
                x->refs++;
                *handle = x->h;
                rc = CUDA_SUCCESS;
            }
            break;
        }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* No exporting process is simulated: the stand-in's shareable handle (a file
 * descriptor on the real driver) is the size of the allocation it stands for,
 * a multiple of the granularity. The handle holds no memory of this process. */
CUresult cuMemImportFromShareableHandle(CUmemGenericAllocationHandle *handle, void *osHandle,
                                        CUmemAllocationHandleType type)
{
    (void)type;
    uint64_t size = (uint64_t)(uintptr_t)osHandle;
    if (!handle || size == 0 || size % GRANULARITY)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_ERROR_OUT_OF_MEMORY;
    pthread_mutex_lock(&lock);
    if (nhandles < sizeof handles / sizeof handles[0]) {
        *handle = HANDLE_BASE + 16 * ++handle_counter;
        handles[nhandles++] = (struct handle){*handle, size, IMPORTED, 0, 1};
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Legacy IPC: likewise, the first 8 bytes of the stand-in's CUipcMemHandle
 * are the size of the other process's allocation. Opened ranges get
 * addresses of their own, not charged to any device. */
#define IPC_BASE 0x3c0000000000ULL
static struct vrange ipc[256];
static size_t nipc;
static uint64_t next_ipc;

CUresult cuIpcOpenMemHandle_v2(CUdeviceptr *pdptr, CUipcMemHandle handle, unsigned int flags)
{
    (void)flags;
    uint64_t size;
    memcpy(&size, handle.reserved, sizeof size);
    if (!pdptr || size == 0)
        return CUDA_ERROR_INVALID_VALUE;
    CUresult rc = CUDA_ERROR_TOO_MANY_PEERS;
    pthread_mutex_lock(&lock);
    if (nipc < sizeof ipc / sizeof ipc[0]) {
        *pdptr = IPC_BASE + next_ipc;
        next_ipc += (size + GRANULARITY - 1) / GRANULARITY * GRANULARITY + GRANULARITY;
        ipc[nipc++] = (struct vrange){*pdptr, size, 0};
        rc = CUDA_SUCCESS;
    }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuIpcCloseMemHandle(CUdeviceptr dptr)
{
    CUresult rc = CUDA_ERROR_INVALID_VALUE;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nipc; i++)
        if (ipc[i].va == dptr) {
            ipc[i] = ipc[--nipc];
            rc = CUDA_SUCCESS;
            break;
        }
    pthread_mutex_unlock(&lock);
    return rc;
}

/* The range an address lies in: IPC-opened ranges and the driver's own blocks. */
CUresult cuMemGetAddressRange_v2(CUdeviceptr *pbase, size_t *psize, CUdeviceptr dptr)
{
    CUresult rc = CUDA_ERROR_NOT_FOUND;
    pthread_mutex_lock(&lock);
    for (size_t i = 0; i < nipc && rc != CUDA_SUCCESS; i++)
        if (ipc[i].va <= dptr && dptr < ipc[i].va + ipc[i].size) {
            if (pbase)
                *pbase = ipc[i].va;
            if (psize)
                *psize = ipc[i].size;
            rc = CUDA_SUCCESS;
        }
    for (size_t i = 0; i < nlive && rc != CUDA_SUCCESS; i++)
        if (live[i].addr <= dptr && dptr < live[i].addr + live[i].size) {
            if (pbase)
                *pbase = live[i].addr;
            if (psize)
                *psize = live[i].size;
            rc = CUDA_SUCCESS;
        }
    pthread_mutex_unlock(&lock);
    return rc;
}

CUresult cuMemSetAccess(CUdeviceptr ptr, size_t size, const CUmemAccessDesc *desc, size_t count)
{
    (void)ptr;
    (void)size;
    return desc && count ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}

/* Test-only, for the fake runtime: one capacity per device for the memory of
 * both stand-ins. fake_cuda_charge adds delta bytes to device d's use (0) or
 * refuses because the capacity would be exceeded (-1). */
int fake_cuda_charge(int d, long long delta);
int fake_cuda_charge(int d, long long delta)
{
    pthread_once(&once, env_init);
    if (d < 0 || d >= MAX_DEVICES)
        return -1;
    int rc = 0;
    pthread_mutex_lock(&lock);
    if (delta > 0 && ((uint64_t)delta > cap_bytes || used[d] > cap_bytes - (uint64_t)delta))
        rc = -1;
    else
        used[d] += (uint64_t)delta;
    pthread_mutex_unlock(&lock);
    return rc;
}

/* Test-only, for the fake NVML: FAKE_CUDA_OTHER_BYTES, the part of
 * fake_cuda_device_used that belongs to no process of ours. */
unsigned long long fake_cuda_other_bytes(void);
unsigned long long fake_cuda_other_bytes(void)
{
    pthread_once(&once, env_init);
    return other_bytes;
}

/* Physical bytes held on device d: the truth a trace must match. */
unsigned long long fake_cuda_device_used(int d);
unsigned long long fake_cuda_device_used(int d)
{
    pthread_once(&once, env_init);
    pthread_mutex_lock(&lock);
    unsigned long long u = d >= 0 && d < MAX_DEVICES ? used[d] : 0;
    pthread_mutex_unlock(&lock);
    return u;
}

/* ---- initialisation and contexts: just enough to choose a device ---------- */

CUresult cuInit(unsigned int flags)
{
    pthread_once(&once, env_init);
    return flags ? CUDA_ERROR_INVALID_VALUE : ndev ? CUDA_SUCCESS : CUDA_ERROR_NO_DEVICE;
}
CUresult cuDriverGetVersion(int *v)
{
    if (!v)
        return CUDA_ERROR_INVALID_VALUE;
    *v = 13000;
    return CUDA_SUCCESS;
}
CUresult cuDeviceGet(CUdevice *dev, int ordinal)
{
    pthread_once(&once, env_init);
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    if (ordinal < 0 || ordinal >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *dev = ordinal;
    return CUDA_SUCCESS;
}
CUresult cuCtxSynchronize(void) { return CUDA_SUCCESS; }
/* Fake device memory is never touched. */
CUresult cuMemsetD8_v2(CUdeviceptr p, unsigned char v, size_t n)
{
    (void)v;
    return p || !n ? CUDA_SUCCESS : CUDA_ERROR_INVALID_VALUE;
}
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev)
{
    pthread_once(&once, env_init);
    if (!ctx)
        return CUDA_ERROR_INVALID_VALUE;
    if (dev < 0 || dev >= ndev)
        return CUDA_ERROR_INVALID_DEVICE;
    *ctx = (CUcontext)(uintptr_t)(CTX_BASE + 16 * (uint64_t)dev);
    return CUDA_SUCCESS;
}
CUresult cuCtxSetCurrent(CUcontext ctx)
{
    uint64_t c = (uint64_t)(uintptr_t)ctx;
    if (c < CTX_BASE || (c - CTX_BASE) % 16 || (c - CTX_BASE) / 16 >= (uint64_t)ndev)
        return CUDA_ERROR_INVALID_CONTEXT;
    cur_dev = (int)((c - CTX_BASE) / 16);
    return CUDA_SUCCESS;
}
CUresult cuCtxGetDevice(CUdevice *dev)
{
    if (!dev)
        return CUDA_ERROR_INVALID_VALUE;
    *dev = cur_dev;
    return CUDA_SUCCESS;
}

/* ---- cuGetProcAddress: base name + version + per-thread flag -> function --- */

struct proc { const char *name; int since; int per_thread; void *fn; };
static const struct proc procs[] = {
    {"cuGetProcAddress", 11030, 0, (void *)cuGetProcAddress},
    {"cuGetProcAddress", 12000, 0, (void *)cuGetProcAddress_v2},
    {"cuInit", 2000, 0, (void *)cuInit},
    {"cuDriverGetVersion", 2020, 0, (void *)cuDriverGetVersion},
    {"cuDevicePrimaryCtxRetain", 7000, 0, (void *)cuDevicePrimaryCtxRetain},
    {"cuDevicePrimaryCtxReset", 7000, 0, (void *)cuDevicePrimaryCtxReset},
    {"cuDevicePrimaryCtxReset", 11000, 0, (void *)cuDevicePrimaryCtxReset_v2},
    {"cuCtxSetCurrent", 4000, 0, (void *)cuCtxSetCurrent},
    {"cuCtxGetDevice", 2000, 0, (void *)cuCtxGetDevice},
    {"cuMemAlloc", 2000, 0, (void *)cuMemAlloc},
    {"cuMemAlloc", 3020, 0, (void *)cuMemAlloc_v2},
    {"cuMemFree", 3020, 0, (void *)cuMemFree_v2},
    {"cuMemAllocPitch", 3020, 0, (void *)cuMemAllocPitch_v2},
    {"cuMemAllocManaged", 6000, 0, (void *)cuMemAllocManaged},
    {"cuMemAllocHost", 3020, 0, (void *)cuMemAllocHost_v2},
    {"cuMemHostAlloc", 2020, 0, (void *)cuMemHostAlloc},
    {"cuMemFreeHost", 2000, 0, (void *)cuMemFreeHost},
    {"cuMemHostRegister", 6050, 0, (void *)cuMemHostRegister_v2},
    {"cuMemHostUnregister", 4000, 0, (void *)cuMemHostUnregister},
    {"cuMemAllocAsync", 11020, 0, (void *)cuMemAllocAsync},
    {"cuMemAllocAsync", 11020, 1, (void *)cuMemAllocAsync_ptsz},
    {"cuMemFreeAsync", 11020, 0, (void *)cuMemFreeAsync},
    {"cuMemFreeAsync", 11020, 1, (void *)cuMemFreeAsync_ptsz},
    {"cuMemAllocFromPoolAsync", 11020, 0, (void *)cuMemAllocFromPoolAsync},
    {"cuMemAllocFromPoolAsync", 11020, 1, (void *)cuMemAllocFromPoolAsync_ptsz},
    {"cuMemGetAllocationGranularity", 10020, 0, (void *)cuMemGetAllocationGranularity},
    {"cuMemCreate", 10020, 0, (void *)cuMemCreate},
    {"cuMemRelease", 10020, 0, (void *)cuMemRelease},
    {"cuMemAddressReserve", 10020, 0, (void *)cuMemAddressReserve},
    {"cuMemAddressFree", 10020, 0, (void *)cuMemAddressFree},
    {"cuMemMap", 10020, 0, (void *)cuMemMap},
    {"cuMemUnmap", 10020, 0, (void *)cuMemUnmap},
    {"cuMemSetAccess", 10020, 0, (void *)cuMemSetAccess},
    {"cuMemRetainAllocationHandle", 11000, 0, (void *)cuMemRetainAllocationHandle},
    {"cuMemImportFromShareableHandle", 10020, 0, (void *)cuMemImportFromShareableHandle},
    {"cuIpcOpenMemHandle", 11000, 0, (void *)cuIpcOpenMemHandle_v2},
    {"cuIpcCloseMemHandle", 4010, 0, (void *)cuIpcCloseMemHandle},
    {"cuMemGetAddressRange", 3020, 0, (void *)cuMemGetAddressRange_v2},
    {"cuArrayCreate", 3020, 0, (void *)cuArrayCreate_v2},
    {"cuArray3DCreate", 3020, 0, (void *)cuArray3DCreate_v2},
    {"cuMipmappedArrayCreate", 5000, 0, (void *)cuMipmappedArrayCreate},
    {"cuArrayDestroy", 2000, 0, (void *)cuArrayDestroy},
    {"cuMipmappedArrayDestroy", 5000, 0, (void *)cuMipmappedArrayDestroy},
};

CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                             CUdriverProcAddressQueryResult *status)
{
    if (!symbol || !pfn)
        return CUDA_ERROR_INVALID_VALUE;
    int per_thread = (flags & CU_GET_PROC_ADDRESS_PER_THREAD_DEFAULT_STREAM) != 0, named = 0;
    const struct proc *best = NULL;
    for (size_t i = 0; i < sizeof procs / sizeof procs[0]; i++) {
        const struct proc *p = &procs[i];
        if (strcmp(p->name, symbol))
            continue;
        named = 1;
        /* the newest version the caller asked for; its per-thread variant when asked and there is one */
        if (p->since <= cudaVersion && (!best || p->since > best->since || (p->since == best->since && p->per_thread == per_thread)))
            best = p;
    }
    *pfn = best ? best->fn : NULL;
    if (status)
        *status = best ? CU_GET_PROC_ADDRESS_SUCCESS
                : named ? CU_GET_PROC_ADDRESS_VERSION_NOT_SUFFICIENT
                        : CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    return best ? CUDA_SUCCESS : CUDA_ERROR_NOT_FOUND;
}

CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    return cuGetProcAddress_v2(symbol, pfn, cudaVersion, flags, NULL);
}
