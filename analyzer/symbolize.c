/* symbolize.c - `gputrace symbolize TRACE.db...`: fills frames.file and
 * frames.line from the modules' debug info with addr2line (binutils).
 *
 * The shim resolves function, module and offset inside the traced process
 * but leaves file:line alone: reading DWARF there would cost the program
 * memory and time, and spawning a helper from inside someone else's process
 * can be reaped by its own wait(). The analyzer runs after the fact, on the
 * same machine, where the modules are still on disk. */
#include <errno.h>
#include <fcntl.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <sqlite3.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

extern char **environ;

/* gputrace symbolize --help (the command table is in commands.c) */
const char gt_help_symbolize[] =
    "usage: gputrace symbolize [--addr2line PATH] TRACE.db...\n"
    "\n"
    "Adds source file and line to each recorded frame whose module has debug\n"
    "info, by running addr2line (binutils) once per module, and stores them in\n"
    "the trace (frames.file, frames.line), where every report then shows them.\n"
    "Run it on the machine that traced, before the binaries change: a module\n"
    "rebuilt since the trace gives wrong lines. Frames already resolved are\n"
    "left alone, so running it twice is harmless.\n"
    "\n"
    "  --addr2line PATH   the addr2line to run (default: addr2line on PATH)\n"
    "Exit status: as for the other commands (see gputrace --help), and\n"
    "  9  addr2line could not be run (install binutils or pass --addr2line)\n";

struct frame_ref {
    int64_t id;
    uint64_t addr;   /* what addr2line takes for this frame */
};

/* Executables linked at a fixed address (ET_EXEC) take the absolute address;
 * position-independent objects (ET_DYN) the offset from their load address. */
static int module_is_fixed_address(const char *path)
{
    unsigned char h[18];
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    size_t n = fread(h, 1, sizeof h, f);
    fclose(f);
    if (n != sizeof h || memcmp(h, "\177ELF", 4))
        return -1;
    int type = h[5] == 2 ? (h[16] << 8 | h[17]) : (h[16] | h[17] << 8);   /* EI_DATA: 2 = big endian */
    return type == 2;   /* ET_EXEC */
}

/* The file to read for a frames.module. The shim records the main
 * executable's path as the program was started: "bin/train" when started by
 * a relative path, which means nothing from another directory (symbolize run
 * elsewhere found 2 of 15 frames instead of 14). processes.exe has the
 * absolute path: a relative module that names it is read there. */
static void module_path(const char *module, const char *exe, char *out, size_t len)
{
    size_t m = strlen(module), e = exe ? strlen(exe) : 0;
    const char *rel = module;
    while (!strncmp(rel, "./", 2))
        rel += 2;
    size_t r = strlen(rel);
    if (module[0] != '/' && exe && exe[0] == '/' && r && e > r && exe[e - r - 1] == '/' && !strcmp(exe + e - r, rel))
        snprintf(out, len, "%s", exe);
    else
        snprintf(out, len, "%.*s", (int)m, module);
}

/* Runs addr2line -a -e MODULE over refs; the output pairs each echoed address
 * with one "file:line" line ("??:0" or "file:?" when unknown). Calls back
 * store() for each resolved frame. Returns 0, or -1 when addr2line could not
 * be run (message in err). */
static int run_addr2line(const char *tool, const char *module, const struct frame_ref *refs, size_t n,
                         int (*store)(void *, int64_t, const char *, int64_t), void *arg, char *err, size_t errlen)
{
    FILE *in = tmpfile();
    if (!in) {
        snprintf(err, errlen, "cannot create a temporary file: %s", strerror(errno));
        return -1;
    }
    for (size_t i = 0; i < n; i++)
        fprintf(in, "0x%llx\n", (unsigned long long)refs[i].addr);
    fflush(in);
    rewind(in);
    int out[2];
    if (pipe(out)) {
        fclose(in);
        snprintf(err, errlen, "pipe: %s", strerror(errno));
        return -1;
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, fileno(in), 0);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    posix_spawn_file_actions_addclose(&fa, out[0]);
    posix_spawn_file_actions_addopen(&fa, 2, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)tool, "-a", "-e", (char *)module, NULL};
    pid_t pid;
    int rc = posix_spawnp(&pid, tool, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(out[1]);
    fclose(in);
    if (rc) {
        close(out[0]);
        snprintf(err, errlen, "cannot run %s: %s; install binutils or pass --addr2line PATH", tool, strerror(rc));
        return -1;
    }
    FILE *o = fdopen(out[0], "r");
    char line[4096];
    size_t i = 0;
    int expect_addr = 1, bad = 0;
    while (o && fgets(line, sizeof line, o)) {
        line[strcspn(line, "\n")] = 0;
        if (expect_addr) {   /* the echoed address keeps both streams in step */
            bad |= strncmp(line, "0x", 2) != 0;
            expect_addr = 0;
            continue;
        }
        expect_addr = 1;
        if (i >= n)
            break;
        char *disc = strstr(line, " (discriminator");
        if (disc)
            *disc = 0;
        char *colon = strrchr(line, ':');
        int64_t ln = colon ? strtoll(colon + 1, NULL, 10) : 0;
        if (colon && ln > 0 && strncmp(line, "??", 2)) {
            *colon = 0;
            store(arg, refs[i].id, line, ln);
        }
        i++;
    }
    if (o)
        fclose(o);
    else
        close(out[0]);
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    /* addr2line exits non-zero on a module it cannot read: that module simply
     * has no lines. Only output out of step with the input is an error. */
    if (bad) {
        snprintf(err, errlen, "%s gave unexpected output for %s", tool, module);
        return -1;
    }
    return 0;
}

