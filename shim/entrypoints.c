/* How a program reaches CUDA without naming the symbol we interpose, and how
 * we still hand it our hooks: dlsym on a handle of libcuda/libcudart
 * (statically linked cudart dlopens libcuda.so.1 and asks for
 * cuGetProcAddress_v2), the driver's cuGetProcAddress(_v2), and the runtime's
 * cudaGetDriverEntryPoint(ByVersion) (PyTorch's expandable segments get
 * cuMemCreate/cuMemMap that way). Each calls the real function, then hands
 * back our wrapper when the answer is the real address of a function we hook
 * (so the requested version and _ptsz/_ptds variant are the driver's choice,
 * not ours), and the real answer untouched otherwise. */
#include <cuda.h>
#pragma GCC diagnostic ignored "-Wdeprecated-declarations" /* cudaGetDriverEntryPoint: deprecated, still used */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

#undef cuGetProcAddress
/* The pre-12.0 query (no status argument), still exported by libcuda. */
CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags);
extern __typeof__(cudaGetDriverEntryPoint) cudaGetDriverEntryPoint_ptsz;
extern __typeof__(cudaGetDriverEntryPointByVersion) cudaGetDriverEntryPointByVersion_ptsz;

/* ---- the registry of hooks ----------------------------------------------
 * Every interposer a lookup may hand out: the runtime's and driver's tables
 * and the entry-point queries below. Their real functions are found by
 * real.c (gt_hook_real), one row at a time. */

static const struct gt_hook_table entry_table;
static const struct gt_hook_table *const tables[] = {&gt_runtime_hooks, &gt_driver_hooks, &gt_cupti_hooks, &entry_table};

static struct gt_hook *hook_named(const char *name)
{
    for (size_t t = 0; t < sizeof tables / sizeof tables[0]; t++)
        for (size_t i = 0; i < tables[t]->n; i++)
            if (!strcmp(tables[t]->hooks[i].name, name))
                return &tables[t]->hooks[i];
    return NULL;
}

/* For an address the driver handed out: our wrapper if it is the real
 * address of a driver function (or entry-point query) we hook. */
static void *swap_driver_pointer(void *p)
{
    if (!p || gt_config.disabled)
        return p;
    const struct gt_hook_table *drv[] = {&gt_driver_hooks, &entry_table};
    for (size_t t = 0; t < 2; t++)
        for (size_t i = 0; i < drv[t]->n; i++)
            if (gt_hook_real(&drv[t]->hooks[i]) == p)
                return drv[t]->hooks[i].wrapper;
    return p;
}

/* GPUTRACE_DEBUG_HOOKS=1: one stderr line per lookup we see (to find out how
 * an unfamiliar program reaches CUDA). Never stdout: write(2), no FILE stream. */
