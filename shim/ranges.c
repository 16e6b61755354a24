/* Recording of ranges, marks and iterations (NVTX and gputrace_* markers) on
 * the program's threads: like a hook, it only queues fixed-size records. Each
 * thread keeps a stack of its open push/pop ranges, so ranges pushed before
 * the trace started (it starts at the first CUDA call) are emitted, with their
 * own start time, when it does; NVTX use alone never starts a trace. */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>

#include "activity.h"

#define STACK_MAX 128
#define OVERFLOW_KINDS 8   /* (source, domain) pairs past STACK_MAX at once on one thread */

/* A range's or mark's message as the trace keeps it: at most MESSAGE_MAX
 * bytes (cut on a character, "..." after), valid UTF-8 (a byte that begins
 * no character becomes U+FFFD). A helper's probe named 1000 ranges 1 MB
 * each: 921 MB of the program's memory, a 1 GB trace and 13 s of exit;
 * and names in Latin-1 made Python's sqlite3 fail on the ranges table. */
#define MESSAGE_MAX 1024

static size_t utf8_char(const unsigned char *s)
{
    unsigned c = s[0];
    size_t n = c < 0x80 ? 1 : (c & 0xe0) == 0xc0 ? 2 : (c & 0xf0) == 0xe0 ? 3 : (c & 0xf8) == 0xf0 ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xc2) || (n == 4 && c > 0xf4))
        return 0;   /* a continuation byte, an overlong lead, past U+10FFFF */
    for (size_t i = 1; i < n; i++)
        if ((s[i] & 0xc0) != 0x80)
            return 0;
    if (n == 3 && ((c == 0xe0 && s[1] < 0xa0) || (c == 0xed && s[1] >= 0xa0)))
        return 0;   /* overlong, or a surrogate */
    if (n == 4 && ((c == 0xf0 && s[1] < 0x90) || (c == 0xf4 && s[1] >= 0x90)))
        return 0;
    return n;
}

char *gt_message_copy(const char *s)
{
    if (!s)
        return NULL;
    char buf[MESSAGE_MAX + 1];   /* built here, then copied at its own size */
    size_t len = 0, cut_at = 0;  /* cut_at: the last character end with room for "..." after it */
    const unsigned char *p = (const unsigned char *)s;
    while (*p) {
        size_t n = utf8_char(p);
        size_t w = n ? n : 3;
        if (len + w > MESSAGE_MAX) {
            memcpy(buf + cut_at, "...", 3);
            len = cut_at + 3;
            gt_drop(GT_DROP_MESSAGE_CUT);
            break;
        }
        memcpy(buf + len, n ? (const char *)p : "\xef\xbf\xbd", w);   /* U+FFFD for a byte that begins none */
        p += n ? n : 1;
        len += w;
        if (len <= MESSAGE_MAX - 3)
            cut_at = len;
    }
    buf[len] = 0;
    char *out = malloc(len + 1);
    if (out)
        memcpy(out, buf, len + 1);
    return out;
}

struct entry {
    uint64_t id, start, parent;
    gt_domain dom;
    char *msg;      /* owned until emitted */
    int depth;
    int8_t source;
    bool emitted;   /* its RANGE_OPEN is on the queue */
};

/* One per thread that ever used a range; reused after the thread exits. */
struct tstate {
    struct tstate *next;      /* registry, push-only */
    _Atomic int lock;         /* taken by its thread, and by the sweep at trace start */
    _Atomic int in_use;
    int32_t tid;
    int n;
    /* pushes past STACK_MAX, not recorded, by (source, domain): each one's pop
     * is that pair's, so a pop of another domain still closes its own range */
    struct { gt_domain dom; int8_t source; int count; } over[OVERFLOW_KINDS];
    struct entry e[STACK_MAX];
};

static _Atomic(struct tstate *) registry;
static GT_TLS struct tstate *me;
static pthread_key_t exit_key;
static pthread_once_t key_once = PTHREAD_ONCE_INIT;
static _Atomic uint64_t next_id = 1;

