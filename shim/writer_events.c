/* The writer's side of allocation events: the accounting (a map of live
 * allocations per address space, live and peak bytes per memory level, which
 * gives a free its size and device), the events and mappings rows, the
 * threads row of each thread seen, each new stack with its frames
 * (symbolized once per distinct frame), and the counters of the processes
 * row. Writer thread only, through db.c. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"
#include "db.h"
#include "u64map.h"
#include "vmm.h"
#include "writer.h"

static struct {
    uint64_t start_mono;
    struct u64map live[GT_NSPACES];     /* per apis.space: ptr -> (size, device | memory << 32) */
    struct u64map stack_ids;   /* hash -> (id, row written) */
    struct u64map frame_ids;   /* ip, or a Python frame's tagged id -> (id, -) */
    struct u64map tids;        /* tid -> (-, -) */
    uint64_t next_stack_id, next_frame_id;
    uint64_t recorded;
    uint64_t committed;   /* of recorded, those in committed transactions */
    int64_t live_bytes[GT_MEM_IMPORTED + 1];   /* per apis.memory */
    int64_t peak_device, peak_pool, peak_managed, peak_host;
    uint64_t pool_changes; /* for the pool's reservation (writer_activity.c) */
    uint64_t dropped_written;   /* processes.events_dropped as last written: what the summary line says */
} E;
/* devices with device or pool allocations (bit per ordinal < 64): written
 * here, read by the exit sample's thread too (writer_activity.c) */
static _Atomic uint64_t alloc_devices;
static _Atomic uint64_t pool_devices;   /* devices with pool calls: the writer sets, any thread reads */

/* Held frees written before their call returned (GT_CALL_TAKEN), until the
 * call's result comes (GT_REC_FREE_RESULT): what a failure puts back. A free
 * that waits milliseconds is rare; a few at once (threads each waiting in
 * one) are kept. */
#define TAKEN_KEPT GT_TAKEN_ROWS_MAX
static struct taken {
    uint64_t pos_1;          /* the free's queue position + 1; 0: an empty entry */
    int64_t row, alloc_row;  /* its events row; its allocation's (the flight recorder's), 0 none */
    uint64_t ptr, size, b;   /* the live entry it removed, when live */
    int space;
    bool live;
} taken[TAKEN_KEPT];
static unsigned taken_next;

void gt_events_begin(uint64_t start_mono)
{
    E.start_mono = start_mono;   /* (taken[] stays: a trace resumed after a failed exec keeps its queue) */
}

static const struct gt_api_info *api_info(int api)
{
    for (size_t i = 0; i < sizeof gt_api_table / sizeof gt_api_table[0]; i++)
        if (gt_api_table[i].id == api)
            return &gt_api_table[i];
    return NULL;
}

void gt_events_write_thread(int32_t tid)
{
    if (u64map_get(&E.tids, (uint64_t)tid))
        return;
    u64map_put(&E.tids, (uint64_t)tid, 0, 0);
    char path[64], name[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, name, sizeof name - 1);
        close(fd);
        name[n > 0 ? n : 0] = 0;
        name[strcspn(name, "\n")] = 0;
    }
    GT_BIND_INT(THREAD, tid, tid);
    GT_BIND_TEXT(THREAD, name, name[0] ? name : NULL);
    gt_db_run(GT_ST_THREAD, GT_NOT_A_RECORD);
}

static uint64_t stack_id_for(uint64_t hash)
{
    struct u64map_entry *e = u64map_get(&E.stack_ids, hash);
    if (e)
        return e->a;
    uint64_t id = ++E.next_stack_id;
    u64map_put(&E.stack_ids, hash, id, 0);
    return id;
}

/* A Python frame's row (kind 'python'); function and file NULL: its record
 * never arrived (the shim could not allocate it). */
static uint64_t python_frame_row(uint64_t tagged, const char *function, const char *file, int line)
{
    uint64_t id = ++E.next_frame_id;
    u64map_put(&E.frame_ids, tagged, id, 0);
    GT_BIND_INT(FRAME, id, id);
    GT_BIND_INT(FRAME, ip, 0);
    GT_BIND_TEXT(FRAME, function, function);
    GT_BIND_TEXT(FRAME, file, file);
    GT_BIND_OPT(FRAME, line, file != NULL, line);
    GT_BIND_TEXT(FRAME, kind, "python");
    gt_db_run(GT_ST_FRAME, GT_NOT_A_RECORD);
    return id;
}

