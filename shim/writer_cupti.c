/* The writer's side of CUPTI: turns each completed activity buffer (cupti.c
 * hands them over) into rows of kernels, memcpys, memsets, driver_memory and
 * memory_pools. Kernel names are demangled once and interned in strings.
 * Writer thread only, inside its transaction. Times arrive on the shim's own
 * clock (cupti.c registers it with CUPTI), so they only need our time 0. */
#include <sqlite3.h>
#include <stdlib.h>
#include <string.h>

#include <cupti.h>

#include "activity.h"
#include "u64map.h"

static struct {
    sqlite3 *db;
    uint64_t start_mono;
    sqlite3_stmt *kernel, *memcpy_, *memset_, *memory, *pool, *str_ins, *str_id;
    struct u64map names; /* hash of the mangled name -> strings.id */
} K;

bool gt_cupti_open_statements(sqlite3 *db)
{
    K.db = db;
    struct { sqlite3_stmt **st; const char *sql; } s[] = {
        {&K.kernel, "INSERT INTO kernels(start_ns, end_ns, device, stream_id, correlation_id, name_id, grid_x, grid_y,"
                    " grid_z, block_x, block_y, block_z, shared_bytes, registers) VALUES (?,?,?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&K.memcpy_, "INSERT INTO memcpys(start_ns, end_ns, device, stream_id, correlation_id, kind, bytes)"
                     " VALUES (?,?,?,?,?,?,?)"},
        {&K.memset_, "INSERT INTO memsets(start_ns, end_ns, device, stream_id, correlation_id, bytes, value)"
                     " VALUES (?,?,?,?,?,?,?)"},
        {&K.memory, "INSERT INTO driver_memory(t_ns, op, memory_kind, address, bytes, device, stream_id,"
                    " correlation_id, is_async, pool_address, pool_size, pool_used) VALUES (?,?,?,?,?,?,?,?,?,?,?,?)"},
        {&K.pool, "INSERT INTO memory_pools(t_ns, op, pool_type, address, size, utilized_size, release_threshold,"
                  " min_bytes_to_keep, device, correlation_id) VALUES (?,?,?,?,?,?,?,?,?,?)"},
        {&K.str_ins, "INSERT OR IGNORE INTO strings(text) VALUES (?)"},
        {&K.str_id, "SELECT id FROM strings WHERE text = ?"},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (sqlite3_prepare_v3(db, s[i].sql, -1, SQLITE_PREPARE_PERSISTENT, s[i].st, NULL) != SQLITE_OK)
            return false;
    return true;
}

void gt_cupti_close_statements(void)
{
    sqlite3_stmt **all[] = {&K.kernel, &K.memcpy_, &K.memset_, &K.memory, &K.pool, &K.str_ins, &K.str_id};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        if (K.db) /* after fork the parent's statements are forgotten, not finalized */
            sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
    u64map_free(&K.names);
    K.db = NULL;
}

/* Fork child: the parent's connection is abandoned; forget, never finalize. */
void gt_cupti_forget_statements(void)
{
    K.db = NULL;
    gt_cupti_close_statements();
}

static int64_t rel(uint64_t t)
{
    return (int64_t)(t - K.start_mono);
}

static bool step(sqlite3_stmt *st)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return rc == SQLITE_DONE || rc == SQLITE_ROW;
}

static uint64_t fnv1a(const char *s)
{
    uint64_t h = 1469598103934665603ull;
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h ? h : 1; /* 0 is u64map's empty key */
}

/* strings.id of a kernel's demangled name; 0 (NULL in SQL) if none. */
static int64_t name_id(const char *mangled)
{
    if (!mangled)
        return 0;
    uint64_t h = fnv1a(mangled);
    struct u64map_entry *e = u64map_get(&K.names, h);
    if (e)
        return (int64_t)e->a;
    static char name[8192];
    gt_demangle(mangled, name, sizeof name);
    sqlite3_bind_text(K.str_ins, 1, name, -1, SQLITE_STATIC);
    step(K.str_ins);
    sqlite3_bind_text(K.str_id, 1, name, -1, SQLITE_STATIC);
    int64_t id = sqlite3_step(K.str_id) == SQLITE_ROW ? sqlite3_column_int64(K.str_id, 0) : 0;
    sqlite3_reset(K.str_id);
    sqlite3_clear_bindings(K.str_id);
    if (id)
        u64map_put(&K.names, h, (uint64_t)id, 0);
    return id;
}

static void bind_ids(sqlite3_stmt *st, int i, uint32_t device, uint32_t stream, uint32_t corr)
{
    sqlite3_bind_int64(st, i, device);
    sqlite3_bind_int64(st, i + 1, stream);
    sqlite3_bind_int64(st, i + 2, corr);
}

static bool kernel(const CUpti_ActivityKernel10 *k)
{
    sqlite3_stmt *st = K.kernel;
    sqlite3_bind_int64(st, 1, rel(k->start));
    sqlite3_bind_int64(st, 2, rel(k->end));
    bind_ids(st, 3, k->deviceId, k->streamId, k->correlationId);
    int64_t id = name_id(k->name);
    if (id)
        sqlite3_bind_int64(st, 6, id);
    const int32_t dims[] = {k->gridX, k->gridY, k->gridZ, k->blockX, k->blockY, k->blockZ};
    for (int i = 0; i < 6; i++)
        sqlite3_bind_int(st, 7 + i, dims[i]);
    sqlite3_bind_int64(st, 13, (int64_t)k->staticSharedMemory + k->dynamicSharedMemory);
    sqlite3_bind_int(st, 14, k->registersPerThread);
    return step(st);
}

