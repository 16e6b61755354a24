/* iterations_kernels.c - iterations found from CUPTI's kernel records when
 * the allocations repeat no pattern (a caching allocator that stopped
 * calling cudaMalloc): the period of the kernel names of the busiest device,
 * where the first step begins, and one kernel launched once per step where
 * the steps' kernels differ. */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "hmap.h"
#include "iterations.h"
#include "periods.h"

/* When no first step stands before the pattern at the phase where its exact
 * repetition begins, that repetition may have begun inside the first step:
 * at a stretch all steps end with, after where the first one differed (a
 * PyTorch MLP's first step on an H200 ran Adam's 12 zero fills between its
 * backward pass and its update, with the fill kernel the loss's backward
 * launches too; the pattern began at the update, 7 kernels before the first
 * step's end). Tried: each phase `at` where a kernel of the 2p before the
 * pattern stands in it, earliest kernels first, within a budget of work. A
 * phase is taken when the stretch before it holds 9/10 of the pattern read
 * from there (gt_first_step_start), beginning with the kernel every later
 * step then begins with, and 9/10 of what the pattern has before the cut
 * (its tail after `at` repeats by itself: it alone proves nothing), which
 * must be at least half the pattern (the cuts seen: 7 of 30, 26 of 744); the most
 * held wins, then the earliest start. Returns the first step's start, or base
 * when none; *at the phase (0: none). */
static size_t first_step_at_a_phase(const uint32_t *s, size_t base, size_t p, size_t reps, size_t *at, size_t *held)
{
    *at = *held = 0;
    if (reps < 2 || p < 16 || p > 16384)
        return base;
    size_t best = base, from = base > 2 * p ? base - 2 * p : 0, tries = 0;
    double budget = 2e8, cost = 2.0 * (double)p * (double)p;   /* the LCS's cells a try */
    unsigned char *tried = gt_xcalloc(p, 1);
    tried[0] = 1;   /* the pattern's own phase: tried by the caller */
    for (size_t f = from; f < base && budget >= cost && tries < 64; f++) {
        for (size_t a = 1; a < p && budget >= cost && tries < 64; a++) {
            if (tried[a] || s[base + a] != s[f])
                continue;
            tried[a] = 1;
            size_t head = p - a;   /* the pattern's part before the cut */
            if (head * 2 < p)
                continue;   /* a cut late in the pattern: set-up code that ends as steps end would pass */
            tries++;
            budget -= cost;
            size_t h, first = gt_first_step_start(s, 0, base + a, p, &h);
            if (first < base && s[first] == s[base + a] && h >= a + (9 * head + 9) / 10 &&
                (h > *held || (h == *held && first < best))) {
                best = first;
                *at = a;
                *held = h;
            }
        }
    }
    free(tried);
    return best;
}

/* Where steps differ (a new sequence length every step, whose GEMM kernels
 * follow the shape; an evaluation every few steps), the exact pattern covers
 * a stretch of them or a run inside one step (a GPT-2 trained on lengths
 * 16..256 on an H200: "a pattern of 1 kernel launch repeats 56 times" for 20
 * steps; a conv net evaluated every 5 steps: 3), but a kernel launched once
 * per step (gt_find_anchor: of equals, the first launched, a step's first)
 * recurs at regular gaps. Taken, span by span as the exact pattern is, when
 * it spans clearly more kernels than the exact pattern did (exact_cover), or
 * (below) finds more of its steps.
 * Fills out and returns 1, or 0. */
/* An iteration from a kernel's start to the next step's (next >= 0), or, the
 * last, to its span's end (span_end >= 0: what came after was not seen) or
 * the trace's. */
static void push_iteration(struct gt_trace *t, struct gt_iterations *out, size_t *cap, int64_t start, int64_t next,
                           int64_t span_end)
{
    struct gt_iteration *it = gt_iter_push(out, cap);
    it->index = (int64_t)out->n - 1;
    it->batch_size = -1;
    it->start = start;
    it->first_ev = gt_iter_bound(t, it->start, 0);
    if (next >= 0) {
        it->end = next;
        it->end_ev = gt_iter_bound(t, it->end, 0);
        it->closed = 1;
    } else if (span_end >= 0) {
        it->end = span_end > it->start ? span_end : it->start;
        it->end_ev = gt_iter_bound(t, it->end, 0);
    } else {
        it->end = gt_iter_trace_end(t, NULL, 0);
        it->end_ev = t->nev;
    }
}

