/* sweep_plan.c - gputrace sweep's search (see sweep.h): the runs so far, the
 * next batch size to run and the proof (the model it asks, fit and
 * prediction, is sweep_fit.c; the margin below a proven largest,
 * sweep_margin.c). Nothing here runs or reads anything, so every decision
 * can be tested against a made-up device (tests/unit). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "sweep.h"

#define MIB (1024.0 * 1024.0)

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void gt_sweep_plan_init(struct gt_sweep_plan *s, const int64_t *sizes, size_t n)
{
    /* three small runs fit a line, and say whether it is one; more small
     * ones cost process starts (10-16 s on a GPU) and still do not tell
     * the slope near the device (under a caching allocator small batches are
     * not linear: today's transformer needed 1..16 for a line that then
     * over-stated 136's peak by 11%); the first large run, and the secant
     * through it, do */
    static const int64_t dflt[] = {1, 2, 4};
    memset(s, 0, sizeof *s);
    s->fits_needed = 2;   /* the largest that ran, once more: libraries choose workspaces by free memory */
    if (!sizes) {
        sizes = dflt;
        n = sizeof dflt / sizeof dflt[0];
    }
    s->model_bs = gt_xmalloc((n + 1) * sizeof *s->model_bs);
    memcpy(s->model_bs, sizes, n * sizeof *sizes);
    gt_qsort(s->model_bs, n, sizeof *s->model_bs, cmp_i64);
    for (size_t i = 0; i < n; i++)
        if (s->model_bs[i] > 0 && (!s->n_model || s->model_bs[s->n_model - 1] != s->model_bs[i]))
            s->model_bs[s->n_model++] = s->model_bs[i];
    s->hi = GT_SWEEP_NONE;
    s->available = -1;
    s->expected_peak = -1;
    s->trust = 1;
    s->foretold = 1;   /* phase 1's fit holds the runs it fits */
    s->step = 1;
    s->slack_min = s->slack_max = s->slack_own = -1;
}

void gt_sweep_plan_free(struct gt_sweep_plan *s)
{
    free(s->model_bs);
    free(s->pts);
    memset(s, 0, sizeof *s);
}

int gt_sweep_plan_widen(struct gt_sweep_plan *s)
{
    if (s->widened >= GT_SWEEP_WIDEN || s->hi != GT_SWEEP_NONE || s->next_model < s->n_model || !s->n_model ||
        s->model_bs[s->n_model - 1] > GT_SWEEP_MAX_BS / 16)
        return 0;
    s->model_bs = gt_xrealloc(s->model_bs, (s->n_model + 1) * sizeof *s->model_bs);
    s->model_bs[s->n_model] = s->model_bs[s->n_model - 1] * 16;
    s->n_model++;
    s->widened++;
    return 1;
}

void gt_sweep_plan_fit(const struct gt_sweep_plan *s, struct gt_sweep_fit *f)
{
    gt_sweep_fit_points(s->pts, s->n, f);
}

/* Is peak within the fit's tolerance (max(1 MiB, 1%)) of what was foretold? */
static int near(int64_t peak, int64_t foretold)
{
    return foretold >= 0 && fabs((double)(peak - foretold)) <= fmax(MIB, 0.01 * (double)peak);
}