/* New Python frames (first sightings; a frame seen twice is written once). */
void gt_events_write_pyframes(struct gt_pyframe_rec *r)
{
    while (r) {
        struct gt_pyframe_rec *next = r->next;
        if (!u64map_get(&E.frame_ids, r->id))
            python_frame_row(r->id, r->function, r->file, r->line);
        free(r);
        r = next;
    }
}

static uint64_t frame_id_for(uintptr_t ip)
{
    struct u64map_entry *e = u64map_get(&E.frame_ids, ip);
    if (e)
        return e->a;
    if (ip == GT_PY_BACKWARD_MARK)   /* the frames after it are the thread's waiting in backward() */
        return python_frame_row(ip, "<backward>", NULL, 0);
    if (ip == GT_PY_CUT_MARK)   /* the Python frames further out were not recorded */
        return python_frame_row(ip, "<more Python frames>", NULL, 0);
    if (ip & GT_PYFRAME_TAG)
        return python_frame_row(ip, NULL, NULL, 0);
    uint64_t id = ++E.next_frame_id;
    u64map_put(&E.frame_ids, ip, id, 0);
    struct gt_frame_info fi;
    gt_symbolize(ip, true, &fi);
    GT_BIND_INT(FRAME, id, id);
    GT_BIND_INT(FRAME, ip, ip);
    GT_BIND_TEXT(FRAME, module, fi.has_module ? fi.module : NULL);
    GT_BIND_OPT(FRAME, module_offset, fi.has_module, fi.module_offset);
    GT_BIND_TEXT(FRAME, function, fi.has_function ? fi.function : NULL);
    GT_BIND_OPT(FRAME, symbol_offset, fi.has_function, fi.symbol_offset);
    GT_BIND_TEXT(FRAME, kind, "native");
    gt_db_run(GT_ST_FRAME, GT_NOT_A_RECORD);
    return id;
}

void gt_events_write_stacks(struct gt_stack_rec *r)
{
    while (r) {
        struct gt_stack_rec *next = r->next;
        uint64_t id = stack_id_for(r->hash);
        struct u64map_entry *e = u64map_get(&E.stack_ids, r->hash);
        if (!gt_db_failed() && e && !e->b) {
            e->b = 1;
            GT_BIND_INT(STACK, id, id);
            GT_BIND_INT(STACK, depth, r->depth);
            GT_BIND_INT(STACK, hash, r->hash);
            gt_db_run(GT_ST_STACK, GT_NOT_A_RECORD);
            for (int i = 0; i < r->depth; i++) {
                GT_BIND_INT(STACK_FRAME, stack_id, id);
                GT_BIND_INT(STACK_FRAME, level, i);
                GT_BIND_INT(STACK_FRAME, frame_id, frame_id_for(r->ips[i]));
                gt_db_run(GT_ST_STACK_FRAME, GT_NOT_A_RECORD);
            }
        }
        free(r);
        r = next;
    }
}

static void note_peaks(void)
{
    if (E.live_bytes[GT_MEM_DEVICE] > E.peak_device)
        E.peak_device = E.live_bytes[GT_MEM_DEVICE];
    if (E.live_bytes[GT_MEM_POOL] > E.peak_pool)
        E.peak_pool = E.live_bytes[GT_MEM_POOL];
    if (E.live_bytes[GT_MEM_MANAGED] > E.peak_managed)
        E.peak_managed = E.live_bytes[GT_MEM_MANAGED];
    if (E.live_bytes[GT_MEM_HOST] > E.peak_host)
        E.peak_host = E.live_bytes[GT_MEM_HOST];
}