struct anchor {
    size_t *at, n, cover, med;
    int64_t end;   /* the span's end (kernels sampled); -1: the trace's */
};

/* The best anchor over the spans (as gt_iter_from_kernel_pattern reads
 * them), of median gap at least min_med, into a (a->at: room for nk). */
static void find_anchor(struct gt_trace *t, const struct gt_kernel *k, const uint32_t *seq, size_t nk, size_t nsym,
                        size_t min_med, int wide, struct anchor *a)
{
    size_t *pos = gt_xmalloc(nk * sizeof *pos);
    a->n = a->cover = a->med = 0;
    a->end = -1;
    for (size_t s = 0, lo = 0, nseg = gt_kernel_span_count(t); s < nseg; s++) {
        size_t hi;
        int64_t end;
        gt_kernel_span(t, k, nk, s, &lo, &hi, &end);
        size_t med = 0;
        uint32_t sym = 0;
        size_t c = hi > lo ? gt_find_anchor(seq + lo, hi - lo, nsym, NULL, min_med, wide, pos, &med, &sym) : 0;
        if (c > a->n) {
            for (size_t j = 0; j < c; j++)
                a->at[j] = lo + pos[j];
            a->n = c, a->med = med, a->end = end;
            a->cover = a->at[c - 1] + med < hi ? a->at[c - 1] + med - a->at[0] : hi - a->at[0];
        }
        lo = hi;
    }
    free(pos);
}

/* Training steps with other work between some of them (a conv net
 * evaluated on 3 batches every 5 steps under the default allocator on an
 * H200: the exact pattern, 5 steps and an evaluation of 51 launches,
 * repeats 3 times; a Hugging Face Trainer evaluating every 5 steps: 1,138
 * launches, 3 times), told from a part of one step (a layer; see
 * kernel_anchor) by the kernels whose names say they compute gradients: a
 * training step runs its backward pass's, the same ones every step, and the
 * other work none (an evaluation runs forward passes). The anchor's steps
 * (a->at, in seq), the first (a warm-up) and the last (open) aside: each
 * runs the same non-empty multiset of such kernels; some hold other work
 * (an evaluation of one batch, or of up to three steps, once or every few
 * steps); and at least 2/5 of that work's kernels are of kinds a step
 * runs (an evaluation's forward passes: 97% and 76% in the two above). Gradient accumulation's optimizer
 * step (foreach AdamW's dozen kernels after micro-batches of 20) runs no
 * kernel of a micro-batch's kinds: its repetition is the program's step.
 * A layer's backward pass differs from the next layer's or from the step's
 * rest (the loss's and the embedding's gradients), or the step's rest (its
 * forward pass, loss and update) runs mostly kinds the layer's backward
 * pass does not (a review's residual MLP whose only kernel named as a
 * gradient's is each block's: 33%); a forward layer or an inference loop
 * runs no such kernel. The 2/5 is no sharp line: an evaluation that runs
 * mostly kernels of its own (a metric's) keeps the exact pattern's period. */
static int extra_shares_kinds(const uint32_t *seq, size_t from, size_t to, const uint32_t *ref, uint32_t *cnt,
                              size_t nsym)
{
    memset(cnt, 0, nsym * sizeof *cnt);
    for (size_t i = from; i < to; i++)
        cnt[seq[i]]++;
    size_t extra = 0, shared = 0;
    for (size_t s = 0; s < nsym; s++)
        if (cnt[s] > ref[s]) {
            extra += cnt[s] - ref[s];
            shared += ref[s] ? cnt[s] - ref[s] : 0;
        }
    return extra && shared * 5 >= extra * 2;
}

static int longer_gap(size_t g, size_t med)   /* longer than a step by more than steps differ */
{
    return g * 4 > med * 5 + 8;
}