void gt_sweep_plan_add(struct gt_sweep_plan *s, int64_t batch_size, int oom, int64_t peak)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->pts = gt_xrealloc(s->pts, s->cap * sizeof *s->pts);
    }
    s->pts[s->n++] = (struct gt_sweep_point){batch_size, oom != 0, peak, -1};
    int had_hi = s->hi != GT_SWEEP_NONE;
    int64_t before = had_hi ? s->hi - s->lo : 0;
    s->hi_before = s->hi;
    /* a batch size that fit before and now failed: the boundary is a band
     * where fresh processes fit or not by chance (cudaMallocAsync's pool on
     * an H100: 148..150 of the transformer), and the sizes just below it
     * are the likely answer, not the middle of what is left below; the
     * search walks down from it (see search_step). A run that fits ends the
     * walk. */
    if (oom && batch_size <= s->hi && (gt_sweep_plan_fits_at(s, batch_size) || batch_size == s->settle))
        s->band_step = 1;   /* (the margin's size failing: the band is wider than lo's runs showed) */
    else if (!oom)
        s->band_step = 0;
    if (oom && batch_size < s->hi)
        s->hi = batch_size;
    if (oom && s->settle && batch_size <= s->settle)
        s->settle = 0;   /* the search goes on below it; the margin is not taken again */
    /* lo: the largest batch that ran below hi (a batch that ran once and
     * failed on its second run counts as failed) */
    s->lo = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->pts[i].oom && s->pts[i].batch_size < s->hi && s->pts[i].batch_size > s->lo)
            s->lo = s->pts[i].batch_size;
    if (batch_size != s->proposed)
        return;
    s->proposed = 0;
    if (s->proposed_phase != GT_SWEEP_SEARCH)
        return;
    s->searched++;
    if (!oom)
        s->foretold = near(peak, s->expected_peak);
    s->blind = !oom && !had_hi && !s->foretold ? s->blind + 1 : 0;
    s->width2 = s->width1;
    s->width1 = before;
    if (!oom) {
        s->model_fails = 0;   /* (any run that fits is a new start for the model...) */
        if (s->last_kind == 1)
            s->creep = s->creep_held = 0;   /* (...but only its own step fitting shows it no longer creeps) */
        else if (s->creep && !s->creep_held)
            s->creep = 2;     /* (a new lo: the secant through it is a new line; see search_step) */
    } else if (s->last_kind == 1) {
        s->model_fails++;
        if (s->creep || (had_hi && batch_size == s->hi_before - 1))
            s->creep = 1;   /* (a failed model step ends a 2's easing) */
    }
    if (s->last_kind == 1) {
        /* a model step is judged: it said batch_size fits iff it is at most
         * its prediction. When it was wrong, the next steps walk from the
         * side it got wrong until a run lands on the other side */
        s->trust = (batch_size <= s->last_pred) == !oom;
        s->dir = s->trust ? 0 : oom ? -1 : 1;
        if (oom && s->available >= 0 && peak > s->available)
            s->dir = 0;   /* its need is known past the device: the model was not a little off */
        s->step = 1;
    } else {
        s->trust = 1;   /* a step without the model gives it a new chance */
        if ((s->dir < 0 && !oom) || (s->dir > 0 && oom))
            s->dir = 0;   /* the walk crossed the boundary */
    }
}

void gt_sweep_plan_lower_available(struct gt_sweep_plan *s, int64_t available)
{
    if (s->available >= 0 && available >= s->available)
        return;
    s->available = available;
    s->band_step = 0;   /* the failure is memory outside the trace (the device shrank), not a band */
    if (s->creep)
        s->creep_held = 1;   /* the model moved by the failure, not by a run that fit: see search_step */
    if (!s->recalibrations++)
        s->recalibrated = 1;
}

void gt_sweep_plan_set_in_use(struct gt_sweep_plan *s, int64_t in_use)
{
    if (s->n && !s->pts[s->n - 1].oom)
        s->pts[s->n - 1].in_use = in_use;
}

int gt_sweep_plan_fits_at(const struct gt_sweep_plan *s, int64_t bs)
{
    int fits = 0;
    for (size_t i = 0; i < s->n; i++)
        fits += s->pts[i].batch_size == bs && !s->pts[i].oom;
    return fits;
}

int gt_sweep_plan_verified(const struct gt_sweep_plan *s)
{
    return s->hi != GT_SWEEP_NONE && s->hi - s->lo == 1 &&
           (s->lo == 0 || gt_sweep_plan_fits_at(s, s->lo) >= s->fits_needed) &&
           (!s->settle || gt_sweep_plan_fits_at(s, s->settle) >= s->fits_needed);
}

int64_t gt_sweep_plan_answer(const struct gt_sweep_plan *s)
{
    return s->settle && gt_sweep_plan_fits_at(s, s->settle) >= s->fits_needed ? s->settle : s->lo;
}

/* The highest peak (fits) or lower bound (out of memory) recorded at bs, -1 none. */
static int64_t value_at(const struct gt_sweep_plan *s, int64_t bs, int oom)
{
    int64_t v = -1;
    for (size_t i = 0; i < s->n; i++)
        if (s->pts[i].batch_size == bs && s->pts[i].oom == oom && s->pts[i].peak > v)
            v = s->pts[i].peak;
    return v;
}

