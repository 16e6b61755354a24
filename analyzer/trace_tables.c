/* trace_tables.c - the small tables the reports load whole beside the
 * events: NVTX and marker ranges, marker-API iterations, kernel starts (for
 * automatic iterations). A table missing from an older trace loads as empty. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "trace.h"

/* Runs sql and fills a growing array of elem-byte entries, one per row,
 * with fill(row, entry). *out is NULL and *n 0 when the table is missing. */
static int load_rows(struct gt_trace *t, const char *sql, const char *what, size_t elem,
                     void (*fill)(sqlite3_stmt *, void *), void **out, size_t *n)
{
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    int code = gt_trace_prepare_optional(t, sql, &st, what);
    if (code || !st)
        return code;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *out = gt_xrealloc(*out, cap * elem);
        }
        fill(st, (char *)*out + (*n)++ * elem);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, what);
}

static void fill_range(sqlite3_stmt *st, void *entry)
{
    struct gt_range *r = entry;
    const char *src = (const char *)sqlite3_column_text(st, 0);
    r->is_marker = src && !strcmp(src, "marker");
    r->message = gt_col_text(st, 1);
    if (!r->message)
        r->message = gt_xstrdup("");
    r->tid = gt_col_int_or(st, 2, -1);
    r->start = sqlite3_column_int64(st, 3);
    r->end = gt_col_int_or(st, 4, -1);
    r->depth = gt_col_int_or(st, 5, 0);
    r->batch_size = gt_col_int_or(st, 6, -1);
    r->domain = gt_col_text(st, 7);
}

int gt_trace_ranges(struct gt_trace *t, struct gt_range **out, size_t *n)
{
    void *rows;
    int code = load_rows(t, "SELECT source, message, tid, start_ns, end_ns, depth, batch_size, domain FROM ranges "
                         "ORDER BY start_ns, id",
                         "reading ranges", sizeof **out, fill_range, &rows, n);
    *out = rows;
    return code;
}

void gt_ranges_free(struct gt_range *r, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        free(r[i].message);
        free(r[i].domain);
    }
    free(r);
}

static void fill_marker_iter(sqlite3_stmt *st, void *entry)
{
    struct gt_marker_iter *m = entry;
    m->idx = sqlite3_column_int64(st, 0);
    m->batch_size = gt_col_int_or(st, 1, -1);
    if (m->batch_size < 0)
        m->batch_size = -1;
    m->t = sqlite3_column_int64(st, 2);
}

int gt_trace_marker_iterations(struct gt_trace *t, struct gt_marker_iter **out, size_t *n)
{
    void *rows;
    int code = load_rows(t, "SELECT idx, batch_size, t_ns FROM iterations ORDER BY t_ns, id", "reading marker iterations",
                         sizeof **out, fill_marker_iter, &rows, n);
    *out = rows;
    return code;
}

static void fill_kernel(sqlite3_stmt *st, void *entry)
{
    struct gt_kernel *k = entry;
    k->start = sqlite3_column_int64(st, 0);
    k->name_id = gt_col_int_or(st, 1, -1);
    k->backward = 0;
}

static int id_cmp(const void *x, const void *y)
{
    int64_t a = *(const int64_t *)x, b = *(const int64_t *)y;
    return (a > b) - (a < b);
}

/* The kernels of the device that ran the most, in start order. One device's:
 * two GPUs run side by side, so how their kernels interleave in time differs
 * from step to step (a model split across two H200s read as 6 iterations
 * for 20 steps), while each device runs every step's kernels in one order. */
int gt_trace_kernels(struct gt_trace *t, struct gt_kernel **out, size_t *n)
{
    void *rows;
    int code = load_rows(t, "SELECT start_ns, name_id FROM kernels WHERE device IS (SELECT device FROM kernels GROUP BY device"
                         " ORDER BY count(*) DESC, device LIMIT 1) ORDER BY start_ns, id", "reading kernels", sizeof **out,
                         fill_kernel, &rows, n);
    *out = rows;
    if (code || !*n)
        return code;
    /* the names that say they compute gradients, matched once each (a trace
     * holds millions of kernels and a few hundred names); a strings table
     * that cannot tell leaves every kernel unmarked (a hint, not a fact the
     * reports need) */
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(t->db, "SELECT id FROM strings WHERE text LIKE '%backward%' OR text LIKE '%bwd%'"
                           " OR text LIKE '%dgrad%' OR text LIKE '%wgrad%' ORDER BY id", -1, &st, NULL) != SQLITE_OK)
        return code;
    int64_t *ids = NULL;
    size_t nids = 0, cap = 0;
    while (sqlite3_step(st) == SQLITE_ROW) {
        if (nids == cap) {
            cap = cap ? cap * 2 : 64;
            ids = gt_xrealloc(ids, cap * sizeof *ids);
        }
        ids[nids++] = sqlite3_column_int64(st, 0);
    }
    sqlite3_finalize(st);
    for (size_t i = 0; nids && i < *n; i++)
        (*out)[i].backward = bsearch(&(*out)[i].name_id, ids, nids, sizeof *ids, id_cmp) != NULL;
    free(ids);
    return code;
}