static int steps_apart_from_other_work(const struct gt_kernel *k, const uint32_t *seq, size_t nsym,
                                       const struct anchor *a)
{
    if (a->n < 5)
        return 0;
    size_t gaps = a->n - 3, longer = 0, nref = 0;
    for (size_t j = 1; j + 1 < a->n; j++)
        longer += longer_gap(a->at[j + 1] - a->at[j], a->med);
    if (!longer || gaps < 2)
        return 0;
    size_t widest = 0;
    for (size_t j = 1; j + 1 < a->n; j++)
        if (a->at[j + 1] - a->at[j] > widest)
            widest = a->at[j + 1] - a->at[j];
    uint32_t *ref = gt_xmalloc(widest * sizeof *ref), *cur = gt_xmalloc(widest * sizeof *cur);
    int same = 1;
    for (size_t j = 1; same && j + 1 < a->n; j++) {
        size_t m = 0;
        for (size_t i = a->at[j]; i < a->at[j + 1]; i++)
            if (k[i].backward)
                cur[m++] = seq[i];
        gt_qsort(cur, m, sizeof *cur, gt_u32_cmp);
        if (j == 1) {
            memcpy(ref, cur, m * sizeof *cur);
            nref = m;
            same = m > 0;
        } else {
            same = m == nref && !memcmp(ref, cur, m * sizeof *cur);
        }
    }
    /* the other work, beyond a regular step's kernels, mostly of a step's kinds */
    size_t regular = 0;
    for (size_t j = 1; !regular && j + 1 < a->n; j++)
        if (!longer_gap(a->at[j + 1] - a->at[j], a->med))
            regular = j;
    uint32_t *refc = gt_xcalloc(nsym, sizeof *refc), *cnt = gt_xmalloc(nsym * sizeof *cnt);
    if (same && regular)
        for (size_t i = a->at[regular]; i < a->at[regular + 1]; i++)
            refc[seq[i]]++;
    same = same && regular;
    for (size_t j = 1; same && j + 1 < a->n; j++)
        if (longer_gap(a->at[j + 1] - a->at[j], a->med))
            same = extra_shares_kinds(seq, a->at[j], a->at[j + 1], refc, cnt, nsym);
    free(refc);
    free(cnt);
    free(ref);
    free(cur);
    return same;
}

/* Epochs whose last batch is smaller (a DataLoader's remainder): cuDNN and
 * cuBLAS choose its kernels by its shape, so the exact pattern is an epoch
 * (3 epochs of 7 batches of a conv net on an H200: "a pattern of 260 kernel
 * launches repeats 3 times", the last batch running 2 other kernels in
 * place of a wgrad one), while a kernel once per step recurs at gaps of
 * about one length (within a tenth, plus one). Each step (the first and the
 * open last aside) runs as many kernels named as gradients' (an inference
 * loop runs none; an adversarial attack's pass runs one more, the input's
 * gradient), and a step that runs other kernels than the first regular one runs
 * some in place of the ones that one runs, not only more (gradient
 * accumulation's optimizer adds its kernels to every k-th micro-batch). A
 * layer's backward pass is no step (the step's rest, the loss's gradients
 * and the update, lengthens one gap a repetition by more). Read wrong, the
 * same shape: passes of one length that end in other work than the last
 * one's optimizer step, each with the same gradient kernels (SAM's two
 * passes; PGD adversarial training whose attack passes run the same
 * gradient kernels as its training pass: a review's stand-in; where the
 * attack computes the input's gradient, as it must, its passes run one
 * more and the steps read right). */
