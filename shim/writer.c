/* The writer thread: drains the event queue and the new-stack list into the
 * SQLite trace in batched transactions (WAL), so even a killed process
 * leaves a readable trace with the drop counts (the processes row's counters
 * are current at every commit). Its thread, loop, transactions and the
 * closing of the file live here (the opening is writer_open.c's); what each record becomes is
 * writer_events.c's (allocation events) and writer_activity.c's (everything
 * else), all through db.c. All SQLite work happens on this thread. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "activity.h"
#include "db.h"
#include "vfs.h"
#include "time_order.h"
#include "writer.h"

#define BATCH 4096
#define COMMIT_EVERY_NS (50 * 1000000ull)  /* well inside the promised 100 ms */
/* the sleep between drains that caught up (writer_main) */
#define GATHER_MIN_NS (1000000ull)
#define GATHER_MAX_NS (10000000ull)
#define GATHER_ENOUGH 256
#define LOCK_WAIT_AT_STOP_NS (1000 * 1000000ull) /* exit waits this long at most for another connection's lock */
#define PENDING_SLOT_WAIT_NS (2000 * 1000000ull)
/* A free not returned by then is written as one that worked, and what is
 * behind it drains (queue.c): a synchronizing free takes milliseconds, a
 * queue of 64K events fills in ~60 ms at a million calls a second. */
#define TAKE_HELD_FREE_AFTER_NS (5 * 1000000ull)
#define PENDING_SLOT_WAIT_AT_SIGNAL_NS (50 * 1000000ull) /* the signalled thread may hold one forever */
#define CHECKPOINT_NEEDS_NS (300 * 1000000ull) /* time left for the one-file conversion at a signal */
#define FORK_WAIT_NS (200 * 1000000ull) /* a fork waits this long at most for a thread that may hold the loader's lock */

static struct {
    char path[4200];
    uint64_t start_mono, start_unix;

    pthread_t thread;
    bool thread_running;
    pthread_mutex_t mu;        /* guards the request fields below */
    pthread_cond_t wake, done;
    bool stop_req, stop_done, reopen;
    const char *stop_reason;
    void (*open_failed)(void); /* lifecycle.c's: tracing goes off */
    pthread_mutex_t sql_mu;    /* held across each batch of SQLite work; fork waits for it */

    /* A fatal signal (gt_writer_stop_from_signal, async-signal-safe): the
     * signal's name for end_reason, the time by which the writer stops
     * writing (what is left is counted as dropped), and the futex word the
     * handler waits on. */
    _Atomic(const char *) signal_name;
    _Atomic uint64_t deadline; /* 0: none */
    _Atomic int finished;
    void (*signal_stopped)(const struct gt_writer_summary *); /* lifecycle.c's, on this thread */
    atomic_bool entered;       /* the writer thread runs its own code: its start is over */
    atomic_bool main_exited;   /* the main thread left by pthread_exit (gt_writer_main_exited) */
    pid_t tid;                 /* the writer thread's */
    sigset_t program_mask;     /* the starting thread's signal mask: the writer's when it ends the process */
    atomic_bool in_tick, fork_pending; /* see tick() */
    dev_t dev;                 /* the trace file as opened: one removed or replaced at its name */
    ino_t ino;                 /* while written was said "wrote" (gt_writer_stop) */
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .sql_mu = PTHREAD_MUTEX_INITIALIZER};

/* A record off the queue, to the part that writes its kind. */
static void write_record(struct gt_rec *rec)
{
    if (gt_rec_is_call(rec->kind)) {
        gt_events_write(rec);
    } else if (rec->kind == GT_REC_FREE_RESULT) {
        gt_events_free_result(rec);
    } else { /* a range, mark or iteration */
        if (!gt_db_failed())
            gt_events_write_thread(rec->tid);
        gt_activity_record(rec);
    }
}

/* One round: new stacks, then up to BATCH events. Returns events written;
 * -1 when another connection holds the file's write lock: nothing was taken
 * off the queue (it fills, and the program's threads drop, counted, only once
 * they have waited queue_wait_ms in vain), the next round tries again. */
