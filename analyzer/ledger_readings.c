/* ledger_readings.c - what the ledger reads beside the trace's events:
 * NVML's samples, the stream-ordered pools' reservation (the shim's readings
 * or CUPTI's records) and the memory the driver held for CUDA graphs, each
 * at a given time, and from them what NVML shows held outside the trace
 * (room.c's and the ledger's context). */
#include <stdlib.h>
#include <string.h>

#include "ledger.h"
#include "trace_rows.h"

void gt_nvml_split(const struct gt_nvml_sample *s, int64_t *others, int64_t *no_ones)
{
    *others = *no_ones = -1;
    if (s->process < 0)
        return;
    int64_t rest = s->used - s->process;
    if (rest < 0)
        return;   /* the device's figure below the process's: two readings that disagree */
    if (s->others >= 0 && s->others <= rest)
        *others = s->others;
    else
        *others = rest - (s->reserved > 0 && s->reserved <= rest ? s->reserved : 0);
    if (s->others >= 0 || s->reserved >= 0)
        *no_ones = rest - *others;
}

/* The sample at the row r stands on (GT_ROWS_SAMPLES' columns). */
static struct gt_nvml_sample sample_row(struct gt_rows *r)
{
    return (struct gt_nvml_sample){gt_rows_int(r, 0, 0), gt_rows_int(r, 2, 0), gt_rows_int(r, 3, -1),
                                   gt_rows_int(r, 4, -1), gt_rows_int(r, 5, -1), gt_rows_int(r, 6, -1)};
}

/* When device d's first traced call was made; INT64_MAX if none. */
static int64_t first_call_on(const struct gt_trace *t, int d)
{
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].device == d)
            return t->ev[i].t;
    return INT64_MAX;
}

/* The first and last NVML samples of device d; 0 if it has none. "First" is
 * the ledger's start: the first sample taken once the program had used the
 * device (its first traced call) that has a figure for this process; the
 * earliest sample where none has. The shim's first sample comes right after
 * the program's first allocation, on whichever device: a device the program
 * turned to later (a model split across GPUs, a second rank's device) had no
 * context of this process then, and NVML listed no figure for it. */
int gt_ledger_samples(struct gt_trace *t, int d, struct gt_nvml_sample *first, struct gt_nvml_sample *last, int *code)
{
    struct gt_rows r;
    int n = 0, more = 0, placed = 0;
    int64_t used_from = first_call_on(t, d);
    *code = gt_rows_open(t, &r, GT_ROWS_SAMPLES);
    while (!*code && (more = gt_rows_next(&r)) > 0) {
        if (gt_rows_int(&r, 1, -1) != d)
            continue;
        struct gt_nvml_sample s = sample_row(&r);
        if (!n++)
            *first = s;
        if (!placed && s.process >= 0 && s.t >= used_from) {
            *first = s;
            placed = 1;
        }
        *last = s;
    }
    if (!*code && more < 0)
        *code = -more;
    gt_rows_close(&r);
    return n;
}

/* The first sample of device d at or after time at and before time before
 * (the sample the shim takes when the first iteration has ended); 0 if none. */
int gt_ledger_sample_between(struct gt_trace *t, int d, int64_t at, int64_t before, struct gt_nvml_sample *out,
                             int *code)
{
    struct gt_rows r;
    int found = 0, more;
    *code = gt_rows_open(t, &r, GT_ROWS_SAMPLES);
    while (!*code && !found && (more = gt_rows_next(&r)) > 0) {
        struct gt_nvml_sample s = sample_row(&r);
        if (gt_rows_int(&r, 1, -1) == d && s.t >= at && s.t < before) {
            *out = s;
            found = 1;
        }
    }
    if (!*code && !found && more < 0)
        *code = -more;
    gt_rows_close(&r);
    return found;
}

/* The stream-ordered pool's reservation on device d at time at: the latest
 * record before it, the writer's readings of the pool (memory_pools, op
 * 'sampled') or CUPTI's driver-memory and memory-pool records where they were
 * asked for; -1 when the trace holds none. */
