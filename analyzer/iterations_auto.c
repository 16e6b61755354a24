/* iterations_auto.c - iterations found with no markers at all: the period
 * of the stream of allocations (api, size, call site; sizes set aside where
 * shapes change), or one allocation that recurs once per step where steps
 * differ. The kernels' own path, when allocations do not repeat, is
 * iterations_kernels.c; steps told by their backward passes,
 * iterations_passes.c. */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "iterations.h"
#include "periods.h"

/* Does a candidate look like a loop's iterations? A training step frees
 * temporaries it allocated (activations, gradients' scratch) before the next
 * step; a run of identical allocations inside one step (the layers of a
 * model, each activation kept for backward) frees nothing between
 * repetitions. So at least half the windows must free something they
 * allocated. (A loop whose only allocation is one leaked tensor per step is
 * therefore not found without markers: it looks exactly like a layer stack.) */
static int windows_release_memory(const struct gt_trace *t, const struct gt_pairs *pr, const struct gt_iteration *it, size_t n)
{
    size_t releasing = 0;
    for (size_t k = 0; k < n; k++) {
        for (size_t i = it[k].first_ev; i < it[k].end_ev; i++) {
            const struct gt_api_attr *a = &t->api[t->ev[i].api];
            if (!t->ev[i].failed && a->known && a->op == GT_OP_ALLOC && pr->partner[i] != GT_NO_EVENT &&
                pr->partner[i] < it[k].end_ev) {
                releasing++;
                break;
            }
        }
    }
    return n && releasing * 2 >= n;
}

/* Puts a step before out's iterations: [from, to) in events, closed; the
 * others' indexes move up by one. */
static void prepend_step(struct gt_iterations *out, const struct gt_trace *t, uint32_t from, uint32_t to)
{
    size_t cap = out->n;   /* (gt_iter_push grows it) */
    gt_iter_push(out, &cap);
    memmove(out->it + 1, out->it, (out->n - 1) * sizeof *out->it);
    struct gt_iteration *it = &out->it[0];
    memset(it, 0, sizeof *it);
    it->batch_size = -1;
    it->first_ev = from;
    it->start = t->ev[from].t;
    it->end_ev = to;
    it->end = t->ev[to].t;
    it->closed = 1;
    for (size_t k = 0; k < out->n; k++)
        out->it[k].index = (int64_t)k;
}

/* Places the iterations of period c: at phase (from c's start; negative:
 * the phase where live memory is lowest on average, since an iteration
 * boundary is where its temporaries are all freed), then whole repetitions
 * from there. Fills out (emptied first). */
static void place_iterations(const struct gt_trace *t, const struct gt_pairs *pr, const struct gt_sel *sel,
                             const uint32_t *seq_ev, size_t n, const struct gt_period *c, long phase,
                             struct gt_iterations *out, size_t *skipped, size_t *partial)
{
    size_t p = c->p, a = c->a, reps = c->cover / p;
    double *sum = gt_xcalloc(p, sizeof *sum);
    int64_t live = 0;
    size_t q = a, qend = a + reps * p;
    for (size_t i = 0; i < t->nev && q < qend; i++) {
        if (i == seq_ev[q]) {
            sum[(q - a) % p] += (double)live;
            q++;
        }
        live += gt_delta(t, pr, sel, i);
    }
    size_t o = 0;
    for (size_t k = 1; k < p; k++)
        if (sum[k] < sum[o])
            o = k;
    free(sum);
    if (phase >= 0)
        o = (size_t)phase % p;
    size_t count = o <= c->cover - reps * p ? reps : reps - 1, cap = 0;
    /* the pattern runs on past the last whole repetition for at least half
     * a period: the program's last step, cut short where the next would
     * have begun (on an H100, BERT's last step lacked only the next step's
     * first two allocations), is an iteration too */
    size_t tail = c->cover - o - count * p;
    *partial = 0;
    if (tail * 2 >= p && a + o + count * p < n) {
        count++;
        *partial = tail;
    }
    out->n = 0;
    for (size_t k = 0; k < count; k++) {
        size_t b = a + o + k * p;
        struct gt_iteration *it = gt_iter_push(out, &cap);
        it->index = (int64_t)k;
        it->batch_size = -1;
        it->first_ev = seq_ev[b];
        it->start = t->ev[it->first_ev].t;
        if (b + p < n) {
            it->end_ev = seq_ev[b + p];
            it->end = t->ev[it->end_ev].t;
            it->closed = 1;
        } else {
            it->end_ev = t->nev;
            it->end = t->ev[t->nev - 1].t;
        }
    }
    *skipped = a + o;
}

