/* Unit tests of the shim's event queue (shim/queue.c) through its public
 * functions in shim/shim.h: several producer threads against one consumer
 * (every event arrives exactly once, each producer's events in its order),
 * a reserved slot holding back later ones until published, backpressure and
 * drops when the consumer stalls (GPUTRACE_QUEUE_WAIT_MS), the writer
 * giving up on a slot at exit, and a held free taken by the writer or
 * finished by its producer, one of the two. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <time.h>

#include "config.h"
#include "shim.h"
#include "tap.h"

/* What queue.c needs from the rest of the shim: the configuration (read-only
 * to it, as config.c gives it; the tests set its wait per case) and the drop
 * counter (drops.c). */
static struct gt_config test_cfg;
extern const struct gt_config gt_config __attribute__((alias("test_cfg")));
static _Atomic uint64_t gt_drops[GT_DROP_COUNT];
void gt_drop(enum gt_drop_reason r)
{
    atomic_fetch_add(&gt_drops[r], 1);
}

static double now_s(void)
{
    return (double)gt_now_ns() / 1e9;
}

static void sleep_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    nanosleep(&ts, NULL);
}

static void reset(uint32_t capacity, uint32_t wait_ms)
{
    test_cfg.queue_wait_ms = wait_ms;
    for (int i = 0; i < GT_DROP_COUNT; i++)
        atomic_store(&gt_drops[i], 0);
    if (!gt_queue_init(capacity)) {
        printf("Bail out! gt_queue_init(%u) failed\n", capacity);
        exit(1);
    }
}

static struct gt_rec event(int32_t producer, uint64_t seq)
{
    struct gt_rec ev = {0};
    ev.kind = GT_REC_ALLOC;
    ev.tid = producer;
    ev.call.ptr = seq;
    ev.call.size = seq * 2654435761u ^ (uint64_t)producer; /* a checksum of the pair */
    return ev;
}

/* A free's record held in a slot reserved for it (as record.c's free_begin). */
static bool hold_free(struct gt_reservation *r)
{
    struct gt_rec fr = event(7, 42);
    fr.kind = GT_REC_FREE;
    return gt_queue_reserve(r, GT_DROP_QUEUE_FULL) && gt_queue_hold(r, &fr);
}

static bool push(int32_t producer, uint64_t seq)
{
    struct gt_reservation r;
    if (!gt_queue_reserve(&r, GT_DROP_QUEUE_FULL))
        return false;
    struct gt_rec ev = event(producer, seq);
    gt_queue_publish(&r, &ev);
    return true;
}

/* ---- several producers ------------------------------------------------ */

enum { MAX_PRODUCERS = 8 };

struct producer {
    pthread_t th;
    int32_t id;
    uint64_t n;          /* events to send */
    int hold;            /* sometimes yield between reserve and publish */
    uint64_t sent, dropped;
};

static void *produce(void *arg)
{
    struct producer *p = arg;
    for (uint64_t i = 0; i < p->n; i++) {
        struct gt_reservation r;
        if (!gt_queue_reserve(&r, GT_DROP_QUEUE_FULL)) {
            p->dropped++;
            continue;
        }
        struct gt_rec ev = event(p->id, i);
        if (p->hold && i % 5 == 0)
            sched_yield(); /* as a free does: the slot is ours, the real call runs */
        gt_queue_publish(&r, &ev);
        p->sent++;
    }
    return NULL;
}

/* Consumes until `expect` events arrived (or a generous deadline passed),
 * checking that each producer's events come once, in order, unaltered.
 * next[] gets how many of each producer's events arrived. */
static uint64_t consume(struct producer *ps, int np, uint64_t expect, uint64_t next[MAX_PRODUCERS])
{
    struct gt_rec buf[256];
    uint64_t got = 0;
    double deadline = now_s() + 60;
    for (int k = 0; k < np; k++)
        next[k] = 0;
    while (got < expect && now_s() < deadline) {
        int n = gt_queue_pop(buf, 256, 0);
        if (n == 0) {
            sched_yield();
            continue;
        }
        for (int i = 0; i < n; i++) {
            const struct gt_rec *e = &buf[i];
            CHECKF(e->tid >= 0 && e->tid < np, "event from unknown producer %d", e->tid);
            if (e->tid < 0 || e->tid >= np)
                continue;
            CHECKF(e->call.ptr == next[e->tid], "producer %d: event %llu arrived when %llu was next", e->tid,
                   (unsigned long long)e->call.ptr, (unsigned long long)next[e->tid]);
            CHECKF(e->call.size == (e->call.ptr * 2654435761u ^ (uint64_t)e->tid), "producer %d event %llu: altered payload",
                   e->tid, (unsigned long long)e->call.ptr);
            next[e->tid] = e->call.ptr + 1;
        }
        got += (uint64_t)n;
    }
    (void)ps;
    return got;
}

