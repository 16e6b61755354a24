/* trace.c - the analyzer's only window on SQL: opens a trace read-only,
 * recognises it (application_id, user_version, header sanity), and turns
 * every SQLite error into one of the documented exit statuses (events are
 * loaded in trace_events.c). */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "json.h"   /* gt_utf8_len */
#include "schema_sql.h"
#include "trace.h"

/* The message is printed as one stderr line: a control character in it
 * (a file name's newline) becomes a space. */
int gt_trace_fail(struct gt_trace *t, int code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->err, sizeof t->err, fmt, ap);
    va_end(ap);
    for (char *c = t->err; *c; c++)
        if ((unsigned char)*c < 0x20 || *c == 0x7f)
            *c = ' ';
    return code;
}

/* A SQLite message made fit for that one line: a corrupt schema's SQL text
 * (lines of it, any bytes) comes back inside "malformed database schema"
 * messages. Runs of control characters and spaces become one space, a byte
 * that begins no well-formed UTF-8 sequence '?', and the text ends after
 * about 120 bytes with "...". */
static const char *one_line(const char *msg, char *out, size_t cap)
{
    const unsigned char *p = (const unsigned char *)msg;
    size_t o = 0;
    while (*p && o + 8 < cap) {
        if (o >= 120) {
            memcpy(out + o, "...", 3);
            o += 3;
            break;
        }
        if (*p <= 0x20 || *p == 0x7f) {
            if (o && out[o - 1] != ' ')
                out[o++] = ' ';
            p++;
        } else if (*p < 0x80) {
            out[o++] = (char)*p++;
        } else {
            int n = gt_utf8_len(p);
            if (!n) {
                out[o++] = '?';
                p++;
            } else {
                memcpy(out + o, p, (size_t)n);
                o += (size_t)n;
                p += n;
            }
        }
    }
    out[o] = 0;
    return out;
}

/* Maps a SQLite error (rc, its message) met while doing `what` to an exit
 * status and a message saying what to do. */
/* SQLite's unix files open by full path of at most 512 bytes, its -journal
 * and -wal names included: a longer one cannot open (the path's length, or
 * 0 when it is short enough or not known). */
static size_t too_long(const char *path)
{
    char cwd[4096];
    size_t n = strlen(path);
    if (path[0] != '/')
        n += getcwd(cwd, sizeof cwd) ? strlen(cwd) + 1 : 0;
    return n > GT_SQLITE_PATH_MAX ? n : 0;
}

int gt_trace_sql_fail_msg(struct gt_trace *t, int rc, const char *raw, const char *what)
{
    char buf[160];
    const char *msg = one_line(raw, buf, sizeof buf);
    size_t long_path = (rc & 0xff) == SQLITE_CANTOPEN && t->path ? too_long(t->path) : 0;
    if (long_path)
        return gt_trace_fail(t, GT_EXIT_MISSING, "cannot open the trace: its full path is %zu bytes, and SQLite opens "
                    "none over %d; move or copy it to a shorter path", long_path, GT_SQLITE_PATH_MAX);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return gt_trace_fail(t, GT_EXIT_MISSING, "trace is locked while %s (%s); wait until the traced process has exited", what, msg);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return gt_trace_fail(t, GT_EXIT_MISSING, "cannot open the trace while %s (%s); check permissions of the file and its directory (WAL traces need their -wal/-shm files)", what, msg);
    case SQLITE_NOMEM:
        return gt_trace_fail(t, GT_EXIT_NOMEM, "out of memory while %s", what);
    case SQLITE_ERROR:
        if (strstr(msg, "no such table") || strstr(msg, "no such column"))
            return gt_trace_fail(t, GT_EXIT_CORRUPT, "incomplete trace: %s while %s; the trace was not fully written, re-run the traced program", msg, what);
        /* fall through */
    default:
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "corrupt or truncated trace (%s while %s); re-run the traced program to get a complete trace", msg, what);
    }
}

static int sql_fail(struct gt_trace *t, int rc, const char *what)
{
    return gt_trace_sql_fail_msg(t, rc, t->db ? sqlite3_errmsg(t->db) : sqlite3_errstr(rc), what);
}