static int drain_once(struct gt_rec *buf, bool *in_txn, uint64_t *txn_start, uint64_t take_held_after_ns)
{
    if (!*in_txn && !gt_db_failed()) {
        if (gt_queue_empty_upto(gt_queue_head()) && !gt_activity_pending() && !gt_stacks_pending() &&
            !gt_py_pending())
            return 0;
        int b = gt_db_begin();
        if (b == 0)
            return -1;
        *in_txn = b > 0;
        *txn_start = gt_now_ns();
    }
    struct gt_stack_rec *stacks = gt_stacks_take_new();
    /* after the stacks: every Python frame a taken stack holds was published
     * before it (pyframes.c) */
    struct gt_pyframe_rec *pyframes = gt_py_take_new();
    int n = gt_queue_pop(buf, BATCH, take_held_after_ns);
    gt_clock_to_ns(buf, n);
    bool activity = gt_activity_pending();
    if (!stacks && !pyframes && !n && !activity)
        return 0;
    gt_events_write_pyframes(pyframes);
    gt_events_write_stacks(stacks);
    static uint16_t order[BATCH], scratch[BATCH];   /* the writer's thread only */
    gt_time_order(buf, sizeof *buf, offsetof(struct gt_rec, t_ns), n, order, scratch);
    for (int i = 0; i < n; i++)
        write_record(&buf[order[i]]);
    if (activity)
        gt_activity_write(); /* notes, devices, samples, CUPTI buffers */
    return n ? n : 1;
}

static void commit(bool *in_txn)
{
    if (!*in_txn)
        return;
    gt_events_write_counters();
    gt_events_committed(gt_db_exec("COMMIT"));
    *in_txn = false;
}

static bool past_deadline(void)
{
    uint64_t d = atomic_load(&W.deadline);
    return d && gt_now_ns() >= d;
}

/* A fatal signal's time is up: every record still queued up to target is
 * taken off unwritten and counted (its message is not freed: the process is
 * about to die and the signalled thread may hold malloc's lock). */
static void drop_unwritten(uint64_t target)
{
    struct gt_rec r;
    while (!gt_queue_empty_upto(target)) {
        if (gt_queue_pop(&r, 1, 0) == 0)
            gt_queue_skip_pending(); /* counted as unfinished_at_exit */
        else if (gt_rec_is_call(r.kind))
            gt_drop(GT_DROP_UNWRITTEN_AT_SIGNAL);
        else if (r.kind == GT_REC_FREE_RESULT && !gt_free_result_changes_row(&r))
            ;   /* a taken free's success: nothing of it is missing */
        else
            gt_drop(GT_DROP_NOT_WRITTEN);
    }
}

/* Drains everything reserved before the stop request. A free still in its
 * call is written at once, as one that worked; a slot reserved by a thread
 * inside a reset or a free of mapped memory is waited for a while, then
 * skipped. At a
 * fatal signal, what is not written by the deadline is counted as dropped. */