static void run_producers(int np, uint32_t capacity, uint64_t per_producer, int hold)
{
    reset(capacity, 10000); /* a consumer that keeps draining never causes drops */
    struct producer ps[MAX_PRODUCERS] = {{0}};
    for (int k = 0; k < np; k++) {
        ps[k].id = k;
        ps[k].n = per_producer;
        ps[k].hold = hold;
        if (pthread_create(&ps[k].th, NULL, produce, &ps[k])) {
            printf("Bail out! pthread_create failed\n");
            exit(1);
        }
    }
    uint64_t next[MAX_PRODUCERS];
    uint64_t got = consume(ps, np, (uint64_t)np * per_producer, next);
    for (int k = 0; k < np; k++)
        pthread_join(ps[k].th, NULL);
    struct gt_rec extra;
    CHECK_EQ_INT(got, (uint64_t)np * per_producer);
    CHECK_EQ_INT(gt_queue_pop(&extra, 1, 0), 0);
    for (int k = 0; k < np; k++) {
        CHECK_EQ_INT(ps[k].dropped, 0);
        CHECK_EQ_INT(next[k], per_producer);
    }
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 0);
    CHECK(gt_queue_empty_upto(gt_queue_head()));
    gt_queue_discard();
}

static void test_four_producers_each_event_arrives_once_in_producer_order(void)
{
    /* a small ring wraps thousands of times and is often full */
    run_producers(4, 64, 50000, 0);
}

static void test_producers_holding_reserved_slots_keep_order_and_lose_nothing(void)
{
    run_producers(6, 128, 20000, 1);
}

/* ---- one thread: order, holes, heads ---------------------------------- */

static void test_pop_returns_events_in_reservation_order_and_wraps(void)
{
    reset(2, 1000);
    struct gt_rec out[4];
    for (uint64_t i = 0; i < 1000; i++) {
        CHECK(push(0, 2 * i));
        CHECK(push(0, 2 * i + 1));
        int n = gt_queue_pop(out, 4, 0);
        CHECK_EQ_INT(n, 2);
        if (n == 2) {
            CHECK_EQ_INT(out[0].call.ptr, 2 * i);
            CHECK_EQ_INT(out[1].call.ptr, 2 * i + 1);
        }
    }
    CHECK_EQ_INT(gt_queue_pop(out, 4, 0), 0);
    CHECK_EQ_INT(gt_queue_head(), 2000);
    gt_queue_discard();
}

static void test_pop_takes_at_most_max(void)
{
    reset(16, 1000);
    struct gt_rec out[16];
    for (uint64_t i = 0; i < 10; i++)
        push(0, i);
    CHECK_EQ_INT(gt_queue_pop(out, 3, 0), 3);
    CHECK_EQ_INT(out[2].call.ptr, 2);
    CHECK_EQ_INT(gt_queue_pop(out, 16, 0), 7);
    CHECK_EQ_INT(out[0].call.ptr, 3);
    CHECK_EQ_INT(out[6].call.ptr, 9);
    gt_queue_discard();
}

/* A free reserves its place before the real free runs: events reserved after
 * it wait until it is published, so the timeline never shows an address
 * handed out again before the free that returned it. */
static void test_unpublished_reservation_holds_back_later_events(void)
{
    reset(8, 1000);
    struct gt_reservation held;
    CHECK(gt_queue_reserve(&held, GT_DROP_QUEUE_FULL));
    CHECK(push(0, 1));
    CHECK(push(0, 2));
    struct gt_rec out[8];
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 0);
    CHECK(!gt_queue_empty_upto(gt_queue_head()));
    struct gt_rec ev = event(0, 0);
    gt_queue_publish(&held, &ev);
    int n = gt_queue_pop(out, 8, 0);
    CHECK_EQ_INT(n, 3);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(out[i].call.ptr, (uint64_t)i);
    gt_queue_discard();
}