static int steps_of_one_length(const struct gt_kernel *k, const uint32_t *seq, size_t nsym, const struct anchor *a)
{
    if (a->n < 5)
        return 0;
    size_t regular = 0;
    for (size_t j = 1; !regular && j + 1 < a->n; j++)
        if (a->at[j + 1] - a->at[j] == a->med)
            regular = j;
    if (!regular)
        return 0;
    uint32_t *ref = gt_xcalloc(nsym, sizeof *ref), *cnt = gt_xmalloc(nsym * sizeof *cnt);
    for (size_t i = a->at[regular]; i < a->at[regular + 1]; i++)
        ref[seq[i]]++;
    int ok = 1;
    size_t grads_first = 0, differ = 0, steps = 0;
    for (size_t j = 1; ok && j + 1 < a->n; j++) {
        size_t g = a->at[j + 1] - a->at[j], grads = 0;
        ok = g * 10 <= a->med * 11 + 10 && g * 10 + 10 >= a->med * 9;
        memset(cnt, 0, nsym * sizeof *cnt);
        for (size_t i = a->at[j]; ok && i < a->at[j + 1]; i++) {
            cnt[seq[i]]++;
            grads += k[i].backward != 0;
        }
        int lacks = 0, adds = 0;
        for (size_t s = 0; ok && s < nsym; s++) {
            lacks |= cnt[s] < ref[s];
            adds |= cnt[s] > ref[s];
        }
        /* as many gradient kernels in each (the smaller batch's: a cutlass
         * wgrad and a split-K reduction in place of one wgrad kernel) */
        if (j == 1)
            grads_first = grads;
        ok = ok && grads && grads == grads_first && (lacks || !adds);
        differ += lacks || adds;
        steps++;
    }
    free(ref);
    free(cnt);
    /* and most steps run the first one's kernels: an epoch's last batch (and
     * the step that ends where it begins) differ; a multi-task step's
     * backward passes, one per head, each run their own (a review: 40 for 20) */
    return ok && differ * 2 < steps;
}

