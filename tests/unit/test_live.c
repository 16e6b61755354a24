/* Unit tests of the analyzer's live-memory replay (analyzer/live.c) on
 * traces built in memory: pairing by (space, address) with unknown, double
 * and failed frees, addresses allocated again while live, VMM rows, and a
 * long random trace against the naive rule the schema's allocations view
 * states; then live bytes per kind and device, selections, iteration
 * windows and the call sites live at a point. */
#include "synth_trace.h"
#include "tap.h"

#define NONE GT_NO_EVENT
#define MIB (1 << 20)

static struct gt_pairs pair(struct synth *s)
{
    struct gt_pairs p;
    gt_pair_events(&s->t, &p);
    return p;
}

static void test_alloc_and_free_pair_both_ways(void)
{
    struct synth s;
    synth_init(&s);
    size_t a = synth_alloc(&s, GT_API_cudaMalloc, 0x1000, 512, 0);
    size_t b = synth_alloc(&s, GT_API_cudaMalloc, 0x2000, 1024, 0);
    size_t fa = synth_free(&s, GT_API_cudaFree, 0x1000, 512);
    size_t fb = synth_free(&s, GT_API_cuMemFree_v2, 0x2000, 1024); /* runtime memory freed by the driver */
    struct gt_pairs p = pair(&s);
    CHECK_EQ_INT(p.partner[a], fa);
    CHECK_EQ_INT(p.partner[fa], a);
    CHECK_EQ_INT(p.partner[b], fb);
    CHECK_EQ_INT(p.partner[fb], b);
    CHECK_EQ_INT(p.unmatched_frees, 0);
    CHECK_EQ_INT(p.reallocated_unfreed, 0);
    CHECK_EQ_INT(gt_alloc_of(&s.t, &p, fa), a);
    gt_pairs_free(&p);
    synth_done(&s);
}

static void test_unknown_and_double_frees_end_nothing(void)
{
    struct synth s;
    synth_init(&s);
    size_t unknown = synth_free(&s, GT_API_cudaFree, 0x9000, -1);
    size_t a = synth_alloc(&s, GT_API_cudaMalloc, 0x1000, 512, 0);
    size_t f1 = synth_free(&s, GT_API_cudaFree, 0x1000, 512);
    size_t f2 = synth_free(&s, GT_API_cudaFree, 0x1000, -1);
    struct gt_pairs p = pair(&s);
    CHECK_EQ_INT(p.partner[unknown], NONE);
    CHECK_EQ_INT(p.partner[a], f1);
    CHECK_EQ_INT(p.partner[f2], NONE);
    CHECK_EQ_INT(p.unmatched_frees, 2);
    CHECK_EQ_INT(gt_alloc_of(&s.t, &p, f2), NONE);
    gt_pairs_free(&p);
    synth_done(&s);
}

static void test_failed_calls_neither_allocate_nor_free(void)
{
    struct synth s;
    synth_init(&s);
    size_t a = synth_alloc(&s, GT_API_cudaMalloc, 0x1000, 512, 0);
    size_t bad_free = synth_call(&s, GT_API_cudaFree, 0x1000, -1, 0, -1, 1);   /* cudaErrorInvalidValue */
    size_t oom = synth_call(&s, GT_API_cudaMalloc, 0, 1ll << 40, 0, -1, 2);    /* out of memory */
    size_t f = synth_free(&s, GT_API_cudaFree, 0x1000, 512);
    struct gt_pairs p = pair(&s);
    CHECK_EQ_INT(p.partner[a], f);
    CHECK_EQ_INT(p.partner[bad_free], NONE);
    CHECK_EQ_INT(p.partner[oom], NONE);
    CHECK_EQ_INT(p.unmatched_frees, 0);
    CHECK_EQ_INT(gt_alloc_of(&s.t, &p, oom), NONE);
    gt_pairs_free(&p);
    synth_done(&s);
}

/* An address allocated again with no free between (a free the trace missed,
 * cudaDeviceReset): the older allocation stays unfreed, as in the view. */
static void test_address_allocated_again_leaves_the_older_unfreed(void)
{
    struct synth s;
    synth_init(&s);
    size_t a1 = synth_alloc(&s, GT_API_cudaMallocAsync, 0x1000, 512, 0);
    size_t a2 = synth_alloc(&s, GT_API_cudaMallocPitch, 0x1000, 2048, 0);
    size_t f = synth_free(&s, GT_API_cudaFree, 0x1000, 2048);
    struct gt_pairs p = pair(&s);
    CHECK_EQ_INT(p.partner[a1], NONE);
    CHECK_EQ_INT(p.partner[a2], f);
    CHECK_EQ_INT(p.reallocated_unfreed, 1);
    gt_pairs_free(&p);
    synth_done(&s);
}

