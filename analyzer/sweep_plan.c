/* sweep_plan.c - gputrace sweep's model and search (see sweep.h): the fit of
 * peak against batch size over the runs that fit, its prediction, and the
 * next batch size to run. Nothing here runs or reads anything, so every
 * decision can be tested against a made-up device (tests/unit). */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "sweep.h"

#define MIB (1024.0 * 1024.0)

static int by_batch(const void *a, const void *b)
{
    const struct gt_sweep_point *x = a, *y = b;
    return (x->batch_size > y->batch_size) - (x->batch_size < y->batch_size);
}

/* Least squares over pts[from..n); the largest |residual| in *resid. */
static struct gt_linfit fit_range(const struct gt_sweep_point *pts, size_t from, size_t n, double *resid)
{
    size_t m = n - from;
    double *x = gt_xmalloc((m + 1) * sizeof *x), *y = gt_xmalloc((m + 1) * sizeof *y);
    for (size_t i = 0; i < m; i++) {
        x[i] = (double)pts[from + i].batch_size;
        y[i] = (double)pts[from + i].peak;
    }
    struct gt_linfit f = gt_least_squares(x, y, m);
    *resid = 0;
    for (size_t i = 0; f.ok && i < m; i++) {
        double r = fabs(y[i] - (f.intercept + f.slope * x[i]));
        if (r > *resid)
            *resid = r;
    }
    free(x);
    free(y);
    return f;
}

/* Does line f hold pts[from..n): each within max(1 MiB, 1% of its peak)? */
static int holds(const struct gt_linfit *f, const struct gt_sweep_point *pts, size_t from, size_t n)
{
    for (size_t i = from; i < n; i++) {
        double y = (double)pts[i].peak, r = fabs(y - (f->intercept + f->slope * (double)pts[i].batch_size));
        if (r > fmax(MIB, 0.01 * y))
            return 0;
    }
    return 1;
}

void gt_sweep_fit_points(const struct gt_sweep_point *p, size_t n, struct gt_sweep_fit *f)
{
    memset(f, 0, sizeof *f);
    f->linear = 1;
    struct gt_sweep_point *pts = gt_xmalloc((n + 1) * sizeof *pts);
    size_t m = 0;
    for (size_t i = 0; i < n; i++)
        if (!p[i].oom)
            pts[m++] = p[i];
    gt_qsort(pts, m, sizeof *pts, by_batch);
    size_t k = 0;   /* one point per batch size: its highest peak */
    for (size_t i = 0; i < m; i++) {
        if (k && pts[k - 1].batch_size == pts[i].batch_size) {
            if (pts[i].peak > pts[k - 1].peak)
                pts[k - 1].peak = pts[i].peak;
        } else {
            pts[k++] = pts[i];
        }
    }
    f->points = f->used = k;
    if (k) {
        f->from_bs = pts[0].batch_size;
        f->to_bs = pts[k - 1].batch_size;
    }
    if (k < 2) {
        free(pts);
        return;
    }
    double resid;
    f->fit = fit_range(pts, 0, k, &resid);
    f->max_residual = resid;
    f->linear = holds(&f->fit, pts, 0, k);
    size_t from = 0;
    while (!holds(&f->fit, pts, from, k) && k - from > 2)
        f->fit = fit_range(pts, ++from, k, &resid);
    f->used = k - from;
    f->from_bs = pts[from].batch_size;
    free(pts);
}

