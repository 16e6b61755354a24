/* iterations_passes.c - training steps told by their backward passes, for
 * iterations_auto.c: the shim marks the frames of a thread waiting in
 * backward() (gt_frame_is_backward_mark), so under a tensor-level allocator
 * each allocation is known to be made inside a backward pass or not, and in
 * PyTorch's optimizers (a Python frame of torch/optim/) or not. A loop's
 * step begins one backward pass; a layer, an evaluation batch, an inference
 * batch begin none. */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "iterations.h"
#include "periods.h"

/* Which call sites were made inside backward() (IN_BACKWARD: the shim marks
 * the frames of the thread waiting there, gt_frame_is_backward_mark) or in
 * PyTorch's optimizers (IN_OPTIMIZER: a Python frame of torch/optim/). NULL
 * when no site is inside backward() (no stacks, no Python, no autograd):
 * nothing to tell passes by. */
enum { IN_BACKWARD = 1, IN_OPTIMIZER = 2 };

static unsigned char *backward_sites(struct gt_trace *t)
{
    if (!t->nsites || !t->site_nframes)
        return NULL;
    unsigned char *in = gt_xcalloc(t->nsites, 1);
    size_t marked = 0;
    for (size_t site = 0; site < t->nsites; site++) {
        const struct gt_frame *fi;
        int nf;
        if (gt_trace_frame_info(t, (int32_t)site, &fi, &nf))
            break;
        for (int k = 0; k < nf; k++) {
            if (gt_frame_is_backward_mark(&fi[k]))
                in[site] |= IN_BACKWARD;
            else if (fi[k].python && fi[k].file && strstr(fi[k].file, "torch/optim/"))
                in[site] |= IN_OPTIMIZER;
        }
        marked += (in[site] & IN_BACKWARD) != 0;
    }
    if (!marked) {
        free(in);
        return NULL;
    }
    return in;
}

/* How many backward passes begin inside events [from, to): allocations of
 * the loop's sequence (seq_ev, n) made outside backward() then inside it. A
 * pass the stretch begins in is not counted: a step cut at an allocation
 * inside its backward pass still holds one beginning. */
static size_t first_at(const uint32_t *seq_ev, size_t n, size_t ev)   /* the first of seq_ev at or after ev */
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (seq_ev[mid] < ev)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static size_t passes_begun(const struct gt_trace *t, const unsigned char *in_bwd, const uint32_t *seq_ev, size_t n,
                           size_t from, size_t to)
{
    size_t begun = 0;
    int was = -1;
    for (size_t q = first_at(seq_ev, n, from); q < n && seq_ev[q] < to; q++) {
        int32_t site = t->ev[seq_ev[q]].site;
        int now = site >= 0 && (in_bwd[site] & IN_BACKWARD);
        begun += was == 0 && now;
        was = now;
    }
    return begun;
}

/* One backward pass, one iteration: where the exact pattern's repetition
 * holds several training steps and other work (a Hugging Face Trainer
 * evaluating every 5 steps under cudaMallocAsync on an H200: "a pattern of
 * 1361 allocations repeats 3 times", 5 steps and an evaluation of 221
 * allocations), an anchor that spans about as much, each of whose steps
 * begins exactly one backward pass, is the loop's step, when the other work
 * (between some of its steps, more than once) is at least half a step: an
 * evaluation.
 * Gradient accumulation's optimizer step, a quarter of a micro-batch's
 * allocations (an MLP on an H200: 31 against 25), ends the repetition that
 * is the program's step; its micro-batches are no iterations. Where it is
 * longer (AdamW's temporaries of a model of many small tensors), its
 * allocations made in torch/optim/ tell it: only some of the micro-batches
 * hold them. (An optimizer outside torch/optim/ then lets the micro-batches
 * be the iterations: each runs the loop body's forward and backward.) */
int gt_iter_one_pass_each(struct gt_trace *t, const uint32_t *seq_ev, size_t n, const struct gt_iterations *exact,
                          const struct gt_iterations *an, int finer)
{
    if (finer && (exact->n < 1 || an->n < 2 * exact->n))
        return 0;
    /* allocations in each closed step but the first (a warm-up): some
     * longer than the median (other work), and where that could be an
     * optimizer step (below) at least two by half a step or more (it
     * recurs; the first optimizer step, making its state, is longer once) */
    size_t *len = gt_xmalloc(an->n * sizeof *len), m = 0;
    for (size_t k = 1; k < an->n; k++)
        if (an->it[k].closed) {
            len[m] = first_at(seq_ev, n, an->it[k].end_ev) - first_at(seq_ev, n, an->it[k].first_ev);
            m++;
        }
    gt_qsort(len, m, sizeof *len, gt_size_cmp);
    size_t med = m ? len[(m - 1) / 2] : 0, longer = 0, half_more = 0;
    for (size_t k = 0; k < m; k++) {
        longer += len[k] > med;
        half_more += len[k] * 2 >= med * 3;
    }
    free(len);
    if (!longer)
        return 0;
    unsigned char *in_bwd = backward_sites(t);
    if (!in_bwd)
        return 0;
    int ok = 1;
    size_t stepped = 0, steps = 0;   /* steps that run the optimizer's step() (its temporaries) */
    for (size_t k = 1; ok && k < an->n; k++)
        if (an->it[k].closed) {
            ok = passes_begun(t, in_bwd, seq_ev, n, an->it[k].first_ev, an->it[k].end_ev) == 1;
            steps++;
            for (size_t q = first_at(seq_ev, n, an->it[k].first_ev); q < n && seq_ev[q] < an->it[k].end_ev; q++) {
                int32_t site = t->ev[seq_ev[q]].site;
                if (site >= 0 && (in_bwd[site] & IN_OPTIMIZER)) {
                    stepped++;
                    break;
                }
            }
        }
    /* an optimizer step in some of them only: they are micro-batches whose
     * repetition (and its optimizer step) is the program's step. In every
     * one of them: the other work, of any length (an evaluation of one
     * batch, a metric logged every few steps), is no optimizer step; else it
     * must be half a step or more, twice */
    ok = ok && (stepped == 0 || stepped == steps) && ((stepped && stepped == steps) || half_more >= 2);
    /* and (finer than it) the exact pattern's repetition holds more than one */
    size_t mid = exact->n / 2;
    ok = ok && (!finer || (exact->it[mid].closed &&
                           passes_begun(t, in_bwd, seq_ev, n, exact->it[mid].first_ev, exact->it[mid].end_ev) >= 2));
    free(in_bwd);
    return ok;
}
