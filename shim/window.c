/* The flight recorder (GPUTRACE_WINDOW_S): a trace of a long job that keeps
 * the last N seconds in full and a summary of every interval of the whole
 * run, so its size stays bounded and the minutes before an OOM or a kill are
 * always complete. Every interval the writer thread, in a transaction of its
 * own (never on the program's threads), writes the interval's summary rows,
 * takes a checkpoint (the last row of each table then, and the alloc rows of
 * the allocations live then, from the writer's own accounting) and deletes
 * the rows written before the newest checkpoint that is older than the
 * window: the events but the alloc rows of allocations still live then
 * (leaks and live-at-exit stay right), and the other per-event tables by
 * rowid, so a prune touches only what was written since the last one and
 * never pairs allocations in SQL. A checkpoint needs memory (the list of
 * live rows): without it, or once the rows map missed an allocation, none is
 * taken (counted in drops as window_checkpoint_skipped) and the trace keeps
 * more than the window, never a wrong one. Writer thread only. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "db.h"
#include "u64map.h"
#include "writer.h"

#define MIN_INTERVAL_NS (250 * 1000000ull)
#define MAX_INTERVAL_NS (60 * 1000000000ull)
#define MAX_CHECKPOINTS 64
#define NDEV 65 /* index device + 1: host (-1) and ordinals 0..63 */
#define NMEM 6  /* enum gt_memory */

/* Tables pruned by rowid (events apart: see prune_events). */
static const char *const tables[] = {"events", "kernels", "memcpys", "memsets", "driver_memory", "marks",
                                     "memory_samples", "iterations"};
#define NTABLES (sizeof tables / sizeof *tables)

/* apis.memory, in enum gt_memory's order */
static const char *const memory_names[NMEM] = {"device", "pool", "managed", "host", "reserve", "mapping"};

struct level { int64_t live, peak, allocs, frees, failed; };

static struct {
    bool on;
    uint64_t start_mono, window_ns, interval_ns, next_tick, interval_start;
    uint64_t checkpoint_ns;       /* between checkpoints: an interval, or more for a window of hours */
    struct checkpoint {
        uint64_t t;
        int64_t last[NTABLES];
        int64_t *live;     /* events.id of the allocations live then, sorted */
        size_t nlive;
    } cp[MAX_CHECKPOINTS];
    int ncp;
    int64_t pruned_upto[NTABLES]; /* rows up to these were pruned already */
    int64_t *kept;                /* alloc rows the last prune kept (its checkpoint's live), sorted */
    size_t nkept;
    struct level lv[NMEM][NDEV];
    struct u64map rows[GT_NSPACES];        /* per apis.space: ptr -> (events.id of its live alloc row, -) */
    bool rows_lost;               /* a put failed (no memory): rows[] no longer lists every live row */
    int64_t pinned[GT_TAKEN_ROWS_MAX]; /* rows of frees written while their call runs (gt_window_pin); 0: none */
} R;

static struct level *level(int memory, int device)
{
    if (memory < 0 || memory >= NMEM)
        return NULL;
    int d = device < -1 || device >= NDEV - 1 ? -1 : device;
    return &R.lv[memory][d + 1];
}

/* A new trace (inside its creation transaction): the flight_recorder row. */
bool gt_window_begin(uint64_t start_mono)
{
    gt_window_forget();
    if (!gt_config.window_s)
        return true;
    R.on = true;
    R.start_mono = R.interval_start = start_mono;
    R.window_ns = (uint64_t)gt_config.window_s * 1000000000ull;
    R.interval_ns = R.window_ns / 4 < MIN_INTERVAL_NS ? MIN_INTERVAL_NS
                    : R.window_ns / 4 > MAX_INTERVAL_NS ? MAX_INTERVAL_NS : R.window_ns / 4;
    R.next_tick = start_mono + R.interval_ns;
    /* at most MAX_CHECKPOINTS - 4 within a window (a 10-minute one: an interval; a day: 24 minutes) */
    R.checkpoint_ns = R.window_ns / (MAX_CHECKPOINTS - 4) > R.interval_ns ? R.window_ns / (MAX_CHECKPOINTS - 4)
                                                                         : R.interval_ns;
    GT_BIND_INT(WINDOW, window_ns, R.window_ns);
    GT_BIND_INT(WINDOW, interval_ns, R.interval_ns);
    return gt_db_run(GT_ST_WINDOW, GT_NOT_A_RECORD);
}

