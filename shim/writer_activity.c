/* The writer's side of everything that is not an allocation event: ranges,
 * marks and iterations from the queue, notes, device facts, NVML samples and
 * (through writer_cupti.c) CUPTI activity. writer.c calls in at four points:
 * open, each round (tick outside SQLite, write inside its transaction), each
 * record of enum gt_rec, and close. Runs on the writer thread only. */
#include <ctype.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"

#define MAX_SAMPLES 4096

static struct {
    sqlite3 *db;
    uint64_t start_mono;
    bool failed;
    sqlite3_stmt *ins_range, *end_range, *ins_mark, *ins_iter, *ins_note, *ins_device, *ins_sample, *ins_drop;
    enum { DEV_WAIT, DEV_READ, DEV_WRITTEN } dev_state;
    struct gt_devices devs;
    bool nvml_on;
    uint64_t next_sample, dropped_written;
    int nsamples;
    struct gt_mem_sample samples[MAX_SAMPLES];
} A;

static const char *const source_names[] = {"nvtx", "marker"};

static int64_t rel(uint64_t t)
{
    return (int64_t)(t - A.start_mono); /* negative: before the trace started */
}

static bool step(sqlite3_stmt *st, const char *what)
{
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc == SQLITE_DONE || rc == SQLITE_ROW)
        return true;
    if (!A.failed)
        fprintf(stderr, "gputrace: writing %s failed (%s); ranges, notes and activity may be incomplete\n", what,
                sqlite3_errmsg(A.db));
    A.failed = true;
    return false;
}

static void bind_text_or_null(sqlite3_stmt *st, int i, const char *s)
{
    if (s)
        sqlite3_bind_text(st, i, s, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(st, i);
}

bool gt_activity_open(sqlite3 *db, uint64_t start_mono)
{
    gt_thread_untraced();
    A.db = db;
    A.start_mono = start_mono;
    A.failed = false;
    struct { sqlite3_stmt **st; const char *sql; } s[] = {
        {&A.ins_range, "INSERT INTO ranges(id, source, kind, domain, message, tid, start_ns, depth, parent_id, batch_size) VALUES (?,?,?,?,?,?,?,?,?,?)"},
        {&A.end_range, "UPDATE ranges SET end_ns = ? WHERE id = ?"},
        {&A.ins_mark, "INSERT INTO marks(source, domain, message, tid, t_ns) VALUES (?,?,?,?,?)"},
        {&A.ins_iter, "INSERT INTO iterations(idx, batch_size, t_ns, tid) VALUES (?,?,?,?)"},
        {&A.ins_note, "INSERT INTO notes(t_ns, component, message) VALUES (?,?,?)"},
        {&A.ins_device, "INSERT OR REPLACE INTO devices(id, name, uuid, total_bytes, cc_major, cc_minor, pci_bus_id, driver_version, runtime_version) VALUES (?,?,?,?,?,?,?,?,?)"},
        {&A.ins_sample, "INSERT INTO memory_samples(t_ns, device, used_bytes, total_bytes, process_bytes) VALUES (?,?,?,?,?)"},
        {&A.ins_drop, "INSERT OR REPLACE INTO drops(reason, count, meaning) VALUES (?,?,?)"},
    };
    for (size_t i = 0; i < sizeof s / sizeof s[0]; i++)
        if (sqlite3_prepare_v3(db, s[i].sql, -1, SQLITE_PREPARE_PERSISTENT, s[i].st, NULL) != SQLITE_OK) {
            fprintf(stderr, "gputrace: cannot prepare '%s': %s; ranges and activity are not recorded\n", s[i].sql,
                    sqlite3_errmsg(db));
            A.failed = true;
            return false;
        }
    return gt_cupti_open_statements(db);
}

void gt_activity_close(void)
{
    sqlite3_stmt **all[] = {&A.ins_range, &A.end_range, &A.ins_mark, &A.ins_iter,
                            &A.ins_note,  &A.ins_device, &A.ins_sample, &A.ins_drop};
    for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) {
        sqlite3_finalize(*all[i]);
        *all[i] = NULL;
    }
    gt_cupti_close_statements();
    A.db = NULL;
}