/* Updates the live map and counters; fills in a free's size and device. */
static void account(const struct gt_rec *rec, const struct gt_api_info *ai, bool *has_size, int64_t *size,
                    int *device)
{
    const struct gt_call *c = &rec->call;
    *has_size = rec->flags & GT_CALL_HAS_SIZE;
    /* a failed request past what int64 holds (cudaMalloc(SIZE_MAX)) is said
     * as INT64_MAX, not as a negative size */
    *size = c->size > (uint64_t)INT64_MAX ? INT64_MAX : (int64_t)c->size;
    *device = c->device;
    if (c->result != 0 && ai)
        gt_window_failed(ai->memory, c->device);
    /* a graph's allocation (free) node takes (gives back) no memory now:
     * the graph owns it (graphs.c); a later free of its address outside
     * the graph finds nothing live here either */
    if (c->result != 0 || !c->ptr || !ai || (rec->flags & GT_CALL_CAPTURED))
        return;
    if (ai->op == GT_OP_DEFER) { /* a release whose memory stays held: its size, nothing freed */
        struct u64map_entry *h = u64map_get(&E.live[ai->space], c->ptr);
        if (h) {
            *has_size = true;
            *size = (int64_t)h->a;
            *device = (int16_t)(uint16_t)(h->b & 0xffff);
        }
        return;
    }
    if (ai->space == GT_SPACE_MAP) { /* vmm.c counts mappings; a mapping's device is its handle's */
        struct u64map_entry *h = ai->op == GT_OP_MAP && (rec->flags & GT_CALL_HAS_HANDLE)
                                     ? u64map_get(&E.live[GT_SPACE_HANDLE], c->handle) : NULL;
        if (h && *device == GT_DEVICE_UNKNOWN)
            *device = (int16_t)(uint16_t)(h->b & 0xffff);
        return;
    }
    struct u64map *m = &E.live[ai->space];
    if (ai->op == GT_OP_ALLOC || ai->op == GT_OP_MAP) {
        uint64_t old_size, old_b;
        if (u64map_del(m, c->ptr, &old_size, &old_b)) { /* its free was never seen */
            E.live_bytes[old_b >> 32] -= (int64_t)old_size;
            gt_window_live((int)(old_b >> 32), (int16_t)(uint16_t)(old_b & 0xffff), -(int64_t)old_size, 0);
        }
        u64map_put(m, c->ptr, c->size, (uint32_t)(uint16_t)c->device | (uint64_t)ai->memory << 32);
        if ((ai->memory == GT_MEM_DEVICE || ai->memory == GT_MEM_POOL) && c->device >= 0 && c->device < 64 &&
            !(atomic_load_explicit(&alloc_devices, memory_order_relaxed) >> c->device & 1))
            atomic_fetch_or_explicit(&alloc_devices, 1ull << c->device, memory_order_relaxed);
        E.live_bytes[ai->memory] += (int64_t)c->size;
        gt_window_live(ai->memory, c->device, (int64_t)c->size, 1);
    } else {
        uint64_t sz, b;
        if (!u64map_del(m, c->ptr, &sz, &b))
            return;
        if (!(rec->flags & GT_CALL_TAKEN))   /* a taken free's, when its call has returned (gt_events_free_result) */
            gt_window_row(ai->space, c->ptr, 0);
        *has_size = true;
        *size = (int64_t)sz;
        if (*device == GT_DEVICE_UNKNOWN)
            *device = (int16_t)(uint16_t)(b & 0xffff);
        E.live_bytes[b >> 32] -= (int64_t)sz;
        gt_window_live((int)(b >> 32), (int16_t)(uint16_t)(b & 0xffff), -(int64_t)sz, -1);
    }
    if (ai->memory == GT_MEM_POOL && *device >= 0 && *device < 64) {
        if (!(atomic_load_explicit(&pool_devices, memory_order_relaxed) >> *device & 1))
            atomic_fetch_or_explicit(&pool_devices, 1ull << *device, memory_order_relaxed);
        E.pool_changes++;
    }
    note_peaks();
}

