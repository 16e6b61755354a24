/* Life cycle of a trace: configuration at load (nothing else before main),
 * lazy start on the first hooked CUDA call, stop on every way out of the
 * process image (exit/return from main via the destructor, _exit, exec), and
 * fork: the child starts a trace of its own only if it calls CUDA itself. */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"

struct gt_config gt_config;
_Atomic int gt_state = GT_UNINIT;
/* The process whose trace this memory holds (0: none). A child that shares
 * the memory without fork's handlers having run -- a vfork() child, as
 * CPython's subprocess and glibc's posix_spawn make, or clone(CLONE_VM) --
 * sees gt_state as its own; the pid tells it apart. */
static _Atomic pid_t trace_pid;
void gt_record_after_fork_child(void);

static long env_long(const char *name, long def, long lo, long hi)
{
    const char *v = getenv(name);
    if (!v || !*v)
        return def;
    char *end;
    long x = strtol(v, &end, 10);
    if (*end || x < lo || x > hi) {
        fprintf(stderr, "gputrace: ignoring %s=%s (expected an integer from %ld to %ld)\n", name, v, lo, hi);
        return def;
    }
    return x;
}

static bool env_flag(const char *name)
{
    const char *v = getenv(name);
    return v && *v && strcmp(v, "0") != 0;
}

static void read_config(void)
{
    const char *out = getenv("GPUTRACE_OUTPUT");
    snprintf(gt_config.output_pattern, sizeof gt_config.output_pattern, "%s",
             out && *out ? out : "gputrace-%p.db");
    gt_config.stack_depth = (int)env_long("GPUTRACE_STACK_DEPTH", 32, 0, GT_MAX_STACK_DEPTH);
    gt_config.quiet = env_flag("GPUTRACE_QUIET");
    gt_config.disabled = env_flag("GPUTRACE_DISABLE");
    long q = env_long("GPUTRACE_QUEUE_EVENTS", 65536, 1024, 1 << 24);
    uint32_t cap = 1024;
    while (cap < (uint32_t)q)
        cap <<= 1;
    gt_config.queue_events = cap;
    gt_config.queue_wait_ms = (uint32_t)env_long("GPUTRACE_QUEUE_WAIT_MS", 1000, 0, 600000);
    gt_config.nvtx = env_long("GPUTRACE_NVTX", 1, 0, 1) != 0;
    gt_config.cupti = env_long("GPUTRACE_CUPTI", 1, 0, 1) != 0;
    const char *cp = getenv("GPUTRACE_CUPTI_PATH");
    snprintf(gt_config.cupti_path, sizeof gt_config.cupti_path, "%s", cp ? cp : "");
    gt_config.sample_ms = (uint32_t)env_long("GPUTRACE_SAMPLE_MS", 0, 0, 3600000);
}

static void fork_prepare(void)
{
    if (atomic_load(&gt_state) == GT_ACTIVE)
        gt_writer_fork_prepare();
}

static void fork_parent(void)
{
    if (atomic_load(&gt_state) == GT_ACTIVE)
        gt_writer_fork_parent();
}

/* The child has one thread and a copy of the parent's buffers: drop them all
 * (they are the parent's to write) and wait for the child's own CUDA call. */
static void fork_child(void)
{
    gt_record_after_fork_child();
    gt_activity_after_fork_child(atomic_load(&gt_state) != GT_UNINIT);
    if (atomic_load(&gt_state) == GT_UNINIT)
        return;
    gt_queue_discard();
    gt_stacks_discard();
    gt_writer_forget();
    for (int i = 0; i < GT_DROP_COUNT; i++)
        atomic_store(&gt_drops[i], 0);
    atomic_store(&trace_pid, 0);
    atomic_store(&gt_state, GT_UNINIT);
}

/* True only in the process that started the trace. In a vfork child the
 * parent's thread is suspended inside vfork() and its writer thread runs on:
 * stopping, resuming or printing from the child would end the parent's trace
 * (and a writer thread created there dies with the child). One getpid()
 * system call: for the exec and _exit paths, never the hot path. */
bool gt_owns_trace(void)
{
    pid_t owner = atomic_load(&trace_pid);
    return owner != 0 && owner == getpid();
}

__attribute__((constructor)) static void gt_load(void)
{
    read_config();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (!gt_config.disabled)
        gt_nvtx_setup();
}

/* First hooked call (inside a hook, re-entry guard held): one thread starts
 * the trace, any other that arrives meanwhile waits for it. */
void gt_ensure_started(void)
{
    int expected = GT_UNINIT;
    if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_STARTING)) {
        while (atomic_load(&gt_state) == GT_STARTING)
            sched_yield();
        return;
    }
    atomic_store(&trace_pid, getpid());
    gt_process_hooks_resolve(); /* so a vfork child's exec or _exit only reads them */
    if (!gt_queue_init(gt_config.queue_events) || !gt_stacks_init()) {
        fprintf(stderr, "gputrace: out of memory for the event queue; tracing is off, the program continues\n");
        atomic_store(&gt_state, GT_FAILED);
        return;
    }
    atomic_store(&gt_state, GT_ACTIVE);
    if (!gt_writer_start())
        atomic_store(&gt_state, GT_FAILED);
    else
        gt_ranges_trace_started();
}

static void human(uint64_t b, char *out, size_t cap)
{
    const char *u[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)b;
    int i = 0;
    while (v >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(out, cap, i ? "%.2f %s" : "%.0f %s", v, u[i]);
}

/* Ends the trace: no event is recorded after this; the writer drains what is
 * queued and closes the file. reason: exit | _exit | exec. */
static void stop(const char *reason, bool may_resume)
{
    if (!gt_owns_trace()) /* a vfork child, or a fork whose handlers did not run */
        return;
    int expected = GT_ACTIVE;
    if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_STOPPED)) {
        if (expected == GT_FAILED) /* the writer said why; just collect it */
            gt_writer_stop(reason, NULL, false);
        return;
    }
    gt_cupti_flush_for_stop(); /* activity still inside CUPTI reaches the writer's final drain */
    struct gt_writer_summary s;
    bool ok = gt_writer_stop(reason, &s, may_resume);
    if (ok && !gt_config.quiet) {
        char peak[32], pool[48] = "";
        human(s.peak_device, peak, sizeof peak);
        if (s.peak_pool) { /* stream-ordered allocations (cudaMallocAsync) are a level of their own */
            memcpy(pool, ", pool ", 8);
            human(s.peak_pool, pool + 7, sizeof pool - 7);
        }
        fprintf(stderr, "gputrace: wrote %s (%llu events, %llu dropped, peak device memory %s%s)\n", s.path,
                (unsigned long long)s.events, (unsigned long long)s.dropped, peak, pool);
    }
}

void gt_stop(const char *reason)
{
    stop(reason, false);
}

/* exec failed: the image is still ours, so the trace goes on in the same file. */
void gt_restart_after_failed_exec(void)
{
    if (!gt_owns_trace())
        return;
    int expected = GT_STOPPED;
    if (atomic_compare_exchange_strong(&gt_state, &expected, GT_ACTIVE) && !gt_writer_resume())
        atomic_store(&gt_state, GT_FAILED);
}

/* Runs after the program's atexit handlers (we are loaded first, finalized last). */
__attribute__((destructor)) static void gt_unload(void)
{
    gt_stop("exit");
}
