/* Unit tests of the call-stack hash (shim/stack_hash.h): a stack's identity in
 * the trace, so two stacks that collide are recorded as one, silently. Stacks
 * that differ in two entries only, one in each of two lanes, over address
 * ranges and steps like a program's return addresses, give no two equal
 * hashes in 2^20; the order of entries matters; no stack hashes to 0. */
#include <stdlib.h>

#include "stack_hash.h"
#include "tap.h"

static int cmp_u64(const void *x, const void *y)
{
    uint64_t a = *(const uint64_t *)x, b = *(const uint64_t *)y;
    return (a > b) - (a < b);
}

/* Hashes of the 2^20 stacks of n entries whose entries i and j take every
 * pair of 1024 values xs[] x ys[] (distinct within each), the rest fixed;
 * returns how many hashes equal another's. */
static long collisions(int n, int i, int j, const uint64_t *xs, const uint64_t *ys)
{
    enum { K = 1024 };
    uint64_t *h = malloc(sizeof *h * K * K);
    uintptr_t ips[16];
    for (int k = 0; k < n; k++)
        ips[k] = 0x7f1234000000ull + 0x1000ull * (uint64_t)k + 0x3b;
    for (int x = 0; x < K; x++)
        for (int y = 0; y < K; y++) {
            ips[i] = xs[x];
            ips[j] = ys[y];
            h[x * K + y] = gt_stack_hash(ips, n);
        }
    qsort(h, (size_t)K * K, sizeof *h, cmp_u64);
    long same = 0;
    for (size_t k = 1; k < (size_t)K * K; k++)
        same += h[k] == h[k - 1];
    free(h);
    return same;
}

static void steps(uint64_t *v, uint64_t base, uint64_t step)
{
    for (int k = 0; k < 1024; k++)
        v[k] = base + step * (uint64_t)k;
}

/* entries 4 and 5 (lanes a and b: the pair a raw join of lanes collided on) */
static void test_two_lanes_differing_in_one_entry_each_never_collide(void)
{
    static uint64_t xs[1024], ys[1024];
    const uint64_t step[] = {1, 16, 4096};
    for (size_t s = 0; s < sizeof step / sizeof *step; s++) {
        steps(xs, 0x7f0000001000ull, step[s]);
        steps(ys, 0x7f0000801000ull, step[s]);
        long c = collisions(8, 4, 5, xs, ys);
        CHECKF(c == 0, "step %llu: %ld collisions in 2^20 stacks", (unsigned long long)step[s], c);
    }
    /* the tail of a stack whose length is not a multiple of 4 goes to lane a */
    steps(xs, 0x7f0000001000ull, 4096);
    steps(ys, 0x7f0000801000ull, 4096);
    long c = collisions(9, 8, 5, xs, ys);
    CHECKF(c == 0, "9 entries, 8 and 5: %ld collisions in 2^20 stacks", c);
    /* return addresses within a few pages, as one library's are */
    uint64_t r = 0x2545f4914f6cdd1dull;
    for (int k = 0; k < 1024; k++) {
        r ^= r >> 12, r ^= r << 25, r ^= r >> 27;
        xs[k] = 0x7f3a12340000ull + (uint64_t)k * 8 + (r * 0x2545f4914f6cdd1dull >> 61);   /* distinct */
        ys[k] = 0x7f3a12340000ull + (uint64_t)k * 8 + 3;
    }
    c = collisions(8, 4, 5, xs, ys);
    CHECKF(c == 0, "addresses within 8 KiB: %ld collisions in 2^20 stacks", c);
}

static void test_order_and_length_matter(void)
{
    uintptr_t ips[12], swapped[12];
    for (int k = 0; k < 12; k++)
        ips[k] = swapped[k] = 0x7f0000001000ull + 0x40ull * (uint64_t)k;
    for (int i = 0; i + 4 < 12; i++) {   /* entries i and i+4: one lane, two steps */
        swapped[i] = ips[i + 4];
        swapped[i + 4] = ips[i];
        CHECKF(gt_stack_hash(ips, 12) != gt_stack_hash(swapped, 12), "swapping %d and %d", i, i + 4);
        swapped[i] = ips[i];
        swapped[i + 4] = ips[i + 4];
    }
    for (int i = 0; i + 1 < 12; i++) {   /* neighbours: two lanes */
        swapped[i] = ips[i + 1];
        swapped[i + 1] = ips[i];
        CHECKF(gt_stack_hash(ips, 12) != gt_stack_hash(swapped, 12), "swapping %d and %d", i, i + 1);
        swapped[i] = ips[i];
        swapped[i + 1] = ips[i + 1];
    }
    for (int n = 1; n < 12; n++)   /* a stack and the same one cut shorter */
        CHECKF(gt_stack_hash(ips, n) != gt_stack_hash(ips, n + 1), "%d and %d entries", n, n + 1);
}

static void test_never_zero(void)
{
    uintptr_t ips[1] = {0};
    CHECK(gt_stack_hash(ips, 0) != 0);   /* 0 means "no stack" to the writer */
    for (uint64_t v = 0; v < 100000; v++) {
        ips[0] = v;
        if (gt_stack_hash(ips, 1) == 0) {
            CHECKF(0, "entry %llu hashed to 0", (unsigned long long)v);
            break;
        }
    }
}

int main(void)
{
    TAP_RUN(test_two_lanes_differing_in_one_entry_each_never_collide);
    TAP_RUN(test_order_and_length_matter);
    TAP_RUN(test_never_zero);
    return tap_done();
}
