/* iterations_auto.c - iterations found with no markers at all: the period
 * of the stream of allocations (api, size, call site), or one allocation
 * that recurs once per step where steps differ, or the period of the kernel
 * names when CUPTI data is there and allocations do not repeat. */
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
                                  const uint32_t *seq, const uint32_t *seq_ev, size_t n, size_t nsym,
                                  struct gt_iterations *out, size_t *skipped, size_t *cover)
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
    size_t count = gt_find_anchor(seq, n, nsym, live_at, p, &med, &best);
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

/* Where a step begins inside the pattern s[base .. base+p) (kernels or
 * allocations): the
 * pattern is found where its exact repetition starts, which is where the
 * first step stopped differing, not where the steps begin (a ResNet-50 on an
 * H200: 26 kernels before each step's end, AdamW's last, which its first
 * step ran too). The first step, found before it (first < base), begins at
 * a kernel the steps begin with: where that kernel stands in the pattern,
 * when it stands there once, is the steps' phase. Returns it (0: the
 * pattern begins with it, or nothing tells). */
static size_t phase_of_first_step(const uint32_t *s, size_t first, size_t base, size_t p)
{
    if (first >= base)
        return 0;
    size_t at = 0, seen = 0;
    for (size_t r = 0; r < p; r++)
        if (s[base + r] == s[first] && !seen++)
            at = r;
    return seen == 1 ? at : 0;
}

/* A job's first steps may each differ from the rest (state made lazily,
 * optimizer state, a phase the pattern cut): this many are looked for. */
#define LEADING_STEPS 4

/* The best periodic pattern of the successful allocations whose repetitions
 * look like iterations, into out; how many allocations its iterations span
 * into *spanned, and how many allocations there are into *total. sized: an
 * allocation is its call site, API and size; else its call site and API. */
static void alloc_pattern(struct gt_trace *t, const struct gt_pairs *pr, const struct gt_sel *sel, bool sized,
                          struct gt_iterations *out, size_t *spanned, size_t *total)
{
    struct gt_interner in = {0};
    uint32_t *seq = gt_xmalloc((t->nev ? t->nev : 1) * sizeof *seq);
    uint32_t *seq_ev = gt_xmalloc((t->nev ? t->nev : 1) * sizeof *seq_ev);
    size_t n = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = &t->api[e->api];
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || !(GT_MASK_ALL & GT_MASK(a->memory)))
            continue;
        struct gt_key3 k = {sized ? e->size : 0, e->site, e->api & ~GT_API_GRAPH_IN_CAPTURE};   /* made during a capture or not: one call */
        seq[n] = gt_intern(&in, &k);
        seq_ev[n++] = (uint32_t)i;
    }
    enum { TRIES = 8 };   /* each try walks the trace once */
    struct gt_period c[TRIES];
    size_t exact_cover = 0;
    size_t nc = gt_find_periods(seq, n, in.nkeys, c, TRIES);
    for (size_t k = 0; k < nc; k++) {
        size_t before, partial;
        size_t p = c[k].p;
        place_iterations(t, pr, sel, seq_ev, n, &c[k], -1, out, &before, &partial);
        if (out->n && windows_release_memory(t, pr, out->it, out->n)) {
            out->source = GT_ITER_AUTO;
            size_t held, step = gt_first_step_start(seq, 0, before, p, &held);
            size_t shift = step < before ? phase_of_first_step(seq, step, before, p) : 0;
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
            char cut[96] = "", first[160] = "";
            if (partial)
                snprintf(cut, sizeof cut, ", the last cut short after %zu of them", partial);
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
            snprintf(out->how, sizeof out->how,
                     "automatic: a pattern of %zu allocation%s repeats %zu times%s%s (%zu allocation%s before %s, %zu after)",
                     p, gt_s((long long)p), out->n - lead, cut, first, before,
                     gt_s((long long)before), lead > 1 ? "those steps" : lead ? "that step" : "it",
                     n > before + covered ? n - (before + covered) : 0);
            break;
        }
        out->n = 0;
    }
    /* where steps differ, the exact pattern covers only a stretch of them
     * (or a run inside one step): an allocation made once per step covers
     * them all. It is taken when it spans clearly more of the trace. */
    struct gt_iterations an;
    memset(&an, 0, sizeof an);
    size_t before = 0, cover = 0;
    uint32_t sym = anchor_iterations(t, pr, sel, seq, seq_ev, n, in.nkeys, &an, &before, &cover);
    if (sym && cover * 10 > exact_cover * 11 && windows_release_memory(t, pr, an.it, an.n)) {
        free(out->it);
        out->it = an.it;
        out->n = an.n;
        an.it = NULL;
        out->source = GT_ITER_AUTO;
        const struct gt_key3 *k = &in.keys[sym - 1];
        char b[GT_FMT_LEN] = "its size changing";
        if (sized)
            gt_fmt_bytes(k->size, b);
        snprintf(out->how, sizeof out->how,
                 "automatic: one allocation (%s, %s) recurs once per step, %zu times (%zu allocation%s before it;"
                 " an exact repeating pattern spans only %zu of the %zu allocations: some steps differ)",
                 t->api[k->api].name, b, out->n, before, gt_s((long long)before), exact_cover, cover);
        exact_cover = cover;
    }
    free(an.it);
    if (!out->n) {
        free(out->it);
        out->it = NULL;
    }
    *spanned = out->n ? exact_cover : 0;
    *total = n;
    gt_interner_free(&in);
    free(seq);
    free(seq_ev);
}

