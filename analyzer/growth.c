/* growth.c - `gputrace growth`: does live memory grow from one iteration to
 * the next, by how much, and which call sites hold the growing memory. The
 * slope is a Theil-Sen fit of live bytes at the end of each iteration after
 * warm-up, so a single odd iteration cannot fake or hide growth; the shapes
 * that slope misreads (steps, a rise that settled or came late, one step
 * down, rises with the batch size), growth_shapes.c. Said by growth_out.c;
 * what it follows where the default does not grow, growth_follow.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

/* gputrace growth --help (the command table is in commands.c) */
const char gt_help_growth[] =
    "usage: gputrace growth [--json] [--fail-above B] [--threshold B] [--warmup N] [OPTIONS] TRACE.db...\n"
    "\n"
    "Live bytes at the end of each iteration; the slope in bytes per iteration\n"
    "from a Theil-Sen fit (median of pairwise slopes, robust to odd iterations)\n"
    "over the iterations after warm-up (default: the first is skipped) whose end\n"
    "is known; and the call sites whose live memory grows, ranked by their slope.\n"
    "\n"
    "Verdict: growing when the slope exceeds --threshold (default 0 bytes) and\n"
    "the growth it predicts over the fitted iterations is more than 3 times the\n"
    "scatter (1.4826 x median absolute residual), or when the level rose in held\n"
    "steps the median does not see (a staircase: none given back, more than one\n"
    "step, a rise in the second half past the points' jitter; the slope is then\n"
    "the rise's average, and the rate since it began is said); stable for a\n"
    "staircase whose second half never rose above its first (a cache settling,\n"
    "whatever the median says); unknown\n"
    "when 3 times the scatter exceeds a tenth of the level (a growth that large\n"
    "would not show; unless under --threshold an iteration) or with fewer than 3\n"
    "iterations after warm-up; stable\n"
    "otherwise.\n"
    "\n"
    "  --fail-above B   exit 1 when the verdict is growing and the slope exceeds B\n"
    "                   bytes per iteration (CI; growth that began late: its rate\n"
    "                   since); unknown is said on stderr, exit 0\n"
    "  --threshold B    smallest slope called growing (default 0)\n"
    "  --warmup N       iterations skipped at the start (default 1)\n"
    "Exit 8 when no iterations are found.\n";

#define MAX_FIT_POINTS 2000    /* Theil-Sen on the total: 2M pairs at most */
#define MAX_SITE_POINTS 256    /* per call site series */
#define SITE_FIT_POINTS 128

/* A point of the fit: where it stands among the iterations (x), which
 * window it is (w: an iteration, or a step seen later), fitted or not. */
struct point {
    double x;
    size_t w;
    int fit;
    int win;   /* 0: an iteration; else the later kernel window it was seen in */
};

static int point_cmp(const void *a, const void *b)
{
    const struct point *p = a, *q = b;
    return p->x < q->x ? -1 : p->x > q->x ? 1 : p->w < q->w ? -1 : p->w > q->w;
}

