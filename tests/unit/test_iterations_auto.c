/* Unit tests of automatic iteration detection from the allocation pattern
 * (analyzer/iterations_auto.c) on synthetic sequences: a clean period after
 * a warm-up, a trace that starts or stops inside a step, a period interrupted
 * by noise and surrounded by unrelated allocations, no period at all, too
 * few repetitions, and the documented case that is not a loop: identical
 * allocations that are all kept (a model's layers, or a leak per step). */

#include "synth_loop.h"

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
    return tap_done();
}