/* "batch_size=N" or "bs=N" where the key starts a word; -1 if absent. */
static int64_t batch_size_in(const char *m)
{
    static const char *const keys[] = {"batch_size=", "bs="};
    for (int k = 0; m && k < 2; k++)
        for (const char *p = m; (p = strstr(p, keys[k])); p++) {
            if (p > m && (isalnum((unsigned char)p[-1]) || p[-1] == '_'))
                continue;
            const char *d = p + strlen(keys[k]);
            if (isdigit((unsigned char)*d))
                return strtoll(d, NULL, 10);
        }
    return -1;
}

void gt_activity_event(const struct gt_event *ev, bool skip)
{
    char *msg = ev->api == GT_REC_RANGE_OPEN || ev->api == GT_REC_MARK ? (char *)(uintptr_t)ev->aux : NULL;
    const char *dom = (const char *)(uintptr_t)ev->stack_hash;
    const char *src = source_names[ev->device == GT_SRC_MARKER];
    if (skip || A.failed || !A.db) {
        free(msg);
        return;
    }
    sqlite3_stmt *st;
    switch (ev->api) {
    case GT_REC_RANGE_OPEN: {
        st = A.ins_range;
        int64_t bs = batch_size_in(msg);
        sqlite3_bind_int64(st, 1, (int64_t)ev->ptr);
        sqlite3_bind_text(st, 2, src, -1, SQLITE_STATIC);
        sqlite3_bind_text(st, 3, ev->flags & GT_RANGE_START ? "start" : "push", -1, SQLITE_STATIC);
        bind_text_or_null(st, 4, dom);
        bind_text_or_null(st, 5, msg);
        sqlite3_bind_int(st, 6, ev->tid);
        sqlite3_bind_int64(st, 7, rel(ev->t_ns));
        sqlite3_bind_int(st, 8, ev->result);
        if (ev->size)
            sqlite3_bind_int64(st, 9, (int64_t)ev->size);
        if (bs >= 0)
            sqlite3_bind_int64(st, 10, bs);
        step(st, "range");
        break;
    }
    case GT_REC_RANGE_CLOSE:
        sqlite3_bind_int64(A.end_range, 1, rel(ev->t_ns));
        sqlite3_bind_int64(A.end_range, 2, (int64_t)ev->ptr);
        step(A.end_range, "range end");
        break;
    case GT_REC_MARK:
        st = A.ins_mark;
        sqlite3_bind_text(st, 1, src, -1, SQLITE_STATIC);
        bind_text_or_null(st, 2, dom);
        bind_text_or_null(st, 3, msg);
        sqlite3_bind_int(st, 4, ev->tid);
        sqlite3_bind_int64(st, 5, rel(ev->t_ns));
        step(st, "mark");
        break;
    case GT_REC_ITERATION:
        st = A.ins_iter;
        sqlite3_bind_int64(st, 1, (int64_t)ev->ptr);
        if ((int64_t)ev->size >= 0)
            sqlite3_bind_int64(st, 2, (int64_t)ev->size);
        sqlite3_bind_int64(st, 3, rel(ev->t_ns));
        sqlite3_bind_int(st, 4, ev->tid);
        step(st, "iteration");
        break;
    }
    free(msg);
}

/* Each writer round, outside SQLite: once CUDA is initialised, start CUPTI,
 * read the devices and start NVML; then flush CUPTI and sample when due. */
void gt_activity_tick(void)
{
    if (!atomic_load_explicit(&gt_cuda_ready, memory_order_acquire))
        return;
    uint64_t now = gt_now_ns();
    gt_cupti_tick(now);
    if (A.dev_state == DEV_WAIT) {
        if (!gt_devices_read(&A.devs))
            gt_note("devices", false, "the devices could not be read (neither libcuda nor libcudart answered)");
        A.dev_state = DEV_READ;
        if (gt_config.sample_ms)
            A.nvml_on = gt_nvml_open(&A.devs);
        A.next_sample = now;
    }
    if (A.nvml_on && now >= A.next_sample && A.nsamples < MAX_SAMPLES - GT_MAX_DEVICES) {
        A.nsamples += gt_nvml_sample(A.samples + A.nsamples, MAX_SAMPLES - A.nsamples);
        A.next_sample = now + (uint64_t)gt_config.sample_ms * 1000000ull;
    }
}

