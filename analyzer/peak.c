/* peak.c - `gputrace peak`: the peak of live memory in each iteration, per
 * batch size, the linear model peak = fixed + per_sample * batch_size fitted
 * to those peaks, the largest batch size predicted to fit on the device, and
 * what was live at the overall peak: computed here (what the trace's history
 * says of the peaks: peak_history.c; the last step and the rounding a sample:
 * peak_steps.c), said by peak_out.c. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"
#include "cli.h"
#include "format.h"

struct bs_peak {
    int64_t bs, peak;
    uint32_t ev;
};

static int bs_cmp(const void *a, const void *b)
{
    const struct bs_peak *x = a, *y = b;
    if (x->bs != y->bs)
        return x->bs < y->bs ? -1 : 1;
    return (x->peak > y->peak) - (x->peak < y->peak);
}

/* Peaks that curve up with the batch size: the cost a sample between
 * neighbouring batch sizes never falls (beyond the level's rounding) and the
 * last is CURVE_RISE above the first. A line through such peaks under-reads
 * larger batches however well it fits (a helper's probe: bs^2/16 MiB a step,
 * the weights made in its first step, R^2 0.98: 243 predicted, 121 the
 * truth). Noise and a step (a workspace chosen at some batch size) make
 * some cost fall between them, and are not this. The rounding: the largest
 * power of two dividing every size allocated at the level, from 512 B (the
 * runtime's unit) to 2 MiB (a caching allocator's segments); two of it at
 * either end of a secant is noise. *first and *last: the first and last
 * costs a sample. */
#define CURVE_RISE 0.05

static double level_rounding(const struct gt_ctx *c, const struct gt_sel *sel)
{
    uint64_t bits = 2 << 20;
    for (size_t i = 0; i < c->t.nev && bits > 512; i++) {
        const struct gt_event *e = &c->t.ev[i];
        const struct gt_api_attr *a = gt_attr(&c->t, e);
        if (!e->failed && a->known && a->op == GT_OP_ALLOC && e->size > 0 && gt_sel_has(&c->t, sel, e))
            while (bits > 512 && (uint64_t)e->size % bits)
                bits >>= 1;
    }
    return (double)bits;
}

static int curves_up(const struct gt_peak *pk, double rounding, double *first, double *last)
{
    if (pk->nbs < 3)
        return 0;
    double prev = 0, tol_first = 0, tol = 0;
    for (size_t b = 1; b < pk->nbs; b++) {
        double dx = (double)(pk->bs[b].batch_size - pk->bs[b - 1].batch_size);
        double s = ((double)pk->bs[b].max_peak - (double)pk->bs[b - 1].max_peak) / dx;
        tol = 4 * rounding / dx;
        if (b == 1) {
            *first = s;
            tol_first = tol;
        } else if (s < prev - tol) {
            return 0;
        }
        prev = s;
    }
    *last = prev;
    return *last - *first > CURVE_RISE * fabs(*first) + tol_first + tol;
}

/* The batch size of the iteration the program ended in on an out-of-memory
 * request at the level's device, or -1: a batch size the trace shows does
 * not fit (a failure the program went on after says nothing: a caching
 * allocator frees its cache and tries again). */
static int64_t ended_out_of_memory(struct gt_ctx *c, const struct gt_iterations *its, const struct gt_sel *sel)
{
    struct gt_oom_end end;
    if (!gt_oom_ended_program(c, &end) || (end.memory != GT_MEM_DEVICE && end.memory != GT_MEM_POOL) ||
        (sel->device != GT_ANY_DEVICE && end.device != sel->device))
        return -1;
    for (size_t k = 0; k < its->n; k++)
        if (end.event >= its->it[k].first_ev && end.event < its->it[k].end_ev)
            return its->it[k].batch_size;
    return -1;
}

/* The fixed part may fall this far below what is held through the loop
 * (a share, and rounding) before the line is taken to curve. */
#define HELD_SHARE_SLACK 0.02
#define HELD_BYTES_SLACK (2 << 20)