/* Iterations anchored on one allocation the loop makes once per step
 * (gt_find_anchor; of equals, the one where live memory is lowest: a step's
 * start). Fills out, *skipped (the allocations before it) and *cover (the
 * allocations its steps span); returns the anchor's symbol + 1, or 0. */
static uint32_t anchor_iterations(const struct gt_trace *t, const struct gt_pairs *pr, const struct gt_sel *sel,
                                  const uint32_t *seq, const uint32_t *seq_ev, size_t n, size_t nsym, size_t min_med,
                                  int wide, struct gt_iterations *out, size_t *skipped, size_t *cover, size_t *med_out)
{
    out->n = 0;
    if (n < 6)
        return 0;
    double *live_at = gt_xmalloc(n * sizeof *live_at);
    int64_t live = 0;
    for (size_t i = 0, q = 0; i < t->nev && q < n; i++) {
        if (i == seq_ev[q])
            live_at[q++] = (double)live;
        live += gt_delta(t, pr, sel, i);
    }
    size_t *p = gt_xmalloc(n * sizeof *p), med = 0;
    uint32_t best = 0;
    size_t count = gt_find_anchor(seq, n, nsym, live_at, min_med, wide, p, &med, &best);
    *med_out = med;
    if (count) {
        size_t cap = 0;
        for (size_t k = 0; k < count; k++) {
            struct gt_iteration *it = gt_iter_push(out, &cap);
            it->index = (int64_t)k;
            it->batch_size = -1;
            it->first_ev = seq_ev[p[k]];
            it->start = t->ev[it->first_ev].t;
            if (k + 1 < count) {
                it->end_ev = seq_ev[p[k + 1]];
                it->end = t->ev[it->end_ev].t;
                it->closed = 1;
            } else {
                it->end_ev = t->nev;
                it->end = t->ev[t->nev - 1].t;
            }
        }
        *skipped = p[0];
        *cover = p[count - 1] + med < n ? p[count - 1] + med - p[0] : n - p[0];
    }
    free(p);
    free(live_at);
    return count ? best + 1 : 0;
}

/* The shortest period d (a divisor of p, at most p/2) that s[0..p) repeats
 * with by call site, up to a tenth of its allocations (the epoch's last,
 * smaller batch may make a few from other stacks), or 0: an epoch of steps
 * whose pattern by sizes is the epoch. */
static size_t sub_period(const uint32_t *s, size_t p)
{
    for (size_t d = 1; d * 2 <= p; d++) {
        if (p % d)
            continue;
        size_t miss = 0;
        for (size_t i = 0; i + d < p && miss * 10 <= p; i++)
            miss += s[i] != s[i + d];
        if (miss * 10 <= p)
            return d;
    }
    return 0;
}

/* The program's last step after the pattern's last whole repetition, which
 * ended at allocation `end` (of n): its sizes may differ (a DataLoader's
 * last batch is smaller: a conv net's 20th batch of 19 samples on an H200
 * was "28 after" a pattern that repeated 19 times), so it is matched by
 * call site and API (blind) against the last repetition (gt_step_after). Appended to out,
 * said into say; returns its allocations, or 0 (none). Only where call
 * sites tell at least half the pattern's allocations apart: with stacks off,
 * or every allocation made by one wrapper function, a match by call site is
 * a match of lengths (work after the loop would pass for a step). (Its
 * allocations are not the exact pattern's cover, which the anchor and the
 * pass by call site are weighed against.) */
static size_t trailing_step(const struct gt_trace *t, struct gt_iterations *out, const uint32_t *seq_ev,
                            const uint32_t *blind, size_t n, size_t end, size_t p, char *say, size_t len)
{
    if (end < p || end >= n)
        return 0;
    size_t held, e = gt_kinds(blind + end - p, p) * 2 >= p ? gt_step_after(blind, n, end, blind + end - p, p, &held) : end;
    if (e <= end)
        return 0;
    size_t cap = out->n;   /* (gt_iter_push grows it) */
    struct gt_iteration *it = gt_iter_push(out, &cap);
    memset(it, 0, sizeof *it);
    it->index = (int64_t)out->n - 1;
    it->batch_size = -1;
    it->first_ev = seq_ev[end];
    it->start = t->ev[it->first_ev].t;
    it->closed = e < n;
    it->end_ev = e < n ? seq_ev[e] : (uint32_t)t->nev;
    it->end = t->ev[e < n ? seq_ev[e] : t->nev - 1].t;
    snprintf(say, len, ", and after them a last step of %zu allocations that holds %zu of the pattern's %zu by call"
             " site (its sizes differ)", e - end, held, p);
    return e - end;
}

