/* db.c: the writer's one database layer. Every statement the shim runs is
 * one row of GT_DB_STATEMENTS below: an INSERT is its verb, its table and its
 * columns (db.c builds "VERB INTO table(c, ...) VALUES (:c, ...)"); any other
 * statement is its SQL with :names in the order of its list. Writers bind by
 * name (GT_BIND_INT(EVENT, t_ns, t): a parameter of another statement does
 * not compile) and run a statement with gt_db_run, which applies the one
 * failure policy: the first failure is one stderr line, then every record
 * that is not written is counted as a drop by reason. Writer thread only.
 * A new column: the schema, its row here, and the one place that binds it. */
#ifndef GPUTRACE_DB_H
#define GPUTRACE_DB_H

#include <stdbool.h>
#include <stdint.h>

#include "shim.h"

/* Parameters of each statement, in order: P(STATEMENT, column) */
#define GT_P_EVENT(P) P(EVENT, t_ns) P(EVENT, api) P(EVENT, ptr) P(EVENT, size) P(EVENT, device) \
    P(EVENT, stream) P(EVENT, tid) P(EVENT, result) P(EVENT, stack_id)
#define GT_P_MAPPING(P) P(MAPPING, event_id) P(MAPPING, handle)
#define GT_P_GRAPH_CALL(P) P(GRAPH_CALL, event_id) P(GRAPH_CALL, captured)
#define GT_P_STACK(P) P(STACK, id) P(STACK, depth) P(STACK, hash)
#define GT_P_STACK_FRAME(P) P(STACK_FRAME, stack_id) P(STACK_FRAME, level) P(STACK_FRAME, frame_id)
#define GT_P_FRAME(P) P(FRAME, id) P(FRAME, ip) P(FRAME, module) P(FRAME, module_offset) P(FRAME, function) \
    P(FRAME, symbol_offset) P(FRAME, file) P(FRAME, line) P(FRAME, kind)
#define GT_P_THREAD(P) P(THREAD, tid) P(THREAD, name)
#define GT_P_DROP(P) P(DROP, reason) P(DROP, count) P(DROP, meaning)
#define GT_P_PROCESS(P) P(PROCESS, id) P(PROCESS, pid) P(PROCESS, ppid) P(PROCESS, host) P(PROCESS, command_line) \
    P(PROCESS, exe) P(PROCESS, rank) P(PROCESS, local_rank) P(PROCESS, world_size) P(PROCESS, start_unix_ns) P(PROCESS, start_mono_ns) \
    P(PROCESS, library_version) P(PROCESS, schema_version) P(PROCESS, stack_depth)
#define GT_P_PROCESS_COUNTERS(P) P(PROCESS_COUNTERS, events_recorded) P(PROCESS_COUNTERS, events_dropped) \
    P(PROCESS_COUNTERS, peak_device_bytes)
#define GT_P_PROCESS_END(P) P(PROCESS_END, end_ns) P(PROCESS_END, end_reason)
#define GT_P_PROCESS_REOPEN(P)
#define GT_P_RANGE(P) P(RANGE, id) P(RANGE, source) P(RANGE, kind) P(RANGE, domain) P(RANGE, message) P(RANGE, tid) \
    P(RANGE, start_ns) P(RANGE, depth) P(RANGE, parent_id) P(RANGE, batch_size)
#define GT_P_RANGE_END(P) P(RANGE_END, end_ns) P(RANGE_END, id)
#define GT_P_MARK(P) P(MARK, source) P(MARK, domain) P(MARK, message) P(MARK, tid) P(MARK, t_ns)
#define GT_P_ITERATION(P) P(ITERATION, idx) P(ITERATION, batch_size) P(ITERATION, t_ns) P(ITERATION, tid)
#define GT_P_NOTE(P) P(NOTE, t_ns) P(NOTE, component) P(NOTE, message)
#define GT_P_DEVICE(P) P(DEVICE, id) P(DEVICE, name) P(DEVICE, uuid) P(DEVICE, total_bytes) P(DEVICE, cc_major) \
    P(DEVICE, cc_minor) P(DEVICE, pci_bus_id) P(DEVICE, driver_version) P(DEVICE, runtime_version)
#define GT_P_SAMPLE(P) P(SAMPLE, t_ns) P(SAMPLE, device) P(SAMPLE, used_bytes) P(SAMPLE, total_bytes) \
    P(SAMPLE, process_bytes) P(SAMPLE, reserved_bytes) P(SAMPLE, others_bytes)
#define GT_P_KERNEL(P) P(KERNEL, start_ns) P(KERNEL, end_ns) P(KERNEL, device) P(KERNEL, stream_id) \
    P(KERNEL, correlation_id) P(KERNEL, name_id) P(KERNEL, grid_x) P(KERNEL, grid_y) P(KERNEL, grid_z) \
    P(KERNEL, block_x) P(KERNEL, block_y) P(KERNEL, block_z) P(KERNEL, shared_bytes) P(KERNEL, registers)