/* Automatic iterations from the stream of successful allocations. Where the
 * shapes change from step to step (a new sequence length every batch), one
 * call site's allocations change size with them and the pattern by sizes
 * spans one step's layers (a 12-layer GPT-2's forward passes under
 * cudaMallocAsync on an H200: "a pattern of 23 allocations repeats 12 times"
 * for 20 batches): then the pattern of call sites alone, sizes set aside,
 * when it spans clearly more, and all the first one spanned (not a run of
 * one call site trying sizes in set-up code: XLA's autotuning, a workspace
 * per configuration, before a loop the sizes found). */
int gt_iter_from_alloc_pattern(struct gt_trace *t, const struct gt_pairs *pr, const struct gt_sel *sel, struct gt_iterations *out)
{
    size_t spanned, total;
    alloc_pattern(t, pr, sel, true, out, &spanned, &total);
    if (!out->n || spanned * 10 >= total * 9)
        return GT_EXIT_OK;
    struct gt_iterations blind;
    memset(&blind, 0, sizeof blind);
    size_t spanned2, total2;
    alloc_pattern(t, pr, sel, false, &blind, &spanned2, &total2);
    if (blind.n && spanned2 * 10 > spanned * 11 && blind.it[0].first_ev <= out->it[0].first_ev &&
        blind.it[blind.n - 1].end_ev >= out->it[out->n - 1].end_ev) {
        free(out->it);
        out->it = blind.it;
        out->n = blind.n;
        out->source = blind.source;
        snprintf(out->how, sizeof out->how, "%.400s, by call site with sizes set aside (the shapes change)", blind.how);
    } else {
        free(blind.it);
    }
    return GT_EXIT_OK;
}

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
static int kernel_anchor(struct gt_trace *t, const struct gt_kernel *k, const uint32_t *seq, size_t nk, size_t nsym,
                         size_t exact_cover, size_t exact_p, size_t exact_n, size_t exact_first, struct gt_iterations *out)
{
    const struct gt_kernel_sampling *ks = &t->kernels;
    bool sampled = ks->on && ks->full_until_ns >= 0 && ks->nspans;
    size_t nseg = sampled ? ks->nspans : 1;
    size_t *pos = gt_xmalloc(nk * sizeof *pos), *best = gt_xmalloc(nk * sizeof *best);
    size_t best_n = 0, best_cover = 0, best_hi = 0, best_med = 0;
    uint32_t best_sym = 0;
    int64_t best_end = -1;
    for (size_t s = 0, lo = 0; s < nseg; s++) {
        size_t hi = nk;
        int64_t end = -1;
        if (sampled) {   /* as gt_iter_from_kernel_pattern reads the spans */
            int64_t from = ks->spans[s][0] - 1000000, to = ks->spans[s][1] + 50000000;
            while (lo < nk && k[lo].start < from)
                lo++;
            for (hi = lo; hi < nk && k[hi].start <= to; hi++)
                ;
            end = ks->spans[s][1];
        }
        size_t med = 0;
        uint32_t sym = 0;
        size_t c = hi > lo ? gt_find_anchor(seq + lo, hi - lo, nsym, NULL, pos, &med, &sym) : 0;
        if (c > best_n) {
            for (size_t j = 0; j < c; j++)
                best[j] = lo + pos[j];
            best_n = c, best_hi = hi, best_med = med, best_sym = sym, best_end = end;
            best_cover = best[c - 1] + med < hi ? best[c - 1] + med - best[0] : hi - best[0];
        }
        lo = hi;
    }
    free(pos);
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
    if (taken) {
        size_t cap = 0;
        out->n = 0;
        for (size_t j = 0; j < best_n; j++) {
            struct gt_iteration *it = gt_iter_push(out, &cap);
            it->index = (int64_t)j;
            it->batch_size = -1;
            it->start = k[best[j]].start;
            it->first_ev = gt_iter_bound(t, it->start, 0);
            if (j + 1 < best_n) {
                it->end = k[best[j + 1]].start;
                it->end_ev = gt_iter_bound(t, it->end, 0);
                it->closed = 1;
            } else if (best_end >= 0) {
                it->end = best_end > it->start ? best_end : it->start;
                it->end_ev = gt_iter_bound(t, it->end, 0);
            } else {
                it->end = gt_iter_trace_end(t, NULL, 0);
                it->end_ev = t->nev;
            }
        }
        out->source = GT_ITER_AUTO;
        char why[160];
        if (more_cover && exact_p)
            snprintf(why, sizeof why, "an exact repeating pattern spans only %zu of its %zu: some steps differ", exact_cover,
                     best_cover);
        else if (more_cover)
            snprintf(why, sizeof why, "no exact repeating pattern: the steps differ");
        else
            snprintf(why, sizeof why, "the exact pattern of %zu launches repeats, and it begins %zu step%s more", exact_p,
                     best_n - exact_n, best_n - exact_n == 1 ? "" : "s");
        snprintf(out->how, sizeof out->how,
                 "automatic: one kernel recurs once per step, %zu times, about every %zu launches (%zu launch%s before "
                 "it; %s)%s", best_n, best_med, best[0], best[0] == 1 ? "" : "es", why,
                 best_end >= 0 ? " (kernels sampled: in the span where it recurs most)" : "");
        (void)best_sym;
        (void)best_hi;
    }
    free(best);
    return taken;
}

