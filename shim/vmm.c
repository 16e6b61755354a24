/* Writer-side bookkeeping of the CUDA virtual-memory API, so the trace counts
 * physical memory exactly: a handle's memory is held from cuMemCreate until
 * its last reference is released (cuMemCreate's, and one per
 * cuMemRetainAllocationHandle), or, when the handle is still mapped then,
 * until the cuMemUnmap that removes its last mapping. A handle imported from
 * another process (cuMemImportFromShareableHandle) holds none of this
 * process's memory: its release is stored as 'cuMemRelease_imported' and its
 * last unmap frees nothing. The writer asks gt_vmm_track() which apis row to
 * store for each successful VMM event and, after a cuMemUnmap, takes the
 * handles whose memory it gave back (it writes a 'cuMemUnmap_last_mapping'
 * free for each). Writer thread only. */
#include <stdlib.h>
#include <string.h>

#include "shim.h"
#include "u64map.h"
#include "vmm.h"

struct mapping { uint64_t va, size, handle; };

static struct {
    struct mapping *map; /* live mappings, sorted by va */
    size_t n, cap;
    struct u64map handles; /* handle -> (live mappings, flags: H_*, retains << H_SHIFT) */
    uint64_t *freed;     /* handles whose memory the last cuMemUnmap gave back */
    size_t nfreed, cap_freed, taken;
} V;

/* A handle's flags (its entry's b): the creator's reference (cuMemCreate's or
 * the import's) was released; it was imported; and, above H_SHIFT, the
 * references cuMemRetainAllocationHandle added that are not yet released. */
#define H_RELEASED 1u
#define H_IMPORTED 2u
#define H_SHIFT 2
#define RETAINS(b) ((b) >> H_SHIFT)

/* Must the entry stay when it has no mapping? While a reference other than
 * the creator's is held, or an imported handle is not yet released (its
 * release must still be told apart from a plain cuMemRelease). */
static bool keep_unmapped(uint64_t b)
{
    return RETAINS(b) > 0 || ((b & H_IMPORTED) && !(b & H_RELEASED));
}

/* First mapping whose va >= va. */
static size_t lower_bound(uint64_t va)
{
    size_t lo = 0, hi = V.n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (V.map[mid].va < va)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

static void add_mapping(uint64_t va, uint64_t size, uint64_t handle)
{
    if (V.n == V.cap) {
        size_t cap = V.cap ? V.cap * 2 : 64;
        struct mapping *m = realloc(V.map, cap * sizeof *m);
        if (!m)
            return; /* out of memory: this mapping goes uncounted, its release is then immediate */
        V.map = m;
        V.cap = cap;
    }
    size_t i = lower_bound(va);
    memmove(&V.map[i + 1], &V.map[i], (V.n - i) * sizeof *V.map);
    V.map[i] = (struct mapping){va, size, handle};
    V.n++;
    struct u64map_entry *h = u64map_get(&V.handles, handle);
    if (h)
        h->a++;
    else
        u64map_put(&V.handles, handle, 1, 0);
}

/* Every reference released and no mapping left: the memory goes back (not
 * this process's when imported). */
static bool gone(uint64_t a, uint64_t b)
{
    return a == 0 && (b & H_RELEASED) && RETAINS(b) == 0;
}

static bool push_freed(uint64_t handle)
{
    if (V.nfreed == V.cap_freed) {
        size_t cap = V.cap_freed ? V.cap_freed * 2 : 16;
        uint64_t *f = realloc(V.freed, cap * sizeof *f);
        if (!f)
            return false; /* out of memory: the handle stays counted as live */
        V.freed = f;
        V.cap_freed = cap;
    }
    V.freed[V.nfreed++] = handle;
    return true;
}

/* Removes every mapping inside [va, va + size): cuMemUnmap takes a range. */
static void remove_mappings(uint64_t va, uint64_t size)
{
    size_t i = lower_bound(va), j = i;
    while (j < V.n && V.map[j].va < va + size)
        j++;
    for (size_t k = i; k < j; k++) {
        struct u64map_entry *h = u64map_get(&V.handles, V.map[k].handle);
        if (!h || --h->a > 0 || keep_unmapped(h->b))
            continue;
        uint64_t flags = h->b, a, b;
        u64map_del(&V.handles, V.map[k].handle, &a, &b);
        if (gone(0, flags) && !(flags & H_IMPORTED) && push_freed(V.map[k].handle))
            continue;
    }
    memmove(&V.map[i], &V.map[j], (V.n - j) * sizeof *V.map);
    V.n -= j - i;
}

/* Which row a successful cuMemRelease of handle is: one reference fewer
 * (any reference: they are alike); the memory is freed by the release that
 * drops the last one, or by the last cuMemUnmap after it. */
static int release(uint64_t handle)
{
    struct u64map_entry *h = u64map_get(&V.handles, handle);
    if (!h)
        return GT_API_cuMemRelease;   /* neither mapped, retained nor imported: freed now */
    bool was_released = h->b & H_RELEASED, imported = h->b & H_IMPORTED;
    if (RETAINS(h->b) > 0)
        h->b -= 1u << H_SHIFT;
    else
        h->b |= H_RELEASED;
    if (!(h->b & H_RELEASED) || RETAINS(h->b) > 0)
        return GT_API_cuMemRelease_while_retained;   /* a reference is left */
    /* the import pairs with one release: the first that leaves no reference
     * (a mapped handle can be retained and released again after it) */
    if (imported && was_released)
        return GT_API_cuMemRelease_while_retained;
    if (h->a > 0)   /* freed by the last cuMemUnmap (nothing of ours if imported) */
        return imported ? GT_API_cuMemRelease_imported : GT_API_cuMemRelease_while_mapped;
    uint64_t a, b;
    u64map_del(&V.handles, handle, &a, &b);
    return imported ? GT_API_cuMemRelease_imported : GT_API_cuMemRelease;
}

int gt_vmm_track(const struct gt_call *ev)
{
    if (ev->result != 0)
        return ev->api;
    switch (ev->api) {
    case GT_API_cuMemMap:
        add_mapping(ev->ptr, ev->size, ev->handle);
        break;
    case GT_API_cuMemUnmap:
        V.nfreed = V.taken = 0;
        remove_mappings(ev->ptr, ev->size);
        break;
    case GT_API_cuMemImportFromShareableHandle:
        u64map_put(&V.handles, ev->ptr, 0, H_IMPORTED);
        break;
    case GT_API_cuMemRetainAllocationHandle: {
        struct u64map_entry *h = u64map_get(&V.handles, ev->ptr);
        if (h)   /* unknown: mapped before the trace started; its releases pair with nothing */
            h->b += 1u << H_SHIFT;
        break;
    }
    case GT_API_cuMemRelease:
        return release(ev->ptr);
    default:
        break;
    }
    return ev->api;
}

bool gt_vmm_take_freed(uint64_t *handle)
{
    if (V.taken == V.nfreed)
        return false;
    *handle = V.freed[V.taken++];
    return true;
}

void gt_vmm_reset(void)
{
    free(V.map);
    free(V.freed);
    u64map_free(&V.handles);
    memset(&V, 0, sizeof V);
}
