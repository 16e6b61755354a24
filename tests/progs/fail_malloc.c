/* Preloaded after the shim by a test that needs one of the shim's
 * allocations to fail (test_window.py): malloc of a size listed in
 * FAIL_MALLOC_SIZES (comma-separated bytes) returns NULL, on any thread;
 * every other call is glibc's own. Not under a sanitizer, whose allocator
 * would be handed memory it did not give. */
#include <errno.h>
#include <stdlib.h>

extern void *__libc_malloc(size_t n);

static size_t sizes[8];
static int nsizes;

__attribute__((constructor)) static void parse(void)
{
    const char *s = getenv("FAIL_MALLOC_SIZES");
    for (char *end; s && *s && nsizes < 8; s = *end == ',' ? end + 1 : "")
        sizes[nsizes++] = (size_t)strtoull(s, &end, 10);
}

__attribute__((visibility("default"))) void *malloc(size_t n)
{
    for (int i = 0; i < nsizes; i++)
        if (n == sizes[i]) {
            errno = ENOMEM;
            return NULL;
        }
    return __libc_malloc(n);
}
