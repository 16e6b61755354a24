/* sweep_fit.c - gputrace sweep's model (see sweep.h): peak = fixed +
 * per_sample x batch over the runs that fit, the largest batch it predicts
 * for the bytes available, and whether the line holds every point (when it
 * does not, it is fitted over the largest points it holds). Pure arithmetic,
 * tested in tests/unit/test_sweep_plan.c. */
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
