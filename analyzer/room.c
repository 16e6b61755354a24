/* room.c - what a process can really get for the memory `peak` fits, so that
 * its largest batch never over-promises: the device's total (NVML's, which is
 * a MIG slice's own), less what NVML shows held outside the trace (the CUDA
 * context and driver, kernel modules, other processes), less the traced
 * memory outside the fitted level (library workspaces beside a pool), less
 * what the driver held for CUDA graphs (which NVML shows and the ledger names
 * apart, so it is not in the first), less a margin for the allocators'
 * rounding (a pool's slack: margin.c). */
#include <stdlib.h>
#include <string.h>

#include "analyzer.h"

/* Rounding is bounded by the allocation granularity the addresses show; no
 * driver rounds device memory beyond its 2 MiB pages. */
#define MAX_GRANULARITY (2 << 20)

/* The largest power of two (at most 2 MiB) dividing every address level m
 * handed out on device d: the granularity its allocations are rounded to,
 * as far as the trace can tell. 1 when no address is known (VMM handles). */
static int64_t granularity(const struct gt_trace *t, int m, int d)
{
    uint64_t g = MAX_GRANULARITY;
    int seen = 0;
    for (size_t i = 0; i < t->nev; i++) {
        const struct gt_event *e = &t->ev[i];
        const struct gt_api_attr *a = gt_attr(t, e);
        if (e->failed || !a->known || a->op != GT_OP_ALLOC || a->memory != m || e->device != d || !e->u.ptr ||
            !strcmp(a->name, "cuMemCreate"))
            continue;
        uint64_t low = e->u.ptr & -e->u.ptr;
        if (low < g)
            g = low;
        seen = 1;
    }
    return seen ? (int64_t)g : 1;
}

/* The highest reading of the stream-ordered pool's reservation on device d
 * (GT_ANY_DEVICE: any): the writer's (memory_pools) or CUPTI's driver
 * records; -1 when the trace holds none. Under cudaMallocAsync the device
 * gives the pool what it reserves, not what it uses: a fresh process on an
 * H100 held 80224 MiB reserved for 74563 MiB in use (7.6% more), so a fit
 * of bytes in use predicted every batch too large. */
int64_t gt_room_pool_reserved_max(struct gt_ctx *c, int d)
{
    static const char *const sql[] = {
        "SELECT MAX(size) FROM memory_pools WHERE (?1 < 0 OR device = ?1) AND size IS NOT NULL",
        "SELECT MAX(pool_size) FROM driver_memory WHERE (?1 < 0 OR device = ?1) AND pool_size IS NOT NULL",
    };
    int64_t best = -1;
    for (int q = 0; q < 2; q++) {
        sqlite3_stmt *st;
        if (gt_trace_prepare_optional(&c->t, sql[q], &st, "reading the pool's reservation") || !st)
            continue;   /* (a trace from before the table) */
        sqlite3_bind_int64(st, 1, d == GT_ANY_DEVICE ? -1 : d);
        if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_type(st, 0) != SQLITE_NULL &&
            sqlite3_column_int64(st, 0) > best)
            best = sqlite3_column_int64(st, 0);
        sqlite3_finalize(st);
    }
    return best;
}

/* The rounding bound allocation event e adds (0: none): a device allocation
 * on r's device (and a pool allocation, when the pool's reservation is not
 * read), up to its level's granularity less a byte. */
int64_t gt_room_rounding_of(const struct gt_trace *t, const struct gt_room *r, const struct gt_event *e)
{
    const struct gt_api_attr *a = gt_attr(t, e);
    if (e->failed || !a->known || a->op != GT_OP_ALLOC || e->device != r->device || e->size <= 0)
        return 0;
    if (a->memory == GT_MEM_POOL && !r->pool_read)
        return r->pool_granularity - 1;
    if (a->memory == GT_MEM_DEVICE && strcmp(a->name, "cuMemCreate"))
        return r->granularity - 1;
    return 0;
}

