/* Resolves an instruction pointer to module, offset and (demangled) function.
 * Runs in the writer thread, once per distinct frame, never on the hot path.
 * dladdr covers exported symbols; libunwind's ELF reader covers static ones
 * in unstripped objects. File:line is left to `gputrace symbolize` (addr2line),
 * which needs no DWARF parser inside the traced process. */
#include <dlfcn.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "shim.h"

typedef char *(*demangle_fn)(const char *, char *, size_t *, int *);

/* libstdc++'s demangler, if the process has loaded it (every C++ program and
 * PyTorch does); we never load it ourselves. Python loads PyTorch RTLD_LOCAL,
 * so RTLD_DEFAULT misses it: gt_real_symbol also searches loaded objects.
 * Writer thread only (kernel names of CUPTI records use it too). */
void gt_demangle(const char *name, char *out, size_t cap)
{
    static demangle_fn demangle;
    static bool looked;
    if (!looked) {
        demangle = (demangle_fn)gt_real_symbol("__cxa_demangle", "libstdc++");
        looked = true;
    }
    if (demangle && name[0] == '_' && name[1] == 'Z') {
        int status = 0;
        char *d = demangle(name, NULL, NULL, &status);
        if (d && status == 0) {
            snprintf(out, cap, "%s", d);
            free(d);
            return;
        }
        free(d);
    }
    snprintf(out, cap, "%s", name);
}

/* libunwind answers with the nearest function symbol below an address, with
 * no size check. In a library stripped to its dynamic symbols (cuBLAS, libc)
 * that is an exported function the address lies past the end of: dladdr1,
 * which checks sizes, would have named it. Such an answer is refused and the
 * frame keeps module + offset (gputrace symbolize may name it later). */
static bool is_exported_symbol_start(uintptr_t start)
{
    Dl_info info;
    return dladdr((void *)start, &info) && info.dli_sname && (uintptr_t)info.dli_saddr == start;
}

void gt_symbolize(uintptr_t ip, bool is_return_address, struct gt_frame_info *out)
{
    memset(out, 0, sizeof(*out));
    /* A return address may point past the end of the calling function. */
    uintptr_t lookup = is_return_address && ip ? ip - 1 : ip;
    Dl_info info;
    const ElfW(Sym) *sym = NULL;
    if (dladdr1((void *)lookup, &info, (void **)&sym, RTLD_DL_SYMENT) && info.dli_fname) {
        /* the loader's name as given: a program started as ../bin/app, or a library found
         * through LD_LIBRARY_PATH=lib, is relative to this process's directory, which
         * symbolize, run elsewhere, does not know (a helper's probe: "no longer on disk",
         * or another file's lines stored). Made absolute here, on the writer thread, once
         * per frame record; a relative name that no longer resolves stays as it was. */
        char abs[PATH_MAX];
        const char *name = info.dli_fname;
        if (name[0] && name[0] != '/' && realpath(name, abs))
            name = abs;
        snprintf(out->module, sizeof out->module, "%.1023s", name);   /* (longer: cut, as before) */
        out->module_offset = ip - (uintptr_t)info.dli_fbase;
        out->has_module = true;
        /* dladdr answers with the nearest exported symbol below ip even when ip
         * lies past its end (a static function follows it): check the size. */
        bool inside = sym && (sym->st_size == 0 || lookup - (uintptr_t)info.dli_saddr < sym->st_size);
        if (info.dli_sname && info.dli_saddr && inside) {
            gt_demangle(info.dli_sname, out->function, sizeof out->function);
            out->symbol_offset = ip - (uintptr_t)info.dli_saddr;
            out->has_function = true;
            return;
        }
    }
    char name[1024];
    unw_word_t off = 0;
    unw_accessors_t *acc = gt_unw.get_accessors ? gt_unw.get_accessors(gt_unw.local_addr_space) : NULL;
    if (acc && acc->get_proc_name &&
        acc->get_proc_name(gt_unw.local_addr_space, lookup, name, sizeof name, &off, NULL) == 0 &&
        !is_exported_symbol_start(lookup - off)) {
        gt_demangle(name, out->function, sizeof out->function);
        out->symbol_offset = off + (ip - lookup);
        out->has_function = true;
    }
}