/* The writer's accounting, as it writes each event (writer_events.c):
 * delta live bytes of a memory level on a device; what: 1 an allocation, -1
 * a free, 0 a correction (an address allocated again, its free never seen). */
void gt_window_live(int memory, int device, int64_t delta, int what)
{
    struct level *l = R.on ? level(memory, device) : NULL;
    if (!l)
        return;
    l->live += delta;
    if (l->live > l->peak)
        l->peak = l->live;
    l->allocs += what > 0;
    l->frees += what < 0;
}

/* writer_events.c, for the checkpoints: an allocation's row (id), or its
 * free (id 0). */
void gt_window_row(int space, uint64_t ptr, int64_t id)
{
    if (!R.on || space < 0 || space >= 4)
        return;
    if (id) {
        if (!u64map_put(&R.rows[space], ptr, (uint64_t)id, 0))
            R.rows_lost = true;   /* a checkpoint now would prune this live row */
    } else
        u64map_del(&R.rows[space], ptr, NULL, NULL);
}

/* The alloc row of a live allocation (0: none kept) */
int64_t gt_window_row_of(int space, uint64_t ptr)
{
    if (!R.on || space < 0 || space >= 4)
        return 0;
    struct u64map_entry *e = u64map_get(&R.rows[space], ptr);
    return e ? (int64_t)e->a : 0;
}

/* A free counted by gt_window_live that failed after all (writer_events.c);
 * failed: counted as a failed call (not for a call left by a longjmp) */
void gt_window_unfree(int memory, int device, int64_t size, bool failed)
{
    struct level *l = R.on ? level(memory, device) : NULL;
    if (!l)
        return;
    l->live += size;
    if (l->live > l->peak)
        l->peak = l->live;
    if (l->frees)
        l->frees--;
    l->failed += failed;
}

/* The alloc row id of ptr is no longer live, unless another allocation took
 * its address since (writer_events.c: a free the writer took has returned). */
void gt_window_row_clear(int space, uint64_t ptr, int64_t id)
{
    struct u64map_entry *e = R.on && space >= 0 && space < 4 ? u64map_get(&R.rows[space], ptr) : NULL;
    if (e && (int64_t)e->a == id)
        u64map_del(&R.rows[space], ptr, NULL, NULL);
}

/* The events row of a free written while its call still runs (writer_events.c):
 * kept beside its block's row until its result comes (gt_window_unpin), so
 * that a prune takes both or neither. False: no room (it may be pruned alone). */
bool gt_window_pin(int64_t id)
{
    if (!R.on)
        return true;
    for (size_t i = 0; i < GT_TAKEN_ROWS_MAX; i++)
        if (!R.pinned[i]) {
            R.pinned[i] = id;
            return true;
        }
    return false;
}

void gt_window_unpin(int64_t id)
{
    for (size_t i = 0; R.on && i < GT_TAKEN_ROWS_MAX; i++)
        if (R.pinned[i] == id)
            R.pinned[i] = 0;
}

/* The alloc rows of every allocation live now (malloc'd, unsorted; NULL
 * when none) into out, nout. False: no memory for the list, or rows[] is
 * incomplete. */
static bool live_rows(int64_t **out, size_t *nout)
{
    size_t n = 0, k = 0;
    for (int s = 0; s < GT_NSPACES; s++)
        n += R.rows[s].len;
    n += GT_TAKEN_ROWS_MAX;   /* and the rows of frees written while their call still runs (gt_window_pin) */
    *out = NULL;
    *nout = 0;
    if (R.rows_lost || !(*out = malloc(n * sizeof **out)))
        return false;
    for (int s = 0; s < GT_NSPACES; s++)
        for (uint64_t i = 0; i < R.rows[s].cap; i++)
            if (R.rows[s].e[i].key && k < n)
                (*out)[k++] = (int64_t)R.rows[s].e[i].a;
    for (size_t i = 0; i < GT_TAKEN_ROWS_MAX && k < n; i++)
        if (R.pinned[i])
            (*out)[k++] = R.pinned[i];
    *nout = k;
    return true;
}