int64_t gt_sweep_predict(const struct gt_sweep_fit *f, int64_t available)
{
    if (!f->fit.ok || !(f->fit.slope > 0) || available < 0)
        return -1;
    double room = ((double)available - f->fit.intercept) / f->fit.slope;
    if (room < 1)
        return 0;
    if (room >= (double)GT_SWEEP_MAX_BS)
        return GT_SWEEP_MAX_BS;
    /* tolerance: an exact fit may land a hair below an integer */
    return (int64_t)floor(room + 1e-9 * room);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

void gt_sweep_plan_init(struct gt_sweep_plan *s, const int64_t *sizes, size_t n)
{
    static const int64_t dflt[] = {1, 2, 4, 8};
    memset(s, 0, sizeof *s);
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
    s->trust = 1;
    s->step = 1;
    s->last_pred = -1;
}

void gt_sweep_plan_free(struct gt_sweep_plan *s)
{
    free(s->model_bs);
    free(s->pts);
    memset(s, 0, sizeof *s);
}

void gt_sweep_plan_fit(const struct gt_sweep_plan *s, struct gt_sweep_fit *f)
{
    gt_sweep_fit_points(s->pts, s->n, f);
}

void gt_sweep_plan_add(struct gt_sweep_plan *s, int64_t batch_size, int oom, int64_t peak)
{
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 16;
        s->pts = gt_xrealloc(s->pts, s->cap * sizeof *s->pts);
    }
    s->pts[s->n++] = (struct gt_sweep_point){batch_size, oom != 0, peak};
    if (oom && batch_size < s->hi)
        s->hi = batch_size;
    /* lo: the largest batch that ran below hi (a batch that ran once and
     * failed on its second run counts as failed) */
    s->lo = 0;
    for (size_t i = 0; i < s->n; i++)
        if (!s->pts[i].oom && s->pts[i].batch_size < s->hi && s->pts[i].batch_size > s->lo)
            s->lo = s->pts[i].batch_size;
    if (batch_size != s->proposed)
        return;
    s->proposed = 0;
    if (s->proposed_phase == GT_SWEEP_REPEAT && !oom)
        s->repeated = batch_size;
    if (s->proposed_phase != GT_SWEEP_SEARCH)
        return;
    if (s->last_model) {
        /* a model step is judged: the model said batch_size fits iff it is at
         * most its prediction. When it was wrong, the next steps walk from
         * the side it got wrong, 1, 2, 4, ... away, until a run lands on
         * the other side of the boundary */
        s->trust = (batch_size <= s->last_pred) == !oom;
        s->dir = s->trust ? 0 : oom ? -1 : 1;
        s->step = 1;
    } else {
        s->trust = 1;   /* a step without the model gives it a new chance */
        if ((s->dir < 0 && !oom) || (s->dir > 0 && oom))
            s->dir = 0;   /* the walk crossed the boundary: bisect from here */
    }
}

void gt_sweep_plan_lower_available(struct gt_sweep_plan *s, int64_t available)
{
    if (s->available >= 0 && available >= s->available)
        return;
    s->available = available;
    if (!s->recalibrations++)
        s->recalibrated = 1;
}

int gt_sweep_plan_verified(const struct gt_sweep_plan *s)
{
    return s->hi != GT_SWEEP_NONE && s->hi - s->lo == 1 && (s->lo == 0 || s->repeated == s->lo);
}

/* Phase 2's next batch size (see sweep.h), or 0. */
static int64_t search_step(struct gt_sweep_plan *s, int *from_model)
{
    struct gt_sweep_fit f;
    gt_sweep_plan_fit(s, &f);
    int64_t pred = gt_sweep_predict(&f, s->available), c;
    int64_t mid = s->hi == GT_SWEEP_NONE ? 0 : s->lo + (s->hi - s->lo) / 2;
    /* the model is followed only where no run has refuted it (it says lo
     * fits and hi does not) and its last step was right */
    int model = pred >= s->lo && pred < s->hi && (s->trust || s->recalibrated);
    if (model) {
        s->recalibrated = 0;
        c = pred == s->lo ? s->lo + 1 : pred;
    } else if (s->dir < 0 && s->hi != GT_SWEEP_NONE) {
        c = s->hi - s->step;   /* the model asked too much: walk down from hi, further each time */
        s->step *= 4;
        if (c <= mid) {
            c = mid;
            s->dir = 0;
        }
    } else if (s->dir > 0 || (s->hi == GT_SWEEP_NONE && pred >= 0)) {
        c = s->lo + s->step;   /* the model asked too little: walk up from lo */
        if (s->step < GT_SWEEP_MAX_BS)
            s->step *= 4;
        if (s->hi != GT_SWEEP_NONE && c >= s->hi) {
            c = mid;
            s->dir = 0;
        }
    } else if (s->hi != GT_SWEEP_NONE) {
        c = mid;                         /* bisect */
    } else {
        c = s->lo ? 2 * s->lo : 1;       /* no model: double */
    }
    if (c > GT_SWEEP_MAX_BS)
        c = GT_SWEEP_MAX_BS;
    if (c <= s->lo)
        return 0;
    s->last_model = model;
    s->last_pred = pred;
    *from_model = model;
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
    } else if (s->hi != GT_SWEEP_NONE && s->hi - s->lo <= 1) {
        if (s->lo == 0 || s->repeated == s->lo)
            return 0;
        c = s->lo;
        ph = GT_SWEEP_REPEAT;
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
