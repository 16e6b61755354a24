/* Unit tests of the analyzer's statistics (analyzer/fit.c): least squares
 * recovers an exact line (also at the magnitudes of real peaks and batch
 * sizes), its R^2 on known data, and its degenerate inputs (no point, one
 * point, identical x, constant y); Theil-Sen's slope ignores an outlier and
 * subsamples without bias; the median of odd, even and repeated values. */
#include <math.h>
#include <stdlib.h>

#include "fit.h"
#include "tap.h"

static int close_to(double got, double want, double rel)
{
    return fabs(got - want) <= rel * fmax(1.0, fabs(want));
}

#define CHECK_NEAR(got, want, rel) \
    CHECKF(close_to((got), (want), (rel)), "%s = %.17g, expected %.17g", #got, (double)(got), (double)(want))

static void test_least_squares_recovers_an_exact_line(void)
{
    double x[10], y[10];
    for (int i = 0; i < 10; i++) {
        x[i] = i + 1;
        y[i] = 3 + 2 * x[i];
    }
    struct gt_linfit f = gt_least_squares(x, y, 10);
    CHECK(f.ok);
    CHECK_NEAR(f.slope, 2, 1e-12);
    CHECK_NEAR(f.intercept, 3, 1e-12);
    CHECK(f.r2 == 1.0);
}

static void test_least_squares_exact_at_peak_and_batch_size_magnitudes(void)
{
    /* peak = 1.5 GiB + 12 MiB per sample, batch sizes 8..512 */
    double x[7] = {8, 16, 32, 64, 128, 256, 512}, y[7];
    for (int i = 0; i < 7; i++)
        y[i] = 1610612736.0 + 12582912.0 * x[i];
    struct gt_linfit f = gt_least_squares(x, y, 7);
    CHECK(f.ok);
    CHECK_NEAR(f.slope, 12582912.0, 1e-12);
    CHECK_NEAR(f.intercept, 1610612736.0, 1e-12);
    CHECKF(f.r2 == 1.0, "r2 = %.17g: rounding of exact data must still give 1", f.r2);
}

static void test_least_squares_r2_of_scattered_points(void)
{
    /* (1,1) (2,3) (3,2): slope 1/2, intercept 1, residuals -1/2, 1, -1/2:
     * SSR 3/2 of total 2, R^2 = 1/4 */
    double x[3] = {1, 2, 3}, y[3] = {1, 3, 2};
    struct gt_linfit f = gt_least_squares(x, y, 3);
    CHECK(f.ok);
    CHECK_NEAR(f.slope, 0.5, 1e-12);
    CHECK_NEAR(f.intercept, 1, 1e-12);
    CHECK_NEAR(f.r2, 0.25, 1e-12);
    /* anti-correlated points fit a falling line just as well */
    double yd[3] = {6, 4, 2};
    f = gt_least_squares(x, yd, 3);
    CHECK_NEAR(f.slope, -2, 1e-12);
    CHECK_NEAR(f.intercept, 8, 1e-12);
    CHECK(f.r2 == 1.0);
    /* no relation at all: R^2 0 */
    double xs[4] = {1, 2, 3, 4}, ys[4] = {1, 2, 2, 1};
    f = gt_least_squares(xs, ys, 4);
    CHECK(f.ok);
    CHECK_NEAR(f.slope, 0, 1e-12);
    CHECK_NEAR(f.r2, 0, 1e-12);
}

static void test_least_squares_degenerate_inputs_give_no_fit(void)
{
    double x[4] = {64, 64, 64, 64}, y[4] = {1, 2, 3, 4};
    struct gt_linfit f = gt_least_squares(x, y, 0);
    CHECK(!f.ok);
    f = gt_least_squares(x, y, 1);
    CHECK(!f.ok);
    CHECK(f.slope == 0 && f.intercept == 0 && f.r2 == 0);
    f = gt_least_squares(x, y, 4); /* one batch size only: no line through it */
    CHECK(!f.ok);
    CHECK(!isnan(f.slope) && !isnan(f.intercept) && !isnan(f.r2));
    double x2[2] = {8, 16}, y2[2] = {100, 200};
    f = gt_least_squares(x2, y2, 2); /* two points make a line */
    CHECK(f.ok);
    CHECK_NEAR(f.slope, 12.5, 1e-12);
    CHECK_NEAR(f.intercept, 0, 1e-12);
}

static void test_least_squares_constant_y_is_a_flat_perfect_fit(void)
{
    double x[5] = {1, 2, 3, 4, 5}, y[5] = {7, 7, 7, 7, 7};
    struct gt_linfit f = gt_least_squares(x, y, 5);
    CHECK(f.ok);
    CHECK(f.slope == 0);
    CHECK_NEAR(f.intercept, 7, 1e-12);
    CHECK(f.r2 == 1.0); /* documented: all residuals zero */
}

static void test_theil_sen_ignores_one_outlier(void)
{
    double x[20], y[20];
    for (int i = 0; i < 20; i++) {
        x[i] = i;
        y[i] = 1000 + 64 * i;
    }
    y[13] += 1e9; /* a checkpoint's iteration */
    double b = 0, s = gt_theil_sen(x, y, 20, 200, &b);
    CHECK_NEAR(s, 64, 1e-12);
    CHECK_NEAR(b, 1000, 1e-12);
    struct gt_linfit f = gt_least_squares(x, y, 20);
    CHECKF(fabs(f.slope - 64) > 1, "least squares slope %.3f: the outlier should pull it", f.slope);
}

static void test_theil_sen_subsample_of_a_long_line_is_exact(void)
{
    enum { N = 5000 };
    static double x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = i;
        y[i] = -3.5 * i + 42;
    }
    double b = 0;
    CHECK_NEAR(gt_theil_sen(x, y, N, 50, &b), -3.5, 1e-12);
    CHECK_NEAR(b, 42, 1e-9);
}

