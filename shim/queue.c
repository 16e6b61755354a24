/* Bounded multi-producer, single-consumer ring between the hooks and the writer
 * thread (Vyukov's sequence-numbered slots). A producer reserves a slot with one
 * CAS and publishes it later, so a free can take its place in the order before
 * the real free hands the address back to CUDA. No locks, no allocation. */
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

/* tail + 1 when a producer last gave up on a writer that made no progress
 * (0: never): until the writer moves again, a full ring drops at once, so a
 * writer stuck for minutes (another connection's lock) costs each call a
 * drop, not a wait of queue_wait_ms. */
static _Atomic uint64_t stalled_at;

bool gt_queue_init(uint32_t capacity)
{
    size_t bytes = (size_t)capacity * sizeof(struct gt_slot);
    void *mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mem == MAP_FAILED)
        return false;
    slots = mem;
    mask = capacity - 1;
    for (uint64_t i = 0; i < capacity; i++)
        atomic_store_explicit(&slots[i].seq, i, memory_order_relaxed);
    atomic_store(&head, 0);
    atomic_store(&tail, 0);
    atomic_store(&stalled_at, 0);
    return true;
}

/* Fork child: the parent's unwritten events are the parent's to write. */
void gt_queue_discard(void)
{
    if (slots)
        munmap(slots, (size_t)(mask + 1) * sizeof(struct gt_slot));
    slots = NULL;
}

static void pause_briefly(void)
{
    struct timespec ts = {0, 20000}; /* 20 us: let the writer drain */
    nanosleep(&ts, NULL);
}

/* Reserves the next slot. If the ring is full the producer waits as long as
 * the writer keeps draining (backpressure, not loss); only when the writer has
 * made no progress for queue_wait_ms does it give up and count a drop. */
bool gt_queue_reserve(struct gt_reservation *r)
{
    uint64_t deadline = 0, seen_tail = 0;
    for (;;) {
        uint64_t pos = atomic_load_explicit(&head, memory_order_relaxed);
        struct gt_slot *s = &slots[pos & mask];
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        int64_t diff = (int64_t)(seq - pos);
        if (diff == 0) {
            if (atomic_compare_exchange_weak_explicit(&head, &pos, pos + 1, memory_order_relaxed,
                                                      memory_order_relaxed)) {
                r->slot = s;
                r->pos = pos;
                return true;
            }
        } else if (diff < 0) { /* full */
            uint64_t now = gt_now_ns();
            uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
            if (atomic_load_explicit(&stalled_at, memory_order_relaxed) == t + 1) {
                gt_drop(GT_DROP_QUEUE_FULL); /* the writer is known stuck: no second wait */
                return false;
            }
            if (!deadline || t != seen_tail) {
                seen_tail = t;
                deadline = now + (uint64_t)gt_config.queue_wait_ms * 1000000ull;
            }
            if (now >= deadline) {
                atomic_store_explicit(&stalled_at, t + 1, memory_order_relaxed);
                gt_drop(GT_DROP_QUEUE_FULL);
                return false;
            }
            pause_briefly();
        } else {
            sched_yield(); /* another producer got there first; rare */
        }
    }
}

/* Publishes a reserved slot. If the writer gave up on it at exit (see
 * gt_queue_skip_pending) the event is already counted as lost: leave the slot. */
void gt_queue_publish(const struct gt_reservation *r, const struct gt_rec *rec)
{
    if (atomic_load_explicit(&r->slot->seq, memory_order_acquire) != r->pos)
        return;
    r->slot->rec = *rec;
    atomic_store_explicit(&r->slot->seq, r->pos + 1, memory_order_release);
}

/* Copies up to max published records, in reservation order, and frees their slots. */
int gt_queue_pop(struct gt_rec *out, int max)
{
    int n = 0;
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    while (n < max) {
        struct gt_slot *s = &slots[t & mask];
        uint64_t seq = atomic_load_explicit(&s->seq, memory_order_acquire);
        if (seq != t + 1)
            break; /* empty, or reserved but not yet published */
        out[n++] = s->rec;
        atomic_store_explicit(&s->seq, t + mask + 1, memory_order_release);
        t++;
    }
    atomic_store_explicit(&tail, t, memory_order_relaxed);
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

/* At exit a thread may sit inside a real free with its slot reserved: the
 * writer cannot wait forever, so it skips the slot and counts the loss. */
void gt_queue_skip_pending(void)
{
    uint64_t t = atomic_load_explicit(&tail, memory_order_relaxed);
    atomic_store_explicit(&slots[t & mask].seq, t + mask + 1, memory_order_release);
    atomic_store_explicit(&tail, t + 1, memory_order_relaxed);
    gt_drop(GT_DROP_UNFINISHED_AT_EXIT);
}
