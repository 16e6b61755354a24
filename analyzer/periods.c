/* periods.c - repeating patterns in a sequence of symbols (periods.h): the
 * periods a stretch repeats with, found from every small period and the
 * gaps between the rarest symbols, and the first step before a pattern. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "periods.h"

static uint64_t key_hash(const struct gt_key3 *k)
{
    uint64_t h = (uint64_t)k->size * 0x9e3779b97f4a7c15ull ^ ((uint64_t)(uint32_t)k->site << 8 | k->api) * 0xc2b2ae3d27d4eb4full;
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    return h ^ (h >> 32);
}

uint32_t gt_intern(struct gt_interner *in, const struct gt_key3 *k)
{
    if ((in->nkeys + 1) * 2 > in->cap) {
        size_t ncap = in->cap ? in->cap * 2 : 1024;
        uint32_t *ns = gt_xcalloc(ncap, sizeof *ns);
        for (size_t i = 0; i < in->cap; i++)
            if (in->slots[i]) {
                size_t j = key_hash(&in->keys[in->slots[i] - 1]) & (ncap - 1);
                while (ns[j])
                    j = (j + 1) & (ncap - 1);
                ns[j] = in->slots[i];
            }
        free(in->slots);
        in->slots = ns;
        in->cap = ncap;
    }
    size_t j = key_hash(k) & (in->cap - 1);
    for (; in->slots[j]; j = (j + 1) & (in->cap - 1)) {
        const struct gt_key3 *o = &in->keys[in->slots[j] - 1];
        if (o->size == k->size && o->site == k->site && o->api == k->api)
            return in->slots[j] - 1;
    }
    if (in->nkeys == in->kcap) {
        in->kcap = in->kcap ? in->kcap * 2 : 1024;
        in->keys = gt_xrealloc(in->keys, in->kcap * sizeof *in->keys);
    }
    in->keys[in->nkeys] = *k;
    in->slots[j] = (uint32_t)++in->nkeys;
    return (uint32_t)(in->nkeys - 1);
}

void gt_interner_free(struct gt_interner *in)
{
    free(in->keys);
    free(in->slots);
    memset(in, 0, sizeof *in);
}

/* Longest run of i with s[i] == s[i+p]; its start in *start. */
static size_t match_run(const uint32_t *s, size_t n, size_t p, size_t *start)
{
    size_t best = 0, run = 0;
    *start = 0;
    for (size_t i = 0; i + p < n; i++) {
        if (s[i] == s[i + p]) {
            if (++run > best) {
                best = run;
                *start = i + 1 - run;
            }
        } else {
            run = 0;
        }
    }
    return best;
}

static void add_cand(size_t *cand, size_t *nc, size_t max, size_t p)
{
    for (size_t i = 0; i < *nc; i++)
        if (cand[i] == p)
            return;
    if (*nc < max)
        cand[(*nc)++] = p;
}


static int period_cmp(const void *x, const void *y)
{
    const struct gt_period *u = x, *v = y;
    if (u->cover != v->cover)
        return u->cover > v->cover ? -1 : 1;
    return (u->p > v->p) - (u->p < v->p);
}

/* Periods p such that a stretch s[a .. a+cover) is p-periodic with at least
 * 3 repetitions (it may follow a warm-up prefix and precede a tail), best
 * first: largest cover, then smallest p. Candidates: every p up to 64, and
 * the gaps between occurrences of the rarest repeated symbols (a symbol seen
 * once per iteration recurs exactly every p). Returns how many (<= max). */