/* Handles, reserved ranges and device addresses are separate spaces even
 * when their numbers are equal; map, unmap and a deferred release pair with
 * nothing, and the writer's cuMemUnmap_last_mapping row frees the handle. */
static void test_spaces_are_separate_and_vmm_rows_pair_as_the_schema_says(void)
{
    struct synth s;
    synth_init(&s);
    const uint64_t n = 0x140000000000ull;
    size_t dev = synth_alloc(&s, GT_API_cudaMalloc, n, 512, 0);
    size_t h = synth_alloc(&s, GT_API_cuMemCreate, n, 2 * MIB, 0);
    size_t va = synth_alloc(&s, GT_API_cuMemAddressReserve, n, 8 * MIB, 0);
    size_t map = synth_call(&s, GT_API_cuMemMap, n, 2 * MIB, 0, -1, 0);
    size_t defer = synth_free(&s, GT_API_cuMemRelease_while_mapped, n, 2 * MIB);
    size_t unmap = synth_call(&s, GT_API_cuMemUnmap, n, 2 * MIB, 0, -1, 0);
    size_t last = synth_free(&s, GT_API_cuMemUnmap_last_mapping, n, 2 * MIB);
    size_t vafree = synth_free(&s, GT_API_cuMemAddressFree, n, 8 * MIB);
    size_t devfree = synth_free(&s, GT_API_cudaFree, n, 512);
    struct gt_pairs p = pair(&s);
    CHECK_EQ_INT(p.partner[dev], devfree);
    CHECK_EQ_INT(p.partner[h], last);
    CHECK_EQ_INT(p.partner[va], vafree);
    CHECK_EQ_INT(p.partner[map], NONE);
    CHECK_EQ_INT(p.partner[defer], NONE);
    CHECK_EQ_INT(p.partner[unmap], NONE);
    CHECK_EQ_INT(gt_alloc_of(&s.t, &p, map), NONE);
    CHECK_EQ_INT(gt_alloc_of(&s.t, &p, defer), NONE);
    CHECK_EQ_INT(p.unmatched_frees, 0);
    gt_pairs_free(&p);
    synth_done(&s);
}

static void test_unknown_api_is_ignored(void)
{
    struct synth s;
    synth_init(&s);
    size_t a = synth_alloc(&s, GT_API_cudaMalloc, 0x1000, 512, 0);
    size_t odd = synth_free(&s, 200, 0x1000, 512); /* an apis row this analyzer does not know */
    size_t f = synth_free(&s, GT_API_cudaFree, 0x1000, 512);
    struct gt_pairs p = pair(&s);
    CHECK_EQ_INT(p.partner[a], f);
    CHECK_EQ_INT(p.partner[odd], NONE);
    CHECK_EQ_INT(gt_alloc_of(&s.t, &p, odd), NONE);
    gt_pairs_free(&p);
    synth_done(&s);
}

/* The allocations view's rule, naively: a successful alloc ends at the next
 * successful alloc or free of the same (space, ptr), if that is a free. */
static uint32_t view_partner(const struct gt_trace *t, size_t i)
{
    const struct gt_event *e = &t->ev[i];
    int space = t->api[e->api].space;
    for (size_t j = i + 1; j < t->nev; j++) {
        const struct gt_event *f = &t->ev[j];
        const struct gt_api_attr *a = &t->api[f->api];
        if (f->failed || !a->known || a->space != space || f->u.ptr != e->u.ptr)
            continue;
        if (a->op == GT_OP_ALLOC)
            return NONE;
        if (a->op == GT_OP_FREE)
            return (uint32_t)j;
    }
    return NONE;
}