/* One events row (and its mappings row), with the accounting. */
static void write_row(const struct gt_rec *rec)
{
    const struct gt_call *c = &rec->call;
    const struct gt_api_info *ai = api_info(c->api);
    bool has_size;
    int64_t size;
    int device;
    struct taken k = {0};
    if (GT_UNLIKELY(rec->flags & GT_CALL_TAKEN) && ai) {   /* before the accounting removes it */
        k.pos_1 = c->size + 1;
        k.space = ai->space;
        k.ptr = c->ptr;
        struct u64map_entry *h = u64map_get(&E.live[ai->space], c->ptr);
        if (h && c->result == 0 && !(rec->flags & GT_CALL_CAPTURED) && ai->op != GT_OP_DEFER) {
            k.live = true;
            k.size = h->a;
            k.b = h->b;
            k.alloc_row = gt_window_row_of(ai->space, c->ptr);
        }
    }
    account(rec, ai, &has_size, &size, &device);
    if (gt_db_failed()) {
        gt_drop(GT_DROP_WRITE_FAILED);
        return;
    }
    gt_events_write_thread(rec->tid);
    uint64_t t = rec->t_ns > E.start_mono ? rec->t_ns - E.start_mono : 0;
    GT_BIND_INT(EVENT, t_ns, t);
    GT_BIND_INT(EVENT, api, c->api);
    GT_BIND_OPT(EVENT, ptr, c->ptr != 0, c->ptr);
    GT_BIND_OPT(EVENT, size, has_size, size);
    GT_BIND_OPT(EVENT, device, device != GT_DEVICE_UNKNOWN, device);
    GT_BIND_OPT(EVENT, stream, rec->flags & GT_CALL_HAS_STREAM, c->stream);
    GT_BIND_INT(EVENT, tid, rec->tid);
    GT_BIND_INT(EVENT, result, c->result);
    GT_BIND_OPT(EVENT, stack_id, c->stack_hash != 0, c->stack_hash ? stack_id_for(c->stack_hash) : 0);
    if (!gt_db_run(GT_ST_EVENT, GT_DROP_WRITE_FAILED))
        return;
    E.recorded++;
    if (GT_UNLIKELY(k.pos_1)) {
        k.row = gt_db_last_rowid();
        struct taken *e = NULL;   /* an empty entry first; else the next in turn (its result is lost) */
        for (unsigned i = 0; i < TAKEN_KEPT && !e; i++)
            if (!taken[i].pos_1)
                e = &taken[i];
        if (!e) {
            e = &taken[taken_next++ % TAKEN_KEPT];
            gt_window_unpin(e->row);
        }
        *e = k;
        gt_window_pin(k.row);
    }
    if (gt_config.window_s && ai && ai->op == GT_OP_ALLOC && c->result == 0 && c->ptr &&
        !(rec->flags & GT_CALL_CAPTURED)) /* what a prune keeps (a graph's node is no live memory) */
        gt_window_row(ai->space, c->ptr, gt_db_last_rowid());
    if (rec->flags & GT_CALL_HAS_HANDLE) {
        GT_BIND_INT(MAPPING, event_id, gt_db_last_rowid());
        GT_BIND_INT(MAPPING, handle, c->handle);
        gt_db_run(GT_ST_MAPPING, GT_NOT_A_RECORD);
    }
    if (rec->flags & (GT_CALL_IN_CAPTURE | GT_CALL_CAPTURED)) {   /* graphs.c */
        GT_BIND_INT(GRAPH_CALL, event_id, gt_db_last_rowid());
        GT_BIND_INT(GRAPH_CALL, captured, (rec->flags & GT_CALL_CAPTURED) != 0);
        gt_db_run(GT_ST_GRAPH_CALL, GT_NOT_A_RECORD);
    }
}

/* A held free written as one that worked has returned (record.c): done, if
 * it worked (the flight recorder may prune its allocation's row now); if it
 * failed, its row takes the result (and the failure's stack) and the
 * allocation is live again. One left by a longjmp (GT_CALL_LEFT) is
 * withdrawn instead: the call is counted as left, and what it freed is
 * unknown, as for any call left. */
