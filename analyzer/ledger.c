/* ledger.c - where a process's device memory went: per device, at the last
 * NVML sample (the end of the trace) and at the peak of memory in use, what
 * the process held split into buckets a user can act on: the framework's
 * allocator (its segments), the stream-ordered pool's reservation, each CUDA
 * library's own memory (by the library on the allocating stack), what was
 * allocated while a CUDA graph was captured (a framework's private pools for
 * graphs: graph_calls), the memory the driver holds for graphs' allocation
 * nodes (read by the shim: graph_memory), the program's other direct
 * allocations, and the CUDA context and driver. The
 * context bucket is measured on its own, at the first NVML sample (taken by
 * the shim right after the program's first allocation): the process's bytes
 * as NVML reports them then, minus everything the trace shows live at that
 * instant. So the buckets at exit adding up to NVML's figure for the process
 * is a check, not a definition: what does not add up is printed as
 * "unaccounted". Beside them: other processes' memory and what is free.
 * Measured on an H100 (PyTorch 2.11): 97.75 MiB stay unaccounted in every
 * allocator mode, 419.75 MiB with CUDA_MODULE_LOADING=EAGER -- kernel modules
 * of libraries initialised after the first sample (cuBLAS); no traced call
 * makes them. So the shim samples once more when the first iteration has
 * ended, and what the trace does not show grew by then is its own bucket,
 * "CUDA modules and library start-up"; what still does not add up at exit
 * came later. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"
#include "ledger.h"
#include "trace_rows.h"

/* Libraries named by a module on the allocating stack (the innermost one
 * wins). PyTorch's own allocator is no library here: its segments are the
 * framework's bucket. */
static const struct { const char *module, *name; } libraries[] = {
    {"libcublasLt", "cuBLASLt"}, {"libcublas", "cuBLAS"},   {"libcudnn", "cuDNN"},     {"libnccl", "NCCL"},
    {"libcufft", "cuFFT"},       {"libcusparse", "cuSPARSE"}, {"libcusolver", "cuSOLVER"}, {"libcurand", "cuRAND"},
    {"libnvrtc", "NVRTC"},       {"libnvJitLink", "nvJitLink"}, {"libcutensor", "cuTENSOR"}, {"libnvshmem", "NVSHMEM"},
};
#define NLIB (sizeof libraries / sizeof *libraries)

/* Frames of a framework's own allocator beside the caching allocators
 * (allocators.c): XLA's buffers, per buffer under its platform allocator;
 * CuPy's arrays without its pool (cupy.cuda.memory.Memory, Cython); RMM's
 * resources that keep no cache.
 * Their memory is the framework bucket. */
static const char *const framework_frames[] = {"cupy.cuda.memory", "cupy/cuda/memory", "_4cupy_4cuda_6memory_",
                                               "rmm::mr::", "libxla", "xla::"};

enum { CAT_FRAMEWORK, CAT_DIRECT, CAT_GRAPH, CAT_LIB0 };
#define NCAT ((int)(CAT_LIB0 + NLIB))

static int site_category(struct gt_trace *t, int32_t site, int *code)
{
    char **f;
    int n;
    *code = gt_trace_frames(t, site, &f, &n);
    for (int k = 0; k < n; k++)
        for (size_t q = 0; q < NLIB; q++)
            if (strstr(f[k], libraries[q].module))
                return CAT_LIB0 + (int)q;
    /* torch.compile(mode="reduce-overhead")'s CUDA graph trees fill their
     * private pool outside any capture (a warm-up run in the pool, then the
     * recording reuses its segments): the segments' Python stacks pass through
     * the trees' module. Not the pool's: what torch.cuda.graphs' capture_begin
     * allocates before the capture opens (the random generator's graph state,
     * in the default pool), though the trees called it. Innermost frame first:
     * the first of the two modules met decides. (An H200 with torch 2.11: the
     * trees' pool 54 MiB, and one 2 MiB segment from capture_begin under the
     * trees that the pool did not hold.) */
    for (int k = 0; k < n; k++) {
        if (strstr(f[k], "torch/cuda/graphs.py"))
            break;
        if (strstr(f[k], "torch/_inductor/cudagraph_trees.py"))
            return CAT_GRAPH;
    }
    if (gt_caching_allocator_of(f, n))
        return CAT_FRAMEWORK;
    for (int k = 0; k < n; k++)
        for (size_t q = 0; q < sizeof framework_frames / sizeof *framework_frames; q++)
            if (strstr(f[k], framework_frames[q]))
                return CAT_FRAMEWORK;
    return CAT_DIRECT;
}