/* A job's first steps may each differ from the rest (state made lazily,
 * optimizer state, a phase the pattern cut): this many are looked for. */
#define LEADING_STEPS 4

/* The best periodic pattern of the successful allocations whose repetitions
 * look like iterations, into out; how many allocations its iterations span
 * into *spanned, and how many allocations there are into *total. sized: an
 * allocation is its call site, API and size; else its call site and API. */
static void alloc_pattern(struct gt_trace *t, const struct gt_pairs *pr, const struct gt_sel *sel, bool sized,
                          struct gt_iterations *out, size_t *spanned, size_t *total, size_t *period, size_t *kinds,
                          size_t *sub)
{
    struct gt_interner in = {0}, in_blind = {0};
    uint32_t *seq = gt_xmalloc((t->nev ? t->nev : 1) * sizeof *seq);
    uint32_t *seq_ev = gt_xmalloc((t->nev ? t->nev : 1) * sizeof *seq_ev);
    uint32_t *blind = sized ? gt_xmalloc((t->nev ? t->nev : 1) * sizeof *blind) : seq;   /* sizes set aside */
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = &t->api[e->api];
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || !(GT_MASK_ALL & GT_MASK(a->memory)))
            continue;
        struct gt_key3 k = {sized ? e->size : 0, e->site, e->api & ~GT_API_GRAPH_IN_CAPTURE};   /* made during a capture or not: one call */
        seq[n] = gt_intern(&in, &k);
        if (sized) {
            k.size = 0;
            blind[n] = gt_intern(&in_blind, &k);
        }
        seq_ev[n++] = (uint32_t)i;
    }
    enum { TRIES = 8 };   /* each try walks the trace once */
    struct gt_period c[TRIES];
    size_t exact_cover = 0, exact_p = 0, exact_reps = 0, exact_kinds = 0, exact_sub = 0;
    size_t nc = gt_find_periods(seq, n, in.nkeys, c, TRIES);
    for (size_t k = 0; k < nc; k++) {
        size_t before, partial;
        size_t p = c[k].p;
        place_iterations(t, pr, sel, seq_ev, n, &c[k], -1, out, &before, &partial);
        if (out->n && windows_release_memory(t, pr, out->it, out->n)) {
            out->source = GT_ITER_AUTO;
            size_t held, step = gt_first_step_start(seq, 0, before, p, &held);
            size_t shift = step < before ? gt_phase_of_first_step(seq, step, before, p) : 0;
            if (shift) {
                /* the steps begin where the first one began, not where live
                 * memory is lowest (PyTorch Lightning's, on an H200: 16
                 * allocations before each step's end); taken when the first
                 * step found there is the same and holds no less, and no step
                 * at the end is lost */
                struct gt_iterations alt;
                memset(&alt, 0, sizeof alt);
                size_t before2, partial2, held2;
                place_iterations(t, pr, sel, seq_ev, n, &c[k], (long)(before - c[k].a + shift), &alt, &before2,
                                 &partial2);
                if (alt.n >= out->n && windows_release_memory(t, pr, alt.it, alt.n) &&
                    gt_first_step_start(seq, 0, before2, p, &held2) == step && held2 >= held) {
                    struct gt_iterations x = *out;
                    out->it = alt.it, out->n = alt.n;
                    alt.it = x.it;
                    before = before2, partial = partial2;
                }
                free(alt.it);
            }
            size_t covered = (partial ? out->n - 1 : out->n) * p + partial;
            char cut[96] = "", first[160] = "", last[160] = "";
            size_t trail = 0, trailed = 0;   /* a last step found by call site; its allocations */
            if (partial)
                snprintf(cut, sizeof cut, ", the last cut short after %zu of them", partial);
            else   /* a last step whose sizes differ: appended, and said in last */
                trailed = trailing_step(t, out, seq_ev, blind, n, before + covered, p, last, sizeof last);
            trail = trailed > 0;
            size_t starts[LEADING_STEPS], lead = gt_leading_steps(seq, 0, before, p, LEADING_STEPS, starts, &held);
            for (size_t j = lead; j-- > 0;)
                prepend_step(out, t, seq_ev[starts[j]], seq_ev[j + 1 < lead ? starts[j + 1] : before]);
            if (lead == 1)
                gt_say_first_step(first, sizeof first, before - starts[0], held, p, "allocations");
            else if (lead)
                snprintf(first, sizeof first, ", and before them %zu steps of %zu allocations in all, each holding at"
                         " least %zu of the pattern's %zu in order", lead, before - starts[0], held, p);
            if (lead) {
                covered += before - starts[0];
                before = starts[0];
            }
            exact_cover = covered;
            exact_p = p;
            exact_reps = out->n - lead - trail;
            exact_kinds = gt_kinds(seq + c[k].a, p);   /* from its first repetition */
            exact_sub = sized ? sub_period(blind + c[k].a, p) : 0;
            snprintf(out->how, sizeof out->how,
                     "automatic: a pattern of %zu allocation%s repeats %zu times%s%s%s (%zu allocation%s before %s, %zu"
                     " after)",
                     p, gt_s((long long)p), out->n - lead - trail, cut, first, last, before,
                     gt_s((long long)before), lead > 1 ? "those steps" : lead ? "that step" : "it",
                     n > before + covered + trailed ? n - (before + covered + trailed) : 0);
            break;
        }
        out->n = 0;
    }
    /* where steps differ, the exact pattern covers only a stretch of them
     * (or a run inside one step): an allocation made once per step covers
     * them all. It is taken when it spans clearly more of the trace. */
    struct gt_iterations an;
    memset(&an, 0, sizeof an);
    size_t before = 0, cover = 0, med = 0;
    uint32_t sym = anchor_iterations(t, pr, sel, seq, seq_ev, n, in.nkeys, 0, 0, &an, &before, &cover, &med);
    int more = 0, passes = 0, spans_more = 0;
    int taken = sym && windows_release_memory(t, pr, an.it, an.n) &&
                ((more = cover * 10 > exact_cover * 11) ||
                 (passes = cover * 10 >= exact_cover * 9 && gt_iter_one_pass_each(t, seq_ev, n, out, &an, 1)));
    /* other work longer than a step, or between every second or third step
     * (an evaluation): anchors whose longer gaps may be up to four steps, the
     * next coarser tried where one fails (an allocation every layer makes,
     * its gaps alternating, may be the most frequent), taken as above when
     * finer than the exact pattern, or at its scale spanning clearly more,
     * each step beginning one backward pass */
    for (size_t min_med = 0, tries = 0; !taken && exact_p && tries < 6; tries++) {
        free(an.it);
        memset(&an, 0, sizeof an);
        sym = anchor_iterations(t, pr, sel, seq, seq_ev, n, in.nkeys, min_med, 1, &an, &before, &cover, &med);
        if (!sym || med * 4 > exact_p * 5)
            break;
        int finer = med * 2 <= exact_p && cover * 10 >= exact_cover * 9;
        int spans = med * 4 >= exact_p * 3 && cover * 10 > exact_cover * 11;
        taken = passes = (finer || spans) && windows_release_memory(t, pr, an.it, an.n) &&
                         gt_iter_one_pass_each(t, seq_ev, n, out, &an, finer);
        spans_more = taken && !finer;
        min_med = med + 1;
    }
    if (taken) {
        free(out->it);
        out->it = an.it;
        out->n = an.n;
        an.it = NULL;
        out->source = GT_ITER_AUTO;
        const struct gt_key3 *k = &in.keys[sym - 1];
        char b[GT_FMT_LEN] = "its size changing";
        if (sized)
            gt_fmt_bytes(k->size, b);
        if (more || !passes)
            snprintf(out->how, sizeof out->how,
                     "automatic: one allocation (%s, %s) recurs once per step, %zu times (%zu allocation%s before it;"
                     " an exact repeating pattern spans only %zu of the %zu allocations: some steps differ)",
                     t->api[k->api].name, b, out->n, before, gt_s((long long)before), exact_cover, cover);
        else if (spans_more)
            snprintf(out->how, sizeof out->how,
                     "automatic: one allocation (%s, %s) recurs once per step, %zu times, each step with one backward"
                     " pass (%zu allocation%s before it; an exact repeating pattern spans only %zu of the %zu"
                     " allocations: other work between steps)",
                     t->api[k->api].name, b, out->n, before, gt_s((long long)before), exact_cover, cover);
        else
            snprintf(out->how, sizeof out->how,
                     "automatic: one allocation (%s, %s) recurs once per step, %zu times, each step with one backward"
                     " pass (%zu allocation%s before it; an exact repeating pattern of %zu allocations repeats %zu"
                     " times, each of them several steps with their backward passes and other work between)",
                     t->api[k->api].name, b, out->n, before, gt_s((long long)before), exact_p, exact_reps);
        exact_cover = cover;
        exact_p = 0;   /* (the iterations are the anchor's) */
    }
    free(an.it);
    if (!out->n) {
        free(out->it);
        out->it = NULL;
    }
    *spanned = out->n ? exact_cover : 0;
    *total = n;
    *period = out->n ? exact_p : 0;
    *kinds = exact_kinds;
    *sub = out->n && exact_p ? exact_sub : 0;
    gt_interner_free(&in);
    gt_interner_free(&in_blind);
    if (blind != seq)
        free(blind);
    free(seq);
    free(seq_ev);
}