static uint32_t be32(const unsigned char *p)
{
    return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

/* The shim creates a trace as NAME.creating-PID and names it NAME once its
 * schema is committed: a process killed in between leaves that file, which
 * holds no event (and, if killed mid-transaction, its -journal). The pid in
 * such a name (path ends in .creating-PID or .creating-PID-journal), or 0. */
static long creating_pid(const char *path)
{
    const char *m = strstr(path, ".creating-");
    while (m && strstr(m + 1, ".creating-"))
        m = strstr(m + 1, ".creating-");
    if (!m || !m[10])
        return 0;
    char *end;
    long pid = strtol(m + 10, &end, 10);
    if (*end == '.' && end[1] >= '0' && end[1] <= '9')   /* NAME.creating-PID.N: the name was taken */
        strtol(end + 1, &end, 10);
    return (*end == 0 || strcmp(end, "-journal") == 0) && pid > 0 ? pid : 0;
}

/* Checks the file before SQLite sees it: present, regular, readable, a SQLite
 * header, and not shorter than the size its header records. SQLite itself
 * reads a truncated file without complaint until it touches a missing page,
 * which might be never for a given query: a silently wrong report. */
static int check_file(struct gt_trace *t, const char *path)
{
    struct stat st;
    long pid = creating_pid(path);
    if (pid && stat(path, &st) == 0) {
        long by = gt_file_writer_pid(path, pid);
        if (by > 0)
            return gt_trace_fail(t, GT_EXIT_EMPTY, "a trace still being created: process %ld has it open and has written "
                        "no events yet; try again in a moment", by);
        return gt_trace_fail(t, GT_EXIT_EMPTY, "an unfinished trace file, with no events: its process (pid %ld) ended "
                    "(killed?) while creating it, before the first events were written; delete it", pid);
    }
    if (stat(path, &st) != 0) {
        int err = errno;
        char pattern[4200];
        glob_t g;
        snprintf(pattern, sizeof pattern, "%s.creating-*", path);
        if (err == ENOENT && glob(pattern, 0, NULL, &g) == 0) { /* sorted: NAME.creating-PID before its -journal */
            long by = gt_file_writer_pid(g.gl_pathv[0], creating_pid(g.gl_pathv[0]));
            if (by > 0)
                gt_trace_fail(t, GT_EXIT_MISSING, "not there yet: process %ld is creating it (%s) and has written no "
                              "events yet; try again in a moment", by, g.gl_pathv[0]);
            else
                gt_trace_fail(t, GT_EXIT_MISSING, "no such file, but %s is there: the traced process ended (killed?) while creating "
                 "the trace, before the first events were written; delete it", g.gl_pathv[0]);
            globfree(&g);
            return GT_EXIT_MISSING;
        }
        return gt_trace_fail(t, GT_EXIT_MISSING, err == ENOENT ? "no such file; give the path of a trace written by libgputrace.so (GPUTRACE_OUTPUT)"
                                                      : "cannot access the file (%s)", strerror(err));
    }
    if (S_ISDIR(st.st_mode))
        return gt_trace_fail(t, GT_EXIT_MISSING, "is a directory, not a trace file; give the trace files in it "
                                                 "(DIR/*.db)");
    if (!S_ISREG(st.st_mode))
        return gt_trace_fail(t, GT_EXIT_MISSING, "is not a regular file");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return gt_trace_fail(t, GT_EXIT_MISSING, "cannot read the file (%s)", strerror(errno));
    unsigned char h[100];
    ssize_t got = read(fd, h, sizeof h);
    close(fd);
    if (got < 0)
        return gt_trace_fail(t, GT_EXIT_MISSING, "cannot read the file (%s)", strerror(errno));
    if (st.st_size == 0)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "empty file (0 bytes), not a complete trace; was the traced process killed before its first write?");
    if (got < (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "not a SQLite database, so not a gputrace trace; give a .db file written by libgputrace.so");
    uint32_t page = (uint32_t)h[16] << 8 | h[17];
    if (page == 1)
        page = 65536;
    uint32_t pages = be32(h + 28), change = be32(h + 24), valid_for = be32(h + 92);
    if (page < 512 || (page & (page - 1)))
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "corrupt SQLite header (page size %u); re-run the traced program", page);
    if (h[18] == 2 && h[19] == 2) {
        /* WAL mode: the trace was not closed (the shim closes it in rollback
         * mode). Its newest pages, the header's page count included, live in
         * the -wal file until a checkpoint, so the sizes below say nothing:
         * SQLite reads what was committed through the WAL. */
        char wal[4096];
        struct stat ws;
        snprintf(wal, sizeof wal, "%s-wal", path);
        t->wal_missing = stat(wal, &ws) != 0 || ws.st_size == 0;
        if (!t->wal_missing) {
            /* A whole -wal is its 32-byte header and frames of 24 bytes and
             * a page each; SQLite reads up to the last whole commit and says
             * nothing of the rest (a helper's probe: a -wal cut short by 552
             * bytes read as "ended before its first events were written") */
            unsigned char wh[32];
            int wfd = open(wal, O_RDONLY | O_CLOEXEC);
            ssize_t wgot = wfd >= 0 ? read(wfd, wh, sizeof wh) : -1;
            if (wfd >= 0)
                close(wfd);
            uint32_t wpage = wgot == (ssize_t)sizeof wh ? be32(wh + 8) : 0;
            if (wpage >= 512 && wpage <= 65536 && !(wpage & (wpage - 1)))
                t->wal_cut = (ws.st_size - 32) % (24 + (off_t)wpage) != 0;
            else
                t->wal_cut = ws.st_size < 32 || wgot == (ssize_t)sizeof wh;   /* no header, or a broken one */
            return GT_EXIT_OK;
        }
    }
    if (pages && change == valid_for && (uint64_t)st.st_size < (uint64_t)pages * page)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "truncated trace: %lld bytes but its header says %llu; the file was cut short (copied while written, or disk full), re-run the traced program",
                    (long long)st.st_size, (unsigned long long)pages * page);
    if (st.st_size % page)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "truncated trace: %lld bytes is not a whole number of %u-byte pages; re-run the traced program",
                    (long long)st.st_size, page);
    return GT_EXIT_OK;
}

