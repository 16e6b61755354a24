/* lastthread.c - is a thread the process's last? After the main thread
 * left by pthread_exit, the process ends with its last thread; when that is
 * the shim's writer, it is what keeps the process alive, which the program
 * never asked for (writer.c ends it then). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

/* "pid (comm) S ...": comm may hold anything, the state follows its last ')' */
static bool main_is_zombie(pid_t pid)
{
    char path[64], buf[256];
    snprintf(path, sizeof path, "/proc/self/task/%d/stat", (int)pid);
    FILE *f = fopen(path, "re");
    size_t n = f ? fread(buf, 1, sizeof buf - 1, f) : 0;
    if (f)
        fclose(f);
    buf[n] = 0;
    const char *p = strrchr(buf, ')');
    return p && p[1] == ' ' && p[2] == 'Z';
}

bool gt_only_thread_left(pid_t tid, pid_t also_ours)
{
    DIR *d = opendir("/proc/self/task");
    if (!d)
        return false;
    pid_t pid = getpid();
    bool other = false;
    for (struct dirent *e; !other && (e = readdir(d));) {
        pid_t t = (pid_t)atol(e->d_name);
        /* the main thread lingers as a zombie until the process ends (a fork
         * child's main thread is the one that forked: alive) */
        other = t > 0 && t != tid && t != also_ours && (t != pid || !main_is_zombie(pid));
    }
    closedir(d);
    return !other;
}
