/* NVTX through the real nvtx3 headers, as any C/C++ program uses them: the
 * shim must receive every call with nothing but LD_PRELOAD. Every allocation
 * size is planted so the test can tell which range each event falls in.
 *   basic:   a range opened before the first CUDA call, nested push/pop
 *            ("outer" > "inner bs=8"), a mark, a domain "io" with a range and a
 *            mark, and a start/end range ended by another thread
 *   threads: 4 threads, each nesting "tN-outer" > "tN-inner" around its own
 *            allocations, all in flight at once
 *   nocuda:  NVTX calls only: no trace may be written
 *   odd:     1 MB names, and names that are not UTF-8
 *   pending: 2000 start/end ranges open before the first CUDA call */
#include <cuda_runtime_api.h>
#include <nvtx3/nvToolsExt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void *alloc(size_t n)
{
    void *p;
    if (cudaMalloc(&p, n) != cudaSuccess)
        abort();
    return p;
}

static void *end_range(void *arg)
{
    void *p = alloc(5000); /* inside "async" */
    nvtxRangeEnd(*(nvtxRangeId_t *)arg);
    cudaFree(p);
    return NULL;
}

static int basic(void)
{
    int setup = nvtxRangePushA("setup"); /* before CUDA: the trace does not exist yet */
    void *a = alloc(1000);
    int outer = nvtxRangePushA("outer");
    void *b = alloc(2000);
    int inner = nvtxRangePushA("inner bs=8");
    void *c = alloc(3000);
    nvtxMarkA("checkpoint");
    int popped_inner = nvtxRangePop();
    int popped_outer = nvtxRangePop();
    cudaFree(c);
    cudaFree(b);

    nvtxDomainHandle_t io = nvtxDomainCreateA("io");
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.messageType = NVTX_MESSAGE_TYPE_ASCII;
    at.message.ascii = "load batch_size=32";
    nvtxDomainRangePushEx(io, &at);
    void *d = alloc(4000);
    at.message.ascii = "io-mark";
    nvtxDomainMarkEx(io, &at);
    nvtxDomainRangePop(io);
    cudaFree(d);

    nvtxRangeId_t id = nvtxRangeStartA("async");
    pthread_t t;
    pthread_create(&t, NULL, end_range, &id);
    pthread_join(t, NULL);
    cudaFree(a);
    int popped_setup = nvtxRangePop();
    printf("depths %d %d %d popped %d %d %d\n", setup, outer, inner, popped_inner, popped_outer, popped_setup);
    return 0;
}

static pthread_barrier_t barrier;

static void *worker(void *arg)
{
    int i = (int)(long)arg;
    char outer[32], inner[32];
    snprintf(outer, sizeof outer, "t%d-outer", i);
    snprintf(inner, sizeof inner, "t%d-inner", i);
    pthread_barrier_wait(&barrier);
    nvtxRangePushA(outer);
    void *p = alloc((size_t)(i + 1) * 100);
    pthread_barrier_wait(&barrier); /* every thread has its outer range open */
    nvtxRangePushA(inner);
    void *q = alloc((size_t)(i + 1) * 100 + 1);
    pthread_barrier_wait(&barrier);
    nvtxRangePop();
    nvtxRangePop();
    cudaFree(q);
    cudaFree(p);
    return NULL;
}

static int threads(void)
{
    void *warm = alloc(64); /* the trace starts before any range */
    pthread_barrier_init(&barrier, NULL, 4);
    pthread_t t[4];
    for (long i = 0; i < 4; i++)
        pthread_create(&t[i], NULL, worker, (void *)i);
    for (int i = 0; i < 4; i++)
        pthread_join(t[i], NULL);
    cudaFree(warm);
    return 0;
}

static int nocuda(void)
{
    nvtxRangePushA("lonely");
    nvtxMarkA("nobody");
    nvtxRangePop();
    return 0;
}

/* 127 ranges open on the main thread, a library's range in its own domain
 * (the 128th, the last the shim keeps), two more of the program's (past it,
 * not recorded): each pop must close its own domain's range. */