/* The lines found, kept until every addr2line has run: the trace is written
 * in one short transaction at the end (held across the addr2line runs, its
 * lock kept a program still writing the trace from its last events). */
struct found {
    int64_t id, line;
    char *file;
};

struct store_ctx {
    sqlite3_stmt *update;
    struct found *found;
    size_t n, cap, resolved;
    int rc;
};

static int store_line(void *arg, int64_t id, const char *file, int64_t line)
{
    struct store_ctx *s = arg;
    /* build trees leave "dir/../../src" paths; a relative one (a build with
     * -ffile-prefix-map=$PWD=.) is relative to where the module was built,
     * not to where this runs: resolved here it named whatever file of that
     * name the current directory held */
    char *clean = file[0] == '/' ? realpath(file, NULL) : NULL;
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->found = gt_xrealloc(s->found, s->cap * sizeof *s->found);
    }
    s->found[s->n++] = (struct found){id, line, clean ? clean : gt_xstrdup(file)};
    return 0;
}

/* Writes the lines found, inside the caller's transaction. */
static void store_found(struct store_ctx *s)
{
    for (size_t i = 0; i < s->n && !s->rc; i++) {
        sqlite3_reset(s->update);
        sqlite3_bind_text(s->update, 1, s->found[i].file, -1, SQLITE_STATIC);
        sqlite3_bind_int64(s->update, 2, s->found[i].line);
        sqlite3_bind_int64(s->update, 3, s->found[i].id);
        int rc = sqlite3_step(s->update);
        if (rc != SQLITE_DONE)
            s->rc = rc;
        else
            s->resolved++;
    }
}

static void found_free(struct store_ctx *s)
{
    for (size_t i = 0; i < s->n; i++)
        free(s->found[i].file);
    free(s->found);
}

static int fail_sql(const char *path, sqlite3 *db, const char *what)
{
    fprintf(stderr, "gputrace: %s: %s: %s\n", gt_shown(path), what, db ? sqlite3_errmsg(db) : "out of memory");
    return GT_EXIT_CORRUPT;
}

