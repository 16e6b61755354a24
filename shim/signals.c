/* Fatal signals: while a trace runs, a signal whose action is the default
 * (the process dies; the list below) is caught by the handler lifecycle.c gives, which has
 * the writer finish the file and then dies by the same signal with the
 * default action. The program never sees this: sigaction() and signal() are
 * interposed and report the program's own view of each disposition; a
 * handler the program installs, before the trace or after, is installed for
 * real (it runs exactly as without us), and an inherited SIG_IGN stays
 * ignored. Nothing is installed before a trace starts. */
#include <errno.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "shim.h"

/* Every signal whose default action ends the process, but SIGKILL and
 * SIGSTOP (never caught), SIGTRAP (a debugger's) and SIGXFSZ (the writer's
 * own file may pass RLIMIT_FSIZE: it is counted, the program runs on). A
 * death by SIGPIPE (a program piped into head), SIGILL (__builtin_trap),
 * SIGALRM or SIGUSR1 left the trace unfinished, with nothing counted. */
#define SIGNALS(X) X(SIGHUP) X(SIGINT) X(SIGQUIT) X(SIGTERM) X(SIGABRT) X(SIGSEGV) X(SIGBUS) X(SIGFPE) \
    X(SIGILL) X(SIGPIPE) X(SIGALRM) X(SIGUSR1) X(SIGUSR2) X(SIGXCPU) X(SIGSYS) X(SIGVTALRM) X(SIGPROF)
#define SIGNAL_NUMBER(s) s,
#define SIGNAL_REASON(s) "signal " #s,
static const int watched[] = {SIGNALS(SIGNAL_NUMBER)};
#define NWATCHED (int)(sizeof watched / sizeof watched[0])
/* The processes row's end_reason for each (same order). */
static const char *const end_reasons[NWATCHED] = {SIGNALS(SIGNAL_REASON)};

typedef int (*sigaction_fn)(int, const struct sigaction *, struct sigaction *);

static struct {
    _Atomic bool installed;          /* the table below is the program's view */
    _Atomic pid_t owner;             /* the process whose view it is: a vfork child shares
                                        this memory, and must not write the parent's view */
    _Atomic int lock;                /* spin lock over view[], taken with signals blocked */
    struct sigaction view[NSIG];     /* what the program set (or had when we installed) */
    void (*handler)(int, siginfo_t *, void *);
} S;

static sigaction_fn real_sigaction(void)
{
    return (sigaction_fn)gt_real_of(&gt_libc_hooks[GT_LIBC_sigaction]);
}

static int slot_of(int sig)
{
    for (int i = 0; i < NWATCHED; i++)
        if (watched[i] == sig)
            return i;
    return -1;
}

/* sa_handler and sa_sigaction share their storage: SIG_DFL (0) is the
 * default whatever SA_SIGINFO says, as for the kernel (a program's SIG_DFL
 * given with SA_SIGINFO | SA_RESETHAND went through one_shot, which called
 * nothing: the program survived its SIGTERM) */
static bool is_default(const struct sigaction *a)
{
    return a->sa_handler == SIG_DFL;
}

static bool is_ignored(const struct sigaction *a)
{
    return a->sa_handler == SIG_IGN;
}

static void one_shot(int sig, siginfo_t *info, void *uc);

/* What the kernel gets for the program's view a: ours in place of SIG_DFL;
 * a one-shot handler (SA_RESETHAND) through one_shot, which resets the
 * disposition to ours, not to the kernel's SIG_DFL (a crash reporter's
 * handler that logs and returns then left the trace unfinished: the second
 * SIGSEGV met the real default). */
static struct sigaction effective(const struct sigaction *a)
{
    if ((a->sa_flags & SA_RESETHAND) && !is_default(a) && !is_ignored(a)) {
        struct sigaction t = *a;
        t.sa_flags = (a->sa_flags & ~SA_RESETHAND) | SA_SIGINFO;
        t.sa_sigaction = one_shot;
        return t;
    }
    if (!is_default(a))
        return *a;
    struct sigaction ours;
    memset(&ours, 0, sizeof ours);
    ours.sa_sigaction = S.handler;
    ours.sa_flags = SA_SIGINFO | SA_ONSTACK; /* a stack overflow's SIGSEGV needs the program's altstack */
    sigemptyset(&ours.sa_mask);
    for (int i = 0; i < NWATCHED; i++) /* one fatal signal at a time in the handler */
        sigaddset(&ours.sa_mask, watched[i]);
    return ours;
}

static void lock(sigset_t *old)
{
    sigset_t all;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, old);
    int expected = 0;
    while (!atomic_compare_exchange_weak(&S.lock, &expected, 1))
        expected = 0;
}