static void test_theil_sen_degenerate_inputs(void)
{
    double x[3] = {5, 5, 5}, y[3] = {1, 2, 3}, b = -1;
    CHECK(gt_theil_sen(x, y, 0, 100, &b) == 0);
    CHECK(b == 0);
    CHECK(gt_theil_sen(x, y, 1, 100, &b) == 0);
    CHECK(b == 1); /* one point: its y */
    CHECK(gt_theil_sen(x, y, 3, 100, NULL) == 0); /* identical x: no slope */
    CHECK(gt_theil_sen(x, y, 3, 100, &b) == 0);
    CHECK(b == 2);
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static void test_median_of_odd_even_and_repeated_values(void)
{
    double none[1] = {0};
    CHECK(gt_median(none, 0) == 0);
    double one[1] = {4};
    CHECK(gt_median(one, 1) == 4);
    double odd[5] = {9, 1, 5, 3, 7};
    CHECK(gt_median(odd, 5) == 5);
    double even[4] = {10, 2, 8, 4};
    CHECK(gt_median(even, 4) == 6);
    double same[6] = {2, 2, 2, 2, 2, 2};
    CHECK(gt_median(same, 6) == 2);
    /* random arrays against sorting */
    unsigned seed = 12345;
    for (int round = 0; round < 2000; round++) {
        size_t n = 1 + (size_t)(round % 37);
        double v[37], s[37];
        for (size_t i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            v[i] = s[i] = (double)((seed >> 16) % 9); /* many repeats */
        }
        qsort(s, n, sizeof *s, cmp_double);
        double want = n % 2 ? s[n / 2] : (s[n / 2 - 1] + s[n / 2]) / 2;
        double got = gt_median(v, n);
        CHECKF(got == want, "round %d, n %zu: median %g, expected %g", round, n, got, want);
    }
}

int main(void)
{
    TAP_RUN(test_least_squares_recovers_an_exact_line);
    TAP_RUN(test_least_squares_exact_at_peak_and_batch_size_magnitudes);
    TAP_RUN(test_least_squares_r2_of_scattered_points);
    TAP_RUN(test_least_squares_degenerate_inputs_give_no_fit);
    TAP_RUN(test_least_squares_constant_y_is_a_flat_perfect_fit);
    TAP_RUN(test_theil_sen_ignores_one_outlier);
    TAP_RUN(test_theil_sen_subsample_of_a_long_line_is_exact);
    TAP_RUN(test_theil_sen_degenerate_inputs);
    TAP_RUN(test_median_of_odd_even_and_repeated_values);
    return tap_done();
}
