/* Unit tests of automatic iteration detection from the allocation pattern
 * (analyzer/iterations_auto.c) on synthetic sequences: a clean period after
 * a warm-up, a trace that starts or stops inside a step, a period interrupted
 * by noise and surrounded by unrelated allocations, no period at all, too
 * few repetitions, and the documented case that is not a loop: identical
 * allocations that are all kept (a model's layers, or a leak per step). */

#include "iterations.h"
#include "synth_trace.h"
#include "tap.h"

#define MIB (1 << 20)

struct loop {
    struct synth s;
    uint64_t next_addr;
    size_t *starts;   /* event index of each iteration's first allocation */
    size_t nstarts;
};

static void loop_init(struct loop *l)
{
    synth_init(&l->s);
    l->next_addr = 0x7f0000000000ull;
    l->starts = calloc(4096, sizeof *l->starts);
    l->nstarts = 0;
}

static uint64_t addr(struct loop *l)
{
    l->next_addr += 0x100000;
    return l->next_addr;
}

static size_t alloc(struct loop *l, int64_t size, int32_t site, uint64_t *ptr)
{
    *ptr = addr(l);
    return synth_alloc(&l->s, GT_API_cudaMalloc, *ptr, size, site);
}

/* One training step: activations A and B, A freed, scratch C, then B and C
 * freed: 3 allocations, all released within the step. extra_site >= 0 adds
 * one more allocation (freed at once) in the middle: noise. */
static void step(struct loop *l, int32_t extra_site)
{
    uint64_t a, b, c, x;
    l->starts[l->nstarts++] = alloc(l, 4 * MIB, 1, &a);
    alloc(l, 2 * MIB, 2, &b);
    if (extra_site >= 0) {
        alloc(l, 3 * MIB, extra_site, &x);
        synth_free(&l->s, GT_API_cudaFree, x, 3 * MIB);
    }
    synth_free(&l->s, GT_API_cudaFree, a, 4 * MIB);
    alloc(l, 1 * MIB, 3, &c);
    synth_free(&l->s, GT_API_cudaFree, b, 2 * MIB);
    synth_free(&l->s, GT_API_cudaFree, c, 1 * MIB);
}

/* n allocations of distinct sizes and sites, each kept or freed at random */
static void unrelated(struct loop *l, int n, int32_t site0, unsigned *seed)
{
    for (int i = 0; i < n; i++) {
        *seed = *seed * 1103515245u + 12345u;
        uint64_t p;
        alloc(l, 4096 + (int64_t)(*seed >> 8) % 100000, site0 + i, &p);
        if ((*seed >> 4) % 2)
            synth_free(&l->s, GT_API_cudaFree, p, 1);
    }
}

static struct gt_iterations detect(struct loop *l)
{
    struct gt_pairs p;
    gt_pair_events(&l->s.t, &p);
    struct gt_sel sel = {GT_MASK(GT_MEM_DEVICE), GT_ANY_DEVICE};
    struct gt_iterations it;
    memset(&it, 0, sizeof it);
    CHECK_EQ_INT(gt_iter_from_alloc_pattern(&l->s.t, &p, &sel, &it), GT_EXIT_OK);
    gt_pairs_free(&p);
    return it;
}

static void loop_done(struct loop *l, struct gt_iterations *it)
{
    gt_iterations_free(it);
    free(l->starts);
    synth_done(&l->s);
}

/* The iterations are exactly the steps starts[first .. first+n): each one
 * from its first allocation to the next step's, contiguous, indexed 0..;
 * the last ends at event last_end (the next allocation after the loop), or
 * with last_end 0, stays open to the end of the trace. */
