/* trace_rows.h - row-by-row readers over the tables the timeline views need
 * (per-event thread and stream, ranges, marks, GPU activity, NVML samples,
 * thread names). Unlike trace.c's loaders they hold nothing in memory: the
 * export streams millions of rows straight from SQLite to its output. */
#ifndef GT_TRACE_ROWS_H
#define GT_TRACE_ROWS_H
#include <sqlite3.h>
#include <stdint.h>

#include "trace.h"

enum gt_rows_kind {
    /* t_ns, tid, stream: in the (t_ns, id) order of gt_trace.ev, so row k is event k */
    GT_ROWS_EVENTS,
    /* id, source, kind, domain, message, tid, start_ns, end_ns, depth, batch_size by start */
    GT_ROWS_RANGES,
    /* source, message, tid, t_ns by time */
    GT_ROWS_MARKS,
    /* what (0 kernel, 1 memcpy, 2 memset), start_ns, end_ns, device, stream_id,
     * name (kernel name or memcpy kind), bytes, correlation_id; by start */
    GT_ROWS_GPU,
    /* t_ns, device, used_bytes, process_bytes, total_bytes by time */
    GT_ROWS_SAMPLES,
    /* tid, name */
    GT_ROWS_THREADS,
};

struct gt_rows {
    struct gt_trace *t;
    sqlite3_stmt *st;      /* NULL: the table does not exist (no rows) */
    const char *what;
};

/* Prepares the query of kind. Returns an exit status (message in t->err). */
int gt_rows_open(struct gt_trace *t, struct gt_rows *r, enum gt_rows_kind kind);
/* 1: a row is there; 0: no more rows; < 0: -(exit status), message in t->err. */
int gt_rows_next(struct gt_rows *r);
/* GT_ROWS_EVENTS read beside the loaded events: the next row, which must be
 * event i's (its time). 0, or an exit status with t->err saying that the
 * table changed while it was read (a live trace: `command` one whose
 * process has exited). */
int gt_rows_next_event(struct gt_rows *r, size_t i, const char *command);
int64_t gt_rows_int(const struct gt_rows *r, int col, int64_t if_null);
/* NULL for SQL NULL; valid until the next gt_rows_next. */
const char *gt_rows_text(const struct gt_rows *r, int col);
void gt_rows_close(struct gt_rows *r);

#endif