size_t gt_find_periods(const uint32_t *s, size_t n, size_t nsym, struct gt_period *out, size_t max)
{
    if (n < 6)
        return 0;
    enum { MAXC = 512 };
    size_t cand[MAXC], nc = 0;
    for (size_t p = 1; p <= 64 && p * 3 <= n; p++)
        add_cand(cand, &nc, MAXC, p);
    uint32_t *count = gt_xcalloc(nsym, sizeof *count);
    for (size_t i = 0; i < n; i++)
        count[s[i]]++;
    /* the 16 rarest symbols that occur at least 3 times */
    uint32_t rare[16];
    size_t nrare = 0;
    for (uint32_t id = 0; id < nsym; id++) {
        if (count[id] < 3)
            continue;
        if (nrare < 16) {
            rare[nrare++] = id;
            continue;
        }
        size_t worst = 0;
        for (size_t k = 1; k < nrare; k++)
            if (count[rare[k]] > count[rare[worst]])
                worst = k;
        if (count[id] < count[rare[worst]])
            rare[worst] = id;
    }
    for (size_t k = 0; k < nrare; k++) {
        size_t *pos = gt_xmalloc(count[rare[k]] * sizeof *pos), np = 0;
        for (size_t i = 0; i < n; i++)
            if (s[i] == rare[k])
                pos[np++] = i;
        /* gaps spanning 1..4 occurrences, at a few places through the run */
        for (size_t q = 0; q < 8 && np > 1; q++) {
            size_t j = q * (np - 1) / 8;
            for (size_t d = 1; d <= 4 && j + d < np; d++)
                if ((pos[j + d] - pos[j]) * 3 <= n)
                    add_cand(cand, &nc, MAXC, pos[j + d] - pos[j]);
        }
        free(pos);
    }
    free(count);
    struct gt_period all[MAXC];
    size_t nall = 0;
    for (size_t k = 0; k < nc; k++) {
        size_t a, run = match_run(s, n, cand[k], &a);
        if (run >= 2 * cand[k])
            all[nall++] = (struct gt_period){cand[k], a, run + cand[k]};
    }
    gt_qsort(all, nall, sizeof *all, period_cmp);
    if (nall > max)
        nall = max;
    memcpy(out, all, nall * sizeof *out);
    return nall;
}

/* The kernel pattern's single best period, or 0. */
size_t gt_find_period(const uint32_t *s, size_t n, size_t nsym, size_t *a_out, size_t *cover_out)
{
    struct gt_period best;
    if (!gt_find_periods(s, n, nsym, &best, 1))
        return 0;
    *a_out = best.a;
    *cover_out = best.cover;
    return best.p;
}

/* The first step often does more than the rest, or a little else: the
 * optimizer makes its state there, libraries choose workspaces. The exact
 * pattern then begins at the second step (on an H200, BERT's first step made
 * 1,459 allocations: its pattern of 1,048 and 411 more; a ResNet-50's first
 * step ran other AdamW kernels for 26 of its 744, and the kernel pattern
 * repeated 29 times for 30 steps). When at least 9/10 of the pattern occurs
 * in order among the (at most 2p) symbols just before its first repetition
 * at `first`, that stretch is a step too: a forward pass alone, or set-up
 * code, holds far less of a training step. Of the stretches that hold
 * enough, the one with the most matched less unmatched symbols: reaching
 * back into set-up code for one more symbol of the pattern costs more than
 * it gains. Returns the step's start (how much of the pattern it holds in
 * *held), or `first` when there is none (not enough, nothing above
 * `floor`, or a pattern under 16, too short for a match to mean anything,
 * or over 16384, too long for the quadratic match: half a second). */
size_t gt_first_step_start(const uint32_t *s, size_t floor, size_t first, size_t p, size_t *held)
{
    return gt_step_before(s, floor, first, s + first, p, held);
}

/* The stretch of w symbols read from s[at] (dir -1: backwards, s[at-1],
 * s[at-2], ...; dir +1: forwards, s[at], s[at+1], ...) that holds at least
 * need of pat[0..p) in order, read the same way (backwards from its end, or
 * forwards from its start), with the most matched less unmatched symbols:
 * its length, how much it holds in *held; 0 when none. The longest common
 * subsequence, row by row over the pattern: row[k] is how much of the
 * pattern the first k symbols of the stretch hold. */
static size_t best_stretch(const uint32_t *s, size_t at, int dir, size_t w, const uint32_t *pat, size_t p,
                           size_t need, size_t *held)
{
    uint32_t *row = gt_xcalloc(w + 1, sizeof *row);
    size_t len = 0;
    for (size_t q = 0; q < p; q++) {
        uint32_t sym = dir < 0 ? pat[p - 1 - q] : pat[q], diag = 0, left = 0;
        for (size_t k = 1; k <= w; k++) {
            uint32_t up = row[k];
            row[k] = s[dir < 0 ? at - k : at + k - 1] == sym ? diag + 1 : up > left ? up : left;
            diag = up;
            left = row[k];
        }
        if (row[w] + (p - 1 - q) < need)
            goto done;   /* the rest of the pattern cannot bring it to need */
    }
    long best = 0;
    for (size_t k = need; k <= w; k++) {
        long score = 2 * (long)row[k] - (long)k;
        if (row[k] >= need && (!len || score > best)) {
            best = score;
            len = k;
            *held = row[k];
        }
    }
done:
    free(row);
    return len;
}

size_t gt_step_before(const uint32_t *s, size_t floor, size_t first, const uint32_t *pat, size_t p, size_t *held)
{
    *held = 0;
    if (p < 16 || p > 16384 || first <= floor)
        return first;
    size_t w = first - floor > 2 * p ? 2 * p : first - floor, need = (9 * p + 9) / 10;
    return w < need ? first : first - best_stretch(s, first, -1, w, pat, p, need, held);
}

