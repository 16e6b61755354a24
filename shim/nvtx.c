/* NVTX v3 injection with nothing but LD_PRELOAD: the constructor points
 * NVTX_INJECTION64_PATH at this library, so the first NVTX call of every NVTX
 * instance in the process (each library compiles its own) dlopens us, finds us
 * already loaded and calls InitializeInjectionNvtx2, where we fill in its
 * function table with the handlers below. Handlers copy the message and hand
 * it to ranges.c; they never block and never touch SQLite. */
#include <dlfcn.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <wchar.h>

#define NVTX_NO_IMPL
#include <nvtx3/nvToolsExt.h>

#include "activity.h"

/* ---- strings ---- */

static char *dup_str(const char *s)
{
    return gt_message_copy(s);
}

/* wchar_t is UTF-32 on Linux: encode as UTF-8. */
static char *dup_wide(const wchar_t *w)
{
    if (!w)
        return NULL;
    size_t n = wcslen(w);
    char *out = malloc(n * 4 + 1), *o = out;
    if (!out)
        return NULL;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = (uint32_t)w[i];
        if (c < 0x80) {
            *o++ = (char)c;
        } else if (c < 0x800) {
            *o++ = (char)(0xc0 | c >> 6);
            *o++ = (char)(0x80 | (c & 0x3f));
        } else if (c >= 0xd800 && c < 0xe000) {
            *o++ = (char)0xef;   /* a lone surrogate: U+FFFD */
            *o++ = (char)0xbf;
            *o++ = (char)0xbd;
        } else if (c < 0x10000) {
            *o++ = (char)(0xe0 | c >> 12);
            *o++ = (char)(0x80 | (c >> 6 & 0x3f));
            *o++ = (char)(0x80 | (c & 0x3f));
        } else if (c < 0x110000) {
            *o++ = (char)(0xf0 | c >> 18);
            *o++ = (char)(0x80 | (c >> 12 & 0x3f));
            *o++ = (char)(0x80 | (c >> 6 & 0x3f));
            *o++ = (char)(0x80 | (c & 0x3f));
        } else {
            *o++ = (char)0xef;   /* past U+10FFFF: U+FFFD */
            *o++ = (char)0xbf;
            *o++ = (char)0xbd;
        }
    }
    *o = 0;
    char *kept = gt_message_copy(out);
    free(out);
    return kept;
}

/* Domain names and registered strings live as long as the process: NVTX
 * hands their handles back on every call. Usually a few, but a program may
 * register one per name it ever uses (80,000 took 8.8 s through a list, 0
 * without the shim): a hash table, locked (registration is not per range). */
#define INTERN_BUCKETS 4096
struct interned { struct interned *next; char text[]; };
static struct interned *interned[INTERN_BUCKETS];
static pthread_mutex_t intern_mu = PTHREAD_MUTEX_INITIALIZER;

gt_domain gt_domain_intern(const char *raw)
{
    /* kept as messages are: capped and valid UTF-8 (a domain named in
     * Latin-1 made Python's sqlite3 fail on the ranges table) */
    char *name = gt_message_copy(raw);
    if (!name)
        return NULL;
    uint32_t h = 2166136261u;   /* FNV-1a */
    for (const unsigned char *c = (const unsigned char *)name; *c; c++)
        h = (h ^ *c) * 16777619u;
    struct interned **head = &interned[h % INTERN_BUCKETS], *i;
    pthread_mutex_lock(&intern_mu);
    for (i = *head; i; i = i->next)
        if (!strcmp(i->text, name))
            break;
    if (!i && (i = malloc(sizeof *i + strlen(name) + 1))) {
        strcpy(i->text, name);
        i->next = *head;
        *head = i;
    }
    pthread_mutex_unlock(&intern_mu);
    free(name);
    return i ? i->text : NULL;
}

static gt_domain intern_wide(const wchar_t *w)
{
    char *s = dup_wide(w);
    gt_domain d = gt_domain_intern(s);
    free(s);
    return d;
}

static char *attr_message(const nvtxEventAttributes_t *a)
{
    if (!a || a->size < offsetof(nvtxEventAttributes_t, message) + sizeof a->message)
        return NULL;
    switch (a->messageType) {
    case NVTX_MESSAGE_TYPE_ASCII: return dup_str(a->message.ascii);
    case NVTX_MESSAGE_TYPE_UNICODE: return dup_wide(a->message.unicode);
    case NVTX_MESSAGE_TYPE_REGISTERED: return dup_str((const char *)a->message.registered);
    default: return NULL;
    }
}