static void test_head_and_empty_upto_track_reserved_and_consumed_positions(void)
{
    reset(8, 1000);
    CHECK_EQ_INT(gt_queue_head(), 0);
    CHECK(gt_queue_empty_upto(0));
    push(0, 0);
    push(0, 1);
    push(0, 2);
    uint64_t h = gt_queue_head();
    CHECK_EQ_INT(h, 3);
    CHECK(!gt_queue_empty_upto(h));
    struct gt_rec out[2];
    CHECK_EQ_INT(gt_queue_pop(out, 2, 0), 2);
    CHECK(gt_queue_empty_upto(2));
    CHECK(!gt_queue_empty_upto(3));
    CHECK_EQ_INT(gt_queue_pop(out, 2, 0), 1);
    CHECK(gt_queue_empty_upto(h));
    gt_queue_discard();
}

/* ---- full queue ------------------------------------------------------- */

/* GPUTRACE_QUEUE_WAIT_MS: with no consumer progress, a reservation on a full
 * ring waits that long, then the event is dropped and counted. */
static void test_full_queue_without_consumer_drops_after_the_wait_and_counts(void)
{
    reset(4, 50);
    for (uint64_t i = 0; i < 4; i++)
        CHECK(push(0, i));
    double t0 = now_s();
    struct gt_reservation r;
    CHECK(!gt_queue_reserve(&r, GT_DROP_QUEUE_FULL));
    double waited = now_s() - t0;
    CHECKF(waited >= 0.050, "dropped after %.3f s, before GPUTRACE_QUEUE_WAIT_MS (0.050 s)", waited);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 1);
    CHECK(!gt_queue_reserve(&r, GT_DROP_QUEUE_FULL));
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 2);
    CHECK_EQ_INT(gt_queue_head(), 4); /* a drop reserves nothing */
    /* the queued events are intact, and room comes back */
    struct gt_rec out[8];
    int n = gt_queue_pop(out, 8, 0);
    CHECK_EQ_INT(n, 4);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(out[i].call.ptr, (uint64_t)i);
    CHECK(push(0, 4));
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 1);
    CHECK_EQ_INT(out[0].call.ptr, 4);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_UNFINISHED_AT_EXIT]), 0);
    gt_queue_discard();
}

/* A producer keeps its last reading of tail and reads tail again only when that
 * reading says the ring may be full. A reading from an earlier queue (a fork
 * child's trace starts a new one at 0) must not count: here this thread read
 * 5 in the old queue, another thread fills the new one (head 8, tail 0), and
 * trusting the old reading (8 - 5 <= mask) would hand out slot 0 again while
 * its event is unread. */
static void *fill_eight(void *arg)
{
    (void)arg;
    for (uint64_t i = 0; i < 8; i++)
        CHECK(push(1, i));
    return NULL;
}

static void test_a_new_queue_is_full_at_capacity_whatever_tail_this_thread_read_before(void)
{
    reset(8, 20);
    struct gt_rec out[8];
    for (uint64_t i = 0; i < 8; i++)
        CHECK(push(0, i));
    CHECK_EQ_INT(gt_queue_pop(out, 5, 0), 5);
    CHECK(push(0, 8));   /* full by its first reading (0): reads tail again, 5 */
    gt_queue_discard();
    reset(8, 20);
    pthread_t other;
    pthread_create(&other, NULL, fill_eight, NULL);
    pthread_join(other, NULL);
    struct gt_reservation r;
    CHECK(!gt_queue_reserve(&r, GT_DROP_QUEUE_FULL));   /* nothing consumed: full, dropped after the wait */
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 1);
    int n = gt_queue_pop(out, 8, 0);
    CHECK_EQ_INT(n, 8);
    for (int i = 0; i < n; i++) {
        CHECK_EQ_INT(out[i].tid, 1);
        CHECK_EQ_INT(out[i].call.ptr, (uint64_t)i);
    }
    gt_queue_discard();
}

struct slow_consumer {
    int pops, every_ms;
    uint64_t got[64];
    int ngot;
};

static void *consume_slowly(void *arg)
{
    struct slow_consumer *c = arg;
    while (c->ngot < c->pops) {
        sleep_ms(c->every_ms);
        struct gt_rec ev;
        while (gt_queue_pop(&ev, 1, 0) == 0)
            sleep_ms(1);
        c->got[c->ngot++] = ev.call.ptr;
    }
    return NULL;
}