/* The program's last step, after the pattern's last repetition ended at
 * `from`: its sizes may differ (a DataLoader's last batch is smaller, so
 * its activations are), so s here is a sequence by call site and API alone.
 * Its shape differs too, and libraries choose by shape: a conv net's last
 * batch of 19 on an H200 made 3 of a step's 32 allocations from other
 * stacks (cuDNN's algorithms) and 4 fewer. A stretch from `from` that
 * holds at least 3/4 of pat[0..p) in order is a step (a forward pass alone,
 * an evaluation after the loop, holds no backward pass: far less); of those
 * that do, the one with the most matched less unmatched symbols (what the
 * program does after its loop is no part of it). Returns
 * the step's end (how much of pat it holds in *held), or `from` when none
 * (bounds as gt_step_before's). */
size_t gt_step_after(const uint32_t *s, size_t n, size_t from, const uint32_t *pat, size_t p, size_t *held)
{
    *held = 0;
    if (p < 16 || p > 16384 || from >= n)
        return from;
    size_t w = n - from > 2 * p ? 2 * p : n - from, need = (3 * p + 3) / 4;
    return w < need ? from : from + best_stretch(s, from, +1, w, pat, p, need, held);
}

/* The steps before a pattern's first repetition at `first`, latest first:
 * a step found before it (gt_first_step_start), then one before that
 * against the same pattern, and so on, at most max (a job's first steps
 * may each differ: PyTorch Lightning's first made the momentum buffers and
 * its second was cut by the pattern's phase, 29 for 30 steps on an H200).
 * starts[] ends up in ascending order; *held the least any of them holds.
 * Returns how many. */
size_t gt_leading_steps(const uint32_t *s, size_t floor, size_t first, size_t p, size_t max, size_t *starts,
                        size_t *held)
{
    size_t n = 0, end = first;
    *held = p;
    while (n < max) {
        size_t h, at = gt_step_before(s, floor, end, s + first, p, &h);
        if (at >= end)
            break;
        starts[n++] = at;
        if (h < *held)
            *held = h;
        end = at;
    }
    for (size_t i = 0; i < n / 2; i++) {
        size_t x = starts[i];
        starts[i] = starts[n - 1 - i];
        starts[n - 1 - i] = x;
    }
    if (!n)
        *held = 0;
    return n;
}

/* ", and before them a step of N <what> that holds the pattern and M more"
 * or "... that holds H of its P in order" into buf. */
void gt_say_first_step(char *buf, size_t len, size_t first_len, size_t held, size_t p, const char *what)
{
    if (held == p)
        snprintf(buf, len, ", and before them a step of %zu %s that holds the pattern and %zu more", first_len, what,
                 first_len - p);
    else
        snprintf(buf, len, ", and before them a step of %zu %s that holds %zu of the pattern's %zu in order",
                 first_len, what, held, p);
}

/* Is gap g regular against median gap m? Steps differ by a few symbols (a
 * logging tensor, a workspace tried first): a quarter, plus two. */
static int regular_gap(size_t g, size_t m)
{
    return g * 4 >= m * 3 && g * 4 <= m * 5 + 8;
}

int gt_size_cmp(const void *x, const void *y)
{
    size_t a = *(const size_t *)x, b = *(const size_t *)y;
    return (a > b) - (a < b);
}

int gt_u32_cmp(const void *x, const void *y)
{
    uint32_t a = *(const uint32_t *)x, b = *(const uint32_t *)y;
    return (a > b) - (a < b);
}

size_t gt_kinds(const uint32_t *s, size_t n)
{
    uint32_t *c = gt_xmalloc((n ? n : 1) * sizeof *c);
    memcpy(c, s, n * sizeof *c);
    gt_qsort(c, n, sizeof *c, gt_u32_cmp);
    size_t kinds = 0;
    for (size_t i = 0; i < n; i++)
        kinds += !i || c[i] != c[i - 1];
    free(c);
    return kinds;
}

/* Does s[a .. b) hold at least 9/10 of the kinds of symbol s[b .. e) holds?
 * mark: nsym stamps, stamp: one not used before. */
static int holds_kinds(const uint32_t *s, size_t a, size_t b, size_t e, uint32_t *mark, uint32_t stamp)
{
    size_t kinds = 0, held = 0;
    for (size_t i = b; i < e; i++)
        if (mark[s[i]] != stamp) {
            mark[s[i]] = stamp;
            kinds++;
        }
    for (size_t i = a; i < b; i++)
        if (mark[s[i]] == stamp) {
            mark[s[i]] = stamp + 1;   /* counted once */
            held++;
        }
    return held * 10 >= kinds * 9;
}

