/* trace_events.c - loads a trace's events into struct gt_event arrays: one
 * prepared statement per slice of ids, the slices read in parallel, sorted
 * by time only when the ids are not already in time order, and each event's
 * call site interned into a dense index. */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "format.h"
#include "hmap.h"
#include "schema_sql.h"
#include "trace.h"

/* Stable bottom-up merge sort of events by t. Used only when the ids are not
 * already in time order (the shim writes events nearly in time order, so a
 * SQL "ORDER BY t_ns" would sort millions of rows for nothing). */
static void sort_events_by_time(struct gt_event *ev, size_t n)
{
    struct gt_event *tmp = gt_xmalloc(n * sizeof *tmp), *src = ev, *dst = tmp;
    for (size_t width = 1; width < n; width *= 2) {
        for (size_t lo = 0; lo < n; lo += 2 * width) {
            size_t mid = lo + width < n ? lo + width : n, hi = lo + 2 * width < n ? lo + 2 * width : n;
            size_t i = lo, j = mid, k = lo;
            if (mid >= hi || src[mid - 1].t <= src[mid].t) {
                memcpy(dst + lo, src + lo, (hi - lo) * sizeof *src);   /* already ordered */
                continue;
            }
            while (i < mid && j < hi)
                dst[k++] = src[j].t < src[i].t ? src[j++] : src[i++];
            while (i < mid)
                dst[k++] = src[i++];
            while (j < hi)
                dst[k++] = src[j++];
        }
        struct gt_event *s = src;
        src = dst;
        dst = s;
    }
    if (src != ev)
        memcpy(ev, src, n * sizeof *ev);
    free(tmp);
}

/* One slice of the events table, [lo, hi] by id, read on its own connection
 * (and thread) into ev[]. The site field holds the raw stacks.id until the
 * slices are joined (-1 for NULL). */
struct slice {
    const char *path;
    sqlite3 *db;          /* NULL: open one */
    int graph_calls;      /* the trace has the graph_calls table */
    int64_t lo, hi;
    struct gt_event *ev;  /* room for `room` events */
    size_t room;          /* hi - lo + 1, or the rows counted (ids far apart) */
    size_t n;
    int unordered;
    int rc;
    char msg[256];
};

