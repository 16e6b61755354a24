/* fdlift.c - where the libraries the shim loads open their descriptors.
 * libunwind opens a pipe when its caching policy is set (the first CUDA
 * call), on the lowest free numbers, and writes a byte of memory into it,
 * after reading one from it, whenever it checks an address while stepping
 * through code without unwind information (JIT code). A program that
 * closes descriptors it does not own (closefrom(3), as daemons do) and
 * opens its own files gets those numbers: libunwind then read from and
 * wrote into the program's file (a helper's probe: own1.dat overwritten in
 * 3 runs of 3). Started with fd 0, 1 or 2 closed, the pipe took them, and
 * the program's printf went into the pipe; SQLite puts /dev/null on a
 * closed 0-2 when it opens the trace and keeps it there (the shim's own
 * SQLite opens above 2, vfs.c; this is for a system SQLite).
 * So while such a library opens its descriptors, the free numbers below a
 * mark are held by copies of /dev/null: 0-2 when closed (the program's own
 * view of them is kept), and for libunwind's pipe all the numbers up to
 * 256 (with a descriptor limit of 512 or more), where a program's reuse
 * after closefrom rarely reaches and from where libunwind, finding its pipe
 * closed, opens a new one instead of writing into a file. */
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include "shim.h"

void gt_fd_lift_begin(struct gt_fd_lift *l, bool high)
{
    l->n = 0;
    int mark = 3;
    struct rlimit rl;
    if (high && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        /* 256: past the numbers a program's reuse reaches, short of the
         * limit (room for its other threads' files meanwhile) and quick
         * (the fewer held, the shorter the moment a fork could copy them) */
        rlim_t cur = rl.rlim_cur == RLIM_INFINITY || rl.rlim_cur > 1024 ? 1024 : rl.rlim_cur;
        if (cur >= 512)
            mark = 256;
    }
    /* each new descriptor takes the lowest free number; the last one taken
     * (at or past the mark, or one too many) is not kept */
    int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);
    while (fd >= 0 && fd < mark && l->n < GT_FD_LIFT_MAX) {
        l->fd[l->n++] = fd;
        fd = fcntl(l->fd[0], F_DUPFD_CLOEXEC, 0);
    }
    if (fd >= 0)
        close(fd);
}

void gt_fd_lift_end(struct gt_fd_lift *l)
{
    for (int i = 0; i < l->n; i++)
        close(l->fd[i]);
    l->n = 0;
}