static void check_steps(struct loop *l, const struct gt_iterations *it, size_t first, size_t n, size_t last_end)
{
    CHECK_EQ_INT(it->source, GT_ITER_AUTO);
    CHECK_EQ_INT(it->n, n);
    for (size_t k = 0; k < it->n && k < n; k++) {
        const struct gt_iteration *x = &it->it[k];
        CHECKF(x->first_ev == l->starts[first + k], "iteration %zu starts at event %zu, the step at %zu", k,
               x->first_ev, l->starts[first + k]);
        CHECK_EQ_INT(x->index, k);
        CHECK_EQ_INT(x->batch_size, -1);
        CHECK_EQ_INT(x->start, l->s.t.ev[x->first_ev].t);
        if (k + 1 < it->n) {
            CHECK_EQ_INT(x->end_ev, it->it[k + 1].first_ev);
            CHECK_EQ_INT(x->end, it->it[k + 1].start);
            CHECK(x->closed);
        }
    }
    if (it->n && it->n == n) {
        const struct gt_iteration *last = &it->it[it->n - 1];
        CHECK_EQ_INT(last->end_ev, last_end ? last_end : l->s.t.nev);
        CHECK_EQ_INT(last->closed, last_end != 0);
    }
}

static void test_clean_period_after_a_warm_up(void)
{
    struct loop l;
    loop_init(&l);
    uint64_t w;
    alloc(&l, 64 * MIB, 0, &w); /* weights and optimizer state, kept */
    alloc(&l, 32 * MIB, 0, &w);
    for (int i = 0; i < 10; i++)
        step(&l, -1);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 10, 0);
    CHECKF(strstr(it.how, "pattern of 3 allocations repeats 10 times (2 allocations before it, 0 after)"),
           "how: %s", it.how);
    loop_done(&l, &it);
}

/* The trace begins inside a step (its first allocations are the end of one):
 * iterations begin where live memory is lowest, at the step's start. */
