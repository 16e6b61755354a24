/* Preloaded after the shim by a test that needs one of the shim's
 * allocations to fail (test_window.py): malloc of a size listed in
 * FAIL_MALLOC_SIZES (comma-separated bytes) returns NULL, on any thread
 * (only the first FAIL_MALLOC_TIMES such calls, if set); every other call is
 * glibc's own. Not under a sanitizer, whose allocator
 * would be handed memory it did not give. */
#include <errno.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t n);

static size_t sizes[8];
static int nsizes;
static int limited;   /* FAIL_MALLOC_TIMES set: */
static long left;     /* failures left (below 0 once spent) */

__attribute__((constructor)) static void parse(void)
{
    const char *s = getenv("FAIL_MALLOC_SIZES");
    for (char *end; s && *s && nsizes < 8; s = *end == ',' ? end + 1 : "")
        sizes[nsizes++] = (size_t)strtoull(s, &end, 10);
    const char *t = getenv("FAIL_MALLOC_TIMES");
    if (t && *t) {
        limited = 1;
        left = atol(t);
    }
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
    for (int i = 0; i < nsizes; i++)
        if (n == sizes[i] && (!limited || __atomic_fetch_sub(&left, 1, __ATOMIC_RELAXED) > 0)) {
            errno = ENOMEM;
            return NULL;
        }
    return __libc_malloc(n);
}
