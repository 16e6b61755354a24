/* CUPTI's flushes, on a thread of their own (cupti_flush.h says why). One
 * flush at a time: a caller asks and, at a stop, waits a bounded while; a
 * periodic flush asked while one is still in flight is not asked again. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "cupti_attach.h"
#include "cupti_flush.h"
#include "shim.h"

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* CLOCK_MONOTONIC: asked, and done */
    bool started, quit;
    uint64_t asked, done;     /* generations */
    uint32_t flag;
    bool bracket;
    CUptiResult (*flush)(uint32_t);
} F = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, 0, 0, 0, false, NULL};
static _Atomic bool in_flush, fork_pending;
static _Atomic pid_t tid;

static void *flusher_main(void *arg)
{
    (void)arg;
    gt_thread_untraced();
    atomic_store(&tid, (pid_t)syscall(SYS_gettid));
    for (;;) {
        pthread_mutex_lock(&F.mu);
        while (F.done == F.asked && !F.quit)
            pthread_cond_wait(&F.cv, &F.mu);
        if (F.done == F.asked) { /* quit (gt_cupti_flush_end) */
            F.started = F.quit = false;
            atomic_store(&tid, 0);
            pthread_cond_broadcast(&F.cv);
            pthread_mutex_unlock(&F.mu);
            return NULL;
        }
        uint64_t gen = F.asked;
        uint32_t flag = F.flag;
        bool bracket = F.bracket;
        CUptiResult (*flush)(uint32_t) = F.flush;
        pthread_mutex_unlock(&F.mu);
        /* as the writer's round: none starts while a fork is pending (the
         * flush may take the loader's lock); each side stores, then reads
         * the other's flag */
        atomic_store(&in_flush, true);
        if (!atomic_load(&fork_pending) && (!bracket || gt_attach_begin())) {
            flush(flag);
            if (bracket)
                gt_attach_end();
        }
        atomic_store(&in_flush, false);
        pthread_mutex_lock(&F.mu);
        F.done = gen;
        pthread_cond_broadcast(&F.cv);
        pthread_mutex_unlock(&F.mu);
    }
    return NULL;
}

/* with F.mu held; the thread takes no signal (they are the program's) */
static bool start(void)
{
    if (F.started)
        return true;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_destroy(&F.cv);
    pthread_cond_init(&F.cv, &ca);
    pthread_condattr_destroy(&ca);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setdetachstate(&a, PTHREAD_CREATE_DETACHED);
    pthread_t t;
    F.started = pthread_create(&t, &a, flusher_main, NULL) == 0;
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return F.started;
}

int gt_cupti_flush_on_thread(CUptiResult (*flush)(uint32_t), uint32_t flag, bool bracket, uint64_t wait_ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(wait_ns / 1000000000ull);
    until.tv_nsec += (long)(wait_ns % 1000000000ull);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&F.mu);
    /* one in flight: a periodic caller asks no other; a waiting one waits for it first */
    while (F.done != F.asked)
        if (!wait_ns || pthread_cond_timedwait(&F.cv, &F.mu, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&F.mu);
            return wait_ns ? GT_FLUSH_LATE : GT_FLUSH_BUSY;
        }
    F.flush = flush;
    if (!start()) {   /* no thread: the flush where it was asked (as before there was one) */
        pthread_mutex_unlock(&F.mu);
        if (!bracket || gt_attach_begin()) {
            flush(flag);
            if (bracket)
                gt_attach_end();
        }
        return GT_FLUSH_DONE;
    }
    uint64_t gen = ++F.asked;
    F.flag = flag;
    F.bracket = bracket;
    pthread_cond_broadcast(&F.cv);
    if (!wait_ns) {
        pthread_mutex_unlock(&F.mu);
        return GT_FLUSH_ASKED;
    }
    int rc = 0;
    while (F.done < gen && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&F.cv, &F.mu, &until);
    bool done = F.done >= gen;
    pthread_mutex_unlock(&F.mu);
    return done ? GT_FLUSH_DONE : GT_FLUSH_LATE;
}

void gt_cupti_flush_fork_prepare(void)
{
    atomic_store(&fork_pending, true);
}

void gt_cupti_flush_end(uint64_t wait_ns)
{
    struct timespec until;
    clock_gettime(CLOCK_MONOTONIC, &until);
    until.tv_sec += (time_t)(wait_ns / 1000000000ull);
    until.tv_nsec += (long)(wait_ns % 1000000000ull);
    if (until.tv_nsec >= 1000000000L) {
        until.tv_sec++;
        until.tv_nsec -= 1000000000L;
    }
    pthread_mutex_lock(&F.mu);
    F.quit = F.started;
    pthread_cond_broadcast(&F.cv);
    while (F.started && pthread_cond_timedwait(&F.cv, &F.mu, &until) != ETIMEDOUT)
        ;
    pthread_mutex_unlock(&F.mu);
}

pid_t gt_cupti_flush_tid(void)
{
    return atomic_load(&tid);
}

bool gt_cupti_flush_in_flight(void)
{
    return atomic_load(&in_flush);
}

void gt_cupti_flush_fork_parent(void)
{
    atomic_store(&fork_pending, false);
}

void gt_cupti_flush_after_fork_child(void)
{
    pthread_mutex_init(&F.mu, NULL);
    pthread_cond_init(&F.cv, NULL);
    F.started = F.quit = false;
    F.asked = F.done = 0;
    atomic_store(&in_flush, false);
    atomic_store(&fork_pending, false);
    atomic_store(&tid, 0);
}
