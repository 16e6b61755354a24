/* Unit tests of the map from time-stamp-counter readings to CLOCK_MONOTONIC
 * nanoseconds (shim/clock_map.h), on a synthetic clock whose rate drifts as
 * NTP slews CLOCK_MONOTONIC (tens of parts per million), with pairs read a
 * few nanoseconds apart as the writer reads them:
 * - a reading between two pairs maps within a pair's jitter of the truth;
 * - the map never decreases, and a reading mapped after more pairs were
 *   added (a later writer batch) maps to the same nanoseconds as before;
 * - past the newest pair and before the oldest kept one (the ring full), the
 *   long baseline extends it, continuously, within the drift over the age;
 * - one pair alone, and pairs that do not advance, are handled;
 * - the choice of clock: unset takes the counter only where the kernel's
 *   clocksource is tsc, "tsc" on any invariant counter, "monotonic" never,
 *   and a counter that is not invariant never. */
#include <stdlib.h>

#include "clock_map.h"
#include "tap.h"

/* The synthetic clock: 2.5 GHz counter; nanoseconds run at a rate that
 * wanders by up to 50 ppm around 0.4 ns a tick */
static uint64_t truth(uint64_t tsc)
{
    double t = (double)tsc;
    return (uint64_t)(t * 0.4 + 1e-5 * 0.4 * 2.5e9 * __builtin_sin(t / 2.5e9 / 7.0)) + 1000000000ull;
}

static struct gt_clock_pair pair_at(uint64_t tsc, int jitter)
{
    return (struct gt_clock_pair){tsc, truth(tsc) + (uint64_t)jitter};
}

static uint64_t absdiff(uint64_t a, uint64_t b) { return a > b ? a - b : b - a; }

static void test_between_two_pairs_within_their_jitter(void)
{
    static struct gt_clock_map m;
    gt_clock_map_reset(&m, pair_at(1000, 0));
    uint64_t tsc = 1000;
    srand(7);
    for (int k = 0; k < 2000; k++) {
        uint64_t next = tsc + 2500 + (uint64_t)(rand() % 2500000);   /* a pair every 1 us to 1 ms */
        CHECK(gt_clock_map_add(&m, pair_at(next, rand() % 20)));
        for (int j = 0; j < 8; j++) {
            uint64_t t = tsc + (uint64_t)rand() % (next - tsc);
            uint64_t got = gt_clock_map_ns(&m, t), want = truth(t);
            CHECKF(absdiff(got, want) <= 25, "reading %llu: %llu ns, truth %llu", (unsigned long long)t,
                   (unsigned long long)got, (unsigned long long)want);
        }
        tsc = next;
    }
}

static void test_never_decreases_and_later_batches_agree(void)
{
    static struct gt_clock_map m;
    gt_clock_map_reset(&m, pair_at(5000, 0));
    uint64_t tsc = 5000, prev_t = 0, prev_ns = 0;
    uint64_t kept_t[64], kept_ns[64];
    int nkept = 0;
    srand(11);
    for (int batch = 0; batch < 6000; batch++) {   /* more batches than the ring keeps */
        uint64_t next = tsc + 100 + (uint64_t)(rand() % 50000);
        CHECK(gt_clock_map_add(&m, pair_at(next, rand() % 30)));
        for (uint64_t t = tsc; t < next; t += 1 + (next - tsc) / 5) {   /* readings of this batch, in order */
            uint64_t ns = gt_clock_map_ns(&m, t);
            if (prev_t && t >= prev_t)
                CHECKF(ns >= prev_ns, "reading %llu maps to %llu, before reading %llu's %llu",
                       (unsigned long long)t, (unsigned long long)ns, (unsigned long long)prev_t,
                       (unsigned long long)prev_ns);
            prev_t = t;
            prev_ns = ns;
            if (batch >= 3000 && batch % 47 == 0 && nkept < 64) {
                kept_t[nkept] = t;
                kept_ns[nkept++] = ns;
            }
        }
        tsc = next;
    }
    /* readings of the last half second or so map as they did when first mapped */
    int same = 0, asked = 0;
    for (int k = 0; k < nkept; k++) {
        if (kept_t[k] < gt_clock_map_at(&m, 0)->tsc)
            continue;   /* older than the ring: extended instead (next test) */
        asked++;
        same += gt_clock_map_ns(&m, kept_t[k]) == kept_ns[k];
    }
    CHECKF(asked > 0 && same == asked, "%d of %d readings map as they did", same, asked);
}

