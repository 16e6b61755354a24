/* libunwind, loaded at the first CUDA call rather than linked: a process that
 * never calls CUDA (every shell, compiler and DataLoader worker inherits
 * LD_PRELOAD) then never maps libunwind and its own dependencies (liblzma).
 * The names to look up are the real symbols behind libunwind's macros
 * (unw_get_accessors -> _ULx86_64_get_accessors), spelled by stringifying the
 * macros themselves, so the code stays architecture-neutral. */
#include <dlfcn.h>
#include <stdio.h>

#include "shim.h"

#define GT_STR_(x) #x
#define GT_STR(x) GT_STR_(x)

/* The SONAME libunwind has had since 1.0; the shim's $ORIGIN runpath lets a
 * copy beside the shim win (the GPU recipe in tests/gpu relies on it). */
#define GT_LIBUNWIND "libunwind.so.8"

struct gt_unwind gt_unw;

bool gt_unwind_load(char *why, size_t cap)
{
    if (gt_unw.backtrace)
        return true;
    void *h = dlopen(GT_LIBUNWIND, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(why, cap, "cannot load %s (%s)", GT_LIBUNWIND, dlerror());
        return false;
    }
    void *bt = dlsym(h, GT_STR(unw_backtrace));
    void *acc = dlsym(h, GT_STR(unw_get_accessors));
    void *pol = dlsym(h, GT_STR(unw_set_caching_policy));
    void *as = dlsym(h, GT_STR(unw_local_addr_space));
    if (!bt || !acc || !pol || !as) {
        snprintf(why, cap, "%s lacks the functions the shim needs", GT_LIBUNWIND);
        return false;
    }
    gt_unw.get_accessors = (unw_accessors_t * (*)(unw_addr_space_t)) acc;
    gt_unw.local_addr_space = *(unw_addr_space_t *)as;
    ((int (*)(unw_addr_space_t, unw_caching_policy_t))pol)(gt_unw.local_addr_space, UNW_CACHE_PER_THREAD);
    gt_unw.backtrace = (int (*)(void **, int))bt;   /* last: its being set means "loaded" */
    return true;
}