/* Backpressure, not loss: a consumer slower than the producer but making
 * progress within the wait never causes a drop, however long it takes in all. */
static void test_full_queue_waits_while_the_consumer_makes_progress(void)
{
    enum { EVENTS = 20 };
    reset(4, 200);
    struct slow_consumer c = {.pops = EVENTS, .every_ms = 20};
    pthread_t th;
    pthread_create(&th, NULL, consume_slowly, &c);
    double t0 = now_s();
    for (uint64_t i = 0; i < EVENTS; i++)
        CHECKF(push(0, i), "event %llu dropped although the consumer kept up", (unsigned long long)i);
    double took = now_s() - t0;
    pthread_join(th, NULL);
    CHECKF(took > 0.200, "producing took %.3f s: the queue never made it wait longer than the drop limit", took);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 0);
    CHECK_EQ_INT(c.ngot, EVENTS);
    for (int i = 0; i < c.ngot; i++)
        CHECK_EQ_INT(c.got[i], (uint64_t)i);
    gt_queue_discard();
}

/* A reservation that must not sleep (a longjmp's, maybe in a signal
 * handler) drops at once on a full ring, and tells the others nothing: they
 * still wait while the writer drains (had it marked the writer stuck, they
 * would have dropped at once too). */
static void test_a_reservation_that_never_waits_drops_at_once_and_the_others_still_wait(void)
{
    reset(4, 1000);
    for (uint64_t i = 0; i < 4; i++)
        CHECK(push(0, i));
    struct gt_reservation r;
    double t0 = now_s();
    CHECK(!gt_queue_reserve_now(&r, GT_DROP_QUEUE_FULL));
    CHECKF(now_s() - t0 < 0.1, "the reservation waited %.3f s", now_s() - t0);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 1);
    struct slow_consumer c = {.pops = 4, .every_ms = 50};
    pthread_t th;
    pthread_create(&th, NULL, consume_slowly, &c);
    CHECK(push(0, 4));   /* waits for the consumer's first pop */
    pthread_join(th, NULL);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 1);
    gt_queue_discard();
}

static void *produce_until_full(void *arg)
{
    produce(arg);
    return NULL;
}

/* Several producers against a stalled consumer: exactly the ring's capacity
 * is kept, every other attempt is one counted drop, and what is kept is each
 * producer's first events, in order. */
static void test_stalled_consumer_with_several_producers_keeps_capacity_and_counts_the_rest(void)
{
    enum { NP = 4, PER = 8, CAP = 16 };
    reset(CAP, 10);
    struct producer ps[NP] = {{0}};
    for (int k = 0; k < NP; k++) {
        ps[k].id = k;
        ps[k].n = PER;
        pthread_create(&ps[k].th, NULL, produce_until_full, &ps[k]);
    }
    uint64_t sent = 0, dropped = 0;
    for (int k = 0; k < NP; k++) {
        pthread_join(ps[k].th, NULL);
        sent += ps[k].sent;
        dropped += ps[k].dropped;
    }
    CHECK_EQ_INT(sent, CAP);
    CHECK_EQ_INT(dropped, NP * PER - CAP);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), NP * PER - CAP);
    uint64_t next[MAX_PRODUCERS];
    CHECK_EQ_INT(consume(ps, NP, CAP, next), CAP);
    for (int k = 0; k < NP; k++)
        CHECK_EQ_INT(next[k], ps[k].sent); /* a prefix of each producer's events */
    gt_queue_discard();
}

/* ---- exit: a slot reserved and never published ------------------------ */

static void test_skip_pending_gives_up_on_a_held_slot_and_counts_it(void)
{
    reset(4, 1000);
    struct gt_reservation held;
    CHECK(gt_queue_reserve(&held, GT_DROP_QUEUE_FULL)); /* a thread stuck inside a real free at exit */
    CHECK(push(0, 1));
    struct gt_rec out[8];
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 0);
    gt_queue_skip_pending();
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_UNFINISHED_AT_EXIT]), 1);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 1);
    CHECK_EQ_INT(out[0].call.ptr, 1);
    /* the ring goes round past the skipped slot; a late publish changes nothing */
    for (uint64_t i = 2; i < 5; i++)
        CHECK(push(0, i));
    struct gt_rec late = event(0, 999);
    gt_queue_publish(&held, &late);
    CHECK(push(0, 5));
    int n = gt_queue_pop(out, 8, 0);
    CHECK_EQ_INT(n, 4);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(out[i].call.ptr, (uint64_t)i + 2);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 0);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 0);
    gt_queue_discard();
}

