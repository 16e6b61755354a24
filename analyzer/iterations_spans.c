/* iterations_spans.c - the spans CUPTI's kernel records were taken in, and
 * the steps seen in the spans other than the one the iterations come from.
 * With kernels sampled (GPUTRACE_KERNELS_*: every kernel for the first
 * seconds of GPU work, then 1 s at a random moment of every 20), a job that
 * allocates nothing per step (PyTorch's caching allocator once warm, JAX
 * preallocating) has iterations only in one span; growth over a longer run
 * would be read from its first seconds alone (a stand-in job whose cache
 * grew 220 MiB over 60 s read "stable"). The later spans' steps carry no
 * step number (nobody saw the steps between spans), so they stay apart
 * from the iterations (growth.c places them). */
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "iterations.h"

static bool sampled(const struct gt_trace *t)
{
    const struct gt_kernel_sampling *ks = &t->kernels;
    return ks->on && ks->full_until_ns >= 0 && ks->nspans;
}

size_t gt_kernel_span_count(const struct gt_trace *t)
{
    return sampled(t) ? t->kernels.nspans : 1;
}

void gt_kernel_span(const struct gt_trace *t, const struct gt_kernel *k, size_t nk, size_t s, size_t *lo, size_t *hi,
                    int64_t *end)
{
    const struct gt_kernel_sampling *ks = &t->kernels;
    *hi = nk;
    *end = -1;
    if (!sampled(t))
        return;
    /* a kernel launched just before a pause may start on the GPU a little after it */
    int64_t from = ks->spans[s][0] - 1000000, to = ks->spans[s][1] + 50000000;
    while (*lo < nk && k[*lo].start < from)
        (*lo)++;
    for (*hi = *lo; *hi < nk && k[*hi].start <= to; (*hi)++)
        ;
    *end = ks->spans[s][1];
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

/* the first kernel starting at or after x */
static size_t kernel_at(const struct gt_kernel *k, size_t nk, int64_t x)
{
    size_t lo = 0, hi = nk;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (k[mid].start < x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int mark_at(const uint32_t *seq, size_t i, const uint32_t *mark, size_t len)
{
    return seq[i] == mark[0] && !memcmp(seq + i, mark, len * sizeof *mark);
}

#define MAX_MARK 4096

void gt_iter_steps_in_other_spans(struct gt_trace *t, const struct gt_kernel *k, const uint32_t *seq, size_t nk,
                                  struct gt_iterations *out)
{
    size_t n = out->n;
    if (!sampled(t) || t->kernels.nspans < 2 || n < 4)
        return;
    /* the kernel each iteration begins with (the first may stand apart: left out) */
    size_t *at = gt_xmalloc(n * sizeof *at), shortest = SIZE_MAX, longest = 0;
    int64_t *dur = gt_xmalloc(n * sizeof *dur);
    for (size_t i = 0; i < n; i++) {
        at[i] = kernel_at(k, nk, out->it[i].start);
        if (at[i] >= nk || k[at[i]].start != out->it[i].start)
            goto done;   /* not iterations begun by kernels */
    }
    for (size_t i = 1; i + 1 < n; i++) {
        size_t len = at[i + 1] - at[i];
        shortest = len < shortest ? len : shortest;
        longest = len > longest ? len : longest;
        dur[i - 1] = out->it[i + 1].start - out->it[i].start;
    }
    qsort(dur, n - 2, sizeof *dur, cmp_i64);
    int64_t step_ns = dur[(n - 2) / 2], slowest = dur[n - 3];
    /* the mark: the longest run of kernels every step (but the first) begins with */
    size_t m = 0;
    while (m < shortest && m < MAX_MARK) {
        size_t i = 2;
        while (i + 1 < n && seq[at[i] + m] == seq[at[1] + m])
            i++;
        if (i + 1 < n)
            break;
        m++;
    }
    if (!m || step_ns <= 0)
        goto done;
    const uint32_t *mark = seq + at[1];
    /* ... and nowhere else inside the steps: else a later span's steps could not be told */
    size_t found = 0;
    for (size_t i = at[1]; i < at[n - 1] && i + m <= nk && found < n; i++)
        found += (size_t)mark_at(seq, i, mark, m);
    if (found != n - 2)
        goto done;
    size_t cap = 0, lo = 0, hi;
    int64_t end;
    for (size_t s = 0; s < t->kernels.nspans; s++) {
        gt_kernel_span(t, k, nk, s, &lo, &hi, &end);
        if (at[1] >= lo && at[1] < hi) {   /* the iterations' own */
            lo = hi;
            continue;
        }
        size_t prev = SIZE_MAX;
        for (size_t i = lo; i + m <= hi; i++) {
            if (!mark_at(seq, i, mark, m))
                continue;
            /* a step of the kernels and about the time the iterations' steps took */
            size_t g = prev == SIZE_MAX ? 0 : i - prev;
            if (g && g + shortest / 10 >= shortest && g <= longest + longest / 10 &&
                k[i].start - k[prev].start <= 2 * slowest) {
                if (out->nlater == cap) {
                    cap = cap ? 2 * cap : 64;
                    out->later = gt_xrealloc(out->later, cap * sizeof *out->later);
                }
                struct gt_iteration *it = &out->later[out->nlater++];
                memset(it, 0, sizeof *it);
                it->index = (int64_t)s;   /* the span it was seen in */
                it->batch_size = -1;
                it->start = k[prev].start;
                it->end = k[i].start;
                it->first_ev = gt_iter_bound(t, it->start, 0);
                it->end_ev = gt_iter_bound(t, it->end, 0);
                it->closed = 1;
            }
            prev = i;
            i += m - 1;
        }
        lo = hi;
    }
    if (out->nlater)
        out->step_ns = step_ns;
done:
    free(at);
    free(dur);
}