static int kernel_anchor(struct gt_trace *t, const struct gt_kernel *k, const uint32_t *seq, size_t nk, size_t nsym,
                         size_t exact_cover, size_t exact_p, size_t exact_n, size_t exact_first, struct gt_iterations *out)
{
    /* the most frequent anchor (kept: the epochs' test below reads it too),
     * and room for the others tried */
    struct anchor first = {.at = gt_xmalloc(nk * sizeof *first.at)}, an = {.at = gt_xmalloc(nk * sizeof *an.at)};
    find_anchor(t, k, seq, nk, nsym, 0, 0, &first);
    size_t *best = first.at, best_n = first.n, best_cover = first.cover, best_med = first.med;
    int64_t best_end = first.end;
    /* An anchor finer than the exact pattern is a part of its step: in a loop
     * with no backward pass (inference) a kernel every layer launches recurs
     * at regular gaps, between steps too, and is launched most often (a
     * 12-layer model: 250 "iterations" for 10 batches). Or it recurs every
     * exact_p launches and finds more steps than the pattern did, one at most
     * a period before the pattern's first (under float16 autocast the
     * GradScaler's first step launches two kernels more, inside its forward
     * pass: 19 iterations for 20 steps; a kernel launched once in set-up
     * code, further back, is no step). */
    int same_scale = best_n && (!exact_p || best_med * 4 >= exact_p * 3);
    int more_cover = same_scale && best_cover * 10 > exact_cover * 11;
    int more_steps = same_scale && best_med == exact_p && best_n > exact_n && best[0] + exact_p >= exact_first;
    int taken = more_cover || more_steps;
    /* An exact pattern that spans under half the kernels may lie inside one
     * step (a 12-layer GPT-2's inference on new lengths under the default
     * allocator: "a pattern of 20 kernel launches repeats 12 times", one
     * batch's layers, for 20 batches): then a kernel launched once per step
     * recurs at gaps at least about that long, and the most frequent of those
     * is the step's (the batch's own randint, every 237 launches), taken when
     * the pattern's stretch lies in one of its steps (a quarter more at most:
     * the pattern's phase is not the step's) and it finds at least as many
     * steps as the pattern repeats (a kernel launched once per phase, say at
     * each of 3 runs of 20 batches, is no step of a pattern of a batch). */
    int coarser = 0;
    if (!taken && exact_p && exact_cover * 2 < nk) {
        find_anchor(t, k, seq, nk, nsym, exact_cover * 3 / 4 > exact_p ? exact_cover * 3 / 4 : exact_p + 1, 0, &an);
        best = an.at, best_n = an.n, best_cover = an.cover, best_med = an.med, best_end = an.end;
        size_t j = 0;
        while (j + 1 < best_n && best[j + 1] <= exact_first)
            j++;
        int inside = j + 1 < best_n && best[j] <= exact_first &&
                     (exact_first + exact_cover - best[j]) * 4 <= (best[j + 1] - best[j]) * 5;
        taken = coarser = inside && best_n >= exact_n && best_cover * 10 > exact_cover * 11;
    }
    /* steps with other work between some of them, finer than the exact
     * pattern of several steps and that work, spanning about as much; or
     * epochs, each of steps of one length, one of other kernels */
    int apart = 0, apart_spans = 0, epochs = 0;
    /* (with gaps that long allowed, a kernel every layer launches, its
     * gaps alternating, may be the most frequent: the next coarser are
     * tried, a few). Or of the exact pattern's scale, where the other work
     * breaks the pattern (an evaluation once, mid-run: the pattern spans
     * the steps on one side of it), spanning clearly more. */
    for (size_t min_med = 0, tries = 0; !taken && exact_p && tries < 6; tries++) {
        find_anchor(t, k, seq, nk, nsym, min_med, 1, &an);
        best = an.at, best_n = an.n, best_cover = an.cover, best_med = an.med, best_end = an.end;
        if (!best_n || best_med * 4 > exact_p * 5)
            break;
        int finer = best_med * 2 <= exact_p && best_cover * 10 >= exact_cover * 9;
        int same_scale_more = best_med * 4 >= exact_p * 3 && best_cover * 10 > exact_cover * 11;
        taken = apart = (finer || same_scale_more) && steps_apart_from_other_work(k, seq, nsym, &an);
        apart_spans = taken && !finer;
        min_med = best_med + 1;
    }
    if (!taken && exact_p) {
        best = first.at, best_n = first.n, best_cover = first.cover, best_med = first.med, best_end = first.end;
        taken = epochs = best_n && best_med * 2 <= exact_p && best_cover * 10 >= exact_cover * 9 &&
                         steps_of_one_length(k, seq, nsym, &first);
    }
    if (taken) {
        size_t cap = 0;
        out->n = 0;
        for (size_t j = 0; j < best_n; j++)
            push_iteration(t, out, &cap, k[best[j]].start, j + 1 < best_n ? k[best[j + 1]].start : -1, best_end);
        out->source = GT_ITER_AUTO;
        char why[200];
        if (epochs)
            snprintf(why, sizeof why, "steps of about one length, each with backward kernels; the exact pattern of %zu "
                     "launches, %zu steps, some with other kernels, repeats %zu times", exact_p,
                     (exact_p + best_med / 2) / best_med, exact_n);
        else if (apart_spans)
            snprintf(why, sizeof why, "each step runs the same backward kernels; an exact repeating pattern spans only "
                     "%zu of its %zu: other work between steps", exact_cover, best_cover);
        else if (apart)
            snprintf(why, sizeof why, "each step runs the same backward kernels; the exact pattern of %zu launches, "
                     "several steps and other work between them, repeats %zu times", exact_p, exact_n);
        else if (coarser)
            snprintf(why, sizeof why, "an exact repeating pattern of %zu launches spans only %zu of its %zu: a part of "
                     "a step, the steps differ", exact_p, exact_cover, best_cover);
        else if (more_cover && exact_p)
            snprintf(why, sizeof why, "an exact repeating pattern spans only %zu of its %zu: some steps differ", exact_cover,
                     best_cover);
        else if (more_cover)
            snprintf(why, sizeof why, "no exact repeating pattern: the steps differ");
        else if (best_n <= exact_n)
            snprintf(why, sizeof why, "the exact pattern of %zu launches repeats %zu times", exact_p, exact_n);
        else
            snprintf(why, sizeof why, "the exact pattern of %zu launches repeats %zu times, and %zu step%s more "
                     "differ%s from it", exact_p, exact_n, best_n - exact_n, best_n - exact_n == 1 ? "" : "s",
                     best_n - exact_n == 1 ? "s" : "");
        snprintf(out->how, sizeof out->how,
                 "automatic: one kernel recurs once per step, %zu times, about every %zu launches (%zu launch%s before "
                 "it; %s)%s", best_n, best_med, best[0], best[0] == 1 ? "" : "es", why,
                 best_end >= 0 ? " (kernels sampled: in the span where it recurs most)" : "");
    }
    free(first.at);
    free(an.at);
    return taken;
}

static int cmp_interval(const void *a, const void *b)
{
    const int64_t *x = a, *y = b;
    return x[0] < y[0] ? -1 : x[0] > y[0];
}