/* Does any allocation carry a call site? */
static bool has_sites(const struct gt_trace *t)
{
    for (size_t i = 0; i < t->nev; i++)
        if (t->ev[i].site >= 0)
            return true;
    return false;
}

/* Automatic iterations from the stream of successful allocations. Where the
 * shapes change from step to step (a new sequence length every batch), one
 * call site's allocations change size with them and the pattern by sizes
 * spans one step's layers (a 12-layer GPT-2's forward passes under
 * cudaMallocAsync on an H200: "a pattern of 23 allocations repeats 12 times"
 * for 20 batches): then the pattern of call sites alone, sizes set aside,
 * when it spans clearly more, and all the first one spanned (not a run of
 * one call site trying sizes in set-up code: XLA's autotuning, a workspace
 * per configuration, before a loop the sizes found), with steps no finer
 * (without call sites, stacks off or one allocator function for all, every
 * allocation is one symbol: a "pattern of 1 allocation" is no loop). */
int gt_iter_from_alloc_pattern(struct gt_trace *t, const struct gt_pairs *pr, const struct gt_sel *sel, struct gt_iterations *out)
{
    size_t spanned, total, period, kinds, sub;
    alloc_pattern(t, pr, sel, true, out, &spanned, &total, &period, &kinds, &sub);
    if (!out->n || !has_sites(t))
        return GT_EXIT_OK;
    struct gt_iterations blind;
    memset(&blind, 0, sizeof blind);
    size_t spanned2 = 0, total2, period2 = 0, kinds2 = 0, sub2;
    /* (by sizes the pattern spans almost all: by call site only where its
     * period holds a shorter one by call site, several steps, one of them
     * of other sizes) */
    if (spanned * 10 < total * 9 || sub)
        alloc_pattern(t, pr, sel, false, &blind, &spanned2, &total2, &period2, &kinds2, &sub2);
    int covers = blind.n && blind.it[0].first_ev <= out->it[0].first_ev &&
                 blind.it[blind.n - 1].end_ev >= out->it[out->n - 1].end_ev;
    /* Epochs whose last batch is smaller (a DataLoader's remainder, in every
     * epoch): by sizes the pattern is one epoch, its steps the same by call
     * site; then the pattern by call site repeats a whole number of times in
     * it, spans as much, and call sites tell at least half its allocations
     * apart (not one wrapper's, nor stacks off: 110 for 20, found by a
     * review). */
    int epochs = covers && period && period2 && period % period2 == 0 && period >= 2 * period2 &&
                 kinds2 >= 2 && kinds2 * 2 >= period2 && spanned2 * 10 >= spanned * 9 && blind.n >= 2 * out->n;
    if (covers && ((spanned * 10 < total * 9 && spanned2 * 10 > spanned * 11 && spanned2 * out->n >= spanned * blind.n) ||
                   epochs)) {
        free(out->it);
        out->it = blind.it;
        out->n = blind.n;
        out->source = blind.source;
        if (epochs)
            snprintf(out->how, sizeof out->how, "%.380s, by call site with sizes set aside (by sizes the pattern is"
                     " %zu steps, one of other sizes)", blind.how, period / period2);
        else
            snprintf(out->how, sizeof out->how, "%.400s, by call site with sizes set aside (the shapes change)",
                     blind.how);
    } else {
        free(blind.it);
    }
    return GT_EXIT_OK;
}
