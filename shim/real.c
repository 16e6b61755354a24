/* Finds the real definition of an interposed function: the next one after us
 * in the global scope (dlsym RTLD_NEXT), or, when the library that defines it
 * was dlopen'ed RTLD_LOCAL (Python extension modules do this), that library
 * found among the loaded objects by name. Never loads anything itself.
 * Every real function the shim calls is a struct gt_hook row resolved here
 * once (gt_hook_real). Uses glibc's dlsym, found here too (gt_dlsym_real):
 * ours (entrypoints.c) would ask us again. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "shim.h"

#define MAX_CANDIDATES 8

/* ---- glibc's dlsym ------------------------------------------------------
 * Found with dlvsym (never interposed). entrypoints.c's dlsym stub reads
 * gt_dlsym_next and calls gt_dlsym_resolve while it is not yet known.
 * A sanitizer's runtime (ThreadSanitizer's) looks up its interceptors with
 * dlsym during its own initialisation, which reaches this function before
 * the runtime can take an instrumented call: so this function carries no
 * sanitizer instrumentation (GT_UNINSTRUMENTED). Two threads may race to store the same address: relaxed atomics,
 * as the stub's plain 8-byte load is on x86-64. */
void *gt_dlsym_next;
void *gt_dlsym_resolve(void);

GT_UNINSTRUMENTED void *gt_dlsym_resolve(void)
{
    void *p = __atomic_load_n(&gt_dlsym_next, __ATOMIC_RELAXED);
    if (!p) {
        p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.34");
        if (!p)
            p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.2.5"); /* x86_64 before 2.34 */
        if (!p)
            p = dlvsym(RTLD_NEXT, "dlsym", "GLIBC_2.17"); /* aarch64 before 2.34 */
        __atomic_store_n(&gt_dlsym_next, p, __ATOMIC_RELAXED);
    }
    return p;
}

void *gt_dlsym_real(void *handle, const char *name)
{
    void *(*real)(void *, const char *) = (void *(*)(void *, const char *))gt_dlsym_resolve();
    return real ? real(handle, name) : NULL;
}

/* ---- searching the loaded objects --------------------------------------- */

/* Names of loaded objects matching the hint, collected while the loader's
 * lock is held; they are opened only after dl_iterate_phdr returned: a
 * dlopen inside its callback takes the loader's locks in the opposite order
 * to a dlopen on another thread, and the two threads deadlock. */
struct candidates {
    const char *hint;
    int n;
    char name[MAX_CANDIDATES][512];
};

static bool is_ours(void *p)
{
    Dl_info a, b;
    return dladdr(p, &a) && dladdr((void *)&gt_real_symbol, &b) && a.dli_fbase == b.dli_fbase;
}

/* Is file (a loaded object's name) the library hint names ("libcudart.so")?
 * Its base name starts with the hint's stem ("libcudart") followed by '.' or
 * '-': a wheel repaired by auditwheel carries the runtime renamed
 * (torch/lib/libcudart-d0da41ae.so.11.0), loaded RTLD_LOCAL where RTLD_NEXT
 * does not see it; every hooked call then failed with error 302. */
static bool names_library(const char *file, const char *hint)
{
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    const char *so = strstr(hint, ".so");
    size_t stem = so ? (size_t)(so - hint) : strlen(hint);
    return !strncmp(base, hint, stem) && (base[stem] == '.' || base[stem] == '-');
}

static int collect(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct candidates *c = data;
    if (info->dlpi_name && names_library(info->dlpi_name, c->hint) &&
        (size_t)snprintf(c->name[c->n], sizeof c->name[0], "%s", info->dlpi_name) < sizeof c->name[0])
        c->n++;
    return c->n == MAX_CANDIDATES;
}

/* name: symbol; lib_hint: substring of the defining library's file name
 * ("libcudart.so", "libcuda.so"). Returns NULL if no real definition exists.
 * A failed lookup of ours leaves no dlerror() message for the program. */
void *gt_real_symbol(const char *name, const char *lib_hint)
{
    void *p = gt_dlsym_real(RTLD_NEXT, name);
    if (p && !is_ours(p))
        return p;
    struct candidates c = {.hint = lib_hint};
    dl_iterate_phdr(collect, &c);
    for (int i = 0; i < c.n; i++) {
        void *h = dlopen(c.name[i], RTLD_LAZY | RTLD_NOLOAD);
        if (!h)
            continue;
        p = gt_dlsym_real(h, name);
        dlclose(h); /* RTLD_NOLOAD took a reference; the object stays loaded */
        if (p && !is_ours(p))
            return p;
    }
    (void)dlerror();
    return NULL;
}

static int count_loads(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    *(unsigned long long *)data = info->dlpi_adds + info->dlpi_subs;
    return 1;
}

/* Changes whenever an object is loaded or unloaded. */
unsigned long long gt_loaded_generation(void)
{
    unsigned long long gen = 0;
    dl_iterate_phdr(count_loads, &gen);
    return gen;
}

/* ---- hook rows ------------------------------------------------------------ */

void *gt_hook_real(struct gt_hook *h)
{
    void *p = atomic_load_explicit(&h->real, memory_order_acquire);
    if (p)
        return p;
    /* A function the loaded libraries lack (an older cudart has no
     * cudaGetDriverEntryPointByVersion) is not searched for again on every
     * entry-point query, only once something new was loaded. */
    unsigned long long gen = gt_loaded_generation();
    if (atomic_load_explicit(&h->missed_at, memory_order_relaxed) == gen)
        return NULL;
    p = gt_real_symbol(h->name, h->lib);
    if (p)
        atomic_store_explicit(&h->real, p, memory_order_release);
    else
        atomic_store_explicit(&h->missed_at, gen, memory_order_relaxed);
    return p;
}

#define LIBC_ROW(name) [GT_LIBC_##name] = {#name, NULL, "libc.so", NULL, 0},
struct gt_hook gt_libc_hooks[GT_LIBC_N] = {GT_LIBC_FUNCTIONS(LIBC_ROW)};

/* The real libc function for hooks_process.c's pass-through while no trace
 * watches signals: ThreadSanitizer's runtime installs its fatal-signal
 * handlers through our sigaction while it initialises, before an
 * instrumented call (gt_hook_real's) can run. libc's definitions are always
 * the next after us in the global scope, so RTLD_NEXT from here finds them
 * (or a sanitizer's interceptor in front of them, as without us). Stores
 * the same address gt_hook_real would. */
GT_UNINSTRUMENTED void *gt_libc_real_uninstrumented(enum gt_libc_fn fn)
{
    struct gt_hook *h = &gt_libc_hooks[fn];
    void *p = __atomic_load_n(&h->real, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    void *(*dl)(void *, const char *) = (void *(*)(void *, const char *))gt_dlsym_resolve();
    p = dl ? dl(RTLD_NEXT, h->name) : NULL;
    if (p)
        __atomic_store_n(&h->real, p, __ATOMIC_RELEASE);
    return p;
}

/* At trace start (lifecycle.c): hooks_process.c's real functions, all now. */
void gt_libc_hooks_resolve(void)
{
    for (int i = 0; i < GT_LIBC_N; i++)
        gt_hook_real(&gt_libc_hooks[i]);
}
