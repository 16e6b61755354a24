/* growth_shapes.c - the shapes of live memory over the iterations that
 * growth.c's Theil-Sen slope misreads: growth in held steps, a level that
 * rose early and settled, one step up or down held to the end, a rise that
 * began late, and rises that each came with a larger batch size. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"

/* The fitted points as a staircase: none drops below an earlier one by more
 * than the scatter (else 0). Its rise first to last, the rises past the
 * scatter (steps), the points that set a new high (rises), the largest rise
 * between two points and where, and whether the level rose over the span's
 * second half by more than its points' jitter (late): a leak that starts late rises
 * a little at each point, each rise under the scatter its own ramp makes
 * about the fitted line (1 MiB a step from step 70 of 100: no step, "a cache
 * settling", stable; a helper's probe). */
struct stairs {
    double rise, largest, largest_at, late_rise;
    size_t steps, rises;
    int late;
    int late_high;  /* a point of the second half above every point of the first */
    size_t began;   /* the point the rise began after (the last at the first level, past the jitter) */
};

static int staircase(const struct gt_growth *g, const double *x, const double *y, size_t n, struct stairs *s)
{
    double span = x[n - 1] - x[0], high = y[0], at_half = y[0], first_high = y[0];
    *s = (struct stairs){.rise = y[n - 1] - y[0]};
    for (size_t k = 1; k < n; k++) {
        if (y[k] < high - g->noise)
            return 0;   /* gave memory back */
        double d = y[k] - y[k - 1];
        if (x[k] <= x[0] + span / 2) {
            at_half = y[k];
            first_high = y[k] > first_high ? y[k] : first_high;
        } else if (y[k] > first_high) {
            s->late_high = 1;
        }
        if (d > g->noise && d > 0)
            s->steps++;
        if (d > s->largest)
            s->largest = d, s->largest_at = x[k];
        if (y[k] > high)
            s->rises++;
        high = y[k] > high ? y[k] : high;
    }
    /* (the scatter about the fitted line grows with a ramp the line does not
     * follow: how far a point strays from the one before, its median
     * absolute deviation, is the yardstick of a rise over the second half) */
    double *d = gt_xmalloc((n - 1) * sizeof *d);
    for (size_t k = 1; k < n; k++)
        d[k - 1] = y[k] - y[k - 1];
    double mid = gt_median(d, n - 1);
    for (size_t k = 0; k + 1 < n; k++)
        d[k] = fabs(d[k] - mid);
    double jitter = 1.4826 * gt_median(d, n - 1);
    free(d);
    s->late_rise = y[n - 1] - at_half;
    s->late = s->late_rise > 3 * jitter && s->late_rise > 0;
    while (s->began + 1 < n && y[s->began + 1] <= y[0] + 3 * jitter)
        s->began++;
    return 1;
}

static void say_stairs(struct gt_growth *g, const struct stairs *s)
{
    g->held.rise = (int64_t)s->rise;
    g->held.steps = s->steps;
    g->held.rises = s->rises;
    g->held.largest = (int64_t)s->largest;
    g->held.largest_at = s->largest_at;
    g->held.late = s->late;
    g->held.late_rise = (int64_t)s->late_rise;
}

/* Growth in steps that Theil-Sen cannot see: when most iterations hold one
 * level, the median of pairwise slopes is 0 whatever the steps between the
 * levels (8 MiB kept at iterations 45 and 190 of 200 read stable; at 120 and
 * 170 growing), or a little above 0 with a scatter that hides it (a leak
 * from step 68 of 100 read unknown). The fitted points are a staircase when
 * none drops below an earlier one by more than the scatter; what it rose from
 * first to last is held. Growing when that rise, with its largest step taken
 * out, still stands out of the scatter (one step is a one-off: a checkpoint
 * loaded, a cache reserving for a larger batch once, as fit_windows says over
 * windows) and the level rose in the second half of the span (a rise that
 * all came early is a cache settling, then holding). The slope is then the
 * rise over the span, its average. */
static void held_steps(const struct gt_ctx *c, struct gt_growth *g, const double *x, const double *y, size_t n)
{
    double span = x[n - 1] - x[0];
    struct stairs s;
    if (n < 3 || span <= 0 || y[n - 1] - y[0] <= 3 * g->noise || y[n - 1] <= y[0] || !staircase(g, x, y, n, &s))
        return;
    say_stairs(g, &s);
    if (s.rise - s.largest > 3 * g->noise && s.rise - s.largest > 0 && s.late) {
        if (s.rise / span > (double)c->o->threshold) {
            g->held.growing = 1;
            g->scatter_hides = 0;
            g->held.fitted_slope = g->slope;
            g->slope = s.rise / span;
            /* a leak that began late grows faster than the span's average says (1 MiB a step from step
             * 70 of 100 averaged 313 KiB): the rate since the rise began, for the text and the CI gate */
            if (s.began > 0 && x[n - 1] > x[s.began]) {
                g->held.since = x[s.began];
                g->held.since_slope = (y[n - 1] - y[s.began]) / (x[n - 1] - x[s.began]);
            }
            g->verdict = "growing";
        } else {
            g->held.under_threshold = 1;
        }
    }
}