/* Automatic iterations from CUPTI kernel names, when allocations repeat no
 * pattern (for example a caching allocator that stopped calling cudaMalloc).
 * With kernels sampled (GPUTRACE_KERNELS_*: records only in spans), the
 * kernels of two spans are no one sequence: the gap between them holds
 * steps nobody saw, and a pattern matched across it would make one
 * "iteration" of many. The pattern is looked for in each span alone, and
 * the iterations come from the span where it repeats most, the last one
 * ending with its span (not with the trace). */
int gt_iter_from_kernel_pattern(struct gt_trace *t, struct gt_iterations *out)
{
    struct gt_kernel *k;
    size_t nk;
    int code = gt_trace_kernels(t, &k, &nk);
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
    const struct gt_kernel_sampling *ks = &t->kernels;
    bool sampled = ks->on && ks->full_until_ns >= 0 && ks->nspans; /* some kernels were left out */
    size_t nseg = sampled ? ks->nspans : 1;
    size_t best_lo = 0, best_hi = 0, best_a = 0, best_p = 0, best_reps = 0;
    int64_t best_end = -1;
    for (size_t s = 0, lo = 0; s < nseg; s++) {
        size_t hi = nk;
        int64_t end = -1; /* the trace's end */
        if (sampled) {
            /* a kernel launched just before a pause may start on the GPU a little after it */
            int64_t from = ks->spans[s][0] - 1000000, to = ks->spans[s][1] + 50000000;
            while (lo < nk && k[lo].start < from)
                lo++;
            for (hi = lo; hi < nk && k[hi].start <= to; hi++)
                ;
            end = ks->spans[s][1];
        }
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
    size_t shift = p && !cut ? phase_of_first_step(seq, first, base, p) : 0;
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
        struct gt_iteration *it = gt_iter_push(out, &cap);
        it->index = (int64_t)out->n - 1;
        it->batch_size = -1;
        it->start = k[b].start;
        it->first_ev = gt_iter_bound(t, it->start, 0);
        if (b + p < best_hi) {
            it->end = k[b + p].start;
            it->end_ev = gt_iter_bound(t, it->end, 0);
            it->closed = 1;
        } else if (best_end >= 0) { /* the span ended: what came after it was not seen */
            it->end = best_end > it->start ? best_end : it->start;
            it->end_ev = gt_iter_bound(t, it->end, 0);
        } else {
            it->end = gt_iter_trace_end(t, NULL, 0);
            it->end_ev = t->nev;
        }
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
    }
    gt_interner_free(&in);
    free(seq);
    free(k);
    return GT_EXIT_OK;
}
