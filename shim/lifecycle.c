/* Life cycle of a trace, and the only file that drives it: configuration at
 * load (nothing else before main), lazy start on the first hooked CUDA call,
 * CUDA-ready after its first success, stop on every way out of the process
 * image (exit/return from main via the destructor, _exit, exec), and fork:
 * the child starts a trace of its own only if it calls CUDA itself. Each
 * transition fans out to the modules' own start/stop/fork functions; none of
 * them calls back here. gt_state is written here and nowhere else. */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "activity.h"
#include "writer.h"

/* The process whose trace this memory holds (0: none). A child that shares
 * the memory without fork's handlers having run -- a vfork() child, as
 * CPython's subprocess and glibc's posix_spawn make, or clone(CLONE_VM) --
 * sees gt_state as its own; the pid tells it apart. */
static _Atomic pid_t trace_pid;

/* The file and figures this process last reported (stderr line or run log).
 * A stop before exec must report (the image may be gone after it); when the
 * exec fails the trace resumes in the same file, and its next stop reports
 * again only if something was written since: a program that tries exec on
 * each PATH entry, or a child whose exec failed and that exits at once, says
 * its file once. */
static struct gt_writer_summary reported;

/* The forking thread's: whether prepare took the writer's lock. The parent
 * undoes exactly that, whatever the state became meanwhile (an exit on
 * another thread stopped the trace between the two: the lock stayed taken
 * and the exit waited out the writer's 30 s). */
static GT_TLS bool fork_prepared;

static void fork_prepare(void)
{
    fork_prepared = atomic_load(&gt_state) == GT_ACTIVE;
    if (fork_prepared)
        gt_writer_fork_prepare();
}

static void fork_parent(void)
{
    if (fork_prepared)
        gt_writer_fork_parent();
    fork_prepared = false;
}

/* The child has one thread and a copy of the parent's buffers: drop them all
 * (they are the parent's to write) and wait for the child's own CUDA call. */
