/* Where the trace goes: GPUTRACE_OUTPUT's pattern (%p pid, %h host, %r rank,
 * %% a percent sign) expanded. The file is created exclusively, without
 * following a symlink, under a temporary name (NAME.creating-PID) and given
 * its name only once its identity and schema are committed, so that a process
 * killed at any moment leaves either a trace the analyzer opens or a file
 * whose name says what happened. A directory (existing, or a path ending in
 * '/') holds the trace under the default name. An existing file is never
 * clobbered: NAME.db becomes NAME.PID.db (then NAME.PID.N.db), so parent and
 * child, or two ranks, never share one. */
#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shim.h"
#include "vfs.h"


/* One stderr line per process, by the process that traces (expand runs when
 * its trace file is created), however many unknown escapes the pattern holds. */
static void warn_unknown_escape(const char *pat, char c)
{
    static bool said;
    if (said)
        return;
    said = true;
    char esc[3] = {'%', c, 0};
    gt_eprintf("gputrace: GPUTRACE_OUTPUT=%.200s: unknown escape '%s', kept as written "
                    "(escapes: %%p pid, %%h host, %%r rank, %%%% a percent sign)\n", pat, esc);
}

static void expand(const char *pat, char *out, size_t cap)
{
    size_t o = 0;
    char host[256];
    for (const char *p = pat; *p && o + 1 < cap; p++) {
        char tmp[300];
        const char *ins = NULL;
        if (*p == '%' && p[1]) {
            switch (*++p) {
            case 'p': snprintf(tmp, sizeof tmp, "%d", getpid()); ins = tmp; break;
            case 'h':
                if (gethostname(host, sizeof host) != 0) strcpy(host, "host");
                host[sizeof host - 1] = 0;
                ins = host;
                break;
            case 'r': {
                long r = gt_rank();
                snprintf(tmp, sizeof tmp, "%ld", r >= 0 ? r : 0);
                ins = tmp;
                break;
            }
            case '%': ins = "%"; break;
            default: /* kept as written, said once: a typo here names every trace wrongly */
                tmp[0] = '%'; tmp[1] = *p; tmp[2] = 0; ins = tmp;
                warn_unknown_escape(pat, *p);
                break;
            }
            o += (size_t)snprintf(out + o, cap - o, "%s", ins);
            if (o >= cap) o = cap - 1;
        } else {
            if (*p == '%') /* a '%' that ends the pattern */
                warn_unknown_escape(pat, 0);
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

static struct stat created; /* the file try_create made */

static int try_create(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0644);
    if (fd < 0)
        return -errno;
    struct stat st;
    if (fstat(fd, &st) == 0) {
        /* the program's umask is kept for group and others, but the trace is
         * the shim's to write: under umask 0277 the file was made read-only
         * and SQLite could not write it ("attempt to write a readonly
         * database"; a helper's probe). SQLite gives its -wal and -shm the
         * file's mode. */
        if ((st.st_mode & 0600) != 0600 && fchmod(fd, (st.st_mode & 07777) | 0600) == 0)
            st.st_mode |= 0600;
        gt_vfs_expect(st.st_dev, st.st_ino); /* SQLite must open exactly this file (vfs.c) */
        created = st;
    }
    close(fd);
    return 0;
}

static char base[4096]; /* the expanded pattern: the name the trace will get */
static char start_dir[4096]; /* where the process started: a relative pattern's directory */

/* At load: a relative GPUTRACE_OUTPUT (the default, gputrace-%p.db) is taken
 * from where the process started, as `gputrace run -o` takes it. Read later,
 * on the writer thread, it followed a program's chdir made right after its
 * first CUDA call, or failed half way through (the temporary file in one
 * directory, its name in another). */
void gt_output_remember_dir(void)
{
    if (gt_config.output_pattern[0] != '/' && !getcwd(start_dir, sizeof start_dir))
        start_dir[0] = 0;
}

/* Moves tmp to path unless something is there (then -EEXIST); a file system
 * without renameat2's RENAME_NOREPLACE gets link + unlink, just as safe. */
static int place(const char *tmp, const char *path)
{
    /* a name with SQLite's side files beside it is taken too: a run killed
     * there left NAME-wal, which SQLite would read into this trace (the new
     * run lost, the old one shown), and the side files are not ours to touch */
    static const char *const sides[] = {"-wal", "-shm", "-journal"};
    size_t n = strlen(path);
    for (size_t k = 0; k < sizeof sides / sizeof *sides; k++) {
        char side[sizeof base + 16];
        struct stat st;
        snprintf(side, sizeof side, "%s%s", path, sides[k]);
        if (lstat(side, &st) == 0)
            return -EEXIST;
        /* and a name that is a side file of a file there (NAME.db-wal beside
         * NAME.db): SQLite would read this trace as that database's log, and
         * the next writer to open NAME.db removes it */
        size_t m = strlen(sides[k]);
        if (n > m && n - m < sizeof side && !strcmp(path + n - m, sides[k])) {
            memcpy(side, path, n - m);
            side[n - m] = 0;
            if (lstat(side, &st) == 0)
                return -EEXIST;
        }
    }
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, path, RENAME_NOREPLACE) == 0)
        return 0;
    if (errno != EINVAL && errno != ENOSYS)
        return -errno;
    if (link(tmp, path) != 0)
        return -errno;
    unlink(tmp);
    return 0;
}