static void test_random_trace_pairs_as_the_allocations_view_rule(void)
{
    static const int apis[] = {GT_API_cudaMalloc, GT_API_cudaFree, GT_API_cudaMallocAsync, GT_API_cudaFreeAsync,
                               GT_API_cuMemCreate, GT_API_cuMemRelease, GT_API_cuMemUnmap_last_mapping,
                               GT_API_cuMemMap, GT_API_cuMemAddressReserve, GT_API_cuMemAddressFree,
                               GT_API_cuMemRelease_while_mapped};
    struct synth s;
    synth_init(&s);
    unsigned seed = 7;
    for (int i = 0; i < 4000; i++) {
        seed = seed * 1103515245u + 12345u;
        int api = apis[(seed >> 8) % (sizeof apis / sizeof apis[0])];
        uint64_t ptr = 0x1000 * (1 + (seed >> 20) % 24); /* few addresses: many collisions */
        int64_t result = (seed >> 4) % 11 == 0;          /* some calls fail */
        synth_call(&s, api, ptr, 512, 0, -1, result);
    }
    struct gt_pairs p = pair(&s);
    size_t wrong = 0, unmatched = 0;
    for (size_t i = 0; i < s.t.nev; i++) {
        const struct gt_event *e = &s.t.ev[i];
        const struct gt_api_attr *a = &s.t.api[e->api];
        if (e->failed)
            continue;
        if (a->op == GT_OP_ALLOC) {
            uint32_t want = view_partner(&s.t, i);
            if (p.partner[i] != want && ++wrong <= 5)
                CHECKF(0, "event %zu: paired with %u, the view's rule says %u", i, p.partner[i], want);
        } else if (a->op == GT_OP_FREE) {
            if (p.partner[i] == NONE)
                unmatched++;
            else if (p.partner[p.partner[i]] != i && ++wrong <= 5)
                CHECKF(0, "free %zu: its alloc %u is paired with %u", i, p.partner[i], p.partner[p.partner[i]]);
        }
    }
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(p.unmatched_frees, unmatched);
    gt_pairs_free(&p);
    synth_done(&s);
}

/* ---- live bytes ------------------------------------------------------- */

static void test_levels_per_memory_kind_and_device(void)
{
    struct synth s;
    synth_init(&s);
    synth_call(&s, GT_API_cudaMalloc, 0x1000, 4 * MIB, 1, -1, 0);
    synth_call(&s, GT_API_cudaMalloc, 0x2000, 2 * MIB, 0, -1, 0);
    synth_call(&s, GT_API_cudaMallocAsync, 0x3000, 1 * MIB, 0, -1, 0);
    synth_call(&s, GT_API_cudaMallocHost, 0x4000, 8 * MIB, -1, -1, 0);
    synth_call(&s, GT_API_cudaMalloc, 0x5000, 3 * MIB, 0, -1, 0);     /* device 0 peak: 5 MiB */
    synth_call(&s, GT_API_cudaFree, 0x2000, 2 * MIB, 0, -1, 0);
    synth_call(&s, GT_API_cudaFreeAsync, 0x3000, 1 * MIB, 0, -1, 0);
    synth_call(&s, GT_API_cuMemAddressReserve, 0x6000, 64 * MIB, 0, -1, 0); /* holds no memory */
    struct gt_pairs p = pair(&s);
    struct gt_level *lv;
    size_t n = gt_levels(&s.t, &p, &lv);
    CHECK_EQ_INT(n, 4);
    if (n == 4) {
        /* sorted by memory kind, then device */
        CHECK(lv[0].memory == GT_MEM_DEVICE && lv[0].device == 0);
        CHECK(lv[1].memory == GT_MEM_DEVICE && lv[1].device == 1);
        CHECK(lv[2].memory == GT_MEM_POOL && lv[2].device == 0);
        CHECK(lv[3].memory == GT_MEM_HOST && lv[3].device == -1);
        CHECK_EQ_INT(lv[0].peak, 5 * MIB);
        CHECK_EQ_INT(lv[0].peak_ev, 4);
        CHECK_EQ_INT(lv[0].peak_t, s.t.ev[4].t);
        CHECK_EQ_INT(lv[0].final, 3 * MIB);
        CHECK_EQ_INT(lv[0].allocs, 2);
        CHECK_EQ_INT(lv[0].frees, 1);
        CHECK_EQ_INT(lv[0].alloc_bytes, 5 * MIB);
        CHECK_EQ_INT(lv[1].peak, 4 * MIB);
        CHECK_EQ_INT(lv[2].peak, 1 * MIB);
        CHECK_EQ_INT(lv[2].final, 0);
        CHECK_EQ_INT(lv[3].final, 8 * MIB);
    }
    free(lv);
    gt_pairs_free(&p);
    synth_done(&s);
}

/* A free counts in its allocation's kind and device, whatever its own row
 * says (cudaFree of pool memory; a free written without a device). */
