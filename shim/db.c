/* The writer's one database layer: the connection, every statement prepared
 * in one place from the table in db.h, binding by name, and one failure
 * policy. A statement or exec that fails prints one stderr line (the first
 * time), marks the file failed, and counts the record it carried as a drop by
 * reason; from then on runs only count. Writer thread only. */
#include <sqlite3.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "db.h"
#include "vfs.h"

#define GT_DB_NAME_(st, col) #col,
#define GT_DB_INSERT_ROW_(name, verb, table) \
    {#name, verb, table, NULL, (const char *const[]){GT_P_##name(GT_DB_NAME_) NULL}},
#define GT_DB_SQL_ROW_(name, text) {#name, NULL, NULL, text, (const char *const[]){GT_P_##name(GT_DB_NAME_) NULL}},

static const struct statement {
    const char *name;
    const char *verb, *table;  /* an INSERT built from the parameters */
    const char *sql;           /* or the statement as written */
    const char *const *params; /* :names, in order, NULL-terminated */
} statements[GT_ST_COUNT] = {GT_DB_STATEMENTS(GT_DB_INSERT_ROW_, GT_DB_SQL_ROW_)};

static struct {
    sqlite3 *db;
    const char *path;
    sqlite3_stmt *st[GT_ST_COUNT];
    bool failed;
    bool initialising; /* a failure is the writer's one "cannot initialise" line, not ours */
    bool said_incomplete; /* fail()'s line said the trace is incomplete: nothing more to say at exit */
} D;

/* The failure policy's one line. */
static void fail(const char *what)
{
    if (D.failed)
        return;
    D.failed = true;
    if (D.initialising)
        return;
    D.said_incomplete = gt_vfs_file_swapped() || gt_vfs_file_lost();
    if (gt_vfs_file_swapped())
        gt_eprintf("gputrace: a file beside trace %s (its -wal or -journal) is a link or was replaced; nothing "
                        "was written to it, tracing stopped, the program continues\n", D.path);
    else if (gt_vfs_file_lost())
        gt_eprintf("gputrace: the program closed the trace file's descriptor and reused its number; tracing "
                        "stopped so that nothing is written into the program's files (%s is incomplete), the "
                        "program continues\n", D.path);
    else
        gt_eprintf("gputrace: writing trace %s failed (%.40s: %s); further events are counted as dropped, the "
                        "program continues\n", D.path, what, D.db ? sqlite3_errmsg(D.db) : "no database");
}

/* SQLite's unix files open by a full path of at most 512 bytes, the
 * -journal's name included (the analyzer's trace.c says the same of a trace
 * it cannot open): a trace made in a deep directory could not open, and the
 * line said only "unable to open database file" (a helper's probe). */
#define SQLITE_PATH_MAX 504

static size_t full_path_length(const char *path)
{
    char cwd[4096];
    size_t n = strlen(path);
    if (path[0] != '/')
        n += getcwd(cwd, sizeof cwd) ? strlen(cwd) + 1 : 0;
    return n;
}

bool gt_db_open(const char *path)
{
    D.path = path;
    /* SQLite reads a name beginning with "file:" as a URI where its build
     * turns URIs on (Debian's): GPUTRACE_OUTPUT=file:x.db opened x.db's
     * creating name elsewhere and turned tracing off. Such a relative name
     * goes as ./NAME (on the writer thread: one open at a time). */
    static char name[4096];
    const char *open_as = path;
    if (!strncmp(path, "file:", 5) && (size_t)snprintf(name, sizeof name, "./%s", path) < sizeof name)
        open_as = name;
    if (sqlite3_open_v2(open_as, &D.db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, gt_vfs_name()) != SQLITE_OK) {
        struct stat st;
        if (gt_vfs_file_swapped() || (lstat(path, &st) == 0 && S_ISLNK(st.st_mode)))
            gt_eprintf("gputrace: trace file %s was replaced (a link or another file put at its name) between "
                            "its creation and its opening; nothing was written to it, tracing is off, the program "
                            "continues\n", path);
        else if (full_path_length(path) > SQLITE_PATH_MAX)
            gt_eprintf("gputrace: cannot open trace file %s: its full path is %zu bytes, and SQLite opens none over "
                       "%d; tracing is off, the program continues (set GPUTRACE_OUTPUT to a shorter path)\n", path,
                       full_path_length(path), SQLITE_PATH_MAX);
        else
            gt_eprintf("gputrace: cannot open trace file %s: %s; tracing is off, the program continues\n", path,
                    D.db ? sqlite3_errmsg(D.db) : "out of memory");
        sqlite3_close(D.db);
        D.db = NULL;
        return false;
    }
    sqlite3_busy_timeout(D.db, 2000);
    return true;
}

bool gt_db_exec(const char *sql)
{
    char *err = NULL;
    if (sqlite3_exec(D.db, sql, NULL, NULL, &err) != SQLITE_OK) {
        sqlite3_free(err);
        fail(sql);
        return false;
    }
    return true;
}

/* "VERB INTO table(a, b) VALUES (:a, :b)" */
static void build_insert(const struct statement *s, char *out, size_t cap)
{
    size_t n = (size_t)snprintf(out, cap, "%s INTO %s(", s->verb, s->table);
    for (int pass = 0; pass < 2; pass++) {
        for (int i = 0; s->params[i] && n < cap; i++)
            n += (size_t)snprintf(out + n, cap - n, "%s%s%s", i ? ", " : "", pass ? ":" : "", s->params[i]);
        if (n < cap)
            n += (size_t)snprintf(out + n, cap - n, pass ? ")" : ") VALUES (");
    }
}

/* Prepares every statement and checks that its :names are the ones db.h
 * binds, in order (a mismatch is a bug in db.h: the open fails, loudly). */
bool gt_db_prepare(void)
{
    char sql[2048];
    for (int i = 0; i < GT_ST_COUNT; i++) {
        const struct statement *s = &statements[i];
        if (s->sql)
            snprintf(sql, sizeof sql, "%s", s->sql);
        else
            build_insert(s, sql, sizeof sql);
        if (sqlite3_prepare_v3(D.db, sql, -1, SQLITE_PREPARE_PERSISTENT, &D.st[i], NULL) != SQLITE_OK) {
            fail("prepare");
            return false;
        }
        int n = 0;
        for (; s->params[n]; n++) {
            const char *p = sqlite3_bind_parameter_name(D.st[i], n + 1);
            if (!p || p[0] != ':' || strcmp(p + 1, s->params[n]) != 0)
                break;
        }
        if (s->params[n] || sqlite3_bind_parameter_count(D.st[i]) != n) {
            gt_eprintf("gputrace: internal error: statement %s does not take the parameters db.h names\n",
                    s->name);
            fail("prepare");
            return false;
        }
    }
    return true;
}

static void finalize_all(void)
{
    for (int i = 0; i < GT_ST_COUNT; i++) {
        sqlite3_finalize(D.st[i]);
        D.st[i] = NULL;
    }
}

/* Opens the writer's transaction, taking the write lock now (IMMEDIATE), so
 * that a lock held by another connection (a reader that began writing) is met
 * here, before any record is taken off the queue. 1: open; 0: the file is
 * locked by another connection, nothing happened, try again later; -1: failed
 * (the failure policy said so). */
/* Stops writing for a reason of our own (one line, like any failure): what
 * is still queued is counted as dropped. */
void gt_db_give_up(const char *why)
{
    if (D.failed)
        return;
    D.failed = true;
    gt_eprintf("gputrace: writing trace %s stopped: %s; what was not written is counted as dropped, the "
                    "program continues\n", D.path, why);
}

int gt_db_begin(void)
{
    sqlite3_busy_timeout(D.db, 20);
    int rc = sqlite3_exec(D.db, "BEGIN IMMEDIATE", NULL, NULL, NULL);
    sqlite3_busy_timeout(D.db, 2000);
    if (rc == SQLITE_OK)
        return 1;
    if ((rc & 0xff) == SQLITE_BUSY || (rc & 0xff) == SQLITE_LOCKED)
        return 0;
    fail("BEGIN");
    return -1;
}

/* finished: the trace is complete; leave one self-contained file (readers
 * need no -wal/-shm beside it, and a read-only copy stays readable) unless a
 * write failed. Else (the file could not be initialised) just close. */
void gt_db_close(bool finished)
{
    finalize_all();
    /* Back to one self-contained file; needs the file to ourselves: while
     * another connection has it open the trace stays in WAL mode (complete,
     * with its -wal beside it), which is no failure. */
    if (finished && !D.failed)
        sqlite3_exec(D.db, "PRAGMA journal_mode=DELETE", NULL, NULL, NULL);
    if (sqlite3_close(D.db) != SQLITE_OK && finished)
        fail("close");
    D.db = NULL;
}

/* While on, a failure marks the file failed but says nothing: the writer
 * says in one line that the file could not be initialised, and why. */
void gt_db_initialising(bool on)
{
    D.initialising = on;
}

/* Fork child: the parent's connection is abandoned, never closed (closing
 * would touch the parent's file locks). Its memory stays reachable from
 * here, so that LeakSanitizer's exit check in a child (the address stage
 * of scripts/test.sh) tells this one deliberate abandonment from a leak;
 * a child forked again abandons the newer one, the older stays lost. */
static sqlite3 *volatile abandoned_after_fork; /* volatile: a store never read is kept */

void gt_db_forget(void)
{
    if (D.db)
        abandoned_after_fork = D.db;
    memset(&D, 0, sizeof D);
}

bool gt_db_write_failed(void)
{
    return D.failed && !D.said_incomplete;
}

bool gt_db_failed(void)
{
    return D.failed;
}

void gt_db_clear_failure(void)
{
    D.failed = D.said_incomplete = false;
}

const char *gt_db_errmsg(void)
{
    return D.db ? sqlite3_errmsg(D.db) : "no database";
}

int64_t gt_db_last_rowid(void)
{
    return sqlite3_last_insert_rowid(D.db);
}

void gt_db_bind_int(enum gt_stmt s, int param, int64_t v)
{
    sqlite3_bind_int64(D.st[s], param + 1, v);
}

void gt_db_bind_int_or_null(enum gt_stmt s, int param, bool present, int64_t v)
{
    if (present)
        sqlite3_bind_int64(D.st[s], param + 1, v);
    else
        sqlite3_bind_null(D.st[s], param + 1);
}

void gt_db_bind_text(enum gt_stmt s, int param, const char *text)
{
    if (text)
        sqlite3_bind_text(D.st[s], param + 1, text, -1, SQLITE_TRANSIENT);
    else
        sqlite3_bind_null(D.st[s], param + 1);
}

static void lose(int lost)
{
    if (lost >= 0 && lost < GT_DROP_COUNT)
        gt_drop(lost);
}

bool gt_db_run(enum gt_stmt s, int lost)
{
    sqlite3_stmt *st = D.st[s];
    if (D.failed || !st) {
        if (st)
            sqlite3_clear_bindings(st);
        lose(lost);
        return false;
    }
    int rc = sqlite3_step(st);
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    if (rc != SQLITE_DONE && rc != SQLITE_ROW) {
        fail(statements[s].name);
        lose(lost);
        return false;
    }
    return true;
}

/* The flight recorder's checkpoints (window.c): the last row of a table. */
int64_t gt_db_max_rowid(const char *table)
{
    char sql[128];
    sqlite3_stmt *st = NULL;
    snprintf(sql, sizeof sql, "SELECT coalesce(max(rowid), 0) FROM %s", table);
    if (D.failed || sqlite3_prepare_v2(D.db, sql, -1, &st, NULL) != SQLITE_OK) {
        sqlite3_finalize(st);
        return 0;
    }
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_finalize(st);
    return v;
}

int64_t gt_db_query_int(enum gt_stmt s)
{
    sqlite3_stmt *st = D.st[s];
    if (D.failed || !st)
        return 0;
    int64_t v = sqlite3_step(st) == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    sqlite3_reset(st);
    sqlite3_clear_bindings(st);
    return v;
}