/* The late publish may also come before the ring reaches the slot again:
 * it still writes nothing, and the next lap's producer gets the slot. */
static void test_a_late_publish_before_the_next_lap_leaves_the_skipped_slot_alone(void)
{
    reset(4, 1000);
    struct gt_reservation held;
    CHECK(gt_queue_reserve(&held, GT_DROP_QUEUE_FULL));
    gt_queue_skip_pending();
    struct gt_rec late = event(0, 999);
    gt_queue_publish(&held, &late);
    struct gt_rec out[8];
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 0);   /* the late record is not taken */
    for (uint64_t i = 1; i < 5; i++)          /* positions 1..4: the last one is the skipped slot's */
        CHECK(push(0, i));
    int n = gt_queue_pop(out, 8, 0);
    CHECK_EQ_INT(n, 4);
    for (int i = 0; i < n; i++)
        CHECK_EQ_INT(out[i].call.ptr, (uint64_t)i + 1);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_UNFINISHED_AT_EXIT]), 1);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_QUEUE_FULL]), 0);
    gt_queue_discard();
}

/* A slot skipped on two laps (a failed exec resumes the trace after a stop):
 * the first skip's late publish finds the second's mark and must leave the
 * slot to the producer that holds it now. Whether it wrote is read from the
 * slot's sequence number (white-box: queue.c's slot begins with it): the
 * damage itself, a record torn between two writers, needs a race to show. */
static void test_a_late_publish_leaves_a_slot_skipped_again_on_a_later_lap_alone(void)
{
    reset(4, 1000);
    struct gt_rec out[8];
    struct gt_reservation a, b, c;
    CHECK(gt_queue_reserve(&a, GT_DROP_QUEUE_FULL));   /* position 0 */
    gt_queue_skip_pending();
    for (uint64_t i = 1; i < 4; i++)
        CHECK(push(0, i));
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 3);
    CHECK(gt_queue_reserve(&b, GT_DROP_QUEUE_FULL));   /* position 4: the same slot */
    gt_queue_skip_pending();
    for (uint64_t i = 5; i < 8; i++)
        CHECK(push(0, i));
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 3);
    CHECK(gt_queue_reserve(&c, GT_DROP_QUEUE_FULL));   /* position 8: the same slot, a live producer's */
    CHECK(a.slot == c.slot && b.slot == c.slot);
    uint64_t mark = atomic_load((_Atomic uint64_t *)(void *)c.slot);
    struct gt_rec late = event(1, 999);
    gt_queue_publish(&a, &late);
    gt_queue_publish(&b, &late);
    CHECK_EQ_INT(atomic_load((_Atomic uint64_t *)(void *)c.slot), mark);   /* neither late publish wrote */
    struct gt_rec ev = event(0, 8);
    gt_queue_publish(&c, &ev);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 1);
    CHECK_EQ_INT(out[0].tid, 0);
    CHECK_EQ_INT(out[0].call.ptr, 8);
    CHECK_EQ_INT(atomic_load(&gt_drops[GT_DROP_UNFINISHED_AT_EXIT]), 2);
    gt_queue_discard();
}

/* A held free: the writer passes it by while it is young, takes it once it
 * waited (as written, marked, its position said), and the producer's finish
 * then says so; the events behind it come through meanwhile. */
static void test_a_held_free_is_taken_after_its_wait_and_its_finish_says_so(void)
{
    reset(8, 1000);
    struct gt_reservation held;
    CHECK(hold_free(&held));
    CHECK(push(0, 1));
    struct gt_rec out[8];
    CHECK_EQ_INT(gt_queue_pop(out, 8, 200 * 1000000ull), 0);   /* first seen: not yet */
    CHECK_EQ_INT(gt_queue_pop(out, 8, 200 * 1000000ull), 0);   /* still young */
    sleep_ms(250);
    int n = gt_queue_pop(out, 8, 200 * 1000000ull);
    CHECK_EQ_INT(n, 2);
    CHECK_EQ_INT(out[0].kind, GT_REC_FREE);
    CHECK_EQ_INT(out[0].call.ptr, 42);
    CHECK(out[0].flags & GT_CALL_TAKEN);
    CHECK_EQ_INT(out[0].call.size, held.pos);
    CHECK_EQ_INT(out[1].call.ptr, 1);
    CHECK(!(out[1].flags & GT_CALL_TAKEN));
    CHECK_EQ_INT(gt_queue_finish_held(&held, 0, 0), GT_HELD_TAKEN);
    CHECK_EQ_INT(gt_queue_abandon(held.pos), true);   /* a longjmp after the take: taken, nothing marked */
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 0);
    gt_queue_discard();
}