#define GT_P_MEMCPY(P) P(MEMCPY, start_ns) P(MEMCPY, end_ns) P(MEMCPY, device) P(MEMCPY, stream_id) \
    P(MEMCPY, correlation_id) P(MEMCPY, kind) P(MEMCPY, bytes)
#define GT_P_MEMSET(P) P(MEMSET, start_ns) P(MEMSET, end_ns) P(MEMSET, device) P(MEMSET, stream_id) \
    P(MEMSET, correlation_id) P(MEMSET, bytes) P(MEMSET, value)
#define GT_P_DRIVER_MEMORY(P) P(DRIVER_MEMORY, t_ns) P(DRIVER_MEMORY, op) P(DRIVER_MEMORY, memory_kind) \
    P(DRIVER_MEMORY, address) P(DRIVER_MEMORY, bytes) P(DRIVER_MEMORY, device) P(DRIVER_MEMORY, stream_id) \
    P(DRIVER_MEMORY, correlation_id) P(DRIVER_MEMORY, is_async) P(DRIVER_MEMORY, pool_address) \
    P(DRIVER_MEMORY, pool_size) P(DRIVER_MEMORY, pool_used)
#define GT_P_MEMORY_POOL(P) P(MEMORY_POOL, t_ns) P(MEMORY_POOL, op) P(MEMORY_POOL, pool_type) P(MEMORY_POOL, address) \
    P(MEMORY_POOL, size) P(MEMORY_POOL, utilized_size) P(MEMORY_POOL, release_threshold) \
    P(MEMORY_POOL, min_bytes_to_keep) P(MEMORY_POOL, device) P(MEMORY_POOL, correlation_id)
#define GT_P_GRAPH_MEMORY(P) P(GRAPH_MEMORY, t_ns) P(GRAPH_MEMORY, device) P(GRAPH_MEMORY, reserved_bytes) \
    P(GRAPH_MEMORY, used_bytes)
#define GT_P_WINDOW(P) P(WINDOW, window_ns) P(WINDOW, interval_ns)
#define GT_P_WINDOW_FROM(P) P(WINDOW_FROM, complete_from_ns)
#define GT_P_SUMMARY(P) P(SUMMARY, start_ns) P(SUMMARY, end_ns) P(SUMMARY, memory) P(SUMMARY, device) \
    P(SUMMARY, peak_bytes) P(SUMMARY, end_bytes) P(SUMMARY, allocs) P(SUMMARY, frees) P(SUMMARY, failed)
#define GT_P_PRUNE_RANGE(P) P(PRUNE_RANGE, lo) P(PRUNE_RANGE, hi)
#define GT_P_PRUNE_ROW(P) P(PRUNE_ROW, id)
#define GT_P_PRUNE_GRAPH_RANGE(P) P(PRUNE_GRAPH_RANGE, lo) P(PRUNE_GRAPH_RANGE, hi)
#define GT_P_PRUNE_GRAPH_ROW(P) P(PRUNE_GRAPH_ROW, id)
#define GT_P_STRING(P) P(STRING, text)
#define GT_P_STRING_ID(P) P(STRING_ID, text)

