/* The writer thread: drains the event queue and the new-stack list into the
 * SQLite trace in batched transactions (WAL), so even a killed process
 * leaves a readable trace with the drop counts (the processes row's counters
 * are current at every commit). Its thread, loop, transactions and the
 * opening and closing of the file live here; what each record becomes is
 * writer_events.c's (allocation events) and writer_activity.c's (everything
 * else), all through db.c. All SQLite work happens on this thread. */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "activity.h"
#include "db.h"
#include "writer.h"

#define BATCH 4096
#define COMMIT_EVERY_NS (50 * 1000000ull)  /* well inside the promised 100 ms */
#define LOCK_WAIT_AT_STOP_NS (1000 * 1000000ull) /* exit waits this long at most for another connection's lock */
#define PENDING_SLOT_WAIT_NS (2000 * 1000000ull)

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
    atomic_bool entered;       /* the writer thread runs its own code: its start is over */
    atomic_bool in_tick, fork_pending; /* see tick() */
} W = {.mu = PTHREAD_MUTEX_INITIALIZER, .sql_mu = PTHREAD_MUTEX_INITIALIZER};

/* Opens the trace file. create: a new file from the output pattern (never an
 * existing one), with the schema and the processes row; otherwise reopen
 * W.path (after a failed exec). */
static bool open_db(bool create)
{
    if (create) {
        char err[512];
        if (gt_output_create(W.path, sizeof W.path, err, sizeof err) != 0) {
            fprintf(stderr, "gputrace: cannot create trace file: %s; tracing is off, the program continues (set GPUTRACE_OUTPUT to a writable path)\n", err);
            return false;
        }
    }
    if (!gt_db_open(W.path))
        return false;
    gt_thread_untraced();
    if (!gt_db_exec("PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"))
        goto fail;
    if (create ? !gt_db_exec("BEGIN") || !gt_db_exec(gt_schema_sql) || !gt_db_prepare() ||
                     !gt_process_row(W.start_unix, W.start_mono) || !gt_db_exec("COMMIT")
               : !gt_db_prepare())
        goto fail;
    gt_events_begin(W.start_mono);
    gt_activity_begin(W.start_mono);
    if (!create)
        gt_process_reopen();
    return true;
fail:
    fprintf(stderr, "gputrace: cannot initialise trace file %s: %s; tracing is off, the program continues\n", W.path,
            gt_db_errmsg());
    gt_db_close(false);
    gt_db_clear_failure();
    return false;
}