/* Kernels of XLA's autotuning: a kernel (by name) that ran only inside XLA's
 * compilations on the program's main thread (its "XlaCompile:" ranges,
 * ended) is the compiler's (its buffer checks and comparisons), and so is
 * every kernel of that compilation up to its last such one (the candidates
 * it times, which may bear the step's fusions' names): dropped, never a
 * step (on an H200 a JAX program's first kernel window held such kernels,
 * across the compilations of 10 modules, one recurring 38 times; its 20
 * steps ran after). Not every kernel inside a compilation: kernels carry
 * their time on the GPU, and a program that compiles its next step while
 * the GPU runs this one (JAX's asynchronous dispatch, a new shape every
 * step) runs its steps' kernels inside compilations too. */
static void drop_compiler_kernels(struct gt_trace *t, struct gt_kernel *k, size_t *nk)
{
    struct gt_range *r;
    size_t nr, ni = 0;
    if (!*nk || gt_trace_ranges(t, &r, &nr))
        return;
    int64_t(*iv)[2] = gt_xmalloc((nr + 1) * sizeof *iv);
    for (size_t i = 0; i < nr; i++)
        if (gt_xla_compilation(t, &r[i])) {
            iv[ni][0] = r[i].start;
            iv[ni++][1] = r[i].end;
        }
    gt_ranges_free(r, nr);
    if (ni) {
        qsort(iv, ni, sizeof *iv, cmp_interval);
        size_t nm = 0;   /* merged, in place */
        for (size_t i = 0; i < ni; i++)
            if (nm && iv[i][0] <= iv[nm - 1][1])
                iv[nm - 1][1] = iv[i][1] > iv[nm - 1][1] ? iv[i][1] : iv[nm - 1][1];
            else
                iv[nm][0] = iv[i][0], iv[nm++][1] = iv[i][1];
        size_t *in = gt_xmalloc(*nk * sizeof *in), *last = gt_xmalloc(nm * sizeof *last);
        struct gt_hmap outside;   /* names launched outside every compilation */
        gt_hmap_init(&outside);
        int oom = 0;
        for (size_t i = 0, j = 0; i < *nk; i++) {
            while (j < nm && iv[j][1] <= k[i].start)
                j++;
            in[i] = j < nm && iv[j][0] <= k[i].start ? j : SIZE_MAX;
            if (in[i] == SIZE_MAX)
                oom |= gt_hmap_put(&outside, (uint64_t)k[i].name_id, 1) == GT_HMAP_OOM;
        }
        for (size_t j = 0; j < nm; j++)
            last[j] = SIZE_MAX;
        for (size_t i = 0; i < *nk && !oom; i++)
            if (in[i] != SIZE_MAX && gt_hmap_get(&outside, (uint64_t)k[i].name_id) == GT_HMAP_NONE)
                last[in[i]] = i;   /* the compilation's last compiler-only kernel so far */
        size_t kept = 0;
        for (size_t i = 0; i < *nk && !oom; i++)
            if (in[i] == SIZE_MAX || last[in[i]] == SIZE_MAX || i > last[in[i]])
                k[kept++] = k[i];
        if (!oom)
            *nk = kept;
        gt_hmap_free(&outside);
        free(in);
        free(last);
    }
    free(iv);
}

/* Automatic iterations from CUPTI kernel names, when allocations repeat no
 * pattern (for example a caching allocator that stopped calling cudaMalloc).
 * With kernels sampled (GPUTRACE_KERNELS_*: records only in spans), the
 * kernels of two spans are no one sequence: the gap between them holds
 * steps nobody saw, and a pattern matched across it would make one
 * "iteration" of many. The pattern is looked for in each span alone, and
 * the iterations come from the span where it repeats most, the last one
 * ending with its span (not with the trace). */
