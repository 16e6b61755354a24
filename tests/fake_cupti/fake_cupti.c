/* Test double for libcupti.so.13 (never installed): just enough of CUPTI's
 * activity API, with the real header's signatures and record layouts, for CI
 * without a GPU to exercise the shim's CUPTI path: subscription, buffer
 * request/complete callbacks, the timestamp callback, flushes and record
 * iteration. Activity is planted by the test program through fake_cupti_emit()
 * (it finds this library with dlopen(RTLD_NOLOAD)); each record is stamped
 * with the registered timestamp callback, or CLOCK_REALTIME as CUPTI does
 * without one.
 * Attachment as CUPTI's: cuptiFinalize detaches (buffers completed, every
 * registration and kind forgotten), any later call attaches again; a
 * subscriber with the runtime domain enabled is called at the exit of every
 * planted record's "API call" (after fake_cupti_emit records it), where the
 * shim detaches. fake_cupti_counts() says how many records were planted
 * while attached (CUPTI's per-launch cost) and how many detaches came.
 * Environment: FAKE_CUPTI_VERSION (default 130001), FAKE_CUPTI_BUSY=1 (another
 * tool holds the subscriber slot), FAKE_CUPTI_RECORDS_PER_BUFFER (default 64:
 * small, so a run completes many buffers). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <cupti.h>

#define EXPORT __attribute__((visibility("default")))

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static CUpti_BuffersCallbackRequestFunc request;
static CUpti_BuffersCallbackCompleteFunc complete;
static CUpti_TimestampCallbackFunc timestamp;
static int subscribed;
static CUpti_CallbackFunc sub_cb;
static void *sub_ud;
static unsigned domains;  /* bit per enabled callback domain */
static int attached = 1, attached_emits, finalizes;
static uint8_t enabled[64];
static uint8_t *buf;
static size_t buf_size, buf_used;
static int buf_records;

static long env_long(const char *name, long def)
{
    const char *v = getenv(name);
    return v && *v ? strtol(v, NULL, 10) : def;
}