/* Regula falsi inside the bracket (lo, hi) on need(bs) - available, from
 * lo's peak along the steepest line to a failed run's lower bound (what its
 * trace showed live at the failure plus the request): each such line
 * understates the need's growth past lo, the steepest the least. Returns the
 * batch size where that line reaches the available bytes, or 0 when it
 * cannot be told (no device size, no peak at lo or one past the available
 * bytes, no failure's lower bound above them) or believed: when it lands
 * in the last eighth of the bracket below hi and no second failure lies on
 * the same line (within 10%), since a request that failed just past the
 * device's end says nothing about how far past the boundary its batch was.
 * (Illinois' halving of the kept end's value was tried here and cost runs:
 * the lower bounds already understate, so halving lo's room overshoots
 * back; the last-eighth rule and search_step's halving rule guard against
 * creeping instead.) */
static int64_t interpolate(const struct gt_sweep_plan *s)
{
    int64_t at_lo = s->lo ? value_at(s, s->lo, 0) : -1;
    if (s->available < 0 || at_lo < 0 || at_lo > s->available)
        return 0;   /* (lo's peak past the available bytes: they are understated, and say nothing) */
    double room = (double)(s->available - at_lo), s1 = 0, s2 = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (!p->oom || p->batch_size <= s->lo || p->peak <= s->available)
            continue;
        double slope = (double)(p->peak - at_lo) / (double)(p->batch_size - s->lo);
        if (slope > s1) {
            s2 = s1;
            s1 = slope;
        } else if (slope > s2) {
            s2 = slope;
        }
    }
    if (!(s1 > 0))
        return 0;
    double c = (double)s->lo + floor(room / s1);
    int64_t w = s->hi - s->lo, near_hi = s->hi - (w / 8 > 1 ? w / 8 : 1);
    if (c >= (double)near_hi && s2 < 0.9 * s1)
        return 0;
    return c >= (double)s->hi ? s->hi - 1 : (int64_t)c;
}

/* The line through the two largest batch sizes that fit below hi (their
 * highest peaks), once the largest is a search run: near the boundary the
 * local slope is what tells how far lo is from it, not a fit that small
 * batch sizes dominate (today's transformer on an H100: the fit over 4..16
 * over-stated 136's peak by 11%; the line through 16 and 136 held 146..150
 * within 0.1%). 0 when there is none (its slope must be positive). */
static int secant(const struct gt_sweep_plan *s, struct gt_linfit *line)
{
    if (!s->lo || s->lo <= s->model_top || s->available < 0)
        return 0;
    int64_t below = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->pts[i].oom && s->pts[i].batch_size < s->lo && s->pts[i].batch_size > below)
            below = s->pts[i].batch_size;
    int64_t y1 = value_at(s, s->lo, 0), y0 = below ? value_at(s, below, 0) : -1;
    /* a peak within 1/16 of the bytes available shows what a caching
     * allocator kept (and what workspaces cuDNN chose with the memory left),
     * not the batch's need: today's conv net on an H100 peaked at 75.23 GiB
     * at 133 and 78.36 at 178, a line that foretold nothing. Under a pool
     * read, the bytes in use say whether lo's run was held back by the end
     * of the device: its reservation is in use and a few percent of slack
     * (a transformer on an H200: 252 reserved 130.56 GiB, 94.3% of the 138.4
     * available, with 125.43 in use; the line through 4 and 252 pointed at
     * 268, where 269 was the end, and without it the sweep spent four
     * failures finding a bracket) */
    int64_t use = y1;
    for (size_t i = 0; i < s->n; i++)
        if (!s->pts[i].oom && s->pts[i].batch_size == s->lo && s->pts[i].in_use > 0 && s->pts[i].in_use < use)
            use = s->pts[i].in_use;
    if (y0 < 0 || y1 <= y0 || use > s->available - s->available / 16)
        return 0;
    /* the line before it, through two search runs that fit, had a slope
     * more than twice or under half of this one's: the peak is no line
     * near the boundary, and neither line says where it is (XLA plans its
     * buffers against the device: a JAX MLP on an H200 grew 0.93 MB a
     * sample from 3944 to 5472, then 14.6 MB to 6788) */
    int64_t below2 = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->pts[i].oom && s->pts[i].batch_size < below && s->pts[i].batch_size > below2)
            below2 = s->pts[i].batch_size;
    if (below2 > s->model_top && below - below2 >= s->lo / 16 && s->lo - below >= s->lo / 16) {
        /* (runs close together near the boundary differ by an allocator's
         * rounding: their slope is noise) */
        double now = (double)(y1 - y0) / (double)(s->lo - below),
               before = (double)(y0 - value_at(s, below2, 0)) / (double)(below - below2);
        if (before > 2 * now || now > 2 * before)
            return 0;
    }
    memset(line, 0, sizeof *line);
    line->ok = 1;
    line->slope = (double)(y1 - y0) / (double)(s->lo - below);
    line->intercept = (double)y1 - line->slope * (double)s->lo;
    return 1;
}

