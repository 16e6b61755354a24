/* Bounded multi-producer, single-consumer ring between the hooks and the writer
 * thread. A producer reserves a position with one CAS on head and publishes
 * its slot later (sequence number = position + 1), so a free can take its
 * place in the order before the real free hands the address back to CUDA.
 * No locks, no allocation.
 * The writer never writes a slot: it reads published ones and then moves
 * tail on, once a batch; a producer learns that a slot is free from tail
 * alone, and reads tail only when its last reading says the ring may be
 * full (tail_seen, below). So the program's thread loads no line the writer
 * writes on most calls (the slot it takes was written by a producer a lap
 * ago, and read since), and its writes to the slot go through the store
 * buffer. On a GPU host the queue's part of each call was ~0.1 us with the
 * writer handing each slot back by writing its sequence number (Vyukov's
 * ring), ~30 ns with tail read on every call (session 19), against ~2 ns on
 * this project's CI machine; with tail read only when the ring may be full,
 * not yet measured there. */
#include <sched.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>

#include "shim.h"

struct gt_slot {
    _Alignas(64) _Atomic uint64_t seq;
    struct gt_rec rec;
};

static struct gt_slot *slots;
static uint64_t mask;
static _Alignas(64) _Atomic uint64_t head; /* next position to reserve */
static _Alignas(64) _Atomic uint64_t tail; /* next position to consume; written by the writer only */
/* Slots the writer gave up on at a stop (gt_queue_skip_pending): while none,
 * publishing loads nothing of its slot. Read-mostly, on a line of its own. */
static _Alignas(64) _Atomic uint64_t skips;
#define SKIPPED (1ull << 63)   /* a skipped slot's sequence number: SKIPPED | its position */
/* A held free's slot (gt_queue_hold): its record written, its result to come.
 * Either its producer finishes it (HELD -> FINISHING -> published) or the
 * writer, after waiting, takes it as it is (HELD -> published): one CAS
 * decides, so the record is never read while it is written. Positions stay
 * far below these bits (2^61 events). */
#define HELD (1ull << 62)
#define FINISHING (1ull << 61)

/* tail + 1 when a producer last gave up on a writer that made no progress
 * (0: never): until the writer moves again, a full ring drops at once, so a
 * writer stuck for minutes (another connection's lock) costs each call a
 * drop, not a wait of queue_wait_ms. */
static _Alignas(64) _Atomic uint64_t stalled_at;

/* A producer's last reading of tail, and of which queue (gt_queue_init counts
 * them: a fork child's queue starts again at 0). Within one queue tail only
 * grows, so a reading is at or behind it: pos - reading <= mask proves pos's
 * slot free, and the acquire load that made the reading ordered the writer's
 * reads of the slot's last record before this thread's writes. So tail's
 * line, which the writer's core writes once a batch, is read only when the
 * reading says the ring may be full: not once a call. */
static _Alignas(64) _Atomic uint64_t generation;   /* read on every call: a line no one writes after init */
static GT_TLS uint64_t tail_seen, tail_seen_generation;

/* The writer's: the held slot at tail, and since when (its clock). A slot
 * right behind one taken after its wait inherits that wait: threads each in
 * a waiting free would otherwise cost the writer 5 ms or more apiece. */
static uint64_t held_at = UINT64_MAX, held_since;

bool gt_queue_init(uint32_t capacity)
{
    size_t bytes = (size_t)capacity * sizeof(struct gt_slot);
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return false;
    slots = mem;
    mask = capacity - 1;
    /* no position's "published" (pos + 1): the mapping is zero already; the
     * stores touch its pages now rather than on the hot path, but at most
     * 64 MiB of them (GPUTRACE_QUEUE_EVENTS at its largest made 1 GiB
     * resident at the first CUDA call) */
    uint64_t touched = ((uint64_t)64 << 20) / sizeof(struct gt_slot);
    for (uint64_t i = 0; i < capacity && i < touched; i++)
        atomic_store_explicit(&slots[i].seq, 0, memory_order_relaxed);
    atomic_store(&head, 0);
    atomic_store(&tail, 0);
    atomic_store(&skips, 0);
    atomic_store(&stalled_at, 0);
    held_at = UINT64_MAX;   /* (a fork child's new queue: the parent's positions mean nothing) */
    atomic_fetch_add(&generation, 1);
    return true;
}

