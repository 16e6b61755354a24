/* leaks.c - `gputrace leaks`: allocations still live when the process ended,
 * grouped by allocation call stack. Memory that a caching allocator holds
 * until exit by design (PyTorch's reserved segments) is not a leak: it is
 * recognised by the heuristic below and reported apart as "cached". With
 * iterations, what remains is split by when it was allocated: memory held for
 * the whole run (parameters, optimizer state), memory that accumulates over
 * the loop (the leak), and what the last iteration was still using. */
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
    "Without\n"
    "iterations everything live is listed, and the report says it cannot tell.\n"
    "--no-cache-heuristic reports nothing as cached.\n"
    "If the process was killed, \"at process end\" means when the trace stops.\n";

/* Frames of a CUDA library's handle, whose workspace lives as long as the
 * handle (PyTorch keeps its cuBLAS handles until exit: 128 MiB on an H100).
 * An allocation whose stack passes through one, or through a caching
 * allocator (allocators.c), is cached. */
static const char *const handle_frames[] = {
    "cublasCreate",             /* cuBLAS / cuBLASLt / cuDNN handle workspaces */
    "cublasLtCreate",
    "cudnnCreate",
};

/* Is site's memory cached: its stack passes through a caching allocator
 * (then *by is it) or a library's handle? */
