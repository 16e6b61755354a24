/* Test helper, preloaded before the shim: makes the race between the shim's
 * exclusive create of the trace and SQLite's open of the same name certain.
 * At the first open() of $SWAP_TO without O_EXCL (SQLite's, not the shim's
 * create), it first renames $SWAP_FROM (a symbolic link) over $SWAP_TO. */
#undef _FILE_OFFSET_BITS /* open and open64 both defined here, neither renamed */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int done;

static void maybe_swap(const char *path, int flags)
{
    const char *to = getenv("SWAP_TO"), *from = getenv("SWAP_FROM");
    if (!done && to && from && !(flags & O_EXCL) && !strcmp(path, to)) {
        done = 1;
        rename(from, to);
    }
}

/* open and open64: the same, each forwarding to its own real function. */
#define SWAPPING_OPEN(name)                                                          \
    int name(const char *path, int flags, ...)                                       \
    {                                                                                \
        static int (*real)(const char *, int, ...);                                  \
        if (!real)                                                                   \
            real = (int (*)(const char *, int, ...))dlsym(RTLD_NEXT, #name);         \
        va_list ap;                                                                  \
        va_start(ap, flags);                                                         \
        int mode = (flags & O_CREAT) ? va_arg(ap, int) : 0;                          \
        va_end(ap);                                                                  \
        maybe_swap(path, flags);                                                     \
        return real(path, flags, mode);                                              \
    }

SWAPPING_OPEN(open)
SWAPPING_OPEN(open64)