char *gt_col_text(sqlite3_stmt *st, int i)
{
    const unsigned char *s = sqlite3_column_text(st, i);
    return s ? gt_xstrdup((const char *)s) : NULL;
}

int64_t gt_col_int_or(sqlite3_stmt *st, int i, int64_t dflt)
{
    return sqlite3_column_type(st, i) == SQLITE_NULL ? dflt : sqlite3_column_int64(st, i);
}

/* Runs a one-integer PRAGMA. */
int gt_trace_pragma_int(struct gt_trace *t, const char *sql, int64_t *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(t->db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "reading the header");
    rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int64(st, 0) : 0;
    if (rc != SQLITE_ROW && rc != SQLITE_DONE) {
        sqlite3_finalize(st);
        return sql_fail(t, rc, "reading the header");
    }
    sqlite3_finalize(st);
    return GT_EXIT_OK;
}

static int find_enum(const char *s, const char *const *names, int n)
{
    for (int i = 0; s && i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    return -1;
}

/* Reads the apis table: the trace says what each of its api ids means. */
static int load_apis(struct gt_trace *t)
{
    static const char *const ops[] = {"alloc", "free", "map", "unmap"};
    static const char *const mems[] = {"device", "pool", "managed", "host", "reserve", "mapping"};
    static const char *const spaces[] = {"addr", "handle", "va", "map", "array"};
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(t->db, "SELECT id, name, op, memory, space FROM apis", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "reading the apis table");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        int op = find_enum((const char *)sqlite3_column_text(st, 2), ops, 4);
        int mem = find_enum((const char *)sqlite3_column_text(st, 3), mems, 6);
        int sp = find_enum((const char *)sqlite3_column_text(st, 4), spaces, 5);
        if (id <= 0 || id > 255 || op < 0 || mem < 0 || sp < 0)
            continue;   /* unknown kinds of calls are not counted */
        struct gt_api_attr *a = &t->api[id];
        a->known = 1;
        a->op = (unsigned char)op;
        a->memory = (unsigned char)mem;
        a->space = (unsigned char)sp;
        snprintf(a->name, sizeof a->name, "%s", name ? name : "?");
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : sql_fail(t, rc, "reading the apis table");
}

static int load_process(struct gt_trace *t)
{
    sqlite3_stmt *st;
    /* world_size came with schema 3: older traces are read without it */
    int rc = sqlite3_prepare_v2(t->db, t->schema_version >= 3 ?
        "SELECT pid, ppid, host, command_line, exe, rank, local_rank, start_unix_ns, end_ns, end_reason,"
        " library_version, stack_depth, events_recorded, events_dropped, peak_device_bytes, world_size"
        " FROM processes ORDER BY id LIMIT 1" :
        "SELECT pid, ppid, host, command_line, exe, rank, local_rank, start_unix_ns, end_ns, end_reason,"
        " library_version, stack_depth, events_recorded, events_dropped, peak_device_bytes, NULL"
        " FROM processes ORDER BY id LIMIT 1", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "reading the processes table");
    struct gt_process *p = &t->proc;
    rc = sqlite3_step(st);
    if (rc == SQLITE_ROW) {
        p->present = 1;
        p->pid = gt_col_int_or(st, 0, -1);
        p->ppid = gt_col_int_or(st, 1, -1);
        p->host = gt_col_text(st, 2);
        p->command_line = gt_col_text(st, 3);
        p->exe = gt_col_text(st, 4);
        p->rank = gt_col_int_or(st, 5, -1);
        p->local_rank = gt_col_int_or(st, 6, -1);
        p->start_unix_ns = gt_col_int_or(st, 7, 0);
        p->end_ns = gt_col_int_or(st, 8, -1);
        p->end_reason = gt_col_text(st, 9);
        p->library_version = gt_col_text(st, 10);
        p->stack_depth = gt_col_int_or(st, 11, 0);
        p->events_recorded = gt_col_int_or(st, 12, 0);
        p->events_dropped = gt_col_int_or(st, 13, 0);
        p->peak_device_bytes = gt_col_int_or(st, 14, 0);
        p->world_size = gt_col_int_or(st, 15, -1);
        rc = SQLITE_DONE;
    } else {
        p->pid = p->ppid = p->rank = p->local_rank = p->world_size = p->end_ns = -1;
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : sql_fail(t, rc, "reading the processes table");
}

static int load_devices_and_drops(struct gt_trace *t)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(t->db, "SELECT id, name, total_bytes FROM devices ORDER BY id", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "reading the devices table");
    size_t cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (t->ndevices == cap) {
            cap = cap ? cap * 2 : 8;
            t->devices = gt_xrealloc(t->devices, cap * sizeof *t->devices);
        }
        struct gt_device *d = &t->devices[t->ndevices++];
        d->id = sqlite3_column_int64(st, 0);
        d->name = gt_col_text(st, 1);
        d->total_bytes = gt_col_int_or(st, 2, -1);
    }
    sqlite3_finalize(st);
    if (rc != SQLITE_DONE)
        return sql_fail(t, rc, "reading the devices table");
    rc = sqlite3_prepare_v2(t->db, "SELECT reason, count FROM drops ORDER BY reason", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "reading the drops table");
    cap = 0;
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        if (t->ndrops == cap) {
            cap = cap ? cap * 2 : 8;
            t->drops = gt_xrealloc(t->drops, cap * sizeof *t->drops);
        }
        struct gt_drop *d = &t->drops[t->ndrops++];
        d->reason = gt_col_text(st, 0);
        d->count = sqlite3_column_int64(st, 1);
    }
    sqlite3_finalize(st);
    return rc == SQLITE_DONE ? GT_EXIT_OK : sql_fail(t, rc, "reading the drops table");
}

