/* trace_tables.c - the small tables the reports load whole beside the
 * events: NVTX and marker ranges, marker-API iterations, kernel starts (for
 * automatic iterations). A table missing from an older trace loads as empty. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "trace.h"

int gt_trace_ranges(struct gt_trace *t, struct gt_range **out, size_t *n)
{
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    int code = gt_trace_prepare_optional(t, "SELECT source, message, tid, start_ns, end_ns, depth, batch_size FROM ranges ORDER BY start_ns, id", &st, "reading ranges");
    if (code || !st)
        return code;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *out = gt_xrealloc(*out, cap * sizeof **out);
        }
        struct gt_range *r = &(*out)[(*n)++];
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
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading ranges");
}

void gt_ranges_free(struct gt_range *r, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(r[i].message);
    free(r);
}

int gt_trace_marker_iterations(struct gt_trace *t, struct gt_marker_iter **out, size_t *n)
{
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    int code = gt_trace_prepare_optional(t, "SELECT idx, batch_size, t_ns FROM iterations ORDER BY t_ns, id", &st, "reading marker iterations");
    if (code || !st)
        return code;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 64;
            *out = gt_xrealloc(*out, cap * sizeof **out);
        }
        struct gt_marker_iter *m = &(*out)[(*n)++];
        m->idx = sqlite3_column_int64(st, 0);
        m->batch_size = gt_col_int_or(st, 1, -1);
        if (m->batch_size < 0)
            m->batch_size = -1;
        m->t = sqlite3_column_int64(st, 2);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading marker iterations");
}

int gt_trace_kernels(struct gt_trace *t, struct gt_kernel **out, size_t *n)
{
    sqlite3_stmt *st;
    *out = NULL;
    *n = 0;
    int code = gt_trace_prepare_optional(t, "SELECT start_ns, name_id FROM kernels ORDER BY start_ns, id", &st, "reading kernels");
    if (code || !st)
        return code;
    size_t cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (*n == cap) {
            cap = cap ? cap * 2 : 1024;
            *out = gt_xrealloc(*out, cap * sizeof **out);
        }
        (*out)[*n].start = sqlite3_column_int64(st, 0);
        (*out)[*n].name_id = gt_col_int_or(st, 1, -1);
        (*n)++;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading kernels");
}