static void test_free_counts_in_its_allocations_kind_and_device(void)
{
    struct synth s;
    synth_init(&s);
    synth_call(&s, GT_API_cudaMallocAsync, 0x1000, 4 * MIB, 1, -1, 0);
    size_t f = synth_call(&s, GT_API_cudaFree, 0x1000, 4 * MIB, GT_DEVICE_NULL, -1, 0);
    struct gt_pairs p = pair(&s);
    struct gt_sel pool1 = {.mem_mask = GT_MASK(GT_MEM_POOL), .device = 1}, device = {.mem_mask = GT_MASK(GT_MEM_DEVICE), .device = GT_ANY_DEVICE};
    CHECK_EQ_INT(gt_delta(&s.t, &p, &pool1, f), -4 * MIB);
    CHECK_EQ_INT(gt_delta(&s.t, &p, &device, f), 0);
    int memory = -1, slot = -1;
    CHECK_EQ_INT(gt_slot_delta(&s.t, &p, f, &memory, &slot), -4 * MIB);
    CHECK_EQ_INT(memory, GT_MEM_POOL);
    CHECK_EQ_INT(slot, 1);
    gt_pairs_free(&p);
    synth_done(&s);
}

static void test_selection_peak_by_kind_and_device(void)
{
    struct synth s;
    synth_init(&s);
    synth_call(&s, GT_API_cudaMalloc, 0x1000, 4 * MIB, 0, -1, 0);
    synth_call(&s, GT_API_cudaMalloc, 0x2000, 6 * MIB, 1, -1, 0);
    synth_call(&s, GT_API_cudaFree, 0x1000, 4 * MIB, 0, -1, 0);
    synth_call(&s, GT_API_cudaMallocAsync, 0x3000, 5 * MIB, 0, -1, 0);
    synth_call(&s, GT_API_cudaMallocHost, 0x4000, 1 * MIB, -1, -1, 0);
    struct gt_pairs p = pair(&s);
    uint32_t at;
    struct gt_sel dev0 = {.mem_mask = GT_MASK(GT_MEM_DEVICE), .device = 0}, dev_any = {.mem_mask = GT_MASK(GT_MEM_DEVICE), .device = GT_ANY_DEVICE};
    struct gt_sel all = {.mem_mask = GT_MASK_ALL, .device = GT_ANY_DEVICE}, managed = {.mem_mask = GT_MASK(GT_MEM_MANAGED), .device = GT_ANY_DEVICE};
    CHECK_EQ_INT(gt_sel_peak(&s.t, &p, &dev0, &at), 4 * MIB);
    CHECK_EQ_INT(at, 0);
    CHECK_EQ_INT(gt_sel_peak(&s.t, &p, &dev_any, &at), 10 * MIB);
    CHECK_EQ_INT(at, 1);
    CHECK_EQ_INT(gt_sel_peak(&s.t, &p, &all, &at), 12 * MIB);
    CHECK_EQ_INT(at, 4);
    CHECK_EQ_INT(gt_sel_peak(&s.t, &p, &managed, &at), 0);
    CHECK_EQ_INT(at, NONE);
    gt_pairs_free(&p);
    synth_done(&s);
}

static void test_windows_get_start_end_and_peak(void)
{
    struct synth s;
    synth_init(&s);
    synth_alloc(&s, GT_API_cudaMalloc, 0x100, 10, -1);   /* 0: weights, kept */
    for (int k = 0; k < 3; k++) {                        /* events 1+4k .. 4+4k */
        uint64_t a = 0x1000 * (k + 1);
        synth_alloc(&s, GT_API_cudaMalloc, a, 100, -1);
        synth_alloc(&s, GT_API_cudaMalloc, a + 0x800, 50 * (k + 1), -1);
        synth_free(&s, GT_API_cudaFree, a, 100);
        synth_alloc(&s, GT_API_cudaMalloc, a + 0x900, 1, -1); /* one byte leaked per iteration */
    }
    struct gt_pairs p = pair(&s);
    struct gt_sel sel = {.mem_mask = GT_MASK(GT_MEM_DEVICE), .device = GT_ANY_DEVICE};
    struct gt_window w[3] = {{1, 5, 0, 0, 0, 0}, {5, 9, 0, 0, 0, 0}, {9, 13, 0, 0, 0, 0}};
    gt_window_live(&s.t, &p, &sel, w, 3);
    int64_t start = 10;
    for (int k = 0; k < 3; k++) {
        CHECK_EQ_INT(w[k].start_live, start);
        CHECK_EQ_INT(w[k].peak, start + 100 + 50 * (k + 1));
        CHECK_EQ_INT(w[k].peak_ev, 2 + 4 * k);
        start += 50 * (k + 1) + 1;
        CHECK_EQ_INT(w[k].end_live, start);
    }
    /* a window where nothing is allocated: the peak is its start */
    struct gt_window quiet = {3, 4, 0, 0, 0, 0};
    gt_window_live(&s.t, &p, &sel, &quiet, 1);
    CHECK_EQ_INT(quiet.peak_ev, NONE);
    CHECK_EQ_INT(quiet.peak, quiet.start_live);
    CHECK_EQ_INT(quiet.end_live, quiet.start_live - 100);
    gt_pairs_free(&p);
    synth_done(&s);
}

