/* margin.c - `peak`'s margin for a stream-ordered pool: the pool's slack (its
 * reservation beyond the bytes in use) read at each traced batch size, fitted
 * as fixed + per_sample x batch_size like the peak itself, a safety term from
 * that model's residuals and the reservation's granularity, and the largest
 * batch whose predicted use, slack and safety fit in the room (room.c); and
 * the slack's report in `peak` (text and JSON). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "format.h"
#include "json.h"

/* The reservation grows by whole pages of the pool (2 MiB physical pages);
 * readings that all fall on a coarser power of two show a coarser step (a
 * driver that maps chunks), up to this. */
#define MIN_GRANULE ((int64_t)2 << 20)
#define MAX_GRANULE ((int64_t)1 << 30)
/* Standard deviations of the residuals in the safety term (beyond the
 * reservation's rounding): about a 95% bound for residuals roughly normal. */
#define SAFETY_SIGMAS 2.0

struct reading {
    int64_t t, reserved;
};

static int reading_cmp(const void *a, const void *b)
{
    const struct reading *x = a, *y = b;
    return (x->t > y->t) - (x->t < y->t);
}

/* Every reading of device d's pool reservation (the writer's, or CUPTI's
 * driver records), by time. Returns how many, or minus an exit status. */
static long readings_of(struct gt_trace *t, int d, struct reading **out)
{
    static const char *const sql[] = {
        "SELECT t_ns, size FROM memory_pools WHERE device = ?1 AND size IS NOT NULL",
        "SELECT t_ns, pool_size FROM driver_memory WHERE device = ?1 AND pool_size IS NOT NULL",
    };
    size_t n = 0, cap = 64;
    struct reading *r = gt_xmalloc(cap * sizeof *r);
    for (int q = 0; q < 2; q++) {
        sqlite3_stmt *st;
        int code = gt_trace_prepare_optional(t, sql[q], &st, "reading the pool's reservation");
        if (code) {
            free(r);
            return -code;
        }
        if (!st)
            continue;   /* a trace from before the table */
        sqlite3_bind_int64(st, 1, d);
        while (sqlite3_step(st) == SQLITE_ROW) {
            if (n == cap)
                r = gt_xrealloc(r, (cap *= 2) * sizeof *r);
            r[n].t = sqlite3_column_int64(st, 0);
            r[n++].reserved = sqlite3_column_int64(st, 1);
        }
        sqlite3_finalize(st);
    }
    gt_qsort(r, n, sizeof *r, reading_cmp);
    *out = r;
    return (long)n;
}

/* The largest reading in [from, to); -1 none. r is sorted by time. */
static int64_t largest_in(const struct reading *r, size_t nr, int64_t from, int64_t to)
{
    size_t lo = 0, hi = nr;
    while (lo < hi) {   /* the first reading at or after from */
        size_t mid = lo + (hi - lo) / 2;
        if (r[mid].t < from)
            lo = mid + 1;
        else
            hi = mid;
    }
    int64_t best = -1;
    for (size_t i = lo; i < nr && r[i].t < to; i++)
        if (r[i].reserved > best)
            best = r[i].reserved;
    return best;
}

double gt_slack_at(const struct gt_slack *s, double n)
{
    double v = s->fixed + s->per_sample * n;
    return v > 0 ? v : 0;
}

/* The safety term at batch size n, two parts:
 * - the reservation's rounding: each reading is the need rounded up to the
 *   step g, off by [0, g); the line through them, evaluated at n, is a sum
 *   w_i x reading_i with w_i = 1/k + (n - mean)(x_i - mean)/sxx, so the
 *   need's line can lie above it by up to g x (the sum of the negative w_i),
 *   and the reservation at n rounds up by up to one more g;
 * - what the residuals show beyond that rounding: SAFETY_SIGMAS deviations,
 *   widened as a prediction interval is with the distance from the sizes read. */
double gt_slack_safety(const struct gt_slack *s, double n)
{
    double k = (double)s->nread, d = n - s->xmean, below = 0;
    for (size_t b = 0; b < s->nbs; b++) {
        if (s->bs[b].reserved < 0)
            continue;
        double w = 1 / k + d * ((double)s->bs[b].batch_size - s->xmean) / s->sxx;
        if (w < 0)
            below -= w;
    }
    return (double)s->granularity * (1 + below) + SAFETY_SIGMAS * s->deviation * sqrt(1 + 1 / k + d * d / s->sxx);
}

