/* Unit tests of the writer's time order (shim/time_order.h): records already
 * in order are left so, and said to be; records out of order come out sorted
 * by their stamp, records of equal stamps (one thread's, or two threads' at
 * one nanosecond) in the order they were queued; every record once; a full
 * batch of 4096 in reverse, and random batches against a reference sort. */
#include <stdlib.h>

#include "tap.h"
#include "time_order.h"

struct rec {   /* the stamp inside a larger record, as in struct gt_rec */
    uint32_t thread;
    uint64_t t_ns;
    uint32_t seq;   /* queue position */
};

static int ordered(const struct rec *r, const uint16_t *order, int n)
{
    unsigned char *seen = calloc((size_t)n + 1, 1);
    int ok = 1;
    for (int i = 0; i < n; i++) {
        ok &= !seen[order[i]];
        seen[order[i]] = 1;
        if (i) {
            const struct rec *a = &r[order[i - 1]], *b = &r[order[i]];
            ok &= a->t_ns < b->t_ns || (a->t_ns == b->t_ns && a->seq < b->seq);
        }
    }
    free(seen);
    return ok;
}

static void test_in_order_is_left_and_said(void)
{
    struct rec r[5] = {{1, 10, 0}, {2, 10, 1}, {1, 11, 2}, {3, 40, 3}, {1, 40, 4}};
    uint16_t order[5], tmp[5];
    CHECK(gt_time_order(r, sizeof *r, offsetof(struct rec, t_ns), 5, order, tmp) == 0);
    for (int i = 0; i < 5; i++)
        CHECK(order[i] == i);
    CHECK(gt_time_order(r, sizeof *r, offsetof(struct rec, t_ns), 0, order, tmp) == 0);
}

static void test_a_late_queued_call_goes_back_to_its_time(void)
{
    /* thread 2 stamped at 1,600 ns and queued after thread 1's calls at 1,700 and 1,830 */
    struct rec r[4] = {{1, 1500, 0}, {1, 1700, 1}, {1, 1830, 2}, {2, 1600, 3}};
    uint16_t order[4], tmp[4];
    CHECK(gt_time_order(r, sizeof *r, offsetof(struct rec, t_ns), 4, order, tmp) == 1);
    const int want[4] = {0, 3, 1, 2};
    for (int i = 0; i < 4; i++)
        CHECKF(order[i] == want[i], "position %d: %d", i, order[i]);
}

static void test_equal_stamps_keep_their_queue_order(void)
{
    struct rec r[6] = {{1, 5, 0}, {2, 3, 1}, {1, 5, 2}, {2, 3, 3}, {3, 5, 4}, {3, 1, 5}};
    uint16_t order[6], tmp[6];
    gt_time_order(r, sizeof *r, offsetof(struct rec, t_ns), 6, order, tmp);
    CHECK(ordered(r, order, 6));
    CHECK(order[0] == 5 && order[1] == 1 && order[2] == 3 && order[3] == 0 && order[4] == 2 && order[5] == 4);
}

static void test_full_batches_reversed_and_random(void)
{
    enum { N = 4096 };
    static struct rec r[N];
    static uint16_t order[N], tmp[N];
    for (int i = 0; i < N; i++)
        r[i] = (struct rec){(uint32_t)(i % 7), (uint64_t)(N - i), (uint32_t)i};
    CHECK(gt_time_order(r, sizeof *r, offsetof(struct rec, t_ns), N, order, tmp) == 1);
    CHECK(ordered(r, order, N));
    srand(11);
    for (int round = 0; round < 50; round++) {
        int n = 1 + rand() % N;
        for (int i = 0; i < n; i++)   /* nearly in order, as queues are: a few late ones, many ties */
            r[i] = (struct rec){(uint32_t)(rand() % 64), (uint64_t)(i / 3 * 10 - (rand() % 10 == 0 ? rand() % 200 : 0) + 1000),
                                (uint32_t)i};
        gt_time_order(r, sizeof *r, offsetof(struct rec, t_ns), n, order, tmp);
        CHECKF(ordered(r, order, n), "round %d, %d records", round, n);
    }
}

int main(void)
{
    TAP_RUN(test_in_order_is_left_and_said);
    TAP_RUN(test_a_late_queued_call_goes_back_to_its_time);
    TAP_RUN(test_equal_stamps_keep_their_queue_order);
    TAP_RUN(test_full_batches_reversed_and_random);
    return tap_done();
}
