/* still_written.c - is a trace still being written? The process of this
 * host that holds the file open (the traced process, whose writer keeps it
 * open to the end), found through /proc. Asked only where a trace looks
 * unfinished: a trace read while its program runs is not a killed one, and
 * its creation-name is not a file to delete (a helper's probe: "ended
 * (killed?) ... delete it" of a trace whose process was starting). */
#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "trace.h"

/* (-1 where none: gt_trace_writer_pid caches it) */
long gt_file_writer_pid(const char *path)
{
    struct stat want;
    if (stat(path, &want) != 0 || !S_ISREG(want.st_mode))
        return 0;
    DIR *proc = opendir("/proc");
    if (!proc)
        return 0;
    long found = 0, self = (long)getpid();
    struct dirent *p;
    while (!found && (p = readdir(proc))) {
        if (!isdigit((unsigned char)p->d_name[0]))
            continue;
        long pid = atol(p->d_name);
        if (pid == self)
            continue;   /* (the analyzer's own connection) */
        char dir[64];
        snprintf(dir, sizeof dir, "/proc/%ld/fd", pid);
        DIR *fds = opendir(dir);   /* another user's: not readable, passed over */
        if (!fds)
            continue;
        struct dirent *f;
        while (!found && (f = readdir(fds))) {
            char fd[64 + sizeof f->d_name];
            struct stat st;
            if (f->d_name[0] == '.')
                continue;
            snprintf(fd, sizeof fd, "%s/%s", dir, f->d_name);
            if (stat(fd, &st) == 0 && st.st_dev == want.st_dev && st.st_ino == want.st_ino)
                found = pid;
        }
        closedir(fds);
    }
    closedir(proc);
    return found ? found : -1;
}

long gt_trace_writer_pid(struct gt_trace *t)
{
    if (t->proc.end_reason)
        return 0;   /* closed: nobody writes it */
    if (!t->writer_pid)
        t->writer_pid = gt_file_writer_pid(t->path);
    return t->writer_pid > 0 ? t->writer_pid : 0;
}