const char *gt_sqlite_name(const char *path, char *buf, size_t n)
{
    if (strncmp(path, "file:", 5) != 0 || (size_t)snprintf(buf, n, "./%s", path) >= n)
        return path;
    return buf;
}

/* "file:PATH?immutable=1", the path's '%', '?' and '#' escaped; 0 when it
 * does not fit. */
static int immutable_uri(const char *path, char *out, size_t cap)
{
    /* an absolute path after an empty authority: "file:" + "//tmp/x" would name a host */
    size_t n = (size_t)snprintf(out, cap, path[0] == '/' ? "file://" : "file:");
    for (const char *p = path; *p; p++) {
        if (n + 4 >= cap)
            return 0;
        if (*p == '%' || *p == '?' || *p == '#')
            n += (size_t)snprintf(out + n, cap - n, "%%%02X", (unsigned char)*p);
        else
            out[n++] = *p;
    }
    return (size_t)snprintf(out + n, cap - n, "?immutable=1") < cap - n;
}

int gt_trace_open(struct gt_trace *t, const char *path)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    int code = check_file(t, path);
    if (code)
        return code;
    char name[4096], uri[3 * 4096 + 32];
    const char *open_as = gt_sqlite_name(path, name, sizeof name);
    int flags = SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX;
    /* A WAL-mode trace without its -wal (copied without it): opened as
     * immutable, SQLite creates no -wal and -shm beside it (a helper's probe:
     * the analyzer left both in the user's directory, then told them to copy
     * the -wal its run had made, and a trace's name with a -wal beside it is
     * taken by the shim) */
    if (t->wal_missing && immutable_uri(path, uri, sizeof uri)) {
        open_as = uri;
        flags |= SQLITE_OPEN_URI;
    }
    int rc = sqlite3_open_v2(open_as, &t->db, flags, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "opening");
    sqlite3_busy_timeout(t->db, 2000);
    sqlite3_exec(t->db, "PRAGMA query_only = 1; PRAGMA cache_size = -16384", NULL, NULL, NULL);
    /* One read transaction for the whole analysis: a trace still being
     * written is read as one snapshot, taken at the first read below. Each
     * query began its own before, so the iterations, ranges and the trace's
     * end saw rows written after the events were loaded (a helper's probe: an
     * iteration that ended before it began, 22 with no allocation, a live
     * process "died" in its last). The events' other connections
     * (trace_events.c) read ids up to the largest this snapshot holds. */
    if ((rc = sqlite3_exec(t->db, "BEGIN", NULL, NULL, NULL)) != SQLITE_OK)
        return sql_fail(t, rc, "opening");
    int64_t app_id, version;
    if ((code = gt_trace_pragma_int(t, "PRAGMA application_id", &app_id))) {
        /* (in a read-only directory SQLite cannot even read a WAL-mode file
         * without its -wal: it fails here, and the missing -wal is why) */
        if (t->wal_missing)
            return gt_trace_fail(t, GT_EXIT_CORRUPT, "the trace was still being written when its process ended (killed?) and "
                        "its -wal file, which holds what was written, is missing; copy %s-wal together with the trace", path);
        return code;
    }
    long by = app_id == 0 && t->wal_missing ? gt_file_writer_pid(path, 0) : -1;
    if (by > 0)
        return gt_trace_fail(t, GT_EXIT_EMPTY, "a trace still being created: process %ld has it open and has written "
                    "no events yet; try again in a moment", by);
    if (app_id == 0 && t->wal_missing)
        return gt_trace_fail(t, GT_EXIT_CORRUPT, "the trace was still being written when its process ended (killed?) and its "
                    "-wal file, which holds what was written, is missing; copy %s-wal together with the trace", path);
    if (app_id != GT_APPLICATION_ID)
        return gt_trace_fail(t, GT_EXIT_NOT_TRACE, "a SQLite database but not a gputrace trace (application_id %lld, expected %d); give a file written by libgputrace.so",
                    (long long)app_id, GT_APPLICATION_ID);
    if ((code = gt_trace_pragma_int(t, "PRAGMA user_version", &version)))
        return code;
    t->schema_version = version;
    if (version > GT_SCHEMA_VERSION)
        return gt_trace_fail(t, GT_EXIT_NEWER, "trace schema version %lld is newer than this gputrace understands (%d); use the gputrace that came with the libgputrace.so which wrote it",
                    (long long)version, GT_SCHEMA_VERSION);
    if ((code = load_apis(t)) || (code = load_process(t)) || (code = load_devices_and_drops(t)) ||
        (code = gt_trace_recorder(t)))
        return code;
    return GT_EXIT_OK;
}