/* One trace: validate it as every report does, then reopen it for writing. */
static int symbolize_one(const char *path, const char *tool)
{
    struct gt_trace t;
    int code = gt_trace_open(&t, path);
    if (code) {
        fprintf(stderr, "gputrace: %s: %s\n", gt_shown(path), t.err);
        gt_trace_close(&t);
        return code;
    }
    char *exe = t.proc.exe ? gt_xstrdup(t.proc.exe) : NULL;
    long writer = gt_trace_writer_pid(&t);   /* (its process still writing it: it keeps its mode) */
    gt_trace_close(&t);

    sqlite3 *db = NULL;
    char name[4096];
    if (sqlite3_open_v2(gt_sqlite_name(path, name, sizeof name), &db, SQLITE_OPEN_READWRITE, NULL) != SQLITE_OK) {
        code = fail_sql(path, db, "cannot open for writing");
        sqlite3_close(db);
        return code == GT_EXIT_CORRUPT ? GT_EXIT_MISSING : code;
    }
    /* SQLite falls back to reading alone where it cannot write (the file or
     * its directory read-only): said, not left to the first store to fail */
    if (sqlite3_db_readonly(db, "main") == 1) {
        fprintf(stderr, "gputrace: %s: cannot write to it (the file or its directory is read-only), and symbolize "
                "stores file:line in the trace itself; copy it somewhere writable\n", gt_shown(path));
        sqlite3_close(db);
        free(exe);
        return GT_EXIT_MISSING;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt *sel = NULL;
    struct store_ctx sc = {0};
    if (sqlite3_prepare_v2(db, "SELECT id, module, module_offset, ip FROM frames"
                               " WHERE file IS NULL AND module IS NOT NULL AND module_offset IS NOT NULL"
                               " ORDER BY module, module_offset", -1, &sel, NULL) != SQLITE_OK ||
        sqlite3_prepare_v2(db, "UPDATE frames SET file = ?1, line = ?2 WHERE id = ?3", -1, &sc.update, NULL) != SQLITE_OK) {
        code = fail_sql(path, db, "reading frames");
        goto out;
    }
    struct frame_ref *refs = NULL;
    size_t n = 0, cap = 0, total = 0, modules = 0, missing = 0;
    char module[4096] = "", file[4096] = "", err[512] = "";
    int fixed = 0, rc;
    for (;;) {
        rc = sqlite3_step(sel);
        const char *m = rc == SQLITE_ROW ? (const char *)sqlite3_column_text(sel, 1) : NULL;
        if (n && (!m || strcmp(m, module))) {   /* a module's frames are complete */
            modules++;
            if (run_addr2line(tool, file, refs, n, store_line, &sc, err, sizeof err)) {
                fprintf(stderr, "gputrace: %s\n", err);
                code = GT_EXIT_ADDR2LINE;
                free(refs);
                goto out;
            }
            n = 0;
        }
        if (rc != SQLITE_ROW)
            break;
        total++;
        if (strcmp(m, module)) {
            snprintf(module, sizeof module, "%s", m);
            module_path(module, exe, file, sizeof file);
            fixed = module_is_fixed_address(file);
            if (fixed < 0)
                missing++;
        }
        if (fixed < 0)
            continue;   /* module gone or not ELF: nothing to read */
        if (n == cap) {
            cap = cap ? 2 * cap : 256;
            refs = gt_xrealloc(refs, cap * sizeof *refs);
        }
        /* ip is a return address: the call is the instruction before it */
        uint64_t off = (uint64_t)sqlite3_column_int64(sel, 2), ip = (uint64_t)sqlite3_column_int64(sel, 3);
        refs[n].id = sqlite3_column_int64(sel, 0);
        refs[n].addr = (fixed ? ip : off) - 1;
        n++;
    }
    free(refs);
    if (rc != SQLITE_DONE) {
        code = fail_sql(path, db, "reading frames");
        goto out;
    }
    sqlite3_finalize(sel);   /* (its read ends before the write begins) */
    sel = NULL;
    {
        int ok = sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, NULL) == SQLITE_OK;
        if (ok && sc.n)
            store_found(&sc);
        /* that it ran, found or not: the reports' hint to run it is not given again (stripped binaries gave
         * nothing, and the hint sent the user round in a circle; a review). A trace without the table is left
         * without the note. */
        if (ok && !sc.rc)
            sqlite3_exec(db, "INSERT INTO notes(t_ns, component, message) VALUES (0, 'symbolize', "
                             "'gputrace symbolize ran over the frames')", NULL, NULL, NULL);
        if (!ok || sc.rc || sqlite3_exec(db, "COMMIT", NULL, NULL, NULL) != SQLITE_OK) {
            int err_code = sqlite3_errcode(db) & 0xff;   /* (read before the rollback clears it) */
            if (err_code == SQLITE_READONLY || err_code == SQLITE_CANTOPEN || err_code == SQLITE_PERM) {
                fprintf(stderr, "gputrace: %s: cannot write to it (%s), and symbolize stores file:line in the trace "
                        "itself; copy it somewhere writable\n", gt_shown(path), sqlite3_errmsg(db));
                code = GT_EXIT_MISSING;
            } else {
                code = fail_sql(path, db, "storing file:line");
            }
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            goto out;
        }
    }
    /* A trace never closed (killed) is in WAL mode: closing this connection
     * folds its -wal into the file and deletes it, and every later report
     * then warned that the -wal was missing (a helper's probe). Nobody else
     * writing it, the file is put in rollback mode, as the shim leaves a
     * trace it closes; one still written keeps its mode and -wal. */
    if (!writer)
        sqlite3_exec(db, "PRAGMA journal_mode = DELETE", NULL, NULL, NULL);
    printf("%s: %zu of %zu frame%s given file:line, from %zu module%s", gt_shown(path), sc.resolved, total, gt_s((long long)total), modules,
           gt_s((long long)modules));
    if (missing)
        printf(" (%zu module%s no longer on disk)", missing, gt_s((long long)missing));
    printf("\n");
out:
    free(exe);
    found_free(&sc);
    sqlite3_finalize(sel);
    sqlite3_finalize(sc.update);
    sqlite3_close(db);
    return code;
}

int gt_cmd_symbolize(const struct gt_command *cmd, struct gt_args *a)
{
    (void)cmd;
    const char *tool = a->addr2line ? a->addr2line : "addr2line";
    int status = GT_EXIT_OK;
    for (int i = 0; i < a->nfiles; i++) {
        int code = symbolize_one(a->files[i], tool);
        if (code && !status)
            status = code;
    }
    return status;
}
