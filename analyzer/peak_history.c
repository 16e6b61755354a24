/* peak_history.c - what a trace's history says about `peak`'s per-batch
 * peaks (peak.c): the new highs and failed allocations per iteration, whether
 * peaks follow history (a smaller batch after a larger one peaked as high),
 * memory one batch size's run carried into the next, memory held from before
 * the loop through every peak, and traced memory beside a pool that followed
 * the batch size. */
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"

/* New highs, what each iteration kept past its end and its failed
 * allocations (pk->high), and whether peaks follow history: a complete
 * iteration of a smaller batch size after a larger one peaked as high. */
void gt_peak_history(struct gt_ctx *c, const struct gt_iterations *its, struct gt_peak *pk)
{
    const struct gt_trace *t = &c->t;
    pk->high = gt_xcalloc(its->n + 1, sizeof *pk->high);
    int64_t high = its->n ? pk->w[0].start_live : 0;
    for (size_t k = 0; k < its->n; k++) {
        struct gt_peak_high *h = &pk->high[k];
        for (size_t i = its->it[k].first_ev; i < its->it[k].end_ev; i++) {
            const struct gt_event *e = &t->ev[i];
            const struct gt_api_attr *a = gt_attr(t, e);
            if (!a->known || a->op != GT_OP_ALLOC || !(pk->sel.mem_mask & GT_MASK(a->memory)) ||
                (pk->sel.device != GT_ANY_DEVICE && e->device != pk->sel.device))
                continue;
            if (e->failed)
                h->failed++;
            else if (c->p.partner[i] == GT_NO_EVENT || c->p.partner[i] >= its->it[k].end_ev)
                h->kept++;
        }
        if (pk->w[k].peak > high) {
            h->new_high = 1;
            h->added = pk->w[k].peak - high;
            high = pk->w[k].peak;
        }
    }
    /* per batch size (pk->bs, sorted), the lowest peak seen so far */
    int64_t *lowest = gt_xmalloc((pk->nbs + 1) * sizeof *lowest);
    for (size_t b = 0; b < pk->nbs; b++)
        lowest[b] = INT64_MAX;
    for (size_t j = 0; j < its->n && !pk->history; j++) {
        if (pk->incomplete[j] || its->it[j].batch_size < 0 || pk->w[j].peak <= 0)
            continue;
        size_t b = 0;
        while (b < pk->nbs && pk->bs[b].batch_size != its->it[j].batch_size)
            b++;
        for (size_t larger = b + 1; larger < pk->nbs && !pk->history; larger++)
            pk->history = lowest[larger] <= pk->w[j].peak;
        if (b < pk->nbs && pk->w[j].peak < lowest[b])
            lowest[b] = pk->w[j].peak;
    }
    free(lowest);
}

/* Memory held through the iteration of a batch size's highest peak that was
 * allocated at other batch sizes, those of the first aside (where a job makes what it keeps for
 * its whole life: parameters, optimizer state, workspaces). Under a caching
 * allocator (PyTorch's default) it is the segments earlier batch sizes
 * reserved, kept in its cache: the peaks follow the allocator's history in
 * ascending order too, and a line through them is steeper than the batch's
 * own memory (the stand-in, batch sizes 2..10 in one process: 4.5 MiB a
 * sample for 1.65). A tensor-level trace frees what a batch allocated within
 * its iterations; memory it kept from them (a leak) makes the peaks follow
 * the run's length as much. A VMM handle is left out: an expandable segment
 * maps pages of one range, which the next batch size reuses as it grows. */
#define CARRIED_SHARE 0.125   /* of the peak above the live memory before the first iteration */
#define CARRIED_RUNS 16       /* runs of one batch size checked (a pass over the trace's start each) */

/* Bytes allocated in events [from, to) at the level, a VMM handle aside, and
 * still live at event kept_past. */