static void debug_lookup(const char *via, const char *symbol, long version, unsigned long long flags, void *real,
                         void *given)
{
    if (!gt_config.debug_hooks)
        return;
    /* not handed our hook: what the exported symbol of that name is, to see
     * whether the driver answered with another address than its export */
    char hint[160] = "";
    for (int v = 0; given == real && symbol && v < 3 && !hint[0]; v++) {
        char name[128];
        snprintf(name, sizeof name, v == 0 ? "%s" : "%s_v%d", symbol, v + 1);
        struct gt_hook *h = hook_named(name);
        if (h)
            snprintf(hint, sizeof hint, " (not hooked: the export %s is %p)", name, atomic_load(&h->real));
    }
    char line[512];
    int n = snprintf(line, sizeof line, "gputrace: debug: %s(%s, version %ld, flags %llu) -> %p%s%s\n", via,
                     symbol ? symbol : "(null)", version, flags, real, given != real ? " (our hook)" : "", hint);
    if (n > 0 && gt_stderr_ok())
        (void)!write(2, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

/* ---- dlsym -----------------------------------------------------------------
 * glibc's dlsym resolves RTLD_NEXT (and the RTLD_DEFAULT scope) relative to
 * its caller's return address, so our dlsym must not be a C function that
 * calls the real one: a small assembly stub jumps straight to glibc for every
 * call except a name starting with "cu" on an explicit handle, and only those
 * reach gt_dlsym_lookup() below. Explicit handles ignore the caller.
 * One more case: RTLD_DEFAULT and the name of a function we hook whose real
 * definition is loaded nowhere. glibc would answer with our export, where
 * without us the lookup fails: programs probe "is CUDA loaded?" exactly so
 * (dlsym(RTLD_DEFAULT, "cuGetProcAddress")). That lookup fails here too. */

static GT_TLS int in_lookup;

/* The answer for a "cu..." name on an explicit handle: our wrapper when the
 * real answer is the real definition of a function we hook. */
static void *swap_named(const char *name, void *p)
{
    if (!p || in_lookup || gt_config.disabled)
        return p;
    in_lookup = 1;
    struct gt_hook *h = hook_named(name);
    void *given = h && gt_hook_real(h) == p ? h->wrapper : p;
    in_lookup = 0;
    if (!strncmp(name, "cuMem", 5) || !strncmp(name, "cuGetProc", 9) || !strncmp(name, "cudaMalloc", 10))
        debug_lookup("dlsym", name, 0, 0, p, given);
    return given;
}

void *gt_dlsym_lookup(void *handle, const char *name);

void *gt_dlsym_lookup(void *handle, const char *name)
{
    void *p = gt_dlsym_real(handle, name);
    if (!p)
        return NULL; /* its dlerror() message stays for the program */
    p = swap_named(name, p);
    (void)dlerror(); /* a success leaves no error to read: not even one of our own lookups */
    return p;
}

int gt_dlsym_default_unloaded(const char *name);
void *gt_dlsym_unloaded_answer(void *handle, const char *name);

/* RTLD_DEFAULT lookup of a name: is it a function we hook that no loaded
 * library defines? (glibc would hand out our export.) */
int gt_dlsym_default_unloaded(const char *name)
{
    if (in_lookup)
        return 0;
    in_lookup = 1;
    struct gt_hook *h = hook_named(name);
    int unloaded = h && !gt_hook_real(h);
    in_lookup = 0;
    return unloaded;
}

/* ... then the answer glibc gives without us: none, with its dlerror().
 * Reached by a jump from the stub, so a tail call would hand glibc the
 * program's return address and RTLD_NEXT would mean "after the program",
 * which finds our export: the call must return here. */
void *gt_dlsym_unloaded_answer(void *handle, const char *name)
{
    (void)handle;
    void *p = gt_dlsym_real(RTLD_NEXT, name);
    __asm__ volatile("" : "+r"(p)); /* not a tail call */
    return p;
}

#if defined(__x86_64__)
/* dlsym(rdi = handle, rsi = name). dlvsym is not interposed: the shim itself
 * needs glibc's dlvsym to find glibc's dlsym (an own definition would be
 * found first and recurse). */
#define GT_DLSYM_STUB(sym, lookup, next, resolve, unloaded, unloaded_answer) \
    ".globl " #sym "\n.type " #sym ", @function\n" #sym ":\n" \
    "  .cfi_startproc\n" \
    "  endbr64\n"                              /* a valid target under CET's IBT (a NOP elsewhere) */ \
    "  test %rsi, %rsi\n  jz 1f\n" \
    "  cmpb $0x63, (%rsi)\n  jne 1f\n"        /* 'c' */ \
    "  cmpb $0x75, 1(%rsi)\n  jne 1f\n"       /* 'u' */ \
    "  test %rdi, %rdi\n  jz 4f\n"            /* RTLD_DEFAULT: scope of the caller */ \
    "  cmp $-1, %rdi\n  je 1f\n"              /* RTLD_NEXT: relative to the caller */ \
    "  jmp " #lookup "\n" \
    "4:push %rdi\n  .cfi_adjust_cfa_offset 8\n" \
    "  push %rsi\n  .cfi_adjust_cfa_offset 8\n" \
    "  sub $8, %rsp\n  .cfi_adjust_cfa_offset 8\n" /* 16-byte aligned call */ \
    "  mov %rsi, %rdi\n" \
    "  call " #unloaded "\n" \
    "  add $8, %rsp\n  .cfi_adjust_cfa_offset -8\n" \
    "  pop %rsi\n  .cfi_adjust_cfa_offset -8\n" \
    "  pop %rdi\n  .cfi_adjust_cfa_offset -8\n" \
    "  test %eax, %eax\n  jz 1f\n"            /* loaded somewhere: glibc answers */ \
    "  jmp " #unloaded_answer "\n" \
    "1:mov " #next "(%rip), %rax\n" \
    "  test %rax, %rax\n  jz 2f\n" \
    "  jmp *%rax\n"                           /* glibc sees our caller's return address */ \
    "2:push %rdi\n  .cfi_adjust_cfa_offset 8\n" \
    "  push %rsi\n  .cfi_adjust_cfa_offset 8\n" \
    "  sub $8, %rsp\n  .cfi_adjust_cfa_offset 8\n" /* 16-byte aligned call */ \
    "  call " #resolve "\n" \
    "  add $8, %rsp\n  .cfi_adjust_cfa_offset -8\n" \
    "  pop %rsi\n  .cfi_adjust_cfa_offset -8\n" \
    "  pop %rdi\n  .cfi_adjust_cfa_offset -8\n" \
    "  test %rax, %rax\n  jz 3f\n" \
    "  jmp *%rax\n" \
    "3:ret\n" \
    "  .cfi_endproc\n.size " #sym ", .-" #sym "\n"
__asm__(".text\n" GT_DLSYM_STUB(dlsym, gt_dlsym_lookup, gt_dlsym_next, gt_dlsym_resolve, gt_dlsym_default_unloaded,
                                 gt_dlsym_unloaded_answer));
#endif

/* ---- the entry-point queries ---------------------------------------------- */

#define ENTRY_HOOKS(X) \
    X(cuGetProcAddress_v2, "libcuda.so") \
    X(cuGetProcAddress, "libcuda.so") \
    X(cudaGetDriverEntryPoint, "libcudart.so") \
    X(cudaGetDriverEntryPoint_ptsz, "libcudart.so") \
    X(cudaGetDriverEntryPointByVersion, "libcudart.so") \
    X(cudaGetDriverEntryPointByVersion_ptsz, "libcudart.so")
#define ENTRY_ENUM(sym, lib) E_##sym,
#define ENTRY_ROW(sym, lib) {#sym, (void *)sym, lib, NULL, 0},
enum { ENTRY_HOOKS(ENTRY_ENUM) N_ENTRY_HOOKS };
static struct gt_hook entry_hooks[N_ENTRY_HOOKS];

/* The real function, with the type of the header's declaration. */
#define REAL(sym, missing) \
    __typeof__(&sym) real = (__typeof__(&sym))gt_real_of(&entry_hooks[E_##sym]); \
    if (!real) \
        return missing;

GT_EXPORT CUresult cuGetProcAddress_v2(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags,
                                       CUdriverProcAddressQueryResult *status)
{
    REAL(cuGetProcAddress_v2, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND)
    CUresult rc = real(symbol, pfn, cudaVersion, flags, status);
    if (rc == CUDA_SUCCESS && pfn) {
        void *p = *pfn;
        *pfn = swap_driver_pointer(p);
        debug_lookup("cuGetProcAddress_v2", symbol, cudaVersion, flags, p, *pfn);
    }
    return rc;
}

GT_EXPORT CUresult cuGetProcAddress(const char *symbol, void **pfn, int cudaVersion, cuuint64_t flags)
{
    REAL(cuGetProcAddress, CUDA_ERROR_SHARED_OBJECT_SYMBOL_NOT_FOUND)
    CUresult rc = real(symbol, pfn, cudaVersion, flags);
    if (rc == CUDA_SUCCESS && pfn) {
        void *p = *pfn;
        *pfn = swap_driver_pointer(p);
        debug_lookup("cuGetProcAddress", symbol, cudaVersion, flags, p, *pfn);
    }
    return rc;
}

#define RUNTIME_ENTRY(sym) \
    GT_EXPORT cudaError_t sym(const char *symbol, void **funcPtr, unsigned long long flags, \
                              enum cudaDriverEntryPointQueryResult *status) \
    { \
        REAL(sym, cudaErrorSharedObjectSymbolNotFound) \
        cudaError_t rc = real(symbol, funcPtr, flags, status); \
        if (rc == cudaSuccess && funcPtr) { \
            void *p = *funcPtr; \
            *funcPtr = swap_driver_pointer(p); \
            debug_lookup(#sym, symbol, 0, flags, p, *funcPtr); \
        } \
        return rc; \
    }
#define RUNTIME_ENTRY_BY_VERSION(sym) \
    GT_EXPORT cudaError_t sym(const char *symbol, void **funcPtr, unsigned int cudaVersion, unsigned long long flags, \
                              enum cudaDriverEntryPointQueryResult *status) \
    { \
        REAL(sym, cudaErrorSharedObjectSymbolNotFound) \
        cudaError_t rc = real(symbol, funcPtr, cudaVersion, flags, status); \
        if (rc == cudaSuccess && funcPtr) { \
            void *p = *funcPtr; \
            *funcPtr = swap_driver_pointer(p); \
            debug_lookup(#sym, symbol, cudaVersion, flags, p, *funcPtr); \
        } \
        return rc; \
    }
RUNTIME_ENTRY(cudaGetDriverEntryPoint)
RUNTIME_ENTRY(cudaGetDriverEntryPoint_ptsz)
RUNTIME_ENTRY_BY_VERSION(cudaGetDriverEntryPointByVersion)
RUNTIME_ENTRY_BY_VERSION(cudaGetDriverEntryPointByVersion_ptsz)

static struct gt_hook entry_hooks[N_ENTRY_HOOKS] = {ENTRY_HOOKS(ENTRY_ROW)};
static const struct gt_hook_table entry_table = {entry_hooks, N_ENTRY_HOOKS};