/* Fork child: the parent's unwritten events are the parent's to write. */
void gt_queue_discard(void)
{
    if (slots)
        munmap(slots, (size_t)(mask + 1) * sizeof(struct gt_slot));
    slots = NULL;
}

/* A producer waiting on a full queue sleeps 20 us, then twice as long at
 * each try up to 1.28 ms: with 64 threads or more waiting at 20 us, their
 * wake-ups kept the writer from the processor (on 2 cores it ran 0.57 s of a
 * 12 s run, went 1 s without a pop, and the threads dropped 39% of their
 * events as queue_full; a helper's probe). */
static void pause_briefly(unsigned try)
{
    struct timespec ts = {0, 20000L << (try < 6 ? try : 6)};
    nanosleep(&ts, NULL);
}

/* Why a full ring whose writer stopped at position t drops: the slot there
 * reserved and not yet published (a thread inside a traced free that
 * blocks: a synchronizing cudaFree waiting on the GPU drained nothing behind
 * it for a second, and 134,465 events were counted queue_full; a helper's
 * probe), or the writer behind. */
static bool unpublished(uint64_t t)
{
    return atomic_load_explicit(&slots[t & mask].seq, memory_order_acquire) != t + 1;
}

/* held_from_start: the slot was unpublished when the wait at t began too (a
 * slot caught mid-fill while the writer is merely behind is not held) */
static enum gt_drop_reason held_or(enum gt_drop_reason full, uint64_t t, bool held_from_start)
{
    if (!held_from_start || !unpublished(t))
        return full;
    return full == GT_DROP_RANGE_QUEUE_FULL ? GT_DROP_RANGE_QUEUE_HELD
           : full == GT_DROP_QUEUE_FULL    ? GT_DROP_QUEUE_HELD
                                           : full;   /* (a reason of its own: not an event's) */
}

/* Reserves the next slot. If the ring is full the producer waits as long as
 * the writer keeps draining (backpressure, not loss); only when the writer has
 * made no progress for queue_wait_ms does it give up and count a drop. */