int gt_iter_from_kernel_pattern(struct gt_trace *t, int64_t after, struct gt_iterations *out)
{
    struct gt_kernel *k;
    size_t nk;
    int code = gt_trace_kernels(t, &k, &nk);
    if (!code)
        drop_compiler_kernels(t, k, &nk);
    if (!code && after != INT64_MIN) {
        size_t kept = 0;
        for (size_t i = 0; i < nk; i++)
            if (k[i].start >= after)
                k[kept++] = k[i];
        nk = kept;
    }
    if (code || nk < 6) {
        free(k);
        return code;
    }
    struct gt_interner in = {0};
    uint32_t *seq = gt_xmalloc(nk * sizeof *seq);
    for (size_t i = 0; i < nk; i++) {
        struct gt_key3 key = {k[i].name_id, 0, 0};
        seq[i] = gt_intern(&in, &key);
    }
    size_t best_lo = 0, best_hi = 0, best_a = 0, best_p = 0, best_reps = 0;
    int64_t best_end = -1;
    for (size_t s = 0, lo = 0, nseg = gt_kernel_span_count(t); s < nseg; s++) {
        size_t hi;
        int64_t end;
        gt_kernel_span(t, k, nk, s, &lo, &hi, &end);
        size_t a, cover, p = hi - lo >= 6 ? gt_find_period(seq + lo, hi - lo, in.nkeys, &a, &cover) : 0;
        if (p && cover / p > best_reps) {
            best_lo = lo, best_hi = hi, best_a = a, best_p = p, best_reps = cover / p, best_end = end;
        }
        lo = hi;
    }
    size_t p = best_p, cap = 0;
    /* (a span of sampled kernels after the first begins inside some later
     * step: what precedes its pattern is no first step) */
    size_t held = 0, first = p && best_lo == 0 ? gt_first_step_start(seq, 0, best_a, p, &held) : best_lo + best_a;
    size_t base = best_lo + best_a, cut = 0;
    if (p && best_lo == 0 && first == base) {
        first = first_step_at_a_phase(seq, base, p, best_reps, &cut, &held);
        base += cut;   /* the later steps begin where the first one's tail ends */
    }
    size_t shift = p && !cut ? gt_phase_of_first_step(seq, first, base, p) : 0;
    if (shift) {
        /* taken when the first step then holds no less of the pattern (its
         * first kernel may be one set-up code also launched). Every shifted
         * repetition still begins inside the stretch (shift < p), and the
         * last one runs to the end, cut short or not */
        size_t held2, first2 = gt_first_step_start(seq, 0, base + shift, p, &held2);
        if (first2 == first && held2 >= held) {
            base += shift;
            held = held2;
        }
    }
    size_t exact_cover = p ? base - first + best_reps * p : 0;
    if (kernel_anchor(t, k, seq, nk, in.nkeys, exact_cover, p, best_reps + (p && first < best_lo + best_a),
                      p ? first : 0, out)) {
        gt_iter_steps_in_other_spans(t, k, seq, nk, out);
        out->from_kernels = 1;
        gt_interner_free(&in);
        free(seq);
        free(k);
        return GT_EXIT_OK;
    }
    if (p && first < best_lo + best_a) {
        struct gt_iteration *it = gt_iter_push(out, &cap);
        it->batch_size = -1;
        it->start = k[first].start;
        it->first_ev = gt_iter_bound(t, it->start, 0);
        it->end = k[base].start;
        it->end_ev = gt_iter_bound(t, it->end, 0);
        it->closed = 1;
    }
    for (size_t r = 0; p && r < best_reps; r++) {
        size_t b = base + r * p;
        push_iteration(t, out, &cap, k[b].start, b + p < best_hi ? k[b + p].start : -1, best_end);
    }
    if (p) {
        out->source = GT_ITER_AUTO;
        char extra[128] = "";
        if (first < best_lo + best_a)
            gt_say_first_step(extra, sizeof extra, base - first, held, p, "launches");
        if (best_end >= 0) {
            char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
            snprintf(out->how, sizeof out->how, "automatic: a pattern of %zu kernel launch%s repeats %zu times in the "
                     "span of recorded kernels from %s to %s (kernels sampled)%s", p, p == 1 ? "" : "es", best_reps,
                     gt_fmt_ns(k[first].start, b1), gt_fmt_ns(best_end, b2), extra);
        } else {
            snprintf(out->how, sizeof out->how, "automatic: a pattern of %zu kernel launch%s repeats %zu times%s", p,
                     p == 1 ? "" : "es", best_reps, extra);
        }
        gt_iter_steps_in_other_spans(t, k, seq, nk, out);
        out->from_kernels = 1;
    }
    gt_interner_free(&in);
    free(seq);
    free(k);
    return GT_EXIT_OK;
}