static int peak_on(struct gt_ctx *c, struct gt_peak *pk, const struct gt_sel *sel)
{
    memset(pk, 0, sizeof *pk);
    pk->device_total = pk->max_batch_size = -1;
    pk->carried_bytes = pk->carried_batch_size = -1;
    pk->other_grows_bs = pk->other_low = pk->other_high = -1;
    pk->oom_batch_size = -1;
    pk->sel = *sel;
    gt_sel_name(sel->mem_mask, pk->memory, sizeof pk->memory);
    pk->overall_peak = gt_sel_peak(&c->t, &c->p, &pk->sel, &pk->overall_ev);
    pk->device_total = gt_ctx_device_total(c, &pk->sel);
    pk->room.available = pk->room.margin = pk->room.pool_reserved_max = -1;
    const struct gt_iterations *its;
    int code = gt_ctx_iterations(c, &its);
    if (code)
        return code;
    pk->n = its->n;
    pk->w = gt_xmalloc((its->n + 1) * sizeof *pk->w);
    for (size_t k = 0; k < its->n; k++) {
        pk->w[k].first_ev = its->it[k].first_ev;
        pk->w[k].end_ev = its->it[k].end_ev;
    }
    gt_window_live(&c->t, &c->p, &pk->sel, pk->w, its->n);

    /* an iteration cut short by a failed allocation never reached its peak:
     * it is listed but kept out of the fit */
    pk->incomplete = gt_xcalloc(its->n + 1, 1);
    for (size_t k = 0; k < its->n; k++) {
        for (size_t i = its->it[k].first_ev; i < its->it[k].end_ev && !pk->incomplete[k]; i++) {
            const struct gt_event *e = &c->t.ev[i];
            if (e->failed && gt_attr(&c->t, e)->known && gt_attr(&c->t, e)->op == GT_OP_ALLOC)
                pk->incomplete[k] = GT_PEAK_CUT_BY_FAILURE;
        }
    }
    /* nor did the iteration a process died in (killed: the trace has no
     * end; or a signal): its peak is part of a step (a helper's probe: a
     * job killed 8 allocations into its last step was fitted as if whole,
     * and the answer was 15% over) */
    /* and the last iteration, when it is not closed (the marker API marks where an iteration
     * begins: the last runs to the end of the record), may hold what ran after the loop: a
     * checkpoint written after the last step was fitted as its peak, and the answer was over
     * (a helper's probe) */
    const char *end = c->t.proc.end_reason;
    if (its->n && !its->it[its->n - 1].closed && !pk->incomplete[its->n - 1]) {
        if ((!end || !strncmp(end, "signal", 6)) && !gt_peak_finished_before_the_end(c, its))
            pk->incomplete[its->n - 1] = GT_PEAK_CUT_BY_END;
        else if (gt_peak_ran_past_its_step(c, its, &pk->sel))
            pk->incomplete[its->n - 1] = GT_PEAK_NOT_CLOSED;
    }
    struct bs_peak *bp = gt_xmalloc((its->n + 1) * sizeof *bp);
    size_t nb = 0;
    for (size_t k = 0; k < its->n; k++)
        if (its->it[k].batch_size >= 0 && !pk->incomplete[k]) {
            bp[nb].bs = its->it[k].batch_size;
            bp[nb].ev = pk->w[k].peak_ev;
            bp[nb++].peak = pk->w[k].peak;
        }
    gt_qsort(bp, nb, sizeof *bp, bs_cmp);
    pk->bs = gt_xmalloc((nb + 1) * sizeof *pk->bs);
    double *v = gt_xmalloc((nb + 1) * sizeof *v);
    for (size_t g = 0; g < nb;) {
        size_t h = g;
        while (h < nb && bp[h].bs == bp[g].bs) {
            v[h - g] = (double)bp[h].peak;
            h++;
        }
        struct gt_peak_bs *b = &pk->bs[pk->nbs++];
        b->batch_size = bp[g].bs;
        b->max_peak = bp[h - 1].peak;   /* sorted by peak within a batch size */
        b->peak_ev = bp[h - 1].ev;
        b->n = h - g;
        b->median_peak = gt_median(v, h - g);
        g = h;
    }
    free(v);
    free(bp);
    gt_peak_history(c, its, pk);
    if (!pk->history)
        gt_peak_carried(c, its, pk);
    int code2 = gt_room_compute(c, &pk->sel, pk->overall_ev, &pk->room);
    if (code2)
        return code2;
    gt_peak_other_levels(c, its, pk);
    /* a preallocating framework's pool made before the loop (JAX's default):
     * the batch is carved inside it, out of the trace's sight: no fit at all */
    size_t loop = its->n ? its->it[0].first_ev : c->t.nev;
    pk->preallocated = pk->room.total > 0 && gt_preallocated(c, &pk->sel, loop, its->n ? loop : 0, 0, NULL) > 0;
    if (pk->nbs >= 2 && !pk->preallocated) {
        double *x = gt_xmalloc(pk->nbs * sizeof *x), *y = gt_xmalloc(pk->nbs * sizeof *y);
        for (size_t i = 0; i < pk->nbs; i++) {
            x[i] = (double)pk->bs[i].batch_size;
            y[i] = (double)pk->bs[i].max_peak;
        }
        pk->fit = gt_least_squares(x, y, pk->nbs);
        free(x);
        free(y);
        pk->held_through = gt_peak_held_through(c, &pk->sel, its, pk);
    }
    if ((code = gt_slack_compute(c, its, pk, &pk->slack)))
        return code;
    gt_peak_rounding_per_sample(c, pk);
    /* The largest batch against what the process can really get: the room
     * less the rounding margin (room.c); for a pool whose reservation the
     * trace reads, less its slack and a safety term at the batch size
     * predicted (margin.c). A share of use measured at the traced peak was
     * 92% of the truth on an H100 (conv net, cudaMallocAsync, batch sizes
     * 2..10: 153 for 166); a fixed slack from the peak over-promised (176). */
    int64_t candidate = -1;
    const struct gt_room *r = &pk->room;
    const struct gt_slack *sl = &pk->slack;
    pk->safety = -1;
    if (pk->fit.ok && pk->fit.slope > 0 && r->available >= 0 && r->margin >= 0) {
        double room = (double)(r->available - r->margin);
        if (sl->usable) {
            candidate = gt_slack_largest(sl, &pk->fit, room);
            pk->room.pool_slack = (int64_t)ceil(gt_slack_at(sl, (double)candidate));
            pk->safety = (int64_t)ceil(gt_slack_safety(sl, (double)candidate));
            pk->room.margin += pk->room.pool_slack + pk->safety;
        } else {
            /* the rounding bound at batch n: the margin read at the largest traced, and what each sample
             * past it adds */
            double rps = r->rounding_per_sample, from = (double)r->rounding_from_batch_size;
            double n = (room + rps * from - pk->fit.intercept) / (pk->fit.slope + rps);
            if (rps > 0 && n > from)
                pk->room.margin += (int64_t)ceil(rps * (floor(n) - from));
            /* tolerance: an exact fit may land a hair below an integer;
             * past GT_PEAK_MAX_REACH times the largest traced it is withheld
             * below (and never cast beyond int64_t) */
            candidate = n <= 0 ? 0 : n > 1e15 ? INT64_MAX : (int64_t)floor(n + 1e-9 * (n > 1 ? n : 1));
        }
    }
    int64_t largest_traced = pk->nbs ? pk->bs[pk->nbs - 1].batch_size : 0;
    double cost_first = 0, cost_last = 0;
    int curved = pk->fit.ok && curves_up(pk, level_rounding(c, &pk->sel), &cost_first, &cost_last);
    if (candidate >= 0)
        pk->oom_batch_size = ended_out_of_memory(c, its, &pk->sel);
    /* the least growth that measures a per-sample cost: the runtime's
     * smallest unit of an allocation (the peaks are of requested bytes, to
     * the byte; the addresses' alignment, up to a pool's 2 MiB pages, would
     * withhold a real 64 KiB a sample: a review) */
    const double rounding = 512;
    /* Never a number the data does not support; the first reason that holds. */
    pk->withheld_max_batch_size = -1;
    if (pk->preallocated) {
        pk->withheld_why = "a preallocating framework's pool (JAX's default) holds the device's memory for it:"
                           " the batch's tensors are carved inside it, where the trace cannot see them";
        pk->what_to_do = GT_PREALLOC_TO_DO ", or gputrace sweep -- CMD";
    } else if (pk->history && pk->carried_bytes >= 0) {
        char b1[GT_FMT_LEN];
        snprintf(pk->why_buf, sizeof pk->why_buf,
                 "peaks follow the allocator's history, not the batch size: batch size %lld's peak still held %s"
                 " allocated at earlier batch sizes (a caching allocator's segments, or memory the program kept)",
                 (long long)pk->carried_batch_size, gt_fmt_bytes(pk->carried_bytes, b1));
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "gputrace sweep -- CMD (one batch size per process), or trace at tensor level"
                         " (PyTorch: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)";
    } else if (pk->history) {
        pk->withheld_why = "peaks follow the allocator's history, not the batch size: a smaller batch after a larger one"
                           " peaked as high (a caching allocator keeps what earlier batches reserved)";
        pk->what_to_do = "gputrace sweep -- CMD (one batch size per process), or trace at tensor level"
                         " (PyTorch: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)";
    } else if (!pk->fit.ok || pk->fit.slope <= 0) {
        /* no fit, or nothing grows: said on their own */
    } else if (pk->fit.r2 < GT_FIT_RELIABLE_R2) {
        pk->withheld_why = "the fit is poor (R^2 below 0.9): peaks do not follow batch size";
        pk->what_to_do = "gputrace sweep -- CMD (real runs at the boundary), or trace at tensor level"
                         " (PyTorch: PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync)";
    } else if (curved) {
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        const struct gt_peak_bs *b = pk->bs;
        size_t z = pk->nbs - 1;
        snprintf(pk->why_buf, sizeof pk->why_buf,
                 "peaks curve up with the batch size: %s a sample from batch size %lld to %lld, %s from %lld to %lld,"
                 " so a line under-reads larger batches", gt_fmt_bytes_d(cost_first, b1), (long long)b[0].batch_size,
                 (long long)b[1].batch_size, gt_fmt_bytes_d(cost_last, b2), (long long)b[z - 1].batch_size,
                 (long long)b[z].batch_size);
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "gputrace sweep -- CMD (real runs at the boundary)";
    } else if (pk->nbs >= 3 && pk->fit.intercept < (1 - HELD_SHARE_SLACK) * (double)pk->held_through - HELD_BYTES_SLACK) {
        /* every batch's peak holds what was allocated before the loop and
         * kept: a line whose fixed part is below it bends up between the
         * batch sizes traced (memory that grows faster than the batch, such
         * as attention over a sequence length given as the batch size), and
         * its extrapolation over-promises (a helper's probe: 37,620 predicted,
         * out of memory at 7,600) */
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        snprintf(pk->why_buf, sizeof pk->why_buf,
                 "peaks curve up with the batch size: the line's fixed part, %s, is below the %s allocated before"
                 " the loop and held through it, which every peak holds, so the line under-reads larger batches",
                 gt_fmt_bytes_d(pk->fit.intercept, b1), gt_fmt_bytes(pk->held_through, b2));
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "gputrace sweep -- CMD (real runs at the boundary)";
    } else if (pk->oom_batch_size >= 0 && candidate >= pk->oom_batch_size) {
        snprintf(pk->why_buf, sizeof pk->why_buf,
                 "batch size %lld ran out of memory in this trace (the program ended on it), yet the line predicts"
                 " %lld fits: the peaks it fits under-read larger batches", (long long)pk->oom_batch_size,
                 (long long)candidate);
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "gputrace sweep -- CMD (real runs at the boundary)";
    } else if (candidate == INT64_MAX || pk->fit.slope * (double)(largest_traced - pk->bs[0].batch_size) < rounding) {
        /* a per-sample cost the trace barely shows, extrapolated without end
         * (a helper's probe: 1 byte per 1,000 samples gave 84 trillion; at
         * 10^15 samples the figure overflowed) */
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        if (candidate == INT64_MAX)
            snprintf(pk->why_buf, sizeof pk->why_buf, "the line would reach beyond 10^15 samples");
        else
            snprintf(pk->why_buf, sizeof pk->why_buf,
                     "the line grows by %s across the batch sizes traced (%lld to %lld), less than the allocator's"
                     " rounding (%s): the per-sample cost is not measured", gt_fmt_bytes_d(pk->fit.slope *
                     (double)(largest_traced - pk->bs[0].batch_size), b1), (long long)pk->bs[0].batch_size,
                     (long long)largest_traced, gt_fmt_bytes(rounding, b2));
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "trace batch sizes further apart, or gputrace sweep -- CMD";
    } else if (pk->other_grows_bs >= 0) {
        char b1[GT_FMT_LEN], b2[GT_FMT_LEN];
        snprintf(pk->why_buf, sizeof pk->why_buf,
                 "traced memory beside the fitted level grows with the batch size too (%s at batch size %lld, %s at"
                 " %lld): the line fits the %s level alone", gt_fmt_bytes(pk->other_low, b1),
                 (long long)pk->bs[0].batch_size, gt_fmt_bytes(pk->other_high, b2), (long long)pk->other_grows_bs,
                 pk->memory);
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "gputrace sweep -- CMD (real runs at the boundary)";
    } else if (pk->nbs < 3) {
        pk->withheld_why = "only 2 batch sizes: a line passes through any two points, so nothing tests the fit";
        pk->what_to_do = "trace 3 or more batch sizes, or gputrace sweep -- CMD";
    } else if (r->available < 0) {
        pk->withheld_why = r->total > 0 ? "what the process can get is not known: the trace has no NVML samples (the"
                                          " CUDA context and other processes' memory are not measured)"
                                        : "the device's memory is not known";
        pk->what_to_do = "pass --device-bytes B (what the traced memory may use), or gputrace sweep -- CMD";
    } else if (r->graph_memory_grew) {
        pk->withheld_why = "the memory held for CUDA graphs grew during the trace (graphs captured at each batch size?):"
                           " how it grows with the batch is not in the readings";
        pk->what_to_do = "gputrace sweep -- CMD (each run's graph memory is in its peak)";
    } else if (sl->read_at_all && !sl->pool_only) {
        pk->withheld_why = "the pool's slack (its reservation beyond the bytes in use) is measured for the pool level"
                           " alone, and the fitted level holds more";
        pk->what_to_do = "--memory pool, or gputrace sweep -- CMD";
    } else if (sl->read_at_all && sl->below >= 0) {
        snprintf(pk->why_buf, sizeof pk->why_buf,
                 "the pool's reservation read at batch size %lld is below the bytes in use then: the readings are"
                 " not of the pool the program allocates from (only the device's current pool is read)",
                 (long long)sl->below);
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "gputrace sweep -- CMD (real runs at the boundary)";
    } else if (sl->read_at_all && !sl->usable) {
        snprintf(pk->why_buf, sizeof pk->why_buf,
                 "the pool's reservation was read at %zu of the %zu batch sizes (it is read when it grows, at most"
                 " every 5 ms; a batch size below an earlier peak runs in that reservation): 3 are needed to fit"
                 " its slack", sl->nread, sl->nbs);
        pk->withheld_why = pk->why_buf;
        pk->what_to_do = "trace 3 or more batch sizes from the smallest up, each for steps of a few ms or more, or"
                         " gputrace sweep -- CMD";
    } else {
        pk->max_batch_size = candidate;
    }
    if (pk->max_batch_size < 0)
        pk->withheld_max_batch_size = candidate == INT64_MAX ? -1 : candidate;
    /* a line through history is no model of the batch: no fit numbers at all */
    if (pk->history)
        memset(&pk->fit, 0, sizeof pk->fit);
    return GT_EXIT_OK;
}

