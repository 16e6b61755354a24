/* periods.h - repeating patterns in a sequence of symbols, for automatic
 * iterations (iterations_auto.c): symbols interned from (api, size, site)
 * or kernel names, the periods a stretch of them repeats with, and the
 * first step before a pattern that holds most of it. */
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
/* Up to max steps before the first repetition, each against the pattern at
 * first (see periods.c); their starts ascending. Returns how many. */
size_t gt_leading_steps(const uint32_t *s, size_t floor, size_t first, size_t p, size_t max, size_t *starts,
                        size_t *held);

/* ", and before them a step of N <what> that holds ..." into buf. */
void gt_say_first_step(char *buf, size_t len, size_t first_len, size_t held, size_t p, const char *what);

#endif