void gt_events_free_result(const struct gt_rec *rec)
{
    bool left = rec->flags & GT_CALL_LEFT, failed = gt_free_result_changes_row(rec);
    struct taken *k = NULL;
    for (unsigned i = 0; i < TAKEN_KEPT && !k; i++)
        if (taken[i].pos_1 == rec->call.size + 1)
            k = &taken[i];
    if (!k) {   /* its row was not written (counted), or 64 more were taken since */
        if (left)
            gt_note("events", false, "a free written before its call returned (the call waited) was then left by "
                    "a longjmp; its row could not be withdrawn and reads as a free that worked");
        else if (failed)
            gt_note("events", false, "a free written before its call returned (the call waited) then failed with "
                    "result %d; its row could not be corrected and reads as a free that worked", rec->call.result);
        return;
    }
    k->pos_1 = 0;
    gt_window_unpin(k->row);
    if (!failed) {
        if (k->alloc_row)
            gt_window_row_clear(k->space, k->ptr, k->alloc_row);
        return;
    }
    if (k->live) {
        u64map_put(&E.live[k->space], k->ptr, k->size, k->b);
        E.live_bytes[k->b >> 32] += (int64_t)k->size;
        note_peaks();
        gt_window_unfree((int)(k->b >> 32), (int16_t)(uint16_t)(k->b & 0xffff), (int64_t)k->size, !left);
    }
    if (gt_db_failed())
        return;
    char sql[200];
    if (left) {
        snprintf(sql, sizeof sql, "DELETE FROM graph_calls WHERE event_id = %lld; DELETE FROM events WHERE id = %lld",
                 (long long)k->row, (long long)k->row);
        if (gt_db_exec(sql) && E.recorded) {
            E.recorded--;
            if (E.committed > E.recorded)   /* (its row was committed: what a failed commit loses is counted from here) */
                E.committed = E.recorded;
        }
        return;
    }
    char stack[32] = "stack_id";
    if (rec->call.stack_hash)
        snprintf(stack, sizeof stack, "%llu", (unsigned long long)stack_id_for(rec->call.stack_hash));
    snprintf(sql, sizeof sql, "UPDATE events SET result = %d, size = NULL, stack_id = %s WHERE id = %lld",
             (int)rec->call.result, stack, (long long)k->row);
    gt_db_exec(sql);
}

/* A primary context reset on device dev gave back what was allocated in it
 * (schema: the 'reset' rows): a 'not a call' free row for each such live
 * allocation, after the reset's own row, at its time. */
static bool reset_frees(uint64_t b, int dev, bool host_too)
{
    int mem = (int)(b >> 32), d = (int16_t)(uint16_t)(b & 0xffff);
    return (d == dev && (mem == GT_MEM_DEVICE || mem == GT_MEM_MANAGED)) || (host_too && mem == GT_MEM_HOST);
}

static void free_reset(const struct gt_rec *reset)
{
    int dev = reset->call.device;
    if (dev < 0 || dev >= 64)
        return;
    /* pinned host memory belongs to the context current when it was made, which is not recorded: freed
     * only when every context that made host or device memory was this device's (a review: pinned memory
     * made on device 0 read freed by device 1's reset) */
    bool host_too = !((atomic_load_explicit(&alloc_devices, memory_order_relaxed) | gt_host_context_devices()) &
                      ~(1ull << dev));
    static const int spaces[2] = {GT_SPACE_ADDR, GT_SPACE_ARRAY};
    for (int k = 0; k < 2; k++) {
        struct u64map *m = &E.live[spaces[k]];
        size_t n = 0;
        uint64_t *ptrs = m->len ? malloc(m->len * sizeof *ptrs) : NULL;
        for (uint64_t i = 0; ptrs && i < m->cap; i++)
            if (m->e[i].key && reset_frees(m->e[i].b, dev, host_too && spaces[k] == GT_SPACE_ADDR))
                ptrs[n++] = m->e[i].key;
        for (size_t i = 0; i < n; i++) {   /* (collected first: a free moves the map's entries) */
            struct gt_rec f = *reset;
            f.kind = GT_REC_FREE;
            f.flags = 0;
            f.call.api = spaces[k] == GT_SPACE_ADDR ? GT_API_reset_free : GT_API_reset_free_array;
            f.call.ptr = ptrs[i];
            f.call.device = GT_DEVICE_UNKNOWN;
            f.call.result = 0;
            if (!gt_config.free_stacks)   /* as any successful free: none (the reset's row has it) */
                f.call.stack_hash = 0;
            write_row(&f);
        }
        free(ptrs);
    }
}

