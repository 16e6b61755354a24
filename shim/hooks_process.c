/* Ways out of the process image that skip destructors: _exit/_Exit (Python's
 * os._exit) and the exec family; and sigaction/signal, through which the
 * program sees its own signal dispositions while the shim catches fatal
 * signals (signals.c). Each ends the trace first; an exec that
 * fails resumes it. Only the process that owns the trace does either: a
 * vfork() child (CPython's subprocess starts every child so) runs these hooks
 * in its parent's memory and must leave the parent's trace alone.
 * Cost for untraced processes: one atomic load. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "shim.h"

/* The real function, with the type of libc's declaration. Its row (real.c)
 * is resolved when a trace starts, so that in a vfork child of a traced
 * process these hooks only read memory; else at first use, as for any
 * untraced process. */
#define REAL(name) \
    __typeof__(&name) real_##name = (__typeof__(&name))gt_real_of(&gt_libc_hooks[GT_LIBC_##name])

static bool tracing(void)
{
    int st = atomic_load_explicit(&gt_state, memory_order_acquire);
    return (st == GT_ACTIVE || st == GT_FAILED) && gt_owns_trace();
}

GT_EXPORT void _exit(int status)
{
    REAL(_exit);
    if (tracing())
        gt_stop("_exit");
    real__exit(status);
    __builtin_unreachable();
}

GT_EXPORT void _Exit(int status)
{
    REAL(_Exit);
    if (tracing())
        gt_stop("_exit");
    real__Exit(status);
    __builtin_unreachable();
}

/* glibc's quick_exit ends in its internal _exit, which no hook sees, and
 * runs no destructor: 40,000 of 80,000 events were lost, nothing said (a
 * helper's probe). The at_quick_exit handlers run after the trace ends. */
GT_EXPORT void quick_exit(int status)
{
    REAL(quick_exit);
    if (tracing())
        gt_stop("quick_exit");
    real_quick_exit(status);
    __builtin_unreachable();
}

/* main leaving by pthread_exit: the process lives on until its last thread
 * ends, and the writer's would be that thread; it is told, and ends with
 * the program's others (writer.c). */
GT_EXPORT void pthread_exit(void *retval)
{
    REAL(pthread_exit);
    /* (tracing or not yet: another thread may start the trace after main left) */
    if (syscall(SYS_gettid) == getpid())
        gt_writer_main_exited();
    real_pthread_exit(retval);
    __builtin_unreachable();
}

/* longjmp and its kin: a signal handler's jump out of a hooked CUDA call (a
 * watchdog around a call that hung) leaves the hook, whose re-entry guard
 * would stay set (record.c's gt_hook_left_by_jump says so first). glibc on
 * x86-64 keeps the target's stack pointer in the jmp_buf's slot 6, mangled:
 * rotated left 17 after an xor with the thread's pointer guard (%fs:0x30).
 * Elsewhere the jump is not looked at (record.c's frame test at the next
 * call is what remains). Resolved in the constructor: the jump is made in a
 * signal handler, where dlsym is not safe. */
#if defined(__x86_64__) && defined(__GLIBC__)
GT_UNINSTRUMENTED static uintptr_t jump_target_sp(const struct __jmp_buf_tag *env)
{
    uintptr_t v = (uintptr_t)env->__jmpbuf[6], guard;
    __asm__("mov %%fs:0x30, %0" : "=r"(guard));
    return ((v >> 17) | (v << 47)) ^ guard;
}
#define SEE_JUMP(env) gt_hook_left_by_jump(jump_target_sp(env))
#else
#define SEE_JUMP(env) ((void)(env))
#endif

