/* Unit tests of automatic iterations where steps differ from the pattern
 * by more than a warm-up (analyzer/iterations_auto.c and
 * iterations_passes.c): a last batch of other sizes, epochs that each end
 * in one, work after the loop or between steps (an evaluation, logging),
 * gradient accumulation, and the backward() and torch/optim/ marks that
 * tell a training step from a layer or a micro-batch. */

#include "synth_loop.h"

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
    TAP_RUN(test_a_last_smaller_batch_is_an_iteration);
    TAP_RUN(test_epochs_that_end_in_a_smaller_batch_are_all_steps);
    TAP_RUN(test_without_call_sites_to_tell_no_last_step_is_guessed);
    TAP_RUN(test_an_evaluation_after_the_loop_is_no_last_step);
    TAP_RUN(test_steps_with_an_evaluation_every_five_are_the_iterations);
    TAP_RUN(test_accumulated_micro_batches_are_no_iterations);
    TAP_RUN(test_other_work_of_any_length_between_steps_that_run_the_optimizer);
    TAP_RUN(test_a_long_optimizer_step_after_micro_batches_is_no_evaluation);
    return tap_done();
}