static int64_t pool_reserved_near(struct gt_trace *t, int d, int64_t at, int after)
{
    static const char *const sql[] = {
        "SELECT pool_size, t_ns FROM driver_memory WHERE device = ?1 AND t_ns <= ?2 AND pool_size IS NOT NULL"
        " ORDER BY t_ns DESC LIMIT 1",
        "SELECT size, t_ns FROM memory_pools WHERE device = ?1 AND t_ns <= ?2 AND size IS NOT NULL"
        " ORDER BY t_ns DESC LIMIT 1",
        "SELECT pool_size, -t_ns FROM driver_memory WHERE device = ?1 AND t_ns >= ?2 AND pool_size IS NOT NULL"
        " ORDER BY t_ns LIMIT 1",
        "SELECT size, -t_ns FROM memory_pools WHERE device = ?1 AND t_ns >= ?2 AND size IS NOT NULL"
        " ORDER BY t_ns LIMIT 1",
    };
    int64_t best = -1, best_t = INT64_MIN;
    for (int q = after ? 2 : 0; q < (after ? 4 : 2); q++) {   /* after: the nearest later record wins */
        sqlite3_stmt *st;
        if (gt_trace_prepare_optional(t, sql[q], &st, "reading pool records") || !st)
            continue;
        sqlite3_bind_int64(st, 1, d);
        sqlite3_bind_int64(st, 2, at);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_int64(st, 1) > best_t) {
            best = sqlite3_column_int64(st, 0);
            best_t = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    return best;
}

/* The memory the driver held for CUDA graphs' allocation nodes on device d
 * at time at: the shim's latest reading before it (graph_memory; it reads at
 * most 100 ms apart, at each NVML sample and at exit); 0 when there is none
 * (no graph ran yet, or the trace predates the table). */
int64_t gt_ledger_graph_memory_at(struct gt_trace *t, int d, int64_t at)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    if (gt_trace_prepare_optional(t, "SELECT reserved_bytes FROM graph_memory WHERE device = ?1 AND t_ns <= ?2"
                                     " ORDER BY t_ns DESC LIMIT 1", &st, "reading graph memory") || !st)
        return 0;
    sqlite3_bind_int64(st, 1, d);
    sqlite3_bind_int64(st, 2, at);
    if (sqlite3_step(st) == SQLITE_ROW)
        v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v > 0 ? v : 0;
}

int64_t gt_ledger_graph_memory_max(struct gt_trace *t, int d, int64_t *least)
{
    sqlite3_stmt *st;
    int64_t v = 0;
    if (least)
        *least = 0;
    if (gt_trace_prepare_optional(t, "SELECT MAX(reserved_bytes), MIN(NULLIF(reserved_bytes, 0)) FROM graph_memory"
                                     " WHERE ?1 < 0 OR device = ?1", &st, "reading graph memory") || !st)
        return 0;
    sqlite3_bind_int64(st, 1, d == GT_ANY_DEVICE ? -1 : d);
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL) {
        v = sqlite3_column_int64(st, 0);
        if (least && sqlite3_column_type(st, 1) != SQLITE_NULL)
            *least = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return v > 0 ? v : 0;
}

int64_t gt_ledger_pool_reserved(struct gt_trace *t, int d, int64_t at)
{
    return pool_reserved_near(t, d, at, 0);
}

/* The first reading of the pool's reservation at or after time at; -1 none.
 * A pool that never gives memory back (PyTorch's) holds then at least what it
 * held at at: an upper bound, for a margin that must not be too small. */
int64_t gt_ledger_pool_reserved_after(struct gt_trace *t, int d, int64_t at)
{
    return pool_reserved_near(t, d, at, 1);
}

/* Does device d's pool keep what is freed in it, by its readings up to the
 * first one at or after time at: at least one reading that carries the pool's
 * release threshold, every threshold read at least the reservation read with
 * it (PyTorch's backend:cudaMallocAsync sets UINT64_MAX; CUDA's default, 0,
 * gives back at each synchronization), and no reading below an earlier one.
 * Such a pool held at time at at least its last reading before it, so a
 * reading less its bytes in use bounds what it held unused from below. 1 when
 * it keeps, 0 when it gave back or nothing says. Not seen: an explicit trim
 * (cudaMemPoolTrimTo, torch.cuda.empty_cache()) that the pool regrew from
 * before the next reading, in a program that went on after the failure: the
 * shim does not hook the trim (the readings, about 10 ms apart at most while the pool
 * changes, show most). */
int gt_ledger_pool_keeps(struct gt_trace *t, int d, int64_t at)
{
    static const char *const sql[] = {
        /* the threshold only of the writer's readings: CUPTI's pool records
         * describe any pool (one the program made, not the device's current) */
        "SELECT size, t_ns, CASE op WHEN 'sampled' THEN release_threshold END FROM memory_pools"
        " WHERE device = ?1 AND size IS NOT NULL ORDER BY t_ns",
        "SELECT pool_size, t_ns, NULL FROM driver_memory WHERE device = ?1 AND pool_size IS NOT NULL ORDER BY t_ns",
    };
    int keeps = 1, threshold_read = 0;
    for (int q = 0; q < 2 && keeps; q++) {
        sqlite3_stmt *st;
        if (gt_trace_prepare_optional(t, sql[q], &st, "reading pool records") || !st)
            continue;
        sqlite3_bind_int64(st, 1, d);
        int64_t prev = -1;
        while (sqlite3_step(st) == SQLITE_ROW) {
            int64_t v = sqlite3_column_int64(st, 0);
            /* (unsigned: a threshold of UINT64_MAX written as -1 by an older shim) */
            if (v < prev ||
                (sqlite3_column_type(st, 2) != SQLITE_NULL && (uint64_t)sqlite3_column_int64(st, 2) < (uint64_t)v)) {
                keeps = 0;
                break;
            }
            threshold_read |= sqlite3_column_type(st, 2) != SQLITE_NULL;
            prev = v;
            if (sqlite3_column_int64(st, 1) >= at)
                break;
        }
        sqlite3_finalize(st);
    }
    return keeps && threshold_read;
}

