/* leaks.c - `gputrace leaks`: allocations still live when the process ended,
 * grouped by allocation call stack. Memory that a caching allocator holds
 * until exit by design (PyTorch's reserved segments) is not a leak: it is
 * recognised by the heuristic below and reported apart as "cached". With
 * iterations, what remains is split by when it was allocated: memory held for
 * the whole run (parameters, optimizer state), memory that accumulates over
 * the loop (the leak), and what the last iteration was still using. Said by
 * leaks_out.c. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "fit.h"
#include "format.h"

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

/* Where "after the loop" starts: the last iteration of the loop that ends last, whichever thread's loop
 * made an allocation (a producer thread's loop that ended early had its batches, freed by the main loop
 * while it ran, called freed after the loop; a review). */
static size_t after_loop_from(const struct gt_iterations *it)
{
    size_t from = it->it[it->n - 1].first_ev;
    for (size_t k = 0; k < it->nthreads; k++)
        if (it->threads[k].n && it->threads[k].it[it->threads[k].n - 1].first_ev > from)
            from = it->threads[k].it[it->threads[k].n - 1].first_ev;
    return from;
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
    size_t after_from = after_loop_from(it);   /* freed "after the loop": in its last iteration, or after it */
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

/* Sites whose live allocations of the loop were all made in iterations of
 * the largest batch size yet (gt_iter_new_largest_batch: each batch size ran
 * two iterations or more, which a leak would have kept from too): kept as
 * the batch grew, held steady (a program's own cache in one process stepping
 * through batch sizes 8, 16, 32, 64 read as a leak of 120 MiB made
 * "iteration after iteration"; a helper's probe). One loop only. */
static void kept_for_larger_batch(struct gt_ctx *c, const struct gt_sel *s, const struct gt_iterations *it,
                                  unsigned char *steady)
{
    unsigned char *largest = it->nthreads ? NULL : gt_iter_new_largest_batch(it);
    if (!largest)
        return;
    const struct gt_trace *t = &c->t;
    size_t ns = t->nsites + 1;
    unsigned char *seen = gt_xcalloc(ns, 1);   /* 1: at such iterations only; 2: elsewhere too */
    const struct loop l = {it->it, it->n};
    for (size_t a = 0; a < t->nev; a++) {
        const struct gt_event *e = &t->ev[a];
        if (e->failed || !t->api[e->api].known || t->api[e->api].op != GT_OP_ALLOC ||
            c->p.partner[a] != GT_NO_EVENT || !gt_sel_has(t, s, e) || phase_of(l, a) != PHASE_LOOP)
            continue;
        size_t site = e->site >= 0 ? (size_t)e->site : t->nsites, k = iteration_of(l, a);
        int at_largest = largest[k] && a >= it->it[k].first_ev && a < it->it[k].end_ev;
        seen[site] = at_largest && seen[site] != 2 ? 1 : 2;
    }
    for (size_t site = 0; site < ns; site++)
        if (seen[site] == 1)
            steady[site] = 1;
    free(seen);
    free(largest);
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
/* Freed within the loop's last step: before its last iteration ends; where that iteration runs on to the
 * trace's end (iterations found automatically, or the last marker's), within the time the steps before took
 * (their median) from its start. Behind, the teardown's frees fell in it: CuPy keeping 1 MiB a step for 20
 * steps, freed at the interpreter's teardown, read 19 arrays (an H200, session 53). */
static bool freed_in_last_step(const struct gt_trace *t, const struct loop *l, size_t f)
{
    const struct gt_iteration *last = &l->it[l->n - 1];
    if (f >= last->end_ev)
        return false;
    if (last->closed || l->n < 3)
        return true;
    double *d = gt_xmalloc((l->n - 1) * sizeof *d);
    size_t n = 0;
    for (size_t k = 0; k + 1 < l->n; k++)
        if (l->it[k].closed)
            d[n++] = (double)(l->it[k].end - l->it[k].start);
    bool in = n == 0 || (double)(t->ev[f].t - last->start) <= gt_median(d, n);
    free(d);
    return in;
}

/* To the loop phase of each site marked in grows, what it made in the first and the last iteration of
 * its thread's loop and freed only in the last iteration or after it (live_by_phase's freed_after counts
 * the iterations between). */
static void ph_add_whole_loop(const struct gt_ctx *c, const struct gt_sel *s, const struct gt_iterations *it,
                              const unsigned char *loop_of, const unsigned char *grows, struct gt_site_sum *ph)
{
    const struct gt_trace *t = &c->t;
    size_t after_from = after_loop_from(it);
    for (size_t a = 0; a < t->nev; a++) {
        const struct gt_event *e = &t->ev[a];
        size_t f = c->p.partner[a];
        size_t site = e->site >= 0 ? (size_t)e->site : t->nsites;
        if (!grows[site] || e->failed || !t->api[e->api].known || t->api[e->api].op != GT_OP_ALLOC ||
            f == GT_NO_EVENT || f < after_from || !gt_sel_has(t, s, e))
            continue;
        struct loop l = loop_of_event(it, loop_of, a);
        int phase = phase_of(l, a);
        if (phase == PHASE_LOOP || a < l.it[0].first_ev || a >= l.it[l.n - 1].end_ev)
            continue;   /* (counted already; before the loop; after it) */
        if (phase == PHASE_END && freed_in_last_step(t, &l, f))
            continue;   /* the last iteration's, freed in it: a step's own temporary, as far as can be told */
        struct gt_site_sum *g = &ph[site * PHASE_N + PHASE_LOOP];
        g->bytes += e->size > 0 ? e->size : 0;
        g->count++;
    }
}

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
    unsigned char *grows = gt_xcalloc(ns, 1);
    for (size_t site = 0; site < ns && !code; site++) {
        const struct gt_site_sum *p = &ph[site * PHASE_N + PHASE_LOOP];
        if (!p->count || steady[site] || iters[site] < 3 || !rising[site])
            continue;
        int has_frames = 0;
        const struct gt_caching_allocator *by;
        if (!c->o->cached_as_leaks && p->memory != GT_MEM_POOL &&
            (frames_say_cached(c, p->site, &has_frames, &by, &code) || code))
            continue;
        grows[site] = 1;
    }
    /* A site that accumulates is counted whole, its first and last iterations' too, as a leak live at
     * exit is: 30 steps each keeping 128 KiB, freed by an atexit handler, read 28 allocations and 3.50
     * MiB (growth's 128 KiB an iteration says 3.75): what was made before the loop or after it is not */
    ph_add_whole_loop(c, s, it, loop_of, grows, ph);
    for (size_t site = 0; site < ns && !code; site++)
        if (grows[site])
            add(l->after, &l->nafter, &l->after_bytes, &l->after_count, ph[site * PHASE_N + PHASE_LOOP]);
    free(grows);
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
            kept_for_larger_batch(c, &s, it, steady);
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