static void fork_child(void)
{
    fork_prepared = false;
    gt_runlog_process_started();
    bool had_trace = atomic_load(&gt_state) != GT_UNINIT;
    gt_signals_after_fork_child();
    gt_state_after_fork_child();
    gt_ranges_after_fork_child();
    gt_notes_after_fork_child(gt_cupti_ran());
    gt_unwind_memo_after_fork_child();
    gt_graph_after_fork_child();
    if (!had_trace)
        return;
    gt_cupti_after_fork_child();
    gt_nvml_after_fork_child();
    gt_queue_discard();
    gt_stacks_discard();
    gt_writer_forget();
    gt_drops_reset();
    gt_cost_after_fork();
    memset(&reported, 0, sizeof reported);
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

/* Two copies of the shim from different paths in LD_PRELOAD (`gputrace run`,
 * which puts its installed library first, from a shell that preloads the
 * build tree's) traced each process twice: two files, two lines (a helper's
 * probe). The process's symbols resolve to the first copy loaded: a copy
 * whose own marker function is not the one the process sees stays passive. */
/* longjmp and its kin run in signal handlers (hooks_process.c): found now */
static void resolve_jumps(void)
{
    gt_libc_real_uninstrumented(GT_LIBC_longjmp);
    gt_libc_real_uninstrumented(GT_LIBC__longjmp);
    gt_libc_real_uninstrumented(GT_LIBC_siglongjmp);
    gt_libc_real_uninstrumented(GT_LIBC___longjmp_chk);
}

static bool another_copy_first(void)
{
    /* (our own address of an exported function resolves to the first copy's as well: compare the
     * objects the process's lookup and a function of ours, static, lie in) */
    void *first = dlsym(RTLD_DEFAULT, "gputrace_recording"), *malloc_hook = dlsym(RTLD_DEFAULT, "cudaMalloc");
    Dl_info theirs, ours, hook;
    return first && malloc_hook && dladdr(first, &theirs) && dladdr((void *)another_copy_first, &ours) &&
           dladdr(malloc_hook, &hook) && theirs.dli_fbase != ours.dli_fbase &&
           hook.dli_fbase == theirs.dli_fbase;   /* a shim: its marker and a CUDA hook in one object */
}

__attribute__((constructor)) static void gt_load(void)
{
    if (another_copy_first()) {
        gt_config_load();
        gt_config_passive();
        gt_libc_real_uninstrumented(GT_LIBC_sigaction);
        gt_libc_real_uninstrumented(GT_LIBC_signal);
        resolve_jumps();
        return;
    }
    gt_stderr_remember();
    gt_runlog_process_started();
    gt_config_load();
    gt_output_remember_dir();
    /* sigaction and signal pass straight through in a process without a
     * trace: found now, not at a first call that may come inside a signal
     * handler, where dlsym (the loader's lock, malloc) is not safe */
    gt_libc_real_uninstrumented(GT_LIBC_sigaction);
    gt_libc_real_uninstrumented(GT_LIBC_signal);
    resolve_jumps();
    pthread_atfork(fork_prepare, fork_parent, fork_child);
    if (!gt_config.disabled)
        gt_nvtx_setup();
}

/* The writer thread could not open the file: every hook passes through. */
static void writer_open_failed(void)
{
    atomic_store(&gt_state, GT_FAILED);
}

/* Bytes as the analyzer prints them (format.c): halves rounded away from
 * zero, and 1023.995 KiB carried to 1.00 MiB; printf alone rounds 77.625
 * MiB to even, "77.62", where every report says "77.63" (a helper's probe). */
static double hundredths(double v)
{
    return (double)(uint64_t)(v * 100 + 0.5) / 100;
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
    if (i && hundredths(v) >= 1024 && i < 4) {
        v /= 1024;
        i++;
    }
    snprintf(out, cap, i ? "%.2f %s" : "%.0f %s", i ? hundredths(v) : v, u[i]);
}

/* The summary line on stderr when a trace ends. */
static void summary_line(const struct gt_writer_summary *s, char *out, size_t cap)
{
    /* stream-ordered allocations (cudaMallocAsync), managed and pinned host memory are levels of their own
     * (a managed-memory program's line read "peak device memory 0 B" alone: a helper's probe) */
    char peak[32], more[3][48] = {"", "", ""};
    const char *name[3] = {", pool ", ", managed ", ", pinned host "};
    uint64_t level[3] = {s->peak_pool, s->peak_managed, s->peak_host};
    human(s->peak_device, peak, sizeof peak);
    for (int k = 0; k < 3; k++)
        if (level[k]) {
            size_t n = strlen(name[k]);
            memcpy(more[k], name[k], n + 1);
            human(level[k], more[k] + n, sizeof more[k] - n);
        }
    snprintf(out, cap, "gputrace: wrote %s (%llu events, %llu dropped, peak device memory %s%s%s%s)\n", s->path,
             (unsigned long long)s->events, (unsigned long long)s->dropped, peak, more[0], more[1], more[2]);
}

static bool already_reported(const struct gt_writer_summary *s)
{
    bool same = !strcmp(s->path, reported.path) && s->events == reported.events && s->dropped == reported.dropped &&
                s->peak_device == reported.peak_device && s->peak_pool == reported.peak_pool &&
                s->peak_managed == reported.peak_managed && s->peak_host == reported.peak_host;
    reported = *s;
    return same;
}

/* ---- fatal signals --------------------------------------------------------
 * A signal whose default action ends the process (signals.c installs this
 * handler for those the program left at the default) ends the trace as an
 * exit does, through the writer's own stop path, bounded: the writer writes
 * for at most SIGNAL_BUDGET_NS less a fifth and counts the rest as dropped;
 * then the process dies by the same signal with the default action. Here
 * only atomics, a futex wait and write(2): no lock, no malloc, no stdio. */
#define SIGNAL_BUDGET_NS (1000 * 1000000ull)

static char signal_summary[4400]; /* formatted by the writer thread, written by the handler */
static _Atomic size_t signal_summary_len;

static void signal_stopped(const struct gt_writer_summary *s)
{
    /* writer thread (the handler's thread waits): the run log's write is no handler's */
    if (already_reported(s) || gt_runlog_wrote(s) || gt_config.quiet)
        return;
    summary_line(s, signal_summary, sizeof signal_summary);
    atomic_store(&signal_summary_len, strlen(signal_summary));
}

/* Ends the trace from a signal handler, bounded (see above); reason: the
 * processes row's end_reason, a static string. */
static void stop_in_handler(const char *reason)
{
    int expected = GT_ACTIVE;
    /* STOPPED: an exit is finishing the trace; hurry it and wait for it */
    if (atomic_compare_exchange_strong(&gt_state, &expected, GT_STOPPED) || expected == GT_STOPPED) {
        gt_cupti_not_flushed_at_signal();
        if (gt_writer_stop_from_signal(reason, SIGNAL_BUDGET_NS)) {
            size_t n = atomic_exchange(&signal_summary_len, 0);
            if (n && gt_stderr_ok() && write(STDERR_FILENO, signal_summary, n) < 0)
                n = 0;
        }
    }
}

static void on_fatal_signal(int sig, siginfo_t *info, void *uc)
{
    int saved = errno;
    if (gt_signals_forward(sig, info, uc)) {   /* the program's handler after all (signals.c) */
        errno = saved;
        return;
    }
    if (gt_owns_trace()) /* not a vfork child, nor a fork child before its own trace */
        stop_in_handler(gt_signals_end_reason(sig));
    errno = saved;
    gt_signals_die(sig, info);
}

/* gputrace sweep runs each process with GPUTRACE_BATCH_SIZE: the trace says
 * it, so that a report over a sweep's traces can draw peak by batch size. */
static void note_batch_size(void)
{
    if (gt_config.batch_size > 0)
        gt_note("sweep", false, "batch size %d (GPUTRACE_BATCH_SIZE)", gt_config.batch_size);
}

/* First hooked call (inside a hook, re-entry guard held): one thread starts
 * the trace, any other that arrives meanwhile waits for it. */
static void start_trace(void)
{
    int expected = GT_UNINIT;
    if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_STARTING)) {
        while (atomic_load(&gt_state) == GT_STARTING)
            sched_yield();
        return;
    }
    atomic_store(&trace_pid, getpid());
    gt_config_warn(); /* bad GPUTRACE_* values: said by the process that traces, not by every child */
    gt_libc_hooks_resolve(); /* so a vfork child's exec or _exit only reads them */
    /* What the shim cannot get it gives back, whole: the program's next
     * call must find the memory it would have found without us. Nothing
     * records while STARTING, so nothing uses what is given back. */
    gt_clock_start(); /* before anything is stamped */
    gt_stack_room_warm();
    bool queue = gt_queue_init(gt_config.queue_events), stacks = queue && gt_stacks_init();
    if (!stacks || !gt_writer_start(writer_open_failed, signal_stopped)) {
        if (!stacks)
            gt_eprintf("gputrace: out of memory for the event queue (%u events) or the stack set; tracing is "
                            "off, the program continues\n", gt_config.queue_events);
        gt_stacks_discard();
        gt_queue_discard();
        atomic_store(&gt_state, GT_FAILED);
        return;
    }
    /* the writer may have failed already (open_failed: FAILED); else ACTIVE */
    expected = GT_STARTING;
    if (atomic_compare_exchange_strong(&gt_state, &expected, GT_ACTIVE)) {
        gt_cost_start();
        note_batch_size();
        gt_ranges_trace_started();
        gt_signals_install(on_fatal_signal);
    }
}