static void *read_slice(void *arg)
{
    struct slice *s = arg;
    sqlite3 *db = s->db;
    sqlite3_stmt *st = NULL;
    int rc = SQLITE_OK;
    if (!db) {
        char name[4096];
        rc = sqlite3_open_v2(gt_sqlite_name(s->path, name, sizeof name), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX,
                             NULL);
        if (rc == SQLITE_OK) {
            sqlite3_busy_timeout(db, 2000);
            sqlite3_exec(db, "PRAGMA mmap_size = 0; PRAGMA cache_size = -16384", NULL, NULL, NULL);
        }
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, s->graph_calls ?
                                    "SELECT t_ns, api, ptr, size, device, result, stack_id, g.captured FROM events"
                                    " LEFT JOIN graph_calls g ON g.event_id = events.id"
                                    " WHERE id BETWEEN ?1 AND ?2 ORDER BY id" :
                                    "SELECT t_ns, api, ptr, size, device, result, stack_id, NULL FROM events"
                                    " WHERE id BETWEEN ?1 AND ?2 ORDER BY id", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, s->lo);
        sqlite3_bind_int64(st, 2, s->hi);
    }
    int64_t last_t = INT64_MIN;
    size_t room = s->room, n = 0;
    while (rc == SQLITE_OK) {
        if ((rc = sqlite3_step(st)) != SQLITE_ROW)
            break;
        rc = SQLITE_OK;
        if (n == room) {   /* ids are unique, and the rows were counted: cannot happen in a sane file */
            rc = SQLITE_CORRUPT;
            break;
        }
        struct gt_event *e = &s->ev[n++];
        e->t = sqlite3_column_int64(st, 0);
        int64_t api = sqlite3_column_int64(st, 1);
        e->api = api > 0 && api < 256 ? (uint8_t)api : 0;
        if (e->api && e->api < GT_API_GRAPH_IN_CAPTURE && sqlite3_column_type(st, 7) != SQLITE_NULL)
            e->api |= sqlite3_column_int64(st, 7) ? GT_API_GRAPH_NODE : GT_API_GRAPH_IN_CAPTURE;
        int64_t result = sqlite3_column_int64(st, 5);
        e->failed = result != 0;
        if (e->failed)
            e->u.result = result;
        else
            e->u.ptr = (uint64_t)sqlite3_column_int64(st, 2);   /* NULL reads as 0 */
        /* NULL reads as 0: ask for the type only then (saves a call per column) */
        e->size = sqlite3_column_int64(st, 3);
        if (e->size == 0 && sqlite3_column_type(st, 3) == SQLITE_NULL)
            e->size = -1;
        int64_t dev = sqlite3_column_int64(st, 4);
        if (dev == 0 && sqlite3_column_type(st, 4) == SQLITE_NULL)
            dev = GT_DEVICE_NULL;
        e->device = dev >= INT16_MIN && dev <= INT16_MAX ? (int16_t)dev : GT_DEVICE_NULL;
        /* stack ids count up from 1 in the shim; one outside int32 is unusable */
        int64_t sid = sqlite3_column_int64(st, 6);
        e->site = sid > 0 && sid <= INT32_MAX ? (int32_t)sid : -1;
        if (e->t < last_t)
            s->unordered = 1;
        last_t = e->t;
    }
    if (rc == SQLITE_DONE)
        rc = SQLITE_OK;
    if (rc != SQLITE_OK)
        snprintf(s->msg, sizeof s->msg, "%s", db ? sqlite3_errmsg(db) : sqlite3_errstr(rc));
    if ((rc & 0xff) == SQLITE_CORRUPT && !s->msg[0])
        snprintf(s->msg, sizeof s->msg, "duplicate event ids");
    sqlite3_finalize(st);
    if (!s->db)
        sqlite3_close(db);
    s->rc = rc;
    s->n = n;
    return NULL;
}

/* The api slots of calls made during a CUDA graph's capture (graph_calls):
 * each a copy of its API's row. A captured call (an allocation or free node)
 * is memory of its own kind, GT_MEM_GRAPH, in no level of memory in use: it
 * took nothing when it was made (the graph owns the address). A call made
 * meanwhile keeps its API's name and kind; only the ledger tells it apart. */
static void graph_slots(struct gt_trace *t)
{
    for (int id = 1; id < GT_API_GRAPH_IN_CAPTURE; id++) {
        const struct gt_api_attr *a = &t->api[id];
        if (!a->known)
            continue;
        t->api[id | GT_API_GRAPH_IN_CAPTURE] = *a;
        struct gt_api_attr *n = &t->api[id | GT_API_GRAPH_NODE];
        *n = *a;
        n->memory = GT_MEM_GRAPH;
        snprintf(n->name, sizeof n->name, "%.23s (graph)", a->name);
    }
}

/* Replaces raw stack ids in ev[].site by dense indices 0..nsites-1 (in order
 * of first use), recording the raw ids in t->site_ids. */
static void intern_sites(struct gt_trace *t)
{
    int32_t max = 0;
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].site > max)
            max = t->ev[i].site;
    size_t cap = 256;
    t->site_ids = gt_xmalloc(cap * sizeof *t->site_ids);
    int32_t *direct = (size_t)max <= 4 * t->nev + 65536 ? gt_xmalloc(((size_t)max + 1) * sizeof *direct) : NULL;
    struct gt_hmap map;
    gt_hmap_init(&map);
    if (direct)
        memset(direct, 0xff, ((size_t)max + 1) * sizeof *direct);
    int32_t last_raw = -1, last_dense = -1;
    for (size_t i = 0; i < t->nev; i++) {
        int32_t raw = t->ev[i].site;
        if (raw < 0)
            continue;
        if (raw != last_raw) {
            uint32_t v = direct ? (uint32_t)direct[raw] : gt_hmap_get(&map, (uint64_t)raw);
            if (v == GT_HMAP_NONE) {
                if (t->nsites == cap) {
                    cap *= 2;
                    t->site_ids = gt_xrealloc(t->site_ids, cap * sizeof *t->site_ids);
                }
                v = (uint32_t)t->nsites;
                t->site_ids[t->nsites++] = raw;
                if (direct)
                    direct[raw] = (int32_t)v;
                else if (gt_hmap_put(&map, (uint64_t)raw, v) == GT_HMAP_OOM) {
                    fprintf(stderr, "gputrace: out of memory\n");
                    exit(GT_EXIT_NOMEM);
                }
            }
            last_raw = raw;
            last_dense = (int32_t)v;
        }
        t->ev[i].site = last_dense;
    }
    free(direct);
    gt_hmap_free(&map);
}