/* INSERT(NAME, verb, table) | SQL(NAME, text); the parameters are GT_P_NAME. */
#define GT_DB_STATEMENTS(INSERT, SQL) \
    INSERT(EVENT, "INSERT", "events") \
    INSERT(MAPPING, "INSERT", "mappings") \
    INSERT(GRAPH_CALL, "INSERT OR REPLACE", "graph_calls") \
    INSERT(STACK, "INSERT OR IGNORE", "stacks") \
    INSERT(STACK_FRAME, "INSERT OR IGNORE", "stack_frames") \
    INSERT(FRAME, "INSERT", "frames") \
    INSERT(THREAD, "INSERT OR REPLACE", "threads") \
    INSERT(DROP, "INSERT OR REPLACE", "drops") \
    INSERT(PROCESS, "INSERT", "processes") \
    SQL(PROCESS_COUNTERS, "UPDATE processes SET events_recorded = :events_recorded, " \
                          "events_dropped = :events_dropped, peak_device_bytes = :peak_device_bytes") \
    SQL(PROCESS_END, "UPDATE processes SET end_ns = :end_ns, end_reason = :end_reason") \
    SQL(PROCESS_REOPEN, "UPDATE processes SET end_ns = NULL, end_reason = NULL") \
    INSERT(RANGE, "INSERT", "ranges") \
    SQL(RANGE_END, "UPDATE ranges SET end_ns = :end_ns WHERE id = :id") \
    INSERT(MARK, "INSERT", "marks") \
    INSERT(ITERATION, "INSERT", "iterations") \
    INSERT(NOTE, "INSERT", "notes") \
    INSERT(DEVICE, "INSERT OR REPLACE", "devices") \
    INSERT(SAMPLE, "INSERT", "memory_samples") \
    INSERT(KERNEL, "INSERT", "kernels") \
    INSERT(MEMCPY, "INSERT", "memcpys") \
    INSERT(MEMSET, "INSERT", "memsets") \
    INSERT(DRIVER_MEMORY, "INSERT", "driver_memory") \
    INSERT(MEMORY_POOL, "INSERT", "memory_pools") \
    INSERT(GRAPH_MEMORY, "INSERT", "graph_memory") \
    INSERT(STRING, "INSERT OR IGNORE", "strings") \
    SQL(WINDOW, "INSERT INTO flight_recorder(window_ns, interval_ns, complete_from_ns) " \
                "VALUES (:window_ns, :interval_ns, 0)") \
    SQL(WINDOW_FROM, "UPDATE flight_recorder SET complete_from_ns = :complete_from_ns") \
    INSERT(SUMMARY, "INSERT", "interval_summaries") \
    SQL(PRUNE_RANGE, "DELETE FROM events WHERE id > :lo AND id < :hi " \
                     "AND api NOT IN (SELECT id FROM apis WHERE op IN ('map', 'unmap', 'defer'))") \
    SQL(PRUNE_ROW, "DELETE FROM events WHERE id = :id") \
    /* graph_calls rows go with their events (an events id can be handed out \
     * again once the highest rows are gone: a stale row would mark another) */ \
    SQL(PRUNE_GRAPH_RANGE, "DELETE FROM graph_calls WHERE event_id > :lo AND event_id < :hi " \
                           "AND event_id NOT IN (SELECT id FROM events WHERE id > :lo AND id < :hi)") \
    SQL(PRUNE_GRAPH_ROW, "DELETE FROM graph_calls WHERE event_id = :id") \
    SQL(STRING_ID, "SELECT id FROM strings WHERE text = :text")

#define GT_DB_ID_(name, ...) GT_ST_##name,
enum gt_stmt { GT_DB_STATEMENTS(GT_DB_ID_, GT_DB_ID_) GT_ST_COUNT };
#define GT_DB_PARAM_(st, col) GT_##st##_##col,
#define GT_DB_PARAMS_(name, ...) enum { GT_P_##name(GT_DB_PARAM_) GT_##name##_nparams };
GT_DB_STATEMENTS(GT_DB_PARAMS_, GT_DB_PARAMS_)

/* Not a record of its own (a thread name, a stack, a counter): when the file
 * cannot be written its loss is part of the failure already reported. */
#define GT_NOT_A_RECORD GT_DROP_COUNT

/* The connection */
bool gt_db_open(const char *path);   /* false: one stderr line, nothing open */
bool gt_db_prepare(void);            /* every statement; after the schema exists */
bool gt_db_exec(const char *sql);    /* under the failure policy */
int gt_db_begin(void);   /* 1 open, 0 locked by another connection (retry later), -1 failed */
void gt_db_give_up(const char *why);   /* stop writing: one stderr line, the rest counted as dropped */
void gt_db_close(bool finished);     /* finalize, (rollback journal again,) close */
void gt_db_forget(void);             /* fork child: the parent's connection is abandoned, never closed */
bool gt_db_failed(void);             /* a write failed since the file was opened */
bool gt_db_write_failed(void);       /* ...and its line did not say the trace is incomplete (a full disk) */
void gt_db_clear_failure(void);      /* the file could not be initialised: tracing is off anyway */
void gt_db_initialising(bool on);    /* failures meanwhile are said by the writer, once */
const char *gt_db_errmsg(void);
int64_t gt_db_last_rowid(void);
int64_t gt_db_max_rowid(const char *table); /* 0: empty (or failed) */

/* Binding, by name through the macros below. Text is copied (NULL binds NULL). */
void gt_db_bind_int(enum gt_stmt s, int param, int64_t v);
void gt_db_bind_int_or_null(enum gt_stmt s, int param, bool present, int64_t v);
void gt_db_bind_text(enum gt_stmt s, int param, const char *text);
#define GT_BIND_INT(ST, COL, v) gt_db_bind_int(GT_ST_##ST, GT_##ST##_##COL, (int64_t)(v))
#define GT_BIND_OPT(ST, COL, present, v) gt_db_bind_int_or_null(GT_ST_##ST, GT_##ST##_##COL, (present), (int64_t)(v))
#define GT_BIND_TEXT(ST, COL, text) gt_db_bind_text(GT_ST_##ST, GT_##ST##_##COL, (text))

/* Runs a bound statement and clears its bindings. False: not written; then
 * (the one failure policy) the first failure printed one stderr line and
 * marked the file failed, and `lost` (a drop reason, or GT_NOT_A_RECORD) was
 * counted. After a failure nothing more is written: each run just counts. */
bool gt_db_run(enum gt_stmt s, int lost);
/* A bound SELECT: the first column of its first row, 0 if none. */
int64_t gt_db_query_int(enum gt_stmt s);

#endif