/* A stream-ordered pool is the level reports take by default; when its
 * peaks do not grow with the batch size and device memory outside it does
 * (the batch's tensors in cudaMalloc beside one pool allocation), the device
 * level is the answer (a helper's probe: "peak does not grow with batch
 * size" while the device peak grew 10 MiB a sample). */
static int peak_on_level(struct gt_ctx *c, struct gt_peak *pk, const struct gt_sel *sel)
{
    int code = peak_on(c, pk, sel);
    if (code || c->o->memory_set || sel->mem_mask != GT_MASK(GT_MEM_POOL) || pk->history ||
        (pk->fit.ok && pk->fit.slope > 0) || pk->nbs < 2)
        return code;
    struct gt_sel d = *sel;
    d.mem_mask = GT_MASK(GT_MEM_DEVICE);
    struct gt_peak alt;
    code = peak_on(c, &alt, &d);
    if (code || !alt.fit.ok || !(alt.fit.slope > 0)) {
        gt_peak_free(&alt);
        return code;
    }
    gt_peak_free(pk);
    *pk = alt;
    if (alt.withheld_why == alt.why_buf)
        pk->withheld_why = pk->why_buf;
    pk->default_flat = 1;
    return GT_EXIT_OK;
}

/* The largest batch a device's answer would give, given or withheld; -1: none. */
static int64_t largest(const struct gt_peak *pk)
{
    return pk->max_batch_size >= 0 ? pk->max_batch_size : pk->withheld_max_batch_size;
}

