/* The writer's side of CUPTI: turns each completed activity buffer (cupti.c
 * hands them over) into rows of kernels, memcpys, memsets, driver_memory and
 * memory_pools. Kernel names are demangled once and interned in strings.
 * Writer thread only, inside its transaction, through db.c. Times arrive on the shim's own
 * clock (cupti.c registers it with CUPTI), so they only need our time 0. */
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "activity.h"
#include "db.h"
#include "writer.h"
#include "u64map.h"

static struct {
    uint64_t start_mono;
    struct u64map names; /* hash of the mangled name -> strings.id */
} K;

/* Fork child: the parent's string ids are the parent's file's. */
void gt_cupti_writer_forget(void)
{
    u64map_free(&K.names);
    memset(&K, 0, sizeof K);
}

static int64_t rel(uint64_t t)
{
    return (int64_t)(t - K.start_mono);
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1; /* 0 is u64map's empty key */
}

/* strings.id of a kernel's demangled name; 0 (NULL in SQL) if none.
 * *seen: false the first time a name is written. */
static int64_t name_id(const char *mangled, bool *seen)
{
    *seen = true;
    if (!mangled)
        return 0;
    uint64_t h = fnv1a(mangled);
    struct u64map_entry *e = u64map_get(&K.names, h);
    if (e)
        return (int64_t)e->a;
    static char name[8192];
    gt_demangle(mangled, name, sizeof name);
    GT_BIND_TEXT(STRING, text, name);
    gt_db_run(GT_ST_STRING, GT_NOT_A_RECORD);
    GT_BIND_TEXT(STRING_ID, text, name);
    int64_t id = gt_db_query_int(GT_ST_STRING_ID);
    if (id) {
        u64map_put(&K.names, h, (uint64_t)id, 0);
        *seen = false; /* one that could not be written is taken as seen, not new at each record */
    }
    return id;
}

#define BIND_IDS(ST, a) \
    GT_BIND_INT(ST, device, (a)->deviceId); \
    GT_BIND_INT(ST, stream_id, (a)->streamId); \
    GT_BIND_INT(ST, correlation_id, (a)->correlationId)

static void kernel(const CUpti_ActivityKernel10 *k)
{
    bool seen;
    int64_t id = name_id(k->name, &seen);
    gt_cupti_work_at(k->start, k->end, !seen);
    GT_BIND_INT(KERNEL, start_ns, rel(k->start));
    GT_BIND_INT(KERNEL, end_ns, rel(k->end));
    BIND_IDS(KERNEL, k);
    GT_BIND_OPT(KERNEL, name_id, id != 0, id);
    GT_BIND_INT(KERNEL, grid_x, k->gridX);
    GT_BIND_INT(KERNEL, grid_y, k->gridY);
    GT_BIND_INT(KERNEL, grid_z, k->gridZ);
    GT_BIND_INT(KERNEL, block_x, k->blockX);
    GT_BIND_INT(KERNEL, block_y, k->blockY);
    GT_BIND_INT(KERNEL, block_z, k->blockZ);
    GT_BIND_INT(KERNEL, shared_bytes, (int64_t)k->staticSharedMemory + k->dynamicSharedMemory);
    GT_BIND_INT(KERNEL, registers, k->registersPerThread);
    gt_db_run(GT_ST_KERNEL, GT_DROP_NOT_WRITTEN);
}