static void unlock(const sigset_t *old)
{
    atomic_store(&S.lock, 0);
    pthread_sigmask(SIG_SETMASK, old, NULL);
}

/* A one-shot handler's signal: as the kernel does for SA_RESETHAND, the
 * disposition is the default again before the handler runs (in the
 * program's view; for the kernel, ours), then the program's handler runs. */
static void run_handler(const struct sigaction *a, int sig, siginfo_t *info, void *uc)
{
    if (is_default(a) || is_ignored(a))
        return;
    if (a->sa_flags & SA_SIGINFO)
        a->sa_sigaction(sig, info, uc);
    else
        a->sa_handler(sig);
}

static void one_shot(int sig, siginfo_t *info, void *uc)
{
    sigaction_fn real = real_sigaction();
    int err = errno;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    if (atomic_load(&S.owner) != getpid()) {
        /* a vfork child: its dispositions are its own, the view its parent's */
        struct sigaction prog = S.view[sig];
        if (real)
            real(sig, &dfl, NULL);
        errno = err;
        run_handler(&prog, sig, info, uc);
        return;
    }
    sigset_t mask;
    lock(&mask);
    struct sigaction prog = S.view[sig];
    bool mine = (prog.sa_flags & SA_RESETHAND) && !is_default(&prog) && !is_ignored(&prog);
    if (mine) {
        S.view[sig] = dfl;
        struct sigaction e = effective(&dfl);
        if (real)
            real(sig, &e, NULL);
    }
    unlock(&mask);
    errno = err;
    if (mine)
        run_handler(&prog, sig, info, uc);
    else if (is_default(&prog))
        S.handler(sig, info, uc);   /* a second delivery after the reset: the default's end, ours */
    else
        run_handler(&prog, sig, info, uc);   /* another handler installed since */
}

/* The fatal-signal handler, first: a signal whose view is the program's own
 * handler (installed at this moment, between the install's two calls) goes
 * to it. True when it did. */
bool gt_signals_forward(int sig, siginfo_t *info, void *uc)
{
    if (sig <= 0 || sig >= NSIG)
        return false;
    struct sigaction prog = S.view[sig];
    if (is_default(&prog))
        return false;
    run_handler(&prog, sig, info, uc);
    return true;
}

/* At trace start: every watched signal whose disposition is the default gets
 * the handler; others (a program's handler, SIG_IGN) are left as they are.
 * Idempotent (a fork child that starts its own trace has them already). */
void gt_signals_install(void (*handler)(int, siginfo_t *, void *))
{
    sigaction_fn real = real_sigaction();
    if (!real || atomic_load(&S.installed))
        return;
    sigset_t old;
    lock(&old);
    S.handler = handler;
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    struct sigaction ours = effective(&dfl);
    for (int i = 0; i < NWATCHED; i++) {
        int sig = watched[i];
        /* one call reads and replaces: a handler another thread installs at
         * this moment is never overwritten (it is either what we read, and
         * put back at once, or it comes after ours) */
        if (real(sig, &ours, &S.view[sig]) != 0)
            continue;
        if (!is_default(&S.view[sig])) {
            struct sigaction e = effective(&S.view[sig]);
            real(sig, &e, NULL);
        }
    }
    atomic_store(&S.owner, getpid());
    atomic_store(&S.installed, true);
    unlock(&old);
}

/* Fork child (lifecycle.c, every fork): the lock may have been held by a
 * thread that does not exist here; the view, copied, is the child's own. */
void gt_signals_after_fork_child(void)
{
    atomic_store(&S.lock, 0);
    if (atomic_load(&S.installed))
        atomic_store(&S.owner, getpid());
}

/* The interposed sigaction: the program's view in, the program's view out. */
int gt_signals_sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    sigaction_fn real = real_sigaction();
    if (!real) {
        errno = ENOSYS;
        return -1;
    }
    if (!atomic_load_explicit(&S.installed, memory_order_acquire) || slot_of(sig) < 0)
        return real(sig, act, old);
    if (atomic_load(&S.owner) != getpid()) {
        /* a vfork child (CPython's subprocess resets every handler there):
         * the kernel's dispositions are its own, the view is its parent's */
        int rc = real(sig, act, old);
        if (rc == 0 && old && (old->sa_flags & SA_SIGINFO) && old->sa_sigaction == S.handler) {
            memset(old, 0, sizeof *old);   /* ours stands for the default */
            old->sa_handler = SIG_DFL;
        }
        return rc;
    }
    struct sigaction want; /* act may be old itself */
    if (act)
        want = *act;
    sigset_t mask;
    lock(&mask);
    int rc = 0;
    if (act) {
        struct sigaction e = effective(&want);
        rc = real(sig, &e, NULL);
    }
    if (rc == 0) {
        if (old)
            *old = S.view[sig];
        if (act)
            S.view[sig] = want;
    }
    int err = errno;
    unlock(&mask);
    errno = err;
    return rc;
}