size_t gt_find_anchor(const uint32_t *seq, size_t n, size_t nsym, const double *weight, size_t min_med, int wide,
                      size_t *out, size_t *med_out, uint32_t *sym_out)
{
    if (n < 6)
        return 0;
    /* positions of each symbol (CSR) */
    size_t *off = gt_xcalloc(nsym + 1, sizeof *off), *pos = gt_xmalloc(n * sizeof *pos);
    for (size_t i = 0; i < n; i++)
        off[seq[i] + 1]++;
    for (size_t k = 0; k < nsym; k++)
        off[k + 1] += off[k];
    size_t *fill = gt_xmalloc((nsym + 1) * sizeof *fill);
    memcpy(fill, off, (nsym + 1) * sizeof *fill);
    for (size_t i = 0; i < n; i++)
        pos[fill[seq[i]]++] = i;
    free(fill);
    size_t *gaps = gt_xmalloc(n * sizeof *gaps);
    uint32_t *mark = gt_xcalloc(nsym, sizeof *mark), stamp = 1;
    uint32_t best = 0;
    size_t best_count = 0, best_first = 0, best_med = 0, best_pos = 0;
    double best_weight = 0;
    for (uint32_t id = 0; id < nsym; id++) {
        const size_t *p = pos + off[id];
        size_t c = off[id + 1] - off[id];
        if (c < 3 || c < best_count)
            continue;
        for (size_t k = 0; k + 1 < c; k++)
            gaps[k] = p[k + 1] - p[k];
        gt_qsort(gaps, c - 1, sizeof *gaps, gt_size_cmp);
        size_t med = gaps[(c - 1) / 2];
        if (med < min_med)
            continue;
        size_t first = p[1] - p[0] < med && !regular_gap(p[1] - p[0], med);   /* before the loop */
        int ok = med > 0 && c - first >= 3;
        size_t longer = 0, last_longer = 0;   /* gaps a step's and some other work's long (see periods.h) */
        for (size_t k = first + 1; ok && k + 1 < c; k++) {
            size_t g = p[k + 1] - p[k];
            ok = regular_gap(g, med);
            if (!ok && g > med && g < (wide ? 4 : 2) * med && !(wide && longer && last_longer + 1 == k) &&
                ++longer * (wide ? 2 : 4) <= c - 1 - first) {
                ok = 1;
                last_longer = k;
            }
        }
        /* the first gap kept may be longer (a warm-up step: compilation, the
         * optimizer's state made), but then it holds a step: 9/10 of the kinds
         * the next one holds (a forward pass run once in set-up code, then
         * copies, is none, and the loop begins at the next occurrence) */
        size_t g0 = ok && first + 2 < c ? p[first + 1] - p[first] : 0;
        if (g0 > med && !regular_gap(g0, med)) {
            if (stamp > UINT32_MAX - 2) {
                memset(mark, 0, nsym * sizeof *mark);
                stamp = 1;
            }
            if (!holds_kinds(seq, p[first], p[first + 1], p[first + 2], mark, stamp))
                ok = c - ++first >= 3;
            stamp += 2;
        }
        /* a loop's anchor spans most of what follows its first occurrence: a
         * run of one symbol in set-up code recurs at regular gaps too (an
         * 8-byte allocation 48 times, 6 apart, in a ResNet-50's start-up) */
        if (!ok || (p[c - 1] + med - p[first]) * 2 < n - p[first])
            continue;
        double mean = 0;
        for (size_t k = first; weight && k < c; k++)
            mean += weight[p[k]] / (double)(c - first);
        int better = c - first > best_count ||
                     (c - first == best_count && (weight ? mean < best_weight : p[first] < best_pos));
        if (!best || better) {
            best = id + 1;
            best_count = c - first;
            best_first = first;
            best_med = med;
            best_weight = mean;
            best_pos = p[first];
        }
    }
    if (best) {
        memcpy(out, pos + off[best - 1] + best_first, best_count * sizeof *out);
        *med_out = best_med;
        *sym_out = best - 1;
    }
    free(mark);
    free(gaps);
    free(pos);
    free(off);
    return best ? best_count : 0;
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
size_t gt_phase_of_first_step(const uint32_t *s, size_t first, size_t base, size_t p)
{
    if (first >= base)
        return 0;
    size_t at = 0, seen = 0;
    for (size_t r = 0; r < p; r++)
        if (s[base + r] == s[first] && !seen++)
            at = r;
    return seen == 1 ? at : 0;
}