static void test_outside_the_kept_pairs_follows_the_long_baseline(void)
{
    static struct gt_clock_map m;
    gt_clock_map_reset(&m, pair_at(0, 0));
    uint64_t tsc = 0;
    for (int k = 0; k < GT_CLOCK_PAIRS + 500; k++) {   /* the ring overflows: the oldest pairs go */
        tsc += 250000;   /* 100 us */
        CHECK(gt_clock_map_add(&m, pair_at(tsc, k % 7)));
    }
    const struct gt_clock_pair *oldest = gt_clock_map_at(&m, 0), *newest = gt_clock_map_at(&m, m.n - 1);
    CHECK(m.n == GT_CLOCK_PAIRS);
    CHECK(oldest->tsc == 500ull * 250000 + 250000);
    /* continuous at both ends */
    CHECK(gt_clock_map_ns(&m, oldest->tsc) == oldest->ns);
    CHECK(absdiff(gt_clock_map_ns(&m, oldest->tsc - 1), oldest->ns) <= 1);
    CHECK(gt_clock_map_ns(&m, newest->tsc) == newest->ns);
    CHECK(absdiff(gt_clock_map_ns(&m, newest->tsc + 1), newest->ns) <= 1);
    /* 10 ms either side: within the drift over that age (50 ppm of 10 ms = 500 ns) and the pairs' jitter */
    for (uint64_t age = 2500; age <= 25000000; age *= 10) {
        uint64_t before = oldest->tsc - age, after = newest->tsc + age;
        CHECKF(absdiff(gt_clock_map_ns(&m, before), truth(before)) <= 10 + age / 50000,
               "%llu ticks before the oldest pair: %llu ns, truth %llu", (unsigned long long)age,
               (unsigned long long)gt_clock_map_ns(&m, before), (unsigned long long)truth(before));
        CHECKF(absdiff(gt_clock_map_ns(&m, after), truth(after)) <= 10 + age / 50000,
               "%llu ticks after the newest pair: %llu ns, truth %llu", (unsigned long long)age,
               (unsigned long long)gt_clock_map_ns(&m, after), (unsigned long long)truth(after));
        CHECK(gt_clock_map_ns(&m, before) < oldest->ns && gt_clock_map_ns(&m, after) > newest->ns);
    }
    CHECK(gt_clock_map_ns(&m, 0) <= gt_clock_map_ns(&m, 1));   /* far back: never below 0, never wraps */
}

static void test_one_pair_and_pairs_that_do_not_advance(void)
{
    static struct gt_clock_map m;
    gt_clock_map_reset(&m, (struct gt_clock_pair){1000, 5000});
    CHECK(gt_clock_map_ns(&m, 900) == 5000 && gt_clock_map_ns(&m, 2000) == 5000);   /* no slope yet */
    CHECK(!gt_clock_map_add(&m, (struct gt_clock_pair){1000, 6000}));   /* same reading */
    CHECK(!gt_clock_map_add(&m, (struct gt_clock_pair){2000, 5000}));   /* the clock did not move */
    CHECK(!gt_clock_map_add(&m, (struct gt_clock_pair){900, 4000}));    /* older */
    CHECK(m.n == 1);
    CHECK(gt_clock_map_add(&m, (struct gt_clock_pair){3000, 5800}));
    CHECK(gt_clock_map_ns(&m, 2000) == 5400);
    CHECK(gt_clock_map_ns(&m, 4000) == 6200);
    CHECK(gt_clock_map_ns(&m, 500) == 4800);
    CHECK(gt_clock_map_ns(&m, 0) == 4600);
}

static void test_the_choice_of_clock(void)
{
    /* unset: the kernel's choice decides */
    CHECK(gt_clock_choose("", "tsc", true) == GT_CLOCK_TSC);
    CHECK(gt_clock_choose("", "kvm-clock", true) == GT_CLOCK_MONOTONIC);
    CHECK(gt_clock_choose("", "hpet", true) == GT_CLOCK_MONOTONIC);
    CHECK(gt_clock_choose("", "unknown", true) == GT_CLOCK_MONOTONIC);   /* sysfs unreadable */
    CHECK(gt_clock_choose("", "tsc2", true) == GT_CLOCK_MONOTONIC);
    CHECK(gt_clock_choose("", "tsc", false) == GT_CLOCK_MONOTONIC);       /* not invariant: quietly not taken */
    /* asked for: any invariant counter; a counter that is not invariant is refused, and said */
    CHECK(gt_clock_choose("tsc", "kvm-clock", true) == GT_CLOCK_TSC);
    CHECK(gt_clock_choose("tsc", "tsc", true) == GT_CLOCK_TSC);
    CHECK(gt_clock_choose("tsc", "tsc", false) == GT_CLOCK_TSC_NOT_INVARIANT);
    /* monotonic: never the counter */
    CHECK(gt_clock_choose("monotonic", "tsc", true) == GT_CLOCK_MONOTONIC);
    CHECK(gt_clock_choose("monotonic", "kvm-clock", false) == GT_CLOCK_MONOTONIC);
}

int main(void)
{
    TAP_RUN(test_between_two_pairs_within_their_jitter);
    TAP_RUN(test_never_decreases_and_later_batches_agree);
    TAP_RUN(test_outside_the_kept_pairs_follows_the_long_baseline);
    TAP_RUN(test_one_pair_and_pairs_that_do_not_advance);
    TAP_RUN(test_the_choice_of_clock);
    return tap_done();
}