static const char *copy_kind(uint8_t k)
{
    static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

static void copy(const CUpti_ActivityMemcpy6 *m)
{
    gt_cupti_work_at(m->start, m->end, false);
    GT_BIND_INT(MEMCPY, start_ns, rel(m->start));
    GT_BIND_INT(MEMCPY, end_ns, rel(m->end));
    BIND_IDS(MEMCPY, m);
    GT_BIND_TEXT(MEMCPY, kind, copy_kind(m->copyKind));
    GT_BIND_INT(MEMCPY, bytes, m->bytes);
    gt_db_run(GT_ST_MEMCPY, GT_DROP_NOT_WRITTEN);
}

static void set(const CUpti_ActivityMemset4 *m)
{
    gt_cupti_work_at(m->start, m->end, false);
    GT_BIND_INT(MEMSET, start_ns, rel(m->start));
    GT_BIND_INT(MEMSET, end_ns, rel(m->end));
    BIND_IDS(MEMSET, m);
    GT_BIND_INT(MEMSET, bytes, m->bytes);
    GT_BIND_INT(MEMSET, value, m->value);
    gt_db_run(GT_ST_MEMSET, GT_DROP_NOT_WRITTEN);
}

static const char *memory_kind(unsigned k)
{
    static const char *const names[] = {NULL,      "pageable", "pinned",        "device",
                                        "array",   "managed",  "device_static", "managed_static"};
    return k < sizeof names / sizeof names[0] ? names[k] : NULL;
}

static void memory(const CUpti_ActivityMemory4 *m)
{
    bool local = m->memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
    GT_BIND_INT(DRIVER_MEMORY, t_ns, rel(m->timestamp));
    GT_BIND_TEXT(DRIVER_MEMORY, op,
                 m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? "release" : "alloc");
    GT_BIND_TEXT(DRIVER_MEMORY, memory_kind, memory_kind(m->memoryKind));
    GT_BIND_INT(DRIVER_MEMORY, address, m->address);
    GT_BIND_INT(DRIVER_MEMORY, bytes, m->bytes);
    BIND_IDS(DRIVER_MEMORY, m);
    GT_BIND_INT(DRIVER_MEMORY, is_async, m->isAsync != 0);
    GT_BIND_OPT(DRIVER_MEMORY, pool_address, local, m->memoryPoolConfig.address);
    GT_BIND_OPT(DRIVER_MEMORY, pool_size, local, m->memoryPoolConfig.pool.size);
    GT_BIND_OPT(DRIVER_MEMORY, pool_used, local, m->memoryPoolConfig.utilizedSize);
    gt_db_run(GT_ST_DRIVER_MEMORY, GT_DROP_NOT_WRITTEN);
}

static void pool(const CUpti_ActivityMemoryPool3 *p)
{
    static const char *const ops[] = {NULL, "created", "destroyed", "trimmed"};
    static const char *const types[] = {NULL, "local", "imported"};
    GT_BIND_INT(MEMORY_POOL, t_ns, rel(p->timestamp));
    GT_BIND_TEXT(MEMORY_POOL, op, p->memoryPoolOperationType < 4 && ops[p->memoryPoolOperationType]
                                      ? ops[p->memoryPoolOperationType] : "unknown");
    GT_BIND_TEXT(MEMORY_POOL, pool_type, p->memoryPoolType < 3 ? types[p->memoryPoolType] : NULL);
    GT_BIND_INT(MEMORY_POOL, address, p->address);
    GT_BIND_INT(MEMORY_POOL, size, p->size);
    GT_BIND_INT(MEMORY_POOL, utilized_size, p->utilizedSize);
    GT_BIND_INT(MEMORY_POOL, release_threshold,   /* UINT64_MAX (PyTorch's) capped, as the writer's readings are */
                p->releaseThreshold > INT64_MAX ? INT64_MAX : (int64_t)p->releaseThreshold);
    GT_BIND_OPT(MEMORY_POOL, min_bytes_to_keep,
                p->memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED, p->minBytesToKeep);
    GT_BIND_INT(MEMORY_POOL, device, p->deviceId);
    GT_BIND_INT(MEMORY_POOL, correlation_id, p->correlationId);
    gt_db_run(GT_ST_MEMORY_POOL, GT_DROP_NOT_WRITTEN);
}

/* Writes every completed buffer and frees it. A record that cannot be
 * written is counted as a drop (db.c's policy). */
void gt_cupti_write_buffers(uint64_t start_mono)
{
    K.start_mono = start_mono;
    for (struct gt_cupti_buf *b = gt_cupti_take(), *next; b; b = next) {
        next = b->next;
        void *rec = NULL;
        while (gt_cupti_next_record(b->data, b->valid, &rec)) {
            const CUpti_Activity *a = rec;
            switch (a->kind) {
            case CUPTI_ACTIVITY_KIND_KERNEL:
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: kernel(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMCPY: copy(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMSET: set(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMORY2: memory(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMORY_POOL: pool(rec); break;
            default: break; /* kinds we did not ask for (another client's) */
            }
        }
        free(b->data);
        free(b);
    }
}