static void drain_for_stop(struct gt_rec *buf, bool *in_txn, uint64_t *txn_start)
{
    uint64_t target = gt_queue_head(), waited_since = 0, locked_since = 0;
    pthread_mutex_lock(&W.sql_mu);
    while (!gt_queue_empty_upto(target)) {
        if (past_deadline()) {
            drop_unwritten(target);
            break;
        }
        int n = drain_once(buf, in_txn, txn_start, 0);   /* a free still in its call: written now */
        if (n < 0) { /* another connection's lock: wait a moment, then give the rest up (counted) */
            uint64_t now = gt_now_ns();
            if (!locked_since)
                locked_since = now;
            if (now - locked_since > LOCK_WAIT_AT_STOP_NS)
                gt_db_give_up("the trace file stayed locked by another connection at exit");
            struct timespec ts = {0, 1000000};
            nanosleep(&ts, NULL);
            continue;
        }
        locked_since = 0;
        if (n) {
            waited_since = 0;
            if (*in_txn && gt_now_ns() - *txn_start >= COMMIT_EVERY_NS)
                commit(in_txn); /* a long drain (a fatal signal's) lands in steps, not all or nothing */
            continue;
        }
        uint64_t now = gt_now_ns();
        if (!waited_since)
            waited_since = now;
        if (now - waited_since > (atomic_load(&W.deadline) ? PENDING_SLOT_WAIT_AT_SIGNAL_NS : PENDING_SLOT_WAIT_NS)) {
            gt_queue_skip_pending();
            waited_since = 0;
            continue;
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    drain_once(buf, in_txn, txn_start, 0); /* stacks published late */
    pthread_mutex_unlock(&W.sql_mu);
}

/* The futex first: a signal handler waits on it, and the thread it
 * interrupted may hold W.mu. */
static void signal_done(void)
{
    atomic_store(&W.finished, 1);
    syscall(SYS_futex, &W.finished, FUTEX_WAKE_PRIVATE, 1 << 30, NULL, NULL, 0);
    pthread_mutex_lock(&W.mu);
    W.stop_done = true;
    pthread_cond_broadcast(&W.done);
    pthread_mutex_unlock(&W.mu);
}

static bool stop_requested(void)
{
    if (atomic_load(&W.signal_name)) /* without W.mu: the signalled thread may hold it */
        return true;
    pthread_mutex_lock(&W.mu);
    bool stop = W.stop_req;
    pthread_mutex_unlock(&W.mu);
    return stop;
}

/* The activity round (CUPTI flush, devices, NVML) outside sql_mu: it calls
 * into CUDA, CUPTI and the loader (its first round dlopens NVML), whose
 * locks a thread calling fork may hold from their own fork handlers, so
 * fork must not wait for it on a mutex. It waits a bounded while instead
 * (gt_writer_fork_prepare), and no round starts while a fork is pending:
 * a child then never inherits the loader's lock taken by this round
 * (glibc's fork resets only one of the loader's two locks, and the child's
 * first dl_iterate_phdr would block forever). seq_cst on both flags: one
 * side always sees the other's. */
static void tick(void)
{
    atomic_store(&W.in_tick, true);
    if (!atomic_load(&W.fork_pending))
        gt_activity_tick();
    atomic_store(&W.in_tick, false);
}

/* The longest sleep between drains: GATHER_MAX_NS, less where a burst could
 * fill the queue meanwhile (nothing wakes the writer when it is full: its
 * producers wait; half the queue at a fast thread's ~1 event a us) or
 * GPUTRACE_SAMPLE_MS asks for readings more often (taken from this loop). */
static uint64_t gather_max_ns(void)
{
    uint64_t max = GATHER_MAX_NS, fill = (uint64_t)gt_config.queue_events / 2 * 1000ull;
    if (fill < max)
        max = fill;
    if (gt_config.sample_ms && (uint64_t)gt_config.sample_ms * 1000000ull < max)
        max = (uint64_t)gt_config.sample_ms * 1000000ull;
    return max > GATHER_MIN_NS ? max : GATHER_MIN_NS;
}

/* how often, once main has left, the writer looks whether it is the last
 * thread (lastthread.c) */
#define LOOK_EVERY_NS (50 * 1000 * 1000ull)

/* (an atomic alone: the writer looks within 50 ms, and main may leave from a
 * signal handler that interrupted the shim holding W.mu) */
void gt_writer_main_exited(void)
{
    atomic_store(&W.main_exited, true);
}

static void *writer_main(void *arg)
{
    bool create = arg != NULL;
    static struct gt_rec buf[BATCH];
    W.tid = (pid_t)syscall(SYS_gettid);
    atomic_store(&W.entered, true);
    pthread_mutex_lock(&W.sql_mu); /* a fork mid-open must not copy SQLite's locks */
    bool opened = gt_writer_open(W.path, sizeof W.path, W.start_unix, W.start_mono, create, &W.dev, &W.ino);
    pthread_mutex_unlock(&W.sql_mu);
    if (!opened) {
        W.open_failed();
        signal_done();
        return NULL;
    }
    bool in_txn = false, last_thread = false;
    uint64_t txn_start = 0, gather_ns = GATHER_MIN_NS, gather_max = gather_max_ns(), last_look = 0;
    for (;;) {
        if (stop_requested())
            break;
        /* main left by pthread_exit and every other thread has ended: the
         * process would have exited (status 0) but for this thread. The trace
         * is finished as at exit, and this thread's end is the process's:
         * glibc calls exit(0) on the last thread, running the program's
         * atexit handlers and the shim's destructor (which finds the writer
         * done). A helper's probe: such a program never ended. */
        uint64_t now = gt_now_ns();
        if (atomic_load(&W.main_exited) && now - last_look >= LOOK_EVERY_NS && (last_look = now, gt_only_thread_left(W.tid, gt_cupti_flush_tid()))) {
            /* what CUPTI still holds reaches the drain below, as at exit */
            gt_cupti_flush_for_stop();
            pthread_mutex_lock(&W.mu);
            W.stop_req = true;
            W.stop_reason = "exit";
            W.reopen = false;
            pthread_mutex_unlock(&W.mu);
            last_thread = true;
            break;
        }
        tick(); /* outside SQLite: CUPTI flush, devices, NVML samples */
        /* A fork waits for sql_mu: stand aside until it has it. Behind, this
         * loop took the lock again at once, and a mutex is not fair: with
         * four threads allocating, fork() took 340 ms on average and up to
         * 3 s (0.1 ms untraced). Bounded: the flag is the parent's to clear. */
        for (int i = 0; i < 20000 && atomic_load(&W.fork_pending); i++)
            nanosleep(&(struct timespec){0, 100000}, NULL);
        pthread_mutex_lock(&W.sql_mu);
        int n = drain_once(buf, &in_txn, &txn_start, TAKE_HELD_FREE_AFTER_NS);
        if (in_txn && (n < BATCH || gt_now_ns() - txn_start >= COMMIT_EVERY_NS))
            commit(&in_txn);
        if (!in_txn)
            gt_window_tick(gt_now_ns()); /* the flight recorder's own transaction, when due */
        pthread_mutex_unlock(&W.sql_mu);
        /* Behind (a full batch, or an eighth of a small queue: producers may
         * be waiting for room): drain on at once. */
        if (n >= BATCH || n >= (int)(gt_config.queue_events / 8)) {
            gather_ns = GATHER_MIN_NS;
            continue;
        }
        /* Caught up: committed, and sleeps before the next drain, with the
         * write lock free for other connections. Each commit writes its
         * changed pages to the WAL (tens of us), and a program allocating
         * steadily leaves only a few events a drain: drained at once, ~3.5
         * us of the writer's CPU an event (a paced stand-in loop; 3 s of CPU
         * a run on an H200's transformer step under cudaMallocAsync); a
         * drain every 1 ms still cost ~50 ms of CPU a second at any pace
         * under a few 10,000 events a second (4 us a call on the H200). So
         * the sleep doubles, to 10 ms (gather_max_ns), while a drain finds
         * fewer than GATHER_ENOUGH events (or none: idle) and halves, to 1
         * ms, while it finds four times that. A stop request wakes it. */
        if (n < GATHER_ENOUGH)
            gather_ns = gather_ns * 2 < gather_max ? gather_ns * 2 : gather_max;
        else if (n >= 4 * GATHER_ENOUGH)
            gather_ns = gather_ns / 2 > GATHER_MIN_NS ? gather_ns / 2 : GATHER_MIN_NS;
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + gather_ns;
        ts.tv_sec = (time_t)(t / 1000000000ull);
        ts.tv_nsec = (long)(t % 1000000000ull);
        pthread_mutex_lock(&W.mu);
        if (!W.stop_req && !atomic_load(&W.signal_name))
            pthread_cond_timedwait(&W.wake, &W.mu, &ts);
        pthread_mutex_unlock(&W.mu);
    }
    /* At a fatal signal the signalled thread may hold any lock of CUDA,
     * CUPTI or NVML: none of them is called; their last records are lost. */
    if (!atomic_load(&W.signal_name))
        gt_activity_tick(); /* devices of a program that ended before the first round */
    drain_for_stop(buf, &in_txn, &txn_start);
    if (!atomic_load(&W.signal_name)) {
        /* after the last events were counted: the exit sample (unless the
         * program's atexit took it) reads the pools of every device they
         * allocated from, and then the pools' last change */
        gt_activity_stop_sample();
        gt_activity_stop_pools();
    }
    pthread_mutex_lock(&W.sql_mu);
    for (uint64_t t0 = gt_now_ns(); !in_txn && !gt_db_failed();) {
        int b = gt_db_begin();
        in_txn = b > 0;
        if (b == 0 && (gt_now_ns() - t0 > LOCK_WAIT_AT_STOP_NS || past_deadline()))
            gt_db_give_up("the trace file stayed locked by another connection at exit");
    }
    const char *sig = atomic_load(&W.signal_name);
    if (in_txn && gt_activity_pending())
        gt_activity_write();
    if (in_txn)
        gt_window_stop(gt_now_ns());
    gt_process_end(gt_now_ns() - W.start_mono, sig ? sig : W.stop_reason);
    commit(&in_txn);
    /* At a fatal signal, the one-file conversion (a checkpoint) only if the
     * time allows; else the connection is left open (closing it would
     * checkpoint too): the process is about to die, and the trace is
     * complete in WAL mode, its -wal beside it. */
    uint64_t d = atomic_load(&W.deadline);
    if (!d || gt_now_ns() + CHECKPOINT_NEEDS_NS < d)
        gt_db_close(true); /* resumed after exec: WAL again */
    pthread_mutex_unlock(&W.sql_mu);
    if (sig && W.signal_stopped) {
        struct gt_writer_summary s;
        snprintf(s.path, sizeof s.path, "%s", W.path);
        gt_events_summary(&s);
        if (!gt_db_failed())
            W.signal_stopped(&s);
    }
    signal_done();
    /* the process's last thread: glibc's exit(0) runs the program's atexit
     * handlers here, with the signal mask its threads had, not the writer's */
    if (last_thread) {
        bool alone = gt_cupti_flush_end(100 * 1000000ull);
        pthread_sigmask(SIG_SETMASK, &W.program_mask, NULL);
        if (!alone) /* the flush thread, stuck in CUPTI, would keep the process alive: glibc's exit(0) here */
            exit(0);
    }
    return NULL;
}

static bool spawn(bool create)
{
    W.stop_req = W.stop_done = false;
    atomic_store(&W.finished, 0);
    atomic_store(&W.entered, false);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer takes no signals */
    W.program_mask = old;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    int rc = pthread_create(&W.thread, &attr, writer_main, create ? (void *)1 : NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        gt_eprintf("gputrace: cannot start the writer thread (%s); tracing is off, the program continues\n",
                strerror(rc));
        return false;
    }
    W.thread_running = true;
    return true;
}

/* Starts the writer for a new trace; time 0 of the trace is now. */
bool gt_writer_start(void (*open_failed)(void), void (*signal_stopped)(const struct gt_writer_summary *))
{
    W.open_failed = open_failed;
    W.signal_stopped = signal_stopped;
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    W.start_unix = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec;
    W.start_mono = gt_now_ns();
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&W.wake, &ca);
    pthread_cond_init(&W.done, NULL);
    pthread_condattr_destroy(&ca);
    return spawn(true);
}

/* The writer thread's CPU time so far (-1: not running, or no clock): the
 * cost note says it beside the hot path's, since the writer's work per event
 * (SQLite's) is several times the hot path's and runs beside the program.
 * The note is written before the writer's last drain: a program that ended
 * faster than the writer drains leaves that drain's time out. */
double gt_writer_cpu_s(void)
{
    clockid_t cid;
    struct timespec ts;
    if (!W.thread_running || pthread_getcpuclockid(W.thread, &cid) || clock_gettime(cid, &ts))
        return -1;
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

bool gt_writer_wake(void)
{
    if (!W.thread_running)
        return false;
    pthread_mutex_lock(&W.mu);
    pthread_cond_broadcast(&W.wake);
    pthread_mutex_unlock(&W.mu);
    return true;
}

/* Asks the writer to drain, finish the process row and close; waits for it
 * (bounded, so a wedged writer cannot hang the exit of the program). */
bool gt_writer_stop(const char *reason, struct gt_writer_summary *out, bool reopen_later)
{
    if (!W.thread_running)
        return false;
    pthread_mutex_lock(&W.mu);
    W.stop_req = true;
    W.stop_reason = reason;
    W.reopen = reopen_later;
    pthread_cond_broadcast(&W.wake);
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    ts.tv_sec += 30;
    while (!W.stop_done)
        if (pthread_cond_timedwait(&W.done, &W.mu, &ts) == ETIMEDOUT)
            break;
    bool done = W.stop_done;
    pthread_mutex_unlock(&W.mu);
    if (!done) {
        gt_eprintf("gputrace: the writer did not finish within 30 s; trace %s may be incomplete\n", W.path);
        return false;
    }
    /* (on the writer thread itself when it was the process's last: its end
     * is the exit running this; it has finished, and joins no one) */
    if (!pthread_equal(pthread_self(), W.thread))
        pthread_join(W.thread, NULL);
    W.thread_running = false;
    if (out) {
        snprintf(out->path, sizeof out->path, "%s", W.path);
        gt_events_summary(out);
        out->write_failed = gt_db_write_failed();
        struct stat st;   /* removed, or another file put at its name, while written */
        out->replaced = W.ino && (stat(W.path, &st) != 0 || st.st_dev != W.dev || st.st_ino != W.ino);
    }
    return !gt_db_failed();
}

/* From a fatal signal's handler (any thread but the writer; async-signal-
 * safe: atomics, clock_gettime and futex only): the writer stops as at exit,
 * writing until budget_ns minus a fifth from now (the rest of it is for the
 * last commit), and counts the rest as
 * dropped; this waits until it is done or the budget is spent. signal_name:
 * the processes row's end_reason (a static string). True when the writer
 * finished in time. */
bool gt_writer_stop_from_signal(const char *signal_name, uint64_t budget_ns)
{
    if (!W.thread_running || pthread_equal(pthread_self(), W.thread))
        return false;
    uint64_t t0 = gt_now_ns(), until = t0 + budget_ns, none = 0;
    atomic_compare_exchange_strong(&W.deadline, &none, until - budget_ns / 5);
    const char *no_name = NULL;
    atomic_compare_exchange_strong(&W.signal_name, &no_name, signal_name);
    for (;;) {
        if (atomic_load(&W.finished))
            return true;
        uint64_t now = gt_now_ns();
        if (now >= until)
            return false;
        struct timespec ts = {(time_t)((until - now) / 1000000000ull), (long)((until - now) % 1000000000ull)};
        syscall(SYS_futex, &W.finished, FUTEX_WAIT_PRIVATE, 0, &ts, NULL, 0);
    }
}

bool gt_writer_resume(void)
{
    return spawn(false);
}

/* Fork waits for the writer's SQLite work (the child must not inherit
 * SQLite mid-call), and a bounded while (200 ms) for a thread that may hold
 * the loader's lock: the writer right after its start (under
 * AddressSanitizer a new thread walks the loaded objects with
 * dl_iterate_phdr before its own code runs), its activity round (tick) and
 * a CUPTI flush (cupti_flush.c). */
static _Atomic uint64_t flush_waited_out;   /* a CUPTI flush a fork waited for the whole while */

void gt_writer_fork_prepare(void)
{
    atomic_store(&W.fork_pending, true);
    gt_cupti_flush_fork_prepare();
    /* A flush waited for the whole while is not waited for again (nor one
     * after a longjmp left a CUDA call): stuck inside CUPTI, it held every
     * fork (10 took 3.6 s where 6 ms untraced: a helper's probe) */
    uint64_t flush = gt_cupti_flush_in_flight();
    if (flush == atomic_load(&flush_waited_out) || atomic_load(&gt_cuda_call_left))
        flush = 0;
    uint64_t until = gt_now_ns() + FORK_WAIT_NS;
    while (W.thread_running &&
           (!atomic_load(&W.entered) || atomic_load(&W.in_tick) || (flush && gt_cupti_flush_in_flight() == flush))) {
        if (gt_now_ns() >= until) {
            if (flush && gt_cupti_flush_in_flight() == flush)
                atomic_store(&flush_waited_out, flush);
            break;
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&W.sql_mu);
}

void gt_writer_fork_parent(void)
{
    pthread_mutex_unlock(&W.sql_mu);
    atomic_store(&W.fork_pending, false);
    gt_cupti_flush_fork_parent();
}

/* Fork child: the parent's writer, connection and maps are not ours. The
 * connection is abandoned (closing it would touch the parent's file locks). */
void gt_writer_forget(void)
{
    pthread_mutex_init(&W.sql_mu, NULL);
    pthread_mutex_init(&W.mu, NULL);
    atomic_store(&W.fork_pending, false);
    atomic_store(&W.in_tick, false);
    atomic_store(&flush_waited_out, 0);   /* the child's flushes count from 1 again */
    gt_events_forget();
    gt_activity_forget();
    gt_window_forget();
    gt_db_forget();
    W.thread_running = false;
    W.stop_req = W.stop_done = false;
    atomic_store(&W.signal_name, NULL);
    atomic_store(&W.deadline, 0);
    atomic_store(&W.main_exited, false);   /* the child's main thread is the one that forked */
}