static int64_t held_from(const struct gt_ctx *c, const struct gt_peak *pk, size_t from, size_t to, size_t kept_past,
                         int handles)
{
    const struct gt_trace *t = &c->t;
    int64_t held = 0;
    for (size_t i = from; i < to; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        uint32_t f = c->p.partner[i];
        if (!e->failed && a->known && a->op == GT_OP_ALLOC && e->size > 0 && gt_sel_has(t, &pk->sel, e) &&
            (handles || strcmp(a->name, "cuMemCreate")) && (f == GT_NO_EVENT || f >= kept_past))
            held += e->size;
    }
    return held;
}

/* Whether events [from, to) allocate at the level (a failed call counts: it asked) */
static int allocates(const struct gt_ctx *c, const struct gt_peak *pk, size_t from, size_t to)
{
    for (size_t i = from; i < to; i++) {
        const struct gt_event *e = &c->t.ev[i];
        const struct gt_api_attr *a = gt_attr(&c->t, e);
        if (a->known && a->op == GT_OP_ALLOC && e->size > 0 && gt_sel_has(&c->t, &pk->sel, e))
            return 1;
    }
    return 0;
}

void gt_peak_carried(struct gt_ctx *c, const struct gt_iterations *its, struct gt_peak *pk)
{
    size_t loop_start = 0;   /* the first iteration of a batch size */
    while (loop_start < its->n && its->it[loop_start].batch_size < 0)
        loop_start++;
    size_t first_run = loop_start;   /* past it, the first batch size's run */
    int64_t first_bs = first_run < its->n ? its->it[first_run].batch_size : -1;
    while (first_run < its->n && its->it[first_run].batch_size == first_bs)
        first_run++;
    double worst = 0;
    size_t checked = 0;
    int64_t largest_before = first_bs;
    for (size_t r = first_run, end; r < its->n && checked < CARRIED_RUNS; r = end) {
        size_t top = its->n;   /* the run's highest complete peak, the later on a tie */
        for (end = r; end < its->n && its->it[end].batch_size == its->it[r].batch_size; end++)
            if (!pk->incomplete[end] && pk->w[end].peak_ev != GT_NO_EVENT && (top == its->n || pk->w[end].peak >= pk->w[top].peak))
                top = end;
        int64_t bs = its->it[r].batch_size;
        int larger = bs > largest_before;
        largest_before = larger ? bs : largest_before;
        if (bs < 0)
            continue;
        size_t quiet = top;   /* (an iteration with no event has no peak event: its peak is what it inherited) */
        for (size_t k = r; k < end && quiet == its->n; k++)
            quiet = pk->incomplete[k] ? its->n : k;
        /* (not at the pool level: a stream-ordered pool's tensors are allocated each step, and a
         * step that allocates none there runs in buffers the program sized beforehand, which a
         * tensor-level trace cannot be told to avoid) */
        if (larger && quiet < its->n && pk->sel.mem_mask != GT_MASK(GT_MEM_POOL) &&
            !allocates(c, pk, its->it[r].first_ev, its->it[end - 1].end_ev)) {
            top = quiet;
            /* a batch larger than every one before that allocated nothing ran in memory
             * reserved before it (a caching allocator's segments, which bs 2's step made
             * and bs 16's reused): its peak is what was reserved, and a line through it
             * says the batch costs nothing (the first-hour walk: a warm-up at another
             * batch size gave "peak does not grow with batch size") */
            /* expandable segments' handles count here: they are what the larger batch reused */
            int64_t held = held_from(c, pk, its->it[loop_start].first_ev, its->it[r].first_ev, its->it[top].end_ev, 1);
            int64_t growth = pk->w[top].peak - pk->w[0].start_live;
            if (held > 0 && growth > 0 && held >= CARRIED_SHARE * (double)growth && (double)held / (double)growth > worst) {
                worst = (double)held / (double)growth;
                pk->carried_bytes = held;
                pk->carried_batch_size = bs;
            }
            continue;
        }
        /* the run right after the first can carry nothing else: only the first's came before it */
        if (r == first_run || top == its->n)
            continue;
        checked++;
        /* held through the whole top iteration, not only at its peak: memory
         * the iteration before left and this one frees later (gradients that
         * a zero_grad after the forward releases) is no history */
        int64_t held = held_from(c, pk, its->it[first_run].first_ev, its->it[r].first_ev, its->it[top].end_ev, 0);
        int64_t growth = pk->w[top].peak - pk->w[0].start_live;
        if (growth > 0 && held >= CARRIED_SHARE * (double)growth && (double)held / (double)growth > worst) {
            worst = (double)held / (double)growth;
            pk->carried_bytes = held;
            pk->carried_batch_size = its->it[r].batch_size;
        }
    }
    if (pk->carried_bytes >= 0)
        pk->history = 1;
}

