/* leaks.c - `gputrace leaks`: allocations still live when the process ended,
 * grouped by allocation call stack. Memory that a caching allocator holds
 * until exit by design (PyTorch's reserved segments) is not a leak: it is
 * recognised by the heuristic below and reported apart as "cached". */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

/* gputrace leaks --help (the command table is in commands.c) */
const char gt_help_leaks[] =
    "usage: gputrace leaks [--json] [--no-cache-heuristic] [OPTIONS] TRACE.db...\n"
    "\n"
    "Allocations still live when the process ended (never freed), grouped by\n"
    "the call stack that allocated them, largest first: bytes, count, frames.\n"
    "\n"
    "Cached memory, held until exit by design, is reported apart, not as a leak:\n"
    "PyTorch's default CUDA caching allocator reserves segments with cudaMalloc\n"
    "and never frees them; a cuBLAS or cuDNN handle holds its workspace while it\n"
    "lives, and PyTorch keeps its handles until exit. An allocation that is not\n"
    "pool memory counts as cached when:\n"
    "  - its stack passes through such a frame: a function or module containing\n"
    "    CUDACachingAllocator, DeviceCachingAllocator, c10::cuda::, libc10_cuda.so,\n"
    "    BFCAllocator, cupy.cuda.memory, MemoryPool::malloc, rmm::mr::,\n"
    "    cublasCreate, cublasLtCreate or cudnnCreate; or\n"
    "  - it has no recorded frames, is device memory, the trace freed no device\n"
    "    memory at all, and the program ran iterations (the caching pattern).\n"
    "Pool memory (cudaMallocAsync) is never cached: PyTorch's cudaMallocAsync\n"
    "backend makes one allocation per tensor, and the cache there is the\n"
    "driver's pool, which is not a traced allocation.\n"
    "--no-cache-heuristic reports everything live at exit as a leak.\n"
    "If the process was killed, \"at process end\" means when the trace stops.\n";

/* Substrings of frames (function or module) that belong to a caching
 * allocator, or to a CUDA library's handle, whose workspace lives as long as
 * the handle (PyTorch keeps its cuBLAS handles until exit: 128 MiB on an
 * H100). An allocation whose stack passes through one is cached. */
static const char *const cache_frames[] = {
    "CUDACachingAllocator",     /* PyTorch: c10::cuda::CUDACachingAllocator::... */
    "DeviceCachingAllocator",
    "c10::cuda::",
    "libc10_cuda.so",
    "BFCAllocator",             /* TensorFlow, XLA/JAX (tsl::BFCAllocator) */
    "cupy.cuda.memory",         /* CuPy's memory pool */
    "MemoryPool::malloc",
    "rmm::mr::",                /* RAPIDS memory manager */
    "cublasCreate",             /* cuBLAS / cuBLASLt / cuDNN handle workspaces */
    "cublasLtCreate",
    "cudnnCreate",
};

static int frames_say_cached(struct gt_ctx *c, int32_t site, int *has_frames, int *code)
{
    char **f;
    int n;
    *code = gt_trace_frames(&c->t, site, &f, &n);
    *has_frames = n > 0;
    for (int k = 0; k < n; k++)
        for (size_t q = 0; q < sizeof cache_frames / sizeof cache_frames[0]; q++)
            if (strstr(f[k], cache_frames[q]))
                return 1;
    return 0;
}

/* The pattern rule for allocations without frames: the trace freed no device
 * memory at all although the program ran iterations, which is what a caching
 * allocator that reserves segments and keeps them looks like (PyTorch's
 * default: 44 cudaMalloc, 0 cudaFree over 70 steps). */
static int pattern_says_cached(struct gt_ctx *c, int *code)
{
    for (size_t i = 0; i < c->t.nev; i++) {
        const struct gt_event *e = &c->t.ev[i];
        const struct gt_api_attr *a = gt_attr(&c->t, e);
        if (a->known && a->op == GT_OP_FREE && c->p.partner[i] != GT_NO_EVENT &&
            c->t.api[c->t.ev[c->p.partner[i]].api].memory == GT_MEM_DEVICE)
            return 0;
    }
    const struct gt_iterations *it;
    *code = gt_ctx_iterations(c, &it);
    return !*code && it->n >= 2;
}