/* The rounding bound at event at: what every allocation live there adds;
 * the counts in *rounded (device) and *rounded_pool. */
int64_t gt_room_rounding_at(const struct gt_ctx *c, const struct gt_room *r, uint32_t at, int64_t *rounded,
                            int64_t *rounded_pool)
{
    const struct gt_trace *t = &c->t;
    int64_t margin = 0;
    *rounded = *rounded_pool = 0;
    for (size_t i = 0; i <= at && i < t->nev; i++) {
        int64_t g = gt_room_rounding_of(t, r, &t->ev[i]);
        uint32_t f = c->p.partner[i];
        if (!g || (f != GT_NO_EVENT && f <= at))
            continue;   /* no bound, or freed before */
        margin += g;
        if (gt_attr(t, &t->ev[i])->memory == GT_MEM_POOL)
            (*rounded_pool)++;
        else
            (*rounded)++;
    }
    return margin;
}

int gt_room_compute(struct gt_ctx *c, const struct gt_sel *sel, uint32_t peak_ev, struct gt_room *r)
{
    struct gt_trace *t = &c->t;
    memset(r, 0, sizeof *r);
    r->total = r->available = r->margin = r->pool_slack = -1;
    int d = sel->device != GT_ANY_DEVICE ? sel->device
            : peak_ev != GT_NO_EVENT && t->ev[peak_ev].device >= 0 ? t->ev[peak_ev].device : 0;
    r->device = d;
    r->pool_reserved_max = sel->mem_mask & GT_MASK(GT_MEM_POOL) ? gt_room_pool_reserved_max(c, d) : -1;
    int code = gt_ledger_untraced(c, d, &r->untraced);
    if (code)
        return code;
    if (c->o->device_bytes >= 0) {
        r->total = c->o->device_bytes;
        r->total_from = "--device-bytes";
    } else if (r->untraced.total > 0) {
        r->total = r->untraced.total;
        r->total_from = "NVML";
    } else {
        r->total = gt_trace_device_total(t, d);
        r->total_from = "devices table";
    }
    /* traced memory beside the fitted level does not grow with the batch:
     * its peaks, summed (an upper bound) */
    struct gt_level *lv;
    size_t n = gt_levels(t, &c->p, &lv);
    for (size_t i = 0; i < n; i++) {
        if (lv[i].device != d || (lv[i].memory != GT_MEM_DEVICE && lv[i].memory != GT_MEM_POOL))
            continue;
        if (!(sel->mem_mask & GT_MASK(lv[i].memory)))
            r->other_levels += lv[i].peak;
    }
    free(lv);
    int64_t graph_least;
    r->graph_memory = gt_ledger_graph_memory_max(t, d, &graph_least);
    r->graph_memory_grew = graph_least > 0 && graph_least < r->graph_memory;
    /* Without NVML the context and other processes are unmeasured: only a
     * total the user gives (--device-bytes) is taken as what the traced
     * memory may use. */
    if (r->total > 0 && (r->untraced.bytes >= 0 || c->o->device_bytes >= 0))
        r->available = r->total - (r->untraced.bytes > 0 ? r->untraced.bytes : 0) - r->other_levels - r->graph_memory;
    if (peak_ev == GT_NO_EVENT)
        return GT_EXIT_OK;

    /* The rounding margin, at the fitted level's peak: for every live device
     * allocation, up to one granularity less a byte. A pool whose
     * reservation the trace reads (the writer's readings, or CUPTI's records)
     * has its rounding and fragmentation measured per batch size instead
     * (margin.c); without readings, each live pool allocation gets the
     * rounding bound too. */
    r->pool_read = gt_ledger_pool_reserved(t, d, INT64_MAX) >= 0;
    int64_t g_device = granularity(t, GT_MEM_DEVICE, d), g_pool = granularity(t, GT_MEM_POOL, d);
    r->granularity = g_device;
    r->pool_granularity = g_pool;
    r->margin = gt_room_rounding_at(c, r, peak_ev, &r->rounded, &r->rounded_pool);
    return GT_EXIT_OK;
}
