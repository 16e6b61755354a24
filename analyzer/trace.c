/* trace.c - the analyzer's only window on SQL: opens a trace read-only,
 * recognises it (application_id, user_version, header sanity), and loads
 * events with one prepared statement into struct gt_event arrays. Every
 * SQLite error is turned into one of the documented exit statuses here. */
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "hmap.h"
#include "json.h"
#include "schema_sql.h"
#include "trace.h"

/* The message is printed as one stderr line: a control character in it
 * (a file name's newline) becomes a space. */
static int fail(struct gt_trace *t, int code, const char *fmt, ...)
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
static int sql_fail_msg(struct gt_trace *t, int rc, const char *raw, const char *what)
{
    char buf[160];
    const char *msg = one_line(raw, buf, sizeof buf);
    switch (rc & 0xff) {
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
        return fail(t, GT_EXIT_MISSING, "trace is locked while %s (%s); wait until the traced process has exited", what, msg);
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_AUTH:
        return fail(t, GT_EXIT_MISSING, "cannot open the trace while %s (%s); check permissions of the file and its directory (WAL traces need their -wal/-shm files)", what, msg);
    case SQLITE_NOMEM:
        return fail(t, GT_EXIT_NOMEM, "out of memory while %s", what);
    case SQLITE_ERROR:
        if (strstr(msg, "no such table") || strstr(msg, "no such column"))
            return fail(t, GT_EXIT_CORRUPT, "incomplete trace: %s while %s; the trace was not fully written, re-run the traced program", msg, what);
        /* fall through */
    default:
        return fail(t, GT_EXIT_CORRUPT, "corrupt or truncated trace (%s while %s); re-run the traced program to get a complete trace", msg, what);
    }
}