#define DOM(d) ((gt_domain)(const void *)(d))

/* ---- handlers: core module (default domain) ---- */

static void mark_ex(const nvtxEventAttributes_t *a) { gt_mark(GT_SRC_NVTX, NULL, attr_message(a)); }
static void mark_a(const char *m) { gt_mark(GT_SRC_NVTX, NULL, dup_str(m)); }
static void mark_w(const wchar_t *m) { gt_mark(GT_SRC_NVTX, NULL, dup_wide(m)); }
static nvtxRangeId_t start_ex(const nvtxEventAttributes_t *a) { return gt_range_start(GT_SRC_NVTX, NULL, attr_message(a)); }
static nvtxRangeId_t start_a(const char *m) { return gt_range_start(GT_SRC_NVTX, NULL, dup_str(m)); }
static nvtxRangeId_t start_w(const wchar_t *m) { return gt_range_start(GT_SRC_NVTX, NULL, dup_wide(m)); }
static void range_end(nvtxRangeId_t id) { gt_range_end(id); }
static int push_ex(const nvtxEventAttributes_t *a) { return gt_range_push(GT_SRC_NVTX, NULL, attr_message(a)); }
static int push_a(const char *m) { return gt_range_push(GT_SRC_NVTX, NULL, dup_str(m)); }
static int push_w(const wchar_t *m) { return gt_range_push(GT_SRC_NVTX, NULL, dup_wide(m)); }
static int pop(void) { return gt_range_pop(GT_SRC_NVTX, NULL); }

/* ---- handlers: core2 module (domains) ---- */

static void dmark_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { gt_mark(GT_SRC_NVTX, DOM(d), attr_message(a)); }
static nvtxRangeId_t dstart_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { return gt_range_start(GT_SRC_NVTX, DOM(d), attr_message(a)); }
static void dend(nvtxDomainHandle_t d, nvtxRangeId_t id) { (void)d; gt_range_end(id); }
static int dpush_ex(nvtxDomainHandle_t d, const nvtxEventAttributes_t *a) { return gt_range_push(GT_SRC_NVTX, DOM(d), attr_message(a)); }
static int dpop(nvtxDomainHandle_t d) { return gt_range_pop(GT_SRC_NVTX, DOM(d)); }
static nvtxStringHandle_t dreg_a(nvtxDomainHandle_t d, const char *s) { (void)d; return (nvtxStringHandle_t)(void *)gt_domain_intern(s); }
static nvtxStringHandle_t dreg_w(nvtxDomainHandle_t d, const wchar_t *s) { (void)d; return (nvtxStringHandle_t)(void *)intern_wide(s); }
static nvtxDomainHandle_t dcreate_a(const char *name) { return (nvtxDomainHandle_t)(void *)gt_domain_intern(name); }
static nvtxDomainHandle_t dcreate_w(const wchar_t *name) { return (nvtxDomainHandle_t)(void *)intern_wide(name); }
static void ddestroy(nvtxDomainHandle_t d) { (void)d; /* handles stay valid: records may still name it */ }
static void initialize(const void *reserved) { (void)reserved; }

struct handler { unsigned id; NvtxFunctionPointer fn; };
#define H(id, fn) {id, (NvtxFunctionPointer)(fn)}

static const struct handler core[] = {
    H(NVTX_CBID_CORE_MarkEx, mark_ex),         H(NVTX_CBID_CORE_MarkA, mark_a),
    H(NVTX_CBID_CORE_MarkW, mark_w),           H(NVTX_CBID_CORE_RangeStartEx, start_ex),
    H(NVTX_CBID_CORE_RangeStartA, start_a),    H(NVTX_CBID_CORE_RangeStartW, start_w),
    H(NVTX_CBID_CORE_RangeEnd, range_end),     H(NVTX_CBID_CORE_RangePushEx, push_ex),
    H(NVTX_CBID_CORE_RangePushA, push_a),      H(NVTX_CBID_CORE_RangePushW, push_w),
    H(NVTX_CBID_CORE_RangePop, pop),
};
static const struct handler core2[] = {
    H(NVTX_CBID_CORE2_DomainMarkEx, dmark_ex),           H(NVTX_CBID_CORE2_DomainRangeStartEx, dstart_ex),
    H(NVTX_CBID_CORE2_DomainRangeEnd, dend),             H(NVTX_CBID_CORE2_DomainRangePushEx, dpush_ex),
    H(NVTX_CBID_CORE2_DomainRangePop, dpop),             H(NVTX_CBID_CORE2_DomainRegisterStringA, dreg_a),
    H(NVTX_CBID_CORE2_DomainRegisterStringW, dreg_w),    H(NVTX_CBID_CORE2_DomainCreateA, dcreate_a),
    H(NVTX_CBID_CORE2_DomainCreateW, dcreate_w),         H(NVTX_CBID_CORE2_DomainDestroy, ddestroy),
    H(NVTX_CBID_CORE2_Initialize, initialize),
};