int gt_slack_compute(struct gt_ctx *c, const struct gt_iterations *its, const struct gt_peak *pk, struct gt_slack *s)
{
    struct gt_trace *t = &c->t;
    memset(s, 0, sizeof *s);
    s->below = -1;
    if (!(pk->sel.mem_mask & GT_MASK(GT_MEM_POOL)) || !pk->nbs)
        return GT_EXIT_OK;
    struct reading *r = NULL;
    long nr = readings_of(t, pk->room.device, &r);
    if (nr < 0)
        return (int)-nr;
    s->read_at_all = nr > 0;
    s->pool_only = pk->sel.mem_mask == GT_MASK(GT_MEM_POOL);
    s->nbs = pk->nbs;
    s->bs = gt_xcalloc(pk->nbs + 1, sizeof *s->bs);
    for (size_t b = 0; b < pk->nbs; b++) {
        s->bs[b].batch_size = pk->bs[b].batch_size;
        s->bs[b].in_use = pk->bs[b].max_peak;
        s->bs[b].reserved = -1;
    }
    /* The reservation a batch size needed: the largest reading between its
     * peak and the start of the next iteration of another batch size (the
     * end of the trace after the last). A pool that keeps its memory reads
     * then at least what the batch size needed, and nothing of a larger one
     * yet. It reads what the highest peak so far needed: an iteration below
     * an earlier peak reads history, not itself, and is passed over. Per run
     * of iterations of one batch size, from its first that is no lower than
     * every earlier peak. */
    int64_t high = -1;
    for (size_t k = 0, end; k < its->n && nr > 0 && s->pool_only; k = end) {
        for (end = k + 1; end < its->n && its->it[end].batch_size == its->it[k].batch_size; end++)
            ;
        int64_t from = -1;
        for (size_t j = k; j < end; j++) {
            int usable = pk->w[j].peak >= high && !pk->incomplete[j] && pk->w[j].peak_ev != GT_NO_EVENT;
            if (pk->w[j].peak > high)
                high = pk->w[j].peak;
            if (usable && from < 0) {
                uint32_t pe = pk->w[j].peak_ev;
                from = pe + 1 < t->nev ? t->ev[pe + 1].t : t->ev[pe].t + 1;
            }
        }
        size_t b = 0;
        while (b < s->nbs && s->bs[b].batch_size != its->it[k].batch_size)
            b++;
        if (from < 0 || its->it[k].batch_size < 0 || b == s->nbs)
            continue;
        int64_t v = largest_in(r, (size_t)nr, from, end < its->n ? its->it[end].start : INT64_MAX);
        if (v > s->bs[b].reserved)
            s->bs[b].reserved = v;
    }
    /* the step of the reservation: the largest power of two every reading
     * (all of them: the more, the less a coarser step is one by chance)
     * falls on, from one 2 MiB page up */
    uint64_t steps = 0;
    for (long i = 0; i < nr; i++)
        steps |= (uint64_t)r[i].reserved;
    int64_t g = steps ? (int64_t)(steps & -steps) : MIN_GRANULE;
    s->granularity = g < MIN_GRANULE ? MIN_GRANULE : g > MAX_GRANULE ? MAX_GRANULE : g;
    free(r);
    /* per batch size read: x the batch size, y the slack, u the bytes in use */
    double *x = gt_xmalloc((s->nbs + 1) * sizeof *x), *y = gt_xmalloc((s->nbs + 1) * sizeof *y),
           *u = gt_xmalloc((s->nbs + 1) * sizeof *u);
    for (size_t b = 0; b < s->nbs; b++) {
        const struct gt_slack_bs *e = &s->bs[b];
        if (e->reserved < 0)
            continue;
        if (e->reserved < e->in_use && s->below < 0)
            s->below = e->batch_size;
        x[s->nread] = (double)e->batch_size;
        u[s->nread] = (double)e->in_use;
        y[s->nread++] = (double)(e->reserved - e->in_use);
    }
    if (s->nread >= 3) {
        s->fit = gt_least_squares(x, y, s->nread);
        s->fixed = s->fit.intercept;
        s->per_sample = s->fit.slope;
        if (s->fit.ok && s->per_sample < 0) {
            /* a slack that shrinks as the batch grows is not extrapolated:
             * the largest one read, at any batch size */
            s->slope_clamped = 1;
            s->per_sample = 0;
            s->fixed = y[0];
            for (size_t i = 1; i < s->nread; i++)
                s->fixed = y[i] > s->fixed ? y[i] : s->fixed;
        }
        /* the residuals of the reservation as the whole model predicts it
         * (peak line plus slack line), and the spread of the sizes read */
        double ssr = 0, mean = 0;
        for (size_t i = 0; i < s->nread; i++)
            mean += x[i] / (double)s->nread;
        for (size_t i = 0; i < s->nread; i++) {
            /* within one step, a residual is the reservation's rounding,
             * which the rounding part of the safety term covers */
            double e = fabs(u[i] + y[i] - (pk->fit.intercept + pk->fit.slope * x[i] + gt_slack_at(s, x[i])));
            e = e > (double)s->granularity ? e - (double)s->granularity : 0;
            ssr += e * e;
            s->sxx += (x[i] - mean) * (x[i] - mean);
        }
        s->xmean = mean;
        s->deviation = sqrt(ssr / (double)(s->nread - 2));
        s->usable = s->fit.ok && s->below < 0 && s->sxx > 0;
    }
    free(x);
    free(y);
    free(u);
    return GT_EXIT_OK;
}

