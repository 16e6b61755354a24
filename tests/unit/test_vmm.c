/* Unit tests of the writer's VMM bookkeeping (shim/vmm.c): every sequence of
 * up to 9 calls on one handle that the driver accepts (map at two addresses,
 * unmap each, cuMemRetainAllocationHandle, cuMemRelease), against a model of
 * the driver: memory is freed when no reference and no mapping is left. The
 * trace must free it exactly then, exactly once (a cuMemRelease row or a
 * cuMemUnmap_last_mapping after the unmap). For an imported handle, nothing
 * of this process is ever freed, and its one cuMemRelease_imported row comes
 * with the release of its last reference. */
#include <stdlib.h>

#include "tap.h"
#include "vmm.h"

#define H 0x140000000010ull
#define VA0 0x380000000000ull
#define VA1 0x380000400000ull
#define SZ 0x200000ull

enum op { MAP0, MAP1, UNMAP0, UNMAP1, RETAIN, RELEASE, NOPS };

struct model { int refs, mapped[2]; };

static int allowed(const struct model *m, enum op o)
{
    switch (o) {
    case MAP0: case MAP1: return m->refs > 0 && !m->mapped[o - MAP0];
    case UNMAP0: case UNMAP1: return m->mapped[o - UNMAP0];
    case RETAIN: return m->mapped[0] || m->mapped[1];
    default: return m->refs > 0;
    }
}

/* Runs op on vmm.c; returns 1 if the trace frees the handle's memory here
 * (and *imported_free: an imported release row was stored). */
static int step(enum op o, int *imported_free)
{
    struct gt_call c = {0};
    c.result = 0;
    switch (o) {
    case MAP0: case MAP1:
        c.api = GT_API_cuMemMap, c.ptr = o == MAP0 ? VA0 : VA1, c.size = SZ, c.handle = H;
        break;
    case UNMAP0: case UNMAP1:
        c.api = GT_API_cuMemUnmap, c.ptr = o == UNMAP0 ? VA0 : VA1, c.size = SZ;
        break;
    case RETAIN:
        c.api = GT_API_cuMemRetainAllocationHandle, c.ptr = H;
        break;
    default:
        c.api = GT_API_cuMemRelease, c.ptr = H;
    }
    int api = gt_vmm_track(&c), freed = api == GT_API_cuMemRelease;
    *imported_free = api == GT_API_cuMemRelease_imported;
    uint64_t h;
    while (gt_vmm_take_freed(&h))
        freed += h == H;
    return freed;
}

static long sequences, bad;

static void explore(struct model m, int depth, int imported, int *seq, int n)
{
    if (m.refs == 0 && !m.mapped[0] && !m.mapped[1])
        return;   /* the handle is gone: a sequence ends here */
    if (depth == 0)
        return;
    for (int o = 0; o < NOPS; o++) {
        if (!allowed(&m, (enum op)o))
            continue;
        /* replay the prefix, then o, from a fresh state */
        gt_vmm_reset();
        int imp_rows = 0, frees = 0, at = -1, imp_at = -1, ifree;
        if (imported) {
            struct gt_call c = {.api = GT_API_cuMemImportFromShareableHandle, .ptr = H};
            gt_vmm_track(&c);
        }
        seq[n] = o;
        for (int k = 0; k <= n; k++) {
            int f = step((enum op)seq[k], &ifree);
            if (f && at < 0)
                at = k;
            frees += f;
            if (ifree && imp_at < 0)
                imp_at = k;
            imp_rows += ifree;
        }
        struct model next = m;
        switch (o) {
        case MAP0: case MAP1: next.mapped[o - MAP0] = 1; break;
        case UNMAP0: case UNMAP1: next.mapped[o - UNMAP0] = 0; break;
        case RETAIN: next.refs++; break;
        default: next.refs--;
        }
        int gone = next.refs == 0 && !next.mapped[0] && !next.mapped[1];
        sequences++;
        if (imported) {
            /* the import's one free row comes with the last reference's release */
            int expect_at = -1;
            struct model r = {1, {0, 0}};
            for (int k = 0; k <= n && expect_at < 0; k++) {
                if (seq[k] == RELEASE && --r.refs == 0)
                    expect_at = k;
                else if (seq[k] == RETAIN)
                    r.refs++;
            }
            if (frees || imp_rows != (expect_at >= 0) || imp_at != expect_at) {
                if (bad++ < 10)
                    CHECKF(0, "imported, sequence of %d: %d frees, %d import releases at %d, expected at %d", n + 1, frees,
                           imp_rows, imp_at, expect_at);
            }
        } else if (frees != gone || (gone && at != n)) {
            if (bad++ < 10) {
                char text[128] = "";
                for (int k = 0; k <= n; k++)
                    snprintf(text + strlen(text), sizeof text - strlen(text), "%s ",
                             (const char *[]){"map0", "map1", "unmap0", "unmap1", "retain", "release"}[seq[k]]);
                CHECKF(0, "%s: freed %d times (first at call %d), expected %d at call %d", text, frees, at, gone, n);
            }
        }
        explore(next, depth - 1, imported, seq, n + 1);
    }
}

static void own_handle_freed_when_no_reference_and_no_mapping_is_left(void)
{
    int seq[16];
    sequences = bad = 0;
    explore((struct model){1, {0, 0}}, 9, 0, seq, 0);
    CHECKF(sequences > 1000, "only %ld sequences explored", sequences);
    CHECK(bad == 0);
}

static void imported_handle_frees_nothing_and_releases_once(void)
{
    int seq[16];
    sequences = bad = 0;
    explore((struct model){1, {0, 0}}, 9, 1, seq, 0);
    CHECKF(sequences > 1000, "only %ld sequences explored", sequences);
    CHECK(bad == 0);
}

int main(void)
{
    TAP_RUN(own_handle_freed_when_no_reference_and_no_mapping_is_left);
    TAP_RUN(imported_handle_frees_nothing_and_releases_once);
    gt_vmm_reset();
    return tap_done();
}
