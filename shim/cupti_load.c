/* cupti_load.c - finding and loading libcupti (CUDA 13's) for cupti.c: the
 * copy the program already loaded if any (two in one process must never
 * happen), else the one beside its libcudart, the toolkit's, the loader's. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cupti_load.h"
#include "shim.h"

struct find { const char *name; char path[4096]; };

/* dl_iterate_phdr visitor: the first loaded object whose path holds f->name. */
static int find_loaded(struct dl_phdr_info *info, size_t size, void *data)
{
    (void)size;
    struct find *f = data;
    if (info->dlpi_name && strstr(info->dlpi_name, f->name)) {
        snprintf(f->path, sizeof f->path, "%s", info->dlpi_name);
        return 1;
    }
    return 0;
}

/* What a load found: the handle, and where the library lies (the object that
 * defines its first symbol: a path the loader resolved, not the name asked for). */
struct found {
    void *h;
    char *path;
    size_t cap;
};

static bool try_open(struct found *to, const char *path, int flags)
{
    void *h = dlopen(path, flags);
    if (!h)
        return false;
    to->h = h;
    Dl_info di;
    void *sym = gt_dlsym_real(h, "cuptiGetVersion");
    snprintf(to->path, to->cap, "%s", sym && dladdr(sym, &di) && di.dli_fname ? di.dli_fname : path);
    return true;
}

/* The sonames tried everywhere: 13 is what we read; 12 only to say "too old". */
static const char *const sonames[] = {"libcupti.so.13", "libcupti.so.12"};

static bool try_dir(struct found *to, const char *dir, const char *sub)
{
    if (!dir || !*dir)
        return false;
    char p[4096];
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++) {
        snprintf(p, sizeof p, "%s%s/%s", dir, sub, sonames[i]);
        if (try_open(to, p, RTLD_NOW | RTLD_LOCAL))
            return true;
    }
    return false;
}

/* Search order: GPUTRACE_CUPTI_PATH alone if set; a libcupti already loaded
 * (PyTorch links one: two copies in a process must never happen); next to
 * the libcudart the program loaded; the CUDA toolkit; the loader's path. */
static bool load(struct found *to, char *why, size_t cap)
{
    if (gt_config.cupti_path[0]) {
        if (try_open(to, gt_config.cupti_path, RTLD_NOW | RTLD_LOCAL))
            return true;
        snprintf(why, cap, "GPUTRACE_CUPTI_PATH=%.400s cannot be loaded (%.400s)", gt_config.cupti_path, dlerror());
        return false;
    }
    struct find f = {"libcupti.so", ""};
    if (dl_iterate_phdr(find_loaded, &f) && try_open(to, f.path, RTLD_NOW | RTLD_NOLOAD))
        return true;
    struct find rt = {"libcudart.so", ""};
    if (dl_iterate_phdr(find_loaded, &rt) && strchr(rt.path, '/')) {
        *strrchr(rt.path, '/') = 0;
        if (try_dir(to, rt.path, ""))
            return true;
    }
    const char *homes[] = {getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda"};
    for (int i = 0; i < 3; i++)
        if (try_dir(to, homes[i], "/lib64") || try_dir(to, homes[i], "/extras/CUPTI/lib64"))
            return true;
    for (size_t i = 0; i < sizeof sonames / sizeof sonames[0]; i++)
        if (try_open(to, sonames[i], RTLD_NOW | RTLD_LOCAL))
            return true;
    snprintf(why, cap, "libcupti.so.13 not found (looked next to libcudart, in $CUDA_HOME, /usr/local/cuda "
                       "and the loader's path; GPUTRACE_CUPTI_PATH names it)");
    return false;
}

void *gt_cupti_load(char *path, size_t path_cap, char *why, size_t why_cap)
{
    struct found to = {NULL, path, path_cap};
    return load(&to, why, why_cap) ? to.h : NULL;
}