/* A record off the queue, to the part that writes its kind. */
static void write_record(struct gt_rec *rec)
{
    if (rec->kind == GT_REC_ALLOC || rec->kind == GT_REC_FREE) {
        gt_events_write(rec);
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
static int drain_once(struct gt_rec *buf, bool *in_txn, uint64_t *txn_start)
{
    if (!*in_txn && !gt_db_failed()) {
        if (gt_queue_empty_upto(gt_queue_head()) && !gt_activity_pending() && !gt_stacks_pending())
            return 0;
        int b = gt_db_begin();
        if (b == 0)
            return -1;
        *in_txn = b > 0;
        *txn_start = gt_now_ns();
    }
    struct gt_stack_rec *stacks = gt_stacks_take_new();
    int n = gt_queue_pop(buf, BATCH);
    bool activity = gt_activity_pending();
    if (!stacks && !n && !activity)
        return 0;
    gt_events_write_stacks(stacks);
    for (int i = 0; i < n; i++)
        write_record(&buf[i]);
    if (activity)
        gt_activity_write(); /* notes, devices, samples, CUPTI buffers */
    return n ? n : 1;
}

static void commit(bool *in_txn)
{
    if (!*in_txn)
        return;
    gt_events_write_counters();
    gt_db_exec("COMMIT");
    *in_txn = false;
}

/* Drains everything reserved before the stop request. A slot reserved by a
 * thread still inside a real free is waited for a while, then skipped. */
static void drain_for_stop(struct gt_rec *buf, bool *in_txn, uint64_t *txn_start)
{
    uint64_t target = gt_queue_head(), waited_since = 0, locked_since = 0;
    pthread_mutex_lock(&W.sql_mu);
    while (!gt_queue_empty_upto(target)) {
        int n = drain_once(buf, in_txn, txn_start);
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
            continue;
        }
        uint64_t now = gt_now_ns();
        if (!waited_since)
            waited_since = now;
        if (now - waited_since > PENDING_SLOT_WAIT_NS) {
            gt_queue_skip_pending();
            waited_since = 0;
            continue;
        }
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    drain_once(buf, in_txn, txn_start); /* stacks published late */
    pthread_mutex_unlock(&W.sql_mu);
}

static void signal_done(void)
{
    pthread_mutex_lock(&W.mu);
    W.stop_done = true;
    pthread_cond_broadcast(&W.done);
    pthread_mutex_unlock(&W.mu);
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

static void *writer_main(void *arg)
{
    bool create = arg != NULL;
    static struct gt_rec buf[BATCH];
    atomic_store(&W.entered, true);
    pthread_mutex_lock(&W.sql_mu); /* a fork mid-open must not copy SQLite's locks */
    bool opened = open_db(create);
    pthread_mutex_unlock(&W.sql_mu);
    if (!opened) {
        W.open_failed();
        signal_done();
        return NULL;
    }
    bool in_txn = false;
    uint64_t txn_start = 0, idle_ns = 1000000;
    for (;;) {
        pthread_mutex_lock(&W.mu);
        bool stop = W.stop_req;
        pthread_mutex_unlock(&W.mu);
        if (stop)
            break;
        tick(); /* outside SQLite: CUPTI flush, devices, NVML samples */
        pthread_mutex_lock(&W.sql_mu);
        int n = drain_once(buf, &in_txn, &txn_start);
        if (in_txn && (n < BATCH || gt_now_ns() - txn_start >= COMMIT_EVERY_NS))
            commit(&in_txn);
        pthread_mutex_unlock(&W.sql_mu);
        if (n > 0) {
            idle_ns = 1000000;
            continue;
        }
        /* Idle: sleep until woken by a stop request, backing off to 10 ms. */
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        uint64_t t = (uint64_t)ts.tv_sec * 1000000000ull + (uint64_t)ts.tv_nsec + idle_ns;
        ts.tv_sec = (time_t)(t / 1000000000ull);
        ts.tv_nsec = (long)(t % 1000000000ull);
        pthread_mutex_lock(&W.mu);
        if (!W.stop_req)
            pthread_cond_timedwait(&W.wake, &W.mu, &ts);
        pthread_mutex_unlock(&W.mu);
        if (idle_ns < 10000000)
            idle_ns *= 2;
    }
    gt_activity_tick(); /* devices of a program that ended before the first round */
    gt_activity_stop_sample();
    drain_for_stop(buf, &in_txn, &txn_start);
    pthread_mutex_lock(&W.sql_mu);
    for (uint64_t t0 = gt_now_ns(); !in_txn && !gt_db_failed();) {
        int b = gt_db_begin();
        in_txn = b > 0;
        if (b == 0 && gt_now_ns() - t0 > LOCK_WAIT_AT_STOP_NS)
            gt_db_give_up("the trace file stayed locked by another connection at exit");
    }
    gt_process_end(gt_now_ns() - W.start_mono, W.stop_reason);
    commit(&in_txn);
    gt_db_close(true); /* resumed after exec: WAL again */
    pthread_mutex_unlock(&W.sql_mu);
    signal_done();
    return NULL;
}

static bool spawn(bool create)
{
    W.stop_req = W.stop_done = false;
    atomic_store(&W.entered, false);
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old); /* the writer takes no signals */
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setstacksize(&attr, 1 << 20);
    int rc = pthread_create(&W.thread, &attr, writer_main, create ? (void *)1 : NULL);
    pthread_attr_destroy(&attr);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (rc != 0) {
        fprintf(stderr, "gputrace: cannot start the writer thread (%s); tracing is off, the program continues\n",
                strerror(rc));
        return false;
    }
    W.thread_running = true;
    return true;
}

/* Starts the writer for a new trace; time 0 of the trace is now. */
bool gt_writer_start(void (*open_failed)(void))
{
    W.open_failed = open_failed;
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
        fprintf(stderr, "gputrace: the writer did not finish within 30 s; trace %s may be incomplete\n", W.path);
        return false;
    }
    pthread_join(W.thread, NULL);
    W.thread_running = false;
    if (out) {
        snprintf(out->path, sizeof out->path, "%s", W.path);
        gt_events_summary(&out->events, &out->dropped, &out->peak_device, &out->peak_pool);
    }
    return !gt_db_failed();
}

bool gt_writer_resume(void)
{
    return spawn(false);
}

/* Fork waits for the writer's SQLite work (the child must not inherit
 * SQLite mid-call), and a bounded while (200 ms) for a thread that may hold
 * the loader's lock: the writer right after its start (under
 * AddressSanitizer a new thread walks the loaded objects with
 * dl_iterate_phdr before its own code runs) and its activity round (tick). */
void gt_writer_fork_prepare(void)
{
    atomic_store(&W.fork_pending, true);
    for (int i = 0; i < 2000 && W.thread_running && (!atomic_load(&W.entered) || atomic_load(&W.in_tick)); i++) {
        struct timespec ts = {0, 100000};
        nanosleep(&ts, NULL);
    }
    pthread_mutex_lock(&W.sql_mu);
}

void gt_writer_fork_parent(void)
{
    pthread_mutex_unlock(&W.sql_mu);
    atomic_store(&W.fork_pending, false);
}

/* Fork child: the parent's writer, connection and maps are not ours. The
 * connection is abandoned (closing it would touch the parent's file locks). */
void gt_writer_forget(void)
{
    pthread_mutex_init(&W.sql_mu, NULL);
    pthread_mutex_init(&W.mu, NULL);
    atomic_store(&W.fork_pending, false);
    atomic_store(&W.in_tick, false);
    gt_events_forget();
    gt_activity_forget();
    gt_db_forget();
    W.thread_running = false;
    W.stop_req = W.stop_done = false;
}
