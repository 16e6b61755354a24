/* fit.h - the statistics the reports need: least-squares line with R^2 (peak
 * vs batch size), Theil-Sen robust slope (growth per iteration), medians. */
#ifndef GT_FIT_H
#define GT_FIT_H
#include <stddef.h>

struct gt_linfit {
    double intercept, slope, r2;
    int ok;          /* 0: fewer than 2 distinct x values, no fit */
};

/* Ordinary least squares y = intercept + slope * x over n points. R^2 is 1
 * when the residuals are all zero (including a constant y). */
struct gt_linfit gt_least_squares(const double *x, const double *y, size_t n);

/* Theil-Sen estimator: the median of the slopes between all pairs of points
 * with distinct x. Beyond max_points points an evenly spaced subsample is used
 * (keeps the cost O(max_points^2)). *intercept (optional) gets the median of
 * y - slope*x over all points. Returns 0 with fewer than 2 points. */
double gt_theil_sen(const double *x, const double *y, size_t n, size_t max_points, double *intercept);

/* Median of v[0..n) (v is reordered). 0 for n == 0. */
double gt_median(double *v, size_t n);

#endif