/* Which of several devices' answers stands for the program: any device
 * whose answer is withheld (what it would say is not supported there, so
 * no device's number can be stood behind), the one with the smallest;
 * else the device that runs out first (a model split across two cards
 * fails on the fuller one, whatever the other's peak); else, when no
 * device's memory follows the batch, the busiest (devs[0]). */
static int binds_before(const struct gt_peak *a, const struct gt_peak *b)
{
    if (!!a->withheld_why != !!b->withheld_why)
        return a->withheld_why != NULL;
    int64_t x = largest(a), y = largest(b);
    return x >= 0 && (y < 0 || x < y);
}

int gt_peak_compute(struct gt_ctx *c, struct gt_peak *pk)
{
    int devs[GT_PEAK_MAX_DEVICES];
    size_t ndev = c->sel.device == GT_ANY_DEVICE ? gt_ctx_devices(c, &c->sel, devs, GT_PEAK_MAX_DEVICES) : 0;
    if (ndev < 2)
        return peak_on_level(c, pk, &c->sel);
    /* device capacity is per device: each device's own answer */
    struct gt_peak each[GT_PEAK_MAX_DEVICES];
    size_t best = 0;
    for (size_t d = 0; d < ndev; d++) {
        struct gt_sel sel = c->sel;
        sel.device = devs[d];
        int code = peak_on_level(c, &each[d], &sel);
        if (code) {
            for (size_t q = 0; q <= d; q++)
                gt_peak_free(&each[q]);
            memset(pk, 0, sizeof *pk);
            return code;
        }
        if (d && binds_before(&each[d], &each[best]))
            best = d;
    }
    *pk = each[best];
    /* (its why_buf moved with it: point withheld_why there again) */
    if (each[best].withheld_why == each[best].why_buf)
        pk->withheld_why = pk->why_buf;
    pk->multi_device = (int)ndev;
    pk->binding = largest(pk) >= 0;
    for (size_t d = 0; d < ndev; d++) {
        if (d == best)
            continue;
        pk->others[pk->nothers++] = (struct gt_peak_other){devs[d], largest(&each[d]), each[d].max_batch_size >= 0};
        gt_peak_free(&each[d]);
    }
    return GT_EXIT_OK;
}

void gt_peak_free(struct gt_peak *pk)
{
    free(pk->w);
    free(pk->bs);
    free(pk->incomplete);
    free(pk->high);
    gt_slack_free(&pk->slack);
    memset(pk, 0, sizeof *pk);
}

/* Index of the iteration whose window holds event ev, or -1. */