int gt_trace_load_events(struct gt_trace *t)
{
    int64_t lo = 0, hi = 0;
    int code = gt_trace_pragma_int(t, "SELECT min(id) FROM events", &lo);
    if (!code)
        code = gt_trace_pragma_int(t, "SELECT max(id) FROM events", &hi);
    if (code)
        return code;
    /* (unsigned: ids at both ends of int64 do not overflow the difference) */
    size_t span = hi >= lo ? (size_t)((uint64_t)hi - (uint64_t)lo) + 1 : 0;
    if (hi < lo || (lo == 0 && hi == 0))
        span = 0;
    /* Ids far apart: a flight recorder's trace (GPUTRACE_WINDOW_S) keeps the
     * rows of the last minutes and of what was still live at the cut, whose
     * ids date from the run's start: a day's run spans billions of ids over
     * a few million rows. The array is sized by the rows then, read in one
     * slice (a long run's array by its id span failed at 1 billion ids). */
    size_t rows = span;
    if (span > ((size_t)1 << 24)) {
        int64_t counted = 0;
        if ((code = gt_trace_pragma_int(t, "SELECT count(*) FROM events", &counted)))
            return code;
        rows = counted > 0 ? (size_t)counted : 0;
    }
    int sparse = rows < span / 2 || span >= UINT32_MAX - 2;   /* (rows counted: span > 2^24) */
    if (rows >= UINT32_MAX - 2)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "more than 4 billion events: too many for this gputrace");
    /* big traces are read in slices by id, one thread and connection each */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    /* A trace not closed is read in one slice, on the connection that holds
     * the analysis's snapshot: a slice on a connection of its own took a
     * later one, and a flight recorder's delete between the two split pairs
     * (a review: 537 GiB of "leaks" where nothing was live); and a copy
     * without its -wal is opened as immutable there alone */
    int nslices = sparse || span < 2000000 || cpus < 2 || !t->proc.end_reason ? 1 : cpus > 8 ? 8 : (int)cpus;
    size_t room = sparse ? rows : span;
    t->ev = gt_xmalloc((room ? room : 1) * sizeof *t->ev);
    /* graph_calls read only where it has rows (a join per event otherwise for
     * nothing) and the slots are free (apis ids below 64, as every version's) */
    int graph_calls = gt_trace_has_rows(t, "graph_calls");
    for (int id = GT_API_GRAPH_IN_CAPTURE; id < 256 && graph_calls; id++)
        graph_calls = !t->api[id].known;
    if (graph_calls)
        graph_slots(t);
    struct slice sl[8];
    pthread_t th[8];
    int threaded[8] = {0};
    memset(sl, 0, sizeof sl);
    for (int k = 0; k < nslices; k++) {
        sl[k].path = t->path;
        sl[k].graph_calls = graph_calls;
        sl[k].db = k == 0 ? t->db : NULL;
        if (sparse) {   /* one slice: every id, into room for the rows counted */
            sl[k].lo = lo;
            sl[k].hi = hi;
            sl[k].ev = t->ev;
            sl[k].room = rows;
            continue;
        }
        sl[k].lo = lo + (int64_t)(span * (size_t)k / (size_t)nslices);
        sl[k].hi = lo + (int64_t)(span * (size_t)(k + 1) / (size_t)nslices) - 1;
        sl[k].ev = t->ev + (sl[k].lo - lo);
        sl[k].room = (size_t)(sl[k].hi - sl[k].lo + 1);
    }
    for (int k = 1; k < nslices; k++)
        threaded[k] = pthread_create(&th[k], NULL, read_slice, &sl[k]) == 0;
    if (span)
        read_slice(&sl[0]);
    for (int k = 1; k < nslices; k++) {
        if (threaded[k])
            pthread_join(th[k], NULL);
        else
            read_slice(&sl[k]);   /* no thread could be started: read it here */
    }
    /* join the slices (ids missing from the table leave gaps to close) */
    size_t n = 0;
    int unordered = 0;
    for (int k = 0; k < nslices; k++) {
        if (sl[k].rc != SQLITE_OK)
            return gt_trace_sql_fail_msg(t, sl[k].rc, sl[k].msg, "reading events");
        if (sl[k].ev != t->ev + n)
            memmove(t->ev + n, sl[k].ev, sl[k].n * sizeof *t->ev);
        if (n && sl[k].n && t->ev[n].t < t->ev[n - 1].t)
            unordered = 1;
        unordered |= sl[k].unordered;
        n += sl[k].n;
    }
    t->nev = n;
    /* Every sum of sizes a report makes is at most the sum of all successful
     * allocations: bound that, and no sum can overflow. A real trace stays
     * far below (a million 1 MB allocations a second for a day is 2^56). */
    uint64_t total = 0;
    for (size_t i = 0; i < n; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = &t->api[e->api];
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || e->size <= 0 || a->memory > GT_MEM_HOST)
            continue;
        total += (uint64_t)e->size;
        if ((uint64_t)e->size > (1ull << 62) || total > (1ull << 62))
            return gt_trace_fail(t, GT_EXIT_CORRUPT, "corrupt trace: allocation sizes add up to more than 2^62 bytes (event at "
                        "%lld ns: %lld bytes); re-run the traced program", (long long)e->t, (long long)e->size);
    }
    if (unordered) {
        sort_events_by_time(t->ev, n);
        t->resorted = 1;
    }
    intern_sites(t);
    int merged = gt_trace_merge_interpreter_sites(t);
    if (merged)
        return merged;
    t->site_frames = gt_xcalloc(t->nsites + 1, sizeof *t->site_frames);
    t->site_info = gt_xcalloc(t->nsites + 1, sizeof *t->site_info);
    t->site_nframes = gt_xmalloc((t->nsites + 1) * sizeof *t->site_nframes);
    for (size_t i = 0; i <= t->nsites; i++)
        t->site_nframes[i] = -1;
    /* The shim commits once right after naming the trace, so its -wal is
     * empty only for a moment: none (or an empty one) means a copy made
     * without it, or a process killed in that moment. */
    if (n == 0 && gt_trace_writer_pid(t))
        return gt_trace_fail(t, GT_EXIT_EMPTY, "no events yet: process %ld is still writing the trace; try again in a "
                    "moment", gt_trace_writer_pid(t));
    if (n == 0 && !t->proc.end_reason && t->wal_cut)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "the trace holds no events it can read and was not closed: its process "
                    "ended (killed?) before writing any whole, or its -wal file, which holds what was written, was cut "
                    "short (it ends in a partial frame; copy %s-wal whole with the trace)", t->path);
    if (n == 0 && !t->proc.end_reason && t->wal_missing)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "the trace holds no events and was not closed: its process ended (killed?) "
                    "before writing any, or this is a copy whose -wal file, which holds what was written, is missing "
                    "(copy %s-wal together with the trace)", t->path);
    if (n == 0 && !t->proc.end_reason)
        return gt_trace_fail(t, GT_EXIT_EMPTY, "empty trace: its process ended (killed?) before its first events were written");
    if (n == 0)
        return gt_trace_fail(t, GT_EXIT_EMPTY, "empty trace: no CUDA allocation calls were recorded; did the program use the GPU through a library that libgputrace.so can see (see the README)?");
    return GT_EXIT_OK;
}
