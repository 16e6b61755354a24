/* fit.c - least squares, Theil-Sen and medians (see fit.h). Theil-Sen is used
 * for growth because one odd iteration (a checkpoint, an eval pass, the
 * process tearing down) must not change the verdict: it tolerates up to ~29%
 * outlying points, where least squares is pulled by a single one. */
#include <math.h>
#include <stdlib.h>

#include "fit.h"
#include "format.h"

struct gt_linfit gt_least_squares(const double *x, const double *y, size_t n)
{
    struct gt_linfit f = {0, 0, 0, 0};
    if (n < 2)
        return f;
    double mx = 0, my = 0;
    for (size_t i = 0; i < n; i++) {
        mx += x[i];
        my += y[i];
    }
    mx /= (double)n;
    my /= (double)n;
    double sxx = 0, sxy = 0, syy = 0;
    for (size_t i = 0; i < n; i++) {
        double dx = x[i] - mx, dy = y[i] - my;
        sxx += dx * dx;
        sxy += dx * dy;
        syy += dy * dy;
    }
    if (sxx <= 0)
        return f;
    f.slope = sxy / sxx;
    f.intercept = my - f.slope * mx;
    double ssr = 0;
    for (size_t i = 0; i < n; i++) {
        double r = y[i] - (f.intercept + f.slope * x[i]);
        ssr += r * r;
    }
    /* relative tolerance: exact data leaves rounding-level residuals */
    if (syy <= 0 || ssr <= 1e-18 * syy)
        f.r2 = 1.0;
    else
        f.r2 = 1.0 - ssr / syy;
    f.ok = 1;
    return f;
}

/* Wirth's selection: the k-th smallest of v[0..n), v reordered so that
 * v[k] holds it. Signed indices: j may step below 0. */
static double select_kth(double *v, size_t n, size_t kk)
{
    long l = 0, m = (long)n - 1, k = (long)kk;
    while (l < m) {
        double x = v[k];
        long i = l, j = m;
        do {
            while (v[i] < x)
                i++;
            while (x < v[j])
                j--;
            if (i <= j) {
                double t = v[i];
                v[i] = v[j];
                v[j] = t;
                i++;
                j--;
            }
        } while (i <= j);
        if (j < k)
            l = i;
        if (k < i)
            m = j;
    }
    return v[k];
}

double gt_median(double *v, size_t n)
{
    if (n == 0)
        return 0;
    double hi = select_kth(v, n, n / 2);
    if (n % 2)
        return hi;
    /* the lower middle is the largest of the elements left of n/2 */
    double lo = v[0];
    for (size_t i = 1; i < n / 2; i++)
        if (v[i] > lo)
            lo = v[i];
    return (lo + hi) / 2;
}

double gt_theil_sen(const double *x, const double *y, size_t n, size_t max_points, double *intercept)
{
    if (intercept)
        *intercept = n ? y[0] : 0;
    if (n < 2)
        return 0;
    size_t m = n > max_points && max_points >= 2 ? max_points : n;
    size_t *pick = gt_xmalloc(m * sizeof *pick);
    for (size_t i = 0; i < m; i++)
        pick[i] = m == n ? i : (size_t)((double)i * (double)(n - 1) / (double)(m - 1) + 0.5);
    double *slopes = gt_xmalloc((m * (m - 1) / 2 + 1) * sizeof *slopes);
    size_t ns = 0;
    for (size_t a = 0; a < m; a++)
        for (size_t b = a + 1; b < m; b++) {
            double dx = x[pick[b]] - x[pick[a]];
            if (dx != 0)
                slopes[ns++] = (y[pick[b]] - y[pick[a]]) / dx;
        }
    double slope = gt_median(slopes, ns);
    free(slopes);
    free(pick);
    if (intercept) {
        double *r = gt_xmalloc(n * sizeof *r);
        for (size_t i = 0; i < n; i++)
            r[i] = y[i] - slope * x[i];
        *intercept = gt_median(r, n);
        free(r);
    }
    return slope;
}