/* Live bytes on device d just before the first event at or after time at:
 * device-level by category, and pool bytes in use. */
struct instant {
    const char *name;    /* "exit", "peak" */
    int64_t t;           /* everything before it counts */
    int64_t shown_t;     /* the time said: the peak's event, the process's end (0: t) */
    int64_t by_cat[NCAT], pool_live, pool_reserved;
    int pool_below;      /* the pool's reading then was below its bytes in use, not taken: 1 and the next
                          * too (not the program's pool), 2 the next is not (read before it grew) */
    int pool_read_later; /* no reading by then, but the pool was read later in the trace */
    int64_t managed_live;   /* managed memory live on the device (its resident pages NVML counts, unseen) */
    int64_t graph_memory;   /* held for graphs' allocation nodes (graph_memory) */
    int64_t modules;     /* kernel modules and library start-up, measured after the first iteration; -1 */
    int have_nvml;
    struct gt_nvml_sample s;
};

/* What device d held at time at, by who holds it (x->by_cat, the pool's
 * bytes in use and its reservation, the graphs' memory, managed memory). A
 * reservation read below the bytes in use is of another pool than the one
 * the program allocates from (only the device's current pool is read): it
 * is not taken (a helper's probe: 1 GiB read for 2 GiB in use, and the
 * missing GiB was named the CUDA context). */
static int live_at(struct gt_ctx *c, int d, int64_t at, int *cat_of, struct instant *x)
{
    struct gt_trace *t = &c->t;
    int64_t *by_cat = x->by_cat;
    memset(by_cat, 0, NCAT * sizeof *by_cat);
    x->pool_live = x->managed_live = 0;
    x->pool_below = 0;
    x->pool_reserved = gt_ledger_pool_reserved_at(c, d, at);
    x->graph_memory = gt_ledger_graph_memory_at(t, d, at);
    for (size_t i = 0; i < t->nev && t->ev[i].t < at; i++) {
        int m, slot;
        int64_t delta = gt_slot_delta(t, &c->p, i, &m, &slot);
        if (!delta || slot != d)
            continue;
        if (m == GT_MEM_POOL) {
            x->pool_live += delta;
            continue;
        }
        if (m == GT_MEM_MANAGED)
            x->managed_live += delta;
        if (m != GT_MEM_DEVICE)
            continue;
        uint32_t a = gt_alloc_of(t, &c->p, i);
        int32_t site = t->ev[a].site;
        int cat = CAT_DIRECT;
        if (t->ev[a].api & GT_API_GRAPH_IN_CAPTURE) {   /* allocated while a CUDA graph was captured */
            by_cat[CAT_GRAPH] += delta;
            continue;
        }
        if (site >= 0) {
            if (cat_of[site] < 0) {
                int code;
                cat_of[site] = site_category(t, site, &code);
                if (code)
                    return code;
            }
            cat = cat_of[site];
        }
        by_cat[cat] += delta;
    }
    if (x->pool_reserved >= 0 && x->pool_reserved < x->pool_live) {
        /* a reading from before the pool last grew (they are about 10 ms
         * apart while it changes: at a peak it has often just grown) is
         * stale, not another pool's: then the next reading holds the use */
        int64_t next = gt_ledger_pool_reserved_after(t, d, at);
        x->pool_reserved = -1;
        x->pool_below = next < 0 || next < x->pool_live ? 1 : 2;
    } else if (x->pool_reserved < 0 && x->pool_live) {
        x->pool_read_later = gt_room_pool_reserved_max(c, d) >= 0;
    }
    return GT_EXIT_OK;
}

