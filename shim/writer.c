/* The writer thread: drains the event queue and the new-stack list into the
 * SQLite trace in batched transactions (WAL), resolves free sizes from its map
 * of live allocations, symbolizes each new frame once, and keeps the process
 * row's counters current at every commit, so even a killed process leaves a
 * readable trace with the drop counts. All SQLite work happens here.
 * Records that are not allocation events (ranges, marks, CUPTI activity,
 * devices, notes) go to writer_activity.c, at the four calls marked below. */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "u64map.h"
#include "vmm.h"

#define BATCH 4096
#define COMMIT_EVERY_NS (50 * 1000000ull)  /* well inside the promised 100 ms */
#define PENDING_SLOT_WAIT_NS (2000 * 1000000ull)

struct proc_info; /* process.c */
bool gt_process_row(sqlite3 *db, uint64_t start_unix_ns, uint64_t start_mono_ns);

static struct {
    sqlite3 *db;
    sqlite3_stmt *ins_event, *ins_mapping, *ins_stack, *ins_stack_frame, *ins_frame, *ins_thread,
        *upd_process, *ins_drop, *fin_process;
    char path[4200];
    uint64_t start_mono, start_unix;
    struct u64map live[4];     /* per apis.space: ptr -> (size, device | memory << 32) */
    struct u64map stack_ids;   /* hash -> (id, row written) */
    struct u64map frame_ids;   /* ip -> (id, -) */
    struct u64map tids;        /* tid -> (-, -) */
    uint64_t next_stack_id, next_frame_id;
    uint64_t recorded;
    int64_t live_bytes[6];     /* per apis.memory */
    int64_t peak_device, peak_pool;
    bool write_failed;
    uint64_t dropped_after_write_error;

    pthread_t thread;
    bool thread_running;
    pthread_mutex_t mu;        /* guards the request fields below */
    pthread_cond_t wake, done;
    bool stop_req, stop_done, reopen;
    void (*open_failed)(void); /* lifecycle.c's: tracing goes off */
    const char *stop_reason;
    pthread_mutex_t sql_mu;    /* held across each batch of SQLite work; fork waits for it */
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .sql_mu = PTHREAD_MUTEX_INITIALIZER};

static const struct gt_api_info *api_info(int api)
{
    for (size_t i = 0; i < sizeof gt_api_table / sizeof gt_api_table[0]; i++)
        if (gt_api_table[i].id == api)
            return &gt_api_table[i];
    return NULL;
}

static void write_failed(const char *what)
{
    if (W.write_failed)
        return;
    W.write_failed = true;
    fprintf(stderr, "gputrace: writing trace %s failed (%s: %s); further events are counted as dropped, the program continues\n",
            W.path, what, W.db ? sqlite3_errmsg(W.db) : "no database");
}

static bool step(sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        write_failed(what);
        return false;
    }
    return true;
}

static void bind_opt(sqlite3_stmt *st, int i, bool present, int64_t v)
{
    if (present)
        sqlite3_bind_int64(st, i, v);
    else
        sqlite3_bind_null(st, i);
}

static bool exec(const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(W.db, sql, NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_free(err);
        write_failed(sql);
        return false;
    }
    return true;
}