/* Under a pool read, lo's reservation (at_lo) in the last sixteenth of the
 * bytes available, and a share of its bytes in use more than a point above
 * the share of the largest run that fit below it: the pool there held what
 * the device had left, not what the batch needed, and when the model
 * through it then sees no room past lo it says nothing of the boundary (the
 * conv net on an H200: 251 reserved 14.3% beyond its in use, 259 137.84 GiB,
 * 21.4%, 260 130.44, 261 137.69; the secant through 251 and 259 saw no
 * room, and the search stepped 260, 261, 262, 263, 265: 20 runs in all).
 * Bisection instead. (A pool that holds its usual share is believed: where
 * its need is exactly linear, one past lo is the boundary's likely place;
 * and a model that sees room is followed: the transformer's 254 reserved
 * 130.66 GiB of 138.03, and the secant through 4 and 254 pointed at 268,
 * one past the largest that fit every time.) */
static int pool_end(const struct gt_sweep_plan *s, int64_t at_lo)
{
    if (s->available <= 0 || at_lo <= s->available - s->available / 16)
        return 0;
    int64_t use = -1, below = 0;
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (p->oom || p->in_use <= 0)
            continue;
        if (p->batch_size == s->lo && p->peak == at_lo)
            use = p->in_use;
        else if (p->batch_size < s->lo && p->batch_size > below)
            below = p->batch_size;
    }
    if (use <= 0 || !below)
        return 0;
    double share = (double)(at_lo - use) / (double)use, share_below = -1;
    for (size_t i = 0; i < s->n; i++) {
        const struct gt_sweep_point *p = &s->pts[i];
        if (!p->oom && p->batch_size == below && p->in_use > 0 && p->peak >= p->in_use) {
            double r = (double)(p->peak - p->in_use) / (double)p->in_use;
            if (share_below < 0 || r < share_below)
                share_below = r;
        }
    }
    return share_below >= 0 && share > share_below + 0.01;
}

/* Did lo's last run come after hi's failure (a line through lo that hi's
 * failure has not tested)? */
static int newer_than_hi(const struct gt_sweep_plan *s)
{
    size_t at_lo = 0, at_hi = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (!s->pts[i].oom && s->pts[i].batch_size == s->lo)
            at_lo = i + 1;
        if (s->pts[i].oom && s->pts[i].batch_size == s->hi)
            at_hi = i + 1;
    }
    return at_lo > at_hi;
}

/* How far past lo a search with no failure yet reaches once the model got
 * a peak wrong: half of lo after one miss, then lo, 2 lo, 4 lo, ... */
static int64_t reach(const struct gt_sweep_plan *s)
{
    return s->blind <= 1 ? s->lo / 2 : s->lo << (s->blind - 2 < 30 ? s->blind - 2 : 30);
}

