/* live.c - the live-memory replay (see live.h). One pass pairs allocations
 * with frees through per-space hash maps of live addresses; later passes only
 * read the pairing, so each report's question is a linear scan. */
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "hmap.h"
#include "live.h"

void gt_pair_events(const struct gt_trace *t, struct gt_pairs *p)
{
    memset(p, 0, sizeof *p);
    p->partner = gt_xmalloc((t->nev ? t->nev : 1) * sizeof *p->partner);
    memset(p->partner, 0xff, (t->nev ? t->nev : 1) * sizeof *p->partner);
    struct gt_hmap live[GT_NSPACES], graph;   /* graph: addresses a CUDA graph's allocation nodes gave */
    for (int s = 0; s < GT_NSPACES; s++)
        gt_hmap_init(&live[s]);
    gt_hmap_init(&graph);
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = &t->api[e->api];
        if (e->failed || !a->known || e->u.ptr == 0 || a->space >= GT_NSPACES)
            continue;
        if (a->op == GT_OP_ALLOC) {
            uint32_t old = gt_hmap_put(&live[a->space], e->u.ptr, (uint32_t)i);
            if (old == GT_HMAP_OOM) {
                fprintf(stderr, "gputrace: out of memory\n");
                exit(GT_EXIT_NOMEM);
            }
            if (old != GT_HMAP_NONE)
                p->reallocated_unfreed++;   /* the older one stays unfreed, as in the allocations view */
            if ((e->api & GT_API_GRAPH_NODE) && gt_hmap_put(&graph, e->u.ptr, (uint32_t)i) == GT_HMAP_OOM) {
                fprintf(stderr, "gputrace: out of memory\n");
                exit(GT_EXIT_NOMEM);
            }
        } else if (a->op == GT_OP_FREE) {
            uint32_t al = gt_hmap_del(&live[a->space], e->u.ptr);
            if (al == GT_HMAP_NONE) {
                /* not allocated before tracing began: the graph takes its node's
                 * address again each time it runs, and the program frees it */
                if (gt_hmap_get(&graph, e->u.ptr) == GT_HMAP_NONE)
                    p->unmatched_frees++;
                continue;
            }
            p->partner[i] = al;
            p->partner[al] = (uint32_t)i;
        }
    }
    for (int s = 0; s < GT_NSPACES; s++)
        gt_hmap_free(&live[s]);
    gt_hmap_free(&graph);
}

void gt_pairs_free(struct gt_pairs *p)
{
    free(p->partner);
    memset(p, 0, sizeof *p);
}

const char *gt_memory_name(int memory)
{
    static const char *const names[] = {"device", "pool", "managed", "host", "reserve", "mapping", "imported", "graph"};
    return memory >= 0 && memory < (int)(sizeof names / sizeof *names) ? names[memory] : "mixed";
}

static int level_cmp(const void *a, const void *b)
{
    const struct gt_level *x = a, *y = b;
    if (x->memory != y->memory)
        return x->memory - y->memory;
    return (x->device > y->device) - (x->device < y->device);
}

size_t gt_levels(const struct gt_trace *t, const struct gt_pairs *p, struct gt_level **out)
{
    struct gt_level *lv = NULL;
    size_t n = 0, cap = 0;
    int64_t live_cur[64];   /* parallel to lv for the first 64 levels */
    size_t last = 0;
    for (size_t i = 0; i < t->nev; i++) {
        uint32_t a = gt_alloc_of(t, p, i);
        if (a == GT_NO_EVENT)
            continue;
        const struct gt_event *ae = &t->ev[a];
        int mem = t->api[ae->api].memory;
        if (!(GT_MASK_ALL & GT_MASK(mem)))
            continue;
        if (last >= n || lv[last].memory != mem || lv[last].device != ae->device) {
            for (last = 0; last < n; last++)
                if (lv[last].memory == mem && lv[last].device == ae->device)
                    break;
            if (last == n) {
                if (n == 64)
                    continue;   /* more than 64 (kind, device) pairs: ignore the rest */
                if (n == cap) {
                    cap = cap ? cap * 2 : 8;
                    lv = gt_xrealloc(lv, cap * sizeof *lv);
                }
                memset(&lv[n], 0, sizeof lv[n]);
                lv[n].memory = mem;
                lv[n].device = ae->device;
                lv[n].peak_ev = GT_NO_EVENT;
                live_cur[n] = 0;
                n++;
            }
        }
        struct gt_level *l = &lv[last];
        int64_t sz = ae->size > 0 ? ae->size : 0;
        if (a == i) {
            live_cur[last] += sz;
            l->allocs++;
            l->alloc_bytes += sz;
            if (live_cur[last] > l->peak) {
                l->peak = live_cur[last];
                l->peak_t = t->ev[i].t;
                l->peak_ev = i;
            }
        } else {
            live_cur[last] -= sz;
            l->frees++;
        }
        l->final = live_cur[last];
    }
    gt_qsort(lv, n, sizeof *lv, level_cmp);
    *out = lv;
    return n;
}