static int sql_fail(struct gt_trace *t, int rc, const char *what)
{
    return sql_fail_msg(t, rc, t->db ? sqlite3_errmsg(t->db) : sqlite3_errstr(rc), what);
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
    if (pid && stat(path, &st) == 0)
        return fail(t, GT_EXIT_EMPTY, "an unfinished trace file, with no events: its process (pid %ld) ended (killed?) "
                    "while creating it, before the first events were written; delete it", pid);
    if (stat(path, &st) != 0) {
        int err = errno;
        char pattern[4200];
        glob_t g;
        snprintf(pattern, sizeof pattern, "%s.creating-*", path);
        if (err == ENOENT && glob(pattern, 0, NULL, &g) == 0) { /* sorted: NAME.creating-PID before its -journal */
            fail(t, GT_EXIT_MISSING, "no such file, but %s is there: the traced process ended (killed?) while creating "
                 "the trace, before the first events were written; delete it", g.gl_pathv[0]);
            globfree(&g);
            return GT_EXIT_MISSING;
        }
        return fail(t, GT_EXIT_MISSING, err == ENOENT ? "no such file; give the path of a trace written by libgputrace.so (GPUTRACE_OUTPUT)"
                                                      : "cannot access the file (%s)", strerror(err));
    }
    if (S_ISDIR(st.st_mode))
        return fail(t, GT_EXIT_MISSING, "is a directory, not a trace file");
    if (!S_ISREG(st.st_mode))
        return fail(t, GT_EXIT_MISSING, "is not a regular file");
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return fail(t, GT_EXIT_MISSING, "cannot read the file (%s)", strerror(errno));
    unsigned char h[100];
    ssize_t got = read(fd, h, sizeof h);
    close(fd);
    if (got < 0)
        return fail(t, GT_EXIT_MISSING, "cannot read the file (%s)", strerror(errno));
    if (st.st_size == 0)
        return fail(t, GT_EXIT_CORRUPT, "empty file (0 bytes), not a complete trace; was the traced process killed before its first write?");
    if (got < (ssize_t)sizeof h || memcmp(h, "SQLite format 3", 16) != 0)
        return fail(t, GT_EXIT_CORRUPT, "not a SQLite database, so not a gputrace trace; give a .db file written by libgputrace.so");
    uint32_t page = (uint32_t)h[16] << 8 | h[17];
    if (page == 1)
        page = 65536;
    uint32_t pages = be32(h + 28), change = be32(h + 24), valid_for = be32(h + 92);
    if (page < 512 || (page & (page - 1)))
        return fail(t, GT_EXIT_CORRUPT, "corrupt SQLite header (page size %u); re-run the traced program", page);
    if (h[18] == 2 && h[19] == 2) {
        /* WAL mode: the trace was not closed (the shim closes it in rollback
         * mode). Its newest pages, the header's page count included, live in
         * the -wal file until a checkpoint, so the sizes below say nothing:
         * SQLite reads what was committed through the WAL. */
        char wal[4096];
        struct stat ws;
        snprintf(wal, sizeof wal, "%s-wal", path);
        t->wal_missing = stat(wal, &ws) != 0 || ws.st_size == 0;
        if (!t->wal_missing)
            return GT_EXIT_OK;
    }
    if (pages && change == valid_for && (uint64_t)st.st_size < (uint64_t)pages * page)
        return fail(t, GT_EXIT_CORRUPT, "truncated trace: %lld bytes but its header says %llu; the file was cut short (copied while written, or disk full), re-run the traced program",
                    (long long)st.st_size, (unsigned long long)pages * page);
    if (st.st_size % page)
        return fail(t, GT_EXIT_CORRUPT, "truncated trace: %lld bytes is not a whole number of %u-byte pages; re-run the traced program",
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
static int pragma_int(struct gt_trace *t, const char *sql, int64_t *out)
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
    static const char *const spaces[] = {"addr", "handle", "va", "map"};
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(t->db, "SELECT id, name, op, memory, space FROM apis", -1, &st, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "reading the apis table");
    while ((rc = sqlite3_step(st)) == SQLITE_ROW) {
        int64_t id = sqlite3_column_int64(st, 0);
        const char *name = (const char *)sqlite3_column_text(st, 1);
        int op = find_enum((const char *)sqlite3_column_text(st, 2), ops, 4);
        int mem = find_enum((const char *)sqlite3_column_text(st, 3), mems, 6);
        int sp = find_enum((const char *)sqlite3_column_text(st, 4), spaces, 4);
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

int gt_trace_open(struct gt_trace *t, const char *path)
{
    memset(t, 0, sizeof *t);
    t->path = path;
    int code = check_file(t, path);
    if (code)
        return code;
    int rc = sqlite3_open_v2(path, &t->db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
    if (rc != SQLITE_OK)
        return sql_fail(t, rc, "opening");
    sqlite3_busy_timeout(t->db, 2000);
    sqlite3_exec(t->db, "PRAGMA query_only = 1; PRAGMA cache_size = -16384", NULL, NULL, NULL);
    int64_t app_id, version;
    if ((code = pragma_int(t, "PRAGMA application_id", &app_id)))
        return code;
    if (app_id == 0 && t->wal_missing)
        return fail(t, GT_EXIT_CORRUPT, "the trace was still being written when its process ended (killed?) and its "
                    "-wal file, which holds what was written, is missing; copy %s-wal together with the trace", path);
    if (app_id != GT_APPLICATION_ID)
        return fail(t, GT_EXIT_NOT_TRACE, "a SQLite database but not a gputrace trace (application_id %lld, expected %d); give a file written by libgputrace.so",
                    (long long)app_id, GT_APPLICATION_ID);
    if ((code = pragma_int(t, "PRAGMA user_version", &version)))
        return code;
    t->schema_version = version;
    if (version > GT_SCHEMA_VERSION)
        return fail(t, GT_EXIT_NEWER, "trace schema version %lld is newer than this gputrace understands (%d); use the gputrace that came with the libgputrace.so which wrote it",
                    (long long)version, GT_SCHEMA_VERSION);
    if ((code = load_apis(t)) || (code = load_process(t)) || (code = load_devices_and_drops(t)) ||
        (code = gt_trace_recorder(t)))
        return code;
    return GT_EXIT_OK;
}

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
    int64_t lo, hi;
    struct gt_event *ev;  /* room for hi - lo + 1 events */
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
        rc = sqlite3_open_v2(s->path, &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, NULL);
        if (rc == SQLITE_OK) {
            sqlite3_busy_timeout(db, 2000);
            sqlite3_exec(db, "PRAGMA mmap_size = 0; PRAGMA cache_size = -16384", NULL, NULL, NULL);
        }
    }
    if (rc == SQLITE_OK)
        rc = sqlite3_prepare_v2(db, "SELECT t_ns, api, ptr, size, device, result, stack_id FROM events"
                                    " WHERE id BETWEEN ?1 AND ?2 ORDER BY id", -1, &st, NULL);
    if (rc == SQLITE_OK) {
        sqlite3_bind_int64(st, 1, s->lo);
        sqlite3_bind_int64(st, 2, s->hi);
    }
    int64_t last_t = INT64_MIN;
    size_t room = (size_t)(s->hi - s->lo + 1), n = 0;
    while (rc == SQLITE_OK) {
        if ((rc = sqlite3_step(st)) != SQLITE_ROW)
            break;
        rc = SQLITE_OK;
        if (n == room) {   /* ids are unique: cannot happen in a sane file */
            rc = SQLITE_CORRUPT;
            break;
        }
        struct gt_event *e = &s->ev[n++];
        e->t = sqlite3_column_int64(st, 0);
        int64_t api = sqlite3_column_int64(st, 1);
        e->api = api > 0 && api < 256 ? (uint8_t)api : 0;
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
    int code = pragma_int(t, "SELECT min(id) FROM events", &lo);
    if (!code)
        code = pragma_int(t, "SELECT max(id) FROM events", &hi);
    if (code)
        return code;
    size_t span = hi >= lo ? (size_t)(hi - lo) + 1 : 0;
    if (hi < lo || (lo == 0 && hi == 0))
        span = 0;
    if (span >= UINT32_MAX - 2)
        return fail(t, GT_EXIT_CORRUPT, "event ids span more than 4 billion: too many events for this gputrace");
    /* big traces are read in slices by id, one thread and connection each */
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    int nslices = span < 2000000 || cpus < 2 ? 1 : cpus > 8 ? 8 : (int)cpus;
    t->ev = gt_xmalloc((span ? span : 1) * sizeof *t->ev);
    struct slice sl[8];
    pthread_t th[8];
    int threaded[8] = {0};
    memset(sl, 0, sizeof sl);
    for (int k = 0; k < nslices; k++) {
        sl[k].path = t->path;
        sl[k].db = k == 0 ? t->db : NULL;
        sl[k].lo = lo + (int64_t)(span * (size_t)k / (size_t)nslices);
        sl[k].hi = lo + (int64_t)(span * (size_t)(k + 1) / (size_t)nslices) - 1;
        sl[k].ev = t->ev + (sl[k].lo - lo);
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
            return sql_fail_msg(t, sl[k].rc, sl[k].msg, "reading events");
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
            return fail(t, GT_EXIT_CORRUPT, "corrupt trace: allocation sizes add up to more than 2^62 bytes (event at "
                        "%lld ns: %lld bytes); re-run the traced program", (long long)e->t, (long long)e->size);
    }
    if (unordered) {
        sort_events_by_time(t->ev, n);
        t->resorted = 1;
    }
    intern_sites(t);
    t->site_frames = gt_xcalloc(t->nsites + 1, sizeof *t->site_frames);
    t->site_info = gt_xcalloc(t->nsites + 1, sizeof *t->site_info);
    t->site_nframes = gt_xmalloc((t->nsites + 1) * sizeof *t->site_nframes);
    for (size_t i = 0; i <= t->nsites; i++)
        t->site_nframes[i] = -1;
    /* The shim commits once right after naming the trace, so its -wal is
     * empty only for a moment: none (or an empty one) means a copy made
     * without it, or a process killed in that moment. */
    if (n == 0 && !t->proc.end_reason && t->wal_missing)
        return fail(t, GT_EXIT_CORRUPT, "the trace holds no events and was not closed: its process ended (killed?) "
                    "before writing any, or this is a copy whose -wal file, which holds what was written, is missing "
                    "(copy %s-wal together with the trace)", t->path);
    if (n == 0 && !t->proc.end_reason)
        return fail(t, GT_EXIT_EMPTY, "empty trace: its process ended (killed?) before its first events were written");
    if (n == 0)
        return fail(t, GT_EXIT_EMPTY, "empty trace: no CUDA allocation calls were recorded; did the program use the GPU through a library that libgputrace.so can see (see the README)?");
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

int gt_trace_sql_error(struct gt_trace *t, int rc, const char *what)
{
    return sql_fail(t, rc, what);
}
