/* outfile.c - the all-or-nothing output file of `gputrace export` and
 * `gputrace report`: written under a temporary name beside FILE, renamed
 * over FILE only once complete. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "format.h"
#include "viz.h"

int gt_outfile_default(struct gt_outfile *of, const char *first_trace, const char *suffix, const char *ours,
                       const char *mark, const char **path)
{
    memset(of, 0, sizeof *of);
    *path = NULL;
    if (!isatty(STDOUT_FILENO))
        return GT_EXIT_OK;   /* a pipe or a file: the output goes there, as asked */
    size_t n = strlen(first_trace);
    if (n > 3 && !strcmp(first_trace + n - 3, ".db"))
        n -= 3;
    of->chosen = gt_xmalloc(n + strlen(suffix) + 1);
    sprintf(of->chosen, "%.*s%s", (int)n, first_trace, suffix);
    struct stat st;
    if (lstat(of->chosen, &st) == 0) {
        char head[1024] = "";
        FILE *f = S_ISREG(st.st_mode) ? fopen(of->chosen, "rb") : NULL;
        size_t len = f ? fread(head, 1, sizeof head - 1, f) : 0;
        if (f)
            fclose(f);
        head[len] = 0;
        if (strncmp(head, ours, strlen(ours)) || !strstr(head, mark)) {
            fprintf(stderr, "gputrace: %s exists and was not written by gputrace; name the output with -o FILE "
                    "(-o - writes to the terminal)\n", gt_shown(of->chosen));
            free(of->chosen);
            of->chosen = NULL;
            return GT_EXIT_OUTPUT;
        }
    }
    *path = of->chosen;
    return GT_EXIT_OK;
}

void gt_outfile_say_chosen(struct gt_outfile *of, int code)
{
    if (of->chosen && code == GT_EXIT_OK)
        printf("gputrace: wrote %s\n", of->chosen);
    free(of->chosen);
    of->chosen = NULL;
}

/* The first n bytes of path into head: all of them were read. Only a
 * regular file is read: a FIFO's open and read would wait for a writer (-o
 * a FIFO hung: CI). */
static int read_head(const char *path, void *head, size_t n)
{
    struct stat st;
    if (stat(path, &st) != 0 || !S_ISREG(st.st_mode))
        return 0;
    FILE *f = fopen(path, "rb");
    size_t got = f ? fread(head, 1, n, f) : 0;
    if (f)
        fclose(f);
    return got == n;
}

/* Is path an SQLite database (a trace, the one being read among them)? */
static int is_sqlite(const char *path)
{
    char head[16];
    return read_head(path, head, sizeof head) && !memcmp(head, "SQLite format 3", 16);
}

/* Is path a SQLite database's companion: its write-ahead log, shared-memory
 * index or rollback journal (NAME.db-wal, -shm, -journal beside NAME.db), or
 * any file that starts as a write-ahead log does? A killed run's events are
 * in its -wal alone: -o there replaced them all (a helper's probe). */
int gt_is_sqlite_companion(const char *path)
{
    static const char *const suffixes[] = {"-wal", "-shm", "-journal"};
    size_t n = strlen(path);
    for (size_t i = 0; i < sizeof suffixes / sizeof *suffixes; i++) {
        size_t k = strlen(suffixes[i]);
        if (n > k && !strcmp(path + n - k, suffixes[i])) {
            char *base = gt_xmalloc(n - k + 1);
            memcpy(base, path, n - k);
            base[n - k] = 0;
            int yes = is_sqlite(base);
            free(base);
            if (yes)
                return 1;
        }
    }
    /* the WAL header's magic, big-endian: 0x377f0682 or 0x377f0683 */
    unsigned char head[4];
    return read_head(path, head, sizeof head) && head[0] == 0x37 && head[1] == 0x7f && head[2] == 0x06 &&
           (head[3] & 0xfe) == 0x82;
}