/* Phase 2's next batch size (see sweep.h), or 0. */
static int64_t search_step(struct gt_sweep_plan *s, int *from_model)
{
    struct gt_sweep_fit f;
    gt_sweep_plan_fit(s, &f);
    int sec = secant(s, &f.fit);
    int64_t pred = gt_sweep_predict(&f, s->available), c;
    int kind = 0;
    /* lo's peak in the device's last sixteenth, the model seeing no room
     * past lo, and its step of one past lo fit: a stream-ordered pool's
     * reservation (or a caching allocator's segments) there shows what it
     * could hold, not the batch's need, and the model through it would find
     * the end one run at a time (the conv net under cudaMallocAsync on an
     * H100: 84.12 GB reserved at 157 and at every size up to 166, while in
     * use grew 448.75 MiB a sample; the sweep stepped 157, 158, 159, 160,
     * 164, 328: 15 runs). An exactly linear peak's lo + 1 fails instead. */
    int64_t at_lo = s->lo ? value_at(s, s->lo, 0) : -1;
    int full = s->available > 0 && at_lo > s->available - s->available / 16 && pred <= s->lo + 1 &&
               s->crept_to && s->crept_to == s->lo;   /* ...and the model's lo + 1 (or this walk's step) fit */
    s->crept_to = 0;
    if (s->hi == GT_SWEEP_NONE) {
        if (full) {
            /* its peaks tell no more (see full): walk up, 4, 16, 64 ...
             * past lo (a step of one would find the end one run at a time) */
            if (s->step < 4)
                s->step = 4;
            c = s->lo + s->step;
            if (s->step < GT_SWEEP_MAX_BS)
                s->step *= 4;
            s->crept_to = c;   /* (while each fits, the walk goes on) */
        } else if (pred < 0) {
            c = s->lo ? 2 * s->lo : 1;   /* no model: double */
        } else if (s->dir > 0) {
            c = s->lo + s->step;   /* the model's last step fit past its prediction: walk up */
            if (s->step < GT_SWEEP_MAX_BS)
                s->step *= 4;
        } else if (!s->searched || s->foretold || (sec && !s->last_sec)) {
            /* the model has been right, or the secant is new: follow it
             * (after two peaks it got wrong, no further than the reach
             * below) */
            c = pred > s->lo ? pred : s->lo + 1;
            if (s->blind >= 2 && c - s->lo > reach(s))
                c = s->lo + reach(s);
            kind = 1;
            if (c == s->lo + 1)
                s->crept_to = c;
        } else {
            /* the model got the last peak wrong: reach well past lo, further
             * each time, to find a failure that brackets the boundary */
            int64_t far = reach(s);
            c = s->lo + (far > 1 ? far : 1);
            /* a model that got two peaks wrong is not followed past the
             * reach: XLA plans its buffers against the device, and the
             * secant through 3944 and 5472 (100.63 and 101.99 GiB) pointed
             * at 47601, where the boundary was 7548 (a JAX MLP on an H200) */
            if (pred > c && s->blind < 2) {
                c = pred;
                kind = 1;
            }
        }
    } else {
        int64_t mid = s->lo + (s->hi - s->lo) / 2;
        int model = pred >= s->lo && pred < s->hi && (s->trust || s->recalibrated) && s->foretold;
        int64_t rf = interpolate(s);
        if (rf && s->dir < 0)
            s->dir = 0;   /* hi's need is known far past the device: the model was not a little off */
        if (rf && rf < s->hi - 1)
            s->band_step = 0;   /* ...and a band's failure then says where the device ends (it shrank);
                                 * one that says only "just below hi" does not: the walk goes on (the
                                 * conv net on an H200: after the margin's 269 failed, 268 and 267 by
                                 * regula falsi, then 135 from lo = 4, before 266) */
        /* a model step one below a failure that failed says no more than
         * the failure did (under cudaMallocAsync a failure's lower bound
         * lies on the in-use line, so each lowers the bytes available by
         * one sample): no second such step before one fits, unless a
         * bisection has fit since, the failure lowered no bytes available,
         * and the secant through the new lo points at hi or just past it
         * (within an eighth of the bracket): a new line that agrees with
         * the failure. Today's transformer on an H100 bisected five times
         * more after the secant through 88 and 119 pointed at 150, the
         * largest that fit; a secant far past hi is one a step in the
         * per-sample cost made too shallow, and hi - 1 would creep */
        int64_t w = s->hi - s->lo;
        int renewed = s->creep == 2 && sec && pred >= s->hi - 1 && pred < s->hi + (w / 8 > 1 ? w / 8 : 1);
        int creep = s->creep && !renewed && (pred >= s->hi - 1 || (sec && pred >= s->lo && pred == s->hi - 1));
        if (s->band_step) {
            c = s->hi - s->band_step;   /* one below the band's failure, then 2, 4, ... below each next one */
            if (c <= mid) {
                c = mid;
                s->band_step = 0;
            } else {
                s->band_step *= 2;
            }
        } else if (creep || (pred >= 0 && pred <= s->lo + 1 && pool_end(s, at_lo))) {
            c = mid;
        } else if (sec && pred >= s->lo && (pred < s->hi + (w / 8 > 1 ? w / 8 : 1) || newer_than_hi(s)) &&
                   (s->trust || !s->last_sec || s->model_fails == 1)) {
            /* the secant from the fitting side; where it points at or past
             * hi, one below hi (not where it points far past hi and hi's
             * failure came after lo's run, refuting the line: after XLA
             * refused 47601, the secant that had chosen it made 47600 the
             * next run; a line through a newer lo is worth one run below
             * hi) */
            c = pred == s->lo ? s->lo + 1 : pred >= s->hi ? s->hi - 1 : pred;
            kind = 1;
        } else if (model) {
            s->recalibrated = 0;
            c = pred == s->lo ? s->lo + 1 : pred;
            kind = 1;
        } else if (s->dir < 0) {
            c = s->hi - s->step;   /* the model asked too much: walk down from hi, further each time */
            s->step *= 4;
            if (c <= mid) {
                c = mid;
                s->dir = 0;
            }
        } else if (s->dir > 0) {
            c = s->lo + s->step;   /* the model asked too little: walk up from lo */
            if (s->step < GT_SWEEP_MAX_BS)
                s->step *= 4;
            if (c >= mid) {
                c = mid;
                s->dir = 0;
            }
        } else if (rf && !(s->last_kind && s->prev_kind && s->width2 && s->hi - s->lo > s->width2 / 2)) {
            /* (two model or regula falsi steps that did not halve the
             * bracket between them get a bisection instead) */
            c = rf <= s->lo ? s->lo + 1 : rf >= s->hi ? s->hi - 1 : rf;
            kind = 2;
        } else {
            c = mid;   /* bisect */
        }
    }
    if (c > GT_SWEEP_MAX_BS)
        c = GT_SWEEP_MAX_BS;
    if (c <= s->lo)
        return 0;
    s->expected_peak = f.fit.ok && f.fit.slope > 0 ? (int64_t)(f.fit.intercept + f.fit.slope * (double)c) : -1;
    s->prev_kind = s->last_kind;
    s->last_kind = kind;
    s->last_sec = sec && kind == 1;
    s->last_pred = pred;
    *from_model = kind != 0;
    return c;
}