static int deep(void)
{
    void *p, *q, *r;
    cudaMalloc(&p, 1000);
    char name[32];
    for (int i = 0; i < 127; i++) {
        snprintf(name, sizeof name, "lvl%d", i);
        nvtxRangePushA(name);
    }
    nvtxDomainHandle_t lib = nvtxDomainCreateA("lib");
    nvtxEventAttributes_t at;
    memset(&at, 0, sizeof at);
    at.version = NVTX_VERSION;
    at.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    at.messageType = NVTX_MESSAGE_TYPE_ASCII;
    at.message.ascii = "lib-op";
    nvtxDomainRangePushEx(lib, &at);
    nvtxRangePushA("lvl127");
    nvtxRangePushA("lvl128");
    cudaMalloc(&q, 2000);      /* inside lib-op and every lvl */
    nvtxDomainRangePop(lib);   /* closes lib-op */
    nvtxRangePop();            /* lvl128, lvl127: not recorded */
    nvtxRangePop();
    nvtxRangePop();            /* closes lvl126 */
    cudaMalloc(&r, 3000);      /* inside lvl125, outside lvl126 */
    for (int i = 0; i < 126; i++)
        nvtxRangePop();
    cudaFree(p);
    cudaFree(q);
    cudaFree(r);
    return 0;
}

/* odd: 200 ranges named by 1 MB each, one in Latin-1 (not UTF-8), one
 * in UTF-32 past U+10FFFF and with a lone surrogate, around allocations */
static int odd(void)
{
    size_t n = 1 << 20;
    char *big = malloc(n + 1);
    memset(big, 'a', n);
    big[n] = 0;
    memcpy(big, "big ", 4);
    for (int i = 0; i < 200; i++) {
        nvtxRangePushA(big);
        void *p = alloc(1000);
        cudaFree(p);
        nvtxRangePop();
    }
    free(big);
    nvtxRangePushA("caf\xe9 \xff end");   /* Latin-1: no UTF-8 */
    void *p = alloc(2000);
    nvtxRangePop();
    wchar_t w[] = {L'w', (wchar_t)0xd800, (wchar_t)0x110000, L'!', 0};
    nvtxRangePushW(w);
    cudaFree(p);
    nvtxRangePop();
    char fits[1025];   /* exactly the 1 KiB kept: whole */
    memset(fits, 'b', 1024);
    fits[1024] = 0;
    nvtxRangePushA(fits);
    p = alloc(2500);
    cudaFree(p);
    nvtxRangePop();
    nvtxDomainHandle_t dom = nvtxDomainCreateA("caf\xe9");   /* a domain named in Latin-1 */
    nvtxEventAttributes_t a = {0};
    a.version = NVTX_VERSION;
    a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
    a.messageType = NVTX_MESSAGE_TYPE_ASCII;
    a.message.ascii = "in it";
    nvtxDomainRangePushEx(dom, &a);
    p = alloc(3000);
    cudaFree(p);
    nvtxDomainRangePop(dom);
    return 0;
}

/* pending: 2000 start/end ranges opened before the first CUDA call, then
 * an allocation (the trace starts), then each ended, oldest first */
static int pending(void)
{
    static nvtxRangeId_t id[2000];
    char name[32];
    for (int i = 0; i < 2000; i++) {
        snprintf(name, sizeof name, "early %d", i);
        id[i] = nvtxRangeStartA(name);
    }
    void *p = alloc(1000);
    for (int i = 0; i < 2000; i++)
        nvtxRangeEnd(id[i]);
    cudaFree(p);
    return 0;
}

int main(int argc, char **argv)
{
    const char *mode = argc > 1 ? argv[1] : "basic";
    int rc = !strcmp(mode, "threads") ? threads() : !strcmp(mode, "nocuda") ? nocuda() : !strcmp(mode, "deep") ? deep()
           : !strcmp(mode, "odd") ? odd() : !strcmp(mode, "pending") ? pending() : basic();
    puts("done");
    return rc;
}