/* First index k in e[0..m) with e[k] > x. */
static size_t upper(const size_t *e, size_t m, size_t x)
{
    size_t lo = 0, hi = m;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (e[mid] <= x)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static int site_cmp(const void *a, const void *b)
{
    const struct gt_growth_site *x = a, *y = b;
    if (x->slope != y->slope)
        return x->slope < y->slope ? 1 : -1;
    return (x->site > y->site) - (x->site < y->site);
}

/* Per call site: live bytes at the end of sampled iterations (ends[] are
 * end_ev indices, ascending), then the Theil-Sen slope of each site whose
 * memory grew. Difference arrays make it one pass over the allocations. */
static void site_growth(struct gt_ctx *c, const size_t *ends, const double *x, size_t m, struct gt_growth *g)
{
    const struct gt_trace *t = &c->t;
    size_t nslots = t->nsites + 1;
    int32_t *row_of = gt_xmalloc(nslots * sizeof *row_of);
    for (size_t s = 0; s < nslots; s++)
        row_of[s] = -1;
    int64_t **rows = NULL;
    int32_t *row_site = NULL;
    size_t nrows = 0, cap = 0;
    for (size_t i = 0; i < t->nev && i < ends[m - 1]; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || e->size <= 0 || !gt_sel_has(t, &c->sel, e))
            continue;
        size_t k0 = upper(ends, m, i);
        size_t f = c->p.partner[i];
        size_t k1 = f == GT_NO_EVENT ? m : upper(ends, m, f);   /* points k0..k1-1 see it live */
        if (k0 >= k1)
            continue;
        size_t slot = e->site >= 0 ? (size_t)e->site : t->nsites;
        if (row_of[slot] < 0) {
            if (nrows == cap) {
                cap = cap ? cap * 2 : 64;
                rows = gt_xrealloc(rows, cap * sizeof *rows);
                row_site = gt_xrealloc(row_site, cap * sizeof *row_site);
            }
            rows[nrows] = gt_xcalloc(m + 1, sizeof **rows);
            row_site[nrows] = e->site;
            row_of[slot] = (int32_t)nrows++;
        }
        int64_t *d = rows[row_of[slot]];
        d[k0] += e->size;
        d[k1] -= e->size;
    }
    g->sites = gt_xmalloc((nrows + 1) * sizeof *g->sites);
    double *y = gt_xmalloc(m * sizeof *y);
    for (size_t r = 0; r < nrows; r++) {
        int64_t live = 0;
        for (size_t k = 0; k < m; k++) {
            live += rows[r][k];
            y[k] = (double)live;
        }
        if (y[m - 1] > y[0]) {
            double slope = gt_theil_sen(x, y, m, SITE_FIT_POINTS, NULL);
            if (g->held.growing && x[m - 1] > x[0])
                slope = (y[m - 1] - y[0]) / (x[m - 1] - x[0]);   /* its rise's average, as the total's (held_steps) */
            if (slope > 0) {
                struct gt_growth_site *s = &g->sites[g->nsites++];
                s->site = row_site[r];
                s->slope = slope;
                s->first = (int64_t)y[0];
                s->last = (int64_t)y[m - 1];
            }
        }
        free(rows[r]);
    }
    gt_qsort(g->sites, g->nsites, sizeof *g->sites, site_cmp);
    free(y);
    free(rows);
    free(row_site);
    free(row_of);
}

/* growing: above the threshold, and the growth over the span fitted (in
 * iterations) stands out of the scatter. Stable only where the scatter
 * could not hide much: where three times it is over a tenth of the level
 * (the live bytes the points hold, their median), a growth of that much over
 * the span would not show, and the verdict is unknown (iterations that end
 * at different points of a step whose memory varies: 66 MiB of scatter
 * about 160 MiB hid a leak a helper planted), unless what it could hide an
 * iteration is under --threshold. */
#define SCATTER_HIDES_SHARE 0.1
static const char *verdict(const struct gt_ctx *c, struct gt_growth *g, double span, double level /* -1: none */)
{
    if (g->slope > (double)c->o->threshold && g->slope > 0 && g->slope * span > 3 * g->noise)
        return "growing";
    /* (and more an iteration than --threshold: what it passes over is not asked about) */
    g->scatter_hides = level >= 0 && 3 * g->noise > SCATTER_HIDES_SHARE * level && span > 0 &&
                       3 * g->noise / span > (double)c->o->threshold;
    return g->scatter_hides ? "unknown" : "stable";
}

/* Steps seen in later kernel windows, placed among the iterations: those
 * after the first fitted iteration (earlier ones would escape --warmup), of
 * windows whose median step is within a quarter of the iterations' (else
 * how many steps ran between windows is not known), each window placed at
 * the mean of its step and the iterations' from the last fitted iteration,
 * its steps at its own. Fills x and the window (1, 2, ...) of each later
 * step (-1: not placed); returns the windows placed, 0 when fewer than 2:
 * one rise between two windows cannot tell growth from a one-off step. */
static size_t place_later(const struct gt_iterations *its, size_t first, size_t ref, double *x, int *win)
{
    size_t nwin = 0;
    for (size_t a = 0, b; a < its->nlater; a = b) {
        const struct gt_iteration *l = its->later;
        for (b = a; b < its->nlater && l[b].index == l[a].index; b++)
            win[b] = -1;
        size_t from = a;   /* the window's steps after the first fitted iteration */
        while (from < b && l[from].end <= its->it[first].end)
            from++;
        if (b - from < 2)
            continue;
        double *d = gt_xmalloc((b - from) * sizeof *d);
        for (size_t k = from; k < b; k++)
            d[k - from] = (double)(l[k].end - l[k].start);
        double step = gt_median(d, b - from), own = (double)its->step_ns;
        free(d);
        if (fabs(step - own) > own / 4)
            continue;
        double at = (double)ref + (double)(l[from].start - its->it[ref].end) / ((step + own) / 2);
        nwin++;
        for (size_t k = from; k < b; k++) {
            x[k] = at + (double)(l[k].end - l[from].start) / step;
            win[k] = (int)nwin;
        }
    }
    return nwin >= 2 ? nwin : 0;
}

