/* Unit tests of peak's pool margin (analyzer/margin.c): the safety term
 * covers a reservation that the readings show only rounded up to its step,
 * however the rounding falls, at any batch size beyond those read; the slack
 * line never goes below 0; the largest batch is the largest n whose use,
 * slack and safety fit the room. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "tap.h"

#define MiB (1024.0 * 1024.0)

/* A slack model from readings taken at x[0..n) of a pool whose true need is
 * fixed + per x, each rounded up to the step g; nothing in use (the slack is
 * the whole reservation), residuals within a step (deviation 0). */
static void model(struct gt_slack *s, struct gt_slack_bs *bs, const double *x, size_t n, double fixed, double per,
                  int64_t g)
{
    double y[32];
    memset(s, 0, sizeof *s);
    for (size_t i = 0; i < n; i++) {
        double need = fixed + per * x[i];
        bs[i].batch_size = (int64_t)x[i];
        bs[i].in_use = 0;
        bs[i].reserved = (int64_t)ceil(need / (double)g) * g;
        y[i] = (double)bs[i].reserved;
    }
    s->bs = bs;
    s->nbs = s->nread = n;
    s->fit = gt_least_squares(x, y, n);
    s->fixed = s->fit.intercept;
    s->per_sample = s->fit.slope;
    s->granularity = g;
    for (size_t i = 0; i < n; i++)
        s->xmean += x[i] / (double)n;
    for (size_t i = 0; i < n; i++)
        s->sxx += (x[i] - s->xmean) * (x[i] - s->xmean);
    s->usable = 1;
}

static void test_safety_covers_any_rounding_of_the_readings_far_beyond_them(void)
{
    /* pools of many shapes read at batch sizes 2..10: at every batch size up
     * to 2000, the reservation (the need rounded up) is within the line plus
     * the safety term */
    double x[9] = {2, 3, 4, 5, 6, 7, 8, 9, 10};
    struct gt_slack s;
    struct gt_slack_bs bs[9];
    srand(11);
    int misses = 0;
    for (int trial = 0; trial < 400; trial++) {
        double fixed = (double)(rand() % 4000) * MiB + rand() % 1000000;
        double per = (double)(rand() % 2000000) + (trial % 3 ? 0 : 40 * MiB * (rand() % 1000) / 1000.0);
        int64_t g = (int64_t)2 << 20 << (rand() % 5);   /* 2 to 32 MiB */
        model(&s, bs, x, 9, fixed, per, g);
        for (int n = 11; n <= 2000; n += 7) {
            double reserved = ceil((fixed + per * n) / (double)g) * (double)g;
            if (reserved > gt_slack_at(&s, n) + gt_slack_safety(&s, n) + 1e-3 && misses++ < 5)
                CHECKF(0, "trial %d n %d: reserved %.0f above line %.0f + safety %.0f", trial, n, reserved,
                       gt_slack_at(&s, n), gt_slack_safety(&s, n));
        }
    }
    CHECK(misses == 0);
}

static void test_safety_rounding_part_is_the_step_times_one_plus_the_negative_weights(void)
{
    /* x 2, 4, 6: mean 4, sxx 8; at n = 20 the weights are 1/3 + 16 (x - 4) / 8:
     * -11/3, 1/3, 13/3: the rounding part is g (1 + 11/3) */
    double x[3] = {2, 4, 6};
    struct gt_slack s;
    struct gt_slack_bs bs[3];
    int64_t g = 2 << 20;
    model(&s, bs, x, 3, 100 * MiB, 1 * MiB, g);
    CHECKF(fabs(gt_slack_safety(&s, 20) - (double)g * (1 + 11.0 / 3)) < 1e-3, "safety %.3f", gt_slack_safety(&s, 20));
    /* residuals beyond the rounding widen it: 2 deviations x sqrt(1 + 1/3 + 256/8) */
    s.deviation = 1000;
    CHECKF(fabs(gt_slack_safety(&s, 20) - (double)g * (1 + 11.0 / 3) - 2000 * sqrt(1 + 1.0 / 3 + 32)) < 1e-3,
           "safety %.3f", gt_slack_safety(&s, 20));
}

static void test_slack_line_never_below_zero(void)
{
    struct gt_slack s;
    memset(&s, 0, sizeof s);
    s.fixed = -10 * MiB;
    s.per_sample = 1 * MiB;
    CHECK(gt_slack_at(&s, 5) == 0);
    CHECK(gt_slack_at(&s, 30) == 20 * MiB);
}

static void test_largest_is_the_last_batch_whose_use_slack_and_safety_fit(void)
{
    double x[5] = {2, 4, 6, 8, 10};
    struct gt_slack s;
    struct gt_slack_bs bs[5];
    model(&s, bs, x, 5, 300 * MiB, 3 * MiB, 2 << 20);
    struct gt_linfit use = {.intercept = 1000 * MiB, .slope = 40 * MiB, .r2 = 1, .ok = 1};
    for (double room = 500 * MiB; room < 80000 * MiB; room *= 1.37) {
        int64_t n = gt_slack_largest(&s, &use, room);
        double need = use.intercept + use.slope * (double)n + gt_slack_at(&s, n) + gt_slack_safety(&s, n);
        double next = use.intercept + use.slope * (double)(n + 1) + gt_slack_at(&s, n + 1) + gt_slack_safety(&s, n + 1);
        if (n > 0)
            CHECKF(need <= room, "room %.0f: n %lld needs %.0f", room, (long long)n, need);
        CHECKF(next > room, "room %.0f: n %lld, yet n + 1 needs only %.0f", room, (long long)n, next);
    }
    CHECK(gt_slack_largest(&s, &use, 100 * MiB) == 0);   /* not even the fixed part */
}

int main(void)
{
    TAP_RUN(test_safety_covers_any_rounding_of_the_readings_far_beyond_them);
    TAP_RUN(test_safety_rounding_part_is_the_step_times_one_plus_the_negative_weights);
    TAP_RUN(test_slack_line_never_below_zero);
    TAP_RUN(test_largest_is_the_last_batch_whose_use_slack_and_safety_fit);
    return tap_done();
}
