/* Unit tests of the shim writer's map (shim/u64map.c): put/get/del against a
 * plain array model under long random sequences (growth, replacement,
 * backward-shift deletion with probe runs that wrap the table's end), both
 * values kept, and key 0 never needed (the callers' keys are never 0). */
#include <stdlib.h>

#include "tap.h"
#include "u64map.h"

static uint64_t rng_state = 0x2545f4914f6cdd1dull;
static uint64_t rnd(void)
{
    rng_state ^= rng_state >> 12;
    rng_state ^= rng_state << 25;
    rng_state ^= rng_state >> 27;
    return rng_state * 0x2545f4914f6cdd1dull;
}

struct model { int live; uint64_t a, b; };

static void random_against_model(const uint64_t *keys, size_t nkeys, size_t steps, int del_percent)
{
    struct model *model = calloc(nkeys, sizeof *model);
    size_t live = 0, bad = 0;
    struct u64map m = {0};
    for (size_t s = 0; s < steps && bad < 5; s++) {
        size_t k = (size_t)(rnd() % nkeys);
        if ((int)(rnd() % 100) < del_percent) {
            uint64_t a = 1, b = 2;
            bool got = u64map_del(&m, keys[k], &a, &b);
            if (got != (bool)model[k].live || (got && (a != model[k].a || b != model[k].b))) {
                bad++;
                CHECKF(0, "step %zu: del(%#llx) = %d (%llu, %llu), expected %d (%llu, %llu)", s,
                       (unsigned long long)keys[k], got, (unsigned long long)a, (unsigned long long)b,
                       model[k].live, (unsigned long long)model[k].a, (unsigned long long)model[k].b);
            }
            live -= model[k].live;
            model[k].live = 0;
        } else {
            uint64_t a = rnd(), b = rnd();
            CHECK(u64map_put(&m, keys[k], a, b));
            live += !model[k].live;
            model[k] = (struct model){1, a, b};
        }
        if (m.len != live) {
            bad++;
            CHECKF(0, "step %zu: len %llu, expected %zu", s, (unsigned long long)m.len, live);
        }
        if (s % 64 == 0)
            for (size_t j = 0; j < nkeys; j++) {
                struct u64map_entry *e = u64map_get(&m, keys[j]);
                if ((e != NULL) != (bool)model[j].live || (e && (e->key != keys[j] || e->a != model[j].a || e->b != model[j].b))) {
                    bad++;
                    CHECKF(0, "step %zu: get(%#llx) %s", s, (unsigned long long)keys[j],
                           e ? "wrong entry" : "missing");
                    break;
                }
            }
    }
    CHECK(m.cap == 0 || (m.cap & (m.cap - 1)) == 0);
    CHECK(m.len * 4 <= m.cap * 3);
    for (size_t j = 0; j < nkeys; j++)
        u64map_del(&m, keys[j], NULL, NULL); /* the outputs are optional */
    CHECK_EQ_INT(m.len, 0);
    for (size_t j = 0; j < nkeys; j++)
        CHECK(u64map_get(&m, keys[j]) == NULL);
    u64map_free(&m);
    free(model);
}

static void test_empty_map_finds_nothing(void)
{
    struct u64map m = {0};
    CHECK(u64map_get(&m, 42) == NULL);
    CHECK(!u64map_del(&m, 42, NULL, NULL));
    u64map_free(&m);
    CHECK(m.e == NULL && m.cap == 0 && m.len == 0);
}

static void test_put_replaces_both_values_of_a_key(void)
{
    struct u64map m = {0};
    CHECK(u64map_put(&m, UINT64_MAX, 1, 2));
    CHECK(u64map_put(&m, UINT64_MAX, 3, 4));
    CHECK_EQ_INT(m.len, 1);
    struct u64map_entry *e = u64map_get(&m, UINT64_MAX);
    CHECK(e && e->a == 3 && e->b == 4);
    uint64_t a = 0, b = 0;
    CHECK(u64map_del(&m, UINT64_MAX, &a, &b));
    CHECK(a == 3 && b == 4);
    CHECK(!u64map_del(&m, UINT64_MAX, &a, &b));
    u64map_free(&m);
}

static void test_random_operations_match_a_model_with_device_like_addresses(void)
{
    enum { N = 3000 };
    static uint64_t keys[N];
    for (size_t i = 0; i < N; i++)
        keys[i] = 0x300000000000ull + (uint64_t)i * 512;
    random_against_model(keys, N, 200000, 40);
}

static void test_random_operations_match_a_model_at_high_load(void)
{
    /* about 650 live keys in the first table of 1024: long runs that wrap */
    enum { N = 1300 };
    static uint64_t keys[N];
    for (size_t i = 0; i < N; i++)
        keys[i] = rnd() | 1; /* never 0 */
    random_against_model(keys, N, 300000, 50);
}

static void test_growth_keeps_every_entry(void)
{
    struct u64map m = {0};
    enum { N = 100000 };
    for (uint64_t i = 1; i <= N; i++)
        CHECK(u64map_put(&m, i << 20, i, ~i));
    CHECK_EQ_INT(m.len, N);
    size_t wrong = 0;
    for (uint64_t i = 1; i <= N; i++) {
        struct u64map_entry *e = u64map_get(&m, i << 20);
        wrong += !e || e->a != i || e->b != ~i;
    }
    CHECK_EQ_INT(wrong, 0);
    for (uint64_t i = 1; i <= N; i += 2)
        CHECK(u64map_del(&m, i << 20, NULL, NULL));
    wrong = 0;
    for (uint64_t i = 1; i <= N; i++)
        wrong += (u64map_get(&m, i << 20) != NULL) != (i % 2 == 0);
    CHECK_EQ_INT(wrong, 0);
    CHECK_EQ_INT(m.len, N / 2);
    u64map_free(&m);
}

int main(void)
{
    TAP_RUN(test_empty_map_finds_nothing);
    TAP_RUN(test_put_replaces_both_values_of_a_key);
    TAP_RUN(test_random_operations_match_a_model_with_device_like_addresses);
    TAP_RUN(test_random_operations_match_a_model_at_high_load);
    TAP_RUN(test_growth_keeps_every_entry);
    return tap_done();
}