/* "signal SIGTERM": a static string, for the trace's end_reason. */
const char *gt_signals_end_reason(int sig)
{
    int i = slot_of(sig);
    return i < 0 ? "signal" : end_reasons[i];
}

/* Does sigaction/signal for sig need the view (else: straight through)?
 * Uninstrumented, as its callers' pass-through (hooks_process.c): a
 * sanitizer's runtime calls sigaction before it is ready; hence the loop
 * written out rather than a call to slot_of. */
GT_UNINSTRUMENTED bool gt_signals_watching(int sig)
{
    if (!__atomic_load_n(&S.installed, __ATOMIC_ACQUIRE))
        return false;
    for (int i = 0; i < NWATCHED; i++)
        if (watched[i] == sig)
            return true;
    return false;
}

/* A handler set the way signal(), sysv_signal() and sigset() set one,
 * through the program's view: flags, and the signal blocked in its handler
 * or not. *old: the disposition before. */
static int set_handler(int sig, __sighandler_t handler, int flags, bool block_self, struct sigaction *old)
{
    struct sigaction act;
    memset(&act, 0, sizeof act);
    act.sa_handler = handler;
    sigemptyset(&act.sa_mask);
    if (block_self && sig > 0 && sig < NSIG)
        sigaddset(&act.sa_mask, sig);
    act.sa_flags = flags;
    return gt_signals_sigaction(sig, &act, old);
}

/* The interposed signal() for a watched signal: glibc's BSD semantics (SA_RESTART, the signal
 * blocked in its handler), through the sigaction above. */
__sighandler_t gt_signals_signal(int sig, __sighandler_t handler)
{
    if (handler == SIG_ERR) {   /* glibc refuses it; installed, the next signal would jump to -1 */
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction old;
    return set_handler(sig, handler, SA_RESTART, true, &old) == 0 ? old.sa_handler : SIG_ERR;
}

/* glibc's sysv_signal: one-shot, the signal not blocked in its handler, no
 * restart. glibc's own calls its sigaction inside libc, past ours: a
 * one-shot handler then reset to the kernel's default, and the death after
 * it left the trace unfinished (a review's probe). */
__sighandler_t gt_signals_sysv_signal(int sig, __sighandler_t handler)
{
    if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    struct sigaction old;
    return set_handler(sig, handler, SA_RESETHAND | SA_NODEFER, false, &old) == 0 ? old.sa_handler : SIG_ERR;
}

/* glibc's sigset (System V): SIG_HOLD blocks the signal; any other
 * disposition is set and the signal unblocked. Returns SIG_HOLD when it
 * was blocked, else the disposition before. */
__sighandler_t gt_signals_sigset(int sig, __sighandler_t handler)
{
    if (handler == SIG_ERR || sig <= 0 || sig >= NSIG) {
        errno = EINVAL;
        return SIG_ERR;
    }
    sigset_t one, was;
    sigemptyset(&one);
    sigaddset(&one, sig);
    struct sigaction old;
    int rc = handler == SIG_HOLD ? gt_signals_sigaction(sig, NULL, &old) : set_handler(sig, handler, 0, false, &old);
    if (rc != 0 || sigprocmask(handler == SIG_HOLD ? SIG_BLOCK : SIG_UNBLOCK, &one, &was) != 0)
        return SIG_ERR;
    return sigismember(&was, sig) ? SIG_HOLD : old.sa_handler;
}

/* Inside the handler, after the trace was finished (or given up on): die by
 * sig with the default action, as the program would have. A fault the kernel
 * raised (SIGSEGV at an address, SIGFPE of a division) is raised again by
 * returning to the instruction; any other signal is raised here.
 * Async-signal-safe. */
void gt_signals_die(int sig, const siginfo_t *info)
{
    sigaction_fn real = real_sigaction();
    struct sigaction dfl;
    memset(&dfl, 0, sizeof dfl);
    dfl.sa_handler = SIG_DFL;
    sigemptyset(&dfl.sa_mask);
    real(sig, &dfl, NULL);
    bool fault = (sig == SIGSEGV || sig == SIGBUS || sig == SIGFPE || sig == SIGILL) && info && info->si_code > 0;
    if (fault)
        return;
    sigset_t one;
    sigemptyset(&one);
    sigaddset(&one, sig);
    raise(sig);
    pthread_sigmask(SIG_UNBLOCK, &one, NULL); /* delivered here, the default action kills */
}