int64_t gt_slack_largest(const struct gt_slack *s, const struct gt_linfit *use, double room)
{
    /* room is what the level may hold: use + slack + safety must fit */
#define NEED(n) (use->intercept + use->slope * (n) + gt_slack_at(s, (n)) + gt_slack_safety(s, (n)))
    if (use->slope <= 0 || NEED(0.0) > room)
        return 0;
    double top = floor((room - use->intercept) / use->slope) + 1;   /* use alone passes room there */
    int64_t lo = 0, hi = top > 1 ? (top < 1e15 ? (int64_t)top : (int64_t)1e15) : 1;   /* (an absurd slope) */
    while (hi - lo > 1) {
        int64_t mid = lo + (hi - lo) / 2;
        if (NEED((double)mid) <= room)
            lo = mid;
        else
            hi = mid;
    }
#undef NEED
    return lo;
}

void gt_slack_free(struct gt_slack *s)
{
    free(s->bs);
    memset(s, 0, sizeof *s);
}

/* The pool's slack per batch size and its line: what the margin rests on. */
void gt_slack_print(const struct gt_slack *sl)
{
    char b1[GT_FMT_LEN], b2[GT_FMT_LEN], b3[GT_FMT_LEN], b4[GT_FMT_LEN];
    if (!sl->read_at_all || !sl->pool_only)
        return;
    printf("  pool slack (its reservation, as read after the batch size's peak, beyond the bytes in use then):\n");
    struct gt_table tb;
    gt_table_init(&tb, 4, 0xf);
    gt_table_row(&tb, "batch", "in use", "reserved", "slack");
    for (size_t b = 0; b < sl->nbs; b++) {
        const struct gt_slack_bs *e = &sl->bs[b];
        char bs[32];
        snprintf(bs, sizeof bs, "%lld", (long long)e->batch_size);
        if (e->reserved < 0)
            gt_table_row(&tb, bs, gt_fmt_bytes(e->in_use, b1), "not read", "");
        else
            gt_table_row(&tb, bs, gt_fmt_bytes(e->in_use, b1), gt_fmt_bytes(e->reserved, b2),
                         gt_fmt_bytes(e->reserved - e->in_use, b3));
    }
    gt_table_print(&tb, stdout, 4);
    if (!sl->usable)
        return;
    printf("  slack fit: %s + %s x batch_size over %zu batch sizes%s; residual deviation %s, step %s\n",
           gt_fmt_bytes_d(sl->fixed, b1), gt_fmt_bytes_d(sl->per_sample, b2), sl->nread,
           sl->slope_clamped ? " (it shrank with the batch: the largest read, kept fixed)" : "",
           gt_fmt_bytes_d(sl->deviation, b3), gt_fmt_bytes(sl->granularity, b4));
}

/* JSON "pool_slack": the readings per batch size and the line (null: the
 * fitted level is no pool, or its reservation was never read). */
void gt_slack_json(struct gt_json *j, const struct gt_slack *sl)
{
    gt_json_key(j, "pool_slack");
    if (!sl->read_at_all || !sl->pool_only) {
        gt_json_null(j);
        return;
    }
    gt_json_obj(j);
    gt_json_key(j, "by_batch_size");
    gt_json_arr(j);
    for (size_t b = 0; b < sl->nbs; b++) {
        gt_json_obj(j);
        gt_json_kint(j, "batch_size", sl->bs[b].batch_size);
        gt_json_kint(j, "in_use_bytes", sl->bs[b].in_use);
        gt_json_kint_or_null(j, "reserved_bytes", sl->bs[b].reserved);
        gt_json_kint_or_null(j, "slack_bytes", sl->bs[b].reserved < 0 ? -1 : sl->bs[b].reserved - sl->bs[b].in_use);
        gt_json_obj_end(j);
    }
    gt_json_arr_end(j);
    gt_json_key(j, "fit");
    if (sl->usable) {
        gt_json_obj(j);
        gt_json_kdouble(j, "fixed_bytes", sl->fixed);
        gt_json_kdouble(j, "per_sample_bytes", sl->per_sample);
        gt_json_key(j, "shrank_kept_fixed");
        gt_json_bool(j, sl->slope_clamped);
        gt_json_kdouble(j, "residual_deviation_bytes", sl->deviation);
        gt_json_kint(j, "granularity_bytes", sl->granularity);
        gt_json_obj_end(j);
    } else {
        gt_json_null(j);
    }
    gt_json_obj_end(j);
}