static void test_iterations_begin_where_live_memory_is_lowest(void)
{
    struct loop l;
    loop_init(&l);
    uint64_t b, c;
    alloc(&l, 2 * MIB, 2, &b);
    alloc(&l, 1 * MIB, 3, &c);
    synth_free(&l.s, GT_API_cudaFree, b, 2 * MIB);
    synth_free(&l.s, GT_API_cudaFree, c, 1 * MIB);
    for (int i = 0; i < 12; i++)
        step(&l, -1);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 12, 0);
    CHECKF(strstr(it.how, "(2 allocations before it, 0 after)"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* Cut inside a step at both ends (the trace starts after a step's first
 * allocation and stops after the next one's): only whole steps count. */
static void test_trace_cut_inside_steps_at_both_ends(void)
{
    struct loop l;
    loop_init(&l);
    uint64_t b, c, a;
    alloc(&l, 2 * MIB, 2, &b);
    alloc(&l, 1 * MIB, 3, &c);
    synth_free(&l.s, GT_API_cudaFree, b, 2 * MIB);
    synth_free(&l.s, GT_API_cudaFree, c, 1 * MIB);
    for (int i = 0; i < 9; i++)
        step(&l, -1);
    size_t cut = alloc(&l, 4 * MIB, 1, &a);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 9, cut);
    CHECKF(strstr(it.how, "repeats 9 times (2 allocations before it, 1 after)"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* One step with an extra allocation (a checkpoint) breaks the exact
 * repetition (steps 10..29 repeat cleanly), but the step's first allocation
 * still recurs once per step: every step is found, step 9 with its extra. */
static void test_period_with_noise_in_one_step(void)
{
    struct loop l;
    loop_init(&l);
    for (int i = 0; i < 30; i++)
        step(&l, i == 9 ? 9 : -1);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 30, 0);
    CHECKF(strstr(it.how, "recurs once per step, 30 times (0 allocations before it; an exact repeating pattern spans only"
                          " 60 of the 91 allocations"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* Steps that differ every few steps (a logging tensor every 7th, a larger
 * workspace tried every 5th, as a real training job's do) leave no clean
 * stretch longer than 4 steps; the steps are still counted exactly. */
static void test_steps_that_differ_periodically_are_all_found(void)
{
    struct loop l;
    loop_init(&l);
    for (int i = 0; i < 30; i++)
        step(&l, i % 7 == 6 ? 40 : i % 5 == 0 ? 41 : -1);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 30, 0);
    loop_done(&l, &it);
}

/* Unrelated allocations before (loading) and after (an evaluation pass) do
 * not hide the loop and are counted as outside it. */
static void test_period_between_unrelated_allocations(void)
{
    struct loop l;
    loop_init(&l);
    unsigned seed = 99;
    unrelated(&l, 7, 100, &seed);
    for (int i = 0; i < 15; i++)
        step(&l, -1);
    size_t tail = l.s.t.nev;
    unrelated(&l, 5, 200, &seed);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 15, tail); /* the last step ends where the evaluation pass begins */
    CHECKF(strstr(it.how, "repeats 15 times (7 allocations before it, 5 after)"), "how: %s", it.how);
    loop_done(&l, &it);
}

static void test_no_period_finds_nothing(void)
{
    struct loop l;
    loop_init(&l);
    unsigned seed = 5;
    unrelated(&l, 200, 0, &seed);
    struct gt_iterations it = detect(&l);
    CHECK_EQ_INT(it.source, GT_ITER_NONE);
    CHECK_EQ_INT(it.n, 0);
    CHECK(it.it == NULL);
    loop_done(&l, &it);
}

static void test_two_repetitions_or_a_short_trace_are_not_a_loop(void)
{
    struct loop l;
    loop_init(&l);
    step(&l, -1);
    step(&l, -1); /* 6 allocations, the pattern seen twice */
    struct gt_iterations it = detect(&l);
    CHECK_EQ_INT(it.n, 0);
    loop_done(&l, &it);
    loop_init(&l);
    step(&l, -1);
    struct gt_iterations none = detect(&l);
    CHECK_EQ_INT(none.n, 0);
    loop_done(&l, &none);
}

/* Documented in iterations_auto.c: identical allocations that are all kept
 * (each layer's activation saved for backward) free nothing between
 * repetitions, so they are not taken for a loop; neither, therefore, is a
 * loop whose only allocation is one leaked tensor per step. */
static void test_identical_kept_allocations_are_not_a_loop(void)
{
    struct loop l;
    loop_init(&l);
    uint64_t p;
    for (int i = 0; i < 48; i++)
        alloc(&l, 8 * MIB, 5, &p);
    struct gt_iterations it = detect(&l);
    CHECK_EQ_INT(it.source, GT_ITER_NONE);
    CHECK_EQ_INT(it.n, 0);
    loop_done(&l, &it);
}

/* ... while the same allocation freed within each repetition is a loop. */
static void test_identical_allocations_freed_each_time_are_a_loop(void)
{
    struct loop l;
    loop_init(&l);
    for (int i = 0; i < 20; i++) {
        uint64_t p;
        l.starts[l.nstarts++] = alloc(&l, 8 * MIB, 5, &p);
        synth_free(&l.s, GT_API_cudaFree, p, 8 * MIB);
    }
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 20, 0);
    CHECKF(strstr(it.how, "pattern of 1 allocation repeats 20 times"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* A step of n allocations (sites 10.., sizes 1..n MiB), all freed at its
 * end; where `state` is set, it also keeps one allocation after every
 * second of them (an optimizer's first step making its state); `other`
 * sites >= 0 replace the allocations at those places with others (a first
 * step that runs other kernels for a few of its layers). */
static void big_step(struct loop *l, int n, int state, int other_from, int other_n)
{
    uint64_t p[64], kept;
    for (int k = 0; k < n; k++) {
        int32_t site = k >= other_from && k < other_from + other_n ? 300 + k : 10 + k;
        size_t ev = alloc(l, (int64_t)(k + 1) * MIB, site, &p[k]);
        if (k == 0)
            l->starts[l->nstarts++] = ev;
        if (state && k % 2)
            alloc(l, 7 * MIB, 400 + k, &kept);
    }
    for (int k = 0; k < n; k++)
        synth_free(&l->s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB);
}

/* The first step makes the optimizer's state between its allocations: the
 * exact pattern begins at the second step, and the first, which holds the
 * whole pattern with more, is an iteration too. */
static void test_a_first_step_with_more_allocations_is_an_iteration(void)
{
    struct loop l;
    loop_init(&l);
    uint64_t w;
    alloc(&l, 64 * MIB, 0, &w);   /* the weights, before the loop */
    big_step(&l, 24, 1, -1, 0);
    for (int i = 0; i < 9; i++)
        big_step(&l, 24, 0, -1, 0);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 10, 0);
    CHECKF(strstr(it.how, "pattern of 24 allocations repeats 9 times, and before them a step of 36 allocations that "
                          "holds the pattern and 12 more (1 allocation before that step, 0 after)"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* A first step whose two allocations of 24 differ (other sizes: a workspace
 * chosen on the first step) still holds 22 of them in order: an iteration. */
static void test_a_first_step_that_differs_in_a_tenth_is_an_iteration(void)
{
    struct loop l;
    loop_init(&l);
    big_step(&l, 24, 0, 20, 2);
    for (int i = 0; i < 9; i++)
        big_step(&l, 24, 0, -1, 0);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 10, 0);
    CHECKF(strstr(it.how, "and before them a step of 24 allocations that holds 22 of the pattern's 24 in order"), "how: %s",
           it.how);
    loop_done(&l, &it);
}

/* Two first steps that each differ (the first makes the optimizer's state,
 * the second runs two other kernels: PyTorch Lightning's on an H200 found
 * 29 of 30 steps with one looked for): both are iterations, the first
 * against the same pattern as the second. */
static void test_two_first_steps_that_differ_are_both_iterations(void)
{
    struct loop l;
    loop_init(&l);
    uint64_t w;
    alloc(&l, 64 * MIB, 0, &w);
    big_step(&l, 24, 1, -1, 0);
    big_step(&l, 24, 0, 20, 2);
    for (int i = 0; i < 8; i++)
        big_step(&l, 24, 0, -1, 0);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 10, 0);
    CHECKF(strstr(it.how, "repeats 8 times, and before them 2 steps of 60 allocations in all, each holding at least 22 "
                          "of the pattern's 24 in order (1 allocation before those steps, 0 after)"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* Every 5 steps an evaluation of 12 allocations of its own runs between two
 * steps (PyTorch Lightning's validation batches: 30 steps read as 6): the
 * exact pattern spans one stretch of steps, and the step's first allocation
 * recurs at gaps of 24, or 36 after an evaluation: every step is found, an
 * evaluation inside the step before it. */
static void test_steps_with_work_between_some_of_them_are_all_found(void)
{
    struct loop l;
    loop_init(&l);
    for (int i = 0; i < 12; i++) {
        big_step(&l, 24, 0, -1, 0);
        if (i % 5 == 4)
            for (int k = 0; k < 12; k++) {
                uint64_t p;
                alloc(&l, (int64_t)(k + 100) * MIB, 500 + k, &p);
                synth_free(&l.s, GT_API_cudaFree, p, (int64_t)(k + 100) * MIB);
            }
    }
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 12, 0);
    CHECKF(strstr(it.how, "recurs once per step, 12 times"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* A run of one allocation in set-up code that recurs at regular gaps more
 * often than the loop has steps (an 8-byte allocation 48 times, 6 apart, in
 * a ResNet-50's start-up) spans too little of the trace to be the loop's
 * anchor, here where an evaluation every 5 steps breaks the exact pattern. */
static void test_a_run_in_set_up_code_is_no_anchor(void)
{
    struct loop l;
    loop_init(&l);
    for (int k = 0; k < 48; k++) {   /* set-up: 8 B every 6 allocations */
        uint64_t p, q[5];
        alloc(&l, 8, 900, &p);
        for (int j = 0; j < 5; j++)
            alloc(&l, (int64_t)(j + 1) * 4096, 901 + j, &q[j]);
    }
    l.nstarts = 0;
    for (int i = 0; i < 12; i++) {
        big_step(&l, 24, 0, -1, 0);
        if (i % 5 == 4)
            for (int k = 0; k < 12; k++) {
                uint64_t p;
                alloc(&l, (int64_t)(k + 100) * MIB, 500 + k, &p);
                synth_free(&l.s, GT_API_cudaFree, p, (int64_t)(k + 100) * MIB);
            }
    }
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 12, 0);
    CHECKF(strstr(it.how, "recurs once per step, 12 times"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* What holds less of a step is no step: a forward pass alone (the first
 * half of a step's allocations) before the loop, or the end of a step the
 * trace began inside (20 of its 24 allocations, under 9/10), stay before
 * the iterations. */
static void test_a_forward_pass_or_most_of_a_step_is_no_iteration(void)
{
    struct loop l;
    loop_init(&l);
    big_step(&l, 12, 0, -1, 0);
    l.nstarts = 0;
    for (int i = 0; i < 9; i++)
        big_step(&l, 24, 0, -1, 0);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 9, 0);
    CHECKF(!strstr(it.how, "before them a step"), "how: %s", it.how);
    loop_done(&l, &it);
    loop_init(&l);
    uint64_t p[24];
    for (int k = 4; k < 24; k++)
        alloc(&l, (int64_t)(k + 1) * MIB, 10 + k, &p[k]);
    for (int k = 4; k < 24; k++)
        synth_free(&l.s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB);
    for (int i = 0; i < 9; i++)
        big_step(&l, 24, 0, -1, 0);
    it = detect(&l);
    check_steps(&l, &it, 0, 9, 0);
    CHECKF(!strstr(it.how, "before them a step"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* A first step lacking the pattern's first allocation, which set-up code
 * made: the step starts at its own first allocation, not back in the
 * set-up code for that one more allocation of the pattern. */
static void test_a_first_step_does_not_reach_back_into_set_up_code(void)
{
    struct loop l;
    loop_init(&l);
    uint64_t p;
    alloc(&l, 1 * MIB, 10, &p);   /* the pattern's first allocation, in set-up */
    synth_free(&l.s, GT_API_cudaFree, p, 1 * MIB);
    unsigned seed = 7;
    unrelated(&l, 10, 100, &seed);
    big_step(&l, 24, 0, 0, 1);
    l.starts[0]++;   /* (the step's own first allocation is no part of the pattern: it begins at its second) */
    for (int i = 0; i < 9; i++)
        big_step(&l, 24, 0, -1, 0);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 10, 0);
    CHECKF(strstr(it.how, "a step of 23 allocations that holds 23 of the pattern's 24 in order (12 allocations before "
                          "that step"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* A last batch smaller than the others (a DataLoader's remainder): every
 * size that follows the batch differs, libraries choose by shape (two of
 * the step's allocations come from other stacks) and two are not made. By
 * call site it holds 20 of the pattern's 24 in order: the last iteration. */
static void test_a_last_smaller_batch_is_an_iteration(void)
{
    struct loop l;
    loop_init(&l);
    for (int i = 0; i < 10; i++)
        big_step(&l, 24, 0, -1, 0);
    uint64_t p[24];
    int made[24] = {0};
    for (int k = 0; k < 24; k++) {
        if (k == 20 || k == 21)
            continue;
        int32_t site = k == 5 || k == 6 ? 300 + k : 10 + k;
        size_t ev = alloc(&l, (int64_t)(k + 1) * MIB / 2, site, &p[k]);
        made[k] = 1;
        if (k == 0)
            l.starts[l.nstarts++] = ev;
    }
    for (int k = 0; k < 24; k++)
        if (made[k])
            synth_free(&l.s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB / 2);
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 11, 0);
    CHECKF(strstr(it.how, "pattern of 24 allocations repeats 10 times, and after them a last step of 22 allocations "
                          "that holds 20 of the pattern's 24 by call site (its sizes differ) (0 allocations before it, "
                          "0 after)"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* Three epochs of 7 steps, the last of each a smaller batch (a DataLoader's
 * remainder): by sizes the pattern is an epoch (3 for 21); by call site it
 * is a step, 7 to the epoch, and every step is an iteration. */
static void test_epochs_that_end_in_a_smaller_batch_are_all_steps(void)
{
    struct loop l;
    loop_init(&l);
    for (int e = 0; e < 3; e++)
        for (int b = 0; b < 7; b++) {
            uint64_t p[24];
            int64_t div = b == 6 ? 2 : 1;
            for (int k = 0; k < 24; k++) {
                size_t ev = alloc(&l, (int64_t)(k + 1) * MIB / div, 10 + k, &p[k]);
                if (!k)
                    l.starts[l.nstarts++] = ev;
            }
            for (int k = 0; k < 24; k++)
                synth_free(&l.s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB / div);
        }
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 21, 0);
    CHECKF(strstr(it.how, "by call site with sizes set aside (by sizes the pattern is 7 steps, one of other sizes)"),
           "how: %s", it.how);
    loop_done(&l, &it);
}

/* Every allocation from one call site (one allocator wrapper; stacks off
 * likewise): by call site alone any 18 allocations match 3/4 of a step, so
 * work after the loop is no last step. */
static void test_without_call_sites_to_tell_no_last_step_is_guessed(void)
{
    struct loop l;
    loop_init(&l);
    for (int i = 0; i < 10; i++) {
        uint64_t p[24];
        for (int k = 0; k < 24; k++) {
            size_t ev = alloc(&l, (int64_t)(k + 1) * MIB, 7, &p[k]);
            if (!k)
                l.starts[l.nstarts++] = ev;
        }
        for (int k = 0; k < 24; k++)
            synth_free(&l.s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB);
    }
    size_t after = 0;
    for (int k = 0; k < 20; k++) {
        uint64_t p;
        size_t ev = alloc(&l, 4096 + k, 7, &p);
        if (!k)
            after = ev;
        synth_free(&l.s, GT_API_cudaFree, p, 4096 + k);
    }
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 10, after);
    CHECKF(!strstr(it.how, "last step"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* An evaluation after the loop (two forward passes: the step's first 12
 * allocations, at another batch size) holds half a step by call site: no
 * iteration. */
static void test_an_evaluation_after_the_loop_is_no_last_step(void)
{
    struct loop l;
    loop_init(&l);
    for (int i = 0; i < 10; i++)
        big_step(&l, 24, 0, -1, 0);
    size_t eval_start = 0;
    for (int pass = 0; pass < 2; pass++) {
        uint64_t p[12];
        for (int k = 0; k < 12; k++) {
            size_t ev = alloc(&l, (int64_t)(k + 1) * MIB / 4, 10 + k, &p[k]);
            if (!pass && !k)
                eval_start = ev;
        }
        for (int k = 0; k < 12; k++)
            synth_free(&l.s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB / 4);
    }
    struct gt_iterations it = detect(&l);
    check_steps(&l, &it, 0, 10, eval_start);
    CHECKF(!strstr(it.how, "last step"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* A training step of 24 allocations: a forward pass (sites 10..21) and a
 * backward pass (sites 22..33, made inside backward() when the sites are
 * marked so: mark_backward), all freed at its end. */
static void train_step(struct loop *l)
{
    uint64_t p[24];
    for (int k = 0; k < 24; k++) {
        size_t ev = alloc(l, (int64_t)(k + 1) * MIB, 10 + k, &p[k]);
        if (k == 0)
            l->starts[l->nstarts++] = ev;
    }
    for (int k = 0; k < 24; k++)
        synth_free(&l->s, GT_API_cudaFree, p[k], (int64_t)(k + 1) * MIB);
}

/* n allocations of other work (sites from site0, made and freed in turn) */
static void other_work(struct loop *l, int n, int32_t site0)
{
    for (int k = 0; k < n; k++) {
        uint64_t p;
        alloc(l, (int64_t)(k + 1) * MIB / 2, site0 + k, &p);
        synth_free(&l->s, GT_API_cudaFree, p, (int64_t)(k + 1) * MIB / 2);
    }
}

static void mark_backward(struct loop *l, int optimizer_sites)
{
    unsigned char mark[600] = {0};
    for (int k = 22; k < 34; k++)
        mark[k] = 1;
    for (int k = 500; k < 500 + optimizer_sites; k++)
        mark[k] = 2;   /* made in torch/optim/ */
    synth_frames(&l->s, 600, mark);
}

/* 20 training steps with an evaluation (20 allocations, no backward pass)
 * after every 5th: the exact pattern repeats 4 times, 5 steps and an
 * evaluation each; each step holds one backward pass, so the steps are the
 * iterations. Without the backward() marks (no Python stacks) nothing tells
 * a step from a layer: the pattern stays. */
static void test_steps_with_an_evaluation_every_five_are_the_iterations(void)
{
    for (int marked = 1; marked >= 0; marked--) {
        struct loop l;
        loop_init(&l);
        for (int i = 0; i < 20; i++) {
            train_step(&l);
            if (i % 5 == 4)
                other_work(&l, 20, 500);
        }
        if (marked)
            mark_backward(&l, 0);
        struct gt_iterations it = detect(&l);
        if (marked) {
            check_steps(&l, &it, 0, 20, 0);
            CHECKF(strstr(it.how, "recurs once per step, 20 times, each step with one backward pass (0 allocations "
                                  "before it; an exact repeating pattern of 140 allocations repeats 4 times"),
                   "how: %s", it.how);
        } else {
            CHECK_EQ_INT(it.n, 4);
            CHECKF(strstr(it.how, "a pattern of 140 allocations repeats 4 times"), "how: %s", it.how);
        }
        loop_done(&l, &it);
    }
}

/* Gradient accumulation: 4 micro-batches (each a forward and a backward
 * pass), then the optimizer step (6 allocations): the optimizer steps stay
 * the iterations, not the micro-batches. */
static void test_accumulated_micro_batches_are_no_iterations(void)
{
    struct loop l;
    loop_init(&l);
    size_t starts[20];
    for (int i = 0; i < 20; i++) {
        for (int m = 0; m < 4; m++)
            train_step(&l);
        starts[i] = l.starts[4 * i];
        other_work(&l, 6, 500);
    }
    memcpy(l.starts, starts, sizeof starts);
    l.nstarts = 20;
    mark_backward(&l, 0);
    struct gt_iterations it = detect(&l);
    CHECK_EQ_INT(it.n, 20);
    CHECKF(strstr(it.how, "a pattern of 102 allocations repeats 20 times"), "how: %s", it.how);
    loop_done(&l, &it);
}

/* The same with an optimizer step as long as half a micro-batch or more
 * (AdamW's temporaries over many small tensors: 14 allocations after
 * micro-batches of 24), made in torch/optim/: only every fourth
 * micro-batch holds it, so the optimizer steps stay the iterations. (Made
 * by an optimizer elsewhere, nothing tells it from an evaluation: the
 * micro-batches, each with its backward pass, are then the iterations.) */
/* Training steps whose optimizer allocates in torch/optim/ (AdamW's
 * temporaries, 4 a step), with other work between some of them: an
 * evaluation of one batch every 5 steps (6 allocations, under half a step),
 * a metric logged every 10 (2 allocations), one long evaluation mid-run
 * (60, over two steps; the exact pattern then spans the steps before it):
 * every step is an iteration. */
static void test_other_work_of_any_length_between_steps_that_run_the_optimizer(void)
{
    struct {
        int steps, every, work, once_after;
    } c[] = {{20, 5, 6, -1}, {30, 10, 2, -1}, {20, 0, 60, 9}};
    for (size_t i = 0; i < sizeof c / sizeof c[0]; i++) {
        struct loop l;
        loop_init(&l);
        for (int s = 0; s < c[i].steps; s++) {
            train_step(&l);
            other_work(&l, 4, 500);   /* the optimizer's */
            if ((c[i].every && s % c[i].every == c[i].every - 1) || s == c[i].once_after)
                other_work(&l, c[i].work, 520);
        }
        mark_backward(&l, 4);
        struct gt_iterations it = detect(&l);
        CHECKF(it.n == (size_t)c[i].steps, "case %zu: %zu iterations for %d steps (%s)", i, it.n, c[i].steps, it.how);
        CHECKF(strstr(it.how, "each step with one backward pass"), "case %zu: %s", i, it.how);
        loop_done(&l, &it);
    }
}

static void test_a_long_optimizer_step_after_micro_batches_is_no_evaluation(void)
{
    for (int optim = 1; optim >= 0; optim--) {
        struct loop l;
        loop_init(&l);
        for (int i = 0; i < 20; i++) {
            for (int m = 0; m < 4; m++)
                train_step(&l);
            other_work(&l, 14, 500);
        }
        mark_backward(&l, optim ? 14 : 0);
        struct gt_iterations it = detect(&l);
        CHECKF(it.n == (optim ? 20u : 80u), "optimizer frames %d: %zu iterations (%s)", optim, it.n, it.how);
        loop_done(&l, &it);
    }
}

int main(void)
{
    TAP_RUN(test_clean_period_after_a_warm_up);
    TAP_RUN(test_iterations_begin_where_live_memory_is_lowest);
    TAP_RUN(test_trace_cut_inside_steps_at_both_ends);
    TAP_RUN(test_period_with_noise_in_one_step);
    TAP_RUN(test_steps_that_differ_periodically_are_all_found);
    TAP_RUN(test_period_between_unrelated_allocations);
    TAP_RUN(test_no_period_finds_nothing);
    TAP_RUN(test_two_repetitions_or_a_short_trace_are_not_a_loop);
    TAP_RUN(test_identical_kept_allocations_are_not_a_loop);
    TAP_RUN(test_identical_allocations_freed_each_time_are_a_loop);
    TAP_RUN(test_a_first_step_with_more_allocations_is_an_iteration);
    TAP_RUN(test_a_first_step_that_differs_in_a_tenth_is_an_iteration);
    TAP_RUN(test_a_forward_pass_or_most_of_a_step_is_no_iteration);
    TAP_RUN(test_a_first_step_does_not_reach_back_into_set_up_code);
    TAP_RUN(test_two_first_steps_that_differ_are_both_iterations);
    TAP_RUN(test_steps_with_work_between_some_of_them_are_all_found);
    TAP_RUN(test_a_run_in_set_up_code_is_no_anchor);
    TAP_RUN(test_a_last_smaller_batch_is_an_iteration);
    TAP_RUN(test_an_evaluation_after_the_loop_is_no_last_step);
    TAP_RUN(test_without_call_sites_to_tell_no_last_step_is_guessed);
    TAP_RUN(test_epochs_that_end_in_a_smaller_batch_are_all_steps);
    TAP_RUN(test_steps_with_an_evaluation_every_five_are_the_iterations);
    TAP_RUN(test_accumulated_micro_batches_are_no_iterations);
    TAP_RUN(test_a_long_optimizer_step_after_micro_batches_is_no_evaluation);
    TAP_RUN(test_other_work_of_any_length_between_steps_that_run_the_optimizer);
    return tap_done();
}