/* Finished before the writer took it: published with its result and stack,
 * in its place, unmarked. */
static void test_a_held_free_finished_in_time_is_published_with_its_result(void)
{
    reset(8, 1000);
    struct gt_reservation held;
    CHECK(hold_free(&held));
    CHECK(push(0, 1));
    struct gt_rec out[8];
    CHECK_EQ_INT(gt_queue_pop(out, 8, 1000 * 1000000ull), 0);
    CHECK_EQ_INT(gt_queue_finish_held(&held, 700, 99), GT_HELD_PUBLISHED);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 1000 * 1000000ull), 2);
    CHECK_EQ_INT(out[0].call.result, 700);
    CHECK_EQ_INT(out[0].call.stack_hash, 99);
    CHECK(!(out[0].flags & GT_CALL_TAKEN));
    gt_queue_discard();
}

/* At a stop (a wait of 0) a held free is taken at once; a longjmp before
 * any take gives the slot up instead, and the writer passes it. */
static void test_a_held_free_is_taken_at_once_at_a_stop_and_given_up_by_a_jump_before(void)
{
    reset(8, 1000);
    struct gt_reservation a, b;
    struct gt_rec out[8];
    CHECK(hold_free(&a));
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 1);
    CHECK(out[0].flags & GT_CALL_TAKEN);
    CHECK(hold_free(&b));
    CHECK(push(0, 1));
    CHECK_EQ_INT(gt_queue_abandon(b.pos), false);
    CHECK_EQ_INT(gt_queue_finish_held(&b, 0, 0), GT_HELD_SKIPPED);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 0), 1);
    CHECK_EQ_INT(out[0].call.ptr, 1);
    gt_queue_discard();
}

/* Threads each in a waiting free: the one right behind a free taken after
 * its wait has waited as long, and is taken in the same pop (each cost the
 * writer 5 ms or more apiece: a review). One published between them starts
 * the wait anew. */
static void test_a_held_free_right_behind_a_taken_one_is_taken_with_it(void)
{
    reset(8, 1000);
    struct gt_reservation a, b, c;
    struct gt_rec out[8];
    CHECK(hold_free(&a));
    CHECK(hold_free(&b));
    CHECK(push(0, 1));
    CHECK(hold_free(&c));
    CHECK_EQ_INT(gt_queue_pop(out, 8, 100 * 1000000ull), 0);
    sleep_ms(120);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 100 * 1000000ull), 3);   /* a, b, and the published one; not c yet */
    CHECK(out[0].flags & GT_CALL_TAKEN);
    CHECK(out[1].flags & GT_CALL_TAKEN);
    CHECK_EQ_INT(out[1].call.size, b.pos);
    CHECK_EQ_INT(out[2].call.ptr, 1);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 100 * 1000000ull), 0);
    CHECK_EQ_INT(gt_queue_finish_held(&c, 0, 0), GT_HELD_PUBLISHED);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 100 * 1000000ull), 1);
    gt_queue_discard();
}

/* The wait is inherited only by a free already held right behind the one
 * taken: a free that takes the next slot later starts its own (a review: it
 * was taken on first sight, seconds later). */
static void test_a_free_held_later_behind_a_taken_one_waits_its_own_time(void)
{
    reset(8, 1000);
    struct gt_reservation a, b;
    struct gt_rec out[8];
    CHECK(hold_free(&a));
    CHECK_EQ_INT(gt_queue_pop(out, 8, 50 * 1000000ull), 0);
    sleep_ms(60);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 50 * 1000000ull), 1);   /* a, after its wait; nothing behind it */
    CHECK(hold_free(&b));
    CHECK_EQ_INT(gt_queue_pop(out, 8, 50 * 1000000ull), 0);   /* b is new: not taken on sight */
    CHECK_EQ_INT(gt_queue_finish_held(&b, 0, 0), GT_HELD_PUBLISHED);
    CHECK_EQ_INT(gt_queue_pop(out, 8, 50 * 1000000ull), 1);
    CHECK(!(out[0].flags & GT_CALL_TAKEN));
    gt_queue_discard();
}

