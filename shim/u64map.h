/* A small open-addressing hash map from 64-bit keys to two 64-bit values, for
 * the writer thread's bookkeeping (live allocations, stack and frame ids).
 * Single-threaded; grows by doubling; key 0 is reserved (use key+1 tricks if
 * 0 can occur: the callers' keys are addresses and hashes, never 0). */
#ifndef GPUTRACE_U64MAP_H
#define GPUTRACE_U64MAP_H

#include <stdbool.h>
#include <stdint.h>

struct u64map_entry { uint64_t key, a, b; };
struct u64map { struct u64map_entry *e; uint64_t cap, len; };

bool u64map_put(struct u64map *m, uint64_t key, uint64_t a, uint64_t b);
struct u64map_entry *u64map_get(struct u64map *m, uint64_t key);
bool u64map_del(struct u64map *m, uint64_t key, uint64_t *a, uint64_t *b);
void u64map_free(struct u64map *m);

#endif