/* start/end ranges opened while no trace exists, and the last iteration mark */
#define PENDING_MAX 1024
struct pending {
    struct pending *next;
    uint64_t id, start;
    gt_domain dom;
    char *msg;
    int32_t tid;
    int8_t source;
};
static pthread_mutex_t pend_mu = PTHREAD_MUTEX_INITIALIZER;
static struct pending *pend;
static _Atomic int pend_count;
static struct { bool set; long index, batch; uint64_t t; int32_t tid; } pend_iter;

static bool active(void)
{
    return atomic_load_explicit(&gt_state, memory_order_acquire) == GT_ACTIVE;
}

static void lock(struct tstate *s)
{
    while (atomic_exchange_explicit(&s->lock, 1, memory_order_acquire))
        sched_yield();
}

static void unlock(struct tstate *s)
{
    atomic_store_explicit(&s->lock, 0, memory_order_release);
}

/* Queues one record; a record that cannot be queued is counted as a drop
 * (by the queue) and its message released here. */
static void publish(struct gt_rec *rec)
{
    struct gt_reservation r;
    if (gt_queue_reserve(&r, GT_DROP_RANGE_QUEUE_FULL))
        gt_queue_publish(&r, rec);
    else
        gt_rec_release(rec);
}

static void make(struct gt_rec *rec, enum gt_rec_kind kind, uint64_t t, int32_t tid)
{
    memset(rec, 0, sizeof *rec);
    rec->kind = (uint8_t)kind;
    rec->t_ns = t;
    rec->tid = tid;
}

/* The record that opens an entry's range; the record takes its message. */
static void make_open(struct gt_rec *rec, struct entry *e, int32_t tid, enum gt_rec_kind kind)
{
    make(rec, kind, e->start, tid);
    rec->open = (struct gt_range_open){.id = e->id, .parent_id = e->parent, .domain = e->dom, .msg = e->msg,
                                       .depth = e->depth, .source = e->source};
    e->msg = NULL;
    e->emitted = true;
}

static void make_close(struct gt_rec *rec, enum gt_rec_kind kind, uint64_t id, uint64_t t, int32_t tid)
{
    make(rec, kind, t, tid);
    rec->close.id = id;
}

static void thread_exit(void *arg)
{
    struct tstate *s = arg;
    lock(s);
    for (int i = 0; i < s->n; i++)
        free(s->e[i].msg); /* opened before any trace and never closed: nothing to show */
    s->n = 0;
    memset(s->over, 0, sizeof s->over);
    unlock(s);
    atomic_store(&s->in_use, 0);
}

static void make_key(void)
{
    pthread_key_create(&exit_key, thread_exit);
}

static struct tstate *state(void)
{
    if (GT_LIKELY(me != NULL))
        return me;
    pthread_once(&key_once, make_key);
    struct tstate *s;
    for (s = atomic_load(&registry); s; s = s->next) {
        int free_ = 0;
        if (atomic_compare_exchange_strong(&s->in_use, &free_, 1))
            break;
    }
    if (!s) {
        s = calloc(1, sizeof *s);
        if (!s)
            return NULL;
        s->in_use = 1;
        s->next = atomic_load(&registry);
        while (!atomic_compare_exchange_weak(&registry, &s->next, s))
            ;
    }
    s->tid = gt_tid();
    me = s;
    pthread_setspecific(exit_key, s);
    return s;
}

/* Pushes a range on the calling thread's stack for (source, domain). */
int gt_range_push(int source, gt_domain dom, char *msg)
{
    uint64_t t = gt_now_ns();
    struct tstate *s = state();
    if (!s) {
        free(msg);
        return -1;
    }
    struct gt_rec ev;
    bool emit = false;
    int depth = 0;
    uint64_t parent = 0;
    lock(s);
    for (int i = s->n - 1; i >= 0; i--)
        if (s->e[i].source == source && s->e[i].dom == dom) {
            if (!parent)
                parent = s->e[i].id;
            depth++;
        }
    if (s->n == STACK_MAX) { /* absurdly deep: keep the count so pops still match */
        int k = 0;
        while (k < OVERFLOW_KINDS && s->over[k].count && !(s->over[k].source == source && s->over[k].dom == dom))
            k++;
        if (k < OVERFLOW_KINDS) {
            s->over[k].source = (int8_t)source;
            s->over[k].dom = dom;
            s->over[k].count++;
        }
        unlock(s);
        gt_drop(GT_DROP_RANGE_TOO_DEEP);
        free(msg);
        return depth;
    }
    struct entry *e = &s->e[s->n++];
    *e = (struct entry){.id = atomic_fetch_add(&next_id, 1), .start = t, .parent = parent, .dom = dom,
                        .msg = msg, .depth = depth, .source = (int8_t)source};
    if (active()) {
        make_open(&ev, e, s->tid, GT_REC_RANGE_PUSH);
        emit = true;
    }
    unlock(s);
    if (emit)
        publish(&ev);
    return depth;
}

