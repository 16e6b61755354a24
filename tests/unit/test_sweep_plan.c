/* Unit tests of gputrace sweep's model and search (analyzer/sweep_plan.c)
 * against made-up devices: a workload whose peak is exactly linear is
 * proven in 7 runs (1, 2, 4, 8, the prediction, one past it, the
 * prediction again); a step in the per-sample cost, memory the trace cannot
 * see, a model that predicts too little, a batch that fails on its second
 * run, a peak that does not grow, batch size 1 failing: each still ends on
 * the true boundary, proven, within about twice plain bisection's runs.
 * SWEEP_DEBUG=1 in the environment prints each simulated run. */
#include <stdint.h>
#include <stdlib.h>

#include "sweep.h"
#include "tap.h"

#define MIB ((int64_t)1 << 20)

/* A made-up device and workload: peak(bs) = fixed + per_sample x bs, with
 * per_sample2 above batch size knee (0: none); the device reports total
 * bytes but unseen of them are held where no trace sees them (a CUDA
 * context); the batch flaky fails on its second run. */
struct device {
    int64_t total, unseen, fixed, per_sample, knee, per_sample2, flat, flaky;
    int flaky_runs;
};

static int64_t peak_of(const struct device *d, int64_t bs)
{
    if (d->flat)
        return d->flat;
    if (d->knee && bs > d->knee)
        return d->fixed + d->per_sample2 * bs;
    return d->fixed + d->per_sample * bs;
}

/* The largest batch that fits: the answer the sweep must prove. */
static int64_t truth(const struct device *d)
{
    int64_t bs = 0;
    while (bs < 100000 && peak_of(d, bs + 1) <= d->total - d->unseen)
        bs++;
    return bs;
}

/* Runs a sweep the way gputrace sweep drives the plan; returns the runs
 * used and the largest batch it proved (lo), *verified set. */
static int simulate(struct device *d, const int64_t *sizes, size_t n, int max_runs, int64_t *lo, int *verified)
{
    struct gt_sweep_plan s;
    gt_sweep_plan_init(&s, sizes, n);
    s.available = d->total;   /* nothing outside the fitted level */
    int runs = 0;
    int64_t bs;
    enum gt_sweep_phase ph;
    while (runs < max_runs && (bs = gt_sweep_plan_next(&s, &ph, NULL)) > 0) {
        runs++;
        int64_t peak = peak_of(d, bs);
        int oom = peak > d->total - d->unseen;
        if (bs == d->flaky && ph == GT_SWEEP_REPEAT && !d->flaky_runs++)
            oom = 1;
        gt_sweep_plan_add(&s, bs, oom, oom ? -1 : peak);
        if (getenv("SWEEP_DEBUG"))
            printf("#   run %d: bs %lld phase %d %s lo %lld hi %lld\n", runs, (long long)bs, (int)ph, oom ? "OOM" : "fits",
                   (long long)s.lo, (long long)s.hi);
        /* the failed run's trace: the workload allocates its peak in 256
         * equal parts; the one that failed, plus what was live, fell short
         * of the device total by what was held outside the trace */
        if (oom) {
            int64_t part = peak / 256, asked = part;
            while (asked <= d->total - d->unseen)
                asked += part;
            if (asked < d->total)
                gt_sweep_plan_lower_available(&s, asked);
        }
    }
    *lo = s.lo;
    *verified = gt_sweep_plan_verified(&s);
    gt_sweep_plan_free(&s);
    return runs;
}

static void check_sweep(struct device *d, int max_runs_allowed)
{
    int64_t lo;
    int verified;
    int runs = simulate(d, NULL, 0, 100, &lo, &verified);
    CHECKF(lo == truth(d), "proved %lld, the truth is %lld", (long long)lo, (long long)truth(d));
    CHECK(verified);
    CHECKF(runs <= max_runs_allowed, "%d runs, at most %d expected", runs, max_runs_allowed);
    printf("# truth %lld: %d runs\n", (long long)truth(d), runs);
}

static void test_exactly_linear_peak_is_proven_in_seven_runs(void)
{
    struct device d = {.total = 1024 * MIB, .fixed = 64 * MIB, .per_sample = 3 * MIB};
    int64_t lo;
    int verified;
    CHECK_EQ_INT(simulate(&d, NULL, 0, 100, &lo, &verified), 7);
    CHECK_EQ_INT(lo, 320);
    CHECK(verified);
    /* at real sizes too: 1.5 GiB + 12 MiB per sample on 80 GiB */
    struct device big = {.total = 80LL << 30, .fixed = 1536 * MIB, .per_sample = 12 * MIB};
    CHECK_EQ_INT(simulate(&big, NULL, 0, 100, &lo, &verified), 7);
    CHECK_EQ_INT(lo, truth(&big));
}

static void test_step_in_per_sample_cost_still_ends_on_the_boundary(void)
{
    for (int64_t knee = 3; knee < 300; knee += 17) {
        struct device d = {.total = 1024 * MIB, .fixed = 64 * MIB, .per_sample = 2 * MIB, .knee = knee,
                           .per_sample2 = 6 * MIB};
        check_sweep(&d, 20);
    }
}

static void test_memory_the_trace_cannot_see_is_learned_from_the_failed_run(void)
{
    /* 500 MiB of 80 GiB held by the CUDA context: the first prediction
     * fails, its trace says how much was held outside (short by at most the
     * failed request), the walk down from it is short */
    struct device d = {.total = 80LL << 30, .unseen = 500 * MIB, .fixed = 2048 * MIB, .per_sample = 37 * MIB};
    check_sweep(&d, 11);
}