/* Prepares sql; a missing table (a trace from before the table existed) is
 * reported as *st = NULL with GT_EXIT_OK. */
static int prepare_optional(struct gt_trace *t, const char *sql, sqlite3_stmt **st, const char *what)
{
    int rc = sqlite3_prepare_v2(t->db, sql, -1, st, NULL);
    if (rc == SQLITE_OK)
        return GT_EXIT_OK;
    *st = NULL;
    if ((rc & 0xff) == SQLITE_ERROR && strstr(sqlite3_errmsg(t->db), "no such table"))
        return GT_EXIT_OK;
    return sql_fail(t, rc, what);
}

int64_t gt_trace_device_total(const struct gt_trace *t, int device)
{
    for (size_t i = 0; i < t->ndevices; i++)
        if (t->devices[i].id == device)
            return t->devices[i].total_bytes;
    return -1;
}

void gt_trace_close(struct gt_trace *t)
{
    gt_trace_recorder_free(t);
    gt_trace_frames_free(t);   /* its statement before the connection */
    if (t->db)
        sqlite3_close(t->db);
    free(t->site_ids);
    free(t->ev);
    struct gt_process *p = &t->proc;
    free(p->host);
    free(p->command_line);
    free(p->exe);
    free(p->end_reason);
    free(p->library_version);
    for (size_t i = 0; i < t->ndevices; i++)
        free(t->devices[i].name);
    free(t->devices);
    for (size_t i = 0; i < t->ndrops; i++)
        free(t->drops[i].reason);
    free(t->drops);
    memset(t, 0, sizeof *t);
}

