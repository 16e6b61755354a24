/* still_written.c - is a trace still being written? Its traced process, on
 * this host, holding the file open for writing (its writer keeps it open to
 * the end), found through /proc. Asked only where a trace looks unfinished:
 * a trace read while its program runs is not a killed one, and its
 * creation-name is not a file to delete (a helper's probe: "ended (killed?)
 * ... delete it" of a trace whose process was starting).
 * Only the process the trace names is its writer (a review: any process
 * with the file open counted, a second gputrace or a browser reading it, and
 * a fork child, which keeps the parent's descriptor but writes nothing, outlived
 * a killed parent as "still writing"); it must have the file open for
 * writing and libgputrace mapped. Descriptors are compared by the text of
 * their links, never stat()ed (one of a hung network mount would hang as
 * lsof does); another user's processes are not seen. */
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "trace.h"

/* Is descriptor fd of pid open for writing? */
static int open_for_writing(long pid, const char *fd)
{
    char name[96 + NAME_MAX], line[128];
    snprintf(name, sizeof name, "/proc/%ld/fdinfo/%s", pid, fd);
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

/* Does pid, traced, hold the file real open for writing? */
static int writes(long pid, const char *real)
{
    char dir[64];
    snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
    DIR *fds = opendir(dir);   /* gone, or another user's */
    if (!fds)
        return 0;
    int yes = 0;
    for (struct dirent *f; !yes && (f = readdir(fds));) {
        char link[80 + NAME_MAX], to[PATH_MAX];
        if (f->d_name[0] == '.')
            continue;
        snprintf(link, sizeof link, "%s/%s", dir, f->d_name);
        ssize_t n = readlink(link, to, sizeof to - 1);
        if (n <= 0)
            continue;
        to[n] = 0;
        yes = !strcmp(to, real) && open_for_writing(pid, f->d_name) && traced(pid);
    }
    closedir(fds);
    return yes;
}

long gt_file_writer_pid(const char *path, long pid)
{
    char *real = realpath(path, NULL);
    if (!real)
        return -1;
    long found = -1;
    if (pid > 0) {
        found = pid != (long)getpid() && writes(pid, real) ? pid : -1;
    } else {   /* (a trace whose process is not known yet: any traced process's) */
        DIR *proc = opendir("/proc");
        for (struct dirent *p; proc && found < 0 && (p = readdir(proc));) {
            char *end;
            long q = strtol(p->d_name, &end, 10);
            if (!*end && q > 0 && q != (long)getpid() && writes(q, real))
                found = q;
        }
        if (proc)
            closedir(proc);
    }
    free(real);
    return found;
}

long gt_trace_writer_pid(struct gt_trace *t)
{
    if (t->proc.end_reason || t->proc.pid <= 0)
        return 0;   /* closed: nobody writes it (or no process named) */
    if (!t->writer_pid)
        t->writer_pid = gt_file_writer_pid(t->path, t->proc.pid);
    return t->writer_pid > 0 ? t->writer_pid : 0;
}
