/* imported.c - memory another process owns that this one maps (NCCL's peer
 * buffers through cuMemImportFromShareableHandle + cuMemMap, CUDA IPC through
 * cudaIpcOpenMemHandle / cuIpcOpenMemHandle): the trace stores it as memory
 * 'imported', which no device figure counts. This says how much of it was
 * still mapped at the end, for the ledger. Traces older than schema 3 have
 * none of these rows: every figure is then 0. */
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"

/* IPC opens and closes in order (an open carries its range's size). Paired
 * here, not through the allocations view, which pairs every event of the
 * trace again: 8 of summary's 9 s on 2 million events. */
static const char sql_ipc[] =
    "SELECT a.op = 'alloc', e.ptr, e.size FROM events e JOIN apis a ON a.id = e.api"
    " WHERE a.name IN ('cudaIpcOpenMemHandle', 'cuIpcOpenMemHandle_v2', 'cudaIpcCloseMemHandle', 'cuIpcCloseMemHandle')"
    " AND e.result = 0 ORDER BY e.id";
/* Mappings of imported handles that no later cuMemUnmap covered: an imported
 * handle's size is only known from its mappings. */
static const char sql_vmm[] =
    "SELECT COUNT(DISTINCT x.handle), COALESCE(SUM(m.size), 0)"
    " FROM events m JOIN apis am ON am.id = m.api JOIN mappings x ON x.event_id = m.id"
    " WHERE am.name = 'cuMemMap' AND m.result = 0"
    " AND EXISTS (SELECT 1 FROM events i JOIN apis ai ON ai.id = i.api"
    "             WHERE ai.name = 'cuMemImportFromShareableHandle' AND i.result = 0 AND i.ptr = x.handle AND i.id < m.id)"
    " AND NOT EXISTS (SELECT 1 FROM events u JOIN apis au ON au.id = u.api"
    "                 WHERE au.name = 'cuMemUnmap' AND u.result = 0 AND u.id > m.id"
    "                 AND u.ptr <= m.ptr AND m.ptr < u.ptr + u.size)";

static int two_ints(struct gt_trace *t, const char *sql, int64_t *a, int64_t *b)
{
    sqlite3_stmt *st;
    *a = *b = 0;
    int code = gt_trace_prepare_optional(t, sql, &st, "reading imported memory");
    if (code || !st)
        return code;
    int rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        *a = sqlite3_column_int64(st, 0);
        *b = sqlite3_column_int64(st, 1);
        rc = SQLITE_DONE;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading imported memory");
}

/* IPC-opened ranges never closed: the next close of an address ends its open. */
static int ipc_open_at_end(struct gt_trace *t, int64_t *ranges, int64_t *bytes)
{
    sqlite3_stmt *st;
    *ranges = *bytes = 0;
    int code = gt_trace_prepare_optional(t, sql_ipc, &st, "reading imported memory");
    if (code || !st)
        return code;
    struct open { int64_t ptr, size; } *open = NULL;
    size_t n = 0, cap = 0;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t ptr = sqlite3_column_int64(st, 1);
        if (sqlite3_column_int(st, 0)) {
            if (n == cap) {
                cap = cap ? 2 * cap : 16;
                open = gt_xrealloc(open, cap * sizeof *open);
            }
            open[n++] = (struct open){ptr, sqlite3_column_type(st, 2) == SQLITE_NULL ? 0 : sqlite3_column_int64(st, 2)};
            continue;
        }
        for (size_t k = 0; k < n; k++)
            if (open[k].ptr == ptr) {   /* the earliest open of it still open */
                memmove(&open[k], &open[k + 1], (n - k - 1) * sizeof *open);
                n--;
                break;
            }
    }
    sqlite3_finalize(st);
    for (size_t k = 0; k < n; k++) {
        (*ranges)++;
        *bytes += open[k].size > 0 ? open[k].size : 0;
    }
    free(open);
    return rc == SQLITE_DONE ? GT_EXIT_OK : gt_trace_sql_error(t, rc, "reading imported memory");
}

/* Did the program open or import another process's memory at all? The
 * events loaded keep every call, these among them (their kind is none the
 * loader counts): one pass in memory, where each query below scans the
 * events table (2 s of summary's 5.5 on 10 million events). */
static int any_imported(struct gt_ctx *c, int *any)
{
    struct gt_trace *t = &c->t;
    unsigned char opens[256] = {0};
    sqlite3_stmt *st;
    *any = 0;
    int code = gt_trace_prepare_optional(t, "SELECT id FROM apis WHERE name IN ('cudaIpcOpenMemHandle',"
                                            " 'cuIpcOpenMemHandle_v2', 'cuMemImportFromShareableHandle')",
                                         &st, "reading imported memory");
    if (code || !st)
        return code;
    int rc;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        if (id > 0 && id < 256)
            opens[id] = 1;
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return gt_trace_sql_error(t, rc, "reading imported memory");
    for (size_t i = 0; i < t->nev && !*any; i++)
        *any = opens[gt_api_base(t->ev[i].api)] && !t->ev[i].failed;   /* (made during a capture too) */
    return GT_EXIT_OK;
}

int gt_imported_at_end(struct gt_ctx *c, struct gt_imported *out)
{
    memset(out, 0, sizeof *out);
    struct gt_trace *t = &c->t;
    int any, code = any_imported(c, &any);
    if (code || !any)
        return code;
    code = ipc_open_at_end(t, &out->ipc_ranges, &out->ipc_bytes);
    if (!code)
        code = two_ints(t, sql_vmm, &out->vmm_handles, &out->vmm_bytes);
    return code;
}