/* The instant device d's memory in use (device + pool level) peaked. */
static int64_t peak_instant(struct gt_ctx *c, int d, int64_t *peak, int64_t *shown)
{
    struct gt_trace *t = &c->t;
    int64_t live = 0, at = -1;
    *peak = 0;
    *shown = -1;
    for (size_t i = 0; i < t->nev; i++) {
        int m, slot;
        int64_t delta = gt_slot_delta(t, &c->p, i, &m, &slot);
        if (!delta || slot != d || (m != GT_MEM_DEVICE && m != GT_MEM_POOL))
            continue;
        live += delta;
        if (live > *peak) {
            *peak = live;
            at = t->ev[i].t < INT64_MAX ? t->ev[i].t + 1 : t->ev[i].t;   /* (live_at counts what came before) */
            *shown = t->ev[i].t;
        }
    }
    return at;
}


static int64_t accounted(const struct instant *x, int64_t context)
{
    int64_t sum = (context > 0 ? context : 0) + (x->modules > 0 ? x->modules : 0) + x->graph_memory;
    for (int k = 0; k < NCAT; k++)
        sum += x->by_cat[k];
    return sum + (x->pool_reserved >= 0 ? x->pool_reserved : x->pool_live);
}

#define MODULES_NAME "CUDA modules and library start-up"
#define GRAPH_MEMORY_NAME "CUDA graphs' allocation nodes"

static const char *cat_name(int k)
{
    return k == CAT_FRAMEWORK ? "framework allocator" : k == CAT_DIRECT ? "program's direct allocations"
         : k == CAT_GRAPH ? "CUDA graph capture (private pools)" : libraries[k - CAT_LIB0].name;
}

static const char *cat_kind(int k)
{
    return k == CAT_FRAMEWORK ? "framework" : k == CAT_DIRECT ? "direct" : k == CAT_GRAPH ? "graph_capture" : "library";
}