/* The writer's take and the producer's finish race: exactly one of them
 * gets each free, never both, never neither (run under ThreadSanitizer in
 * the thread stage: the record is never read while it is written). */
static _Atomic int finishes_published;
static void *finish_frees(void *arg)
{
    struct gt_reservation *r = arg;
    for (int i = 0; i < 2000; i++) {
        struct gt_rec fr = event(3, (uint64_t)i);
        fr.kind = GT_REC_FREE;
        while (!gt_queue_reserve(&r[i], GT_DROP_QUEUE_FULL))
            ;
        gt_queue_hold(&r[i], &fr);
        if (i % 7)
            sched_yield();
        if (gt_queue_finish_held(&r[i], 5, 0) == GT_HELD_PUBLISHED)
            atomic_fetch_add(&finishes_published, 1);
    }
    return NULL;
}

static void test_the_take_and_the_finish_race_and_one_wins_each_free(void)
{
    reset(64, 1000);
    static struct gt_reservation r[2000];
    atomic_store(&finishes_published, 0);
    pthread_t t;
    pthread_create(&t, NULL, finish_frees, r);
    int got = 0, taken = 0, bad = 0;
    struct gt_rec out[16];
    while (got < 2000) {
        int n = gt_queue_pop(out, 16, 0);   /* takes any held one it meets */
        for (int i = 0; i < n; i++) {
            bad += out[i].call.ptr != (uint64_t)got;
            if (out[i].flags & GT_CALL_TAKEN)
                taken++, bad += out[i].call.result != 0;
            else
                bad += out[i].call.result != 5;
            got++;
        }
    }
    pthread_join(t, NULL);
    CHECK_EQ_INT(bad, 0);
    printf("# %d of 2000 taken by the writer\n", taken);
    CHECK_EQ_INT(taken + atomic_load(&finishes_published), 2000);
    CHECK_EQ_INT(gt_queue_pop(out, 16, 0), 0);
    gt_queue_discard();
}

int main(void)
{
    TAP_RUN(test_pop_returns_events_in_reservation_order_and_wraps);
    TAP_RUN(test_pop_takes_at_most_max);
    TAP_RUN(test_unpublished_reservation_holds_back_later_events);
    TAP_RUN(test_head_and_empty_upto_track_reserved_and_consumed_positions);
    TAP_RUN(test_four_producers_each_event_arrives_once_in_producer_order);
    TAP_RUN(test_producers_holding_reserved_slots_keep_order_and_lose_nothing);
    TAP_RUN(test_full_queue_without_consumer_drops_after_the_wait_and_counts);
    TAP_RUN(test_full_queue_waits_while_the_consumer_makes_progress);
    TAP_RUN(test_a_reservation_that_never_waits_drops_at_once_and_the_others_still_wait);
    TAP_RUN(test_a_new_queue_is_full_at_capacity_whatever_tail_this_thread_read_before);
    TAP_RUN(test_stalled_consumer_with_several_producers_keeps_capacity_and_counts_the_rest);
    TAP_RUN(test_skip_pending_gives_up_on_a_held_slot_and_counts_it);
    TAP_RUN(test_a_late_publish_before_the_next_lap_leaves_the_skipped_slot_alone);
    TAP_RUN(test_a_late_publish_leaves_a_slot_skipped_again_on_a_later_lap_alone);
    TAP_RUN(test_a_held_free_is_taken_after_its_wait_and_its_finish_says_so);
    TAP_RUN(test_a_held_free_finished_in_time_is_published_with_its_result);
    TAP_RUN(test_a_held_free_is_taken_at_once_at_a_stop_and_given_up_by_a_jump_before);
    TAP_RUN(test_a_held_free_right_behind_a_taken_one_is_taken_with_it);
    TAP_RUN(test_a_free_held_later_behind_a_taken_one_waits_its_own_time);
    TAP_RUN(test_the_take_and_the_finish_race_and_one_wins_each_free);
    return tap_done();
}
