/* Unit tests of the analyzer's hash map (analyzer/hmap.c): put/get/del against
 * a plain array model under long random sequences (growth, replacement,
 * backward-shift deletion across the table's end), keys alignment-heavy
 * like device addresses, key 0 and UINT64_MAX, and what put/del return. */
#include <stdlib.h>

#include "hmap.h"
#include "tap.h"

/* xorshift64*: deterministic, so a failure reproduces */
static uint64_t rng_state = 0x9e3779b97f4a7c15ull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

static void test_empty_map_finds_nothing(void)
{
    struct gt_hmap m;
    gt_hmap_init(&m);
    CHECK_EQ_INT(gt_hmap_get(&m, 42), GT_HMAP_NONE);
    CHECK_EQ_INT(gt_hmap_del(&m, 42), GT_HMAP_NONE);
    CHECK_EQ_INT(m.len, 0);
    gt_hmap_free(&m);
    gt_hmap_free(&m); /* free is idempotent: it leaves an empty map */
    CHECK_EQ_INT(gt_hmap_get(&m, 42), GT_HMAP_NONE);
}

static void test_put_returns_the_replaced_value_and_del_the_removed_one(void)
{
    struct gt_hmap m;
    gt_hmap_init(&m);
    CHECK_EQ_INT(gt_hmap_put(&m, 0, 7), GT_HMAP_NONE); /* key 0 is an ordinary key */
    CHECK_EQ_INT(gt_hmap_put(&m, UINT64_MAX, 8), GT_HMAP_NONE);
    CHECK_EQ_INT(gt_hmap_put(&m, 0, 9), 7);
    CHECK_EQ_INT(m.len, 2);
    CHECK_EQ_INT(gt_hmap_get(&m, 0), 9);
    CHECK_EQ_INT(gt_hmap_get(&m, UINT64_MAX), 8);
    CHECK_EQ_INT(gt_hmap_put(&m, 5, 0), GT_HMAP_NONE); /* value 0 is an ordinary value */
    CHECK_EQ_INT(gt_hmap_get(&m, 5), 0);
    CHECK_EQ_INT(gt_hmap_del(&m, 0), 9);
    CHECK_EQ_INT(gt_hmap_del(&m, 0), GT_HMAP_NONE);
    CHECK_EQ_INT(gt_hmap_get(&m, 0), GT_HMAP_NONE);
    CHECK_EQ_INT(m.len, 2);
    gt_hmap_free(&m);
}

/* Random puts, replacements and deletes over a small key universe, checked
 * after every step against an array (model[k] = value, or NONE). */
static void random_against_model(const uint64_t *keys, size_t nkeys, size_t steps, int del_percent)
{
    uint32_t *model = malloc(nkeys * sizeof *model);
    for (size_t k = 0; k < nkeys; k++)
        model[k] = GT_HMAP_NONE;
    size_t live = 0, bad = 0;
    struct gt_hmap m;
    gt_hmap_init(&m);
    for (size_t s = 0; s < steps && bad < 5; s++) {
        size_t k = (size_t)(rnd() % nkeys);
        if ((int)(rnd() % 100) < del_percent) {
            uint32_t got = gt_hmap_del(&m, keys[k]);
            if (got != model[k]) {
                bad++;
                CHECKF(0, "step %zu: del(%#llx) returned %u, expected %u", s, (unsigned long long)keys[k], got, model[k]);
            }
            live -= model[k] != GT_HMAP_NONE;
            model[k] = GT_HMAP_NONE;
        } else {
            uint32_t v = (uint32_t)(rnd() % 1000000);
            uint32_t got = gt_hmap_put(&m, keys[k], v);
            if (got != model[k]) {
                bad++;
                CHECKF(0, "step %zu: put(%#llx) returned %u, expected %u", s, (unsigned long long)keys[k], got, model[k]);
            }
            live += model[k] == GT_HMAP_NONE;
            model[k] = v;
        }
        if (m.len != live) {
            bad++;
            CHECKF(0, "step %zu: len %zu, expected %zu", s, m.len, live);
        }
        if (s % 64 == 0) /* a full comparison now and then */
            for (size_t j = 0; j < nkeys; j++)
                if (gt_hmap_get(&m, keys[j]) != model[j]) {
                    bad++;
                    CHECKF(0, "step %zu: get(%#llx) = %u, expected %u", s, (unsigned long long)keys[j],
                           gt_hmap_get(&m, keys[j]), model[j]);
                    break;
                }
    }
    CHECK(m.cap == 0 || (m.cap & (m.cap - 1)) == 0);
    CHECK(m.len * 4 <= m.cap * 3);
    for (size_t j = 0; j < nkeys; j++)
        gt_hmap_del(&m, keys[j]);
    CHECK_EQ_INT(m.len, 0);
    for (size_t j = 0; j < nkeys; j++)
        CHECK_EQ_INT(gt_hmap_get(&m, keys[j]), GT_HMAP_NONE);
    gt_hmap_free(&m);
    free(model);
}

static void test_random_operations_match_a_model_with_device_like_addresses(void)
{
    enum { N = 3000 };
    static uint64_t keys[N];
    for (size_t i = 0; i < N; i++)   /* 512-aligned, as the CUDA stand-in and real allocators hand out */
        keys[i] = 0x7f0000000000ull + (uint64_t)i * 512;
    random_against_model(keys, N, 200000, 40);
}

static void test_random_operations_match_a_model_at_high_load(void)
{
    /* about 45 live keys in a table of 64: long probe runs that wrap the end */
    enum { N = 90 };
    static uint64_t keys[N];
    for (size_t i = 0; i < N; i++)
        keys[i] = rnd();
    random_against_model(keys, N, 300000, 50);
}

static void test_growth_keeps_every_entry(void)
{
    struct gt_hmap m;
    gt_hmap_init(&m);
    enum { N = 100000 };
    for (uint32_t i = 0; i < N; i++)
        gt_hmap_put(&m, (uint64_t)i << 12, i);
    CHECK_EQ_INT(m.len, N);
    size_t wrong = 0;
    for (uint32_t i = 0; i < N; i++)
        wrong += gt_hmap_get(&m, (uint64_t)i << 12) != i;
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(gt_hmap_get(&m, 1), GT_HMAP_NONE);
    /* delete every other key, the rest stay reachable */
    for (uint32_t i = 0; i < N; i += 2)
        CHECK_EQ_INT(gt_hmap_del(&m, (uint64_t)i << 12), i);
    wrong = 0;
    for (uint32_t i = 0; i < N; i++)
        wrong += gt_hmap_get(&m, (uint64_t)i << 12) != (i % 2 ? i : GT_HMAP_NONE);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(m.len, N / 2);
    gt_hmap_free(&m);
}

int main(void)
{
    TAP_RUN(test_empty_map_finds_nothing);
    TAP_RUN(test_put_returns_the_replaced_value_and_del_the_removed_one);
    TAP_RUN(test_random_operations_match_a_model_with_device_like_addresses);
    TAP_RUN(test_random_operations_match_a_model_at_high_load);
    TAP_RUN(test_growth_keeps_every_entry);
    return tap_done();
}