int64_t gt_sel_peak(const struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *s, uint32_t *peak_ev)
{
    int64_t live = 0, peak = 0;
    *peak_ev = GT_NO_EVENT;
    for (size_t i = 0; i < t->nev; i++) {
        int64_t d = gt_delta(t, p, s, i);
        if (!d)
            continue;
        live += d;
        if (live > peak) {
            peak = live;
            *peak_ev = (uint32_t)i;
        }
    }
    return peak;
}

void gt_window_live(const struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *s, struct gt_window *w, size_t n)
{
    int64_t live = 0;
    size_t i = 0;
    for (size_t k = 0; k < n; k++) {
        for (; i < w[k].first_ev && i < t->nev; i++)
            live += gt_delta(t, p, s, i);
        w[k].start_live = w[k].peak = live;
        w[k].peak_ev = GT_NO_EVENT;
        for (; i < w[k].end_ev && i < t->nev; i++) {
            int64_t d = gt_delta(t, p, s, i);
            if (!d)
                continue;
            live += d;
            if (live > w[k].peak) {
                w[k].peak = live;
                w[k].peak_ev = (uint32_t)i;
            }
        }
        w[k].end_live = live;
    }
}

static int site_sum_cmp(const void *a, const void *b)
{
    const struct gt_site_sum *x = a, *y = b;
    if (x->bytes != y->bytes)
        return x->bytes < y->bytes ? 1 : -1;
    if (x->count != y->count)
        return x->count < y->count ? 1 : -1;
    return (x->site > y->site) - (x->site < y->site);
}

size_t gt_live_sites_before(const struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *s, size_t i,
                            struct gt_site_sum **out, int64_t *total_bytes, int64_t *total_count)
{
    /* slot nsites collects allocations without a stack */
    size_t ns = t->nsites + 1;
    struct gt_site_sum *sum = gt_xcalloc(ns, sizeof *sum);
    for (size_t k = 0; k < ns; k++) {
        sum[k].site = k == t->nsites ? -1 : (int32_t)k;
        sum[k].memory = -2;   /* no allocation yet */
    }
    int64_t tb = 0, tc = 0;
    for (size_t a = 0; a < i && a < t->nev; a++) {
        const struct gt_event *e = &t->ev[a];
        if (e->failed || !t->api[e->api].known || t->api[e->api].op != GT_OP_ALLOC)
            continue;
        if (p->partner[a] != GT_NO_EVENT && p->partner[a] < i)
            continue;   /* freed before i */
        if (!gt_sel_has(t, s, e))
            continue;
        int64_t sz = e->size > 0 ? e->size : 0;
        struct gt_site_sum *g = &sum[e->site >= 0 ? (size_t)e->site : t->nsites];
        int mem = t->api[e->api].memory;
        g->memory = g->memory == -2 || g->memory == mem ? mem : -1;
        g->bytes += sz;
        g->count++;
        tb += sz;
        tc++;
    }
    size_t n = 0;
    for (size_t k = 0; k < ns; k++)
        if (sum[k].count)
            sum[n++] = sum[k];
    gt_qsort(sum, n, sizeof *sum, site_sum_cmp);
    *out = sum;
    if (total_bytes)
        *total_bytes = tb;
    if (total_count)
        *total_count = tc;
    return n;
}
