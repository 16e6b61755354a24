/* report_timeline.c - the memory-over-time data of `gputrace report`: live
 * bytes per memory level and device after every change, and NVML's used
 * bytes per device. A page cannot draw millions of points, so a long series
 * is cut into time buckets keeping each bucket's minimum and maximum: the
 * drawn envelope still reaches every peak, and each series' peak is also
 * written exactly. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "report.h"
#include "trace_rows.h"


struct bucket {
    int64_t tmin, vmin, tmax, vmax;
    int used;
};

struct series {
    int memory, device;       /* memory -1: NVML used bytes */
    int64_t *pts;             /* t, v pairs while not bucketed */
    size_t n, cap;
    struct bucket *b;         /* GT_REPORT_BUCKETS, once bucketed */
    int64_t lo, span, changes, peak, peak_t;   /* buckets cut [lo, lo + span] */
};

static void bucket_add(struct series *s, int64_t t, int64_t v)
{
    double at = s->span > 0 ? ((double)t - (double)s->lo) / (double)s->span * GT_REPORT_BUCKETS : 0.0;
    int64_t k = at < 0 ? 0 : at >= GT_REPORT_BUCKETS ? GT_REPORT_BUCKETS - 1 : (int64_t)at;
    k = k < 0 ? 0 : k >= GT_REPORT_BUCKETS ? GT_REPORT_BUCKETS - 1 : k;
    struct bucket *b = &s->b[k];
    if (!b->used || v < b->vmin) {
        b->vmin = v;
        b->tmin = t;
    }
    if (!b->used || v > b->vmax) {
        b->vmax = v;
        b->tmax = t;
    }
    b->used = 1;
}

static void series_add(struct series *s, int64_t t, int64_t v)
{
    s->changes++;
    if (v > s->peak || s->changes == 1) {
        s->peak = v;
        s->peak_t = t;
    }
    if (s->b) {
        bucket_add(s, t, v);
        return;
    }
    if (s->n == s->cap) {
        s->cap = s->cap ? 2 * s->cap : 256;
        s->pts = gt_xrealloc(s->pts, 2 * s->cap * sizeof *s->pts);
    }
    s->pts[2 * s->n] = t;
    s->pts[2 * s->n + 1] = v;
    if (++s->n > GT_REPORT_MAX_POINTS) {   /* too many to draw: fold into buckets */
        s->b = gt_xcalloc(GT_REPORT_BUCKETS, sizeof *s->b);
        for (size_t i = 0; i < s->n; i++)
            bucket_add(s, s->pts[2 * i], s->pts[2 * i + 1]);
        free(s->pts);
        s->pts = NULL;
        s->n = s->cap = 0;
    }
}

static void series_json(struct gt_json *j, const struct series *s)
{
    char name[64];
    if (s->memory < 0)
        snprintf(name, sizeof name, "NVML used (GPU %d)", s->device);
    else if (s->device < 0)
        snprintf(name, sizeof name, "%s (host)", gt_memory_name(s->memory));
    else
        snprintf(name, sizeof name, "%s (GPU %d)", gt_memory_name(s->memory), s->device);
    gt_json_obj(j);
    gt_json_kstr(j, "name", name);
    gt_json_kstr(j, "memory", s->memory < 0 ? "nvml_used" : gt_memory_name(s->memory));
    gt_json_kint(j, "device", s->device);
    gt_json_kint(j, "changes", s->changes);
    gt_json_kint(j, "peak_bytes", s->peak);
    gt_json_kint(j, "peak_time_ns", s->peak_t);
    gt_json_key(j, "bucketed");
    gt_json_bool(j, s->b != NULL);
    /* flat [t0, v0, t1, v1, ...]; live memory starts at 0 with the trace */
    gt_json_key(j, "points");
    gt_json_arr_inline(j);
    if (s->memory >= 0) {
        gt_json_int(j, 0);
        gt_json_int(j, 0);
    }
    for (size_t i = 0; i < s->n; i++) {
        gt_json_int(j, s->pts[2 * i]);
        gt_json_int(j, s->pts[2 * i + 1]);
    }
    for (size_t k = 0; s->b && k < GT_REPORT_BUCKETS; k++) {
        const struct bucket *b = &s->b[k];
        if (!b->used)
            continue;
        int min_first = b->tmin <= b->tmax;
        gt_json_int(j, min_first ? b->tmin : b->tmax);
        gt_json_int(j, min_first ? b->vmin : b->vmax);
        if (b->tmin != b->tmax || b->vmin != b->vmax) {
            gt_json_int(j, min_first ? b->tmax : b->tmin);
            gt_json_int(j, min_first ? b->vmax : b->vmin);
        }
    }
    gt_json_arr_end(j);
    gt_json_obj_end(j);
}