static uint64_t now(void)
{
    if (timestamp)
        return timestamp();
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    return (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
}

EXPORT CUptiResult cuptiGetVersion(uint32_t *version)
{
    *version = (uint32_t)env_long("FAKE_CUPTI_VERSION", 130001);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiGetResultString(CUptiResult r, const char **s)
{
    *s = r == CUPTI_SUCCESS ? "CUPTI_SUCCESS"
         : r == CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED ? "CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED"
         : r == CUPTI_ERROR_INVALID_OPERATION ? "CUPTI_ERROR_INVALID_OPERATION"
                                              : "CUPTI_ERROR_UNKNOWN";
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud)
{
    pthread_mutex_lock(&mu);
    attached = 1;
    if (env_long("FAKE_CUPTI_BUSY", 0) || subscribed) {
        pthread_mutex_unlock(&mu);
        return CUPTI_ERROR_MULTIPLE_SUBSCRIBERS_NOT_SUPPORTED;
    }
    subscribed = 1;
    sub_cb = cb, sub_ud = ud, domains = 0;
    *h = (CUpti_SubscriberHandle)&subscribed;
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiSubscribe_v2(CUpti_SubscriberHandle *h, CUpti_CallbackFunc cb, void *ud,
                                     CUpti_SubscriberParams *params)
{
    (void)params;
    return cuptiSubscribe(h, cb, ud);
}

/* A profiling session of the program's own (the parameters are not read). */
EXPORT CUptiResult cuptiProfilerInitialize(void *params)
{
    (void)params;
    pthread_mutex_lock(&mu);
    attached = 1;
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiUnsubscribe(CUpti_SubscriberHandle h)
{
    (void)h;
    pthread_mutex_lock(&mu);
    subscribed = 0;
    sub_cb = NULL, domains = 0;
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiEnableDomain(uint32_t enable, CUpti_SubscriberHandle h, CUpti_CallbackDomain d)
{
    pthread_mutex_lock(&mu);
    CUptiResult r = CUPTI_ERROR_INVALID_PARAMETER;
    if (subscribed && h == (CUpti_SubscriberHandle)&subscribed && (unsigned)d < 32) {
        domains = enable ? domains | 1u << d : domains & ~(1u << d);
        r = CUPTI_SUCCESS;
    }
    pthread_mutex_unlock(&mu);
    return r;
}

static void complete_buffer(void);

/* Detaches: the client's buffers are completed, then everything registered
 * is forgotten, as CUPTI destroys its state. */
EXPORT CUptiResult cuptiFinalize(void)
{
    pthread_mutex_lock(&mu);
    if (complete)
        complete_buffer();
    request = NULL, complete = NULL, timestamp = NULL;
    memset(enabled, 0, sizeof enabled);
    subscribed = 0, sub_cb = NULL, domains = 0;
    attached = 0;
    finalizes++;
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

/* For a test program: records planted while CUPTI was attached, detaches. */
EXPORT void fake_cupti_counts(int *emits_attached, int *detaches)
{
    pthread_mutex_lock(&mu);
    *emits_attached = attached_emits;
    *detaches = finalizes;
    pthread_mutex_unlock(&mu);
}

/* Hands the current buffer to the client (mu held). */
static void complete_buffer(void)
{
    if (!buf)
        return;
    uint8_t *b = buf;
    size_t size = buf_size, used = buf_used;
    buf = NULL;
    buf_used = 0;
    buf_records = 0;
    complete(NULL, 0, b, size, used);
}

EXPORT CUptiResult cuptiActivityRegisterCallbacks(CUpti_BuffersCallbackRequestFunc req,
                                                  CUpti_BuffersCallbackCompleteFunc comp)
{
    if (!req || !comp)
        return CUPTI_ERROR_INVALID_PARAMETER;
    pthread_mutex_lock(&mu);
    attached = 1;
    if (complete)
        complete_buffer(); /* the previous client's records stay the previous client's */
    request = req;
    complete = comp;
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityRegisterTimestampCallback(CUpti_TimestampCallbackFunc f)
{
    if (!f)
        return CUPTI_ERROR_INVALID_PARAMETER;
    attached = 1;
    timestamp = f;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityEnable(CUpti_ActivityKind k)
{
    if ((unsigned)k >= sizeof enabled)
        return CUPTI_ERROR_NOT_COMPATIBLE;
    attached = 1;
    enabled[k] = 1;
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityDisable(CUpti_ActivityKind k)
{
    attached = 1;
    if ((unsigned)k < sizeof enabled)
        enabled[k] = 0;
    return CUPTI_SUCCESS;
}

/* For a test program (found as fake_cupti_emit is): runs fn while holding
 * the lock every CUPTI call here takes, as real CUPTI holds its own while it
 * records a CUDA call; a signal handler that fn's signal runs on this thread
 * and that calls cuptiActivityFlushAll then waits forever, as it would. */
EXPORT void fake_cupti_while_locked(void (*fn)(void))
{
    pthread_mutex_lock(&mu);
    fn();
    pthread_mutex_unlock(&mu);
}

/* As real CUPTI 13 does (seen on an H100), not as documented: success even
 * when no client has registered buffers. */
EXPORT CUptiResult cuptiActivityFlushAll(uint32_t flag)
{
    (void)flag;
    pthread_mutex_lock(&mu);
    attached = 1;
    if (!complete) {
        pthread_mutex_unlock(&mu);
        return CUPTI_SUCCESS;
    }
    complete_buffer();
    pthread_mutex_unlock(&mu);
    return CUPTI_SUCCESS;
}

EXPORT CUptiResult cuptiActivityGetNumDroppedRecords(CUcontext ctx, uint32_t stream, size_t *dropped)
{
    (void)ctx, (void)stream;
    *dropped = 0;
    return CUPTI_SUCCESS;
}

static size_t record_size(CUpti_ActivityKind k)
{
    switch (k) {
    case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: return sizeof(CUpti_ActivityKernel10);
    case CUPTI_ACTIVITY_KIND_MEMCPY: return sizeof(CUpti_ActivityMemcpy6);
    case CUPTI_ACTIVITY_KIND_MEMSET: return sizeof(CUpti_ActivityMemset4);
    case CUPTI_ACTIVITY_KIND_MEMORY2: return sizeof(CUpti_ActivityMemory4);
    case CUPTI_ACTIVITY_KIND_MEMORY_POOL: return sizeof(CUpti_ActivityMemoryPool3);
    default: return 0;
    }
}

/* Records are packed one after another, each 8-aligned, like CUPTI's. */
EXPORT CUptiResult cuptiActivityGetNextRecord(uint8_t *buffer, size_t valid, CUpti_Activity **record)
{
    size_t off = 0;
    if (*record) {
        size_t sz = record_size((*record)->kind);
        off = (size_t)((uint8_t *)*record - buffer) + ((sz + 7) & ~(size_t)7);
    }
    if (off >= valid)
        return CUPTI_ERROR_MAX_LIMIT_REACHED;
    *record = (CUpti_Activity *)(buffer + off);
    return CUPTI_SUCCESS;
}

/* A slot for one record of kind k in the current buffer (mu held); NULL when
 * the kind is not enabled or the client gave no buffer. */
static void *slot(CUpti_ActivityKind k)
{
    size_t sz = (record_size(k) + 7) & ~(size_t)7;
    if (!enabled[k] || !request)
        return NULL;
    if (buf && (buf_used + sz > buf_size || buf_records >= env_long("FAKE_CUPTI_RECORDS_PER_BUFFER", 64)))
        complete_buffer();
    if (!buf) {
        size_t max = 0;
        request(&buf, &buf_size, &max);
        if (!buf || buf_size < sz)
            return buf = NULL;
    }
    void *r = buf + buf_used;
    memset(r, 0, sz);
    buf_used += sz;
    buf_records++;
    return r;
}

/* The test program's way to plant activity. what: "kernel" (name, grid x,
 * block x in a and b), "memcpy" (copy kind a, bytes b), "memset" (value a,
 * bytes b), "memory" (alloc/release: a = 1/2, bytes b), "pool" (created, size b).
 * The record spans [now, now + duration_ns] on the clock CUPTI was given.
 * Returns 1 when recorded (enabled and buffered), else 0. */
EXPORT int fake_cupti_emit(const char *what, const char *name, uint64_t a, uint64_t b, uint64_t duration_ns,
                           uint32_t correlation)
{
    pthread_mutex_lock(&mu);
    uint64_t t = now();
    int ok = 0;
    attached_emits += attached;
    if (!strcmp(what, "kernel")) {
        CUpti_ActivityKernel10 *k = slot(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
        if (k) {
            k->kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
            k->start = t;
            k->end = t + duration_ns;
            k->deviceId = 0;
            k->streamId = 7;
            k->gridX = (int32_t)a, k->gridY = k->gridZ = 1;
            k->blockX = (int32_t)b, k->blockY = k->blockZ = 1;
            k->staticSharedMemory = 256;
            k->dynamicSharedMemory = 1024;
            k->registersPerThread = 32;
            k->correlationId = correlation;
            k->name = name; /* CUPTI keeps names alive; the caller passes a literal */
            ok = 1;
        }
    } else if (!strcmp(what, "memcpy")) {
        CUpti_ActivityMemcpy6 *m = slot(CUPTI_ACTIVITY_KIND_MEMCPY);
        if (m) {
            m->kind = CUPTI_ACTIVITY_KIND_MEMCPY;
            m->copyKind = (uint8_t)a;
            m->bytes = b;
            m->start = t;
            m->end = t + duration_ns;
            m->streamId = 7;
            m->correlationId = correlation;
            ok = 1;
        }
    } else if (!strcmp(what, "memset")) {
        CUpti_ActivityMemset4 *m = slot(CUPTI_ACTIVITY_KIND_MEMSET);
        if (m) {
            m->kind = CUPTI_ACTIVITY_KIND_MEMSET;
            m->value = (uint32_t)a;
            m->bytes = b;
            m->start = t;
            m->end = t + duration_ns;
            m->streamId = 7;
            m->correlationId = correlation;
            ok = 1;
        }
    } else if (!strcmp(what, "memory")) {
        CUpti_ActivityMemory4 *m = slot(CUPTI_ACTIVITY_KIND_MEMORY2);
        if (m) {
            m->kind = CUPTI_ACTIVITY_KIND_MEMORY2;
            m->memoryOperationType = (CUpti_ActivityMemoryOperationType)a;
            m->memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
            m->address = 0x7f0000000000ull;
            m->bytes = b;
            m->timestamp = t;
            m->correlationId = correlation;
            ok = 1;
        }
    } else if (!strcmp(what, "pool")) {
        CUpti_ActivityMemoryPool3 *p = slot(CUPTI_ACTIVITY_KIND_MEMORY_POOL);
        if (p) {
            p->kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
            p->memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
            p->memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
            p->address = 0x7e0000000000ull;
            p->size = b;
            p->timestamp = t;
            p->correlationId = correlation;
            ok = 1;
        }
    }
    /* the planted record's API call returns: a subscriber hears its exit,
     * outside the lock (the shim's detaches there) */
    CUpti_CallbackFunc cb = domains & 1u << CUPTI_CB_DOMAIN_RUNTIME_API ? sub_cb : NULL;
    void *ud = sub_ud;
    pthread_mutex_unlock(&mu);
    if (cb) {
        CUpti_CallbackData d = {.callbackSite = CUPTI_API_EXIT, .functionName = what};
        cb(ud, CUPTI_CB_DOMAIN_RUNTIME_API, 0, &d);
    }
    return ok;
}
