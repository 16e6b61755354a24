/* hmap.h - an open-addressing hash map from 64-bit keys to 32-bit values.
 * Used to pair allocations with their frees (key: address or handle) and to
 * intern stack ids; linear probing with backward-shift deletion, no tombstones. */
#ifndef GT_HMAP_H
#define GT_HMAP_H
#include <stddef.h>
#include <stdint.h>

#define GT_HMAP_NONE UINT32_MAX   /* "no value"; never stored as a value */

struct gt_hmap {
    uint64_t *keys;
    uint32_t *vals;     /* GT_HMAP_NONE marks an empty slot */
    size_t cap;         /* power of two, or 0 before the first put */
    size_t len;
};

void gt_hmap_init(struct gt_hmap *m);
void gt_hmap_free(struct gt_hmap *m);
/* Value stored for key, or GT_HMAP_NONE. */
uint32_t gt_hmap_get(const struct gt_hmap *m, uint64_t key);
/* Stores key -> val (val < GT_HMAP_OOM), replacing any previous value, which
 * is returned (GT_HMAP_NONE if the key was new). Out of memory: returns
 * GT_HMAP_OOM and leaves the map unchanged. */
uint32_t gt_hmap_put(struct gt_hmap *m, uint64_t key, uint32_t val);
#define GT_HMAP_OOM (GT_HMAP_NONE - 1)
/* Removes key; returns its value or GT_HMAP_NONE if absent. */
uint32_t gt_hmap_del(struct gt_hmap *m, uint64_t key);

#endif