/* Pops the innermost open range of (source, domain) on the calling thread. */
int gt_range_pop(int source, gt_domain dom)
{
    uint64_t t = gt_now_ns();
    struct tstate *s = me;
    if (!s)
        return -1;
    struct gt_rec open, close;
    int emit = 0;
    lock(s);
    for (int k = 0; k < OVERFLOW_KINDS; k++)
        if (s->over[k].count && s->over[k].source == source && s->over[k].dom == dom) {
            s->over[k].count--;   /* the innermost of this pair was one not recorded */
            unlock(s);
            return STACK_MAX;
        }
    int i = s->n - 1;
    while (i >= 0 && !(s->e[i].source == source && s->e[i].dom == dom))
        i--;
    if (i < 0) {
        unlock(s);
        return -1;
    }
    struct entry e = s->e[i];
    memmove(&s->e[i], &s->e[i + 1], (size_t)(s->n - i - 1) * sizeof e);
    s->n--;
    if (e.emitted) {
        make_close(&close, GT_REC_RANGE_POP, e.id, t, s->tid);
        emit = 1;
    } else if (active()) { /* the trace started and its sweep has not reached us yet */
        make_open(&open, &e, s->tid, GT_REC_RANGE_PUSH);
        make_close(&close, GT_REC_RANGE_POP, e.id, t, s->tid);
        emit = 2;
    } else {
        free(e.msg); /* began and ended before the trace: outside its time span */
    }
    unlock(s);
    if (emit == 2)
        publish(&open);
    if (emit)
        publish(&close);
    return e.depth;
}

/* A start/end range: any thread may end it. Returns its id (never 0). */
uint64_t gt_range_start(int source, gt_domain dom, char *msg)
{
    struct entry e = {.id = atomic_fetch_add(&next_id, 1), .start = gt_now_ns(), .dom = dom, .msg = msg,
                      .source = (int8_t)source};
    struct gt_rec ev;
    if (!active()) {
        pthread_mutex_lock(&pend_mu);
        if (!active()) {
            /* Bounded: a process that never calls CUDA may open start/end
             * ranges without end (or end them oldest first: each end scans
             * this list), and should pay almost nothing for them (a helper's
             * probe: 80,000 open at once took 6.9 s to end, untraced 0.00) */
            struct pending *p = atomic_load(&pend_count) < PENDING_MAX ? malloc(sizeof *p) : NULL;
            if (!p && atomic_load(&pend_count) >= PENDING_MAX)
                gt_drop(GT_DROP_RANGE_NOT_KEPT);
            if (p) {
                *p = (struct pending){pend, e.id, e.start, dom, msg, gt_tid(), (int8_t)source};
                pend = p;
                atomic_fetch_add(&pend_count, 1);
            } else {
                free(msg);
            }
            pthread_mutex_unlock(&pend_mu);
            return e.id;
        }
        pthread_mutex_unlock(&pend_mu);
    }
    make_open(&ev, &e, gt_tid(), GT_REC_RANGE_START);
    publish(&ev);
    return e.id;
}