int gt_report_timeline(struct gt_ctx *c, struct gt_json *j, int64_t *end_ns)
{
    struct gt_trace *t = &c->t;
    int64_t end = gt_trace_end_ns(t);
    if (t->nev && t->ev[t->nev - 1].t > end)
        end = t->ev[t->nev - 1].t;
    /* one series per (memory level, device) that changes, in that order */
    static struct series *idx[GT_MEM_HOST + 1][GT_HOST_SLOT + 1];
    memset(idx, 0, sizeof idx);
    struct series *all = gt_xcalloc((GT_MEM_HOST + 1) * (GT_HOST_SLOT + 1) + GT_HOST_SLOT, sizeof *all);
    size_t n = 0;
    int64_t live[GT_MEM_HOST + 1][GT_HOST_SLOT + 1];
    memset(live, 0, sizeof live);
    /* The live series are cut into buckets over the span of the calls, not
     * the whole run: 6,000 changes in a run's first 3 ms of 100 s fell into
     * 3 buckets of 1,500, and the chart, which opens on that span, drew one
     * spike and then nothing (a helper's probe) */
    int64_t calls_from = t->nev ? t->ev[0].t : 0, calls_to = calls_from;
    for (size_t i = 0; i < t->nev; i++) {
        calls_from = t->ev[i].t < calls_from ? t->ev[i].t : calls_from;
        calls_to = t->ev[i].t > calls_to ? t->ev[i].t : calls_to;
    }
    for (size_t i = 0; i < t->nev; i++) {
        int m, d;
        int64_t delta = gt_slot_delta(t, &c->p, i, &m, &d);
        if (!delta || m > GT_MEM_HOST)
            continue;
        if (!idx[m][d]) {
            idx[m][d] = &all[n++];
            idx[m][d]->memory = m;
            idx[m][d]->device = d == GT_HOST_SLOT ? -1 : d;
            idx[m][d]->lo = calls_from;
            if (__builtin_sub_overflow(calls_to, calls_from, &idx[m][d]->span))
                idx[m][d]->span = INT64_MAX;   /* a trace's times can be anything (the fuzz test's are) */
        }
        live[m][d] += delta;
        series_add(idx[m][d], t->ev[i].t, live[m][d]);
    }
    size_t nlive = n;
    struct gt_rows r;
    int code = gt_rows_open(t, &r, GT_ROWS_SAMPLES), more;
    while (!code && (more = gt_rows_next(&r)) > 0) {
        int64_t dev = gt_rows_int(&r, 1, -1), ts = gt_rows_int(&r, 0, 0);
        if (dev < 0 || dev >= GT_HOST_SLOT)
            continue;
        size_t k = nlive;
        while (k < n && all[k].device != dev)
            k++;
        if (k == n) {
            all[n].memory = -1;
            all[n].device = (int)dev;
            all[n++].span = end;
        }
        series_add(&all[k], ts, gt_rows_int(&r, 2, 0));
    }
    if (!code && more < 0)
        code = -more;
    gt_rows_close(&r);
    if (!code) {
        gt_json_key(j, "series");
        gt_json_arr(j);
        for (int m = 0; m <= GT_MEM_HOST; m++)   /* device, pool, managed, host; then NVML */
            for (size_t k = 0; k < nlive; k++)
                if (all[k].memory == m)
                    series_json(j, &all[k]);
        for (size_t k = nlive; k < n; k++)
            series_json(j, &all[k]);
        gt_json_arr_end(j);
        /* The span with allocation calls, which the chart opens on: a program's
         * start-up (PyTorch's imports) can be most of its life and flat. */
        int64_t from = -1, to = -1;
        for (size_t i = 0; i < t->nev; i++) {
            if (from < 0 || t->ev[i].t < from)
                from = t->ev[i].t;
            if (t->ev[i].t > to)
                to = t->ev[i].t;
        }
        gt_json_kint_or_null(j, "allocations_from_ns", from);
        gt_json_kint_or_null(j, "allocations_to_ns", to);
    }
    for (size_t k = 0; k < n; k++) {
        free(all[k].pts);
        free(all[k].b);
    }
    free(all);
    *end_ns = end;
    return code;
}