int64_t gt_sweep_plan_next(struct gt_sweep_plan *s, enum gt_sweep_phase *phase, int *from_model)
{
    int model = 0;
    int64_t c = 0;
    enum gt_sweep_phase ph = GT_SWEEP_MODEL;
    while (s->next_model < s->n_model && s->hi == GT_SWEEP_NONE && !c)
        c = s->model_bs[s->next_model++];
    if (c) {
        ph = GT_SWEEP_MODEL;
        if (c > s->model_top)
            s->model_top = c;
    } else if (s->hi != GT_SWEEP_NONE && s->hi - s->lo <= 1) {
        if (s->lo && gt_sweep_plan_fits_at(s, s->lo) < s->fits_needed) {
            c = s->lo;
            ph = GT_SWEEP_REPEAT;
        } else {
            if (s->lo)
                gt_sweep_plan_take_margin(s);
            if (!s->settle || gt_sweep_plan_fits_at(s, s->settle) >= s->fits_needed)
                return 0;
            c = s->settle;
            ph = GT_SWEEP_MARGIN;
        }
    } else if (s->lo < GT_SWEEP_MAX_BS) {
        c = search_step(s, &model);
        ph = GT_SWEEP_SEARCH;
    }
    if (!c)
        return 0;
    s->proposed = c;
    s->proposed_phase = ph;
    if (phase)
        *phase = ph;
    if (from_model)
        *from_model = model;
    return c;
}