int gt_outfile_open(struct gt_outfile *of, const char *path)
{
    char *chosen = of->chosen;   /* set by gt_outfile_default, kept */
    memset(of, 0, sizeof *of);
    of->chosen = chosen;
    of->path = path;
    if (!path || !strcmp(path, "-")) {
        of->f = stdout;
        return GT_EXIT_OK;
    }
    /* -o a trace (the one read: `export -o t.db t.db`) would replace it with the output */
    struct stat st;
    if (stat(path, &st) == 0 && S_ISREG(st.st_mode) && is_sqlite(path)) {
        fprintf(stderr, "gputrace: %s is a SQLite database (a trace?), which -o would replace; name another output "
                "file\n", gt_shown(path));
        return GT_EXIT_OUTPUT;
    }
    if (gt_is_sqlite_companion(path)) {
        fprintf(stderr, "gputrace: %s is a SQLite database's write-ahead log, index or journal (a trace's: a killed "
                "run's events may be there alone), which -o would replace; name another output file\n", gt_shown(path));
        return GT_EXIT_OUTPUT;
    }
    /* -o /dev/null, a FIFO, /dev/stdout (a link to /proc/self/fd/1, a pipe or
     * a terminal): written to as they are, as -o - is. A file put in their
     * place would replace /dev/null itself for a user allowed to (root in a
     * container) */
    int exists = stat(path, &st) == 0;
    if (exists && S_ISDIR(st.st_mode)) {
        fprintf(stderr, "gputrace: %s: is a directory; give a file name (-o %s%sNAME)\n", gt_shown(path), gt_shown(path),
                path[strlen(path) - 1] == '/' ? "" : "/");
        return GT_EXIT_OUTPUT;
    }
    if ((exists && !S_ISREG(st.st_mode)) || !strncmp(path, "/dev/", 5) || !strncmp(path, "/proc/", 6)) {
        if (!(of->f = fopen(path, "w"))) {
            fprintf(stderr, "gputrace: %s: cannot open it for writing (%s)\n", gt_shown(path), strerror(errno));
            return GT_EXIT_OUTPUT;
        }
        of->direct = 1;
        return GT_EXIT_OK;
    }
    mode_t keep = exists ? st.st_mode & 07777 : 0;   /* an output replaced keeps its mode */
    /* -o a link: the file it points to is replaced, the link kept */
    if (lstat(path, &st) == 0 && S_ISLNK(st.st_mode) && (of->target = realpath(path, NULL)))
        path = of->target;
    /* same directory: rename() is atomic only within one file system */
    const char *slash = strrchr(path, '/');
    size_t dirlen = slash ? (size_t)(slash - path + 1) : 0;
    of->tmp = gt_xmalloc(strlen(path) + 16);
    sprintf(of->tmp, "%.*s.%s.XXXXXX", (int)dirlen, path, path + dirlen);
    int fd = mkstemp(of->tmp);
    if (fd < 0 || !(of->f = fdopen(fd, "w"))) {
        fprintf(stderr, "gputrace: %s: cannot create the output file (%s); check the directory exists and is writable\n", gt_shown(path), strerror(errno));
        if (fd >= 0) {
            close(fd);
            unlink(of->tmp);
        }
        free(of->tmp);
        of->tmp = NULL;
        free(of->target);
        of->target = NULL;
        return GT_EXIT_OUTPUT;
    }
    mode_t mask = umask(0);   /* mkstemp makes 0600; give the file the usual mode, or the one it had */
    umask(mask);
    fchmod(fd, keep ? keep : 0666 & ~mask);
    return GT_EXIT_OK;
}

void gt_outfile_abort(struct gt_outfile *of)
{
    if (of->direct) {
        fclose(of->f);
        of->direct = 0;
    }
    if (of->tmp) {
        fclose(of->f);
        unlink(of->tmp);
        free(of->tmp);
        of->tmp = NULL;
        free(of->target);
        of->target = NULL;
    }
}

int gt_outfile_commit(struct gt_outfile *of)
{
    int err = 0;
    if (fflush(of->f) || ferror(of->f))
        err = errno ? errno : EIO;
    if (!of->tmp) {
        if (of->direct && fclose(of->f) && !err)
            err = errno ? errno : EIO;
        of->direct = 0;
        if (err)
            fprintf(stderr, "gputrace: cannot write the output (%s)\n", strerror(err));
        return err ? GT_EXIT_OUTPUT : GT_EXIT_OK;
    }
    if (!err && fsync(fileno(of->f)))
        err = errno;
    if (fclose(of->f) && !err)
        err = errno ? errno : EIO;
    if (!err && rename(of->tmp, of->target ? of->target : of->path))
        err = errno;
    if (err) {
        fprintf(stderr, "gputrace: %s: cannot write the output file (%s); nothing was written\n", gt_shown(of->path), strerror(err));
        unlink(of->tmp);
    }
    free(of->tmp);
    of->tmp = NULL;
    free(of->target);
    of->target = NULL;
    return err ? GT_EXIT_OUTPUT : GT_EXIT_OK;
}

void gt_viz_fail(const char *path, const struct gt_trace *t, int code)
{
    (void)code;
    fprintf(stderr, "gputrace: %s: %s\n", gt_shown(path), t->err[0] ? t->err : "failed");
}