static void json_instant(struct gt_json *j, const struct instant *x, int64_t context, int per_process)
{
    gt_json_obj(j);
    gt_json_kstr(j, "instant", x->name);
    gt_json_kint(j, "t_ns", x->shown_t > 0 ? x->shown_t : x->t);
    gt_json_key(j, "buckets");
    gt_json_arr(j);
    for (int k = 0; k < NCAT; k++) {
        if (!x->by_cat[k])
            continue;
        gt_json_obj(j);
        gt_json_kstr(j, "name", cat_name(k));
        gt_json_kstr(j, "kind", cat_kind(k));
        gt_json_kint(j, "bytes", x->by_cat[k]);
        gt_json_obj_end(j);
    }
    if (x->pool_live || x->pool_reserved > 0) {
        gt_json_obj(j);
        gt_json_kstr(j, "name", "stream-ordered pool");
        gt_json_kstr(j, "kind", "pool");
        gt_json_kint(j, "bytes", x->pool_reserved >= 0 ? x->pool_reserved : x->pool_live);
        gt_json_kint(j, "in_use_bytes", x->pool_live);
        gt_json_key(j, "reservation_known");
        gt_json_bool(j, x->pool_reserved >= 0);
        gt_json_obj_end(j);
    }
    if (x->graph_memory > 0) {
        gt_json_obj(j);
        gt_json_kstr(j, "name", GRAPH_MEMORY_NAME);
        gt_json_kstr(j, "kind", "graph_memory");
        gt_json_kint(j, "bytes", x->graph_memory);
        gt_json_obj_end(j);
    }
    if (x->modules >= 0) {
        gt_json_obj(j);
        gt_json_kstr(j, "name", MODULES_NAME);
        gt_json_kstr(j, "kind", "modules");
        gt_json_kint(j, "bytes", x->modules);
        gt_json_obj_end(j);
    }
    if (context >= 0) {
        gt_json_obj(j);
        gt_json_kstr(j, "name", "CUDA context and driver");
        gt_json_kstr(j, "kind", "context");
        gt_json_kint(j, "bytes", context);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    int64_t acc = accounted(x, context);
    gt_json_kint(j, "accounted_bytes", acc);
    int nv = x->have_nvml && per_process && x->s.process >= 0;
    gt_json_kint_or_null(j, "nvml_process_bytes", nv ? x->s.process : -1);
    gt_json_key(j, "unaccounted_bytes");
    if (nv && context >= 0)
        gt_json_int(j, x->s.process - acc);
    else
        gt_json_null(j);
    int64_t others = -1, no_ones = -1;
    if (nv)
        gt_nvml_split(&x->s, &others, &no_ones);
    gt_json_kint_or_null(j, "other_processes_bytes", others);
    gt_json_kint_or_null(j, "driver_bytes", no_ones);
    gt_json_kint_or_null(j, "driver_reserved_bytes", x->have_nvml ? x->s.reserved : -1);
    gt_json_kint_or_null(j, "device_used_bytes", x->have_nvml ? x->s.used : -1);
    gt_json_kint_or_null(j, "free_bytes", x->have_nvml && x->s.total > 0 ? x->s.total - x->s.used : -1);
    gt_json_obj_end(j);
}

static void text_instant(const struct instant *x, int64_t context, int per_process)
{
    char b[GT_FMT_LEN], b2[GT_FMT_LEN];
    printf("    at %s (%s):\n", x->name, gt_fmt_ns(x->shown_t > 0 ? x->shown_t : x->t, b));
    for (int k = 0; k < NCAT; k++)
        if (x->by_cat[k])
            printf("      %-34s %12s\n", cat_name(k), gt_fmt_bytes(x->by_cat[k], b));
    if (x->pool_live || x->pool_reserved > 0) {
        if (x->pool_reserved >= 0)
            printf("      %-34s %12s (%s in use)\n", "stream-ordered pool (reserved)", gt_fmt_bytes(x->pool_reserved, b),
                   gt_fmt_bytes(x->pool_live, b2));
        else
            printf("      %-34s %12s in use (its reservation %s)\n", "stream-ordered pool", gt_fmt_bytes(x->pool_live, b),
                   x->pool_below == 2 ? "was not read since it last grew"
                   : x->pool_below ? "read then is below its bytes in use: not the pool the program allocates from"
                   : x->pool_read_later ? "was not read by then" : "is not in the trace: the pool could not be read");
    }
    if (x->graph_memory > 0)
        printf("      %-34s %12s (held by the driver for graphs' runs until trimmed)\n", GRAPH_MEMORY_NAME,
               gt_fmt_bytes(x->graph_memory, b));
    if (x->modules >= 0)
        printf("      %-34s %12s (measured after the first iteration)\n", MODULES_NAME, gt_fmt_bytes(x->modules, b));
    if (context >= 0)
        printf("      %-34s %12s (measured at the start)\n", "CUDA context and driver", gt_fmt_bytes(context, b));
    int64_t acc = accounted(x, context);
    printf("      %-34s %12s\n", "= accounted", gt_fmt_bytes(acc, b));
    if (!x->have_nvml)
        return;
    if (per_process && x->s.process >= 0) {
        printf("      %-34s %12s", "NVML: this process", gt_fmt_bytes(x->s.process, b));
        if (context >= 0) {
            int64_t un = x->s.process - acc;
            printf(", unaccounted %s%s (%.2f%%)", un < 0 ? "-" : "", gt_fmt_bytes(un < 0 ? -un : un, b2),
                   x->s.process ? 100.0 * (double)un / (double)x->s.process : 0.0);
        }
        printf("\n");
        if (context >= 0 && x->s.process - acc > 0 && x->managed_live > 0)
            printf("      %-34s (%s of managed memory is live on the device: its pages there are in NVML's figure,\n"
                   "      %-34s  not in the trace)\n", "", gt_fmt_bytes(x->managed_live, b), "");
        else if (context >= 0 && x->s.process - acc > 0 && x->modules < 0)
            printf("      %-34s (driver memory taken after the first sample that no traced call made: kernel modules\n"
                   "      %-34s  of libraries initialised later, e.g. cuBLAS at its first use)\n", "", "");
        else if (context >= 0 && x->s.process - acc > 0)
            printf("      %-34s (driver memory taken after the first iteration that no traced call made: kernel\n"
                   "      %-34s  modules first used later, e.g. by an evaluation pass)\n", "", "");
        int64_t others, no_ones;
        gt_nvml_split(&x->s, &others, &no_ones);
        if (no_ones >= 0) {
            printf("      %-34s %12s\n", "NVML: other processes", gt_fmt_bytes(others, b));
            printf("      %-34s %12s (no process's", "NVML: driver and firmware", gt_fmt_bytes(no_ones, b));
            if (x->s.reserved >= 0 && x->s.reserved < no_ones)
                printf(": %s set aside, %s in use", gt_fmt_bytes(x->s.reserved, b), gt_fmt_bytes(no_ones - x->s.reserved, b2));
            printf(")\n");
        } else if (x->s.used >= x->s.process) {
            printf("      %-34s %12s (and the driver's own memory: not told apart in this trace)\n",
                   "NVML: other processes", gt_fmt_bytes(x->s.used - x->s.process, b));
        } else {
            printf("      %-34s %12s (NVML's device figure, read a moment apart, is below this process's own:\n"
                   "      %-34s  the two readings disagree)\n", "NVML: other processes", "unknown", "");
        }
    } else {
        printf("      %-34s %12s (all processes: NVML cannot tell this process's share)\n", "NVML: device used",
               gt_fmt_bytes(x->s.used, b));
        if (x->s.reserved >= 0)
            printf("      %-34s %12s (of it, set aside for themselves: no process's)\n", "NVML: driver and firmware",
                   gt_fmt_bytes(x->s.reserved, b));
    }
    if (x->s.total > 0)
        printf("      %-34s %12s of %s\n", "free", gt_fmt_bytes(x->s.total - x->s.used, b), gt_fmt_bytes(x->s.total, b2));
}

/* Memory of other processes mapped here at the end (NCCL peers, CUDA IPC):
 * apart from every bucket above, which are this process's own. */
static int ledger_imported(struct gt_ctx *c, struct gt_json *j)
{
    struct gt_imported im;
    int code = gt_imported_at_end(c, &im);
    if (code)
        return code;
    if (j) {
        gt_json_key(j, "imported_at_end");
        gt_json_obj(j);
        gt_json_kint(j, "ipc_ranges", im.ipc_ranges);
        gt_json_kint(j, "ipc_bytes", im.ipc_bytes);
        gt_json_kint(j, "vmm_handles", im.vmm_handles);
        gt_json_kint(j, "vmm_mapped_bytes", im.vmm_bytes);
        gt_json_obj_end(j);
    } else if (im.ipc_ranges || im.vmm_handles) {
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        printf("  mapped from other processes at the end (NCCL peers, CUDA IPC; theirs, not counted above):\n"
               "    %s in %lld IPC range%s, %s of %lld imported handle%s\n", gt_fmt_bytes(im.ipc_bytes, b1),
               (long long)im.ipc_ranges, gt_s(im.ipc_ranges), gt_fmt_bytes(im.vmm_bytes, b2), (long long)im.vmm_handles,
               gt_s(im.vmm_handles));
    }
    return GT_EXIT_OK;
}

int gt_ledger_buckets(struct gt_ctx *c, int d, int64_t at, struct gt_bucket *out, int max)
{
    struct gt_trace *t = &c->t;
    int *cat_of = gt_xmalloc((t->nsites + 1) * sizeof *cat_of);
    for (size_t k = 0; k <= t->nsites; k++)
        cat_of[k] = -1;
    struct instant x = {.name = "failure", .t = at};
    int code = live_at(c, d, at, cat_of, &x);
    free(cat_of);
    if (code)
        return -code;
    int n = 0;
    for (int k = 0; k < NCAT && n < max; k++)
        if (x.by_cat[k])
            out[n++] = (struct gt_bucket){cat_name(k), cat_kind(k), x.by_cat[k], -1};
    if ((x.pool_live || x.pool_reserved > 0) && n < max)
        out[n++] = (struct gt_bucket){"stream-ordered pool", "pool", x.pool_reserved > x.pool_live ? x.pool_reserved : x.pool_live,
                                      x.pool_live};
    if (x.graph_memory > 0 && n < max)
        out[n++] = (struct gt_bucket){GRAPH_MEMORY_NAME, "graph_memory", x.graph_memory, -1};
    return n;
}

/* The ledger of every device the trace used: the "ledger" JSON array, or text
 * under "Memory ledger". */
int gt_report_ledger(struct gt_ctx *c, struct gt_json *j)
{
    struct gt_trace *t = &c->t;
    struct gt_level *lv;
    size_t nlv = gt_levels(t, &c->p, &lv);
    int *cat_of = gt_xmalloc((t->nsites + 1) * sizeof *cat_of);
    for (size_t k = 0; k <= t->nsites; k++)
        cat_of[k] = -1;
    int code = GT_EXIT_OK, printed = 0, seen[GT_HOST_SLOT] = {0};
    if (j) {
        gt_json_key(j, "ledger");
        gt_json_arr(j);
    }
    for (size_t l = 0; l < nlv && !code; l++) {
        int d = lv[l].device;
        if (d < 0 || d >= GT_HOST_SLOT || seen[d] || (lv[l].memory != GT_MEM_DEVICE && lv[l].memory != GT_MEM_POOL) ||
            (c->o->device != GT_ANY_DEVICE && d != c->o->device))
            continue;
        seen[d] = 1;
        struct gt_nvml_sample first = {0}, last = {0};
        int ns = gt_ledger_samples(t, d, &first, &last, &code);
        if (code)
            break;
        /* context: the process's bytes at the first sample minus all the trace shows live then */
        int per_process = ns && first.process >= 0 && last.process >= 0;
        /* a flight recorder's trace no longer holds every allocation live at the first sample */
        int cut = per_process && t->recorder.on && first.t < t->recorder.complete_from_ns;
        int64_t context = -1;
        struct instant start = {.name = "start", .t = first.t};
        char context_why[320] = "";
        if (per_process && !cut) {
            if ((code = live_at(c, d, first.t, cat_of, &start)))
                break;
            int64_t traced = accounted(&start, -1);
            context = first.process - traced;
            if (context < 0 || start.managed_live > 0) {
                /* NVML's figure below what the trace shows live (a sample
                 * read before allocations the trace places before it), or
                 * managed pages NVML counts and the trace cannot see */
                char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
                if (start.managed_live > 0)
                    snprintf(context_why, sizeof context_why, "%s of managed memory was live at the first NVML sample:"
                             " its pages on the device are in NVML's figure and not in the trace, so the CUDA context"
                             " is not measured", gt_fmt_bytes(start.managed_live, b1));
                else
                    snprintf(context_why, sizeof context_why, "NVML's figure for this process at its first sample (%s)"
                             " is below what the trace shows live then (%s): the sample was read before allocations"
                             " the trace places before it, so the CUDA context is not measured",
                             gt_fmt_bytes(first.process, b1), gt_fmt_bytes(traced, b2));
                context = -1;
            }
        }
        /* kernel modules and library start-up, measured on their own: the
         * growth of what the trace does not show between the first sample
         * and the one taken when the first iteration ended (lazily loaded
         * modules arrive at a kernel's first launch, with no call to trace) */
        int64_t modules = -1, modules_t = -1, modules_managed = 0;
        const struct gt_iterations *its;
        if (context >= 0 && !(code = gt_ctx_iterations(c, &its)) && its->n) {   /* (a remainder over the context) */
            struct gt_nvml_sample s;
            if (gt_ledger_sample_between(t, d, its->it[0].end > first.t ? its->it[0].end : first.t + 1, last.t, &s, &code)) {
                struct instant x = {.t = s.t};
                if ((code = live_at(c, d, s.t, cat_of, &x)))
                    break;
                if (x.managed_live > 0) {
                    modules_managed = x.managed_live;   /* its resident pages are in NVML's figure, unseen */
                } else {
                    modules = s.process - accounted(&x, -1) - context;
                    modules = modules > 0 ? modules : 0;
                    modules_t = s.t;
                }
            }
        }
        if (code)
            break;
        struct instant at[2] = {{.name = "exit"}, {.name = "peak"}};
        int64_t last_t = t->ev[t->nev - 1].t, end = last_t < INT64_MAX ? last_t + 1 : last_t, peak;
        at[0].t = ns && last.t > end ? last.t : end;
        at[0].have_nvml = ns && last.t >= t->ev[t->nev - 1].t;
        at[0].s = last;
        at[1].t = peak_instant(c, d, &peak, &at[1].shown_t);
        /* the exit said where the process ended (summary's "exit after"), not after its last event */
        if (t->proc.end_ns > at[0].t)
            at[0].shown_t = t->proc.end_ns;
        for (int k = 0; k < 2 && !code; k++) {
            code = live_at(c, d, at[k].t, cat_of, &at[k]);
            at[k].modules = modules_t >= 0 && at[k].t >= modules_t ? modules : -1;
        }
        if (code)
            break;
        /* The exit sample checks the modules measurement: what the process held
         * at exit cannot be less than its buckets. More than 1% less says the
         * measurement after the first iteration was wrong (a pool that grew
         * between its last reading and that sample): no modules bucket then,
         * rather than a negative remainder. */
        int modules_refuted = 0;
        if (modules > 0 && at[0].have_nvml && per_process && at[0].s.process >= 0 &&
            (double)accounted(&at[0], context) > 1.01 * (double)at[0].s.process) {
            modules = modules_t = -1;
            at[0].modules = at[1].modules = -1;
            modules_refuted = 1;
        }
        /* The context, likewise: what the process held at exit cannot be less
         * than the buckets with it. More than 1% less says the first sample
         * held something that went before the exit without a traced call (a
         * helper's probe: 2 GiB of context against 2.49 GiB held at exit with
         * 2 GiB live printed "unaccounted -1.51 GiB"): not measured then. */
        if (context > 0 && at[0].have_nvml && per_process && at[0].s.process >= 0 &&
            (double)accounted(&at[0], context) > 1.01 * (double)at[0].s.process) {
            char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
            snprintf(context_why, sizeof context_why, "the CUDA context measured at the first NVML sample (%s) is"
                     " left out: with it the buckets exceed what NVML says the process held at exit (%s), so"
                     " something held then was let go without a traced call",
                     gt_fmt_bytes(context, b1), gt_fmt_bytes(at[0].s.process, b2));
            context = -1;
        }
        /* why the context is not measured (NULL: it is), for text and JSON alike */
        const char *why = !ns ? "no NVML samples in this trace: the CUDA context and what NVML reports are not known; "
                                "NVML was not found, or the trace predates the ledger"
                        : !per_process ? "NVML cannot tell this process's bytes, e.g. another PID namespace or MIG: the "
                                         "context is not measured, device-wide figures include other processes"
                        : cut ? "flight recorder: allocations freed before the window are not in the trace, so the CUDA "
                                "context, measured against the first NVML sample, is not known"
                        : context_why[0] ? context_why : NULL;
        if (j) {
            gt_json_obj(j);
            gt_json_kint(j, "device", d);
            gt_json_kint_or_null(j, "context_bytes", context);
            gt_json_kint_or_null(j, "context_measured_at_ns", context >= 0 ? first.t : -1);
            gt_json_key(j, "context_unknown_why");
            gt_json_str(j, why);   /* null: measured */
            gt_json_kint_or_null(j, "modules_bytes", modules);
            gt_json_kint_or_null(j, "modules_measured_at_ns", modules_t);
            gt_json_key(j, "modules_refuted");
            gt_json_bool(j, modules_refuted);
            gt_json_kint_or_null(j, "modules_managed_bytes", modules_managed ? modules_managed : -1);
            gt_json_key(j, "per_process");
            gt_json_bool(j, per_process);
            gt_json_kint_or_null(j, "total_bytes", ns ? last.total : gt_trace_device_total(t, d));
            gt_json_key(j, "instants");
            gt_json_arr(j);
            for (int k = 0; k < 2; k++)
                if (at[k].t >= 0)
                    json_instant(j, &at[k], context, per_process);
            gt_json_arr_end(j);
            gt_json_obj_end(j);
        } else {
            if (!printed++)
                printf("Memory ledger (what the process held on each device, by who holds it):\n");
            printf("  device %d:\n", d);
            for (int k = 0; k < 2; k++)
                if (at[k].t >= 0)
                    text_instant(&at[k], context, per_process);
            if (why)
                printf("    (%s)\n", why);
            else if (modules_managed) {
                char b1[GT_FMT_LEN];
                printf("    (kernel modules and library start-up are not measured: %s of managed memory was live on the"
                       " device after the first iteration, whose pages there NVML counts and the trace cannot see)\n",
                       gt_fmt_bytes(modules_managed, b1));
            } else if (modules_refuted)
                printf("    (the kernel modules measured after the first iteration are left out: with them the buckets"
                       " exceed NVML's figure at exit, so that measurement was wrong)\n");
        }
    }
    if (j)
        gt_json_arr_end(j);
    free(cat_of);
    free(lv);
    return code ? code : ledger_imported(c, j);
}
