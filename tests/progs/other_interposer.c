/* Another LD_PRELOAD interposer of the runtime's cudaMalloc (as
 * torch_memory_saver's preload mode is): says it ran, and passes the call on
 * to the next definition. test_capture.py preloads it beside the shim, in
 * either order, under a library that calls the runtime it was linked with. */

#include <dlfcn.h>
#include <stddef.h>
#include <stdio.h>

int cudaMalloc(void **p, size_t n);

int cudaMalloc(void **p, size_t n)
{
    static int (*next)(void **, size_t);
    if (!next)
        next = (int (*)(void **, size_t))dlsym(RTLD_NEXT, "cudaMalloc");
    printf("other interposer: cudaMalloc %zu\n", n);
    return next ? next(p, n) : 35;
}
