/* hmap.c - open-addressing hash map (see hmap.h). Linear probing keeps probes
 * in one cache line for the common case; deletion shifts later entries back
 * so lookups never need tombstones, which matters for the alloc/free replay
 * where every key is inserted once and deleted once. */
#include <stdlib.h>
#include <string.h>

#include "hmap.h"

static inline size_t slot_of(uint64_t key, size_t cap)
{
    /* splitmix64 finalizer: addresses are aligned, so low bits alone are poor */
    key ^= key >> 30;
    key *= 0xbf58476d1ce4e5b9ull;
    key ^= key >> 27;
    key *= 0x94d049bb133111ebull;
    key ^= key >> 31;
    return (size_t)key & (cap - 1);
}

void gt_hmap_init(struct gt_hmap *m)
{
    memset(m, 0, sizeof *m);
}

void gt_hmap_free(struct gt_hmap *m)
{
    free(m->keys);
    free(m->vals);
    gt_hmap_init(m);
}

uint32_t gt_hmap_get(const struct gt_hmap *m, uint64_t key)
{
    if (!m->cap)
        return GT_HMAP_NONE;
    for (size_t i = slot_of(key, m->cap);; i = (i + 1) & (m->cap - 1)) {
        if (m->vals[i] == GT_HMAP_NONE)
            return GT_HMAP_NONE;
        if (m->keys[i] == key)
            return m->vals[i];
    }
}

/* Doubles the table (or creates it); returns 0 on success, -1 out of memory. */
static int grow(struct gt_hmap *m)
{
    size_t ncap = m->cap ? m->cap * 2 : 64;
    uint64_t *nk = malloc(ncap * sizeof *nk);
    uint32_t *nv = malloc(ncap * sizeof *nv);
    if (!nk || !nv) {
        free(nk);
        free(nv);
        return -1;
    }
    memset(nv, 0xff, ncap * sizeof *nv);
    for (size_t i = 0; i < m->cap; i++) {
        if (m->vals[i] == GT_HMAP_NONE)
            continue;
        size_t j = slot_of(m->keys[i], ncap);
        while (nv[j] != GT_HMAP_NONE)
            j = (j + 1) & (ncap - 1);
        nk[j] = m->keys[i];
        nv[j] = m->vals[i];
    }
    free(m->keys);
    free(m->vals);
    m->keys = nk;
    m->vals = nv;
    m->cap = ncap;
    return 0;
}

uint32_t gt_hmap_put(struct gt_hmap *m, uint64_t key, uint32_t val)
{
    if ((m->len + 1) * 4 > m->cap * 3 && grow(m) != 0)
        return GT_HMAP_OOM;
    size_t i = slot_of(key, m->cap);
    for (; m->vals[i] != GT_HMAP_NONE; i = (i + 1) & (m->cap - 1)) {
        if (m->keys[i] == key) {
            uint32_t old = m->vals[i];
            m->vals[i] = val;
            return old;
        }
    }
    m->keys[i] = key;
    m->vals[i] = val;
    m->len++;
    return GT_HMAP_NONE;
}

uint32_t gt_hmap_del(struct gt_hmap *m, uint64_t key)
{
    if (!m->cap)
        return GT_HMAP_NONE;
    size_t mask = m->cap - 1, i = slot_of(key, m->cap);
    while (m->vals[i] != GT_HMAP_NONE && m->keys[i] != key)
        i = (i + 1) & mask;
    if (m->vals[i] == GT_HMAP_NONE)
        return GT_HMAP_NONE;
    uint32_t old = m->vals[i];
    /* backward-shift: move later members of the probe run into the hole when
     * their home slot is not between the hole and their current slot */
    size_t hole = i;
    for (size_t j = (i + 1) & mask; m->vals[j] != GT_HMAP_NONE; j = (j + 1) & mask) {
        size_t home = slot_of(m->keys[j], m->cap);
        int in_between = hole <= j ? (home > hole && home <= j) : (home > hole || home <= j);
        if (!in_between) {
            m->keys[hole] = m->keys[j];
            m->vals[hole] = m->vals[j];
            hole = j;
        }
    }
    m->vals[hole] = GT_HMAP_NONE;
    m->len--;
    return old;
}