void gt_range_end(uint64_t id)
{
    uint64_t t = gt_now_ns();
    struct gt_rec open, close;
    struct pending *found = NULL;
    if (atomic_load(&pend_count)) {
        pthread_mutex_lock(&pend_mu);
        for (struct pending **pp = &pend; *pp; pp = &(*pp)->next)
            if ((*pp)->id == id) {
                found = *pp;
                *pp = found->next;
                atomic_fetch_sub(&pend_count, 1);
                break;
            }
        pthread_mutex_unlock(&pend_mu);
    }
    if (!active()) {
        if (found)
            free(found->msg);
        free(found);
        return;
    }
    if (found) {
        struct entry e = {.id = found->id, .start = found->start, .dom = found->dom, .msg = found->msg,
                          .source = found->source};
        make_open(&open, &e, found->tid, GT_REC_RANGE_START);
        publish(&open);
        free(found);
    }
    make_close(&close, GT_REC_RANGE_END, id, t, gt_tid());
    publish(&close);
}

void gt_mark(int source, gt_domain dom, char *msg)
{
    uint64_t t = gt_now_ns();
    if (!active()) { /* a moment before the trace began: outside it */
        free(msg);
        return;
    }
    struct gt_rec ev;
    make(&ev, GT_REC_MARK, t, gt_tid());
    ev.mark = (struct gt_mark){.domain = dom, .msg = msg, .source = (int8_t)source};
    publish(&ev);
}

static void make_iteration(struct gt_rec *rec, long index, long batch, uint64_t t, int32_t tid)
{
    make(rec, GT_REC_ITERATION, t, tid);
    rec->iteration = (struct gt_iteration){.index = index, .batch_size = batch};
}

/* The iteration in progress when the trace starts is part of it: the last
 * call before the start is kept and emitted then. */
void gt_iteration(long index, long batch_size)
{
    uint64_t t = gt_now_ns();
    if (!active()) {
        pthread_mutex_lock(&pend_mu);
        if (!active()) {
            pend_iter.set = true;
            pend_iter.index = index;
            pend_iter.batch = batch_size;
            pend_iter.t = t;
            pend_iter.tid = gt_tid();
            pthread_mutex_unlock(&pend_mu);
            return;
        }
        pthread_mutex_unlock(&pend_mu);
    }
    struct gt_rec ev;
    make_iteration(&ev, index, batch_size, t, gt_tid());
    publish(&ev);
}

/* Called once the trace is active (queue ready): emits every range opened
 * before it and still open, on every thread. Holding each thread's lock while
 * queueing keeps an OPEN ahead of the CLOSE its thread may queue next. */
void gt_ranges_trace_started(void)
{
    struct gt_rec ev;
    for (struct tstate *s = atomic_load(&registry); s; s = s->next) {
        lock(s);
        for (int i = 0; i < s->n; i++)
            if (!s->e[i].emitted) {
                make_open(&ev, &s->e[i], s->tid, GT_REC_RANGE_PUSH);
                publish(&ev);
            }
        unlock(s);
    }
    pthread_mutex_lock(&pend_mu);
    while (pend) {
        struct pending *p = pend;
        pend = p->next;
        struct entry e = {.id = p->id, .start = p->start, .dom = p->dom, .msg = p->msg, .source = p->source};
        make_open(&ev, &e, p->tid, GT_REC_RANGE_START);
        publish(&ev);
        free(p);
    }
    atomic_store(&pend_count, 0);
    if (pend_iter.set) {
        make_iteration(&ev, pend_iter.index, pend_iter.batch, pend_iter.t, pend_iter.tid);
        publish(&ev);
        pend_iter.set = false;
    }
    pthread_mutex_unlock(&pend_mu);
}

/* Fork child: only the forking thread exists. Its open ranges belong to the
 * parent's trace; the child starts with empty stacks and nothing pending. */
void gt_ranges_after_fork_child(void)
{
    for (struct tstate *s = atomic_load(&registry); s; s = s->next) {
        atomic_store(&s->lock, 0);
        s->n = 0;
        memset(s->over, 0, sizeof s->over);
        if (s != me)
            atomic_store(&s->in_use, 0);
    }
    if (me)
        me->tid = gt_tid();
    pthread_mutex_init(&pend_mu, NULL);
    pend = NULL;
    atomic_store(&pend_count, 0);
    pend_iter.set = false;
}