static bool reserve(struct gt_reservation *r, enum gt_drop_reason full, uint32_t wait_ms)
{
    uint64_t deadline = 0, seen_tail = 0;
    bool held_at_start = false;
    unsigned tries = 0;
    uint64_t pos = atomic_load_explicit(&head, memory_order_relaxed);
    uint64_t gen = atomic_load_explicit(&generation, memory_order_relaxed);
    for (;;) {
        uint64_t t = tail_seen;
        if (GT_UNLIKELY(tail_seen_generation != gen || pos - t > mask)) {
            /* acquire: the writer's reads of this slot's last record came before */
            t = tail_seen = atomic_load_explicit(&tail, memory_order_acquire);
            tail_seen_generation = gen;
        }
        if (GT_UNLIKELY((int64_t)(pos - t) < 0)) {   /* pos read before others' events were taken */
            pos = atomic_load_explicit(&head, memory_order_relaxed);
            continue;
        }
        if (GT_LIKELY(pos - t <= mask)) {
            if (atomic_compare_exchange_weak_explicit(&head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                r->slot = &slots[pos & mask];
                r->pos = pos;
                return true;
            }
            continue; /* another producer took pos (pos now holds head): try the next */
        }
        /* full */
        uint64_t now = gt_now_ns();
        if (atomic_load_explicit(&stalled_at, memory_order_relaxed) == t + 1) {
            gt_drop(held_or(full, t, true)); /* the writer is known stuck: no second wait */
            return false;
        }
        if (!deadline || t != seen_tail) {
            seen_tail = t;
            deadline = now + (uint64_t)wait_ms * 1000000ull;
            held_at_start = wait_ms > 0 && unpublished(t);
        }
        if (now >= deadline) {
            if (wait_ms)   /* (a reservation that never waits tells nothing of the writer) */
                atomic_store_explicit(&stalled_at, t + 1, memory_order_relaxed);
            gt_drop(held_or(full, t, held_at_start));
            return false;
        }
        pause_briefly(tries++);
        pos = atomic_load_explicit(&head, memory_order_relaxed);
    }
}

bool gt_queue_reserve(struct gt_reservation *r, enum gt_drop_reason full)
{
    return reserve(r, full, gt_config.queue_wait_ms);
}

/* Without the wait on a full ring: for a record made where the thread must
 * not sleep (a longjmp out of a call, often from a signal handler). */
bool gt_queue_reserve_now(struct gt_reservation *r, enum gt_drop_reason full)
{
    return reserve(r, full, 0);
}

/* Publishes a reserved slot. If the writer gave up on it at a stop (see
 * gt_queue_skip_pending) the event is already counted as lost: leave the
 * slot, which may be another position's by now. Only then is the slot read. */
static inline bool given_up(const struct gt_reservation *r)
{
    if (GT_LIKELY(!atomic_load_explicit(&skips, memory_order_acquire)))
        return false;
    uint64_t seq = atomic_load_explicit(&r->slot->seq, memory_order_acquire);
    /* ours unless marked skipped at this position or a later lap's, or published by a later lap */
    return (seq & SKIPPED) ? (seq & ~SKIPPED) >= r->pos : (seq & ~(HELD | FINISHING)) > r->pos;
}

void gt_queue_publish(const struct gt_reservation *r, const struct gt_rec *rec)
{
    if (given_up(r))
        return;
    r->slot->rec = *rec;
    atomic_store_explicit(&r->slot->seq, r->pos + 1, memory_order_release);
}

/* A free's record, before the real free runs: in its place, for the writer
 * to take after a while should the free not return (a synchronizing cudaFree
 * waiting on the GPU held every event behind it: a helper's probe counted
 * 134,465 lost in a second). */
bool gt_queue_hold(const struct gt_reservation *r, const struct gt_rec *rec)
{
    if (given_up(r))
        return false;
    r->slot->rec = *rec;
    atomic_store_explicit(&r->slot->seq, HELD | r->pos, memory_order_release);
    return true;
}

enum gt_held_end gt_queue_finish_held(const struct gt_reservation *r, int32_t result, uint64_t stack_hash)
{
    uint64_t seq = HELD | r->pos;
    if (atomic_compare_exchange_strong_explicit(&r->slot->seq, &seq, FINISHING | r->pos, memory_order_relaxed,
                                                memory_order_relaxed)) {
        r->slot->rec.call.result = result;
        if (stack_hash)
            r->slot->rec.call.stack_hash = stack_hash;
        atomic_store_explicit(&r->slot->seq, r->pos + 1, memory_order_release);
        return GT_HELD_PUBLISHED;
    }
    /* taken by the writer (then published, perhaps reused a lap on), or given up at a stop */
    return seq == (SKIPPED | r->pos) ? GT_HELD_SKIPPED : GT_HELD_TAKEN;
}

static bool held_long_enough(uint64_t t, uint64_t after_ns)
{
    if (!after_ns)
        return true;
    uint64_t now = gt_now_ns();
    if (held_at != t) {
        held_at = t;
        held_since = now;
        return false;
    }
    return now - held_since >= after_ns;
}

/* Copies up to max published records, in reservation order; their slots are
 * free once tail passes them. A held free at tail held take_held_after_ns
 * (0: at once) is taken as it is: marked GT_CALL_TAKEN, its position in
 * .call.size (a held free's size is the writer's to find). */
int gt_queue_pop(struct gt_rec *out, int max, uint64_t take_held_after_ns)
{
    int n = 0;
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    while (n < max) {
        struct gt_slot *s = &slots[t & mask];
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (seq == (SKIPPED | t)) {   /* given up by its producer (gt_queue_abandon): counted there */
            t++;
            continue;
        }
        if (seq == (HELD | t)) {
            if (!held_long_enough(t, take_held_after_ns) ||
                !atomic_compare_exchange_strong_explicit(&s->seq, &seq, t + 1, memory_order_acquire,
                                                         memory_order_relaxed))
                break;   /* not yet; or its producer is finishing it: the next round reads it */
            out[n] = s->rec;
            out[n].flags |= GT_CALL_TAKEN;
            out[n++].call.size = t;
            if (held_at == t)
                held_at = t + 1;   /* the next slot, if held, has waited as long */
            t++;
            continue;
        }
        if (seq != t + 1) {   /* empty, or reserved but not yet published */
            if (held_at == t)
                held_at = UINT64_MAX;   /* (no wait to inherit: a free held here later starts its own) */
            break;
        }
        out[n++] = s->rec;
        t++;
    }
    /* (an unchanged tail is not stored: producers keep their copy of its line; one moved past slots given up
     * alone is, or a stop would wait on them in vain) */
    if (t != atomic_load_explicit(&tail, memory_order_relaxed))
        atomic_store_explicit(&tail, t, memory_order_release);
    return n;
}

uint64_t gt_queue_head(void)
{
    return atomic_load_explicit(&head, memory_order_acquire);
}

bool gt_queue_empty_upto(uint64_t pos)
{
    return atomic_load_explicit(&tail, memory_order_relaxed) >= pos;
}

/* At a stop (exit, or an exec, after which a failed exec resumes the trace) a
 * thread may sit inside a real free with its slot reserved: the writer cannot
 * wait forever, so it skips the slot and counts the loss. The slot is marked
 * first, so that its late publish (which then reads it) leaves it alone, and
 * so does one from an earlier lap that finds this mark; a publish that read
 * `skips` as 0 just before the first skip can still land in the slot (the same
 * window as any check-then-write, and the old ring's). */
/* A producer that will never publish the slot it reserved at pos (its free
 * was left by a longjmp: record.c): marked skipped, so the writer passes it
 * and a late publish, should one come, leaves it alone. True: a held free
 * the writer had taken (and written) already. */
bool gt_queue_abandon(uint64_t pos)
{
    _Atomic uint64_t *seq = &slots[pos & mask].seq;
    uint64_t s = atomic_load_explicit(seq, memory_order_acquire);
    if (s == (HELD | pos)) {
        if (!atomic_compare_exchange_strong_explicit(seq, &s, SKIPPED | pos, memory_order_acq_rel,
                                                     memory_order_acquire))
            return s != (SKIPPED | pos);   /* the writer took it meanwhile (or gave it up at a stop) */
    } else if (s > pos) {
        return s != (SKIPPED | pos);       /* taken by the writer already (or given up at a stop) */
    } else {          /* reserved, never held (a free of mapped memory, a reset): a last lap's number */
        atomic_store_explicit(seq, SKIPPED | pos, memory_order_release);
    }
    atomic_fetch_add_explicit(&skips, 1, memory_order_seq_cst);
    return false;
}

void gt_queue_skip_pending(void)
{
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    _Atomic uint64_t *seq = &slots[t & mask].seq;
    uint64_t s = atomic_load_explicit(seq, memory_order_acquire);
    /* a held free whose thread is writing its result: published in a moment,
     * and taken by the next pop (unless its thread never gets to: the one a
     * fatal signal stopped there) */
    for (int i = 0; i < 1000 && s == (FINISHING | t); i++) {
        sched_yield();
        s = atomic_load_explicit(seq, memory_order_acquire);
    }
    if (s == t + 1)
        return;
    /* from what was read: a held slot's thread may finish it meanwhile (then the next pop takes it) */
    if (!atomic_compare_exchange_strong_explicit(seq, &s, SKIPPED | t, memory_order_acq_rel, memory_order_acquire))
        return;
    atomic_fetch_add_explicit(&skips, 1, memory_order_seq_cst);
    atomic_store_explicit(&tail, t + 1, memory_order_release);
    gt_drop(GT_DROP_UNFINISHED_AT_EXIT);
}
