/* The writer's trace file opened: a new one created under a temporary name
 * with its schema and processes row, then given its name (create_file), or
 * the same file opened again after a failed exec; WAL from the first commit.
 * On the writer thread (writer.c calls it once per opening). */
#include <stdio.h>
#include <sys/stat.h>

#include "db.h"
#include "vfs.h"
#include "writer.h"

/* What one opening needs of the writer's state: the path (written when a new
 * file is created), the trace's start, and the file's identity as opened
 * (a file replaced at its name is told at the stop). */
struct opening {
    char *path;
    size_t path_size;
    uint64_t start_unix, start_mono;
    bool create;
    dev_t *dev;
    ino_t *ino;
};

/* The one line for a trace file that could not be initialised: SQLite's
 * reason, or the file beside it that is a link (a planted -shm, -wal or
 * -journal: SQLite refuses to follow it, and says only "unable to open"). */
static void init_failed(const char *path, bool temporary)
{
    const char *why = gt_db_errmsg();
    char beside[4300], what[64] = "";
    for (int i = 0; i < 3 && !what[0]; i++) {
        const char *sfx = (const char *[]){"-shm", "-wal", "-journal"}[i];
        struct stat st;
        snprintf(beside, sizeof beside, "%s%s", path, sfx);
        if (lstat(beside, &st) == 0 && S_ISLNK(st.st_mode))
            snprintf(what, sizeof what, "its %s file is a symbolic link (never followed)", sfx);
    }
    char reason[4400];
    snprintf(reason, sizeof reason, "%s", what[0] ? what : why); /* the close below may change SQLite's message */
    gt_db_close(false);
    gt_db_clear_failure();
    gt_db_initialising(false);
    bool removed = temporary && gt_output_discard(path);
    gt_eprintf("gputrace: cannot initialise trace file %s: %s; tracing is off (%s), the program continues\n",
            path, reason, removed ? "the file was removed" : "the file holds no events");
}

/* A new trace: the schema and the processes row committed under the
 * temporary name and closed (the close checkpoints and removes its -wal:
 * nothing beside the file is named after it), then given its name. A process killed before
 * the rename leaves NAME.creating-PID (the analyzer says what it is); after
 * it, a trace that opens. */
static bool create_file(struct opening *o)
{
    char err[4400], tmp[4200];
    if (gt_output_create(tmp, sizeof tmp, err, sizeof err) != 0) {
        gt_eprintf("gputrace: cannot create trace file %s; tracing is off, the program continues (set GPUTRACE_OUTPUT to a writable path)\n", err);
        return false;
    }
    snprintf(o->path, o->path_size, "%s", tmp);
    gt_runlog_creating(tmp);   /* (the file exists: gt_output_create made it) */
    if (!gt_db_open(tmp)) {
        gt_output_discard(tmp);
        return false;
    }
    gt_db_initialising(true);
    gt_thread_untraced();
    /* WAL from the start: named, the file needs no journal write to switch
     * (a kill during that would leave a hot journal a reader cannot roll back) */
    if (!gt_db_exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;") || !gt_db_exec("BEGIN") ||
        !gt_db_exec(gt_schema_sql) || !gt_db_prepare() || !gt_process_row(o->start_unix, o->start_mono) ||
        !gt_window_begin(o->start_mono) || !gt_db_exec("COMMIT")) {
        init_failed(tmp, true);
        return false;
    }
    gt_db_close(false);
    gt_db_initialising(false);
    /* the close checkpoints the schema into the file and removes its -wal;
     * a -wal left holding data (the disk filled) means the file alone is no
     * trace: published without it, a truncated file sat at the final name */
    struct stat wal;
    char wal_path[sizeof tmp + 8];
    snprintf(wal_path, sizeof wal_path, "%s-wal", tmp);
    if (lstat(wal_path, &wal) == 0 && wal.st_size > 0) {
        bool removed = gt_output_discard(tmp);
        gt_eprintf("gputrace: cannot initialise trace file %s: its schema could not be written into it (is the disk "
                   "full?); tracing is off (%s), the program continues\n", tmp,
                   removed ? "the file was removed" : "the file holds no events");
        return false;
    }
    if (gt_output_publish(tmp, o->path, o->path_size, err, sizeof err) != 0) {
        gt_eprintf("gputrace: cannot name trace file %s (it stays %s, holding no events); tracing is off, the "
                        "program continues\n", err, tmp);
        return false;
    }
    gt_runlog_opened(o->path); /* under `gputrace run`: listed for the launcher's closing line */
    return true;
}

/* Opens the trace file. create: a new file from the output pattern (never an
 * existing one), with the schema and the processes row; otherwise reopen
 * o->path (after a failed exec). */
static bool open_db_lifted(struct opening *o);

/* SQLite puts /dev/null on a closed fd 0-2 and keeps it. With the shim's
 * own SQLite its open never takes them (vfs.c); a system SQLite's is left
 * alone, and 0-2 are held meanwhile instead (fdlift.c: a program thread
 * opening a file in that moment gets another number) */
bool gt_writer_open(char *path, size_t path_size, uint64_t start_unix, uint64_t start_mono, bool create,
                    dev_t *dev, ino_t *ino)
{
    struct opening o = {path, path_size, start_unix, start_mono, create, dev, ino};
    static struct gt_fd_lift lift;   /* (the writer thread's alone; its stack is 1 MiB) */
    gt_vfs_name();   /* (registers it: SQLite's open is ours from then on, where it can be) */
    bool hold = !gt_vfs_keeps_stdio_free();
    if (hold)
        gt_fd_lift_begin(&lift, false);
    bool ok = open_db_lifted(&o);
    if (hold)
        gt_fd_lift_end(&lift);
    return ok;
}

static bool open_db_lifted(struct opening *o)
{
    if (o->create && !create_file(o)) {
        gt_runlog_creation_failed();
        return false;
    }
    if (!gt_db_open(o->path))
        return false;
    struct stat st;
    *o->dev = 0;
    *o->ino = 0;
    if (stat(o->path, &st) == 0) {
        *o->dev = st.st_dev;
        *o->ino = st.st_ino;
    }
    gt_db_initialising(true);
    gt_thread_untraced();
    if (!gt_db_exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"))
        goto fail;
    /* A first commit at once: from now on the trace's -wal is not empty
     * while it is open, so a reader that finds none (or an empty one) can
     * tell a copy made without it, unless the process died in this moment. */
    if (o->create && !gt_db_exec("BEGIN IMMEDIATE; UPDATE processes SET id = id; COMMIT"))
        goto fail;
    if (!gt_db_prepare())
        goto fail;
    gt_events_begin(o->start_mono);
    gt_activity_begin(o->start_mono);
    gt_db_initialising(false);
    if (!o->create)
        gt_process_reopen();
    return true;
fail:
    init_failed(o->path, false);
    return false;
}