static void test_a_model_that_predicts_too_little_steps_up(void)
{
    /* per-sample cost falls above the knee: the line through 1..8 predicts
     * far too little */
    struct device d = {.total = 1024 * MIB, .fixed = 64 * MIB, .per_sample = 6 * MIB, .knee = 10, .per_sample2 = 2 * MIB};
    check_sweep(&d, 24);
}

static void test_a_batch_failing_on_its_second_run_is_not_the_answer(void)
{
    struct device d = {.total = 1024 * MIB, .fixed = 64 * MIB, .per_sample = 3 * MIB, .flaky = 320};
    int64_t lo;
    int verified;
    simulate(&d, NULL, 0, 100, &lo, &verified);
    CHECK_EQ_INT(lo, 319);
    CHECK(verified);
}

static void test_batch_size_one_failing_proves_nothing_fits(void)
{
    struct device d = {.total = 1024 * MIB, .fixed = 2048 * MIB, .per_sample = 3 * MIB};
    int64_t lo;
    int verified;
    CHECK_EQ_INT(simulate(&d, NULL, 0, 100, &lo, &verified), 1);
    CHECK_EQ_INT(lo, 0);
    CHECK(verified);
}

static void test_a_peak_that_does_not_grow_doubles_without_a_model(void)
{
    struct gt_sweep_plan s;
    gt_sweep_plan_init(&s, NULL, 0);
    s.available = 1024 * MIB;
    int64_t want[] = {1, 2, 4, 8, 16, 32, 64};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
        int model = 1;
        int64_t bs = gt_sweep_plan_next(&s, NULL, &model);
        CHECK_EQ_INT(bs, want[i]);
        CHECK(!model);
        gt_sweep_plan_add(&s, bs, 0, 100 * MIB);
    }
    gt_sweep_plan_free(&s);
}

static void test_given_sizes_run_ascending_once_each_and_stop_at_the_first_failure(void)
{
    struct gt_sweep_plan s;
    int64_t sizes[] = {16, 4, 8, 4, 32};
    gt_sweep_plan_init(&s, sizes, 5);
    enum gt_sweep_phase ph;
    CHECK_EQ_INT(gt_sweep_plan_next(&s, &ph, NULL), 4);
    CHECK(ph == GT_SWEEP_MODEL);
    gt_sweep_plan_add(&s, 4, 0, 10 * MIB);
    CHECK_EQ_INT(gt_sweep_plan_next(&s, &ph, NULL), 8);
    gt_sweep_plan_add(&s, 8, 0, 18 * MIB);
    CHECK_EQ_INT(gt_sweep_plan_next(&s, &ph, NULL), 16);
    gt_sweep_plan_add(&s, 16, 1, -1);
    /* 32 is not run: 16 failed. Without a device size, bisect */
    CHECK_EQ_INT(gt_sweep_plan_next(&s, &ph, NULL), 12);
    CHECK(ph == GT_SWEEP_SEARCH);
    gt_sweep_plan_free(&s);
}

static void test_fit_drops_the_smallest_batches_when_one_line_does_not_hold(void)
{
    /* 1, 2, 4, 8 on 2 MiB per sample; 64, 128 on 6 MiB: the fit is the upper line */
    struct gt_sweep_point p[6];
    int64_t bs[6] = {1, 2, 4, 8, 64, 128};
    for (int i = 0; i < 6; i++)
        p[i] = (struct gt_sweep_point){bs[i], 0, bs[i] > 10 ? 64 * MIB + 6 * MIB * bs[i] : 64 * MIB + 2 * MIB * bs[i]};
    struct gt_sweep_fit f;
    gt_sweep_fit_points(p, 6, &f);
    CHECK(!f.linear);
    CHECK_EQ_INT(f.used, 2);
    CHECK_EQ_INT(f.from_bs, 64);
    CHECK_EQ_INT((int64_t)(f.fit.slope + 0.5), 6 * MIB);
    CHECK_EQ_INT(gt_sweep_predict(&f, 1024 * MIB), 160);
    /* a failed run is no point of the fit; the highest peak per batch size is */
    struct gt_sweep_point q[4] = {{1, 0, 10 * MIB}, {2, 0, 11 * MIB}, {2, 0, 12 * MIB}, {4, 1, 999 * MIB}};
    gt_sweep_fit_points(q, 4, &f);
    CHECK(f.linear);
    CHECK_EQ_INT(f.points, 2);
    CHECK_EQ_INT((int64_t)(f.fit.slope + 0.5), 2 * MIB);
    CHECK_EQ_INT(gt_sweep_predict(&f, 7 * MIB), 0);
}

int main(void)
{
    TAP_RUN(test_exactly_linear_peak_is_proven_in_seven_runs);
    TAP_RUN(test_step_in_per_sample_cost_still_ends_on_the_boundary);
    TAP_RUN(test_memory_the_trace_cannot_see_is_learned_from_the_failed_run);
    TAP_RUN(test_a_model_that_predicts_too_little_steps_up);
    TAP_RUN(test_a_batch_failing_on_its_second_run_is_not_the_answer);
    TAP_RUN(test_batch_size_one_failing_proves_nothing_fits);
    TAP_RUN(test_a_peak_that_does_not_grow_doubles_without_a_model);
    TAP_RUN(test_given_sizes_run_ascending_once_each_and_stop_at_the_first_failure);
    TAP_RUN(test_fit_drops_the_smallest_batches_when_one_line_does_not_hold);
    return tap_done();
}