#define JUMP_HOOK(name) \
    GT_UNINSTRUMENTED GT_EXPORT __attribute__((noreturn)) void name(struct __jmp_buf_tag env[1], int val) \
    { \
        void (*real)(struct __jmp_buf_tag *, int) = \
            (void (*)(struct __jmp_buf_tag *, int))gt_libc_real_uninstrumented(GT_LIBC_##name); \
        if (gt_in_shim) \
            SEE_JUMP(env); \
        real(env, val); \
        __builtin_unreachable(); \
    }
JUMP_HOOK(longjmp)
JUMP_HOOK(_longjmp)
JUMP_HOOK(siglongjmp)
JUMP_HOOK(__longjmp_chk)

/* All are uninstrumented up to the pass-through (GT_UNINSTRUMENTED):
 * ThreadSanitizer's runtime installs its own fatal-signal handlers through
 * sigaction during its initialisation, when an instrumented function's
 * entry crashes it. No trace watches signals then. */
GT_UNINSTRUMENTED GT_EXPORT int sigaction(int sig, const struct sigaction *act, struct sigaction *old)
{
    if (!gt_signals_watching(sig)) {
        __typeof__(&sigaction) real = (__typeof__(&sigaction))gt_libc_real_uninstrumented(GT_LIBC_sigaction);
        if (!real) {
            errno = ENOSYS;
            return -1;
        }
        return real(sig, act, old);
    }
    return gt_signals_sigaction(sig, act, old);
}

/* signal() and glibc's other ways to set a handler (they call its sigaction
 * inside libc, past ours): through the view for a watched signal, straight
 * through otherwise. */
#define HANDLER_SETTER(name, through) \
    GT_UNINSTRUMENTED GT_EXPORT __sighandler_t name(int sig, __sighandler_t handler) \
    { \
        if (!gt_signals_watching(sig)) { \
            __typeof__(&name) real = (__typeof__(&name))gt_libc_real_uninstrumented(GT_LIBC_##name); \
            if (!real) { \
                errno = ENOSYS; \
                return SIG_ERR; \
            } \
            return real(sig, handler); \
        } \
        return through(sig, handler); \
    }

/* what signal() is in a program compiled with -std=c99 (glibc's headers
 * redirect it there outside the default feature set) */
extern __sighandler_t __sysv_signal(int sig, __sighandler_t handler);

HANDLER_SETTER(signal, gt_signals_signal)
HANDLER_SETTER(bsd_signal, gt_signals_signal)
HANDLER_SETTER(sysv_signal, gt_signals_sysv_signal)
HANDLER_SETTER(__sysv_signal, gt_signals_sysv_signal)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"   /* sigset: deprecated, still called */
HANDLER_SETTER(sigset, gt_signals_sigset)
#pragma GCC diagnostic pop

/* Before exec: finish the trace; if exec returns it failed, so resume. */
#define AROUND_EXEC(call) \
    do { \
        bool was = atomic_load(&gt_state) == GT_ACTIVE && gt_owns_trace(); \
        if (was) \
            gt_stop("exec"); \
        int rc_ = (call); \
        int err_ = errno; \
        if (was) \
            gt_restart_after_failed_exec(); \
        errno = err_; \
        return rc_; \
    } while (0)

GT_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
    REAL(execve);
    AROUND_EXEC(real_execve(path, argv, envp));
}

GT_EXPORT int execv(const char *path, char *const argv[])
{
    REAL(execv);
    AROUND_EXEC(real_execv(path, argv));
}

GT_EXPORT int execvp(const char *file, char *const argv[])
{
    REAL(execvp);
    AROUND_EXEC(real_execvp(file, argv));
}

GT_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
    REAL(execvpe);
    AROUND_EXEC(real_execvpe(file, argv, envp));
}

GT_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
    REAL(fexecve);
    AROUND_EXEC(real_fexecve(fd, argv, envp));
}

/* execl* take their arguments inline: collect them, then go through execv*. */
#define COLLECT_ARGS(first, argv, envp_out) \
    size_t n_ = 1; \
    va_list ap_; \
    va_start(ap_, first); \
    while (va_arg(ap_, char *)) \
        n_++; \
    va_end(ap_); \
    char **argv = alloca((n_ + 1) * sizeof(char *)); \
    va_start(ap_, first); \
    argv[0] = (char *)first; \
    for (size_t i_ = 1; i_ <= n_; i_++) \
        argv[i_] = va_arg(ap_, char *); \
    envp_out; \
    va_end(ap_)

GT_EXPORT int execl(const char *path, const char *arg, ...)
{
    REAL(execv);
    COLLECT_ARGS(arg, argv, (void)0);
    AROUND_EXEC(real_execv(path, argv));
}

GT_EXPORT int execlp(const char *file, const char *arg, ...)
{
    REAL(execvp);
    COLLECT_ARGS(arg, argv, (void)0);
    AROUND_EXEC(real_execvp(file, argv));
}

GT_EXPORT int execle(const char *path, const char *arg, ...)
{
    REAL(execve);
    char *const *envp;
    COLLECT_ARGS(arg, argv, envp = va_arg(ap_, char *const *));
    AROUND_EXEC(real_execve(path, argv, envp));
}
