/* A call stack's 64-bit hash: the stack's identity in the trace (stacks.c's
 * set, the writer's dedup, stacks.id), so two stacks that collide are
 * recorded as one. Inline: on every allocation's path. */
#ifndef GPUTRACE_STACK_HASH_H
#define GPUTRACE_STACK_HASH_H

#include <stdint.h>

static inline uint64_t stack_hash_step(uint64_t h, uint64_t v)
{
    h ^= v;
    h *= 0xff51afd7ed558ccdull;
    return h ^ (h >> 32);
}

/* MurmurHash3's 64-bit finalizer: every input bit reaches every output bit */
static inline uint64_t stack_hash_fmix64(uint64_t h)
{
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdull;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ull;
    return h ^ (h >> 33);
}

/* Four lanes, joined at the end: one lane is a chain of multiplies, ~6 cycles
 * a frame that nothing overlaps (35 ns for a 38-frame stack on the dev
 * machine, ~20 with four). Each lane is finalized before the join: joined
 * raw, a lane's last step is too weak a mix for an XOR with another's, and
 * stacks differing in one entry of each of two lanes collided (hundreds in
 * 2^24 such stacks; none with the finalizer, none with one lane). */
static inline uint64_t gt_stack_hash(const uintptr_t *ips, int n)
{
    uint64_t a = 0x9e3779b97f4a7c15ull ^ (uint64_t)n, b = 0xc2b2ae3d27d4eb4full, c = 0x165667b19e3779f9ull,
             d = 0x27d4eb2f165667c5ull;
    int i = 0;
    for (; i + 4 <= n; i += 4) {
        a = stack_hash_step(a, ips[i]);
        b = stack_hash_step(b, ips[i + 1]);
        c = stack_hash_step(c, ips[i + 2]);
        d = stack_hash_step(d, ips[i + 3]);
    }
    for (; i < n; i++)
        a = stack_hash_step(a, ips[i]);
    uint64_t h = stack_hash_step(stack_hash_fmix64(a), stack_hash_fmix64(b));
    h = stack_hash_step(stack_hash_step(h, stack_hash_fmix64(c)), stack_hash_fmix64(d));
    return h ? h : 1; /* 0 means "no stack" */
}

#endif