void gt_window_failed(int memory, int device)
{
    struct level *l = R.on ? level(memory, device) : NULL;
    if (l)
        l->failed++;
}

/* The summary rows of the interval ending at now: every level with activity
 * or live bytes. */
static void write_summaries(uint64_t now)
{
    for (int m = 0; m < NMEM; m++)
        for (int d = 0; d < NDEV; d++) {
            struct level *l = &R.lv[m][d];
            if (!l->live && !l->peak && !l->allocs && !l->frees && !l->failed)
                continue;
            GT_BIND_INT(SUMMARY, start_ns, R.interval_start - R.start_mono);
            GT_BIND_INT(SUMMARY, end_ns, now - R.start_mono);
            GT_BIND_TEXT(SUMMARY, memory, memory_names[m]);
            GT_BIND_INT(SUMMARY, device, d - 1);
            GT_BIND_INT(SUMMARY, peak_bytes, l->peak);
            GT_BIND_INT(SUMMARY, end_bytes, l->live);
            GT_BIND_INT(SUMMARY, allocs, l->allocs);
            GT_BIND_INT(SUMMARY, frees, l->frees);
            GT_BIND_INT(SUMMARY, failed, l->failed);
            gt_db_run(GT_ST_SUMMARY, GT_NOT_A_RECORD);
            *l = (struct level){.live = l->live, .peak = l->live};
        }
    R.interval_start = now;
}

/* Deletes the events up to checkpoint c's last row but the alloc rows of the
 * allocations live at c (and every VMM map/unmap/defer row): rows kept by
 * the previous prune and freed since, one by one; the rows written since it,
 * as ranges between the ones kept. */
static void prune_events(const struct checkpoint *c)
{
    size_t j = 0;
    for (size_t i = 0; i < R.nkept; i++) {
        while (j < c->nlive && c->live[j] < R.kept[i])
            j++;
        if (j == c->nlive || c->live[j] != R.kept[i]) {
            GT_BIND_INT(PRUNE_ROW, id, R.kept[i]);
            gt_db_run(GT_ST_PRUNE_ROW, GT_NOT_A_RECORD);
            GT_BIND_INT(PRUNE_GRAPH_ROW, id, R.kept[i]);
            gt_db_run(GT_ST_PRUNE_GRAPH_ROW, GT_NOT_A_RECORD);
        }
    }
    int64_t lo = R.pruned_upto[0];
    for (size_t i = 0; i <= c->nlive; i++) {
        int64_t hi = i < c->nlive ? c->live[i] : c->last[0] + 1;
        if (hi <= lo)
            continue;
        if (hi > lo + 1) {
            GT_BIND_INT(PRUNE_RANGE, lo, lo);
            GT_BIND_INT(PRUNE_RANGE, hi, hi);
            gt_db_run(GT_ST_PRUNE_RANGE, GT_NOT_A_RECORD);
            GT_BIND_INT(PRUNE_GRAPH_RANGE, lo, lo);
            GT_BIND_INT(PRUNE_GRAPH_RANGE, hi, hi);
            gt_db_run(GT_ST_PRUNE_GRAPH_RANGE, GT_NOT_A_RECORD);
        }
        lo = hi;
    }
    R.pruned_upto[0] = c->last[0];
    free(R.kept);
    R.kept = c->live;
    R.nkept = c->nlive;
}

/* Prunes everything written before checkpoint c (its time is the trace's
 * new complete_from_ns). */