static const char *copy_kind(uint8_t k)
{
    static const char *const names[] = {"unknown", "HtoD", "DtoH", "HtoA", "AtoH", "AtoA",
                                        "AtoD",    "DtoA", "DtoD", "HtoH", "PtoP"};
    return k < sizeof names / sizeof names[0] ? names[k] : "unknown";
}

static bool copy(const CUpti_ActivityMemcpy6 *m)
{
    sqlite3_stmt *st = K.memcpy_;
    sqlite3_bind_int64(st, 1, rel(m->start));
    sqlite3_bind_int64(st, 2, rel(m->end));
    bind_ids(st, 3, m->deviceId, m->streamId, m->correlationId);
    sqlite3_bind_text(st, 6, copy_kind(m->copyKind), -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 7, (int64_t)m->bytes);
    return step(st);
}

static bool set(const CUpti_ActivityMemset4 *m)
{
    sqlite3_stmt *st = K.memset_;
    sqlite3_bind_int64(st, 1, rel(m->start));
    sqlite3_bind_int64(st, 2, rel(m->end));
    bind_ids(st, 3, m->deviceId, m->streamId, m->correlationId);
    sqlite3_bind_int64(st, 6, (int64_t)m->bytes);
    sqlite3_bind_int64(st, 7, m->value);
    return step(st);
}

static const char *memory_kind(unsigned k)
{
    static const char *const names[] = {NULL,      "pageable", "pinned",        "device",
                                        "array",   "managed",  "device_static", "managed_static"};
    return k < sizeof names / sizeof names[0] ? names[k] : NULL;
}

static void bind_text_opt(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_STATIC);
}

static bool memory(const CUpti_ActivityMemory4 *m)
{
    sqlite3_stmt *st = K.memory;
    sqlite3_bind_int64(st, 1, rel(m->timestamp));
    sqlite3_bind_text(st, 2, m->memoryOperationType == CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE ? "release" : "alloc",
                      -1, SQLITE_STATIC);
    bind_text_opt(st, 3, memory_kind(m->memoryKind));
    sqlite3_bind_int64(st, 4, (int64_t)m->address);
    sqlite3_bind_int64(st, 5, (int64_t)m->bytes);
    bind_ids(st, 6, m->deviceId, m->streamId, m->correlationId);
    sqlite3_bind_int(st, 9, m->isAsync != 0);
    if (m->memoryPoolConfig.memoryPoolType == CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL) {
        sqlite3_bind_int64(st, 10, (int64_t)m->memoryPoolConfig.address);
        sqlite3_bind_int64(st, 11, (int64_t)m->memoryPoolConfig.pool.size);
        sqlite3_bind_int64(st, 12, (int64_t)m->memoryPoolConfig.utilizedSize);
    }
    return step(st);
}

static bool pool(const CUpti_ActivityMemoryPool3 *p)
{
    static const char *const ops[] = {NULL, "created", "destroyed", "trimmed"};
    static const char *const types[] = {NULL, "local", "imported"};
    sqlite3_stmt *st = K.pool;
    sqlite3_bind_int64(st, 1, rel(p->timestamp));
    sqlite3_bind_text(st, 2, p->memoryPoolOperationType < 4 && ops[p->memoryPoolOperationType]
                                 ? ops[p->memoryPoolOperationType] : "unknown", -1, SQLITE_STATIC);
    bind_text_opt(st, 3, p->memoryPoolType < 3 ? types[p->memoryPoolType] : NULL);
    sqlite3_bind_int64(st, 4, (int64_t)p->address);
    sqlite3_bind_int64(st, 5, (int64_t)p->size);
    sqlite3_bind_int64(st, 6, (int64_t)p->utilizedSize);
    sqlite3_bind_int64(st, 7, (int64_t)p->releaseThreshold);
    if (p->memoryPoolOperationType == CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED)
        sqlite3_bind_int64(st, 8, (int64_t)p->minBytesToKeep);
    sqlite3_bind_int64(st, 9, p->deviceId);
    sqlite3_bind_int64(st, 10, p->correlationId);
    return step(st);
}

/* Writes every completed buffer and frees it. False: an insert failed (the
 * caller reports it once); the remaining buffers are freed unwritten. */
bool gt_cupti_write_buffers(sqlite3 *db, uint64_t start_mono)
{
    K.start_mono = start_mono;
    bool ok = K.db == db && db;
    for (struct gt_cupti_buf *b = gt_cupti_take(), *next; b; b = next) {
        next = b->next;
        void *rec = NULL;
        while (ok && gt_cupti_next_record(b->data, b->valid, &rec)) {
            const CUpti_Activity *a = rec;
            switch (a->kind) {
            case CUPTI_ACTIVITY_KIND_KERNEL:
            case CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL: ok = kernel(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMCPY: ok = copy(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMSET: ok = set(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMORY2: ok = memory(rec); break;
            case CUPTI_ACTIVITY_KIND_MEMORY_POOL: ok = pool(rec); break;
            default: break; /* kinds we did not ask for (another client's) */
            }
        }
        free(b->data);
        free(b);
    }
    return ok;
}