/* The first successful call means the program has initialised CUDA: from
 * now on the shim may start CUPTI and query devices without creating anything
 * itself. One thread claims the start and runs it here, after the real call
 * returned and inside the hook (CUPTI's own CUDA calls pass through). The
 * writer reads the devices once gt_cuda_ready is set. */
static void cuda_became_ready(void)
{
    bool no = false;
    if (!atomic_compare_exchange_strong(&gt_cuda_ready_claimed, &no, true))
        return;
    gt_cupti_start();
    atomic_store_explicit(&gt_cuda_ready, true, memory_order_release);
    gt_activity_cuda_ready(gt_writer_wake);
}

void gt_start_lazily(enum gt_start what)
{
    if (what == GT_START_TRACE)
        start_trace();
    else
        cuda_became_ready();
}

/* Ends the trace: no event is recorded after this; the writer drains what is
 * queued and closes the file. reason: exit | _exit | exec. */
static void stop(const char *reason, bool may_resume)
{
    if (!gt_owns_trace()) /* a vfork child, or a fork whose handlers did not run */
        return;
    /* the program's own handler calls _exit or exit: the interrupted code may
     * hold CUPTI's lock (no flush then) or the writer's: the fatal signals'
     * bounded path, without CUPTI's last records */
    if (strcmp(reason, "exec") && gt_unwind_in_signal_frame()) {
        stop_in_handler(reason);
        return;
    }
    int expected = GT_ACTIVE;
    if (!atomic_compare_exchange_strong(&gt_state, &expected, GT_STOPPED)) {
        if (expected == GT_FAILED) /* the writer said why; just collect it */
            gt_writer_stop(reason, NULL, false);
        return;
    }
    /* (the stopping thread's own work is the shim's: a hooked call it makes is no drop) */
    int was_in_shim = gt_in_shim;
    gt_in_shim = 1;
    gt_cupti_flush_for_stop(); /* activity still inside CUPTI reaches the writer's final drain */
    gt_cost_note(gt_writer_cpu_s());
    gt_unwind_memo_note();
    struct gt_writer_summary s;
    s.path[0] = 0;
    bool ok = gt_writer_stop(reason, &s, may_resume) && atomic_load(&gt_state) != GT_FAILED;
    gt_in_shim = was_in_shim;
    /* writing failed mid-run (a full disk): its first line said so; the last
     * says what it cost, since the drops table could not take it either */
    if (!ok && s.path[0] && s.write_failed && gt_stderr_ok())
        gt_eprintf("gputrace: trace %s is incomplete: at least %llu events were not written after writing it "
                   "failed (the line above said why)\n", s.path, (unsigned long long)s.dropped);
    if (ok && s.replaced) {   /* deleted, or its directory removed, or another file moved there: not "wrote" */
        if (gt_stderr_ok())
            gt_eprintf("gputrace: trace %s was removed or replaced while it was written: what it held is lost\n",
                       s.path);
        return;
    }
    /* under `gputrace run` the launcher says it, in one line for every process */
    if (ok && !already_reported(&s) && !gt_runlog_wrote(&s) && !gt_config.quiet) {
        char line[4400];
        summary_line(&s, line, sizeof line);
        gt_eprintf("%s", line);
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
    gt_cupti_resume_after_failed_exec();
}

/* Runs after the program's atexit handlers (we are loaded first, finalized last). */
__attribute__((destructor)) static void gt_unload(void)
{
    gt_stop("exit");
}
