/* peak_steps.c - what `peak` decides about its iterations and its margin
 * beyond the fit (peak.c): whether the last iteration, not closed, is a whole
 * step (a killed process's; work after the loop in a marked one), and what
 * the rounding margin adds a sample where each sample adds live allocations. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"

/* The last iteration's own work ended longer before the trace than the
 * iterations' median step lasted: the process was stopped after it (a
 * scheduler's SIGTERM once the loop was done, a hang in teardown), not in
 * it (a review). */
int gt_peak_finished_before_the_end(struct gt_ctx *c, const struct gt_iterations *its)
{
    const struct gt_iteration *last = &its->it[its->n - 1];
    if (last->end_ev <= last->first_ev || its->n < 2)
        return 0;
    double *d = gt_xmalloc(its->n * sizeof *d);
    size_t m = 0;
    for (size_t k = 0; k + 1 < its->n; k++)
        if (its->it[k].closed && its->it[k].end > its->it[k].start)
            d[m++] = (double)(its->it[k].end - its->it[k].start);
    double step = m ? gt_median(d, m) : 0;
    free(d);
    int64_t quiet = gt_trace_end_ns(&c->t) - c->t.ev[last->end_ev - 1].t;
    return step > 0 && (double)quiet > step;
}

/* Allocations of the selection made in iteration k. */
static size_t allocations_in(const struct gt_trace *t, const struct gt_sel *sel, const struct gt_iteration *it)
{
    size_t n = 0;
    for (size_t i = it->first_ev; i < it->end_ev && i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        n += !e->failed && a->known && a->op == GT_OP_ALLOC && gt_sel_has(t, sel, e);
    }
    return n;
}

/* The last iteration, not closed, made more allocations than the closed
 * ones of its batch size; none of its size: more than the closed steps'
 * allocation counts, fitted against their batch sizes, say for its own (a
 * review: an ascending run of 4, 8, 16, one step each, whose allocations
 * grow with the batch, lost its last step to a median), with their largest
 * miss as slack (a single other batch size: not judged). Work after
 * the loop ran in it. As many: it is a step like the others (a program
 * that marks 64, 8, 32, 4 one step each and ends keeps its last). */
int gt_peak_ran_past_its_step(const struct gt_ctx *c, const struct gt_iterations *its, const struct gt_sel *sel)
{
    if (its->n < 2)
        return 0;
    const struct gt_iteration *last = &its->it[its->n - 1];
    double *x = gt_xmalloc(its->n * sizeof *x), *y = gt_xmalloc(its->n * sizeof *y);
    size_t m = 0, same = 0;
    double most_same = 0;
    for (size_t k = 0; k + 1 < its->n; k++) {
        if (!its->it[k].closed)
            continue;
        double a = (double)allocations_in(&c->t, sel, &its->it[k]);
        x[m] = (double)its->it[k].batch_size;
        y[m++] = a;
        if (its->it[k].batch_size == last->batch_size) {
            same++;
            most_same = a > most_same ? a : most_same;
        }
    }
    double usual = INFINITY;   /* one other batch size, not its own: nothing to judge by */
    if (same) {
        usual = most_same;
    } else if (m && last->batch_size >= 0) {
        struct gt_linfit f = gt_least_squares(x, y, m);
        if (f.ok) {
            double miss = 0;
            for (size_t k = 0; k < m; k++) {
                double r = fabs(y[k] - (f.intercept + f.slope * x[k]));
                miss = r > miss ? r : miss;
            }
            usual = f.intercept + f.slope * (double)last->batch_size + miss;
        }
    }
    free(x);
    free(y);
    return m && (double)allocations_in(&c->t, sel, last) > usual + 1e-9;
}

/* The rounding bound grows with the batch where each sample adds live
 * allocations: 100 KiB a sample, each its own allocation on pages of 2 MiB,
 * fitted 100 KiB a sample with a margin for the 33 allocations live at the
 * traced peak, and promised 9154 where 480 fit (a helper's probe). The bound
 * read at each batch size's peak (one pass over the events: one walk a batch
 * size was quadratic, 9 s for 8,000 sizes; a review), fitted against the
 * batch size: its slope, when it rises, is what each sample adds to the
 * margin past the largest batch size traced. Only a rise the data supports:
 * the live allocations' count must rise by 4 or more over the sizes traced
 * and by 3 times its largest miss of the line (scratch buffers whose number
 * varies by chance from step to step read as 614 KiB a sample; a review). */
#define ROUNDING_RISE_MIN 4.0
#define ROUNDING_RISE_MISSES 3.0

struct at_ev {
    uint32_t ev;
    size_t bs;   /* index into pk->bs */
};

static int ev_cmp(const void *a, const void *b)
{
    uint32_t x = ((const struct at_ev *)a)->ev, y = ((const struct at_ev *)b)->ev;
    return (x > y) - (x < y);
}

void gt_peak_rounding_per_sample(const struct gt_ctx *c, struct gt_peak *pk)
{
    struct gt_room *r = &pk->room;
    const struct gt_trace *t = &c->t;
    r->rounding_per_sample = 0;
    r->rounding_from_batch_size = pk->nbs ? pk->bs[pk->nbs - 1].batch_size : 0;
    if (pk->nbs < 2 || r->margin < 0)
        return;
    struct at_ev *order = gt_xmalloc(pk->nbs * sizeof *order);
    double *x = gt_xmalloc(pk->nbs * sizeof *x), *bytes = gt_xcalloc(pk->nbs, sizeof *bytes),
           *count = gt_xcalloc(pk->nbs, sizeof *count);
    size_t nat = 0;
    for (size_t i = 0; i < pk->nbs; i++) {
        x[i] = (double)pk->bs[i].batch_size;
        if (pk->bs[i].peak_ev != GT_NO_EVENT)   /* (a peak at an iteration's start: none counted) */
            order[nat++] = (struct at_ev){pk->bs[i].peak_ev, i};
    }
    gt_qsort(order, nat, sizeof *order, ev_cmp);
    int64_t live_bytes = 0, live_count = 0;
    size_t q = 0;
    for (size_t i = 0; i < t->nev && q < nat; i++) {
        const struct gt_event *e = &t->ev[i];
        int64_t g = gt_room_rounding_of(t, r, e);
        if (g) {
            live_bytes += g;
            live_count++;
        } else if (gt_attr(t, e)->op == GT_OP_FREE && c->p.partner[i] != GT_NO_EVENT &&
                   (g = gt_room_rounding_of(t, r, &t->ev[c->p.partner[i]]))) {
            live_bytes -= g;
            live_count--;
        }
        for (; q < nat && order[q].ev == i; q++) {
            bytes[order[q].bs] = (double)live_bytes;
            count[order[q].bs] = (double)live_count;
        }
    }
    struct gt_linfit fb = gt_least_squares(x, bytes, pk->nbs), fc = gt_least_squares(x, count, pk->nbs);
    double miss = 0, range = x[pk->nbs - 1] - x[0];   /* (bs is sorted by batch size) */
    for (size_t i = 0; fc.ok && i < pk->nbs; i++) {
        double m = fabs(count[i] - (fc.intercept + fc.slope * x[i]));
        miss = m > miss ? m : miss;
    }
    if (fb.ok && fc.ok && fb.slope > 0 && fc.slope * range >= ROUNDING_RISE_MIN &&
        fc.slope * range >= ROUNDING_RISE_MISSES * miss)
        r->rounding_per_sample = fb.slope;
    free(order);
    free(x);
    free(bytes);
    free(count);
}