/* Theil-Sen reads growth where the level rose early and then held: a
 * ramp over the first 35-50 of 100 iterations, flat after, read growing at
 * 133-503 KiB an iteration while leaks called it held steady (a helper's
 * probe). When the fitted points are a staircase whose second half never
 * rose above its first, it is a cache settling, as held_steps says: stable,
 * the rise said. Not when the second half rose at all, however little
 * against the jitter: 8 MiB kept every other step over 10 iterations has a
 * jitter of most of a step and is growing (a review). */
static void settled(struct gt_growth *g, const double *x, const double *y, size_t n)
{
    struct stairs s;
    if (!staircase(g, x, y, n, &s) || s.rise <= 0 || s.late_high)
        return;
    say_stairs(g, &s);
    g->slope = 0;
    g->verdict = "stable";
}

/* Theil-Sen's median slope is not 0 for one step up held to the end when
 * the step falls near the middle of the fitted iterations (half the pairs
 * straddle it): a helper's probe, 64 MiB kept once at iteration 5 of 10
 * read growing at 9 MiB an iteration, at 15 of 20 stable. When the fitted
 * points are a staircase whose rise is one step within the scatter, it is
 * that one step, a one-off, as held_steps says: stable, the step said. */
static void one_step(struct gt_growth *g, const double *x, const double *y, size_t n)
{
    struct stairs s;
    if (!staircase(g, x, y, n, &s) || s.rise <= 0 || s.steps != 1 || s.rise - s.largest > 3 * g->noise)
        return;
    say_stairs(g, &s);
    g->slope = 0;
    g->verdict = "stable";
}

/* A rise that began after a flat stretch, which Theil-Sen reads as growing
 * at a rate between the two: 1 MiB a step from step 50 of 100 read 522 KiB
 * an iteration, and passed a --fail-above that 1 MiB from step 70 failed (a
 * helper's probe). When the fitted points are a staircase that held its first
 * level for a while and then rose at least a quarter faster than the whole
 * span's slope, the rate since the rise began is said beside it, and is
 * what the CI gate judges (as for held_steps' late rises). */
#define LATE_RISE_FASTER 1.25
static void rose_late(struct gt_growth *g, const double *x, const double *y, size_t n)
{
    struct stairs s;
    if (n < 4 || g->slope <= 0 || !staircase(g, x, y, n, &s) || s.began == 0 || s.began + 2 >= n ||
        x[n - 1] <= x[s.began])
        return;
    double since = (y[n - 1] - y[s.began]) / (x[n - 1] - x[s.began]);
    if (since < LATE_RISE_FASTER * g->slope)
        return;
    g->held.since = x[s.began];
    g->held.since_slope = since;
}

/* One step down held to the end (a cache freed once, after a failed
 * allocation): the scatter it makes about a line hid nothing, and the
 * verdict read unknown at -80 MiB an iteration (a helper's probe). Each
 * point equals the one before but one, which is lower: stable, the step
 * said. */
static void one_step_down(struct gt_growth *g, const double *x, const double *y, size_t n)
{
    size_t at = 0;
    for (size_t k = 1; k < n; k++) {
        if (y[k] == y[k - 1])
            continue;
        if (y[k] > y[k - 1] || at)
            return;
        at = k;
    }
    if (!at)
        return;
    g->step_down = (int64_t)(y[at - 1] - y[at]);
    g->step_down_at = x[at];
    g->scatter_hides = 0;
    g->slope = 0;
    g->verdict = "stable";
}

/* Growth that follows the batch size: every rise of the fitted points came
 * at an iteration whose batch size was the largest yet, and each batch size
 * ran more than one iteration and held its level (a program's own cache, or
 * a caching allocator, reserving for each larger batch in one process: 8,
 * 16, 32, 64 read growing at 6.40 MiB an iteration, which no iteration did;
 * a helper's probe). Stable, the rises said; peak tells the batch's cost. */
static void grew_with_batch(const struct gt_iterations *its, struct gt_growth *g, const double *x, const double *y)
{
    unsigned char *largest = gt_iter_new_largest_batch(its);
    if (!largest)
        return;
    size_t rises = 0;
    for (size_t q = 1; q < g->used; q++)
        if (y[q] > y[q - 1]) {
            if (!largest[(size_t)x[q]]) {
                free(largest);
                return;
            }
            rises++;
        }
    free(largest);
    if (!rises)
        return;
    g->batch_rises = rises;
    g->held.fitted_slope = g->slope;
    g->held.since = g->held.since_slope = 0;
    g->slope = 0;
    g->verdict = "stable";
}

/* The verdict's second reading, once the Theil-Sen verdict is in g: the
 * shapes its median slope misreads, each where the verdict so far leaves it
 * open (x, y: the g->used fitted points). */
void gt_growth_shapes(const struct gt_ctx *c, const struct gt_iterations *its, struct gt_growth *g, const double *x,
                      const double *y)
{
    if (!strcmp(g->verdict, "unknown"))
        one_step_down(g, x, y, g->used);
    if (strcmp(g->verdict, "growing"))
        held_steps(c, g, x, y, g->used);
    else
        one_step(g, x, y, g->used);
    if (!g->held.growing && !strcmp(g->verdict, "growing"))
        settled(g, x, y, g->used);
    if (!g->held.growing && !strcmp(g->verdict, "growing"))
        rose_late(g, x, y, g->used);
    if (!strcmp(g->verdict, "growing"))
        grew_with_batch(its, g, x, y);
}
