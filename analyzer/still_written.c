/* still_written.c - is a trace still being written? The traced process of
 * this host that holds the file open for writing (its writer keeps it open
 * to the end), found through /proc. Asked only where a trace looks
 * unfinished: a trace read while its program runs is not a killed one, and
 * its creation-name is not a file to delete (a helper's probe: "ended
 * (killed?) ... delete it" of a trace whose process was starting).
 * A writer is a process that has the file open for writing and has
 * libgputrace mapped: another reader (a second gputrace, a database browser
 * that opened it read-only) or a child that inherited the descriptor of a
 * parent killed since is not one (a review). /proc is read once a run, by
 * the text of each descriptor's link (no stat() through it: one of a hung
 * network mount would hang as lsof does), another user's processes unseen;
 * and read once for all the files a command is given (a second later again). */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "analyzer.h"
#include "format.h"
#include "trace.h"

struct open_file {
    long pid;
    int fd;
    char *path;
};
static struct open_file *open_files;   /* (kept for the run: reachable) */
static size_t nopen;
static double looked_at = -1;   /* (gt_now(); looked again after a second: a sweep's later runs) */

static void look(void)
{
    for (size_t i = 0; i < nopen; i++)
        free(open_files[i].path);
    nopen = 0;
    looked_at = gt_now();
    DIR *proc = opendir("/proc");
    if (!proc)
        return;
    long self = (long)getpid();
    size_t cap = 0;
    struct dirent *p;
    while ((p = readdir(proc))) {
        char *end;
        long pid = strtol(p->d_name, &end, 10);
        if (*end || pid <= 0 || pid == self)
            continue;
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
        DIR *fds = opendir(dir);   /* another user's: not readable, passed over */
        if (!fds)
            continue;
        struct dirent *f;
        while ((f = readdir(fds))) {
            char link[64 + sizeof f->d_name], to[PATH_MAX];
            if (f->d_name[0] == '.')
                continue;
            snprintf(link, sizeof link, "%s/%s", dir, f->d_name);
            ssize_t n = readlink(link, to, sizeof to - 1);
            if (n <= 0 || to[0] != '/')
                continue;   /* (a pipe, a socket) */
            to[n] = 0;
            if (nopen == cap)
                open_files = gt_xrealloc(open_files, (cap = cap ? 2 * cap : 256) * sizeof *open_files);
            open_files[nopen++] = (struct open_file){pid, atoi(f->d_name), gt_xstrdup(to)};
        }
        closedir(fds);
    }
    closedir(proc);
}

/* Is descriptor fd of pid open for writing? */
static int open_for_writing(long pid, int fd)
{
    char name[96], line[128];
    snprintf(name, sizeof name, "/proc/%ld/fdinfo/%d", pid, fd);
    FILE *f = fopen(name, "r");
    int yes = 0;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long flags;
        if (sscanf(line, "flags: %lo", &flags) == 1) {
            yes = (flags & O_ACCMODE) != O_RDONLY;
            break;
        }
    }
    if (f)
        fclose(f);
    return yes;
}

/* Has pid libgputrace mapped (a traced process)? */
static int traced(long pid)
{
    char name[64], line[4096];
    snprintf(name, sizeof name, "/proc/%ld/maps", pid);
    FILE *f = fopen(name, "r");
    int yes = 0;
    while (f && !yes && fgets(line, sizeof line, f))
        yes = strstr(line, "libgputrace") != NULL;
    if (f)
        fclose(f);
    return yes;
}

/* (-1 where none: gt_trace_writer_pid caches it) */
long gt_file_writer_pid(const char *path)
{
    char *real = realpath(path, NULL);
    if (!real)
        return -1;
    if (looked_at < 0 || gt_now() - looked_at > 1.0)
        look();
    long found = -1;
    for (size_t i = 0; i < nopen && found < 0; i++)
        if (!strcmp(open_files[i].path, real) && open_for_writing(open_files[i].pid, open_files[i].fd) &&
            traced(open_files[i].pid))
            found = open_files[i].pid;
    free(real);
    return found;
}

long gt_trace_writer_pid(struct gt_trace *t)
{
    if (t->proc.end_reason)
        return 0;   /* closed: nobody writes it */
    if (!t->writer_pid)
        t->writer_pid = gt_file_writer_pid(t->path);
    return t->writer_pid > 0 ? t->writer_pid : 0;
}