static int frames_say_cached(struct gt_ctx *c, int32_t site, int *has_frames,
                             const struct gt_caching_allocator **by, int *code)
{
    char **f;
    int n;
    *code = gt_trace_frames(&c->t, site, &f, &n);
    *has_frames = n > 0;
    if ((*by = gt_caching_allocator_of(f, n)))
        return 1;
    for (int k = 0; k < n; k++)
        for (size_t q = 0; q < sizeof handle_frames / sizeof handle_frames[0]; q++)
            if (strstr(f[k], handle_frames[q]))
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

enum phase { PHASE_HELD, PHASE_LOOP, PHASE_END, PHASE_N };

/* The loop event a's thread ran: the iterations' own (it[]) unless the
 * loop's kind of range ran on other threads too and a is one of theirs
 * (loop_of[a] - 1 indexes it->threads; NULL: one loop; gt_ctx_event_loops). */
struct loop {
    const struct gt_iteration *it;
    size_t n;
};
static struct loop loop_of_event(const struct gt_iterations *it, const unsigned char *loop_of, size_t a)
{
    if (loop_of && loop_of[a] && loop_of[a] != GT_OWN_LOOP)
        return (struct loop){it->threads[loop_of[a] - 1].it, it->threads[loop_of[a] - 1].n};
    return (struct loop){it->it, it->n};
}

/* When live allocation a was made, in its thread's loop: before the loop
 * or in its first iteration, in a later one before the last (or between
 * iterations), or in the last iteration or after the loop. */
static int phase_of(struct loop l, size_t a)
{
    if (a < l.it[0].end_ev)
        return PHASE_HELD;
    if (a >= l.it[l.n - 1].first_ev)
        return PHASE_END;
    return PHASE_LOOP;
}

/* The iteration event a falls in (or the last one before it). */
static size_t iteration_of(struct loop l, size_t a)
{
    size_t lo = 0, hi = l.n;
    while (hi - lo > 1) {
        size_t mid = (lo + hi) / 2;
        if (l.it[mid].first_ev <= a)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* Per site (slot nsites: no stack) and phase, the live allocations of s.
 * A site whose live allocations of the loop all come from the iteration
 * before the last, and from no other, is counted at the end: iterations
 * found automatically begin where a pattern of allocations or kernels
 * repeats, which may lie inside the program's step, so that the batch a
 * step allocates first falls into the iteration before (on an H100,
 * ResNet-50 under cudaMallocAsync: the last step's input, still held by the
 * program's variables at exit, was called a leak). What accumulates is live
 * from two or more iterations, or from one earlier than that. With three
 * iterations the one before the last is the whole loop: the rule is off.
 * freed_after: instead of what was live at exit, what the loop (after its
 * first iteration) made and freed only in its last iteration or after it:
 * JAX releases every buffer at the interpreter's teardown, so that arrays a
 * loop kept in a list were never live at exit (an H200, session 48). */
static struct gt_site_sum *live_by_phase(struct gt_ctx *c, const struct gt_sel *s, const struct gt_iterations *it,
                                         const unsigned char *loop_of, int freed_after, unsigned char **iters_out,
                                         unsigned char **once_out)
{
    const struct gt_trace *t = &c->t;
    size_t ns = t->nsites + 1;
    struct gt_site_sum *ph = gt_xcalloc(ns * PHASE_N, sizeof *ph);
    size_t *last_it = gt_xcalloc(ns, sizeof *last_it), *loop_n = gt_xcalloc(ns, sizeof *loop_n);
    unsigned char *iters = gt_xcalloc(ns, 1);   /* 0 to 3: "three or more" iterations of the loop phase */
    /* freed "after the loop": in the last iteration of the loop that ends last, or after it, whichever
     * thread's loop made it (a producer thread's loop that ended early had its batches, freed by the main
     * loop while it ran, called freed after the loop; a review) */
    size_t after_from = it->it[it->n - 1].first_ev;
    for (size_t k = 0; k < it->nthreads; k++)
        if (it->threads[k].n && it->threads[k].it[it->threads[k].n - 1].first_ev > after_from)
            after_from = it->threads[k].it[it->threads[k].n - 1].first_ev;
    for (size_t a = 0; a < t->nev; a++) {
        const struct gt_event *e = &t->ev[a];
        size_t f = c->p.partner[a];
        if (e->failed || !t->api[e->api].known || t->api[e->api].op != GT_OP_ALLOC ||
            (f != GT_NO_EVENT) != freed_after || !gt_sel_has(t, s, e))
            continue;
        size_t site = e->site >= 0 ? (size_t)e->site : t->nsites;
        struct loop l = loop_of_event(it, loop_of, a);
        int phase = phase_of(l, a);
        if (freed_after && (phase != PHASE_LOOP || f < after_from))
            continue;
        struct gt_site_sum *g = &ph[site * PHASE_N + phase];
        g->site = e->site;
        g->memory = g->count && g->memory != t->api[e->api].memory ? -1 : t->api[e->api].memory;
        g->bytes += e->size > 0 ? e->size : 0;
        g->count++;
        if (phase == PHASE_LOOP) {
            size_t k = iteration_of(l, a);
            if (!iters[site] || k != last_it[site])
                iters[site] = iters[site] < 3 ? iters[site] + 1 : 3;
            last_it[site] = k;
            loop_n[site] = l.n;   /* k is an index into that thread's loop */
        }
    }
    unsigned char *once = once_out ? gt_xcalloc(ns, 1) : NULL;
    for (size_t site = 0; site < ns; site++) {
        /* with 2 iterations there is no middle: after the first is the end;
         * with 3, iteration 2 is the whole loop and the rule is off */
        size_t n = loop_n[site] ? loop_n[site] : it->n;
        /* made once: what the loop left live all from one iteration, with two or more after it that kept
         * nothing more, nothing from the first (a site that keeps every fifth iteration's has) and nothing
         * from the last two or after the loop (a review: kept at 5 and 9 of 10 read as made once) */
        if (once && iters[site] == 1 && n >= 4 && last_it[site] + 3 <= n && !ph[site * PHASE_N + PHASE_HELD].count &&
            !ph[site * PHASE_N + PHASE_END].count)   /* (and nothing kept late: kept at 5 and 9 of 10 recurs) */
            once[site] = 1;
        if (n == 2 || (n >= 4 && iters[site] == 1 && last_it[site] == n - 2)) {
            struct gt_site_sum *loop = &ph[site * PHASE_N + PHASE_LOOP], *end = &ph[site * PHASE_N + PHASE_END];
            end->bytes += loop->bytes;
            end->count += loop->count;
            loop->bytes = loop->count = 0;
        }
    }
    free(last_it);
    free(loop_n);
    if (once_out)
        *once_out = once;
    if (iters_out)
        *iters_out = iters;
    else
        free(iters);
    return ph;
}

/* First iteration k whose end lies after event a (n: none). */
static size_t end_after(struct loop l, size_t a)
{
    size_t lo = 0, hi = l.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (l.it[mid].end_ev <= a)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* Of the sites that keep what later iterations made, those that stopped
 * growing: their live bytes at iteration ends reached their highest in the
 * loop's first half and no end after it held more (a cache of 8 entries
 * that evicts its oldest; a segment made once for a larger batch and
 * reused). What such a site holds at exit is held steady, not accumulating
 * (a helper's probe: an LRU of 8 MiB read as a leak beside growth's
 * "stable"). The last iteration's end is left out (it may be the trace's).
 * With fewer than 6 iterations the halves say nothing: none is steady. */
#define STEADY_MIN_ITERATIONS 6
static unsigned char *stopped_growing(struct gt_ctx *c, const struct gt_sel *s, const struct gt_iterations *it,
                                      const struct gt_site_sum *ph, unsigned char **rising_out)
{
    const struct gt_trace *t = &c->t;
    size_t ns = t->nsites + 1, n = it->n, nrows = 0;
    unsigned char *steady = gt_xcalloc(ns, 1), *rising = gt_xcalloc(ns, 1);
    if (rising_out)
        *rising_out = rising;
    else
        free(rising);
    if (n < STEADY_MIN_ITERATIONS)
        return steady;
    int32_t *row = gt_xmalloc(ns * sizeof *row);
    for (size_t site = 0; site < ns; site++)
        row[site] = ph[site * PHASE_N + PHASE_LOOP].count ? (int32_t)nrows++ : -1;
    int64_t *d = gt_xcalloc(nrows * (n + 1) + 1, sizeof *d);
    /* by the main loop's iteration ends, whatever thread allocated: the halves are halves of the run's time (a
     * worker's 4 steps indexed by its own loop all fell in the first half of the main loop's 12, and its leak
     * read held steady; a review) */
    const struct loop l = {it->it, n};
    for (size_t a = 0; a < t->nev && nrows; a++) {
        const struct gt_event *e = &t->ev[a];
        if (e->failed || !t->api[e->api].known || t->api[e->api].op != GT_OP_ALLOC || e->size <= 0 ||
            !gt_sel_has(t, s, e))
            continue;
        int32_t r = row[e->site >= 0 ? (size_t)e->site : t->nsites];
        if (r < 0)
            continue;
        size_t f = c->p.partner[a], k0 = end_after(l, a), k1 = f == GT_NO_EVENT ? n : end_after(l, f);
        if (k0 < k1) {
            d[(size_t)r * (n + 1) + k0] += e->size;
            d[(size_t)r * (n + 1) + k1] -= e->size;
        }
    }
    for (size_t site = 0; site < ns; site++) {
        if (row[site] < 0)
            continue;
        const int64_t *dr = d + (size_t)row[site] * (n + 1);
        /* still rising at the end: over the last third, and over the last two ends (a ring of 8 slots
         * filled by iteration 8 of 12, then reused, rose over the last third; a review) */
        int64_t live = 0, first_half = INT64_MIN, second_half = INT64_MIN, third_back = 0, two_back = 0;
        size_t back = n / 3 > 2 ? n / 3 : 2;
        for (size_t k = 0; k + 1 < n; k++) {
            live += dr[k];
            if (k < n / 2)
                first_half = live > first_half ? live : first_half;
            else
                second_half = live > second_half ? live : second_half;
            if (k + 2 + back == n)
                third_back = live;
            if (k + 4 == n)
                two_back = live;
        }
        steady[site] = first_half > 0 && second_half <= first_half;
        if (rising_out)
            (*rising_out)[site] = live > third_back && live > two_back;
    }
    free(d);
    free(row);
    return steady;
}

static void add(struct gt_site_sum *list, size_t *n, int64_t *bytes, int64_t *count, struct gt_site_sum part)
{
    if (!part.count)
        return;
    list[(*n)++] = part;
    *bytes += part.bytes;
    *count += part.count;
}

static int by_bytes(const void *a, const void *b)
{
    const struct gt_site_sum *x = a, *y = b;
    return (x->bytes < y->bytes) - (x->bytes > y->bytes);
}

/* What the loop made iteration after iteration and freed only when it ended
 * (in its last iteration, or after it: at the interpreter's teardown): not
 * live at exit, but grown while the loop ran. With 6 or more iterations, a
 * site's allocations from 3 or more of them, whose live bytes at iteration
 * ends still rose over the loop's last third and did not stop growing in its
 * first half: a prefetch queue frees a few iterations' batches in the last,
 * and a buffer made once in the second half (an EMA copy, a new shape) is no
 * accumulation (a review read both as one). Cached sites are not counted (a
 * cache gives nothing back before exit anyway). */
static int freed_after_loop(struct gt_ctx *c, const struct gt_sel *s, const struct gt_iterations *it,
                            struct gt_leaks *l)
{
    if (it->n < STEADY_MIN_ITERATIONS)
        return GT_EXIT_OK;
    const unsigned char *loop_of;
    int code = gt_ctx_event_loops(c, &loop_of);
    if (code)
        return code;
    unsigned char *iters, *rising;
    struct gt_site_sum *ph = live_by_phase(c, s, it, loop_of, 1, &iters, NULL);
    unsigned char *steady = stopped_growing(c, s, it, ph, &rising);
    size_t ns = c->t.nsites + 1;
    l->after = gt_xmalloc(ns * sizeof *l->after);
    for (size_t site = 0; site < ns && !code; site++) {
        const struct gt_site_sum *p = &ph[site * PHASE_N + PHASE_LOOP];
        if (!p->count || steady[site] || iters[site] < 3 || !rising[site])
            continue;
        int has_frames = 0;
        const struct gt_caching_allocator *by;
        if (!c->o->cached_as_leaks && p->memory != GT_MEM_POOL &&
            (frames_say_cached(c, p->site, &has_frames, &by, &code) || code))
            continue;
        add(l->after, &l->nafter, &l->after_bytes, &l->after_count, *p);
    }
    gt_qsort(l->after, l->nafter, sizeof *l->after, by_bytes);
    free(steady);
    free(rising);
    free(iters);
    free(ph);
    return code;
}

/* Of what was live at exit and told "in use when the process ended", what a
 * later loop made (an evaluation loop after training keeping its outputs):
 * the loop that left most, its bytes and count. leaks judges one loop; a
 * second one's accumulation was told as "none" (a helper's probe). */
static void later_loop(const struct gt_ctx *c, const struct gt_sel *s, const struct gt_iterations *it, struct gt_leaks *l)
{
    if (!l->nat_end || !it->nlater_loops)
        return;
    const struct gt_trace *t = &c->t;
    unsigned char *at_end = gt_xcalloc(t->nsites + 1, 1);
    for (size_t i = 0; i < l->nat_end; i++)
        at_end[l->at_end[i].site >= 0 ? (size_t)l->at_end[i].site : t->nsites] = 1;
    int64_t bytes[GT_MAX_LATER_LOOPS] = {0}, count[GT_MAX_LATER_LOOPS] = {0};
    for (size_t i = it->it[it->n - 1].end_ev; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        if (e->failed || !t->api[e->api].known || t->api[e->api].op != GT_OP_ALLOC || e->size <= 0 || !gt_sel_has(t, s, e) ||
            c->p.partner[i] != GT_NO_EVENT || !at_end[e->site >= 0 ? (size_t)e->site : t->nsites])
            continue;
        for (size_t k = 0; k < it->nlater_loops; k++)
            if (e->t >= it->later_loops[k].start && e->t <= it->later_loops[k].end) {
                bytes[k] += e->size;
                count[k]++;
                break;
            }
    }
    free(at_end);
    for (size_t k = 0; k < it->nlater_loops; k++)
        if (bytes[k] > l->later_bytes) {
            l->later = &it->later_loops[k];
            l->later_bytes = bytes[k];
            l->later_count = count[k];
        }
}

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

int gt_leaks_compute(struct gt_ctx *c, struct gt_leaks *l)
{
    memset(l, 0, sizeof *l);
    struct gt_sel s = {.mem_mask = c->o->memory_set ? c->o->mem_mask : GT_MASK_ALL, .device = c->o->device};
    struct gt_site_sum *all;
    size_t n = gt_live_sites_before(&c->t, &c->p, &s, c->t.nev, &all, NULL, NULL);
    l->sites = gt_xmalloc((n + 1) * sizeof *l->sites);
    l->cached = gt_xmalloc((n + 1) * sizeof *l->cached);
    l->held = gt_xmalloc((n + 1) * sizeof *l->held);
    l->at_end = gt_xmalloc((n + 1) * sizeof *l->at_end);
    l->steady = gt_xmalloc((n + 1) * sizeof *l->steady);
    l->once = gt_xmalloc((n + 1) * sizeof *l->once);
    unsigned char *steady = NULL, *once = NULL;
    int pattern = -1, code = GT_EXIT_OK;
    const struct gt_iterations *it = NULL;
    struct gt_site_sum *ph = NULL;
    code = gt_ctx_iterations(c, &it);
    if (!code)
        l->iterations = it->n;
    /* a first, a middle and a last iteration tell what accumulates; a first
     * and a last at least what was held for the run from what the last still
     * used (a run that died in its second step) */
    if (!code && n && it->n >= 2) {
        const unsigned char *loop_of;
        code = gt_ctx_event_loops(c, &loop_of);
        if (!code) {
            ph = live_by_phase(c, &s, it, loop_of, 0, NULL, &once);
            steady = stopped_growing(c, &s, it, ph, NULL);
            l->classified = 1;
        }
    }
    l->told = !n || (l->classified && l->iterations >= 3);   /* nothing live: nothing accumulated */
    /* a preallocating framework's arrays live inside its pool: that
     * nothing else accumulated tells nothing of them */
    if (!code)
        gt_preallocated(c, &s, it->n ? it->it[0].first_ev : c->t.nev, it->n ? it->it[0].first_ev : 0, 0, &l->prealloc);
    int64_t most_in_loop = 0;   /* the cached site that made the most in the loop names the allocator */
    for (size_t i = 0; i < n && !code; i++) {
        int cached = 0, has_frames = 0;
        const struct gt_caching_allocator *by = NULL;
        /* Pool memory (cudaMallocAsync) is never a framework's cache: PyTorch's
         * async backend makes one such allocation per tensor, and the cache
         * there is the driver's pool, which is not an allocation in the trace.
         * A pool allocation live at exit is a tensor still held. */
        if (!c->o->cached_as_leaks && all[i].memory != GT_MEM_POOL) {
            cached = frames_say_cached(c, all[i].site, &has_frames, &by, &code);
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
        const struct gt_site_sum *p = ph ? &ph[(all[i].site >= 0 ? (size_t)all[i].site : c->t.nsites) * PHASE_N] : NULL;
        if (cached) {
            add(l->cached, &l->ncached, &l->cached_bytes, &l->cached_count, all[i]);
            int64_t in_loop = p ? p[PHASE_LOOP].bytes : 0;
            l->cached_in_loop += in_loop;
            if (by && in_loop > most_in_loop) {
                most_in_loop = in_loop;
                l->cached_by = by;
            }
            continue;
        }
        if (p && p[PHASE_LOOP].count && steady[all[i].site >= 0 ? (size_t)all[i].site : c->t.nsites]) {
            add(l->steady, &l->nsteady, &l->steady_bytes, &l->steady_count, all[i]);
            continue;
        }
        if (p && p[PHASE_LOOP].count && once[all[i].site >= 0 ? (size_t)all[i].site : c->t.nsites]) {
            add(l->once, &l->nonce, &l->once_bytes, &l->once_count, all[i]);
            continue;
        }
        if (!p || p[PHASE_LOOP].count) {   /* a site that keeps what later iterations make: all of it grows */
            add(l->sites, &l->nsites, &l->bytes, &l->count, all[i]);
            continue;
        }
        struct gt_site_sum held = all[i], end = all[i];
        held.bytes = p[PHASE_HELD].bytes, held.count = p[PHASE_HELD].count;
        end.bytes = p[PHASE_END].bytes, end.count = p[PHASE_END].count;
        add(l->held, &l->nheld, &l->held_bytes, &l->held_count, held);
        add(l->at_end, &l->nat_end, &l->at_end_bytes, &l->at_end_count, end);
    }
    if (l->prealloc.bytes && !l->nsites)
        l->told = 0;
    if (!code)
        code = freed_after_loop(c, &s, it, l);
    if (!code && l->classified)
        later_loop(c, &s, it, l);
    gt_qsort(l->held, l->nheld, sizeof *l->held, by_bytes);
    gt_qsort(l->at_end, l->nat_end, sizeof *l->at_end, by_bytes);
    gt_qsort(l->steady, l->nsteady, sizeof *l->steady, by_bytes);
    gt_qsort(l->once, l->nonce, sizeof *l->once, by_bytes);
    free(steady);
    free(once);
    free(ph);
    free(all);
    return code;
}

void gt_leaks_free(struct gt_leaks *l)
{
    free(l->after);
    free(l->once);
    free(l->sites);
    free(l->cached);
    free(l->held);
    free(l->at_end);
    free(l->steady);
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
                   "loop's first half: a cache that evicts, a buffer made once and reused; not a leak): %s in %lld\n"
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