bool gt_activity_pending(void)
{
    return gt_notes_pending() || A.dev_state == DEV_READ || A.nsamples || gt_cupti_pending() ||
           gt_cupti_dropped() != A.dropped_written;
}

static void write_devices(void)
{
    sqlite3_stmt *st = A.ins_device;
    for (int i = 0; i < A.devs.count; i++) {
        const struct gt_device_info *d = &A.devs.dev[i];
        sqlite3_bind_int(st, 1, i);
        bind_text_or_null(st, 2, d->name[0] ? d->name : NULL);
        bind_text_or_null(st, 3, d->has_uuid ? d->uuid : NULL);
        if (d->has_total)
            sqlite3_bind_int64(st, 4, (int64_t)d->total_bytes);
        if (d->has_cc) {
            sqlite3_bind_int(st, 5, d->cc_major);
            sqlite3_bind_int(st, 6, d->cc_minor);
        }
        bind_text_or_null(st, 7, d->has_pci ? d->pci_bus_id : NULL);
        if (A.devs.driver_version)
            sqlite3_bind_int(st, 8, A.devs.driver_version);
        if (A.devs.runtime_version)
            sqlite3_bind_int(st, 9, A.devs.runtime_version);
        step(st, "device");
    }
}

/* Inside the writer's transaction. */
void gt_activity_write(void)
{
    for (struct gt_note_rec *n = gt_notes_take(), *next; n; n = next) {
        next = n->next;
        if (n->to_stderr && !gt_config.quiet)
            fprintf(stderr, "gputrace: %s %s\n", n->component, n->message);
        if (!A.failed) {
            sqlite3_bind_int64(A.ins_note, 1, rel(n->t_ns));
            sqlite3_bind_text(A.ins_note, 2, n->component, -1, SQLITE_STATIC);
            sqlite3_bind_text(A.ins_note, 3, n->message, -1, SQLITE_STATIC);
            step(A.ins_note, "note");
        }
        free(n);
    }
    if (A.dev_state == DEV_READ) {
        if (!A.failed)
            write_devices();
        A.dev_state = DEV_WRITTEN;
    }
    for (int i = 0; i < A.nsamples && !A.failed; i++) {
        const struct gt_mem_sample *s = &A.samples[i];
        sqlite3_bind_int64(A.ins_sample, 1, rel(s->t_ns));
        sqlite3_bind_int(A.ins_sample, 2, s->device);
        sqlite3_bind_int64(A.ins_sample, 3, (int64_t)s->used);
        sqlite3_bind_int64(A.ins_sample, 4, (int64_t)s->total);
        if (s->process >= 0)
            sqlite3_bind_int64(A.ins_sample, 5, s->process);
        step(A.ins_sample, "memory sample");
    }
    A.nsamples = 0;
    if (!gt_cupti_write_buffers(A.db, A.start_mono) && !A.failed) {
        fprintf(stderr, "gputrace: writing CUPTI activity failed (%s); activity may be incomplete\n",
                sqlite3_errmsg(A.db));
        A.failed = true;
    }
    uint64_t lost = gt_cupti_dropped();
    if (lost != A.dropped_written && !A.failed) {
        sqlite3_bind_text(A.ins_drop, 1, "cupti_records", -1, SQLITE_STATIC);
        sqlite3_bind_int64(A.ins_drop, 2, (int64_t)lost);
        sqlite3_bind_text(A.ins_drop, 3, "CUPTI activity records lost inside CUPTI (it had no buffer for them)", -1,
                          SQLITE_STATIC);
        step(A.ins_drop, "drops");
    }
    A.dropped_written = lost;
}

/* Fork child (through gt_writer_forget): whatever the parent's writer held
 * is the parent's; its connection is abandoned, not closed. */
void gt_activity_forget(void)
{
    gt_cupti_forget_statements();
    memset(&A, 0, sizeof A);
}
