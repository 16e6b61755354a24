/* live.h - the live-memory replay: pairs each allocation with the free that
 * ends it, and measures live bytes over time for a selection of memory kinds
 * and devices (per iteration, at the peak, at process end, per call site). */
#ifndef GT_LIVE_H
#define GT_LIVE_H
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include "schema_sql.h"
#include "trace.h"

#define GT_NO_EVENT UINT32_MAX
#define GT_ANY_DEVICE INT_MIN
#define GT_MASK(m) (1u << (m))
/* what "--memory all" selects: every kind that holds memory */
#define GT_MASK_ALL (GT_MASK(GT_MEM_DEVICE) | GT_MASK(GT_MEM_POOL) | GT_MASK(GT_MEM_MANAGED) | GT_MASK(GT_MEM_HOST))

/* partner[i]: for a successful alloc, the index of the free that ends it
 * (GT_NO_EVENT: live at the end of the trace); for a free, its alloc
 * (GT_NO_EVENT: the alloc was not traced); GT_NO_EVENT for anything else. */
struct gt_pairs {
    uint32_t *partner;
    size_t unmatched_frees;       /* frees of addresses not allocated in the trace */
    size_t reallocated_unfreed;   /* address allocated again without a free between */
};

/* Which memory a number counts: kinds (GT_MASK of enum gt_memory) and one
 * device ordinal or GT_ANY_DEVICE. */
struct gt_sel {
    unsigned mem_mask;
    int device;
    /* NULL: any thread's; else only allocations a with loop_of[a] == loop
     * (gt_ctx_event_loops: the events made on one loop's thread) */
    const unsigned char *loop_of;
    unsigned char loop;
};

/* Pairs allocations and frees by (apis.space, ptr), like the schema's
 * allocations view: the next free of the same address ends an allocation.
 * Requires events loaded; p->partner has t->nev entries. */
void gt_pair_events(const struct gt_trace *t, struct gt_pairs *p);
void gt_pairs_free(struct gt_pairs *p);

/* Index of the alloc event that event i allocates or frees, or GT_NO_EVENT
 * when i changes no live memory (failed, map/unmap, unknown api, unmatched
 * free). */
static inline uint32_t gt_alloc_of(const struct gt_trace *t, const struct gt_pairs *p, size_t i)
{
    const struct gt_event *e = &t->ev[i];
    if (e->failed || !t->api[e->api].known)
        return GT_NO_EVENT;
    if (t->api[e->api].op == GT_OP_ALLOC)
        return (uint32_t)i;
    if (t->api[e->api].op == GT_OP_FREE)
        return p->partner[i];
    return GT_NO_EVENT;
}

/* Does the successful alloc event a count in selection s? */
static inline int gt_sel_has(const struct gt_trace *t, const struct gt_sel *s, const struct gt_event *a)
{
    return (s->mem_mask & GT_MASK(t->api[a->api].memory)) && (s->device == GT_ANY_DEVICE || a->device == s->device) &&
           (!s->loop_of || s->loop_of[a - t->ev] == s->loop);
}

/* Change of live bytes in selection s caused by event i. */
static inline int64_t gt_delta(const struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *s, size_t i)
{
    uint32_t a = gt_alloc_of(t, p, i);
    if (a == GT_NO_EVENT)
        return 0;
    const struct gt_event *ae = &t->ev[a];
    if (ae->size <= 0 || !gt_sel_has(t, s, ae))
        return 0;
    return a == i ? ae->size : -ae->size;
}

/* Reports that keep live bytes per (memory kind, device) put device d at slot
 * d and host memory (device -1) at slot GT_HOST_SLOT. */
#define GT_HOST_SLOT 64

/* Event i's change of live bytes, and the memory kind and slot it lands in;
 * 0 (and *memory, *slot untouched) when it changes no countable memory. */
static inline int64_t gt_slot_delta(const struct gt_trace *t, const struct gt_pairs *p, size_t i, int *memory, int *slot)
{
    uint32_t a = gt_alloc_of(t, p, i);
    if (a == GT_NO_EVENT)
        return 0;
    const struct gt_event *ae = &t->ev[a];
    int d = ae->device == -1 ? GT_HOST_SLOT : ae->device;
    if (d < 0 || d > GT_HOST_SLOT || ae->size <= 0)
        return 0;
    *memory = t->api[ae->api].memory;
    *slot = d;
    return a == i ? ae->size : -ae->size;
}

/* Live bytes of one memory kind on one device over the whole trace. */
struct gt_level {
    int memory, device;
    int64_t peak, peak_t, final;
    size_t peak_ev;
    int64_t allocs, frees, alloc_bytes;
};
/* All (memory kind, device) pairs that hold memory, sorted by memory then
 * device. Returns the count; *out is malloc'ed. */
size_t gt_levels(const struct gt_trace *t, const struct gt_pairs *p, struct gt_level **out);

/* Overall peak of selection s: bytes, and the event after which it was
 * reached (GT_NO_EVENT if nothing was ever live). */
int64_t gt_sel_peak(const struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *s, uint32_t *peak_ev);

/* Live memory of selection s per iteration window [first_ev, end_ev). */
struct gt_window {
    size_t first_ev, end_ev;     /* input; windows sorted and disjoint */
    int64_t start_live, end_live, peak;   /* output */
    uint32_t peak_ev;            /* GT_NO_EVENT: the peak is the live bytes at the start */
};
void gt_window_live(const struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *s, struct gt_window *w, size_t n);

/* Allocations of selection s live just before event i (i = nev: at the end),
 * grouped by call site, sorted by bytes (largest first). */
struct gt_site_sum {
    int32_t site;        /* -1: no stack */
    int memory;          /* enum gt_memory, or -1 if the site holds several kinds */
    int64_t bytes, count;
};
size_t gt_live_sites_before(const struct gt_trace *t, const struct gt_pairs *p, const struct gt_sel *s, size_t i,
                            struct gt_site_sum **out, int64_t *total_bytes, int64_t *total_count);

/* Name of a memory kind ("device", "pool", ...), "mixed" for -1. */
const char *gt_memory_name(int memory);

#endif