static void prune(const struct checkpoint *c)
{
    char sql[256];
    prune_events(c);
    for (size_t i = 1; i < NTABLES; i++) {
        if (c->last[i] <= R.pruned_upto[i])
            continue;
        if (!strcmp(tables[i], "iterations")) /* the iteration running at the cut stays */
            snprintf(sql, sizeof sql,
                     "DELETE FROM iterations WHERE id < (SELECT max(id) FROM iterations WHERE id <= %lld)",
                     (long long)c->last[i]);
        else if (!strcmp(tables[i], "memory_samples")) /* each device's first: the ledger's start */
            snprintf(sql, sizeof sql, "DELETE FROM memory_samples WHERE rowid > %lld AND rowid <= %lld AND rowid NOT IN "
                     "(SELECT min(rowid) FROM memory_samples GROUP BY device)", (long long)R.pruned_upto[i],
                     (long long)c->last[i]);
        else
            snprintf(sql, sizeof sql, "DELETE FROM %s WHERE rowid > %lld AND rowid <= %lld", tables[i],
                     (long long)R.pruned_upto[i], (long long)c->last[i]);
        gt_db_exec(sql);
        R.pruned_upto[i] = c->last[i];
    }
    snprintf(sql, sizeof sql, "DELETE FROM ranges WHERE end_ns IS NOT NULL AND end_ns < %lld",
             (long long)(c->t - R.start_mono));
    gt_db_exec(sql);
    GT_BIND_INT(WINDOW_FROM, complete_from_ns, c->t - R.start_mono);
    gt_db_run(GT_ST_WINDOW_FROM, GT_NOT_A_RECORD);
}

static int cmp_id(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Writer, between its transactions: once an interval, in a transaction of
 * its own, the interval's summaries, a checkpoint, and the prune of what the
 * window no longer holds. Another connection's lock: next round. */
void gt_window_tick(uint64_t now)
{
    if (!R.on || now < R.next_tick || gt_db_failed())
        return;
    if (gt_db_begin() <= 0)
        return;
    R.next_tick = now + R.interval_ns;
    write_summaries(now);
    if (R.ncp && now - R.cp[R.ncp - 1].t + R.interval_ns / 2 < R.checkpoint_ns) {
        gt_db_exec("COMMIT");
        return;
    }
    int64_t *live;
    size_t nlive;
    if (!live_rows(&live, &nlive)) {
        /* a checkpoint that missed a live row would have its prune delete
         * it: none this time, so nothing is pruned past the last good one */
        gt_drop(GT_DROP_WINDOW_CHECKPOINT);
        gt_db_exec("COMMIT");
        return;
    }
    if (R.ncp == MAX_CHECKPOINTS) { /* cannot happen (checkpoint_ns); were it to, keep the newest */
        free(R.cp[0].live);
        memmove(R.cp, R.cp + 1, (MAX_CHECKPOINTS - 1) * sizeof *R.cp);
        R.ncp--;
    }
    struct checkpoint *c = &R.cp[R.ncp++];
    c->t = now;
    for (size_t i = 0; i < NTABLES; i++)
        c->last[i] = gt_db_max_rowid(tables[i]);
    c->live = live;
    c->nlive = nlive;
    qsort(c->live, c->nlive, sizeof *c->live, cmp_id);
    int k = -1; /* the newest checkpoint at least a window old */
    while (k + 1 < R.ncp && R.cp[k + 1].t + R.window_ns <= now)
        k++;
    if (k >= 0) {
        prune(&R.cp[k]); /* takes its live list */
        for (int i = 0; i < k; i++)
            free(R.cp[i].live);
        memmove(R.cp, R.cp + k + 1, (size_t)(R.ncp - k - 1) * sizeof *R.cp);
        R.ncp -= k + 1;
    }
    gt_db_exec("COMMIT");
}

/* Writer, in its last transaction: the last, partial interval. */
void gt_window_stop(uint64_t now)
{
    if (R.on && !gt_db_failed())
        write_summaries(now);
}

/* Fork child (and a new trace): the parent's window is the parent's. */
void gt_window_forget(void)
{
    for (int i = 0; i < R.ncp; i++)
        free(R.cp[i].live);
    free(R.kept);
    for (int s = 0; s < GT_NSPACES; s++)
        u64map_free(&R.rows[s]);
    memset(&R, 0, sizeof R);
}