/* Creates the trace file under its temporary name; 0 on success with that
 * name in tmp_out, else -errno with a readable reason in err. */
int gt_output_create(char *tmp_out, size_t cap, char *err, size_t errcap)
{
    size_t d = 0;
    if (gt_config.output_pattern[0] != '/' && start_dir[0])
        d = (size_t)snprintf(base, sizeof base, "%s/", strcmp(start_dir, "/") ? start_dir : "");
    if (d >= sizeof base)
        d = 0;
    expand(gt_config.output_pattern, base + d, sizeof base - d);
    size_t n = strlen(base);
    struct stat st;
    if (n && (base[n - 1] == '/' || (stat(base, &st) == 0 && S_ISDIR(st.st_mode)))) {
        char name[256];
        expand(GT_OUTPUT_DEFAULT, name, sizeof name);
        snprintf(base + n, sizeof base - n, "%s%s", base[n - 1] == '/' ? "" : "/", name);
    }
    snprintf(tmp_out, cap, "%s.creating-%d", base, getpid());
    int rc = try_create(tmp_out);
    /* the name of a run killed with the same pid (a container's pid 1), or of
     * another pid namespace's process: another name, never that file */
    for (int i = 1; i < 100 && rc == -EEXIST; i++) {
        snprintf(tmp_out, cap, "%s.creating-%d.%d", base, getpid(), i);
        rc = try_create(tmp_out);
    }
    if (rc != 0)
        snprintf(err, errcap, "'%s': %s", base, rc == -ELOOP ? "a symbolic link is in the way" : strerror(-rc));
    return rc;
}

/* The temporary file could not be initialised: removed, with what SQLite
 * left beside it, if it is still the file created (never another put at its
 * name). Its side files are SQLite's for this connection (the name is this
 * process's NAME.creating-PID): removed whatever they hold (a -wal holding
 * the schema a full disk could not take, a 16 KB -shm: left, they filled
 * the disk the program's own file then did not fit on). True when nothing
 * of ours is left. */
bool gt_output_discard(const char *tmp)
{
    struct stat st;
    if (lstat(tmp, &st) != 0 || st.st_dev != created.st_dev || st.st_ino != created.st_ino)
        return false;
    bool all = true;
    for (int i = 0; i < 3; i++) {
        char side[4200];
        snprintf(side, sizeof side, "%s%s", tmp, (const char *[]){"-journal", "-wal", "-shm"}[i]);
        if (lstat(side, &st) == 0 && S_ISREG(st.st_mode) && unlink(side) != 0)
            all = false;
    }
    return unlink(tmp) == 0 && all;
}

/* Gives the committed file tmp its name: the pattern's, or when a file is
 * there (or the parent's is about to be) NAME.PID.db, then NAME.PID.N.db. 0 with the name in path_out, else
 * -errno with a reason in err (the file stays at tmp). */
/* The parent traces to the same name and has not given its file that name
 * yet (it is still NAME.creating-PPID): the name is the parent's. A child the
 * program starts right after its first CUDA calls (a spawned worker) could
 * otherwise publish first and take it (seen in CI: the command's own trace
 * became NAME.PID.db, its child's NAME.db). */
static bool parent_claims(void)
{
    char p[sizeof base + 32];
    struct stat st;
    snprintf(p, sizeof p, "%s.creating-%d", base, (int)getppid());
    return lstat(p, &st) == 0;
}

int gt_output_publish(const char *tmp, char *path_out, size_t cap, char *err, size_t errcap)
{
    snprintf(path_out, cap, "%s", base);
    int rc = parent_claims() ? -EEXIST : place(tmp, path_out);
    if (rc == -EEXIST) {
        size_t len = strlen(base);
        const char *ext = len > 3 && strcmp(base + len - 3, ".db") == 0 ? ".db" : "";
        int stem = (int)(len - strlen(ext));
        for (int i = 0; i < 100 && rc == -EEXIST; i++) {
            if (i == 0)
                snprintf(path_out, cap, "%.*s.%d%s", stem, base, getpid(), ext);
            else
                snprintf(path_out, cap, "%.*s.%d.%d%s", stem, base, getpid(), i, ext);
            rc = place(tmp, path_out);
        }
    }
    if (rc != 0)
        snprintf(err, errcap, "'%s': %s", path_out, strerror(-rc));
    return rc;
}