/* The fit over windows (steps seen in later kernel windows): one point per
 * window, its medians, the first window the fitted iterations'; Theil-Sen
 * over those (the points inside the iterations' window would outvote the
 * rest), its scatter the windows' about the line. Not growing when the
 * slope is one step up: with the largest rise between two windows taken
 * out, no slope is left (a checkpoint loaded once between windows read as
 * 1 MB an iteration). The points come sorted, window by window. */
static void fit_windows(struct gt_ctx *c, struct gt_growth *g, const double *x, const double *y, const int *win,
                        const size_t *ends, size_t nwin)
{
    size_t nw = nwin + 1;
    double *wx = gt_xmalloc(nw * sizeof *wx), *wy = gt_xmalloc(nw * sizeof *wy);
    double *bx = gt_xmalloc(g->used * sizeof *bx), *by = gt_xmalloc(g->used * sizeof *by);
    size_t *we = gt_xmalloc(nw * sizeof *we);
    for (size_t k = 0, w = 0; w < nw; w++) {
        size_t from = k;
        for (; k < g->used && (size_t)win[k] == w; k++)
            bx[k - from] = x[k], by[k - from] = y[k];
        size_t m = k - from;
        wx[w] = gt_median(bx, m);
        wy[w] = gt_median(by, m);
        we[w] = ends[from + m / 2];   /* the window's middle point, for the sites */
    }
    g->slope = gt_theil_sen(wx, wy, nw, MAX_FIT_POINTS, &g->intercept);
    double *r = gt_xmalloc(nw * sizeof *r);
    for (size_t w = 0; w < nw; w++)
        r[w] = fabs(wy[w] - (g->intercept + g->slope * wx[w]));
    g->noise = 1.4826 * gt_median(r, nw);
    size_t jump = 0;   /* the window after the largest rise; 0: none rose */
    double step = 0;
    for (size_t w = 1; w < nw; w++) {
        g->window_rises += wy[w] > wy[w - 1];
        if (wy[w] - wy[w - 1] > step)
            step = wy[w] - wy[w - 1], jump = w;
    }
    g->windows = nw;
    if (jump && g->slope > 0) {
        for (size_t w = jump; w < nw; w++)
            r[w] = wy[w] - step;
        for (size_t w = 0; w < jump; w++)
            r[w] = wy[w];
        if (gt_theil_sen(wx, r, nw, MAX_FIT_POINTS, NULL) <= 0) {
            g->one_off_step = (int64_t)step;   /* no growth per iteration: one step up */
            g->slope = 0;
            g->intercept = gt_median(wy, nw);
        }
    }
    free(r);
    /* (a few windows' scatter is their steps': no level test) */
    g->verdict = verdict(c, g, wx[nw - 1] - wx[0], -1);
    if (!strcmp(g->verdict, "growing"))
        site_growth(c, we, wx, nw, g);
    free(wx);
    free(wy);
    free(bx);
    free(by);
    free(we);
}

/* Growth of c->sel's live memory over the iterations its (the ones found,
 * or one thread's loop of them). */
