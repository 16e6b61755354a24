/* errline.c - where the shim's stderr lines may go: only to the stderr the
 * program was started with. A program started with 2>&- that then opened
 * its data file got fd 2, and the shim's summary line went into the file
 * (a helper's probe); one that put its own file on fd 2 did not ask for
 * the shim's lines there either. */
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "shim.h"

static struct {
    bool open;
    dev_t dev;
    ino_t ino;
} at_start;

void gt_stderr_remember(void)
{
    struct stat st;
    if (fstat(STDERR_FILENO, &st) == 0) {
        at_start.open = true;
        at_start.dev = st.st_dev;
        at_start.ino = st.st_ino;
    }
}

bool gt_stderr_ok(void)
{
    struct stat st;
    return at_start.open && fstat(STDERR_FILENO, &st) == 0 && st.st_dev == at_start.dev && st.st_ino == at_start.ino;
}

/* One line of the shim's on stderr, if it is still the program's stderr.
 * A write to a pipe nobody reads raises SIGPIPE, which killed a program
 * that exited 0 untraced ((prog; echo $?) 2>&1 | true: 141): blocked while
 * the line is written, and one it raised taken back. */
void gt_eprint(const char *fmt, ...)
{
    if (!gt_stderr_ok())
        return;
    sigset_t pipe_only, old, pending;
    sigemptyset(&pipe_only);
    sigaddset(&pipe_only, SIGPIPE);
    bool masked = pthread_sigmask(SIG_BLOCK, &pipe_only, &old) == 0;
    bool was_pending = masked && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fflush(stderr);
    if (masked) {
        if (!was_pending && !sigismember(&old, SIGPIPE) && sigpending(&pending) == 0 && sigismember(&pending, SIGPIPE))
            sigtimedwait(&pipe_only, NULL, &(struct timespec){0, 0});   /* ours: taken back */
        pthread_sigmask(SIG_SETMASK, &old, NULL);
    }
}