/* Bytes allocated before the loop and live at every iteration's peak (a
 * program frees its weights at exit, inside the last marked iteration):
 * every batch size's peak holds them, so the line's fixed part is no lower. */
int64_t gt_peak_held_through(const struct gt_ctx *c, const struct gt_sel *sel, const struct gt_iterations *its,
                             const struct gt_peak *pk)
{
    if (!its->n)
        return 0;
    size_t from = its->it[0].first_ev, to = 0;
    for (size_t k = 0; k < its->n; k++)
        if (pk->w[k].peak_ev != GT_NO_EVENT && pk->w[k].peak_ev >= to)
            to = pk->w[k].peak_ev + 1;
    int64_t held = 0;
    for (size_t i = 0; i < from && i < c->t.nev; i++) {
        const struct gt_event *e = &c->t.ev[i];
        const struct gt_api_attr *a = gt_attr(&c->t, e);
        uint32_t f = c->p.partner[i];
        if (!e->failed && a->known && a->op == GT_OP_ALLOC && e->size > 0 && gt_sel_has(&c->t, sel, e) &&
            (f == GT_NO_EVENT || f >= to))
            held += e->size;
    }
    return held;
}

/* Under a pool fit, traced device memory beside it (a library's cudaMalloc
 * workspace) is taken from the room at its peak, as fixed (room.c): when
 * its peak per batch size rose at every batch size traced, it follows the
 * batch, and the pool's line alone would over-promise (a helper's probe:
 * 10 MiB a sample in each level, the answer twice the truth). A library's
 * one allocation made at some batch size is a step, not this. */
void gt_peak_other_levels(struct gt_ctx *c, const struct gt_iterations *its, struct gt_peak *pk)
{
    pk->other_grows_bs = pk->other_low = pk->other_high = -1;
    if (pk->nbs < 3 || pk->sel.mem_mask != GT_MASK(GT_MEM_POOL))
        return;
    struct gt_sel o = pk->sel;
    o.mem_mask = GT_MASK(GT_MEM_DEVICE);
    o.device = pk->room.device;
    struct gt_window *w = gt_xmalloc((its->n + 1) * sizeof *w);
    for (size_t k = 0; k < its->n; k++) {
        w[k].first_ev = its->it[k].first_ev;
        w[k].end_ev = its->it[k].end_ev;
    }
    gt_window_live(&c->t, &c->p, &o, w, its->n);
    int64_t prev = -1, low = -1;
    int rises = 1;
    for (size_t b = 0; b < pk->nbs && rises; b++) {
        int64_t top = -1;
        for (size_t k = 0; k < its->n; k++)
            if (its->it[k].batch_size == pk->bs[b].batch_size && !pk->incomplete[k] && w[k].peak > top)
                top = w[k].peak;
        if (b == 0)
            low = top;
        else
            rises = top > prev;
        prev = top;
    }
    free(w);
    if (rises && low >= 0) {
        pk->other_grows_bs = pk->bs[pk->nbs - 1].batch_size;
        pk->other_low = low;
        pk->other_high = prev;
    }
}
