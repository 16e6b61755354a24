/* leaks_out.c - what `gputrace leaks` says (leaks.c computes it): its help,
 * the text report and the JSON. */
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
    "    BFCAllocator, CuPy's memory pool (cupy.cuda.memory's MemoryPool),\n"
    "    MemoryPool::malloc, RMM's pool resources (rmm::mr::pool_memory_resource,\n"
    "    arena_, binning_, fixed_size_), PyTorch's CachingHostAllocator,\n"
    "    cublasCreate, cublasLtCreate or cudnnCreate; or\n"
    "  - it has no recorded frames, is device memory, the trace freed no device\n"
    "    memory at all, and the program ran iterations (the caching pattern).\n"
    "Pool memory (cudaMallocAsync) is never cached: PyTorch's cudaMallocAsync\n"
    "backend makes one allocation per tensor, and the cache there is the\n"
    "driver's pool, which is not a traced allocation.\n"
    "\n"
    "With 2 iterations, what was allocated before the loop or in the first and\n"
    "kept is held for the run, the rest in use when the process ended, and what\n"
    "accumulates is not told (accumulation_told false in --json).\n"
    "With 3 or more iterations, the rest is split by when it was allocated: in a\n"
    "later iteration than the first and never freed is the leak (every live\n"
    "allocation of such a call site); before the loop or in its first iteration\n"
    "and kept is held for the run (parameters, optimizer state); in the last\n"
    "iteration or after the loop is in use when the process ended, and so is a\n"
    "site's that only the iteration before the last left live (iterations found\n"
    "automatically may begin inside the program's step). With 6 or more, a site\n"
    "that kept no more after the loop's first half than before is held steady\n"
    "(a cache that evicts, a buffer made once), not a leak; and what the loop\n"
    "made in 3 or more iterations but freed only in its last iteration or after\n"
    "it (JAX frees every buffer at teardown), still rising at the loop's end, is\n"
    "listed apart: not live at exit, but memory that grew while the loop ran.\n"
    "A site whose allocations live at exit all came from one iteration, with two\n"
    "or more after it that kept nothing more, is made once (a buffer made the\n"
    "first time it was needed), not a leak. What a later loop (ranges of another\n"
    "kind that repeat after the loop ended) left live is told apart and not\n"
    "judged: --iteration NAME judges it.\n"
    "Without\n"
    "iterations everything live is listed, and the report says it cannot tell.\n"
    "--no-cache-heuristic reports nothing as cached.\n"
    "If the process was killed, \"at process end\" means when the trace stops.\n";