static void test_sites_live_before_an_event_largest_first(void)
{
    struct synth s;
    synth_init(&s);
    synth_alloc(&s, GT_API_cudaMalloc, 0x1000, 100, 0);
    synth_alloc(&s, GT_API_cudaMalloc, 0x2000, 100, 0);
    synth_alloc(&s, GT_API_cudaMalloc, 0x3000, 300, 1);
    synth_alloc(&s, GT_API_cudaMallocHost, 0x4000, 50, 1);   /* site 1 holds two kinds */
    synth_alloc(&s, GT_API_cudaMalloc, 0x5000, 7, -1);       /* no stack */
    synth_alloc(&s, GT_API_cudaMalloc, 0x6000, 1000, 2);
    size_t f = synth_free(&s, GT_API_cudaFree, 0x6000, 1000);
    synth_free(&s, GT_API_cudaFree, 0x1000, 100);
    struct gt_pairs p = pair(&s);
    struct gt_sel all = {.mem_mask = GT_MASK_ALL, .device = GT_ANY_DEVICE}, device = {.mem_mask = GT_MASK(GT_MEM_DEVICE), .device = GT_ANY_DEVICE};
    struct gt_site_sum *sum;
    int64_t bytes = 0, count = 0;
    size_t n = gt_live_sites_before(&s.t, &p, &all, s.t.nev, &sum, &bytes, &count);
    CHECK_EQ_INT(n, 3);
    CHECK_EQ_INT(bytes, 100 + 300 + 50 + 7);
    CHECK_EQ_INT(count, 4);
    if (n == 3) {
        CHECK(sum[0].site == 1 && sum[0].bytes == 350 && sum[0].count == 2 && sum[0].memory == -1);
        CHECK(sum[1].site == 0 && sum[1].bytes == 100 && sum[1].count == 1 && sum[1].memory == GT_MEM_DEVICE);
        CHECK(sum[2].site == -1 && sum[2].bytes == 7);
    }
    free(sum);
    /* just before the free of site 2's allocation, it is live; device only */
    n = gt_live_sites_before(&s.t, &p, &device, f, &sum, &bytes, &count);
    CHECK_EQ_INT(bytes, 100 + 100 + 300 + 7 + 1000);
    CHECK(n >= 1 && sum[0].site == 2 && sum[0].bytes == 1000);
    free(sum);
    gt_pairs_free(&p);
    synth_done(&s);
}

static void test_memory_names(void)
{
    CHECK(!strcmp(gt_memory_name(GT_MEM_DEVICE), "device"));
    CHECK(!strcmp(gt_memory_name(GT_MEM_POOL), "pool"));
    CHECK(!strcmp(gt_memory_name(GT_MEM_HOST), "host"));
    CHECK(!strcmp(gt_memory_name(-1), "mixed"));
    CHECK(!strcmp(gt_memory_name(99), "mixed"));
}

int main(void)
{
    TAP_RUN(test_alloc_and_free_pair_both_ways);
    TAP_RUN(test_unknown_and_double_frees_end_nothing);
    TAP_RUN(test_failed_calls_neither_allocate_nor_free);
    TAP_RUN(test_address_allocated_again_leaves_the_older_unfreed);
    TAP_RUN(test_spaces_are_separate_and_vmm_rows_pair_as_the_schema_says);
    TAP_RUN(test_unknown_api_is_ignored);
    TAP_RUN(test_random_trace_pairs_as_the_allocations_view_rule);
    TAP_RUN(test_levels_per_memory_kind_and_device);
    TAP_RUN(test_free_counts_in_its_allocations_kind_and_device);
    TAP_RUN(test_selection_peak_by_kind_and_device);
    TAP_RUN(test_windows_get_start_end_and_peak);
    TAP_RUN(test_sites_live_before_an_event_largest_first);
    TAP_RUN(test_memory_names);
    return tap_done();
}