static bool prepare_all(void)
{
    struct { sqlite3_stmt **st; const char *sql; } s[] = {
        {&W.ins_event, "INSERT INTO events(t_ns, api, ptr, size, device, stream, tid, result, stack_id) VALUES (?,?,?,?,?,?,?,?,?)"},
        {&W.ins_mapping, "INSERT INTO mappings(event_id, handle) VALUES (?,?)"},
        {&W.ins_stack, "INSERT OR IGNORE INTO stacks(id, depth, hash) VALUES (?,?,?)"},
        {&W.ins_stack_frame, "INSERT OR IGNORE INTO stack_frames(stack_id, level, frame_id) VALUES (?,?,?)"},
        {&W.ins_frame, "INSERT INTO frames(id, ip, module, module_offset, function, symbol_offset) VALUES (?,?,?,?,?,?)"},
        {&W.ins_thread, "INSERT OR REPLACE INTO threads(tid, name) VALUES (?,?)"},
        {&W.upd_process, "UPDATE processes SET events_recorded = ?, events_dropped = ?, peak_device_bytes = ?"},
        {&W.ins_drop, "INSERT OR REPLACE INTO drops(reason, count, meaning) VALUES (?,?,?)"},
        {&W.fin_process, "UPDATE processes SET end_ns = ?, end_reason = ?"},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (sqlite3_prepare_v3(W.db, s[i].sql, -1, SQLITE_PREPARE_PERSISTENT, s[i].st, NULL) != SQLITE_OK) {
            write_failed("prepare");
            return false;
        }
    return true;
}

static void finalize_all(void)
{
    gt_activity_close(); /* activity */
    sqlite3_stmt **all[] = {&W.ins_event, &W.ins_mapping, &W.ins_stack, &W.ins_stack_frame, &W.ins_frame,
                            &W.ins_thread, &W.upd_process, &W.ins_drop, &W.fin_process};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
}

/* Opens the trace file. create: a new file from the output pattern (never an
 * existing one); otherwise reopen W.path (after a failed exec). */
static bool open_db(bool create)
{
    if (create) {
        char err[512];
        if (gt_output_create(W.path, sizeof W.path, err, sizeof err) != 0) {
            fprintf(stderr, "gputrace: cannot create trace file: %s; tracing is off, the program continues (set GPUTRACE_OUTPUT to a writable path)\n", err);
            return false;
        }
    }
    if (sqlite3_open_v2(W.path, &W.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, NULL) != SQLITE_OK) {
        fprintf(stderr, "gputrace: cannot open trace file %s: %s; tracing is off, the program continues\n", W.path,
                W.db ? sqlite3_errmsg(W.db) : "out of memory");
        sqlite3_close(W.db);
        W.db = NULL;
        return false;
    }
    sqlite3_busy_timeout(W.db, 2000);
    if (!exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"))
        goto fail;
    if (create) {
        if (!exec("BEGIN") || !exec(gt_schema_sql) || !gt_process_row(W.db, W.start_unix, W.start_mono) ||
            !exec("COMMIT"))
            goto fail;
    }
    if (!prepare_all())
        goto fail;
    gt_activity_open(W.db, W.start_mono); /* activity: false only loses annotations, said once */
    if (!create)
        exec("UPDATE processes SET end_ns = NULL, end_reason = NULL");
    return true;
fail:
    fprintf(stderr, "gputrace: cannot initialise trace file %s: %s; tracing is off, the program continues\n", W.path,
            sqlite3_errmsg(W.db));
    finalize_all();
    sqlite3_close(W.db);
    W.db = NULL;
    W.write_failed = false;
    return false;
}

static void write_thread(int32_t tid)
{
    if (u64map_get(&W.tids, (uint64_t)tid))
        return;
    u64map_put(&W.tids, (uint64_t)tid, 0, 0);
    char path[64], name[64] = "";
    snprintf(path, sizeof path, "/proc/self/task/%d/comm", tid);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd >= 0) {
        ssize_t n = read(fd, name, sizeof name - 1);
        close(fd);
        name[n > 0 ? n : 0] = 0;
        name[strcspn(name, "\n")] = 0;
    }
    sqlite3_bind_int64(W.ins_thread, 1, tid);
    if (name[0])
        sqlite3_bind_text(W.ins_thread, 2, name, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(W.ins_thread, 2);
    step(W.ins_thread, "insert thread");
}

static uint64_t stack_id_for(uint64_t hash)
{
    struct u64map_entry *e = u64map_get(&W.stack_ids, hash);
    if (e)
        return e->a;
    uint64_t id = ++W.next_stack_id;
    u64map_put(&W.stack_ids, hash, id, 0);
    return id;
}

static uint64_t frame_id_for(uintptr_t ip)
{
    struct u64map_entry *e = u64map_get(&W.frame_ids, ip);
    if (e)
        return e->a;
    uint64_t id = ++W.next_frame_id;
    u64map_put(&W.frame_ids, ip, id, 0);
    struct gt_frame_info fi;
    gt_symbolize(ip, true, &fi);
    sqlite3_stmt *st = W.ins_frame;
    sqlite3_bind_int64(st, 1, (int64_t)id);
    sqlite3_bind_int64(st, 2, (int64_t)ip);
    if (fi.has_module) {
        sqlite3_bind_text(st, 3, fi.module, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 4, (int64_t)fi.module_offset);
    } else {
        sqlite3_bind_null(st, 3);
        sqlite3_bind_null(st, 4);
    }
    if (fi.has_function) {
        sqlite3_bind_text(st, 5, fi.function, -1, SQLITE_TRANSIENT);
        sqlite3_bind_int64(st, 6, (int64_t)fi.symbol_offset);
    } else {
        sqlite3_bind_null(st, 5);
        sqlite3_bind_null(st, 6);
    }
    step(st, "insert frame");
    return id;
}

static void write_stacks(struct gt_stack_rec *r)
{
    while (r) {
        struct gt_stack_rec *next = r->next;
        uint64_t id = stack_id_for(r->hash);
        struct u64map_entry *e = u64map_get(&W.stack_ids, r->hash);
        if (!W.write_failed && e && !e->b) {
            e->b = 1;
            sqlite3_bind_int64(W.ins_stack, 1, (int64_t)id);
            sqlite3_bind_int64(W.ins_stack, 2, r->depth);
            sqlite3_bind_int64(W.ins_stack, 3, (int64_t)r->hash);
            step(W.ins_stack, "insert stack");
            for (int i = 0; i < r->depth; i++) {
                sqlite3_bind_int64(W.ins_stack_frame, 1, (int64_t)id);
                sqlite3_bind_int64(W.ins_stack_frame, 2, i);
                sqlite3_bind_int64(W.ins_stack_frame, 3, (int64_t)frame_id_for(r->ips[i]));
                step(W.ins_stack_frame, "insert stack frame");
            }
        }
        free(r);
        r = next;
    }
}

/* Updates the live map and counters; fills in a free's size and device. */
static void account(const struct gt_event *ev, const struct gt_api_info *ai, bool *has_size, int64_t *size,
                    int *device)
{
    *has_size = ev->flags & GT_EV_HAS_SIZE;
    *size = (int64_t)ev->size;
    *device = ev->device;
    if (ev->result != 0 || !ev->ptr || !ai)
        return;
    if (ai->op == GT_OP_DEFER) { /* a release whose memory stays held: its size, nothing freed */
        struct u64map_entry *h = u64map_get(&W.live[ai->space], ev->ptr);
        if (h) {
            *has_size = true;
            *size = (int64_t)h->a;
            *device = (int16_t)(uint16_t)(h->b & 0xffff);
        }
        return;
    }
    if (ai->space == GT_SPACE_MAP) { /* vmm.c counts mappings; a mapping's device is its handle's */
        struct u64map_entry *h = ai->op == GT_OP_MAP ? u64map_get(&W.live[GT_SPACE_HANDLE], ev->aux) : NULL;
        if (h && *device == GT_DEVICE_UNKNOWN)
            *device = (int16_t)(uint16_t)(h->b & 0xffff);
        return;
    }
    struct u64map *m = &W.live[ai->space];
    if (ai->op == GT_OP_ALLOC || ai->op == GT_OP_MAP) {
        uint64_t old_size, old_b;
        if (u64map_del(m, ev->ptr, &old_size, &old_b)) /* its free was never seen */
            W.live_bytes[old_b >> 32] -= (int64_t)old_size;
        u64map_put(m, ev->ptr, ev->size, (uint32_t)(uint16_t)ev->device | (uint64_t)ai->memory << 32);
        W.live_bytes[ai->memory] += (int64_t)ev->size;
    } else {
        uint64_t sz, b;
        if (!u64map_del(m, ev->ptr, &sz, &b))
            return;
        *has_size = true;
        *size = (int64_t)sz;
        if (*device == GT_DEVICE_UNKNOWN)
            *device = (int16_t)(uint16_t)(b & 0xffff);
        W.live_bytes[b >> 32] -= (int64_t)sz;
    }
    if (W.live_bytes[GT_MEM_DEVICE] > W.peak_device)
        W.peak_device = W.live_bytes[GT_MEM_DEVICE];
    if (W.live_bytes[GT_MEM_POOL] > W.peak_pool)
        W.peak_pool = W.live_bytes[GT_MEM_POOL];
}

/* One events row (and its mappings row), with the accounting. */
static void write_row(const struct gt_event *ev)
{
    const struct gt_api_info *ai = api_info(ev->api);
    bool has_size;
    int64_t size;
    int device;
    account(ev, ai, &has_size, &size, &device);
    if (W.write_failed) {
        W.dropped_after_write_error++;
        return;
    }
    write_thread(ev->tid);
    sqlite3_stmt *st = W.ins_event;
    uint64_t t = ev->t_ns > W.start_mono ? ev->t_ns - W.start_mono : 0;
    sqlite3_bind_int64(st, 1, (int64_t)t);
    sqlite3_bind_int(st, 2, ev->api);
    bind_opt(st, 3, ev->ptr != 0, (int64_t)ev->ptr);
    bind_opt(st, 4, has_size, size);
    bind_opt(st, 5, device != GT_DEVICE_UNKNOWN, device);
    bind_opt(st, 6, ev->flags & GT_EV_HAS_STREAM, (int64_t)ev->stream);
    sqlite3_bind_int(st, 7, ev->tid);
    sqlite3_bind_int(st, 8, ev->result);
    bind_opt(st, 9, ev->stack_hash != 0, ev->stack_hash ? (int64_t)stack_id_for(ev->stack_hash) : 0);
    if (!step(st, "insert event")) {
        W.dropped_after_write_error++;
        return;
    }
    W.recorded++;
    if (ev->flags & GT_EV_HAS_AUX) {
        sqlite3_bind_int64(W.ins_mapping, 1, sqlite3_last_insert_rowid(W.db));
        sqlite3_bind_int64(W.ins_mapping, 2, (int64_t)ev->aux);
        step(W.ins_mapping, "insert mapping");
    }
}

static void write_event(const struct gt_event *in)
{
    if (in->api >= GT_REC_BASE) { /* activity: a range, mark or iteration */
        if (!W.write_failed)
            write_thread(in->tid);
        gt_activity_event(in, W.write_failed);
        return;
    }
    struct gt_event ev = *in; /* VMM: the row stored may differ from the call (vmm.c) */
    ev.api = (uint16_t)gt_vmm_track(in);
    write_row(&ev);
    /* A cuMemUnmap that removed the last mapping of released handles frees
     * them: one row each, in a loop (one cuMemUnmap of a grown range can free
     * thousands of handles: recursion here overflowed the writer's stack). */
    uint64_t handle;
    while (gt_vmm_take_freed(&handle)) {
        struct gt_event f = ev;
        f.api = GT_API_cuMemUnmap_last_mapping;
        f.ptr = handle;
        f.flags = 0;
        f.device = GT_DEVICE_UNKNOWN;
        write_row(&f);
    }
}

static uint64_t events_dropped(void)
{
    return gt_drops_events() + W.dropped_after_write_error;
}

static void write_counters(void)
{
    if (W.write_failed)
        return;
    sqlite3_bind_int64(W.upd_process, 1, (int64_t)W.recorded);
    sqlite3_bind_int64(W.upd_process, 2, (int64_t)events_dropped());
    sqlite3_bind_int64(W.upd_process, 3, W.peak_device);
    step(W.upd_process, "update counters");
    for (int i = 0; i < GT_DROP_COUNT; i++) {
        uint64_t n = gt_drop_count(i);
        if (!n)
            continue;
        sqlite3_bind_text(W.ins_drop, 1, gt_drop_info(i)->name, -1, SQLITE_STATIC);
        sqlite3_bind_int64(W.ins_drop, 2, (int64_t)n);
        sqlite3_bind_text(W.ins_drop, 3, gt_drop_info(i)->meaning, -1, SQLITE_STATIC);
        step(W.ins_drop, "update drops");
    }
}

/* One round: new stacks, then up to BATCH events. Returns events written. */
static int drain_once(struct gt_event *buf, bool *in_txn, uint64_t *txn_start)
{
    struct gt_stack_rec *stacks = gt_stacks_take_new();
    int n = gt_queue_pop(buf, BATCH);
    bool activity = gt_activity_pending();
    if (!stacks && !n && !activity)
        return 0;
    if (!*in_txn && !W.write_failed) {
        *in_txn = exec("BEGIN");
        *txn_start = gt_now_ns();
    }
    write_stacks(stacks);
    for (int i = 0; i < n; i++)
        write_event(&buf[i]);
    if (activity && !W.write_failed)
        gt_activity_write(); /* activity: notes, devices, samples, CUPTI buffers */
    return n ? n : 1;
}

static void commit(bool *in_txn)
{
    if (!*in_txn)
        return;
    write_counters();
    exec("COMMIT");
    *in_txn = false;
}

/* Drains everything reserved before the stop request. A slot reserved by a
 * thread still inside a real free is waited for a while, then skipped. */
static void drain_for_stop(struct gt_event *buf, bool *in_txn, uint64_t *txn_start)
{
    uint64_t target = gt_queue_head(), waited_since = 0;
    pthread_mutex_lock(&W.sql_mu);
    while (!gt_queue_empty_upto(target)) {
        if (drain_once(buf, in_txn, txn_start)) {
            waited_since = 0;
            continue;
        }
        uint64_t now = gt_now_ns();
        if (!waited_since)
            waited_since = now;
        if (now - waited_since > PENDING_SLOT_WAIT_NS) {
            gt_queue_skip_pending();
            waited_since = 0;
            continue;
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    drain_once(buf, in_txn, txn_start); /* stacks published late */
    pthread_mutex_unlock(&W.sql_mu);
}

static void *writer_main(void *arg)
{
    bool create = arg != NULL;
    static struct gt_event buf[BATCH];
    pthread_mutex_lock(&W.sql_mu); /* a fork mid-open must not copy SQLite's locks */
    bool opened = open_db(create);
    pthread_mutex_unlock(&W.sql_mu);
    if (!opened) {
        W.open_failed();
        pthread_mutex_lock(&W.mu);
        W.stop_done = true;
        pthread_cond_broadcast(&W.done);
        pthread_mutex_unlock(&W.mu);
        return NULL;
    }
    bool in_txn = false;
    uint64_t txn_start = 0, idle_ns = 1000000;
    for (;;) {
        pthread_mutex_lock(&W.mu);
        bool stop = W.stop_req;
        pthread_mutex_unlock(&W.mu);
        if (stop)
            break;
        gt_activity_tick(); /* outside SQLite: CUPTI flush, devices, NVML samples */
        pthread_mutex_lock(&W.sql_mu);
        int n = drain_once(buf, &in_txn, &txn_start);
        if (in_txn && (n < BATCH || gt_now_ns() - txn_start >= COMMIT_EVERY_NS))
            commit(&in_txn);
        pthread_mutex_unlock(&W.sql_mu);
        if (n) {
            idle_ns = 1000000;
            continue;
        }
        /* Idle: sleep until woken by a stop request, backing off to 10 ms. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + idle_ns;
        ts.tv_sec = (time_t)(t / 1000000000ull);
        ts.tv_nsec = (long)(t % 1000000000ull);
        pthread_mutex_lock(&W.mu);
        if (!W.stop_req)
            pthread_cond_timedwait(&W.wake, &W.mu, &ts);
        pthread_mutex_unlock(&W.mu);
        if (idle_ns < 10000000)
            idle_ns *= 2;
    }
    gt_activity_tick(); /* devices of a program that ended before the first round */
    drain_for_stop(buf, &in_txn, &txn_start);
    pthread_mutex_lock(&W.sql_mu);
    if (!in_txn && !W.write_failed)
        in_txn = exec("BEGIN");
    if (!W.write_failed) {
        uint64_t now = gt_now_ns();
        sqlite3_bind_int64(W.fin_process, 1, (int64_t)(now - W.start_mono));
        sqlite3_bind_text(W.fin_process, 2, W.stop_reason, -1, SQLITE_STATIC);
        step(W.fin_process, "finish process row");
    }
    commit(&in_txn);
    finalize_all();
    /* Leave one self-contained file: readers need no -wal/-shm beside it
     * (and a read-only copy stays readable). Resumed after exec: WAL again. */
    if (!W.write_failed)
        exec("PRAGMA journal_mode=DELETE");
    if (sqlite3_close(W.db) != SQLITE_OK)
        write_failed("close");
    W.db = NULL;
    pthread_mutex_unlock(&W.sql_mu);
    pthread_mutex_lock(&W.mu);
    W.stop_done = true;
    pthread_cond_broadcast(&W.done);
    pthread_mutex_unlock(&W.mu);
    return NULL;
}

static bool spawn(bool create)
{
    W.stop_req = W.stop_done = false;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer takes no signals */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    int rc = pthread_create(&W.thread, &attr, writer_main, create ? (void *)1 : NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "gputrace: cannot start the writer thread (%s); tracing is off, the program continues\n",
                strerror(rc));
        return false;
    }
    W.thread_running = true;
    return true;
}

/* Starts the writer for a new trace; time 0 of the trace is now. */
bool gt_writer_start(void (*open_failed)(void))
{
    W.open_failed = open_failed;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    W.start_unix = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    W.start_mono = gt_now_ns();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&W.wake, &ca);
    pthread_cond_init(&W.done, NULL);
    pthread_condattr_destroy(&ca);
    return spawn(true);
}

/* Asks the writer to drain, finish the process row and close; waits for it
 * (bounded, so a wedged writer cannot hang the exit of the program). */
bool gt_writer_stop(const char *reason, struct gt_writer_summary *out, bool reopen_later)
{
    if (!W.thread_running)
        return false;
    pthread_mutex_lock(&W.mu);
    W.stop_req = true;
    W.stop_reason = reason;
    W.reopen = reopen_later;
    pthread_cond_broadcast(&W.wake);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 30;
    while (!W.stop_done)
        if (pthread_cond_timedwait(&W.done, &W.mu, &ts) == ETIMEDOUT)
            break;
    bool done = W.stop_done;
    pthread_mutex_unlock(&W.mu);
    if (!done) {
        fprintf(stderr, "gputrace: the writer did not finish within 30 s; trace %s may be incomplete\n", W.path);
        return false;
    }
    pthread_join(W.thread, NULL);
    W.thread_running = false;
    if (out) {
        snprintf(out->path, sizeof out->path, "%s", W.path);
        out->events = W.recorded;
        out->dropped = events_dropped();
        out->peak_device = (uint64_t)W.peak_device;
        out->peak_pool = (uint64_t)W.peak_pool;
    }
    return !W.write_failed;
}

bool gt_writer_resume(void)
{
    return spawn(false);
}

void gt_writer_fork_prepare(void)
{
    pthread_mutex_lock(&W.sql_mu); /* the child must not inherit SQLite mid-call */
}

void gt_writer_fork_parent(void)
{
    pthread_mutex_unlock(&W.sql_mu);
}

/* Fork child: the parent's writer, connection and maps are not ours. The
 * connection is abandoned (closing it would touch the parent's file locks). */
void gt_writer_forget(void)
{
    pthread_mutex_init(&W.sql_mu, NULL);
    pthread_mutex_init(&W.mu, NULL);
    for (int i = 0; i < 4; i++)
        u64map_free(&W.live[i]);
    u64map_free(&W.stack_ids);
    u64map_free(&W.frame_ids);
    u64map_free(&W.tids);
    gt_vmm_reset();
    gt_activity_forget();
    W.db = NULL;
    W.ins_event = W.ins_mapping = W.ins_stack = W.ins_stack_frame = W.ins_frame = W.ins_thread = NULL;
    W.upd_process = W.ins_drop = W.fin_process = NULL;
    W.next_stack_id = W.next_frame_id = W.recorded = 0;
    memset(W.live_bytes, 0, sizeof W.live_bytes);
    W.peak_device = W.peak_pool = 0;
    W.write_failed = false;
    W.dropped_after_write_error = 0;
    W.thread_running = false;
    W.stop_req = W.stop_done = false;
}