/* The pool's reservation on device d at time at (gt_ledger_pool_reserved);
 * with no reading before at, the next one when no pool call on d lies
 * between: a device whose pool calls the shim's writer first saw in its
 * last drain is read only after the exit sample. -1 when neither. */
int64_t gt_ledger_pool_reserved_at(struct gt_ctx *c, int d, int64_t at)
{
    struct gt_trace *t = &c->t;
    int64_t reserved = gt_ledger_pool_reserved(t, d, at);
    if (reserved >= 0)
        return reserved;
    int before = 0;
    for (size_t i = 0; i < t->nev; i++) {
        int m, slot;
        if (!gt_slot_delta(t, &c->p, i, &m, &slot) || slot != d || m != GT_MEM_POOL)
            continue;
        if (t->ev[i].t >= at)
            return -1;
        before = 1;
    }
    return before ? gt_ledger_pool_reserved_after(t, d, at) : -1;
}

/* All the trace holds on device d just before time at: device level plus
 * the pool at its reservation (in use, when the reservation is unknown). */
static int64_t traced_at(struct gt_ctx *c, int d, int64_t at)
{
    struct gt_trace *t = &c->t;
    int64_t device = 0, pool = 0;
    for (size_t i = 0; i < t->nev && t->ev[i].t < at; i++) {
        int m, slot;
        int64_t delta = gt_slot_delta(t, &c->p, i, &m, &slot);
        if (delta && slot == d && m == GT_MEM_DEVICE)
            device += delta;
        else if (delta && slot == d && m == GT_MEM_POOL)
            pool += delta;
    }
    int64_t reserved = gt_ledger_pool_reserved_at(c, d, at);
    return device + (reserved > pool ? reserved : pool) + gt_ledger_graph_memory_at(t, d, at);
}

int gt_ledger_untraced(struct gt_ctx *c, int d, struct gt_untraced *u)
{
    struct gt_trace *t = &c->t;
    struct gt_nvml_sample first = {0}, last = {0};
    int code;
    memset(u, 0, sizeof *u);
    u->bytes = u->others = u->total = u->no_ones = -1;
    if (!gt_ledger_samples(t, d, &first, &last, &code) || !t->nev)
        return code;
    /* modules loaded and workspaces taken late make the last sample the
     * fullest; it is taken at exit, when nothing is being allocated */
    int at_end = last.t >= t->ev[t->nev - 1].t;
    int64_t held = last.used - traced_at(c, d, last.t);
    if (!at_end) {
        int64_t h = first.used - traced_at(c, d, first.t);
        held = h > held ? h : held;
    }
    u->bytes = held > 0 ? held : 0;
    gt_nvml_split(&last, &u->others, &u->no_ones);
    u->total = last.total > 0 ? last.total : -1;
    u->t = last.t;
    return GT_EXIT_OK;
}

/* What NVML showed held outside the trace around time at on device d (an
 * out-of-memory failure): the larger of what the last sample at or before it
 * and the first after it show. Another job that held memory at the failure
 * and ended before the program did is in those samples, not in the one at
 * exit (gt_ledger_untraced). u->t: the sample taken. */
int gt_ledger_untraced_near(struct gt_ctx *c, int d, int64_t at, struct gt_untraced *u)
{
    struct gt_trace *t = &c->t;
    struct gt_nvml_sample near[2];
    int have[2] = {0, 0}, more = 0, code;
    struct gt_rows r;
    memset(u, 0, sizeof *u);
    u->bytes = u->others = u->total = u->no_ones = -1;
    code = gt_rows_open(t, &r, GT_ROWS_SAMPLES);
    while (!code && (more = gt_rows_next(&r)) > 0) {
        if (gt_rows_int(&r, 1, -1) != d)
            continue;
        struct gt_nvml_sample s = sample_row(&r);
        if (s.t <= at) {
            near[0] = s;
            have[0] = 1;
        } else if (!have[1]) {
            near[1] = s;
            have[1] = 1;
        }
    }
    if (!code && more < 0)
        code = -more;
    gt_rows_close(&r);
    if (code || !t->nev)
        return code;
    for (int k = 0; k < 2; k++) {
        if (!have[k])
            continue;
        int64_t held = near[k].used - traced_at(c, d, near[k].t);
        if (held < 0)
            held = 0;
        if (held > u->bytes) {
            u->bytes = held;
            gt_nvml_split(&near[k], &u->others, &u->no_ones);
            u->total = near[k].total > 0 ? near[k].total : -1;
            u->t = near[k].t;
        }
    }
    return GT_EXIT_OK;
}