/* An allocation call (GT_REC_ALLOC or GT_REC_FREE). */
void gt_events_write(const struct gt_rec *in)
{
    struct gt_rec rec = *in; /* VMM: the row stored may differ from the call (vmm.c) */
    rec.call.api = (uint16_t)gt_vmm_track(&in->call);
    write_row(&rec);
    const struct gt_api_info *ai = api_info(rec.call.api);
    if (ai && ai->op == GT_OP_RESET && rec.call.result == 0)
        free_reset(&rec);
    /* A cuMemUnmap that removed the last mapping of released handles frees
     * them: one row each, in a loop (one cuMemUnmap of a grown range can free
     * thousands of handles: recursion here overflowed the writer's stack). */
    uint64_t handle;
    while (gt_vmm_take_freed(&handle)) {
        struct gt_rec f = rec;
        f.kind = GT_REC_FREE;
        f.flags = 0;
        f.call.api = GT_API_cuMemUnmap_last_mapping;
        f.call.ptr = handle;
        f.call.device = GT_DEVICE_UNKNOWN;
        write_row(&f);
    }
}

void gt_events_write_counters(void)
{
    if (gt_db_failed())
        return;
    /* One reading of the counters for the processes row and the drops table:
     * threads still calling while the exit finishes add to them meanwhile,
     * and the two disagreed (205,108 against 205,148; a helper's probe) */
    uint64_t n[GT_DROP_COUNT], events = 0;
    for (int i = 0; i < GT_DROP_COUNT; i++) {
        n[i] = gt_drop_count(i);
        if (gt_drop_info(i)->is_event)
            events += n[i];
    }
    GT_BIND_INT(PROCESS_COUNTERS, events_recorded, E.recorded);
    GT_BIND_INT(PROCESS_COUNTERS, events_dropped, events);
    GT_BIND_INT(PROCESS_COUNTERS, peak_device_bytes, E.peak_device);
    gt_db_run(GT_ST_PROCESS_COUNTERS, GT_NOT_A_RECORD);
    E.dropped_written = events;
    for (int i = 0; i < GT_DROP_COUNT; i++) {
        if (!n[i])
            continue;
        GT_BIND_TEXT(DROP, reason, gt_drop_info(i)->name);
        GT_BIND_INT(DROP, count, n[i]);
        GT_BIND_TEXT(DROP, meaning, gt_drop_info(i)->meaning);
        gt_db_run(GT_ST_DROP, GT_NOT_A_RECORD);
    }
}

/* The transaction's COMMIT returned: its events are in the file, or (a full
 * disk, a file size limit) rolled back with it and counted as not written;
 * they read as recorded since their INSERTs succeeded (a helper's probe: a
 * full disk lost 205,794 calls and counted 168,930). */
void gt_events_committed(bool ok)
{
    if (!ok) {
        gt_drop_add(GT_DROP_WRITE_FAILED, E.recorded - E.committed);
        E.recorded = E.committed;
    }
    E.committed = E.recorded;
}

void gt_events_summary(struct gt_writer_summary *s)
{
    s->events = E.recorded;
    /* the file's figure; calls after its close are counted nowhere (README);
     * the live count where writing failed (the file has no last word) */
    s->dropped = gt_db_failed() ? gt_drops_events() : E.dropped_written;
    s->peak_device = (uint64_t)E.peak_device;
    s->peak_pool = (uint64_t)E.peak_pool;
    s->peak_managed = (uint64_t)E.peak_managed;
    s->peak_host = (uint64_t)E.peak_host;
}

uint64_t gt_events_alloc_devices(void)
{
    return atomic_load_explicit(&alloc_devices, memory_order_relaxed);
}

uint64_t gt_events_pool_devices(uint64_t *changes)
{
    if (changes)
        *changes = E.pool_changes;
    return atomic_load_explicit(&pool_devices, memory_order_relaxed);
}

/* Fork child: the parent's maps and counts are the parent's. */
void gt_events_forget(void)
{
    atomic_store_explicit(&alloc_devices, 0, memory_order_relaxed);
    atomic_store_explicit(&pool_devices, 0, memory_order_relaxed);
    for (int i = 0; i < GT_NSPACES; i++)
        u64map_free(&E.live[i]);
    u64map_free(&E.stack_ids);
    u64map_free(&E.frame_ids);
    u64map_free(&E.tids);
    gt_vmm_reset();
    memset(&E, 0, sizeof E);
    memset(taken, 0, sizeof taken);   /* the parent's queue positions */
    taken_next = 0;
}