void gt_later_loop_json(struct gt_json *j, const struct gt_leaks *l)
{
    if (!l->later) {
        gt_json_null(j);
        return;
    }
    gt_json_obj(j);
    gt_json_kstr(j, "name", l->later->name);
    gt_json_kint(j, "ranges", (int64_t)l->later->n);
    gt_json_kint(j, "bytes", l->later_bytes);
    gt_json_kint(j, "count", l->later_count);
    gt_json_obj_end(j);
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
        const struct { const char *bytes, *count, *sites; int64_t b, n; const struct gt_site_sum *s; size_t ns; } g[] = {
            {"total_bytes", "total_count", "sites", l.bytes, l.count, l.sites, l.nsites},
            {"cached_bytes", "cached_count", "cached_sites", l.cached_bytes, l.cached_count, l.cached, l.ncached},
            {"held_for_run_bytes", "held_for_run_count", "held_for_run_sites", l.held_bytes, l.held_count, l.held, l.nheld},
            {"at_end_bytes", "at_end_count", "at_end_sites", l.at_end_bytes, l.at_end_count, l.at_end, l.nat_end},
            {"held_steady_bytes", "held_steady_count", "held_steady_sites", l.steady_bytes, l.steady_count, l.steady,
             l.nsteady},
            {"freed_after_loop_bytes", "freed_after_loop_count", "freed_after_loop_sites", l.after_bytes, l.after_count,
             l.after, l.nafter},
            {"made_once_bytes", "made_once_count", "made_once_sites", l.once_bytes, l.once_count, l.once, l.nonce},
        };
        for (size_t k = 0; k < sizeof g / sizeof *g; k++) {
            gt_json_kint(j, g[k].bytes, g[k].b);
            gt_json_kint(j, g[k].count, g[k].n);
            gt_json_key(j, g[k].sites);
            if (!code)
                code = gt_json_sites(c, j, g[k].s, g[k].ns, g[k].ns);
        }
        gt_json_key(j, "later_loop");   /* of at_end: what a later loop made, not judged (null: none) */
        gt_later_loop_json(j, &l);
        gt_json_key(j, "classified_by_iterations");
        gt_json_bool(j, l.classified);
        gt_json_key(j, "accumulation_told");   /* total_bytes is what accumulated (3 or more iterations) */
        gt_json_bool(j, l.told);
        gt_json_kint(j, "iterations", (int64_t)l.iterations);
        gt_json_kint(j, "cached_in_loop_bytes", l.cached_in_loop);   /* cached, made in the loop and kept */
        gt_json_kstr(j, "cached_in_loop_by", l.cached_in_loop && l.cached_by ? l.cached_by->name : NULL);
        gt_json_kint_or_null(j, "preallocated_bytes", l.prealloc.bytes ? l.prealloc.bytes : -1);
        gt_json_key(j, "process_exited");
        gt_json_bool(j, !killed);
        gt_json_obj_end(j);
    } else {
        char b[GT_FMT_LEN];
        gt_ctx_print_gaps(c);
        if (killed)
            printf("Note: the process did not exit normally (killed?); \"at process end\" means when the trace stops.\n");
        char made[160];
        if (l.prealloc.bytes)
            printf("%s %s %s and held: a preallocating framework (JAX's default) carves its arrays inside %s, out "
                   "of the trace's sight, so what it keeps there is not seen (%s).\n",
                   l.nsites || (l.classified && l.iterations == 2) ? "Note:" : "Leaks: not told:",
                   gt_prealloc_made(&l.prealloc, made, sizeof made), l.iterations ? "before the loop" : "early",
                   l.prealloc.count == 1 ? "it" : "them", GT_PREALLOC_TO_DO);
        if (l.nsites == 0 && l.classified && l.iterations == 2) {
            printf("Leaks: not told: 2 iterations, a first and a last; memory that accumulates shows from 3 on (run or "
                   "mark more steps). What was live at process end is below.\n");
        } else if (l.nsites == 0) {
            if (l.classified && l.nafter)
                printf("%s: nothing %sallocated during the loop (iterations 2 to %zu of %zu) was still live at\n"
                       "process end; but what accumulated during it was freed only after it (below).\n",
                       l.prealloc.bytes ? "Outside the pool" : l.ncached ? "No leaks outside cached memory" : "No leaks",
                       l.ncached && !l.prealloc.bytes ? "else " : "", l.iterations - 1, l.iterations);
            else if (l.classified)
                printf("%s: nothing %sallocated during the loop (iterations 2 to %zu of %zu) accumulated%s%s.\n",
                       l.prealloc.bytes ? "Outside the pool" : l.ncached ? "No leaks outside cached memory" : "No leaks",
                       l.ncached && !l.prealloc.bytes ? "else " : "", l.iterations - 1, l.iterations,
                       l.nheld || l.nat_end || l.ncached || l.nsteady || l.nonce ? "; what was live at process end is below" : "",
                       l.later ? ",\nwith what a later loop made (not judged)" : "");
            else
                printf("%s: every allocation was freed before the process ended%s%s.\n",
                       l.prealloc.bytes ? "Outside the pool" : "No leaks",
                       l.ncached ? " (apart from caching-allocator memory below)" : "",
                       l.nafter ? "; but what accumulated during\nthe loop was freed only after it (below)" : "");
        } else {
            printf("Leaks: %s in %lld allocation%s at %zu call site%s, %s and never freed:\n", gt_fmt_bytes(l.bytes, b),
                   (long long)l.count, l.count == 1 ? "" : "s", l.nsites, l.nsites == 1 ? "" : "s",
                   l.classified ? "allocated during the loop, iteration after iteration (each site's live allocations,"
                                " the first iteration's too),"
                                : "live at process end");
            code = gt_text_sites(c, l.sites, l.nsites, (size_t)c->o->top, 2);
            if (!code && !l.classified)
                printf("  (without 3 or more iterations, memory held for the whole run (parameters, optimizer state) "
                       "cannot be told from memory that accumulates: mark the loop with NVTX ranges or "
                       "gputrace_iteration)\n");
        }
        if (!code && l.nafter) {
            printf("Accumulated over the loop and freed only after it (in its last iteration, or when the process\n"
                   "tore down): not live at exit, but memory that grew iteration after iteration while the loop ran\n"
                   "(gputrace growth gives the rate): %s in %lld allocation%s at %zu call site%s:\n",
                   gt_fmt_bytes(l.after_bytes, b), (long long)l.after_count, gt_s(l.after_count), l.nafter,
                   gt_s((long long)l.nafter));
            code = gt_text_sites(c, l.after, l.nafter, (size_t)c->o->top, 2);
        }
        if (!code && l.nheld) {
            printf("Held for the run (allocated before the loop or in its first iteration and kept: parameters, "
                   "optimizer state and the like; %s): %s in %lld allocation%s at %zu call site%s:\n",
                   l.iterations == 2 ? "with 2 iterations not told from a leak" : "not a leak",
                   gt_fmt_bytes(l.held_bytes, b), (long long)l.held_count, l.held_count == 1 ? "" : "s", l.nheld,
                   l.nheld == 1 ? "" : "s");
            code = gt_text_sites(c, l.held, l.nheld, (size_t)c->o->top, 2);
        }
        if (!code && l.nsteady) {
            printf("Held steady (allocated during the loop and never freed, but no call site below held more after the\n"
                   "loop's first half, or kept more only when the batch size grew: a cache that evicts, a buffer made\n"
                   "once and reused, one reserved for a larger batch; not a leak): %s in %lld\n"
                   "allocation%s at %zu call site%s:\n", gt_fmt_bytes(l.steady_bytes, b), (long long)l.steady_count,
                   gt_s(l.steady_count), l.nsteady, gt_s((long long)l.nsteady));
            code = gt_text_sites(c, l.steady, l.nsteady, (size_t)c->o->top, 2);
        }
        if (!code && l.nonce) {
            printf("Made once during the loop and kept (each call site below kept what one iteration made, and\n"
                   "nothing in the two or more iterations after it: a buffer made once, not accumulating): %s in\n"
                   "%lld allocation%s at %zu call site%s:\n", gt_fmt_bytes(l.once_bytes, b), (long long)l.once_count,
                   gt_s(l.once_count), l.nonce, gt_s((long long)l.nonce));
            code = gt_text_sites(c, l.once, l.nonce, (size_t)c->o->top, 2);
        }
        if (!code && l.nat_end) {
            printf("In use when the process ended (allocated %s): %s in %lld allocation%s at %zu call site%s:\n",
                   l.iterations == 2   ? "after the first of 2 iterations"
                   : l.iterations == 3 ? "in the last iteration or after the loop"
                                       : "in the loop's last two iterations or after it",
                   gt_fmt_bytes(l.at_end_bytes, b), (long long)l.at_end_count,
                   l.at_end_count == 1 ? "" : "s", l.nat_end, l.nat_end == 1 ? "" : "s");
            code = gt_text_sites(c, l.at_end, l.nat_end, (size_t)c->o->top, 2);
            if (!code && l.later)
                printf("  (%s of it in %lld allocation%s was made in a later loop, %zu ranges \"%s\", and is not\n"
                       "   judged here: gputrace leaks --iteration '%s' tells whether it accumulated)\n",
                       gt_fmt_bytes(l.later_bytes, b), (long long)l.later_count, gt_s(l.later_count), l.later->n,
                       l.later->name, l.later->name);
        }
        if (!code && l.ncached) {
            printf("Cached (held until exit by a caching allocator or a library handle, not counted as leaks): %s in %lld allocation%s at %zu call site%s:\n",
                   gt_fmt_bytes(l.cached_bytes, b), (long long)l.cached_count, gt_s(l.cached_count), l.ncached, gt_s((long long)l.ncached));
            code = gt_text_sites(c, l.cached, l.ncached, (size_t)c->o->top, 2);
            if (!code && l.cached_in_loop)   /* a cache's segments made in the loop and kept: a leak would do the same */
                printf("  (%s of it was allocated during the loop and kept: %s's segments hold the\n"
                       "   program's tensors, and a tensor kept every step fills them as a cache does; gputrace\n"
                       "   growth says whether they grew, and only a tensor-level trace tells them apart: %s)\n",
                       gt_fmt_bytes(l.cached_in_loop, b),
                       l.cached_by ? l.cached_by->name : "a caching allocator",
                       l.cached_by ? l.cached_by->per_tensor : "PyTorch: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync");
        }
    }
    gt_leaks_free(&l);
    return code;
}