int gt_growth_over(struct gt_ctx *c, const struct gt_iterations *its, struct gt_growth *g)
{
    memset(g, 0, sizeof *g);
    g->verdict = "unknown";
    snprintf(g->memory, sizeof g->memory, "%s", c->sel_name);
    g->loop = its->it;
    g->n = its->n;
    g->warmup = (size_t)c->o->warmup;
    if (its->n == 0) {
        snprintf(c->t.err, sizeof c->t.err, "%.400s; growth needs iterations: mark them (NVTX range, gputrace_iteration()) or name the range with --iteration NAME",
                 its->how);
        return GT_EXIT_NO_ITERATIONS;
    }
    /* the points: each iteration's end (x: its index), and the steps seen
     * in the other spans of sampled kernels where they can be placed */
    size_t np = its->n + its->nlater, first = its->n, ref = its->n, nwin = 0;
    struct gt_window *w = gt_xmalloc(np * sizeof *w);
    struct point *pt = gt_xmalloc(np * sizeof *pt);
    for (size_t k = 0; k < its->n; k++) {
        w[k].first_ev = its->it[k].first_ev;
        w[k].end_ev = its->it[k].end_ev;
        pt[k] = (struct point){(double)k, k, k >= g->warmup && its->it[k].closed, 0};
        if (pt[k].fit) {
            first = first == its->n ? k : first;
            ref = k;
        }
    }
    double *lx = gt_xmalloc((its->nlater + 1) * sizeof *lx);
    int *lwin = gt_xmalloc((its->nlater + 1) * sizeof *lwin);
    if (ref < its->n && its->step_ns > 0)
        nwin = place_later(its, first, ref, lx, lwin);
    np = its->n;
    for (size_t k = 0; nwin && k < its->nlater; k++)
        if (lwin[k] > 0) {
            w[np].first_ev = its->later[k].first_ev;
            w[np].end_ev = its->later[k].end_ev;
            pt[np] = (struct point){lx[k], np, 1, lwin[k]};
            np++;
        }
    free(lx);
    free(lwin);
    qsort(pt, np, sizeof *pt, point_cmp);
    /* (gt_window_live wants windows sorted and disjoint: in time order) */
    struct gt_window *ws = gt_xmalloc(np * sizeof *ws);
    for (size_t q = 0; q < np; q++)
        ws[q] = w[pt[q].w];
    gt_window_live(&c->t, &c->p, &c->sel, ws, np);
    for (size_t q = 0; q < np; q++)
        w[pt[q].w] = ws[q];
    free(ws);
    g->end_live = gt_xmalloc(its->n * sizeof *g->end_live);
    double *x = gt_xmalloc(np * sizeof *x), *y = gt_xmalloc(np * sizeof *y);
    size_t *ends = gt_xmalloc(np * sizeof *ends);
    int *win = gt_xmalloc(np * sizeof *win);
    int64_t high = INT64_MIN, prev = 0;   /* the highest peak so far; the last fitted point's end */
    for (size_t q = 0; q < np; q++) {
        size_t k = pt[q].w;
        if (k < its->n)
            g->end_live[k] = w[k].end_live;
        int new_high = w[k].peak > high;
        if (new_high)
            high = w[k].peak;
        if (!pt[q].fit)
            continue;   /* warm-up, or an iteration whose end is only the trace's end */
        if (g->used && w[k].end_live > prev) {
            g->steps++;
            g->steps_at_new_highs += (size_t)new_high;
        }
        if (g->used && w[k].end_live != prev)
            g->steady_tail = 0;
        g->steady_tail++;
        prev = w[k].end_live;
        x[g->used] = pt[q].x;
        y[g->used] = (double)w[k].end_live;
        ends[g->used] = w[k].end_ev;
        win[g->used] = pt[q].win;
        g->later_used += pt[q].win > 0;
        g->used++;
    }
    free(w);
    free(pt);
    g->later_seen = its->nlater;
    if (g->later_used) {
        g->step_ns = its->step_ns;
        fit_windows(c, g, x, y, win, ends, nwin);
    } else if (g->used >= 2) {
        g->slope = gt_theil_sen(x, y, g->used, MAX_FIT_POINTS, &g->intercept);
        double *r = gt_xmalloc(g->used * sizeof *r);
        for (size_t k = 0; k < g->used; k++)
            r[k] = fabs(y[k] - (g->intercept + g->slope * x[k]));
        g->noise = 1.4826 * gt_median(r, g->used);   /* robust standard deviation */
        free(r);
        if (g->used >= 3) {
            double *ys = gt_xmalloc(g->used * sizeof *ys);
            memcpy(ys, y, g->used * sizeof *ys);
            g->verdict = verdict(c, g, x[g->used - 1] - x[0], gt_median(ys, g->used));
            free(ys);
            gt_growth_shapes(c, its, g, x, y);
        }
        /* call sites: evenly spaced sample of the fitted points */
        size_t m = g->used < MAX_SITE_POINTS ? g->used : MAX_SITE_POINTS;
        size_t *se = gt_xmalloc(m * sizeof *se);
        double *sx = gt_xmalloc(m * sizeof *sx);
        for (size_t k = 0; k < m; k++) {
            size_t q = m == g->used ? k : (size_t)((double)k * (double)(g->used - 1) / (double)(m - 1) + 0.5);
            se[k] = ends[q];
            sx[k] = x[q];
        }
        site_growth(c, se, sx, m, g);
        free(se);
        free(sx);
    }
    /* stable, where a preallocating framework carves its arrays inside one
     * allocation held all along: what grows in there is not seen */
    if (!strcmp(g->verdict, "stable") &&
        gt_preallocated(c, &c->sel, its->it[0].first_ev, its->it[0].first_ev, 0, &g->prealloc) > 0)
        g->verdict = "unknown";
    free(x);
    free(y);
    free(ends);
    free(win);
    return GT_EXIT_OK;
}

int gt_growth_on(struct gt_ctx *c, struct gt_growth *g)
{
    const struct gt_iterations *its;
    int code = gt_ctx_iterations(c, &its);
    if (code) {
        memset(g, 0, sizeof *g);
        g->verdict = "unknown";
        return code;
    }
    return gt_growth_over(c, its, g);
}

void gt_growth_free(struct gt_growth *g)
{
    free(g->end_live);
    free(g->sites);
    memset(g, 0, sizeof *g);
}
