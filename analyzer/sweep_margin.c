/* sweep_margin.c - gputrace sweep's margin below a proven largest batch
 * size (see sweep.h): the room a fresh run there may need beyond the
 * highest peak its runs showed (their spread, the pool's slack another run
 * drew, the least room for a pool's draw), and the size below that leaves
 * it; and a sample's bytes, which the margin and the headroom count in. */
#include <math.h>
#include <stdlib.h>

#include "format.h"
#include "sweep.h"

#define POOL_PAGE ((int64_t)2 << 20)   /* the stream-ordered pool's page: its smallest growth */

/* Under a pool whose reservation was read: the room lo needs above its
 * highest peak (top) if a fresh run of lo drew the highest slack seen in a
 * large run that fit and as much again (see sweep.h); sets s->slack_*.
 * 0 when no run drew more than lo's own highest.
 * A slack is counted beyond a part that does not grow with use: the least
 * slack of any run that fit (the pool's first chunks; the transformer's
 * batch 1 held 0.20 GiB beyond 0.77 in use, 83 held 1.84 beyond 41.50),
 * and a page (a pool maps whole 2 MiB pages). That part is estimated from
 * a small run, so its shares of smaller runs come out a little lower than
 * of larger ones with no chance in it: only a share above lo's own counts.
 * Small runs (in use under a quarter of lo's) are left out: there a page
 * or two is a large share of little. So are smaller runs that reserved as
 * much as lo at its lowest: the pool then held all the device would give
 * it, and its slack shrank as its use grew by no chance (the conv net on an
 * H100: 80224 MiB reserved at 157, 158 and 166, in use 448.75 MiB more a
 * sample; 157's slack taken for a draw asked for 20 samples of room). */
static double slack_room(struct gt_sweep_plan *s)
{
    int64_t lo_use = 0, fixed = -1, lo_least = -1;
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (!p->oom && p->batch_size == s->lo && p->in_use > 0 && (lo_least < 0 || p->peak < lo_least))
            lo_least = p->peak;
    }
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (p->oom || p->in_use <= 0 || p->peak < p->in_use || p->batch_size > s->lo)
            continue;
        if (p->batch_size == s->lo && p->in_use > lo_use)
            lo_use = p->in_use;
        if (fixed < 0 || p->peak - p->in_use < fixed)
            fixed = p->peak - p->in_use;
    }
    s->slack_min = s->slack_max = s->slack_own = -1;
    s->slack_runs = 0;
    s->slack_max_bs = 0;
    if (lo_use <= 0)
        return 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (p->oom || p->in_use <= 0 || p->peak < p->in_use || p->batch_size > s->lo || 4 * p->in_use < lo_use ||
            (p->batch_size < s->lo && p->peak + POOL_PAGE > lo_least))
            continue;
        int64_t slack = p->peak - p->in_use - fixed - POOL_PAGE;
        double r = slack > 0 ? (double)slack / (double)p->in_use : 0.0;
        if (s->slack_runs == 0 || r < s->slack_min)
            s->slack_min = r;
        if (s->slack_runs == 0 || r > s->slack_max) {
            s->slack_max = r;
            s->slack_max_bs = p->batch_size;
        }
        if (p->batch_size == s->lo && r > s->slack_own)
            s->slack_own = r;
        s->slack_runs++;
    }
    if (s->slack_runs < 2 || !(s->slack_max > s->slack_own))
        return 0;
    return 2.0 * (double)lo_use * (s->slack_max - s->slack_own);
}

/* A sample: the median slope between every two runs that fit at or below
 * upto (Theil-Sen), not the sweep's fit. Near the device the peaks are as
 * noisy as the spread itself (session 24: 147 peaked at 78.12 and 75.84
 * GiB, 146 at 75.31, and a run of 149 that fit before failing at 76.91),
 * and a line through the largest sizes sloped down; the median over the
 * whole range is the per-sample cost (0.52 GiB). 0 when fewer than two
 * runs fit. */
double gt_sweep_plan_sample(const struct gt_sweep_plan *s, int64_t upto)
{
    double *x = gt_xmalloc((s->n + 1) * sizeof *x), *y = gt_xmalloc((s->n + 1) * sizeof *y);
    size_t m = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (p->oom || p->peak < 0 || p->batch_size > upto)
            continue;
        x[m] = (double)p->batch_size;
        y[m++] = (double)p->peak;
    }
    double sample = m >= 2 ? gt_theil_sen(x, y, m, 64, NULL) : 0;
    free(x);
    free(y);
    return sample;
}

/* lo is proven: did its runs' peaks differ by half a sample or more, or
 * does the pool's slack seen in the other large runs, or the least room
 * for a pool's draw beyond what lo left, ask that much room?
 * Then the margin's batch size (see sweep.h), once a sweep. */
void gt_sweep_plan_take_margin(struct gt_sweep_plan *s)
{
    if (s->marginal || s->lo < 2)
        return;
    int64_t top = -1, bottom = -1;
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (p->oom || p->peak < 0 || p->batch_size != s->lo)
            continue;
        if (top < 0 || p->peak > top)
            top = p->peak;
        if (bottom < 0 || p->peak < bottom)
            bottom = p->peak;
    }
    double sample = gt_sweep_plan_sample(s, s->lo);
    if (top < 0 || !(sample > 0))
        return;
    double room = (double)(top - bottom), slack = slack_room(s);
    enum gt_sweep_room why = GT_SWEEP_ROOM_SPREAD;
    if (slack > room) {
        room = slack;
        why = GT_SWEEP_ROOM_SLACK;
    }
    int64_t lo_use = 0, left = s->available > 0 ? (s->available > top ? s->available - top : 0) : -1;
    for (size_t i = 0; i < s->n; i++)
        if (!s->pts[i].oom && s->pts[i].batch_size == s->lo && s->pts[i].in_use > lo_use)
            lo_use = s->pts[i].in_use;
    double draw = GT_SWEEP_POOL_DRAW * (double)lo_use;   /* 0 without a pool read */
    double past_end = draw - (double)(left > 0 ? left : 0);   /* (left unknown: the whole draw) */
    if (past_end > room) {
        room = past_end;
        why = GT_SWEEP_ROOM_DRAW;
    }
    if (2.0 * room < sample)
        return;
    double sizes = ceil(room / sample - 1e-9);
    s->room_why = why;
    s->draw = (int64_t)draw;
    s->left = left;
    s->marginal = s->lo;
    s->spread = top - bottom;
    s->room = (int64_t)ceil(room);
    s->per_sample = sample;
    s->settle = sizes >= (double)s->lo ? 1 : s->lo - (int64_t)sizes;
}
