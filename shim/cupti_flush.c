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

#define OUTCOMES 8   /* the last generations' outcomes kept (a caller checks its own a round later) */

static struct {
    pthread_mutex_t mu;
    pthread_cond_t cv;        /* CLOCK_MONOTONIC (made once): asked, done, ended */
    bool cv_made, started, quit;
    pthread_t thread;
    uint64_t asked, done;     /* generations */
    bool ran[OUTCOMES];       /* generation g's flush was made (not skipped for a fork) */
    uint32_t flag;
    bool bracket;
    CUptiResult (*flush)(uint32_t);
} F = {.mu = PTHREAD_MUTEX_INITIALIZER};
static _Atomic uint64_t in_flush;   /* the generation being flushed, 0: none */
static _Atomic bool fork_pending;
static _Atomic pid_t tid;

/* with F.mu held: once, and again in a fork child */
static void make_cv(void)
{
    if (F.cv_made)
        return;
    F.cv_made = true;
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&F.cv, &ca);
    pthread_condattr_destroy(&ca);
}

/* ns from now on clock: the deadline a timed wait takes */
static struct timespec after(clockid_t clock, uint64_t ns)
{
    struct timespec t;
    clock_gettime(clock, &t);
    t.tv_sec += (time_t)(ns / 1000000000ull);
    t.tv_nsec += (long)(ns % 1000000000ull);
    if (t.tv_nsec >= 1000000000L) {
        t.tv_sec++;
        t.tv_nsec -= 1000000000L;
    }
    return t;
}

/* the flush, within the attach section when asked for; false: not made */
static bool flush_now(CUptiResult (*flush)(uint32_t), uint32_t flag, bool bracket)
{
    if (bracket && !gt_attach_begin_flush())
        return false;
    flush(flag);
    if (bracket)
        gt_attach_end();
    return true;
}

static void *flusher_main(void *arg)
{
    (void)arg;
    gt_thread_untraced();
    atomic_store(&tid, (pid_t)syscall(SYS_gettid));
    for (;;) {
        pthread_mutex_lock(&F.mu);
        while (F.done == F.asked && !F.quit)
            pthread_cond_wait(&F.cv, &F.mu);
        if (F.done == F.asked) { /* quit (gt_cupti_flush_end, which joins it) */
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
        atomic_store(&in_flush, gen);
        bool ran = !atomic_load(&fork_pending) && flush_now(flush, flag, bracket);
        atomic_store(&in_flush, 0);
        pthread_mutex_lock(&F.mu);
        F.ran[gen % OUTCOMES] = ran;
        F.done = gen;
        pthread_cond_broadcast(&F.cv);
        pthread_mutex_unlock(&F.mu);
    }
    return NULL;
}

/* with F.mu held; the thread takes no signal (they are the program's). Tried
 * again at the next flush when it could not start (a thread limit, reached
 * for a while: a helper's probe). */
static bool start(void)
{
    if (F.started)
        return true;
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_attr_t a;
    pthread_attr_init(&a);
    pthread_attr_setstacksize(&a, 1 << 20);   /* as the writer's, whatever RLIMIT_STACK says */
    /* joinable: only gt_cupti_flush_end joins it (the process's end else) */
    F.started = pthread_create(&F.thread, &a, flusher_main, NULL) == 0;
    pthread_attr_destroy(&a);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    return F.started;
}

int gt_cupti_flush_on_thread(CUptiResult (*flush)(uint32_t), uint32_t flag, bool bracket, uint64_t wait_ns,
                             uint64_t *gen_out)
{
    if (gen_out)
        *gen_out = 0;
    struct timespec until = after(CLOCK_MONOTONIC, wait_ns);
    pthread_mutex_lock(&F.mu);
    make_cv();
    /* one in flight: a periodic caller asks no other; a waiting one waits for it first */
    while (F.done != F.asked)
        if (!wait_ns || pthread_cond_timedwait(&F.cv, &F.mu, &until) == ETIMEDOUT) {
            pthread_mutex_unlock(&F.mu);
            return wait_ns ? GT_FLUSH_LATE : GT_FLUSH_BUSY;
        }
    if (!start()) {
        pthread_mutex_unlock(&F.mu);
        if (wait_ns)   /* a stop's: not in place, where it could wait for ever (tried again at the next) */
            return GT_FLUSH_SKIPPED;
        return flush_now(flush, flag, bracket) ? GT_FLUSH_DONE : GT_FLUSH_SKIPPED;   /* as before there was one */
    }
    uint64_t gen = ++F.asked;
    F.flush = flush;
    F.flag = flag;
    F.bracket = bracket;
    pthread_cond_broadcast(&F.cv);
    if (gen_out)
        *gen_out = gen;
    if (!wait_ns) {
        pthread_mutex_unlock(&F.mu);
        return GT_FLUSH_ASKED;
    }
    int rc = 0;
    while (F.done < gen && rc != ETIMEDOUT)
        rc = pthread_cond_timedwait(&F.cv, &F.mu, &until);
    int r = F.done < gen ? GT_FLUSH_LATE : F.ran[gen % OUTCOMES] ? GT_FLUSH_DONE : GT_FLUSH_SKIPPED;
    pthread_mutex_unlock(&F.mu);
    return r;
}

int gt_cupti_flush_result(uint64_t gen)
{
    pthread_mutex_lock(&F.mu);
    int r = F.done < gen                  ? GT_FLUSH_RUNNING
            : F.done - gen >= OUTCOMES     ? GT_FLUSH_SKIPPED   /* forgotten: as if not made (asked again) */
            : F.ran[gen % OUTCOMES]        ? GT_FLUSH_DONE
                                           : GT_FLUSH_SKIPPED;
    pthread_mutex_unlock(&F.mu);
    return r;
}

bool gt_cupti_flush_end(uint64_t wait_ns)
{
    pthread_mutex_lock(&F.mu);
    make_cv();
    bool started = F.started;
    F.quit = started;
    pthread_cond_broadcast(&F.cv);
    pthread_mutex_unlock(&F.mu);
    if (!started)
        return true;
    /* joined: gone from the process, not only out of its loop (else it could
     * be glibc's last thread, its exit(0) run with every signal blocked) */
    struct timespec until = after(CLOCK_REALTIME, wait_ns);   /* pthread_timedjoin_np's clock */
    if (pthread_timedjoin_np(F.thread, NULL, &until) != 0)
        return false;
    pthread_mutex_lock(&F.mu);
    F.started = F.quit = false;
    atomic_store(&tid, 0);
    pthread_mutex_unlock(&F.mu);
    return true;
}

void gt_cupti_flush_fork_prepare(void)
{
    atomic_store(&fork_pending, true);
}

pid_t gt_cupti_flush_tid(void)
{
    return atomic_load(&tid);
}

uint64_t gt_cupti_flush_in_flight(void)
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
    F.cv_made = false;   /* made anew at the first use (a waiter's state in the copy is the parent's) */
    F.started = F.quit = false;
    F.asked = F.done = 0;
    atomic_store(&in_flush, 0);
    atomic_store(&fork_pending, false);
    atomic_store(&tid, 0);
}
