/* trace_rows.c - the SQL of the row-by-row readers (trace_rows.h). Errors
 * become exit statuses through trace.c's mapping, like every other query. */
#include <stdio.h>
#include <string.h>

#include "trace_rows.h"

static const char *const sql_of[] = {
    [GT_ROWS_EVENTS] = "SELECT t_ns, tid, stream FROM events ORDER BY t_ns, id",
    [GT_ROWS_RANGES] = "SELECT id, source, kind, domain, message, tid, start_ns, end_ns, depth, batch_size"
                       " FROM ranges ORDER BY start_ns, id",
    [GT_ROWS_MARKS] = "SELECT source, message, tid, t_ns FROM marks ORDER BY t_ns, id",
    [GT_ROWS_GPU] = "SELECT 0, k.start_ns, k.end_ns, k.device, k.stream_id, s.text, NULL, k.correlation_id"
                    " FROM kernels k LEFT JOIN strings s ON s.id = k.name_id"
                    " UNION ALL SELECT 1, start_ns, end_ns, device, stream_id, kind, bytes, correlation_id FROM memcpys"
                    " UNION ALL SELECT 2, start_ns, end_ns, device, stream_id, NULL, bytes, correlation_id FROM memsets"
                    " ORDER BY 2, 1",
    [GT_ROWS_SAMPLES] = "SELECT t_ns, device, used_bytes, process_bytes, total_bytes, reserved_bytes, others_bytes"
                        " FROM memory_samples ORDER BY t_ns, device",
    [GT_ROWS_THREADS] = "SELECT tid, name FROM threads ORDER BY tid",
};
static const char *const what_of[] = {
    [GT_ROWS_EVENTS] = "reading events",   [GT_ROWS_RANGES] = "reading ranges",
    [GT_ROWS_MARKS] = "reading marks",     [GT_ROWS_GPU] = "reading kernels, copies and memsets",
    [GT_ROWS_SAMPLES] = "reading NVML memory samples", [GT_ROWS_THREADS] = "reading thread names",
};

int gt_rows_open(struct gt_trace *t, struct gt_rows *r, enum gt_rows_kind kind)
{
    memset(r, 0, sizeof *r);
    r->t = t;
    r->what = what_of[kind];
    const char *sql = sql_of[kind];
    /* ids in time order (the usual case): the same order without a sort */
    if (kind == GT_ROWS_EVENTS && !t->resorted)
        sql = "SELECT t_ns, tid, stream FROM events ORDER BY id";
    /* the driver's reservation and the other processes' bytes came with schema 4 */
    if (kind == GT_ROWS_SAMPLES && t->schema_version < 4)
        sql = "SELECT t_ns, device, used_bytes, process_bytes, total_bytes, NULL, NULL FROM memory_samples"
              " ORDER BY t_ns, device";
    return gt_trace_prepare_optional(t, sql, &r->st, r->what);
}

int gt_rows_next(struct gt_rows *r)
{
    if (!r->st)
        return 0;
    int rc = sqlite3_step(r->st);
    if (rc == SQLITE_ROW)
        return 1;
    if (rc == SQLITE_DONE)
        return 0;
    return -gt_trace_sql_error(r->t, rc, r->what);
}

int gt_rows_next_event(struct gt_rows *r, size_t i, const char *command)
{
    int more = gt_rows_next(r);
    if (more > 0 && gt_rows_int(r, 0, -1) == r->t->ev[i].t)
        return GT_EXIT_OK;
    if (more < 0)
        return -more;
    snprintf(r->t->err, sizeof r->t->err, "the events table changed while it was read; %s a trace whose process has "
             "exited", command);
    return GT_EXIT_CORRUPT;
}

int64_t gt_rows_int(const struct gt_rows *r, int col, int64_t if_null)
{
    return sqlite3_column_type(r->st, col) == SQLITE_NULL ? if_null : sqlite3_column_int64(r->st, col);
}

const char *gt_rows_text(const struct gt_rows *r, int col)
{
    return (const char *)sqlite3_column_text(r->st, col);
}

void gt_rows_close(struct gt_rows *r)
{
    if (r->st)
        sqlite3_finalize(r->st);
    r->st = NULL;
}