int gt_trace_prepare_optional(struct gt_trace *t, const char *sql, sqlite3_stmt **st, const char *what)
{
    return prepare_optional(t, sql, st, what);
}

int gt_trace_has_rows(struct gt_trace *t, const char *table)
{
    char sql[128];
    sqlite3_stmt *st;
    snprintf(sql, sizeof sql, "SELECT 1 FROM \"%s\" LIMIT 1", table);
    if (sqlite3_prepare_v2(t->db, sql, -1, &st, NULL) != SQLITE_OK)
        return 0;   /* no such table (a trace older than it) */
    int yes = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return yes;
}

int gt_trace_sql_error(struct gt_trace *t, int rc, const char *what)
{
    return sql_fail(t, rc, what);
}

int64_t gt_trace_end_ns(struct gt_trace *t)
{
    if (t->proc.end_ns >= 0)
        return t->proc.end_ns;
    /* not closed (killed): the last thing recorded, of any kind; a job under
     * a caching allocator makes almost no allocation call after its first
     * steps, and its ranges and kernels went on for minutes after the last */
    int64_t end = t->nev ? t->ev[t->nev - 1].t : 0;
    static const char *const sql[] = {
        "SELECT max(coalesce(end_ns, start_ns)) FROM ranges", "SELECT max(t_ns) FROM marks",
        "SELECT max(end_ns) FROM kernels", "SELECT max(end_ns) FROM memcpys", "SELECT max(end_ns) FROM memsets",
        "SELECT max(t_ns) FROM memory_samples", "SELECT max(t_ns) FROM iterations",
    };
    for (size_t k = 0; k < sizeof sql / sizeof *sql; k++) {
        sqlite3_stmt *st;
        if (sqlite3_prepare_v2(t->db, sql[k], -1, &st, NULL) != SQLITE_OK)
            continue;   /* a trace older than the table */
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) == SQLITE_INTEGER) {
            int64_t v = sqlite3_column_int64(st, 0);
            if (v > end)
                end = v;
        }
        sqlite3_finalize(st);
    }
    return end;
}