/* Writes our handlers into one module's table of the calling NVTX instance.
 * A race by NVTX's design, not avoidable from here: NVTX calls us from
 * nvtxInitOnce (nvtxDetail/nvtxInit.h) on the first thread to use it while
 * other threads may already read the same function pointers with plain
 * loads (nvtxImplCore.h: "if (fnptr) fnptr(...)"), and NVIDIA's header
 * itself reads its init state plainly (nvtxInit.h). Such a reader sees the
 * old pointer (NVTX's init stub, which waits for the init to finish and
 * then calls ours) or ours: both record the range. Our stores are release
 * atomics, so the race is the header's plain loads alone; the thread stage
 * (tests/sanitizer/tsan.supp) suppresses races with NVTX's header frames
 * only. */
static bool install(const NvtxExportTableCallbacks *cb, NvtxCallbackModule module, const struct handler *h,
                    size_t n)
{
    NvtxFunctionTable table = NULL;
    unsigned int size = 0;
    if (!cb->GetModuleFunctionTable(module, &table, &size) || !table)
        return false;
    for (size_t i = 0; i < n; i++)
        if (h[i].id < size && table[h[i].id])
            __atomic_store_n(table[h[i].id], h[i].fn, __ATOMIC_RELEASE);
    return true;
}

/* The NVTX injection entry point, once per NVTX instance (per library that
 * includes the NVTX headers). Returning 0 turns that instance into no-ops. */
GT_EXPORT int InitializeInjectionNvtx2(NvtxGetExportTableFunc_t get)
{
    if (!get || gt_config.disabled || !gt_config.nvtx)
        return 0;
    /* A child that inherited NVTX_INJECTION64_PATH but not LD_PRELOAD loads us
     * here for the first time, outside the global scope: nothing of ours
     * interposes there and no trace would start, so decline (NVTX unloads us). */
    void *main_scope = dlopen(NULL, RTLD_LAZY); /* not RTLD_DEFAULT: that would search our own local scope too */
    bool global = main_scope && dlsym(main_scope, "InitializeInjectionNvtx2") == (void *)InitializeInjectionNvtx2;
    if (main_scope)
        dlclose(main_scope);
    if (!global)
        return 0;
    const NvtxExportTableCallbacks *cb = get(NVTX_ETID_CALLBACKS);
    if (!cb || cb->struct_size < sizeof *cb || !cb->GetModuleFunctionTable)
        return 0;
    const NvtxExportTableVersionInfo *vi = get(NVTX_ETID_VERSIONINFO);
    if (vi && vi->struct_size >= sizeof *vi && vi->SetInjectionNvtxVersion)
        vi->SetInjectionNvtxVersion(NVTX_VERSION);
    bool ok = install(cb, NVTX_CB_MODULE_CORE, core, sizeof core / sizeof core[0]);
    install(cb, NVTX_CB_MODULE_CORE2, core2, sizeof core2 / sizeof core2[0]);
    return ok;
}

static bool same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    return stat(a, &sa) == 0 && stat(b, &sb) == 0 && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
}

/* Constructor: point NVTX at this library unless another tool (Nsight
 * Systems sets the same variable) already injects; then leave it and say so
 * in the trace, if one is ever written. Child processes inherit the setting. */
void gt_nvtx_setup(void)
{
    if (!gt_config.nvtx)
        return;
    Dl_info info;
    char self[PATH_MAX];
    if (!dladdr((void *)&gt_nvtx_setup, &info) || !info.dli_fname || !realpath(info.dli_fname, self)) {
        gt_note("nvtx", false, "cannot find the path of the gputrace library; NVTX ranges are not recorded");
        return;
    }
    const char *cur = getenv("NVTX_INJECTION64_PATH");
    if (cur && *cur && !same_file(cur, self)) {
        gt_note("nvtx", false,
                "NVTX_INJECTION64_PATH is already set to %s (another tool, such as Nsight Systems, "
                "receives NVTX): NVTX ranges are not recorded; gputrace_* markers still are",
                cur);
        return;
    }
    setenv("NVTX_INJECTION64_PATH", self, 1);
}
