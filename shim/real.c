/* Finds the real definition of an interposed function: the next one after us
 * in the global scope (dlsym RTLD_NEXT), or, when the library that defines it
 * was dlopen'ed RTLD_LOCAL (Python extension modules do this), that library
 * found among the loaded objects by name. Never loads anything itself.
 * Uses glibc's dlsym directly: ours (entrypoints.c) would ask us again. */
#include <dlfcn.h>
#include <link.h>
#include <string.h>

#include "shim.h"

struct search { const char *hint; const char *name; void *found; };

static bool is_ours(void *p)
{
    Dl_info a, b;
    return dladdr(p, &a) && dladdr((void *)&gt_real_symbol, &b) && a.dli_fbase == b.dli_fbase;
}

static int visit(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct search *s = data;
    if (!info->dlpi_name || !strstr(info->dlpi_name, s->hint))
        return 0;
    void *h = dlopen(info->dlpi_name, RTLD_LAZY | RTLD_NOLOAD);
    if (!h)
        return 0;
    void *p = gt_dlsym_real(h, s->name);
    dlclose(h); /* RTLD_NOLOAD took a reference; the object stays loaded */
    if (p && !is_ours(p)) {
        s->found = p;
        return 1;
    }
    return 0;
}

/* name: symbol; lib_hint: substring of the defining library's file name
 * ("libcudart.so", "libcuda.so"). Returns NULL if no real definition exists. */
void *gt_real_symbol(const char *name, const char *lib_hint)
{
    void *p = gt_dlsym_real(RTLD_NEXT, name);
    if (p && !is_ours(p))
        return p;
    struct search s = {lib_hint, name, NULL};
    dl_iterate_phdr(visit, &s);
    return s.found;
}
