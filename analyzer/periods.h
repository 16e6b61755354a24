/* periods.h - repeating patterns in a sequence of symbols, for automatic
 * iterations (iterations_auto.c, iterations_kernels.c): symbols interned
 * from (api, size, site) or kernel names, the periods a stretch of them
 * repeats with, the first step before a pattern that holds most of it, and
 * one symbol made once per step. */
#ifndef GT_PERIODS_H
#define GT_PERIODS_H

#include <stddef.h>
#include <stdint.h>

/* Interns (api, size, site) triples as small integers (kernel names: the
 * name's id as size). */
struct gt_key3 {
    int64_t size;
    int32_t site;
    uint32_t api;
};
struct gt_interner {
    struct gt_key3 *keys;
    size_t nkeys, kcap;
    uint32_t *slots;   /* key id + 1, 0 empty */
    size_t cap;
};

uint32_t gt_intern(struct gt_interner *in, const struct gt_key3 *k);
void gt_interner_free(struct gt_interner *in);

/* A periodic stretch: s[a .. a+cover) repeats with period p. */
struct gt_period {
    size_t p, a, cover;
};

/* Periods p such that a stretch s[a .. a+cover) is p-periodic with at least
 * 3 repetitions, best first (largest cover, then smallest p); how many
 * (<= max). */
size_t gt_find_periods(const uint32_t *s, size_t n, size_t nsym, struct gt_period *out, size_t max);

/* The single best period, or 0; its stretch in *a_out, *cover_out. */
size_t gt_find_period(const uint32_t *s, size_t n, size_t nsym, size_t *a_out, size_t *cover_out);

/* Where a step before the pattern s[first .. first+p) begins that holds at
 * least 9/10 of it in order (how much in *held), or first (none). */
size_t gt_first_step_start(const uint32_t *s, size_t floor, size_t first, size_t p, size_t *held);
/* The same against the pattern pat[0..p), the stretch ending at first. */
size_t gt_step_before(const uint32_t *s, size_t floor, size_t first, const uint32_t *pat, size_t p, size_t *held);
/* The last step after the pattern's last repetition ended at `from`, by
 * symbols that set sizes aside: its end, or from (none; see periods.c). */
size_t gt_step_after(const uint32_t *s, size_t n, size_t from, const uint32_t *pat, size_t p, size_t *held);
/* Up to max steps before the first repetition, each against the pattern at
 * first (see periods.c); their starts ascending. Returns how many. */
size_t gt_leading_steps(const uint32_t *s, size_t floor, size_t first, size_t p, size_t max, size_t *starts,
                        size_t *held);

/* One symbol the loop makes once per step: the exact pattern breaks wherever
 * a step differs from the others (a periodic logging tensor, a larger
 * workspace tried every few steps: a ResNet-50 on an H100 gave 4 iterations
 * for 30 steps; a GPT-2 trained on a new sequence length every step, whose
 * GEMM kernels follow the shape), but a symbol made once in every step still
 * recurs at regular gaps. Of the symbols whose gaps are all regular (within a
 * quarter, plus two, of their median; the first may be longer: a warm-up
 * step, when it holds 9/10 of the kinds of symbol the next one holds; an
 * occurrence before the loop, too short a gap or no step, is dropped; up to a
 * quarter may be longer by less than a step: other work between two steps,
 * as PyTorch Lightning's validation batches every 10 steps, 426 allocations a
 * step and 590 with them; and it spans half of what follows its first
 * occurrence, unlike a run in set-up code), the most frequent; of equals, the one of least
 * mean weight at its occurrences (weight: live memory, lowest at a step's
 * start), or without weights the one that occurs first (a step's first
 * kernel); only symbols whose median gap is at least min_med. wide: the
 * longer gaps may be up to four times the median (other work of up to three
 * steps: an evaluation; longer, and a model's layers with its forward pass
 * between them would pass too, a review found) and up to half of them, none
 * next to another (a run of them is another loop: an evaluation after
 * training); for callers that tell steps from layers otherwise. Its
 * positions into out
 * (room for n), its median gap into *med_out, the symbol into *sym_out;
 * returns how many, or 0 (none). */
size_t gt_find_anchor(const uint32_t *seq, size_t n, size_t nsym, const double *weight, size_t min_med, int wide,
                      size_t *out, size_t *med_out, uint32_t *sym_out);

/* qsort comparators of size_t and uint32_t, and how many distinct symbols
 * s[0..n) holds. */
int gt_size_cmp(const void *x, const void *y);
int gt_u32_cmp(const void *x, const void *y);
size_t gt_kinds(const uint32_t *s, size_t n);

/* Where a step begins inside the pattern s[base .. base+p), from the first
 * step found at first (see periods.c); 0 when nothing tells. */
size_t gt_phase_of_first_step(const uint32_t *s, size_t first, size_t base, size_t p);

/* ", and before them a step of N <what> that holds ..." into buf. */
void gt_say_first_step(char *buf, size_t len, size_t first_len, size_t held, size_t p, const char *what);

#endif
