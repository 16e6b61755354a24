/* errline.c - where the shim's stderr lines may go: only to the stderr the
 * program was started with. A program started with 2>&- that then opened
 * its data file got fd 2, and the shim's summary line went into the file
 * (a helper's probe); one that put its own file on fd 2 did not ask for
 * the shim's lines there either. */
#include <stdbool.h>
#include <sys/stat.h>
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