int gt_leaks_compute(struct gt_ctx *c, struct gt_leaks *l)
{
    memset(l, 0, sizeof *l);
    struct gt_sel s = {c->o->memory_set ? c->o->mem_mask : GT_MASK_ALL, c->o->device};
    struct gt_site_sum *all;
    size_t n = gt_live_sites_before(&c->t, &c->p, &s, c->t.nev, &all, NULL, NULL);
    l->sites = gt_xmalloc((n + 1) * sizeof *l->sites);
    l->cached = gt_xmalloc((n + 1) * sizeof *l->cached);
    int pattern = -1, code = GT_EXIT_OK;
    for (size_t i = 0; i < n; i++) {
        int cached = 0, has_frames = 0;
        /* Pool memory (cudaMallocAsync) is never a framework's cache: PyTorch's
         * async backend makes one such allocation per tensor, and the cache
         * there is the driver's pool, which is not an allocation in the trace.
         * A pool allocation live at exit is a tensor still held. */
        if (!c->o->cached_as_leaks && all[i].memory != GT_MEM_POOL) {
            cached = frames_say_cached(c, all[i].site, &has_frames, &code);
            if (code)
                break;
            if (!cached && !has_frames && all[i].memory == GT_MEM_DEVICE) {
                if (pattern < 0)
                    pattern = pattern_says_cached(c, &code);
                if (code)
                    break;
                cached = pattern;
            }
        }
        if (cached) {
            l->cached[l->ncached++] = all[i];
            l->cached_bytes += all[i].bytes;
            l->cached_count += all[i].count;
        } else {
            l->sites[l->nsites++] = all[i];
            l->bytes += all[i].bytes;
            l->count += all[i].count;
        }
    }
    free(all);
    return code;
}

void gt_leaks_free(struct gt_leaks *l)
{
    free(l->sites);
    free(l->cached);
    memset(l, 0, sizeof *l);
}

int gt_report_leaks(struct gt_ctx *c, struct gt_json *j)
{
    struct gt_leaks l;
    int code = gt_leaks_compute(c, &l);
    if (code) {
        gt_leaks_free(&l);
        return code;
    }
    int killed = c->t.proc.present && c->t.proc.end_ns < 0;
    if (j) {
        gt_json_obj(j);
        gt_ctx_json_head(c, j);
        gt_json_kint(j, "total_bytes", l.bytes);
        gt_json_kint(j, "total_count", l.count);
        gt_json_key(j, "sites");
        if (!code)
            code = gt_json_sites(c, j, l.sites, l.nsites, l.nsites);
        gt_json_kint(j, "cached_bytes", l.cached_bytes);
        gt_json_kint(j, "cached_count", l.cached_count);
        gt_json_key(j, "cached_sites");
        if (!code)
            code = gt_json_sites(c, j, l.cached, l.ncached, l.ncached);
        gt_json_key(j, "process_exited");
        gt_json_bool(j, !killed);
        gt_json_obj_end(j);
    } else {
        char b[GT_FMT_LEN];
        if (killed)
            printf("Note: the process did not exit normally (killed?); \"at process end\" means when the trace stops.\n");
        if (l.nsites == 0) {
            printf("No leaks: every allocation was freed before the process ended%s.\n",
                   l.ncached ? " (apart from caching-allocator memory below)" : "");
        } else {
            printf("Leaks: %s in %lld allocations at %zu call site%s, live at process end and never freed:\n",
                   gt_fmt_bytes(l.bytes, b), (long long)l.count, l.nsites, l.nsites == 1 ? "" : "s");
            code = gt_text_sites(c, l.sites, l.nsites, (size_t)c->o->top, 2);
        }
        if (!code && l.ncached) {
            printf("Cached (held until exit by a caching allocator or a library handle, not a leak): %s in %lld allocations at %zu call site%s:\n",
                   gt_fmt_bytes(l.cached_bytes, b), (long long)l.cached_count, l.ncached, l.ncached == 1 ? "" : "s");
            code = gt_text_sites(c, l.cached, l.ncached, (size_t)c->o->top, 2);
        }
    }
    gt_leaks_free(&l);
    return code;
}
